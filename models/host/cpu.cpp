// The host CPU's time sharing (cpu.h).
#include "models/host/cpu.h"

#include <algorithm>
#include <cmath>
#include <memory>

namespace mbpsim::host {

Cpu::Cpu(sc_core::sc_module_name name, Calendar& cal, double mhz, double poll_cycles)
    : sc_core::sc_module(name), pio("pio"), cal_(cal), mhz_(mhz), poll_cycles_(poll_cycles) {
  pio.register_nb_transport_bw(this, &Cpu::pio_bw);
}

void Cpu::pio_write(uint64_t addr, uint32_t value, std::function<void(uint64_t, bool)> k) {
  pio_waiting_.push_back({addr, value, std::move(k)});
  if (!pio_busy_) pio_issue();
}

void Cpu::pio_issue() {
  Store s = std::move(pio_waiting_.front());
  pio_waiting_.pop_front();
  pio_busy_ = true;
  pio_k_ = std::move(s.k);
  for (int i = 0; i < 4; ++i) pio_data_[i] = static_cast<uint8_t>(s.value >> (24 - 8 * i));
  tlm::tlm_generic_payload& gp = pio_gp_;
  gp.set_command(tlm::TLM_WRITE_COMMAND);
  gp.set_address(s.addr);
  gp.set_data_ptr(pio_data_);
  gp.set_data_length(4);
  gp.set_streaming_width(4);
  gp.set_byte_enable_ptr(nullptr);
  gp.set_dmi_allowed(false);
  gp.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
  tlm::tlm_phase ph = tlm::BEGIN_REQ;
  sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
  const tlm::tlm_sync_enum r = pio->nb_transport_fw(gp, ph, delay);
  // Completed at once, or answered on the return path; otherwise the answer comes by pio_bw.
  if (r == tlm::TLM_COMPLETED || (r == tlm::TLM_UPDATED && ph == tlm::BEGIN_RESP))
    pio_done(sim_now_ps() + static_cast<uint64_t>(delay.value()));
}

tlm::tlm_sync_enum Cpu::pio_bw(tlm::tlm_generic_payload&, tlm::tlm_phase& ph, sc_core::sc_time& delay) {
  if (ph != tlm::BEGIN_RESP) return tlm::TLM_ACCEPTED;  // END_REQ: the answer is still to come
  pio_done(sim_now_ps() + static_cast<uint64_t>(delay.value()));
  return tlm::TLM_COMPLETED;
}

void Cpu::pio_done(uint64_t done_ps) {
  pio_busy_ = false;
  auto k = std::move(pio_k_);
  pio_k_ = nullptr;
  if (k) k(done_ps, pio_gp_.is_response_ok());
  if (!pio_busy_ && !pio_waiting_.empty()) pio_issue();
}

uint64_t Cpu::cycles_ps(double cycles) const { return static_cast<uint64_t>(std::llround(cycles * 1e6 / mhz_)); }

void Cpu::interrupt(uint64_t dur, std::function<void()> fn) {
  const uint64_t start = std::max(cal_.now_ps(), int_free_);
  int_free_ = start + dur;
  busy_ps_ += dur;
  if (user_active_ && user_end_ > start) {  // the user program is delayed by the interrupt
    user_end_ += dur;
    schedule_user_end();
  }
  cal_.at(int_free_, std::move(fn));
}

void Cpu::schedule_user_end() {
  const uint64_t ver = ++user_ver_;
  cal_.at(user_end_, [this, ver] {
    if (ver != user_ver_) return;
    user_active_ = false;
    auto k = std::move(user_k_);
    if (!preempted_.empty()) {  // the preempted work goes on from where it stopped
      auto [left, pk] = std::move(preempted_.back());
      preempted_.pop_back();
      user_active_ = true;
      user_end_ = std::max(cal_.now_ps(), int_free_) + left;
      user_k_ = std::move(pk);
      schedule_user_end();
    }
    k();
  });
}

void Cpu::compute(uint64_t ps, std::function<void()> k) {
  if (user_active_) {  // preempt: keep what the current work still needs
    const uint64_t at = std::max(cal_.now_ps(), int_free_);
    preempted_.emplace_back(user_end_ > at ? user_end_ - at : 0, std::move(user_k_));
  }
  user_active_ = true;
  user_end_ = std::max(cal_.now_ps(), int_free_) + ps;
  user_k_ = std::move(k);
  schedule_user_end();
}

void Cpu::poll(std::function<bool()> pred, std::function<void()> k) {
  if (pred()) {
    compute(cycles_ps(poll_cycles_), std::move(k));
    return;
  }
  pollers_.emplace_back(std::move(pred), std::move(k));
}

void Cpu::run_pollers(uint64_t at) {
  for (size_t i = 0; i < pollers_.size();) {
    if (pollers_[i].first()) {
      auto k = std::move(pollers_[i].second);
      pollers_.erase(pollers_.begin() + static_cast<long>(i));
      // The poll loop notices on its next iteration.
      cal_.at(at + cycles_ps(poll_cycles_), std::move(k));
    } else {
      ++i;
    }
  }
}

void Cpu::power_off() {
  user_active_ = false;
  user_k_ = nullptr;
  preempted_.clear();
  pollers_.clear();
  ++user_ver_;
  // The stores its programs issued: one the device still holds ends without them.
  pio_k_ = nullptr;
  pio_waiting_.clear();
}

}  // namespace mbpsim::host
