// A cluster host's CPU as its software shares it (chapter 6's SPARCstation 20 and Ultra 60: one
// processor shared by the user program, system calls and interrupt routines). Every protocol
// stack of the host charges its kernel work here; the user program computes on what is left.
//   - An interrupt routine runs as soon as the CPU has finished the routines before it (they
//     queue, in order), and delays whatever user work it lands on by its length.
//   - User work (`compute`) runs for a duration, then its continuation. Work started while
//     other user work runs (a program invoked by a signal runs on top of the interrupted code,
//     like a Unix signal handler, or its light-weight system calls) preempts it; the preempted
//     work resumes, with the time it still needed, when the new one ends.
//   - A poll loop spins until its condition holds: checked when the CPU's software says
//     something may have changed (`run_pollers`), noticed one loop iteration later.
// Time on it is kept as communication time (`busy_ps`): interrupt routines, and what a stack
// charges for its system calls. The CPU's clock and costs are the host's (`host.*`).
#pragma once
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include <systemc>
#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>

#include "models/core/calendar.h"

namespace mbpsim::host {

class Cpu final : public sc_core::sc_module {
 public:
  // The CPU's programmed I/O into a device's registers (the MBP2's doorbells): an initiator of
  // the TLM-2.0 base protocol, non-blocking, so that the device may hold a store (a bus retry)
  // until it can take it. A device with registers binds it; unbound on other hosts.
  tlm_utils::simple_initiator_socket_optional<Cpu> pio;
  // `mhz`: the CPU clock; `poll_cycles`: one iteration of a poll loop.
  Cpu(sc_core::sc_module_name name, Calendar& cal, double mhz, double poll_cycles);
  // An uncached store of the 32-bit `value` (big-endian) at `addr` through `pio`: `k(done, ok)`
  // runs when the device has finished it (`done`, ps: the store's completion; ok false for an
  // error response), at once when the device takes it at once. The CPU issues one store at a
  // time: a later one waits for the one before. The time is the caller's to charge.
  void pio_write(uint64_t addr, uint32_t value, std::function<void(uint64_t, bool)> k);
  uint64_t cycles_ps(double cycles) const;
  uint64_t now_ps() const { return cal_.now_ps(); }
  Calendar& calendar() const { return cal_; }
  // An interrupt routine of `dur`: `fn` runs at its end. Counted as communication time.
  void interrupt(uint64_t dur, std::function<void()> fn);
  // User-level work of `ps` (or a system call the caller counts with `charge`), then `k`.
  void compute(uint64_t ps, std::function<void()> k);
  // Busy-polls until `pred()` holds, then `k` (after one loop iteration).
  void poll(std::function<bool()> pred, std::function<void()> k);
  // Something the pollers may wait for changed at `at`: those whose conditions hold go on one
  // loop iteration later.
  void run_pollers(uint64_t at);
  // Communication time spent outside interrupt routines (system calls, doorbells).
  void charge(uint64_t ps) { busy_ps_ += ps; }
  uint64_t busy_ps() const { return busy_ps_; }
  // When the interrupt routines queued so far are done.
  uint64_t int_free() const { return int_free_; }
  // The power goes: the user program's computation, what it preempted and what it polled for
  // never continue.
  void power_off();

 private:
  // (Re)schedules the end of the user work; an earlier schedule is left to find itself stale.
  void schedule_user_end();
  // The store in flight on `pio` and those behind it.
  struct Store {
    uint64_t addr;
    uint32_t value;
    std::function<void(uint64_t, bool)> k;
  };
  void pio_issue();
  void pio_done(uint64_t done_ps);
  tlm::tlm_sync_enum pio_bw(tlm::tlm_generic_payload& gp, tlm::tlm_phase& ph, sc_core::sc_time& delay);
  tlm::tlm_generic_payload pio_gp_;
  uint8_t pio_data_[4] = {};
  bool pio_busy_ = false;
  std::function<void(uint64_t, bool)> pio_k_;  // the one in flight's (empty after a power loss)
  std::deque<Store> pio_waiting_;

  Calendar& cal_;
  const double mhz_, poll_cycles_;
  uint64_t int_free_ = 0, busy_ps_ = 0;
  bool user_active_ = false;
  uint64_t user_end_ = 0, user_ver_ = 0;
  std::function<void()> user_k_;
  // User work preempted by a later compute: the time it still needs and its continuation,
  // innermost last.
  std::vector<std::pair<uint64_t, std::function<void()>>> preempted_;
  std::vector<std::pair<std::function<bool()>, std::function<void()>>> pollers_;
};

}  // namespace mbpsim::host
