#include "rational.hpp"

#include <cstdint>
#include <numeric>

namespace clampai::verifier::detail {

namespace {

using u128 = unsigned __int128;

u128 magnitude(__int128 v) { return v < 0 ? -static_cast<u128>(v) : static_cast<u128>(v); }

u128 gcd(u128 a, u128 b) {
  if (a <= UINT64_MAX && b <= UINT64_MAX)
    return std::gcd(static_cast<std::uint64_t>(a), static_cast<std::uint64_t>(b));
  while (b != 0) {
    const u128 t = a % b;
    a = b;
    b = t;
  }
  return a;
}

// Largest magnitudes kept in the fast form, so that negation never overflows.
constexpr __int128 kMax = static_cast<__int128>((static_cast<u128>(1) << 126) - 1);

bool fits(const Rational::Integer& v) { return v <= kMax && v >= -kMax; }

__int128 narrow(const Rational::Integer& v) {
  const bool negative = v < 0;
  const Rational::Integer m = negative ? Rational::Integer(-v) : v;
  const auto lo = static_cast<std::uint64_t>(m & UINT64_MAX);
  const auto hi = static_cast<std::uint64_t>(m >> 64);
  const auto r = static_cast<__int128>((static_cast<u128>(hi) << 64) | lo);
  return negative ? -r : r;
}

Rational::Integer widen(__int128 v) {
  if (v >= INT64_MIN && v <= INT64_MAX) return Rational::Integer(static_cast<long long>(v));
  const u128 m = magnitude(v);
  static const Rational::Integer two64 = Rational::Integer(1ULL << 32) * (1ULL << 32);
  Rational::Integer out = Rational::Integer(static_cast<std::uint64_t>(m >> 64)) * two64 +
                          Rational::Integer(static_cast<std::uint64_t>(m & UINT64_MAX));
  return v < 0 ? Rational::Integer(-out) : out;
}

bool checked_mul(__int128 a, __int128 b, __int128* out) {
  return !__builtin_mul_overflow(a, b, out) && *out <= kMax && *out >= -kMax;
}

bool checked_add(__int128 a, __int128 b, __int128* out) {
  return !__builtin_add_overflow(a, b, out) && *out <= kMax && *out >= -kMax;
}

}  // namespace

Rational Rational::make(__int128 n, __int128 d) {
  Rational r;
  const u128 g = gcd(magnitude(n), static_cast<u128>(d));
  r.n_ = g > 1 ? n / static_cast<__int128>(g) : n;
  r.d_ = g > 1 ? d / static_cast<__int128>(g) : d;
  return r;
}

Rational Rational::from(Big v) {
  const Integer n = boost::multiprecision::numerator(v);
  const Integer d = boost::multiprecision::denominator(v);
  if (fits(n) && fits(d)) {
    Rational r;
    r.n_ = narrow(n);
    r.d_ = narrow(d);
    return r;
  }
  Rational r;
  r.big_ = std::make_shared<const Big>(std::move(v));
  return r;
}

Rational::Rational(long long n, long long d) {
  *this = d < 0 ? make(-static_cast<__int128>(n), -static_cast<__int128>(d)) : make(n, d);
}

Rational::Rational(const Integer& v) { *this = from(Big(v)); }

Rational::Rational(const Big& v) { *this = from(v); }

Rational::Integer Rational::numerator() const {
  return big_ ? Integer(boost::multiprecision::numerator(*big_)) : widen(n_);
}

Rational::Integer Rational::denominator() const {
  return big_ ? Integer(boost::multiprecision::denominator(*big_)) : widen(d_);
}

Rational::Big Rational::big() const { return big_ ? *big_ : Big(widen(n_), widen(d_)); }

Rational operator+(const Rational& a, const Rational& b) {
  if (!a.big_ && !b.big_) {
    __int128 n = 0;
    if (a.d_ == b.d_) {
      if (checked_add(a.n_, b.n_, &n)) return Rational::make(n, a.d_);
    } else {
      __int128 x = 0, y = 0, d = 0;
      if (checked_mul(a.n_, b.d_, &x) && checked_mul(b.n_, a.d_, &y) && checked_add(x, y, &n) &&
          checked_mul(a.d_, b.d_, &d))
        return Rational::make(n, d);
    }
  }
  return Rational::from(a.big() + b.big());
}

Rational operator-(const Rational& a) {
  if (a.big_) return Rational::from(-a.big());
  Rational r = a;
  r.n_ = -a.n_;
  return r;
}

Rational operator-(const Rational& a, const Rational& b) { return a + (-b); }

Rational operator*(const Rational& a, const Rational& b) {
  if (!a.big_ && !b.big_) {
    if (a.n_ == 0 || b.n_ == 0) return Rational();
    const auto g1 = static_cast<__int128>(gcd(magnitude(a.n_), static_cast<u128>(b.d_)));
    const auto g2 = static_cast<__int128>(gcd(magnitude(b.n_), static_cast<u128>(a.d_)));
    __int128 n = 0, d = 0;
    if (checked_mul(a.n_ / g1, b.n_ / g2, &n) && checked_mul(a.d_ / g2, b.d_ / g1, &d)) {
      Rational r;
      r.n_ = n;
      r.d_ = d;
      return r;
    }
  }
  return Rational::from(a.big() * b.big());
}

Rational operator/(const Rational& a, const Rational& b) {
  if (!b.big_) {
    Rational inverse;  // b is normalised, so its inverse is too (after the sign moves up)
    inverse.n_ = b.n_ < 0 ? -b.d_ : b.d_;
    inverse.d_ = b.n_ < 0 ? -b.n_ : b.n_;
    if (inverse.d_ != 0) return a * inverse;
  }
  return Rational::from(a.big() / b.big());
}

std::strong_ordering operator<=>(const Rational& a, const Rational& b) {
  if (!a.big_ && !b.big_) {
    if (a.d_ == b.d_) return a.n_ <=> b.n_;
    __int128 x = 0, y = 0;
    if (checked_mul(a.n_, b.d_, &x) && checked_mul(b.n_, a.d_, &y)) return x <=> y;
  }
  const Rational::Big x = a.big();
  const Rational::Big y = b.big();
  return x < y ? std::strong_ordering::less
               : (x > y ? std::strong_ordering::greater : std::strong_ordering::equal);
}

}  // namespace clampai::verifier::detail
