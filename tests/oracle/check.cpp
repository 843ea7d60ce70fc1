// The oracle: every state of the bounded domain and every parameter vector, decided by the
// kernel, against each verdict of the public verifier API.
#include <algorithm>
#include <exception>
#include <functional>
#include <optional>
#include <random>
#include <unordered_map>
#include <unordered_set>

#include "clampai/driver/lookahead.hpp"
#include "clampai/kernel.hpp"
#include "clampai/verifier/lookahead.hpp"
#include "clampai/verifier/repair.hpp"
#include "clampai/verifier/verify.hpp"
#include "oracle.hpp"

namespace clampai::oracle {

namespace ck = clampai::kernel;
namespace cv = clampai::verifier;
namespace cd = clampai::driver;
using nlohmann::json;

void Tally::add(const Tally& o) {
  specs += o.specs;
  load_errors += o.load_errors;
  obligations += o.obligations;
  lookaheads += o.lookaheads;
  repairs += o.repairs;
  states += o.states;
  transitions += o.transitions;
  for (const auto& [k, n] : o.verdicts) verdicts[k] += n;
  for (const auto& [k, n] : o.unknown_reasons) unknown_reasons[k] += n;
}

namespace {

using Params = std::vector<ck::Value>;

// Every value of a parameter or variable, by count (never stepping past a bound).
std::vector<ck::Value> numbers(const ck::Decimal& lo, const ck::Decimal& hi, int scale) {
  std::vector<ck::Value> out;
  const std::int64_t a = lo.rescaled(scale)->units, b = hi.rescaled(scale)->units;
  const __int128 count = static_cast<__int128>(b) - a + 1;
  for (__int128 k = 0; k < count; ++k)
    out.push_back(ck::Value::number(
        ck::Decimal{static_cast<std::int64_t>(a + k), static_cast<std::uint8_t>(scale)}));
  return out;
}

std::vector<ck::Value> domain_of(const ck::Variable& v) {
  switch (v.type.kind()) {
    case ck::Type::Kind::boolean:
      return {ck::Value::boolean(false), ck::Value::boolean(true)};
    case ck::Type::Kind::enumeration: {
      std::vector<ck::Value> out;
      for (const auto& s : v.type.enum_values()) out.push_back(ck::Value::string(s));
      return out;
    }
    case ck::Type::Kind::list: {
      // Lists of up to max_length items: the enumeration's values, or three numbers. A list of
      // numbers is an open domain (see `open_domain`).
      const ck::Type& el = *v.type.element();
      std::vector<ck::Value> items;
      if (el.kind() == ck::Type::Kind::enumeration) {
        for (const auto& s : el.enum_values()) items.push_back(ck::Value::string(s));
      } else {
        // The generator's literals: 0, 1, 2 (and 0.5 at a decimal scale, for 0).
        const auto s = static_cast<std::uint8_t>(el.scale());
        const std::int64_t one = ck::pow10(s);
        for (const std::int64_t u : {s > 0 ? one / 2 : 0, one, 2 * one})
          items.push_back(ck::Value::number(ck::Decimal{u, s}));
      }
      std::vector<ck::Value> out{ck::Value::list({})};
      std::vector<ck::Value::List> level{{}};
      for (std::int64_t n = 1; n <= static_cast<std::int64_t>(v.max_length.value_or(2)); ++n) {
        std::vector<ck::Value::List> next;
        for (const auto& prefix : level)
          for (const auto& x : items) {
            auto l = prefix;
            l.push_back(x);
            out.push_back(ck::Value::list(l));
            next.push_back(std::move(l));
          }
        level = std::move(next);
      }
      return out;
    }
    default:
      return numbers(*v.min, *v.max, v.type.scale());
  }
}

// True iff the verifier's states are more than the oracle's: a list of numbers holds any
// numbers, the oracle's domain a few. Then a verdict that something exists (a counterexample,
// a consistent set of invariants, an enabled action) may rest on a state outside the domain:
// a counterexample is replayed directly, the others are not checked in that direction.
bool open_domain(const ck::TaskModel& m) {
  return std::any_of(m.variables.begin(), m.variables.end(), [](const ck::Variable& v) {
    return v.type.kind() == ck::Type::Kind::list && v.type.element()->is_numeric();
  });
}

std::vector<Params> param_grid(const ck::Action& a, int widen = 0) {
  std::vector<Params> sets{{}};
  for (const ck::Parameter& p : a.parameters) {
    const int s = p.type.scale();
    ck::Decimal lo = *p.min->rescaled(s), hi = *p.max->rescaled(s);
    lo.units -= widen;
    hi.units += widen;
    std::vector<Params> next;
    for (const auto& prefix : sets)
      for (const ck::Value& v : numbers(lo, hi, s)) {
        auto x = prefix;
        x.push_back(v);
        next.push_back(std::move(x));
      }
    sets = std::move(next);
  }
  return sets;
}

std::string describe(const ck::TaskModel& m, const ck::State& s) {
  std::string out = "{";
  for (ck::VarId id = 0; id < m.variables.size(); ++id)
    out += (id ? ", " : "") + m.variables[id].name + "=" + s.get(id).to_string();
  return out + "}";
}

std::string describe(const Params& p) {
  std::string out = "(";
  for (std::size_t i = 0; i < p.size(); ++i) out += (i ? ", " : "") + p[i].to_string();
  return out + ")";
}

std::string key_of(const ck::Situation& s) {
  std::string k;
  for (ck::VarId id = 0; id < s.state.size(); ++id) k += s.state.get(id).to_string() + "|";
  k += std::to_string(s.budget.net()) + "|" + std::to_string(s.budget.gross()) + "|" +
       std::to_string(s.steps) + "|" + std::to_string(s.emergency_steps);
  for (auto c : s.completions) k += "|" + std::to_string(c);
  return k;
}

bool hypotheses_hold(const ck::TaskModel& m, const ck::State& s) {
  for (const ck::Invariant& inv : m.invariants)
    if (inv.enforcement == ck::Enforcement::blocking && !inv.transition && !ck::holds_in(inv, s))
      return false;
  return true;
}

// Every blocking invariant holds in `s`, transition invariants with old(x) = x: a kernel can
// start there.
bool can_start(const ck::TaskModel& m, const ck::State& s) {
  for (const ck::Invariant& inv : m.invariants)
    if (inv.enforcement == ck::Enforcement::blocking && !ck::holds_in(inv, s)) return false;
  return true;
}

// The kernel blocks the action for invariant `inv` although its `requires` holds.
bool blocked_for(const ck::Decision& d, const std::string& inv) {
  return !d.has(ck::ReasonCode::requires_failed) && d.has(ck::ReasonCode::invariant_violated, inv);
}

// The decision's reasons are all about the post-state: invariants and variable bounds.
bool only_state_reasons(const ck::Decision& d) {
  return std::all_of(d.reasons.begin(), d.reasons.end(), [](const ck::Reason& r) {
    return r.code == ck::ReasonCode::invariant_violated || r.code == ck::ReasonCode::bound_violated;
  });
}

class Checker {
 public:
  Checker(std::shared_ptr<const ck::TaskModel> m,
          std::uint64_t seed,
          const Features& f,
          const Checks& c,
          Tally& t)
      : model_(std::move(m)), m_(*model_), rng_(seed ^ 0x5EEDULL), f_(f), c_(c), t_(t) {
    for (const ck::Action& a : m_.actions) grids_.push_back(param_grid(a));
    states_.push_back(m_.initial_state());
    for (ck::VarId id = 0; id < m_.variables.size(); ++id) {
      std::vector<ck::State> next;
      const auto values = domain_of(m_.variables[id]);
      for (const ck::State& s : states_)
        for (const ck::Value& v : values) next.push_back(s.with(id, v));
      states_ = std::move(next);
    }
    t_.states += states_.size();
  }

