// Task spec JSON -> TaskDecl: structure only; build_model checks meaning.
#include "clampai/kernel/spec_loader.hpp"

#include <cctype>
#include <cstdlib>
#include <initializer_list>
#include <limits>
#include <map>

#include "clampai/kernel/error.hpp"
#include "clampai/kernel/file.hpp"
#include "clampai/kernel/pools.hpp"
#include "clampai/kernel/suggest.hpp"
#include "json.hpp"
#include "spec_security.hpp"

namespace clampai::kernel {
namespace {

using detail::JsonNode;
using Kind = JsonNode::Kind;
using detail::allow_keys;
using detail::at_index;
using detail::expect_kind;
using detail::get_bool;
using detail::get_count;
using detail::get_decimal;
using detail::get_string;
using detail::join;
using detail::required;

SourceLoc loc(const JsonNode& n) { return SourceLoc{n.line, n.column}; }

std::optional<Decimal> opt_decimal(const JsonNode& obj, const std::string& path, const char* key) {
  const JsonNode* n = obj.find(key);
  if (n == nullptr) return std::nullopt;
  return get_decimal(*n, join(path, key));
}

Type parse_type(const JsonNode& n, const std::string& path, bool allow_list) {
  std::string name;
  const JsonNode* obj = nullptr;
  if (n.kind == Kind::string) {
    name = n.text;
  } else if (n.kind == Kind::object) {
    obj = &n;
    name = get_string(n, path, "type");
    if (name.empty()) throw SpecError(path, "missing `type`");
  } else {
    throw SpecError(path, "expected a type name or an object, found " + detail::describe(n));
  }
  const std::string tpath = n.kind == Kind::string ? path : join(path, "type");
  auto int_field = [&](const char* key, std::int64_t fallback) -> std::int64_t {
    const JsonNode* f = obj ? obj->find(key) : nullptr;
    return f ? get_count(*f, join(path, key)) : fallback;
  };
  try {
    if (name == "bool") return Type::boolean();
    if (name == "int") return Type::integer();
    if (name == "string") return Type::string();
    if (name == "decimal") {
      const std::int64_t scale = int_field("scale", -1);
      if (scale < 0)
        throw SpecError(join(path, "scale"), "a decimal needs a `scale` (digits after the point)");
      if (scale > max_scale)
        throw SpecError(join(path, "scale"), "must be at most 18, got " + std::to_string(scale));
      return Type::decimal(static_cast<int>(scale));
    }
    if (name == "enum") {
      const JsonNode* vs = obj ? obj->find("values") : nullptr;
      if (vs == nullptr) throw SpecError(path, "an enum needs `values`");
      expect_kind(*vs, Kind::array, join(path, "values"));
      std::vector<std::string> values;
      for (std::size_t i = 0; i < vs->items.size(); ++i) {
        expect_kind(vs->items[i], Kind::string, at_index(join(path, "values"), i));
        values.push_back(vs->items[i].text);
      }
      try {
        return Type::enumeration(std::move(values));
      } catch (const InvalidArgument& e) {
        throw SpecError(join(path, "values"), e.what());
      }
    }
    if (name == "list") {
      if (!allow_list) throw SpecError(tpath, "lists of lists are not supported");
      const JsonNode* el = obj ? obj->find("element") : nullptr;
      if (el == nullptr) throw SpecError(path, "a list needs an `element` type");
      return Type::list(parse_type(*el, join(path, "element"), false));
    }
  } catch (const InvalidArgument& e) {
    throw SpecError(path, e.what());
  }
  // The names other languages and JSON Schema give these types.
  static const std::vector<Alias> aliases{{"integer", "int"},
                                          {"long", "int"},
                                          {"boolean", "bool"},
                                          {"str", "string"},
                                          {"text", "string"},
                                          {"number", "decimal"},
                                          {"float", "decimal"},
                                          {"double", "decimal"},
                                          {"array", "list"},
                                          {"enumeration", "enum"}};
  throw SpecError(
      tpath,
      "unknown type `" + name + "`" +
          did_you_mean(name, {"bool", "int", "decimal", "string", "enum", "list"}, aliases) +
          " (expected bool, int, decimal, string, enum or list)");
}

// Renders a JSON literal given where an expression is expected as expression source.
std::string literal_source(const JsonNode& n, const std::string& path) {
  switch (n.kind) {
    case Kind::string:
      return n.text;  // an expression
    case Kind::number:
      // Exponent forms (1e3) become plain decimals the expression language reads.
      return get_decimal(n, path).to_string();
    case Kind::boolean:
      return n.boolean ? "true" : "false";
    case Kind::array: {
      std::string s = "[";
      for (std::size_t i = 0; i < n.items.size(); ++i) {
        const JsonNode& item = n.items[i];
        if (i > 0) s += ", ";
        if (item.kind == Kind::string) {
          s += "'";
          for (char c : item.text) {
            if (c == '\'' || c == '\\') s += '\\';
            s += c;
          }
          s += "'";
        } else if (item.kind == Kind::number || item.kind == Kind::boolean) {
          s += literal_source(item, at_index(path, i));
        } else {
          throw SpecError(
              at_index(path, i),
              "list items must be strings, numbers or bools, found " + detail::describe(item));
        }
      }
      return s + "]";
    }
    default:
      throw SpecError(path,
                      "expected an expression (a string), a number, a bool or a list, found " +
                          detail::describe(n));
  }
}

Value literal_value(const JsonNode& n, const Type& type, const std::string& path) {
  Value v;
  std::string err;
  if (!detail::value_from_json(n, type, v, err)) throw SpecError(path, err);
  return v;
}

VariableDecl parse_variable(const std::string& name, const JsonNode& n, const std::string& path) {
  expect_kind(n, Kind::object, path);
  allow_keys(n,
             path,
             {"type",
              "scale",
              "values",
              "element",
              "initial",
              "min",
              "max",
              "max_length",
              "optional",
              "description",
              "label",
              "element_label"});
  VariableDecl v;
  v.name = name;
  v.loc = loc(n);
  v.type = parse_type(n, path, true);
  v.optional = get_bool(n, path, "optional", false);
  if (const JsonNode* init = n.find("initial")) {
    v.initial = literal_value(*init, v.type, join(path, "initial"));
  } else if (!v.optional) {
    throw SpecError(path, "missing `initial`");
  }
  v.min = opt_decimal(n, path, "min");
  v.max = opt_decimal(n, path, "max");
  if (const JsonNode* ml = n.find("max_length"))
    v.max_length = get_count(*ml, join(path, "max_length"));
  v.label = detail::get_label(n, path, "label");
  v.element_label = detail::get_label(n, path, "element_label");
  return v;
}

ParameterDecl parse_parameter(const std::string& name, const JsonNode& n, const std::string& path) {
  expect_kind(n, Kind::object, path);
  allow_keys(n, path, {"type", "scale", "min", "max", "default", "description"});
  ParameterDecl p;
  p.name = name;
  p.type = parse_type(n, path, false);
  p.min = opt_decimal(n, path, "min");
  p.max = opt_decimal(n, path, "max");
  p.default_value = opt_decimal(n, path, "default");
  return p;
}

ActionDecl parse_action(const JsonNode& n, const std::string& path) {
  expect_kind(n, Kind::object, path);
  allow_keys(n,
             path,
             {"id",
              "name",
              "description",
              "cost",
              "reversible",
              "parameters",
              "requires",
              "effects",
              "emits",
              "attestations",
              "approval"});
  ActionDecl a;
  a.loc = loc(n);
  const JsonNode& id = required(n, path, "id");
  expect_kind(id, Kind::string, join(path, "id"));
  a.id = id.text;
  a.name = get_string(n, path, "name");
  a.description = get_string(n, path, "description");
  const JsonNode& cost = required(n, path, "cost");
  if (cost.kind == Kind::number) {
    get_decimal(cost, join(path, "cost"));
    a.cost = cost.text;
  } else if (cost.kind == Kind::string) {
    a.cost = cost.text;
  } else {
    throw SpecError(join(path, "cost"),
                    "expected a number or an expression, found " + detail::describe(cost));
  }
  a.reversible = get_bool(n, path, "reversible", true);
  if (const JsonNode* ps = n.find("parameters")) {
    const std::string ppath = join(path, "parameters");
    expect_kind(*ps, Kind::object, ppath);
    for (const auto& [name, p] : ps->members)
      a.parameters.push_back(parse_parameter(name, p, join(ppath, name)));
  }
  a.guard = get_string(n, path, "requires");
  if (n.find("requires") != nullptr && a.guard.empty())
    throw SpecError(join(path, "requires"), "empty expression");
  if (const JsonNode* es = n.find("effects")) {
    const std::string epath = join(path, "effects");
    expect_kind(*es, Kind::array, epath);
    for (std::size_t i = 0; i < es->items.size(); ++i) {
      const JsonNode& e = es->items[i];
      const std::string p = at_index(epath, i);
      expect_kind(e, Kind::object, p);
      allow_keys(e, p, {"variable", "mode", "value"});
      EffectDecl eff;
      const JsonNode& var = required(e, p, "variable");
      expect_kind(var, Kind::string, join(p, "variable"));
      eff.variable = var.text;
      const JsonNode& mode = required(e, p, "mode");
      expect_kind(mode, Kind::string, join(p, "mode"));
      const auto m = parse_effect_mode(mode.text);
      if (!m)
        throw SpecError(
            join(p, "mode"),
            "unknown mode `" + mode.text +
                "` (expected set, increment, decrement, multiply, append, remove or delete)");
      eff.mode = *m;
      if (const JsonNode* v = e.find("value")) {
        eff.value = literal_source(*v, join(p, "value"));
        if (eff.value.empty()) throw SpecError(join(p, "value"), "empty expression");
      }
      a.effects.push_back(std::move(eff));
    }
  }
  if (const JsonNode* em = n.find("emits")) a.emits = detail::parse_emits(*em, join(path, "emits"));
  if (const JsonNode* at = n.find("attestations"))
    a.attestations = detail::parse_attestation_names(*at, join(path, "attestations"));
  if (const JsonNode* ap = n.find("approval")) {
    const std::string apath = join(path, "approval");
    expect_kind(*ap, Kind::object, apath);
    allow_keys(*ap, apath, {"right", "ttl_s"});
    Approval approval;
    approval.right = get_string(*ap, apath, "right", "approve");
    if (approval.right.empty()) throw SpecError(join(apath, "right"), "empty right");
    if (const JsonNode* ttl = ap->find("ttl_s")) {
      approval.ttl_s = get_count(*ttl, join(apath, "ttl_s"));
      // At most a year: an approval is a person's answer, and the deadline stays exact in
      // microseconds since the epoch.
      if (approval.ttl_s < 1 || approval.ttl_s > 31'536'000)
        throw SpecError(join(apath, "ttl_s"),
                        "must be between 1 and 31536000 seconds (a year), got " + ttl->text);
    }
    a.approval = std::move(approval);
  }
  return a;
}

InvariantDecl parse_invariant(const JsonNode& n, const std::string& path) {
  expect_kind(n, Kind::object, path);
  const bool from_template = n.find("template") != nullptr;
  if (from_template) {
    if (n.find("check") != nullptr)
      throw SpecError(join(path, "check"), "an invariant has a `check` or a `template`, not both");
  } else {
    allow_keys(
        n, path, {"name", "check", "enforcement", "description", "suggestion", "barrier_rate"});
  }
  InvariantDecl inv;
  inv.loc = loc(n);
  const JsonNode& name = required(n, path, "name");
  expect_kind(name, Kind::string, join(path, "name"));
  inv.name = name.text;
  if (from_template) {
    detail::parse_invariant_template(n, path, inv);
  } else {
    const JsonNode& check = required(n, path, "check");
    expect_kind(check, Kind::string, join(path, "check"));
    if (check.text.empty()) throw SpecError(join(path, "check"), "empty expression");
    inv.expression = check.text;
  }
  const std::string enforcement = get_string(n, path, "enforcement", "blocking");
  if (enforcement == "blocking") {
    inv.enforcement = Enforcement::blocking;
  } else if (enforcement == "monitoring") {
    inv.enforcement = Enforcement::monitoring;
  } else {
    throw SpecError(join(path, "enforcement"),
                    "unknown enforcement `" + enforcement + "` (expected blocking or monitoring)");
  }
  inv.description = get_string(n, path, "description");
  inv.suggestion = get_string(n, path, "suggestion");
  if (const JsonNode* rate = n.find("barrier_rate")) {
    const std::string rp = join(path, "barrier_rate");
    if (rate->kind != Kind::number)
      throw SpecError(rp, "expected a number in (0, 1], got " + detail::describe(*rate));
    inv.barrier_rate = get_decimal(*rate, rp);
    if (inv.barrier_rate->units <= 0 || *inv.barrier_rate > Decimal{1, 0})
      throw SpecError(rp, "a barrier rate is in (0, 1], got " + inv.barrier_rate->to_string());
  }
  return inv;
}

std::vector<std::string> name_list(const JsonNode& n, const std::string& path) {
  expect_kind(n, Kind::array, path);
  std::vector<std::string> out;
  for (std::size_t i = 0; i < n.items.size(); ++i) {
    expect_kind(n.items[i], Kind::string, at_index(path, i));
    out.push_back(n.items[i].text);
  }
  return out;
}

InterfaceDecl parse_interface(const JsonNode& n) {
  const std::string path = "interface";
  expect_kind(n, Kind::object, path);
  allow_keys(n, path, {"description", "assumes", "guarantees", "reads", "writes", "forbidden"});
  InterfaceDecl d;
  d.loc = loc(n);
  (void)get_string(n, path, "description");  // documentation only, but it must be text
  for (const char* key : {"assumes", "guarantees"}) {
    const JsonNode* e = n.find(key);
    if (e == nullptr) continue;
    expect_kind(*e, Kind::string, join(path, key));
    if (e->text.empty()) throw SpecError(join(path, key), "empty expression");
    (key[0] == 'a' ? d.assumes : d.guarantees) = e->text;
  }
  if (const JsonNode* r = n.find("reads")) d.reads = name_list(*r, join(path, "reads"));
  if (const JsonNode* w = n.find("writes")) d.writes = name_list(*w, join(path, "writes"));
  if (const JsonNode* f = n.find("forbidden")) d.forbidden = name_list(*f, join(path, "forbidden"));
  return d;
}

}  // namespace

namespace {

JsonNode parse_spec_json(std::string_view json_text) {
  return detail::parse_json(
      json_text, "spec", detail::JsonLimits{max_input_bytes(), 64, 64 * 1024});
}

constexpr std::size_t kMaxProblems = 20;

// Problems found so far: independent parts of a spec (each variable, action, invariant...) are
// read even after one of them failed, so that one run reports them all (up to a limit).
class Problems {
 public:
  template <typename F>
  void attempt(F&& read_part) {
    if (list_.size() >= kMaxProblems) return;
    try {
      read_part();
    } catch (const SpecError& e) {
      for (const SpecProblem& p : e.problems()) {
        if (list_.size() < kMaxProblems) list_.push_back(p);
      }
    }
  }
  void throw_if_any() const {
    if (!list_.empty()) throw SpecError(list_);
  }

