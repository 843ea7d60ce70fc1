// The exact projection: a dual active-set method (start at the unconstrained minimum p, add the
// most violated constraint, drop an active inequality whose multiplier turns negative), with
// an exhaustive search over active sets as the fallback for degenerate cases. Everything is
// rational: the answer is the optimum, not an approximation of it.
#include "qp.hpp"

#include <algorithm>
#include <set>

namespace clampai::verifier::detail {

namespace {

Rational dot(const std::vector<Rational>& a, const std::vector<Rational>& x) {
  Rational s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (!a[i].is_zero()) s += a[i] * x[i];
  }
  return s;
}

// Solves m·y = r in place by Gaussian elimination; nullopt if m is singular.
std::optional<std::vector<Rational>> solve(std::vector<std::vector<Rational>> m,
                                           std::vector<Rational> r) {
  const std::size_t n = r.size();
  for (std::size_t col = 0; col < n; ++col) {
    std::size_t pivot = col;
    while (pivot < n && m[pivot][col].is_zero()) ++pivot;
    if (pivot == n) return std::nullopt;
    std::swap(m[pivot], m[col]);
    std::swap(r[pivot], r[col]);
    for (std::size_t row = 0; row < n; ++row) {
      if (row == col || m[row][col].is_zero()) continue;
      const Rational f = m[row][col] / m[col][col];
      for (std::size_t k = col; k < n; ++k) m[row][k] -= f * m[col][k];
      r[row] -= f * r[col];
    }
  }
  for (std::size_t i = 0; i < n; ++i) r[i] /= m[i][i];
  return r;
}

// The minimiser with the constraints in `active` held as equalities (and no others).
std::optional<Projection> solve_active(const std::vector<Rational>& p,
                                       const std::vector<Rational>& w,
                                       const std::vector<LinearConstraint>& cs,
                                       const std::vector<std::size_t>& active) {
  const std::size_t k = active.size();
  std::vector<std::vector<Rational>> m(k, std::vector<Rational>(k));
  std::vector<Rational> r(k);
  for (std::size_t j = 0; j < k; ++j) {
    const auto& aj = cs[active[j]].a;
    for (std::size_t l = j; l < k; ++l) {
      const auto& al = cs[active[l]].a;
      Rational s = 0;
      for (std::size_t i = 0; i < p.size(); ++i) {
        if (!aj[i].is_zero() && !al[i].is_zero()) s += aj[i] * al[i] / w[i];
      }
      m[j][l] = s;
      m[l][j] = s;
    }
    r[j] = dot(aj, p) - cs[active[j]].b;
  }
  auto mu = solve(std::move(m), std::move(r));
  if (!mu) return std::nullopt;
  Projection out;
  out.x = p;
  for (std::size_t j = 0; j < k; ++j) {
    const auto& aj = cs[active[j]].a;
    for (std::size_t i = 0; i < p.size(); ++i) {
      if (!aj[i].is_zero()) out.x[i] -= (*mu)[j] * aj[i] / w[i];
    }
  }
  out.active = active;
  out.multipliers = std::move(*mu);
  out.objective = 0;
  for (std::size_t i = 0; i < p.size(); ++i) {
    const Rational d = out.x[i] - p[i];
    out.objective += w[i] * d * d;
  }
  return out;
}

}  // namespace

bool kkt_holds(const std::vector<Rational>& p,
               const std::vector<Rational>& w,
               const std::vector<LinearConstraint>& cs,
               const Projection& proj) {
  if (proj.x.size() != p.size() || proj.multipliers.size() != proj.active.size()) return false;
  std::vector<Rational> x = p;  // stationarity: x = p - W^-1 Aᵀ μ
  for (std::size_t j = 0; j < proj.active.size(); ++j) {
    const LinearConstraint& c = cs.at(proj.active[j]);
    if (!c.equality && proj.multipliers[j] < 0) return false;  // dual feasibility
    if (dot(c.a, proj.x) != c.b) return false;                 // complementary slackness
    for (std::size_t i = 0; i < p.size(); ++i) x[i] -= proj.multipliers[j] * c.a[i] / w[i];
  }
  if (x != proj.x) return false;
  for (const LinearConstraint& c : cs) {  // primal feasibility
    const Rational v = dot(c.a, proj.x);
    if (c.equality ? v != c.b : v > c.b) return false;
  }
  return true;
}

