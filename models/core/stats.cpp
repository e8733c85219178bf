#include "models/core/stats.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <string_view>

#include "models/core/error.h"
#include "models/core/footprint.h"

namespace mbpsim {

size_t Histogram::bucket_of(uint64_t v) {
  if (v < 64) return v;
  const int e = 63 - __builtin_clzll(v);  // >= 6
  const uint64_t sub = (v >> (e - 4)) - 16;
  return 64 + static_cast<size_t>(e - 6) * 16 + sub;
}

uint64_t Histogram::bucket_low(size_t b) {
  if (b < 64) return b;
  const size_t e = (b - 64) / 16 + 6;
  const uint64_t sub = (b - 64) % 16;
  return (16 + sub) << (e - 4);
}

void Histogram::sample(uint64_t v) {
  const size_t b = bucket_of(v);
  if (b >= buckets_.size()) buckets_.resize(b + 1, 0);
  ++buckets_[b];
  if (count_ == 0 || v < min_) min_ = v;
  if (count_ == 0 || v > max_) max_ = v;
  ++count_;
  sum_ += static_cast<double>(v);
}

uint64_t Histogram::percentile(double p) const {
  if (count_ == 0) return 0;
  const uint64_t rank = static_cast<uint64_t>(std::ceil(p * static_cast<double>(count_)));
  uint64_t seen = 0;
  for (size_t b = 0; b < buckets_.size(); ++b) {
    seen += buckets_[b];
    if (seen >= std::max<uint64_t>(rank, 1)) return std::max(bucket_low(b), min_);
  }
  return max_;
}

void Histogram::reset() {
  buckets_.clear();
  count_ = min_ = max_ = 0;
  sum_ = 0;
}

uint32_t Stats::intern(const std::string& text) {
  auto [it, fresh] = desc_ids_.emplace(text, static_cast<uint32_t>(descs_.size()));
  if (fresh) descs_.push_back(text);
  return it->second;
}

std::string Stats::conventional_unit(const std::string& path, bool counter) {
  const std::string_view leaf = std::string_view(path).substr(path.rfind('.') + 1);  // (npos + 1 = 0)
  const auto last_word = [&](std::string_view w) {
    return leaf.size() > w.size() && leaf.substr(leaf.size() - w.size()) == w && leaf[leaf.size() - w.size() - 1] == '_';
  };
  const auto has_word = [&](std::string_view w) {
    for (size_t at = leaf.find(w); at != std::string_view::npos; at = leaf.find(w, at + 1))
      if ((at == 0 || leaf[at - 1] == '_') && (at + w.size() == leaf.size() || leaf[at + w.size()] == '_')) return true;
    return false;
  };
  for (const char* t : {"ps", "ns", "us", "cycles"})
    if (last_word(t)) return t;
  for (const char* q : {"bytes", "flits"})
    if (has_word(q)) return q;
  return counter ? "count" : "";
}

void Stats::add(const std::string& path, Kind k, size_t idx, const std::string& desc, const std::string& unit) {
  if (!paths_.insert(path).second) internal_error("stat registered twice: " + path);
  entries_.push_back({path, k, idx, intern(desc), intern(unit.empty() ? conventional_unit(path, k == Kind::Counter) : unit)});
}

uint64_t Stats::bytes_per_stat(size_t path_len) {
  // The entries vector doubles: 1.5 entries of capacity per entry on average. A set node is
  // its next pointer, the string and the cached hash, plus a bucket pointer. The value is a
  // deque element (a histogram's bins grow with what it sees; counted as a counter).
  return sizeof(Entry) * 3 / 2 + 2 * string_bytes(path_len) + heap_bytes(sizeof(void*) + sizeof(std::string) + sizeof(size_t)) +
         sizeof(void*) + sizeof(Counter);
}

std::vector<Stats::Info> Stats::describe() const {
  static const char* const kinds[] = {"counter", "average", "histogram", "formula"};
  std::vector<Info> v;
  v.reserve(entries_.size());
  for (const Entry& e : entries_) v.push_back({e.path, kinds[static_cast<int>(e.kind)], descs_[e.desc], descs_[e.unit]});
  return v;
}

Counter& Stats::counter(const std::string& path, const std::string& desc, const std::string& unit) {
  counters_.emplace_back();
  add(path, Kind::Counter, counters_.size() - 1, desc, unit);
  return counters_.back();
}
std::optional<uint64_t> Stats::counter_value(const std::string& path) const {
  for (const Entry& e : entries_)
    if (e.kind == Kind::Counter && e.path == path) return counters_[e.idx].value;
  return std::nullopt;
}
Average& Stats::average(const std::string& path, const std::string& desc, const std::string& unit) {
  averages_.emplace_back();
  add(path, Kind::Average, averages_.size() - 1, desc, unit);
  return averages_.back();
}
Histogram& Stats::histogram(const std::string& path, const std::string& desc, const std::string& unit) {
  histograms_.emplace_back();
  add(path, Kind::Histogram, histograms_.size() - 1, desc, unit);
  return histograms_.back();
}
void Stats::formula(const std::string& path, std::function<double()> f, const std::string& desc, const std::string& unit) {
  formulas_.push_back(std::move(f));
  add(path, Kind::Formula, formulas_.size() - 1, desc, unit);
}

void Stats::reset() {
  for (auto& c : counters_) c.reset();
  for (auto& a : averages_) a.reset();
  for (auto& h : histograms_) h.reset();
}

nlohmann::ordered_json figure_json(double v) {
  if (!std::isfinite(v)) return nullptr;
  return six_significant(v);
}

double six_significant(double v) {
  if (!std::isfinite(v)) return 0.0;
  if (v == 0) return 0.0;
  const double mag = std::pow(10.0, 5 - static_cast<int>(std::floor(std::log10(std::fabs(v)))));
  return std::round(v * mag) / mag;
}

nlohmann::ordered_json Stats::dump() const {
  nlohmann::ordered_json root = nlohmann::ordered_json::object();
  // Stats of one module are registered together: reuse the parent object of the previous
  // entry when the prefix is the same (ordered_json looks keys up linearly).
  std::string last_prefix;
  nlohmann::ordered_json* last_parent = nullptr;
  for (const auto& e : entries_) {
    const size_t cut = e.path.rfind('.');
    const std::string prefix = cut == std::string::npos ? "" : e.path.substr(0, cut);
    std::string k = cut == std::string::npos ? e.path : e.path.substr(cut + 1);
    nlohmann::ordered_json* node;
    if (last_parent && prefix == last_prefix) {
      node = last_parent;
    } else {
      node = &root;
      std::string rest = prefix;
      size_t pos;
      while (!rest.empty()) {
        pos = rest.find('.');
        node = &(*node)[rest.substr(0, pos)];
        rest = pos == std::string::npos ? "" : rest.substr(pos + 1);
      }
      last_prefix = prefix;
      last_parent = node;
    }
    nlohmann::ordered_json v;
    switch (e.kind) {
      case Kind::Counter: v = counters_[e.idx].value; break;
      // Without a sample a mean, an extreme or a percentile was not measured: null, not 0.
      case Kind::Average: {
        const Average& a = averages_[e.idx];
        if (a.count == 0) {
          v = {{"mean", nullptr}, {"count", 0}, {"min", nullptr}, {"max", nullptr}};
          break;
        }
        v = {{"mean", six_significant(a.mean())}, {"count", a.count}, {"min", six_significant(a.min)},
             {"max", six_significant(a.max)}};
        break;
      }
      case Kind::Histogram: {
        const Histogram& h = histograms_[e.idx];
        if (h.count() == 0) {
          v = {{"count", 0}, {"mean", nullptr}, {"min", nullptr}, {"p50", nullptr}, {"p90", nullptr}, {"p99", nullptr}, {"max", nullptr}};
          break;
        }
        v = {{"count", h.count()},       {"mean", six_significant(h.mean())},
             {"min", h.min()},           {"p50", h.percentile(0.50)},
             {"p90", h.percentile(0.90)}, {"p99", h.percentile(0.99)},
             {"max", h.max()}};
        break;
      }
      case Kind::Formula: v = figure_json(formulas_[e.idx]()); break;
    }
    (*node)[k] = v;
  }
  return root;
}


}  // namespace mbpsim
