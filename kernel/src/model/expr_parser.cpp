// Tokenizer, recursive-descent parser and type checker of the expression language.
#include <algorithm>
#include <cctype>
#include <optional>

#include "clampai/kernel/error.hpp"
#include "clampai/kernel/expr.hpp"
#include "clampai/kernel/suggest.hpp"
#include "numeric_program.hpp"

namespace clampai::kernel {
namespace {

// Deep nesting would exhaust the stack of the recursive parser and evaluator: parentheses may
// nest 200 levels, and no tree (long operator chains included) may be higher than 1,000.
constexpr int kMaxDepth = 200;
constexpr std::uint32_t kMaxHeight = 1000;
constexpr std::size_t kMaxLength = 64 * 1024;

enum class Tok : std::uint8_t { end, ident, number, string, punct };

struct Token {
  Tok kind = Tok::end;
  std::string text;
  SourcePos pos;
};

using MutExpr = std::shared_ptr<Expr>;

class Parser {
 public:
  Parser(std::string_view text, const ExprScope& scope, const std::string& path)
      : text_(text), scope_(scope), path_(path) {}

  ExprPtr parse() {
    if (text_.size() > kMaxLength) fail(SourcePos{}, "expression longer than 65536 characters");
    advance();
    if (tok_.kind == Tok::end) fail(tok_.pos, "empty expression");
    MutExpr e = parse_expr();
    if (tok_.kind != Tok::end)
      fail(tok_.pos, "unexpected " + describe(tok_) + " after the expression");
    return e;
  }

 private:
  [[noreturn]] void fail(SourcePos pos, const std::string& message) const {
    throw SpecError(path_ + ":" + std::to_string(pos.line) + ":" + std::to_string(pos.column),
                    message);
  }

  static std::string describe(const Token& t) {
    if (t.kind == Tok::end) return "end of expression";
    return "`" + t.text + "`";
  }

  // ---- tokenizer ----
  char peek(std::size_t k = 0) const { return i_ + k < text_.size() ? text_[i_ + k] : '\0'; }
  void bump() {
    if (text_[i_] == '\n') {
      ++line_;
      col_ = 1;
    } else {
      ++col_;
    }
    ++i_;
  }

  void advance() {
    while (i_ < text_.size() &&
           (peek() == ' ' || peek() == '\t' || peek() == '\n' || peek() == '\r'))
      bump();
    tok_ = Token{};
    tok_.pos = SourcePos{line_, col_};
    if (i_ >= text_.size()) return;
    const char c = peek();
    const std::size_t start = i_;
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      while (std::isalnum(static_cast<unsigned char>(peek())) || peek() == '_') bump();
      tok_.kind = Tok::ident;
      tok_.text = std::string(text_.substr(start, i_ - start));
      return;
    }
    if (std::isdigit(static_cast<unsigned char>(c))) {
      while (std::isdigit(static_cast<unsigned char>(peek()))) bump();
      if (peek() == '.' && std::isdigit(static_cast<unsigned char>(peek(1)))) {
        bump();
        while (std::isdigit(static_cast<unsigned char>(peek()))) bump();
      }
      if (std::isalpha(static_cast<unsigned char>(peek())) || peek() == '_') {
        fail(tok_.pos,
             "malformed number `" + std::string(text_.substr(start, i_ - start + 1)) + "`");
      }
      tok_.kind = Tok::number;
      tok_.text = std::string(text_.substr(start, i_ - start));
      return;
    }
    if (c == '\'') {
      bump();
      std::string s;
      while (true) {
        if (i_ >= text_.size()) fail(tok_.pos, "unterminated string literal");
        char d = peek();
        if (d == '\'') {
          bump();
          break;
        }
        if (d == '\\') {
          bump();
          if (i_ >= text_.size()) fail(tok_.pos, "unterminated string literal");
          d = peek();
          if (d != '\'' && d != '\\')
            fail(SourcePos{line_, col_},
                 "unknown escape `\\" + std::string(1, d) +
                     "` in a string literal (use \\' or \\\\)");
        }
        s += d;
        bump();
      }
      tok_.kind = Tok::string;
      tok_.text = std::move(s);
      return;
    }
    static constexpr std::string_view kTwo[] = {"==", "!=", "<=", ">=", "&&", "||", "->"};
    for (auto op : kTwo) {
      if (text_.substr(i_, 2) == op) {
        bump();
        bump();
        tok_.kind = Tok::punct;
        tok_.text = std::string(op);
        return;
      }
    }
    if (std::string_view("()[]{},+-*<>!").find(c) != std::string_view::npos) {
      bump();
      tok_.kind = Tok::punct;
      tok_.text = std::string(1, c);
      return;
    }
    if (c == '/')
      fail(tok_.pos, "division is not part of the language (multiply by a constant instead)");
    if (c == '=') fail(tok_.pos, "unexpected `=` (use `==` to compare)");
    if (c == '"') fail(tok_.pos, "unexpected `\"` (string literals use single quotes: 'text')");
    if (c == '&' || c == '|')
      fail(tok_.pos, std::string("unexpected `") + c + "` (use `" + c + c + "`)");
    fail(tok_.pos, "unexpected character `" + std::string(1, c) + "`");
  }

