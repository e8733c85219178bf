// One declaration per parameter. A component's `ParamTable<S>` binds each of its parameters
// (key, default, unit, description with the default's origin, range, choices) to the member of
// its typed struct S that holds it, and is the only place those are written: it declares them
// to the schema (`mbpsim params`), reads a Config into S (`load`), and gives S its defaults
// (`set_defaults`: S's default constructor loads a Config that holds only the defaults). So a
// struct a test builds with `S{}` is the machine `mbpsim run` builds from an empty config, and
// a default cannot drift from its documentation. Cross-field checks stay in `S::from`, which
// loads the table and then checks.
#pragma once
#include <functional>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/core/config.h"
#include "models/core/error.h"

namespace mbpsim {

// What a table entry declares; the type comes from the member it is bound to (or is given).
struct ParamDecl {
  std::string key;   // dotted path, e.g. "network.radix"
  nlohmann::json def;
  std::string unit;  // "" when dimensionless
  std::string desc;  // one line; says where the default comes from
  double min = -std::numeric_limits<double>::infinity();
  double max = std::numeric_limits<double>::infinity();
};

namespace param_detail {
template <class>
inline constexpr bool kAlwaysFalse = false;

// The parameter type a member of type M holds.
template <class M>
constexpr ParamType type_of() {
  if constexpr (std::is_same_v<M, bool>) return ParamType::Bool;
  else if constexpr (std::is_integral_v<M>) return ParamType::Int;
  else if constexpr (std::is_floating_point_v<M>) return ParamType::Double;
  else if constexpr (std::is_same_v<M, std::string>) return ParamType::String;
  else static_assert(kAlwaysFalse<M>, "no parameter type for this member type");
}

// The value of `s` in `c`, converted to the member's type.
template <class M>
M read(const Config& c, const ParamSpec& s) {
  if constexpr (std::is_same_v<M, bool>) {
    return c.get_bool(s.key);
  } else if constexpr (std::is_arithmetic_v<M>) {
    if (s.type == ParamType::Int) return static_cast<M>(c.get_int(s.key));
    if (s.type == ParamType::Double) return static_cast<M>(c.get_double(s.key));
    internal_error("parameter " + s.key + " is bound to a number but declared " + to_string(s.type));
  } else if constexpr (std::is_same_v<M, std::string>) {
    return c.get_string(s.key);
  } else {
    static_assert(kAlwaysFalse<M>, "no reader for this member type");
  }
}

// A member's value as a config file would write it.
template <class M>
nlohmann::json write(const M& m, ParamType t) {
  if constexpr (std::is_same_v<M, bool> || std::is_same_v<M, std::string>) {
    return m;
  } else if constexpr (std::is_arithmetic_v<M>) {
    if (t == ParamType::Int) return static_cast<int64_t>(m);
    return static_cast<double>(m);
  } else {
    static_assert(kAlwaysFalse<M>, "no writer for this member type");
  }
}
}  // namespace param_detail

template <class S>
class ParamTable {
 public:
  struct Entry {
    ParamSpec spec;
    std::function<void(S&, const Config&)> load;        // empty: declared only, no member
    std::function<nlohmann::json(const S&)> store;      // the member as a config value; may be empty
  };

