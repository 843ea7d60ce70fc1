// The invariant library's templates: what each expands to, how the kernel enforces it, the
// pattern templates on RE2 (opaque to the verifier, said so), and boundary proximity.
#include <catch2/catch.hpp>
#include <string>

#include "clampai/hardening.hpp"
#include "clampai/kernel.hpp"
#include "clampai/verifier/verify.hpp"

using namespace clampai;
using Catch::Matchers::Contains;

namespace {

std::string spec_with(const std::string& invariants, const std::string& actions = "") {
  return R"J({
    "variables": {
      "spent": {"type": "decimal", "scale": 2, "initial": 0},
      "calls": {"type": "int", "initial": 0},
      "window_start": {"type": "int", "initial": 0},
      "now": {"type": "int", "initial": 0},
      "status": {"type": "enum", "values": ["new", "done", "lost"], "initial": "new"},
      "owner": {"type": "string", "optional": true, "initial": "ops"},
      "ids": {"type": "list", "element": "int", "initial": [1, 2]},
      "notes": {"type": "string", "initial": ""},
      "emails": {"type": "list", "element": "string", "initial": []}
    },
    "actions": [)J" +
         actions + R"J(],
    "invariants": [)J" +
         invariants + R"J(],
    "budget": {"total": 100, "min_action_cost": 1}})J";
}

std::string expansion(const std::string& invariant) {
  const auto m = kernel::load_spec(spec_with(invariant));
  return kernel::to_source(*m->invariants.at(0).expr);
}

