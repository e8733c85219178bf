// Message passing on the MBP2 (thesis 8.3.1, 8.3.3): UDP/IP and TCP/IP datagrams. A user task
// writes a send structure and rings its doorbell; the PGE fetches the structure and payload
// through the TLB into EM while the CSU-T sums it; the PME builds the IP and UDP/TCP headers
// and hands the frame to the LDMA (sealed by the CAU first when the NIC encrypts: IPsec).
// Receiving, the LDMA writes the frame into EM while the CSU-R sums it and the OCU checks a TCP
// segment's order; the PME finds the port or connection in the connection table (EM's kernel
// area, written by the OS through the KLI) and starts the PGE, which walks the task's receive
// structure and writes the payload into its next slot. Frames for no bound port go to the
// kernel's receive structure (the PGE in bypass mode) with an ICU interrupt to the host.
//
// A UDP datagram longer than one frame goes in IP fragments: the PGE fetches its payload into
// EM's large image, the PME cuts it (fragment_ip); the receiving PME files each fragment in its
// receive buffer and, once the pieces cover the datagram, has the PGE gather them into the
// ring's slot (RFC 815 reassembly on the card; inet.h).
//
// TCP's acknowledgements, retransmission and windows are the PME's too: mbp2_tcp.cpp.
#include <algorithm>

#include "models/core/bytes.h"
#include "models/core/error.h"
#include "models/mbp2/mbp2_cards.h"