 private:
  std::vector<SpecProblem> list_;
};

// The node a JSON path (`actions[2].effects[0].value`, perhaps with an expression position
// `:1:5` after it) leads to in `root`: the deepest one that exists.
// A problem with no path (a missing top-level key) is the top-level object's.
void locate(SpecProblem& p, const JsonNode& root) {
  if (p.line != 0 ||
      (!p.path.empty() && std::isdigit(static_cast<unsigned char>(p.path.front())) != 0))
    return;  // located already, or a `line:column` already
  const std::size_t colon = p.path.find(':');
  const std::string_view path = std::string_view(p.path).substr(0, colon);
  const JsonNode* node = &root;
  std::size_t i = 0;
  while (i < path.size() && node != nullptr) {
    const JsonNode* next = nullptr;
    if (path[i] == '.') {
      ++i;
      continue;
    }
    if (path[i] == '[') {
      const std::size_t close = path.find(']', i);
      if (close == std::string_view::npos) break;
      std::size_t index = 0;
      for (std::size_t k = i + 1; k < close; ++k)
        index = index * 10 + static_cast<std::size_t>(path[k] - '0');
      if (node->kind == Kind::array && index < node->items.size()) next = &node->items[index];
      i = close + 1;
    } else {
      const std::size_t end = path.find_first_of(".[", i);
      const std::string_view key = path.substr(i, end == std::string_view::npos ? end : end - i);
      if (node->kind == Kind::object) next = node->find(key);
      i = end == std::string_view::npos ? path.size() : end;
    }
    if (next == nullptr) break;
    node = next;
  }
  p.line = node->line;
  p.column = node->column;
  // An expression's position `:1:C` inside a one-line string: C characters after the quote.
  if (colon != std::string::npos && node->kind == Kind::string &&
      p.path.compare(colon, 3, ":1:") == 0 && node->text.find('\\') == std::string::npos) {
    p.column += static_cast<std::uint32_t>(std::strtoul(p.path.c_str() + colon + 3, nullptr, 10));
  }
}

[[noreturn]] void rethrow_located(const SpecError& e, const JsonNode& root) {
  std::vector<SpecProblem> problems = e.problems();
  for (SpecProblem& p : problems) locate(p, root);
  throw SpecError(std::move(problems));
}

TaskDecl parse_spec_tree(const JsonNode& root) {
  expect_kind(root, Kind::object, "");
  TaskDecl t;
  Problems problems;
  problems.attempt([&] {
    allow_keys(root,
               "",
               {"$schema",
                "name",
                "description",
                "goal",
                "variables",
                "actions",
                "invariants",
                "budget",
                "emergency_actions",
                "dependencies",
                "interface",
                "capture_basins",
                "sinks",
                "attestors",
                "probes",
                "readiness",
                "bindings"});  // read by `clampai gateway` (server/src/bindings.cpp)
  });
  problems.attempt([&] { t.name = get_string(root, "", "name"); });
  problems.attempt([&] {
    const JsonNode* g = root.find("goal");
    if (g == nullptr) return;
    if (g->kind == Kind::string) {
      t.goal = g->text;
    } else {
      expect_kind(*g, Kind::object, "goal");
      allow_keys(*g, "goal", {"description", "check", "attestations"});
      t.goal_description = get_string(*g, "goal", "description");
      if (const JsonNode* at = g->find("attestations"))
        t.goal_attestations = detail::parse_attestation_names(*at, "goal.attestations");
      t.goal = get_string(*g, "goal", "check");
      t.goal_path = "goal.check";
    }
    if (t.goal.empty()) throw SpecError("goal", "empty expression");
  });
  problems.attempt([&] {
    const JsonNode& vars = required(root, "", "variables");
    expect_kind(vars, Kind::object, "variables");
    for (const auto& member : vars.members) {
      problems.attempt([&] {
        const auto& [name, v] = member;
        t.variables.push_back(parse_variable(name, v, join("variables", name)));
      });
    }
  });
  problems.attempt([&] {
    const JsonNode& acts = required(root, "", "actions");
    expect_kind(acts, Kind::array, "actions");
    for (std::size_t i = 0; i < acts.items.size(); ++i) {
      problems.attempt(
          [&] { t.actions.push_back(parse_action(acts.items[i], at_index("actions", i))); });
    }
  });
  problems.attempt([&] {
    const JsonNode* invs = root.find("invariants");
    if (invs == nullptr) return;
    expect_kind(*invs, Kind::array, "invariants");
    for (std::size_t i = 0; i < invs->items.size(); ++i) {
      problems.attempt([&] {
        t.invariants.push_back(parse_invariant(invs->items[i], at_index("invariants", i)));
      });
    }
  });
  problems.attempt([&] {
    const JsonNode& budget = required(root, "", "budget");
    expect_kind(budget, Kind::object, "budget");
    allow_keys(budget, "budget", {"total", "min_action_cost", "scale", "max_steps", "pool"});
    t.budget.total = get_decimal(required(budget, "budget", "total"), "budget.total");
    t.budget.min_action_cost =
        get_decimal(required(budget, "budget", "min_action_cost"), "budget.min_action_cost");
    if (const JsonNode* s = budget.find("scale")) {
      const std::int64_t scale = get_count(*s, "budget.scale");
      if (scale > 9)
        throw SpecError("budget.scale", "must be between 0 and 9, got " + std::to_string(scale));
      t.budget.scale = static_cast<int>(scale);
    }
    if (const JsonNode* m = budget.find("max_steps"))
      t.budget.max_steps = get_count(*m, "budget.max_steps");
    if (budget.find("pool") != nullptr) {
      t.budget.pool = get_string(budget, "budget", "pool");
      if (t.budget.pool.empty()) throw SpecError("budget.pool", "empty pool name");
    }
  });
  problems.attempt([&] {
    if (const JsonNode* em = root.find("emergency_actions"))
      t.emergency_actions = name_list(*em, "emergency_actions");
  });
  problems.attempt([&] {
    const JsonNode* deps = root.find("dependencies");
    if (deps == nullptr) return;
    expect_kind(*deps, Kind::object, "dependencies");
    for (const auto& [action, list] : deps->members) {
      const std::string p = join("dependencies", action);
      t.dependencies.emplace_back(action, name_list(list, p));
    }
  });
  problems.attempt([&] {
    if (const JsonNode* itf = root.find("interface")) t.interface = parse_interface(*itf);
  });
  problems.attempt([&] {
    const JsonNode* bs = root.find("capture_basins");
    if (bs == nullptr) return;
    expect_kind(*bs, Kind::array, "capture_basins");
    for (std::size_t i = 0; i < bs->items.size(); ++i) {
      const JsonNode& b = bs->items[i];
      const std::string p = at_index("capture_basins", i);
      expect_kind(b, Kind::object, p);
      allow_keys(b, p, {"name", "check", "description"});
      BasinDecl d;
      d.loc = loc(b);
      d.name = get_string(b, p, "name");
      d.description = get_string(b, p, "description");
      const JsonNode& check = required(b, p, "check");
      expect_kind(check, Kind::string, join(p, "check"));
      d.expression = check.text;
      if (d.expression.empty()) throw SpecError(join(p, "check"), "empty expression");
      t.basins.push_back(std::move(d));
    }
  });
  problems.attempt([&] {
    if (const JsonNode* s = root.find("sinks")) t.sinks = detail::parse_sinks(*s);
  });
  problems.attempt([&] {
    if (const JsonNode* a = root.find("attestors")) t.attestors = detail::parse_attestors(*a);
  });
  problems.attempt([&] {
    if (const JsonNode* p = root.find("probes")) t.probes = detail::parse_probes(*p);
  });
  problems.attempt([&] {
    if (const JsonNode* r = root.find("readiness")) t.readiness = detail::parse_readiness(*r);
  });
  problems.throw_if_any();
  return t;
}

}  // namespace

TaskDecl parse_spec(std::string_view json_text) {
  const JsonNode root = parse_spec_json(json_text);
  try {
    return parse_spec_tree(root);
  } catch (const SpecError& e) {
    rethrow_located(e, root);
  }
}

std::shared_ptr<const TaskModel> load_spec(std::string_view json_text) {
  const JsonNode root = parse_spec_json(json_text);
  try {
    return build_model(parse_spec_tree(root));
  } catch (const SpecError& e) {
    rethrow_located(e, root);
  }
}

std::string read_text_file(const std::string& path) { return read_file(path); }

std::shared_ptr<const TaskModel> load_spec_file(const std::string& path) {
  return load_spec(read_text_file(path));
}

std::vector<std::pair<std::string, Value>> parse_named_numbers(std::string_view json_text,
                                                               const std::string& what) {
  JsonNode root;
  try {
    root = detail::parse_json(json_text, what);
  } catch (const SpecError& e) {
    // Located by `line:column` (malformed JSON) or by a JSON path (a duplicate key).
    const std::string& where = e.path();
    const std::string message = std::string(e.what()).substr(where.empty() ? 0 : where.size() + 2);
    if (where.empty()) throw SpecError(what, message);
    if (std::isdigit(static_cast<unsigned char>(where.front())) != 0)
      throw SpecError(what, message + " (at " + where + ")");
    throw SpecError(what + "." + where, message);
  }
  if (root.kind != Kind::object)
    throw SpecError(what,
                    "expected a JSON object of named numbers, found " + detail::describe(root));
  std::vector<std::pair<std::string, Value>> out;
  for (const auto& [name, node] : root.members) {
    const std::string path = what + "." + name;
    if (node.kind != Kind::number && node.kind != Kind::string)
      throw SpecError(path, "expected a number, found " + detail::describe(node));
    out.emplace_back(name, Value::number(get_decimal(node, path)));
  }
  return out;
}

bool is_pool_name(std::string_view name) noexcept {
  if (name.empty() || name.size() > 64) return false;
  for (const char c : name) {
    if (std::isalnum(static_cast<unsigned char>(c)) == 0 && c != '_' && c != '-') return false;
  }
  return true;
}

std::string pool_name_rule(std::string_view name) {
  return "`" + std::string(name.substr(0, 80)) + (name.size() > 80 ? "...`" : "`") +
         " is not a pool name (1 to 64 characters among A-Z a-z 0-9 _ -)";
}

void check_pools(const std::vector<PoolDecl>& decls) {
  std::map<std::string, std::size_t, std::less<>> index;
  for (std::size_t i = 0; i < decls.size(); ++i) {
    const PoolDecl& d = decls[i];
    if (!is_pool_name(d.name)) throw SpecError("pools", pool_name_rule(d.name));
    if (!index.emplace(d.name, i).second)
      throw SpecError("pools." + d.name, "pool `" + d.name + "` is declared twice");
    if (d.total < Decimal{})
      throw SpecError("pools." + d.name + ".total",
                      "a pool's total must not be negative, got " + d.total.to_string());
  }
  std::vector<std::string> names;
  names.reserve(decls.size());
  for (const PoolDecl& d : decls) names.push_back(d.name);
  for (const PoolDecl& d : decls) {
    if (d.parent.empty()) continue;
    const std::string path = "pools." + d.name + ".parent";
    if (index.find(d.parent) == index.end())
      throw SpecError(path,
                      "unknown parent pool `" + d.parent + "`" + did_you_mean(d.parent, names));
    // A cycle: following parents from `d` comes back to it (at most one step per pool).
    std::string at = d.parent;
    for (std::size_t steps = 0; !at.empty() && steps <= decls.size(); ++steps) {
      if (at == d.name)
        throw SpecError(path,
                        "pool `" + d.name + "` is its own ancestor (the parents form a cycle)");
      at = decls[index.find(at)->second].parent;
    }
  }
}

std::vector<PoolDecl> parse_pools(std::string_view json_text) {
  const JsonNode root =
      detail::parse_json(json_text, "pools", detail::JsonLimits{max_input_bytes(), 8, 64 * 1024});
  try {
    expect_kind(root, Kind::object, "");
    allow_keys(root, "", {"$schema", "pools"});
    const JsonNode& pools = required(root, "", "pools");
    expect_kind(pools, Kind::object, "pools");
    std::vector<PoolDecl> out;
    for (const auto& [name, node] : pools.members) {
      if (!is_pool_name(name)) throw SpecError("pools", pool_name_rule(name));
      const std::string path = join("pools", name);
      expect_kind(node, Kind::object, path);
      allow_keys(node, path, {"total", "parent"});
      PoolDecl d;
      d.name = name;
      d.total = get_decimal(required(node, path, "total"), join(path, "total"));
      d.parent = get_string(node, path, "parent");
      if (node.find("parent") != nullptr && d.parent.empty())
        throw SpecError(join(path, "parent"), "empty parent name (omit `parent` for a root)");
      out.push_back(std::move(d));
    }
    check_pools(out);
    return out;
  } catch (const SpecError& e) {
    rethrow_located(e, root);
  }
}

State parse_state(const TaskModel& model, std::string_view json_text) {
  const JsonNode root = detail::parse_json(json_text, "state");
  expect_kind(root, Kind::object, "");
  std::vector<std::pair<VarId, Value>> changes;
  for (const auto& [name, node] : root.members) {
    const auto id = model.schema->find(name);
    if (!id)
      throw SpecError(
          name, "unknown variable `" + name + "`" + did_you_mean(name, model.schema->names()));
    const Variable& var = model.variables[*id];
    Value v;
    std::string err;
    if (!detail::value_from_json(node, var.type, v, err)) throw SpecError(name, err);
    if (!v.is_defined() && !var.optional)
      throw SpecError(name, "`" + name + "` is not optional and cannot be null");
    if (v.is_defined()) v = fit_value(v, var.type, name);
    changes.emplace_back(*id, std::move(v));
  }
  return model.initial_state().with(changes);
}

}  // namespace clampai::kernel
