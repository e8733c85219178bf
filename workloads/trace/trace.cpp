#include "workloads/trace/trace.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <unordered_set>

#include "models/core/error.h"
#include "models/core/footprint.h"

namespace mbpsim::trace {

namespace {

const char* const kNames[kKinds] = {"?",       "load",    "store",   "rmw",       "create",   "join",   "begin",
                                    "end",     "barrier", "acquire", "release",   "post",     "wait",   "cwait",
                                    "signal",  "broadcast", "fence", "roi_begin", "roi_end", "alloc", "dep"};
const char* const kOps[4] = {"add", "swap", "cas", "other"};
constexpr char kStreamMagic[] = "mbpsim-trace-stream";
constexpr uint8_t kBinMagic[5] = {'M', 'B', 'P', 'T', 'S'};

// Which fields a kind carries (the same in both encodings).
struct Fields {
  bool addr, size, op, thread, count, seq;
};
constexpr Fields fields_of_kind(Kind k) {
  switch (k) {
    case Kind::Load:
    case Kind::Store:
    case Kind::Alloc: return {true, true, false, false, false, false};
    case Kind::Rmw: return {true, true, true, false, false, false};
    case Kind::Create:
    case Kind::Join: return {false, false, false, true, false, false};
    case Kind::Dep: return {false, false, false, true, false, true};
    case Kind::Begin:
    case Kind::End:
    case Kind::Fence:
    case Kind::RoiBegin:
    case Kind::RoiEnd: return {false, false, false, false, false, false};
    case Kind::Barrier: return {true, false, false, false, true, true};
    case Kind::Release: return {true, false, false, false, false, false};
    case Kind::Acquire:
    case Kind::Post:
    case Kind::Wait:
    case Kind::CondWait:
    case Kind::Signal:
    case Kind::Broadcast: return {true, false, false, false, false, true};
  }
  return {};
}
// The same as a table: the readers look it up once per record.
struct FieldTable {
  Fields f[kKinds];
  constexpr FieldTable() : f{} {
    for (int k = 0; k < kKinds; ++k) f[k] = fields_of_kind(static_cast<Kind>(k));
  }
};
constexpr FieldTable kFields;
Fields fields_of(Kind k) { return kFields.f[static_cast<int>(k)]; }

// Buffered reads of a stream file. A gzip file (RFC 1952) is inflated with zlib, its members
// one after another (`cat a.gz b.gz` is one stream); any other file is read as it is. Bytes
// after the last member that do not start another, and a member cut short, are errors, given
// to `fail` (the reader's: it names the thread and record), which must throw.
class Source {
 public:
  static constexpr size_t kInBuffer = 1 << 18;  // raw bytes read at a time
  using Fail = std::function<void(const std::string&)>;
  // The raw buffer for a file of `size` bytes: the file and a byte more (its end is seen in one
  // read), at most kInBuffer.
  static size_t buffer_for(uint64_t size) { return static_cast<size_t>(std::min<uint64_t>(size + 1, kInBuffer)); }
  Source(const std::string& path, Fail fail) : path_(path), fail_(std::move(fail)) {
    f_ = std::fopen(path.c_str(), "rb");
    if (!f_) throw UserError(path + ": cannot open (" + std::strerror(errno) + ")");
    std::error_code ec;
    const uint64_t size = std::filesystem::file_size(path, ec);
    cap_ = buffer_for(ec ? kInBuffer : size);
    in_.reset(new uint8_t[cap_]);  // not zeroed: only what the file fills becomes resident
    read_more();
    gz_ = have_ >= 2 && in_[0] == 0x1f && in_[1] == 0x8b;
    if (gz_) {
      if (inflateInit2(&z_, 16 + MAX_WBITS) != Z_OK) throw std::bad_alloc();
      z_open_ = true;
    }
  }
  ~Source() {
    if (z_open_) inflateEnd(&z_);
    if (f_) std::fclose(f_);
  }
  Source(const Source&) = delete;
  Source& operator=(const Source&) = delete;
  // The bytes decoded and not yet used, contiguous: a reader may use them and skip() past.
  size_t ready() const { return len_ - pos_; }
  const uint8_t* cur() const { return buf_ + pos_; }
  void skip(size_t n) { pos_ += n; }
  // false at the end of the data
  bool get(uint8_t& b) {
    if (pos_ == len_ && !fill()) return false;
    b = buf_[pos_++];
    return true;
  }
  bool getline(std::string& line) {
    line.clear();
    uint8_t b;
    bool any = false;
    while (get(b)) {
      any = true;
      if (b == '\n') return true;
      line.push_back(static_cast<char>(b));
    }
    return any;
  }

