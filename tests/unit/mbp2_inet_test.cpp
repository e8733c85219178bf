// The MBP2's Internet packets and the units that work on them: UDP/IP and TCP/IP frames built
// and parsed byte-exact with real checksums (RFC 1071's known answer), malformed frames refused
// without reading past their end, the CSU's sums and the OCU's order checks.
#include <gtest/gtest.h>

#include <vector>

#include "models/core/stats.h"
#include "models/mbp2/inet.h"
#include "models/mbp2/units.h"
#include "tests/test_util.h"

namespace mbpsim::mbp2 {
namespace {

std::vector<uint8_t> payload(uint32_t n, uint8_t seed) {
  std::vector<uint8_t> p(n);
  for (uint32_t i = 0; i < n; ++i) p[i] = static_cast<uint8_t>(seed + 13 * i);
  return p;
}

Datagram dg(uint8_t proto) {
  Datagram d;
  d.proto = proto;
  d.src_node = 3;
  d.dst_node = 258;
  d.src_port = 5000;
  d.dst_port = 7;
  d.seq = 0xfffffff0u;
  d.ip_id = 99;
  return d;
}

TEST(Inet, OnesComplementSumMatchesRfc1071) {
  // RFC 1071 section 3's example: 00 01 f2 03 f4 f5 f6 f7 sums to dd f2 after the end-around carry.
  const uint8_t b[] = {0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7};
  EXPECT_EQ(fold(ones_sum(b, 8)), 0xddf2);
  const uint8_t odd[] = {0x12, 0x34, 0x56};  // an odd byte is padded with zero
  EXPECT_EQ(fold(ones_sum(odd, 3)), 0x1234 + 0x5600);
}

TEST(Inet, UdpAndTcpFramesRoundTripWithVerifyingChecksums) {
  for (uint8_t proto : {kIpProtoUdp, kIpProtoTcp})
    for (uint32_t n : {0u, 1u, 17u, 1024u, 1472u}) {
      const auto p = payload(n, static_cast<uint8_t>(n));
      const auto f = build_inet(dg(proto), p.data(), n);
      ASSERT_EQ(f.size(), inet_header_bytes(proto) + n);
      EXPECT_EQ(f[12], 0x08);
      EXPECT_EQ(f[13], 0x00);
      EXPECT_EQ(f[14], 0x45);
      EXPECT_EQ(f[23], proto);
      EXPECT_EQ(fold(ones_sum(&f[14], 20)), 0xffff);  // the IP header's checksum verifies
      EXPECT_EQ(l4_checksum(f), 0);
      EXPECT_TRUE(l4_verifies(f));
      Parsed out;
      ASSERT_EQ(parse_inet(f, out), InetError::None) << int(proto) << " " << n;
      EXPECT_EQ(out.d.proto, proto);
      EXPECT_EQ(out.d.src_node, 3u);
      EXPECT_EQ(out.d.dst_node, 258u);
      EXPECT_EQ(out.d.src_port, 5000);
      EXPECT_EQ(out.d.dst_port, 7);
      EXPECT_EQ(out.d.ip_id, 99);
      if (proto == kIpProtoTcp) {
        EXPECT_EQ(out.d.seq, 0xfffffff0u);
      }
      ASSERT_EQ(out.payload_len, n);
      EXPECT_TRUE(std::equal(p.begin(), p.end(), f.begin() + out.payload_off));
      // Ethernet pads short frames: the IP length, not the frame's, bounds the datagram.
      auto padded = f;
      padded.resize(std::max<size_t>(f.size(), 60), 0);
      ASSERT_EQ(parse_inet(padded, out), InetError::None);
      EXPECT_EQ(out.payload_len, n);
    }
}

TEST(Inet, MalformedFramesAreRefusedWithoutReadingPastTheirEnd) {
  const auto p = payload(100, 1);
  const auto f = build_inet(dg(kIpProtoUdp), p.data(), 100);
  Parsed out;
  for (size_t n = 0; n < f.size(); ++n) {  // every truncation (ASan would catch a read past the end)
    std::vector<uint8_t> t(f.begin(), f.begin() + static_cast<long>(n));
    EXPECT_NE(parse_inet(t, out), InetError::None) << n;
  }
  auto bad = f;
  bad[14 + 20 + 8 + 50] ^= 0x40;  // a payload bit
  EXPECT_EQ(parse_inet(bad, out), InetError::BadChecksum);
  EXPECT_FALSE(l4_verifies(bad));
  EXPECT_EQ(parse_inet(bad, out, false), InetError::None);  // the CSU's result is used instead
  bad = f;
  bad[14 + 8] ^= 1;  // TTL: the header checksum catches it
  EXPECT_EQ(parse_inet(bad, out), InetError::BadIpChecksum);
  auto refix = [](std::vector<uint8_t> g) {  // recompute the IP header checksum after an edit
    g[24] = g[25] = 0;
    const uint16_t c = static_cast<uint16_t>(~fold(ones_sum(&g[14], 20)));
    g[24] = static_cast<uint8_t>(c >> 8);
    g[25] = static_cast<uint8_t>(c);
    return g;
  };
  bad = f;
  bad[14 + 6] |= 0x20;  // more fragments
  EXPECT_EQ(parse_inet(refix(bad), out), InetError::Fragment);
  bad = f;
  bad[14 + 9] = 1;  // ICMP
  EXPECT_EQ(parse_inet(refix(bad), out), InetError::UnknownProto);
  bad = f;
  bad[14] = 0x46;  // IP options
  EXPECT_EQ(parse_inet(refix(bad), out), InetError::BadIpHeader);
  bad = f;
  bad[17] = static_cast<uint8_t>(bad[17] + 1);  // IP total length past the frame
  EXPECT_EQ(parse_inet(refix(bad), out), InetError::BadIpHeader);
  bad = f;
  bad[14 + 20 + 5] ^= 4;  // UDP length disagrees with IP's
  EXPECT_EQ(parse_inet(bad, out), InetError::BadLength);
  // A UDP sender may send no checksum (zero).
  bad = f;
  bad[14 + 20 + 6] = bad[14 + 20 + 7] = 0;
  EXPECT_EQ(parse_inet(bad, out), InetError::None);
}

TEST(Mbp2Csu, SumsWhatStreamsAndCatchesAnAlteredByte) {
  Stats st;
  Csu csu(st, "csu");
  const auto p = payload(512, 9);
  auto f = build_inet(dg(kIpProtoTcp), p.data(), 512);
  EXPECT_EQ(csu.transmit(f), 0);  // the checksum field already holds the sum: verifies
  EXPECT_TRUE(csu.receive(f));
  f[100] ^= 0x01;
  EXPECT_FALSE(csu.receive(f));
  EXPECT_EQ(test::stat_value(st, "csu.tx"), 1);
  EXPECT_EQ(test::stat_value(st, "csu.rx"), 2);
  EXPECT_EQ(test::stat_value(st, "csu.bad"), 1);
  EXPECT_EQ(test::stat_value(st, "csu.bytes"), 3.0 * f.size());
}

TEST(Mbp2Ocu, ComparesSequenceNumbersInTheirWrappingSpace) {
  Stats st;
  Ocu ocu(4, st, "ocu");
  ocu.arm(2, 0xffffff00u);
  EXPECT_EQ(ocu.check(2, 0xffffff00u), Ocu::Order::InOrder);
  ocu.advance(2, 0x00000010u);  // wrapped past zero
  EXPECT_EQ(ocu.check(2, 0xfffffff0u), Ocu::Order::Duplicate);
  EXPECT_EQ(ocu.check(2, 0x00000010u), Ocu::Order::InOrder);
  EXPECT_EQ(ocu.check(2, 0x00000400u), Ocu::Order::Gap);
  EXPECT_EQ(ocu.expected(2), 0x10u);
  EXPECT_THROW(ocu.check(4, 0), std::out_of_range);  // no such register
  EXPECT_EQ(test::stat_value(st, "ocu.in_order"), 2);
  EXPECT_EQ(test::stat_value(st, "ocu.duplicates"), 1);
  EXPECT_EQ(test::stat_value(st, "ocu.gaps"), 1);
}

}  // namespace
}  // namespace mbpsim::mbp2

