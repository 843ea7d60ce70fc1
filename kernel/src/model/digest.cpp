// SHA-256 through OpenSSL, and with the SHA extensions directly (digest_pair.hpp: the kernel's
// hasher and every verification of trace lines, one or two messages at a time, checked against
// OpenSSL before first use, OpenSSL's SHA256_* functions where the CPU has no SHA extensions:
// deprecated in OpenSSL 3 for EVP, but without EVP's dispatch per message). EVP elsewhere, with
// the digest fetched once.
#define OPENSSL_SUPPRESS_DEPRECATED
#include "clampai/kernel/digest.hpp"

#include <openssl/evp.h>
#include <openssl/rand.h>
#include <openssl/sha.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>

#include "clampai/kernel/assert.hpp"
#include "clampai/kernel/error.hpp"
#include "digest_pair.hpp"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#include <immintrin.h>
#define CLAMPAI_SHA_NI 1
#define CLAMPAI_SHA_NI_TARGET __attribute__((target("sha,sse4.1,ssse3")))
#endif

namespace clampai::kernel {

namespace {

// Each byte's two hex digits, built at compile time: one 16-bit copy a byte.
constexpr std::array<char, 512> kHexPairs = [] {
  constexpr char kHex[] = "0123456789abcdef";
  std::array<char, 512> pairs{};
  for (unsigned b = 0; b < 256; ++b) {
    pairs[2 * b] = kHex[b >> 4];
    pairs[2 * b + 1] = kHex[b & 0xF];
  }
  return pairs;
}();

void to_hex(const unsigned char* out, char* hex) {
  for (unsigned i = 0; i < 32; ++i) std::memcpy(hex + 2 * i, &kHexPairs[2 * out[i]], 2);
}

std::string hex32(const unsigned char* out) {
  std::string hex(64, '0');
  to_hex(out, hex.data());
  return hex;
}

const EVP_MD* sha256_md() {
  static const EVP_MD* const md = EVP_MD_fetch(nullptr, "SHA256", nullptr);
  CLAMPAI_ALWAYS_ASSERT(md != nullptr);
  return md;
}

// ---- two messages at a time (digest_pair.hpp) ----

// A message (two byte ranges) as SHA-256 pads it: 0x80, zeros, and its length in bits in the
// last 8 bytes of the last block; read a 64-byte block at a time, in place where a block lies
// within one range, else assembled in a scratch block (valid until the next call).
class PaddedMessage {
 public:
  explicit PaddedMessage(const detail::SplitMessage& m)
      : head_(reinterpret_cast<const unsigned char*>(m.head.data())),
        tail_(reinterpret_cast<const unsigned char*>(m.tail.data())),
        n_head_(m.head.size()),
        size_(m.head.size() + m.tail.size()),
        blocks_((size_ + 9 + 63) / 64) {}

  [[nodiscard]] std::size_t blocks() const { return blocks_; }

  const unsigned char* block(std::size_t i) {
    const std::size_t at = 64 * i;
    if (at + 64 <= n_head_) return head_ + at;
    if (at >= n_head_ && at + 64 <= size_) return tail_ + (at - n_head_);
    std::size_t k = 0;
    if (at < n_head_) {
      k = std::min<std::size_t>(64, n_head_ - at);
      std::memcpy(scratch_, head_ + at, k);
    }
    if (k < 64 && at + k < size_) {
      const std::size_t from = at + k - n_head_;
      const std::size_t n = std::min(64 - k, size_ - n_head_ - from);
      std::memcpy(scratch_ + k, tail_ + from, n);
      k += n;
    }
    if (k < 64) {
      std::memset(scratch_ + k, 0, 64 - k);
      if (at + k == size_) scratch_[k] = 0x80;
      if (i + 1 == blocks_) {
        const std::uint64_t bits = static_cast<std::uint64_t>(size_) * 8;
        for (int b = 0; b < 8; ++b) scratch_[63 - b] = static_cast<unsigned char>(bits >> (8 * b));
      }
    }
    return scratch_;
  }

