// build_model: the one place where a task is validated, whether it comes from JSON or C++.
#include "clampai/kernel/model.hpp"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include "clampai/kernel/assert.hpp"
#include "clampai/kernel/digest.hpp"
#include "clampai/kernel/error.hpp"
#include "clampai/kernel/pools.hpp"
#include "clampai/kernel/suggest.hpp"
#include "json.hpp"
#include "security_build.hpp"

namespace clampai::kernel {

namespace {

constexpr std::string_view kModeNames[] = {
    "set", "increment", "decrement", "multiply", "append", "remove", "delete"};
constexpr std::string_view kReserved[] = {"true",
                                          "false",
                                          "if",
                                          "then",
                                          "else",
                                          "in",
                                          "old",
                                          "defined",
                                          "len",
                                          "contains",
                                          "min",
                                          "max",
                                          "abs"};

bool is_identifier(std::string_view s) {
  if (s.empty() || s.size() > 128) return false;
  if (!(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

void check_name(std::string_view name, const std::string& path, const char* what) {
  if (!is_identifier(name)) {
    throw SpecError(path,
                    std::string(what) + " `" + std::string(name) +
                        "` is not an identifier (letters, digits and `_`, not starting with a "
                        "digit, at most 128 characters)");
  }
  for (auto r : kReserved) {
    if (name == r)
      throw SpecError(path,
                      std::string(what) + " `" + std::string(name) +
                          "` is a reserved word of the expression language");
  }
}

// A number given for something of type `type` (a variable, parameter or bound).
Decimal fit_number(const Decimal& d, const Type& type, const std::string& path) {
  if (type.kind() == Type::Kind::integer && d.scale > 0) {
    auto r = d.rescaled(0);
    if (!r) throw SpecError(path, d.to_string() + " is not an integer");
    return *r;
  }
  auto r = d.rescaled(type.scale());
  if (!r) {
    if (d.scale > type.scale()) {
      throw SpecError(
          path,
          d.to_string() + " has more digits after the point than " + type.to_string() + " allows");
    }
    throw SpecError(path, d.to_string() + " is out of range for " + type.to_string());
  }
  return *r;
}

}  // namespace

// Checks a concrete value against a declared type; returns it normalised to the type's scale.
Value fit_value(const Value& v, const Type& type, const std::string& path) {
  switch (type.kind()) {
    case Type::Kind::boolean:
      if (v.kind() != Value::Kind::boolean)
        throw SpecError(path, "expected a bool, found " + v.to_string());
      return v;
    case Type::Kind::integer:
    case Type::Kind::decimal:
      if (v.kind() != Value::Kind::number)
        throw SpecError(path, "expected a number, found " + v.to_string());
      return Value::number(fit_number(v.as_number(), type, path));
    case Type::Kind::string:
    case Type::Kind::enumeration:
      if (v.kind() != Value::Kind::string)
        throw SpecError(path, "expected a string, found " + v.to_string());
      if (type.kind() == Type::Kind::enumeration && !type.has_enum_value(v.as_string())) {
        throw SpecError(path, "`" + v.as_string() + "` is not a value of " + type.to_string());
      }
      return v;
    case Type::Kind::list: {
      if (v.kind() != Value::Kind::list)
        throw SpecError(path, "expected a list, found " + v.to_string());
      Value::List items;
      for (std::size_t i = 0; i < v.as_list().size(); ++i) {
        items.push_back(
            fit_value(v.as_list()[i], *type.element(), path + "[" + std::to_string(i) + "]"));
      }
      return Value::list(std::move(items));
    }
  }
  return v;
}

namespace {

void check_bounds(const std::optional<Decimal>& min,
                  const std::optional<Decimal>& max,
                  const Type& type,
                  const std::string& path) {
  if ((min || max) && !type.is_numeric())
    throw SpecError(path, "`min` and `max` apply to int and decimal only, not " + type.to_string());
  if (min) fit_number(*min, type, path + ".min");
  if (max) fit_number(*max, type, path + ".max");
  if (min && max && *min > *max)
    throw SpecError(path,
                    "`min` " + min->to_string() + " is greater than `max` " + max->to_string());
}

void check_within(const Decimal& d,
                  const std::optional<Decimal>& min,
                  const std::optional<Decimal>& max,
                  const std::string& path) {
  if (min && d < *min)
    throw SpecError(path, d.to_string() + " is below the minimum " + min->to_string());
  if (max && d > *max)
    throw SpecError(path, d.to_string() + " is above the maximum " + max->to_string());
}

ExprPtr parse_bool(const std::string& text,
                   const ExprScope& scope,
                   const std::string& path,
                   const char* what) {
  ExprPtr e = parse_expression(text, scope, path);
  if (e->type.kind() != Type::Kind::boolean) {
    throw SpecError(path + ":" + std::to_string(e->pos.line) + ":" + std::to_string(e->pos.column),
                    std::string(what) + " must be a bool, found " + e->type.to_string());
  }
  return e;
}

std::string expr_path(const std::string& path, const Expr& e) {
  return path + ":" + std::to_string(e.pos.line) + ":" + std::to_string(e.pos.column);
}

// The model's canonical JSON form, the input of its digest.
detail::JsonNode canonical_form(const TaskModel& m) {
  using detail::JsonNode;
  auto opt_num = [](JsonNode& obj, const char* key, const std::optional<Decimal>& d) {
    if (d) obj.add(key, JsonNode::make_string(d->to_string()));
  };
  JsonNode root = JsonNode::make_object();
  root.add("name", JsonNode::make_string(m.name));
  root.add("goal",
           JsonNode::make_string(m.goal             ? to_source(*m.goal)
                                 : m.goal_predicate ? "(native predicate)"
                                                    : ""));
  JsonNode& vars = root.add("variables", JsonNode::make_array());
  for (const auto& v : m.variables) {
    JsonNode& o = vars.push(JsonNode::make_object());
    o.add("name", JsonNode::make_string(v.name));
    o.add("type", JsonNode::make_string(v.type.to_string()));
    o.add("initial", detail::value_to_json(v.initial));
    opt_num(o, "min", v.min);
    opt_num(o, "max", v.max);
    if (v.max_length) o.add("max_length", JsonNode::make_string(std::to_string(*v.max_length)));
    o.add("optional", JsonNode::make_bool(v.optional));
  }
  JsonNode& acts = root.add("actions", JsonNode::make_array());
  for (const auto& a : m.actions) {
    JsonNode& o = acts.push(JsonNode::make_object());
    o.add("id", JsonNode::make_string(a.id));
    o.add("cost",
          JsonNode::make_string(a.cost_expr ? to_source(*a.cost_expr) : m.format_amount(a.cost)));
    o.add("reversible", JsonNode::make_bool(a.reversible));
    o.add("emergency", JsonNode::make_bool(a.emergency));
    o.add("requires", JsonNode::make_string(a.guard ? to_source(*a.guard) : ""));
    JsonNode& ps = o.add("parameters", JsonNode::make_array());
    for (const auto& p : a.parameters) {
      JsonNode& po = ps.push(JsonNode::make_object());
      po.add("name", JsonNode::make_string(p.name));
      po.add("type", JsonNode::make_string(p.type.to_string()));
      opt_num(po, "min", p.min);
      opt_num(po, "max", p.max);
      opt_num(po, "default", p.default_value);
    }
    JsonNode& es = o.add("effects", JsonNode::make_array());
    for (const auto& e : a.effects) {
      JsonNode& eo = es.push(JsonNode::make_object());
      eo.add("variable", JsonNode::make_string(m.variables[e.variable].name));
      eo.add("mode", JsonNode::make_string(std::string(to_string(e.mode))));
      eo.add("value", JsonNode::make_string(e.value ? to_source(*e.value) : ""));
    }
    JsonNode& ds = o.add("depends_on", JsonNode::make_array());
    for (auto d : a.dependencies) ds.push(JsonNode::make_string(m.actions[d].id));
    // Only when asked for, so that every other spec keeps its digest. In the digest because
    // it changes what a server does with the action (a task kept under a digest keeps it).
    if (a.approval) {
      JsonNode& ap = o.add("approval", JsonNode::make_object());
      ap.add("right", JsonNode::make_string(a.approval->right));
      ap.add("ttl_s", JsonNode::make_string(std::to_string(a.approval->ttl_s)));
    }
  }
  JsonNode& invs = root.add("invariants", JsonNode::make_array());
  for (const auto& inv : m.invariants) {
    JsonNode& o = invs.push(JsonNode::make_object());
    o.add("name", JsonNode::make_string(inv.name));
    o.add("expression", inv.expr ? JsonNode::make_string(to_source(*inv.expr)) : JsonNode{});
    o.add("enforcement",
          JsonNode::make_string(inv.enforcement == Enforcement::blocking ? "blocking"
                                                                         : "monitoring"));
    if (inv.barrier_rate)
      o.add("barrier_rate", JsonNode::make_string(inv.barrier_rate->to_string()));
  }
  JsonNode& b = root.add("budget", JsonNode::make_object());
  b.add("total", JsonNode::make_string(m.format_amount(m.budget.total)));
  b.add("min_action_cost", JsonNode::make_string(m.format_amount(m.budget.min_action_cost)));
  b.add("step_limit", JsonNode::make_string(std::to_string(m.budget.step_limit)));
  // Only when set, so that the digest of a spec without a pool is what it always was; a pool
  // changes decisions (a charge must fit every level), so it changes the digest.
  if (!m.budget.pool.empty()) b.add("pool", JsonNode::make_string(m.budget.pool));
  if (!m.basins.empty()) {
    JsonNode& bs = root.add("capture_basins", JsonNode::make_array());
    for (const auto& basin : m.basins) {
      JsonNode& o = bs.push(JsonNode::make_object());
      o.add("name", JsonNode::make_string(basin.name));
      o.add("check", JsonNode::make_string(to_source(*basin.expr)));
    }
  }
  const Interface& itf = m.interface;
  if (itf.declared) {
    JsonNode& o = root.add("interface", JsonNode::make_object());
    o.add("assumes", JsonNode::make_string(itf.assumes ? to_source(*itf.assumes) : ""));
    o.add("guarantees", JsonNode::make_string(itf.guarantees ? to_source(*itf.guarantees) : ""));
    auto names = [&](const char* key, const std::vector<VarId>& ids) {
      JsonNode& a = o.add(key, JsonNode::make_array());
      for (VarId id : ids) a.push(JsonNode::make_string(m.variables[id].name));
    };
    names("reads", itf.reads);
    names("writes", itf.writes);
    names("forbidden", itf.forbidden);
  }
  detail::add_security_form(root, m);
  return root;
}

// Sorted, distinct VarIds of the marked variables.
std::vector<VarId> marked(const std::vector<bool>& seen) {
  std::vector<VarId> out;
  for (std::size_t i = 0; i < seen.size(); ++i)
    if (seen[i]) out.push_back(static_cast<VarId>(i));
  return out;
}

std::vector<std::string> action_ids(const TaskModel& m) {
  std::vector<std::string> ids;
  for (const auto& a : m.actions) ids.push_back(a.id);
  return ids;
}

std::vector<VarId> variable_list(const TaskModel& m,
                                 const std::vector<std::string>& names,
                                 const std::string& path) {
  std::vector<bool> seen(m.variables.size(), false);
  for (std::size_t i = 0; i < names.size(); ++i) {
    const std::string p = path + "[" + std::to_string(i) + "]";
    const auto id = m.schema->find(names[i]);
    if (!id)
      throw SpecError(
          p, "unknown variable `" + names[i] + "`" + did_you_mean(names[i], m.schema->names()));
    if (seen[*id]) throw SpecError(p, "`" + names[i] + "` is listed twice");
    seen[*id] = true;
  }
  return marked(seen);
}

// The interface: the declared one checked against the variables, or the task's actual reads
// and writes.
void build_interface(TaskModel& m, const std::optional<InterfaceDecl>& decl) {
  Interface& itf = m.interface;
  if (decl) {
    itf.declared = true;
    itf.loc = decl->loc;
    if (!decl->assumes.empty())
      itf.assumes = parse_bool(decl->assumes, m.scope(), decl->path + ".assumes", "`assumes`");
    if (!decl->guarantees.empty())
      itf.guarantees =
          parse_bool(decl->guarantees, m.scope(), decl->path + ".guarantees", "`guarantees`");
  }
  std::vector<bool> reads(m.variables.size(), false);
  std::vector<bool> writes(m.variables.size(), false);
  auto read = [&](const ExprPtr& e) {
    if (e) collect_variables(*e, reads);
  };
  for (const Action& a : m.actions) {
    read(a.guard);
    read(a.cost_expr);
    for (const Effect& e : a.effects) {
      read(e.value);
      writes[e.variable] = true;
      // increment, append and the like read the variable they change
      if (e.mode != EffectMode::set && e.mode != EffectMode::del) reads[e.variable] = true;
    }
  }
  for (const Invariant& inv : m.invariants) read(inv.expr);
  read(m.goal);
  read(itf.assumes);
  read(itf.guarantees);
  itf.actual_reads = marked(reads);
  itf.actual_writes = marked(writes);
  itf.reads = decl && decl->reads ? variable_list(m, *decl->reads, decl->path + ".reads")
                                  : itf.actual_reads;
  itf.writes = decl && decl->writes ? variable_list(m, *decl->writes, decl->path + ".writes")
                                    : itf.actual_writes;
  if (decl) itf.forbidden = variable_list(m, decl->forbidden, decl->path + ".forbidden");
  if (!decl || !decl->writes) return;  // undeclared writes are checked by the verifier
  for (std::size_t i = 0; i < decl->forbidden.size(); ++i) {
    const VarId f = *m.schema->find(decl->forbidden[i]);
    if (std::binary_search(itf.writes.begin(), itf.writes.end(), f))
      throw SpecError(decl->path + ".forbidden[" + std::to_string(i) + "]",
                      "`" + decl->forbidden[i] + "` is both forbidden and in `writes`");
  }
}

}  // namespace

std::string_view to_string(EffectMode mode) { return kModeNames[static_cast<int>(mode)]; }

std::optional<EffectMode> parse_effect_mode(std::string_view name) {
  for (int i = 0; i < 7; ++i) {
    if (kModeNames[i] == name) return static_cast<EffectMode>(i);
  }
  return std::nullopt;
}

bool holds_in(const Invariant& inv, const State& state) {
  if (inv.expr) {
    const EvalResult r = evaluate(*inv.expr, EvalEnv{&state, {}, &state, nullptr});
    return r.ok() && r.value.as_bool();
  }
  try {
    return inv.predicate(state);
  } catch (...) {
    return false;
  }
}

bool TaskModel::goal_holds(const State& state) const {
  if (!goal) {
    if (!goal_predicate) return false;
    try {
      return goal_predicate(state);
    } catch (...) {
      return false;  // fails closed: a goal that cannot be checked is not reached
    }
  }
  const EvalResult r = evaluate(*goal, EvalEnv{&state, {}, &state, nullptr});
  return r.ok() && r.value.as_bool();
}

const CaptureBasin* TaskModel::basin_of(const State& state) const {
  for (const CaptureBasin& b : basins) {
    const EvalResult r = evaluate(*b.expr, EvalEnv{&state, {}, &state, nullptr});
    if (!r.ok() || r.value.as_bool()) return &b;
  }
  return nullptr;
}

std::optional<std::size_t> TaskModel::find_action(std::string_view id) const {
  for (std::size_t i = 0; i < actions.size(); ++i) {
    if (actions[i].id == id) return i;
  }
  return std::nullopt;
}

std::string TaskModel::format_amount(Amount a) const {
  return Decimal{a, static_cast<std::uint8_t>(budget.scale)}.to_string();
}

ExprScope TaskModel::scope(const Action* action, bool allow_old) const {
  ExprScope s;
  s.variables = schema.get();
  s.variable_types = &variable_types;
  s.parameters = action ? &action->parameter_scope : nullptr;
  s.allow_old = allow_old;
  return s;
}

Amount to_amount(const Decimal& d, int scale, const std::string& path) {
  if (d.units < 0) throw SpecError(path, "must not be negative, got " + d.to_string());
  auto r = d.rescaled(scale);
  if (!r) {
    if (d.scale > scale) {
      throw SpecError(path,
                      d.to_string() + " is finer than the budget's scale of " +
                          std::to_string(scale) + " digits after the point (raise `budget.scale`)");
    }
    throw SpecError(
        path,
        d.to_string() + " overflows a 64-bit fixed-point amount at scale " + std::to_string(scale));
  }
  return r->units;
}

namespace {

// build_model, one responsibility per step. Each step reads the parts of the model the steps
// before it built.
using ActionIndex = std::map<std::string, std::size_t>;  // action id -> index

// The budget and the T2 step bound.
// The problems of a spec's independent parts (each action, invariant, basin; the goal, the
// interface, the dependencies), so that one mistake does not hide the next: they are thrown
// together, at most SpecError's limit, once every part has been looked at.
class Problems {
 public:
  static constexpr std::size_t kMax = 20;
  void add(const SpecError& e) {
    for (const SpecProblem& p : e.problems())
      if (list_.size() < kMax) list_.push_back(p);
  }
  template <class F>
  void attempt(F&& part) {
    try {
      part();
    } catch (const SpecError& e) {
      add(e);
    }
  }
  [[nodiscard]] bool empty() const noexcept { return list_.empty(); }
  void throw_if_any() {
    if (!list_.empty()) throw SpecError(std::move(list_));
  }

 private:
  std::vector<SpecProblem> list_;
};

void build_budget(const std::shared_ptr<TaskModel>& m, const TaskDecl& decl) {
  if (decl.budget.scale < 0 || decl.budget.scale > 9) {
    throw SpecError("budget.scale",
                    "must be between 0 and 9, got " + std::to_string(decl.budget.scale));
  }
  m->budget.scale = decl.budget.scale;
  m->budget.total = to_amount(decl.budget.total, decl.budget.scale, "budget.total");
  m->budget.min_action_cost =
      to_amount(decl.budget.min_action_cost, decl.budget.scale, "budget.min_action_cost");
  if (m->budget.min_action_cost <= 0) {
    throw SpecError("budget.min_action_cost",
                    "must be greater than 0, or termination (T2) cannot be guaranteed");
  }
  if (decl.budget.max_steps) {
    if (*decl.budget.max_steps < 0) throw SpecError("budget.max_steps", "must not be negative");
    m->budget.declared_max_steps = decl.budget.max_steps;
  }
  // T2: min(floor(B / epsilon), max_steps), exact in integers.
  if (!decl.budget.pool.empty()) {
    if (!is_pool_name(decl.budget.pool))
      throw SpecError("budget.pool", pool_name_rule(decl.budget.pool));
    m->budget.pool = decl.budget.pool;
  }
  m->budget.step_limit =
      step_bound(m->budget.total, m->budget.min_action_cost, m->budget.declared_max_steps);
}

// The variables and the schema.
void build_variables(const std::shared_ptr<TaskModel>& m, const TaskDecl& decl) {
  std::vector<std::string> names;
  for (std::size_t i = 0; i < decl.variables.size(); ++i) {
    const VariableDecl& v = decl.variables[i];
    const std::string path = "variables." + v.name;
    check_name(v.name, path, "variable name");
    if (std::find(names.begin(), names.end(), v.name) != names.end())
      throw SpecError(path, "duplicate variable `" + v.name + "`");
    names.push_back(v.name);
    check_bounds(v.min, v.max, v.type, path);
    Variable out{v.name, v.type, Value(), v.min, v.max, v.max_length, v.optional};
    out.loc = v.loc;
    if (v.element_label && v.type.kind() != Type::Kind::list)
      throw SpecError(path + ".element_label", "applies to lists only, not " + v.type.to_string());
    out.labelled = v.label || v.element_label;
    out.label = v.label.value_or(SecurityLabel::public_data);
    out.element_label = v.element_label.value_or(out.label);
    if (out.min) out.min = fit_number(*out.min, v.type, path + ".min");
    if (out.max) out.max = fit_number(*out.max, v.type, path + ".max");
    if (v.max_length) {
      if (v.type.kind() != Type::Kind::list)
        throw SpecError(path + ".max_length", "applies to lists only, not " + v.type.to_string());
      if (*v.max_length < 0) throw SpecError(path + ".max_length", "must not be negative");
    }
    if (!v.initial.is_defined()) {
      if (!v.optional)
        throw SpecError(path + ".initial",
                        "missing initial value (only optional variables may start undefined)");
    } else {
      out.initial = fit_value(v.initial, v.type, path + ".initial");
      if (v.type.is_numeric())
        check_within(out.initial.as_number(), out.min, out.max, path + ".initial");
      if (v.max_length && static_cast<std::int64_t>(out.initial.as_list().size()) > *v.max_length) {
        throw SpecError(path + ".initial",
                        "has " + std::to_string(out.initial.as_list().size()) +
                            " items, more than `max_length` " + std::to_string(*v.max_length));
      }
    }
    m->variable_types.push_back(v.type);
    m->variables.push_back(std::move(out));
  }
  m->schema = std::make_shared<const Schema>(names);
}

// The actions: ids, parameters, costs, guards and effects, type-checked.
ActionIndex build_actions(const std::shared_ptr<TaskModel>& m,
                          const TaskDecl& decl,
                          Problems& problems) {
  ActionIndex action_index;
  for (std::size_t i = 0; i < decl.actions.size(); ++i) {
    const ActionDecl& a = decl.actions[i];
    const std::string path = "actions[" + std::to_string(i) + "]";
    try {
      check_name(a.id, path + ".id", "action id");
      if (auto [it, inserted] = action_index.emplace(a.id, i); !inserted) {
        throw SpecError(path + ".id",
                        "duplicate action id `" + a.id + "` (also actions[" +
                            std::to_string(it->second) + "])");
      }
      Action out;
      out.id = a.id;
      out.name = a.name.empty() ? a.id : a.name;
      out.description = a.description;
      out.reversible = a.reversible;
      out.approval = a.approval;
      out.loc = a.loc;
      for (const ParameterDecl& p : a.parameters) {
        const std::string ppath = path + ".parameters." + p.name;
        check_name(p.name, ppath, "parameter name");
        if (m->schema->find(p.name))
          throw SpecError(ppath, "parameter `" + p.name + "` has the name of a state variable");
        if (!p.type.is_numeric())
          throw SpecError(ppath + ".type",
                          "parameters are int or decimal, not " + p.type.to_string());
        for (const auto& q : out.parameters) {
          if (q.name == p.name) throw SpecError(ppath, "duplicate parameter `" + p.name + "`");
        }
        check_bounds(p.min, p.max, p.type, ppath);
        Parameter po{p.name, p.type, p.min, p.max, p.default_value};
        if (po.min) po.min = fit_number(*po.min, p.type, ppath + ".min");
        if (po.max) po.max = fit_number(*po.max, p.type, ppath + ".max");
        if (po.default_value) {
          po.default_value = fit_number(*po.default_value, p.type, ppath + ".default");
          check_within(*po.default_value, po.min, po.max, ppath + ".default");
        }
        out.parameter_scope.push_back(NamedType{p.name, p.type});
        out.parameters.push_back(std::move(po));
      }
      // Cost: a number, or an expression over the parameters.
      {
        const std::string cpath = path + ".cost";
        std::string err;
        if (auto d = Decimal::parse(a.cost, &err)) {
          out.cost = to_amount(*d, m->budget.scale, cpath);
        } else {
          const bool looks_numeric =
              !a.cost.empty() && (std::isdigit(static_cast<unsigned char>(a.cost[0])) ||
                                  a.cost[0] == '-' || a.cost[0] == '.');
          if (looks_numeric &&
              a.cost.find_first_of("abcdfghijklmnopqrstuvwxyzABCDFGHIJKLMNOPQRSTUVWXYZ_ +*(") ==
                  std::string::npos) {
            throw SpecError(cpath, "`" + a.cost + "`: " + err);
          }
          ExprScope scope;
          scope.parameters = &out.parameter_scope;
          out.cost_expr = parse_expression(a.cost, scope, cpath);
          if (!out.cost_expr->type.is_numeric())
            throw SpecError(expr_path(cpath, *out.cost_expr),
                            "a cost must be a number, found " + out.cost_expr->type.to_string());
          if (out.cost_expr->type.scale() > m->budget.scale) {
            throw SpecError(expr_path(cpath, *out.cost_expr),
                            "the cost has more digits after the point than the budget's scale " +
                                std::to_string(m->budget.scale) + " allows");
          }
        }
      }
      const ExprScope scope = m->scope(&out);
      if (!a.guard.empty())
        out.guard = parse_bool(a.guard, scope, path + ".requires", "`requires`");
      std::map<VarId, std::size_t> written;
      for (std::size_t j = 0; j < a.effects.size(); ++j) {
        const EffectDecl& e = a.effects[j];
        const std::string epath = path + ".effects[" + std::to_string(j) + "]";
        const auto id = m->schema->find(e.variable);
        if (!id) {
          throw SpecError(epath + ".variable",
                          "unknown variable `" + e.variable + "`" +
                              did_you_mean(e.variable, m->schema->names()));
        }
        if (auto [it, inserted] = written.emplace(*id, j); !inserted) {
          throw SpecError(epath,
                          "a second effect on `" + e.variable + "` in one action (effects[" +
                              std::to_string(it->second) + "] already changes it)");
        }
        const Variable& var = m->variables[*id];
        Effect eff{*id, e.mode, nullptr};
        const std::string vpath = epath + ".value";
        if (e.mode == EffectMode::del) {
          if (!var.optional)
            throw SpecError(
                epath + ".mode",
                "`delete` needs an optional variable; `" + var.name + "` is not optional");
          if (!e.value.empty()) throw SpecError(vpath, "`delete` takes no value");
          out.effects.push_back(std::move(eff));
          continue;
        }
        if (e.value.empty())
          throw SpecError(vpath, "missing value for `" + std::string(to_string(e.mode)) + "`");
        eff.value = parse_expression(e.value, scope, vpath);
        const Expr& val = *eff.value;
        const std::string at = expr_path(vpath, val);
        switch (e.mode) {
          case EffectMode::set:
            if (!assignable(var.type, val)) {
              throw SpecError(at,
                              "cannot set `" + var.name + "` (" + var.type.to_string() +
                                  ") to a value of type " + val.type.to_string());
            }
            break;
          case EffectMode::increment:
          case EffectMode::decrement:
            if (!var.type.is_numeric())
              throw SpecError(epath + ".mode",
                              "`" + std::string(to_string(e.mode)) +
                                  "` needs a numeric variable; `" + var.name + "` is " +
                                  var.type.to_string());
            if (!var.type.accepts(val.type)) {
              throw SpecError(at,
                              "cannot " + std::string(to_string(e.mode)) + " `" + var.name + "` (" +
                                  var.type.to_string() + ") by a value of type " +
                                  val.type.to_string());
            }
            break;
          case EffectMode::multiply:
            if (!var.type.is_numeric())
              throw SpecError(epath + ".mode",
                              "`multiply` needs a numeric variable; `" + var.name + "` is " +
                                  var.type.to_string());
            if (val.type.kind() != Type::Kind::integer) {
              throw SpecError(
                  at,
                  "`multiply` takes an int factor (the product must keep the variable's "
                  "scale), found " +
                      val.type.to_string());
            }
            break;
          case EffectMode::append:
          case EffectMode::remove:
            if (var.type.kind() != Type::Kind::list)
              throw SpecError(epath + ".mode",
                              "`" + std::string(to_string(e.mode)) + "` needs a list variable; `" +
                                  var.name + "` is " + var.type.to_string());
            if (!assignable(*var.type.element(), val)) {
              throw SpecError(at,
                              "cannot " + std::string(to_string(e.mode)) + " a value of type " +
                                  val.type.to_string() + " to " + var.type.to_string());
            }
            break;
          case EffectMode::del:
            break;
        }
        out.effects.push_back(std::move(eff));
      }
      m->actions.push_back(std::move(out));
    } catch (const SpecError& e) {
      problems.add(e);
      Action placeholder;  // keeps the indices of the actions after it
      placeholder.id = a.id;
      placeholder.name = a.id;
      m->actions.push_back(std::move(placeholder));
    }
  }
  return action_index;
}

// The emergency actions (T8): declared actions that cost 0.
void mark_emergency_actions(const std::shared_ptr<TaskModel>& m,
                            const TaskDecl& decl,
                            const ActionIndex& action_index) {
  for (std::size_t k = 0; k < decl.emergency_actions.size(); ++k) {
    const std::string path = "emergency_actions[" + std::to_string(k) + "]";
    const auto it = action_index.find(decl.emergency_actions[k]);
    if (it == action_index.end())
      throw SpecError(path,
                      "unknown action `" + decl.emergency_actions[k] + "`" +
                          did_you_mean(decl.emergency_actions[k], action_ids(*m)) +
                          ": emergency actions must be declared in `actions`");
    Action& a = m->actions[it->second];
    if (a.emergency) throw SpecError(path, "action `" + a.id + "` is listed twice");
    if (a.cost_expr || a.cost != 0) {
      throw SpecError(
          "actions[" + std::to_string(it->second) + "].cost",
          "emergency action `" + a.id + "` must cost 0, or it could break budget safety (T1)");
    }
    if (a.approval)
      throw SpecError("actions[" + std::to_string(it->second) + "].approval",
                      "emergency action `" + a.id +
                          "` cannot wait for an approval: an emergency action is always "
                          "available (T8)");
    a.emergency = true;
  }
}

// The dependencies between actions, which must not form a cycle.
void build_dependencies(const std::shared_ptr<TaskModel>& m,
                        const TaskDecl& decl,
                        const ActionIndex& action_index) {
  for (std::size_t k = 0; k < decl.dependencies.size(); ++k) {
    const auto& [action, deps] = decl.dependencies[k];
    const std::string path = "dependencies." + action;
    const auto it = action_index.find(action);
    if (it == action_index.end())
      throw SpecError(path,
                      "unknown action `" + action + "`" + did_you_mean(action, action_ids(*m)));
    Action& a = m->actions[it->second];
    for (std::size_t j = 0; j < deps.size(); ++j) {
      const auto dt = action_index.find(deps[j]);
      const std::string dpath = path + "[" + std::to_string(j) + "]";
      if (dt == action_index.end()) {
        throw SpecError(dpath,
                        "unknown action `" + deps[j] + "`" + did_you_mean(deps[j], action_ids(*m)));
      }
      if (std::find(a.dependencies.begin(), a.dependencies.end(), dt->second) !=
          a.dependencies.end()) {
        throw SpecError(dpath, "`" + deps[j] + "` is listed twice");
      }
      a.dependencies.push_back(dt->second);
    }
  }
}

void check_dependency_cycles(const TaskModel& model) {
  const TaskModel* m = &model;
  // Depth-first search for a cycle, iterative so that long chains cannot exhaust the stack;
  // a cycle is reported as a path of action ids.
  std::vector<int> color(m->actions.size(), 0);            // 0 new, 1 on the current path, 2 done
  std::vector<std::pair<std::size_t, std::size_t>> stack;  // (action, next dependency index)
  for (std::size_t root = 0; root < m->actions.size(); ++root) {
    if (color[root] != 0) continue;
    stack.emplace_back(root, 0);
    color[root] = 1;
    while (!stack.empty()) {
      auto& [node, next] = stack.back();
      const auto& deps = m->actions[node].dependencies;
      if (next == deps.size()) {
        color[node] = 2;
        stack.pop_back();
        continue;
      }
      const std::size_t d = deps[next++];
      if (color[d] == 1) {
        std::string cycle;
        auto start =
            std::find_if(stack.begin(), stack.end(), [&](const auto& f) { return f.first == d; });
        for (auto f = start; f != stack.end(); ++f) cycle += m->actions[f->first].id + " -> ";
        cycle += m->actions[d].id;
        throw SpecError("dependencies." + m->actions[node].id, "cyclic dependencies: " + cycle);
      }
      if (color[d] == 0) {
        color[d] = 1;
        stack.emplace_back(d, 0);
      }
    }
  }
}

// The invariants, with their barrier functions.
void build_invariants(const std::shared_ptr<TaskModel>& m,
                      const TaskDecl& decl,
                      Problems& problems) {
  std::set<std::string> invariant_names;
  for (std::size_t i = 0; i < decl.invariants.size(); ++i) {
    const InvariantDecl& inv = decl.invariants[i];
    const std::string path = "invariants[" + std::to_string(i) + "]";
    try {
      if (inv.name.empty()) throw SpecError(path + ".name", "an invariant needs a name");
      if (!invariant_names.insert(inv.name).second)
        throw SpecError(path + ".name", "duplicate invariant `" + inv.name + "`");
      Invariant out;
      out.name = inv.name;
      out.enforcement = inv.enforcement;
      out.description = inv.description;
      out.suggestion = inv.suggestion;
      out.loc = inv.loc;
      out.template_name = inv.template_name;
      if (!inv.expression.empty()) {
        out.expr = parse_bool(
            inv.expression, m->scope(nullptr, /*allow_old=*/true), path + ".check", "an invariant");
        out.transition = uses_old(*out.expr);
        if (inv.barrier_rate) {
          const std::string rp = path + ".barrier_rate";
          const Expr& e = *out.expr;
          const bool comparison =
              e.op == ExprOp::le || e.op == ExprOp::lt || e.op == ExprOp::ge || e.op == ExprOp::gt;
          if (!comparison || !e.args[0]->type.is_numeric() || !e.args[1]->type.is_numeric())
            throw SpecError(
                rp,
                "a barrier rate needs a numeric comparison (`a <= b`, `<`, `>=`, `>`); `" +
                    inv.name + "` is `" + inv.expression + "`");
          if (out.transition || inv.enforcement != Enforcement::blocking)
            throw SpecError(rp,
                            "a barrier rate needs a blocking invariant on one state (no `old(x)`)");
          const bool upper = e.op == ExprOp::le || e.op == ExprOp::lt;
          const Expr& hi = upper ? *e.args[1] : *e.args[0];
          const Expr& lo = upper ? *e.args[0] : *e.args[1];
          out.barrier_rate = inv.barrier_rate;
          out.barrier =
              parse_expression("(" + to_source(hi) + ") - (" + to_source(lo) + ")", m->scope(), rp);
        }
      } else if (!inv.pattern_variables.empty()) {
        detail::build_native_invariant(*m, inv, path, out);  // a native template
      } else if (inv.predicate) {
        out.predicate = inv.predicate;
      } else {
        throw SpecError(path + ".check", "an invariant needs an expression or a predicate");
      }
      m->invariants.push_back(std::move(out));
    } catch (const SpecError& e) {
      problems.add(e);
    }
  }
}

// The capture basins.
void build_basins(const std::shared_ptr<TaskModel>& m, const TaskDecl& decl, Problems& problems) {
  std::set<std::string> basin_names;
  for (std::size_t i = 0; i < decl.basins.size(); ++i) {
    const BasinDecl& b = decl.basins[i];
    const std::string path = "capture_basins[" + std::to_string(i) + "]";
    try {
      if (b.name.empty()) throw SpecError(path + ".name", "a capture basin needs a name");
      if (!basin_names.insert(b.name).second)
        throw SpecError(path + ".name", "duplicate capture basin `" + b.name + "`");
      m->basins.push_back(
          CaptureBasin{b.name,
                       parse_bool(b.expression, m->scope(), path + ".check", "a capture basin"),
                       b.description,
                       b.loc});
    } catch (const SpecError& e) {
      problems.add(e);
    }
  }
}

}  // namespace

std::shared_ptr<const TaskModel> build_model(const TaskDecl& decl) {
  auto m = std::make_shared<TaskModel>();
  m->name = decl.name;
  m->goal_description = decl.goal_description;
  build_budget(m, decl);
  build_variables(m, decl);
  {
    std::vector<Value> init;  // the initial state (a friend's job: it is private)
    init.reserve(m->variables.size());
    for (const auto& v : m->variables) init.push_back(v.initial);
    m->initial_.emplace(m->schema, std::move(init));
  }
  // The budget and the variables are what everything else is read against: their problems
  // stop here. The other parts are independent of each other; every one is looked at.
  Problems problems;
  const ActionIndex action_index = build_actions(m, decl, problems);
  problems.attempt([&] { mark_emergency_actions(m, decl, action_index); });
  bool dependencies_built = false;
  problems.attempt([&] {
    build_dependencies(m, decl, action_index);
    dependencies_built = true;
  });
  if (dependencies_built) problems.attempt([&] { check_dependency_cycles(*m); });
  build_invariants(m, decl, problems);
  if (!decl.goal.empty()) {
    problems.attempt(
        [&] { m->goal = parse_bool(decl.goal, m->scope(), decl.goal_path, "the goal"); });
  } else {
    m->goal_predicate = decl.goal_predicate;
  }
  problems.attempt([&] { build_interface(*m, decl.interface); });
  build_basins(m, decl, problems);
  detail::build_security(*m, decl, [&](const SpecError& e) { problems.add(e); });
  problems.throw_if_any();

  std::string canonical;
  // Every number in the canonical form is written as a string, so it always has one.
  detail::JsonNode form = canonical_form(*m);
  detail::add_native_invariants_form(form, decl);
  CLAMPAI_ALWAYS_ASSERT(detail::append_canonical(canonical, form));
  m->digest = sha256_hex(canonical);
  return m;
}

}  // namespace clampai::kernel