  bool at(std::string_view punct_or_kw) const {
    return (tok_.kind == Tok::punct || tok_.kind == Tok::ident) && tok_.text == punct_or_kw;
  }

  void expect(std::string_view what) {
    if (!at(what)) fail(tok_.pos, "expected `" + std::string(what) + "`, found " + describe(tok_));
    advance();
  }

  // ---- construction helpers ----
  MutExpr node(ExprOp op, SourcePos pos, Type type, std::vector<ExprPtr> args = {}) const {
    auto e = std::make_shared<Expr>();
    e->op = op;
    e->pos = pos;
    e->type = std::move(type);
    e->args = std::move(args);
    for (const auto& a : e->args) e->height = std::max(e->height, a->height + 1);
    if (e->height > kMaxHeight)
      fail(pos, "expression more than 1000 levels deep (split long chains of operators)");
    e->program = detail::compile_comparison(*e);  // operands are complete: they come first
    return e;
  }

  void require_bool(const Expr& e, const std::string& what) const {
    if (e.type.kind() != Type::Kind::boolean) {
      fail(e.pos, what + " must be a bool, found " + e.type.to_string());
    }
  }

  void require_numeric(const Expr& e, const std::string& what) const {
    if (!e.type.is_numeric()) fail(e.pos, what + " must be a number, found " + e.type.to_string());
  }

  static Type numeric_join(const Type& a, const Type& b) {
    if (a.kind() == Type::Kind::integer && b.kind() == Type::Kind::integer) return Type::integer();
    return Type::decimal(std::max(a.scale(), b.scale()));
  }

  // A string literal compared with (or chosen among) enum values must be one of them; a string
  // that is not a literal cannot stand where an enum value is produced.
  void check_enum_member(const Type& enum_type, const Expr& e) const {
    if (enum_type.kind() != Type::Kind::enumeration) return;
    if (e.type.kind() == Type::Kind::string && e.op != ExprOp::literal) {
      fail(e.pos,
           "a string expression cannot stand for a value of " + enum_type.to_string() +
               " (use a literal)");
    }
    check_enum_literal(enum_type, e);
  }

  // A string literal compared with (or chosen among) enum values must be one of them.
  void check_enum_literal(const Type& enum_type, const Expr& e) const {
    if (enum_type.kind() != Type::Kind::enumeration) return;
    if (e.op == ExprOp::literal && e.literal.kind() == Value::Kind::string &&
        !enum_type.has_enum_value(e.literal.as_string())) {
      fail(e.pos, "`'" + e.literal.as_string() + "'` is not a value of " + enum_type.to_string());
    }
  }

  std::optional<Type> unify(const Type& a, const Type& b) const {
    if (a.is_numeric() && b.is_numeric()) return numeric_join(a, b);
    if (a.kind() == Type::Kind::enumeration && b.kind() == Type::Kind::string) return a;
    if (b.kind() == Type::Kind::enumeration && a.kind() == Type::Kind::string) return b;
    if (a.kind() == Type::Kind::list && b.kind() == Type::Kind::list) {
      if (a.element() == nullptr) return b;
      if (b.element() == nullptr) return a;
      auto el = unify(*a.element(), *b.element());
      if (!el) return std::nullopt;
      return Type::list(*el);
    }
    if (a == b) return a;
    if (a.kind() == b.kind() && a.kind() == Type::Kind::enumeration) return Type::string();
    return std::nullopt;
  }

