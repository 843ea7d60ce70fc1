// Budget pools in C++ (`PoolTree`, kernels in pools) against the model extracted from
// coq/theories/Pools.v (issue 41), driven through `clampai_model` (coq/extract/driver.ml).
//
// Each round builds a random pool forest (up to 6 pools, totals at scales 0 to 2) and binds up
// to 6 tasks (`SafetyKernel`s whose budget names a pool, at budget scales 0 to 3) to it; then
// runs seeded random operations on both sides: a task's action (a charge along its path: its
// own budget, its pool, ... the root), a rollback (a refund along the same path), a charge or
// refund straight through a pool's `PoolTree::Chain` (amounts at, just below and just above the
// edges), and a change of a pool's total (`PoolTree::set_total`). After every operation it
// requires the same decision (accepted or refused, and the level that refused: the task's own
// budget, or the pool named by the `pool:NAME` subject of the rejection) and the same figures
// (total, gross, refunded) at every level. The model's levels are the pools (in the tree's
// order) then the tasks' own budgets, every amount at scale 3 (the finest budget scale used): a
// C++ figure at scale s is compared times 10^(3 - s).
//
// What the model has no notion of is checked apart: a task whose pool's total is not exact at
// its budget scale is refused at bind (SpecError at `budget.pool`) and changes no pool; a new
// total with more digits than the pool's scale is refused (InvalidArgument) and changes nothing.
//
// Usage: pools_differential --model PATH [--ops N] [--seed S] [--expect-mismatch]
// With --expect-mismatch (the mutant test) it succeeds iff some operation differs.
#include <signal.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "clampai/kernel/error.hpp"
#include "clampai/kernel/model.hpp"
#include "clampai/kernel/pools.hpp"
#include "clampai/kernel/safety_kernel.hpp"
#include "model_process.hpp"

namespace {

using namespace clampai::kernel;
using namespace clampai::formal;
using clampai::InvalidArgument;
using clampai::SpecError;

constexpr int finest = 3;  // the model's scale: the finest budget scale of the tasks

i128 to_model(i128 units, int scale) { return units * pow10_128(finest - scale); }

struct Counts {
  std::uint64_t ops = 0;
  std::uint64_t rounds = 0;
  std::uint64_t tasks = 0;
  std::uint64_t bind_refusals = 0;
  std::uint64_t approved = 0;
  std::uint64_t task_refusals = 0;  // refused by the task's own budget
  std::uint64_t pool_refusals = 0;  // refused by a pool
  std::uint64_t root_refusals = 0;  // ... by a root pool above the task's own pool
  std::uint64_t at_edge = 0;        // an approved charge that left some pool with 0 remaining
  std::uint64_t rollbacks = 0;
  std::uint64_t refused_rollbacks = 0;  // a pool's net spend below the cost (chain refunds)
  std::uint64_t chain_charges = 0;      // through PoolTree::Chain, accepted
  std::uint64_t chain_refused = 0;
  std::uint64_t chain_refunds = 0;
  std::uint64_t chain_refunds_refused = 0;
  std::uint64_t totals_set = 0;
  std::uint64_t totals_refused = 0;  // below net spend or negative (the model refuses too)
  std::uint64_t totals_inexact = 0;  // not exact at the pool's scale (C++ only)
};

struct Pool {
  std::string name{};
  std::optional<std::size_t> parent{};  // a declaration index
  Decimal total{};
};

struct Task {
  std::size_t pool = 0;  // a declaration index
  int scale = 0;
  i128 total = 0;  // at `scale`
  std::vector<i128> costs{};
  std::unique_ptr<SafetyKernel> kernel{};
  std::size_t level = 0;            // the model's level of its own budget
  std::vector<std::size_t> path{};  // the model's levels: its own, its pool, ..., the root
  std::vector<std::pair<Receipt, i128>> committed{};  // receipts and costs, most recent last
};

class Round {
 public:
  Round(ModelProcess& model, std::mt19937_64& rng, Counts& n, std::optional<std::size_t> unchecked)
      : model_(model), rng_(rng), n_(n), unchecked_(unchecked) {}

