#include "mcp_cmd.hpp"

#include <iostream>

#include "clampai/kernel.hpp"
#include "clampai/server.hpp"
#include "output.hpp"
#include "shadow_flag.hpp"

namespace clampai::cli {

namespace {

std::string spec;
bool shadow = false;  // --shadow

}  // namespace

CLI::App* add_mcp_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "mcp",
      "Serve a task spec as a Model Context Protocol server on stdio: each action a tool, each "
      "call decided by the kernel (docs/SERVE.md)");
  set_help_footer(cmd,
                  "0 standard input ended, 2 bad input",
                  "clampai mcp examples/quickstart.json",
                  "docs/SERVE.md");
  cmd->add_option("SPEC", spec, "Task spec (JSON)")->required();
  add_shadow_flag(cmd,
                  shadow,
                  "each tool call's result says so (`enforced`) and what the kernel would "
                  "have answered (`shadow`)");
  return cmd;
}

int run_mcp_command() {
  try {
    const auto model = kernel::load_spec_file(spec);
    // std::cin then reads stdin in blocks (synchronised with C's stdio, one byte a call).
    std::ios::sync_with_stdio(false);
    return server::serve_mcp(model, std::cin, std::cout, shadow);
  } catch (const Error& e) {
    if (dynamic_cast<const SpecError*>(&e) != nullptr)
      return fail("text", "mcp", spec, describe(spec, e));
    return fail("text", "mcp", spec, e.what());
  }
}

}  // namespace clampai::cli
