// The protection and adversarial tester (`workload.kind protection`), for MBCF/Ether and the
// MBP2 (thesis 3.3-3.4, 4.2, 8.3.2, 8.3.6). Node 1 runs a server task with a dummy task that
// aliases only its delegated working area (Figures 3.6, 3.7); node 2 runs an attacker task;
// node 0 a legitimate client. The tester runs a catalogue of attacks one after another:
//   - what a user task can ask for: forged, stale and other tasks' keys; an Ltask outside its
//     table or of a dead task; the kernel as a target; addresses one below, one past and
//     wrapping around a window; writes that cross from an aliased page into one outside the
//     window or into a read-only one; a dummy task's key used on the server's pages; zero,
//     oversized and mismatched lengths; combined packets with one bad command or an atomic;
//     commands only kernels may send; a remote INVALIDATE of a page outside any pattern; a
//     doorbell alias that is not the task's own (MBP2: the store faults in the task's MMU);
//   - what a faulty or hostile station can put on the wire: truncated sub-commands, a wrong
//     command count, total lengths that disagree with the frame, oversized frames, a frame
//     claiming to come from its target;
//   - replays of a delivered packet, within a connection, of a no-flow-control packet, and
//     after the sender or the receiver restarted (the last two only where frames are
//     authenticated: MBCF/Ether trusts its LAN, docs/CORRECTNESS.md).
// The oracle, per attack: a snapshot of every task's memory (by physical frame) before and
// after differs only in the bytes the attack was authorised to change (with the values it
// wrote); every task's key, page table, task-translation table and TASKQUE are unchanged; the
// answer is the one the thesis specifies (a VIOLATION message with the right code instead of
// the status for REPLY_STATUS, nothing for NO_REPLY_STATUS, a refusal before anything is sent
// for what the sender can see, silence for a frame that cannot be trusted); and each rejection
// is counted, exactly once, by the counter that names it, with no other rejection counter
// moving. A failed attack names itself, what differed and the seed; the run exits 2.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "workloads/mbcf_workloads.h"

namespace mbpsim {

namespace mbp2 {
class Mbp2Cards;
}

class ProtectionTester : public MbcfWorkload {
 public:
  ProtectionTester(const Config& c, Stats& stats, uint64_t seed);
  void start() override;
  nlohmann::ordered_json summary() const override;
  std::string check_failed() const override;
  double done_fraction() const override { return attacks_.empty() ? -1 : static_cast<double>(std::min(cur_, attacks_.size())) / attacks_.size(); }
  std::string progress(double wall_s) const override;

  // A range of one task's logical space an attack may change; with `bytes`, it must end up
  // holding them.
  struct Write {
    uint32_t node = 0, ptask = 0, laddr = 0, len = 0;
    std::vector<uint8_t> bytes;
  };
  enum class Answer { Succeeded, Violation, NoAnswer, RefusedLocally, Dropped };
  struct Expect {
    Answer answer = Answer::Violation;
    mbcf::ViolationCode code = mbcf::ViolationCode::None;
    std::map<std::string, uint64_t> counters;  // rejection counters that must rise by exactly this
    std::set<std::string> dont_care;           // rejection counters a restart may move
    std::vector<Write> writes;
    uint32_t index = 0;                  // the command a VIOLATION must name
    std::function<std::string()> check;  // a further check after the attack ("" when fine)
  };
  struct Attack {
    std::string name, category, skip;  // skip: why it does not apply to this system
    // Performs the attack, fills in what must be seen, then calls `done`.
    std::function<void(Expect&, std::function<void()> done)> run;
  };

 private:
  struct Snapshot {
    std::vector<std::map<uint32_t, std::vector<uint8_t>>> frames;  // per node: frame -> bytes
    std::vector<std::string> meta;                                 // per node, canonical text
  };
  struct Result {
    std::string name, category, outcome, detail;  // outcome: pass | fail | skipped
    std::string answer;
  };
  void build_catalogue();
  void next();
  bool answered() const;
  void wait_answer(uint64_t deadline);
  void evaluate();
  Snapshot snapshot();
  std::map<std::string, uint64_t> rejection_counters() const;
  // Requests from the attacker's task (or the client's), through the system call (MBCF/Ether)
  // or the doorbell (MBP2). False when refused before anything was sent.
  bool request(uint32_t node, uint32_t ltask, std::vector<mbcf::Command> cmds, std::function<void()> k = [] {});
  mbcf::Command write(uint32_t laddr, std::vector<uint8_t> bytes, uint32_t slot = 0,
                      mbcf::ReplyMode rm = mbcf::ReplyMode::Status) const;
  mbcf::Command read(uint32_t laddr, uint32_t len, uint32_t slot = 0) const;
  uint32_t status(uint32_t node, uint32_t slot) const;
  void set_status(uint32_t node, uint32_t slot, uint32_t v);
  std::vector<uint8_t> fill(uint32_t n, uint8_t salt) const;
  // Frames: a well-formed MBCF packet from the attacker's node to the dummy task, encoded.
  std::vector<uint8_t> frame_for(std::vector<mbcf::Command> cmds, uint32_t dst_key, uint8_t ctrl) const;
  void inject(uint32_t from, std::vector<uint8_t> frame);
  void after(double us, std::function<void()> fn);
  // Replays: sends a legitimate write from the client to the server, records its frame on the
  // wire, lets the server overwrite the word, then (after `between`) injects the recording.
  void replay(Expect& e, bool no_flow, std::function<void(std::function<void()>)> between, std::function<void()> done);
  void power_cycle(uint32_t node, std::function<void()> k);
  // Runs `k` once `pred` holds (checked every 100 us) or answer_us has passed.
  void poll_until(std::function<bool()> pred, std::function<void()> k, uint64_t deadline = 0);

  static constexpr uint32_t kClient = 0, kServer = 1, kAttacker = 2;
  static constexpr uint32_t kDummy = 2, kDead = 3, kRekeyed = 4, kNeighbour = 2;  // Ptasks
  static constexpr uint32_t kWindow = 0x80000;  // the dummy tasks' view of the working area
  enum Ltask : uint32_t {
    kViaDummy = 10,
    kServerWithDummyKey,
    kDummyForgedKey,
    kDeadTask,
    kKernel,
    kStaleKey,
    kDummyWithServerKey,
    kDummyWithOwnKey,
    kNotInTable = 99,
  };
  static constexpr uint32_t kSlot0 = 0x40;  // status slots at kStatus + kSlot0 + 4 * slot
  static constexpr uint32_t kSentinel = 0xDEADBEEF;

  Stats& stats_;
  uint64_t seed_;
  uint32_t pb_ = 0;  // page bytes
  uint32_t key_dummy_ = 0, key_dead_ = 0, key_rekeyed_old_ = 0;
  bool mbp2_ = false, authenticated_ = false, dh_keys_ = false;
  double settle_us_ = 2000, answer_us_ = 200000;
  std::vector<Attack> attacks_;
  std::vector<Result> results_;
  size_t cur_ = 0;
  // The attack in progress.
  Expect ex_;
  Snapshot before_;
  std::map<std::string, uint64_t> counters_before_;
  bool refused_ = false;
  std::vector<mbcf::Command> answers_;  // VIOLATION and REPLY commands sent to the attacker
  uint32_t user_packets_ = 0;           // user packets the attacker's node sent
  std::function<bool(uint32_t, const std::vector<uint8_t>&)> tap_;  // frame recorder
  std::string extra_failure_, first_failure_;
  uint32_t failed_ = 0;
};

void declare_protection_params(ParamSchema& s);

}  // namespace mbpsim
