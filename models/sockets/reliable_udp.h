// The thesis's UDP figures (6.2.3, 6.2.4, 6.2.6) carry MBCF/Ether's own arrival- and
// order-guaranteeing protocol on top of UDP/IP "in terms of user-level routines": this is that
// library, one per host, over one UDP socket. It reuses Go-back-N's state machine
// (models/mbcf/gbn.h) as it is; only its actions differ: a packet goes out through sendto, a
// timer is a user-level interval timer that fires on the kernel clock's tick (host.clock_hz)
// and is delivered as a signal (host::Os::invoke), and the protocol bytes travel in a 4-byte
// header before the message (CTRL_P, END_P, RECV_P, zero).
//
// The program calls `send`, `recv` and `flush`; the library reads the socket for the peer's
// acknowledgements only when it must (the window is full, or `flush` waits for the last ones),
// and a packet that asks for an acknowledgement is answered at once by an acknowledgement-only
// packet. Each routine costs sockets.rudp_instr instructions per packet on the host CPU.
#pragma once
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <vector>

#include "models/core/calendar.h"
#include "models/core/stats.h"
#include "models/host/os.h"
#include "models/mbcf/gbn.h"
#include "models/sockets/inet_stack.h"

namespace mbpsim::sockets {

class ReliableUdp final : public mbcf::gbn::Actions {
 public:
  static constexpr uint32_t kHeader = 4;
  // The library of host `node` (of `nodes`), on a socket it binds to `port` (every host's
  // library uses the same port). Its counters are registered under the stack's name (rudp_*).
  ReliableUdp(Calendar& cal, InetStack& stack, host::Os& os, uint32_t node, uint32_t nodes, uint16_t port,
              const mbcf::gbn::Params& p, double rudp_instr, Stats& st);
  // Sends a message to host `dst` in order and reliably; `k` when the call returns (after
  // waiting for room in the window, reading acknowledgements).
  void send(uint32_t dst, std::vector<uint8_t> data, std::function<void()> k);
  // The next message that arrived in order (from any host), as it was sent.
  void recv(std::function<void(uint32_t src, std::vector<uint8_t> data)> k);
  // Returns when every message sent has been acknowledged.
  void flush(std::function<void()> k);
  const mbcf::gbn::Endpoint& endpoint() const { return *ep_; }
  // Errors the socket calls returned (for a workload's check): the first, and how many.
  Errno first_error() const { return first_error_; }

  // Go-back-N's actions
  void send(uint32_t peer, const mbcf::Packet& p) override;
  void set_timer(mbcf::gbn::Timer t, uint32_t peer, double us, uint64_t tag) override;
  void progress(uint32_t) override {}
  void arrived(uint32_t, uint8_t) override {}
  void release(uint32_t) override {}

 private:
  struct Out {
    uint32_t peer;
    std::vector<uint8_t> bytes;
    bool sequenced;
  };
  // Hands what the machine queued to sendto, one after another; `k` once the queue is empty.
  void pump(std::function<void()> k);
  // Reads one datagram from the socket (sleeping until one comes) and gives it to the machine.
  void recv_one(std::function<void()> k);
  bool all_acked() const;
  void note(Errno e);

  Calendar& cal_;
  InetStack& stack_;
  host::Os& os_;
  const uint32_t node_, nodes_;
  const uint16_t port_;
  const double rudp_instr_;
  int fd_ = -1;
  std::unique_ptr<mbcf::gbn::Endpoint> ep_;
  std::deque<Out> outq_;
  bool pumping_ = false;
  std::vector<std::function<void()>> drained_;  // waiting for the queue to empty
  std::deque<std::pair<uint32_t, std::vector<uint8_t>>> inbox_;
  Errno first_error_ = Errno::Ok;
  Counter &dup_, &gap_, &resends_, &resend_reqs_, &acks_sent_, &timeouts_, &ack_polls_, &th1_cuts_, &peer_resets_,
      &unresponsive_, &abandoned_, &hellos_, &stale_, &errors_, &short_, &enobufs_, &lib_ps_;
};

}  // namespace mbpsim::sockets
