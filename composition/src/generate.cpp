// The composition obligations, from walking the composition tree. Facts flow through it: what
// holds when a node ends is what its tasks guarantee, plus what held before it and reads
// nothing it writes (the frame rule). Every task's blocking state invariants hold throughout
// (each task preserves its own, interference freedom makes every task preserve the others',
// and the start state satisfies them all), so they serve as premises of every check.
#include <algorithm>
#include <map>

#include "compose_internal.hpp"

namespace clampai::composition::detail {

namespace {

using kernel::TaskModel;
using verifier::ContractCheck;
using verifier::Formula;
using verifier::VerdictKind;

const std::string kInterference =
    "the interference checks (every task's actions against every other task's invariants)";

// How control reaches a node: the obligation its entry tasks' assumes give rise to.
struct Edge {
  ObligationKind kind = ObligationKind::sequential;
  std::string from{};    // what precedes: task names, `start`, a guard
  bool assumed = false;  // the composite's start with no declared assumes: nothing to prove
};

class Generator {
 public:
  Generator(const Manifest& m, const Invariants& inv, ObligationSink& sink)
      : m_(m), inv_(inv), sink_(sink) {}

  void run() {
    walk(m_.root, {}, Edge{ObligationKind::contract, "start", true});
    interference();
  }

 private:
  const Manifest& m_;
  const Invariants& inv_;
  ObligationSink& sink_;
  // Inside parallel branches: the variables other, concurrently running branches may write, and
  // the tasks of the innermost branch (their contracts are proved stable against those).
  std::set<std::string> volatile_;
  std::vector<std::vector<std::size_t>> branch_tasks_;
  // While computing a loop's invariant facts: walk without recording obligations.
  bool dry_ = false;

  const TaskRef& task(std::size_t i) const { return m_.tasks[i]; }

  // ---- facts ----