  void run(std::uint64_t ops) {
    build();
    for (std::uint64_t op = 0; op < ops && n_.ops < limit_; ++op) {
      ++n_.ops;
      where_ = "round " + std::to_string(n_.rounds) + " operation " + std::to_string(op);
      const std::uint64_t kind = below(100);
      if (kind < 45 && !tasks_.empty()) {
        execute(tasks_[below(tasks_.size())]);
      } else if (kind < 60 && !tasks_.empty()) {
        rollback(tasks_[below(tasks_.size())]);
      } else if (kind < 85 && !tasks_.empty()) {
        chain_operation(tasks_[below(tasks_.size())].pool);
      } else {
        change_total(below(pools_.size()));
      }
      compare();
    }
  }

  void set_limit(std::uint64_t limit) { limit_ = limit; }

  // The round in words, for a mismatch's report.
  std::string describe() const {
    std::string out;
    for (const Pool& p : pools_)
      out += "  pool " + p.name + " total " + p.total.to_string() +
             (p.parent ? " parent " + pools_[*p.parent].name : std::string()) + '\n';
    for (const Task& t : tasks_) {
      out += "  task in " + pools_[t.pool].name + " scale " + std::to_string(t.scale) + " total " +
             amount_text(t.total, t.scale) + " costs";
      for (i128 c : t.costs) out += ' ' + amount_text(c, t.scale);
      out += '\n';
    }
    return out;
  }

 private:
  std::uint64_t below(std::uint64_t k) {
    return std::uniform_int_distribution<std::uint64_t>(0, k - 1)(rng_);
  }
  std::int64_t between(std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng_);
  }
  bool chance(int percent) { return static_cast<int>(below(100)) < percent; }

  // An amount of about `whole` units of currency at `scale`, now and then with a fraction.
  i128 amount(std::int64_t lo, std::int64_t hi, int scale, int fraction_percent) {
    const i128 p = pow10_128(scale);
    i128 a = between(lo, hi) * p;
    if (scale > 0 && chance(fraction_percent)) a += between(0, static_cast<std::int64_t>(p) - 1);
    return a;
  }

  void expect(bool ok, const std::string& what) {
    if (!ok) throw Mismatch(where_ + ": " + what);
  }

  void build() {
    ++n_.rounds;
    const std::size_t pools = 1 + below(6);
    std::vector<PoolDecl> decls;
    for (std::size_t i = 0; i < pools; ++i) {
      Pool p;
      p.name = "p" + std::to_string(i);
      if (i > 0 && chance(75)) p.parent = below(i);
      const int scale = static_cast<int>(below(3));
      p.total = Decimal{static_cast<std::int64_t>(amount(0, 30, scale, 15)),
                        static_cast<std::uint8_t>(scale)};
      decls.push_back(PoolDecl{p.name, p.total, p.parent ? pools_[*p.parent].name : ""});
      pools_.push_back(p);
    }
    // Declared out of order now and then: the tree orders its pools itself.
    std::shuffle(decls.begin(), decls.end(), rng_);
    tree_ = PoolTree::build(decls);
    for (Pool& p : pools_) index_.push_back(*tree_->find(p.name));
    bound_.assign(pools_.size(), -1);

    const std::size_t tasks = 1 + below(6);
    for (std::size_t i = 0; i < tasks; ++i) add_task();

    // The model: the pools in the tree's order, then the tasks' budgets.
    std::vector<i128> totals(pools_.size());
    for (std::size_t p = 0; p < pools_.size(); ++p)
      totals[index_[p]] = to_model(pools_[p].total.units, pools_[p].total.scale);
    for (Task& t : tasks_) {
      t.level = totals.size();
      totals.push_back(to_model(t.total, t.scale));
      t.path.push_back(t.level);
      for (std::optional<std::size_t> p = t.pool; p; p = pools_[*p].parent)
        t.path.push_back(index_[*p]);
    }
    std::string line = "levels " + (unchecked_ ? std::to_string(*unchecked_) : std::string("-")) +
                       ' ' + std::to_string(totals.size());
    for (i128 v : totals) line += ' ' + str(v);
    const std::vector<std::string> tokens = model_.ask(line);
    const std::size_t count = static_cast<std::size_t>(parse_i128(tokens.at(1)));
    last_.clear();
    for (std::size_t i = 0; i < count; ++i)
      last_.push_back({parse_i128(tokens.at(2 + 3 * i)),
                       parse_i128(tokens.at(3 + 3 * i)),
                       parse_i128(tokens.at(4 + 3 * i))});
    where_ = "round " + std::to_string(n_.rounds) + " (built)";
    compare();
  }