 private:
  const unsigned char* head_;
  const unsigned char* tail_;
  std::size_t n_head_;
  std::size_t size_;
  std::size_t blocks_;
  alignas(16) unsigned char scratch_[64]{};
};

void openssl_digest(const detail::SplitMessage& m, unsigned char* out) {
  SHA256_CTX ctx;
  CLAMPAI_ALWAYS_ASSERT(SHA256_Init(&ctx) == 1);
  CLAMPAI_ALWAYS_ASSERT(SHA256_Update(&ctx, m.head.data(), m.head.size()) == 1);
  CLAMPAI_ALWAYS_ASSERT(SHA256_Update(&ctx, m.tail.data(), m.tail.size()) == 1);
  CLAMPAI_ALWAYS_ASSERT(SHA256_Final(out, &ctx) == 1);
}

#if defined(CLAMPAI_SHA_NI)

// The round constants (FIPS 180-4, 4.2.2), four per group of four rounds.
alignas(16) constexpr std::uint32_t kRound[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

// The state as the SHA instructions hold it: ABEF and CDGH.
struct ShaState {
  __m128i abef;
  __m128i cdgh;
};

CLAMPAI_SHA_NI_TARGET ShaState initial_state() {
  alignas(16) constexpr std::uint32_t kInitial[8] = {0x6a09e667,
                                                     0xbb67ae85,
                                                     0x3c6ef372,
                                                     0xa54ff53a,
                                                     0x510e527f,
                                                     0x9b05688c,
                                                     0x1f83d9ab,
                                                     0x5be0cd19};
  const __m128i abcd = _mm_shuffle_epi32(_mm_load_si128(reinterpret_cast<const __m128i*>(kInitial)),
                                         0xB1);  // CDAB
  const __m128i efgh = _mm_shuffle_epi32(
      _mm_load_si128(reinterpret_cast<const __m128i*>(kInitial + 4)), 0x1B);  // HGFE
  return {_mm_alignr_epi8(abcd, efgh, 8), _mm_blend_epi16(efgh, abcd, 0xF0)};
}

// The 32-byte digest of a final state.
CLAMPAI_SHA_NI_TARGET void store_digest(const ShaState& s, unsigned char* out) {
  const __m128i feba = _mm_shuffle_epi32(s.abef, 0x1B);
  const __m128i dchg = _mm_shuffle_epi32(s.cdgh, 0xB1);
  const __m128i dcba = _mm_blend_epi16(feba, dchg, 0xF0);
  const __m128i hgfe = _mm_alignr_epi8(dchg, feba, 8);
  const __m128i big_endian = _mm_set_epi64x(0x0c0d0e0f08090a0bULL, 0x0405060700010203ULL);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out), _mm_shuffle_epi8(dcba, big_endian));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 16), _mm_shuffle_epi8(hgfe, big_endian));
}

// The message words of group `g` (rounds 4g to 4g+3), given the last four groups in `w`
// (indexed modulo 4); groups 0-3 are the block's own words, big-endian.
CLAMPAI_SHA_NI_TARGET inline __attribute__((always_inline)) __m128i schedule(
    int g, __m128i (&w)[4], const unsigned char* block) {
  const __m128i big_endian = _mm_set_epi64x(0x0c0d0e0f08090a0bULL, 0x0405060700010203ULL);
  __m128i x;
  if (g < 4) {
    x = _mm_shuffle_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(block + 16 * g)),
                         big_endian);
  } else {
    x = _mm_sha256msg1_epu32(w[g & 3], w[(g + 1) & 3]);
    x = _mm_add_epi32(x, _mm_alignr_epi8(w[(g + 3) & 3], w[(g + 2) & 3], 4));
    x = _mm_sha256msg2_epu32(x, w[(g + 3) & 3]);
  }
  w[g & 3] = x;
  return _mm_add_epi32(x, _mm_load_si128(reinterpret_cast<const __m128i*>(kRound + 4 * g)));
}

// One block into one state.
CLAMPAI_SHA_NI_TARGET void compress_one(ShaState& s, const unsigned char* block) {
  __m128i abef = s.abef;
  __m128i cdgh = s.cdgh;
  __m128i w[4];
#pragma GCC unroll 16
  for (int g = 0; g < 16; ++g) {
    const __m128i k = schedule(g, w, block);
    cdgh = _mm_sha256rnds2_epu32(cdgh, abef, k);
    abef = _mm_sha256rnds2_epu32(abef, cdgh, _mm_shuffle_epi32(k, 0x0E));
  }
  s.abef = _mm_add_epi32(s.abef, abef);
  s.cdgh = _mm_add_epi32(s.cdgh, cdgh);
}

