// The MBP2's cryptographic units (thesis 8.2, 8.3.3, 8.3.6): the Cryption Accelerator Unit
// (CAU: DES or triple DES, and a keyed hash for authentication, with its own DMA through EM)
// and the MEAC1024 (1024-bit modular multiply and reduce, for key exchange).
//
// The bytes are real: frames between two MBP2s configured to encrypt are sealed with a
// maintained library (Nettle: DES/3DES in CBC mode, HMAC-MD5 or HMAC-SHA1 truncated to 96
// bits) and opened at the receiver, and the Diffie-Hellman exchange is done with GMP over the
// 1024-bit MODP group of RFC 2409 (Oakley group 2). Only the time these take is modelled, by
// the units' throughput parameters (crypto_params in mbp2_params.cpp).
//
// A sealed frame, in the manner of an IPsec ESP packet (the MBP2 supports IPsec, 8.3.1):
//    0  destination and source Ethernet addresses (12)   12  EtherType kEtherTypeSealed (2)
//   14  SPI: the sending Pnode (4)    18  sequence number (4)    22  ciphertext length (2)
//   24  reserved, zero (2)            26  IV (8, only with a cipher)
//    .. ciphertext of: the original EtherType (2), the MBCF packet from byte 14, padding
//       1, 2, 3 ... to the block, pad length (1), next header (1) = 0
//    .. ICV (12, only with a keyed hash): HMAC over bytes 14 to the end of the ciphertext
// Authentication is checked before decryption (encrypt-then-MAC); a frame that fails it is
// rejected whole and counted, and Go-back-N recovers it like a lost one.
//
// The work is split as on the card: the PME writes the header in front of the frame
// (`prepare_seal`: SPI, sequence number, IV, then the inner EtherType and the packet in place),
// and the CAU, from what EM holds when it runs, pads, encrypts, fills in the length and appends
// the ICV (`seal_in_place`), or checks and decrypts a received frame (`open`). The CAU keeps
// its keys in EM as key blocks (`key_block`, `from_key_block`).
#pragma once
#include <gmp.h>

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace mbpsim::mbp2 {

constexpr uint16_t kEtherTypeSealed = 0x88B6;       // IEEE 802 local experimental EtherType 2
constexpr uint16_t kEtherTypeKeyExchange = 0x88B7;  // ... and 3

enum class Cipher : uint8_t { None, Des, Des3 };
enum class Auth : uint8_t { None, HmacMd5, HmacSha1 };
const char* to_string(Cipher c);
const char* to_string(Auth a);

// The bytes a sealed frame adds at most to an MBCF packet, for a cipher and hash.
uint32_t seal_overhead(Cipher c, Auth a);
// The size of the sealed frame of a frame of `frame_bytes` (Ethernet header included).
uint32_t sealed_size(Cipher c, Auth a, uint32_t frame_bytes);
// Cipher blocks (8 bytes) and hash compressions (64-byte blocks, HMAC's two extra included)
// the CAU runs over a frame of `plain` MBCF bytes (from byte 14).
uint32_t cipher_blocks(Cipher c, uint32_t plain);
// The same from a sealed frame's ciphertext length (what the receiver's CAU runs over).
uint32_t cipher_blocks_of_body(Cipher c, uint32_t body);
uint32_t hash_blocks(Auth a, uint32_t sealed_body);

enum class OpenError : uint8_t { None, Truncated, BadLength, BadIcv, BadPadding };
// The frame the PME hands the CAU to seal: the Ethernet addresses, kEtherTypeSealed, the SPI,
// sequence number, a zero length, the IV (with a cipher), then the frame's EtherType and its
// packet, unpadded.
std::vector<uint8_t> prepare_seal(Cipher c, const std::vector<uint8_t>& frame, uint32_t spi, uint32_t seq, const uint8_t iv[8]);
const char* to_string(OpenError e);

// The receiver's anti-replay window of RFC 4303 3.4.3, 64 frames wide: the highest sequence
// number accepted under an SA, and which of the 63 below it have been. Checked only after the
// frame authenticated, so a forged number cannot move it.
class ReplayWindow {
 public:
  static constexpr uint32_t kWidth = 64;
  // True (and the number recorded) for a number not seen before and less than kWidth behind
  // the highest; false for 0, a repeat, or one too old.
  bool accept(uint32_t seq);
  uint32_t top() const { return top_; }

 private:
  uint32_t top_ = 0;
  uint64_t seen_ = 0;  // bit i: top_ - i was accepted
};

// A security association between two NICs: the keys, derived from a shared secret.
class SecurityAssociation {
 public:
  // Derives the cipher key (parity fixed; DES weak keys re-derived) and the hash key from
  // `secret` with SHA-256.
  SecurityAssociation(Cipher c, Auth a, const std::vector<uint8_t>& secret);
  ~SecurityAssociation();
  SecurityAssociation(const SecurityAssociation&) = delete;
  SecurityAssociation& operator=(const SecurityAssociation&) = delete;
  Cipher cipher() const { return cipher_; }
  Auth auth() const { return auth_; }
  // The keys as the CAU holds them in EM, kKeyBlockBytes: cipher and hash (1 byte each), two
  // zero bytes, the cipher key (24 bytes; DES uses the first 8), the hash key (20 bytes).
  static constexpr uint32_t kKeyBlockBytes = 48;
  std::vector<uint8_t> key_block() const;
  // The association a key block holds; null when it is not one (unknown cipher or hash, a
  // nonzero reserved byte, a weak DES key): the CAU then refuses the work.
  static std::unique_ptr<SecurityAssociation> from_key_block(const uint8_t* p, uint32_t n);
  // Seals an MBCF frame (Ethernet header onward, no FCS); `iv` is used only with a cipher.
  // The same as `prepare_seal` then `seal_in_place`.
  std::vector<uint8_t> seal(const std::vector<uint8_t>& frame, uint32_t spi, uint32_t seq, const uint8_t iv[8]) const;
  // Seals a frame `prepare_seal` laid out: false (nothing changed) when it is too short to be
  // one or the result would exceed `room` bytes.
  bool seal_in_place(std::vector<uint8_t>& frame, uint32_t room = ~0u) const;
  // Opens a sealed frame in place into the MBCF frame it carried. Never reads past its end.
  OpenError open(std::vector<uint8_t>& frame, uint32_t* spi = nullptr, uint32_t* seq = nullptr) const;
  // Fingerprint of the keys, so tests can check two ends derived the same ones.
  std::array<uint8_t, 8> fingerprint() const;

 private:
  SecurityAssociation(Cipher c, Auth a);
  bool set_keys(const std::vector<uint8_t>& enc, const std::vector<uint8_t>& mac);
  void icv(const uint8_t* p, size_t n, uint8_t out[12]) const;
  void crypt(bool enc, uint8_t* iv, uint8_t* p, size_t n) const;
  Cipher cipher_;
  Auth auth_;
  std::vector<uint8_t> enc_key_, mac_key_;
  struct Ctx;
  std::unique_ptr<Ctx> ctx_;
};

// Diffie-Hellman over the 1024-bit MODP group of RFC 2409 (generator 2), arithmetic by GMP.
class Dh {
 public:
  static constexpr uint32_t kBytes = 128;
  // A private exponent from `seed_bytes` (reduced into [2, p-2]).
  explicit Dh(const std::vector<uint8_t>& seed_bytes);
  ~Dh();
  Dh(const Dh&) = delete;
  Dh& operator=(const Dh&) = delete;
  std::vector<uint8_t> public_value() const;  // 2^x mod p, big-endian, kBytes
  // The shared secret from the peer's public value; false if it is not in [2, p-2].
  bool shared(const std::vector<uint8_t>& peer_public, std::vector<uint8_t>& out) const;
  // Modular multiplications (squarings included) a left-to-right binary exponentiation
  // with this private exponent performs: what the MEAC1024 or the PME firmware computes.
  uint32_t modmuls() const;
  static const mpz_t& prime();

 private:
  mpz_t x_;
};

}  // namespace mbpsim::mbp2
