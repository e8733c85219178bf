#include "models/core/timeline.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "models/core/error.h"

namespace mbpsim {

namespace {
Timeline* g_timeline = nullptr;
constexpr int kMaxLanes = 64;
}  // namespace

Timeline* timeline() { return g_timeline; }
void set_timeline(Timeline* t) { g_timeline = t; }

Timeline::Timeline(Options o) : o_(std::move(o)) {}

int Timeline::track(const std::string& name) {
  auto it = by_name_.find(name);
  if (it != by_name_.end()) return it->second;
  bool wanted = o_.prefixes.empty();
  for (const auto& p : o_.prefixes) wanted = wanted || name.compare(0, p.size(), p) == 0;
  if (!wanted) return by_name_[name] = -1;
  // The process: the subsystem, the name's first two parts (system.net, system.mbp).
  const auto d1 = name.find('.');
  const auto d2 = d1 == std::string::npos ? d1 : name.find('.', d1 + 1);
  const std::string proc = name.substr(0, d2);
  auto pit = pid_by_name_.find(proc);
  int pid;
  if (pit == pid_by_name_.end()) {
    pid = static_cast<int>(pid_names_.size()) + 1;
    pid_names_.push_back(proc);
    pid_by_name_[proc] = pid;
  } else {
    pid = pit->second;
  }
  tracks_.push_back(Track{name, pid, {}, {}});
  return by_name_[name] = static_cast<int>(tracks_.size()) - 1;
}

int Timeline::lane_for(int track, uint64_t begin_ps, uint64_t end_ps) {
  Track& t = tracks_[track];
  for (size_t l = 0; l < t.lanes.size(); ++l)
    if (t.lane_end_ps[l] <= begin_ps) {
      t.lane_end_ps[l] = end_ps;
      return t.lanes[l];
    }
  if (t.lanes.size() >= kMaxLanes) return -1;
  const int tid = static_cast<int>(tid_names_.size()) + 1;
  tid_names_.push_back(t.lanes.empty() ? t.name : t.name + " [" + std::to_string(t.lanes.size() + 1) + "]");
  tid_pid_.push_back(t.pid);
  tid_track_.push_back(track);
  tid_sort_.push_back(track * kMaxLanes + static_cast<int>(t.lanes.size()));
  t.lanes.push_back(tid);
  t.lane_end_ps.push_back(end_ps);
  return tid;
}

bool Timeline::room() {
  if (events_.size() < o_.max_events) return true;
  ++left_out_;
  return false;
}

void Timeline::slice(int track, const std::string& name, uint64_t begin_ps, uint64_t end_ps, const std::string& args) {
  if (track < 0 || end_ps < o_.from_ps || begin_ps > o_.to_ps) return;
  if (end_ps < begin_ps) internal_error("timeline: slice " + name + " ends before it begins");
  if (!room()) return;
  const int tid = lane_for(track, begin_ps, end_ps);
  if (tid < 0) {
    ++left_out_;
    return;
  }
  events_.push_back(Event{'X', tid, begin_ps, end_ps - begin_ps, name, args, 0});
}

void Timeline::flow(int track, const std::string& flow, uint64_t id, char ph, uint64_t at_ps) {
  if (track < 0 || at_ps < o_.from_ps || at_ps > o_.to_ps) return;
  if (ph != 's' && ph != 't' && ph != 'f') internal_error("timeline: flow point of phase " + std::string(1, ph));
  if (!room()) return;
  events_.push_back(Event{ph, track, at_ps, 0, flow, "", id});
}

void Timeline::slice_with_flow(int track, const std::string& name, uint64_t begin_ps, uint64_t end_ps, const std::string& args,
                               const std::string& flow_name, uint64_t id, bool start, uint64_t at_ps) {
  slice(track, name, begin_ps, end_ps, args);
  flow(track, flow_name, id, start ? 's' : 'f', at_ps);
}

void Timeline::write(const std::string& path) const {
  // Each flow point is bound to the lane of the slice of its track that encloses it (the
  // latest begun of them); a flow is written when every point was bound and it has a start
  // and an end.
  std::vector<std::vector<std::pair<uint64_t, size_t>>> by_track(tracks_.size());  // (begin, event) per track
  for (size_t i = 0; i < events_.size(); ++i)
    if (events_[i].ph == 'X') by_track[tid_track_[events_[i].tid - 1]].push_back({events_[i].ts_ps, i});
  for (auto& v : by_track) std::sort(v.begin(), v.end());
  std::vector<int> bound(events_.size(), 0);  // a flow point's lane
  std::map<std::pair<std::string, uint64_t>, int> flows;  // bit 1 start, 2 end, 4 a point unbound
  for (size_t i = 0; i < events_.size(); ++i) {
    const Event& e = events_[i];
    if (e.ph == 'X') continue;
    int& f = flows[{e.name, e.flow_id}];
    f |= e.ph == 's' ? 1 : e.ph == 'f' ? 2 : 0;
    const auto& v = by_track[e.tid];
    auto it = std::upper_bound(v.begin(), v.end(), std::make_pair(e.ts_ps, std::numeric_limits<size_t>::max()));
    // (Lanes are few and a lane's slices never overlap: a point that far back is unbound.)
    for (int back = 0; back < 4 * kMaxLanes && it != v.begin(); ++back) {
      --it;
      const Event& sl = events_[it->second];
      if (sl.ts_ps + sl.dur_ps >= e.ts_ps) {
        bound[i] = sl.tid;
        break;
      }
    }
    if (!bound[i]) f |= 4;
  }
  const std::string tmp = path + ".partial";
  {
    std::ofstream f(tmp, std::ios::binary);
    if (!f) throw UserError(path + ": cannot write the timeline");
    f << "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"generator\":\"mbpsim\",\"events\":" << events_.size()
      << ",\"left_out\":" << left_out_ << "},\n\"traceEvents\":[\n";
    bool first = true;
    auto put = [&](const nlohmann::json& j) {
      f << (first ? "" : ",\n") << j.dump();
      first = false;
    };
    for (size_t p = 0; p < pid_names_.size(); ++p)
      put({{"ph", "M"}, {"name", "process_name"}, {"pid", p + 1}, {"tid", 0}, {"ts", 0}, {"args", {{"name", pid_names_[p]}}}});
    for (size_t t = 0; t < tid_names_.size(); ++t) {
      put({{"ph", "M"}, {"name", "thread_name"}, {"pid", tid_pid_[t]}, {"tid", t + 1}, {"ts", 0}, {"args", {{"name", tid_names_[t]}}}});
      put({{"ph", "M"}, {"name", "thread_sort_index"}, {"pid", tid_pid_[t]}, {"tid", t + 1}, {"ts", 0}, {"args", {{"sort_index", tid_sort_[t]}}}});
    }
    for (const Event& e : events_) {
      nlohmann::json j;
      j["ph"] = std::string(1, e.ph);
      j["name"] = e.name;
      if (e.ph == 'X') {
        j["pid"] = tid_pid_[e.tid - 1];
        j["tid"] = e.tid;
      }
      j["ts"] = static_cast<double>(e.ts_ps) / 1e6;  // microseconds
      if (e.ph == 'X') {
        j["dur"] = static_cast<double>(e.dur_ps) / 1e6;
        if (!e.args.empty()) j["args"] = nlohmann::json::parse(e.args);
      } else {
        if (flows.at({e.name, e.flow_id}) != 3) continue;
        j["tid"] = bound[&e - events_.data()];
        j["pid"] = tid_pid_[j["tid"].get<int>() - 1];
        j["cat"] = "flow";
        j["id"] = e.flow_id;
        if (e.ph == 'f') j["bp"] = "e";  // bound to the enclosing slice
      }
      put(j);
    }
    f << "\n]}\n";
    f.flush();
    if (!f) throw UserError(path + ": cannot write the timeline");
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) throw UserError(path + ": cannot write the timeline: " + ec.message());
}

}  // namespace mbpsim
