// The composition obligations (docs/COMPOSE.md). Facts flow through the composition tree:
// what holds when a node ends is what its tasks guarantee, plus what held before it and reads
// nothing it writes (the frame rule). Every task's blocking state invariants hold throughout
// (each task preserves its own, interference freedom makes every task preserve the others',
// and the start state satisfies them all), so they serve as premises of every check.
#include <algorithm>
#include <chrono>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "certificate.hpp"
#include "clampai/composition/compose.hpp"

#include "clampai/verifier/contract.hpp"
#include "source_digest.hpp"

namespace clampai::composition {

using kernel::Decimal;
using kernel::TaskModel;
using kernel::Value;
using verifier::ContractCheck;
using verifier::Formula;
using verifier::VerdictKind;

std::string_view to_string(ObligationKind k) {
  static constexpr std::string_view kNames[] = {"task",
                                                "sequential",
                                                "parallel",
                                                "conditional",
                                                "repeat",
                                                "interference",
                                                "contract",
                                                "budget",
                                                "forbidden"};
  return kNames[static_cast<int>(k)];
}

std::string_view toolkit_version() {
  // The release and the digest of the sources that decide verdicts: a certificate made by any
  // other build (another release, or a development build with other sources) is not reused.
  static const std::string version = std::string("clampai ") + CLAMPAI_VERSION + " (sources " +
                                     std::string(CLAMPAI_SOURCE_DIGEST).substr(0, 16) + ")";
  return version;
}

int ComposeReport::exit_code(bool fail_on_unknown) const {
  if (refuted > 0) return 1;
  if (unknown > 0) return fail_on_unknown ? 1 : 3;
  return 0;
}

namespace {

using Facts = std::vector<Formula>;

// How control reaches a node: the obligation its entry tasks' assumes give rise to.
struct Edge {
  ObligationKind kind = ObligationKind::sequential;
  std::string from{};    // what precedes: task names, `start`, a guard
  bool assumed = false;  // the composite's start with no declared assumes: nothing to prove
};

struct Pending {
  Obligation obligation;
  ContractCheck check;
};

class Composer {
 public:
  Composer(const Manifest& m, const ComposeOptions& o, ComposeReport& r)
      : m_(m), options_(o), report_(r) {}

  void run() {
    verify_tasks();
    for (std::size_t i = 0; i < m_.tasks.size(); ++i) {
      Facts inv;
      for (const auto& x : m_.tasks[i].model->invariants) {
        if (x.enforcement == kernel::Enforcement::blocking && x.expr && !x.transition)
          inv.push_back(Formula::of(m_.tasks[i].model,
                                    x.expr,
                                    "invariant `" + x.name + "` of `" + m_.tasks[i].name + "`"));
      }
      invariants_.push_back(std::move(inv));
    }
    initial_state();
    start_entry();
    walk(m_.root, {}, Edge{ObligationKind::contract, "start", true});
    interference();
    budgets();
    forbidden();
    decide();
  }

 private:
  const Manifest& m_;
  const ComposeOptions& options_;
  ComposeReport& report_;
  std::vector<Facts> invariants_;  // per task
  std::vector<Pending> pending_;
  // Inside parallel branches: the variables other, concurrently running branches may write, and
  // the tasks of the innermost branch (their contracts are proved stable against those).
  std::set<std::string> volatile_;
  std::vector<std::vector<std::size_t>> branch_tasks_;
  // While computing a loop's invariant facts: walk without recording obligations.
  bool dry_ = false;
  std::map<std::string, int> ids_;

  const TaskRef& task(std::size_t i) const { return m_.tasks[i]; }

  // ---- tasks: verified, or their certificate reused ----

