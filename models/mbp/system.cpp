// mbp::System: construction, the node modules and their banks, the event calendar, pages
// (placement, frames, translation). Processors, caches and the node bus are in processor.cpp;
// the MBP in mbp.cpp (messages, remote controller, checkers) and mbp_home.cpp (home controller).
#include "models/mbp/system.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <sstream>
#include <tuple>

#include "models/core/error.h"
#include "models/core/mutant.h"
#include "models/mbp/system_internal.h"

namespace mbpsim::mbp {


void System::footprint(const node::NodeConfig& nc, const MbpConfig& mc, uint64_t nodes, const AddressUse& use, MemoryForecast& f) {
  const uint64_t procs = nodes * static_cast<uint64_t>(nc.procs);
  const uint64_t busy = use.busy_procs ? std::min(use.busy_procs, procs) : procs;
  // Nodes with a busy processor, and the busy processors on each (the most loaded node's).
  const uint64_t busy_nodes = std::min(nodes, busy), per_node = (busy + nodes - 1) / nodes;
  // The caches: an array's page becomes resident when a line in it is filled, or, on hosts
  // whose kernel maps no shared zero page, as soon as one is looked up. A snoop looks up only
  // the caches the snoop filter names, so each cache holds pages for its own processor's
  // blocks; but mbp.check_invariants checks the filter against every cache of the node at each
  // snoop, and then, on such a host, each holds pages for every busy processor of its node.
  const uint64_t page = nc.page_bytes, bpp = page / nc.block_bytes;
  const uint64_t priv_pages = (use.private_bytes + page - 1) / page, shared_pages = (use.shared_bytes + page - 1) / page;
  const uint64_t looked_up = reads_make_pages_resident() && mc.check_invariants ? per_node : 1;
  const uint64_t node_blocks = use.known ? (looked_up * priv_pages + shared_pages) * bpp : ~0ull >> 8;
  const uint64_t cached_procs = use.known ? busy_nodes * nc.procs : procs;
  uint64_t worst = 0;
  uint64_t b = node::Cache::footprint_bytes(nc.l1_bytes, nc.l1_assoc, nc.block_bytes, node_blocks, &worst);
  f.add("L1 caches", cached_procs * b + (procs - cached_procs) * node::Cache::footprint_bytes(nc.l1_bytes, nc.l1_assoc, nc.block_bytes, 0),
        "node.l1_bytes x node.procs x nodes", procs * worst);
  b = node::Cache::footprint_bytes(nc.l2_bytes, nc.l2_assoc, nc.block_bytes, node_blocks, &worst);
  f.add("L2 caches", cached_procs * b + (procs - cached_procs) * node::Cache::footprint_bytes(nc.l2_bytes, nc.l2_assoc, nc.block_bytes, 0),
        "node.l2_bytes x node.procs x nodes", procs * worst);
  // A processor: its module and its caches' and TLB's, the TLB's entries, its bus socket and the
  // transaction's extension, the write buffer; the caches' and TLB's statistics.
  const uint64_t proc = module_bytes<Proc>(24) + 3 * module_overhead_bytes(28) + node::Tlb::footprint_bytes(nc.ptlb_entries) +
                        kInitiatorSocketHeap + heap_bytes(sizeof(BusOp)) +
                        vector_bytes<WbEntry>(mc.write_buffer) + vector_bytes<std::unique_ptr<Proc>>(nc.procs) / nc.procs +
                        6 * Stats::bytes_per_stat(32);
  f.add("processors", procs * proc, "node.procs x nodes, mbp.write_buffer");
  // A node: its module with the bus, the MBP (C-TLB, N-TLB, directory) and the banks with
  // their sockets; its statistics.
  const uint64_t banks = static_cast<uint64_t>(nc.banks);
  // The bus's target socket, the MBP's initiator and its transaction's extension.
  const uint64_t node_bytes = module_bytes<Node>(12) + 4 * module_overhead_bytes(20) + node::Tlb::footprint_bytes(mc.ctlb_entries) +
                              kTargetSocketHeap + kInitiatorSocketHeap + heap_bytes(sizeof(BusOp)) +
                              node::Tlb::footprint_bytes(mc.ntlb_entries) +
                              banks * (module_bytes<mem::Memory>(18) + kTargetSocketHeap + heap_bytes(sizeof(NodeBus::Socket<Node>)) +
                                       kInitiatorSocketHeap + module_overhead_bytes(24) + 4 * sizeof(uint64_t)) +
                              21 * Stats::bytes_per_stat(32);
  f.add("nodes", nodes * node_bytes, "nodes, node.banks, mbp.ctlb_entries, mbp.ntlb_entries");
  if (!use.known) return;
  // Pages: a node holds a frame for each page its processors touch, as the page's home or as
  // an L3 copy (at most node.l3_pages of those); each home page has a directory entry.
  const uint64_t home_pages = busy * priv_pages + shared_pages;
  uint64_t node_pages = per_node * priv_pages + shared_pages;
  const uint64_t homes_per_node = (home_pages + busy_nodes - 1) / busy_nodes;
  if (nc.l3_pages && node_pages > homes_per_node + nc.l3_pages) node_pages = homes_per_node + nc.l3_pages;
  const uint64_t spans = std::min<uint64_t>(banks, page / std::max<uint64_t>(nc.bank_interleave_bytes, nc.block_bytes));
  const uint64_t frame = heap_bytes(sizeof(Frame)) + vector_bytes<uint8_t*>(spans) + vector_bytes<uint8_t>(bpp) + vector_bytes<uint64_t>(bpp) +
                         spans * (heap_bytes(page / spans) + 2 * sizeof(void*)) + 4 * sizeof(uint64_t);
  f.add("memory pages", busy_nodes * node_pages * frame, "node.page_bytes x pages touched per node x nodes, node.l3_pages");
  // A directory entry; its queue of waiting requests (a std::deque) holds a map and a block.
  const uint64_t entry = heap_bytes(sizeof(DirPage)) + deque_bytes<Msg*>() + sizeof(void*) * 3 / 2 + vector_bytes<uint32_t>(bpp) +
                         (mc.check_invariants ? bpp * (heap_bytes(nc.block_bytes) + heap_bytes(48) + sizeof(void*)) : 0);
  f.add("directory entries", home_pages * entry, "pages touched, mbp.check_invariants");
}

System::System(sc_core::sc_module_name name, const node::NodeConfig& nc, const MbpConfig& mc,
               net::Network& net, Stats& stats, uint64_t seed)
    : sc_core::sc_module(name), nc_(nc), mc_(mc), net_(net), stats_(stats), seed_(seed),
      dirfmt_(net.topology(), mc.pointers, mc.fullmap_unicast_max), nodes_(net.topology().nodes()),
      placement_rng_(seed, "mbp.placement") {
  blocks_per_page_ = nc_.page_bytes / nc_.block_bytes;
  cpu_ps_ = nc_.cpu_ps();
  block_shift_ = static_cast<uint32_t>(__builtin_ctz(nc_.block_bytes));
  page_shift_ = static_cast<uint32_t>(__builtin_ctz(nc_.page_bytes));
  for (uint32_t g = 0; g < kGapTable; ++g) gap_ps_[g] = compute_ps(g);
  bus_ps_ = nc_.bus_ps();
  mbp_ps_ = mc_.clock_ps();
  net_ps_ = net.period().value();
  quantum_ps_ = static_cast<uint64_t>(nc_.quantum_ns * 1000.0);
  bank_lat_ps_ = static_cast<uint64_t>(nc_.bank_latency_ns * 1000.0);
  bank_busy_ps_ = static_cast<uint64_t>(nc_.bank_busy_ns * 1000.0);
  colors_ = std::max<uint64_t>(1, std::max(nc_.l1_bytes / nc_.l1_assoc, nc_.l2_bytes / nc_.l2_assoc) / nc_.page_bytes);
  const uint32_t flit_bytes = static_cast<uint32_t>(net.config().flit_bits / 8);
  data_flits_ = (nc_.block_bytes + flit_bytes - 1) / flit_bytes;
  // The bus moves a block from one bank: a bank's stripe is at least a block.
  unit_ = std::max<uint32_t>(nc_.bank_interleave_bytes, nc_.block_bytes);
  unit_shift_ = static_cast<uint32_t>(__builtin_ctz(unit_));
  spans_ = std::min<uint32_t>(static_cast<uint32_t>(nc_.banks), static_cast<uint32_t>(nc_.page_bytes / unit_));
  if (spans_ == 0 || (spans_ & (spans_ - 1)))
    throw std::logic_error("mbp::System: banks a page spans must be a power of two (node.banks, node.page_bytes)");
  spans_shift_ = static_cast<uint32_t>(__builtin_ctz(spans_));
  share_bytes_ = static_cast<uint32_t>(nc_.page_bytes / spans_);

  // The nodes are the root's children, beside this module and the network (system.node<n>).
  std::optional<Within> beside;
  if (auto* up = dynamic_cast<sc_core::sc_module*>(get_parent_object())) beside.emplace(*up);
  for (uint32_t n = 0; n < nodes_; ++n) {
    auto nd = std::make_unique<Node>(("node" + std::to_string(n)).c_str(), *this, n, nc_, mc_);
    const std::string pre = std::string(nd->name()) + ".";
    // Each processor's caches and TLB count under their own modules (system.node3.proc1.l1.hits).
    for (auto& p : nd->procs) {
      p->l1_hits = &stats.counter(stat_name(p->l1, "hits"), "loads and stores of the processor that hit in its L1");
      p->l1_misses = &stats.counter(stat_name(p->l1, "misses"), "loads and stores of the processor that missed in its L1");
      p->l2_hits = &stats.counter(stat_name(p->l2, "hits"), "L1 misses that hit in the processor's L2");
      p->l2_misses = &stats.counter(stat_name(p->l2, "misses"), "L1 misses that missed in the L2 too (went to the node bus)");
      p->ptlb_hits = &stats.counter(stat_name(p->ptlb, "hits"), "translations found in the processor's TLB");
      p->ptlb_misses = &stats.counter(stat_name(p->ptlb, "misses"), "translations the processor's TLB had to refill");
    }
    nd->node_hits = &stats.counter(pre + "node.served", "operations served inside the node (by its memory, its L3 copy or another cache), not by the MBP");
    nd->local_mem = &stats.counter(pre + "node.local_memory", "misses served by the node's own memory (the node is the page's home)");
    nd->l3_hits = &stats.counter(pre + "node.l3_hits", "misses served by the node's L3 copy of a remote page");
    nd->c2c = &stats.counter(pre + "node.cache_to_cache", "misses served by another processor's cache on the node bus");
    nd->remote = &stats.counter(pre + "node.via_mbp", "operations that needed the MBP: a message to another node");
    nd->bus_tx = &stats.counter(pre + "bus.transactions", "node bus transactions (misses, write-backs, the MBP's accesses)");
    nd->bus_snoop_inv = &stats.counter(pre + "bus.mbp_snoops", "invalidations or updates the MBP put on the node bus that found a copy in a cache");
    nd->ctlb_hits = &stats.counter(pre + "mbp.ctlb.hits", "C-TLB lookups that hit (physical page to network page)");
    nd->ctlb_misses = &stats.counter(pre + "mbp.ctlb.misses", "C-TLB lookups that missed (refilled from memory)");
    nd->ntlb_hits = &stats.counter(pre + "mbp.ntlb.hits", "N-TLB lookups that hit (network page to frame, for arriving messages)");
    nd->ntlb_misses = &stats.counter(pre + "mbp.ntlb.misses", "N-TLB lookups that missed (refilled from memory)");
    nd->wb_forwards = &stats.counter(pre + "write_buffer.forwards", "loads answered from the processor's own write buffer");
    nd->wb_stores = &stats.counter(pre + "write_buffer.stores", "stores to update or non-cacheable pages buffered for the MBP");
    nd->l3_evictions = &stats.counter(pre + "l3.page_evictions", "L3 pages (copies of remote pages) evicted to make room");
    nd->l3_writebacks = &stats.counter(pre + "l3.block_writebacks", "exclusive blocks written back to their home by an L3 eviction");
    nd->l3_over = &stats.counter(pre + "l3.over_capacity", "remote pages mapped beyond node.l3_pages because no page could be evicted");
    nd->mbp_msgs_in = &stats.counter(pre + "mbp.messages_in", "messages the node's MBP handled");
    nd->round_in = &stats.counter(pre + "mbp.round_deliveries", "invalidations, updates and page invalidations of rounds delivered to this node");
    nd->mbp_queue_ps = &stats.histogram(pre + "mbp.queue_wait_ps", "ps a message waited for the MBP's engine of its bank");
    // The TLBs' hit rates (null without lookups: nothing measured).
    for (const auto& [tlb, what, hits, misses] :
         {std::tuple{"ctlb", "C-TLB", nd->ctlb_hits, nd->ctlb_misses}, std::tuple{"ntlb", "N-TLB", nd->ntlb_hits, nd->ntlb_misses}})
      stats.formula(
          pre + "mbp." + tlb + ".hit_rate",
          [h = hits, m = misses] {
            const double a = static_cast<double>(h->value + m->value);
            return a ? h->value / a : std::numeric_limits<double>::quiet_NaN();
          },
          std::string("fraction of ") + what + " lookups that hit (null without lookups)", "fraction");
    node_.push_back(std::move(nd));
  }
  beside.reset();
  const std::string g = std::string(this->name()) + ".";
  st_.loads = &stats.counter(g + "ops.loads", "loads the processors completed");
  st_.stores = &stats.counter(g + "ops.stores", "stores the processors completed");
  st_.atomics = &stats.counter(g + "ops.atomics", "atomic operations the processors completed");
  st_.fences = &stats.counter(g + "ops.fences", "fences the processors completed");
  st_.switches_requested = &stats.counter(g + "ops.protocol_switch_requests", "protocol switches processors asked of a page's home");
  for (int i = 0; i < kNumMsgTypes; ++i)
    st_.msgs[i] = &stats.counter(g + "messages." + to_string(static_cast<MsgType>(i)),
                                 std::string("MBP messages of type ") + to_string(static_cast<MsgType>(i)) + " sent");
  static const char* pn[3] = {"invalidate", "update", "noncacheable"};
  static const char* fn[3] = {"hbitmap", "pointers", "fullmap"};
  for (int i = 0; i < 3; ++i) {
    // Messages the MBPs inject (a multicast counts once, each acknowledgement once) per request
    // the home serves, by the protocol they were sent under.
    st_.proto_msgs[i] = &stats.counter(g + "per_protocol." + pn[i] + ".messages",
                                       std::string("messages the MBPs injected under the ") + pn[i] + " protocol (a multicast once, each acknowledgement once)");
    st_.proto_actions[i] = &stats.counter(g + "per_protocol." + pn[i] + ".actions",
                                          std::string("requests the homes served under the ") + pn[i] + " protocol");
    Counter* m = st_.proto_msgs[i];
    Counter* a = st_.proto_actions[i];
    stats.formula(g + "per_protocol." + pn[i] + ".messages_per_action",
                  [m, a] { return a->value ? static_cast<double>(m->value) / a->value : std::numeric_limits<double>::quiet_NaN(); },
                  "messages per request served (null without requests)", "messages/request");
    st_.dir_lookups[i] = &stats.counter(g + "directory.lookups." + fn[i],
                                        std::string("directory lookups at homes of pages in the ") + fn[i] + " format");
  }
  for (int s = 0; s < kNumHStates; ++s)
    for (int e = 0; e < kNumHEvents; ++e)
      st_.home_trans[s][e] = home_action(static_cast<HState>(s), static_cast<HEvent>(e)) == HAction::Undefined
                                 ? nullptr
                                 : &stats.counter(g + "transitions.home." + to_string(static_cast<HState>(s)) +
                                                      "." + to_string(static_cast<HEvent>(e)),
                                                  "times the home table's row for this state and event ran (protocol.cpp)");
  for (int s = 0; s < kNumRStates; ++s)
    for (int e = 0; e < kNumREvents; ++e)
      st_.remote_trans[s][e] = remote_row(static_cast<RState>(s), static_cast<REvent>(e)) == nullptr
                                   ? nullptr
                                   : &stats.counter(g + "transitions.remote." + to_string(static_cast<RState>(s)) +
                                                        "." + to_string(static_cast<REvent>(e)),
                                                    "times the remote table's row for this state and event ran (protocol.cpp)");
  st_.rounds_mc = &stats.counter(g + "rounds.multicast", "invalidation or update rounds the homes sent as one multicast");
  st_.rounds_uc = &stats.counter(g + "rounds.unicast", "rounds the homes sent as unicasts (pointer or full-map directory entries)");
  st_.deliveries = &stats.counter(g + "rounds.deliveries", "round messages delivered to nodes (a multicast counts once per receiver)");
  st_.deliveries_no_copy = &stats.counter(g + "rounds.deliveries_without_copy", "round deliveries to nodes that held no copy (the directory's imprecision)");
  st_.acks_held = &stats.counter(g + "rounds.acks_from_holders", "round deliveries to nodes that held a copy");
  st_.combined_acks = &stats.counter(g + "rounds.acks_at_home", "combined acknowledgements of multicast rounds that reached the home");
  st_.unicast_acks = &stats.counter(g + "rounds.unicast_acks", "acknowledgements of unicast rounds that reached the home");
  st_.protocol_switches = &stats.counter(g + "protocol_switches", "protocol switches of a page completed");
  st_.pointer_overflows = &stats.counter(g + "directory.pointer_overflows", "pointer directory entries that overflowed into the coarse bitmap");
  st_.coarsen_deferred = &stats.counter(g + "directory.coarsening_deferred", "requests deferred because adding them would coarsen the sharer set during a round");
  st_.nacks = &stats.counter(g + "nacks", "exclusive requests refused (Nack) because the page is not under the invalidate protocol");
  st_.use_once_fills = &stats.counter(g + "use_once_fills", "blocks read once without being cached (the block was in a round)");
  st_.page_invalidations = &stats.counter(g + "page_invalidations", "page-invalidation rounds (protocol switches)");
  st_.recalls = &stats.counter(g + "recalls", "recalls of an owned block sent by its home");
  st_.stale_writebacks = &stats.counter(g + "stale_writebacks", "write-backs that reached the home after a recall had brought the data");
  st_.checks_swmr = &stats.counter(g + "checkers.swmr_checks", "single-writer/multiple-reader checks made (mbp.check_invariants)");
  st_.checks_value = &stats.counter(g + "checkers.value_checks", "loaded values checked against the last store (mbp.check_invariants)");
  st_.checks_update = &stats.counter(g + "checkers.update_copy_checks", "update-protocol copies checked equal to the home's (mbp.check_invariants)");
  st_.checks_round_acks = &stats.counter(g + "checkers.round_ack_checks", "completed rounds whose combined acknowledgements were checked against the deliveries (mbp.check_invariants)");
  st_.fanout = &stats.histogram(g + "rounds.fanout", "nodes a round was sent to", "nodes");
  st_.op_latency_remote = &stats.histogram(g + "ops.latency_via_mbp_ps", "ps from issue to completion of operations that needed the MBP");
  st_.round_latency = &stats.histogram(g + "rounds.latency_ps", "ps from a round's start at the home to its last acknowledgement");
  stats.formula(
      g + "transitions.defined", [] { return static_cast<double>(kNumHomeRows + kNumRemoteRows); },
      "rows of the home and remote tables (defined state x event pairs)", "rows");
  stats.formula(
      g + "transitions.exercised",
      [this] {
        double n = 0;
        for (auto& row : st_.home_trans)
          for (Counter* c : row) n += c && c->value;
        for (auto& row : st_.remote_trans)
          for (Counter* c : row) n += c && c->value;
        return n;
      },
      "rows of the tables the run exercised at least once", "rows");

  SC_METHOD(process);
  sensitive << wake_;
  dont_initialize();
}

System::~System() {
  for (auto& kv : rounds_) delete kv.second;
}

void System::use_bank(uint32_t node, uint32_t bank, mem::TargetSocket& m) {
  if (node >= nodes_ || bank >= static_cast<uint32_t>(nc_.banks))
    throw std::out_of_range("use_bank: no bank " + std::to_string(bank) + " at node " + std::to_string(node));
  if (sc_core::sc_get_status() != sc_core::SC_ELABORATION || node_[node]->bank_seen[bank])
    throw std::logic_error("use_bank: node " + std::to_string(node) + " bank " + std::to_string(bank) +
                           ": a bank is replaced before elaboration ends");
  node_[node]->bank_target[bank] = &m;
}

mem::TargetSocket& System::bank(uint32_t node, uint32_t bank) { return *node_[node]->bank_target.at(bank); }

void System::set_driver(node::ProcDriver* d) {
  for (auto& nd : node_)
    for (auto& p : nd->procs)
      if (!p->port) p->driver = d;
}

node::ProcDriver* System::driver(uint32_t node, uint32_t proc) const {
  if (node >= nodes_ || proc >= static_cast<uint32_t>(nc_.procs))
    throw std::out_of_range("driver: no processor " + std::to_string(proc) + " at node " + std::to_string(node));
  return node_[node]->procs[proc]->driver;
}

ProcPort& System::processor_port(uint32_t node, uint32_t proc) {
  if (node >= nodes_ || proc >= static_cast<uint32_t>(nc_.procs))
    throw std::out_of_range("processor_port: no processor " + std::to_string(proc) + " at node " + std::to_string(node));
  Proc& p = *node_[node]->procs[proc];
  if (!p.port) {
    if (sc_core::sc_get_status() != sc_core::SC_ELABORATION)
      throw std::logic_error("processor_port: node " + std::to_string(node) + " processor " + std::to_string(proc) +
                             ": a port is made before elaboration ends");
    Within in(p);
    p.port = std::make_unique<ProcPort>("port", *this, node, proc, nc_.block_bytes);
    p.driver = p.port.get();
  }
  return *p.port;
}

void System::before_end_of_elaboration() {
  for (auto& nd : node_) {
    for (size_t b = 0; b < nd->to_bank.size(); ++b) nd->to_bank[b]->bind(*nd->bank_target[b]);
    for (auto& p : nd->procs) p->bus.socket.bind(p->bus_path ? *p->bus_path : static_cast<mem::TargetSocket&>(nd->bus.socket));
    nd->mbp.bus.socket.bind(nd->bus.socket);
  }
}

// ---------------------------------------------------------------- event calendar

void System::schedule(uint64_t t, EvKind kind, uint32_t node, uint32_t arg, Msg* msg) {
  const uint64_t now = now_ps();
  if (t < now) t = now;
  if (cal_.push(t, Ev{kind, node, arg, msg})) wake_.notify(sc_core::sc_time::from_value(t - now));
}

void System::process() {
  const uint64_t now = now_ps();
  Ev e{};
  while (failure_.empty() && cal_.pop_due(now, e)) {
    ++events_;
    switch (e.kind) {
      case kProcResume:
        try {
          run_proc(*node_[e.node]->procs[e.arg], now);
        } catch (const ProtocolFailure&) {
        }
        break;
      case kHandle: handle(e.node, e.msg, nullptr); break;
      case kSend: send(e.msg, now); break;
      case kWake: wake(e.node, e.arg); break;
      case kHandleMc:
        handle(e.node, e.msg, mc_pkts_[e.arg].get());
        mc_free_.push_back(e.arg);
        break;
      case kWatchdog: {
        watchdog_armed_ = false;
        const uint64_t limit = mc_.watchdog_ns * 1000;
        uint64_t oldest = UINT64_MAX;
        for (auto& nd : node_)
          for (auto& p : nd->procs)
            if (p->waiting != WaitKind::None) oldest = std::min(oldest, p->wait_since);
        if (oldest == UINT64_MAX) break;
        if (now - oldest >= limit) {
          fail("watchdog: a processor operation has waited " + std::to_string((now - oldest) / 1000) +
               " ns (mbp.watchdog_ns = " + std::to_string(mc_.watchdog_ns) + ")");
          break;
        }
        watchdog_armed_ = true;
        schedule(oldest + limit, kWatchdog, 0);
        break;
      }
    }
  }
  if (!cal_.empty() && failure_.empty()) wake_.notify(sc_core::sc_time::from_value(cal_.next_ps() - now));
}

void System::start() {
  for (auto& nd : node_)
    for (auto& p : nd->procs) resume_later(*p, 0);
}

void System::wake(uint32_t node, uint32_t proc) {
  Proc& p = *node_[node]->procs[proc];
  if (!p.sleeping) return;
  p.sleeping = false;
  resume_later(p, std::max(p.t, now_ps()));
}

void System::resume_later(Proc& p, uint64_t t) {
  if (p.scheduled) return;
  p.scheduled = true;
  schedule(t, kProcResume, p.node, p.id);
}

void System::fail(const std::string& what) {
  if (!failure_.empty()) return;
  failure_ = what;
  net_.invariant_failed(what);
}

void System::undefined(const char* ctrl, uint32_t node, uint64_t nblk, const char* state, const char* event) {
  std::ostringstream os;
  os << "undefined transition in the " << ctrl << " controller of node " << node << ": block 0x" << std::hex
     << nblk * nc_.block_bytes << std::dec << " in state " << state << " got event " << event;
  fail(os.str());
  throw ProtocolFailure(failure_);
}

std::string System::dump_outstanding(size_t max) const {
  std::vector<const Proc*> w;
  for (auto& nd : node_)
    for (auto& p : nd->procs)
      if (p->waiting != WaitKind::None || !p->wb.empty()) w.push_back(p.get());
  std::sort(w.begin(), w.end(), [](const Proc* a, const Proc* b) { return a->wait_since < b->wait_since; });
  std::ostringstream os;
  os << "oldest outstanding processor operations (" << w.size() << " processors busy):\n";
  for (size_t i = 0; i < w.size() && i < max; ++i) {
    const Proc& p = *w[i];
    os << "  node " << p.node << " proc " << p.id << ": ";
    if (p.waiting != WaitKind::None)
      os << "waiting since " << p.wait_since / 1000 << " ns (" << p.wait_why << ") on op kind "
         << static_cast<int>(p.op.kind) << " at 0x" << std::hex << p.op.addr << std::dec;
    os << "; write buffer " << p.wb.size() << " entries\n";
    if (p.waiting != WaitKind::None) {
      const uint64_t nblk = p.op.addr / nc_.block_bytes;
      const uint64_t page = p.op.addr / nc_.page_bytes;
      if (const Frame* f = node_[p.node]->pt.get(page)) {
        const uint32_t bi = static_cast<uint32_t>(nblk % blocks_per_page_);
        os << "    block state at node " << p.node << ": "
           << (f->home ? to_string(static_cast<HState>(f->st[bi])) : to_string(static_cast<RState>(f->st[bi])))
           << "; home node " << f->home_node;
        if (const Frame* h = node_[f->home_node]->pt.get(page)) os << " state " << to_string(static_cast<HState>(h->st[bi]));
        os << "\n";
      }
    }
  }
  return os.str();
}

nlohmann::ordered_json System::summary_figures() const {
  uint64_t l1h = 0, l1m = 0, l2h = 0, l2m = 0, node = 0, remote = 0;
  for (auto& nd : node_) {
    for (auto& p : nd->procs) {
      l1h += p->l1_hits->value;
      l1m += p->l1_misses->value;
      l2h += p->l2_hits->value;
      l2m += p->l2_misses->value;
    }
    node += nd->node_hits->value;
    remote += nd->remote->value;
  }
  // null when there was no access to count (never a 0 that was not measured)
  auto rate = [](uint64_t a, uint64_t b) {
    return a + b ? nlohmann::ordered_json(static_cast<double>(a) / (a + b)) : nlohmann::ordered_json(nullptr);
  };
  uint64_t exercised = 0;
  for (auto& row : st_.home_trans)
    for (Counter* c : row) exercised += c && c->value;
  for (auto& row : st_.remote_trans)
    for (Counter* c : row) exercised += c && c->value;
  nlohmann::ordered_json j;
  uint64_t wbs = 0;
  for (auto& nd : node_) wbs += nd->wb_stores->value;
  j["l1_hit_rate"] = rate(l1h, l1m);
  j["l2_hit_rate"] = rate(l2h, l2m);
  j["served_in_node"] = node;
  j["served_via_mbp"] = remote;
  j["buffered_stores"] = wbs;  // update and non-cacheable pages: not in the hit rates
  j["coherence_rounds"] = st_.rounds_mc->value + st_.rounds_uc->value;
  j["multicast_rounds"] = st_.rounds_mc->value;
  j["round_deliveries"] = st_.deliveries->value;
  j["deliveries_without_copy"] = st_.deliveries_no_copy->value;
  j["acks_at_home"] = st_.combined_acks->value + st_.unicast_acks->value;
  j["protocol_switches"] = st_.protocol_switches->value;
  j["transitions_exercised"] = exercised;
  j["transitions_defined"] = kNumHomeRows + kNumRemoteRows;
  return j;
}

// ---------------------------------------------------------------- pages and translation

uint32_t System::home_of(uint64_t page) {
  auto it = home_.find(page);
  if (it != home_.end()) return it->second;
  return UINT32_MAX;
}

System::Frame* System::frame_for(uint32_t n, uint64_t page, bool create) {
  Node& nd = *node_[n];
  if (nd.last_frame && nd.last_frame->npage == page) return nd.last_frame;
  if (Frame* f = nd.pt.get(page)) return nd.last_frame = f;
  if (!create) return nullptr;
  uint32_t home = home_of(page);
  if (home == UINT32_MAX) {
    switch (mc_.home_policy) {
      case HomePolicy::Interleave: home = static_cast<uint32_t>(page % nodes_); break;
      case HomePolicy::FirstTouch: home = n; break;
      case HomePolicy::Block: home = static_cast<uint32_t>((page / mc_.block_pages) % nodes_); break;
    }
    home_[page] = home;
  }
  Frame* hf = nullptr;
  if (home != n) {
    hf = frame_for(home, page, true);
    if (nc_.l3_pages && nd.remote_frames >= nc_.l3_pages && !evict_page(n)) nd.l3_over->inc();
    ++nd.remote_frames;
  }
  auto f = std::make_unique<Frame>();
  f->npage = page;
  f->node = n;
  f->home_node = home;
  f->home = home == n;
  // Page colouring, as the kernels of the time did (IRIX): a page gets a frame of the same
  // colour (its index bits in the physically indexed caches), so consecutive pages do not
  // conflict in L1 and L2. Frame numbers still differ from node to node (Fig. 2.4).
  const uint64_t color = page % colors_;
  if (nd.color_used.empty()) {
    nd.color_used.assign(colors_, 0);
    nd.free_frames.resize(colors_);
  }
  if (!nd.free_frames[color].empty()) {
    f->frame_no = nd.free_frames[color].back();
    nd.free_frames[color].pop_back();
  } else {
    f->frame_no = kFrameBase + color + colors_ * nd.color_used[color]++;
  }
  if (nd.frames.size() <= f->frame_no - kFrameBase) nd.frames.resize(f->frame_no - kFrameBase + 1);
  attach_memory(nd, f.get());
  f->st.assign(blocks_per_page_, 0);  // HState::None or RState::I
  f->l2_holders.assign(blocks_per_page_, 0);
  if (f->home) {
    // The page's protocol and directory format are drawn once, from the run seed and the
    // page number, so they do not depend on which node touches the page first.
    uint64_t x = seed_ ^ (page * 0x9e3779b97f4a7c15ull);
    auto pick = [&](const std::vector<double>& w) {
      double sum = 0;
      for (double v : w) sum += v;
      double u = static_cast<double>(splitmix64(x) >> 11) * 0x1.0p-53 * sum;
      for (int i = 0; i < 3; ++i) {
        if (u < w[i]) return i;
        u -= w[i];
      }
      return w[2] > 0 ? 2 : w[1] > 0 ? 1 : 0;
    };
    f->proto = static_cast<Protocol>(pick(mc_.protocol_mix));
    f->fmt = static_cast<DirFormat>(pick(mc_.format_mix));
    const uint64_t addr = page * nc_.page_bytes;
    for (const Region& r : mc_.regions)
      if (addr >= r.base && addr - r.base < r.bytes) {
        if (r.protocol >= 0) f->proto = static_cast<Protocol>(r.protocol);
        if (r.format >= 0) f->fmt = static_cast<DirFormat>(r.format);
        break;
      }
    f->owner.assign(blocks_per_page_, 0);
    f->dir = nd.mbp.dir.add(dirfmt_, f->fmt);
    if (mc_.check_invariants && f->proto == Protocol::Invalidate)
      for (uint32_t b = 0; b < blocks_per_page_; ++b)
        golden_[page * blocks_per_page_ + b].assign(nc_.block_bytes, 0);
  } else {
    f->proto = hf->proto;
    f->fmt = hf->fmt;
  }
  Frame* raw = f.get();
  nd.frames[raw->frame_no - kFrameBase] = std::move(f);
  nd.pt.put(page, raw);
  return raw;
}

System::Frame* System::home_frame(uint64_t page) {
  uint32_t h = home_of(page);
  if (h == UINT32_MAX) {
    // Not touched yet: decide the home as if node 0 touched it (first_touch), without
    // mapping the page at node 0 unless it is the home.
    h = mc_.home_policy == HomePolicy::Interleave ? static_cast<uint32_t>(page % nodes_)
        : mc_.home_policy == HomePolicy::Block    ? static_cast<uint32_t>((page / mc_.block_pages) % nodes_)
                                                  : 0;
    home_[page] = h;
  }
  return frame_for(h, page, true);
}

Protocol System::protocol_of(uint64_t page) { return home_frame(page)->proto; }
DirFormat System::format_of(uint64_t page) { return home_frame(page)->fmt; }

bool System::evict_page(uint32_t n) {
  Node& nd = *node_[n];
  Frame* v = nullptr;
  for (auto& fr : nd.frames) {
    if (!fr || fr->home) continue;
    bool pending = false;
    for (uint8_t st : fr->st) {
      const RState s = static_cast<RState>(st);
      pending |= s == RState::IS || s == RState::ISP || s == RState::IE || s == RState::SE;
    }
    if (!pending && (!v || fr->last_use < v->last_use)) v = fr.get();
  }
  if (!v) return false;
  const uint64_t now = now_ps();
  for (uint32_t bi = 0; bi < blocks_per_page_; ++bi) {
    const RState s = static_cast<RState>(v->st[bi]);
    if (s == RState::I) continue;
    mbp_snoop(nd, v, bi, true);  // the node's caches lose the page; an M line lands in the frame
    if (s != RState::E) continue;
    const uint64_t nblk = v->npage * blocks_per_page_ + bi;
    Msg* m = new_msg(MsgType::PutX, n, v->home_node);
    m->requester = n;
    m->nblk = nblk;
    m->proto = v->proto;
    std::memcpy(m->data, mem(v, bi), nc_.block_bytes);
    nd.wb_pending[nblk].data.assign(m->data, m->data + nc_.block_bytes);
    nd.l3_writebacks->inc();
    uint64_t at = now;
    bus_op(n, nd.mbp.bus, BusOp::Kind::RequestData, paddr_of(v, bi), at, m->data, m);
  }
  // No L2 may keep a block of the frame: its number goes to another page.
  for (uint32_t bi = 0; bi < blocks_per_page_; ++bi)
    if (v->l2_holders[bi]) {
      fail("snoop-filter invariant: node " + std::to_string(n) + " evicts the frame of page " + std::to_string(v->npage) +
           " while an L2 still holds its block " + std::to_string(bi));
      throw ProtocolFailure(failure_);
    }
  // TLB shootdown: the processors' P-TLBs, the C-TLB and the N-TLB forget the page.
  for (auto& p : nd.procs) p->ptlb.invalidate(v->npage);
  nd.mbp.ctlb.invalidate(v->frame_no);
  nd.mbp.ntlb.invalidate(v->npage);
  nd.pt.erase(v->npage);
  if (nd.last_frame == v) nd.last_frame = nullptr;
  nd.free_frames[v->npage % colors_].push_back(v->frame_no);
  nd.frames[v->frame_no - kFrameBase].reset();
  --nd.remote_frames;
  nd.l3_evictions->inc();
  return true;
}

uint64_t System::round_deliveries(uint32_t node) const { return node_[node]->round_in->value; }
uint64_t System::directory_entries(uint32_t node) const { return node_[node]->mbp.dir.entries.size(); }

uint64_t System::node_physical(uint32_t node, uint64_t addr) const {
  const Frame* f = node_[node]->pt.get(addr / nc_.page_bytes);
  if (!f) return ~0ull;
  return f->frame_no * nc_.page_bytes + addr % nc_.page_bytes;
}

void System::read_home(uint64_t addr, uint8_t* out, uint32_t size) {
  const Frame* f = home_frame(addr / nc_.page_bytes);
  for (uint64_t off = addr % nc_.page_bytes, end = off + size; off < end;) {
    const uint32_t bi = static_cast<uint32_t>(off / nc_.block_bytes), in = static_cast<uint32_t>(off % nc_.block_bytes);
    const uint64_t k = std::min<uint64_t>(end - off, nc_.block_bytes - in);
    std::memcpy(out, mem(f, bi) + in, k);
    out += k, off += k;
  }
}

// The frame's bytes in each bank it spans, taken through the node bus's socket to the bank
// (the first byte of the page is in bank (frame_no * spans_) % banks).
void System::attach_memory(Node& n, Frame* f) {
  f->share.resize(spans_);
  const uint64_t base = f->frame_no * nc_.page_bytes;
  for (uint32_t i = 0; i < spans_; ++i) {
    const uint64_t p = base + (uint64_t{i} << unit_shift_);
    const uint32_t b = bank_of(p);
    sc_core::sc_time lat;
    f->share[i] = mem::try_dmi_span(*(*n.to_bank[b]).operator->(), bank_local(p), share_bytes_, &lat);
    if (!f->share[i]) {  // a user's bank: too small, or no DMI
      fail(mem::no_dmi("node " + std::to_string(n.id) + " bank " + std::to_string(b), "the bank", bank_local(p), share_bytes_));
      throw ProtocolFailure(failure_);
    }
    if (!n.bank_seen[b]) {
      n.bank_seen[b] = true;
      if (lat > sc_core::SC_ZERO_TIME) n.bank_lat[b] = lat.value();
    }
    std::memset(f->share[i], 0, share_bytes_);
  }
}

System::Frame* System::translate(Proc& p, uint64_t page, uint64_t& t) {
  Node& nd = *node_[p.node];
  uint64_t fno;
  if (p.ptlb.lookup(page, &fno)) {
    p.ptlb_hits->inc();
    Frame* f = nd.frames[fno - kFrameBase].get();
    p.hint_pages[page & 3] = {page, fno, f};
    return f;
  }
  p.ptlb_misses->inc();
  t += nc_.ptlb_miss_cycles * cpu_ps_;
  Frame* f = frame_for(p.node, page, true);
  p.ptlb.insert(page, f->frame_no);
  p.hint_pages[page & 3] = {page, f->frame_no, f};
  return f;
}

}  // namespace mbpsim::mbp
