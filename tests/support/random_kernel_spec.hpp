// Seeded random specs that reach every check of the kernel's decision, for differential tests
// of the kernel against the verifier: ints, decimals of several scales, enumerations that are
// subsets and permutations of each other, a bool, bounded lists (of ints, of decimal(2) set from
// the int list and from literals of other scales, of enumeration values); actions with parameters
// (int and decimal), cost expressions, `requires`, dependencies, `if` over branches of different
// scales, min/max, near-overflow literals; invariants with `old()`, blocking and monitoring.
// Also random situations (state, budget, steps, completions) and proposals over them.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "clampai/kernel.hpp"

namespace clampai::test {

class KernelSpecGenerator {
 public:
  explicit KernelSpecGenerator(std::mt19937_64& rng) : rng_(rng) {}

  std::shared_ptr<const kernel::TaskModel> model() {
    using namespace kernel;
    TaskDecl t;
    t.name = "random";
    auto var = [&](std::string name, Type type, Value init) {
      t.variables.push_back(VariableDecl{std::move(name), std::move(type), std::move(init)});
      return &t.variables.back();
    };
    for (int i = 0; i < 3; ++i) {
      VariableDecl* v = var("i" + std::to_string(i), Type::integer(), Value::integer(pick(-5, 5)));
      if (pick(0, 1) == 1) {
        v->min = Decimal::integer(-pick(5, 20));
        v->max = Decimal::integer(pick(5, 20));
      }
    }
    VariableDecl* d1 = var("d1", Type::decimal(1), Value::number(Decimal{pick(-50, 50), 1}));
    if (pick(0, 1) == 1) {
      d1->min = Decimal{-100, 1};
      d1->max = Decimal{100, 1};
    }
    var("d2", Type::decimal(2), Value::number(Decimal{pick(-500, 500), 2}));
    var("w", Type::decimal(3), Value::number(Decimal{0, 3}));  // unbounded: overflows reach it
    var("color", Type::enumeration({"red", "green", "blue"}), Value::string("red"));
    var("shade", Type::enumeration({"green", "red"}), Value::string("green"));       // a subset
    var("hue", Type::enumeration({"blue", "green", "red"}), Value::string("blue"));  // permuted
    var("flag", Type::boolean(), Value::boolean(false));
    VariableDecl* l = var("l", Type::list(Type::integer()), Value::list({}));
    l->max_length = pick(1, 3);
    VariableDecl* ld = var("ld", Type::list(Type::decimal(2)), Value::list({}));
    ld->max_length = pick(1, 3);
    var("le", Type::list(Type::enumeration({"red", "green", "blue"})), Value::list({}));

    const int n_actions = pick(2, 5);
    for (int a = 0; a < n_actions; ++a) {
      ActionDecl act;
      act.id = "a" + std::to_string(a);
      act.cost = std::to_string(pick(0, 3)) + "." + std::to_string(pick(0, 9));
      params_.clear();
      const int kind = pick(0, 3);
      if (kind == 1 || kind == 3) {
        act.parameters.push_back(ParameterDecl{
            "k", Type::integer(), Decimal::integer(-pick(1, 4)), Decimal::integer(pick(1, 4))});
        params_.push_back("k");
      }
      if (kind >= 2) {
        ParameterDecl p{"p", Type::decimal(1), Decimal{-20, 1}, Decimal{20, 1}};
        if (pick(0, 3) == 0) p.max = Decimal{std::numeric_limits<std::int64_t>::max(), 1};
        act.parameters.push_back(p);
        params_.push_back("p");
      }
      if (!params_.empty() && pick(0, 2) == 0) {
        const std::string& k = params_[static_cast<std::size_t>(pick(0, int(params_.size()) - 1))];
        act.cost = pick(0, 1) ? "1 + abs(" + k + ")" : k + " * 2";
      }
      if (pick(0, 1) == 1) act.guard = boolean(2);
      const int n_effects = pick(1, 3);
      for (int e = 0; e < n_effects; ++e) {
        EffectDecl eff = effect();
        const bool again = std::any_of(act.effects.begin(), act.effects.end(), [&](const auto& x) {
          return x.variable == eff.variable;
        });  // one effect per variable and action (the loader's rule)
        if (!again) act.effects.push_back(std::move(eff));
      }
      t.actions.push_back(act);
    }
    ActionDecl hover{"hover", "", "emergency action", "0"};
    if (pick(0, 1) == 1) hover.effects.push_back(EffectDecl{"d1", EffectMode::decrement, "0.5"});
    if (pick(0, 2) == 0) hover.guard = "flag";
    t.actions.push_back(hover);
    t.emergency_actions = {"hover"};
    if (pick(0, 1) == 1) t.dependencies.push_back({"a1", {"a0"}});
    if (n_actions > 2 && pick(0, 1) == 1) t.dependencies.push_back({"a2", {"a0", "a1"}});

    params_.clear();
    const int n_invariants = pick(1, 4);
    for (int i = 0; i < n_invariants; ++i) {
      InvariantDecl inv;
      inv.name = "inv" + std::to_string(i);
      inv.expression = pick(0, 3) == 0 ? "d1 >= old(d1) - 5.0 || " + boolean(1) : boolean(2);
      inv.enforcement = pick(0, 3) == 0 ? Enforcement::monitoring : Enforcement::blocking;
      t.invariants.push_back(inv);
    }
    t.budget = BudgetDecl{Decimal{pick(20, 300), 1}, Decimal{pick(1, 9), 1}, 3, std::nullopt};
    return build_model(t);
  }

