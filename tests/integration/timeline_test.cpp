// `mbpsim run --timeline` (models/core/timeline.h; sim/README.md, "Timeline"): the Chrome
// trace-event JSON that Perfetto and chrome://tracing open, checked against the format and
// against what the Figure 2.7 example must show.
#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/test_util.h"

namespace fs = std::filesystem;
using nlohmann::json;
namespace test = mbpsim::test;

namespace {

json run_timeline(const fs::path& d, const std::string& config, const std::string& args, int want_status = 0) {
  const auto r = test::run_cmd(test::mbpsim_bin() + " run " + test::config_path(config) + " --quiet --out " + (d / "o").string() +
                               " --timeline " + (d / "t.json").string() + " " + args);
  EXPECT_EQ(r.status, want_status) << r.output;
  EXPECT_NE(r.output.find("mbpsim: timeline "), std::string::npos) << r.output;
  return json::parse(test::read_text(d / "t.json"));
}

// The format: every event has ph, ts, pid, tid and name; slices have a duration and never
// overlap on one track (so they nest trivially); every flow start has one end and the other
// way round, a step only between them, each inside a slice of its track; every track and
// process is named.
void check_format(const json& t) {
  ASSERT_TRUE(t.contains("traceEvents") && t["traceEvents"].is_array());
  std::map<int, std::vector<std::pair<double, double>>> slices;
  std::map<std::pair<std::string, uint64_t>, std::vector<const json*>> starts, ends, steps;
  std::set<int> named_tids, named_pids, used_tids, used_pids;
  for (const auto& e : t["traceEvents"]) {
    for (const char* k : {"ph", "ts", "pid", "tid", "name"}) ASSERT_TRUE(e.contains(k)) << k << " missing: " << e;
    const std::string ph = e["ph"];
    if (ph == "M") {
      if (e["name"] == "thread_name") named_tids.insert(e["tid"].get<int>());
      if (e["name"] == "process_name") named_pids.insert(e["pid"].get<int>());
      continue;
    }
    used_tids.insert(e["tid"].get<int>());
    used_pids.insert(e["pid"].get<int>());
    ASSERT_GE(e["ts"].get<double>(), 0.0) << e;
    if (ph == "X") {
      ASSERT_TRUE(e.contains("dur")) << e;
      ASSERT_GE(e["dur"].get<double>(), 0.0) << e;
      slices[e["tid"].get<int>()].push_back({e["ts"].get<double>(), e["ts"].get<double>() + e["dur"].get<double>()});
    } else if (ph == "s" || ph == "t" || ph == "f") {
      ASSERT_TRUE(e.contains("id")) << e;
      (ph == "s" ? starts : ph == "t" ? steps : ends)[{e["name"].get<std::string>(), e["id"].get<uint64_t>()}].push_back(&e);
    } else {
      FAIL() << "unexpected phase " << ph;
    }
  }
  for (auto& [tid, v] : slices) {
    std::sort(v.begin(), v.end());
    for (size_t i = 1; i < v.size(); ++i) EXPECT_GE(v[i].first, v[i - 1].second - 1e-9) << "slices overlap on tid " << tid;
  }
  for (const auto& [k, v] : starts) {
    EXPECT_EQ(v.size(), 1u) << k.first << " " << k.second;
    ASSERT_TRUE(ends.count(k)) << "flow " << k.first << " " << k.second << " has no end";
    EXPECT_EQ(ends[k].size(), 1u);
  }
  for (const auto& [k, v] : ends) EXPECT_TRUE(starts.count(k)) << "flow " << k.first << " " << k.second << " has no start";
  for (const auto& [k, v] : steps) {
    ASSERT_TRUE(starts.count(k) && ends.count(k)) << "flow " << k.first << " " << k.second << ": a step without a start and an end";
    for (const json* e : v) {
      EXPECT_GE((*e)["ts"].get<double>(), (*starts[k][0])["ts"].get<double>()) << *e;
      EXPECT_LE((*e)["ts"].get<double>(), (*ends[k][0])["ts"].get<double>()) << *e;
    }
  }
  auto inside = [&](const json& e) {
    for (const auto& [b, end] : slices[e["tid"].get<int>()])
      if (b <= e["ts"].get<double>() + 1e-9 && e["ts"].get<double>() <= end + 1e-9) return true;
    return false;
  };
  for (const auto& m : {starts, steps, ends})
    for (const auto& [k, v] : m)
      for (const json* e : v) EXPECT_TRUE(inside(*e)) << "a flow event outside any slice of its track: " << *e;
  for (int tid : used_tids) EXPECT_TRUE(named_tids.count(tid)) << "tid " << tid << " has no name";
  for (int pid : used_pids) EXPECT_TRUE(named_pids.count(pid)) << "pid " << pid << " has no name";
}

std::map<int, std::string> thread_names(const json& t) {
  std::map<int, std::string> m;
  for (const auto& e : t["traceEvents"])
    if (e["ph"] == "M" && e["name"] == "thread_name") m[e["tid"].get<int>()] = e["args"]["name"].get<std::string>();
  return m;
}

}  // namespace

