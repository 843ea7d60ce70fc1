// Labels, sinks, emits, attestors and native templates: their building, canonical form and the
// exact information-flow analysis (docs/HARDENING.md).
#include "clampai/kernel/security.hpp"

#include <algorithm>
#include <map>
#include <mutex>
#include <set>

#include "clampai/kernel/error.hpp"
#include "clampai/kernel/model.hpp"
#include "security_build.hpp"

namespace clampai::kernel {

namespace {
constexpr std::array<std::string_view, 4> kLabels{"PUBLIC", "INTERNAL", "PII", "SECRET"};
constexpr std::array<std::string_view, 5> kKinds{"command", "http", "all", "quorum", "external"};

std::mutex& compiler_mutex() {
  static std::mutex m;
  return m;
}
PatternCompiler& compiler_slot() {
  static PatternCompiler c;
  return c;
}
}  // namespace

std::string_view to_string(SecurityLabel label) { return kLabels[static_cast<int>(label)]; }

std::optional<SecurityLabel> parse_security_label(std::string_view name) {
  for (std::size_t i = 0; i < kLabels.size(); ++i)
    if (kLabels[i] == name) return static_cast<SecurityLabel>(i);
  return std::nullopt;
}

std::string_view to_string(AttestorKind kind) { return kKinds[static_cast<int>(kind)]; }

void set_pattern_compiler(PatternCompiler compiler) {
  std::lock_guard lock(compiler_mutex());
  compiler_slot() = std::move(compiler);
}

namespace detail {

void build_security(TaskModel& m,
                    const TaskDecl& decl,
                    const std::function<void(const SpecError&)>& problem) {
  auto attempt = [&](auto&& part) {
    try {
      part();
    } catch (const SpecError& e) {
      problem(e);
    }
  };
  m.sinks = decl.sinks;
  std::map<std::string, std::size_t, std::less<>> sink_index;
  for (std::size_t i = 0; i < m.sinks.size(); ++i) sink_index.emplace(m.sinks[i].name, i);

  std::map<std::string, std::size_t, std::less<>> attestor_index;
  for (std::size_t i = 0; i < decl.attestors.size(); ++i)
    attestor_index.emplace(decl.attestors[i].name, i);
  m.attestors = decl.attestors;
  auto resolve = [&](const std::string& name, const std::string& path) {
    const auto it = attestor_index.find(name);
    if (it == attestor_index.end())
      throw SpecError(path, "unknown attestor `" + name + "` (declare it under `attestors`)");
    return it->second;
  };
  // Composite members resolve, and no composite contains itself (depth-first, with colours).
  for (std::size_t i = 0; i < m.attestors.size(); ++i) {
    attempt([&] {
      const AttestorDecl& a = m.attestors[i];
      const std::string path = "attestors." + a.name;
      const std::string mpath = path + (a.kind == AttestorKind::all ? ".all" : ".of");
      std::set<std::string> seen;
      for (std::size_t k = 0; k < a.members.size(); ++k) {
        const std::string p = mpath + "[" + std::to_string(k) + "]";
        (void)resolve(a.members[k], p);
        if (!seen.insert(a.members[k]).second)
          throw SpecError(p, "attestor `" + a.members[k] + "` is listed twice");
      }
    });
  }
  std::vector<int> colour(m.attestors.size(), 0);
  std::function<void(std::size_t, std::vector<std::string>&)> visit =
      [&](std::size_t i, std::vector<std::string>& chain) {
        colour[i] = 1;
        chain.push_back(m.attestors[i].name);
        for (const std::string& member : m.attestors[i].members) {
          const auto it = attestor_index.find(member);
          if (it == attestor_index.end()) continue;
          if (colour[it->second] == 1) {
            std::string cycle;
            for (const std::string& c : chain) cycle += c + " -> ";
            throw SpecError("attestors." + m.attestors[i].name,
                            "attestors contain each other: " + cycle + member);
          }
          if (colour[it->second] == 0) visit(it->second, chain);
        }
        chain.pop_back();
        colour[i] = 2;
      };
  attempt([&] {
    for (std::size_t i = 0; i < m.attestors.size(); ++i) {
      std::vector<std::string> chain;
      if (colour[i] == 0) visit(i, chain);
    }
  });

  for (std::size_t i = 0; i < decl.actions.size() && i < m.actions.size(); ++i) {
    const ActionDecl& a = decl.actions[i];
    Action& out = m.actions[i];
    const std::string path = "actions[" + std::to_string(i) + "]";
    for (std::size_t k = 0; k < a.emits.size(); ++k) {
      attempt([&] {
        const std::string p = path + ".emits[" + std::to_string(k) + "]";
        const auto it = sink_index.find(a.emits[k].sink);
        if (it == sink_index.end())
          throw SpecError(p + ".sink",
                          "unknown sink `" + a.emits[k].sink + "` (declare it under `sinks`)");
        out.emits.push_back(
            Emit{it->second, parse_expression(a.emits[k].value, m.scope(&out), p + ".value")});
      });
    }
    for (std::size_t k = 0; k < a.attestations.size(); ++k) {
      attempt([&] {
        out.attestations.push_back(
            resolve(a.attestations[k], path + ".attestations[" + std::to_string(k) + "]"));
      });
    }
  }
  for (std::size_t k = 0; k < decl.goal_attestations.size(); ++k) {
    attempt([&] {
      const std::string p = "goal.attestations[" + std::to_string(k) + "]";
      if (decl.goal.empty()) throw SpecError(p, "attestations of the goal need a goal");
      m.goal_attestations.push_back(resolve(decl.goal_attestations[k], p));
    });
  }
  for (const ProbeDecl& probe : decl.probes) {
    attempt([&] {
      const std::string p = "probes." + probe.variable;
      const auto id = m.schema->find(probe.variable);
      if (!id)
        throw SpecError(p, "unknown variable `" + probe.variable + "` (a probe reads a variable)");
      const Type& t = m.variables[*id].type;
      if (probe.tolerance.units != 0 && t.kind() != Type::Kind::integer &&
          t.kind() != Type::Kind::decimal)
        throw SpecError(p + ".tolerance",
                        "a tolerance applies to numbers, not `" + probe.variable + "` of type " +
                            t.to_string());
      m.probes.push_back(probe);
    });
  }
  for (const ReadinessDecl& r : decl.readiness) {
    attempt([&] {
      const std::string p = "readiness." + r.dependency;
      if (!m.find_action(r.dependency)) throw SpecError(p, "unknown action `" + r.dependency + "`");
      const bool depended_on =
          std::any_of(decl.dependencies.begin(), decl.dependencies.end(), [&](const auto& edge) {
            return std::find(edge.second.begin(), edge.second.end(), r.dependency) !=
                   edge.second.end();
          });
      if (!depended_on)
        throw SpecError(p,
                        "no action depends on `" + r.dependency +
                            "` (a readiness probe applies on `dependencies` edges into it)");
      m.readiness.push_back(r);
    });
  }
}

void build_native_invariant(const TaskModel& m,
                            const InvariantDecl& decl,
                            const std::string& path,
                            Invariant& out) {
  const std::string vpath = path + (decl.patterns.empty() ? ".variable" : ".variables");
  std::vector<VarId> vars;
  for (std::size_t k = 0; k < decl.pattern_variables.size(); ++k) {
    const std::string& name = decl.pattern_variables[k];
    const std::string p = decl.patterns.empty() ? vpath : vpath + "[" + std::to_string(k) + "]";
    const auto id = m.schema->find(name);
    if (!id) throw SpecError(p, "unknown variable `" + name + "`");
    const Type& t = m.variables[*id].type;
    const bool list = t.kind() == Type::Kind::list;
    if (decl.patterns.empty()) {
      if (!list) throw SpecError(p, "`no_duplicate_ids` applies to a list, not " + t.to_string());
    } else {
      const Type& item = list && t.element() != nullptr ? *t.element() : t;
      if (item.kind() != Type::Kind::string && item.kind() != Type::Kind::enumeration)
        throw SpecError(p,
                        "a pattern template reads strings (or lists of them), not `" + name +
                            "` of type " + t.to_string());
    }
    vars.push_back(*id);
  }
  out.template_name = decl.template_name;
  if (decl.patterns.empty()) {
    const VarId id = vars.front();
    out.predicate = [id](const State& s) {
      const Value& v = s.get(id);
      if (!v.is_defined()) return true;
      const auto& items = v.as_list();
      for (std::size_t i = 0; i < items.size(); ++i)
        for (std::size_t j = i + 1; j < items.size(); ++j)
          if (items[i] == items[j]) return false;
      return true;
    };
    out.opaque_reason =
        "the `no_duplicate_ids` template is computed natively (no quantifier "
        "over list elements in the expression language)";
    return;
  }
  PatternCompiler compiler;
  {
    std::lock_guard lock(compiler_mutex());
    compiler = compiler_slot();
  }
  if (!compiler)
    throw SpecError(path + ".template",
                    "the `" + decl.template_name +
                        "` template needs a regular-expression engine: install RE2's with "
                        "clampai::hardening::install_pattern_engine()");
  out.predicate = compiler(vars, decl.patterns, path + ".patterns");
  out.opaque_reason = "the `" + decl.template_name +
                      "` template matches regular expressions (RE2), which the verifier "
                      "cannot reason about";
}

void add_security_form(JsonNode& root, const TaskModel& m) {
  JsonNode labels = JsonNode::make_object();
  for (const Variable& v : m.variables) {
    if (!v.labelled) continue;
    JsonNode& o = labels.add(v.name, JsonNode::make_object());
    o.add("label", JsonNode::make_string(std::string(to_string(v.label))));
    o.add("element_label", JsonNode::make_string(std::string(to_string(v.element_label))));
  }
  if (!labels.members.empty()) root.add("labels", std::move(labels));
  if (!m.sinks.empty()) {
    JsonNode& o = root.add("sinks", JsonNode::make_object());
    for (const SinkDecl& s : m.sinks)
      o.add(s.name, JsonNode::make_string(std::string(to_string(s.label))));
  }
  JsonNode acts = JsonNode::make_object();
  for (const Action& a : m.actions) {
    if (a.emits.empty() && a.attestations.empty()) continue;
    JsonNode& o = acts.add(a.id, JsonNode::make_object());
    JsonNode& es = o.add("emits", JsonNode::make_array());
    for (const Emit& e : a.emits) {
      JsonNode& eo = es.push(JsonNode::make_object());
      eo.add("sink", JsonNode::make_string(m.sinks[e.sink].name));
      eo.add("value", JsonNode::make_string(to_source(*e.value)));
    }
    JsonNode& as = o.add("attestations", JsonNode::make_array());
    for (std::size_t i : a.attestations) as.push(JsonNode::make_string(m.attestors[i].name));
  }
  if (!acts.members.empty()) root.add("action_gates", std::move(acts));
  if (!m.attestors.empty()) {
    JsonNode& o = root.add("attestors", JsonNode::make_object());
    for (const AttestorDecl& a : m.attestors) {
      JsonNode& ao = o.add(a.name, JsonNode::make_object());
      ao.add("kind", JsonNode::make_string(std::string(to_string(a.kind))));
      JsonNode& argv = ao.add("argv", JsonNode::make_array());
      for (const std::string& s : a.argv) argv.push(JsonNode::make_string(s));
      ao.add("url", JsonNode::make_string(a.url));
      ao.add("method", JsonNode::make_string(a.method));
      ao.add("body", JsonNode::make_string(a.body));
      ao.add("expect_status", JsonNode::make_string(std::to_string(a.expect_status)));
      ao.add("expect_body_contains", JsonNode::make_string(a.expect_body_contains.value_or("")));
      JsonNode& ms = ao.add("members", JsonNode::make_array());
      for (const std::string& s : a.members) ms.push(JsonNode::make_string(s));
      ao.add("quorum", JsonNode::make_string(std::to_string(a.quorum)));
      ao.add("timeout_ms", JsonNode::make_string(std::to_string(a.timeout_ms.value_or(-1))));
      ao.add("max_output_bytes",
             JsonNode::make_string(std::to_string(a.max_output_bytes.value_or(-1))));
    }
  }
  if (!m.goal_attestations.empty()) {
    JsonNode& g = root.add("goal_attestations", JsonNode::make_array());
    for (std::size_t i : m.goal_attestations) g.push(JsonNode::make_string(m.attestors[i].name));
  }
  auto check_form = [](JsonNode& o, const AttestorDecl& a) {
    o.add("kind", JsonNode::make_string(std::string(to_string(a.kind))));
    JsonNode& argv = o.add("argv", JsonNode::make_array());
    for (const std::string& s : a.argv) argv.push(JsonNode::make_string(s));
    o.add("url", JsonNode::make_string(a.url));
    o.add("method", JsonNode::make_string(a.method));
    o.add("body", JsonNode::make_string(a.body));
    o.add("expect_status", JsonNode::make_string(std::to_string(a.expect_status)));
    o.add("expect_body_contains", JsonNode::make_string(a.expect_body_contains.value_or("")));
    o.add("timeout_ms", JsonNode::make_string(std::to_string(a.timeout_ms.value_or(-1))));
    o.add("max_output_bytes",
          JsonNode::make_string(std::to_string(a.max_output_bytes.value_or(-1))));
  };
  if (!m.probes.empty()) {
    JsonNode& o = root.add("probes", JsonNode::make_object());
    for (const ProbeDecl& p : m.probes) {
      JsonNode& po = o.add(p.variable, JsonNode::make_object());
      check_form(po, p.check);
      po.add("tolerance", JsonNode::make_string(p.tolerance.to_string()));
    }
  }
  if (!m.readiness.empty()) {
    JsonNode& o = root.add("readiness", JsonNode::make_object());
    for (const ReadinessDecl& r : m.readiness) {
      JsonNode& ro = o.add(r.dependency, JsonNode::make_object());
      check_form(ro, r.check);
      ro.add("initial_delay_ms", JsonNode::make_string(std::to_string(r.initial_delay_ms)));
      ro.add("multiplier", JsonNode::make_string(r.multiplier.to_string()));
      ro.add("max_delay_ms", JsonNode::make_string(std::to_string(r.max_delay_ms)));
      ro.add("deadline_ms", JsonNode::make_string(std::to_string(r.deadline_ms)));
    }
  }
}

void add_native_invariants_form(JsonNode& root, const TaskDecl& decl) {
  JsonNode natives = JsonNode::make_array();
  for (const InvariantDecl& inv : decl.invariants) {
    if (inv.pattern_variables.empty()) continue;
    JsonNode& o = natives.push(JsonNode::make_object());
    o.add("name", JsonNode::make_string(inv.name));
    o.add("template", JsonNode::make_string(inv.template_name));
    JsonNode& vs = o.add("variables", JsonNode::make_array());
    for (const std::string& v : inv.pattern_variables) vs.push(JsonNode::make_string(v));
    JsonNode& ps = o.add("patterns", JsonNode::make_array());
    for (const std::string& p : inv.patterns) ps.push(JsonNode::make_string(p));
  }
  if (!natives.items.empty()) root.add("native_invariants", std::move(natives));
}

}  // namespace detail

// ---- information flow -------------------------------------------------------------------------

namespace {

struct Source {
  std::string name;  // `x`, or `x[]` for the elements of list x
  SecurityLabel label;
  bool operator<(const Source& o) const { return name < o.name; }
};

bool is_list(const TaskModel& m, VarId id) {
  return m.variables[id].type.kind() == Type::Kind::list;
}

void add_whole(const TaskModel& m, VarId id, std::set<Source>& out) {
  const Variable& v = m.variables[id];
  out.insert(Source{v.name, v.label});
  if (is_list(m, id)) out.insert(Source{v.name + "[]", v.element_label});
}

// The sources an expression's value depends on: every variable it reads, a list's elements
// apart from its length (`len(x)` reveals the length only), both branches and the condition of
// an `if`.
void sources(const TaskModel& m, const Expr& e, std::set<Source>& out) {
  switch (e.op) {
    case ExprOp::variable:
    case ExprOp::old_variable:
      add_whole(m, e.index, out);
      return;
    case ExprOp::defined:
      out.insert(Source{m.variables[e.index].name, m.variables[e.index].label});
      return;
    case ExprOp::len: {
      const Expr& arg = *e.args[0];
      if (arg.op == ExprOp::variable || arg.op == ExprOp::old_variable) {
        out.insert(Source{m.variables[arg.index].name, m.variables[arg.index].label});
        return;
      }
      break;
    }
    default:
      break;
  }
  for (const auto& a : e.args) sources(m, *a, out);
}

}  // namespace

std::vector<InformationFlow> information_flows(const TaskModel& m, bool downward_only) {
  std::vector<InformationFlow> out;
  for (std::size_t ai = 0; ai < m.actions.size(); ++ai) {
    const Action& a = m.actions[ai];
    const std::string apath = "actions[" + std::to_string(ai) + "]";
    std::set<Source> pc;  // what the action's running at all reveals: its guard
    if (a.guard) sources(m, *a.guard, pc);
    auto flow = [&](const std::set<Source>& from,
                    const std::string& target,
                    SecurityLabel target_label,
                    const std::string& path,
                    const Expr* via) {
      for (const Source& s : from) {
        if (s.label == SecurityLabel::public_data) continue;  // unlabelled data is public
        if (s.name == target) continue;                       // x to itself
        InformationFlow f{
            ai, s.name, s.label, target, target_label, path, via ? to_source(*via) : std::string()};
        if (downward_only && !f.downward()) continue;
        out.push_back(std::move(f));
      }
    };
    for (std::size_t k = 0; k < a.effects.size(); ++k) {
      const Effect& e = a.effects[k];
      const Variable& v = m.variables[e.variable];
      const std::string vpath = apath + ".effects[" + std::to_string(k) + "].value";
      std::set<Source> value;
      if (e.value) sources(m, *e.value, value);
      const bool list = is_list(m, e.variable);
      const std::string elems = v.name + "[]";
      switch (e.mode) {
        case EffectMode::set:
          flow(value, v.name, v.label, vpath, e.value.get());
          if (list) flow(value, elems, v.element_label, vpath, e.value.get());
          break;
        case EffectMode::increment:
        case EffectMode::decrement:
        case EffectMode::multiply:
          flow(value, v.name, v.label, vpath, e.value.get());
          break;
        case EffectMode::append:
          flow(value, elems, v.element_label, vpath, e.value.get());
          break;
        case EffectMode::remove: {
          // Whether an element is removed (the new length) depends on the value and on the
          // elements; which elements remain depends on both too.
          std::set<Source> with_elements = value;
          with_elements.insert(Source{elems, v.element_label});
          flow(with_elements, v.name, v.label, vpath, e.value.get());
          flow(value, elems, v.element_label, vpath, e.value.get());
          break;
        }
        case EffectMode::del:
          break;
      }
      // The guard decides whether the write happens at all.
      flow(pc, v.name, v.label, apath + ".requires", a.guard.get());
      if (list && e.mode != EffectMode::del)
        flow(pc, elems, v.element_label, apath + ".requires", a.guard.get());
    }
    for (std::size_t k = 0; k < a.emits.size(); ++k) {
      const Emit& em = a.emits[k];
      const SinkDecl& sink = m.sinks[em.sink];
      std::set<Source> value;
      sources(m, *em.value, value);
      const std::string target = "sink:" + sink.name;
      flow(value,
           target,
           sink.label,
           apath + ".emits[" + std::to_string(k) + "].value",
           em.value.get());
      flow(pc, target, sink.label, apath + ".requires", a.guard.get());
    }
  }
  return out;
}

bool needs_reference_monitor(const TaskModel& m) {
  const bool gated = std::any_of(
      m.actions.begin(), m.actions.end(), [](const Action& a) { return !a.attestations.empty(); });
  return gated || !m.goal_attestations.empty() || !m.probes.empty() || !m.readiness.empty() ||
         !information_flows(m, /*downward_only=*/true).empty();
}

}  // namespace clampai::kernel