  Formula assumes(std::size_t i) const {
    const auto& itf = task(i).model->interface;
    if (!itf.assumes) return Formula::all({}, "true");
    return Formula::of(
        task(i).model,
        itf.assumes,
        "the assumes of `" + task(i).name + "` (" + kernel::to_source(*itf.assumes) + ")");
  }
  Formula guarantees(std::size_t i) const {
    const auto& itf = task(i).model->interface;
    if (!itf.guarantees) return Formula::all({}, "true");
    return Formula::of(
        task(i).model,
        itf.guarantees,
        "the guarantees of `" + task(i).name + "` (" + kernel::to_source(*itf.guarantees) + ")");
  }
  std::set<std::string> writes_of_task(std::size_t i) const {
    std::set<std::string> out;
    for (auto id : task(i).model->interface.writes) out.insert(task(i).model->variables[id].name);
    return out;
  }
  std::set<std::string> reads_of_task(std::size_t i) const {
    std::set<std::string> out;
    const auto& itf = task(i).model->interface;
    for (auto id : itf.reads) out.insert(task(i).model->variables[id].name);
    for (auto id : itf.writes) out.insert(task(i).model->variables[id].name);
    return out;
  }
  void tasks_of(const Node& n, std::vector<std::size_t>& out) const {
    if (n.kind == NodeKind::task) out.push_back(n.task);
    for (const Node& c : n.children) tasks_of(c, out);
  }
  std::set<std::string> writes_of(const Node& n) const {
    std::vector<std::size_t> ts;
    tasks_of(n, ts);
    std::set<std::string> out;
    for (auto t : ts) {
      auto w = writes_of_task(t);
      out.insert(w.begin(), w.end());
    }
    return out;
  }
  // What a node reads: its tasks' reads and writes, its guards, its composites' contracts.
  std::set<std::string> reads_of(const Node& n) const {
    std::set<std::string> out;
    auto expr = [&](const kernel::ExprPtr& e) {
      if (!e) return;
      auto v = verifier::variables_of(Formula::of(m_.universe, e, ""));
      out.insert(v.begin(), v.end());
    };
    if (n.kind == NodeKind::task) out = reads_of_task(n.task);
    if (n.kind == NodeKind::conditional) expr(n.guard);
    if (n.kind == NodeKind::group) {
      expr(m_.groups[n.group].assumes);
      expr(m_.groups[n.group].guarantees);
    }
    for (const Node& c : n.children) {
      auto r = reads_of(c);
      out.insert(r.begin(), r.end());
    }
    return out;
  }
  // A task's assumes or guarantees, proved stable against the concurrently running branches.
  bool stable(const Formula& f) const {
    if (f.kind != Formula::Kind::expr || branch_tasks_.empty()) return false;
    const auto& ts = branch_tasks_.back();
    return std::any_of(ts.begin(), ts.end(), [&](std::size_t t) {
      const auto& itf = task(t).model->interface;
      return task(t).model == f.model && (f.expr == itf.assumes || f.expr == itf.guarantees);
    });
  }
  // The facts that may serve as premises here: inside a parallel branch, not those another
  // branch may falsify at any moment (unless proved stable).
  Facts usable(const Facts& facts) const {
    if (volatile_.empty()) return facts;
    Facts out;
    for (const Formula& f : facts) {
      if (stable(f) || disjoint(verifier::variables_of(f), volatile_)) out.push_back(f);
    }
    return out;
  }
  // Structural identity of facts (the same expressions of the same models).
  static bool same(const Formula& a, const Formula& b) {
    if (a.kind != b.kind || a.model != b.model || a.expr != b.expr ||
        a.parts.size() != b.parts.size())
      return false;
    for (std::size_t i = 0; i < a.parts.size(); ++i) {
      if (!same(a.parts[i], b.parts[i])) return false;
    }
    return true;
  }
  static bool contains(const Facts& facts, const Formula& f) {
    return std::any_of(facts.begin(), facts.end(), [&](const Formula& g) { return same(g, f); });
  }
  static bool disjoint(const std::set<std::string>& a, const std::set<std::string>& b) {
    return std::none_of(a.begin(), a.end(), [&](const std::string& x) { return b.count(x) > 0; });
  }
  // The facts that survive a node writing `written`.
  static Facts frame(const Facts& facts, const std::set<std::string>& written) {
    Facts out;
    for (const Formula& f : facts) {
      if (disjoint(verifier::variables_of(f), written)) out.push_back(f);
    }
    return out;
  }
  // The names of the tasks a node ends with, for obligation ids.
  std::string last_names(const Node& n) const {
    switch (n.kind) {
      case NodeKind::task:
        return task(n.task).name;
      case NodeKind::sequential:
        return last_names(n.children.back());
      case NodeKind::parallel:
      case NodeKind::conditional: {
        std::string s;
        for (const Node& c : n.children)
          s += (s.empty() ? "" : (n.kind == NodeKind::parallel ? "+" : "|")) + last_names(c);
        return s;
      }
      case NodeKind::repeat:
        return last_names(n.children.front());
      case NodeKind::group:
        return m_.groups[n.group].guarantees ? m_.groups[n.group].name
                                             : last_names(n.children.front());
    }
    return "";
  }

  // ---- obligations ----

  void add(Obligation o) {
    if (!dry_) sink_.decided(std::move(o));
  }

  void add_check(Obligation o, ContractCheck c, const std::string& site) {
    if (!dry_) sink_.check(std::move(o), std::move(c), site);
  }

  void implication(const Edge& e,
                   const std::string& to,
                   const Facts& incoming,
                   Formula conclusion,
                   const Node& at,
                   std::vector<std::string> tasks) {
    if (e.assumed) return;  // the composite starts where its first tasks assume
    if (conclusion.kind == Formula::Kind::all_of && conclusion.parts.empty()) return;  // true
    Obligation o;
    o.kind = e.kind;
    o.id = std::string(to_string(e.kind)) + ":" + e.from + "->" + to;
    o.tasks = std::move(tasks);
    o.file = at.path.substr(0, at.path.find(": "));
    o.loc = at.loc;
    ContractCheck c;
    c.premises = usable(incoming);
    c.conclusion = std::move(conclusion);
    add_check(std::move(o), std::move(c), at.path);
  }

