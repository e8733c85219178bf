// A conventional host's TCP (module `host<n>.inet.tcp`), 4.3BSD-derived as in SunOS 4.1.4 (and,
// with other parameters, the Solaris 2.6 of the thesis's Ultra 60s): the stack the thesis's
// TCP10/TCP100/TCP1000 figures run on (6.2.3, 6.2.4, 6.3.3). Segments are byte-exact TCP/IPv4
// frames with real checksums (models/mbp2/inet.h), carried by the host's IP (inet_stack.h).
//
// A connection is one state x event table (`kTable`, tcp.cpp): RFC 793's eleven states against
// the user's calls (connect, listen, close), the segments that arrive (classified by their SYN,
// ACK, FIN and RST flags) and the timers (retransmission and persist, the delayed ACK, 2MSL).
// Each cell is one action that returns the next state; an empty cell is the table's default
// (a segment dropped, with an ACK or a RST where RFC 793 asks for one; a call refused).
//
// What the BSD code does and this does, each a rule of tcp_output or tcp_input (the Solaris
// config swaps in Solaris 2.6's rules where the model has them: the deferred ACK, the window
// in whole segments and the stream head's flow control, the data summed in send()'s copy,
// segments of whole data blocks with tcp_wput_data's PSH; and, as an option the config leaves
// off, the read side's co queue, sockets.tcp_rcv_co; docs/VALIDATION.md names their source):
//   - the send buffer (tcp_sendspace) and receive buffer (tcp_recvspace) of the OS; sosend waits
//     for space (at least its low-water mark, or all of what is left), then copies and calls
//     tcp_output once for what it copied;
//   - sliding window: the peer's advertised window, never shrunk by the receiver; receiver-side
//     silly-window avoidance (a window under a quarter of the buffer and under an MSS is 0) and
//     the window update sent when the user's reads open it enough (sockets.tcp_window_update:
//     SunOS 4.1.4's Tahoe rule, two segments with the buffer empty or 35% of it; or Reno's, two
//     segments or half of it);
//   - Nagle (RFC 896): a segment shorter than the MSS goes only when nothing is outstanding
//     (or TCP_NODELAY is set), when it ends the data or reaches half the largest window seen;
//   - delayed ACK: in-order data is acknowledged by the next tcp_fasttimo tick (every
//     sockets.tcp_delack_ms from boot), unless a segment (data or window update) carries it
//     first; out-of-order data and a duplicate are acknowledged at once. Or, with
//     sockets.tcp_delayed_ack solaris, Solaris's deferred ACK (tcp_rput_data): at once when the
//     bytes since the last ACK reach a limit that grows by an MSS per such ACK up to half the
//     window, or for a short segment after data that is not whole segments; else by the
//     connection's timer (or its next segment, when it has data of its own outstanding);
//   - slow start and congestion avoidance (Jacobson 1988): cwnd starts at
//     sockets.tcp_initial_cwnd (SunOS on its local network: 65535, no slow start; one MSS off
//     it, and after a loss or a quench, since ip_output's ENOBUFS calls tcp_quench) and grows by
//     an MSS per ACK up to ssthresh, then by MSS*MSS/cwnd; a timeout or three duplicate ACKs
//     (fast retransmit, as 4.3BSD-Tahoe) set ssthresh to half the window and cwnd to one MSS;
//   - the retransmission timer: RTO = srtt + 4 rttvar (Jacobson), at least tcp_rto_min_s,
//     doubled per back-off, counted in ticks of the 500 ms slow timer (a timer fires on a tick);
//     after tcp_max_rexmt back-offs the connection is dropped (ETIMEDOUT); the persist timer
//     probes a zero window with one byte;
//   - header prediction (Van Jacobson, 4.3BSD-Reno; sockets.tcp_header_prediction, which SunOS
//     4.1.4's Tahoe tcp_input lacks): an in-order segment in ESTABLISHED that is a pure ACK for
//     new data or pure in-order data costs tcp_predict_instr instead of tcp_input_instr.
// The MSS option is not carried (the codec writes no TCP options): both ends use the MSS they
// would agree on, min(sockets.tcp_mss, MTU - 40).
#pragma once
#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include <systemc>

#include "models/core/calendar.h"
#include "models/core/stats.h"
#include "models/mbp2/inet.h"
#include "models/sockets/mbuf_account.h"

