// The expression language: parsing, typing, evaluation, printing.
#include <catch2/catch.hpp>
#include <functional>
#include <limits>
#include <random>

#include "clampai/kernel/error.hpp"
#include "clampai/kernel/expr.hpp"

using namespace clampai::kernel;

namespace {

struct Fixture {
  std::shared_ptr<const Schema> schema =
      std::make_shared<const Schema>(std::vector<std::string>{"n", "d", "b", "s", "e", "l", "opt"});
  std::vector<Type> types{Type::integer(),
                          Type::decimal(2),
                          Type::boolean(),
                          Type::string(),
                          Type::enumeration({"idle", "busy"}),
                          Type::list(Type::integer()),
                          Type::integer()};
  std::vector<NamedType> params{{"k", Type::integer()}};
  State state{schema,
              {Value::integer(7),
               Value::number(Decimal{1250, 2}),
               Value::boolean(true),
               Value::string("hi"),
               Value::string("idle"),
               Value::list({Value::integer(1), Value::integer(2)}),
               Value()}};
  std::vector<Value> param_values{Value::integer(3)};

  ExprScope scope(bool allow_old = true) const {
    ExprScope sc;
    sc.variables = schema.get();
    sc.variable_types = &types;
    sc.parameters = &params;
    sc.allow_old = allow_old;
    return sc;
  }
  EvalResult eval(const std::string& text) const {
    const ExprPtr e = parse_expression(text, scope(), "x");
    return evaluate(*e, EvalEnv{&state, {}, &state, param_values.data()});
  }
  Value value(const std::string& text) const {
    EvalResult r = eval(text);
    REQUIRE(r.ok());
    return r.value;
  }
};

}  // namespace

TEST_CASE("Expr: evaluates arithmetic, comparisons and logic", "[kernel][expr]") {
  Fixture f;
  REQUIRE(f.value("n + 2 * k") == Value::integer(13));
  REQUIRE(f.value("d - 0.5") == Value::number(Decimal{12, 0}));
  REQUIRE(f.value("-n") == Value::integer(-7));
  REQUIRE(f.value("n > 5 && d <= 12.50") == Value::boolean(true));
  REQUIRE(f.value("!b || n == 7") == Value::boolean(true));
  REQUIRE(f.value("b -> n < 0") == Value::boolean(false));
  REQUIRE(f.value("if n > 100 then 1 else 2") == Value::integer(2));
  REQUIRE(f.value("min(n, k) + max(n, k) + abs(0 - n)") == Value::integer(17));
  REQUIRE(f.value("len(l) == 2 && contains(l, 2) && !contains(l, 3)") == Value::boolean(true));
  REQUIRE(f.value("e in {'busy', 'idle'}") == Value::boolean(true));
  REQUIRE(f.value("s == 'hi' && e != 'busy'") == Value::boolean(true));
  REQUIRE(f.value("[1, 2] == l") == Value::boolean(true));
  REQUIRE(f.value("defined(n) && !defined(opt)") == Value::boolean(true));
}

TEST_CASE("Expr: short-circuit operators skip the operand they do not need", "[kernel][expr]") {
  Fixture f;
  // opt is undefined: reading it is an error, unless the reading is skipped.
  REQUIRE(f.eval("opt > 0").error == EvalError::undefined);
  REQUIRE(f.value("defined(opt) && opt > 0") == Value::boolean(false));
  REQUIRE(f.value("!defined(opt) || opt > 0") == Value::boolean(true));
  REQUIRE(f.value("defined(opt) -> opt > 0") == Value::boolean(true));
  REQUIRE(f.value("if defined(opt) then opt else 0") == Value::integer(0));
}

TEST_CASE("Expr: overflow is an evaluation error, never wrap-around", "[kernel][expr]") {
  Fixture f;
  REQUIRE(f.eval("9223372036854775807 + n").error == EvalError::overflow);
  REQUIRE(f.eval("9223372036854775807 * 2").error == EvalError::overflow);
  REQUIRE(f.eval("-9223372036854775807 - 2").error == EvalError::overflow);
}

