// One host's MBP2 card (thesis chapter 8), `system.host<n>.nic`: a SystemC module whose units
// (PME, PGE, ADMA, LDMA, TLB, EM, BIU, CAU, ...) are its children. It is the host's NIC through
// the `mbcf::Nic` seam (`Port`) and runs the MBCF firmware on its PME through the
// `mbcf::Executor` seam (`Firmware`). The command semantics, packet format and Go-back-N
// protocol are MBCF/Ether's (models/mbcf, unchanged). Each card replaces the host kernel's
// part (8.3.3):
//   send:    the user task writes its send structure and rings its own doorbell alias (no
//            system call); the ULI names the task; the PGE fetches the structure and payload
//            through the TLB and the BIU into EM; the PME builds the header (the ported kernel
//            routine) and runs Go-back-N; the LDMA hands the image to the MAC.
//   receive: the LDMA moves the frame into EM; the PME checks it and runs the command; the
//            ADMA moves the data into the target task's memory through the TLB and the BIU.
// The host CPU copies nothing and takes no interrupt for MBCF traffic.
//
// The class is long because one card's firmware is one program on one PME, sharing EM's
// buffers, rings and tables. Its behaviour is split by subject, one file each:
//   mbp2_nic.cpp       construction, the host side (send rings, doorbells, the OS's messages), power loss
//   mbp2_firmware.cpp  the MBCF firmware: protocol work, the receive routine's data moves, the PGE
//   mbp2_frames.cpp    the frame path (EM buffers, LDMA, MAC) and sealing
//   mbp2_kx.cpp        the key exchange (Diffie-Hellman on the MEAC)
//   mbp2_msg.cpp       message passing: UDP/IP and TCP/IP steering, fragments
//   mbp2_tcp.cpp       TCP on the PME
// Mbp2Cards (mbp2_cards.h) builds one per host and holds what the cards share.
#pragma once
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

#include "models/mbcf/ether_system.h"
#include "models/mbp2/inet.h"
#include "models/mbp2/mbp2_config.h"
#include "models/mbp2/mbp2_ip.h"
#include "models/mbp2/mbp2_kx.h"
#include "models/mbp2/mbp2_tcp.h"
#include "models/mbp2/units.h"

