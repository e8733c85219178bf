#include "workloads/mbp_workload.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "models/core/error.h"
#include "models/systems/assembly.h"

namespace mbpsim {

using nlohmann::json;
using nlohmann::ordered_json;
using node::MemOp;
using node::OpKind;

void declare_mbp_workload_params(ParamSchema& s) {
  using T = ParamType;
  s.add({"workload.max_cycles", T::Int, 100000000, "network cycles", "MBP workloads: the longest run; a run that has not finished by then reports finished: false", 1, 1e15});
  s.add({"workload.mbp_script", T::Json, json::array(), "", "mbp_script: list of {node, proc, at_ns, op: load|store|fence|swap|fetch_add|fetch_add_vec|comp_swap|set_protocol, addr, size, value, compare, values, protocol}", -1e300, 1e300});
  s.add({"sharing.refs_per_proc", T::Int, 20000, "references", "memory references each processor issues", 1, 1e12});
  s.add({"sharing.private_bytes", T::Int, 16384, "bytes", "private working set per processor (16 KiB fits the 32 KiB L1)", 8, 1e12});
  s.add({"sharing.shared_bytes", T::Int, 65536, "bytes", "shared region every processor references", 8, 1e12});
  s.add({"sharing.shared_fraction", T::Double, 0.05, "", "share of references that go to the shared region", 0, 1});
  s.add({"sharing.write_fraction", T::Double, 0.3, "", "share of references that are stores", 0, 1});
  s.add({"sharing.atomic_fraction", T::Double, 0.01, "", "share of shared references that are fetch&add", 0, 1});
  s.add({"sharing.fence_every", T::Int, 0, "references", "a fence after every N references (0: only at the end)", 0, 1e12});
  s.add({"sharing.gap", T::Int, 4, "instructions", "mean compute between references (uniform in 0..2*gap)", 0, 1e9});
}

// ---------------------------------------------------------------- common part

MbpWorkload::MbpWorkload(const Config& c, net::Network& net, Stats& stats, uint64_t seed)
    : net_(net), stats_(stats) {
  sys_ = systems::make_mbp_machine(c, net, stats, seed);
  sys_->set_driver(this);
  max_cycles_ = static_cast<uint64_t>(c.get_int("workload.max_cycles"));
  nodes_ = sys_->nodes();
  procs_ = sys_->procs();
}

void MbpWorkload::on_packet(uint32_t, net::Packet&, uint64_t) {
  internal_error("the MBP system, not its workload, receives the network's deliveries");
}

std::string MbpWorkload::stalled() const {
  if (done() || !sys_->quiet() || net_.in_flight() > 0) return "";
  return "the MBP system went quiet before the workload finished (every processor asleep, nothing in flight)";
}

std::string MbpWorkload::progress(double wall_s) const {
  char buf[96];
  std::snprintf(buf, sizeof buf, " | %llu references, %.0f/s", static_cast<unsigned long long>(sys_->ops_completed()),
                sys_->ops_completed() / wall_s);
  return buf;
}

ordered_json MbpWorkload::host_figures(double wall_s) const {
  ordered_json h;
  h["references"] = sys_->ops_completed();
  h["references_per_second"] = static_cast<double>(sys_->ops_completed()) / wall_s;
  h["mbp_events"] = sys_->events();
  h["prefetched_references"] = sys_->prefetched();
  return h;
}

ordered_json MbpWorkload::base_summary() const {
  ordered_json s;
  s["finished"] = done();
  s["exec_time_s"] = static_cast<double>(last_complete_ps_) / 1e12;
  s["operations"] = sys_->ops_completed();
  const ordered_json fig = sys_->summary_figures();
  for (auto it = fig.begin(); it != fig.end(); ++it) s[it.key()] = it.value();
  return s;
}

// ---------------------------------------------------------------- synthetic sharing

double SharingWorkload::done_fraction() const {
  const double all = static_cast<double>(refs_per_proc_) * nodes_ * procs_;
  return all > 0 ? std::min(1.0, static_cast<double>(sys_->ops_completed()) / all) : -1;
}

AddressUse SharingWorkload::address_use(const Config& c) {
  const uint64_t page = static_cast<uint64_t>(c.get_int("node.page_bytes"));
  AddressUse u;
  u.known = true;
  u.private_bytes = (static_cast<uint64_t>(c.get_int("sharing.private_bytes")) + page - 1) / page * page;
  u.shared_bytes = static_cast<uint64_t>(c.get_int("sharing.shared_bytes"));
  return u;
}

SharingWorkload::SharingWorkload(const Config& c, net::Network& net, Stats& stats, uint64_t seed)
    : MbpWorkload(c, net, stats, seed) {
  refs_per_proc_ = static_cast<uint64_t>(c.get_int("sharing.refs_per_proc"));
  private_bytes_ = static_cast<uint64_t>(c.get_int("sharing.private_bytes"));
  shared_bytes_ = static_cast<uint64_t>(c.get_int("sharing.shared_bytes"));
  shared_frac_ = c.get_double("sharing.shared_fraction");
  write_frac_ = c.get_double("sharing.write_fraction");
  atomic_frac_ = c.get_double("sharing.atomic_fraction");
  fence_every_ = static_cast<uint64_t>(c.get_int("sharing.fence_every"));
  gap_ = static_cast<uint32_t>(c.get_int("sharing.gap"));
  if (private_bytes_ % 8 || shared_bytes_ % 8) c.fail("sharing.private_bytes", "regions must be multiples of 8 bytes");
  const uint64_t page = sys_->node_config().page_bytes;
  private_bytes_ = (private_bytes_ + page - 1) / page * page;
  shared_base_ = 0;
  for (uint32_t i = 0; i < nodes_ * procs_; ++i) rng_.emplace_back(seed, "sharing.proc" + std::to_string(i));
  issued_.assign(nodes_ * procs_, 0);
  drawn_.assign(nodes_ * procs_, {});
}

// Processor `idx`'s op number `k`, drawn from its stream. The stream's state in a local:
// stores into `a` cannot alias it, so the draws keep it in registers.
[[gnu::always_inline]] inline void SharingWorkload::draw(uint32_t idx, uint64_t k, Drawn& a) {
  Rng r = rng_[idx];
  a.gap = gap_ ? static_cast<uint32_t>(r.below(2 * gap_ + 1)) : 0;
  if (k == refs_per_proc_ || (fence_every_ && k % fence_every_ == fence_every_ - 1)) {
    a.kind = OpKind::Fence;  // the last one drains the write buffer
  } else if (r.uniform() < shared_frac_) {
    a.addr = shared_base_ + r.below(shared_bytes_ / 8) * 8;
    const double u = r.uniform();
    if (u < atomic_frac_) {
      a.kind = OpKind::Atomic;
    } else if (u < atomic_frac_ + write_frac_) {
      a.kind = OpKind::Store;
      a.value = r.next();
    } else {
      a.kind = OpKind::Load;
    }
  } else {
    const uint64_t base = 0x40000000ull + static_cast<uint64_t>(idx) * private_bytes_;
    a.addr = base + r.below(private_bytes_ / 8) * 8;
    if (r.uniform() < write_frac_) {
      a.kind = OpKind::Store;
      a.value = r.next();
    } else {
      a.kind = OpKind::Load;
    }
  }
  a.valid = true;
  rng_[idx] = r;
}

// Each op is drawn kAheadOps steps early, when the op that many before it is handed out, so that
// op can name it (MemOp::ahead, a hint for the host's caches); the draws and their order per
// stream are the same as drawing each op when asked.
bool SharingWorkload::next(uint32_t n, uint32_t p, MemOp& op) {
  constexpr uint32_t kAhead = MemOp::kAheadOps;
  static_assert((kAhead & (kAhead - 1)) == 0, "the ring is indexed by a mask");
  const uint32_t idx = n * procs_ + p;
  uint64_t& k = issued_[idx];
  if (k > refs_per_proc_) {
    if (k == refs_per_proc_ + 1) {
      ++finished_;
      ++k;
    }
    return false;
  }
  Drawn* ring = drawn_[idx].data();
  if (__builtin_expect(!ring[k & (kAhead - 1)].valid, 0)) {  // the first op: it and the ones up to the first named
    for (uint64_t j = k; j < k + kAhead && j <= refs_per_proc_; ++j) draw(idx, j, ring[j & (kAhead - 1)]);
  }
  Drawn& a = ring[k & (kAhead - 1)];
  op.tag = 0;  // only the fields an op kind reads are set: a MemOp is large and this is the hot path
  op.gap = a.gap;
  op.kind = a.kind;
  if (a.kind != OpKind::Fence) {
    op.addr = a.addr;
    op.size = 8;
    if (a.kind == OpKind::Store) {
      std::memcpy(op.data, &a.value, 8);
    } else if (a.kind == OpKind::Atomic) {
      op.atomic.op = mbcf::AtomicOp::FetchAdd;
      op.atomic.width = 8;
      op.atomic.operand[0] = 1;
    }
  }
  ++k;
  a.valid = false;
  op.ahead = MemOp::Ahead::Unknown;
  if (k + kAhead - 1 <= refs_per_proc_) {  // the op kAhead after this one, into the slot just freed
    draw(idx, k + kAhead - 1, a);
    if (a.kind == OpKind::Load || a.kind == OpKind::Store) {
      op.ahead = a.kind == OpKind::Store ? MemOp::Ahead::Store : MemOp::Ahead::Load;
      op.ahead_addr = a.addr;
    }
  }
  return true;
}

void SharingWorkload::complete(uint32_t, uint32_t, const MemOp&, uint64_t now_ps) {
  last_complete_ps_ = std::max(last_complete_ps_, now_ps);
}

ordered_json SharingWorkload::summary() const {
  ordered_json s = base_summary();
  s["references"] = refs_per_proc_ * nodes_ * procs_;
  return s;
}

// ---------------------------------------------------------------- script

namespace {
uint64_t json_u64(const Config& c, const json& j, const char* key, size_t i, uint64_t def, bool required) {
  if (!j.contains(key)) {
    if (required) c.fail("workload.mbp_script", "step " + std::to_string(i) + ": missing \"" + key + "\"");
    return def;
  }
  const json& v = j.at(key);
  if (v.is_number_unsigned()) return v.get<uint64_t>();
  if (v.is_number_integer() && v.get<int64_t>() >= 0) return static_cast<uint64_t>(v.get<int64_t>());
  if (v.is_number_float() && v.get<double>() >= 0) return static_cast<uint64_t>(v.get<double>());
  c.fail("workload.mbp_script", "step " + std::to_string(i) + ": \"" + key + "\" must be a non-negative number");
}
}  // namespace

MbpScript::MbpScript(const Config& c, net::Network& net, Stats& stats, uint64_t seed)
    : MbpWorkload(c, net, stats, seed) {
  const json& j = c.get_json("workload.mbp_script");
  if (!j.is_array()) c.fail("workload.mbp_script", "must be a list of steps");
  const uint32_t block = sys_->node_config().block_bytes;
  queue_.resize(nodes_ * procs_);
  pos_.assign(nodes_ * procs_, 0);
  for (size_t i = 0; i < j.size(); ++i) {
    const json& e = j[i];
    auto bad = [&](const std::string& why) { c.fail("workload.mbp_script", "step " + std::to_string(i) + ": " + why); };
    if (!e.is_object()) bad("must be an object");
    for (auto it = e.begin(); it != e.end(); ++it) {
      static const char* keys[] = {"node", "proc", "at_ns", "op", "addr", "size", "value", "compare", "values", "protocol", "width"};
      if (std::find_if(std::begin(keys), std::end(keys), [&](const char* k) { return it.key() == k; }) == std::end(keys))
        bad("unknown key \"" + it.key() + "\"");
    }
    Step s;
    const uint64_t n = json_u64(c, e, "node", i, 0, true);
    const uint64_t p = json_u64(c, e, "proc", i, 0, false);
    if (n >= nodes_) bad("node " + std::to_string(n) + " does not exist (" + std::to_string(nodes_) + " nodes)");
    if (p >= procs_) bad("proc " + std::to_string(p) + " does not exist (" + std::to_string(procs_) + " per node)");
    s.at_ps = json_u64(c, e, "at_ns", i, 0, false) * 1000;
    if (!e.contains("op") || !e["op"].is_string()) bad("missing \"op\"");
    const std::string op = e["op"];
    MemOp& m = s.op;
    m.addr = json_u64(c, e, "addr", i, 0, op != "fence");
    m.size = static_cast<uint32_t>(json_u64(c, e, "size", i, 8, false));
    const uint64_t value = json_u64(c, e, "value", i, 0, false);
    const uint64_t width = json_u64(c, e, "width", i, 8, false);
    if (op == "load" || op == "store") {
      m.kind = op == "load" ? OpKind::Load : OpKind::Store;
      if (m.size == 0 || m.size > block || m.addr % block + m.size > block)
        bad("a " + op + " of " + std::to_string(m.size) + " bytes at 0x" + std::to_string(m.addr) + " must stay inside one " + std::to_string(block) + "-byte block");
      if (m.kind == OpKind::Store) {
        if (m.size > 8) bad("a store's value is at most 8 bytes");
        std::memcpy(m.data, &value, m.size);
      }
    } else if (op == "fence") {
      m.kind = OpKind::Fence;
    } else if (op == "set_protocol") {
      m.kind = OpKind::SetProtocol;
      const std::string pr = e.value("protocol", "");
      if (pr == "invalidate") m.proto = node::Protocol::Invalidate;
      else if (pr == "update") m.proto = node::Protocol::Update;
      else if (pr == "noncacheable") m.proto = node::Protocol::NonCacheable;
      else bad("\"protocol\" must be invalidate, update or noncacheable");
    } else if (op == "swap" || op == "fetch_add" || op == "fetch_add_vec" || op == "comp_swap") {
      m.kind = OpKind::Atomic;
      auto& a = m.atomic;
      a.op = op == "swap" ? mbcf::AtomicOp::Swap : op == "fetch_add" ? mbcf::AtomicOp::FetchAdd
             : op == "comp_swap" ? mbcf::AtomicOp::CompSwap : mbcf::AtomicOp::FetchAddVec;
      if (width != 4 && width != 8) bad("\"width\" must be 4 or 8");
      a.width = static_cast<uint8_t>(width);
      a.operand[0] = value;
      a.compare = json_u64(c, e, "compare", i, 0, false);
      if (a.op == mbcf::AtomicOp::FetchAddVec) {
        if (!e.contains("values") || !e["values"].is_array() || e["values"].empty() || e["values"].size() > 8)
          bad("fetch_add_vec needs \"values\": 1 to 8 addends");
        a.count = static_cast<uint8_t>(e["values"].size());
        for (size_t k = 0; k < e["values"].size(); ++k) {
          const json& v = e["values"][k];
          if (!v.is_number_integer() || (!v.is_number_unsigned() && v.get<int64_t>() < 0))
            bad("\"values\" must be non-negative integers");
          a.operand[k] = v.get<uint64_t>();
        }
      }
      if (m.addr % a.width || m.addr % block + a.bytes() > block)
        bad("an atomic must be aligned to its width and stay inside one block");
    } else {
      bad("unknown op \"" + op + "\"");
    }
    queue_[n * procs_ + p].push_back(steps_.size());
    steps_.push_back(s);
  }
}

bool MbpScript::next(uint32_t n, uint32_t p, MemOp& op) {
  const uint32_t idx = n * procs_ + p;
  if (pos_[idx] >= queue_[idx].size()) return false;
  Step& s = steps_[queue_[idx][pos_[idx]]];
  if (sys_->now_ps() < s.at_ps) {
    sys_->wake_at(n, p, s.at_ps);
    return false;
  }
  op = s.op;
  op.tag = queue_[idx][pos_[idx]];
  ++pos_[idx];
  return true;
}

void MbpScript::complete(uint32_t, uint32_t, const MemOp& op, uint64_t now_ps) {
  Step& s = steps_[op.tag];
  s.done_ps = now_ps;
  if (op.kind == OpKind::Load || op.kind == OpKind::Atomic) std::memcpy(&s.result, op.data, std::min<uint32_t>(8, op.kind == OpKind::Load ? op.size : op.atomic.width));
  last_complete_ps_ = std::max(last_complete_ps_, now_ps);
  ++completed_;
}

ordered_json MbpScript::summary() const {
  ordered_json s = base_summary();
  ordered_json r = ordered_json::array();
  for (const Step& st : steps_)
    r.push_back({{"done_ns", static_cast<double>(st.done_ps) / 1000.0}, {"result", st.result}});
  s["steps"] = r;
  return s;
}

}  // namespace mbpsim