  void add_task() {
    Task t;
    t.pool = below(pools_.size());
    t.scale = static_cast<int>(below(4));
    t.total = amount(0, 20, t.scale, 30);
    const std::size_t actions = 1 + below(4);
    for (std::size_t i = 0; i < actions; ++i)
      t.costs.push_back(std::max<i128>(1, amount(0, 8, t.scale, 40)));
    TaskDecl d;
    d.name = "pooled";
    d.variables.push_back(VariableDecl{});
    d.variables[0].name = "x";
    d.variables[0].type = Type::integer();
    d.variables[0].initial = Value::integer(0);
    for (std::size_t i = 0; i < t.costs.size(); ++i) {
      ActionDecl a;
      a.id = "a" + std::to_string(i);
      a.cost = amount_text(t.costs[i], t.scale);
      a.effects.push_back(EffectDecl{"x", EffectMode::increment, "1"});
      d.actions.push_back(a);
    }
    d.budget.scale = t.scale;
    d.budget.total =
        Decimal{static_cast<std::int64_t>(t.total), static_cast<std::uint8_t>(t.scale)};
    d.budget.min_action_cost = Decimal{1, static_cast<std::uint8_t>(t.scale)};
    d.budget.pool = pools_[t.pool].name;
    // Binding refuses a task if a level it would move to the task's scale has a total that is
    // not exact there (the model has no scales: this is checked here).
    bool exact = true;
    for (std::optional<std::size_t> p = t.pool; p; p = pools_[*p].parent) {
      if (bound_[*p] >= t.scale) continue;
      const Decimal& total = pools_[*p].total;
      if (total.scale > t.scale &&
          total.units % static_cast<std::int64_t>(pow10_128(total.scale - t.scale)) != 0)
        exact = false;
    }
    const std::vector<PoolStatus> before = tree_->status();
    KernelOptions options;
    options.pools = tree_;
    try {
      t.kernel = std::make_unique<SafetyKernel>(build_model(d), options);
    } catch (const SpecError& e) {
      where_ = "round " + std::to_string(n_.rounds) + " (binding a task)";
      expect(!exact && std::string(e.what()).find("budget.pool") != std::string::npos &&
                 std::string(e.what()).find("not exact") != std::string::npos,
             std::string("binding refused: ") + e.what());
      expect(same_status(before, tree_->status()), "a refused bind changed a pool");
      ++n_.bind_refusals;
      return;
    }
    where_ = "round " + std::to_string(n_.rounds) + " (binding a task)";
    expect(exact, "a pool's total is not exact at the task's scale, and the bind was accepted");
    for (std::optional<std::size_t> p = t.pool; p; p = pools_[*p].parent)
      bound_[*p] = std::max(bound_[*p], t.scale);
    ++n_.tasks;
    tasks_.push_back(std::move(t));
  }

  static bool same_status(const std::vector<PoolStatus>& a, const std::vector<PoolStatus>& b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
      if (a[i].scale != b[i].scale || a[i].total != b[i].total || a[i].gross != b[i].gross ||
          a[i].net != b[i].net)
        return false;
    return true;
  }

