// Operadic composition of verified tasks (OC-1, OC-2): a manifest composes task specs through
// their interface contracts; each task is verified once (or its cached certificate reused) and
// only the composition obligations are checked.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "clampai/kernel/model.hpp"
#include "clampai/verifier/verify.hpp"

namespace clampai::composition {

/// The kinds of node of a composition.
enum class NodeKind : std::uint8_t { task, sequential, parallel, conditional, repeat, group };
std::string_view to_string(NodeKind k);

/// A node of the composition tree. A `group` is a whole manifest (the root, or one included
/// with `{"manifest": ...}`): its interface, when declared, is what its parent sees.
struct Node {
  NodeKind kind = NodeKind::task;
  std::size_t task = 0;  // task: index into Manifest::tasks
  std::vector<Node>
      children{};           // sequential, parallel; conditional: then[, else]; repeat, group: 1
  kernel::ExprPtr guard{};  // conditional
  std::int64_t times = 1;   // repeat
  std::size_t group = 0;    // group: index into Manifest::groups
  std::string path{};       // where it is: `pipeline.json: compose.sequential[1]`
  kernel::SourceLoc loc{};
};

/// A task spec used by the composition.
struct TaskRef {
  std::string name{};       // as the manifest names it (`sub.deploy` inside an included manifest)
  std::string file{};       // the spec file, as resolved
  std::string manifest{};   // the manifest that names it
  kernel::SourceLoc loc{};  // of its entry in that manifest
  std::shared_ptr<const kernel::TaskModel> model{};
};

/// A manifest: the root one, or one included by it.
struct Group {
  std::string name{};
  std::string file{};
  std::optional<kernel::Decimal> budget{};
  kernel::ExprPtr assumes{};     // null: not declared
  kernel::ExprPtr guarantees{};  // null: not declared
  std::vector<std::string> forbidden{};
  kernel::SourceLoc loc{};
};

/// A loaded, validated composition.
struct Manifest {
  std::string file{};
  std::vector<TaskRef> tasks{};
  std::vector<Group> groups{};  // groups[0] is the root manifest
  Node root{};                  // a group node for groups[0]
  /// Every variable of every task (shared by name, declarations agreeing), for expressions of
  /// the manifests themselves.
  std::shared_ptr<const kernel::TaskModel> universe{};
};

/// Loads a manifest and every spec and manifest it names (paths relative to the naming file).
/// @throws SpecError naming the file, the JSON path and what is wrong: malformed JSON, unknown
/// keys or names, a cycle of composites or manifests (with the names on it), a shared variable
/// whose declarations disagree (naming both specs), or an invalid spec.
Manifest load_manifest(const std::string& path);

/// The kinds of composition obligation.
enum class ObligationKind : std::uint8_t {
  task,          // a task's own verification (certificate)
  sequential,    // A's guarantees imply B's assumes
  parallel,      // branches do not interfere
  conditional,   // the guard with the incoming facts implies a branch's assumes
  repeat,        // the body's guarantees imply its own assumes
  interference,  // a task's action preserves another task's invariant (or guarantees)
  contract,      // a composite's declared assumes / guarantees
  budget,        // the parts' budgets fit the composite's
  forbidden,     // no task writes a variable forbidden in the composite
};
std::string_view to_string(ObligationKind k);

struct Obligation {
  ObligationKind kind = ObligationKind::sequential;
  std::string id{};  // stable, e.g. `sequential:provision->deploy`
  verifier::VerdictKind verdict = verifier::VerdictKind::unknown;
  std::string reason{};
  std::optional<verifier::Counterexample> counterexample{};
  std::vector<std::string> tasks{};  // the tasks involved
  std::string file{};                // the manifest (or, for kind task, the spec) it is located in
  kernel::SourceLoc loc{};
};

/// How a task's verification was obtained.
struct TaskResult {
  std::string name{};
  std::string file{};
  std::string digest{};      // SHA-256 of the canonical model
  bool reused = false;       // from a cached certificate
  std::string cache_note{};  // why a cached certificate was not used, if one existed
  std::size_t proved = 0, refuted = 0, unknown = 0, warnings = 0;
  std::vector<verifier::Obligation> findings{};  // its obligations that are not proved
};

struct ComposeOptions {
  std::string cache_dir{};  // empty: no certificates stored or reused
  unsigned jobs = 1;
  unsigned timeout_ms = 10000;
  /// A secret: when set, certificates are sealed with HMAC-SHA-256 under it and only
  /// certificates sealed with the same key are reused, so whoever can write the cache but does
  /// not hold the key cannot forge one. Empty: a plain SHA-256 seal (detects accidents only).
  std::string cache_key{};
  /// The whole run's wall-time limit in milliseconds (0: none). Tasks and obligations not
  /// reached by then are `unknown` with the reason `not checked: the run's time limit ...`;
  /// near it, a check's solver limit is cut to the time left.
  std::uint64_t run_timeout_ms = 0;
  /// The most solver obligations a run may have (0: no limit). They are counted before any
  /// work (they grow with the square of a parallel group's width): beyond the limit compose()
  /// throws an Error naming the count and the part of the composition most of them come from.
  std::size_t max_obligations = kDefaultMaxObligations;
  /// Called with (done, total) once with done = 0, then as each task verification and each
  /// solver obligation completes (total counts both). Called from worker threads, one call at
  /// a time; keep it short. Empty: no calls.
  std::function<void(std::size_t done, std::size_t total)> progress{};

  static constexpr std::size_t kDefaultMaxObligations = 1'000'000;
};

struct ComposeReport {
  std::vector<TaskResult> tasks{};
  std::vector<Obligation> obligations{};
  std::size_t proved = 0, refuted = 0, unknown = 0;
  std::size_t reused = 0;  // tasks whose certificate was reused
  double seconds = 0;
  /// 0 everything proved, 1 something refuted (or a task not verified), 3 unknowns only.
  [[nodiscard]] int exit_code(bool fail_on_unknown = false) const;
};

/// Verifies every task (reusing certificates from `cache_dir`) and checks every composition
/// obligation. Refuted obligations carry counterexamples replayed through the kernels.
ComposeReport compose(const Manifest& manifest, const ComposeOptions& options = {});

/// The composition graph (a Boost.Graph) in Graphviz dot format.
std::string to_dot(const Manifest& manifest);

/// The toolkit version recorded in certificates: the release and a digest of the kernel,
/// verifier and composition sources (`clampai 0.1.0 (sources 0123456789abcdef)`).
std::string_view toolkit_version();

}  // namespace clampai::composition
