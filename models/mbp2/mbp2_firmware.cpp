// The MBP2 NIC side of the MBCF firmware on the PME: translation through the NIC's TLB, fetching
// requests from the send rings, the PGE building packets from images, the ADMA's reads and
// writes into host memory, remote atomics, replies, and the NIC's summary.
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

// ------------------------------------------------------------------ NIC side

uint64_t Mbp2Nic::translate(uint32_t ctx, uint32_t laddr, uint32_t bytes, uint64_t* pa) {
  const uint32_t pb = c_.page_bytes;
  const mbcf::Task* t = sys_->space(node_).find(ctx);
  uint64_t refill = 0;
  const uint64_t first = laddr / pb, last = (static_cast<uint64_t>(laddr) + std::max<uint32_t>(bytes, 1) - 1) / pb;
  for (uint64_t vp = first; vp <= last; ++vp) {
    uint64_t pp = 0;
    if (!tlb_->lookup(ctx, vp, &pp)) {
      // The PME walks the page table in EM: the handler plus one entry read. A page the task
      // does not map has no entry to install (the transfer is refused before it moves).
      bool found = false;
      const uint64_t area = kSendArea / pb;
      auto ring = rings_.find(ctx);
      if (vp >= area && ring != rings_.end() && vp - area < ring->second.frames.size()) {
        pp = ring->second.frames[vp - area];  // the send area the OS pinned
        found = true;
      } else if (t) {
        auto it = t->pages.find(static_cast<uint32_t>(vp));
        if (it != t->pages.end()) {
          pp = it->second.frame;
          found = true;
        }
      }
      if (found) tlb_->insert(ctx, vp, pp);
      refill += pme_->instr_ps(m_.tlb_refill_instr) + pme_->interrupt_ps() + em_->access_ps(8);
      em_->access(Route::Pme, cal_.now_ps(), 8);
    }
    if (vp == first && pa) *pa = pp * pb + laddr % pb;
  }
  return refill;
}

void Mbp2Nic::bad_request(uint32_t ptask, uint32_t e, bool slot) {
  bad_requests->inc();
  if (e != ~0u) free_entry(ptask, e, true);
  if (slot) sys_->request_given_up(node_);
}