namespace mbpsim::mbp2 {

class Mbp2Cards;

class Mbp2Nic : public sc_core::sc_module, private PioTarget {
 public:
  // Node `node`'s card, built inside its host while the cluster builds it (Mbp2Cards' NIC
  // factory); its MAC sends on `wire`.
  Mbp2Nic(sc_core::sc_module_name nm, Mbp2Cards& cards, uint32_t node, net::EtherSegment& wire);
  Mbp2Nic(const Mbp2Nic&) = delete;
  Mbp2Nic& operator=(const Mbp2Nic&) = delete;
  uint32_t node() const { return node_; }
  // What the host's MBCF stack sees of the card (handed to the cluster once, by port()).
  std::unique_ptr<mbcf::Nic> port();
  // The wire the MAC sends on.
  net::EtherSegment& wire() const { return wire_; }
  // What a card carves in EM: the kernel area (KLI), the descriptor rings of the PGE, ADMA, the
  // two LDMA channels and the CAU, the frame buffers (one per LDMA transmit descriptor, one per
  // receive-ring entry) and the request images (one per request slot).
  static uint64_t em_bytes_needed(const Mbp2Config& c, uint32_t rx_ring, uint32_t nodes);
  // A request rung through an explicit doorbell alias (the normal path uses the task's own):
  // the host pays for the structure; a store through an alias not the task's own faults in its
  // MMU (the OS maps it no other), is counted (rejected_requests) and nothing is sent. Returns
  // false only when the library's checks refuse the request.
  bool ring(uint32_t ptask, uint32_t alias, const mbcf::Request& r, std::function<void()> k);
  uint32_t alias_of(uint32_t ptask) const;
  // ---- The send ring (8.3.3): what a task rings for lies in host memory, in pinned pages the OS
  // gives it next to its doorbell alias (outside its page table, at kSendArea in its context):
  //   +0  the number of structures the PGE has fetched (written by the PGE, mod 2^32)
  //   +kSendAreaHeader + e * kSendEntryBytes: entry e, a send structure, big-endian words:
  //     MBCF request:  +0 kSendMbcf << 24 | B, +4 target Ltask, +8 payload address (kNoAddr:
  //                    none), +12 P payload bytes, +16 B bytes: the commands as they travel
  //                    (Fig. 6.1, from the command word), the payload left out when an address
  //                    is given (it follows them in the image)
  //     datagram:      +0 kSendDatagram << 24 | protocol << 8 | bypass, +4 destination Pnode,
  //                    +8 source port << 16 | destination port, +12 payload address, +16 bytes
  // The user library writes the lowest free entry and rings the task's alias; the doorbell names the
  // entry. The PGE reads the structure, and the payload at its address, when it fetches them
  // (the task must not change them before: `fetched` tells it when), and frees the entry. The
  // PME builds the packet's header from the task's identity (the ULI's) and its translation
  // table, never from the structure, and refuses a structure that does not decode or breaks a
  // rule of 4.4 (system.host<n>.nic.bad_requests). A task with every entry unfetched waits for one.
  static constexpr uint32_t kSendArea = 0xfff00000u, kSendAreaHeader = 64, kSendEntryBytes = 1536;
  static constexpr uint32_t kSendMbcf = 1, kSendDatagram = 2, kMbcfStructHeader = 16, kDatagramStructBytes = 20;
  static uint32_t send_entry_laddr(uint32_t e) { return kSendArea + kSendAreaHeader + e * kSendEntryBytes; }
  // ---- The doorbell (8.3.2, the ULI's Memory-based Virtual Interface), the register behind
  // the BIU's `pio_socket` (host_bus.h): one register with a distinct alias in each host page of
  // the card's window (alias a at a x page_bytes). The OS maps each task's alias page into that
  // task alone, so the alias a store comes through names the task (a task's store to any other
  // faults in its MMU: rejected_requests). The stored word is kind << 24 | entry: what the
  // structure in that entry of the task's send ring is (kSendMbcf, kSendDatagram). An unassigned
  // alias is ignored (uli.rejected); an entry beyond the ring or a kind of neither is refused.
  uint64_t doorbell_offset(uint32_t alias) const { return uint64_t{alias} * c_.page_bytes; }
  static uint32_t doorbell_value(uint32_t kind, uint32_t entry) { return kind << 24 | entry; }
  // The send structure the user library writes for an MBCF request to `ltask`: `p`'s commands,
  // the payload of a single command left at `src_laddr` when that is not kNoAddr.
  static std::vector<uint8_t> mbcf_structure(uint32_t ltask, const mbcf::Packet& p, uint32_t src_laddr);
  // The task's view of its send ring: the PGE's count of fetched structures (a load), and any
  // bytes of its area (tests: what a program might store there).
  uint32_t fetched(uint32_t ptask);
  void send_area_write(uint32_t ptask, uint32_t off, const std::vector<uint8_t>& bytes);
  std::vector<uint8_t> send_area_read(uint32_t ptask, uint32_t off, uint32_t n);
  // A task rings a send structure it wrote itself, whatever its bytes (the library's checks
  // skipped): false only when the node has no power.
  bool ring_structure(uint32_t ptask, uint32_t alias, std::vector<uint8_t> structure, std::function<void()> k);
  // The request images in EM, from the PGE's fetch to the PME's header build.
  FramePool& request_images() { return *reqb; }
  Pme& pme() { return *pme_; }
  Tlb& tlb() { return *tlb_; }
  Em& em() { return *em_; }
  const DmaEngine& pge() const { return *pge_; }
  HostBus& bus() { return *bus_; }
  Kli& kli() { return *kli_; }
  DmaEngine& pge() { return *pge_; }
  DmaEngine& adma() { return *adma_; }
  DmaEngine& ldma_tx() { return *ldma_tx_; }
  DmaEngine& ldma_rx() { return *ldma_rx_; }
  // The frame buffers in EM (see to_buffer, ldma_receive).
  FramePool& tx_buffers() { return *txb; }
  FramePool& rx_buffers() { return *rxb; }
  // ICU messages from the host kernel to the PME (the top byte is the type).
  static constexpr uint64_t kIcuInvalidatePage = 1ull << 56;  // | ctx << 32 | page
  static constexpr uint64_t kIcuFlushContext = 2ull << 56;    // | ctx << 32
  // The security association node `node` holds for `peer` (nullptr before the key exchange).
  const SecurityAssociation* sa(uint32_t peer) const { return kx_.peer(peer).sa.get(); }
  // The CAU (nullptr without one) and the key slot of that SA in it.
  Cau* cau() { return cau_.get(); }
  uint32_t key_slot(uint32_t peer) const { return kx_.peer(peer).slot; }
  // Starts the Diffie-Hellman exchange with `peer` now (it also starts by itself on the first
  // frame for a peer without keys when crypto.keys = dh).
  void start_key_exchange(uint32_t peer) { kx_.start(peer); }
  // ---- Message passing (8.3.3): UDP/IP and TCP/IP datagrams sent by a user task through its
  // doorbell and steered by the receiving NIC into the receive structure of the task bound to
  // the port (UDP) or connection (TCP), or into the kernel's when none is. No system call and
  // no copy by the host CPU at either end.
  //
  // A receive structure (ring) in the task's memory, little-endian words like the FIFO's:
  //   +0 slots, +4 slot bytes, +8 head (written by the NIC), +12 tail (written by the task);
  //   slot i at +16 + (i % slots) * slot bytes: +0 payload length, +4 source Pnode,
  //   +8 source port << 16 | destination port, +12 TCP sequence, +16 the payload.
  static constexpr uint32_t kRingHeader = 16, kSlotHeader = 16;
  struct DatagramRequest {
    uint8_t proto = kIpProtoUdp;
    uint32_t dst_node = 0;
    uint16_t src_port = 0, dst_port = 0;
    uint32_t laddr = 0, len = 0;  // the payload in the sender's space
    bool bypass = false;          // untranslated addresses: kernel requests only (the PGE rejects a task's)
  };
  struct RxInfo {
    uint32_t src_node = 0, seq = 0;
    uint16_t src_port = 0, dst_port = 0;
  };
  // The user library: lays out an empty ring (the task's own stores).
  void init_ring(uint32_t ptask, uint32_t ring_laddr, uint32_t slots, uint32_t slot_bytes);
  // The OS binds a port, or a TCP connection with its initial sequence numbers, to a ring of
  // `ptask` by writing the connection table in EM through the KLI. False (an error for the
  // caller) when the table is full, the key is taken or the ring is not the task's.
  bool bind_udp(uint32_t ptask, uint16_t port, uint32_t ring_laddr);
  bool connect_tcp(uint32_t ptask, uint16_t local_port, uint32_t remote_node, uint16_t remote_port,
                   uint32_t ring_laddr, uint32_t send_iss, uint32_t recv_irs);
  // A user task sends a datagram; `k` runs when the doorbell write returns. False (nothing
  // done) when it cannot be a datagram: UDP longer than IP allows (kUdpMaxPayload; longer than
  // one frame goes in fragments), TCP longer than one frame, no such task or peer, or a TCP
  // connection the task does not own.
  bool send_datagram(uint32_t ptask, const DatagramRequest& r, std::function<void()> k);
  // The largest IP packet one frame carries (1500 less what sealing adds), and whether a
  // datagram of `len` payload bytes can be sent (UDP up to IP's limit, in fragments beyond one
  // frame; TCP in one frame).
  uint32_t mtu() const { return 1500 - frame_overhead_; }
  bool sendable(uint8_t proto, uint64_t len) const {
    return proto == kIpProtoUdp ? len <= kUdpMaxPayload : len + kIpHeader + kTcpHeader <= mtu();
  }
  // The task takes the oldest datagram of its ring (loads, and a store of the tail): false if
  // the ring is empty.
  bool take(uint32_t ptask, uint32_t ring_laddr, std::vector<uint8_t>* payload, RxInfo* info = nullptr);
  // A TCP connection's bytes sent or queued and not yet acknowledged by its peer (0: none, or
  // no such connection).
  uint32_t tcp_unacked(uint16_t local_port, uint32_t remote_node, uint16_t remote_port) const;
  uint64_t tcp_retransmits() const { return ip.tcp_retransmits->value; }
  // Datagrams for a bound port that a node's NIC could not deliver (ring full or unusable, TCP
  // out of order, bad checksum or header, no receive buffer at the LDMA, a reassembly given
  // up). A datagram whose fragments were all lost is not among them: nothing of it came.
  uint64_t datagrams_dropped() const {
    const IpStats& x = ip;
    return x.rx_ring_full->value + x.rx_bad_ring->value + x.rx_out_of_order->value + x.rx_bad_checksum->value + x.rx_malformed->value +
           x.rx_no_buffer->value + x.rx_reasm_timeout->value + x.rx_reasm_bad->value + x.rx_reasm_no_room->value;
  }
  // Sealed frames a NIC that encrypts lost before it could open them: no receive buffer at the
  // LDMA, or refused by the CAU. What they carried cannot be known (Go-back-N resends MBCF
  // ones); a harness whose only sealed traffic is datagrams counts them as datagrams lost.
  uint64_t sealed_frames_lost() const {
    const CryptoStats& x = cs;
    if (!m_.crypto.enabled()) return 0;  // (no crypto counters: nothing is sealed)
    return x.rx_no_buffer->value + x.rej_auth->value + x.rej_format->value + x.rej_no_sa->value + x.rej_replay->value;
  }
  // Frames for no bound port, in the kernel's receive structure, oldest first.
  const std::deque<std::vector<uint8_t>>& kernel_received() const { return ip_steering_.kernel_received(); }