  std::vector<Disagreement> out;

  void run() {
    const bool start_ok = can_start(m_, m_.initial_state());
    ++t_.verdicts[start_ok ? "initial.can_start" : "initial.breaks_an_invariant"];
    if (c_.verify) check_verify(start_ok);
    if (c_.lookahead) check_lookahead();
    if (c_.repair) check_repair();
  }

 private:
  std::shared_ptr<const ck::TaskModel> model_;
  const ck::TaskModel& m_;
  std::mt19937_64 rng_;
  const Features& f_;
  const Checks& c_;
  Tally& t_;
  std::vector<std::vector<Params>> grids_;
  std::vector<ck::State> states_;

  void disagree(std::string kind, std::string detail) {
    out.push_back({std::move(kind), std::move(detail)});
  }
  void count(const std::string& what, const std::string& reason = {}) {
    ++t_.verdicts[what];
    if (!reason.empty()) {
      std::string r = reason.substr(0, 60);
      for (char& ch : r)
        if (ch >= '0' && ch <= '9') ch = '#';
      ++t_.unknown_reasons[what.substr(0, what.find('.')) + ": " + r];
    }
  }

  // A situation at state `s`: nothing spent, no step taken, every action completed once (so
  // dependencies are met: preservation is about the state, not the history).
  ck::Situation at(const ck::State& s) const {
    ck::Situation x = ck::Situation::initial(m_);
    x.state = s;
    std::fill(x.completions.begin(), x.completions.end(), 1);
    return x;
  }

