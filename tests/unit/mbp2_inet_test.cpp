// The MBP2's Internet packets and the units that work on them: UDP/IP and TCP/IP frames built
// and parsed byte-exact with real checksums (RFC 1071's known answer), malformed frames refused
// without reading past their end, the CSU's sums and the OCU's order checks.
#include <gtest/gtest.h>

#include <vector>

#include "models/core/rng.h"
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
  d.ack = 0x12345678u;
  d.flags = kTcpAck;
  d.window = 0x2a00;
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
        EXPECT_EQ(out.d.ack, 0x12345678u);
        EXPECT_EQ(out.d.flags, kTcpAck);
        EXPECT_EQ(out.d.window, 0x2a00);
        EXPECT_EQ(f[14 + 20 + 13], kTcpAck);  // on the wire, where RFC 793 puts them
        EXPECT_EQ(f[14 + 20 + 8], 0x12);
        EXPECT_EQ(f[14 + 20 + 14], 0x2a);
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

// RFC 768: a UDP sender may send no checksum, a zero field; then any payload verifies (SunOS
// 4.1.4's default, sockets.udp_cksum false). A summed datagram with an altered byte does not; a
// TCP segment always carries its sum.
TEST(Inet, AUdpSenderMaySendNoChecksum) {
  const auto p = payload(100, 9);
  Datagram d = dg(kIpProtoUdp);
  d.udp_sum = false;
  auto none = build_inet(d, p.data(), 100);
  EXPECT_EQ(none[14 + 20 + 6], 0);
  EXPECT_EQ(none[14 + 20 + 7], 0);
  EXPECT_FALSE(udp_summed(none));
  none[14 + 28 + 50] ^= 0x5a;
  EXPECT_TRUE(l4_verifies(none));
  Parsed out;
  EXPECT_EQ(parse_inet(none, out), InetError::None);
  auto summed = build_inet(dg(kIpProtoUdp), p.data(), 100);
  EXPECT_TRUE(udp_summed(summed));
  summed[14 + 28 + 50] ^= 0x5a;
  EXPECT_FALSE(l4_verifies(summed));
  EXPECT_EQ(parse_inet(summed, out), InetError::BadChecksum);
  EXPECT_EQ(parse_inet(summed, out, false), InetError::None);  // a receiver that checks nothing
  Datagram t = dg(kIpProtoTcp);
  t.udp_sum = false;  // UDP's alone
  const auto seg = build_inet(t, p.data(), 100);
  EXPECT_TRUE(udp_summed(seg));
  EXPECT_EQ(l4_checksum(seg), 0);
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

// ---- IP fragmentation and reassembly (RFC 791, RFC 815)

// Every fragment of a datagram longer than the MTU: an IP packet within it, a piece at a
// multiple of 8 bytes, the pieces back to back, the last without MF; the UDP header and its
// checksum in the first only. Joined in any order of arrival, they make the datagram again.
TEST(Inet, ADatagramCutIntoFragmentsJoinsBackWhateverTheOrderTheyCome) {
  for (uint32_t mtu : {1500u, 1500u - 44u, 576u})
    for (uint32_t n : {1473u, 2952u, 2953u, 8192u, kUdpMaxPayload}) {
      SCOPED_TRACE("mtu " + std::to_string(mtu) + " payload " + std::to_string(n));
      const auto p = payload(n, static_cast<uint8_t>(n));
      const auto whole = build_inet(dg(kIpProtoUdp), p.data(), n);
      const auto frames = fragment_ip(whole, mtu);
      ASSERT_EQ(frames.size(), udp_frames(n, mtu));
      ASSERT_GT(frames.size(), 1u);
      uint32_t next = 0;
      for (size_t i = 0; i < frames.size(); ++i) {
        const auto& f = frames[i];
        EXPECT_LE(f.size(), 14 + mtu);
        Parsed pp;
        EXPECT_EQ(parse_inet(f, pp), InetError::Fragment);
        EXPECT_TRUE(is_fragment(f));
        Fragment fr;
        ASSERT_EQ(parse_fragment(f, fr), InetError::None) << i;
        EXPECT_EQ(fr.offset, next);
        EXPECT_EQ(fr.offset % 8, 0u);
        EXPECT_EQ(fr.more, i + 1 < frames.size());
        EXPECT_EQ(fr.ip_id, 99);
        EXPECT_EQ(fr.src_node, 3u);
        EXPECT_EQ(fr.dst_node, 258u);
        EXPECT_EQ(fr.proto, kIpProtoUdp);
        next += fr.len;
      }
      EXPECT_EQ(next, kUdpHeader + n);
      // Arrival in a shuffled order (seeded; the seed is in the trace): complete only with the
      // last piece to come, and the join is the datagram parse_inet accepts, payload intact.
      for (uint64_t seed : {1u, 2u, 3u}) {
        SCOPED_TRACE("seed " + std::to_string(seed));
        Rng rng(seed, "fragments");
        std::vector<uint32_t> order(frames.size());
        for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
        for (uint32_t i = static_cast<uint32_t>(order.size()); i > 1; --i) std::swap(order[i - 1], order[rng.next() % i]);
        Reassembly r;
        for (size_t k = 0; k < order.size(); ++k) {
          Fragment fr;
          ASSERT_EQ(parse_fragment(frames[order[k]], fr), InetError::None);
          EXPECT_EQ(r.add(fr.offset, fr.len, fr.more, order[k]), k + 1 < order.size() ? Reassembly::Add::Held : Reassembly::Add::Complete);
        }
        std::vector<std::vector<uint8_t>> in_order;
        for (const auto& pc : r.pieces()) in_order.push_back(frames[pc.tag]);
        const auto joined = join_fragments(in_order);
        Parsed pp;
        ASSERT_EQ(parse_inet(joined, pp), InetError::None);
        EXPECT_EQ(std::vector<uint8_t>(joined.begin() + pp.payload_off, joined.end()), p);
        EXPECT_EQ(r.total(), kUdpHeader + n);
      }
    }
}

TEST(Inet, ADatagramThatFitsOneFrameIsSentWholeWithDontFragment) {
  const auto p = payload(1472, 1);
  const auto whole = build_inet(dg(kIpProtoUdp), p.data(), 1472);
  const auto frames = fragment_ip(whole, 1500);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0], whole);
  EXPECT_EQ(whole[14 + 6], 0x40);  // DF
  EXPECT_FALSE(is_fragment(whole));
  EXPECT_EQ(udp_frames(1472, 1500), 1u);
  EXPECT_EQ(udp_frames(1473, 1500), 2u);
  EXPECT_EQ(udp_frames(1472, 1456), 2u);  // less room once sealed
}

