// mbp::System's node bus (node_bus.h): the transactions of the processors' sockets, with the
// bus's arbitration and phases, the banks' timing and the snoops of the node's L2 caches.
#include <algorithm>
#include <cstring>
#include <sstream>

#include "models/mbp/system.h"
#include "models/mbp/system_internal.h"

namespace mbpsim::mbp {

const char* to_string(BusOp::Kind k) {
  static const char* const n[] = {"Read", "ReadExclusive", "Upgrade", "ReadUncached", "WriteBack",
                                  "Request", "RequestData", "Invalidate", "Downgrade"};
  return n[static_cast<size_t>(k)];
}

tlm::tlm_command bus_command(BusOp::Kind k) {
  switch (k) {
    case BusOp::Kind::Read:
    case BusOp::Kind::ReadExclusive:
    case BusOp::Kind::ReadUncached: return tlm::TLM_READ_COMMAND;
    case BusOp::Kind::WriteBack:
    case BusOp::Kind::RequestData: return tlm::TLM_WRITE_COMMAND;
    case BusOp::Kind::Upgrade:
    case BusOp::Kind::Request:
    case BusOp::Kind::Invalidate:
    case BusOp::Kind::Downgrade: break;
  }
  return tlm::TLM_IGNORE_COMMAND;
}

uint64_t System::bank_access(Node& n, uint64_t t, uint64_t paddr) {
  const uint32_t b = bank_of(paddr);
  uint64_t& bf = n.bank_free[b];
  const uint64_t s = std::max(t, bf);
  bf = s + bank_busy_ps_;
  return s + n.bank_lat[b];
}

// A bus transaction started at t: arbitration, address and snoop phases on the address bus
// (the C-TLB watches it), then, when `data`, the block's beats on the data bus once the
// supplier (a bank when `from_memory`, else a cache) has it. Split transactions: the address
// bus is free again after the snoop phase.
uint64_t System::bus_time(Node& n, uint64_t t, bool data, bool from_memory, uint64_t paddr) {
  n.bus_tx->inc();
  uint64_t ctlb_pen = 0;
  if (n.mbp.ctlb.lookup(paddr / nc_.page_bytes, nullptr)) {
    n.ctlb_hits->inc();
  } else {
    n.ctlb_misses->inc();
    n.mbp.ctlb.insert(paddr / nc_.page_bytes, 0);
    ctlb_pen = mc_.ctlb_miss_cycles * mbp_ps_;
  }
  const uint64_t a = std::max(t, n.bus.addr_free);
  const uint64_t addr_end = a + (nc_.bus_arb_cycles + nc_.bus_addr_cycles + nc_.bus_snoop_cycles) * bus_ps_;
  n.bus.addr_free = addr_end;
  if (!data) return addr_end + ctlb_pen;
  uint64_t ready = addr_end;
  if (from_memory) ready = std::max(ready, bank_access(n, a + (nc_.bus_arb_cycles + nc_.bus_addr_cycles) * bus_ps_, paddr));
  const uint64_t d = std::max(ready, n.bus.data_free);
  n.bus.data_free = d + nc_.data_beats() * bus_ps_;
  return n.bus.data_free + ctlb_pen;
}

uint64_t& System::l2_holders(Node& n, uint64_t pblk) {
  return n.frames[(pblk >> (page_shift_ - block_shift_)) - kFrameBase]->l2_holders[pblk & (blocks_per_page_ - 1)];
}

void System::check_snoop_filter(Node& n, Frame* f, uint32_t bi) {
  const uint64_t pblk = f->frame_no * blocks_per_page_ + bi;
  uint64_t held = 0;
  for (auto& q : n.procs)
    if (q->l2.find(pblk)) held |= uint64_t{1} << q->id;
  if (held == f->l2_holders[bi]) return;
  std::ostringstream os;
  os << "snoop-filter invariant: node " << n.id << " block 0x" << std::hex << (f->npage * blocks_per_page_ + bi) * nc_.block_bytes
     << ": the filter names the L2s 0x" << f->l2_holders[bi] << ", the L2s holding it are 0x" << held;
  fail(os.str());
  throw ProtocolFailure(failure_);
}

bool System::node_l2_holds(Node& n, Frame* f, uint32_t bi) {
  if (mc_.check_invariants) check_snoop_filter(n, f, bi);
  return f->l2_holders[bi] != 0;
}

bool System::snoop(Node& n, int except, Frame* f, uint32_t bi, bool invalidate) {
  if (mc_.check_invariants) check_snoop_filter(n, f, bi);
  const uint64_t pblk = f->frame_no * blocks_per_page_ + bi;
  uint64_t& holders = f->l2_holders[bi];
  bool any = false;
  for (uint64_t m = except >= 0 ? holders & ~(uint64_t{1} << except) : holders; m; m &= m - 1) {
    Proc* q = n.procs[__builtin_ctzll(m)].get();
    node::Cache::Line* l = q->l2.find(pblk);
    if (!l) check_snoop_filter(n, f, bi);  // a filter that names an L2 without the block: the run stops, named
    any = true;
    if (l->state == kL2M) std::memcpy(mem(f, bi), q->l2.data(l), nc_.block_bytes);
    node::Cache::Line* l1 = q->l1.find(pblk);
    if (invalidate) {
      l->state = 0;
      holders &= ~(uint64_t{1} << q->id);
      if (l1) l1->state = 0;
    } else {
      l->state = kL2S;
      if (l1) l1->state = kL1Read;
    }
  }
  return any;
}

void System::bus_transport(uint32_t node, tlm::tlm_generic_payload& gp, sc_core::sc_time& delay) {
  Node& nd = *node_[node];
  BusOp* c = gp.get_extension<BusOp>();
  if (!c || gp.get_command() != bus_command(c->kind) || ((c->kind == BusOp::Kind::Request || c->kind == BusOp::Kind::RequestData) && !c->msg) ||
      (c->proc != BusOp::kNoProc && c->proc >= static_cast<uint32_t>(nc_.procs)))
    return gp.set_response_status(tlm::TLM_COMMAND_ERROR_RESPONSE);
  if (gp.get_byte_enable_ptr()) return gp.set_response_status(tlm::TLM_BYTE_ENABLE_ERROR_RESPONSE);
  if (gp.get_data_length() != nc_.block_bytes || gp.get_streaming_width() != nc_.block_bytes ||
      (gp.get_command() != tlm::TLM_IGNORE_COMMAND && !gp.get_data_ptr()))
    return gp.set_response_status(tlm::TLM_BURST_ERROR_RESPONSE);
  const uint64_t paddr = gp.get_address();
  const uint64_t fno = paddr / nc_.page_bytes;
  Frame* f = paddr % nc_.block_bytes == 0 && fno >= kFrameBase && fno - kFrameBase < nd.frames.size() ? nd.frames[fno - kFrameBase].get() : nullptr;
  if (!f) return gp.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
  const uint32_t bi = static_cast<uint32_t>((paddr % nc_.page_bytes) / nc_.block_bytes);
  const int except = c->proc == BusOp::kNoProc ? -1 : static_cast<int>(c->proc);
  const uint64_t now = now_ps();
  const uint64_t t = now + static_cast<uint64_t>(delay.value());
  uint64_t end = t;
  c->supplier = BusOp::Supplier::None;
  c->granted = 0;
  // The MBP's answer in the snoop phase: can the node serve a read (a write) of the block?
  auto node_can_read = [&] {
    if (f->home) {
      const HState s = static_cast<HState>(f->st[bi]);
      return s == HState::None || s == HState::Shared || s == HState::InvRound || s == HState::UpdRound;
    }
    const RState s = static_cast<RState>(f->st[bi]);
    return s == RState::S || s == RState::E || s == RState::SE;
  };
  auto node_can_write = [&] {
    if (f->home) return static_cast<HState>(f->st[bi]) == HState::None && !f->dir->switching && !f->dir->switch_waiting;
    return static_cast<RState>(f->st[bi]) == RState::E;
  };
  // A block from the node's memory: the home's, or the L3 copy.
  auto from_memory = [&] {
    end = bus_time(nd, t, true, true, paddr);
    (f->home ? nd.local_mem : nd.l3_hits)->inc();
    c->supplier = BusOp::Supplier::Memory;
  };
  switch (c->kind) {
    case BusOp::Kind::Read: {
      const bool other = node_l2_holds(nd, f, bi);
      f->last_use = t;
      if (!node_can_read() && !other) {
        c->supplier = BusOp::Supplier::Claimed;
        break;
      }
      c->granted = kL2S;
      if (other) {
        snoop(nd, except, f, bi, false);
        end = bus_time(nd, t, true, false, paddr);
        nd.c2c->inc();
        c->supplier = BusOp::Supplier::Cache;
      } else {
        from_memory();
        // The only copy in the node, and no other node's: exclusive.
        if (f->home ? f->proto == Protocol::Invalidate && static_cast<HState>(f->st[bi]) == HState::None
                    : static_cast<RState>(f->st[bi]) == RState::E)
          c->granted = kL2E;
      }
      std::memcpy(gp.get_data_ptr(), mem(f, bi), nc_.block_bytes);
      break;
    }
    case BusOp::Kind::ReadExclusive:
    case BusOp::Kind::Upgrade: {
      f->last_use = t;
      if (!node_can_write()) {
        c->supplier = BusOp::Supplier::Claimed;
        break;
      }
      // Every other copy goes; an M copy first lands in the frame.
      const bool other = snoop(nd, except, f, bi, true);
      if (c->kind == BusOp::Kind::Upgrade) {
        end = bus_time(nd, t, false, false, paddr);
        break;
      }
      if (other) {
        end = bus_time(nd, t, true, false, paddr);
        nd.c2c->inc();
        c->supplier = BusOp::Supplier::Cache;
      } else {
        from_memory();
      }
      c->granted = kL2E;
      std::memcpy(gp.get_data_ptr(), mem(f, bi), nc_.block_bytes);
      break;
    }
    case BusOp::Kind::ReadUncached:
      // Non-cacheable: the home's memory is the only copy, unless the page is switching.
      if (!f->home || f->dir->switching || f->dir->switch_waiting || static_cast<HState>(f->st[bi]) != HState::None) {
        c->supplier = BusOp::Supplier::Claimed;
        break;
      }
      end = bus_time(nd, t, true, true, paddr);
      nd.local_mem->inc();
      c->supplier = BusOp::Supplier::Memory;
      std::memcpy(gp.get_data_ptr(), mem(f, bi), nc_.block_bytes);
      break;
    case BusOp::Kind::WriteBack:
      std::memcpy(mem(f, bi), gp.get_data_ptr(), nc_.block_bytes);
      nd.bus_tx->inc();
      break;
    case BusOp::Kind::Request:
    case BusOp::Kind::RequestData:
      end = bus_time(nd, t, c->kind == BusOp::Kind::RequestData, false, paddr);
      send(c->msg, end);
      break;
    case BusOp::Kind::Invalidate:
    case BusOp::Kind::Downgrade:
      if (snoop(nd, except, f, bi, c->kind == BusOp::Kind::Invalidate)) {
        c->supplier = BusOp::Supplier::Cache;
        if (c->flush) end = bus_time(nd, t, true, false, paddr);
      }
      break;
  }
  delay = sc_core::sc_time::from_value(end - now);
  gp.set_response_status(tlm::TLM_OK_RESPONSE);
}

BusOp::Supplier System::bus_op(uint32_t node, BusMaster& m, BusOp::Kind k, uint64_t paddr, uint64_t& t, uint8_t* data, Msg* msg,
                               bool flush) {
  tlm::tlm_generic_payload& g = m.tx;
  g.set_command(bus_command(k));
  g.set_address(paddr);
  g.set_data_ptr(data);
  g.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
  BusOp& c = *m.cmd;
  c.kind = k;
  c.msg = msg;
  c.flush = flush;
  c.supplier = BusOp::Supplier::None;
  // A transaction starts no earlier than the present (a TLM-2.0 delay is never negative): an
  // operation retried after waiting for global time restarts its lookups from its first
  // attempt's time, but its bus transaction is issued now.
  const uint64_t now = now_ps();
  sc_core::sc_time d = sc_core::sc_time::from_value(t > now ? t - now : 0);
  m.socket->b_transport(g, d);
  if (!g.is_response_ok()) {
    std::ostringstream os;
    os << "node " << node;
    if (c.proc == BusOp::kNoProc) os << " MBP";
    else os << " processor " << c.proc;
    os << ": the node bus answered " << g.get_response_string() << " to a " << to_string(k) << " of 0x" << std::hex << paddr;
    fail(os.str());
    throw ProtocolFailure(failure_);
  }
  t = now + static_cast<uint64_t>(d.value());
  return c.supplier;
}

bool System::mbp_snoop(Node& nd, Frame* f, uint32_t bi, bool invalidate, bool flush) {
  uint64_t at = now_ps();
  return bus_op(nd.id, nd.mbp.bus, invalidate ? BusOp::Kind::Invalidate : BusOp::Kind::Downgrade, paddr_of(f, bi), at, nullptr, nullptr,
                flush) == BusOp::Supplier::Cache;
}

void System::use_bus_path(uint32_t node, uint32_t proc, mem::TargetSocket& first) {
  if (node >= nodes_ || proc >= static_cast<uint32_t>(nc_.procs))
    throw std::out_of_range("use_bus_path: no processor " + std::to_string(proc) + " at node " + std::to_string(node));
  if (sc_core::sc_get_status() != sc_core::SC_ELABORATION)
    throw std::logic_error("use_bus_path: node " + std::to_string(node) + " processor " + std::to_string(proc) +
                           ": a bus path is bound before elaboration ends");
  node_[node]->procs[proc]->bus_path = &first;
}

mem::TargetSocket& System::bus_socket(uint32_t node) { return node_.at(node)->bus.socket; }

}  // namespace mbpsim::mbp
