// Physical memory as a TLM-2.0 loosely-timed target, and the DMI view the machines' processors
// take of any TLM-2.0 memory. Used for a cluster host's physical memory (the memory a NIC's DMA
// reaches over the host I/O bus, and the frames the host OS gives its tasks) and for the
// memory banks of an MBP node (home memory and the L3 copies of remote pages).
//
// A processor model reads memory its caches hold: the frames it uses are taken once through
// DMI, with no transaction per access. A DMA master reaches the memory through its initiator
// socket with b_transport (generic payload, no extension). A user's own TLM-2.0 memory can
// stand in for this one: it must answer b_transport and grant read/write DMI over what it holds.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <systemc>
#include <tlm>
#include <tlm_utils/simple_target_socket.h>

namespace mbpsim::mem {

// Any TLM-2.0 target socket of the base protocol, whatever its binding policy: what a memory
// offers (EtherSystem::use_host_memory and mbp::System::use_bank take a user's).
using TargetSocket = tlm::tlm_base_target_socket_b<32, tlm::tlm_fw_transport_if<>, tlm::tlm_bw_transport_if<>>;

// The bytes [start, start + bytes) of `mem` through its DMI, for a processor's view of them;
// `latency`, when given, receives the read latency the memory states for a DMI access. Throws
// std::runtime_error "<who>: <what> grants no read/write DMI over <range>" if the memory grants
// no read/write DMI covering the whole range.
uint8_t* dmi_span(tlm::tlm_fw_transport_if<>& mem, uint64_t start, uint64_t bytes, const std::string& who,
                  const std::string& what, sc_core::sc_time* latency = nullptr);
// The same, answering nullptr instead of throwing; no_dmi is dmi_span's message.
uint8_t* try_dmi_span(tlm::tlm_fw_transport_if<>& mem, uint64_t start, uint64_t bytes, sc_core::sc_time* latency = nullptr);
std::string no_dmi(const std::string& who, const std::string& what, uint64_t start, uint64_t bytes);

// Makes `gp` one plain DMA transfer of a master on a bus: read or write of [addr, addr + n)
// from or into `data`, no byte enables, streaming width n, no DMI hint, response incomplete.
inline void dma_payload(tlm::tlm_generic_payload& gp, bool write, uint64_t addr, uint8_t* data, uint32_t n) {
  gp.set_command(write ? tlm::TLM_WRITE_COMMAND : tlm::TLM_READ_COMMAND);
  gp.set_address(addr);
  gp.set_data_ptr(data);
  gp.set_data_length(n);
  gp.set_streaming_width(n);
  gp.set_byte_enable_ptr(nullptr);
  gp.set_dmi_allowed(false);
  gp.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
}

// The bytes of host physical frame `frame` (page_bytes of them): dmi_span over the frame, and
// the error names the frame.
uint8_t* frame_by_dmi(tlm::tlm_fw_transport_if<>& mem, uint64_t frame, uint32_t page_bytes, const std::string& who);

class Memory : public sc_core::sc_module {
 public:
  // Optional: the DMA master of a host's NIC binds it (the conventional NIC's `dma`, the MBP2's
  // BIU); a host whose NIC does no DMA into memory (a user's NIC behind the Nic seam) leaves it
  // unbound.
  tlm_utils::simple_target_socket_optional<Memory> socket;

  // Addresses are frame * frame_bytes + offset; a frame exists once a processor has asked for
  // it (DMI on any of its bytes: it is made, zeroed), and an access to a frame that does not
  // exist is an address error (TLM_ADDRESS_ERROR_RESPONSE), as a bus error would be. Accesses
  // take no simulated time here: the bus model of the initiator (bus.*, node.bank_*) holds the
  // memory's part.
  Memory(sc_core::sc_module_name name, uint32_t frame_bytes);
  uint64_t transports() const { return transports_; }
  // Frames made so far (the memory the simulation holds for this module is this x frame_bytes).
  uint64_t frames() const { return made_; }

 private:
  void b_transport(tlm::tlm_generic_payload& t, sc_core::sc_time& delay);
  bool get_direct_mem_ptr(tlm::tlm_generic_payload& t, tlm::tlm_dmi& dmi);
  unsigned transport_dbg(tlm::tlm_generic_payload& t);
  // Copies between the frames and `data`; false if a byte falls outside every frame.
  bool access(bool write, uint64_t addr, uint8_t* data, uint64_t n);

  uint32_t frame_bytes_;
  std::vector<std::unique_ptr<uint8_t[]>> frames_;
  uint64_t transports_ = 0, made_ = 0;
};

}  // namespace mbpsim::mem
