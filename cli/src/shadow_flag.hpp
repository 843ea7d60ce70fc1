// Shadow mode from the command line (`clampai run`, `clampai agent`, `clampai mcp`; docs/CLI.md,
// "Shadow mode"): every step followed whatever the kernel decides, the would-be rejections
// reported. Private to the CLI.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "clampai/kernel/model.hpp"

namespace clampai::cli {

/// Adds `--shadow` to `cmd`; `what` ends its help (what the command reports of it).
CLI::Option* add_shadow_flag(CLI::App* cmd, bool& shadow, const std::string& what);

/// What a command with `--shadow` was also given.
struct ShadowUse {
  const kernel::TaskModel* model = nullptr;
  std::string ledger{};            // --ledger
  std::string approvals{};         // --approvals
  bool record_rejections = false;  // --record-rejections
  bool upstream = false;           // --upstream
};

/// Refuses what shadow mode cannot be used with, each with its reason (serve's messages: a
/// shared ledger, a budget in a pool), before any file is touched.
/// @throws InvalidArgument.
void refuse_shadow(const ShadowUse& use);

}  // namespace clampai::cli
