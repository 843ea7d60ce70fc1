// Exact fixed-point numbers: parsing, arithmetic, overflow.
#include <catch2/catch.hpp>
#include <limits>

#include "clampai/kernel/number.hpp"

using clampai::kernel::Decimal;

TEST_CASE("Decimal: parses exactly, keeping the scale", "[kernel][number]") {
  REQUIRE(Decimal::parse("12.50")->units == 1250);
  REQUIRE(Decimal::parse("12.50")->scale == 2);
  REQUIRE(Decimal::parse("-0.001")->units == -1);
  REQUIRE(Decimal::parse("1.5e3")->units == 1500);
  REQUIRE(Decimal::parse("1.5e3")->scale == 0);
  REQUIRE(Decimal::parse("25e-2")->units == 25);
  REQUIRE(Decimal::parse("25e-2")->scale == 2);
  REQUIRE(*Decimal::parse("0.1") == Decimal{1, 1});
}

TEST_CASE("Decimal: rejects what is not an exact 64-bit fixed-point number", "[kernel][number]") {
  std::string err;
  for (const char* bad : {"", "-", "1.", ".5", "NaN", "Infinity", "1e", "0x10", "1.2.3", " 1"}) {
    INFO(bad);
    REQUIRE_FALSE(Decimal::parse(bad, &err).has_value());
  }
  REQUIRE_FALSE(Decimal::parse("99999999999999999999", &err));
  REQUIRE_THAT(err, Catch::Matchers::Contains("fit"));
  REQUIRE_FALSE(Decimal::parse("0.0000000000000000001", &err));
  REQUIRE_THAT(err, Catch::Matchers::Contains("18 digits"));
  REQUIRE_FALSE(Decimal::parse("1e400", &err));
}

TEST_CASE("Decimal: arithmetic is exact and overflow is reported", "[kernel][number]") {
  const Decimal a{1050, 2};  // 10.50
  const Decimal b{3, 0};
  REQUIRE(*clampai::kernel::checked_add(a, b) == Decimal{1350, 2});
  REQUIRE(*clampai::kernel::checked_sub(b, a) == Decimal{-750, 2});
  REQUIRE(*clampai::kernel::checked_mul(a, b) == Decimal{3150, 2});
  const Decimal max{std::numeric_limits<std::int64_t>::max(), 0};
  REQUIRE_FALSE(clampai::kernel::checked_add(max, Decimal{1, 0}).has_value());
  REQUIRE_FALSE(clampai::kernel::checked_mul(max, Decimal{2, 0}).has_value());
  REQUIRE_FALSE(clampai::kernel::checked_neg(Decimal{std::numeric_limits<std::int64_t>::min(), 0})
                    .has_value());
  // 0.1 + 0.2 == 0.3 exactly, unlike binary floating point.
  REQUIRE(*clampai::kernel::checked_add(Decimal{1, 1}, Decimal{2, 1}) == Decimal{3, 1});
}

TEST_CASE("Decimal: compares by value across scales and prints canonically", "[kernel][number]") {
  REQUIRE(Decimal{10, 1} == Decimal{1, 0});
  REQUIRE(Decimal{-5, 1} < Decimal{0, 0});
  REQUIRE(Decimal{5, 3}.to_string() == "0.005");
  REQUIRE(Decimal{-1250, 2}.to_string() == "-12.50");
  REQUIRE(Decimal{std::numeric_limits<std::int64_t>::min(), 0}.to_string() ==
          "-9223372036854775808");
  REQUIRE(Decimal{125, 2}.rescaled(1) == std::nullopt);
  REQUIRE(Decimal{120, 2}.rescaled(1)->units == 12);
  REQUIRE(Decimal{1, 0}.rescaled(3)->units == 1000);
}
