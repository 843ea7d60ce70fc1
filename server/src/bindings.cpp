// The spec's `bindings` section (docs/SPEC.md, "Bindings"): read against the model, its
// expressions parsed and evaluated over a tool call's arguments; and the tools' pins.
#include <algorithm>
#include <cctype>

#include "clampai/kernel/digest.hpp"
#include "clampai/kernel/error.hpp"
#include "clampai/kernel/model.hpp"
#include "clampai/kernel/suggest.hpp"
#include "clampai/server/gateway.hpp"

namespace clampai::server {

namespace ck = clampai::kernel;
using ck::jsonio::JsonNode;
using Kind = JsonNode::Kind;

const ToolBinding* Bindings::find(std::string_view tool) const {
  for (const ToolBinding& t : tools) {
    if (t.tool == tool) return &t;
  }
  return nullptr;
}

namespace {

// Reads one expression: NUMBER | ARG | FN(ARG) | under(ARG, 'PREFIX'). Errors at `path:1:C`.
class ExprReader {
 public:
  ExprReader(std::string_view text, const std::string& path) : text_(text), path_(path) {}

  BindingExpr read() {
    BindingExpr e;
    e.text = std::string(text_);
    skip();
    if (i_ < text_.size() && (text_[i_] == '-' || std::isdigit(uc(text_[i_])) != 0)) {
      const std::size_t start = i_;
      ++i_;
      while (i_ < text_.size() && (std::isdigit(uc(text_[i_])) != 0 || text_[i_] == '.')) ++i_;
      std::string error;
      const auto d = ck::Decimal::parse(text_.substr(start, i_ - start), &error);
      if (!d)
        fail(start,
             "malformed number `" + std::string(text_.substr(start, i_ - start)) + "`" +
                 (error.empty() ? "" : ": " + error));
      e.op = BindingExpr::Op::constant;
      e.constant = *d;
    } else {
      const std::size_t at = i_;
      const std::string name = ident();
      skip();
      if (i_ < text_.size() && text_[i_] == '(') {
        ++i_;
        if (name == "utf8_bytes") {
          e.op = BindingExpr::Op::utf8_bytes;
        } else if (name == "count") {
          e.op = BindingExpr::Op::count;
        } else if (name == "under") {
          e.op = BindingExpr::Op::under;
        } else {
          fail(at,
               "unknown function `" + name + "`" +
                   ck::did_you_mean(name, {"utf8_bytes", "count", "under"}) +
                   " (binding expressions have utf8_bytes, count and under)");
        }
        skip();
        e.argument = argument();
        skip();
        if (e.op == BindingExpr::Op::under) {
          expect(',');
          skip();
          const std::size_t p = i_;
          const std::string prefix = string_literal();
          e.prefix = normalise_path(prefix);
          if (e.prefix.empty())
            fail(p, "the prefix of `under` must be an absolute path, not `" + prefix + "`");
          skip();
        }
        expect(')');
      } else {
        i_ = at;
        e.op = BindingExpr::Op::number;
        e.argument = argument();
      }
    }
    skip();
    if (i_ != text_.size())
      fail(i_, "unexpected `" + std::string(text_.substr(i_, 1)) + "` after the expression");
    return e;
  }