// Figure 2.7: S (node 4) multicasts to A, B, H, I, K; J (node 10) holds no copy. The timeline
// must show six deliveries (J's included: it drops the copy and answers with a dummy ack), six
// acknowledgements sent, and one combined acknowledgement for all six at S, joined to the
// multicast by a flow arrow.
TEST(Timeline, TheFigure27TimelineShowsItsSixDeliveriesAndOneCombinedAcknowledgement) {
  const auto d = test::temp_dir("timeline_fig27");
  const json t = run_timeline(d, "fig2-7-multicast.json", "");
  check_format(t);
  const auto names = thread_names(t);
  auto module = [&](const json& e) {
    std::string n = names.at(e["tid"].get<int>());
    return n.substr(0, n.find(" ["));
  };
  std::multiset<std::string> delivered_at, acks_sent_at;
  std::vector<json> at_source;
  int flows = 0;
  for (const auto& e : t["traceEvents"]) {
    if (e["ph"] == "s" || e["ph"] == "f") ++flows;
    if (e["ph"] != "X") continue;
    const std::string n = e["name"];
    if (n.rfind("deliver multicast", 0) == 0) delivered_at.insert(module(e));
    if (n.rfind("send ack", 0) == 0) acks_sent_at.insert(module(e));
    if (n.rfind("deliver ack", 0) == 0) at_source.push_back(e);
  }
  const std::multiset<std::string> receivers = {"system.net.ni5", "system.net.ni6", "system.net.ni8",
                                                "system.net.ni9", "system.net.ni10", "system.net.ni11"};
  EXPECT_EQ(delivered_at, receivers);
  EXPECT_EQ(acks_sent_at, receivers);
  ASSERT_EQ(at_source.size(), 1u) << "one combined acknowledgement reaches S";
  EXPECT_EQ(module(at_source[0]), "system.net.ni4");
  EXPECT_EQ(at_source[0]["args"]["ack_count"], 6);
  EXPECT_EQ(at_source[0]["args"]["ack_held"], 5) << "J answered without a copy";
  EXPECT_NE(at_source[0]["name"].get<std::string>().find("complete"), std::string::npos);
  EXPECT_EQ(flows, 2) << "one flow: the multicast to its acknowledgement";
  // The routers combined: the root's combining slice counts all six.
  bool root_combined = false;
  for (const auto& e : t["traceEvents"])
    if (e["ph"] == "X" && e["name"] == "combined ack of txn 1 (6/6)") root_combined = module(e) == "system.net.router_1_1";
  EXPECT_TRUE(root_combined) << "S's leaf router (router_1_1) completes the combination";
}

TEST(Timeline, WindowPrefixAndCapKeepALongRunUsable) {
  const auto d = test::temp_dir("timeline_filters");
  const std::string cfg = "default.json", shorter = " --set workload.measure_cycles=2000 --set workload.warmup_cycles=0";
  const json all = run_timeline(d / "all", cfg, shorter);
  check_format(all);
  const size_t n_all = all["otherData"]["events"].get<size_t>();
  ASSERT_GT(n_all, 1000u);
  // A window: only slices that touch 5-6 us.
  const json win = run_timeline(d / "win", cfg, shorter + " --timeline-window 5:6");
  check_format(win);
  for (const auto& e : win["traceEvents"])
    if (e["ph"] == "X") {
      EXPECT_GE(e["ts"].get<double>() + e["dur"].get<double>(), 5.0 - 1e-9) << e;
      EXPECT_LE(e["ts"].get<double>(), 6.0 + 1e-9) << e;
    }
  EXPECT_LT(win["otherData"]["events"].get<size_t>(), n_all / 10);
  // A prefix: the root router alone.
  const json root = run_timeline(d / "root", cfg, shorter + " --timeline-prefix system.net.router_0_0");
  check_format(root);
  for (const auto& [tid, name] : thread_names(root)) EXPECT_EQ(name.rfind("system.net.router_0_0", 0), 0u) << name;
  // A cap: recording stops, the file says how much was left out, and stays valid.
  const json cap = run_timeline(d / "cap", cfg, shorter + " --timeline-max-events 100");
  check_format(cap);
  EXPECT_EQ(cap["otherData"]["events"], 100);
  EXPECT_GT(cap["otherData"]["left_out"].get<uint64_t>(), 0u);
  // Recording changes nothing that is simulated.
  const auto plain = test::run_config(cfg, shorter);
  ASSERT_EQ(plain.status, 0);
  EXPECT_EQ(test::read_text(plain.out / "stats.json"), test::read_text(d / "all" / "o" / "stats.json"));
}

