// The functional units of the MBP2 NIC (thesis 8.2) that have timing of their own: the host
// I/O bus interface (BIU), the card-embedded memory (EM) with its four access routes, the
// context-tagged TLB, the protocol management engine (PME) with its interrupt models, the
// user-level interface's doorbell aliases (ULI, the Memory-based Virtual Interface of 8.3.2)
// and the DMA engines with descriptor rings (PGE, ADMA, LDMA). Each is plain C++ with its
// own busy-until time, statistics, and a unit test; Mbp2System (mbp2_system.h) wires them
// into the send and receive paths of 8.3.3. Times are picoseconds.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <list>
#include <map>
#include <queue>
#include <string>
#include <unordered_map>
#include <vector>

#include <systemc>

#include "models/core/calendar.h"
#include "models/core/stats.h"
#include "models/core/fair_share.h"
#include "models/core/params.h"
#include "models/host/io_bus.h"
#include "models/mbp2/crypto.h"

namespace mbpsim::mbp2 {

// Every unit is a SystemC module, a child of its NIC's module (mbp2_node3.pme): its name is the
// last part of its statistics name unless given. Units keep busy-until times and schedule what
// they do on the shared Calendar: event-driven, nothing ticks while idle.
class Unit : public sc_core::sc_module {
 protected:
  explicit Unit(const std::string& stat_name, const char* module = nullptr);
};

// ------------------------------------------------------------------ BIU: the host I/O bus

// The host I/O bus the card sits on is the host's (models/host/io_bus.h).
using host::BusConfig;

// The bus is one shared resource, granted burst by burst in round robin among the DMA
// transfers that want it (the PGE's and the ADMA's), modelled as a `FairShare`: a transfer
// books its time when its engine takes it, and one booked later shares the bus from its start
// on, delaying those in progress. A programmed write by the host wins the next arbitration, so
// it waits at most for the burst in progress and delays the DMA by its own length.
class HostBus : public Unit {
 public:
  HostBus(const BusConfig& c, Stats& st, const std::string& name);
  // Bus cycles to move [addr, addr + bytes) by DMA. SBus bursts are naturally aligned powers of
  // two up to the maximum burst, so an unaligned transfer is split into more, shorter bursts;
  // PCI bursts take any start and length (byte enables) up to the maximum burst.
  double transfer_cycles(uint64_t addr, uint32_t bytes) const;
  uint64_t cycles_ps(double cycles) const;
  // Books a DMA transfer that may start at `at`: one span, or several the engine moves one
  // after another in one tenure of its own (a structure's header, then its data).
  struct Span {
    uint64_t addr;
    uint32_t bytes;
  };
  // The spans of one transfer: one or two held here (nothing allocated), or a caller's vector
  // borrowed for the call.
  class Spans {
   public:
    Spans(Span a) : own_{a, Span{}}, n_(1) {}                      // NOLINT(google-explicit-constructor)
    Spans(Span a, Span b) : own_{a, b}, n_(2) {}
    Spans(const std::vector<Span>& v) : v_(&v), n_(v.size()) {}  // NOLINT(google-explicit-constructor)
    const Span* begin() const { return v_ ? v_->data() : own_.data(); }
    const Span* end() const { return begin() + n_; }

   private:
    std::array<Span, 2> own_{};
    const std::vector<Span>* v_ = nullptr;
    size_t n_;
  };
  FairShare::Booking dma(uint64_t at, uint64_t addr, uint32_t bytes) { return dma(at, {Span{addr, bytes}}); }
  FairShare::Booking dma(uint64_t at, const Spans& spans);
  uint64_t dma_ps(const Spans& spans) const;  // their time alone
  // A programmed write by the host (a doorbell): returns when it completes.
  uint64_t pio(uint64_t at);
  // The NIC lost its power: its DMA transfers on the bus stop (the host's writes do not).
  void power_off();
  const BusConfig& config() const { return c_; }
  uint64_t busy_ps() const { return busy_ps_.value; }