namespace mbpsim::host {
class Os;
class Cpu;
}  // namespace mbpsim::host

namespace mbpsim::sockets {

class InetStack;
struct SocketConfig;
enum class Errno : uint8_t;

namespace tcp {
// RFC 793's states.
enum class State : uint8_t { Closed, Listen, SynSent, SynRcvd, Established, FinWait1, FinWait2, CloseWait, Closing, LastAck, TimeWait };
constexpr size_t kStates = 11;
const char* to_string(State s);
// What happens to a connection.
enum class Event : uint8_t {
  Connect,   // the user's connect() (active open)
  Listen,    // the user's listen() (passive open)
  Close,     // the user's close()
  Syn,       // a segment with SYN and no ACK
  SynAck,    // SYN and ACK
  Ack,       // ACK without SYN, FIN or RST (with or without data)
  Fin,       // ACK and FIN (with or without data)
  Rst,       // RST
  Rexmt,     // the retransmission (or persist) timer
  DelAck,    // the delayed-ACK tick
  TwoMsl,    // the TIME_WAIT timer
};
constexpr size_t kEvents = 11;
const char* to_string(Event e);
constexpr uint8_t kFin = 0x01, kSyn = 0x02, kRst = 0x04, kPsh = 0x08, kAck = 0x10;
}  // namespace tcp

class Tcp final : public sc_core::sc_module {
 public:
  Tcp(sc_core::sc_module_name name, Calendar& cal, InetStack& ip, host::Os& os, host::Cpu& cpu, uint32_t node,
      uint32_t nodes, const SocketConfig& c, Stats& st);
  Tcp(const Tcp&) = delete;
  Tcp& operator=(const Tcp&) = delete;

  // --- the socket calls. Set-up calls (socket, listen, setsockopt) cost nothing: they happen
  // before a measurement. The others are system calls on the host CPU; `k` gets the outcome.
  int socket();                                 // socket(AF_INET, SOCK_STREAM, 0)
  Errno listen(int fd, uint16_t port);          // bind and listen
  Errno set_nodelay(int fd, bool on);           // setsockopt(TCP_NODELAY)
  // connect: sends the SYN and sleeps until the connection is established (or refused: a RST;
  // or timed out).
  void connect(int fd, uint32_t dst_node, uint16_t dst_port, std::function<void(Errno)> k);
  // accept: sleeps until a connection on the listening socket is established; its descriptor.
  void accept(int fd, std::function<void(Errno, int)> k);
  // send: copies all of `data` into the send buffer, sleeping for space as sosend does.
  void send(int fd, std::vector<uint8_t> data, std::function<void(Errno)> k);
  // recv: sleeps until data (or the peer's FIN: an empty result) is there, then copies out up to
  // `max` bytes.
  void recv(int fd, uint32_t max, std::function<void(Errno, std::vector<uint8_t>)> k);
  // (select() is the host's, on its UDP and TCP sockets alike: InetStack::select.)
  // soo_select's test for reading, for InetStack::select: whether `fd` is an open TCP socket of
  // this host, and whether it is readable (data, the peer's FIN or an error; on a listening
  // socket, an established connection to accept).
  bool select_open(int fd) const;
  bool select_readable(int fd) const;
  // close: sends FIN after what is in the send buffer; returns at once (the connection closes
  // in the background, as BSD's close without SO_LINGER).
  void close(int fd, std::function<void(Errno)> k);

  // (For tests and workloads: no cost.)
  tcp::State state(int fd) const;
  size_t readable(int fd) const;   // bytes in the receive buffer
  size_t queued(int fd) const;     // bytes in the send buffer: sent and not acknowledged, and unsent
  uint32_t cwnd(int fd) const;
  uint32_t mss() const { return mss_; }

