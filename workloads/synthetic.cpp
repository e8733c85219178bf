#include "workloads/trace/replay.h"
#include "workloads/synthetic.h"
#include "workloads/mbcf_workloads.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "models/core/error.h"
#include "workloads/mbp_workload.h"
#include "workloads/testers/coherence_tester.h"
#include "workloads/testers/litmus_tester.h"

namespace mbpsim {

void CopyHolders::add(uint64_t txn, std::vector<uint32_t> holders, uint32_t deliveries) {
  std::sort(holders.begin(), holders.end());
  txns_[txn] = Txn{std::move(holders), deliveries};
}

bool CopyHolders::deliver(uint64_t txn, uint32_t node) {
  auto it = txns_.find(txn);
  if (it == txns_.end()) internal_error("multicast delivery for an unknown transaction");
  const bool held = std::binary_search(it->second.holders.begin(), it->second.holders.end(), node);
  if (--it->second.remaining == 0) txns_.erase(it);
  return held;
}

SyntheticTraffic::SyntheticTraffic(const Config& c, net::Network& net, uint64_t seed) : net_(net) {
  const uint32_t n = net.topology().nodes();
  phases_.warmup = c.get_int("workload.warmup_cycles");
  phases_.measure = c.get_int("workload.measure_cycles");
  phases_.drain = c.get_int("workload.drain_cycles");
  const std::string pat = c.get_string("workload.pattern");
  pattern_ = pat == "uniform"   ? Pattern::Uniform
             : pat == "hotspot" ? Pattern::Hotspot
             : pat == "bitcomp" ? Pattern::Bitcomp
                                : Pattern::Multicast;
  rate_ = c.get_double("workload.injection_rate");
  flits_ = c.get_int("workload.packet_flits");
  pkt_prob_ = rate_ / flits_;
  log1p_minus_prob_ = std::log1p(-pkt_prob_);
  hot_frac_ = c.get_double("workload.hotspot_fraction");
  mc_frac_ = c.get_double("workload.multicast_fraction");
  fanout_ = c.get_int("workload.multicast_fanout");
  mc_ack_ = c.get_bool("workload.multicast_ack");
  inject_during_drain_ = c.get_bool("workload.inject_during_drain");
  source_queue_ = static_cast<size_t>(c.get_int("workload.source_queue"));
  for (int64_t h : c.get_int_list("workload.hotspot_nodes")) {
    if (h >= n) c.fail("workload.hotspot_nodes", "node " + std::to_string(h) + " does not exist (" + std::to_string(n) + " nodes)");
    hot_.push_back(static_cast<uint32_t>(h));
  }
  if (pattern_ == Pattern::Hotspot && hot_.empty())
    c.fail("workload.hotspot_nodes", "the hotspot pattern needs at least one hot node");
  if (pattern_ == Pattern::Bitcomp && (n & (n - 1)))
    c.fail("workload.pattern", "bitcomp needs a power-of-two node count, not " + std::to_string(n));
  if (pattern_ == Pattern::Multicast && flits_ > net.config().buffer_depth)
    c.fail("workload.packet_flits", "multicasts move by virtual cut-through: a packet of " +
                                        std::to_string(flits_) + " flits needs network.buffer_depth >= " +
                                        std::to_string(flits_));
  if (pattern_ == Pattern::Multicast && fanout_ > n - 1)
    c.fail("workload.multicast_fanout", "at most " + std::to_string(n - 1) + " receivers exist");
  for (uint32_t i = 0; i < n; ++i) rng_.emplace_back(seed, "workload.node" + std::to_string(i));
}

// The cycle from which no packet is made: the window's end, or the drain's.
static uint64_t injection_stop(const Workload::Phases& ph, bool inject_during_drain) {
  return ph.warmup + ph.measure + (inject_during_drain ? ph.drain : 0);
}

void SyntheticTraffic::start() {
  if (pkt_prob_ <= 0) return;
  // A first packet due after injection stops is never made (at a tiny rate the gap is
  // Rng::kNever, a time the network's clock must never be asked to wait for).
  const uint64_t stop = injection_stop(phases_, inject_during_drain_);
  for (uint32_t i = 0; i < rng_.size(); ++i) {
    const uint64_t first = rng_[i].geometric(pkt_prob_, log1p_minus_prob_) - 1;
    if (first < stop) net_.set_timer(i, first, 0);
  }
}

void SyntheticTraffic::on_timer(uint32_t node, uint64_t, uint64_t now) {
  Rng& r = rng_[node];
  if (net_.source_queued(node, net::kRequest) < source_queue_) {  // every synthetic packet is a request
    make_packet(node, r);
  } else if (net_.measuring()) {
    // A full source queue refuses the packet: it is offered (counted) but never made.
    ++refused_measured_;
    window_offered_flits_ += flits_;
  }
  // Keep offering load through the drain so measured packets see a steady network.
  const uint64_t next = now + r.geometric(pkt_prob_, log1p_minus_prob_);
  const uint64_t stop = injection_stop(phases_, inject_during_drain_);
  if (next < stop) net_.set_timer(node, next, 0);
}

void SyntheticTraffic::make_packet(uint32_t node, Rng& r) {
  const uint32_t n = net_.topology().nodes();
  net::Packet* p = net_.new_packet();
  p->src = node;
  p->size_flits = static_cast<uint16_t>(flits_);
  p->cls = net::kRequest;
  switch (pattern_) {
    case Pattern::Uniform: p->dst = r.below(n); break;
    case Pattern::Bitcomp: p->dst = ~node & (n - 1); break;
    case Pattern::Hotspot:
      p->dst = r.uniform() < hot_frac_ ? hot_[r.below(hot_.size())] : r.below(n);
      break;
    case Pattern::Multicast:
      if (r.uniform() < mc_frac_) {
        std::vector<uint32_t> d;
        while (d.size() < fanout_) {  // distinct receivers other than the source
          const uint32_t x = r.below(n);
          if (x != node && std::find(d.begin(), d.end(), x) == d.end()) d.push_back(x);
        }
        p->ack_req = mc_ack_;
        net_.inject_multicast(p, d);
        holders_.add(p->txn, d, net_.covered_count(node, p->bitmap));
      } else {
        p->dst = r.below(n);
      }
      break;
  }
  if (p->kind == net::PacketKind::Unicast) net_.inject(p);
  if (p->measured) {
    ++measured_created_;
    window_offered_flits_ += p->size_flits;
  }
}

void SyntheticTraffic::on_packet(uint32_t node, net::Packet& p, uint64_t) {
  if (p.kind == net::PacketKind::Multicast) {
    const bool held = holders_.deliver(p.txn, node);
    if (!held) net_.note_no_copy();
    if (p.ack_req) net_.send_ack(node, p, held);
  }
}

void SyntheticTraffic::end_of_window() {
  window_closed_ = true;
  window_end_flits_ = net_.flits_delivered->value;
  window_cycles_ = phases_.measure;
}

bool SyntheticTraffic::done() const {
  return window_closed_ && net_.measured_in_flight() == 0 &&
         (inject_during_drain_ || net_.in_flight() == 0);
}

std::string SyntheticTraffic::unfinished() const {
  return std::to_string(net_.measured_in_flight()) + " packets of the measurement window (" + std::to_string(net_.in_flight()) +
         " in all) still in flight: the network is saturated (summary.saturated is true)";
}

nlohmann::ordered_json SyntheticTraffic::summary() const {
  const double n = net_.topology().nodes();
  const double cyc = static_cast<double>(window_cycles_);
  const auto& lu = *net_.lat_unicast;
  const auto& lm = *net_.lat_multicast;
  const auto& la = *net_.lat_ack;
  nlohmann::ordered_json s;
  // A figure with nothing measured behind it is null, never 0 (workloads/summary_fields.h).
  auto measured = [](const auto& h, auto v) { return h.count() ? nlohmann::ordered_json(v) : nlohmann::ordered_json(nullptr); };
  s["offered_rate"] = cyc > 0 ? nlohmann::ordered_json(window_offered_flits_ / (n * cyc)) : nlohmann::ordered_json(nullptr);
  s["accepted_rate"] = cyc > 0 ? nlohmann::ordered_json(window_end_flits_ / (n * cyc)) : nlohmann::ordered_json(nullptr);
  s["avg_unicast_latency_cycles"] = measured(lu, lu.mean());
  s["p99_unicast_latency_cycles"] = measured(lu, lu.percentile(0.99));
  s["packets_delivered"] = lu.count() + lm.count();
  s["packets_measured"] = measured_created_;
  s["packets_refused"] = refused_measured_;
  s["saturated"] = !done() || refused_measured_ > 0;
  if (pattern_ == Pattern::Multicast) {
    s["avg_multicast_completion_cycles"] = measured(lm, lm.mean());
    s["avg_ack_latency_cycles"] = measured(la, la.mean());
  }
  return s;
}

ScriptTraffic::ScriptTraffic(const Config& c, net::Network& net) : net_(net) {
  const uint32_t n = net.topology().nodes();
  const auto& js = c.get_json("workload.script");
  const std::string key = "workload.script";
  if (!js.is_array()) c.fail(key, "expected a list of packets");
  if (js.empty()) c.fail(key, "the script workload needs at least one packet");
  auto node_of = [&](const nlohmann::json& v, const std::string& where) {
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() >= n)
      c.fail(key, where + ": expected a node id below " + std::to_string(n) + ", got " + v.dump());
    return v.get<uint32_t>();
  };
  for (size_t i = 0; i < js.size(); ++i) {
    const auto& e = js[i];
    const std::string w = "[" + std::to_string(i) + "]";
    if (!e.is_object()) c.fail(key, w + ": expected an object");
    for (auto it = e.begin(); it != e.end(); ++it) {
      static const std::set<std::string> known = {"cycle", "src", "dests", "ack", "holders", "flits", "silent"};
      if (!known.count(it.key())) c.fail(key, w + "." + it.key() + ": unknown field (known: cycle, src, dests, ack, holders, flits, silent)");
    }
    Entry en;
    if (!e.contains("src")) c.fail(key, w + ": missing 'src'");
    en.src = node_of(e["src"], w + ".src");
    const auto cyc = e.value("cycle", nlohmann::json(0));
    if (!cyc.is_number_integer() || cyc.get<int64_t>() < 0) c.fail(key, w + ".cycle: expected a non-negative integer");
    en.cycle = cyc.get<uint64_t>();
    if (!e.contains("dests") || !e["dests"].is_array() || e["dests"].empty())
      c.fail(key, w + ".dests: expected a non-empty list of node ids");
    for (size_t j = 0; j < e["dests"].size(); ++j)
      en.dests.push_back(node_of(e["dests"][j], w + ".dests[" + std::to_string(j) + "]"));
    if (e.contains("holders")) {
      if (!e["holders"].is_array()) c.fail(key, w + ".holders: expected a list of node ids");
      for (size_t j = 0; j < e["holders"].size(); ++j)
        en.holders.push_back(node_of(e["holders"][j], w + ".holders[" + std::to_string(j) + "]"));
    } else {
      en.holders = en.dests;
    }
    if (e.contains("silent")) {  // receivers that never acknowledge: exercises the watchdog
      if (!e["silent"].is_array()) c.fail(key, w + ".silent: expected a list of node ids");
      for (size_t j = 0; j < e["silent"].size(); ++j)
        en.silent.push_back(node_of(e["silent"][j], w + ".silent[" + std::to_string(j) + "]"));
    }
    const auto ack = e.value("ack", nlohmann::json(true));
    if (!ack.is_boolean()) c.fail(key, w + ".ack: expected true or false");
    en.ack = ack.get<bool>();
    const auto fl = e.value("flits", nlohmann::json(1));
    if (!fl.is_number_integer() || fl.get<int64_t>() < 1 || fl.get<int64_t>() > 1024)
      c.fail(key, w + ".flits: expected an integer from 1 to 1024");
    en.flits = fl.get<int>();
    const bool multi = en.dests.size() > 1;
    if (multi && en.flits > net.config().buffer_depth)
      c.fail(key, w + ".flits: multicasts move by virtual cut-through: " + std::to_string(en.flits) +
                      " flits need network.buffer_depth >= " + std::to_string(en.flits));
    if (multi && std::find(en.dests.begin(), en.dests.end(), en.src) != en.dests.end())
      c.fail(key, w + ".dests: a multicast cannot include its source");
    entries_.push_back(std::move(en));
  }
  phases_.warmup = 0;
  phases_.measure = c.get_int("workload.measure_cycles");
  phases_.drain = c.get_int("workload.drain_cycles");
  for (const auto& e : entries_)
    if (e.cycle >= phases_.measure)
      c.fail(key, "a packet starts at cycle " + std::to_string(e.cycle) + ", after the measurement window (workload.measure_cycles)");
}

