// Composition: interfaces, manifests, every kind of obligation (each with a case that proves
// and a counterexample case whose state the kernel confirms), certificates, bad input.
#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "../kernel/support.hpp"
#include "chain_specs.hpp"
#include "clampai/composition/compose.hpp"
#include "clampai/kernel/digest.hpp"
#include "clampai/verifier/contract.hpp"
#include "wide_specs.hpp"

namespace {

namespace fs = std::filesystem;
namespace cc = clampai::composition;
namespace cv = clampai::verifier;
using clampai::SpecError;

// A fresh directory with the given files.
struct Dir {
  fs::path path;
  explicit Dir(std::initializer_list<std::pair<std::string, std::string>> files)
      : path(clampai::test::temp_file("compose")) {
    fs::create_directories(path);
    for (const auto& [name, text] : files) write(name, text);
  }
  ~Dir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  void write(const std::string& name, const std::string& text) const {
    std::ofstream(path / name) << text;
  }
  std::string operator/(const std::string& name) const { return (path / name).string(); }
};

// A small task: counter `v` (int 0..10) and optional extra variables, one action.
std::string task(const std::string& name,
                 const std::string& vars,
                 const std::string& action,
                 const std::string& interface,
                 const std::string& invariants = "[]",
                 const std::string& goal = "true",
                 int budget = 5) {
  return R"({"name": ")" + name + R"(", "goal": ")" + goal + R"(", "variables": {)" + vars +
         R"(}, "actions": [)" + action + R"(], "invariants": )" + invariants +
         R"(, "budget": {"total": )" + std::to_string(budget) +
         R"(, "min_action_cost": 1}, "interface": )" + interface + "}";
}

const std::string kX = R"("x": {"type": "int", "initial": 0, "min": 0, "max": 10})";
const std::string kY = R"("y": {"type": "bool", "initial": false})";
const std::string kZ = R"("z": {"type": "int", "initial": 0, "min": 0, "max": 10})";

// a: x := 3, guarantees x >= 2; b: needs x >= 2, sets y; c: needs y, counts z.
std::string task_a() {
  return task(
      "a",
      kX,
      R"({"id": "set", "cost": 1, "effects": [{"variable": "x", "mode": "set", "value": "3"}]})",
      R"({"guarantees": "x >= 2", "writes": ["x"]})",
      "[]",
      "x == 3");
}
std::string task_b() {
  return task(
      "b",
      kX + ", " + kY,
      R"({"id": "go", "cost": 1, "requires": "x >= 2", "effects": [{"variable": "y", "mode": "set", "value": "true"}]})",
      R"({"assumes": "x >= 2", "guarantees": "y", "reads": ["x"], "writes": ["y"]})",
      R"([{"name": "y_needs_x", "check": "y -> x >= 2"}])",
      "y");
}
std::string task_c() {
  return task(
      "c",
      kY + ", " + kZ,
      R"({"id": "count", "cost": 1, "requires": "y && z < 10", "effects": [{"variable": "z", "mode": "increment", "value": "1"}]})",
      R"({"assumes": "y", "guarantees": "z >= 1", "reads": ["y"], "writes": ["z"]})",
      "[]",
      "z >= 1");
}

std::string manifest(const std::string& tasks,
                     const std::string& compose,
                     const std::string& extra = "") {
  return R"({"name": "m", "tasks": {)" + tasks + R"(}, "compose": )" + compose + extra + "}";
}

const cc::Obligation* find(const cc::ComposeReport& r, const std::string& id) {
  for (const auto& o : r.obligations) {
    if (o.id == id) return &o;
  }
  return nullptr;
}

std::string value_of(const cv::Counterexample& c, const std::string& name) {
  for (const auto& [n, v] : c.pre) {
    if (n == name) return v.to_string();
  }
  return "<absent>";
}

cc::ComposeReport compose_file(const std::string& path, cc::ComposeOptions o = {}) {
  return cc::compose(cc::load_manifest(path), o);
}

}  // namespace

