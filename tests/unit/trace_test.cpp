// The trace format: lossless round trips between encodings, every malformed-input case, and
// the synchronisation rules `trace validate` enforces.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>

#include <unistd.h>

#include "models/core/error.h"
#include "models/core/rng.h"
#include "tests/test_util.h"
#include "workloads/trace/trace.h"

namespace mbpsim::trace {
namespace {

namespace fs = std::filesystem;

std::string fresh_dir(const std::string& name) { return test::temp_dir("trace_" + name).string(); }

// A text trace from one string per thread, in a fresh folder.
std::string text_trace(const std::string& name, const std::vector<std::string>& threads) {
  return test::write_text_trace(fresh_dir(name), threads);
}

// Expects a UserError whose message contains every one of `parts`.
template <class F>
void expect_error(F f, std::vector<std::string> parts) {
  try {
    f();
    ADD_FAILURE() << "no error; expected one mentioning '" << parts[0] << "'";
  } catch (const UserError& e) {
    const std::string m = e.what();
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
    for (const auto& p : parts) EXPECT_NE(m.find(p), std::string::npos) << "'" << p << "' not in: " << m;
  }
}

std::vector<Record> read_all(const std::string& dir, uint32_t t) {
  const Meta m = read_meta(dir);
  auto r = open_stream(dir, m, t);
  std::vector<Record> v;
  Record x;
  while (r->next(x)) v.push_back(x);
  return v;
}

Record random_record(Rng& g, uint64_t& addr) {
  Record r;
  r.kind = static_cast<Kind>(1 + g.below(kKinds - 1));
  // Mostly small, sometimes up to the largest a trace may hold (varints of up to 6 bytes).
  const uint64_t big = g.below(8) == 0 ? trace::kMaxGap : g.below(trace::kMaxGap + 1);
  r.gap = g.below(4) == 0 ? big : g.below(100);
  const bool mem = is_memory(r.kind) || r.kind == Kind::Alloc;
  if (mem || r.kind == Kind::Barrier || r.kind == Kind::Acquire || r.kind == Kind::Release || r.kind == Kind::Post ||
      r.kind == Kind::Wait || r.kind == Kind::CondWait || r.kind == Kind::Signal || r.kind == Kind::Broadcast) {
    // Mostly near the last address (as real traces are), sometimes far, both directions.
    addr = g.below(8) == 0 ? g.next() >> g.below(64) : addr + g.below(256) - 128;
    r.addr = addr;
  }
  if (mem) r.size = 1 + g.below(is_memory(r.kind) ? kMaxAccessBytes : 1u << 30);
  if (is_memory(r.kind) && r.addr + r.size < r.addr) r.addr = addr = 0x1000;
  if (r.kind == Kind::Rmw) r.op = static_cast<RmwOp>(g.below(4));
  if (r.kind == Kind::Create || r.kind == Kind::Join || r.kind == Kind::Dep) r.thread = static_cast<uint32_t>(g.next());
  if (r.kind == Kind::Barrier) r.count = 1 + static_cast<uint32_t>(g.below(1000));
  if (r.kind == Kind::Barrier || r.kind == Kind::Acquire || r.kind == Kind::Post || r.kind == Kind::Wait ||
      r.kind == Kind::CondWait || r.kind == Kind::Signal || r.kind == Kind::Broadcast || r.kind == Kind::Dep)
    r.seq = g.below(2) ? g.below(10) : g.next();
  return r;
}

TEST(TraceFormat, RoundTripThroughEveryEncodingIsLossless) {
  const uint64_t seed = 20261122;
  std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
  Rng g(seed, "trace.roundtrip");
  const std::string a = fresh_dir("rt_text");
  Meta m;
  m.program = "roundtrip";
  m.args = "-n 3";
  m.threads = 3;
  m.encoding = Encoding::Text;
  m.capture = "unit test";
  m.allocations = {{0x40000000, 65536}, {0x40010000, 12}};
  std::vector<std::vector<Record>> want(3);
  write_meta(a, m);
  for (uint32_t t = 0; t < 3; ++t) {
    auto w = create_stream(a, m, t);
    uint64_t addr = 0x40000000;
    for (int i = 0; i < 3000; ++i) {
      want[t].push_back(random_record(g, addr));
      w->put(want[t].back());
    }
    w->close();
  }
  const std::string b = fresh_dir("rt_bin") + "/t", c = fresh_dir("rt_gz") + "/t", d = fresh_dir("rt_back") + "/t";
  convert(a, b, Encoding::Binary);
  convert(b, c, Encoding::BinaryGzip);
  convert(c, d, Encoding::Text);
  for (const std::string& dir : {a, b, c, d}) {
    const Meta got = read_meta(dir);
    EXPECT_EQ(got.program, "roundtrip");
    EXPECT_EQ(got.args, "-n 3");
    EXPECT_EQ(got.capture, "unit test");
    ASSERT_EQ(got.allocations.size(), 2u);
    EXPECT_EQ(got.allocations[1].addr, 0x40010000u);
    EXPECT_EQ(got.allocations[1].size, 12u);
    for (uint32_t t = 0; t < 3; ++t) {
      const auto v = read_all(dir, t);
      ASSERT_EQ(v.size(), want[t].size()) << dir;
      for (size_t i = 0; i < v.size(); ++i) ASSERT_EQ(v[i], want[t][i]) << dir << " thread " << t << " record " << i << " seed " << seed;
    }
  }
  // Text back from binary is byte-identical to the original text.
  for (uint32_t t = 0; t < 3; ++t) EXPECT_EQ(test::read_text(stream_path(a, t, Encoding::Text)), test::read_text(stream_path(d, t, Encoding::Text)));
  // The binary form is compact, and gzip makes it smaller still.
  const auto size = [](const std::string& p) { return fs::file_size(p); };
  EXPECT_LT(size(stream_path(b, 0, Encoding::Binary)) * 2, size(stream_path(a, 0, Encoding::Text)));
  EXPECT_LT(size(stream_path(c, 0, Encoding::BinaryGzip)), size(stream_path(b, 0, Encoding::Binary)));
}

TEST(TraceFormat, TextIsReadable) {
  const std::string d = text_trace("readable", {"# a comment line\n0 begin\n3 load 0x1000 8   # trailing comment\n\n"
                                                "1 rmw 0x2000 4 cas\n0 barrier 0x3000 1 0\n2 end\n"});
  const auto v = read_all(d, 0);
  ASSERT_EQ(v.size(), 5u);
  EXPECT_EQ(v[1].kind, Kind::Load);
  EXPECT_EQ(v[1].gap, 3u);
  EXPECT_EQ(v[1].addr, 0x1000u);
  EXPECT_EQ(v[1].size, 8u);
  EXPECT_EQ(v[2].op, RmwOp::Cas);
  EXPECT_EQ(v[3].count, 1u);
  const Summary s = summarize(d);
  EXPECT_EQ(s.by_kind[static_cast<int>(Kind::Load)], 1u);
  EXPECT_EQ(s.lines_touched, 2u);
  EXPECT_EQ(s.sync_objects, 1u);
  EXPECT_EQ(validate(d).records, 5u);
}

// ---- malformed text streams: each names the file, the thread and the record

struct TextCase {
  const char* name;
  std::string body;    // thread 0's stream, header included, verbatim
  std::string expect;  // part of the message
};

class MalformedText : public ::testing::TestWithParam<TextCase> {};

TEST_P(MalformedText, IsRejectedWithTheFileThreadAndRecord) {
  const TextCase& c = GetParam();
  const std::string d = fresh_dir(std::string("mt_") + c.name);
  test::write_text(d + "/trace.meta", "mbpsim-trace 1\nthreads 1\nencoding text\n");
  test::write_text(d + "/thread-0.txt", c.body);
  expect_error([&] { read_all(d, 0); }, {"thread-0.txt", "thread 0", "record", c.expect});
  expect_error([&] { validate(d); }, {"thread-0.txt", c.expect});
  expect_error([&] { convert(d, d + "_out", Encoding::Binary); }, {"thread-0.txt", c.expect});
  EXPECT_FALSE(fs::exists(d + "_out")) << "partial output left behind";
  EXPECT_FALSE(fs::exists(d + "_out.partial")) << "partial output left behind";
}

const std::string kH = "mbpsim-trace-stream 1 thread 0\n";
INSTANTIATE_TEST_SUITE_P(
    Cases, MalformedText,
    ::testing::Values(TextCase{"empty", "", "empty stream"}, TextCase{"wrong_magic", "hello 1 thread 0\n", "not a text trace stream"},
                      TextCase{"wrong_version", "mbpsim-trace-stream 9 thread 0\n0 begin\nend-of-stream 1\n", "version 9"},
                      TextCase{"wrong_thread", "mbpsim-trace-stream 1 thread 4\n", "names thread 4"},
                      TextCase{"unknown_tag", kH + "0 begin\n0 frobnicate 0x10\nend-of-stream 2\n", "unknown record tag 'frobnicate'"},
                      TextCase{"missing_field", kH + "0 begin\n0 load 0x10\nend-of-stream 2\n", "lacks its size"},
                      TextCase{"extra_field", kH + "0 begin\n0 load 0x10 4 9\nend-of-stream 2\n", "extra fields"},
                      TextCase{"bad_number", kH + "0 begin\n0 load 0xZZ 4\nend-of-stream 2\n", "bad address"},
                      TextCase{"negative", kH + "-1 begin\nend-of-stream 1\n", "bad gap"},
                      TextCase{"bad_op", kH + "0 begin\n0 rmw 0x10 4 mul\nend-of-stream 2\n", "unknown atomic operation"},
                      TextCase{"zero_size", kH + "0 begin\n0 store 0x10 0\nend-of-stream 2\n", "store of 0 bytes"},
                      TextCase{"huge_size", kH + "0 begin\n0 store 0x10 70000\nend-of-stream 2\n", "store of 70000 bytes"},
                      TextCase{"truncated", kH + "0 begin\n0 load 0x10 4\n", "no end-of-stream"},
                      TextCase{"count_mismatch", kH + "0 begin\nend-of-stream 7\n", "says 7 records"},
                      TextCase{"after_end", kH + "0 begin\nend-of-stream 1\n0 end\n", "data after end-of-stream"}),
    [](const auto& i) { return std::string(i.param.name); });

// ---- malformed binary streams

std::vector<uint8_t> valid_binary(const std::string& dir) {
  Meta m;
  m.threads = 1;
  m.encoding = Encoding::Binary;
  write_meta(dir, m);
  auto w = create_stream(dir, m, 0);
  Record r;
  r.kind = Kind::Begin;
  w->put(r);
  r.kind = Kind::Load;
  r.addr = 0x1000;
  r.size = 8;
  w->put(r);
  r.kind = Kind::End;
  w->put(r);
  w->close();
  const std::string s = test::read_text(stream_path(dir, 0, Encoding::Binary));
  return std::vector<uint8_t>(s.begin(), s.end());
}

struct BinCase {
  const char* name;
  std::function<void(std::vector<uint8_t>&)> damage;
  std::string expect;
};

class MalformedBinary : public ::testing::TestWithParam<BinCase> {};

TEST_P(MalformedBinary, IsRejectedWithTheFileThreadAndRecord) {
  const BinCase& c = GetParam();
  const std::string d = fresh_dir(std::string("mb_") + c.name);
  auto bytes = valid_binary(d);
  ASSERT_EQ(read_all(d, 0).size(), 3u);
  c.damage(bytes);
  test::write_text(stream_path(d, 0, Encoding::Binary), std::string(bytes.begin(), bytes.end()));
  expect_error([&] { read_all(d, 0); }, {"thread-0.bin", "thread 0", "record", c.expect});
  expect_error([&] { summarize(d); }, {"thread-0.bin", c.expect});
}

// Layout of the valid stream: "MBPTS" 1 0 | 6 0 | 1 0 <zigzag 0x1000 = 0x80 0x40> 8 | 7 0 | 0 3
INSTANTIATE_TEST_SUITE_P(
    Cases, MalformedBinary,
    ::testing::Values(BinCase{"bad_magic", [](auto& b) { b[0] = 'X'; }, "bad magic"},
                      BinCase{"wrong_version", [](auto& b) { b[5] = 2; }, "version 2"},
                      BinCase{"wrong_thread", [](auto& b) { b[6] = 5; }, "names thread 5"},
                      BinCase{"unknown_tag", [](auto& b) { b[9] = 99; }, "unknown record tag 99"},
                      BinCase{"truncated_record", [](auto& b) { b.resize(12); }, "truncated record"},
                      BinCase{"no_end_marker", [](auto& b) { b.resize(b.size() - 2); }, "no end-of-stream marker"},
                      BinCase{"count_mismatch", [](auto& b) { b.back() = 9; }, "says 9 records"},
                      BinCase{"trailing_data", [](auto& b) { b.push_back(1); }, "after the end marker"},
                      BinCase{"varint_overflow",
                              [](auto& b) {
                                std::vector<uint8_t> v(b.begin(), b.begin() + 9);  // header + begin
                                v.push_back(1);                                    // load
                                for (int i = 0; i < 11; ++i) v.push_back(0xff);  // gap never ends
                                b = v;
                              },
                              "corrupt gap"},
                      BinCase{"zero_size", [](auto& b) { b[13] = 0; }, "load of 0 bytes"}),
    [](const auto& i) { return std::string(i.param.name); });

TEST(TraceFormat, CorruptGzipIsRejected) {
  const std::string d = fresh_dir("gz");
  Meta m;
  m.encoding = Encoding::BinaryGzip;
  write_meta(d, m);
  auto w = create_stream(d, m, 0);
  Record r;
  r.kind = Kind::Begin;
  for (int i = 0; i < 5000; ++i) {
    r.kind = Kind::Store;
    r.addr = 0x1000 + 8 * i;
    r.size = 8;
    w->put(r);
  }
  w->close();
  std::string s = test::read_text(stream_path(d, 0, Encoding::BinaryGzip));
  const std::string good = s;
  EXPECT_EQ(read_all(d, 0).size(), 5000u);
  // Bytes after the gzip data that start no further member (zlib's gzread ignored them).
  test::write_text(stream_path(d, 0, Encoding::BinaryGzip), good + "garbage");
  expect_error([&] { read_all(d, 0); }, {"thread-0.bin.gz: thread 0, record 5000",
                                         "7 bytes after the end of the gzip data (at byte " + std::to_string(good.size()) + " of the file)"});
  test::write_text(stream_path(d, 0, Encoding::BinaryGzip), good + "\x1f");
  expect_error([&] { read_all(d, 0); }, {"1 bytes after the end of the gzip data"});
  s[s.size() / 2] ^= 0x55;
  test::write_text(stream_path(d, 0, Encoding::BinaryGzip), s);
  expect_error([&] { read_all(d, 0); }, {"thread-0.bin.gz"});
  s = good.substr(0, good.size() / 2);  // a truncated gzip file
  test::write_text(stream_path(d, 0, Encoding::BinaryGzip), s);
  expect_error([&] { read_all(d, 0); }, {"thread-0.bin.gz: thread 0, record ", "truncated"});
}

TEST(TraceFormat, BadMetadataIsRejectedWithTheLine) {
  auto meta = [](const std::string& name, const std::string& text) {
    const std::string d = fresh_dir(name);
    test::write_text(d + "/trace.meta", text);
    return d;
  };
  expect_error([&] { read_meta(fresh_dir("nometa")); }, {"trace.meta", "cannot open"});
  expect_error([&] { read_meta(meta("v2", "mbpsim-trace 2\nthreads 1\nencoding text\n")); }, {"trace.meta", "line 1", "version 2"});
  expect_error([&] { read_meta(meta("notrace", "hello\n")); }, {"trace.meta", "line 1", "not an mbpsim trace"});
  expect_error([&] { read_meta(meta("unknownkey", "mbpsim-trace 1\nthreads 1\ncolour blue\n")); }, {"line 3", "unknown key 'colour'"});
  expect_error([&] { read_meta(meta("badthreads", "mbpsim-trace 1\nthreads 0\nencoding text\n")); }, {"line 2", "threads must be"});
  expect_error([&] { read_meta(meta("badenc", "mbpsim-trace 1\nthreads 1\nencoding xml\n")); }, {"line 3", "encoding must be"});
  expect_error([&] { read_meta(meta("noenc", "mbpsim-trace 1\nthreads 1\n")); }, {"no 'encoding' line"});
  expect_error([&] { read_meta(meta("badalloc", "mbpsim-trace 1\nthreads 1\nencoding text\nalloc 0x10\n")); }, {"line 4", "alloc"});
  expect_error([&] { read_meta(meta("badinstr", "mbpsim-trace 1\nthreads 1\nencoding text\ninstructions -5\n")); },
               {"line 4", "instructions must be a count, not '-5'"});
  expect_error([&] { read_meta(meta("badinstr2", "mbpsim-trace 1\nthreads 1\nencoding text\ninstructions 12x\n")); },
               {"line 4", "instructions must be a count"});
  // The capture's instruction count is read and written back unchanged.
  const std::string ok = meta("instr", "mbpsim-trace 1\nthreads 1\nencoding text\ninstructions 54976066\n");
  Meta m = read_meta(ok);
  EXPECT_EQ(m.instructions, 54976066u);
  const std::string copy = fresh_dir("instr_copy");
  write_meta(copy, m);
  EXPECT_EQ(read_meta(copy).instructions, 54976066u);
  EXPECT_EQ(read_meta(meta("noinstr", "mbpsim-trace 1\nthreads 1\nencoding text\n")).instructions, 0u);
  const std::string d = meta("nostream", "mbpsim-trace 1\nthreads 2\nencoding binary\n");
  expect_error([&] { validate(d); }, {"thread-0.bin", "cannot open"});
}

// ---- synchronisation rules

TEST(TraceValidate, AWellFormedProgramPasses) {
  // Thread 0 creates 1 and 2; all meet at a barrier twice; locks in the captured order; a
  // semaphore and a condition hand-off; thread 2 waits for thread 0's store (a dep on its
  // record #5); thread 0 joins both.
  const std::string d = text_trace(
      "good", {"0 begin\n0 alloc 0x40000000 4096\n0 create 1\n0 create 2\n5 acquire 0x40000000 1\n1 store 0x40000100 4\n"
               "0 release 0x40000000\n0 barrier 0x40000040 3 0\n0 post 0x40000080 0\n0 barrier 0x40000040 3 1\n"
               "0 signal 0x400000c0 0\n0 join 1\n0 join 2\n0 end\n",
               "0 begin\n0 acquire 0x40000000 0\n3 load 0x40000100 4\n0 release 0x40000000\n0 barrier 0x40000040 3 0\n"
               "0 wait 0x40000080 0\n0 barrier 0x40000040 3 1\n0 end\n",
               "0 begin\n0 barrier 0x40000040 3 0\n0 dep 0 5\n0 acquire 0x40000000 2\n0 release 0x40000000\n0 barrier 0x40000040 3 1\n"
               "0 cwait 0x400000c0 0\n0 end\n"});
  const auto r = validate(d);
  EXPECT_EQ(r.records, 30u);
  EXPECT_EQ(r.sync_events, 28u);
}

TEST(TraceValidate, LoadsOfSynchronisationWordsAndStoresNextToThemPass) {
  // Reading a lock word changes nothing; stores one byte below a lock and just past a
  // barrier's two words are outside the objects.
  const std::string d = text_trace("sync_neighbours", {"0 begin\n0 acquire 0x40 0\n0 load 0x40 8\n0 release 0x40\n0 store 0x3f 1\n"
                                                       "0 barrier 0x80 1 0\n0 store 0x90 8\n0 store 0x48 8\n0 end\n"});
  EXPECT_EQ(validate(d).records, 9u);
}

struct SyncCase {
  const char* name;
  std::vector<std::string> threads;
  std::string expect;
};
class BadSync : public ::testing::TestWithParam<SyncCase> {};
TEST_P(BadSync, IsRejected) {
  const SyncCase& c = GetParam();
  const std::string d = text_trace(std::string("bs_") + c.name, c.threads);
  expect_error([&] { validate(d); }, {c.expect});
}
INSTANTIATE_TEST_SUITE_P(
    Cases, BadSync,
    ::testing::Values(
        SyncCase{"no_begin", {"0 load 0x10 4\n0 end\n"}, "must be 'begin'"},
        SyncCase{"no_end", {"0 begin\n"}, "without an 'end'"},
        SyncCase{"after_end", {"0 begin\n0 end\n0 fence\n"}, "after 'end'"},
        SyncCase{"release_unheld", {"0 begin\n0 release 0x40\n0 end\n"}, "does not hold"},
        SyncCase{"end_holding", {"0 begin\n0 acquire 0x40 0\n0 end\n"}, "holding lock 0x40"},
        SyncCase{"order_gap", {"0 begin\n0 acquire 0x40 1\n0 release 0x40\n0 end\n"}, "next acquisition is #0"},
        SyncCase{"order_reused",
                 {"0 begin\n0 acquire 0x40 0\n0 release 0x40\n0 acquire 0x40 0\n0 release 0x40\n0 end\n"}, "already happened"},
        // Thread 1 holds the lock's acquisition #0 but waits at a barrier thread 0 reaches
        // only after acquisition #1: the captured order cannot be replayed.
        SyncCase{"order_deadlock",
                 {"0 begin\n0 create 1\n0 acquire 0x40 1\n0 release 0x40\n0 barrier 0x80 2 0\n0 join 1\n0 end\n",
                  "0 begin\n0 barrier 0x80 2 0\n0 acquire 0x40 0\n0 release 0x40\n0 end\n"},
                 "can never proceed"},
        SyncCase{"barrier_short",
                 {"0 begin\n0 create 1\n0 create 2\n0 barrier 0x80 3 0\n0 end\n", "0 begin\n0 barrier 0x80 3 0\n0 end\n",
                  "0 begin\n0 end\n"},
                 "never gets all its participants"},
        SyncCase{"barrier_mismatch",
                 {"0 begin\n0 create 1\n0 create 2\n0 barrier 0x80 2 0\n0 end\n", "0 begin\n0 barrier 0x80 3 0\n0 end\n",
                  "0 begin\n0 end\n"},
                 "this episode has 2 participants"},
        SyncCase{"barrier_too_many", {"0 begin\n0 barrier 0x80 5 0\n0 end\n"}, "5 participants but 1 threads"},
        SyncCase{"join_never_created", {"0 begin\n0 join 1\n0 end\n", "0 begin\n0 end\n"}, "never created"},
        SyncCase{"never_created", {"0 begin\n0 end\n", "0 begin\n0 end\n"}, "thread 1 is never created"},
        SyncCase{"double_create",
                 {"0 begin\n0 create 1\n0 create 1\n0 end\n", "0 begin\n0 end\n"}, "already created"},
        SyncCase{"create_out_of_range", {"0 begin\n0 create 7\n0 end\n"}, "only 1 threads"},
        SyncCase{"post_order", {"0 begin\n0 post 0x90 1\n0 end\n"}, "expected #0"},
        SyncCase{"wait_twice",
                 {"0 begin\n0 post 0x90 0\n0 wait 0x90 0\n0 wait 0x90 0\n0 end\n"}, "already consumed"},
        SyncCase{"wait_forever", {"0 begin\n0 wait 0x90 0\n0 end\n"}, "can never proceed"},
        SyncCase{"cwait_forever", {"0 begin\n0 cwait 0x90 0\n0 end\n"}, "can never proceed"},
        SyncCase{"roi_twice", {"0 begin\n0 roi_begin\n0 roi_begin\n0 end\n"}, "begun twice"},
        // A dep names another thread's record (counted without that thread's deps).
        SyncCase{"dep_on_itself", {"0 begin\n0 dep 0 0\n0 end\n"}, "record 1 (dep thread 0 record #0): a thread cannot wait for its own record"},
        SyncCase{"dep_out_of_range", {"0 begin\n0 dep 3 0\n0 end\n"}, "only 1 threads"},
        SyncCase{"dep_past_the_end",
                 {"0 begin\n0 create 1\n0 end\n", "0 begin\n0 dep 0 5\n0 end\n"},
                 "thread 0 ended after 3 records (deps not counted); there is no record #5"},
        SyncCase{"dep_cycle",
                 {"0 begin\n0 create 1\n0 dep 1 2\n0 store 0x10 8\n0 join 1\n0 end\n", "0 begin\n0 dep 0 2\n0 store 0x20 8\n0 end\n"},
                 "never passes its record #2"},
        // The replay keeps each object's state in its own memory: program stores there would
        // corrupt it (a lock word overwritten breaks mutual exclusion), so they are rejected,
        // also when the store comes before any record of the object in its thread.
        SyncCase{"store_into_lock",
                 {"0 begin\n0 acquire 0x40 0\n0 release 0x40\n0 store 0x44 4\n0 end\n"}, "record 3 (store 0x44 4): writes into the lock at 0x40"},
        SyncCase{"store_before_lock_record",
                 {"0 begin\n0 create 1\n0 store 0x40 8\n0 join 1\n0 end\n", "0 begin\n0 acquire 0x40 0\n0 release 0x40\n0 end\n"},
                 "writes into the lock at 0x40"},
        SyncCase{"rmw_into_barrier_episode",
                 {"0 begin\n0 barrier 0x80 1 0\n0 rmw 0x88 8 add\n0 end\n"}, "writes into the barrier at 0x80"},
        SyncCase{"copy_over_semaphore",
                 {"0 begin\n0 post 0x90 0\n0 store 0x0 256\n0 wait 0x90 0\n0 end\n"}, "writes into the semaphore at 0x90"},
        SyncCase{"two_kinds_one_word",
                 {"0 begin\n0 acquire 0x40 0\n0 release 0x40\n0 post 0x44 0\n0 end\n"}, "the word at 0x40 is also a lock"},
        SyncCase{"barrier_overlaps_lock",
                 {"0 begin\n0 barrier 0x80 1 0\n0 acquire 0x88 0\n0 release 0x88\n0 end\n"},
                 "the barrier at 0x80 and the lock at 0x88 overlap"}),
    [](const auto& i) { return std::string(i.param.name); });

}  // namespace
}  // namespace mbpsim::trace
