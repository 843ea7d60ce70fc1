// The C++ kernel against the executable model extracted from the Coq proofs (coq/, issue 23).
//
// Runs seeded random operations on random small tasks through `clampai_model` (the extracted
// model, driven line by line over pipes) and through the C++ kernel (`build_model`,
// `SafetyKernel`, `BudgetController`), and requires the same decision (approval and every
// failing check: minimum cost, budget, step limit, each blocking invariant) and the same state
// (variables, gross, refunded, steps, emergency steps) after every operation.
//
// The model's integers are unbounded, the C++ amounts are int64. Where the C++ cannot represent
// what the model computes (an amount of the task, a variable after an effect, a term or partial
// sum of an invariant, gross spend after a charge), it must refuse with a clear error and change
// nothing: `build_model` throws SpecError naming the amount's path; `execute` rejects with an
// `overflow` reason or an invariant that could not be evaluated for an arithmetic overflow, or
// throws InvalidArgument naming the int64 range; the test checks that, then tells the model to
// forget the step (`drop`) so both continue from the same state.
//
// Usage: model_differential --model PATH [--ops N] [--seed S] [--expect-mismatch] [--kernel-only]
// With --expect-mismatch (the mutant tests) it succeeds iff some operation differs; with
// --kernel-only it runs no ledger-only sequences (only tasks through SafetyKernel).
#include <signal.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "clampai/kernel/budget.hpp"
#include "clampai/kernel/error.hpp"
#include "clampai/kernel/model.hpp"
#include "clampai/kernel/safety_kernel.hpp"
#include "model_process.hpp"

namespace {

using namespace clampai::kernel;
using clampai::InvalidArgument;
using clampai::SpecError;
using namespace clampai::formal;

// ---------------------------------------------------------------------------------------------
// Random tasks.

struct EffectSpec {
  std::size_t var = 0;
  bool assign = false;  // set; otherwise increment
  std::int64_t value = 0;
};

struct ActionSpec {
  i128 cost = 0;  // budget units
  bool emergency = false;
  bool reversible = true;
  std::vector<EffectSpec> effects{};
};

struct InvariantSpec {
  std::vector<std::pair<std::size_t, std::int64_t>> terms{};  // (variable, coefficient)
  std::int64_t bound = 0;
};

struct TaskSpec {
  int scale = 3;
  i128 total = 0;     // budget units
  i128 min_cost = 1;  // budget units
  std::optional<std::int64_t> max_steps{};
  std::vector<std::int64_t> init{};
  std::vector<ActionSpec> actions{};
  std::vector<InvariantSpec> invariants{};
  // Set when an amount does not fit the C++ int64 units: the JSON path build_model must name.
  std::string unrepresentable{};
  // When the total is unrepresentable: it is given as an integer Decimal of this many whole
  // units of currency (total = whole * 10^scale budget units).
  std::int64_t total_whole = 0;
  std::int64_t min_whole = 0;  // the same for the minimum action cost
};

class Generator {
 public:
  explicit Generator(std::uint64_t seed) : rng_(seed) {}

  std::uint64_t below(std::uint64_t n) {
    return std::uniform_int_distribution<std::uint64_t>(0, n - 1)(rng_);
  }
  std::int64_t between(std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng_);
  }
  bool chance(int percent) { return static_cast<int>(below(100)) < percent; }

