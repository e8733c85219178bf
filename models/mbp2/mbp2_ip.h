// IP steering on one MBP2 card's PME (mbp2_ip.cpp; thesis 8.3.3 "the NIC steers a received
// datagram into the receive structure of the task bound to its port or connection"): the
// check of a received UDP/TCP datagram (header, checksum by the CSU-R or the firmware, order by
// the OCU or the firmware), its delivery by the PGE into the task's ring or into the kernel's
// receive structure, and the reassembly of IP fragments (RFC 815). The card owns one
// (Mbp2Nic::ip_steering_); TCP's halves of a segment are the card's PmeTcp's.
#pragma once
#include <cstdint>
#include <deque>
#include <map>
#include <utility>
#include <vector>

#include "models/core/stats.h"
#include "models/mbp2/frame_pool.h"
#include "models/mbp2/inet.h"

namespace mbpsim::mbp2 {

class Mbp2Nic;

class IpSteering {
 public:
  using Buf = FramePool::Buf;
  explicit IpSteering(Mbp2Nic& nic) : nic_(nic) {}
  IpSteering(const IpSteering&) = delete;
  IpSteering& operator=(const IpSteering&) = delete;
  // A received IP frame in EM: checked, steered and delivered; `interrupt`: the PME is entered
  // by the LDMA's completion (false when it already runs the receive, after a decryption).
  void receive(Buf b, bool interrupt);
  // Frames for no bound port, in the kernel's receive structure, oldest first.
  const std::deque<std::vector<uint8_t>>& kernel_received() const { return kernel_rx_; }
  // EM lost its contents: the reassemblies are gone (their buffers with it).
  void power_off();

 private:
  // A datagram's payload lies in its frames' receive buffers, in runs (one per fragment, or
  // one): `off` is where the run starts in the buffer's frame.
  struct Run {
    Buf b;
    uint32_t off, len;
  };
  // The PGE writes the payload into the next slot of the connection's ring; false (counted)
  // when the ring is full, unmapped, malformed or its slots too small.
  // Both read the frame from its receive buffer `b`, and free it when their DMA is done.
  bool pge_deliver(int64_t conn, const std::vector<Buf>& bufs, const std::vector<Run>& runs, const Parsed& p);
  void kernel_deliver(Buf b);
  // The PME's check and steering of a datagram (its frames' buffers `bufs`, the datagram `f`:
  // one frame, or the fragments joined), after `parse_inet` gave `p` and `e`; `joined`: the
  // CSU's partial sums are folded rather than one frame's verified.
  void steer(std::vector<Buf> bufs, std::vector<Run> runs, std::vector<uint8_t> f, const Parsed& p, InetError e, bool interrupt,
             bool joined);
  // An IP fragment in `b`: filed with its datagram's others (RFC 815); the last one to come
  // makes the datagram, which is then steered.
  void fragment(Buf b, bool interrupt, std::vector<uint8_t> f);
  // Gives a reassembly up (its buffers back, `why` counted); `doom`: its later fragments are
  // dropped until the timeout forgets it.
  void give_up(uint64_t key, Counter* why, bool doom = false);
  static constexpr uint32_t kReasmDone = 64;
  // The ICU message to the host for a frame in the kernel's receive structure (| its length).
  static constexpr uint64_t kIcuKernelRx = 2ull << 56;

  Mbp2Nic& nic_;
  // Datagrams being reassembled (by source << 24 | protocol << 16 | identification): the
  // pieces, each in its receive buffer (a piece's tag indexes `bufs`), and which entry this is
  // (its timeout gives up only the entry it was set for).
  struct Reasm {
    Reassembly r;
    std::vector<Buf> bufs;
    uint64_t serial = 0;
    // Given up for want of room (a piece that could not be held): nothing is held, and the
    // datagram's later fragments are dropped as they come until the timeout forgets it.
    bool doomed = false;
  };
  std::map<uint64_t, Reasm> reasm_;
  // The datagrams reassembled last (key, when), so that a late duplicate of one of their
  // fragments is dropped rather than opening a reassembly that can only time out: the last
  // kReasmDone of them, for mbp2.reasm_timeout_us. (An identification reused within that
  // window is IP's own hazard, RFC 4963.)
  std::deque<std::pair<uint64_t, uint64_t>> reasm_done_;
  uint32_t reasm_held_ = 0;  // receive buffers they hold (at most half the ring)
  uint64_t reasm_serial_ = 0;
  std::deque<std::vector<uint8_t>> kernel_rx_;  // the kernel's receive structure
};

}  // namespace mbpsim::mbp2