 private:
  void count_wait();
  BusConfig c_;
  uint64_t grant_ps_;  // one maximum burst with its overhead
  FairShare time_;
  uint64_t waited_ = 0;  // the DMA wait already counted
  Counter &bytes_, &busy_ps_, &wait_ps_, &pios_;
};

// ------------------------------------------------------------------ EM: card-embedded memory

enum class Route : uint8_t { Host = 0, Mac = 1, Pme = 2, Crypto = 3 };
constexpr int kRoutes = 4;
const char* name(Route r);

struct EmConfig {
  // Every member is a parameter of `params()` (mbp2_params.cpp), which gives it its default.
  EmConfig();
  double clock_mhz{};      // MBP2P: the FPGA controller's clock
  uint32_t width_bytes{};   // 64-bit data path (8.2: "more than 64 bit wide")
  uint32_t burst_bytes{};  // SDRAM burst: one row access per burst
  double access_cycles{};   // per burst: activate and CAS latency
  uint32_t bytes{};  // capacity: what the units carve must fit
  static const ParamTable<EmConfig>& params();
};

// One memory port shared by four routes, granted burst by burst in round robin among the
// accesses that want it (a `FairShare`): a saturated route slows the others as a real SDRAM
// would, and an access booked later shares the memory from its start on instead of queueing
// behind the ones in progress. The DMA engines book an access when they take the transfer.
class Em : public Unit {
 public:
  Em(const EmConfig& c, Stats& st, const std::string& name);
  uint64_t access_ps(uint32_t bytes) const;
  // Books `bytes` on `route`, starting no earlier than `at`; the booking's end is predicted
  // from the accesses booked so far (later ones may delay it). `pace`: the access cannot be
  // quicker than that (its bytes come from, or go to, a slower unit: the host bus, a cipher),
  // so it leaves the memory's other bursts to the other routes (`FairShare::book`).
  FairShare::Booking access(Route r, uint64_t at, uint32_t bytes, uint64_t pace = 0);
  // `accesses` separate accesses of `each` bytes (a processor's uncached words or line
  // fills: each its own burst), paced over `pace`.
  FairShare::Booking scattered(Route r, uint64_t at, uint32_t accesses, uint32_t each, uint64_t pace);
  void power_off();  // every access in progress stops
  uint64_t busy_ps(Route r) const { return busy_[static_cast<int>(r)]->value; }
  uint64_t wait_ps(Route r) const { return wait_[static_cast<int>(r)]->value; }
  // The memory's contents where units keep shared structures (descriptor rings): `carve`
  // reserves `bytes` (word aligned) and returns their offset; words are big-endian (the PME is
  // a SPARC).
  uint32_t carve(uint32_t bytes);
  uint32_t load32(uint32_t off) const;
  void store32(uint32_t off, uint32_t v);
  // Bytes as a DMA engine moves them (frames, results of the CAU).
  void write(uint32_t off, const uint8_t* p, uint32_t n);
  std::vector<uint8_t> read(uint32_t off, uint32_t n) const;
  void read_into(uint32_t off, uint8_t* out, uint32_t n) const;
  uint32_t size() const { return static_cast<uint32_t>(mem_.size()); }

 private:
  EmConfig c_;
  FairShare::Booking book(Route r, uint64_t at, uint64_t bytes, uint64_t work, uint64_t pace);
  std::vector<uint8_t> mem_;
  FairShare time_{kRoutes};
  uint64_t waited_[kRoutes] = {};  // each route's wait already counted
  Counter* bytes_[kRoutes];
  Counter* busy_[kRoutes];
  Counter* wait_[kRoutes];
};

// A DMA transfer between host memory and EM (the PGE, the ADMA): the bus moves `spans` in one
// tenure; EM takes `em_bytes` on the host route, at the bus's pace. It ends when both are over.
Finish host_transfer(HostBus& bus, Em& em, uint64_t at, const HostBus::Spans& spans, uint32_t em_bytes);

// ------------------------------------------------------------------ TLB

// Logical (context, page) to host physical page. Fully associative, least recently used
// replacement; every entry carries its context ID, so several address spaces share it.
class Tlb : public Unit {
 public:
  Tlb(uint32_t entries, Stats& st, const std::string& name);
  // True on a hit (and the entry becomes most recent).
  bool lookup(uint32_t ctx, uint64_t vpage, uint64_t* ppage = nullptr);
  // What an engine's transfer finds there as it moves the bytes: no statistics, no LRU update
  // (lookup, by the timing path, counted the access).
  bool probe(uint32_t ctx, uint64_t vpage, uint64_t* ppage) const;
  void insert(uint32_t ctx, uint64_t vpage, uint64_t ppage);
  void flush_context(uint32_t ctx);
  void clear();  // every entry (the NIC lost its power)
  // Drops one translation; true if it was there.
  bool invalidate(uint32_t ctx, uint64_t vpage);
  uint32_t size() const { return static_cast<uint32_t>(lru_.size()); }

