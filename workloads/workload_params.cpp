#include "models/core/config.h"
#include "workloads/workload.h"

namespace mbpsim {

void declare_workload_params(ParamSchema& s) {
  using T = ParamType;
  s.add({"workload.kind", T::String, "synthetic", "", "what drives the system: network-only synthetic traffic or packet script, or the MBP machine driven by the coherence tester, the memory-model litmus tester, a synthetic sharing pattern, a processor script or a trace replay (trace); or MBCF/Ether measured as in the thesis (rtt, oneway, peak, raytrace), or the MBP2's encrypted transfer (secure) and UDP/TCP message passing (datagram), or the protection and adversarial tester (protection) and the MBCF random tester (mbcf_tester) of MBCF/Ether and the MBP2", -1e300, 1e300, {"synthetic", "script", "mbp_tester", "litmus", "mbp_sharing", "mbp_script", "trace", "rtt", "oneway", "peak", "raytrace", "secure", "datagram", "protection", "mbcf_tester"}});
  s.add({"workload.pattern", T::String, "uniform", "", "synthetic destination pattern", -1e300, 1e300, {"uniform", "hotspot", "bitcomp", "multicast"}});
  s.add({"workload.injection_rate", T::Double, 0.01, "flits/node/cycle", "offered load; packets are created by a Bernoulli process per node", 0, 1});
  s.add({"workload.packet_flits", T::Int, 1, "flits", "size of a synthetic packet", 1, 1024});
  s.add({"workload.hotspot_nodes", T::IntList, nlohmann::json::array({0}), "", "hotspot pattern: the hot nodes", 0, 65535});
  s.add({"workload.hotspot_fraction", T::Double, 0.2, "", "hotspot pattern: share of packets sent to a hot node", 0, 1});
  s.add({"workload.multicast_fraction", T::Double, 0.25, "", "multicast pattern: share of packets that are multicasts", 0, 1});
  s.add({"workload.multicast_fanout", T::Int, 4, "nodes", "multicast pattern: intended receivers per multicast (distinct, not the source)", 1, 65535});
  s.add({"workload.multicast_ack", T::Bool, true, "", "multicasts ask for acknowledgements", 0, 1});
  s.add({"workload.warmup_cycles", T::Int, 1000, "cycles", "warm-up before the stats are reset", 0, 1e12});
  s.add({"workload.measure_cycles", T::Int, 10000, "cycles", "measurement window: packets created in it are measured", 1, 1e12});
  s.add({"workload.drain_cycles", T::Int, 20000, "cycles", "longest wait after the window for measured packets; longer means saturated", 0, 1e12});
  s.add({"workload.inject_during_drain", T::Bool, true, "", "keep offering load after the window so measured packets see a steady network (false: let it empty)", 0, 1});
  s.add({"workload.source_queue", T::Int, 4096, "packets", "synthetic traffic: packets one node's source queue holds waiting for the network; a packet due when it is full is refused (summary.packets_refused, and the run is saturated), so an overloaded run's memory stays bounded", 1, 1e7});
  s.add({"workload.script", T::Json, nlohmann::json::array(), "", "script workload: list of {cycle, src, dests, ack, holders, flits, silent}", -1e300, 1e300});
}

}  // namespace mbpsim