 private:
  static unsigned char uc(char c) { return static_cast<unsigned char>(c); }
  void skip() {
    while (i_ < text_.size() && (text_[i_] == ' ' || text_[i_] == '\t')) ++i_;
  }
  [[noreturn]] void fail(std::size_t at, const std::string& message) const {
    throw SpecError(path_ + ":1:" + std::to_string(at + 1), message);
  }
  void expect(char c) {
    if (i_ >= text_.size())
      fail(i_, std::string("expected `") + c + "`, found the end of the expression");
    if (text_[i_] != c) fail(i_, std::string("expected `") + c + "`, found `" + text_[i_] + "`");
    ++i_;
  }
  std::string ident() {
    const std::size_t start = i_;
    if (i_ >= text_.size())
      fail(i_, "expected an argument name, a function or a number, found the end");
    if (std::isalpha(uc(text_[i_])) == 0 && text_[i_] != '_')
      fail(i_,
           "expected an argument name, a function or a number, found `" +
               std::string(text_.substr(i_, 1)) + "`");
    while (i_ < text_.size() && (std::isalnum(uc(text_[i_])) != 0 || text_[i_] == '_')) ++i_;
    return std::string(text_.substr(start, i_ - start));
  }
  std::vector<std::string> argument() {
    std::vector<std::string> path{ident()};
    while (i_ < text_.size() && text_[i_] == '.') {
      ++i_;
      path.push_back(ident());
    }
    return path;
  }
  std::string string_literal() {
    if (i_ >= text_.size() || text_[i_] != '\'')
      fail(i_, "expected a string literal in single quotes: '/srv/data'");
    const std::size_t start = i_;
    std::string s;
    for (++i_;; ++i_) {
      if (i_ >= text_.size()) fail(start, "unterminated string literal");
      if (text_[i_] == '\'') break;
      if (text_[i_] == '\\') {
        if (i_ + 1 >= text_.size()) fail(start, "unterminated string literal");
        const char d = text_[++i_];
        if (d != '\'' && d != '\\')
          fail(i_ - 1, "unknown escape `\\" + std::string(1, d) + "` (use \\' or \\\\)");
      }
      s += text_[i_];
    }
    ++i_;
    return s;
  }

