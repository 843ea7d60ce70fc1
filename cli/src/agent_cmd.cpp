#include "agent_cmd.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <optional>

#include "approval_prompt.hpp"
#include "clampai/agent.hpp"
#include "clampai/driver/lookahead.hpp"
#include "clampai/kernel.hpp"
#include "clampai/ledger/ledger.hpp"
#include "clampai/report/agent.hpp"
#include "clampai/server/gateway.hpp"
#include "gateway_cmd.hpp"
#include "monitor_setup.hpp"
#include "output.hpp"
#include "shadow_flag.hpp"
#include "sign_cmd.hpp"

namespace clampai::cli {

namespace ca = clampai::agent;
namespace ck = clampai::kernel;

namespace {

struct Args {
  std::string spec, llm, model, base_url, trace, transcript, ledger, pools, format = "text";
  std::optional<std::uint64_t> max_steps;
  std::optional<unsigned> lookahead;
  std::optional<std::uint32_t> llm_timeout_ms;
  std::vector<std::string> allow_programs;
  bool upstream = false;                    // --upstream: each step through its bound tool
  std::vector<std::string> command;         // the upstream MCP server, after `--`
  server::GatewayOptions upstream_options;  // --env, --clear-env, --upstream-timeout-ms
  std::string approvals;                    // --approvals
  std::string signing_key;
  std::uint64_t checkpoint_every = 0;
  bool shadow = false;  // --shadow
} args;

// The vendor's client. The key comes from the environment and goes only to the adapter.
std::unique_ptr<ca::LlmClient> make_client() {
  if (args.llm == "mock") {
    if (!args.model.empty() || !args.base_url.empty() || args.llm_timeout_ms)
      throw SpecError("--llm",
                      "--model, --base-url and --llm-timeout-ms are for a vendor's API; `mock` "
                      "has none");
    auto client = std::make_unique<ca::MockLlm>();
    if (args.transcript.empty()) return client;
    return ca::with_transcript(std::move(client), args.transcript);
  }
  ca::HttpLlmOptions options;
  options.vendor = args.llm == "anthropic" ? ca::Vendor::anthropic : ca::Vendor::openai;
  const char* variable = args.llm == "anthropic" ? "ANTHROPIC_API_KEY" : "OPENAI_API_KEY";
  const char* key = std::getenv(variable);
  if (key == nullptr || *key == '\0')
    throw SpecError(
        "--llm",
        std::string(variable) + " is not set: `--llm " + args.llm + "` reads its API key from it");
  options.api_key = key;
  options.model = args.model;
  options.base_url = args.base_url;
  if (!args.transcript.empty()) options.transcript = args.transcript;
  if (args.llm_timeout_ms) {
    // The whole attempt, connecting included: a connect timeout longer would never be reached.
    options.total_timeout = std::chrono::milliseconds(*args.llm_timeout_ms);
    options.connect_timeout = std::min(options.connect_timeout, options.total_timeout);
  }
  try {
    return ca::make_http_llm(options);
  } catch (const std::invalid_argument& e) {
    throw SpecError("--llm", e.what());
  }
}

int agent_command() {
  if (args.upstream != !args.command.empty())
    throw SpecError("--upstream",
                    args.upstream
                        ? "--upstream needs the upstream MCP server: `-- COMMAND [ARGS...]`"
                        : "a COMMAND after `--` is the upstream of --upstream");
  const std::string spec_text = ck::read_text_file(args.spec);
  const auto model = ck::load_spec(spec_text);
  if (args.shadow)
    refuse_shadow({.model = model.get(),
                   .ledger = args.ledger,
                   .approvals = args.approvals,
                   .upstream = args.upstream});
  // The spec's bindings: each action's tool on the upstream (docs/GATEWAY.md).
  const server::Bindings bindings =
      args.upstream ? server::load_bindings(spec_text, *model) : server::Bindings{};
  std::unique_ptr<ca::LlmClient> client = make_client();

  using Guard = decltype(ck::KernelOptions::guard);
  Guard guard;
  if (args.lookahead) {
    driver::LookaheadOptions lookahead;
    lookahead.depth = *args.lookahead;
    lookahead.timeout_ms = 1000;
    guard = driver::lookahead_guard(model, lookahead);
  }
  // The kernel: this process's own (under the reference monitor when the spec has hardening
  // sections), or a replica of the task's shared ledger (--ledger), which then holds the trace
  // with the rejected proposals of every process.
  std::unique_ptr<hardening::ReferenceMonitor> monitor;
  std::unique_ptr<ck::SafetyKernel> own_kernel;
  ck::SafetyKernel* own = nullptr;
  std::shared_ptr<ck::Ledger> ledger;
  std::unique_ptr<ck::SharedKernel> shared;
  std::shared_ptr<ck::PoolTree> pools;
  if (args.ledger.empty()) {
    ck::KernelOptions options;
    options.pools = pools = load_pools_option(args.pools, model.get());
    options.record_rejections = true;
    // The key is read before the trace is opened: a bad key touches no file.
    if (!args.signing_key.empty()) options.signer = signer_from_key_file(args.signing_key);
    if (!args.trace.empty())
      options.writer = std::make_shared<ck::TraceWriter>(
          args.trace, ck::FlushPolicy::flush, ck::TraceOpen::create);
    options.guard = std::move(guard);
    monitor = make_monitor(model, options, args.allow_programs);
    if (monitor) {
      own = &monitor->kernel();
    } else {
      own_kernel = std::make_unique<ck::SafetyKernel>(model, std::move(options));
      own = own_kernel.get();
    }
  } else {
    refuse_pools_file_on_ledger(args.pools, args.ledger);
    refuse_monitor_on_ledger(*model);
    ck::SharedOptions options;
    // The key is read before the ledger is opened: a bad key touches no ledger.
    if (!args.signing_key.empty()) options.signer = signer_from_key_file(args.signing_key);
    options.checkpoint_every = args.checkpoint_every;
    ledger = clampai::ledger::open_ledger(args.ledger, model->name);
    options.record_rejections = true;
    options.guard = std::move(guard);
    shared = std::make_unique<ck::SharedKernel>(model, ledger, std::move(options));
  }
  const ck::SafetyKernel& kernel = shared ? shared->local() : *own;

  const auto to_step = [&](const ca::StepRecord& s) {
    report::AgentStep step;
    step.index = s.index;
    step.source = std::string(ca::to_string(s.source));
    if (s.failure) step.failure = std::string(ca::to_string(*s.failure));
    step.action = s.action;
    step.params = s.params;
    step.approved = s.approved;
    step.reasons = s.reasons;
    step.repair = s.repair;
    step.would_be = s.would_be;
    step.cost = s.cost;
    step.spent = s.spent;
    step.input_tokens = s.tokens.input_tokens;
    step.output_tokens = s.tokens.output_tokens;
    return step;
  };
  ca::OrchestratorOptions orchestrator_options;
  orchestrator_options.max_steps = args.max_steps;
  orchestrator_options.approve = make_approver(args.approvals);
  std::optional<ck::Checkpoints> checkpoints;
  if (own && args.checkpoint_every > 0) {
    checkpoints.emplace(args.checkpoint_every, own->trace_length());
    orchestrator_options.between_steps = [&checkpoints, own] { (void)checkpoints->after(*own); };
  }
  if (shared && args.checkpoint_every > 0)
    orchestrator_options.between_steps = [&shared] { (void)shared->checkpoint(); };
  const bool live = !quiet() && isatty(STDERR_FILENO) == 1;
  if (live) {
    orchestrator_options.on_step = [&](const ca::StepRecord& s) {
      std::cerr << report::agent_step_line(*model, to_step(s)) << "\n";
    };
  }
  // The committer: the kernel's; with --upstream, one that executes each step through its tool.
  std::unique_ptr<driver::Committer> base;
  if (shared)
    base = std::make_unique<driver::SharedCommitter>(*shared);
  else if (args.shadow)  // each step followed whatever the kernel decides
    base = std::make_unique<driver::ShadowCommitter>(*own);
  else
    base = std::make_unique<driver::LocalCommitter>(*own);
  std::unique_ptr<driver::Committer> tools;
  if (args.upstream) {
    args.upstream_options.command = args.command;
    tools = server::upstream_committer(
        *base, own, shared.get(), bindings, args.upstream_options, std::cerr);
  }
  const ca::OrchestratorResult r =
      ca::Orchestrator(tools ? *tools : *base, shared != nullptr, *client, orchestrator_options)
          .run();
  std::optional<MonitorVerdict> verdict;
  if (monitor) verdict = finish_monitored(*monitor, r.goal_reached);
  // A shared trace is never sealed by one of its processes: the others go on (a checkpoint
  // covers what is there when this process signs or checkpoints).
  if (shared) (void)shared->checkpoint(/*final=*/true);
  const std::optional<ck::TraceEntry> seal =
      own ? std::optional<ck::TraceEntry>(own->seal()) : std::nullopt;
  const ck::TraceCheck check = kernel.verify_trace();
  const auto budget = kernel.budget();

  report::AgentReport out;
  out.spec = args.spec;
  out.model = model.get();
  out.llm = args.llm;
  out.llm_model = args.model;
  out.termination = std::string(ca::to_string(r.termination));
  out.goal_reached = r.goal_reached;
  out.message = r.message;
  if (verdict) {
    out.termination = verdict->termination;
    out.goal_reached = false;
    out.message = std::string(ck::to_string(verdict->reason.code)) + ": " + verdict->reason.message;
  }
  out.steps = r.steps;
  out.executed = r.executed;
  out.rejected = r.rejected;
  out.llm_calls = r.llm_calls;
  out.dominant = r.dominant_choices;
  out.fallbacks = r.fallbacks;
  for (std::size_t k = 0; k < ca::kFailureKinds; ++k)
    out.failures.emplace_back(std::string(ca::to_string(static_cast<ca::FailureKind>(k))),
                              r.failures[k]);
  out.rejections_by_reason = r.rejections_by_reason;
  out.input_tokens = r.tokens.input_tokens;
  out.output_tokens = r.tokens.output_tokens;
  out.total = budget.total();
  out.net = budget.net();
  out.gross = budget.gross();
  out.step_limit = model->budget.step_limit;
  out.progress = r.progress;
  for (const auto& s : r.log) out.log.push_back(to_step(s));
  out.trace_entries = seal ? seal->sequence + 1 : shared->length();
  out.trace_head = seal ? seal->hash : shared->head();
  // Every entry of a shared trace, this process's and the others', was replayed to its hash.
  out.trace_verified = check.ok;
  out.trace_file = shared ? ledger->describe() : args.trace;
  out.transcript_file = args.transcript;
  out.lookahead = args.lookahead;
  if (shared) out.ledger = report::LedgerSection{ledger->describe(), shared->stats()};
  if (pools) out.pools = pools->status();
  out.approvals = {r.approvals_granted, r.approvals_denied, r.approvals_expired, {}};
  out.shadow = {r.shadow, r.shadow_rejections};
  for (const driver::Ticket& t : r.approvals_waiting)
    out.approvals.waiting.emplace_back(t.id, t.action);
  // On a ledger: the pools of the task's path as the ledger has them now.
  if (shared && !model->budget.pool.empty())
    out.pools = clampai::ledger::pool_status(ledger->pool_path(model->budget.pool), true);
  report::write_agent(std::cout, format_of(args.format), out);
  return out.goal_reached ? 0 : 1;
}

}  // namespace

CLI::App* add_agent_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "agent",
      "Let an LLM drive a task spec: it chooses among the ready actions, the safety kernel "
      "decides each one");
  set_help_footer(cmd,
                  "0 goal reached, 1 not reached, 2 bad input (a bad spec, an unknown --llm, a "
                  "missing API key)",
                  "clampai agent examples/quickstart.json --llm mock",
                  "docs/AGENT.md");
  cmd->add_option("SPEC", args.spec, "Task spec (JSON)")->required();
  cmd->add_option("--llm",
                  args.llm,
                  "Who chooses: mock (no network), anthropic (ANTHROPIC_API_KEY) or openai "
                  "(OPENAI_API_KEY; also OpenAI-compatible local servers with --base-url)")
      ->required()
      ->check(CLI::IsMember({"mock", "anthropic", "openai"}));
  cmd->add_option("--model", args.model, "The vendor's model; default: the adapter's");
  cmd->add_option("--base-url",
                  args.base_url,
                  "The API's root: for anthropic without /v1, for openai with /v1 (e.g. "
                  "http://127.0.0.1:8080/v1); default: the vendor's public endpoint");
  cmd->add_option("--llm-timeout-ms",
                  args.llm_timeout_ms,
                  "The LLM's time to answer one request, in milliseconds, connecting included "
                  "(1 to 3600000; default 120000): a request still unanswered then fails as a "
                  "`timeout` (not retried) and the step falls back like any LLM failure")
      ->option_text("MS")
      ->check(CLI::Range(std::uint32_t{1}, std::uint32_t{3'600'000}));
  cmd->add_option(
         "--max-steps", args.max_steps, "Stop after this many steps (besides the T2 bound)")
      ->check(CLI::Range(std::uint64_t{0}, std::uint64_t{1} << 62));
  auto* trace = cmd->add_option("--trace",
                                args.trace,
                                "Write the hash-chained trace (with the rejected proposals) to "
                                "this new JSON Lines file (/dev/null discards it)");
  cmd->add_option("--transcript",
                  args.transcript,
                  "Append every prompt and answer to this JSON Lines file, created owner-only "
                  "(never the API key); never a symbolic link or a special file but /dev/null");
  cmd->add_option("--lookahead",
                  args.lookahead,
                  "Reject actions after which a capture basin is reachable within K more steps")
      ->option_text("K")
      ->check(CLI::Range(0U, 64U));
  cmd->add_option("--ledger",
                  args.ledger,
                  "Share the budget, state and trace with other processes through this ledger: "
                  "postgresql://...[#TASK] (a libpq URI; the task defaults to the spec's name), "
                  "file:PATH or memory:; the trace, with every process's rejections, is the "
                  "ledger's")
      ->excludes(trace);
  cmd->add_option("--pools",
                  args.pools,
                  "A pools file (JSON): the budget pools the spec's budget.pool names; a charge "
                  "commits only if it fits every level (docs/POOLS.md). Not with --ledger, "
                  "whose pools are the ledger's (`clampai ledger pools apply`)")
      ->option_text("FILE");
  cmd->add_flag("--upstream",
                args.upstream,
                "Execute each approved action through the upstream MCP tool the spec's bindings "
                "bind to it: COMMAND after `--` is started (no shell) as the upstream server "
                "(docs/GATEWAY.md)");
  cmd->add_option("COMMAND",
                  args.command,
                  "With --upstream: the upstream MCP server and its arguments, after `--`");
  add_upstream_options(cmd, args.upstream_options);
  for (const char* name : {"--upstream-timeout-ms", "--clear-env", "--env"})
    cmd->get_option(name)->needs("--upstream");
  add_allow_program_option(cmd, args.allow_programs);
  add_approvals_option(cmd, args.approvals);
  add_shadow_flag(cmd,
                  args.shadow,
                  "the report lists the steps the kernel would have rejected and marks them "
                  "in its log");
  cmd->add_option("--signing-key",
                  args.signing_key,
                  "Sign the seal and every checkpoint with this Ed25519 private key (PEM, "
                  "PKCS#8: `clampai keygen`); `trace verify --public-key` checks them. With "
                  "--ledger: the checkpoints this process commits, and one at its end")
      ->option_text("FILE");
  cmd->add_option("--checkpoint-every",
                  args.checkpoint_every,
                  "Append a checkpoint entry (signed with --signing-key) every N trace entries")
      ->option_text("N")
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1} << 40));
  cmd->add_option("--format", args.format, "Output format")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  add_quiet_flag(cmd);
  return cmd;
}

int run_agent_command() {
  try {
    return agent_command();
  } catch (const Error& e) {
    if (dynamic_cast<const SpecError*>(&e) != nullptr)
      return fail(args.format, "agent", args.spec, describe(args.spec, e));
    return fail(args.format, "agent", args.spec, e.what());
  }
}

}  // namespace clampai::cli
