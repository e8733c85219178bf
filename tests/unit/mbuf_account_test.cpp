// SunOS 4.1.4's socket-buffer storage accounting (models/sockets/mbuf_account.h): what sosend
// and the LANCE driver make of a write and a frame, and what sbspace's second term charges.
#include <gtest/gtest.h>

#include "models/sockets/mbuf_account.h"

namespace {

using mbpsim::sockets::MbufAccount;
namespace mbuf = mbpsim::sockets::mbuf;

// A write of 512 bytes or more takes a cluster and charges its space a whole one: 1152 bytes of
// storage for 512 of data, so seven such writes leave a 4 KB send buffer 128 bytes of room, not
// the 512 its byte count says; the eighth is cut to what that room takes, in small mbufs.
TEST(MbufAccount, AWriteOf512BytesTakesAClusterAndChargesMoreThanTwiceItsData) {
  MbufAccount sb(4096);
  EXPECT_EQ(sb.mbmax(), 8192u);
  for (int i = 0; i < 7; ++i) {
    uint32_t taken = 0;
    const auto chain = MbufAccount::sosend_chain(512, sb.room(), taken);
    ASSERT_EQ(chain.size(), 1u);
    EXPECT_TRUE(chain[0].cluster);
    EXPECT_EQ(taken, 512u);
    sb.append(chain);
  }
  EXPECT_EQ(sb.mbcnt(), 7u * 1152u);
  EXPECT_EQ(sb.room(), 128);
  uint32_t taken = 0;
  const auto chain = MbufAccount::sosend_chain(512, sb.room(), taken);
  EXPECT_EQ(taken, 128u);  // 112 + 16 in small mbufs
  ASSERT_EQ(chain.size(), 2u);
  EXPECT_FALSE(chain[0].cluster);
  EXPECT_EQ(chain[0].len, mbuf::kMlen);
}

// Below the threshold a write goes into small mbufs (511 bytes: five, 640 bytes of storage), and
// small writes are packed into the last small mbuf by sbcompress: 28 writes of 4 bytes fill one.
TEST(MbufAccount, ShortWritesGoIntoSmallMbufsThatSbcompressPacks) {
  uint32_t taken = 0;
  const auto chain = MbufAccount::sosend_chain(511, 4096, taken);
  EXPECT_EQ(taken, 511u);
  EXPECT_EQ(chain.size(), 5u);
  MbufAccount a(4096);
  a.append(chain);
  EXPECT_EQ(a.mbcnt(), 5u * 128u);

  MbufAccount b(4096);
  for (int i = 0; i < 28; ++i) b.append(MbufAccount::sosend_chain(4, b.room(), taken));
  EXPECT_EQ(b.mbcnt(), 128u);
  b.append(MbufAccount::sosend_chain(4, b.room(), taken));
  EXPECT_EQ(b.mbcnt(), 256u);
}

// The LANCE driver loans a frame longer than MLEN as one cluster-type mbuf (a 512-byte segment
// costs the receive buffer 1152) and copies a short one into small mbufs, which pack.
TEST(MbufAccount, AReceivedSegmentIsALoanedClusterOrPackedSmallMbufs) {
  MbufAccount rcv(4096);
  rcv.append(MbufAccount::rx_chain(40 + 512, 512, mbuf::kMlen));
  EXPECT_EQ(rcv.mbcnt(), 1152u);
  rcv.append(MbufAccount::rx_chain(40 + 73, 73, mbuf::kMlen));  // 113 bytes of IP: loaned too
  EXPECT_EQ(rcv.mbcnt(), 2u * 1152u);

  MbufAccount small(4096);
  small.append(MbufAccount::rx_chain(40 + 20, 20, mbuf::kMlen));
  small.append(MbufAccount::rx_chain(40 + 20, 20, mbuf::kMlen));  // 76 + 20 + 20 <= MMAXOFF: packed
  EXPECT_EQ(small.mbcnt(), 128u);
  small.append(MbufAccount::rx_chain(40 + 20, 20, mbuf::kMlen));
  EXPECT_EQ(small.mbcnt(), 256u);
  const auto two = MbufAccount::rx_chain(40 + 70, 70, mbuf::kMlen);  // 110 bytes: 88 in the first mbuf, 22 in a second
  ASSERT_EQ(two.size(), 2u);
  EXPECT_EQ(two[0].len, 48u);
  EXPECT_EQ(two[1].len, 22u);
}

// A driver that loans every frame up (sockets.driver_rx_copy_max 0, the SBus FastEthernet card
// as Solaris's hmeread does it) charges even a 20-byte segment a whole cluster; a threshold
// between copies up to it and loans above it.
TEST(MbufAccount, ADriverThatLoansEveryFrameChargesASmallSegmentACluster) {
  MbufAccount rcv(4096);
  const auto one = MbufAccount::rx_chain(40 + 20, 20, 0);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_TRUE(one[0].cluster);
  rcv.append(one);
  rcv.append(MbufAccount::rx_chain(40 + 20, 20, 0));  // clusters never pack
  EXPECT_EQ(rcv.mbcnt(), 2u * 1152u);
  EXPECT_FALSE(MbufAccount::rx_chain(64, 24, 64)[0].cluster);  // at the threshold: copied
  EXPECT_TRUE(MbufAccount::rx_chain(65, 25, 64)[0].cluster);   // one byte over it: loaned
  EXPECT_TRUE(MbufAccount::rx_chain(40, 0, 0).empty());        // no data, nothing appended
}

// sbappendaddr: a record's address mbuf is never packed into the record before, but a short
// datagram's data is packed into its own address mbuf (128 bytes a record); dropping a record
// whole gives its charge back. SB_MAX caps the storage at 64 KB.
TEST(MbufAccount, ADatagramRecordStartsWithItsAddressAndPacksItsShortData) {
  MbufAccount sb(41600);
  EXPECT_EQ(sb.mbmax(), 65536u);
  for (int i = 0; i < 3; ++i) {
    std::vector<MbufAccount::Mbuf> rec{{mbuf::kMminoff, mbuf::kSockaddr, false}};
    for (const auto& m : MbufAccount::rx_chain(32, 4, mbuf::kMlen, mbuf::kUdpIpHdr)) rec.push_back(m);
    sb.append(rec, true);
    EXPECT_EQ(sb.mbcnt(), 128u * (i + 1));
  }
  sb.drop(20);
  EXPECT_EQ(sb.mbcnt(), 256u);
}

// sbdrop: a part of an mbuf only shortens it; an mbuf consumed whole gives its charge back.
TEST(MbufAccount, DroppingDataFreesOnlyWholeMbufs) {
  MbufAccount sb(4096);
  uint32_t taken = 0;
  sb.append(MbufAccount::sosend_chain(1024, 4096, taken));
  sb.append(MbufAccount::sosend_chain(1024, 4096, taken));
  EXPECT_EQ(sb.mbcnt(), 2304u);
  sb.drop(1000);
  EXPECT_EQ(sb.mbcnt(), 2304u);
  sb.drop(24);
  EXPECT_EQ(sb.mbcnt(), 1152u);
  sb.drop(5000);
  EXPECT_EQ(sb.mbcnt(), 0u);
}

// soreceive's loop visits every mbuf a read takes data from: span counts them from the front,
// a partly read mbuf included, and nothing for no bytes.
TEST(MbufAccount, SpanCountsTheMbufsTheFirstBytesLieIn) {
  MbufAccount sb(4096);
  uint32_t taken = 0;
  sb.append(MbufAccount::sosend_chain(1408, 4096, taken));  // a cluster of 1024, then 112, 112, 112, 48
  EXPECT_EQ(taken, 1408u);
  EXPECT_EQ(sb.span(0), 0u);
  EXPECT_EQ(sb.span(1), 1u);
  EXPECT_EQ(sb.span(1024), 1u);
  EXPECT_EQ(sb.span(1025), 2u);
  EXPECT_EQ(sb.span(1408), 5u);
  EXPECT_EQ(sb.span(100000), 5u);
  sb.drop(1030);  // the cluster freed, the next small mbuf shortened
  EXPECT_EQ(sb.span(106), 1u);
  EXPECT_EQ(sb.span(107), 2u);
}

// tcp_output's m_copy of a segment's data, from an offset into the send buffer, makes one mbuf
// for each mbuf the range touches (the driver maps or copies that many: sockets.driver_max_maps).
TEST(MbufAccount, SpanFromAnOffsetCountsTheMbufsARangeTouches) {
  MbufAccount sb(4096);
  uint32_t taken = 0;
  sb.append(MbufAccount::sosend_chain(1408, 4096, taken));  // 1024 | 112 | 112 | 112 | 48
  EXPECT_EQ(sb.span(0, 0), 0u);
  EXPECT_EQ(sb.span(500, 0), 0u);
  EXPECT_EQ(sb.span(0, 1024), 1u);
  EXPECT_EQ(sb.span(1000, 24), 1u);
  EXPECT_EQ(sb.span(1000, 25), 2u);
  EXPECT_EQ(sb.span(1024, 112), 1u);
  EXPECT_EQ(sb.span(1024, 113), 2u);
  EXPECT_EQ(sb.span(1100, 300), 4u);
  EXPECT_EQ(sb.span(0, 1408), 5u);
  EXPECT_EQ(sb.span(1400, 100), 1u);  // past the end: what there is
  EXPECT_EQ(sb.span(0, 1408), sb.span(1408));
}

}  // namespace
