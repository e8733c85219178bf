#include "models/mbp2/mbp2_system.h"

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

// One node's NIC: a SystemC module whose units are its children (mbp2_node3.pme, ...).
Mbp2System::Units::Units(sc_core::sc_module_name nm, Calendar& cal, const host::BusConfig& bus_c, const Mbp2Config& c, uint32_t nodes, uint32_t rx_buffers,
                         Stats& st, const std::string& b)
    : sc_core::sc_module(nm) {
  bus = std::make_unique<HostBus>(bus_c, st, b + "biu");
  em = std::make_unique<Em>(c.em, st, b + "em");
  tlb = std::make_unique<Tlb>(c.tlb_entries, st, b + "tlb");
  frames.tlb = tlb.get();
  pme = std::make_unique<Pme>(cal, c.pme, st, b + "pme");
  pme->attach(em.get());
  kli = std::make_unique<Kli>(*bus, st, b + "kli");
  icu = std::make_unique<Icu>(st, b + "icu");
  uli = std::make_unique<Uli>(*kli, st, b + "uli");
  pge = std::make_unique<DmaEngine>(cal, *em, c.ring_entries, c.pge_setup_ns, st, b + "pge");
  adma = std::make_unique<DmaEngine>(cal, *em, c.ring_entries, c.adma_setup_ns, st, b + "adma");
  ldma_tx = std::make_unique<DmaEngine>(cal, *em, c.ring_entries, c.ldma_setup_ns, st, b + "ldma_tx");
  ldma_rx = std::make_unique<DmaEngine>(cal, *em, c.ring_entries, c.ldma_setup_ns, st, b + "ldma_rx");
  pge_ring = std::make_unique<FirmwareRing>(cal, *pge);
  adma_ring = std::make_unique<FirmwareRing>(cal, *adma);
  ldma_tx_ring = std::make_unique<FirmwareRing>(cal, *ldma_tx);
  ldma_rx_ring = std::make_unique<FirmwareRing>(cal, *ldma_rx);
  em_port = std::make_unique<EmPort>(*em);
  dg_images = em->carve(c.ring_entries * FramePool::kBufBytes);
  dg_large = em->carve(kLargeImages * kLargeImageBytes);
  dg_held.assign(c.ring_entries + kLargeImages, 0);
  adma_stage = em->carve(c.ring_entries * FramePool::kBufBytes);
  ldma_tx->connect(em_port.get(), &mac_tx);
  ldma_rx->connect(&mac_rx, em_port.get());
  txb = std::make_unique<FramePool>(*em, c.ring_entries, st, b + "tx_buffers");
  rxb = std::make_unique<FramePool>(*em, rx_buffers, st, b + "rx_buffers");
  reqb = std::make_unique<FramePool>(*em, c.request_slots, st, b + "request_images");
  rx_oversized = &st.counter(b + "mac.rx_oversized", "frames longer than Ethernet allows (1514 bytes without FCS) dropped by the MAC");
  sec.resize(nodes);
  if (c.csu) csu = std::make_unique<Csu>(st, b + "csu");
  if (c.ocu) ocu = std::make_unique<Ocu>(c.ocu_registers, st, b + "ocu");
  {
    const std::string ib = b + "ip.";
    IpStats& x = ip;
    x.tx = &st.counter(ib + "tx_datagrams", "UDP/TCP datagrams sent by user tasks through their doorbells");
    x.tx_bytes = &st.counter(ib + "tx_bytes", "payload bytes of those datagrams");
    x.tx_rejected = &st.counter(ib + "tx_rejected", "send structures the PGE refused (payload not readable, bypass asked by a task, connection closed)");
    x.tx_bypass_rejected = &st.counter(ib + "tx_bypass_rejected", "send structures of user tasks asking for untranslated (bypass) addresses");
    x.rx = &st.counter(ib + "rx_delivered", "datagrams written by the PGE into a task's receive structure");
    x.rx_bytes = &st.counter(ib + "rx_bytes", "payload bytes of those datagrams");
    x.rx_kernel = &st.counter(ib + "rx_kernel", "frames for no bound port, written into the kernel's receive structure");
    x.rx_kernel_dropped = &st.counter(ib + "rx_kernel_dropped", "frames for no bound port dropped: the kernel's receive structure was full");
    x.rx_ring_full = &st.counter(ib + "rx_ring_full", "datagrams dropped because the task's receive ring was full");
    x.rx_bad_ring = &st.counter(ib + "rx_bad_ring", "datagrams dropped because the receive ring was unmapped, malformed or its slots too small");
    x.rx_malformed = &st.counter(ib + "rx_malformed", "IP datagrams rejected: truncated, bad header or header checksum, unknown protocol, bad length");
    x.rx_bad_checksum = &st.counter(ib + "rx_bad_checksum", "UDP/TCP frames whose checksum failed (CSU-R or firmware)");
    x.rx_not_ours = &st.counter(ib + "rx_not_ours", "IP frames addressed to another node");
    x.rx_out_of_order = &st.counter(ib + "rx_out_of_order", "TCP segments dropped as duplicates or beyond a gap (OCU or firmware)");
    x.rx_no_buffer = &st.counter(ib + "rx_no_buffer", "UDP/TCP frames lost at the LDMA: every receive buffer was taken (the PME fell behind the wire)");
    x.tx_fragments = &st.counter(ib + "tx_fragments", "IP fragments sent: frames of UDP datagrams longer than one frame");
    x.rx_fragments = &st.counter(ib + "rx_fragments", "IP fragments received by the PME");
    x.rx_fragments_dropped = &st.counter(ib + "rx_fragments_dropped", "IP fragments dropped: malformed or for another node, no receive buffer at the LDMA (their datagram then times out), or of a datagram given up for want of room");
    x.rx_fragment_duplicates = &st.counter(ib + "rx_fragment_duplicates", "IP fragments received again (the first copy kept)");
    x.rx_reassembled = &st.counter(ib + "rx_reassembled", "datagrams reassembled from IP fragments (then steered like any)");
    x.rx_reasm_timeout = &st.counter(ib + "rx_reasm_timeout", "datagrams given up incomplete after mbp2.reasm_timeout_us (their buffers freed)");
    x.rx_reasm_bad = &st.counter(ib + "rx_reasm_bad", "datagrams given up because their fragments disagree (overlapping pieces, a piece past the end, two ends)");
    x.tx_image_waits = &st.counter(ib + "tx_image_waits", "times the PGE found no free image in EM for the next datagram and waited (its frames not yet read by the LDMA)");
    x.tcp_acks_tx = &st.counter(ib + "tcp_acks_sent", "pure TCP acknowledgements the PME sent (delayed, or at once for a segment out of order, a duplicate or one the ring had no room for)");
    x.tcp_acks_rx = &st.counter(ib + "tcp_acks_received", "pure TCP acknowledgements received");
    x.tcp_dup_acks = &st.counter(ib + "tcp_dup_acks", "duplicate TCP acknowledgements received (RFC 5681: no data, the same ACK and window, data outstanding)");
    x.tcp_retransmits = &st.counter(ib + "tcp_retransmits", "TCP segments sent again (go-back after a timeout or three duplicate ACKs, or a window probe of a segment sent before)");
    x.tcp_fast_retransmits = &st.counter(ib + "tcp_fast_retransmits", "go-backs on three duplicate ACKs");
    x.tcp_timeouts = &st.counter(ib + "tcp_timeouts", "retransmission timeouts (RFC 6298)");
    x.tcp_probes = &st.counter(ib + "tcp_window_probes", "segments sent into a shut window when the persist timer expired");
    x.tcp_aborts = &st.counter(ib + "tcp_aborts", "connections given up after mbp2.tcp_max_retries timeouts in a row (their images freed)");
    x.tcp_window_waits = &st.counter(ib + "tcp_window_waits", "times a queued TCP segment found nothing in flight and the peer's window too small for it");
    x.rx_reasm_no_room = &st.counter(ib + "rx_reasm_no_room", "datagrams given up because a fragment found the reassemblies' share of the receive buffers (half) taken: their pieces freed at once, the rest dropped as they come");
  }
  if (c.crypto.enabled()) {
    if (c.crypto.cau) {
      cau = std::make_unique<Cau>(cal, c.crypto, c.ring_entries, 2 * nodes, *em, st, b + "cau");
      cau_ring = std::make_unique<FirmwareRing>(cal, cau->engine());
    }
    if (c.crypto.keys == CryptoConfig::Keys::Dh && c.crypto.meac) meac = std::make_unique<Meac>(c.crypto, st, b + "meac");
    const std::string cb = b + "crypto.";
    CryptoStats& x = cs;
    x.sealed = &st.counter(cb + "frames_sealed", "frames encrypted and/or authenticated for the wire");
    x.seal_failed = &st.counter(cb + "seal_failed", "frames the CAU or firmware could not seal (a key slot without a usable key block, a frame that would outgrow Ethernet): not sent, Go-back-N resends MBCF ones");
    x.opened = &st.counter(cb + "frames_opened", "sealed frames authenticated and decrypted");
    x.enc_bytes = &st.counter(cb + "bytes_encrypted", "bytes through the cipher, sending");
    x.dec_bytes = &st.counter(cb + "bytes_decrypted", "bytes through the cipher, receiving");
    x.auth_bytes = &st.counter(cb + "bytes_authenticated", "bytes through the keyed hash, both ways");
    x.rej_auth = &st.counter(cb + "rejected_auth", "received frames whose ICV did not match (altered on the wire or forged)");
    x.rej_format = &st.counter(cb + "rejected_format", "received sealed frames with a bad length or padding");
    x.rej_plain = &st.counter(cb + "rejected_plain", "received MBCF frames sent in the clear to a NIC that encrypts");
    x.rej_no_sa = &st.counter(cb + "rejected_no_sa", "received sealed frames from a peer without keys");
    x.rx_no_buffer = &st.counter(cb + "rx_no_buffer", "sealed frames lost at the LDMA: every receive buffer was taken (what they carried is unknown; Go-back-N resends MBCF ones)");
    x.rej_replay = &st.counter(cb + "rejected_replay",
                               "authenticated frames whose sequence number was already accepted or is 64 or more behind the highest (RFC 4303 anti-replay)");
    if (c.crypto.keys == CryptoConfig::Keys::Dh) {
      x.kx_msgs = &st.counter(cb + "kx_messages", "key-exchange messages sent");
      x.kx_retries = &st.counter(cb + "kx_retries", "key-exchange messages sent again after a timeout");
      x.kx_given_up = &st.counter(cb + "kx_given_up", "key exchanges given up after crypto.kx_tries INITs without an answer (a dead or unreachable peer)");
      x.kx_dropped = &st.counter(cb + "kx_dropped_frames", "frames dropped, their buffers freed, when the exchange they waited for was given up");
      x.kx_carried = &st.counter(cb + "kx_carried_frames",
                                 "frames that waited for keys the peer then dropped (it came back with a new public value), carried over to wait for the next ones");
      x.kx_done = &st.counter(cb + "kx_completed", "key exchanges completed (keys installed)");
      x.kx_ps = &st.counter(cb + "kx_time_ps", "summed time from the start of an exchange to its keys");
      x.kx_bad = &st.counter(cb + "kx_rejected", "key-exchange messages rejected (bad length, sender or public value)");
      x.rekeys = &st.counter(cb + "rekeys", "key exchanges started by a peer that already had keys with us and a new public value (it restarted, or its sequence numbers ran out)");
      x.rekeys_seq = &st.counter(cb + "rekeys_sequence", "key exchanges this NIC started because crypto.rekey_frames frames were sealed under the current keys");
      x.opened_old = &st.counter(cb + "opened_under_old_keys", "received frames opened under the keys before a rekey (sealed before the peer changed over)");
      x.held_rx = &st.counter(cb + "held_for_new_keys", "received frames sealed under new keys this NIC was still deriving: held in EM and opened once they were in");
      x.confirmed = &st.counter(cb + "keys_confirmed",
                                "key exchanges in which this NIC had its new keys before it knew its peer had them, and learnt it later (the peer's RESP after crossed INITs, a frame under them, a CONFIRM, or crypto.kx_timeout_us): until then its frames waited, or went under the old keys of a renewal");
    }
    x.seq_exhausted = &st.counter(cb + "sequence_exhausted", "frames not sent: crypto.rekey_frames frames were sealed under static keys, which cannot be renewed");
  }
}

