// The explicit lookahead engine: breadth-first over situations, each step decided by the
// kernel's own `decide`, with memoisation on (state, spend, steps, completions).
#include "clampai/driver/lookahead.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <chrono>
#include <deque>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string_view>

namespace clampai::driver {

using kernel::Action;
using kernel::BudgetController;
using kernel::CaptureBasin;
using kernel::ChangeSpan;
using kernel::Decimal;
using kernel::EvalEnv;
using kernel::EvalError;
using kernel::EvalResult;
using kernel::Parameter;
using kernel::ReasonCode;
using kernel::VarId;

namespace {

constexpr std::size_t kNone = static_cast<std::size_t>(-1);
// A state of at most this many variables is one node of values: rewritten in place
// (`State::assign_with`), and compared variable by variable (`is_child`).
constexpr std::size_t kSmallState = 32;

// The bits of a situation's key that are kept: all of them. A white-box test compiles this file
// with two, so that nearly every situation collides with another and only the exact
// comparisons (`is_child`) tell them apart.
#ifndef CLAMPAI_LOOKAHEAD_KEY_MASK
#define CLAMPAI_LOOKAHEAD_KEY_MASK (~std::uint64_t{0})
#endif

inline std::uint64_t mix(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

std::uint64_t hash_value(const Value& v);

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

// A state's hash is the xor of one term per variable, so a step updates it in O(changes). A
// number's term is one mix (keys only find candidates: `is_child` compares exactly).
inline std::uint64_t var_term(VarId id, const Value& v) {
  const std::uint64_t where = static_cast<std::uint64_t>(id) * 0xD6E8FEB86659FD93ULL;
  if (v.kind() == Value::Kind::number) {
    const Decimal& d = v.as_number();
    return mix((static_cast<std::uint64_t>(d.units) * 31 + d.scale) ^ where);
  }
  return mix(hash_value(v) ^ where);
}

// The completions' hash is the sum of count × weight(action), so a step adds one weight.
inline std::uint64_t done_weight(std::size_t action) {
  return mix(static_cast<std::uint64_t>(action) ^ 0xC0FFEE1234ULL) | 1;
}

// Exactly `a == b`, a number at the same scale compared inline (the usual variable).
inline bool same_value(const Value& a, const Value& b) {
  if (a.kind() == Value::Kind::number && b.kind() == Value::Kind::number &&
      a.as_number().scale == b.as_number().scale)
    return a.as_number().units == b.as_number().units;
  return a == b;
}

// The newest node of each key: open addressing in one array (no allocation per situation, as
// a node-based map has). The array is kept from one search to the next and never cleared: a
// slot is free unless it carries the current search's generation.
class KeyIndex {
 public:
  static constexpr std::uint32_t kFree = 0xFFFFFFFFU;  // no node
  struct Slot {
    std::uint64_t key = 0;
    std::uint32_t node = kFree;
    std::uint32_t generation = 0;
  };

  // Starts a search with every slot free.
  void reset() {
    if (++generation_ == 0) {  // after 2^32 searches: clear once, start again
      std::fill(slots_.begin(), slots_.end(), Slot{});
      generation_ = 1;
    }
    if (slots_.empty()) slots_.resize(kInitial);
    count_ = 0;
  }
  // The slot of `key` (its node kFree if none), claimed for it; valid until the next call.
  Slot& at(std::uint64_t key) {
    if ((count_ + 1) * 2 > slots_.size()) grow();
    const std::size_t mask = slots_.size() - 1;
    std::size_t i = static_cast<std::size_t>(key) & mask;
    while (slots_[i].generation == generation_ && slots_[i].key != key) i = (i + 1) & mask;
    Slot& slot = slots_[i];
    if (slot.generation != generation_) {
      slot = Slot{key, kFree, generation_};
      ++count_;  // claimed (an upper bound of the keys stored: it only makes growth earlier)
    }
    return slot;
  }
  // The newest node of `key`, or kFree; claims nothing.
  [[nodiscard]] std::uint32_t find(std::uint64_t key) const {
    const std::size_t mask = slots_.size() - 1;
    for (std::size_t i = static_cast<std::size_t>(key) & mask; slots_[i].generation == generation_;
         i = (i + 1) & mask)
      if (slots_[i].key == key) return slots_[i].node;
    return kFree;
  }
  [[nodiscard]] std::size_t capacity() const { return slots_.capacity() + spare_.capacity(); }

 private:
  static constexpr std::size_t kInitial = 256;
  void grow() {
    spare_.assign(std::max(kInitial, slots_.size() * 2), Slot{});
    const std::size_t mask = spare_.size() - 1;
    for (const Slot& s : slots_) {
      if (s.generation != generation_ || s.node == kFree) continue;
      std::size_t i = static_cast<std::size_t>(s.key) & mask;
      while (spare_[i].generation == generation_) i = (i + 1) & mask;
      spare_[i] = s;
    }
    slots_.swap(spare_);
    count_ = 0;
    for (const Slot& s : slots_) count_ += s.generation == generation_ ? 1 : 0;
  }
  std::vector<Slot> slots_;
  std::vector<Slot> spare_;  // the next table while growing
  std::size_t count_ = 0;
  std::uint32_t generation_ = 0;
};

// Every parameter vector of every action, in one array: action a's k-th vector is the
// `arity[a]` values from `values[offset[a] + k * arity[a]]`, the last parameter varying
// fastest.
struct ParamTable {
  std::vector<Value> values;
  std::vector<std::size_t> offset, count, arity;
  std::vector<char> enumerable;

  void clear() {
    values.clear();
    offset.clear();
    count.clear();
    arity.clear();
    enumerable.clear();
  }
  [[nodiscard]] const Value* at(std::size_t a, std::size_t k) const {
    return values.data() + offset[a] + k * arity[a];
  }
};

// A child's key and the parts of it that the child keeps.
struct ChildKey {
  std::uint64_t state_hash = 0;
  std::uint64_t done_hash = 0;
  std::uint64_t steps = 0;
  std::uint64_t emergency_steps = 0;
  std::uint64_t key = 0;
};

// A situation of the search. Its completion counts are in the workspace's `done` array (one
// row per node) and the changes of its step in the workspace's `changes` array; its state is
// its parent's with those changes. A persistent state is built only for a situation whose
// children will be built (below the depth limit, not the goal nor a basin): a leaf's state is
// built in the workspace's scratch state when it is looked at, and a duplicate check reads a
// leaf's values through its parent's state and its changes.
struct Node {
  explicit Node(const BudgetController& b) : budget(b) {}
  const State* state = nullptr;   // its persistent state, in the workspace's `states`, or none
  std::size_t changes_begin = 0;  // its step's changes: `changes[changes_begin, +count)`
  std::size_t changes_count = 0;
  BudgetController budget;
  std::uint64_t steps = 0;
  std::uint64_t emergency_steps = 0;
  std::uint64_t state_hash = 0;
  std::uint64_t done_hash = 0;
  // The completions since the root, `done_width_` bits per action, when they fit in 64 bits
  // (`done_packed_`): an exact comparison of two nodes' completions in one instruction.
  std::uint64_t done_delta = 0;
  std::size_t parent = kNone;
  std::size_t same_key = kNone;  // the previous node with the same key (a hash collision)
  std::size_t action = 0;        // the step from the parent: action, parameter vector, cost
  std::size_t param_set = 0;
  Amount cost = 0;
  unsigned depth = 0;
  bool checked = false;  // `goal` and `basin` were evaluated (in the parent's pass)
  bool goal = false;
  const CaptureBasin* basin = nullptr;
};

// What a search allocates, kept from one search to the next on the same thread (capacity
// only: every search starts empty), so that a search allocates nothing per decision and
// almost nothing per situation once the thread has searched before.
struct Workspace {
  std::vector<Node> nodes;
  std::vector<std::uint64_t> done;               // completion counts, `actions` per node
  std::vector<std::pair<VarId, Value>> changes;  // each node's step's changes (see Node)
  std::optional<State> scratch;                  // the state of a leaf being looked at
  std::size_t scratch_node = kNone;              // which node's state `scratch` is
  std::vector<std::uint64_t> weights;            // done_weight of each action
  // What the search reads of each action on every step, side by side (an Action is large).
  struct ActionFacts {
    Amount cost = 0;          // its cost, when `fixed_cost`
    bool fixed_cost = false;  // no cost expression
    bool emergency = false;
  };
  std::vector<ActionFacts> facts;
  // The persistent states of a search's situations. Kept from one search to the next when they
  // are small (see `trim`), so that a state of up to 32 variables is rewritten in place
  // (`assign_with`) instead of allocated: the first `states_used` belong to the current search.
  // A deque: a state never moves.
  std::deque<State> states;
  std::size_t states_used = 0;
  KeyIndex index;
  // The newest node of each key of everything but the state (completions, spend, steps): a
  // step can lead to a known situation only if it leads to a known one of these.
  KeyIndex steps_index;
  ParamTable params;
  Proposal proposal;
  Decision decision;
  Amount preview_cost = 0;
  kernel::Changes preview;  // where a step would lead (`preview_into`), before it is decided
  std::vector<std::pair<std::size_t, std::size_t>> deferred;  // (action, vector) decided last
  bool busy = false;  // a search on this thread uses it (a progress callback may search)

  // Drops what a very large search left behind, so a thread does not keep it for ever.
  void trim() {
    constexpr std::size_t kKeepNodes = std::size_t{1} << 14;
    if (nodes.capacity() > kKeepNodes) std::vector<Node>().swap(nodes);
    if (done.capacity() > kKeepNodes * 16) std::vector<std::uint64_t>().swap(done);
    if (changes.capacity() > kKeepNodes * 4) std::vector<std::pair<VarId, Value>>().swap(changes);
    if (index.capacity() > kKeepNodes * 8) index = KeyIndex();
    if (steps_index.capacity() > kKeepNodes * 8) steps_index = KeyIndex();
    if (params.values.capacity() > 4096) params = ParamTable();
    // Only small states are rewritten in place: larger ones (and their shared storage) are
    // not kept once the search is over.
    if (states.size() > kKeepNodes / 4 || (!states.empty() && states.front().size() > kSmallState))
      states.clear();
  }
};

// The thread's workspace while a search uses it, released (and trimmed) when it ends.
class WorkspaceLease {
 public:
  WorkspaceLease() {
    thread_local Workspace mine;
    if (!mine.busy) {
      ws_ = &mine;
    } else {
      own_ = std::make_unique<Workspace>();  // a search within a search's callback
      ws_ = own_.get();
    }
    ws_->busy = true;
  }
  ~WorkspaceLease() {
    ws_->nodes.clear();
    ws_->states_used = 0;  // the states stay, to be rewritten by the next search
    ws_->done.clear();
    ws_->changes.clear();
    ws_->scratch.reset();
    ws_->scratch_node = kNone;
    ws_->trim();
    ws_->busy = false;
  }
  WorkspaceLease(const WorkspaceLease&) = delete;
  WorkspaceLease& operator=(const WorkspaceLease&) = delete;
  Workspace& operator*() { return *ws_; }

 private:
  std::unique_ptr<Workspace> own_;
  Workspace* ws_ = nullptr;
};

class Search {
 public:
  Search(const TaskModel& m, const LookaheadOptions& o, Workspace& ws, bool basins)
      : nodes(ws.nodes),
        m_(m),
        o_(o),
        started_(std::chrono::steady_clock::now()),
        deadline_(o.deadline),
        ws_(ws),
        actions_(m.actions.size()),
        basins_(basins) {
    if (o.timeout_ms > 0)
      deadline_ = std::min(deadline_, started_ + std::chrono::milliseconds(o.timeout_ms));
    nodes.clear();
    ws_.done.clear();
    ws_.changes.clear();
    ws_.scratch.reset();
    ws_.scratch_node = kNone;
    ws_.states_used = 0;
    ws_.weights.clear();
    for (std::size_t a = 0; a < actions_; ++a) ws_.weights.push_back(done_weight(a));
    ws_.facts.clear();
    for (const Action& a : m.actions) ws_.facts.push_back({a.cost, !a.cost_expr, a.emergency});
    ws_.index.reset();
    ws_.steps_index.reset();
    // Goal and basins are evaluated in the decision's pass (on the parent's state patched by
    // the decision's changes) when they are expressions; `old(x)` is for invariants only,
    // but an expression that used it would read the parent there, so it is checked.
    fold_ = (m.goal ? !uses_old(*m.goal) : !m.goal_predicate);
    depth_limit_ = o.depth;
    // A count grows by at most the depth within a search, so each action's growth fits in
    // `done_width_` bits; all of them in one word when there are few enough actions.
    done_width_ = std::max(1, static_cast<int>(std::bit_width(o.depth)));
    done_packed_ = actions_ * static_cast<std::size_t>(done_width_) <= 64;
#ifdef CLAMPAI_LOOKAHEAD_UNPACKED_COUNTS  // a white-box test of the comparison of every count
    done_packed_ = false;
#endif
    for (const CaptureBasin& b : m.basins) fold_ = fold_ && b.expr && !uses_old(*b.expr);
    enumerate_params();
  }

  std::vector<Node>& nodes;
  bool complete = true;
  std::string incomplete_reason;
  std::size_t param_values_needed = 0;
  [[nodiscard]] bool timed_out() const noexcept { return timed_out_; }

  void set_root(Situation s) {
    std::uint64_t h = 0;
    for (VarId id = 0; id < s.state.size(); ++id) h ^= var_term(id, s.state.get(id));
    std::uint64_t dh = 0;
    for (std::size_t a = 0; a < s.completions.size(); ++a) dh += s.completions[a] * ws_.weights[a];
    Node& n = nodes.emplace_back(s.budget);
    n.state_hash = h;
    n.done_hash = dh;
    n.steps = s.steps;
    n.emergency_steps = s.emergency_steps;
    ws_.done.insert(ws_.done.end(), s.completions.begin(), s.completions.end());
    ws_.done.resize(actions_);  // a situation counts every action of the model
    n.state = &new_state(std::move(s.state));
    const std::uint64_t key =
        key_of(n.state_hash, n.done_hash, n.budget.net(), n.steps, n.emergency_steps);
    ws_.index.at(key).node = 0;
    ws_.steps_index.at(key_of(0, n.done_hash, n.budget.net(), n.steps, n.emergency_steps)).node = 0;
  }

  // The goal, and (when the search looks for them) the basin, at node `i`.
  void stops_at(std::size_t i, bool& goal, const CaptureBasin*& basin) {
    Node& n = nodes[i];
    if (!n.checked) {
      const State& state = state_of(i);
      n.goal = m_.goal_holds(state);
      n.basin = !n.goal && basins_ ? m_.basin_of(state) : nullptr;
      n.checked = true;
    }
    goal = n.goal;
    basin = n.basin;
  }

  // Expands node `i`: adds its unseen children (when `add` is set) and says whether any
  // non-emergency action is (or, where the search cannot tell, may be) approvable there: an
  // incomplete search never reports a dead end it has not seen.
  bool expand(std::size_t i, bool add) {
    if (add && !nodes[i].state) nodes[i].state = &built_state(i);  // its children share it
    // Read again after each child is added (the nodes may move; a scratch state does not).
    const State* state = &state_of(i);
    bool progress = false;
    const ParamTable& pt = ws_.params;
    Proposal& proposal = ws_.proposal;
    const Decision& d = ws_.decision;
    ws_.deferred.clear();
    for (std::size_t a = 0; a < actions_; ++a) {
      const bool emergency = ws_.facts[a].emergency;
      if (!pt.enumerable[a]) {
        if (!emergency) progress = true;  // unknown: not enumerated
        continue;
      }
      for (std::size_t k = 0; k < pt.count[a]; ++k) {
        if (out_of_time()) return true;  // the rest was not looked at: no dead end claimed
        set_proposal(a, k);
        // A step that would lead to a known situation adds nothing, approved or not
        // (breadth-first: the known situation is no deeper), so it is not decided, unless
        // whether this situation is a dead end may rest on it: then it is decided last, only
        // if no other step here is approvable.
        if (add && leads_to_known(i, a, *state)) {
          if (basins_ && !emergency && !progress) ws_.deferred.emplace_back(a, k);
          continue;
        }
        {
          const Node& here = nodes[i];
          decide_into(m_, *state, here.budget, here.steps, done_of(i), proposal, ws_.decision);
        }
        if (!d.approved) continue;
        if (!emergency) progress = true;
        if (!add) {
          if (progress) return true;
          continue;
        }
        // The child's key from the parent's, and a known equal situation is not built again
        // (breadth-first: the known one is no deeper).
        const ChildKey ck = child_key(i, a, d.cost, d.changes, *state);
        KeyIndex::Slot& slot = ws_.index.at(ck.key);
        const std::size_t newest = slot.node == KeyIndex::kFree ? kNone : slot.node;
        std::size_t j = newest;
        while (j != kNone && !is_child(j, *state, i, a, d.cost, d.changes)) j = nodes[j].same_key;
        if (j != kNone) continue;
        if (nodes.size() >= max_situations_) {
          mark_incomplete("search budget exhausted: the search stopped after " +
                          std::to_string(o_.max_situations) + " situations");
          return true;  // the rest of this situation's actions were not looked at
        }
        add_child(i, a, k, d, ck, newest);
        slot.node = static_cast<std::uint32_t>(nodes.size() - 1);
        ws_.steps_index.at(steps_key(i, a, d.cost)).node = slot.node;
        state = nodes[i].state;
      }
    }
    for (const auto& [a, k] : ws_.deferred) {  // non-emergency steps to known situations
      if (progress) break;
      if (out_of_time()) return true;
      set_proposal(a, k);
      const Node& here = nodes[i];
      decide_into(m_, *state, here.budget, here.steps, done_of(i), proposal, ws_.decision);
      progress = d.approved;
    }
    return progress;
  }

  [[nodiscard]] const TaskModel& model() const { return m_; }
  [[nodiscard]] const LookaheadOptions& options() const { return o_; }

  // True once the deadline has passed (then the search is marked incomplete). The clock is
  // read every 64 calls: a decision costs well under a microsecond.
  bool out_of_time() {
    if (timed_out_) return true;
    if (deadline_ == std::chrono::steady_clock::time_point::max() || (++polls_ & 63) != 1)
      return false;
    return past_deadline();
  }

  [[nodiscard]] Plan plan_to(std::size_t i) const {
    Plan p;
    for (; nodes[i].parent != kNone; i = nodes[i].parent) {
      const Node& n = nodes[i];
      const Value* params = ws_.params.at(n.action, n.param_set);
      p.push_back(PlannedStep{
          n.action, std::vector<Value>(params, params + ws_.params.arity[n.action]), n.cost});
    }
    return {p.rbegin(), p.rend()};
  }

 private:
  const TaskModel& m_;
  const LookaheadOptions& o_;
  std::chrono::steady_clock::time_point started_, deadline_;
  Workspace& ws_;
  std::size_t actions_;
  bool basins_;  // the search stops at basins (lookahead), or only at the goal
  // The situation limit; nodes are numbered in 32 bits (far beyond any memory).
  std::size_t max_situations_ = std::min<std::size_t>(o_.max_situations, KeyIndex::kFree - 1);
  bool fold_ = false;         // goal and basins evaluated in the decision's pass
  int done_width_ = 1;        // bits per action of Node::done_delta
  bool done_packed_ = false;  // Node::done_delta holds every action's growth exactly
  unsigned depth_limit_ = 0;  // children are built down to this depth
  std::uint64_t polls_ = 0;
  bool timed_out_ = false;

  // The clock read (every 64 calls of out_of_time): past the deadline, the search is marked
  // incomplete.
  bool past_deadline() {
    if (std::chrono::steady_clock::now() < deadline_) return false;
    timed_out_ = true;
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                        std::chrono::steady_clock::now() - started_)
                        .count();
    mark_incomplete("search budget exhausted: the time limit was reached after " +
                    std::to_string(ms) + " ms and " + std::to_string(nodes.size()) + " situations");
    return true;
  }

  const std::uint64_t* done_of(std::size_t i) const { return ws_.done.data() + i * actions_; }

  void mark_incomplete(std::string why) {
    if (complete) incomplete_reason = std::move(why);
    complete = false;
  }

  // The child of node `i` by the approved decision `d` (action `a`, parameter vector `k`).
  void add_child(std::size_t i,
                 std::size_t a,
                 std::size_t k,
                 const Decision& d,
                 const ChildKey& ck,
                 std::size_t same_key) {
    const BudgetController budget = nodes[i].budget;
    nodes.emplace_back(budget);  // within the capacity kept from earlier searches, once warm
    Node& child = nodes.back();
    {
      const Node& here = nodes[i];
      const State& state = *here.state;  // after the nodes moved (a parent's state is its own)
      child.depth = here.depth + 1;
      if (fold_) {
        // The goal and the basins on the parent's state patched by the changes: what
        // `goal_holds` and `basin_of` say of the child's state, without building it.
        const EvalEnv post{&state, d.changes, nullptr, nullptr};
        bool value = false;
        child.goal = m_.goal && evaluate_bool(*m_.goal, post, value) == EvalError::none && value;
        if (!child.goal && basins_) {
          for (const CaptureBasin& b : m_.basins) {
            if (evaluate_bool(*b.expr, post, value) != EvalError::none || value) {
              child.basin = &b;
              break;
            }
          }
        }
        child.checked = true;
      }
      // A goal or a basin (the child is deeper than the root) stops the search, and a child at
      // the depth limit has no children: no persistent state.
      if (!child.goal && child.basin == nullptr && child.depth < depth_limit_)
        child.state = &new_state(state, d.changes);
    }
    child.changes_begin = ws_.changes.size();
    child.changes_count = d.changes.size();
    ws_.changes.insert(ws_.changes.end(), d.changes.begin(), d.changes.end());
    child.budget.charge(d.cost);
    child.steps = ck.steps;
    child.emergency_steps = ck.emergency_steps;
    child.state_hash = ck.state_hash;
    child.done_hash = ck.done_hash;
    if (done_packed_)
      child.done_delta = nodes[i].done_delta + (std::uint64_t{1} << (a * done_width_));
    child.parent = i;
    child.same_key = same_key;
    child.action = a;
    child.param_set = k;
    child.cost = d.cost;
    ws_.done.resize(ws_.done.size() + actions_);
    std::copy_n(done_of(i), actions_, ws_.done.end() - static_cast<std::ptrdiff_t>(actions_));
    ++ws_.done[ws_.done.size() - actions_ + a];
  }

  // Node `j`'s changes (see Node).
  [[nodiscard]] const std::pair<VarId, Value>* changes_of(std::size_t j) const {
    return ws_.changes.data() + nodes[j].changes_begin;
  }

  // Node `j`'s state, built from its parent's (which every node but the root has: a parent was
  // expanded, so its state was built).
  [[nodiscard]] const State& built_state(std::size_t j) {
    const Node& n = nodes[j];
    return new_state(*nodes[n.parent].state, ChangeSpan(changes_of(j), n.changes_count));
  }

  // A state of the workspace's for this search: `base` with `changes`.
  const State& new_state(const State& base, ChangeSpan changes) {
    if (ws_.states_used < ws_.states.size()) {
      State& s = ws_.states[ws_.states_used++];
      s.assign_with(base, changes);  // in place (no allocation) for a small state held alone
      return s;
    }
    ++ws_.states_used;
    return ws_.states.emplace_back(base.with(changes));
  }
  // The same, for the root's state itself.
  const State& new_state(State root) {
    if (ws_.states_used < ws_.states.size()) {
      State& s = ws_.states[ws_.states_used++];
      s = std::move(root);
      return s;
    }
    ++ws_.states_used;
    return ws_.states.emplace_back(std::move(root));
  }

  // Node `j`'s state: its own, or (a leaf's) built in the scratch state, valid until the next
  // call for another node.
  const State& state_of(std::size_t j) {
    if (nodes[j].state) return *nodes[j].state;
    if (ws_.scratch_node != j) {
      const Node& n = nodes[j];
      const ChangeSpan changes(changes_of(j), n.changes_count);
      const State& parent = *nodes[n.parent].state;
      if (ws_.scratch) {
        ws_.scratch->assign_with(parent, changes);  // no allocation, once warm
      } else {
        ws_.scratch = parent.with(changes);
      }
      ws_.scratch_node = j;
    }
    return *ws_.scratch;
  }

  // The value of variable `id` in node `j`'s state, without building it.
  [[nodiscard]] const Value& value_in(std::size_t j, VarId id) const {
    const Node& n = nodes[j];
    if (n.state) return n.state->get(id);
    const std::pair<VarId, Value>* c = changes_of(j);
    for (std::size_t k = n.changes_count; k-- > 0;)  // later changes win, as in `with`
      if (c[k].first == id) return c[k].second;
    return nodes[n.parent].state->get(id);
  }

  // The number of values of `p`: 0 if it has no bounds (or none that fits its scale). In 128
  // bits: a range as wide as int64 must not wrap around.
  static __int128 values_of(const Parameter& p) {
    const auto lo = p.min ? p.min->rescaled(p.type.scale()) : std::nullopt;
    const auto hi = p.max ? p.max->rescaled(p.type.scale()) : std::nullopt;
    return lo && hi ? std::max<__int128>(0, static_cast<__int128>(hi->units) - lo->units + 1) : 0;
  }

  // The number of parameter vectors of `a`, or the largest size_t if a parameter has no
  // values to enumerate or there are more.
  static std::size_t vectors_of(const Action& a) {
    constexpr std::size_t none = std::numeric_limits<std::size_t>::max();
    __int128 vectors = 1;
    for (const Parameter& p : a.parameters) {
      const __int128 values = values_of(p);
      if (values == 0 || vectors > static_cast<__int128>(none) / values) return none;
      vectors *= values;
    }
    return static_cast<std::size_t>(vectors);
  }

  void enumerate_params() {
    ParamTable& pt = ws_.params;
    pt.clear();
    for (const Action& a : m_.actions) {
      pt.offset.push_back(pt.values.size());
      pt.arity.push_back(a.parameters.size());
      // The number of vectors, and each parameter's lowest value and count.
      std::size_t vectors = 1;
      bool ok = true;
      for (const Parameter& p : a.parameters) {
        if (!p.min || !p.max) {
          ok = false;
          mark_incomplete("parameter `" + p.name + "` of `" + a.id +
                          "` has no bounds: its values cannot be enumerated");
          param_values_needed = std::numeric_limits<std::size_t>::max();
          break;
        }
        const __int128 count = values_of(p);
        if (count <= 0 || count > static_cast<__int128>(o_.max_param_values /
                                                        std::max<std::size_t>(1, vectors))) {
          ok = false;
          mark_incomplete("the parameters of `" + a.id + "` span more than " +
                          std::to_string(o_.max_param_values) + " values");
          param_values_needed = std::max(param_values_needed, vectors_of(a));
          break;
        }
        vectors *= static_cast<std::size_t>(count);
      }
      pt.enumerable.push_back(ok ? 1 : 0);
      pt.count.push_back(ok ? vectors : 0);
      if (!ok) continue;
      // Vector k: its digits in the mixed radix of the counts, the last parameter the lowest
      // digit. By count, never by a value stepped past the bound (`max` may be 2^63 - 1).
      const std::size_t arity = a.parameters.size();
      pt.values.resize(pt.values.size() + vectors * arity);
      Value* out = pt.values.data() + pt.offset.back();
      for (std::size_t k = 0; k < vectors; ++k) {
        std::size_t rest = k;
        for (std::size_t q = arity; q-- > 0;) {
          const Parameter& p = a.parameters[q];
          const auto lo = p.min->rescaled(p.type.scale());
          const auto hi = p.max->rescaled(p.type.scale());
          const auto count = static_cast<std::size_t>(hi->units - lo->units) + 1;
          const auto u = static_cast<std::int64_t>(static_cast<__int128>(lo->units) +
                                                   static_cast<__int128>(rest % count));
          rest /= count;
          out[k * arity + q] = Value::number(Decimal{u, static_cast<std::uint8_t>(p.type.scale())});
        }
      }
    }
  }

  static std::uint64_t key_of(std::uint64_t state_hash,
                              std::uint64_t done_hash,
                              Amount net,
                              std::uint64_t steps,
                              std::uint64_t emergency_steps) {
    // No final mix: the state's and the completions' hashes are sums of mixed terms already,
    // so the low bits (the index's slot) vary; the rest only has to differ.
    return (state_hash ^ done_hash ^ (static_cast<std::uint64_t>(net) * 0x9FB21C651E98DF25ULL) ^
            (steps * 0xC2B2AE3D27D4EB4FULL) ^ (emergency_steps * 0x165667B19E3779F9ULL)) &
           CLAMPAI_LOOKAHEAD_KEY_MASK;
  }

  // The key of the situation a step of action `a` costing `cost` with `changes` leads to from
  // node `i` (whose state is `s`), from node `i`'s: its parts and the key.
  ChildKey child_key(
      std::size_t i, std::size_t a, Amount cost, ChangeSpan changes, const State& s) const {
    const bool emergency = ws_.facts[a].emergency;
    const Node& here = nodes[i];
    ChildKey ck;
    ck.state_hash = here.state_hash;
    for (const auto& [id, v] : changes) ck.state_hash ^= var_term(id, s.get(id)) ^ var_term(id, v);
    ck.done_hash = here.done_hash + ws_.weights[a];
    ck.steps = here.steps + (emergency ? 0 : 1);
    ck.emergency_steps = here.emergency_steps + (emergency ? 1 : 0);
    ck.key =
        key_of(ck.state_hash, ck.done_hash, here.budget.net() + cost, ck.steps, ck.emergency_steps);
    return ck;
  }

  // Makes the workspace's proposal action `a` with its `k`-th parameter vector.
  void set_proposal(std::size_t a, std::size_t k) {
    const ParamTable& pt = ws_.params;
    Proposal& proposal = ws_.proposal;
    proposal.action = a;
    if (pt.arity[a] > 0 || !proposal.params.empty())
      proposal.params.assign(pt.at(a, k), pt.at(a, k) + pt.arity[a]);
  }

  // True iff the workspace's proposal (of action `a`), approved in node `i` (whose state is
  // `s`), would lead to a known situation. Cheap first: a known situation with the same
  // completions, spend and steps (another order of the same steps), when the cost is known
  // without evaluating anything; then the step's cost and changes (`preview_into`, the
  // kernel's own computation), and the situations with that key compared exactly.
  bool leads_to_known(std::size_t i, std::size_t a, const State& s) {
    const Workspace::ActionFacts& facts = ws_.facts[a];
    if (facts.fixed_cost && ws_.steps_index.find(steps_key(i, a, facts.cost)) == KeyIndex::kFree)
      return false;
    if (!preview_into(m_, s, ws_.proposal, ws_.preview_cost, ws_.preview)) return false;
    const ChildKey ck = child_key(i, a, ws_.preview_cost, ws_.preview, s);
    const std::uint32_t newest = ws_.index.find(ck.key);
    for (std::size_t j = newest == KeyIndex::kFree ? kNone : newest; j != kNone;
         j = nodes[j].same_key)
      if (is_child(j, s, i, a, ws_.preview_cost, ws_.preview)) return true;
    return false;
  }

  // The key of everything but the state (see Workspace::steps_index) after a step of action `a`
  // costing `cost` from node `i`.
  [[nodiscard]] std::uint64_t steps_key(std::size_t i, std::size_t a, Amount cost) const {
    const bool emergency = ws_.facts[a].emergency;
    const Node& here = nodes[i];
    return key_of(0,
                  here.done_hash + ws_.weights[a],
                  here.budget.net() + cost,
                  here.steps + (emergency ? 0 : 1),
                  here.emergency_steps + (emergency ? 1 : 0));
  }

  // True iff node `j`'s completion counts are node `i`'s after a step of action `a`.
  [[nodiscard]] bool counts_after_step(std::size_t j, std::size_t i, std::size_t a) const {
    const std::uint64_t* kd = done_of(j);
    const std::uint64_t* sd = done_of(i);
    if (kd[a] != sd[a] + 1) return false;
    std::uint64_t differ = 0;  // the other counts, without a branch (or a memcmp) each
    for (std::size_t x = 0; x < a; ++x) differ |= kd[x] ^ sd[x];
    for (std::size_t x = a + 1; x < actions_; ++x) differ |= kd[x] ^ sd[x];
    return differ == 0;
  }

  // True iff node `j` is the situation that a step of action `a` costing `cost` with `changes`
  // leads to from node `i` (whose state is `s`), without building either situation.
  bool is_child(std::size_t j,
                const State& s,
                std::size_t i,
                std::size_t a,
                Amount cost,
                ChangeSpan changes) {
    const bool emergency = ws_.facts[a].emergency;
    {
      const Node& known = nodes[j];
      const Node& here = nodes[i];
      if (known.budget.net() != here.budget.net() + cost ||
          known.budget.gross() != here.budget.gross() + cost ||
          known.steps != here.steps + (emergency ? 0 : 1) ||
          known.emergency_steps != here.emergency_steps + (emergency ? 1 : 0))
        return false;
      if (done_packed_
              ? known.done_delta != here.done_delta + (std::uint64_t{1} << (a * done_width_))
              : !counts_after_step(j, i, a))
        return false;
    }
    // A small state: the two states' values side by side, compared once each (the child's:
    // `s` patched by `changes`; node j's: its own state, or its parent's patched by its
    // changes; later changes win, as in `with`).
    if (const std::size_t n = s.size(); n <= kSmallState) {
      std::array<const Value*, kSmallState> child;  // the first n are set below
      std::array<const Value*, kSmallState> known;
      for (VarId id = 0; id < n; ++id) child[id] = &s.get(id);
      for (const auto& [id, v] : changes) child[id] = &v;
      const Node& node = nodes[j];
      const State& base = node.state ? *node.state : *nodes[node.parent].state;
      for (VarId id = 0; id < n; ++id) known[id] = &base.get(id);
      if (!node.state) {
        const std::pair<VarId, Value>* c = changes_of(j);
        for (std::size_t k = 0; k < node.changes_count; ++k) known[c[k].first] = &c[k].second;
      }
      for (VarId id = 0; id < n; ++id)
        if (!same_value(*child[id], *known[id])) return false;
      return true;
    }
    // A large one: the changed variables first, then only where the two states do not share
    // their storage.
    for (const auto& [id, v] : changes)
      if (!same_value(value_in(j, id), v)) return false;
    auto changed = [&](VarId id) {
      return std::any_of(
          changes.begin(), changes.end(), [&](const auto& c) { return c.first == id; });
    };
    const State known =
        nodes[j].state
            ? *nodes[j].state
            : nodes[nodes[j].parent].state->with(ChangeSpan(changes_of(j), nodes[j].changes_count));
    for (const VarId id : known.diff(s))
      if (!changed(id)) return false;
    return true;
  }
};

// Breadth-first from the root: fills the goal, basin and dead-end parts of `out`.
void search(Search& s, unsigned depth, LookaheadResult& out, bool basins_and_dead_ends) {
  std::optional<std::size_t> best_goal;
  const Amount base = s.nodes.front().budget.net();
  for (std::size_t i = 0; i < s.nodes.size(); ++i) {
    if (s.out_of_time()) break;
    if ((i & 1023) == 1023 && s.options().progress) s.options().progress(s.nodes.size());
    const unsigned d = s.nodes[i].depth;
    bool goal = false;
    const CaptureBasin* basin = nullptr;
    s.stops_at(i, goal, basin);
    if (goal) {  // a task ends at its goal
      if (!best_goal || s.nodes[i].budget.net() < s.nodes[*best_goal].budget.net()) best_goal = i;
      continue;
    }
    if (basins_and_dead_ends && basin != nullptr && d > 0) {
      if (!out.reachable_basin) {
        out.reachable_basin = basin->name;
        out.basin_witness = s.plan_to(i);
      }
      continue;  // a plan through a basin is no plan: the agent would be trapped
    }
    // At the depth limit only a dead end is looked for: without that (or once the first is
    // found: it is the one reported), nothing to decide.
    if (d >= depth && (!basins_and_dead_ends || out.dead_end)) continue;
    const bool progress = s.expand(i, d < depth);
    if (basins_and_dead_ends && !progress && !out.dead_end) {
      out.dead_end = true;
      out.dead_end_witness = s.plan_to(i);
    }
  }
  if (best_goal) {
    out.goal_reachable = true;
    out.cheapest_plan = s.plan_to(*best_goal);
    out.cheapest_cost = s.nodes[*best_goal].budget.net() - base;
  }
  out.complete = s.complete;
  out.incomplete_reason = s.incomplete_reason;
  out.param_values_needed = s.param_values_needed;
  out.timed_out = s.timed_out();
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
  WorkspaceLease ws;
  Search s(model, options, *ws, true);
  s.set_root(std::move(after));
  search(s, options.depth, out, true);
  return out;
}

LookaheadResult plan_to_goal(const TaskModel& model,
                             const Situation& situation,
                             const LookaheadOptions& options) {
  LookaheadResult out;
  WorkspaceLease ws;
  Search s(model, options, *ws, false);
  s.set_root(situation);
  search(s, options.depth, out, false);
  return out;
}

std::vector<std::string> basins_entered(const TaskModel& model, const State& state) {
  std::vector<std::string> out;
  if (model.goal_holds(state)) return out;  // the task ends at its goal: never a trap
  const EvalEnv env{&state, {}, &state, nullptr};
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
