// One shared resource (a memory port, a bus) whose arbiter grants it burst by burst, in round
// robin among the transfers that want it. At the scale of a transfer (tens to thousands of
// bursts), round robin is processor sharing: while n transfers want the resource, each is
// served at 1/n of its rate, and one alone at the full rate. That is how the resource is
// modelled here, as a fluid (a requester that cannot use its share leaves the rest to the
// others: `pace`): a transfer is booked with the time it would take alone (`work`,
// whole bursts with their overheads, from the bus or memory timing) and a time from which it
// may start; its end is predicted from every transfer booked so far.
//
// A transfer booked later shares the resource from its start on, so it delays the ones in
// progress: predicted ends only ever move later (never earlier), and a booking's `end()` is
// the latest prediction. Whoever waits for a transfer checks its end again when the predicted
// time comes (`Finish`), which costs an event only when the end did move.
//
// A requester that wins the next arbitration outright (a programmed write by the host CPU)
// waits for the burst in progress, then holds the resource alone for its length: the transfers
// in progress stand still meanwhile (`priority`).
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

namespace mbpsim {

class FairShare {
 public:
  struct Job {
    uint64_t at = 0;    // when it may start
    uint64_t work = 0;  // its time alone
    uint64_t end = 0;   // the latest predicted end
    uint32_t tag = 0;   // whose (a route): which wait counter its waiting adds to
    double cap = 1;     // the most of the resource it can use (a requester paced by something else)
    double left = 0;    // work not yet served at the resource's present (settled) time
  };
  // A transfer's booking; `end()` is the end predicted now (later bookings may delay it).
  class Booking {
   public:
    Booking() = default;
    explicit Booking(std::shared_ptr<const Job> j) : j_(std::move(j)) {}
    uint64_t end() const { return j_ ? j_->end : 0; }
    explicit operator bool() const { return j_ != nullptr; }

   private:
    std::shared_ptr<const Job> j_;
  };

  // `tags`: how many requesters' waits are counted apart (`wait`).
  explicit FairShare(uint32_t tags = 1) : wait_(tags, 0) {}
  // Books a transfer of `work` ps (alone) that may start at `at` (>= now). `pace`, when longer
  // than `work`: the transfer cannot go faster than that (its data comes from, or goes to, a
  // slower unit: a cipher, a bus), so it asks for a burst only every so often and uses at most
  // work/pace of the resource; the others share what it leaves (max-min fairness, which is
  // what round robin among requesters that skip their turns gives).
  Booking book(uint64_t now, uint64_t at, uint64_t work, uint32_t tag = 0, uint64_t pace = 0);
  // A requester that wins the next arbitration: it starts at `at` if the resource is idle,
  // otherwise when the burst in progress ends (at most `grant` later, sooner if every transfer
  // in progress ends before), holds it alone for `dur`, and the transfers in progress stand
  // still meanwhile. Returns {start, end}.
  std::pair<uint64_t, uint64_t> priority(uint64_t now, uint64_t at, uint64_t dur, uint64_t grant);
  // Every transfer in progress stops at `now` (its requester lost its power): it takes no more
  // of the resource. Their bookings keep the ends last predicted; priority holders stay.
  void stop_all(uint64_t now);
  // Time requester `tag` waited beyond its transfers' work: the sum, over its transfers, of
  // predicted end - start - work (grows as later bookings delay them).
  uint64_t wait(uint32_t tag) const { return wait_[tag]; }
  size_t jobs() const { return jobs_.size(); }  // transfers not yet over at the settled time

 private:
  // Serves the transfers up to `now`: what each has left, and forgets those over.
  void settle(uint64_t now);
  // Predicts every transfer's end from the settled time; an end only moves later, and what it
  // moved is added to its requester's wait.
  void predict();
  bool frozen(double t, double* until) const;  // a priority holder has the resource at t
  double rel(uint64_t t) const;                // a time relative to t0_ (0 before it)
  void serve(double until, std::vector<double>& left, std::vector<double>& fin);
  uint64_t t0_ = 0;  // the settled time: `left` is as of then
  std::vector<std::shared_ptr<Job>> jobs_;  // booked and not over at t0_, in order of start
  std::vector<std::pair<uint64_t, uint64_t>> freezes_;  // priority holders' [start, end)
  std::vector<uint64_t> wait_;
  std::vector<double> sim_left_, fin_;  // scratch for settle() and predict()
  std::vector<size_t> active_;
  std::vector<double> rate_;  // scratch: each active transfer's share
};

// When a transfer that uses up to two shared resources at once ends: the latest of a fixed
// time (its own computation, the engine's setup) and its bookings' predicted ends.
class Finish {
 public:
  Finish(uint64_t at = 0) : at_(at) {}  // NOLINT(google-explicit-constructor): a plain time is a Finish
  Finish(uint64_t at, FairShare::Booking a, FairShare::Booking b = {}) : at_(at), b_{std::move(a), std::move(b)} {}
  uint64_t end() const {
    uint64_t e = at_;
    for (const auto& b : b_)
      if (b && b.end() > e) e = b.end();
    return e;
  }

 private:
  uint64_t at_ = 0;
  std::array<FairShare::Booking, 2> b_;
};

}  // namespace mbpsim
