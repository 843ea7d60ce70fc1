// White-box: the exact projection behind `repair --norm l2` and its KKT check.
#include <catch2/catch.hpp>
#include <random>

#include "../../../verifier/src/qp.hpp"

using clampai::verifier::detail::kkt_holds;
using clampai::verifier::detail::LinearConstraint;
using clampai::verifier::detail::project;
using clampai::verifier::detail::Rational;
using clampai::verifier::detail::to_text;

namespace {

LinearConstraint le(std::vector<Rational> a, Rational b) { return {std::move(a), b, false}; }

}  // namespace

TEST_CASE("QP: projections onto a half-plane, a corner and a line are exact", "[verifier][qp]") {
  const std::vector<Rational> w{1, 1};
  {  // x + y <= 1 from (2, 2): (0.5, 0.5), multiplier 1.5
    const std::vector<LinearConstraint> cs{le({1, 1}, 1)};
    const auto p = project({2, 2}, w, cs);
    REQUIRE(p);
    CHECK(p->x == std::vector<Rational>{Rational(1, 2), Rational(1, 2)});
    CHECK(p->objective == Rational(9, 2));
    CHECK(kkt_holds({2, 2}, w, cs, *p));
  }
  {  // x <= 0, y <= 0 from (3, -1): only the first is active
    const std::vector<LinearConstraint> cs{le({1, 0}, 0), le({0, 1}, 0)};
    const auto p = project({3, -1}, w, cs);
    REQUIRE(p);
    CHECK(p->x == std::vector<Rational>{0, -1});
    CHECK(p->active == std::vector<std::size_t>{0});
  }
  {  // equality x - y == 1 with weights (1, 3) from (0, 0): x = 3/4, y = -1/4
    const std::vector<LinearConstraint> cs{{{1, -1}, 1, true}};
    const auto p = project({0, 0}, {1, 3}, cs);
    REQUIRE(p);
    CHECK(p->x == std::vector<Rational>{Rational(3, 4), Rational(-1, 4)});
  }
}

TEST_CASE("QP: a perturbed certificate fails the KKT check", "[verifier][qp]") {
  const std::vector<Rational> w{1, 1};
  const std::vector<LinearConstraint> cs{le({1, 1}, 1), le({-1, 0}, 0)};
  const auto p = project({2, 2}, w, cs);
  REQUIRE(p);
  REQUIRE(kkt_holds({2, 2}, w, cs, *p));
  auto moved = *p;
  moved.x[0] += Rational(1, 1000);  // not stationary (and infeasible)
  CHECK_FALSE(kkt_holds({2, 2}, w, cs, moved));
  auto negative = *p;
  negative.multipliers[0] = -negative.multipliers[0];  // dual infeasible
  CHECK_FALSE(kkt_holds({2, 2}, w, cs, negative));
  auto slack = *p;
  slack.active.push_back(1);  // x >= 0 is not tight at (0.5, 0.5)
  slack.multipliers.push_back(0);
  CHECK_FALSE(kkt_holds({2, 2}, w, cs, slack));
}

TEST_CASE("QP: empty and degenerate polyhedra", "[verifier][qp]") {
  const std::vector<Rational> w{1, 1};
  // x <= -1 and x >= 1: empty.
  CHECK_FALSE(project({0, 0}, w, {le({1, 0}, -1), le({-1, 0}, -1)}));
  // The same constraint three times, and a redundant one: still the exact answer.
  const std::vector<LinearConstraint> cs{
      le({1, 1}, 1), le({1, 1}, 1), le({2, 2}, 2), le({1, 0}, 5)};
  const auto p = project({2, 2}, w, cs);
  REQUIRE(p);
  CHECK(p->x == std::vector<Rational>{Rational(1, 2), Rational(1, 2)});
  CHECK(kkt_holds({2, 2}, w, cs, *p));
}