TEST(Timeline, BadTimelineOptionsAreRefusedInOneLine) {
  const auto d = test::temp_dir("timeline_bad");
  const std::string run = test::mbpsim_bin() + " run " + test::config_path("fig2-7-multicast.json") + " --quiet --out " + (d / "o").string();
  const std::vector<std::pair<std::string, std::string>> cases = {
      {" --timeline-window 1:2", "go with --timeline FILE"},
      {" --timeline " + (d / "t.json").string() + " --timeline-window 5:1", "TO is before FROM"},
      {" --timeline " + (d / "t.json").string() + " --timeline-window 5", "expected FROM:TO"},
      {" --timeline " + (d / "t.json").string() + " --timeline-window x:1", "not a time"},
      {" --timeline " + (d / "t.json").string() + " --timeline-max-events 0", "--timeline-max-events 0: expected a whole number >= 1"},
      // (a negative count used to wrap to 2^64 - 5 and be taken)
      {" --timeline " + (d / "t.json").string() + " --timeline-max-events -5", "--timeline-max-events -5: expected a whole number >= 1"},
      {" --timeline " + (d / "t.json").string() + " --timeline-max-events 1e3", "--timeline-max-events 1e3: expected a whole number >= 1"},
      {" --timeline " + (d / "no" / "such" / "t.json").string(), "cannot write the timeline"},
  };
  for (const auto& [args, want] : cases) {
    const auto r = test::run_cmd(run + args);
    EXPECT_EQ(r.status, 1) << args << ": " << r.output;
    EXPECT_NE(r.output.find(want), std::string::npos) << args << ": " << r.output;
    EXPECT_FALSE(fs::exists(d / "o")) << args << ": a refused run leaves no results";
  }
  EXPECT_FALSE(fs::exists(d / "t.json"));
  const auto v = test::run_cmd(test::mbpsim_bin() + " validate " + test::config_path("fig2-7-multicast.json") + " --timeline x.json");
  EXPECT_EQ(v.status, 1);
  EXPECT_NE(v.output.find("--timeline is for run"), std::string::npos) << v.output;
}

// Beyond the network: the MBP's coherence rounds at their homes, the MBCF system calls on the
// host CPUs, the MBP2's PME handlers and DMA transfers, the socket stacks' system calls, each
// on its module's track.
TEST(Timeline, TheMachinesRecordRoundsSystemCallsHandlersAndTransfers) {
  const auto d = test::temp_dir("timeline_machines");
  struct Want {
    std::string config, args, track_suffix, slice_has;
  };
  for (const Want& w : {Want{"mbp16.json", "--set sharing.refs_per_proc=200", ".mbp", " round "},
                        Want{"mbcf-ss20-100t-half.json", "--set 'workload.sizes=[64]' --set workload.iterations=3", ".cpu", "MBCF_WRITE system call"},
                        Want{"mbp2p-ss20.json", "--set 'workload.sizes=[64]' --set workload.iterations=3", ".nic.pme", "receive"},
                        Want{"mbp2p-ss20.json", "--set 'workload.sizes=[64]' --set workload.iterations=3", "dma", "transfer "},
                        Want{"sockets-ss20-100t-half-udp.json", "--set 'workload.sizes=[64]' --set workload.iterations=3", ".cpu", "sendto system call"},
                        Want{"sockets-ss20-100t-half-tcp.json", "--set 'workload.sizes=[64]' --set workload.iterations=3", ".cpu", "recv system call"},
                        Want{"sockets-ss20-100t-half-tcp.json", "--set 'workload.sizes=[64]' --set workload.iterations=3", ".cpu", "ipintr: tcp_input"},
                        Want{"sockets-ss20-100t-half-udp.json", "--set 'workload.sizes=[64]' --set workload.iterations=3", ".cpu", "ipintr: udp_input"}}) {
    const auto dir = d / (std::to_string(std::hash<std::string>()(w.config + w.track_suffix + w.slice_has)));
    const json t = run_timeline(dir, w.config, w.args);
    check_format(t);
    const auto names = thread_names(t);
    int found = 0;
    for (const auto& e : t["traceEvents"]) {
      if (e["ph"] != "X") continue;
      const std::string track = names.at(e["tid"].get<int>()), name = e["name"];
      if (track.find(w.track_suffix) != std::string::npos && name.find(w.slice_has) != std::string::npos) {
        ++found;
        EXPECT_GT(e["dur"].get<double>(), 0.0) << w.config << ": " << e;
      }
    }
    EXPECT_GT(found, 0) << w.config << ": no '" << w.slice_has << "' slice on a track with '" << w.track_suffix << "'";
  }
}

