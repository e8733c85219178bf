// The key exchange of one MBP2 card (mbp2_kx.cpp; thesis 8.3.6): the security associations it
// holds with each peer, and the Diffie-Hellman exchange on the MEAC1024 (or in the PME's
// firmware) that makes them, in messages of their own EtherType handled by the PME. The card
// owns one (Mbp2Nic::kx_); its frame path seals and opens under the SAs kept here
// (mbp2_frames.cpp), and asks for an exchange when a frame finds no keys.
#pragma once
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "models/mbcf/nic.h"
#include "models/mbp2/crypto.h"
#include "models/mbp2/frame_pool.h"

namespace mbpsim::mbp2 {

class Mbp2Nic;

class KeyExchange {
 public:
  using Buf = FramePool::Buf;
  using RxReady = mbcf::Nic::RxReady;
  using InMac = std::function<void(std::vector<uint8_t>&&)>;
  // What a NIC keeps per peer for encryption: the security association, and the state of the
  // Diffie-Hellman exchange that makes it.
  static constexpr size_t kHeldRxFrames = 64;  // received frames a NIC holds for keys being derived
  static constexpr uint32_t kRxReserve = 4;    // receive buffers never held for keys (a RESP must land)
  struct Peer {
    // Each SA has a serial (`sa_id`, `old_id`: which keys a frame in the CAU was posted under)
    // and, with a CAU, a key slot: 2 x peer and 2 x peer + 1 by turns (`installs`), so a new
    // SA never takes the slot of the one it renews.
    std::unique_ptr<SecurityAssociation> sa;
    uint64_t sa_id = 0, old_id = 0;
    uint32_t slot = 0, old_slot = 0, installs = 0;
    bool is_new(uint64_t id) const { return sa && sa_id == id; }
    bool is_old(uint64_t id) const { return old_sa && old_id == id; }
    // The SA of serial `id` (nullptr once dropped) and its key slot.
    const SecurityAssociation* sa_of(uint64_t id) const { return is_new(id) ? sa.get() : is_old(id) ? old_sa.get() : nullptr; }
    uint32_t slot_of(uint64_t id) const { return is_new(id) ? slot : old_slot; }
    uint32_t tx_seq = 0;
    ReplayWindow rx_window;  // anti-replay for the peer's frames under this SA
    // The SA before a rekey for sequence-number exhaustion: it still opens the peer's frames
    // sealed before the peer changed over, until a frame opens under the new one.
    std::unique_ptr<SecurityAssociation> old_sa;
    ReplayWindow old_window;
    bool renewing = false;  // our INIT says: sequence numbers ran out, the old keys still hold
    // Frames go under `sa` only once the peer is known to hold it (make before break): it
    // answered with a RESP (it installs its keys first), sent a frame that opened under them,
    // or a CONFIRM (the initiator's, once its keys are in); or crypto.kx_timeout_us passed.
    // Until then a renewal's old SA serves while our own counter under it lasts, and frames
    // wait in EM after that. So frames never reach a peer still deriving their keys.
    bool peer_has = false, resp_seen = false;
    uint32_t old_tx_seq = 0;  // our counter under old_sa
    // Received frames sealed under the keys still being derived, opened once they are in.
    std::deque<std::pair<Buf, RxReady>> held_rx;  // each keeps its receive buffer
    std::vector<uint8_t> peer_pub;  // the public value the SA was derived from (dh keys)
    uint64_t gen = 0;               // bumped when the state is dropped: late callbacks see it
    std::unique_ptr<Dh> dh;
    std::vector<uint8_t> pub;  // our public value, once computed
    bool started = false, deriving = false;
    uint32_t kx_sent = 0;  // INITs of the exchange under way (crypto.kx_tries gives it up)
    std::vector<std::function<void()>> pub_waiters;
    std::deque<std::pair<std::vector<uint8_t>, InMac>> waiting;  // frames held for the keys
    uint64_t t0 = 0;
  };
  KeyExchange(Mbp2Nic& nic, uint32_t nodes) : nic_(nic), peers_(nodes) {}
  KeyExchange(const KeyExchange&) = delete;
  KeyExchange& operator=(const KeyExchange&) = delete;
  Peer& peer(uint32_t p) { return peers_[p]; }
  const Peer& peer(uint32_t p) const { return peers_[p]; }
  // Starts the exchange with `peer` now (it also starts by itself on the first frame for a
  // peer without keys when crypto.keys = dh).
  void start(uint32_t peer);
  // A key-exchange message from the wire, in receive buffer `b`.
  void on_message(Buf b);
  // Forgets what the card keeps for peer's key exchange and SA (a power cycle, or a rekey).
  // keep_inbound: a rekey for sequence-number exhaustion, whose old SA still opens frames.
  void drop_keys(uint32_t peer, bool keep_inbound = false);
  // The peer holds our new keys (see Peer::peer_has): the frames that waited go.
  void confirmed(uint32_t peer);
  // EM lost its contents: frames waiting for keys are gone.
  void power_off() {
    for (Peer& s : peers_) s.waiting.clear();
  }

 private:
  // Modular exponentiations on the MEAC1024 (or in firmware), then `k`.
  void modexp_work(uint32_t modmuls, std::function<void()> k);
  void with_public(uint32_t peer, std::function<void()> k);
  void send(uint32_t peer, uint8_t type);
  void arm_timer(uint32_t peer);
  void give_up(uint32_t peer);
  // Computes the shared secret and installs the keys, then `then`, then sends the frames that
  // waited for them.
  void derive(uint32_t peer, std::vector<uint8_t> peer_pub, std::function<void()> then);

  Mbp2Nic& nic_;
  std::vector<Peer> peers_;
};

}  // namespace mbpsim::mbp2
