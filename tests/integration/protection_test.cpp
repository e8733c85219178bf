// The protection and adversarial tester (workloads/testers/protection_tester.h) on MBCF/Ether,
// the MBP2 and the MBP2 with authenticated, encrypted frames: every attack of the catalogue is
// refused, answered as the thesis says and counted, and changes nothing it may not; what does
// not apply to a system is skipped with its reason, never silently.
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/test_util.h"

namespace mbpsim {
namespace {

using test::run_cmd;

nlohmann::json run_protection(const std::string& config, const std::string& name, const std::string& sets = "") {
  const auto r = test::run_config(config, sets);
  EXPECT_EQ(r.status, 0) << name << ": " << r.command << "\n" << r.output;
  return r.stats.is_null() ? nullptr : r.stats;
}

std::map<std::string, nlohmann::json> by_name(const nlohmann::json& summary) {
  std::map<std::string, nlohmann::json> m;
  for (const auto& r : summary["results"]) m[r["name"]] = r;
  return m;
}

void expect_all_pass_but(const nlohmann::json& s, size_t attacks, const std::set<std::string>& skipped) {
  ASSERT_FALSE(s.is_null());
  const auto& sum = s["summary"];
  EXPECT_EQ(sum["attacks"], attacks);
  EXPECT_EQ(sum["failed"], 0) << sum.dump(1);
  EXPECT_EQ(sum["skipped"], skipped.size());
  EXPECT_EQ(sum["passed"], attacks - skipped.size());
  for (const auto& r : sum["results"]) {
    const std::string name = r["name"];
    if (skipped.count(name)) {
      EXPECT_EQ(r["outcome"], "skipped") << name;
      EXPECT_FALSE(r["detail"].get<std::string>().empty()) << name << ": a skip gives its reason";
    } else {
      EXPECT_EQ(r["outcome"], "pass") << name << ": " << r.dump();
    }
  }
}

const std::set<std::string> kReplaysNeedingAuth = {"replay_of_a_no_flow_control_packet", "replay_after_the_sender_restarted",
                                                   "replay_after_the_receiver_restarted"};

TEST(Protection, MbcfEtherRefusesAnswersAndCountsEveryAttack) {
  auto s = run_protection("protection-ether.json", "ether");
  std::set<std::string> skipped = kReplaysNeedingAuth;
  skipped.insert({"neighbours_doorbell_alias", "unassigned_doorbell_alias"});
  expect_all_pass_but(s, 48, skipped);
  auto r = by_name(s["summary"]);
  // How each kind of attack is answered (4.2, 4.4, 6.1).
  EXPECT_EQ(r["forged_key"]["answer"], "violation");
  EXPECT_EQ(r["forged_key_no_reply"]["answer"], "no_answer");
  EXPECT_EQ(r["ltask_not_in_table"]["answer"], "refused_by_sender");
  EXPECT_EQ(r["read_reply_too_big"]["answer"], "refused_by_sender");
  EXPECT_EQ(r["wire_read_reply_too_big"]["answer"], "violation");  // the target does not trust the sender
  EXPECT_EQ(r["wire_truncated_subcommand"]["answer"], "dropped");
  EXPECT_EQ(r["replay_within_a_connection"]["answer"], "dropped");
  EXPECT_EQ(r["last_byte_of_window"]["answer"], "succeeded");
  // Each rejection was counted where it happened.
  const auto& mbcf = s["stats"]["system"]["mbcf"];
  EXPECT_GE(mbcf["violations"].get<int>(), 20);
  EXPECT_EQ(mbcf["malformed"], 8);
  EXPECT_EQ(mbcf["requests_refused"], 8);  // the 8 refusals of the catalogue (3 kernel-only commands in one)
  EXPECT_EQ(mbcf["duplicates"], 1);
}

TEST(Protection, Mbp2RefusesAForeignOrUnassignedDoorbellAlias) {
  auto s = run_protection("protection-mbp2.json", "mbp2");
  expect_all_pass_but(s, 48, kReplaysNeedingAuth);
  // Counted by the attacker's card's driver: each store faulted in the attacker's MMU (the OS
  // maps a task its own alias page alone) and none reached the card's ULI.
  EXPECT_EQ(s["stats"]["system"]["host2"]["nic"]["rejected_requests"], 2);
  EXPECT_EQ(s["stats"]["system"]["host2"]["nic"]["uli"]["rejected"], 0);
}

// With authentication every replay is refused: within a connection and of a no-flow-control
// packet by the anti-replay window, after a restart because the restart made new keys.
TEST(Protection, AuthenticatedMbp2RefusesEveryReplayAlsoAcrossRestarts) {
  auto s = run_protection("protection-mbp2-secure.json", "secure");
  expect_all_pass_but(s, 48, {});
  const auto& n1 = s["stats"]["system"]["host1"]["nic"]["crypto"];
  EXPECT_EQ(n1["rejected_replay"], 2);
  EXPECT_EQ(n1["rejected_auth"], 2);
  EXPECT_EQ(n1["rejected_plain"], 9);  // every frame put on the wire in the clear but the giant,
  EXPECT_EQ(s["stats"]["system"]["host1"]["nic"]["mac"]["rx_oversized"], 1);  // which the MAC drops
  EXPECT_EQ(n1["rekeys"], 1);            // the client came back with a new public value
  EXPECT_EQ(s["stats"]["system"]["host0"]["nic"]["crypto"]["rekeys"], 1);  // ... and so did the server
}

TEST(Protection, AnAttackCanBeRunAloneAndBadSelectionsExitOne) {
  auto s = run_protection("protection-ether.json", "one", "--set 'protection.attacks=[\"crossing_into_read_only\"]'");
  ASSERT_FALSE(s.is_null());
  EXPECT_EQ(s["summary"]["attacks"], 1);
  EXPECT_EQ(s["summary"]["passed"], 1);
  const auto d = test::temp_dir("protection_bad");
  for (const auto& [set, where] : std::vector<std::pair<std::string, std::string>>{
           {"'protection.attacks=[\"no_such_attack\"]'", "protection.attacks[0]"},
           {"'protection.attacks=\"forged_key\"'", "protection.attacks"},
           {"mbcf.nodes=2", "mbcf.nodes"}}) {
    auto r = run_cmd(test::mbpsim_bin() + " run " + test::config_path("protection-ether.json") + " --set " + set + " --out " + (d / "o").string());
    EXPECT_EQ(r.status, 1) << set << ": " << r.output;
    EXPECT_NE(r.output.find(where), std::string::npos) << r.output;
    EXPECT_EQ(test::count_lines(r.output), 1) << r.output;
    EXPECT_FALSE(std::filesystem::exists(d / "o")) << set;
  }
}

}  // namespace
}  // namespace mbpsim