std::string ScriptTraffic::unfinished() const {
  return std::to_string(entries_.size() - started_) + " scripted packets not yet sent, " + std::to_string(net_.in_flight()) + " in flight";
}

void ScriptTraffic::start() {
  for (size_t i = 0; i < entries_.size(); ++i) net_.set_timer(entries_[i].src, entries_[i].cycle, i);
}

void ScriptTraffic::on_timer(uint32_t node, uint64_t tag, uint64_t) {
  const Entry& e = entries_[tag];
  net::Packet* p = net_.new_packet();
  p->src = e.src;
  p->size_flits = static_cast<uint16_t>(e.flits);
  p->user = tag;
  if (e.dests.size() == 1) {
    p->dst = e.dests[0];
    net_.inject(p);
  } else {
    p->ack_req = e.ack;
    net_.inject_multicast(p, e.dests);
    holders_.add(p->txn, e.holders, net_.covered_count(e.src, p->bitmap));
  }
  ++started_;
}

void ScriptTraffic::on_packet(uint32_t node, net::Packet& p, uint64_t) {
  if (p.kind == net::PacketKind::Multicast) {
    receivers_.push_back(node);
    const bool held = holders_.deliver(p.txn, node);
    if (!held) net_.note_no_copy();
    const auto& silent = entries_[p.user].silent;
    if (p.ack_req && std::find(silent.begin(), silent.end(), node) == silent.end())
      net_.send_ack(node, p, held);
  } else {
    ++unicast_received_;
  }
}