TEST_CASE("a task spec declares its interface; mistakes name the path", "[compose][interface]") {
  const auto m = clampai::kernel::load_spec(task_b());
  REQUIRE(m->interface.declared);
  REQUIRE(m->interface.assumes != nullptr);
  REQUIRE(m->interface.writes.size() == 1);
  REQUIRE(m->variables[m->interface.writes[0]].name == "y");

  auto error_of = [](const std::string& itf) {
    try {
      clampai::kernel::load_spec(task("t", kX, "", itf));
    } catch (const SpecError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK_THAT(error_of(R"({"writes": ["nope"]})"),
             Catch::StartsWith("interface.writes[0]: unknown variable `nope`"));
  CHECK_THAT(error_of(R"({"writes": ["x"], "forbidden": ["x"]})"),
             Catch::StartsWith("interface.forbidden[0]: `x` is both forbidden and in `writes`"));
  CHECK_THAT(error_of(R"({"assumes": ""})"), Catch::StartsWith("interface.assumes: empty"));
  CHECK_THAT(error_of(R"({"guarantees": "x + 1"})"), Catch::StartsWith("interface.guarantees:"));
  CHECK_THAT(error_of(R"({"guarantee": "x > 1"})"),
             Catch::StartsWith("interface.guarantee: unknown key"));
  CHECK_THAT(error_of(R"({"reads": ["x", "x"]})"),
             Catch::StartsWith("interface.reads[1]: `x` is listed twice"));
}

TEST_CASE("verify checks a task against its own interface", "[compose][interface]") {
  auto verdict = [](const std::string& spec, const std::string& id) {
    const cv::Report r = cv::verify(clampai::kernel::load_spec(spec));
    for (const auto& o : r.obligations) {
      if (o.id == id) return o;
    }
    FAIL("no obligation " << id);
    return cv::Obligation{};
  };
  const std::string inc =
      R"({"id": "inc", "cost": 1, "requires": "x < 10", "effects": [{"variable": "x", "mode": "increment", "value": "1"}]})";
  SECTION("writes and forbidden") {
    CHECK(verdict(task("t", kX + ", " + kY, inc, R"({"writes": ["y"]})"), "interface:writes")
              .verdict == cv::VerdictKind::refuted);
    const auto f = verdict(task("t", kX, inc, R"({"forbidden": ["x"]})"), "interface:forbidden");
    CHECK(f.verdict == cv::VerdictKind::refuted);
    CHECK(f.action == "inc");
    CHECK(verdict(task("t", kX, inc, R"({"writes": ["x"]})"), "interface:writes").verdict ==
          cv::VerdictKind::proved);
  }
  SECTION("reads") {
    const auto r = verdict(task("t", kX + ", " + kY, inc, R"({"reads": ["y"], "writes": []})"),
                           "interface:reads");
    CHECK(r.verdict == cv::VerdictKind::refuted);
    CHECK_THAT(r.reason, Catch::Contains("`x`"));
  }
  SECTION("guarantees: proved from the goal and invariants, refuted with a replayed state") {
    CHECK(verdict(task("t", kX, inc, R"({"guarantees": "x >= 2"})", "[]", "x >= 3"),
                  "interface:guarantees")
              .verdict == cv::VerdictKind::proved);
    const auto g = verdict(task("t", kX, inc, R"({"guarantees": "x >= 5"})", "[]", "x >= 3"),
                           "interface:guarantees");
    REQUIRE(g.verdict == cv::VerdictKind::refuted);
    REQUIRE(g.counterexample);
    const int x = std::stoi(value_of(*g.counterexample, "x"));
    CHECK(x >= 3);
    CHECK(x < 5);
  }
  SECTION("assumes that contradict the invariants are a lint warning") {
    const auto a = verdict(
        task("t", kX, inc, R"({"assumes": "x > 5"})", R"([{"name": "small", "check": "x <= 5"}])"),
        "lint:assumes-consistent");
    CHECK(a.verdict == cv::VerdictKind::refuted);
  }
  SECTION("no interface, no interface obligations") {
    const cv::Report r = cv::verify(clampai::kernel::load_spec(
        R"({"name": "t", "variables": {"x": {"type": "int", "initial": 0}}, "actions": [], "budget": {"total": 1, "min_action_cost": 1}})"));
    CHECK(std::none_of(r.obligations.begin(), r.obligations.end(), [](const cv::Obligation& o) {
      return o.kind == cv::ObligationKind::interface;
    }));
  }
}

TEST_CASE("chains of any length compose, and a composite composes again", "[compose]") {
  for (int n : {1, 2, 3, 7}) {
    const fs::path dir = clampai::test::temp_file("chain");
    const std::string m = clampai::testing::write_chain(dir, n);
    const cc::ComposeReport r = compose_file(m);
    INFO("n = " << n);
    CHECK(r.exit_code() == 0);
    CHECK(r.tasks.size() == static_cast<std::size_t>(n));
    for (int i = 0; i + 1 < n; ++i) {
      const auto* o =
          find(r, "sequential:step" + std::to_string(i) + "->step" + std::to_string(i + 1));
      REQUIRE(o != nullptr);
      CHECK(o->verdict == cv::VerdictKind::proved);
      // step i writes x<i+1>, which step i+1's invariant reads: interference is checked
      const auto* x = find(r,
                           "interference:step" + std::to_string(i) + ".copy:step" +
                               std::to_string(i + 1) + ".monotone");
      REQUIRE(x != nullptr);
      CHECK(x->verdict == cv::VerdictKind::proved);
    }
    fs::remove_all(dir);
  }
  Dir d({{"a.json", task_a()}, {"b.json", task_b()}, {"c.json", task_c()}});
  d.write("inner.json",
          manifest(R"("a": "a.json", "b": "b.json")",
                   R"({"sequential": ["a", "b"]})",
                   R"(, "interface": {"guarantees": "y && x >= 2"})"));
  d.write("outer.json",
          manifest(R"("c": "c.json")", R"({"sequential": [{"manifest": "inner.json"}, "c"]})"));
  const cc::ComposeReport r = compose_file(d / "outer.json");
  CHECK(r.exit_code() == 0);
  // The inner manifest's tasks are named after it; the outer one sees only its contract.
  CHECK(find(r, "sequential:m->c") != nullptr);
  REQUIRE(find(r, "contract:m.b->m.guarantees") != nullptr);
  CHECK(find(r, "contract:m.b->m.guarantees")->verdict == cv::VerdictKind::proved);
}

TEST_CASE("a sequential gap is refuted with a state the kernel confirms", "[compose]") {
  Dir d({{"a.json", task_a()}, {"c.json", task_c()}});
  d.write("m.json", manifest(R"("a": "a.json", "c": "c.json")", R"({"sequential": ["a", "c"]})"));
  const cc::ComposeReport r = compose_file(d / "m.json");
  CHECK(r.exit_code() == 1);
  const auto* o = find(r, "sequential:a->c");
  REQUIRE(o != nullptr);
  REQUIRE(o->verdict == cv::VerdictKind::refuted);
  REQUIRE(o->counterexample);
  CHECK(value_of(*o->counterexample, "y") == "false");  // c assumes y
  CHECK(o->file == d / "m.json");
}

TEST_CASE("parallel branches: independent, or each keeps the other's contract", "[compose]") {
  const std::string w = task(
      "w",
      kZ,
      R"({"id": "bump", "cost": 1, "requires": "z < 10", "effects": [{"variable": "z", "mode": "increment", "value": "1"}]})",
      R"({"guarantees": "z >= 1", "writes": ["z"]})",
      "[]",
      "z >= 1");
  const std::string reset = task(
      "r",
      kZ + ", " + kY,
      R"({"id": "clear", "cost": 1, "effects": [{"variable": "z", "mode": "set", "value": "0"}, {"variable": "y", "mode": "set", "value": "true"}]})",
      R"({"guarantees": "y", "writes": ["z", "y"]})",
      "[]",
      "y");
  Dir d({{"a.json", task_a()}, {"w.json", w}, {"r.json", reset}});
  d.write("ok.json", manifest(R"("a": "a.json", "w": "w.json")", R"({"parallel": ["a", "w"]})"));
  d.write("bad.json", manifest(R"("w": "w.json", "r": "r.json")", R"({"parallel": ["w", "r"]})"));
  const cc::ComposeReport ok = compose_file(d / "ok.json");
  CHECK(ok.exit_code() == 0);
  REQUIRE(find(ok, "parallel:a||w") != nullptr);
  CHECK_THAT(find(ok, "parallel:a||w")->reason, Catch::StartsWith("independent"));

  const cc::ComposeReport bad = compose_file(d / "bad.json");
  CHECK(bad.exit_code() == 1);
  const auto* o = find(bad, "parallel:r.clear keeps guarantees of w");
  REQUIRE(o != nullptr);
  REQUIRE(o->verdict == cv::VerdictKind::refuted);
  REQUIRE(o->counterexample);
  REQUIRE(!o->counterexample->post.empty());
  for (const auto& [name, v] : o->counterexample->post) {
    if (name == "z") CHECK(v.to_string() == "0");
  }
}

TEST_CASE("conditional: the guard with the incoming facts implies each branch's assumes",
          "[compose]") {
  const std::string skip =
      task("s", kX, "", R"({"assumes": "x < 3", "guarantees": "x < 3"})", "[]", "x < 3");
  Dir d({{"b.json", task_b()}, {"c.json", task_c()}, {"s.json", skip}, {"a.json", task_a()}});
  d.write(
      "ok.json",
      manifest(
          R"("a": "a.json", "b": "b.json", "c": "c.json", "s": "s.json")",
          R"({"sequential": ["a", {"conditional": {"if": "x >= 3", "then": {"sequential": ["b", "c"]}, "else": "s"}}]})"));
  const cc::ComposeReport ok = compose_file(d / "ok.json");
  INFO((ok.obligations.empty() ? "" : ok.obligations.back().id));
  CHECK(ok.exit_code() == 0);
  CHECK(find(ok, "conditional:a[x >= 3]->b") != nullptr);
  CHECK(find(ok, "conditional:a[!(x >= 3)]->s") != nullptr);

  d.write(
      "bad.json",
      manifest(
          R"("a": "a.json", "c": "c.json", "s": "s.json")",
          R"({"sequential": ["a", {"conditional": {"if": "x >= 3", "then": "c", "else": "s"}}]})"));
  const cc::ComposeReport bad = compose_file(d / "bad.json");
  const auto* o = find(bad, "conditional:a[x >= 3]->c");
  REQUIRE(o != nullptr);
  CHECK(o->verdict == cv::VerdictKind::refuted);
  REQUIRE(o->counterexample);
  CHECK(value_of(*o->counterexample, "y") == "false");
}

TEST_CASE("repeat: the body's guarantees imply its own assumes", "[compose]") {
  // c assumes y and guarantees z >= 1: it keeps y, so it can run again.
  const std::string again = task(
      "again",
      kY + ", " + kZ,
      R"({"id": "count", "cost": 1, "requires": "y && z < 10", "effects": [{"variable": "z", "mode": "increment", "value": "1"}]})",
      R"({"assumes": "y", "guarantees": "y && z >= 1", "reads": ["y"], "writes": ["z"]})",
      R"([{"name": "y_stays", "check": "old(y) -> y"}])",
      "y && z >= 1");
  const std::string once = task(
      "once",
      kY + ", " + kZ,
      R"({"id": "use", "cost": 1, "requires": "y", "effects": [{"variable": "y", "mode": "set", "value": "false"}, {"variable": "z", "mode": "set", "value": "1"}]})",
      R"({"assumes": "y", "guarantees": "z == 1", "writes": ["y", "z"]})",
      "[]",
      "z == 1 && !y");
  Dir d({{"again.json", again}, {"once.json", once}});
  d.write("ok.json",
          manifest(R"("t": "again.json")",
                   R"({"repeat": {"times": 3, "body": "t"}})",
                   R"(, "budget": 15, "interface": {"assumes": "y"})"));
  d.write("bad.json",
          manifest(R"("t": "once.json")",
                   R"({"repeat": {"times": 2, "body": "t"}})",
                   R"(, "interface": {"assumes": "y"})"));
  const cc::ComposeReport ok = compose_file(d / "ok.json");
  CHECK(ok.exit_code() == 0);
  REQUIRE(find(ok, "repeat:t->t") != nullptr);
  CHECK(find(ok, "budget:m")->verdict == cv::VerdictKind::proved);
  const cc::ComposeReport bad = compose_file(d / "bad.json");
  const auto* o = find(bad, "repeat:t->t");
  REQUIRE(o != nullptr);
  CHECK(o->verdict == cv::VerdictKind::refuted);
  REQUIRE(o->counterexample);
  CHECK(value_of(*o->counterexample, "y") == "false");
}

TEST_CASE("a composite without declared assumes must be able to start from its start state",
          "[compose]") {
  Dir d({{"a.json", task_a()}, {"b.json", task_b()}});
  // b assumes x >= 2; the start state has x = 0.
  d.write("closed.json", manifest(R"("b": "b.json")", R"("b")"));
  const cc::ComposeReport closed = compose_file(d / "closed.json");
  const auto* o = find(closed, "contract:start:b.assumes");
  REQUIRE(o != nullptr);
  CHECK(o->verdict == cv::VerdictKind::refuted);
  CHECK_THAT(o->reason, Catch::Contains("(x >= 2)"));
  REQUIRE(o->counterexample);
  CHECK(value_of(*o->counterexample, "x") == "0");
  CHECK(closed.exit_code() == 1);
  // Declared assumes: an open composite, its callers establish them.
  d.write("open.json",
          manifest(R"("b": "b.json")", R"("b")", R"(, "interface": {"assumes": "x >= 2"})"));
  const cc::ComposeReport open = compose_file(d / "open.json");
  CHECK(find(open, "contract:start:b.assumes") == nullptr);
  CHECK(open.exit_code() == 0);
  // After a, b can start: only the first task is checked against the start state.
  d.write("seq.json", manifest(R"("a": "a.json", "b": "b.json")", R"({"sequential": ["a", "b"]})"));
  CHECK(compose_file(d / "seq.json").exit_code() == 0);
  // A conditional's guard, on the start state, picks the branch that runs first.
  d.write(
      "cond.json",
      manifest(
          R"("a": "a.json", "b": "b.json")",
          R"({"sequential": [{"conditional": {"if": "x > 5", "then": "b", "else": "a"}}, "b"]})"));
  const cc::ComposeReport cond = compose_file(d / "cond.json");
  CHECK(find(cond, "contract:start:b.assumes") == nullptr);
  // An included manifest that runs first: its declared assumes are checked on the start state.
  d.write(
      "sub.json",
      R"({"name": "sub", "tasks": {"b": "b.json"}, "compose": "b", "interface": {"assumes": "x >= 2"}})");
  d.write("outer.json",
          manifest(R"("a": "a.json")", R"({"sequential": [{"manifest": "sub.json"}, "a"]})"));
  const cc::ComposeReport outer = compose_file(d / "outer.json");
  const auto* sub = find(outer, "contract:start:sub.assumes");
  REQUIRE(sub != nullptr);
  CHECK(sub->verdict == cv::VerdictKind::refuted);
}

TEST_CASE("interference: an action that breaks another task's invariant is refuted", "[compose]") {
  // d lowers x, which b's invariant `y -> x >= 2` reads.
  const std::string lower = task(
      "d",
      kX,
      R"({"id": "drop", "cost": 1, "effects": [{"variable": "x", "mode": "set", "value": "0"}]})",
      R"({"writes": ["x"]})");
  Dir d({{"a.json", task_a()}, {"b.json", task_b()}, {"d.json", lower}});
  d.write("m.json",
          manifest(R"("a": "a.json", "b": "b.json", "d": "d.json")",
                   R"({"sequential": ["a", "b", "d"]})"));
  const cc::ComposeReport r = compose_file(d / "m.json");
  const auto* o = find(r, "interference:d.drop:b.y_needs_x");
  REQUIRE(o != nullptr);
  REQUIRE(o->verdict == cv::VerdictKind::refuted);
  REQUIRE(o->counterexample);
  CHECK(value_of(*o->counterexample, "y") == "true");
  CHECK(r.exit_code() == 1);
}

TEST_CASE("budgets add up; forbidden variables stay forbidden", "[compose]") {
  Dir d({{"a.json", task_a()}, {"b.json", task_b()}, {"c.json", task_c()}});
  d.write(
      "tight.json",
      manifest(
          R"("a": "a.json", "b": "b.json")",
          R"({"sequential": ["a", {"conditional": {"if": "x > 5", "then": "b", "else": {"repeat": {"times": 2, "body": "b"}}}}]})",
          R"(, "budget": "14.5")"));
  const cc::ComposeReport t = compose_file(d / "tight.json");
  const auto* b = find(t, "budget:m");
  REQUIRE(b != nullptr);
  CHECK(b->verdict == cv::VerdictKind::refuted);
  CHECK_THAT(b->reason, Catch::Contains("15.000") && Catch::Contains("14.500"));

  d.write("forbid.json",
          manifest(R"("a": "a.json", "b": "b.json")",
                   R"({"sequential": ["a", "b"]})",
                   R"(, "interface": {"forbidden": ["x"]})"));
  const cc::ComposeReport f = compose_file(d / "forbid.json");
  const auto* o = find(f, "forbidden:a");
  REQUIRE(o != nullptr);
  CHECK(o->verdict == cv::VerdictKind::refuted);
  CHECK_THAT(o->reason, Catch::Contains("`x`"));
  CHECK(find(f, "forbidden:b")->verdict == cv::VerdictKind::proved);
}

TEST_CASE("certificates are reused for unchanged tasks and detect tampering", "[compose][cache]") {
  const fs::path dir = clampai::test::temp_file("cache");
  const std::string m = clampai::testing::write_chain(dir, 4);
  cc::ComposeOptions o;
  o.cache_dir = (dir / "cache").string();
  const cc::ComposeReport cold = compose_file(m, o);
  CHECK(cold.reused == 0);
  CHECK(cold.exit_code() == 0);
  const cc::ComposeReport warm = compose_file(m, o);
  CHECK(warm.reused == 4);
  CHECK(warm.proved == cold.proved);

  // A changed task is verified again; the others are reused.
  {
    std::string spec = clampai::testing::chain_task_spec(2);
    spec.replace(spec.find("\"total\": 2"), 10, "\"total\": 3");
    std::ofstream(dir / "step2.json") << spec;
  }
  const cc::ComposeReport changed = compose_file(m, o);
  CHECK(changed.reused == 3);
  for (const auto& t : changed.tasks) CHECK(t.reused == (t.name != "step2"));

  // An edited certificate is not trusted.
  const fs::path victim = fs::path(o.cache_dir) / (changed.tasks.front().digest + ".json");
  std::string text = clampai::kernel::read_text_file(victim.string());
  text.replace(text.find("\"refuted\":0"), 11, "\"refuted\":7");
  std::ofstream(victim) << text;
  const cc::ComposeReport after = compose_file(m, o);
  CHECK(after.reused == 3);
  bool noted = false;
  for (const auto& t : after.tasks) {
    if (!t.cache_note.empty()) {
      noted = true;
      CHECK_THAT(t.cache_note, Catch::Contains("tampered"));
      CHECK(t.refuted == 0);
    }
  }
  CHECK(noted);
  fs::remove_all(dir);
}

TEST_CASE("a reused certificate keeps counterexamples and locates findings in the spec as it is",
          "[compose][cache]") {
  // x := x + 4 breaks x <= 5 (a preservation counterexample); the write of `y` is forbidden.
  const std::string bad = task(
      "bad",
      kX + ", " + kY,
      R"({"id": "bump", "cost": 1, "effects": [{"variable": "x", "mode": "increment", "value": "4"}, {"variable": "y", "mode": "set", "value": "true"}]})",
      R"({"writes": ["x"], "forbidden": ["y"]})",
      R"([{"name": "small", "check": "x <= 5"}])");
  Dir d({{"bad.json", bad},
         {"m.json", R"({"name": "m", "tasks": {"bad": "bad.json"}, "compose": "bad"})"}});
  cc::ComposeOptions o;
  o.cache_dir = d / "cache";
  const cc::ComposeReport fresh = compose_file(d / "m.json", o);
  const cc::ComposeReport cached = compose_file(d / "m.json", o);
  REQUIRE(cached.reused == 1);
  auto same = [](const cc::TaskResult& a, const cc::TaskResult& b) {
    REQUIRE(a.findings.size() == b.findings.size());
    for (std::size_t i = 0; i < a.findings.size(); ++i) {
      const auto& x = a.findings[i];
      const auto& y = b.findings[i];
      CHECK(x.id == y.id);
      CHECK(x.verdict == y.verdict);
      CHECK(x.loc.line == y.loc.line);
      CHECK(x.loc.column == y.loc.column);
      REQUIRE(x.counterexample.has_value() == y.counterexample.has_value());
      if (!x.counterexample) continue;
      CHECK(x.counterexample->pre == y.counterexample->pre);
      CHECK(x.counterexample->params == y.counterexample->params);
      CHECK(x.counterexample->post == y.counterexample->post);
    }
  };
  same(fresh.tasks.front(), cached.tasks.front());
  const auto& f = cached.tasks.front().findings;
  const auto pres = std::find_if(
      f.begin(), f.end(), [](const auto& x) { return x.id == "preservation:bump:small"; });
  REQUIRE(pres != f.end());
  REQUIRE(pres->counterexample);
  CHECK(!pres->counterexample->post.empty());
  CHECK(std::any_of(f.begin(), f.end(), [](const auto& x) {
    return x.id == "interface:forbidden" && x.verdict == cv::VerdictKind::refuted;
  }));

  // Three lines added at the top: same model, so the certificate is reused, at the new lines.
  d.write("bad.json", "\n\n\n" + bad);
  const cc::ComposeReport moved = compose_file(d / "m.json", o);
  REQUIRE(moved.reused == 1);
  for (std::size_t i = 0; i < f.size(); ++i) {
    if (f[i].loc.line == 0) continue;
    CHECK(moved.tasks.front().findings[i].loc.line == f[i].loc.line + 3);
  }
  // ... and a fresh verification of the moved spec agrees.
  same(moved.tasks.front(), compose_file(d / "m.json").tasks.front());
}

TEST_CASE("certificates sealed with a cache key cannot be forged without it", "[compose][cache]") {
  const fs::path dir = clampai::test::temp_file("cache-key");
  const std::string m = clampai::testing::write_chain(dir, 3);
  cc::ComposeOptions keyed;
  keyed.cache_dir = (dir / "cache").string();
  keyed.cache_key = "0123456789abcdef-the-ci-secret";
  const cc::ComposeReport cold = compose_file(m, keyed);
  REQUIRE(cold.reused == 0);
  CHECK(compose_file(m, keyed).reused == 3);

  // Another key, or none, does not accept these certificates (and says why).
  cc::ComposeOptions other = keyed;
  other.cache_key = "another-secret-of-enough-length";
  const cc::ComposeReport o = compose_file(m, other);
  CHECK(o.reused == 0);
  CHECK_THAT(o.tasks.front().cache_note, Catch::Contains("under the cache key"));
  cc::ComposeOptions plain = keyed;
  plain.cache_key.clear();
  const cc::ComposeReport p = compose_file(m, plain);  // rewrites them with a plain seal
  CHECK(p.reused == 0);
  CHECK_THAT(p.tasks.front().cache_note, Catch::Contains("sealed with a key"));
  CHECK(compose_file(m, plain).reused == 3);

  // A forger who can write the cache but holds no key: a refuted task's certificate edited to
  // "proved" and resealed with plain SHA-256, or with HMAC under a guessed key.
  const cc::ComposeReport sealed = compose_file(m, keyed);  // keyed certificates again
  REQUIRE(sealed.reused == 0);
  const fs::path victim = fs::path(keyed.cache_dir) / (sealed.tasks.front().digest + ".json");
  auto forge = [&](const std::string& seal, const std::string& key) {
    auto c = nlohmann::json::parse(clampai::kernel::read_text_file(victim.string()));
    c.erase("hash");
    c.erase("seal");
    c["warnings"] = 99;
    const std::string body = c.dump();  // sorted keys, no spaces: canonical for this content
    c["seal"] = seal;
    c["hash"] = key.empty() ? clampai::kernel::sha256_hex(body)
                            : clampai::kernel::hmac_sha256_hex(key, body);
    std::ofstream(victim) << c.dump() << "\n";
  };
  for (const auto& [seal, key] : std::vector<std::pair<std::string, std::string>>{
           {"sha256", ""}, {"hmac-sha256", "a-guessed-key-of-some-length"}}) {
    forge(seal, key);
    const cc::ComposeReport r = compose_file(m, keyed);
    CHECK(r.reused == 2);
    CHECK(!r.tasks.front().reused);
    CHECK(r.tasks.front().warnings != 99);
    CHECK(!r.tasks.front().cache_note.empty());
  }
  // The same forgery under the real key is accepted: the key is what the seal rests on.
  forge("hmac-sha256", keyed.cache_key);
  CHECK(compose_file(m, keyed).tasks.front().warnings == 99);
  fs::remove_all(dir);
}

TEST_CASE("manifest errors name the file, the path and what is wrong", "[compose][errors]") {
  Dir d({{"a.json", task_a()}, {"b.json", task_b()}});
  auto error_of = [&](const std::string& text) {
    d.write("m.json", text);
    try {
      cc::load_manifest(d / "m.json");
    } catch (const clampai::Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string file = d / "m.json";
  const std::string ab = R"("a": "a.json", "b": "b.json")";
  const std::string only_a = R"("a": "a.json")";
  CHECK_THAT(error_of("{"), Catch::StartsWith(file + ": 1:"));
  CHECK_THAT(error_of(manifest(ab, R"("zz")")),
             Catch::StartsWith(file + ": compose: unknown task or composite `zz`"));
  CHECK_THAT(error_of(manifest(ab, R"({"sequential": ["a"], "parallel": ["b"]})")),
             Catch::StartsWith(file + ": compose: expected a task name or an object with one key"));
  CHECK_THAT(error_of(manifest(ab, R"({"parallel": ["a"]})")),
             Catch::StartsWith(file + ": compose.parallel: `parallel` needs at least 2 items"));
  CHECK_THAT(error_of(manifest(ab, R"({"sequential": []})")),
             Catch::StartsWith(file + ": compose.sequential: `sequential` needs at least 1 item"));
  CHECK_THAT(error_of(manifest(ab, R"({"repeat": {"times": 0, "body": "a"}})")),
             Catch::StartsWith(file + ": compose.repeat.times: must be at least 1"));
  CHECK_THAT(error_of(manifest(ab, R"({"loop": ["a"]})")),
             Catch::StartsWith(file + ": compose.loop: unknown composition `loop`"));
  CHECK_THAT(error_of(manifest(only_a, R"({"conditional": {"if": "x >", "then": "a"}})")),
             Catch::StartsWith(file + ": compose.conditional.if:1:"));
  CHECK_THAT(error_of(manifest(only_a, R"({"conditional": {"if": "x + 1", "then": "a"}})")),
             Catch::Contains("expected a bool expression"));
  CHECK_THAT(error_of(manifest(R"("a": "missing.json")", R"("a")")),
             Catch::StartsWith(file + ": tasks.a: cannot read"));
  CHECK_THAT(error_of(manifest(only_a, R"("a")", R"(, "budget": -1)")),
             Catch::StartsWith(file + ": budget: must not be negative"));
  CHECK_THAT(error_of(manifest(only_a, R"("a")", R"(, "interface": {"forbidden": ["nope"]})")),
             Catch::StartsWith(file + ": interface.forbidden[0]: unknown variable `nope`"));
  CHECK_THAT(error_of(manifest(only_a, R"("a")", R"(, "extra": 1)")),
             Catch::StartsWith(file + ": extra: unknown key"));
  // Declared but never reached from `compose` (directly or through a used composite).
  CHECK_THAT(
      error_of(manifest(ab, R"("a")")),
      Catch::StartsWith(file + ": tasks.b: task `b` is declared but `compose` never uses it"));
  CHECK_THAT(
      error_of(manifest(ab, R"("a")", R"(, "composites": {"spare": {"sequential": ["a", "b"]}})")),
      Catch::StartsWith(file + ": composites.spare: composite `spare` is declared but"));
  CHECK(error_of(
            manifest(ab, R"("both")", R"(, "composites": {"both": {"sequential": ["a", "b"]}})")) ==
        "no error");
  // Spec errors name the spec file (and the task that names it); a directory is no spec.
  d.write("broken.json", R"({"name": "broken", "variables": {}, "actions": [], "budget": 1})");
  CHECK_THAT(error_of(manifest(R"("a": "broken.json")", R"("a")")),
             Catch::StartsWith(d / "broken.json" + ": budget: ") &&
                 Catch::EndsWith("(the spec of task `a` in " + file + ")"));
  CHECK_THAT(error_of(manifest(R"("a": ".")", R"("a")")),
             Catch::StartsWith(file + ": tasks.a: `") &&
                 Catch::EndsWith("is a directory, not a regular file"));
  // An included manifest's own error names that manifest, not the one including it.
  d.write("bad_inc.json", "{\"name\": \"x\",\n \"tasks\": {,}}");
  CHECK_THAT(error_of(manifest(only_a, R"({"sequential": ["a", {"manifest": "bad_inc.json"}]})")),
             Catch::StartsWith(d / "bad_inc.json" + ": 2:"));
  // Two included manifests with one name would give their tasks the same names.
  d.write("s1.json", R"({"name": "sub", "tasks": {"a": "a.json"}, "compose": "a"})");
  d.write("s2.json", R"({"name": "sub", "tasks": {"b": "b.json"}, "compose": "b"})");
  CHECK_THAT(
      error_of(manifest(
          only_a, R"({"sequential": ["a", {"manifest": "s1.json"}, {"manifest": "s2.json"}]})")),
      Catch::StartsWith(d / "s2.json" + ": name: `sub` also names `" + d / "s1.json" + "`"));
  // Nesting and expansion are bounded: an error, not a stack overflow or an exponential tree.
  auto nested = [&](int levels, int uses) {
    std::string composites;
    for (int i = 0; i < levels; ++i) {
      std::string refs;
      for (int k = 0; k < uses; ++k) refs += (k ? ", \"c" : "\"c") + std::to_string(i + 1) + "\"";
      composites += "\"c" + std::to_string(i) + "\": {\"sequential\": [" + refs + "]}, ";
    }
    composites += "\"c" + std::to_string(levels) + "\": \"a\"";
    return manifest(only_a, R"("c0")", ", \"composites\": {" + composites + "}");
  };
  CHECK(error_of(nested(990, 1)) == "no error");
  CHECK(compose_file(d / "m.json").exit_code() == 0);  // and the checks recurse that deep
  CHECK_THAT(error_of(nested(5000, 1)),
             Catch::StartsWith(file + ": composites.c") &&
                 Catch::EndsWith("the composition nests deeper than 1000 levels"));
  CHECK_THAT(error_of(nested(40, 2)),
             Catch::Contains("the composition expands to more than 100000 nodes"));
  // A cycle of composites, with the names on it.
  const std::string cyc = error_of(
      manifest(ab,
               R"("p")",
               R"(, "composites": {"p": {"sequential": ["a", "q"]}, "q": {"sequential": ["p"]}})"));
  CHECK_THAT(cyc,
             Catch::Contains("a cycle") && Catch::Contains("composite `p`") &&
                 Catch::Contains("composite `q`"));
  // A manifest that includes itself.
  CHECK_THAT(error_of(manifest(ab, R"({"sequential": ["a", {"manifest": "m.json"}]})")),
             Catch::Contains("a cycle"));
  // A shared variable declared differently, naming both specs.
  d.write("x2.json",
          task("x2", R"("x": {"type": "int", "initial": 0, "min": 0, "max": 99})", "", R"({})"));
  const std::string clash =
      error_of(manifest(R"("a": "a.json", "x2": "x2.json")", R"({"sequential": ["a", "x2"]})"));
  CHECK_THAT(clash,
             Catch::Contains("shared variable `x`") && Catch::Contains("a.json") &&
                 Catch::Contains("x2.json"));
}

TEST_CASE("mutated manifests load or fail with an error, never crash", "[compose][errors]") {
  Dir d({{"a.json", task_a()}, {"b.json", task_b()}, {"c.json", task_c()}});
  const std::string good = manifest(
      R"("a": "a.json", "b": "b.json", "c": "c.json")",
      R"({"sequential": ["a", {"parallel": ["b", "c"]}, {"repeat": {"times": 2, "body": {"conditional": {"if": "x > 1", "then": "b"}}}}]})",
      R"(, "budget": 40, "interface": {"assumes": "x == 0"})");
  std::mt19937 rng(20261122);
  const std::string alphabet = "{}[]\":,0123456789abxyz -!";
  int loaded = 0, refused = 0;
  for (int i = 0; i < 400; ++i) {
    std::string text = good;
    const int edits = 1 + static_cast<int>(rng() % 3);
    for (int k = 0; k < edits; ++k) {
      const std::size_t at = rng() % text.size();
      switch (rng() % 3) {
        case 0:
          text[at] = alphabet[rng() % alphabet.size()];
          break;
        case 1:
          text.erase(at, 1);
          break;
        default:
          text.insert(at, 1, alphabet[rng() % alphabet.size()]);
      }
    }
    d.write("m.json", text);
    try {
      (void)cc::load_manifest(d / "m.json");
      ++loaded;
    } catch (const clampai::Error& e) {
      CHECK(std::string(e.what()).size() > 0);
      ++refused;
    }
  }
  CHECK(loaded + refused == 400);
  CHECK(refused > 0);
}

TEST_CASE("the composition graph is written in Graphviz dot", "[compose]") {
  Dir d({{"a.json", task_a()}, {"b.json", task_b()}, {"c.json", task_c()}});
  d.write(
      "m.json",
      manifest(
          R"("a": "a.json", "b": "b.json", "c": "c.json")",
          R"({"sequential": ["a", {"parallel": ["b", "c"]}, {"repeat": {"times": 2, "body": "c"}}]})"));
  const std::string dot = cc::to_dot(cc::load_manifest(d / "m.json"));
  CHECK_THAT(dot, Catch::StartsWith("digraph"));
  for (const char* s : {"label=\"a\"", "label=\"b\"", "label=\"parallel\"", "repeat x2", "dashed"})
    CHECK_THAT(dot, Catch::Contains(s));
}

TEST_CASE("worker threads do not change the verdicts", "[compose][concurrency]") {
  Dir d({{"a.json", task_a()}, {"b.json", task_b()}, {"c.json", task_c()}});
  d.write("m.json",
          manifest(R"("a": "a.json", "b": "b.json", "c": "c.json")",
                   R"({"sequential": ["a", "c", {"parallel": ["b", "c"]}]})"));
  const fs::path dir = clampai::test::temp_file("jobs");
  const std::string chain = clampai::testing::write_chain(dir, 6);
  for (const std::string& path : {d / "m.json", chain}) {
    cc::ComposeOptions one, four;
    four.jobs = 4;
    four.cache_dir = (dir / "cache").string();
    const cc::ComposeReport a = compose_file(path, one);
    const cc::ComposeReport b = compose_file(path, four);
    const cc::ComposeReport c = compose_file(path, four);  // from the certificates
    REQUIRE(a.obligations.size() == b.obligations.size());
    REQUIRE(a.obligations.size() == c.obligations.size());
    for (std::size_t i = 0; i < a.obligations.size(); ++i) {
      CHECK(a.obligations[i].id == b.obligations[i].id);
      CHECK(a.obligations[i].verdict == b.obligations[i].verdict);
      CHECK(a.obligations[i].verdict == c.obligations[i].verdict);
    }
    CHECK(a.exit_code() == b.exit_code());
  }
  fs::remove_all(dir);
}

TEST_CASE("a wide parallel group: every pair checked, with a limit, progress and a time limit",
          "[compose][big]") {
  const fs::path dir = clampai::test::temp_file("wide");
  constexpr int kN = 24;
  const std::string path = clampai::testing::write_wide(dir, kN);
  const cc::Manifest m = cc::load_manifest(path);
  // Each branch's action keeps every other's assumes (parallel) and invariant (interference).
  constexpr std::size_t kChecks = 2 * kN * (kN - 1);

  SECTION("every obligation proved; progress counts every task and check, in order") {
    cc::ComposeOptions o;
    o.jobs = 2;
    std::vector<std::pair<std::size_t, std::size_t>> calls;
    o.progress = [&](std::size_t done, std::size_t total) { calls.emplace_back(done, total); };
    const cc::ComposeReport r = cc::compose(m, o);
    CHECK(r.refuted == 0);
    CHECK(r.unknown == 0);
    const auto parallel = std::count_if(r.obligations.begin(), r.obligations.end(), [](auto& x) {
      return x.kind == cc::ObligationKind::parallel;
    });
    CHECK(parallel == kN * (kN - 1));
    REQUIRE(calls.size() == 1 + kN + kChecks);
    for (std::size_t i = 0; i < calls.size(); ++i) {
      CHECK(calls[i].first == i);
      CHECK(calls[i].second == kN + kChecks);
    }
  }
  SECTION("more obligations than the limit: refused before any work, naming the count") {
    cc::ComposeOptions o;
    o.max_obligations = kChecks - 1;
    bool called = false;
    o.progress = [&](std::size_t, std::size_t) { called = true; };
    try {
      (void)cc::compose(m, o);
      FAIL("no error");
    } catch (const clampai::Error& e) {
      const std::string what = e.what();
      CHECK_THAT(what, Catch::Contains("has 1,104 solver obligations"));
      STATIC_REQUIRE(kChecks == 1104);
      CHECK_THAT(what, Catch::Contains("--max-obligations"));
      CHECK_THAT(what, Catch::Contains("wide.json"));
    }
    CHECK_FALSE(called);
    o.max_obligations = kChecks;  // exactly at the limit
    CHECK(cc::compose(m, o).exit_code() == 0);
  }
  SECTION("the run's time limit: what is not reached is unknown, with that reason") {
    cc::ComposeOptions o;
    o.run_timeout_ms = 20;
    // Deterministic: the first progress call (before any work) outlasts the limit.
    o.progress = [](std::size_t done, std::size_t) {
      if (done == 0) std::this_thread::sleep_for(std::chrono::milliseconds(60));
    };
    const cc::ComposeReport r = cc::compose(m, o);
    CHECK(r.refuted == 0);
    CHECK(r.proved == 1);  // the budget: no solver, no time needed
    CHECK(r.unknown == kN + kChecks);
    CHECK(r.exit_code() == 3);
    for (const auto& ob : r.obligations) {
      if (ob.kind != cc::ObligationKind::budget)
        CHECK_THAT(ob.reason, Catch::Contains("time limit"));
    }
  }
  fs::remove_all(dir);
}

TEST_CASE("inside a parallel branch, facts another branch may change are not premises",
          "[compose]") {
  // The manifest assumes z == 0 at the start; A guarantees z == 0 -> x == 1, so A;B would be
  // fine alone. But J, in parallel, increments z: by the time A ends, z may be 1 and x 2.
  const std::string xz = kX + ", " + kZ;
  const std::string a = task(
      "a",
      xz,
      R"({"id": "one", "cost": 1, "requires": "z == 0", "effects": [{"variable": "x", "mode": "set", "value": "1"}]},
         {"id": "two", "cost": 1, "requires": "z != 0", "effects": [{"variable": "x", "mode": "set", "value": "2"}]})",
      R"({"guarantees": "z == 0 -> x == 1", "reads": ["z"], "writes": ["x"]})",
      R"([{"name": "two_needs_z", "check": "x == 2 -> z != 0"}])",
      "x >= 1 && x <= 2");
  const std::string b =
      task("b", kX, "", R"({"assumes": "x == 1", "reads": ["x"]})", "[]", "x == 1");
  const std::string j = task(
      "j",
      kZ,
      R"({"id": "inc", "cost": 1, "requires": "z < 10", "effects": [{"variable": "z", "mode": "increment", "value": "1"}]})",
      R"({"guarantees": "z >= 1", "writes": ["z"]})",
      "[]",
      "z >= 1");
  Dir d({{"a.json", a}, {"b.json", b}, {"j.json", j}});
  d.write("m.json",
          manifest(R"("a": "a.json", "b": "b.json", "j": "j.json")",
                   R"({"parallel": [{"sequential": ["a", "b"]}, "j"]})",
                   R"(, "interface": {"assumes": "z == 0"})"));
  const cc::ComposeReport r = compose_file(d / "m.json");
  for (const auto& t : r.tasks) CHECK(t.refuted == 0);
  const auto* o = find(r, "sequential:a->b");
  REQUIRE(o != nullptr);
  CHECK(o->verdict == cv::VerdictKind::refuted);
  REQUIRE(o->counterexample);
  CHECK(value_of(*o->counterexample, "x") != "1");
  CHECK(value_of(*o->counterexample, "z") != "0");
  CHECK(r.exit_code() == 1);
}

// Compositions a review found proved although a run could fail (or refuted although safe); each
// directory under tests/data/compose/ holds the task specs and manifests of one finding.
TEST_CASE("regressions: stale facts in parallel branches, loops, transition invariants, groups",
          "[compose]") {
  struct Case {
    const char* manifest;
    int exit_code;
    const char* refuted;  // the id of the refuted obligation, or ""
  };
  const Case cases[] = {
      // a guard inside a parallel branch, falsified by the other branch before `b` starts
      {"h1/m.json", 1, "sequential:a->b"},
      // the same through a nested manifest's assumes
      {"h1/m2.json", 1, "sequential:sub.a->sub.b"},
      // a nested manifest's guarantees derived from its assumes, which the other branch breaks
      {"h1g/m.json", 1, "contract:sub.copy->sub.guarantees"},
      // a guard's variable written by the other branch: the branches are not independent
      {"h1b/m2.json", 1, "conditional:n[x != 0]->e"},
      {"h1b/m.json", 0, ""},
      // the third iteration of a loop starts from weaker facts than the second
      {"h5/m.json", 1, "conditional:a|a2[c]->a"},
      // a transition invariant is checked with old(x) = x when a kernel starts
      {"h3/m.json", 1, "contract:start:t.grows_to_ten"},
      {"h3/m2.json", 1, "interference:start:t2.step_or_reset"},
      // a composite with assumes but no guarantees keeps the facts it does not touch
      {"fa1/m.json", 0, ""},
      // stability proofs may use the facts nothing in the parallel node writes
      {"fa2/m.json", 0, ""},
  };
  for (const Case& c : cases) {
    INFO(c.manifest);
    const cc::ComposeReport r =
        compose_file(clampai::test::source_path(std::string("tests/data/compose/") + c.manifest));
    CHECK(r.exit_code() == c.exit_code);
    if (*c.refuted != '\0') {
      const auto* o = find(r, c.refuted);
      REQUIRE(o != nullptr);
      CHECK(o->verdict == cv::VerdictKind::refuted);
    }
  }
}
