// The `clampai` command: the only place that formats output for people and CI.
#include <unistd.h>
#include <CLI/CLI.hpp>
#include <cstdio>

#include <charconv>
#include <chrono>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "bench.hpp"
#include "clampai/composition/compose.hpp"
#include "clampai/kernel.hpp"
#include "clampai/verifier.hpp"
#include "compose_cmd.hpp"
#include "lookahead_cmd.hpp"
#include "output.hpp"
#include "repair_cmd.hpp"
#include "suggestions.hpp"

namespace ck = clampai::kernel;
namespace cv = clampai::verifier;
using nlohmann::json;

using clampai::cli::named_values_json;
using clampai::cli::print_counterexample;

namespace {

// Exit codes (DESIGN §4).
constexpr int kOk = 0;
constexpr int kFinding = 1;
constexpr int kBadInput = 2;
constexpr int kOutOfMemory = 4;

struct Common {
  std::string format = "text";
};

void add_format(CLI::App* cmd, Common& common) {
  cmd->add_option("--format", common.format, "Output format")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
}

// JSON text for output; a file name that is not UTF-8 gets U+FFFD for its invalid bytes
// instead of failing after the work is done.
std::string dump(const json& j) { return j.dump(2, ' ', false, json::error_handler_t::replace); }

std::string type_of(const ck::Variable& v) { return v.type.to_string() + (v.optional ? "?" : ""); }

json reasons_json(const std::vector<ck::Reason>& reasons) {
  json arr = json::array();
  for (const auto& r : reasons)
    arr.push_back({{"code", std::string(ck::to_string(r.code))},
                   {"subject", r.subject},
                   {"message", r.message}});
  return arr;
}

// ---- check ----

int cmd_check(const std::string& path, const Common& common) {
  const auto model = ck::load_spec_file(path);
  ck::SafetyKernel kernel(model);  // refuses an initial state that breaks a blocking invariant
  std::size_t blocking = 0;
  for (const auto& inv : model->invariants)
    blocking += inv.enforcement == ck::Enforcement::blocking;
  if (common.format == "json") {
    json j;
    j["spec"] = path;
    j["name"] = model->name;
    j["digest"] = model->digest;
    j["variables"] = json::array();
    for (const auto& v : model->variables)
      j["variables"].push_back({{"name", v.name}, {"type", type_of(v)}});
    j["actions"] = json::array();
    for (const auto& a : model->actions) {
      j["actions"].push_back(
          {{"id", a.id},
           {"cost", a.cost_expr ? ck::to_source(*a.cost_expr) : model->format_amount(a.cost)},
           {"parameters", a.parameters.size()},
           {"emergency", a.emergency}});
    }
    j["invariants"] = {{"blocking", blocking}, {"monitoring", model->invariants.size() - blocking}};
    j["budget"] = {{"total", model->format_amount(model->budget.total)},
                   {"min_action_cost", model->format_amount(model->budget.min_action_cost)},
                   {"step_limit", model->budget.step_limit}};
    j["ok"] = true;
    std::cout << dump(j) << "\n";
    return kOk;
  }
  std::cout << "spec " << path << (model->name.empty() ? "" : " (" + model->name + ")") << "\n";
  std::cout << "  digest      sha256:" << model->digest << "\n";
  std::cout << "  variables   " << model->variables.size() << ":";
  for (const auto& v : model->variables) std::cout << " " << v.name << ":" << type_of(v);
  std::cout << "\n  actions     " << model->actions.size() << ":";
  for (const auto& a : model->actions) {
    std::cout << " " << a.id << "("
              << (a.cost_expr ? ck::to_source(*a.cost_expr) : model->format_amount(a.cost))
              << (a.emergency ? ", emergency" : "") << ")";
  }
  std::cout << "\n  invariants  " << model->invariants.size() << " (" << blocking << " blocking, "
            << model->invariants.size() - blocking << " monitoring)\n";
  std::cout << "  budget      " << model->format_amount(model->budget.total) << ", min action cost "
            << model->format_amount(model->budget.min_action_cost) << ", step bound (T2) "
            << model->budget.step_limit << "\n";
  std::cout
      << "ok: well-formed and well-typed; the initial state satisfies every blocking invariant\n";
  return kOk;
}

// ---- run ----

struct RunArgs {
  std::string spec;
  std::string trace;
  std::string flush = "flush";
  bool append = false;
  bool force = false;
  std::optional<std::uint64_t> max_steps;
  bool record_rejections = false;
  std::optional<unsigned> lookahead;
  bool recover = false;
};

// True iff `a` and `b` name one file (the same inode), however they are spelt.
bool same_file(const std::string& a, const std::string& b) {
  std::error_code ec;
  return std::filesystem::equivalent(a, b, ec) && !ec;
}

// Opens the trace file of `run` (after the spec is loaded: a spec error never touches it) and,
// with --append, reads and checks the trace it continues.
void open_trace(const RunArgs& args,
                const std::shared_ptr<const ck::TaskModel>& model,
                ck::KernelOptions& options) {
  if (same_file(args.trace, args.spec))
    throw clampai::TraceError("the trace `" + args.trace + "` is the spec file `" + args.spec +
                              "`: give the trace its own file");
  const ck::FlushPolicy policy = args.flush == "buffered" ? ck::FlushPolicy::buffered
                                 : args.flush == "fsync"  ? ck::FlushPolicy::fsync
                                                          : ck::FlushPolicy::flush;
  const ck::TraceOpen mode = args.append  ? ck::TraceOpen::append
                             : args.force ? ck::TraceOpen::overwrite
                                          : ck::TraceOpen::create;
  auto writer = std::make_shared<ck::TraceWriter>(args.trace, policy, mode);  // locks it
  if (args.append) {
    const ck::TraceCheck check = ck::verify_trace_file(args.trace, /*allow_unsealed=*/true);
    if (!check.ok)
      throw clampai::TraceError("cannot append to `" + args.trace + "`: " + check.message);
    if (check.sealed)
      throw clampai::TraceError("cannot append to `" + args.trace +
                                "`: the trace is sealed (its run finished; nothing may follow "
                                "a seal): write a new trace");
    std::vector<ck::TraceEntry> entries = ck::read_trace_file(args.trace);
    if (auto mismatch = ck::replay_trace(model, entries)) {
      throw clampai::TraceError("cannot append to `" + args.trace + "`: entry " +
                                std::to_string(mismatch->first) + ": " + mismatch->second);
    }
    writer->continue_from(entries.size());
    options.resume = std::move(entries);
  }
  options.writer = std::move(writer);
}

int cmd_run(const RunArgs& args, const Common& common) {
  const auto model = ck::load_spec_file(args.spec);
  ck::KernelOptions options;
  options.record_rejections = args.record_rejections;
  if (!args.trace.empty()) open_trace(args, model, options);
  if (args.lookahead) {
    ck::LookaheadOptions lookahead;
    lookahead.depth = *args.lookahead;
    options.guard = ck::lookahead_guard(model, lookahead);
  }
  ck::SafetyKernel kernel(model, options);
  ck::FirstApprovableDriver driver;
  ck::RunOptions run_options;
  run_options.max_steps = args.max_steps;
  run_options.recover = args.recover;
  const ck::RunResult r = ck::run(kernel, driver, run_options);
  const ck::TraceEntry seal = kernel.seal();
  const auto budget = kernel.budget();
  const ck::TraceCheck check = kernel.verify_trace();

  if (common.format == "json") {
    json j;
    j["spec"] = args.spec;
    j["goal_reached"] = r.goal_reached;
    j["termination"] = std::string(ck::to_string(r.termination));
    j["steps"] = kernel.steps();
    j["emergency_steps"] = kernel.emergency_steps();
    j["step_limit"] = kernel.step_limit();
    j["budget"] = {{"total", model->format_amount(budget.total())},
                   {"net", model->format_amount(budget.net())},
                   {"gross", model->format_amount(budget.gross())}};
    j["attempted"] = r.attempted;
    j["rejected"] = r.rejected;
    j["rejections_by_reason"] = r.rejections_by_reason;
    j["actions"] = r.actions;
    j["last_reasons"] = reasons_json(r.last_reasons);
    if (args.lookahead) j["lookahead"] = *args.lookahead;
    if (args.recover) {
      j["rollbacks"] = r.rollbacks;
      j["emergencies"] = r.emergencies;
      j["recovery"] = r.recovery;
    }
    j["trace"] = {{"entries", seal.sequence + 1}, {"head", seal.hash}, {"verified", check.ok}};
    if (!args.trace.empty()) j["trace"]["file"] = args.trace;
    if (args.append) j["trace"]["appended"] = true;
    std::cout << dump(j) << "\n";
  } else {
    std::cout << "goal: "
              << (model->goal_description.empty()
                      ? (model->goal ? ck::to_source(*model->goal) : "(none)")
                      : model->goal_description)
              << "\n";
    std::cout << (r.goal_reached ? "result: goal reached" : "result: goal NOT reached") << " ("
              << ck::to_string(r.termination) << ")\n";
    std::cout << "  steps       " << kernel.steps() << " of at most " << kernel.step_limit()
              << " (T2), emergency steps " << kernel.emergency_steps() << "\n";
    std::cout << "  cost        " << model->format_amount(budget.net()) << " of "
              << model->format_amount(budget.total()) << " (gross "
              << model->format_amount(budget.gross()) << ")\n";
    std::cout << "  attempted   " << r.attempted << ", rejected " << r.rejected;
    if (!r.rejections_by_reason.empty()) {
      std::cout << " (";
      bool first = true;
      for (const auto& [code, n] : r.rejections_by_reason) {
        std::cout << (first ? "" : ", ") << code << " " << n;
        first = false;
      }
      std::cout << ")";
    }
    std::cout << "\n  actions     ";
    for (std::size_t i = 0; i < r.actions.size(); ++i) std::cout << (i ? ", " : "") << r.actions[i];
    std::cout << (r.actions.empty() ? "(none)\n" : "\n");
    if (args.recover) {
      std::cout << "  recovery    " << r.rollbacks << " rollback" << (r.rollbacks == 1 ? "" : "s")
                << ", " << r.emergencies << " emergency action" << (r.emergencies == 1 ? "" : "s");
      for (std::size_t i = 0; i < r.recovery.size(); ++i)
        std::cout << (i ? ", " : ": ") << r.recovery[i];
      std::cout << "\n";
    }
    if (!r.goal_reached) {
      for (const auto& reason : r.last_reasons)
        std::cout << "  why         " << ck::to_string(reason.code) << ": " << reason.message
                  << "\n";
    }
    std::cout << "  trace       " << seal.sequence + 1
              << " entries, head sha256:" << seal.hash.substr(0, 16) << "..., "
              << (check.ok ? "chain verified" : "CHAIN BROKEN");
    if (!args.trace.empty())
      std::cout << (args.append ? ", appended to " : ", written to ") << args.trace;
    std::cout << "\n";
  }
  return r.goal_reached ? kOk : kFinding;
}

// ---- trace verify ----

struct TraceArgs {
  std::string file;
  std::string spec;
  bool allow_unsealed = false;
};

int cmd_trace_verify(const TraceArgs& args, const Common& common) {
  ck::TraceCheck check = ck::verify_trace_file(args.file, args.allow_unsealed);
  std::string replay = "not requested";
  if (check.ok && !args.spec.empty()) {
    const auto model = ck::load_spec_file(args.spec);  // errors name the spec (see main)
    if (auto mismatch = ck::replay_trace(model, ck::read_trace_file(args.file))) {
      check.ok = false;
      check.first_bad = mismatch->first;
      check.message = "entry " + std::to_string(mismatch->first) + ": replay: " + mismatch->second;
      replay = "failed";
    } else {
      replay = "ok";
    }
  }
  if (common.format == "json") {
    json j{{"file", args.file},
           {"ok", check.ok},
           {"entries", check.entries},
           {"sealed", check.sealed},
           {"message", check.message},
           {"replay", replay},
           {"truncated_tail", check.truncated_tail}};
    j["first_bad_entry"] = check.first_bad ? json(*check.first_bad) : json(nullptr);
    if (check.truncated_tail) j["verified_bytes"] = check.verified_bytes;
    std::cout << dump(j) << "\n";
  } else {
    std::cout << (check.ok               ? "ok: "
                  : check.truncated_tail ? "TRUNCATED: "
                                         : "BROKEN: ")
              << args.file << ": " << check.message;
    if (!args.spec.empty() && replay == "ok") {
      std::cout << (check.sealed ? "; replays through the kernel to the sealed state"
                                 : "; replays through the kernel (the trace has no seal, so no "
                                   "final state to compare)");
    }
    std::cout << "\n";
  }
  return check.ok ? kOk : kFinding;
}

// ---- verify ----

struct VerifyArgs {
  std::string spec;
  unsigned jobs = clampai::cli::default_jobs();
  unsigned timeout_ms = 10000;
  bool fail_on_unknown = false;
  std::string smtlib_dir;
  unsigned depth = 0;
};

std::string obligation_line(const cv::Obligation& o) {
  if (o.kind == cv::ObligationKind::lint) return "WARNING " + o.id + ": " + o.reason;
  std::string verdict(cv::to_string(o.verdict));
  for (auto& c : verdict) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return verdict + " " + o.id + ": " + o.reason;
}

json sarif_report(const std::string& spec, const ck::TaskModel& model, const cv::Report& report) {
  json rules = json::array({
      {{"id", "invariant-not-preserved"},
       {"shortDescription",
        {{"text",
          "An action can break a blocking invariant: the kernel will block it in some states"}}}},
      {{"id", "base-case-violated"},
       {"shortDescription", {{"text", "The initial state violates a blocking invariant"}}}},
      {{"id", "budget-theorem-violated"},
       {"shortDescription", {{"text", "The integer budget model breaks T1 or T4"}}}},
      {{"id", "obligation-unknown"},
       {"shortDescription", {{"text", "The solver could not decide an obligation"}}}},
      {{"id", "emergency-action-unsafe"},
       {"shortDescription",
        {{"text", "An emergency action can break a blocking invariant (T8's condition)"}}}},
      {{"id", "inconsistent-invariants"},
       {"shortDescription", {{"text", "The blocking invariants are jointly unsatisfiable"}}}},
      {{"id", "redundant-invariant"},
       {"shortDescription", {{"text", "An invariant is implied by the others"}}}},
      {{"id", "dead-action"},
       {"shortDescription", {{"text", "An action can never be enabled under the invariants"}}}},
      {{"id", "effect-overflow"}, {"shortDescription", {{"text", "An effect can overflow int64"}}}},
      {{"id", "interface-violated"},
       {"shortDescription", {{"text", "The task does not keep its declared interface"}}}},
      {{"id", "assumes-inconsistent"},
       {"shortDescription",
        {{"text", "The interface's assumes contradict the invariants: the task can never start"}}}},
  });
  json results = json::array();
  for (const auto& o : report.obligations) {
    if (o.verdict == cv::VerdictKind::proved) continue;
    std::string rule = "obligation-unknown";
    if (o.verdict == cv::VerdictKind::refuted) {
      const auto action = model.find_action(o.action);
      const bool emergency = action && model.actions[*action].emergency;
      rule = o.kind == cv::ObligationKind::preservation
                 ? (emergency ? "emergency-action-unsafe" : "invariant-not-preserved")
             : o.kind == cv::ObligationKind::base_case ? "base-case-violated"
             : o.kind == cv::ObligationKind::budget    ? "budget-theorem-violated"
             : o.kind == cv::ObligationKind::interface ? "interface-violated"
             : o.id == "lint:assumes-consistent"       ? "assumes-inconsistent"
             : o.id.rfind("lint:consistent", 0) == 0   ? "inconsistent-invariants"
             : o.id.rfind("lint:independent", 0) == 0  ? "redundant-invariant"
             : o.id.rfind("lint:enabled", 0) == 0      ? "dead-action"
                                                       : "effect-overflow";
    }
    ck::SourceLoc loc = o.loc;
    if (o.kind == cv::ObligationKind::preservation) {
      if (auto a = model.find_action(o.action)) loc = model.actions[*a].loc;
    }
    json result = {
        {"ruleId", rule},
        {"level",
         o.verdict == cv::VerdictKind::refuted && o.kind != cv::ObligationKind::lint ? "error"
                                                                                     : "warning"},
        {"message", {{"text", o.id + ": " + o.reason}}}};
    json physical = {{"artifactLocation", {{"uri", spec}}}};
    if (loc.line > 0) physical["region"] = {{"startLine", loc.line}, {"startColumn", loc.column}};
    result["locations"] = json::array({{{"physicalLocation", physical}}});
    results.push_back(result);
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

int cmd_verify(const VerifyArgs& args, const Common& common) {
  const auto model = ck::load_spec_file(args.spec);
  cv::VerifyOptions options;
  options.jobs = args.jobs;
  options.timeout_ms = args.timeout_ms;
  options.smtlib_dir = args.smtlib_dir;
  options.depth = args.depth;
  // A progress line on stderr once a run has taken more than a second, if stderr is a terminal.
  const auto started = std::chrono::steady_clock::now();
  std::mutex progress_mutex;
  bool progress_shown = false;
  if (::isatty(STDERR_FILENO) != 0) {
    options.progress = [&](std::size_t done, std::size_t total) {
      if (std::chrono::steady_clock::now() - started < std::chrono::seconds(1)) return;
      std::lock_guard lock(progress_mutex);
      std::cerr << "\rclampai verify: " << done << "/" << total << " preservation obligations"
                << std::flush;
      progress_shown = true;
    };
  }
  if (!options.smtlib_dir.empty()) std::filesystem::create_directories(options.smtlib_dir);
  const cv::Report report = cv::verify(model, options);
  if (progress_shown) std::cerr << "\r\033[K" << std::flush;
  std::optional<clampai::cli::GoalCheck> goal;
  if (args.depth > 0 && model->goal) goal = clampai::cli::check_goal(*model, args.depth);
  if (common.format == "sarif") {
    std::cout << dump(sarif_report(args.spec, *model, report)) << "\n";
  } else if (common.format == "json") {
    json obligations = json::array();
    for (const auto& o : report.obligations) {
      json j = {{"id", o.id},
                {"kind", std::string(cv::to_string(o.kind))},
                {"verdict", std::string(cv::to_string(o.verdict))},
                {"reason", o.reason}};
      if (!o.action.empty()) j["action"] = o.action;
      if (!o.invariant.empty()) j["invariant"] = o.invariant;
      if (o.loc.line > 0) j["location"] = {{"line", o.loc.line}, {"column", o.loc.column}};
      if (o.reachability.status != cv::Reachability::Status::not_checked) {
        static constexpr const char* kStatus[] = {
            "not_checked", "reachable", "unreachable", "unknown"};
        json witness = json::array();
        for (const auto& [action, params] : o.reachability.witness) {
          witness.push_back({{"action", action}, {"params", named_values_json(params)}});
        }
        j["reachability"] = {{"status", kStatus[static_cast<int>(o.reachability.status)]},
                             {"depth", o.reachability.depth},
                             {"reason", o.reachability.reason},
                             {"witness", witness}};
      }
      if (o.counterexample) {
        j["counterexample"] = {{"pre", named_values_json(o.counterexample->pre)},
                               {"params", named_values_json(o.counterexample->params)},
                               {"post", named_values_json(o.counterexample->post)}};
      }
      obligations.push_back(j);
    }
    json j = {{"spec", args.spec},
              {"summary",
               {{"proved", report.proved},
                {"refuted", report.refuted},
                {"unknown", report.unknown},
                {"warnings", report.warnings},
                {"seconds", report.seconds}}},
              {"obligations", obligations}};
    if (goal) {
      j["goal"] = {{"depth", args.depth},
                   {"reachable", goal->reachable},
                   {"infeasible", goal->infeasible},
                   {"complete", goal->complete},
                   {"message", goal->message},
                   {"plan", clampai::cli::plan_json(*model, goal->plan)},
                   {"cost", model->format_amount(goal->cost)}};
    }
    std::cout << dump(j) << "\n";
  } else {
    for (const auto& o : report.obligations) {
      if (o.verdict == cv::VerdictKind::proved) continue;
      std::cout << obligation_line(o) << "\n";
      if (o.counterexample) print_counterexample(*o.counterexample);
      if (o.reachability.status != cv::Reachability::Status::not_checked) {
        std::cout << "    " << o.reachability.reason;
        for (std::size_t i = 0; i < o.reachability.witness.size(); ++i) {
          const auto& [action, params] = o.reachability.witness[i];
          std::cout << (i == 0 ? ": " : ", ") << action;
          for (const auto& [name, v] : params) std::cout << " " << name << "=" << v.to_string();
        }
        std::cout << "\n";
      }
    }
    if (goal)
      std::cout << (goal->infeasible ? "REFUTED goal: " : "goal: ") << goal->message << "\n";
    std::cout << "summary: " << report.proved + report.refuted + report.unknown
              << " obligations: " << report.proved << " proved, " << report.refuted << " refuted, "
              << report.unknown << " unknown; " << report.warnings << " lint warning"
              << (report.warnings == 1 ? "" : "s") << " (" << std::fixed << std::setprecision(3)
              << report.seconds << " s)\n";
  }
  if (goal && goal->infeasible) return kFinding;
  return report.exit_code(args.fail_on_unknown);
}

}  // namespace

int main(int argc, char** argv) {
  cv::tune_allocator_for_solving();  // this process runs many solver checks
  CLI::App app{
      "clampai: verify and run AI agent task specs under a formally specified safety kernel"};
  app.require_subcommand(1);
  app.fallthrough();  // inherited by the subcommands: --max-input-bytes may follow them
  app.set_version_flag("--version", std::string(clampai::composition::toolkit_version()));
  Common common;

  std::string check_spec;
  auto* check = app.add_subcommand(
      "check", "Load and type-check a task spec; print its summary and the T2 step bound");
  check->add_option("SPEC", check_spec, "Task spec (JSON)")->required();
  add_format(check, common);

  RunArgs run_args;
  auto* run = app.add_subcommand(
      "run", "Drive a task spec through the safety kernel with the deterministic driver");
  run->add_option("SPEC", run_args.spec, "Task spec (JSON)")->required();
  run->add_option("--trace",
                  run_args.trace,
                  "Write the hash-chained trace to this JSON Lines file: a new file (an existing "
                  "one is an error unless --append or --force); its directory must exist");
  auto* append_flag = run->add_flag(
      "--append",
      run_args.append,
      "Continue the unsealed trace in --trace: its chain is verified and replayed through the "
      "kernel first, and the run resumes from its last state, budget and counters");
  run->add_flag("--force", run_args.force, "Replace the file given to --trace if it exists")
      ->excludes(append_flag);
  run->add_option(
         "--flush",
         run_args.flush,
         "When trace entries are made durable: buffered, flush (each entry), fsync (each entry)")
      ->check(CLI::IsMember({"buffered", "flush", "fsync"}))
      ->capture_default_str();
  run->add_option("--max-steps",
                  run_args.max_steps,
                  "Stop after this many executed actions (besides the kernel's T2 bound)")
      ->check(CLI::Validator(
          [](std::string& text) -> std::string {
            std::uint64_t n = 0;
            const auto r = std::from_chars(text.data(), text.data() + text.size(), n);
            if (text.empty() || r.ec != std::errc() || r.ptr != text.data() + text.size())
              return "`" + text + "` is not a whole number from 0 to 18446744073709551615";
            return "";
          },
          "N"));
  run->add_flag(
      "--record-rejections", run_args.record_rejections, "Record rejected proposals in the trace");
  run->add_option("--lookahead",
                  run_args.lookahead,
                  "Reject actions after which a capture basin is reachable within K more steps "
                  "(reason lookahead_trap)")
      ->option_text("K")
      ->check(CLI::Range(0U, 64U));
  run->add_flag("--recover",
                run_args.recover,
                "When nothing is approvable: roll back the last action if reversible, else take "
                "an emergency action and stop");
  add_format(run, common);

  VerifyArgs verify_args;
  auto* verify_cmd = app.add_subcommand("verify",
                                        "Prove with Z3 that every action preserves every blocking "
                                        "invariant, or show a counterexample the kernel replays");
  verify_cmd->add_option("SPEC", verify_args.spec, "Task spec (JSON)")->required();
  verify_cmd->add_option("--jobs", verify_args.jobs, "Worker threads, each with its own solver")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  verify_cmd->add_option("--timeout-ms", verify_args.timeout_ms, "Solver time limit per obligation")
      ->check(CLI::Range(1, 3600000))
      ->capture_default_str();
  verify_cmd->add_flag("--fail-on-unknown",
                       verify_args.fail_on_unknown,
                       "Exit 1 (not 3) when an obligation is unknown");
  verify_cmd
      ->add_option(
          "--depth",
          verify_args.depth,
          "Search each refuted pair from the initial state, up to K steps (bounded model checking)")
      ->check(CLI::Range(0, 50))
      ->capture_default_str();
  verify_cmd->add_option(
      "--smtlib",
      verify_args.smtlib_dir,
      "Also write each preservation obligation to this directory as a standalone SMT-LIB 2 file");
  verify_cmd->add_option("--format", common.format, "Output format")
      ->check(CLI::IsMember({"text", "json", "sarif"}))
      ->capture_default_str();

  auto* trace = app.add_subcommand("trace", "Work with execution traces");
  trace->require_subcommand(1);
  TraceArgs trace_args;
  auto* verify = trace->add_subcommand(
      "verify",
      "Verify a trace file's hash chain (and, with --spec, replay it through the kernel)");
  verify->add_option("FILE", trace_args.file, "Trace (JSON Lines)")->required();
  verify->add_option("--spec", trace_args.spec, "Replay the trace through a kernel for this spec");
  verify->add_flag("--allow-unsealed",
                   trace_args.allow_unsealed,
                   "Accept a trace without a seal entry (a run that did not finish); with --spec, "
                   "its entries are replayed but there is no final state to compare");
  add_format(verify, common);
  auto* bench = clampai::cli::add_bench_command(app, common.format);
  auto* compose = clampai::cli::add_compose_command(app);
  auto* lookahead = clampai::cli::add_lookahead_command(app);
  auto* repair = clampai::cli::add_repair_command(app);

  std::string max_input;
  app.add_option("--max-input-bytes",
                 max_input,
                 "Largest input file read (spec, trace, state, manifest, cache entry), in bytes "
                 "or with K, M, G; default 64M, or CLAMPAI_MAX_INPUT_BYTES")
      ->option_text("BYTES");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (const std::string hint = clampai::cli::parse_error_hint(app, argc, argv); !hint.empty()) {
      std::cerr << "clampai: error: " << hint << "\n";
      return kBadInput;
    }
    const int rc = app.exit(e);
    return rc == 0 ? kOk : kBadInput;
  }
  try {
    if (!max_input.empty()) {
      ck::set_max_input_bytes(ck::parse_byte_count(max_input, "--max-input-bytes"));
    } else {
      (void)ck::max_input_bytes();  // a malformed CLAMPAI_MAX_INPUT_BYTES is reported now
    }
  } catch (const clampai::Error& e) {
    std::cerr << "clampai: error: " << e.what() << "\n";
    return kBadInput;
  }

  // Spec errors name the spec; `trace verify` reads a spec only with --spec.
  const std::string input = check->parsed()            ? check_spec
                            : run->parsed()            ? run_args.spec
                            : verify_cmd->parsed()     ? verify_args.spec
                            : !trace_args.spec.empty() ? trace_args.spec
                                                       : trace_args.file;
  try {
    if (check->parsed()) return cmd_check(check_spec, common);
    if (run->parsed()) return cmd_run(run_args, common);
    if (verify->parsed()) return cmd_trace_verify(trace_args, common);
    if (verify_cmd->parsed()) return cmd_verify(verify_args, common);
    if (bench->parsed()) return clampai::cli::run_bench_command();
    if (compose->parsed()) return clampai::cli::run_compose_command();
    if (lookahead->parsed()) return clampai::cli::run_lookahead_command();
    if (repair->parsed()) return clampai::cli::run_repair_command();
  } catch (const clampai::SpecError& e) {
    // One line per problem: `FILE:LINE:COLUMN: json.path: message`, as compilers write them.
    for (const clampai::SpecProblem& p : e.problems()) {
      std::cerr << "clampai: error: " << input;
      if (p.line > 0) std::cerr << ":" << p.line << ":" << p.column;
      std::cerr << ": " << (p.path.empty() ? "" : p.path + ": ") << p.message << "\n";
    }
    return kBadInput;
  } catch (const clampai::TraceError& e) {
    std::cerr << "clampai: error: " << e.what() << "\n";
    return kBadInput;
  } catch (const clampai::FileError& e) {  // the message names the file
    std::cerr << "clampai: error: " << e.what() << "\n";
    return kBadInput;
  } catch (const clampai::Error& e) {
    std::cerr << "clampai: error: " << input << ": " << e.what() << "\n";
    return kBadInput;
  } catch (const cv::InternalError& e) {
    std::cerr << "clampai: internal error (a bug in clampai, please report it): " << e.what()
              << "\n";
    return kBadInput;
  } catch (const std::bad_alloc&) {
    std::cerr << "clampai: error: out of memory (the input is too large for the memory "
                 "available to this process)\n";
    return kOutOfMemory;
  } catch (const std::exception& e) {  // I/O: --smtlib directory, trace file system errors
    std::cerr << "clampai: error: " << e.what() << "\n";
    return kBadInput;
  }
  return kBadInput;
}
