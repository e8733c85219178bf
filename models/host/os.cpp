// The host OS's costs (os.h). Defaults describe SSS-CORE on the thesis's first cluster (6.2.1):
// SPARCstation 20 compatibles, 85 MHz SuperSPARC. The Ultra 60 config's values and their
// origins are in docs/VALIDATION.md ("Where the Ultra 60 and 10BASE-T configs' own values come
// from").
#include "models/host/os.h"

#include <algorithm>
#include <cmath>

#include "models/core/module_tree.h"
#include "models/core/timeline.h"

namespace mbpsim::host {

const ParamTable<OsConfig>& OsConfig::params() {
  static const ParamTable<OsConfig> t = ParamTable<OsConfig>()
      .add(&OsConfig::int_entry_cycles, {"host.int_entry_cycles", 85.0, "cycles", "receive interrupt entry and exit, per interrupt: trap plus checking and resetting the NIC across two external buses (~0.5 us each, 6.2.2)", 0, 1e9})
      .add(&OsConfig::lw_syscall_cycles, {"host.lw_syscall_cycles", 170.0, "cycles",
         "light-weight system call (FIFO read, signal-flag reset, TASKQUE read), trap to return without what it copies: no context switch is possible, so no register context is saved (4.1, 6.1.3); 2.0 us, an estimate: more than the 1.0 us interrupt entry (a trap, argument checks, the structure's pointers read and written atomically), well under the 3.6 us MBCF-requesting call that also builds and sends a packet", 0, 1e9})
      .add(&OsConfig::invoke_cycles, {"host.invoke_cycles", 425.0, "cycles",
         "invoking a user-level program for MBCF_SIGNAL, as a Unix signal's delivery: the interrupted context saved (SPARC register windows flushed), the program entered, and its return through the kernel restoring the context; 5.0 us, an estimate", 0, 1e9})
      .add(&OsConfig::kernel_cpi, {"host.kernel_cpi", 4.76, "cycles",
         "cycles per instruction of the conventional kernel's code paths (system calls, socket layers, drivers; the path lengths are *_instr): kernel code run after a user program misses the SuperSPARC's 20 KB instruction and 16 KB data caches [calibrated: 6.2.4 says UDP100/SunOS round trips are 'greater than 700 usec' below 64 bytes; taken at that bound: the least CPI, in steps of 0.01, that puts the 4-byte round trip of configs/sockets-ss20-100t-half-udp.json at or above 700 us (700.8 us; docs/VALIDATION.md): a lower bound]", 0.1, 100})
      .add(&OsConfig::syscall_instr, {"host.syscall_instr", 400.0, "instructions",
         "a conventional system call's entry and exit (SunOS 4.1.4): the trap, saving the caller's register window, the dispatcher with its argument copy, and the signal and reschedule checks on the way out; an estimate from the code's structure", 0, 1e9})
      .add(&OsConfig::switch_instr, {"host.switch_instr", 1000.0, "instructions",
         "a process's sleep, its wakeup from an interrupt or software interrupt, and the context switch back to it (run queue, MMU context, register windows flushed and refilled); an estimate from the code's structure", 0, 1e9})
      .add(&OsConfig::softint_instr, {"host.softint_instr", 150.0, "instructions",
         "posting a software interrupt from a driver and dispatching it (BSD's schednetisr and the netisr loop's entry); an estimate", 0, 1e9})
      .add(&OsConfig::select_instr, {"host.select_instr", 300.0, "instructions",
         "select() on one descriptor with nothing to read, beyond the system call: the descriptor scan and each socket's poll routine; an estimate", 0, 1e9})
      .add(&OsConfig::clock_hz, {"host.clock_hz", 100.0, "Hz", "the kernel clock (BSD's hz = 100: a 10 ms tick); a user-level timer fires on a tick", 1, 1e6})
      .add(&OsConfig::copy_mb_s, {"host.copy_mb_s", 68.0, "MB/s", "kernel copy between kernel and user memory, the data in a cache: the slope of Table 6.1, (20.0-5.0) us / 1020 B = 14.7 ns/B, a copy from the user's buffer the program has just written [calibrated]", 0.001, 1e6})
      .add(&OsConfig::cold_line_ns, {"host.cold_line_ns", 250.0, "ns",
         "the stall of a copy or checksum loop on each line of data no cache holds (a frame the NIC's DMA wrote, which invalidated its lines): the SuperSPARC's loads block on a miss, which goes over the MBus to memory; about 250 ns, an estimate (21 cycles at 85 MHz)", 0, 1e6})
      .add(&OsConfig::line_bytes, {"host.line_bytes", 32, "bytes", "the line a miss fetches: the SuperSPARC's 32-byte data cache line (the SuperCache's sub-block)", 1, 4096});
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
      invoke_ps_(st.counter(stat_name(*this, "invoke_ps"), "host CPU time in invoking user-level programs", "ps")),
      syscalls_(st.counter(stat_name(*this, "syscalls"), "conventional system calls (socket calls, select)")),
      syscall_ps_(st.counter(stat_name(*this, "syscall_ps"), "host CPU time in conventional system calls' entry and exit", "ps")),
      switches_(st.counter(stat_name(*this, "context_switches"), "sleeping processes woken and switched back to")),
      switch_ps_(st.counter(stat_name(*this, "switch_ps"), "host CPU time in sleep, wakeup and context switches", "ps")),
      softints_(st.counter(stat_name(*this, "softints"), "software interrupts dispatched (netisr)")),
      softint_ps_(st.counter(stat_name(*this, "softint_ps"), "host CPU time in posting and dispatching software interrupts (their work is the stack's: inet.netisr_ps)", "ps")),
      cold_lines_(st.counter(stat_name(*this, "cold_lines"), "lines of data no cache held that a copy or checksum touched first (frames the NIC's DMA wrote)")),
      cold_ps_(st.counter(stat_name(*this, "cold_ps"), "host CPU time stalled on those lines (host.cold_line_ns each), inside the copies' and checksums' time", "ps")) {}

uint64_t Os::copy_ps(uint64_t bytes) const { return static_cast<uint64_t>(std::llround(static_cast<double>(bytes) * 1e6 / c_.copy_mb_s)); }

uint64_t Os::copy_ps(uint64_t bytes, Data d) { return copy_ps(bytes) + (d == Data::Cold ? first_touch_ps(bytes) : 0); }

uint64_t Os::first_touch_ps(uint64_t bytes, uint64_t touched) {
  // (the data starts on a line boundary: a buffer's, or a frame's in its DMA buffer)
  const auto lines_of = [this](uint64_t b) { return (b + c_.line_bytes - 1) / c_.line_bytes; };
  const uint64_t lines = bytes > touched ? lines_of(bytes) - lines_of(touched) : 0;
  const uint64_t ps = static_cast<uint64_t>(std::llround(static_cast<double>(lines) * c_.cold_line_ns * 1000));
  cold_lines_.inc(lines);
  cold_ps_.inc(ps);
  return ps;
}

void Os::lw_enter(std::function<void()> k) {
  const uint64_t ps = cpu_.cycles_ps(c_.lw_syscall_cycles);
  lw_calls_.inc();
  lw_ps_.inc(ps);
  ++spent_.lw_syscalls;
  spent_.lw_trap_ps += ps;
  cpu_.compute(ps, std::move(k));
}

void Os::lw_leave(uint64_t copy_bytes, Data d, std::function<void()> k) {
  if (copy_bytes == 0) return k();
  const uint64_t ps = copy_ps(copy_bytes, d);
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

void Os::kernel(uint64_t ps, std::function<void()> k) {
  cpu_.charge(ps);
  cpu_.compute(ps, std::move(k));
}

void Os::syscall(const char* name, Body body, std::function<void()> k) {
  if (timeline()) {  // the call, from its trap to its return, on the CPU's track
    k = [this, name, called = cpu_.now_ps(), k = std::move(k)] {
      if (Timeline* tl = timeline()) tl->slice(tl->track(cpu_.name()), std::string(name) + " system call", called, cpu_.now_ps());
      k();
    };
  }
  // Entry and exit are one path length, half on each side of the call's own work.
  const uint64_t whole = instr_ps(c_.syscall_instr), in = whole / 2, out = whole - in;
  syscalls_.inc();
  syscall_ps_.inc(whole);
  ++spent_.syscalls;
  spent_.syscall_ps += whole;
  kernel(in, [this, body = std::move(body), out, k = std::move(k)]() mutable {
    body([this, out, k = std::move(k)]() mutable { kernel(out, std::move(k)); });
  });
}

void Os::sleep(uint64_t chan, std::function<void()> k) {
  tsleep(chan, 0, [k = std::move(k)](bool) { k(); });
}

void Os::tsleep(uint64_t chan, uint64_t until_ps, std::function<void(bool)> k) {
  const uint64_t id = next_sleeper_++;
  sleepers_.push_back({chan, id, std::move(k)});
  if (until_ps == 0) return;
  // the callout (softclock's endtsleep): the sleeper, if it still sleeps, times out
  cpu_.calendar().at(std::max(until_ps, cpu_.now_ps()), [this, id] {
    for (size_t i = 0; i < sleepers_.size(); ++i)
      if (sleepers_[i].id == id) return resume(i, true);
  });
}

bool Os::sleeping(uint64_t chan) const {
  for (const Sleeper& s : sleepers_)
    if (s.chan == chan) return true;
  return false;
}

void Os::resume(size_t i, bool timed_out) {
  auto k = std::move(sleepers_[i].k);
  sleepers_.erase(sleepers_.begin() + static_cast<long>(i));
  const uint64_t ps = instr_ps(c_.switch_instr);
  switches_.inc();
  switch_ps_.inc(ps);
  ++spent_.switches;
  spent_.switch_ps += ps;
  kernel(ps, [k = std::move(k), timed_out] { k(timed_out); });
}

void Os::wakeup(uint64_t chan) {
  for (size_t i = 0; i < sleepers_.size();) {
    if (sleepers_[i].chan != chan) {
      ++i;
      continue;
    }
    resume(i, false);
  }
}

void Os::select_loop(std::function<int()> ready, size_t ndesc, uint64_t chan, std::optional<double> timeout_us,
                     std::function<void(int)> k) {
  const uint64_t scan_ps = instr_ps(c_.select_instr * static_cast<double>(ndesc));
  const bool timed = timeout_us.has_value();
  const uint64_t until_ps = timed ? cpu_.now_ps() + static_cast<uint64_t>(*timeout_us * 1e6) : 0;
  select_pass(std::move(ready), scan_ps, chan, until_ps, timed, std::move(k));
}

void Os::select_pass(std::function<int()> ready, uint64_t scan_ps, uint64_t chan, uint64_t until_ps, bool timed,
                     std::function<void(int)> k) {
  kernel(scan_ps, [this, ready = std::move(ready), scan_ps, chan, until_ps, timed, k = std::move(k)]() mutable {
    if (const int fd = ready(); fd >= 0) return k(fd);
    if (timed && cpu_.now_ps() >= until_ps) return k(-1);  // a zero timeout, or a retry past the time
    tsleep(chan, timed ? next_tick(until_ps) : 0,  // hzto: the timeout in whole ticks
           [this, ready = std::move(ready), scan_ps, chan, until_ps, timed, k = std::move(k)](bool timed_out) mutable {
             if (timed_out) return k(-1);  // 4.4BSD: EWOULDBLOCK from tsleep, no scan
             select_pass(std::move(ready), scan_ps, chan, until_ps, timed, std::move(k));
           });
  });
}

void Os::softint(uint64_t ps, std::function<void()> fn) {
  const uint64_t all = instr_ps(c_.softint_instr) + ps;
  softints_.inc();
  softint_ps_.inc(all);
  ++spent_.softints;
  spent_.softint_ps += all;
  cpu_.interrupt(all, std::move(fn));
}

uint64_t Os::next_tick(uint64_t ps) const {
  const double tick = 1e12 / c_.clock_hz;
  return static_cast<uint64_t>(std::ceil(static_cast<double>(ps) / tick) * tick);
}

}  // namespace mbpsim::host
