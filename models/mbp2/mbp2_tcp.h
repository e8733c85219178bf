// TCP on one MBP2 card's PME (mbp2_tcp.cpp; RFC 793, 1122, 5681, 6298, without SACK and
// without the handshake: the OS sets a connection up on both nodes with Mbp2Nic::connect_tcp).
// The card owns one (Mbp2Nic::tcp_); the IP steering gives it each segment's ACK and data, the
// PGE each segment a task sends. Its connections are indexed as the card's connection table in
// EM (the table holds the next sequence to send and the one expected; this class keeps what
// the firmware keeps beside it: queues, windows, timers).
#pragma once
#include <cstdint>
#include <deque>
#include <map>

#include "models/mbp2/inet.h"

namespace mbpsim::mbp2 {

class Mbp2Nic;

class PmeTcp {
 public:
  explicit PmeTcp(Mbp2Nic& nic) : nic_(nic) {}
  PmeTcp(const PmeTcp&) = delete;
  PmeTcp& operator=(const PmeTcp&) = delete;
  // Connection `conn` of the table, set up by the OS for `ptask` with `peer`: sending from
  // `iss`, the receive ring's geometry (`rx_slots` of `rx_slot_bytes`) as the task laid it out.
  void open(uint32_t conn, uint32_t ptask, uint32_t peer, uint16_t lport, uint16_t rport, uint32_t iss, uint32_t rx_slots,
            uint32_t rx_slot_bytes);
  // The PGE read the connection's ring header (what the advertised window is counted from).
  void ring_read(uint32_t conn, uint32_t slots, uint32_t slot_bytes, uint32_t tail);
  // A segment the PGE fetched (its image held until acknowledged), numbered: queued and sent
  // when the windows allow.
  void queue(uint32_t conn, uint32_t seq, uint32_t len, int32_t img);
  // A segment from the peer (its header `d`, `len` payload bytes): the sender's half, its ACK
  // and window. Part of the steering handler's work.
  void ack_in(uint32_t conn, const Datagram& d, uint32_t len);
  // The receiver's half after a segment with data: `in_order` ones delivered are acknowledged
  // every mbp2.tcp_ack_every (or after mbp2.tcp_delack_us), anything else at once.
  void received(uint32_t conn, bool delivered);
  // Bytes sent or queued and not yet acknowledged (0: none, or no such connection).
  uint32_t unacked(uint32_t conn) const;
  // EM lost its contents: segments and timers are gone (their images too); what the user sends
  // next is numbered on from where the table says.
  void power_off();

 private:
  // One connection's state in the PME's firmware (EM). Sending: the segments the PGE fetched,
  // oldest first, each keeping its image in EM until acknowledged ([0, sent) are in flight, the
  // rest wait for the window); the oldest unacknowledged sequence, the peer's window,
  // congestion control (RFC 5681) and the retransmission timer (RFC 6298). Receiving: the
  // ring's geometry and the tail the PGE last read (the window it advertises), and the
  // in-order segments not yet acknowledged (delayed ACKs).
  struct Seg {
    uint32_t seq = 0, len = 0;
    int32_t img = -1;
    uint64_t sent_ps = 0;  // its last transmission
    uint32_t tx = 0;       // transmissions so far (an RTT sample only from one sent once: Karn)
    uint32_t pass = 0;     // the pass that last picked it (a go-back starts a new one)
  };
  struct Conn {
    uint32_t ptask = 0, peer = 0;
    uint16_t lport = 0, rport = 0;
    std::deque<Seg> q;
    size_t sent = 0;
    uint32_t una = 0, wnd = 0xffff, cwnd = 0, ssthresh = 0xffff;
    uint32_t dupacks = 0, recover = 0, pass = 0;
    bool recovering = false;
    uint64_t srtt = 0, rttvar = 0, rto = 0;
    bool rtt_known = false;
    uint32_t backoffs = 0;
    uint64_t timer = 0;  // the armed retransmission or persist timer's serial (0: none)
    uint32_t rx_slots = 0, rx_slot_bytes = 0, rx_tail = 0;
    uint32_t unacked = 0;  // in-order segments received since the last ACK sent
    uint64_t delack = 0;   // the armed delayed-ACK timer's serial (0: none)
    // The sequence after the last segment picked for sending (una when none is).
    uint32_t sent_end() const { return sent ? q[sent - 1].seq + q[sent - 1].len : una; }
  };
  // The receiver keeps no segment beyond a gap, so a loss is recovered by going back to the
  // oldest unacknowledged segment and sending all from there (on three duplicate ACKs or a
  // timeout).
  uint32_t mss() const;
  // Sends the queued segments the peer's and the congestion window allow, in one PME handler;
  // arms the persist timer when the peer's window is shut.
  void output(uint32_t conn);
  void send_ack(uint32_t conn);
  void arm(uint32_t conn);
  void timeout(uint32_t conn);
  void abort(uint32_t conn);
  uint16_t window(uint32_t conn) const;
  // The headers of a segment of the connection (PSH|ACK; the caller sets what differs).
  Datagram datagram(uint32_t conn, uint32_t seq, uint32_t ack, uint16_t window);
  uint32_t rcv_nxt(uint32_t conn) const;
  // The table's word `off` of connection `conn` (in EM, through the KLI).
  uint32_t table_word(uint32_t conn, uint32_t off) const;

  Mbp2Nic& nic_;
  std::map<uint32_t, Conn> conns_;  // by connection (table index)
};

}  // namespace mbpsim::mbp2
