// One host's MBP2 card (mbp2_nic.h): its construction (units as child modules), the host side
// (send rings, doorbells, the OS's requests to the NIC) and the power loss. The MBCF firmware's
// routines are in mbp2_firmware.cpp, the frame path with its sealing in mbp2_frames.cpp, sending
// datagrams in mbp2_msg.cpp; the key exchange, IP steering and TCP are classes of their own
// (mbp2_kx.h, mbp2_ip.h, mbp2_tcp.h).
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

// One host's card: a SystemC module whose units are its children (host3.nic.pme, ...).
Mbp2Nic::Mbp2Nic(sc_core::sc_module_name nm, Mbp2Cards& cards, uint32_t node, net::EtherSegment& wire)
    : sc_core::sc_module(nm),
      kx_(*this, cards.c_.nodes),
      cards_(cards),
      node_(node),
      wire_(wire),
      cal_(cards.cal_),
      stats_(cards.stats_),
      sys_(cards.sys_),
      c_(cards.c_),
      m_(cards.m_),
      frame_overhead_(cards.frame_overhead_),
      iv_rng_(cards.iv_rng_),
      timer_serial_(cards.timer_serial_),
      sa_serial_(cards.sa_serial_) {
  Calendar& cal = cal_;
  Stats& st = stats_;
  const Mbp2Config& c = m_;
  const uint32_t nodes = c_.nodes;
  const std::string b = std::string(name()) + ".";
  host_requests = &st.counter(b + "host_requests", "requests written and rung by user tasks (no system call)");
  rejected_requests = &st.counter(b + "rejected_requests",
                                  "doorbell stores refused: through an alias not the task's own (its MMU maps no other: the store faults on the host, counted by the card's driver) or an alias the ULI has unassigned");
  slot_retries = &st.counter(b + "doorbell_slot_waits",
                             "MBCF doorbell stores that found every EM request slot taken (mbp2.request_slots) and were retried, holding the CPU, until a request left");
  bad_requests = &st.counter(b + "bad_requests",
                             "send structures the NIC refused: bad sizes, a payload not readable at its address, commands that do not decode or break a rule of 4.4, an unknown Ltask");
  ring_waits = &st.counter(b + "send_ring_waits",
                           "requests whose task found every entry of its send ring still unfetched (mbp2.send_ring_entries) and waited, holding the CPU, for the PGE");
  icu_bad = &st.counter(b + "icu_bad_messages", "ICU messages of an unknown type (ignored)");
  atomic_changed = &st.counter(b + "atomic_operands_changed",
                               "atomics whose operands the host changed between the PME's check of the command and the ADMA's read of them (the result is computed from what the ADMA read)");
  structure_reads = &st.counter(b + "structure_reads",
                                "MBCF structures (a FIFO's, a signal's) the ADMA read from the task's memory for the PME before it acted on them");
  bus_ = std::make_unique<HostBus>(c_.bus, st, b + "biu");
  bus_->set_registers(*this);  // the ULI's doorbell register behind the BIU's PIO socket
  em_ = std::make_unique<Em>(c.em, st, b + "em");
  tlb_ = std::make_unique<Tlb>(c.tlb_entries, st, b + "tlb");
  frames.tlb = tlb_.get();
  pme_ = std::make_unique<Pme>(cal, c.pme, st, b + "pme");
  pme_->attach(em_.get());
  kli_ = std::make_unique<Kli>(*bus_, st, b + "kli");
  icu_ = std::make_unique<Icu>(st, b + "icu");
  uli_ = std::make_unique<Uli>(*kli_, st, b + "uli");
  pge_ = std::make_unique<DmaEngine>(cal, *em_, c.ring_entries, c.pge_setup_ns, st, b + "pge");
  adma_ = std::make_unique<DmaEngine>(cal, *em_, c.ring_entries, c.adma_setup_ns, st, b + "adma");
  ldma_tx_ = std::make_unique<DmaEngine>(cal, *em_, c.ring_entries, c.ldma_setup_ns, st, b + "ldma_tx");
  ldma_rx_ = std::make_unique<DmaEngine>(cal, *em_, c.ring_entries, c.ldma_setup_ns, st, b + "ldma_rx");
  pge_ring = std::make_unique<FirmwareRing>(cal, *pge_);
  adma_ring = std::make_unique<FirmwareRing>(cal, *adma_);
  ldma_tx_ring = std::make_unique<FirmwareRing>(cal, *ldma_tx_);
  ldma_rx_ring = std::make_unique<FirmwareRing>(cal, *ldma_rx_);
  em_port = std::make_unique<EmPort>(*em_);
  dg_images = em_->carve(c.ring_entries * FramePool::kBufBytes);
  dg_large = em_->carve(kLargeImages * kLargeImageBytes);
  dg_held.assign(c.ring_entries + kLargeImages, 0);
  adma_stages = em_->carve(c.ring_entries * FramePool::kBufBytes);
  ldma_tx_->connect(em_port.get(), &mac_tx);
  ldma_rx_->connect(&mac_rx, em_port.get());
  txb = std::make_unique<FramePool>(*em_, c.ring_entries, st, b + "tx_buffers");
  rxb = std::make_unique<FramePool>(*em_, c_.rx_ring, st, b + "rx_buffers");
  reqb = std::make_unique<FramePool>(*em_, c.request_slots, st, b + "request_images");
  rx_oversized = &st.counter(b + "mac.rx_oversized", "frames longer than Ethernet allows (1514 bytes without FCS) dropped by the MAC");
  if (c.csu) csu_ = std::make_unique<Csu>(st, b + "csu");
  if (c.ocu) ocu_ = std::make_unique<Ocu>(c.ocu_registers, st, b + "ocu");
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
      cau_ = std::make_unique<Cau>(cal, c.crypto, c.ring_entries, 2 * nodes, *em_, st, b + "cau");
      cau_ring = std::make_unique<FirmwareRing>(cal, cau_->engine());
    }
    if (c.crypto.keys == CryptoConfig::Keys::Dh && c.crypto.meac) meac_ = std::make_unique<Meac>(c.crypto, st, b + "meac");
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
  // The PGE's source port is its walker over the send areas; the ADMA's host side is the BIU's
  // DMA socket into the host's memory (host physical addresses: frame * page_bytes + offset).
  walker_.nic = this;
  pge_->connect(&walker_, em_port.get());
  bus_->set_memory([this]() -> mem::TargetSocket& { return sys_->host_memory(node_); });
  adma_->connect(em_port.get(), bus_.get());
  mbcf_ocu.assign(nodes, -1);
  for (uint32_t q = 0; q < nodes && ocu_; ++q)
    if (q != node_ && ocu_used < ocu_->registers()) {
      mbcf_ocu[q] = static_cast<int32_t>(ocu_used++);
      ocu_->arm(static_cast<uint32_t>(mbcf_ocu[q]), 1);  // nothing arrived: END_P 1 is next
    }
  if (m_.crypto.enabled() && m_.crypto.keys == CryptoConfig::Keys::Static) {
    // A pre-shared secret: every pair's keys come from it and the two Pnodes.
    for (uint32_t b2 = 0; b2 < nodes; ++b2) {
      if (node_ == b2) continue;
      std::vector<uint8_t> secret(m_.crypto.secret.begin(), m_.crypto.secret.end());
      for (uint32_t v : {std::min(node_, b2), std::max(node_, b2)})
        for (int i = 0; i < 4; ++i) secret.push_back(static_cast<uint8_t>(v >> (24 - 8 * i)));
      kx_.peer(b2).sa = std::make_unique<SecurityAssociation>(m_.crypto.cipher, m_.crypto.auth, secret);
      kx_.peer(b2).peer_has = true;  // both ends hold them from the start
      install_keys(b2, true);
    }
  }
}

