// Seeded random task specs and proposals for the property tests.
#include "random_spec.hpp"

namespace clampai::test {

using namespace kernel;

namespace {

int pick(std::mt19937_64& rng, int lo, int hi) {
  return std::uniform_int_distribution<int>(lo, hi)(rng);
}

std::string int_var(int i) { return "n" + std::to_string(i); }

}  // namespace

std::shared_ptr<const TaskModel> random_model(std::mt19937_64& rng) {
  for (;;) {
    TaskDecl t;
    const int n_ints = pick(rng, 2, 4);
    for (int i = 0; i < n_ints; ++i) {
      VariableDecl v{int_var(i), Type::integer(), Value::integer(pick(rng, -5, 5))};
      if (pick(rng, 0, 1) == 1) {
        v.min = Decimal::integer(-20);
        v.max = Decimal::integer(20);
      }
      t.variables.push_back(v);
    }
    t.variables.push_back(
        VariableDecl{"d", Type::decimal(2), Value::number(Decimal{pick(rng, -500, 500), 2})});
    VariableDecl list{"l", Type::list(Type::integer()), Value::list({})};
    list.max_length = pick(rng, 2, 6);
    t.variables.push_back(list);
    VariableDecl note{"note", Type::string(), Value::string("x")};
    note.optional = true;
    t.variables.push_back(note);

    const int n_actions = pick(rng, 2, 6);
    for (int a = 0; a < n_actions; ++a) {
      ActionDecl act;
      act.id = "a" + std::to_string(a);
      act.cost =
          std::to_string(pick(rng, 0, 8) * 5 / 10) + "." + std::to_string(pick(rng, 0, 1) * 5);
      act.reversible = pick(rng, 0, 5) != 0;
      const bool with_param = pick(rng, 0, 2) == 0;
      if (with_param) {
        ParameterDecl p{"k", Type::integer(), Decimal::integer(-3), Decimal::integer(3)};
        if (pick(rng, 0, 1) == 1) p.default_value = Decimal::integer(1);
        act.parameters.push_back(p);
        if (pick(rng, 0, 2) == 0) act.cost = "1 + abs(k)";
      }
      if (pick(rng, 0, 2) == 0)
        act.guard = int_var(pick(rng, 0, n_ints - 1)) + " < " + std::to_string(pick(rng, -3, 10));
      std::vector<std::string> used;
      const int n_effects = pick(rng, 1, 3);
      for (int e = 0; e < n_effects; ++e) {
        const int kind = pick(rng, 0, 6);
        const std::string operand =
            with_param && pick(rng, 0, 1) == 1 ? "k" : std::to_string(pick(rng, -4, 4));
        EffectDecl eff;
        switch (kind) {
          case 0:
            eff = {int_var(pick(rng, 0, n_ints - 1)),
                   EffectMode::set,
                   operand + " + " + int_var(pick(rng, 0, n_ints - 1))};
            break;
          case 1:
            eff = {int_var(pick(rng, 0, n_ints - 1)), EffectMode::increment, operand};
            break;
          case 2:
            eff = {"d",
                   EffectMode::decrement,
                   std::to_string(pick(rng, 0, 300)) + ".5" + std::to_string(pick(rng, 0, 9))};
            break;
          case 3:
            eff = {int_var(pick(rng, 0, n_ints - 1)),
                   EffectMode::multiply,
                   std::to_string(pick(rng, -2, 3))};
            break;
          case 4:
            eff = {"l", EffectMode::append, operand};
            break;
          case 5:
            eff = {"l", EffectMode::remove, operand};
            break;
          default:
            eff = pick(rng, 0, 1) ? EffectDecl{"note", EffectMode::del, ""}
                                  : EffectDecl{"note", EffectMode::set, "'y'"};
            break;
        }
        if (std::find(used.begin(), used.end(), eff.variable) != used.end()) continue;
        used.push_back(eff.variable);
        act.effects.push_back(eff);
      }
      t.actions.push_back(act);
    }
    ActionDecl hover{"hover", "", "emergency no-op", "0"};
    t.actions.push_back(hover);
    t.emergency_actions = {"hover"};
    if (n_actions > 2 && pick(rng, 0, 1) == 1) t.dependencies.push_back({"a1", {"a0"}});

    const int n_invariants = pick(rng, 1, 4);
    for (int i = 0; i < n_invariants; ++i) {
      InvariantDecl inv;
      inv.name = "i" + std::to_string(i);
      switch (pick(rng, 0, 4)) {
        case 0:
          inv.expression =
              int_var(pick(rng, 0, n_ints - 1)) + " <= " + std::to_string(pick(rng, 5, 15));
          break;
        case 1:
          inv.expression =
              int_var(0) + " + " + int_var(1) + " >= " + std::to_string(pick(rng, -15, -5));
          break;
        case 2:
          inv.expression = "d >= old(d) - 2.00";
          break;
        case 3:
          inv.expression = "len(l) <= 4 || !contains(l, 0)";
          break;
        default:
          inv.expression = "defined(note) || " + int_var(0) + " > -10";
          break;
      }
      inv.enforcement = pick(rng, 0, 4) == 0 ? Enforcement::monitoring : Enforcement::blocking;
      t.invariants.push_back(inv);
    }
    t.budget = BudgetDecl{Decimal{pick(rng, 20, 300), 1}, Decimal{5, 1}};
    auto model = build_model(t);
    if (satisfies_blocking(*model, model->initial_state())) return model;
  }
}

Proposal random_proposal(const TaskModel& model, std::mt19937_64& rng) {
  Proposal p;
  p.action = static_cast<std::size_t>(pick(rng, 0, static_cast<int>(model.actions.size()) - 1));
  for (std::size_t i = 0; i < model.actions[p.action].parameters.size(); ++i)
    p.params.push_back(Value::integer(pick(rng, -4, 4)));
  return p;
}

bool satisfies_blocking(const TaskModel& model, const State& state) {
  for (const auto& inv : model.invariants) {
    // Transition invariants relate two states; on a single state old(x) reads x itself.
    if (inv.enforcement == Enforcement::blocking && !holds_in(inv, state)) return false;
  }
  for (VarId i = 0; i < state.size(); ++i) {
    const Variable& v = model.variables[i];
    const Value& x = state.get(i);
    if (x.kind() == Value::Kind::number &&
        ((v.min && x.as_number() < *v.min) || (v.max && x.as_number() > *v.max)))
      return false;
    if (x.kind() == Value::Kind::list && v.max_length &&
        static_cast<std::int64_t>(x.as_list().size()) > *v.max_length)
      return false;
  }
  return true;
}

}  // namespace clampai::test
