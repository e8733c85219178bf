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
    store_be32(l4 + 8, d.ack);
    l4[12] = 5 << 4;
    l4[13] = d.flags;
    store_be16(l4 + 14, d.window);
  }
  if (n) std::copy(payload, payload + n, l4 + l4h);
  uint16_t c = d.proto == kIpProtoUdp && !d.udp_sum ? 0 : l4_checksum(f);
  if (d.proto == kIpProtoUdp && d.udp_sum && c == 0) c = 0xffff;  // UDP: zero means "no checksum"
  store_be16(l4 + (d.proto == kIpProtoUdp ? 6 : 16), c);
  return f;
}

uint32_t udp_frames(uint32_t n, uint32_t mtu) {
  const uint32_t l4 = kUdpHeader + n;
  if (kIpHeader + l4 <= mtu) return 1;
  const uint32_t q = (mtu - kIpHeader) & ~7u;  // each fragment's piece, but the last
  return (l4 + q - 1) / q;
}

std::vector<std::vector<uint8_t>> fragment_ip(std::vector<uint8_t> whole, uint32_t mtu) {
  if (mtu < kIpHeader + 8) internal_error("fragment_ip: an MTU with no room for a fragment");
  if (whole.size() < kEth + kIpHeader) internal_error("fragment_ip: no IP header");
  std::vector<std::vector<uint8_t>> out;
  const uint32_t l4 = load_be16(&whole[kEth + 2]) - kIpHeader;
  if (kIpHeader + l4 <= mtu) {
    out.push_back(std::move(whole));
    return out;
  }
  const uint32_t q = (mtu - kIpHeader) & ~7u;  // each fragment's piece, but the last
  for (uint32_t off = 0; off < l4; off += q) {
    const uint32_t len = std::min(q, l4 - off);
    std::vector<uint8_t> f(kEth + kIpHeader + len);
    std::copy(whole.begin(), whole.begin() + kEth + kIpHeader, f.begin());
    std::copy(whole.begin() + kEth + kIpHeader + off, whole.begin() + kEth + kIpHeader + off + len, f.begin() + kEth + kIpHeader);
    uint8_t* ip = &f[kEth];
    store_be16(ip + 2, kIpHeader + len);
    store_be16(ip + 6, (off + len < l4 ? 0x2000 : 0) | off / 8);  // MF, offset in 8-byte units
    store_be16(ip + 10, 0);
    store_be16(ip + 10, static_cast<uint16_t>(~fold(ones_sum(ip, kIpHeader))));
    out.push_back(std::move(f));
  }
  return out;
}

uint16_t l4_checksum(const std::vector<uint8_t>& f) {
  if (f.size() < kEth + kIpHeader) return 0xffff;
  const uint8_t* ip = &f[kEth];
  const uint32_t ip_len = std::min<uint32_t>(load_be16(ip + 2), static_cast<uint32_t>(f.size() - kEth));
  if (ip_len < kIpHeader) return 0xffff;
  const uint32_t l4_len = ip_len - kIpHeader;
  return static_cast<uint16_t>(~fold(ones_sum(ip + kIpHeader, l4_len, pseudo_sum(ip, l4_len))));
}

bool udp_summed(const std::vector<uint8_t>& f) {
  return !(f.size() >= kEth + kIpHeader + kUdpHeader && f[kEth + 9] == kIpProtoUdp && load_be16(&f[kEth + kIpHeader + 6]) == 0);
}

bool l4_verifies(const std::vector<uint8_t>& f) { return !udp_summed(f) || l4_checksum(f) == 0; }

namespace {
// An Ethernet frame carrying IPv4 without options whose total length fits the frame: None, and
// that length. (Its header checksum is the caller's to check.)
InetError ip_header(const std::vector<uint8_t>& f, uint32_t* ip_len) {
  if (f.size() < kEth + kIpHeader) return InetError::Truncated;
  if (ether_type(f) != kEtherTypeIpv4 || f[kEth] != 0x45) return InetError::BadIpHeader;
  *ip_len = load_be16(&f[kEth + 2]);
  if (*ip_len < kIpHeader || kEth + *ip_len > f.size()) return InetError::BadIpHeader;
  return InetError::None;
}
}  // namespace

