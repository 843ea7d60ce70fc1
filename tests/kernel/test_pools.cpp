// Budget pools (issue 41): the pools file's parser on adversarial input, a charge that must fit
// every level (the refusal names the level), refunds to every level, and seeded random pool
// trees charged by several threads at once: no level ever overspends (T1), gross never falls
// (T4), and every level's net spend is exactly what the tasks under it keep spent.
#include <catch2/catch.hpp>
#include <map>
#include <random>
#include <thread>

#include "support.hpp"

using namespace clampai::kernel;
using clampai::SpecError;

namespace {

// A task spec whose one action `spend` costs `cost`, under pool `pool` (none if empty).
std::string task(const std::string& pool,
                 const std::string& total,
                 const std::string& cost,
                 int scale = 3) {
  return R"({"name": "t", "variables": {"n": {"type": "int", "initial": 0}},
    "actions": [{"id": "spend", "cost": )" +
         cost + R"(, "effects": [{"variable": "n", "mode": "increment", "value": 1}]}],
    "budget": {"total": )" +
         total + R"(, "min_action_cost": 1, "scale": )" + std::to_string(scale) +
         (pool.empty() ? std::string() : R"(, "pool": ")" + pool + "\"") + "}}";
}

// The SpecError parse_pools throws for `text` (or an empty one if none).
SpecError pools_error(const std::string& text) {
  try {
    (void)load_pools(text);
  } catch (const SpecError& e) {
    return e;
  }
  FAIL("no error for " << text);
  return SpecError("", "");
}

std::map<std::string, PoolStatus> by_name(const PoolTree& tree) {
  std::map<std::string, PoolStatus> out;
  for (PoolStatus& s : tree.status()) out.emplace(s.name, s);
  return out;
}

}  // namespace

TEST_CASE("Pools file: a tree loads with its totals and parents", "[pools]") {
  const auto tree = load_pools(
      R"({"pools": {"team-a": {"total": 40, "parent": "org"}, "org": {"total": "100.5"}}})");
  REQUIRE(tree->size() == 2);
  const auto s = tree->status();
  REQUIRE(s[0].name == "org");  // parents first
  REQUIRE(s[0].format(s[0].total) == "100.5");
  REQUIRE(s[1].parent == "org");
  REQUIRE(s[1].net == 0);
}

TEST_CASE("Pools file: bad input is refused naming the place", "[pools][adversarial]") {
  SECTION("unknown parent, with a suggestion and the line") {
    const SpecError e = pools_error(
        "{\"pools\": {\"org\": {\"total\": 100},\n  \"team\": {\"total\": 1, \"parent\": "
        "\"orh\"}}}");
    REQUIRE(e.path() == "pools.team.parent");
    REQUIRE(std::string(e.what()).find("unknown parent pool `orh`") != std::string::npos);
    REQUIRE(std::string(e.what()).find("org") != std::string::npos);
    REQUIRE(e.problems().front().line == 2);
  }
  SECTION("a cycle") {
    const SpecError e = pools_error(
        R"({"pools": {"a": {"total": 1, "parent": "b"}, "b": {"total": 1, "parent": "a"}}})");
    REQUIRE(std::string(e.what()).find("cycle") != std::string::npos);
  }
  SECTION("its own parent") {
    const SpecError e = pools_error(R"({"pools": {"a": {"total": 1, "parent": "a"}}})");
    REQUIRE(e.path() == "pools.a.parent");
  }
  SECTION("a duplicate pool") {
    const SpecError e = pools_error(R"({"pools": {"a": {"total": 1}, "a": {"total": 2}}})");
    REQUIRE(std::string(e.what()).find("duplicate") != std::string::npos);
  }
  SECTION("a negative total") {
    const SpecError e = pools_error(R"({"pools": {"a": {"total": -1}}})");
    REQUIRE(e.path() == "pools.a.total");
    REQUIRE(std::string(e.what()).find("negative") != std::string::npos);
  }
  SECTION("the rest") {
    for (const char* bad : {
             "",
             "[]",
             "{}",
             R"({"pools": []})",
             R"({"pools": {"a": 5}})",
             R"({"pools": {"a": {}}})",
             R"({"pools": {"a": {"total": "x"}}})",
             R"({"pools": {"a": {"total": true}}})",
             R"({"pools": {"a": {"total": 1e400}}})",
             R"({"pools": {"a": {"total": 0.0000000000000000001}}})",
             R"({"pools": {"a": {"total": 1, "parent": ""}}})",
             R"({"pools": {"a": {"total": 1, "parent": 3}}})",
             R"({"pools": {"a": {"total": 1, "limit": 3}}})",
             R"({"pools": {"a b": {"total": 1}}})",
             R"({"pools": {"": {"total": 1}}})",
             R"({"pools": {"a.b": {"total": 1}}})",
             R"({"pools": {"a": {"total": 1}}, "extra": 1})",
             R"({"pools": {"a": {"total": 1}})",
             "{\"pools\": {\"a\": {\"total\": 1, \"parent\": {\"x\": [[[[[[[[[[]]]]]]]]]]}}}}",
         }) {
      INFO(bad);
      REQUIRE_THROWS_AS(load_pools(bad), SpecError);
    }
  }
  SECTION("a name too long") {
    REQUIRE_THROWS_AS(load_pools(R"({"pools": {")" + std::string(65, 'a') + R"(": {"total": 1}}})"),
                      SpecError);
    REQUIRE_NOTHROW(load_pools(R"({"pools": {")" + std::string(64, 'a') + R"(": {"total": 1}}})"));
  }
}

