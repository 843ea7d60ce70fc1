// Random specs over small bounded domains: every variable and parameter has a handful of values,
// so the oracle can enumerate every state and parameter vector.
#include <random>
#include <stdexcept>

#include "oracle.hpp"

namespace clampai::oracle {

using nlohmann::json;

std::vector<std::string> feature_names() {
  return {"enum_cross",
          "if_scale_overflow",
          "depth_bad_initial",
          "depth_strict",
          "near_overflow",
          "old_values",
          "dependencies",
          "emergency",
          "parameters",
          "decimals",
          "enums",
          "lists"};
}

Features parse_features(const std::string& text, Features f) {
  auto flag = [&](const std::string& name) -> bool* {
    if (name == "enum_cross") return &f.enum_cross;
    if (name == "if_scale_overflow") return &f.if_scale_overflow;
    if (name == "depth_bad_initial") return &f.depth_bad_initial;
    if (name == "depth_strict") return &f.depth_strict;
    if (name == "near_overflow") return &f.near_overflow;
    if (name == "old_values") return &f.old_values;
    if (name == "dependencies") return &f.dependencies;
    if (name == "emergency") return &f.emergency;
    if (name == "parameters") return &f.parameters;
    if (name == "decimals") return &f.decimals;
    if (name == "enums") return &f.enums;
    if (name == "lists") return &f.lists;
    return nullptr;
  };
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t end = std::min(text.find(',', start), text.size());
    std::string item = text.substr(start, end - start);
    start = end + 1;
    if (item.empty()) continue;
    bool on = true;
    if (item[0] == '+' || item[0] == '-') {
      on = item[0] == '+';
      item = item.substr(1);
    }
    if (item == "all" || item == "known") {
      f.enum_cross = f.if_scale_overflow = f.depth_bad_initial = f.depth_strict = on;
      if (item == "all")
        f.near_overflow = f.old_values = f.dependencies = f.emergency = f.parameters = f.decimals =
            f.enums = f.lists = on;
      continue;
    }
    bool* b = flag(item);
    if (b == nullptr)
      throw std::invalid_argument("CLAMPAI_ORACLE_FEATURES: unknown feature `" + item + "`");
    *b = on;
  }
  return f;
}

namespace {

struct Var {
  // A list holds numbers of `scale` (0: int) or, with `values`, enumeration values; its
  // max_length is 2.
  enum Kind { integer, decimal, boolean, enumeration, list } kind = integer;
  std::string name;
  int scale = 0;
  std::int64_t lo = 0, hi = 0;      // units
  std::vector<std::string> values;  // enum
};

struct Param {
  std::string name;
  int scale = 0;
  std::int64_t lo = 0, hi = 0;
};

std::string units_text(std::int64_t u, int scale) {
  if (scale == 0) return std::to_string(u);
  std::string digits = std::to_string(u < 0 ? -u : u);
  while (static_cast<int>(digits.size()) <= scale) digits.insert(0, "0");
  return (u < 0 ? "-" : "") + digits.substr(0, digits.size() - scale) + "." +
         digits.substr(digits.size() - scale);
}

class Gen {
 public:
  Gen(std::uint64_t seed, const Features& f) : rng_(seed), f_(f) {}

  json spec() {
    json s;
    s["name"] = "oracle";
    make_variables();
    json vars = json::object();
    for (const Var& v : vars_) vars[v.name] = var_json(v);
    s["variables"] = vars;
    json actions = json::array();
    const int n_actions = pick(1, 3);
    for (int i = 0; i < n_actions; ++i) actions.push_back(action("a" + std::to_string(i)));
    if (f_.emergency && chance(15)) {
      params_.clear();
      json e = {{"id", "stop"}, {"cost", 0}, {"effects", json::array()}};
      e["effects"].push_back(effect(vars_[pick(0, static_cast<int>(vars_.size()) - 1)]));
      if (chance(50)) e["requires"] = boolean(1, false);
      actions.push_back(e);
      s["emergency_actions"] = json::array({"stop"});
    }
    s["actions"] = actions;
    if (f_.dependencies && n_actions > 1 && chance(35))
      s["dependencies"] = {{"a" + std::to_string(pick(1, n_actions - 1)), json::array({"a0"})}};
    params_.clear();
    json invs = json::array();
    const int n_inv = pick(1, 3);
    for (int i = 0; i < n_inv; ++i) {
      json inv = {{"name", "i" + std::to_string(i)},
                  {"check", chance(55) ? simple_invariant() : boolean(2, true)}};
      if (chance(12)) inv["enforcement"] = "monitoring";
      invs.push_back(inv);
    }
    s["invariants"] = invs;
    json budget = {{"total", pick(2, 6)}, {"min_action_cost", 1}};
    if (chance(25)) budget["max_steps"] = pick(1, 3);
    s["budget"] = budget;
    if (chance(85)) s["goal"] = boolean(1, false);
    if (chance(40))
      s["capture_basins"] = json::array({{{"name", "b0"}, {"check", boolean(1, false)}}});
    return s;
  }

