// Parameter schema and experiment configuration.
//
// Every parameter is declared once (key, type, default, unit, description, range) by the
// component that owns it; `mbpsim params` prints the schema. A Config is the schema's defaults
// overlaid with a JSON file and `--set` overrides, checked key by key: unknown keys, wrong
// types and out-of-range values are UserErrors naming the file and the dotted JSON path.
#pragma once
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace mbpsim {

enum class ParamType { Int, Double, Bool, String, IntList, Json };
const char* to_string(ParamType t);

struct ParamSpec {
  std::string key;  // dotted path, e.g. "network.radix"
  ParamType type;
  nlohmann::json def;
  std::string unit;  // "" when dimensionless
  std::string desc;  // one line; says where the default comes from
  double min = -std::numeric_limits<double>::infinity();
  double max = std::numeric_limits<double>::infinity();
  std::vector<std::string> choices;  // for String parameters with a closed set of values
};

class ParamSchema {
 public:
  void add(ParamSpec spec);
  const ParamSpec* find(const std::string& key) const;
  // Nearest declared key (by edit distance on the full path and on the last component).
  std::string nearest(const std::string& key) const;
  // True when `key` names an object that has declared parameters below it.
  bool is_group(const std::string& key) const;
  const std::vector<ParamSpec>& all() const { return specs_; }

 private:
  std::vector<ParamSpec> specs_;
  std::map<std::string, size_t> index_;
};

class Config {
 public:
  // Defaults only.
  explicit Config(const ParamSchema& schema);
  // Reads a config file: a regular file of at most kMaxConfigBytes holding one JSON object
  // whose objects never repeat a key; throws UserError naming the file and the place.
  static constexpr uint64_t kMaxConfigBytes = 16u << 20;
  static Config load_file(const ParamSchema& schema, const std::string& path);
  static Config from_json(const ParamSchema& schema, const nlohmann::json& j,
                          const std::string& origin);

  // Applies "dotted.key=value"; the value is parsed as JSON where it parses, else a string.
  void apply_set(const std::string& assignment);
  // Sets one key with full checking; `origin` names the source in error messages.
  void set(const std::string& key, const nlohmann::json& value, const std::string& origin);

  int64_t get_int(const std::string& key) const;
  double get_double(const std::string& key) const;
  bool get_bool(const std::string& key) const;
  std::string get_string(const std::string& key) const;
  std::vector<int64_t> get_int_list(const std::string& key) const;
  const nlohmann::json& get_json(const std::string& key) const;

  // Every parameter with its effective value, nested by the dotted keys.
  nlohmann::ordered_json resolved() const;
  // A UserError for an inconsistent value found by a component's own check.
  [[noreturn]] void fail(const std::string& key, const std::string& msg) const;
  // The same for a place inside a structured value (`path`, e.g. "mbp.regions[2].bytes"),
  // naming the file the value of `key` came from.
  [[noreturn]] void fail_at(const std::string& key, const std::string& path, const std::string& msg) const;
  const std::string& origin() const { return origin_; }
  // Where the value of `key` came from: a file's path, "--set", or "<defaults>".
  const std::string& origin_of(const std::string& key) const {
    auto it = value_origin_.find(key);
    return it != value_origin_.end() ? it->second : origin_;
  }
  const ParamSchema& schema() const { return *schema_; }

 private:
  void merge(const nlohmann::json& j, const std::string& prefix, const std::string& origin);
  const nlohmann::json& value(const std::string& key, ParamType expect) const;

  const ParamSchema* schema_;
  std::map<std::string, nlohmann::json> values_;
  std::map<std::string, std::string> value_origin_;
  std::string origin_ = "<defaults>";
};

// Levenshtein distance, used for "did you mean" suggestions.
size_t edit_distance(const std::string& a, const std::string& b);

}  // namespace mbpsim