void Mbp2Nic::fetch_request(uint32_t ptask, uint32_t e) {
  // The PGE reads the structure's header to learn what to fetch: the commands, and the payload
  // at its address (readable and present in the task: the NIC cannot fault a page in).
  const uint32_t at = kSendAreaHeader + e * kSendEntryBytes;
  uint8_t h[kMbcfStructHeader];
  if (!area_copy(ptask, at, h, kMbcfStructHeader, false, Via::Biu)) return bad_request(ptask, e, true);  // the memory refused the read
  const uint32_t kind = load_be32(&h[0]) >> 24, cbytes = load_be32(&h[0]) & 0xffffff;
  const uint32_t ltask = load_be32(&h[4]), src = load_be32(&h[8]), payload = load_be32(&h[12]);
  const mbcf::Task* t = sys_->space(node_).find(ptask);
  if (kind != kSendMbcf || cbytes > kSendEntryBytes - kMbcfStructHeader || payload > mbcf::kMaxPacketBytes ||
      (src == kNoAddr) != (payload == 0) || !t || (payload && !usable(sys_->space(node_), *t, src, payload, mbcf::kPermRead)))
    return bad_request(ptask, e, true);
  if (!mutant::on(mutant::Id::EmbCountedLate)) {
    // The NIC counts the request for its barrier colour as it takes the doorbell, before the
    // user can poll the counters (a barrier must not pass a request still in the queue): from
    // the commands' options in the structure (a payload at an address stands in as zeroes).
    std::vector<uint8_t> img(cbytes + payload, 0);
    if (!area_copy(ptask, at + kMbcfStructHeader, img.data(), cbytes, false, Via::Biu)) return bad_request(ptask, e, true);
    Packet p;
    if (decode_image(img, &p)) {
      p.src_ptask = ptask;
      sys_->count_emb_requests(node_, p);
    }
  }
  const uint32_t sbytes = kMbcfStructHeader + cbytes;
  uint64_t pa_struct = 0, pa_data = 0;
  uint64_t refill = translate(ptask, send_entry_laddr(e), sbytes, &pa_struct);
  if (payload) refill += translate(ptask, src, payload, &pa_data);
  // A request dies with the NIC's power: one taken before a power loss is never sent by the
  // NIC's next incarnation (EM, the PGE and the PME's queues are volatile).
  const uint32_t inc = sys_->incarnation(node_);
  auto pge = [this, ptask, e, ltask, cbytes, payload, sbytes, pa_struct, pa_data, inc]() mutable {
    // Longer than any packet's commands: the PGE refuses it before fetching (the image would
    // not fit its buffer).
    if (mbcf::kHeaderBytes + cbytes + payload > mbcf::kMaxPacketBytes) {
      free_entry(ptask, e, true);
      bad_request(ptask, ~0u, true);
      return true;
    }
    FramePool::Buf b;
    if (!reqb->alloc(&b)) {
      sys_->fail("buffer bound: node " + std::to_string(node_) + "'s NIC has no request image for a request it took (mbp2.request_slots " +
           std::to_string(m_.request_slots) + ")");
      return true;
    }
    // The PGE walks the structure into the image: the commands, then the payload from its
    // address, as they are in host memory when it reads them, at the frames its TLB gives.
    pge_fetch(ptask, e, reqb->offset(b), pa_struct, sbytes, pa_data, payload, cbytes + payload,
              [this, ptask, e, ltask, inc, b](const DmaEngine::Desc& d) mutable {
                if (!sys_->up(node_) || sys_->incarnation(node_) != inc) return;
                if (!reqb->live(b)) return;
                if (d.error()) {  // the task can no longer read what it named, or it went
                  reqb->release(b);
                  return bad_request(ptask, e, true);
                }
                free_entry(ptask, e, true);
                b.len = d.bytes;
                std::vector<uint8_t> img = reqb->get(b);
                // The PGE's completion interrupts the PME, which builds the header from the image
                // and runs the protocol: the SS20 kernel's request routine, ported (longer for
                // each further command of a combined request).
                Mbp2Nic::Decoded& dec = decoded[b.serial];
                dec.ok = decode_image(img, &dec.packet);
                dec.bytes = std::move(img);
                const size_t ncmd = dec.ok ? dec.packet.cmds.size() : 1;
                const uint64_t hdr = pme_->host_cycles_ps(c_.syscall_cycles + (ncmd - 1) * c_.int_command_cycles);
                pme_->run_from(Pme::kPgeRing, "header_build", Pme::kNormal, hdr, [this, ptask, ltask, b, inc] {
                  if (!sys_->up(node_) || sys_->incarnation(node_) != inc) return;
                  build_from_image(ptask, ltask, b);
                });
              });
    return true;
  };
  pge_submit(refill, std::move(pge));
}

