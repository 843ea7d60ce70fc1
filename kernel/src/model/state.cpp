// A persistent radix tree of values (branching 32) behind State.
#include "clampai/kernel/state.hpp"

#include <algorithm>
#include <memory>
#include <new>

#include "clampai/kernel/error.hpp"

namespace clampai::kernel {

namespace {

using detail::StateNode;
constexpr int kBits = StateNode::kBits;
constexpr std::size_t kWidth = std::size_t{1} << kBits;
constexpr std::uint32_t kMask = StateNode::kMask;

int depth_for(std::size_t n) {
  int depth = 0;
  std::size_t capacity = kWidth;
  while (capacity < n) {
    capacity *= kWidth;
    ++depth;
  }
  return depth;
}

// A node with room for `count` values (leaf) or children, none of them constructed yet.
StateNode* allocate(std::uint32_t count, bool leaf) {
  const std::size_t room = leaf ? sizeof(Value) : sizeof(StateNode*);
  void* raw = ::operator new(sizeof(StateNode) + count * room);
  auto* node = new (raw) StateNode();
  node->count = count;
  node->leaf = leaf;
  return node;
}

void retain(const StateNode* node) noexcept { node->refs.fetch_add(1, std::memory_order_relaxed); }

// A copy of `node` (not its schema) that shares its children.
StateNode* copy_of(const StateNode& node) {
  StateNode* copy = allocate(node.count, node.leaf);
  if (node.leaf) {
    std::uninitialized_copy_n(node.values(), node.count, copy->values());
  } else {
    for (std::uint32_t i = 0; i < node.count; ++i) {
      retain(node.children()[i]);
      copy->children()[i] = node.children()[i];
    }
  }
  return copy;
}

StateNode* build(const std::vector<Value>& values, std::size_t begin, int depth) {
  if (depth == 0) {
    const std::size_t end = std::min(values.size(), begin + kWidth);
    StateNode* node = allocate(static_cast<std::uint32_t>(end - begin), true);
    std::uninitialized_copy(values.begin() + static_cast<std::ptrdiff_t>(begin),
                            values.begin() + static_cast<std::ptrdiff_t>(end),
                            node->values());
    return node;
  }
  const std::size_t span = std::size_t{1} << (kBits * depth);
  std::uint32_t count = 0;
  for (std::size_t start = begin; start < values.size() && start < begin + span * kWidth;
       start += span)
    ++count;
  // Children are counted as they are built, so that a failure frees exactly those.
  StateNode* node = allocate(count, false);
  node->count = 0;
  try {
    for (std::size_t start = begin; node->count < count; start += span) {
      node->children()[node->count] = build(values, start, depth - 1);
      ++node->count;
    }
  } catch (...) {
    detail::release(node);
    throw;
  }
  return node;
}

// Sets variable `id` below `*slot` (at `depth`) to `v`: a node this update owns alone (one
// reference, from a node it owns) is changed in place, any other is copied first (path copy).
void update(const StateNode*& slot, int depth, VarId id, const Value& v) {
  StateNode* node = nullptr;
  if (slot->refs.load(std::memory_order_acquire) == 1) {
    node = const_cast<StateNode*>(slot);  // ours alone: nobody else can see it
  } else {
    node = copy_of(*slot);
    detail::release(slot);  // the reference of the copy we replace it with
    slot = node;
  }
  if (depth == 0) {
    node->values()[id & kMask] = v;
  } else {
    update(node->children()[(id >> (kBits * depth)) & kMask], depth - 1, id, v);
  }
}

bool equal(const StateNode* a, const StateNode* b) noexcept {
  if (a == b) return true;
  if (a->count != b->count || a->leaf != b->leaf) return false;
  for (std::uint32_t i = 0; i < a->count; ++i) {
    if (a->leaf ? !(a->values()[i] == b->values()[i]) : !equal(a->children()[i], b->children()[i]))
      return false;
  }
  return true;
}

void diff_nodes(
    const StateNode* a, const StateNode* b, int depth, VarId base, std::vector<VarId>& out) {
  if (a == b) return;
  if (depth == 0) {
    for (std::uint32_t i = 0; i < a->count; ++i) {
      if (!(a->values()[i] == b->values()[i])) out.push_back(base + i);
    }
    return;
  }
  const VarId span = VarId{1} << (kBits * depth);
  for (std::uint32_t i = 0; i < a->count; ++i)
    diff_nodes(a->children()[i], b->children()[i], depth - 1, base + i * span, out);
}

void collect(const StateNode* node, std::vector<Value>& out) {
  if (node->leaf) {
    out.insert(out.end(), node->values(), node->values() + node->count);
    return;
  }
  for (std::uint32_t i = 0; i < node->count; ++i) collect(node->children()[i], out);
}

}  // namespace

void detail::release(const StateNode* node) noexcept {
  if (node->refs.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  auto* n = const_cast<StateNode*>(node);
  if (n->leaf) {
    std::destroy_n(n->values(), n->count);
  } else {
    for (std::uint32_t i = 0; i < n->count; ++i) release(n->children()[i]);
  }
  n->~StateNode();
  ::operator delete(n);
}

const StateNode* State::empty_root() noexcept {
  // Never freed: its count starts far above anything the moved-from states can release.
  static StateNode* const root = [] {
    StateNode* node = allocate(0, true);
    node->refs.store(std::uint32_t{1} << 31, std::memory_order_relaxed);
    node->schema = std::make_shared<const Schema>(std::vector<std::string>{});
    return node;
  }();
  return root;
}

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

State::State(std::shared_ptr<const Schema> schema, std::vector<Value> values) : root_(nullptr) {
  if (values.size() != schema->size()) {
    throw InvalidArgument("a state needs " + std::to_string(schema->size()) + " values, got " +
                          std::to_string(values.size()));
  }
  depth_ = depth_for(values.size());
  StateNode* root = build(values, 0, depth_);
  root->schema = std::move(schema);
  root_ = root;
}

const Value& State::get(std::string_view name) const {
  const auto id = schema().find(name);
  if (!id) throw InvalidArgument("unknown variable `" + std::string(name) + "`");
  return get(*id);
}

State State::with(VarId id, Value v) const {
  retain(root_);
  const StateNode* root = root_;
  try {
    update(root, depth_, id, v);
    if (root != root_ && !root->schema) const_cast<StateNode*>(root)->schema = root_->schema;
  } catch (...) {
    detail::release(root);
    throw;
  }
  return State(root, depth_);
}

State State::with(ChangeSpan changes) const {
  if (changes.empty()) return *this;
  // A copy of the root, this new state's alone (no reference taken and dropped on ours): the
  // changes are made in it, and below it the first change copies the path to its leaf; later
  // ones change what is already copied in place and copy only what is still shared.
  StateNode* copy = copy_of(*root_);
  copy->schema = root_->schema;
  const StateNode* root = copy;
  try {
    for (const auto& [id, v] : changes) update(root, depth_, id, v);
  } catch (...) {
    detail::release(root);
    throw;
  }
  return State(root, depth_);
}

void State::assign_with(const State& base, ChangeSpan changes) {
  if (depth_ == 0 && base.depth_ == 0 && root_ != base.root_ &&
      root_->refs.load(std::memory_order_acquire) == 1 && root_->count == base.root_->count) {
    auto* mine = const_cast<StateNode*>(root_);  // ours alone: nobody else can see it
    std::copy_n(base.root_->values(), mine->count, mine->values());
    for (const auto& [id, v] : changes) mine->values()[id] = v;
    if (mine->schema != base.root_->schema) mine->schema = base.root_->schema;
    return;
  }
  *this = base.with(changes);
}

std::vector<VarId> State::diff(const State& other) const {
  std::vector<VarId> out;
  diff_nodes(root_, other.root_, depth_, 0, out);
  return out;
}

std::vector<Value> State::values() const {
  std::vector<Value> out;
  out.reserve(size());
  collect(root_, out);
  return out;
}

bool operator==(const State& a, const State& b) noexcept {
  if (a.root_->schema != b.root_->schema && a.root_->schema->names() != b.root_->schema->names())
    return false;
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
