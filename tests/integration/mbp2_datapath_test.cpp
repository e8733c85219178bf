// The MBP2's units and data path (8.3.3): units as SystemC modules with descriptor rings in EM,
// the ADMA writing staged bytes into host memory, replies and atomics from what the ADMA read,
// the PGE fetching send structures into images, frame buffers in EM.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/mbcf/atomic.h"
#include "models/mbp2/mbp2_cards.h"
#include "sim/runner.h"
#include "tests/test_util.h"
#include "tests/integration/mbp2_rig.h"

namespace mbpsim::mbp2 {
namespace {

// Every unit is a SystemC module under its node's NIC module, and the DMA engines' descriptor
// rings are real bytes in that node's EM, handed back done after the traffic.
TEST(Mbp2, UnitsAreSystemCModulesAndTheirDescriptorRingsLiveInEm) {
  Rig r(crypto(Cipher::Des, Auth::HmacMd5));
  for (uint32_t n = 0; n < 2; ++n) {
    const std::string nic = "system.host" + std::to_string(n) + ".nic";
    sc_core::sc_object* top = sc_core::sc_find_object(nic.c_str());
    ASSERT_NE(top, nullptr) << nic;
    EXPECT_STREQ(top->kind(), "sc_module");
    std::vector<std::string> kids;
    for (const sc_core::sc_object* o : top->get_child_objects()) kids.push_back(o->basename());
    for (const char* u : {"biu", "em", "tlb", "pme", "kli", "icu", "uli", "pge", "adma", "ldma_tx", "ldma_rx", "csu", "ocu", "cau", "cau_dma"})
      EXPECT_NE(std::find(kids.begin(), kids.end(), u), kids.end()) << nic << "." << u;
  }
  ASSERT_TRUE(r.sys->syscall(0, 1, from_memory(r, 1, write_bytes(0x10100, 1024, 3), 0x10000), [] {}));
  r.run(5);
  // Node 1's ADMA wrote the data: its first descriptor names the host address and length, done.
  const Em& em = r.mbp2->nic(1).em();
  const DmaEngine& adma = r.mbp2->nic(1).adma();
  const uint32_t d = adma.ring_offset();
  EXPECT_EQ(em.load32(d + 8), 1024u);
  EXPECT_EQ(em.load32(d + 4) % r.ec.page_bytes, 0x100u);  // the page offset of 0x10100
  EXPECT_EQ(em.load32(d + 12), DmaEngine::kDone | DmaEngine::kMove | 0u);  // it moved the bytes itself
  EXPECT_EQ(r.mbp2->nic(0).em().load32(r.mbp2->nic(0).pge().ring_offset() + 12) & DmaEngine::kDone, DmaEngine::kDone);  // the sender's PGE
}

// Receiving ends with the ADMA writing into the target task's memory (8.3.3): the command's
// bytes are staged in EM and reach host memory when the ADMA's descriptor completes, not when
// the PME runs the command, and what lands is what EM holds then (a byte changed there lands
// changed). A light-weight call made while the write is on its way waits for it.
// Runs the simulation in 20 ns steps until descriptor `i` of `e` is posted (its owner bit
// set), at most 100,000 steps; returns how many it took.
int run_until_posted(DmaEngine& e, uint32_t i) {
  int steps = 0;
  while (!(e.desc(i).status & DmaEngine::kOwn) && ++steps < 100000) sc_core::sc_start(sc_core::sc_time(20, sc_core::SC_NS));
  return steps;
}

TEST(Mbp2, TheAdmaWritesTheCommandsBytesFromEmIntoHostMemory) {
  EtherSysConfig ec;
  ec.os.lw_syscall_cycles = 0;
  Rig r(Mbp2Config{}, ec);
  const Command a = write_bytes(0x10100, 64, 5);
  ASSERT_TRUE(r.sys->syscall(0, 1, Request{1, {a}}, [] {}));
  DmaEngine& adma = r.mbp2->nic(1).adma();
  const int steps = run_until_posted(adma, 0);
  const DmaEngine::Desc d = adma.desc(0);
  ASSERT_TRUE(d.status & DmaEngine::kOwn) << "no ADMA descriptor after " << steps << " steps";
  ASSERT_TRUE(d.move());
  ASSERT_EQ(d.bytes, 64u);
  // The PME ran the command; host memory does not have its bytes yet, EM does.
  for (uint32_t i = 0; i < 64; ++i) ASSERT_EQ(r.byte(1, 0x10100 + i), 0) << i;
  std::vector<uint8_t> staged = r.mbp2->nic(1).em().read(d.src, 64);
  ASSERT_EQ(staged, a.data);
  staged[10] ^= 0xff;
  r.mbp2->nic(1).em().write(d.src, staged.data(), 64);
  bool synced = false;
  r.sys->lw_syscall(
      1,
      [&]() -> uint64_t {
        synced = true;
        EXPECT_TRUE(adma.desc(0).done());
        EXPECT_EQ(r.byte(1, 0x10100), a.data[0]);
        return 0;
      },
      [] {});
  r.run(50);  // (and its acknowledgement)
  EXPECT_TRUE(synced);
  for (uint32_t i = 0; i < 64; ++i) ASSERT_EQ(r.byte(1, 0x10100 + i), i == 10 ? static_cast<uint8_t>(a.data[i] ^ 0xff) : a.data[i]) << i;
  EXPECT_EQ(r.counter("system.host1.nic.adma.errors"), 0u);
  EXPECT_TRUE(r.sys->quiet()) << r.sys->state_dump();
}

// A READ's reply carries what the ADMA read from host memory into EM, read in its place among
// the packet's writes: a WRITE before it in the packet is in the reply, one after it is not, and
// a byte the host changes after the PME ran the command but before the ADMA reads it is the
// changed byte (the ADMA reads when it runs). Across a page the read is one descriptor per page.
TEST(Mbp2, AReadsReplyCarriesWhatTheAdmaReadInItsPlaceAmongTheWrites) {
  Rig r;
  std::vector<uint8_t> init(32);
  for (uint32_t i = 0; i < 32; ++i) init[i] = static_cast<uint8_t>(i);
  r.sys->space(1).write(r.task(1), 0x10ff0, init.data(), 32);
  Command a;
  a.cmd = Cmd::Write;
  a.laddr = 0x10ff8;
  a.data = {0xa0, 0xa1, 0xa2, 0xa3};
  a.length = 4;
  Command b = a;
  b.laddr = 0x11004;
  b.data = {0xb0, 0xb1, 0xb2, 0xb3};
  Command rd;
  rd.cmd = Cmd::Read;
  rd.laddr = 0x10ff0;
  rd.length = 32;
  rd.data_laddr = 0x10800;
  ASSERT_TRUE(r.sys->syscall(0, 1, Request{1, {a, rd, b}}, [] {}));
  DmaEngine& adma = r.mbp2->nic(1).adma();
  const int steps = run_until_posted(adma, 1);
  ASSERT_TRUE(adma.desc(1).status & DmaEngine::kOwn) << "no ADMA descriptor after " << steps << " steps";
  const uint8_t changed = 0xee;
  r.sys->space(1).write(r.task(1), 0x10ff2, &changed, 1);  // the host, before the ADMA reads
  r.run(50);
  EXPECT_EQ(r.sys->failure(), "");
  // The write before the READ, the READ's two pages (host to EM), the write after it.
  EXPECT_FALSE(adma.desc(0).back());
  EXPECT_EQ(adma.desc(0).bytes, 4u);
  EXPECT_TRUE(adma.desc(1).back());
  EXPECT_EQ(adma.desc(1).bytes, 16u);
  EXPECT_TRUE(adma.desc(2).back());
  EXPECT_EQ(adma.desc(2).bytes, 16u);
  EXPECT_FALSE(adma.desc(3).back());
  EXPECT_EQ(adma.desc(3).bytes, 4u);
  for (uint32_t i = 0; i < 4; ++i) EXPECT_TRUE(adma.desc(i).done() && adma.desc(i).move()) << i;
  for (uint32_t i = 0; i < 32; ++i) {
    uint8_t want = init[i];
    if (i == 2) want = changed;
    if (i >= 8 && i < 12) want = a.data[i - 8];
    ASSERT_EQ(r.byte(0, 0x10800 + i), want) << i;
  }
  EXPECT_EQ(r.byte(1, 0x11004), 0xb0);  // (and the write after it landed)
  EXPECT_EQ(r.counter("system.host1.nic.adma.errors"), 0u);
  EXPECT_TRUE(r.sys->quiet()) << r.sys->state_dump();
}

// The FIFO and signal structures a command acts on are in the target task's memory, in the
// host: the PME has the ADMA read each one (back to EM) before the writes it computes from it.
// A FIFO: one 20-byte read of its structure, then the entry's writes; a polling signal that
// queues its record: the 32-byte signal structure, then the 20-byte FIFO it names, then the
// writes. Each lands as the semantics say.
TEST(Mbp2, TheAdmaReadsTheStructuresACommandActsOnBeforeItsWrites) {
  Rig r;
  TaskSpace& ts = r.sys->space(1);
  init_fifo(ts, r.task(1), 0x10100, 0x11000, 0x400);
  init_fifo(ts, r.task(1), 0x10200, 0x11800, 0x400);
  init_signal(ts, r.task(1), 0x10300, SigInvoke::Polling, SigStore::Quew, SigCond::EveryTimeNonblk, 0, 0, 0, 0x10200);
  Command f = write_bytes(0x10100, 8, 3);
  f.cmd = Cmd::Fifo;
  Command sg = write_bytes(0x10300, 8, 9);
  sg.cmd = Cmd::Signal;
  DmaEngine& adma = r.mbp2->nic(1).adma();
  ASSERT_TRUE(r.sys->syscall(0, 1, Request{1, {f}}, [] {}));
  r.run(5);
  ASSERT_TRUE(r.sys->syscall(0, 1, Request{1, {sg}}, [] {}));
  r.run(5);
  EXPECT_EQ(r.sys->failure(), "");
  EXPECT_EQ(r.counter("system.host1.nic.structure_reads"), 3u);
  EXPECT_EQ(r.counter("system.host0.nic.structure_reads"), 0u);
  // The ring's descriptors in order: the FIFO's read, its writes, the signal's two reads, its writes.
  std::vector<std::pair<bool, uint32_t>> ring;
  for (uint32_t i = 0; i < 64 && adma.desc(i).done(); ++i) ring.emplace_back(adma.desc(i).back(), adma.desc(i).bytes);
  ASSERT_GE(ring.size(), 5u);
  EXPECT_EQ(ring[0], std::make_pair(true, layout::kFifoBytes));
  size_t i = 1;
  while (i < ring.size() && !ring[i].first) ++i;  // the FIFO's writes (the entry, the tail)
  EXPECT_GT(i, 1u);
  ASSERT_LT(i + 1, ring.size());
  EXPECT_EQ(ring[i], std::make_pair(true, layout::kSignalBytes));
  EXPECT_EQ(ring[i + 1], std::make_pair(true, layout::kFifoBytes));
  for (size_t j = i + 2; j < ring.size(); ++j) EXPECT_FALSE(ring[j].first) << j;
  EXPECT_GT(ring.size(), i + 2);
  const auto got = fifo_pop(ts, r.task(1), 0x10100);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(*got, f.data);
  const auto rec = fifo_pop(ts, r.task(1), 0x10200);  // the signal's record: source, length, data
  ASSERT_TRUE(rec.has_value());
  ASSERT_EQ(rec->size(), 12u + 8u);
  EXPECT_TRUE(std::equal(sg.data.begin(), sg.data.end(), rec->begin() + 12));
  EXPECT_EQ(r.counter("system.host1.nic.adma.errors"), 0u);
}

// An atomic takes two steps on the MBP2 (8.3.3: the PME realises MBCF by controlling the ADMA):
// the ADMA reads the target into EM, the PME computes from what it read, then the ADMA writes
// the result; the write's descriptor is posted only after the read is done. A host store to the
// target after the PME checked the command but before the ADMA read it is in the old value the
// reply carries, and the sum is taken from it (the host's store is not lost).
// A 4-byte atomic at `laddr` with operand `value`, its old value to 0x10800 and its status to
// 0x10810 of the requester.
Command atomic_with_status(Cmd cmd, uint32_t laddr, uint32_t value) {
  Command c = word_command(cmd, laddr, value);
  c.data_laddr = 0x10800;
  c.status_laddr = 0x10810;
  c.opt.reply = ReplyMode::Status;
  return c;
}

TEST(Mbp2, AFetchAddComputesFromWhatTheAdmaReadAndWritesOnlyAfterIt) {
  Rig r;
  const uint32_t init = 10, host = 100, add = 5;
  uint8_t w[4];
  store_le(w, 4, init);
  r.sys->space(1).write(r.task(1), 0x10100, w, 4);
  const Command fa = atomic_with_status(Cmd::FetchAdd, 0x10100, add);
  ASSERT_TRUE(r.sys->syscall(0, 1, Request{1, {fa}}, [] {}));
  DmaEngine& adma = r.mbp2->nic(1).adma();
  const int steps = run_until_posted(adma, 0);
  ASSERT_TRUE(adma.desc(0).status & DmaEngine::kOwn) << "no ADMA descriptor after " << steps << " steps";
  EXPECT_TRUE(adma.desc(0).back());
  EXPECT_FALSE(adma.desc(1).status & DmaEngine::kOwn) << "the write was posted before the operand was read";
  store_le(w, 4, host);
  r.sys->space(1).write(r.task(1), 0x10100, w, 4);  // the host, before the ADMA reads
  r.run(50);
  EXPECT_EQ(r.sys->failure(), "");
  EXPECT_TRUE(adma.desc(0).done() && adma.desc(1).done());
  EXPECT_FALSE(adma.desc(1).back());
  EXPECT_EQ(adma.desc(1).bytes, 4u);
  uint8_t got[4];
  r.sys->space(1).read(r.task(1), 0x10100, got, 4);
  EXPECT_EQ(load_le(got, 4), host + add);
  r.sys->space(0).read(r.task(0), 0x10800, got, 4);
  EXPECT_EQ(load_le(got, 4), host) << "the reply carries the old value the ADMA read";
  r.sys->space(0).read(r.task(0), 0x10810, got, 4);
  EXPECT_EQ(load_le(got, 4), static_cast<uint32_t>(Status::Succeeded));
  EXPECT_EQ(r.cards("atomic_operands_changed"), 1u);
  EXPECT_TRUE(r.sys->quiet()) << r.sys->state_dump();
}

// COMP_SWAP compares the reference word the ADMA read, not the one the PME saw when it checked
// the command: a reference the host changes in between turns a swap into CompareFailed (the
// target is untouched and no write is posted), and the other way round.
void comp_swap_under_a_host_store(bool to_fail) {
  {
    Rig r;
    uint8_t w[4];
    store_le(w, 4, 0x1111);
    r.sys->space(1).write(r.task(1), 0x10100, w, 4);  // the target
    store_le(w, 4, to_fail ? 7 : 8);
    r.sys->space(1).write(r.task(1), 0x10200, w, 4);  // the reference word
    Command cs = atomic_with_status(Cmd::CompSwap, 0x10100, 0x2222);
    cs.flag_laddr = 0x10200;
    cs.flag_value = 7;
    ASSERT_TRUE(r.sys->syscall(0, 1, Request{1, {cs}}, [] {}));
    DmaEngine& adma = r.mbp2->nic(1).adma();
    const int steps = run_until_posted(adma, 0);
    ASSERT_TRUE(adma.desc(0).status & DmaEngine::kOwn) << "no ADMA descriptor after " << steps << " steps";
    store_le(w, 4, to_fail ? 8 : 7);
    r.sys->space(1).write(r.task(1), 0x10200, w, 4);  // the host, before the ADMA reads
    r.run(50);
    EXPECT_EQ(r.sys->failure(), "");
    // The reference word and the target read into EM; a write only for a swap.
    EXPECT_TRUE(adma.desc(0).back() && adma.desc(0).done());
    EXPECT_EQ(adma.desc(0).bytes, 4u);
    EXPECT_TRUE(adma.desc(1).back() && adma.desc(1).done());
    EXPECT_EQ(adma.desc(2).done(), !to_fail);
    EXPECT_FALSE(adma.desc(2).status & DmaEngine::kOwn);
    uint8_t got[4];
    r.sys->space(1).read(r.task(1), 0x10100, got, 4);
    EXPECT_EQ(load_le(got, 4), to_fail ? 0x1111u : 0x2222u);
    r.sys->space(0).read(r.task(0), 0x10800, got, 4);
    EXPECT_EQ(load_le(got, 4), 0x1111u);
    r.sys->space(0).read(r.task(0), 0x10810, got, 4);
    EXPECT_EQ(load_le(got, 4), static_cast<uint32_t>(to_fail ? Status::CompareFailed : Status::Succeeded));
    EXPECT_EQ(r.cards("atomic_operands_changed"), 1u);
    EXPECT_TRUE(r.sys->quiet()) << r.sys->state_dump();
  }
}

TEST(Mbp2, ACompSwapComparesTheReferenceWordTheAdmaReadAndFailsWhenTheHostSpoiledIt) { comp_swap_under_a_host_store(true); }
TEST(Mbp2, ACompSwapComparesTheReferenceWordTheAdmaReadAndSwapsWhenTheHostSetIt) { comp_swap_under_a_host_store(false); }

// Frames are bytes in EM between the units (8.3.3): the MAC sends what the LDMA reads from the
// transmit buffer its descriptor names, and the receive routine decodes what the LDMA wrote
// into the receive buffer its descriptor names. A byte changed in EM while the frame lies there
// (a stand-in for a unit writing it) is what crosses the wire, and what lands in the target.
TEST(Mbp2, FramesAreBytesInEmBetweenTheUnits) {
  Rig r;
  Sniffer sn(r);
  const Command w = write_bytes(0x10100, 1024, 21);
  bool tx_hit = false, rx_hit = false;
  uint32_t tx_src = 0, rx_dst = 0;
  std::function<void()> probe = [&] {
    // Node 0's first LDMA transmit descriptor, while the engine owns it: the frame is in EM.
    const Em& e0 = r.mbp2->nic(0).em();
    const uint32_t t = r.mbp2->nic(0).ldma_tx().ring_offset();
    if (!tx_hit && (e0.load32(t + 12) & DmaEngine::kOwn) && e0.load32(t + 8) > 1024) {
      tx_src = e0.load32(t);
      const uint32_t at = tx_src + e0.load32(t + 8) - 1024 + 100;  // payload byte 100
      r.mbp2->nic(0).em().store32(at & ~3u, r.mbp2->nic(0).em().load32(at & ~3u) ^ 0xff000000u >> 8 * (at % 4));
      tx_hit = true;
    }
    // Node 1's first LDMA receive descriptor once done, before the routine takes the frame.
    const Em& e1 = r.mbp2->nic(1).em();
    const uint32_t q = r.mbp2->nic(1).ldma_rx().ring_offset();
    if (!rx_hit && (e1.load32(q + 12) & DmaEngine::kDone) && e1.load32(q + 8) > 1024) {
      rx_dst = e1.load32(q + 4);
      const uint32_t at = rx_dst + e1.load32(q + 8) - 1024 + 200;  // payload byte 200
      r.mbp2->nic(1).em().store32(at & ~3u, r.mbp2->nic(1).em().load32(at & ~3u) ^ 0xff000000u >> 8 * (at % 4));
      rx_hit = true;
    }
    if (!rx_hit) r.cal.after(20000, probe);  // every 20 ns
  };
  r.cal.after(0, probe);
  ASSERT_TRUE(r.sys->syscall(0, 1, from_memory(r, 1, w, 0x10000), [] {}));
  r.run(5);
  ASSERT_TRUE(tx_hit && rx_hit);
  // The descriptors name the frame buffers.
  EXPECT_GE(tx_src, r.mbp2->nic(0).tx_buffers().offset(FramePool::Buf{0, 0, 0}));
  EXPECT_GE(rx_dst, r.mbp2->nic(1).rx_buffers().offset(FramePool::Buf{0, 0, 0}));
  // The wire carried the byte changed in node 0's EM, and not the one changed in node 1's.
  std::vector<uint8_t> sent(w.data.begin() + 90, w.data.begin() + 110);
  sent[10] ^= 0xff;
  EXPECT_TRUE(sn.saw(sent));
  const std::vector<uint8_t> later(w.data.begin() + 190, w.data.begin() + 210);
  EXPECT_TRUE(sn.saw(later));
  // The target got both changes and nothing else.
  for (uint32_t i = 0; i < 1024; ++i) {
    const uint8_t want = (i == 100 || i == 200) ? static_cast<uint8_t>(w.data[i] ^ 0xff) : w.data[i];
    ASSERT_EQ(r.byte(1, 0x10100 + i), want) << i;
  }
  // Every buffer is free again.
  EXPECT_EQ(r.mbp2->nic(0).tx_buffers().in_use(), 0u);
  EXPECT_EQ(r.mbp2->nic(1).rx_buffers().in_use(), 0u);
}

// Requests are bytes from host memory to EM (8.3.3): the library writes the send structure
// into the task's send ring and rings; the PGE reads the structure, and a payload at its
// address, when it fetches them, into a request image in EM; the PME builds the packet from
// that image. A byte the task changes before the fetch goes out (the rule: leave them alone
// until `fetched` says so), one changed after does not; a byte changed in the image in EM before
// the header build goes out too.
TEST(Mbp2, RequestsAreFetchedFromHostMemoryIntoAnImageInEmWhenThePgeRuns) {
  Rig r;
  const uint32_t src = 0x10000;
  const Command a = write_bytes(0x10100, 256, 1);      // payload in the structure
  const Command b = write_bytes(0x10400, 256, 2);      // payload at an address
  const uint32_t entry0 = Mbp2Nic::kSendAreaHeader;  // the lowest free entry
  bool em_hit = false;
  std::function<void()> probe = [&] {
    // The first request image in EM, once the PGE's descriptor is done (it wrote the image) and
    // before the PME's header build.
    FramePool& img = r.mbp2->nic(0).request_images();
    if (!em_hit && img.in_use() > 0 && r.mbp2->nic(0).pge().desc(0).done()) {
      const uint32_t at = img.offset(FramePool::Buf{0, 0, 0}) + 12 + 30;  // command word, laddr, length; payload byte 30
      r.mbp2->nic(0).em().store32(at & ~3u, r.mbp2->nic(0).em().load32(at & ~3u) ^ 0xff000000u >> 8 * (at % 4));
      em_hit = true;
    }
    if (!em_hit) r.cal.after(20000, probe);
  };
  r.cal.after(0, probe);
  uint32_t fetched_at_return = 99;
  ASSERT_TRUE(r.sys->syscall(0, 1, Request{1, {a}}, [&] {
    // The doorbell store has completed; the PGE has not fetched yet: this store in the
    // structure (payload byte 10) is what it will read.
    fetched_at_return = r.mbp2->nic(0).fetched(1);
    auto e = r.mbp2->nic(0).send_area_read(1, entry0 + Mbp2Nic::kMbcfStructHeader + 12 + 10, 1);
    e[0] ^= 0xff;
    r.mbp2->nic(0).send_area_write(1, entry0 + Mbp2Nic::kMbcfStructHeader + 12 + 10, e);
  }));
  r.run(5);
  EXPECT_EQ(fetched_at_return, 0u);
  EXPECT_EQ(r.mbp2->nic(0).fetched(1), 1u);
  ASSERT_TRUE(em_hit);
  for (uint32_t i = 0; i < 256; ++i) {
    const uint8_t want = (i == 10 || i == 30) ? static_cast<uint8_t>(a.data[i] ^ 0xff) : a.data[i];
    ASSERT_EQ(r.byte(1, 0x10100 + i), want) << i;
  }
  // The payload at an address: read when the PGE fetches it. Changed before: it goes out.
  ASSERT_TRUE(r.sys->syscall(0, 1, from_memory(r, 1, b, src), [&] {
    uint8_t x = static_cast<uint8_t>(b.data[5] ^ 0x5a);
    r.sys->space(0).write(r.task(0), src + 5, &x, 1);
  }));
  r.run(5);
  EXPECT_EQ(r.mbp2->nic(0).fetched(1), 2u);
  EXPECT_EQ(r.byte(1, 0x10400 + 5), static_cast<uint8_t>(b.data[5] ^ 0x5a));
  // Changed once `fetched` has moved past it: the image in EM is what went out.
  uint8_t y = 0;
  r.sys->space(0).write(r.task(0), src + 6, &y, 1);
  r.run(5);
  EXPECT_EQ(r.byte(1, 0x10400 + 6), b.data[6]);
  EXPECT_EQ(r.byte(1, 0x10400 + 7), b.data[7]);
  EXPECT_EQ(r.mbp2->nic(0).request_images().in_use(), 0u);
  EXPECT_EQ(r.counter("system.host0.nic.request_images.allocated"), 2u);
  EXPECT_EQ(r.cards("bad_requests"), 0u);
  // A datagram's payload is read when the PGE fetches it too.
  r.mbp2->nic(1).init_ring(1, 0x18000, 4, 2048);
  ASSERT_TRUE(r.mbp2->nic(1).bind_udp(1, 7, 0x18000));
  std::vector<uint8_t> d(100, 0x11);
  r.sys->space(0).write(r.task(0), 0x11000, d.data(), 100);
  Mbp2Nic::DatagramRequest q;
  q.dst_node = 1;
  q.src_port = q.dst_port = 7;
  q.laddr = 0x11000;
  q.len = 100;
  ASSERT_TRUE(r.mbp2->nic(0).send_datagram(1, q, [&] {
    uint8_t z = 0x22;
    r.sys->space(0).write(r.task(0), 0x11000 + 99, &z, 1);
  }));
  r.run(5);
  std::vector<uint8_t> got;
  ASSERT_TRUE(r.mbp2->nic(1).take(1, 0x18000, &got));
  d[99] = 0x22;
  EXPECT_EQ(got, d);
  EXPECT_EQ(r.mbp2->nic(0).fetched(1), 3u);
}

// The PGE works from its descriptor: it names the send structure (and the task's context) and
// the image length the header promised when the doorbell was taken. When the PGE runs it walks
// the structure again as host memory holds it; a structure the task rewrote into another
// length, or into something that is no request, fails the descriptor (its error bit), and the
// PME refuses the request instead of sending half of it. The next request goes out as usual.
TEST(Mbp2, ThePgeWalksTheStructureItsDescriptorNamesAndFailsOneRewrittenUnderIt) {
  Rig r;
  const uint32_t entry0 = Mbp2Nic::kSendAreaHeader;
  auto rewrite = [&](uint32_t word0) {
    std::vector<uint8_t> w(4);
    for (int i = 0; i < 4; ++i) w[i] = static_cast<uint8_t>(word0 >> (24 - 8 * i));
    r.mbp2->nic(0).send_area_write(1, entry0, w);
  };
  // Longer commands than the doorbell's header said.
  const Command a = write_bytes(0x10100, 64, 1);
  ASSERT_TRUE(r.sys->syscall(0, 1, Request{1, {a}}, [&] {
    auto h = r.mbp2->nic(0).send_area_read(1, entry0, 4);
    const uint32_t w = static_cast<uint32_t>(h[0]) << 24 | h[1] << 16 | h[2] << 8 | h[3];
    rewrite(w + 4);
  }));
  r.run(5);
  EXPECT_EQ(r.counter("system.host0.nic.pge.errors"), 1u);
  EXPECT_EQ(r.cards("bad_requests"), 1u);
  EXPECT_EQ(r.mbp2->nic(0).pge().desc(0).bytes, 12 + 64u);  // the image the header promised
  EXPECT_TRUE(r.mbp2->nic(0).pge().desc(0).error());
  EXPECT_EQ(r.mbp2->nic(0).pge().desc(0).ctx, r.task(0).ptask);
  EXPECT_EQ(r.mbp2->nic(0).pge().desc(0).src, Mbp2Nic::send_entry_laddr(0));
  for (uint32_t i = 0; i < 64; ++i) ASSERT_EQ(r.byte(1, 0x10100 + i), 0) << i;  // nothing sent
  EXPECT_EQ(r.counter("system.mbcf.packets_sent"), 0u);
  // Not a request any more.
  ASSERT_TRUE(r.sys->syscall(0, 1, Request{1, {a}}, [&] { rewrite(0x7f000000u); }));
  r.run(5);
  EXPECT_EQ(r.counter("system.host0.nic.pge.errors"), 2u);
  EXPECT_EQ(r.cards("bad_requests"), 2u);
  for (uint32_t i = 0; i < 64; ++i) ASSERT_EQ(r.byte(1, 0x10100 + i), 0) << i;
  // Left alone, the same request goes out; every entry and request image is free again.
  ASSERT_TRUE(r.sys->syscall(0, 1, Request{1, {a}}, [] {}));
  r.run(50);  // (and its acknowledgement)
  for (uint32_t i = 0; i < 64; ++i) ASSERT_EQ(r.byte(1, 0x10100 + i), a.data[i]) << i;
  EXPECT_EQ(r.counter("system.host0.nic.pge.errors"), 2u);
  EXPECT_EQ(r.mbp2->nic(0).fetched(1), 3u);
  EXPECT_EQ(r.mbp2->nic(0).request_images().in_use(), 0u);
  EXPECT_TRUE(r.sys->quiet()) << r.sys->state_dump();
}

// The PME builds the header from the requester the ULI named and its translation table, and
// runs the library's checks again on the image: a task may write anything into its send
// structure. Each bad structure is refused and counted, its entry and request slot are free
// again, and nothing is sent; a good one written by hand goes out as the task's own.
TEST(Mbp2, TheNicTrustsNothingInASendStructureButItsCommands) {
  Mbp2Config mc;
  mc.request_slots = 2;
  Rig r(mc);
  Sniffer sn(r);
  auto structure = [](uint32_t kind, uint32_t ltask, uint32_t src, uint32_t plen, const std::vector<uint8_t>& cmds) {
    std::vector<uint8_t> s;
    for (uint32_t w : {kind << 24 | static_cast<uint32_t>(cmds.size()), ltask, src, plen})
      for (int i = 3; i >= 0; --i) s.push_back(static_cast<uint8_t>(w >> (8 * i)));
    s.insert(s.end(), cmds.begin(), cmds.end());
    return s;
  };
  // The commands of a packet as they travel (from the command word).
  auto body = [](const Command& c) {
    Packet p;
    p.cmds.push_back(c);
    std::vector<uint8_t> b;
    EXPECT_TRUE(encode(p, b));
    return std::vector<uint8_t>(b.begin() + kHeaderBytes, b.begin() + packet_bytes(p));
  };
  Command reply;
  reply.cmd = Cmd::Reply;
  reply.status_laddr = 0x10100;
  reply.status = 1;
  reply.data_laddr = kNoAddr;
  const Command w = write_bytes(0x10100, 64, 40);
  std::vector<uint8_t> garbage = body(w);
  garbage[0] = 0xee;  // no such command
  const std::vector<uint8_t> ww = body(w);
  const std::vector<uint8_t> no_data(ww.begin(), ww.end() - 64);
  const std::vector<std::vector<uint8_t>> bad = {
      structure(Mbp2Nic::kSendMbcf, 1, kNoAddr, 0, body(reply)),  // a REPLY: not a user's command
      structure(Mbp2Nic::kSendMbcf, 1, kNoAddr, 0, garbage),
      structure(7, 1, kNoAddr, 0, body(w)),                            // no such kind
      structure(Mbp2Nic::kSendMbcf, 9, kNoAddr, 0, body(w)),        // no such Ltask
      structure(Mbp2Nic::kSendMbcf, 1, 0x700000, 64, no_data),  // payload not mapped
      structure(Mbp2Nic::kSendMbcf, 1, kNoAddr, 0x10000, body(w)),  // a payload size without an address
      structure(Mbp2Nic::kSendMbcf, 1, 0x10000, 1000, std::vector<uint8_t>(1500, 0)),  // longer than any packet
  };
  size_t i = 0;
  std::function<void()> next = [&] {
    if (i < bad.size()) {
      ASSERT_TRUE(r.mbp2->nic(0).ring_structure(2, r.mbp2->nic(0).alias_of(2), bad[i++], next));
    }
  };
  next();
  r.run(5);
  EXPECT_EQ(i, bad.size());
  EXPECT_EQ(r.cards("bad_requests"), bad.size());
  EXPECT_EQ(r.counter("system.mbcf.packets_sent"), 0u);
  EXPECT_EQ(r.mbp2->nic(0).fetched(2), bad.size());  // every entry free again
  for (uint32_t k = 0; k < 64; ++k) ASSERT_EQ(r.byte(1, 0x10100 + k), 0u);
  // Written by hand, well formed: it goes out as task 2's (its key), whatever the structure.
  ASSERT_TRUE(r.mbp2->nic(0).ring_structure(2, r.mbp2->nic(0).alias_of(2), structure(Mbp2Nic::kSendMbcf, 1, kNoAddr, 0, body(w)), [] {}));
  r.run(5);
  EXPECT_EQ(r.counter("system.mbcf.packets_sent"), 1u);
  ASSERT_EQ(r.byte(1, 0x10100 + 63), static_cast<uint8_t>(40 + 63 * 7));
  bool seen = false;
  for (const auto& f : sn.frames) {
    Packet p;
    if (f.size() > 14 && f[12] == (kEtherType >> 8) && decode(f.data(), f.size(), p) == DecodeError::None && !p.cmds.empty() && p.cmds[0].cmd == Cmd::Write) {
      EXPECT_EQ(p.src_ptask, 2u);
      EXPECT_EQ(p.src_key, 2000u);
      EXPECT_EQ(p.dst_key, 1001u);
      seen = true;
    }
  }
  EXPECT_TRUE(seen);
  r.run(100);  // its acknowledgement
  EXPECT_TRUE(r.sys->quiet()) << r.sys->state_dump();  // no request slot kept by a refused structure
}

// A task whose send structures are all still unfetched waits for the PGE (its CPU held), and
// every request lands in order.
TEST(Mbp2, ATaskWithEverySendStructureUnfetchedWaitsForThePge) {
  Mbp2Config mc;
  mc.send_ring_entries = 2;
  Rig r(mc);
  constexpr uint32_t kWrites = 12;
  uint32_t rung = 0;
  std::function<void()> next = [&] {
    if (rung == kWrites) return;
    Command c = write_bytes(0x10000 + 1024 * rung, 1024, static_cast<uint8_t>(rung));
    ++rung;
    ASSERT_TRUE(r.sys->syscall(0, 1, Request{1, {c}}, next));
  };
  next();
  r.run(50);
  EXPECT_EQ(rung, kWrites);
  EXPECT_GT(r.cards("send_ring_waits"), 0u);
  EXPECT_EQ(r.mbp2->nic(0).fetched(1), kWrites);
  for (uint32_t i = 0; i < kWrites; ++i) ASSERT_EQ(r.byte(1, 0x10000 + 1024 * i + 1000), static_cast<uint8_t>(i + 1000 * 7)) << i;
  EXPECT_TRUE(r.sys->quiet());
}

// With few frame buffers, frames wait for a transmit buffer in order, and a frame that finds
// every receive buffer full is lost at the LDMA and resent by Go-back-N: every write lands.
TEST(Mbp2, FewFrameBuffersDelayOrLoseFramesButEveryWriteLands) {
  Mbp2Config mc;
  mc.ring_entries = 2;
  EtherSysConfig ec;
  ec.rx_ring = 2;
  Rig r(mc, ec);
  constexpr uint32_t kWrites = 40;
  uint32_t issued = 0;
  std::function<void()> next = [&] {
    if (issued == kWrites) return;
    const uint32_t i = issued++;
    ASSERT_TRUE(r.sys->syscall(0, 1, Request{1, {write_bytes(0x10000 + 1400 * i, 1400, static_cast<uint8_t>(i))}}, next));
  };
  next();
  r.run(200);
  ASSERT_EQ(issued, kWrites);
  for (uint32_t i = 0; i < kWrites; ++i)
    for (uint32_t j = 0; j < 1400; j += 51) ASSERT_EQ(r.byte(1, 0x10000 + 1400 * i + j), static_cast<uint8_t>(i + j * 7)) << i << " " << j;
  EXPECT_GT(r.counter("system.host0.nic.tx_buffers.exhausted"), 0u);
  EXPECT_EQ(r.counter("system.host0.nic.tx_buffers.high_water"), 2u);
  EXPECT_GT(r.counter("system.host1.nic.rx_buffers.exhausted"), 0u);
  EXPECT_GT(r.counter("system.mbcf.retransmissions"), 0u);
  EXPECT_EQ(r.counter("system.host1.nic.rx_buffers.high_water"), 2u);
  EXPECT_TRUE(r.sys->quiet());
}

}  // namespace
}  // namespace mbpsim::mbp2
