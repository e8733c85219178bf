#include "workloads/testers/coherence_tester.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "models/core/error.h"

namespace mbpsim {

using nlohmann::ordered_json;
using node::MemOp;
using node::OpKind;

namespace {
constexpr uint64_t kSwitchTag = ~0ull;
constexpr uint64_t kReadBit = 1ull << 62;
constexpr uint64_t kRaceBit = 1ull << 61;
}  // namespace

void declare_tester_params(ParamSchema& s) {
  using T = ParamType;
  s.add({"tester.checks", T::Int, 2000, "", "checks to complete (each on one block)", 1, 1e12});
  s.add({"tester.active", T::Int, 16, "", "checks in flight at once (each owns a distinct block)", 1, 1e6});
  s.add({"tester.pages", T::Int, 8, "pages", "size of the tested region: few pages mean much false sharing at page and block grain", 1, 1e9});
  s.add({"tester.atomic_fraction", T::Double, 0.25, "", "share of checks made of atomics (fetch&add, its vector form, swap, compare&swap) instead of stores", 0, 1});
  s.add({"tester.switch_every", T::Int, 25, "checks", "a random processor switches a random page to a random protocol after every N completed checks (0: never)", 0, 1e12});
  s.add({"tester.max_gap", T::Int, 20, "instructions", "compute before each tester operation, uniform in 0..max_gap", 0, 1e9});
}

AddressUse CoherenceTester::address_use(const Config& c) {
  AddressUse u;
  u.known = true;
  u.shared_bytes = static_cast<uint64_t>(c.get_int("tester.pages")) * static_cast<uint64_t>(c.get_int("node.page_bytes"));
  return u;
}

CoherenceTester::CoherenceTester(const Config& c, net::Network& net, Stats& stats, uint64_t seed)
    : MbpWorkload(c, net, stats, seed), seed_(seed), rng_(seed, "tester") {
  checks_ = static_cast<uint64_t>(c.get_int("tester.checks"));
  active_ = static_cast<uint64_t>(c.get_int("tester.active"));
  pages_ = static_cast<uint64_t>(c.get_int("tester.pages"));
  switch_every_ = static_cast<uint64_t>(c.get_int("tester.switch_every"));
  max_gap_ = static_cast<uint64_t>(c.get_int("tester.max_gap"));
  atomic_frac_ = c.get_double("tester.atomic_fraction");
  block_ = sys_->node_config().block_bytes;
  if (active_ > pages_ * (sys_->node_config().page_bytes / block_))
    c.fail("tester.active", "more concurrent checks than blocks in tester.pages pages");
  q_.resize(nodes_ * procs_);
}

void CoherenceTester::start() {
  for (uint64_t i = 0; i < active_ && started_ < checks_; ++i) new_check();
  MbpWorkload::start();
}

void CoherenceTester::push(uint32_t pi, const MemOp& op) {
  MemOp o = op;
  o.gap = max_gap_ ? rng_.below(max_gap_ + 1) : 0;
  q_[pi].push_back(o);
  sys_->wake(pi / procs_, pi % procs_);
}

void CoherenceTester::new_check() {
  const uint64_t blocks = pages_ * (sys_->node_config().page_bytes / block_);
  uint64_t nblk;
  do nblk = rng_.below(blocks);
  while (busy_blocks_.count(nblk));
  busy_blocks_.insert(nblk);
  ++started_;
  Check ch;
  ch.id = next_id_++;
  ch.nblk = nblk;
  auto& known = known_[nblk];
  if (known.empty()) known.assign(block_, 0);  // memory starts zeroed; the tester is its only writer
  ch.before = known;
  const uint64_t base = nblk * block_;
  MemOp op;
  op.tag = ch.id;
  if (rng_.uniform() >= atomic_frac_) {
    ch.kind = Kind::Store;
    ++store_checks_;
    ch.expect = known;
    const uint32_t fsize = std::min<uint32_t>(block_, 1u << rng_.below(4));
    const uint32_t fields = block_ / fsize;
    const uint32_t forced = static_cast<uint32_t>(rng_.below(fields));
    for (uint32_t f = 0; f < fields; ++f) {
      if (f != forced && rng_.uniform() < 0.5) continue;
      op.kind = OpKind::Store;
      op.addr = base + f * fsize;
      op.size = fsize;
      for (uint32_t b = 0; b < fsize; ++b) op.data[b] = static_cast<uint8_t>(rng_.next());
      std::memcpy(&ch.expect[f * fsize], op.data, fsize);
      const uint32_t pi = pick_proc();
      push(pi, op);
      MemOp fence;
      fence.kind = OpKind::Fence;
      fence.tag = ch.id;
      push(pi, fence);
      ++ch.pending;
    }
    // Racing loads while the writes are in flight: each byte must read as its old or new value.
    const uint32_t racers = static_cast<uint32_t>(rng_.below(3));
    for (uint32_t r = 0; r < racers; ++r) {
      MemOp rd;
      rd.kind = OpKind::Load;
      rd.addr = base;
      rd.size = block_;
      rd.tag = ch.id | kRaceBit;
      push(pick_proc(), rd);
      ++ch.pending;
    }
  } else {
    ++atomic_checks_;
    static const Kind kinds[] = {Kind::FetchAdd, Kind::FetchAddVec, Kind::Swap, Kind::CompSwap};
    ch.kind = kinds[rng_.below(4)];
    ch.width = block_ >= 8 && rng_.below(2) ? 8 : 4;
    if (ch.kind == Kind::FetchAddVec && block_ / ch.width < 2) ch.width = 4;  // 8-byte blocks: two 4-byte elements
    ch.count = ch.kind == Kind::FetchAddVec ? static_cast<uint32_t>(2 + rng_.below(std::min<uint32_t>(3, block_ / ch.width - 1))) : 1;
    ch.woff = static_cast<uint32_t>(rng_.below(block_ / ch.width - ch.count + 1)) * ch.width;
    ch.k = static_cast<uint32_t>(2 + rng_.below(5));
    const uint64_t cur = mbcf::load_le(&known[ch.woff], ch.width);
    for (uint32_t i = 0; i < ch.k; ++i) {
      op.kind = OpKind::Atomic;
      op.addr = base + ch.woff;
      op.size = ch.width * ch.count;
      auto& a = op.atomic;
      a = mbcf::AtomicArgs();
      a.width = static_cast<uint8_t>(ch.width);
      a.count = static_cast<uint8_t>(ch.count);
      const uint64_t fresh = (rng_.next() | 1) & mbcf::mask_of(ch.width);  // never zero
      switch (ch.kind) {
        case Kind::FetchAdd: a.op = mbcf::AtomicOp::FetchAdd; a.operand[0] = 1; break;
        case Kind::FetchAddVec:
          a.op = mbcf::AtomicOp::FetchAddVec;
          for (uint32_t j = 0; j < ch.count; ++j) a.operand[j] = j + 1;
          break;
        case Kind::Swap: a.op = mbcf::AtomicOp::Swap; a.operand[0] = fresh + i; break;
        case Kind::CompSwap: a.op = mbcf::AtomicOp::CompSwap; a.compare = cur; a.operand[0] = (cur + 1 + i) & mbcf::mask_of(ch.width); break;
        case Kind::Store: break;
      }
      ch.values.push_back(a.operand[0]);
      push(pick_proc(), op);
      ++ch.pending;
    }
  }
  live_.emplace(ch.id, std::move(ch));
}

bool CoherenceTester::next(uint32_t n, uint32_t p, MemOp& op) {
  auto& q = q_[n * procs_ + p];
  if (q.empty()) return false;
  op = q.front();
  q.pop_front();
  return true;
}

void CoherenceTester::complete(uint32_t, uint32_t, const MemOp& op, uint64_t now_ps) {
  last_complete_ps_ = std::max(last_complete_ps_, now_ps);
  if (op.tag == kSwitchTag) {
    --switches_in_flight_;
    return;
  }
  const bool read = op.tag & kReadBit;
  auto it = live_.find(op.tag & ~(kReadBit | kRaceBit));
  if (it == live_.end()) internal_error("tester: completion for an unknown check");
  Check& ch = it->second;
  if (read) {
    verify(ch, op.data);
    known_[ch.nblk].assign(op.data, op.data + block_);
    busy_blocks_.erase(ch.nblk);
    live_.erase(it);
    ++completed_;
    if (switch_every_ && completed_ % switch_every_ == 0) {
      MemOp sw;
      sw.kind = OpKind::SetProtocol;
      sw.addr = rng_.below(pages_) * sys_->node_config().page_bytes;
      sw.proto = static_cast<node::Protocol>(rng_.below(3));
      sw.tag = kSwitchTag;
      ++switches_sent_;
      ++switches_in_flight_;
      push(pick_proc(), sw);
    }
    if (started_ < checks_) new_check();
    return;
  }
  if (op.tag & kRaceBit) {
    for (uint32_t i = 0; i < block_; ++i)
      if (op.data[i] != ch.before[i] && op.data[i] != ch.expect[i]) {
        failure(ch, "a load racing the writes read byte " + std::to_string(i) + " as " + std::to_string(op.data[i]) +
                        ", neither its old value " + std::to_string(ch.before[i]) + " nor its new value " +
                        std::to_string(ch.expect[i]));
        break;
      }
    ++racing_loads_;
  }
  if (op.kind == OpKind::Atomic) ch.olds.push_back(mbcf::load_le(op.data, ch.width));
  if (op.kind == OpKind::Atomic && ch.kind == Kind::FetchAddVec)
    for (uint32_t j = 1; j < ch.count; ++j) ch.olds.push_back(mbcf::load_le(op.data + j * ch.width, ch.width));
  if (op.kind == OpKind::Store) return;  // its fence completes the writer's part
  if (--ch.pending > 0) return;
  MemOp rd;
  rd.kind = OpKind::Load;
  rd.addr = ch.nblk * block_;
  rd.size = block_;
  rd.tag = ch.id | kReadBit;
  push(pick_proc(), rd);
}

void CoherenceTester::verify(Check& ch, const uint8_t* got) {
  auto hex = [&](const uint8_t* b) {
    std::string s;
    char buf[4];
    for (uint32_t i = 0; i < block_; ++i) {
      std::snprintf(buf, sizeof buf, "%02x", b[i]);
      s += buf;
    }
    return s;
  };
  if (ch.kind == Kind::Store) {
    if (std::memcmp(got, ch.expect.data(), block_) != 0)
      failure(ch, "read " + hex(got) + ", expected " + hex(ch.expect.data()));
    return;
  }
  // Bytes outside the atomic words must be untouched.
  std::vector<uint8_t> outside(got, got + block_), before = ch.before;
  const uint32_t span = ch.width * ch.count;
  std::fill(outside.begin() + ch.woff, outside.begin() + ch.woff + span, 0);
  std::fill(before.begin() + ch.woff, before.begin() + ch.woff + span, 0);
  if (outside != before) failure(ch, "atomics changed bytes outside their words: " + hex(got));
  const uint64_t m = mbcf::mask_of(ch.width);
  auto word = [&](const uint8_t* b, uint32_t j) { return mbcf::load_le(b + ch.woff + j * ch.width, ch.width); };
  const uint64_t base = word(ch.before.data(), 0), final = word(got, 0);
  std::vector<uint64_t> olds = ch.olds;
  switch (ch.kind) {
    case Kind::FetchAdd: {
      std::sort(olds.begin(), olds.end());
      bool ok = final == ((base + ch.k) & m);
      for (uint32_t i = 0; i < ch.k && ok; ++i) ok = olds.size() == ch.k && olds[i] == ((base + i) & m);
      if (!ok) failure(ch, "fetch&add by " + std::to_string(ch.k) + " processors from " + std::to_string(base) +
                               " did not return a permutation of the partial sums (final " + std::to_string(final) + ")");
      break;
    }
    case Kind::FetchAddVec:
      for (uint32_t j = 0; j < ch.count; ++j) {
        const uint64_t b = word(ch.before.data(), j);
        std::vector<uint64_t> col;
        for (uint32_t i = 0; i < ch.k; ++i) col.push_back(ch.olds[i * ch.count + j]);
        std::sort(col.begin(), col.end());
        bool ok = word(got, j) == ((b + ch.k * (j + 1)) & m);
        for (uint32_t i = 0; i < ch.k && ok; ++i) ok = col[i] == ((b + i * (j + 1)) & m);
        if (!ok) failure(ch, "vector fetch&add element " + std::to_string(j) + " is wrong");
      }
      break;
    case Kind::Swap: {
      std::vector<uint64_t> a = olds, b = ch.values;
      a.push_back(final);
      b.push_back(base);
      std::sort(a.begin(), a.end());
      std::sort(b.begin(), b.end());
      if (a != b) failure(ch, "swap: the old values and the final value are not the values swapped in");
      break;
    }
    case Kind::CompSwap: {
      const auto wins = std::count(olds.begin(), olds.end(), base);
      const bool ok = wins == 1 && std::find(ch.values.begin(), ch.values.end(), final) != ch.values.end() &&
                      std::count(olds.begin(), olds.end(), final) == static_cast<long>(ch.k - 1);
      if (!ok) failure(ch, "compare&swap: " + std::to_string(wins) + " winners (expected 1), final " + std::to_string(final));
      break;
    }
    case Kind::Store: break;
  }
}

void CoherenceTester::failure(const Check& ch, const std::string& what) {
  ++failures_;
  if (failures_ <= 10)
    std::fprintf(stderr, "tester: check %llu on block 0x%llx (page protocol %s) failed at %.0f ns (seed %llu): %s\n",
                 static_cast<unsigned long long>(ch.id), static_cast<unsigned long long>(ch.nblk * block_),
                 node::to_string(sys_->protocol_of(ch.nblk * block_ / sys_->node_config().page_bytes)),
                 sys_->now_ps() / 1000.0, static_cast<unsigned long long>(seed_), what.c_str());
}

ordered_json CoherenceTester::summary() const {
  ordered_json s;
  s["checks_completed"] = completed_;
  s["check_failures"] = failures_;
  s["store_checks"] = store_checks_;
  s["atomic_checks"] = atomic_checks_;
  s["racing_loads"] = racing_loads_;
  s["protocol_switch_requests"] = switches_sent_;
  const ordered_json base = base_summary();
  for (auto it = base.begin(); it != base.end(); ++it) s[it.key()] = it.value();
  return s;
}

}  // namespace mbpsim