  TaskSpec task() {
    TaskSpec t;
    static constexpr int scales[] = {0, 2, 3, 3, 6, 9};  // 9: the largest budget scale
    t.scale = scales[below(std::size(scales))];
    const bool huge = chance(25);  // amounts near the int64 limits
    if (huge) {
      t.total = int64_max - between(0, 3);
      static constexpr i128 divisors[] = {1, 2, 3, 4, 1000};
      t.min_cost = chance(30) ? 1 : t.total / divisors[below(std::size(divisors))];
    } else {
      t.total = between(0, 40);
      t.min_cost = between(1, 6);
    }
    if (chance(20)) t.max_steps = between(0, 6);
    const std::size_t vars = 1 + below(4);
    for (std::size_t i = 0; i < vars; ++i) t.init.push_back(value(huge && chance(50)));
    const std::size_t actions = 1 + below(5);
    for (std::size_t i = 0; i < actions; ++i) t.actions.push_back(action(t, huge));
    const std::size_t invariants = below(4);
    for (std::size_t i = 0; i < invariants; ++i) {
      if (auto inv = invariant(t)) t.invariants.push_back(*inv);
    }
    // Now and then an amount the C++ cannot hold (the model can): build_model must refuse it.
    if (chance(3)) {
      switch (below(3)) {
        case 0:
          if (t.scale > 0) {
            t.total_whole = int64_max / pow10_128(t.scale) + 1 + between(0, 5);
            t.total = static_cast<i128>(t.total_whole) * pow10_128(t.scale);
            t.unrepresentable = "budget.total";
          }
          break;
        case 1: {
          const std::size_t i = below(t.actions.size());
          if (!t.actions[i].emergency) {
            t.actions[i].cost = int64_max + 1 + between(0, 1000);
            t.unrepresentable = "actions[" + std::to_string(i) + "].cost";
          }
          break;
        }
        default:
          if (t.scale > 0) {
            t.min_whole = int64_max / pow10_128(t.scale) + 1 + between(0, 5);
            t.min_cost = static_cast<i128>(t.min_whole) * pow10_128(t.scale);
            t.unrepresentable = "budget.min_action_cost";
          }
          break;
      }
    }
    return t;
  }

  // A variable's value: small, or within a few units of an int64 limit.
  std::int64_t value(bool near_limit) {
    if (!near_limit) return between(-5, 5);
    return chance(50) ? std::numeric_limits<std::int64_t>::max() - between(0, 3)
                      : std::numeric_limits<std::int64_t>::min() + between(1, 3);
  }

  ActionSpec action(const TaskSpec& t, bool huge) {
    ActionSpec a;
    a.emergency = chance(12);
    a.reversible = chance(90);
    if (!a.emergency) {
      // Costs at, just below and just above the minimum, the total, fractions of the total.
      switch (below(8)) {
        case 0:
          a.cost = t.min_cost;
          break;
        case 1:
          a.cost = t.min_cost - 1;
          break;
        case 2:
          a.cost = t.min_cost + 1;
          break;
        case 3:
          a.cost = t.total;
          break;
        case 4:
          a.cost = t.total + (fits(t.total + 1) ? 1 : 0);
          break;
        case 5:
          a.cost = t.total / (1 + static_cast<i128>(below(4)));
          break;
        case 6:
          a.cost = t.total / 2 + 1;
          break;
        default:
          a.cost = huge ? static_cast<i128>(between(1, 1000)) : between(0, 12);
          break;
      }
      a.cost = std::clamp<i128>(a.cost, 0, int64_max);
    }
    std::vector<std::size_t> vars(t.init.size());
    for (std::size_t i = 0; i < vars.size(); ++i) vars[i] = i;
    std::shuffle(vars.begin(), vars.end(), rng_);
    const std::size_t effects = below(std::min<std::size_t>(3, vars.size()) + 1);
    for (std::size_t k = 0; k < effects; ++k) {
      EffectSpec e;
      e.var = vars[k];
      e.assign = chance(30);
      if (e.assign) {
        e.value = value(chance(huge ? 40 : 5));
      } else {
        e.value = chance(huge ? 30 : 3)
                      ? (chance(50) ? 1 : -1) *
                            between(1LL << 60, std::numeric_limits<std::int64_t>::max())
                      : between(-4, 4);
      }
      a.effects.push_back(e);
    }
    return a;
  }