Mbp2System::Mbp2System(Calendar& cal, const mbcf::EtherSysConfig& ec, const Mbp2Config& c, Stats& st, uint64_t seed)
    : EtherSystem(cal, ec, st, seed),
      m_(c),
      rejected_requests_(st.counter("system.mbp2.rejected_requests", "requests dropped because their doorbell alias was not the task's own")),
      host_requests_(st.counter("system.mbp2.host_requests", "requests written and rung by user tasks (no system call)")),
      slot_retries_(st.counter("system.mbp2.doorbell_slot_waits",
                               "MBCF doorbell stores that found every EM request slot taken (mbp2.request_slots) and were retried, holding the CPU, until a request left")),
      bad_requests_(st.counter("system.mbp2.bad_requests",
                               "send structures the NIC refused: bad sizes, a payload not readable at its address, commands that do not decode or break a rule of 4.4, an unknown Ltask")),
      ring_waits_(st.counter("system.mbp2.send_ring_waits",
                             "requests whose task found every entry of its send ring still unfetched (mbp2.send_ring_entries) and waited, holding the CPU, for the PGE")),
      iv_rng_(seed, "mbp2.cau.iv") {
  icu_bad_ = &st.counter("system.mbp2.icu_bad_messages", "ICU messages of an unknown type (ignored)");
  atomic_changed_ = &st.counter("system.mbp2.atomic_operands_changed",
                                "atomics whose operands the host changed between the PME's check of the command and the ADMA's read of them (the result is computed from what the ADMA read)");
  walkers_.resize(ec.nodes);
  for (uint32_t n = 0; n < ec.nodes; ++n) {
    const std::string b = "system.node" + std::to_string(n) + ".mbp2.";
    u_.push_back(std::make_unique<Units>(("mbp2_node" + std::to_string(n)).c_str(), cal, ec.bus, c, ec.nodes, ec.rx_ring, st, b));
    Units& u = *u_.back();
    walkers_[n].sys = this;
    walkers_[n].node = n;
    u.pge->connect(&walkers_[n], u.em_port.get());
    // The ADMA's host side is the BIU's DMA socket into the host's memory (host physical
    // addresses: frame * page_bytes + offset).
    u.bus->set_memory([this, n]() -> mem::TargetSocket& { return host_memory(n); });
    u.adma->connect(u.em_port.get(), u.bus.get());
    u.mbcf_ocu.assign(ec.nodes, -1);
    for (uint32_t q = 0; q < ec.nodes && u.ocu; ++q)
      if (q != n && u.ocu_used < u.ocu->registers()) {
        u.mbcf_ocu[q] = static_cast<int32_t>(u.ocu_used++);
        u.ocu->arm(static_cast<uint32_t>(u.mbcf_ocu[q]), 1);  // nothing arrived: END_P 1 is next
      }
  }
  rings_.resize(ec.nodes);
  if (c.crypto.enabled()) {
    frame_overhead_ = seal_overhead(c.crypto.cipher, c.crypto.auth);
    if (c.crypto.keys == CryptoConfig::Keys::Static) {
      // A pre-shared secret: every pair's keys come from it and the two Pnodes.
      for (uint32_t a = 0; a < ec.nodes; ++a)
        for (uint32_t b2 = 0; b2 < ec.nodes; ++b2) {
          if (a == b2) continue;
          std::vector<uint8_t> sec(c.crypto.secret.begin(), c.crypto.secret.end());
          for (uint32_t v : {std::min(a, b2), std::max(a, b2)})
            for (int i = 0; i < 4; ++i) sec.push_back(static_cast<uint8_t>(v >> (24 - 8 * i)));
          u_[a]->sec[b2].sa = std::make_unique<SecurityAssociation>(c.crypto.cipher, c.crypto.auth, sec);
          u_[a]->sec[b2].peer_has = true;  // both ends hold them from the start
          install_keys(a, b2, true);
        }
    }
  }
}

uint64_t Mbp2System::em_bytes_needed(const Mbp2Config& c, uint32_t rx_ring, uint32_t nodes) {
  const uint64_t rings = 4 * static_cast<uint64_t>(c.ring_entries) * DmaEngine::kDescBytes;
  const uint64_t cau = c.crypto.enabled() && c.crypto.cau ? Cau::em_bytes(c.ring_entries, 2 * nodes) : 0;
  return Kli::kBytes + rings + cau + kLargeImages * kLargeImageBytes +
         (3 * static_cast<uint64_t>(c.ring_entries) + rx_ring + c.request_slots) * FramePool::kBufBytes;
}

uint32_t Mbp2System::alias_of(uint32_t node, uint32_t ptask) const {
  const int64_t a = u_[node]->uli->alias_of(ptask);
  if (a < 0) internal_error("task " + std::to_string(ptask) + " of node " + std::to_string(node) + " has no doorbell alias");
  return static_cast<uint32_t>(a);
}

// ------------------------------------------------------------------ host side

Mbp2System::SendRing& Mbp2System::send_ring(uint32_t node, uint32_t ptask) {
  auto& rings = rings_[node];
  auto it = rings.find(ptask);
  if (it != rings.end()) return it->second;
  // The OS pins the pages when the task first uses its alias: consecutive frames, zeroed.
  SendRing& R = rings[ptask];
  const uint32_t pb = c_.page_bytes;
  const uint64_t bytes = kSendAreaHeader + static_cast<uint64_t>(m_.send_ring_entries) * kSendEntryBytes;
  for (uint64_t i = 0; i < (bytes + pb - 1) / pb; ++i) R.frames.push_back(space(node).alloc_frame());
  R.posted.assign(m_.send_ring_entries, false);
  return R;
}

void Mbp2System::area_copy(uint32_t node, uint32_t ptask, uint32_t off, uint8_t* buf, uint32_t n, bool write, bool nic) {
  SendRing& R = send_ring(node, ptask);
  const uint32_t pb = c_.page_bytes;
  if (static_cast<uint64_t>(off) + n > static_cast<uint64_t>(R.frames.size()) * pb)
    internal_error("an access beyond task " + std::to_string(ptask) + "'s send area on node " + std::to_string(node));
  while (n) {
    const uint32_t in = off % pb, k = std::min(n, pb - in);
    uint64_t frame = R.frames[off / pb];
    if (nic) u_[node]->tlb->probe(ptask, kSendArea / pb + off / pb, &frame);
    uint8_t* f = space(node).frame(static_cast<uint32_t>(frame)) + in;
    if (write) std::copy(buf, buf + k, f);
    else std::copy(f, f + k, buf);
    buf += k;
    off += k;
    n -= k;
  }
}

uint32_t Mbp2System::fetched(uint32_t node, uint32_t ptask) {
  uint8_t w[4];
  area_copy(node, ptask, 0, w, 4, false);
  return load_be32(w);
}

void Mbp2System::send_area_write(uint32_t node, uint32_t ptask, uint32_t off, const std::vector<uint8_t>& bytes) {
  std::vector<uint8_t> b = bytes;
  area_copy(node, ptask, off, b.data(), static_cast<uint32_t>(b.size()), true);
}

std::vector<uint8_t> Mbp2System::send_area_read(uint32_t node, uint32_t ptask, uint32_t off, uint32_t n) {
  std::vector<uint8_t> b(n);
  area_copy(node, ptask, off, b.data(), n, false);
  return b;
}

void Mbp2System::free_entry(uint32_t node, uint32_t ptask, uint32_t e, bool fetched) {
  SendRing& R = send_ring(node, ptask);
  if (!R.posted.at(e)) internal_error("send ring entry " + std::to_string(e) + " of task " + std::to_string(ptask) + " freed twice");
  R.posted[e] = false;
  if (fetched) {
    // The PGE writes its count back into the area: a task polling it sees the entry (and a
    // payload at an address) free.
    uint8_t w[4];
    store_be32(w, ++R.fetched);
    area_copy(node, ptask, 0, w, 4, true);
    run_pollers(node, cal_.now_ps());
  }
  if (!R.waiters.empty()) {
    auto f = std::move(R.waiters.front());
    R.waiters.pop_front();
    f();
  }
}

std::vector<uint8_t> Mbp2System::mbcf_structure(uint32_t ltask, const Packet& p, uint32_t src_laddr) {
  // The packet as it travels, its header's first bytes then replaced by the structure's.
  std::vector<uint8_t> s;
  if (!encode(p, s)) internal_error("a built request does not encode");
  s.resize(mbcf::packet_bytes(p));
  uint32_t payload = 0;
  if (src_laddr != kNoAddr && p.cmds.size() == 1 && !p.cmds[0].data.empty()) {
    payload = static_cast<uint32_t>(p.cmds[0].data.size());  // the data travels last
    s.resize(s.size() - payload);
  } else {
    src_laddr = kNoAddr;
  }
  const uint32_t cbytes = static_cast<uint32_t>(s.size()) - mbcf::kHeaderBytes;
  s.erase(s.begin(), s.begin() + (mbcf::kHeaderBytes - kMbcfStructHeader));
  store_be32(&s[0], kSendMbcf << 24 | cbytes);
  store_be32(&s[4], ltask);
  store_be32(&s[8], src_laddr);
  store_be32(&s[12], payload);
  return s;
}

void Mbp2System::issue(uint32_t node, uint32_t ptask, const mbcf::Request& r, Built b, std::function<void()> k) {
  send_packet(node, ptask, alias_of(node, ptask), r, std::move(b), std::move(k));
}

bool Mbp2System::ring(uint32_t node, uint32_t ptask, uint32_t alias, const mbcf::Request& r, std::function<void()> k) {
  if (!n_[node]->up) return false;  // a node without power runs no program
  Built b;
  if (!build_request(node, ptask, r, b)) {
    refused_.inc();
    return false;
  }
  send_packet(node, ptask, alias, r, std::move(b), std::move(k));
  return true;
}

bool Mbp2System::ring_structure(uint32_t node, uint32_t ptask, uint32_t alias, std::vector<uint8_t> structure, std::function<void()> k) {
  if (!n_[node]->up || !space(node).find(ptask)) return false;
  if (structure.size() > kSendEntryBytes) structure.resize(kSendEntryBytes);  // the rest is the next entry's
  host_request(node, ptask, alias, cycles_ps(m_.host_request_cycles), std::move(structure),
               [this, node, ptask](uint32_t e) { fetch_request(node, ptask, e); }, std::move(k), true);
  return true;
}

void Mbp2System::send_packet(uint32_t node, uint32_t ptask, uint32_t alias, const mbcf::Request& r, Built b, std::function<void()> k) {
  const uint64_t build = cycles_ps(m_.host_request_cycles + (b.packet.cmds.size() - 1) * c_.user_build_cycles);
  std::vector<uint8_t> s = mbcf_structure(r.ltask, b.packet, r.src_laddr);
  host_request(node, ptask, alias, build, std::move(s), [this, node, ptask, p = std::move(b.packet)](uint32_t e) {
    // The NIC counts the request for its barrier colour when it takes the doorbell, before
    // the user can poll the counters (a barrier must not pass a request still in the queue).
    if (!mutant::on(mutant::Id::EmbCountedLate)) count_emb_requests(node, p);
    fetch_request(node, ptask, e);
  }, std::move(k), true);
}

