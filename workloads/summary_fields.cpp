#include "workloads/summary_fields.h"

#include <algorithm>

namespace mbpsim {

namespace {
using K = std::vector<std::string>;
const K kNet{"synthetic"};
const K kScript{"script"};
const K kMbp{"mbp_tester", "litmus", "mbp_sharing", "mbp_script", "trace"};
const K kMbcf{"rtt", "oneway", "peak", "raytrace", "secure", "datagram"};
const K kOver{"rtt", "oneway", "peak", "raytrace"};
const K kTesters{"mbcf_tester", "protection"};
K all_of(std::initializer_list<K> ks) {
  K out;
  for (const K& k : ks) out.insert(out.end(), k.begin(), k.end());
  return out;
}
}  // namespace

const std::vector<SummaryField>& summary_fields() {
  static const std::vector<SummaryField> f = {
      // ---- network-only synthetic traffic (workloads/synthetic.cpp)
      {"offered_rate", "flits/node/cycle", "flits of the packets created in the measurement window, per node per cycle (a multicast's flits once, at its source); null without a window", kNet},
      {"accepted_rate", "flits/node/cycle", "flits delivered in the measurement window, per node per cycle; every copy of a multicast counts, so with multicast traffic it exceeds offered_rate; null without a window", kNet},
      {"avg_unicast_latency_cycles", "cycles", "mean latency of the measured unicast packets, creation to tail delivery (source queueing included); null when none was measured", kNet},
      {"p99_unicast_latency_cycles", "cycles", "99th percentile of the same latencies; null when none was measured", kNet},
      {"packets_delivered", "packets", "measured packets delivered: unicast, and multicast counted once per packet", kNet},
      {"packets_measured", "packets", "packets created in the measurement window", kNet},
      {"packets_refused", "packets", "packets of the window refused by a full source queue", kNet},
      {"saturated", "bool", "true when the window's packets did not all drain within workload.drain_cycles or some were refused: the network is past saturation and its latencies are lower bounds", kNet},
      {"avg_multicast_completion_cycles", "cycles", "multicast pattern: mean time from a multicast's creation until its last copy is delivered; null when none was measured", kNet},
      {"avg_ack_latency_cycles", "cycles", "multicast pattern: mean time from a multicast's creation until its source holds the acknowledgement of every receiver (combined in the routers or end to end); null when none was measured", kNet},
      // ---- the packet script (Fig. 2.7)
      {"packets_injected", "packets", "script packets injected", kScript},
      {"multicast_receivers", "nodes", "distinct nodes that received a multicast", kScript},
      {"multicast_receiver_nodes", "list", "those nodes' numbers, ascending", kScript},
      {"dummy_acks", "acks", "dummy acknowledgements routers made for subtrees a multicast did not enter (Fig. 2.8)", kScript},
      {"dropped_no_copy", "packets", "multicast copies dropped at nodes that hold no copy of the page", kScript},
      {"acks_at_source", "acks", "acknowledgement packets that reached their sources", kScript},
      {"receivers_acknowledged", "nodes", "receivers the acknowledgements at the sources account for", kScript},
      {"receivers_holding_copy", "nodes", "of those, receivers that held a copy", kScript},
      {"unicast_received", "packets", "unicast script packets delivered", kScript},
      {"completed", "bool", "every script packet was delivered and acknowledged", kScript},
      {"last_cycle", "cycles", "network cycle of the last event", kScript},
      // ---- the MBP machine (workloads/mbp_workload.cpp, models/mbp/system.cpp)
      {"finished", "bool", "the workload did all its work (false: stopped by a limit, a signal or a failure)", all_of({kMbp, kMbcf, kTesters})},
      {"exec_time_s", "s", "simulated time until the last reference completed (MBP), or until the display held the whole frame (raytrace, 6.2.6)", all_of({kMbp, {"raytrace"}})},
      {"operations", "references", "memory references the processors completed", kMbp},
      {"l1_hit_rate", "fraction", "L1 hits over L1 accesses of cacheable loads and stores; null with no such access", kMbp},
      {"l2_hit_rate", "fraction", "L2 hits over L2 accesses; null with no such access", kMbp},
      {"served_in_node", "requests", "misses served inside the node (another cache, the local memory bank)", kMbp},
      {"served_via_mbp", "requests", "misses that went through the MBP to another node", kMbp},
      {"buffered_stores", "stores", "stores to update and non-cacheable pages, written through the write buffer (not in the hit rates)", kMbp},
      {"coherence_rounds", "rounds", "coherence rounds the homes started (multicast and unicast)", kMbp},
      {"multicast_rounds", "rounds", "of those, multicast rounds", kMbp},
      {"round_deliveries", "packets", "deliveries of coherence rounds to nodes", kMbp},
      {"deliveries_without_copy", "packets", "of those, deliveries to nodes that held no copy (the directory keeps one sharer set per page)", kMbp},
      {"acks_at_home", "acks", "acknowledgements that reached the homes, combined and unicast", kMbp},
      {"protocol_switches", "switches", "pages whose protocol was switched (invalidate, update, non-cacheable)", kMbp},
      {"transitions_exercised", "transitions", "protocol table rows taken at least once", kMbp},
      {"transitions_defined", "transitions", "protocol table rows defined (home and remote)", kMbp},
      {"references", "references", "references of the workload: the synthetic pattern's total, or the trace's replayed", {"mbp_sharing", "trace"}},
      {"steps", "steps", "processor script steps run", {"mbp_script"}},
      {"checks_completed", "checks", "coherence tester: value checks completed", {"mbp_tester"}},
      {"check_failures", "checks", "coherence tester: checks that read a wrong value (0 for a correct machine)", {"mbp_tester"}},
      {"store_checks", "checks", "coherence tester: stores checked", {"mbp_tester"}},
      {"atomic_checks", "checks", "coherence tester: atomic read-modify-writes checked", {"mbp_tester"}},
      {"racing_loads", "loads", "coherence tester: loads that raced a store, checked against both values", {"mbp_tester"}},
      {"protocol_switch_requests", "requests", "coherence tester: protocol switches it asked for", {"mbp_tester"}},
      {"runs", "runs", "litmus: test runs", {"litmus"}},
      {"forbidden_outcomes", "outcomes", "litmus: outcomes the memory model forbids that were observed (0 for a correct machine)", {"litmus"}},
      {"values_from_other_runs", "loads", "litmus: loads that returned a value of another run (0 for a correct machine)", {"litmus"}},
      {"noise_operations", "references", "litmus: references of the noise threads", {"litmus"}},
      {"relaxed_allowed", "outcomes", "litmus: relaxed outcomes the model allows", {"litmus"}},
      {"relaxed_observed", "outcomes", "litmus: of those, outcomes observed", {"litmus"}},
      {"tests", "object", "litmus: per test and protocol, runs, forbidden outcomes and outcome counts", {"litmus"}},
      {"trace", "text", "trace replay: the trace folder", {"trace"}},
      {"program", "text", "trace replay: the traced program", {"trace"}},
      {"threads", "threads", "trace replay: threads in the trace", {"trace"}},
      {"idle_nodes", "nodes", "trace replay: nodes whose processors run no thread", {"trace"}},
      {"records", "records", "trace replay: records replayed", {"trace"}},
      {"roi_time_s", "s", "trace replay: simulated time of the region of interest (roi_begin to roi_end)", {"trace"}},
      {"speedup", "ratio", "trace replay: trace.baseline_s over exec_time_s", {"trace"}},
      {"context_switches", "switches", "trace replay: thread switches on a processor", {"trace"}},
      {"lock_retries", "retries", "trace replay: lock acquisitions that found the lock taken", {"trace"}},
      {"stale_sync_reads", "reads", "trace replay: synchronisation reads that saw an older value than the capture", {"trace"}},
      {"hand_off_waits", "waits", "trace replay: deps that found the writer's record not yet passed", {"trace"}},
      {"busy_fraction", "fraction", "trace replay: busy time over all thread time; null when no thread ran", {"trace"}},
      {"memory_stall_fraction", "fraction", "trace replay: memory stall time over all thread time; null when no thread ran", {"trace"}},
      {"sync_fraction", "fraction", "trace replay: synchronisation time over all thread time; null when no thread ran", {"trace"}},
      {"per_thread", "list", "trace replay: per thread, its node, processor, references and times in seconds", {"trace"}},
      {"coherence_messages", "messages", "trace replay: coherence messages by type", {"trace"}},
      {"multicast_fanout_mean", "nodes", "trace replay: mean receivers of a multicast round; null without one", {"trace"}},
      {"combined_acks_at_home", "acks", "trace replay: combined acknowledgements that reached the homes", {"trace"}},
      {"acks_from_holders", "acks", "trace replay: receivers that acknowledged holding a copy", {"trace"}},
      {"network_bytes_per_level", "list", "trace replay: bytes down and up each tree level's links (level 0: the root's)", {"trace"}},
      // ---- MBCF/Ether and the MBP2 (workloads/mbcf_workloads.cpp, socket_workloads.cpp)
      {"points", "list", "the measured points: command, size (bytes), value and its unit, host CPU time per operation (and, where a workload has them, its own: oneway's path and receiver_os, peak over TCP's warmup_messages (status_every with workload.tcp_peak_method check) and, with workload.phase_jitter_ms, phase_idle_ms)", kMbcf},
      {"nic", "list", "MBP2: per card, its units' utilisation and the PME's interrupt rate", all_of({kMbcf, kTesters})},
      {"over", "text", "what carried the messages: mbcf, udp or tcp (workload.over)", kOver},
      {"calc_nodes", "nodes", "raytrace: calculator nodes (node 0 displays)", {"raytrace"}},
      {"payload_bytes", "bytes", "raytrace: pixels (one byte each) per message, the unit of cyclic distribution", {"raytrace"}},
      {"packets", "messages", "raytrace: messages that carried the frame", {"raytrace"}},
      {"frame_correct", "bool", "raytrace: the display's frame equals the scene's pixels, byte for byte", {"raytrace"}},
      {"display", "text", "raytrace: what showed the pixels: frame_buffer (over mbcf, the calculators' writes into it), x11 (the display program's XPutImages through the X server) or memory (the program's memory only) (workload.display)", {"raytrace"}},
      {"first_transfer_us", "us", "secure: time of the first transfer, key exchange included", {"secure"}},
      {"verified_bytes", "bytes", "secure: bytes the receiver verified", {"secure"}},
      {"corrupted_bytes", "bytes", "secure: bytes that arrived wrong (0 for a correct system)", {"secure"}},
      {"protocol", "text", "datagram: udp or tcp", {"datagram"}},
      {"checked_bytes", "bytes", "datagram: bytes checked at the receiver", {"datagram"}},
      {"mismatched_datagrams", "datagrams", "datagram: datagrams whose bytes were wrong (0 for a correct system)", {"datagram"}},
      {"send_buffer_waits", "waits", "datagram: sends that waited for socket buffer space", {"datagram"}},
      {"echo_timeouts", "timeouts", "datagram: echoes that did not come back in time", {"datagram"}},
      {"stray_datagrams", "datagrams", "datagram: datagrams that matched no outstanding send", {"datagram"}},
      {"duplicate_datagrams", "datagrams", "datagram: datagrams received twice", {"datagram"}},
      // ---- the MBCF random tester and the protection tester
      {"checks", "checks", "MBCF tester: checks run", {"mbcf_tester"}},
      {"failed", "checks", "checks that failed (protection: attacks the system did not stop); 0 for a correct system", kTesters},
      {"clients", "clients", "MBCF tester: client processes", {"mbcf_tester"}},
      {"ops_per_client", "operations", "MBCF tester: operations per client", {"mbcf_tester"}},
      {"results", "list", "per check or attack, its outcome", kTesters},
      {"attacks", "attacks", "protection: attacks tried", {"protection"}},
      {"passed", "attacks", "protection: attacks the system stopped", {"protection"}},
      {"skipped", "attacks", "protection: attacks that do not apply to this system", {"protection"}},
  };
  return f;
}

const SummaryField* find_summary_field(const std::string& kind, const std::string& name) {
  for (const auto& f : summary_fields())
    if (f.name == name && std::find(f.kinds.begin(), f.kinds.end(), kind) != f.kinds.end()) return &f;
  return nullptr;
}

}  // namespace mbpsim