  // The cost of tcp_input for this segment, checksum included: header prediction decides, and
  // `fast` says what it decided.
  // (`summed` false: without the data's checksum and first touch, which Solaris's co queue folds
  // into the reader's copy out.)
  uint64_t input_ps(const std::vector<uint8_t>& frame, bool& fast, bool summed = true);
  // tcp_input for a TCP segment that IP took, when netisr has spent `input_ps` on it.
  void input(std::vector<uint8_t>&& frame, bool fast);
  // Solaris's co queue (sockets.tcp_rcv_co): whether tcp_rput would queue this segment for
  // the reader instead of processing it (in-order data of at least sockets.tcp_co_min bytes on
  // an established connection, nothing held for reassembly); what queueing it costs; and the
  // queueing, when IP has spent that (a segment no longer eligible then goes through `input`).
  bool co_eligible(const std::vector<uint8_t>& frame) const;
  uint64_t co_enqueue_ps() const;
  void co_enqueue(std::vector<uint8_t>&& frame);

 private:
  struct Tcb;
  using Action = tcp::State (Tcp::*)(Tcb&, const mbp2::Parsed*, const std::vector<uint8_t>*);
  struct Cell {
    Action act = nullptr;
  };
  static const std::array<std::array<Cell, tcp::kEvents>, tcp::kStates> kTable;

  struct Tcb {
    int fd = -1;
    tcp::State state = tcp::State::Closed;
    uint16_t lport = 0, rport = 0;
    uint32_t rnode = 0;
    int listener = -1;          // the listening socket that made it (SYN_RCVD)
    std::deque<int> accept_q;   // a listening socket's established connections
    bool nodelay = false, acknow = false, delack = false, force = false, error_set = false;
    bool user_closed = false, want_output = false;
    Errno error{};
    // send side (RFC 793's names)
    uint32_t iss = 0, snd_una = 0, snd_nxt = 0, snd_max = 0, snd_wl1 = 0, snd_wl2 = 0;
    uint32_t snd_wnd = 0, max_sndwnd = 0, cwnd = 0, ssthresh = 0;
    std::deque<uint8_t> sndbuf;  // bytes from snd_una (SYN and FIN take sequence space, no bytes)
    MbufAccount snd_mb;          // the mbufs holding sndbuf (sockets.mbuf_accounting)
    bool fin_sent = false;
    uint32_t dupacks = 0;
    // receive side
    uint32_t irs = 0, rcv_nxt = 0, rcv_adv = 0;
    std::deque<uint8_t> rcvbuf;
    MbufAccount rcv_mb;  // the mbufs holding rcvbuf
    std::map<uint32_t, std::vector<uint8_t>> reass;  // out-of-order data by sequence
    bool fin_rcvd = false;
    // Solaris's deferred ACK (sockets.tcp_delayed_ack solaris): bytes received since the last
    // ACK sent (tcp_rack_cnt), and the bytes an ACK may now be deferred for (tcp_rack_cur_max)
    uint32_t rack_cnt = 0, rack_cur_max = 0;
    uint64_t delack_gen = 0;  // the connection's deferred-ACK timer (Solaris), by generation
    // Solaris's stream-head flow control (sockets.tcp_rcv_window streams): the window TCP
    // offers (tcp_rwnd), and whether a segment found the stream head full (QWANTW: the reader's
    // drain to the low-water mark back-enables tcp_rsrv)
    uint32_t rwnd = 0;
    bool qwantw = false;
    // Solaris's write-side flow control (sockets.tcp_snd_flow streams): stopped when the unsent
    // bytes reach tcp_xmit_hiwater, on again at tcp_xmit_lowater (tcp_flow_stopped)
    bool flow_stopped = false;
    // Solaris's tcp_wput_data (sockets.tcp_output_rule solaris): where each STREAMS data block of
    // the send buffer ends (sequence numbers, oldest first), and the last segment's length
    std::deque<uint32_t> mblk_ends;
    uint32_t last_sent_len = 0;
    // Solaris's co queue (sockets.tcp_rcv_co): segments waiting for the reader (tcp_co_head),
    // the sequence after the last (tcp_co_rnxt), their data bytes (tcp_co_cnt), whether the
    // reader was woken for them (tcp_co_wakeq_done), the queue's timer (by generation), and the
    // bytes of the receive buffer the reader's copy out has already moved to the user
    std::deque<std::vector<uint8_t>> co;
    uint32_t co_rnxt = 0, co_cnt = 0;
    size_t co_copied = 0;
    bool co_wakeq_done = false, co_timer_on = false;
    uint64_t co_gen = 0;
    // timers
    uint64_t rexmt_gen = 0, twomsl_gen = 0;
    bool rexmt_on = false, persist = false;
    uint32_t rxtshift = 0;
    double srtt_s = 0, rttvar_s = 0;
    bool timing = false;
    uint32_t rtseq = 0;
    uint64_t rtt_start = 0;
  };

