#include "models/systems/assembly.h"

#include <string>


namespace mbpsim::systems {

std::unique_ptr<mbp::System> make_mbp_machine(const Config& c, net::Network& net, Stats& stats, uint64_t seed) {
  const node::NodeConfig nc = node::NodeConfig::from(c);
  const mbp::MbpConfig mc = mbp::MbpConfig::from(c);
  // A multicast update carries a block and moves by virtual cut-through.
  const uint32_t flit_bytes = static_cast<uint32_t>(net.config().flit_bits / 8);
  const uint32_t upd = mc.header_flits + (nc.block_bytes + flit_bytes - 1) / flit_bytes;
  if (upd > static_cast<uint32_t>(net.config().buffer_depth))
    c.fail("network.buffer_depth", "multicast updates of " + std::to_string(upd) + " flits (mbp.header_flits + a " +
                                       std::to_string(nc.block_bytes) + "-byte block) need network.buffer_depth >= " +
                                       std::to_string(upd));
  return std::make_unique<mbp::System>("mbp", nc, mc, net, stats, seed);
}

void mbp_machine_footprint(const Config& c, uint64_t nodes, const AddressUse& use, MemoryForecast& f) {
  mbp::System::footprint(node::NodeConfig::from(c), mbp::MbpConfig::from(c), nodes, use, f);
}

Cluster build_cluster(Calendar& cal, const mbcf::EtherSysConfig& ec, const mbp2::Mbp2Config* mbp2, Stats& stats, uint64_t seed) {
  Cluster k;
  if (!mbp2) {
    k.sys = std::make_unique<mbcf::EtherSystem>(cal, ec, stats, seed);
    return k;
  }
  // The cards first: the cluster calls their factories for each host as it builds it.
  k.mbp2 = std::make_unique<mbp2::Mbp2Cards>(cal, ec, *mbp2, stats, seed);
  k.sys = std::make_unique<mbcf::EtherSystem>(cal, ec, stats, seed, k.mbp2->nics(), k.mbp2->firmware());
  return k;
}

Cluster make_cluster(Calendar& cal, const Config& c, Stats& stats, uint64_t seed) {
  const mbcf::EtherSysConfig ec = mbcf::EtherSysConfig::from(c);
  const bool mbp2 = c.get_string("mbcf.nic") == "mbp2";
  if (!mbp2 && (c.get_string("crypto.cipher") != "none" || c.get_string("crypto.auth") != "none"))
    c.fail(c.get_string("crypto.cipher") != "none" ? "crypto.cipher" : "crypto.auth",
           "encryption is done by the MBP2's CAU or firmware: needs mbcf.nic = mbp2");
  const bool sockets = c.get_string("workload.over") != "mbcf";
  if (sockets && mbp2)
    c.fail("workload.over", "the socket stacks run on hosts with conventional NICs (the MBP2 carries IP in its own firmware: workload.kind datagram)");
  if (!mbp2) {
    Cluster cl = build_cluster(cal, ec, nullptr, stats, seed);
    if (sockets) cl.inet = sockets::InetStack::attach(cal, *cl.sys, sockets::SocketConfig::from(c), stats);
    return cl;
  }
  const mbp2::Mbp2Config mc = mbp2::Mbp2Config::from(c);
  return build_cluster(cal, ec, &mc, stats, seed);
}

void cluster_footprint(const Config& c, MemoryForecast& f) {
  const mbcf::EtherSysConfig ec = mbcf::EtherSysConfig::from(c);
  mbcf::EtherSystem::footprint(ec, f);
  if (c.get_string("mbcf.nic") == "mbp2") mbp2::Mbp2Cards::footprint(ec, mbp2::Mbp2Config::from(c), f);
}

}  // namespace mbpsim::systems