  // An invariant that holds initially, tight (bound = its value) or loose; none when its
  // initial value cannot be computed in int64 (the C++ would refuse the task for that).
  std::optional<InvariantSpec> invariant(const TaskSpec& t) {
    InvariantSpec inv;
    const std::size_t terms = 1 + below(std::min<std::size_t>(3, t.init.size()));
    std::vector<std::size_t> vars(t.init.size());
    for (std::size_t i = 0; i < vars.size(); ++i) vars[i] = i;
    std::shuffle(vars.begin(), vars.end(), rng_);
    i128 sum = 0;
    for (std::size_t k = 0; k < terms; ++k) {
      std::int64_t coef = between(-3, 3);
      if (coef == 0) coef = 1;
      inv.terms.emplace_back(vars[k], coef);
      const i128 term = static_cast<i128>(coef) * t.init[vars[k]];
      sum += term;
      if (!fits(term) || !fits(sum)) return std::nullopt;
    }
    const i128 bound = sum + (chance(40) ? 0 : between(0, 10));
    if (!fits(bound) || bound == int64_min) return std::nullopt;
    inv.bound = static_cast<std::int64_t>(bound);
    return inv;
  }

  std::mt19937_64& rng() { return rng_; }

 private:
  std::mt19937_64 rng_;
};

// The task in the model program's language (coq/extract/driver.ml).
std::vector<std::string> model_lines(const TaskSpec& t) {
  std::vector<std::string> lines;
  std::string head = "task " + str(t.total) + ' ' + str(t.min_cost) + ' ' +
                     (t.max_steps ? std::to_string(*t.max_steps) : "-") + ' ' +
                     std::to_string(t.init.size());
  for (auto v : t.init) head += ' ' + std::to_string(v);
  lines.push_back(head);
  for (const ActionSpec& a : t.actions) {
    std::string line = "action " + str(a.cost) + (a.emergency ? " 1" : " 0") +
                       (a.reversible ? " 1 " : " 0 ") + std::to_string(a.effects.size());
    for (const EffectSpec& e : a.effects)
      line += ' ' + std::to_string(e.var) + (e.assign ? " s " : " i ") + std::to_string(e.value);
    lines.push_back(line);
  }
  for (const InvariantSpec& inv : t.invariants) {
    std::string line = "inv " + std::to_string(inv.bound) + ' ' + std::to_string(inv.terms.size());
    for (auto [var, coef] : inv.terms)
      line += ' ' + std::to_string(var) + ' ' + std::to_string(coef);
    lines.push_back(line);
  }
  return lines;
}

std::string literal(std::int64_t v) {
  return v < 0 ? "(" + std::to_string(v) + ")" : std::to_string(v);
}

// The same task through the C++ public API.
TaskDecl task_decl(const TaskSpec& t) {
  TaskDecl d;
  d.name = "differential";
  for (std::size_t i = 0; i < t.init.size(); ++i) {
    VariableDecl v;
    v.name = "x" + std::to_string(i);
    v.type = Type::integer();
    v.initial = Value::integer(t.init[i]);
    d.variables.push_back(v);
  }
  for (std::size_t i = 0; i < t.actions.size(); ++i) {
    const ActionSpec& a = t.actions[i];
    ActionDecl decl;
    decl.id = "a" + std::to_string(i);
    decl.cost = amount_text(a.cost, t.scale);
    decl.reversible = a.reversible;
    for (const EffectSpec& e : a.effects) {
      decl.effects.push_back(EffectDecl{"x" + std::to_string(e.var),
                                        e.assign ? EffectMode::set : EffectMode::increment,
                                        literal(e.value)});
    }
    if (a.emergency) d.emergency_actions.push_back(decl.id);
    d.actions.push_back(decl);
  }
  for (std::size_t i = 0; i < t.invariants.size(); ++i) {
    const InvariantSpec& inv = t.invariants[i];
    InvariantDecl decl;
    decl.name = "i" + std::to_string(i);
    std::string text;
    for (auto [var, coef] : inv.terms) {
      if (!text.empty()) text += " + ";
      text += literal(coef) + " * x" + std::to_string(var);
    }
    decl.expression = text + " <= " + literal(inv.bound);
    d.invariants.push_back(decl);
  }
  d.budget.scale = t.scale;
  // An unrepresentable total is a whole number of currency units whose budget units overflow.
  d.budget.total =
      t.unrepresentable == "budget.total"
          ? Decimal::integer(t.total_whole)
          : Decimal{static_cast<std::int64_t>(t.total), static_cast<std::uint8_t>(t.scale)};
  d.budget.min_action_cost =
      t.unrepresentable == "budget.min_action_cost"
          ? Decimal::integer(t.min_whole)
          : Decimal{static_cast<std::int64_t>(t.min_cost), static_cast<std::uint8_t>(t.scale)};
  d.budget.max_steps = t.max_steps;
  return d;
}