  // The model's answer: OK AT LEVELS.
  struct Answer {
    bool ok = false;
    int at = -1;
    std::vector<std::array<i128, 3>> levels{};  // total, gross, refunded
  };

  Answer ask(const std::string& line) {
    const std::vector<std::string> tokens = model_.ask(line);
    Answer a;
    a.ok = tokens.at(1) == "1";
    a.at = static_cast<int>(parse_i128(tokens.at(2)));
    const std::size_t count = static_cast<std::size_t>(parse_i128(tokens.at(3)));
    for (std::size_t i = 0; i < count; ++i)
      a.levels.push_back({parse_i128(tokens.at(4 + 3 * i)),
                          parse_i128(tokens.at(5 + 3 * i)),
                          parse_i128(tokens.at(6 + 3 * i))});
    last_ = a.levels;
    return a;
  }

  static std::string path_text(const std::vector<std::size_t>& path) {
    std::string out = std::to_string(path.size());
    for (std::size_t i : path) out += ' ' + std::to_string(i);
    return out;
  }

  // The position in `t.path` of the level the kernel's rejection names.
  int refusing_position(const Task& t, const Decision& d) {
    for (const Reason& r : d.reasons) {
      expect(r.code == ReasonCode::budget_exceeded,
             "the C++ rejects for a reason outside the model: " + std::string(to_string(r.code)) +
                 ": " + r.message);
      if (r.subject.rfind("pool:", 0) != 0) return 0;
      const std::optional<std::size_t> p = tree_->find(r.subject.substr(5));
      expect(p.has_value(), "the rejection names an unknown pool: " + r.subject);
      const auto at = std::find(t.path.begin() + 1, t.path.end(), *p);
      expect(at != t.path.end(),
             "the rejection names a pool outside the task's path: " + r.subject);
      return static_cast<int>(at - t.path.begin());
    }
    return -1;
  }

  void execute(Task& t) {
    // The step limit (T2) is outside the pools model: a task at it rolls back instead.
    if (t.kernel->steps() >= static_cast<std::uint64_t>(t.kernel->step_limit())) {
      rollback(t);
      return;
    }
    const std::size_t index = below(t.costs.size());
    const i128 cost = t.costs[index];
    where_ += " (task at level " + std::to_string(t.level) + " executes a" + std::to_string(index) +
              ", cost " + amount_text(cost, t.scale) + ")";
    const Answer m = ask("pcharge " + str(to_model(cost, t.scale)) + ' ' + path_text(t.path));
    std::optional<Outcome> attempt;
    try {
      attempt = t.kernel->execute(Proposal{index, {}});
    } catch (const std::exception& e) {
      expect(false, std::string("the C++ threw: ") + e.what());
    }
    const Outcome& out = *attempt;
    const int at = refusing_position(t, out.decision);
    expect(m.ok == out.decision.approved && m.at == at,
           std::string("decisions differ: model ") + (m.ok ? "approves" : "refuses") + " (level " +
               std::to_string(m.at) + "), C++ " + (out.decision.approved ? "approves" : "rejects") +
               " (level " + std::to_string(at) + ")");
    if (out.decision.approved) {
      ++n_.approved;
      t.committed.emplace_back(*out.receipt, cost);
      expect(out.pools.size() + 1 == t.path.size(), "the outcome's pools are not the path");
      for (const PoolCharge& c : out.pools)
        if (c.net == c.total) ++n_.at_edge;
    } else if (at == 0) {
      ++n_.task_refusals;
    } else {
      ++n_.pool_refusals;
      if (at >= 2) ++n_.root_refusals;
    }
  }