std::unique_ptr<mbcf::Nic> Mbp2Nic::port() { return std::make_unique<Port>(*this, wire_); }

uint64_t Mbp2Nic::em_bytes_needed(const Mbp2Config& c, uint32_t rx_ring, uint32_t nodes) {
  const uint64_t rings = 4 * static_cast<uint64_t>(c.ring_entries) * DmaEngine::kDescBytes;
  const uint64_t cau = c.crypto.enabled() && c.crypto.cau ? Cau::em_bytes(c.ring_entries, 2 * nodes) : 0;
  return Kli::kBytes + rings + cau + kLargeImages * kLargeImageBytes +
         (3 * static_cast<uint64_t>(c.ring_entries) + rx_ring + c.request_slots) * FramePool::kBufBytes;
}

uint32_t Mbp2Nic::alias_of(uint32_t ptask) const {
  const int64_t a = uli_->alias_of(ptask);
  if (a < 0) internal_error("task " + std::to_string(ptask) + " of node " + std::to_string(node_) + " has no doorbell alias");
  return static_cast<uint32_t>(a);
}

// ------------------------------------------------------------------ host side

Mbp2Nic::SendRing& Mbp2Nic::send_ring(uint32_t ptask) {
  auto& rings = rings_;
  auto it = rings.find(ptask);
  if (it != rings.end()) return it->second;
  // The OS pins the pages when the task first uses its alias: consecutive frames, zeroed.
  SendRing& R = rings[ptask];
  const uint32_t pb = c_.page_bytes;
  const uint64_t bytes = kSendAreaHeader + static_cast<uint64_t>(m_.send_ring_entries) * kSendEntryBytes;
  for (uint64_t i = 0; i < (bytes + pb - 1) / pb; ++i) R.frames.push_back(sys_->space(node_).alloc_frame());
  R.posted.assign(m_.send_ring_entries, false);
  return R;
}

