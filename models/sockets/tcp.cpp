// TCP as a state x event table (tcp.h): the table, a connection's set-up and the user's calls
// (4.3BSD's tcp_usrreq). The table's actions and tcp_input are in tcp_input.cpp, tcp_output in
// tcp_output.cpp, the timers in tcp_timer.cpp.
#include "models/sockets/tcp.h"

#include <algorithm>
#include <cmath>

#include "models/core/error.h"
#include "models/core/module_tree.h"
#include "models/host/os.h"
#include "models/sockets/inet_stack.h"
#include "models/sockets/tcp_internal.h"

namespace mbpsim::sockets {

using tcp::Event;
using tcp::State;
using namespace tcp;
using namespace tcp_internal;

namespace tcp {
const char* to_string(State s) {
  static const char* const n[] = {"CLOSED",     "LISTEN",     "SYN_SENT", "SYN_RCVD", "ESTABLISHED", "FIN_WAIT_1",
                                  "FIN_WAIT_2", "CLOSE_WAIT", "CLOSING",  "LAST_ACK", "TIME_WAIT"};
  return n[static_cast<size_t>(s)];
}
const char* to_string(Event e) {
  static const char* const n[] = {"connect", "listen", "close", "SYN", "SYN|ACK", "ACK", "FIN", "RST", "rexmt", "delack", "2msl"};
  return n[static_cast<size_t>(e)];
}
}  // namespace tcp

// ------------------------------------------------------------------ the table

#define A(f) Cell{&Tcp::f}
#define NONE Cell{}
// Rows: states; columns: Connect, Listen, Close, Syn, SynAck, Ack, Fin, Rst, Rexmt, DelAck, TwoMsl.
const std::array<std::array<Tcp::Cell, kEvents>, kStates> Tcp::kTable = {{
    /* CLOSED      */ {A(a_connect), A(a_listen), NONE, NONE, NONE, NONE, NONE, NONE, NONE, NONE, NONE},
    /* LISTEN      */ {NONE, NONE, A(a_close_now), A(a_syn_listen), NONE, NONE, NONE, NONE, NONE, NONE, NONE},
    /* SYN_SENT    */ {NONE, NONE, A(a_close_now), NONE, A(a_synack), NONE, NONE, A(a_reset), A(a_rexmt), NONE, NONE},
    /* SYN_RCVD    */ {NONE, NONE, A(a_close_fin), A(a_reack), NONE, A(a_synrcvd_ack), A(a_synrcvd_ack), A(a_reset), A(a_rexmt), NONE, NONE},
    /* ESTABLISHED */ {NONE, NONE, A(a_close_fin), NONE, A(a_reack), A(a_segment), A(a_segment), A(a_reset), A(a_rexmt), A(a_delack), NONE},
    /* FIN_WAIT_1  */ {NONE, NONE, NONE, NONE, NONE, A(a_segment), A(a_segment), A(a_reset), A(a_rexmt), A(a_delack), NONE},
    /* FIN_WAIT_2  */ {NONE, NONE, NONE, NONE, NONE, A(a_segment), A(a_segment), A(a_reset), NONE, A(a_delack), NONE},
    /* CLOSE_WAIT  */ {NONE, NONE, A(a_close_fin), NONE, NONE, A(a_segment), A(a_segment), A(a_reset), A(a_rexmt), A(a_delack), NONE},
    /* CLOSING     */ {NONE, NONE, NONE, NONE, NONE, A(a_segment), A(a_segment), A(a_reset), A(a_rexmt), NONE, NONE},
    /* LAST_ACK    */ {NONE, NONE, NONE, NONE, NONE, A(a_segment), A(a_segment), A(a_reset), A(a_rexmt), NONE, NONE},
    /* TIME_WAIT   */ {NONE, NONE, NONE, NONE, NONE, NONE, A(a_reack), A(a_twomsl), NONE, NONE, A(a_twomsl)},
}};
#undef A
#undef NONE

// ------------------------------------------------------------------ set-up

Tcp::Tcp(sc_core::sc_module_name name, Calendar& cal, InetStack& ip, host::Os& os, host::Cpu& cpu, uint32_t node, uint32_t nodes,
         const SocketConfig& c, Stats& st)
    : sc_core::sc_module(name),
      cal_(cal),
      ip_(ip),
      os_(os),
      cpu_(cpu),
      node_(node),
      nodes_(nodes),
      c_(c),
      mss_(std::min(c.tcp_mss, c.mtu - mbp2::kIpHeader - mbp2::kTcpHeader)),
      // Solaris's tcp_rwnd_set: at least tcp_recv_hiwat_minmss (4) segments, rounded up to whole
      // segments (the window is at most 65535 without window scaling).
      recvspace_(c.tcp_rwnd_whole_mss ? std::min<uint32_t>(kMaxWin, (std::max(4 * mss_, c.tcp_recvspace) + mss_ - 1) / mss_ * mss_)
                                      : c.tcp_recvspace),
      // Solaris 2.6's tcp_rwnd_set: half the receive window, in whole segments.
      rack_abs_max_(recvspace_ / mss_ / 2 * mss_),
      // BSD's tcp_iss starts at 1 and steps by TCP_ISSINCR/2 per connection; a node's own start
      // keeps two hosts' sequence spaces apart (deterministic: no clock is read).
      next_iss_(1 + node * 0x01000000u),
      segs_out_(st.counter(stat_name(*this, "segments_sent"), "TCP segments handed to IP (data, ACKs, SYNs, FINs, RSTs)")),
      data_segs_out_(st.counter(stat_name(*this, "data_segments_sent"), "segments sent carrying data (retransmissions included)")),
      data_bytes_out_(st.counter(stat_name(*this, "data_bytes_sent"), "data bytes sent (retransmissions included)", "bytes")),
      rexmt_segs_(st.counter(stat_name(*this, "retransmitted_segments"), "data segments sent again (after a timeout or three duplicate ACKs)")),
      acks_out_(st.counter(stat_name(*this, "pure_acks_sent"), "segments sent with neither data nor SYN/FIN/RST (ACKs and window updates)")),
      delacks_(st.counter(stat_name(*this, "delayed_acks"), "ACKs sent by the delayed-ACK timer (BSD: the tcp_fasttimo tick; Solaris: the connection's own)")),
      winupd_out_(st.counter(stat_name(*this, "window_updates"), "pure ACKs sent because the user's reads opened the window")),
      rst_out_(st.counter(stat_name(*this, "resets_sent"), "RSTs sent (a segment for no connection)")),
      segs_in_(st.counter(stat_name(*this, "segments_received"), "TCP segments tcp_input took")),
      predicted_(st.counter(stat_name(*this, "header_predicted"), "segments taken by header prediction's fast path (tcp_predict_instr)")),
      dupacks_in_(st.counter(stat_name(*this, "duplicate_acks"), "duplicate ACKs received")),
      fast_rexmt_(st.counter(stat_name(*this, "fast_retransmits"), "fast retransmissions (three duplicate ACKs)")),
      timeouts_(st.counter(stat_name(*this, "rexmt_timeouts"), "retransmission timeouts")),
      ooo_in_(st.counter(stat_name(*this, "out_of_order"), "segments received ahead of rcv_nxt (held for reassembly)")),
      dup_in_(st.counter(stat_name(*this, "duplicate_segments"), "segments received wholly below rcv_nxt (dropped, ACKed)")),
      persist_probes_(st.counter(stat_name(*this, "window_probes"), "one-byte probes of a zero window (the persist timer)")),
      conns_(st.counter(stat_name(*this, "connections"), "connections established")),
      drops_(st.counter(stat_name(*this, "dropped_connections"), "connections dropped: reset by the peer, refused, or timed out")),
      tx_ps_(st.counter(stat_name(*this, "tx_ps"), "host CPU time in tcp_output and below (IP, ether_output, the driver) for the segments sent, in calls and at interrupt level (ACKs, timers)", "ps")),
      rx_ps_(st.counter(stat_name(*this, "rx_ps"), "host CPU time in send and recv below the system call: sosend, soreceive and their copies", "ps")),
      input_ps_(st.counter(stat_name(*this, "input_ps"), "host CPU time in tcp_input (its checksum included), in netisr (Solaris: in the driver's interrupt, or for a co-queued segment in the reader's recv, its checksum then in the copy out)", "ps")),
      bad_(st.counter(stat_name(*this, "bad_segments"), "segments dropped by tcp_input: a bad header or checksum, or neither SYN, RST nor ACK")),
      quenches_(st.counter(stat_name(*this, "quenches"), "segments the interface queue refused (ip_output's ENOBUFS), each closing the connection's congestion window to one segment (tcp_quench)")),
      co_queued_(st.counter(stat_name(*this, "co_queued"), "segments tcp_rput put on the co queue for the reader (sockets.tcp_rcv_co)")),
      co_read_(st.counter(stat_name(*this, "co_read"), "co-queued segments the reader's recv copied out and put through tcp_rput_data (tcp_rrw)")),
      co_drained_(st.counter(stat_name(*this, "co_drained"), "co-queued segments drained at interrupt level (tcp_co_drain: a segment that was not eligible came, or the queue's timer ran out)")) {}

Tcp::Tcb* Tcp::tcb(int fd) {
  if (fd < 0 || static_cast<size_t>(fd) >= tcbs_.size()) return nullptr;
  return tcbs_[static_cast<size_t>(fd)].get();
}
const Tcp::Tcb* Tcp::tcb(int fd) const { return const_cast<Tcp*>(this)->tcb(fd); }

Tcp::Tcb* Tcp::lookup(uint16_t lport, uint32_t rnode, uint16_t rport) {
  Tcb* listener = nullptr;
  for (auto& t : tcbs_) {
    if (!t || t->state == State::Closed || t->lport != lport) continue;
    if (t->state == State::Listen) listener = t.get();
    else if (t->rnode == rnode && t->rport == rport) return t.get();
  }
  return listener;
}

bool Tcp::port_taken(uint16_t port) const {
  for (const auto& t : tcbs_)
    if (t && t->state != State::Closed && t->lport == port && t->listener < 0) return true;
  return false;
}

uint16_t Tcp::ephemeral() {
  for (;;) {
    const uint16_t p = next_ephemeral_;
    next_ephemeral_ = next_ephemeral_ >= 5000 ? 1024 : static_cast<uint16_t>(next_ephemeral_ + 1);
    if (!port_taken(p)) return p;
  }
}

uint64_t Tcp::chan(int fd, uint32_t kind) const {
  return (static_cast<uint64_t>(node_) << 32) | 0x80000000u | (kind << 24) | static_cast<uint32_t>(fd);
}

uint32_t Tcp::initial_cwnd() const { return std::max(mss_, std::min(c_.tcp_initial_cwnd, kMaxWin)); }

// sbspace: the bytes left, and with sockets.mbuf_accounting the mbuf storage left (at least 0).
uint32_t Tcp::snd_space(const Tcb& t) const {
  const uint32_t b = c_.tcp_sendspace - std::min<uint32_t>(c_.tcp_sendspace, static_cast<uint32_t>(t.sndbuf.size()));
  return c_.mbuf_accounting ? static_cast<uint32_t>(std::clamp<int64_t>(t.snd_mb.room(), 0, b)) : b;
}
uint32_t Tcp::unsent(const Tcb& t) {
  const uint32_t held = static_cast<uint32_t>(t.sndbuf.size());
  return held - std::min(held, t.snd_max - t.snd_una);
}
uint32_t Tcp::maxpsz() const {
  // tcp_maxpsz_set: tcp_maxpsz_multiplier segments, at most half the send buffer rounded up to
  // a whole segment
  uint32_t m = c_.tcp_maxpsz_multiplier * mss_;
  if (m > c_.tcp_sendspace / 2) m = (c_.tcp_sendspace / 2 + mss_ - 1) / mss_ * mss_;
  return std::max(m, 1u);
}
void Tcp::snd_flow(Tcb& t) {
  const uint32_t u = unsent(t);
  if (t.flow_stopped) {
    if (u <= c_.tcp_send_lowat) {
      t.flow_stopped = false;
      os_.wakeup(chan(t.fd, kChanSend));  // enableok: the stream head's writer goes on
    }
  } else if (u >= c_.tcp_sendspace) {
    t.flow_stopped = true;
  }
}
void Tcp::add_mblks(Tcb& t, uint32_t n) {
  uint32_t end = t.snd_una + static_cast<uint32_t>(t.sndbuf.size());  // (before the append)
  while (n > 0) {
    const uint32_t b = std::min(n, mss_);  // strmakemsg: blocks of at most sd_maxblk, the MSS
    end += b;
    n -= b;
    t.mblk_ends.push_back(end);
  }
}
uint32_t Tcp::mblk_fit(const Tcb& t, uint32_t off, uint32_t len) const {
  const uint32_t start = t.snd_una + off;
  auto it = std::find_if(t.mblk_ends.begin(), t.mblk_ends.end(), [start](uint32_t e) { return seq_gt(e, start); });
  if (it == t.mblk_ends.end()) return len;
  uint32_t seg = *it - start;
  if (seg >= len) return len;  // the block has more than a segment: cut at the MSS (the rest stays)
  // "tack on more mblks as long as we don't need to split an mblk"
  for (uint32_t prev = *it++; it != t.mblk_ends.end() && *it - prev <= len - seg; prev = *it++) seg += *it - prev;
  return seg;
}
uint32_t Tcp::rcv_space(const Tcb& t) const {
  if (c_.streams_rcv_flow) return t.rwnd;  // the stream head holds the data; TCP offers tcp_rwnd
  const uint32_t b = recvspace_ - std::min<uint32_t>(recvspace_, static_cast<uint32_t>(t.rcvbuf.size()));
  return c_.mbuf_accounting ? static_cast<uint32_t>(std::clamp<int64_t>(t.rcv_mb.room(), 0, b)) : b;
}
uint32_t Tcp::offered(const Tcb& t) { return seq_gt(t.rcv_adv, t.rcv_nxt) ? t.rcv_adv - t.rcv_nxt : 0; }

void Tcp::collapse_window(Tcb& t) {
  // A loss (a timeout or three duplicate ACKs): half the window into ssthresh, cwnd one MSS, and
  // back to the oldest unacknowledged byte, the RTT measurement abandoned.
  const uint32_t w = std::max<uint32_t>(std::min(t.snd_wnd, t.cwnd) / 2 / mss_, 2);
  t.ssthresh = w * mss_;
  t.cwnd = mss_;
  t.snd_nxt = t.snd_una;
  t.timing = false;
}

tcp::State Tcp::state(int fd) const {
  const Tcb* t = tcb(fd);
  return t ? t->state : State::Closed;
}
size_t Tcp::readable(int fd) const {
  const Tcb* t = tcb(fd);
  return t ? t->rcvbuf.size() : 0;
}
size_t Tcp::queued(int fd) const {
  const Tcb* t = tcb(fd);
  return t ? t->sndbuf.size() : 0;
}
uint32_t Tcp::cwnd(int fd) const {
  const Tcb* t = tcb(fd);
  return t ? t->cwnd : 0;
}

void Tcp::dispatch(Tcb& t, Event e, const mbp2::Parsed* p, const std::vector<uint8_t>* f) {
  const Cell& cell = kTable[static_cast<size_t>(t.state)][static_cast<size_t>(e)];
  if (!cell.act) return;  // the table's default: nothing happens (a segment dropped)
  t.state = (this->*cell.act)(t, p, f);
}

// ------------------------------------------------------------------ the user's calls

int Tcp::socket() {
  const int fd = ip_.open_descriptor(SocketKind::Tcp);
  if (tcbs_.size() <= static_cast<size_t>(fd)) tcbs_.resize(static_cast<size_t>(fd) + 1);
  auto t = std::make_unique<Tcb>();
  t->snd_mb = MbufAccount(c_.tcp_sendspace);
  t->rcv_mb = MbufAccount(recvspace_);
  t->rwnd = recvspace_;
  t->fd = fd;
  tcbs_[static_cast<size_t>(fd)] = std::move(t);
  return fd;
}

Errno Tcp::listen(int fd, uint16_t port) {
  Tcb* t = tcb(fd);
  if (!t || t->user_closed) return Errno::BadDescriptor;
  if (t->state != State::Closed || t->lport) return Errno::AlreadyBound;
  if (port == 0) return Errno::BadPort;
  if (port_taken(port)) return Errno::AddrInUse;
  t->lport = port;
  dispatch(*t, Event::Listen);
  return Errno::Ok;
}

Errno Tcp::set_nodelay(int fd, bool on) {
  Tcb* t = tcb(fd);
  if (!t || t->user_closed) return Errno::BadDescriptor;
  t->nodelay = on;
  return Errno::Ok;
}

void Tcp::wait(uint64_t ch, std::function<bool()> ready, std::function<void()> then) {
  if (ready()) return then();
  os_.sleep(ch, [this, ch, ready = std::move(ready), then = std::move(then)]() mutable { wait(ch, std::move(ready), std::move(then)); });
}

void Tcp::connect(int fd, uint32_t dst_node, uint16_t dst_port, std::function<void(Errno)> k) {
  auto err = std::make_shared<Errno>(Errno::Ok);
  os_.syscall(
      "connect",
      [this, fd, dst_node, dst_port, err](std::function<void()> done) {
        Tcb* t = tcb(fd);
        if (!t || t->user_closed) *err = Errno::BadDescriptor;
        else if (t->state != State::Closed || t->error_set) *err = Errno::IsConn;
        else if (dst_node >= nodes_ || dst_node == node_) *err = Errno::HostUnreach;
        else if (dst_port == 0) *err = Errno::BadPort;
        if (*err != Errno::Ok) return done();
        t->lport = ephemeral();
        t->rnode = dst_node;
        t->rport = dst_port;
        dispatch(*t, Event::Connect);
        output(*t, false, [this, fd, err, done = std::move(done)]() mutable {
          wait(
              chan(fd, kChanConn), [this, fd] { return tcb(fd)->state != State::SynSent; },
              [this, fd, err, done = std::move(done)] {
                Tcb* t = tcb(fd);
                if (t->error_set) *err = t->error;
                done();
              });
        });
      },
      [err, k = std::move(k)] { k(*err); });
}

void Tcp::accept(int fd, std::function<void(Errno, int)> k) {
  auto out = std::make_shared<std::pair<Errno, int>>(Errno::Ok, -1);
  os_.syscall(
      "accept",
      [this, fd, out](std::function<void()> done) {
        Tcb* t = tcb(fd);
        if (!t || t->user_closed) out->first = Errno::BadDescriptor;
        else if (t->state != State::Listen) out->first = Errno::Invalid;
        if (out->first != Errno::Ok) return done();
        wait(
            chan(fd, kChanAccept), [this, fd] { return !tcb(fd)->accept_q.empty() || tcb(fd)->state != State::Listen; },
            [this, fd, out, done = std::move(done)] {
              Tcb* t = tcb(fd);
              if (t->accept_q.empty()) out->first = Errno::Invalid;
              else {
                out->second = t->accept_q.front();
                t->accept_q.pop_front();
              }
              done();
            });
      },
      [out, k = std::move(k)] { k(out->first, out->second); });
}

void Tcp::send(int fd, std::vector<uint8_t> data, std::function<void(Errno)> k) {
  auto err = std::make_shared<Errno>(Errno::Ok);
  auto buf = std::make_shared<std::vector<uint8_t>>(std::move(data));
  os_.syscall(
      "send",
      [this, fd, err, buf](std::function<void()> done) {
        Tcb* t = tcb(fd);
        if (!t || t->user_closed) *err = Errno::BadDescriptor;
        else if (t->error_set) *err = t->error;
        else if (!can_send(t->state)) *err = connected(t->state) ? Errno::Pipe : Errno::NotConn;
        if (*err != Errno::Ok) return done();
        sosend(fd, buf, 0, err, std::move(done));
      },
      [err, k = std::move(k)] { k(*err); });
}

// sosend's loop: wait for space, copy what fits, tcp_output (PRU_SEND), again until all is in
// the send buffer. With sockets.mbuf_accounting SunOS 4.1.4's rules (mbuf_account.h): wait
// while no space is left, or while a write of at least a cluster finds less than a cluster's
// space and the buffer holds a cluster's worth; copy into the mbufs sosend would take, at most
// SEND_CHUNK per call. Without: wait for the low-water mark's space (or all that is left).
void Tcp::sosend(int fd, std::shared_ptr<std::vector<uint8_t>> buf, size_t pos, std::shared_ptr<Errno> err,
                 std::function<void()> done) {
  const size_t rem = buf->size() - pos;
  wait(
      chan(fd, kChanSend),
      [this, fd, rem] {
        const Tcb* t = tcb(fd);
        if (t->error_set || !can_send(t->state)) return true;
        if (c_.streams_snd_flow) return !t->flow_stopped;  // canputnext
        const size_t space = snd_space(*t);
        if (c_.mbuf_accounting)
          return space > 0 && !(rem >= mbuf::kMclbytes && space < mbuf::kMclbytes && t->sndbuf.size() >= mbuf::kMclbytes);
        return space >= rem || space >= c_.tcp_send_lowat;
      },
      [this, fd, buf, pos, rem, err, done = std::move(done)]() mutable {
        Tcb* t = tcb(fd);
        if (t->error_set || !can_send(t->state)) {
          *err = t->error_set ? t->error : Errno::Pipe;
          return done();
        }
        std::vector<MbufAccount::Mbuf> chain;
        uint32_t taken = 0;
        if (c_.mbuf_accounting) chain = MbufAccount::sosend_chain(rem, std::min<uint32_t>(snd_space(*t), mbuf::kSendChunk), taken);
        const size_t n = c_.streams_snd_flow ? std::min<size_t>(maxpsz(), rem)  // strwrite's piece
                         : c_.mbuf_accounting ? taken
                                              : std::min<size_t>(snd_space(*t), rem);
        // the call's own work with its first piece; Solaris's stream head pays only its loop for the rest
        const double instr = (c_.streams_snd_flow && pos > 0 ? c_.stream_piece_instr : c_.sosend_instr + c_.stream_write_instr) +
                             c_.mbuf_steps_instr(chain.size());  // sosend's loop per mbuf
        const uint64_t ps = os_.instr_ps(instr) + os_.copy_ps(n);
        rx_ps_.inc(ps);
        os_.kernel(ps, [this, fd, buf, pos, n, err, chain = std::move(chain), done = std::move(done)]() mutable {
          Tcb* t = tcb(fd);
          if (t->error_set || !can_send(t->state)) {
            *err = t->error_set ? t->error : Errno::Pipe;
            return done();
          }
          if (c_.solaris_output) add_mblks(*t, static_cast<uint32_t>(n));
          t->sndbuf.insert(t->sndbuf.end(), buf->begin() + static_cast<long>(pos), buf->begin() + static_cast<long>(pos + n));
          t->snd_mb.append(chain);
          output(*t, false, [this, fd, buf, pos, n, err, done = std::move(done)]() mutable {
            if (pos + n == buf->size()) return done();
            sosend(fd, buf, pos + n, err, std::move(done));
          });
        });
      });
}

void Tcp::recv(int fd, uint32_t max, std::function<void(Errno, std::vector<uint8_t>)> k) {
  auto out = std::make_shared<std::pair<Errno, std::vector<uint8_t>>>(Errno::Ok, std::vector<uint8_t>{});
  os_.syscall(
      "recv",
      [this, fd, max, out](std::function<void()> done) {
        Tcb* t = tcb(fd);
        if (!t || t->user_closed) out->first = Errno::BadDescriptor;
        else if (max == 0) out->first = Errno::Invalid;
        else if (!connected(t->state) && !t->error_set && t->state != State::SynRcvd) out->first = Errno::NotConn;
        if (out->first != Errno::Ok) return done();
        auto ready = [this, fd] {
          const Tcb* t = tcb(fd);
          return !t->rcvbuf.empty() || !t->co.empty() || t->fin_rcvd || t->error_set;
        };
        auto take = std::make_shared<std::function<void()>>();
        std::weak_ptr<std::function<void()>> self = take;
        *take = [this, fd, max, out, self, ready, done = std::move(done)]() mutable {
          Tcb* t = tcb(fd);
          // Solaris: the read's rwnext reaches tcp_rrw, which puts the co-queued segments
          // through TCP in this call (their data copied out as it is summed); then the rest
          // (or, if they brought no data, the read sleeps again).
          if (!t->co.empty() && t->rcvbuf.size() < max)
            return co_process(fd, true, max, [this, fd, ready, s = self.lock()] { wait(chan(fd, kChanRecv), ready, [s] { (*s)(); }); });
          if (t->rcvbuf.empty()) {  // end of file, or the connection's error
            if (t->error_set && !t->fin_rcvd) out->first = t->error;
            return done();
          }
          const size_t n = std::min<size_t>(max, t->rcvbuf.size());
          // soreceive's loop per mbuf the read takes data from (with BSD's mbufs); the bytes
          // tcp_rrw's copy out already moved are not copied again
          const uint32_t mbufs = c_.mbuf_accounting ? t->rcv_mb.span(n) : 1;
          const size_t moved = std::min(n, t->co_copied);
          t->co_copied -= moved;
          const uint64_t ps = os_.instr_ps(c_.soreceive_instr + c_.mbuf_steps_instr(mbufs)) + os_.copy_ps(n - moved);
          rx_ps_.inc(ps);
          os_.kernel(ps, [this, fd, n, out, done = std::move(done)]() mutable {
            Tcb* t = tcb(fd);
            const size_t m = std::min(n, t->rcvbuf.size());
            out->second.assign(t->rcvbuf.begin(), t->rcvbuf.begin() + static_cast<long>(m));
            t->rcvbuf.erase(t->rcvbuf.begin(), t->rcvbuf.begin() + static_cast<long>(m));
            t->rcv_mb.drop(m);
            if (c_.streams_rcv_flow) streams_drained(*t);
            // PRU_RCVD: tcp_output, which sends a window update if the read opened the window enough
            if (connected(t->state)) return output(*t, false, std::move(done));
            done();
          });
        };
        wait(chan(fd, kChanRecv), ready, [take] { (*take)(); });
      },
      [out, k = std::move(k)] { k(out->first, std::move(out->second)); });
}

bool Tcp::select_open(int fd) const {
  const Tcb* t = tcb(fd);
  return t && !t->user_closed;
}

bool Tcp::select_readable(int fd) const {
  const Tcb* t = tcb(fd);
  return !t->rcvbuf.empty() || !t->co.empty() || t->fin_rcvd || t->error_set || !t->accept_q.empty();
}

void Tcp::close(int fd, std::function<void(Errno)> k) {
  auto err = std::make_shared<Errno>(Errno::Ok);
  os_.syscall(
      "close",
      [this, fd, err](std::function<void()> done) {
        Tcb* t = tcb(fd);
        if (!t || t->user_closed) {
          *err = Errno::BadDescriptor;
          return done();
        }
        t->user_closed = true;
        dispatch(*t, Event::Close);
        if (connected(t->state) || t->state == State::SynRcvd) return output(*t, false, std::move(done));
        done();
      },
      [err, k = std::move(k)] { k(*err); });
}

}  // namespace mbpsim::sockets
