// The bound types shared by the extension's source files.
#pragma once

#include <memory>
#include <optional>

#include "clampai/kernel/model.hpp"
#include "clampai/kernel/safety_kernel.hpp"
#include "clampai/kernel/state.hpp"
#include "decision.hpp"

namespace clampai::python {

/// A checked model, as Python holds it (`TaskModel`).
struct Model {
  std::shared_ptr<const kernel::TaskModel> model;
  bool python_predicates = false;  // some invariant (or the goal) calls Python
};

/// A receipt of a committed action (`Receipt`).
struct PyReceipt {
  kernel::Receipt receipt;
  std::shared_ptr<const kernel::TaskModel> model;
};

/// What `execute` or `rollback` did (`Outcome`).
struct PyOutcome {
  PyDecision decision;
  std::optional<PyReceipt> receipt;
  kernel::State state;
};

/// `o` as a PyOutcome of `model`.
inline PyOutcome wrap_outcome(kernel::Outcome o,
                              const std::shared_ptr<const kernel::TaskModel>& model) {
  PyOutcome out{{std::move(o.decision), model}, std::nullopt, std::move(o.state)};
  if (o.receipt) out.receipt = PyReceipt{*o.receipt, model};
  return out;
}

}  // namespace clampai::python
