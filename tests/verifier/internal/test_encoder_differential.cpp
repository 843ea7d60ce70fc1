// White-box: the Z3 encoding and the kernel's evaluator agree on 100,000 random
// (expression, state) pairs.
#include <catch2/catch.hpp>
#include <random>

#include "../../../verifier/src/z3_encoder.hpp"
#include "clampai/kernel.hpp"

using namespace clampai::kernel;
using clampai::verifier::detail::Encoder;

namespace {

class Generator {
 public:
  explicit Generator(std::mt19937_64& rng) : rng_(rng) {}

  std::string boolean(int depth) {
    switch (depth <= 0 ? pick(0, 2) : pick(0, 13)) {
      case 0:
        return pick(0, 1) ? "true" : "false";
      case 1:
        return "b";
      case 2:
        return number(0) + " < " + number(0);
      case 3:
        return "(" + number(depth - 1) + (pick(0, 1) ? " <= " : " >= ") + number(depth - 1) + ")";
      case 4:
        return "(" + number(depth - 1) + (pick(0, 1) ? " == " : " != ") + number(depth - 1) + ")";
      case 5:
        return "(" + boolean(depth - 1) + (pick(0, 1) ? " && " : " || ") + boolean(depth - 1) + ")";
      case 6:
        return "!(" + boolean(depth - 1) + ")";
      case 7:
        return "(" + boolean(depth - 1) + " -> " + boolean(depth - 1) + ")";
      case 8:
        return "(if " + boolean(depth - 1) + " then " + boolean(depth - 1) + " else " +
               boolean(depth - 1) + ")";
      case 9:
        return std::string("e ") + (pick(0, 1) ? "==" : "!=") + " '" + enum_value() + "'";
      case 10:
        return "e in {'" + enum_value() + "', '" + enum_value() + "'}";
      case 11:
        return std::string("s == '") + (pick(0, 1) ? "x" : "") + "'";
      case 12:
        return "contains(l, " + integer(depth - 1) + ")";
      default:
        return pick(0, 1) ? "l == [" + std::to_string(pick(-2, 2)) + "]"
                          : "(if b then e else 'a') == '" + enum_value() + "'";
    }
  }

  std::string number(int depth) {
    if (pick(0, 3) == 0) return integer(depth);
    switch (depth <= 0 ? pick(0, 2) : pick(0, 8)) {
      case 0:
        return "d";
      case 1:
        return std::to_string(pick(-9, 9)) + "." + std::to_string(pick(0, 9)) +
               std::to_string(pick(0, 9));
      case 2:
        return "i1";
      case 3:
        return "(" + number(depth - 1) + (pick(0, 1) ? " + " : " - ") + number(depth - 1) + ")";
      case 4:
        return "(" + number(depth - 1) + " * " + std::to_string(pick(-3, 3)) + ")";
      case 5:
        return "-(" + number(depth - 1) + ")";
      case 6:
        return std::string(pick(0, 1) ? "min(" : "max(") + number(depth - 1) + ", " +
               number(depth - 1) + ")";
      case 7:
        return "abs(" + number(depth - 1) + ")";
      default:
        return "(if " + boolean(depth - 1) + " then " + number(depth - 1) + " else " +
               number(depth - 1) + ")";
    }
  }

  std::string integer(int depth) {
    switch (depth <= 0 ? pick(0, 2) : pick(0, 6)) {
      case 0:
        return std::to_string(pick(-5, 5));
      case 1:
        return "i1";
      case 2:
        return "i2";
      case 3:
        return "(" + integer(depth - 1) + " + " + integer(depth - 1) + ")";
      case 4:
        return "(" + integer(depth - 1) + " * " + integer(depth - 1) + ")";
      case 5:
        return "len(l)";
      default:
        return "(if " + boolean(depth - 1) + " then " + integer(depth - 1) + " else " +
               integer(depth - 1) + ")";
    }
  }

  std::string enum_value() { return std::string(1, static_cast<char>('a' + pick(0, 2))); }
  int pick(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }

 private:
  std::mt19937_64& rng_;
};

}  // namespace

