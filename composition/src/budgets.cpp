// The composites' budgets (the parts' budgets fit) and forbidden variables (no task inside
// writes one).
#include "compose_internal.hpp"

namespace clampai::composition::detail {

namespace {

using kernel::Decimal;

class Limits {
 public:
  Limits(const Manifest& m, ObligationSink& sink) : m_(m), sink_(sink) {}

  // `a` written with as many decimals as the finer of `a` and `b`.
  static std::string same_scale(const Decimal& a, const Decimal& b) {
    const auto r = a.rescaled(std::max(a.scale, b.scale));
    return (r ? *r : a).to_string();
  }

  std::optional<Decimal> budget_of(const Node& n) {
    auto add_all = [&](const Node& p) -> std::optional<Decimal> {
      Decimal sum{0, 0};
      for (const Node& c : p.children) {
        const auto b = budget_of(c);
        if (!b) return std::nullopt;
        const auto s = kernel::checked_add(sum, *b);
        if (!s) return std::nullopt;
        sum = *s;
      }
      return sum;
    };
    switch (n.kind) {
      case NodeKind::task: {
        const auto& b = task(n.task).model->budget;
        return Decimal{b.total, static_cast<std::uint8_t>(b.scale)};
      }
      case NodeKind::sequential:
      case NodeKind::parallel:
        return add_all(n);
      case NodeKind::conditional: {
        Decimal most{0, 0};
        for (const Node& c : n.children) {
          const auto b = budget_of(c);
          if (!b) return std::nullopt;
          most = std::max(most, *b);
        }
        return most;
      }
      case NodeKind::repeat: {
        const auto b = budget_of(n.children.front());
        return b ? kernel::checked_mul(*b, Decimal{n.times, 0}) : std::nullopt;
      }
      case NodeKind::group: {
        const auto need = budget_of(n.children.front());
        const Group& g = m_.groups[n.group];
        if (!g.budget) return need;
        Obligation o;
        o.kind = ObligationKind::budget;
        o.id = "budget:" + g.name;
        o.file = g.file;
        o.loc = g.loc;
        if (!need) {
          o.verdict = verifier::VerdictKind::refuted;
          o.reason = "the parts' budgets overflow the fixed-point range";
        } else if (*need <= *g.budget) {
          o.verdict = verifier::VerdictKind::proved;
          o.reason = "the parts need at most " + same_scale(*need, *g.budget) + ", the budget is " +
                     same_scale(*g.budget, *need);
        } else {
          o.verdict = verifier::VerdictKind::refuted;
          o.reason = "the parts need up to " + same_scale(*need, *g.budget) +
                     " (sequential and parallel parts add up, a conditional takes its dearest "
                     "branch, a repeat multiplies), the budget is " +
                     same_scale(*g.budget, *need);
        }
        if (!budget_seen_.insert(n.group).second) return g.budget;
        sink_.decided(std::move(o));
        return g.budget;
      }
    }
    return std::nullopt;
  }
  std::set<std::size_t> budget_seen_;

  void budgets() { (void)budget_of(m_.root); }

  // A composite's declared `forbidden` binds every task inside it, nested composites
  // included; a task's own `forbidden` is part of its verification (`interface:forbidden`).
  void forbidden() { forbidden_in(m_.root, {}); }

  void forbidden_in(const Node& n, std::map<std::string, std::string> by) {
    if (n.kind == NodeKind::group) {
      for (const auto& v : m_.groups[n.group].forbidden)
        by.emplace(v, "composite `" + m_.groups[n.group].name + "`");
    }
    if (n.kind == NodeKind::task && !by.empty()) {
      Obligation o;
      o.kind = ObligationKind::forbidden;
      o.id = "forbidden:" + task(n.task).name;
      o.tasks = {task(n.task).name};
      o.file = n.path.substr(0, n.path.find(": "));
      o.loc = n.loc;
      o.verdict = verifier::VerdictKind::proved;
      o.reason = "writes no variable its enclosing composites forbid";
      for (const auto& w : writes_of_task(n.task)) {
        auto it = by.find(w);
        if (it == by.end()) continue;
        o.verdict = verifier::VerdictKind::refuted;
        o.reason =
            "`" + task(n.task).name + "` may write `" + w + "`, which " + it->second + " forbids";
        break;
      }
      if (forbidden_seen_.insert(o.id + "|" + o.reason).second) sink_.decided(std::move(o));
    }
    for (const Node& c : n.children) forbidden_in(c, by);
  }
  std::set<std::string> forbidden_seen_;

 private:
  const Manifest& m_;
  ObligationSink& sink_;

  const TaskRef& task(std::size_t i) const { return m_.tasks[i]; }
  std::set<std::string> writes_of_task(std::size_t i) const {
    std::set<std::string> out;
    for (auto id : task(i).model->interface.writes) out.insert(task(i).model->variables[id].name);
    return out;
  }
};

}  // namespace

void check_budgets(const Manifest& m, ObligationSink& sink) { Limits(m, sink).budgets(); }

void check_forbidden(const Manifest& m, ObligationSink& sink) { Limits(m, sink).forbidden(); }

}  // namespace clampai::composition::detail
