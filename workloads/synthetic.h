// Synthetic traffic (uniform, hotspot, bit-complement, multicast-heavy) with warm-up,
// measurement window and drain, and a scripted workload that injects a given list of
// packets (used for the Figure 2.7/2.8 example).
#pragma once
#include <unordered_map>
#include <vector>

#include "models/core/rng.h"
#include "workloads/workload.h"

namespace mbpsim {

// Decides, for a multicast delivery, whether the receiving node really held a copy: the
// intended receivers do; nodes reached only through the bitmap's imprecision do not.
class CopyHolders {
 public:
  void add(uint64_t txn, std::vector<uint32_t> holders, uint32_t deliveries);
  // Records one delivery; returns whether `node` is a holder.
  bool deliver(uint64_t txn, uint32_t node);

 private:
  struct Txn {
    std::vector<uint32_t> holders;  // sorted
    uint32_t remaining;
  };
  std::unordered_map<uint64_t, Txn> txns_;
};

class SyntheticTraffic : public Workload {
 public:
  SyntheticTraffic(const Config& c, net::Network& net, uint64_t seed);
  // Adds to `f` the packets waiting in the sources' queues: where the offered load exceeds
  // what the tree's links carry (the channel-load bound of the pattern), the queues grow by the
  // difference for the run's length, up to workload.source_queue.
  static void footprint(const Config& c, const net::NetConfig& nc, MemoryForecast& f);
  Phases phases() const override { return phases_; }
  void start() override;
  void end_of_window() override;
  bool done() const override;
  const char* limit_param() const override { return "workload.drain_cycles"; }
  std::string unfinished() const override;
  nlohmann::ordered_json summary() const override;
  void on_timer(uint32_t node, uint64_t tag, uint64_t now) override;
  void on_packet(uint32_t node, net::Packet& p, uint64_t now) override;
  // Its callbacks use the time they are given and the network's calls only.
  bool runs_on_network_time() const override { return true; }
  // Per-node random streams, per-transaction holder sets: order-free.
  bool order_free() const override { return true; }
  bool sends_acked_multicasts() const override { return pattern_ == Pattern::Multicast && mc_ack_; }

 private:
  void make_packet(uint32_t node, Rng& r);  // one packet from `node`, into its source queue
  enum class Pattern { Uniform, Hotspot, Bitcomp, Multicast };
  net::Network& net_;
  Phases phases_;
  Pattern pattern_;
  double rate_;      // flits/node/cycle
  double pkt_prob_;  // packets/node/cycle
  double log1p_minus_prob_;  // log1p(-pkt_prob_): the geometric gap's divisor, computed once
  int flits_;
  std::vector<uint32_t> hot_;
  double hot_frac_, mc_frac_;
  uint32_t fanout_;
  bool mc_ack_;
  bool inject_during_drain_;
  std::vector<Rng> rng_;  // one stream per node
  CopyHolders holders_;
  uint64_t window_end_flits_ = 0, window_cycles_ = 0, window_offered_flits_ = 0;
  uint64_t measured_created_ = 0;
  size_t source_queue_;          // workload.source_queue
  uint64_t refused_measured_ = 0;  // packets due in the window that a full source queue refused
  bool window_closed_ = false;
};

class ScriptTraffic : public Workload {
 public:
  ScriptTraffic(const Config& c, net::Network& net);
  Phases phases() const override { return phases_; }
  void start() override;
  bool done() const override { return started_ == entries_.size() && net_.in_flight() == 0; }
  const char* limit_param() const override { return "workload.drain_cycles"; }
  std::string unfinished() const override;
  nlohmann::ordered_json summary() const override;
  void on_timer(uint32_t node, uint64_t tag, uint64_t now) override;
  void on_packet(uint32_t node, net::Packet& p, uint64_t now) override;
  void on_ack(uint32_t node, const net::Packet& ack, uint64_t now) override;
  // Its callbacks use the network's calls only.
  bool runs_on_network_time() const override { return true; }
  // It sums the acknowledgements and sorts the receivers it reports: order-free.
  bool order_free() const override { return true; }
  bool sends_acked_multicasts() const override;

 private:
  struct Entry {
    uint64_t cycle;
    uint32_t src;
    std::vector<uint32_t> dests, holders, silent;
    bool ack;
    int flits;
  };
  net::Network& net_;
  Phases phases_;
  std::vector<Entry> entries_;
  size_t started_ = 0;
  CopyHolders holders_;
  std::vector<uint32_t> receivers_;  // every multicast delivery, by node
  uint64_t unicast_received_ = 0, acks_ = 0, ack_count_ = 0, ack_held_ = 0;
};

}  // namespace mbpsim