std::string error(const std::string& text) {
  try {
    (void)kernel::load_spec(text);
  } catch (const SpecError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("Templates: each expands to an expression of the language", "[hardening][template]") {
  CHECK(
      expansion(
          R"J({"name": "r", "template": "value_range", "variable": "spent", "min": 0, "max": 99.5})J") ==
      "spent >= 0 && spent <= 99.5");
  CHECK(expansion(
            R"J({"name": "r", "template": "resource_ceiling", "variable": "spent", "max": 50})J") ==
        "spent <= 50");
  CHECK(expansion(R"J({"name": "r", "template": "rate_limit", "variable": "calls", "max": 3})J") ==
        "calls <= 3");
  CHECK(expansion(R"J({"name": "r", "template": "no_delete", "variable": "owner"})J") ==
        "defined(owner)");
  CHECK(expansion(
            R"J({"name": "r", "template": "required_fields", "variables": ["owner", "notes"]})J") ==
        "defined(owner) && defined(notes)");
  CHECK(expansion(R"J({"name": "r", "template": "read_only", "variables": ["window_start"]})J") ==
        "window_start == old(window_start)");
  CHECK(
      expansion(
          R"J({"name": "r", "template": "allowed_values", "variable": "status", "values": ["new", "done"]})J") ==
      "status in {'new', 'done'}");
  CHECK(expansion(R"J({"name": "r", "template": "monotone", "variable": "spent"})J") ==
        "spent >= old(spent)");
  CHECK(
      expansion(
          R"J({"name": "r", "template": "monotone", "variable": "calls", "direction": "decreasing", "strict": true})J") ==
      "calls < old(calls)");
  CHECK(expansion(R"J({"name": "r", "template": "list_length", "variable": "ids", "max": 3})J") ==
        "len(ids) <= 3");
  CHECK(
      expansion(
          R"J({"name": "r", "template": "time_window_rate", "count": "calls", "window_start": "window_start", "clock": "now", "window": 60, "max": 10})J") ==
      "now - window_start < 60 -> calls <= 10");
  const auto m = kernel::load_spec(
      spec_with(R"J({"name": "r", "template": "value_range", "variable": "spent", "max": 1})J"));
  CHECK(m->invariants[0].template_name == "value_range");
}

TEST_CASE("Templates: errors name the template's parameters", "[hardening][template]") {
  REQUIRE_THAT(
      error(spec_with(R"J({"name": "r", "template": "value_rang", "variable": "spent"})J")),
      Contains("invariants[0].template: unknown template `value_rang`"));
  REQUIRE_THAT(
      error(spec_with(
          R"J({"name": "r", "template": "value_range", "variable": "spent", "maximum": 3})J")),
      Contains("invariants[0].maximum: unknown key `maximum` for template `value_range` "
               "(its parameters: variable, min, max)"));
  REQUIRE_THAT(
      error(spec_with(R"J({"name": "r", "template": "value_range", "variable": "spent"})J")),
      Contains("needs `min`, `max` or both"));
  REQUIRE_THAT(error(spec_with(
                   R"J({"name": "r", "template": "rate_limit", "variable": "cals", "max": 3})J")),
               Contains("invariants[0].check:1:1: unknown variable `cals`"));
  REQUIRE_THAT(
      error(spec_with(R"J({"name": "r", "template": "rate_limit", "check": "true"})J")),
      Contains("invariants[0].check: an invariant has a `check` or a `template`, not both"));
  REQUIRE_THAT(
      error(spec_with(R"J({"name": "r", "template": "no_duplicate_ids", "variable": "calls"})J")),
      Contains("invariants[0].variable: `no_duplicate_ids` applies to a list"));
}

TEST_CASE("Templates: the kernel enforces them, native ones included", "[hardening][template]") {
  const auto m = kernel::load_spec(spec_with(
      R"J({"name": "cap", "template": "rate_limit", "variable": "calls", "max": 1},
         {"name": "unique", "template": "no_duplicate_ids", "variable": "ids"})J",
      R"J({"id": "call", "cost": 1, "effects": [{"variable": "calls", "mode": "increment", "value": 1}]},
         {"id": "dup", "cost": 1, "effects": [{"variable": "ids", "mode": "append", "value": 2}]},
         {"id": "fresh", "cost": 1, "effects": [{"variable": "ids", "mode": "append", "value": 3}]})J"));
  kernel::SafetyKernel k(m);
  REQUIRE(k.execute("call").receipt);
  REQUIRE(k.evaluate("call").has(kernel::ReasonCode::invariant_violated, "cap"));
  REQUIRE(k.evaluate("dup").has(kernel::ReasonCode::invariant_violated, "unique"));
  REQUIRE(k.execute("fresh").receipt);
}

TEST_CASE("Pattern templates: RE2 finds PII and secrets, in strings and list elements",
          "[hardening][template][pattern]") {
  kernel::set_pattern_compiler(nullptr);
  const std::string pii =
      R"J({"name": "no_pii", "template": "pii_pattern", "variables": ["notes", "emails"]},
      {"name": "no_secrets", "template": "secret_pattern", "variables": ["notes"]})J";
  const std::string actions =
      R"J({"id": "note_phone", "cost": 1, "effects": [{"variable": "notes", "mode": "set", "value": "'call 555-123-4567 now'"}]},
         {"id": "note_key", "cost": 1, "effects": [{"variable": "notes", "mode": "set", "value": "'key AKIAABCDEFGHIJKLMNOP'"}]},
         {"id": "note_ok", "cost": 1, "effects": [{"variable": "notes", "mode": "set", "value": "'all good'"}]},
         {"id": "add_email", "cost": 1, "effects": [{"variable": "emails", "mode": "append", "value": "'jane@example.org'"}]})J";
  REQUIRE_THAT(error(spec_with(pii, actions)),
               Contains("invariants[0].template: the `pii_pattern` template needs a "
                        "regular-expression engine"));
  hardening::install_pattern_engine();
  const auto m = kernel::load_spec(spec_with(pii, actions));
  kernel::SafetyKernel k(m);
  REQUIRE(k.evaluate("note_phone").has(kernel::ReasonCode::invariant_violated, "no_pii"));
  REQUIRE(k.evaluate("note_key").has(kernel::ReasonCode::invariant_violated, "no_secrets"));
  REQUIRE_FALSE(k.evaluate("note_key").has(kernel::ReasonCode::invariant_violated, "no_pii"));
  REQUIRE(k.evaluate("add_email").has(kernel::ReasonCode::invariant_violated, "no_pii"));
  REQUIRE(k.execute("note_ok").receipt);

  REQUIRE_THAT(
      error(spec_with(
          R"J({"name": "p", "template": "pii_pattern", "variables": ["notes"], "patterns": ["regex:(unclosed"]})J")),
      Contains("invariants[0].patterns[0]: invalid regular expression `(unclosed`"));
  REQUIRE_THAT(
      error(spec_with(
          R"J({"name": "p", "template": "pii_pattern", "variables": ["notes"], "patterns": ["passport"]})J")),
      Contains("invariants[0].patterns[0]: unknown pattern `passport`"));
  REQUIRE_THAT(
      error(spec_with(R"J({"name": "p", "template": "pii_pattern", "variables": ["calls"]})J")),
      Contains("invariants[0].variables[0]: a pattern template reads strings"));
  // A custom pattern, and a hostile one for backtracking engines: RE2 is linear.
  const auto custom = kernel::load_spec(spec_with(
      R"J({"name": "p", "template": "secret_pattern", "variables": ["notes"], "patterns": ["regex:(a+)+b"]})J",
      R"J({"id": "evil", "cost": 1, "effects": [{"variable": "notes", "mode": "set", "value": "'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaac'"}]})J"));
  REQUIRE(kernel::SafetyKernel(custom).evaluate("evil").approved);
}

TEST_CASE("Pattern templates: the verifier says it cannot read them",
          "[hardening][template][pattern]") {
  hardening::install_pattern_engine();
  const auto m = kernel::load_spec(spec_with(
      R"J({"name": "no_pii", "template": "pii_pattern", "variables": ["notes"]},
         {"name": "cap", "template": "resource_ceiling", "variable": "spent", "max": 10})J",
      R"J({"id": "pay", "cost": 1, "requires": "spent <= 5", "effects": [{"variable": "spent", "mode": "increment", "value": 5}]})J"));
  const verifier::Report r = verifier::verify(m);
  bool opaque = false;
  bool proved_cap = false;
  for (const auto& o : r.obligations) {
    if (o.invariant == "no_pii" && o.kind == verifier::ObligationKind::preservation) {
      CHECK(o.verdict == verifier::VerdictKind::unknown);
      CHECK_THAT(o.reason,
                 Contains("the `pii_pattern` template matches regular expressions (RE2)"));
      opaque = true;
    }
    if (o.invariant == "cap" && o.kind == verifier::ObligationKind::preservation)
      proved_cap = o.verdict == verifier::VerdictKind::proved;
  }
  REQUIRE(opaque);
  REQUIRE(proved_cap);
}

