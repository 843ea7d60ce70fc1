#include "compose_cmd.hpp"

#include <cctype>
#include <cstdlib>
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>

#include "clampai/composition/compose.hpp"
#include "clampai/kernel/error.hpp"
#include "clampai/kernel/spec_loader.hpp"
#include "output.hpp"

namespace clampai::cli {

namespace cc = clampai::composition;
namespace cv = clampai::verifier;
using nlohmann::json;

namespace {

struct Args {
  std::string manifest;
  std::string format = "text";
  std::string cache;
  std::string cache_key_file;
  std::string graph;
  unsigned jobs = default_jobs();
  unsigned timeout_ms = 10000;
  double timeout_s = 0;
  std::size_t max_obligations = cc::ComposeOptions::kDefaultMaxObligations;
  bool fail_on_unknown = false;
  bool show_proved = false;
} args;

std::string upper(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

json location_json(const std::string& file, const clampai::kernel::SourceLoc& loc) {
  json j = {{"file", file}};
  if (loc.line > 0) {
    j["line"] = loc.line;
    j["column"] = loc.column;
  }
  return j;
}

json counterexample_json(const cv::Counterexample& c) {
  json j = {{"pre", named_values_json(c.pre)}};
  if (!c.params.empty()) j["params"] = named_values_json(c.params);
  if (!c.post.empty()) j["post"] = named_values_json(c.post);
  return j;
}

json report_json(const cc::ComposeReport& r) {
  json tasks = json::array();
  for (const auto& t : r.tasks) {
    json findings = json::array();
    for (const auto& f : t.findings) {
      json fj = {{"id", f.id},
                 {"kind", std::string(cv::to_string(f.kind))},
                 {"verdict", std::string(cv::to_string(f.verdict))},
                 {"reason", f.reason}};
      if (f.loc.line > 0) fj["location"] = location_json(t.file, f.loc);
      if (f.counterexample) fj["counterexample"] = counterexample_json(*f.counterexample);
      findings.push_back(fj);
    }
    json tj = {{"name", t.name},
               {"spec", t.file},
               {"digest", t.digest},
               {"reused", t.reused},
               {"proved", t.proved},
               {"refuted", t.refuted},
               {"unknown", t.unknown},
               {"warnings", t.warnings},
               {"findings", findings}};
    if (!t.cache_note.empty()) tj["cache_note"] = t.cache_note;
    tasks.push_back(tj);
  }
  json obligations = json::array();
  for (const auto& o : r.obligations) {
    json oj = {{"id", o.id},
               {"kind", std::string(cc::to_string(o.kind))},
               {"verdict", std::string(cv::to_string(o.verdict))},
               {"reason", o.reason},
               {"tasks", o.tasks},
               {"location", location_json(o.file, o.loc)}};
    if (o.counterexample) oj["counterexample"] = counterexample_json(*o.counterexample);
    obligations.push_back(oj);
  }
  return {{"manifest", args.manifest},
          {"summary",
           {{"proved", r.proved},
            {"refuted", r.refuted},
            {"unknown", r.unknown},
            {"tasks", r.tasks.size()},
            {"reused", r.reused},
            {"seconds", r.seconds}}},
          {"tasks", tasks},
          {"obligations", obligations}};
}

void print_text(const cc::ComposeReport& r) {
  std::size_t width = 4;
  for (const auto& t : r.tasks) width = std::max(width, t.name.size());
  for (const auto& t : r.tasks) {
    std::cout << "task " << std::left << std::setw(static_cast<int>(width)) << t.name << std::right
              << "  " << t.proved << " proved, " << t.refuted << " refuted, " << t.unknown
              << " unknown" << (t.reused ? "  (certificate reused)" : "") << "\n";
    if (!t.cache_note.empty()) std::cout << "    " << t.cache_note << "\n";
    for (const auto& f : t.findings) {
      if (f.kind == cv::ObligationKind::lint) continue;
      std::cout << "    " << upper(cv::to_string(f.verdict)) << " " << f.id << ": " << f.reason
                << "\n";
      if (f.loc.line > 0)
        std::cout << "    at " << t.file << ":" << f.loc.line << ":" << f.loc.column << "\n";
      if (f.counterexample) print_counterexample(*f.counterexample);
    }
  }
  for (const auto& o : r.obligations) {
    if (o.kind == cc::ObligationKind::task) continue;
    if (o.verdict == cv::VerdictKind::proved && !args.show_proved) continue;
    std::cout << upper(cv::to_string(o.verdict)) << " " << o.id << ": " << o.reason << "\n";
    if (o.verdict != cv::VerdictKind::proved && !o.file.empty()) {
      std::cout << "    at " << o.file;
      if (o.loc.line > 0) std::cout << ":" << o.loc.line << ":" << o.loc.column;
      std::cout << "\n";
    }
    if (o.counterexample) print_counterexample(*o.counterexample);
  }
  std::cout << "summary: " << r.proved + r.refuted + r.unknown << " obligations: " << r.proved
            << " proved, " << r.refuted << " refuted, " << r.unknown << " unknown; "
            << r.tasks.size() << " task" << (r.tasks.size() == 1 ? "" : "s") << ", " << r.reused
            << " certificate" << (r.reused == 1 ? "" : "s") << " reused (" << std::fixed
            << std::setprecision(3) << r.seconds << " s)\n";
}

json sarif(const cc::ComposeReport& r) {
  json results = json::array();
  auto result = [&](const std::string& rule,
                    cv::VerdictKind verdict,
                    const std::string& text,
                    const std::string& file,
                    const clampai::kernel::SourceLoc& loc) {
    json physical = {{"artifactLocation", {{"uri", file}}}};
    if (loc.line > 0) physical["region"] = {{"startLine", loc.line}, {"startColumn", loc.column}};
    results.push_back(
        {{"ruleId", verdict == cv::VerdictKind::refuted ? rule : "obligation-unknown"},
         {"level", verdict == cv::VerdictKind::refuted ? "error" : "warning"},
         {"message", {{"text", text}}},
         {"locations", json::array({{{"physicalLocation", physical}}})}});
  };
  for (const auto& t : r.tasks) {
    for (const auto& f : t.findings) {
      if (f.kind == cv::ObligationKind::lint) continue;
      result("task-not-verified", f.verdict, t.name + ": " + f.id + ": " + f.reason, t.file, f.loc);
    }
  }
  for (const auto& o : r.obligations) {
    if (o.verdict == cv::VerdictKind::proved || o.kind == cc::ObligationKind::task) continue;
    result("composition-" + std::string(cc::to_string(o.kind)),
           o.verdict,
           o.id + ": " + o.reason,
           o.file,
           o.loc);
  }
  json rules = json::array({
      {{"id", "task-not-verified"},
       {"shortDescription", {{"text", "A composed task's own verification fails"}}}},
      {{"id", "obligation-unknown"},
       {"shortDescription", {{"text", "The solver could not decide an obligation"}}}},
  });
  for (int k = 1; k <= static_cast<int>(cc::ObligationKind::forbidden); ++k) {
    rules.push_back(
        {{"id", "composition-" + std::string(cc::to_string(static_cast<cc::ObligationKind>(k)))},
         {"shortDescription",
          {{"text",
            "A " + std::string(cc::to_string(static_cast<cc::ObligationKind>(k))) +
                " composition obligation is refuted"}}}});
  }
  return {{"$schema", "https://json.schemastore.org/sarif-2.1.0.json"},
          {"version", "2.1.0"},
          {"runs",
           json::array({{{"tool",
                          {{"driver",
                            {{"name", "clampai"},
                             {"version", CLAMPAI_VERSION},
                             {"informationUri", "https://clampai.dev"},
                             {"rules", rules}}}}},
                         {"results", results}}})}};
}

std::string xml(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        // XML 1.0 forbids most control characters even when escaped.
        if (static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t' && c != '\r')
          out += '?';
        else
          out += c;
    }
  }
  return out;
}

void print_junit(const cc::ComposeReport& r) {
  std::size_t failures = 0, errors = 0;
  for (const auto& o : r.obligations) {
    failures += o.verdict == cv::VerdictKind::refuted;
    errors += o.verdict == cv::VerdictKind::unknown;
  }
  std::cout << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
            << "<testsuites name=\"clampai compose\" tests=\"" << r.obligations.size()
            << "\" failures=\"" << failures << "\" errors=\"" << errors << "\" time=\"" << r.seconds
            << "\">\n"
            << "  <testsuite name=\"" << xml(args.manifest) << "\" tests=\"" << r.obligations.size()
            << "\" failures=\"" << failures << "\" errors=\"" << errors << "\" time=\"" << r.seconds
            << "\">\n";
  for (const auto& o : r.obligations) {
    std::cout << "    <testcase classname=\"compose." << cc::to_string(o.kind) << "\" name=\""
              << xml(o.id) << "\" file=\"" << xml(o.file) << "\"";
    if (o.loc.line > 0) std::cout << " line=\"" << o.loc.line << "\"";
    // A task's test case: whether its certificate was reused, and every finding (not only the
    // first, which the message names) with its location and counterexample.
    const cc::TaskResult* t = nullptr;
    if (o.kind == cc::ObligationKind::task) {
      for (const auto& candidate : r.tasks)
        if (!o.tasks.empty() && candidate.name == o.tasks.front()) t = &candidate;
    }
    const std::string out = t == nullptr ? ""
                            : t->reused  ? "certificate reused (model " + t->digest + ")"
                                         : "verified (model " + t->digest + ")" +
                                              (t->cache_note.empty() ? "" : "; " + t->cache_note);
    if (o.verdict == cv::VerdictKind::proved) {
      if (out.empty()) {
        std::cout << "/>\n";
      } else {
        std::cout << ">\n      <system-out>" << xml(out) << "</system-out>\n    </testcase>\n";
      }
      continue;
    }
    std::string details;
    if (o.counterexample) details = counterexample_json(*o.counterexample).dump(2);
    if (t != nullptr) {
      json findings = json::array();
      for (const auto& f : t->findings) {
        if (f.kind == cv::ObligationKind::lint) continue;
        json fj = {
            {"id", f.id}, {"verdict", std::string(cv::to_string(f.verdict))}, {"reason", f.reason}};
        if (f.loc.line > 0) fj["location"] = location_json(t->file, f.loc);
        if (f.counterexample) fj["counterexample"] = counterexample_json(*f.counterexample);
        findings.push_back(fj);
      }
      details = findings.dump(2);
    }
    const char* tag = o.verdict == cv::VerdictKind::refuted ? "failure" : "error";
    std::cout << ">\n      <" << tag << " message=\"" << xml(o.reason) << "\" type=\""
              << cv::to_string(o.verdict) << "\">" << xml(details) << "</" << tag << ">\n";
    if (!out.empty()) std::cout << "      <system-out>" << xml(out) << "</system-out>\n";
    std::cout << "    </testcase>\n";
  }
  std::cout << "  </testsuite>\n</testsuites>\n";
}

// The secret sealing certificates: from --cache-key-file, else CLAMPAI_CACHE_KEY (set and not
// empty: a CI secret a fork's pull request cannot see expands to ""), else none.
// Trailing whitespace (a file's final newline) is not part of it.
std::string cache_key() {
  std::string key;
  std::string source;
  if (!args.cache_key_file.empty()) {
    key = clampai::kernel::read_text_file(args.cache_key_file);
    source = "the cache key file `" + args.cache_key_file + "`";
  } else if (const char* env = std::getenv("CLAMPAI_CACHE_KEY"); env != nullptr && *env != '\0') {
    key = env;
    source = "CLAMPAI_CACHE_KEY";
  } else {
    return "";
  }
  while (!key.empty() && std::isspace(static_cast<unsigned char>(key.back()))) key.pop_back();
  constexpr std::size_t kMinKey = 16;
  if (key.size() < kMinKey) {
    throw clampai::Error(source + " holds " + std::to_string(key.size()) +
                         " bytes; a cache key needs at least " + std::to_string(kMinKey) +
                         " (for example `openssl rand -hex 32`)");
  }
  return key;
}

}  // namespace

CLI::App* add_compose_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "compose",
      "Check a composition of task specs through their interface contracts, reusing the "
      "certificates of unchanged tasks");
  cmd->add_option("MANIFEST", args.manifest, "Composition manifest (JSON)")->required();
  cmd->add_option("--format", args.format, "Output format")
      ->check(CLI::IsMember({"text", "json", "sarif", "junit"}))
      ->capture_default_str();
  auto* cache =
      cmd->add_option("--cache", args.cache, "Certificate cache directory (created if missing)");
  cmd->add_option("--cache-key-file",
                  args.cache_key_file,
                  "Seal certificates with HMAC-SHA-256 under the secret in this file (default: "
                  "the CLAMPAI_CACHE_KEY environment variable, if set)")
      ->needs(cache);
  cmd->add_option("--jobs", args.jobs, "Worker threads")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  cmd->add_option("--timeout-ms", args.timeout_ms, "Solver time limit per obligation")
      ->check(CLI::Range(1, 3600000))
      ->capture_default_str();
  cmd->add_option("--timeout",
                  args.timeout_s,
                  "Wall-time limit of the whole run, in seconds (0: none); what is not checked "
                  "by then is unknown (exit 3)")
      ->check(CLI::Range(0.0, 604800.0))
      ->capture_default_str();
  cmd->add_option("--max-obligations",
                  args.max_obligations,
                  "Refuse (exit 2) a composition with more solver obligations than this "
                  "(0: no limit)")
      ->check(CLI::Range(std::size_t{0}, std::size_t{1} << 40))
      ->capture_default_str();
  cmd->add_flag(
      "--fail-on-unknown", args.fail_on_unknown, "Exit 1 (not 3) when an obligation is unknown");
  cmd->add_flag("--show-proved", args.show_proved, "Also list proved obligations (text format)");
  cmd->add_option("--graph", args.graph, "Print only the composition graph, in this format")
      ->check(CLI::IsMember({"dot"}));
  return cmd;
}

