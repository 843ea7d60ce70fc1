// Budget pools: a tree of BudgetControllers, one per pool, charged together (T1 and T4 at every
// level). Locks are taken in one global order, parents before children (the nodes are stored
// in that order), so a chain locks its root first and nothing deadlocks.
#include "clampai/kernel/pools.hpp"

#include "decide.hpp"

#include <algorithm>
#include <map>
#include <mutex>

#include "clampai/kernel/assert.hpp"
#include "clampai/kernel/file.hpp"
#include "clampai/kernel/mutex.hpp"
#include "clampai/kernel/suggest.hpp"

namespace clampai::kernel {

struct PoolTree::Node {
  std::string name;
  std::string parent_name;
  std::optional<std::size_t> parent;  // its index: always smaller than this node's
  Decimal declared;                   // the total as the file gives it
  mutable Mutex mutex;
  // Under `mutex`: the scale the tasks bound under it fixed (none yet: -1), and the ledger at
  // that scale (mutable: a Chain holding the lock charges it through a const tree).
  // INVARIANT (budget-safe at every level): see BudgetController (T1, T4).
  int scale = -1;
  mutable BudgetController ledger{0};
  std::size_t tasks = 0;
};

std::string PoolStatus::format(Amount a) const {
  return Decimal{a, static_cast<std::uint8_t>(scale)}.to_string();
}

std::shared_ptr<PoolTree> PoolTree::build(std::vector<PoolDecl> decls) {
  check_pools(decls);
  // Parents before children: the order every lock is taken in.
  std::map<std::string, std::size_t, std::less<>> at;  // name -> declaration
  for (std::size_t i = 0; i < decls.size(); ++i) at.emplace(decls[i].name, i);
  std::vector<std::size_t> order;
  std::vector<char> placed(decls.size(), 0);
  auto place = [&](std::size_t i, auto& self) -> void {
    if (placed[i] != 0) return;
    if (!decls[i].parent.empty()) self(at.find(decls[i].parent)->second, self);
    placed[i] = 1;
    order.push_back(i);
  };
  // check_pools refused cycles, so the recursion ends; its depth is at most the pool count.
  for (std::size_t i = 0; i < decls.size(); ++i) place(i, place);
  std::shared_ptr<PoolTree> tree(new PoolTree());
  std::map<std::string, std::size_t, std::less<>> index;
  for (std::size_t i : order) {
    auto node = std::make_unique<Node>();
    node->name = decls[i].name;
    node->parent_name = decls[i].parent;
    if (!decls[i].parent.empty()) node->parent = index.find(decls[i].parent)->second;
    node->declared = decls[i].total;
    index.emplace(node->name, tree->nodes_.size());
    tree->nodes_.push_back(std::move(node));
  }
  return tree;
}

PoolTree::~PoolTree() = default;

std::optional<std::size_t> PoolTree::find(std::string_view name) const {
  for (std::size_t i = 0; i < nodes_.size(); ++i)
    if (nodes_[i]->name == name) return i;
  return std::nullopt;
}

std::size_t PoolTree::size() const noexcept { return nodes_.size(); }

std::size_t PoolTree::bind(std::string_view name, int scale) {
  const std::optional<std::size_t> found = find(name);
  if (!found) {
    std::vector<std::string> names;
    for (const auto& n : nodes_) names.push_back(n->name);
    throw SpecError("budget.pool",
                    "unknown pool `" + std::string(name) + "`" + did_you_mean(name, names) +
                        " (not in the pools file)");
  }
  std::vector<std::size_t> levels;
  for (std::optional<std::size_t> i = found; i; i = nodes_[*i]->parent) levels.push_back(*i);
  std::reverse(levels.begin(), levels.end());  // root first
  for (std::size_t i : levels) nodes_[i]->mutex.lock();
  struct Unlock {
    const PoolTree& t;
    const std::vector<std::size_t>& l;
    ~Unlock() {
      for (auto it = l.rbegin(); it != l.rend(); ++it) t.nodes_[*it]->mutex.unlock();
    }
  } unlock{*this, levels};
  // Everything is checked before anything changes.
  std::vector<std::pair<int, Amount>> moved(levels.size(), {-1, 0});
  for (std::size_t k = 0; k < levels.size(); ++k) {
    const Node& n = *nodes_[levels[k]];
    if (n.scale >= scale) continue;
    if (n.scale >= 0 && n.ledger.gross() > 0)
      throw SpecError("budget.pool",
                      "pool `" + n.name + "` has spent already at the budget scale " +
                          std::to_string(n.scale) + "; a task whose budget scale is " +
                          std::to_string(scale) +
                          " (finer) must be bound under it before anything is charged");
    const std::optional<Decimal> total = n.declared.rescaled(scale);
    if (!total)
      throw SpecError("budget.pool",
                      "pool `" + n.name + "`'s total " + n.declared.to_string() +
                          " is not exact at the task's budget scale of " + std::to_string(scale) +
                          " digits after the point (pools' amounts must be exact at the finest "
                          "scale of the tasks under them)");
    moved[k] = {scale, total->units};
  }
  for (std::size_t k = 0; k < levels.size(); ++k) {
    if (moved[k].first < 0) continue;
    Node& n = *nodes_[levels[k]];
    n.scale = moved[k].first;
    n.ledger = BudgetController(moved[k].second);
  }
  ++nodes_[*found]->tasks;
  return *found;
}

void PoolTree::unbind(std::size_t pool) noexcept {
  if (pool >= nodes_.size()) return;
  Node& n = *nodes_[pool];
  std::lock_guard lock(n.mutex);
  if (n.tasks > 0) --n.tasks;
}

void PoolTree::set_total(std::string_view name, const Decimal& total) {
  const std::optional<std::size_t> found = find(name);
  if (!found) {
    std::vector<std::string> names;
    for (const auto& n : nodes_) names.push_back(n->name);
    throw InvalidArgument("unknown pool `" + std::string(name) + "`" + did_you_mean(name, names));
  }
  Node& n = *nodes_[*found];
  const std::string what = "cannot set pool `" + n.name + "`'s total to " + total.to_string();
  if (total.units < 0) throw InvalidArgument(what + ": a total must not be negative");
  const std::lock_guard<Mutex> lock(n.mutex);
  if (n.scale >= 0) {
    const std::optional<Decimal> units = total.rescaled(n.scale);
    if (!units)
      throw InvalidArgument(what + ": not exact at the pool's scale of " + std::to_string(n.scale) +
                            " digits after the point");
    if (units->units < n.ledger.net())
      throw InvalidArgument(
          what + ": below its net spend " +
          Decimal{n.ledger.net(), static_cast<std::uint8_t>(n.scale)}.to_string());
    n.ledger.set_total(units->units);
  }
  n.declared = total;
}

std::vector<PoolStatus> PoolTree::status() const {
  // Every pool locked at once (in the lock order), so that the figures are one moment's.
  for (const auto& n : nodes_) n->mutex.lock();
  std::vector<PoolStatus> out;
  out.reserve(nodes_.size());
  for (const auto& n : nodes_) {
    PoolStatus s;
    s.name = n->name;
    s.parent = n->parent_name;
    if (n->scale >= 0) {
      s.scale = n->scale;
      s.total = n->ledger.total();
      s.gross = n->ledger.gross();
      s.net = n->ledger.net();
    } else {
      s.scale = n->declared.scale;
      s.total = n->declared.units;
    }
    s.tasks = n->tasks;
    out.push_back(std::move(s));
  }
  for (auto it = nodes_.rbegin(); it != nodes_.rend(); ++it) (*it)->mutex.unlock();
  return out;
}

// ---- Chain ----

PoolTree::Chain::Chain(const PoolTree& tree, std::size_t pool, int scale)
    : tree_(tree), scale_(scale) {
  CLAMPAI_ALWAYS_ASSERT(pool < tree.nodes_.size());
  for (std::optional<std::size_t> i = pool; i; i = tree.nodes_[*i]->parent) levels_.push_back(*i);
  // Root first: the highest level has the smallest index.
  for (auto it = levels_.rbegin(); it != levels_.rend(); ++it) tree_.nodes_[*it]->mutex.lock();
}

PoolTree::Chain::~Chain() {
  for (std::size_t i : levels_) tree_.nodes_[i]->mutex.unlock();
}

namespace {
// `amount` (a task's, at `from`) at a level's scale `to` (>= from once bound), or nullopt if
// it leaves the int64 range there.
std::optional<Amount> at_scale(Amount amount, int from, int to) {
  const std::optional<Decimal> d = Decimal{amount, static_cast<std::uint8_t>(from)}.rescaled(to);
  if (!d) return std::nullopt;
  return d->units;
}
}  // namespace

std::optional<std::size_t> PoolTree::Chain::refusing(Amount cost) const {
  for (std::size_t k = 0; k < levels_.size(); ++k) {
    const Node& n = *tree_.nodes_[levels_[k]];
    const std::optional<Amount> a = at_scale(cost, scale_, n.scale);
    Amount gross = 0;
    if (!a || !n.ledger.can_afford(*a) || __builtin_add_overflow(n.ledger.gross(), *a, &gross))
      return k;
  }
  return std::nullopt;
}

std::vector<PoolCharge> PoolTree::Chain::plan_charge(Amount cost) const {
  if (const auto k = refusing(cost))
    throw InvalidArgument("cannot charge " + std::to_string(cost) + " to pool `" + name(*k) +
                          "`: its remaining budget is " + remaining_text(*k));
  std::vector<PoolCharge> out;
  out.reserve(levels_.size());
  for (std::size_t i : levels_) {
    const Node& n = *tree_.nodes_[i];
    const Amount a = *at_scale(cost, scale_, n.scale);  // refusing() checked it
    out.push_back(PoolCharge{
        n.name, false, n.scale, a, n.ledger.gross() + a, n.ledger.net() + a, n.ledger.total()});
  }
  return out;
}

std::vector<PoolCharge> PoolTree::Chain::plan_refund(Amount amount) const {
  std::vector<PoolCharge> out;
  out.reserve(levels_.size());
  for (std::size_t i : levels_) {
    const Node& n = *tree_.nodes_[i];
    const std::optional<Amount> a = at_scale(amount, scale_, n.scale);
    if (!a || !n.ledger.can_refund(*a))
      throw InvalidArgument(
          "cannot refund " + std::to_string(amount) + " to pool `" + n.name +
          "`: its net spend is " +
          Decimal{n.ledger.net(), static_cast<std::uint8_t>(std::max(n.scale, 0))}.to_string());
    out.push_back(PoolCharge{
        n.name, true, n.scale, *a, n.ledger.gross(), n.ledger.net() - *a, n.ledger.total()});
  }
  return out;
}

void PoolTree::Chain::apply(const std::vector<PoolCharge>& plan) {
  CLAMPAI_ALWAYS_ASSERT(plan.size() == levels_.size());
  for (std::size_t k = 0; k < levels_.size(); ++k) {
    BudgetController& ledger = tree_.nodes_[levels_[k]]->ledger;
    // INVARIANT (budget-safe at every level): checked by the plan under the same locks.
    if (plan[k].refund) {
      ledger.refund(plan[k].amount);
    } else {
      ledger.charge(plan[k].amount);
    }
    CLAMPAI_ALWAYS_ASSERT(ledger.net() == plan[k].net && ledger.gross() == plan[k].gross);
  }
}

std::vector<PoolCharge> PoolTree::Chain::charge(Amount cost) {
  std::vector<PoolCharge> plan = plan_charge(cost);
  apply(plan);
  return plan;
}

std::vector<PoolCharge> PoolTree::Chain::refund(Amount amount) {
  std::vector<PoolCharge> plan = plan_refund(amount);
  apply(plan);
  return plan;
}

std::string PoolTree::Chain::name(std::size_t level) const {
  return tree_.nodes_[levels_.at(level)]->name;
}

std::string PoolTree::Chain::remaining_text(std::size_t level) const {
  const Node& n = *tree_.nodes_[levels_.at(level)];
  return Decimal{n.ledger.remaining(), static_cast<std::uint8_t>(std::max(n.scale, 0))}.to_string();
}

std::string PoolTree::Chain::total_text(std::size_t level) const {
  const Node& n = *tree_.nodes_[levels_.at(level)];
  return Decimal{n.ledger.total(), static_cast<std::uint8_t>(std::max(n.scale, 0))}.to_string();
}

std::shared_ptr<PoolTree> load_pools(std::string_view json_text) {
  return PoolTree::build(parse_pools(json_text));
}

std::shared_ptr<PoolTree> load_pools_file(const std::string& path) {
  return load_pools(read_file(path));
}

namespace detail {
std::optional<Reason> pool_check(const TaskModel& model,
                                 const PoolTree::Chain& chain,
                                 Amount cost) {
  const std::optional<std::size_t> level = chain.refusing(cost);
  if (!level) return std::nullopt;
  return pool_refusal(
      model, chain.name(*level), cost, chain.remaining_text(*level), chain.total_text(*level));
}

Reason pool_refusal(const TaskModel& model,
                    const std::string& name,
                    Amount cost,
                    const std::string& remaining,
                    const std::string& total) {
  return Reason{ReasonCode::budget_exceeded,
                "pool:" + name,
                "cost " + model.format_amount(cost) + " exceeds the remaining budget " + remaining +
                    " of pool `" + name + "` (total " + total + ")"};
}
}  // namespace detail

}  // namespace clampai::kernel
