// What the MBCF workloads share (mbcf_workloads.cpp, mbp2_datagram.cpp): the command and data
// helpers, a measured point as the summary lists it, and the checks of workload.commands and
// workload.sizes.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/core/config.h"
#include "models/core/stats.h"
#include "models/mbcf/command.h"

namespace mbpsim::mbcf_points {

using mbcf::Cmd;
using mbcf::Command;

// The most data the MBCF workloads put in one packet: Tables 6.2 and 6.9 go up to 1408 bytes.
constexpr uint32_t kMbcfMaxSize = 1408;

inline Command cmd_of(Cmd k, uint32_t laddr, uint32_t n, const std::vector<uint8_t>& data) {
  Command c;
  c.cmd = k;
  c.laddr = laddr;
  c.length = n;
  if (k != Cmd::Read) c.data = data;
  return c;
}

inline std::vector<uint8_t> pattern(uint32_t n, uint32_t salt) {
  std::vector<uint8_t> d(n);
  for (uint32_t i = 0; i < n; ++i) d[i] = static_cast<uint8_t>(i * 31 + salt);
  return d;
}

inline nlohmann::ordered_json point(const std::string& cmd, uint32_t size, double value, const char* unit, double cpu_us) {
  nlohmann::ordered_json p;
  p["command"] = cmd;
  p["size"] = size;
  p["value"] = figure_json(value);  // a 0.045 MB/s rate keeps as many digits as 189 us; null if not a number
  p["unit"] = unit;
  p["host_cpu_us_per_op"] = std::round(cpu_us * 1000) / 1000;
  return p;
}

// The commands a workload measures: `dflt` when workload.commands is empty, else the list, each
// element one of `allowed`. A workload that measures one fixed command (or none) still checks
// the list, so that a command it would not run is an error rather than silently ignored.
inline std::vector<std::string> commands(const Config& c, std::vector<std::string> dflt, const std::vector<std::string>& allowed) {
  const nlohmann::json& j = c.get_json("workload.commands");
  if (!j.is_array()) c.fail("workload.commands", "must be a list of command names");
  if (j.empty()) return dflt;
  const std::string kind = c.get_string("workload.kind");
  if (allowed.empty()) c.fail("workload.commands", kind + " measures no MBCF command by name: leave it empty");
  std::string names;
  for (const auto& a : allowed) names += (names.empty() ? "" : ", ") + a;
  std::vector<std::string> out;
  for (size_t i = 0; i < j.size(); ++i) {
    if (!j[i].is_string() || std::find(allowed.begin(), allowed.end(), j[i].get<std::string>()) == allowed.end())
      c.fail_at("workload.commands", "workload.commands[" + std::to_string(i) + "]", "must be a command " + kind + " measures: " + names);
    out.push_back(j[i].get<std::string>());
  }
  return out;
}

// MBCF's peak method (6.2.3): a status every workload.ack_every messages, which must divide
// the workload.transfers timed (the last group's status closes the measurement).
inline uint32_t status_every(const Config& c, uint32_t transfers) {
  const auto every = static_cast<uint32_t>(c.get_int("workload.ack_every"));
  if (transfers % every) c.fail("workload.transfers", "must be a multiple of workload.ack_every");
  return every;
}

// The sizes, each within [min, max] (`why` says where max comes from).
inline std::vector<uint32_t> sizes(const Config& c, uint32_t min, uint32_t max = kMbcfMaxSize, const char* why = "one MBCF packet's data") {
  std::vector<uint32_t> s;
  const auto v = c.get_int_list("workload.sizes");
  if (v.empty()) c.fail("workload.sizes", "must list at least one size (an empty list measures nothing)");
  for (size_t i = 0; i < v.size(); ++i) {
    if (v[i] < static_cast<int64_t>(min) || v[i] > static_cast<int64_t>(max))
      c.fail_at("workload.sizes", "workload.sizes[" + std::to_string(i) + "]",
                "must be between " + std::to_string(min) + " and " + std::to_string(max) + " (" + why + ")");
    s.push_back(static_cast<uint32_t>(v[i]));
  }
  return s;
}

}  // namespace mbpsim::mbcf_points
