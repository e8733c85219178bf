// The MBCF random tester (`workload.kind mbcf_tester`), for MBCF/Ether and the MBP2 (thesis 4.1,
// 4.2). Node 0 is the target; every other node runs one client task that issues seeded random
// requests through the real system call (MBCF/Ether) or doorbell and NIC (MBP2), over whatever
// faults the config injects (loss, duplication, reordering). The checks run one after another,
// each with an oracle that sees every node's memory:
//   - fetch_add: k scalar MBCF_FETCH_ADD(+1) per client on one word, and k vector ones (+1, +3)
//     on a pair: the old values are a permutation of 0..Pk-1 (nothing lost, nothing applied
//     twice), the pair's second word is always three times its first (the vector form is
//     atomic), and the words end at Pk and (Pk, 3Pk).
//   - lock: MBCF_COMP_SWAP and MBCF_SWAP as lock acquisitions around a counter kept with READ
//     and WRITE, released with SWAP: never two holders, a release finds the lock held, and the
//     counter ends at the number of critical sections.
//   - signal: one signal structure per invocation condition (EVERY_TIME_BLK, FIRST_ONLY_BLK,
//     EVERY_TIME_NONBLK, FIRST_ONLY_NONBLK), QUEW storage, invoking a program at node 0 that
//     takes the stored entries (EVERY_TIME: one per invocation; FIRST_ONLY: all of them through
//     the light-weight call that resets the running flag). Clients resend what is refused
//     (SIGNAL_CONDITION, FIFO_FULL) after a random back-off. Every signal that succeeded is
//     taken exactly once and in its sender's order; blocking conditions never run two
//     invocations at once and only they refuse; EVERY_TIME invokes once per stored signal,
//     FIRST_ONLY at most that often; at the end every running flag is clear.
//   - fifoe: each client streams numbered FIFOe_NORMAL entries into one small FIFO at node 0,
//     several outstanding, while node 0's user code takes entries at random moments; when a
//     status says the FIFO stopped for it, the client waits for the statuses of everything it
//     had sent, then resends from the first failed entry with FIFOe_RETRY. The consumer must see
//     every sender's numbers exactly once and in order (no entry after a failed one lands
//     before the retry), and no stopped state is left at the end.
//   - emb: bursts of writes, each in an elastic-memory-barrier colour, to fresh slots at node 0,
//     then a barrier on one colour (poll until its reply counter equals its request counter):
//     every write of that colour issued before the barrier is then in node 0's memory; reply
//     counters never pass request counters, and all are equal at the end.
//   - multicast: random multicast patterns (a random tree over a random subset of the nodes,
//     each member's page at a random place), UPDATEs of random bytes from random nodes, then
//     an INVALIDATE: after each combined status, every page of the pattern and no other page
//     holds the bytes (a shadow of every candidate page of every node is compared), the copies
//     forwarded equal the pattern's size less one, and INVALIDATE clears exactly the pattern's
//     pages.
// A check that does not finish within mbcf_tester.check_us fails as stuck. Any failure prints
// the check, what differed and the seed; the run exits 2 and replays identically from the seed.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "models/core/rng.h"
#include "workloads/mbcf_workloads.h"

namespace mbpsim {

class MbcfTester : public MbcfWorkload {
 public:
  MbcfTester(const Config& c, Stats& stats, uint64_t seed);
  void start() override;
  nlohmann::ordered_json summary() const override;
  std::string check_failed() const override;
  double done_fraction() const override { return checks_.empty() ? -1 : static_cast<double>(results_.size()) / checks_.size(); }
  std::string progress(double wall_s) const override;

