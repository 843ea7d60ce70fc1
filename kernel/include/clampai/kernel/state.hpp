// Immutable states with structural sharing: an update copies only the path to what changed.
#pragma once

#include <atomic>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "clampai/kernel/small_vector.hpp"
#include "clampai/kernel/value.hpp"

namespace clampai::kernel {

/// Index of a state variable in its `Schema`.
using VarId = std::uint32_t;

/// One variable's new value.
using Change = std::pair<VarId, Value>;
/// New values for some variables, read in order (later entries win): what every function that
/// reads changes takes, from a `std::vector<Change>` or a `Changes` alike.
using ChangeSpan = std::span<const Change>;

/// The values one action writes (`Decision::changes`): a vector with room for four inline, so
/// that deciding an action that writes a handful of variables allocates nothing for them.
class Changes : public SmallVector<Change, 4> {
 public:
  using SmallVector::SmallVector;
};

/// The names of a state's variables, in declaration order.
class Schema {
 public:
  /// @throws InvalidArgument if a name is empty or repeated.
  explicit Schema(std::vector<std::string> names);

  [[nodiscard]] std::size_t size() const noexcept { return names_.size(); }
  [[nodiscard]] const std::string& name(VarId id) const { return names_.at(id); }
  [[nodiscard]] const std::vector<std::string>& names() const noexcept { return names_; }
  /// The id of `name`, or nullopt if there is no such variable.
  [[nodiscard]] std::optional<VarId> find(std::string_view name) const;

 private:
  std::vector<std::string> names_;
  std::unordered_map<std::string_view, VarId> index_;
};

namespace detail {
/// A node of a state's persistent radix tree (branching 32), in one allocation with what it
/// holds: a leaf's values or an inner node's children follow it in memory. Counted
/// intrusively; never changed once shared. Only a root holds the schema.
struct StateNode {
  static constexpr int kBits = 5;
  static constexpr std::uint32_t kMask = (1U << kBits) - 1;

  mutable std::atomic<std::uint32_t> refs{1};
  std::uint32_t count = 0;  // values (leaf) or children
  bool leaf = true;
  std::shared_ptr<const Schema> schema{};  // set in roots only

  [[nodiscard]] Value* values() noexcept { return reinterpret_cast<Value*>(this + 1); }
  [[nodiscard]] const Value* values() const noexcept {
    return reinterpret_cast<const Value*>(this + 1);
  }
  [[nodiscard]] const StateNode** children() noexcept {
    return reinterpret_cast<const StateNode**>(this + 1);
  }
  [[nodiscard]] const StateNode* const* children() const noexcept {
    return reinterpret_cast<const StateNode* const*>(this + 1);
  }
};
static_assert(sizeof(StateNode) % alignof(Value) == 0 && sizeof(StateNode) % alignof(void*) == 0);
void release(const StateNode* node) noexcept;
}  // namespace detail

/// An immutable assignment of a value to every variable of a schema.
/// Copying a State is O(1) (one reference count); `with` is O(log32 n) and shares everything it
/// does not change, so the cost of a step does not depend on the variables it does not touch.
class State {
 public:
  /// A state of `values.size()` variables named by `schema`.
  /// @throws InvalidArgument if the sizes differ.
  State(std::shared_ptr<const Schema> schema, std::vector<Value> values);
  State(const State& o) noexcept : root_(o.root_), depth_(o.depth_) {
    root_->refs.fetch_add(1, std::memory_order_relaxed);
  }
  State(State&& o) noexcept : root_(std::exchange(o.root_, empty_root())), depth_(o.depth_) {
    o.depth_ = 0;
  }
  State& operator=(const State& o) noexcept {
    o.root_->refs.fetch_add(1, std::memory_order_relaxed);
    detail::release(root_);
    root_ = o.root_;
    depth_ = o.depth_;
    return *this;
  }
  State& operator=(State&& o) noexcept {
    if (this != &o) {
      detail::release(root_);
      root_ = std::exchange(o.root_, empty_root());
      depth_ = std::exchange(o.depth_, 0);
    }
    return *this;
  }
  ~State() { detail::release(root_); }

  [[nodiscard]] const Schema& schema() const noexcept { return *root_->schema; }
  [[nodiscard]] const std::shared_ptr<const Schema>& schema_ptr() const noexcept {
    return root_->schema;
  }
  [[nodiscard]] std::size_t size() const noexcept { return root_->schema->size(); }

  /// The value of variable `id`. Requires `id < size()`.
  [[nodiscard]] const Value& get(VarId id) const noexcept {
    const detail::StateNode* node = root_;
    for (int d = depth_; d > 0; --d)
      node = node->children()[(id >> (detail::StateNode::kBits * d)) & detail::StateNode::kMask];
    return node->values()[id & detail::StateNode::kMask];
  }
  /// The value of the variable `name`.
  /// @throws InvalidArgument naming the variable if there is none.
  [[nodiscard]] const Value& get(std::string_view name) const;

  /// A state equal to this one except that variable `id` holds `v`. Requires `id < size()`.
  [[nodiscard]] State with(VarId id, Value v) const;
  /// The same, for several variables at once (later entries win).
  [[nodiscard]] State with(ChangeSpan changes) const;
  [[nodiscard]] State with(std::initializer_list<Change> changes) const {
    return with(ChangeSpan(changes.begin(), changes.size()));
  }
  /// Makes this state `base.with(changes)`: in place, with no allocation, when this state holds
  /// its storage alone and has as many variables as `base` in one leaf (up to 32: a search's
  /// scratch state, rebuilt for each situation it looks at); otherwise as `with` does.
  void assign_with(const State& base, ChangeSpan changes);
  void assign_with(const State& base, std::initializer_list<Change> changes) {
    assign_with(base, ChangeSpan(changes.begin(), changes.size()));
  }

  /// The variables whose values differ between this state and `other` (same schema), in
  /// increasing order. Shared subtrees are skipped, so this costs O(differences * log n).
  [[nodiscard]] std::vector<VarId> diff(const State& other) const;

  /// Every value, in variable order (O(n)).
  [[nodiscard]] std::vector<Value> values() const;

  /// True iff both states have the same variables and values. Shared subtrees are compared by
  /// address, so comparing a state with one derived from it costs O(changes * log n).
  friend bool operator==(const State& a, const State& b) noexcept;

 private:
  State(const detail::StateNode* root, int depth) noexcept : root_(root), depth_(depth) {}
  // What a moved-from state holds: a shared root of no variables (never freed).
  static const detail::StateNode* empty_root() noexcept;

  const detail::StateNode* root_;  // counted: one reference is this state's
  int depth_ = 0;                  // number of internal levels above the leaves
};

/// Builds a state from (name, value) pairs, in order; a convenience for tests and examples.
State make_state(std::initializer_list<std::pair<std::string, Value>> values);

}  // namespace clampai::kernel
