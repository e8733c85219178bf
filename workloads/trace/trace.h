// Memory-and-synchronisation traces of shared-memory programs (traces/FORMAT.md): one
// metadata file plus one record stream per thread, in a text form and a compact binary form
// (variable-length integers, per-thread address deltas, optionally gzip through zlib). Readers
// stream: memory use does not grow with the trace length. Every defect in the input is a
// UserError naming the file, the thread and the record index.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace mbpsim::trace {

constexpr int kVersion = 1;
constexpr uint64_t kMaxAccessBytes = 65536;  // one memory record; the capture tool splits larger ranges

enum class Kind : uint8_t {
  // memory
  Load = 1,
  Store = 2,
  Rmw = 3,  // atomic read-modify-write
  // threads
  Create = 4,
  Join = 5,
  Begin = 6,
  End = 7,
  // synchronisation
  Barrier = 8,
  Acquire = 9,
  Release = 10,
  Post = 11,       // semaphore
  Wait = 12,       // semaphore
  CondWait = 13,
  Signal = 14,
  Broadcast = 15,
  Fence = 16,
  RoiBegin = 17,
  RoiEnd = 18,
  Alloc = 19,  // shared allocation
  Dep = 20,    // waits until another thread has passed one of its records (a hand-off)
};
constexpr uint8_t kKinds = 21;  // tags 1..20; 0 ends a binary stream
const char* name(Kind k);
bool is_memory(Kind k);

// Where a replay keeps a synchronisation object's state in simulated memory (replay.cpp): the
// 8-byte word holding the object's address; a barrier uses that word (arrival counter) and the
// next (episode). A program store there would corrupt the lock, barrier, semaphore or
// condition variable, so `validate` rejects traces that make one.
inline uint64_t sync_word(uint64_t addr) { return addr & ~7ull; }
inline uint64_t sync_state_bytes(Kind k) { return k == Kind::Barrier ? 16 : 8; }
// The kind of object a synchronisation record names, or nullptr for records that name none.
const char* sync_object(Kind k);

enum class RmwOp : uint8_t { Add = 0, Swap = 1, Cas = 2, Other = 3 };
const char* name(RmwOp o);

// One record. `gap` is the compute time since the thread's previous record, in the trace's
// gap unit. Which other fields a kind uses (FORMAT.md has the table):
//   Load/Store/Rmw: addr, size (Rmw also op)      Alloc: addr, size
//   Create/Join: thread (the child)               Barrier: addr, count (participants), seq (episode)
//   Acquire: addr, seq (the lock's acquisition order, 0, 1, ...)     Release: addr
//   Post/Signal/Broadcast: addr, seq (their order on the object)
//   Wait: addr, seq (the post it consumes)        CondWait: addr, seq (the signal or broadcast that woke it)
//   Dep: thread, seq (waits until thread `thread` has passed its record number `seq`, its
//        records counted from 0 without its own deps: data it wrote that this thread reads)
// The longest gap a record may carry: 2^40 gap units (about 18 minutes of a 1 GHz processor).
// A reader refuses a larger one, which no capture makes and a replay could not add up.
constexpr uint64_t kMaxGap = uint64_t{1} << 40;

struct Record {
  Kind kind = Kind::Fence;
  RmwOp op = RmwOp::Add;
  uint32_t thread = 0;
  uint32_t count = 0;
  uint64_t gap = 0;  // at most kMaxGap
  uint64_t addr = 0;
  uint64_t size = 0;
  uint64_t seq = 0;
  bool operator==(const Record& o) const {
    return kind == o.kind && op == o.op && thread == o.thread && count == o.count && gap == o.gap && addr == o.addr &&
           size == o.size && seq == o.seq;
  }
};

enum class Encoding : uint8_t { Text, Binary, BinaryGzip };
const char* name(Encoding e);
std::string hex(uint64_t v);  // "0x..." as the text encoding writes addresses

