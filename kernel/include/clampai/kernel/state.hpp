// Immutable states with structural sharing: an update copies only the path to what changed.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "clampai/kernel/value.hpp"

namespace clampai::kernel {

/// Index of a state variable in its `Schema`.
using VarId = std::uint32_t;

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
struct StateNode;
}

/// An immutable assignment of a value to every variable of a schema.
/// Copying a State is O(1); `with` is O(log32 n) and shares everything it does not change, so
/// the cost of a step does not depend on the variables it does not touch.
class State {
 public:
  /// A state of `values.size()` variables named by `schema`.
  /// @throws InvalidArgument if the sizes differ.
  State(std::shared_ptr<const Schema> schema, std::vector<Value> values);

  [[nodiscard]] const Schema& schema() const noexcept { return *schema_; }
  [[nodiscard]] const std::shared_ptr<const Schema>& schema_ptr() const noexcept { return schema_; }
  [[nodiscard]] std::size_t size() const noexcept { return schema_->size(); }

  /// The value of variable `id`. Requires `id < size()`.
  [[nodiscard]] const Value& get(VarId id) const noexcept;
  /// The value of the variable `name`.
  /// @throws InvalidArgument naming the variable if there is none.
  [[nodiscard]] const Value& get(std::string_view name) const;

  /// A state equal to this one except that variable `id` holds `v`. Requires `id < size()`.
  [[nodiscard]] State with(VarId id, Value v) const;
  /// The same, for several variables at once (later entries win).
  [[nodiscard]] State with(const std::vector<std::pair<VarId, Value>>& changes) const;

  /// The variables whose values differ between this state and `other` (same schema), in
  /// increasing order. Shared subtrees are skipped, so this costs O(differences * log n).
  [[nodiscard]] std::vector<VarId> diff(const State& other) const;

  /// Every value, in variable order (O(n)).
  [[nodiscard]] std::vector<Value> values() const;

  /// True iff both states have the same variables and values. Shared subtrees are compared by
  /// address, so comparing a state with one derived from it costs O(changes * log n).
  friend bool operator==(const State& a, const State& b) noexcept;

 private:
  State(std::shared_ptr<const Schema> schema,
        std::shared_ptr<const detail::StateNode> root,
        int depth);

  std::shared_ptr<const Schema> schema_;
  std::shared_ptr<const detail::StateNode> root_;
  int depth_ = 0;  // number of internal levels above the leaves
};

/// Builds a state from (name, value) pairs, in order; a convenience for tests and examples.
State make_state(std::initializer_list<std::pair<std::string, Value>> values);

}  // namespace clampai::kernel