// ---------------------------------------------------------------------------------------------
// States on both sides.

struct Snapshot {
  std::vector<i128> vars{};
  i128 gross = 0;
  i128 refunded = 0;
  i128 steps = 0;
  i128 emergency_steps = 0;
  bool operator==(const Snapshot&) const = default;
};

std::string describe(const Snapshot& s) {
  std::string out = "vars [";
  for (std::size_t i = 0; i < s.vars.size(); ++i) out += (i ? " " : "") + str(s.vars[i]);
  return out + "] gross " + str(s.gross) + " refunded " + str(s.refunded) + " steps " +
         str(s.steps) + " emergency_steps " + str(s.emergency_steps);
}

// The state at `tokens[at]`: N X0 .. X(N-1) GROSS REFUNDED STEPS EMERGENCY_STEPS.
Snapshot model_state(const std::vector<std::string>& tokens, std::size_t at) {
  auto next = [&]() -> i128 {
    if (at >= tokens.size()) throw std::runtime_error("model: short answer");
    return parse_i128(tokens[at++]);
  };
  Snapshot s;
  const i128 n = next();
  for (i128 i = 0; i < n; ++i) s.vars.push_back(next());
  s.gross = next();
  s.refunded = next();
  s.steps = next();
  s.emergency_steps = next();
  if (at != tokens.size()) throw std::runtime_error("model: long answer");
  return s;
}

Snapshot kernel_state(const SafetyKernel& k) {
  Snapshot s;
  const State state = k.state();
  for (VarId i = 0; i < state.size(); ++i) {
    const Decimal& d = state.get(i).as_number();
    if (d.scale != 0)
      throw Mismatch("kernel: variable " + std::to_string(i) + " is not an integer");
    s.vars.push_back(d.units);
  }
  const BudgetController b = k.budget();
  s.gross = b.gross();
  s.refunded = b.refunded();
  s.steps = static_cast<i128>(k.steps());
  s.emergency_steps = static_cast<i128>(k.emergency_steps());
  return s;
}

// What the model decided: its flags and the violated invariants.
struct ModelDecision {
  bool approved = false;
  bool below_min_cost = false;
  bool budget_exceeded = false;
  bool step_limit = false;
  std::vector<std::size_t> violated{};
};

bool overflow_refusal(const Decision& d) {
  for (const Reason& r : d.reasons) {
    if (r.code == ReasonCode::overflow) return true;
    if (r.code == ReasonCode::invariant_violated && r.message.find("overflow") != std::string::npos)
      return true;
  }
  return false;
}

