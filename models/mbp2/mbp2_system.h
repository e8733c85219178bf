// The MBP2 (thesis chapter 8): MBCF run by a NIC on the host I/O bus instead of by the host
// kernel. The command semantics, packet format and Go-back-N protocol are MBCF/Ether's
// (EtherSystem, unchanged); this class replaces its executor (8.3.3):
//   send:    the user task writes its send structure and rings its own doorbell alias (no
//            system call); the ULI names the task; the PGE fetches the structure and payload
//            through the TLB and the BIU into EM; the PME builds the header (the ported kernel
//            routine) and runs Go-back-N; the LDMA hands the image to the MAC.
//   receive: the LDMA moves the frame into EM; the PME checks it and runs the command; the
//            ADMA moves the data into the target task's memory through the TLB and the BIU.
// The host CPU copies nothing and takes no interrupt for MBCF traffic.
#pragma once
#include <deque>
#include <memory>
#include <vector>

#include "models/mbcf/ether_system.h"
#include "models/mbp2/units.h"

namespace mbpsim::mbp2 {

struct Mbp2Config {
  BusConfig bus;
  EmConfig em;
  PmeConfig pme;
  uint32_t tlb_entries = 64;
  double tlb_refill_instr = 40;   // PME: walk the page table in EM, write the entry
  double rx_desc_instr = 40;      // PME: collect a receive descriptor, re-arm it
  double tx_done_instr = 30;      // PME: collect a transmit descriptor
  double icu_instr = 20;          // PME: post or take an ICU message
  double host_request_cycles = 187;  // host: write the send structure (user level) [calibrated]
  uint32_t send_struct_bytes = 32;   // the send structure the PGE fetches before the payload
  double pge_setup_ns = 200, adma_setup_ns = 200, ldma_setup_ns = 100;
  uint32_t ring_entries = 16;
  CryptoConfig crypto;
  static Mbp2Config from(const Config& c);
};
void declare_mbp2_params(ParamSchema& s);

class Mbp2System : public mbcf::EtherSystem {
 public:
  Mbp2System(Calendar& cal, const mbcf::EtherSysConfig& ec, const Mbp2Config& c, Stats& st, uint64_t seed);
  const Mbp2Config& mbp2_config() const { return m_; }
  mbcf::Task& create_task(uint32_t node, uint32_t ptask, uint32_t key) override;
  // A request rung through an explicit doorbell alias (the normal path uses the task's own):
  // the host pays for the structure and the write; a foreign or unassigned alias is rejected
  // by the ULI and nothing is sent. Returns false when rejected (after the host's cost).
  bool ring(uint32_t node, uint32_t ptask, uint32_t alias, const mbcf::Request& r, std::function<void()> k);
  uint32_t alias_of(uint32_t node, uint32_t ptask) const;
  Pme& pme(uint32_t node) { return *u_[node]->pme; }
  Tlb& tlb(uint32_t node) { return *u_[node]->tlb; }
  Em& em(uint32_t node) { return *u_[node]->em; }
  HostBus& bus(uint32_t node) { return *u_[node]->bus; }
  Kli& kli(uint32_t node) { return *u_[node]->kli; }
  // ICU messages from the host kernel to the PME (the top byte is the type).
  static constexpr uint64_t kIcuInvalidatePage = 1ull << 56;  // | ctx << 32 | page
  // The security association node `node` holds for `peer` (nullptr before the key exchange).
  const SecurityAssociation* sa(uint32_t node, uint32_t peer) const { return u_[node]->sec[peer].sa.get(); }
  // Starts the Diffie-Hellman exchange with `peer` now (it also starts by itself on the first
  // frame for a peer without keys when crypto.keys = dh).
  void start_key_exchange(uint32_t node, uint32_t peer);
  // Per node: PME interrupts per second and utilisation, each unit's busy fraction, crypto.
  nlohmann::ordered_json nic_summary() const override;

 protected:
  uint64_t proto_ps(double host_cycles) const override { return u_[0]->pme->host_cycles_ps(host_cycles); }
  void protocol_work(uint32_t node, uint64_t dur, std::function<void()> fn) override;
  void issue(uint32_t node, uint32_t dst, mbcf::Packet p, uint32_t data, uint32_t wire_bytes, uint32_t src_laddr,
             std::function<void()> k) override;
  uint64_t tx_ready_ps(uint32_t node, uint32_t bytes) override;
  void tx_done(uint32_t node) override;
  uint64_t rx_ready_ps(uint32_t node, uint32_t len) override;
  uint64_t rx_entry_ps(uint32_t node) override;
  uint64_t data_move_ps(uint32_t node, const mbcf::Packet& p, uint32_t bytes) override;
  void host_upcall(uint32_t node, uint64_t msg, std::function<void()> k) override;
  void page_unmapped(uint32_t node, uint32_t ptask, uint32_t laddr) override;
  void nic_transmit(uint32_t node, uint32_t dst, std::vector<uint8_t>&& frame,
                    std::function<void(std::vector<uint8_t>&&)> in_mac) override;
  void nic_receive(uint32_t node, std::vector<uint8_t>&& frame, std::function<void(std::vector<uint8_t>*)> ready) override;