 private:
  // Appends raw bytes after those not yet used; false at the end of the file.
  bool read_more() {
    if (off_ && have_) std::memmove(in_.get(), in_.get() + off_, have_);
    off_ = 0;
    const size_t n = std::fread(in_.get() + have_, 1, cap_ - have_, f_);
    if (std::ferror(f_)) throw UserError(path_ + ": read failed (" + std::strerror(errno) + ")");
    have_ += n;
    return n > 0;
  }
  void use(size_t n) {
    off_ += n;
    have_ -= n;
    used_ += n;
  }
  bool fill() {
    pos_ = len_ = 0;
    if (!gz_) {
      if (have_ == 0 && !read_more()) return false;
      len_ = std::min(have_, sizeof buf_);
      std::memcpy(buf_, in_.get() + off_, len_);
      use(len_);
      return true;
    }
    while (len_ == 0) {
      if (member_ended_) {  // the end of the file, or the next member
        if (have_ < 2) read_more();
        if (have_ == 0) return false;
        if (have_ < 2 || in_[off_] != 0x1f || in_[off_ + 1] != 0x8b) {
          const uint64_t at = used_;
          while (read_more()) {}
          fail_(std::to_string(have_) + " bytes after the end of the gzip data (at byte " + std::to_string(at) + " of the file)");
        }
        inflateReset(&z_);
        member_ended_ = false;
      }
      if (have_ == 0 && !read_more()) fail_("truncated: the gzip data ends before its end");
      z_.next_in = in_.get() + off_;
      z_.avail_in = static_cast<uInt>(have_);
      z_.next_out = buf_;
      z_.avail_out = sizeof buf_;
      const int r = inflate(&z_, Z_NO_FLUSH);
      const size_t took = have_ - z_.avail_in;
      use(took);
      len_ = sizeof buf_ - z_.avail_out;
      if (r == Z_STREAM_END) member_ended_ = true;
      else if (r != Z_OK && r != Z_BUF_ERROR) fail_(std::string("corrupt compressed data (") + (z_.msg ? z_.msg : "inflate error") + ")");
      else if (took == 0 && len_ == 0 && !read_more()) fail_("truncated: the gzip data ends before its end");
    }
    return true;
  }
  std::string path_;
  Fail fail_;
  std::FILE* f_ = nullptr;
  std::unique_ptr<uint8_t[]> in_;
  size_t cap_ = 0, off_ = 0, have_ = 0;  // in_[off_, off_ + have_) not yet used
  uint64_t used_ = 0;          // raw bytes of the file used so far
  bool gz_ = false, z_open_ = false, member_ended_ = false;
  z_stream z_{};
  uint8_t buf_[1 << 16];
  size_t pos_ = 0, len_ = 0;
};

class Sink {
 public:
  Sink(const std::string& path, bool gzip) : path_(path) {
    f_ = gzopen(path.c_str(), gzip ? "wb6" : "wbT");
    if (!f_) throw UserError(path + ": cannot create (" + std::strerror(errno) + ")");
    gzbuffer(f_, 1 << 18);
  }
  ~Sink() {
    if (f_) gzclose(f_);
  }
  Sink(const Sink&) = delete;
  Sink& operator=(const Sink&) = delete;
  void put(const void* p, size_t n) {
    if (n && gzwrite(f_, p, static_cast<unsigned>(n)) != static_cast<int>(n)) throw UserError(path_ + ": write failed");
  }
  void close() {
    if (f_ && gzclose(f_) != Z_OK) {
      f_ = nullptr;
      throw UserError(path_ + ": write failed");
    }
    f_ = nullptr;
  }