 private:
  struct Entry {
    uint32_t ctx;
    uint64_t vpage, ppage;
  };
  static uint64_t key(uint32_t ctx, uint64_t vpage) { return (static_cast<uint64_t>(ctx) << 44) ^ vpage; }
  uint32_t entries_;
  std::list<Entry> lru_;  // front: most recent
  std::unordered_map<uint64_t, std::list<Entry>::iterator> map_;
  Counter &hits_, &misses_, &evictions_;
};

// ------------------------------------------------------------------ PME

// The embedded protocol processor. Its cycles per instruction come from its memory system
// (8.5: "lack of a secondary cache, write-through policy of its cache, very small amount of
// instruction cache"): instruction-cache misses fill a line over the processor bus, loads and
// stores to the descriptor rings and packet headers in EM are uncached (8.3.4) unless the
// core has explicit fill and write-back instructions, and write-through stores stall when the
// write buffer is full.
struct PmeConfig {
  // Every member is a parameter of `params()` (mbp2_params.cpp), which gives it its default.
  PmeConfig();
  double clock_mhz{};   // MBP2P: SPARClite MB86832 internal clock
  double bus_mhz{};      // SPARClite bus
  double base_cpi{};    // scalar integer pipeline, everything hitting
  double imiss_per_instr{};
  double line_fill_bus_cycles{};
  double shared_per_instr{};    // loads and stores to EM-resident rings and headers
  double shared_bus_cycles{};    // one uncached EM access through the controller
  bool cache_control{};       // explicit cache-fill / write-back instructions (Casablanca)
  double store_per_instr{};
  double wt_stall_bus_cycles{};   // average write-buffer stall per store (write-through)
  // Interrupts: conventional (trap, save and restore of a register window and globals) or
  // zero-cost register-set switching (Casablanca, 8.3.5).
  bool register_sets{};
  double interrupt_instr{};
  double host_cpi{};  // the SS20 kernel's cycles per instruction, to port the host's routines
  static const ParamTable<PmeConfig>& params();
};

class Pme : public Unit {
 public:
  enum Priority : int { kHigh = 0, kNormal = 1, kLow = 2 };
  // The interrupt lines of the units' descriptor rings (`run_from`).
  // kNoSource: a run the PME's own work starts, with no interrupt.
  enum Source : int { kNoSource = -1, kPgeRing = 0, kLdmaTxRing, kLdmaRxRing, kCauRing };
  // A cache line: four 32-bit words. With cache-control instructions one line fill (or write
  // back) stands for four uncached word accesses to the shared areas.
  static constexpr uint32_t kLineWords = 4;
  Pme(Calendar& cal, const PmeConfig& c, Stats& st, const std::string& name);
  double cpi() const;
  uint64_t instr_ps(double instructions) const;
  // The same routine ported from the host kernel: its host cycles as PME time.
  uint64_t host_cycles_ps(double host_cycles) const { return instr_ps(host_cycles / c_.host_cpi); }
  // A compute kernel (firmware crypto, modular arithmetic) whose loop and tables stay in the
  // caches: the base CPI and write-through stalls, plus `shared_words` word accesses to
  // buffers shared with the DMAs (uncached, or filled by line with cache-control instructions).
  uint64_t kernel_ps(double instructions, double shared_words) const;
  uint64_t interrupt_ps() const { return c_.register_sets ? 0 : instr_ps(c_.interrupt_instr); }
  // The card memory its uncached loads and stores reach (the PME route). Attached, a handler
  // books the accesses its run makes there (`em_accesses`), paced over the run, and ends no
  // earlier than they do: a memory saturated by the other routes slows the PME.
  void attach(Em* em) { em_ = em; }
  // The EM accesses a run of `dur` makes by the CPI model's mix: `shared_per_instr` uncached
  // words per instruction, or a line fill for four of them with cache-control instructions.
  double em_accesses(uint64_t dur) const;
  // Runs a handler for `dur` (plus the interrupt cost if `interrupt`), then `fn`. Handlers run
  // one at a time to completion; waiting ones are taken by priority, then arrival. `hold`,
  // when given, is called after `dur` with the handler's continuation: the handler keeps the
  // PME (it polls a unit's completion) until `hold` calls it, once; that time is its own.
  using Hold = std::function<void(std::function<void()> resume)>;
  void run(const char* handler, Priority pr, bool interrupt, uint64_t dur, std::function<void()> fn, Hold hold = {});
  // A unit's completion, raised on its interrupt `source` (its descriptor ring, 8.3.4-8.3.5:
  // "on completion of DMA processing, the PME must collect the used entry"). The handler loops
  // over its ring before it returns: when the next run (by priority, then arrival) is a
  // completion of the same ring, it is collected in the same interrupt, with no new entry.
  // What a handler starts for later in its own run continues it (the same source).
  // kNoSource: `run` with no interrupt.
  void run_from(int source, const char* handler, Priority pr, uint64_t dur, std::function<void()> fn, Hold hold = {});
  uint64_t busy_ps() const { return busy_.value; }
  uint64_t interrupts() const { return interrupts_.value; }
  uint64_t coalesced() const { return coalesced_.value; }
  bool idle() const { return !running_ && q_.empty(); }