TEST_CASE("Expr: type errors name the position", "[kernel][expr]") {
  Fixture f;
  const auto sc = f.scope();
  REQUIRE_THROWS_WITH(
      parse_expression("n + b", sc, "p"),
      Catch::Matchers::Contains("p:1:5") && Catch::Matchers::Contains("must be a number"));
  REQUIRE_THROWS_WITH(parse_expression("n == 'x'", sc, "p"),
                      Catch::Matchers::Contains("cannot compare int with string"));
  REQUIRE_THROWS_WITH(
      parse_expression("e == 'running'", sc, "p"),
      Catch::Matchers::Contains("p:1:6") && Catch::Matchers::Contains("not a value of enum"));
  REQUIRE_THROWS_WITH(
      parse_expression("  nn > 1", sc, "p"),
      Catch::Matchers::Contains("p:1:3: unknown variable `nn` (did you mean `n`?)"));
  REQUIRE_THROWS_WITH(parse_expression("1 < n < 3", sc, "p"),
                      Catch::Matchers::Contains("do not chain"));
  REQUIRE_THROWS_WITH(parse_expression("n = 1", sc, "p"), Catch::Matchers::Contains("use `==`"));
  REQUIRE_THROWS_WITH(parse_expression("s == \"x\"", sc, "p"),
                      Catch::Matchers::Contains("single quotes"));
  REQUIRE_THROWS_WITH(parse_expression("n / 2", sc, "p"), Catch::Matchers::Contains("division"));
  REQUIRE_THROWS_WITH(parse_expression("old(n) > 1", f.scope(false), "p"),
                      Catch::Matchers::Contains("only allowed in invariants"));
  REQUIRE_THROWS_WITH(parse_expression("foo(n)", sc, "p"),
                      Catch::Matchers::Contains("unknown function `foo`"));
  REQUIRE_THROWS_WITH(parse_expression("(n > 1", sc, "p"),
                      Catch::Matchers::Contains("expected `)`"));
  REQUIRE_THROWS_WITH(parse_expression("n >\n  zz", sc, "p"), Catch::Matchers::Contains("p:2:3"));
  REQUIRE_THROWS_AS(
      parse_expression(std::string(5000, '(') + "1" + std::string(5000, ')'), sc, "p"),
      clampai::SpecError);
}

TEST_CASE("Expr: to_source prints an expression that parses back to the same value",
          "[kernel][expr]") {
  Fixture f;
  for (const char* text : {"n + 2 * k",
                           "(n + 2) * k",
                           "n - (k - 1)",
                           "-(n + 1)",
                           "!(b && n > 1)",
                           "b -> (b -> n > 1)",
                           "(b -> b) -> b",
                           "if b then n else k",
                           "e in {'idle', 'busy'}",
                           "s == 'it\\'s'",
                           "contains(l, k) || len(l) > 3"}) {
    INFO(text);
    const ExprPtr e = parse_expression(text, f.scope(), "x");
    const ExprPtr again = parse_expression(to_source(*e), f.scope(), "x");
    REQUIRE(to_source(*again) == to_source(*e));
    const EvalEnv env{&f.state, {}, &f.state, f.param_values.data()};
    REQUIRE(evaluate(*again, env).value == evaluate(*e, env).value);
  }
}

TEST_CASE("Expr: old(x) reads the pre-action state, x the post-action state", "[kernel][expr]") {
  Fixture f;
  const ExprPtr e = parse_expression("n >= old(n)", f.scope(), "x");
  REQUIRE(uses_old(*e));
  const std::vector<std::pair<VarId, Value>> lower{{0, Value::integer(6)}};
  const std::vector<std::pair<VarId, Value>> higher{{0, Value::integer(8)}};
  REQUIRE_FALSE(evaluate(*e, EvalEnv{&f.state, lower, &f.state, nullptr}).value.as_bool());
  REQUIRE(evaluate(*e, EvalEnv{&f.state, higher, &f.state, nullptr}).value.as_bool());
}

