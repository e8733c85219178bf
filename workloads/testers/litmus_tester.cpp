#include "workloads/testers/litmus_tester.h"

#include <algorithm>
#include <cstdio>

#include "models/core/error.h"

namespace mbpsim {

using nlohmann::json;
using nlohmann::ordered_json;
using node::MemOp;
using node::OpKind;
using node::Protocol;

namespace {
// A tag: the run (so a late completion of another run is caught), the phase and a register.
uint64_t tag_of(uint64_t run, int phase, uint32_t reg) { return run << 16 | static_cast<uint64_t>(phase) << 8 | reg; }
// Indices 0-2 are node::Protocol values; kMixed draws one per location and run.
const char* kProtoNames[] = {"invalidate", "update", "noncacheable", "mixed"};
constexpr int kMixed = 3;
int proto_index(const std::string& name) {
  const auto it = std::find(std::begin(kProtoNames), std::end(kProtoNames), name);
  return it == std::end(kProtoNames) ? -1 : static_cast<int>(it - std::begin(kProtoNames));
}
constexpr uint64_t kNoiseTag = ~0ull;

json all_test_names() {
  json a = json::array();
  for (const auto& t : litmus::catalogue()) a.push_back(t.name);
  return a;
}
}  // namespace

void declare_litmus_params(ParamSchema& s) {
  using T = ParamType;
  s.add({"litmus.tests", T::Json, all_test_names(), "", "litmus tests to run (SB, SB+fences, MP, MP+fence, LB, IRIW, IRIW+fences, 2+2W, 2+2W+fences, CoRR, CoWW)", -1e300, 1e300});
  s.add({"litmus.protocols", T::Json, json::array({"invalidate", "update", "noncacheable", "mixed"}), "", "page protocols of the locations: invalidate, update, noncacheable, or mixed (each location draws one per run)", -1e300, 1e300});
  s.add({"litmus.runs", T::Int, 100, "runs", "runs of each test on each protocol setting", 1, 1e9});
  s.add({"litmus.pages", T::Int, 4, "pages", "pages per protocol the locations are drawn from (few pages: copies left by earlier runs are updated or invalidated by later ones)", 1, 1e6});
  s.add({"litmus.max_skew", T::Int, 300, "instructions", "a thread starts after uniform 0..max_skew instructions", 0, 1e9});
  s.add({"litmus.max_gap", T::Int, 20, "instructions", "compute before each later operation of a thread, uniform in 0..max_gap", 0, 1e9});
  s.add({"litmus.noise", T::Int, 4, "processors", "processors outside the test that load and store random words of their own region while the threads run (queueing at homes, links and buses varies the timing)", 0, 1e6});
  s.add({"litmus.warm_fraction", T::Double, 0.5, "", "before a run, each thread's processor and two others pre-load each location with this probability (copies to invalidate or update)", 0, 1});
}

AddressUse LitmusTester::address_use(const Config& c) {
  AddressUse u;
  u.known = true;
  u.shared_bytes = 4 * static_cast<uint64_t>(c.get_int("litmus.pages")) * static_cast<uint64_t>(c.get_int("node.page_bytes"));
  return u;
}

LitmusTester::LitmusTester(const Config& c, net::Network& net, Stats& stats, uint64_t seed)
    : MbpWorkload(c, net, stats, seed), seed_(seed), rng_(seed, "litmus") {
  runs_per_cell_ = static_cast<uint64_t>(c.get_int("litmus.runs"));
  pages_ = static_cast<uint64_t>(c.get_int("litmus.pages"));
  max_skew_ = static_cast<uint64_t>(c.get_int("litmus.max_skew"));
  max_gap_ = static_cast<uint64_t>(c.get_int("litmus.max_gap"));
  warm_fraction_ = c.get_double("litmus.warm_fraction");
  noise_ = static_cast<uint32_t>(c.get_int("litmus.noise"));
  page_bytes_ = sys_->node_config().page_bytes;
  block_ = sys_->node_config().block_bytes;
  if (block_ < 8) c.fail("node.block_bytes", "the litmus tester keeps each location in an 8-byte word of its own block");
  const json& tests = c.get_json("litmus.tests");
  const json& protos = c.get_json("litmus.protocols");
  if (!tests.is_array() || tests.empty()) c.fail("litmus.tests", "must be a non-empty list of test names");
  if (!protos.is_array() || protos.empty()) c.fail("litmus.protocols", "must be a non-empty list of protocols");
  std::vector<const litmus::Test*> ts;
  for (size_t i = 0; i < tests.size(); ++i) {
    const litmus::Test* t = tests[i].is_string() ? litmus::find(tests[i].get<std::string>()) : nullptr;
    if (!t) c.fail_at("litmus.tests", "litmus.tests[" + std::to_string(i) + "]", "unknown litmus test " + tests[i].dump() + " (known: " + all_test_names().dump() + ")");
    if (t->threads.size() > static_cast<size_t>(nodes_) * procs_)
      c.fail("litmus.tests", t->name + " needs " + std::to_string(t->threads.size()) + " processors; the system has " +
                                 std::to_string(nodes_ * procs_));
    ts.push_back(t);
  }
  std::vector<int> ps;
  for (size_t i = 0; i < protos.size(); ++i) {
    const int p = protos[i].is_string() ? proto_index(protos[i].get<std::string>()) : -1;
    if (p < 0)
      c.fail_at("litmus.protocols", "litmus.protocols[" + std::to_string(i) + "]", "unknown protocol " + protos[i].dump() +
                                                                       " (invalidate, update, noncacheable or mixed)");
    ps.push_back(p);
  }
  if (pages_ * (page_bytes_ / block_) < 2) c.fail("litmus.pages", "needs at least two blocks per protocol");
  for (const auto* t : ts)
    for (int p : ps) {
      Cell cell;
      cell.test = t;
      cell.proto = p;
      if (p != kMixed) {
        const auto sc = litmus::sc_outcomes(*t);
        for (const auto& o : allowed(*t, std::vector<Protocol>(t->locs, static_cast<Protocol>(p))))
          if (!sc.count(o)) cell.relaxed.insert(o);
      }
      cells_.push_back(std::move(cell));
    }
  total_ = runs_per_cell_ * cells_.size();
  q_.resize(nodes_ * procs_);
}

const std::set<litmus::Outcome>& LitmusTester::allowed(const litmus::Test& t, const std::vector<Protocol>& protos) {
  auto key = std::make_pair(t.name, protos);
  auto it = allowed_cache_.find(key);
  if (it == allowed_cache_.end()) it = allowed_cache_.emplace(key, litmus::allowed_outcomes(t, protos)).first;
  return it->second;
}

void LitmusTester::push(uint32_t pi, MemOp op, uint64_t max_gap) {
  op.gap = max_gap ? rng_.below(max_gap + 1) : 0;
  q_[pi].push_back(op);
  sys_->wake(pi / procs_, pi % procs_);
}

bool LitmusTester::next(uint32_t n, uint32_t p, MemOp& op) {
  auto& q = q_[n * procs_ + p];
  if (q.empty()) {
    if (!noise_active_ || !noise_procs_.count(n * procs_ + p)) return false;
    // Noise: a random word of the noise region (pages [3 pages, 4 pages), all three protocols).
    op.kind = rng_.below(2) ? OpKind::Store : OpKind::Load;
    op.addr = 3 * pages_ * page_bytes_ + rng_.below(pages_ * page_bytes_ / 8) * 8;
    op.size = 8;
    op.gap = rng_.below(max_gap_ + 1);
    op.tag = kNoiseTag;
    if (op.kind == OpKind::Store) mbcf::store_le(op.data, 8, rng_.next());
    return true;
  }
  op = q.front();
  q.pop_front();
  return true;
}

// Pages [k * pages, (k + 1) * pages) are of protocol k.
uint64_t LitmusTester::block_addr(Protocol p) {
  const uint64_t blocks = pages_ * (page_bytes_ / block_);
  return static_cast<uint64_t>(p) * pages_ * page_bytes_ + rng_.below(blocks) * block_;
}

void LitmusTester::start() {
  // Every page of the three regions gets its protocol first (a privileged call each).
  const uint32_t np = nodes_ * procs_;
  for (uint64_t pg = 0; pg < 4 * pages_; ++pg) {
    MemOp sw;
    sw.kind = OpKind::SetProtocol;
    sw.addr = pg * page_bytes_;
    sw.proto = static_cast<Protocol>(pg < 3 * pages_ ? pg / pages_ : pg % 3);
    sw.tag = tag_of(0, static_cast<int>(Phase::Setup), 0);
    push(static_cast<uint32_t>(rng_.below(np)), sw, 0);
    ++pending_;
  }
  MbpWorkload::start();
}

void LitmusTester::begin_run() {
  cell_ = &cells_[run_ % cells_.size()];
  const litmus::Test& t = *cell_->test;
  protos_.assign(t.locs, Protocol::Invalidate);
  addr_.clear();
  for (uint32_t l = 0; l < t.locs; ++l) {
    protos_[l] = static_cast<Protocol>(cell_->proto == kMixed ? static_cast<int>(rng_.below(3)) : cell_->proto);
    uint64_t a;
    do a = block_addr(protos_[l]);
    while (std::find(addr_.begin(), addr_.end(), a) != addr_.end());
    addr_.push_back(a);
  }
  std::vector<uint32_t> all(nodes_ * procs_);
  for (uint32_t i = 0; i < all.size(); ++i) all[i] = i;
  placement_.clear();
  for (size_t i = 0; i < t.threads.size(); ++i) {
    const size_t k = i + rng_.below(all.size() - i);
    std::swap(all[i], all[k]);
    placement_.push_back(all[i]);
  }
  regs_.assign(t.regs + t.finals.size(), 0);
  enter(Phase::Init);
}

void LitmusTester::enter(Phase ph) {
  phase_ = ph;
  const litmus::Test& t = *cell_->test;
  const uint32_t np = nodes_ * procs_;
  const uint64_t base = (run_ + 1) * 4;  // a run's values: base (initial), base + 1, base + 2
  const int phn = static_cast<int>(ph);
  MemOp op;
  op.size = 8;
  switch (ph) {
    case Phase::Setup: break;
    case Phase::Init: {  // one processor writes the initial values and fences
      const uint32_t pi = static_cast<uint32_t>(rng_.below(np));
      for (uint32_t l = 0; l < t.locs; ++l) {
        op.kind = OpKind::Store;
        op.addr = addr_[l];
        op.tag = tag_of(run_, phn, 0);
        mbcf::store_le(op.data, 8, base);
        push(pi, op, 0);
      }
      op.kind = OpKind::Fence;
      push(pi, op, 0);
      pending_ = 1;
      return;
    }
    case Phase::Warm: {
      pending_ = 0;
      std::vector<uint32_t> warmers = placement_;
      warmers.push_back(static_cast<uint32_t>(rng_.below(np)));
      warmers.push_back(static_cast<uint32_t>(rng_.below(np)));
      for (uint32_t pi : warmers)
        for (uint32_t l = 0; l < t.locs; ++l)
          if (rng_.uniform() < warm_fraction_) {
            op.kind = OpKind::Load;
            op.addr = addr_[l];
            op.tag = tag_of(run_, phn, 0);
            push(pi, op, max_gap_);
            ++pending_;
          }
      if (pending_ == 0) enter(Phase::Threads);
      return;
    }
    case Phase::Threads: {
      pending_ = static_cast<uint64_t>(t.threads.size());
      noise_procs_.clear();
      for (uint32_t k = 0; k < noise_ && placement_.size() + noise_procs_.size() < np; ++k) {
        uint32_t pi;
        do pi = static_cast<uint32_t>(rng_.below(np));
        while (noise_procs_.count(pi) || std::find(placement_.begin(), placement_.end(), pi) != placement_.end());
        noise_procs_.insert(pi);
      }
      noise_active_ = !noise_procs_.empty();
      for (uint32_t pi : noise_procs_) sys_->wake(pi / procs_, pi % procs_);
      for (size_t i = 0; i < t.threads.size(); ++i) {
        bool first = true;
        for (const litmus::Instr& in : t.threads[i]) {
          op.kind = in.kind == litmus::Instr::Store ? OpKind::Store : in.kind == litmus::Instr::Load ? OpKind::Load : OpKind::Fence;
          op.addr = addr_[in.loc];
          op.tag = tag_of(run_, phn, in.reg);
          if (in.kind == litmus::Instr::Store) mbcf::store_le(op.data, 8, base + in.val);
          push(placement_[i], op, first ? max_skew_ : max_gap_);
          first = false;
        }
        op.kind = OpKind::Fence;  // the thread's end: its stores performed
        op.tag = tag_of(run_, phn, 0xff);
        push(placement_[i], op, 0);
      }
      return;
    }
    case Phase::Finals: {
      noise_active_ = false;
      pending_ = t.finals.size();
      if (pending_ == 0) return finish_run();
      const uint32_t pi = static_cast<uint32_t>(rng_.below(np));
      for (size_t f = 0; f < t.finals.size(); ++f) {
        op.kind = OpKind::Load;
        op.addr = addr_[t.finals[f]];
        op.tag = tag_of(run_, phn, static_cast<uint32_t>(t.regs + f));
        push(pi, op, 0);
      }
      return;
    }
  }
}

void LitmusTester::complete(uint32_t, uint32_t, const MemOp& op, uint64_t now_ps) {
  last_complete_ps_ = std::max(last_complete_ps_, now_ps);
  if (op.tag == kNoiseTag) {
    ++noise_ops_;
    return;
  }
  const uint64_t run = op.tag >> 16;
  const int ph = static_cast<int>((op.tag >> 8) & 0xff);
  const uint32_t reg = static_cast<uint32_t>(op.tag & 0xff);
  if (ph != static_cast<int>(phase_) || (phase_ != Phase::Setup && run != run_))
    internal_error("litmus tester: a completion of another phase or run");
  switch (phase_) {
    case Phase::Setup:
      if (--pending_ == 0) begin_run();
      return;
    case Phase::Init:
      if (op.kind == OpKind::Fence) enter(Phase::Warm);
      return;
    case Phase::Warm:
      if (--pending_ == 0) enter(Phase::Threads);
      return;
    case Phase::Threads:
    case Phase::Finals:
      if (op.kind == OpKind::Load) {
        const uint64_t v = mbcf::load_le(op.data, 8), base = (run_ + 1) * 4;
        // A value no store of this run wrote (a stale copy of an earlier run) is recorded as 9,
        // which no test allows.
        const bool ours = v >= base && v <= base + 2;
        unknown_values_ += !ours;
        regs_[reg] = ours ? static_cast<uint8_t>(v - base) : 9;
        if (phase_ == Phase::Threads) return;
      }
      if (phase_ == Phase::Threads && !(op.kind == OpKind::Fence && reg == 0xff)) return;  // only a thread's end counts
      if (--pending_ > 0) return;
      if (phase_ == Phase::Threads) enter(Phase::Finals);
      else finish_run();
      return;
  }
}

std::string LitmusTester::describe_run() const {
  const litmus::Test& t = *cell_->test;
  std::string s = t.name + " run " + std::to_string(run_) + ":";
  for (uint32_t l = 0; l < t.locs; ++l) {
    char buf[96];
    std::snprintf(buf, sizeof buf, " %c at 0x%llx (%s, home node %u)", l == 0 ? 'x' : 'y',
                  static_cast<unsigned long long>(addr_[l]), node::to_string(protos_[l]),
                  sys_->home_of(addr_[l] / page_bytes_));
    s += buf;
  }
  s += "; threads on";
  for (uint32_t pi : placement_) s += " " + std::to_string(pi / procs_) + "." + std::to_string(pi % procs_);
  return s;
}

void LitmusTester::finish_run() {
  const litmus::Test& t = *cell_->test;
  ++cell_->runs;
  ++cell_->seen[regs_];
  if (!allowed(t, protos_).count(regs_)) {
    ++cell_->forbidden;
    ++failures_;
    const std::string what = describe_run() + ": outcome " + litmus::format(t, regs_) +
                             " is not allowed by the memory model (seed " + std::to_string(seed_) + ")";
    if (first_failure_.empty()) first_failure_ = what;
    if (failures_ <= 10) std::fprintf(stderr, "litmus: %s\n", what.c_str());
  }
  ++finished_;
  ++run_;
  if (run_ < total_) begin_run();
}

std::string LitmusTester::check_failed() const {
  if (failures_ == 0) return "";
  return std::to_string(failures_) + " litmus outcomes not allowed by the memory model; the first: " + first_failure_;
}

ordered_json LitmusTester::summary() const {
  ordered_json s;
  s["runs"] = finished_;
  s["forbidden_outcomes"] = failures_;
  s["values_from_other_runs"] = unknown_values_;
  s["noise_operations"] = noise_ops_;
  uint64_t relaxed_total = 0, relaxed_seen = 0;
  ordered_json tests = ordered_json::object();
  for (const Cell& c : cells_) {
    ordered_json o;
    o["runs"] = c.runs;
    o["forbidden"] = c.forbidden;
    ordered_json hist = ordered_json::object();
    for (const auto& [out, n] : c.seen) hist[litmus::format(*c.test, out)] = n;
    o["outcomes"] = hist;
    if (c.proto != kMixed) {
      ordered_json seen = json::array(), unseen = json::array();
      for (const auto& r : c.relaxed) {
        (c.seen.count(r) ? seen : unseen).push_back(litmus::format(*c.test, r));
        ++relaxed_total;
        relaxed_seen += c.seen.count(r);
      }
      o["relaxed_observed"] = seen;
      o["relaxed_unobserved"] = unseen;
    }
    tests[c.test->name][kProtoNames[c.proto]] = o;
  }
  s["relaxed_allowed"] = relaxed_total;
  s["relaxed_observed"] = relaxed_seen;
  s["tests"] = tests;
  const ordered_json base = base_summary();
  for (auto it = base.begin(); it != base.end(); ++it) s[it.key()] = it.value();
  return s;
}

}  // namespace mbpsim