 private:
  using InMac = std::function<void(std::vector<uint8_t>&&)>;
  // What a NIC keeps per peer for encryption: the security association, and the state of the
  // Diffie-Hellman exchange that makes it.
  struct PeerSec {
    std::unique_ptr<SecurityAssociation> sa;
    uint32_t tx_seq = 0;
    std::unique_ptr<Dh> dh;
    std::vector<uint8_t> pub;  // our public value, once computed
    bool started = false, deriving = false;
    std::vector<std::function<void()>> pub_waiters;
    std::deque<std::pair<std::vector<uint8_t>, InMac>> waiting;  // frames held for the keys
    uint64_t t0 = 0;
  };
  struct CryptoStats {
    Counter *sealed, *opened, *enc_bytes, *dec_bytes, *auth_bytes, *rej_auth, *rej_format, *rej_plain, *rej_no_sa;
    Counter *kx_msgs, *kx_retries, *kx_done, *kx_ps, *kx_bad;
  };
  struct Units {
    std::unique_ptr<HostBus> bus;
    std::unique_ptr<Em> em;
    std::unique_ptr<Tlb> tlb;
    std::unique_ptr<Pme> pme;
    std::unique_ptr<Kli> kli;
    std::unique_ptr<Icu> icu;
    std::unique_ptr<Uli> uli;
    std::unique_ptr<DmaEngine> pge, adma, ldma_tx, ldma_rx;
    std::unique_ptr<Cau> cau;
    std::unique_ptr<Meac> meac;
    std::vector<PeerSec> sec;
    CryptoStats cs{};
    bool interrupt_next = false;  // the next protocol work starts with an interrupt (a receive)
    uint32_t next_alias = 0;
  };
  // Translates the pages of [laddr, laddr + bytes) of task `ctx`: returns the PME time spent on
  // refills (each miss interrupts the PME, which reads the entry from the page tables in EM),
  // and the host physical address of the first byte.
  uint64_t translate(uint32_t node, uint32_t ctx, uint32_t laddr, uint32_t bytes, uint64_t* pa);
  // The NIC side of a request whose doorbell write completed at `at`.
  void fetch_and_send(uint32_t node, uint32_t dst, mbcf::Packet p, uint32_t data, uint32_t src_laddr);
  void host_request(uint32_t node, uint32_t ptask, uint32_t alias, uint32_t dst, mbcf::Packet p, uint32_t data,
                    uint32_t src_laddr, std::function<void()> k);

  // crypto (crypto.h): the CAU's work (or the firmware's) over a frame in EM, then `k`.
  void crypt_work(uint32_t node, const char* what, uint32_t bytes, uint32_t cblocks, uint32_t hblocks, std::function<void()> k);
  void seal_and_send(uint32_t node, uint32_t dst, std::vector<uint8_t>&& frame, InMac in_mac);
  void open_received(uint32_t node, std::vector<uint8_t>&& frame, std::function<void(std::vector<uint8_t>*)> ready);
  // key exchange: modular exponentiations on the MEAC1024 (or in firmware), messages in frames
  // of their own EtherType handled by the PME
  void modexp_work(uint32_t node, uint32_t modmuls, std::function<void()> k);
  void with_public(uint32_t node, uint32_t peer, std::function<void()> k);
  void send_kx(uint32_t node, uint32_t peer, uint8_t type);
  void arm_kx_timer(uint32_t node, uint32_t peer);
  void on_kx(uint32_t node, std::vector<uint8_t>&& frame);
  // Computes the shared secret and installs the keys, then `then`, then sends the frames that
  // waited for them.
  void derive(uint32_t node, uint32_t peer, std::vector<uint8_t> peer_pub, std::function<void()> then);

  Mbp2Config m_;
  std::vector<std::unique_ptr<Units>> u_;
  Counter &rejected_requests_, &host_requests_;
  Counter* icu_bad_ = nullptr;
  Rng iv_rng_;  // IVs of sealed frames, Diffie-Hellman private values
};

}  // namespace mbpsim::mbp2