bool Mbp2Nic::area_copy(uint32_t ptask, uint32_t off, uint8_t* buf, uint32_t n, bool write, Via via) {
  SendRing& R = send_ring(ptask);
  const uint32_t pb = c_.page_bytes;
  if (static_cast<uint64_t>(off) + n > static_cast<uint64_t>(R.frames.size()) * pb)
    internal_error("an access beyond task " + std::to_string(ptask) + "'s send area on node " + std::to_string(node_));
  while (n) {
    const uint32_t in = off % pb, k = std::min(n, pb - in);
    uint64_t frame = R.frames[off / pb];
    if (via != Via::Host) tlb_->probe(ptask, kSendArea / pb + off / pb, &frame);
    if (via == Via::Biu) {
      const bool ok = write ? bus_->write(frame * pb + in, ptask, buf, k) : bus_->read(frame * pb + in, ptask, buf, k);
      if (!ok) return false;
    } else {
      uint8_t* f = sys_->space(node_).frame(static_cast<uint32_t>(frame)) + in;
      if (write) std::copy(buf, buf + k, f);
      else std::copy(f, f + k, buf);
    }
    buf += k;
    off += k;
    n -= k;
  }
  return true;
}

uint32_t Mbp2Nic::fetched(uint32_t ptask) {
  uint8_t w[4];
  area_copy(ptask, 0, w, 4, false);
  return load_be32(w);
}

void Mbp2Nic::send_area_write(uint32_t ptask, uint32_t off, const std::vector<uint8_t>& bytes) {
  std::vector<uint8_t> b = bytes;
  area_copy(ptask, off, b.data(), static_cast<uint32_t>(b.size()), true);
}

std::vector<uint8_t> Mbp2Nic::send_area_read(uint32_t ptask, uint32_t off, uint32_t n) {
  std::vector<uint8_t> b(n);
  area_copy(ptask, off, b.data(), n, false);
  return b;
}

void Mbp2Nic::free_entry(uint32_t ptask, uint32_t e, bool fetched) {
  SendRing& R = send_ring(ptask);
  R.posted.at(e) = false;  // (not posted: a doorbell the library did not ring, from a user's initiator)
  if (fetched) {
    // The PGE writes its count back into the area: a task polling it sees the entry (and a
    // payload at an address) free.
    uint8_t w[4];
    store_be32(w, ++R.fetched);
    if (!area_copy(ptask, 0, w, 4, true, Via::Biu))
      sys_->fail("node " + std::to_string(node_) + ": host memory refused the NIC's write of task " + std::to_string(ptask) +
                 "'s fetched count");
    fw_run_pollers(cal_.now_ps());
  }
  if (!R.waiters.empty()) {
    auto f = std::move(R.waiters.front());
    R.waiters.pop_front();
    f();
  }
}