 private:
  struct Job {
    int pr;
    uint64_t seq;
    const char* handler;
    bool interrupt;
    int source;  // the ring whose completion raised it (-1: none)
    uint64_t dur;
    std::function<void()> fn;
    Hold hold;
    bool operator>(const Job& o) const { return pr != o.pr ? pr > o.pr : seq > o.seq; }
  };
  void push(Job j);
  void next();
  void end_run(const std::function<void()>& fn);  // the run's continuation, then the next run
  // Runs `k` once the run's EM accesses are over (at once when they already are).
  void wait_mem(FairShare::Booking mem, Counter* handler, std::function<void()> k);
  Calendar& cal_;
  Em* em_ = nullptr;
  PmeConfig c_;
  Stats& st_;
  std::string name_;
  std::priority_queue<Job, std::vector<Job>, std::greater<Job>> q_;  // by priority, then arrival
  bool running_ = false;
  uint64_t seq_ = 0;
  int in_source_ = -1;  // the ring whose handler the last run was (-1: none, or the PME went idle)
  bool in_fn_ = false;  // a run's continuation is running
  Counter &busy_, &interrupts_, &int_ps_, &mem_stall_, &coalesced_;
  std::map<std::string, Counter*> per_handler_;
};

// ------------------------------------------------------------------ KLI, ICU

// The KLI (8.2): part of EM mapped into the host's physical address space, so kernel programs
// and the PME share variables there. The kernel area holds real bytes; the host reaches them
// with programmed single-word accesses across the host bus, the PME directly.
class Kli : public Unit {
 public:
  static constexpr uint32_t kAliasTable = 0;       // ULI: one u32 per alias, ptask + 1 (0: none)
  static constexpr uint32_t kAliases = 1024;       // (4 KiB; the MBP2's connection table follows)
  static constexpr uint32_t kBytes = 64 * 1024;    // the kernel area
  Kli(HostBus& bus, Stats& st, const std::string& name);
  // The host kernel writes / reads `n` bytes at `off` from time `at`: returns when done.
  uint64_t write(uint64_t at, uint32_t off, const uint8_t* p, uint32_t n);
  uint64_t read(uint64_t at, uint32_t off, uint8_t* p, uint32_t n);
  // The PME's view of the same bytes (it reads EM directly).
  uint32_t load32(uint32_t off) const;
  void store32(uint32_t off, uint32_t v);

 private:
  void check(uint32_t off, uint32_t n) const;
  HostBus& bus_;
  std::vector<uint8_t> mem_;
  Counter &writes_, &reads_;
};

// The ICU (8.2): interrupts between the host CPU and the PME, each carrying a 64-bit message,
// queued in order in each direction.
class Icu : public Unit {
 public:
  Icu(Stats& st, const std::string& name);
  void to_host(uint64_t msg);
  void to_pme(uint64_t msg);
  // The oldest message for each side; false when none is waiting.
  bool take_for_host(uint64_t* msg);
  bool take_for_pme(uint64_t* msg);

 private:
  std::deque<uint64_t> host_, pme_;
  Counter &to_host_, &to_pme_;
};

// ------------------------------------------------------------------ ULI doorbells (MVI)

// One doorbell register with a distinct alias address per user task (8.3.2). The OS assigns
// each task one alias and tells the NIC by writing the alias table in EM through the KLI; at a
// doorbell the ULI reads the table to name the task.
class Uli : public Unit {
 public:
  Uli(Kli& kli, Stats& st, const std::string& name);
  // The OS's writes of the table entry, from `at`: returns when they are done.
  uint64_t assign(uint32_t alias, uint32_t ptask, uint64_t at = 0);
  uint64_t revoke(uint32_t alias, uint64_t at = 0);
  // The task ringing through `alias`: -1 (and counted) when the alias is unassigned or is not
  // the ringing task's own.
  int64_t ring(uint32_t alias, uint32_t ringing_ptask);
  int64_t alias_of(uint32_t ptask) const;

 private:
  Kli& kli_;
  Counter &rings_, &rejected_;
};

// ------------------------------------------------------------------ DMA engines

// Where a DMA engine moves bytes from or to (8.3.4): EM (addresses are offsets in it), the MAC
// (addresses name a frame in its FIFO), host memory. A port refuses (false) an address it does
// not have; the engine then marks the descriptor with kError and moves nothing.
class DmaPort {
 public:
  virtual ~DmaPort() = default;
  // `ctx`: the descriptor's context (whose address space a host address is in).
  virtual bool read(uint64_t addr, uint32_t ctx, uint8_t* out, uint32_t n) = 0;
  virtual bool write(uint64_t addr, uint32_t ctx, const uint8_t* in, uint32_t n) = 0;
};

// EM as a DMA port.
class EmPort : public DmaPort {
 public:
  explicit EmPort(Em& em) : em_(em) {}
  bool read(uint64_t addr, uint32_t ctx, uint8_t* out, uint32_t n) override;
  bool write(uint64_t addr, uint32_t ctx, const uint8_t* in, uint32_t n) override;

 private:
  Em& em_;
};

// The MAC's frame FIFO as a DMA port: a received frame waits in it, under the number `put`
// gives, until the LDMA reads it into EM; a frame the LDMA writes into it waits there, under
// the number it was written to, until the MAC `take`s it to the wire. Each frame moves whole.
class MacFifo : public DmaPort {
 public:
  uint32_t put(std::vector<uint8_t>&& frame);
  bool take(uint32_t addr, std::vector<uint8_t>* frame);
  uint32_t next() { return next_++; }  // a number for a frame the LDMA will write
  bool read(uint64_t addr, uint32_t ctx, uint8_t* out, uint32_t n) override;
  bool write(uint64_t addr, uint32_t ctx, const uint8_t* in, uint32_t n) override;
  void clear() { frames_.clear(); }
  size_t size() const { return frames_.size(); }

