// Where the simulated machines are assembled from a run's config: the MBP machine on the
// quad-tree network, and the cluster of chapters 6 and 8 (hosts on an Ethernet segment with
// their NICs). Workloads drive a machine; they do not choose or build its parts.
#pragma once
#include <cstdint>
#include <memory>

#include "models/core/calendar.h"
#include "models/core/config.h"
#include "models/core/stats.h"
#include "models/mbcf/ether_system.h"
#include "models/mbp/system.h"
#include "models/mbp2/mbp2_cards.h"
#include "models/net/network.h"
#include "models/sockets/inet_stack.h"

namespace mbpsim::systems {

// The MBP machine (node.*, mbp.*) on `net`. A config error names its key (Config::fail):
// multicast updates that do not fit network.buffer_depth.
std::unique_ptr<mbp::System> make_mbp_machine(const Config& c, net::Network& net, Stats& stats, uint64_t seed);

// Adds to `f` the host memory the MBP machine of `c` on a network of `nodes` nodes holds when
// its processors touch `use` (mbp::System::footprint).
void mbp_machine_footprint(const Config& c, uint64_t nodes, const AddressUse& use, MemoryForecast& f);

// A cluster as built: the hosts, their NICs, the segment and the MBCF protocol that wires them
// (mbcf::EtherSystem), and, when the NICs are MBP2 cards, the cards (which run the protocol's
// firmware on their PMEs). Composed, not inherited: the cards are the cluster's NIC and
// executor factories. Members go in reverse order, the cards before the hosts they sit in.
struct Cluster {
  std::unique_ptr<mbcf::EtherSystem> sys;
  std::unique_ptr<mbp2::Mbp2Cards> mbp2;  // null with conventional NICs
  // The hosts' UDP/IP socket stacks (host<n>.inet), beside MBCF's: built when the workload runs
  // over sockets (workload.over udp); empty otherwise.
  std::vector<std::unique_ptr<sockets::InetStack>> inet;
};

// The cluster of `ec`: conventional NICs and the host kernel's MBCF, or, given `mbp2`, MBP2
// cards of that configuration.
Cluster build_cluster(Calendar& cal, const mbcf::EtherSysConfig& ec, const mbp2::Mbp2Config* mbp2, Stats& stats, uint64_t seed);

// The cluster (mbcf.*, host.*, nic.*, bus.*, ether.*): hosts running the MBCF kernel behind a
// conventional NIC, or, with mbcf.nic = mbp2, behind MBP2 NICs (mbp2.*, pme.*, em.*, crypto.*);
// with workload.over = udp, each host's socket stack too (sockets.*). A config error names its
// key: encryption asked of a NIC that has none, sockets over the MBP2.
Cluster make_cluster(Calendar& cal, const Config& c, Stats& stats, uint64_t seed);
// Adds to `f` the host memory the cluster of `c` holds (EtherSystem::footprint, and the cards').
void cluster_footprint(const Config& c, MemoryForecast& f);

}  // namespace mbpsim::systems
