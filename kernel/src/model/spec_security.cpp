// Spec JSON -> the monitor's declarations and the invariant library's expansions. Structure
// only (names, kinds, required keys); build_model checks that names resolve and types fit.
#include "spec_security.hpp"

#include <algorithm>
#include <map>

#include "clampai/kernel/error.hpp"

namespace clampai::kernel::detail {
namespace {

using Kind = JsonNode::Kind;

std::vector<std::string> strings(const JsonNode& n, const std::string& path) {
  expect_kind(n, Kind::array, path);
  std::vector<std::string> out;
  for (std::size_t i = 0; i < n.items.size(); ++i) {
    expect_kind(n.items[i], Kind::string, at_index(path, i));
    if (n.items[i].text.empty()) throw SpecError(at_index(path, i), "empty name");
    out.push_back(n.items[i].text);
  }
  return out;
}

std::optional<std::int64_t> opt_count(const JsonNode& obj,
                                      const std::string& path,
                                      const char* key) {
  const JsonNode* n = obj.find(key);
  if (n == nullptr) return std::nullopt;
  return get_count(*n, join(path, key));
}

// A JSON literal as expression source: a number's exact decimal, a quoted string, a bool.
std::string literal(const JsonNode& n, const std::string& path) {
  switch (n.kind) {
    case Kind::number:
      return get_decimal(n, path).to_string();
    case Kind::boolean:
      return n.boolean ? "true" : "false";
    case Kind::string: {
      std::string s = "'";
      for (char c : n.text) {
        if (c == '\'' || c == '\\') s += '\\';
        s += c;
      }
      return s + "'";
    }
    default:
      throw SpecError(path, "expected a number, a string or a bool, found " + describe(n));
  }
}

std::string number(const JsonNode& obj, const std::string& path, const char* key) {
  const JsonNode& n = required(obj, path, key);
  if (n.kind != Kind::number && n.kind != Kind::string)
    throw SpecError(join(path, key), "expected a number, found " + describe(n));
  return "(" + get_decimal(n, join(path, key)).to_string() + ")";
}

std::string name(const JsonNode& obj, const std::string& path, const char* key) {
  const JsonNode& n = required(obj, path, key);
  expect_kind(n, Kind::string, join(path, key));
  if (n.text.empty()) throw SpecError(join(path, key), "empty variable name");
  return n.text;
}

// Built-in patterns of the PII and secret templates (RE2 syntax). Heuristic by nature: they
// catch the common shapes, not every encoding (docs/HARDENING.md).
const std::map<std::string, std::string, std::less<>>& builtin_patterns() {
  static const std::map<std::string, std::string, std::less<>> kPatterns{
      {"email", R"([A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,})"},
      {"ssn", R"(\b\d{3}-\d{2}-\d{4}\b)"},
      {"credit_card", R"(\b(?:\d[ -]?){12,15}\d\b)"},
      {"phone", R"((?:\+\d{1,3}[ .-]?)?\(?\b\d{3}\)?[ .-]?\d{3}[ .-]\d{4}\b)"},
      {"iban", R"(\b[A-Z]{2}\d{2}[A-Z0-9]{11,30}\b)"},
      {"aws_access_key", R"(\b(?:AKIA|ASIA)[0-9A-Z]{16}\b)"},
      {"private_key", R"(-----BEGIN [A-Z ]*PRIVATE KEY-----)"},
      {"github_token", R"(\bgh[pousr]_[A-Za-z0-9]{36}\b)"},
      {"bearer_token", R"((?i)\bbearer\s+[A-Za-z0-9._~+/-]{20,})"},
      {"credential_assignment",
       R"((?i)\b(?:api[_-]?key|secret|token|password|passwd)\s*[:=]\s*\S{8,})"},
  };
  return kPatterns;
}

std::vector<std::string> pattern_list(const JsonNode* n,
                                      const std::string& path,
                                      std::vector<std::string> defaults) {
  if (n == nullptr) {
    for (std::string& d : defaults) d = builtin_patterns().find(d)->second;
    return defaults;
  }
  std::vector<std::string> out;
  const std::string p = join(path, "patterns");
  expect_kind(*n, Kind::array, p);
  if (n->items.empty()) throw SpecError(p, "give at least one pattern");
  for (std::size_t i = 0; i < n->items.size(); ++i) {
    const JsonNode& item = n->items[i];
    expect_kind(item, Kind::string, at_index(p, i));
    if (item.text.rfind("regex:", 0) == 0) {
      if (item.text.size() == 6) throw SpecError(at_index(p, i), "empty regular expression");
      out.push_back(item.text.substr(6));
      continue;
    }
    const auto it = builtin_patterns().find(item.text);
    if (it == builtin_patterns().end()) {
      std::string known;
      for (const auto& [k, v] : builtin_patterns()) known += (known.empty() ? "" : ", ") + k;
      throw SpecError(at_index(p, i),
                      "unknown pattern `" + item.text + "` (built in: " + known +
                          "; or `regex:` followed by an RE2 expression)");
    }
    out.push_back(it->second);
  }
  return out;
}

}  // namespace

std::optional<SecurityLabel> get_label(const JsonNode& obj,
                                       const std::string& path,
                                       const char* key) {
  const JsonNode* n = obj.find(key);
  if (n == nullptr) return std::nullopt;
  expect_kind(*n, Kind::string, join(path, key));
  const auto label = parse_security_label(n->text);
  if (!label)
    throw SpecError(join(path, key),
                    "unknown label `" + n->text + "` (expected PUBLIC, INTERNAL, PII or SECRET)");
  return label;
}

std::vector<EmitDecl> parse_emits(const JsonNode& n, const std::string& path) {
  expect_kind(n, Kind::array, path);
  std::vector<EmitDecl> out;
  for (std::size_t i = 0; i < n.items.size(); ++i) {
    const JsonNode& e = n.items[i];
    const std::string p = at_index(path, i);
    expect_kind(e, Kind::object, p);
    allow_keys(e, p, {"sink", "value"});
    EmitDecl d;
    d.sink = name(e, p, "sink");
    const JsonNode& v = required(e, p, "value");
    expect_kind(v, Kind::string, join(p, "value"));
    if (v.text.empty()) throw SpecError(join(p, "value"), "empty expression");
    d.value = v.text;
    out.push_back(std::move(d));
  }
  return out;
}

std::vector<std::string> parse_attestation_names(const JsonNode& n, const std::string& path) {
  return strings(n, path);
}

std::vector<SinkDecl> parse_sinks(const JsonNode& n) {
  expect_kind(n, Kind::object, "sinks");
  std::vector<SinkDecl> out;
  for (const auto& [sink_name, s] : n.members) {
    const std::string p = join("sinks", sink_name);
    expect_kind(s, Kind::object, p);
    allow_keys(s, p, {"label", "description"});
    SinkDecl d;
    d.name = sink_name;
    const auto label = get_label(s, p, "label");
    if (!label) throw SpecError(p, "a sink needs a `label`");
    d.label = *label;
    d.description = get_string(s, p, "description");
    out.push_back(std::move(d));
  }
  return out;
}

// The `command` or `http` member of `a` (an attestor, a probe) into `d`; false if it has
// neither.
namespace {
bool parse_check(const JsonNode& a, const std::string& p, AttestorDecl& d) {
  if (const JsonNode* c = a.find("command")) {
    d.kind = AttestorKind::command;
    d.argv = strings(*c, join(p, "command"));
    if (d.argv.empty()) throw SpecError(join(p, "command"), "empty command");
    if (d.argv.front().front() != '/')
      throw SpecError(at_index(join(p, "command"), 0),
                      "`" + d.argv.front() +
                          "` is not an absolute path (programs are never looked up in PATH)");
  } else if (const JsonNode* h = a.find("http")) {
    d.kind = AttestorKind::http;
    const std::string hp = join(p, "http");
    expect_kind(*h, Kind::object, hp);
    allow_keys(*h, hp, {"url", "method", "body", "expect_status", "expect_body_contains"});
    d.url = get_string(*h, hp, "url");
    if (d.url.rfind("http://", 0) != 0 && d.url.rfind("https://", 0) != 0)
      throw SpecError(join(hp, "url"), "expected an http:// or https:// URL");
    d.method = get_string(*h, hp, "method", "GET");
    if (d.method != "GET" && d.method != "HEAD" && d.method != "POST")
      throw SpecError(join(hp, "method"),
                      "unknown method `" + d.method + "` (expected GET, HEAD or POST)");
    d.body = get_string(*h, hp, "body");
    if (const JsonNode* s = h->find("expect_status"))
      d.expect_status = get_count(*s, join(hp, "expect_status"));
    if (h->find("expect_body_contains"))
      d.expect_body_contains = get_string(*h, hp, "expect_body_contains");
  } else {
    return false;
  }
  return true;
}

// A probe's check: exactly one of `command` and `http`, and its limits.
AttestorDecl probe_check(const JsonNode& a, const std::string& p, const char* what) {
  AttestorDecl d;
  d.name = p;
  d.description = get_string(a, p, "description");
  d.timeout_ms = opt_count(a, p, "timeout_ms");
  d.max_output_bytes = opt_count(a, p, "max_output_bytes");
  if (a.find("command") && a.find("http"))
    throw SpecError(p, std::string("a ") + what + " is either a `command` or an `http` check");
  if (!parse_check(a, p, d))
    throw SpecError(p,
                    std::string("a ") + what +
                        " needs a `command` or an `http` check (C++ callbacks are API-only: "
                        "hardening::MonitorOptions)");
  return d;
}

std::int64_t millis(const JsonNode& a, const std::string& p, const char* key, std::int64_t dflt) {
  return opt_count(a, p, key).value_or(dflt);
}
}  // namespace

std::vector<ProbeDecl> parse_probes(const JsonNode& n) {
  expect_kind(n, Kind::object, "probes");
  std::vector<ProbeDecl> out;
  for (const auto& [variable, a] : n.members) {
    const std::string p = join("probes", variable);
    expect_kind(a, Kind::object, p);
    allow_keys(
        a, p, {"command", "http", "tolerance", "timeout_ms", "max_output_bytes", "description"});
    ProbeDecl d;
    d.variable = variable;
    d.check = probe_check(a, p, "probe");
    if (const JsonNode* t = a.find("tolerance")) {
      d.tolerance = get_decimal(*t, join(p, "tolerance"));
      if (d.tolerance.units < 0)
        throw SpecError(join(p, "tolerance"),
                        "must not be negative, got " + d.tolerance.to_string());
    }
    out.push_back(std::move(d));
  }
  return out;
}

std::vector<ReadinessDecl> parse_readiness(const JsonNode& n) {
  expect_kind(n, Kind::object, "readiness");
  std::vector<ReadinessDecl> out;
  for (const auto& [dependency, a] : n.members) {
    const std::string p = join("readiness", dependency);
    expect_kind(a, Kind::object, p);
    allow_keys(a,
               p,
               {"command",
                "http",
                "timeout_ms",
                "max_output_bytes",
                "initial_delay_ms",
                "multiplier",
                "max_delay_ms",
                "deadline_ms",
                "description"});
    ReadinessDecl d;
    d.dependency = dependency;
    d.check = probe_check(a, p, "readiness probe");
    d.initial_delay_ms = millis(a, p, "initial_delay_ms", d.initial_delay_ms);
    d.max_delay_ms = millis(a, p, "max_delay_ms", d.max_delay_ms);
    d.deadline_ms = millis(a, p, "deadline_ms", d.deadline_ms);
    if (const JsonNode* m = a.find("multiplier"))
      d.multiplier = get_decimal(*m, join(p, "multiplier"));
    if (d.initial_delay_ms < 1) throw SpecError(join(p, "initial_delay_ms"), "must be at least 1");
    if (d.max_delay_ms < d.initial_delay_ms)
      throw SpecError(join(p, "max_delay_ms"),
                      "must be at least `initial_delay_ms` (" + std::to_string(d.initial_delay_ms) +
                          "), got " + std::to_string(d.max_delay_ms));
    if (d.multiplier < Decimal{1, 0})
      throw SpecError(join(p, "multiplier"), "must be at least 1, got " + d.multiplier.to_string());
    out.push_back(std::move(d));
  }
  return out;
}

std::vector<AttestorDecl> parse_attestors(const JsonNode& n) {
  expect_kind(n, Kind::object, "attestors");
  std::vector<AttestorDecl> out;
  for (const auto& [attestor_name, a] : n.members) {
    const std::string p = join("attestors", attestor_name);
    expect_kind(a, Kind::object, p);
    allow_keys(a,
               p,
               {"command",
                "http",
                "all",
                "quorum",
                "of",
                "external",
                "timeout_ms",
                "max_output_bytes",
                "description"});
    AttestorDecl d;
    d.name = attestor_name;
    d.description = get_string(a, p, "description");
    d.timeout_ms = opt_count(a, p, "timeout_ms");
    d.max_output_bytes = opt_count(a, p, "max_output_bytes");
    int kinds = 0;
    for (const char* k : {"command", "http", "all", "quorum", "external"})
      kinds += a.find(k) ? 1 : 0;
    if (kinds != 1)
      throw SpecError(p,
                      "an attestor is exactly one of `command`, `http`, `all`, `quorum` or "
                      "`external`");
    if (a.find("of") && !a.find("quorum"))
      throw SpecError(join(p, "of"), "`of` goes with `quorum`");
    if (parse_check(a, p, d)) {
      // a command or an http check
    } else if (const JsonNode* all = a.find("all")) {
      d.kind = AttestorKind::all;
      d.members = strings(*all, join(p, "all"));
    } else if (const JsonNode* q = a.find("quorum")) {
      d.kind = AttestorKind::quorum;
      d.quorum = get_count(*q, join(p, "quorum"));
      d.members = strings(required(a, p, "of"), join(p, "of"));
      if (d.quorum < 1 || d.quorum > static_cast<std::int64_t>(d.members.size()))
        throw SpecError(join(p, "quorum"),
                        "must be between 1 and the " + std::to_string(d.members.size()) +
                            " attestors of `of`, got " + std::to_string(d.quorum));
    } else {
      const JsonNode& e = *a.find("external");
      if (e.kind != Kind::boolean || !e.boolean)
        throw SpecError(join(p, "external"), "expected `true` (supplied by the host program)");
      d.kind = AttestorKind::external;
    }
    if ((d.kind == AttestorKind::all || d.kind == AttestorKind::quorum) && d.members.empty())
      throw SpecError(p, "a composite attestor needs members");
    out.push_back(std::move(d));
  }
  return out;
}

void parse_invariant_template(const JsonNode& n, const std::string& path, InvariantDecl& inv) {
  const JsonNode& t = required(n, path, "template");
  expect_kind(t, Kind::string, join(path, "template"));
  const std::string& tn = t.text;
  inv.template_name = tn;
  auto keys = [&](std::initializer_list<std::string_view> params) {
    std::vector<std::string_view> all{
        "name", "template", "enforcement", "description", "suggestion"};
    all.insert(all.end(), params.begin(), params.end());
    for (const auto& [key, value] : n.members) {
      if (std::find(all.begin(), all.end(), key) == all.end()) {
        std::string expected;
        for (std::string_view k : params)
          expected += (expected.empty() ? "" : ", ") + std::string(k);
        throw SpecError(join(path, key),
                        "unknown key `" + key + "` for template `" + tn +
                            "` (its parameters: " + expected + ")");
      }
    }
  };
  auto names = [&](const char* key) {
    const std::vector<std::string> v = strings(required(n, path, key), join(path, key));
    if (v.empty()) throw SpecError(join(path, key), "give at least one variable");
    return v;
  };
  auto conj = [](const std::vector<std::string>& parts) {
    std::string s;
    for (const std::string& part : parts) s += (s.empty() ? "" : " && ") + part;
    return s;
  };
  if (tn == "value_range") {
    keys({"variable", "min", "max"});
    const std::string x = name(n, path, "variable");
    std::vector<std::string> parts;
    if (n.find("min")) parts.push_back(x + " >= " + number(n, path, "min"));
    if (n.find("max")) parts.push_back(x + " <= " + number(n, path, "max"));
    if (parts.empty()) throw SpecError(path, "`value_range` needs `min`, `max` or both");
    inv.expression = conj(parts);
  } else if (tn == "resource_ceiling" || tn == "rate_limit") {
    keys({"variable", "max"});
    inv.expression = name(n, path, "variable") + " <= " + number(n, path, "max");
  } else if (tn == "no_delete") {
    keys({"variable"});
    inv.expression = "defined(" + name(n, path, "variable") + ")";
  } else if (tn == "required_fields") {
    keys({"variables"});
    std::vector<std::string> parts;
    for (const std::string& v : names("variables")) parts.push_back("defined(" + v + ")");
    inv.expression = conj(parts);
  } else if (tn == "read_only") {
    keys({"variables"});
    std::vector<std::string> parts;
    for (const std::string& v : names("variables")) parts.push_back(v + " == old(" + v + ")");
    inv.expression = conj(parts);
  } else if (tn == "allowed_values") {
    keys({"variable", "values"});
    const JsonNode& vs = required(n, path, "values");
    expect_kind(vs, Kind::array, join(path, "values"));
    if (vs.items.empty()) throw SpecError(join(path, "values"), "give at least one value");
    std::string set;
    for (std::size_t i = 0; i < vs.items.size(); ++i)
      set += (i ? ", " : "") + literal(vs.items[i], at_index(join(path, "values"), i));
    inv.expression = name(n, path, "variable") + " in {" + set + "}";
  } else if (tn == "monotone") {
    keys({"variable", "direction", "strict"});
    const std::string x = name(n, path, "variable");
    const std::string dir = get_string(n, path, "direction", "increasing");
    if (dir != "increasing" && dir != "decreasing")
      throw SpecError(join(path, "direction"),
                      "unknown direction `" + dir + "` (expected increasing or decreasing)");
    const bool strict = get_bool(n, path, "strict", false);
    const char* op = dir == "increasing" ? (strict ? " > " : " >= ") : (strict ? " < " : " <= ");
    inv.expression = x + op + "old(" + x + ")";
  } else if (tn == "list_length") {
    keys({"variable", "min", "max"});
    const std::string x = name(n, path, "variable");
    std::vector<std::string> parts;
    if (n.find("min")) parts.push_back("len(" + x + ") >= " + number(n, path, "min"));
    if (n.find("max")) parts.push_back("len(" + x + ") <= " + number(n, path, "max"));
    if (parts.empty()) throw SpecError(path, "`list_length` needs `min`, `max` or both");
    inv.expression = conj(parts);
  } else if (tn == "time_window_rate") {
    keys({"count", "window_start", "clock", "window", "max"});
    inv.expression = "(" + name(n, path, "clock") + " - " + name(n, path, "window_start") + " < " +
                     number(n, path, "window") + ") -> (" + name(n, path, "count") +
                     " <= " + number(n, path, "max") + ")";
  } else if (tn == "no_duplicate_ids") {
    keys({"variable"});
    inv.pattern_variables = {name(n, path, "variable")};
  } else if (tn == "pii_pattern" || tn == "secret_pattern") {
    keys({"variables", "patterns"});
    inv.pattern_variables = names("variables");
    inv.patterns =
        pattern_list(n.find("patterns"),
                     path,
                     tn == "pii_pattern"
                         ? std::vector<std::string>{"email", "ssn", "credit_card", "phone", "iban"}
                         : std::vector<std::string>{"aws_access_key",
                                                    "private_key",
                                                    "github_token",
                                                    "bearer_token",
                                                    "credential_assignment"});
  } else {
    throw SpecError(join(path, "template"),
                    "unknown template `" + tn +
                        "` (expected value_range, resource_ceiling, rate_limit, no_delete, "
                        "required_fields, read_only, allowed_values, monotone, list_length, "
                        "time_window_rate, no_duplicate_ids, pii_pattern or secret_pattern)");
  }
}

}  // namespace clampai::kernel::detail