TEST_CASE("Pools: a task's budget names its pool; the pool is in the model digest", "[pools]") {
  const auto pooled = load_spec(task("team-a", "20", "1"));
  REQUIRE(pooled->budget.pool == "team-a");
  REQUIRE(pooled->digest != load_spec(task("", "20", "1"))->digest);
  REQUIRE(pooled->digest != load_spec(task("team-b", "20", "1"))->digest);
  REQUIRE_THROWS_WITH(load_spec(task("no pool", "20", "1")),
                      Catch::Contains("budget.pool") && Catch::Contains("not a pool name"));
  REQUIRE_THROWS_WITH(
      load_spec(task("", "20", "1")
                    .replace(task("", "20", "1").find("\"scale\""), 0, "\"pool\": \"\", ")),
      Catch::Contains("empty pool name"));
}

TEST_CASE("Pools: a charge must fit every level, and the refusal names the level", "[pools]") {
  const auto tree = load_pools(R"({"pools": {"org": {"total": 100},
      "team-a": {"total": 40, "parent": "org"}, "team-b": {"total": 70, "parent": "org"}}})");
  KernelOptions options;
  options.pools = tree;
  SafetyKernel a(load_spec(task("team-a", "50", "10")), options);
  SafetyKernel b(load_spec(task("team-b", "80", "10")), options);
  std::vector<Receipt> receipts;
  for (int i = 0; i < 4; ++i) {
    const Outcome o = a.execute("spend");
    REQUIRE(o.receipt);
    receipts.push_back(*o.receipt);
  }
  // The task has 10 left; team-a has nothing left: refused, naming team-a.
  const Decision seen = a.evaluate("spend");
  REQUIRE_FALSE(seen.approved);
  const Outcome refused = a.execute("spend");
  REQUIRE_FALSE(refused.receipt);
  REQUIRE(refused.decision.reasons.size() == 1);
  REQUIRE(refused.decision.reasons[0].code == ReasonCode::budget_exceeded);
  REQUIRE(refused.decision.reasons[0].subject == "pool:team-a");
  REQUIRE(refused.decision.reasons[0].message.find("team-a") != std::string::npos);
  REQUIRE(a.budget().net() == 40000);  // T5: nothing changed
  // team-b has 70 but org only 60 left: the sixth charge of b is refused by org.
  for (int i = 0; i < 6; ++i) REQUIRE(b.execute("spend").receipt);
  const Outcome by_org = b.execute("spend");
  REQUIRE_FALSE(by_org.receipt);
  REQUIRE(by_org.decision.reasons.at(0).subject == "pool:org");
  auto s = by_name(*tree);
  REQUIRE(s["org"].net == s["org"].total);
  REQUIRE(s["team-a"].net == 40000);
  REQUIRE(s["team-b"].net == 60000);
  // A rollback returns to every level; gross stays (T4).
  const Outcome charged = [&] {
    SafetyKernel c(load_spec(task("", "10", "1")));  // a task without a pool is unaffected
    return c.execute("spend");
  }();
  REQUIRE(charged.receipt);
  REQUIRE(charged.pools.empty());
  const Outcome undone = a.rollback(receipts.back());
  REQUIRE(undone.pools.size() == 2);
  REQUIRE(undone.pools[0].pool == "team-a");
  REQUIRE(undone.pools[0].refund);
  REQUIRE(undone.pools[1].pool == "org");
  s = by_name(*tree);
  REQUIRE(s["team-a"].net == 30000);
  REQUIRE(s["team-a"].gross == 40000);
  REQUIRE(s["org"].net == 90000);
  REQUIRE(s["org"].gross == 100000);
  const Outcome again = b.execute("spend");  // org has 10 again
  REQUIRE(again.receipt);
  REQUIRE(again.pools.size() == 2);
  REQUIRE(again.pools[0].pool == "team-b");
  REQUIRE(again.pools[1].pool == "org");
  REQUIRE(again.pools[1].net == again.pools[1].total);
}

