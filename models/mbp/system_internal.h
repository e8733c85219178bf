// Internal structures of mbp::System, shared by its implementation files only.
#pragma once
#include <array>
#include <cstdint>
#include <deque>
#include <memory>
#include <unordered_map>
#include <vector>

#include <tlm_utils/multi_passthrough_target_socket.h>
#include <tlm_utils/simple_initiator_socket.h>

#include <cstdio>
#include <string>

#include "models/core/module_tree.h"
#include "models/mbp/node_bus.h"
#include "models/mbp/system.h"

namespace mbpsim::mbp {

// L1 states: 1 readable, 2 writable. L2 states (MESI relative to the node): 1 S, 2 E, 3 M.
enum : uint8_t { kL1Read = 1, kL1Write = 2 };
enum : uint8_t { kL2S = 1, kL2E = 2, kL2M = 3 };

struct Mshr {
  uint32_t issuer = 0;
  uint64_t since = 0;
  std::vector<uint32_t> waiters;
  Msg* deferred_recall = nullptr;
};

struct System::DirPage {
  SharerSet sharers;
  uint32_t busy_blocks = 0, rounds = 0;
  bool switching = false, switch_waiting = false, pageinv_done = false;
  Protocol switch_to = Protocol::Invalidate;
  Msg* switch_req = nullptr;
  uint32_t switch_outstanding = 0;
  std::deque<Msg*> gate_q;     // requests waiting for a protocol switch to finish
  std::vector<Msg*> coarsen_q; // GetS that would coarsen the sharer set during a round
  std::unordered_map<uint32_t, Msg*> busy;  // block index -> request being served
  std::unordered_map<uint32_t, std::deque<Msg*>> blockq;
};

struct System::Frame {
  uint64_t npage = 0, frame_no = 0;
  uint32_t node = 0, home_node = 0;
  bool home = false;
  Protocol proto = Protocol::Invalidate;  // the page-table attribute at this node
  DirFormat fmt = DirFormat::HierBitmap;
  // The page's bytes (memory at the home, the L3 copy elsewhere) live in the node's banks:
  // share[i] is the start of its bytes in the i-th bank it spans (System::mem finds a block).
  std::vector<uint8_t*> share;
  std::vector<uint8_t> st;     // per block: HState (home) or RState (elsewhere)
  std::vector<uint32_t> owner; // home: the owner of an Owned block
  // The node's snoop filter, per block: a bit for each of the node's processors whose L2 holds
  // it. A bus snoop probes only those L2s, so a delivery to a node without a copy costs one
  // load, not every L2's ways. Kept exact where an L2 line becomes valid or invalid
  // (System::fill_caches, System::snoop); mbp.check_invariants checks it at every snoop.
  std::vector<uint64_t> l2_holders;
  uint64_t last_use = 0;       // remote: last bus access (L3 replacement picks the oldest)
  DirPage* dir = nullptr;  // home: the page's entry in the node's directory (mbp.dir)
};

struct System::Round {
  uint64_t id = 0;
  Frame* f = nullptr;
  uint32_t bi = 0;
  bool page = false;
  MsgType kind = MsgType::Inv;
  uint32_t expected = 0, got = 0, held = 0;
  // What the receivers really did, counted where they acknowledge (checked against the
  // combined acknowledgements when the round completes, with mbp.check_invariants).
  uint32_t delivered = 0, held_really = 0;
  Msg* payload = nullptr;  // multicast: shared by every receiver, freed when done
  uint64_t start_ps = 0;
};

struct WbEntry {
  uint64_t nblk = 0, id = 0;
  std::array<uint64_t, 4> mask{};
  std::array<uint8_t, 256> data;  // (node.block_bytes <= 256) no allocation per buffered store
  bool in_flight = false;
};

constexpr uint8_t kLvlWriteBuffer = 5;

enum class WaitKind : uint8_t { None, Mbp, Mshr, WriteBuffer };

// A processor of a node (system.node<n>.proc<i>) with its L1, L2 and TLB (`l1`, `l2`, `ptlb`,
// child modules): cache hits are lookups here, as in the processor itself.
// What issues node-bus transactions (node_bus.h): a processor, the node's MBP. Its initiator
// socket (`bus`, a child of the module that owns it) and its one transaction: b_transport
// returns it completed, so one payload serves every transaction.
struct BusMaster {
  BusMaster(uint32_t block_bytes, uint32_t proc) : socket("bus") {
    tx.set_extension(cmd);  // the payload owns it
    tx.set_byte_enable_ptr(nullptr);
    tx.set_streaming_width(block_bytes);
    tx.set_data_length(block_bytes);
    cmd->proc = proc;
  }
  tlm_utils::simple_initiator_socket<BusMaster> socket;
  BusOp* cmd = new BusOp;
  tlm::tlm_generic_payload tx;
  std::array<uint8_t, 256> line{};  // the block a Read brings (node.block_bytes <= 256)
};

// Its misses, write-backs and requests to the MBP are node-bus transactions through its initiator
// socket `bus`, bound to the node bus or to a user's module in between.
struct System::Proc : sc_core::sc_module {
  Proc(sc_core::sc_module_name name, uint32_t n, uint32_t i, const node::NodeConfig& c)
      : sc_core::sc_module(name), node(n), id(i), l1("l1", c.l1_bytes, c.l1_assoc, c.block_bytes),
        l2("l2", c.l2_bytes, c.l2_assoc, c.block_bytes), ptlb("ptlb", c.ptlb_entries, c.ptlb_assoc), bus(c.block_bytes, i) {}
  uint32_t node, id;
  Part<node::Cache> l1, l2;
  Part<node::Tlb> ptlb;
  BusMaster bus;
  mem::TargetSocket* bus_path = nullptr;  // a user's module between it and the bus (use_bus_path)
  // Its loads and stores by the level that served them, and its translations.
  Counter *l1_hits = nullptr, *l1_misses = nullptr, *l2_hits = nullptr, *l2_misses = nullptr, *ptlb_hits = nullptr, *ptlb_misses = nullptr;
  uint64_t t = 0;
  bool have_op = false, scheduled = false, sleeping = false, synced = false;
  uint64_t attempt_t = 0;
  WaitKind waiting = WaitKind::None;
  const char* wait_why = "";
  uint64_t wait_since = 0, op_start = 0, op_seq = 0;
  uint8_t lvl = 0;  // deepest level that served the current op: 1 L1, 2 L2, 3 node, 4 remote,
                    // kLvlWriteBuffer: a store to an update or non-cacheable page, buffered
  bool forwarded = false;
  MemOp op;
  // The frames of the last pages translated, by page & 3: where a hinted op's block lies
  // (System::prefetch_hinted; a hint for the host's caches, never read for what is simulated).
  struct HintPage {
    uint64_t page = ~0ull, fno = 0;
    const void* frame = nullptr;
  };
  std::array<HintPage, 4> hint_pages{};
  static constexpr uint64_t kNoBlock = ~0ull;
  // The blocks of the stores named ahead in the last kAheadOps / 2 ops (slot op_seq % that), whose
  // L2 lines are not yet asked for.
  using AheadStores = std::array<uint64_t, node::MemOp::kAheadOps / 2>;
  static constexpr AheadStores kNoStores = [] {
    AheadStores a{};
    for (uint64_t& b : a) b = kNoBlock;
    return a;
  }();
  AheadStores store_ahead = kNoStores;
  std::vector<WbEntry> wb;
  // Where the operations come from: the workload's driver (System::set_driver), or, once a
  // user bound a core model to it, the processor's TLM-2.0 port (`port`, System::processor_port).
  std::unique_ptr<ProcPort> port;
  node::ProcDriver* driver = nullptr;
};

// A node's page table: network page -> frame, open addressing with linear probing (the lookup
// is on every message a node handles; std::unordered_map's find was 12% of a 64-node replay).
template <class V>
class PageTable {
 public:
  V* get(uint64_t page) const {
    if (n_ == 0) return nullptr;
    for (size_t i = slot(page);; i = (i + 1) & mask_) {
      if (!s_[i].v) return nullptr;
      if (s_[i].k == page) return s_[i].v;
    }
  }
  void put(uint64_t page, V* f) {
    if (2 * (n_ + 1) > s_.size()) grow();
    size_t i = slot(page);
    while (s_[i].v && s_[i].k != page) i = (i + 1) & mask_;
    if (!s_[i].v) ++n_;
    s_[i] = Slot{page, f};
  }
  void erase(uint64_t page) {  // backward-shift deletion keeps every probe chain unbroken
    if (n_ == 0) return;
    size_t i = slot(page);
    while (s_[i].v && s_[i].k != page) i = (i + 1) & mask_;
    if (!s_[i].v) return;
    --n_;
    for (size_t j = (i + 1) & mask_;; j = (j + 1) & mask_) {
      if (!s_[j].v) break;
      const size_t home = slot(s_[j].k);
      // Move j back to the hole i unless its home lies cyclically in (i, j].
      if (((j - home) & mask_) >= ((j - i) & mask_)) {
        s_[i] = s_[j];
        i = j;
      }
    }
    s_[i].v = nullptr;
  }

