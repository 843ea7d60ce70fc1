// Attestors: independent checks of the world that an action or a goal must pass before the
// reference monitor lets it commit or declares success (docs/HARDENING.md).
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "clampai/kernel/model.hpp"
#include "clampai/kernel/state.hpp"

namespace clampai::hardening {

/// What an attestor is asked about: the model, the state the action would start from (or the
/// state whose goal is to be declared reached) and the action's id (empty for the goal).
struct AttestationContext {
  const kernel::TaskModel* model = nullptr;
  const kernel::State* state = nullptr;
  std::string action{};
};

/// The outcome of one attestation. `passed` is the verdict; `error` says why the attestor could
/// not decide (a timeout, a refused program, a transport failure): an attestation that errs
/// never passes (it fails closed).
struct Attestation {
  std::string attestor{};
  bool passed = false;
  std::string evidence{};  // what the attestor saw, bounded (program output, HTTP status...)
  std::string error{};     // empty iff the attestor reached a verdict
  /// One entry per dimension of a MultiDimensionalAttestor, in declaration order.
  std::vector<Attestation> dimensions{};
};

/// An independent check. Implementations must be safe to call from several threads at once
/// (the reference monitor serialises nothing on their behalf) and must not throw: failures are
/// reported in `Attestation::error`.
class Attestor {
 public:
  virtual ~Attestor() = default;
  /// The name the spec refers to it by.
  [[nodiscard]] virtual const std::string& name() const = 0;
  /// Runs the check. Never throws; an exception escaping an implementation is reported by
  /// `run_attestor` as a failure.
  [[nodiscard]] virtual Attestation attest(const AttestationContext& context) const = 0;
};

/// `text` with every `{name}` replaced by the value of state variable `name` in `context`
/// (strings as they are, other values as `Value::to_string` renders them); `{{` and `}}` are
/// literal braces.
/// @throws clampai::InvalidArgument naming the placeholder if it is malformed, names no
/// variable, or the context has no state.
std::string substitute_state(const std::string& text, const AttestationContext& context);

/// Runs `attestor`, turning an exception it throws into a failed attestation with the
/// exception's message as its error (fail closed).
[[nodiscard]] Attestation run_attestor(const Attestor& attestor, const AttestationContext& context);

/// An attestor given as a C++ callable: passes iff the callable returns true. The callable may
/// write evidence; a throw is a failure with the exception's message. Level: conditional on the
/// callable (docs/HARDENING.md).
class PredicateAttestor final : public Attestor {
 public:
  using Predicate = std::function<bool(const AttestationContext&, std::string& evidence)>;
  /// @throws clampai::InvalidArgument if `name` is empty or `predicate` is empty.
  PredicateAttestor(std::string name, Predicate predicate);
  [[nodiscard]] const std::string& name() const override { return name_; }
  [[nodiscard]] Attestation attest(const AttestationContext& context) const override;

 private:
  std::string name_;
  Predicate predicate_;
};

/// Several attestors, the quality dimensions of one judgement: passes iff at least `quorum` of
/// them pass (every one, by default). Every dimension runs (in order), so the evidence of each
/// is kept even after the verdict is known.
class MultiDimensionalAttestor final : public Attestor {
 public:
  /// `quorum` 0 means all dimensions.
  /// @throws clampai::InvalidArgument if `name` is empty, there are no dimensions, a dimension
  /// is null, two dimensions share a name, or `quorum` exceeds the number of dimensions.
  MultiDimensionalAttestor(std::string name,
                           std::vector<std::shared_ptr<const Attestor>> dimensions,
                           std::size_t quorum = 0);
  [[nodiscard]] const std::string& name() const override { return name_; }
  [[nodiscard]] Attestation attest(const AttestationContext& context) const override;
  /// How many dimensions must pass.
  [[nodiscard]] std::size_t quorum() const noexcept { return quorum_; }

 private:
  std::string name_;
  std::vector<std::shared_ptr<const Attestor>> dimensions_;
  std::size_t quorum_;
};

}  // namespace clampai::hardening
