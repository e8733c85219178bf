#include "models/core/config.h"
#include "models/core/params.h"
#include "models/net/net_config.h"

namespace mbpsim::net {

// Defaults: no figure of the MBP's router survives in the thesis, so the router defaults are
// the textbook input-queued virtual-channel router (Dally & Towles, ch. 16) that BookSim2
// models, at a 100 MHz clock typical of the router ASICs of the MBP's time (1990s).
const ParamTable<NetConfig>& NetConfig::params() {
  static const ParamTable<NetConfig> t = ParamTable<NetConfig>()
      .add(&NetConfig::radix, {"network.radix", 4, "", "children per router, k (4: the quad-tree of Fig. 2.5)", 2, 16})
      .add(&NetConfig::levels, {"network.levels", 2, "", "router levels; nodes = radix^levels (2: 16 nodes as in Fig. 2.5)", 1, 12})
      .add(&NetConfig::clock_mhz, {"network.clock_mhz", 100.0, "MHz", "router and link clock", 1, 10000})
      .add(&NetConfig::routing_delay, {"network.routing_delay", 0, "cycles", "route computation (table-free NCA logic fits in the VA cycle)", 0, 16})
      .add(&NetConfig::va_delay, {"network.va_delay", 1, "cycles", "virtual-channel allocation stage", 1, 16})
      .add(&NetConfig::sa_delay, {"network.sa_delay", 1, "cycles", "switch allocation stage", 1, 16})
      .add(&NetConfig::st_delay, {"network.st_delay", 1, "cycles", "switch traversal stage", 0, 16})
      .add(&NetConfig::link_latency, {"network.link_latency", 1, "cycles", "wire delay of every link, injection and ejection included", 1, 1000})
      .add(&NetConfig::credit_delay, {"network.credit_delay", 2, "cycles", "from a flit leaving a buffer until the upstream sees the credit", 1, 1000})
      .add(&NetConfig::ni_delay, {"network.ni_delay", 1, "cycles", "network interface: packet ready until its head flit enters the injection link", 0, 1000})
      .add(&NetConfig::flit_bits, {"network.flit_bits", 64, "bits", "flit size (one buffer slot)", 8, 4096})
      .add(&NetConfig::link_width_bits, {"network.link_width_bits", 64, "bits", "link width; a flit takes ceil(flit/width) link cycles", 1, 4096})
      .add(&NetConfig::vcs_per_class, {"network.vcs_per_class", 4, "", "virtual channels per message class (request, reply, ack) and port", 1, 10})
      .add(&NetConfig::buffer_depth, {"network.buffer_depth", 8, "flits", "input buffer per virtual channel (credit-based back-pressure); holds a whole multicast packet (virtual cut-through)", 1, 255})
      .add(&NetConfig::combining, {"network.combining", true, "", "acknowledge combining in routers (Fig. 2.8); false: every ack goes end to end", 0, 1})
      .add(&NetConfig::combining_entries, {"network.combining_entries", 64, "", "combining-table entries per router; when full, a multicast head waits (back-pressure)", 1, 65536})
      .add(&NetConfig::ack_flits, {"network.ack_flits", 1, "flits", "size of an acknowledgement packet", 1, 64})
      .add(&NetConfig::watchdog_cycles, {"network.watchdog_cycles", 100000, "cycles", "no delivery for this long with packets in flight: the run fails (exit 2)", 100, 1e12})
      .add(&NetConfig::fast_path, {"network.fast_path", true, "", "a router holding a single flit takes its cycle without scanning its ports and VCs (a host-speed switch: statistics are identical either way; false runs the general allocators for differential testing)", 0, 1})
      .add(&NetConfig::run_ahead, {"network.run_ahead", true, "", "when the client reads time only from the network (the synthetic and scripted traffic; not the MBP), the network runs its busy cycles one after another in one SystemC activation while nothing else in the simulation is due, up to the end of the runner's slice, instead of one activation per busy cycle (a host-speed switch: statistics are identical either way)", 0, 1})
      .add(&NetConfig::express_hops, {"network.express_hops", true, "", "with the lone-flit path (network.fast_path) and a client whose results do not depend on the order of one cycle's deliveries (the synthetic and scripted traffic; not the MBP), a one-flit unicast that arrives alone at a router holding nothing crosses it at once, stamped with the cycle the pipeline would cross it in, when nothing can compete with it until then (Router::express; a host-speed switch: statistics are identical either way)", 0, 1});
  return t;
}

NetConfig::NetConfig() { params().set_defaults(*this); }

void declare_net_params(ParamSchema& s) { NetConfig::params().declare(s); }

uint32_t NetConfig::nodes() const {
  uint32_t n = 1;
  for (int i = 0; i < levels; ++i) n *= radix;
  return n;
}

NetConfig NetConfig::from(const Config& c) {
  NetConfig n;
  params().load(n, c);
  double nodes = 1;
  for (int i = 0; i < n.levels; ++i) nodes *= n.radix;
  if (nodes > 65536) c.fail("network.levels", "radix^levels = " + std::to_string((uint64_t)nodes) + " nodes; at most 65536 are supported");
  return n;
}

}  // namespace mbpsim::net
