// The explicit lookahead engine: breadth-first over situations, each step decided by the
// kernel's own `decide`, with memoisation on (state, spend, steps, completions).
#include "clampai/driver/lookahead.hpp"

#include <algorithm>
#include <chrono>
#include <deque>
#include <functional>
#include <string_view>

namespace clampai::driver {

using kernel::Action;
using kernel::CaptureBasin;
using kernel::Decimal;
using kernel::EvalEnv;
using kernel::EvalResult;
using kernel::Parameter;
using kernel::ReasonCode;
using kernel::VarId;

namespace {

constexpr std::size_t kNone = static_cast<std::size_t>(-1);

std::uint64_t mix(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

std::uint64_t hash_value(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::undefined:
      return 0x51ED270B27ULL;
    case Value::Kind::boolean:
      return mix(v.as_bool() ? 2 : 1);
    case Value::Kind::number: {
      // Equal numbers at different scales are different values here: every variable has one
      // scale, so that never splits one state in two.
      const Decimal& d = v.as_number();
      return mix(static_cast<std::uint64_t>(d.units) * 31 + d.scale);
    }
    case Value::Kind::string:
      return mix(std::hash<std::string_view>{}(v.as_string()));
    case Value::Kind::list: {
      std::uint64_t h = 0x1157ULL;
      for (const Value& item : v.as_list()) h = mix(h ^ hash_value(item));
      return h;
    }
  }
  return 0;
}

// A state's hash is the xor of one term per variable, so a step updates it in O(changes).
std::uint64_t var_term(VarId id, const Value& v) {
  return mix(hash_value(v) ^ (static_cast<std::uint64_t>(id) * 0xD6E8FEB86659FD93ULL));
}

// A term per action of the completions' hash, so a step updates it in O(1).
std::uint64_t done_term(std::size_t action, std::uint64_t count) {
  return mix((static_cast<std::uint64_t>(action) << 40) ^ count ^ 0xC0FFEE1234ULL);
}

// The newest node of each key: open addressing in one array (no allocation per situation, as
// a node-based map has).
class KeyIndex {
 public:
  // The slot of `key`'s node (kNone if none), to read or set.
  std::size_t& at(std::uint64_t key) {
    if ((count_ + 1) * 2 > slots_.size()) grow();
    std::size_t i = static_cast<std::size_t>(key) & (slots_.size() - 1);
    while (slots_[i].second != kNone && slots_[i].first != key) i = (i + 1) & (slots_.size() - 1);
    if (slots_[i].second == kNone) {
      slots_[i].first = key;
      ++count_;  // claimed (an upper bound of the keys stored: it only makes growth earlier)
    }
    return slots_[i].second;
  }

 private:
  void grow() {
    std::vector<std::pair<std::uint64_t, std::size_t>> old(
        std::max<std::size_t>(64, slots_.size() * 2), {0, kNone});
    old.swap(slots_);
    for (const auto& [k, v] : old) {
      if (v == kNone) continue;
      std::size_t i = static_cast<std::size_t>(k) & (slots_.size() - 1);
      while (slots_[i].second != kNone) i = (i + 1) & (slots_.size() - 1);
      slots_[i] = {k, v};
    }
  }
  std::vector<std::pair<std::uint64_t, std::size_t>> slots_;
  std::size_t count_ = 0;
};

struct Node {
  explicit Node(Situation s) : situation(std::move(s)) {}
  Situation situation;
  std::uint64_t state_hash = 0;
  std::uint64_t done_hash = 0;
  std::size_t parent = kNone;
  std::size_t same_key = kNone;  // the previous node with the same key (a hash collision)
  PlannedStep step{};
  unsigned depth = 0;
};

class Search {
 public:
  Search(const TaskModel& m, const LookaheadOptions& o)
      : m_(m), o_(o), started_(std::chrono::steady_clock::now()), deadline_(o.deadline) {
    if (o.timeout_ms > 0)
      deadline_ = std::min(deadline_, started_ + std::chrono::milliseconds(o.timeout_ms));
    enumerate_params();
  }

  std::deque<Node> nodes;  // references stay valid as it grows
  bool complete = true;
  std::string incomplete_reason;

