// A timestamped event calendar run by one SC_METHOD: the component schedules closures at
// picosecond times; nothing runs while nothing is due. For models whose event rate is modest
// (MBCF/Ether: a few events per packet); the MBP keeps its own allocation-free calendar.
// Events at the same time run in the order they were scheduled (deterministic).
#pragma once
#include <cstdint>
#include <functional>
#include <queue>
#include <vector>

#include <systemc>

#include "models/core/sim_time.h"

namespace mbpsim {

class Calendar : public sc_core::sc_module {
 public:
  SC_HAS_PROCESS(Calendar);
  explicit Calendar(sc_core::sc_module_name name) : sc_core::sc_module(name) {
    SC_METHOD(run);
    sensitive << wake_;
    dont_initialize();
  }
  uint64_t now_ps() const { return sim_now_ps(); }
  void at(uint64_t t_ps, std::function<void()> fn) {
    if (t_ps < now_ps()) t_ps = now_ps();
    q_.push(Ev{t_ps, seq_++, std::move(fn)});
    if (t_ps < armed_) arm(t_ps);
  }
  void after(uint64_t d_ps, std::function<void()> fn) { at(now_ps() + d_ps, std::move(fn)); }
  bool idle() const { return q_.empty(); }
  uint64_t events() const { return events_; }

 private:
  struct Ev {
    uint64_t t, seq;
    std::function<void()> fn;
    bool operator>(const Ev& o) const { return t != o.t ? t > o.t : seq > o.seq; }
  };
  void arm(uint64_t t) {
    armed_ = t;
    wake_.cancel();
    wake_.notify(sc_core::sc_time::from_value(t - now_ps()));
  }
  void run() {
    armed_ = UINT64_MAX;
    const uint64_t now = now_ps();
    while (!q_.empty() && q_.top().t <= now) {
      std::function<void()> fn = std::move(const_cast<Ev&>(q_.top()).fn);
      q_.pop();
      ++events_;
      fn();
    }
    if (!q_.empty()) arm(q_.top().t);
  }
  std::priority_queue<Ev, std::vector<Ev>, std::greater<Ev>> q_;
  sc_core::sc_event wake_;
  uint64_t armed_ = UINT64_MAX, seq_ = 0, events_ = 0;
};

}  // namespace mbpsim
