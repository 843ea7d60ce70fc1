// The exact projection: the active set is guessed in floating point by least-distance
// programming (NNLS), then the projection is solved and KKT-checked in rational arithmetic; a
// dual active-set walk in exact arithmetic and an exhaustive search over active sets are the
// fallbacks. The answer is the optimum, not an approximation of it.
#include "qp.hpp"

#include <algorithm>
#include <cmath>
#include <set>
#include <type_traits>

namespace clampai::verifier::detail {

namespace {

// Exact for Rational; for double, `zero` decides what counts as nothing.
template <typename T>
bool is_zero(const T& v) {
  if constexpr (std::is_same_v<T, double>) {
    return std::abs(v) < 1e-12;
  } else {
    return v.is_zero();
  }
}

template <typename T>
T dot(const std::vector<T>& a, const std::vector<T>& x) {
  T s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (!is_zero(a[i])) s += a[i] * x[i];
  }
  return s;
}

// Solves m·y = r by Gaussian elimination (partial pivoting); nullopt if m is singular.
template <typename T>
std::optional<std::vector<T>> solve(std::vector<std::vector<T>> m, std::vector<T> r) {
  const std::size_t n = r.size();
  for (std::size_t col = 0; col < n; ++col) {
    std::size_t pivot = col;
    if constexpr (std::is_same_v<T, double>) {
      for (std::size_t row = col + 1; row < n; ++row)
        if (std::abs(m[row][col]) > std::abs(m[pivot][col])) pivot = row;
      if (std::abs(m[pivot][col]) < 1e-10) return std::nullopt;
    } else {
      while (pivot < n && m[pivot][col].is_zero()) ++pivot;
      if (pivot == n) return std::nullopt;
    }
    std::swap(m[pivot], m[col]);
    std::swap(r[pivot], r[col]);
    for (std::size_t row = 0; row < n; ++row) {
      if (row == col || is_zero(m[row][col])) continue;
      const T f = m[row][col] / m[col][col];
      for (std::size_t k = col; k < n; ++k) m[row][k] -= f * m[col][k];
      r[row] -= f * r[col];
    }
  }
  for (std::size_t i = 0; i < n; ++i) r[i] /= m[i][i];
  return r;
}

template <typename T>
struct Problem {
  std::vector<T> p, w;
  std::vector<std::vector<T>> a;
  std::vector<T> b;
  std::vector<bool> equality;
};

template <typename T>
struct Solution {
  std::vector<T> x, mu;
};

// The minimiser with the constraints in `active` held as equalities (and no others).
template <typename T>
std::optional<Solution<T>> solve_active(const Problem<T>& pr,
                                        const std::vector<std::size_t>& active) {
  const std::size_t k = active.size();
  const std::size_t n = pr.p.size();
  std::vector<std::vector<T>> m(k, std::vector<T>(k));
  std::vector<T> r(k);
  for (std::size_t j = 0; j < k; ++j) {
    const auto& aj = pr.a[active[j]];
    for (std::size_t l = j; l < k; ++l) {
      const auto& al = pr.a[active[l]];
      T s = 0;
      for (std::size_t i = 0; i < n; ++i) {
        if (!is_zero(aj[i]) && !is_zero(al[i])) s += aj[i] * al[i] / pr.w[i];
      }
      m[j][l] = s;
      m[l][j] = s;
    }
    r[j] = dot(aj, pr.p) - pr.b[active[j]];
  }
  auto mu = solve(std::move(m), std::move(r));
  if (!mu) return std::nullopt;
  Solution<T> out{pr.p, std::move(*mu)};
  for (std::size_t j = 0; j < k; ++j) {
    const auto& aj = pr.a[active[j]];
    for (std::size_t i = 0; i < n; ++i) {
      if (!is_zero(aj[i])) out.x[i] -= out.mu[j] * aj[i] / pr.w[i];
    }
  }
  return out;
}

// The dual active-set walk from the unconstrained minimum, in exact arithmetic (the fallback
// when the floating-point guess does not certify): the active set it ends with, or nullopt (a
// singular system or a cycle) after at most `budget` steps.
std::optional<std::vector<std::size_t>> walk(const Problem<Rational>& pr, std::size_t& budget) {
  std::vector<std::size_t> active;
  for (std::size_t j = 0; j < pr.b.size(); ++j)
    if (pr.equality[j]) active.push_back(j);
  std::set<std::vector<std::size_t>> seen;
  while (budget > 0) {
    --budget;
    std::vector<std::size_t> key = active;
    std::sort(key.begin(), key.end());
    if (!seen.insert(key).second) return std::nullopt;
    auto sol = solve_active(pr, active);
    if (!sol) return std::nullopt;
    std::optional<std::size_t> drop;
    for (std::size_t j = 0; j < active.size(); ++j) {
      if (pr.equality[active[j]] || sol->mu[j] >= 0) continue;
      if (!drop || sol->mu[j] < sol->mu[*drop]) drop = j;
    }
    if (drop) {
      active.erase(active.begin() + static_cast<std::ptrdiff_t>(*drop));
      continue;
    }
    std::optional<std::size_t> worst;
    Rational worst_by = 0;
    for (std::size_t j = 0; j < pr.b.size(); ++j) {
      if (pr.equality[j]) continue;
      const Rational by = dot(pr.a[j], sol->x) - pr.b[j];
      if (by > worst_by) {
        worst = j;
        worst_by = by;
      }
    }
    if (!worst) return active;
    active.push_back(*worst);
  }
  return std::nullopt;
}

Problem<Rational> exact(const std::vector<Rational>& p,
                        const std::vector<Rational>& w,
                        const std::vector<LinearConstraint>& cs) {
  Problem<Rational> pr{p, w, {}, {}, {}};
  for (const auto& c : cs) {
    pr.a.push_back(c.a);
    pr.b.push_back(c.b);
    pr.equality.push_back(c.equality);
  }
  return pr;
}

Problem<double> approximate(const Problem<Rational>& q) {
  Problem<double> pr;
  auto d = [](const Rational& r) { return r.convert_to<double>(); };
  for (std::size_t i = 0; i < q.p.size(); ++i) {
    pr.p.push_back(d(q.p[i]));
    pr.w.push_back(d(q.w[i]));
  }
  for (std::size_t j = 0; j < q.b.size(); ++j) {
    pr.a.emplace_back();
    for (const auto& x : q.a[j]) pr.a.back().push_back(d(x));
    pr.b.push_back(d(q.b[j]));
  }
  pr.equality = q.equality;
  return pr;
}

// The active set of the projection, found in floating point by least-distance programming
// (Lawson and Hanson, "Solving Least Squares Problems", ch. 23): with y = W^1/2 (x - p) the
// problem is min |y| subject to G y >= h, solved through the non-negative least squares
// problem min |E u - f|, u >= 0, with E = [Gᵀ; hᵀ] and f = (0, ..., 0, 1). The constraints
// with u > 0 are the active ones, listed with the largest u first. Finite; robust to
// degenerate (dependent) constraints, which the dual walk is not.
std::optional<std::vector<std::size_t>> ldp_active_set(const Problem<double>& pr) {
  const std::size_t n = pr.p.size();
  // Rows of G y >= h; an equality becomes two inequalities.
  std::vector<std::vector<double>> g;
  std::vector<double> h;
  std::vector<std::size_t> origin;
  for (std::size_t j = 0; j < pr.b.size(); ++j) {
    for (int sign : {1, -1}) {
      if (sign < 0 && !pr.equality[j]) break;
      std::vector<double> row(n);
      double ap = 0;
      for (std::size_t i = 0; i < n; ++i) {
        row[i] = -sign * pr.a[j][i] / std::sqrt(pr.w[i]);
        ap += pr.a[j][i] * pr.p[i];
      }
      g.push_back(std::move(row));
      h.push_back(sign * (ap - pr.b[j]));
      origin.push_back(j);
    }
  }
  const std::size_t m = g.size();
  // Column k of E is (g_k, h_k); f = e_n.
  auto column = [&](std::size_t k, std::size_t row) { return row < n ? g[k][row] : h[k]; };
  std::vector<double> u(m, 0.0);
  std::vector<bool> in_p(m, false);
  const double tol = 1e-10;
  auto residual = [&]() {  // f - E u
    std::vector<double> r(n + 1, 0.0);
    r[n] = 1.0;
    for (std::size_t k = 0; k < m; ++k)
      if (u[k] != 0.0)
        for (std::size_t row = 0; row <= n; ++row) r[row] -= column(k, row) * u[k];
    return r;
  };
  // The unconstrained least squares solution on the columns in P (normal equations).
  auto least_squares = [&]() -> std::optional<std::vector<double>> {
    std::vector<std::size_t> cols;
    for (std::size_t k = 0; k < m; ++k)
      if (in_p[k]) cols.push_back(k);
    std::vector<std::vector<double>> mm(cols.size(), std::vector<double>(cols.size()));
    std::vector<double> rhs(cols.size());
    for (std::size_t x = 0; x < cols.size(); ++x) {
      for (std::size_t y = 0; y < cols.size(); ++y) {
        double sum = 0;
        for (std::size_t row = 0; row <= n; ++row)
          sum += column(cols[x], row) * column(cols[y], row);
        mm[x][y] = sum;
      }
      rhs[x] = column(cols[x], n);  // Eᵀ f
    }
    auto z = solve(std::move(mm), std::move(rhs));
    if (!z) return std::nullopt;
    std::vector<double> full(m, 0.0);
    for (std::size_t x = 0; x < cols.size(); ++x) full[cols[x]] = (*z)[x];
    return full;
  };
  for (std::size_t outer = 0; outer < 3 * m + 10; ++outer) {
    const std::vector<double> r = residual();
    std::optional<std::size_t> t;
    double best = tol;
    for (std::size_t k = 0; k < m; ++k) {
      if (in_p[k]) continue;
      double wk = 0;  // (Eᵀ (f - E u))_k
      for (std::size_t row = 0; row <= n; ++row) wk += column(k, row) * r[row];
      if (wk > best) {
        best = wk;
        t = k;
      }
    }
    if (!t) break;
    in_p[*t] = true;
    for (std::size_t inner = 0; inner < 3 * m + 10; ++inner) {
      auto z = least_squares();
      if (!z) return std::nullopt;
      bool positive = true;
      for (std::size_t k = 0; k < m; ++k)
        if (in_p[k] && (*z)[k] <= tol) positive = false;
      if (positive) {
        u = std::move(*z);
        break;
      }
      double alpha = 1.0;
      for (std::size_t k = 0; k < m; ++k)
        if (in_p[k] && (*z)[k] <= tol) alpha = std::min(alpha, u[k] / (u[k] - (*z)[k]));
      for (std::size_t k = 0; k < m; ++k) {
        if (!in_p[k]) continue;
        u[k] += alpha * ((*z)[k] - u[k]);
        if (u[k] <= tol) {
          u[k] = 0.0;
          in_p[k] = false;
        }
      }
    }
  }
  const std::vector<double> r = residual();
  double norm = 0;
  for (double x : r) norm += x * x;
  if (norm < 1e-18) return std::nullopt;  // incompatible constraints: let the exact paths say
  std::vector<std::pair<double, std::size_t>> support;
  for (std::size_t k = 0; k < m; ++k)
    if (u[k] > tol) support.emplace_back(u[k], origin[k]);
  std::sort(support.begin(), support.end(), std::greater<>());
  std::vector<std::size_t> active;
  for (std::size_t j = 0; j < pr.b.size(); ++j)
    if (pr.equality[j]) active.push_back(j);
  for (const auto& [weight, j] : support)
    if (std::find(active.begin(), active.end(), j) == active.end()) active.push_back(j);
  return active;
}

// `active` cut down to linearly independent rows (in order), judged in floating point.
std::vector<std::size_t> independent(const Problem<double>& pr,
                                     const std::vector<std::size_t>& active) {
  std::vector<std::vector<double>> basis;  // reduced rows
  std::vector<std::size_t> out;
  for (std::size_t j : active) {
    std::vector<double> row = pr.a[j];
    for (std::size_t i = 0; i < row.size(); ++i) row[i] /= std::sqrt(pr.w[i]);
    for (const auto& bvec : basis) {
      double num = 0, den = 0;
      for (std::size_t i = 0; i < row.size(); ++i) {
        num += row[i] * bvec[i];
        den += bvec[i] * bvec[i];
      }
      for (std::size_t i = 0; i < row.size(); ++i) row[i] -= num / den * bvec[i];
    }
    double len = 0;
    for (double x : row) len += x * x;
    if (len < 1e-18) continue;
    basis.push_back(std::move(row));
    out.push_back(j);
  }
  return out;
}

// The exact solution for `active`, if it passes the KKT check.
std::optional<Projection> certified(const Problem<Rational>& pr,
                                    const std::vector<LinearConstraint>& cs,
                                    const std::vector<std::size_t>& active) {
  auto sol = solve_active(pr, active);
  if (!sol) return std::nullopt;
  Projection out{std::move(sol->x), active, std::move(sol->mu), 0};
  for (std::size_t i = 0; i < pr.p.size(); ++i) {
    const Rational d = out.x[i] - pr.p[i];
    out.objective += pr.w[i] * d * d;
  }
  if (!kkt_holds(pr.p, pr.w, cs, out)) return std::nullopt;
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
  const Problem<Rational> pr = exact(p, w, cs);
  std::size_t budget = max_active_sets;
  // 1. Least-distance programming in floating point finds the active set fast; exact
  // arithmetic certifies it.
  const Problem<double> approx = approximate(pr);
  if (auto guess = ldp_active_set(approx)) {
    if (auto sol = certified(pr, cs, independent(approx, *guess))) return sol;
  }
  // 2. The same walk in exact arithmetic.
  if (auto active = walk(pr, budget)) {
    if (auto sol = certified(pr, cs, *active)) return sol;
  }
  // 3. Exhaustive: every set of at most n - |E| inequalities, smallest first. The KKT point of
  // a strictly convex problem is unique, so the first that certifies is the optimum.
  std::vector<std::size_t> equalities;
  std::vector<std::size_t> inequalities;
  for (std::size_t j = 0; j < cs.size(); ++j)
    (cs[j].equality ? equalities : inequalities).push_back(j);
  const std::size_t n = p.size();
  const std::size_t limit =
      std::min(inequalities.size(), n > equalities.size() ? n - equalities.size() : 0);
  for (std::size_t size = 0; size <= limit; ++size) {
    std::vector<bool> pick(inequalities.size(), false);
    std::fill(pick.begin(), pick.begin() + static_cast<std::ptrdiff_t>(size), true);
    do {
      if (budget == 0) return std::nullopt;
      --budget;
      std::vector<std::size_t> set = equalities;
      for (std::size_t j = 0; j < inequalities.size(); ++j)
        if (pick[j]) set.push_back(inequalities[j]);
      if (auto sol = certified(pr, cs, set)) return sol;
    } while (std::prev_permutation(pick.begin(), pick.end()));
  }
  return std::nullopt;
}

std::string to_text(const Rational& r) {
  using boost::multiprecision::cpp_int;
  cpp_int num = r.numerator();
  cpp_int den = r.denominator();
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