 private:
  struct Result {
    std::string name;
    bool pass = true;
    std::string detail;
    nlohmann::ordered_json figures;
  };
  void next_check();
  void client_done();                   // one client of the current check has finished
  void wait_quiet_then(std::function<void()> k);
  void end_check();
  void fail(const std::string& what);  // records a failure of the current check
  // One command with a status reply from node n's task to node `to`; `k` gets the status.
  void call(uint32_t n, uint32_t to, mbcf::Command c, std::function<void(mbcf::Status)> k);
  void send(uint32_t n, uint32_t to, std::vector<mbcf::Command> cmds, std::function<void()> k);
  void after(double us, std::function<void()> fn);
  uint32_t word(uint32_t node, uint32_t laddr) const;
  void set_word(uint32_t node, uint32_t laddr, uint32_t v);
  mbcf::Task& task(uint32_t node);
  uint64_t counter(const std::string& path) const;

  void start_fetch_add();
  void fetch_add_step(uint32_t n);
  void finish_fetch_add();
  void start_lock();
  void lock_step(uint32_t n);
  void finish_lock();
  void start_signal();
  void signal_step(uint32_t n);
  void signal_program(uint32_t k, const mbcf::Invocation& iv, std::function<void()> done);
  void signal_take(uint32_t k, std::function<void()> done);
  void consume(uint32_t k, const std::vector<uint8_t>& entry);
  bool finish_signal();  // false: the programs still run; it is called again
  void start_fifoe();
  void fifoe_send(uint32_t n);
  void fifoe_wait(uint32_t n);
  void fifoe_consume();
  void finish_fifoe();
  void start_emb();
  void emb_step(uint32_t n);
  void emb_burst(uint32_t n, uint32_t left);
  void finish_emb();
  void start_multicast();
  void multicast_round();
  void multicast_update(uint32_t left);
  void multicast_invalidate();
  void compare_shadow(const std::string& after_what);

  Stats& stats_;
  uint64_t seed_;
  uint32_t ops_ = 0, clients_ = 0, pb_ = 0;
  double check_us_ = 0;
  std::vector<std::string> checks_;
  std::vector<Result> results_;
  size_t cur_ = 0;
  uint64_t check_serial_ = 0;  // tells a stale deadline from the current check's
  uint32_t running_clients_ = 0;
  std::vector<Rng> rng_;  // per client, and [0] for the target's programs and the patterns
  std::vector<uint32_t> left_;
  uint64_t retries_ = 0;

  // fetch_add
  std::vector<uint32_t> fa_scalar_, fa_vector_;
  // lock
  uint32_t holders_ = 0, sections_ = 0, failed_acquires_ = 0;
  // signal
  std::vector<uint32_t> sig_seq_;                            // per client x condition: next number
  std::vector<std::map<uint32_t, uint32_t>> sig_taken_;      // per condition: sender -> next expected
  std::vector<uint32_t> sig_active_, sig_invocations_, sig_succeeded_, sig_refused_, sig_full_;
  // fifoe
  struct FifoeClient {
    uint32_t next = 0, base = 0;  // next number to send; lowest whose status is not yet known
    uint32_t resend_from = 0;
    bool failed = false;          // a status said stopped: send nothing until all are known
    bool retry_next = false;      // the next send is the FIFOe_RETRY
    uint32_t stops_in_row = 0;    // rounds that ended stopped since the last entry landed
  };
  std::vector<FifoeClient> fifoe_;
  std::vector<uint32_t> fifoe_taken_;  // per sender: the next number the consumer must take
  uint32_t fifoe_stops_ = 0, fifoe_entries_ = 0, fifoe_max_depth_ = 0;
  bool fifoe_consumer_done_ = false;
  // emb
  struct EmbWrite {
    uint32_t laddr;
    uint8_t colour;
    std::vector<uint8_t> bytes;
  };
  std::vector<std::vector<EmbWrite>> emb_writes_;  // per client
  std::vector<uint32_t> emb_next_slot_;
  uint32_t emb_slots_ = 0, emb_barriers_ = 0;
  // multicast
  std::vector<std::vector<uint8_t>> shadow_;  // per node: the candidate pages
  std::vector<std::pair<uint32_t, uint32_t>> pattern_;  // (node, page index), root first
  uint32_t mc_round_ = 0, mc_updates_ = 0, mc_members_ = 0;
  uint64_t forwards_mark_ = 0;
};

void declare_mbcf_tester_params(ParamSchema& s);

}  // namespace mbpsim