bool Mbp2Nic::decode_image(const std::vector<uint8_t>& img, Packet* p) {
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

void Mbp2Nic::build_from_image(uint32_t ptask, uint32_t ltask, FramePool::Buf b) {
  if (!reqb->live(b)) return;  // EM lost its contents with the power
  const std::vector<uint8_t> img = reqb->get(b);
  reqb->release(b);
  // The source is the task the ULI named and the OS's entry for it; the destination is its
  // translation table's entry for the Ltask. The image supplies the commands only, and they
  // pass the same checks as the library's (a task may write anything into its structure).
  Packet q;
  bool ok = false;
  auto it = decoded.find(b.serial);
  if (it != decoded.end() && it->second.bytes == img) {
    ok = it->second.ok;
    q = std::move(it->second.packet);
  } else {
    ok = decode_image(img, &q);
  }
  if (it != decoded.end()) decoded.erase(it);
  Built built;
  mbcf::Request r;
  r.ltask = ltask;
  if (!ok) return bad_request(ptask, ~0u, true);
  r.cmds = std::move(q.cmds);
  if (!sys_->build_request(node_, ptask, r, built)) return bad_request(ptask, ~0u, true);
  const uint32_t dst = built.dst;
  Packet p = std::move(built.packet);
  if (mutant::on(mutant::Id::EmbCountedLate)) sys_->count_emb_requests(node_, p);
  sys_->send_request(node_, dst, std::move(p));  // TH2: the request waits in EM for the window to open
}

void Mbp2Nic::pge_submit(uint64_t refill, std::function<bool()> post) {
  pge_wait.emplace_back(refill, std::move(post));
  if (!pge_stalled && !pge_blocked) pge_next();
}

void Mbp2Nic::pge_next() {
  while (!pge_wait.empty()) {
    auto [refill, post] = std::move(pge_wait.front());
    pge_wait.pop_front();
    if (refill == 0) {
      if (pge_start(post)) continue;
      return;
    }
    // A TLB miss interrupts the PME, and the PGE waits for the entry: requests behind this one
    // wait too (they never overtake it).
    pge_stalled = true;
    pme_->run("tlb_refill", Pme::kHigh, false, refill, [this, post = std::move(post)]() mutable {
      pge_stalled = false;
      if (pge_start(post)) pge_next();
    });
    return;
  }
}

bool Mbp2Nic::pge_start(std::function<bool()>& post) {
  if (post()) return true;
  // No room in EM for what it would fetch: the PGE waits, and the requests behind it too.
  pge_wait.emplace_front(0, std::move(post));
  pge_blocked = true;
  return false;
}

int32_t Mbp2Nic::take_image(bool large) {
  const size_t from = large ? m_.ring_entries : 0, to = large ? dg_held.size() : m_.ring_entries;
  for (size_t i = from; i < to; ++i)
    if (dg_held[i] == 0) {
      dg_held[i] = 1;  // the fetch
      return static_cast<int32_t>(i);
    }
  ip.tx_image_waits->inc();
  return -1;
}

uint32_t Mbp2Nic::image_offset(int32_t img) const {
  const uint32_t i = static_cast<uint32_t>(img);
  return i < m_.ring_entries ? dg_images + i * FramePool::kBufBytes : dg_large + (i - m_.ring_entries) * kLargeImageBytes;
}

void Mbp2Nic::image_done(int32_t img, uint32_t inc) {
  if (!sys_->up(node_) || sys_->incarnation(node_) != inc) return;  // (EM was lost with the power, and its images)
  uint32_t& h = dg_held[static_cast<uint32_t>(img)];
  if (h == 0) internal_error("node " + std::to_string(node_) + ": a datagram image released twice");
  if (--h == 0 && pge_blocked) {
    pge_blocked = false;
    pge_next();
  }
}

void Mbp2Nic::host_upcall(uint64_t msg, std::function<void()> k) {
  // The PME posts the 64-bit message and interrupts the host through the ICU; the host's
  // interrupt routine reads it (two programmed words) and dispatches the invocation.
  pme_->run("icu", Pme::kNormal, false, pme_->instr_ps(m_.icu_instr), [this, msg, k = std::move(k)]() mutable {
    icu_->to_host(msg);
    const uint64_t now = cal_.now_ps();
    const uint64_t read = bus_->pio(bus_->pio(now));
    sys_->cpu(node_).interrupt(sys_->os(node_).interrupt_entry_ps() + (read - now), [this, msg, k = std::move(k)] {
      uint64_t m = 0;
      if (!icu_->take_for_host(&m) || m != msg) internal_error("an ICU message to the host out of order");
      k();
    });
  });
}

void Mbp2Nic::page_unmapped(uint32_t ptask, uint32_t laddr) {
  // The PME drops the translation before the frame can be reused.
  os_to_pme(kIcuInvalidatePage | static_cast<uint64_t>(ptask & 0xffffff) << 32 | (laddr / c_.page_bytes));
}

void Mbp2Nic::task_left(uint32_t ptask) {
  // The context ID may name another task later (a task created, or migrated back, with this
  // Ptask): the PME drops every entry tagged with it, or that task's data would go to the
  // frames this one had.
  // The OS waits for the ADMA's writes into the task before it moves its pages (the model
  // makes them at once; the ADMA's later copies write the same bytes again).
  const mbcf::WriteBuffer& wb = adma_writes;
  for (size_t i = 0; i < wb.size(); ++i)
    if (wb.at(i).ptask == ptask) bus_->write(wb.at(i).pa, 0, wb.at(i).bytes.data(), static_cast<uint32_t>(wb.at(i).bytes.size()));
  bus_->take_delay_ps();  // made at once, as said
  if (mutant::on(mutant::Id::TlbKeepsLeftContext)) return;
  os_to_pme(kIcuFlushContext | static_cast<uint64_t>(ptask & 0xffffff) << 32);
}

// The OCU-R compares each sequenced MBCF frame's END_P with its peer's register as the LDMA
// writes the frame; the receive routine takes the verdict instead of comparing END_P with the
// count itself (mbp2.fw_order_instr of its time). The count the routine keeps for
// acknowledgements must say the same: a disagreement is a model error.
Mbp2Nic::Order Mbp2Nic::order_of(uint32_t src, uint8_t end_p, Order fw, uint64_t* saved) {
  *saved = 0;
  if (!ocu_ || mbcf_ocu.at(src) < 0) return fw;
  const uint32_t reg = static_cast<uint32_t>(mbcf_ocu[src]);
  const Ocu::Order o = ocu_->check_end_p(reg, end_p);
  const Order r = o == Ocu::Order::InOrder ? Order::InOrder : o == Ocu::Order::Duplicate ? Order::Duplicate : Order::Gap;
  if (r != fw)
    internal_error("node " + std::to_string(node_) + "'s OCU register for node " + std::to_string(src) + " expects END_P " +
                   std::to_string(ocu_->expected(reg) & 0xff) + ", the receive routine's count says otherwise");
  *saved = pme_->instr_ps(m_.fw_order_instr);
  return r;
}

void Mbp2Nic::arrived_set(uint32_t src, uint8_t arrived) {
  if (ocu_ && src < mbcf_ocu.size() && mbcf_ocu[src] >= 0)
    ocu_->advance(static_cast<uint32_t>(mbcf_ocu[src]), static_cast<uint8_t>(arrived + 1));
}

void Mbp2Nic::os_to_pme(uint64_t msg) {
  icu_->to_pme(msg);
  const uint64_t now = cal_.now_ps();
  const uint64_t wrote = bus_->pio(bus_->pio(now));
  sys_->cpu(node_).charge(wrote - now);
  cal_.at(wrote, [this] {
    pme_->run("icu", Pme::kHigh, true, pme_->instr_ps(m_.icu_instr), [this] {
      uint64_t m = 0;
      while (icu_->take_for_pme(&m)) {
        const uint32_t ctx = static_cast<uint32_t>(m >> 32) & 0xffffff;
        if ((m >> 56) == (kIcuInvalidatePage >> 56)) tlb_->invalidate(ctx, m & 0xffffffffu);
        else if ((m >> 56) == (kIcuFlushContext >> 56)) tlb_->flush_context(ctx);
        else icu_bad->inc();
      }
    });
  });
}

void Mbp2Nic::protocol_work(uint64_t dur, std::function<void()> fn) {
  const bool intr = interrupt_next;
  interrupt_next = false;
  const char* handler = intr ? "receive" : "protocol";
  // A receive is raised by the LDMA's receive ring (EtherSystem's routine then loops over the
  // frames it holds).
  const int source = intr ? Pme::kLdmaRxRing : Pme::kNoSource;
  if (adma_posts.empty()) return pme_->run_from(source, handler, Pme::kNormal, dur, std::move(fn));
  // The routine posts its ADMA descriptors when its work is done, and answers only once the
  // ADMA has done them (a status reply must follow the data into the host's memory).
  const uint32_t inc = sys_->incarnation(node_);
  pme_->run_from(source, handler, Pme::kNormal, dur, std::move(fn),
             [this, inc, posts = std::move(adma_posts), then = std::move(adma_then)](std::function<void()> resume) {
               auto lost = [this, inc] { return !sys_->up(node_) || sys_->incarnation(node_) != inc; };
               if (lost()) return resume();  // the power went: the staged data with it
               uint32_t last = 0;
               for (const auto& post : posts) last = post();
               if (!then) return adma_ring->when_done(last, std::move(resume));
               adma_ring->when_done(last, [lost, then, resume] { lost() ? resume() : then(resume); });
             });
  adma_posts.clear();
  adma_then = nullptr;
}

void Mbp2Nic::tx_done() {
  mac_freed();
  pme_->run_from(Pme::kLdmaTxRing, "tx_done", Pme::kLow, pme_->instr_ps(m_.tx_done_instr), [] {});
}

uint64_t Mbp2Nic::rx_entry_ps() {
  // The LDMA's completion interrupts the PME; when the frame was sealed, that interrupt (and
  // the CAU's) came before the decryption, and the receive routine follows it directly.
  interrupt_next = !m_.crypto.enabled();
  return pme_->instr_ps(m_.rx_desc_instr);
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
uint32_t Mbp2Nic::adma_stage() const {
  return adma_stages + adma_->next_slot() * FramePool::kBufBytes;
}

uint64_t Mbp2Nic::adma_read(uint32_t ptask, uint32_t laddr, uint32_t n, uint32_t h, uint64_t* first_pa) {
  Mbp2Nic::AdmaRead* ar = h ? &adma_reads[h] : nullptr;
  const uint32_t pb = c_.page_bytes;
  uint64_t refill = 0;
  for (uint32_t off = 0; off < n;) {
    const uint32_t la = laddr + off;
    const uint32_t k = std::min(n - off, pb - la % pb);
    uint64_t pa = 0;
    refill += translate(ptask, la, k, &pa);
    if (!off && first_pa) *first_pa = pa;
    if (ar) ++ar->pending;
    adma_posts.push_back([this, h, pa, k] {
      return adma_ring->post(cal_.now_ps(), pa, adma_stage(), k, [this, pa, k](uint64_t s) { return host_transfer(*bus_, *em_, s, {{pa, k}}, k); },
                          [this, h](const DmaEngine::Desc& d) {
                            auto it = adma_reads.find(h);
                            if (it == adma_reads.end()) return;
                            --it->second.pending;
                            if (d.error()) it->second.failed = true;
                            const size_t o = it->second.bytes.size();
                            it->second.bytes.resize(o + d.bytes);
                            em_->read_into(d.dst, it->second.bytes.data() + o, d.bytes);
                          },
                          DmaEngine::kNoContext, ~0u, DmaEngine::Move::Back);
    });
    off += k;
  }
  return refill;
}

uint64_t Mbp2Nic::data_move_ps(const Packet& p, mbcf::ExecResult& r) {
  mbcf::WriteBuffer& wb = adma_writes;
  const mbcf::Command *rd = nullptr, *atomic = nullptr;
  if (r.outcome == mbcf::ExecResult::Outcome::Done)
    for (const mbcf::Command& c : p.cmds) {
      if (c.cmd == Cmd::Read && c.length && !rd) rd = &c;
      if (mbcf::is_atomic(c.cmd)) atomic = &c;
    }
  if (!rd && !atomic && !wb.untaken() && r.structure_reads.empty()) return 0;
  auto handle = [this] { return ++next_read ? next_read : ++next_read; };
  if (atomic) {
    if (p.cmds.size() != 1 || r.replies.size() != 1) internal_error("node " + std::to_string(node_) + ": an atomic command did not travel alone");
    wb.discard_untaken();  // (what the semantics computed: the PME computes from what the ADMA reads)
    const uint32_t h = handle();
    r.nic_reply = h;
    Mbp2Nic::AdmaRead& ar = adma_reads[h];
    ar.atomic = *atomic;
    ar.ptask = p.dst_ptask;
    ar.exec_old = r.replies[0].data;
    ar.exec_status = static_cast<mbcf::Status>(r.replies[0].status);
    ++atomics;
    uint64_t refill = 0;
    if (atomic->cmd == Cmd::CompSwap) refill += adma_read(p.dst_ptask, atomic->flag_laddr, 4, h, nullptr);
    uint64_t pa = 0;
    refill += adma_read(p.dst_ptask, atomic->laddr, atomic->length, h, &pa);  // (one page: the semantics checked)
    adma_reads[h].pa = pa;
    adma_then = [this, h](std::function<void()> resume) { atomic_step(h, std::move(resume)); };
    return refill;
  }
  // The routine's own time: the TLB refills its translations take.
  uint64_t refill = 0;
  // The FIFO and signal structures the commands act on are in the task's memory, in the host:
  // the PME has the ADMA read each (its words decide where the entry goes) before the writes it
  // computes from them. (What it read is what the semantics read: the kernel's light-weight
  // calls that change them wait for the ADMA, nic_quiesce.) All of a packet's structures are
  // read before any of its writes.
  for (const mbcf::ExecResult::StructureRead& s : r.structure_reads) {
    refill += adma_read(p.dst_ptask, s.laddr, s.bytes, 0, nullptr);
    structure_reads->inc();
  }
  auto read = [&] {
    const uint32_t h = handle();
    r.nic_reply = h;
    refill += adma_read(p.dst_ptask, rd->laddr, rd->length, h, nullptr);
  };
  for (size_t i = 0; i < wb.untaken(); ++i) {
    if (rd && i == r.read_after_writes) read();
    const mbcf::WriteBuffer::Write& w = wb.untaken_write(i);
    const uint32_t n = static_cast<uint32_t>(w.bytes.size());
    refill += translate(w.ptask, w.laddr, n, nullptr);
    adma_posts.push_back([this, pa = w.pa, n, bytes = w.bytes] {
      adma_numbers.push_back(adma_->next_number());
      return adma_ring->post(cal_.now_ps(), adma_stage(), pa, n, [this, pa, n](uint64_t s) { return host_transfer(*bus_, *em_, s, {{pa, n}}, n); },
                          [this](const DmaEngine::Desc& d) { adma_wrote(d); }, DmaEngine::kNoContext, ~0u,
                          DmaEngine::Move::Forward, bytes);
    });
  }
  if (rd && r.read_after_writes >= wb.untaken()) read();
  wb.take();
  return refill;
}

void Mbp2Nic::atomic_step(uint32_t h, std::function<void()> resume) {
  auto it = adma_reads.find(h);
  if (it == adma_reads.end()) return resume();  // (lost with the power)
  Mbp2Nic::AdmaRead& ar = it->second;
  const mbcf::Command& c = *ar.atomic;
  const uint32_t ref_bytes = c.cmd == Cmd::CompSwap ? 4 : 0;
  if (ar.pending || ar.failed || ar.bytes.size() != ref_bytes + c.length)
    internal_error("node " + std::to_string(node_) + ": the ADMA did not read an atomic's operands");
  const uint32_t ref = ref_bytes ? static_cast<uint32_t>(mbcf::load_le(ar.bytes.data(), 4)) : 0;
  ar.bytes.erase(ar.bytes.begin(), ar.bytes.begin() + ref_bytes);
  if (mutant::on(mutant::Id::AtomicFromExecute)) ar.bytes = ar.exec_old;
  std::vector<uint8_t> mem = ar.bytes;
  ar.status = mbcf::atomic_effect(c, mutant::on(mutant::Id::AtomicFromExecute) && ar.exec_status == mbcf::Status::Succeeded ? c.flag_value : ref,
                                  mem.data());
  ar.computed = true;
  if (ar.bytes != ar.exec_old || ar.status != ar.exec_status) atomic_changed->inc();
  --atomics;
  if (ar.status != mbcf::Status::Succeeded) {
    adma_drained();
    return resume();
  }
  mbcf::WriteBuffer& wb = adma_writes;
  wb.add(ar.pa, ar.ptask, c.laddr, mem.data(), c.length, true);
  wb.take();
  adma_numbers.push_back(adma_->next_number());
  const uint64_t pa = ar.pa;
  const uint32_t n = c.length;
  const uint32_t num = adma_ring->post(cal_.now_ps(), adma_stage(), pa, n, [this, pa, n](uint64_t s) { return host_transfer(*bus_, *em_, s, {{pa, n}}, n); },
                                    [this](const DmaEngine::Desc& d) { adma_wrote(d); }, DmaEngine::kNoContext, ~0u,
                                    DmaEngine::Move::Forward, mem);
  adma_ring->when_done(num, std::move(resume));
}

// The reply leaves with what the ADMA read into EM (the routine waited for it), and an atomic's
// with the status the PME computed from it.
void Mbp2Nic::nic_reply_data(uint32_t handle, std::vector<mbcf::Command>& replies) {
  auto it = adma_reads.find(handle);
  if (it == adma_reads.end()) return;  // (lost with the power; nothing is sent then)
  Mbp2Nic::AdmaRead ar = std::move(it->second);
  adma_reads.erase(it);
  if (ar.pending || ar.failed || (ar.atomic && !ar.computed))
    internal_error("node " + std::to_string(node_) + ": a reply left without the data the ADMA was to read");
  for (mbcf::Command& c : replies)
    if (c.cmd == Cmd::Reply && !c.data.empty()) {
      if (c.data.size() != ar.bytes.size()) internal_error("node " + std::to_string(node_) + ": the ADMA read a reply's data in another length");
      c.data = std::move(ar.bytes);
      if (ar.atomic) c.status = static_cast<uint32_t>(ar.status);
      return;
    }
  internal_error("node " + std::to_string(node_) + ": a READ's reply carries no data");
}

void Mbp2Nic::adma_wrote(const DmaEngine::Desc& d) {
  // Writes whose descriptors were lost (overwritten in the ring) never reached host memory.
  while (!adma_numbers.empty()) {
    const uint32_t num = adma_numbers.front();
    adma_numbers.pop_front();
    adma_writes.retire();
    if (num == d.number()) break;
  }
  adma_drained();
}

void Mbp2Nic::adma_drained() {
  if (adma_writes.size() || atomics) return;
  std::deque<std::function<void()>> w;
  w.swap(quiesce_waiters);
  for (auto& f : w) f();
  if (poll_on_drain) {
    poll_on_drain = false;
    sys_->cpu(node_).run_pollers(cal_.now_ps());
  }
}

// The kernel's light-weight calls (FIFO read, signal-flag reset) change words of structures the
// PME's commands change too (a FIFO's head and tail, a signal's running count). A command's
// writes reach host memory only when the ADMA makes them, so the kernel reads the NIC's count
// of writes still to make (a KLI word) and waits while there are any; otherwise a reset of the
// running count could come between a command that found it set and the ADMA's write of the
// entry it stored, and that entry would never invoke its program.
void Mbp2Nic::nic_quiesce(std::function<void()> fn) {
  if (!adma_writes.size() && !atomics) return fn();
  quiesce_waiters.push_back(std::move(fn));
}

void Mbp2Nic::fw_run_pollers(uint64_t at) {
  // A program polling for what the ADMA has still to write looks again once it is written.
  if (adma_writes.size() || atomics) poll_on_drain = true;
  sys_->cpu(node_).run_pollers(at);
}

nlohmann::ordered_json Mbp2Nic::summary() const {
  const double t = static_cast<double>(cal_.now_ps());
  auto frac = [t](uint64_t busy) { return t > 0 ? std::round(busy / t * 1e4) / 1e4 : 0.0; };
  nlohmann::ordered_json j;
  j["node"] = node_;
  j["pme_interrupts_per_s"] = t > 0 ? std::round(pme_->interrupts() / (t / 1e12)) : 0.0;
  nlohmann::ordered_json b;
  b["pme"] = frac(pme_->busy_ps());
  b["biu"] = frac(bus_->busy_ps());
  b["pge"] = frac(pge_->busy_ps());
  b["adma"] = frac(adma_->busy_ps());
  b["ldma_tx"] = frac(ldma_tx_->busy_ps());
  b["ldma_rx"] = frac(ldma_rx_->busy_ps());
  if (cau_) b["cau"] = frac(cau_->busy_ps());
  uint64_t em = 0;
  for (int r = 0; r < kRoutes; ++r) em += em_->busy_ps(static_cast<Route>(r));
  b["em"] = frac(em);
  j["utilisation"] = b;
  if (m_.crypto.enabled()) {
    const CryptoStats& x = cs;
    nlohmann::ordered_json c;
    c["frames_sealed"] = x.sealed->value;
    c["frames_opened"] = x.opened->value;
    c["bytes_encrypted"] = x.enc_bytes->value;
    c["bytes_decrypted"] = x.dec_bytes->value;
    c["rejected"] = x.rej_auth->value + x.rej_format->value + x.rej_plain->value + x.rej_no_sa->value;
    if (x.kx_done) c["key_exchange_us"] = x.kx_done->value ? std::round(x.kx_ps->value / x.kx_done->value / 1e3) / 1e3 : 0.0;
    j["crypto"] = c;
  }
  return j;
}

}  // namespace mbpsim::mbp2
