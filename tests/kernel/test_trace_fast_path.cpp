// SHA-256 of trace lines two at a time (digest_pair.hpp) against OpenSSL's one at a time.
#include <catch2/catch.hpp>
#include <random>
#include <string>

#include "clampai/kernel/digest.hpp"
#include "digest_pair.hpp"

using namespace clampai::kernel;

TEST_CASE("SHA-256 two messages at a time agrees with OpenSSL", "[kernel][trace]") {
  std::mt19937_64 rng(2026);
  std::string bytes(1400, '\0');
  for (auto& c : bytes) c = static_cast<char>(rng());
  for (std::size_t n = 0; n <= 700; ++n) {
    const std::size_t other_n = (n * 7 + 13) % 701;
    for (const std::size_t cut :
         {std::size_t{0}, n / 2, n, static_cast<std::size_t>(rng() % (n + 1))}) {
      const std::string_view a(bytes.data(), n);
      const std::string_view b(bytes.data() + 700, other_n);
      const std::size_t other_cut = other_n - other_n / 3;
      const detail::SplitMessage ma{a.substr(0, cut), a.substr(cut)};
      const detail::SplitMessage mb{b.substr(0, other_cut), b.substr(other_cut)};
      unsigned char da[32];
      unsigned char db[32];
      unsigned char one[32];
      detail::sha256_two(ma, mb, da, db);
      detail::sha256_one(ma, one);
      const std::string want_a = sha256_hex(a);
      const std::string want_b = sha256_hex(b);
      INFO("sizes " << n << " (cut at " << cut << "), " << other_n);
      REQUIRE(detail::digest_is_hex(da, want_a));
      REQUIRE(detail::digest_is_hex(db, want_b));
      REQUIRE(detail::digest_is_hex(one, want_a));
    }
  }
  // The comparison with the hex text: every digit matters, lowercase only, 64 digits exactly.
  const std::string text = "the quick brown fox";
  const detail::SplitMessage m{text, {}};
  unsigned char d[32];
  detail::sha256_one(m, d);
  const std::string hex = sha256_hex(text);
  REQUIRE(detail::digest_is_hex(d, hex));
  for (std::size_t i = 0; i < 64; ++i) {
    for (const char c : std::string("0123456789abcdefABCDEFg \"")) {
      if (c == hex[i]) continue;
      std::string other = hex;
      other[i] = c;
      REQUIRE_FALSE(detail::digest_is_hex(d, other));
    }
  }
  REQUIRE_FALSE(detail::digest_is_hex(d, hex.substr(0, 63)));
  REQUIRE_FALSE(detail::digest_is_hex(d, hex + "0"));
  REQUIRE_FALSE(detail::digest_is_hex(d, ""));
}
