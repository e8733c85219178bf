#include "models/net/network.h"

#include <map>
#include <tuple>

#include "models/core/timeline.h"

#include "models/core/sim_time.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <sstream>

#include "models/core/error.h"
#include "models/core/mutant.h"
#include "models/core/module_tree.h"

namespace mbpsim::net {

using sc_core::sc_time;

// ------------------------------------------------------------------ the timeline
// What the network shows on a transaction timeline: at each NI, a packet from its creation to
// its head leaving the NI ("send"), and each delivery; at each router, a packet from its head's
// arrival to its tail leaving on an output (one slice per branch of a multicast), and each
// acknowledgement absorbed or combined; a flow from a multicast's send to the acknowledgement
// that completes it at the source.
struct Network::Trace {
  Timeline& tl;
  std::vector<int> router_track, ni_track;
  std::map<std::tuple<int, int, const Packet*>, uint64_t> head;  // (router, port, packet) -> head arrival cycle
  static std::tuple<int, int, const Packet*> key(int router, int port, const Packet* p) { return {router, port, p}; }
};

void Network::footprint(const NetConfig& cfg, MemoryForecast& f) {
  const uint64_t nodes = cfg.nodes();
  uint64_t routers = 0, level = 1, bytes = 0;
  for (int h = 0; h < cfg.levels; ++h, level *= cfg.radix) {
    const size_t name_len = std::strlen("system.net.router_0_") + std::to_string(level).size();
    bytes += level * Router::footprint_bytes(cfg, h > 0, name_len);
    routers += level;
  }
  bytes += vector_bytes<std::unique_ptr<Router>>(routers);
  f.add("routers", bytes, "network.radix^network.levels, network.vcs_per_class, network.buffer_depth");
  // An interface: three source queues (an empty std::deque holds a map and one 512-byte block),
  // its credits and credit line.
  const uint64_t nvcs = static_cast<uint64_t>(cfg.vcs_per_class) * kNumClasses;
  const uint64_t deque_bytes = heap_bytes(8 * sizeof(void*)) + heap_bytes(512);
  f.add("network interfaces",
        vector_bytes<NetIface>(nodes) + nodes * (kNumClasses * deque_bytes + vector_bytes<int>(nvcs) + CreditLine::bytes(CreditLine::kInitial)),
        "network.radix^network.levels");
  // The calendar's wheel: a bucket per cycle of the near future, each as large as the most
  // events one cycle has held (at least one flit or timer event per router and interface).
  f.add("network calendar", vector_bytes<std::vector<Event>>(kWheel) + kWheel * vector_bytes<Event>(4), "");
}

Network::Network(sc_core::sc_module_name name, const NetConfig& cfg, Stats& stats)
    : sc_module(name), cfg_(cfg), topo_(cfg.radix, cfg.levels) {
  const std::string sp = this->name();
  period_ = sc_time(1e6 / cfg.clock_mhz, sc_core::SC_PS);
  wheel_.resize(kWheel);
  routers_.reserve(topo_.num_routers());
  for (int r = 0; r < topo_.num_routers(); ++r) {
    const int h = topo_.height_of(r);
    const uint32_t pos = topo_.pos_of(r);
    routers_.push_back(std::make_unique<Router>(("router_" + std::to_string(h) + "_" + std::to_string(pos)).c_str(), *this, r,
                                                h, pos, stats));
  }
  for (auto& r : routers_) r->connect();
  nis_.resize(topo_.nodes());
  if (Timeline* tl = timeline()) {
    trace_.reset(new Trace{*tl, {}, {}, {}});
    for (auto& r : routers_) trace_->router_track.push_back(tl->track(r->name()));
    for (uint32_t n = 0; n < topo_.nodes(); ++n) trace_->ni_track.push_back(tl->track(sp + ".ni" + std::to_string(n)));
  }
  for (uint32_t n = 0; n < topo_.nodes(); ++n) {
    NetIface& ni = nis_[n];
    ni.leaf = static_cast<uint32_t>(topo_.router_id(topo_.levels() - 1, n / cfg.radix));
    ni.leaf_port = static_cast<uint8_t>(n % cfg.radix);
    ni.credits.assign(cfg.vcs_per_class * kNumClasses, cfg.buffer_depth);
    ni.returning.init();
  }

  lat_unicast = &stats.histogram(sp + ".latency.unicast", "cycles, creation to tail delivery", "cycles");
  lat_multicast = &stats.histogram(sp + ".latency.multicast_completion",
                                   "cycles, creation to the last receiver's delivery", "cycles");
  lat_ack = &stats.histogram(sp + ".latency.ack",
                             "cycles, multicast creation to the acknowledgement at the source", "cycles");
  pkts_injected = &stats.counter(sp + ".packets_injected", "packets created by sources");
  flits_injected = &stats.counter(sp + ".flits_injected", "flits created by sources");
  pkts_delivered = &stats.counter(sp + ".packets_delivered",
                                  "unicast packets and multicast copies reaching a node");
  flits_delivered = &stats.counter(sp + ".flits_delivered", "flits ejected at nodes (not acks)");
  mcast_sent = &stats.counter(sp + ".multicast.sent", "multicast packets injected");
  mcast_deliveries = &stats.counter(sp + ".multicast.deliveries", "multicast copies delivered");
  mcast_completed = &stats.counter(sp + ".multicast.completed",
                                   "multicasts finished (all delivered, and all acks in when asked)");
  dummy_acks = &stats.counter(sp + ".multicast.dummy_acks",
                              "deliveries to nodes holding no copy (answered by a dummy ack)");
  dropped_no_copy = &stats.counter(sp + ".multicast.dropped_no_copy",
                                   "multicast copies dropped at nodes holding no copy");
  acks_sent = &stats.counter(sp + ".multicast.acks_from_nodes", "acks sent by receivers");
  acks_at_source = &stats.counter(sp + ".multicast.acks_at_source",
                                  "ack packets arriving at multicast sources");

  // Link utilisation per router and per tree level, in flits per link per cycle since the last
  // stats reset.
  for (int r = 0; r < topo_.num_routers(); ++r) {
    std::vector<const Counter*> cs;
    for (int o = 0; o < routers_[r]->nports(); ++o) cs.push_back(routers_[r]->out(o).flits);
    stats.formula(
        stat_name(*routers_[r], "utilisation"),
        [this, cs] {
          uint64_t sum = 0;
          for (auto* c : cs) sum += c->value;
          const double cyc = static_cast<double>(now_ - epoch_);
          return cyc > 0 ? sum / (cyc * cs.size()) : std::numeric_limits<double>::quiet_NaN();  // no cycle: null
        },
        "flits per output link per cycle", "flits/link/cycle");
  }
  for (int h = 0; h < topo_.levels(); ++h) {
    for (int up = 0; up < 2; ++up) {
      if (up && h == 0) continue;
      std::vector<const Counter*> cs;
      for (int r = 0; r < topo_.num_routers(); ++r) {
        if (topo_.height_of(r) != h) continue;
        if (up)
          cs.push_back(routers_[r]->out(cfg.radix).flits);
        else
          for (int c = 0; c < cfg.radix; ++c) cs.push_back(routers_[r]->out(c).flits);
      }
      stats.formula(
          sp + ".utilisation.level" + std::to_string(h) + (up ? ".up" : ".down"),
          [this, cs] {
            uint64_t sum = 0;
            for (auto* c : cs) sum += c->value;
            const double cyc = static_cast<double>(now_ - epoch_);
            return cyc > 0 ? sum / (cyc * cs.size()) : std::numeric_limits<double>::quiet_NaN();  // no cycle: null
          },
          "flits per link per cycle on the links leaving height-" + std::to_string(h) +
              (up ? " routers towards the root" : " routers towards the leaves"), "flits/link/cycle");
    }
  }

  SC_METHOD(process_method);
  sensitive << wake_;
  dont_initialize();
}


namespace {
const char* kind_name(PacketKind k) { return k == PacketKind::Unicast ? "unicast" : k == PacketKind::Multicast ? "multicast" : "ack"; }
std::string packet_label(const Packet* p) {
  if (p->kind == PacketKind::Ack) return "ack of txn " + std::to_string(p->txn) + " (" + std::to_string(p->ack_count) + " receivers)";
  return std::string(kind_name(p->kind)) + " #" + std::to_string(p->id);
}
std::string packet_args(const Packet* p, const std::string& more = "") {
  std::string a = "{\"kind\":\"" + std::string(kind_name(p->kind)) + "\",\"src\":" + std::to_string(p->src);
  if (p->kind != PacketKind::Multicast) a += ",\"dst\":" + std::to_string(p->dst);
  if (p->kind != PacketKind::Ack) a += ",\"packet\":" + std::to_string(p->id);
  if (p->txn) a += ",\"txn\":" + std::to_string(p->txn);
  if (p->kind == PacketKind::Ack) a += ",\"ack_count\":" + std::to_string(p->ack_count) + ",\"ack_held\":" + std::to_string(p->ack_held);
  a += ",\"flits\":" + std::to_string(p->size_flits) + more + "}";
  return a;
}
}  // namespace

Network::~Network() = default;

void Network::trace_head(int router, int port, const Packet* p, uint64_t now) { trace_->head[Trace::key(router, port, p)] = now; }

void Network::trace_hop(int router, int in_port, int out_port, const Packet* p, uint64_t now, bool last) {
  const uint64_t per = period_.value();
  auto it = trace_->head.find(Trace::key(router, in_port, p));
  const uint64_t begin = it == trace_->head.end() ? now : it->second;
  if (last && it != trace_->head.end()) trace_->head.erase(it);
  // The last branch to leave ends the packet's stay here.
  const uint64_t end = now + cfg_.sa_delay + cfg_.st_delay;
  trace_->tl.slice(trace_->router_track[router], packet_label(p), begin * per, end * per,
                   packet_args(p, ",\"in_port\":" + std::to_string(in_port) + ",\"out_port\":" + std::to_string(out_port)));
}

void Network::trace_combine(int router, int gen_port, const Packet* p, uint32_t acks, uint32_t expected, uint64_t now) {
  const uint64_t per = period_.value();
  const bool done = acks == expected;
  trace_->tl.slice(trace_->router_track[router],
                   (done ? "combined ack of txn " : "ack absorbed, txn ") + std::to_string(p->txn) + " (" + std::to_string(acks) + "/" +
                       std::to_string(expected) + ")",
                   now * per, (now + 1) * per,
                   "{\"txn\":" + std::to_string(p->txn) + ",\"acks\":" + std::to_string(acks) + ",\"expected\":" + std::to_string(expected) + "}");
  if (done) trace_->head[Trace::key(router, gen_port, p)] = now;
}

void Network::trace_send(uint32_t node, const Packet* p, uint64_t now) {
  // From its creation until its head leaves the NI; a multicast that wants acknowledgements
  // starts the flow its combined acknowledgement ends.
  const uint64_t per = period_.value(), made = p->ni_ready - cfg_.ni_delay;
  const std::string name = "send " + packet_label(p);
  if (p->kind == PacketKind::Multicast && p->ack_req)
    trace_->tl.slice_with_flow(trace_->ni_track[node], name, made * per, (now + 1) * per, packet_args(p), "multicast to its acknowledgement",
                               p->txn, true, made * per);
  else
    trace_->tl.slice(trace_->ni_track[node], name, made * per, (now + 1) * per, packet_args(p));
}

void Network::trace_deliver(uint32_t node, const Packet* p, uint64_t now) {
  // The ejection link's time for the packet's flits, ending with the tail's arrival; the
  // acknowledgement that completes a multicast ends its flow.
  const uint64_t per = period_.value(), len = static_cast<uint64_t>(p->size_flits) * cfg_.flit_cycles();
  const uint64_t begin = now >= len ? now - len + 1 : 0;
  if (p->kind == PacketKind::Ack) {
    auto it = acks_expected_.find(p->txn);
    if (it != acks_expected_.end() && it->second.remaining == p->ack_count) {
      trace_->tl.slice_with_flow(trace_->ni_track[node], "deliver " + packet_label(p) + ": complete", begin * per, (now + 1) * per,
                                 packet_args(p), "multicast to its acknowledgement", p->txn, false, now * per);
      return;
    }
  }
  trace_->tl.slice(trace_->ni_track[node], "deliver " + packet_label(p), begin * per, (now + 1) * per, packet_args(p));
}

void Network::reset_epoch() { epoch_ = now_; }

void Network::schedule(uint64_t at, const Event& e) {
  ++pending_events_;
  if (at - now_ < kWheel)
    wheel_[at & (kWheel - 1)].push_back(e);
  else
    far_.emplace(at, e);
}

void Network::activate_ni(uint32_t n) {
  if (!nis_[n].active) {
    nis_[n].active = true;
    (stepping_ ? next_active_nis_ : active_nis_).push_back(n);
  }
}

void Network::credit_to_ni(uint32_t n, int vc, uint64_t at) {
  NetIface& ni = nis_[n];
  ni.returning.push(at, vc);
  bool work = ni.cur != nullptr;
  for (int c = 0; c < kNumClasses && !work; ++c) work = !ni.q[c].empty();
  if (work) activate_ni(n);
}

// Client calls from outside a cycle (another SystemC process) first bring the calendar to
// the current simulated cycle and make sure the network process wakes for it.
void Network::sync_external() {
  if (in_cycle_) return;
  const uint64_t per = period_.value();
  const uint64_t t = sim_now_ps();
  uint64_t cyc = (t + per - 1) / per;
  if (ran_any_ && cyc <= last_run_) cyc = last_run_ + 1;
  if (cyc > now_) now_ = cyc - 1;  // the calendar is empty between the last run and now
  wake_.notify(sc_time::from_value(cyc * per - t));
}

void Network::inject(Packet* p) {
  sync_external();
  const uint64_t at = in_cycle_ ? now_ : now_ + 1;
  p->id = next_id_++;
  p->create_cycle = at;
  p->ni_ready = at + cfg_.ni_delay;
  p->refs = 1;
  p->measured = measuring_;
  // The watchdog measures from the later of the last delivery and the moment the network
  // stopped being empty: an idle network steps no cycles, so it cannot note the idle time.
  if (in_flight_++ == 0) last_progress_ = std::max(last_progress_, now_);
  if (p->measured) ++measured_in_flight_;
  pkts_injected->inc();
  flits_injected->inc(p->size_flits);
  if (p->kind == PacketKind::Multicast) {
    mcast_sent->inc();
    if (p->txn == 0) p->txn = p->id;
    if (p->ack_req) acks_expected_[p->txn] = OpenTxn{covered_count(p->src, p->bitmap), p->src, p->create_cycle};
  }
  nis_[p->src].q[p->cls].push_back(p);
  activate_ni(p->src);
}

uint32_t Network::covered_count(uint32_t src, const HierBitmap& bm) const {
  return net::covered_count(topo_, src, bm, 0, topo_.levels());
}

void Network::inject_multicast(Packet* p, const std::vector<uint32_t>& dests) {
  p->kind = PacketKind::Multicast;
  p->bitmap = encode_bitmap(topo_, p->src, dests);
  if (p->bitmap.empty()) internal_error("multicast with no destination other than its source");
  if (p->size_flits > cfg_.buffer_depth)
    internal_error("multicast larger than a VC buffer (virtual cut-through needs room for it)");
  inject(p);
}

void Network::send_ack(uint32_t node, const Packet& m, bool held) {
  sync_external();
  Packet* a = pool_.get();
  a->kind = PacketKind::Ack;
  a->cls = kAckClass;
  a->size_flits = static_cast<uint16_t>(cfg_.ack_flits);
  a->txn = m.txn;
  a->ack_count = 1;
  a->ack_held = held ? 1 : 0;
  a->create_cycle = m.create_cycle;
  a->measured = m.measured;
  a->src = node;
  a->dst = m.src;
  a->hop_ack = cfg_.combining;
  a->ni_ready = (in_cycle_ ? now_ : now_ + 1) + cfg_.ni_delay;
  acks_sent->inc();
  if (!held) dummy_acks->inc();
  nis_[node].q[kAckClass].push_back(a);
  activate_ni(node);
}

void Network::set_timer(uint32_t node, uint64_t at, uint64_t tag) {
  sync_external();
  const uint64_t earliest = now_ + 1;
  schedule(std::max(at, earliest), Event{EvType::Timer, 0, 0, 0, node, nullptr, tag});
}

template <bool kExpress>
void Network::handle(const Event& e) {
  switch (e.type) {
    case EvType::FlitArrive: {
      Router& r = *routers_[e.target];
      if constexpr (kExpress) {
        if ((r.take_arrivals() == 1 || mutant::on(mutant::Id::ExpressIgnoresArrivals)) &&
            r.express(e.port, e.vc, e.pkt, e.idx, now_))
          break;
        r.accept(e.port, e.vc, e.pkt, e.idx, now_);
        if (!mutant::on(mutant::Id::ExpressJumpsQueue)) r.hold_behind_express(e.port, e.vc);
      } else {
        r.accept(e.port, e.vc, e.pkt, e.idx, now_);
      }
      activate(r);
      break;
    }
    case EvType::Eject:
      if (e.idx + 1 == e.pkt->size_flits) deliver(e.target, e.pkt, now_);
      break;
    case EvType::Timer:
      if (client_) client_->on_timer(e.target, e.tag, now_);
      break;
  }
}

void Network::deliver(uint32_t node, Packet* p, uint64_t now) {
  last_progress_ = now;
  if (mutant::on(mutant::Id::CopyPerPacket)) mutant::wasted_copy();
  if (mutant::on(mutant::Id::ScatterPerPacket)) mutant::scattered_reads();
  if (tracing()) trace_deliver(node, p, now);
  if (p->kind != PacketKind::Ack) ++total_delivered_;
  auto complete = [&](bool measured) {
    --in_flight_;
    if (measured) --measured_in_flight_;
  };
  switch (p->kind) {
    case PacketKind::Unicast:
      pkts_delivered->inc();
      flits_delivered->inc(p->size_flits);
      if (p->measured) lat_unicast->sample(now - p->create_cycle);
      if (client_) client_->on_packet(node, *p, now);
      complete(p->measured);
      pool_.put(p);
      break;
    case PacketKind::Multicast:
      pkts_delivered->inc();
      flits_delivered->inc(p->size_flits);
      mcast_deliveries->inc();
      if (client_) client_->on_packet(node, *p, now);
      if (--p->refs == 0) {
        if (p->measured) lat_multicast->sample(now - p->create_cycle);
        if (!p->ack_req) {
          mcast_completed->inc();
          complete(p->measured);
        }
        pool_.put(p);
      }
      break;
    case PacketKind::Ack: {
      acks_at_source->inc();
      if (client_) client_->on_ack(node, *p, now);
      // The transaction completes when the acks account for every receiver the bitmap reached.
      auto it = acks_expected_.find(p->txn);
      if (it == acks_expected_.end() || it->second.remaining < p->ack_count) {
        invariant_failed("node " + std::to_string(node) + " received an acknowledgement for " +
                         std::to_string(p->ack_count) + " receivers of transaction " +
                         std::to_string(p->txn) + ", which expects " +
                         (it == acks_expected_.end() ? std::string("none")
                                                     : std::to_string(it->second.remaining)));
        pool_.put(p);
        break;
      }
      it->second.remaining -= p->ack_count;
      const bool done = it->second.remaining == 0;
      if (done) acks_expected_.erase(it);
      if (done) {
        mcast_completed->inc();
        if (p->measured) lat_ack->sample(now - p->create_cycle);
        complete(p->measured);
      }
      pool_.put(p);
      break;
    }
  }
}

void Network::ni_step(uint32_t node, uint64_t now) {
  NetIface& ni = nis_[node];
  ni.returning.absorb(now, ni.credits);
  if (!ni.cur) {
    // The oldest ready head goes first; among equally old ones acknowledgements (they free
    // resources elsewhere), then replies, then requests. Strict class priority starved a hot
    // home's own requests behind the replies it kept sending (a 64-node trace replay: a
    // multicast invalidation never left node 0).
    int order[kNumClasses];
    int k = 0;
    for (int c = kNumClasses - 1; c >= 0; --c)
      if (!ni.q[c].empty() && ni.q[c].front()->ni_ready <= now) order[k++] = c;
    // A stable insertion sort of at most kNumClasses entries (std::stable_sort allocated a
    // buffer for them once per call, about 3% of a replay).
    for (int i = 1; i < k; ++i) {
      const int c = order[i];
      const uint64_t t = ni.q[c].front()->ni_ready;
      int j = i;
      for (; j > 0 && t < ni.q[order[j - 1]].front()->ni_ready; --j) order[j] = order[j - 1];
      order[j] = c;
    }
    for (int i = 0; i < k && !ni.cur; ++i) {
      const int c = order[i];
      const int vpc = cfg_.vcs_per_class, base = c * vpc;
      for (int j = 0, r = ni.cls_rr; j < vpc; ++j, r = rr_next(r, vpc)) {
        const int v = base + r;
        if (ni.credits[v] > 0) {
          ni.cur = ni.q[c].front();
          ni.q[c].pop_front();
          ni.cur_vc = v;
          ni.next_flit = 0;
          ni.cls_rr = static_cast<uint8_t>(rr_next(r, vpc));
          break;
        }
      }
    }
  }
  if (ni.cur && ni.credits[ni.cur_vc] > 0 && ni.free_at <= now) {
    if (tracing() && ni.next_flit == 0) trace_send(node, ni.cur, now);
    --ni.credits[ni.cur_vc];
    ni.free_at = now + cfg_.flit_cycles();
    schedule(now + cfg_.link_latency,
             Event{EvType::FlitArrive, ni.leaf_port, static_cast<uint8_t>(ni.cur_vc), ni.next_flit, ni.leaf, ni.cur, 0});
    if (++ni.next_flit == ni.cur->size_flits) ni.cur = nullptr;
  }
}

uint64_t Network::run_cycle(uint64_t now) {
  now_ = now;
  in_cycle_ = true;
  while (!far_.empty() && far_.begin()->first < now + kWheel) {
    wheel_[far_.begin()->first & (kWheel - 1)].push_back(far_.begin()->second);
    far_.erase(far_.begin());
  }
  auto& bucket = wheel_[now & (kWheel - 1)];
  if (express_on_) {
    // Express hops need to know which flits arrive alone at their router this cycle.
    for (const Event& e : bucket)
      if (e.type == EvType::FlitArrive) routers_[e.target]->count_arrival();
    for (size_t i = 0; i < bucket.size(); ++i) handle<true>(bucket[i]);
  } else {
    for (size_t i = 0; i < bucket.size(); ++i) handle<false>(bucket[i]);
  }
  pending_events_ -= bucket.size();
  events_ += bucket.size();
  bucket.clear();

  next_active_.clear();
  next_active_nis_.clear();
  stepping_ = true;
  router_steps_ += active_routers_.size();
  for (size_t i = 0; i < active_routers_.size(); ++i) {
    Router* r = active_routers_[i];
    if (r->step(now))
      next_active_.push_back(r);
    else
      r->active = false;
  }
  active_routers_.swap(next_active_);

  for (size_t i = 0; i < active_nis_.size(); ++i) {
    const uint32_t n = active_nis_[i];
    ni_step(n, now);
    NetIface& ni = nis_[n];
    // Stay awake only while something can happen without outside help: a flit with a credit
    // (or a credit on its way), or a queued packet not yet ready. An interface blocked on
    // credits sleeps until the leaf router returns one (credit_to_ni wakes it).
    bool busy = false;
    if (ni.cur) {
      busy = ni.credits[ni.cur_vc] > 0 || !ni.returning.empty();
    } else {
      for (int c = 0; c < kNumClasses && !busy; ++c) {
        if (ni.q[c].empty()) continue;
        if (ni.q[c].front()->ni_ready > now || !ni.returning.empty()) {
          busy = true;
          break;
        }
        for (int j = 0; j < cfg_.vcs_per_class && !busy; ++j)
          busy = ni.credits[c * cfg_.vcs_per_class + j] > 0;
      }
    }
    if (busy)
      next_active_nis_.push_back(n);
    else
      ni.active = false;
  }
  active_nis_.swap(next_active_nis_);
  stepping_ = false;
  events_ += active_routers_.size();
  in_cycle_ = false;

  if (in_flight_ == 0) last_progress_ = now;
  if (now - last_progress_ > cfg_.watchdog_cycles && failure_.empty()) {
    std::ostringstream os;
    os << "network watchdog: no delivery for " << (now - last_progress_) << " cycles with "
       << in_flight_ << " transactions in flight (cycle " << now << ")";
    failure_ = os.str();
    fail_stop();
  }

  if (!active_routers_.empty() || !active_nis_.empty() || express_until_ > now) return now + 1;
  uint64_t next = UINT64_MAX;
  if (pending_events_ > 0) {
    for (uint64_t t = now + 1; t < now + kWheel && next == UINT64_MAX; ++t)
      if (!wheel_[t & (kWheel - 1)].empty()) next = t;
    if (next == UINT64_MAX) next = far_.begin()->first;
  }
  // Transactions open on a quiet network: wake when the watchdog would fire.
  if (in_flight_ > 0 && failure_.empty())
    next = std::min(next, last_progress_ + cfg_.watchdog_cycles + 1);
  return next;
}

void Network::process_method() {
  if (stop_due_) {  // a cycle run ahead failed: the run stops at that cycle's own time
    sc_core::sc_stop();
    return;
  }
  const uint64_t per = period_.value();
  const uint64_t t = sim_now_ps();
  uint64_t cyc = (t + per - 1) / per;
  if (ran_any_ && cyc <= last_run_) cyc = last_run_ + 1;
  if (cyc * per != t) {
    next_trigger(sc_time::from_value(cyc * per - t));
    return;
  }
  const uint64_t first = cyc;
  uint64_t next = run_cycle(cyc);
  if (cfg_.run_ahead && next <= horizon_ && client_ && client_->runs_on_network_time() && failure_.empty()) {
    // Nothing else in the simulation is due before `due` (ps from now): no other process can
    // inject into, read or be woken by the network until then, and the client's callbacks take
    // their time from the network, so running the busy cycles before it now changes nothing
    // anyone sees. The horizon keeps them inside the runner's slice, whose end is where the
    // runner looks (stats reset, the window's end, done()).
    const uint64_t due = sc_core::sc_time_to_pending_activity().value();
    running_ahead_ = true;
    while (next <= horizon_ && (next - first) * per < due && failure_.empty()) {
      cyc = next;
      next = run_cycle(cyc);
      ++run_ahead_cycles_;
    }
    running_ahead_ = false;
  }
  last_run_ = cyc;
  ran_any_ = true;
  if (stop_due_)
    next_trigger(sc_time::from_value((cyc - first) * per));
  else if (next == UINT64_MAX)
    next_trigger(wake_);
  else
    next_trigger(sc_time::from_value((next - first) * per), wake_);
}

void Network::fail_stop() {
  if (running_ahead_ && !mutant::on(mutant::Id::RunAheadStopsAtOnce))
    stop_due_ = true;  // process_method stops the run when SystemC's time reaches this cycle
  else
    sc_core::sc_stop();
}

void Network::invariant_failed(const std::string& what) {
  if (!failure_.empty()) return;
  failure_ = "invariant broken at cycle " + std::to_string(now_) + ": " + what;
  fail_stop();
}

void Network::start() {
  express_on_ = cfg_.express_hops && cfg_.fast_path && client_ && client_->order_free() &&
                !(cfg_.combining && client_->sends_acked_multicasts()) && !trace_;
  wake_.notify(sc_core::SC_ZERO_TIME);
}

std::string Network::dump_in_flight(size_t max) const {
  std::vector<const Packet*> live;
  pool_.for_each_live([&](const Packet& p) { live.push_back(&p); });
  std::sort(live.begin(), live.end(), [](const Packet* a, const Packet* b) {
    return a->create_cycle != b->create_cycle ? a->create_cycle < b->create_cycle : a->id < b->id;
  });
  std::ostringstream os;
  os << live.size() << " packets live; oldest first:\n";
  static const char* kinds[] = {"unicast", "multicast", "ack"};
  for (size_t i = 0; i < live.size() && i < max; ++i) {
    const Packet& p = *live[i];
    os << "  packet " << p.id << " " << kinds[static_cast<int>(p.kind)] << " class "
       << int(p.cls) << " src " << p.src << " dst " << p.dst << " txn " << p.txn
       << " created at cycle " << p.create_cycle << " (age " << (now_ - p.create_cycle)
       << ")\n";
  }
  std::vector<std::pair<uint64_t, OpenTxn>> open(acks_expected_.begin(), acks_expected_.end());
  std::sort(open.begin(), open.end(), [](const auto& a, const auto& b) {
    return a.second.create != b.second.create ? a.second.create < b.second.create : a.first < b.first;
  });
  os << open.size() << " multicast transactions await acknowledgements; oldest first:\n";
  for (size_t i = 0; i < open.size() && i < max; ++i)
    os << "  multicast txn " << open[i].first << " from node " << open[i].second.src
       << " created at cycle " << open[i].second.create << ": " << open[i].second.remaining
       << " receivers not yet acknowledged\n";
  for (const auto& r : routers_)
    if (r->holds_packets(now_)) os << "  " << r->describe_flits() << "\n";
  return os.str();
}

}  // namespace mbpsim::net