bool ScriptTraffic::sends_acked_multicasts() const {
  return std::any_of(entries_.begin(), entries_.end(), [](const Entry& e) { return e.dests.size() > 1 && e.ack; });
}

void ScriptTraffic::on_ack(uint32_t, const net::Packet& ack, uint64_t) {
  ++acks_;
  ack_count_ += ack.ack_count;
  ack_held_ += ack.ack_held;
}

nlohmann::ordered_json ScriptTraffic::summary() const {
  std::vector<uint32_t> r = receivers_;
  std::sort(r.begin(), r.end());
  nlohmann::ordered_json s;
  s["packets_injected"] = started_;
  s["multicast_receivers"] = r.size();
  s["multicast_receiver_nodes"] = r;
  s["dummy_acks"] = net_.dummy_acks->value;
  s["dropped_no_copy"] = net_.dropped_no_copy->value;
  s["acks_at_source"] = acks_;
  s["receivers_acknowledged"] = ack_count_;
  s["receivers_holding_copy"] = ack_held_;
  s["unicast_received"] = unicast_received_;
  s["completed"] = done();
  s["last_cycle"] = net_.now();
  return s;
}

void SyntheticTraffic::footprint(const Config& c, const net::NetConfig& nc, MemoryForecast& f) {
  const double n = nc.nodes(), k = nc.radix;
  const double rate = c.get_double("workload.injection_rate");  // flits per node per cycle
  const double link = std::ceil(static_cast<double>(nc.flit_bits) / nc.link_width_bits);  // cycles per flit
  const std::string pat = c.get_string("workload.pattern");
  // Flits per node per cycle the tree accepts: a subtree of s nodes sends what leaves it over
  // one uplink; a hot node takes its share over one ejection link.
  double accepted = rate;
  for (double s = 1; s < n; s *= k) {
    const double leaving = pat == "bitcomp" ? 1.0 : (n - s) / (n - 1);
    if (leaving > 0) accepted = std::min(accepted, 1.0 / (link * s * leaving));
  }
  if (pat == "hotspot") {
    const double hot = static_cast<double>(c.get_int_list("workload.hotspot_nodes").size());
    const double share = c.get_double("workload.hotspot_fraction");
    if (hot > 0 && share > 0) accepted = std::min(accepted, hot / (link * n * share));
  }
  const double cycles = static_cast<double>(c.get_int("workload.warmup_cycles") + c.get_int("workload.measure_cycles") +
                                            (c.get_bool("workload.inject_during_drain") ? c.get_int("workload.drain_cycles") : 0));
  const double growth = (rate - accepted) / static_cast<double>(c.get_int("workload.packet_flits"));  // packets per node per cycle
  const double bound = static_cast<double>(c.get_int("workload.source_queue"));
  const double queued = growth > 0 ? std::min(bound, growth * cycles) : 0.0;
  const uint64_t per = net::PacketPool::bytes_per_packet() + sizeof(net::Packet*);  // the packet and its queue slot
  f.add("queued packets", static_cast<uint64_t>(n * queued) * per, "workload.injection_rate beyond the tree's capacity, workload.source_queue",
        static_cast<uint64_t>(n * bound) * per);
}