 private:
  std::string path_;
  gzFile f_ = nullptr;
};


// ------------------------------------------------------------------ text

// What both readers say of a gap above kMaxGap.
std::string gap_too_large(uint64_t gap) {
  return "gap " + std::to_string(gap) + " is above the largest a trace may hold (2^40)";
}

class TextReader : public StreamReader {
 public:
  TextReader(const std::string& path, uint32_t thread) : src_(path, [this](const std::string& w) { fail(w); }) {
    file_ = path;
    thread_ = thread;
    std::string l;
    if (!src_.getline(l)) fail("empty stream (no header)");
    ++line_;
    std::istringstream is(l);
    std::string magic, th;
    int version = -1;
    uint32_t t = ~0u;
    is >> magic >> version >> th >> t;
    if (magic != kStreamMagic) fail("not a text trace stream (header '" + l + "')");
    if (version != kVersion) fail("stream format version " + std::to_string(version) + ", this mbpsim reads " + std::to_string(kVersion));
    if (th != "thread" || t != thread) fail("header names thread " + std::to_string(t) + ", expected " + std::to_string(thread));
  }
  bool next(Record& r) override {
    if (done_) return false;
    std::string l;
    for (;;) {
      if (!src_.getline(l)) fail("truncated: no end-of-stream line");
      ++line_;
      const size_t h = l.find('#');
      if (h != std::string::npos) l.resize(h);
      if (l.find_first_not_of(" \t\r") != std::string::npos) break;
    }
    std::istringstream is(l);
    std::string a, b;
    is >> a;
    if (a == "end-of-stream") {
      uint64_t n = 0;
      if (!(is >> n) || !at_end(is)) fail("bad end-of-stream line '" + l + "'");
      if (n != index_) fail("end-of-stream says " + std::to_string(n) + " records, the stream has " + std::to_string(index_));
      std::string rest;
      while (src_.getline(rest))
        if (rest.find_first_not_of(" \t\r") != std::string::npos) fail("data after end-of-stream");
      done_ = true;
      return false;
    }
    r = Record{};
    r.gap = num(a, "gap");
    if (r.gap > kMaxGap) fail(gap_too_large(r.gap));
    if (!(is >> b)) fail("missing record tag");
    int k = 0;
    for (int i = 1; i < kKinds; ++i)
      if (b == kNames[i]) k = i;
    if (!k) fail("unknown record tag '" + b + "'");
    r.kind = static_cast<Kind>(k);
    const Fields f = fields_of(r.kind);
    std::string v;
    auto field = [&](const char* what) {
      if (!(is >> v)) fail(std::string("record '") + b + "' lacks its " + what);
      return v;
    };
    if (f.addr) r.addr = num(field("address"), "address");
    if (f.thread) r.thread = static_cast<uint32_t>(num(field("thread"), "thread", UINT32_MAX));
    if (f.size) r.size = num(field("size"), "size");
    if (f.op) {
      field("operation");
      int o = -1;
      for (int i = 0; i < 4; ++i)
        if (v == kOps[i]) o = i;
      if (o < 0) fail("unknown atomic operation '" + v + "'");
      r.op = static_cast<RmwOp>(o);
    }
    if (f.count) r.count = static_cast<uint32_t>(num(field("participants"), "participants", UINT32_MAX));
    if (f.seq) r.seq = num(field("order"), "order");
    if (!at_end(is)) fail("extra fields in '" + l + "'");
    check(r);
    ++index_;
    return true;
  }

 private:
  static bool at_end(std::istringstream& is) {
    std::string x;
    return !(is >> x);
  }
  uint64_t num(const std::string& s, const char* what, uint64_t max = UINT64_MAX) const {
    if (s.empty() || s[0] == '-' || s[0] == '+') fail(std::string("bad ") + what + " '" + s + "'");
    errno = 0;
    char* end = nullptr;
    const unsigned long long v = std::strtoull(s.c_str(), &end, 0);
    if (errno || *end || v > max) fail(std::string("bad ") + what + " '" + s + "'");
    return v;
  }
  Source src_;
  bool done_ = false;
};

class TextWriter : public StreamWriter {
 public:
  TextWriter(const std::string& path, uint32_t thread) : out_(path, false) {
    const std::string h = std::string(kStreamMagic) + " " + std::to_string(kVersion) + " thread " + std::to_string(thread) + "\n";
    out_.put(h.data(), h.size());
  }
  void put(const Record& r) override {
    std::string l = std::to_string(r.gap) + " " + kNames[static_cast<int>(r.kind)];
    const Fields f = fields_of(r.kind);
    if (f.addr) l += " " + hex(r.addr);
    if (f.thread) l += " " + std::to_string(r.thread);
    if (f.size) l += " " + std::to_string(r.size);
    if (f.op) l += std::string(" ") + kOps[static_cast<int>(r.op)];
    if (f.count) l += " " + std::to_string(r.count);
    if (f.seq) l += " " + std::to_string(r.seq);
    l += "\n";
    out_.put(l.data(), l.size());
    ++n_;
  }
  void close() override {
    const std::string e = "end-of-stream " + std::to_string(n_) + "\n";
    out_.put(e.data(), e.size());
    out_.close();
  }

