#include "models/host/memory.h"

#include <algorithm>
#include <cstring>
#include <cstdio>
#include <stdexcept>

namespace mbpsim::host {

Memory::Memory(sc_core::sc_module_name name, uint32_t page_bytes) : sc_core::sc_module(name), socket("socket"), page_bytes_(page_bytes) {
  socket.register_b_transport(this, &Memory::b_transport);
  socket.register_get_direct_mem_ptr(this, &Memory::get_direct_mem_ptr);
  socket.register_transport_dbg(this, &Memory::transport_dbg);
}

bool Memory::access(bool write, uint64_t addr, uint8_t* data, uint64_t n) {
  for (uint64_t a = addr; a < addr + n; a = (a / page_bytes_ + 1) * page_bytes_)
    if (a / page_bytes_ >= frames_.size() || !frames_[a / page_bytes_]) return false;
  while (n) {
    uint8_t* f = frames_[addr / page_bytes_].get() + addr % page_bytes_;
    const uint64_t k = std::min<uint64_t>(n, page_bytes_ - addr % page_bytes_);
    if (write) std::memcpy(f, data, k);
    else std::memcpy(data, f, k);
    addr += k, data += k, n -= k;
  }
  return true;
}

void Memory::b_transport(tlm::tlm_generic_payload& t, sc_core::sc_time&) {
  ++transports_;
  if (t.get_byte_enable_ptr() || t.get_streaming_width() < t.get_data_length()) {
    t.set_response_status(tlm::TLM_BYTE_ENABLE_ERROR_RESPONSE);
    return;
  }
  if (t.is_read() || t.is_write()) {
    const bool ok = access(t.is_write(), t.get_address(), t.get_data_ptr(), t.get_data_length());
    t.set_response_status(ok ? tlm::TLM_OK_RESPONSE : tlm::TLM_ADDRESS_ERROR_RESPONSE);
  } else {
    t.set_response_status(tlm::TLM_OK_RESPONSE);  // TLM_IGNORE_COMMAND
  }
  t.set_dmi_allowed(true);
}

unsigned Memory::transport_dbg(tlm::tlm_generic_payload& t) {
  if (!t.is_read() && !t.is_write()) return 0;
  return access(t.is_write(), t.get_address(), t.get_data_ptr(), t.get_data_length()) ? t.get_data_length() : 0;
}

// DMI covers the frame holding the address; asking for a frame that does not exist yet
// creates it, zeroed (the OS allocating and clearing a frame).
bool Memory::get_direct_mem_ptr(tlm::tlm_generic_payload& t, tlm::tlm_dmi& dmi) {
  const uint64_t f = t.get_address() / page_bytes_;
  if (f >= frames_.size()) frames_.resize(f + 1);
  if (!frames_[f]) frames_[f] = std::make_unique<uint8_t[]>(page_bytes_);  // value-initialised: zero
  dmi.set_dmi_ptr(frames_[f].get());
  dmi.set_start_address(f * page_bytes_);
  dmi.set_end_address((f + 1) * page_bytes_ - 1);
  dmi.allow_read_write();
  dmi.set_read_latency(sc_core::SC_ZERO_TIME);
  dmi.set_write_latency(sc_core::SC_ZERO_TIME);
  return true;
}

uint8_t* frame_by_dmi(tlm::tlm_fw_transport_if<>& mem, uint64_t frame, uint32_t page_bytes, const std::string& who) {
  tlm::tlm_generic_payload t;
  tlm::tlm_dmi dmi;
  const uint64_t start = frame * page_bytes, end = start + page_bytes - 1;
  t.set_address(start);
  t.set_command(tlm::TLM_WRITE_COMMAND);
  if (!mem.get_direct_mem_ptr(t, dmi) || !dmi.is_read_write_allowed() || dmi.get_start_address() > start || dmi.get_end_address() < end ||
      !dmi.get_dmi_ptr())
    throw std::runtime_error(who + ": host memory grants no read/write DMI over frame " + std::to_string(frame) + " [0x" +
                             [](uint64_t v) { char b[24]; std::snprintf(b, sizeof b, "%llx", static_cast<unsigned long long>(v)); return std::string(b); }(start) +
                             ", " + std::to_string(page_bytes) + " bytes): the host's CPU reads its frames directly");
  return dmi.get_dmi_ptr() + (start - dmi.get_start_address());
}

}  // namespace mbpsim::host