int run_compose_command() {
  cc::Manifest manifest;
  try {
    manifest = cc::load_manifest(args.manifest);
  } catch (const clampai::Error& e) {
    std::cerr << "clampai: error: " << e.what() << "\n";
    return 2;
  }
  if (args.graph == "dot") {
    std::cout << cc::to_dot(manifest);
    return 0;
  }
  cc::ComposeOptions options;
  options.cache_dir = args.cache;
  try {
    if (!args.cache.empty()) options.cache_key = cache_key();
  } catch (const clampai::Error& e) {
    std::cerr << "clampai: error: " << e.what() << "\n";
    return 2;
  }
  options.jobs = args.jobs;
  options.timeout_ms = args.timeout_ms;
  options.run_timeout_ms = static_cast<std::uint64_t>(args.timeout_s * 1000.0 + 0.5);
  if (args.timeout_s > 0 && options.run_timeout_ms == 0) options.run_timeout_ms = 1;
  options.max_obligations = args.max_obligations;
  cc::ComposeReport report;
  try {
    report = cc::compose(manifest, options);
  } catch (const clampai::Error& e) {
    std::cerr << "clampai: error: " << e.what() << "\n";
    return 2;
  }
  if (args.format == "json") {
    std::cout << report_json(report).dump(2) << "\n";
  } else if (args.format == "sarif") {
    std::cout << sarif(report).dump(2) << "\n";
  } else if (args.format == "junit") {
    print_junit(report);
  } else {
    print_text(report);
  }
  return report.exit_code(args.fail_on_unknown);
}

}  // namespace clampai::cli