 private:
  // A page and its value side by side: a lookup of a cold page costs one host cache miss, not two.
  struct Slot {
    uint64_t k = 0;
    V* v = nullptr;
  };
  size_t slot(uint64_t page) const { return static_cast<size_t>((page * 0x9E3779B97F4A7C15ull) >> shift_) & mask_; }
  void grow() {
    std::vector<Slot> old;
    old.swap(s_);
    const size_t cap = old.empty() ? 64 : 2 * old.size();
    s_.assign(cap, Slot{});
    mask_ = cap - 1;
    shift_ = 64 - __builtin_ctzll(cap);
    n_ = 0;
    for (const Slot& x : old)
      if (x.v) put(x.k, x.v);
  }
  std::vector<Slot> s_;
  size_t n_ = 0, mask_ = 0;
  int shift_ = 64;
};

// The node bus (system.node<n>.bus): its target socket for the processors' transactions
// (`socket`, node_bus.h; System::bus_transport serves them), its initiator socket to each bank
// (`to_bank<b>`) and when its address and data phases are next free.
struct System::NodeBus : sc_core::sc_module {
  NodeBus(sc_core::sc_module_name name, System& s, uint32_t n) : sc_core::sc_module(name), socket("socket"), sys(s), node(n) {
    socket.register_b_transport(this, &NodeBus::b_transport);
  }
  template <class Owner>
  using Socket = tlm_utils::simple_initiator_socket_tagged<Owner>;
  tlm_utils::multi_passthrough_target_socket<NodeBus> socket;
  uint64_t addr_free = 0, data_free = 0;

