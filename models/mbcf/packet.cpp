#include "models/mbcf/packet.h"

#include "models/mbcf/atomic.h"

namespace mbpsim::mbcf {

const char* to_string(Cmd c) {
  switch (c) {
    case Cmd::Write: return "MBCF_WRITE";
    case Cmd::WriteF: return "MBCF_WRITE_F";
    case Cmd::Read: return "MBCF_READ";
    case Cmd::Swap: return "MBCF_SWAP";
    case Cmd::FetchAdd: return "MBCF_FETCH_ADD";
    case Cmd::CompSwap: return "MBCF_COMP_SWAP";
    case Cmd::Update: return "MBCF_UPDATE";
    case Cmd::Invalidate: return "MBCF_INVALIDATE";
    case Cmd::Fifo: return "MBCF_FIFO";
    case Cmd::FifoeNormal: return "MBCF_FIFOe_NORMAL";
    case Cmd::FifoeRetry: return "MBCF_FIFOe_RETRY";
    case Cmd::Signal: return "MBCF_SIGNAL";
    case Cmd::ZBuffer: return "MBCF_ZBUFFER";
    case Cmd::ZBufPacked: return "MBCF_ZBUF_PACKED";
    case Cmd::WriteTaskque: return "WRITE_TASKQUE";
    case Cmd::Reply: return "REPLY";
    case Cmd::Violation: return "VIOLATION";
    case Cmd::Ack: return "ACK";
  }
  return "?";
}

bool is_user_command(Cmd c) { return static_cast<uint8_t>(c) >= 1 && static_cast<uint8_t>(c) <= 15; }
bool is_atomic(Cmd c) { return c == Cmd::Swap || c == Cmd::FetchAdd || c == Cmd::CompSwap; }
bool is_multicast(Cmd c) { return c == Cmd::Update || c == Cmd::Invalidate; }
bool replies_with_data(Cmd c) { return c == Cmd::Read || is_atomic(c); }

const char* to_string(Status s) {
  switch (s) {
    case Status::Pending: return "pending";
    case Status::Succeeded: return "succeeded";
    case Status::FifoFull: return "fifo_full";
    case Status::FifoeStoppedNow: return "fifoe_stopped_now";
    case Status::FifoeStopped: return "fifoe_stopped";
    case Status::SignalStopped: return "signal_stopped";
    case Status::SignalCondition: return "signal_condition";
    case Status::CompareFailed: return "compare_failed";
    case Status::NoTaskque: return "no_taskque";
    case Status::TaskqueFull: return "taskque_full";
    case Status::Violation: return "violation";
  }
  return "?";
}

const char* to_string(ViolationCode v) {
  switch (v) {
    case ViolationCode::None: return "none";
    case ViolationCode::NoSuchTask: return "no_such_task";
    case ViolationCode::BadKey: return "bad_key";
    case ViolationCode::Unmapped: return "unmapped";
    case ViolationCode::Protection: return "protection";
    case ViolationCode::PageCrossing: return "page_crossing";
    case ViolationCode::BadStructure: return "bad_structure";
    case ViolationCode::BadCombination: return "bad_combination";
    case ViolationCode::BadLength: return "bad_length";
  }
  return "?";
}

const char* to_string(DecodeError e) {
  switch (e) {
    case DecodeError::None: return "none";
    case DecodeError::Truncated: return "truncated";
    case DecodeError::LengthMismatch: return "length_mismatch";
    case DecodeError::WrongType: return "wrong_type";
    case DecodeError::UnknownCommand: return "unknown_command";
    case DecodeError::BadAlignment: return "bad_alignment";
    case DecodeError::BadLength: return "bad_length";
  }
  return "?";
}

Command word_command(Cmd k, uint32_t laddr, uint32_t value) {
  Command c;
  c.cmd = k;
  c.laddr = laddr;
  c.length = 4;
  c.data.resize(4);
  store_le(c.data.data(), 4, value);
  return c;
}

bool operator==(const Command& a, const Command& b) {
  return a.cmd == b.cmd && a.opt.reply == b.opt.reply && a.opt.no_flow_control == b.opt.no_flow_control &&
         a.opt.emb == b.opt.emb && a.opt.emb_colour == b.opt.emb_colour && a.opt.schedule == b.opt.schedule &&
         a.laddr == b.laddr && a.length == b.length && a.flag_laddr == b.flag_laddr &&
         a.flag_value == b.flag_value && a.ssp_pc == b.ssp_pc && a.offset == b.offset &&
         a.data_laddr == b.data_laddr && a.status_laddr == b.status_laddr && a.status == b.status &&
         a.aux == b.aux && a.origin == b.origin && a.data == b.data;
}

bool operator==(const Packet& a, const Packet& b) {
  return a.dst_mac == b.dst_mac && a.src_mac == b.src_mac && a.src_pnode == b.src_pnode &&
         a.reserved == b.reserved && a.end_p == b.end_p && a.ctrl_p == b.ctrl_p && a.recv_p == b.recv_p &&
         a.src_ptask == b.src_ptask && a.src_key == b.src_key && a.dst_ptask == b.dst_ptask &&
         a.dst_key == b.dst_key && a.cmds == b.cmds;
}

uint64_t mac_of(uint32_t pnode) { return 0x024d42000000ull | (pnode & 0xFFFF); }

namespace {

// Which parameter slots a command carries, in wire order. `S` marks the optional status slot.
enum Slot : uint8_t { Laddr, Length, FlagL, FlagV, Ssp, Off, DataL, Stat, StatusV, Aux, Origin, S, End };

const Slot* layout(Cmd c) {
  static const Slot write[] = {Laddr, Length, S, End};
  static const Slot writef[] = {Laddr, Length, FlagL, FlagV, S, End};
  static const Slot read[] = {Laddr, Length, DataL, S, End};
  static const Slot cswap[] = {Laddr, Length, DataL, S, FlagL, FlagV, End};
  static const Slot update[] = {Laddr, Length, Origin, S, End};
  static const Slot inval[] = {Laddr, Origin, S, End};
  static const Slot fifo[] = {Laddr, Length, S, End};
  static const Slot signal[] = {Laddr, Length, Ssp, Off, S, End};
  static const Slot zbuf[] = {Laddr, Length, FlagL, FlagV, S, End};
  static const Slot taskque[] = {Length, S, End};
  static const Slot reply[] = {Stat, StatusV, DataL, Length, End};
  static const Slot viol[] = {Stat, StatusV, Aux, End};
  static const Slot ack[] = {Origin, Aux, End};
  switch (c) {
    case Cmd::Write: return write;
    case Cmd::WriteF: return writef;
    case Cmd::Read: case Cmd::Swap: case Cmd::FetchAdd: return read;
    case Cmd::CompSwap: return cswap;
    case Cmd::Update: return update;
    case Cmd::Invalidate: return inval;
    case Cmd::Fifo: case Cmd::FifoeNormal: case Cmd::FifoeRetry: return fifo;
    case Cmd::Signal: return signal;
    case Cmd::ZBuffer: case Cmd::ZBufPacked: return zbuf;
    case Cmd::WriteTaskque: return taskque;
    case Cmd::Reply: return reply;
    case Cmd::Violation: return viol;
    case Cmd::Ack: return ack;
  }
  return nullptr;
}

bool known(uint8_t code) { return (code >= 1 && code <= 15) || (code >= 32 && code <= 34); }

// Bytes of data a command carries on the wire.
uint32_t data_bytes(const Command& c) {
  switch (c.cmd) {
    case Cmd::Read: case Cmd::Invalidate: case Cmd::Violation: case Cmd::Ack: return 0;
    case Cmd::ZBufPacked: return c.length * (4 + c.flag_value);
    default: return c.length;
  }
}

uint32_t& field(Command& c, Slot s) {
  switch (s) {
    case Laddr: return c.laddr;
    case Length: return c.length;
    case FlagL: return c.flag_laddr;
    case FlagV: return c.flag_value;
    case Ssp: return c.ssp_pc;
    case Off: return c.offset;
    case DataL: return c.data_laddr;
    case Stat: case S: return c.status_laddr;
    case StatusV: return c.status;
    case Aux: return c.aux;
    case Origin: return c.origin;
    case End: break;
  }
  return c.status;  // not reached
}

uint32_t word_of(const Command& c, bool more) {
  return static_cast<uint32_t>(c.cmd) | (static_cast<uint32_t>(c.opt.reply) << 8) |
         (c.opt.no_flow_control ? 1u << 10 : 0) | (c.opt.emb ? 1u << 11 : 0) |
         (static_cast<uint32_t>(c.opt.emb_colour & 15) << 12) | (c.opt.schedule ? 1u << 16 : 0) |
         (more ? 1u << 17 : 0);
}

void put32(std::vector<uint8_t>& o, uint32_t v) {
  o.push_back(static_cast<uint8_t>(v >> 24));
  o.push_back(static_cast<uint8_t>(v >> 16));
  o.push_back(static_cast<uint8_t>(v >> 8));
  o.push_back(static_cast<uint8_t>(v));
}
void put16(std::vector<uint8_t>& o, uint32_t v) {
  o.push_back(static_cast<uint8_t>(v >> 8));
  o.push_back(static_cast<uint8_t>(v));
}
void put48(std::vector<uint8_t>& o, uint64_t v) {
  for (int i = 5; i >= 0; --i) o.push_back(static_cast<uint8_t>(v >> (8 * i)));
}
uint32_t get32(const uint8_t* p) {
  return (static_cast<uint32_t>(p[0]) << 24) | (static_cast<uint32_t>(p[1]) << 16) |
         (static_cast<uint32_t>(p[2]) << 8) | p[3];
}
uint64_t get48(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 0; i < 6; ++i) v = (v << 8) | p[i];
  return v;
}

}  // namespace