  // ---- verify, and --depth ----------------------------------------------------------------

  void check_verify(bool start_ok) {
    cv::VerifyOptions o;
    o.timeout_ms = 5000;
    const unsigned depth = (c_.depth && (start_ok || f_.depth_bad_initial)) ? 2 + rng_() % 2 : 0;
    o.depth = depth;
    cv::Report r;
    try {
      r = cv::verify(model_, o);
    } catch (const cv::InternalError& e) {
      disagree("verify.internal_error", e.what());
      return;
    } catch (const std::exception& e) {
      disagree("verify.exception", std::string(depth ? "with --depth: " : "") + e.what());
      return;
    }
    for (const cv::Obligation& ob : r.obligations) {
      ++t_.obligations;
      const std::string v(cv::to_string(ob.verdict));
      if (ob.kind == cv::ObligationKind::base_case && !ob.invariant.empty()) {
        count("base." + v, ob.verdict == cv::VerdictKind::unknown ? ob.reason : "");
        const ck::Invariant* inv = find_inv(ob.invariant);
        if (inv == nullptr) continue;
        const bool holds = ck::holds_in(*inv, m_.initial_state());
        if ((ob.verdict == cv::VerdictKind::proved && !holds) ||
            (ob.verdict == cv::VerdictKind::refuted && holds))
          disagree("verify.base_wrong",
                   ob.id + ": " + v + ", but the kernel says the initial state " +
                       (holds ? "satisfies" : "breaks") + " it");
      } else if (ob.kind == cv::ObligationKind::preservation) {
        count("preservation." + v, ob.verdict == cv::VerdictKind::unknown ? ob.reason : "");
        check_preservation(ob, depth);
      } else if (ob.kind == cv::ObligationKind::lint && ob.id == "lint:consistent") {
        count("lint.consistent." + v);
        const bool some = std::any_of(
            states_.begin(), states_.end(), [&](const auto& s) { return hypotheses_hold(m_, s); });
        if ((ob.verdict == cv::VerdictKind::proved) != some &&
            ob.verdict != cv::VerdictKind::unknown)
          if (!(open_domain(m_) && ob.verdict == cv::VerdictKind::proved))
            disagree("verify.lint_consistent_wrong",
                     ob.id + ": " + v + ", but " + (some ? "a" : "no") +
                         " state within the bounds satisfies every blocking state invariant");
      } else if (ob.kind == cv::ObligationKind::lint && ob.id.rfind("lint:enabled:", 0) == 0) {
        count("lint.enabled." + v);
        check_enabled(ob, v);
      } else {
        count(std::string(cv::to_string(ob.kind)) + "." + v);
      }
    }
  }

  // lint:enabled:<a> is proved iff some state satisfying the hypotheses, with some parameter
  // vector, satisfies a's `requires`.
  void check_enabled(const cv::Obligation& ob, const std::string& v) {
    const auto a = m_.find_action(ob.id.substr(std::string("lint:enabled:").size()));
    if (!a || ob.verdict == cv::VerdictKind::unknown) return;
    bool enabled = false;
    for (const ck::State& s : states_) {
      if (enabled || !hypotheses_hold(m_, s)) continue;
      for (const Params& p : grids_[*a])
        enabled = enabled ||
                  !ck::decide(m_, at(s), ck::Proposal{*a, p}).has(ck::ReasonCode::requires_failed);
    }
    if ((ob.verdict == cv::VerdictKind::proved) != enabled &&
        !(open_domain(m_) && ob.verdict == cv::VerdictKind::proved))
      disagree("verify.lint_enabled_wrong",
               ob.id + ": " + v + ", but `requires` " + (enabled ? "holds" : "never holds") +
                   " in some state satisfying the invariants");
  }

  const ck::Invariant* find_inv(const std::string& name) const {
    for (const ck::Invariant& inv : m_.invariants)
      if (inv.name == name) return &inv;
    return nullptr;
  }