 private:
  std::mt19937_64 rng_;
  const Features& f_;
  std::vector<Var> vars_;
  std::vector<Param> params_;

  int pick(int lo, int hi) { return lo + static_cast<int>(rng_() % (hi - lo + 1)); }
  bool chance(int percent) { return pick(1, 100) <= percent; }
  template <typename T>
  const T& one(const std::vector<T>& v) {
    return v[pick(0, static_cast<int>(v.size()) - 1)];
  }

  void make_variables() {
    const int n = pick(2, 3);
    const std::vector<std::string> pool{"red", "green", "blue"};
    std::vector<std::string> base;
    for (int i = 0; i < n; ++i) {
      Var v;
      v.name = "v" + std::to_string(i);
      const int k = pick(0, 99);
      if (k < 35 || (!f_.decimals && !f_.enums && k < 80)) {
        v.kind = Var::integer;
      } else if (k < 55 && f_.decimals) {
        v.kind = Var::decimal;
        v.scale = pick(1, 2);
      } else if ((k < 75 && !f_.enum_cross) || k < 65 || !f_.enums) {
        v.kind = Var::boolean;
      } else {
        v.kind = Var::enumeration;
        if (base.empty()) {
          base = pool;
          if (chance(40)) base.pop_back();
          v.values = base;
        } else if (f_.enum_cross && chance(70)) {
          v.values = base;  // a permutation or a subset of the first enum's values
          std::shuffle(v.values.begin(), v.values.end(), rng_);
          if (v.values.size() > 1 && chance(50)) v.values.pop_back();
        } else {
          v.values = base;
        }
      }
      if (v.kind == Var::integer || v.kind == Var::decimal) {
        v.lo = pick(-3, 0);
        v.hi = v.lo + pick(1, 4);
      }
      vars_.push_back(v);
    }
    if (!f_.lists || !chance(45)) return;
    // Lists (issue 34): of numbers of mixed scales (an int list copied into a decimal one), and
    // of enumeration values (the first enum's, or a subset of them).
    const int lists = pick(1, 2);
    for (int i = 0; i < lists; ++i) {
      Var v;
      v.kind = Var::list;
      v.name = "l" + std::to_string(i);
      if (f_.enums && chance(35)) {
        v.values = base.empty() ? std::vector<std::string>{"red", "green"} : base;
        if (v.values.size() > 1 && chance(30)) v.values.pop_back();
      } else {
        v.scale = f_.decimals ? pick(0, 2) : 0;
      }
      vars_.push_back(v);
    }
  }

  std::vector<const Var*> lists(bool enums) const {
    std::vector<const Var*> out;
    for (const Var& v : vars_)
      if (v.kind == Var::list && v.values.empty() != enums) out.push_back(&v);
    return out;
  }

  // An item of list `v`: a number no finer than its elements (near the int64 edge at times),
  // or one of its enumeration values (a literal, or an enum variable whose values are v's).
  std::string item(const Var& v, bool in_invariant, bool variables = true) {
    if (!v.values.empty()) {
      for (const Var& w : vars_) {
        if (!variables || w.kind != Var::enumeration || !chance(30)) continue;
        bool subset = true;
        for (const auto& x : w.values)
          subset = subset && std::find(v.values.begin(), v.values.end(), x) != v.values.end();
        if (subset) return w.name;
      }
      return "'" + one(v.values) + "'";
    }
    if (f_.near_overflow && v.scale > 0 && chance(6)) return "922337203685477581";
    if (variables && !in_invariant && chance(15)) return number(1, v.scale);
    // 0, 1, 2 or 0.5 at a scale no finer than the elements': the same numbers at different
    // scales meet often.
    const int s = pick(0, v.scale);
    std::int64_t unit = 1;
    for (int i = 0; i < s; ++i) unit *= 10;
    const int k = pick(0, s > 0 ? 3 : 2);
    return units_text(k == 3 ? unit / 2 : k * unit, s);
  }

