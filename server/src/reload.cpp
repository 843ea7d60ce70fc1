// Reloads behind proofs (docs/SERVE.md, "Reloads"): the three checks, the commit (the
// `spec_changed` entry is the commit point: the new spec is kept by digest before it, the
// task's spec file replaced after it), and the specs a restart needs to replay the trace.
#include "reload.hpp"

#include <filesystem>
#include <mutex>
#include <shared_mutex>
#include <system_error>
#include <utility>

#include "clampai/kernel/error.hpp"
#include "clampai/kernel/file.hpp"
#include "clampai/kernel/security.hpp"
#include "clampai/kernel/spec_loader.hpp"
#include "clampai/server/principals.hpp"
#include "clampai/verifier/verify.hpp"
#include "json_out.hpp"

namespace clampai::server {

namespace ck = clampai::kernel;
namespace cv = clampai::verifier;
namespace fs = std::filesystem;

std::string spec_file(const std::string& data_dir, const std::string& task) {
  return (fs::path(data_dir) / (task + ".spec.json")).string();
}

std::string specs_dir(const std::string& data_dir) {
  return (fs::path(data_dir) / "specs").string();
}

namespace {

std::string kept_path(const std::string& data_dir, std::string_view digest) {
  return (fs::path(specs_dir(data_dir)) / (std::string(digest) + ".json")).string();
}

bool is_digest(std::string_view d) {
  return d.size() == 64 && d.find_first_not_of("0123456789abcdef") == std::string_view::npos;
}

// Keeps `text` (a spec of digest `digest`) as DATA/specs/DIGEST.json, unless kept already.
void keep_spec(const std::string& data_dir, std::string_view digest, std::string_view text) {
  std::error_code ec;
  fs::create_directory(specs_dir(data_dir), ec);
  if (ec) throw FileError("cannot create `" + specs_dir(data_dir) + "`: " + ec.message());
  const std::string path = kept_path(data_dir, digest);
  if (fs::symlink_status(path, ec).type() != fs::file_type::not_found) return;
  ck::write_file_atomically(path, text, /*replace=*/false, "kept spec");
}

}  // namespace

ck::SpecsByDigest kept_specs(const std::string& data_dir,
                             std::shared_ptr<const ck::TaskModel> current) {
  return [data_dir, current](std::string_view digest) -> std::shared_ptr<const ck::TaskModel> {
    if (digest == current->digest) return current;
    if (data_dir.empty() || !is_digest(digest)) return nullptr;
    const std::string path = kept_path(data_dir, digest);
    std::error_code ec;
    if (fs::symlink_status(path, ec).type() == fs::file_type::not_found) return nullptr;
    std::shared_ptr<const ck::TaskModel> model;
    try {
      model = ck::load_spec(ck::read_own_file(path, ck::max_input_bytes()));
    } catch (const SpecError& e) {
      throw InvalidArgument("the kept spec `" + path + "` does not load: " + e.what());
    }
    if (model->digest != digest)
      throw InvalidArgument("the kept spec `" + path + "` has the digest " + model->digest +
                            ", not the one it is named by");
    return model;
  };
}

void restore_spec_file(const std::string& data_dir,
                       const ck::TaskModel& model,
                       const std::function<void(const std::string&)>& log) {
  const std::string spec = spec_file(data_dir, model.name);
  ck::copy_file_atomically(kept_path(data_dir, model.digest), spec, /*replace=*/true, "spec");
  if (log)
    log("task `" + model.name + "`: its trace changed to spec " + model.digest.substr(0, 12) +
        "... last; `" + spec + "` is that spec again (a reload was cut short after its commit)");
}

std::optional<std::string> serve_refusal(const ck::TaskModel& model) {
  if (!is_task_name(model.name))
    return "name: `" + model.name +
           "` cannot name a served task (letters, digits, `_` and `-`, at most 64)";
  if (ck::needs_reference_monitor(model)) return monitor_refusal(model.name);
  for (std::size_t i = 0; i < model.actions.size(); ++i) {
    const auto& approval = model.actions[i].approval;
    if (approval && !right_named(approval->right))
      return "actions[" + std::to_string(i) + "].approval.right: unknown right `" +
             approval->right + "` (the rights: read, decide, execute, approve, admin)";
  }
  return std::nullopt;
}

Reloaded reload_task(Task& task, std::string_view text, const ReloadOptions& options) {
  // The task's name, and whether it is on a ledger, never change.
  const std::string name = [&] {
    std::shared_lock hold(task.reload_mutex);
    return task.model().name;
  }();
  if (task.shared() != nullptr)
    throw ReloadRefused("ledger",
                        "task `" + name +
                            "` is on a shared ledger, whose other processes run its spec too: "
                            "its spec cannot be reloaded (serve it with --data-dir)",
                        {});
  // (1) Well-formed: the one spec loader, and what the service serves.
  std::shared_ptr<const ck::TaskModel> next;
  try {
    next = ck::load_spec(text);
  } catch (const SpecError& e) {
    throw ReloadRefused(
        "spec", "the new spec is not well-formed", {std::string("spec: ") + e.what()});
  }
  std::vector<std::string> bad;
  if (next->name != name)
    bad.push_back("name: the new spec names task `" + next->name + "`, not `" + name + "`");
  if (auto why = serve_refusal(*next)) bad.push_back(*why);
  if (!next->budget.pool.empty())
    bad.push_back("budget.pool: a task in a budget pool cannot be reloaded yet");
  try {  // a kernel refuses an initial state that breaks its own spec
    ck::SafetyKernel check(next);
  } catch (const InvalidArgument& e) {
    bad.push_back(e.what());
  }
  if (!bad.empty()) throw ReloadRefused("spec", "the new spec is not well-formed", bad);
  Reloaded r;
  r.digest = next->digest;
  {
    std::shared_lock hold(task.reload_mutex);
    r.previous = task.model().digest;
  }
  if (r.previous == r.digest) return r;  // in force already: nothing to do
  // (2) `verify` refutes nothing (as `clampai verify` decides: lints are warnings; an unknown,
  // a timeout or an opaque predicate, is not a refutation).
  cv::VerifyOptions verify;
  verify.timeout_ms = options.solver_timeout_ms;
  const cv::Report report = cv::verify(next, verify);
  std::vector<std::string> refuted;
  for (const cv::Obligation& o : report.obligations)
    if (o.kind != cv::ObligationKind::lint && o.verdict == cv::VerdictKind::refuted)
      refuted.push_back(o.id + (o.reason.empty() ? "" : ": " + o.reason));
  if (!refuted.empty())
    throw ReloadRefused(
        "verify",
        "verify refutes " + std::to_string(refuted.size()) + " obligation(s) of the new spec",
        refuted);
  r.proved = report.proved;
  r.unknown = report.unknown;
  // (3) The current state satisfies the new spec's blocking invariants (and the rest carries
  // over), checked and committed with every other request on the task held off.
  std::unique_lock hold(task.reload_mutex);
  const ck::SafetyKernel& now = task.kernel();
  if (now.is_sealed())
    throw InvalidArgument("task `" + name + "`: its trace is sealed; nothing may follow a seal");
  const std::shared_ptr<const ck::TaskModel> from = now.model_ptr();
  r.previous = from->digest;
  if (r.previous == r.digest) return r;
  const ck::Situation situation = now.situation();
  auto carried = ck::carry_situation(*from, situation, *next);
  if (auto* problems = std::get_if<std::vector<std::string>>(&carried))
    throw ReloadRefused(
        "state", "the task's current state cannot be carried over to the new spec", *problems);
  if (const std::size_t pending = task.pending().size(); pending > 0)
    throw ReloadRefused("state",
                        "the task's current state cannot be carried over to the new spec",
                        {std::to_string(pending) +
                         " approval ticket(s) are pending: answer them or let them expire first"});
  const ck::Carried& c = std::get<ck::Carried>(carried);
  for (const auto& [var, value] : c.added) r.added.push_back(var);
  r.dropped = c.dropped;
  r.changed = true;
  if (options.dry_run) return r;
  // The commit. The new spec is kept by digest first (and the old one, if an older server did
  // not keep it), so that a restart finds every spec the trace names.
  const std::string& dir = options.storage.data_dir;
  if (!dir.empty() && !task.trace_path().empty()) {
    const std::string current = spec_file(dir, name);
    std::error_code ec;
    if (fs::symlink_status(kept_path(dir, from->digest), ec).type() == fs::file_type::not_found) {
      const std::string old_text = ck::read_own_file(current, ck::max_input_bytes());
      if (ck::load_spec(old_text)->digest != from->digest)
        throw Error("`" + current + "` is not the spec in force (digest " + from->digest +
                    "): the data directory was changed under the server");
      keep_spec(dir, from->digest, old_text);
    }
    keep_spec(dir, next->digest, text);
  }
  if (options.pause) options.pause("reload:spec-stored");
  ck::KernelOptions k;
  k.signer = options.storage.signer;
  k.trace_window = kTraceWindow;
  k.undo_depth = kUndoDepth;
  if (options.storage.clock) k.clock = options.storage.clock;
  k.writer = task.writer();
  ck::SpecChange change{.from = from,
                        .situation = situation,
                        .sequence = now.trace_length(),
                        .prev = now.head_hash(),
                        .principal = options.principal,
                        .recorded = std::nullopt};
  k.spec_change = std::move(change);
  auto kernel = std::make_unique<ck::SafetyKernel>(next, std::move(k));  // writes the entry
  r.sequence = kernel->trace_length() - 1;
  task.replace_kernel(std::move(kernel));
  if (options.pause) options.pause("reload:trace-appended");
  if (!dir.empty() && !task.trace_path().empty()) {
    try {
      ck::write_file_atomically(spec_file(dir, name), text, /*replace=*/true, "spec");
    } catch (const std::exception& e) {  // the trace is the commit point: a restart repairs it
      if (options.log) options.log("task `" + name + "`: " + e.what());
    }
  }
  if (options.log)
    options.log("task `" + name + "`: spec " + r.previous.substr(0, 12) + "... replaced by " +
                r.digest.substr(0, 12) + "... (trace entry " + std::to_string(*r.sequence) + ")");
  return r;
}

std::string reloaded_json(std::string_view task, const Reloaded& r, bool dry_run) {
  JsonOut j;
  j.begin_object().key("task").value(task).key("changed").value(r.changed);
  j.key("dry_run").value(dry_run).key("spec_digest").value(r.digest);
  j.key("previous_digest").value(r.previous).key("sequence");
  if (r.sequence) {
    j.value(*r.sequence);
  } else {
    j.null();
  }
  j.key("added").begin_array();
  for (const std::string& v : r.added) j.value(v);
  j.end_array().key("dropped").begin_array();
  for (const std::string& v : r.dropped) j.value(v);
  j.end_array().key("verify").begin_object();
  j.key("proved").value(static_cast<std::uint64_t>(r.proved));
  j.key("unknown").value(static_cast<std::uint64_t>(r.unknown));
  j.end_object().end_object();
  return j.take();
}

std::string refused_json(const ReloadRefused& r) {
  JsonOut j;
  j.begin_object().key("error").begin_object();
  j.key("code").value("reload_refused").key("message").value(r.what());
  j.key("failed").value(r.failed).key("details").begin_array();
  for (const std::string& d : r.details) j.value(d);
  j.end_array().end_object().end_object();
  return j.take();
}

bool dry_run_of(std::string_view target) {
  const auto q = target.find('?');
  if (q == std::string_view::npos) return false;
  std::string_view query = target.substr(q + 1);
  bool dry = false;
  while (!query.empty()) {
    const auto amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (pair.empty()) continue;
    if (pair == "dry_run=1" || pair == "dry_run=true") {
      dry = true;
    } else if (pair == "dry_run=0" || pair == "dry_run=false") {
      dry = false;
    } else {
      throw InvalidArgument("query: `" + std::string(pair) +
                            "`: the only parameter is dry_run=1|true|0|false");
    }
  }
  return dry;
}

}  // namespace clampai::server