  MutExpr binary(ExprOp op, const Token& optok, MutExpr lhs, MutExpr rhs) {
    const SourcePos pos = optok.pos;
    const std::string what = "the operands of `" + optok.text + "`";
    switch (op) {
      case ExprOp::add:
      case ExprOp::sub:
        require_numeric(*lhs, "the left operand of `" + optok.text + "`");
        require_numeric(*rhs, "the right operand of `" + optok.text + "`");
        return node(op, pos, numeric_join(lhs->type, rhs->type), {lhs, rhs});
      case ExprOp::mul: {
        require_numeric(*lhs, "the left operand of `*`");
        require_numeric(*rhs, "the right operand of `*`");
        const int scale = lhs->type.scale() + rhs->type.scale();
        if (scale > max_scale) fail(pos, "the product has more than 18 digits after the point");
        const Type t =
            (lhs->type.kind() == Type::Kind::integer && rhs->type.kind() == Type::Kind::integer)
                ? Type::integer()
                : Type::decimal(scale);
        return node(op, pos, t, {lhs, rhs});
      }
      case ExprOp::lt:
      case ExprOp::le:
      case ExprOp::gt:
      case ExprOp::ge:
        require_numeric(*lhs, "the left operand of `" + optok.text + "`");
        require_numeric(*rhs, "the right operand of `" + optok.text + "`");
        return node(op, pos, Type::boolean(), {lhs, rhs});
      case ExprOp::eq:
      case ExprOp::ne:
        if (!lhs->type.comparable_with(rhs->type)) {
          fail(pos, "cannot compare " + lhs->type.to_string() + " with " + rhs->type.to_string());
        }
        check_enum_literal(lhs->type, *rhs);
        check_enum_literal(rhs->type, *lhs);
        return node(op, pos, Type::boolean(), {lhs, rhs});
      case ExprOp::logical_and:
      case ExprOp::logical_or:
      case ExprOp::implies:
        require_bool(*lhs, "the left operand of `" + optok.text + "`");
        require_bool(*rhs, "the right operand of `" + optok.text + "`");
        return node(op, pos, Type::boolean(), {lhs, rhs});
      default:
        fail(pos, "internal error: not a binary operator: " + what);
    }
  }

  // A suggestion for an unknown name: the closest declared name, or the string literal syntax.
  std::string hint(const std::string& name) const {
    std::vector<std::string> names;
    if (scope_.variables != nullptr) names = scope_.variables->names();
    if (scope_.parameters != nullptr) {
      for (const auto& p : *scope_.parameters) names.push_back(p.name);
    }
    const std::string suggestion = did_you_mean(name, names);
    if (!suggestion.empty()) return suggestion;
    return " (a string literal is written '" + name + "')";
  }

  // ---- grammar ----
  struct DepthGuard {
    Parser& p;
    explicit DepthGuard(Parser& parser) : p(parser) {
      // The whole expression is level 0; each parenthesis, `if`, call, unary operator or `->`
      // around a part is one level.
      if (++p.depth_ > kMaxDepth + 1)
        p.fail(p.tok_.pos, "expression nested more than 200 levels deep");
    }
    ~DepthGuard() { --p.depth_; }
  };

  MutExpr parse_expr() {
    DepthGuard guard(*this);
    if (at("if")) {
      const Token t = tok_;
      advance();
      MutExpr c = parse_expr();
      require_bool(*c, "the condition of `if`");
      expect("then");
      MutExpr a = parse_expr();
      expect("else");
      MutExpr b = parse_expr();
      auto type = unify(a->type, b->type);
      if (!type) {
        fail(t.pos,
             "the branches of `if` have different types: " + a->type.to_string() + " and " +
                 b->type.to_string());
      }
      check_enum_member(*type, *a);
      check_enum_member(*type, *b);
      return node(ExprOp::ite, t.pos, *type, {c, a, b});
    }
    return parse_implies();
  }

