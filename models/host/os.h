// A cluster host's operating system as its costs (module `host<n>.os`): what the kernel charges
// the host CPU for the services every protocol stack of the host uses, each cost a parameter
// declared once (`OsConfig::params()`, os.cpp) with its origin next to it:
//   - interrupt entry and exit (`host.int_entry_cycles`): the trap, saving what the routine
//     needs, and checking and resetting the device;
//   - a light-weight system call (`host.lw_syscall_cycles`): a trap that cannot switch context
//     (4.1, 6.1.3), so it saves and restores no register context: the MBCF FIFO read, the
//     signal-flag reset and the TASKQUE read;
//   - the copy between kernel and user memory (`host.copy_mb_s`): what a call moves to or from
//     the user's buffer, at the kernel's copy rate over data a cache holds; data no cache holds
//     (a frame the NIC's DMA wrote: the DMA invalidated its lines) also stalls the copy, or a
//     checksum, on every line it touches (`host.cold_line_ns` per `host.line_bytes`). A cold
//     copy of 1 KB on the SS20 is 32 lines more than a warm one;
//   - the invocation of a user-level program (`host.invoke_cycles`): the upcall of an MBCF_SIGNAL,
//     as a Unix signal's delivery: the interrupted context saved, the program entered, and its
//     return through the kernel.
// The conventional services a socket stack uses (models/sockets), each as the instructions its
// path executes (a code path's length, an estimate from the BSD code's structure named next to
// the value) at the kernel's cycles per instruction on this machine (`host.kernel_cpi`: kernel
// code after a user program ran misses its caches):
//   - a system call's entry and exit (`host.syscall_instr`): trap, register windows, the
//     dispatcher, the signal check on the way out;
//   - sleep, wakeup and the context switch to the woken process (`host.switch_instr`);
//   - posting and dispatching a software interrupt (`host.softint_instr`: BSD's netisr);
//   - select() on a descriptor that has nothing to read, beyond the call (`host.select_instr`),
//     and select()'s loop itself (`select_loop`: scan, sleep, scan again, or time out);
//   - the kernel clock's resolution (`host.clock_hz`: a user timer, and a sleep's timeout, ends
//     on a tick).
// The OS runs each on the host CPU (cpu.h) and counts what it did under its own name, so a run's
// `stats.json` says which OS services a latency contains and how long each took. What a call
// does to memory is its caller's (a protocol stack's: MBCF's calls are in models/mbcf); the OS
// gives the time.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <utility>
#include <vector>

#include <systemc>

#include "models/core/params.h"
#include "models/core/stats.h"
#include "models/host/cpu.h"

namespace mbpsim::host {

struct OsConfig {
  // Every member is a parameter of `params()`, which gives it its default.
  OsConfig();
  double int_entry_cycles{};   // interrupt entry and exit
  double lw_syscall_cycles{};  // a light-weight system call's trap, entry to exit
  double invoke_cycles{};      // a user-level program's invocation (delivery and return)
  double copy_mb_s{};          // the kernel's copy between kernel and user memory, data in the cache
  double cold_line_ns{};       // the stall per line of data no cache holds (its first touch)
  uint32_t line_bytes{};       // the line a miss fetches
  // the conventional services (instructions at kernel_cpi cycles each)
  double kernel_cpi{}, syscall_instr{}, switch_instr{}, softint_instr{}, select_instr{};
  double clock_hz{};
  static const ParamTable<OsConfig>& params();
};

// What the OS spent, by service, since the run began (for a workload that explains a figure).
struct OsSpent {
  uint64_t lw_syscalls = 0, lw_trap_ps = 0, lw_copy_bytes = 0, lw_copy_ps = 0;
  uint64_t invocations = 0, invoke_ps = 0;
  uint64_t syscalls = 0, syscall_ps = 0, switches = 0, switch_ps = 0, softints = 0, softint_ps = 0;
};

class Os final : public sc_core::sc_module {
 public:
  Os(sc_core::sc_module_name name, Cpu& cpu, const OsConfig& c, Stats& st);
  const OsConfig& config() const { return c_; }
  // Costs, as time on this host's CPU.
  uint64_t interrupt_entry_ps() const { return cpu_.cycles_ps(c_.int_entry_cycles); }
  // Whether the data a copy or checksum reads is in a cache (it was written or read by the CPU
  // lately) or not (the NIC's DMA wrote it: its first touch).
  enum class Data : uint8_t { Warm, Cold };
  uint64_t copy_ps(uint64_t bytes) const;  // warm
  // A copy of `bytes` (`Cold`: and the stalls of its first touch, counted as the OS's).
  uint64_t copy_ps(uint64_t bytes, Data d);
  // The stalls of a first touch of a buffer's first `bytes` (by a copy or a checksum loop),
  // counted; lines its first `touched` bytes share were touched before (headers read earlier).
  uint64_t first_touch_ps(uint64_t bytes, uint64_t touched = 0);
  // A light-weight system call in two parts around the caller's kernel work. `enter` traps
  // (the call's fixed cost on the CPU, preempting user work as any user-started work does),
  // then `k` runs: the kernel part, which does the call's work on memory and hands `leave` the
  // bytes it moves to the user's buffer; `leave` copies them and returns to the user, then
  // `k`. (Two steps so that the copy is as long as what the kernel found, and a stack may wait
  // in between: the MBP2's ADMA must have landed its writes before the kernel reads them.)
  void lw_enter(std::function<void()> k);
  // (`d`: whether what it copies is in a cache: the host kernel wrote it, or the NIC's DMA did.)
  void lw_leave(uint64_t copy_bytes, Data d, std::function<void()> k);
  // Invokes a user-level program (`times` deliveries: the MBP2's user-level scheduler is entered
  // before the program, two upcalls): `k` runs when the program starts.
  void invoke(uint32_t times, std::function<void()> k);
  const OsSpent& spent() const { return spent_; }

