// A host's physical memory as a TLM-2.0 loosely-timed target (the memory a NIC's DMA reaches
// over the host I/O bus, and the frames the host OS gives its tasks).
//
// The OS (mbcf::TaskSpace) takes each frame it allocates through DMI, as a CPU model reads
// memory that its caches hold: no transaction per access. A NIC's DMA reaches the memory
// through its initiator socket with b_transport (generic payload, no extension). A user's
// own TLM-2.0 memory can stand in for this one (EtherSystem::use_host_memory): it must
// answer b_transport and grant read/write DMI for every frame it holds.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <systemc>
#include <tlm>
#include <tlm_utils/simple_target_socket.h>

namespace mbpsim::host {

// Any TLM-2.0 target socket of the base protocol, whatever its binding policy: what a host's
// memory offers (EtherSystem::use_host_memory takes a user's).
using TargetSocket = tlm::tlm_base_target_socket_b<32, tlm::tlm_fw_transport_if<>, tlm::tlm_bw_transport_if<>>;

// The bytes of host physical frame `frame` (page_bytes of them) through the memory's DMI, for
// the host CPU's view of it; throws std::runtime_error naming `who` if the memory grants no
// read/write DMI covering the whole frame.
uint8_t* frame_by_dmi(tlm::tlm_fw_transport_if<>& mem, uint64_t frame, uint32_t page_bytes, const std::string& who);

class Memory : public sc_core::sc_module {
 public:
  // Optional: a host whose NIC does no DMA into memory (the conventional NICs' data goes
  // through the kernel) leaves it unbound.
  tlm_utils::simple_target_socket_optional<Memory> socket;

  // Host physical addresses are frame * page_bytes + offset; a frame exists once the OS has
  // asked for it (DMI on its first byte), and an access to a frame that does not exist is an
  // address error (TLM_ADDRESS_ERROR_RESPONSE), as a bus error would be. Accesses take no
  // simulated time here: the host bus model of the initiator (bus.*) holds the memory's part.
  Memory(sc_core::sc_module_name name, uint32_t page_bytes);
  uint64_t transports() const { return transports_; }

 private:
  void b_transport(tlm::tlm_generic_payload& t, sc_core::sc_time& delay);
  bool get_direct_mem_ptr(tlm::tlm_generic_payload& t, tlm::tlm_dmi& dmi);
  unsigned transport_dbg(tlm::tlm_generic_payload& t);
  // Copies between the frames and `data`; false if a byte falls outside every frame.
  bool access(bool write, uint64_t addr, uint8_t* data, uint64_t n);

  uint32_t page_bytes_;
  std::vector<std::unique_ptr<uint8_t[]>> frames_;
  uint64_t transports_ = 0;
};

}  // namespace mbpsim::host