 private:
  uint32_t next_ = 0;
  std::map<uint32_t, std::vector<uint8_t>> frames_;
};

// A DMA engine with a descriptor ring in EM (8.3.4): posting writes a 20-byte descriptor into
// the next slot, big-endian: +0 source address, +4 destination address, +8 length, +12 status
// (bit 31: owned by the engine, bit 30: done, bit 29: error, bit 28: the engine moves the bytes
// through its ports, bit 27: from its second port to its first, bits 0-23: the descriptor's
// number), +16 context (the TLB context of a host-side address; kNoContext for none). The
// engine serves descriptors one at a time in order. When one completes it reads the descriptor
// back from EM, moves the length it names from the source to the destination through its
// ports when the move bit is set (otherwise the owner moves the bytes; see `post`), clears the
// owner bit and sets done, and raises its ring's interrupt. It knows nothing of what a
// descriptor is for: the firmware learns of the completion from the ring in EM
// (`FirmwareRing`). A descriptor that is no longer the one posted (something overwrote its
// status) is not handed back (its status stays as found) and is counted in `lost`; the
// interrupt is raised all the same. At most `ring` are outstanding: a
// descriptor for a slot whose previous one is still owned by the engine waits until it
// completes. The transfer's time is booked when the engine takes it, for the length posted.
// Addresses are host physical for the host side and EM offsets for the card side (a frame
// buffer of a FramePool, the data inside one). `reset` (a power loss) forgets every descriptor
// in flight: they move nothing and complete nothing.
class DmaEngine : public Unit {
 public:
  static constexpr uint32_t kDescBytes = 20;
  static constexpr uint32_t kOwn = 1u << 31, kDone = 1u << 30, kError = 1u << 29, kMove = 1u << 28, kBack = 1u << 27;
  // Who moves the bytes: the owner (the engine takes the time), or the engine from its first
  // port (`connect`'s source) to its second, or back from the second to the first (the ADMA,
  // whose ports are EM and host memory, reading host memory into EM).
  enum class Move : uint8_t { Owner, Forward, Back };
  static constexpr uint32_t kNoContext = ~0u;
  struct Desc {
    uint32_t src = 0, dst = 0, bytes = 0, status = 0, ctx = kNoContext;
    uint32_t slot = 0;  // where in the ring it is (not a word of it)
    uint32_t number() const { return status & 0xffffff; }
    bool done() const { return (status & kDone) != 0; }
    bool error() const { return (status & kError) != 0; }
    bool move() const { return (status & kMove) != 0; }
    bool back() const { return (status & kBack) != 0; }
  };
  using Done = std::function<void(const Desc&)>;
  DmaEngine(Calendar& cal, Em& em, uint32_t ring, double setup_ns, Stats& st, const std::string& name,
            const char* module = nullptr);
  // The ports the engine moves bytes between (source, destination).
  void connect(DmaPort* src, DmaPort* dst) {
    src_ = src;
    dst_ = dst;
  }
  // A descriptor posted at `at` whose transfer, once started at time s, ends at xfer(s).
  // The engine calls xfer when it takes the descriptor (its previous one done, this one
  // written), for a start after its setup, not when the descriptor is posted: the memories and
  // the bus are booked in the order the engines really reach them, a setup ahead at most, so a
  // deep queue books nothing ahead.
  // `read_bytes`, when the engine reads more than it writes (the PGE reads a structure's header
  // too), is what `bytes` counts. Returns the descriptor's number (all 32 bits; its status
  // holds the low 24). `move`: the engine moves the bytes through its
  // ports (the LDMA, the PGE fetching, the ADMA writing host memory and reading it for a
  // reply); otherwise their owner moves them (the ADMA's reads for an atomic's old values are
  // the command semantics', the PGE delivering into a receive structure writes its slot and
  // head, the CAU transforms in place at completion: `Cau`) and the engine takes the time.
  // xfer returns when the transfer ends: its bookings of the shared memory and bus, whose
  // ends later bookings may still delay; the engine completes when the last of them is over.
  using Xfer = std::function<Finish(uint64_t start)>;
  uint32_t post(uint64_t at, uint32_t bytes, Xfer xfer) { return post(at, 0, 0, bytes, std::move(xfer)); }
  // `src_bytes`: what the producer writes into EM at `src` together with the descriptor (when
  // its slot is free): the bytes a move takes from EM.
  uint32_t post(uint64_t at, uint64_t src, uint64_t dst, uint32_t bytes, Xfer xfer, uint32_t ctx = kNoContext, uint32_t read_bytes = ~0u,
                Move move = Move::Owner, std::vector<uint8_t> src_bytes = {});
  // The ring's interrupt line: raised once per descriptor the engine is through with (handed
  // back done, or lost), in ring order, with its slot not yet reused.
  void set_interrupt(std::function<void()> irq) { irq_ = std::move(irq); }
  // What the unit itself does at a completion, after the move and the done status and before
  // the interrupt (the CAU transforms the frame in place then).
  void set_completion(std::function<void(const Desc&)> fn) { at_completion_ = std::move(fn); }
  // Descriptors the engine is through with (numbers below this one).
  uint32_t handed() const { return handed_; }
  uint32_t posted() const { return posted_; }
  void reset();
  Desc desc(uint32_t slot) const;  // the descriptor in a slot, as it is in EM
  uint32_t next_slot() const { return posted_ % ring_; }  // the slot the next post takes
  uint32_t next_number() const { return posted_ & 0xffffff; }  // the number its status gets
  uint64_t busy_ps() const { return busy_.value; }
  uint32_t ring_offset() const { return ring_off_; }  // where the ring lies in EM
  uint32_t ring() const { return ring_; }