 private:
  Sink out_;
  uint64_t n_ = 0;
};

// ------------------------------------------------------------------ binary

uint64_t zigzag(int64_t v) { return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63); }
int64_t unzigzag(uint64_t v) { return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1); }

class BinaryReader : public StreamReader {
 public:
  BinaryReader(const std::string& path, uint32_t thread) : src_(path, [this](const std::string& w) { fail(w); }) {
    file_ = path;
    thread_ = thread;
    uint8_t b;
    for (uint8_t m : kBinMagic)
      if (!src_.get(b) || b != m) fail("not a binary trace stream (bad magic)");
    if (!src_.get(b)) fail("truncated header");
    if (b != kVersion) fail("stream format version " + std::to_string(b) + ", this mbpsim reads " + std::to_string(kVersion));
    const uint64_t t = varint("thread id");
    if (t != thread) fail("header names thread " + std::to_string(t) + ", expected " + std::to_string(thread));
  }
  bool next(Record& r) override {
    if (done_) return false;
    uint8_t tag;
    if (!src_.get(tag)) fail("truncated: no end-of-stream marker");
    if (tag == 0) return end_marker();
    if (tag >= kKinds) bad_field("unknown record tag", tag);
    r.kind = static_cast<Kind>(tag);
    r.gap = varint("gap");
    if (r.gap > kMaxGap) fail(gap_too_large(r.gap));
    const Fields f = fields_of(r.kind);
    r.addr = r.size = r.seq = 0;
    r.thread = r.count = 0;
    r.op = RmwOp::Add;
    if (f.addr) {
      prev_ += static_cast<uint64_t>(unzigzag(varint("address")));
      r.addr = prev_;
    }
    if (f.thread) r.thread = static_cast<uint32_t>(varint("thread", UINT32_MAX));
    if (f.size) r.size = varint("size");
    if (f.op) {
      uint8_t o;
      if (!src_.get(o)) fail("truncated record");
      if (o > 3) bad_field("unknown atomic operation", o);
      r.op = static_cast<RmwOp>(o);
    }
    if (f.count) r.count = static_cast<uint32_t>(varint("participants", UINT32_MAX));
    if (f.seq) r.seq = varint("order");
    check(r);
    ++index_;
    return true;
  }

 private:
  // The end marker: the record count, and nothing after it.
  [[gnu::noinline]] bool end_marker() {
    const uint64_t n = varint("record count");
    if (n != index_) fail("end marker says " + std::to_string(n) + " records, the stream has " + std::to_string(index_));
    uint8_t x;
    if (src_.get(x)) fail("data after the end marker");
    done_ = true;
    return false;
  }
  [[noreturn, gnu::cold, gnu::noinline]] void bad_field(const char* what, unsigned v) const {
    fail(std::string(what) + " " + std::to_string(v));
  }
  // A varint wholly in the buffer is decoded in place; the checks' messages are built out of
  // line, so the common path has no string temporaries to set up (it runs per field).
  uint64_t varint(const char* what, uint64_t max = UINT64_MAX) {
    if (src_.ready() < 10) return varint_slow(what, max);
    const uint8_t* p = src_.cur();
    uint64_t v = 0;
    for (int i = 0; i < 10; ++i) {
      const uint8_t b = p[i];
      if (i == 9 && (b & 0x7e)) bad_varint(what, "varint overflow", 0);
      v |= static_cast<uint64_t>(b & 0x7f) << (7 * i);
      if (!(b & 0x80)) {
        src_.skip(static_cast<size_t>(i) + 1);
        if (v > max) bad_varint(what, nullptr, v);
        return v;
      }
    }
    bad_varint(what, "varint longer than 10 bytes", 0);
  }
  [[gnu::noinline]] uint64_t varint_slow(const char* what, uint64_t max) {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      uint8_t b;
      if (!src_.get(b)) fail("truncated record");
      if (shift == 63 && (b & 0x7e)) bad_varint(what, "varint overflow", 0);
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80)) {
        if (v > max) bad_varint(what, nullptr, v);
        return v;
      }
    }
    bad_varint(what, "varint longer than 10 bytes", 0);
  }
  // "corrupt <what> (<why>)", or with no `why`, "(<v> is out of range)".
  [[noreturn, gnu::cold, gnu::noinline]] void bad_varint(const char* what, const char* why, uint64_t v) const {
    fail(std::string("corrupt ") + what + " (" + (why ? std::string(why) : std::to_string(v) + " is out of range") + ")");
  }
  Source src_;
  uint64_t prev_ = 0;
  bool done_ = false;
};

