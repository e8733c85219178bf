// The Internet packets the MBP2 carries besides MBCF (thesis 8.2, 8.3.3): UDP/IP and TCP/IP
// frames, byte-exact, with real checksums. The PME steers a received one by its port (UDP) or
// connection (TCP) to the PGE, which writes the payload into a receive structure in the host's
// memory; the CSU computes the checksums and the OCU checks TCP's order (csu.h, ocu.h).
//
//    0  Ethernet: destination, source (12), EtherType 0x0800 (2)
//   14  IPv4 (20, no options): 0x45, TOS 0, total length, id, flags DF and no fragment, TTL 64,
//       protocol (17 UDP, 6 TCP), header checksum, source and destination addresses 10.0.h.l
//       (the Pnode, as in mbcf::mac_of)
//   34  UDP (8): ports, length, checksum over the pseudo-header, header and payload
//       TCP (20, no options): ports, sequence, acknowledgement, offset 5, flags (PSH|ACK on a
//       segment with data, ACK alone on a pure acknowledgement), window, checksum (as UDP's),
//       urgent 0
//   .. payload
// A UDP datagram longer than one frame travels in IP fragments (RFC 791): the datagram's IP
// payload (UDP header and data) cut at multiples of 8 bytes, each piece behind a copy of the IP
// header with its offset (in 8-byte units) and the more-fragments flag; the UDP checksum, in
// the first fragment, covers the whole datagram. A datagram that fits one frame is sent whole
// with DF set. TCP segments are never fragmented (the sender sizes them to one frame).
#pragma once
#include <cstdint>
#include <vector>

namespace mbpsim::mbp2 {

constexpr uint16_t kEtherTypeIpv4 = 0x0800;
constexpr uint8_t kIpProtoUdp = 17, kIpProtoTcp = 6;
constexpr uint32_t kIpHeader = 20, kUdpHeader = 8, kTcpHeader = 20;
constexpr uint8_t kTcpPsh = 0x08, kTcpAck = 0x10;  // TCP header flags
// The largest IP packet (its 16-bit total length), and so the largest UDP payload.
constexpr uint32_t kIpMaxPacket = 0xffff, kUdpMaxPayload = kIpMaxPacket - kIpHeader - kUdpHeader;

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
  uint32_t seq = 0;  // TCP only: sequence, acknowledgement, flags, window
  uint32_t ack = 0;
  uint8_t flags = kTcpPsh | kTcpAck;
  uint16_t window = 0xffff;
  uint16_t ip_id = 0;
  bool udp_sum = true;  // UDP only: false sends no checksum (the field 0, RFC 768)
};

// Header bytes before the payload (Ethernet, IP, UDP or TCP).
uint32_t inet_header_bytes(uint8_t proto);
// The frame, checksums filled in.
std::vector<uint8_t> build_inet(const Datagram& d, const uint8_t* payload, uint32_t n);
// The frames that carry a datagram built whole by build_inet when its IP packets may be `mtu`
// bytes at most (1500 less what sealing adds): the datagram itself when it fits, otherwise its
// fragments, in offset order.
std::vector<std::vector<uint8_t>> fragment_ip(std::vector<uint8_t> whole, uint32_t mtu);
// How many frames fragment_ip makes of a UDP datagram of `n` payload bytes.
uint32_t udp_frames(uint32_t n, uint32_t mtu);

// The transport checksum over a frame's pseudo-header, header and payload: 0 when it verifies
// (the checksum field included), or the value to store (the field zero).
uint16_t l4_checksum(const std::vector<uint8_t>& frame);
// True when a received frame's transport checksum verifies (or a UDP sender sent none: zero).
bool l4_verifies(const std::vector<uint8_t>& frame);
// False when a whole UDP datagram's sender sent no checksum (its field 0); a TCP segment always
// carries one.
bool udp_summed(const std::vector<uint8_t>& frame);

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

// ---- reassembly (RFC 791, RFC 815)

// What one fragment's IP header says (parse_fragment): the datagram it belongs to (source,
// destination, protocol, identification), where its piece of the datagram's IP payload goes
// (offset in bytes) and how long it is, and whether more follow.
struct Fragment {
  uint32_t src_node = 0, dst_node = 0;
  uint8_t proto = 0;
  uint16_t ip_id = 0;
  uint32_t offset = 0, len = 0;
  uint32_t data_off = 0;  // where the piece starts in the frame
  bool more = false;
};
// An IPv4 frame whose header says it is a fragment (more-fragments flag or an offset).
bool is_fragment(const std::vector<uint8_t>& frame);
// Checks a frame that parse_inet called a Fragment: the IP header (its checksum included), a
// piece that ends within IP's 65,535 bytes, and a non-final piece of a multiple of 8 bytes
// (never empty). The transport header and checksum are checked on the joined datagram.
InetError parse_fragment(const std::vector<uint8_t>& frame, Fragment& out);

// One datagram's reassembly state: the pieces held (each with the caller's tag: where the
// fragment is), in offset order, and the total once the last piece came.
class Reassembly {
 public:
  enum class Add : uint8_t {
    Held,       // kept; more are needed
    Complete,   // kept; the pieces now cover the whole datagram
    Duplicate,  // the same piece again: not kept (the first copy stays)
    Bad,        // overlaps a piece with other bounds, lies past the end the last piece set, or
                // is a second last piece: the datagram cannot be trusted (drop it all)
  };
  struct Piece {
    uint32_t offset, len;
    uint32_t tag;
  };
  Add add(uint32_t offset, uint32_t len, bool more, uint32_t tag);
  bool complete() const;
  uint32_t total() const { return total_; }  // the IP payload's length (0 until the last piece)
  const std::vector<Piece>& pieces() const { return pieces_; }

 private:
  std::vector<Piece> pieces_;  // by offset, disjoint
  uint32_t total_ = 0;
  bool last_ = false;
  uint32_t held_ = 0;  // bytes held
};

// The datagram the fragments in `frames` (offset order, covering it, each with a valid IP
// header) make: the first one's Ethernet and IP header with the total length, no fragment
// flags and the header checksum made again, then every piece. parse_inet reads it as if it had
// come whole.
std::vector<uint8_t> join_fragments(const std::vector<std::vector<uint8_t>>& frames);

}  // namespace mbpsim::mbp2
