// Seeded bugs for mutation testing (docs/CORRECTNESS.md, "Mutation tests"). The environment
// variable MBPSIM_MUTANT names at most one mutant; the code at that mutant's site then behaves
// wrongly on purpose, and the test suite must notice (tests/mutation/). Unset, every site is a
// never-taken branch on a value read once per process. Built only with -DMBPSIM_MUTANTS=ON
// (the default, so CI can check the kill rate); OFF compiles every site away.
#pragma once
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace mbpsim::mutant {

enum class Id : unsigned char {
  None,
  GrantBeforeAllAcks,     // mbp: a round completes one acknowledgement early (late ones ignored)
  AckWithoutHeldFlag,     // mbp: an acknowledgement never says that the node held a copy
  CoarsenDuringRound,     // mbp: a round counts its acks on a sharer set coarsened after it was planned
  GbnWindowIsSeqSpace,    // mbcf/ether: 256 outstanding packets on an 8-bit sequence number
  DupDroppedSilently,     // mbcf/ether: a duplicate is dropped without re-acknowledging
  CombinedNoKeyCheck,     // mbcf: a combined packet's access key is not checked
  FenceIgnoresWriteBuffer,  // mbp: a fence completes without waiting for buffered stores
  CheckFirstPageOnly,     // mbcf: an access is checked on its first page only
  ReplySizeUnchecked,     // mbcf: the target trusts the sender to have checked that the reply fits a frame
  ReplayWindowOff,        // mbp2: the anti-replay window accepts every authenticated frame
  EmbCountedLate,         // mbp2: a barrier colour's request counter moves when the header is built, not at the doorbell
  FirstOnlyInvokesAgain,  // mbcf: FIRST_ONLY_NONBLK invokes its program again while the running flag is set
  LocalRepliesHeld,       // mbcf: what a request to one's own node sends back waits for some other packet
  FifoeStopShared,        // mbcf: a FIFOe's stopped state is the FIFO's, not each sender's (one RETRY restarts all)
  SaveAreaUnbounded,      // mbcf: packets for a task waiting for a page-in are saved however many arrive
  DoorbellIgnoresSlots,   // mbp2: a doorbell is taken with every EM request slot in use
  TlbKeepsLeftContext,    // mbp2: the NIC's TLB keeps the entries of a task that left the node
  DmaMovesPosted,         // mbp2: a DMA engine moves what it was posted, not what its descriptor in EM names
  AdmaWritesAtExecute,    // mbp2: the command semantics write host memory themselves, before the ADMA moves anything
  AtomicFromExecute,      // mbp2: an atomic's result is what the semantics computed at the PME's check, not from the ADMA's read
  HelloRestartsNumbering,  // mbcf/ether: on a peer's Hello both ends number afresh from 1 (an old frame can pass for a new one)
  SnoopFilterKeepsVictims,  // mbp: an L2 victim's bit stays in the node's snoop filter
  LonePathKeepsSaPointer,   // net: the lone-flit fast path leaves the outputs' switch-allocation pointers as they were
  RunAheadIntoSliceEnd,     // net: the runner's horizon takes in the cycle at its slice's very end (it runs before the runner looks)
  RunAheadStopsAtOnce,      // net: a failure in a cycle run ahead stops SystemC where the activation began
  ExpressFreesVcAtOnce,     // net: an express hop frees its output VC at once, not in the cycle it crosses
  ExpressJumpsQueue,        // net: a flit arriving behind an express packet on its input VC does not wait for it to cross
  ExpressIgnoresArrivals,   // net: a flit takes an express hop although another arrives at its router in the same cycle
  // Speed mutants: right results, more work. The speed guard (scripts/speed-guard.py) must catch them.
  CopyPerPacket,          // net: every delivered packet is copied byte by byte into a scratch buffer
  CopyPerReference,       // mbp: every completed processor reference is copied byte by byte into a scratch buffer
  ScatterPerPacket,       // net: every delivered packet reads 96 scattered lines of a 16 MiB array (a hop's state spread thin)
};

struct Entry {
  Id id;
  const char* name;
};
inline constexpr Entry kAll[] = {
    {Id::GrantBeforeAllAcks, "grant_before_all_acks"}, {Id::AckWithoutHeldFlag, "ack_without_held_flag"},
    {Id::CoarsenDuringRound, "coarsen_during_round"},  {Id::GbnWindowIsSeqSpace, "gbn_window_is_seq_space"},
    {Id::DupDroppedSilently, "dup_dropped_silently"},  {Id::CombinedNoKeyCheck, "combined_no_key_check"},
    {Id::FenceIgnoresWriteBuffer, "fence_ignores_write_buffer"}, {Id::CheckFirstPageOnly, "check_first_page_only"},
    {Id::ReplySizeUnchecked, "reply_size_unchecked"},             {Id::ReplayWindowOff, "replay_window_off"},
    {Id::EmbCountedLate, "emb_counted_late"},                     {Id::FirstOnlyInvokesAgain, "first_only_invokes_again"},
    {Id::LocalRepliesHeld, "local_replies_held"},                 {Id::FifoeStopShared, "fifoe_stop_shared"},
    {Id::SaveAreaUnbounded, "save_area_unbounded"},               {Id::DoorbellIgnoresSlots, "doorbell_ignores_slots"},
    {Id::TlbKeepsLeftContext, "tlb_keeps_left_context"},         {Id::DmaMovesPosted, "dma_moves_posted"},
    {Id::AdmaWritesAtExecute, "adma_writes_at_execute"},   {Id::AtomicFromExecute, "atomic_from_execute"},
    {Id::HelloRestartsNumbering, "hello_restarts_numbering"},
    {Id::SnoopFilterKeepsVictims, "snoop_filter_keeps_victims"},
    {Id::LonePathKeepsSaPointer, "lone_path_keeps_sa_pointer"},
    {Id::RunAheadIntoSliceEnd, "run_ahead_into_slice_end"},
    {Id::RunAheadStopsAtOnce, "run_ahead_stops_at_once"},
    {Id::ExpressFreesVcAtOnce, "express_frees_vc_at_once"},
    {Id::ExpressJumpsQueue, "express_jumps_queue"},
    {Id::ExpressIgnoresArrivals, "express_ignores_arrivals"},
    {Id::CopyPerPacket, "copy_per_packet"},                {Id::CopyPerReference, "copy_per_reference"},
    {Id::ScatterPerPacket, "scatter_per_packet"},
};

// What the speed mutants add: a 1 KiB copy, byte by byte (about 5,000 instructions; a packet of
// the 64-node network costs about 6,000, a reference that hits about 500).
[[gnu::noinline]] inline void wasted_copy() {
  static volatile unsigned char scratch[1024];
  for (unsigned i = 0; i < sizeof scratch; ++i) scratch[i] = static_cast<unsigned char>(i);
}

// What the locality mutant adds: 96 reads of lines scattered over 16 MiB (a few hundred
// instructions, and about 96 more host cache misses a packet; a packet of the 4,096-node tree
// crosses about 10 routers, whose state costs about 30 misses each in the speed guard's model).
[[gnu::noinline]] inline void scattered_reads() {
  static volatile unsigned char scratch[16u << 20];
  static unsigned long long x = 1;
  for (int i = 0; i < 96; ++i) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    (void)scratch[(x >> 40) % sizeof scratch & ~63ull];
  }
}

#ifdef MBPSIM_MUTANTS
inline Id from_env() {
  const char* v = std::getenv("MBPSIM_MUTANT");
  if (!v || !*v) return Id::None;
  for (const Entry& e : kAll)
    if (std::strcmp(v, e.name) == 0) return e.id;
  std::fprintf(stderr, "MBPSIM_MUTANT=%s: no such mutant (models/core/mutant.h lists them)\n", v);
  std::exit(1);
}
// Read once, before main (a namespace-scope variable, not a function's static): a site costs
// a load and a compare, with no guard to check on each call (the lone-flit path asks once per
// router step).
inline const Id g_active = from_env();
inline bool on(Id m) { return g_active == m; }
#else
constexpr bool on(Id) { return false; }
#endif

}  // namespace mbpsim::mutant
