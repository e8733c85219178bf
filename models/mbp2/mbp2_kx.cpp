// The MBP2's key exchange (8.3.6): Diffie-Hellman over the 1024-bit MODP group, exponentiations
// on the MEAC1024 or in PME firmware, retries, renewal and dropping of keys.
#include "models/mbp2/mbp2_kx.h"

#include "models/mbp2/mbp2_nic.h"

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

namespace {
constexpr uint8_t kKxInit = 1, kKxResp = 2, kKxConfirm = 3;
constexpr uint32_t kKxBytes = 18 + Dh::kBytes;  // header, type, 3 reserved, public value
}  // namespace

// --- key exchange: Diffie-Hellman over the 1024-bit MODP group, the exponentiations on the
// MEAC1024 (or in PME firmware without one). The initiator sends INIT with its public value;
// the responder answers RESP with its own; each side derives the keys from the shared secret.
// A message not answered within crypto.kx_timeout_us is sent again; an INIT from a peer whose
// keys are installed is answered again (our RESP was lost).

void KeyExchange::modexp_work(uint32_t modmuls, std::function<void()> k) {
  Mbp2Nic& u = nic_;
  if (u.meac_) {
    // The PME feeds the MEAC1024 one operation at a time; the two overlap.
    const uint64_t meac_end = u.meac_->run(nic_.cal_.now_ps(), modmuls);
    u.pme_->run("meac", Pme::kLow, false, u.pme_->instr_ps(modmuls * nic_.m_.crypto.meac_op_instr),
               [this, meac_end, k = std::move(k)]() mutable { nic_.cal_.at(std::max(nic_.cal_.now_ps(), meac_end), std::move(k)); });
    return;
  }
  // Without one, the firmware multiplies; the operands stay in the PME's data cache.
  u.pme_->run("modexp", Pme::kLow, false, u.pme_->kernel_ps(modmuls * nic_.m_.crypto.fw_modmul_instr, 0), std::move(k));
}

void KeyExchange::with_public(uint32_t peer, std::function<void()> k) {
  Peer& s = peers_[peer];
  if (!s.pub.empty()) return k();
  s.pub_waiters.push_back(std::move(k));
  if (s.dh) return;  // being computed
  Rng r(nic_.iv_rng_.next(), "mbp2.dh.node" + std::to_string(nic_.node_) + ".peer" + std::to_string(peer));
  std::vector<uint8_t> seed(Dh::kBytes);
  for (size_t i = 0; i < seed.size(); i += 8) {
    const uint64_t v = r.next();
    for (size_t j = 0; j < 8; ++j) seed[i + j] = static_cast<uint8_t>(v >> (8 * j));
  }
  s.dh = std::make_unique<Dh>(seed);
  modexp_work(s.dh->modmuls(), [this, peer, gen = s.gen] {
    Peer& s = peers_[peer];
    if (s.gen != gen) return;  // dropped meanwhile (power cycle, rekey)
    s.pub = s.dh->public_value();
    auto ws = std::move(s.pub_waiters);
    s.pub_waiters.clear();
    for (auto& w : ws) w();
  });
}

void KeyExchange::start(uint32_t peer) {
  if (nic_.m_.crypto.keys != CryptoConfig::Keys::Dh || !nic_.m_.crypto.enabled())
    internal_error("a key exchange needs crypto.keys = dh and a cipher or hash");
  Peer& s = peers_[peer];
  if (s.started || s.sa) return;
  s.started = true;
  s.t0 = nic_.cal_.now_ps();
  s.kx_sent = 0;
  with_public(peer, [this, peer] {
    ++peers_[peer].kx_sent;
    send(peer, kKxInit);
    arm_timer(peer);
  });
}

void KeyExchange::send(uint32_t peer, uint8_t type) {
  Mbp2Nic& u = nic_;
  const Peer& s = peers_[peer];
  std::vector<uint8_t> f(kKxBytes, 0);
  const uint64_t d = mbcf::mac_of(peer), m = mbcf::mac_of(nic_.node_);
  for (int i = 0; i < 6; ++i) {
    f[i] = static_cast<uint8_t>(d >> (40 - 8 * i));
    f[6 + i] = static_cast<uint8_t>(m >> (40 - 8 * i));
  }
  f[12] = kEtherTypeKeyExchange >> 8;
  f[13] = kEtherTypeKeyExchange & 0xff;
  f[14] = type;
  f[15] = type == kKxInit && s.renewing ? 1 : 0;  // a renewal: the sender still holds the old keys
  std::copy(s.pub.begin(), s.pub.end(), f.begin() + 18);
  u.cs.kx_msgs->inc();
  // The PME builds the message in EM and hands it to the LDMA, like any frame.
  u.pme_->run("key_exchange", Pme::kLow, false, u.pme_->instr_ps(nic_.m_.rx_desc_instr), [this, peer, f = std::move(f)]() mutable {
    nic_.to_buffer(peer, std::move(f), [this, peer](std::vector<uint8_t>&& b) {
      nic_.to_wire(peer, std::move(b));  // (not sent: the exchange's timer sends again)
    }, false);
  });
}