  void set_root(Situation s) {
    std::uint64_t h = 0;
    for (VarId id = 0; id < s.state.size(); ++id) h ^= var_term(id, s.state.get(id));
    std::uint64_t dh = 0;
    for (std::size_t a = 0; a < s.completions.size(); ++a) dh ^= done_term(a, s.completions[a]);
    Node n(std::move(s));
    n.state_hash = h;
    n.done_hash = dh;
    const std::uint64_t key = key_of(n.state_hash,
                                     n.done_hash,
                                     n.situation.budget.net(),
                                     n.situation.steps,
                                     n.situation.emergency_steps);
    index_.at(key) = nodes.size();
    nodes.push_back(std::move(n));
  }

  // Expands node `i`: adds its unseen children (when `add` is set) and says whether any
  // non-emergency action is (or, where the search cannot tell, may be) approvable there: an
  // incomplete search never reports a dead end it has not seen.
  bool expand(std::size_t i, bool add) {
    bool progress = false;
    for (std::size_t a = 0; a < m_.actions.size(); ++a) {
      if (!enumerable_[a]) {
        if (!m_.actions[a].emergency) progress = true;  // unknown: not enumerated
        continue;
      }
      for (const auto& params : params_[a]) {
        if (out_of_time()) return true;  // the rest was not looked at: no dead end claimed
        const Situation& s = nodes[i].situation;
        // One decision and one proposal reused for every decision of the search.
        proposal_.action = a;
        proposal_.params = params;
        decide_into(m_, s, proposal_, decision_);
        const Decision& d = decision_;
        if (!d.approved) continue;
        if (!m_.actions[a].emergency) progress = true;
        if (!add) {
          if (progress) return true;
          continue;
        }
        // The child's key from the parent's, and a known equal situation is not built again
        // (breadth-first: the known one is no deeper).
        const Node& parent = nodes[i];
        std::uint64_t state_hash = parent.state_hash;
        for (const auto& [id, v] : d.changes)
          state_hash ^= var_term(id, s.state.get(id)) ^ var_term(id, v);
        const std::uint64_t c = s.completions[a];
        const std::uint64_t done_hash = parent.done_hash ^ done_term(a, c) ^ done_term(a, c + 1);
        const bool emergency = m_.actions[a].emergency;
        const std::uint64_t key = key_of(state_hash,
                                         done_hash,
                                         s.budget.net() + d.cost,
                                         s.steps + (emergency ? 0 : 1),
                                         s.emergency_steps + (emergency ? 1 : 0));
        const std::size_t newest = index_.at(key);
        std::size_t j = newest;
        while (j != kNone && !is_child(nodes[j].situation, s, a, d)) j = nodes[j].same_key;
        if (j != kNone) continue;
        if (nodes.size() >= o_.max_situations) {
          mark_incomplete("search budget exhausted: the search stopped after " +
                          std::to_string(o_.max_situations) + " situations");
          return true;  // the rest of this situation's actions were not looked at
        }
        Node child(advance(m_, s, d));
        child.state_hash = state_hash;
        child.done_hash = done_hash;
        child.parent = i;
        child.step = PlannedStep{a, params, d.cost};
        child.depth = nodes[i].depth + 1;
        child.same_key = newest;
        nodes.push_back(std::move(child));
        index_.at(key) = nodes.size() - 1;
      }
    }
    return progress;
  }

  [[nodiscard]] const TaskModel& model() const { return m_; }
  [[nodiscard]] const LookaheadOptions& options() const { return o_; }

  // True once the deadline has passed (then the search is marked incomplete). The clock is
  // read every 64 calls: a decision costs well under a microsecond.
  bool out_of_time() {
    if (!complete && timed_out_) return true;
    if (deadline_ == std::chrono::steady_clock::time_point::max() || (++polls_ & 63) != 1)
      return false;
    if (std::chrono::steady_clock::now() < deadline_) return false;
    timed_out_ = true;
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                        std::chrono::steady_clock::now() - started_)
                        .count();
    mark_incomplete("search budget exhausted: the time limit was reached after " +
                    std::to_string(ms) + " ms and " + std::to_string(nodes.size()) + " situations");
    return true;
  }

  [[nodiscard]] Plan plan_to(std::size_t i) const {
    Plan p;
    for (; nodes[i].parent != kNone; i = nodes[i].parent) p.push_back(nodes[i].step);
    return {p.rbegin(), p.rend()};
  }