  MutExpr parse_implies() {
    MutExpr lhs = parse_or();
    if (at("->")) {
      const Token t = tok_;
      advance();
      DepthGuard guard(*this);
      MutExpr rhs = parse_implies();
      return binary(ExprOp::implies, t, lhs, rhs);
    }
    return lhs;
  }

  MutExpr parse_or() {
    MutExpr lhs = parse_and();
    while (at("||")) {
      const Token t = tok_;
      advance();
      lhs = binary(ExprOp::logical_or, t, lhs, parse_and());
    }
    return lhs;
  }

  MutExpr parse_and() {
    MutExpr lhs = parse_cmp();
    while (at("&&")) {
      const Token t = tok_;
      advance();
      lhs = binary(ExprOp::logical_and, t, lhs, parse_cmp());
    }
    return lhs;
  }

  MutExpr parse_cmp() {
    MutExpr lhs = parse_add();
    static constexpr std::pair<std::string_view, ExprOp> kOps[] = {{"==", ExprOp::eq},
                                                                   {"!=", ExprOp::ne},
                                                                   {"<=", ExprOp::le},
                                                                   {">=", ExprOp::ge},
                                                                   {"<", ExprOp::lt},
                                                                   {">", ExprOp::gt}};
    if (tok_.kind == Tok::punct) {
      for (const auto& [text, op] : kOps) {
        if (tok_.text == text) {
          const Token t = tok_;
          advance();
          MutExpr rhs = parse_add();
          MutExpr result = binary(op, t, lhs, rhs);
          if (tok_.kind == Tok::punct &&
              std::any_of(std::begin(kOps), std::end(kOps), [&](const auto& o) {
                return o.first == tok_.text;
              })) {
            fail(tok_.pos, "comparisons do not chain: use `&&` (a < b && b < c)");
          }
          return result;
        }
      }
    }
    if (at("in")) {
      const Token t = tok_;
      advance();
      expect("{");
      std::vector<ExprPtr> args{lhs};
      do {
        MutExpr item = parse_expr();
        if (!lhs->type.comparable_with(item->type)) {
          fail(item->pos,
               "cannot compare " + lhs->type.to_string() + " with " + item->type.to_string());
        }
        check_enum_literal(lhs->type, *item);
        args.push_back(item);
      } while (at(",") && (advance(), true));
      expect("}");
      return node(ExprOp::in_set, t.pos, Type::boolean(), std::move(args));
    }
    return lhs;
  }

  MutExpr parse_add() {
    MutExpr lhs = parse_mul();
    while (at("+") || at("-")) {
      const Token t = tok_;
      advance();
      lhs = binary(t.text == "+" ? ExprOp::add : ExprOp::sub, t, lhs, parse_mul());
    }
    return lhs;
  }

  MutExpr parse_mul() {
    MutExpr lhs = parse_unary();
    while (at("*")) {
      const Token t = tok_;
      advance();
      lhs = binary(ExprOp::mul, t, lhs, parse_unary());
    }
    return lhs;
  }

  MutExpr parse_unary() {
    if (!at("-") && !at("!")) return parse_primary();
    DepthGuard guard(*this);  // a nesting level only when the operator recurses
    if (at("-")) {
      const Token t = tok_;
      advance();
      MutExpr a = parse_unary();
      require_numeric(*a, "the operand of unary `-`");
      if (a->op == ExprOp::literal) {  // fold, so that `-5` is a literal
        auto v = checked_neg(a->literal.as_number());
        if (!v) fail(t.pos, "number out of range");
        a->literal = Value::number(*v);
        a->pos = t.pos;
        return a;
      }
      return node(ExprOp::neg, t.pos, a->type, {a});
    }
    if (at("!")) {
      const Token t = tok_;
      advance();
      MutExpr a = parse_unary();
      require_bool(*a, "the operand of `!`");
      return node(ExprOp::logical_not, t.pos, Type::boolean(), {a});
    }
    return parse_primary();
  }