 private:
  void write_desc(uint32_t slot, uint64_t src, uint64_t dst, uint32_t bytes, uint32_t status, uint32_t ctx,
                  const std::vector<uint8_t>& src_bytes);
  struct Entry {
    uint32_t number;
    uint64_t at;  // when its producer writes it (once its slot is free)
    Desc posted;  // as the producer writes it into the ring (the engine works from the ring)
    std::vector<uint8_t> src_bytes;
    Xfer xfer;
    bool written = false;
    uint64_t start = 0;  // its transfer's start, once taken
    Finish finish;       // and end
  };
  void schedule_write(Entry& e);
  void written(Entry& e);
  void try_start();
  void begin(uint64_t start);
  void arm();  // completes the front when its transfer is over
  void complete();
  Calendar& cal_;
  Em& em_;
  uint32_t ring_;
  uint32_t ring_off_;
  uint64_t setup_ps_;
  uint32_t posted_ = 0;
  uint32_t handed_ = 0;
  uint64_t epoch_ = 0;  // reset() makes the descriptors in flight stale
  std::deque<Entry> q_;  // posted and not complete, oldest first; the engine serves the front
  bool running_ = false;  // the front is being transferred (or set up)
  std::function<void()> irq_;
  std::function<void(const Desc&)> at_completion_;
  DmaPort* src_ = nullptr;
  DmaPort* dst_ = nullptr;
  std::vector<uint8_t> staging_;
  Counter &descs_, &bytes_, &busy_, &ring_full_, &lost_, &errors_;
};

// The PME firmware's side of a descriptor ring (8.3.4: "on completion of DMA processing, the
// PME must collect the used entry of the descriptor"): a table of what each descriptor it
// posted is for (the routine to continue with), kept in order of the descriptors' numbers, and
// its collection pointer. The engine's ring interrupt runs the collection: from the pointer
// on, each entry the engine is through with is read from the ring in EM; one handed back (done
// set, its number the one expected) continues the routine the table names for it, with the
// descriptor as read; one lost continues nothing. Continuations run in ring order. A routine
// may also wait for a descriptor (`when_done`: the receive routine for its ADMA writes). Not
// a hardware unit: state of the firmware, lost with EM on a power loss (`reset`).
class FirmwareRing {
 public:
  FirmwareRing(Calendar& cal, DmaEngine& engine);
  DmaEngine& engine() { return e_; }
  // Posts a descriptor (DmaEngine::post) and notes `done` for it in the table.
  uint32_t post(uint64_t at, uint64_t src, uint64_t dst, uint32_t bytes, DmaEngine::Xfer xfer, DmaEngine::Done done = {},
                uint32_t ctx = DmaEngine::kNoContext, uint32_t read_bytes = ~0u, DmaEngine::Move move = DmaEngine::Move::Owner,
                std::vector<uint8_t> src_bytes = {});
  // Notes `done` for descriptor `number`, just posted through a unit's own interface (the
  // CAU's). Numbers must be noted in the order they were posted.
  void expect(uint32_t number, DmaEngine::Done done);
  // Runs `fn` once descriptor `number` has been collected (at once if it has, or if a reset lost
  // it; after a reset, from the calendar).
  void when_done(uint32_t number, std::function<void()> fn);
  bool finished(uint32_t number) const { return static_cast<int32_t>(collected_ - number) > 0; }
  // A power loss: the engine forgets what it had in flight, the table is lost with EM.
  void reset();

 private:
  void collect();  // the ring's interrupt
  Calendar& cal_;
  DmaEngine& e_;
  uint32_t collected_;  // the number of the next entry to collect
  uint64_t epoch_ = 0;
  std::deque<std::pair<uint32_t, DmaEngine::Done>> table_;
  std::vector<std::pair<uint32_t, std::function<void()>>> waiters_;
};

// ------------------------------------------------------------------ frame buffers

// Fixed-size frame buffers carved in EM (8.3.3-8.3.4): a frame is bytes in one of them between
// the units that handle it. The MAC transmits what the LDMA reads from a transmit buffer; the
// LDMA writes a received frame into a receive buffer, where the CAU opens it in place and the
// PME's routines read it. A buffer is owned by one frame from `alloc` to `release`. A power
// loss empties EM: `reset` frees every buffer, and releases of buffers taken before it (by
// work still in flight) are ignored.
class FramePool : public Unit {
 public:
  static constexpr uint32_t kBufBytes = 1536;  // 1514-byte frame, in whole 32-byte bursts
  struct Buf {
    int32_t idx = -1;
    uint64_t serial = 0;  // which allocation (a buffer's later owners have later ones)
    uint32_t len = 0;     // bytes of the frame in it
    bool valid() const { return idx >= 0; }
  };
  FramePool(Em& em, uint32_t count, Stats& st, const std::string& name);
  // A free buffer (lowest index first), or false (counted in `exhausted`) when none is.
  bool alloc(Buf* b);
  void release(const Buf& b);
  // Writes a frame into the buffer (its length becomes the frame's), and reads it back.
  void put(Buf& b, const std::vector<uint8_t>& frame);
  std::vector<uint8_t> get(const Buf& b) const;
  uint32_t offset(const Buf& b) const { return base_ + static_cast<uint32_t>(b.idx) * kBufBytes; }
  bool live(const Buf& b) const { return b.valid() && owner_[b.idx] == b.serial; }
  void reset();
  uint32_t count() const { return static_cast<uint32_t>(owner_.size()); }
  uint32_t in_use() const { return in_use_; }