// The n-th INIT waits crypto.kx_timeout_us x 2^(n-1) for its answer: retransmissions back off
// exponentially (RFC 7296 2.1), so a peer still computing its keys in firmware (hundreds of ms
// on the MBP2P) is not given up on.
void KeyExchange::arm_timer(uint32_t peer) {
  const Peer& s0 = peers_[peer];
  const double wait_us = nic_.m_.crypto.kx_timeout_us * std::ldexp(1.0, static_cast<int>(std::min<uint32_t>(std::max<uint32_t>(s0.kx_sent, 1) - 1, 30)));
  nic_.cal_.after(static_cast<uint64_t>(wait_us * 1e6), [this, peer, gen = s0.gen] {
    Peer& s = peers_[peer];
    if (s.sa || s.gen != gen || !s.started) return;
    if (s.deriving) return arm_timer(peer);  // answered: the keys are being computed
    if (s.kx_sent >= nic_.m_.crypto.kx_tries) return give_up(peer);
    nic_.cs.kx_retries->inc();
    ++s.kx_sent;
    send(peer, kKxInit);
    arm_timer(peer);
  });
}

// No answer to crypto.kx_tries INITs: the peer is dead or cut off. Frames held for the keys
// would hold their buffers (a datagram's image) for as long, and starve what goes to other
// peers; they are dropped as not sent (MBCF's Go-back-N and TCP send theirs again later,
// which starts a new exchange; a UDP datagram is lost, as with no route).
void KeyExchange::give_up(uint32_t peer) {
  Mbp2Nic& u = nic_;
  Peer& s = peers_[peer];
  u.cs.kx_given_up->inc();
  s.started = false;
  s.kx_sent = 0;
  auto w = std::move(s.waiting);
  s.waiting.clear();
  u.cs.kx_dropped->inc(static_cast<uint32_t>(w.size()));
  for (auto& [frame, k] : w) k({});
  nic_.fw_run_pollers(nic_.cal_.now_ps());
}

void KeyExchange::on_message(Buf b) {
  Mbp2Nic& u = nic_;
  // The LDMA's completion interrupts the PME, which reads the message from its buffer.
  u.pme_->run("key_exchange", Pme::kLow, true, u.pme_->instr_ps(nic_.m_.rx_desc_instr), [this, b] {
    Mbp2Nic& u = nic_;
    if (!nic_.sys_->up(nic_.node_) || !u.rxb->live(b)) return;
    const std::vector<uint8_t> f = u.rxb->get(b);
    u.rxb->release(b);
    const uint32_t peer = f.size() >= 12 ? (static_cast<uint32_t>(f[10]) << 8 | f[11]) : ~0u;
    const bool ours = f.size() >= 12 && f[6] == 0x02 && f[7] == 0x4d && f[8] == 0x42 && f[9] == 0x00;  // mac_of()
    if (f.size() < kKxBytes || !ours || peer >= nic_.sys_->nodes() || peer == nic_.node_ || (f[14] != kKxInit && f[14] != kKxResp && f[14] != kKxConfirm)) {
      u.cs.kx_bad->inc();
      return;
    }
    std::vector<uint8_t> pub(f.begin() + 18, f.begin() + 18 + Dh::kBytes);
    Peer& s = peers_[peer];
    if (!s.started && !s.sa) s.t0 = nic_.cal_.now_ps();
    s.started = true;
    if (f[14] == kKxConfirm) {  // the initiator has the keys we answered with
      if (s.sa && !s.peer_has && pub == s.peer_pub) confirmed(peer);
      return;
    }
    if (f[14] == kKxResp) {
      // The peer installed its keys before it answered: once ours are in, frames may go
      // under them. Crossed INITs (both ends renewing at once) make both ends responders,
      // each then told by the other's RESP.
      if (s.sa) {
        if (!s.peer_has && pub == s.peer_pub) confirmed(peer);
        return;
      }
      s.resp_seen = true;
      return derive(peer, std::move(pub), [this, peer] { send(peer, kKxConfirm); });
    }
    // The responder installs its keys before it answers, so the initiator, which can send
    // sealed frames as soon as it has the answer, never finds it without them.
    if (s.sa && pub == s.peer_pub) return send(peer, kKxResp);  // our answer was lost
    if (s.sa) {
      // A new public value from a peer we have keys with: it restarted and lost them, or (the
      // renewal flag) its sequence numbers ran out. Both ends make new keys (and this end a
      // new private value). After a restart, frames sealed under the old ones, replayed or
      // late, no longer authenticate; after a renewal the old keys still open the peer's
      // frames in flight, under their own anti-replay window.
      u.cs.rekeys->inc();
      drop_keys(peer, f[15] == 1);
      Peer& s2 = peers_[peer];
      s2.started = true;
      s2.t0 = nic_.cal_.now_ps();
    }
    derive(peer, std::move(pub), [this, peer] {
      send(peer, kKxResp);
      // Should the initiator's CONFIRM be lost and it have nothing to send, our frames go
      // under the new keys after crypto.kx_timeout_us anyway.
      nic_.cal_.after(static_cast<uint64_t>(nic_.m_.crypto.kx_timeout_us * 1e6), [this, peer, gen = peers_[peer].gen] {
        Peer& s = peers_[peer];
        if (s.gen == gen && s.sa && !s.peer_has) confirmed(peer);
      });
    });
  });
}

