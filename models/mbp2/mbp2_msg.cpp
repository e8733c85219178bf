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
// The receiving side (steering, reassembly) is IpSteering's (mbp2_ip.cpp); TCP's
// acknowledgements, retransmission and windows are the PME's too: mbp2_tcp.cpp.
#include <algorithm>

#include "models/core/bytes.h"
#include "models/core/error.h"
#include "models/mbp2/mbp2_nic.h"

namespace mbpsim::mbp2 {

using mbcf::kPermRead;
using mbcf::kPermRW;
using mbcf::Task;
using mbcf::TaskSpace;
using mbcf::ViolationCode;

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
  uint32_t reg = 0;  // an OCU register while there are some; beyond, the firmware checks order
  if (ocu_ && ocu_used < ocu_->registers()) {
    reg = ++ocu_used;
    ocu_->arm(reg - 1, recv_irs);
  }
  const int64_t c = add_conn({static_cast<uint32_t>(kIpProtoTcp) << 24 | local_port, (remote_node & 0xffff) << 16 | remote_port,
                                    ptask + 1, ring, send_iss, reg, recv_irs, 0});
  if (c < 0) return false;
  tcp_.open(static_cast<uint32_t>(c), ptask, remote_node, local_port, remote_port, send_iss, ts.load32(*t, ring), ts.load32(*t, ring + 4));
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
  host_request(ptask, alias_of(ptask), sys_->cycles_ps(m_.host_request_cycles), std::move(s), kSendDatagram, std::move(k));
  return true;
}

void Mbp2Nic::pge_fetch(uint32_t ptask, uint32_t entry, uint32_t dst, uint64_t pa_struct, uint32_t sbytes,
                           uint64_t pa_data, uint32_t data, uint32_t image, DmaEngine::Done done) {
  const uint32_t total = sbytes + data;
  pge_ring->post(cal_.now_ps(), send_entry_laddr(entry), dst, image, [this, pa_struct, sbytes, pa_data, data, total](uint64_t s) {
    if (data == 0) return host_transfer(*bus_, *em_, s, {{pa_struct, sbytes}}, total);
    return host_transfer(*bus_, *em_, s, {{pa_struct, sbytes}, {pa_data, data}}, total);
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
  TaskSpace& ts = sys_->space(node_);
  const Task* t = ts.find(ptask);
  // The PGE reads the structure: untranslated (bypass) addresses are for the kernel only, and
  // the payload must be readable in the task's space (the NIC cannot fault a page in).
  const uint32_t at = kSendAreaHeader + e * kSendEntryBytes;
  uint8_t h[kDatagramStructBytes] = {};  // (a refused read leaves it zero: no such kind)
  const bool read = area_copy(ptask, at, h, kDatagramStructBytes, false, Via::Biu);
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
    ip.tx_rejected->inc();
    free_entry(ptask, e, true);
  };
  if (r.bypass) ip.tx_bypass_rejected->inc();
  if (!read || pb >> 24 != kSendDatagram || (pb & 0xff00fe) != 0 || (r.proto != kIpProtoUdp && r.proto != kIpProtoTcp) || r.dst_node >= sys_->nodes() ||
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
  // The PGE's completion interrupts the PME, which writes the headers in front of the image
  // (the CSU-T's sum plus the pseudo-header; without a CSU the firmware sums the words).
  // (A fragmented datagram: the headers of every fragment.)
  const uint32_t words = (inet_header_bytes(r.proto) - 14 + r.len + 3) / 4;
  // (A TCP segment's headers are built when it is sent: tcp_output.)
  const uint32_t frames = r.proto == kIpProtoUdp ? udp_frames(r.len, mtu()) : 0;
  uint64_t dur = pme_->instr_ps(m_.ip_header_instr * frames);
  if (!csu_) dur += pme_->kernel_ps(m_.fw_csum_instr_per_word * words, words);
  const uint32_t inc = sys_->incarnation(node_);
  pme_->run_from(Pme::kPgeRing, "ip_header", Pme::kNormal, dur, [this, ptask, r, img, inc, payload = std::move(payload)]() mutable {
    if (!sys_->up(node_) || sys_->incarnation(node_) != inc) return;
    Datagram d;
    d.proto = r.proto;
    d.src_node = node_;
    d.dst_node = r.dst_node;
    d.src_port = r.src_port;
    d.dst_port = r.dst_port;
    d.ip_id = ++ip_id;
    if (r.proto == kIpProtoTcp) {
      const int64_t c = find_conn(kIpProtoTcp, r.src_port, r.dst_node, r.dst_port);
      const uint32_t off = kConnTable + static_cast<uint32_t>(c) * kConnBytes;
      if (c < 0 || kli_->load32(off + 8) != ptask + 1) {  // closed meanwhile
        ip.tx_rejected->inc();
        return image_done(img, inc);
      }
      d.seq = kli_->load32(off + 16);
      kli_->store32(off + 16, d.seq + r.len);
      ip.tx->inc();
      ip.tx_bytes->inc(r.len);
      return tcp_.queue(static_cast<uint32_t>(c), d.seq, r.len, img);  // (the image is held until acknowledged)
    }
    std::vector<uint8_t> f = build_inet(d, payload.data(), r.len);
    if (csu_) csu_->transmit(f);
    ip.tx->inc();
    ip.tx_bytes->inc(r.len);
    const uint32_t dst = r.dst_node;
    std::vector<std::vector<uint8_t>> frames = fragment_ip(std::move(f), mtu());
    if (frames.size() > 1) ip.tx_fragments->inc(static_cast<uint32_t>(frames.size()));
    dg_held[static_cast<uint32_t>(img)] += static_cast<uint32_t>(frames.size()) - 1;  // the frames take the fetch's hold over
    for (std::vector<uint8_t>& fr : frames)
      nic_transmit(dst, std::move(fr), [this, dst, img, inc](std::vector<uint8_t>&& b) {
        image_done(img, inc);  // the LDMA has read the frame from it (or gave it up)
        to_wire(dst, std::move(b));  // (not sent: a datagram, nothing resends it)
      });
  });
}

// ------------------------------------------------------------------ receive

void Mbp2Nic::to_wire(uint32_t dst, std::vector<uint8_t>&& b) {
  if (b.empty()) return;  // the NIC could not send it
  wire_.send(node_, dst, std::move(b), [this, inc = sys_->incarnation(node_)](bool) {
    if (sys_->incarnation(node_) == inc) tx_done();
  });
}

bool Mbp2Nic::is_ip(const std::vector<uint8_t>& f) { return ether_type(f) == kEtherTypeIpv4; }

}  // namespace mbpsim::mbp2
