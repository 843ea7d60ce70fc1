// Exact fixed-point numbers: the only numbers in the model (no binary floating point).
#pragma once

#include <compare>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace clampai::kernel {

/// The largest scale (digits after the decimal point) a number may have.
inline constexpr int max_scale = 18;

struct Decimal;
namespace detail {
// The different-scale case of Decimal's comparison (number.cpp).
std::strong_ordering compare_rescaled(const Decimal& a, const Decimal& b) noexcept;
}  // namespace detail

/// An exact decimal number `units * 10^-scale`; integers have scale 0.
/// Arithmetic is exact; every operation that would leave the int64 range returns nullopt.
/// Z3 counterpart: an Int (scale 0) or a Real equal to units / 10^scale.
struct Decimal {
  std::int64_t units = 0;
  std::uint8_t scale = 0;

  /// An integer.
  static constexpr Decimal integer(std::int64_t v) noexcept { return Decimal{v, 0}; }

  /// Parses `text` exactly: an optional `-`, digits, an optional fraction and an optional
  /// exponent (`12`, `-0.50`, `1.5e3`); the scale is the number of fraction digits after the
  /// exponent is applied (never negative). Returns nullopt with `error` set when the text is not
  /// such a number or does not fit (more than `max_scale` digits after the point, or outside
  /// the int64 range once scaled).
  static std::optional<Decimal> parse(std::string_view text, std::string* error = nullptr);

  /// The same value at `new_scale`, or nullopt if it is not exactly representable there
  /// (digits would be lost) or overflows.
  [[nodiscard]] std::optional<Decimal> rescaled(int new_scale) const noexcept;

  /// The canonical text: all `scale` fraction digits, no exponent (`-12.50`, `7`).
  [[nodiscard]] std::string to_string() const;
  /// Appends `to_string()` to `out` (no temporary string).
  void append_to(std::string& out) const;

  /// Numeric comparison, independent of scale (1.0 == 1). Exact. The same-scale case (bounds
  /// checks of every decision) inline.
  [[gnu::always_inline]] friend std::strong_ordering operator<=>(const Decimal& a,
                                                                 const Decimal& b) noexcept {
    if (a.scale == b.scale) return a.units <=> b.units;
    return detail::compare_rescaled(a, b);
  }
  friend bool operator==(const Decimal& a, const Decimal& b) noexcept {
    return (a <=> b) == std::strong_ordering::equal;
  }
};

namespace detail {
// The different-scale cases of checked_add and checked_sub (number.cpp).
std::optional<Decimal> add_rescaled(Decimal a, Decimal b) noexcept;
std::optional<Decimal> sub_rescaled(Decimal a, Decimal b) noexcept;
}  // namespace detail

// The same-scale case (the common one) inline: these run for every effect and invariant term
// of every decision.
/// a + b at scale max(a.scale, b.scale), or nullopt on overflow.
inline std::optional<Decimal> checked_add(Decimal a, Decimal b) noexcept {
  if (a.scale != b.scale) return detail::add_rescaled(a, b);
  std::int64_t r = 0;
  if (__builtin_add_overflow(a.units, b.units, &r)) return std::nullopt;
  return Decimal{r, a.scale};
}
/// a - b at scale max(a.scale, b.scale), or nullopt on overflow.
inline std::optional<Decimal> checked_sub(Decimal a, Decimal b) noexcept {
  if (a.scale != b.scale) return detail::sub_rescaled(a, b);
  std::int64_t r = 0;
  if (__builtin_sub_overflow(a.units, b.units, &r)) return std::nullopt;
  return Decimal{r, a.scale};
}
/// a * b at scale a.scale + b.scale, or nullopt on overflow or a scale above `max_scale`.
std::optional<Decimal> checked_mul(Decimal a, Decimal b) noexcept;
/// -a, or nullopt on overflow.
std::optional<Decimal> checked_neg(Decimal a) noexcept;

/// 10^k for 0 <= k <= 18.
std::int64_t pow10(int k) noexcept;

}  // namespace clampai::kernel