std::optional<Projection> project(const std::vector<Rational>& p,
                                  const std::vector<Rational>& w,
                                  const std::vector<LinearConstraint>& cs,
                                  std::size_t max_active_sets) {
  std::vector<std::size_t> equalities;
  std::vector<std::size_t> inequalities;
  for (std::size_t j = 0; j < cs.size(); ++j)
    (cs[j].equality ? equalities : inequalities).push_back(j);

  // The dual active-set walk.
  std::vector<std::size_t> active = equalities;
  std::set<std::vector<std::size_t>> seen;
  std::size_t tried = 0;
  while (tried++ < max_active_sets) {
    std::vector<std::size_t> key = active;
    std::sort(key.begin(), key.end());
    if (!seen.insert(key).second) break;  // a cycle: leave it to the exhaustive search
    auto sol = solve_active(p, w, cs, active);
    if (!sol) break;
    std::optional<std::size_t> drop;
    for (std::size_t j = 0; j < active.size(); ++j) {
      if (cs[active[j]].equality || sol->multipliers[j] >= 0) continue;
      if (!drop || sol->multipliers[j] < sol->multipliers[*drop]) drop = j;
    }
    if (drop) {
      active.erase(active.begin() + static_cast<std::ptrdiff_t>(*drop));
      continue;
    }
    std::optional<std::size_t> worst;
    Rational worst_by = 0;
    for (std::size_t j : inequalities) {
      const Rational by = dot(cs[j].a, sol->x) - cs[j].b;
      if (by > worst_by) {
        worst = j;
        worst_by = by;
      }
    }
    if (!worst) {
      if (kkt_holds(p, w, cs, *sol)) return sol;
      break;
    }
    active.push_back(*worst);
  }

  // Exhaustive: every set of at most n - |E| inequalities, smallest first. The KKT point of a
  // strictly convex problem is unique, so the first that certifies is the optimum.
  const std::size_t n = p.size();
  const std::size_t limit =
      std::min(inequalities.size(), n > equalities.size() ? n - equalities.size() : 0);
  for (std::size_t size = 0; size <= limit; ++size) {
    std::vector<bool> pick(inequalities.size(), false);
    std::fill(pick.begin(), pick.begin() + static_cast<std::ptrdiff_t>(size), true);
    do {
      if (tried++ >= max_active_sets) return std::nullopt;
      std::vector<std::size_t> set = equalities;
      for (std::size_t j = 0; j < inequalities.size(); ++j)
        if (pick[j]) set.push_back(inequalities[j]);
      auto sol = solve_active(p, w, cs, set);
      if (sol && kkt_holds(p, w, cs, *sol)) return sol;
    } while (std::prev_permutation(pick.begin(), pick.end()));
  }
  return std::nullopt;
}

std::string to_text(const Rational& r) {
  using boost::multiprecision::cpp_int;
  cpp_int num = boost::multiprecision::numerator(r);
  cpp_int den = boost::multiprecision::denominator(r);
  int twos = 0;
  int fives = 0;
  cpp_int d = den;
  while (d % 2 == 0) {
    d /= 2;
    ++twos;
  }
  while (d % 5 == 0) {
    d /= 5;
    ++fives;
  }
  if (d != 1) return num.str() + "/" + den.str();
  const int digits = std::max(twos, fives);
  cpp_int scaled = num * boost::multiprecision::pow(cpp_int(10), digits) / den;
  const bool negative = scaled < 0;
  if (negative) scaled = -scaled;
  std::string s = scaled.str();
  if (digits > 0) {
    if (s.size() <= static_cast<std::size_t>(digits))
      s.insert(0, static_cast<std::size_t>(digits) + 1 - s.size(), '0');
    s.insert(s.size() - static_cast<std::size_t>(digits), ".");
  }
  return negative ? "-" + s : s;
}

}  // namespace clampai::verifier::detail