  // A list value assignable to `v`: a literal, another list of no finer scale (or of a subset
  // of v's values), or an `if` of two of them.
  std::string list_value(const Var& v, int depth) {
    const int k = pick(0, 9);
    if (depth > 0 && k < 2)
      return "(if " + boolean(0, false) + " then " + list_value(v, depth - 1) + " else " +
             list_value(v, depth - 1) + ")";
    if (k < 6) {
      std::vector<const Var*> from;
      for (const Var* w : lists(!v.values.empty())) {
        bool ok = w->scale <= v.scale;
        for (const auto& x : w->values)
          ok = ok && std::find(v.values.begin(), v.values.end(), x) != v.values.end();
        if (ok && w != &v) from.push_back(w);
      }
      if (!from.empty()) return one(from)->name;
    }
    if (chance(15)) return "[]";
    if (chance(50)) return "[" + item(v, false) + "]";
    // Two items: literals (an enum variable beside a literal would type the list as its enum).
    return "[" + item(v, false, false) + ", " + item(v, false, false) + "]";
  }

  // A bool fact about a list: membership (by value: a finer number too), length, equality with
  // another list (of another scale) or a literal.
  std::string list_atom(bool in_invariant) {
    std::vector<const Var*> all = lists(false);
    for (const Var* w : lists(true)) all.push_back(w);
    const Var& v = *one(all);
    const int k = pick(0, 9);
    if (k < 4) {
      std::string x = item(v, in_invariant);
      if (v.values.empty() && f_.decimals && chance(25))
        x = units_text(5 * pick(0, 3), v.scale + 1);
      return "contains(" + v.name + ", " + x + ")";
    }
    if (k < 6)
      return "(len(" + v.name + ") " + (chance(50) ? "<=" : "==") + " " +
             std::to_string(pick(0, 2)) + ")";
    std::vector<const Var*> same;
    for (const Var* w : all)
      if (w != &v && w->values.empty() == v.values.empty()) same.push_back(w);
    if (k < 8 && !same.empty()) return "(" + v.name + " == " + one(same)->name + ")";
    if (in_invariant && f_.old_values && k < 9) return "(" + v.name + " == old(" + v.name + "))";
    return "(" + v.name + " != " + list_value(v, 0) + ")";
  }

  json var_json(const Var& v) {
    json j;
    switch (v.kind) {
      case Var::integer:
      case Var::decimal:
        j["type"] = v.kind == Var::integer ? "int" : "decimal";
        if (v.kind == Var::decimal) j["scale"] = v.scale;
        j["min"] = units_text(v.lo, v.scale);
        j["max"] = units_text(v.hi, v.scale);
        j["initial"] = units_text(pick(static_cast<int>(v.lo), static_cast<int>(v.hi)), v.scale);
        break;
      case Var::boolean:
        j["type"] = "bool";
        j["initial"] = chance(50);
        break;
      case Var::enumeration:
        j["type"] = "enum";
        j["values"] = v.values;
        j["initial"] = one(v.values);
        break;
      case Var::list:
        j["type"] = "list";
        if (!v.values.empty())
          j["element"] = {{"type", "enum"}, {"values", v.values}};
        else if (v.scale == 0)
          j["element"] = "int";
        else
          j["element"] = {{"type", "decimal"}, {"scale", v.scale}};
        j["initial"] = json::array();
        j["max_length"] = 2;
        break;
    }
    return j;
  }

