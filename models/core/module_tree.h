// The module tree of a run: one root module, `system`, whose children are the machine's parts
// (system.net, system.node3.proc1.l1, system.host0.nic.pme, ...). A module's statistics are
// registered under its own hierarchical name (`stat_name`), so a part built twice, or under
// another parent, names its figures apart by itself.
#pragma once
#include <cstdint>
#include <string>
#include <utility>

#include <systemc>

#include "models/core/footprint.h"

namespace mbpsim {

// The root of the module tree. The runner builds every system inside one (`Within`); a test
// that wants the runner's statistics names does the same.
class Root final : public sc_core::sc_module {
 public:
  explicit Root(sc_core::sc_module_name name = "system") : sc_core::sc_module(name) {}
};

// A module that holds other modules and does nothing itself: a cluster host (system.host3, whose
// children are its CPU, memory, protocol stack and NIC).
class Group final : public sc_core::sc_module {
 public:
  explicit Group(sc_core::sc_module_name name) : sc_core::sc_module(name) {}
};

// While it lives, the modules constructed are children of `parent`: for parts that a module
// builds outside its own constructor's scope (the MBP machine's nodes are the root's children,
// beside the network), and for the runner, which builds the systems inside the root.
class Within {
 public:
  explicit Within(sc_core::sc_module& parent) : parent_(parent) {
    sc_core::sc_get_curr_simcontext()->hierarchy_push(&parent_);
  }
  ~Within() { sc_core::sc_get_curr_simcontext()->hierarchy_pop(); }
  Within(const Within&) = delete;
  Within& operator=(const Within&) = delete;

 private:
  sc_core::sc_module& parent_;
};

// A statistic of module `m`: its hierarchical name, then `leaf` ("system.node3" + "l1.hits").
inline std::string stat_name(const sc_core::sc_object& m, const std::string& leaf) {
  return std::string(m.name()) + "." + leaf;
}

// A part with no process of its own (a cache's tag array, a TLB) as a leaf module of the tree:
// the part's behaviour is `P`'s, its place in the hierarchy the module's.
template <class P>
class Part final : public sc_core::sc_module, public P {
 public:
  template <class... A>
  explicit Part(const char* name, A&&... a) : sc_core::sc_module(sc_core::sc_module_name(name)), P(std::forward<A>(a)...) {}
};

// Host memory a module of type `M` holds beyond what it allocates itself: the object (on the
// heap, as every part is built), and SystemC's own records of it, its hierarchical name
// (`name_len` characters) and its entry in the object table. Measured: a plain sc_module with
// a short name costs 370 heap bytes (SystemC 2.3.4), of which 240 are the object.
constexpr uint64_t module_overhead_bytes(uint64_t name_len) { return 130 + 2 * string_bytes(name_len); }
template <class M>
constexpr uint64_t module_bytes(uint64_t name_len) {
  return heap_bytes(sizeof(M)) + module_overhead_bytes(name_len);
}
// TLM-2.0's simple sockets hold heap beyond their own object (their port, export and names).
// Measured (SystemC 2.3.4): 1,380 bytes for a simple_target_socket_optional, 620 for a
// simple_initiator_socket_tagged.
constexpr uint64_t kTargetSocketHeap = 1380, kInitiatorSocketHeap = 620;

}  // namespace mbpsim
