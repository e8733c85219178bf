// An Ethernet segment (IEEE 802.3) at 10, 100 or 1000 Mb/s with real framing: 8 bytes of
// preamble and start delimiter, the frame padded to the 64-byte minimum with a CRC-32 FCS
// (zlib), and a 12-byte interframe gap. Three media:
//  - switch: full duplex, store-and-forward, a bounded output queue per port (tail drop);
//  - hub: one half-duplex collision domain, 1-persistent CSMA/CD (deference through the
//    interframe gap after carrier drops) with collisions detected within the propagation
//    window, a 32-bit jam and truncated binary exponential back-off (slot 512 bit times, at
//    most 16 attempts), and optionally the LANCE-mode gap of Sun's MACs;
//  - direct: a full-duplex cable between two stations.
// Loss can be injected per delivered frame (Bernoulli, or Gilbert-Elliott bursts), seeded; a
// lost frame is delivered with a corrupted FCS and dropped by the receiving MAC, as on a wire.
// Tampering can be injected too (seeded): a frame altered with a valid FCS, as an attacker
// would send it, which only authentication can catch. For protocol testing, frames can be
// duplicated or held back (so later ones overtake them) for up to a bounded time, and a
// station can be cut off for blackhole periods, seeded.
#pragma once
#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <vector>

#include <systemc>

#include "models/core/calendar.h"
#include "models/core/params.h"
#include "models/core/rng.h"
#include "models/core/stats.h"

namespace mbpsim::net {

struct EtherConfig {
  // Every member is a parameter of `params()` (ether_config.cpp), which gives it its default.
  EtherConfig();
  enum class Medium { Switch, Hub, Direct };
  Medium medium{};
  double rate_mbps{};            // 10, 100 or 1000
  double prop_ns{};              // station to station: cable plus repeater or switch port
  double switch_latency_ns{};    // switch: lookup and forwarding after the frame is in
  uint32_t switch_queue_frames{};
  double loss{};                 // Bernoulli loss per frame
  double burst_enter{}, burst_leave{};  // Gilbert-Elliott: good->bad and bad->good per frame
  double tamper{};               // per delivered frame: an attacker on the path alters one byte
                                 // after the Ethernet header and recomputes the FCS
  // Fault injection for protocol testing (not Ethernet behaviour): per delivered frame, a
  // second copy arrives up to reorder_max_ns later, or the frame itself is held back that
  // long so that later frames overtake it (a bounded lifetime on the path).
  double duplicate{}, reorder{};
  double reorder_max_ns{};
  // Blackhole periods per receiving station (a pulled cable, a rebooting switch port): every
  // frame to the station is lost for blackhole_us; the gaps between periods are exponential
  // with mean blackhole_every_us (0: never), each station on its own seeded schedule.
  double blackhole_every_us{}, blackhole_us{};
  // Half duplex: a MAC in "LANCE mode" (the FEPS and GEM ASICs of Sun's adapters, on by
  // default) waits `ipg0_nibbles` more after the interframe gap before it transmits, when the
  // last frame on the medium was another station's; the station that sent it goes on first.
  bool lance_mode{};
  uint32_t ipg0_nibbles{};

  static const ParamTable<EtherConfig>& params();
};
const char* to_string(EtherConfig::Medium m);

// The segment is a module (system.ether under the runner's root); its statistics are under its
// name.
class EtherSegment final : public sc_core::sc_module {
 public:
  static constexpr uint32_t kPreamble = 8, kFcs = 4, kMinFrame = 64, kIfg = 12, kJamBits = 32, kSlotBits = 512;
  static constexpr uint32_t kMaxAttempts = 16, kBackoffLimit = 10;