 private:
  // The cards that build it, and the three parts of its firmware that are classes of their
  // own (they work on the card's EM, units and tables as its other routines do).
  friend class Mbp2Cards;
  friend class PmeTcp;
  friend class KeyExchange;
  friend class IpSteering;
  using Built = mbcf::Executor::Built;
  using Order = mbcf::gbn::Order;
  using Rx = mbcf::Nic::Rx;
  using RxReady = mbcf::Nic::RxReady;
  using InMac = std::function<void(std::vector<uint8_t>&&)>;
  // The card as the host's MBCF stack sees it (mbcf::Nic): frames to send go through EM's
  // transmit buffers (sealed there when the NIC encrypts) and the LDMA to the MAC; frames from
  // the wire through the LDMA into EM's receive buffers, where the PME's receive routine reads
  // them. Key exchanges and IP frames are the PME's own and never reach the routine.
  class Port final : public mbcf::Nic {
   public:
    // `wire`: the node's port on it is where the MAC sends (the factory's, EtherSystem::MakeNic).
    Port(Mbp2Nic& s, net::EtherSegment& wire) : s_(s), wire_(wire) {}
    net::EtherSegment& wire() const { return wire_; }
    void transmit(uint32_t dst, Frame&& frame, Sent sent) override;
    void receive(Frame&& frame, RxReady ready) override { s_.nic_receive(std::move(frame), std::move(ready)); }
    Frame take(Rx& r) override { return s_.rx_take(r); }
    void rx_idle() override { s_.rx_idle(); }
    void power_off() override { s_.nic_power_off(); }
    void page_unmapped(uint32_t ptask, uint32_t laddr) override { s_.page_unmapped(ptask, laddr); }
    void task_left(uint32_t ptask) override { s_.task_left(ptask); }
    void task_created(uint32_t ptask) override { s_.task_created(ptask); }
    uint32_t frame_overhead() const override { return s_.frame_overhead_; }
    // PME interrupts per second and utilisation, each unit's busy fraction, crypto.
    nlohmann::ordered_json summary() const override { return s_.summary(); }

