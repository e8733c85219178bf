// Each parameter is declared once (models/core/params.h): these tests hold every typed config
// struct to its declaration. A struct a test builds with `S{}` must be the machine `mbpsim run`
// builds from an empty config, every member must hold the documented default, and every key
// must be read into its own member and no other.
#include <gtest/gtest.h>

#include <cmath>

#include "models/core/params.h"
#include "models/host/io_bus.h"
#include "models/host/x11.h"
#include "models/mbcf/ether_system.h"
#include "models/mbp/mbp_config.h"
#include "models/mbp2/mbp2_cards.h"
#include "models/net/ether.h"
#include "models/net/net_config.h"
#include "models/node/node_config.h"
#include "sim/runner.h"

namespace mbpsim {
namespace {

using nlohmann::json;

// A documented default and a member's value agree (numbers as numbers: 4 and 4.0 are one).
bool same_value(const json& a, const json& b) {
  if (a.is_number() && b.is_number()) return a.get<double>() == b.get<double>();
  return a == b;
}

// A valid value of `s` other than its default, or null when there is none to try.
json other_value(const ParamSpec& s) {
  switch (s.type) {
    case ParamType::Bool: return !s.def.get<bool>();
    case ParamType::Int: {
      const int64_t d = s.def.get<int64_t>();
      if (d + 1 <= s.max) return d + 1;
      if (d - 1 >= s.min) return d - 1;
      return nullptr;
    }
    case ParamType::Double: {
      const double d = s.def.get<double>();
      for (double v : {d + 1, d * 1.5, (d + s.min) / 2})
        if (v != d && v >= s.min && v <= s.max) return v;
      return nullptr;
    }
    case ParamType::String:
      if (s.choices.empty()) return s.def.get<std::string>() + "-other";
      for (const auto& c : s.choices)
        if (c != s.def.get<std::string>()) return c;
      return nullptr;
    default: return nullptr;
  }
}

template <class S>
class ParamTableTest : public ::testing::Test {};

using Structs = ::testing::Types<net::NetConfig, node::NodeConfig, mbp::MbpConfig, net::EtherConfig, host::BusConfig,
                                 mbcf::EtherSysConfig, mbp2::PmeConfig, mbp2::EmConfig, mbp2::CryptoConfig,
                                 mbp2::Mbp2Config, host::X11Config>;
TYPED_TEST_SUITE(ParamTableTest, Structs);

// `S{}` holds every documented default, as the parameter listing prints it.
TYPED_TEST(ParamTableTest, DefaultConstructedHoldsTheDocumentedDefaults) {
  const auto& t = TypeParam::params();
  const json got = t.to_json(TypeParam{});
  size_t checked = 0;
  for (const auto& e : t.entries()) {
    if (!e.store) continue;
    ASSERT_TRUE(got.contains(e.spec.key)) << e.spec.key;
    EXPECT_TRUE(same_value(got[e.spec.key], e.spec.def))
        << e.spec.key << ": the struct holds " << got[e.spec.key] << ", the declaration says " << e.spec.def;
    ++checked;
  }
  EXPECT_GT(checked, 0u);
}

// Every default is a value the config itself would accept: in range, one of the choices.
TYPED_TEST(ParamTableTest, EveryDefaultIsAValidValue) {
  for (const auto& e : TypeParam::params().entries()) {
    Config c(TypeParam::params().schema());
    EXPECT_NO_THROW(c.set(e.spec.key, e.spec.def, "test")) << e.spec.key;
  }
}

// Each key is read into its own member: setting it to another valid value changes that key's
// member and nothing else (two keys bound to one member, or a key read nowhere, fail here).
TYPED_TEST(ParamTableTest, EachKeyMovesItsOwnMemberAndNoOther) {
  const auto& t = TypeParam::params();
  const json base = t.to_json(TypeParam{});
  size_t moved = 0;
  for (const auto& e : t.entries()) {
    if (!e.store || !e.load) continue;
    const json v = other_value(e.spec);
    if (v.is_null()) continue;
    Config c(t.schema());
    c.set(e.spec.key, v, "test");
    TypeParam s;
    t.load(s, c);
    const json got = t.to_json(s);
    for (auto it = got.begin(); it != got.end(); ++it) {
      if (it.key() == e.spec.key)
        EXPECT_TRUE(same_value(it.value(), v)) << e.spec.key << " set to " << v << " reads back as " << it.value();
      else
        EXPECT_TRUE(same_value(it.value(), base[it.key()])) << "setting " << e.spec.key << " moved " << it.key();
    }
    ++moved;
  }
  EXPECT_GT(moved, 0u);
}

// Every key the table binds is one the run's schema declares, with the same declaration.
TYPED_TEST(ParamTableTest, TheRunsSchemaHoldsTheseDeclarations) {
  for (const auto& e : TypeParam::params().entries()) {
    const ParamSpec* s = schema().find(e.spec.key);
    ASSERT_NE(s, nullptr) << e.spec.key;
    EXPECT_EQ(s->type, e.spec.type) << e.spec.key;
    EXPECT_EQ(s->def, e.spec.def) << e.spec.key;
    EXPECT_EQ(s->desc, e.spec.desc) << e.spec.key;
  }
}

// The systems' structs built from an empty config are the default-constructed ones: a test
// that builds `EtherSysConfig{}` simulates the machine `mbpsim run` simulates.
template <class S>
void expect_from_empty_is_default() {
  const Config empty(schema());
  EXPECT_EQ(S::params().to_json(S::from(empty)).dump(), S::params().to_json(S{}).dump());
}
TEST(ParamTable, FromAnEmptyConfigIsTheDefaultConstructedStruct) {
  expect_from_empty_is_default<net::NetConfig>();
  expect_from_empty_is_default<node::NodeConfig>();
  expect_from_empty_is_default<mbp::MbpConfig>();
  expect_from_empty_is_default<mbcf::EtherSysConfig>();
  expect_from_empty_is_default<mbp2::Mbp2Config>();
}

// The defaults that had drifted between struct and schema (the struct was what tests built,
// the schema what `mbpsim run` built) are the documented ones now.
TEST(ParamTable, TheFormerlyDriftedDefaultsAreTheDocumentedOnes) {
  const mbcf::EtherSysConfig e;
  EXPECT_DOUBLE_EQ(e.timer_read_us, 1.2);
  EXPECT_DOUBLE_EQ(e.ether.prop_ns, 560.0);
  EXPECT_TRUE(e.ether.lance_mode);
  EXPECT_EQ(e.ether.medium, net::EtherConfig::Medium::Hub);
}

// A choice the table does not know is refused with the key named (the schema's check).
TEST(ParamTable, AnUnknownChoiceNamesTheKey) {
  Config c(schema());
  try {
    c.set("ether.medium", "token-ring", "x.json");
    FAIL() << "accepted";
  } catch (const UserError& err) {
    EXPECT_NE(std::string(err.what()).find("x.json: ether.medium: 'token-ring' is not one of: hub, switch, direct"),
              std::string::npos)
        << err.what();
  }
}

}  // namespace
}  // namespace mbpsim
