// `mbpsim trace info|validate|convert`: the trace tools (traces/FORMAT.md).
#include <cstdio>
#include <string>
#include <vector>

#include "models/core/error.h"
#include "sim/cli.h"
#include "workloads/trace/trace.h"

namespace mbpsim {

namespace {
const char* kTraceUsage =
    "usage: mbpsim trace info TRACE_DIR\n"
    "       mbpsim trace validate TRACE_DIR\n"
    "       mbpsim trace convert IN_DIR OUT_DIR --to text|binary|binary-gzip [--force]\n";

int info(const std::string& dir) {
  const trace::Meta m = trace::read_meta(dir);
  const trace::Summary s = trace::summarize(dir);
  std::printf("trace          %s\n", dir.c_str());
  std::printf("program        %s%s%s\n", m.program.c_str(), m.args.empty() ? "" : " ", m.args.c_str());
  std::printf("threads        %u\n", s.threads);
  std::printf("encoding       %s\n", trace::name(m.encoding));
  std::printf("gap unit       %s (total %llu)\n", m.gap_unit.c_str(), static_cast<unsigned long long>(s.gap_total));
  if (!m.capture.empty()) std::printf("capture        %s\n", m.capture.c_str());
  if (m.instructions) {
    // What the trace represents: each gap, plus one instruction per memory record (a
    // read-modify-write of memory gives a load and a store record for one instruction).
    const uint64_t refs = s.by_kind[1] + s.by_kind[2] + s.by_kind[3];
    std::printf("instructions   %llu counted at capture; the records represent %llu (gaps + references)\n",
                static_cast<unsigned long long>(m.instructions), static_cast<unsigned long long>(s.gap_total + refs));
  }
  std::printf("records        %llu\n", static_cast<unsigned long long>(s.records));
  const uint64_t refs = s.by_kind[1] + s.by_kind[2] + s.by_kind[3];
  std::printf("references     %llu: %llu loads, %llu stores, %llu atomic read-modify-writes\n", static_cast<unsigned long long>(refs),
              static_cast<unsigned long long>(s.by_kind[1]), static_cast<unsigned long long>(s.by_kind[2]),
              static_cast<unsigned long long>(s.by_kind[3]));
  std::printf("bytes          %llu loaded, %llu stored\n", static_cast<unsigned long long>(s.bytes_loaded),
              static_cast<unsigned long long>(s.bytes_stored));
  std::printf("footprint      %llu lines of 64 B (%.1f KiB), %llu pages of 4 KiB\n", static_cast<unsigned long long>(s.lines_touched),
              s.lines_touched * 64 / 1024.0, static_cast<unsigned long long>(s.pages_touched));
  std::printf("shared allocs  %zu (%llu bytes)\n", m.allocations.size(), static_cast<unsigned long long>(s.allocated_bytes));
  std::printf("sync objects   %llu\n", static_cast<unsigned long long>(s.sync_objects));
  std::printf("sync events   ");
  for (int k = 4; k < trace::kKinds; ++k)
    if (s.by_kind[k]) std::printf(" %s %llu", trace::name(static_cast<trace::Kind>(k)), static_cast<unsigned long long>(s.by_kind[k]));
  std::printf("\n");
  return 0;
}
}  // namespace

int cmd_trace(const std::vector<std::string>& args) {
  if (!args.empty() && (args[0] == "--help" || args[0] == "-h" || (args.size() > 1 && (args[1] == "--help" || args[1] == "-h")))) {
    std::fputs(kTraceUsage, stdout);
    std::fputs("\n  info      what a trace holds: threads, records by kind, footprint, synchronisation\n"
               "  validate  checks every record and the synchronisation (locks, barriers, deps) as replay would\n"
               "  convert   rewrites a trace in another encoding (traces/FORMAT.md)\n", stdout);
    return 0;
  }
  if (args.empty()) throw UserError(std::string("command line: trace needs a subcommand\n") + kTraceUsage);
  const std::string sub = args[0];
  if (sub == "info") {
    if (args.size() != 2) throw UserError(std::string("command line: trace info takes one TRACE_DIR\n") + kTraceUsage);
    return info(args[1]);
  }
  if (sub == "validate") {
    if (args.size() != 2) throw UserError(std::string("command line: trace validate takes one TRACE_DIR\n") + kTraceUsage);
    const auto r = trace::validate(args[1]);
    std::printf("%s: ok (%llu records, %llu synchronisation events)\n", args[1].c_str(), static_cast<unsigned long long>(r.records),
                static_cast<unsigned long long>(r.sync_events));
    return 0;
  }
  if (sub == "convert") {
    std::vector<std::string> pos;
    std::string to;
    bool force = false;
    for (size_t i = 1; i < args.size(); ++i) {
      if (args[i] == "--force") {
        force = true;
      } else if (args[i] == "--to") {
        if (i + 1 == args.size()) throw UserError("command line: --to needs text, binary or binary-gzip");
        to = args[++i];
      } else if (args[i].rfind("--to=", 0) == 0) {
        to = args[i].substr(5);
      } else {
        pos.push_back(args[i]);
      }
    }
    if (pos.size() != 2) throw UserError(std::string("command line: trace convert takes IN_DIR OUT_DIR\n") + kTraceUsage);
    trace::Encoding e;
    if (to == "text") e = trace::Encoding::Text;
    else if (to == "binary") e = trace::Encoding::Binary;
    else if (to == "binary-gzip") e = trace::Encoding::BinaryGzip;
    else throw UserError("command line: --to must be text, binary or binary-gzip, not '" + to + "'");
    trace::convert(pos[0], pos[1], e, force);
    std::printf("%s -> %s (%s)\n", pos[0].c_str(), pos[1].c_str(), trace::name(e));
    return 0;
  }
  throw UserError("command line: unknown trace subcommand '" + sub + "'\n" + kTraceUsage);
}

}  // namespace mbpsim
