// Byte-exact MBCF/Ether packets (thesis 6.1.2, Figures 6.1 and 6.2), 32-bit layout:
//
//   0  destination Ethernet address (6)     6  source Ethernet address (6)
//  12  packet type (2) = kEtherType        14  total packet length in bytes (2)
//  16  source Pnode (4)                     20  reserved (1)
//  21  END_P (1)  22  CTRL_P (1)  23  RECV_P (1)   -- the three Go-back-N protocol bytes
//  24  source Ptask (4)                     28  source task access key (4)
//  32  destination Ptask (4)                36  destination task access key (4)
//  40  command word (4)                     44  parameters (4 each), then data
//
// Multi-byte fields are big-endian (network order; the SuperSPARC is big-endian too). A
// combined packet holds further commands after the first, each starting on a 4-byte boundary
// (the padding is zero), sharing the destination task and key. Parameters per command, in
// order ([status] only when a reply is asked for):
//   WRITE       laddr, length, [status], data            (Fig. 6.1: data at 52 with no reply)
//   WRITE_F     laddr, length, flag laddr, flag value, [status], data
//   READ        laddr, length, read-data laddr, [status]
//   SWAP, FETCH_ADD  laddr, length, read-data laddr, [status], data  (Fig. 6.2a)
//   COMP_SWAP   laddr, length, read-data laddr, [status], reference laddr, reference value, data
//   UPDATE      laddr, length, origin, [status], data
//   INVALIDATE  laddr, origin, [status]
//   FIFO, FIFOe_NORMAL, FIFOe_RETRY  structure laddr, length, [status], data
//   SIGNAL      structure laddr, length, SSP, offset, [status], data
//   ZBUFFER     laddr, length, reference laddr, reference value, [status], data
//   ZBUF_PACKED laddr, count, reference laddr, element size, [status], count x (u32 reference, element)
//   WRITE_TASKQUE  length, [status], data
//   REPLY       status laddr, status, read-data laddr, length, data
//   VIOLATION   status laddr, code, index of the offending command
//   ACK         origin, pages acknowledged
// Command word: bits 0-7 command, 8-9 reply mode, 10 no flow control, 11 elastic memory
// barrier, 12-15 its colour, 16 task scheduling, 17 another command follows; the rest zero.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "models/mbcf/command.h"

namespace mbpsim::mbcf {

constexpr uint16_t kEtherType = 0x88B5;  // IEEE 802 local experimental EtherType
constexpr uint32_t kHeaderBytes = 40;    // up to the command word
constexpr uint32_t kMaxPacketBytes = 1514;  // Ethernet MTU 1500 + 14-byte header (no FCS)

uint64_t mac_of(uint32_t pnode);  // 02:4d:42:00:hh:ll, locally administered

enum class DecodeError : uint8_t {
  None,
  Truncated,       // shorter than a header, or a field runs past the end
  LengthMismatch,  // total length disagrees with the frame
  WrongType,       // not an MBCF/Ether packet
  UnknownCommand,
  BadAlignment,    // non-zero padding or reserved bits: the sender's layout is off
  BadLength,       // a data length that cannot be right for its command
};
const char* to_string(DecodeError e);

// Bytes one command takes (command word, parameters, data), before alignment padding.
uint32_t command_bytes(const Command& c);
// Bytes of the whole packet (the total-length field).
uint32_t packet_bytes(const Packet& p);

// True when encode() would succeed: no more than kMaxPacketBytes, every command encodable.
bool encodable(const Packet& p);
// Appends the packet's bytes to `out` (cleared first). Returns false, leaving `out` empty, if
// the packet would exceed kMaxPacketBytes or a command is not encodable.
bool encode(const Packet& p, std::vector<uint8_t>& out);
// Decodes `n` bytes (an Ethernet frame without preamble and FCS; it may carry padding after
// the total length). Never reads past `n`.
DecodeError decode(const uint8_t* bytes, size_t n, Packet& p, std::string* why = nullptr);

}  // namespace mbpsim::mbcf