 private:
  Em& em_;
  uint32_t base_;
  std::vector<uint64_t> owner_;  // the serial of the allocation holding each buffer, 0: free
  uint32_t in_use_ = 0;
  uint64_t serial_ = 0, reset_at_ = 0;
  Counter &allocs_, &exhausted_, &high_;
};

// ------------------------------------------------------------------ CSU, OCU

// The CSU (8.2): TCP and UDP checksums computed on the data as it streams into EM, by CSU-T on
// the PGE's writes of a packet image and by CSU-R on the LDMA's writes of a received frame. It
// adds no time (it runs beside the stream); the PME reads its result from the descriptor and
// adds the pseudo-header. Without one, the PME's firmware sums the frame's words itself.
class Csu : public Unit {
 public:
  Csu(Stats& st, const std::string& name);
  // CSU-T: the checksum of an image whose checksum field is zero.
  uint16_t transmit(const std::vector<uint8_t>& frame);
  // CSU-R: true when the frame's checksum verifies.
  bool receive(const std::vector<uint8_t>& frame);
  // CSU-R on an IP fragment: a partial sum over its piece, which the PME keeps (a piece alone
  // has no verdict); `joined` is the PME's fold of a reassembled datagram's partial sums with
  // its pseudo-header: true when the whole datagram verifies.
  void fragment(const std::vector<uint8_t>& frame);
  bool joined(const std::vector<uint8_t>& whole);

 private:
  Counter &tx_, &rx_, &bad_, &bytes_;
};

// The OCU (8.2): checks packet order for TCP and MBCF as frames arrive. It holds, per register
// (a TCP connection, or an MBCF peer), the next sequence number expected; a segment is in order,
// a duplicate (entirely before it) or beyond a gap. The PME advances the register when it
// delivers.
class Ocu : public Unit {
 public:
  enum class Order : uint8_t { InOrder, Duplicate, Gap };
  Ocu(uint32_t registers, Stats& st, const std::string& name);
  uint32_t registers() const { return static_cast<uint32_t>(next_.size()); }
  void arm(uint32_t reg, uint32_t next);
  // Sequence numbers compare in a 32-bit space (RFC 793): `seq` before `next` is a duplicate.
  Order check(uint32_t reg, uint32_t seq);
  // MBCF's mode: END_P counts packets modulo 256 and Go-back-N keeps fewer than 128
  // outstanding, so up to 128 behind the register's next (the last arrived among them) is a
  // duplicate and up to 126 beyond it is past a gap.
  Order check_end_p(uint32_t reg, uint8_t end_p);
  void advance(uint32_t reg, uint32_t next) { next_.at(reg) = next; }
  uint32_t expected(uint32_t reg) const { return next_.at(reg); }