  Tcb* tcb(int fd);
  const Tcb* tcb(int fd) const;
  Tcb* lookup(uint16_t lport, uint32_t rnode, uint16_t rport);
  bool port_taken(uint16_t port) const;
  uint16_t ephemeral();
  uint64_t chan(int fd, uint32_t kind) const;
  // Sleeps on `ch` until `ready()` (checked now and at each wakeup), then `then`.
  void wait(uint64_t ch, std::function<bool()> ready, std::function<void()> then);
  void sosend(int fd, std::shared_ptr<std::vector<uint8_t>> buf, size_t pos, std::shared_ptr<Errno> err, std::function<void()> done);
  bool predicted(const mbp2::Parsed& p) const;
  // tcp_input of one segment, then tcp_output if it asks for it, charged at interrupt level
  // (`intr`) or to the calling process; then `k`. With `drain`, a co queue the connection holds
  // goes through TCP first (tcp_co_drain; not for a segment taken off that queue itself).
  void input_at(std::vector<uint8_t>&& frame, bool fast, bool intr, bool drain, std::function<void()> k);
  // The co queue's segments through TCP's input, oldest first: by the reader (`reader`: tcp_rrw,
  // each segment's data copied out with its sum folded in, then tcp_rput_data, charged to the
  // reader's call; it stops once the receive buffer holds `max` bytes) or drained (tcp_co_drain:
  // the checksum and tcp_input at interrupt level); then `k`.
  void co_process(int fd, bool reader, size_t max, std::function<void()> k);
  void co_timer(Tcb& t);  // (re)starts the queue's timer: tcp_co_drain if no reader came
  void rtt_sample(Tcb& t);
  tcp::State enter_time_wait(Tcb& t);
  void dispatch(Tcb& t, tcp::Event e, const mbp2::Parsed* p = nullptr, const std::vector<uint8_t>* f = nullptr);

  // --- the actions (one per cell of kTable)
  tcp::State a_connect(Tcb&, const mbp2::Parsed*, const std::vector<uint8_t>*);
  tcp::State a_listen(Tcb&, const mbp2::Parsed*, const std::vector<uint8_t>*);
  tcp::State a_close_now(Tcb&, const mbp2::Parsed*, const std::vector<uint8_t>*);   // nothing sent yet
  tcp::State a_close_fin(Tcb&, const mbp2::Parsed*, const std::vector<uint8_t>*);   // FIN after the data
  tcp::State a_syn_listen(Tcb&, const mbp2::Parsed*, const std::vector<uint8_t>*);  // a child in SYN_RCVD
  tcp::State a_synack(Tcb&, const mbp2::Parsed*, const std::vector<uint8_t>*);      // SYN_SENT: established
  tcp::State a_synrcvd_ack(Tcb&, const mbp2::Parsed*, const std::vector<uint8_t>*);
  tcp::State a_segment(Tcb&, const mbp2::Parsed*, const std::vector<uint8_t>*);     // ACK/data/FIN processing
  tcp::State a_reset(Tcb&, const mbp2::Parsed*, const std::vector<uint8_t>*);
  tcp::State a_rexmt(Tcb&, const mbp2::Parsed*, const std::vector<uint8_t>*);
  tcp::State a_delack(Tcb&, const mbp2::Parsed*, const std::vector<uint8_t>*);
  tcp::State a_twomsl(Tcb&, const mbp2::Parsed*, const std::vector<uint8_t>*);
  tcp::State a_reack(Tcb&, const mbp2::Parsed*, const std::vector<uint8_t>*);      // a retransmitted SYN|ACK or FIN: ACK again

