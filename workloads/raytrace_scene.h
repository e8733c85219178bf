// The parallel ray tracer of 6.2.6 as every transport runs it (MBCF_WRITE, UDP, TCP): the
// frame, its chunks of workload.payload_bytes pixels, which calculator computes which (chunk k
// on calculator k mod calc_nodes + 1), what a chunk costs to compute (its own pixels, and the
// others' pixels of its round skipped, as every node runs the whole loop), the pixels
// themselves, and the summary. One definition, so that every transport computes, sends and
// checks the same picture.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/core/config.h"

namespace mbpsim {

struct RayScene {
  uint32_t calc, chunk, w, h, chunks;
  uint64_t pixel_ps, skip_ps;
  // Reads workload.calc_nodes, payload_bytes, width, height, pixel_us and skip_cycles (at the
  // calculators' `cycles_ps`); a cluster of `nodes` needs a display besides the calculators.
  template <class CyclesPs>
  RayScene(const Config& c, uint32_t nodes, CyclesPs cycles_ps)
      : calc(static_cast<uint32_t>(c.get_int("workload.calc_nodes"))),
        chunk(static_cast<uint32_t>(c.get_int("workload.payload_bytes"))),
        w(static_cast<uint32_t>(c.get_int("workload.width"))),
        h(static_cast<uint32_t>(c.get_int("workload.height"))),
        chunks((w * h + chunk - 1) / chunk),
        pixel_ps(static_cast<uint64_t>(c.get_double("workload.pixel_us") * 1e6)),
        skip_ps(cycles_ps(c.get_double("workload.skip_cycles"))) {
    if (calc + 1 > nodes)
      c.fail("workload.calc_nodes", std::to_string(calc) + " calculators and a display need mbcf.nodes >= " + std::to_string(calc + 1));
  }
  static uint8_t pixel(uint32_t i) { return static_cast<uint8_t>((i * 2654435761u) >> 24); }
  uint32_t bytes() const { return w * h; }
  uint32_t first(uint32_t k) const { return k * chunk; }
  uint32_t len(uint32_t k) const { return std::min(chunk, bytes() - first(k)); }
  bool last_of_calculator(uint32_t k) const { return k + calc >= chunks; }
  // The chunk's computation: its pixels, and the pixels of the round's other chunks skipped.
  uint64_t compute_ps(uint32_t k) const {
    const uint32_t skipped = k + calc < chunks ? (calc - 1) * chunk : 0;
    return static_cast<uint64_t>(len(k)) * pixel_ps + skipped * skip_ps;
  }
  std::vector<uint8_t> pixels(uint32_t k) const {
    std::vector<uint8_t> d(len(k));
    for (uint32_t i = 0; i < d.size(); ++i) d[i] = pixel(first(k) + i);
    return d;
  }
  // A socket message: the chunk's offset (4 bytes, big-endian), then its pixels.
  std::vector<uint8_t> message(uint32_t k) const {
    std::vector<uint8_t> m(4);
    for (int b = 0; b < 4; ++b) m[b] = static_cast<uint8_t>(first(k) >> (24 - 8 * b));
    const std::vector<uint8_t> p = pixels(k);
    m.insert(m.end(), p.begin(), p.end());
    return m;
  }
  static uint32_t offset_of(const uint8_t* m) {
    return static_cast<uint32_t>(m[0]) << 24 | static_cast<uint32_t>(m[1]) << 16 | static_cast<uint32_t>(m[2]) << 8 | m[3];
  }
  bool correct(const std::vector<uint8_t>& frame) const {
    if (frame.size() != bytes()) return false;
    for (uint32_t i = 0; i < frame.size(); ++i)
      if (frame[i] != pixel(i)) return false;
    return true;
  }
  // The summary's common part, in the order every transport prints it.
  nlohmann::ordered_json summary(bool finished, uint64_t exec_ps, bool frame_ok) const {
    nlohmann::ordered_json s;
    s["finished"] = finished;
    s["exec_time_s"] = std::round(exec_ps / 1e9) / 1e3;
    s["calc_nodes"] = calc;
    s["payload_bytes"] = chunk;
    s["packets"] = chunks;
    s["frame_correct"] = frame_ok;
    return s;
  }
};

}  // namespace mbpsim
