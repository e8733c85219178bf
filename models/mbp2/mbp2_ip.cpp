// IP steering on the MBP2's PME (mbp2_ip.h): check, steer and deliver received UDP/TCP
// datagrams, and reassemble IP fragments.
#include "models/mbp2/mbp2_ip.h"

#include <algorithm>

#include "models/core/bytes.h"
#include "models/core/error.h"
#include "models/mbp2/mbp2_nic.h"

namespace mbpsim::mbp2 {

using mbcf::Task;
using mbcf::TaskSpace;

void IpSteering::power_off() {
  reasm_.clear();  // (their buffers are gone with EM)
  reasm_done_.clear();
  reasm_held_ = 0;
}

void IpSteering::receive(Buf b, bool interrupt) {
  Mbp2Nic& u = nic_;
  // What the PME will find in the receive buffer: the parse is functional, its cost is the
  // handler's.
  std::vector<uint8_t> f = u.rxb->get(b);
  Parsed p;
  const InetError e = parse_inet(f, p, !u.csu_);  // without a CSU the firmware checks the sum
  if (e == InetError::Fragment) return fragment(b, interrupt, std::move(f));
  std::vector<Run> runs{{b, p.payload_off, p.payload_len}};
  steer({b}, std::move(runs), std::move(f), p, e, interrupt, false);
}

void IpSteering::steer(std::vector<Buf> bufs, std::vector<Run> runs, std::vector<uint8_t> f, const Parsed& p, InetError e,
                       bool interrupt, bool joined) {
  Mbp2Nic& u = nic_;
  int64_t conn = -1;
  uint32_t reg = 0;
  if (e == InetError::None) {
    conn = nic_.find_conn(p.d.proto, p.d.dst_port, p.d.src_node, p.d.src_port);
    if (conn >= 0 && p.d.proto == kIpProtoTcp) reg = u.kli_->load32(Mbp2Nic::kConnTable + static_cast<uint32_t>(conn) * Mbp2Nic::kConnBytes + 20);
  }
  // (A joined datagram's words were summed fragment by fragment.)
  const uint32_t words = joined ? 0 : static_cast<uint32_t>((f.size() - 14 + 3) / 4);
  uint64_t dur = u.pme_->instr_ps(nic_.m_.ip_steer_instr + (interrupt ? nic_.m_.rx_desc_instr : 0));
  if (!u.csu_) dur += u.pme_->kernel_ps(nic_.m_.fw_csum_instr_per_word * words, words);
  if (conn >= 0 && p.d.proto == kIpProtoTcp) {
    dur += u.pme_->instr_ps(nic_.m_.tcp_ack_instr);  // the ACK and window it carries
    if (reg == 0 && p.payload_len) dur += u.pme_->instr_ps(nic_.m_.fw_order_instr);
  }
  u.pme_->run_from(interrupt ? Pme::kLdmaRxRing : Pme::kNoSource, "ip_steer", Pme::kNormal, dur,
             [this, bufs = std::move(bufs), runs = std::move(runs), f = std::move(f), p, e, conn, reg, joined]() mutable {
    Mbp2Nic& u = nic_;
    for (const Buf& b : bufs)
      if (!u.rxb->live(b)) return;  // EM lost its contents with the power
    // A datagram not delivered gives its buffers back now; a delivered one when its DMA is done.
    auto release = [&] {
      for (const Buf& b : bufs) u.rxb->release(b);
      nic_.fw_run_pollers(nic_.cal_.now_ps());  // (a harness waiting on the drop counters sees it)
    };
    auto drop = [&](Counter* why) {
      why->inc();
      release();
    };
    if (e == InetError::BadChecksum) return drop(u.ip.rx_bad_checksum);
    if (e != InetError::None) return drop(u.ip.rx_malformed);
    // CSU-R summed it as the LDMA wrote it (a joined datagram: the PME folds the pieces' sums).
    if (u.csu_ && !(joined ? u.csu_->joined(f) : u.csu_->receive(f))) return drop(u.ip.rx_bad_checksum);
    if (p.d.dst_node != nic_.node_) return drop(u.ip.rx_not_ours);
    if (conn < 0) {  // the kernel's: its frames as they came (the host's stack reassembles)
      for (const Buf& b : bufs) kernel_deliver(b);
      return;
    }
    uint32_t next = 0;
    const bool tcp = p.d.proto == kIpProtoTcp;
    if (tcp) {
      const uint32_t c = static_cast<uint32_t>(conn);
      nic_.tcp_.ack_in(c, p.d, p.payload_len);  // the sender's half first
      if (p.payload_len == 0) return release();  // a pure acknowledgement
      const uint32_t off = Mbp2Nic::kConnTable + c * Mbp2Nic::kConnBytes;
      const uint32_t expected = reg ? u.ocu_->expected(reg - 1) : u.kli_->load32(off + 24);
      const bool in_order = reg ? u.ocu_->check(reg - 1, p.d.seq) == Ocu::Order::InOrder : p.d.seq == expected;
      if (!in_order) {
        drop(u.ip.rx_out_of_order);
        return nic_.tcp_.received(c, false);  // a duplicate ACK says where we are
      }
      next = p.d.seq + p.payload_len;
    }
    if (!pge_deliver(conn, bufs, runs, p)) {
      release();
      if (tcp) nic_.tcp_.received(static_cast<uint32_t>(conn), false);  // (the window says why)
      return;
    }
    if (tcp) {
      const uint32_t off = Mbp2Nic::kConnTable + static_cast<uint32_t>(conn) * Mbp2Nic::kConnBytes;
      u.kli_->store32(off + 24, next);
      if (reg) u.ocu_->advance(reg - 1, next);
      nic_.tcp_.received(static_cast<uint32_t>(conn), true);
    }
  });
}

void IpSteering::fragment(Buf b, bool interrupt, std::vector<uint8_t> f) {
  Mbp2Nic& u = nic_;
  const uint32_t words = static_cast<uint32_t>((f.size() - 14 + 3) / 4);
  uint64_t dur = u.pme_->instr_ps(nic_.m_.ip_reasm_instr + (interrupt ? nic_.m_.rx_desc_instr : 0));
  if (!u.csu_) dur += u.pme_->kernel_ps(nic_.m_.fw_csum_instr_per_word * words, words);  // the piece's partial sum
  u.pme_->run_from(interrupt ? Pme::kLdmaRxRing : Pme::kNoSource, "ip_reasm", Pme::kNormal, dur, [this, b, f = std::move(f)]() mutable {
    Mbp2Nic& u = nic_;
    if (!u.rxb->live(b)) return;
    u.ip.rx_fragments->inc();
    auto drop = [&](Counter* why) {
      why->inc();
      u.rxb->release(b);
      nic_.fw_run_pollers(nic_.cal_.now_ps());
    };
    Fragment fr;
    if (parse_fragment(f, fr) != InetError::None || fr.dst_node != nic_.node_) return drop(u.ip.rx_fragments_dropped);
    if (u.csu_) u.csu_->fragment(f);
    const uint64_t key = static_cast<uint64_t>(fr.src_node) << 24 | static_cast<uint64_t>(fr.proto) << 16 | fr.ip_id;
    auto it = reasm_.find(key);
    const uint64_t now = nic_.cal_.now_ps(), window = static_cast<uint64_t>(nic_.m_.reasm_timeout_us * 1e6);
    while (!reasm_done_.empty() && reasm_done_.front().second + window <= now) reasm_done_.pop_front();
    if (it == reasm_.end() &&
        std::any_of(reasm_done_.begin(), reasm_done_.end(), [key](const std::pair<uint64_t, uint64_t>& d) { return d.first == key; }))
      return drop(u.ip.rx_fragment_duplicates);  // a late copy of a datagram already made
    if (it != reasm_.end() && it->second.doomed) return drop(u.ip.rx_fragments_dropped);
    if (it == reasm_.end()) {
      it = reasm_.emplace(key, Reasm{}).first;
      const uint64_t serial = it->second.serial = ++reasm_serial_;
      const uint32_t inc = nic_.sys_->incarnation(nic_.node_);
      nic_.cal_.after(window, [this, key, serial, inc] {
        Mbp2Nic& u = nic_;
        auto it = reasm_.find(key);
        if (nic_.sys_->incarnation(nic_.node_) != inc || it == reasm_.end() || it->second.serial != serial) return;
        if (it->second.doomed) {
          reasm_.erase(it);  // (counted when it was given up)
          return;
        }
        give_up(key, u.ip.rx_reasm_timeout);
      });
    }
    // Half the receive buffers at most wait in reassemblies: the rest keep taking MBCF frames
    // and whole datagrams. A piece that would complete its datagram frees buffers and is always
    // taken; one that cannot be held costs its datagram, whose pieces are freed at once (it can
    // never complete) and whose later fragments are dropped as they come.
    if (reasm_held_ >= std::max<uint32_t>(1, u.rxb->count() / 2)) {
      Reassembly probe = it->second.r;
      if (probe.add(fr.offset, fr.len, fr.more, 0) == Reassembly::Add::Held) {  // (a copy or a bad piece: as below)
        u.rxb->release(b);
        u.ip.rx_fragments_dropped->inc();
        return give_up(key, u.ip.rx_reasm_no_room, true);
      }
    }
    Reasm& R = it->second;
    switch (R.r.add(fr.offset, fr.len, fr.more, static_cast<uint32_t>(R.bufs.size()))) {
      case Reassembly::Add::Duplicate: return drop(u.ip.rx_fragment_duplicates);
      case Reassembly::Add::Bad:
        u.rxb->release(b);
        return give_up(key, u.ip.rx_reasm_bad);
      case Reassembly::Add::Held:
        R.bufs.push_back(b);
        ++reasm_held_;
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
    reasm_held_ -= static_cast<uint32_t>(R.bufs.size() - 1);
    reasm_.erase(it);
    reasm_done_.emplace_back(key, now);
    if (reasm_done_.size() > kReasmDone) reasm_done_.pop_front();
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

void IpSteering::give_up(uint64_t key, Counter* why, bool doom) {
  Mbp2Nic& u = nic_;
  auto it = reasm_.find(key);
  if (it == reasm_.end()) return;
  for (const Buf& b : it->second.bufs) u.rxb->release(b);
  reasm_held_ -= static_cast<uint32_t>(it->second.bufs.size());
  if (doom) {
    it->second.bufs.clear();
    it->second.r = Reassembly{};
    it->second.doomed = true;
  } else {
    reasm_.erase(it);
  }
  why->inc();
  nic_.fw_run_pollers(nic_.cal_.now_ps());
}

bool IpSteering::pge_deliver(int64_t conn, const std::vector<Buf>& bufs, const std::vector<Run>& runs, const Parsed& p) {
  Mbp2Nic& u = nic_;
  TaskSpace& ts = nic_.sys_->space(nic_.node_);
  const uint32_t off = Mbp2Nic::kConnTable + static_cast<uint32_t>(conn) * Mbp2Nic::kConnBytes;
  const uint32_t ptask = u.kli_->load32(off + 8) - 1, ring = u.kli_->load32(off + 12);
  const Task* t = ts.find(ptask);
  // The PGE walks the receive structure: the ring header, then the slot at the NIC's index.
  if (!t || !nic_.usable(ts, *t, ring, Mbp2Nic::kRingHeader, mbcf::kPermRW)) {
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
  const uint64_t slot = ring + static_cast<uint64_t>(Mbp2Nic::kRingHeader) + static_cast<uint64_t>(slots ? head % slots : 0) * sb;
  if (slots == 0 || sb < Mbp2Nic::kSlotHeader + len || !nic_.usable(ts, *t, slot, Mbp2Nic::kSlotHeader + len, mbcf::kPermRW)) {
    u.ip.rx_bad_ring->inc();
    return false;
  }
  if (head - tail >= slots) {
    u.ip.rx_ring_full->inc();
    return false;
  }
  u.kli_->store32(off + 28, head + 1);
  uint64_t pa_ring = 0, pa_slot = 0;
  const uint64_t refill = nic_.translate(ptask, ring, Mbp2Nic::kRingHeader, &pa_ring) +
                          nic_.translate(ptask, static_cast<uint32_t>(slot), Mbp2Nic::kSlotHeader + len, &pa_slot);
  auto dma = [this, ptask, ring, slot, head, len, pa_ring, pa_slot, p, bufs, runs]() mutable {
    Mbp2Nic& u = nic_;
    // The payload in the receive buffers: one descriptor gathers the runs (a fragmented
    // datagram's, one per fragment) into the slot, then writes its header and the head.
    const uint32_t src = runs.empty() ? u.rxb->offset(bufs[0]) : u.rxb->offset(runs[0].b) + runs[0].off;
    u.pge_ring->post(nic_.cal_.now_ps(), src, pa_slot, Mbp2Nic::kRingHeader + len + Mbp2Nic::kSlotHeader + 4, [&u, pa_ring, pa_slot, runs, len](uint64_t s) {
      std::vector<HostBus::Span> spans{{pa_ring, Mbp2Nic::kRingHeader}};  // read the ring header
      uint64_t at = pa_slot + Mbp2Nic::kSlotHeader;
      for (const Run& r : runs)
        if (r.len) {
          spans.push_back({at, r.len});
          at += r.len;
        }
      spans.push_back({pa_slot, Mbp2Nic::kSlotHeader});
      spans.push_back({pa_ring + 8, 4});  // publish the head
      return host_transfer(*u.bus_, *u.em_, s, spans, len + Mbp2Nic::kSlotHeader);
    }, [this, ptask, ring, slot, head, len, p, bufs, runs](const DmaEngine::Desc&) {
      // The PGE's completion (its descriptor done); it wrote the slot and the head itself.
      Mbp2Nic& u = nic_;
      for (const Buf& b : bufs)
        if (!u.rxb->live(b)) return;  // the power went: EM and the PGE's transfer are lost
      std::vector<uint8_t> payload;
      payload.reserve(len);
      for (const Run& r : runs) {
        const std::vector<uint8_t> f = u.rxb->get(r.b);
        payload.insert(payload.end(), f.begin() + r.off, f.begin() + r.off + r.len);
      }
      for (const Buf& b : bufs) u.rxb->release(b);
      if (payload.size() != len) internal_error("node " + std::to_string(nic_.node_) + ": a datagram's runs do not make its payload");
      TaskSpace& ts = nic_.sys_->space(nic_.node_);
      Task* t = ts.find(ptask);
      if (!t || !nic_.usable(ts, *t, slot, Mbp2Nic::kSlotHeader + len, mbcf::kPermRW)) {  // unmapped meanwhile
        u.ip.rx_bad_ring->inc();
        return;
      }
      const uint32_t s = static_cast<uint32_t>(slot);
      mbcf::TaskSpace::Via via(ts, &u.frames);  // the PGE writes at the frames its TLB gives
      if (len) ts.write(*t, s + Mbp2Nic::kSlotHeader, payload.data(), len);
      ts.store32(*t, s, len);
      ts.store32(*t, s + 4, p.d.src_node);
      ts.store32(*t, s + 8, static_cast<uint32_t>(p.d.src_port) << 16 | p.d.dst_port);
      ts.store32(*t, s + 12, p.d.seq);
      ts.store32(*t, ring + 8, head + 1);
      u.ip.rx->inc();
      u.ip.rx_bytes->inc(len);
      nic_.fw_run_pollers(nic_.cal_.now_ps());
      // The PGE's completion: the PME collects its descriptor.
      u.pme_->run_from(Pme::kPgeRing, "pge_done", Pme::kLow, u.pme_->instr_ps(nic_.m_.tx_done_instr), [] {});
    });
    return true;
  };
  nic_.pge_submit(refill, std::move(dma));
  return true;
}

void IpSteering::kernel_deliver(Buf b) {
  Mbp2Nic& u = nic_;
  if (kernel_rx_.size() >= nic_.m_.kernel_ring_slots) {
    u.ip.rx_kernel_dropped->inc();
    u.rxb->release(b);
    return;
  }
  // The PGE writes the whole frame into the kernel's receive structure with physical
  // addresses (bypass mode: a kernel request, no TLB), then the PME interrupts the host.
  const uint32_t len = b.len;
  u.pge_ring->post(nic_.cal_.now_ps(), u.rxb->offset(b), 0, len, [&u, len](uint64_t s) {
    return host_transfer(*u.bus_, *u.em_, s, {{0, len}}, len);
  }, [this, len, b](const DmaEngine::Desc&) {
    Mbp2Nic& u = nic_;
    if (!u.rxb->live(b)) return;
    kernel_rx_.push_back(u.rxb->get(b));
    u.rxb->release(b);
    u.ip.rx_kernel->inc();
    nic_.host_upcall(kIcuKernelRx | len, [] {});
  });
}

}  // namespace mbpsim::mbp2
