#include "models/mbp2/inet.h"

#include <algorithm>

#include "models/core/bytes.h"
#include "models/core/error.h"
#include "models/mbcf/packet.h"

namespace mbpsim::mbp2 {

namespace {
constexpr uint32_t kEth = 14;
}  // namespace

uint16_t ether_type(const std::vector<uint8_t>& f) { return f.size() < kEth ? 0 : static_cast<uint16_t>(load_be16(&f[12])); }

uint32_t ip_of(uint32_t pnode) { return 10u << 24 | (pnode & 0xffff); }

uint32_t ones_sum(const uint8_t* p, uint32_t n, uint32_t sum) {
  uint64_t s = sum;
  uint32_t i = 0;
  for (; i + 1 < n; i += 2) s += load_be16(p + i);
  if (i < n) s += static_cast<uint32_t>(p[i]) << 8;
  while (s >> 16) s = (s & 0xffff) + (s >> 16);
  return static_cast<uint32_t>(s);
}

uint16_t fold(uint32_t sum) {
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return static_cast<uint16_t>(sum);
}

uint32_t inet_header_bytes(uint8_t proto) { return kEth + kIpHeader + (proto == kIpProtoTcp ? kTcpHeader : kUdpHeader); }

const char* to_string(InetError e) {
  switch (e) {
    case InetError::None: return "none";
    case InetError::Truncated: return "truncated";
    case InetError::BadIpHeader: return "bad IP header";
    case InetError::Fragment: return "fragment";
    case InetError::BadIpChecksum: return "bad IP header checksum";
    case InetError::UnknownProto: return "unknown protocol";
    case InetError::BadLength: return "bad length";
    case InetError::BadChecksum: return "bad checksum";
  }
  return "?";
}

namespace {
// The pseudo-header's sum (RFC 768, RFC 793): addresses, protocol, transport length.
uint32_t pseudo_sum(const uint8_t* ip, uint32_t l4_len) {
  uint32_t s = ones_sum(ip + 12, 8);
  s += ip[9];
  s += l4_len;
  return s;
}
}  // namespace

std::vector<uint8_t> build_inet(const Datagram& d, const uint8_t* payload, uint32_t n) {
  if (d.proto != kIpProtoUdp && d.proto != kIpProtoTcp) internal_error("build_inet: not UDP or TCP");
  const uint32_t l4h = d.proto == kIpProtoTcp ? kTcpHeader : kUdpHeader;
  const uint32_t ip_len = kIpHeader + l4h + n;
  if (ip_len > 0xffff) internal_error("build_inet: a datagram longer than IP allows");
  std::vector<uint8_t> f(kEth + ip_len, 0);
  const uint64_t dm = mbcf::mac_of(d.dst_node), sm = mbcf::mac_of(d.src_node);
  for (int i = 0; i < 6; ++i) {
    f[i] = static_cast<uint8_t>(dm >> (40 - 8 * i));
    f[6 + i] = static_cast<uint8_t>(sm >> (40 - 8 * i));
  }
  store_be16(&f[12], kEtherTypeIpv4);
  uint8_t* ip = &f[kEth];
  ip[0] = 0x45;
  store_be16(ip + 2, ip_len);
  store_be16(ip + 4, d.ip_id);
  store_be16(ip + 6, 0x4000);  // don't fragment
  ip[8] = 64;
  ip[9] = d.proto;
  store_be32(ip + 12, ip_of(d.src_node));
  store_be32(ip + 16, ip_of(d.dst_node));
  store_be16(ip + 10, static_cast<uint16_t>(~fold(ones_sum(ip, kIpHeader))));
  uint8_t* l4 = ip + kIpHeader;
  store_be16(l4, d.src_port);
  store_be16(l4 + 2, d.dst_port);
  if (d.proto == kIpProtoUdp) {
    store_be16(l4 + 4, l4h + n);
  } else {
    store_be32(l4 + 4, d.seq);
    l4[12] = 5 << 4;
    l4[13] = 0x18;  // PSH | ACK
    store_be16(l4 + 14, 0xffff);
  }
  if (n) std::copy(payload, payload + n, l4 + l4h);
  uint16_t c = l4_checksum(f);
  if (d.proto == kIpProtoUdp && c == 0) c = 0xffff;  // UDP: zero means "no checksum"
  store_be16(l4 + (d.proto == kIpProtoUdp ? 6 : 16), c);
  return f;
}

uint16_t l4_checksum(const std::vector<uint8_t>& f) {
  if (f.size() < kEth + kIpHeader) return 0xffff;
  const uint8_t* ip = &f[kEth];
  const uint32_t ip_len = std::min<uint32_t>(load_be16(ip + 2), static_cast<uint32_t>(f.size() - kEth));
  if (ip_len < kIpHeader) return 0xffff;
  const uint32_t l4_len = ip_len - kIpHeader;
  return static_cast<uint16_t>(~fold(ones_sum(ip + kIpHeader, l4_len, pseudo_sum(ip, l4_len))));
}

bool l4_verifies(const std::vector<uint8_t>& f) {
  if (f.size() >= kEth + kIpHeader + kUdpHeader && f[kEth + 9] == kIpProtoUdp && load_be16(&f[kEth + kIpHeader + 6]) == 0)
    return true;
  return l4_checksum(f) == 0;
}

InetError parse_inet(const std::vector<uint8_t>& f, Parsed& out, bool check_l4) {
  if (f.size() < kEth + kIpHeader) return InetError::Truncated;
  if (ether_type(f) != kEtherTypeIpv4) return InetError::BadIpHeader;
  const uint8_t* ip = &f[kEth];
  if (ip[0] != 0x45) return InetError::BadIpHeader;
  const uint32_t ip_len = load_be16(ip + 2);
  if (ip_len < kIpHeader || kEth + ip_len > f.size()) return InetError::BadIpHeader;
  if ((load_be16(ip + 6) & 0x3fff) != 0) return InetError::Fragment;  // MF set or an offset
  if (fold(ones_sum(ip, kIpHeader)) != 0xffff) return InetError::BadIpChecksum;
  Datagram& d = out.d;
  d.proto = ip[9];
  if (d.proto != kIpProtoUdp && d.proto != kIpProtoTcp) return InetError::UnknownProto;
  const uint32_t l4h = d.proto == kIpProtoTcp ? kTcpHeader : kUdpHeader;
  if (ip_len < kIpHeader + l4h) return InetError::Truncated;
  const uint8_t* l4 = ip + kIpHeader;
  d.src_node = load_be32(ip + 12) & 0xffff;
  d.dst_node = load_be32(ip + 16) & 0xffff;
  d.ip_id = static_cast<uint16_t>(load_be16(ip + 4));
  d.src_port = static_cast<uint16_t>(load_be16(l4));
  d.dst_port = static_cast<uint16_t>(load_be16(l4 + 2));
  if (d.proto == kIpProtoUdp) {
    if (load_be16(l4 + 4) != ip_len - kIpHeader) return InetError::BadLength;
  } else {
    d.seq = load_be32(l4 + 4);
    if ((l4[12] >> 4) != 5) return InetError::BadLength;
  }
  out.payload_off = kEth + kIpHeader + l4h;
  out.payload_len = ip_len - kIpHeader - l4h;
  if (check_l4 && !l4_verifies(f)) return InetError::BadChecksum;
  return InetError::None;
}

}  // namespace mbpsim::mbp2