InetError parse_inet(const std::vector<uint8_t>& f, Parsed& out, bool check_l4) {
  uint32_t ip_len = 0;
  if (const InetError e = ip_header(f, &ip_len); e != InetError::None) return e;
  const uint8_t* ip = &f[kEth];
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
    d.ack = load_be32(l4 + 8);
    d.flags = l4[13];
    d.window = static_cast<uint16_t>(load_be16(l4 + 14));
    if ((l4[12] >> 4) != 5) return InetError::BadLength;
  }
  out.payload_off = kEth + kIpHeader + l4h;
  out.payload_len = ip_len - kIpHeader - l4h;
  if (check_l4 && !l4_verifies(f)) return InetError::BadChecksum;
  return InetError::None;
}

bool is_fragment(const std::vector<uint8_t>& f) {
  return f.size() >= kEth + kIpHeader && ether_type(f) == kEtherTypeIpv4 && (load_be16(&f[kEth + 6]) & 0x3fff) != 0;
}

InetError parse_fragment(const std::vector<uint8_t>& f, Fragment& out) {
  uint32_t ip_len = 0;
  if (const InetError e = ip_header(f, &ip_len); e != InetError::None) return e;
  const uint8_t* ip = &f[kEth];
  if (fold(ones_sum(ip, kIpHeader)) != 0xffff) return InetError::BadIpChecksum;
  const uint32_t flags = load_be16(ip + 6);
  out.src_node = load_be32(ip + 12) & 0xffff;
  out.dst_node = load_be32(ip + 16) & 0xffff;
  out.proto = ip[9];
  out.ip_id = static_cast<uint16_t>(load_be16(ip + 4));
  out.offset = (flags & 0x1fff) * 8;
  out.len = ip_len - kIpHeader;
  out.more = (flags & 0x2000) != 0;
  out.data_off = kEth + kIpHeader;
  if (flags & 0x4000) return InetError::BadIpHeader;  // DF with a fragment's fields
  if (out.proto != kIpProtoUdp && out.proto != kIpProtoTcp) return InetError::UnknownProto;
  if (out.offset + out.len > kIpMaxPacket - kIpHeader) return InetError::BadLength;
  if (out.more && (out.len == 0 || out.len % 8)) return InetError::BadLength;
  return InetError::None;
}

Reassembly::Add Reassembly::add(uint32_t offset, uint32_t len, bool more, uint32_t tag) {
  const uint32_t end = offset + len;
  if (last_ && (end > total_ || (!more && end != total_))) return Add::Bad;
  auto it = std::lower_bound(pieces_.begin(), pieces_.end(), offset, [](const Piece& p, uint32_t o) { return p.offset < o; });
  if (it != pieces_.end() && it->offset == offset && it->len == len) return more || last_ ? Add::Duplicate : Add::Bad;
  if (it != pieces_.end() && it->offset < end) return Add::Bad;  // overlaps the next piece
  if (it != pieces_.begin() && std::prev(it)->offset + std::prev(it)->len > offset) return Add::Bad;
  if (!more) {
    for (const Piece& p : pieces_)
      if (p.offset + p.len > end) return Add::Bad;  // a piece lies past the end this one sets
    last_ = true;
    total_ = end;
  }
  pieces_.insert(it, Piece{offset, len, tag});
  held_ += len;
  return complete() ? Add::Complete : Add::Held;
}

bool Reassembly::complete() const { return last_ && held_ == total_; }

std::vector<uint8_t> join_fragments(const std::vector<std::vector<uint8_t>>& frames) {
  if (frames.empty()) internal_error("join_fragments: no fragments");
  uint32_t total = 0;
  for (const auto& f : frames) total += load_be16(&f[kEth + 2]) - kIpHeader;
  std::vector<uint8_t> out(frames[0].begin(), frames[0].begin() + kEth + kIpHeader);
  out.reserve(kEth + kIpHeader + total);
  for (const auto& f : frames) {
    const uint32_t len = load_be16(&f[kEth + 2]) - kIpHeader;
    out.insert(out.end(), f.begin() + kEth + kIpHeader, f.begin() + kEth + kIpHeader + len);
  }
  uint8_t* ip = &out[kEth];
  store_be16(ip + 2, kIpHeader + total);
  store_be16(ip + 6, 0);
  store_be16(ip + 10, 0);
  store_be16(ip + 10, static_cast<uint16_t>(~fold(ones_sum(ip, kIpHeader))));
  return out;
}

}  // namespace mbpsim::mbp2
