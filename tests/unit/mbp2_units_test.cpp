// The MBP2 units on their own: bus burst timing (SBus alignment, PCI), card-memory contention
// between routes, the context-tagged TLB, the PME's CPI and interrupt models and priorities,
// doorbell aliases, DMA descriptor rings.
#include <gtest/gtest.h>

#include <algorithm>
#include <systemc>
#include <vector>

#include "models/core/calendar.h"
#include "models/mbp2/units.h"
#include "tests/test_util.h"

namespace mbpsim::mbp2 {
namespace {

TEST(Mbp2Bus, SBusSplitsUnalignedTransfersIntoAlignedBursts) {
  Stats st;
  BusConfig c;  // SBus: 25 MHz, 4 bytes, 32-byte bursts, 3 cycles per burst
  HostBus b(c, st, "biu");
  EXPECT_DOUBLE_EQ(b.transfer_cycles(0, 32), 3 + 8);           // one full burst
  EXPECT_DOUBLE_EQ(b.transfer_cycles(0, 64), 2 * (3 + 8));
  EXPECT_DOUBLE_EQ(b.transfer_cycles(4, 32), (3 + 1) + (3 + 2) + (3 + 4) + (3 + 1));  // 4 @4, 8 @8, 16 @16, 4 @32
  EXPECT_DOUBLE_EQ(b.transfer_cycles(0, 4), 3 + 1);
  EXPECT_GT(b.transfer_cycles(4, 32), b.transfer_cycles(0, 32));
  EXPECT_EQ(b.cycles_ps(25), 1000000u);  // 25 cycles of 25 MHz = 1 us
}

TEST(Mbp2Bus, PciTakesAnyAlignmentAtFullSpeed) {
  Stats st;
  BusConfig c;
  c.kind = BusConfig::Kind::Pci;
  c.clock_mhz = 66;
  c.width_bytes = 8;
  c.max_burst = 256;
  c.overhead_cycles = 4;
  HostBus b(c, st, "biu");
  EXPECT_DOUBLE_EQ(b.transfer_cycles(0, 256), 4 + 32);
  EXPECT_DOUBLE_EQ(b.transfer_cycles(3, 256), 4 + 33);  // one more data phase, same burst
  EXPECT_DOUBLE_EQ(b.transfer_cycles(0, 512), 2 * (4 + 32));
}

// DMA transfers share the bus burst by burst; a programmed write wins the next arbitration,
// waiting only for the burst in progress, and the transfers stand still while it runs.
TEST(Mbp2Bus, DmaTransfersShareTheBusAndAProgrammedWriteWinsTheNextBurst) {
  Stats st;
  BusConfig c;
  HostBus b(c, st, "biu");
  const uint64_t pio = b.cycles_ps(c.pio_cycles);  // 20 cycles: 800 ns
  const auto d1 = b.dma(0, 0, 64);                 // 2 bursts of 11 cycles = 880 ns
  EXPECT_EQ(d1.end(), 880000u);
  const uint64_t e2 = b.pio(100000);  // waits for the burst in progress only (11 cycles)
  EXPECT_EQ(e2, 100000 + 440000 + pio);
  EXPECT_EQ(d1.end(), 880000 + pio);  // the DMA stood still meanwhile
  EXPECT_EQ(test::stat_value(st, "biu.wait_ps"), 440000 + pio);
  // A second transfer due at once shares the bus with the first: 0-540 ns at half speed each
  // (270 ns of work), both stand still for the write, then the second's 170 ns left take 340.
  const auto d2 = b.dma(0, 0, 32);  // 440 ns alone
  EXPECT_EQ(d2.end(), 540000 + pio + 340000);
  EXPECT_EQ(d1.end(), 880000 + pio + 440000);  // delayed by all of the second's work
  EXPECT_EQ(test::stat_value(st, "biu.wait_ps"), 440000 + pio + 440000 + (d2.end() - 440000));
  // Several spans in one tenure cost their bursts added up.
  Stats st2;
  HostBus b2(c, st2, "biu2");
  EXPECT_EQ(b2.dma(0, {{0, 64}, {4, 32}}).end(), b2.cycles_ps(b2.transfer_cycles(0, 64) + b2.transfer_cycles(4, 32)));
  EXPECT_EQ(test::stat_value(st2, "biu2.dma_bytes"), 96);
}

TEST(Mbp2Em, ASaturatedRouteSlowsTheOthers) {
  Stats st;
  EmConfig c;  // 40 MHz, 8 bytes wide, 32-byte bursts, 3 cycles per burst
  Em em(c, st, "em");
  EXPECT_EQ(em.access_ps(32), static_cast<uint64_t>((3 + 4) * 25000));
  // Alone, a 64-byte host access takes 14 cycles.
  EXPECT_EQ(em.access(Route::Host, 0, 64).end(), 14u * 25000);
  // The MAC route streams 1 KiB (224 cycles); a PME access (4 cycles) booked meanwhile takes
  // every other burst, at half speed, and delays the MAC by its own length.
  Stats st2;
  Em em2(c, st2, "em2");
  const auto mac = em2.access(Route::Mac, 0, 1024);
  const auto pme = em2.access(Route::Pme, 1000, 8);
  EXPECT_EQ(pme.end(), 1000 + 2 * em2.access_ps(8));
  EXPECT_EQ(mac.end(), 224 * 25000 + em2.access_ps(8));
  EXPECT_EQ(em2.wait_ps(Route::Pme), em2.access_ps(8));
  EXPECT_EQ(em2.wait_ps(Route::Mac), em2.access_ps(8));
  EXPECT_EQ(test::stat_value(st2, "em2.mac.bytes"), 1024u);
}

// An access booked ahead (an engine's setup still running) shares the memory only from its
// start; one booked later but due earlier shares it from its own start, and everything in
// progress slows while it does.
TEST(Mbp2Em, AnAccessBookedAheadSharesTheMemoryOnlyFromItsStart) {
  Stats st;
  EmConfig c;
  Em em(c, st, "em");
  const uint64_t cyc = 25000;
  const auto host = em.access(Route::Host, 100 * cyc, 2048);  // 448 cycles from cycle 100
  EXPECT_EQ(host.end(), 548 * cyc);
  // The MAC's frame, due now, is over before it starts.
  const auto mac = em.access(Route::Mac, 0, 64);
  EXPECT_EQ(mac.end(), 14 * cyc);
  EXPECT_EQ(em.wait_ps(Route::Mac), 0u);
  EXPECT_EQ(host.end(), 548 * cyc);
  // 1 KiB (224 cycles) due now: it shares with the MAC until cycle 28 (14 served), runs alone
  // until 100 (86), then shares with the host's transfer for its 138 left: over at 376; the
  // host's is delayed 138 cycles, the MAC's 14.
  const auto pme = em.access(Route::Pme, 0, 1024);
  EXPECT_EQ(mac.end(), 28 * cyc);
  EXPECT_EQ(pme.end(), 376 * cyc);
  EXPECT_EQ(host.end(), 686 * cyc);
  EXPECT_EQ(em.wait_ps(Route::Mac), 14 * cyc);
  EXPECT_EQ(em.wait_ps(Route::Pme), 152 * cyc);
  EXPECT_EQ(em.wait_ps(Route::Host), 138 * cyc);
}

// A power loss stops the engines, and what they had in flight takes no more of the memory: an
// access after it is served alone.
TEST(Mbp2Em, APowerLossStopsTheAccessesInProgress) {
  Stats st;
  Em em(EmConfig{}, st, "em");
  em.access(Route::Mac, 0, 1 << 16);
  EXPECT_EQ(em.access(Route::Host, 0, 64).end(), 2 * em.access_ps(64));  // sharing
  em.power_off();
  EXPECT_EQ(em.access(Route::Host, 0, 64).end(), em.access_ps(64));  // alone
}

TEST(Mbp2Tlb, ContextTagsKeepAddressSpacesApartAndLruEvicts) {
  Stats st;
  Tlb t(2, st, "tlb");
  uint64_t pp = 0;
  EXPECT_FALSE(t.lookup(1, 5, &pp));
  t.insert(1, 5, 100);
  EXPECT_TRUE(t.lookup(1, 5, &pp));
  EXPECT_EQ(pp, 100u);
  EXPECT_FALSE(t.lookup(2, 5, &pp));  // same page, other context: a miss
  t.insert(2, 5, 200);
  EXPECT_TRUE(t.lookup(1, 5, &pp));   // context 1 becomes most recent
  t.insert(3, 7, 300);                // evicts context 2's entry
  EXPECT_FALSE(t.lookup(2, 5));
  EXPECT_TRUE(t.lookup(1, 5));
  t.flush_context(1);
  EXPECT_FALSE(t.lookup(1, 5));
  EXPECT_EQ(test::stat_value(st, "tlb.evictions"), 1u);
  EXPECT_EQ(test::stat_value(st, "tlb.hits"), 3u);
}

// probe is what a DMA transfer sees as it moves bytes: the entry, with no statistics and no
// change of the replacement order; clear is a power loss.
TEST(Mbp2Tlb, AProbeCountsNothingAndKeepsTheLruOrder) {
  Stats st;
  Tlb t(2, st, "tlb");
  uint64_t pp = 0;
  EXPECT_FALSE(t.probe(1, 5, &pp));
  t.insert(1, 5, 100);
  t.insert(2, 6, 200);  // most recent; context 1's entry is next to go
  EXPECT_TRUE(t.probe(1, 5, &pp));
  EXPECT_EQ(pp, 100u);
  EXPECT_FALSE(t.probe(2, 5, &pp));
  EXPECT_EQ(test::stat_value(st, "tlb.hits") + test::stat_value(st, "tlb.misses"), 0u);
  t.insert(3, 7, 300);  // evicts (1, 5): the probe did not make it recent
  EXPECT_FALSE(t.probe(1, 5, &pp));
  EXPECT_TRUE(t.probe(2, 6, &pp));
  t.clear();
  EXPECT_EQ(t.size(), 0u);
  EXPECT_FALSE(t.probe(2, 6, &pp));
  EXPECT_FALSE(t.probe(3, 7, &pp));
}

TEST(Mbp2Pme, CpiComesFromTheMemorySystem) {
  Stats st;
  Calendar cal("cal");
  PmeConfig c;
  c.imiss_per_instr = 0.03;
  c.line_fill_bus_cycles = 8;
  c.shared_per_instr = 0.1;
  c.shared_bus_cycles = 16;
  c.store_per_instr = 0.1;
  c.wt_stall_bus_cycles = 1;
  Pme slow(cal, c, st, "a");
  // 100 MHz core on a 20 MHz bus: 5 core cycles per bus cycle.
  EXPECT_NEAR(slow.cpi(), 1 + 0.03 * 8 * 5 + 0.1 * 16 * 5 + 0.1 * 1 * 5, 1e-9);
  PmeConfig cc = c;
  cc.cache_control = true;  // Casablanca: shared areas cacheable with explicit fill/write-back
  Pme fast(cal, cc, st, "b");
  EXPECT_LT(fast.cpi(), slow.cpi());
  EXPECT_EQ(slow.instr_ps(100), static_cast<uint64_t>(100 * slow.cpi() * 10000 + 0.5));
  // The SS20 kernel routine ported: host cycles / host CPI instructions.
  EXPECT_EQ(slow.host_cycles_ps(130), slow.instr_ps(100));
}

TEST(Mbp2Pme, RegisterSetsMakeInterruptsFreeAndPriorityOrdersWaitingHandlers) {
  Stats st;
  Calendar cal("cal");
  PmeConfig c;
  Pme conv(cal, c, st, "conv");
  EXPECT_GT(conv.interrupt_ps(), 1000000u);  // "a few us per interrupt" (8.3.5)
  PmeConfig z = c;
  z.register_sets = true;
  Pme zero(cal, z, st, "zero");
  EXPECT_EQ(zero.interrupt_ps(), 0u);
  std::vector<int> order;
  std::vector<uint64_t> at;
  conv.run("first", Pme::kLow, true, 1000, [&] { order.push_back(0); at.push_back(cal.now_ps()); });
  conv.run("low", Pme::kLow, false, 1000, [&] { order.push_back(1); });
  conv.run("high", Pme::kHigh, false, 1000, [&] { order.push_back(2); });
  sc_core::sc_start(sc_core::sc_time(1, sc_core::SC_MS));
  EXPECT_EQ(order, (std::vector<int>{0, 2, 1}));  // the running one finishes; then by priority
  EXPECT_EQ(at[0], 1000 + conv.interrupt_ps());
  EXPECT_EQ(conv.interrupts(), 1u);
  EXPECT_EQ(test::stat_value(st, "conv.handler.high_ps"), 1000u);
  EXPECT_TRUE(conv.idle());
}

// A unit's completions raise the interrupt of its ring (8.3.5); the handler loops while its
// ring has done entries, so completions of one ring that wait behind the running one are
// collected without a new entry, and what a handler starts for later continues it. Another
// ring's completion in between, or the PME idle in between, costs a new entry.
TEST(Mbp2Pme, CompletionsOfOneRingWaitingBehindItsHandlerShareOneInterrupt) {
  Stats st;
  Calendar cal("cal");
  Pme p(cal, PmeConfig{}, st, "pme");
  PmeConfig z;
  z.register_sets = true;
  Pme q(cal, z, st, "zero");
  const uint64_t e = p.interrupt_ps();
  ASSERT_GT(e, 0u);
  std::vector<std::pair<int, uint64_t>> ends;
  auto mark = [&](int i) { return [&, i] { ends.emplace_back(i, cal.now_ps()); }; };
  // Three LDMA completions at once; the first handler's run also starts a step of its own.
  p.run_from(Pme::kLdmaTxRing, "tx_done", Pme::kLow, 1000, [&] {
    ends.emplace_back(0, cal.now_ps());
    p.run("step", Pme::kLow, false, 500, mark(9));
  });
  p.run_from(Pme::kLdmaTxRing, "tx_done", Pme::kLow, 1000, mark(1));
  p.run_from(Pme::kLdmaTxRing, "tx_done", Pme::kLow, 1000, mark(2));
  sc_core::sc_start(sc_core::sc_time(1, sc_core::SC_MS));
  // The step (arrived last) runs last; it continues the handler, which then ends.
  EXPECT_EQ(ends, (std::vector<std::pair<int, uint64_t>>{{0, e + 1000}, {1, e + 2000}, {2, e + 3000}, {9, e + 3500}}));
  EXPECT_EQ(p.interrupts(), 1u);
  EXPECT_EQ(p.coalesced(), 2u);
  EXPECT_EQ(test::stat_value(st, "pme.handler.tx_done_ps"), static_cast<int64_t>(e + 3000));
  // Idle in between: a new entry. Then a PGE completion between two LDMA ones: three entries
  // (priority, then arrival, decides the order; a handler's loop does not jump the queue).
  ends.clear();
  const uint64_t t0 = cal.now_ps();
  p.run_from(Pme::kLdmaTxRing, "tx_done", Pme::kNormal, 1000, mark(3));
  p.run_from(Pme::kPgeRing, "header_build", Pme::kNormal, 1000, mark(4));
  p.run_from(Pme::kLdmaTxRing, "tx_done", Pme::kNormal, 1000, mark(5));
  sc_core::sc_start(sc_core::sc_time(1, sc_core::SC_MS));
  EXPECT_EQ(ends, (std::vector<std::pair<int, uint64_t>>{{3, t0 + e + 1000}, {4, t0 + 2 * e + 2000}, {5, t0 + 3 * e + 3000}}));
  EXPECT_EQ(p.interrupts(), 4u);
  EXPECT_EQ(p.coalesced(), 2u);
  // A higher-priority interrupt waiting comes before the ring's next entry, which then needs
  // an entry of its own.
  ends.clear();
  p.run_from(Pme::kLdmaRxRing, "rx", Pme::kLow, 1000, mark(6));
  p.run_from(Pme::kLdmaRxRing, "rx", Pme::kLow, 1000, mark(7));
  p.run("icu", Pme::kHigh, true, 1000, mark(8));
  sc_core::sc_start(sc_core::sc_time(1, sc_core::SC_MS));
  ASSERT_EQ(ends.size(), 3u);
  EXPECT_EQ(ends[1].first, 8);
  EXPECT_EQ(p.interrupts(), 7u);
  EXPECT_EQ(p.coalesced(), 2u);
  // With register sets nothing changes but the cost: entries are free.
  q.run_from(Pme::kCauRing, "cau_done", Pme::kNormal, 1000, [] {});
  q.run_from(Pme::kCauRing, "cau_done", Pme::kNormal, 1000, [] {});
  sc_core::sc_start(sc_core::sc_time(1, sc_core::SC_MS));
  EXPECT_EQ(q.interrupts(), 1u);
  EXPECT_EQ(q.coalesced(), 1u);
  EXPECT_EQ(test::stat_value(st, "zero.interrupt_ps"), 0);
}

// The PME's uncached loads and stores (the CPI model's shared accesses) reach EM on its route:
// a handler books them there, paced over its run; alone it is not slowed, but a memory crowded
// by the other routes gives it less than its pace and the handler stalls on its last accesses.
TEST(Mbp2Pme, AHandlersUncachedAccessesLoadEmAndACrowdedMemoryStallsIt) {
  Stats st;
  Calendar cal("cal");
  PmeConfig c;  // the MBP2P's: CPI 10.7, 0.1 uncached words per instruction
  Pme p(cal, c, st, "pme");
  Em em(EmConfig{}, st, "em");  // 40 MHz: one word access is 4 cycles, 100 ns
  p.attach(&em);
  const uint64_t dur = p.instr_ps(1000);
  EXPECT_NEAR(p.em_accesses(dur), 100, 0.01);
  uint64_t done = 0;
  p.run("h", Pme::kNormal, false, dur, [&] { done = cal.now_ps(); });
  EXPECT_EQ(test::stat_value(st, "em.pme.bytes"), 400);
  EXPECT_EQ(test::stat_value(st, "em.pme.busy_ps"), 100 * em.access_ps(4));
  sc_core::sc_start(sc_core::sc_time(1, sc_core::SC_MS));
  EXPECT_EQ(done, dur);
  EXPECT_EQ(test::stat_value(st, "pme.em_stall_ps"), 0);
  // Twenty streams on the MAC route: an equal share (1/21) is below the PME's pace (10 us of
  // accesses in 107 us), so its accesses take twice its run.
  for (int i = 0; i < 20; ++i) em.access(Route::Mac, cal.now_ps(), 1 << 16);
  const uint64_t t0 = cal.now_ps();
  p.run("h", Pme::kNormal, false, dur, [&] { done = cal.now_ps(); });
  sc_core::sc_start(sc_core::sc_time(1, sc_core::SC_MS));
  EXPECT_EQ(done, t0 + 21 * 100 * em.access_ps(4));
  EXPECT_EQ(test::stat_value(st, "pme.em_stall_ps"), static_cast<int64_t>(done - t0 - dur));
  EXPECT_EQ(test::stat_value(st, "pme.busy_ps"), static_cast<int64_t>(dur + (done - t0)));
}

TEST(Mbp2Uli, TheAliasNamesTheTaskAndAnUnassignedAliasIsRejected) {
  Stats st;
  HostBus bus(BusConfig{}, st, "biu");
  Kli kli(bus, st, "kli");
  Uli u(kli, st, "uli");
  // The OS writes each alias's owner into EM through the KLI: one programmed word each.
  const uint64_t t = u.assign(0, 7);
  EXPECT_EQ(t, bus.cycles_ps(BusConfig{}.pio_cycles));
  u.assign(1, 9, t);
  EXPECT_EQ(kli.load32(Kli::kAliasTable + 4), 10u);  // ptask + 1, as the NIC reads it
  EXPECT_EQ(test::stat_value(st, "kli.host_writes"), 2u);
  // The bus does not say who stored: the alias names the task.
  EXPECT_EQ(u.ring(0), 7);
  EXPECT_EQ(u.ring(1), 9);
  EXPECT_EQ(u.ring(5), -1);  // unassigned alias
  EXPECT_EQ(u.alias_of(9), 1);
  u.revoke(1);
  EXPECT_EQ(u.ring(1), -1);
  EXPECT_EQ(test::stat_value(st, "uli.rejected"), 2u);
  EXPECT_EQ(test::stat_value(st, "uli.doorbells"), 2u);
  EXPECT_EQ(u.ring(Kli::kAliases + 3), -1);  // an address past the alias page
}

TEST(Mbp2Kli, TheKernelAreaHoldsRealBytesReachedByProgrammedWords) {
  Stats st;
  HostBus bus(BusConfig{}, st, "biu");
  Kli kli(bus, st, "kli");
  const uint8_t in[10] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  const uint64_t w = kli.write(0, 0x100, in, 10);  // three words
  EXPECT_EQ(w, 3 * bus.cycles_ps(BusConfig{}.pio_cycles));
  uint8_t out[10] = {};
  kli.read(w, 0x100, out, 10);
  EXPECT_TRUE(std::equal(in, in + 10, out));
  EXPECT_EQ(kli.load32(0x104), 0x05060708u);
  EXPECT_EQ(test::stat_value(st, "kli.host_reads"), 3u);
}

TEST(Mbp2Icu, MessagesTravelInOrderEachWay) {
  Stats st;
  Icu icu(st, "icu");
  uint64_t m = 0;
  EXPECT_FALSE(icu.take_for_host(&m));
  icu.to_host(0x1122334455667788ull);
  icu.to_host(2);
  icu.to_pme(3);
  ASSERT_TRUE(icu.take_for_host(&m));
  EXPECT_EQ(m, 0x1122334455667788ull);
  ASSERT_TRUE(icu.take_for_host(&m));
  EXPECT_EQ(m, 2u);
  EXPECT_FALSE(icu.take_for_host(&m));
  ASSERT_TRUE(icu.take_for_pme(&m));
  EXPECT_EQ(m, 3u);
  EXPECT_EQ(test::stat_value(st, "icu.to_host"), 2u);
}

// The engine serves its descriptors in order, each after its setup, and calls a transfer's
// timing only when it starts it: nothing is booked for the descriptors waiting behind.
TEST(Mbp2Dma, DescriptorsAreServedInOrderAfterTheirSetup) {
  Stats st;
  Calendar cal("cal");
  Em em(EmConfig{}, st, "em");
  DmaEngine d(cal, em, 2, 100, st, "dma");
  FirmwareRing fw(cal, d);
  std::vector<uint64_t> starts, ends;
  auto xfer = [&](uint64_t s) {
    starts.push_back(s);
    EXPECT_EQ(s, cal.now_ps() + 100000);  // timed when the engine takes it, a setup ahead
    return s + 1000000;
  };
  auto k = [&](const DmaEngine::Desc&) { ends.push_back(cal.now_ps()); };
  std::vector<uint32_t> numbers;
  for (int i = 0; i < 3; ++i) numbers.push_back(fw.post(0, 0, 0, 64, xfer, k));
  EXPECT_EQ(numbers, (std::vector<uint32_t>{0, 1, 2}));
  EXPECT_EQ(starts.size(), 1u);  // the first only: the others wait behind it
  EXPECT_FALSE(fw.finished(0));
  uint64_t waited = 0;
  fw.when_done(1, [&] { waited = cal.now_ps(); });
  sc_core::sc_start(sc_core::sc_time(1250, sc_core::SC_NS));
  EXPECT_EQ(starts.size(), 2u);  // the third is not timed while the second runs
  sc_core::sc_start(sc_core::sc_time(3, sc_core::SC_US));
  const uint64_t one = 100000u + 1000000;
  EXPECT_EQ(starts, (std::vector<uint64_t>{100000, one + 100000, 2 * one + 100000}));
  EXPECT_EQ(ends, (std::vector<uint64_t>{one, 2 * one, 3 * one}));  // each waits for the one before
  EXPECT_EQ(waited, 2 * one);
  EXPECT_TRUE(fw.finished(2));
  bool at_once = false;
  fw.when_done(0, [&] { at_once = true; });
  EXPECT_TRUE(at_once);
  EXPECT_EQ(test::stat_value(st, "dma.ring_full"), 1u);  // two outstanding when the third came
  EXPECT_EQ(test::stat_value(st, "dma.bytes"), 192u);
}

// A transfer's end is what its bookings say when it comes: an access booked after the engine
// took its descriptor shares the memory and delays it, and the engine completes then.
TEST(Mbp2Dma, ATransferDelayedByALaterAccessCompletesWhenItIsReallyOver) {
  Stats st;
  Calendar cal("cal");
  Em em(EmConfig{}, st, "em");  // 40 MHz: 1 KiB is 224 cycles, 5.6 us
  DmaEngine d(cal, em, 2, 0, st, "dma");
  FirmwareRing fw(cal, d);
  uint64_t told = 0, done = 0;
  fw.post(0, 0, 0, 1024, [&](uint64_t s) {
    const Finish f(s, em.access(Route::Mac, s, 1024));
    told = f.end();
    return f;
  }, [&](const DmaEngine::Desc&) { done = cal.now_ps(); });
  sc_core::sc_start(sc_core::sc_time(1, sc_core::SC_US));
  EXPECT_EQ(told, 5600000u);
  // 256 bytes on another route (56 cycles, 1.4 us) share the memory from 1 us on.
  const auto other = em.access(Route::Crypto, cal.now_ps(), 256);
  EXPECT_EQ(other.end(), 1000000u + 2 * 1400000);
  sc_core::sc_start(sc_core::sc_time(10, sc_core::SC_US));
  EXPECT_EQ(done, 5600000u + 1400000);
  EXPECT_EQ(test::stat_value(st, "dma.busy_ps"), 5600000 + 1400000);
}

// The ring is real bytes in EM: a posted descriptor holds its addresses and length with the
// engine's owner bit; at completion the engine hands it back marked done; a third descriptor
// on a two-entry ring is written only when the first's slot is free.
TEST(Mbp2Dma, TheDescriptorRingLivesInEmAndCompletionsAreWrittenBack) {
  Stats st;
  Calendar cal("cal");
  Em em(EmConfig{}, st, "em");
  em.carve(100);  // something else's structure first: rings go where EM has room
  DmaEngine d(cal, em, 2, 0, st, "dma");
  EXPECT_EQ(d.ring_offset(), 100u);
  EXPECT_EQ(em.size(), 100u + 2 * DmaEngine::kDescBytes);
  auto xfer = [](uint64_t s) { return s + 1000000; };  // 1 us each
  const uint32_t r = d.ring_offset();
  d.post(0, 0x12345678, 0x40, 256, xfer);
  d.post(0, 0x9000, 0x80, 512, xfer);
  EXPECT_EQ(em.load32(r), 0x12345678u);
  EXPECT_EQ(em.load32(r + 4), 0x40u);
  EXPECT_EQ(em.load32(r + 8), 256u);
  EXPECT_EQ(em.load32(r + 12), (DmaEngine::kOwn | 0u));
  EXPECT_EQ(em.load32(r + 16), DmaEngine::kNoContext);  // no host address in a context
  EXPECT_EQ(em.load32(r + DmaEngine::kDescBytes + 8), 512u);
  EXPECT_EQ(em.load32(r + DmaEngine::kDescBytes + 12), (DmaEngine::kOwn | 1u));
  d.post(0, 0xa000, 0xc0, 64, xfer);                      // slot 0 again: waits for descriptor 0
  EXPECT_EQ(em.load32(r + 8), 256u);                     // not yet overwritten
  sc_core::sc_start(sc_core::sc_time(1500, sc_core::SC_NS));  // descriptor 0 done, 2 written
  EXPECT_EQ(em.load32(r), 0xa000u);
  EXPECT_EQ(em.load32(r + 8), 64u);
  EXPECT_EQ(em.load32(r + 12), (DmaEngine::kOwn | 2u));
  EXPECT_EQ(em.load32(r + DmaEngine::kDescBytes + 12), (DmaEngine::kOwn | 1u));  // descriptor 1 runs until 2 us
  sc_core::sc_start(sc_core::sc_time(2, sc_core::SC_US));
  EXPECT_EQ(em.load32(r + 12), (DmaEngine::kDone | 2u));
  EXPECT_EQ(em.load32(r + DmaEngine::kDescBytes + 12), (DmaEngine::kDone | 1u));
}

// A descriptor with the back bit moves from the engine's second port to its first (the ADMA
// reading host memory into EM); one without it, from the first to the second.
TEST(Mbp2Dma, TheBackBitMovesFromTheSecondPortToTheFirst) {
  Stats st;
  Calendar cal("cal");
  Em em(EmConfig{}, st, "em");
  const uint32_t a = em.carve(64), b = em.carve(64);
  EmPort port(em);
  MacFifo mac;
  DmaEngine d(cal, em, 4, 0, st, "dma");
  FirmwareRing fw(cal, d);
  d.connect(&port, &mac);
  const uint32_t in = mac.put({1, 2, 3, 4, 5, 6, 7, 8});
  for (uint32_t i = 0; i < 8; i += 4) em.store32(b + i, 0x11223344u);
  std::vector<DmaEngine::Desc> done;
  auto xfer = [](uint64_t s) { return s + 1000; };
  auto k = [&](const DmaEngine::Desc& x) { done.push_back(x); };
  fw.post(0, in, a, 8, xfer, k, DmaEngine::kNoContext, ~0u, DmaEngine::Move::Back);
  const uint32_t out = mac.next();
  fw.post(0, b, out, 8, xfer, k, DmaEngine::kNoContext, ~0u, DmaEngine::Move::Forward);
  sc_core::sc_start(sc_core::sc_time(1, sc_core::SC_US));
  ASSERT_EQ(done.size(), 2u);
  EXPECT_TRUE(done[0].back() && done[0].move() && done[0].done() && !done[0].error());
  EXPECT_FALSE(done[1].back());
  EXPECT_EQ(em.read(a, 8), (std::vector<uint8_t>{1, 2, 3, 4, 5, 6, 7, 8}));
  std::vector<uint8_t> f;
  ASSERT_TRUE(mac.take(out, &f));
  EXPECT_EQ(f, (std::vector<uint8_t>{0x11, 0x22, 0x33, 0x44, 0x11, 0x22, 0x33, 0x44}));
}

// The engine works from its ring, not from what it was told when posted: at completion it reads
// the descriptor back from EM and moves the length it names from its source port to its
// destination port; the owner's routine gets the descriptor as the ring holds it, done.
TEST(Mbp2Dma, TheEngineMovesWhatItsDescriptorNamesAndItsOwnerReadsTheCompletionFromTheRing) {
  Stats st;
  Calendar cal("cal");
  Em em(EmConfig{}, st, "em");
  const uint32_t a = em.carve(256), b = em.carve(256), c = em.carve(256);
  for (uint32_t i = 0; i < 256; i += 4) em.store32(a + i, 0xa0000000u | i);
  EmPort port(em);
  DmaEngine d(cal, em, 4, 0, st, "dma");
  FirmwareRing fw(cal, d);
  d.connect(&port, &port);
  std::vector<DmaEngine::Desc> done;
  auto xfer = [](uint64_t s) { return s + 1000000; };
  auto k = [&](const DmaEngine::Desc& x) { done.push_back(x); };
  fw.post(0, a, b, 64, xfer, k, DmaEngine::kNoContext, ~0u, DmaEngine::Move::Forward);
  fw.post(0, a + 64, b + 64, 16, xfer, k, DmaEngine::kNoContext, ~0u, DmaEngine::Move::Forward);
  fw.post(0, a, b + 128, 16, xfer, k);  // its owner moves these bytes: the engine takes the time
  // Before the engine gets to it, the first descriptor is rewritten in EM: 32 bytes to c.
  em.store32(d.ring_offset() + 4, c);
  em.store32(d.ring_offset() + 8, 32);
  sc_core::sc_start(sc_core::sc_time(4, sc_core::SC_US));
  ASSERT_EQ(done.size(), 3u);
  EXPECT_TRUE(done[2].done());
  EXPECT_FALSE(done[2].move());
  EXPECT_EQ(em.load32(b + 128), 0u);
  EXPECT_EQ(done[0].dst, c);
  EXPECT_EQ(done[0].bytes, 32u);
  EXPECT_TRUE(done[0].done());
  EXPECT_FALSE(done[0].error());
  EXPECT_EQ(done[0].number(), 0u);
  EXPECT_EQ(done[1].number(), 1u);
  EXPECT_EQ(done[0].status & DmaEngine::kOwn, 0u);
  for (uint32_t i = 0; i < 32; i += 4) EXPECT_EQ(em.load32(c + i), 0xa0000000u | i) << i;
  EXPECT_EQ(em.load32(c + 32), 0u);  // the length the ring named, not the one posted
  EXPECT_EQ(em.load32(b), 0u);       // nor the destination posted
  EXPECT_EQ(em.load32(b + 64), 0xa0000040u);  // the second, as posted
  EXPECT_EQ(em.load32(b + 76), 0xa000004cu);
  EXPECT_EQ(em.load32(b + 80), 0u);
}

// A descriptor whose status was overwritten before it completed is not the engine's any more:
// nothing moves and its owner hears nothing (counted in `lost`); one naming an address its
// port lacks completes with the error bit and moves nothing; after a reset (a power loss) the
// descriptors in flight neither move bytes nor complete.
TEST(Mbp2Dma, OverwrittenBadAndResetDescriptorsMoveNothing) {
  Stats st;
  Calendar cal("cal");
  Em em(EmConfig{}, st, "em");
  const uint32_t a = em.carve(64), b = em.carve(64);
  em.store32(a, 0x11223344);
  EmPort port(em);
  MacFifo mac;
  DmaEngine d(cal, em, 4, 0, st, "dma");
  FirmwareRing fw(cal, d);
  d.connect(&port, &mac);
  DmaEngine r(cal, em, 2, 0, st, "rx");  // (modules are built before the simulation starts)
  FirmwareRing rfw(cal, r);
  r.connect(&mac, &port);
  std::vector<DmaEngine::Desc> done;
  auto k = [&](const DmaEngine::Desc& x) { done.push_back(x); };
  auto xfer = [](uint64_t s) { return s + 1000000; };
  const uint32_t kNo = DmaEngine::kNoContext;
  fw.post(0, a, mac.next(), 4, xfer, k, kNo, ~0u, DmaEngine::Move::Forward);        // 0: its status is overwritten
  fw.post(0, 1u << 20, mac.next(), 4, xfer, k, kNo, ~0u, DmaEngine::Move::Forward);  // 1: the source lies outside EM
  const uint32_t ok = mac.next();
  fw.post(0, a, ok, 4, xfer, k, kNo, ~0u, DmaEngine::Move::Forward);                // 2: fine
  em.store32(d.ring_offset() + 12, 0);
  sc_core::sc_start(sc_core::sc_time(4, sc_core::SC_US));
  EXPECT_EQ(test::stat_value(st, "dma.lost"), 1);
  EXPECT_EQ(test::stat_value(st, "dma.errors"), 1);
  ASSERT_EQ(done.size(), 2u);
  EXPECT_EQ(done[0].number(), 1u);
  EXPECT_TRUE(done[0].error());
  EXPECT_TRUE(done[0].done());
  EXPECT_EQ(done[1].number(), 2u);
  EXPECT_FALSE(done[1].error());
  EXPECT_EQ(mac.size(), 1u);  // only the good one reached the FIFO
  std::vector<uint8_t> f;
  ASSERT_TRUE(mac.take(ok, &f));
  EXPECT_EQ(f, (std::vector<uint8_t>{0x11, 0x22, 0x33, 0x44}));
  // The FIFO gives a frame up whole, once.
  const uint32_t in = mac.put({1, 2, 3});
  uint8_t two[2], three[3];
  EXPECT_FALSE(mac.read(in, 0, two, 2));
  EXPECT_TRUE(mac.read(in, 0, three, 3));
  EXPECT_FALSE(mac.read(in, 0, three, 3));
  // A power loss: the descriptor in flight is forgotten.
  const uint32_t from = mac.put({9, 9, 9, 9});
  const uint64_t t0 = cal.now_ps();
  const uint32_t before = rfw.post(t0, from, b, 4, xfer, k, DmaEngine::kNoContext, ~0u, DmaEngine::Move::Forward);
  bool heard = false;
  rfw.when_done(before, [&] { heard = true; });
  rfw.reset();
  // The engine stopped: a descriptor posted now waits for nothing from before.
  uint64_t end = 0;
  rfw.post(t0, 0, 0, 4, xfer, [&](const DmaEngine::Desc&) { end = cal.now_ps(); });
  sc_core::sc_start(sc_core::sc_time(2, sc_core::SC_US));
  EXPECT_EQ(end, t0 + 1000000);
  EXPECT_TRUE(heard);  // whoever waited for the lost one is let go
  EXPECT_EQ(done.size(), 2u);
  EXPECT_EQ(em.load32(b), 0u);
  EXPECT_EQ(r.desc(0).status & DmaEngine::kDone, 0u);  // the one from before never completed
}

// The engine knows nothing of what a descriptor is for: it hands each back in the ring and
// raises the ring's interrupt. The firmware collects the used entries from EM in ring order and
// continues, for each, the routine its table names, with the descriptor as the ring holds it
// then (after the unit's own completion work). A descriptor a unit posted through its own
// interface is collected with the routine noted for it afterwards (`expect`), one with none
// noted (a key load) with nothing to do; a reset forgets the table with the engine's work.
TEST(Mbp2Dma, TheFirmwareCollectsUsedEntriesFromTheRingAndContinuesWhatItsTableNames) {
  Stats st;
  Calendar cal("cal");
  Em em(EmConfig{}, st, "em");
  DmaEngine d(cal, em, 2, 0, st, "dma");
  FirmwareRing fw(cal, d);
  // The unit's own work at completion: it writes a result length into the descriptor.
  d.set_completion([&](const DmaEngine::Desc& x) { em.store32(d.ring_offset() + x.slot * DmaEngine::kDescBytes + 8, 1000 + x.number()); });
  auto xfer = [](uint64_t s) { return s + 1000000; };
  std::vector<std::pair<std::string, uint64_t>> got;
  std::vector<uint32_t> lens;
  auto k = [&](const char* name) {
    return [&, name](const DmaEngine::Desc& x) {
      got.emplace_back(name, cal.now_ps());
      lens.push_back(x.bytes);
      EXPECT_TRUE(x.done());
      EXPECT_EQ(x.status, d.desc(x.slot).status);  // as the ring holds it
    };
  };
  EXPECT_EQ(fw.post(0, 0, 0, 64, xfer, k("a")), 0u);
  EXPECT_EQ(d.post(0, 0, 0, 64, xfer), 1u);      // nothing noted for it
  EXPECT_EQ(fw.post(0, 0, 0, 64, xfer, k("c")), 2u);  // slot 0 again: written when 0 is collected
  const uint32_t n3 = d.post(0, 0, 0, 64, xfer);
  fw.expect(n3, k("d"));                           // a unit posted it; the firmware notes it after
  sc_core::sc_start(sc_core::sc_time(5, sc_core::SC_US));
  EXPECT_EQ(got, (std::vector<std::pair<std::string, uint64_t>>{{"a", 1000000}, {"c", 3000000}, {"d", 4000000}}));
  EXPECT_EQ(lens, (std::vector<uint32_t>{1000, 1002, 1003}));
  EXPECT_EQ(d.handed(), 4u);
  EXPECT_TRUE(fw.finished(3));
  // A power loss: the descriptor in flight completes nothing and its routine is forgotten; the
  // next one's runs.
  fw.post(cal.now_ps(), 0, 0, 64, xfer, k("lost"));
  sc_core::sc_start(sc_core::sc_time(500, sc_core::SC_NS));
  fw.reset();
  EXPECT_EQ(d.handed(), d.posted());
  fw.post(cal.now_ps(), 0, 0, 64, xfer, k("after"));
  sc_core::sc_start(sc_core::sc_time(3, sc_core::SC_US));
  ASSERT_EQ(got.size(), 4u);
  EXPECT_EQ(got.back().first, "after");
  EXPECT_EQ(lens.back(), 1005u);
}

// Frame buffers are bytes in EM, owned by one frame at a time; a power loss frees them all and
// releases by work from before it change nothing.
TEST(Mbp2FramePool, BuffersHoldFramesInEmOneOwnerAtATime) {
  Stats st;
  Em em(EmConfig{}, st, "em");
  em.carve(64);
  FramePool pool(em, 2, st, "txb");
  EXPECT_EQ(em.size(), 64u + 2 * FramePool::kBufBytes);
  FramePool::Buf a, b, c;
  ASSERT_TRUE(pool.alloc(&a));
  ASSERT_TRUE(pool.alloc(&b));
  EXPECT_EQ(pool.offset(a), 64u);
  EXPECT_EQ(pool.offset(b), 64u + FramePool::kBufBytes);
  EXPECT_FALSE(pool.alloc(&c));  // both taken
  EXPECT_EQ(test::stat_value(st, "txb.exhausted"), 1);
  std::vector<uint8_t> f(1514);
  for (size_t i = 0; i < f.size(); ++i) f[i] = static_cast<uint8_t>(i * 13 + 1);
  pool.put(b, f);
  EXPECT_EQ(b.len, 1514u);
  EXPECT_EQ(em.load32(pool.offset(b)), 0x010e1b28u);  // the bytes are EM's, big-endian words
  em.store32(pool.offset(b) + 4, 0xdeadbeef);           // whoever writes EM changes the frame
  std::vector<uint8_t> g = pool.get(b);
  EXPECT_EQ(g.size(), 1514u);
  EXPECT_EQ(g[4], 0xde);
  EXPECT_EQ(g[1513], f[1513]);
  pool.release(a);
  EXPECT_EQ(pool.in_use(), 1u);
  ASSERT_TRUE(pool.alloc(&c));  // a's buffer again, for a new owner
  EXPECT_EQ(c.idx, a.idx);
  EXPECT_FALSE(pool.live(a));
  EXPECT_TRUE(pool.live(c));
  pool.reset();  // the power went
  EXPECT_EQ(pool.in_use(), 0u);
  EXPECT_FALSE(pool.live(b));
  pool.release(b);  // late work from before: ignored
  ASSERT_TRUE(pool.alloc(&a));
  pool.release(c);  // stale too: the new owner keeps its buffer
  EXPECT_TRUE(pool.live(a));
  EXPECT_EQ(test::stat_value(st, "txb.high_water"), 2);
  EXPECT_EQ(test::stat_value(st, "txb.allocated"), 4);
}

}  // namespace
}  // namespace mbpsim::mbp2