// Whether the C++ can compute everything the step needs in int64: the successor's variables,
// every term and partial sum of every invariant on it (left to right, as the kernel evaluates
// `c0 * x0 + c1 * x1 + ... <= b`), and gross spend after the charge.
bool representable(const TaskSpec& t, const ActionSpec& a, const Snapshot& s) {
  std::vector<i128> post = s.vars;
  for (const EffectSpec& e : a.effects) {
    post[e.var] = e.assign ? static_cast<i128>(e.value) : s.vars[e.var] + e.value;
    if (!fits(post[e.var])) return false;
  }
  for (const InvariantSpec& inv : t.invariants) {
    i128 sum = 0;
    for (auto [var, coef] : inv.terms) {
      const i128 term = static_cast<i128>(coef) * post[var];
      sum += term;
      if (!fits(term) || !fits(sum)) return false;
    }
  }
  return fits(s.gross + a.cost);
}

struct Counts {
  std::uint64_t ops = 0;
  std::uint64_t tasks = 0;
  std::uint64_t approved = 0;
  std::uint64_t rejected = 0;
  std::uint64_t rollbacks = 0;
  std::uint64_t refused_rollbacks = 0;
  std::uint64_t emergencies = 0;
  std::uint64_t at_edge = 0;  // approved charges of exactly the remaining budget
  std::uint64_t step_limit = 0;
  std::uint64_t invariant_rejections = 0;
  std::uint64_t load_refusals = 0;
  std::uint64_t overflow_refusals = 0;        // rejected: an effect or invariant overflows
  std::uint64_t gross_overflow_refusals = 0;  // thrown: gross spend would leave int64
  std::uint64_t ledger_ops = 0;
  std::uint64_t ledger_refusals = 0;
};

void expect(bool ok, const std::string& what) {
  if (!ok) throw Mismatch(what);
}

void expect_same(const Snapshot& model, const Snapshot& cpp, const std::string& where) {
  if (!(model == cpp))
    throw Mismatch(where + ": states differ\n  model: " + describe(model) +
                   "\n  C++:   " + describe(cpp));
}