  // A parameter held by member `m`; its type is the member's.
  template <class M>
  ParamTable& add(M S::*m, ParamDecl d) {
    return add_as(param_detail::type_of<M>(), m, std::move(d));
  }
  // The same with the declared type given (a number of one type held in another, e.g. a
  // nanosecond count declared as a number and held as an integer).
  template <class M>
  ParamTable& add_as(ParamType t, M S::*m, ParamDecl d) {
    const ParamSpec& sp = push(make(t, std::move(d)));
    auto& e = entries_.back();
    e.load = [m, spec = sp](S& s, const Config& c) { s.*m = param_detail::read<M>(c, spec); };
    e.store = [m, type = sp.type](const S& s) { return param_detail::write(s.*m, type); };
    return *this;
  }
  // A String parameter whose values each stand for a value of the member (an enum, a flag).
  template <class M>
  ParamTable& add_choice(M S::*m, ParamDecl d, std::vector<std::pair<std::string, M>> values) {
    ParamSpec spec = make(ParamType::String, std::move(d));
    for (const auto& v : values) spec.choices.push_back(v.first);
    const ParamSpec& sp = push(std::move(spec));
    auto& e = entries_.back();
    e.load = [m, values, key = sp.key](S& s, const Config& c) {
      const std::string v = c.get_string(key);
      for (const auto& [name, value] : values)
        if (name == v) {
          s.*m = value;
          return;
        }
      c.fail(key, "'" + v + "' is not one of its choices");
    };
    e.store = [m, values](const S& s) -> nlohmann::json {
      for (const auto& [name, value] : values)
        if (value == s.*m) return name;
      return nullptr;
    };
    return *this;
  }
  // A structured parameter (a list, an object) that `load` parses into S, checking it; `store`
  // gives it back as a config value.
  ParamTable& add_custom(ParamType t, ParamDecl d, std::function<void(S&, const Config&)> load,
                         std::function<nlohmann::json(const S&)> store = {}) {
    push(make(t, std::move(d)));
    entries_.back().load = std::move(load);
    entries_.back().store = std::move(store);
    return *this;
  }
  // A parameter this component declares but no member of S holds (whoever needs it reads it).
  ParamTable& declare_only(ParamType t, ParamDecl d, std::vector<std::string> choices = {}) {
    ParamSpec spec = make(t, std::move(d));
    spec.choices = std::move(choices);
    push(std::move(spec));
    return *this;
  }
  // Every parameter of a part's table, held by S's member `m` of the part's type.
  template <class P>
  ParamTable& include(P S::*m, const ParamTable<P>& part) {
    for (const auto& pe : part.entries()) {
      push(pe.spec);
      auto& e = entries_.back();
      if (pe.load) e.load = [m, l = pe.load](S& s, const Config& c) { l(s.*m, c); };
      if (pe.store) e.store = [m, w = pe.store](const S& s) { return w(s.*m); };
    }
    return *this;
  }

  // Adds every parameter to the run's schema, in the order they were declared here.
  void declare(ParamSchema& schema) const {
    for (const auto& e : entries_) schema.add(e.spec);
  }
  // Reads every bound parameter of `c` into `s` (no cross-field checks: `S::from` makes them).
  void load(S& s, const Config& c) const {
    for (const auto& e : entries_)
      if (e.load) e.load(s, c);
  }
  // The documented defaults: what `load` reads from a config that sets nothing.
  void set_defaults(S& s) const { load(s, Config(schema_)); }
  // Every bound parameter of `s` as config values by key (the ones that have a `store`).
  nlohmann::json to_json(const S& s) const {
    nlohmann::json j = nlohmann::json::object();
    for (const auto& e : entries_)
      if (e.store) j[e.spec.key] = e.store(s);
    return j;
  }
  const std::vector<Entry>& entries() const { return entries_; }
  // This table's parameters alone, as a schema (for a Config of just this component).
  const ParamSchema& schema() const { return schema_; }

 private:
  static ParamSpec make(ParamType t, ParamDecl d) {
    ParamSpec s;
    s.key = std::move(d.key);
    s.type = t;
    s.def = std::move(d.def);
    s.unit = std::move(d.unit);
    s.desc = std::move(d.desc);
    s.min = d.min;
    s.max = d.max;
    return s;
  }
  const ParamSpec& push(ParamSpec spec) {
    schema_.add(spec);  // a key declared twice is an internal error here already
    entries_.push_back(Entry{std::move(spec), {}, {}});
    return entries_.back().spec;
  }

  std::vector<Entry> entries_;
  ParamSchema schema_;
};

}  // namespace mbpsim