  void check_preservation(const cv::Obligation& ob, unsigned depth) {
    const auto a = m_.find_action(ob.action);
    if (!a) return;
    // Brute force: a pre-state within the bounds where every blocking state invariant holds,
    // and a parameter vector, for which the kernel blocks the action for the invariant.
    // `strict`: the kernel rejects it for invariants and bounds only (a violation whatever the
    // verifier assumes about cost); `violation`: for the invariant, perhaps among other reasons.
    std::optional<std::string> violation, strict;
    for (const ck::State& s : states_) {
      if (!hypotheses_hold(m_, s)) continue;
      const ck::Situation here = at(s);
      for (const Params& p : grids_[*a]) {
        ++t_.transitions;
        const ck::Decision d = ck::decide(m_, here, ck::Proposal{*a, p});
        if (!blocked_for(d, ob.invariant)) continue;
        const std::string where = describe(m_, s) + " with parameters " + describe(p);
        if (!violation) violation = where;
        if (only_state_reasons(d)) {
          strict = where;
          break;
        }
      }
      if (strict) break;
    }
    if (ob.verdict == cv::VerdictKind::proved && violation && !strict)
      ++t_.verdicts["preservation.proved_other_reasons"];
    if (ob.verdict == cv::VerdictKind::proved && strict)
      disagree("verify.false_proved",
               ob.id + ": proved, but the kernel rejects it for the invariant in " + *strict);
    if (ob.verdict == cv::VerdictKind::refuted && !violation &&
        !(open_domain(m_) && ob.counterexample && replays(ob, *a)))
      disagree("verify.false_refuted",
               ob.id + ": refuted, but no state within the bounds breaks it");
    if (ob.verdict == cv::VerdictKind::refuted && ob.counterexample && !replays(ob, *a))
      disagree("verify.cex_no_replay", ob.id + ": the counterexample does not replay");
    if (ob.verdict == cv::VerdictKind::refuted && depth > 0) check_depth(ob, *a, depth);
  }

  // Some state of the domain agreeing with the counterexample's named variables, satisfying the
  // hypotheses, in which the kernel blocks the action with its parameters for the invariant.
  bool replays(const cv::Obligation& ob, std::size_t a) {
    const cv::Counterexample& cx = *ob.counterexample;
    Params p;
    for (const ck::Parameter& par : m_.actions[a].parameters) {
      const auto it = std::find_if(
          cx.params.begin(), cx.params.end(), [&](const auto& kv) { return kv.first == par.name; });
      if (it == cx.params.end()) return false;
      p.push_back(it->second);
    }
    for (const ck::State& s : states_) {
      bool match = true;
      for (const auto& [name, v] : cx.pre) {
        const ck::Value& here = s.get(name);
        match = match && here.to_string() == v.to_string();
      }
      if (match && hypotheses_hold(m_, s) &&
          blocked_for(ck::decide(m_, at(s), ck::Proposal{a, p}), ob.invariant))
        return true;
    }
    if (!open_domain(m_)) return false;
    // Outside the domain: the counterexample's own state.
    ck::State s = m_.initial_state();
    for (const auto& [name, v] : cx.pre) {
      const auto id = m_.schema->find(name);
      if (!id) return false;
      s = s.with(*id, v);
    }
    return hypotheses_hold(m_, s) &&
           blocked_for(ck::decide(m_, at(s), ck::Proposal{a, p}), ob.invariant);
  }

  // Every situation the kernel reaches from the initial one within `depth` approved steps.
  std::vector<std::pair<ck::Situation, unsigned>> reachable(unsigned depth) {
    std::vector<std::pair<ck::Situation, unsigned>> nodes{{ck::Situation::initial(m_), 0}};
    std::unordered_set<std::string> seen{key_of(nodes[0].first)};
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      if (nodes[i].second >= depth) continue;
      for (std::size_t a = 0; a < m_.actions.size(); ++a)
        for (const Params& p : grids_[a]) {
          const ck::Decision d = ck::decide(m_, nodes[i].first, ck::Proposal{a, p});
          if (!d.approved) continue;
          ck::Situation next = ck::advance(m_, nodes[i].first, d);
          if (seen.insert(key_of(next)).second) nodes.emplace_back(next, nodes[i].second + 1);
        }
    }
    return nodes;
  }