// One task: `ops` operations (executions and rollbacks) through both.
void run_task(ModelProcess& model, Generator& g, const TaskSpec& t, std::uint64_t ops, Counts& n) {
  for (const std::string& line : model_lines(t)) model.tell(line);
  Snapshot synced = model_state(model.ask("start"), 1);
  std::shared_ptr<const TaskModel> built;
  try {
    built = build_model(task_decl(t));
  } catch (const SpecError& e) {
    // Only an amount the C++ cannot hold may be refused, and the error must name it.
    expect(!t.unrepresentable.empty(),
           std::string("build_model refused a representable task: ") + e.what());
    expect(e.path() == t.unrepresentable,
           "build_model refused `" + e.path() + "`, expected `" + t.unrepresentable +
               "`: " + e.what());
    ++n.load_refusals;
    return;
  }
  expect(t.unrepresentable.empty(),
         "build_model accepted an amount outside int64 at " + t.unrepresentable);
  SafetyKernel kernel(built);
  expect_same(synced, kernel_state(kernel), "initial state");
  ++n.tasks;
  std::vector<Receipt> receipts;
  for (std::uint64_t op = 0; op < ops; ++op) {
    const std::string where = "operation " + std::to_string(op);
    ++n.ops;
    if (g.chance(22)) {
      const std::vector<std::string> answer = model.ask("rollback");
      const bool model_ok = answer.at(1) == "1";
      const Snapshot after = model_state(answer, 2);
      bool cpp_ok = true;
      try {
        kernel.rollback(receipts.empty() ? Receipt{} : receipts.back());
      } catch (const InvalidArgument&) {
        cpp_ok = false;
      }
      if (cpp_ok) receipts.pop_back();
      expect(model_ok == cpp_ok,
             where + " (rollback): model " + (model_ok ? "rolled back" : "refused") + ", C++ " +
                 (cpp_ok ? "rolled back" : "refused"));
      expect_same(after, kernel_state(kernel), where + " (rollback)");
      ++(model_ok ? n.rollbacks : n.refused_rollbacks);
      synced = after;
      continue;
    }
    const std::size_t index = g.below(t.actions.size());
    const ActionSpec& a = t.actions[index];
    const std::string what = where + " (exec a" + std::to_string(index) + ")";
    const std::vector<std::string> answer = model.ask("exec " + std::to_string(index));
    ModelDecision md;
    md.approved = answer.at(1) == "1";
    md.below_min_cost = answer.at(2) == "1";
    md.budget_exceeded = answer.at(3) == "1";
    md.step_limit = answer.at(4) == "1";
    const std::size_t nv = static_cast<std::size_t>(parse_i128(answer.at(5)));
    for (std::size_t i = 0; i < nv; ++i)
      md.violated.push_back(static_cast<std::size_t>(parse_i128(answer.at(6 + i))));
    const Snapshot after = model_state(answer, 6 + nv);
    const bool fits_int64 = representable(t, a, synced);
    const i128 remaining = t.total - (synced.gross - synced.refunded);

    const std::uint64_t trace_before = kernel.trace_length();
    std::optional<Outcome> out;
    std::string thrown;
    try {
      out = kernel.execute(Proposal{index, {}});
    } catch (const InvalidArgument& e) {
      thrown = e.what();
    }
    const Snapshot cpp = kernel_state(kernel);
    if (!fits_int64) {
      // The C++ cannot compute this step. If the model approves it, the C++ must refuse with a
      // clear error; either way it changes nothing.
      expect_same(synced, cpp, what + ", not representable in int64: the C++ changed its state");
      expect(thrown.empty() || kernel.trace_length() == trace_before,
             what + ": the refused step was appended to the trace");
      if (md.approved) {
        expect(!thrown.empty()
                   ? thrown.find("int64") != std::string::npos
                   : (out && !out->decision.approved && overflow_refusal(out->decision)),
               what +
                   ": the model approves a step the C++ cannot represent, and the C++ did not "
                   "refuse it with an overflow error" +
                   (thrown.empty() ? "" : ": " + thrown));
        model_state(model.ask("drop"), 1);
        ++(thrown.empty() ? n.overflow_refusals : n.gross_overflow_refusals);
      } else {
        expect(thrown.empty() && out && !out->decision.approved,
               what + ": the model rejects, the C++ did not");
        expect_same(after, cpp, what);
        ++n.rejected;
      }
      continue;
    }
    expect(thrown.empty(), what + ": the C++ threw: " + thrown);
    const Decision& d = out->decision;
    std::vector<std::string> cpp_violated;
    bool cpp_below = false;
    bool cpp_budget = false;
    bool cpp_steps = false;
    for (const Reason& r : d.reasons) {
      switch (r.code) {
        case ReasonCode::below_min_cost:
          cpp_below = true;
          break;
        case ReasonCode::budget_exceeded:
          cpp_budget = true;
          break;
        case ReasonCode::step_limit:
          cpp_steps = true;
          break;
        case ReasonCode::invariant_violated:
          cpp_violated.push_back(r.subject);
          break;
        default:
          throw Mismatch(what + ": the C++ rejects for a reason outside the model: " +
                         std::string(to_string(r.code)) + ": " + r.message);
      }
    }
    std::vector<std::string> model_violated;
    for (auto i : md.violated) model_violated.push_back("i" + std::to_string(i));
    auto flag = [](bool b) { return std::string(b ? "1" : "0"); };
    expect(
        md.approved == d.approved && md.below_min_cost == cpp_below &&
            md.budget_exceeded == cpp_budget && md.step_limit == cpp_steps &&
            model_violated == cpp_violated,
        what +
            ": decisions differ (approved, below_min_cost, budget_exceeded, step_limit): model " +
            flag(md.approved) + flag(md.below_min_cost) + flag(md.budget_exceeded) +
            flag(md.step_limit) + " violated " + std::to_string(model_violated.size()) + ", C++ " +
            flag(d.approved) + flag(cpp_below) + flag(cpp_budget) + flag(cpp_steps) + " violated " +
            std::to_string(cpp_violated.size()) + "; cost " + str(a.cost) + ", remaining " +
            str(remaining));
    expect_same(after, cpp, what);
    if (d.approved) {
      receipts.push_back(*out->receipt);
      ++n.approved;
      if (a.emergency) ++n.emergencies;
      if (a.cost == remaining && a.cost > 0) ++n.at_edge;
    } else {
      ++n.rejected;
      if (cpp_steps) ++n.step_limit;
      if (!cpp_violated.empty()) ++n.invariant_rejections;
    }
    synced = after;
  }
  const TraceCheck chain = kernel.verify_trace();
  expect(chain.ok, "the kernel's trace does not verify: " + chain.message);
}