void Mbp2System::host_request(uint32_t node, uint32_t ptask, uint32_t alias, uint64_t build, std::vector<uint8_t> structure,
                              std::function<void(uint32_t)> nic, std::function<void()> k, bool slot) {
  SendRing& R = send_ring(node, ptask);
  const uint32_t n = static_cast<uint32_t>(R.posted.size());
  // The lowest free entry: a program with few requests out keeps to the first pages (few
  // TLB entries on the NIC).
  uint32_t e = n;
  for (uint32_t i = 0; i < n && e == n; ++i)
    if (!R.posted[i]) e = i;
  if (e == n) {
    // Every entry is the NIC's: the program polls the PGE's count until one is free.
    ring_waits_.inc();
    R.waiters.push_back([this, node, ptask, alias, build, s = std::move(structure), nic = std::move(nic), k = std::move(k), slot]() mutable {
      host_request(node, ptask, alias, build, std::move(s), std::move(nic), std::move(k), slot);
    });
    return;
  }
  R.posted[e] = true;
  // The user task writes its send structure (ordinary stores, user mode), then the doorbell.
  const uint32_t inc = n_[node]->incarnation;
  compute(node, build, [this, node, ptask, alias, e, inc, s = std::move(structure), nic = std::move(nic), k = std::move(k), build, slot]() mutable {
    if (!n_[node]->up || n_[node]->incarnation != inc) return;
    n_[node]->kernel_ps += build;
    area_copy(node, ptask, kSendAreaHeader + e * kSendEntryBytes, s.data(), static_cast<uint32_t>(s.size()), true);
    doorbell(node, ptask, alias, e, build, [e, nic = std::move(nic)] { nic(e); }, std::move(k), slot);
  });
}

// The doorbell: an uncached store across the host bus, which holds the CPU until it completes.
// It names the entry of the task's send ring. An MBCF request needs a free request slot in EM
// (requests taken and not yet sent, those waiting for their peer's window among them); with
// none, the NIC retries the store and the CPU waits until a request leaves. The slot is taken
// as the store is accepted, so no more requests are ever held than there are slots (checked: a
// breach stops the run).
void Mbp2System::doorbell(uint32_t node, uint32_t ptask, uint32_t alias, uint32_t entry, uint64_t build, std::function<void()> nic,
                          std::function<void()> k, bool slot) {
  Node& N = *n_[node];
  if (!N.up) return;
  if (slot && N.requests_in_flight >= m_.request_slots && !mutant::on(mutant::Id::DoorbellIgnoresSlots)) {
    slot_retries_.inc();
    u_[node]->slot_waiters.push_back([this, node, ptask, alias, entry, build, nic = std::move(nic), k = std::move(k)]() mutable {
      doorbell(node, ptask, alias, entry, build, std::move(nic), std::move(k), true);
    });
    return;
  }
  if (slot && ++N.requests_in_flight > m_.request_slots)
    fail("buffer bound: node " + std::to_string(node) + "'s NIC holds " + std::to_string(N.requests_in_flight) +
         " requests, beyond mbp2.request_slots " + std::to_string(m_.request_slots));
  const uint64_t now = cal_.now_ps();
  const uint64_t done = u_[node]->bus->pio(now);
  N.kernel_ps += done - now;
  host_requests_.inc();
  // The NIC latches the doorbell as the store completes, before the CPU goes on (the
  // calendar runs events of one instant in the order they were scheduled).
  cal_.at(done, [this, node, ptask, alias, entry, slot, nic = std::move(nic), inc = N.incarnation]() mutable {
    if (n_[node]->incarnation != inc) return;
    if (u_[node]->uli->ring(alias, ptask) < 0) {
      rejected_requests_.inc();
      if (slot) {  // the slot it took is free again
        --n_[node]->requests_in_flight;
        request_numbered(node);
      }
      free_entry(node, ptask, entry, false);  // the task may write it again
      return;
    }
    nic();
  });
  compute(node, done - now, std::move(k));
}

mbcf::Task& Mbp2System::create_task(uint32_t node, uint32_t ptask, uint32_t key) {
  mbcf::Task& t = EtherSystem::create_task(node, ptask, key);
  Units& u = *u_[node];
  // The OS gives the task its alias page and tells the NIC through the KLI (at set-up).
  u.uli->assign(u.next_alias++, ptask, cal_.now_ps());
  return t;
}

// A request taken from a doorbell left EM's queue: the oldest retried doorbell goes in.
void Mbp2System::request_numbered(uint32_t node) {
  auto& w = u_[node]->slot_waiters;
  if (w.empty() || n_[node]->requests_in_flight >= m_.request_slots) return;
  auto f = std::move(w.front());
  w.pop_front();
  f();
}

// ------------------------------------------------------------------ NIC side

uint64_t Mbp2System::translate(uint32_t node, uint32_t ctx, uint32_t laddr, uint32_t bytes, uint64_t* pa) {
  Units& u = *u_[node];
  const uint32_t pb = c_.page_bytes;
  const mbcf::Task* t = space(node).find(ctx);
  uint64_t refill = 0;
  const uint64_t first = laddr / pb, last = (static_cast<uint64_t>(laddr) + std::max<uint32_t>(bytes, 1) - 1) / pb;
  for (uint64_t vp = first; vp <= last; ++vp) {
    uint64_t pp = 0;
    if (!u.tlb->lookup(ctx, vp, &pp)) {
      // The PME walks the page table in EM: the handler plus one entry read. A page the task
      // does not map has no entry to install (the transfer is refused before it moves).
      bool found = false;
      const uint64_t area = kSendArea / pb;
      auto ring = rings_[node].find(ctx);
      if (vp >= area && ring != rings_[node].end() && vp - area < ring->second.frames.size()) {
        pp = ring->second.frames[vp - area];  // the send area the OS pinned
        found = true;
      } else if (t) {
        auto it = t->pages.find(static_cast<uint32_t>(vp));
        if (it != t->pages.end()) {
          pp = it->second.frame;
          found = true;
        }
      }
      if (found) u.tlb->insert(ctx, vp, pp);
      refill += u.pme->instr_ps(m_.tlb_refill_instr) + u.pme->interrupt_ps() + u.em->access_ps(8);
      u.em->access(Route::Pme, cal_.now_ps(), 8);
    }
    if (vp == first && pa) *pa = pp * pb + laddr % pb;
  }
  return refill;
}

void Mbp2System::bad_request(uint32_t node, uint32_t ptask, uint32_t e, bool slot) {
  bad_requests_.inc();
  if (e != ~0u) free_entry(node, ptask, e, true);
  if (slot) {
    if (n_[node]->requests_in_flight) --n_[node]->requests_in_flight;
    request_numbered(node);
  }
}

void Mbp2System::fetch_request(uint32_t node, uint32_t ptask, uint32_t e) {
  // The PGE reads the structure's header to learn what to fetch: the commands, and the payload
  // at its address (readable and present in the task: the NIC cannot fault a page in).
  const uint32_t at = kSendAreaHeader + e * kSendEntryBytes;
  uint8_t h[kMbcfStructHeader];
  area_copy(node, ptask, at, h, kMbcfStructHeader, false, true);
  const uint32_t kind = load_be32(&h[0]) >> 24, cbytes = load_be32(&h[0]) & 0xffffff;
  const uint32_t ltask = load_be32(&h[4]), src = load_be32(&h[8]), payload = load_be32(&h[12]);
  const mbcf::Task* t = space(node).find(ptask);
  if (kind != kSendMbcf || cbytes > kSendEntryBytes - kMbcfStructHeader || payload > mbcf::kMaxPacketBytes ||
      (src == kNoAddr) != (payload == 0) || !t || (payload && !usable(space(node), *t, src, payload, mbcf::kPermRead)))
    return bad_request(node, ptask, e, true);
  const uint32_t sbytes = kMbcfStructHeader + cbytes;
  uint64_t pa_struct = 0, pa_data = 0;
  uint64_t refill = translate(node, ptask, send_entry_laddr(e), sbytes, &pa_struct);
  if (payload) refill += translate(node, ptask, src, payload, &pa_data);
  // A request dies with the NIC's power: one taken before a power loss is never sent by the
  // NIC's next incarnation (EM, the PGE and the PME's queues are volatile).
  const uint32_t inc = n_[node]->incarnation;
  auto pge = [this, node, ptask, e, ltask, cbytes, payload, sbytes, pa_struct, pa_data, inc]() mutable {
    Units& u = *u_[node];
    // Longer than any packet's commands: the PGE refuses it before fetching (the image would
    // not fit its buffer).
    if (mbcf::kHeaderBytes + cbytes + payload > mbcf::kMaxPacketBytes) {
      free_entry(node, ptask, e, true);
      bad_request(node, ptask, ~0u, true);
      return true;
    }
    FramePool::Buf b;
    if (!u.reqb->alloc(&b)) {
      fail("buffer bound: node " + std::to_string(node) + "'s NIC has no request image for a request it took (mbp2.request_slots " +
           std::to_string(m_.request_slots) + ")");
      return true;
    }
    // The PGE walks the structure into the image: the commands, then the payload from its
    // address, as they are in host memory when it reads them, at the frames its TLB gives.
    pge_fetch(node, ptask, e, u.reqb->offset(b), pa_struct, sbytes, pa_data, payload, cbytes + payload,
              [this, node, ptask, e, ltask, inc, b](const DmaEngine::Desc& d) mutable {
                if (!n_[node]->up || n_[node]->incarnation != inc) return;
                Units& u = *u_[node];
                if (!u.reqb->live(b)) return;
                if (d.error()) {  // the task can no longer read what it named, or it went
                  u.reqb->release(b);
                  return bad_request(node, ptask, e, true);
                }
                free_entry(node, ptask, e, true);
                b.len = d.bytes;
                std::vector<uint8_t> img = u.reqb->get(b);
                // The PGE's completion interrupts the PME, which builds the header from the image
                // and runs the protocol: the SS20 kernel's request routine, ported (longer for
                // each further command of a combined request).
                Units::Decoded& dec = u.decoded[b.serial];
                dec.ok = decode_image(img, &dec.packet);
                dec.bytes = std::move(img);
                const size_t ncmd = dec.ok ? dec.packet.cmds.size() : 1;
                const uint64_t hdr = proto_ps(c_.syscall_cycles + (ncmd - 1) * c_.int_command_cycles);
                u.pme->run_from(Pme::kPgeRing, "header_build", Pme::kNormal, hdr, [this, node, ptask, ltask, b, inc] {
                  if (!n_[node]->up || n_[node]->incarnation != inc) return;
                  build_from_image(node, ptask, ltask, b);
                });
              });
    return true;
  };
  pge_submit(node, refill, std::move(pge));
}

bool Mbp2System::decode_image(const std::vector<uint8_t>& img, Packet* p) {
  // The header the PME puts in front of the commands; only the type and the length matter to
  // the decoder, the rest is filled in from the requester below.
  std::vector<uint8_t> f(mbcf::kHeaderBytes, 0);
  const size_t total = mbcf::kHeaderBytes + img.size();
  if (total > mbcf::kMaxPacketBytes) return false;
  f[12] = mbcf::kEtherType >> 8;
  f[13] = mbcf::kEtherType & 0xff;
  f[14] = static_cast<uint8_t>(total >> 8);
  f[15] = static_cast<uint8_t>(total);
  f.insert(f.end(), img.begin(), img.end());
  return mbcf::decode(f.data(), f.size(), *p) == mbcf::DecodeError::None;
}