  /// A random situation of `m`: every variable a value of its type (within its bounds mostly,
  /// near the int64 edge sometimes), some budget spent, some steps taken, some completions.
  kernel::Situation situation(const kernel::TaskModel& m) {
    using namespace kernel;
    std::vector<std::pair<VarId, Value>> values;
    for (VarId id = 0; id < m.variables.size(); ++id) {
      const Variable& v = m.variables[id];
      switch (v.type.kind()) {
        case Type::Kind::integer:
        case Type::Kind::decimal:
          values.emplace_back(id, Value::number(Decimal{units(), std::uint8_t(v.type.scale())}));
          break;
        case Type::Kind::enumeration: {
          const auto& vs = v.type.enum_values();
          values.emplace_back(id, Value::string(vs[std::size_t(pick(0, int(vs.size()) - 1))]));
          break;
        }
        case Type::Kind::boolean:
          values.emplace_back(id, Value::boolean(pick(0, 1) == 1));
          break;
        case Type::Kind::list: {
          const Type& el = *v.type.element();
          Value::List items;
          for (int n = pick(0, 3); n > 0; --n) {
            if (el.kind() == Type::Kind::enumeration)
              items.push_back(Value::string(colour_value()));
            else if (el.scale() > 0 && pick(0, 5) == 0)
              items.push_back(Value::number(Decimal{units(), std::uint8_t(el.scale())}));
            else
              items.push_back(Value::number(
                  Decimal{pick(-2, 2) * (el.scale() > 0 ? 50 : 1), std::uint8_t(el.scale())}));
          }
          values.emplace_back(id, Value::list(std::move(items)));
          break;
        }
        case Type::Kind::string:
          values.emplace_back(id, Value::string("x"));
          break;
      }
    }
    Situation s{m.initial_state().with(values),
                BudgetController(m.budget.total),
                static_cast<std::uint64_t>(pick(0, int(m.budget.step_limit) + 1)),
                0,
                {}};
    const Amount spend = std::uniform_int_distribution<Amount>(0, m.budget.total)(rng_);
    if (pick(0, 2) > 0) s.budget.charge(pick(0, 1) ? spend : m.budget.total);
    for (std::size_t a = 0; a < m.actions.size(); ++a)
      s.completions.push_back(static_cast<std::uint64_t>(pick(0, 3) == 0 ? 0 : pick(1, 2)));
    return s;
  }

