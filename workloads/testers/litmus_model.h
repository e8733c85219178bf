// Memory-model litmus tests and the executable form of the MBP system's documented memory
// model (docs/ARCHITECTURE.md, "Memory model"). `allowed_outcomes` enumerates every outcome
// the model allows for a test, exhaustively, from an abstract machine that knows nothing of
// the simulator's code: it is the oracle the litmus tester checks observed outcomes against.
//
// The abstract machine, per location protocol:
// - invalidate: a store is performed at once, everywhere (it is blocking: it completes when
//   every other copy is gone); loads read the latest value;
// - non-cacheable: a store enters the processor's write buffer; an entry reaches the home (and
//   is performed) at any later moment, entries of one location in program order, entries of
//   different locations in any order; loads read the home (the single copy);
// - update: as non-cacheable, but reaching the home and being performed are two steps: in
//   between, other processors' copies may or may not have the value yet (stores are not
//   multi-copy atomic); once performed, every copy has it. A processor's view of a location
//   only moves forward in the home's order (coherence);
// - every protocol: loads are blocking and in program order and read the processor's own
//   newest buffered store to the location first; a fence waits until the write buffer is
//   empty (every earlier store performed); a store to an invalidate page does not wait for
//   buffered stores to other pages.
#pragma once
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "models/node/memop.h"

namespace mbpsim::litmus {

struct Instr {
  enum Kind : uint8_t { Store, Load, Fence } kind = Fence;
  uint8_t loc = 0;  // 0 = x, 1 = y
  uint8_t val = 0;  // a store's value (1 or 2); the initial value is 0
  uint8_t reg = 0;  // a load's register
};

struct Test {
  std::string name;
  uint32_t locs = 2;
  uint32_t regs = 0;
  std::vector<std::vector<Instr>> threads;
  std::vector<uint8_t> finals;  // locations whose final value is part of the outcome
  std::string doc;              // what the relaxed outcome means
};

// An outcome: register values, then the final values of `finals`.
using Outcome = std::vector<uint8_t>;

// The eleven tests: SB, SB+fences, MP, MP+fence, LB, IRIW, IRIW+fences, 2+2W, 2+2W+fences,
// CoRR and CoWW.
const std::vector<Test>& catalogue();
const Test* find(const std::string& name);

// Every outcome the documented model allows for `t` with location i on a page of protocol
// protos[i].
std::set<Outcome> allowed_outcomes(const Test& t, const std::vector<node::Protocol>& protos);
// The sequentially consistent outcomes (the model with every location invalidate-type).
std::set<Outcome> sc_outcomes(const Test& t);

// "r0=1 r1=0" (plus " x=2 y=1" for finals).
std::string format(const Test& t, const Outcome& o);

}  // namespace mbpsim::litmus