// The first copy of a piece stays; a piece that disagrees with what is held (overlapping with
// other bounds, past the end the last piece set, a second end) spoils the datagram.
TEST(Inet, ReassemblyKeepsTheFirstCopyAndRefusesPiecesThatDisagree) {
  using A = Reassembly::Add;
  {
    Reassembly r;
    EXPECT_EQ(r.add(1480, 520, false, 1), A::Held);  // the last first: the total is known
    EXPECT_EQ(r.total(), 2000u);
    EXPECT_EQ(r.add(1480, 520, false, 2), A::Duplicate);
    EXPECT_FALSE(r.complete());
    EXPECT_EQ(r.add(0, 1480, true, 3), A::Complete);
    ASSERT_EQ(r.pieces().size(), 2u);
    EXPECT_EQ(r.pieces()[0].tag, 3u);
    EXPECT_EQ(r.pieces()[1].tag, 1u);
    EXPECT_EQ(r.add(0, 1480, true, 4), A::Duplicate);
  }
  {
    Reassembly r;
    EXPECT_EQ(r.add(0, 1480, true, 0), A::Held);
    EXPECT_EQ(r.add(1472, 16, true, 1), A::Bad);  // overlaps the first piece's end
    EXPECT_EQ(r.add(8, 8, true, 1), A::Bad);      // inside it
    EXPECT_EQ(r.add(0, 8, true, 1), A::Bad);      // same start, other length
  }
  {
    Reassembly r;
    EXPECT_EQ(r.add(1480, 1480, true, 0), A::Held);
    EXPECT_EQ(r.add(0, 1000, false, 1), A::Bad);  // an end before a piece already held
  }
  {
    Reassembly r;
    EXPECT_EQ(r.add(0, 1480, true, 0), A::Held);
    EXPECT_EQ(r.add(2960, 100, false, 1), A::Held);
    EXPECT_EQ(r.add(2960, 200, false, 2), A::Bad);  // a second, different end
    EXPECT_EQ(r.add(4000, 8, true, 2), A::Bad);     // past the end
    EXPECT_EQ(r.add(1480, 1480, true, 2), A::Complete);
  }
}