  // Entry obligations only: that `n` can start given `incoming`.
  void entry(const Node& n, const Facts& incoming, const Edge& e) {
    switch (n.kind) {
      case NodeKind::task:
        implication(e, task(n.task).name, incoming, assumes(n.task), n, {task(n.task).name});
        return;
      case NodeKind::sequential:
        entry(n.children.front(), incoming, e);
        return;
      case NodeKind::parallel:
        for (const Node& c : n.children) entry(c, incoming, e);
        return;
      case NodeKind::conditional:
        branches(n, incoming, e, /*walk_them=*/false);
        return;
      case NodeKind::repeat:
        entry(n.children.front(), incoming, e);
        return;
      case NodeKind::group: {
        const Group& g = m_.groups[n.group];
        if (g.assumes)
          implication(e,
                      g.name,
                      incoming,
                      Formula::of(m_.universe, g.assumes, "the assumes of `" + g.name + "`"),
                      n,
                      {});
        else
          entry(n.children.front(), incoming, e);
        return;
      }
    }
  }

  // The conditional's branches, each entered with the guard (or its negation) as a fact.
  Facts branches(const Node& n, const Facts& incoming, const Edge& e, bool walk_them) {
    const Formula guard =
        Formula::of(m_.universe, n.guard, "the guard `" + kernel::to_source(*n.guard) + "`");
    Facts then_in = incoming, else_in = incoming;
    then_in.push_back(guard);
    else_in.push_back(Formula::negate(guard));
    Edge te = e, ee = e;
    if (!e.assumed) {
      te.kind = ee.kind = ObligationKind::conditional;
      te.from = e.from + "[" + kernel::to_source(*n.guard) + "]";
      ee.from = e.from + "[!(" + kernel::to_source(*n.guard) + ")]";
    }
    if (!walk_them) {
      entry(n.children[0], then_in, te);
      if (n.children.size() > 1) entry(n.children[1], else_in, ee);
      return {};
    }
    const Facts then_out = walk(n.children[0], then_in, te);
    const Facts else_out = n.children.size() > 1 ? walk(n.children[1], else_in, ee) : else_in;
    return {Formula::any(
        {Formula::all(then_out, "the `then` branch"), Formula::all(else_out, "the `else` branch")},
        "one of the branches")};
  }

  // Entry and internal obligations of `n`; returns what holds when it ends.
  Facts walk(const Node& n, const Facts& incoming, const Edge& e) {
    switch (n.kind) {
      case NodeKind::task: {
        entry(n, incoming, e);
        Facts out = frame(incoming, writes_of_task(n.task));
        out.push_back(guarantees(n.task));
        return out;
      }
      case NodeKind::sequential: {
        Facts facts = incoming;
        Edge edge = e;
        for (const Node& c : n.children) {
          facts = walk(c, facts, edge);
          edge = Edge{ObligationKind::sequential, last_names(c), false};
        }
        return facts;
      }
      case NodeKind::parallel:
        return parallel(n, incoming, e);
      case NodeKind::conditional:
        return branches(n, incoming, e, true);
      case NodeKind::repeat: {
        // The first iteration starts from `incoming`. Every later one starts from the facts H
        // that hold after the first and that each iteration keeps (found by walking the body
        // without recording obligations until no fact drops out): the loop invariant. Walking
        // the body from H checks every later iteration at once.
        const Node& body = n.children.front();
        const Facts first = walk(body, incoming, e);
        if (n.times == 1) return first;
        Facts head = first;
        const bool was_dry = dry_;
        dry_ = true;
        for (;;) {
          const Facts next = walk(body, head, Edge{ObligationKind::repeat, "", false});
          Facts kept;
          for (const Formula& f : head) {
            if (contains(next, f)) kept.push_back(f);
          }
          if (kept.size() == head.size()) break;
          head = std::move(kept);
        }
        dry_ = was_dry;
        return walk(body, head, Edge{ObligationKind::repeat, last_names(body), false});
      }
      case NodeKind::group:
        return group(n, incoming, e);
    }
    return incoming;
  }

  Facts group(const Node& n, const Facts& incoming, const Edge& e) {
    const Group& g = m_.groups[n.group];
    Facts inside = incoming;
    Edge inner = e;
    if (g.assumes) {
      const Formula a = Formula::of(m_.universe, g.assumes, "the assumes of `" + g.name + "`");
      implication(e, g.name, incoming, a, n, {});
      inside = {a};
      inner = Edge{ObligationKind::contract, g.name, false};
    }
    const Facts out = walk(n.children.front(), inside, inner);
    if (!g.guarantees) {
      if (!g.assumes) return out;
      Facts result = frame(incoming, writes_of(n));  // what the composite does not touch
      result.insert(result.end(), out.begin(), out.end());
      return result;
    }
    const Formula gu = Formula::of(m_.universe, g.guarantees, "the guarantees of `" + g.name + "`");
    implication(Edge{ObligationKind::contract, last_names(n.children.front()), false},
                g.name + ".guarantees",
                out,
                gu,
                n,
                {});
    Facts result = frame(incoming, writes_of(n));
    result.push_back(gu);
    return result;
  }