  void rollback(Task& t) {
    if (t.committed.empty()) return;
    const auto [receipt, cost] = t.committed.back();
    t.committed.pop_back();
    where_ += " (task at level " + std::to_string(t.level) + " rolls back " +
              amount_text(cost, t.scale) + ")";
    const Answer m = ask("prefund " + str(to_model(cost, t.scale)) + ' ' + path_text(t.path));
    // A pool's net spend may be smaller than the task's own (charges and refunds straight
    // through its chain): then the model refuses the refund at that level, and the C++ must
    // refuse it with a clear error, changing nothing (the receipt stays good).
    std::string thrown;
    bool approved = false;
    try {
      approved = t.kernel->rollback(receipt).decision.approved;
    } catch (const InvalidArgument& e) {
      thrown = e.what();
    }
    if (!thrown.empty()) {
      expect(!m.ok && thrown.find("cannot refund") != std::string::npos &&
                 thrown.find("pool `") != std::string::npos,
             std::string("rollback: model ") + (m.ok ? "refunds" : "refuses") +
                 ", C++ refuses: " + thrown);
      t.committed.emplace_back(receipt, cost);
      ++n_.refused_rollbacks;
      return;
    }
    expect(m.ok && approved,
           std::string("rollback: model ") + (m.ok ? "refunds" : "refuses") + ", C++ " +
               (approved ? "rolls back" : "refuses"));
    ++n_.rollbacks;
  }

  // A charge or refund straight through the chain of pool `p`, at its own scale.
  void chain_operation(std::size_t p) {
    const std::size_t pool = index_[p];
    const int scale = bound_[p];
    std::vector<std::size_t> path;
    for (std::optional<std::size_t> q = p; q; q = pools_[*q].parent) path.push_back(index_[*q]);
    const bool charge = chance(60);
    // The level whose edge the amount sits at: any level of the path, at the model's scale.
    const auto& edge = last_.at(path[below(path.size())]);
    const i128 remaining = edge[0] - (edge[1] - edge[2]);
    const i128 net = edge[1] - edge[2];
    const i128 unit = pow10_128(finest - scale);
    i128 a = 0;  // at `scale`
    switch (below(6)) {
      case 0:
        a = (charge ? remaining : net) / unit;
        break;
      case 1:
        a = (charge ? remaining : net) / unit + 1;
        break;
      case 2:
        a = (charge ? remaining : net) / unit - 1;
        break;
      case 3:
        a = chance(50) ? 0 : -1;
        break;
      default:
        a = amount(0, 5, scale, 50);
        break;
    }
    where_ += std::string(" (chain of ") + pools_[p].name + ' ' +
              (charge ? "charges " : "refunds ") + amount_text(a, scale) + ")";
    const Answer m = ask(std::string(charge ? "pcharge " : "prefund ") + str(to_model(a, scale)) +
                         ' ' + path_text(path));
    PoolTree::Chain chain(*tree_, pool, scale);
    int at = -1;
    std::string thrown;
    if (charge) {
      if (const auto k = chain.refusing(static_cast<Amount>(a))) at = static_cast<int>(*k);
    }
    try {
      if (charge) {
        (void)chain.charge(static_cast<Amount>(a));
      } else {
        (void)chain.refund(static_cast<Amount>(a));
      }
    } catch (const InvalidArgument& e) {
      thrown = e.what();
    }
    const bool ok = thrown.empty();
    if (!charge && !ok) at = m.at;  // a refund's refusal names no level (the message does)
    expect(m.ok == ok && m.at == at,
           std::string("model ") + (m.ok ? "accepts" : "refuses") + " (level " +
               std::to_string(m.at) + "), C++ " + (ok ? "accepts" : "refuses: " + thrown) +
               " (level " + std::to_string(at) + ")");
    if (charge) {
      ++(ok ? n_.chain_charges : n_.chain_refused);
    } else {
      ++(ok ? n_.chain_refunds : n_.chain_refunds_refused);
    }
  }

