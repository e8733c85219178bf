// TCP as a state x event table (tcp.h).
#include "models/sockets/tcp.h"

#include <algorithm>
#include <cmath>

#include "models/core/error.h"
#include "models/core/module_tree.h"
#include "models/host/os.h"
#include "models/sockets/inet_stack.h"

namespace mbpsim::sockets {

using tcp::Event;
using tcp::State;
using namespace tcp;

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

namespace {
// Sequence-number comparisons modulo 2^32 (RFC 793 3.3).
bool seq_lt(uint32_t a, uint32_t b) { return static_cast<int32_t>(a - b) < 0; }
bool seq_le(uint32_t a, uint32_t b) { return static_cast<int32_t>(a - b) <= 0; }
bool seq_gt(uint32_t a, uint32_t b) { return static_cast<int32_t>(a - b) > 0; }
constexpr uint32_t kMaxWin = 65535;  // no window scaling (RFC 1323 is later than both OSs' TCPs)
// Sleep channels of a descriptor, one per thing a call waits for.
enum : uint32_t { kChanConn = 1, kChanAccept = 2, kChanSend = 3, kChanRecv = 4, kChanSelect = 5 };
}  // namespace

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
      // BSD's tcp_iss starts at 1 and steps by TCP_ISSINCR/2 per connection; a node's own start
      // keeps two hosts' sequence spaces apart (deterministic: no clock is read).
      next_iss_(1 + node * 0x01000000u),
      segs_out_(st.counter(stat_name(*this, "segments_sent"), "TCP segments handed to IP (data, ACKs, SYNs, FINs, RSTs)")),
      data_segs_out_(st.counter(stat_name(*this, "data_segments_sent"), "segments sent carrying data (retransmissions included)")),
      data_bytes_out_(st.counter(stat_name(*this, "data_bytes_sent"), "data bytes sent (retransmissions included)", "bytes")),
      rexmt_segs_(st.counter(stat_name(*this, "retransmitted_segments"), "data segments sent again (after a timeout or three duplicate ACKs)")),
      acks_out_(st.counter(stat_name(*this, "pure_acks_sent"), "segments sent with neither data nor SYN/FIN/RST (ACKs and window updates)")),
      delacks_(st.counter(stat_name(*this, "delayed_acks"), "ACKs sent by the delayed-ACK tick (tcp_fasttimo)")),
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
      input_ps_(st.counter(stat_name(*this, "input_ps"), "host CPU time in tcp_input (its checksum included), in netisr", "ps")),
      bad_(st.counter(stat_name(*this, "bad_segments"), "segments dropped by tcp_input: a bad header or checksum, or neither SYN, RST nor ACK")) {}

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

uint32_t Tcp::snd_space(const Tcb& t) const {
  return c_.tcp_sendspace - std::min<uint32_t>(c_.tcp_sendspace, static_cast<uint32_t>(t.sndbuf.size()));
}
uint32_t Tcp::rcv_space(const Tcb& t) const {
  return c_.tcp_recvspace - std::min<uint32_t>(c_.tcp_recvspace, static_cast<uint32_t>(t.rcvbuf.size()));
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
  tcbs_.push_back(std::make_unique<Tcb>());
  tcbs_.back()->fd = static_cast<int>(tcbs_.size() - 1);
  return tcbs_.back()->fd;
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

namespace {
bool can_send(State s) { return s == State::Established || s == State::CloseWait; }
bool connected(State s) { return s != State::Closed && s != State::Listen && s != State::SynSent && s != State::SynRcvd; }
}  // namespace

void Tcp::send(int fd, std::vector<uint8_t> data, std::function<void(Errno)> k) {
  auto err = std::make_shared<Errno>(Errno::Ok);
  auto buf = std::make_shared<std::vector<uint8_t>>(std::move(data));
  os_.syscall(
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

// sosend's loop: wait for space (at least the low-water mark, or all that is left), copy what
// fits, tcp_output (PRU_SEND), again until all is in the send buffer.
void Tcp::sosend(int fd, std::shared_ptr<std::vector<uint8_t>> buf, size_t pos, std::shared_ptr<Errno> err,
                 std::function<void()> done) {
  const size_t rem = buf->size() - pos;
  wait(
      chan(fd, kChanSend),
      [this, fd, rem] {
        const Tcb* t = tcb(fd);
        const size_t space = snd_space(*t);
        return t->error_set || !can_send(t->state) || space >= rem || space >= c_.tcp_send_lowat;
      },
      [this, fd, buf, pos, rem, err, done = std::move(done)]() mutable {
        Tcb* t = tcb(fd);
        if (t->error_set || !can_send(t->state)) {
          *err = t->error_set ? t->error : Errno::Pipe;
          return done();
        }
        const size_t n = std::min<size_t>(snd_space(*t), rem);
        const uint64_t ps = os_.instr_ps(c_.sosend_instr) + os_.copy_ps(n);
        rx_ps_.inc(ps);
        os_.kernel(ps, [this, fd, buf, pos, n, err, done = std::move(done)]() mutable {
          Tcb* t = tcb(fd);
          if (t->error_set || !can_send(t->state)) {
            *err = t->error_set ? t->error : Errno::Pipe;
            return done();
          }
          t->sndbuf.insert(t->sndbuf.end(), buf->begin() + static_cast<long>(pos), buf->begin() + static_cast<long>(pos + n));
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
      [this, fd, max, out](std::function<void()> done) {
        Tcb* t = tcb(fd);
        if (!t || t->user_closed) out->first = Errno::BadDescriptor;
        else if (max == 0) out->first = Errno::Invalid;
        else if (!connected(t->state) && !t->error_set && t->state != State::SynRcvd) out->first = Errno::NotConn;
        if (out->first != Errno::Ok) return done();
        wait(
            chan(fd, kChanRecv),
            [this, fd] {
              const Tcb* t = tcb(fd);
              return !t->rcvbuf.empty() || t->fin_rcvd || t->error_set;
            },
            [this, fd, max, out, done = std::move(done)]() mutable {
              Tcb* t = tcb(fd);
              if (t->rcvbuf.empty()) {  // end of file, or the connection's error
                if (t->error_set && !t->fin_rcvd) out->first = t->error;
                return done();
              }
              const size_t n = std::min<size_t>(max, t->rcvbuf.size());
              const uint64_t ps = os_.instr_ps(c_.soreceive_instr) + os_.copy_ps(n);
              rx_ps_.inc(ps);
              os_.kernel(ps, [this, fd, n, out, done = std::move(done)]() mutable {
                Tcb* t = tcb(fd);
                const size_t m = std::min(n, t->rcvbuf.size());
                out->second.assign(t->rcvbuf.begin(), t->rcvbuf.begin() + static_cast<long>(m));
                t->rcvbuf.erase(t->rcvbuf.begin(), t->rcvbuf.begin() + static_cast<long>(m));
                // PRU_RCVD: tcp_output, which sends a window update if the read opened the window enough
                if (connected(t->state)) return output(*t, false, std::move(done));
                done();
              });
            });
      },
      [out, k = std::move(k)] { k(out->first, std::move(out->second)); });
}

void Tcp::select(std::vector<int> fds, std::function<void(Errno, int)> k) {
  auto out = std::make_shared<std::pair<Errno, int>>(Errno::Ok, -1);
  auto set = std::make_shared<std::vector<int>>(std::move(fds));
  os_.syscall(
      [this, set, out](std::function<void()> done) {
        for (int fd : *set)
          if (const Tcb* t = tcb(fd); !t || t->user_closed) out->first = Errno::BadDescriptor;
        if (set->empty()) out->first = Errno::Invalid;
        if (out->first != Errno::Ok) return done();
        // selscan: each descriptor polled, on every pass (the first and each after a wakeup)
        auto ready = [this, set, out] {
          for (int fd : *set) {
            const Tcb* t = tcb(fd);
            if (!t->rcvbuf.empty() || t->fin_rcvd || t->error_set) {
              out->second = fd;
              return true;
            }
          }
          return false;
        };
        select_pass(set, out, std::move(done));
      },
      [out, k = std::move(k)] { k(out->first, out->second); });
}

// selscan: each descriptor polled, on the first pass and after each wakeup; the first with
// something to read (or end of file, or an error) ends the call.
void Tcp::select_pass(std::shared_ptr<std::vector<int>> set, std::shared_ptr<std::pair<Errno, int>> out, std::function<void()> done) {
  const uint64_t scan = os_.instr_ps(os_.config().select_instr * static_cast<double>(set->size()));
  os_.kernel(scan, [this, set, out, done = std::move(done)]() mutable {
    for (int fd : *set) {
      const Tcb* t = tcb(fd);
      if (!t->rcvbuf.empty() || t->fin_rcvd || t->error_set) {
        out->second = fd;
        return done();
      }
    }
    os_.sleep(select_chan(), [this, set, out, done = std::move(done)]() mutable { select_pass(set, out, std::move(done)); });
  });
}

uint64_t Tcp::select_chan() const { return chan(0, kChanSelect); }

void Tcp::close(int fd, std::function<void(Errno)> k) {
  auto err = std::make_shared<Errno>(Errno::Ok);
  os_.syscall(
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

// ------------------------------------------------------------------ actions

State Tcp::a_connect(Tcb& t, const mbp2::Parsed*, const std::vector<uint8_t>*) {
  t.iss = next_iss_;
  next_iss_ += 64000;  // BSD's TCP_ISSINCR / 2 per connection
  t.snd_una = t.snd_nxt = t.snd_max = t.iss;
  t.cwnd = mss_;
  t.ssthresh = kMaxWin;
  return State::SynSent;  // output sends the SYN
}

State Tcp::a_listen(Tcb&, const mbp2::Parsed*, const std::vector<uint8_t>*) { return State::Listen; }

State Tcp::a_close_now(Tcb& t, const mbp2::Parsed*, const std::vector<uint8_t>*) {
  cancel_rexmt(t);
  t.error_set = true;
  t.error = Errno::NotConn;
  wake_all(t);
  return State::Closed;
}

State Tcp::a_close_fin(Tcb& t, const mbp2::Parsed*, const std::vector<uint8_t>*) {
  // output sends the FIN after the send buffer's data (FIN_WAIT_1, CLOSING and LAST_ACK are the
  // states of a side that has closed and whose FIN is not yet acknowledged)
  return t.state == State::CloseWait ? State::LastAck : State::FinWait1;
}

State Tcp::a_syn_listen(Tcb& l, const mbp2::Parsed* p, const std::vector<uint8_t>*) {
  const int fd = socket();
  Tcb& t = *tcbs_[static_cast<size_t>(fd)];
  t.listener = l.fd;
  t.lport = l.lport;
  t.rnode = p->d.src_node;
  t.rport = p->d.src_port;
  t.irs = p->d.seq;
  t.rcv_nxt = t.rcv_adv = p->d.seq + 1;
  t.iss = next_iss_;
  next_iss_ += 64000;
  t.snd_una = t.snd_nxt = t.snd_max = t.iss;
  t.snd_wnd = t.max_sndwnd = p->d.window;
  t.snd_wl1 = p->d.seq;
  t.cwnd = mss_;
  t.ssthresh = kMaxWin;
  t.state = State::SynRcvd;
  output(t, true);  // the SYN|ACK
  return State::Listen;
}

State Tcp::a_synack(Tcb& t, const mbp2::Parsed* p, const std::vector<uint8_t>*) {
  if (!(p->d.flags & kAck) || p->d.ack != t.iss + 1) {  // not an answer to our SYN
    respond_rst(*p);
    return t.state;
  }
  t.irs = p->d.seq;
  t.rcv_nxt = t.rcv_adv = p->d.seq + 1;
  t.snd_una = p->d.ack;
  if (seq_lt(t.snd_nxt, t.snd_una)) t.snd_nxt = t.snd_una;
  t.snd_wnd = t.max_sndwnd = p->d.window;
  t.snd_wl1 = p->d.seq;
  t.snd_wl2 = p->d.ack;
  cancel_rexmt(t);
  if (t.timing) rtt_sample(t);
  t.acknow = true;
  conns_.inc();
  os_.wakeup(chan(t.fd, kChanConn));
  return State::Established;
}

State Tcp::a_synrcvd_ack(Tcb& t, const mbp2::Parsed* p, const std::vector<uint8_t>* f) {
  if (p->d.ack != t.iss + 1) {
    respond_rst(*p);
    return t.state;
  }
  t.snd_una = p->d.ack;
  cancel_rexmt(t);
  if (t.timing) rtt_sample(t);
  conns_.inc();
  if (Tcb* l = tcb(t.listener); l && l->state == State::Listen) {
    l->accept_q.push_back(t.fd);
    os_.wakeup(chan(l->fd, kChanAccept));
  }
  t.state = State::Established;
  return a_segment(t, p, f);  // its data and FIN, if any
}

State Tcp::a_reack(Tcb& t, const mbp2::Parsed*, const std::vector<uint8_t>*) {
  if (t.state == State::SynRcvd) t.snd_nxt = t.iss;  // the peer's SYN again: our SYN|ACK again
  t.acknow = true;
  return t.state;
}

State Tcp::a_reset(Tcb& t, const mbp2::Parsed*, const std::vector<uint8_t>*) {
  drop(t, t.state == State::SynSent ? Errno::ConnRefused : Errno::ConnReset);
  return State::Closed;
}

State Tcp::a_rexmt(Tcb& t, const mbp2::Parsed*, const std::vector<uint8_t>*) {
  if (t.persist) {  // tcp_timers' TCPT_PERSIST: a one-byte probe of the zero window, then again later
    persist_probes_.inc();
    t.persist = false;
    t.force = true;
    ++t.rxtshift;
    return t.state;
  }
  if (++t.rxtshift > c_.tcp_max_rexmt) {
    drop(t, Errno::TimedOut);
    return State::Closed;
  }
  timeouts_.inc();
  collapse_window(t);
  t.dupacks = 0;
  if (t.state == State::SynRcvd || t.state == State::SynSent) t.snd_nxt = t.iss;
  return t.state;
}

State Tcp::a_delack(Tcb& t, const mbp2::Parsed*, const std::vector<uint8_t>*) {
  if (!t.delack) return t.state;
  t.delack = false;
  t.acknow = true;
  delacks_.inc();
  return t.state;
}

State Tcp::a_twomsl(Tcb& t, const mbp2::Parsed*, const std::vector<uint8_t>*) {
  cancel_rexmt(t);
  return State::Closed;
}

// tcp_input's processing of an ACK-bearing segment in a synchronized state: the ACK, the window,
// the data, the FIN, then the state's next step.
State Tcp::a_segment(Tcb& t, const mbp2::Parsed* p, const std::vector<uint8_t>* f) {
  const mbp2::Datagram& d = p->d;
  uint32_t seq = d.seq;
  const uint8_t* data = f->data() + p->payload_off;
  uint32_t len = p->payload_len;
  bool fin = d.flags & kFin;
  State next = t.state;

  // Trim what lies below rcv_nxt (a duplicate) and beyond the receive window.
  if (seq_lt(seq, t.rcv_nxt)) {
    const uint32_t dup = t.rcv_nxt - seq;
    if (dup > len || (dup == len && !fin) || (dup == len && fin && t.fin_rcvd)) {
      if (len > 0 || fin) {
        dup_in_.inc();
        t.acknow = true;
      }
      len = 0;
      fin = false;
      seq = t.rcv_nxt;
    } else {
      data += dup;
      len -= dup;
      seq = t.rcv_nxt;
      t.acknow = true;
    }
  }
  const uint32_t wnd_end = t.rcv_nxt + std::max(rcv_space(t), offered(t));  // what we advertised stays open
  if (seq_gt(seq + len, wnd_end)) {
    const uint32_t over = seq + len - wnd_end;
    len = over >= len ? 0 : len - over;
    fin = false;
    t.acknow = true;
  }

  // The ACK.
  const uint32_t ack = d.ack;
  if (seq_le(ack, t.snd_una)) {
    if (len == 0 && !fin && d.window == t.snd_wnd && ack == t.snd_una && t.snd_max != t.snd_una) {
      dupacks_in_.inc();
      if (++t.dupacks == c_.tcp_dupack_thresh) {  // fast retransmit (4.3BSD-Tahoe): as a timeout, without waiting
        fast_rexmt_.inc();
        cancel_rexmt(t);
        collapse_window(t);
        t.want_output = true;
      }
    } else {
      t.dupacks = 0;
    }
  } else if (seq_gt(ack, t.snd_max)) {  // acknowledges what was never sent: ACK and drop
    t.acknow = true;
    return t.state;
  } else {
    uint32_t acked = ack - t.snd_una;
    t.dupacks = 0;
    if (t.timing && seq_gt(ack, t.rtseq)) rtt_sample(t);
    t.rxtshift = 0;
    if (ack == t.snd_max) {
      cancel_rexmt(t);
      t.want_output = true;
    } else if (!t.persist) {
      cancel_rexmt(t);
      arm_rexmt(t);
    }
    // slow start below ssthresh, congestion avoidance above
    const uint32_t incr = t.cwnd > t.ssthresh ? std::max<uint32_t>(1, mss_ * mss_ / t.cwnd) : mss_;
    t.cwnd = std::min(t.cwnd + incr, kMaxWin);
    bool fin_acked = false;
    if (acked > t.sndbuf.size()) {
      t.sndbuf.clear();
      fin_acked = t.fin_sent;
    } else {
      t.sndbuf.erase(t.sndbuf.begin(), t.sndbuf.begin() + acked);
    }
    os_.wakeup(chan(t.fd, kChanSend));  // sowwakeup
    t.snd_una = ack;
    if (seq_lt(t.snd_nxt, t.snd_una)) t.snd_nxt = t.snd_una;
    if (fin_acked) {
      if (next == State::FinWait1) next = State::FinWait2;
      else if (next == State::Closing) next = enter_time_wait(t);
      else if (next == State::LastAck) {
        cancel_rexmt(t);
        return State::Closed;
      }
    }
  }

  // The peer's window (RFC 793's SND.WL1/SND.WL2 rule: only a newer segment updates it).
  if (seq_lt(t.snd_wl1, d.seq) || (t.snd_wl1 == d.seq && (seq_lt(t.snd_wl2, ack) || (t.snd_wl2 == ack && d.window > t.snd_wnd)))) {
    if (d.window != t.snd_wnd) t.want_output = true;
    t.snd_wnd = d.window;
    t.snd_wl1 = d.seq;
    t.snd_wl2 = ack;
    t.max_sndwnd = std::max(t.max_sndwnd, t.snd_wnd);
  }

  // The data: in order onto the receive buffer (ACK delayed); ahead of rcv_nxt held for
  // reassembly and a gap ACKed at once.
  const bool receiving = next == State::Established || next == State::FinWait1 || next == State::FinWait2;
  if (len > 0 && receiving) {
    if (seq == t.rcv_nxt && t.reass.empty()) {
      t.rcvbuf.insert(t.rcvbuf.end(), data, data + len);
      t.rcv_nxt += len;
      t.delack = true;
      sorwakeup(t);
    } else {
      if (seq != t.rcv_nxt) ooo_in_.inc();
      auto [it, fresh] = t.reass.emplace(seq, std::vector<uint8_t>(data, data + len));
      if (!fresh && it->second.size() < len) it->second.assign(data, data + len);
      t.acknow = true;
      bool moved = false;
      while (!t.reass.empty() && seq_le(t.reass.begin()->first, t.rcv_nxt)) {
        auto b = t.reass.begin();
        const uint32_t skip = t.rcv_nxt - b->first;
        if (skip < b->second.size()) {
          t.rcvbuf.insert(t.rcvbuf.end(), b->second.begin() + skip, b->second.end());
          t.rcv_nxt += static_cast<uint32_t>(b->second.size()) - skip;
          moved = true;
        }
        t.reass.erase(b);
      }
      if (moved) sorwakeup(t);
    }
  }

  // The FIN, once everything before it is in.
  if (fin && receiving && !t.fin_rcvd && seq + len == t.rcv_nxt) {
    t.fin_rcvd = true;
    ++t.rcv_nxt;
    t.acknow = true;
    sorwakeup(t);
    if (next == State::Established) next = State::CloseWait;
    else if (next == State::FinWait1) next = State::Closing;
    else if (next == State::FinWait2) next = enter_time_wait(t);
  } else if (fin && t.state == State::TimeWait) {
    t.acknow = true;
  }
  if (t.delack) schedule_delack();
  return next;
}

State Tcp::enter_time_wait(Tcb& t) {
  cancel_rexmt(t);
  const uint64_t gen = ++t.twomsl_gen;
  const int fd = t.fd;
  cal_.at(cal_.now_ps() + static_cast<uint64_t>(std::llround(2 * c_.tcp_msl_s * 1e12)), [this, fd, gen] {
    Tcb* t = tcb(fd);
    if (t && t->twomsl_gen == gen) dispatch(*t, Event::TwoMsl);
  });
  return State::TimeWait;
}

// ------------------------------------------------------------------ input

uint64_t Tcp::input_ps(const std::vector<uint8_t>& frame, bool& fast) {
  mbp2::Parsed p;
  const uint64_t ck = ip_.cksum_ps(frame.size() > 34 ? frame.size() - 34 : 0);
  fast = mbp2::parse_inet(frame, p, false) == mbp2::InetError::None && predicted(p);
  const uint64_t ps = os_.instr_ps(fast ? c_.tcp_predict_instr : c_.tcp_input_instr) + ck;
  input_ps_.inc(ps);
  return ps;
}

// Van Jacobson's header prediction: the next expected segment of an established connection,
// with nothing but ACK (and PSH) set and the window unchanged, that is either a pure ACK for
// new data or pure in-order data that fits.
bool Tcp::predicted(const mbp2::Parsed& p) const {
  const Tcb* t = const_cast<Tcp*>(this)->lookup(p.d.dst_port, p.d.src_node, p.d.src_port);
  if (!t || t->state != State::Established) return false;
  const mbp2::Datagram& d = p.d;
  if ((d.flags & (kSyn | kFin | kRst)) || !(d.flags & kAck) || d.seq != t->rcv_nxt || d.window != t->snd_wnd ||
      t->snd_nxt != t->snd_max)
    return false;
  if (p.payload_len == 0) return seq_gt(d.ack, t->snd_una) && seq_le(d.ack, t->snd_max) && t->cwnd >= t->snd_wnd;
  return d.ack == t->snd_una && t->reass.empty() && t->rcvbuf.size() + p.payload_len <= c_.tcp_recvspace;
}

void Tcp::input(std::vector<uint8_t>&& frame, bool fast) {
  mbp2::Parsed p;
  if (mbp2::parse_inet(frame, p) != mbp2::InetError::None || p.d.proto != mbp2::kIpProtoTcp || p.d.dst_node != node_) {
    bad_.inc();
    return;
  }
  segs_in_.inc();
  if (fast) predicted_.inc();
  const uint8_t fl = p.d.flags;
  Event e;
  if (fl & kRst) e = Event::Rst;
  else if ((fl & kSyn) && (fl & kAck)) e = Event::SynAck;
  else if (fl & kSyn) e = Event::Syn;
  else if (!(fl & kAck)) {
    bad_.inc();  // a segment without ACK is only ever a SYN or a RST
    return;
  } else if (fl & kFin) e = Event::Fin;
  else e = Event::Ack;
  Tcb* t = lookup(p.d.dst_port, p.d.src_node, p.d.src_port);
  if (!t || (t->state == State::Listen && e != Event::Syn)) {
    if (e != Event::Rst) respond_rst(p);
    return;
  }
  dispatch(*t, e, &p, &frame);
  if (t->want_output || t->acknow) output(*t, true);
}

// ------------------------------------------------------------------ output

uint16_t Tcp::rcv_window(const Tcb& t) const {
  uint32_t win = rcv_space(t);
  if (win < c_.tcp_recvspace / 4 && win < mss_) win = 0;  // receiver silly-window avoidance
  if (seq_lt(t.rcv_nxt + win, t.rcv_adv)) win = t.rcv_adv - t.rcv_nxt;  // never shrink the window offered
  return static_cast<uint16_t>(std::min(win, kMaxWin));
}

void Tcp::output(Tcb& t, bool intr, std::function<void()> k) {
  t.want_output = false;
  auto segs = std::make_shared<std::deque<Seg>>();
  const uint32_t cc = static_cast<uint32_t>(t.sndbuf.size());
  for (;;) {
    const bool syn = (t.state == State::SynSent || t.state == State::SynRcvd) && t.snd_nxt == t.iss;
    const bool sync = connected(t.state);
    uint32_t off = t.snd_nxt - t.snd_una;
    uint32_t win = std::min(t.snd_wnd, t.cwnd);
    if (t.force && win == 0) win = 1;
    int64_t avail = sync ? static_cast<int64_t>(std::min(cc, win)) - off : 0;
    uint32_t len = avail > 0 ? static_cast<uint32_t>(avail) : 0;
    bool sendalot = false;
    if (len > mss_) {
      len = mss_;
      sendalot = true;
    }
    const bool fin_state = t.state == State::FinWait1 || t.state == State::Closing || t.state == State::LastAck;
    const bool fin = fin_state && off + len == cc;
    bool go = syn || t.acknow || fin;
    if (len > 0) {
      const bool idle = t.snd_max == t.snd_una;
      if (len == mss_) go = true;
      else if ((idle || t.nodelay) && off + len >= cc) go = true;  // Nagle's rule and TCP_NODELAY
      else if (t.force) go = true;
      else if (t.max_sndwnd > 0 && len >= t.max_sndwnd / 2) go = true;
      else if (seq_lt(t.snd_nxt, t.snd_max)) go = true;  // a retransmission
    }
    bool winupd = false;
    if (sync && !go) {  // a window update, when the user's reads opened it enough
      const int64_t adv = static_cast<int64_t>(std::min(kMaxWin, rcv_space(t))) - static_cast<int64_t>(offered(t));
      if (adv >= 2 * static_cast<int64_t>(mss_) || 2 * adv >= static_cast<int64_t>(c_.tcp_recvspace)) go = winupd = true;
    }
    if (!go) {
      // tcp_setpersist: data waits, nothing is outstanding and the window is closed
      if (sync && cc > 0 && !t.rexmt_on) {
        t.persist = true;
        arm_rexmt(t);
      }
      break;
    }
    // Build the segment.
    uint8_t flags = syn ? kSyn : 0;
    if (t.state != State::SynSent) flags |= kAck;
    if (fin) flags |= kFin;
    if (len > 0 && off + len == cc) flags |= kPsh;
    const uint32_t seq = t.snd_nxt;
    mbp2::Datagram d;
    d.proto = mbp2::kIpProtoTcp;
    d.src_node = node_;
    d.dst_node = t.rnode;
    d.src_port = t.lport;
    d.dst_port = t.rport;
    d.seq = seq;
    d.ack = (flags & kAck) ? t.rcv_nxt : 0;
    d.flags = flags;
    d.window = rcv_window(t);
    d.ip_id = ip_.next_ip_id();
    // (off may pass the buffer's end when the FIN or a SYN took sequence space; len is 0 then)
    std::vector<uint8_t> data;
    if (len > 0) data.assign(t.sndbuf.begin() + off, t.sndbuf.begin() + off + len);
    std::vector<uint8_t> frame = mbp2::build_inet(d, data.data(), len);
    const uint64_t ps = os_.instr_ps(c_.tcp_output_instr) + ip_.cksum_ps(mbp2::kTcpHeader + len) + ip_.frame_out_ps(frame.size());
    // Counters, and the send state advanced as tcp_output does when it hands the segment on.
    segs_out_.inc();
    if (len > 0) {
      data_segs_out_.inc();
      data_bytes_out_.inc(len);
      if (seq_lt(seq, t.snd_max)) rexmt_segs_.inc();
    } else if (!syn && !fin) {
      acks_out_.inc();
      if (winupd) winupd_out_.inc();
    }
    if (t.force) {
      t.force = false;
      sendalot = false;
    }
    t.snd_nxt += len + (syn ? 1 : 0) + (fin ? 1 : 0);
    if (fin) t.fin_sent = true;
    if (seq_gt(t.snd_nxt, t.snd_max)) {
      t.snd_max = t.snd_nxt;
      if (!t.timing && (len > 0 || syn)) {
        t.timing = true;
        t.rtseq = seq;
        t.rtt_start = cal_.now_ps();
      }
    }
    if ((!t.rexmt_on || t.persist) && t.snd_nxt != t.snd_una) {  // something outstanding: the retransmission timer
      if (t.persist) t.rxtshift = 0;
      cancel_rexmt(t);
      arm_rexmt(t);
    }
    if (seq_gt(t.rcv_nxt + d.window, t.rcv_adv)) t.rcv_adv = t.rcv_nxt + d.window;
    t.acknow = false;
    t.delack = false;
    segs->push_back({std::move(frame), ps, next_ticket_++});
    if (!sendalot) break;
  }
  hand_on(segs, t.rnode, intr, std::move(k));
}

// The segments tcp_output built, handed to IP one after another, each after its CPU time (at
// interrupt level or in the calling process); then `k`.
void Tcp::hand_on(std::shared_ptr<std::deque<Seg>> q, uint32_t dst, bool intr, std::function<void()> k) {
  if (q->empty()) {
    if (k) k();
    return;
  }
  const uint64_t ps = q->front().ps;
  tx_ps_.inc(ps);
  auto next = [this, q, dst, intr, k = std::move(k)]() mutable {
    emit(q->front().ticket, std::move(q->front().frame), dst);
    q->pop_front();
    hand_on(q, dst, intr, std::move(k));
  };
  if (intr) cpu_.interrupt(ps, std::move(next));
  else os_.kernel(ps, std::move(next));
}

void Tcp::respond_rst(const mbp2::Parsed& p) {
  // RFC 793: a RST for a segment that belongs to no connection; its sequence is the segment's
  // ACK if it had one, otherwise zero with an ACK of what the segment occupied.
  mbp2::Datagram d;
  d.proto = mbp2::kIpProtoTcp;
  d.src_node = node_;
  d.dst_node = p.d.src_node;
  d.src_port = p.d.dst_port;
  d.dst_port = p.d.src_port;
  if (p.d.flags & kAck) {
    d.seq = p.d.ack;
    d.flags = kRst;
  } else {
    d.seq = 0;
    d.ack = p.d.seq + p.payload_len + ((p.d.flags & kSyn) ? 1 : 0) + ((p.d.flags & kFin) ? 1 : 0);
    d.flags = kRst | kAck;
  }
  d.window = 0;
  d.ip_id = ip_.next_ip_id();
  std::vector<uint8_t> frame = mbp2::build_inet(d, nullptr, 0);
  const uint64_t ps = os_.instr_ps(c_.tcp_output_instr) + ip_.cksum_ps(mbp2::kTcpHeader) + ip_.frame_out_ps(frame.size());
  rst_out_.inc();
  segs_out_.inc();
  tx_ps_.inc(ps);
  const uint32_t dst = d.dst_node;
  const uint64_t ticket = next_ticket_++;
  cpu_.interrupt(ps, [this, ticket, f = std::move(frame), dst]() mutable { emit(ticket, std::move(f), dst); });
}

void Tcp::emit(uint64_t ticket, std::vector<uint8_t>&& frame, uint32_t dst) {
  // tcp_output decides and queues a segment in one critical section (splnet), so segments reach
  // the interface in the order they were decided even when a call's output and an interrupt's
  // finish their CPU time in the other order: a frame waits for those decided before it.
  held_.emplace(ticket, std::make_pair(std::move(frame), dst));
  while (!held_.empty() && held_.begin()->first == next_out_) {
    ip_.transmit(std::move(held_.begin()->second.first), held_.begin()->second.second);
    held_.erase(held_.begin());
    ++next_out_;
  }
}

// ------------------------------------------------------------------ timers

void Tcp::rtt_sample(Tcb& t) {
  const double r = static_cast<double>(cal_.now_ps() - t.rtt_start) / 1e12;
  if (t.srtt_s == 0) {
    t.srtt_s = r;
    t.rttvar_s = r / 2;
  } else {
    const double delta = r - t.srtt_s;
    t.srtt_s += delta / 8;
    t.rttvar_s += (std::fabs(delta) - t.rttvar_s) / 4;
  }
  t.timing = false;
}

uint64_t Tcp::rto_ps(const Tcb& t) const {
  double rto = t.srtt_s == 0 ? c_.tcp_rto_initial_s : std::max(c_.tcp_rto_min_s, t.srtt_s + 4 * t.rttvar_s);
  if (t.persist) rto = std::max(rto, c_.tcp_persist_min_s);
  rto = std::min(rto * std::pow(2.0, std::min<uint32_t>(t.rxtshift, 30)), c_.tcp_rto_max_s);
  return static_cast<uint64_t>(std::llround(rto * 1e12));
}

void Tcp::arm_rexmt(Tcb& t) {
  // A timer of n slow ticks fires on the n-th tick of tcp_slowtimo after now.
  const uint64_t tick = static_cast<uint64_t>(std::llround(c_.tcp_slowtimo_ms * 1e9));
  const uint64_t ticks = std::max<uint64_t>(1, (rto_ps(t) + tick - 1) / tick);
  const uint64_t now = cal_.now_ps();
  const uint64_t when = now / tick * tick + ticks * tick;
  t.rexmt_on = true;
  const uint64_t gen = ++t.rexmt_gen;
  const int fd = t.fd;
  cal_.at(when, [this, fd, gen] {
    Tcb* t = tcb(fd);
    if (!t || t->rexmt_gen != gen || !t->rexmt_on) return;
    t->rexmt_on = false;
    // softclock: a software interrupt, then the timer's tcp_output at interrupt level
    os_.softint(0, [this, fd] {
      Tcb* t = tcb(fd);
      dispatch(*t, Event::Rexmt);
      if (connected(t->state) || t->state == State::SynSent || t->state == State::SynRcvd) output(*t, true);
    });
  });
}

void Tcp::cancel_rexmt(Tcb& t) {
  t.rexmt_on = false;
  t.persist = false;
  ++t.rexmt_gen;
}

void Tcp::schedule_delack() {
  if (fasttimo_armed_) return;
  fasttimo_armed_ = true;
  // tcp_fasttimo runs every tcp_delack_ms from boot: the next tick after now
  const uint64_t tick = static_cast<uint64_t>(std::llround(c_.tcp_delack_ms * 1e9));
  const uint64_t when = (cal_.now_ps() / tick + 1) * tick;
  cal_.at(when, [this] { fasttimo(); });
}

void Tcp::fasttimo() {
  fasttimo_armed_ = false;
  bool any = false;
  for (auto& t : tcbs_)
    if (t && t->delack) any = true;
  if (!any) return;
  os_.softint(0, [this] {
    for (auto& t : tcbs_) {
      if (!t || !t->delack) continue;
      dispatch(*t, Event::DelAck);
      if (t->acknow) output(*t, true);
    }
  });
}

void Tcp::drop(Tcb& t, Errno e) {
  drops_.inc();
  cancel_rexmt(t);
  t.error_set = true;
  t.error = e;
  t.sndbuf.clear();
  wake_all(t);
}

void Tcp::wake_all(Tcb& t) {
  for (uint32_t kind : {kChanConn, kChanAccept, kChanSend, kChanRecv}) os_.wakeup(chan(t.fd, kind));
  os_.wakeup(select_chan());
}

void Tcp::sorwakeup(Tcb& t) {
  os_.wakeup(chan(t.fd, kChanRecv));
  os_.wakeup(select_chan());  // selwakeup
}

}  // namespace mbpsim::sockets