   private:
    Mbp2Nic& s_;
    net::EtherSegment& wire_;
  };
  // The MBCF firmware on the card's PME (mbcf::Executor): the protocol work EtherSystem decides
  // runs here instead of in the host kernel (8.3.3). Requests come by doorbell (issue), the
  // receive routine runs on the PME, the ADMA moves the commands' data through the TLB, the
  // OCU checks the order, and an invocation interrupts the host through the ICU.
  class Firmware final : public mbcf::Executor {
   public:
    // Built before its card (the cluster builds a host's executor first): it finds the card
    // by node when it first works.
    Firmware(Mbp2Cards& cards, uint32_t node) : cards_(cards), node_(node) {}
    uint64_t proto_ps(double kernel_cycles) const override { return n().pme_->host_cycles_ps(kernel_cycles); }
    void work(uint64_t dur, std::function<void()> fn) override { n().protocol_work(dur, std::move(fn)); }
    void issue(uint32_t ptask, const mbcf::Request& r, Built b, std::function<void()> k) override {
      n().send_packet(ptask, n().alias_of(ptask), r, std::move(b), std::move(k));
    }
    uint64_t rx_entry_ps() override { return n().rx_entry_ps(); }
    std::string track_name() const override { return n().pme().track_name(); }
    void upcall(uint64_t msg, std::function<void()> k) override { n().host_upcall(msg, std::move(k)); }
    mbcf::gbn::Order order_of(uint32_t src, uint8_t end_p, mbcf::gbn::Order counted, uint64_t* saved) override {
      return n().order_of(src, end_p, counted, saved);
    }
    void arrived_set(uint32_t src, uint8_t arrived) override { n().arrived_set(src, arrived); }
    const mbcf::FrameMap* frames() const override { return &n().frames; }
    mbcf::WriteBuffer* writes() override { return &n().adma_writes; }
    void quiesce(std::function<void()> fn) override { n().nic_quiesce(std::move(fn)); }
    void request_numbered() override { n().request_numbered(); }
    uint64_t data_move_ps(const mbcf::Packet& p, mbcf::ExecResult& r) override { return n().data_move_ps(p, r); }
    void reply_data(uint32_t handle, std::vector<mbcf::Command>& replies) override { n().nic_reply_data(handle, replies); }
    void run_pollers(uint64_t at) override { n().fw_run_pollers(at); }

