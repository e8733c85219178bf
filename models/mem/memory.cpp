#include "models/mem/memory.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <stdexcept>

namespace mbpsim::mem {

Memory::Memory(sc_core::sc_module_name name, uint32_t frame_bytes)
    : sc_core::sc_module(name), socket("socket"), frame_bytes_(frame_bytes) {
  socket.register_b_transport(this, &Memory::b_transport);
  socket.register_get_direct_mem_ptr(this, &Memory::get_direct_mem_ptr);
  socket.register_transport_dbg(this, &Memory::transport_dbg);
}

bool Memory::access(bool write, uint64_t addr, uint8_t* data, uint64_t n) {
  for (uint64_t a = addr; a < addr + n; a = (a / frame_bytes_ + 1) * frame_bytes_)
    if (a / frame_bytes_ >= frames_.size() || !frames_[a / frame_bytes_]) return false;
  while (n) {
    uint8_t* f = frames_[addr / frame_bytes_].get() + addr % frame_bytes_;
    const uint64_t k = std::min<uint64_t>(n, frame_bytes_ - addr % frame_bytes_);
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
  const uint64_t f = t.get_address() / frame_bytes_;
  if (f >= frames_.size()) frames_.resize(f + 1);
  if (!frames_[f]) {
    frames_[f] = std::make_unique<uint8_t[]>(frame_bytes_);  // value-initialised: zero
    ++made_;
  }
  dmi.set_dmi_ptr(frames_[f].get());
  dmi.set_start_address(f * frame_bytes_);
  dmi.set_end_address((f + 1) * frame_bytes_ - 1);
  dmi.allow_read_write();
  dmi.set_read_latency(sc_core::SC_ZERO_TIME);
  dmi.set_write_latency(sc_core::SC_ZERO_TIME);
  return true;
}

namespace {
std::string hex(uint64_t v) {
  char b[24];
  std::snprintf(b, sizeof b, "0x%llx", static_cast<unsigned long long>(v));
  return b;
}
}  // namespace

uint8_t* try_dmi_span(tlm::tlm_fw_transport_if<>& mem, uint64_t start, uint64_t bytes, sc_core::sc_time* latency) {
  tlm::tlm_generic_payload t;
  tlm::tlm_dmi dmi;
  t.set_address(start);
  t.set_command(tlm::TLM_WRITE_COMMAND);
  if (!mem.get_direct_mem_ptr(t, dmi) || !dmi.is_read_write_allowed() || dmi.get_start_address() > start ||
      dmi.get_end_address() < start + bytes - 1 || !dmi.get_dmi_ptr())
    return nullptr;
  if (latency) *latency = dmi.get_read_latency();
  return dmi.get_dmi_ptr() + (start - dmi.get_start_address());
}

std::string no_dmi(const std::string& who, const std::string& what, uint64_t start, uint64_t bytes) {
  return who + ": " + what + " grants no read/write DMI over [" + hex(start) + ", " + std::to_string(bytes) +
         " bytes): its processors read memory directly";
}

uint8_t* dmi_span(tlm::tlm_fw_transport_if<>& mem, uint64_t start, uint64_t bytes, const std::string& who,
                  const std::string& what, sc_core::sc_time* latency) {
  if (uint8_t* p = try_dmi_span(mem, start, bytes, latency)) return p;
  throw std::runtime_error(no_dmi(who, what, start, bytes));
}

uint8_t* frame_by_dmi(tlm::tlm_fw_transport_if<>& mem, uint64_t frame, uint32_t page_bytes, const std::string& who) {
  try {
    return dmi_span(mem, frame * page_bytes, page_bytes, who, "host memory");
  } catch (const std::runtime_error&) {
    throw std::runtime_error(who + ": host memory grants no read/write DMI over frame " + std::to_string(frame) + " [" +
                             hex(frame * page_bytes) + ", " + std::to_string(page_bytes) +
                             " bytes): the host's CPU reads its frames directly");
  }
}

}  // namespace mbpsim::mem
