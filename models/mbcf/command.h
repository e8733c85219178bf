// The MBCF command set (thesis 4.1), its options (4.2) and the decoded form of an MBCF packet
// (Figures 6.1 and 6.2). This is the meaning of a command, shared by every system that carries
// one: MBCF/Ether (host software), the MBP2 NIC (hardware). The byte layout is in packet.h, the
// execution against a task's memory in engine.h.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace mbpsim::mbcf {

// Command codes: the low byte of the command word at packet address 40.
enum class Cmd : uint8_t {
  Write = 1,
  WriteF = 2,
  Read = 3,
  Swap = 4,
  FetchAdd = 5,  // vector form: the length is a multiple of 4, one 32-bit addend per word
  CompSwap = 6,
  Update = 7,      // page-based multicast write along the page's multicast pattern
  Invalidate = 8,  // page-based multicast invalidation
  Fifo = 9,
  FifoeNormal = 10,
  FifoeRetry = 11,
  Signal = 12,
  ZBuffer = 13,
  ZBufPacked = 14,
  WriteTaskque = 15,
  // Replies, made by the target's kernel, never by users.
  Reply = 32,      // status and/or data back to the requester's memory
  Violation = 33,  // an access violation: sent instead of the status reply
  Ack = 34,        // a combined acknowledgement of a multicast sub-tree
};
const char* to_string(Cmd c);
bool is_user_command(Cmd c);
bool is_atomic(Cmd c);
bool is_multicast(Cmd c);
bool replies_with_data(Cmd c);  // READ, SWAP, FETCH_ADD, COMP_SWAP

// Reply-with-status option (4.2).
enum class ReplyMode : uint8_t { None = 0, Status = 1, OnlyFailures = 2 };

// Status values written to the requester's status word.
enum class Status : uint32_t {
  Pending = 0,  // what a requester writes before it sends; never sent
  Succeeded = 1,
  FifoFull = 2,          // MBCF_FIFO / QUEW signal: buffer full, command cancelled
  FifoeStoppedNow = 3,   // FIFOe: this command failed and the FIFO entered its stopped state
  FifoeStopped = 4,      // FIFOe: failed because the FIFO is in its stopped state
  SignalStopped = 5,     // the signal structure's invocation type is NONE
  SignalCondition = 6,   // the invocation condition does not match (a blocking program runs)
  CompareFailed = 7,     // COMP_SWAP: the reference word differed; nothing changed
  NoTaskque = 8,         // WRITE_TASKQUE: the target has no TASKQUE
  TaskqueFull = 9,
  Violation = 10,        // written by the requester's kernel when a Violation packet arrives
};
const char* to_string(Status s);
inline bool is_failure(Status s) { return s != Status::Succeeded && s != Status::Pending; }

// Why a packet was refused; carried by the Violation packet.
enum class ViolationCode : uint32_t {
  None = 0,
  NoSuchTask = 1,
  BadKey = 2,
  Unmapped = 3,       // the address is not mapped in the target task
  Protection = 4,     // the page does not allow the access
  PageCrossing = 5,   // an atomic command's target crosses a page boundary
  BadStructure = 6,   // a FIFO or signal structure is malformed
  BadCombination = 7, // the 4.4 rules were broken
  BadLength = 8,
};
const char* to_string(ViolationCode v);

// Command-word options (4.2). The elastic-memory-barrier colour selects a pair of counters.
struct Options {
  ReplyMode reply = ReplyMode::None;
  bool no_flow_control = false;
  bool emb = false;
  uint8_t emb_colour = 0;  // 0..15
  bool schedule = false;   // wake the target task if it is blocked
};

// SIGNAL structure subcommands (4.1).
enum class SigInvoke : uint32_t { None = 0, Polling = 1, UlsInvoke = 2, DspByUls = 3, DspInvoke = 4, SspInvoke = 5, MemwSsp = 6 };
enum class SigStore : uint32_t { Nonw = 0, Quew = 1, Memw = 2, MemwOffset = 3 };
enum class SigCond : uint32_t { EveryTimeBlk = 0, FirstOnlyBlk = 1, EveryTimeNonblk = 2, FirstOnlyNonblk = 3 };

// "No address" in the 32-bit logical space: status and data pointers that are absent.
constexpr uint32_t kNoAddr = 0xFFFFFFFFu;

// One command of a packet. Which fields a command uses is fixed by its code; see packet.h for
// the order in which they travel.
struct Command {
  Cmd cmd = Cmd::Write;
  Options opt;
  uint32_t laddr = 0;        // target logical address (FIFO/SIGNAL: the structure's address)
  uint32_t length = 0;       // bytes of data (ZBUF_PACKED: number of elements)
  uint32_t flag_laddr = 0;   // WRITE_F: flag location; ZBUFFER, ZBUF_PACKED, COMP_SWAP: reference address
  uint32_t flag_value = 0;   // WRITE_F: flag value; ZBUFFER, COMP_SWAP: reference value; ZBUF_PACKED: element size
  uint32_t ssp_pc = 0;       // SIGNAL: source-specified program (SSP_INVOKE, MEMW_SSP)
  uint32_t offset = 0;       // SIGNAL: MEMW_OFFSET / MEMW_SSP storage offset
  uint32_t data_laddr = kNoAddr;    // requester address for read data (READ and the atomics)
  uint32_t status_laddr = kNoAddr;  // requester address of the status word (when a reply is asked)
  // Replies: the status value, the violation code and the index of the offending command.
  uint32_t status = 0;
  uint32_t aux = 0;
  uint32_t origin = 0;       // Ack/Update/Invalidate: transaction id of the multicast at its root
  std::vector<uint8_t> data;
};
bool operator==(const Command& a, const Command& b);
// A command on the one 32-bit word at `laddr`, carrying `value` as its data (little-endian, as
// the host stores it): a one-word write, an atomic's operand.
Command word_command(Cmd k, uint32_t laddr, uint32_t value);

// The decoded MBCF/Ether packet: Ethernet header, protocol bytes, task fields, commands.
struct Packet {
  uint64_t dst_mac = 0, src_mac = 0;  // 48-bit
  uint32_t src_pnode = 0;
  uint8_t reserved = 0;
  uint8_t end_p = 0;   // packets sent to this peer, this one included (mod 256)
  uint8_t ctrl_p = 0;  // protocol control flags (CtrlFlag)
  uint8_t recv_p = 0;  // packets arrived from this peer (buffer collection)
  uint32_t src_ptask = 0, src_key = 0;
  uint32_t dst_ptask = 0, dst_key = 0;
  std::vector<Command> cmds;  // one, or several for a combined packet
  // The transaction timeline only (models/core/timeline.h): the request's flow this packet is
  // part of (0: none). Never on the wire: not encoded, not compared.
  uint64_t tl_flow = 0;
};
bool operator==(const Packet& a, const Packet& b);

// CTRL_P bits: how the Go-back-N protocol uses the third protocol byte.
enum CtrlFlag : uint8_t {
  kAckReq = 0x01,      // please answer with your packets-arrived number
  kAckOnly = 0x02,     // no command: carries END_P/RECV_P only (an acknowledgement)
  kResendReq = 0x04,   // a gap was seen: resend after RECV_P
  kHandshake = 0x08,   // a retransmission in the handshaked resend procedure
  kNoFlow = 0x10,      // outside the sequence space (no-flow-control option)
  kHello = 0x20,       // a node (re)starting: the peer resets its sequence numbers
  kSequenced = 0x40,   // END_P is meaningful
  kForwarded = 0x80,   // forwarded for a migrated task: byte 20 holds the original source Pnode
};

}  // namespace mbpsim::mbcf