  // The identifier of `old(x)` and `defined(x)` must name a state variable.
  MutExpr variable_argument(const std::string& fn, ExprOp op, SourcePos pos) {
    if (tok_.kind != Tok::ident)
      fail(tok_.pos, "`" + fn + "` takes a variable name, found " + describe(tok_));
    const Token name = tok_;
    const auto id = scope_.variables ? scope_.variables->find(name.text) : std::nullopt;
    if (!id) fail(name.pos, "unknown variable `" + name.text + "`");
    advance();
    auto e = node(op, pos, op == ExprOp::defined ? Type::boolean() : (*scope_.variable_types)[*id]);
    e->index = *id;
    e->name = name.text;
    return e;
  }

  std::vector<MutExpr> call_args() {
    std::vector<MutExpr> args;
    expect("(");
    if (!at(")")) {
      do {
        args.push_back(parse_expr());
      } while (at(",") && (advance(), true));
    }
    expect(")");
    return args;
  }

  MutExpr call(const Token& fn) {
    auto arity = [&](const std::vector<MutExpr>& a, std::size_t n) {
      if (a.size() != n) {
        fail(fn.pos,
             "`" + fn.text + "` takes " + std::to_string(n) + " argument" + (n == 1 ? "" : "s") +
                 ", got " + std::to_string(a.size()));
      }
    };
    if (fn.text == "old" || fn.text == "defined") {
      if (fn.text == "old" && !scope_.allow_old)
        fail(fn.pos, "`old(...)` is only allowed in invariants");
      expect("(");
      MutExpr e = variable_argument(
          fn.text, fn.text == "old" ? ExprOp::old_variable : ExprOp::defined, fn.pos);
      expect(")");
      return e;
    }
    std::vector<MutExpr> a = call_args();
    if (fn.text == "len") {
      arity(a, 1);
      if (a[0]->type.kind() != Type::Kind::list)
        fail(a[0]->pos, "`len` takes a list, found " + a[0]->type.to_string());
      return node(ExprOp::len, fn.pos, Type::integer(), {a[0]});
    }
    if (fn.text == "contains") {
      arity(a, 2);
      if (a[0]->type.kind() != Type::Kind::list)
        fail(a[0]->pos, "`contains` takes a list first, found " + a[0]->type.to_string());
      if (a[0]->type.element() && !a[0]->type.element()->comparable_with(a[1]->type)) {
        fail(a[1]->pos,
             "cannot look for " + a[1]->type.to_string() + " in " + a[0]->type.to_string());
      }
      if (a[0]->type.element()) check_enum_literal(*a[0]->type.element(), *a[1]);
      return node(ExprOp::contains, fn.pos, Type::boolean(), {a[0], a[1]});
    }
    if (fn.text == "min" || fn.text == "max") {
      arity(a, 2);
      require_numeric(*a[0], "the arguments of `" + fn.text + "`");
      require_numeric(*a[1], "the arguments of `" + fn.text + "`");
      return node(fn.text == "min" ? ExprOp::min : ExprOp::max,
                  fn.pos,
                  numeric_join(a[0]->type, a[1]->type),
                  {a[0], a[1]});
    }
    if (fn.text == "abs") {
      arity(a, 1);
      require_numeric(*a[0], "the argument of `abs`");
      return node(ExprOp::abs, fn.pos, a[0]->type, {a[0]});
    }
    fail(fn.pos,
         "unknown function `" + fn.text + "` (known: old, defined, len, contains, min, max, abs)");
  }