  Facts parallel(const Node& n, const Facts& incoming, const Edge& e) {
    // Every branch starts where the parallel node starts. Inside a branch, an earlier fact
    // survives only if no other branch writes its variables: those may change at any time.
    // (When no branch writes what another reads, every such fact is harmless: whatever it
    // implies about a branch's own variables stays true.)
    // What each branch writes and reads, and what the other branches write, computed once:
    // a wide group has quadratically many pairs.
    const std::size_t k = n.children.size();
    std::vector<std::set<std::string>> writes(k), reads(k), others(k);
    std::map<std::string, std::size_t> writers;  // variable -> how many branches write it
    for (std::size_t i = 0; i < k; ++i) {
      writes[i] = writes_of(n.children[i]);
      reads[i] = reads_of(n.children[i]);
      for (const auto& v : writes[i]) ++writers[v];
    }
    for (std::size_t i = 0; i < k; ++i) {
      for (const auto& [v, count] : writers) {
        if (count > writes[i].count(v)) others[i].insert(v);
      }
    }
    std::vector<Facts> outs;
    for (std::size_t i = 0; i < k; ++i) {
      const Node& c = n.children[i];
      entry(c, incoming, e);  // at the start, every incoming fact holds
      const std::set<std::string> saved = volatile_;
      volatile_.insert(others[i].begin(), others[i].end());
      std::vector<std::size_t> ts;
      tasks_of(c, ts);
      branch_tasks_.push_back(ts);
      Edge inner = e;
      inner.assumed = true;  // just checked
      outs.push_back(walk(c, incoming, inner));
      branch_tasks_.pop_back();
      volatile_ = saved;
    }
    std::set<std::string> all_writes;
    for (const auto& [v, count] : writers) all_writes.insert(v);
    const Facts around = usable(frame(incoming, all_writes));  // untouched by any branch
    Facts result;
    for (std::size_t i = 0; i < k; ++i) {
      for (std::size_t j = i + 1; j < k; ++j) {
        const bool independent = disjoint(writes[i], reads[j]) && disjoint(writes[j], reads[i]) &&
                                 disjoint(writes[i], writes[j]);
        if (independent) {
          Obligation o;
          o.kind = ObligationKind::parallel;
          o.id = "parallel:" + last_names(n.children[i]) + "||" + last_names(n.children[j]);
          o.verdict = VerdictKind::proved;
          o.reason = "independent: neither branch writes what the other reads or writes";
          o.file = n.path.substr(0, n.path.find(": "));
          o.loc = n.loc;
          add(std::move(o));
          continue;
        }
        // Each branch's actions must keep the other's assumes (it may not have started) and
        // guarantees (it may have finished).
        cross(n.children[i], n.children[j], n, around);
        cross(n.children[j], n.children[i], n, around);
      }
      // What a branch establishes survives unless another branch may change it; the tasks'
      // guarantees were proved stable above.
      std::vector<std::size_t> ts;
      tasks_of(n.children[i], ts);
      for (const Formula& f : outs[i]) {
        const bool guarantee =
            f.kind == Formula::Kind::expr && std::any_of(ts.begin(), ts.end(), [&](std::size_t t) {
              return task(t).model == f.model && task(t).model->interface.guarantees == f.expr;
            });
        if (!contains(result, f) && (guarantee || disjoint(verifier::variables_of(f), others[i])))
          result.push_back(f);
      }
    }
    return result;
  }

