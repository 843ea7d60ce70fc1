#include "compose_cmd.hpp"

#include <cctype>
#include <cstdlib>
#include <iostream>

#include "clampai/composition/compose.hpp"
#include "clampai/kernel/error.hpp"
#include "clampai/kernel/spec_loader.hpp"
#include "clampai/report/compose.hpp"
#include "clampai/report/progress.hpp"
#include "output.hpp"

namespace clampai::cli {

namespace cc = clampai::composition;

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
  set_help_footer(cmd,
                  "0 all proved, 1 refuted, 2 bad manifest or spec, 3 unknown",
                  "clampai compose examples/compose/pipeline.json --cache .clampai --format junit",
                  "docs/COMPOSE.md");
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
  add_run_timeout_option(cmd, args.timeout_s);
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
  add_quiet_flag(cmd);
  return cmd;
}

int run_compose_command() {
  report::Progress progress(report::Progress::for_stderr("compose", quiet()));
  const auto fail = [&progress](const std::string& message) {
    progress.stop();  // erases a live line before the message
    return cli::fail(args.format, "compose", args.manifest, message);
  };
  progress.phase("loading the manifest");
  cc::Manifest manifest;
  try {
    manifest = cc::load_manifest(args.manifest);
  } catch (const clampai::Error& e) {
    return fail(e.what());
  }
  if (args.graph == "dot") {
    progress.stop();
    std::cout << cc::to_dot(manifest);
    return 0;
  }
  cc::ComposeOptions options;
  options.cache_dir = args.cache;
  try {
    if (!args.cache.empty()) options.cache_key = cache_key();
  } catch (const clampai::Error& e) {
    return fail(e.what());
  }
  options.jobs = args.jobs;
  options.timeout_ms = args.timeout_ms;
  options.run_timeout_ms = run_timeout_ms(args.timeout_s);
  options.max_obligations = args.max_obligations;
  options.progress = [&progress](std::size_t done, std::size_t total) {
    progress.update(done, total);
  };
  cc::ComposeReport result;
  progress.phase("verifying the tasks and the composition obligations");
  try {
    result = cc::compose(manifest, options);
  } catch (const clampai::Error& e) {
    return fail(e.what());
  }
  const double seconds = progress.seconds();
  progress.stop();
  report::write_compose(
      std::cout, format_of(args.format), {args.manifest, &result, args.show_proved, seconds});
  return result.exit_code(args.fail_on_unknown);
}

}  // namespace clampai::cli
