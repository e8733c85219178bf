// The workload interface of the processor model, shared by every driver (random testers,
// synthetic sharing patterns, scripts, trace replay): a processor asks its driver for the next
// operation, executes it against the memory system, and reports the result.
#pragma once
#include <cstdint>

#include "models/mbcf/atomic.h"

namespace mbpsim::node {

enum class OpKind : uint8_t {
  Load,      // `size` bytes at `addr` (within one block); result in `data`
  Store,     // `size` bytes from `data`
  Atomic,    // executed at the home node (thesis 4.1); old contents in `data`
  Fence,     // completes when every earlier store of this processor is performed everywhere
  SetProtocol,  // switch the page of `addr` to protocol `proto` (a privileged call)
};

enum class Protocol : uint8_t { Invalidate = 0, Update = 1, NonCacheable = 2 };
inline const char* to_string(Protocol p) {
  return p == Protocol::Invalidate ? "invalidate" : p == Protocol::Update ? "update" : "noncacheable";
}

struct MemOp {
  OpKind kind = OpKind::Load;
  uint64_t addr = 0;  // shared (network) address: the single shared task's logical address
  uint32_t size = 0;
  uint64_t gap = 0;   // compute instructions before this op (times node.cpi)
  mbcf::AtomicArgs atomic;
  Protocol proto = Protocol::Invalidate;
  uint64_t tag = 0;   // the driver's own
  uint8_t level = 0;  // set on completion: where it was served (1 L1, 2 L2, 3 the node, 4 another node; 0 otherwise)
  // An op the driver will hand out later, when it already knows it (its ops do not depend on
  // results): the op kAheadOps after this one, a hint for the host's caches only. The processor
  // prefetches the simulator's records of that block, which changes the simulator's speed,
  // never what it simulates: the block's L1 set at once, and for a store, kAheadOps / 2 ops
  // later, the L2 line that L1 line names, so each prefetch has a few ops' time to arrive.
  static constexpr uint32_t kAheadOps = 4;
  enum class Ahead : uint8_t { Unknown, Load, Store };
  Ahead ahead = Ahead::Unknown;
  uint64_t ahead_addr = 0;
  uint8_t data[256];  // store data in, load / atomic result out
};

// Implemented by workloads, and by a processor's TLM-2.0 port (models/mbp/proc_port.h). `next`
// fills `op` and returns true, or returns false when the processor has nothing to do now (it
// sleeps until the driver calls System::wake).
class ProcDriver {
 public:
  virtual ~ProcDriver() = default;
  virtual bool next(uint32_t node, uint32_t proc, MemOp& op) = 0;
  // The op finished at simulated time `now_ps` (loads and atomics carry their data).
  virtual void complete(uint32_t node, uint32_t proc, const MemOp& op, uint64_t now_ps) = 0;
};

}  // namespace mbpsim::node