  void verify_tasks() {
    std::map<const TaskModel*, std::size_t> first;  // one verification per distinct model
    std::vector<std::size_t> todo;
    for (std::size_t i = 0; i < m_.tasks.size(); ++i) {
      if (first.emplace(m_.tasks[i].model.get(), i).second) todo.push_back(i);
    }
    std::vector<TaskResult> results(m_.tasks.size());
    std::mutex mutex;
    std::exception_ptr error;
    std::size_t next = 0;
    auto work = [&] {
      for (;;) {
        std::size_t k;
        {
          std::lock_guard lock(mutex);
          if (next == todo.size() || error) return;
          k = todo[next++];
        }
        try {
          results[k] = certify(m_.tasks[k], options_);
        } catch (...) {
          std::lock_guard lock(mutex);
          if (!error) error = std::current_exception();
        }
      }
    };
    std::vector<std::thread> threads;
    const unsigned jobs = std::max(1U, std::min<unsigned>(options_.jobs, todo.size()));
    for (unsigned t = 1; t < jobs; ++t) threads.emplace_back(work);
    work();
    for (auto& t : threads) t.join();
    if (error) std::rethrow_exception(error);
    for (std::size_t i = 0; i < m_.tasks.size(); ++i) {
      const std::size_t k = first.at(m_.tasks[i].model.get());
      if (k != i) continue;  // reported once, under its first name
      TaskResult& r = results[i];
      report_.reused += r.reused;
      Obligation o;
      o.kind = ObligationKind::task;
      o.id = "task:" + r.name;
      o.tasks = {r.name};
      o.file = r.file;
      o.verdict = r.refuted > 0   ? VerdictKind::refuted
                  : r.unknown > 0 ? VerdictKind::unknown
                                  : VerdictKind::proved;
      o.reason = std::to_string(r.proved) + " proved, " + std::to_string(r.refuted) + " refuted, " +
                 std::to_string(r.unknown) + " unknown" + (r.reused ? " (certificate reused)" : "");
      if (!r.findings.empty() && o.verdict != VerdictKind::proved) {
        const auto& f = r.findings.front();
        o.reason += "; first: " + f.id + ": " + f.reason;
        o.loc = f.loc;
      }
      add(std::move(o));
      report_.tasks.push_back(std::move(r));
    }
  }

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
    if (dry_) return;
    const int k = ++ids_[o.id];
    if (k > 1) o.id += "#" + std::to_string(k);
    switch (o.verdict) {
      case VerdictKind::proved:
        ++report_.proved;
        break;
      case VerdictKind::refuted:
        ++report_.refuted;
        break;
      case VerdictKind::unknown:
        ++report_.unknown;
        break;
    }
    report_.obligations.push_back(std::move(o));
  }

  void add_check(Obligation o, ContractCheck c) {
    if (dry_) return;
    const int k = ++ids_[o.id];
    if (k > 1) o.id += "#" + std::to_string(k);
    c.id = o.id;
    pending_.push_back(Pending{std::move(o), std::move(c)});
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
    add_check(std::move(o), std::move(c));
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
    std::vector<Facts> outs;
    for (std::size_t i = 0; i < n.children.size(); ++i) {
      const Node& c = n.children[i];
      std::set<std::string> others;
      for (std::size_t j = 0; j < n.children.size(); ++j) {
        if (j == i) continue;
        auto w = writes_of(n.children[j]);
        others.insert(w.begin(), w.end());
      }
      entry(c, incoming, e);  // at the start, every incoming fact holds
      const std::set<std::string> saved = volatile_;
      volatile_.insert(others.begin(), others.end());
      std::vector<std::size_t> ts;
      tasks_of(c, ts);
      branch_tasks_.push_back(ts);
      Edge inner = e;
      inner.assumed = true;  // just checked
      outs.push_back(walk(c, incoming, inner));
      branch_tasks_.pop_back();
      volatile_ = saved;
    }
    Facts result;
    for (std::size_t i = 0; i < n.children.size(); ++i) {
      const std::set<std::string> wi = writes_of(n.children[i]);
      for (std::size_t j = i + 1; j < n.children.size(); ++j) {
        const std::set<std::string> wj = writes_of(n.children[j]);
        const bool independent = disjoint(wi, reads_of(n.children[j])) &&
                                 disjoint(wj, reads_of(n.children[i])) && disjoint(wi, wj);
        const std::string id =
            "parallel:" + last_names(n.children[i]) + "||" + last_names(n.children[j]);
        if (independent) {
          Obligation o;
          o.kind = ObligationKind::parallel;
          o.id = id;
          o.verdict = VerdictKind::proved;
          o.reason = "independent: neither branch writes what the other reads or writes";
          o.file = n.path.substr(0, n.path.find(": "));
          o.loc = n.loc;
          add(std::move(o));
          continue;
        }
        // Each branch's actions must keep the other's assumes (it may not have started) and
        // guarantees (it may have finished).
        const Facts around = usable(frame(incoming, writes_of(n)));  // untouched by either
        cross(n.children[i], n.children[j], n, around);
        cross(n.children[j], n.children[i], n, around);
      }
      // What a branch establishes survives unless another branch may change it; the tasks'
      // guarantees were proved stable above.
      std::set<std::string> others;
      for (std::size_t j = 0; j < n.children.size(); ++j) {
        if (j == i) continue;
        auto w = writes_of(n.children[j]);
        others.insert(w.begin(), w.end());
      }
      std::vector<std::size_t> ts;
      tasks_of(n.children[i], ts);
      for (const Formula& f : outs[i]) {
        const bool guarantee =
            f.kind == Formula::Kind::expr && std::any_of(ts.begin(), ts.end(), [&](std::size_t t) {
              return task(t).model == f.model && task(t).model->interface.guarantees == f.expr;
            });
        if (!contains(result, f) && (guarantee || disjoint(verifier::variables_of(f), others)))
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
            add_check(std::move(o), std::move(c));
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
            add_check(std::move(o), std::move(c));
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
        c.premises = invariants_[y];
        c.premises.push_back(assumes(y));
        c.conclusion = f;
        add_check(std::move(o), std::move(c));
      }
    }
  }

