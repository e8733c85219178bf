#include "models/mbp/protocol.h"

namespace mbpsim::mbp {

const char* to_string(MsgType t) {
  static const char* n[] = {"GetS", "GetX", "ReadH", "WriteH", "Atomic", "PutX", "SetProto",
                            "Recall", "Inv", "Upd", "PageInv", "Data", "DataOnce", "DataX", "Nack",
                            "LocalGrant", "ReadResp", "WriteAck", "AtomicResp", "SetProtoAck",
                            "RecallData", "RoundAck", "PutAck"};
  return n[static_cast<int>(t)];
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
const HRow kHomeRows[] = {
    {HS::None, HE::GetS, HA::SendData},       {HS::None, HE::GetX, HA::GrantX},
    {HS::None, HE::ReadH, HA::ReadReply},     {HS::None, HE::WriteH, HA::WriteNone},
    {HS::None, HE::Atomic, HA::WriteNone},    {HS::None, HE::Cleanup, HA::CleanupDone},
    {HS::Shared, HE::GetS, HA::SendData},     {HS::Shared, HE::GetX, HA::InvForX},
    {HS::Shared, HE::ReadH, HA::ReadReply},   {HS::Shared, HE::WriteH, HA::WriteShared},
    {HS::Shared, HE::Atomic, HA::WriteShared}, {HS::Shared, HE::Cleanup, HA::CleanupDone},
    {HS::Owned, HE::GetS, HA::RecallDown},    {HS::Owned, HE::GetX, HA::RecallInv},
    {HS::Owned, HE::ReadH, HA::RecallDown},   {HS::Owned, HE::WriteH, HA::RecallInv},
    {HS::Owned, HE::Atomic, HA::RecallInv},   {HS::Owned, HE::Cleanup, HA::RecallInv},
    {HS::None, HE::PutX, HA::WriteBack},      {HS::Shared, HE::PutX, HA::WriteBack},
    {HS::Owned, HE::PutX, HA::WriteBack},
    {HS::RecallS, HE::RecallData, HA::RecallDone}, {HS::RecallX, HE::RecallData, HA::RecallDone},
    {HS::InvRound, HE::RoundDone, HA::RoundDone},  {HS::UpdRound, HE::RoundDone, HA::RoundDone},
#define MBPSIM_DEFER(S)                                                                    \
  {HS::S, HE::GetS, HA::Defer}, {HS::S, HE::GetX, HA::Defer}, {HS::S, HE::ReadH, HA::Defer}, \
      {HS::S, HE::WriteH, HA::Defer}, {HS::S, HE::Atomic, HA::Defer}, { HS::S, HE::PutX, HA::Defer }
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
  const RRow* r[kNumRStates][kNumREvents]{};
  Dense() {
    for (int i = 0; i < kNumHomeRows; ++i)
      h[static_cast<int>(kHomeRows[i].state)][static_cast<int>(kHomeRows[i].event)] = kHomeRows[i].action;
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
const RRow* remote_row(RState s, REvent e) { return dense().r[static_cast<int>(s)][static_cast<int>(e)]; }

}  // namespace mbpsim::mbp