void Mbp2System::build_from_image(uint32_t node, uint32_t ptask, uint32_t ltask, FramePool::Buf b) {
  Units& u = *u_[node];
  if (!u.reqb->live(b)) return;  // EM lost its contents with the power
  const std::vector<uint8_t> img = u.reqb->get(b);
  u.reqb->release(b);
  // The source is the task the ULI named and the OS's entry for it; the destination is its
  // translation table's entry for the Ltask. The image supplies the commands only, and they
  // pass the same checks as the library's (a task may write anything into its structure).
  Packet q;
  bool ok = false;
  auto it = u.decoded.find(b.serial);
  if (it != u.decoded.end() && it->second.bytes == img) {
    ok = it->second.ok;
    q = std::move(it->second.packet);
  } else {
    ok = decode_image(img, &q);
  }
  if (it != u.decoded.end()) u.decoded.erase(it);
  Built built;
  mbcf::Request r;
  r.ltask = ltask;
  if (!ok) return bad_request(node, ptask, ~0u, true);
  r.cmds = std::move(q.cmds);
  if (!build_request(node, ptask, r, built)) return bad_request(node, ptask, ~0u, true);
  const uint32_t dst = built.dst;
  Packet p = std::move(built.packet);
  if (mutant::on(mutant::Id::EmbCountedLate)) count_emb_requests(node, p);
  if (must_wait(node, dst, p)) {  // TH2: the request waits in EM for the window to open
    blocked_.inc();
    n_[node]->peers[dst].blocked.push_back([this, node, dst, p]() mutable { submit(node, dst, std::move(p)); });
    return;
  }
  submit(node, dst, std::move(p));
}

void Mbp2System::pge_submit(uint32_t node, uint64_t refill, std::function<bool()> post) {
  Units& u = *u_[node];
  u.pge_wait.emplace_back(refill, std::move(post));
  if (!u.pge_stalled && !u.pge_blocked) pge_next(node);
}

void Mbp2System::pge_next(uint32_t node) {
  Units& u = *u_[node];
  while (!u.pge_wait.empty()) {
    auto [refill, post] = std::move(u.pge_wait.front());
    u.pge_wait.pop_front();
    if (refill == 0) {
      if (pge_start(node, post)) continue;
      return;
    }
    // A TLB miss interrupts the PME, and the PGE waits for the entry: requests behind this one
    // wait too (they never overtake it).
    u.pge_stalled = true;
    u.pme->run("tlb_refill", Pme::kHigh, false, refill, [this, node, post = std::move(post)]() mutable {
      u_[node]->pge_stalled = false;
      if (pge_start(node, post)) pge_next(node);
    });
    return;
  }
}

bool Mbp2System::pge_start(uint32_t node, std::function<bool()>& post) {
  if (post()) return true;
  // No room in EM for what it would fetch: the PGE waits, and the requests behind it too.
  Units& u = *u_[node];
  u.pge_wait.emplace_front(0, std::move(post));
  u.pge_blocked = true;
  return false;
}

int32_t Mbp2System::take_image(uint32_t node, bool large) {
  Units& u = *u_[node];
  const size_t from = large ? m_.ring_entries : 0, to = large ? u.dg_held.size() : m_.ring_entries;
  for (size_t i = from; i < to; ++i)
    if (u.dg_held[i] == 0) {
      u.dg_held[i] = 1;  // the fetch
      return static_cast<int32_t>(i);
    }
  u.ip.tx_image_waits->inc();
  return -1;
}

uint32_t Mbp2System::image_offset(uint32_t node, int32_t img) const {
  const Units& u = *u_[node];
  const uint32_t i = static_cast<uint32_t>(img);
  return i < m_.ring_entries ? u.dg_images + i * FramePool::kBufBytes : u.dg_large + (i - m_.ring_entries) * kLargeImageBytes;
}

void Mbp2System::image_done(uint32_t node, int32_t img, uint32_t inc) {
  if (!n_[node]->up || n_[node]->incarnation != inc) return;  // (EM was lost with the power, and its images)
  Units& u = *u_[node];
  uint32_t& h = u.dg_held[static_cast<uint32_t>(img)];
  if (h == 0) internal_error("node " + std::to_string(node) + ": a datagram image released twice");
  if (--h == 0 && u.pge_blocked) {
    u.pge_blocked = false;
    pge_next(node);
  }
}

void Mbp2System::host_upcall(uint32_t node, uint64_t msg, std::function<void()> k) {
  // The PME posts the 64-bit message and interrupts the host through the ICU; the host's
  // interrupt routine reads it (two programmed words) and dispatches the invocation.
  Units& u = *u_[node];
  u.pme->run("icu", Pme::kNormal, false, u.pme->instr_ps(m_.icu_instr), [this, node, msg, k = std::move(k)]() mutable {
    Units& u = *u_[node];
    u.icu->to_host(msg);
    const uint64_t now = cal_.now_ps();
    const uint64_t read = u.bus->pio(u.bus->pio(now));
    interrupt(node, cycles_ps(c_.int_entry_cycles) + (read - now), [this, node, msg, k = std::move(k)] {
      uint64_t m = 0;
      if (!u_[node]->icu->take_for_host(&m) || m != msg) internal_error("an ICU message to the host out of order");
      k();
    });
  });
}

void Mbp2System::page_unmapped(uint32_t node, uint32_t ptask, uint32_t laddr) {
  // The PME drops the translation before the frame can be reused.
  os_to_pme(node, kIcuInvalidatePage | static_cast<uint64_t>(ptask & 0xffffff) << 32 | (laddr / c_.page_bytes));
}

void Mbp2System::task_left(uint32_t node, uint32_t ptask) {
  // The context ID may name another task later (a task created, or migrated back, with this
  // Ptask): the PME drops every entry tagged with it, or that task's data would go to the
  // frames this one had.
  // The OS waits for the ADMA's writes into the task before it moves its pages (the model
  // makes them at once; the ADMA's later copies write the same bytes again).
  const mbcf::WriteBuffer& wb = u_[node]->adma_writes;
  for (size_t i = 0; i < wb.size(); ++i)
    if (wb.at(i).ptask == ptask) u_[node]->bus->write(wb.at(i).pa, 0, wb.at(i).bytes.data(), static_cast<uint32_t>(wb.at(i).bytes.size()));
  u_[node]->bus->take_delay_ps();  // made at once, as said
  if (mutant::on(mutant::Id::TlbKeepsLeftContext)) return;
  os_to_pme(node, kIcuFlushContext | static_cast<uint64_t>(ptask & 0xffffff) << 32);
}

const mbcf::FrameMap* Mbp2System::nic_frames(uint32_t node) const { return &u_[node]->frames; }

// The OCU-R compares each sequenced MBCF frame's END_P with its peer's register as the LDMA
// writes the frame; the receive routine takes the verdict instead of comparing END_P with the
// count itself (mbp2.fw_order_instr of its time). The count the routine keeps for
// acknowledgements must say the same: a disagreement is a model error.
mbcf::EtherSystem::Order Mbp2System::order_of(uint32_t node, uint32_t src, uint8_t end_p, uint64_t* saved) {
  Units& u = *u_[node];
  const Order fw = firmware_order(node, src, end_p);
  *saved = 0;
  if (!u.ocu || u.mbcf_ocu.at(src) < 0) return fw;
  const uint32_t reg = static_cast<uint32_t>(u.mbcf_ocu[src]);
  const Ocu::Order o = u.ocu->check_end_p(reg, end_p);
  const Order r = o == Ocu::Order::InOrder ? Order::InOrder : o == Ocu::Order::Duplicate ? Order::Duplicate : Order::Gap;
  if (r != fw)
    internal_error("node " + std::to_string(node) + "'s OCU register for node " + std::to_string(src) + " expects END_P " +
                   std::to_string(u.ocu->expected(reg) & 0xff) + ", the receive routine's count says otherwise");
  *saved = u.pme->instr_ps(m_.fw_order_instr);
  return r;
}

void Mbp2System::arrived_set(uint32_t node, uint32_t src, uint8_t arrived) {
  Units& u = *u_[node];
  if (u.ocu && src < u.mbcf_ocu.size() && u.mbcf_ocu[src] >= 0)
    u.ocu->advance(static_cast<uint32_t>(u.mbcf_ocu[src]), static_cast<uint8_t>(arrived + 1));
}

void Mbp2System::os_to_pme(uint32_t node, uint64_t msg) {
  Units& u = *u_[node];
  u.icu->to_pme(msg);
  const uint64_t now = cal_.now_ps();
  const uint64_t wrote = u.bus->pio(u.bus->pio(now));
  n_[node]->kernel_ps += wrote - now;
  cal_.at(wrote, [this, node] {
    Units& u = *u_[node];
    u.pme->run("icu", Pme::kHigh, true, u.pme->instr_ps(m_.icu_instr), [this, node] {
      Units& u = *u_[node];
      uint64_t m = 0;
      while (u.icu->take_for_pme(&m)) {
        const uint32_t ctx = static_cast<uint32_t>(m >> 32) & 0xffffff;
        if ((m >> 56) == (kIcuInvalidatePage >> 56)) u.tlb->invalidate(ctx, m & 0xffffffffu);
        else if ((m >> 56) == (kIcuFlushContext >> 56)) u.tlb->flush_context(ctx);
        else icu_bad_->inc();
      }
    });
  });
}

void Mbp2System::protocol_work(uint32_t node, uint64_t dur, std::function<void()> fn) {
  Units& u = *u_[node];
  const bool intr = u.interrupt_next;
  u.interrupt_next = false;
  const char* handler = intr ? "receive" : "protocol";
  // A receive is raised by the LDMA's receive ring (EtherSystem's routine then loops over the
  // frames it holds).
  const int source = intr ? Pme::kLdmaRxRing : Pme::kNoSource;
  if (u.adma_posts.empty()) return u.pme->run_from(source, handler, Pme::kNormal, dur, std::move(fn));
  // The routine posts its ADMA descriptors when its work is done, and answers only once the
  // ADMA has done them (a status reply must follow the data into the host's memory).
  const uint32_t inc = n_[node]->incarnation;
  u.pme->run_from(source, handler, Pme::kNormal, dur, std::move(fn),
             [this, node, inc, posts = std::move(u.adma_posts), then = std::move(u.adma_then)](std::function<void()> resume) {
               Units& u = *u_[node];
               auto lost = [this, node, inc] { return !n_[node]->up || n_[node]->incarnation != inc; };
               if (lost()) return resume();  // the power went: the staged data with it
               uint32_t last = 0;
               for (const auto& post : posts) last = post();
               if (!then) return u.adma_ring->when_done(last, std::move(resume));
               u.adma_ring->when_done(last, [lost, then, resume] { lost() ? resume() : then(resume); });
             });
  u.adma_posts.clear();
  u.adma_then = nullptr;
}

void Mbp2System::tx_done(uint32_t node) {
  Units& u = *u_[node];
  mac_freed(node);
  u.pme->run_from(Pme::kLdmaTxRing, "tx_done", Pme::kLow, u.pme->instr_ps(m_.tx_done_instr), [] {});
}

uint64_t Mbp2System::rx_entry_ps(uint32_t node) {
  Units& u = *u_[node];
  // The LDMA's completion interrupts the PME; when the frame was sealed, that interrupt (and
  // the CAU's) came before the decryption, and the receive routine follows it directly.
  u.interrupt_next = !m_.crypto.enabled();
  return u.pme->instr_ps(m_.rx_desc_instr);
}

// The receive routine's data movement (8.3.3): what the commands write, the PME stages in EM
// and the ADMA writes into host memory, one descriptor per run of bytes in a frame, through the
// translation the PME made (a TLB miss interrupts it for the refill); what a READ returns, the
// ADMA reads from host memory into EM, in the same order among the writes as the command ran,
// and the reply takes it from there. The routine posts the descriptors when its own work (the
// refills among it) is done, and waits for the ADMA before it answers (a status reply must
// follow the data into the host's memory): `protocol_work`. An atomic (it travels alone, 4.4)
// takes two steps: the ADMA reads its operands (COMP_SWAP's reference word, the target) into
// EM; then the PME computes from what was read, with the shared semantics (atomic_effect), and
// the ADMA writes the result (atomic_step). What the semantics computed when the PME checked
// the command is not written: a host store in between is in what the ADMA read. The ADMA's
// descriptors name host physical addresses.
uint32_t Mbp2System::adma_stage(uint32_t node) const {
  const Units& u = *u_[node];
  return u.adma_stage + u.adma->next_slot() * FramePool::kBufBytes;
}

