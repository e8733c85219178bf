#include <gtest/gtest.h>

#include "models/core/config.h"
#include "models/core/error.h"
#include "sim/runner.h"
#include "tests/test_util.h"

namespace mbpsim {
namespace {

using nlohmann::json;

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

TEST(Config, DefaultsAndOverrides) {
  Config c = Config::from_json(schema(), json{{"network", {{"levels", 3}}}}, "x.json");
  EXPECT_EQ(c.get_int("network.levels"), 3);
  EXPECT_EQ(c.get_int("network.radix"), 4);  // default
  c.apply_set("workload.injection_rate=0.25");
  EXPECT_DOUBLE_EQ(c.get_double("workload.injection_rate"), 0.25);
  c.apply_set("workload.pattern=hotspot");  // not JSON: taken as a string
  EXPECT_EQ(c.get_string("workload.pattern"), "hotspot");
  c.apply_set("workload.hotspot_nodes=[4,16,63]");
  EXPECT_EQ(c.get_int_list("workload.hotspot_nodes"), (std::vector<int64_t>{4, 16, 63}));
}

TEST(Config, UnknownKeyNamesPathAndSuggestsNearest) {
  auto e = error_of([] {
    Config::from_json(schema(), json{{"network", {{"radx", 4}}}}, "cfg.json");
  });
  EXPECT_NE(e.find("cfg.json: network.radx: unknown parameter"), std::string::npos) << e;
  EXPECT_NE(e.find("did you mean 'network.radix'"), std::string::npos) << e;
  e = error_of([] { Config::from_json(schema(), json{{"netwrk", {{"radix", 4}}}}, "cfg.json"); });
  EXPECT_NE(e.find("netwrk"), std::string::npos) << e;
}

TEST(Config, WrongTypeRangeAndChoice) {
  auto e = error_of([] { Config::from_json(schema(), json{{"network", {{"levels", "three"}}}}, "a.json"); });
  EXPECT_NE(e.find("a.json: network.levels: expected int"), std::string::npos) << e;
  e = error_of([] { Config::from_json(schema(), json{{"network", {{"levels", 2.5}}}}, "a.json"); });
  EXPECT_NE(e.find("expected int"), std::string::npos) << e;
  e = error_of([] { Config::from_json(schema(), json{{"network", {{"radix", 1}}}}, "a.json"); });
  EXPECT_NE(e.find("out of range"), std::string::npos) << e;
  e = error_of([] { Config::from_json(schema(), json{{"workload", {{"pattern", "tornado"}}}}, "a.json"); });
  EXPECT_NE(e.find("'tornado' is not one of"), std::string::npos) << e;
  e = error_of([] { Config::from_json(schema(), json{{"network", 4}}, "a.json"); });
  EXPECT_NE(e.find("network: expected an object"), std::string::npos) << e;
  e = error_of([] { Config::from_json(schema(), json::array(), "a.json"); });
  EXPECT_NE(e.find("top level must be a JSON object"), std::string::npos) << e;
}

TEST(Config, BadSetIsAnError) {
  Config c(schema());
  EXPECT_NE(error_of([&] { c.apply_set("network.radix"); }).find("expected dotted.key=value"), std::string::npos);
  EXPECT_NE(error_of([&] { c.apply_set("network.bogus=1"); }).find("--set: network.bogus: unknown parameter"), std::string::npos);
  EXPECT_NE(error_of([&] { c.apply_set("network.radix=abc"); }).find("expected int"), std::string::npos);
}

// A config may name a base (relative to its own folder): the base's values first, the file's
// over them, and the origin of each value is the file that set it. A bad base, a chain that
// comes back on itself, or an error inside a base, is an error naming the file.
TEST(Config, ABaseFileGivesItsValuesAndTheFileOverridesThem) {
  auto d = test::temp_dir("base");
  std::filesystem::create_directories(d / "machines");
  test::write_text(d / "machines" / "m.json", "{ \"network\": { \"levels\": 3, \"radix\": 4 }, \"workload\": { \"injection_rate\": 0.2 } }");
  test::write_text(d / "e.json", "{ \"base\": \"machines/m.json\", \"network\": { \"levels\": 2 } }");
  const Config c = Config::load_file(schema(), (d / "e.json").string());
  EXPECT_EQ(c.get_int("network.levels"), 2);
  EXPECT_DOUBLE_EQ(c.get_double("workload.injection_rate"), 0.2);
  EXPECT_EQ(c.origin_of("network.levels"), (d / "e.json").string());
  EXPECT_NE(c.origin_of("workload.injection_rate").find("m.json"), std::string::npos);
  EXPECT_EQ(c.origin(), (d / "e.json").string());
  test::write_text(d / "loop1.json", "{ \"base\": \"loop2.json\" }");
  test::write_text(d / "loop2.json", "{ \"base\": \"loop1.json\" }");
  auto e = error_of([&] { Config::load_file(schema(), (d / "loop1.json").string()); });
  EXPECT_NE(e.find("comes back to"), std::string::npos) << e;
  test::write_text(d / "nobase.json", "{ \"base\": 7 }");
  e = error_of([&] { Config::load_file(schema(), (d / "nobase.json").string()); });
  EXPECT_NE(e.find("nobase.json: base: expected the path of another config file"), std::string::npos) << e;
  test::write_text(d / "missing.json", "{ \"base\": \"absent.json\" }");
  e = error_of([&] { Config::load_file(schema(), (d / "missing.json").string()); });
  EXPECT_NE(e.find("absent.json: cannot open file"), std::string::npos) << e;
  test::write_text(d / "badbase.json", "{ \"network\": { \"levls\": 3 } }");
  test::write_text(d / "child.json", "{ \"base\": \"badbase.json\" }");
  e = error_of([&] { Config::load_file(schema(), (d / "child.json").string()); });
  EXPECT_NE(e.find("badbase.json: network.levls: unknown parameter"), std::string::npos) << e;
}

TEST(Config, MalformedJsonReportsLineAndColumn) {
  auto d = test::temp_dir("badjson");
  test::write_text(d / "c.json", "{\n  \"network\": {\n    \"radix\": 4,\n  }\n}\n");
  auto e = error_of([&] { Config::load_file(schema(), (d / "c.json").string()); });
  EXPECT_NE(e.find("c.json:4:"), std::string::npos) << e;
  EXPECT_NE(e.find("malformed JSON"), std::string::npos) << e;
  e = error_of([&] { Config::load_file(schema(), (d / "missing.json").string()); });
  EXPECT_NE(e.find("cannot open"), std::string::npos) << e;
}

// Found by fuzz_config in CI: a number too large for a double makes the JSON library throw
// out_of_range (406), not parse_error, which escaped as an uncaught exception.
TEST(Config, NumberTooLargeForADoubleIsAOneLineErrorWithItsPlace) {
  auto d = test::temp_dir("bignum");
  test::write_text(d / "c.json", "{\n  \"network\": {\"radix\": 32E768}\n}\n");
  auto e = error_of([&] { Config::load_file(schema(), (d / "c.json").string()); });
  EXPECT_NE(e.find("c.json:2:24: malformed JSON: number overflow parsing '32E768'"), std::string::npos) << e;
  Config c(schema());
  e = error_of([&] { c.apply_set("network.radix=1E999"); });
  EXPECT_NE(e.find("--set network.radix=1E999: number overflow parsing '1E999'"), std::string::npos) << e;
}

TEST(Config, InconsistentValuesAreCaughtByComponents) {
  // bitcomp needs a power-of-two node count: 3^2 = 9 nodes is rejected with the key named.
  Config c = Config::from_json(
      schema(), json{{"network", {{"radix", 3}}}, {"workload", {{"pattern", "bitcomp"}}}}, "b.json");
  auto e = error_of([&] { validate_config(c); });
  EXPECT_NE(e.find("b.json: workload.pattern: bitcomp needs a power-of-two"), std::string::npos) << e;
}

TEST(Config, ResolvedHasEveryParameter) {
  Config c(schema());
  auto r = c.resolved();
  size_t n = 0;
  for (const auto& s : schema().all()) {
    const nlohmann::ordered_json* node = &r;
    std::string k = s.key;
    size_t pos;
    while ((pos = k.find('.')) != std::string::npos) {
      ASSERT_TRUE(node->contains(k.substr(0, pos))) << s.key;
      node = &(*node)[k.substr(0, pos)];
      k = k.substr(pos + 1);
    }
    EXPECT_TRUE(node->contains(k)) << s.key;
    ++n;
  }
  EXPECT_GT(n, 20u);
  for (const auto& s : schema().all()) EXPECT_FALSE(s.desc.empty()) << s.key;
}

TEST(Config, EditDistance) {
  EXPECT_EQ(edit_distance("radix", "radx"), 1u);
  EXPECT_EQ(edit_distance("", "abc"), 3u);
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
}

}  // namespace
}  // namespace mbpsim
