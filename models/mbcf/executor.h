// Who runs MBCF's protocol on a node: the seam between the protocol's decisions and the
// processor that carries them out. EtherSystem keeps the decisions (command semantics, packets,
// Go-back-N, multicast combining, page faults, migration) and asks its node's executor where
// the work runs and what moving the bytes costs. Two implementations:
//   - the host kernel on the host CPU (chapter 6, MBCF/Ether: EtherSystem::Kernel, the default):
//     a system call builds and sends a request, the receive interrupt routine runs the
//     commands, the kernel copies the data;
//   - the MBP2's firmware on its PME (chapter 8, Mbp2Nic::Firmware): a doorbell hands the
//     request to the card, the PME runs the routine, the ADMA moves the data through the
//     card's TLB, the OCU checks the order.
// The executor is given by the node's maker (EtherSystem::MakeExecutor), like its NIC (nic.h).
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "models/mbcf/engine.h"
#include "models/mbcf/gbn.h"
#include "models/mbcf/packet.h"
#include "models/mbcf/task.h"

namespace mbpsim::mbcf {

// What a user asks the MBCF-requesting system call to send.
struct Request {
  uint32_t ltask = 0;           // target, through the requester's task-translation table
  std::vector<Command> cmds;    // one, or several for a combined packet
  // kNoAddr: the payload is the commands' `data`. Otherwise the request has one command, and
  // its payload is the `data.size()` bytes of the requester's memory at src_laddr, read when
  // the request is taken: by the kernel in the system call (MBCF/Ether), by the NIC's DMA when
  // it fetches the request (MBP2: the task must leave them alone until then, see
  // Mbp2Nic::fetched).
  uint32_t src_laddr = kNoAddr;
  // User construction (6.1.3): kNoAddr, or the requester built the packet's bytes itself in its
  // memory at image_laddr (the MBCF/Ether layout of packet.h: type, total length and the
  // commands; every field the kernel fills, the Ethernet addresses, the source and destination
  // tasks and keys and the three protocol bytes, left zero). The kernel reads them when it
  // takes the request, refuses an image it cannot decode or whose kernel fields are not zero,
  // and completes the header from the calling task and `ltask`. `cmds` is then empty.
  uint32_t image_laddr = kNoAddr;
};

class Executor {
 public:
  // A request checked and made into its packet (EtherSystem::build_request): `dst` its Pnode,
  // `data` its payload bytes, `wire_bytes` the encoded packet.
  struct Built {
    Packet packet;
    uint32_t dst = 0, data = 0, wire_bytes = 0;
    bool user_built = false;  // from the requester's image (Request::image_laddr)
  };
  virtual ~Executor() = default;

  // Protocol work, given in the SS20 kernel's cycles (the calibrated routine costs), as time on
  // the processor that runs the protocol.
  virtual uint64_t proto_ps(double kernel_cycles) const = 0;
  // Runs protocol work of `dur` on that processor, then `fn`.
  virtual void work(uint64_t dur, std::function<void()> fn) = 0;
  // A validated request `r` from user task `ptask`, built into `b`: charge the host, get the
  // packet to the protocol (EtherSystem::submit), continue the user (`k`).
  virtual void issue(uint32_t ptask, const Request& r, Built b, std::function<void()> k) = 0;
  // The module whose processor runs the protocol: its track on a transaction timeline
  // (empty: the executor's work is not shown there).
  virtual std::string track_name() const { return {}; }
  // The time of entering the receive routine (an interrupt of the processor).
  virtual uint64_t rx_entry_ps() = 0;
  // A user program is to be invoked (MBCF_SIGNAL) with the 64-bit message (Ptask, signal
  // structure): the host kernel is already there; a NIC must interrupt the host first.
  virtual void upcall(uint64_t msg, std::function<void()> k) = 0;
  // Where a sequenced packet from `src` stands: `counted` is the receive routine's own
  // comparison of its END_P with the packets arrived. A NIC with an order-checking unit answers
  // from the unit instead and sets `saved` to the routine's time that spares.
  virtual gbn::Order order_of(uint32_t src, uint8_t end_p, gbn::Order counted, uint64_t* saved) {
    (void)src, (void)end_p, *saved = 0;
    return counted;
  }
  // The count of packets arrived from `src` was set (a packet accepted, or a reset to 0).
  virtual void arrived_set(uint32_t src, uint8_t arrived) { (void)src, (void)arrived; }
  // The frames through which received commands reach the tasks' memory: null for the host
  // kernel (the page tables); a NIC's DMA goes through its TLB.
  virtual const FrameMap* frames() const { return nullptr; }
  // Where the commands' writes into the tasks' memory wait for the DMA that makes them: null
  // for the host kernel (it stores them itself); the MBP2's ADMA writes them later.
  virtual WriteBuffer* writes() { return nullptr; }
  // A light-weight system call is about to read and change structures the commands also
  // change: `fn` runs once nothing the commands wrote is still on its way into memory.
  virtual void quiesce(std::function<void()> fn) { fn(); }
  // A request left the node's queue of requests not yet numbered (requests_in_flight).
  virtual void request_numbered() {}
  // Moving the executed packet's data between the packet buffer and the target task's memory
  // (`r.data_bytes`; a NIC's DMA makes the writes `writes()` holds).
  virtual uint64_t data_move_ps(const Packet& p, ExecResult& r) = 0;
  // The replies of a packet whose READ data a NIC's DMA read (ExecResult::nic_reply) take it as
  // they leave.
  virtual void reply_data(uint32_t handle, std::vector<Command>& replies) { (void)handle, (void)replies; }
  // Wakes the node's programs polling memory whose conditions now hold.
  virtual void run_pollers(uint64_t at) = 0;
};

}  // namespace mbpsim::mbcf