 private:
  void b_transport(int, tlm::tlm_generic_payload& gp, sc_core::sc_time& delay) { sys.bus_transport(node, gp, delay); }
  System& sys;
  uint32_t node;
};

// The MBP's directory (system.node<n>.mbp.dir): one entry for each page the node is the home
// of, made with the home frame and kept for the run: the page's sharer set in its format
// (directory.h) and the home's bookkeeping of the page's rounds, protocol switch and queued
// requests. The home frame points at its entry (Frame::dir); the protocol engine's home side
// (mbp_home.cpp, the table of protocol.cpp) reads and changes it.
struct System::Directory : sc_core::sc_module {
  explicit Directory(sc_core::sc_module_name name) : sc_core::sc_module(name) {}
  // A new entry, its sharer set empty in format `f`.
  DirPage* add(const DirectoryFormats& formats, DirFormat f) {
    entries.push_back(std::make_unique<DirPage>());
    formats.init(entries.back()->sharers, f);
    return entries.back().get();
  }
  std::vector<std::unique_ptr<DirPage>> entries;  // in the order the home pages were made
};

// A node's MBP (system.node<n>.mbp): its C-TLB and N-TLB (`ctlb`, `ntlb`), its directory
// (`dir`) and its initiator socket on the node bus (`bus`: its snoops of the node's caches, its
// flushes and the write-backs of evicted L3 pages). What it does is the protocol engine's,
// mbp::System's (mbp.cpp, mbp_home.cpp).
struct System::NodeMbp : sc_core::sc_module {
  NodeMbp(sc_core::sc_module_name name, const MbpConfig& mc, uint32_t block_bytes)
      : sc_core::sc_module(name), ctlb("ctlb", mc.ctlb_entries, mc.ctlb_assoc), ntlb("ntlb", mc.ntlb_entries, mc.ntlb_assoc), dir("dir"),
        bus(block_bytes, BusOp::kNoProc) {}
  Part<node::Tlb> ctlb, ntlb;
  Directory dir;
  BusMaster bus;
};

// A node of the machine, as a module (system.node<n>, a child of the root beside the network):
// its processors (`proc<i>`), the node bus (`bus`) with its socket to each bank, the banks
// (mem::Memory targets, `bank<b>`) and the MBP (`mbp`). What they do is scheduled on the
// System's calendar.
struct System::Node : sc_core::sc_module {
  Node(sc_core::sc_module_name name, System& sys, uint32_t i, const node::NodeConfig& nc, const MbpConfig& mc)
      : sc_core::sc_module(name), id(i), bus("bus", sys, i), mbp("mbp", mc, nc.block_bytes), bank_free(nc.banks, 0), mbp_free(nc.banks, 0), sys_(sys) {
    for (int p = 0; p < nc.procs; ++p)
      procs.push_back(std::make_unique<Proc>(("proc" + std::to_string(p)).c_str(), i, static_cast<uint32_t>(p), nc));
    for (uint32_t b = 0; b < static_cast<uint32_t>(nc.banks); ++b) {
      banks.push_back(std::make_unique<mem::Memory>(("bank" + std::to_string(b)).c_str(), sys.share_bytes_));
      {
        Within on(bus);
        to_bank.push_back(std::make_unique<NodeBus::Socket<Node>>(("to_bank" + std::to_string(b)).c_str()));
      }
      to_bank.back()->register_invalidate_direct_mem_ptr(this, &Node::dmi_revoked, static_cast<int>(b));
      bank_target.push_back(&banks.back()->socket);
    }
    bank_lat.assign(nc.banks, sys.bank_lat_ps_);
    bank_seen.assign(nc.banks, false);
  }
  // The frames' bytes are pointers into the banks, taken once: a bank that takes its DMI back
  // ends the run (exit status 2), naming the node and the bank.
  void dmi_revoked(int bank, sc_dt::uint64 start, sc_dt::uint64 end) {
    char range[64];
    std::snprintf(range, sizeof range, "[0x%llx, 0x%llx]", static_cast<unsigned long long>(start), static_cast<unsigned long long>(end));
    sys_.fail("node " + std::to_string(id) + " bank " + std::to_string(bank) + ": the bank revoked DMI over " + range +
              ": the node bus holds the frames' bytes by DMI for the whole run");
  }
  uint32_t id;
  NodeBus bus;
  NodeMbp mbp;
  std::vector<std::unique_ptr<mem::Memory>> banks;
  std::vector<std::unique_ptr<NodeBus::Socket<Node>>> to_bank;  // bus.to_bank<b>
  std::vector<mem::TargetSocket*> bank_target;  // the node's bank, or a user's in its place
  std::vector<uint64_t> bank_lat;               // node.bank_latency_ns, or what the bank's DMI states
  std::vector<bool> bank_seen;                  // a frame has been taken from the bank
  std::vector<std::unique_ptr<Proc>> procs;
  PageTable<Frame> pt;                      // network page -> frame (the node's page table)
  Frame* last_frame = nullptr;              // the last page-table hit (messages come in runs)
  std::vector<std::unique_ptr<Frame>> frames;  // by node-physical frame number - kFrameBase
  std::vector<uint64_t> color_used;            // frames handed out per page colour
  std::unordered_map<uint64_t, Mshr> mshr;  // network block -> pending request
  // Exclusive blocks written back by an L3 replacement, until the home acknowledges: a recall
  // that crosses the write-back is answered from here; the block is not requested again
  // meanwhile (processors wait in `waiters`).
  struct Writeback {
    std::vector<uint8_t> data;
    std::vector<uint32_t> waiters;
  };
  std::unordered_map<uint64_t, Writeback> wb_pending;
  std::vector<std::vector<uint64_t>> free_frames;  // per colour: frame numbers freed by evictions
  uint64_t remote_frames = 0;
  std::vector<uint64_t> bank_free, mbp_free;
  Counter *node_hits, *local_mem, *l3_hits, *c2c, *remote;
  Counter *bus_tx, *bus_snoop_inv, *ctlb_hits, *ctlb_misses, *ntlb_hits, *ntlb_misses;
  Counter *wb_forwards, *wb_stores, *mbp_msgs_in, *round_in, *l3_evictions, *l3_writebacks, *l3_over;
  Histogram* mbp_queue_ps;

 private:
  System& sys_;
};

constexpr uint64_t kFrameBase = 16;  // node-physical frames below this are the kernel's

inline uint64_t System::paddr_of(const Frame* f, uint32_t bi) const { return f->frame_no * nc_.page_bytes + uint64_t{bi} * nc_.block_bytes; }

inline uint8_t* System::mem(const Frame* f, uint32_t bi) const {
  const uint64_t off = uint64_t{bi} * nc_.block_bytes;
  const uint64_t s = off >> unit_shift_;  // the page's stripe holding the block
  return f->share[s & (spans_ - 1)] + ((s >> spans_shift_) << unit_shift_) + (off & (unit_ - 1));
}

}  // namespace mbpsim::mbp