void forecast_memory(const Config& c, MemoryForecast& f) {
  const std::string kind = c.get_string("workload.kind");
  if (is_mbcf_workload(kind)) return systems::cluster_footprint(c, f);
  const net::NetConfig nc = net::NetConfig::from(c);
  net::Network::footprint(nc, f);
  AddressUse use;  // mbp_script: not known before its script runs
  if (kind == "mbp_tester") use = CoherenceTester::address_use(c);
  else if (kind == "litmus") use = LitmusTester::address_use(c);
  else if (kind == "mbp_sharing") use = SharingWorkload::address_use(c);
  else if (kind == "trace") use = TraceReplay::footprint(c, f);
  else if (kind == "synthetic") return SyntheticTraffic::footprint(c, nc, f);
  else if (kind != "mbp_script") return;  // a packet script
  systems::mbp_machine_footprint(c, nc.nodes(), use, f);
}

std::unique_ptr<Workload> make_workload(const Config& c, net::Network& net, Stats& stats, uint64_t seed) {
  const std::string kind = c.get_string("workload.kind");
  if (auto w = make_mbcf_workload(kind, c, stats, seed)) return w;
  if (kind == "script") return std::make_unique<ScriptTraffic>(c, net);
  if (kind == "mbp_tester") return std::make_unique<CoherenceTester>(c, net, stats, seed);
  if (kind == "litmus") return std::make_unique<LitmusTester>(c, net, stats, seed);
  if (kind == "mbp_sharing") return std::make_unique<SharingWorkload>(c, net, stats, seed);
  if (kind == "mbp_script") return std::make_unique<MbpScript>(c, net, stats, seed);
  if (kind == "trace") return std::make_unique<TraceReplay>(c, net, stats, seed);
  return std::make_unique<SyntheticTraffic>(c, net, seed);
}

}  // namespace mbpsim