class BinaryWriter : public StreamWriter {
 public:
  BinaryWriter(const std::string& path, uint32_t thread, bool gzip) : out_(path, gzip) {
    out_.put(kBinMagic, sizeof kBinMagic);
    const uint8_t v = kVersion;
    out_.put(&v, 1);
    varint(thread);
    flush();
  }
  void put(const Record& r) override {
    buf_.push_back(static_cast<uint8_t>(r.kind));
    varint(r.gap);
    const Fields f = fields_of(r.kind);
    if (f.addr) {
      varint(zigzag(static_cast<int64_t>(r.addr - prev_)));
      prev_ = r.addr;
    }
    if (f.thread) varint(r.thread);
    if (f.size) varint(r.size);
    if (f.op) buf_.push_back(static_cast<uint8_t>(r.op));
    if (f.count) varint(r.count);
    if (f.seq) varint(r.seq);
    ++n_;
    if (buf_.size() > (1 << 16)) flush();
  }
  void close() override {
    buf_.push_back(0);
    varint(n_);
    flush();
    out_.close();
  }

 private:
  void varint(uint64_t v) {
    while (v >= 0x80) {
      buf_.push_back(static_cast<uint8_t>(v | 0x80));
      v >>= 7;
    }
    buf_.push_back(static_cast<uint8_t>(v));
  }
  void flush() {
    out_.put(buf_.data(), buf_.size());
    buf_.clear();
  }
  Sink out_;
  std::vector<uint8_t> buf_;
  uint64_t prev_ = 0, n_ = 0;
};

}  // namespace

std::string hex(uint64_t v) {
  char b[24];
  std::snprintf(b, sizeof b, "0x%" PRIx64, v);
  return b;
}

const char* name(Kind k) {
  const int i = static_cast<int>(k);
  return i > 0 && i < kKinds ? kNames[i] : "?";
}
const char* name(RmwOp o) { return kOps[static_cast<int>(o) & 3]; }
bool is_memory(Kind k) { return k == Kind::Load || k == Kind::Store || k == Kind::Rmw; }
const char* sync_object(Kind k) {
  switch (k) {
    case Kind::Acquire:
    case Kind::Release: return "lock";
    case Kind::Barrier: return "barrier";
    case Kind::Post:
    case Kind::Wait: return "semaphore";
    case Kind::CondWait:
    case Kind::Signal:
    case Kind::Broadcast: return "condition variable";
    default: return nullptr;
  }
}
const char* name(Encoding e) {
  switch (e) {
    case Encoding::Text: return "text";
    case Encoding::Binary: return "binary";
    case Encoding::BinaryGzip: return "binary-gzip";
  }
  return "?";
}

void StreamReader::fail(const std::string& what) const {
  std::string where = file_ + ": thread " + std::to_string(thread_) + ", record " + std::to_string(index_);
  if (line_) where += " (line " + std::to_string(line_) + ")";
  throw UserError(where + ": " + what);
}

void StreamReader::bad_record(const Record& r) const {
  if (is_memory(r.kind) && (r.size == 0 || r.size > kMaxAccessBytes))
    fail(std::string(name(r.kind)) + " of " + std::to_string(r.size) + " bytes (1.." + std::to_string(kMaxAccessBytes) + ")");
  if (is_memory(r.kind) && r.addr + r.size < r.addr) fail("access wraps around the address space");
  if (r.kind == Kind::Alloc && r.size == 0) fail("allocation of 0 bytes");
  if (r.kind == Kind::Barrier && r.count == 0) fail("barrier with 0 participants");
  fail("bad record");  // not reached: check() calls this only for one of the above
}

std::string meta_path(const std::string& dir) { return dir + "/trace.meta"; }
std::string stream_path(const std::string& dir, uint32_t thread, Encoding e) {
  const char* ext = e == Encoding::Text ? ".txt" : e == Encoding::Binary ? ".bin" : ".bin.gz";
  return dir + "/thread-" + std::to_string(thread) + ext;
}