   private:
    Mbp2Nic& n() const;
    Mbp2Cards& cards_;
    const uint32_t node_;
  };
  // The executor's work (mbp2_firmware.cpp, mbp2_nic.cpp).
  void protocol_work(uint64_t dur, std::function<void()> fn);
  uint64_t rx_entry_ps();
  uint64_t data_move_ps(const mbcf::Packet& p, mbcf::ExecResult& r);
  void nic_reply_data(uint32_t handle, std::vector<mbcf::Command>& replies);
  void fw_run_pollers(uint64_t at);
  void nic_quiesce(std::function<void()> fn);
  void host_upcall(uint64_t msg, std::function<void()> k);
  Order order_of(uint32_t src, uint8_t end_p, Order counted, uint64_t* saved);
  void arrived_set(uint32_t src, uint8_t arrived);
  // The OS gave a new task its doorbell alias; a node's part of nic_summary.
  void task_created(uint32_t ptask);
  nlohmann::ordered_json summary() const;
  // An encoded frame for `dst` handed to the card now: `in_mac` gets the frame that goes on the
  // wire when it is in the MAC (sealed when the NIC encrypts), or an empty one when the NIC
  // could not send it.
  void nic_transmit(uint32_t dst, std::vector<uint8_t>&& frame, InMac in_mac);
  // A frame from the wire: `ready` gets it when the receive routine may look at it, or nullptr
  // when the PME consumed it (key exchange, IP) or it was lost.
  void nic_receive(std::vector<uint8_t>&& frame, RxReady ready);
  // The receive routine takes the oldest frame (kept in its receive buffer until the next
  // take, or rx_idle).
  std::vector<uint8_t> rx_take(Rx& r);
  void rx_idle();
  // EM is volatile: keys made by a key exchange are lost with the power (static keys and their
  // sequence counters are kept, as RFC 4303 3.3.3 asks of manual keying).
  void nic_power_off();
  // A frame left the MAC: the LDMA's transmit descriptor is collected.
  void tx_done();
  // The OS unmapped a page (the PME drops its translation), or a task left the node (the PME
  // flushes the task's context from the TLB, once the ADMA's writes into it are made).
  void page_unmapped(uint32_t ptask, uint32_t laddr);
  void task_left(uint32_t ptask);
  using Buf = FramePool::Buf;
  // The security state per peer is the key exchange's (mbp2_kx.h).
  using PeerSec = KeyExchange::Peer;
  static constexpr size_t kHeldRxFrames = KeyExchange::kHeldRxFrames;
  static constexpr uint32_t kRxReserve = KeyExchange::kRxReserve;
  struct CryptoStats {
    Counter *sealed, *opened, *enc_bytes, *dec_bytes, *auth_bytes, *rej_auth, *rej_format, *rej_plain, *rej_no_sa, *rej_replay;
    Counter* rx_no_buffer = nullptr;
    Counter *rekeys = nullptr, *rekeys_seq = nullptr, *seq_exhausted = nullptr, *opened_old = nullptr, *held_rx = nullptr, *confirmed = nullptr;
    Counter* seal_failed = nullptr;
    Counter *kx_msgs, *kx_retries, *kx_done, *kx_ps, *kx_bad, *kx_given_up = nullptr, *kx_dropped = nullptr, *kx_carried = nullptr;
  };
  struct IpStats {
    Counter *tx, *tx_bytes, *tx_rejected, *tx_bypass_rejected, *rx, *rx_bytes, *rx_kernel, *rx_kernel_dropped, *rx_ring_full, *rx_bad_ring,
        *rx_malformed, *rx_bad_checksum, *rx_not_ours, *rx_out_of_order, *rx_no_buffer, *tx_fragments, *rx_fragments,
        *rx_fragments_dropped, *rx_fragment_duplicates, *rx_reassembled, *rx_reasm_timeout, *rx_reasm_bad, *rx_reasm_no_room,
        *tx_image_waits;
    Counter *tcp_acks_tx, *tcp_acks_rx, *tcp_dup_acks, *tcp_retransmits, *tcp_fast_retransmits, *tcp_timeouts, *tcp_probes,
        *tcp_aborts, *tcp_window_waits;
  };
  struct TxWait {
    uint32_t dst;
    std::vector<uint8_t> frame;
    InMac in_mac;
    bool seal;
  };
  // The ADMA and the PGE reach host memory at the frames the TLB gives (its entry, once the PME
  // has refilled it); a page without one is walked from the page tables in EM, which are the
  // OS's. So a frame the OS moved without invalidating the entry is still written: the OS
  // must tell the NIC (ICU) first, as with any I/O MMU.
  struct TlbFrames : public mbcf::FrameMap {
    const Tlb* tlb = nullptr;
    uint32_t frame(const mbcf::Task& t, uint32_t vpage, const mbcf::Pte& pte) const override {
      uint64_t pp = 0;
      return tlb->probe(t.ptask, vpage, &pp) ? static_cast<uint32_t>(pp) : pte.frame;
    }
  };
  // ---- the card's state (EM, the units, the firmware's tables)
  std::unique_ptr<HostBus> bus_;
  std::unique_ptr<Em> em_;
  std::unique_ptr<Tlb> tlb_;
  TlbFrames frames;  // the ADMA's and PGE's view of host memory
  // The commands' writes into host memory, computed by the PME, until the ADMA makes them
  // (8.3.3): the PME's later commands see them, the host CPU only once the ADMA wrote them.
  // Each is staged in EM in the image buffer of its ADMA descriptor's slot (adma_stage()), and
  // retired in order as its descriptor completes (adma_numbers: their descriptors' numbers).
  mbcf::WriteBuffer adma_writes{FramePool::kBufBytes};
  std::deque<uint32_t> adma_numbers;
  uint32_t adma_stages = 0;  // where the staging buffers begin in EM
  bool poll_on_drain = false;  // a poll ran while writes were still buffered
  // The receive routine's ADMA descriptors, posted when its work is done (each returns its
  // number), and what it does once they are done before it goes on (an atomic's second step).
  std::vector<std::function<uint32_t()>> adma_posts;
  std::function<void(std::function<void()> resume)> adma_then;
  // What the ADMA read from host memory for a READ's or an atomic's reply, by handle
  // (ExecResult::nic_reply): its descriptors still to complete, and the bytes they brought
  // into EM, in order. An atomic's (`atomic`: the command) are COMP_SWAP's reference word,
  // then the target; the PME computes from them (atomic_step) and leaves in `bytes` the old
  // contents the reply carries, in `status` its status.
  struct AdmaRead {
    uint32_t pending = 0;
    bool failed = false;
    std::vector<uint8_t> bytes;
    std::optional<mbcf::Command> atomic;
    uint32_t ptask = 0;
    uint64_t pa = 0;                 // the target's host physical address
    std::vector<uint8_t> exec_old;   // what the semantics found when the PME checked it
    mbcf::Status exec_status = mbcf::Status::Succeeded, status = mbcf::Status::Succeeded;
    bool computed = false;
  };
  uint32_t atomics = 0;  // atomics read but not yet computed: their writes are still to come
  std::unordered_map<uint32_t, AdmaRead> adma_reads;
  uint32_t next_read = 0;
  std::deque<std::function<void()>> quiesce_waiters;  // light-weight calls waiting for the ADMA
  std::unique_ptr<Pme> pme_;
  std::unique_ptr<Kli> kli_;
  std::unique_ptr<Icu> icu_;
  std::unique_ptr<Uli> uli_;
  std::unique_ptr<DmaEngine> pge_, adma_, ldma_tx_, ldma_rx_;
  // The firmware's side of each ring: what each posted descriptor is for, collected at the
  // ring's interrupt (the CAU's too, when there is one).
  std::unique_ptr<FirmwareRing> pge_ring, adma_ring, ldma_tx_ring, ldma_rx_ring, cau_ring;
  // The LDMA's ports: EM, and the MAC's transmit and receive FIFOs (frames, by number).
  std::unique_ptr<EmPort> em_port;
  MacFifo mac_tx, mac_rx;
  // The transmit FIFO (mbp2.mac_tx_fifo_bytes) holds a frame from the LDMA's start until its
  // last bit left the wire: frames in transmit buffers wait, in order, for room (the wire
  // paces the LDMA, and through the buffers everything behind it). Its frames' lengths, in
  // the order they go.
  uint32_t mac_tx_bytes = 0;
  std::deque<uint32_t> mac_tx_lens;
  std::deque<std::pair<Buf, InMac>> mac_wait;
  // Frame buffers in EM: one per LDMA transmit descriptor, and the receive ring's
  // (mbcf.rx_ring). Frames that find no transmit buffer wait in order.
  std::unique_ptr<FramePool> txb, rxb;
  std::unique_ptr<FramePool> reqb;  // request images, from the PGE's fetch to the header build
  // The PGE's images of datagrams' payloads: mbp2.ring_entries of one frame each, and
  // kLargeImages for datagrams beyond a frame (up to IP's 64 KiB, cut into fragments by the
  // PME: two, so one is fetched while the other's fragments leave). An image is held from the
  // fetch until the LDMA has read the last frame made from it (the LDMA gathers a frame's
  // headers from its transmit buffer and its payload from the image): `dg_held` counts what
  // still needs each (the fetch, then its frames not yet read), the small ones first. The
  // PGE takes a datagram only when an image for it is free (`pge_blocked` until one is).
  uint32_t dg_images = 0;
  uint32_t dg_large = 0;
  std::vector<uint32_t> dg_held;
  // What the PME made of each image when the PGE's completion came (by buffer serial): the
  // header build decodes again only if the bytes in EM changed meanwhile (a speed-up only).
  struct Decoded {
    std::vector<uint8_t> bytes;
    bool ok = false;
    mbcf::Packet packet;
  };
  std::unordered_map<uint64_t, Decoded> decoded;
  std::deque<TxWait> tx_wait;
  std::map<uint64_t, Buf> rx_queued;  // MBCF frames handed to the receive routine, by Rx tag
  Buf rx_current;                     // the one it works on (held until it takes the next)
  Counter* rx_oversized = nullptr;
  // The card's requests: written and rung by user tasks, refused for a doorbell alias not the
  // task's own, doorbell stores retried for want of a request slot, send structures refused,
  // tasks waiting for a send-ring entry; ICU messages of no known type; atomics whose
  // operands changed between the PME's check and the ADMA's read; FIFO and signal structures
  // the ADMA read for the PME.
  Counter *host_requests = nullptr, *rejected_requests = nullptr, *slot_retries = nullptr, *bad_requests = nullptr,
          *ring_waits = nullptr, *icu_bad = nullptr, *atomic_changed = nullptr, *structure_reads = nullptr;
  std::unique_ptr<Cau> cau_;
  std::unique_ptr<Meac> meac_;
  std::unique_ptr<Csu> csu_;
  std::unique_ptr<Ocu> ocu_;
  IpStats ip{};
  uint32_t ocu_used = 0;
  // The OCU register that checks each peer's END_P (-1: the firmware checks). MBCF peers
  // take the first registers, TCP connections the rest.
  std::vector<int32_t> mbcf_ocu;
  // Requests the PGE has yet to start, in order, each with the TLB refill it needs first;
  // one returns false when it cannot start yet (no image free).
  std::deque<std::pair<uint64_t, std::function<bool()>>> pge_wait;
  bool pge_stalled = false;  // behind a TLB refill
  bool pge_blocked = false;  // the request in front waits for an image
  uint16_t ip_id = 0;
  IpSteering ip_steering_{*this};  // received datagrams: checked, reassembled, delivered
  PmeTcp tcp_{*this};  // TCP on the PME: its connections' queues, windows and timers
  KeyExchange kx_;  // the security associations with each peer, and the exchange that makes them
  CryptoStats cs{};
  bool interrupt_next = false;  // the next protocol work starts with an interrupt (a receive)
  uint32_t next_alias = 0;
  // A task's send ring: its pages (consecutive host frames) and which entries the NIC owns.
  struct SendRing {
    std::vector<uint32_t> frames;
    std::vector<bool> posted;  // rung and not yet fetched (or refused)
    uint32_t fetched = 0;
    std::deque<std::function<void()>> waiters;  // programs waiting for a free entry
  };
  SendRing& send_ring(uint32_t ptask);
  // Who reaches the send area: the host, at the pinned frames through the OS's DMI view; or the
  // NIC (the PGE's reads of a structure, its write of the fetched count) through the BIU's DMA
  // socket (b_transport into host memory) at the frames its TLB gives.
  enum class Via { Host, Biu };
  // [off, off + n) of the area, read into or written from `buf`. False only when the memory
  // refused a transfer through the BIU (the delay it annotates waits in the BIU for the engine,
  // PgeWalker::take_delay_ps).
  bool area_copy(uint32_t ptask, uint32_t off, uint8_t* buf, uint32_t n, bool write, Via via = Via::Host);
  // The PGE's DMA read of task memory at `laddr` of `t` through the BIU's socket (its TLB, or
  // the page table). False when the memory refused a transfer.
  bool pge_task_read(const mbcf::Task& t, uint32_t laddr, uint8_t* out, uint32_t n);
  // The host kernel posts a message to the PME through the ICU (two programmed words and an
  // interrupt); the PME's handler takes every waiting one.
  void os_to_pme(uint64_t msg);
  // The NIC is done with entry `e` (fetched: the PGE read it, and counts it).
  void free_entry(uint32_t ptask, uint32_t e, bool fetched);
  // Translates the pages of [laddr, laddr + bytes) of task `ctx`: returns the PME time spent on
  // refills (each miss interrupts the PME, which reads the entry from the page tables in EM),
  // and the host physical address of the first byte.
  uint64_t translate(uint32_t ctx, uint32_t laddr, uint32_t bytes, uint64_t* pa);
  // The NIC side of an MBCF request in entry `e` of the task's send ring: the PGE fetches it
  // into a request image in EM, the PME builds the packet from it. Run as the doorbell is taken:
  // the request counts for its barrier colour (EMB) at once, from the structure's commands.
  void fetch_request(uint32_t ptask, uint32_t e);
  void build_from_image(uint32_t ptask, uint32_t ltask, FramePool::Buf img);
  // The commands of a request image, decoded behind the header the PME writes; false if they
  // do not decode.
  static bool decode_image(const std::vector<uint8_t>& img, mbcf::Packet* p);
  // A structure the NIC refuses: counted, its entry free and its request slot too.
  void bad_request(uint32_t ptask, uint32_t e, bool slot);
  // The user task takes a free entry of its send ring (waiting for one), writes `structure`
  // (of `kind`: kSendMbcf, kSendDatagram) into it (`build` host time) and rings `alias`.
  void host_request(uint32_t ptask, uint32_t alias, uint64_t build, std::vector<uint8_t> structure, uint32_t kind,
                    std::function<void()> k);
  // The task's doorbell store: the CPU's programmed write through its `pio` socket into the
  // card's register window (the BIU's `pio_socket`), `doorbell_value` at `doorbell_offset`.
  void doorbell(uint32_t ptask, uint32_t alias, uint32_t entry, uint32_t kind, std::function<void()> k);
  // The card's side of a store into its register window (PioTarget): the ULI's doorbell
  // register, one alias per host page. An MBCF structure needs a request slot in EM (requests
  // taken and not yet sent, those waiting for their peer's window among them): with none, the
  // store is retried, holding its initiator, until a request leaves.
  Answer pio_write(uint64_t offset, uint32_t value, uint64_t at, bool again) override;
  // The doorbell the bus completed: the ULI names the task by the alias, and the entry goes to
  // the PGE as what the store said it is.
  void latch(uint32_t alias, uint32_t kind, uint32_t entry, bool slot);
  void request_numbered();
  void before_end_of_elaboration() override;
  // [laddr, laddr + n) mapped in `t` with `perm` and present.
  static bool usable(const mbcf::TaskSpace& ts, const mbcf::Task& t, uint64_t laddr, uint64_t n, uint8_t perm);
  void send_packet(uint32_t ptask, uint32_t alias, const mbcf::Request& r, Built b, std::function<void()> k);