TEST_CASE("QP: random problems: the answer is feasible, certified and no grid point beats it",
          "[verifier][qp]") {
  std::mt19937_64 rng(77);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  int solved = 0;
  for (int t = 0; t < 300; ++t) {
    const std::size_t n = static_cast<std::size_t>(pick(1, 3));
    std::vector<Rational> p, w;
    for (std::size_t i = 0; i < n; ++i) {
      p.emplace_back(pick(-8, 8));
      w.emplace_back(pick(1, 3));
    }
    std::vector<LinearConstraint> cs;
    const int m = pick(1, 6);
    for (int j = 0; j < m; ++j) {
      std::vector<Rational> a;
      for (std::size_t i = 0; i < n; ++i) a.emplace_back(pick(-3, 3));
      cs.push_back(le(a, pick(-4, 6)));
    }
    const auto r = project(p, w, cs);
    // Brute force (in doubles) over half-unit points in [-10, 10]^n: none is feasible and
    // closer than the exact answer.
    std::optional<double> best;
    std::vector<std::vector<double>> ad;
    std::vector<double> bd, pd, wd;
    for (const auto& c : cs) {
      ad.emplace_back();
      for (const auto& v : c.a) ad.back().push_back(v.convert_to<double>());
      bd.push_back(c.b.convert_to<double>());
    }
    for (std::size_t i = 0; i < n; ++i) {
      pd.push_back(p[i].convert_to<double>());
      wd.push_back(w[i].convert_to<double>());
    }
    std::vector<int> x(n, -20);
    while (true) {
      bool ok = true;
      for (std::size_t j = 0; j < cs.size() && ok; ++j) {
        double s = 0;
        for (std::size_t i = 0; i < n; ++i) s += ad[j][i] * x[i] / 2.0;
        ok = s <= bd[j] + 1e-12;
      }
      if (ok) {
        double d = 0;
        for (std::size_t i = 0; i < n; ++i) {
          const double dx = x[i] / 2.0 - pd[i];
          d += wd[i] * dx * dx;
        }
        if (!best || d < *best) best = d;
      }
      std::size_t k = 0;
      while (k < n && ++x[k] > 20) x[k++] = -20;
      if (k == n) break;
    }
    INFO("problem " << t);
    if (best) {
      REQUIRE(r);
      REQUIRE(kkt_holds(p, w, cs, *r));
      REQUIRE(r->objective.convert_to<double>() <= *best + 1e-9);
      ++solved;
    }
  }
  CHECK(solved > 150);
}

TEST_CASE("QP: rationals print as exact decimals or fractions", "[verifier][qp]") {
  CHECK(to_text(Rational(1, 8)) == "0.125");
  CHECK(to_text(Rational(-3, 4)) == "-0.75");
  CHECK(to_text(Rational(12)) == "12");
  CHECK(to_text(Rational(1, 3)) == "1/3");
  CHECK(to_text(Rational(-1, 20)) == "-0.05");
}

TEST_CASE("Rational: the 128-bit form and the big form agree with Boost's rationals",
          "[verifier][qp]") {
  using Big = boost::multiprecision::cpp_rational;
  std::mt19937_64 rng(5);
  auto value = [&]() {
    // Mostly small decimals, sometimes values near 2^62, so products overflow 128 bits.
    const bool huge = rng() % 4 == 0;
    const long long n = huge ? static_cast<long long>(rng() >> 1) - (1LL << 62)
                             : static_cast<long long>(rng() % 20001) - 10000;
    const long long d = huge ? static_cast<long long>((rng() >> 2) | 1) : 1 + rng() % 1000;
    return std::pair{Rational(n, d), Big(n) / Big(d)};
  };
  for (int t = 0; t < 5000; ++t) {
    auto [a, ab] = value();
    auto [b, bb] = value();
    // Chains of operations push values through both forms.
    Rational c = a * b * b - a / (b.is_zero() ? Rational(1) : b) + a;
    Big cb = ab * bb * bb - ab / (bb == 0 ? Big(1) : bb) + ab;
    REQUIRE(c.big() == cb);
    REQUIRE(((a < b) == (ab < bb)));
    REQUIRE(((a == b) == (ab == bb)));
    REQUIRE((-c).big() == -cb);
    REQUIRE(c.numerator() == boost::multiprecision::numerator(cb));
    REQUIRE(c.denominator() == boost::multiprecision::denominator(cb));
  }
  CHECK(Rational(6, -4) == Rational(-3, 2));
  CHECK(Rational(0, 7).is_zero());
  CHECK(to_text(Rational(Rational::Integer("123456789012345678901234567890123456789")) /
                Rational(1000)) == "123456789012345678901234567890123456.789");
}