TEST_CASE("Pools: a pool counts the kernels bound to it now; their spend outlives them",
          "[pools]") {
  const auto tree = load_pools(R"({"pools": {"org": {"total": 100}}})");
  KernelOptions options;
  options.pools = tree;
  {
    SafetyKernel a(load_spec(task("org", "50", "10")), options);
    REQUIRE(a.execute("spend").receipt);
    SafetyKernel b(load_spec(task("org", "50", "10")), options);
    REQUIRE(by_name(*tree)["org"].tasks == 2);
  }
  // Both gone: none bound, their spend stays charged (and a kernel replacing one counts once).
  REQUIRE(by_name(*tree)["org"].tasks == 0);
  REQUIRE(by_name(*tree)["org"].net == 10000);
  // A kernel whose construction fails after binding (its trace does not replay) unbinds.
  KernelOptions resume = options;
  resume.resume.push_back(TraceEntry{});
  REQUIRE_THROWS(SafetyKernel(load_spec(task("org", "50", "10")), resume));
  REQUIRE(by_name(*tree)["org"].tasks == 0);
}

TEST_CASE("Pools: a compensation refunds every level once, as a rollback does",
          "[pools][compensation]") {
  const auto tree = load_pools(R"({"pools": {"org": {"total": 100},
      "team-a": {"total": 40, "parent": "org"}}})");
  KernelOptions options;
  options.pools = tree;
  SafetyKernel a(load_spec(task("team-a", "50", "10")), options);
  const Outcome first = a.execute("spend");
  REQUIRE(first.receipt);
  REQUIRE(a.execute("spend").receipt);
  const Outcome undone = a.compensate(*first.receipt);  // not the latest: compensated
  REQUIRE(undone.pools.size() == 2);
  REQUIRE(undone.pools[0].pool == "team-a");
  REQUIRE(undone.pools[0].refund);
  REQUIRE(undone.pools[1].pool == "org");
  auto s = by_name(*tree);
  REQUIRE(s["team-a"].net == 10000);
  REQUIRE(s["team-a"].gross == 20000);
  REQUIRE(s["org"].net == 10000);
  REQUIRE(s["org"].gross == 20000);
  REQUIRE(a.budget().net() == 10000);
  REQUIRE(a.state().get("n") == Value::integer(1));
  REQUIRE(a.trace().back().pools.size() == 2);
  REQUIRE_THROWS(a.compensate(*first.receipt));  // once
  s = by_name(*tree);
  REQUIRE(s["org"].net == 10000);
}