  // `on_rx(station, frame)`: a frame with a good FCS for that station (bytes without FCS;
  // padding kept).
  using Rx = std::function<void(uint32_t, std::vector<uint8_t>&&)>;
  EtherSegment(sc_core::sc_module_name name, Calendar& cal, const EtherConfig& c, uint32_t stations, Stats& stats,
               uint64_t seed);
  void set_rx(Rx rx) { rx_ = std::move(rx); }
  // Observes every frame a station receives with a good FCS, before `on_rx` (a wire sniffer).
  void set_tap(std::function<void(uint32_t, const std::vector<uint8_t>&)> tap) { tap_ = std::move(tap); }
  // Queues a frame at the MAC of `station` for station `dst`. `on_sent(ok)` runs when its last
  // bit has left (ok) or it was given up after 16 collisions (not ok).
  void send(uint32_t station, uint32_t dst, std::vector<uint8_t> frame, std::function<void(bool)> on_sent);
  // Time a frame of `bytes` (header and payload, no FCS) occupies the wire, gap included.
  uint64_t slot_ps(uint32_t bytes) const;
  uint64_t bit_ps() const { return bit_ps_; }
  const EtherConfig& config() const { return c_; }
  uint32_t stations() const { return static_cast<uint32_t>(st_.size()); }
  // Drops every frame delivered to `station` from now until `until_ps` (a powered-off node).
  void set_deaf(uint32_t station, bool deaf) { st_[station].deaf = deaf; }

 private:
  struct Frame {
    uint32_t dst;
    std::vector<uint8_t> bytes;  // with FCS
    std::function<void(bool)> on_sent;
    uint32_t attempts = 0;
  };
  struct Station {
    std::deque<Frame> txq;
    bool transmitting = false;
    bool deaf = false;
  };
  struct Port {
    std::deque<std::pair<uint32_t, std::vector<uint8_t>>> q;  // (from, frame)
    bool busy = false;
  };
  uint64_t frame_ps(size_t with_fcs) const { return (kPreamble + with_fcs) * 8 * bit_ps_; }
  void kick(uint32_t s);
  void deliver(uint32_t dst, std::vector<uint8_t> bytes);
  void switch_in(uint32_t from, uint32_t dst, std::vector<uint8_t> bytes);
  void port_kick(uint32_t p);
  // CSMA/CD
  void hub_try(uint32_t s);
  void hub_resolve();
  bool lose();
  void hand_over(uint32_t dst, std::vector<uint8_t> bytes);  // to the station's MAC (FCS stripped)
  void trace_wire(const std::string& wire, const std::string& what, uint64_t begin_ps, uint64_t end_ps) const;
  static std::string frame_label(uint32_t from, uint32_t dst, size_t with_fcs);

  const std::string prefix_;  // its name: where its statistics and random streams are named
  Calendar& cal_;
  EtherConfig c_;
  uint64_t bit_ps_, prop_ps_;
  std::vector<Station> st_;
  std::vector<Port> ports_;
  Rx rx_;
  std::function<void(uint32_t, const std::vector<uint8_t>&)> tap_;
  Rng rng_, loss_rng_, tamper_rng_, fault_rng_;
  // Whether station `dst` is in a blackhole period now (drawing its schedule as time passes).
  bool blackholed(uint32_t dst);
  struct Blackhole {
    Rng rng;
    uint64_t start_ps = 0, end_ps = 0;
  };
  std::vector<Blackhole> bh_;
  bool burst_bad_ = false;
  // hub state
  uint64_t busy_until_ = 0, window_start_ = 0, window_end_ = 0;
  static constexpr uint32_t kNobody = ~0u;
  uint32_t last_sender_ = kNobody;  // whose frame the medium carried last (none after a collision)
  bool carried_ = false;            // the medium has carried something (a gap to keep)
  // When station `s` may start: the interframe gap after carrier drops, and the LANCE-mode
  // gap more if the last frame was not its own.
  uint64_t hub_earliest(uint32_t s) const;
  std::vector<uint32_t> contenders_;
  bool window_open_ = false;

  Counter &frames_, &bytes_, &collisions_, &excess_, &queue_drops_, &lost_, &fcs_errors_, &tampered_, &duplicated_, &reordered_, &blackholed_;
  Histogram& attempts_;
};

}  // namespace mbpsim::net
