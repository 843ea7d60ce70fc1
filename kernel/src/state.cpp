// A persistent radix tree of values (branching 32) behind State.
#include "clampai/kernel/state.hpp"

#include <array>

#include "clampai/kernel/error.hpp"

namespace clampai::kernel {
namespace detail {

constexpr int kBits = 5;
constexpr std::size_t kWidth = 1U << kBits;
constexpr std::uint32_t kMask = kWidth - 1;

// A leaf holds up to 32 values; an internal node up to 32 children. Nodes are never mutated
// once shared.
struct StateNode {
  std::vector<Value> values;
  std::vector<std::shared_ptr<const StateNode>> children;
};

}  // namespace detail

namespace {

using detail::kBits;
using detail::kMask;
using detail::kWidth;
using detail::StateNode;
using NodePtr = std::shared_ptr<const StateNode>;

int depth_for(std::size_t n) {
  int depth = 0;
  std::size_t capacity = kWidth;
  while (capacity < n) {
    capacity *= kWidth;
    ++depth;
  }
  return depth;
}

NodePtr build(const std::vector<Value>& values, std::size_t begin, int depth) {
  auto node = std::make_shared<StateNode>();
  if (depth == 0) {
    const std::size_t end = std::min(values.size(), begin + kWidth);
    node->values.assign(values.begin() + static_cast<std::ptrdiff_t>(begin),
                        values.begin() + static_cast<std::ptrdiff_t>(end));
    return node;
  }
  const std::size_t span = std::size_t{1} << (kBits * depth);
  for (std::size_t start = begin; start < values.size() && start < begin + span * kWidth;
       start += span) {
    node->children.push_back(build(values, start, depth - 1));
  }
  return node;
}

NodePtr update(const StateNode& node, int depth, VarId id, Value v) {
  auto copy = std::make_shared<StateNode>(node);
  if (depth == 0) {
    copy->values[id & kMask] = std::move(v);
  } else {
    auto& child = copy->children[(id >> (kBits * depth)) & kMask];
    child = update(*child, depth - 1, id, std::move(v));
  }
  return copy;
}

bool equal(const NodePtr& a, const NodePtr& b) noexcept {
  if (a == b) return true;
  if (a->values != b->values || a->children.size() != b->children.size()) return false;
  for (std::size_t i = 0; i < a->children.size(); ++i) {
    if (!equal(a->children[i], b->children[i])) return false;
  }
  return true;
}

void diff_nodes(
    const NodePtr& a, const NodePtr& b, int depth, VarId base, std::vector<VarId>& out) {
  if (a == b) return;
  if (depth == 0) {
    for (std::size_t i = 0; i < a->values.size(); ++i) {
      if (!(a->values[i] == b->values[i])) out.push_back(base + static_cast<VarId>(i));
    }
    return;
  }
  const VarId span = VarId{1} << (kBits * depth);
  for (std::size_t i = 0; i < a->children.size(); ++i) {
    diff_nodes(a->children[i], b->children[i], depth - 1, base + static_cast<VarId>(i) * span, out);
  }
}

void collect(const StateNode& node, std::vector<Value>& out) {
  out.insert(out.end(), node.values.begin(), node.values.end());
  for (const auto& c : node.children) collect(*c, out);
}

}  // namespace

Schema::Schema(std::vector<std::string> names) : names_(std::move(names)) {
  for (std::size_t i = 0; i < names_.size(); ++i) {
    if (names_[i].empty()) throw InvalidArgument("variable names must not be empty");
    if (!index_.emplace(names_[i], static_cast<VarId>(i)).second) {
      throw InvalidArgument("duplicate variable `" + names_[i] + "`");
    }
  }
}

std::optional<VarId> Schema::find(std::string_view name) const {
  const auto it = index_.find(name);
  if (it == index_.end()) return std::nullopt;
  return it->second;
}

State::State(std::shared_ptr<const Schema> schema, std::vector<Value> values)
    : schema_(std::move(schema)) {
  if (values.size() != schema_->size()) {
    throw InvalidArgument("a state needs " + std::to_string(schema_->size()) + " values, got " +
                          std::to_string(values.size()));
  }
  depth_ = depth_for(values.size());
  root_ = build(values, 0, depth_);
}

State::State(std::shared_ptr<const Schema> schema, NodePtr root, int depth)
    : schema_(std::move(schema)), root_(std::move(root)), depth_(depth) {}

const Value& State::get(VarId id) const noexcept {
  const StateNode* node = root_.get();
  for (int d = depth_; d > 0; --d) node = node->children[(id >> (kBits * d)) & kMask].get();
  return node->values[id & kMask];
}

const Value& State::get(std::string_view name) const {
  const auto id = schema_->find(name);
  if (!id) throw InvalidArgument("unknown variable `" + std::string(name) + "`");
  return get(*id);
}

State State::with(VarId id, Value v) const {
  return State(schema_, update(*root_, depth_, id, std::move(v)), depth_);
}

State State::with(const std::vector<std::pair<VarId, Value>>& changes) const {
  NodePtr root = root_;
  for (const auto& [id, v] : changes) root = update(*root, depth_, id, v);
  return State(schema_, std::move(root), depth_);
}

std::vector<VarId> State::diff(const State& other) const {
  std::vector<VarId> out;
  diff_nodes(root_, other.root_, depth_, 0, out);
  return out;
}

std::vector<Value> State::values() const {
  std::vector<Value> out;
  out.reserve(size());
  collect(*root_, out);
  return out;
}

bool operator==(const State& a, const State& b) noexcept {
  if (a.schema_ != b.schema_ && a.schema_->names() != b.schema_->names()) return false;
  return a.depth_ == b.depth_ && equal(a.root_, b.root_);
}

State make_state(std::initializer_list<std::pair<std::string, Value>> values) {
  std::vector<std::string> names;
  std::vector<Value> vals;
  for (const auto& [n, v] : values) {
    names.push_back(n);
    vals.push_back(v);
  }
  return State(std::make_shared<const Schema>(std::move(names)), std::move(vals));
}

}  // namespace clampai::kernel