uint32_t command_bytes(const Command& c) {
  const Slot* l = layout(c.cmd);
  if (!l) return 0;
  uint32_t n = 4;
  for (; *l != End; ++l)
    if (*l != S || c.opt.reply != ReplyMode::None) n += 4;
  return n + data_bytes(c);
}

uint32_t packet_bytes(const Packet& p) {
  uint32_t n = kHeaderBytes;
  for (size_t i = 0; i < p.cmds.size(); ++i) {
    if (i) n = (n + 3) & ~3u;
    n += command_bytes(p.cmds[i]);
  }
  return n;
}

bool encodable(const Packet& p) {
  if (packet_bytes(p) > kMaxPacketBytes) return false;
  for (const Command& c : p.cmds) {
    if (!layout(c.cmd) || c.data.size() != data_bytes(c) || c.opt.emb_colour > 15) return false;
    if (c.cmd == Cmd::ZBufPacked && c.flag_value != 1 && c.flag_value != 2 && c.flag_value != 4) return false;
  }
  return true;
}

bool encode(const Packet& p, std::vector<uint8_t>& out) {
  out.clear();
  if (!encodable(p)) return false;
  const uint32_t total = packet_bytes(p);
  out.reserve(total);
  put48(out, p.dst_mac);
  put48(out, p.src_mac);
  put16(out, kEtherType);
  put16(out, total);
  put32(out, p.src_pnode);
  out.push_back(p.reserved);
  out.push_back(p.end_p);
  out.push_back(p.ctrl_p);
  out.push_back(p.recv_p);
  put32(out, p.src_ptask);
  put32(out, p.src_key);
  put32(out, p.dst_ptask);
  put32(out, p.dst_key);
  for (size_t i = 0; i < p.cmds.size(); ++i) {
    while (i && out.size() % 4) out.push_back(0);
    Command c = p.cmds[i];  // a copy: field() needs a mutable reference
    put32(out, word_of(c, i + 1 < p.cmds.size()));
    for (const Slot* l = layout(c.cmd); *l != End; ++l)
      if (*l != S || c.opt.reply != ReplyMode::None) put32(out, field(c, *l));
    out.insert(out.end(), c.data.begin(), c.data.end());
  }
  return out.size() == total;
}