TEST_CASE("Pools: amounts exact at the finest scale of the tasks under them", "[pools]") {
  const auto tree = load_pools(R"({"pools": {"org": {"total": "100.005"}}})");
  KernelOptions options;
  options.pools = tree;
  // Scale 2 cannot represent 100.005: refused when the task is bound.
  REQUIRE_THROWS_WITH(SafetyKernel(load_spec(task("org", "5", "1", 2)), options),
                      Catch::Contains("budget.pool") && Catch::Contains("100.005"));
  // Unknown pool.
  REQUIRE_THROWS_WITH(SafetyKernel(load_spec(task("orgg", "5", "1", 3)), options),
                      Catch::Contains("unknown pool `orgg`") && Catch::Contains("org"));
  SafetyKernel fine(load_spec(task("org", "5", "1.5", 3)), options);
  REQUIRE(fine.execute("spend").receipt);
  // A finer task once something is spent: refused (the pool's figures are at scale 3).
  REQUIRE_THROWS_WITH(SafetyKernel(load_spec(task("org", "5", "1", 4)), options),
                      Catch::Contains("spent already"));
  // A coarser one is charged exactly at the pool's scale.
  SafetyKernel coarse(load_spec(task("org", "5", "2", 0)), options);
  REQUIRE(coarse.execute("spend").receipt);
  REQUIRE(by_name(*tree)["org"].net == 3500);
}

TEST_CASE("Pools: a total raised or lowered at run time, never below the spend", "[pools]") {
  const auto tree = load_pools(R"({"pools": {"org": {"total": 10},
      "idle": {"total": "2.5", "parent": "org"}}})");
  KernelOptions options;
  options.pools = tree;
  SafetyKernel k(load_spec(task("org", "100", "3", 2)), options);
  REQUIRE(k.execute("spend").receipt);
  REQUIRE(k.execute("spend").receipt);  // org: 6.00 of 10.00
  const auto refused =
      [&](const std::string& name, const std::string& total, const std::string& why) {
        const auto before = by_name(*tree);
        REQUIRE_THROWS_WITH(tree->set_total(name, *Decimal::parse(total)), Catch::Contains(why));
        const auto after = by_name(*tree);
        for (const auto& [n, s] : before) {  // nothing changed
          REQUIRE(after.at(n).total == s.total);
          REQUIRE(after.at(n).scale == s.scale);
        }
      };
  refused("org", "5.99", "pool `org`'s total to 5.99: below its net spend 6.00");
  refused("org", "-1", "must not be negative");
  refused("org", "7.005", "not exact at the pool's scale of 2 digits");
  refused("orgg", "7", "unknown pool `orgg` (did you mean `org`?)");
  tree->set_total("org", *Decimal::parse("6"));  // exactly the spend: allowed, nothing left
  const Outcome full = k.execute("spend");
  REQUIRE_FALSE(full.receipt);
  REQUIRE(full.decision.reasons.at(0).subject == "pool:org");
  tree->set_total("org", *Decimal::parse("9.5"));
  REQUIRE(k.execute("spend").receipt);
  auto s = by_name(*tree);
  REQUIRE(s["org"].total == 950);  // at the pool's scale (2, the task's)
  REQUIRE(s["org"].gross == 900);  // T4: gross unchanged by the changes of the total
  // A pool no task is bound to takes any exact total; the scale is fixed when one binds.
  tree->set_total("idle", *Decimal::parse("3.125"));
  REQUIRE(by_name(*tree)["idle"].format(by_name(*tree)["idle"].total) == "3.125");
  REQUIRE_THROWS_WITH(SafetyKernel(load_spec(task("idle", "5", "1", 2)), options),
                      Catch::Contains("3.125") && Catch::Contains("not exact"));
  // The ledger underneath (T1 at the level): never below net spend, never negative.
  BudgetController b(10);
  b.charge(4);
  b.refund(1);
  REQUIRE_THROWS_WITH(b.set_total(2), Catch::Contains("net spend is 3"));
  REQUIRE_THROWS_WITH(b.set_total(-1), Catch::Contains("must not be negative"));
  b.set_total(3);
  REQUIRE((b.total() == 3 && b.remaining() == 0 && b.gross() == 4));
}