  /// A proposal of a random action with parameters at their scale (out of bounds sometimes).
  kernel::Proposal proposal(const kernel::TaskModel& m) {
    using namespace kernel;
    Proposal p{std::size_t(pick(0, int(m.actions.size()) - 1)), {}};
    for (const Parameter& decl : m.actions[p.action].parameters) {
      std::int64_t u = pick(-25, 25);
      if (pick(0, 9) == 0) u = units();
      p.params.push_back(Value::number(Decimal{u, std::uint8_t(decl.type.scale())}));
    }
    return p;
  }

  int pick(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }

 private:
  std::mt19937_64& rng_;
  std::vector<std::string> params_;  // the parameters the current action's expressions may use

  std::int64_t units() {
    constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
    switch (pick(0, 9)) {
      case 0:
        return kMax - pick(0, 3);
      case 1:
        return -kMax + pick(0, 3);
      case 2:
        return kMax / 10 + pick(-2, 2);
      default:
        return pick(-120, 120);
    }
  }

  // A numeric literal no finer than `cap` digits after the point.
  std::string literal(int cap) {
    switch (pick(0, 9)) {
      case 0:
        return "922337203685477580";  // fits at scale 0 and 1, not at 2
      case 1:
        return "922337203685477581";  // fits at scale 0, not at 1
      case 2:
        return "9223372036854775807";
      case 3:
        return cap >= 2 ? "92233720368547758.07" : "-9223372036854775807";
      case 4:
        return cap >= 1 ? "0.5" : "2";
      case 5:
        return cap >= 2 ? "1.25" : "-1";
      default:
        return std::to_string(pick(-4, 9));
    }
  }

  // A numeric expression no finer than `cap` digits after the point.
  std::string number(int depth, int cap = 3) {
    switch (depth <= 0 ? pick(0, 6) : pick(0, 13)) {
      case 0:
        return "i" + std::to_string(pick(0, 2));
      case 1:
        return cap >= 1 ? "d1" : "i0";
      case 2:
        return cap >= 2 ? "d2" : "i1";
      case 3:
        return cap >= 3 ? "w" : "i2";
      case 4: {
        std::vector<std::string> fit;
        for (const auto& p : params_)
          if (p == "k" || cap >= 1) fit.push_back(p);
        if (!fit.empty()) return fit[std::size_t(pick(0, int(fit.size()) - 1))];
        return literal(cap);
      }
      case 5:
      case 6:
        return literal(cap);
      case 7:
      case 8:
        return "(" + number(depth - 1, cap) + (pick(0, 1) ? " + " : " - ") +
               number(depth - 1, cap) + ")";
      case 9:
        return "(" + number(depth - 1, cap) + " * " + std::to_string(pick(-3, 3)) + ")";
      case 10:
        return "(if " + boolean(depth - 1) + " then " + number(depth - 1, cap) + " else " +
               number(depth - 1, cap) + ")";
      case 11:
        return std::string(pick(0, 1) ? "min(" : "max(") + number(depth - 1, cap) + ", " +
               number(depth - 1, cap) + ")";
      case 12:
        return "abs(" + number(depth - 1, cap) + ")";
      default:
        return "-(" + number(depth - 1, cap) + ")";
    }
  }

  std::string colour_value() {
    static const char* kValues[] = {"red", "green", "blue"};
    return kValues[pick(0, 2)];
  }

