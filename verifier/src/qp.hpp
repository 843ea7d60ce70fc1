// An exact solver for the small quadratic programs of `repair`: the weighted Euclidean projection
// of a point onto a polyhedron, in rational arithmetic, with its KKT certificate.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "rational.hpp"

namespace clampai::verifier::detail {

/// One linear constraint: a·x <= b (`equality`: a·x == b). A strict inequality of the caller
/// is passed as <= (the projection onto the closure).
struct LinearConstraint {
  std::vector<Rational> a;
  Rational b;
  bool equality = false;
};

/// The projection and why it is optimal: x = p - W^-1 Aᵀ μ over the active constraints, μ >= 0
/// on the active inequalities, every constraint satisfied (the KKT conditions, which for this
/// strictly convex problem are sufficient).
struct Projection {
  std::vector<Rational> x;
  std::vector<std::size_t> active;    // indices into the constraints
  std::vector<Rational> multipliers;  // μ for each active constraint (the KKT λ is 2μ)
  Rational objective;                 // sum of w·(x - p)^2
};

/// The minimiser of sum w_i (x_i - p_i)^2 subject to `constraints`, or nullopt if none was found:
/// the polyhedron is empty, or (rarely, for degenerate systems) the search gave up after
/// `max_active_sets` candidate active sets. Every returned answer has passed `kkt_holds`.
/// Requires every w_i > 0 and every constraint to have p.size() coefficients.
std::optional<Projection> project(const std::vector<Rational>& p,
                                  const std::vector<Rational>& w,
                                  const std::vector<LinearConstraint>& constraints,
                                  std::size_t max_active_sets = 50000);

/// Checks the certificate exactly: stationarity x = p - W^-1 Aᵀ μ, μ >= 0 on inequalities,
/// complementary slackness (active constraints are tight) and primal feasibility.
bool kkt_holds(const std::vector<Rational>& p,
               const std::vector<Rational>& w,
               const std::vector<LinearConstraint>& constraints,
               const Projection& projection);

/// `r` as an exact decimal (`0.125`) when it has one, else as a fraction (`1/3`).
std::string to_text(const Rational& r);

}  // namespace clampai::verifier::detail
