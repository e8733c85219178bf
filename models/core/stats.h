// The one stats registry: counters, averages, histograms with percentiles and formulas,
// named after the module hierarchy ("system.net.router_1_2.port3.flits") and dumped as nested
// JSON. Modules keep references to their stats, so recording is a plain add on the hot path.
// reset() clears every value at the end of warm-up; formulas are evaluated at dump time.
#pragma once
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <nlohmann/json.hpp>

namespace mbpsim {

struct Counter {
  uint64_t value = 0;
  void inc(uint64_t n = 1) { value += n; }
  void reset() { value = 0; }
};

struct Average {
  double sum = 0;
  uint64_t count = 0;
  double min = 0, max = 0;
  void sample(double v) {
    if (count == 0 || v < min) min = v;
    if (count == 0 || v > max) max = v;
    sum += v;
    ++count;
  }
  double mean() const { return count ? sum / count : 0.0; }
  void reset() { *this = Average(); }
};

// Log-linear buckets over non-negative integers: exact below 64, then 16 buckets per power of
// two (relative error of a percentile below 1/16). Constant memory whatever the range.
class Histogram {
 public:
  void sample(uint64_t v);
  uint64_t count() const { return count_; }
  double mean() const { return count_ ? sum_ / count_ : 0.0; }
  uint64_t min() const { return min_; }
  uint64_t max() const { return max_; }
  // Value below which a fraction p (0..1) of the samples lie; the bucket's lower bound.
  uint64_t percentile(double p) const;
  void reset();
  static size_t bucket_of(uint64_t v);
  static uint64_t bucket_low(size_t b);

 private:
  std::vector<uint64_t> buckets_;
  uint64_t count_ = 0, min_ = 0, max_ = 0;
  double sum_ = 0;
};

// `v` rounded to six significant digits (non-finite values become 0), as stats.json holds
// every figure: the JSON text stays stable and a small rate keeps as many digits as a large
// latency.
double six_significant(double v);
// A figure as stats.json holds it: six significant digits, or null when nothing was measured
// behind it (it is not a number: a ratio over nothing), never 0.
nlohmann::ordered_json figure_json(double v);

// Each statistic has a description and a unit. The unit is declared by the name's convention
// (`conventional_unit`: a last word `ps`, `ns`, `us` or `cycles`, a word `bytes` or `flits`,
// and a count for any other counter) or, where the name says none, given at registration.
class Stats {
 public:
  Counter& counter(const std::string& path, const std::string& desc = "", const std::string& unit = "");
  Average& average(const std::string& path, const std::string& desc = "", const std::string& unit = "");
  Histogram& histogram(const std::string& path, const std::string& desc = "", const std::string& unit = "");
  void formula(const std::string& path, std::function<double()> f, const std::string& desc = "", const std::string& unit = "");
  // The unit a statistic's name declares ("" when it declares none).
  static std::string conventional_unit(const std::string& path, bool counter);
  // A registered counter's value, for testers and oracles; nullopt when no counter has the path.
  std::optional<uint64_t> counter_value(const std::string& path) const;
  void reset();
  // Nested JSON of every stat (descriptions are not in it, so the stats file stays compact:
  // `describe` and `mbpsim stats-doc` list them).
  nlohmann::ordered_json dump() const;
  // Every registered stat in registration order: its path, kind, description and unit ("" when
  // neither its name nor its registration gave one).
  struct Info {
    std::string path;
    const char* kind;  // "counter", "average", "histogram", "formula"
    std::string desc;
    std::string unit;
  };
  std::vector<Info> describe() const;
  // Host memory one registered statistic holds, with a path of `path_len` characters: its
  // entry, its path (in the entry and in the set of paths) and its value (models/core/footprint.h).
  static uint64_t bytes_per_stat(size_t path_len);

 private:
  enum class Kind { Counter, Average, Histogram, Formula };
  struct Entry {
    std::string path;
    Kind kind;
    size_t idx;
    uint32_t desc;  // in descs_: one copy of each distinct description (a router's are shared)
    uint32_t unit;  // in descs_ too
  };
  void add(const std::string& path, Kind k, size_t idx, const std::string& desc, const std::string& unit);
  uint32_t intern(const std::string& text);
  std::vector<std::string> descs_{std::string()};
  std::unordered_map<std::string, uint32_t> desc_ids_{{std::string(), 0}};
  std::vector<Entry> entries_;
  std::unordered_set<std::string> paths_;
  std::deque<Counter> counters_;
  std::deque<Average> averages_;
  std::deque<Histogram> histograms_;
  std::vector<std::function<double()>> formulas_;
};

}  // namespace mbpsim