DecodeError decode(const uint8_t* b, size_t n, Packet& p, std::string* why) {
  auto fail = [&](DecodeError e, const std::string& msg) {
    if (why) *why = msg;
    return e;
  };
  p = Packet{};
  if (n < kHeaderBytes) return fail(DecodeError::Truncated, "shorter than the 40-byte header");
  if (((b[12] << 8) | b[13]) != kEtherType) return fail(DecodeError::WrongType, "packet type is not MBCF/Ether");
  const uint32_t total = (b[14] << 8) | b[15];
  if (total < kHeaderBytes || total > n || total > kMaxPacketBytes)
    return fail(DecodeError::LengthMismatch, "total length " + std::to_string(total) + " with a frame of " + std::to_string(n));
  p.dst_mac = get48(b);
  p.src_mac = get48(b + 6);
  p.src_pnode = get32(b + 16);
  p.reserved = b[20];
  p.end_p = b[21];
  p.ctrl_p = b[22];
  p.recv_p = b[23];
  p.src_ptask = get32(b + 24);
  p.src_key = get32(b + 28);
  p.dst_ptask = get32(b + 32);
  p.dst_key = get32(b + 36);
  uint32_t at = kHeaderBytes;
  bool more = at < total;
  while (more) {
    if (p.cmds.size() > 0) {
      while (at % 4) {
        if (at >= total) return fail(DecodeError::Truncated, "padding runs past the end");
        if (b[at] != 0) return fail(DecodeError::BadAlignment, "non-zero padding at byte " + std::to_string(at));
        ++at;
      }
    }
    if (at + 4 > total) return fail(DecodeError::Truncated, "command word past the end at byte " + std::to_string(at));
    const uint32_t w = get32(b + at);
    at += 4;
    const uint8_t code = w & 0xFF;
    if (!known(code)) return fail(DecodeError::UnknownCommand, "unknown command code " + std::to_string(code));
    if (w >> 18) return fail(DecodeError::BadAlignment, "reserved command-word bits set");
    Command c;
    c.cmd = static_cast<Cmd>(code);
    const uint32_t rm = (w >> 8) & 3;
    if (rm > 2) return fail(DecodeError::UnknownCommand, "unknown reply mode");
    c.opt.reply = static_cast<ReplyMode>(rm);
    c.opt.no_flow_control = (w >> 10) & 1;
    c.opt.emb = (w >> 11) & 1;
    c.opt.emb_colour = (w >> 12) & 15;
    c.opt.schedule = (w >> 16) & 1;
    more = (w >> 17) & 1;
    for (const Slot* l = layout(c.cmd); *l != End; ++l) {
      if (*l == S && c.opt.reply == ReplyMode::None) continue;
      if (at + 4 > total) return fail(DecodeError::Truncated, std::string(to_string(c.cmd)) + " parameters run past the end");
      field(c, *l) = get32(b + at);
      at += 4;
    }
    if (c.cmd == Cmd::ZBufPacked && c.flag_value != 1 && c.flag_value != 2 && c.flag_value != 4)
      return fail(DecodeError::BadLength, "ZBUF_PACKED element size " + std::to_string(c.flag_value));
    const uint64_t d = c.cmd == Cmd::ZBufPacked ? static_cast<uint64_t>(c.length) * (4 + c.flag_value) : data_bytes(c);
    if (d > total - at)
      return fail(DecodeError::Truncated, std::string(to_string(c.cmd)) + " data of " + std::to_string(d) + " bytes runs past the end");
    c.data.assign(b + at, b + at + d);
    at += static_cast<uint32_t>(d);
    p.cmds.push_back(std::move(c));
    if (!more && at != total)
      return fail(DecodeError::LengthMismatch, "total length " + std::to_string(total) + " but the commands end at " + std::to_string(at));
  }
  if (p.cmds.empty() && !(p.ctrl_p & kAckOnly))
    return fail(DecodeError::Truncated, "no command in a packet that is not a bare acknowledgement");
  return DecodeError::None;
}

}  // namespace mbpsim::mbcf
