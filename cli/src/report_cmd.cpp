#include "report_cmd.hpp"

#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <sstream>

#include "clampai/hardening/subprocess.hpp"
#include "clampai/kernel/error.hpp"
#include "clampai/kernel/file.hpp"
#include "clampai/report/html.hpp"
#include "output.hpp"

namespace clampai::cli {

namespace {

struct Args {
  std::vector<std::string> inputs;
  std::string html;
  std::string spec;
  std::string layout = "auto";
  bool force = false;
} args;

// Graphviz's `dot`, found on PATH, as its resolved absolute path; empty if it is not there.
std::string find_dot() {
  const char* path = std::getenv("PATH");
  std::string dirs = path != nullptr ? path : "/usr/bin:/bin";
  std::size_t start = 0;
  while (start <= dirs.size()) {
    const auto colon = dirs.find(':', start);
    const std::string dir =
        dirs.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
    if (!dir.empty() && dir.front() == '/') {
      const std::string candidate = dir + "/dot";
      std::error_code ec;
      if (::access(candidate.c_str(), X_OK) == 0) {
        const auto real = std::filesystem::canonical(candidate, ec);
        if (!ec) return real.string();
      }
    }
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  return "";
}

// Lays graphs out with `dot -Tsvg`, run without a shell under the subprocess limits, through a
// private temporary directory; if anything fails, nullopt (the built-in layout), or with
// `insist` (--layout dot) an error.
report::GraphLayout graphviz_layout(const std::string& dot, bool insist) {
  return [dot, insist](const std::string& source) -> std::optional<std::string> {
    std::string why;
    try {
      std::string dir = (std::filesystem::temp_directory_path() / "clampai-report-XXXXXX").string();
      if (::mkdtemp(dir.data()) == nullptr) return std::nullopt;
      struct Cleanup {
        std::string dir;
        ~Cleanup() {
          std::error_code ec;
          std::filesystem::remove_all(dir, ec);
        }
      } cleanup{dir};
      const std::string in = dir + "/graph.dot";
      const std::string out = dir + "/graph.svg";
      kernel::write_file_atomically(in, source, false, "graph");
      hardening::SubprocessLimits limits;
      limits.timeout = std::chrono::milliseconds(20000);
      limits.cpu_seconds = 20;
      limits.file_size_bytes = 64ull << 20;
      const hardening::SubprocessRunner runner(hardening::ProgramAllowlist({dot}), limits);
      // -Kdot: Debian's `dot` is a link to a program that picks its layout engine by the name
      // it is run under, and the runner runs the resolved path.
      const auto r = runner.run({dot, "-Kdot", "-Tsvg", "-o", out, in});
      if (r.exit_code && *r.exit_code == 0) return kernel::read_file(out);
      why = r.error.empty() ? r.output : r.error;
    } catch (const std::exception& e) {
      why = e.what();
    }
    if (insist) throw Error("--layout dot: Graphviz's `" + dot + "` failed: " + why);
    return std::nullopt;
  };
}

}  // namespace

CLI::App* add_report_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "report",
      "Draw traces and the JSON reports of verify, compose and agent as one self-contained "
      "HTML page");
  set_help_footer(cmd,
                  "0 written, 1 written but a trace is broken or its replay differs, 2 bad input "
                  "(nothing written)",
                  "clampai report cloud.jsonl --spec examples/cloud_deploy.json --html run.html",
                  "docs/REPORT.md");
  cmd->add_option("INPUT",
                  args.inputs,
                  "A trace (JSON Lines), or the JSON report of `verify`, `compose` or `agent` "
                  "(recognised by its schema); several make one page")
      ->required();
  cmd->add_option("--html",
                  args.html,
                  "Write the page to this new file (an existing one is an error unless --force); "
                  "never through a symbolic link or into a special file")
      ->required();
  cmd->add_option("--spec",
                  args.spec,
                  "Replay the traces through the kernel for this spec (as `trace verify --spec`) "
                  "and draw the budget (T1) and each comparison invariant's margin; for an agent "
                  "report, the spec of its causal graph");
  cmd->add_flag("--force", args.force, "Replace the regular file given to --html if it exists");
  cmd->add_option("--layout",
                  args.layout,
                  "How graphs are laid out: auto (Graphviz's dot when it is on PATH, else "
                  "built-in), dot, builtin")
      ->check(CLI::IsMember({"auto", "dot", "builtin"}))
      ->capture_default_str();
  return cmd;
}

int run_report_command() {
  const std::string input = args.inputs.empty() ? "" : args.inputs.front();
  try {
    report::HtmlOptions options;
    options.spec = args.spec;
    if (args.layout != "builtin") {
      const std::string dot = find_dot();
      if (dot.empty() && args.layout == "dot")
        throw InvalidArgument("--layout dot: Graphviz's `dot` is not on PATH (install graphviz)");
      if (!dot.empty()) options.layout = graphviz_layout(dot, args.layout == "dot");
    }
    // Refuse an existing OUT before the inputs are read (they may be long traces).
    std::error_code ec;
    if (!args.force && std::filesystem::exists(std::filesystem::symlink_status(args.html, ec)))
      throw FileError("cannot write the HTML report `" + args.html +
                      "`: it exists (--force replaces it)");
    std::ostringstream page;
    const report::HtmlResult result = report::write_html(page, args.inputs, options);
    kernel::write_file_atomically(args.html, page.str(), args.force, "HTML report");
    std::string line = "wrote " + args.html + ":";
    for (std::size_t i = 0; i < args.inputs.size() && i < result.kinds.size(); ++i) {
      const bool trace = result.kinds[i] == report::HtmlInput::trace;
      line += std::string(i ? ", " : " ") + args.inputs[i] + " (" +
              (trace ? std::string("run") : std::string(report::to_string(result.kinds[i]))) +
              (trace && !args.spec.empty() ? ", replayed" : "") + ")";
    }
    std::cout << line << "\n";
    return result.findings ? 1 : 0;
  } catch (const SpecError& e) {
    return fail("text", "report", args.spec, describe(args.spec, e));
  } catch (const Error& e) {
    return fail("text", "report", input, e.what());
  } catch (const std::exception& e) {  // I/O of the file system
    return fail("text", "report", input, e.what());
  }
}

}  // namespace clampai::cli
