// An exact rational number for the repair's arithmetic: a normalised pair of 128-bit integers,
// which covers every value a small repair meets, and Boost's arbitrary-precision rational when
// a result does not fit (never an approximation: an overflow only changes the representation).
#pragma once

#include <boost/multiprecision/cpp_int.hpp>
#include <compare>
#include <concepts>
#include <memory>
#include <string>
#include <type_traits>

namespace clampai::verifier::detail {

class Rational {
 public:
  using Big = boost::multiprecision::cpp_rational;
  using Integer = boost::multiprecision::cpp_int;

  Rational() = default;
  template <std::integral T>
  Rational(T v) : n_(static_cast<__int128>(v)) {}  // NOLINT: implicit, like a number
  /// n / d. Requires d != 0.
  Rational(long long n, long long d);
  explicit Rational(const Integer& v);
  explicit Rational(const Big& v);

  [[nodiscard]] bool is_zero() const { return big_ ? big_->is_zero() : n_ == 0; }
  [[nodiscard]] Integer numerator() const;
  [[nodiscard]] Integer denominator() const;
  [[nodiscard]] Big big() const;
  template <typename T>
  [[nodiscard]] T convert_to() const {
    if constexpr (std::is_floating_point_v<T>) {
      if (!big_) return static_cast<T>(n_) / static_cast<T>(d_);  // within an ulp or two
    }
    return big().template convert_to<T>();
  }

  friend Rational operator+(const Rational& a, const Rational& b);
  friend Rational operator-(const Rational& a, const Rational& b);
  friend Rational operator*(const Rational& a, const Rational& b);
  friend Rational operator/(const Rational& a, const Rational& b);
  friend Rational operator-(const Rational& a);
  Rational& operator+=(const Rational& b) { return *this = *this + b; }
  Rational& operator-=(const Rational& b) { return *this = *this - b; }
  Rational& operator*=(const Rational& b) { return *this = *this * b; }
  Rational& operator/=(const Rational& b) { return *this = *this / b; }
  friend std::strong_ordering operator<=>(const Rational& a, const Rational& b);
  friend bool operator==(const Rational& a, const Rational& b) {
    return (a <=> b) == std::strong_ordering::equal;
  }

 private:
  // Either big_ is set, or the value is n_ / d_ with d_ > 0 and gcd(|n_|, d_) == 1.
  __int128 n_ = 0;
  __int128 d_ = 1;
  std::shared_ptr<const Big> big_{};

  static Rational from(Big v);
  static Rational make(__int128 n, __int128 d);  // normalises; requires d > 0
};

}  // namespace clampai::verifier::detail