uint64_t Mbp2System::adma_read(uint32_t node, uint32_t ptask, uint32_t laddr, uint32_t n, uint32_t h, uint64_t* first_pa) {
  Units& u = *u_[node];
  Units::AdmaRead& ar = u.adma_reads[h];
  const uint32_t pb = c_.page_bytes;
  uint64_t refill = 0;
  for (uint32_t off = 0; off < n;) {
    const uint32_t la = laddr + off;
    const uint32_t k = std::min(n - off, pb - la % pb);
    uint64_t pa = 0;
    refill += translate(node, ptask, la, k, &pa);
    if (!off && first_pa) *first_pa = pa;
    ++ar.pending;
    u.adma_posts.push_back([this, node, h, pa, k] {
      Units& u = *u_[node];
      return u.adma_ring->post(cal_.now_ps(), pa, adma_stage(node), k, [&u, pa, k](uint64_t s) { return host_transfer(*u.bus, *u.em, s, {{pa, k}}, k); },
                          [this, node, h](const DmaEngine::Desc& d) {
                            Units& u = *u_[node];
                            auto it = u.adma_reads.find(h);
                            if (it == u.adma_reads.end()) return;
                            --it->second.pending;
                            if (d.error()) it->second.failed = true;
                            const size_t o = it->second.bytes.size();
                            it->second.bytes.resize(o + d.bytes);
                            u.em->read_into(d.dst, it->second.bytes.data() + o, d.bytes);
                          },
                          DmaEngine::kNoContext, ~0u, DmaEngine::Move::Back);
    });
    off += k;
  }
  return refill;
}

uint64_t Mbp2System::data_move_ps(uint32_t node, const Packet& p, mbcf::ExecResult& r) {
  Units& u = *u_[node];
  mbcf::WriteBuffer& wb = u.adma_writes;
  const mbcf::Command *rd = nullptr, *atomic = nullptr;
  if (r.outcome == mbcf::ExecResult::Outcome::Done)
    for (const mbcf::Command& c : p.cmds) {
      if (c.cmd == Cmd::Read && c.length && !rd) rd = &c;
      if (mbcf::is_atomic(c.cmd)) atomic = &c;
    }
  if (!rd && !atomic && !wb.untaken()) return 0;
  auto handle = [&u] { return ++u.next_read ? u.next_read : ++u.next_read; };
  if (atomic) {
    if (p.cmds.size() != 1 || r.replies.size() != 1) internal_error("node " + std::to_string(node) + ": an atomic command did not travel alone");
    wb.discard_untaken();  // (what the semantics computed: the PME computes from what the ADMA reads)
    const uint32_t h = handle();
    r.nic_reply = h;
    Units::AdmaRead& ar = u.adma_reads[h];
    ar.atomic = *atomic;
    ar.ptask = p.dst_ptask;
    ar.exec_old = r.replies[0].data;
    ar.exec_status = static_cast<mbcf::Status>(r.replies[0].status);
    ++u.atomics;
    uint64_t refill = 0;
    if (atomic->cmd == Cmd::CompSwap) refill += adma_read(node, p.dst_ptask, atomic->flag_laddr, 4, h, nullptr);
    uint64_t pa = 0;
    refill += adma_read(node, p.dst_ptask, atomic->laddr, atomic->length, h, &pa);  // (one page: the semantics checked)
    u.adma_reads[h].pa = pa;
    u.adma_then = [this, node, h](std::function<void()> resume) { atomic_step(node, h, std::move(resume)); };
    return refill;
  }
  // The routine's own time: the TLB refills its translations take.
  uint64_t refill = 0;
  auto read = [&] {
    const uint32_t h = handle();
    r.nic_reply = h;
    refill += adma_read(node, p.dst_ptask, rd->laddr, rd->length, h, nullptr);
  };
  for (size_t i = 0; i < wb.untaken(); ++i) {
    if (rd && i == r.read_after_writes) read();
    const mbcf::WriteBuffer::Write& w = wb.untaken_write(i);
    const uint32_t n = static_cast<uint32_t>(w.bytes.size());
    refill += translate(node, w.ptask, w.laddr, n, nullptr);
    u.adma_posts.push_back([this, node, pa = w.pa, n, bytes = w.bytes] {
      Units& u = *u_[node];
      u.adma_numbers.push_back(u.adma->next_number());
      return u.adma_ring->post(cal_.now_ps(), adma_stage(node), pa, n, [&u, pa, n](uint64_t s) { return host_transfer(*u.bus, *u.em, s, {{pa, n}}, n); },
                          [this, node](const DmaEngine::Desc& d) { adma_wrote(node, d); }, DmaEngine::kNoContext, ~0u,
                          DmaEngine::Move::Forward, bytes);
    });
  }
  if (rd && r.read_after_writes >= wb.untaken()) read();
  wb.take();
  return refill;
}

void Mbp2System::atomic_step(uint32_t node, uint32_t h, std::function<void()> resume) {
  Units& u = *u_[node];
  auto it = u.adma_reads.find(h);
  if (it == u.adma_reads.end()) return resume();  // (lost with the power)
  Units::AdmaRead& ar = it->second;
  const mbcf::Command& c = *ar.atomic;
  const uint32_t ref_bytes = c.cmd == Cmd::CompSwap ? 4 : 0;
  if (ar.pending || ar.failed || ar.bytes.size() != ref_bytes + c.length)
    internal_error("node " + std::to_string(node) + ": the ADMA did not read an atomic's operands");
  const uint32_t ref = ref_bytes ? static_cast<uint32_t>(mbcf::load_le(ar.bytes.data(), 4)) : 0;
  ar.bytes.erase(ar.bytes.begin(), ar.bytes.begin() + ref_bytes);
  if (mutant::on(mutant::Id::AtomicFromExecute)) ar.bytes = ar.exec_old;
  std::vector<uint8_t> mem = ar.bytes;
  ar.status = mbcf::atomic_effect(c, mutant::on(mutant::Id::AtomicFromExecute) && ar.exec_status == mbcf::Status::Succeeded ? c.flag_value : ref,
                                  mem.data());
  ar.computed = true;
  if (ar.bytes != ar.exec_old || ar.status != ar.exec_status) atomic_changed_->inc();
  --u.atomics;
  if (ar.status != mbcf::Status::Succeeded) {
    adma_drained(node);
    return resume();
  }
  mbcf::WriteBuffer& wb = u.adma_writes;
  wb.add(ar.pa, ar.ptask, c.laddr, mem.data(), c.length, true);
  wb.take();
  u.adma_numbers.push_back(u.adma->next_number());
  const uint64_t pa = ar.pa;
  const uint32_t n = c.length;
  const uint32_t num = u.adma_ring->post(cal_.now_ps(), adma_stage(node), pa, n, [&u, pa, n](uint64_t s) { return host_transfer(*u.bus, *u.em, s, {{pa, n}}, n); },
                                    [this, node](const DmaEngine::Desc& d) { adma_wrote(node, d); }, DmaEngine::kNoContext, ~0u,
                                    DmaEngine::Move::Forward, mem);
  u.adma_ring->when_done(num, std::move(resume));
}

// The reply leaves with what the ADMA read into EM (the routine waited for it), and an atomic's
// with the status the PME computed from it.
void Mbp2System::nic_reply_data(uint32_t node, uint32_t handle, std::vector<mbcf::Command>& replies) {
  Units& u = *u_[node];
  auto it = u.adma_reads.find(handle);
  if (it == u.adma_reads.end()) return;  // (lost with the power; nothing is sent then)
  Units::AdmaRead ar = std::move(it->second);
  u.adma_reads.erase(it);
  if (ar.pending || ar.failed || (ar.atomic && !ar.computed))
    internal_error("node " + std::to_string(node) + ": a reply left without the data the ADMA was to read");
  for (mbcf::Command& c : replies)
    if (c.cmd == Cmd::Reply && !c.data.empty()) {
      if (c.data.size() != ar.bytes.size()) internal_error("node " + std::to_string(node) + ": the ADMA read a reply's data in another length");
      c.data = std::move(ar.bytes);
      if (ar.atomic) c.status = static_cast<uint32_t>(ar.status);
      return;
    }
  internal_error("node " + std::to_string(node) + ": a READ's reply carries no data");
}

void Mbp2System::adma_wrote(uint32_t node, const DmaEngine::Desc& d) {
  Units& u = *u_[node];
  // Writes whose descriptors were lost (overwritten in the ring) never reached host memory.
  while (!u.adma_numbers.empty()) {
    const uint32_t num = u.adma_numbers.front();
    u.adma_numbers.pop_front();
    u.adma_writes.retire();
    if (num == d.number()) break;
  }
  adma_drained(node);
}

void Mbp2System::adma_drained(uint32_t node) {
  Units& u = *u_[node];
  if (u.adma_writes.size() || u.atomics) return;
  std::deque<std::function<void()>> w;
  w.swap(u.quiesce_waiters);
  for (auto& f : w) f();
  if (u.poll_on_drain) {
    u.poll_on_drain = false;
    EtherSystem::run_pollers(node, cal_.now_ps());
  }
}

// The kernel's light-weight calls (FIFO read, signal-flag reset) change words of structures the
// PME's commands change too (a FIFO's head and tail, a signal's running count). A command's
// writes reach host memory only when the ADMA makes them, so the kernel reads the NIC's count
// of writes still to make (a KLI word) and waits while there are any; otherwise a reset of the
// running count could come between a command that found it set and the ADMA's write of the
// entry it stored, and that entry would never invoke its program.
void Mbp2System::nic_quiesce(uint32_t node, std::function<void()> fn) {
  Units& u = *u_[node];
  if (!u.adma_writes.size() && !u.atomics) return fn();
  u.quiesce_waiters.push_back(std::move(fn));
}

void Mbp2System::run_pollers(uint32_t node, uint64_t at) {
  // A program polling for what the ADMA has still to write looks again once it is written.
  if (u_[node]->adma_writes.size() || u_[node]->atomics) u_[node]->poll_on_drain = true;
  EtherSystem::run_pollers(node, at);
}

nlohmann::ordered_json Mbp2System::nic_summary() const {
  const double t = static_cast<double>(cal_.now_ps());
  auto frac = [t](uint64_t busy) { return t > 0 ? std::round(busy / t * 1e4) / 1e4 : 0.0; };
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (uint32_t n = 0; n < nodes(); ++n) {
    const Units& u = *u_[n];
    nlohmann::ordered_json j;
    j["node"] = n;
    j["pme_interrupts_per_s"] = t > 0 ? std::round(u.pme->interrupts() / (t / 1e12)) : 0.0;
    nlohmann::ordered_json b;
    b["pme"] = frac(u.pme->busy_ps());
    b["biu"] = frac(u.bus->busy_ps());
    b["pge"] = frac(u.pge->busy_ps());
    b["adma"] = frac(u.adma->busy_ps());
    b["ldma_tx"] = frac(u.ldma_tx->busy_ps());
    b["ldma_rx"] = frac(u.ldma_rx->busy_ps());
    if (u.cau) b["cau"] = frac(u.cau->busy_ps());
    uint64_t em = 0;
    for (int r = 0; r < kRoutes; ++r) em += u.em->busy_ps(static_cast<Route>(r));
    b["em"] = frac(em);
    j["utilisation"] = b;
    if (m_.crypto.enabled()) {
      const CryptoStats& x = u.cs;
      nlohmann::ordered_json c;
      c["frames_sealed"] = x.sealed->value;
      c["frames_opened"] = x.opened->value;
      c["bytes_encrypted"] = x.enc_bytes->value;
      c["bytes_decrypted"] = x.dec_bytes->value;
      c["rejected"] = x.rej_auth->value + x.rej_format->value + x.rej_plain->value + x.rej_no_sa->value;
      if (x.kx_done) c["key_exchange_us"] = x.kx_done->value ? std::round(x.kx_ps->value / x.kx_done->value / 1e3) / 1e3 : 0.0;
      j["crypto"] = c;
    }
    out.push_back(j);
  }
  return out;
}

