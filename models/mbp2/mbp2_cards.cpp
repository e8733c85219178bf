// The MBP2 cards of a cluster: one card per host, built as the cluster builds its hosts, and
// what they share. A card's own behaviour is Mbp2Nic's (mbp2_nic.h).
#include "models/mbp2/mbp2_cards.h"

#include "models/core/error.h"

namespace mbpsim::mbp2 {

Mbp2Cards::Mbp2Cards(Calendar& cal, const mbcf::EtherSysConfig& ec, const Mbp2Config& c, Stats& st, uint64_t seed)
    : cal_(cal), stats_(st), c_(ec), m_(c), iv_rng_(seed, "mbp2.cau.iv") {
  if (c.crypto.enabled()) frame_overhead_ = seal_overhead(c.crypto.cipher, c.crypto.auth);
}

Mbp2Cards::~Mbp2Cards() = default;

mbcf::EtherSystem::MakeNic Mbp2Cards::nics() {
  return [this](uint32_t n, net::EtherSegment& wire) -> std::unique_ptr<mbcf::Nic> {
    // The cluster builds its hosts' NICs in node order, each inside its host (host<n>.nic, the
    // units its children), after the node's executor.
    // The executor factory (firmware()) names the cluster: a cluster given the cards' NICs
    // without their firmware has none.
    if (!sys_) internal_error("MBP2 card " + std::to_string(n) + ": the cluster was given nics() without firmware()");
    if (n != nics_.size() || n >= c_.nodes) internal_error("MBP2 card " + std::to_string(n) + " built out of order");
    nics_.push_back(std::make_unique<Mbp2Nic>("nic", *this, n, wire));
    return nics_.back()->port();
  };
}

mbcf::EtherSystem::MakeExecutor Mbp2Cards::firmware() {
  return [this](uint32_t node, mbcf::EtherSystem& sys) -> std::unique_ptr<mbcf::Executor> {
    if (sys_ && sys_ != &sys) internal_error("MBP2 cards given to two clusters");
    sys_ = &sys;
    return std::make_unique<Mbp2Nic::Firmware>(*this, node);
  };
}

Mbp2Nic& Mbp2Cards::nic(uint32_t node) {
  if (node >= nics_.size()) internal_error("no MBP2 card on node " + std::to_string(node));
  return *nics_[node];
}

const Mbp2Nic& Mbp2Cards::nic(uint32_t node) const {
  if (node >= nics_.size()) internal_error("no MBP2 card on node " + std::to_string(node));
  return *nics_[node];
}

Mbp2Nic& Mbp2Nic::Firmware::n() const { return cards_.nic(node_); }

void Mbp2Cards::footprint(const mbcf::EtherSysConfig& ec, const Mbp2Config& c, MemoryForecast& f) {
  const uint64_t n = ec.nodes;
  f.add("card memories", n * heap_bytes(Mbp2Nic::em_bytes_needed(c, ec.rx_ring, ec.nodes)), "mbcf.nodes, mbp2.ring_entries, mbcf.rx_ring, mbp2.request_slots");
  // A card's units (PME, DMA engines, TLB, ULI, KLI, CAU, MAC FIFOs) as modules, with their
  // statistics and the frames in their FIFOs. Calibrated, not derived: peak RSS of mbcf_tester
  // on 16 and 64 hosts with MBP2 cards, less the host's share and the card memory, is 360 KiB
  // per card (docs/PERFORMANCE.md, "Predicted memory").
  constexpr uint64_t kCardBytes = 360 * 1024;
  f.add("cards", n * kCardBytes, "mbcf.nodes");
}

}  // namespace mbpsim::mbp2
