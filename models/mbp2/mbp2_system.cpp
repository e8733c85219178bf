#include "models/mbp2/mbp2_system.h"

#include <algorithm>

#include "models/core/error.h"

namespace mbpsim::mbp2 {

using mbcf::Cmd;
using mbcf::kNoAddr;
using mbcf::Packet;

namespace {
// The send structure lives in a page the OS gives each task next to its doorbell alias.
constexpr uint32_t kSendStructLaddr = 0xfffff000u;
}  // namespace

Mbp2System::Mbp2System(Calendar& cal, const mbcf::EtherSysConfig& ec, const Mbp2Config& c, Stats& st, uint64_t seed)
    : EtherSystem(cal, ec, st, seed),
      m_(c),
      rejected_requests_(st.counter("system.mbp2.rejected_requests", "requests dropped because their doorbell alias was not the task's own")),
      host_requests_(st.counter("system.mbp2.host_requests", "requests written and rung by user tasks (no system call)")) {
  for (uint32_t n = 0; n < ec.nodes; ++n) {
    const std::string b = "system.node" + std::to_string(n) + ".mbp2.";
    auto u = std::make_unique<Units>();
    u->bus = std::make_unique<HostBus>(c.bus, st, b + "biu");
    u->em = std::make_unique<Em>(c.em, st, b + "em");
    u->tlb = std::make_unique<Tlb>(c.tlb_entries, st, b + "tlb");
    u->pme = std::make_unique<Pme>(cal, c.pme, st, b + "pme");
    u->uli = std::make_unique<Uli>(st, b + "uli");
    u->pge = std::make_unique<DmaEngine>(c.ring_entries, c.pge_setup_ns, st, b + "pge");
    u->adma = std::make_unique<DmaEngine>(c.ring_entries, c.adma_setup_ns, st, b + "adma");
    u->ldma_tx = std::make_unique<DmaEngine>(c.ring_entries, c.ldma_setup_ns, st, b + "ldma_tx");
    u->ldma_rx = std::make_unique<DmaEngine>(c.ring_entries, c.ldma_setup_ns, st, b + "ldma_rx");
    u_.push_back(std::move(u));
  }
}

mbcf::Task& Mbp2System::create_task(uint32_t node, uint32_t ptask, uint32_t key) {
  mbcf::Task& t = EtherSystem::create_task(node, ptask, key);
  Units& u = *u_[node];
  u.uli->assign(u.next_alias++, ptask);  // the OS gives the task its alias page and tells the NIC
  return t;
}

uint32_t Mbp2System::alias_of(uint32_t node, uint32_t ptask) const {
  const int64_t a = u_[node]->uli->alias_of(ptask);
  if (a < 0) internal_error("task " + std::to_string(ptask) + " of node " + std::to_string(node) + " has no doorbell alias");
  return static_cast<uint32_t>(a);
}

// ------------------------------------------------------------------ host side

void Mbp2System::issue(uint32_t node, uint32_t dst, Packet p, uint32_t data, uint32_t, uint32_t src_laddr, std::function<void()> k) {
  const uint32_t ptask = p.src_ptask;
  host_request(node, ptask, alias_of(node, ptask), dst, std::move(p), data, src_laddr, std::move(k));
}

bool Mbp2System::ring(uint32_t node, uint32_t ptask, uint32_t alias, const mbcf::Request& r, std::function<void()> k) {
  Built b;
  if (!build_request(node, ptask, r, b)) return false;
  host_request(node, ptask, alias, b.dst, std::move(b.packet), b.data, r.src_laddr, std::move(k));
  return true;
}

void Mbp2System::host_request(uint32_t node, uint32_t ptask, uint32_t alias, uint32_t dst, Packet p, uint32_t data,
                              uint32_t src_laddr, std::function<void()> k) {
  // The user task writes its send structure (ordinary stores, user mode), then the doorbell:
  // an uncached store across the host bus, which holds the CPU until it completes.
  const uint64_t build = cycles_ps(m_.host_request_cycles + (p.cmds.size() - 1) * c_.user_build_cycles);
  compute(node, build, [this, node, ptask, alias, dst, p = std::move(p), data, src_laddr, k = std::move(k), build]() mutable {
    const uint64_t now = cal_.now_ps();
    const uint64_t done = u_[node]->bus->pio(now);
    n_[node]->kernel_ps += build + (done - now);
    host_requests_.inc();
    compute(node, done - now, std::move(k));
    cal_.at(done, [this, node, ptask, alias, dst, p = std::move(p), data, src_laddr]() mutable {
      if (u_[node]->uli->ring(alias, ptask) < 0) {
        rejected_requests_.inc();
        return;
      }
      fetch_and_send(node, dst, std::move(p), data, src_laddr);
    });
  });
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
      // The PME walks the page table in EM: the handler plus one entry read.
      uint64_t frame = vp;  // pages the OS keeps outside the task's table (the send structure)
      if (t) {
        auto it = t->pages.find(static_cast<uint32_t>(vp));
        if (it != t->pages.end()) frame = it->second.frame;
      }
      pp = frame;
      u.tlb->insert(ctx, vp, pp);
      refill += u.pme->instr_ps(m_.tlb_refill_instr) + u.pme->interrupt_ps() + u.em->access_ps(8);
      u.em->access(Route::Pme, cal_.now_ps(), 8);
    }
    if (vp == first && pa) *pa = pp * pb + laddr % pb;
  }
  return refill;
}

