// Parameters of the Ethernet segment (ether.*). Defaults: the thesis's first cluster (6.2.1),
// 100BASE-TX through a non-switching hub, with Sun's FastEthernet MACs.
#include "models/core/params.h"
#include "models/net/ether.h"

namespace mbpsim::net {

const ParamTable<EtherConfig>& EtherConfig::params() {
  static const ParamTable<EtherConfig> t = ParamTable<EtherConfig>()
      .add_choice(&EtherConfig::medium, {"ether.medium", "hub", "", "hub (half duplex, CSMA/CD) | switch (full duplex) | direct (a cable between two nodes)"},
                  {{"hub", EtherConfig::Medium::Hub}, {"switch", EtherConfig::Medium::Switch}, {"direct", EtherConfig::Medium::Direct}})
      .add(&EtherConfig::rate_mbps, {"ether.rate_mbps", 100.0, "Mb/s", "10, 100 or 1000", 1, 1e5})
      .add(&EtherConfig::lance_mode, {"ether.lance_mode", true, "",
         "half duplex: the MAC waits ether.ipg0_nibbles more before it transmits after another station's frame (the FEPS ASIC of the SS20's FastEthernet adapter: \"lance_mode\", on by default; hme(7D) platform notes, 1996)"})
      .add(&EtherConfig::ipg0_nibbles, {"ether.ipg0_nibbles", 16, "nibble times", "the LANCE-mode gap: 16 nibble times (hme default), 6.4 us at 10 Mb/s, 0.64 us at 100 Mb/s", 0, 31})
      .add(&EtherConfig::prop_ns, {"ether.prop_ns", 560.0, "ns", "station to station: 2 x 10 m of cable (5 ns/m) plus a class II repeater (46 bit times) or a switch port", 0, 1e9})
      .add(&EtherConfig::switch_latency_ns, {"ether.switch_latency_ns", 3000.0, "ns", "switch: forwarding decision after a frame is in (store-and-forward)", 0, 1e9})
      .add(&EtherConfig::switch_queue_frames, {"ether.switch_queue_frames", 64, "frames", "switch output queue; tail drop beyond", 1, 1 << 20})
      .add(&EtherConfig::loss, {"ether.loss", 0.0, "", "injected Bernoulli loss per frame", 0, 1})
      .add(&EtherConfig::burst_enter, {"ether.burst_enter", 0.0, "", "injected burst loss: probability per frame of entering a loss burst (Gilbert-Elliott)", 0, 1})
      .add(&EtherConfig::tamper, {"ether.tamper", 0.0, "", "injected tampering: probability per delivered frame that an attacker alters one byte after the Ethernet header (with a valid FCS)", 0, 1})
      .add(&EtherConfig::burst_leave, {"ether.burst_leave", 1.0, "", "probability per frame of leaving a loss burst", 0, 1})
      .add(&EtherConfig::duplicate, {"ether.duplicate", 0.0, "", "injected fault: probability per delivered frame that a second copy arrives up to ether.reorder_max_ns later", 0, 1})
      .add(&EtherConfig::reorder, {"ether.reorder", 0.0, "", "injected fault: probability per delivered frame that it is held back up to ether.reorder_max_ns, so later frames overtake it", 0, 1})
      .add(&EtherConfig::blackhole_every_us, {"ether.blackhole_every_us", 0.0, "us", "injected fault: mean gap between blackhole periods of each station (exponential, seeded per station; 0: never)", 0, 1e12})
      .add(&EtherConfig::blackhole_us, {"ether.blackhole_us", 1000.0, "us", "length of a blackhole period: every frame to the station is lost", 0, 1e12})
      .add(&EtherConfig::reorder_max_ns, {"ether.reorder_max_ns", 100000.0, "ns", "longest extra delay of a duplicated or reordered frame (the path's bounded lifetime)", 1, 1e9});
  return t;
}

EtherConfig::EtherConfig() { params().set_defaults(*this); }

}  // namespace mbpsim::net