  // Every action of the tasks of `actor_node` that writes a variable another task's assumes or
  // guarantees read must preserve them.
  void cross(const Node& actor_node, const Node& other_node, const Node& at, const Facts& around) {
    std::vector<std::size_t> xs, ys;
    tasks_of(actor_node, xs);
    tasks_of(other_node, ys);
    for (std::size_t x : xs) {
      for (std::size_t y : ys) {
        for (const Formula& f : {assumes(y), guarantees(y)}) {
          if (f.kind != Formula::Kind::expr) continue;
          const std::set<std::string> vs = verifier::variables_of(f);
          const auto& model = task(x).model;
          for (std::size_t a = 0; a < model->actions.size(); ++a) {
            std::set<std::string> w;
            for (const auto& eff : model->actions[a].effects)
              w.insert(model->variables[eff.variable].name);
            if (disjoint(w, vs)) continue;
            Obligation o;
            o.kind = ObligationKind::parallel;
            o.id = "parallel:" + task(x).name + "." + model->actions[a].id + " keeps " +
                   (f.expr == task(y).model->interface.assumes ? "assumes" : "guarantees") +
                   " of " + task(y).name;
            o.tasks = {task(x).name, task(y).name};
            o.file = at.path.substr(0, at.path.find(": "));
            o.loc = at.loc;
            ContractCheck c;
            c.premises = around;
            c.premises.push_back(f);
            c.conclusion = f;
            c.actor = model;
            c.action = a;
            add_check(std::move(o), std::move(c), "the parallel group at " + at.path);
          }
        }
      }
    }
  }

  // Every task's actions preserve every other task's blocking invariants over shared variables.
  void interference() {
    std::vector<std::size_t> distinct;
    for (std::size_t i = 0; i < m_.tasks.size(); ++i) {
      bool seen = false;
      for (std::size_t d : distinct) seen = seen || task(d).model == task(i).model;
      if (!seen) distinct.push_back(i);
    }
    for (std::size_t x : distinct) {
      const auto& mx = task(x).model;
      for (std::size_t a = 0; a < mx->actions.size(); ++a) {
        std::set<std::string> w;
        for (const auto& eff : mx->actions[a].effects) w.insert(mx->variables[eff.variable].name);
        if (w.empty()) continue;
        for (std::size_t y : distinct) {
          if (y == x) continue;
          const auto& my = task(y).model;
          for (const auto& inv : my->invariants) {
            if (inv.enforcement != kernel::Enforcement::blocking || !inv.expr) continue;
            const Formula f =
                Formula::of(my, inv.expr, "invariant `" + inv.name + "` of `" + task(y).name + "`");
            if (disjoint(verifier::variables_of(f), w)) continue;
            Obligation o;
            o.kind = ObligationKind::interference;
            o.id = "interference:" + task(x).name + "." + mx->actions[a].id + ":" + task(y).name +
                   "." + inv.name;
            o.tasks = {task(x).name, task(y).name};
            o.file = task(y).file;
            o.loc = inv.loc;
            ContractCheck c;
            if (!inv.transition) c.premises = {f};
            c.conclusion = f;
            c.actor = mx;
            c.action = a;
            add_check(std::move(o), std::move(c), kInterference);
          }
        }
      }
    }
    // A kernel checks a transition invariant at its start with old(x) = x. Where other tasks
    // write its variables, that must follow from what holds when the task starts: its assumes
    // and the invariants (which hold throughout).
    for (std::size_t y : distinct) {
      const auto& my = task(y).model;
      for (const auto& inv : my->invariants) {
        if (inv.enforcement != kernel::Enforcement::blocking || !inv.expr || !inv.transition)
          continue;
        const Formula f = Formula::of(
            my, inv.expr, "invariant `" + inv.name + "` of `" + task(y).name + "` with old(x) = x");
        const std::set<std::string> vs = verifier::variables_of(f);
        const bool touched = std::any_of(distinct.begin(), distinct.end(), [&](std::size_t x) {
          return x != y && !disjoint(writes_of_task(x), vs);
        });
        if (!touched) continue;
        Obligation o;
        o.kind = ObligationKind::interference;
        o.id = "interference:start:" + task(y).name + "." + inv.name;
        o.tasks = {task(y).name};
        o.file = task(y).file;
        o.loc = inv.loc;
        ContractCheck c;
        c.premises = inv_.per_task[y];
        c.premises.push_back(assumes(y));
        c.conclusion = f;
        add_check(std::move(o), std::move(c), kInterference);
      }
    }
  }
};

}  // namespace

void generate_obligations(const Manifest& m, const Invariants& inv, ObligationSink& sink) {
  Generator(m, inv, sink).run();
}

}  // namespace clampai::composition::detail
