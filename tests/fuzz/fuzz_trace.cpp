// libFuzzer harness: the trace readers and the replay checker (workloads/trace/, format in
// traces/FORMAT.md). An input is a whole trace folder in one file: trace.meta, then each
// thread's stream, separated by lines "%%%%" (the stream's file name follows the encoding the
// metadata names; binary streams may hold any bytes, the newline before "%%%%" is not part of
// a stream).
//  - Bad input must end in a UserError naming the file and the place; anything else (another
//    exception, a crash, a sanitizer report, a hang) is a bug.
//  - A trace that validates must convert losslessly: the text and binary copies summarise to
//    the same counts as the original.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "models/core/error.h"
#include "workloads/trace/trace.h"

namespace fs = std::filesystem;
using namespace mbpsim;

namespace {

void write(const fs::path& p, const uint8_t* b, size_t n) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(b), static_cast<std::streamsize>(n));
}

bool same(const trace::Summary& a, const trace::Summary& b) {
  return a.threads == b.threads && a.records == b.records &&
         std::memcmp(a.by_kind, b.by_kind, sizeof a.by_kind) == 0 && a.bytes_loaded == b.bytes_loaded &&
         a.bytes_stored == b.bytes_stored && a.gap_total == b.gap_total && a.lines_touched == b.lines_touched &&
         a.pages_touched == b.pages_touched && a.sync_objects == b.sync_objects &&
         a.allocated_bytes == b.allocated_bytes;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const fs::path root = fs::temp_directory_path() / ("mbpsim_fuzz_trace_" + std::to_string(::getpid()));
  // The scratch folder goes when the process ends (it used to stay, one per run).
  static const struct RemoveAtExit {
    ~RemoveAtExit() {
      std::error_code ec;
      fs::remove_all(root, ec);
    }
  } cleanup;
  fs::remove_all(root);
  const fs::path dir = root / "in";
  fs::create_directories(dir);
  // Split at "\n%%%%\n" (a text part then lacks its last newline, which the readers allow).
  std::vector<std::pair<size_t, size_t>> parts;
  static const char kSep[] = "\n%%%%\n";
  const size_t sep = sizeof kSep - 1;
  size_t b = 0;
  for (size_t i = 0; i + sep <= size; ++i)
    if (std::memcmp(data + i, kSep, sep) == 0) {
      parts.emplace_back(b, i - b);
      b = i + sep;
      i = b - 1;
    }
  parts.emplace_back(b, size - b);
  write(trace::meta_path(dir.string()), data + parts[0].first, parts[0].second);
  try {
    const trace::Meta m = trace::read_meta(dir.string());
    for (size_t t = 1; t < parts.size() && t <= 64; ++t)
      write(trace::stream_path(dir.string(), static_cast<uint32_t>(t - 1), m.encoding), data + parts[t].first,
            parts[t].second);
    const trace::Summary s = trace::summarize(dir.string());
    trace::validate(dir.string());
    for (trace::Encoding e : {trace::Encoding::Text, trace::Encoding::Binary}) {
      const fs::path out = root / trace::name(e);
      trace::convert(dir.string(), out.string(), e, /*replace=*/true);
      if (!same(trace::summarize(out.string()), s)) {
        std::fprintf(stderr, "fuzz_trace: the %s copy summarises differently\n", trace::name(e));
        std::abort();
      }
    }
  } catch (const UserError&) {
  }
  return 0;
}
