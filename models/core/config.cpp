#include "models/core/config.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <sstream>

#include "models/core/error.h"

namespace mbpsim {

using nlohmann::json;

const char* to_string(ParamType t) {
  switch (t) {
    case ParamType::Int: return "int";
    case ParamType::Double: return "number";
    case ParamType::Bool: return "bool";
    case ParamType::String: return "string";
    case ParamType::IntList: return "int list";
    case ParamType::Json: return "json";
  }
  return "?";
}

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t sub = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

void ParamSchema::add(ParamSpec spec) {
  if (index_.count(spec.key)) internal_error("parameter declared twice: " + spec.key);
  index_[spec.key] = specs_.size();
  specs_.push_back(std::move(spec));
}

const ParamSpec* ParamSchema::find(const std::string& key) const {
  auto it = index_.find(key);
  return it == index_.end() ? nullptr : &specs_[it->second];
}

bool ParamSchema::is_group(const std::string& key) const {
  const std::string p = key + ".";
  auto it = index_.lower_bound(p);
  return it != index_.end() && it->first.compare(0, p.size(), p) == 0;
}

static std::string last_component(const std::string& k) {
  auto pos = k.rfind('.');
  return pos == std::string::npos ? k : k.substr(pos + 1);
}

std::string ParamSchema::nearest(const std::string& key) const {
  std::string best;
  size_t best_d = SIZE_MAX;
  const std::string leaf = last_component(key);
  for (const auto& s : specs_) {
    size_t d = std::min(edit_distance(key, s.key), edit_distance(leaf, last_component(s.key)) + 1);
    if (d < best_d) {
      best_d = d;
      best = s.key;
    }
  }
  return best;
}

Config::Config(const ParamSchema& schema) : schema_(&schema) {
  for (const auto& s : schema.all()) values_[s.key] = s.def;
}

// A range bound as written: integers exactly (9000000000000000000, not 9e+18).
static std::string bound_text(double x) {
  char b[40];
  if (std::isfinite(x) && x == std::floor(x) && std::fabs(x) < 9.2e18)
    std::snprintf(b, sizeof b, "%lld", static_cast<long long>(x));
  else
    std::snprintf(b, sizeof b, "%.15g", x);
  return b;
}

static std::string describe(const json& v) {
  std::string s = v.dump();
  if (s.size() > 40) s = s.substr(0, 37) + "...";
  return s;
}

static bool type_ok(const ParamSpec& s, const json& v) {
  switch (s.type) {
    case ParamType::Int: return v.is_number_integer();
    case ParamType::Double: return v.is_number();
    case ParamType::Bool: return v.is_boolean();
    case ParamType::String: return v.is_string();
    case ParamType::IntList:
      return v.is_array() && std::all_of(v.begin(), v.end(),
                                         [](const json& e) { return e.is_number_integer(); });
    case ParamType::Json: return true;
  }
  return false;
}

void Config::set(const std::string& key, const json& v, const std::string& origin) {
  const ParamSpec* s = schema_->find(key);
  if (!s) {
    throw UserError(origin + ": " + key + ": unknown parameter (did you mean '" +
                    schema_->nearest(key) + "'?)");
  }
  if (!type_ok(*s, v)) {
    throw UserError(origin + ": " + key + ": expected " + to_string(s->type) + ", got " +
                    describe(v));
  }
  auto check_range = [&](double x) {
    if (x < s->min || x > s->max) {
      std::ostringstream os;
      os << origin << ": " << key << ": value " << describe(v) << " out of range [" << bound_text(s->min)
         << ", " << bound_text(s->max) << "]";
      throw UserError(os.str());
    }
  };
  if (s->type == ParamType::Int || s->type == ParamType::Double) {
    double x = v.get<double>();
    if (!std::isfinite(x)) throw UserError(origin + ": " + key + ": value must be finite");
    check_range(x);
  } else if (s->type == ParamType::IntList) {
    for (const auto& e : v) check_range(e.get<double>());
  }
  if (!s->choices.empty() &&
      std::find(s->choices.begin(), s->choices.end(), v.get<std::string>()) == s->choices.end()) {
    std::string all;
    for (const auto& c : s->choices) all += (all.empty() ? "" : ", ") + c;
    throw UserError(origin + ": " + key + ": '" + v.get<std::string>() +
                    "' is not one of: " + all);
  }
  values_[key] = v;
  value_origin_[key] = origin;
}

void Config::merge(const json& j, const std::string& prefix, const std::string& origin) {
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string key = prefix.empty() ? it.key() : prefix + "." + it.key();
    const ParamSpec* s = schema_->find(key);
    if (s) {
      set(key, it.value(), origin);
    } else if (schema_->is_group(key)) {
      if (!it.value().is_object())
        throw UserError(origin + ": " + key + ": expected an object of parameters, got " +
                        describe(it.value()));
      merge(it.value(), key, origin);
    } else {
      throw UserError(origin + ": " + key + ": unknown parameter (did you mean '" +
                      schema_->nearest(key) + "'?)");
    }
  }
}

