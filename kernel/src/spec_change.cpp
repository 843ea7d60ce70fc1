// A spec change (a reload behind proofs, docs/SERVE.md): what carries a kernel's situation over
// to another spec, and the continuation of a trace that spans several specs.
#include <optional>
#include <utility>

#include "clampai/kernel/error.hpp"
#include "clampai/kernel/safety_kernel.hpp"

namespace clampai::kernel {

std::variant<Carried, std::vector<std::string>> carry_situation(const TaskModel& from,
                                                                const Situation& situation,
                                                                const TaskModel& to) {
  std::vector<std::string> problems;
  std::vector<std::pair<std::string, Value>> added;
  std::vector<std::string> dropped;
  if (!from.budget.pool.empty() || !to.budget.pool.empty())
    problems.push_back("budget: a task in a budget pool cannot change its spec yet");
  if (from.budget.scale != to.budget.scale)
    problems.push_back("budget.scale: the spend is kept at scale " +
                       std::to_string(from.budget.scale) + " and the new spec's budget is at " +
                       std::to_string(to.budget.scale) + "; it cannot be carried over exactly");
  // The state, variable by variable.
  std::vector<Value> values;
  values.reserve(to.variables.size());
  for (const Variable& v : to.variables) {
    const auto old = from.schema->find(v.name);
    if (!old) {
      values.push_back(v.initial);
      added.emplace_back(v.name, v.initial);
      continue;
    }
    const Variable& was = from.variables[*old];
    const Value& value = situation.state.get(*old);
    values.push_back(value);
    if (!(was.type == v.type)) {
      problems.push_back("variables." + v.name + ": its type changes from " + was.type.to_string() +
                         " to " + v.type.to_string() + "; its value cannot be carried over");
      continue;
    }
    if (value.kind() == Value::Kind::undefined) {
      if (!v.optional)
        problems.push_back("variables." + v.name +
                           ": it is deleted, and the new spec does not declare it optional");
      continue;
    }
    if (value.kind() == Value::Kind::number &&
        ((v.min && value.as_number() < *v.min) || (v.max && value.as_number() > *v.max)))
      problems.push_back("variables." + v.name + ": its value is out of the new bounds");
    if (value.kind() == Value::Kind::list && v.max_length &&
        static_cast<std::int64_t>(value.as_list().size()) > *v.max_length)
      problems.push_back("variables." + v.name + ": its list is longer than the new max_length");
  }
  for (const Variable& v : from.variables)
    if (!to.schema->find(v.name)) dropped.push_back(v.name);
  // The spend and the counters.
  const BudgetController& b = situation.budget;
  std::optional<BudgetController> budget =
      BudgetController::carried(to.budget.total, b.gross(), b.refunded());
  if (!budget) {
    problems.push_back("budget.total: the net spend " + from.format_amount(b.net()) +
                       " exceeds the new budget " + to.format_amount(to.budget.total));
    budget.emplace(to.budget.total);
  }
  if (static_cast<std::int64_t>(situation.steps) > to.budget.step_limit)
    problems.push_back("budget: " + std::to_string(situation.steps) +
                       " steps were taken, more than the new step limit " +
                       std::to_string(to.budget.step_limit));
  if (!problems.empty()) return problems;
  State state(to.schema, std::move(values));
  for (std::size_t i = 0; i < to.invariants.size(); ++i) {
    const Invariant& inv = to.invariants[i];
    if (inv.enforcement == Enforcement::blocking && !holds_in(inv, state))
      problems.push_back("invariants[" + std::to_string(i) + "]: the current state violates " +
                         "blocking invariant `" + inv.name + "`");
  }
  if (!problems.empty()) return problems;
  std::vector<std::uint64_t> completions(to.actions.size(), 0);
  for (std::size_t i = 0; i < to.actions.size(); ++i)
    if (const auto a = from.find_action(to.actions[i].id); a && *a < situation.completions.size())
      completions[i] = situation.completions[*a];
  return Carried{Situation{std::move(state),
                           *budget,
                           situation.steps,
                           situation.emergency_steps,
                           std::move(completions)},
                 std::move(added),
                 std::move(dropped)};
}

std::unique_ptr<SafetyKernel> continue_trace(
    const SpecsByDigest& specs,
    KernelOptions options,
    const std::function<void(const TaskModel&, const TraceEntry&)>& visit) {
  if (!options.resume_from) throw InvalidArgument("continue_trace: no trace to continue");
  const auto read = std::move(options.resume_from);
  options.resume_from = nullptr;
  TraceEntry first;
  if (!read(first)) throw InvalidArgument("entry 0: the trace to continue is empty");
  const auto model_of = [&](const TraceEntry& e) {
    std::shared_ptr<const TaskModel> m = specs ? specs(e.spec) : nullptr;
    if (!m)
      throw InvalidArgument(
          "entry " + std::to_string(e.sequence) + ": the trace " +
          (e.kind == EntryKind::genesis ? "was written for another spec" : "changed to a spec") +
          " (digest " + e.spec + "), and no spec of that digest is kept");
    return m;
  };
  std::shared_ptr<const TaskModel> model = model_of(first);
  std::optional<TraceEntry> ahead = first;  // read, not yet handed to a kernel
  std::optional<TraceEntry> change;         // a spec change that ends the current kernel
  const auto next = [&](TraceEntry& e) {
    if (change) return false;
    if (ahead) {
      e = std::move(*ahead);
      ahead.reset();
    } else if (!read(e)) {
      return false;
    }
    if (e.kind == EntryKind::spec_changed) {
      change = e;
      return false;
    }
    if (visit) visit(*model, e);
    return true;
  };
  // The first kernel replays from the genesis (its constructor reads it through `next`).
  KernelOptions first_options = options;
  first_options.spec_change.reset();
  first_options.resume_from = next;
  auto kernel = std::make_unique<SafetyKernel>(model, std::move(first_options));
  while (change) {
    SpecChange sc{.from = kernel->model_ptr(),
                  .situation = kernel->situation(),
                  .sequence = change->sequence,
                  .prev = change->prev,
                  .principal = change->principal,
                  .recorded = std::move(*change)};
    change.reset();
    if (sc.prev != kernel->head_hash())
      throw InvalidArgument("entry " + std::to_string(sc.sequence) +
                            ": the spec change does not link to the entry before");
    model = model_of(*sc.recorded);
    if (visit) visit(*model, *sc.recorded);
    KernelOptions o = options;
    o.spec_change = std::move(sc);
    o.resume_from = next;
    kernel.reset();  // its entries are in the file already; its memory is not needed
    kernel = std::make_unique<SafetyKernel>(model, std::move(o));
  }
  return kernel;
}

}  // namespace clampai::kernel