  // The composite's start state (each variable's initial value from the first spec that
  // declares it) satisfies every task's blocking invariants: the base case of "they hold
  // throughout".
  void initial_state() {
    const kernel::State& start = m_.universe->initial_state();
    for (std::size_t i = 0; i < m_.tasks.size(); ++i) {
      const auto& model = task(i).model;
      const kernel::State s = project(start, *model, {});
      for (const auto& inv : model->invariants) {
        // A transition invariant is checked at a kernel's start with old(x) = x.
        if (inv.enforcement != kernel::Enforcement::blocking) continue;
        if (kernel::holds_in(inv, s)) continue;
        Obligation o;
        o.kind = ObligationKind::contract;
        o.id = "contract:start:" + task(i).name + "." + inv.name;
        o.verdict = VerdictKind::refuted;
        o.reason =
            "the composite's start state (each variable's initial value from the first spec "
            "that declares it) violates invariant `" +
            inv.name + "` of `" + task(i).name + "`";
        o.tasks = {task(i).name};
        o.file = task(i).file;
        o.loc = inv.loc;
        o.counterexample =
            inv.expr ? values_read(*inv.expr, *model, s) : verifier::Counterexample{};
        add(std::move(o));
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
    const kernel::EvalResult r = kernel::evaluate(e, kernel::EvalEnv{&s, nullptr, &s, nullptr});
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
        const kernel::State s = project(start, *model, {});
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
    o.verdict = VerdictKind::refuted;
    o.reason =
        "the composite's start state (each variable's initial value from the first spec "
        "that declares it) does not satisfy " +
        what;
    o.tasks = std::move(tasks);
    o.file = std::move(file);
    o.loc = loc;
    o.counterexample = std::move(cex);
    add(std::move(o));
  }

  // A state of `model` with the composite's values: `base`, overridden by `values`.
  kernel::State project(const kernel::State& base,
                        const TaskModel& model,
                        const std::vector<std::pair<std::string, Value>>& values) const {
    std::vector<std::pair<kernel::VarId, Value>> assignment;
    for (kernel::VarId id = 0; id < model.variables.size(); ++id) {
      if (auto u = m_.universe->schema->find(model.variables[id].name))
        assignment.emplace_back(id, base.get(*u));
    }
    for (const auto& [name, v] : values) {
      if (auto id = model.schema->find(name)) assignment.emplace_back(*id, v);
    }
    return model.initial_state().with(assignment);
  }

  // ---- budgets and forbidden variables ----

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
          o.verdict = VerdictKind::refuted;
          o.reason = "the parts' budgets overflow the fixed-point range";
        } else if (*need <= *g.budget) {
          o.verdict = VerdictKind::proved;
          o.reason = "the parts need at most " + same_scale(*need, *g.budget) + ", the budget is " +
                     same_scale(*g.budget, *need);
        } else {
          o.verdict = VerdictKind::refuted;
          o.reason = "the parts need up to " + same_scale(*need, *g.budget) +
                     " (sequential and parallel parts add up, a conditional takes its dearest "
                     "branch, a repeat multiplies), the budget is " +
                     same_scale(*g.budget, *need);
        }
        if (!budget_seen_.insert(n.group).second) return g.budget;
        add(std::move(o));
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
      o.verdict = VerdictKind::proved;
      o.reason = "writes no variable its enclosing composites forbid";
      for (const auto& w : writes_of_task(n.task)) {
        auto it = by.find(w);
        if (it == by.end()) continue;
        o.verdict = VerdictKind::refuted;
        o.reason =
            "`" + task(n.task).name + "` may write `" + w + "`, which " + it->second + " forbids";
        break;
      }
      if (forbidden_seen_.insert(o.id + "|" + o.reason).second) add(std::move(o));
    }
    for (const Node& c : n.children) forbidden_in(c, by);
  }
  std::set<std::string> forbidden_seen_;

