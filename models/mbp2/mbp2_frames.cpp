// The MBP2's frame path (8.3.3, 8.3.6): CAU sealing and opening with the peers' security
// associations, EM frame buffers, the LDMA engines and the MAC FIFOs, in both directions.
#include "models/mbp2/mbp2_cards.h"

#include "models/core/mutant.h"

#include <algorithm>
#include <cmath>

#include "models/core/bytes.h"
#include "models/core/error.h"
#include "models/mbcf/atomic.h"
#include "models/mbcf/engine.h"

namespace mbpsim::mbp2 {

using mbcf::Cmd;
using mbcf::kNoAddr;
using mbcf::Packet;

// ------------------------------------------------------------------ crypto (8.3.3, 8.3.6)


void Mbp2Nic::crypt_work(const char* what, Cau::Op op, FramePool& pool, Buf b, uint32_t sealed, uint32_t peer, uint64_t id,
                            uint32_t cb, uint32_t hb, CryptDone k) {
  const CryptoConfig& cc = m_.crypto;
  if (cau_) {
    // The PME writes a CAU descriptor naming the keys' slot; the CAU's DMA reads the frame
    // from EM and writes the result back; its completion interrupts the PME.
    pme_->run(what, Pme::kNormal, false, pme_->instr_ps(cc.cau_desc_instr), [this, op, &pool, b, sealed, peer, id, cb, hb, k = std::move(k)]() mutable {
      if (!pool.live(b)) return;  // EM lost its contents with the power
      const PeerSec& s = kx_.peer(peer);
      // Slots change hands only by loads posted after the keys they held were dropped.
      if (!s.sa_of(id)) return k(Cau::Error::BadKey, b);
      const uint32_t n = cau_->run(cal_.now_ps(), op, s.slot_of(id), pool.offset(b), b.len, op == Cau::Op::Seal ? sealed : b.len, cb, hb);
      cau_ring->expect(n, [this, &pool, b, k = std::move(k)](const DmaEngine::Desc& d) mutable {
        if (!pool.live(b)) return;
        const Cau::Error e = Cau::verdict(d);
        if (e == Cau::Error::None) b.len = d.bytes;
        pme_->run_from(Pme::kCauRing, "cau_done", Pme::kNormal, pme_->instr_ps(m_.tx_done_instr), [e, b, k = std::move(k)]() mutable { k(e, b); });
      });
    });
    return;
  }
  // MBP2P (8.4): no crypto circuit; the PME's firmware reads the frame from EM, transforms it
  // and writes it back (the cipher pass), and reads it again for the hash.
  const double instr = cc.fw_setup_instr + cb * cc.fw_des_instr_per_block + hb * cc.fw_hash_instr_per_block;
  const double words = (sealed + 3) / 4 * ((cb ? 2.0 : 0.0) + (hb ? 1.0 : 0.0));
  em_->access(Route::Pme, cal_.now_ps(), static_cast<uint32_t>(words * 4));
  pme_->run(what, Pme::kNormal, false, pme_->kernel_ps(instr, words), [this, op, &pool, b, peer, id, k = std::move(k)]() mutable {
    if (!pool.live(b)) return;
    const PeerSec& s = kx_.peer(peer);
    const SecurityAssociation* sa = s.sa_of(id);
    if (!sa) return k(Cau::Error::BadKey, b);
    std::vector<uint8_t> f = pool.get(b);
    const Cau::Error e = Cau::apply(*sa, op, f);
    if (e == Cau::Error::None) pool.put(b, f);
    k(e, b);
  });
}

void Mbp2Nic::install_keys(uint32_t peer, bool boot) {
  PeerSec& s = kx_.peer(peer);
  s.sa_id = ++sa_serial_;
  s.slot = 2 * peer + (s.installs++ & 1);
  if (!cau_) return;  // the firmware keeps them in the PME's memory
  if (boot) {
    const std::vector<uint8_t> block = s.sa->key_block();
    em_->write(cau_->key_slot_offset(s.slot), block.data(), static_cast<uint32_t>(block.size()));
  } else {
    cau_->load_key(cal_.now_ps(), s.slot, s.sa->key_block());
  }
}

void Mbp2Nic::Port::transmit(uint32_t dst, Frame&& frame, Sent sent) {
  Mbp2Nic& s = s_;
  const uint32_t node = s.node_, inc = s.sys_->incarnation(node);
  s.nic_transmit(dst, std::move(frame), [&s, &w = wire_, node, dst, inc, k = std::move(sent)](std::vector<uint8_t>&& b) mutable {
    if (!s.sys_->up(node) || s.sys_->incarnation(node) != inc) return;
    if (b.empty()) return k(false);  // the NIC could not send it
    w.send(node, dst, std::move(b), [&s, node, inc, k = std::move(k)](bool) {
      if (!s.sys_->up(node) || s.sys_->incarnation(node) != inc) return;
      s.tx_done();
      k(true);
    });
  });
}

void Mbp2Nic::nic_transmit(uint32_t dst, std::vector<uint8_t>&& frame, InMac in_mac) {
  if (!m_.crypto.enabled()) return to_buffer(dst, std::move(frame), std::move(in_mac), false);
  seal_and_send(dst, std::move(frame), std::move(in_mac));
}

SecurityAssociation* Mbp2Nic::out_sa(PeerSec& s, uint32_t** seq) const {
  if (s.sa && s.peer_has) {
    *seq = &s.tx_seq;
    return s.sa.get();
  }
  if (s.old_sa && s.old_tx_seq < m_.crypto.rekey_frames) {  // a renewal: the old keys still serve
    *seq = &s.old_tx_seq;
    return s.old_sa.get();
  }
  return nullptr;
}

void Mbp2Nic::seal_and_send(uint32_t dst, std::vector<uint8_t>&& frame, InMac in_mac) {
  PeerSec& s = kx_.peer(dst);
  uint32_t* seq = nullptr;
  SecurityAssociation* sa = out_sa(s, &seq);
  if (!sa) {
    // No keys the peer is known to hold: the frame waits in EM for the exchange (started now
    // if none is under way) or for the peer to show it has the new keys.
    s.waiting.emplace_back(std::move(frame), std::move(in_mac));
    if (!s.sa) kx_.start(dst);
    return;
  }
  if (*seq >= m_.crypto.rekey_frames) {
    if (m_.crypto.keys == CryptoConfig::Keys::Static) {  // manual keys cannot be renewed
      cs.seq_exhausted->inc();
      sys_->fail("node " + std::to_string(node_) + " has sealed crypto.rekey_frames = " + std::to_string(m_.crypto.rekey_frames) + " frames for node " +
           std::to_string(dst) + " under static keys, which cannot be renewed (RFC 4303 3.3.3): it sends that peer nothing more (crypto.keys = dh renews them)");
      return;
    }
    // A new exchange (a new private value); this frame and the next wait for its keys.
    cs.rekeys_seq->inc();
    kx_.drop_keys(dst, true);
    PeerSec& s2 = kx_.peer(dst);
    s2.renewing = true;
    s2.waiting.emplace_back(std::move(frame), std::move(in_mac));
    kx_.start(dst);
    return;
  }
  to_buffer(dst, std::move(frame), std::move(in_mac), true);
}

// The image the PGE fetched and the header the PME wrote make the frame in a transmit buffer.
// A frame that finds none free waits, behind any frame already waiting, for the LDMA to free one.
void Mbp2Nic::to_buffer(uint32_t dst, std::vector<uint8_t>&& frame, InMac in_mac, bool seal) {
  Buf b;
  if (!tx_wait.empty() || !txb->alloc(&b)) {
    tx_wait.push_back(TxWait{dst, std::move(frame), std::move(in_mac), seal});
    return;
  }
  txb->put(b, frame);
  from_buffer(dst, b, std::move(in_mac), seal);
}

void Mbp2Nic::tx_buffers_freed() {
  while (!tx_wait.empty() && txb->in_use() < txb->count()) {
    TxWait w = std::move(tx_wait.front());
    tx_wait.pop_front();
    Buf b;
    txb->alloc(&b);
    txb->put(b, w.frame);
    from_buffer(w.dst, b, std::move(w.in_mac), w.seal);
  }
}

void Mbp2Nic::from_buffer(uint32_t dst, Buf b, InMac in_mac, bool seal) {
  if (!seal) return ldma_send(b, std::move(in_mac));
  PeerSec& s = kx_.peer(dst);
  uint32_t* seqp = nullptr;
  SecurityAssociation* sa = out_sa(s, &seqp);
  if (!sa || *seqp >= m_.crypto.rekey_frames) {
    // The keys went (the peer restarted), or ran out, while the frame waited for its buffer.
    std::vector<uint8_t> f = txb->get(b);
    txb->release(b);
    nic_transmit(dst, std::move(f), std::move(in_mac));
    return tx_buffers_freed();
  }
  // The PME writes the header in front of the frame in its buffer (SPI, sequence number, IV);
  // the CAU (or the firmware) reads it from there, seals it and writes it back.
  uint8_t iv[8];
  const uint64_t r = iv_rng_.next();
  for (int i = 0; i < 8; ++i) iv[i] = static_cast<uint8_t>(r >> (8 * i));
  const std::vector<uint8_t> frame = txb->get(b);
  const uint32_t plain = static_cast<uint32_t>(frame.size() - 14);
  const uint64_t id = seqp == &s.tx_seq ? s.sa_id : s.old_id;
  txb->put(b, prepare_seal(m_.crypto.cipher, frame, node_, ++*seqp, iv));
  const uint32_t sealed = sealed_size(m_.crypto.cipher, m_.crypto.auth, plain + 14);
  const uint32_t body = sealed - 14 - (m_.crypto.auth == Auth::None ? 0 : 12);  // what the hash covers
  const uint32_t cb = cipher_blocks(m_.crypto.cipher, plain), hb = hash_blocks(m_.crypto.auth, body);
  crypt_work("encrypt", Cau::Op::Seal, *txb, b, sealed, dst, id, cb, hb, [this, plain, body, cb, hb, k = std::move(in_mac)](Cau::Error e, Buf b) mutable {
    if (e != Cau::Error::None) {
      cs.seal_failed->inc();
      txb->release(b);
      k({});
      return tx_buffers_freed();
    }
    cs.sealed->inc();
    if (cb) cs.enc_bytes->inc(plain);
    if (hb) cs.auth_bytes->inc(body);
    ldma_send(b, std::move(k));
  });
}

// The LDMA reads the frame from its buffer into the MAC's transmit FIFO once the FIFO has room
// for it (frames wait in their buffers, in order, until then); at its completion the PME's
// routine finds the descriptor done, frees the buffer, and the MAC sends what the FIFO holds
// under the descriptor's destination. The frame holds its room until its last bit has left the
// wire (`tx_done`).
void Mbp2Nic::ldma_send(Buf b, InMac in_mac) {
  if (!mac_wait.empty() || !mac_room(b.len)) {
    mac_wait.emplace_back(b, std::move(in_mac));
    return;
  }
  ldma_start(b, std::move(in_mac));
}

bool Mbp2Nic::mac_room(uint32_t len) const { return mac_tx_lens.empty() || mac_tx_bytes + len <= m_.mac_tx_fifo_bytes; }

void Mbp2Nic::mac_freed(uint32_t unsent) {
  if (unsent) {  // its room was kept from the LDMA's start: any entry of its length is its
    auto it = std::find(mac_tx_lens.rbegin(), mac_tx_lens.rend(), unsent);
    if (it != mac_tx_lens.rend()) {
      mac_tx_bytes -= unsent;
      mac_tx_lens.erase(std::next(it).base());
    }
  } else if (!mac_tx_lens.empty()) {  // frames leave the FIFO in the order they went in
    mac_tx_bytes -= mac_tx_lens.front();
    mac_tx_lens.pop_front();
  }
  while (!mac_wait.empty() && mac_room(mac_wait.front().first.len)) {
    auto [b, k] = std::move(mac_wait.front());
    mac_wait.pop_front();
    ldma_start(b, std::move(k));
  }
}

void Mbp2Nic::ldma_start(Buf b, InMac in_mac) {
  const uint32_t len = b.len;
  mac_tx_bytes += len;
  mac_tx_lens.push_back(len);
  const uint32_t at = mac_tx.next();
  ldma_tx_ring->post(cal_.now_ps(), txb->offset(b), at, len, [this, len](uint64_t s) { return Finish(s, em_->access(Route::Mac, s, len)); },
                  [this, b, k = std::move(in_mac)](const DmaEngine::Desc& d) mutable {
                    std::vector<uint8_t> f;
                    const bool sent = !d.error() && mac_tx.take(d.dst, &f);
                    if (txb->live(b)) txb->release(b);
                    if (!sent) mac_freed(b.len);  // nothing went into the FIFO
                    k(sent ? std::move(f) : std::vector<uint8_t>{});  // (empty: not sent)
                    tx_buffers_freed();
                  }, DmaEngine::kNoContext, ~0u, DmaEngine::Move::Forward);
}

// The MAC holds a received frame in its FIFO; the LDMA writes it into a receive buffer, and the
// frame's length there is the one its descriptor gives back.
bool Mbp2Nic::ldma_receive(std::vector<uint8_t>&& frame, std::function<void(Buf)> k) {
  Buf b;
  if (!rxb->alloc(&b)) return false;  // every receive buffer is full: the frame is lost
  const uint32_t len = static_cast<uint32_t>(frame.size());
  const uint32_t from = mac_rx.put(std::move(frame));
  ldma_rx_ring->post(cal_.now_ps(), from, rxb->offset(b), len, [this, len](uint64_t s) { return Finish(s, em_->access(Route::Mac, s, len)); },
                  [this, b, k = std::move(k)](const DmaEngine::Desc& d) mutable {
                    if (d.error()) {  // the descriptor named no frame the FIFO holds: none arrived
                      rxb->release(b);
                      return k(Buf{});
                    }
                    b.len = d.bytes;
                    k(b);
                  }, DmaEngine::kNoContext, ~0u, DmaEngine::Move::Forward);
  return true;
}

void Mbp2Nic::to_routine(Buf b, const RxReady& ready) {
  if (!rxb->live(b)) return;
  rx_queued[b.serial] = b;
  Rx r{{}, b.serial};
  ready(&r);
}

std::vector<uint8_t> Mbp2Nic::rx_take(Rx& r) {
  if (r.tag == 0) return std::move(r.bytes);
  auto it = rx_queued.find(r.tag);
  if (it == rx_queued.end()) internal_error("the receive routine took a frame no receive buffer holds");
  const Buf b = it->second;
  rx_queued.erase(it);
  // The routine reads the frame where the LDMA (or the CAU) left it; the buffer it worked on
  // before is re-armed.
  if (rx_current.valid()) rxb->release(rx_current);
  rx_current = b;
  return rxb->get(b);
}

void Mbp2Nic::rx_idle() {
  if (rx_current.valid()) rxb->release(rx_current);
  rx_current = Buf{};
}

void Mbp2Nic::nic_receive(std::vector<uint8_t>&& frame, RxReady ready) {
  if (frame.size() > mbcf::kMaxPacketBytes) {  // an Ethernet giant: the MAC takes no buffer for it
    rx_oversized->inc();
    ready(nullptr);
    return;
  }
  const uint16_t type = ether_type(frame);
  const bool crypto = m_.crypto.enabled();
  const bool kx = type == kEtherTypeKeyExchange && m_.crypto.keys == CryptoConfig::Keys::Dh && crypto;
  if (crypto && !kx && type != kEtherTypeSealed) {  // a NIC that encrypts takes nothing in the clear
    cs.rej_plain->inc();
    ready(nullptr);
    return;
  }
  // Key exchanges and (in the clear) UDP/TCP are the PME's: they never reach the MBCF receive
  // routine.
  const bool datagram = !crypto && is_ip(frame);
  if (kx || datagram) ready(nullptr);
  const bool frag = datagram && is_fragment(frame);
  const bool taken = ldma_receive(std::move(frame), [this, kx, datagram, crypto, ready](Buf b) mutable {
    if (!b.valid()) {
      if (!kx && !datagram) ready(nullptr);
      return;
    }
    if (kx) return kx_.on_message(b);
    if (datagram) return ip_steering_.receive(b, true);
    if (!crypto) return to_routine(b, ready);
    // The LDMA's completion interrupts the PME, which reads the header and starts the CAU.
    pme_->run_from(Pme::kLdmaRxRing, "rx_check", Pme::kNormal, pme_->instr_ps(m_.rx_desc_instr),
               [this, b, k = std::move(ready)]() mutable { open_received(b, std::move(k)); });
  });
  if (!taken && datagram) {  // UDP/TCP has no Go-back-N under it: the datagram is gone
    // (A fragment's datagram is counted when its reassembly gives up.)
    (frag ? ip.rx_fragments_dropped : ip.rx_no_buffer)->inc();
    fw_run_pollers(cal_.now_ps());  // (a harness waiting on the drop counters sees it)
  }
  if (!taken && !kx && !datagram) {
    if (crypto) {  // a sealed frame: it may have carried a datagram, which nothing resends
      cs.rx_no_buffer->inc();
      fw_run_pollers(cal_.now_ps());
    }
    ready(nullptr);
  }
}

void Mbp2Nic::open_received(Buf b, RxReady ready) {
  if (!rxb->live(b)) return;
  const std::vector<uint8_t> f = rxb->get(b);
  const uint32_t spi = f.size() >= 18 ? load_be32(f.data() + 14) : ~0u;
  if (spi >= sys_->nodes() || spi == node_ || !(kx_.peer(spi).sa || kx_.peer(spi).old_sa)) {
    cs.rej_no_sa->inc();
    rxb->release(b);
    ready(nullptr);
    return;
  }
  // What the CAU runs over: the length the header claims, bounded by the frame. The PME reads
  // the sequence number from the header; it counts once the CAU has authenticated the frame.
  const uint32_t avail = static_cast<uint32_t>(f.size() - 14);
  const uint32_t claimed = f.size() >= 24 ? (static_cast<uint32_t>(f[22]) << 8 | f[23]) : 0;
  const uint32_t seq = f.size() >= 22 ? load_be32(f.data() + 18) : 0;
  const uint32_t iv = m_.crypto.cipher == Cipher::None ? 0 : 8;
  const uint32_t body = std::min(avail, 12 + iv + claimed);
  const uint32_t cb = cipher_blocks_of_body(m_.crypto.cipher, std::min(claimed, avail));
  const uint32_t hb = hash_blocks(m_.crypto.auth, body);
  // Under a rekey the new keys or the old sealed it: the new ones are tried first.
  const PeerSec& s = kx_.peer(spi);
  try_open(spi, b, s.sa ? s.sa_id : s.old_id, seq, cb, hb, body, std::move(ready));
}

void Mbp2Nic::try_open(uint32_t spi, Buf b, uint64_t id, uint32_t seq, uint32_t cb, uint32_t hb, uint32_t body, RxReady ready) {
  crypt_work("decrypt", Cau::Op::Open, *rxb, b, b.len, spi, id, cb, hb, [this, spi, id, seq, cb, hb, body, k = std::move(ready)](Cau::Error e, Buf b) mutable {
    if (hb) cs.auth_bytes->inc(body);
    auto reject = [&](Counter* why) {
      why->inc();
      rxb->release(b);
      k(nullptr);
    };
    PeerSec& s = kx_.peer(spi);
    const bool was_new = s.is_new(id), was_old = s.is_old(id);
    if (!was_new && !was_old) return reject(cs.rej_no_sa);  // the keys went while the CAU ran
    if (e != Cau::Error::None && e != Cau::Error::BadKey && was_new && s.old_sa) return try_open(spi, b, s.old_id, seq, cb, hb, body, std::move(k));
    // Sealed under keys this end is still deriving (the peer derived first): the frame waits
    // in its receive buffer for them rather than being thrown away, while kRxReserve receive
    // buffers stay free for the frames that bring the keys. Only an authenticated frame can be
    // told apart from a forged one, so only those.
    if (e == Cau::Error::BadIcv && was_old && !s.sa && s.started && m_.crypto.auth != Auth::None && s.held_rx.size() < kHeldRxFrames &&
        rxb->in_use() + kRxReserve <= rxb->count()) {
      cs.held_rx->inc();
      s.held_rx.emplace_back(b, std::move(k));
      return;
    }
    if (e == Cau::Error::BadIcv) return reject(cs.rej_auth);
    if (e == Cau::Error::BadKey) return reject(cs.rej_no_sa);
    if (e != Cau::Error::None) return reject(cs.rej_format);
    ReplayWindow* window = was_new ? &s.rx_window : &s.old_window;
    if (was_new && s.old_sa) {  // the peer has changed over
      s.old_sa.reset();
      s.old_id = 0;
    }
    if (was_old) cs.opened_old->inc();
    if (was_new && !s.peer_has) kx_.confirmed(spi);  // it sealed under them
    // Anti-replay only for authenticated frames: an unauthenticated sequence number proves
    // nothing, and letting it move the window would let a forger stop traffic.
    if (m_.crypto.auth != Auth::None && !mutant::on(mutant::Id::ReplayWindowOff) && !window->accept(seq)) return reject(cs.rej_replay);
    cs.opened->inc();
    // The CAU wrote the plain frame back over the sealed one.
    const std::vector<uint8_t> f = rxb->get(b);
    if (cb) cs.dec_bytes->inc(static_cast<uint32_t>(f.size() - 14));
    if (is_ip(f)) {  // an IPsec datagram, opened: steered like one in the clear
      k(nullptr);
      return ip_steering_.receive(b, false);
    }
    to_routine(b, k);
  });
}

}  // namespace mbpsim::mbp2