void KeyExchange::derive(uint32_t peer, std::vector<uint8_t> peer_pub, std::function<void()> then) {
  Peer& s = peers_[peer];
  if (s.sa || s.deriving) return;
  s.deriving = true;
  with_public(peer, [this, peer, pub = std::move(peer_pub), then = std::move(then)]() mutable {
    Peer& s = peers_[peer];
    modexp_work(s.dh->modmuls(), [this, peer, pub = std::move(pub), then = std::move(then), gen = s.gen] {
      Mbp2Nic& u = nic_;
      Peer& s = peers_[peer];
      if (s.gen != gen) return;
      s.deriving = false;
      std::vector<uint8_t> secret;
      if (!s.dh->shared(pub, secret)) {
        u.cs.kx_bad->inc();
        return;
      }
      s.sa = std::make_unique<SecurityAssociation>(nic_.m_.crypto.cipher, nic_.m_.crypto.auth, secret);
      nic_.install_keys(peer, false);
      s.peer_pub = pub;
      s.peer_has = s.resp_seen;
      u.cs.kx_done->inc();
      u.cs.kx_ps->inc(nic_.cal_.now_ps() - s.t0);
      then();
      auto w = std::move(s.waiting);
      s.waiting.clear();
      for (auto& [frame, k] : w) nic_.seal_and_send(peer, std::move(frame), std::move(k));
      auto held = std::move(s.held_rx);
      s.held_rx.clear();
      for (auto& [b, k] : held) nic_.open_received(b, std::move(k));
    });
  });
}

void KeyExchange::confirmed(uint32_t peer) {
  Peer& s = peers_[peer];
  s.peer_has = true;
  if (nic_.cs.confirmed) nic_.cs.confirmed->inc();
  auto w = std::move(s.waiting);
  s.waiting.clear();
  for (auto& [frame, k] : w) nic_.seal_and_send(peer, std::move(frame), std::move(k));
}

void KeyExchange::drop_keys(uint32_t peer, bool keep_inbound) {
  Mbp2Nic& u = nic_;
  Peer& s = peers_[peer];
  // Frames held for the keys being dropped will never open: their buffers are free again.
  auto held = std::move(s.held_rx);
  s.held_rx.clear();
  for (auto& [b, k] : held) {
    u.rxb->release(b);
    k(nullptr);
  }
  Peer fresh;
  fresh.gen = s.gen + 1;
  // Frames waiting for keys (not sealed yet) wait for the next ones: none goes under keys the
  // peer no longer holds.
  if (!s.waiting.empty() && u.cs.kx_carried) u.cs.kx_carried->inc(static_cast<uint32_t>(s.waiting.size()));
  fresh.waiting = std::move(s.waiting);
  fresh.installs = s.installs;
  if (keep_inbound && s.sa) {
    fresh.old_id = s.sa_id;
    fresh.old_slot = s.slot;
    fresh.old_sa = std::move(s.sa);
    fresh.old_window = s.rx_window;
    fresh.old_tx_seq = s.tx_seq;
  }
  s = std::move(fresh);
}

}  // namespace mbpsim::mbp2
