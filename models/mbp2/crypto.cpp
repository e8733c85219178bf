#include "models/mbp2/crypto.h"

#include <nettle/cbc.h>
#include <nettle/des.h>
#include <nettle/hmac.h>
#include <nettle/sha2.h>

#include <algorithm>
#include <cstring>

#include "models/core/bytes.h"
#include "models/core/error.h"

namespace mbpsim::mbp2 {

namespace {
constexpr uint32_t kSealHeader = 12;  // SPI, sequence, length, reserved
constexpr uint32_t kIcv = 12;         // HMAC-*-96
constexpr uint32_t kIv = 8;

uint32_t block_of(Cipher c) { return c == Cipher::None ? 4 : 8; }
uint32_t iv_of(Cipher c) { return c == Cipher::None ? 0 : kIv; }
uint32_t icv_of(Auth a) { return a == Auth::None ? 0 : kIcv; }
uint32_t padded(Cipher c, uint32_t plain) {  // inner EtherType + packet + trailer, to the block
  const uint32_t b = block_of(c);
  return (2 + plain + 2 + b - 1) / b * b;
}

std::vector<uint8_t> sha256(const std::vector<uint8_t>& a, const char* label) {
  sha256_ctx h;
  sha256_init(&h);
  sha256_update(&h, a.size(), a.data());
  sha256_update(&h, std::strlen(label), reinterpret_cast<const uint8_t*>(label));
  std::vector<uint8_t> d(SHA256_DIGEST_SIZE);
  sha256_digest(&h, d.size(), d.data());
  return d;
}

// RFC 2409, 6.2: the 1024-bit MODP group ("Second Oakley Group"), generator 2.
const char* const kOakley2 =
    "FFFFFFFFFFFFFFFFC90FDAA22168C234C4C6628B80DC1CD1"
    "29024E088A67CC74020BBEA63B139B22514A08798E3404DD"
    "EF9519B3CD3A431B302B0A6DF25F14374FE1356D6D51C245"
    "E485B576625E7EC6F44C42E9A637ED6B0BFF5CB6F406B7ED"
    "EE386BFB5A899FA5AE9F24117C4B1FE649286651ECE65381"
    "FFFFFFFFFFFFFFFF";

struct Prime {
  mpz_t p;
  Prime() { mpz_init_set_str(p, kOakley2, 16); }
  ~Prime() { mpz_clear(p); }
};

std::vector<uint8_t> to_bytes(const mpz_t v) {
  std::vector<uint8_t> out(Dh::kBytes, 0);
  size_t n = 0;
  std::vector<uint8_t> tmp(Dh::kBytes + 8);
  mpz_export(tmp.data(), &n, 1, 1, 1, 0, v);
  if (n > Dh::kBytes) internal_error("a Diffie-Hellman value longer than the group");
  std::copy(tmp.begin(), tmp.begin() + static_cast<std::ptrdiff_t>(n), out.begin() + static_cast<std::ptrdiff_t>(Dh::kBytes - n));
  return out;
}
}  // namespace

const char* to_string(Cipher c) {
  switch (c) {
    case Cipher::None: return "none";
    case Cipher::Des: return "des";
    case Cipher::Des3: return "3des";
  }
  return "?";
}
const char* to_string(Auth a) {
  switch (a) {
    case Auth::None: return "none";
    case Auth::HmacMd5: return "hmac-md5";
    case Auth::HmacSha1: return "hmac-sha1";
  }
  return "?";
}
const char* to_string(OpenError e) {
  switch (e) {
    case OpenError::None: return "none";
    case OpenError::Truncated: return "truncated";
    case OpenError::BadLength: return "bad length";
    case OpenError::BadIcv: return "authentication failed";
    case OpenError::BadPadding: return "bad padding";
  }
  return "?";
}

uint32_t seal_overhead(Cipher c, Auth a) {
  // header, IV, inner EtherType, worst padding plus pad length and next header, ICV
  return kSealHeader + iv_of(c) + 2 + (block_of(c) - 1) + 2 + icv_of(a);
}

uint32_t sealed_size(Cipher c, Auth a, uint32_t frame_bytes) {
  return 14 + kSealHeader + iv_of(c) + padded(c, frame_bytes - 14) + icv_of(a);
}

uint32_t cipher_blocks_of_body(Cipher c, uint32_t body) {
  return c == Cipher::None ? 0 : body / 8 * (c == Cipher::Des3 ? 3 : 1);
}

uint32_t cipher_blocks(Cipher c, uint32_t plain) { return cipher_blocks_of_body(c, padded(c, plain)); }

uint32_t hash_blocks(Auth a, uint32_t body) {
  if (a == Auth::None) return 0;
  // The inner hash over the 64-byte key pad and the body (with MD padding of 9 bytes at
  // least), the outer over the key pad and the inner digest: the pads' compressions are
  // precomputed once per key, so one block of each is saved.
  const uint32_t inner = (64 + body + 9 + 63) / 64 - 1;
  const uint32_t digest = a == Auth::HmacMd5 ? 16 : 20;
  const uint32_t outer = (64 + digest + 9 + 63) / 64 - 1;
  return inner + outer;
}

// ------------------------------------------------------------------ security association

struct SecurityAssociation::Ctx {
  des_ctx des;
  des3_ctx des3;
  hmac_md5_ctx md5;
  hmac_sha1_ctx sha1;
};

SecurityAssociation::SecurityAssociation(Cipher c, Auth a) : cipher_(c), auth_(a), ctx_(std::make_unique<Ctx>()) {}

SecurityAssociation::SecurityAssociation(Cipher c, Auth a, const std::vector<uint8_t>& secret) : SecurityAssociation(c, a) {
  std::vector<uint8_t> k = sha256(secret, "mbp2 cau cipher key");
  std::vector<uint8_t> mac = sha256(secret, "mbp2 cau hash key");
  mac.resize(20);
  for (int tries = 0;; ++tries) {
    std::vector<uint8_t> key(c == Cipher::Des3 ? DES3_KEY_SIZE : DES_KEY_SIZE);
    std::vector<uint8_t> more = sha256(k, "more");
    k.insert(k.end(), more.begin(), more.end());
    des_fix_parity(key.size(), key.data(), k.data());
    if (set_keys(key, mac)) break;
    if (tries > 8) internal_error("no DES key without weak parts from the shared secret");
    k = sha256(k, "weak key");  // a weak key: derive again
  }
}

bool SecurityAssociation::set_keys(const std::vector<uint8_t>& enc, const std::vector<uint8_t>& mac) {
  if (cipher_ == Cipher::Des3 ? !des3_set_key(&ctx_->des3, enc.data()) : cipher_ == Cipher::Des && !des_set_key(&ctx_->des, enc.data()))
    return false;
  enc_key_ = enc;
  mac_key_ = mac;
  hmac_md5_set_key(&ctx_->md5, mac_key_.size(), mac_key_.data());
  hmac_sha1_set_key(&ctx_->sha1, mac_key_.size(), mac_key_.data());
  return true;
}

std::vector<uint8_t> SecurityAssociation::key_block() const {
  std::vector<uint8_t> b(kKeyBlockBytes, 0);
  b[0] = static_cast<uint8_t>(cipher_);
  b[1] = static_cast<uint8_t>(auth_);
  std::copy(enc_key_.begin(), enc_key_.end(), b.begin() + 4);
  std::copy(mac_key_.begin(), mac_key_.end(), b.begin() + 28);
  return b;
}

std::unique_ptr<SecurityAssociation> SecurityAssociation::from_key_block(const uint8_t* p, uint32_t n) {
  if (n < kKeyBlockBytes || p[0] > static_cast<uint8_t>(Cipher::Des3) || p[1] > static_cast<uint8_t>(Auth::HmacSha1) || p[2] || p[3]) return nullptr;
  const Cipher c = static_cast<Cipher>(p[0]);
  std::unique_ptr<SecurityAssociation> sa(new SecurityAssociation(c, static_cast<Auth>(p[1])));
  const std::vector<uint8_t> enc(p + 4, p + 4 + (c == Cipher::Des3 ? DES3_KEY_SIZE : DES_KEY_SIZE)), mac(p + 28, p + 48);
  if (!sa->set_keys(enc, mac)) return nullptr;
  return sa;
}

SecurityAssociation::~SecurityAssociation() = default;

std::array<uint8_t, 8> SecurityAssociation::fingerprint() const {
  std::vector<uint8_t> all = enc_key_;
  all.insert(all.end(), mac_key_.begin(), mac_key_.end());
  const std::vector<uint8_t> d = sha256(all, "fingerprint");
  std::array<uint8_t, 8> f{};
  std::copy(d.begin(), d.begin() + 8, f.begin());
  return f;
}

void SecurityAssociation::icv(const uint8_t* p, size_t n, uint8_t out[12]) const {
  if (auth_ == Auth::HmacMd5) {
    hmac_md5_ctx h = ctx_->md5;  // the keyed state, copied: the pads are hashed once per key
    hmac_md5_update(&h, n, p);
    hmac_md5_digest(&h, kIcv, out);
  } else {
    hmac_sha1_ctx h = ctx_->sha1;
    hmac_sha1_update(&h, n, p);
    hmac_sha1_digest(&h, kIcv, out);
  }
}

void SecurityAssociation::crypt(bool enc, uint8_t* iv, uint8_t* p, size_t n) const {
  if (cipher_ == Cipher::Des3) {
    if (enc) cbc_encrypt(&ctx_->des3, reinterpret_cast<nettle_cipher_func*>(des3_encrypt), DES3_BLOCK_SIZE, iv, n, p, p);
    else cbc_decrypt(&ctx_->des3, reinterpret_cast<nettle_cipher_func*>(des3_decrypt), DES3_BLOCK_SIZE, iv, n, p, p);
  } else {
    if (enc) cbc_encrypt(&ctx_->des, reinterpret_cast<nettle_cipher_func*>(des_encrypt), DES_BLOCK_SIZE, iv, n, p, p);
    else cbc_decrypt(&ctx_->des, reinterpret_cast<nettle_cipher_func*>(des_decrypt), DES_BLOCK_SIZE, iv, n, p, p);
  }
}

std::vector<uint8_t> prepare_seal(Cipher c, const std::vector<uint8_t>& f, uint32_t spi, uint32_t seq, const uint8_t iv[8]) {
  if (f.size() < 14) internal_error("sealing a frame shorter than an Ethernet header");
  const uint32_t ivn = iv_of(c);
  std::vector<uint8_t> out(14 + kSealHeader + ivn + 2 + (f.size() - 14), 0);
  std::copy(f.begin(), f.begin() + 12, out.begin());
  out[12] = kEtherTypeSealed >> 8;
  out[13] = kEtherTypeSealed & 0xff;
  uint8_t* h = out.data() + 14;
  store_be32(h, spi);
  store_be32(h + 4, seq);
  if (ivn) std::memcpy(h + kSealHeader, iv, kIv);
  std::copy(f.begin() + 12, f.end(), out.begin() + 14 + kSealHeader + ivn);  // EtherType, packet
  return out;
}

std::vector<uint8_t> SecurityAssociation::seal(const std::vector<uint8_t>& f, uint32_t spi, uint32_t seq, const uint8_t iv[8]) const {
  std::vector<uint8_t> out = prepare_seal(cipher_, f, spi, seq, iv);
  seal_in_place(out);
  return out;
}

bool SecurityAssociation::seal_in_place(std::vector<uint8_t>& f, uint32_t room) const {
  const uint32_t ivn = iv_of(cipher_), head = 14 + kSealHeader + ivn;
  if (f.size() < head + 2) return false;
  const uint32_t plain = static_cast<uint32_t>(f.size() - head - 2);
  const uint32_t body = padded(cipher_, plain);
  if (head + body + icv_of(auth_) > room) return false;
  f.resize(head + body + icv_of(auth_), 0);
  uint8_t* h = f.data() + 14;
  h[8] = static_cast<uint8_t>(body >> 8);
  h[9] = static_cast<uint8_t>(body);
  h[10] = h[11] = 0;
  uint8_t* c = h + kSealHeader + ivn;
  const uint32_t pad = body - 2 - plain - 2;
  for (uint32_t i = 0; i < pad; ++i) c[2 + plain + i] = static_cast<uint8_t>(i + 1);
  c[body - 2] = static_cast<uint8_t>(pad);
  c[body - 1] = 0;
  if (cipher_ != Cipher::None) {
    uint8_t v[kIv];
    std::memcpy(v, h + kSealHeader, kIv);
    crypt(true, v, c, body);
  }
  if (auth_ != Auth::None) icv(h, kSealHeader + ivn + body, c + body);
  return true;
}

OpenError SecurityAssociation::open(std::vector<uint8_t>& f, uint32_t* spi, uint32_t* seq) const {
  const uint32_t ivn = iv_of(cipher_), icvn = icv_of(auth_);
  if (f.size() < 14 + kSealHeader + ivn) return OpenError::Truncated;
  uint8_t* h = f.data() + 14;
  const uint32_t body = static_cast<uint32_t>(h[8]) << 8 | h[9];
  if (body < 4 || body % block_of(cipher_) != 0 || h[10] != 0 || h[11] != 0) return OpenError::BadLength;
  if (f.size() < 14 + kSealHeader + ivn + body + icvn) return OpenError::Truncated;  // (padding may follow)
  uint8_t* c = h + kSealHeader + ivn;
  if (auth_ != Auth::None) {
    uint8_t want[kIcv];
    icv(h, kSealHeader + ivn + body, want);
    uint8_t diff = 0;
    for (uint32_t i = 0; i < kIcv; ++i) diff |= static_cast<uint8_t>(want[i] ^ c[body + i]);
    if (diff) return OpenError::BadIcv;
  }
  if (cipher_ != Cipher::None) {
    uint8_t v[kIv];
    std::memcpy(v, h + kSealHeader, kIv);
    crypt(false, v, c, body);
  }
  const uint32_t pad = c[body - 2];
  if (pad + 4 > body || c[body - 1] != 0) return OpenError::BadPadding;
  for (uint32_t i = 0; i < pad; ++i)
    if (c[body - 2 - pad + i] != static_cast<uint8_t>(i + 1)) return OpenError::BadPadding;
  if (spi) *spi = load_be32(h);
  if (seq) *seq = load_be32(h + 4);
  const uint32_t plain = body - 4 - pad;
  std::vector<uint8_t> out(14 + plain);
  std::copy(f.begin(), f.begin() + 12, out.begin());
  out[12] = c[0];
  out[13] = c[1];
  std::copy(c + 2, c + 2 + plain, out.begin() + 14);
  f.swap(out);
  return OpenError::None;
}

// ------------------------------------------------------------------ Diffie-Hellman

const mpz_t& Dh::prime() {
  static const Prime p;
  return p.p;
}

Dh::Dh(const std::vector<uint8_t>& seed_bytes) {
  mpz_init(x_);
  mpz_import(x_, seed_bytes.size(), 1, 1, 1, 0, seed_bytes.data());
  mpz_t m;
  mpz_init(m);
  mpz_sub_ui(m, prime(), 3);
  mpz_mod(x_, x_, m);
  mpz_add_ui(x_, x_, 2);  // x in [2, p-2]
  mpz_clear(m);
}

Dh::~Dh() { mpz_clear(x_); }

std::vector<uint8_t> Dh::public_value() const {
  mpz_t g, y;
  mpz_init_set_ui(g, 2);
  mpz_init(y);
  mpz_powm_sec(y, g, x_, prime());
  std::vector<uint8_t> out = to_bytes(y);
  mpz_clear(g);
  mpz_clear(y);
  return out;
}

bool Dh::shared(const std::vector<uint8_t>& peer, std::vector<uint8_t>& out) const {
  if (peer.size() != kBytes) return false;
  mpz_t y, s, hi;
  mpz_inits(y, s, hi, nullptr);
  mpz_import(y, peer.size(), 1, 1, 1, 0, peer.data());
  mpz_sub_ui(hi, prime(), 2);
  const bool ok = mpz_cmp_ui(y, 2) >= 0 && mpz_cmp(y, hi) <= 0;
  if (ok) {
    mpz_powm_sec(s, y, x_, prime());
    out = to_bytes(s);
  }
  mpz_clears(y, s, hi, nullptr);
  return ok;
}

uint32_t Dh::modmuls() const {
  const size_t bits = mpz_sizeinbase(x_, 2);
  return static_cast<uint32_t>(bits - 1 + mpz_popcount(x_) - 1);
}

bool ReplayWindow::accept(uint32_t seq) {
  if (seq == 0) return false;  // a sender's first frame is number 1
  if (seq > top_) {
    const uint32_t shift = seq - top_;
    seen_ = shift >= kWidth ? 0 : seen_ << shift;
    seen_ |= 1;
    top_ = seq;
    return true;
  }
  const uint32_t back = top_ - seq;
  if (back >= kWidth || (seen_ >> back & 1)) return false;
  seen_ |= 1ull << back;
  return true;
}

}  // namespace mbpsim::mbp2