  MutExpr parse_primary() {
    const Token t = tok_;
    switch (t.kind) {
      case Tok::end:
        fail(t.pos, "unexpected end of expression");
      case Tok::number: {
        std::string err;
        auto d = Decimal::parse(t.text, &err);
        if (!d) fail(t.pos, "number `" + t.text + "`: " + err);
        advance();
        auto e =
            node(ExprOp::literal, t.pos, d->scale == 0 ? Type::integer() : Type::decimal(d->scale));
        e->literal = Value::number(*d);
        return e;
      }
      case Tok::string: {
        advance();
        auto e = node(ExprOp::literal, t.pos, Type::string());
        e->literal = Value::string(t.text);
        return e;
      }
      case Tok::punct:
        if (t.text == "(") {
          advance();
          MutExpr e = parse_expr();
          expect(")");
          return e;
        }
        if (t.text == "[") {
          advance();
          std::vector<ExprPtr> items;
          Type type = Type::empty_list();
          if (!at("]")) {
            do {
              MutExpr item = parse_expr();
              if (item->type.kind() == Type::Kind::list)
                fail(item->pos, "lists of lists are not supported");
              auto joined = unify(type.element() ? *type.element() : item->type, item->type);
              if (!joined)
                fail(item->pos,
                     "list items have different types: " + type.element()->to_string() + " and " +
                         item->type.to_string());
              type = Type::list(*joined);
              items.push_back(item);
              for (const auto& earlier : items) check_enum_member(*type.element(), *earlier);
            } while (at(",") && (advance(), true));
          }
          expect("]");
          return node(ExprOp::list, t.pos, type, std::move(items));
        }
        fail(t.pos, "unexpected " + describe(t));
      case Tok::ident:
        break;
    }
    advance();
    if (t.text == "true" || t.text == "false") {
      auto e = node(ExprOp::literal, t.pos, Type::boolean());
      e->literal = Value::boolean(t.text == "true");
      return e;
    }
    static constexpr std::string_view kReserved[] = {"if", "then", "else", "in"};
    for (auto kw : kReserved) {
      if (t.text == kw) fail(t.pos, "unexpected keyword `" + t.text + "`");
    }
    if (at("(")) return call(t);
    if (scope_.parameters != nullptr) {
      const auto& ps = *scope_.parameters;
      for (std::size_t i = 0; i < ps.size(); ++i) {
        if (ps[i].name == t.text) {
          auto e = node(ExprOp::parameter, t.pos, ps[i].type);
          e->index = static_cast<std::uint32_t>(i);
          e->name = t.text;
          return e;
        }
      }
    }
    if (scope_.variables != nullptr) {
      if (auto id = scope_.variables->find(t.text)) {
        auto e = node(ExprOp::variable, t.pos, (*scope_.variable_types)[*id]);
        e->index = *id;
        e->name = t.text;
        return e;
      }
      fail(t.pos, "unknown variable `" + t.text + "`" + hint(t.text));
    }
    fail(t.pos,
         "unknown parameter `" + t.text +
             "` (this expression may only use the action's parameters)");
  }

  std::string_view text_;
  const ExprScope& scope_;
  const std::string& path_;
  std::size_t i_ = 0;
  std::uint32_t line_ = 1;
  std::uint32_t col_ = 1;
  int depth_ = 0;
  Token tok_;
};

}  // namespace

ExprPtr parse_expression(std::string_view text, const ExprScope& scope, const std::string& path) {
  return Parser(text, scope, path).parse();
}

bool assignable(const Type& target, const Expr& e) {
  if (target.accepts(e.type)) return true;
  if (target.kind() == Type::Kind::enumeration) {
    if (e.op == ExprOp::literal && e.literal.kind() == Value::Kind::string) {
      return target.has_enum_value(e.literal.as_string());
    }
    if (e.op == ExprOp::ite)
      return assignable(target, *e.args[1]) && assignable(target, *e.args[2]);
    return false;
  }
  if (target.kind() == Type::Kind::list && e.op == ExprOp::list && target.element() != nullptr) {
    return std::all_of(e.args.begin(), e.args.end(), [&](const ExprPtr& item) {
      return assignable(*target.element(), *item);
    });
  }
  return false;
}

bool uses_old(const Expr& e) {
  if (e.op == ExprOp::old_variable) return true;
  return std::any_of(e.args.begin(), e.args.end(), [](const ExprPtr& a) { return uses_old(*a); });
}

void collect_variables(const Expr& e, std::vector<bool>& seen) {
  if (e.op == ExprOp::variable || e.op == ExprOp::old_variable || e.op == ExprOp::defined) {
    if (seen.size() <= e.index) seen.resize(e.index + 1, false);
    seen[e.index] = true;
  }
  for (const ExprPtr& a : e.args) collect_variables(*a, seen);
}

}  // namespace clampai::kernel
