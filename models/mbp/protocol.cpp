#include "models/mbp/protocol.h"

namespace mbpsim::mbp {

const char* to_string(MsgType t) {
  static const char* n[] = {"GetS", "GetX", "ReadH", "WriteH", "Atomic", "PutX", "SetProto",
                            "Recall", "Inv", "Upd", "PageInv", "Data", "DataOnce", "DataX", "Nack",
                            "LocalGrant", "ReadResp", "WriteAck", "AtomicResp", "SetProtoAck",
                            "RecallData", "RoundAck", "PutAck"};
  static_assert(sizeof(n) / sizeof(n[0]) == kNumMsgTypes, "one name per message type");
  // A value past the names (Count, or a corrupted message's byte) is named, not read past the table.
  const int i = static_cast<int>(t);
  return i < kNumMsgTypes ? n[i] : "(not a message type)";
}

bool carries_data(MsgType t) {
  switch (t) {
    case MsgType::WriteH: case MsgType::Upd: case MsgType::Data: case MsgType::DataOnce:
    case MsgType::DataX: case MsgType::ReadResp: case MsgType::RecallData: case MsgType::Atomic:
    case MsgType::AtomicResp: case MsgType::PutX:
      return true;
    default: return false;
  }
}

bool is_request(MsgType t) { return t <= MsgType::SetProto; }

const char* to_string(HState s) {
  static const char* n[] = {"None", "Shared", "Owned", "RecallS", "RecallX", "InvRound", "UpdRound"};
  return n[static_cast<int>(s)];
}
const char* to_string(HEvent e) {
  static const char* n[] = {"GetS", "GetX", "ReadH", "WriteH", "Atomic", "PutX", "Cleanup", "RecallData", "RoundDone"};
  return n[static_cast<int>(e)];
}
const char* to_string(RState s) {
  static const char* n[] = {"I", "S", "E", "IS", "ISP", "IE", "SE"};
  return n[static_cast<int>(s)];
}
const char* to_string(REvent e) {
  static const char* n[] = {"Load", "Store", "Data", "DataOnce", "DataX", "Nack", "Inv", "Upd", "Recall"};
  return n[static_cast<int>(e)];
}

using HS = HState;
using HE = HEvent;
using HA = HAction;

// Home controller. None: no remote copy; Shared: remote nodes named by the page's sharer set
// may hold read-only copies; Owned: one remote node holds the only writable copy. A busy
// state defers every new request of the block until its recall or round completes; the
// request that caused it is then dispatched again on the new stable state. PutX: an L3
// replacement writes an exclusive block back; from anyone but the current owner it is stale
// (a recall already fetched the data) and only acknowledged.
//
// The last column is the next state; where it lists several, the guard picks one:
//  local     the requester is a processor of the home node: it is granted there and retries
//            through its own caches (state unchanged)
//  nc        the page is non-cacheable: data used once, no sharer joins (unchanged)
//  not inv   the page is no longer invalidate-type: Nack, the requester retries through its
//            write buffer (unchanged)
//  coarsen   the sharer set would coarsen while a round of the page is in flight: the request
//            waits in the page's queue (unchanged)
//  empty     an invalidation finds the sharer set empty: None at once, and the request is
//            dispatched again on None
//  update    an update-type page's write starts an update round when memory changed and
//            there are copies, else it is acknowledged at once (Shared)
//  owner     a PutX from the recorded owner writes back (None); from anyone else it is stale
//  switch    the protocol switch's Cleanup recalls with a downgrade towards update-type
//            (RecallS), else with invalidation (RecallX)
// The switch to non-cacheable itself (a page event, not a block event) sets every block to
// None after its Cleanups and page invalidation, when no block is busy.
const HRow kHomeRows[] = {
    {HS::None, HE::GetS, HA::SendData, hs(HS::Shared, HS::None)},           // None: local, nc, coarsen
    {HS::None, HE::GetX, HA::GrantX, hs(HS::Owned, HS::None)},              // None: local, not inv, coarsen
    {HS::None, HE::ReadH, HA::ReadReply, hs(HS::None)},
    {HS::None, HE::WriteH, HA::WriteNone, hs(HS::None)},
    {HS::None, HE::Atomic, HA::WriteNone, hs(HS::None)},
    {HS::None, HE::Cleanup, HA::CleanupDone, hs(HS::None)},
    {HS::Shared, HE::GetS, HA::SendData, hs(HS::Shared)},
    {HS::Shared, HE::GetX, HA::InvForX, hs(HS::InvRound, HS::None, HS::Shared)},  // None: empty; Shared: not inv
    {HS::Shared, HE::ReadH, HA::ReadReply, hs(HS::Shared)},
    {HS::Shared, HE::WriteH, HA::WriteShared, hs(HS::InvRound, HS::None, HS::UpdRound, HS::Shared)},  // update, empty
    {HS::Shared, HE::Atomic, HA::WriteShared, hs(HS::InvRound, HS::None, HS::UpdRound, HS::Shared)},  // update, empty
    {HS::Shared, HE::Cleanup, HA::CleanupDone, hs(HS::Shared)},
    {HS::Owned, HE::GetS, HA::RecallDown, hs(HS::RecallS)},
    {HS::Owned, HE::GetX, HA::RecallInv, hs(HS::RecallX)},
    {HS::Owned, HE::ReadH, HA::RecallDown, hs(HS::RecallS)},
    {HS::Owned, HE::WriteH, HA::RecallInv, hs(HS::RecallX)},
    {HS::Owned, HE::Atomic, HA::RecallInv, hs(HS::RecallX)},
    {HS::Owned, HE::Cleanup, HA::RecallInv, hs(HS::RecallS, HS::RecallX)},  // switch
    {HS::None, HE::PutX, HA::WriteBack, hs(HS::None)},                      // stale
    {HS::Shared, HE::PutX, HA::WriteBack, hs(HS::Shared)},                  // stale
    {HS::Owned, HE::PutX, HA::WriteBack, hs(HS::None, HS::Owned)},          // owner
    {HS::RecallS, HE::RecallData, HA::RecallDone, hs(HS::Shared)},
    {HS::RecallX, HE::RecallData, HA::RecallDone, hs(HS::None)},
    {HS::InvRound, HE::RoundDone, HA::RoundDone, hs(HS::None)},
    {HS::UpdRound, HE::RoundDone, HA::RoundDone, hs(HS::Shared)},
#define MBPSIM_DEFER(S)                                                                                       \
  {HS::S, HE::GetS, HA::Defer, hs(HS::S)}, {HS::S, HE::GetX, HA::Defer, hs(HS::S)},                           \
      {HS::S, HE::ReadH, HA::Defer, hs(HS::S)}, {HS::S, HE::WriteH, HA::Defer, hs(HS::S)},                    \
      {HS::S, HE::Atomic, HA::Defer, hs(HS::S)}, { HS::S, HE::PutX, HA::Defer, hs(HS::S) }
    MBPSIM_DEFER(RecallS), MBPSIM_DEFER(RecallX), MBPSIM_DEFER(InvRound), MBPSIM_DEFER(UpdRound),
#undef MBPSIM_DEFER
};
const int kNumHomeRows = sizeof(kHomeRows) / sizeof(kHomeRows[0]);

using RS = RState;
using RE = REvent;
using RA = RAction;

// Remote controller. Load and Store are raised only when the node cannot serve the processor
// itself (no copy, or a Store without the exclusive copy).
const RRow kRemoteRows[] = {
    {RS::I, RE::Load, RA::GetS, RS::IS},          {RS::I, RE::Store, RA::GetX, RS::IE},
    {RS::I, RE::Inv, RA::AckNo, RS::I},           {RS::I, RE::Upd, RA::AckNo, RS::I},
    {RS::S, RE::Store, RA::GetX, RS::SE},         {RS::S, RE::Inv, RA::InvCopy, RS::I},
    {RS::S, RE::Upd, RA::UpdCopy, RS::S},
    {RS::E, RE::Recall, RA::RecallReply, RS::E},  // next state set by the recall's mode
    {RS::IS, RE::Load, RA::Wait, RS::IS},         {RS::IS, RE::Store, RA::Wait, RS::IS},
    {RS::IS, RE::Data, RA::FillS, RS::S},         {RS::IS, RE::DataOnce, RA::FillOnce, RS::I},
    {RS::IS, RE::Inv, RA::Poison, RS::ISP},       {RS::IS, RE::Upd, RA::Poison, RS::ISP},
    {RS::ISP, RE::Load, RA::Wait, RS::ISP},       {RS::ISP, RE::Store, RA::Wait, RS::ISP},
    {RS::ISP, RE::Data, RA::FillOnce, RS::I},     {RS::ISP, RE::DataOnce, RA::FillOnce, RS::I},
    {RS::ISP, RE::Inv, RA::AckNo, RS::ISP},       {RS::ISP, RE::Upd, RA::AckNo, RS::ISP},
    {RS::IE, RE::Load, RA::Wait, RS::IE},         {RS::IE, RE::Store, RA::Wait, RS::IE},
    {RS::IE, RE::DataX, RA::FillX, RS::E},        {RS::IE, RE::Nack, RA::NackToI, RS::I},
    {RS::IE, RE::Inv, RA::AckNo, RS::IE},         {RS::IE, RE::Upd, RA::AckNo, RS::IE},
    {RS::IE, RE::Recall, RA::DeferRecall, RS::IE},
    {RS::SE, RE::Store, RA::Wait, RS::SE},        {RS::SE, RE::DataX, RA::FillX, RS::E},
    {RS::SE, RE::Nack, RA::NackToS, RS::S},       {RS::SE, RE::Inv, RA::InvCopy, RS::IE},
    {RS::SE, RE::Upd, RA::UpdCopy, RS::SE},       {RS::SE, RE::Recall, RA::DeferRecall, RS::SE},
};
const int kNumRemoteRows = sizeof(kRemoteRows) / sizeof(kRemoteRows[0]);

namespace {
struct Dense {
  HAction h[kNumHStates][kNumHEvents]{};
  HStates hn[kNumHStates][kNumHEvents]{};
  const RRow* r[kNumRStates][kNumREvents]{};
  Dense() {
    for (int i = 0; i < kNumHomeRows; ++i)
    {
      h[static_cast<int>(kHomeRows[i].state)][static_cast<int>(kHomeRows[i].event)] = kHomeRows[i].action;
      hn[static_cast<int>(kHomeRows[i].state)][static_cast<int>(kHomeRows[i].event)] = kHomeRows[i].next;
    }
    for (int i = 0; i < kNumRemoteRows; ++i)
      r[static_cast<int>(kRemoteRows[i].state)][static_cast<int>(kRemoteRows[i].event)] = &kRemoteRows[i];
  }
};
const Dense& dense() {
  static const Dense d;
  return d;
}
}  // namespace

HAction home_action(HState s, HEvent e) { return dense().h[static_cast<int>(s)][static_cast<int>(e)]; }
HStates home_next(HState s, HEvent e) { return dense().hn[static_cast<int>(s)][static_cast<int>(e)]; }
const RRow* remote_row(RState s, REvent e) { return dense().r[static_cast<int>(s)][static_cast<int>(e)]; }

}  // namespace mbpsim::mbp