  std::string_view text_;
  const std::string& path_;
  std::size_t i_ = 0;
};

std::string arg_name(const std::vector<std::string>& path) {
  std::string s;
  for (const std::string& p : path) s += (s.empty() ? "" : ".") + p;
  return s;
}

// The problem of `e` with the position of `node` in the file (and inside a one-line string
// without escapes, the expression's column added).
[[noreturn]] void rethrow_at(const SpecError& e, const JsonNode& node) {
  std::vector<SpecProblem> problems = e.problems();
  for (SpecProblem& p : problems) {
    p.line = node.line;
    p.column = node.column;
    const auto colon = p.path.find(":1:");
    if (colon != std::string::npos && node.text.find('\\') == std::string::npos)
      p.column += static_cast<std::uint32_t>(std::strtoul(p.path.c_str() + colon + 3, nullptr, 10));
  }
  throw SpecError(std::move(problems));
}

[[noreturn]] void fail_at(const JsonNode& node,
                          const std::string& path,
                          const std::string& message) {
  SpecProblem p;
  p.path = path;
  p.message = message;
  p.line = node.line;
  p.column = node.column;
  throw SpecError(std::vector<SpecProblem>{p});
}

}  // namespace

std::string normalise_path(std::string_view path) {
  if (path.empty() || path[0] != '/' || path.find('\0') != std::string_view::npos) return "";
  std::vector<std::string_view> parts;
  std::size_t i = 0;
  while (i < path.size()) {
    while (i < path.size() && path[i] == '/') ++i;
    const std::size_t start = i;
    while (i < path.size() && path[i] != '/') ++i;
    const std::string_view part = path.substr(start, i - start);
    if (part.empty() || part == ".") continue;
    if (part == "..") {
      if (!parts.empty()) parts.pop_back();
      continue;
    }
    parts.push_back(part);
  }
  std::string out;
  for (const std::string_view p : parts) {
    out += '/';
    out += p;
  }
  return out.empty() ? "/" : out;
}

bool path_under(std::string_view path, std::string_view prefix) {
  const std::string p = normalise_path(path);
  if (p.empty()) return false;
  if (prefix == "/") return true;
  return p == prefix ||
         (p.size() > prefix.size() && p.starts_with(prefix) && p[prefix.size()] == '/');
}

BindingExpr parse_binding_expr(std::string_view text, const std::string& path) {
  return ExprReader(text, path).read();
}

bool is_client_request(std::string_view method) {
  return method == "roots/list" || method == "sampling/createMessage" ||
         method == "elicitation/create";
}

bool Bindings::allows(std::string_view method) const {
  return std::find(allow.begin(), allow.end(), method) != allow.end();
}

ck::Value evaluate_binding(const BindingExpr& e, const JsonNode* arguments) {
  if (e.op == BindingExpr::Op::constant) return ck::Value::number(e.constant);
  const JsonNode* n = arguments;
  for (const std::string& key : e.argument) {
    n = n != nullptr && n->kind == Kind::object ? n->find(key) : nullptr;
  }
  const std::string name = arg_name(e.argument);
  if (n == nullptr)
    throw InvalidArgument("argument `" + name + "` is missing (binding `" + e.text + "`)");
  const auto wrong = [&](const char* want) {
    throw InvalidArgument("argument `" + name + "` must be " + want + ", not " +
                          ck::jsonio::describe(*n) + " (binding `" + e.text + "`)");
  };
  switch (e.op) {
    case BindingExpr::Op::number: {
      if (n->kind != Kind::number) wrong("a number");
      std::string error;
      const auto d = ck::Decimal::parse(n->text, &error);
      if (!d) throw InvalidArgument("argument `" + name + "`: " + error);
      return ck::Value::number(*d);
    }
    case BindingExpr::Op::utf8_bytes:
      if (n->kind != Kind::string) wrong("a string");
      return ck::Value::integer(static_cast<std::int64_t>(n->text.size()));
    case BindingExpr::Op::count:
      if (n->kind != Kind::array && n->kind != Kind::object) wrong("an array");
      return ck::Value::integer(
          static_cast<std::int64_t>(n->kind == Kind::array ? n->items.size() : n->members.size()));
    case BindingExpr::Op::under:
      if (n->kind != Kind::string) wrong("a string");
      return ck::Value::integer(path_under(n->text, e.prefix) ? 1 : 0);
    case BindingExpr::Op::constant:
      break;
  }
  return ck::Value::number(e.constant);
}

JsonNode pinned_fields(const JsonNode& tool) {
  JsonNode picked = JsonNode::make_object();
  for (const char* key :
       {"name", "title", "description", "inputSchema", "outputSchema", "annotations"}) {
    if (const JsonNode* v = tool.find(key)) picked.add(key, *v);
  }
  return picked;
}

std::string tool_pin(const JsonNode& tool) {
  std::string canonical;
  if (!ck::jsonio::append_canonical(canonical, pinned_fields(tool)))
    throw InvalidArgument(
        "the tool has no RFC 8785 form here (a number that is not an integer): it cannot be "
        "pinned");
  return ck::sha256_hex(canonical);
}

Bindings load_bindings(std::string_view spec_text, const ck::TaskModel& model) {
  const JsonNode root = ck::jsonio::parse_json(spec_text, "spec");
  Bindings out;
  const JsonNode* section = root.kind == Kind::object ? root.find("bindings") : nullptr;
  if (section == nullptr) return out;
  using ck::jsonio::join;
  if (section->kind != Kind::object)
    fail_at(*section, "bindings", "must be an object, not " + ck::jsonio::describe(*section));
  for (const auto& [key, v] : section->members) {
    if (key != "tools" && key != "allow")
      fail_at(v,
              join("bindings", key),
              "unknown key" + ck::did_you_mean(key, {"tools", "allow"}) +
                  " (bindings has `tools` and `allow`)");
  }
  if (const JsonNode* allow = section->find("allow")) {
    if (allow->kind != Kind::array)
      fail_at(*allow, "bindings.allow", "must be an array of method names");
    for (std::size_t i = 0; i < allow->items.size(); ++i) {
      const JsonNode& m = allow->items[i];
      const std::string p = ck::jsonio::at_index("bindings.allow", i);
      if (m.kind != Kind::string) fail_at(m, p, "must be a method name (a string)");
      if (!(m.text.starts_with("resources/") || m.text.starts_with("prompts/") ||
            m.text == "completion/complete" || m.text == "logging/setLevel" ||
            is_client_request(m.text)))
        fail_at(m,
                p,
                "`" + m.text +
                    "` cannot be allowed: only resources/*, prompts/*, completion/complete and "
                    "logging/setLevel pass through unchanged (tools are bound in `tools`), and "
                    "roots/list, sampling/createMessage and elicitation/create from the upstream "
                    "to the client");
      out.allow.push_back(m.text);
    }
  }
  const JsonNode* tools = section->find("tools");
  if (tools == nullptr) return out;
  if (tools->kind != Kind::object)
    fail_at(*tools, "bindings.tools", "must be an object from tool name to binding");
  std::vector<std::string> action_ids;
  for (const ck::Action& a : model.actions) action_ids.push_back(a.id);
  for (const auto& [tool, b] : tools->members) {
    const std::string path = join("bindings.tools", tool);
    if (b.kind != Kind::object)
      fail_at(b, path, "must be an object with `action`, `pin`, `params`");
    for (const auto& [k, v] : b.members) {
      if (k != "action" && k != "pin" && k != "params")
        fail_at(v,
                join(path, k),
                "unknown key" + ck::did_you_mean(k, {"action", "pin", "params"}) +
                    " (a binding has `action`, `pin` and `params`)");
    }
    ToolBinding t;
    t.tool = tool;
    const JsonNode* action = b.find("action");
    if (action == nullptr || action->kind != Kind::string)
      fail_at(action ? *action : b,
              join(path, "action"),
              "must be the id of one of the spec's actions");
    const auto index = model.find_action(action->text);
    if (!index)
      fail_at(*action,
              join(path, "action"),
              "no action `" + action->text + "`" + ck::did_you_mean(action->text, action_ids));
    t.action = *index;
    const JsonNode* pin = b.find("pin");
    const auto hex = [](const std::string& s) {
      return s.size() == 64 && std::all_of(s.begin(), s.end(), [](char c) {
               return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
             });
    };
    if (pin == nullptr || pin->kind != Kind::string || !hex(pin->text))
      fail_at(pin ? *pin : b,
              join(path, "pin"),
              "must be the tool's pin: 64 lowercase hex digits (`clampai gateway "
              "--print-bindings -- COMMAND` prints them)");
    t.pin = pin->text;
    const ck::Action& a = model.actions[t.action];
    const JsonNode* params = b.find("params");
    if (params != nullptr && params->kind != Kind::object)
      fail_at(*params, join(path, "params"), "must be an object from parameter name to expression");
    std::vector<std::string> names;
    for (const ck::Parameter& p : a.parameters) names.push_back(p.name);
    if (params != nullptr) {
      for (const auto& [name, expr] : params->members) {
        const std::string p = join(join(path, "params"), name);
        const auto it = std::find(names.begin(), names.end(), name);
        if (it == names.end())
          fail_at(expr,
                  p,
                  "action `" + a.id + "` has no parameter `" + name + "`" +
                      ck::did_you_mean(name, names));
        if (expr.kind == Kind::number) {
          t.params.emplace_back(it - names.begin(), parse_binding_expr(expr.text, p));
          continue;
        }
        if (expr.kind != Kind::string)
          fail_at(expr, p, "must be a binding expression (a string) or a number");
        try {
          t.params.emplace_back(it - names.begin(), parse_binding_expr(expr.text, p));
        } catch (const SpecError& e) {
          rethrow_at(e, expr);
        }
      }
    }
    for (std::size_t i = 0; i < a.parameters.size(); ++i) {
      const bool bound = std::any_of(
          t.params.begin(), t.params.end(), [i](const auto& q) { return q.first == i; });
      if (!bound && !a.parameters[i].default_value)
        fail_at(params ? *params : b,
                join(path, "params"),
                "parameter `" + a.parameters[i].name + "` of action `" + a.id +
                    "` has no default: bind it to an expression");
    }
    out.tools.push_back(std::move(t));
  }
  return out;
}

}  // namespace clampai::server
