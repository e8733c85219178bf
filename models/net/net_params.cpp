#include "models/core/config.h"
#include "models/net/net_config.h"

namespace mbpsim::net {

// Defaults: no figure of the MBP's router survives in the thesis, so the router defaults are
// the textbook input-queued virtual-channel router (Dally & Towles, ch. 16) that BookSim2
// models, at a 100 MHz clock typical of the router ASICs of the MBP's time (1990s).
void declare_net_params(ParamSchema& s) {
  using T = ParamType;
  s.add({"network.radix", T::Int, 4, "", "children per router, k (4: the quad-tree of Fig. 2.5)", 2, 16});
  s.add({"network.levels", T::Int, 2, "", "router levels; nodes = radix^levels (2: 16 nodes as in Fig. 2.5)", 1, 12});
  s.add({"network.clock_mhz", T::Double, 100.0, "MHz", "router and link clock", 1, 10000});
  s.add({"network.routing_delay", T::Int, 0, "cycles", "route computation (table-free NCA logic fits in the VA cycle)", 0, 16});
  s.add({"network.va_delay", T::Int, 1, "cycles", "virtual-channel allocation stage", 1, 16});
  s.add({"network.sa_delay", T::Int, 1, "cycles", "switch allocation stage", 1, 16});
  s.add({"network.st_delay", T::Int, 1, "cycles", "switch traversal stage", 0, 16});
  s.add({"network.link_latency", T::Int, 1, "cycles", "wire delay of every link, injection and ejection included", 1, 1000});
  s.add({"network.credit_delay", T::Int, 2, "cycles", "from a flit leaving a buffer until the upstream sees the credit", 1, 1000});
  s.add({"network.ni_delay", T::Int, 1, "cycles", "network interface: packet ready until its head flit enters the injection link", 0, 1000});
  s.add({"network.flit_bits", T::Int, 64, "bits", "flit size (one buffer slot)", 8, 4096});
  s.add({"network.link_width_bits", T::Int, 64, "bits", "link width; a flit takes ceil(flit/width) link cycles", 1, 4096});
  s.add({"network.vcs_per_class", T::Int, 4, "", "virtual channels per message class (request, reply, ack) and port", 1, 10});
  s.add({"network.buffer_depth", T::Int, 8, "flits", "input buffer per virtual channel (credit-based back-pressure); holds a whole multicast packet (virtual cut-through)", 1, 255});
  s.add({"network.combining", T::Bool, true, "", "acknowledge combining in routers (Fig. 2.8); false: every ack goes end to end", 0, 1});
  s.add({"network.combining_entries", T::Int, 64, "", "combining-table entries per router; when full, a multicast head waits (back-pressure)", 1, 65536});
  s.add({"network.ack_flits", T::Int, 1, "flits", "size of an acknowledgement packet", 1, 64});
  s.add({"network.watchdog_cycles", T::Int, 100000, "cycles", "no delivery for this long with packets in flight: the run fails (exit 2)", 100, 1e12});
}

uint32_t NetConfig::nodes() const {
  uint32_t n = 1;
  for (int i = 0; i < levels; ++i) n *= radix;
  return n;
}

NetConfig NetConfig::from(const Config& c) {
  NetConfig n;
  n.radix = c.get_int("network.radix");
  n.levels = c.get_int("network.levels");
  n.clock_mhz = c.get_double("network.clock_mhz");
  n.routing_delay = c.get_int("network.routing_delay");
  n.va_delay = c.get_int("network.va_delay");
  n.sa_delay = c.get_int("network.sa_delay");
  n.st_delay = c.get_int("network.st_delay");
  n.link_latency = c.get_int("network.link_latency");
  n.credit_delay = c.get_int("network.credit_delay");
  n.ni_delay = c.get_int("network.ni_delay");
  n.flit_bits = c.get_int("network.flit_bits");
  n.link_width_bits = c.get_int("network.link_width_bits");
  n.vcs_per_class = c.get_int("network.vcs_per_class");
  n.buffer_depth = c.get_int("network.buffer_depth");
  n.combining = c.get_bool("network.combining");
  n.combining_entries = c.get_int("network.combining_entries");
  n.ack_flits = c.get_int("network.ack_flits");
  n.watchdog_cycles = c.get_int("network.watchdog_cycles");
  double nodes = 1;
  for (int i = 0; i < n.levels; ++i) nodes *= n.radix;
  if (nodes > 65536) c.fail("network.levels", "radix^levels = " + std::to_string((uint64_t)nodes) + " nodes; at most 65536 are supported");
  return n;
}

}  // namespace mbpsim::net