// ------------------------------------------------------------------ crypto (8.3.3, 8.3.6)

namespace {
constexpr uint8_t kKxInit = 1, kKxResp = 2, kKxConfirm = 3;
constexpr uint32_t kKxBytes = 18 + Dh::kBytes;  // header, type, 3 reserved, public value
}  // namespace

void Mbp2System::crypt_work(uint32_t node, const char* what, Cau::Op op, FramePool& pool, Buf b, uint32_t sealed, uint32_t peer, uint64_t id,
                            uint32_t cb, uint32_t hb, CryptDone k) {
  Units& u = *u_[node];
  const CryptoConfig& cc = m_.crypto;
  if (u.cau) {
    // The PME writes a CAU descriptor naming the keys' slot; the CAU's DMA reads the frame
    // from EM and writes the result back; its completion interrupts the PME.
    u.pme->run(what, Pme::kNormal, false, u.pme->instr_ps(cc.cau_desc_instr), [this, node, op, &pool, b, sealed, peer, id, cb, hb, k = std::move(k)]() mutable {
      Units& u = *u_[node];
      if (!pool.live(b)) return;  // EM lost its contents with the power
      const PeerSec& s = u.sec[peer];
      // Slots change hands only by loads posted after the keys they held were dropped.
      if (!s.sa_of(id)) return k(Cau::Error::BadKey, b);
      const uint32_t n = u.cau->run(cal_.now_ps(), op, s.slot_of(id), pool.offset(b), b.len, op == Cau::Op::Seal ? sealed : b.len, cb, hb);
      u.cau_ring->expect(n, [this, node, &pool, b, k = std::move(k)](const DmaEngine::Desc& d) mutable {
        Units& u = *u_[node];
        if (!pool.live(b)) return;
        const Cau::Error e = Cau::verdict(d);
        if (e == Cau::Error::None) b.len = d.bytes;
        u.pme->run_from(Pme::kCauRing, "cau_done", Pme::kNormal, u.pme->instr_ps(m_.tx_done_instr), [e, b, k = std::move(k)]() mutable { k(e, b); });
      });
    });
    return;
  }
  // MBP2P (8.4): no crypto circuit; the PME's firmware reads the frame from EM, transforms it
  // and writes it back (the cipher pass), and reads it again for the hash.
  const double instr = cc.fw_setup_instr + cb * cc.fw_des_instr_per_block + hb * cc.fw_hash_instr_per_block;
  const double words = (sealed + 3) / 4 * ((cb ? 2.0 : 0.0) + (hb ? 1.0 : 0.0));
  u.em->access(Route::Pme, cal_.now_ps(), static_cast<uint32_t>(words * 4));
  u.pme->run(what, Pme::kNormal, false, u.pme->kernel_ps(instr, words), [this, node, op, &pool, b, peer, id, k = std::move(k)]() mutable {
    Units& u = *u_[node];
    if (!pool.live(b)) return;
    const PeerSec& s = u.sec[peer];
    const SecurityAssociation* sa = s.sa_of(id);
    if (!sa) return k(Cau::Error::BadKey, b);
    std::vector<uint8_t> f = pool.get(b);
    const Cau::Error e = Cau::apply(*sa, op, f);
    if (e == Cau::Error::None) pool.put(b, f);
    k(e, b);
  });
}

void Mbp2System::install_keys(uint32_t node, uint32_t peer, bool boot) {
  Units& u = *u_[node];
  PeerSec& s = u.sec[peer];
  s.sa_id = ++sa_serial_;
  s.slot = 2 * peer + (s.installs++ & 1);
  if (!u.cau) return;  // the firmware keeps them in the PME's memory
  if (boot) {
    const std::vector<uint8_t> block = s.sa->key_block();
    u.em->write(u.cau->key_slot_offset(s.slot), block.data(), static_cast<uint32_t>(block.size()));
  } else {
    u.cau->load_key(cal_.now_ps(), s.slot, s.sa->key_block());
  }
}

void Mbp2System::nic_transmit(uint32_t node, uint32_t dst, std::vector<uint8_t>&& frame, InMac in_mac) {
  if (!m_.crypto.enabled()) return to_buffer(node, dst, std::move(frame), std::move(in_mac), false);
  seal_and_send(node, dst, std::move(frame), std::move(in_mac));
}

