// Parameters of the MBP2 NIC. Defaults describe the MBP2P prototype of 8.4 (Table 8.2) in a
// SPARCstation 20: SPARClite MB86832 PME at 100 MHz internal and 20 MHz bus, FPGA controller
// at 40 MHz, SBus at 25 MHz with 4-byte width and 32-byte bursts, 1000BASE-SX. The origin of
// each value is written next to it; [calibrated] marks the two values fitted to 8.5.
#include "models/core/config.h"
#include "models/core/params.h"
#include "models/mbp2/mbp2_nic.h"

namespace mbpsim::mbp2 {

const ParamTable<PmeConfig>& PmeConfig::params() {
  static const ParamTable<PmeConfig> t = ParamTable<PmeConfig>()
      .add(&PmeConfig::clock_mhz, {"pme.clock_mhz", 100.0, "MHz", "PME core clock (MBP2P: SPARClite MB86832, 100 MHz internal; Table 8.2)", 1, 1e5})
      .add(&PmeConfig::bus_mhz, {"pme.bus_mhz", 20.0, "MHz", "PME processor bus (MBP2P: 20 MHz; Table 8.2)", 1, 1e5})
      .add(&PmeConfig::base_cpi, {"pme.base_cpi", 1.0, "", "cycles per instruction with every access hitting (scalar integer pipeline)", 0.1, 100})
      .add(&PmeConfig::imiss_per_instr, {"pme.imiss_per_instr", 0.03, "", "instruction-cache misses per instruction: a protocol stack larger than the small I-cache (8.5)", 0, 1})
      .add(&PmeConfig::line_fill_bus_cycles, {"pme.line_fill_bus_cycles", 8.0, "bus cycles", "one cache-line fill from EM: 4 words on the 32-bit bus plus address and the controller's SDRAM access (no secondary cache)", 0, 1000})
      .add(&PmeConfig::shared_per_instr, {"pme.shared_per_instr", 0.1, "", "loads and stores per instruction to descriptor rings and headers shared with the DMAs (uncached without cache-control instructions, 8.3.4)", 0, 1})
      .add(&PmeConfig::shared_bus_cycles, {"pme.shared_bus_cycles", 16.0, "bus cycles", "one uncached EM access through the FPGA controller (address decode, clock-domain crossings, SDRAM access); with pme.shared_per_instr it sets the PME's stall on shared data (1.6 bus cycles per instruction) [calibrated on the 'more than 140 us, about three times MBCF/Ether' round trip of 8.5]", 0, 1000})
      .add(&PmeConfig::cache_control, {"pme.cache_control", false, "", "explicit cache-fill and write-back instructions (Casablanca, 8.3.4): the shared areas become cacheable", 0, 1})
      .add(&PmeConfig::store_per_instr, {"pme.store_per_instr", 0.1, "", "stores per instruction (each written through to EM)", 0, 1})
      .add(&PmeConfig::wt_stall_bus_cycles, {"pme.wt_stall_bus_cycles", 1.0, "bus cycles", "mean write-buffer stall per write-through store", 0, 1000})
      .add(&PmeConfig::register_sets, {"pme.register_sets", false, "", "zero-cost interrupt context switching with dedicated register sets (Casablanca, 8.3.5)", 0, 1})
      .add(&PmeConfig::interrupt_instr, {"pme.interrupt_instr", 60.0, "instructions", "conventional interrupt: trap, save and restore of a register window and the globals, return (8.3.5: 'a few us per interrupt')", 0, 1e6})
      .add(&PmeConfig::host_cpi, {"pme.host_cpi", 1.3, "", "the SS20 kernel's cycles per instruction (SuperSPARC with SuperCache): converts the host routines' calibrated cycles into instructions the PME runs", 0.1, 100});
  return t;
}

PmeConfig::PmeConfig() { params().set_defaults(*this); }

const ParamTable<EmConfig>& EmConfig::params() {
  static const ParamTable<EmConfig> t = ParamTable<EmConfig>()
      .add(&EmConfig::clock_mhz, {"em.clock_mhz", 40.0, "MHz", "card memory controller clock (MBP2P: the FPGA at 40 MHz; Table 8.2)", 1, 1e5})
      .add(&EmConfig::width_bytes, {"em.width_bytes", 8, "bytes", "card memory data path (8.2: 'more than 64 bit wide')", 1, 1024})
      .add(&EmConfig::burst_bytes, {"em.burst_bytes", 32, "bytes", "SDRAM burst: one row access per burst", 1, 1 << 20})
      .add(&EmConfig::access_cycles, {"em.access_cycles", 3.0, "cycles", "per burst: activate and CAS latency of the SDRAM", 0, 1000})
      .add(&EmConfig::bytes, {"em.bytes", 8 << 20, "bytes",
         "card memory size: the kernel area, the DMA descriptor rings and the frame buffers must fit (8 MiB: four 16-Mbit x16 SDRAM parts, the smallest bank of a 64-bit path; the thesis gives no size)",
         1 << 16, 1ll << 31});
  return t;
}

EmConfig::EmConfig() { params().set_defaults(*this); }

// Crypto (8.2 CAU and MEAC1024, 8.3.6). Throughputs are design targets or estimates from the
// algorithms' structure: the thesis gives no figures.
const ParamTable<CryptoConfig>& CryptoConfig::params() {
  static const ParamTable<CryptoConfig> t = ParamTable<CryptoConfig>()
      .add_choice(&CryptoConfig::cipher, {"crypto.cipher", "none", "", "none | des | 3des: payload encryption between MBP2s (CBC, random IV per frame)"},
                  {{"none", Cipher::None}, {"des", Cipher::Des}, {"3des", Cipher::Des3}})
      .add_choice(&CryptoConfig::auth, {"crypto.auth", "none", "", "none | hmac-md5 | hmac-sha1: keyed hash (96-bit ICV) authenticating every frame"},
                  {{"none", Auth::None}, {"hmac-md5", Auth::HmacMd5}, {"hmac-sha1", Auth::HmacSha1}})
      .add_choice(&CryptoConfig::keys, {"crypto.keys", "static", "", "static (from crypto.secret, per pair of nodes) | dh (a Diffie-Hellman exchange, 1024-bit MODP group, on each pair's first frame)"},
                  {{"static", CryptoConfig::Keys::Static}, {"dh", CryptoConfig::Keys::Dh}})
      .add(&CryptoConfig::secret, {"crypto.secret", "mbpsim", "", "pre-shared secret for crypto.keys = static"})
      .add(&CryptoConfig::cau, {"crypto.cau", true, "", "crypto in the CAU (MBP2C); false: in PME firmware (MBP2P: 'cryptographic functions are performed by the firmware programs of the PME', 8.4)", 0, 1})
      .add(&CryptoConfig::rekey_frames, {"crypto.rekey_frames", int64_t{4294967295}, "frames",
         "frames sealed for a peer under one set of keys before they are renewed: the 32-bit sequence number must not cycle (RFC 4303 3.3.3); with dh keys a new exchange runs and the old keys still open frames in flight until the peer uses the new ones; static keys cannot be renewed, and the NIC stops sealing for that peer",
         64, 4294967295.0})
      .add(&CryptoConfig::kx_timeout_us, {"crypto.kx_timeout_us", 50000.0, "us", "an INIT not answered is sent again after this, each later one after twice as long (RFC 7296 2.1)", 1, 1e12})
      .add(&CryptoConfig::kx_tries, {"crypto.kx_tries", int64_t{5}, "messages",
         "INITs sent without an answer before an exchange is given up (the n-th waits crypto.kx_timeout_us x 2^(n-1), RFC 7296 2.1: 1.55 s in all by default): the frames waiting for its keys are dropped and their buffers freed (Go-back-N and TCP resend theirs, which starts a new exchange); 5 is strongSwan's charon.retransmit_tries",
         1, 1e9})
      .add(&CryptoConfig::cau_clock_mhz, {"cau.clock_mhz", 100.0, "MHz", "CAU clock: the MBP2C's card-memory clock (an assumption)", 1, 1e5})
      .add(&CryptoConfig::des_cycles_per_block, {"cau.des_cycles_per_block", 2.0, "cycles", "one DES pass over 8 bytes: 16 rounds on 8 unrolled round units; triple DES makes three passes (133 MB/s at 100 MHz: 8.2's 'enough calculation ability to support gigabit networks')", 0.01, 1e6})
      .add(&CryptoConfig::hash_cycles_per_block, {"cau.hash_cycles_per_block", 32.0, "cycles", "one 64-byte MD5/SHA-1 compression: 64 or 80 steps at two per cycle (200 MB/s at 100 MHz)", 0.01, 1e6})
      .add(&CryptoConfig::cau_setup_ns, {"cau.setup_ns", 100.0, "ns", "CAU: descriptor fetch from EM to the first read", 0, 1e9})
      .add(&CryptoConfig::cau_desc_instr, {"cau.desc_instr", 20.0, "instructions", "PME: write one CAU descriptor", 0, 1e6})
      .add(&CryptoConfig::fw_setup_instr, {"crypto.fw_setup_instr", 150.0, "instructions", "PME firmware crypto: per frame (IV, key-schedule pointers, loop set-up)", 0, 1e9})
      .add(&CryptoConfig::fw_des_instr_per_block, {"crypto.fw_des_instr_per_block", 300.0, "instructions", "PME firmware: one DES pass over 8 bytes (table-driven: 16 rounds of about 16 instructions, plus the initial and final permutations)", 0, 1e9})
      .add(&CryptoConfig::fw_hash_instr_per_block, {"crypto.fw_hash_instr_per_block", 700.0, "instructions", "PME firmware: one 64-byte MD5/SHA-1 compression (64-80 steps of 7-9 instructions, plus the message schedule)", 0, 1e9})
      .add(&CryptoConfig::meac, {"meac.present", true, "", "a MEAC1024 on the card (MBP2C, 8.2); false: modular arithmetic in PME firmware", 0, 1})
      .add(&CryptoConfig::meac_clock_mhz, {"meac.clock_mhz", 50.0, "MHz", "MEAC1024 clock (an assumption; the thesis gives none)", 1, 1e5})
      .add(&CryptoConfig::meac_modmul_cycles, {"meac.modmul_cycles", 132.0, "cycles", "one 1024-bit modular multiplication with its reduction: 32 passes of a 1024 x 32-bit multiplier for the product and as many for the reduction, plus 4 cycles of pipeline fill (an estimate)", 1, 1e9})
      .add(&CryptoConfig::meac_op_instr, {"meac.op_instr", 12.0, "instructions", "PME: start one MEAC operation (operand addresses in EM) and take its completion", 0, 1e6})
      .add(&CryptoConfig::fw_modmul_instr, {"crypto.fw_modmul_instr", 9000.0, "instructions", "PME firmware: one 1024-bit Montgomery multiplication (2 x 32 x 32 word multiply-accumulates of about 4 instructions, plus carries)", 1, 1e12});
  return t;
}

CryptoConfig::CryptoConfig() { params().set_defaults(*this); }

const ParamTable<Mbp2Config>& Mbp2Config::params() {
  static const ParamTable<Mbp2Config> t = ParamTable<Mbp2Config>()
      .declare_only(ParamType::String, {"mbcf.nic", "conventional", "", "who runs MBCF: conventional (the host kernel, MBCF/Ether, chapter 6) | mbp2 (the MBP2 NIC, chapter 8)"}, {"conventional", "mbp2"})
      .include(&Mbp2Config::pme, PmeConfig::params())
      .include(&Mbp2Config::em, EmConfig::params())
      .add(&Mbp2Config::tlb_entries, {"mbp2.tlb_entries", 64, "entries", "TLB entries, each tagged with a context ID", 1, 1 << 20})
      .add(&Mbp2Config::tlb_refill_instr, {"mbp2.tlb_refill_instr", 40.0, "instructions", "PME TLB-miss handler: index the page table in EM, check, write the entry", 0, 1e6})
      .add(&Mbp2Config::rx_desc_instr, {"mbp2.rx_desc_instr", 40.0, "instructions", "PME: collect a receive descriptor of the LDMA and re-arm it", 0, 1e6})
      .add(&Mbp2Config::tx_done_instr, {"mbp2.tx_done_instr", 30.0, "instructions", "PME: collect a transmit descriptor of the LDMA", 0, 1e6})
      .add(&Mbp2Config::icu_instr, {"mbp2.icu_instr", 20.0, "instructions", "PME: post an ICU message to the host or take one from it", 0, 1e6})
      .add(&Mbp2Config::request_slots, {"mbp2.request_slots", 256, "requests",
         "EM slots for MBCF requests taken from doorbells and not yet sent (those waiting for TH2 among them): the 256 send buffers of the MBCF/Ether kernel the PME runs; with none free the doorbell store is retried and the CPU waits",
         1, 1 << 20})
      .add(&Mbp2Config::host_request_cycles, {"mbp2.host_request_cycles", 187.0, "cycles", "host: a user task writes its send structure (ordinary stores, user mode) [calibrated with bus.pio_cycles on 8.5's 'about 3 us' per send]", 0, 1e9})
      .add(&Mbp2Config::send_ring_entries, {"mbp2.send_ring_entries", 32, "structures",
         "send structures per task, in host memory the OS pins next to its doorbell alias (1536 bytes each: 48 KiB); a task whose structures the PGE has all still to fetch waits for one. Twice the peak workload's 16 transfers between acknowledgement checks",
         1, 512})
      .add(&Mbp2Config::pge_setup_ns, {"mbp2.pge_setup_ns", 200.0, "ns", "PGE: from the doorbell to its first bus request (8 cycles of the 40 MHz controller)", 0, 1e9})
      .add(&Mbp2Config::adma_setup_ns, {"mbp2.adma_setup_ns", 200.0, "ns", "ADMA: descriptor fetch from EM to the first bus request", 0, 1e9})
      .add(&Mbp2Config::ldma_setup_ns, {"mbp2.ldma_setup_ns", 100.0, "ns", "LDMA: descriptor fetch to the first MAC transfer", 0, 1e9})
      .add(&Mbp2Config::mac_tx_fifo_bytes, {"mbp2.mac_tx_fifo_bytes", 16384, "bytes",
         "MAC transmit FIFO: frame bytes the LDMA may have put in the MAC ahead of the wire (the thesis gives no size; 16 KiB is the "
         "transmit share of a contemporary gigabit controller's packet buffer, the Intel 82544's 64 KiB split 48/16 by default)",
         1514, 1 << 24})
      .include(&Mbp2Config::crypto, CryptoConfig::params())
      // Message passing (TCP/IP, UDP/IP; 8.2 CSU and OCU, 8.3.3 steering).
      .add(&Mbp2Config::csu, {"mbp2.csu", true, "", "a checksum unit (CSU-T/CSU-R) sums TCP/UDP data as it streams into EM; false: the PME's firmware sums the words (MBP2P has one: 'the same features as the MBP2C' but crypto, 8.4)", 0, 1})
      .add(&Mbp2Config::ocu, {"mbp2.ocu", true, "", "an order-checking unit compares each TCP segment's sequence number with its connection's register, and each MBCF packet's END_P with its peer's; false: the firmware compares", 0, 1})
      .add(&Mbp2Config::ocu_registers, {"mbp2.ocu_registers", 64, "registers", "OCU registers: one per MBCF peer first, then TCP connections; beyond them the firmware checks order (an assumption: the thesis gives no size)", 1, 1 << 16})
      .add(&Mbp2Config::ip_header_instr, {"mbp2.ip_header_instr", 80.0, "instructions", "PME: look up the connection, write the 14-byte Ethernet, 20-byte IP and 8/20-byte UDP/TCP headers (about 12 words), the IP header checksum (5 words) and the pseudo-header's sum, advance TCP's sequence (an estimate from the work)", 0, 1e6})
      .add(&Mbp2Config::ip_steer_instr, {"mbp2.ip_steer_instr", 100.0, "instructions", "PME: check the IP header and its checksum, find the port or connection in the table in EM (a hashed probe), take the CSU/OCU results, write the PGE's descriptor (an estimate from the work)", 0, 1e6})
      .add(&Mbp2Config::ip_reasm_instr, {"mbp2.ip_reasm_instr", 60.0, "instructions", "PME, per IP fragment received: find the datagram's entry by source and identification (a hashed probe in EM), insert the piece in its offset-ordered list, add the CSU's partial sum; on the last one, fold the sums with the pseudo-header (an estimate from the work)", 0, 1e6})
      .add(&Mbp2Config::tcp_ack_instr, {"mbp2.tcp_ack_instr", 40.0, "instructions", "PME, per TCP segment received: compare its ACK with the oldest unacknowledged sequence, release the acknowledged segments' images, take an RTT sample (RFC 6298), grow the congestion window (RFC 5681), restart the timer (an estimate from the work)", 0, 1e6})
      .add(&Mbp2Config::tcp_ack_every, {"mbp2.tcp_ack_every", 2, "segments", "the receiving PME acknowledges every this many in-order segments at once (RFC 5681 4.2: at least every second full-sized segment), out-of-order ones at once", 1, 64})
      .add(&Mbp2Config::tcp_delack_us, {"mbp2.tcp_delack_us", 40000.0, "us", "the delayed acknowledgement's timer (Linux's TCP_DELACK_MIN, 40 ms; RFC 1122 allows up to 500 ms)", 1, 1e7})
      .add(&Mbp2Config::tcp_rto_min_us, {"mbp2.tcp_rto_min_us", 200000.0, "us", "the retransmission timeout's floor (Linux's TCP_RTO_MIN, 200 ms; RFC 6298 2.4 asks 1 s)", 1, 1e9})
      .add(&Mbp2Config::tcp_rto_initial_us, {"mbp2.tcp_rto_initial_us", 1e6, "us", "the retransmission timeout before the first RTT sample (RFC 6298 2.1: 1 s)", 1, 1e9})
      .add(&Mbp2Config::tcp_max_retries, {"mbp2.tcp_max_retries", 15, "timeouts", "consecutive retransmission timeouts before the PME gives a connection up and frees its images (Linux's tcp_retries2, 15)", 1, 1000})
      .add(&Mbp2Config::reasm_timeout_us, {"mbp2.reasm_timeout_us", 1e6, "us", "how long the PME keeps an incomplete datagram's fragments in receive buffers before giving them back (a firmware policy, not a hardware fact: RFC 1122 asks hosts for 60-120 s, a NIC holding EM buffers gives up sooner; the datagram workload retries after workload.timeout_us)", 1, 1e12})
      .add(&Mbp2Config::fw_csum_instr_per_word, {"mbp2.fw_csum_instr_per_word", 2.5, "instructions", "PME firmware checksum per 32-bit word: a load and an add-with-carry, unrolled (loop overhead 0.5)", 0, 1e6})
      .add(&Mbp2Config::fw_order_instr, {"mbp2.fw_order_instr", 15.0, "instructions", "PME firmware order check: load the expected sequence from EM, compare, branch, store the next", 0, 1e6})
      .add(&Mbp2Config::kernel_ring_slots, {"mbp2.kernel_ring_slots", 64, "frames", "the kernel's receive structure for frames to no bound port (written by the PGE in bypass mode)", 1, 1 << 20})
      .add(&Mbp2Config::ring_entries, {"mbp2.ring_entries", 16, "entries", "descriptor ring of each DMA engine (in EM)", 1, 1 << 20});
  return t;
}

Mbp2Config::Mbp2Config() { params().set_defaults(*this); }

void declare_mbp2_params(ParamSchema& s) { Mbp2Config::params().declare(s); }

Mbp2Config Mbp2Config::from(const Config& c) {
  Mbp2Config m;
  params().load(m, c);
  const CryptoConfig& k = m.crypto;
  if (k.keys == CryptoConfig::Keys::Dh && !k.enabled())
    c.fail("crypto.keys", "a key exchange needs crypto.cipher or crypto.auth");
  const uint64_t need = Mbp2Nic::em_bytes_needed(m, static_cast<uint32_t>(c.get_int("mbcf.rx_ring")), static_cast<uint32_t>(c.get_int("mbcf.nodes")));
  if (need > m.em.bytes)
    c.fail("em.bytes", std::to_string(m.em.bytes) + " bytes of card memory cannot hold the kernel area, the descriptor rings (mbp2.ring_entries), the frame buffers (mbp2.ring_entries + mbcf.rx_ring), the request images (mbp2.request_slots + mbp2.ring_entries) and the ADMA's staging buffers (mbp2.ring_entries), each of " +
                           std::to_string(FramePool::kBufBytes) + " bytes, and with a CAU its key slots (two per node): they need " + std::to_string(need));
  return m;
}

}  // namespace mbpsim::mbp2