TEST_CASE("Pools: a replay accepts a pool's refusal as recorded", "[pools]") {
  const auto tree = load_pools(R"({"pools": {"org": {"total": 1}}})");
  KernelOptions options;
  options.pools = tree;
  options.record_rejections = true;
  const auto model = load_spec(task("org", "5", "1"));
  SafetyKernel k(model, options);
  REQUIRE(k.execute("spend").receipt);
  REQUIRE_FALSE(k.execute("spend").receipt);  // org is spent; the task is not
  REQUIRE_FALSE(replay_trace(model, k.trace()).has_value());
  // A kernel continuing the trace (no pool view) carries its net spend into its pool.
  const auto fresh = load_pools(R"({"pools": {"org": {"total": 3}}})");
  KernelOptions resumed;
  resumed.pools = fresh;
  resumed.resume = k.trace();
  SafetyKernel next(model, resumed);
  REQUIRE(by_name(*fresh)["org"].net == 1000);
  const auto small = load_pools(R"({"pools": {"org": {"total": 0.5}}})");
  resumed.pools = small;
  resumed.resume = k.trace();
  REQUIRE_THROWS_WITH(SafetyKernel(model, resumed), Catch::Contains("pool `org`"));
}

// The property: seeded random trees of up to 3 levels and random totals, several tasks per
// leaf, threads each driving their own tasks with charges and rollbacks at random, and a
// monitor reading the tree throughout.
TEST_CASE("Pools: concurrent charges never overspend a level, refunds return to every level",
          "[pools][concurrency][property]") {
  for (unsigned seed = 1; seed <= 6; ++seed) {
    INFO("seed " << seed);
    std::mt19937 rng(seed);
    auto pick = [&](int lo, int hi) { return lo + static_cast<int>(rng() % (hi - lo + 1)); };
    // The tree: one root, 1-3 children, each with 0-2 children.
    std::string file = R"({"pools": {"r": {"total": )" + std::to_string(pick(20, 60)) + "}";
    std::vector<std::string> names{"r"};
    std::map<std::string, std::string> parent;
    const int children = pick(1, 3);
    for (int c = 0; c < children; ++c) {
      const std::string n = "c" + std::to_string(c);
      file += ", \"" + n + R"(": {"total": )" + std::to_string(pick(5, 40)) + R"(, "parent": "r"})";
      names.push_back(n);
      parent[n] = "r";
      const int grand = pick(0, 2);
      for (int g = 0; g < grand; ++g) {
        const std::string gn = n + "-" + std::to_string(g);
        file += ", \"" + gn + R"(": {"total": ")" + std::to_string(pick(2, 30)) +
                R"(.5", "parent": ")" + n + "\"}";
        names.push_back(gn);
        parent[gn] = n;
      }
    }
    file += "}}";
    INFO(file);
    const auto tree = load_pools(file);
    KernelOptions options;
    options.pools = tree;
    std::vector<std::unique_ptr<SafetyKernel>> kernels;
    std::vector<std::string> pool_of;
    for (int t = 0; t < 8; ++t) {
      const std::string p = names[rng() % names.size()];
      const std::string cost = std::to_string(pick(1, 4)) + (t % 2 == 0 ? ".5" : "");
      kernels.push_back(std::make_unique<SafetyKernel>(
          load_spec(task(p, std::to_string(pick(5, 30)), cost, t % 3 == 0 ? 1 : 3)), options));
      pool_of.push_back(p);
    }
    std::atomic<bool> done{false};
    std::atomic<int> broken{0};
    std::thread monitor([&] {
      std::map<std::string, Amount> gross;
      while (!done.load()) {
        for (const PoolStatus& s : tree->status()) {
          if (s.net < 0 || s.net > s.total || s.gross < gross[s.name]) ++broken;
          gross[s.name] = s.gross;
        }
      }
    });
    std::atomic<int> committed{0};
    std::atomic<int> refused_by_pool{0};
    std::vector<std::thread> threads;
    for (int th = 0; th < 4; ++th) {
      threads.emplace_back([&, th] {
        std::mt19937 r(seed * 100 + static_cast<unsigned>(th));
        std::vector<std::vector<Receipt>> receipts(2);
        for (int i = 0; i < 300; ++i) {
          const std::size_t mine = static_cast<std::size_t>(th) * 2 + r() % 2;
          SafetyKernel& k = *kernels[mine];
          auto& rs = receipts[mine % 2];
          if (!rs.empty() && r() % 3 == 0) {
            (void)k.rollback(rs.back());
            rs.pop_back();
            continue;
          }
          const Outcome o = k.execute("spend");
          if (o.receipt) {
            rs.push_back(*o.receipt);
            ++committed;
          } else if (!o.decision.reasons.empty() &&
                     o.decision.reasons[0].subject.rfind("pool:", 0) == 0) {
            ++refused_by_pool;
          }
        }
      });
    }
    for (auto& t : threads) t.join();
    done = true;
    monitor.join();
    REQUIRE(broken == 0);
    REQUIRE(committed > 0);
    REQUIRE(refused_by_pool > 0);  // the pools did refuse something: the test bites
    // Every level's net spend is exactly what the tasks under it keep spent (refunds returned
    // to every level), at the level's scale.
    std::map<std::string, Decimal> expected;
    for (std::size_t t = 0; t < kernels.size(); ++t) {
      const Decimal net{kernels[t]->budget().net(),
                        static_cast<std::uint8_t>(kernels[t]->model().budget.scale)};
      for (std::string p = pool_of[t]; !p.empty(); p = parent.count(p) ? parent[p] : "")
        expected[p] = *checked_add(expected[p], net);
    }
    for (const PoolStatus& s : tree->status()) {
      INFO(s.name);
      REQUIRE(s.net <= s.total);
      REQUIRE(Decimal{s.net, static_cast<std::uint8_t>(s.scale)} == expected[s.name]);
    }
  }
}