// A ledger on its own: charges and refunds at, just below and just above the edges, through
// the model and BudgetController.
void run_ledger(ModelProcess& model, Generator& g, std::uint64_t ops, Counts& n) {
  const i128 total = g.chance(40) ? int64_max - g.between(0, 2) : g.between(0, 30);
  BudgetController b(static_cast<std::int64_t>(total));
  model.ask("ledger " + str(total));
  for (std::uint64_t op = 0; op < ops; ++op) {
    ++n.ops;
    ++n.ledger_ops;
    const bool charge = g.chance(60);
    const i128 remaining = b.remaining();
    const i128 net = b.net();
    i128 amount = 0;
    switch (g.below(10)) {
      case 0:
        amount = charge ? remaining : net;
        break;
      case 1:
        amount = (charge ? remaining : net) - 1;
        break;
      case 2:
        amount = (charge ? remaining : net) + 1;
        break;
      case 3:
        amount = 0;
        break;
      case 4:
        amount = -1;
        break;
      case 5:
        amount = total;
        break;
      case 6:
        amount = int64_max;
        break;
      case 7:
        amount = int64_min;
        break;
      case 8:
        amount = (charge ? remaining : net) / 2;
        break;
      default:
        amount = g.between(0, 5);
        break;
    }
    if (!fits(amount)) amount = int64_max;
    const std::string op_text = std::string(charge ? "charge " : "refund ") + str(amount);
    const std::vector<std::string> answer = model.ask(op_text);
    const bool model_ok = answer.at(1) == "1";
    const i128 m_total = parse_i128(answer.at(2));
    const i128 m_gross = parse_i128(answer.at(3));
    const i128 m_refunded = parse_i128(answer.at(4));
    const std::int64_t before_gross = b.gross();
    const std::int64_t before_refunded = b.refunded();
    std::string thrown;
    try {
      if (charge) {
        b.charge(static_cast<std::int64_t>(amount));
      } else {
        b.refund(static_cast<std::int64_t>(amount));
      }
    } catch (const InvalidArgument& e) {
      thrown = e.what();
    }
    const std::string where = "ledger operation " + std::to_string(op) + " (" + op_text + ")";
    if (model_ok && !fits(m_gross)) {
      expect(thrown.find("int64") != std::string::npos,
             where + ": gross spend leaves int64 and the C++ did not refuse with a clear error" +
                 (thrown.empty() ? "" : ": " + thrown));
      expect(b.gross() == before_gross && b.refunded() == before_refunded,
             where + ": the refused charge changed the ledger");
      model.ask("drop");
      ++n.gross_overflow_refusals;
      continue;
    }
    expect(model_ok == thrown.empty(),
           where + ": model " + (model_ok ? "accepts" : "refuses") + ", C++ " +
               (thrown.empty() ? "accepts" : "refuses: " + thrown) + "; remaining " +
               str(remaining) + ", net " + str(net));
    if (!model_ok) ++n.ledger_refusals;
    expect(m_total == b.total() && m_gross == b.gross() && m_refunded == b.refunded(),
           where + ": ledgers differ: model " + str(m_total) + ' ' + str(m_gross) + ' ' +
               str(m_refunded) + ", C++ " + std::to_string(b.total()) + ' ' +
               std::to_string(b.gross()) + ' ' + std::to_string(b.refunded()));
  }
}

