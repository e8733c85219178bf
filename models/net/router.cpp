#include "models/net/router.h"

#include <algorithm>
#include <iterator>
#include <sstream>

#include "models/core/error.h"
#include "models/core/mutant.h"
#include "models/core/module_tree.h"
#include "models/net/network.h"

namespace mbpsim::net {

Router::Router(sc_core::sc_module_name name, Network& net, int id, int height, uint32_t pos, Stats& stats)
    : sc_core::sc_module(name), net_(&net), id_(id), height_(height), pos_(pos) {
  const NetConfig& c = net.config();
  const TreeTopology& t = net.topology();
  k_ = c.radix;
  nports_ = k_ + (height > 0 ? 1 : 0);
  gen_port_ = nports_;
  ninputs_ = nports_ + 1;
  nvcs_ = c.vcs_per_class * kNumClasses;
  // One array of input VCs and one slab of flit buffers: the input VCs of a router sit together
  // in host memory, and their size follows the router's ports.
  const uint32_t cap = FlitQueue::capacity_for(c.buffer_depth), gen_cap = FlitQueue::capacity_for(4);
  const size_t nvc_total = static_cast<size_t>(ninputs_) * nvcs_;
  in_.reset(new InputVC[nvc_total]);
  flit_slab_.reset(new Flit[static_cast<size_t>(nports_) * nvcs_ * cap + static_cast<size_t>(nvcs_) * gen_cap]);
  Flit* slot = flit_slab_.get();
  for (int p = 0; p < ninputs_; ++p)
    for (int v = 0; v < nvcs_; ++v) {
      InputVC& ivc = vc(p, v);
      const uint32_t n = p == gen_port_ ? gen_cap : cap;
      ivc.q.attach(slot, n);
      slot += n;
      std::fill(std::begin(ivc.out_vc), std::end(ivc.out_vc), int8_t{-1});
    }
  fast_path_ = c.fast_path;
  child_span_ = t.subtree_size(height);
  span_ = child_span_ * static_cast<uint32_t>(k_);
  first_node_ = pos * span_;
  if ((child_span_ & (child_span_ - 1)) == 0) child_shift_ = __builtin_ctz(child_span_);
  inp_.reset(new InPort[ninputs_]);
  routing_delay_ = static_cast<uint32_t>(c.routing_delay);
  va_delay_ = static_cast<uint32_t>(c.va_delay);
  hop_delay_ = static_cast<uint32_t>(c.sa_delay + c.st_delay + c.link_latency);
  flit_cycles_ = static_cast<uint32_t>(c.flit_cycles());
  credit_delay_ = static_cast<uint32_t>(c.credit_delay);
  vpc_ = c.vcs_per_class;
  out_.reset(new OutputPort[nports_]);
  out_slab_.reset(new OutputPort::Vc[static_cast<size_t>(nports_) * nvcs_]);
  for (int o = 0; o < nports_; ++o) {
    OutputPort& op = out_[o];
    if (o < k_) {
      if (height == t.levels() - 1) {
        op.to_node = true;
        op.peer = pos * k_ + o;
      } else {
        op.peer = t.router_id(height + 1, pos * k_ + o);
        op.peer_port = static_cast<uint8_t>(k_);
      }
    } else {
      op.peer = t.router_id(height - 1, pos / k_);
      op.peer_port = static_cast<uint8_t>(pos % k_);
    }
    op.vc = out_slab_.get() + static_cast<size_t>(o) * nvcs_;
    for (int v = 0; v < nvcs_; ++v) op.vc[v] = OutputPort::Vc{static_cast<int16_t>(op.to_node ? 0 : c.buffer_depth), -1, 0};
    op.returning.init();
    op.flits = &stats.counter(stat_name(*this, "port" + std::to_string(o) + ".flits"),
                              o < k_ ? "flits sent down to child " + std::to_string(o)
                                     : std::string("flits sent up to the parent"));
  }
  comb_alloc_ = &stats.counter(stat_name(*this, "combining.allocated"), "combining-table entries allocated");
  comb_bypassed_ = &stats.counter(stat_name(*this, "combining.bypassed"),
                                  "multicasts forwarded without an entry (table full): their acks pass uncombined");
  acks_in_ = &stats.counter(stat_name(*this, "combining.acks_in"), "acknowledgements absorbed");
  acks_combined_ = &stats.counter(stat_name(*this, "combining.acks_out"), "combined acknowledgements sent");
  comb_occupancy_ = &stats.average(stat_name(*this, "combining.occupancy"),
                                   "table entries in use, sampled at each allocation", "entries");
}

uint64_t CreditLine::bytes(size_t cap) { return Ring<Entry>::bytes(cap); }

uint64_t Router::footprint_bytes(const NetConfig& c, bool has_parent, size_t name_len) {
  const uint64_t nports = static_cast<uint64_t>(c.radix) + (has_parent ? 1 : 0), ninputs = nports + 1;
  const uint64_t nvcs = static_cast<uint64_t>(c.vcs_per_class) * kNumClasses;
  uint64_t b = module_bytes<Router>(name_len);
  // The input VCs (each with its output VCs) and the slab of flit buffers.
  const uint64_t cap = FlitQueue::capacity_for(c.buffer_depth), gen_cap = FlitQueue::capacity_for(4);
  b += array_bytes<InputVC>(ninputs * nvcs) + heap_bytes(sizeof(Flit) * nvcs * (nports * cap + gen_cap));
  b += heap_bytes(sizeof(InPort) * ninputs);
  b += array_bytes<OutputPort>(nports);
  b += heap_bytes(sizeof(OutputPort::Vc) * nports * nvcs) + nports * CreditLine::bytes(CreditLine::kInitial);
  size_t table = 1;
  while (table < static_cast<size_t>(c.combining_entries)) table <<= 1;
  b += vector_bytes<CombineEntry>(table);
  // Statistics: a counter per output port, four more and an average; the network adds a
  // utilisation formula whose closure holds the port counters.
  const uint64_t stats = nports + 6;
  b += stats * Stats::bytes_per_stat(name_len + 20) + heap_bytes(sizeof(std::vector<const Counter*>) + 8) +
       vector_bytes<const Counter*>(nports) + sizeof(std::function<double()>) * 3 / 2;
  return b;
}

void Router::accept(int port, int vc, Packet* p, uint16_t idx, uint64_t now) {
  if (p->hop_ack && consume_ack(p, now)) {
    // The ack is absorbed at the input stage: its buffer slot frees at once.
    return_credit(port, vc, now);
    return;
  }
  if (idx == 0 && net_->tracing()) net_->trace_head(id_, port, p, now);
  push_flit(port, vc, Flit{p, now + routing_delay_, idx});
}

void Router::push_flit(int port, int v, const Flit& f) {
  InputVC& ivc = vc(port, v);
  ivc.q.push(f);
  if (ivc.q.size() == 1 && f.idx == 0) inp_[port].va_pending |= 1u << v;
  inp_[port].nonempty |= 1u << v;
  port_mask_ |= 1u << port;
  ++flits_held_;
}

void Router::absorb_credits(int o, uint64_t now) {
  OutputPort& op = out_[o];
  for (uint32_t got = op.returning.absorb(now, [&](int v) { ++op.vc[v].credits; }); got; got &= got - 1) {
    const int h = op.vc[__builtin_ctz(got)].holder;
    if (h >= 0) inp_[h >> 5].credit_blocked &= ~(1u << (h & 31));
  }
  if (op.returning.empty()) returning_mask_ &= ~(1u << o);
}

void Router::route(InputVC& ivc, int in_port, Packet* p) {
  const TreeTopology& t = net_->topology();
  uint32_t mask = 0;
  if (p->kind == PacketKind::Multicast) {
    const uint32_t children = (1u << k_) - 1;
    if (in_port == k_) {
      mask = children;  // from the parent: the bitmap holds nothing finer, broadcast the subtree
    } else {
      mask = (p->bitmap.level[height_] & children) & ~(1u << in_port);
      for (int h = 0; h < height_; ++h)
        if (p->bitmap.level[h]) {
          mask |= 1u << k_;
          break;
        }
    }
    if (!mask) internal_error("multicast routed to no output at router " + std::to_string(id_));
    if (p->ack_req && net_->config().combining) {
      if (table_.size() >= static_cast<size_t>(net_->config().combining_entries)) {
        // Waiting for an entry could deadlock (two routers each holding the entry the other's
        // multicast needs), so the multicast goes on uncombined here.
        comb_bypassed_->inc();
      } else {
        const uint32_t sub = t.subtree_size(height_);
        uint32_t expected = __builtin_popcount(mask & children) * sub;
        if (mask >> k_ & 1) expected += covered_count(t, p->src, p->bitmap, 0, height_);
        table_.push_back(CombineEntry{p->txn, expected, 0, 0});
        comb_alloc_->inc();
        comb_occupancy_->sample(static_cast<double>(table_.size()));
      }
    }
    p->refs += __builtin_popcount(mask) - 1;
  } else {
    mask = unicast_route(p->dst);
  }
  ivc.route_mask = mask;
  ivc.pending = mask;
  ivc.routed = true;
}

bool Router::consume_ack(Packet* p, uint64_t now) {
  size_t i = 0;
  while (i < table_.size() && table_[i].txn != p->txn) ++i;
  if (i == table_.size()) return false;  // forwarded uncombined: route it on towards the source
  acks_in_->inc();
  CombineEntry& e = table_[i];
  e.acks += p->ack_count;
  e.held += p->ack_held;
  if (e.acks > e.expected)
    net_->invariant_failed("router " + std::to_string(id_) + ": acknowledgements for " +
                           std::to_string(e.acks) + " receivers of transaction " +
                           std::to_string(p->txn) + ", whose branches cover " +
                           std::to_string(e.expected));
  if (net_->tracing()) net_->trace_combine(id_, gen_port_, p, e.acks, e.expected, now);
  if (e.acks < e.expected) {
    net_->release(p);
    return true;
  }
  // Every receiver below answered: one combined ack goes back the way the multicast came,
  // which in a tree is the route towards its source. The last ack's packet is reused.
  p->ack_count = e.acks;
  p->ack_held = e.held;
  table_[i] = table_.back();
  table_.pop_back();
  acks_combined_->inc();
  const int vc = kAckClass * net_->config().vcs_per_class;
  for (uint16_t f = 0; f < p->size_flits; ++f) push_flit(gen_port_, vc, Flit{p, now, f});
  net_->activate(*this);
  return true;
}

void Router::cross(int o, int vc, Packet* pkt, uint16_t idx, bool tail, uint64_t now) {
  OutputPort& op = out_[o];
  op.free_at = now + flit_cycles_;
  op.flits->inc();
  const uint64_t at = now + hop_delay_;
  if (op.to_node) {
    // Only the tail's arrival delivers the packet: the body flits need no event.
    if (tail) net_->schedule(at, Event{EvType::Eject, 0, 0, idx, op.peer, pkt, 0});
  } else {
    --op.vc[vc].credits;
    net_->schedule(at, Event{EvType::FlitArrive, op.peer_port, static_cast<uint8_t>(vc), idx, op.peer, pkt, 0});
  }
}

void Router::send(int in_port, InputVC& ivc, int o, uint64_t now) {
  const Flit& f = ivc.q.front();
  const bool tail = f.idx + 1 == f.pkt->size_flits;
  const int vc = ivc.out_vc[o];
  cross(o, vc, f.pkt, f.idx, tail, now);
  ivc.pending &= ~(1u << o);
  if (!tail) return;
  if (net_->tracing()) net_->trace_hop(id_, in_port, o, f.pkt, now, ivc.pending == 0);
  // The tail: the output VC is free for the next packet.
  ivc.out_vc[o] = -1;
  release_vc(o, vc);
}

void Router::release_vc(int o, int vc) {
  OutputPort::Vc& ov = out_[o].vc[vc];
  ov.busy = 0;
  ov.holder = -1;
  --out_vcs_held_;
  if (any_va_blocked_) {  // a free VC: heads that found none may try again
    for (int p = 0; p < ninputs_; ++p) inp_[p].va_blocked = 0;
    any_va_blocked_ = false;
  }
}

void Router::release_ahead() {
  release_vc(ahead_out_, ahead_vc_);
  ahead_at_ = 0;
}

bool Router::express(int port, int v, Packet* p, uint16_t idx, uint64_t now) {
  if (ahead_at_ && ahead_at_ < now) release_ahead();  // it crossed while this router slept
  if (flits_held_ || out_vcs_held_ || idx != 0 || p->size_flits != 1 || p->kind == PacketKind::Multicast || p->hop_ack)
    return false;
  const uint64_t at = now + routing_delay_ + va_delay_;
  if (!net_->may_express(at)) return false;
  const int o = __builtin_ctz(unicast_route(p->dst));
  OutputPort& op = out_[o];
  if (op.free_at > at) return false;
  if (returning_mask_ >> o & 1) absorb_credits(o, now);  // as this cycle's step would
  // Every VC is free: VC allocation takes the first of the class in round-robin order.
  const int lo = p->cls * vpc_, vc = lo + op.va_rr;
  if (!op.to_node && op.vc[vc].credits <= 0) return false;
  op.va_rr = static_cast<uint8_t>(rr_next(op.va_rr, vpc_));
  op.vc[vc].busy = 1;
  op.vc[vc].holder = static_cast<int16_t>(port * 32 + v);
  ++out_vcs_held_;
  ahead_at_ = at;
  ahead_out_ = static_cast<uint8_t>(o);
  ahead_vc_ = static_cast<uint8_t>(vc);
  ahead_in_port_ = static_cast<uint8_t>(port);
  ahead_in_vc_ = static_cast<uint8_t>(v);
  ahead_pkt_ = p;
  // Switch allocation at `at`: the only requester of its input and of its output.
  grant_lone(port, 1u << o);
  inp_[port].rr = static_cast<uint8_t>(rr_next(v, nvcs_));
  cross(o, vc, p, 0, true, at);
  if (mutant::on(mutant::Id::ExpressFreesVcAtOnce)) release_ahead();
  return_credit(port, v, at);
  net_->count_express_hop(at);
  return true;
}

bool Router::allocate_vcs(int p, int v, uint64_t now, bool& progress, bool& timed_wait) {
  InputVC& ivc = vc(p, v);
  Flit& f = ivc.q.front();
  if (!ivc.routed) {
    if (f.ready > now) {
      timed_wait = true;
      return false;
    }
    route(ivc, p, f.pkt);
    progress = true;
  }
  // All or nothing: a packet takes a VC on every output it needs in the same cycle, or none.
  // A multicast that held one branch's VC while waiting for another's could wait on a packet
  // waiting on it (two multicasts crossing at a router): a deadlock.
  uint32_t need = 0;
  for (uint32_t m2 = ivc.pending; m2; m2 &= m2 - 1) {
    const int o = __builtin_ctz(m2);
    if (ivc.out_vc[o] < 0) need |= 1u << o;
  }
  if (!need) {
    inp_[p].va_pending &= ~(1u << v);
    return false;
  }
  // Multicasts move by virtual cut-through: a branch gets a VC only when the downstream buffer
  // has room for the whole packet. A multicast worm stretched over several routers would make
  // its downward branches wait on its upward one, and downward and upward links would then
  // wait on each other (a deadlock seen in testing). Unicasts and acks never fork and move by
  // wormhole.
  const int lo = f.pkt->cls * vpc_, n = vpc_;
  const bool vct = f.pkt->kind == PacketKind::Multicast;
  int pick[kMaxPorts];
  bool all = true;
  for (uint32_t m2 = need; m2 && all; m2 &= m2 - 1) {
    const int o = __builtin_ctz(m2);
    OutputPort& op = out_[o];
    pick[o] = -1;
    // Round robin from the pointer (rr_next: no division in the loop).
    for (int j = 0, r = op.va_rr; j < n; ++j, r = rr_next(r, n)) {
      const int cv = lo + r;
      const OutputPort::Vc& ov = op.vc[cv];
      if (!ov.busy && (!vct || op.to_node || ov.credits >= f.pkt->size_flits)) {
        pick[o] = cv;
        break;
      }
    }
    all = pick[o] >= 0;
  }
  if (!all) {
    // Until a VC is released this would fail again. A multicast may also wait for buffer
    // space, which credits bring without a release: it retries every cycle.
    if (!vct) {
      inp_[p].va_blocked |= 1u << v;
      any_va_blocked_ = true;
    }
    return false;
  }
  inp_[p].va_pending &= ~(1u << v);
  const uint64_t ready = now + va_delay_;
  for (uint32_t m2 = need; m2; m2 &= m2 - 1) {
    const int o = __builtin_ctz(m2);
    OutputPort& op = out_[o];
    op.vc[pick[o]].busy = 1;
    op.vc[pick[o]].holder = static_cast<int16_t>(p * 32 + v);
    ++out_vcs_held_;
    ivc.out_vc[o] = static_cast<int8_t>(pick[o]);
    op.va_rr = static_cast<uint8_t>(rr_next(pick[o] - lo, n));
  }
  ivc.va_ready = ready;
  progress = true;
  return true;
}

uint32_t Router::requests(int p, int v, uint64_t now, bool& timed_wait) {
  InputVC& ivc = vc(p, v);
  if (!ivc.routed) return 0;
  const Flit& f = ivc.q.front();
  if (f.ready > now) {
    timed_wait = true;
    return 0;
  }
  uint32_t elig = 0;
  for (uint32_t cand = ivc.pending; cand; cand &= cand - 1) {
    const int o = __builtin_ctz(cand);
    const int ov = ivc.out_vc[o];
    if (ov < 0) continue;
    const OutputPort& op = out_[o];
    if (ivc.va_ready > now || op.free_at > now) {
      timed_wait = true;
      continue;
    }
    if (!op.to_node && op.vc[ov].credits <= 0) {
      // A packet with one output waits for that output's credit alone: park it.
      if (ivc.route_mask == (1u << o)) inp_[p].credit_blocked |= 1u << v;
      continue;
    }
    elig |= 1u << o;
  }
  return elig;
}

void Router::forward(int p, int v, uint32_t grant, uint64_t now) {
  InputVC& ivc = vc(p, v);
  for (uint32_t g = grant; g; g &= g - 1) send(p, ivc, __builtin_ctz(g), now);
  inp_[p].rr = static_cast<uint8_t>(rr_next(v, nvcs_));
  if (ivc.pending) return;
  // The flit has reached every output it needed: free its slot and credit the upstream.
  const Flit f = ivc.q.front();
  ivc.q.pop();
  --flits_held_;
  if (ivc.q.empty() && !(inp_[p].nonempty &= ~(1u << v))) port_mask_ &= ~(1u << p);
  if (!ivc.q.empty() && ivc.q.front().idx == 0) inp_[p].va_pending |= 1u << v;
  if (f.idx + 1 == f.pkt->size_flits)
    ivc.routed = false;
  else
    ivc.pending = ivc.route_mask;
  if (p != gen_port_) return_credit(p, v, now);
}

void Router::grant_lone(int p, uint32_t grant) {
  // Each output it asks for has this one requester: the output's arbiter grants it.
  if (!mutant::on(mutant::Id::LonePathKeepsSaPointer))
    for (uint32_t g = grant; g; g &= g - 1) out_[__builtin_ctz(g)].sa_rr = static_cast<uint8_t>(rr_next(p, ninputs_));
}

bool Router::step_lone(uint64_t now, bool release_due, bool& progress, bool& timed_wait) {
  const int p = __builtin_ctz(port_mask_), v = __builtin_ctz(inp_[p].nonempty);
  InPort& in = inp_[p];
  // A flit given its VCs this cycle cannot request the switch before va_delay (>= 1) has
  // passed: its switch allocation would only find that out.
  const bool fresh = (in.va_pending & ~in.va_blocked) >> v & 1 && allocate_vcs(p, v, now, progress, timed_wait);
  if (__builtin_expect(release_due, 0)) {  // an express packet crosses in this switch allocation
    release_ahead();
    progress = true;
  }
  if (!fresh && (in.nonempty & ~in.va_pending & ~in.credit_blocked) >> v & 1) {
    const uint32_t grant = requests(p, v, now, timed_wait);
    if (grant) {
      grant_lone(p, grant);
      progress = true;
      forward(p, v, grant, now);
    }
  }
  return stay_awake(now, progress, timed_wait);
}

bool Router::step(uint64_t now) {
  // A router whose flits all wait for credits or busy VCs sleeps until a credit or flit
  // arrives; it stays awake only while it makes progress or waits for a known cycle.
  bool progress = false, timed_wait = false;

  for (uint32_t rm = returning_mask_; rm; rm &= rm - 1) absorb_credits(__builtin_ctz(rm), now);
  // An express packet crosses in this cycle's switch allocation, after its VC allocation, or
  // crossed in an earlier one while this router slept.
  bool release_due = false;
  if (__builtin_expect(ahead_at_ != 0, 0)) {
    if (ahead_at_ < now)
      release_ahead();
    else
      release_due = ahead_at_ == now;
  }

  if (flits_held_ == 1 && fast_path_) {
    net_->count_lone_step();
    return step_lone(now, release_due, progress, timed_wait);
  }

  // Route computation and VC allocation for packets at the front of their input VC.
  // A flit given its VCs this cycle cannot request the switch before va_delay (>= 1) has
  // passed: `fresh` keeps it out of this cycle's switch allocation.
  uint32_t fresh[kMaxPorts];
  for (uint32_t pm = port_mask_; pm; pm &= pm - 1) {
    const int p = __builtin_ctz(pm);
    fresh[p] = 0;
    for (uint32_t m = inp_[p].va_pending & ~inp_[p].va_blocked; m; m &= m - 1) {
      const int v = __builtin_ctz(m);
      if (allocate_vcs(p, v, now, progress, timed_wait)) fresh[p] |= 1u << v;
    }
  }
  if (__builtin_expect(release_due, 0)) {
    release_ahead();
    progress = true;
  }

  // Separable input-first switch allocation: each input offers one VC's flit, each output
  // grants one input; a multicast flit may win several outputs in one cycle (crossbar fan-out).
  uint32_t req[kMaxPorts];
  int req_vc[kMaxPorts];
  uint32_t out_req[kMaxPorts];
  uint32_t touched = 0;  // outputs with at least one request
  uint32_t requesting = 0;  // inputs with a request
  for (uint32_t pm = port_mask_; pm; pm &= pm - 1) {
    const int p = __builtin_ctz(pm);
    req[p] = 0;
    const uint32_t m = inp_[p].nonempty & ~inp_[p].va_pending & ~inp_[p].credit_blocked & ~fresh[p];
    // Round robin over the VCs holding flits, starting at the pointer: bits at or above it
    // first, then the ones below.
    const uint32_t hi = m & (~0u << inp_[p].rr);
    uint32_t order[2] = {hi, m & ~hi};
    for (int part = 0; part < 2 && !req[p]; ++part) {
      for (uint32_t bits = order[part]; bits; bits &= bits - 1) {
        const int v = __builtin_ctz(bits);
        uint32_t elig = requests(p, v, now, timed_wait);
        if (!elig) continue;
        req[p] = elig;
        req_vc[p] = v;
        requesting |= 1u << p;
        for (; elig; elig &= elig - 1) {
          const int o = __builtin_ctz(elig);
          if (!(touched >> o & 1)) out_req[o] = 0;
          touched |= 1u << o;
          out_req[o] |= 1u << p;
        }
        break;
      }
    }
  }
  if (requesting) {
    uint32_t grant[kMaxPorts];
    for (uint32_t rq = requesting; rq; rq &= rq - 1) grant[__builtin_ctz(rq)] = 0;
    for (uint32_t t = touched; t; t &= t - 1) {
      const int o = __builtin_ctz(t);
      const uint32_t r = out_req[o];
      OutputPort& op = out_[o];
      const uint32_t hi = r & (~0u << op.sa_rr);
      const int p = __builtin_ctz(hi ? hi : r);
      grant[p] |= 1u << o;
      op.sa_rr = static_cast<uint8_t>(rr_next(p, ninputs_));
    }
    for (uint32_t rq = requesting; rq; rq &= rq - 1) {
      const int p = __builtin_ctz(rq);
      if (!grant[p]) continue;
      progress = true;
      forward(p, req_vc[p], grant[p], now);
    }
  }
  return stay_awake(now, progress, timed_wait);
}

bool Router::stay_awake(uint64_t now, bool progress, bool timed_wait) {
  if (flits_held_ == 0) return false;
  if (progress || timed_wait) return true;
  // An express packet's VC frees in the switch allocation of ahead_at_, which may unblock a head
  // here: the pipeline holds that packet until then, so the router is awake then anyway.
  if (ahead_at_) return true;
  // Blocked: stay awake only while credits are on their way back (they arrive within the
  // credit delay); otherwise sleep until the downstream frees a slot and wakes this router.
  for (uint32_t rm = returning_mask_; rm; rm &= rm - 1) absorb_credits(__builtin_ctz(rm), now);
  return returning_mask_ != 0;
}

void Router::return_credit(int p, int vc, uint64_t now) {
  const uint64_t at = now + credit_delay_;
  const OutputPort& op = out_[p];
  if (op.to_node)
    net_->credit_to_ni(op.peer, vc, at);
  else
    net_->credit_to_router(*op.peer_router, op.peer_port, vc, at);
}

void Router::connect() {
  for (int o = 0; o < nports_; ++o)
    if (OutputPort& op = out_[o]; !op.to_node) op.peer_router = &net_->router(static_cast<int>(op.peer));
}

std::string Router::describe_flits() const {
  std::ostringstream os;
  os << "router " << id_ << " (height " << height_ << ", pos " << pos_ << "): " << flits_held_
     << " flits buffered, " << table_.size() << " combining entries";
  static const char* kinds[] = {"unicast", "multicast", "ack"};
  for (int p = 0; p < ninputs_; ++p)
    for (int v = 0; v < nvcs_; ++v) {
      const InputVC& ivc = vc(p, v);
      if (ivc.q.empty()) continue;
      const Flit& f = ivc.q.front();
      os << "\n    in port " << p << " vc " << v << ": " << ivc.q.size() << " flits, front "
         << kinds[static_cast<int>(f.pkt->kind)] << " packet " << f.pkt->id << " flit " << f.idx
         << "/" << f.pkt->size_flits << (ivc.routed ? "" : " (not routed)") << ", waiting for outputs";
      for (int o = 0; o < nports_; ++o)
        if (ivc.pending >> o & 1) {
          os << " " << o;
          if (ivc.out_vc[o] < 0)
            os << "(no VC)";
          else
            os << "(vc " << int(ivc.out_vc[o]) << ", " << out_[o].vc[ivc.out_vc[o]].credits << " credits)";
        }
    }
  // After cycle `now`, an express packet that crosses later is still here as the pipeline has it;
  // once it crossed its VC is free (this router may have slept through that cycle).
  const uint64_t now = net_->now();
  if (ahead_at_ > now)
    os << "\n    in port " << int(ahead_in_port_) << " vc " << int(ahead_in_vc_) << ": " << kinds[static_cast<int>(ahead_pkt_->kind)]
       << " packet " << ahead_pkt_->id << " (express: crosses to out port " << int(ahead_out_) << " vc " << int(ahead_vc_)
       << " at cycle " << ahead_at_ << ")";
  for (int o = 0; o < nports_; ++o) {
    os << "\n    out port " << o << " VCs held:";
    for (int v = 0; v < nvcs_; ++v)
      if (out_[o].vc[v].busy && !(ahead_at_ && ahead_at_ <= now && o == ahead_out_ && v == ahead_vc_)) os << " " << v;
  }
  return os.str();
}

}  // namespace mbpsim::net