SecurityAssociation* Mbp2System::out_sa(PeerSec& s, uint32_t** seq) const {
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

void Mbp2System::seal_and_send(uint32_t node, uint32_t dst, std::vector<uint8_t>&& frame, InMac in_mac) {
  Units& u = *u_[node];
  PeerSec& s = u.sec[dst];
  uint32_t* seq = nullptr;
  SecurityAssociation* sa = out_sa(s, &seq);
  if (!sa) {
    // No keys the peer is known to hold: the frame waits in EM for the exchange (started now
    // if none is under way) or for the peer to show it has the new keys.
    s.waiting.emplace_back(std::move(frame), std::move(in_mac));
    if (!s.sa) start_key_exchange(node, dst);
    return;
  }
  if (*seq >= m_.crypto.rekey_frames) {
    if (m_.crypto.keys == CryptoConfig::Keys::Static) {  // manual keys cannot be renewed
      u.cs.seq_exhausted->inc();
      fail("node " + std::to_string(node) + " has sealed crypto.rekey_frames = " + std::to_string(m_.crypto.rekey_frames) + " frames for node " +
           std::to_string(dst) + " under static keys, which cannot be renewed (RFC 4303 3.3.3): it sends that peer nothing more (crypto.keys = dh renews them)");
      return;
    }
    // A new exchange (a new private value); this frame and the next wait for its keys.
    u.cs.rekeys_seq->inc();
    drop_keys(node, dst, true);
    PeerSec& s2 = u.sec[dst];
    s2.renewing = true;
    s2.waiting.emplace_back(std::move(frame), std::move(in_mac));
    start_key_exchange(node, dst);
    return;
  }
  to_buffer(node, dst, std::move(frame), std::move(in_mac), true);
}

// The image the PGE fetched and the header the PME wrote make the frame in a transmit buffer.
// A frame that finds none free waits, behind any frame already waiting, for the LDMA to free one.
void Mbp2System::to_buffer(uint32_t node, uint32_t dst, std::vector<uint8_t>&& frame, InMac in_mac, bool seal) {
  Units& u = *u_[node];
  Buf b;
  if (!u.tx_wait.empty() || !u.txb->alloc(&b)) {
    u.tx_wait.push_back(TxWait{dst, std::move(frame), std::move(in_mac), seal});
    return;
  }
  u.txb->put(b, frame);
  from_buffer(node, dst, b, std::move(in_mac), seal);
}

void Mbp2System::tx_buffers_freed(uint32_t node) {
  Units& u = *u_[node];
  while (!u.tx_wait.empty() && u.txb->in_use() < u.txb->count()) {
    TxWait w = std::move(u.tx_wait.front());
    u.tx_wait.pop_front();
    Buf b;
    u.txb->alloc(&b);
    u.txb->put(b, w.frame);
    from_buffer(node, w.dst, b, std::move(w.in_mac), w.seal);
  }
}

void Mbp2System::from_buffer(uint32_t node, uint32_t dst, Buf b, InMac in_mac, bool seal) {
  if (!seal) return ldma_send(node, b, std::move(in_mac));
  Units& u = *u_[node];
  PeerSec& s = u.sec[dst];
  uint32_t* seqp = nullptr;
  SecurityAssociation* sa = out_sa(s, &seqp);
  if (!sa || *seqp >= m_.crypto.rekey_frames) {
    // The keys went (the peer restarted), or ran out, while the frame waited for its buffer.
    std::vector<uint8_t> f = u.txb->get(b);
    u.txb->release(b);
    nic_transmit(node, dst, std::move(f), std::move(in_mac));
    return tx_buffers_freed(node);
  }
  // The PME writes the header in front of the frame in its buffer (SPI, sequence number, IV);
  // the CAU (or the firmware) reads it from there, seals it and writes it back.
  uint8_t iv[8];
  const uint64_t r = iv_rng_.next();
  for (int i = 0; i < 8; ++i) iv[i] = static_cast<uint8_t>(r >> (8 * i));
  const std::vector<uint8_t> frame = u.txb->get(b);
  const uint32_t plain = static_cast<uint32_t>(frame.size() - 14);
  const uint64_t id = seqp == &s.tx_seq ? s.sa_id : s.old_id;
  u.txb->put(b, prepare_seal(m_.crypto.cipher, frame, node, ++*seqp, iv));
  const uint32_t sealed = sealed_size(m_.crypto.cipher, m_.crypto.auth, plain + 14);
  const uint32_t body = sealed - 14 - (m_.crypto.auth == Auth::None ? 0 : 12);  // what the hash covers
  const uint32_t cb = cipher_blocks(m_.crypto.cipher, plain), hb = hash_blocks(m_.crypto.auth, body);
  crypt_work(node, "encrypt", Cau::Op::Seal, *u.txb, b, sealed, dst, id, cb, hb, [this, node, plain, body, cb, hb, k = std::move(in_mac)](Cau::Error e, Buf b) mutable {
    Units& u = *u_[node];
    if (e != Cau::Error::None) {
      u.cs.seal_failed->inc();
      u.txb->release(b);
      k({});
      return tx_buffers_freed(node);
    }
    u.cs.sealed->inc();
    if (cb) u.cs.enc_bytes->inc(plain);
    if (hb) u.cs.auth_bytes->inc(body);
    ldma_send(node, b, std::move(k));
  });
}

// The LDMA reads the frame from its buffer into the MAC's transmit FIFO once the FIFO has room
// for it (frames wait in their buffers, in order, until then); at its completion the PME's
// routine finds the descriptor done, frees the buffer, and the MAC sends what the FIFO holds
// under the descriptor's destination. The frame holds its room until its last bit has left the
// wire (`tx_done`).
void Mbp2System::ldma_send(uint32_t node, Buf b, InMac in_mac) {
  Units& u = *u_[node];
  if (!u.mac_wait.empty() || !mac_room(u, b.len)) {
    u.mac_wait.emplace_back(b, std::move(in_mac));
    return;
  }
  ldma_start(node, b, std::move(in_mac));
}

bool Mbp2System::mac_room(const Units& u, uint32_t len) const { return u.mac_tx_lens.empty() || u.mac_tx_bytes + len <= m_.mac_tx_fifo_bytes; }

void Mbp2System::mac_freed(uint32_t node, uint32_t unsent) {
  Units& u = *u_[node];
  if (unsent) {  // its room was kept from the LDMA's start: any entry of its length is its
    auto it = std::find(u.mac_tx_lens.rbegin(), u.mac_tx_lens.rend(), unsent);
    if (it != u.mac_tx_lens.rend()) {
      u.mac_tx_bytes -= unsent;
      u.mac_tx_lens.erase(std::next(it).base());
    }
  } else if (!u.mac_tx_lens.empty()) {  // frames leave the FIFO in the order they went in
    u.mac_tx_bytes -= u.mac_tx_lens.front();
    u.mac_tx_lens.pop_front();
  }
  while (!u.mac_wait.empty() && mac_room(u, u.mac_wait.front().first.len)) {
    auto [b, k] = std::move(u.mac_wait.front());
    u.mac_wait.pop_front();
    ldma_start(node, b, std::move(k));
  }
}

void Mbp2System::ldma_start(uint32_t node, Buf b, InMac in_mac) {
  Units& u = *u_[node];
  const uint32_t len = b.len;
  u.mac_tx_bytes += len;
  u.mac_tx_lens.push_back(len);
  const uint32_t at = u.mac_tx.next();
  u.ldma_tx_ring->post(cal_.now_ps(), u.txb->offset(b), at, len, [&u, len](uint64_t s) { return Finish(s, u.em->access(Route::Mac, s, len)); },
                  [this, node, b, k = std::move(in_mac)](const DmaEngine::Desc& d) mutable {
                    Units& u = *u_[node];
                    std::vector<uint8_t> f;
                    const bool sent = !d.error() && u.mac_tx.take(d.dst, &f);
                    if (u.txb->live(b)) u.txb->release(b);
                    if (!sent) mac_freed(node, b.len);  // nothing went into the FIFO
                    k(sent ? std::move(f) : std::vector<uint8_t>{});  // (empty: not sent)
                    tx_buffers_freed(node);
                  }, DmaEngine::kNoContext, ~0u, DmaEngine::Move::Forward);
}

// The MAC holds a received frame in its FIFO; the LDMA writes it into a receive buffer, and the
// frame's length there is the one its descriptor gives back.
bool Mbp2System::ldma_receive(uint32_t node, std::vector<uint8_t>&& frame, std::function<void(Buf)> k) {
  Units& u = *u_[node];
  Buf b;
  if (!u.rxb->alloc(&b)) return false;  // every receive buffer is full: the frame is lost
  const uint32_t len = static_cast<uint32_t>(frame.size());
  const uint32_t from = u.mac_rx.put(std::move(frame));
  u.ldma_rx_ring->post(cal_.now_ps(), from, u.rxb->offset(b), len, [&u, len](uint64_t s) { return Finish(s, u.em->access(Route::Mac, s, len)); },
                  [this, node, b, k = std::move(k)](const DmaEngine::Desc& d) mutable {
                    Units& u = *u_[node];
                    if (d.error()) {  // the descriptor named no frame the FIFO holds: none arrived
                      u.rxb->release(b);
                      return k(Buf{});
                    }
                    b.len = d.bytes;
                    k(b);
                  }, DmaEngine::kNoContext, ~0u, DmaEngine::Move::Forward);
  return true;
}

void Mbp2System::to_routine(uint32_t node, Buf b, const RxReady& ready) {
  Units& u = *u_[node];
  if (!u.rxb->live(b)) return;
  u.rx_queued[b.serial] = b;
  Rx r{{}, b.serial};
  ready(&r);
}

std::vector<uint8_t> Mbp2System::rx_take(uint32_t node, Rx& r) {
  if (r.tag == 0) return std::move(r.bytes);
  Units& u = *u_[node];
  auto it = u.rx_queued.find(r.tag);
  if (it == u.rx_queued.end()) internal_error("the receive routine took a frame no receive buffer holds");
  const Buf b = it->second;
  u.rx_queued.erase(it);
  // The routine reads the frame where the LDMA (or the CAU) left it; the buffer it worked on
  // before is re-armed.
  if (u.rx_current.valid()) u.rxb->release(u.rx_current);
  u.rx_current = b;
  return u.rxb->get(b);
}

void Mbp2System::rx_idle(uint32_t node) {
  Units& u = *u_[node];
  if (u.rx_current.valid()) u.rxb->release(u.rx_current);
  u.rx_current = Buf{};
}

void Mbp2System::nic_receive(uint32_t node, std::vector<uint8_t>&& frame, RxReady ready) {
  if (frame.size() > mbcf::kMaxPacketBytes) {  // an Ethernet giant: the MAC takes no buffer for it
    u_[node]->rx_oversized->inc();
    ready(nullptr);
    return;
  }
  const uint16_t type = ether_type(frame);
  const bool crypto = m_.crypto.enabled();
  const bool kx = type == kEtherTypeKeyExchange && m_.crypto.keys == CryptoConfig::Keys::Dh && crypto;
  if (crypto && !kx && type != kEtherTypeSealed) {  // a NIC that encrypts takes nothing in the clear
    u_[node]->cs.rej_plain->inc();
    ready(nullptr);
    return;
  }
  // Key exchanges and (in the clear) UDP/TCP are the PME's: they never reach the MBCF receive
  // routine.
  const bool ip = !crypto && is_ip(frame);
  if (kx || ip) ready(nullptr);
  const bool frag = ip && is_fragment(frame);
  const bool taken = ldma_receive(node, std::move(frame), [this, node, kx, ip, crypto, ready](Buf b) mutable {
    if (!b.valid()) {
      if (!kx && !ip) ready(nullptr);
      return;
    }
    if (kx) return on_kx(node, b);
    if (ip) return ip_steer(node, b, true);
    if (!crypto) return to_routine(node, b, ready);
    // The LDMA's completion interrupts the PME, which reads the header and starts the CAU.
    Units& u = *u_[node];
    u.pme->run_from(Pme::kLdmaRxRing, "rx_check", Pme::kNormal, u.pme->instr_ps(m_.rx_desc_instr),
               [this, node, b, k = std::move(ready)]() mutable { open_received(node, b, std::move(k)); });
  });
  if (!taken && ip) {  // UDP/TCP has no Go-back-N under it: the datagram is gone
    // (A fragment's datagram is counted when its reassembly gives up.)
    (frag ? u_[node]->ip.rx_fragments_dropped : u_[node]->ip.rx_no_buffer)->inc();
    run_pollers(node, cal_.now_ps());  // (a harness waiting on the drop counters sees it)
  }
  if (!taken && !kx && !ip) {
    if (crypto) {  // a sealed frame: it may have carried a datagram, which nothing resends
      u_[node]->cs.rx_no_buffer->inc();
      run_pollers(node, cal_.now_ps());
    }
    ready(nullptr);
  }
}

void Mbp2System::open_received(uint32_t node, Buf b, RxReady ready) {
  Units& u = *u_[node];
  if (!u.rxb->live(b)) return;
  const std::vector<uint8_t> f = u.rxb->get(b);
  const uint32_t spi = f.size() >= 18 ? load_be32(f.data() + 14) : ~0u;
  if (spi >= nodes() || spi == node || !(u.sec[spi].sa || u.sec[spi].old_sa)) {
    u.cs.rej_no_sa->inc();
    u.rxb->release(b);
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
  const PeerSec& s = u.sec[spi];
  try_open(node, spi, b, s.sa ? s.sa_id : s.old_id, seq, cb, hb, body, std::move(ready));
}

void Mbp2System::try_open(uint32_t node, uint32_t spi, Buf b, uint64_t id, uint32_t seq, uint32_t cb, uint32_t hb, uint32_t body, RxReady ready) {
  Units& u = *u_[node];
  crypt_work(node, "decrypt", Cau::Op::Open, *u.rxb, b, b.len, spi, id, cb, hb, [this, node, spi, id, seq, cb, hb, body, k = std::move(ready)](Cau::Error e, Buf b) mutable {
    Units& u = *u_[node];
    if (hb) u.cs.auth_bytes->inc(body);
    auto reject = [&](Counter* why) {
      why->inc();
      u.rxb->release(b);
      k(nullptr);
    };
    PeerSec& s = u.sec[spi];
    const bool was_new = s.is_new(id), was_old = s.is_old(id);
    if (!was_new && !was_old) return reject(u.cs.rej_no_sa);  // the keys went while the CAU ran
    if (e != Cau::Error::None && e != Cau::Error::BadKey && was_new && s.old_sa) return try_open(node, spi, b, s.old_id, seq, cb, hb, body, std::move(k));
    // Sealed under keys this end is still deriving (the peer derived first): the frame waits
    // in its receive buffer for them rather than being thrown away, while kRxReserve receive
    // buffers stay free for the frames that bring the keys. Only an authenticated frame can be
    // told apart from a forged one, so only those.
    if (e == Cau::Error::BadIcv && was_old && !s.sa && s.started && m_.crypto.auth != Auth::None && s.held_rx.size() < kHeldRxFrames &&
        u.rxb->in_use() + kRxReserve <= u.rxb->count()) {
      u.cs.held_rx->inc();
      s.held_rx.emplace_back(b, std::move(k));
      return;
    }
    if (e == Cau::Error::BadIcv) return reject(u.cs.rej_auth);
    if (e == Cau::Error::BadKey) return reject(u.cs.rej_no_sa);
    if (e != Cau::Error::None) return reject(u.cs.rej_format);
    ReplayWindow* window = was_new ? &s.rx_window : &s.old_window;
    if (was_new && s.old_sa) {  // the peer has changed over
      s.old_sa.reset();
      s.old_id = 0;
    }
    if (was_old) u.cs.opened_old->inc();
    if (was_new && !s.peer_has) new_keys_confirmed(node, spi);  // it sealed under them
    // Anti-replay only for authenticated frames: an unauthenticated sequence number proves
    // nothing, and letting it move the window would let a forger stop traffic.
    if (m_.crypto.auth != Auth::None && !mutant::on(mutant::Id::ReplayWindowOff) && !window->accept(seq)) return reject(u.cs.rej_replay);
    u.cs.opened->inc();
    // The CAU wrote the plain frame back over the sealed one.
    const std::vector<uint8_t> f = u.rxb->get(b);
    if (cb) u.cs.dec_bytes->inc(static_cast<uint32_t>(f.size() - 14));
    if (is_ip(f)) {  // an IPsec datagram, opened: steered like one in the clear
      k(nullptr);
      return ip_steer(node, b, false);
    }
    to_routine(node, b, k);
  });
}

// --- key exchange: Diffie-Hellman over the 1024-bit MODP group, the exponentiations on the
// MEAC1024 (or in PME firmware without one). The initiator sends INIT with its public value;
// the responder answers RESP with its own; each side derives the keys from the shared secret.
// A message not answered within crypto.kx_timeout_us is sent again; an INIT from a peer whose
// keys are installed is answered again (our RESP was lost).

void Mbp2System::modexp_work(uint32_t node, uint32_t modmuls, std::function<void()> k) {
  Units& u = *u_[node];
  if (u.meac) {
    // The PME feeds the MEAC1024 one operation at a time; the two overlap.
    const uint64_t meac_end = u.meac->run(cal_.now_ps(), modmuls);
    u.pme->run("meac", Pme::kLow, false, u.pme->instr_ps(modmuls * m_.crypto.meac_op_instr),
               [this, meac_end, k = std::move(k)]() mutable { cal_.at(std::max(cal_.now_ps(), meac_end), std::move(k)); });
    return;
  }
  // Without one, the firmware multiplies; the operands stay in the PME's data cache.
  u.pme->run("modexp", Pme::kLow, false, u.pme->kernel_ps(modmuls * m_.crypto.fw_modmul_instr, 0), std::move(k));
}

void Mbp2System::with_public(uint32_t node, uint32_t peer, std::function<void()> k) {
  PeerSec& s = u_[node]->sec[peer];
  if (!s.pub.empty()) return k();
  s.pub_waiters.push_back(std::move(k));
  if (s.dh) return;  // being computed
  Rng r(iv_rng_.next(), "mbp2.dh.node" + std::to_string(node) + ".peer" + std::to_string(peer));
  std::vector<uint8_t> seed(Dh::kBytes);
  for (size_t i = 0; i < seed.size(); i += 8) {
    const uint64_t v = r.next();
    for (size_t j = 0; j < 8; ++j) seed[i + j] = static_cast<uint8_t>(v >> (8 * j));
  }
  s.dh = std::make_unique<Dh>(seed);
  modexp_work(node, s.dh->modmuls(), [this, node, peer, gen = s.gen] {
    PeerSec& s = u_[node]->sec[peer];
    if (s.gen != gen) return;  // dropped meanwhile (power cycle, rekey)
    s.pub = s.dh->public_value();
    auto ws = std::move(s.pub_waiters);
    s.pub_waiters.clear();
    for (auto& w : ws) w();
  });
}

void Mbp2System::start_key_exchange(uint32_t node, uint32_t peer) {
  if (m_.crypto.keys != CryptoConfig::Keys::Dh || !m_.crypto.enabled())
    internal_error("a key exchange needs crypto.keys = dh and a cipher or hash");
  PeerSec& s = u_[node]->sec[peer];
  if (s.started || s.sa) return;
  s.started = true;
  s.t0 = cal_.now_ps();
  s.kx_sent = 0;
  with_public(node, peer, [this, node, peer] {
    ++u_[node]->sec[peer].kx_sent;
    send_kx(node, peer, kKxInit);
    arm_kx_timer(node, peer);
  });
}

void Mbp2System::send_kx(uint32_t node, uint32_t peer, uint8_t type) {
  Units& u = *u_[node];
  const PeerSec& s = u.sec[peer];
  std::vector<uint8_t> f(kKxBytes, 0);
  const uint64_t d = mbcf::mac_of(peer), m = mbcf::mac_of(node);
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
  u.pme->run("key_exchange", Pme::kLow, false, u.pme->instr_ps(m_.rx_desc_instr), [this, node, peer, f = std::move(f)]() mutable {
    to_buffer(node, peer, std::move(f), [this, node, peer](std::vector<uint8_t>&& b) {
      to_wire(node, peer, std::move(b));  // (not sent: the exchange's timer sends again)
    }, false);
  });
}

// The n-th INIT waits crypto.kx_timeout_us x 2^(n-1) for its answer: retransmissions back off
// exponentially (RFC 7296 2.1), so a peer still computing its keys in firmware (hundreds of ms
// on the MBP2P) is not given up on.
void Mbp2System::arm_kx_timer(uint32_t node, uint32_t peer) {
  const PeerSec& s0 = u_[node]->sec[peer];
  const double wait_us = m_.crypto.kx_timeout_us * std::ldexp(1.0, static_cast<int>(std::min<uint32_t>(std::max<uint32_t>(s0.kx_sent, 1) - 1, 30)));
  cal_.after(static_cast<uint64_t>(wait_us * 1e6), [this, node, peer, gen = s0.gen] {
    PeerSec& s = u_[node]->sec[peer];
    if (s.sa || s.gen != gen || !s.started) return;
    if (s.deriving) return arm_kx_timer(node, peer);  // answered: the keys are being computed
    if (s.kx_sent >= m_.crypto.kx_tries) return give_up_exchange(node, peer);
    u_[node]->cs.kx_retries->inc();
    ++s.kx_sent;
    send_kx(node, peer, kKxInit);
    arm_kx_timer(node, peer);
  });
}

// No answer to crypto.kx_tries INITs: the peer is dead or cut off. Frames held for the keys
// would hold their buffers (a datagram's image) for as long, and starve what goes to other
// peers; they are dropped as not sent (MBCF's Go-back-N and TCP send theirs again later,
// which starts a new exchange; a UDP datagram is lost, as with no route).
void Mbp2System::give_up_exchange(uint32_t node, uint32_t peer) {
  Units& u = *u_[node];
  PeerSec& s = u.sec[peer];
  u.cs.kx_given_up->inc();
  s.started = false;
  s.kx_sent = 0;
  auto w = std::move(s.waiting);
  s.waiting.clear();
  u.cs.kx_dropped->inc(static_cast<uint32_t>(w.size()));
  for (auto& [frame, k] : w) k({});
  run_pollers(node, cal_.now_ps());
}

void Mbp2System::on_kx(uint32_t node, Buf b) {
  Units& u = *u_[node];
  // The LDMA's completion interrupts the PME, which reads the message from its buffer.
  u.pme->run("key_exchange", Pme::kLow, true, u.pme->instr_ps(m_.rx_desc_instr), [this, node, b] {
    Units& u = *u_[node];
    if (!n_[node]->up || !u.rxb->live(b)) return;
    const std::vector<uint8_t> f = u.rxb->get(b);
    u.rxb->release(b);
    const uint32_t peer = f.size() >= 12 ? (static_cast<uint32_t>(f[10]) << 8 | f[11]) : ~0u;
    const bool ours = f.size() >= 12 && f[6] == 0x02 && f[7] == 0x4d && f[8] == 0x42 && f[9] == 0x00;  // mac_of()
    if (f.size() < kKxBytes || !ours || peer >= nodes() || peer == node || (f[14] != kKxInit && f[14] != kKxResp && f[14] != kKxConfirm)) {
      u.cs.kx_bad->inc();
      return;
    }
    std::vector<uint8_t> pub(f.begin() + 18, f.begin() + 18 + Dh::kBytes);
    PeerSec& s = u.sec[peer];
    if (!s.started && !s.sa) s.t0 = cal_.now_ps();
    s.started = true;
    if (f[14] == kKxConfirm) {  // the initiator has the keys we answered with
      if (s.sa && !s.peer_has && pub == s.peer_pub) new_keys_confirmed(node, peer);
      return;
    }
    if (f[14] == kKxResp) {
      // The peer installed its keys before it answered: once ours are in, frames may go
      // under them. Crossed INITs (both ends renewing at once) make both ends responders,
      // each then told by the other's RESP.
      if (s.sa) {
        if (!s.peer_has && pub == s.peer_pub) new_keys_confirmed(node, peer);
        return;
      }
      s.resp_seen = true;
      return derive(node, peer, std::move(pub), [this, node, peer] { send_kx(node, peer, kKxConfirm); });
    }
    // The responder installs its keys before it answers, so the initiator, which can send
    // sealed frames as soon as it has the answer, never finds it without them.
    if (s.sa && pub == s.peer_pub) return send_kx(node, peer, kKxResp);  // our answer was lost
    if (s.sa) {
      // A new public value from a peer we have keys with: it restarted and lost them, or (the
      // renewal flag) its sequence numbers ran out. Both ends make new keys (and this end a
      // new private value). After a restart, frames sealed under the old ones, replayed or
      // late, no longer authenticate; after a renewal the old keys still open the peer's
      // frames in flight, under their own anti-replay window.
      u.cs.rekeys->inc();
      drop_keys(node, peer, f[15] == 1);
      PeerSec& s2 = u.sec[peer];
      s2.started = true;
      s2.t0 = cal_.now_ps();
    }
    derive(node, peer, std::move(pub), [this, node, peer] {
      send_kx(node, peer, kKxResp);
      // Should the initiator's CONFIRM be lost and it have nothing to send, our frames go
      // under the new keys after crypto.kx_timeout_us anyway.
      cal_.after(static_cast<uint64_t>(m_.crypto.kx_timeout_us * 1e6), [this, node, peer, gen = u_[node]->sec[peer].gen] {
        PeerSec& s = u_[node]->sec[peer];
        if (s.gen == gen && s.sa && !s.peer_has) new_keys_confirmed(node, peer);
      });
    });
  });
}

void Mbp2System::derive(uint32_t node, uint32_t peer, std::vector<uint8_t> peer_pub, std::function<void()> then) {
  PeerSec& s = u_[node]->sec[peer];
  if (s.sa || s.deriving) return;
  s.deriving = true;
  with_public(node, peer, [this, node, peer, pub = std::move(peer_pub), then = std::move(then)]() mutable {
    PeerSec& s = u_[node]->sec[peer];
    modexp_work(node, s.dh->modmuls(), [this, node, peer, pub = std::move(pub), then = std::move(then), gen = s.gen] {
      Units& u = *u_[node];
      PeerSec& s = u.sec[peer];
      if (s.gen != gen) return;
      s.deriving = false;
      std::vector<uint8_t> secret;
      if (!s.dh->shared(pub, secret)) {
        u.cs.kx_bad->inc();
        return;
      }
      s.sa = std::make_unique<SecurityAssociation>(m_.crypto.cipher, m_.crypto.auth, secret);
      install_keys(node, peer, false);
      s.peer_pub = pub;
      s.peer_has = s.resp_seen;
      u.cs.kx_done->inc();
      u.cs.kx_ps->inc(cal_.now_ps() - s.t0);
      then();
      auto w = std::move(s.waiting);
      s.waiting.clear();
      for (auto& [frame, k] : w) seal_and_send(node, peer, std::move(frame), std::move(k));
      auto held = std::move(s.held_rx);
      s.held_rx.clear();
      for (auto& [b, k] : held) open_received(node, b, std::move(k));
    });
  });
}

void Mbp2System::new_keys_confirmed(uint32_t node, uint32_t peer) {
  PeerSec& s = u_[node]->sec[peer];
  s.peer_has = true;
  if (u_[node]->cs.confirmed) u_[node]->cs.confirmed->inc();
  auto w = std::move(s.waiting);
  s.waiting.clear();
  for (auto& [frame, k] : w) seal_and_send(node, peer, std::move(frame), std::move(k));
}

void Mbp2System::drop_keys(uint32_t node, uint32_t peer, bool keep_inbound) {
  Units& u = *u_[node];
  PeerSec& s = u.sec[peer];
  // Frames held for the keys being dropped will never open: their buffers are free again.
  auto held = std::move(s.held_rx);
  s.held_rx.clear();
  for (auto& [b, k] : held) {
    u.rxb->release(b);
    k(nullptr);
  }
  PeerSec fresh;
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

void Mbp2System::nic_power_off(uint32_t node) {
  Units& u = *u_[node];
  u.slot_waiters.clear();  // the programs whose doorbells waited are gone
  // EM's frame buffers are empty; work in flight finds its buffer gone and stops.
  u.txb->reset();
  u.rxb->reset();
  u.reqb->reset();
  // TCP's segments and timers are gone with EM (their images too); what the user sends next is
  // numbered on from where the table says.
  for (auto& [conn, T] : u.tcp) {
    T.q.clear();
    T.sent = 0;
    T.una = u.kli->load32(kConnTable + conn * kConnBytes + 16);
    T.timer = T.delack = 0;
    T.unacked = T.dupacks = T.backoffs = 0;
    T.recovering = false;
  }
  u.reasm.clear();  // (their buffers are gone with EM)
  u.reasm_done.clear();
  u.reasm_held = 0;
  u.decoded.clear();
  u.tlb->clear();  // its entries are lost with the power; the PME refills them again
  // The programs are gone too: the entries of their send rings are theirs to write again.
  for (auto& [ptask, R] : rings_[node]) {
    R.posted.assign(R.posted.size(), false);
    R.waiters.clear();
  }
  u.tx_wait.clear();
  // The engines stop: what they had in flight moves nothing and completes nothing.
  for (FirmwareRing* r : {u.pge_ring.get(), u.adma_ring.get(), u.ldma_tx_ring.get(), u.ldma_rx_ring.get()}) r->reset();
  u.em->power_off();  // and what they had in flight takes no more of EM or the bus
  u.bus->power_off();
  u.adma_writes.clear();  // staged in EM: lost
  u.adma_numbers.clear();
  u.adma_reads.clear();
  u.adma_posts.clear();
  u.adma_then = nullptr;
  u.atomics = 0;
  u.quiesce_waiters.clear();  // (the node's programs are gone)
  if (u.cau_ring) u.cau_ring->reset();
  u.mac_tx.clear();
  u.mac_rx.clear();
  u.mac_tx_bytes = 0;
  u.mac_tx_lens.clear();
  u.mac_wait.clear();
  // The PGE's images are gone with EM; requests it had not started die with the power (an
  // old one left waiting for an image is dropped when it comes up: `datagram_fetch`).
  std::fill(u.dg_held.begin(), u.dg_held.end(), 0);
  u.pge_blocked = false;
  for (PeerSec& s : u.sec) s.waiting.clear();  // frames waiting for keys: lost
  u.rx_queued.clear();
  u.rx_current = Buf{};
  if (!m_.crypto.enabled() || m_.crypto.keys != CryptoConfig::Keys::Dh) return;
  for (uint32_t q = 0; q < nodes(); ++q)
    if (q != node) drop_keys(node, q);
}

}  // namespace mbpsim::mbp2
