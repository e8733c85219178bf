#include "workloads/testers/litmus_model.h"

#include <algorithm>
#include <functional>
#include <unordered_set>

namespace mbpsim::litmus {

using node::Protocol;

namespace {

Instr st(uint8_t loc, uint8_t val) { return Instr{Instr::Store, loc, val, 0}; }
Instr ld(uint8_t loc, uint8_t reg) { return Instr{Instr::Load, loc, 0, reg}; }
Instr fence() { return Instr{}; }

std::vector<Test> build() {
  std::vector<Test> v;
  v.push_back({"SB", 2, 2, {{st(0, 1), ld(1, 0)}, {st(1, 1), ld(0, 1)}}, {},
               "r0=0 r1=0: each load passed the other thread's store (store->load reordering)"});
  v.push_back({"SB+fences", 2, 2, {{st(0, 1), fence(), ld(1, 0)}, {st(1, 1), fence(), ld(0, 1)}}, {},
               "a fence orders the store before the load"});
  v.push_back({"MP", 2, 2, {{st(0, 1), st(1, 1)}, {ld(1, 0), ld(0, 1)}}, {},
               "r0=1 r1=0: the flag was performed before the data (store->store reordering)"});
  v.push_back({"MP+fence", 2, 2, {{st(0, 1), fence(), st(1, 1)}, {ld(1, 0), ld(0, 1)}}, {},
               "a fence between data and flag orders them"});
  v.push_back({"LB", 2, 2, {{ld(0, 0), st(1, 1)}, {ld(1, 1), st(0, 1)}}, {},
               "r0=1 r1=1 would need a load to pass a later store: loads are blocking"});
  v.push_back({"IRIW", 2, 4, {{st(0, 1)}, {st(1, 1)}, {ld(0, 0), ld(1, 1)}, {ld(1, 2), ld(0, 3)}}, {},
               "r0=1 r1=0 r2=1 r3=0: the readers saw the two writes in different orders (not multi-copy atomic)"});
  v.push_back({"IRIW+fences", 2, 4,
               {{st(0, 1)}, {st(1, 1)}, {ld(0, 0), fence(), ld(1, 1)}, {ld(1, 2), fence(), ld(0, 3)}}, {},
               "a fence orders only its own processor's stores, so it cannot restore multi-copy atomicity"});
  v.push_back({"2+2W", 2, 0, {{st(0, 1), st(1, 2)}, {st(1, 1), st(0, 2)}}, {0, 1},
               "x=1 y=1: each thread's second store was ordered before the other's first"});
  v.push_back({"2+2W+fences", 2, 0, {{st(0, 1), fence(), st(1, 2)}, {st(1, 1), fence(), st(0, 2)}}, {0, 1},
               "fences order each thread's stores"});
  v.push_back({"CoRR", 1, 2, {{st(0, 1)}, {ld(0, 0), ld(0, 1)}}, {},
               "r0=1 r1=0 would read a location backwards in its coherence order"});
  v.push_back({"CoWW", 1, 0, {{st(0, 1), st(0, 2)}}, {0},
               "x=1 would order two stores of one processor to one location against program order"});
  return v;
}

struct Entry {
  uint8_t loc, val, stage, idx;
};

struct State {
  std::vector<uint8_t> pc, regs;
  std::vector<std::vector<Entry>> wb;
  std::vector<std::vector<uint8_t>> co;    // per location: values in the home's order
  std::vector<std::vector<uint8_t>> view;  // per thread, per location: index into co

