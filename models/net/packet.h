// Network packets and their pool. One Packet object stands for a whole packet; flits are
// (packet, index) pairs in router buffers, so no allocation happens per flit.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "models/net/topology.h"

namespace mbpsim::net {

enum class PacketKind : uint8_t { Unicast, Multicast, Ack };
// Message classes own disjoint virtual channels so requests, replies and acknowledgements
// never wait on each other (protocol deadlock avoidance).
enum MsgClass : uint8_t { kRequest = 0, kReply = 1, kAckClass = 2, kNumClasses = 3 };

// What a packet carries for its owner: a type the owner derives from this one (the MBP's
// protocol message, mbp::Msg) and casts back to when the packet arrives. The network never
// looks at it.
struct Payload {};

struct Packet {
  uint64_t id = 0;
  PacketKind kind = PacketKind::Unicast;
  uint8_t cls = kRequest;
  bool ack_req = false;   // multicast: each receiver answers with an acknowledgement
  bool hop_ack = false;   // ack merged by the next router holding a combining entry
  bool measured = false;  // created inside the measurement window
  uint16_t size_flits = 1;
  uint32_t src = 0, dst = 0;
  uint64_t txn = 0;          // multicast transaction (ack: the transaction acknowledged)
  uint32_t ack_count = 0;    // ack: receivers this (combined) ack stands for
  uint32_t ack_held = 0;     // ack: how many of them really held a copy
  uint32_t refs = 0;         // copies still travelling (multicast branches)
  uint64_t create_cycle = 0;  // ack: creation cycle of the multicast it acknowledges
  HierBitmap bitmap;          // multicast
  uint64_t ni_ready = 0;      // first cycle the source NI may inject it
  uint64_t user = 0;          // owner's tag (workload or model)
  Payload* payload = nullptr;  // the owner's message (not touched by the network)
  bool in_use = false;
};

class PacketPool {
 public:
  Packet* get() {
    if (free_.empty()) grow();
    Packet* p = free_.back();
    free_.pop_back();
    *p = Packet();
    p->in_use = true;
    ++live_;
    return p;
  }
  void put(Packet* p) {
    p->in_use = false;
    free_.push_back(p);
    --live_;
  }
  uint64_t live() const { return live_; }
  // Host memory per packet the pool has made (the packet and its free-list slot).
  static constexpr uint64_t bytes_per_packet() { return sizeof(Packet) + sizeof(Packet*); }
  template <class F>
  void for_each_live(F f) const {
    for (const auto& chunk : chunks_)
      for (size_t i = 0; i < kChunk; ++i)
        if (chunk[i].in_use) f(chunk[i]);
  }

 private:
  static constexpr size_t kChunk = 1024;
  void grow() {
    chunks_.emplace_back(new Packet[kChunk]);
    for (size_t i = kChunk; i-- > 0;) free_.push_back(&chunks_.back()[i]);
  }
  std::vector<std::unique_ptr<Packet[]>> chunks_;
  std::vector<Packet*> free_;
  uint64_t live_ = 0;
};

}  // namespace mbpsim::net