  void check_depth(const cv::Obligation& ob, std::size_t a, unsigned depth) {
    using S = cv::Reachability::Status;
    const cv::Reachability& r = ob.reachability;
    static const char* names[] = {"not_checked", "reachable", "unreachable", "unknown"};
    count(std::string("depth.") + names[static_cast<int>(r.status)],
          r.status == S::unknown ? r.reason : "");
    // loose: blocked for the invariant; strict: for nothing else but invariants and bounds.
    bool loose = false, strict = false;
    for (const auto& [sit, d] : reachable(depth)) {
      for (const Params& p : grids_[a]) {
        const ck::Decision dec = ck::decide(m_, sit, ck::Proposal{a, p});
        if (!blocked_for(dec, ob.invariant)) continue;
        loose = true;
        strict = strict || only_state_reasons(dec);
      }
      if (strict) break;
    }
    const std::string id = ob.id + " (--depth " + std::to_string(depth) + ")";
    if (r.status == S::not_checked) disagree("depth.not_checked", id + ": refuted, not searched");
    if (r.status == S::unreachable && strict)
      disagree("depth.false_unreachable",
               id + ": unreachable, but the kernel reaches a state where it blocks the action");
    if (r.status == S::unreachable && loose && !strict) ++t_.verdicts["depth.ambiguous"];
    if (r.status == S::unknown)
      ++t_.verdicts[loose ? "depth.unknown_was.reachable" : "depth.unknown_was.unreachable"];
    if (r.status == S::unknown && f_.depth_strict && !loose)
      disagree("depth.unknown", id + ": unknown (" + r.reason + "), the answer is unreachable");
    if (r.status == S::reachable) {
      if (!loose)
        disagree("depth.false_reachable", id + ": reachable, but the kernel never blocks it");
      if (r.witness.size() > depth) disagree("depth.witness_too_long", id);
      ck::Situation s = ck::Situation::initial(m_);
      bool ok = true;
      for (const auto& [act, params] : r.witness) {
        const auto i = m_.find_action(act);
        if (!i) return disagree("depth.witness_no_replay", id + ": unknown action " + act);
        Params p;
        for (const auto& par : m_.actions[*i].parameters)
          for (const auto& [n, v] : params)
            if (n == par.name) p.push_back(v);
        const ck::Decision d = ck::decide(m_, s, ck::Proposal{*i, p});
        if (!d.approved) {
          ok = false;
          break;
        }
        s = ck::advance(m_, s, d);
      }
      bool blocked = false;
      for (const Params& p : grids_[a])
        blocked =
            blocked || (ok && blocked_for(ck::decide(m_, s, ck::Proposal{a, p}), ob.invariant));
      if (!blocked)
        disagree("depth.witness_no_replay",
                 id + ": the witness does not replay through the kernel");
    }
  }

  // ---- lookahead: both engines against an independent exhaustive search --------------------

  struct Truth {
    std::optional<unsigned> basin;  // shortest depth at which a basin is reached
    bool dead_end = false;
    std::optional<ck::Amount> goal_cost;
  };

  void explore(const ck::Situation& s, unsigned d, unsigned depth, ck::Amount base, Truth& t) {
    if (m_.goal_holds(s.state)) {
      const ck::Amount c = s.budget.net() - base;
      if (!t.goal_cost || c < *t.goal_cost) t.goal_cost = c;
      return;
    }
    if (d > 0 && m_.basin_of(s.state) != nullptr) {
      if (!t.basin || d < *t.basin) t.basin = d;
      return;
    }
    bool progress = false;
    for (std::size_t a = 0; a < m_.actions.size(); ++a)
      for (const Params& p : grids_[a]) {
        const ck::Decision dec = ck::decide(m_, s, ck::Proposal{a, p});
        if (!dec.approved) continue;
        if (!m_.actions[a].emergency) progress = true;
        if (d < depth) explore(ck::advance(m_, s, dec), d + 1, depth, base, t);
      }
    if (!progress) t.dead_end = true;
  }