  // --- the conventional services
  // Kernel code of `instr` instructions, as time on this CPU (at host.kernel_cpi).
  uint64_t instr_ps(double instr) const { return cpu_.cycles_ps(instr * c_.kernel_cpi); }
  // A system call `name` (sendto, recv, select): the trap and entry, then `body` (the call's
  // own kernel work, `k` after it: the call may sleep in it), then the exit and `k`. The time
  // is the caller's process's, on the CPU, and counted as communication time. On a run's
  // timeline, a slice on the CPU's track from the call to its return (sleep included).
  using Body = std::function<void(std::function<void()> done)>;
  void syscall(const char* name, Body body, std::function<void()> k);
  // Kernel work of `ps` inside a system call (or user work the process does), then `k`.
  void kernel(uint64_t ps, std::function<void()> k);
  // Work of `ps` by a program's own code that is no communication (a window system's drawing,
  // models/host/x11.h), then `k`: CPU time, not counted as the host's communication time.
  void user(uint64_t ps, std::function<void()> k) { cpu_.compute(ps, std::move(k)); }
  // The calling process sleeps on channel `chan` until `wakeup(chan)`; then the context switch
  // back to it, then `k`. (One program per host: the CPU is otherwise idle or interrupted.)
  void sleep(uint64_t chan, std::function<void()> k);
  // tsleep (4.4BSD): sleep on `chan` as `sleep` does, but a callout of the kernel clock ends the
  // sleep at `until_ps` (a tick: `next_tick`) if no wakeup(chan) came first; then the context
  // switch back, then `k(true)` (timed out) or `k(false)` (woken). `until_ps` 0: no timeout.
  void tsleep(uint64_t chan, uint64_t until_ps, std::function<void(bool timed_out)> k);
  // Wakes what sleeps on `chan` (at the end of the kernel work that calls it).
  void wakeup(uint64_t chan);
  // select()'s loop inside the call (4.4BSD sys_generic.c): each pass scans the `ndesc`
  // descriptors (`host.select_instr` each: its poll routine) and `ready()` gives the first
  // readable one, or -1. None ready: once `timeout_us` (from now; 0: a poll) has passed, `k(-1)`;
  // else the process tsleeps on `chan` (a descriptor's sorwakeup wakes it), until the kernel
  // clock's tick at or after the timeout's end if there is one, and scans again when woken, or
  // gives `k(-1)` when the time is up.
  void select_loop(std::function<int()> ready, size_t ndesc, uint64_t chan, std::optional<double> timeout_us,
                   std::function<void(int)> k);
  bool sleeping(uint64_t chan) const;
  // Software interrupt work: after the hardware interrupt routines queued so far, the dispatch
  // and then `ps` of work, then `fn` (at interrupt level: counted as interrupt time).
  void softint(uint64_t ps, std::function<void()> fn);
  // The first tick of the kernel clock at or after `ps` (a timer's expiry, rounded up).
  uint64_t next_tick(uint64_t ps) const;

 private:
  Cpu& cpu_;
  const OsConfig& c_;
  OsSpent spent_;
  Counter &lw_calls_, &lw_ps_, &lw_copy_bytes_, &invocations_, &invoke_ps_;
  Counter &syscalls_, &syscall_ps_, &switches_, &switch_ps_, &softints_, &softint_ps_;
  Counter &cold_lines_, &cold_ps_;
  struct Sleeper {
    uint64_t chan, id;
    std::function<void(bool)> k;
  };
  void resume(size_t i, bool timed_out);  // the sleeper `i`: switch back to it
  // one pass of select_loop: the scan, then return, or sleep and pass again
  void select_pass(std::function<int()> ready, uint64_t scan_ps, uint64_t chan, uint64_t until_ps, bool timed,
                   std::function<void(int)> k);
  std::vector<Sleeper> sleepers_;
  uint64_t next_sleeper_ = 0;
};

}  // namespace mbpsim::host