  void change_total(std::size_t p) {
    const std::size_t pool = index_[p];
    const auto& level = last_.at(pool);
    const int scale = bound_[p] >= 0 ? bound_[p] : pools_[p].total.scale;
    const i128 unit = pow10_128(finest - scale);
    const i128 net = (level[1] - level[2]) / unit;
    i128 t = 0;  // at `scale`
    int t_scale = scale;
    // An unbound pool takes any total (its scale is fixed when a task binds): exact ones here.
    switch (bound_[p] >= 0 ? below(6) : 4) {
      case 0:
        t = net;
        break;
      case 1:
        t = net - 1;
        break;
      case 2:
        t = -1 - static_cast<i128>(below(3));
        break;
      case 3:
        // One digit more than the pool's scale: not exact there unless it ends in 0.
        t = net * 10 + between(0, 40);
        t_scale = scale + 1;
        break;
      default:
        t = net + amount(0, 10, scale, 50);
        break;
    }
    const Decimal total{static_cast<std::int64_t>(t), static_cast<std::uint8_t>(t_scale)};
    where_ += " (pool " + pools_[p].name + "'s total set to " + total.to_string() + ")";
    const bool exact = t_scale == scale || t % 10 == 0;
    const std::vector<PoolStatus> before = tree_->status();
    std::string thrown;
    try {
      tree_->set_total(pools_[p].name, total);
    } catch (const InvalidArgument& e) {
      thrown = e.what();
    }
    if (!exact && t >= 0) {
      expect(thrown.find("not exact") != std::string::npos,
             "a total not exact at the pool's scale was not refused clearly: " + thrown);
      expect(same_status(before, tree_->status()), "a refused total changed the pool");
      ++n_.totals_inexact;
      return;
    }
    const i128 model_total = t_scale == scale ? t * unit : (t / 10) * unit;
    const Answer m = ask("ptotal " + std::to_string(pool) + ' ' + str(model_total));
    expect(m.ok == thrown.empty(),
           std::string("model ") + (m.ok ? "accepts" : "refuses") + ", C++ " +
               (thrown.empty() ? "accepts" : "refuses: " + thrown));
    if (thrown.empty()) pools_[p].total = total;
    ++(m.ok ? n_.totals_set : n_.totals_refused);
  }

  // Every level's figures on both sides (the model's last answer).
  void compare() {
    const std::vector<PoolStatus> status = tree_->status();
    expect(last_.size() == status.size() + tasks_.size(), "the model has another number of levels");
    for (std::size_t i = 0; i < status.size(); ++i) {
      const PoolStatus& s = status[i];
      const std::array<i128, 3> cpp{to_model(s.total, s.scale),
                                    to_model(s.gross, s.scale),
                                    to_model(s.gross - s.net, s.scale)};
      expect(cpp == last_[i],
             "pool " + s.name + " differs: model total " + str(last_[i][0]) + " gross " +
                 str(last_[i][1]) + " refunded " + str(last_[i][2]) + ", C++ " + str(cpp[0]) + ' ' +
                 str(cpp[1]) + ' ' + str(cpp[2]) + " (at scale " + std::to_string(finest) + ")");
    }
    for (const Task& t : tasks_) {
      const BudgetController b = t.kernel->budget();
      const std::array<i128, 3> cpp{to_model(b.total(), t.scale),
                                    to_model(b.gross(), t.scale),
                                    to_model(b.refunded(), t.scale)};
      expect(cpp == last_[t.level],
             "the task's budget at level " + std::to_string(t.level) + " differs: model gross " +
                 str(last_[t.level][1]) + " refunded " + str(last_[t.level][2]) + ", C++ " +
                 str(cpp[1]) + ' ' + str(cpp[2]));
    }
  }

  ModelProcess& model_;
  std::mt19937_64& rng_;
  Counts& n_;
  std::optional<std::size_t> unchecked_;
  std::uint64_t limit_ = 0;
  std::vector<Pool> pools_{};
  std::vector<std::size_t> index_{};  // declaration -> the tree's index (the model's level)
  std::vector<int> bound_{};          // declaration -> the scale its tasks fixed (-1: none)
  std::shared_ptr<PoolTree> tree_{};
  std::vector<Task> tasks_{};
  std::vector<std::array<i128, 3>> last_{};
  std::string where_{};
};