 private:
  const TaskModel& m_;
  const LookaheadOptions& o_;
  std::chrono::steady_clock::time_point started_, deadline_;
  std::uint64_t polls_ = 0;
  bool timed_out_ = false;
  Proposal proposal_;
  Decision decision_;
  std::vector<bool> enumerable_;
  std::vector<std::vector<std::vector<Value>>> params_;
  // The newest node of each key; older ones with the same key follow `Node::same_key`.
  KeyIndex index_;

  void mark_incomplete(std::string why) {
    if (complete) incomplete_reason = std::move(why);
    complete = false;
  }

  void enumerate_params() {
    for (const Action& a : m_.actions) {
      std::vector<std::vector<Value>> sets{{}};
      bool ok = true;
      for (const Parameter& p : a.parameters) {
        if (!p.min || !p.max) {
          ok = false;
          mark_incomplete("parameter `" + p.name + "` of `" + a.id +
                          "` has no bounds: its values cannot be enumerated");
          break;
        }
        const auto lo = p.min->rescaled(p.type.scale());
        const auto hi = p.max->rescaled(p.type.scale());
        // In 128 bits: a range as wide as int64 must not wrap around.
        const __int128 count = static_cast<__int128>(hi->units) - lo->units + 1;
        if (count <= 0 || count > static_cast<__int128>(o_.max_param_values /
                                                        std::max<std::size_t>(1, sets.size()))) {
          ok = false;
          mark_incomplete("the parameters of `" + a.id + "` span more than " +
                          std::to_string(o_.max_param_values) + " values");
          break;
        }
        // By count, never by a value that is stepped past the bound: with `max` = 2^63 - 1 an
        // induction variable `u <= max; ++u` would wrap around and never stop.
        std::vector<std::vector<Value>> next;
        for (const auto& prefix : sets) {
          for (__int128 k = 0; k < count; ++k) {
            const auto u = static_cast<std::int64_t>(lo->units + k);
            auto v = prefix;
            v.push_back(Value::number(Decimal{u, static_cast<std::uint8_t>(p.type.scale())}));
            next.push_back(std::move(v));
          }
        }
        sets = std::move(next);
      }
      enumerable_.push_back(ok);
      params_.push_back(ok ? std::move(sets) : std::vector<std::vector<Value>>{});
    }
  }

  static std::uint64_t key_of(std::uint64_t state_hash,
                              std::uint64_t done_hash,
                              Amount net,
                              std::uint64_t steps,
                              std::uint64_t emergency_steps) {
    std::uint64_t h = mix(state_hash ^ static_cast<std::uint64_t>(net));
    return mix(h ^ done_hash ^ steps ^ (emergency_steps << 32));
  }

  // True iff `known` is the situation `decision` (approved, of action `a`) leads to from `s`,
  // without building that situation.
  bool is_child(const Situation& known,
                const Situation& s,
                std::size_t a,
                const Decision& d) const {
    const bool emergency = m_.actions[a].emergency;
    if (known.budget.net() != s.budget.net() + d.cost ||
        known.budget.gross() != s.budget.gross() + d.cost ||
        known.steps != s.steps + (emergency ? 0 : 1) ||
        known.emergency_steps != s.emergency_steps + (emergency ? 1 : 0))
      return false;
    for (std::size_t b = 0; b < s.completions.size(); ++b)
      if (known.completions[b] != s.completions[b] + (a == b ? 1 : 0)) return false;
    for (const auto& [id, v] : d.changes)  // cheap first: the changed variables
      if (!(known.state.get(id) == v)) return false;
    // Every other variable as in `s` (without building the child's state).
    for (const VarId id : known.state.diff(s.state)) {
      const bool changed = std::any_of(
          d.changes.begin(), d.changes.end(), [&](const auto& c) { return c.first == id; });
      if (!changed) return false;
    }
    return true;
  }
};

// Breadth-first from the root: fills the goal, basin and dead-end parts of `out`.
void search(Search& s, unsigned depth, LookaheadResult& out, bool basins_and_dead_ends) {
  std::optional<std::size_t> best_goal;
  const Amount base = s.nodes.front().situation.budget.net();
  for (std::size_t i = 0; i < s.nodes.size(); ++i) {
    if (s.out_of_time()) break;
    if ((i & 1023) == 1023 && s.options().progress) s.options().progress(s.nodes.size());
    const Situation& here = s.nodes[i].situation;
    const unsigned d = s.nodes[i].depth;
    if (s.model().goal_holds(here.state)) {  // a task ends at its goal
      if (!best_goal || here.budget.net() < s.nodes[*best_goal].situation.budget.net())
        best_goal = i;
      continue;
    }
    if (basins_and_dead_ends) {
      if (const CaptureBasin* b = s.model().basin_of(here.state)) {
        if (d > 0) {
          if (!out.reachable_basin) {
            out.reachable_basin = b->name;
            out.basin_witness = s.plan_to(i);
          }
          continue;  // a plan through a basin is no plan: the agent would be trapped
        }
      }
    }
    const bool progress = s.expand(i, d < depth);
    if (basins_and_dead_ends && !progress && !out.dead_end) {
      out.dead_end = true;
      out.dead_end_witness = s.plan_to(i);
    }
  }
  if (best_goal) {
    out.goal_reachable = true;
    out.cheapest_plan = s.plan_to(*best_goal);
    out.cheapest_cost = s.nodes[*best_goal].situation.budget.net() - base;
  }
  out.complete = s.complete;
  out.incomplete_reason = s.incomplete_reason;
  out.situations = s.nodes.size();
}

}  // namespace