 private:
  std::vector<uint32_t> next_;
  Counter &in_order_, &dups_, &gaps_;
};

// ------------------------------------------------------------------ crypto units (CAU, MEAC1024)

struct CryptoConfig {
  // Every member is a parameter of `params()` (mbp2_params.cpp), which gives it its default.
  CryptoConfig();
  Cipher cipher{};
  Auth auth{};
  enum class Keys { Static, Dh } keys{};
  std::string secret;  // pre-shared secret when keys are static
  bool cau{};                // CAU hardware (MBP2C); false: PME firmware (MBP2P, 8.4)
  double cau_clock_mhz{};
  double des_cycles_per_block{};    // one DES pass over 8 bytes
  double hash_cycles_per_block{};  // one 64-byte compression
  double cau_setup_ns{};
  double cau_desc_instr{};         // PME: write a CAU descriptor
  double fw_setup_instr{};        // firmware: per frame (IV, key schedule pointers, loop set-up)
  double fw_des_instr_per_block{};
  double fw_hash_instr_per_block{};
  bool meac{};                   // MEAC1024 on the card; false: modular arithmetic in firmware
  double meac_clock_mhz{};
  double meac_modmul_cycles{};    // one 1024-bit multiply and reduction
  double meac_op_instr{};          // PME: start one MEAC operation, take its result
  double fw_modmul_instr{};      // firmware: one 1024-bit Montgomery multiplication
  double kx_timeout_us{};       // key-exchange message not answered: sent again
  uint32_t kx_tries{};              // INITs unanswered before the exchange is given up
  // Frames sealed under one SA before a new one is made (RFC 4303 3.3.3: the 32-bit sequence
  // number must not cycle). dh keys: a new exchange; static keys cannot be renewed, so the
  // NIC stops sealing for that peer.
  uint64_t rekey_frames{};
  bool enabled() const { return cipher != Cipher::None || auth != Auth::None; }
  static const ParamTable<CryptoConfig>& params();
};

// The CAU: DES or triple DES and a keyed hash with DMA engines of its own, reading a frame from
// EM and writing the result back (8.3.3). The cipher and hash engines work on the stream side by
// side (encrypt-then-MAC hashes the ciphertext as it leaves the cipher), so a frame takes the
// longer of the two, plus its descriptor's set-up.
//
// It works from its descriptors and EM alone. Its keys are key blocks in EM's key slots
// (`key_slot_offset`), which the PME fills with key-load descriptors in the CAU's own ring (a
// move from a staging block to the slot): a frame posted before a load uses the slot's keys
// before it, one posted after the new ones, so the PME may reuse a slot while frames sealed
// under its old keys are still in the ring. A transform's descriptor names the frame (source
// and destination: in place), its length, and in its fifth word the operation (bits 24-31)
// and the key slot (bits 0-23). At completion the CAU reads the key block and the frame from
// EM as they are then, seals or opens the frame there, and leaves in the descriptor, for the
// PME to collect, the result's length and, on a failure, the error bit and the reason (`verdict`); a failed
// transform writes nothing. It keeps the key schedule of each slot's block (recomputed when
// the block in EM changed) and reads a block again from EM (charged) when it uses a slot
// other than the last one.
class Cau : public Unit {
 public:
  enum class Op : uint8_t { Seal = 1, Open = 2 };
  enum class Error : uint8_t { None, Truncated, BadLength, BadIcv, BadPadding, BadKey, BadRequest };
  static const char* to_string(Error e);
  static constexpr uint32_t kMaxFrame = 1514;  // what a sealed frame may grow to (Ethernet's MTU)
  // The reason a completed descriptor carries (bits 24-26 of its status).
  static Error verdict(const DmaEngine::Desc& d);
  // The transform itself (what the CAU's engines do, and the PME's firmware without them).
  static Error apply(const SecurityAssociation& sa, Op op, std::vector<uint8_t>& frame);
  Cau(Calendar& cal, const CryptoConfig& c, uint32_t ring, uint32_t key_slots, Em& em, Stats& st, const std::string& name);
  uint64_t compute_ps(uint32_t cipher_blocks, uint32_t hash_blocks) const;
  // Loads a key block into a slot, through the ring, in order with the frames.
  void load_key(uint64_t at, uint32_t slot, std::vector<uint8_t> block);
  // A frame of `bytes` at EM offset `off`, posted at `at`, sealed or opened in place under the
  // keys of `slot`; when the result is in EM the descriptor (returned: its number) is done, and
  // the ring's firmware finds it so.
  // `out`: the bytes it will write (a sealed frame is longer; an opened one is at most as long).
  uint32_t run(uint64_t at, Op op, uint32_t slot, uint32_t off, uint32_t bytes, uint32_t out, uint32_t cipher_blocks, uint32_t hash_blocks);
  DmaEngine& engine() { return dma_; }
  uint32_t key_slot_offset(uint32_t slot) const { return keys_off_ + slot * SecurityAssociation::kKeyBlockBytes; }
  uint32_t key_slots() const { return slots_; }
  uint64_t busy_ps() const { return dma_.busy_ps(); }
  // EM the CAU's ring, key slots and key staging take.
  static uint64_t em_bytes(uint32_t ring, uint32_t key_slots);

 private:
  void transform(const DmaEngine::Desc& d);
  CryptoConfig c_;
  Em& em_;
  EmPort port_;
  DmaEngine dma_;
  uint32_t slots_, keys_off_, staging_off_;
  uint32_t last_slot_ = ~0u;  // the slot whose block the CAU read last (its key registers)
  struct Schedule {
    std::array<uint8_t, SecurityAssociation::kKeyBlockBytes> block{};
    bool sa_made = false;  // `sa` is the schedule of `block` (null: no key)
    std::unique_ptr<SecurityAssociation> sa;
  };
  std::vector<Schedule> schedules_;
  Counter &transforms_, &failures_, &key_loads_;
};

// The MEAC1024: 1024-bit modular multiplication and reduction (IBM), one operation at a time.
class Meac : public Unit {
 public:
  Meac(const CryptoConfig& c, Stats& st, const std::string& name);
  uint64_t modmul_ps() const;
  // `modmuls` operations submitted from `at`: returns when the last result is ready.
  uint64_t run(uint64_t at, uint32_t modmuls);

 private:
  CryptoConfig c_;
  uint64_t free_ = 0;
  Counter &ops_, &busy_;
};

}  // namespace mbpsim::mbp2