int usage(const std::string& why) {
  std::cerr << "pools_differential: " << why
            << "\nusage: pools_differential --model PATH [--ops N] [--seed S] "
               "[--unchecked-level K] [--expect-mismatch]\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string model_path;
  std::uint64_t ops = 60000;
  std::uint64_t seed = 20261128;
  std::optional<std::size_t> unchecked;
  bool expect_mismatch = false;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--expect-mismatch") {
      expect_mismatch = true;
    } else if (i + 1 < argc && (arg == "--model" || arg == "--ops" || arg == "--seed" ||
                                arg == "--unchecked-level")) {
      const std::string value = argv[++i];
      if (arg == "--model") {
        model_path = value;
        continue;
      }
      char* end = nullptr;
      const unsigned long long v = std::strtoull(value.c_str(), &end, 10);
      if (value.empty() || *end != '\0') return usage("not a number: " + value);
      if (arg == "--ops") {
        ops = v;
      } else if (arg == "--seed") {
        seed = v;
      } else {
        unchecked = static_cast<std::size_t>(v);
      }
    } else {
      return usage("unknown or incomplete argument: " + std::string(arg));
    }
  }
  if (model_path.empty()) return usage("--model is required");
  signal(SIGPIPE, SIG_IGN);

  Counts n;
  std::mt19937_64 rng(seed);
  try {
    ModelProcess model(model_path);
    while (n.ops < ops) {
      Round round(model, rng, n, unchecked);
      round.set_limit(ops);
      try {
        round.run(20 + std::uniform_int_distribution<std::uint64_t>(0, 80)(rng));
      } catch (const Mismatch&) {
        std::cerr << "the round:\n" << round.describe();
        throw;
      }
    }
  } catch (const Mismatch& e) {
    std::cout << "MISMATCH (seed " << seed << "): " << e.what() << '\n';
    if (expect_mismatch) {
      std::cout << "pools_differential: the comparison caught the difference, as expected\n";
      return 0;
    }
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "pools_differential: " << e.what() << '\n';
    return 2;
  }
  std::cout << "pools_differential: " << n.ops << " operations (seed " << seed << "), " << n.rounds
            << " pool trees, " << n.tasks << " tasks bound (" << n.bind_refusals
            << " refused at bind: a total not exact at the task's scale); actions: " << n.approved
            << " approved (" << n.at_edge << " pool levels left with nothing remaining), "
            << n.task_refusals << " refused by the task's budget, " << n.pool_refusals
            << " by a pool (" << n.root_refusals << " above the task's own pool); " << n.rollbacks
            << " rollbacks (" << n.refused_rollbacks
            << " refused by a pool); through a chain: " << n.chain_charges << " charges ("
            << n.chain_refused << " refused), " << n.chain_refunds << " refunds ("
            << n.chain_refunds_refused << " refused); totals: " << n.totals_set << " set, "
            << n.totals_refused << " refused, " << n.totals_inexact << " refused as inexact\n";
  if (expect_mismatch) {
    std::cout << "pools_differential: expected a mismatch, found none\n";
    return 1;
  }
  if (n.bind_refusals == 0 || n.at_edge == 0 || n.task_refusals == 0 || n.pool_refusals == 0 ||
      n.root_refusals == 0 || n.rollbacks == 0 || n.refused_rollbacks == 0 ||
      n.chain_charges == 0 || n.chain_refused == 0 || n.chain_refunds == 0 ||
      n.chain_refunds_refused == 0 || n.totals_set == 0 || n.totals_refused == 0 ||
      n.totals_inexact == 0) {
    std::cout << "pools_differential: some kind of operation never happened; change the seed or "
                 "the generator\n";
    return 1;
  }
  return 0;
}