  void check_lookahead() {
    // From the initial situation and from one situation reached after a step, when there is one.
    std::vector<ck::Situation> starts{ck::Situation::initial(m_)};
    const auto more = reachable(1);
    if (more.size() > 1) starts.push_back(more[1 + rng_() % (more.size() - 1)].first);
    const unsigned depth = 1 + rng_() % 3;
    for (const ck::Situation& start : starts)
      for (std::size_t a = 0; a < m_.actions.size(); ++a) {
        const Params& p = grids_[a][rng_() % grids_[a].size()];
        const ck::Proposal prop{a, p};
        const ck::Decision d = ck::decide(m_, start, prop);
        Truth truth;
        std::vector<std::string> entered;
        if (d.approved) {
          const ck::Situation root = ck::advance(m_, start, d);
          entered = cd::basins_entered(m_, root.state);
          explore(root, 0, depth, root.budget.net(), truth);
        }
        cd::LookaheadOptions o;
        o.depth = depth;
        const std::string what = "`" + m_.actions[a].id + "` " + describe(p) + " at " +
                                 describe(m_, start.state) + ", depth " + std::to_string(depth);
        ++t_.lookaheads;
        try {
          compare("explicit", what, cd::lookahead(m_, start, prop, o), d, entered, truth, start);
        } catch (const std::exception& e) {
          disagree("lookahead.explicit.exception", what + ": " + e.what());
        }
        try {
          compare("symbolic",
                  what,
                  cv::symbolic_lookahead(m_, start, prop, o, 5000),
                  d,
                  entered,
                  truth,
                  start);
        } catch (const std::exception& e) {
          disagree("lookahead.symbolic.exception", what + ": " + e.what());
        }
      }
  }

  // Replays `plan` from `from`; nullopt if a step is not approved.
  std::optional<ck::Situation> replay(ck::Situation s, const cd::Plan& plan) {
    for (const cd::PlannedStep& step : plan) {
      const ck::Decision d = ck::decide(m_, s, ck::Proposal{step.action, step.params});
      if (!d.approved) return std::nullopt;
      s = ck::advance(m_, s, d);
    }
    return s;
  }

  void compare(const std::string& engine,
               const std::string& what,
               const cd::LookaheadResult& r,
               const ck::Decision& d,
               std::vector<std::string> entered,
               const Truth& t,
               const ck::Situation& start) {
    const std::string k = "lookahead." + engine + ".";
    count(k + (r.complete ? "complete" : "incomplete"), r.complete ? "" : r.incomplete_reason);
    if (r.decision.approved != d.approved)
      return disagree(k + "decision", what + ": the engine's decision differs from the kernel's");
    if (!d.approved) return;
    auto got = r.entered;
    std::sort(got.begin(), got.end());
    std::sort(entered.begin(), entered.end());
    if (got != entered) disagree(k + "entered", what);
    const ck::Situation root = ck::advance(m_, start, d);
    // What an engine found must be true; what it did not find must be absent when complete.
    if (r.reachable_basin) {
      const auto end = replay(root, r.basin_witness);
      if (!t.basin || !end || m_.basin_of(end->state) == nullptr)
        disagree(k + "basin_false", what + ": a basin witness the kernel does not confirm");
      else if (r.basin_witness.size() != *t.basin)
        disagree(k + "basin_not_shortest",
                 what + ": witness of " + std::to_string(r.basin_witness.size()) +
                     " steps, the shortest has " + std::to_string(*t.basin));
    } else if (t.basin && r.complete) {
      disagree(k + "basin_missed", what + ": a basin is reachable in " + std::to_string(*t.basin));
    }
    if (r.dead_end && !t.dead_end) disagree(k + "dead_end_false", what);
    if (!r.dead_end && t.dead_end && r.complete) disagree(k + "dead_end_missed", what);
    if (r.goal_reachable) {
      const auto end = replay(root, r.cheapest_plan);
      if (!t.goal_cost || !end || !m_.goal_holds(end->state))
        disagree(k + "goal_false", what + ": a plan the kernel does not confirm");
      else if (r.cheapest_cost != *t.goal_cost)
        disagree(k + "goal_not_cheapest",
                 what + ": cost " + m_.format_amount(r.cheapest_cost) + ", the cheapest is " +
                     m_.format_amount(*t.goal_cost));
    } else if (t.goal_cost && r.complete) {
      disagree(k + "goal_missed",
               what + ": the goal is reachable at cost " + m_.format_amount(*t.goal_cost));
    }
  }

  // ---- repair --------------------------------------------------------------------------------

  // Distance in the norm, in units of the finest parameter scale (squared for l2).
  __int128 distance(const ck::Action& a, const Params& x, const Params& p, cv::RepairNorm norm) {
    int top = 0;
    for (const auto& par : a.parameters) top = std::max(top, par.type.scale());
    __int128 sum = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
      const int s = a.parameters[i].type.scale();
      __int128 diff = static_cast<__int128>(x[i].as_number().rescaled(s)->units) -
                      p[i].as_number().rescaled(s)->units;
      for (int k = s; k < top; ++k) diff *= 10;
      sum += norm == cv::RepairNorm::l1 ? (diff < 0 ? -diff : diff) : diff * diff;
    }
    return sum;
  }