struct Allocation {
  uint64_t addr = 0, size = 0;
};

struct Meta {
  std::string program = "unknown";
  std::string args;
  uint32_t threads = 1;
  Encoding encoding = Encoding::Binary;
  std::string gap_unit = "instructions";
  std::string capture;  // how it was made (tool, settings), free text
  // The program's instructions the capture counted, all threads (0: not said). With the
  // records' gaps it checks that a trace represents all of them (traces/FORMAT.md).
  uint64_t instructions = 0;
  std::vector<Allocation> allocations;
};

// The files of a trace: DIR/trace.meta and DIR/thread-N.{txt,bin,bin.gz}.
std::string meta_path(const std::string& dir);
std::string stream_path(const std::string& dir, uint32_t thread, Encoding e);

Meta read_meta(const std::string& dir);
// Host memory a reader of stream file `path` holds at most: its record buffer, its buffer of
// raw bytes as far as the file fills it, and zlib's inflate state for a gzip file (0 if the
// file cannot be read: opening it reports that).
uint64_t reader_bytes(const std::string& path);
void write_meta(const std::string& dir, const Meta& m);

class StreamReader {
 public:
  virtual ~StreamReader() = default;
  // The next record; false at the end of the stream (after its end marker was checked).
  virtual bool next(Record& r) = 0;
  uint64_t index() const { return index_; }  // records read so far
  const std::string& file() const { return file_; }
  uint32_t thread() const { return thread_; }

 protected:
  [[noreturn]] void fail(const std::string& what) const;
  // Field ranges common to both encodings (inline: it runs per record).
  void check(const Record& r) const {
    const bool mem = r.kind == Kind::Load || r.kind == Kind::Store || r.kind == Kind::Rmw;
    if (mem ? r.size - 1 >= kMaxAccessBytes || r.addr + r.size < r.addr
            : (r.kind == Kind::Alloc && r.size == 0) || (r.kind == Kind::Barrier && r.count == 0))
      bad_record(r);
  }
  [[noreturn, gnu::cold]] void bad_record(const Record& r) const;  // says which range it broke
  std::string file_;
  uint32_t thread_ = 0;
  uint64_t index_ = 0;
  uint64_t line_ = 0;  // text streams: the line read last (0: not a text stream)
};

class StreamWriter {
 public:
  virtual ~StreamWriter() = default;
  virtual void put(const Record& r) = 0;
  virtual void close() = 0;  // writes the end marker; the file is complete only after it
};

std::unique_ptr<StreamReader> open_stream(const std::string& dir, const Meta& m, uint32_t thread);
std::unique_ptr<StreamWriter> create_stream(const std::string& dir, const Meta& m, uint32_t thread);

// Copies a trace into another encoding (lossless; the metadata travels with it).
// An existing, non-empty `out_dir` is replaced only with `replace` (`trace convert --force`).
void convert(const std::string& in_dir, const std::string& out_dir, Encoding to, bool replace = false);

struct Summary {
  uint32_t threads = 0;
  uint64_t records = 0;
  uint64_t by_kind[kKinds] = {};
  uint64_t bytes_loaded = 0, bytes_stored = 0;
  uint64_t gap_total = 0;
  uint64_t lines_touched = 0;  // distinct 64-byte lines referenced
  uint64_t pages_touched = 0;  // distinct 4 KiB pages referenced
  uint64_t sync_objects = 0;   // distinct lock, barrier, semaphore and condition addresses
  uint64_t allocated_bytes = 0;
};
Summary summarize(const std::string& dir);

// Checks that the trace can be replayed: it runs the threads' synchronisation abstractly
// (locks in their captured order, barrier episodes, create/join, semaphores, conditions) and
// throws a UserError for the first record that breaks the rules or can never proceed.
struct ValidateResult {
  uint64_t records = 0, sync_events = 0;
};
ValidateResult validate(const std::string& dir);

}  // namespace mbpsim::trace
