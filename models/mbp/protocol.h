// Messages and controller tables of the MBP coherence protocols (thesis 2.5-2.6).
//
// Two controllers per block, each an explicit state x event table: the home controller (the
// block's state tag in the home's memory bank: where remote copies are) and the remote
// controller (the block's state tag in a non-home node's bank, the L3 copy). A (state, event)
// pair that has no row is an undefined transition: a hard error naming the controller, the
// address, the state and the event. Every transition taken is counted in the stats.
#pragma once
#include <array>
#include <cstdint>

#include "models/mbcf/atomic.h"
#include "models/net/packet.h"
#include "models/node/memop.h"

namespace mbpsim::mbp {

enum class MsgType : uint8_t {
  // requests to the home
  GetS, GetX, ReadH, WriteH, Atomic, PutX, SetProto,
  // home to other nodes
  Recall, Inv, Upd, PageInv,
  // answers
  Data, DataOnce, DataX, Nack, LocalGrant, ReadResp, WriteAck, AtomicResp, SetProtoAck,
  RecallData, RoundAck, PutAck,
  Count
};
constexpr int kNumMsgTypes = static_cast<int>(MsgType::Count);
const char* to_string(MsgType t);
// Whether the message carries a block of data (its size in flits follows).
bool carries_data(MsgType t);
bool is_request(MsgType t);

// A protocol message; it travels as a network packet's payload.
struct Msg : net::Payload {
  MsgType type = MsgType::GetS;
  uint32_t src = 0, dst = 0;
  uint32_t requester = 0;  // node of the processor the action is for
  uint32_t proc = 0;
  uint64_t op_id = 0;      // the processor's write-buffer entry (WriteH) or operation number
  uint64_t nblk = 0;       // network block number (network address / block size)
  node::Protocol proto = node::Protocol::Invalidate;  // the sender's view of the page
  bool down = false;       // Recall: downgrade (keep a shared copy) rather than invalidate
  bool held = false;       // RoundAck: the node really held a copy
  uint64_t round = 0;      // Inv/Upd/PageInv/RoundAck: the round
  uint32_t aoff = 0;       // Atomic: byte offset in the block
  mbcf::AtomicArgs atomic;
  std::array<uint64_t, 4> mask{};  // WriteH/Upd: bytes written
  uint64_t issued_ps = 0;
  // The transaction timeline only (models/core/timeline.h): a request's flow, which its answer
  // carries back, and when the request left its node (0: none, or no timeline).
  uint64_t flow = 0, flow_ps = 0;
  uint8_t data[256];
};

inline bool mask_test(const std::array<uint64_t, 4>& m, uint32_t i) { return m[i / 64] >> (i % 64) & 1; }
inline void mask_set(std::array<uint64_t, 4>& m, uint32_t i) { m[i / 64] |= 1ull << (i % 64); }

// Home controller.
enum class HState : uint8_t { None, Shared, Owned, RecallS, RecallX, InvRound, UpdRound, Count };
enum class HEvent : uint8_t { GetS, GetX, ReadH, WriteH, Atomic, PutX, Cleanup, RecallData, RoundDone, Count };
enum class HAction : uint8_t {
  Undefined, Defer, SendData, GrantX, InvForX, ReadReply, WriteNone, WriteShared, RecallDown,
  RecallInv, RecallDone, RoundDone, CleanupDone, WriteBack,
};
constexpr int kNumHStates = static_cast<int>(HState::Count);
constexpr int kNumHEvents = static_cast<int>(HEvent::Count);

// Remote controller (L3 copy at a non-home node). IS/ISP: shared fill pending (ISP: an
// invalidation or update overtook it, the fill is used once and dropped); IE/SE: exclusive
// request pending without/with a shared copy.
enum class RState : uint8_t { I, S, E, IS, ISP, IE, SE, Count };
enum class REvent : uint8_t { Load, Store, Data, DataOnce, DataX, Nack, Inv, Upd, Recall, Count };
enum class RAction : uint8_t {
  Undefined, GetS, GetX, Wait, FillS, FillOnce, FillX, NackToI, NackToS, InvCopy, UpdCopy,
  AckNo, Poison, RecallReply, DeferRecall,
};
constexpr int kNumRStates = static_cast<int>(RState::Count);
constexpr int kNumREvents = static_cast<int>(REvent::Count);

const char* to_string(HState s);
const char* to_string(HEvent e);
const char* to_string(RState s);
const char* to_string(REvent e);

// A set of home states: bit i is HState i.
using HStates = uint8_t;
constexpr HStates hs(HState s) { return static_cast<HStates>(1u << static_cast<int>(s)); }
template <class... S>
constexpr HStates hs(HState s, S... more) { return static_cast<HStates>(hs(s) | hs(more...)); }

struct HRow {
  HState state;
  HEvent event;
  HAction action;
  // The states the block may be in once the action is through (before a request it leaves
  // waiting is dispatched again). Which one is the action's guard (the row's comment): the
  // controller checks every state it sets against this column.
  HStates next;
};
struct RRow {
  RState state;
  REvent event;
  RAction action;
  RState next;
};

// The tables as written (rows), and their dense forms for lookup.
extern const HRow kHomeRows[];
extern const int kNumHomeRows;
extern const RRow kRemoteRows[];
extern const int kNumRemoteRows;
HAction home_action(HState s, HEvent e);
HStates home_next(HState s, HEvent e);  // the row's next-state column (0: no row)
const RRow* remote_row(RState s, REvent e);

}  // namespace mbpsim::mbp