  // message passing
  // The connection table in EM's kernel area (KLI), 32-byte big-endian entries:
  //   +0 protocol << 24 | local port (0: free)   +4 remote Pnode << 16 | remote port (TCP)
  //   +8 ptask + 1                               +12 ring address in the task
  //   +16 TCP next sequence to send              +20 OCU register + 1 (0: order checked by firmware)
  //   +24 TCP next sequence expected (firmware)  +28 the NIC's producer index of the ring
  static constexpr uint32_t kConnTable = 4096, kConns = 128, kConnBytes = 32;
  int64_t find_conn(uint8_t proto, uint16_t local_port, uint32_t remote_node, uint16_t remote_port) const;
  int64_t add_conn(const std::vector<uint32_t>& words);  // its index, or -1 when the table is full
  void datagram_fetch(uint32_t ptask, uint32_t e);
  void datagram_send(uint32_t ptask, const DatagramRequest& r, std::vector<uint8_t> payload, int32_t img);
  // A frame the MAC holds goes on the wire (nothing when the NIC could not send it: empty).
  void to_wire(uint32_t dst, std::vector<uint8_t>&& b);
  static constexpr uint32_t kLargeImageBytes = 65536, kLargeImages = 2;
  static bool is_ip(const std::vector<uint8_t>& frame);
  // A PGE request whose translations cost `refill` of PME time (0: all hits): `post` starts
  // its DMA once the PME has refilled the TLB; requests are served in order.
  void pge_submit(uint64_t refill, std::function<bool()> post);
  // The PGE's datagram images (Units::dg_held): a free one for a payload beyond a frame or
  // not, or -1; where it lies in EM; one use of it over (a frame read by the LDMA, or the
  // datagram refused), from the incarnation `inc`.
  int32_t take_image(bool large);
  uint32_t image_offset(int32_t img) const;
  void image_done(int32_t img, uint32_t inc);
  void pge_next();
  // Starts a request the PGE has reached; one that cannot start yet goes back in front and
  // blocks the PGE (false).
  bool pge_start(std::function<bool()>& post);
  // The PGE fetches a send structure of `sbytes` and `data` payload bytes into EM: returns the end.
  // The PGE's descriptor for the send structure at `entry` of `ptask`'s send area (its context):
  // the engine walks it into `dst` in EM; the bus and EM time are those of reading the
  // structure at pa_struct and the payload at pa_data. `done` reads the completion.
  void pge_fetch(uint32_t ptask, uint32_t entry, uint32_t dst, uint64_t pa_struct, uint32_t sbytes, uint64_t pa_data,
                 uint32_t data, uint32_t image, DmaEngine::Done done);
  // The PGE's source port: it reads a send structure in a task's send area (through its TLB),
  // and gives the request image it describes: an MBCF request's commands and payload, a
  // datagram's payload. Every byte it moves is read through the BIU's DMA socket. A structure that does not decode, an image length other than the
  // descriptor's, or a payload the task cannot read fails the descriptor.
  bool pge_walk(uint64_t laddr, uint32_t ptask, uint8_t* out, uint32_t n);
  struct PgeWalker : public DmaPort {
    Mbp2Nic* nic = nullptr;
    bool read(uint64_t addr, uint32_t ctx, uint8_t* out, uint32_t n) override { return nic->pge_walk(addr, ctx, out, n); }
    bool write(uint64_t, uint32_t, const uint8_t*, uint32_t) override { return false; }  // host memory: the ADMA's
    uint64_t take_delay_ps() override { return nic->bus_->take_delay_ps(); }  // its reads went through the BIU
  };
  PgeWalker walker_;
  // An ADMA descriptor that wrote a buffered write completed: it leaves the buffer.
  void adma_wrote(const DmaEngine::Desc& d);
  // Nothing the commands wrote is still on its way into host memory: the light-weight calls
  // and the pollers that waited for that go on.
  void adma_drained();
  // Posts the ADMA reads of the task's [laddr, laddr + n) into EM (one descriptor per page),
  // for the reply with handle h (0: for the PME alone, which keeps nothing of it: an MBCF
  // structure it reads before it acts on it); returns the TLB refills' time, sets *pa to the
  // first byte's.
  uint64_t adma_read(uint32_t ptask, uint32_t laddr, uint32_t n, uint32_t h, uint64_t* pa);
  // An atomic's second step, once the ADMA has read its operands into EM: the PME computes the
  // result from them and, if the target changes, has the ADMA write it; then `resume`.
  void atomic_step(uint32_t h, std::function<void()> resume);
  // The ADMA's staging buffer in EM for its next descriptor.
  uint32_t adma_stage() const;

