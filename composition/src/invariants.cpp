// The tasks' blocking state invariants: premises of every check (they hold throughout).
#include "compose_internal.hpp"

namespace clampai::composition::detail {

Invariants::Invariants(const Manifest& m) {
  std::map<std::string, std::size_t> seen;  // text -> index into distinct
  for (std::size_t t = 0; t < m.tasks.size(); ++t) {
    Facts facts;
    for (const auto& x : m.tasks[t].model->invariants) {
      if (x.enforcement != kernel::Enforcement::blocking || !x.expr || x.transition) continue;
      facts.push_back(verifier::Formula::of(
          m.tasks[t].model, x.expr, "invariant `" + x.name + "` of `" + m.tasks[t].name + "`"));
      // Shared variables are declared alike in every spec (the loader checks it), so one text
      // means one formula, whichever spec states it.
      if (!seen.emplace(kernel::to_source(*x.expr), distinct.size()).second) continue;
      Entry e{t, facts.back(), verifier::variables_of(facts.back())};
      for (const auto& v : e.variables) by_var[v].push_back(distinct.size());
      distinct.push_back(std::move(e));
    }
    per_task.push_back(std::move(facts));
  }
}

kernel::State project(const Manifest& m,
                      const kernel::State& base,
                      const kernel::TaskModel& model,
                      const std::vector<std::pair<std::string, kernel::Value>>& values) {
  std::vector<std::pair<kernel::VarId, kernel::Value>> assignment;
  for (kernel::VarId id = 0; id < model.variables.size(); ++id) {
    if (auto u = m.universe->schema->find(model.variables[id].name))
      assignment.emplace_back(id, base.get(*u));
  }
  for (const auto& [name, v] : values) {
    if (auto id = model.schema->find(name)) assignment.emplace_back(*id, v);
  }
  return model.initial_state().with(assignment);
}

}  // namespace clampai::composition::detail