Config Config::from_json(const ParamSchema& schema, const json& j, const std::string& origin) {
  Config c(schema);
  c.origin_ = origin;
  if (!j.is_object()) throw UserError(origin + ": top level must be a JSON object");
  c.merge(j, "", origin);
  return c;
}

namespace {
// A JSON library message without its "[json.exception.out_of_range.406] " prefix.
std::string json_error_text(const json::exception& e) {
  const std::string what = e.what();
  const auto pos = what.find("] ");
  return pos == std::string::npos ? what : what.substr(pos + 2);
}
}  // namespace

namespace {

// A parser callback that refuses a key an object names twice (the JSON library would keep the
// last), naming the key's path: `network.radix`, `workload.script[2].src`.
json::parser_callback_t duplicate_key_check(const std::string& path) {
  struct Frame {
    bool array = false;
    long index = -1;
    std::string where, key;
    std::set<std::string> keys;
  };
  auto frames = std::make_shared<std::vector<Frame>>();
  return [frames, path](int, json::parse_event_t ev, json& parsed) {
    auto& fs = *frames;
    auto child = [&]() -> std::string {
      if (fs.empty()) return "";
      const Frame& f = fs.back();
      if (f.array) return f.where + "[" + std::to_string(f.index) + "]";
      return f.where.empty() ? f.key : f.where + "." + f.key;
    };
    switch (ev) {
      case json::parse_event_t::object_start:
      case json::parse_event_t::array_start: {
        if (!fs.empty() && fs.back().array) ++fs.back().index;
        Frame f;
        f.array = ev == json::parse_event_t::array_start;
        f.where = child();
        fs.push_back(std::move(f));
        break;
      }
      case json::parse_event_t::object_end:
      case json::parse_event_t::array_end:
        if (!fs.empty()) fs.pop_back();
        break;
      case json::parse_event_t::key: {
        Frame& f = fs.back();
        f.key = parsed.get<std::string>();
        if (!f.keys.insert(f.key).second)
          throw UserError(path + ": " + child() + ": named twice (JSON objects may not repeat a key)");
        break;
      }
      case json::parse_event_t::value:
        if (!fs.empty() && fs.back().array) ++fs.back().index;
        break;
    }
    return true;
  };
}

}  // namespace

namespace {
json parse_config_file(const std::string& path);
}

Config Config::load_file(const ParamSchema& schema, const std::string& path) {
  // A file may name a `base` (a path relative to its own folder): the base's values first, then
  // the file's own over them, so configs of one machine share its parameters instead of copying
  // them. A chain of at most kMaxBaseDepth files; a file that is its own base is refused.
  constexpr int kMaxBaseDepth = 8;
  std::vector<std::pair<std::string, json>> chain;  // the file first, its bases after it
  std::string at = path;
  for (;;) {
    json j = parse_config_file(at);
    if (!j.is_object()) throw UserError(at + ": top level must be a JSON object");
    std::string next;
    if (auto it = j.find("base"); it != j.end()) {
      if (!it->is_string() || it->get<std::string>().empty())
        throw UserError(at + ": base: expected the path of another config file, got " + describe(*it));
      const std::filesystem::path b = std::filesystem::path(at).parent_path() / it->get<std::string>();
      next = b.lexically_normal().string();
      j.erase(it);
    }
    for (const auto& [seen, unused] : chain) {
      (void)unused;
      std::error_code ec;
      if (std::filesystem::equivalent(seen, at, ec)) throw UserError(at + ": base: the chain of bases comes back to " + seen);
    }
    chain.emplace_back(at, std::move(j));
    if (next.empty()) break;
    if (static_cast<int>(chain.size()) == kMaxBaseDepth)
      throw UserError(at + ": base: more than " + std::to_string(kMaxBaseDepth) + " files in the chain of bases");
    at = next;
  }
  Config c(schema);
  c.origin_ = path;
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) c.merge(it->second, "", it->first);
  return c;
}