  std::string boolean(int depth) {
    switch (depth <= 0 ? pick(0, 3) : pick(0, 11)) {
      case 0:
        return "flag";
      case 1:
        return "color == '" + colour_value() + "'";
      case 2:
        return pick(0, 1) ? "color == shade" : "hue != color";
      case 3:
        return "(if flag then shade else hue) == '" + colour_value() + "'";
      case 4:
      case 5:
        return "(" + number(depth - 1) + (pick(0, 1) ? " <= " : " > ") + number(depth - 1) + ")";
      case 6:
        return "(" + number(depth - 1) + (pick(0, 1) ? " == " : " != ") + number(depth - 1) + ")";
      case 7:
        return "(" + boolean(depth - 1) + (pick(0, 1) ? " && " : " || ") + boolean(depth - 1) + ")";
      case 8:
        return "!(" + boolean(depth - 1) + ")";
      case 9:
        return "hue in {'red', '" + colour_value() + "'}";
      case 10:
        return "(" + boolean(depth - 1) + " -> " + boolean(depth - 1) + ")";
      default:
        switch (pick(0, 7)) {
          case 0:
            return "len(l) < 3";
          case 1:  // a number of any scale looked up in a list of ints, of decimals
            return std::string("contains(") + (pick(0, 1) ? "l" : "ld") + ", " + literal(3) + ")";
          case 2:
            return pick(0, 1) ? "ld == l" : "ld != [1, 0.5]";
          case 3:
            return pick(0, 1) ? "contains(le, shade)" : "le != ['" + colour_value() + "']";
          case 4:
            return "contains(if flag then l else ld, 1)";
          default:
            return "i1 >= i2";
        }
    }
  }

  // A list assignable to `ld` (list<decimal(2)>): the int list, literals of coarser scales, an
  // `if` of those; with numbers that overflow at scale 2.
  std::string decimal_list() {
    switch (pick(0, 5)) {
      case 0:
        return "l";
      case 1:
        return "[1, 0.5]";
      case 2:
        return "if flag then l else [" + literal(2) + "]";
      case 3:
        return "[" + literal(2) + "]";
      case 4:
        return "[]";
      default:
        return "ld";
    }
  }

  kernel::EffectDecl effect() {
    using kernel::EffectMode;
    switch (pick(0, 13)) {
      case 0:
      case 12:
        return {"i" + std::to_string(pick(0, 2)), EffectMode::set, "i0 + " + number(1, 0)};
      case 1:
        return {"i" + std::to_string(pick(0, 2)),
                EffectMode::increment,
                params_.empty() || params_[0] != "k" ? std::to_string(pick(-3, 3)) : "k"};
      case 2:
        return {"d1", EffectMode::decrement, pick(0, 1) ? "0.5" : "1"};
      case 3:
        return {"d2", EffectMode::set, number(2, 2)};
      case 4:
        return {"w", EffectMode::set, number(2)};
      case 5:
        return {"w", EffectMode::multiply, std::to_string(pick(-2, 3))};
      case 6:
        return {"color", EffectMode::set, pick(0, 1) ? "shade" : "hue"};
      case 7:
        return {"color",
                EffectMode::set,
                pick(0, 1) ? "if flag then shade else 'red'" : "if flag then hue else 'blue'"};
      case 8:
        return {"hue", EffectMode::set, pick(0, 1) ? "color" : "'" + colour_value() + "'"};
      case 9:
        return {"flag", EffectMode::set, boolean(1)};
      case 10:
        return {"l", EffectMode::append, std::to_string(pick(-2, 2))};
      case 11:
        switch (pick(0, 6)) {
          case 0:
            return {"ld", EffectMode::set, decimal_list()};
          case 1:
            return {"ld", EffectMode::append, literal(2)};
          case 2:
            return {"ld", EffectMode::remove, literal(2)};
          case 3:
            return {"le", EffectMode::set, pick(0, 1) ? "[shade, 'red']" : "[hue]"};
          case 4:
            return {"le", pick(0, 1) ? EffectMode::append : EffectMode::remove, "shade"};
          default:
            return {"l", EffectMode::remove, std::to_string(pick(-2, 2))};
        }
      default:
        return {"d1", EffectMode::increment, number(1, 1)};
    }
  }
};

}  // namespace clampai::test
