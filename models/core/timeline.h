// A transaction timeline: what each module did when, as the Chrome trace-event format that
// Perfetto (ui.perfetto.dev) and chrome://tracing open (`mbpsim run --timeline FILE.json`;
// sim/README.md, "Timeline"). Off unless a run asks for it: a model asks `timeline()` and
// records nothing when it is null, so a run without it pays one test of a pointer.
//
// Tracks are modules, named by their hierarchical names (system.net.router_1_2); a process in
// the viewer is the subsystem (system.net). Slices on one track never overlap: a slice that
// would overlap an earlier one goes to the module's next lane ("system.net.router_1_2 [2]").
// Flow arrows join a slice where something starts (a multicast leaving its source, a request
// leaving its requester) through the slices it passes (the home serving the request) to the
// slice where it ends (the combined acknowledgement, the answer back at the requester). A flow
// point names a module and a time; it is bound, when the file is written, to the slice of that
// module that encloses the time. A flow with a point no recorded slice encloses (outside the
// window, over the cap), or without both a start and an end, is left out whole.
#pragma once
#include <cstdint>
#include <limits>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace mbpsim {

class Timeline {
 public:
  struct Options {
    uint64_t from_ps = 0, to_ps = std::numeric_limits<uint64_t>::max();  // the window
    std::vector<std::string> prefixes;  // record only tracks whose name starts with one (empty: all)
    uint64_t max_events = 1000000;      // then recording stops; the file says how many were left out
  };
  explicit Timeline(Options o);

  // The track of module `name`, or -1 when the prefix filter leaves it out.
  int track(const std::string& name);
  // A slice [begin, end] (ps) on a track; args: a JSON object's text ("" for none).
  void slice(int track, const std::string& name, uint64_t begin_ps, uint64_t end_ps, const std::string& args = "");
  // A point of flow `flow`/`id` on a track at `at_ps`: 's' its start, 't' a step, 'f' its end.
  void flow(int track, const std::string& flow, uint64_t id, char ph, uint64_t at_ps);
  // A slice, and the start (or end) of flow `id` at `at_ps` within it.
  void slice_with_flow(int track, const std::string& name, uint64_t begin_ps, uint64_t end_ps, const std::string& args,
                       const std::string& flow, uint64_t id, bool start, uint64_t at_ps);
  // A fresh flow id (ids of the flows the models start themselves).
  uint64_t next_flow_id() { return ++flow_ids_; }

  uint64_t events() const { return events_.size(); }
  uint64_t left_out() const { return left_out_; }
  // Writes the trace-event JSON to `path` (written beside it, renamed into place); throws
  // UserError when it cannot be written.
  void write(const std::string& path) const;

 private:
  struct Event {
    char ph;  // X (slice), s / t / f (flow start / step / end)
    int tid;  // a slice's lane; a flow point's track
    uint64_t ts_ps, dur_ps;
    std::string name, args;
    uint64_t flow_id;
  };
  struct Track {
    std::string name;
    int pid;
    std::vector<int> lanes;              // tids, in lane order
    std::vector<uint64_t> lane_end_ps;   // the end of each lane's last slice
  };
  int lane_for(int track, uint64_t begin_ps, uint64_t end_ps);
  bool room();

  Options o_;
  std::vector<Track> tracks_;
  std::vector<std::string> tid_names_;  // by tid
  std::vector<int> tid_pid_, tid_sort_;  // a module's lanes sort together, modules in order of first use
  std::vector<int> tid_track_;          // the track of each lane
  std::vector<std::string> pid_names_;
  std::unordered_map<std::string, int> by_name_, pid_by_name_;
  std::vector<Event> events_;
  uint64_t left_out_ = 0;
  uint64_t flow_ids_ = 1ull << 32;  // (below: the network's multicast transactions)
};

// The run's timeline, or null (sim/runner.cpp sets it for a run with --timeline).
Timeline* timeline();
void set_timeline(Timeline* t);

}  // namespace mbpsim