namespace {
json parse_config_file(const std::string& path) {
  // A config is a regular file of at most Config::kMaxConfigBytes: a folder, a device (/dev/zero,
  // /dev/urandom) or a pipe is refused before a byte is read.
  std::error_code ec;
  const auto st = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(st)) throw UserError(path + ": cannot open file (" + (ec ? ec.message() : "no such file") + ")");
  if (std::filesystem::is_directory(st)) throw UserError(path + ": is a folder, not a config file");
  if (!std::filesystem::is_regular_file(st)) throw UserError(path + ": not a regular file (a config is a JSON file)");
  const auto size = std::filesystem::file_size(path, ec);
  if (ec) throw UserError(path + ": cannot read its size: " + ec.message());
  if (size > Config::kMaxConfigBytes)
    throw UserError(path + ": " + std::to_string(size) + " bytes, more than a config may hold (" + std::to_string(Config::kMaxConfigBytes) + ")");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UserError(path + ": cannot open file");
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  json j;
  try {
    j = json::parse(text, duplicate_key_check(path));
  } catch (const json::parse_error& e) {
    size_t byte = std::min<size_t>(e.byte ? e.byte - 1 : 0, text.size());
    size_t line = 1 + std::count(text.begin(), text.begin() + byte, '\n');
    size_t nl = text.rfind('\n', byte ? byte - 1 : 0);
    size_t col = (nl == std::string::npos || byte == 0) ? byte + 1 : byte - nl;
    std::string what = e.what();
    auto pos = what.find("parse error");
    if (pos != std::string::npos) what = what.substr(pos);
    throw UserError(path + ":" + std::to_string(line) + ":" + std::to_string(col) +
                    ": malformed JSON: " + what);
  } catch (const json::exception& e) {
    // The parser raises out_of_range (406) for a number too large for a double, e.g.
    // 32E768, and gives no byte offset: find the token it names to report the place.
    std::string what = e.what();
    std::string where;
    const auto q1 = what.find('\'');
    const auto q2 = q1 == std::string::npos ? q1 : what.find('\'', q1 + 1);
    if (q2 != std::string::npos) {
      const auto at = text.find(what.substr(q1 + 1, q2 - q1 - 1));
      if (at != std::string::npos) {
        size_t line = 1 + std::count(text.begin(), text.begin() + at, '\n');
        size_t nl = at ? text.rfind('\n', at - 1) : std::string::npos;
        size_t col = nl == std::string::npos ? at + 1 : at - nl;
        where = ":" + std::to_string(line) + ":" + std::to_string(col);
      }
    }
    throw UserError(path + where + ": malformed JSON: " + json_error_text(e));
  }
  return j;
}
}  // namespace

void Config::apply_set(const std::string& a) {
  auto eq = a.find('=');
  if (eq == std::string::npos || eq == 0)
    throw UserError("--set " + a + ": expected dotted.key=value");
  const std::string key = a.substr(0, eq);
  const std::string text = a.substr(eq + 1);
  json v;
  try {
    v = json::parse(text);
  } catch (const json::parse_error&) {
    v = text;  // not JSON: a plain string
  } catch (const json::exception& e) {
    // e.g. out_of_range 406: a number too large for a double (1E999)
    throw UserError("--set " + a + ": " + json_error_text(e));
  }
  set(key, v, "--set");
}

const json& Config::value(const std::string& key, ParamType expect) const {
  const ParamSpec* s = schema_->find(key);
  if (!s) internal_error("read of undeclared parameter " + key);
  if (s->type != expect && !(expect == ParamType::Json))
    internal_error("parameter " + key + " read with the wrong type");
  return values_.at(key);
}

int64_t Config::get_int(const std::string& k) const { return value(k, ParamType::Int).get<int64_t>(); }
double Config::get_double(const std::string& k) const {
  return value(k, ParamType::Double).get<double>();
}
bool Config::get_bool(const std::string& k) const { return value(k, ParamType::Bool).get<bool>(); }
std::string Config::get_string(const std::string& k) const {
  return value(k, ParamType::String).get<std::string>();
}
std::vector<int64_t> Config::get_int_list(const std::string& k) const {
  return value(k, ParamType::IntList).get<std::vector<int64_t>>();
}
const json& Config::get_json(const std::string& k) const { return value(k, ParamType::Json); }

void Config::fail(const std::string& key, const std::string& msg) const {
  auto it = value_origin_.find(key);
  const std::string where = it != value_origin_.end() ? it->second : origin_;
  throw UserError(where + ": " + key + ": " + msg);
}

void Config::fail_at(const std::string& key, const std::string& path, const std::string& msg) const {
  auto it = value_origin_.find(key);
  throw UserError((it != value_origin_.end() ? it->second : origin_) + ": " + path + ": " + msg);
}

nlohmann::ordered_json Config::resolved() const {
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  for (const auto& s : schema_->all()) {
    nlohmann::ordered_json* node = &out;
    std::string k = s.key;
    size_t pos;
    while ((pos = k.find('.')) != std::string::npos) {
      node = &(*node)[k.substr(0, pos)];
      k = k.substr(pos + 1);
    }
    (*node)[k] = nlohmann::ordered_json::parse(values_.at(s.key).dump());
  }
  return out;
}

}  // namespace mbpsim