std::vector<uint8_t> Mbp2Nic::mbcf_structure(uint32_t ltask, const Packet& p, uint32_t src_laddr) {
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

bool Mbp2Nic::ring(uint32_t ptask, uint32_t alias, const mbcf::Request& r, std::function<void()> k) {
  Built b;
  if (!sys_->take_request(node_, ptask, r, b)) return false;
  send_packet(ptask, alias, r, std::move(b), std::move(k));
  return true;
}

bool Mbp2Nic::ring_structure(uint32_t ptask, uint32_t alias, std::vector<uint8_t> structure, std::function<void()> k) {
  if (!sys_->up(node_) || !sys_->space(node_).find(ptask)) return false;
  if (structure.size() > kSendEntryBytes) structure.resize(kSendEntryBytes);  // the rest is the next entry's
  host_request(ptask, alias, sys_->cycles_ps(m_.host_request_cycles), std::move(structure), kSendMbcf, std::move(k));
  return true;
}

void Mbp2Nic::send_packet(uint32_t ptask, uint32_t alias, const mbcf::Request& r, Built b, std::function<void()> k) {
  const uint64_t build = sys_->cycles_ps(m_.host_request_cycles + (b.packet.cmds.size() - 1) * c_.user_build_cycles);
  host_request(ptask, alias, build, mbcf_structure(r.ltask, b.packet, r.src_laddr), kSendMbcf, std::move(k));
}

void Mbp2Nic::host_request(uint32_t ptask, uint32_t alias, uint64_t build, std::vector<uint8_t> structure, uint32_t kind,
                           std::function<void()> k) {
  SendRing& R = send_ring(ptask);
  const uint32_t n = static_cast<uint32_t>(R.posted.size());
  // The lowest free entry: a program with few requests out keeps to the first pages (few
  // TLB entries on the NIC).
  uint32_t e = n;
  for (uint32_t i = 0; i < n && e == n; ++i)
    if (!R.posted[i]) e = i;
  if (e == n) {
    // Every entry is the NIC's: the program polls the PGE's count until one is free.
    ring_waits->inc();
    R.waiters.push_back([this, ptask, alias, build, s = std::move(structure), kind, k = std::move(k)]() mutable {
      host_request(ptask, alias, build, std::move(s), kind, std::move(k));
    });
    return;
  }
  R.posted[e] = true;
  // The user task writes its send structure (ordinary stores, user mode), then the doorbell.
  const uint32_t inc = sys_->incarnation(node_);
  sys_->compute(node_, build, [this, ptask, alias, e, inc, s = std::move(structure), kind, k = std::move(k), build]() mutable {
    if (!sys_->up(node_) || sys_->incarnation(node_) != inc) return;
    sys_->cpu(node_).charge(build);
    area_copy(ptask, kSendAreaHeader + e * kSendEntryBytes, s.data(), static_cast<uint32_t>(s.size()), true);
    doorbell(ptask, alias, e, kind, std::move(k));
  });
}

// The doorbell: an uncached store across the host bus into the card's register window, which
// holds the CPU until it completes. It names the entry of the task's send ring and what the
// structure there is. The task can only store through its own alias (the OS maps it no other):
// a store through another faults in its MMU, and its driver gives the entry back.
void Mbp2Nic::doorbell(uint32_t ptask, uint32_t alias, uint32_t entry, uint32_t kind, std::function<void()> k) {
  if (!sys_->up(node_)) return;
  if (uli_->alias_of(ptask) != static_cast<int64_t>(alias)) {
    rejected_requests->inc();
    free_entry(ptask, entry, false);  // the task may write it again
    sys_->compute(node_, 0, std::move(k));
    return;
  }
  sys_->cpu(node_).pio_write(doorbell_offset(alias), doorbell_value(kind, entry), [this, k = std::move(k)](uint64_t done, bool ok) mutable {
    if (!ok) return;  // (the card lost its power while it retried the store: the program is gone)
    const uint64_t now = cal_.now_ps();
    sys_->cpu(node_).charge(done - now);
    sys_->compute(node_, done - now, std::move(k));
  });
}

// A store into the card's window. The slot an MBCF structure needs is taken as the store is
// accepted, so no more requests are ever held than there are slots (checked: a breach stops
// the run). The NIC latches the doorbell as the store completes, before the CPU goes on (the
// calendar runs events of one instant in the order they were scheduled).
PioTarget::Answer Mbp2Nic::pio_write(uint64_t offset, uint32_t value, uint64_t at, bool again) {
  const uint32_t pb = c_.page_bytes;
  if (offset % pb || offset / pb >= Kli::kAliases) return {Answer::AddressError};
  if (!sys_->up(node_)) return {Answer::Error};  // a card without power answers nothing
  const uint32_t alias = static_cast<uint32_t>(offset / pb), kind = value >> 24, entry = value & 0xffffff;
  const bool slot = kind == kSendMbcf;
  if (slot && sys_->requests_in_flight(node_) >= m_.request_slots && !mutant::on(mutant::Id::DoorbellIgnoresSlots)) {
    if (!again) slot_retries->inc();  // (a store counts once, however often it is retried)
    return {Answer::Busy};
  }
  if (slot) sys_->request_taken(node_);
  if (slot && sys_->requests_in_flight(node_) > m_.request_slots)
    sys_->fail("buffer bound: node " + std::to_string(node_) + "'s NIC holds " + std::to_string(sys_->requests_in_flight(node_)) +
               " requests, beyond mbp2.request_slots " + std::to_string(m_.request_slots));
  const uint64_t done = bus_->pio(at);
  host_requests->inc();
  cal_.at(done, [this, alias, kind, entry, slot, inc = sys_->incarnation(node_)] {
    if (sys_->incarnation(node_) == inc) latch(alias, kind, entry, slot);
  });
  return {Answer::Done, done};
}

void Mbp2Nic::latch(uint32_t alias, uint32_t kind, uint32_t entry, bool slot) {
  const int64_t t = uli_->ring(alias);
  if (t < 0) {  // an alias the OS gave no task (a user's initiator can store anywhere)
    rejected_requests->inc();
    if (slot) sys_->request_given_up(node_);  // the slot it took is free again
    return;
  }
  const uint32_t ptask = static_cast<uint32_t>(t);
  if (entry >= m_.send_ring_entries) return bad_request(ptask, ~0u, slot);  // no such entry
  if (kind == kSendMbcf) return fetch_request(ptask, entry);
  if (kind == kSendDatagram) return datagram_fetch(ptask, entry);
  bad_request(ptask, entry, false);  // a structure of no kind the NIC sends
}

void Mbp2Nic::before_end_of_elaboration() { sys_->cpu(node_).pio.bind(bus_->pio_socket); }

void Mbp2Nic::task_created(uint32_t ptask) {
  // The OS gives the task its alias page and tells the NIC through the KLI (at set-up).
  uli_->assign(next_alias++, ptask, cal_.now_ps());
}

// A request taken from a doorbell left EM's queue: the oldest retried doorbell store goes in.
void Mbp2Nic::request_numbered() {
  if (sys_->requests_in_flight(node_) >= m_.request_slots) return;
  bus_->pio_ready();
}

void Mbp2Nic::nic_power_off() {
  // EM's frame buffers are empty; work in flight finds its buffer gone and stops.
  txb->reset();
  rxb->reset();
  reqb->reset();
  tcp_.power_off();  // TCP's segments and timers are gone with EM
  ip_steering_.power_off();  // reassemblies: their buffers are gone with EM
  decoded.clear();
  tlb_->clear();  // its entries are lost with the power; the PME refills them again
  // The programs are gone too: the entries of their send rings are theirs to write again.
  for (auto& [ptask, R] : rings_) {
    R.posted.assign(R.posted.size(), false);
    R.waiters.clear();
  }
  tx_wait.clear();
  // The engines stop: what they had in flight moves nothing and completes nothing.
  for (FirmwareRing* r : {pge_ring.get(), adma_ring.get(), ldma_tx_ring.get(), ldma_rx_ring.get()}) r->reset();
  em_->power_off();  // and what they had in flight takes no more of EM or the bus
  bus_->power_off();
  adma_writes.clear();  // staged in EM: lost
  adma_numbers.clear();
  adma_reads.clear();
  adma_posts.clear();
  adma_then = nullptr;
  atomics = 0;
  quiesce_waiters.clear();  // (the node's programs are gone)
  if (cau_ring) cau_ring->reset();
  mac_tx.clear();
  mac_rx.clear();
  mac_tx_bytes = 0;
  mac_tx_lens.clear();
  mac_wait.clear();
  // The PGE's images are gone with EM; requests it had not started die with the power (an
  // old one left waiting for an image is dropped when it comes up: `datagram_fetch`).
  std::fill(dg_held.begin(), dg_held.end(), 0);
  pge_blocked = false;
  kx_.power_off();  // frames waiting for keys: lost
  rx_queued.clear();
  rx_current = Buf{};
  if (!m_.crypto.enabled() || m_.crypto.keys != CryptoConfig::Keys::Dh) return;
  for (uint32_t q = 0; q < sys_->nodes(); ++q)
    if (q != node_) kx_.drop_keys(q);
}

}  // namespace mbpsim::mbp2
