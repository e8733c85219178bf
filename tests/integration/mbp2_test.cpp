// The MBP2 NIC end to end: the MBP2P prototype meets 8.5, writes land real bytes in the
// target task with no work for the receiving host, a store through a foreign doorbell alias faults on the host, a
// TLB miss interrupts the PME once per page, encrypted transfer and the key exchange, the ICU.
// Message passing is in mbp2_msg_test.cpp, the units' data path in mbp2_datapath_test.cpp,
// UDP and TCP under faults in mbp2_tcp_test.cpp; the rig they share in mbp2_rig.h.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "models/mbcf/atomic.h"
#include "models/mbp2/mbp2_cards.h"
#include "sim/runner.h"
#include "tests/test_util.h"
#include "tests/integration/mbp2_rig.h"

namespace mbpsim::mbp2 {
namespace {

TEST(Mbp2, AWriteLandsItsBytesWithNoWorkForTheReceivingHost) {
  Rig r;
  bool returned = false;
  ASSERT_TRUE(r.sys->syscall(0, 1, from_memory(r, 1, write_bytes(0x10100, 1024, 3), 0x10000), [&] { returned = true; }));
  r.run(5);
  EXPECT_TRUE(returned);
  for (uint32_t i = 0; i < 1024; ++i) ASSERT_EQ(r.byte(1, 0x10100 + i), static_cast<uint8_t>(3 + i * 7)) << i;
  EXPECT_EQ(r.sys->host_busy_ps(1), 0u);  // the receiving host copied nothing, took no interrupt
  EXPECT_NEAR(r.sys->host_busy_ps(0) / 1e6, 3.0, 0.3);  // the sender: its structure and doorbell
  EXPECT_EQ(r.cards("host_requests"), 1u);
  // The structure (its header, and the WRITE's command word, address and length) and the
  // payload from its address.
  EXPECT_EQ(r.counter("system.host0.nic.pge.bytes"), Mbp2Nic::kMbcfStructHeader + 12 + 1024u);
  EXPECT_GE(r.counter("system.host1.nic.adma.bytes"), 1024u);
  EXPECT_GE(r.counter("system.host1.nic.biu.dma_bytes"), 1024u);
  EXPECT_GE(r.mbp2->nic(1).pme().interrupts(), 1u);
  EXPECT_GT(r.counter("system.host0.nic.pme.handler.header_build_ps"), 0u);
  EXPECT_GE(r.counter("system.host1.nic.em.mac.bytes"), 1024u);
  EXPECT_GE(r.counter("system.host1.nic.em.host.bytes"), 1024u);
}

TEST(Mbp2, AForeignDoorbellAliasIsRejectedAndNothingIsSent) {
  Rig r;
  const uint32_t other = r.mbp2->nic(0).alias_of(2);
  ASSERT_NE(other, r.mbp2->nic(0).alias_of(1));
  bool returned = false;
  // Task 1 rings through task 2's alias: its MMU maps no such page, the store faults on the
  // host and never reaches the card; the host has paid for the structure's stores.
  ASSERT_TRUE(r.mbp2->nic(0).ring(1, other, Request{1, {write_bytes(0x10100, 64, 9)}}, [&] { returned = true; }));
  r.run(5);
  EXPECT_TRUE(returned);
  EXPECT_EQ(r.cards("rejected_requests"), 1u);
  EXPECT_EQ(r.counter("system.host0.nic.host_requests"), 0u);  // no doorbell store reached the card
  EXPECT_EQ(r.counter("system.host0.nic.uli.doorbells") + r.counter("system.host0.nic.uli.rejected"), 0u);
  EXPECT_EQ(r.counter("system.host0.nic.pge.descriptors"), 0u);
  EXPECT_EQ(r.counter("system.mbcf.packets_sent"), 0u);
  for (uint32_t i = 0; i < 64; ++i) EXPECT_EQ(r.byte(1, 0x10100 + i), 0u);
  // Its own alias works.
  ASSERT_TRUE(r.mbp2->nic(0).ring(1, r.mbp2->nic(0).alias_of(1), Request{1, {write_bytes(0x10100, 64, 9)}}, [] {}));
  r.run(5);
  EXPECT_EQ(r.byte(1, 0x10100), 9u);
}

// EM holds a bounded number of requests taken from doorbells (mbp2.request_slots). The target
// task waits for a page-in and its save area is small, so the window (TH2) fills, requests
// wait in EM, the slots run out and the next doorbell store is retried with the CPU held.
// After the page-in every write lands, in order, and no more requests were ever held than
// there are slots (a breach stops the run as a failure).
TEST(Mbp2, DoorbellsWaitForAFreeRequestSlotAndEveryWriteLandsInOrder) {
  Mbp2Config mc;
  mc.request_slots = 4;
  EtherSysConfig ec;
  ec.th1 = 2;
  ec.th2 = 4;
  ec.page_in_us = 2000;
  ec.save_area = 2;
  Rig r(mc, ec);
  r.sys->swap_out(1, 1, 0x11000);
  sc_core::sc_start(sc_core::SC_ZERO_TIME);
  constexpr uint32_t kWrites = 30;
  r.numbered_writes(kWrites);
  r.run(1);
  EXPECT_LE(r.rung, 1 + 4 + 4 + 2u) << "the CPU went on ringing with every request slot taken";
  EXPECT_GT(r.cards("doorbell_slot_waits"), 0u);
  r.run(200);
  EXPECT_EQ(r.sys->failure(), "") << r.sys->state_dump();
  EXPECT_EQ(r.rung, kWrites);
  for (uint32_t i = 0; i < kWrites; ++i) EXPECT_EQ(r.sys->space(1).load32(r.task(1), 0x11000 + 4 * i), i + 1) << "write " << i;
  EXPECT_TRUE(r.sys->quiet()) << r.sys->state_dump();
}

// The OCU-R checks each MBCF packet's END_P against its peer's register and the receive
// routine takes its verdict. Under loss, duplication and reordering the verdicts drive
// Go-back-N (an online check stops the run if one ever differs from the routine's count) and
// every write lands once, in order.
TEST(Mbp2, TheOcuChecksTheOrderOfMbcfPacketsUnderLossDuplicationAndReordering) {
  EtherSysConfig ec;
  ec.ether.loss = 0.05;
  ec.ether.duplicate = 0.05;
  ec.ether.reorder = 0.05;
  ec.ether.reorder_max_ns = 20000;
  Rig r(Mbp2Config{}, ec);
  constexpr uint32_t kWrites = 200;
  r.numbered_writes(kWrites);
  r.run(2000);
  EXPECT_EQ(r.sys->failure(), "") << r.sys->state_dump();
  for (uint32_t i = 0; i < kWrites; ++i) EXPECT_EQ(r.sys->space(1).load32(r.task(1), 0x11000 + 4 * i), i + 1) << "write " << i;
  EXPECT_GE(r.counter("system.host1.nic.ocu.in_order"), kWrites);
  EXPECT_GT(r.counter("system.host1.nic.ocu.gaps"), 0u);
  EXPECT_GT(r.counter("system.host1.nic.ocu.duplicates"), 0u);
  EXPECT_TRUE(r.sys->quiet()) << r.sys->state_dump();
}

TEST(Mbp2, ATlbMissInterruptsThePmeOncePerPage) {
  Rig r;
  // Two pages of the target: the first write misses on both, the second hits.
  ASSERT_TRUE(r.sys->syscall(0, 1, Request{1, {write_bytes(0x10ff0, 32, 1)}}, [] {}));
  r.run(5);
  const uint64_t m1 = r.counter("system.host1.nic.tlb.misses");
  EXPECT_EQ(m1, 2u);
  const uint64_t pme_before = r.mbp2->nic(1).pme().busy_ps();
  const uint64_t misses0 = r.counter("system.host0.nic.tlb.misses");
  ASSERT_TRUE(r.sys->syscall(0, 1, Request{1, {write_bytes(0x10ff0, 32, 2)}}, [] {}));
  r.run(5);
  EXPECT_EQ(r.counter("system.host1.nic.tlb.misses"), m1);
  EXPECT_EQ(r.counter("system.host0.nic.tlb.misses"), misses0);  // the sender's structure page hits too
  EXPECT_GE(r.counter("system.host1.nic.tlb.hits"), 2u);
  const uint64_t pme_second = r.mbp2->nic(1).pme().busy_ps() - pme_before;
  EXPECT_GT(pme_before, pme_second);  // the first packet's handling included two refills
  EXPECT_EQ(r.byte(1, 0x10ff0 + 31), static_cast<uint8_t>(2 + 31 * 7));
}

// One write of 1024 bytes with `c` and HMAC-SHA1 (one Rig per test: one elaboration per process).
void encrypted_write(Cipher c) {
  Rig r(crypto(c, Auth::HmacSha1));
  Sniffer sn(r);
  const Command w = write_bytes(0x10100, 1024, 5);
  ASSERT_TRUE(r.sys->syscall(0, 1, from_memory(r, 1, w, 0x10000), [] {}));
  r.run(5);
  for (uint32_t i = 0; i < 1024; ++i) ASSERT_EQ(r.byte(1, 0x10100 + i), w.data[i]) << i;
  const std::vector<uint8_t> probe(w.data.begin() + 500, w.data.begin() + 532);
  EXPECT_EQ(sn.saw(probe), c == Cipher::None);  // authentication alone leaves the data readable
  EXPECT_EQ(r.counter("system.host0.nic.crypto.frames_sealed"), 1u);
  EXPECT_EQ(r.counter("system.host1.nic.crypto.frames_opened"), 1u);
  EXPECT_EQ(r.counter("system.host0.nic.crypto.bytes_encrypted"), c == Cipher::None ? 0u : 1024u + 52 - 14);  // the packet after the Ethernet header
  EXPECT_GT(r.counter("system.host1.nic.cau.busy_ps"), 0u);
  EXPECT_GE(r.counter("system.host1.nic.em.crypto.bytes"), 2 * 1024u);
  EXPECT_GE(r.mbp2->nic(1).pme().interrupts(), 2u);  // the LDMA's and the CAU's completions
}
TEST(Mbp2Crypto, DesWritesLandDecryptedAndNeverCrossTheWireInTheClear) { encrypted_write(Cipher::Des); }
TEST(Mbp2Crypto, TripleDesWritesLandDecryptedAndNeverCrossTheWireInTheClear) { encrypted_write(Cipher::Des3); }
TEST(Mbp2Crypto, AuthenticatedOnlyWritesLandAndTheirDataIsReadableOnTheWire) { encrypted_write(Cipher::None); }

TEST(Mbp2Crypto, AFrameAlteredOnTheWireIsRejectedAndResent) {
  Rig r(crypto(Cipher::Des3, Auth::HmacMd5));
  // Alter the first data frame to node 1 on its way (the attacker recomputes the FCS).
  bool altered = false;
  r.sys->ether().set_tap([&](uint32_t to, const std::vector<uint8_t>& f) {
    if (to == 1 && !altered && f.size() > 200) {
      altered = true;
      auto& g = const_cast<std::vector<uint8_t>&>(f);
      g[150] ^= 0x20;
    }
  });
  const Command w = write_bytes(0x10100, 1024, 11);
  ASSERT_TRUE(r.sys->syscall(0, 1, from_memory(r, 1, w, 0x10000), [] {}));
  r.run(100);  // the Go-back-N timeout resends it
  ASSERT_TRUE(altered);
  EXPECT_EQ(r.counter("system.host1.nic.crypto.rejected_auth"), 1u);
  EXPECT_GE(r.counter("system.mbcf.retransmissions"), 1u);
  for (uint32_t i = 0; i < 1024; ++i) ASSERT_EQ(r.byte(1, 0x10100 + i), w.data[i]) << i;
  EXPECT_TRUE(r.sys->quiet());
}

// The CAU seals under the key block its slot holds in EM when it runs, not under keys the PME
// hands it: a block altered in EM makes frames the peer cannot authenticate, and once the block
// is right again Go-back-N's resend lands the write.
TEST(Mbp2Crypto, TheCauSealsUnderTheKeyBlockInItsSlotInEm) {
  Rig r(crypto(Cipher::Des3, Auth::HmacSha1));
  Cau* cau = r.mbp2->nic(0).cau();
  ASSERT_NE(cau, nullptr);
  const uint32_t off = cau->key_slot_offset(r.mbp2->nic(0).key_slot(1));
  const std::vector<uint8_t> good = r.mbp2->nic(0).em().read(off, SecurityAssociation::kKeyBlockBytes);
  EXPECT_EQ(good, r.mbp2->nic(0).sa(1)->key_block());  // the OS wrote it at boot
  const std::vector<uint8_t> other = SecurityAssociation(Cipher::Des3, Auth::HmacSha1, {42}).key_block();
  r.mbp2->nic(0).em().write(off, other.data(), static_cast<uint32_t>(other.size()));
  const Command w = write_bytes(0x10100, 256, 21);
  ASSERT_TRUE(r.sys->syscall(0, 1, from_memory(r, 1, w, 0x10000), [] {}));
  r.run(5);
  EXPECT_EQ(r.counter("system.host1.nic.crypto.rejected_auth"), 1u);
  EXPECT_EQ(r.byte(1, 0x10100), 0u);
  r.mbp2->nic(0).em().write(off, good.data(), static_cast<uint32_t>(good.size()));
  r.run(100);  // the Go-back-N timeout resends it, sealed under the right keys
  for (uint32_t i = 0; i < 256; ++i) ASSERT_EQ(r.byte(1, 0x10100 + i), w.data[i]) << i;
  EXPECT_EQ(r.counter("system.host1.nic.crypto.rejected_auth"), 1u);
  EXPECT_GE(r.counter("system.mbcf.retransmissions"), 1u);
  // A block that is no key at all: the CAU refuses to seal, and nothing goes out.
  std::vector<uint8_t> junk = good;
  junk[0] = 0x7f;
  r.mbp2->nic(0).em().write(off, junk.data(), static_cast<uint32_t>(junk.size()));
  const Command w2 = write_bytes(0x10400, 64, 22);
  ASSERT_TRUE(r.sys->syscall(0, 1, from_memory(r, 1, w2, 0x10000), [] {}));
  r.run(5);
  EXPECT_GE(r.counter("system.host0.nic.crypto.seal_failed"), 1u);
  EXPECT_GE(r.counter("system.host0.nic.cau.failures"), 1u);
  EXPECT_EQ(r.byte(1, 0x10400), 0u);
  r.mbp2->nic(0).em().write(off, good.data(), static_cast<uint32_t>(good.size()));
  r.run(100);
  for (uint32_t i = 0; i < 64; ++i) ASSERT_EQ(r.byte(1, 0x10400 + i), w2.data[i]) << i;
  EXPECT_TRUE(r.sys->quiet());
}

TEST(Mbp2Crypto, AnEncryptingNicTakesNothingInTheClearNorFromAPeerWithoutKeys) {
  Rig r(crypto(Cipher::Des, Auth::HmacSha1));
  Packet p;
  p.src_pnode = 0;
  p.src_ptask = 1;
  p.src_key = 1000;
  p.dst_ptask = 1;
  p.dst_key = 1001;
  p.dst_mac = mac_of(1);
  p.src_mac = mac_of(0);
  p.cmds.push_back(write_bytes(0x10100, 64, 77));
  p.ctrl_p = kNoFlow;
  std::vector<uint8_t> b;
  ASSERT_TRUE(encode(p, b));
  r.sys->ether().send(0, 1, b, nullptr);  // a forged frame in the clear
  std::vector<uint8_t> forged = b;
  forged[12] = kEtherTypeSealed >> 8;
  forged[13] = kEtherTypeSealed & 0xff;
  forged[17] = 7;  // SPI: a Pnode that does not exist
  r.sys->ether().send(0, 1, forged, nullptr);
  r.run(5);
  EXPECT_EQ(r.counter("system.host1.nic.crypto.rejected_plain"), 1u);
  EXPECT_EQ(r.counter("system.host1.nic.crypto.rejected_no_sa"), 1u);
  for (uint32_t i = 0; i < 64; ++i) EXPECT_EQ(r.byte(1, 0x10100 + i), 0u);
}

TEST(Mbp2Crypto, RequestsThatWouldNotFitOnceSealedAreRefused) {
  Rig plain, sealed(crypto(Cipher::Des3, Auth::HmacSha1));
  const uint32_t n = kMaxPacketBytes - 52 - 4;  // a WRITE that just fits a plain frame
  EXPECT_TRUE(plain.sys->syscall(0, 1, Request{1, {write_bytes(0x10100, n, 1)}}, [] {}));
  EXPECT_FALSE(sealed.sys->syscall(0, 1, Request{1, {write_bytes(0x10100, n, 1)}}, [] {}));
  EXPECT_TRUE(sealed.sys->syscall(0, 1, Request{1, {write_bytes(0x10100, n - seal_overhead(Cipher::Des3, Auth::HmacSha1), 1)}}, [] {}));
  plain.run(5);
  sealed.run(5);
  Command rd;  // a READ whose reply would not fit
  rd.cmd = Cmd::Read;
  rd.laddr = 0x10000;
  rd.length = 1440;
  rd.data_laddr = 0x10800;
  EXPECT_TRUE(plain.sys->syscall(0, 1, Request{1, {rd}}, [] {}));
  EXPECT_FALSE(sealed.sys->syscall(0, 1, Request{1, {rd}}, [] {}));
}

TEST(Mbp2Crypto, TheFirstFrameStartsADiffieHellmanExchangeThatSurvivesALostMessage) {
  Mbp2Config mc = crypto(Cipher::Des3, Auth::HmacSha1, CryptoConfig::Keys::Dh);
  mc.crypto.kx_timeout_us = 20000;
  Rig r(mc);
  r.sys->ether().set_deaf(1, true);  // node 1 misses the first INIT
  const Command w = write_bytes(0x10100, 256, 21);
  ASSERT_TRUE(r.sys->syscall(0, 1, from_memory(r, 1, w, 0x10000), [] {}));
  r.run(10);
  EXPECT_EQ(r.mbp2->nic(0).sa(1), nullptr);
  r.sys->ether().set_deaf(1, false);
  r.run(200);
  ASSERT_NE(r.mbp2->nic(0).sa(1), nullptr);
  ASSERT_NE(r.mbp2->nic(1).sa(0), nullptr);
  EXPECT_EQ(r.mbp2->nic(0).sa(1)->fingerprint(), r.mbp2->nic(1).sa(0)->fingerprint());
  EXPECT_GE(r.counter("system.host0.nic.crypto.kx_retries"), 1u);
  EXPECT_EQ(r.counter("system.host0.nic.crypto.kx_completed"), 1u);
  EXPECT_EQ(r.counter("system.host1.nic.crypto.kx_completed"), 1u);
  // Each side: its public value and the shared secret, about 1.5 multiplications per bit each.
  EXPECT_GT(r.counter("system.host0.nic.meac.modmuls"), 2 * 1000u);
  EXPECT_LT(r.counter("system.host0.nic.meac.modmuls"), 2 * 2048u);
  for (uint32_t i = 0; i < 256; ++i) ASSERT_EQ(r.byte(1, 0x10100 + i), w.data[i]) << i;
  EXPECT_EQ(r.counter("system.host1.nic.crypto.rejected_no_sa"), 0u);
  // The responder sent nothing under the new keys before the initiator showed it had them
  // (its CONFIRM, or the write itself): no frame reached node 0 it could not open.
  EXPECT_EQ(r.counter("system.host1.nic.crypto.keys_confirmed"), 1u);
  EXPECT_EQ(r.counter("system.host0.nic.crypto.rejected_no_sa") + r.counter("system.host0.nic.crypto.rejected_auth"), 0u);
}

// An MBCF write whose key exchange is given up (the peer deaf for longer than the INITs'
// budget) is dropped as not sent; Go-back-N's timer sends it again, which starts a new exchange,
// and once the peer hears again the write lands, once.
TEST(Mbp2Crypto, AWriteWhoseKeyExchangeWasGivenUpIsResentAndLandsOnceThePeerIsBack) {
  Mbp2Config mc = crypto(Cipher::Des3, Auth::HmacSha1, CryptoConfig::Keys::Dh);
  mc.crypto.kx_timeout_us = 10000;
  mc.crypto.kx_tries = 2;  // INITs at 0 and 10 ms; given up at 30 ms
  Rig r(mc);
  r.sys->ether().set_deaf(1, true);
  const Command w = write_bytes(0x10100, 256, 23);
  ASSERT_TRUE(r.sys->syscall(0, 1, from_memory(r, 1, w, 0x10000), [] {}));
  r.run(35);
  EXPECT_EQ(r.counter("system.host0.nic.crypto.kx_given_up"), 1u);
  EXPECT_EQ(r.counter("system.host0.nic.crypto.kx_dropped_frames"), 1u);
  EXPECT_EQ(r.sys->unacked(0, 1), 1u);  // still the protocol's: it will be sent again
  r.sys->ether().set_deaf(1, false);
  r.run(1000);
  ASSERT_NE(r.mbp2->nic(0).sa(1), nullptr);
  EXPECT_EQ(r.counter("system.host0.nic.crypto.kx_completed"), 1u);
  for (uint32_t i = 0; i < 256; ++i) ASSERT_EQ(r.byte(1, 0x10100 + i), w.data[i]) << i;
  EXPECT_EQ(r.sys->unacked(0, 1), 0u);
  EXPECT_EQ(r.counter("system.mbcf.duplicates"), 0u);
}

// A responder's frames wait for its keys until the initiator shows it holds them (make before
// break). Should the initiator restart meanwhile and come back with a new public value, the
// responder drops its keys but not the frames: they wait for the new keys and go under them,
// never under keys the restarted peer no longer holds.
TEST(Mbp2Crypto, FramesWaitingForKeysWhenThePeerRestartsGoUnderItsNewKeys) {
  Mbp2Config mc = crypto(Cipher::Des3, Auth::HmacSha1, CryptoConfig::Keys::Dh);
  mc.crypto.kx_timeout_us = 1e6;  // the responder never stops waiting on its own
  Rig r(mc);
  r.sys->ether().set_deaf(0, true);  // node 0 misses node 1's RESP
  ASSERT_TRUE(r.sys->syscall(0, 1, from_memory(r, 1, write_bytes(0x10100, 64, 31), 0x10000), [] {}));
  for (int i = 0; i < 500 && !r.mbp2->nic(1).sa(0); ++i) r.run(1);
  ASSERT_NE(r.mbp2->nic(1).sa(0), nullptr);  // node 1's keys are in; node 0 has none
  EXPECT_EQ(r.mbp2->nic(0).sa(1), nullptr);
  const auto old_keys = r.mbp2->nic(1).sa(0)->fingerprint();
  // Node 1 writes to node 0: the frame waits in its EM for node 0 to show it has the keys.
  const Command w = write_bytes(0x10200, 64, 33);
  r.sys->space(1).write(r.task(1), 0x10000, w.data.data(), 64);
  ASSERT_TRUE(r.sys->syscall(1, 1, Request{0, {w}, 0x10000}, [] {}));
  r.run(1);
  const uint64_t sealed = r.counter("system.host1.nic.crypto.frames_sealed");
  r.sys->power_off(0);
  r.run(1);
  r.sys->power_on(0);
  r.sys->ether().set_deaf(0, false);
  r.run(300);
  EXPECT_EQ(r.counter("system.host1.nic.crypto.rekeys"), 1u);
  EXPECT_EQ(r.counter("system.host1.nic.crypto.kx_carried_frames"), 1u);
  ASSERT_NE(r.mbp2->nic(0).sa(1), nullptr);
  EXPECT_NE(r.mbp2->nic(1).sa(0)->fingerprint(), old_keys);
  EXPECT_EQ(r.mbp2->nic(1).sa(0)->fingerprint(), r.mbp2->nic(0).sa(1)->fingerprint());
  // Node 1 sealed two frames, the write that waited and its HelloAck, both after the restart
  // and under the new keys: node 0 opened both and rejected nothing.
  EXPECT_EQ(sealed, 0u);
  EXPECT_EQ(r.counter("system.host1.nic.crypto.frames_sealed"), 2u);
  EXPECT_EQ(r.counter("system.host0.nic.crypto.frames_opened"), 2u);
  EXPECT_EQ(r.counter("system.host0.nic.crypto.rejected_no_sa") + r.counter("system.host0.nic.crypto.rejected_auth"), 0u);
  // The write was numbered in the window before node 0's restart: node 0 takes it as stale
  // and node 1 abandons it (MBCF/Ether's restart), so node 0's memory is untouched.
  EXPECT_EQ(r.counter("system.mbcf.stale_frames"), 1u);
  EXPECT_EQ(r.counter("system.mbcf.packets_abandoned"), 1u);
  for (uint32_t i = 0; i < 64; ++i) ASSERT_EQ(r.byte(0, 0x10200 + i), 0) << i;
}

// The encrypted-transfer workload: with authentication, frames altered on the wire never reach
// memory; without it (MBCF/Ether's conventional NIC), they do.
TEST(Mbp2Crypto, TheSecureWorkloadChecksEveryByteAndAuthenticationKeepsTamperingOut) {
  const std::string sets = "--set 'workload.sizes=[256]' --set workload.transfers=128 --set ether.tamper=0.02";
  const auto s = stats_json("mbp2c-secure.json", sets);
  const auto& sum = s["summary"];
  ASSERT_TRUE(sum["finished"].get<bool>());
  EXPECT_EQ(sum["corrupted_bytes"].get<uint64_t>(), 0u);
  EXPECT_EQ(sum["verified_bytes"].get<uint64_t>(), 65536u);
  EXPECT_GT(s["stats"]["system"]["ether"]["tampered"].get<uint64_t>(), 0u);
  EXPECT_GT(sum["nic"][1]["crypto"]["rejected"].get<uint64_t>(), 0u);
  EXPECT_GT(sum["nic"][0]["crypto"]["key_exchange_us"].get<double>(), 1000.0);
  EXPECT_GT(sum["first_transfer_us"].get<double>(), sum["nic"][0]["crypto"]["key_exchange_us"].get<double>());
  EXPECT_GT(sum["nic"][0]["pme_interrupts_per_s"].get<double>(), 0.0);
  const auto plain = stats_json("mbcf-ss20-100tx.json", "--set workload.kind=secure " + sets);
  EXPECT_GT(plain["summary"]["corrupted_bytes"].get<uint64_t>(), 0u);
}

// Firmware crypto on the prototype's SPARClite is two orders of magnitude slower than the
// MBP2C's CAU (8.4: the MBP2P has no crypto circuit).
TEST(Mbp2Crypto, FirmwareCryptoOnThePrototypeIsFarSlowerThanTheCau) {
  const std::string sets = "--set workload.kind=secure --set 'workload.sizes=[1024]' --set workload.transfers=64 --set crypto.cipher=des --set crypto.auth=hmac-md5";
  const auto fw = points("mbp2p-ss20.json", sets);
  const auto hw = points("mbp2c-pci.json", sets);
  const auto none = points("mbp2p-ss20.json", "--set workload.kind=secure --set 'workload.sizes=[1024]' --set workload.transfers=64");
  EXPECT_LT(fw[0]["value"].get<double>() * 10, none[0]["value"].get<double>());
  EXPECT_GT(hw[0]["value"].get<double>(), 50 * fw[0]["value"].get<double>());
}

// 8.5: about 3 us of host CPU per send whatever the payload; a round trip above 140 us, about
// three times MBCF/Ether on the SS20 with 100BASE-TX (49 us, 6.2.4); the host's cost of a
// 1024-byte send about a fifth of MBCF/Ether's.
TEST(Mbp2, ThePrototypeMeetsSection85) {
  const auto m = points("mbp2p-ss20.json", "--set 'workload.sizes=[4,1024]' --set 'workload.commands=[\"write\"]'");
  ASSERT_EQ(m.size(), 2u);
  for (const auto& p : m) EXPECT_NEAR(p["host_cpu_us_per_op"].get<double>(), 3.0, 0.3);
  EXPECT_DOUBLE_EQ(m[0]["host_cpu_us_per_op"].get<double>(), m[1]["host_cpu_us_per_op"].get<double>());
  EXPECT_GT(m[0]["value"].get<double>(), 140);
  EXPECT_LT(m[0]["value"].get<double>(), 3.3 * 49);
  const auto e = points("mbcf-ss20-100tx.json", "--set workload.kind=rtt --set 'workload.sizes=[1024]' --set 'workload.commands=[\"write\"]'");
  EXPECT_LT(m[1]["host_cpu_us_per_op"].get<double>(), e[0]["host_cpu_us_per_op"].get<double>() / 4);
  // The Casablanca core (zero-cost interrupts, cache-control instructions) shortens the trip.
  const auto c = points("mbp2p-ss20.json", "--set 'workload.sizes=[4]' --set 'workload.commands=[\"write\"]' --set pme.register_sets=true --set pme.cache_control=true");
  EXPECT_LT(c[0]["value"].get<double>(), m[0]["value"].get<double>() * 0.7);
}

// With the OCU the receive routine skips its own comparison of END_P (mbp2.fw_order_instr at
// the PME's CPI): a round trip receives two sequenced packets (the write, its status reply).
TEST(Mbp2, TheOcuSparesTheReceiveRoutineItsOrderCheck) {
  const std::string sets = "--set 'workload.sizes=[4]' --set 'workload.commands=[\"write\"]'";
  const auto on = stats_json("mbp2p-ss20.json", sets);
  const auto off = stats_json("mbp2p-ss20.json", sets + " --set mbp2.ocu=false");
  const Mbp2Config mc = Mbp2Config::from(load_config(test::config_path("mbp2p-ss20.json"), {}));
  Stats st;
  Calendar cal("cal");
  Pme pme(cal, mc.pme, st, "pme");
  const double saved_us = pme.instr_ps(mc.fw_order_instr) / 1e6;
  EXPECT_GT(saved_us, 1.0);  // the SPARClite's CPI on uncached EM data
  const double rtt_on = on["summary"]["points"][0]["value"].get<double>(), rtt_off = off["summary"]["points"][0]["value"].get<double>();
  EXPECT_NEAR(rtt_off - rtt_on, 2 * saved_us, 0.01);
  EXPECT_GT(on["stats"]["system"]["host1"]["nic"]["ocu"]["in_order"].get<uint64_t>(), 0u);
  EXPECT_EQ(off["stats"]["system"]["host1"]["nic"].count("ocu"), 0u);
}

}  // namespace
}  // namespace mbpsim::mbp2

