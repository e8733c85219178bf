// The CAU: DES/3DES and keyed hashes with a DMA engine of its own, and the crypto parameters
// (8.2, 8.3.6).
#pragma once
#include "models/mbp2/crypto.h"
#include "models/mbp2/dma_engine.h"

namespace mbpsim::mbp2 {

struct CryptoConfig {
  // Every member is a parameter of `params()` (mbp2_params.cpp), which gives it its default.
  CryptoConfig();
  Cipher cipher{};
  Auth auth{};
  enum class Keys { Static, Dh } keys{};
  std::string secret;  // pre-shared secret when keys are static
  bool cau{};                // CAU hardware (MBP2C); false: PME firmware (MBP2P, 8.4)
  double cau_clock_mhz{};
  double des_cycles_per_block{};    // one DES pass over 8 bytes
  double hash_cycles_per_block{};  // one 64-byte compression
  double cau_setup_ns{};
  double cau_desc_instr{};         // PME: write a CAU descriptor
  double fw_setup_instr{};        // firmware: per frame (IV, key schedule pointers, loop set-up)
  double fw_des_instr_per_block{};
  double fw_hash_instr_per_block{};
  bool meac{};                   // MEAC1024 on the card; false: modular arithmetic in firmware
  double meac_clock_mhz{};
  double meac_modmul_cycles{};    // one 1024-bit multiply and reduction
  double meac_op_instr{};          // PME: start one MEAC operation, take its result
  double fw_modmul_instr{};      // firmware: one 1024-bit Montgomery multiplication
  double kx_timeout_us{};       // key-exchange message not answered: sent again
  uint32_t kx_tries{};              // INITs unanswered before the exchange is given up
  // Frames sealed under one SA before a new one is made (RFC 4303 3.3.3: the 32-bit sequence
  // number must not cycle). dh keys: a new exchange; static keys cannot be renewed, so the
  // NIC stops sealing for that peer.
  uint64_t rekey_frames{};
  bool enabled() const { return cipher != Cipher::None || auth != Auth::None; }
  static const ParamTable<CryptoConfig>& params();
};

// The CAU: DES or triple DES and a keyed hash with DMA engines of its own, reading a frame from
// EM and writing the result back (8.3.3). The cipher and hash engines work on the stream side by
// side (encrypt-then-MAC hashes the ciphertext as it leaves the cipher), so a frame takes the
// longer of the two, plus its descriptor's set-up.
//
// It works from its descriptors and EM alone. Its keys are key blocks in EM's key slots
// (`key_slot_offset`), which the PME fills with key-load descriptors in the CAU's own ring (a
// move from a staging block to the slot): a frame posted before a load uses the slot's keys
// before it, one posted after the new ones, so the PME may reuse a slot while frames sealed
// under its old keys are still in the ring. A transform's descriptor names the frame (source
// and destination: in place), its length, and in its fifth word the operation (bits 24-31)
// and the key slot (bits 0-23). At completion the CAU reads the key block and the frame from
// EM as they are then, seals or opens the frame there, and leaves in the descriptor, for the
// PME to collect, the result's length and, on a failure, the error bit and the reason (`verdict`); a failed
// transform writes nothing. It keeps the key schedule of each slot's block (recomputed when
// the block in EM changed) and reads a block again from EM (charged) when it uses a slot
// other than the last one.
class Cau : public Unit {
 public:
  enum class Op : uint8_t { Seal = 1, Open = 2 };
  enum class Error : uint8_t { None, Truncated, BadLength, BadIcv, BadPadding, BadKey, BadRequest };
  static const char* to_string(Error e);
  static constexpr uint32_t kMaxFrame = 1514;  // what a sealed frame may grow to (Ethernet's MTU)
  // The reason a completed descriptor carries (bits 24-26 of its status).
  static Error verdict(const DmaEngine::Desc& d);
  // The transform itself (what the CAU's engines do, and the PME's firmware without them).
  static Error apply(const SecurityAssociation& sa, Op op, std::vector<uint8_t>& frame);
  Cau(Calendar& cal, const CryptoConfig& c, uint32_t ring, uint32_t key_slots, Em& em, Stats& st, const std::string& name);
  uint64_t compute_ps(uint32_t cipher_blocks, uint32_t hash_blocks) const;
  // Loads a key block into a slot, through the ring, in order with the frames.
  void load_key(uint64_t at, uint32_t slot, std::vector<uint8_t> block);
  // A frame of `bytes` at EM offset `off`, posted at `at`, sealed or opened in place under the
  // keys of `slot`; when the result is in EM the descriptor (returned: its number) is done, and
  // the ring's firmware finds it so.
  // `out`: the bytes it will write (a sealed frame is longer; an opened one is at most as long).
  uint32_t run(uint64_t at, Op op, uint32_t slot, uint32_t off, uint32_t bytes, uint32_t out, uint32_t cipher_blocks, uint32_t hash_blocks);
  DmaEngine& engine() { return dma_; }
  uint32_t key_slot_offset(uint32_t slot) const { return keys_off_ + slot * SecurityAssociation::kKeyBlockBytes; }
  uint32_t key_slots() const { return slots_; }
  uint64_t busy_ps() const { return dma_.busy_ps(); }
  // EM the CAU's ring, key slots and key staging take.
  static uint64_t em_bytes(uint32_t ring, uint32_t key_slots);

 private:
  void transform(const DmaEngine::Desc& d);
  CryptoConfig c_;
  Em& em_;
  EmPort port_;
  DmaEngine dma_;
  uint32_t slots_, keys_off_, staging_off_;
  uint32_t last_slot_ = ~0u;  // the slot whose block the CAU read last (its key registers)
  struct Schedule {
    std::array<uint8_t, SecurityAssociation::kKeyBlockBytes> block{};
    bool sa_made = false;  // `sa` is the schedule of `block` (null: no key)
    std::unique_ptr<SecurityAssociation> sa;
  };
  std::vector<Schedule> schedules_;
  Counter &transforms_, &failures_, &key_loads_;
};

}  // namespace mbpsim::mbp2
