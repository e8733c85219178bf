// The MBP2's crypto units on their own: sealing and opening frames with every cipher and keyed
// hash (Nettle), rejection of any altered byte, the Diffie-Hellman group and exchange (GMP),
// and the timing of the CAU, the MEAC1024 and firmware kernels on the PME.
#include <gtest/gtest.h>

#include <gmp.h>

#include <algorithm>
#include <string>
#include <vector>

#include "models/core/calendar.h"
#include "models/core/rng.h"
#include "models/mbcf/packet.h"
#include "models/mbp2/crypto.h"
#include "models/mbp2/units.h"
#include "tests/test_util.h"

namespace mbpsim::mbp2 {
namespace {

// An encoded MBCF_WRITE of `n` bytes, as the NIC hands it to the CAU.
std::vector<uint8_t> frame(uint32_t n, uint8_t salt) {
  mbcf::Packet p;
  p.dst_mac = mbcf::mac_of(1);
  p.src_mac = mbcf::mac_of(0);
  p.src_ptask = p.dst_ptask = 1;
  mbcf::Command c;
  c.cmd = mbcf::Cmd::Write;
  c.laddr = 0x10000;
  c.length = n;
  for (uint32_t i = 0; i < n; ++i) c.data.push_back(static_cast<uint8_t>(salt + i * 13));
  p.cmds.push_back(c);
  std::vector<uint8_t> b;
  EXPECT_TRUE(mbcf::encode(p, b));
  return b;
}

std::vector<uint8_t> secret(const char* s) { return std::vector<uint8_t>(s, s + std::string(s).size()); }

const Cipher kCiphers[] = {Cipher::None, Cipher::Des, Cipher::Des3};
const Auth kAuths[] = {Auth::None, Auth::HmacMd5, Auth::HmacSha1};

TEST(Mbp2Crypto, EveryCipherAndHashRoundTripsEveryLengthWithinTheOverhead) {
  const uint8_t iv[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  for (Cipher c : kCiphers)
    for (Auth a : kAuths) {
      SecurityAssociation tx(c, a, secret("k")), rx(c, a, secret("k"));
      for (uint32_t n : {0u, 1u, 3u, 4u, 7u, 8u, 63u, 64u, 1000u, 1408u}) {
        const std::vector<uint8_t> f = frame(n, static_cast<uint8_t>(n));
        std::vector<uint8_t> s = tx.seal(f, 0, n + 1, iv);
        EXPECT_LE(s.size(), f.size() + seal_overhead(c, a)) << to_string(c) << " " << to_string(a) << " " << n;
        EXPECT_EQ(s[12] << 8 | s[13], kEtherTypeSealed);
        if (c != Cipher::None && n >= 16) {
          // The payload does not appear on the wire.
          auto pay = std::vector<uint8_t>(f.end() - 16, f.end());
          EXPECT_EQ(std::search(s.begin(), s.end(), pay.begin(), pay.end()), s.end());
        }
        s.resize(std::max<size_t>(s.size(), 60), 0);  // the MAC's minimum-frame padding
        uint32_t spi = 9, seq = 0;
        ASSERT_EQ(rx.open(s, &spi, &seq), OpenError::None) << to_string(c) << " " << to_string(a) << " " << n;
        EXPECT_EQ(s, f);
        EXPECT_EQ(spi, 0u);
        EXPECT_EQ(seq, n + 1);
      }
    }
}

TEST(Mbp2Crypto, AuthenticationRejectsAnyAlteredByteAndAWrongKey) {
  const uint8_t iv[8] = {9, 9, 9, 9, 9, 9, 9, 9};
  for (Cipher c : kCiphers)
    for (Auth a : {Auth::HmacMd5, Auth::HmacSha1}) {
      SecurityAssociation sa(c, a, secret("shared"));
      const std::vector<uint8_t> f = frame(100, 7);
      const std::vector<uint8_t> s = sa.seal(f, 3, 77, iv);
      for (size_t i = 14; i < s.size(); ++i) {
        std::vector<uint8_t> t = s;
        t[i] ^= 0x01;
        EXPECT_NE(sa.open(t), OpenError::None) << "byte " << i << " " << to_string(c) << " " << to_string(a);
      }
      std::vector<uint8_t> t = s;
      t.resize(t.size() - 1);  // truncated
      EXPECT_NE(sa.open(t), OpenError::None);
      SecurityAssociation other(c, a, secret("another"));
      t = s;
      EXPECT_EQ(other.open(t), OpenError::BadIcv);
      EXPECT_NE(sa.fingerprint(), other.fingerprint());
    }
}

TEST(Mbp2Crypto, MalformedSealedFramesAreRejectedWithoutReadingPastTheirEnd) {
  SecurityAssociation sa(Cipher::Des, Auth::None, secret("k"));
  const uint8_t iv[8] = {};
  const std::vector<uint8_t> s = sa.seal(frame(40, 1), 0, 1, iv);
  for (size_t n = 0; n < s.size(); ++n) {
    std::vector<uint8_t> t(s.begin(), s.begin() + static_cast<std::ptrdiff_t>(n));
    EXPECT_NE(sa.open(t), OpenError::None) << n;
  }
  std::vector<uint8_t> t = s;
  t[14 + 8] = 0;
  t[14 + 9] = 5;  // a length that is not a whole number of blocks
  EXPECT_EQ(sa.open(t), OpenError::BadLength);
}

// RFC 4303 3.4.3: every number once, reordering within 64 frames tolerated, older refused.
TEST(Mbp2Crypto, TheReplayWindowTakesEachNumberOnceAndNothingTooOld) {
  ReplayWindow w;
  EXPECT_FALSE(w.accept(0));  // numbering starts at 1
  EXPECT_TRUE(w.accept(1));
  EXPECT_FALSE(w.accept(1));
  EXPECT_TRUE(w.accept(5));   // a gap: 2-4 may still come
  EXPECT_TRUE(w.accept(3));
  EXPECT_FALSE(w.accept(3));
  EXPECT_TRUE(w.accept(2));
  EXPECT_TRUE(w.accept(4));
  EXPECT_FALSE(w.accept(4));
  EXPECT_EQ(w.top(), 5u);
  EXPECT_TRUE(w.accept(5 + 63));  // 5 is now 63 behind: the oldest the window holds
  EXPECT_FALSE(w.accept(5));
  EXPECT_TRUE(w.accept(6));
  EXPECT_TRUE(w.accept(5 + 64));  // 5 falls out, 6 stays
  EXPECT_FALSE(w.accept(5));      // 64 behind: too old
  EXPECT_FALSE(w.accept(6));
  EXPECT_TRUE(w.accept(7));
  EXPECT_TRUE(w.accept(1000));    // a jump wider than the window forgets everything below
  EXPECT_FALSE(w.accept(1000 - 64));
  EXPECT_TRUE(w.accept(1000 - 63));
  EXPECT_TRUE(w.accept(0xFFFFFFFFu));
  EXPECT_FALSE(w.accept(0xFFFFFFFFu));
}

TEST(Mbp2Crypto, TheGroupIsRfc2409sSafePrimeAndBothEndsAgree) {
  const mpz_t& p = Dh::prime();
  EXPECT_EQ(mpz_sizeinbase(p, 2), 1024u);
  EXPECT_GT(mpz_probab_prime_p(p, 30), 0);
  mpz_t q;
  mpz_init(q);
  mpz_sub_ui(q, p, 1);
  mpz_fdiv_q_2exp(q, q, 1);
  EXPECT_GT(mpz_probab_prime_p(q, 30), 0);  // (p-1)/2 prime: a safe prime
  mpz_clear(q);
  const uint64_t seed = 20261122;  // fixed: the private values, and so the test, replay exactly
  SCOPED_TRACE("seed " + std::to_string(seed));
  Rng r(seed, "dh");
  auto bytes = [&r] {
    std::vector<uint8_t> b(128);
    for (auto& x : b) x = static_cast<uint8_t>(r.next());
    return b;
  };
  Dh a(bytes()), b(bytes());
  const auto pa = a.public_value(), pb = b.public_value();
  EXPECT_EQ(pa.size(), Dh::kBytes);
  EXPECT_NE(pa, pb);
  std::vector<uint8_t> sa, sb;
  ASSERT_TRUE(a.shared(pb, sa));
  ASSERT_TRUE(b.shared(pa, sb));
  EXPECT_EQ(sa, sb);
  SecurityAssociation ka(Cipher::Des3, Auth::HmacSha1, sa), kb(Cipher::Des3, Auth::HmacSha1, sb);
  EXPECT_EQ(ka.fingerprint(), kb.fingerprint());
  // Public values outside [2, p-2] are refused (the small-subgroup values 1 and p-1).
  std::vector<uint8_t> one(Dh::kBytes, 0), out;
  one.back() = 1;
  EXPECT_FALSE(a.shared(one, out));
  EXPECT_FALSE(a.shared(std::vector<uint8_t>(Dh::kBytes, 0xff), out));
  EXPECT_FALSE(a.shared(std::vector<uint8_t>(5, 1), out));
  // Square-and-multiply: about 1.5 multiplications per exponent bit.
  EXPECT_GT(a.modmuls(), 1000u);
  EXPECT_LT(a.modmuls(), 2048u);
}

TEST(Mbp2Crypto, CauTimeIsTheLongerOfCipherAndHashAndItsMemoryTrafficSlowsOtherRoutes) {
  Stats st;
  CryptoConfig c;  // 100 MHz, 2 cycles per DES pass, 32 per hash block
  Calendar cal("cal");
  Em em(EmConfig{}, st, "em");
  Cau cau(cal, c, 4, 2, em, st, "cau");
  FirmwareRing fw(cal, cau.engine());
  // 1024 bytes of 3DES: 129 blocks x 3 passes x 2 cycles = 7.74 us; the hash is shorter.
  EXPECT_EQ(cipher_blocks(Cipher::Des3, 1024), 387u);
  EXPECT_EQ(cau.compute_ps(387, hash_blocks(Auth::HmacSha1, 1060)), 7740000u);
  EXPECT_EQ(cau.compute_ps(0, 18), 5760000u);  // hash alone: 18 x 32 cycles
  // Its reads and writes share the card memory with the MAC's route.
  const uint32_t frame = em.carve(1024);
  uint64_t end = 0;
  fw.expect(cau.run(0, Cau::Op::Seal, 1, frame, 1000, 1024, 387, 18), [&](const DmaEngine::Desc&) { end = cal.now_ps(); });
  // Its descriptor names the frame in EM, transformed in place, and the operation and slot.
  const uint32_t desc = 0;  // the CAU's ring was carved first
  EXPECT_EQ(em.load32(desc), frame);
  EXPECT_EQ(em.load32(desc + 4), frame);
  EXPECT_EQ(em.load32(desc + 8), 1000u);
  EXPECT_EQ(em.load32(desc + 16), 1u << 24 | 1);
  // The CAU books its bursts from the end of its setup; once it runs, another route waits.
  const uint64_t setup = static_cast<uint64_t>(c.cau_setup_ns * 1000);
  ASSERT_GT(setup, 0u);
  const uint64_t mac_alone = em.access_ps(1024);
  sc_core::sc_start(sc_core::sc_time::from_value(setup + 1000));
  const uint64_t t = cal.now_ps();
  const uint64_t mac = em.access(Route::Mac, t, 1024).end();
  EXPECT_GT(mac, t + mac_alone);
  EXPECT_GT(em.wait_ps(Route::Mac), 0u);
  sc_core::sc_start(sc_core::sc_time(20, sc_core::SC_US));
  EXPECT_GE(end, setup + 7740000u);
  EXPECT_EQ(test::stat_value(st, "cau.bytes"), 1000);
  // It reads the frame and its slot's key block (the first use of the slot) and writes the
  // sealed frame.
  EXPECT_EQ(test::stat_value(st, "em.crypto.bytes"), 1000 + 1024 + SecurityAssociation::kKeyBlockBytes);
  cau.run(cal.now_ps(), Cau::Op::Seal, 1, frame, 1000, 1024, 387, 18);
  sc_core::sc_start(sc_core::sc_time(20, sc_core::SC_US));
  EXPECT_EQ(test::stat_value(st, "em.crypto.bytes"), 2 * (1000 + 1024) + SecurityAssociation::kKeyBlockBytes);  // the same slot: no key read
}

// The CAU works from its ring and EM alone: keys are loaded into its key slots through its
// ring, in order with the frames; at completion it seals or opens what EM holds then, under
// the key block EM holds then, writes the result in place and reports through the descriptor.
TEST(Mbp2Crypto, TheCauSealsAndOpensWhatEmHoldsUnderTheKeysItsRingLoaded) {
  Stats st;
  CryptoConfig c;
  Calendar cal("cal");
  Em em(EmConfig{}, st, "em");
  Cau cau(cal, c, 8, 2, em, st, "cau");
  FirmwareRing fw(cal, cau.engine());
  const SecurityAssociation k1(Cipher::Des3, Auth::HmacSha1, {1, 2, 3}), k2(Cipher::Des3, Auth::HmacSha1, {4, 5, 6});
  // A key block is the keys: it makes an association that seals what the original does.
  const std::vector<uint8_t> b1 = k1.key_block();
  ASSERT_EQ(b1.size(), SecurityAssociation::kKeyBlockBytes);
  const auto again = SecurityAssociation::from_key_block(b1.data(), static_cast<uint32_t>(b1.size()));
  ASSERT_TRUE(again);
  EXPECT_EQ(again->fingerprint(), k1.fingerprint());
  std::vector<uint8_t> bad = b1;
  bad[2] = 1;  // a reserved byte
  EXPECT_FALSE(SecurityAssociation::from_key_block(bad.data(), static_cast<uint32_t>(bad.size())));
  bad = b1;
  bad[0] = 9;  // no such cipher
  EXPECT_FALSE(SecurityAssociation::from_key_block(bad.data(), static_cast<uint32_t>(bad.size())));

  const uint8_t iv[8] = {9, 8, 7, 6, 5, 4, 3, 2};
  const uint32_t a = em.carve(1536), b = em.carve(1536), d = em.carve(1536);
  auto put = [&](uint32_t off, const std::vector<uint8_t>& f) { em.write(off, f.data(), static_cast<uint32_t>(f.size())); };
  const std::vector<uint8_t> fa = frame(100, 1), fb = frame(100, 2);
  const std::vector<uint8_t> pa = prepare_seal(Cipher::Des3, fa, 0, 1, iv), pb = prepare_seal(Cipher::Des3, fb, 0, 2, iv);
  put(a, pa);
  put(b, pb);
  std::vector<DmaEngine::Desc> done;
  auto k = [&](const DmaEngine::Desc& x) { done.push_back(x); };
  const uint32_t n = static_cast<uint32_t>(pa.size());
  const uint32_t out = sealed_size(Cipher::Des3, Auth::HmacSha1, static_cast<uint32_t>(fa.size()));
  // Slot 0 gets k1; frame a is sealed under it; slot 0 then gets k2 while a is still in the
  // ring, and frame b, posted after the load, is sealed under k2.
  cau.load_key(0, 0, k1.key_block());
  fw.expect(cau.run(0, Cau::Op::Seal, 0, a, n, out, 10, 10), k);
  cau.load_key(0, 0, k2.key_block());
  fw.expect(cau.run(0, Cau::Op::Seal, 0, b, n, out, 10, 10), k);
  // A byte of frame b changes in EM after its descriptor was posted, before the CAU runs it.
  std::vector<uint8_t> fb2 = fb;
  fb2.back() ^= 0x5a;
  em.write(b + n - 1, &fb2.back(), 1);
  // A frame under a slot whose block is no key: refused, nothing written.
  std::vector<uint8_t> zeros(SecurityAssociation::kKeyBlockBytes, 0xee);
  em.write(cau.key_slot_offset(1), zeros.data(), static_cast<uint32_t>(zeros.size()));
  put(d, pa);
  fw.expect(cau.run(0, Cau::Op::Seal, 1, d, n, out, 10, 10), k);
  sc_core::sc_start(sc_core::sc_time(100, sc_core::SC_US));
  ASSERT_EQ(done.size(), 3u);
  EXPECT_EQ(Cau::verdict(done[0]), Cau::Error::None);
  EXPECT_EQ(done[0].bytes, out);  // the sealed frame's length, in the descriptor
  EXPECT_EQ(em.read(a, out), k1.seal(fa, 0, 1, iv));
  std::vector<uint8_t> got_b = em.read(b, done[1].bytes);
  EXPECT_EQ(got_b, k2.seal(fb2, 0, 2, iv));  // what EM held when the CAU ran, under k2
  EXPECT_EQ(Cau::verdict(done[2]), Cau::Error::BadKey);
  EXPECT_TRUE(done[2].error());
  EXPECT_EQ(em.read(d, n), pa);

  // Opening: a frame under the wrong keys fails authentication and stays as it was; under the
  // right ones it is written back in the clear.
  done.clear();
  const uint64_t t = cal.now_ps();
  fw.expect(cau.run(t, Cau::Op::Open, 0, a, out, out, 10, 10), k);  // a was sealed under k1; slot 0 holds k2
  fw.expect(cau.run(t, Cau::Op::Open, 0, b, out, out, 10, 10), k);
  sc_core::sc_start(sc_core::sc_time(100, sc_core::SC_US));
  ASSERT_EQ(done.size(), 2u);
  EXPECT_EQ(Cau::verdict(done[0]), Cau::Error::BadIcv);
  EXPECT_EQ(em.read(a, out), k1.seal(fa, 0, 1, iv));
  EXPECT_EQ(Cau::verdict(done[1]), Cau::Error::None);
  EXPECT_EQ(done[1].bytes, fb2.size());
  EXPECT_EQ(em.read(b, done[1].bytes), fb2);
  EXPECT_EQ(test::stat_value(st, "cau.key_loads"), 2);
  EXPECT_EQ(test::stat_value(st, "cau.failures"), 2);
}

TEST(Mbp2Crypto, MeacOperationsQueueAndFirmwareKernelsPayForUncachedFrames) {
  Stats st;
  CryptoConfig c;  // 50 MHz, 132 cycles per modular multiplication
  Meac m(c, st, "meac");
  EXPECT_EQ(m.modmul_ps(), 2640000u);
  EXPECT_EQ(m.run(0, 10), 26400000u);
  EXPECT_EQ(m.run(0, 10), 52800000u);  // the second exponentiation waits for the first
  EXPECT_EQ(test::stat_value(st, "meac.modmuls"), 20);
  Calendar cal("cal");
  PmeConfig pc;  // SPARClite: 100 MHz core, 20 MHz bus, 16 bus cycles per uncached access
  Pme sparclite(cal, pc, st, "p1");
  // A kernel runs near the base CPI (write-through stalls aside), unlike protocol code...
  EXPECT_LT(sparclite.kernel_ps(1000, 0), sparclite.instr_ps(1000) / 4);
  // ... but each uncached word of the frame costs 16 bus cycles = 0.8 us.
  EXPECT_EQ(sparclite.kernel_ps(0, 1), 800000u);
  pc.cache_control = true;  // Casablanca: the frame is filled into the cache by lines
  Pme casablanca(cal, pc, st, "p2");
  EXPECT_LT(casablanca.kernel_ps(0, 64), sparclite.kernel_ps(0, 64) / 4);
}

}  // namespace
}  // namespace mbpsim::mbp2
