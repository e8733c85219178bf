// A timestamped event calendar run by one SC_METHOD: the component schedules closures at
// picosecond times; nothing runs while nothing is due. For models whose event rate is modest
// (MBCF/Ether: a few events per packet); the MBP machine queues typed event records in the same
// kind of queue (event_queue.h) with no allocation per event. Events at the same time run in
// the order they were scheduled (deterministic).
#pragma once
#include <cstdint>
#include <functional>

#include <systemc>

#include "models/core/event_queue.h"
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
    q_.push(t_ps, std::move(fn));
    if (t_ps < armed_) arm(t_ps);
  }
  void after(uint64_t d_ps, std::function<void()> fn) { at(now_ps() + d_ps, std::move(fn)); }
  bool idle() const { return q_.empty(); }
  uint64_t events() const { return events_; }

 private:
  void arm(uint64_t t) {
    armed_ = t;
    wake_.cancel();
    wake_.notify(sc_core::sc_time::from_value(t - now_ps()));
  }
  void run() {
    armed_ = UINT64_MAX;
    const uint64_t now = now_ps();
    for (;;) {
      std::function<void()> fn;  // released as soon as it has run, as its captures may own state
      if (!q_.pop_due(now, fn)) break;
      ++events_;
      fn();
    }
    if (!q_.empty()) arm(q_.next_ps());
  }
  EventQueue<std::function<void()>> q_;
  sc_core::sc_event wake_;
  uint64_t armed_ = UINT64_MAX, events_ = 0;
};

}  // namespace mbpsim