LookaheadResult lookahead(const TaskModel& model,
                          const Situation& situation,
                          const Proposal& proposal,
                          const LookaheadOptions& options) {
  LookaheadResult out;
  out.decision = decide(model, situation, proposal);
  if (!out.decision.approved) return out;
  Situation after = advance(model, situation, out.decision);
  out.entered = basins_entered(model, after.state);
  Search s(model, options);
  s.set_root(std::move(after));
  search(s, options.depth, out, true);
  return out;
}

LookaheadResult plan_to_goal(const TaskModel& model,
                             const Situation& situation,
                             const LookaheadOptions& options) {
  LookaheadResult out;
  Search s(model, options);
  s.set_root(situation);
  search(s, options.depth, out, false);
  return out;
}

std::vector<std::string> basins_entered(const TaskModel& model, const State& state) {
  std::vector<std::string> out;
  if (model.goal_holds(state)) return out;  // the task ends at its goal: never a trap
  const EvalEnv env{&state, nullptr, &state, nullptr};
  for (const CaptureBasin& b : model.basins) {
    const EvalResult r = evaluate(*b.expr, env);
    if (!r.ok() || r.value.as_bool()) out.push_back(b.name);
  }
  return out;
}

std::string describe_plan(const TaskModel& model, const Plan& plan) {
  std::string out;
  for (const PlannedStep& step : plan) {
    const Action& a = model.actions.at(step.action);
    out += (out.empty() ? "" : ", ") + a.id;
    for (std::size_t i = 0; i < step.params.size() && i < a.parameters.size(); ++i)
      out += " " + a.parameters[i].name + "=" + step.params[i].to_string();
  }
  return out.empty() ? "(no step)" : out;
}

std::function<std::optional<Reason>(const Situation&, const Proposal&, const Decision&)>
lookahead_guard(std::shared_ptr<const TaskModel> model, LookaheadOptions options) {
  return [model = std::move(model), options](const Situation& here,
                                             const Proposal& proposal,
                                             const Decision&) -> std::optional<Reason> {
    if (model->basins.empty()) return std::nullopt;
    const LookaheadResult r = lookahead(*model, here, proposal, options);
    if (!r.decision.approved || !r.trap()) return std::nullopt;
    const std::string& id = model->actions.at(proposal.action).id;
    if (!r.entered.empty()) {
      return Reason{ReasonCode::lookahead_trap,
                    r.entered.front(),
                    "`" + id + "` enters capture basin `" + r.entered.front() + "`"};
    }
    return Reason{ReasonCode::lookahead_trap,
                  *r.reachable_basin,
                  "capture basin `" + *r.reachable_basin + "` is reachable within " +
                      std::to_string(r.basin_witness.size()) + " step" +
                      (r.basin_witness.size() == 1 ? "" : "s") + " after `" + id +
                      "`: " + describe_plan(*model, r.basin_witness)};
  };
}

}  // namespace clampai::driver
