#include "models/net/ether.h"

#include <zlib.h>

#include <algorithm>
#include <cmath>

#include "models/core/timeline.h"

namespace mbpsim::net {

const char* to_string(EtherConfig::Medium m) {
  switch (m) {
    case EtherConfig::Medium::Switch: return "switch";
    case EtherConfig::Medium::Hub: return "hub";
    case EtherConfig::Medium::Direct: return "direct";
  }
  return "?";
}

EtherSegment::EtherSegment(sc_core::sc_module_name name, Calendar& cal, const EtherConfig& c, uint32_t stations, Stats& stats,
                           uint64_t seed)
    : sc_core::sc_module(name),
      prefix_(this->name()),
      cal_(cal),
      c_(c),
      bit_ps_(static_cast<uint64_t>(std::llround(1e6 / c.rate_mbps))),
      prop_ps_(static_cast<uint64_t>(std::llround(c.prop_ns * 1000))),
      st_(stations),
      ports_(stations),
      rng_(seed, prefix_ + ".backoff"),
      loss_rng_(seed, prefix_ + ".loss"),
      tamper_rng_(seed, prefix_ + ".tamper"),
      fault_rng_(seed, prefix_ + ".faults"),
      frames_(stats.counter(prefix_ + ".frames", "frames that left a MAC")),
      bytes_(stats.counter(prefix_ + ".bytes", "bytes on the wire, preamble and FCS included")),
      collisions_(stats.counter(prefix_ + ".collisions", "CSMA/CD collisions (hub)")),
      excess_(stats.counter(prefix_ + ".excessive_collisions", "frames given up after 16 attempts")),
      queue_drops_(stats.counter(prefix_ + ".switch_drops", "frames dropped at a full switch output queue")),
      lost_(stats.counter(prefix_ + ".injected_losses", "frames corrupted by the loss model")),
      fcs_errors_(stats.counter(prefix_ + ".fcs_errors", "frames dropped by a receiving MAC for a bad FCS")),
      tampered_(stats.counter(prefix_ + ".tampered", "frames altered on the path with a valid FCS (injected)")),
      duplicated_(stats.counter(prefix_ + ".injected_duplicates", "frames delivered twice (injected)")),
      reordered_(stats.counter(prefix_ + ".injected_reorders", "frames held back so that later ones overtake them (injected)")),
      blackholed_(stats.counter(prefix_ + ".injected_blackhole_losses", "frames lost because their station was in a blackhole period (injected)")),
      attempts_(stats.histogram(prefix_ + ".attempts", "transmission attempts per frame (hub)", "attempts")) {
  // Each schedule starts with an empty period at time 0, so the first real one is drawn the
  // first time the station receives.
  if (c.blackhole_every_us > 0)
    for (uint32_t i = 0; i < stations; ++i) bh_.push_back(Blackhole{Rng(seed, prefix_ + ".blackhole." + std::to_string(i))});
}

bool EtherSegment::blackholed(uint32_t dst) {
  if (bh_.empty()) return false;
  Blackhole& b = bh_[dst];
  const uint64_t now = cal_.now_ps();
  while (now >= b.end_ps) {  // the next period starts an exponential gap after the last one ends
    b.start_ps = b.end_ps + static_cast<uint64_t>(-std::log1p(-b.rng.uniform()) * c_.blackhole_every_us * 1e6);
    b.end_ps = b.start_ps + static_cast<uint64_t>(c_.blackhole_us * 1e6);
  }
  return now >= b.start_ps;
}

// The timeline: a frame's time on a wire, preamble to FCS, on the track of what sends it (a
// station's cable, a switch's output port, or the hub's one medium); a collision likewise.
void EtherSegment::trace_wire(const std::string& wire, const std::string& what, uint64_t begin_ps, uint64_t end_ps) const {
  if (Timeline* tl = timeline()) tl->slice(tl->track(prefix_ + "." + wire), what, begin_ps, end_ps);
}

std::string EtherSegment::frame_label(uint32_t from, uint32_t dst, size_t with_fcs) {
  return "frame n" + std::to_string(from) + " -> n" + std::to_string(dst) + " (" + std::to_string(with_fcs) + " B)";
}

uint64_t EtherSegment::slot_ps(uint32_t bytes) const {
  return frame_ps(std::max<uint32_t>(bytes + kFcs, kMinFrame)) + kIfg * 8 * bit_ps_;
}

void EtherSegment::send(uint32_t s, uint32_t dst, std::vector<uint8_t> frame, std::function<void(bool)> on_sent) {
  if (frame.size() < kMinFrame - kFcs) frame.resize(kMinFrame - kFcs, 0);
  const uLong crc = crc32(crc32(0L, Z_NULL, 0), frame.data(), static_cast<uInt>(frame.size()));
  for (int i = 0; i < 4; ++i) frame.push_back(static_cast<uint8_t>(crc >> (8 * i)));
  st_[s].txq.push_back(Frame{dst, std::move(frame), std::move(on_sent)});
  kick(s);
}

bool EtherSegment::lose() {
  if (c_.burst_enter > 0) {
    if (burst_bad_) burst_bad_ = loss_rng_.uniform() >= c_.burst_leave;
    else burst_bad_ = loss_rng_.uniform() < c_.burst_enter;
    if (burst_bad_) return true;
  }
  return c_.loss > 0 && loss_rng_.uniform() < c_.loss;
}

void EtherSegment::deliver(uint32_t dst, std::vector<uint8_t> bytes) {
  if (blackholed(dst)) {
    blackholed_.inc();
    bytes[bytes.size() / 2] ^= 0x5a;
  } else if (lose()) {
    lost_.inc();
    bytes[bytes.size() / 2] ^= 0x5a;  // what the receiving MAC sees: a frame with a bad FCS
  }
  const size_t n = bytes.size() - kFcs;
  const uLong crc = crc32(crc32(0L, Z_NULL, 0), bytes.data(), static_cast<uInt>(n));
  uint32_t got = 0;
  for (int i = 0; i < 4; ++i) got |= static_cast<uint32_t>(bytes[n + i]) << (8 * i);
  if (got != static_cast<uint32_t>(crc)) {
    fcs_errors_.inc();
    return;
  }
  bytes.resize(n);
  if (c_.duplicate > 0 || c_.reorder > 0) {
    const auto later = [this] {
      return static_cast<uint64_t>(fault_rng_.uniform() * c_.reorder_max_ns * 1000) + 1;
    };
    if (c_.duplicate > 0 && fault_rng_.uniform() < c_.duplicate) {
      duplicated_.inc();
      cal_.after(later(), [this, dst, b = bytes]() mutable { hand_over(dst, std::move(b)); });
    }
    if (c_.reorder > 0 && fault_rng_.uniform() < c_.reorder) {
      reordered_.inc();
      cal_.after(later(), [this, dst, b = std::move(bytes)]() mutable { hand_over(dst, std::move(b)); });
      return;
    }
  }
  hand_over(dst, std::move(bytes));
}

void EtherSegment::hand_over(uint32_t dst, std::vector<uint8_t> bytes) {
  if (st_[dst].deaf) return;
  const size_t n = bytes.size();
  if (c_.tamper > 0 && n > 14 && tamper_rng_.uniform() < c_.tamper) {
    tampered_.inc();
    const size_t at = 14 + tamper_rng_.below(n - 14);
    bytes[at] ^= static_cast<uint8_t>(1 + tamper_rng_.below(255));
  }
  if (tap_) tap_(dst, bytes);
  if (rx_) rx_(dst, std::move(bytes));
}

void EtherSegment::kick(uint32_t s) {
  Station& S = st_[s];
  if (S.transmitting || S.txq.empty()) return;
  S.transmitting = true;
  if (c_.medium == EtherConfig::Medium::Hub) {
    hub_try(s);
    return;
  }
  // Full duplex: the station's own cable is the only thing it waits for.
  Frame& f = S.txq.front();
  const uint64_t t = frame_ps(f.bytes.size());
  frames_.inc();
  bytes_.inc(kPreamble + f.bytes.size());
  if (timeline()) trace_wire("tx" + std::to_string(s), frame_label(s, f.dst, f.bytes.size()), cal_.now_ps(), cal_.now_ps() + t);
  cal_.after(t, [this, s] {
    Frame f = std::move(st_[s].txq.front());
    st_[s].txq.pop_front();
    const uint32_t dst = f.dst;
    auto bytes = std::move(f.bytes);
    if (c_.medium == EtherConfig::Medium::Switch) {
      cal_.after(prop_ps_ / 2, [this, s, dst, b = std::move(bytes)]() mutable { switch_in(s, dst, std::move(b)); });
    } else {
      cal_.after(prop_ps_, [this, dst, b = std::move(bytes)]() mutable { deliver(dst, std::move(b)); });
    }
    // The gap before this MAC may start its next frame.
    cal_.after(kIfg * 8 * bit_ps_, [this, s] {
      st_[s].transmitting = false;
      kick(s);
    });
    if (f.on_sent) f.on_sent(true);
  });
}

void EtherSegment::switch_in(uint32_t from, uint32_t dst, std::vector<uint8_t> bytes) {
  cal_.after(static_cast<uint64_t>(c_.switch_latency_ns * 1000), [this, from, dst, b = std::move(bytes)]() mutable {
    Port& p = ports_[dst];
    if (p.q.size() >= c_.switch_queue_frames) {
      queue_drops_.inc();
      return;
    }
    p.q.emplace_back(from, std::move(b));
    port_kick(dst);
  });
}

void EtherSegment::port_kick(uint32_t d) {
  Port& p = ports_[d];
  if (p.busy || p.q.empty()) return;
  p.busy = true;
  const uint64_t t = frame_ps(p.q.front().second.size());
  bytes_.inc(kPreamble + p.q.front().second.size());
  if (timeline()) trace_wire("port" + std::to_string(d), frame_label(p.q.front().first, d, p.q.front().second.size()), cal_.now_ps(), cal_.now_ps() + t);
  cal_.after(t, [this, d] {
    Port& p = ports_[d];
    auto bytes = std::move(p.q.front().second);
    p.q.pop_front();
    cal_.after(prop_ps_ / 2, [this, d, b = std::move(bytes)]() mutable { deliver(d, std::move(b)); });
    cal_.after(kIfg * 8 * bit_ps_, [this, d] {
      ports_[d].busy = false;
      port_kick(d);
    });
  });
}

// ---- half duplex: one collision domain

uint64_t EtherSegment::hub_earliest(uint32_t s) const {
  if (!carried_) return 0;
  uint64_t gap = kIfg * 8 * bit_ps_;
  if (c_.lance_mode && last_sender_ != kNobody && last_sender_ != s) gap += c_.ipg0_nibbles * 4 * bit_ps_;
  return busy_until_ + gap;
}

void EtherSegment::hub_try(uint32_t s) {
  const uint64_t now = cal_.now_ps();
  const uint64_t earliest = hub_earliest(s);
  if (now < earliest) {  // carrier sensed, or its gap not over: 1-persistent deferral
    cal_.at(earliest, [this, s] { hub_try(s); });
    return;
  }
  if (window_open_ && now <= window_end_) {  // another start has not reached us yet
    contenders_.push_back(s);
    return;
  }
  window_open_ = true;
  window_start_ = now;
  window_end_ = now + std::max<uint64_t>(prop_ps_, 1);
  contenders_.assign(1, s);
  cal_.at(window_end_, [this] { hub_resolve(); });
}

void EtherSegment::hub_resolve() {
  window_open_ = false;
  std::vector<uint32_t> who;
  who.swap(contenders_);
  if (who.size() == 1) {
    const uint32_t s = who[0];
    Frame& f = st_[s].txq.front();
    const uint64_t end = window_start_ + frame_ps(f.bytes.size());
    busy_until_ = end + prop_ps_;
    last_sender_ = s;
    carried_ = true;
    frames_.inc();
    bytes_.inc(kPreamble + f.bytes.size());
    attempts_.sample(f.attempts + 1);
    if (timeline()) trace_wire("medium", frame_label(s, f.dst, f.bytes.size()), window_start_, end);
    cal_.at(end, [this, s] {
      Frame f = std::move(st_[s].txq.front());
      st_[s].txq.pop_front();
      const uint32_t dst = f.dst;
      cal_.after(prop_ps_, [this, dst, b = std::move(f.bytes)]() mutable { deliver(dst, std::move(b)); });
      cal_.at(busy_until_ + kIfg * 8 * bit_ps_, [this, s] {
        st_[s].transmitting = false;
        kick(s);
      });
      if (f.on_sent) f.on_sent(true);
    });
    return;
  }
  // Collision: everyone jams, the medium clears, each backs off on its own.
  collisions_.inc();
  busy_until_ = window_end_ + kJamBits * bit_ps_ + prop_ps_;
  if (timeline()) trace_wire("medium", "collision of " + std::to_string(who.size()) + " stations", window_start_, busy_until_);
  last_sender_ = kNobody;
  carried_ = true;
  for (uint32_t s : who) {
    Frame& f = st_[s].txq.front();
    if (++f.attempts >= kMaxAttempts) {
      excess_.inc();
      attempts_.sample(f.attempts);
      Frame dead = std::move(f);
      st_[s].txq.pop_front();
      cal_.at(busy_until_, [this, s, cb = std::move(dead.on_sent)] {
        st_[s].transmitting = false;
        if (cb) cb(false);
        kick(s);
      });
      continue;
    }
    const uint32_t k = std::min(f.attempts, kBackoffLimit);
    const uint64_t r = rng_.below(1ull << k);
    cal_.at(busy_until_ + kIfg * 8 * bit_ps_ + r * kSlotBits * bit_ps_, [this, s] { hub_try(s); });
  }
}

}  // namespace mbpsim::net
