// The user-level Go-back-N library over UDP (reliable_udp.h).
#include "models/sockets/reliable_udp.h"

#include "models/core/error.h"
#include "models/core/module_tree.h"

namespace mbpsim::sockets {

using namespace mbpsim::mbcf;

ReliableUdp::ReliableUdp(Calendar& cal, InetStack& stack, host::Os& os, uint32_t node, uint32_t nodes, uint16_t port,
                         const gbn::Params& p, double rudp_instr, Stats& st)
    : cal_(cal),
      stack_(stack),
      os_(os),
      node_(node),
      nodes_(nodes),
      port_(port),
      rudp_instr_(rudp_instr),
      dup_(st.counter(stat_name(stack, "rudp_duplicates"), "user-level Go-back-N: sequenced packets received twice")),
      gap_(st.counter(stat_name(stack, "rudp_out_of_order"), "user-level Go-back-N: sequenced packets dropped after a gap")),
      resends_(st.counter(stat_name(stack, "rudp_retransmissions"), "user-level Go-back-N: handshaked retransmissions")),
      resend_reqs_(st.counter(stat_name(stack, "rudp_resend_requests"), "user-level Go-back-N: resend requests sent")),
      acks_sent_(st.counter(stat_name(stack, "rudp_acks_sent"), "user-level Go-back-N: acknowledgement-only packets sent")),
      timeouts_(st.counter(stat_name(stack, "rudp_timeouts"), "user-level Go-back-N: acknowledgement timeouts that led to a resend")),
      ack_polls_(st.counter(stat_name(stack, "rudp_ack_polls"), "user-level Go-back-N: timer expiries that sent an ack request")),
      th1_cuts_(st.counter(stat_name(stack, "rudp_th1_reductions"), "user-level Go-back-N: times TH1 was lowered")),
      peer_resets_(st.counter(stat_name(stack, "rudp_peer_resets"), "user-level Go-back-N: sequence resets after a peer restarted")),
      unresponsive_(st.counter(stat_name(stack, "rudp_peers_unresponsive"), "user-level Go-back-N: peers that missed max_timeouts timeouts in a row")),
      abandoned_(st.counter(stat_name(stack, "rudp_abandoned"), "user-level Go-back-N: packets dropped because their peer restarted")),
      hellos_(st.counter(stat_name(stack, "rudp_hellos"), "user-level Go-back-N: Hellos sent")),
      stale_(st.counter(stat_name(stack, "rudp_stale"), "user-level Go-back-N: packets dropped as from before a restart")),
      errors_(st.counter(stat_name(stack, "rudp_send_errors"), "user-level Go-back-N: sendto calls that failed otherwise (the packet is left to Go-back-N)")),
      short_(st.counter(stat_name(stack, "rudp_short"), "user-level Go-back-N: datagrams too short for the library's header (dropped)")),
      enobufs_(st.counter(stat_name(stack, "rudp_enobufs_retries"), "user-level Go-back-N: sendto calls that failed with ENOBUFS (a full interface queue) and were made again")),
      lib_ps_(st.counter(stat_name(stack, "rudp_ps"), "host CPU time in the user-level Go-back-N routines (their system calls are the OS's and the stack's)", "ps")) {
  fd_ = stack_.udp_socket();
  const Errno e = stack_.bind(fd_, port_);
  if (e != Errno::Ok) internal_error(std::string("ReliableUdp: bind: ") + to_string(e));
  gbn::Params q = p;
  q.nodes = nodes;
  q.self = node;
  ep_ = std::make_unique<gbn::Endpoint>(q, gbn::Counters{dup_, gap_, resends_, resend_reqs_, acks_sent_, timeouts_, ack_polls_, th1_cuts_,
                                                         peer_resets_, unresponsive_, abandoned_, hellos_, stale_},
                                        *this);
}

void ReliableUdp::note(Errno e) {
  if (e == Errno::Ok) return;
  errors_.inc();
  if (first_error_ == Errno::Ok) first_error_ = e;
}

void ReliableUdp::send(uint32_t dst, std::vector<uint8_t> data, std::function<void()> k) {
  if (ep_->window_full(dst)) {  // blocks: the acknowledgements that make room must be read
    recv_one([this, dst, data = std::move(data), k = std::move(k)]() mutable { send(dst, std::move(data), std::move(k)); });
    return;
  }
  lib_ps_.inc(os_.instr_ps(rudp_instr_));
  os_.kernel(os_.instr_ps(rudp_instr_), [this, dst, data = std::move(data), k = std::move(k)]() mutable {
    Packet p;
    p.src_pnode = node_;
    Command c;
    c.cmd = Cmd::Write;
    c.length = static_cast<uint32_t>(data.size());
    c.data = std::move(data);
    p.cmds.push_back(std::move(c));
    ep_->submit(dst, std::move(p));
    pump(std::move(k));
  });
}

void ReliableUdp::send(uint32_t peer, const Packet& p) {
  Out o;
  o.peer = peer;
  o.sequenced = (p.ctrl_p & kSequenced) != 0;
  const uint8_t recv_p = (p.ctrl_p & kHello) ? p.recv_p : ep_->arrived(peer);
  o.bytes = {p.ctrl_p, p.end_p, recv_p, 0};
  if (!p.cmds.empty()) o.bytes.insert(o.bytes.end(), p.cmds[0].data.begin(), p.cmds[0].data.end());
  outq_.push_back(std::move(o));
}

void ReliableUdp::pump(std::function<void()> k) {
  if (k) drained_.push_back(std::move(k));
  if (pumping_) return;
  if (outq_.empty()) {
    auto ks = std::move(drained_);
    drained_.clear();
    for (auto& f : ks) f();
    return;
  }
  pumping_ = true;
  const uint32_t peer = outq_.front().peer;
  const bool seq = outq_.front().sequenced;
  stack_.sendto(fd_, peer, port_, outq_.front().bytes, [this, peer, seq](Errno e) {
    pumping_ = false;
    if (e == Errno::NoBufs) {
      // The interface queue was full: the routine sends the same datagram again at once (the
      // usual loop on ENOBUFS), each try a whole system call, until the queue has room.
      enobufs_.inc();
      return pump(nullptr);
    }
    note(e);
    outq_.pop_front();
    if (seq) ep_->left(peer);  // the frame is on its way: the ack timer runs from now
    pump(nullptr);
  });
}

void ReliableUdp::set_timer(gbn::Timer t, uint32_t peer, double us, uint64_t tag) {
  // An interval timer: it fires on the first clock tick after it runs out, as a signal whose
  // handler runs the protocol's routine.
  const uint64_t at = os_.next_tick(cal_.now_ps() + static_cast<uint64_t>(us * 1e6));
  cal_.at(at, [this, t, peer, tag] {
    // (An acknowledgement timer that the collection of what it guarded made void was stopped
    // by the routine that collected it: no signal.)
    if (t == gbn::Timer::Ack && !ep_->ack_timer_live(peer, tag)) return;
    os_.invoke(1, [this, t, peer, tag] {
      switch (t) {
        case gbn::Timer::Ack:
          if (ep_->ack_timer_live(peer, tag)) ep_->timeout(peer);
          break;
        case gbn::Timer::Resend: ep_->resend_timer(peer, static_cast<uint8_t>(tag)); break;
        case gbn::Timer::Hello: ep_->hello_timer(peer); break;
      }
      pump(nullptr);
    });
  });
}

void ReliableUdp::recv_one(std::function<void()> k) {
  stack_.recvfrom(fd_, [this, k = std::move(k)](Errno e, Received r) mutable {
    if (e != Errno::Ok) internal_error(std::string("ReliableUdp: recvfrom: ") + to_string(e));
    lib_ps_.inc(os_.instr_ps(rudp_instr_));
    os_.kernel(os_.instr_ps(rudp_instr_), [this, r = std::move(r), k = std::move(k)]() mutable {
      if (r.data.size() < kHeader || r.src_node >= nodes_ || r.src_node == node_) {
        short_.inc();
        return pump(std::move(k));
      }
      const uint8_t ctrl = r.data[0], end = r.data[1], recv = r.data[2];
      const uint32_t src = r.src_node;
      if (ep_->frame(src, ctrl, end, recv)) {  // a packet with a message
        std::vector<uint8_t> msg(r.data.begin() + kHeader, r.data.end());
        if (!(ctrl & kSequenced)) {
          inbox_.emplace_back(src, std::move(msg));
        } else if (ep_->data(src, ep_->classify(src, end), end, true)) {
          inbox_.emplace_back(src, std::move(msg));
          if (ctrl & kAckReq) ep_->unanswered(src);  // the library answers at once
        }
      }
      pump(std::move(k));
    });
  });
}

void ReliableUdp::recv(std::function<void(uint32_t, std::vector<uint8_t>)> k) {
  if (inbox_.empty()) {
    recv_one([this, k = std::move(k)]() mutable { recv(std::move(k)); });
    return;
  }
  auto [src, data] = std::move(inbox_.front());
  inbox_.pop_front();
  k(src, std::move(data));
}

bool ReliableUdp::all_acked() const {
  for (uint32_t p = 0; p < nodes_; ++p)
    if (p != node_ && !ep_->unacked(p).empty()) return false;
  return true;
}

void ReliableUdp::flush(std::function<void()> k) {
  if (all_acked()) return k();
  recv_one([this, k = std::move(k)]() mutable { flush(std::move(k)); });
}

}  // namespace mbpsim::sockets
