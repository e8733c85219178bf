// The host OS's costs (os.h). Defaults describe SSS-CORE on the thesis's first cluster (6.2.1):
// SPARCstation 20 compatibles, 85 MHz SuperSPARC. The Ultra 60 config's values and their
// origins are in docs/VALIDATION.md ("Where the Ultra 60 and 10BASE-T configs' own values come
// from").
#include "models/host/os.h"

#include <cmath>

#include "models/core/module_tree.h"

namespace mbpsim::host {

const ParamTable<OsConfig>& OsConfig::params() {
  static const ParamTable<OsConfig> t = ParamTable<OsConfig>()
      .add(&OsConfig::int_entry_cycles, {"host.int_entry_cycles", 85.0, "cycles", "receive interrupt entry and exit, per interrupt: trap plus checking and resetting the NIC across two external buses (~0.5 us each, 6.2.2)", 0, 1e9})
      .add(&OsConfig::lw_syscall_cycles, {"host.lw_syscall_cycles", 170.0, "cycles",
         "light-weight system call (FIFO read, signal-flag reset, TASKQUE read), trap to return without what it copies: no context switch is possible, so no register context is saved (4.1, 6.1.3); 2.0 us, an estimate: more than the 1.0 us interrupt entry (a trap, argument checks, the structure's pointers read and written atomically), well under the 3.6 us MBCF-requesting call that also builds and sends a packet", 0, 1e9})
      .add(&OsConfig::invoke_cycles, {"host.invoke_cycles", 425.0, "cycles",
         "invoking a user-level program for MBCF_SIGNAL, as a Unix signal's delivery: the interrupted context saved (SPARC register windows flushed), the program entered, and its return through the kernel restoring the context; 5.0 us, an estimate", 0, 1e9})
      .add(&OsConfig::copy_mb_s, {"host.copy_mb_s", 68.0, "MB/s", "kernel copy between kernel and user memory: the slope of Table 6.1, (20.0-5.0) us / 1020 B = 14.7 ns/B [calibrated]", 0.001, 1e6});
  return t;
}

OsConfig::OsConfig() { params().set_defaults(*this); }

Os::Os(sc_core::sc_module_name name, Cpu& cpu, const OsConfig& c, Stats& st)
    : sc_core::sc_module(name),
      cpu_(cpu),
      c_(c),
      lw_calls_(st.counter(stat_name(*this, "lw_syscalls"), "light-weight system calls (FIFO read, signal-flag reset, TASKQUE read)")),
      lw_ps_(st.counter(stat_name(*this, "lw_syscall_ps"), "host CPU time in light-weight system calls, their copies included", "ps")),
      lw_copy_bytes_(st.counter(stat_name(*this, "lw_copy_bytes"), "bytes light-weight system calls copied to their callers' buffers", "bytes")),
      invocations_(st.counter(stat_name(*this, "invocations"), "user-level programs invoked (MBCF_SIGNAL upcalls; two for a program entered through the user-level scheduler)")),
      invoke_ps_(st.counter(stat_name(*this, "invoke_ps"), "host CPU time in invoking user-level programs", "ps")) {}

uint64_t Os::copy_ps(uint64_t bytes) const { return static_cast<uint64_t>(std::llround(static_cast<double>(bytes) * 1e6 / c_.copy_mb_s)); }

void Os::lw_enter(std::function<void()> k) {
  const uint64_t ps = cpu_.cycles_ps(c_.lw_syscall_cycles);
  lw_calls_.inc();
  lw_ps_.inc(ps);
  ++spent_.lw_syscalls;
  spent_.lw_trap_ps += ps;
  cpu_.compute(ps, std::move(k));
}

void Os::lw_leave(uint64_t copy_bytes, std::function<void()> k) {
  if (copy_bytes == 0) return k();
  const uint64_t ps = copy_ps(copy_bytes);
  lw_ps_.inc(ps);
  lw_copy_bytes_.inc(copy_bytes);
  spent_.lw_copy_bytes += copy_bytes;
  spent_.lw_copy_ps += ps;
  cpu_.compute(ps, std::move(k));
}

void Os::invoke(uint32_t times, std::function<void()> k) {
  const uint64_t ps = cpu_.cycles_ps(c_.invoke_cycles * times);
  invocations_.inc(times);
  invoke_ps_.inc(ps);
  spent_.invocations += times;
  spent_.invoke_ps += ps;
  cpu_.compute(ps, std::move(k));
}

}  // namespace mbpsim::host