// One block into each of two states, their rounds interleaved.
CLAMPAI_SHA_NI_TARGET void compress_two(ShaState& s,
                                        const unsigned char* block,
                                        ShaState& t,
                                        const unsigned char* other) {
  __m128i abef = s.abef;
  __m128i cdgh = s.cdgh;
  __m128i abef2 = t.abef;
  __m128i cdgh2 = t.cdgh;
  __m128i w[4];
  __m128i w2[4];
#pragma GCC unroll 16
  for (int g = 0; g < 16; ++g) {
    const __m128i k = schedule(g, w, block);
    const __m128i k2 = schedule(g, w2, other);
    cdgh = _mm_sha256rnds2_epu32(cdgh, abef, k);
    cdgh2 = _mm_sha256rnds2_epu32(cdgh2, abef2, k2);
    abef = _mm_sha256rnds2_epu32(abef, cdgh, _mm_shuffle_epi32(k, 0x0E));
    abef2 = _mm_sha256rnds2_epu32(abef2, cdgh2, _mm_shuffle_epi32(k2, 0x0E));
  }
  s.abef = _mm_add_epi32(s.abef, abef);
  s.cdgh = _mm_add_epi32(s.cdgh, cdgh);
  t.abef = _mm_add_epi32(t.abef, abef2);
  t.cdgh = _mm_add_epi32(t.cdgh, cdgh2);
}

CLAMPAI_SHA_NI_TARGET void sha_ni_two(const detail::SplitMessage& a,
                                      const detail::SplitMessage& b,
                                      unsigned char* out_a,
                                      unsigned char* out_b) {
  PaddedMessage ma(a);
  PaddedMessage mb(b);
  ShaState sa = initial_state();
  ShaState sb = initial_state();
  const std::size_t both = std::min(ma.blocks(), mb.blocks());
  std::size_t i = 0;
  for (; i < both; ++i) compress_two(sa, ma.block(i), sb, mb.block(i));
  for (std::size_t j = i; j < ma.blocks(); ++j) compress_one(sa, ma.block(j));
  for (std::size_t j = i; j < mb.blocks(); ++j) compress_one(sb, mb.block(j));
  store_digest(sa, out_a);
  store_digest(sb, out_b);
}

CLAMPAI_SHA_NI_TARGET void sha_ni_one(const detail::SplitMessage& m, unsigned char* out) {
  PaddedMessage pm(m);
  ShaState s = initial_state();
  for (std::size_t i = 0; i < pm.blocks(); ++i) compress_one(s, pm.block(i));
  store_digest(s, out);
}

// Whether the CPU has the SHA extensions and SSSE3/SSE4.1 (CPUID leaf 7 EBX bit 29; leaf 1
// ECX bits 9 and 19).
bool cpu_has_sha_ni() {
  unsigned a = 0;
  unsigned b = 0;
  unsigned c = 0;
  unsigned d = 0;
  if (__get_cpuid(1, &a, &b, &c, &d) == 0 || (c & (1U << 9)) == 0 || (c & (1U << 19)) == 0)
    return false;
  if (__get_cpuid_count(7, 0, &a, &b, &c, &d) == 0) return false;
  return (b & (1U << 29)) != 0;
}

// The interleaved code agrees with OpenSSL on messages of every length around the block and
// padding boundaries, split at every kind of place (the check costs a few microseconds, once).
bool sha_ni_agrees() {
  unsigned char bytes[300];
  for (std::size_t i = 0; i < sizeof bytes; ++i)
    bytes[i] = static_cast<unsigned char>(i * 131 + (i >> 3));
  const auto* text = reinterpret_cast<const char*>(bytes);
  constexpr std::size_t kSizes[] = {0, 1, 55, 56, 63, 64, 65, 119, 120, 128, 191, 300};
  for (const std::size_t n : kSizes) {
    for (const std::size_t cut : {std::size_t{0}, n / 3, n > 64 ? std::size_t{64} : n, n}) {
      if (cut > n) continue;
      const detail::SplitMessage m{std::string_view(text, cut),
                                   std::string_view(text + cut, n - cut)};
      const detail::SplitMessage other{std::string_view(text + 1, 299 - n / 2), {}};
      unsigned char want[32];
      unsigned char want_other[32];
      unsigned char got[32];
      unsigned char got_other[32];
      unsigned char one[32];
      openssl_digest(m, want);
      openssl_digest(other, want_other);
      sha_ni_two(m, other, got, got_other);
      sha_ni_one(m, one);
      if (std::memcmp(want, got, 32) != 0 || std::memcmp(want_other, got_other, 32) != 0 ||
          std::memcmp(want, one, 32) != 0)
        return false;
    }
  }
  return true;
}

bool use_sha_ni() {
  static const bool use = cpu_has_sha_ni() && sha_ni_agrees();
  return use;
}