int usage(const char* why) {
  std::cerr << "model_differential: " << why
            << "\nusage: model_differential --model PATH [--ops N] [--seed S] [--expect-mismatch] "
               "[--kernel-only]\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string model_path;
  std::uint64_t ops = 120000;
  std::uint64_t seed = 20261125;
  bool expect_mismatch = false;
  bool kernel_only = false;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--expect-mismatch") {
      expect_mismatch = true;
    } else if (arg == "--kernel-only") {
      kernel_only = true;
    } else if (i + 1 < argc && (arg == "--model" || arg == "--ops" || arg == "--seed")) {
      const std::string value = argv[++i];
      if (arg == "--model") {
        model_path = value;
      } else {
        char* end = nullptr;
        const unsigned long long v = std::strtoull(value.c_str(), &end, 10);
        if (value.empty() || *end != '\0') return usage(("not a number: " + value).c_str());
        (arg == "--ops" ? ops : seed) = v;
      }
    } else {
      return usage(("unknown or incomplete argument: " + std::string(arg)).c_str());
    }
  }
  if (model_path.empty()) return usage("--model is required");
  signal(SIGPIPE, SIG_IGN);

  Counts n;
  Generator g(seed);
  std::uint64_t task_number = 0;
  try {
    ModelProcess model(model_path);
    while (n.ops < ops) {
      ++task_number;
      if (g.chance(25) && !kernel_only) {
        run_ledger(model, g, 40 + g.below(80), n);
      } else {
        const TaskSpec t = g.task();
        try {
          run_task(model, g, t, 20 + g.below(60), n);
        } catch (const Mismatch&) {
          std::cerr << "task (model program's input):\n";
          for (const std::string& line : model_lines(t)) std::cerr << "  " << line << '\n';
          std::cerr << "  scale " << t.scale << '\n';
          throw;
        }
      }
    }
  } catch (const Mismatch& e) {
    std::cout << "MISMATCH (seed " << seed << ", task " << task_number << "): " << e.what() << '\n';
    if (expect_mismatch) {
      std::cout << "model_differential: the comparison caught the difference, as expected\n";
      return 0;
    }
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "model_differential: " << e.what() << '\n';
    return 2;
  }
  std::cout << "model_differential: " << n.ops << " operations (seed " << seed << "), " << n.tasks
            << " tasks run, " << n.load_refusals
            << " tasks refused by build_model for an amount outside int64; decisions: "
            << n.approved << " approved (" << n.at_edge
            << " charging exactly the remaining budget, " << n.emergencies << " emergencies), "
            << n.rejected << " rejected (" << n.step_limit << " at the step limit, "
            << n.invariant_rejections << " by an invariant); " << n.rollbacks << " rollbacks, "
            << n.refused_rollbacks << " refused; " << n.ledger_ops << " ledger operations ("
            << n.ledger_refusals << " refused); " << n.overflow_refusals
            << " steps the C++ rejected for an int64 overflow, " << n.gross_overflow_refusals
            << " charges it refused as gross spend would leave int64\n";
  if (expect_mismatch) {
    std::cout << "model_differential: expected a mismatch, found none\n";
    return 1;
  }
  if (kernel_only) return 0;
  // Every kind of operation the test is meant to cover must have happened.
  if (n.at_edge == 0 || n.emergencies == 0 || n.step_limit == 0 || n.invariant_rejections == 0 ||
      n.rollbacks == 0 || n.refused_rollbacks == 0 || n.load_refusals == 0 ||
      n.overflow_refusals == 0 || n.gross_overflow_refusals == 0 || n.ledger_refusals == 0) {
    std::cout << "model_differential: some kind of operation never happened; change the seed or "
                 "the generator\n";
    return 1;
  }
  return 0;
}
