// EM: the card-embedded memory, one port shared by four routes (8.2, 8.3.4), and a DMA transfer
// between host memory and EM.
#pragma once
#include "models/mbp2/host_bus.h"

namespace mbpsim::mbp2 {

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

// EM as a DMA port.
class EmPort : public DmaPort {
 public:
  explicit EmPort(Em& em) : em_(em) {}
  bool read(uint64_t addr, uint32_t ctx, uint8_t* out, uint32_t n) override;
  bool write(uint64_t addr, uint32_t ctx, const uint8_t* in, uint32_t n) override;

 private:
  Em& em_;
};

}  // namespace mbpsim::mbp2