namespace mbpsim::mbp2 {
namespace {

TEST(Mbp2Crypto, BadCryptoSettingsExitOneNamingTheKey) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"mbcf-ss20-100tx.json", "--set crypto.cipher=des"},             // the conventional NIC has no CAU
      {"mbp2p-ss20.json", "--set crypto.keys=dh"},                     // a key exchange with nothing to key
      {"mbp2p-ss20.json", "--set crypto.cipher=aes"},                  // not a cipher of the CAU
      {"mbp2c-secure.json", "--set 'workload.sizes=[40000]'"},         // larger than the checked window
      {"mbp2p-ss20.json", "--set em.bytes=65536"},                     // no room for rings and frame buffers
  };
  for (const auto& [cfg, sets] : cases) {
    auto r = test::run_cmd(test::mbpsim_bin() + " run " + test::config_path(cfg) + " --quiet --out /tmp/mbpsim_never_written " + sets);
    EXPECT_EQ(r.status, 1) << sets << ": " << r.output;
    const std::string key = sets.substr(sets.find(' ') + 1, sets.find('=') - sets.find(' ') - 1);
    EXPECT_NE(r.output.find(key.front() == '\'' ? key.substr(1) : key), std::string::npos) << r.output;
    EXPECT_EQ(test::count_lines(r.output), 1) << r.output;
  }
  EXPECT_FALSE(std::filesystem::exists("/tmp/mbpsim_never_written"));
}

}  // namespace
}  // namespace mbpsim::mbp2