  void check_repair() {
    std::vector<ck::Situation> starts{ck::Situation::initial(m_)};
    const auto more = reachable(1);
    if (more.size() > 1) starts.push_back(more[1 + rng_() % (more.size() - 1)].first);
    for (const ck::Situation& start : starts)
      for (std::size_t a = 0; a < m_.actions.size(); ++a) {
        const ck::Action& act = m_.actions[a];
        if (act.parameters.empty()) continue;
        const auto wide = param_grid(act, 2);  // proposals may lie outside the bounds
        const Params p = wide[rng_() % wide.size()];
        const ck::Proposal prop{a, p};
        const std::string what =
            "`" + act.id + "` " + describe(p) + " at " + describe(m_, start.state);
        ++t_.repairs;
        cv::RepairResult r;
        try {
          r = cv::repair(m_, start, prop);
        } catch (const std::exception& e) {
          disagree("repair.exception", what + ": " + e.what());
          continue;
        }
        count(std::string("repair.") + std::string(cv::to_string(r.status)),
              r.status == cv::RepairStatus::unknown ? r.reason : "");
        const bool approved = ck::decide(m_, start, prop).approved;
        std::optional<__int128> best;
        for (const Params& x : grids_[a])
          if (ck::decide(m_, start, ck::Proposal{a, x}).approved) {
            const __int128 dist = distance(act, x, p, r.norm);
            if (!best || dist < *best) best = dist;
          }
        using RS = cv::RepairStatus;
        if ((r.status == RS::approved) != approved)
          disagree("repair.approved_wrong", what + ": status " + std::string(to_string(r.status)));
        if (r.status == RS::impossible && best)
          disagree("repair.false_impossible", what + ": NO REPAIR, but an approved vector exists");
        if (r.status == RS::repaired) {
          if (r.repaired.action != a || !ck::decide(m_, start, r.repaired).approved)
            disagree("repair.not_approved",
                     what + ": the kernel rejects the repair " + describe(r.repaired.params));
          else if (r.certificate.optimal && best &&
                   distance(act, r.repaired.params, p, r.norm) != *best)
            disagree("repair.not_minimal",
                     what + ": repaired to " + describe(r.repaired.params) +
                         ", certified optimal, but a closer approved vector exists");
        }
      }
  }
};

}  // namespace

std::vector<Disagreement> check_spec(const json& spec,
                                     std::uint64_t seed,
                                     const Features& features,
                                     const Checks& checks,
                                     Tally& tally) {
  std::shared_ptr<const ck::TaskModel> m;
  try {
    m = ck::load_spec(spec.dump());
  } catch (const std::exception&) {
    ++tally.load_errors;
    return {};
  }
  ++tally.specs;
  Checker c(m, seed, features, checks, tally);
  c.run();
  return std::move(c.out);
}

json with_valid_initial(json spec, std::uint64_t seed) {
  std::shared_ptr<const ck::TaskModel> m;
  try {
    m = ck::load_spec(spec.dump());
  } catch (const std::exception&) {
    return spec;
  }
  if (can_start(*m, m->initial_state())) return spec;
  std::vector<ck::State> states{m->initial_state()};
  for (ck::VarId id = 0; id < m->variables.size(); ++id) {
    std::vector<ck::State> next;
    for (const ck::State& s : states)
      for (const ck::Value& v : domain_of(m->variables[id])) next.push_back(s.with(id, v));
    states = std::move(next);
  }
  std::vector<const ck::State*> good;
  for (const ck::State& s : states)
    if (can_start(*m, s)) good.push_back(&s);
  if (good.empty()) return spec;
  const ck::State& s = *good[seed % good.size()];
  for (ck::VarId id = 0; id < m->variables.size(); ++id) {
    const ck::Value& v = s.get(id);
    json& slot = spec["variables"][m->variables[id].name]["initial"];
    if (v.kind() == ck::Value::Kind::boolean) {
      slot = v.as_bool();
    } else if (v.kind() == ck::Value::Kind::list) {
      slot = json::array();
      for (const ck::Value& x : v.as_list())
        slot.push_back(x.kind() == ck::Value::Kind::number ? x.as_number().to_string()
                                                           : x.as_string());
    } else if (v.kind() == ck::Value::Kind::number) {
      slot = v.as_number().to_string();
    } else {
      slot = v.as_string();
    }
  }
  return spec;
}

