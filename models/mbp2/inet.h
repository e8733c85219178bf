// The Internet packets the MBP2 carries besides MBCF (thesis 8.2, 8.3.3): UDP/IP and TCP/IP
// frames, byte-exact, with real checksums. The PME steers a received one by its port (UDP) or
// connection (TCP) to the PGE, which writes the payload into a receive structure in the host's
// memory; the CSU computes the checksums and the OCU checks TCP's order (units.h).
//
//    0  Ethernet: destination, source (12), EtherType 0x0800 (2)
//   14  IPv4 (20, no options): 0x45, TOS 0, total length, id, flags DF and no fragment, TTL 64,
//       protocol (17 UDP, 6 TCP), header checksum, source and destination addresses 10.0.h.l
//       (the Pnode, as in mbcf::mac_of)
//   34  UDP (8): ports, length, checksum over the pseudo-header, header and payload
//       TCP (20, no options): ports, sequence, acknowledgement, offset 5, flags PSH|ACK,
//       window, checksum (as UDP's), urgent 0
//   .. payload
// Fragmentation is not modelled: a datagram fits one frame (the sender refuses larger ones).
#pragma once
#include <cstdint>
#include <vector>

namespace mbpsim::mbp2 {

constexpr uint16_t kEtherTypeIpv4 = 0x0800;
constexpr uint8_t kIpProtoUdp = 17, kIpProtoTcp = 6;
constexpr uint32_t kIpHeader = 20, kUdpHeader = 8, kTcpHeader = 20;

uint32_t ip_of(uint32_t pnode);  // 10.0.h.l
// A frame's EtherType (0 when shorter than an Ethernet header).
uint16_t ether_type(const std::vector<uint8_t>& frame);

// RFC 1071: the one's-complement sum of 16-bit big-endian words (an odd last byte padded with
// zero), folded to 16 bits; `sum` carries a partial sum in.
uint32_t ones_sum(const uint8_t* p, uint32_t n, uint32_t sum = 0);
uint16_t fold(uint32_t sum);

struct Datagram {
  uint8_t proto = kIpProtoUdp;
  uint32_t src_node = 0, dst_node = 0;
  uint16_t src_port = 0, dst_port = 0;
  uint32_t seq = 0;  // TCP only
  uint16_t ip_id = 0;
};

// Header bytes before the payload (Ethernet, IP, UDP or TCP).
uint32_t inet_header_bytes(uint8_t proto);
// The frame, checksums filled in.
std::vector<uint8_t> build_inet(const Datagram& d, const uint8_t* payload, uint32_t n);
// The transport checksum over a frame's pseudo-header, header and payload: 0 when it verifies
// (the checksum field included), or the value to store (the field zero).
uint16_t l4_checksum(const std::vector<uint8_t>& frame);
// True when a received frame's transport checksum verifies (or a UDP sender sent none: zero).
bool l4_verifies(const std::vector<uint8_t>& frame);

enum class InetError : uint8_t {
  None,
  Truncated,      // shorter than its headers
  BadIpHeader,    // not IPv4 without options, or a total length that disagrees with the frame
  Fragment,       // a fragment (not reassembled)
  BadIpChecksum,
  UnknownProto,   // neither UDP nor TCP
  BadLength,      // UDP length disagrees with the IP length, or a TCP offset with options
  BadChecksum,    // transport checksum
};
const char* to_string(InetError e);

struct Parsed {
  Datagram d;
  uint32_t payload_off = 0, payload_len = 0;
};
// Checks and splits a frame; never reads past its end. `check_l4` false skips the transport
// checksum (the CSU's result is used instead).
InetError parse_inet(const std::vector<uint8_t>& frame, Parsed& out, bool check_l4 = true);

}  // namespace mbpsim::mbp2
