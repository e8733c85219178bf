// A node-bus transaction of the MBP machine: the TLM-2.0 boundary between a node's processors
// and the rest of the node (the other processors' caches, the memory banks, the MBP). Each
// processor's initiator socket (system.node<n>.proc<i>.bus) is bound to the node bus's target
// socket (system.node<n>.bus.socket), or to a user's module in between (System::use_bus_path:
// a monitor, a tracer, a model of bus delays), which passes the transactions on to the bus.
//
// Generic payload, base protocol rules, and the BusOp extension below (required: a transaction
// without it gets TLM_COMMAND_ERROR_RESPONSE). The address is the block's node-physical address
// (block-aligned; outside the node's frames: TLM_ADDRESS_ERROR_RESPONSE); the data pointer holds
// node.block_bytes bytes (data length and streaming width that; no byte enables).
//
//   op             command  what the bus does
//   Read           READ     a read miss: another L2's copy is supplied (every copy is then S and
//                           an M copy lands in memory first), else the bank's (the page's home
//                           memory or the node's L3 copy); `supplier` says which and `granted` the
//                           L2 state the requester may take: S, or E when it holds the only copy
//   ReadExclusive  READ     a write miss: every other copy is invalidated (an M copy lands in memory
//                           first), then the block is supplied as for Read; `granted` is E
//   Upgrade        IGNORE   the requester's S copy becomes the node's only one: every other copy is
//                           invalidated; address phase only, no data
//   ReadUncached   READ     a read of a non-cacheable page at its home: the home memory's bytes
//   WriteBack      WRITE    a modified L2 victim lands in its frame (no bus time: the model's
//                           write-backs are buffered)
//   Request        IGNORE   a request the node's MBP takes to the page's home (a miss it must
//                           serve, a protocol switch): the address phase, then the MBP sends `msg`,
//                           an mbpsim-internal message a module in the path must leave alone
//   RequestData    WRITE    the same with a data phase (a buffered store, an atomic, an evicted
//                           L3 page's exclusive block): the data pointer is the message's block
//   Invalidate     IGNORE   the MBP's snoop: every copy in the node's caches goes (an M copy lands
//                           in memory first); `supplier` is Cache when some L2 held one. No bus
//                           time, unless `flush`: then a copy found crosses the data bus
//   Downgrade      IGNORE   the same, but the copies stay, as S
//
// The node's MBP snoops every Read, ReadExclusive, Upgrade and ReadUncached. When the node
// cannot serve the block (its copy is elsewhere, or its page is switching protocol) the MBP
// claims the transaction: `supplier` is Claimed, no data moves and no bus time passes (the
// address phase is the one the Request that follows pays). The processor then asks the MBP with
// a Request once global time has reached its own clock.
//
// Timing: loosely timed, with temporal decoupling. The delay in is the initiator's offset from
// the present; b_transport adds arbitration, the address and snoop phases (the C-TLB watches
// them), the supplier's latency and the data beats, from the bus's and the banks' "busy until"
// times, and never waits: the machine's processors call it from the machine's SC_METHOD, so a
// module in the path must not wait either (SystemC stops the run with an error if it does).
// Each transaction that uses a phase is counted in system.node<n>.bus.transactions; a claimed
// one, and a snoop without a data phase, are not.
//
// The initiators: each processor (system.node<n>.proc<i>.bus, `proc` its index) and the node's
// MBP (system.node<n>.mbp.bus, `proc` kNoProc: its snoops when an invalidation, an update or a
// recall arrives, its flushes of local copies at the home, the write-backs of an evicted L3
// page). A user's initiator sets `proc` to kNoProc (every L2 is snooped) or to the processor it
// acts for (that processor's L2 is not).
#pragma once
#include <cstdint>

#include <tlm>

namespace mbpsim::mbp {

struct Msg;

struct BusOp : tlm::tlm_extension<BusOp> {
  enum class Kind : uint8_t { Read, ReadExclusive, Upgrade, ReadUncached, WriteBack, Request, RequestData, Invalidate, Downgrade };
  enum class Supplier : uint8_t { None, Cache, Memory, Claimed };
  static constexpr uint32_t kNoProc = ~0u;

  // Asked.
  Kind kind = Kind::Read;
  uint32_t proc = kNoProc;  // the requesting processor of the node (its own L2 is not snooped)
  Msg* msg = nullptr;       // Request, RequestData: the message the MBP sends
  bool flush = false;       // Invalidate, Downgrade: a copy found crosses the data bus
  // Answered.
  Supplier supplier = Supplier::None;
  uint8_t granted = 0;  // Read, ReadExclusive: the L2 state the requester may take (1 S, 2 E)

  tlm::tlm_extension_base* clone() const override { return new BusOp(*this); }
  void copy_from(const tlm::tlm_extension_base& e) override { *this = static_cast<const BusOp&>(e); }
};

const char* to_string(BusOp::Kind k);
// The generic payload's command each kind travels with.
tlm::tlm_command bus_command(BusOp::Kind k);

}  // namespace mbpsim::mbp