namespace mbpsim::mbp2 {
namespace {

// The OS swaps a page out: it tells the PME through the ICU, which drops the translation, so
// the next write after the page-in refills the TLB instead of using a stale frame.
TEST(Mbp2, SwappingAPageOutInvalidatesItsTranslationThroughTheIcu) {
  Rig r;
  ASSERT_TRUE(r.sys->syscall(0, 1, Request{1, {write_bytes(0x10100, 16, 1)}}, [] {}));
  r.run(5);
  const uint64_t misses = r.counter("system.host1.nic.tlb.misses");
  EXPECT_TRUE(r.mbp2->nic(1).tlb().lookup(1, 0x10000 / r.ec.page_bytes));
  r.sys->swap_out(1, 1, 0x10000);
  r.run(1);
  EXPECT_EQ(r.counter("system.host1.nic.icu.to_pme"), 1u);
  EXPECT_FALSE(r.mbp2->nic(1).tlb().lookup(1, 0x10000 / r.ec.page_bytes));
  EXPECT_EQ(r.cards("icu_bad_messages"), 0u);
  ASSERT_TRUE(r.sys->syscall(0, 1, Request{1, {write_bytes(0x10100, 16, 2)}}, [] {}));
  r.run(50);  // the page fault, the page-in, then the saved command
  EXPECT_EQ(r.byte(1, 0x10100), 2u);
  EXPECT_EQ(r.counter("system.host1.nic.tlb.misses"), misses + 2);  // this test's probe, and the refill
}

// The OS moves a page to another frame (page-out, then page-in elsewhere). The ADMA and the
// PGE reach host memory at the frames the NIC's TLB gives, not through the page table: once
// the OS has invalidated the entry through the ICU, the NIC follows the page; a frame moved
// behind the NIC's back is still the one it writes and reads, as with any I/O MMU.
TEST(Mbp2, TheNicReachesHostMemoryAtTheFramesItsTlbGives) {
  Rig r;
  const uint32_t pb = r.ec.page_bytes, page = 0x10000;
  TaskSpace& ts1 = r.sys->space(1);
  auto move_page = [&](uint32_t n, uint32_t laddr) {  // a fresh frame with the page's bytes
    TaskSpace& ts = r.sys->space(n);
    Pte& pte = ts.find(1)->pages.at(laddr / pb);
    const uint32_t old = pte.frame, f = ts.alloc_frame();
    std::copy(ts.frame(old), ts.frame(old) + pb, ts.frame(f));
    pte.frame = f;
    return old;
  };
  ASSERT_TRUE(r.sys->syscall(0, 1, Request{1, {write_bytes(page + 0x100, 16, 1)}}, [] {}));
  r.run(5);
  ASSERT_EQ(r.byte(1, page + 0x100), 1u);
  // A correct OS: out (the ICU invalidates the entry), in at another frame, then a write.
  r.sys->swap_out(1, 1, page);
  r.run(1);
  const uint32_t first = move_page(1, page);
  ts1.set_present(r.task(1), page, true);
  ASSERT_TRUE(r.sys->syscall(0, 1, Request{1, {write_bytes(page + 0x100, 16, 2)}}, [] {}));
  r.run(5);
  EXPECT_EQ(r.byte(1, page + 0x100), 2u);   // the task sees it
  EXPECT_EQ(ts1.frame(first)[0x100], 1u);   // the old frame was left alone
  // An OS that moves the frame without telling the NIC: the write lands in the old frame,
  // where the TLB still points, and the task never sees it.
  const uint32_t second = move_page(1, page);
  ASSERT_TRUE(r.sys->syscall(0, 1, Request{1, {write_bytes(page + 0x100, 16, 3)}}, [] {}));
  r.run(5);
  EXPECT_EQ(r.byte(1, page + 0x100), 2u);
  EXPECT_EQ(ts1.frame(second)[0x100], 3u);
  // The sending side alike: the PGE fetches a payload at the frame its TLB gives (into another
  // page of the target, whose entry is right).
  const uint32_t dst = page + pb;
  ASSERT_TRUE(r.sys->syscall(0, 1, from_memory(r, 1, write_bytes(dst, 8, 40), page), [] {}));
  r.run(5);
  ASSERT_EQ(r.byte(1, dst), 40u);
  const uint32_t src_old = move_page(0, page);
  std::vector<uint8_t> fresh(8, 0xEE);
  r.sys->space(0).write(r.task(0), page, fresh.data(), 8);  // what the task now holds there
  ASSERT_EQ(r.sys->space(0).frame(src_old)[0], 40u);
  ASSERT_TRUE(r.sys->syscall(0, 1, Request{1, {write_bytes(dst + 0x100, 8, 0)}, page}, [] {}));
  r.run(5);
  EXPECT_EQ(r.byte(1, dst + 0x100), 40u);  // the old frame's bytes went, not the task's 0xEE
}

// A task that leaves a node (migration) may come back, or another may take its Ptask: the OS
// has the PME flush the context's entries (ICU), or the NIC would write the frames the task
// had before it left (mutant tlb_keeps_left_context).
TEST(Mbp2, ATaskThatLeavesANodeTakesItsTranslationsWithIt) {
  Rig r;
  ASSERT_TRUE(r.sys->syscall(0, 1, Request{1, {write_bytes(0x10100, 16, 1)}}, [] {}));
  r.run(5);
  ASSERT_EQ(r.byte(1, 0x10100), 1u);
  const uint64_t icu = r.counter("system.host1.nic.icu.to_pme");
  r.sys->migrate(1, 1, 0, 9);  // to node 0 as Ptask 9, and back: new frames each time
  r.run(1);
  r.sys->migrate(0, 9, 1, 1);
  r.run(1);
  EXPECT_EQ(r.counter("system.host1.nic.icu.to_pme"), icu + 1);
  ASSERT_EQ(r.byte(1, 0x10100), 1u);  // the pages came back with their bytes
  ASSERT_TRUE(r.sys->syscall(0, 1, Request{1, {write_bytes(0x10100, 16, 2)}}, [] {}));
  r.run(5);
  EXPECT_EQ(r.byte(1, 0x10100), 2u);
  EXPECT_EQ(r.cards("icu_bad_messages"), 0u);
}

// MBCF_SIGNAL on the MBP2: the PME interrupts the host through the ICU with the 64-bit message
// naming the task and the signal structure; the host pays that interrupt, then the handler.
TEST(Mbp2, ASignalInterruptsTheHostThroughTheIcu) {
  const auto s = stats_json("mbp2p-ss20.json", "--set workload.kind=oneway --set 'workload.commands=[\"signal\"]' --set 'workload.sizes=[4]' --set workload.iterations=4");
  const auto& n1 = s["stats"]["system"]["host1"]["nic"];
  const uint64_t inv = s["stats"]["system"]["mbcf"]["invocations"].get<uint64_t>();
  EXPECT_GT(inv, 0u);
  EXPECT_EQ(n1["icu"]["to_host"].get<uint64_t>() + s["stats"]["system"]["host0"]["nic"]["icu"]["to_host"].get<uint64_t>(), inv);
  EXPECT_GT(n1["pme"]["handler"]["icu_ps"].get<uint64_t>(), 0u);
}

}  // namespace
}  // namespace mbpsim::mbp2