#endif

}  // namespace

namespace detail {

void sha256_two(const SplitMessage& a,
                const SplitMessage& b,
                unsigned char* out_a,
                unsigned char* out_b) {
#if defined(CLAMPAI_SHA_NI)
  if (use_sha_ni()) {
    sha_ni_two(a, b, out_a, out_b);
    return;
  }
#endif
  openssl_digest(a, out_a);
  openssl_digest(b, out_b);
}

void sha256_one(const SplitMessage& m, unsigned char* out) {
#if defined(CLAMPAI_SHA_NI)
  if (use_sha_ni()) {
    sha_ni_one(m, out);
    return;
  }
#endif
  openssl_digest(m, out);
}

void digest_hex(const unsigned char* digest, char* hex) { to_hex(digest, hex); }

void sha256_one_hex(const SplitMessage& m, char* hex) {
  unsigned char digest[32];
  sha256_one(m, digest);
  to_hex(digest, hex);
}

bool digest_is_hex(const unsigned char* digest, std::string_view hex) {
  if (hex.size() != 64) return false;
#if defined(__SSE2__)
  // Each byte's nibbles as digits ('0' + n, and 'a' - 10 + n past 9), high nibble first.
  const __m128i low4 = _mm_set1_epi8(0x0F);
  const __m128i nine = _mm_set1_epi8(9);
  const __m128i zero = _mm_set1_epi8('0');
  const __m128i past_nine = _mm_set1_epi8('a' - '0' - 10);
  auto digits = [&](__m128i n) {
    return _mm_add_epi8(_mm_add_epi8(n, zero), _mm_and_si128(_mm_cmpgt_epi8(n, nine), past_nine));
  };
  int equal = 0xFFFF;
  for (int half = 0; half < 2; ++half) {
    const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(digest + 16 * half));
    const __m128i high = digits(_mm_and_si128(_mm_srli_epi16(bytes, 4), low4));
    const __m128i low = digits(_mm_and_si128(bytes, low4));
    const char* text = hex.data() + 32 * half;
    equal &= _mm_movemask_epi8(_mm_cmpeq_epi8(
        _mm_unpacklo_epi8(high, low), _mm_loadu_si128(reinterpret_cast<const __m128i*>(text))));
    equal &= _mm_movemask_epi8(
        _mm_cmpeq_epi8(_mm_unpackhi_epi8(high, low),
                       _mm_loadu_si128(reinterpret_cast<const __m128i*>(text + 16))));
  }
  return equal == 0xFFFF;
#else
  char mine[64];
  to_hex(digest, mine);
  return std::memcmp(mine, hex.data(), 64) == 0;
#endif
}

}  // namespace detail

std::string sha256_hex(std::string_view data) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  CLAMPAI_ALWAYS_ASSERT(EVP_Digest(data.data(), data.size(), out, &len, sha256_md(), nullptr) == 1);
  CLAMPAI_ALWAYS_ASSERT(len == 32);
  return hex32(out);
}

std::string hmac_sha256_hex(std::string_view key, std::string_view data) {
  unsigned char out[EVP_MAX_MD_SIZE];
  std::size_t len = 0;
  // A zero-length key is valid HMAC; OpenSSL wants a non-null pointer for it.
  static const unsigned char kEmpty = 0;
  const void* k = key.empty() ? static_cast<const void*>(&kEmpty) : key.data();
  CLAMPAI_ALWAYS_ASSERT(EVP_Q_mac(nullptr,
                                  "HMAC",
                                  nullptr,
                                  "SHA256",
                                  nullptr,
                                  k,
                                  key.size(),
                                  reinterpret_cast<const unsigned char*>(data.data()),
                                  data.size(),
                                  out,
                                  sizeof out,
                                  &len) != nullptr);
  CLAMPAI_ALWAYS_ASSERT(len == 32);
  return hex32(out);
}

std::string random_hex(std::size_t bytes, std::string_view what) {
  CLAMPAI_ALWAYS_ASSERT(bytes <= 64);
  std::array<unsigned char, 64> drawn{};
  if (RAND_bytes(drawn.data(), static_cast<int>(bytes)) != 1)
    throw Error("cannot draw " + std::string(what) + ": the random number generator failed");
  std::string hex(2 * bytes, '0');
  for (std::size_t i = 0; i < bytes; ++i)
    std::memcpy(hex.data() + 2 * i, &kHexPairs[2 * drawn[i]], 2);
  return hex;
}

}  // namespace clampai::kernel