// Request to reply: an MBP coherence request leaves from its processor's track, passes the
// home MBP's service of it and ends with the answer served back at the requester; an MBCF
// command with a status reply leaves from the requester's system call, passes the receiver's
// routine and ends with the reply's routine back at the requester; a command without a reply
// ends at the receiver. Every frame is on the Ethernet's wire tracks.
TEST(Timeline, RequestsAreJoinedToTheirRepliesAndFramesAreOnTheWire) {
  const auto d = test::temp_dir("timeline_flows");
  struct Point {
    std::string track, name;
  };
  // Each flow's points in time order: (phase, track, slice name it is bound to).
  auto flows_of = [](const json& t, const std::string& flow) {
    const auto names = thread_names(t);
    std::map<int, std::vector<std::pair<double, const json*>>> slices;
    for (const auto& e : t["traceEvents"])
      if (e["ph"] == "X") slices[e["tid"].get<int>()].push_back({e["ts"].get<double>(), &e});
    std::map<uint64_t, std::vector<std::tuple<double, int, std::string, Point>>> pts;
    for (const auto& e : t["traceEvents"]) {
      if (e["ph"] == "X" || e["ph"] == "M" || e["name"] != flow) continue;
      std::string within;
      for (const auto& [ts, s] : slices[e["tid"].get<int>()])
        if (ts <= e["ts"].get<double>() + 1e-9 && e["ts"].get<double>() <= ts + (*s)["dur"].get<double>() + 1e-9) within = (*s)["name"];
      std::string track = names.at(e["tid"].get<int>());
      const std::string ph = e["ph"];
      pts[e["id"].get<uint64_t>()].push_back({e["ts"].get<double>(), ph == "s" ? 0 : ph == "t" ? 1 : 2, ph, Point{track.substr(0, track.find(" [")), within}});
    }
    std::map<uint64_t, std::vector<std::pair<std::string, Point>>> out;
    for (auto& [id, v] : pts) {
      std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return std::tie(std::get<0>(a), std::get<1>(a)) < std::tie(std::get<0>(b), std::get<1>(b)); });
      for (const auto& [ts, order, ph, pt] : v) out[id].push_back({ph, pt});
    }
    return out;
  };
  {
    const json t = run_timeline(d / "mbp", "mbp16.json", "--set sharing.refs_per_proc=300");
    check_format(t);
    const auto flows = flows_of(t, "request to its answer");
    ASSERT_GT(flows.size(), 10u);
    for (const auto& [id, pts] : flows) {
      ASSERT_EQ(pts.size(), 3u) << id;
      EXPECT_EQ(pts[0].first, "s");
      EXPECT_EQ(pts[1].first, "t");
      EXPECT_EQ(pts[2].first, "f");
      EXPECT_EQ(pts[0].second.track, pts[2].second.track) << "the answer ends where the request began";
      EXPECT_NE(pts[1].second.track, pts[0].second.track);
      EXPECT_NE(pts[1].second.track.find(".mbp"), std::string::npos) << pts[1].second.track;
      const std::string req = pts[1].second.name.substr(0, pts[1].second.name.find(' '));
      EXPECT_TRUE(req == "GetS" || req == "GetX" || req == "ReadH" || req == "WriteH" || req == "Atomic" || req == "PutX" || req == "SetProto")
          << pts[1].second.name;
      EXPECT_NE(pts[2].second.name.find("block "), std::string::npos) << pts[2].second.name;
    }
  }
  {
    // Round trips of MBCF_WRITE with a status reply, then one-way MBCF_WRITEs (no reply).
    auto mbcf_writes = [&](const std::string& kind) {
      const json t = run_timeline(d / kind, "mbcf-ss20-100t-half.json",
                                  "--set workload.kind=" + kind + " --set 'workload.commands=[\"write\"]' --set 'workload.sizes=[64]' --set workload.iterations=3");
      check_format(t);
      return t;
    };
    const json rtt = mbcf_writes("rtt");
    const auto flows = flows_of(rtt, "MBCF request to its reply");
    ASSERT_EQ(flows.size(), 5u) << "two unmeasured round trips and three measured";
    for (const auto& [id, pts] : flows) {
      ASSERT_EQ(pts.size(), 3u) << id;
      EXPECT_EQ(pts[0].second.track, "system.host0.cpu");
      EXPECT_EQ(pts[0].second.name, "MBCF_WRITE system call");
      EXPECT_EQ(pts[1].second.track, "system.host1.cpu");
      EXPECT_EQ(pts[1].second.name, "MBCF_WRITE from n0");
      EXPECT_EQ(pts[2].second.track, "system.host0.cpu");
      EXPECT_EQ(pts[2].first, "f");
    }
    const auto f1 = flows_of(mbcf_writes("oneway"), "MBCF request to its reply");
    ASSERT_EQ(f1.size(), 10u) << "five round trips of two one-way writes";
    for (const auto& [id, pts] : f1) {
      ASSERT_EQ(pts.size(), 2u) << id;
      EXPECT_NE(pts[0].second.track, pts[1].second.track);
    }
    // The wire: one slice per frame on each station's cable (the 100 Mb/s half-duplex hub's
    // medium here), each as long as the frame's bits.
    const auto names = thread_names(rtt);
    int frames = 0;
    for (const auto& e : rtt["traceEvents"])
      if (e["ph"] == "X" && names.at(e["tid"].get<int>()).rfind("system.ether.", 0) == 0 && e["name"].get<std::string>().rfind("frame n", 0) == 0) {
        ++frames;
        EXPECT_GE(e["dur"].get<double>(), 72 * 8 / 100.0 - 1e-6) << "a minimal frame is 72 bytes with its preamble: " << e;
      }
    EXPECT_GE(frames, 10) << "every request and reply crossed the wire";
  }
}

