// Parameters of MBCF/Ether. Defaults describe the thesis's first cluster (6.2.1): SPARCstation
// 20 compatibles, 85 MHz SuperSPARC, 32-bit 25 MHz SBus, Sun FastEthernet SBus Adapter 2.0,
// 100BASE-TX through a non-switching hub. Where a value is calibrated, the comment says on
// which published figure; everything else is a hardware fact or a prediction.
#include "models/core/config.h"
#include "models/mbcf/ether_system.h"

namespace mbpsim::mbcf {

void declare_mbcf_params(ParamSchema& s) {
  using T = ParamType;
  s.add({"mbcf.nodes", T::Int, 2, "", "nodes (workstations) on the Ethernet segment", 2, 254});
  s.add({"mbcf.page_bytes", T::Int, 4096, "bytes", "MMU page size (SuperSPARC: 4 KiB; UltraSPARC: 8 KiB)", 512, 1 << 20});
  s.add({"mbcf.interface", T::String, "kernel", "", "request construction (6.1.3): kernel (pointers handed to the system call) | user (user builds the packet body)"});
  s.add({"mbcf.th1", T::Int, 16, "packets", "Go-back-N TH1 (= N): uncollected buffers at which an ack is requested (6.1.4)", 1, 127});
  s.add({"mbcf.th2", T::Int, 64, "packets", "Go-back-N TH2: uncollected buffers at which a sender blocks", 1, 127});
  s.add({"mbcf.th1_min", T::Int, 2, "packets", "lowest TH1 when buffers run short", 1, 127});
  s.add({"mbcf.tx_buffers", T::Int, 256, "buffers", "kernel send buffers per node (NIC-DMA area); TH1 halves above 3/4 use", 4, 1 << 20});
  s.add({"mbcf.rx_ring", T::Int, 64, "buffers", "receive ring of the NIC; a frame arriving to a full ring is lost", 1, 1 << 20});
  s.add({"mbcf.ack_timeout_us", T::Double, 20000.0, "us", "no acknowledgement progress for this long: resend the oldest, handshaked (two ticks of the 100 Hz kernel clock)", 1, 1e9});
  s.add({"mbcf.resend_timeout_us", T::Double, 20000.0, "us", "a resend request unanswered for this long may be sent again", 1, 1e9});
  s.add({"mbcf.max_timeouts", T::Int, 32, "", "timeouts in a row after which a silent peer is probed with exponential back-off (its packets are kept)", 1, 1e6});
  s.add({"mbcf.stuck_us", T::Double, 60e6, "us",
         "network stuck check: a pair of nodes with packets unacknowledged and no acknowledgement progress for this long stops the run with exit status 2 and a dump of the oldest unacknowledged packets (0: never; a peer powered off for good is stuck too)",
         0, 1e12});
  s.add({"mbcf.max_backoff_us", T::Double, 1e6, "us", "longest probe interval for a silent peer (1 s, TCP's minimum retransmission timeout, RFC 6298)", 1, 1e9});
  s.add({"mbcf.save_area", T::Int, 64, "packets",
         "kernel save area of 3.4.2 for packets to tasks waiting for a page-in (besides each task's faulting one); when full such a packet is not accepted and comes again through Go-back-N, and a local request waits",
         1, 1 << 20});
  s.add({"mbcf.page_in_us", T::Double, 10000.0, "us", "time to page a swapped-out page back in (a disk access)", 0, 1e9});

  s.add({"host.cpu_mhz", T::Double, 85.0, "MHz", "host processor clock (SuperSPARC of the SS20: 85 MHz)", 1, 1e5});
  s.add({"host.syscall_cycles", T::Double, 306.0, "cycles", "MBCF-requesting system call, fixed part: 3.6 us, the logic-analyser figure of 6.2.2 (3.4-3.8 us) [calibrated]", 0, 1e9});
  s.add({"host.copy_mb_s", T::Double, 68.0, "MB/s", "kernel copy bandwidth: the slope of Table 6.1, (20.0-5.0) us / 1020 B = 14.7 ns/B [calibrated]", 0.001, 1e6});
  s.add({"host.int_entry_cycles", T::Double, 85.0, "cycles", "receive interrupt entry and exit, per interrupt: trap plus checking and resetting the NIC across two external buses (~0.5 us each, 6.2.2)", 0, 1e9});
  s.add({"host.int_packet_cycles", T::Double, 459.0, "cycles", "receive routine per packet: 6.4 us measured in 6.2.2 (Fig. 6.4) less the entry", 0, 1e9});
  s.add({"host.int_command_cycles", T::Double, 40.0, "cycles", "each further command of a combined packet (decode and dispatch)", 0, 1e9});
  s.add({"host.reply_cycles", T::Double, 128.0, "cycles", "building a reply (or a multicast copy) in the interrupt routine: the header part of a send, 1.5 us", 0, 1e9});
  s.add({"host.ack_cycles", T::Double, 170.0, "cycles", "handling an acknowledgement-only or rejected packet (protocol part only)", 0, 1e9});
  s.add({"host.tx_done_cycles", T::Double, 745.0, "cycles", "transmit-completion routine per frame (third low state of Fig. 6.3), 8.76 us; 0: no completion interrupt [calibrated: least squares, in log ratio, on the six host-bound points of Table 6.2 (4-64 bytes of the 100BASE-TX and 100BASE-T rows), where the sender's host sets the rate; docs/VALIDATION.md]", 0, 1e9});
  s.add({"host.poll_cycles", T::Double, 20.0, "cycles", "one iteration of a status-polling loop on a cached word", 0, 1e9});
  s.add({"host.lw_syscall_cycles", T::Double, 170.0, "cycles", "light-weight system call (FIFO read, signal-flag reset): trap, no context switch", 0, 1e9});
  s.add({"host.invoke_cycles", T::Double, 425.0, "cycles", "invoking a user-level program for MBCF_SIGNAL (upcall and return)", 0, 1e9});
  s.add({"host.atomic_word_cycles", T::Double, 6.0, "cycles", "per 32-bit word of an atomic command (load, operate, store)", 0, 1e9});
  s.add({"host.user_build_cycles", T::Double, 40.0, "cycles", "user construction: filling the packet body's fixed fields in user mode", 0, 1e9});
  s.add({"host.timer_read_us", T::Double, 1.2, "us", "cost of reading the clock counter, included in measured latencies (6.2.2: 1.2 us on the SS20)", 0, 1e6});

  s.add({"bus.kind", T::String, "sbus", "", "host I/O bus: sbus | pci (informational; timing comes from the fields below)"});
  s.add({"bus.clock_mhz", T::Double, 25.0, "MHz", "I/O bus clock (SBus of the SS20: 25 MHz)", 1, 1e5});
  s.add({"bus.width_bytes", T::Double, 4.0, "bytes", "data bytes per bus cycle (SBus: 32 bits)", 1, 64});
  s.add({"bus.burst_bytes", T::Double, 32.0, "bytes", "longest DMA burst (SBus: 32 bytes)", 4, 4096});
  s.add({"bus.overhead_cycles", T::Double, 3.0, "cycles", "per burst: arbitration, address phase, acknowledgement", 0, 1000});

  s.add({"nic.tx_latency_ns", T::Double, 3000.0, "ns", "NIC: from the kick to the start of the frame's DMA (descriptor fetch over the bus) [calibrated with rx on the 49 us round trip of 6.2.4]", 0, 1e9});
  s.add({"nic.rx_latency_ns", T::Double, 4000.0, "ns", "NIC: from the end of the frame's DMA to the interrupt routine (descriptor write-back, interrupt dispatch) [calibrated]", 0, 1e9});
  s.add({"nic.tx_prefetch", T::Bool, false, "",
         "the NIC fetches the next frame's descriptor while the frame before is in its DMA (true), or, with one DMA engine for descriptors and data, after it (false: a frame kicked behind another waits nic.tx_latency_ns more)", 0, 1});
  s.add({"nic.tx_streams", T::Bool, false, "",
         "the NIC's transmit FIFO is smaller than a frame (the AMD LANCE's 48 bytes): it streams each frame from memory as it leaves and takes the next only once the one before has left the MAC, nic.tx_latency_ns later (its turnaround)", 0, 1});
  s.add({"nic.rx_cut_through", T::Bool, false, "", "receive DMA overlaps reception (true) or starts after the whole frame is in (false)", 0, 1});

  s.add({"ether.medium", T::String, "hub", "", "hub (half duplex, CSMA/CD) | switch (full duplex) | direct (a cable between two nodes)"});
  s.add({"ether.rate_mbps", T::Double, 100.0, "Mb/s", "10, 100 or 1000", 1, 1e5});
  s.add({"ether.lance_mode", T::Bool, true, "",
         "half duplex: the MAC waits ether.ipg0_nibbles more before it transmits after another station's frame (the FEPS ASIC of the SS20's FastEthernet adapter: \"lance_mode\", on by default; hme(7D) platform notes, 1996)"});
  s.add({"ether.ipg0_nibbles", T::Int, 16, "nibble times", "the LANCE-mode gap: 16 nibble times (hme default), 6.4 us at 10 Mb/s, 0.64 us at 100 Mb/s", 0, 31});
  s.add({"ether.prop_ns", T::Double, 560.0, "ns", "station to station: 2 x 10 m of cable (5 ns/m) plus a class II repeater (46 bit times) or a switch port", 0, 1e9});
  s.add({"ether.switch_latency_ns", T::Double, 3000.0, "ns", "switch: forwarding decision after a frame is in (store-and-forward)", 0, 1e9});
  s.add({"ether.switch_queue_frames", T::Int, 64, "frames", "switch output queue; tail drop beyond", 1, 1 << 20});
  s.add({"ether.loss", T::Double, 0.0, "", "injected Bernoulli loss per frame", 0, 1});
  s.add({"ether.burst_enter", T::Double, 0.0, "", "injected burst loss: probability per frame of entering a loss burst (Gilbert-Elliott)", 0, 1});
  s.add({"ether.tamper", T::Double, 0.0, "", "injected tampering: probability per delivered frame that an attacker alters one byte after the Ethernet header (with a valid FCS)", 0, 1});
  s.add({"ether.burst_leave", T::Double, 1.0, "", "probability per frame of leaving a loss burst", 0, 1});
  s.add({"ether.duplicate", T::Double, 0.0, "", "injected fault: probability per delivered frame that a second copy arrives up to ether.reorder_max_ns later", 0, 1});
  s.add({"ether.reorder", T::Double, 0.0, "", "injected fault: probability per delivered frame that it is held back up to ether.reorder_max_ns, so later frames overtake it", 0, 1});
  s.add({"ether.blackhole_every_us", T::Double, 0.0, "us", "injected fault: mean gap between blackhole periods of each station (exponential, seeded per station; 0: never)", 0, 1e12});
  s.add({"ether.blackhole_us", T::Double, 1000.0, "us", "length of a blackhole period: every frame to the station is lost", 0, 1e12});
  s.add({"ether.reorder_max_ns", T::Double, 100000.0, "ns", "longest extra delay of a duplicated or reordered frame (the path's bounded lifetime)", 1, 1e9});
}

EtherSysConfig EtherSysConfig::from(const Config& c) {
  EtherSysConfig e;
  e.nodes = static_cast<uint32_t>(c.get_int("mbcf.nodes"));
  e.page_bytes = static_cast<uint32_t>(c.get_int("mbcf.page_bytes"));
  if (e.page_bytes & (e.page_bytes - 1)) c.fail("mbcf.page_bytes", "must be a power of two");
  const std::string itf = c.get_string("mbcf.interface");
  if (itf != "kernel" && itf != "user") c.fail("mbcf.interface", "must be kernel or user, not '" + itf + "'");
  e.user_construction = itf == "user";
  e.th1 = static_cast<uint32_t>(c.get_int("mbcf.th1"));
  e.th2 = static_cast<uint32_t>(c.get_int("mbcf.th2"));
  e.th1_min = static_cast<uint32_t>(c.get_int("mbcf.th1_min"));
  if (e.th2 < e.th1) c.fail("mbcf.th2", "must be at least mbcf.th1 (" + std::to_string(e.th1) + ")");
  if (e.th1_min > e.th1) c.fail("mbcf.th1_min", "must be at most mbcf.th1");
  e.tx_buffers = static_cast<uint32_t>(c.get_int("mbcf.tx_buffers"));
  e.rx_ring = static_cast<uint32_t>(c.get_int("mbcf.rx_ring"));
  e.ack_timeout_us = c.get_double("mbcf.ack_timeout_us");
  e.resend_timeout_us = c.get_double("mbcf.resend_timeout_us");
  e.max_timeouts = static_cast<uint32_t>(c.get_int("mbcf.max_timeouts"));
  e.max_backoff_us = c.get_double("mbcf.max_backoff_us");
  e.stuck_us = c.get_double("mbcf.stuck_us");
  if (e.max_backoff_us < e.ack_timeout_us) c.fail("mbcf.max_backoff_us", "must be at least mbcf.ack_timeout_us");
  e.page_in_us = c.get_double("mbcf.page_in_us");
  e.save_area = static_cast<uint32_t>(c.get_int("mbcf.save_area"));
  e.cpu_mhz = c.get_double("host.cpu_mhz");
  e.syscall_cycles = c.get_double("host.syscall_cycles");
  e.copy_mb_s = c.get_double("host.copy_mb_s");
  e.int_entry_cycles = c.get_double("host.int_entry_cycles");
  e.int_packet_cycles = c.get_double("host.int_packet_cycles");
  e.int_command_cycles = c.get_double("host.int_command_cycles");
  e.reply_cycles = c.get_double("host.reply_cycles");
  e.ack_cycles = c.get_double("host.ack_cycles");
  e.tx_done_cycles = c.get_double("host.tx_done_cycles");
  e.poll_cycles = c.get_double("host.poll_cycles");
  e.lw_syscall_cycles = c.get_double("host.lw_syscall_cycles");
  e.invoke_cycles = c.get_double("host.invoke_cycles");
  e.atomic_word_cycles = c.get_double("host.atomic_word_cycles");
  e.user_build_cycles = c.get_double("host.user_build_cycles");
  e.timer_read_us = c.get_double("host.timer_read_us");
  const std::string bus = c.get_string("bus.kind");
  if (bus != "sbus" && bus != "pci") c.fail("bus.kind", "must be sbus or pci, not '" + bus + "'");
  e.bus_mhz = c.get_double("bus.clock_mhz");
  e.bus_width = c.get_double("bus.width_bytes");
  e.bus_burst = c.get_double("bus.burst_bytes");
  e.bus_overhead_cycles = c.get_double("bus.overhead_cycles");
  e.nic_tx_latency_ns = c.get_double("nic.tx_latency_ns");
  e.nic_rx_latency_ns = c.get_double("nic.rx_latency_ns");
  e.nic_rx_cut_through = c.get_bool("nic.rx_cut_through");
  e.nic_tx_prefetch = c.get_bool("nic.tx_prefetch");
  e.nic_tx_streams = c.get_bool("nic.tx_streams");
  const std::string m = c.get_string("ether.medium");
  if (m == "hub") e.ether.medium = net::EtherConfig::Medium::Hub;
  else if (m == "switch") e.ether.medium = net::EtherConfig::Medium::Switch;
  else if (m == "direct") e.ether.medium = net::EtherConfig::Medium::Direct;
  else c.fail("ether.medium", "must be hub, switch or direct, not '" + m + "'");
  if (e.ether.medium == net::EtherConfig::Medium::Direct && e.nodes != 2)
    c.fail("ether.medium", "a direct cable connects exactly 2 nodes (mbcf.nodes is " + std::to_string(e.nodes) + ")");
  e.ether.rate_mbps = c.get_double("ether.rate_mbps");
  e.ether.prop_ns = c.get_double("ether.prop_ns");
  e.ether.lance_mode = c.get_bool("ether.lance_mode");
  e.ether.ipg0_nibbles = static_cast<uint32_t>(c.get_int("ether.ipg0_nibbles"));
  e.ether.switch_latency_ns = c.get_double("ether.switch_latency_ns");
  e.ether.switch_queue_frames = static_cast<uint32_t>(c.get_int("ether.switch_queue_frames"));
  e.ether.loss = c.get_double("ether.loss");
  e.ether.burst_enter = c.get_double("ether.burst_enter");
  e.ether.burst_leave = c.get_double("ether.burst_leave");
  e.ether.tamper = c.get_double("ether.tamper");
  e.ether.duplicate = c.get_double("ether.duplicate");
  e.ether.reorder = c.get_double("ether.reorder");
  e.ether.reorder_max_ns = c.get_double("ether.reorder_max_ns");
  e.ether.blackhole_every_us = c.get_double("ether.blackhole_every_us");
  e.ether.blackhole_us = c.get_double("ether.blackhole_us");
  return e;
}

}  // namespace mbpsim::mbcf
