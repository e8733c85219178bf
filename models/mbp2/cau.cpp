#include "models/mbp2/cau.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "models/core/error.h"

namespace mbpsim::mbp2 {

const char* Cau::to_string(Error e) {
  switch (e) {
    case Error::None: return "none";
    case Error::Truncated: return "truncated";
    case Error::BadLength: return "bad length";
    case Error::BadIcv: return "authentication failed";
    case Error::BadPadding: return "bad padding";
    case Error::BadKey: return "no usable key in the slot";
    case Error::BadRequest: return "a descriptor the CAU cannot serve";
  }
  return "?";
}

Cau::Error Cau::verdict(const DmaEngine::Desc& d) {
  if (!d.error()) return Error::None;
  const uint32_t v = d.status >> 24 & 7;
  return v ? static_cast<Error>(v) : Error::BadRequest;
}

Cau::Error Cau::apply(const SecurityAssociation& sa, Op op, std::vector<uint8_t>& f) {
  if (op == Op::Seal) return sa.seal_in_place(f, kMaxFrame) ? Error::None : Error::BadLength;
  switch (sa.open(f)) {
    case OpenError::None: return Error::None;
    case OpenError::Truncated: return Error::Truncated;
    case OpenError::BadLength: return Error::BadLength;
    case OpenError::BadIcv: return Error::BadIcv;
    case OpenError::BadPadding: return Error::BadPadding;
  }
  return Error::BadRequest;
}

uint64_t Cau::em_bytes(uint32_t ring, uint32_t key_slots) {
  return static_cast<uint64_t>(ring) * DmaEngine::kDescBytes + static_cast<uint64_t>(key_slots + ring) * SecurityAssociation::kKeyBlockBytes;
}

Cau::Cau(Calendar& cal, const CryptoConfig& c, uint32_t ring, uint32_t key_slots, Em& em, Stats& st, const std::string& n)
    : Unit(n),
      c_(c),
      em_(em),
      port_(em),
      dma_(cal, em, ring, c.cau_setup_ns, st, n, "cau_dma"),
      slots_(key_slots),
      keys_off_(em.carve(key_slots * SecurityAssociation::kKeyBlockBytes)),
      staging_off_(em.carve(ring * SecurityAssociation::kKeyBlockBytes)),
      schedules_(key_slots),
      transforms_(st.counter(n + ".transforms", "frames sealed or opened")),
      failures_(st.counter(n + ".failures", "transforms refused: a frame that did not authenticate or decode, a key slot without a usable key block")),
      key_loads_(st.counter(n + ".key_loads", "key blocks loaded into key slots through the ring")) {
  dma_.connect(&port_, &port_);  // key loads: EM to EM
  // A transform's descriptor (a key load's is a move) is carried out at its completion.
  dma_.set_completion([this](const DmaEngine::Desc& d) {
    if (!d.move()) transform(d);
  });
}

uint64_t Cau::compute_ps(uint32_t cb, uint32_t hb) const {
  return std::max(ps_of(cb * c_.des_cycles_per_block, c_.cau_clock_mhz), ps_of(hb * c_.hash_cycles_per_block, c_.cau_clock_mhz));
}

void Cau::load_key(uint64_t at, uint32_t slot, std::vector<uint8_t> block) {
  if (slot >= slots_ || block.size() != SecurityAssociation::kKeyBlockBytes) internal_error(std::string(name()) + ": a key load for a slot it does not have");
  key_loads_.inc();
  constexpr uint32_t b = SecurityAssociation::kKeyBlockBytes;
  const uint32_t staging = staging_off_ + dma_.next_slot() * b;  // written with the descriptor
  dma_.post(at, staging, key_slot_offset(slot), b, [this](uint64_t s) { return Finish(s, em_.access(Route::Crypto, s, 2 * b)); },
            DmaEngine::kNoContext, ~0u, DmaEngine::Move::Forward, std::move(block));
}

uint32_t Cau::run(uint64_t at, Op op, uint32_t slot, uint32_t off, uint32_t bytes, uint32_t out, uint32_t cb, uint32_t hb) {
  const uint32_t key = slot == last_slot_ ? 0 : SecurityAssociation::kKeyBlockBytes;
  last_slot_ = slot;
  return dma_.post(at, off, off, bytes, [this, bytes, out, key, cb, hb](uint64_t s) {
    // Its DMA reads the frame (and a key block for a slot other than the last) and writes the
    // result over the crypto route, while it computes.
    // Its DMA streams through EM at the cipher's pace, not faster.
    const uint64_t compute = compute_ps(cb, hb);
    return Finish(s + compute, em_.access(Route::Crypto, s, bytes + out + key, compute));
  }, static_cast<uint32_t>(op) << 24 | slot);
}

void Cau::transform(const DmaEngine::Desc& desc) {
  DmaEngine::Desc d = desc;
  transforms_.inc();
  const Op op = static_cast<Op>(d.ctx >> 24);
  const uint32_t slot = d.ctx & 0xffffff;
  Error e = Error::None;
  std::vector<uint8_t> f;
  if ((op != Op::Seal && op != Op::Open) || slot >= slots_ || d.src != d.dst || d.bytes > kMaxFrame) {
    e = Error::BadRequest;
  } else {
    // The key block as EM holds it now; its schedule is recomputed only when it changed.
    Schedule& k = schedules_[slot];
    std::array<uint8_t, SecurityAssociation::kKeyBlockBytes> block;
    em_.read_into(key_slot_offset(slot), block.data(), SecurityAssociation::kKeyBlockBytes);
    if (!k.sa_made || block != k.block) {
      k.sa = SecurityAssociation::from_key_block(block.data(), SecurityAssociation::kKeyBlockBytes);
      k.block = block;
      k.sa_made = true;
    }
    f.resize(d.bytes);
    if (!k.sa) e = Error::BadKey;
    else if (!port_.read(d.src, 0, f.data(), d.bytes)) e = Error::BadRequest;
    else e = apply(*k.sa, op, f);
  }
  const uint32_t at = dma_.ring_offset() + d.slot * DmaEngine::kDescBytes;
  if (e == Error::None) {
    port_.write(d.dst, 0, f.data(), static_cast<uint32_t>(f.size()));
    d.bytes = static_cast<uint32_t>(f.size());
  } else {
    failures_.inc();
    d.status |= DmaEngine::kError | static_cast<uint32_t>(e) << 24;
  }
  em_.store32(at + 8, d.bytes);
  em_.store32(at + 12, d.status);
}

}  // namespace mbpsim::mbp2