  std::string key() const {
    std::string k(pc.begin(), pc.end());
    k.append(regs.begin(), regs.end());
    for (const auto& w : wb) {
      k.push_back('|');
      for (const Entry& e : w) k.append({char(e.loc), char(e.val), char(e.stage), char(e.idx)});
    }
    for (const auto& c : co) {
      k.push_back('#');
      k.append(c.begin(), c.end());
    }
    for (const auto& vw : view) k.append(vw.begin(), vw.end());
    return k;
  }
};

}  // namespace

const std::vector<Test>& catalogue() {
  static const std::vector<Test> c = build();
  return c;
}

const Test* find(const std::string& name) {
  for (const Test& t : catalogue())
    if (t.name == name) return &t;
  return nullptr;
}

std::set<Outcome> allowed_outcomes(const Test& t, const std::vector<Protocol>& protos) {
  const size_t nt = t.threads.size();
  State s0;
  s0.pc.assign(nt, 0);
  s0.regs.assign(t.regs, 0);
  s0.wb.resize(nt);
  s0.co.assign(t.locs, std::vector<uint8_t>{0});
  s0.view.assign(nt, std::vector<uint8_t>(t.locs, 0));
  std::set<Outcome> out;
  std::unordered_set<std::string> seen;
  std::function<void(const State&)> visit = [&](const State& s) {
    if (!seen.insert(s.key()).second) return;
    bool terminal = true;
    for (size_t i = 0; i < nt; ++i) {
      // The thread's next instruction.
      if (s.pc[i] < t.threads[i].size()) {
        terminal = false;
        const Instr& in = t.threads[i][s.pc[i]];
        const Protocol p = protos[in.loc];
        if (in.kind == Instr::Store) {
          State n = s;
          ++n.pc[i];
          if (p == Protocol::Invalidate) n.co[in.loc].push_back(in.val);
          else n.wb[i].push_back(Entry{in.loc, in.val, 0, 0});
          visit(n);
        } else if (in.kind == Instr::Fence) {
          if (s.wb[i].empty()) {
            State n = s;
            ++n.pc[i];
            visit(n);
          }
        } else {
          const Entry* own = nullptr;
          for (const Entry& e : s.wb[i])
            if (e.loc == in.loc) own = &e;  // the newest
          const auto& co = s.co[in.loc];
          if (own || p != Protocol::Update) {
            State n = s;
            ++n.pc[i];
            n.regs[in.reg] = own ? own->val : co.back();
            visit(n);
          } else {
            for (size_t k = s.view[i][in.loc]; k < co.size(); ++k) {
              State n = s;
              ++n.pc[i];
              n.view[i][in.loc] = static_cast<uint8_t>(k);
              n.regs[in.reg] = co[k];
              visit(n);
            }
          }
        }
      }
      // The write buffer: an entry reaches the home once no earlier entry of its location is
      // left; an update entry is performed (every copy has it) in a later step.
      for (size_t j = 0; j < s.wb[i].size(); ++j) {
        terminal = false;
        const Entry& e = s.wb[i][j];
        bool blocked = false;
        for (size_t k = 0; k < j; ++k) blocked |= s.wb[i][k].loc == e.loc;
        if (blocked) continue;
        State n = s;
        Entry& ne = n.wb[i][j];
        if (e.stage == 0) {
          n.co[e.loc].push_back(e.val);
          ne.idx = static_cast<uint8_t>(n.co[e.loc].size() - 1);
          ne.stage = 1;
          if (protos[e.loc] != Protocol::Update) n.wb[i].erase(n.wb[i].begin() + j);
        } else {
          for (auto& vw : n.view) vw[e.loc] = std::max(vw[e.loc], e.idx);
          n.wb[i].erase(n.wb[i].begin() + j);
        }
        visit(n);
      }
    }
    if (terminal) {
      Outcome o = s.regs;
      for (uint8_t l : t.finals) o.push_back(s.co[l].back());
      out.insert(o);
    }
  };
  visit(s0);
  return out;
}

std::set<Outcome> sc_outcomes(const Test& t) {
  return allowed_outcomes(t, std::vector<Protocol>(t.locs, Protocol::Invalidate));
}

std::string format(const Test& t, const Outcome& o) {
  std::string s;
  for (uint32_t r = 0; r < t.regs; ++r) s += (s.empty() ? "r" : " r") + std::to_string(r) + "=" + std::to_string(o[r]);
  for (size_t f = 0; f < t.finals.size(); ++f)
    s += std::string(s.empty() ? "" : " ") + (t.finals[f] == 0 ? "x" : "y") + "=" + std::to_string(o[t.regs + f]);
  return s;
}

}  // namespace mbpsim::litmus
