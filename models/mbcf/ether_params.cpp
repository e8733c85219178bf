// Parameters of MBCF/Ether. Defaults describe the thesis's first cluster (6.2.1): SPARCstation
// 20 compatibles, 85 MHz SuperSPARC, 32-bit 25 MHz SBus, Sun FastEthernet SBus Adapter 2.0,
// 100BASE-TX through a non-switching hub. Where a value is calibrated, the comment says on
// which published figure; everything else is a hardware fact or a prediction.
#include "models/core/config.h"
#include "models/core/params.h"
#include "models/mbcf/ether_system.h"

namespace mbpsim::mbcf {

const ParamTable<EtherSysConfig>& EtherSysConfig::params() {
  static const ParamTable<EtherSysConfig> t = ParamTable<EtherSysConfig>()
      .add(&EtherSysConfig::nodes, {"mbcf.nodes", 2, "", "nodes (workstations) on the Ethernet segment", 2, 254})
      .add(&EtherSysConfig::page_bytes, {"mbcf.page_bytes", 4096, "bytes", "MMU page size (SuperSPARC: 4 KiB; UltraSPARC: 8 KiB)", 512, 1 << 20})
      .add_choice(&EtherSysConfig::user_construction, {"mbcf.interface", "kernel", "", "request construction (6.1.3): kernel (pointers handed to the system call) | user (user builds the packet body)"},
                  {{"kernel", false}, {"user", true}})
      .add(&EtherSysConfig::th1, {"mbcf.th1", 16, "packets", "Go-back-N TH1 (= N): uncollected buffers at which an ack is requested (6.1.4)", 1, 127})
      .add(&EtherSysConfig::th2, {"mbcf.th2", 64, "packets", "Go-back-N TH2: uncollected buffers at which a sender blocks", 1, 127})
      .add(&EtherSysConfig::th1_min, {"mbcf.th1_min", 2, "packets", "lowest TH1 when buffers run short", 1, 127})
      .add(&EtherSysConfig::tx_buffers, {"mbcf.tx_buffers", 256, "buffers", "kernel send buffers per node (NIC-DMA area); TH1 halves above 3/4 use", 4, 1 << 20})
      .add(&EtherSysConfig::rx_ring, {"mbcf.rx_ring", 64, "buffers", "receive ring of the NIC; a frame arriving to a full ring is lost", 1, 1 << 20})
      .add(&EtherSysConfig::ack_timeout_us, {"mbcf.ack_timeout_us", 20000.0, "us", "no acknowledgement progress for this long: resend the oldest, handshaked (two ticks of the 100 Hz kernel clock)", 1, 1e9})
      .add(&EtherSysConfig::resend_timeout_us, {"mbcf.resend_timeout_us", 20000.0, "us", "a resend request unanswered for this long may be sent again", 1, 1e9})
      .add(&EtherSysConfig::max_timeouts, {"mbcf.max_timeouts", 32, "", "timeouts in a row after which a silent peer is probed with exponential back-off (its packets are kept)", 1, 1e6})
      .add(&EtherSysConfig::stuck_us, {"mbcf.stuck_us", 60e6, "us",
         "network stuck check: a pair of nodes with packets unacknowledged and no acknowledgement progress for this long stops the run with exit status 2 and a dump of the oldest unacknowledged packets (0: never; a peer powered off for good is stuck too)",
         0, 1e12})
      .add(&EtherSysConfig::max_backoff_us, {"mbcf.max_backoff_us", 1e6, "us", "longest probe interval for a silent peer (1 s, TCP's minimum retransmission timeout, RFC 6298)", 1, 1e9})
      .add(&EtherSysConfig::save_area, {"mbcf.save_area", 64, "packets",
         "kernel save area of 3.4.2 for packets to tasks waiting for a page-in (besides each task's faulting one); when full such a packet is not accepted and comes again through Go-back-N, and a local request waits",
         1, 1 << 20})
      .add(&EtherSysConfig::page_in_us, {"mbcf.page_in_us", 10000.0, "us", "time to page a swapped-out page back in (a disk access)", 0, 1e9})
      .add(&EtherSysConfig::cpu_mhz, {"host.cpu_mhz", 85.0, "MHz", "host processor clock (SuperSPARC of the SS20: 85 MHz)", 1, 1e5})
      .add(&EtherSysConfig::syscall_cycles, {"host.syscall_cycles", 306.0, "cycles", "MBCF-requesting system call, fixed part: 3.6 us, the logic-analyser figure of 6.2.2 (3.4-3.8 us) [calibrated]", 0, 1e9})
      .add(&EtherSysConfig::int_packet_cycles, {"host.int_packet_cycles", 459.0, "cycles", "receive routine per packet: 6.4 us measured in 6.2.2 (Fig. 6.4) less the entry", 0, 1e9})
      .add(&EtherSysConfig::int_command_cycles, {"host.int_command_cycles", 40.0, "cycles", "each further command of a combined packet (decode and dispatch)", 0, 1e9})
      .add(&EtherSysConfig::int_struct_cycles, {"host.int_struct_cycles", 50.0, "cycles",
         "receive routine, each MBCF structure a command reads, checks and updates in the target task's memory beyond a WRITE's work (4.1: a FIFO's structure, whose top, head, tail, end and flags the routine reads before it stores the entry and writes back the tail; a signal structure's eight words, the running flag set; a signal's FIFO as a FIFO's): the structure's address checked against the task's page table (the SRMMU's three levels) and about 40 instructions of loads, tests and stores at the SuperSPARC's one instruction a cycle or so on cached data; 0.6 us, an estimate (int_packet_cycles, measured on WRITEs, holds none of it)", 0, 1e9})
      .add(&EtherSysConfig::reply_cycles, {"host.reply_cycles", 128.0, "cycles", "building a reply (or a multicast copy) in the interrupt routine: the header part of a send, 1.5 us", 0, 1e9})
      .add(&EtherSysConfig::ack_cycles, {"host.ack_cycles", 170.0, "cycles", "handling an acknowledgement-only or rejected packet (protocol part only)", 0, 1e9})
      .add(&EtherSysConfig::tx_done_cycles, {"host.tx_done_cycles", 745.0, "cycles", "transmit-completion routine per frame (third low state of Fig. 6.3), 8.76 us; 0: no completion interrupt [calibrated: least squares, in log ratio, on the six host-bound points of Table 6.2 (4-64 bytes of the 100BASE-TX and 100BASE-T rows), where the sender's host sets the rate; docs/VALIDATION.md]", 0, 1e9})
      .add(&EtherSysConfig::poll_cycles, {"host.poll_cycles", 20.0, "cycles", "one iteration of a status-polling loop on a cached word", 0, 1e9})
      .add(&EtherSysConfig::atomic_word_cycles, {"host.atomic_word_cycles", 6.0, "cycles", "per 32-bit word of an atomic command (load, operate, store)", 0, 1e9})
      .add(&EtherSysConfig::user_build_cycles, {"host.user_build_cycles", 40.0, "cycles", "user construction: filling the packet body's fixed fields in user mode", 0, 1e9})
      .add(&EtherSysConfig::timer_read_us, {"host.timer_read_us", 1.2, "us", "cost of reading the clock counter, included in measured latencies (6.2.2: 1.2 us on the SS20)", 0, 1e6})
      .include(&EtherSysConfig::os, host::OsConfig::params())
      .include(&EtherSysConfig::bus, host::BusConfig::params())
      .add(&EtherSysConfig::nic_tx_latency_ns, {"nic.tx_latency_ns", 3000.0, "ns", "NIC: from the kick to the start of the frame's DMA (descriptor fetch over the bus) [calibrated with rx on the 49 us round trip of 6.2.4]", 0, 1e9})
      .add(&EtherSysConfig::nic_rx_latency_ns, {"nic.rx_latency_ns", 4000.0, "ns", "NIC: from the end of the frame's DMA to the interrupt routine (descriptor write-back, interrupt dispatch) [calibrated]", 0, 1e9})
      .add(&EtherSysConfig::nic_tx_prefetch, {"nic.tx_prefetch", false, "",
         "the NIC fetches the next frame's descriptor while the frame before is in its DMA (true), or, with one DMA engine for descriptors and data, after it (false: a frame kicked behind another waits nic.tx_latency_ns more)", 0, 1})
      .add(&EtherSysConfig::nic_tx_streams, {"nic.tx_streams", false, "",
         "the NIC's transmit FIFO is smaller than a frame (the AMD LANCE's 48 bytes): it streams each frame from memory as it leaves and takes the next only once the one before has left the MAC, nic.tx_latency_ns later (its turnaround)", 0, 1})
      .add(&EtherSysConfig::nic_rx_cut_through, {"nic.rx_cut_through", false, "", "receive DMA overlaps reception (true) or starts after the whole frame is in (false)", 0, 1})
      .include(&EtherSysConfig::ether, net::EtherConfig::params());
  return t;
}

EtherSysConfig::EtherSysConfig() { params().set_defaults(*this); }

void declare_mbcf_params(ParamSchema& s) { EtherSysConfig::params().declare(s); }

EtherSysConfig EtherSysConfig::from(const Config& c) {
  EtherSysConfig e;
  params().load(e, c);
  if (e.page_bytes & (e.page_bytes - 1)) c.fail("mbcf.page_bytes", "must be a power of two");
  if (e.th2 < e.th1) c.fail("mbcf.th2", "must be at least mbcf.th1 (" + std::to_string(e.th1) + ")");
  if (e.th1_min > e.th1) c.fail("mbcf.th1_min", "must be at most mbcf.th1");
  if (e.max_backoff_us < e.ack_timeout_us) c.fail("mbcf.max_backoff_us", "must be at least mbcf.ack_timeout_us");
  e.bus.check(c);
  if (e.ether.medium == net::EtherConfig::Medium::Direct && e.nodes != 2)
    c.fail("ether.medium", "a direct cable connects exactly 2 nodes (mbcf.nodes is " + std::to_string(e.nodes) + ")");
  return e;
}

}  // namespace mbpsim::mbcf