TEST_CASE("Proximity: exact slack and steps to each linear boundary", "[hardening][proximity]") {
  const auto m = kernel::load_spec(R"J({
    "variables": {"spent": {"type": "decimal", "scale": 2, "initial": 12.5},
                  "x": {"type": "int", "initial": 0},
                  "tags": {"type": "list", "element": "int", "initial": []}},
    "actions": [
      {"id": "pay", "cost": 1, "effects": [{"variable": "spent", "mode": "increment", "value": 30}]},
      {"id": "pay_default", "cost": 1, "parameters": {"amount": {"type": "decimal", "scale": 2, "default": 0.1}},
       "effects": [{"variable": "spent", "mode": "increment", "value": "amount"}]},
      {"id": "pay_any", "cost": 1, "parameters": {"amount": {"type": "int"}},
       "effects": [{"variable": "spent", "mode": "increment", "value": "amount"}]},
      {"id": "refund", "cost": 1, "effects": [{"variable": "spent", "mode": "decrement", "value": 12.5}]},
      {"id": "reset", "cost": 1, "effects": [{"variable": "spent", "mode": "set", "value": 0}]},
      {"id": "step", "cost": 1, "effects": [{"variable": "x", "mode": "increment", "value": 5}]}],
    "invariants": [
      {"name": "range", "template": "value_range", "variable": "spent", "min": 0, "max": 100},
      {"name": "strict", "check": "2 * x < 10"},
      {"name": "nonlinear", "check": "len(tags) <= 3"}],
    "budget": {"total": 100, "min_action_cost": 1}})J");
  const auto p = hardening::boundary_proximity(*m, m->initial_state());
  REQUIRE(p.size() == 3);  // two conjuncts of `range` and `strict`; `len` is not linear
  const auto& lower = p[0];
  const auto& upper = p[1];
  REQUIRE(lower.boundary == "spent >= 0");
  REQUIRE(upper.boundary == "spent <= 100");
  REQUIRE(upper.slack == kernel::Decimal{8750, 2});
  auto approach = [](const hardening::BoundaryProximity& b, const std::string& id) {
    for (const auto& a : b.actions)
      if (a.action == id) return a;
    FAIL("no action " + id);
    return hardening::Approach{};
  };
  REQUIRE(approach(upper, "pay").steps == 2);  // 42.5, 72.5, then 102.5 crosses
  REQUIRE(approach(upper, "pay_default").steps == 875);
  REQUIRE_FALSE(approach(upper, "pay_any").delta);
  REQUIRE_THAT(approach(upper, "pay_any").note,
               Contains("parameter `amount`, which has no default"));
  REQUIRE_FALSE(approach(upper, "refund").steps);  // moves away
  REQUIRE(approach(lower, "refund").steps == 1);   // 12.5 - 12.5 = 0 still holds, then -12.5
  REQUIRE_THAT(approach(upper, "reset").note, Contains("`set` is not a constant step"));
  REQUIRE(approach(upper, "step").delta == kernel::Decimal{});
  const auto& strict = p[2];
  REQUIRE(strict.strict);
  REQUIRE(strict.slack == kernel::Decimal::integer(10));
  REQUIRE(approach(strict, "step").delta == kernel::Decimal::integer(-10));
  REQUIRE(approach(strict, "step").steps == 0);  // 2 * 5 < 10 fails at once
}

TEST_CASE("Pattern templates: the patterns are part of the model's digest",
          "[hardening][template][pattern]") {
  hardening::install_pattern_engine();
  auto digest = [](const std::string& patterns) {
    return kernel::load_spec(
               spec_with(
                   R"J({"name": "p", "template": "pii_pattern", "variables": ["notes"], "patterns": )J" +
                   patterns + "}"))
        ->digest;
  };
  REQUIRE(digest(R"J(["email"])J") == digest(R"J(["email"])J"));
  REQUIRE(digest(R"J(["email"])J") != digest(R"J(["ssn"])J"));
  REQUIRE(digest(R"J(["regex:a"])J") != digest(R"J(["regex:b"])J"));
}