TEST(Inet, MalformedFragmentsAreRefusedWithoutReadingPastTheirEnd) {
  const auto p = payload(3000, 5);
  const auto frames = fragment_ip(build_inet(dg(kIpProtoUdp), p.data(), 3000), 1500);
  auto refix = [](std::vector<uint8_t> g) {
    g[24] = g[25] = 0;
    const uint16_t c = static_cast<uint16_t>(~fold(ones_sum(&g[14], 20)));
    g[24] = static_cast<uint8_t>(c >> 8);
    g[25] = static_cast<uint8_t>(c);
    return g;
  };
  Fragment fr;
  ASSERT_EQ(parse_fragment(frames[0], fr), InetError::None);
  for (size_t n = 0; n < 34; ++n) {
    const std::vector<uint8_t> t(frames[0].begin(), frames[0].begin() + static_cast<std::ptrdiff_t>(n));
    EXPECT_NE(parse_fragment(t, fr), InetError::None) << n;
  }
  auto bad = frames[0];
  bad[14 + 10] ^= 1;
  EXPECT_EQ(parse_fragment(bad, fr), InetError::BadIpChecksum);
  bad = frames[0];
  bad[16] = 0x05;  // 1296 bytes: a non-final piece of 1276, not a multiple of 8
  bad[17] = 0x10;
  EXPECT_EQ(parse_fragment(refix(bad), fr), InetError::BadLength);
  bad = frames[1];
  bad[14 + 6] = 0x1f;  // offset 8184 * 8: past IP's 65,535 bytes
  bad[14 + 7] = 0xf8;
  EXPECT_EQ(parse_fragment(refix(bad), fr), InetError::BadLength);
  bad = frames[1];
  bad[14 + 6] |= 0x40;  // DF on a fragment
  EXPECT_EQ(parse_fragment(refix(bad), fr), InetError::BadIpHeader);
  bad = frames[1];
  bad[14 + 9] = 1;  // ICMP
  EXPECT_EQ(parse_fragment(refix(bad), fr), InetError::UnknownProto);
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
    // The first and last fragments of a 2000-byte UDP datagram.
    const auto p = payload(2000, 7);
    const auto frags = fragment_ip(build_inet(dg(kIpProtoUdp), p.data(), 2000), 1500);
    for (size_t i = 0; i < frags.size(); ++i)
      test::write_text(dir / ("udp-frag-" + std::to_string(i) + ".bin"), std::string(frags[i].begin(), frags[i].end()));
  }
  size_t n = 0, frags = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string s = test::read_text(e.path());
    const std::vector<uint8_t> f(s.begin(), s.end());
    Parsed p;
    Fragment fr;
    if (e.path().filename().string().find("frag") != std::string::npos) {
      EXPECT_EQ(parse_inet(f, p, true), InetError::Fragment) << e.path();
      EXPECT_EQ(parse_fragment(f, fr), InetError::None) << e.path();
      ++frags;
    } else {
      EXPECT_EQ(parse_inet(f, p, true), InetError::None) << e.path();
    }
    ++n;
  }
  EXPECT_EQ(n, 10u);
  EXPECT_EQ(frags, 2u);
}

}  // namespace
}  // namespace mbpsim::mbp2
