// The distance of a state to an expression's truth, compiled once into a tree of atoms.
#include "clampai/agent/distance.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "valuation_internal.hpp"

namespace clampai::agent {

using kernel::Expr;
using kernel::ExprOp;

struct Distance::Node {
  enum class Kind { compare, boolean, all, any, ite } kind = Kind::boolean;
  ExprOp op = ExprOp::le;      // compare: the comparison after pushing negations
  const Expr* expr = nullptr;  // compare: the comparison; boolean: the atom; ite: cond
  bool negate = false;         // boolean: distance 0 when the atom is false
  double scale = 1.0;          // compare: the divisor
  std::vector<std::unique_ptr<Node>> kids;

  [[nodiscard]] double raw(const kernel::EvalEnv& env) const;  // compare, before scaling
  [[nodiscard]] double eval(const kernel::EvalEnv& env) const;
};

namespace {

bool is_numeric_compare(const Expr& e) {
  switch (e.op) {
    case ExprOp::lt:
    case ExprOp::le:
    case ExprOp::gt:
    case ExprOp::ge:
    case ExprOp::eq:
    case ExprOp::ne:
      return e.args.size() == 2 && e.args[0]->type.is_numeric() && e.args[1]->type.is_numeric();
    default:
      return false;
  }
}

ExprOp negated(ExprOp op) {
  switch (op) {
    case ExprOp::lt:
      return ExprOp::ge;
    case ExprOp::le:
      return ExprOp::gt;
    case ExprOp::gt:
      return ExprOp::le;
    case ExprOp::ge:
      return ExprOp::lt;
    case ExprOp::eq:
      return ExprOp::ne;
    default:
      return ExprOp::eq;
  }
}

kernel::EvalEnv env_of(const kernel::State& s) {
  kernel::EvalEnv env;
  env.state = &s;
  env.old = &s;
  return env;
}

}  // namespace

double Distance::Node::raw(const kernel::EvalEnv& env) const {
  kernel::Decimal a, b;
  if (kernel::evaluate_number(*expr->args[0], env, a) != kernel::EvalError::none ||
      kernel::evaluate_number(*expr->args[1], env, b) != kernel::EvalError::none)
    return std::numeric_limits<double>::quiet_NaN();
  const double x = detail::to_double(a), y = detail::to_double(b);
  const double unit = 1.0 / detail::pow10d(std::max(a.scale, b.scale));
  switch (op) {
    case ExprOp::le:
      return std::max(0.0, x - y);
    case ExprOp::lt:
      return x < y ? 0.0 : x - y + unit;
    case ExprOp::ge:
      return std::max(0.0, y - x);
    case ExprOp::gt:
      return x > y ? 0.0 : y - x + unit;
    case ExprOp::eq:
      return std::abs(x - y);
    case ExprOp::ne:
      return x != y ? 0.0 : unit;
    default:
      return 0.0;
  }
}

double Distance::Node::eval(const kernel::EvalEnv& env) const {
  switch (kind) {
    case Kind::compare: {
      const double r = raw(env);
      return std::isnan(r) ? 1.0 : r / scale;
    }
    case Kind::boolean: {
      bool v = false;
      if (kernel::evaluate_bool(*expr, env, v) != kernel::EvalError::none) return 1.0;
      return v != negate ? 0.0 : 1.0;
    }
    case Kind::all: {
      double sum = 0.0;
      for (const auto& k : kids) sum += k->eval(env);
      return sum;
    }
    case Kind::any: {
      double m = std::numeric_limits<double>::infinity();
      for (const auto& k : kids) m = std::min(m, k->eval(env));
      return std::isinf(m) ? 0.0 : m;
    }
    case Kind::ite: {
      bool c = false;
      if (kernel::evaluate_bool(*expr, env, c) != kernel::EvalError::none)
        return std::max(kids[0]->eval(env), kids[1]->eval(env));
      return kids[c ? 0 : 1]->eval(env);
    }
  }
  return 1.0;
}

// Compiles `e` (negated when `neg`) into a node; comparisons are scaled in `ref`.
static std::unique_ptr<Distance::Node> compile(const Expr& e, bool neg, const kernel::State& ref);

static std::unique_ptr<Distance::Node> combine(Distance::Node::Kind kind,
                                               std::unique_ptr<Distance::Node> a,
                                               std::unique_ptr<Distance::Node> b) {
  auto n = std::make_unique<Distance::Node>();
  n->kind = kind;
  n->kids.push_back(std::move(a));
  n->kids.push_back(std::move(b));
  return n;
}

static std::unique_ptr<Distance::Node> compile(const Expr& e, bool neg, const kernel::State& ref) {
  using Kind = Distance::Node::Kind;
  switch (e.op) {
    case ExprOp::logical_and:
      return combine(neg ? Kind::any : Kind::all,
                     compile(*e.args[0], neg, ref),
                     compile(*e.args[1], neg, ref));
    case ExprOp::logical_or:
      return combine(neg ? Kind::all : Kind::any,
                     compile(*e.args[0], neg, ref),
                     compile(*e.args[1], neg, ref));
    case ExprOp::implies:  // a -> b is !a || b; its negation a && !b
      return combine(neg ? Kind::all : Kind::any,
                     compile(*e.args[0], !neg, ref),
                     compile(*e.args[1], neg, ref));
    case ExprOp::logical_not:
      return compile(*e.args[0], !neg, ref);
    case ExprOp::ite:
      if (e.type.kind() == kernel::Type::Kind::boolean) {
        auto n = combine(Kind::ite, compile(*e.args[1], neg, ref), compile(*e.args[2], neg, ref));
        n->expr = e.args[0].get();
        return n;
      }
      break;
    default:
      break;
  }
  auto n = std::make_unique<Distance::Node>();
  n->expr = &e;
  if (is_numeric_compare(e)) {
    n->kind = Kind::compare;
    n->op = neg ? negated(e.op) : e.op;
    const double r = n->raw(env_of(ref));
    if (!std::isnan(r) && r > 0) {
      n->scale = r;
    } else {
      const kernel::EvalEnv env = env_of(ref);
      kernel::Decimal a, b;
      double m = 1.0;
      if (kernel::evaluate_number(*e.args[0], env, a) == kernel::EvalError::none)
        m = std::max(m, std::abs(detail::to_double(a)));
      if (kernel::evaluate_number(*e.args[1], env, b) == kernel::EvalError::none)
        m = std::max(m, std::abs(detail::to_double(b)));
      n->scale = m;
    }
  } else {
    n->kind = Kind::boolean;
    n->negate = neg;
  }
  return n;
}

Distance::Distance(const kernel::TaskModel& /*model*/,
                   const kernel::ExprPtr& e,
                   bool negate,
                   const kernel::State& reference)
    : root_(e ? compile(*e, negate, reference) : nullptr) {}

Distance::~Distance() = default;
Distance::Distance(Distance&&) noexcept = default;
Distance& Distance::operator=(Distance&&) noexcept = default;

double Distance::operator()(const kernel::State& state) const {
  return root_ ? root_->eval(env_of(state)) : 0.0;
}

double Distance::operator()(const kernel::State& state, kernel::ChangeSpan changes) const {
  if (!root_) return 0.0;
  // `old(x)` reads the state before the changes: a transition's own pre-state.
  kernel::EvalEnv env = env_of(state);
  env.overlay = changes;
  return root_->eval(env);
}

}  // namespace clampai::agent
