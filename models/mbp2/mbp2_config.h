// The MBP2 card's parameters (mbp2.*, crypto.*): declared once, in `Mbp2Config::params()`
// (mbp2_params.cpp), which gives every member its default, range, unit and doc.
#pragma once
#include <cstdint>

#include "models/core/params.h"
#include "models/mbp2/units.h"

namespace mbpsim::mbp2 {

struct Mbp2Config {
  // Every member is a parameter of `params()` (mbp2_params.cpp), which gives it its default.
  // The host bus the card sits on is the host's (EtherSysConfig::bus).
  Mbp2Config();
  EmConfig em;
  PmeConfig pme;
  uint32_t tlb_entries{};
  double tlb_refill_instr{};   // PME: walk the page table in EM, write the entry
  double rx_desc_instr{};      // PME: collect a receive descriptor, re-arm it
  double tx_done_instr{};      // PME: collect a transmit descriptor
  double icu_instr{};          // PME: post or take an ICU message
  double host_request_cycles{};  // host: write the send structure (user level) [calibrated]
  uint32_t send_ring_entries{};   // send structures per task in host memory (its send ring)
  uint32_t request_slots{};      // EM slots for MBCF requests taken from doorbells and not yet sent
  double pge_setup_ns{}, adma_setup_ns{}, ldma_setup_ns{};
  uint32_t mac_tx_fifo_bytes{};  // the MAC's transmit FIFO: the LDMA waits for room
  uint32_t ring_entries{};
  // message passing (TCP/IP, UDP/IP): the CSU and OCU, and the PME's routines
  bool csu{}, ocu{};      // MBP2P has both in its FPGA ("the same features as the MBP2C", 8.4)
  uint32_t ocu_registers{};
  double ip_header_instr{};      // PME: build the IP and UDP/TCP headers of a datagram
  double ip_steer_instr{};      // PME: check the IP header, find the port or connection, post to the PGE
  double ip_reasm_instr{};       // PME: file one received IP fragment
  double reasm_timeout_us{};    // PME: an incomplete datagram's fragments are given up after this
  // TCP on the PME (mbp2_tcp.cpp): acknowledgements, retransmission, windows.
  double tcp_ack_instr{};        // PME: take an incoming segment's ACK and window (free acked images, RTT, cwnd)
  uint32_t tcp_ack_every{};       // receiver: an ACK for every this many in-order segments (RFC 5681 4.2)
  double tcp_delack_us{};     // ... or when this much time has passed since the first unacknowledged one
  double tcp_rto_min_us{};   // the retransmission timeout's floor
  double tcp_rto_initial_us{};  // before the first RTT sample (RFC 6298 2.1)
  uint32_t tcp_max_retries{};    // consecutive timeouts before the connection is given up
  double fw_csum_instr_per_word{};  // PME firmware checksum without the CSU
  double fw_order_instr{};       // PME firmware order check without an OCU register
  uint32_t kernel_ring_slots{};  // the kernel's receive structure
  CryptoConfig crypto;
  static const ParamTable<Mbp2Config>& params();
  static Mbp2Config from(const Config& c);  // params() loaded, then cross-checked
};
void declare_mbp2_params(ParamSchema& s);

}  // namespace mbpsim::mbp2
