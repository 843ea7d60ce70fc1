// The composite's start state: the base case of "the invariants hold throughout", and, for a
// closed composite, what its first nodes assume.
#include "compose_internal.hpp"

namespace clampai::composition::detail {

namespace {

using kernel::TaskModel;

class StartCheck {
 public:
  StartCheck(const Manifest& m, ObligationSink& sink) : m_(m), sink_(sink) {}

  // The composite's start state (each variable's initial value from the first spec that
  // declares it) satisfies every task's blocking invariants: the base case of "they hold
  // throughout".
  void initial_state() {
    const kernel::State& start = m_.universe->initial_state();
    for (std::size_t i = 0; i < m_.tasks.size(); ++i) {
      const auto& model = task(i).model;
      const kernel::State s = project(m_, start, *model, {});
      for (const auto& inv : model->invariants) {
        // A transition invariant is checked at a kernel's start with old(x) = x.
        if (inv.enforcement != kernel::Enforcement::blocking) continue;
        if (kernel::holds_in(inv, s)) continue;
        Obligation o;
        o.kind = ObligationKind::contract;
        o.id = "contract:start:" + task(i).name + "." + inv.name;
        o.verdict = verifier::VerdictKind::refuted;
        o.reason =
            "the composite's start state (each variable's initial value from the first spec "
            "that declares it) violates invariant `" +
            inv.name + "` of `" + task(i).name + "`";
        o.tasks = {task(i).name};
        o.file = task(i).file;
        o.loc = inv.loc;
        o.counterexample =
            inv.expr ? values_read(*inv.expr, *model, s) : verifier::Counterexample{};
        sink_.decided(std::move(o));
      }
    }
  }

  // The variables `e` (over `model`) reads, with their values in `s`.
  static verifier::Counterexample values_read(const kernel::Expr& e,
                                              const TaskModel& model,
                                              const kernel::State& s) {
    verifier::Counterexample cex;
    std::vector<bool> seen;
    kernel::collect_variables(e, seen);
    for (std::size_t v = 0; v < seen.size(); ++v)
      if (seen[v])
        cex.pre.emplace_back(model.variables[v].name, s.get(static_cast<kernel::VarId>(v)));
    return cex;
  }

  static bool holds(const kernel::Expr& e, const kernel::State& s) {
    const kernel::EvalResult r = kernel::evaluate(e, kernel::EvalEnv{&s, {}, &s, nullptr});
    return r.ok() && r.value.as_bool();  // an evaluation error fails closed
  }

  // A composite whose manifest declares no `assumes` starts from its start state, which must
  // then satisfy what the nodes that run first assume: tasks' assumes, included manifests'
  // declared assumes (a conditional's guard, evaluated on that state, picks its branch). With a
  // declared `assumes` the root is an open composite: callers establish it, nothing to check.
  // Reported only when refuted, like the invariants.
  void start_entry() {
    const Group& root = m_.groups[m_.root.group];
    if (!root.assumes) start_entry(m_.root.children.front());
  }

  void start_entry(const Node& n) {
    const kernel::State& start = m_.universe->initial_state();
    switch (n.kind) {
      case NodeKind::task: {
        const auto& model = task(n.task).model;
        const kernel::ExprPtr& assumes = model->interface.assumes;
        if (!assumes) return;
        const kernel::State s = project(m_, start, *model, {});
        if (holds(*assumes, s)) return;
        start_refuted(
            "contract:start:" + task(n.task).name + ".assumes",
            "the assumes of `" + task(n.task).name + "` (" + kernel::to_source(*assumes) + ")",
            {task(n.task).name},
            task(n.task).file,
            model->interface.loc,
            values_read(*assumes, *model, s));
        return;
      }
      case NodeKind::sequential:
      case NodeKind::repeat:
        start_entry(n.children.front());
        return;
      case NodeKind::parallel:
        for (const Node& c : n.children) start_entry(c);
        return;
      case NodeKind::conditional:
        if (holds(*n.guard, start)) {
          start_entry(n.children[0]);
        } else if (n.children.size() > 1) {
          start_entry(n.children[1]);
        }
        return;
      case NodeKind::group: {
        const Group& g = m_.groups[n.group];
        if (!g.assumes) {
          start_entry(n.children.front());
        } else if (!holds(*g.assumes, start)) {
          start_refuted("contract:start:" + g.name + ".assumes",
                        "the assumes of `" + g.name + "` (" + kernel::to_source(*g.assumes) + ")",
                        {},
                        g.file,
                        g.loc,
                        values_read(*g.assumes, *m_.universe, start));
        }
        return;
      }
    }
  }

  void start_refuted(std::string id,
                     const std::string& what,
                     std::vector<std::string> tasks,
                     std::string file,
                     kernel::SourceLoc loc,
                     verifier::Counterexample cex) {
    Obligation o;
    o.kind = ObligationKind::contract;
    o.id = std::move(id);
    o.verdict = verifier::VerdictKind::refuted;
    o.reason =
        "the composite's start state (each variable's initial value from the first spec "
        "that declares it) does not satisfy " +
        what;
    o.tasks = std::move(tasks);
    o.file = std::move(file);
    o.loc = loc;
    o.counterexample = std::move(cex);
    sink_.decided(std::move(o));
  }

 private:
  const Manifest& m_;
  ObligationSink& sink_;

  const TaskRef& task(std::size_t i) const { return m_.tasks[i]; }
};

}  // namespace

void check_start_state(const Manifest& m, ObligationSink& sink) {
  StartCheck check(m, sink);
  check.initial_state();
  check.start_entry();
}

}  // namespace clampai::composition::detail