  // tcp_output: the segments the connection may send now, built and handed to IP one after
  // another, their cost charged at interrupt level (`intr`) or to the calling process; then `k`.
  void output(Tcb& t, bool intr, std::function<void()> k = {});
  struct Seg {
    int fd;  // the connection's (-1: a RST for none)
    std::vector<uint8_t> frame;
    uint64_t ps;      // its CPU time: tcp_output, the checksum, IP, ether_output, the driver
    uint64_t ticket;  // its place in the order tcp_output decided
  };
  void hand_on(std::shared_ptr<std::deque<Seg>> q, uint32_t dst, bool intr, std::function<void()> k);
  uint32_t initial_cwnd() const;           // sockets.tcp_initial_cwnd, at least one segment
  uint32_t snd_space(const Tcb& t) const;  // room in the send buffer
  static uint32_t unsent(const Tcb& t);    // bytes of the send buffer never sent (tcp_unsent)
  uint32_t maxpsz() const;                 // Solaris: the stream head's largest piece of a write
  // Solaris's tcp_wput_data end: the writer's flow stopped at tcp_xmit_hiwater unsent bytes,
  // back on (and the writer woken) at tcp_xmit_lowater (sockets.tcp_snd_flow streams)
  void snd_flow(Tcb& t);
  // Solaris: a write's bytes appended at the send buffer's end, as the stream head's data blocks
  // of at most an MSS; and the most of `len` bytes from send offset `off` a segment takes
  // without splitting a block it does not start in
  void add_mblks(Tcb& t, uint32_t n);
  uint32_t mblk_fit(const Tcb& t, uint32_t off, uint32_t len) const;
  uint32_t rcv_space(const Tcb& t) const;  // room in the receive buffer
  static uint32_t offered(const Tcb& t);   // of the window last advertised, what is still open
  void collapse_window(Tcb& t);
  void send_segment(Tcb& t, uint8_t flags, uint32_t seq, uint32_t len, std::vector<std::function<void()>>& frames,
                    uint64_t& ps, std::vector<uint64_t>& costs);
  void respond_rst(const mbp2::Parsed& p);
  // ip_output of a segment in tcp_output's order; a full interface queue (ENOBUFS) drops it and
  // tcp_quench closes the connection's congestion window to one segment (SunOS 4.1.4).
  void emit(uint64_t ticket, std::vector<uint8_t>&& frame, uint32_t dst, int fd);
  uint16_t rcv_window(const Tcb& t) const;
  void arm_rexmt(Tcb& t);
  void cancel_rexmt(Tcb& t);
  // In-order data of `len` bytes came: acknowledge it now (acknow), or defer (delack).
  void ack_in_order(Tcb& t, uint32_t len);
  // A deferred ACK's timer: the next tcp_fasttimo tick (BSD), or the connection's own (Solaris).
  void schedule_delack(Tcb& t);
  // A segment carries the ACK of everything received: nothing is owed or deferred any more.
  static void ack_sent(Tcb& t);
  // Solaris: the reader took data off the stream head; tcp_rsrv when it drained to the mark.
  void streams_drained(Tcb& t);
  void fasttimo();
  uint64_t rto_ps(const Tcb& t) const;
  void drop(Tcb& t, Errno e);
  void wake_all(Tcb& t);
  void sorwakeup(Tcb& t);  // the reader of `t`, and a process in select()

  Calendar& cal_;
  InetStack& ip_;
  host::Os& os_;
  host::Cpu& cpu_;
  const uint32_t node_, nodes_;
  const SocketConfig& c_;
  const uint32_t mss_;
  const uint32_t recvspace_;     // the receive buffer (sockets.tcp_recvspace, or whole segments)
  const uint32_t rack_abs_max_;  // Solaris: the most bytes an ACK may be deferred for
  std::vector<std::unique_ptr<Tcb>> tcbs_;  // by descriptor
  uint16_t next_ephemeral_ = 1024;
  uint32_t next_iss_;
  bool fasttimo_armed_ = false;
  uint64_t next_ticket_ = 0, next_out_ = 0;  // segments in the order tcp_output decided them
  struct Held {
    std::vector<uint8_t> frame;
    uint32_t dst;
    int fd;
  };
  std::map<uint64_t, Held> held_;
  Counter &segs_out_, &data_segs_out_, &data_bytes_out_, &rexmt_segs_, &acks_out_, &delacks_, &winupd_out_, &rst_out_,
      &segs_in_, &predicted_, &dupacks_in_, &fast_rexmt_, &timeouts_, &ooo_in_, &dup_in_, &persist_probes_, &conns_,
      &drops_, &tx_ps_, &rx_ps_, &input_ps_, &bad_, &quenches_, &co_queued_, &co_read_, &co_drained_;
};

}  // namespace mbpsim::sockets