TEST_CASE("Encoder: agrees with the kernel's evaluator on 100,000 random (expression, state) pairs",
          "[verifier][encoder]") {
  auto schema =
      std::make_shared<const Schema>(std::vector<std::string>{"i1", "i2", "d", "b", "e", "s", "l"});
  const std::vector<Type> types{Type::integer(),
                                Type::integer(),
                                Type::decimal(2),
                                Type::boolean(),
                                Type::enumeration({"a", "b", "c"}),
                                Type::string(),
                                Type::list(Type::integer())};
  TaskDecl decl;
  for (std::size_t i = 0; i < types.size(); ++i) {
    Value init = types[i].kind() == Type::Kind::boolean       ? Value::boolean(false)
                 : types[i].kind() == Type::Kind::enumeration ? Value::string("a")
                 : types[i].kind() == Type::Kind::string      ? Value::string("")
                 : types[i].kind() == Type::Kind::list        ? Value::list({})
                                                              : Value::integer(0);
    decl.variables.push_back(VariableDecl{schema->name(static_cast<VarId>(i)), types[i], init});
  }
  decl.budget = BudgetDecl{Decimal{1, 0}, Decimal{1, 0}};
  const auto model = build_model(decl);

  std::mt19937_64 rng(100000);
  Generator gen(rng);
  z3::context ctx;
  Encoder enc(ctx, *model);
  z3::expr_vector symbols(ctx);
  for (VarId id = 0; id < types.size(); ++id) symbols.push_back(enc.pre(id));

  int compared = 0;
  for (int expr_i = 0; expr_i < 20000; ++expr_i) {
    const std::string text = gen.pick(0, 2) == 0 ? gen.number(3) : gen.boolean(3);
    const ExprPtr e = parse_expression(text, model->scope(), "gen");
    const auto term = enc.encode_term(*e);
    for (int state_i = 0; state_i < 5; ++state_i) {
      std::vector<Value> values{Value::integer(gen.pick(-10, 10)),
                                Value::integer(gen.pick(-10, 10)),
                                Value::number(Decimal{gen.pick(-1000, 1000), 2}),
                                Value::boolean(gen.pick(0, 1) == 1),
                                Value::string(gen.enum_value()),
                                Value::string(gen.pick(0, 1) ? "x" : ""),
                                Value::list({})};
      Value::List items;
      z3::expr seq = z3::expr(
          ctx, Z3_mk_seq_empty(ctx, ctx.seq_sort(*std::make_unique<z3::sort>(ctx.int_sort()))));
      for (int k = gen.pick(0, 3); k > 0; --k) {
        const int v = gen.pick(-3, 3);
        items.push_back(Value::integer(v));
        seq = z3::concat(seq, ctx.int_val(v).unit());
      }
      values[6] = Value::list(items);
      const State state(schema, values);
      const EvalResult concrete = evaluate(*e, EvalEnv{&state, {}, &state, nullptr});
      REQUIRE(concrete.ok());  // small values: no overflow, no undefined reads

      z3::expr_vector consts(ctx);
      consts.push_back(ctx.int_val(values[0].as_number().units));
      consts.push_back(ctx.int_val(values[1].as_number().units));
      consts.push_back(ctx.int_val(values[2].as_number().units));
      consts.push_back(ctx.bool_val(values[3].as_bool()));
      consts.push_back(ctx.int_val(values[4].as_string()[0] - 'a'));
      consts.push_back(ctx.string_val(values[5].as_string()));
      consts.push_back(seq);
      z3::expr sub = term.e;
      sub = sub.substitute(symbols, consts).simplify();
      INFO(text << " on i1=" << values[0].to_string() << " i2=" << values[1].to_string()
                << " d=" << values[2].to_string() << " b=" << values[3].to_string()
                << " e=" << values[4].to_string() << " s=" << values[5].to_string()
                << " l=" << values[6].to_string() << ": Z3 says " << sub.to_string());
      if (concrete.value.kind() == Value::Kind::boolean) {
        REQUIRE((sub.is_true() || sub.is_false()));
        REQUIRE(sub.is_true() == concrete.value.as_bool());
      } else {
        std::int64_t z = 0;
        REQUIRE(sub.is_numeral_i64(z));
        const auto expected = concrete.value.as_number().rescaled(term.scale);
        REQUIRE(expected.has_value());
        REQUIRE(z == expected->units);
      }
      ++compared;
    }
  }
  REQUIRE(compared == 100000);
}
