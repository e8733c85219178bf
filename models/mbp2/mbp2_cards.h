// The MBP2 cards of a cluster (thesis chapter 8): one `Mbp2Nic` per host (mbp2_nic.h). This
// class is not a cluster itself but gives one (mbcf::EtherSystem) its NICs and its executors
// through the factories `nics()` and `firmware()`; models/systems/assembly.cpp builds the two
// together. It owns the cards and what they share.
#pragma once
#include <memory>
#include <vector>

#include "models/mbcf/ether_system.h"
#include "models/mbp2/mbp2_config.h"
#include "models/mbp2/mbp2_nic.h"

namespace mbpsim::mbp2 {

class Mbp2Cards {
 public:
  // The cards of a cluster of `ec.nodes` hosts. Nothing is built until the cluster is: give
  // `nics()` and `firmware()` to its constructor (EtherSystem::MakeNic, MakeExecutor), which
  // calls them for each host, the card then built inside the host (host<n>.nic).
  // The cards must be destroyed before the cluster (their units are its hosts' children).
  Mbp2Cards(Calendar& cal, const mbcf::EtherSysConfig& ec, const Mbp2Config& c, Stats& st, uint64_t seed);
  Mbp2Cards(const Mbp2Cards&) = delete;
  Mbp2Cards& operator=(const Mbp2Cards&) = delete;
  ~Mbp2Cards();
  mbcf::EtherSystem::MakeNic nics();
  mbcf::EtherSystem::MakeExecutor firmware();
  // The cluster the cards are in (once it is built).
  mbcf::EtherSystem& cluster() const { return *sys_; }
  // Host `node`'s card (once the cluster built it).
  Mbp2Nic& nic(uint32_t node);
  const Mbp2Nic& nic(uint32_t node) const;
  // Adds the host memory the cards of a cluster of `ec` hold to `f` before they are built: the
  // card memory the NIC carves (em_bytes_needed: EM holds bytes as far as they are written) and
  // the units of each card.
  static void footprint(const mbcf::EtherSysConfig& ec, const Mbp2Config& c, MemoryForecast& f);
  const Mbp2Config& mbp2_config() const { return m_; }

 private:
  friend class Mbp2Nic;
  Calendar& cal_;
  Stats& stats_;
  mbcf::EtherSystem* sys_ = nullptr;  // the cluster (its executor factory's argument)
  const mbcf::EtherSysConfig c_;  // the cluster's (EtherSystem::config: the same values)
  const Mbp2Config m_;
  // Bytes sealing adds to every frame (0 without crypto).
  uint32_t frame_overhead_ = 0;
  std::vector<std::unique_ptr<Mbp2Nic>> nics_;
  Rng iv_rng_;  // IVs of sealed frames, Diffie-Hellman private values (one stream for all cards)
  uint64_t timer_serial_ = 0;  // TCP's timers, each armed with a fresh serial
  uint64_t sa_serial_ = 0;
};

}  // namespace mbpsim::mbp2