namespace {

// Candidates one part smaller than `spec`.
std::vector<json> shrink(const json& spec) {
  std::vector<json> out;
  auto without = [&](const char* key, std::size_t i) {
    json s = spec;
    s[key].erase(i);
    if (s[key].empty()) s.erase(key);
    return s;
  };
  for (const char* key : {"capture_basins", "invariants"})
    if (spec.contains(key))
      for (std::size_t i = 0; i < spec[key].size(); ++i) out.push_back(without(key, i));
  for (const char* key : {"goal", "dependencies", "emergency_actions"})
    if (spec.contains(key)) {
      json s = spec;
      s.erase(key);
      out.push_back(s);
    }
  if (spec["budget"].contains("max_steps")) {
    json s = spec;
    s["budget"].erase("max_steps");
    out.push_back(s);
  }
  for (std::size_t i = 0; i < spec["actions"].size(); ++i) {
    if (spec["actions"].size() > 1) out.push_back(without("actions", i));
    const json& a = spec["actions"][i];
    if (a.contains("requires")) {
      json s = spec;
      s["actions"][i].erase("requires");
      out.push_back(s);
    }
    for (std::size_t j = 0; j < a["effects"].size(); ++j) {
      json s = spec;
      s["actions"][i]["effects"].erase(j);
      out.push_back(s);
    }
  }
  // Expressions: a boolean one replaced by a constant, any one by one of its parenthesized
  // subterms (shortest first); candidates that do not type-check are rejected by the loader.
  auto simpler = [&](const json::json_pointer& where, bool boolean) {
    if (!spec.contains(where) || !spec[where].is_string()) return;
    const std::string text = spec[where].get<std::string>();
    std::vector<std::string> subs;
    if (boolean) subs = {"true", "false"};
    std::vector<std::size_t> open;
    std::vector<std::string> inner;
    for (std::size_t i = 0; i < text.size(); ++i) {
      if (text[i] == '(') open.push_back(i);
      if (text[i] == ')' && !open.empty()) {
        inner.push_back(text.substr(open.back() + 1, i - open.back() - 1));
        open.pop_back();
      }
    }
    std::sort(inner.begin(), inner.end(), [](const auto& x, const auto& y) {
      return x.size() < y.size();
    });
    subs.insert(subs.end(), inner.begin(), inner.end());
    for (const std::string& sub : subs) {
      if (sub == text || sub.empty()) continue;
      json s = spec;
      s[where] = sub;
      out.push_back(s);
    }
  };
  for (std::size_t i = 0; i < spec["actions"].size(); ++i) {
    const std::string a = "/actions/" + std::to_string(i);
    simpler(json::json_pointer(a + "/requires"), true);
    for (std::size_t j = 0; j < spec["actions"][i]["effects"].size(); ++j)
      simpler(json::json_pointer(a + "/effects/" + std::to_string(j) + "/value"), false);
    if (spec["actions"][i].contains("parameters"))
      for (const auto& [name, v] : spec["actions"][i]["parameters"].items()) {
        json s = spec;
        s["actions"][i]["parameters"].erase(name);
        if (s["actions"][i]["parameters"].empty()) s["actions"][i].erase("parameters");
        out.push_back(s);
      }
  }
  for (const char* key : {"invariants", "capture_basins"})
    if (spec.contains(key))
      for (std::size_t i = 0; i < spec[key].size(); ++i)
        simpler(json::json_pointer("/" + std::string(key) + "/" + std::to_string(i) + "/check"),
                true);
  simpler(json::json_pointer("/goal"), true);
  for (const auto& [name, v] : spec["variables"].items()) {
    json s = spec;
    s["variables"].erase(name);
    out.push_back(s);
  }
  return out;
}

}  // namespace

json minimize(const json& spec,
              const std::string& kind,
              std::uint64_t seed,
              const Features& features) {
  Checks checks;
  const std::string area = kind.substr(0, kind.find('.'));
  checks.verify = area == "verify" || area == "depth";
  checks.depth = area == "depth";
  checks.lookahead = area == "lookahead";
  checks.repair = area == "repair";
  json best = spec;
  for (bool changed = true; changed;) {
    changed = false;
    for (const json& candidate : shrink(best)) {
      Tally scratch;
      const auto found = check_spec(candidate, seed, features, checks, scratch);
      if (std::any_of(found.begin(), found.end(), [&](const auto& d) { return d.kind == kind; })) {
        best = candidate;
        changed = true;
        break;
      }
    }
  }
  return best;
}

}  // namespace clampai::oracle