namespace mbpsim::mbp2 {
namespace {

// The frame fuzzer's seed corpus (tests/fuzz/corpus/inet) holds a UDP and a TCP frame of a few
// sizes that parse, so the fuzzer starts past the header checks. MBPSIM_REGEN_CORPUS=1 rewrites it.
TEST(Inet, FuzzCorpusFramesParse) {
  namespace fs = std::filesystem;
  const fs::path dir = test::fuzz_corpus("inet");
  if (test::regen_corpus()) {
    fs::create_directories(dir);
    for (uint8_t proto : {kIpProtoUdp, kIpProtoTcp})
      for (uint32_t n : {0u, 1u, 64u, 1000u}) {
        const auto p = payload(n, 7);
        const auto f = build_inet(dg(proto), p.data(), n);
        test::write_text(dir / ((proto == kIpProtoUdp ? "udp-" : "tcp-") + std::to_string(n) + ".bin"),
                         std::string(f.begin(), f.end()));
      }
  }
  size_t n = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string s = test::read_text(e.path());
    Parsed p;
    EXPECT_EQ(parse_inet(std::vector<uint8_t>(s.begin(), s.end()), p, true), InetError::None) << e.path();
    ++n;
  }
  EXPECT_EQ(n, 8u);
}

}  // namespace
}  // namespace mbpsim::mbp2
