#include "models/core/fair_share.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace mbpsim {

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();
}

FairShare::Booking FairShare::book(uint64_t now, uint64_t at, uint64_t work, uint32_t tag, uint64_t pace) {
  if (tag >= wait_.size()) wait_.resize(tag + 1, 0);
  auto j = std::make_shared<Job>();
  j->at = std::max(at, now);
  j->work = work;
  if (pace > work) j->cap = static_cast<double>(work) / static_cast<double>(pace);
  j->end = j->at + std::max(work, pace);  // its end alone: what it waits beyond this is its wait
  j->tag = tag;
  j->left = static_cast<double>(work);
  if (work == 0) return Booking(j);  // nothing to serve
  settle(now);
  // Kept in order of start (booking order among equals): the fluid admits them in that order.
  auto pos = jobs_.end();
  while (pos != jobs_.begin() && (*(pos - 1))->at > j->at) --pos;
  jobs_.insert(pos, j);
  // Alone, with no priority holder to come, it ends at its end alone (the common case: most
  // transfers find the resource idle).
  if (jobs_.size() > 1 || !freezes_.empty()) predict();
  return Booking(std::move(j));
}

std::pair<uint64_t, uint64_t> FairShare::priority(uint64_t now, uint64_t at, uint64_t dur, uint64_t grant) {
  settle(now);
  at = std::max(at, now);
  uint64_t start = at;
  double thaw = 0;
  if (frozen(rel(at), &thaw)) {
    // Another priority holder has it: this one goes next.
    start = t0_ + static_cast<uint64_t>(thaw);
  } else {
    uint64_t busy_until = 0;  // the latest end of a transfer in progress at `at`
    for (const auto& j : jobs_)
      if (j->at <= at && j->end > at) busy_until = std::max(busy_until, j->end);
    if (busy_until > at) start = std::min(at + grant, busy_until);
    if (frozen(rel(start), &thaw)) start = t0_ + static_cast<uint64_t>(thaw);
  }
  if (dur == 0) return {start, start};
  freezes_.emplace_back(start, start + dur);
  predict();
  return {start, start + dur};
}

bool FairShare::frozen(double t, double* until) const {
  bool any = false;
  double u = t;
  for (bool moved = true; moved;) {
    moved = false;
    for (const auto& [s, e] : freezes_) {
      if (rel(s) <= u && u < rel(e)) {
        u = rel(e);
        any = moved = true;
      }
    }
  }
  *until = u;
  return any;
}

double FairShare::rel(uint64_t t) const { return t > t0_ ? static_cast<double>(t - t0_) : 0.0; }

// The fluid: from the settled time on, the transfers that may start and have work left share
// the resource (max-min, each at most its cap), except while a priority holder has it.
// `until` is relative to t0_; `fin[i]` gets the relative time transfer i finished (or stays
// negative).
void FairShare::serve(double until, std::vector<double>& left, std::vector<double>& fin) {
  const size_t n = jobs_.size();  // in order of start
  fin.assign(n, -1.0);
  active_.clear();
  double t = 0;
  size_t next = 0;
  for (;;) {
    while (next < n && rel(jobs_[next]->at) <= t) {
      const size_t i = next++;
      if (left[i] > 0) active_.push_back(i);
      else fin[i] = t;
    }
    if (t >= until || (active_.empty() && next == n)) break;
    double thaw = 0;
    if (frozen(t, &thaw)) {
      t = std::min(thaw, until);
      continue;
    }
    if (active_.empty()) {
      t = std::min(rel(jobs_[next]->at), until);
      continue;
    }
    double horizon = until;
    for (const auto& f : freezes_)
      if (rel(f.first) > t) horizon = std::min(horizon, rel(f.first));
    if (next < n) horizon = std::min(horizon, rel(jobs_[next]->at));
    // Max-min shares: in order of their caps, each takes its cap or an equal part of what the
    // ones before left, whichever is less.
    if (active_.size() > 1)
      std::sort(active_.begin(), active_.end(), [&](size_t a, size_t b) { return jobs_[a]->cap < jobs_[b]->cap || (jobs_[a]->cap == jobs_[b]->cap && a < b); });
    rate_.resize(n);
    double free = 1.0, first_over = kInf;
    size_t m = active_.size();
    for (size_t i : active_) {
      rate_[i] = std::min(jobs_[i]->cap, free / static_cast<double>(m--));
      free -= rate_[i];
      first_over = std::min(first_over, left[i] / rate_[i]);
    }
    const double step = std::min(first_over, horizon - t);
    const bool over = first_over <= horizon - t;
    size_t w = 0;
    for (size_t i : active_) {
      const double served = rate_[i] * step;
      // The first to finish (and any finishing with it) are over; rounding cannot keep them.
      if (over && left[i] - served <= 1e-3) {
        left[i] = 0;
        fin[i] = t + step;
      } else {
        left[i] -= served;
        active_[w++] = i;
      }
    }
    active_.resize(w);
    t += step;
  }
}

void FairShare::settle(uint64_t now) {
  if (now <= t0_) return;
  bool all_over = true;  // then there is nothing to serve: every end was final
  for (const auto& j : jobs_) all_over = all_over && j->end <= now;
  if (all_over) {
    jobs_.clear();
  } else {
    sim_left_.resize(jobs_.size());
    for (size_t i = 0; i < jobs_.size(); ++i) sim_left_[i] = jobs_[i]->left;
    serve(static_cast<double>(now - t0_), sim_left_, fin_);
    size_t w = 0;
    for (size_t i = 0; i < jobs_.size(); ++i) {
      if (fin_[i] >= 0) continue;  // over: its end stays what was last predicted
      jobs_[i]->left = sim_left_[i];
      jobs_[w++] = std::move(jobs_[i]);
    }
    jobs_.resize(w);
  }
  t0_ = now;
  freezes_.erase(std::remove_if(freezes_.begin(), freezes_.end(), [now](const auto& f) { return f.second <= now; }), freezes_.end());
}

void FairShare::stop_all(uint64_t now) {
  settle(now);
  jobs_.clear();
}

void FairShare::predict() {
  sim_left_.resize(jobs_.size());
  for (size_t i = 0; i < jobs_.size(); ++i) sim_left_[i] = jobs_[i]->left;
  serve(kInf, sim_left_, fin_);
  const std::vector<double>& fin = fin_;
  for (size_t i = 0; i < jobs_.size(); ++i) {
    Job& j = *jobs_[i];
    const uint64_t e = t0_ + static_cast<uint64_t>(std::ceil(std::max(0.0, fin[i] - 1e-6)));
    if (e > j.end) {
      wait_[j.tag] += e - j.end;
      j.end = e;
    }
  }
}

}  // namespace mbpsim