void Mbp2System::fetch_and_send(uint32_t node, uint32_t dst, Packet p, uint32_t data, uint32_t src_laddr) {
  Units& u = *u_[node];
  const uint32_t ptask = p.src_ptask;
  uint64_t pa_struct = 0, pa_data = 0;
  uint64_t refill = translate(node, ptask, kSendStructLaddr, m_.send_struct_bytes, &pa_struct);
  if (data > 0 && src_laddr != kNoAddr) refill += translate(node, ptask, src_laddr, data, &pa_data);
  else pa_data = pa_struct + m_.send_struct_bytes;  // the payload follows the structure
  auto pge = [this, node, dst, p = std::move(p), data, pa_struct, pa_data]() mutable {
    Units& u = *u_[node];
    const uint32_t total = m_.send_struct_bytes + data;
    const uint64_t end = u.pge->post(cal_.now_ps(), total, [&](uint64_t s) {
      uint64_t b = u.bus->dma(s, pa_struct, m_.send_struct_bytes);
      if (data > 0) b = u.bus->dma(b, pa_data, data);
      return std::max(b, u.em->access(Route::Host, s, total));
    });
    // The PGE's completion interrupts the PME, which builds the header from the image and runs
    // the protocol: the SS20 kernel's request routine, ported.
    const uint64_t hdr = proto_ps(c_.syscall_cycles + (p.cmds.size() - 1) * c_.int_command_cycles);
    cal_.at(end, [this, node, dst, p = std::move(p), hdr]() mutable {
      u_[node]->pme->run("header_build", Pme::kNormal, true, hdr, [this, node, dst, p = std::move(p)]() mutable {
        if (must_wait(node, dst, p)) {  // TH2: the request waits in EM for the window to open
          blocked_.inc();
          n_[node]->peers[dst].blocked.push_back([this, node, dst, p]() mutable { submit(node, dst, std::move(p)); });
          return;
        }
        submit(node, dst, std::move(p));
      });
    });
  };
  if (refill > 0)
    u.pme->run("tlb_refill", Pme::kHigh, false, refill, std::move(pge));
  else
    pge();
}

void Mbp2System::protocol_work(uint32_t node, uint64_t dur, std::function<void()> fn) {
  Units& u = *u_[node];
  const bool intr = u.interrupt_next;
  u.interrupt_next = false;
  u.pme->run(intr ? "receive" : "protocol", Pme::kNormal, intr, dur, std::move(fn));
}

uint64_t Mbp2System::tx_ready_ps(uint32_t node, uint32_t bytes) {
  Units& u = *u_[node];
  return u.ldma_tx->post(cal_.now_ps(), bytes, [&](uint64_t s) { return u.em->access(Route::Mac, s, bytes); });
}

void Mbp2System::tx_done(uint32_t node) {
  Units& u = *u_[node];
  u.pme->run("tx_done", Pme::kLow, true, u.pme->instr_ps(m_.tx_done_instr), [] {});
}

uint64_t Mbp2System::rx_ready_ps(uint32_t node, uint32_t len) {
  Units& u = *u_[node];
  return u.ldma_rx->post(cal_.now_ps(), len, [&](uint64_t s) { return u.em->access(Route::Mac, s, len); });
}

uint64_t Mbp2System::rx_entry_ps(uint32_t node) {
  Units& u = *u_[node];
  u.interrupt_next = true;  // the LDMA's completion interrupts the PME
  return u.pme->instr_ps(m_.rx_desc_instr);
}

uint64_t Mbp2System::data_move_ps(uint32_t node, const Packet& p, uint32_t bytes) {
  if (bytes == 0 || p.cmds.empty()) return 0;
  Units& u = *u_[node];
  const mbcf::Command& c = p.cmds[0];
  uint32_t laddr = c.laddr;
  if (c.cmd == Cmd::Reply || c.cmd == Cmd::Violation) laddr = c.data_laddr != kNoAddr ? c.data_laddr : c.status_laddr;
  if (laddr == kNoAddr) laddr = 0;
  uint64_t pa = 0;
  const uint64_t now = cal_.now_ps();
  const uint64_t refill = translate(node, p.dst_ptask, laddr, bytes, &pa);
  // The PME starts the ADMA and waits for it before answering (a status reply must follow the
  // data into the host's memory).
  const uint64_t end = u.adma->post(now + refill, bytes, [&](uint64_t s) {
    return std::max(u.bus->dma(s, pa, bytes), u.em->access(Route::Host, s, bytes));
  });
  return end - now;
}

}  // namespace mbpsim::mbp2