uint64_t reader_bytes(const std::string& path) {
  std::error_code ec;
  const uint64_t size = std::filesystem::file_size(path, ec);
  if (ec) return 0;
  // The raw buffer fills with the file; a gzip file is inflated into the reader's own buffer.
  std::ifstream f(path, std::ios::binary);
  unsigned char head[2] = {};
  const bool gz = f.read(reinterpret_cast<char*>(head), 2) && head[0] == 0x1f && head[1] == 0x8b;
  const uint64_t reader = std::max(sizeof(TextReader), sizeof(BinaryReader));
  const uint64_t zlib_state = gz ? 7200 + 32768 : 0;  // inflate's state and its 32 KiB window
  return heap_bytes(reader) + heap_bytes(Source::buffer_for(size)) + zlib_state;
}

Meta read_meta(const std::string& dir) {
  const std::string path = meta_path(dir);
  std::ifstream f(path);
  if (!f) throw UserError(path + ": cannot open (is '" + dir + "' a trace folder?)");
  Meta m;
  std::string l;
  int line = 0;
  auto bad = [&](const std::string& w) { throw UserError(path + ": line " + std::to_string(line) + ": " + w); };
  bool have_threads = false, have_encoding = false;
  while (std::getline(f, l)) {
    ++line;
    if (line == 1) {
      std::istringstream is(l);
      std::string magic;
      int v = -1;
      is >> magic >> v;
      if (magic != "mbpsim-trace") bad("not an mbpsim trace (first line '" + l + "')");
      if (v != kVersion) bad("trace format version " + std::to_string(v) + ", this mbpsim reads " + std::to_string(kVersion));
      continue;
    }
    if (l.empty() || l[0] == '#') continue;
    const size_t sp = l.find(' ');
    const std::string key = l.substr(0, sp), val = sp == std::string::npos ? "" : l.substr(sp + 1);
    if (key == "program") m.program = val;
    else if (key == "args") m.args = val;
    else if (key == "gap_unit") m.gap_unit = val;
    else if (key == "capture") m.capture = val;
    else if (key == "instructions") {
      char* end = nullptr;
      errno = 0;
      m.instructions = std::strtoull(val.c_str(), &end, 10);
      if (val.empty() || *end || errno || val[0] == '-') bad("instructions must be a count, not '" + val + "'");
    } else if (key == "threads") {
      char* end = nullptr;
      const unsigned long t = std::strtoul(val.c_str(), &end, 10);
      if (val.empty() || *end || t < 1 || t > 65536) bad("threads must be 1..65536, not '" + val + "'");
      m.threads = static_cast<uint32_t>(t);
      have_threads = true;
    } else if (key == "encoding") {
      if (val == "text") m.encoding = Encoding::Text;
      else if (val == "binary") m.encoding = Encoding::Binary;
      else if (val == "binary-gzip") m.encoding = Encoding::BinaryGzip;
      else bad("encoding must be text, binary or binary-gzip, not '" + val + "'");
      have_encoding = true;
    } else if (key == "alloc") {
      std::istringstream is(val);
      std::string a, s, x;
      if (!(is >> a >> s) || (is >> x)) bad("alloc takes ADDRESS SIZE");
      char *e1 = nullptr, *e2 = nullptr;
      errno = 0;
      Allocation al{std::strtoull(a.c_str(), &e1, 0), std::strtoull(s.c_str(), &e2, 0)};
      if (errno || *e1 || *e2 || al.size == 0) bad("bad alloc '" + val + "'");
      m.allocations.push_back(al);
    } else {
      bad("unknown key '" + key + "'");
    }
  }
  if (line == 0) throw UserError(path + ": empty file");
  if (!have_threads) throw UserError(path + ": no 'threads' line");
  if (!have_encoding) throw UserError(path + ": no 'encoding' line");
  return m;
}

void write_meta(const std::string& dir, const Meta& m) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  const std::string path = meta_path(dir);
  std::ofstream f(path);
  if (!f) throw UserError(path + ": cannot create");
  f << "mbpsim-trace " << kVersion << "\n";
  f << "program " << m.program << "\n";
  if (!m.args.empty()) f << "args " << m.args << "\n";
  f << "threads " << m.threads << "\n";
  f << "encoding " << name(m.encoding) << "\n";
  f << "gap_unit " << m.gap_unit << "\n";
  if (!m.capture.empty()) f << "capture " << m.capture << "\n";
  if (m.instructions) f << "instructions " << m.instructions << "\n";
  for (const Allocation& a : m.allocations) f << "alloc " << hex(a.addr) << " " << a.size << "\n";
  if (!f.flush()) throw UserError(path + ": write failed");
}