namespace mbpsim::mbp2 {

using mbcf::kPermRead;
using mbcf::kPermRW;
using mbcf::Task;
using mbcf::TaskSpace;
using mbcf::ViolationCode;

namespace {
constexpr uint64_t kIcuKernelRx = 2ull << 56;  // | frame length: a frame in the kernel's receive structure
}  // namespace

bool Mbp2Nic::usable(const TaskSpace& ts, const Task& t, uint64_t laddr, uint64_t n, uint8_t perm) {
  if (laddr + n > 0x100000000ull) return false;
  bool present = true;
  return ts.check(t, static_cast<uint32_t>(laddr), static_cast<uint32_t>(n), perm, &present) == ViolationCode::None && present;
}

// ------------------------------------------------------------------ the OS and the user library

void Mbp2Nic::init_ring(uint32_t ptask, uint32_t ring, uint32_t slots, uint32_t slot_bytes) {
  TaskSpace& ts = sys_->space(node_);
  Task* t = ts.find(ptask);
  const uint64_t bytes = kRingHeader + static_cast<uint64_t>(slots) * slot_bytes;
  if (!t || slots == 0 || slot_bytes < kSlotHeader || !usable(ts, *t, ring, bytes, kPermRW))
    internal_error("init_ring: the ring of task " + std::to_string(ptask) + " on node " + std::to_string(node_) +
                   " is not mapped writable, or has no slots");
  ts.store32(*t, ring, slots);
  ts.store32(*t, ring + 4, slot_bytes);
  ts.store32(*t, ring + 8, 0);
  ts.store32(*t, ring + 12, 0);
}

uint32_t Mbp2Nic::tcp_unacked(uint16_t local_port, uint32_t remote_node, uint16_t remote_port) const {
  const int64_t c = find_conn(kIpProtoTcp, local_port, remote_node, remote_port);
  return c < 0 ? 0 : tcp_.unacked(static_cast<uint32_t>(c));
}

int64_t Mbp2Nic::find_conn(uint8_t proto, uint16_t local_port, uint32_t remote_node, uint16_t remote_port) const {
  const Kli& k = *kli_;
  const uint32_t key = static_cast<uint32_t>(proto) << 24 | local_port;
  const uint32_t remote = (remote_node & 0xffff) << 16 | remote_port;
  for (uint32_t i = 0; i < kConns; ++i) {
    const uint32_t off = kConnTable + i * kConnBytes;
    if (k.load32(off) != key || k.load32(off + 8) == 0) continue;
    if (proto == kIpProtoTcp && k.load32(off + 4) != remote) continue;
    return i;
  }
  return -1;
}

int64_t Mbp2Nic::add_conn(const std::vector<uint32_t>& words) {
  Kli& k = *kli_;
  for (uint32_t i = 0; i < kConns; ++i) {
    const uint32_t off = kConnTable + i * kConnBytes;
    if (k.load32(off + 8) != 0) continue;
    std::vector<uint8_t> b(kConnBytes, 0);
    for (size_t w = 0; w < words.size() && w < kConnBytes / 4; ++w)
      for (int j = 0; j < 4; ++j) b[4 * w + j] = static_cast<uint8_t>(words[w] >> (24 - 8 * j));
    k.write(cal_.now_ps(), off, b.data(), kConnBytes);  // the OS's programmed writes (at set-up)
    return i;
  }
  return -1;
}

bool Mbp2Nic::bind_udp(uint32_t ptask, uint16_t port, uint32_t ring) {
  TaskSpace& ts = sys_->space(node_);
  const Task* t = ts.find(ptask);
  if (!t || port == 0 || !usable(ts, *t, ring, kRingHeader, kPermRW)) return false;
  if (find_conn(kIpProtoUdp, port, 0, 0) >= 0) return false;
  return add_conn({static_cast<uint32_t>(kIpProtoUdp) << 24 | port, 0, ptask + 1, ring, 0, 0, 0, 0}) >= 0;
}

bool Mbp2Nic::connect_tcp(uint32_t ptask, uint16_t local_port, uint32_t remote_node, uint16_t remote_port,
                             uint32_t ring, uint32_t send_iss, uint32_t recv_irs) {
  TaskSpace& ts = sys_->space(node_);
  const Task* t = ts.find(ptask);
  if (!t || local_port == 0 || remote_node >= sys_->nodes() || !usable(ts, *t, ring, kRingHeader, kPermRW)) return false;
  if (find_conn(kIpProtoTcp, local_port, remote_node, remote_port) >= 0) return false;
  Mbp2Nic& u = *this;
  uint32_t reg = 0;  // an OCU register while there are some; beyond, the firmware checks order
  if (u.ocu_ && u.ocu_used < u.ocu_->registers()) {
    reg = ++u.ocu_used;
    u.ocu_->arm(reg - 1, recv_irs);
  }
  const int64_t c = add_conn({static_cast<uint32_t>(kIpProtoTcp) << 24 | local_port, (remote_node & 0xffff) << 16 | remote_port,
                                    ptask + 1, ring, send_iss, reg, recv_irs, 0});
  if (c < 0) return false;
  u.tcp_.open(static_cast<uint32_t>(c), ptask, remote_node, local_port, remote_port, send_iss, ts.load32(*t, ring), ts.load32(*t, ring + 4));
  return true;
}

bool Mbp2Nic::take(uint32_t ptask, uint32_t ring, std::vector<uint8_t>* payload, RxInfo* info) {
  TaskSpace& ts = sys_->space(node_);
  Task* t = ts.find(ptask);
  if (!t || !usable(ts, *t, ring, kRingHeader, kPermRW)) return false;
  const uint32_t slots = ts.load32(*t, ring), sb = ts.load32(*t, ring + 4);
  const uint32_t head = ts.load32(*t, ring + 8), tail = ts.load32(*t, ring + 12);
  if (head == tail || slots == 0 || sb < kSlotHeader) return false;
  const uint64_t slot = ring + kRingHeader + static_cast<uint64_t>(tail % slots) * sb;
  if (!usable(ts, *t, slot, sb, kPermRead)) return false;
  const uint32_t s = static_cast<uint32_t>(slot);
  const uint32_t len = std::min(ts.load32(*t, s), sb - kSlotHeader);
  if (info) {
    info->src_node = ts.load32(*t, s + 4);
    const uint32_t ports = ts.load32(*t, s + 8);
    info->src_port = static_cast<uint16_t>(ports >> 16);
    info->dst_port = static_cast<uint16_t>(ports);
    info->seq = ts.load32(*t, s + 12);
  }
  if (payload) {
    payload->resize(len);
    if (len) ts.read(*t, s + kSlotHeader, payload->data(), len);
  }
  ts.store32(*t, ring + 12, tail + 1);
  return true;
}

// ------------------------------------------------------------------ send

bool Mbp2Nic::send_datagram(uint32_t ptask, const DatagramRequest& r, std::function<void()> k) {
  if (node_ >= sys_->nodes() || !sys_->space(node_).find(ptask)) return false;
  if (r.proto != kIpProtoUdp && r.proto != kIpProtoTcp) return false;
  if (r.dst_node >= sys_->nodes() || r.dst_node == node_) return false;
  if (!sendable(r.proto, r.len)) return false;
  if (r.proto == kIpProtoTcp) {
    const int64_t c = find_conn(kIpProtoTcp, r.src_port, r.dst_node, r.dst_port);
    if (c < 0 || kli_->load32(kConnTable + static_cast<uint32_t>(c) * kConnBytes + 8) != ptask + 1) return false;
  }
  std::vector<uint8_t> s;
  append_be32(s, kSendDatagram << 24 | static_cast<uint32_t>(r.proto) << 8 | (r.bypass ? 1 : 0));
  append_be32(s, r.dst_node);
  append_be32(s, static_cast<uint32_t>(r.src_port) << 16 | r.dst_port);
  append_be32(s, r.laddr);
  append_be32(s, r.len);
  host_request(ptask, alias_of(ptask), sys_->cycles_ps(m_.host_request_cycles), std::move(s),
               [this, ptask](uint32_t e) { datagram_fetch(ptask, e); }, std::move(k));
  return true;
}

void Mbp2Nic::pge_fetch(uint32_t ptask, uint32_t entry, uint32_t dst, uint64_t pa_struct, uint32_t sbytes,
                           uint64_t pa_data, uint32_t data, uint32_t image, DmaEngine::Done done) {
  Mbp2Nic& u = *this;
  const uint32_t total = sbytes + data;
  u.pge_ring->post(cal_.now_ps(), send_entry_laddr(entry), dst, image, [&u, pa_struct, sbytes, pa_data, data, total](uint64_t s) {
    if (data == 0) return host_transfer(*u.bus_, *u.em_, s, {{pa_struct, sbytes}}, total);
    return host_transfer(*u.bus_, *u.em_, s, {{pa_struct, sbytes}, {pa_data, data}}, total);
  }, std::move(done), ptask, total, DmaEngine::Move::Forward);
}

bool Mbp2Nic::pge_walk(uint64_t laddr, uint32_t ptask, uint8_t* out, uint32_t n) {
  const uint64_t first = send_entry_laddr(0);
  if (laddr < first || (laddr - first) % kSendEntryBytes || (laddr - first) / kSendEntryBytes >= m_.send_ring_entries) return false;
  if (!rings_.count(ptask)) return false;
  TaskSpace& ts = sys_->space(node_);
  const Task* t = ts.find(ptask);
  if (!t) return false;
  const uint32_t at = static_cast<uint32_t>(laddr - kSendArea);
  uint8_t h[kDatagramStructBytes];
  if (!area_copy(ptask, at, h, kDatagramStructBytes, false, Via::Biu)) return false;
  const uint32_t kind = load_be32(&h[0]) >> 24;
  uint32_t cbytes = 0, src = 0, len = 0;
  if (kind == kSendMbcf) {
    cbytes = load_be32(&h[0]) & 0xffffff;
    src = load_be32(&h[8]);
    len = load_be32(&h[12]);
    if (cbytes > kSendEntryBytes - kMbcfStructHeader) return false;
  } else if (kind == kSendDatagram) {
    src = load_be32(&h[12]);
    len = load_be32(&h[16]);
  } else {
    return false;
  }
  if (static_cast<uint64_t>(cbytes) + len != n || (len && !usable(ts, *t, src, len, kPermRead))) return false;
  if (cbytes && !area_copy(ptask, at + kMbcfStructHeader, out, cbytes, false, Via::Biu)) return false;
  return !len || pge_task_read(*t, src, out + cbytes, len);
}

bool Mbp2Nic::pge_task_read(const mbcf::Task& t, uint32_t laddr, uint8_t* out, uint32_t n) {
  const uint32_t pb = c_.page_bytes;
  while (n) {
    const uint32_t vp = laddr / pb, in = laddr % pb, k = std::min(n, pb - in);
    const uint64_t frame = frames.frame(t, vp, t.pages.at(vp));  // at the frame the PGE's TLB gives
    if (!bus_->read(frame * pb + in, t.ptask, out, k)) return false;
    out += k, laddr += k, n -= k;
  }
  return true;
}

void Mbp2Nic::datagram_fetch(uint32_t ptask, uint32_t e) {
  Mbp2Nic& u = *this;
  TaskSpace& ts = sys_->space(node_);
  const Task* t = ts.find(ptask);
  // The PGE reads the structure: untranslated (bypass) addresses are for the kernel only, and
  // the payload must be readable in the task's space (the NIC cannot fault a page in).
  const uint32_t at = kSendAreaHeader + e * kSendEntryBytes;
  uint8_t h[kDatagramStructBytes];
  area_copy(ptask, at, h, kDatagramStructBytes, false, Via::NicPeek);
  DatagramRequest r;
  const uint32_t pb = load_be32(&h[0]);
  r.proto = static_cast<uint8_t>(pb >> 8);
  r.bypass = (pb & 1) != 0;
  r.dst_node = load_be32(&h[4]);
  r.src_port = static_cast<uint16_t>(load_be32(&h[8]) >> 16);
  r.dst_port = static_cast<uint16_t>(load_be32(&h[8]));
  r.laddr = load_be32(&h[12]);
  r.len = load_be32(&h[16]);
  auto refuse = [&] {
    u.ip.tx_rejected->inc();
    free_entry(ptask, e, true);
  };
  if (r.bypass) u.ip.tx_bypass_rejected->inc();
  if (pb >> 24 != kSendDatagram || (pb & 0xff00fe) != 0 || (r.proto != kIpProtoUdp && r.proto != kIpProtoTcp) || r.dst_node >= sys_->nodes() ||
      r.dst_node == node_ || !sendable(r.proto, r.len) || r.bypass || !t ||
      !usable(ts, *t, r.laddr, r.len, kPermRead))
    return refuse();
  uint64_t pa_struct = 0, pa_data = 0;
  uint64_t refill = translate(ptask, send_entry_laddr(e), kDatagramStructBytes, &pa_struct);
  if (r.len) refill += translate(ptask, r.laddr, r.len, &pa_data);
  const uint32_t inc = sys_->incarnation(node_);
  auto pge = [this, ptask, e, r, pa_struct, pa_data, inc]() mutable {
    if (sys_->incarnation(node_) != inc) return true;  // taken before a power loss: it died with it
    // The payload goes to a free image: a frame's, or a large one when it is longer.
    const int32_t img = take_image(r.len > FramePool::kBufBytes);
    if (img < 0) return false;
    pge_fetch(ptask, e, image_offset(img), pa_struct, kDatagramStructBytes, pa_data, r.len, r.len,
              [this, ptask, e, r, inc, img](const DmaEngine::Desc& d) mutable {
                if (!sys_->up(node_) || sys_->incarnation(node_) != inc) return;
                if (d.error()) {  // the task can no longer read the payload, or it went
                  ip.tx_rejected->inc();
                  image_done(img, inc);
                  return free_entry(ptask, e, true);
                }
                // (The PME's header and the LDMA work from the image; the model carries its bytes.)
                std::vector<uint8_t> payload = d.bytes ? em_->read(d.dst, d.bytes) : std::vector<uint8_t>{};
                free_entry(ptask, e, true);
                datagram_send(ptask, r, std::move(payload), img);
              });
    return true;
  };
  pge_submit(refill, std::move(pge));
}

void Mbp2Nic::datagram_send(uint32_t ptask, const DatagramRequest& r, std::vector<uint8_t> payload, int32_t img) {
  Mbp2Nic& u = *this;
  // The PGE's completion interrupts the PME, which writes the headers in front of the image
  // (the CSU-T's sum plus the pseudo-header; without a CSU the firmware sums the words).
  // (A fragmented datagram: the headers of every fragment.)
  const uint32_t words = (inet_header_bytes(r.proto) - 14 + r.len + 3) / 4;
  // (A TCP segment's headers are built when it is sent: tcp_output.)
  const uint32_t frames = r.proto == kIpProtoUdp ? udp_frames(r.len, mtu()) : 0;
  uint64_t dur = u.pme_->instr_ps(m_.ip_header_instr * frames);
  if (!u.csu_) dur += u.pme_->kernel_ps(m_.fw_csum_instr_per_word * words, words);
  const uint32_t inc = sys_->incarnation(node_);
  u.pme_->run_from(Pme::kPgeRing, "ip_header", Pme::kNormal, dur, [this, ptask, r, img, inc, payload = std::move(payload)]() mutable {
    if (!sys_->up(node_) || sys_->incarnation(node_) != inc) return;
    Mbp2Nic& u = *this;
    Datagram d;
    d.proto = r.proto;
    d.src_node = node_;
    d.dst_node = r.dst_node;
    d.src_port = r.src_port;
    d.dst_port = r.dst_port;
    d.ip_id = ++u.ip_id;
    if (r.proto == kIpProtoTcp) {
      const int64_t c = find_conn(kIpProtoTcp, r.src_port, r.dst_node, r.dst_port);
      const uint32_t off = kConnTable + static_cast<uint32_t>(c) * kConnBytes;
      if (c < 0 || u.kli_->load32(off + 8) != ptask + 1) {  // closed meanwhile
        u.ip.tx_rejected->inc();
        return image_done(img, inc);
      }
      d.seq = u.kli_->load32(off + 16);
      u.kli_->store32(off + 16, d.seq + r.len);
      u.ip.tx->inc();
      u.ip.tx_bytes->inc(r.len);
      return u.tcp_.queue(static_cast<uint32_t>(c), d.seq, r.len, img);  // (the image is held until acknowledged)
    }
    std::vector<uint8_t> f = build_inet(d, payload.data(), r.len);
    if (u.csu_) u.csu_->transmit(f);
    u.ip.tx->inc();
    u.ip.tx_bytes->inc(r.len);
    const uint32_t dst = r.dst_node;
    std::vector<std::vector<uint8_t>> frames = fragment_ip(std::move(f), mtu());
    if (frames.size() > 1) u.ip.tx_fragments->inc(static_cast<uint32_t>(frames.size()));
    u.dg_held[static_cast<uint32_t>(img)] += static_cast<uint32_t>(frames.size()) - 1;  // the frames take the fetch's hold over
    for (std::vector<uint8_t>& fr : frames)
      nic_transmit(dst, std::move(fr), [this, dst, img, inc](std::vector<uint8_t>&& b) {
        image_done(img, inc);  // the LDMA has read the frame from it (or gave it up)
        to_wire(dst, std::move(b));  // (not sent: a datagram, nothing resends it)
      });
  });
}

// ------------------------------------------------------------------ receive

void Mbp2Nic::ip_steer(Buf b, bool interrupt) {
  Mbp2Nic& u = *this;
  // What the PME will find in the receive buffer: the parse is functional, its cost is the
  // handler's.
  std::vector<uint8_t> f = u.rxb->get(b);
  Parsed p;
  const InetError e = parse_inet(f, p, !u.csu_);  // without a CSU the firmware checks the sum
  if (e == InetError::Fragment) return ip_fragment(b, interrupt, std::move(f));
  std::vector<Run> runs{{b, p.payload_off, p.payload_len}};
  steer({b}, std::move(runs), std::move(f), p, e, interrupt, false);
}

void Mbp2Nic::steer(std::vector<Buf> bufs, std::vector<Run> runs, std::vector<uint8_t> f, const Parsed& p, InetError e,
                       bool interrupt, bool joined) {
  Mbp2Nic& u = *this;
  int64_t conn = -1;
  uint32_t reg = 0;
  if (e == InetError::None) {
    conn = find_conn(p.d.proto, p.d.dst_port, p.d.src_node, p.d.src_port);
    if (conn >= 0 && p.d.proto == kIpProtoTcp) reg = u.kli_->load32(kConnTable + static_cast<uint32_t>(conn) * kConnBytes + 20);
  }
  // (A joined datagram's words were summed fragment by fragment.)
  const uint32_t words = joined ? 0 : static_cast<uint32_t>((f.size() - 14 + 3) / 4);
  uint64_t dur = u.pme_->instr_ps(m_.ip_steer_instr + (interrupt ? m_.rx_desc_instr : 0));
  if (!u.csu_) dur += u.pme_->kernel_ps(m_.fw_csum_instr_per_word * words, words);
  if (conn >= 0 && p.d.proto == kIpProtoTcp) {
    dur += u.pme_->instr_ps(m_.tcp_ack_instr);  // the ACK and window it carries
    if (reg == 0 && p.payload_len) dur += u.pme_->instr_ps(m_.fw_order_instr);
  }
  u.pme_->run_from(interrupt ? Pme::kLdmaRxRing : Pme::kNoSource, "ip_steer", Pme::kNormal, dur,
             [this, bufs = std::move(bufs), runs = std::move(runs), f = std::move(f), p, e, conn, reg, joined]() mutable {
    Mbp2Nic& u = *this;
    for (const Buf& b : bufs)
      if (!u.rxb->live(b)) return;  // EM lost its contents with the power
    // A datagram not delivered gives its buffers back now; a delivered one when its DMA is done.
    auto release = [&] {
      for (const Buf& b : bufs) u.rxb->release(b);
      fw_run_pollers(cal_.now_ps());  // (a harness waiting on the drop counters sees it)
    };
    auto drop = [&](Counter* why) {
      why->inc();
      release();
    };
    if (e == InetError::BadChecksum) return drop(u.ip.rx_bad_checksum);
    if (e != InetError::None) return drop(u.ip.rx_malformed);
    // CSU-R summed it as the LDMA wrote it (a joined datagram: the PME folds the pieces' sums).
    if (u.csu_ && !(joined ? u.csu_->joined(f) : u.csu_->receive(f))) return drop(u.ip.rx_bad_checksum);
    if (p.d.dst_node != node_) return drop(u.ip.rx_not_ours);
    if (conn < 0) {  // the kernel's: its frames as they came (the host's stack reassembles)
      for (const Buf& b : bufs) kernel_deliver(b);
      return;
    }
    uint32_t next = 0;
    const bool tcp = p.d.proto == kIpProtoTcp;
    if (tcp) {
      const uint32_t c = static_cast<uint32_t>(conn);
      tcp_.ack_in(c, p.d, p.payload_len);  // the sender's half first
      if (p.payload_len == 0) return release();  // a pure acknowledgement
      const uint32_t off = kConnTable + c * kConnBytes;
      const uint32_t expected = reg ? u.ocu_->expected(reg - 1) : u.kli_->load32(off + 24);
      const bool in_order = reg ? u.ocu_->check(reg - 1, p.d.seq) == Ocu::Order::InOrder : p.d.seq == expected;
      if (!in_order) {
        drop(u.ip.rx_out_of_order);
        return tcp_.received(c, false);  // a duplicate ACK says where we are
      }
      next = p.d.seq + p.payload_len;
    }
    if (!pge_deliver(conn, bufs, runs, p)) {
      release();
      if (tcp) tcp_.received(static_cast<uint32_t>(conn), false);  // (the window says why)
      return;
    }
    if (tcp) {
      const uint32_t off = kConnTable + static_cast<uint32_t>(conn) * kConnBytes;
      u.kli_->store32(off + 24, next);
      if (reg) u.ocu_->advance(reg - 1, next);
      tcp_.received(static_cast<uint32_t>(conn), true);
    }
  });
}

void Mbp2Nic::ip_fragment(Buf b, bool interrupt, std::vector<uint8_t> f) {
  Mbp2Nic& u = *this;
  const uint32_t words = static_cast<uint32_t>((f.size() - 14 + 3) / 4);
  uint64_t dur = u.pme_->instr_ps(m_.ip_reasm_instr + (interrupt ? m_.rx_desc_instr : 0));
  if (!u.csu_) dur += u.pme_->kernel_ps(m_.fw_csum_instr_per_word * words, words);  // the piece's partial sum
  u.pme_->run_from(interrupt ? Pme::kLdmaRxRing : Pme::kNoSource, "ip_reasm", Pme::kNormal, dur, [this, b, f = std::move(f)]() mutable {
    Mbp2Nic& u = *this;
    if (!u.rxb->live(b)) return;
    u.ip.rx_fragments->inc();
    auto drop = [&](Counter* why) {
      why->inc();
      u.rxb->release(b);
      fw_run_pollers(cal_.now_ps());
    };
    Fragment fr;
    if (parse_fragment(f, fr) != InetError::None || fr.dst_node != node_) return drop(u.ip.rx_fragments_dropped);
    if (u.csu_) u.csu_->fragment(f);
    const uint64_t key = static_cast<uint64_t>(fr.src_node) << 24 | static_cast<uint64_t>(fr.proto) << 16 | fr.ip_id;
    auto it = u.reasm.find(key);
    const uint64_t now = cal_.now_ps(), window = static_cast<uint64_t>(m_.reasm_timeout_us * 1e6);
    while (!u.reasm_done.empty() && u.reasm_done.front().second + window <= now) u.reasm_done.pop_front();
    if (it == u.reasm.end() &&
        std::any_of(u.reasm_done.begin(), u.reasm_done.end(), [key](const std::pair<uint64_t, uint64_t>& d) { return d.first == key; }))
      return drop(u.ip.rx_fragment_duplicates);  // a late copy of a datagram already made
    if (it != u.reasm.end() && it->second.doomed) return drop(u.ip.rx_fragments_dropped);
    if (it == u.reasm.end()) {
      it = u.reasm.emplace(key, Mbp2Nic::Reasm{}).first;
      const uint64_t serial = it->second.serial = ++u.reasm_serial;
      const uint32_t inc = sys_->incarnation(node_);
      cal_.after(window, [this, key, serial, inc] {
        Mbp2Nic& u = *this;
        auto it = u.reasm.find(key);
        if (sys_->incarnation(node_) != inc || it == u.reasm.end() || it->second.serial != serial) return;
        if (it->second.doomed) {
          u.reasm.erase(it);  // (counted when it was given up)
          return;
        }
        reasm_give_up(key, u.ip.rx_reasm_timeout);
      });
    }
    // Half the receive buffers at most wait in reassemblies: the rest keep taking MBCF frames
    // and whole datagrams. A piece that would complete its datagram frees buffers and is always
    // taken; one that cannot be held costs its datagram, whose pieces are freed at once (it can
    // never complete) and whose later fragments are dropped as they come.
    if (u.reasm_held >= std::max<uint32_t>(1, u.rxb->count() / 2)) {
      Reassembly probe = it->second.r;
      if (probe.add(fr.offset, fr.len, fr.more, 0) == Reassembly::Add::Held) {  // (a copy or a bad piece: as below)
        u.rxb->release(b);
        u.ip.rx_fragments_dropped->inc();
        return reasm_give_up(key, u.ip.rx_reasm_no_room, true);
      }
    }
    Mbp2Nic::Reasm& R = it->second;
    switch (R.r.add(fr.offset, fr.len, fr.more, static_cast<uint32_t>(R.bufs.size()))) {
      case Reassembly::Add::Duplicate: return drop(u.ip.rx_fragment_duplicates);
      case Reassembly::Add::Bad:
        u.rxb->release(b);
        return reasm_give_up(key, u.ip.rx_reasm_bad);
      case Reassembly::Add::Held:
        R.bufs.push_back(b);
        ++u.reasm_held;
        return;
      case Reassembly::Add::Complete: break;
    }
    R.bufs.push_back(b);
    // The pieces in offset order make the datagram; its payload is the runs behind the
    // transport header, which the PGE gathers into the ring's slot.
    std::vector<Buf> bufs;
    std::vector<std::vector<uint8_t>> frames;
    for (const Reassembly::Piece& pc : R.r.pieces()) {
      bufs.push_back(R.bufs[pc.tag]);
      frames.push_back(pc.tag + 1 == R.bufs.size() ? std::move(f) : u.rxb->get(R.bufs[pc.tag]));
    }
    const std::vector<Reassembly::Piece> pieces = R.r.pieces();
    u.reasm_held -= static_cast<uint32_t>(R.bufs.size() - 1);
    u.reasm.erase(it);
    u.reasm_done.emplace_back(key, now);
    if (u.reasm_done.size() > kReasmDone) u.reasm_done.pop_front();
    u.ip.rx_reassembled->inc();
    std::vector<uint8_t> whole = join_fragments(frames);
    Parsed p;
    const InetError e = parse_inet(whole, p, false);  // the sum: the CSU's pieces, or the firmware's, folded in steer
    InetError err = e;
    if (e == InetError::None && !u.csu_ && !l4_verifies(whole)) err = InetError::BadChecksum;
    std::vector<Run> runs;
    const uint32_t l4h = p.payload_off - (14 + kIpHeader);
    for (size_t i = 0; i < pieces.size() && err == InetError::None; ++i) {
      const uint32_t from = std::max(pieces[i].offset, l4h), to = pieces[i].offset + pieces[i].len;
      if (to > from) runs.push_back(Run{bufs[i], 14 + kIpHeader + (from - pieces[i].offset), to - from});
    }
    steer(std::move(bufs), std::move(runs), std::move(whole), p, err, false, true);
  });
}

void Mbp2Nic::reasm_give_up(uint64_t key, Counter* why, bool doom) {
  Mbp2Nic& u = *this;
  auto it = u.reasm.find(key);
  if (it == u.reasm.end()) return;
  for (const Buf& b : it->second.bufs) u.rxb->release(b);
  u.reasm_held -= static_cast<uint32_t>(it->second.bufs.size());
  if (doom) {
    it->second.bufs.clear();
    it->second.r = Reassembly{};
    it->second.doomed = true;
  } else {
    u.reasm.erase(it);
  }
  why->inc();
  fw_run_pollers(cal_.now_ps());
}

bool Mbp2Nic::pge_deliver(int64_t conn, const std::vector<Buf>& bufs, const std::vector<Run>& runs, const Parsed& p) {
  Mbp2Nic& u = *this;
  TaskSpace& ts = sys_->space(node_);
  const uint32_t off = kConnTable + static_cast<uint32_t>(conn) * kConnBytes;
  const uint32_t ptask = u.kli_->load32(off + 8) - 1, ring = u.kli_->load32(off + 12);
  const Task* t = ts.find(ptask);
  // The PGE walks the receive structure: the ring header, then the slot at the NIC's index.
  if (!t || !usable(ts, *t, ring, kRingHeader, kPermRW)) {
    u.ip.rx_bad_ring->inc();
    return false;
  }
  // The PGE reads the ring header through its TLB (the entries the refill installs).
  uint32_t slots = 0, sb = 0, tail = 0;
  {
    mbcf::TaskSpace::Via via(ts, &u.frames);
    slots = ts.load32(*t, ring), sb = ts.load32(*t, ring + 4), tail = ts.load32(*t, ring + 12);
  }
  u.tcp_.ring_read(static_cast<uint32_t>(conn), slots, sb, tail);  // what the window is counted from
  const uint32_t head = u.kli_->load32(off + 28);
  const uint32_t len = p.payload_len;
  const uint64_t slot = ring + static_cast<uint64_t>(kRingHeader) + static_cast<uint64_t>(slots ? head % slots : 0) * sb;
  if (slots == 0 || sb < kSlotHeader + len || !usable(ts, *t, slot, kSlotHeader + len, kPermRW)) {
    u.ip.rx_bad_ring->inc();
    return false;
  }
  if (head - tail >= slots) {
    u.ip.rx_ring_full->inc();
    return false;
  }
  u.kli_->store32(off + 28, head + 1);
  uint64_t pa_ring = 0, pa_slot = 0;
  const uint64_t refill = translate(ptask, ring, kRingHeader, &pa_ring) +
                          translate(ptask, static_cast<uint32_t>(slot), kSlotHeader + len, &pa_slot);
  auto dma = [this, ptask, ring, slot, head, len, pa_ring, pa_slot, p, bufs, runs]() mutable {
    Mbp2Nic& u = *this;
    // The payload in the receive buffers: one descriptor gathers the runs (a fragmented
    // datagram's, one per fragment) into the slot, then writes its header and the head.
    const uint32_t src = runs.empty() ? u.rxb->offset(bufs[0]) : u.rxb->offset(runs[0].b) + runs[0].off;
    u.pge_ring->post(cal_.now_ps(), src, pa_slot, kRingHeader + len + kSlotHeader + 4, [&u, pa_ring, pa_slot, runs, len](uint64_t s) {
      std::vector<HostBus::Span> spans{{pa_ring, kRingHeader}};  // read the ring header
      uint64_t at = pa_slot + kSlotHeader;
      for (const Run& r : runs)
        if (r.len) {
          spans.push_back({at, r.len});
          at += r.len;
        }
      spans.push_back({pa_slot, kSlotHeader});
      spans.push_back({pa_ring + 8, 4});  // publish the head
      return host_transfer(*u.bus_, *u.em_, s, spans, len + kSlotHeader);
    }, [this, ptask, ring, slot, head, len, p, bufs, runs](const DmaEngine::Desc&) {
      // The PGE's completion (its descriptor done); it wrote the slot and the head itself.
      Mbp2Nic& u = *this;
      for (const Buf& b : bufs)
        if (!u.rxb->live(b)) return;  // the power went: EM and the PGE's transfer are lost
      std::vector<uint8_t> payload;
      payload.reserve(len);
      for (const Run& r : runs) {
        const std::vector<uint8_t> f = u.rxb->get(r.b);
        payload.insert(payload.end(), f.begin() + r.off, f.begin() + r.off + r.len);
      }
      for (const Buf& b : bufs) u.rxb->release(b);
      if (payload.size() != len) internal_error("node " + std::to_string(node_) + ": a datagram's runs do not make its payload");
      TaskSpace& ts = sys_->space(node_);
      Task* t = ts.find(ptask);
      if (!t || !usable(ts, *t, slot, kSlotHeader + len, kPermRW)) {  // unmapped meanwhile
        u.ip.rx_bad_ring->inc();
        return;
      }
      const uint32_t s = static_cast<uint32_t>(slot);
      mbcf::TaskSpace::Via via(ts, &u.frames);  // the PGE writes at the frames its TLB gives
      if (len) ts.write(*t, s + kSlotHeader, payload.data(), len);
      ts.store32(*t, s, len);
      ts.store32(*t, s + 4, p.d.src_node);
      ts.store32(*t, s + 8, static_cast<uint32_t>(p.d.src_port) << 16 | p.d.dst_port);
      ts.store32(*t, s + 12, p.d.seq);
      ts.store32(*t, ring + 8, head + 1);
      u.ip.rx->inc();
      u.ip.rx_bytes->inc(len);
      fw_run_pollers(cal_.now_ps());
      // The PGE's completion: the PME collects its descriptor.
      u.pme_->run_from(Pme::kPgeRing, "pge_done", Pme::kLow, u.pme_->instr_ps(m_.tx_done_instr), [] {});
    });
    return true;
  };
  pge_submit(refill, std::move(dma));
  return true;
}

void Mbp2Nic::kernel_deliver(Buf b) {
  Mbp2Nic& u = *this;
  if (u.kernel_rx.size() >= m_.kernel_ring_slots) {
    u.ip.rx_kernel_dropped->inc();
    u.rxb->release(b);
    return;
  }
  // The PGE writes the whole frame into the kernel's receive structure with physical
  // addresses (bypass mode: a kernel request, no TLB), then the PME interrupts the host.
  const uint32_t len = b.len;
  u.pge_ring->post(cal_.now_ps(), u.rxb->offset(b), 0, len, [&u, len](uint64_t s) {
    return host_transfer(*u.bus_, *u.em_, s, {{0, len}}, len);
  }, [this, len, b](const DmaEngine::Desc&) {
    Mbp2Nic& u = *this;
    if (!u.rxb->live(b)) return;
    u.kernel_rx.push_back(u.rxb->get(b));
    u.rxb->release(b);
    u.ip.rx_kernel->inc();
    host_upcall(kIcuKernelRx | len, [] {});
  });
}

void Mbp2Nic::to_wire(uint32_t dst, std::vector<uint8_t>&& b) {
  if (b.empty()) return;  // the NIC could not send it
  wire_.send(node_, dst, std::move(b), [this, inc = sys_->incarnation(node_)](bool) {
    if (sys_->incarnation(node_) == inc) tx_done();
  });
}

bool Mbp2Nic::is_ip(const std::vector<uint8_t>& f) { return ether_type(f) == kEtherTypeIpv4; }

}  // namespace mbpsim::mbp2
