// A processor's memory port as a TLM-2.0 target (system.node<n>.proc<i>.port): a user's core
// model, any loosely-timed initiator that calls b_transport from an SC_THREAD (an instruction-
// set simulator, a trace player), drives processor i of node n with its loads and stores. The
// processor executes them as it executes a workload's (models/node/memop.h), against the
// machine's memory system: its L1 and L2 (hits are lookups, as for every processor), its write
// buffer, the node bus and the MBP's coherence. One operation at a time, in order; b_transport
// returns when the operation has completed, so the simulated time it takes passes inside the
// call (the initiator's thread waits) and the delay given in is waited first.
//
// Generic payload, base protocol, no extension:
//   TLM_READ_COMMAND    a load of the data length at the address
//   TLM_WRITE_COMMAND   a store of the data
//   TLM_IGNORE_COMMAND  a fence: completes when every earlier store is performed everywhere
// Addresses are shared (network) addresses, the machine's one shared address space. A
// transfer is 1 to node.block_bytes bytes within one block (a longer one, or one that crosses
// a block: TLM_BURST_ERROR_RESPONSE); byte enables and streaming are not supported
// (TLM_BYTE_ENABLE_ERROR_RESPONSE, TLM_BURST_ERROR_RESPONSE). No DMI: a processor's cache
// hit is a lookup inside the processor, as the architecture keeps it.
#pragma once
#include <cstdint>

#include <systemc>
#include <tlm>
#include <tlm_utils/simple_target_socket.h>

#include "models/node/memop.h"

namespace mbpsim::mbp {

class System;

class ProcPort final : public sc_core::sc_module, public node::ProcDriver {
 public:
  tlm_utils::simple_target_socket<ProcPort> socket;
  // Built by System::processor_port, which gives the processor to this port.
  ProcPort(sc_core::sc_module_name name, System& sys, uint32_t node, uint32_t proc, uint32_t block_bytes);
  // node::ProcDriver: the processor asks for the operation the initiator is waiting on.
  bool next(uint32_t node, uint32_t proc, node::MemOp& op) override;
  void complete(uint32_t node, uint32_t proc, const node::MemOp& op, uint64_t now_ps) override;
  uint64_t transactions() const { return transactions_; }

 private:
  void b_transport(tlm::tlm_generic_payload& gp, sc_core::sc_time& delay);
  System& sys_;
  const uint32_t node_, proc_, block_bytes_;
  node::MemOp op_;
  bool pending_ = false, done_ = false;
  sc_core::sc_event done_ev_;
  uint64_t transactions_ = 0;
};

}  // namespace mbpsim::mbp