  // crypto (crypto.h): the CAU's work (or the firmware's) over a frame in EM, then `k`.
  // The CAU (or, without one, the PME's firmware) seals or opens the frame in `b` under the SA
  // `id` of `peer`; `k` gets its verdict and the buffer with the result's length. `sealed`:
  // the length of the frame's sealed form (what the cipher and hash run over).
  using CryptDone = std::function<void(Cau::Error, Buf)>;
  void crypt_work(const char* what, Cau::Op op, FramePool& pool, Buf b, uint32_t sealed, uint32_t peer, uint64_t id,
                  uint32_t cblocks, uint32_t hblocks, CryptDone k);
  // Installs `s.sa` (just made) for `peer`: its serial, and its key slot loaded (at boot, by
  // the OS writing EM; later through the CAU's ring).
  void install_keys(uint32_t peer, bool boot);
  void try_open(uint32_t spi, Buf b, uint64_t id, uint32_t seq, uint32_t cblocks, uint32_t hblocks, uint32_t body, RxReady ready);
  // A frame the keys allow to go (rekeying first when its sequence numbers ran out).
  void seal_and_send(uint32_t dst, std::vector<uint8_t>&& frame, InMac in_mac);
  // The frame takes a transmit buffer in EM (in order, waiting for one if need be), is sealed
  // there when the NIC encrypts, and goes to the MAC through the LDMA.
  // `seal`: an MBCF or IP frame of a NIC that encrypts (a key-exchange message is not sealed).
  void to_buffer(uint32_t dst, std::vector<uint8_t>&& frame, InMac in_mac, bool seal);
  void from_buffer(uint32_t dst, Buf b, InMac in_mac, bool seal);
  void ldma_send(Buf b, InMac in_mac);
  void ldma_start(Buf b, InMac in_mac);
  // A frame left the MAC's transmit FIFO (the oldest, off the wire), or `unsent` bytes the
  // LDMA reserved and did not put there.
  void mac_freed(uint32_t unsent = 0);
  bool mac_room(uint32_t len) const;
  void tx_buffers_freed();
  // The LDMA writes a frame from the MAC into a receive buffer; `k` runs at its completion
  // with the buffer (nothing happens if the power went meanwhile). False: no buffer was free,
  // the frame is lost.
  bool ldma_receive(std::vector<uint8_t>&& frame, std::function<void(Buf)> k);
  // Hands an MBCF frame in a receive buffer to the receive routine.
  void to_routine(Buf b, const RxReady& ready);
  void open_received(Buf b, RxReady ready);
  // The SA to seal the next frame for the peer under, and its counter; nullptr: none yet.
  SecurityAssociation* out_sa(PeerSec& s, uint32_t** seq) const;


  Mbp2Cards& cards_;
  const uint32_t node_;
  net::EtherSegment& wire_;
  // What the cards of a cluster share (Mbp2Cards'): the clock, statistics, the cluster and
  // its configuration, the card's parameters, the random stream of IVs and Diffie-Hellman
  // values, and the serials of timers and SAs.
  Calendar& cal_;
  Stats& stats_;
  mbcf::EtherSystem* const sys_;
  const mbcf::EtherSysConfig& c_;
  const Mbp2Config& m_;
  // Bytes sealing adds to every frame (0 without crypto): the Port's Nic::frame_overhead.
  const uint32_t frame_overhead_;
  Rng& iv_rng_;
  uint64_t& timer_serial_;
  uint64_t& sa_serial_;
  std::map<uint32_t, SendRing> rings_;  // by Ptask (host memory)
};

}  // namespace mbpsim::mbp2