// Comparisons of numbers carry a flat program the evaluator runs instead of the AST; it must
// give exactly the AST's value or error, in the same order (random expressions and states,
// values near the int64 edge so that overflows happen, undefined variables, old(x)).
TEST_CASE("Expr: compiled comparisons agree with the AST evaluation", "[kernel][expr][property]") {
  std::mt19937_64 rng(20261123);
  const std::vector<std::string> names{"i", "j", "d2", "d4", "u"};
  auto schema = std::make_shared<const Schema>(names);
  const std::vector<Type> types{
      Type::integer(), Type::integer(), Type::decimal(2), Type::decimal(4), Type::integer()};
  const std::vector<NamedType> params{{"p", Type::integer()}, {"q", Type::decimal(2)}};
  ExprScope scope;
  scope.variables = schema.get();
  scope.variable_types = &types;
  scope.parameters = &params;
  scope.allow_old = true;
  auto pick = [&](std::initializer_list<const char*> xs) {
    return std::string(*(xs.begin() + rng() % xs.size()));
  };
  std::function<std::string(int)> operand = [&](int depth) -> std::string {
    if (depth == 0 || rng() % 3 == 0) {
      switch (rng() % 4) {
        case 0:
          return pick({"i", "j", "d2", "d4", "u"});
        case 1:
          return pick({"old(i)", "old(d2)", "p", "q"});
        case 2:
          return pick(
              {"0", "1", "-3", "2.5", "0.0001", "9223372036854775807", "4611686018427387904"});
        default:
          return pick({"i", "p", "1"});
      }
    }
    if (rng() % 6 == 0) return "-(" + operand(depth - 1) + ")";
    return "(" + operand(depth - 1) + pick({" + ", " - ", " * "}) + operand(depth - 1) + ")";
  };
  auto big = [&]() -> std::int64_t {
    switch (rng() % 4) {
      case 0:
        return static_cast<std::int64_t>(rng() % 21) - 10;
      case 1:
        return std::numeric_limits<std::int64_t>::max() - static_cast<std::int64_t>(rng() % 3);
      case 2:
        return std::numeric_limits<std::int64_t>::min() + static_cast<std::int64_t>(rng() % 3);
      default:
        return static_cast<std::int64_t>(rng() >> 2) * (rng() % 2 ? 1 : -1);
    }
  };
  auto random_state = [&](bool undefined_u) {
    return State{schema,
                 {Value::integer(big()),
                  Value::integer(big()),
                  Value::number(Decimal{big(), 2}),
                  Value::number(Decimal{big(), 4}),
                  undefined_u ? Value() : Value::integer(big())}};
  };
  // Sums and differences of three to six variables against a literal (run without the
  // loop), scales mixed.
  auto chain = [&] {
    std::string t = pick({"i", "j", "d2", "d4", "u"});
    for (int n = 2 + static_cast<int>(rng() % 4); n > 0; --n)
      t += pick({" + ", " - "}) + pick({"i", "j", "d2", "d4", "u"});
    return t + pick({" < ", " <= ", " > ", " >= ", " == ", " != "}) +
           pick({"0", "3", "-2.5", "9223372036854775807"});
  };
  int compiled = 0;
  for (int trial = 0; trial < 4000; ++trial) {
    const std::string text = trial % 4 == 3
                                 ? chain()
                                 : operand(1 + static_cast<int>(rng() % 4)) +
                                       pick({" < ", " <= ", " > ", " >= ", " == ", " != "}) +
                                       operand(1 + static_cast<int>(rng() % 4));
    INFO(text);
    const ExprPtr e = parse_expression(text, scope, "x");
    if (!e->program) continue;  // too long for a program: the AST is evaluated
    ++compiled;
    auto plain = std::make_shared<Expr>(*e);
    plain->program = nullptr;
    for (int k = 0; k < 4; ++k) {
      const State post = random_state(rng() % 4 == 0);
      const State pre = random_state(false);
      const std::vector<Value> ps{Value::integer(big()), Value::number(Decimal{big(), 2})};
      const std::vector<std::pair<VarId, Value>> overlay{{1, Value::integer(big())}};
      const EvalEnv env{&post, rng() % 2 ? ChangeSpan(overlay) : ChangeSpan(), &pre, ps.data()};
      const EvalResult fast = evaluate(*e, env);
      const EvalResult slow = evaluate(*plain, env);
      REQUIRE(fast.error == slow.error);
      if (fast.ok()) REQUIRE(fast.value == slow.value);
      // The kernel's boolean entry point (invariants, guards) agrees with both.
      bool truth = false;
      REQUIRE(evaluate_bool(*e, env, truth) == slow.error);
      if (slow.ok()) REQUIRE(truth == slow.value.as_bool());
    }
  }
  CHECK(compiled > 2000);  // most of them fit a program
  // Operands the program does not cover keep the AST.
  CHECK(parse_expression("abs(i) <= 3", scope, "x")->program == nullptr);
  CHECK(parse_expression("i + j <= 3", scope, "x")->program != nullptr);
}