std::unique_ptr<StreamReader> open_stream(const std::string& dir, const Meta& m, uint32_t thread) {
  if (thread >= m.threads) throw UserError(meta_path(dir) + ": no thread " + std::to_string(thread));
  const std::string p = stream_path(dir, thread, m.encoding);
  if (m.encoding == Encoding::Text) return std::make_unique<TextReader>(p, thread);
  return std::make_unique<BinaryReader>(p, thread);
}

std::unique_ptr<StreamWriter> create_stream(const std::string& dir, const Meta& m, uint32_t thread) {
  const std::string p = stream_path(dir, thread, m.encoding);
  if (m.encoding == Encoding::Text) return std::make_unique<TextWriter>(p, thread);
  return std::make_unique<BinaryWriter>(p, thread, m.encoding == Encoding::BinaryGzip);
}

void convert(const std::string& in_dir, const std::string& out_dir, Encoding to, bool replace) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::exists(out_dir, ec) && fs::equivalent(in_dir, out_dir, ec))
    throw UserError(out_dir + ": the output folder must differ from the input");
  if (!replace && fs::exists(out_dir, ec) && !(fs::is_directory(out_dir, ec) && fs::is_empty(out_dir, ec)))
    throw UserError(out_dir + ": exists; trace convert replaces it only with --force");
  const Meta in = read_meta(in_dir);
  Meta out = in;
  out.encoding = to;
  // Write into a temporary folder and rename at the end: no partial output on bad input.
  const std::string tmp = out_dir + ".partial";
  fs::remove_all(tmp, ec);
  try {
    write_meta(tmp, out);
    for (uint32_t t = 0; t < in.threads; ++t) {
      auto r = open_stream(in_dir, in, t);
      auto w = create_stream(tmp, out, t);
      Record rec;
      while (r->next(rec)) w->put(rec);
      w->close();
    }
  } catch (...) {
    fs::remove_all(tmp, ec);
    throw;
  }
  if (fs::exists(out_dir, ec)) {
    if (!fs::exists(meta_path(out_dir), ec) && !fs::is_empty(out_dir, ec)) {
      fs::remove_all(tmp, ec);
      throw UserError(out_dir + ": exists and is not a trace folder; not overwriting");
    }
    fs::remove_all(out_dir, ec);
  }
  fs::rename(tmp, out_dir, ec);
  if (ec) throw UserError(out_dir + ": cannot create (" + ec.message() + ")");
}

Summary summarize(const std::string& dir) {
  const Meta m = read_meta(dir);
  Summary s;
  s.threads = m.threads;
  std::unordered_set<uint64_t> lines, pages, objects;
  for (const Allocation& a : m.allocations) s.allocated_bytes += a.size;
  for (uint32_t t = 0; t < m.threads; ++t) {
    auto r = open_stream(dir, m, t);
    Record rec;
    while (r->next(rec)) {
      ++s.records;
      ++s.by_kind[static_cast<int>(rec.kind)];
      s.gap_total += rec.gap;
      if (is_memory(rec.kind)) {
        if (rec.kind != Kind::Store) s.bytes_loaded += rec.size;
        if (rec.kind != Kind::Load) s.bytes_stored += rec.size;
        const uint64_t last = rec.addr + (rec.size ? rec.size - 1 : 0);
        for (uint64_t l = rec.addr >> 6; l <= last >> 6; ++l) lines.insert(l);
        for (uint64_t p = rec.addr >> 12; p <= last >> 12; ++p) pages.insert(p);
      } else if (rec.kind == Kind::Barrier || rec.kind == Kind::Acquire || rec.kind == Kind::Post ||
                 rec.kind == Kind::Wait || rec.kind == Kind::CondWait || rec.kind == Kind::Signal ||
                 rec.kind == Kind::Broadcast) {
        objects.insert(rec.addr);
      }
    }
  }
  s.lines_touched = lines.size();
  s.pages_touched = pages.size();
  s.sync_objects = objects.size();
  return s;
}

}  // namespace mbpsim::trace
