#include "models/mbp/proc_port.h"

#include <algorithm>
#include <cstring>

#include "models/core/error.h"
#include "models/core/sim_time.h"
#include "models/mbp/system.h"

namespace mbpsim::mbp {

ProcPort::ProcPort(sc_core::sc_module_name name, System& sys, uint32_t node, uint32_t proc, uint32_t block_bytes)
    : sc_core::sc_module(name), socket("socket"), sys_(sys), node_(node), proc_(proc), block_bytes_(block_bytes) {
  socket.register_b_transport(this, &ProcPort::b_transport);
}

void ProcPort::b_transport(tlm::tlm_generic_payload& gp, sc_core::sc_time& delay) {
  const tlm::tlm_command cmd = gp.get_command();
  const uint64_t addr = gp.get_address();
  const uint32_t len = gp.get_data_length();
  gp.set_dmi_allowed(false);
  if (gp.get_byte_enable_ptr()) {
    gp.set_response_status(tlm::TLM_BYTE_ENABLE_ERROR_RESPONSE);
    return;
  }
  if (cmd != tlm::TLM_IGNORE_COMMAND &&
      (len == 0 || len > block_bytes_ || addr % block_bytes_ + len > block_bytes_ || gp.get_streaming_width() < len)) {
    gp.set_response_status(tlm::TLM_BURST_ERROR_RESPONSE);
    return;
  }
  if (pending_) internal_error(std::string(name()) + ": a transaction while one is in progress");
  // The initiator's local time offset: the operation starts that much later.
  if (delay != sc_core::SC_ZERO_TIME) sc_core::wait(delay);
  delay = sc_core::SC_ZERO_TIME;
  op_ = node::MemOp{};
  op_.kind = cmd == tlm::TLM_READ_COMMAND ? node::OpKind::Load : cmd == tlm::TLM_WRITE_COMMAND ? node::OpKind::Store : node::OpKind::Fence;
  op_.addr = addr;
  op_.size = op_.kind == node::OpKind::Fence ? 0 : len;
  if (op_.kind == node::OpKind::Store) std::memcpy(op_.data, gp.get_data_ptr(), len);
  pending_ = true;
  done_ = false;
  sys_.wake(node_, proc_);  // the processor sleeps while its port has nothing for it
  while (!done_) sc_core::wait(done_ev_);
  if (op_.kind == node::OpKind::Load) std::memcpy(gp.get_data_ptr(), op_.data, len);
  ++transactions_;
  gp.set_response_status(tlm::TLM_OK_RESPONSE);
}

bool ProcPort::next(uint32_t, uint32_t, node::MemOp& op) {
  if (!pending_) return false;
  op = op_;
  pending_ = false;
  return true;
}

// The processor runs ahead of global time while it hits (node.quantum_ns): the operation
// completed at `now_ps`, which may lie ahead of SystemC's present; the initiator resumes then.
void ProcPort::complete(uint32_t, uint32_t, const node::MemOp& op, uint64_t now_ps) {
  op_ = op;
  done_ = true;
  const uint64_t now = sim_now_ps();
  done_ev_.notify(sc_core::sc_time::from_value(now_ps > now ? now_ps - now : 0));
}

}  // namespace mbpsim::mbp
