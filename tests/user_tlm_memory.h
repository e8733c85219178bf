// A memory as a user would write it for their own platform: 30 lines of standard TLM-2.0, no
// mbpsim header. The foreign-module tests bind it where mbpsim has a TLM-2.0 boundary (a
// host's physical memory, an MBP node's memory bank).
#pragma once
#include <cstring>
#include <vector>

#include <systemc>
#include <tlm>
#include <tlm_utils/simple_target_socket.h>

struct UserMemory : sc_core::sc_module {
  tlm_utils::simple_target_socket<UserMemory> socket{"socket"};
  std::vector<unsigned char> bytes;
  sc_core::sc_time latency;
  bool grant_dmi = true;
  unsigned long long reads = 0, writes = 0, dmi_grants = 0;
  UserMemory(sc_core::sc_module_name n, size_t size, sc_core::sc_time lat) : sc_core::sc_module(n), bytes(size), latency(lat) {
    socket.register_b_transport(this, &UserMemory::b_transport);
    socket.register_get_direct_mem_ptr(this, &UserMemory::get_dmi);
  }
  void b_transport(tlm::tlm_generic_payload& t, sc_core::sc_time& delay) {
    const unsigned long long a = t.get_address();
    const unsigned n = t.get_data_length();
    if (a + n > bytes.size()) return t.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
    if (t.is_read()) std::memcpy(t.get_data_ptr(), &bytes[a], n), ++reads;
    if (t.is_write()) std::memcpy(&bytes[a], t.get_data_ptr(), n), ++writes;
    delay += latency;
    t.set_response_status(tlm::TLM_OK_RESPONSE);
  }
  bool get_dmi(tlm::tlm_generic_payload&, tlm::tlm_dmi& d) {
    if (!grant_dmi) return false;
    d.set_dmi_ptr(bytes.data());
    d.set_start_address(0);
    d.set_end_address(bytes.size() - 1);
    d.allow_read_write();
    d.set_read_latency(latency);  // what a DMI access costs, as its b_transport would annotate
    d.set_write_latency(latency);
    return ++dmi_grants;
  }
  void revoke() { socket->invalidate_direct_mem_ptr(0, bytes.size() - 1); }  // takes every DMI grant back
};