  json action(const std::string& id) {
    json a;
    a["id"] = id;
    a["cost"] = chance(20) ? json("1.5") : json(pick(1, 2));
    params_.clear();
    json params = json::object();
    if (f_.parameters && chance(55)) {
      const int n = chance(20) ? 2 : 1;
      for (int i = 0; i < n; ++i) {
        Param p;
        p.name = "p" + std::to_string(i);
        p.scale = f_.decimals && chance(25) ? 1 : 0;
        p.lo = pick(-2, 1);
        p.hi = p.lo + pick(0, 3);
        json pj = {{"type", p.scale == 0 ? "int" : "decimal"},
                   {"min", units_text(p.lo, p.scale)},
                   {"max", units_text(p.hi, p.scale)}};
        if (p.scale > 0) pj["scale"] = p.scale;
        if (chance(25)) pj["default"] = units_text(p.hi, p.scale);
        params[p.name] = pj;
        params_.push_back(p);
      }
      a["parameters"] = params;
    }
    if (chance(50)) a["requires"] = boolean(2, false);
    json effects = json::array();
    std::vector<int> order(vars_.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
    std::shuffle(order.begin(), order.end(), rng_);
    const int n_eff = pick(1, 2);
    for (int i = 0; i < n_eff; ++i) effects.push_back(effect(vars_[order[i]]));
    a["effects"] = effects;
    return a;
  }

  json effect(const Var& v) {
    json e = {{"variable", v.name}};
    switch (v.kind) {
      case Var::integer:
      case Var::decimal: {
        const int k = pick(0, 9);
        e["mode"] = k < 4 ? "set" : k < 6 ? "increment" : k < 8 ? "decrement" : "multiply";
        e["value"] = e["mode"] == "multiply" ? std::to_string(pick(-2, 3)) : number(2, v.scale);
        break;
      }
      case Var::boolean:
        e["mode"] = "set";
        e["value"] = boolean(1, false);
        break;
      case Var::enumeration:
        e["mode"] = "set";
        e["value"] = enum_value(v, 1);
        break;
      case Var::list: {
        const int k = pick(0, 9);
        e["mode"] = k < 5 ? "set" : k < 8 ? "append" : "remove";
        e["value"] = e["mode"] == "set" ? list_value(v, 1) : item(v, false);
        break;
      }
    }
    return e;
  }

  // An enum-valued expression assignable to `v`.
  std::string enum_value(const Var& v, int depth) {
    std::vector<const Var*> sources;  // enums whose values are all v's
    for (const Var& w : vars_) {
      if (w.kind != Var::enumeration || w.name == v.name) continue;
      bool subset = true;
      for (const auto& x : w.values)
        subset = subset && std::find(v.values.begin(), v.values.end(), x) != v.values.end();
      if (subset) sources.push_back(&w);
    }
    const int k = pick(0, 9);
    if (k < 4 || (sources.empty() && k < 8)) return "'" + one(v.values) + "'";
    if (k < 8) return one(sources)->name;
    if (depth > 0)
      return "(if " + boolean(depth - 1, false) + " then " + enum_value(v, depth - 1) + " else " +
             enum_value(v, depth - 1) + ")";
    return v.name;
  }

  // A numeric expression whose scale is at most `max_scale`.
  std::string number(int depth, int max_scale, bool in_invariant = false) {
    const int k = pick(0, 99);
    if (depth <= 0 || k < 45) return atom(max_scale, in_invariant);
    const std::string a = number(depth - 1, max_scale, in_invariant);
    if (k < 60) return "(" + a + " + " + number(depth - 1, max_scale, in_invariant) + ")";
    if (k < 72) return "(" + a + " - " + number(depth - 1, max_scale, in_invariant) + ")";
    if (k < 80) return "(" + a + " * " + std::to_string(pick(-2, 3)) + ")";
    if (k < 86) return "min(" + a + ", " + number(depth - 1, max_scale, in_invariant) + ")";
    if (k < 90) return "abs(" + a + ")";
    if (f_.if_scale_overflow && max_scale > 0 && chance(50))
      // Fits as an int, overflows at scale 1: the kernel and the encoder must agree.
      return "(if " + boolean(depth - 1, in_invariant) + " then 922337203685477581 else " +
             units_text(pick(-3, 3), 1) + ")";
    return "(if " + boolean(depth - 1, in_invariant) + " then " + a + " else " +
           number(depth - 1, max_scale, in_invariant) + ")";
  }

  std::string atom(int max_scale, bool in_invariant) {
    std::vector<std::string> names;
    for (const Var& v : vars_)
      if ((v.kind == Var::integer || v.kind == Var::decimal) && v.scale <= max_scale) {
        names.push_back(v.name);
        if (in_invariant && f_.old_values) names.push_back("old(" + v.name + ")");
      }
    if (!in_invariant)
      for (const Param& p : params_)
        if (p.scale <= max_scale) names.push_back(p.name);
    if (f_.if_scale_overflow && max_scale > 0 && chance(12))
      return "(if " + bool_atom(in_invariant) + " then 922337203685477581 else " +
             units_text(pick(-3, 3), 1) + ")";
    const int k = pick(0, 99);
    if (!names.empty() && k < 55) return one(names);
    if (f_.near_overflow && k < 62) {
      // Near the int64 edge at the literal's own scale: an overflow is one step away.
      const std::vector<std::string> edge{"9223372036854775807",
                                          "9223372036854775806",
                                          "4611686018427387904",
                                          "-9223372036854775807"};
      if (max_scale == 0 || chance(50)) return "(" + one(edge) + ")";
      return "(" + std::string(chance(50) ? "-" : "") + "922337203685477580.7)";
    }
    if (max_scale > 0 && k < 80) return units_text(pick(-15, 15), pick(1, max_scale));
    const int c = pick(-3, 3);
    return c < 0 ? "(" + std::to_string(c) + ")" : std::to_string(c);
  }

  // A bound, an enum or bool fact, or a transition rule: mostly satisfiable, often inductive or
  // not depending on the actions.
  std::string simple_invariant() {
    const Var& v = one(vars_);
    static const std::vector<std::string> ops{"<", "<=", ">", ">=", "!="};
    switch (v.kind) {
      case Var::integer:
      case Var::decimal:
        if (f_.old_values && chance(25))
          return "(" + v.name + " " + (chance(50) ? ">=" : "<=") + " old(" + v.name + "))";
        return "(" + v.name + " " + one(ops) + " " +
               units_text(pick(static_cast<int>(v.lo), static_cast<int>(v.hi)), v.scale) + ")";
      case Var::boolean:
        return chance(50) ? "(" + v.name + " -> " + bool_atom(false) + ")" : "!" + v.name;
      case Var::enumeration:
        return "(" + v.name + " != '" + one(v.values) + "')";
      case Var::list:
        return chance(50) ? "!" + list_atom(false) : list_atom(true);
    }
    return "true";
  }

  std::string boolean(int depth, bool in_invariant) {
    const int k = pick(0, 99);
    if (depth <= 0 || k < 50) return bool_atom(in_invariant);
    const std::string a = boolean(depth - 1, in_invariant);
    const std::string b = boolean(depth - 1, in_invariant);
    if (k < 62) return "(" + a + " && " + b + ")";
    if (k < 74) return "(" + a + " || " + b + ")";
    if (k < 82) return "(" + a + " -> " + b + ")";
    if (k < 90) return "!" + a;
    return "(if " + a + " then " + b + " else " + boolean(depth - 1, in_invariant) + ")";
  }

  std::string bool_atom(bool in_invariant) {
    std::vector<const Var*> bools, enums;
    for (const Var& v : vars_) {
      if (v.kind == Var::boolean) bools.push_back(&v);
      if (v.kind == Var::enumeration) enums.push_back(&v);
    }
    if (f_.lists && (!lists(false).empty() || !lists(true).empty()) && chance(30))
      return list_atom(in_invariant);
    const int k = pick(0, 99);
    if (!bools.empty() && k < 18) {
      const std::string n = one(bools)->name;
      return in_invariant && f_.old_values && chance(25) ? "(" + n + " != old(" + n + "))" : n;
    }
    if (!enums.empty() && k < 40) {
      const Var& e = *one(enums);
      const int j = pick(0, 9);
      if (j < 4) return "(" + e.name + " == '" + one(e.values) + "')";
      if (j < 6) return "(" + e.name + " in {'" + one(e.values) + "', '" + one(e.values) + "'})";
      if (j < 8 && in_invariant && f_.old_values) return "(" + e.name + " == old(" + e.name + "))";
      // Another enum: the same type, or (enum_cross) a subset or permutation of it.
      std::vector<const Var*> others;
      for (const Var* w : enums)
        if (w != &e && (f_.enum_cross || w->values == e.values)) others.push_back(w);
      if (!others.empty()) {
        const Var& w = *one(others);
        if (f_.enum_cross && chance(30)) {
          std::string lit = one(e.values);
          if (std::find(w.values.begin(), w.values.end(), lit) == w.values.end()) lit = w.values[0];
          if (std::find(e.values.begin(), e.values.end(), lit) == e.values.end())
            return "(" + e.name + " == " + w.name + ")";
          return "((if " + bool_atom(in_invariant) + " then " + e.name + " else " + w.name +
                 ") == '" + lit + "')";
        }
        return "(" + e.name + " " + (chance(70) ? "==" : "!=") + " " + w.name + ")";
      }
      return "(" + e.name + " != '" + one(e.values) + "')";
    }
    if (k < 42) return chance(50) ? "true" : "false";
    static const std::vector<std::string> ops{"<", "<=", ">", ">=", "==", "!="};
    return "(" + number(1, 2, in_invariant) + " " + one(ops) + " " + number(1, 2, in_invariant) +
           ")";
  }
};

}  // namespace

nlohmann::json generate(std::uint64_t seed, const Features& features) {
  return Gen(seed, features).spec();
}

}  // namespace clampai::oracle