TEST_CASE("Pools: each trace entry records every level's figures, and resumes byte for byte",
          "[pools][trace]") {
  const auto tree =
      load_pools(R"({"pools": {"org": {"total": 100}, "team-a": {"total": 40, "parent": "org"}}})");
  KernelOptions options;
  options.pools = tree;
  const auto model = load_spec(task("team-a", "50", "2.5"));
  SafetyKernel k(model, options);
  const Outcome first = k.execute("spend");
  REQUIRE(k.execute("spend").receipt);
  (void)k.rollback(*k.execute("spend").receipt);
  const std::vector<TraceEntry> entries = k.trace();
  REQUIRE(entries.size() == 5);  // genesis, 3 executed, 1 rollback
  REQUIRE(entries[1].pools.size() == 2);
  // Written sorted by name: org, team-a.
  std::map<std::string, PoolLevel> at;
  for (const PoolLevel& l : entries[2].pools) at.emplace(l.name, l);
  REQUIRE(at.at("team-a").net == "5.000");
  REQUIRE(at.at("org").gross == "5.000");
  at.clear();
  for (const PoolLevel& l : entries[4].pools) at.emplace(l.name, l);
  REQUIRE(entries[4].kind == EntryKind::rolled_back);
  REQUIRE(at.at("team-a").net == "5.000");
  REQUIRE(at.at("team-a").gross == "7.500");
  REQUIRE(first.pools.at(0).pool == "team-a");
  REQUIRE(k.verify_trace().ok);
  REQUIRE_FALSE(replay_trace(model, entries).has_value());
  // Continued: every entry replays to its recorded line (pools kept as recorded), and the
  // task's net spend is charged to a fresh tree.
  KernelOptions resumed;
  resumed.pools =
      load_pools(R"({"pools": {"org": {"total": 100}, "team-a": {"total": 40, "parent": "org"}}})");
  resumed.resume = entries;
  SafetyKernel next(model, resumed);
  REQUIRE(next.trace_length() == entries.size());
  REQUIRE(by_name(*resumed.pools)["org"].net == 5000);
  const Outcome more = next.execute("spend");
  REQUIRE(more.receipt);
  REQUIRE(more.pools.at(1).net == 7500);
}
