// `run --ledger URL` and `trace verify URL#TASK`: the CLI on shared ledgers (private to the CLI;
// docs/LEDGER.md).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "clampai/kernel/ledger.hpp"

namespace CLI {
class App;
}

namespace clampai::cli {

/// `clampai ledger pools apply FILE --ledger URL` and `clampai ledger pools show --ledger URL`:
/// the budget pools of a PostgreSQL ledger (docs/POOLS.md).
CLI::App* add_ledger_command(CLI::App& app);
int run_ledger_command();

/// What `run` passes to a run on a shared ledger.
struct LedgerRun {
  std::string spec;
  std::string ledger;  // --ledger
  std::string format;
  std::optional<std::uint64_t> max_steps;
  bool record_rejections = false;  // committed to the shared trace
  std::optional<unsigned> lookahead;
  std::uint32_t lookahead_timeout_ms = 1000;
  bool recover = false;
  std::string signing_key;             // --signing-key: signs the checkpoints this run commits
  std::uint64_t checkpoint_every = 0;  // --checkpoint-every
  std::string approvals{};             // --approvals: the tickets live in the shared trace
};

/// Runs `args.spec` with the deterministic driver on the shared ledger `args.ledger` (the task
/// is the URL's fragment, else the spec's `name`); prints the run report, whose `actions` are
/// what this process committed. With a signing key or `checkpoint_every`, commits the
/// checkpoints due between steps and one at its end (`SharedKernel::checkpoint`). Returns 0 if
/// the goal is reached, else 1.
int run_on_ledger(const LedgerRun& args);

/// True iff `target` of `trace verify` names a database ledger rather than a file.
bool names_ledger(const std::string& target);

/// The file of `trace verify`'s `target` when it is a `file:PATH` (or `file://PATH`) ledger URL,
/// as `--ledger` takes it: verified as the file is, but live (a ledger is never sealed). Else
/// nullopt. @throws InvalidArgument for `memory:`, which lives and dies with its process.
std::optional<std::string> ledger_file(const std::string& target);

/// `trace verify URL#TASK`: verifies the task's chain in the database as a trace file is
/// verified (each line canonical, byte for byte, then the chain; a shared ledger is open, so
/// no seal is required) and, with `spec`, replays it (keeping `undo_depth` undo records); with
/// `public_key` (a file), checks that every checkpoint is signed by its key (`--public-key`).
/// The entries are read page by page, streaming, at any length. Returns 0 if it verifies,
/// else 1.
int verify_ledger_trace(const std::string& url,
                        const std::string& spec,
                        const std::string& format,
                        std::size_t undo_depth,
                        const std::string& public_key = {});

}  // namespace clampai::cli
