// Exact fixed-point arithmetic with overflow detection.
#include "clampai/kernel/number.hpp"

#include <charconv>
#include <limits>

namespace clampai::kernel {
namespace {

using Wide = __int128;

constexpr std::int64_t kPow10[19] = {1LL,
                                     10LL,
                                     100LL,
                                     1000LL,
                                     10000LL,
                                     100000LL,
                                     1000000LL,
                                     10000000LL,
                                     100000000LL,
                                     1000000000LL,
                                     10000000000LL,
                                     100000000000LL,
                                     1000000000000LL,
                                     10000000000000LL,
                                     100000000000000LL,
                                     1000000000000000LL,
                                     10000000000000000LL,
                                     100000000000000000LL,
                                     1000000000000000000LL};

bool fits(Wide w) noexcept {
  return w >= std::numeric_limits<std::int64_t>::min() &&
         w <= std::numeric_limits<std::int64_t>::max();
}

// Scales units up by 10^k in 128-bit arithmetic; |units| < 2^63 and k <= 36 keep this exact
// as long as the callers only use k <= 18.
Wide widen(std::int64_t units, int k) noexcept { return static_cast<Wide>(units) * kPow10[k]; }

std::optional<Decimal> make(Wide units, int scale) noexcept {
  if (!fits(units) || scale > max_scale) return std::nullopt;
  return Decimal{static_cast<std::int64_t>(units), static_cast<std::uint8_t>(scale)};
}

bool set_error(std::string* error, const char* message) {
  if (error != nullptr) *error = message;
  return false;
}

}  // namespace

std::int64_t pow10(int k) noexcept { return kPow10[k]; }

std::optional<Decimal> Decimal::parse(std::string_view text, std::string* error) {
  std::size_t i = 0;
  const bool negative = i < text.size() && text[i] == '-';
  if (negative) ++i;
  // Digits are accumulated without their leading zeros; more than 19 significant digits
  // cannot fit int64 at any scale.
  Wide digits = 0;
  int significant = 0;
  int fraction_digits = 0;
  bool any_digit = false;
  auto take_digit = [&](char c) {
    any_digit = true;
    if (significant > 0 || c != '0') ++significant;
    if (significant <= 20) digits = digits * 10 + (c - '0');
  };
  while (i < text.size() && text[i] >= '0' && text[i] <= '9') take_digit(text[i++]);
  if (!any_digit) {
    set_error(error, "not a number");
    return std::nullopt;
  }
  if (i < text.size() && text[i] == '.') {
    ++i;
    bool frac_digit = false;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
      take_digit(text[i++]);
      ++fraction_digits;
      frac_digit = true;
    }
    if (!frac_digit) {
      set_error(error, "a decimal point must be followed by digits");
      return std::nullopt;
    }
  }
  if (!any_digit) {
    set_error(error, "not a number");
    return std::nullopt;
  }
  long exponent = 0;
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    bool exp_negative = false;
    if (i < text.size() && (text[i] == '+' || text[i] == '-')) exp_negative = text[i++] == '-';
    bool exp_digit = false;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
      if (exponent < 100000) exponent = exponent * 10 + (text[i] - '0');
      ++i;
      exp_digit = true;
    }
    if (!exp_digit) {
      set_error(error, "an exponent must have digits");
      return std::nullopt;
    }
    if (exp_negative) exponent = -exponent;
  }
  if (i != text.size()) {
    set_error(error, "not a number");
    return std::nullopt;
  }
  if (significant > 19) {
    set_error(error, "too many digits: the value does not fit a 64-bit fixed-point number");
    return std::nullopt;
  }
  long scale = fraction_digits - exponent;
  // Trailing zeros beyond the point that an exponent pushed out are not precision.
  while (scale > max_scale && digits % 10 == 0 && digits != 0) {
    digits /= 10;
    --scale;
  }
  if (digits == 0 && scale > max_scale) scale = max_scale;
  if (scale > max_scale) {
    set_error(error, "more than 18 digits after the decimal point");
    return std::nullopt;
  }
  while (scale < 0 && digits <= static_cast<Wide>(std::numeric_limits<std::int64_t>::max())) {
    digits *= 10;
    ++scale;
  }
  if (negative) digits = -digits;
  auto result = scale < 0 ? std::nullopt : make(digits, static_cast<int>(scale));
  if (!result) set_error(error, "the value does not fit a 64-bit fixed-point number");
  return result;
}

std::optional<Decimal> Decimal::rescaled(int new_scale) const noexcept {
  if (new_scale < 0 || new_scale > max_scale) return std::nullopt;
  if (new_scale >= scale) return make(widen(units, new_scale - scale), new_scale);
  const std::int64_t divisor = kPow10[scale - new_scale];
  if (units % divisor != 0) return std::nullopt;
  return Decimal{units / divisor, static_cast<std::uint8_t>(new_scale)};
}

std::string Decimal::to_string() const {
  std::string out;
  append_to(out);
  return out;
}

void Decimal::append_to(std::string& out) const {
  // The magnitude as unsigned, so that INT64_MIN is printed correctly.
  const bool negative = units < 0;
  const std::uint64_t magnitude = negative ? std::uint64_t{0} - static_cast<std::uint64_t>(units)
                                           : static_cast<std::uint64_t>(units);
  char digits[24];
  const auto r = std::to_chars(digits, digits + sizeof digits, magnitude);
  const std::size_t n = static_cast<std::size_t>(r.ptr - digits);
  if (negative) out += '-';
  if (scale == 0) {
    out.append(digits, n);
    return;
  }
  if (n <= scale) {
    out += "0.";
    out.append(scale - n, '0');
    out.append(digits, n);
  } else {
    out.append(digits, n - scale);
    out += '.';
    out.append(digits + (n - scale), scale);
  }
}

std::strong_ordering detail::compare_rescaled(const Decimal& a, const Decimal& b) noexcept {
  const int s = a.scale > b.scale ? a.scale : b.scale;
  return widen(a.units, s - a.scale) <=> widen(b.units, s - b.scale);
}

std::optional<Decimal> detail::add_rescaled(Decimal a, Decimal b) noexcept {
  const int s = a.scale > b.scale ? a.scale : b.scale;
  return make(widen(a.units, s - a.scale) + widen(b.units, s - b.scale), s);
}

std::optional<Decimal> detail::sub_rescaled(Decimal a, Decimal b) noexcept {
  const int s = a.scale > b.scale ? a.scale : b.scale;
  return make(widen(a.units, s - a.scale) - widen(b.units, s - b.scale), s);
}

std::optional<Decimal> checked_mul(Decimal a, Decimal b) noexcept {
  return make(static_cast<Wide>(a.units) * b.units, a.scale + b.scale);
}

std::optional<Decimal> checked_neg(Decimal a) noexcept {
  return make(-static_cast<Wide>(a.units), a.scale);
}

}  // namespace clampai::kernel