// The screenshot script (scripts/timeline-screenshot.py) refuses, before starting a browser,
// what is not a timeline and a picture that is not a PNG, in one line with status 1. (Its
// picture itself needs Chromium, which the test machine does not install.)
TEST(Timeline, TheScreenshotScriptRefusesWhatIsNotATimeline) {
  const auto d = test::temp_dir("timeline_screenshot");
  const std::string script = std::string("/usr/bin/python3 ") + MBPSIM_SOURCE_DIR + "/scripts/timeline-screenshot.py ";
  test::write_text(d / "list.json", "[1, 2]");
  test::write_text(d / "broken.json", "{\"traceEvents\": [");
  run_timeline(d / "run", "fig2-7-multicast.json", "");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {(d / "none.json").string() + " " + (d / "a.png").string(), "none.json: not a timeline"},
      {(d / "list.json").string() + " " + (d / "a.png").string(), "list.json: not a timeline: no traceEvents list"},
      {(d / "broken.json").string() + " " + (d / "a.png").string(), "broken.json: not a timeline"},
      {(d / "run" / "t.json").string() + " " + (d / "a.jpg").string(), "a.jpg: the screenshot is a .png"},
  };
  for (const auto& [args, want] : cases) {
    const auto r = test::run_cmd(script + args);
    EXPECT_EQ(r.status, 1) << args << ": " << r.output;
    EXPECT_NE(r.output.find("timeline-screenshot: "), std::string::npos) << r.output;
    EXPECT_NE(r.output.find(want), std::string::npos) << args << ": " << r.output;
  }
  EXPECT_FALSE(fs::exists(d / "a.png"));
}