  // ---- deciding the pending checks ----

  // Adds, until the counterexample satisfies every task's invariants, the invariants it
  // violates as premises: they hold throughout, so such a state is not a real one.
  void decide_one(verifier::ContractChecker& checker, Pending& p) {
    Facts premises_extra;
    std::set<std::pair<std::size_t, std::size_t>> added;
    auto relevant = [&](const std::set<std::string>& names) {
      for (std::size_t t = 0; t < m_.tasks.size(); ++t) {
        for (std::size_t k = 0; k < invariants_[t].size(); ++k) {
          if (added.count({t, k})) continue;
          if (disjoint(verifier::variables_of(invariants_[t][k]), names)) continue;
          added.insert({t, k});
          p.check.premises.push_back(invariants_[t][k]);
        }
      }
    };
    std::set<std::string> names = verifier::variables_of(p.check.conclusion);
    for (const auto& f : p.check.premises) {
      auto v = verifier::variables_of(f);
      names.insert(v.begin(), v.end());
    }
    if (p.check.actor) {
      for (const auto& eff : p.check.actor->actions[p.check.action].effects)
        names.insert(p.check.actor->variables[eff.variable].name);
    }
    relevant(names);
    for (;;) {
      const verifier::ContractOutcome r = checker.check(p.check);
      p.obligation.verdict = r.verdict;
      p.obligation.reason = r.reason;
      if (r.verdict != VerdictKind::refuted) return;
      // Which invariants does the counterexample's pre-state violate?
      std::set<std::string> violated;
      const kernel::State& start = m_.universe->initial_state();
      for (std::size_t t = 0; t < m_.tasks.size(); ++t) {
        const kernel::State s = project(start, *task(t).model, r.assignment);
        for (std::size_t k = 0; k < invariants_[t].size(); ++k) {
          if (added.count({t, k})) continue;
          const auto& f = invariants_[t][k];
          const kernel::EvalResult v =
              kernel::evaluate(*f.expr, kernel::EvalEnv{&s, nullptr, &s, nullptr});
          if (v.ok() && v.value.as_bool()) continue;
          added.insert({t, k});
          p.check.premises.push_back(f);
          violated.insert(f.label);
        }
      }
      if (violated.empty()) {
        p.obligation.counterexample = r.counterexample;
        return;
      }
    }
  }

  void decide() {
    std::mutex mutex;
    std::exception_ptr error;
    std::size_t next = 0;
    auto work = [&] {
      verifier::ContractChecker checker(options_.timeout_ms);
      for (;;) {
        std::size_t k;
        {
          std::lock_guard lock(mutex);
          if (next == pending_.size() || error) return;
          k = next++;
        }
        try {
          decide_one(checker, pending_[k]);
        } catch (...) {
          std::lock_guard lock(mutex);
          if (!error) error = std::current_exception();
        }
      }
    };
    std::vector<std::thread> threads;
    const unsigned jobs = std::max(1U, std::min<unsigned>(options_.jobs, pending_.size()));
    for (unsigned t = 1; t < jobs; ++t) threads.emplace_back(work);
    work();
    for (auto& t : threads) t.join();
    if (error) std::rethrow_exception(error);
    for (auto& p : pending_) {
      Obligation o = std::move(p.obligation);
      switch (o.verdict) {
        case VerdictKind::proved:
          ++report_.proved;
          break;
        case VerdictKind::refuted:
          ++report_.refuted;
          break;
        case VerdictKind::unknown:
          ++report_.unknown;
          break;
      }
      report_.obligations.push_back(std::move(o));
    }
  }
};

}  // namespace

ComposeReport compose(const Manifest& manifest, const ComposeOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  ComposeReport report;
  Composer(manifest, options, report).run();
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return report;
}

}  // namespace clampai::composition
