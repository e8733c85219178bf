// Executes MBCF packets against a node's tasks: find the target Ptask, check its access key,
// apply the combining rules of 4.4, translate every address through the task's page table,
// and run the commands as one atomic lump (an undo log rolls back a packet that hits a
// violation or a swapped-out page half way). What to send back, whom to wake, which user
// programs to invoke and where multicast copies go is returned to the caller: the MBCF/Ether
// kernel or the MBP2 firmware, which alone decide how long it takes.
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "models/mbcf/command.h"
#include "models/mbcf/packet.h"
#include "models/mbcf/task.h"

namespace mbpsim::mbcf {

// Ptask 0 is the kernel of a node: the target of multicast acknowledgements.
constexpr uint32_t kKernelPtask = 0;

struct Invocation {
  enum Kind : uint8_t { Uls, DspByUls, Dsp, Ssp } kind = Dsp;
  uint32_t ptask = 0;
  uint32_t pc = 0;          // program entry (ULS entry for Uls/DspByUls)
  uint32_t dsp_pc = 0;      // DspByUls: what the ULS then calls
  uint32_t signal_laddr = 0;
  SigCond cond = SigCond::EveryTimeNonblk;
};

struct Forward {
  PageRef to;
  Command cmd;  // laddr already moved into the child's page
};

struct ExecResult {
  enum class Outcome : uint8_t { Done, Violation, PageFault, NoTask, BadKey } outcome = Outcome::Done;
  ViolationCode violation = ViolationCode::None;
  uint32_t violation_index = 0;
  uint32_t fault_page = 0;
  std::vector<Command> replies;    // to the requester, combined in one packet (may be empty)
  std::vector<Forward> forwards;   // multicast copies for the pattern's child pages
  std::optional<Command> deferred; // a multicast's status reply, sent once the children acked
  std::vector<Invocation> invocations;
  bool woke = false;               // the scheduling option woke a blocked task
  uint32_t data_bytes = 0;         // bytes moved into or out of task memory (for cost models)
  // MBCF structures in the target task's memory the commands read, checked and updated (a
  // FIFO's, a signal's; for cost models): work the receive routine does beyond a WRITE's.
  uint32_t structures = 0;
  // Where those structures are: each one's address in the target task's space and the bytes the
  // routine reads of it, in the order it read them (a NIC that keeps them in host memory, the
  // MBP2, reads them over its bus first).
  struct StructureRead {
    uint32_t laddr, bytes;
  };
  std::vector<StructureRead> structure_reads;
  // A NIC whose DMA makes the writes (TaskSpace's write buffer): how many of them came before
  // the READ, which its DMA must read between them; and its handle on the bytes the DMA read
  // for the READ's reply (0: none; the reply then carries what the semantics read).
  uint32_t read_after_writes = 0;
  uint32_t nic_reply = 0;
  std::vector<Status> statuses;    // per command, for stats and tests
};

// Runs a packet on `ts`. Reply and Violation packets update the requester's memory (and its
// elastic-memory-barrier counters); Ack packets are for the caller and are not passed here.
// A packet whose reply would exceed `max_reply_bytes` (a frame, less what the NIC adds) is
// refused whole with BadLength.
ExecResult execute(TaskSpace& ts, const Packet& p, uint32_t max_reply_bytes = kMaxPacketBytes);
// Bytes of the one reply packet the commands ask for (a REPLY with data for a READ or an
// atomic, a status reply otherwise when asked): the 4.4 rule that replies fit one packet, and
// the sender's check that they fit a frame.
uint32_t reply_packet_bytes(const std::vector<Command>& cmds);

// An atomic command's effect (SWAP, FETCH_ADD, COMP_SWAP; its length a multiple of 4): `mem`
// holds the target's c.length old bytes and gets the new ones; `ref` is the word COMP_SWAP
// compares (what c.flag_laddr holds; the others ignore it). Returns Succeeded, or
// CompareFailed with `mem` unchanged. `execute` reads and writes through the task space at
// once (the host kernel's way); the MBP2's PME reads the old bytes with its ADMA first.
Status atomic_effect(const Command& c, uint32_t ref, uint8_t* mem);

// Light-weight system calls (4.1, 4.3).
// Takes the oldest entry of the FIFO whose structure is at `fifo`; nullopt when empty.
std::optional<std::vector<uint8_t>> fifo_pop(TaskSpace& ts, Task& t, uint32_t fifo);
uint32_t fifo_entries(const TaskSpace& ts, const Task& t, uint32_t fifo);
// Resets a signal structure's running flag if its queue is empty; otherwise returns the next
// queued record and leaves the flag set (the invoked program goes on).
std::optional<std::vector<uint8_t>> signal_reset(TaskSpace& ts, Task& t, uint32_t signal);
// The kernel's part when an invoked program returns: EVERY_TIME conditions clear the flag.
void signal_returned(TaskSpace& ts, Task& t, uint32_t signal);
std::optional<std::vector<uint8_t>> read_taskque(Task& t);

// Helpers to set up structures in a task's memory.
void init_fifo(TaskSpace& ts, Task& t, uint32_t fifo, uint32_t buffer, uint32_t bytes);
void init_signal(TaskSpace& ts, Task& t, uint32_t signal, SigInvoke inv, SigStore st, SigCond cond, uint32_t dsp_pc,
                 uint32_t buffer, uint32_t buffer_bytes, uint32_t fifo);

// The reply a requester's kernel writes when a Violation packet comes back for it.
}  // namespace mbpsim::mbcf
