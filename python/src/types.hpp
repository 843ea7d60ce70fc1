// The bound types shared by the extension's source files.
#pragma once

#include <memory>

#include "clampai/kernel/model.hpp"
#include "clampai/kernel/safety_kernel.hpp"
#include "clampai/kernel/state.hpp"
#include "decision.hpp"
#include "outcome.hpp"

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

/// Receipt.to_dict(): `{"sequence", "action", "cost"}`.
py::dict receipt_dict(const PyReceipt& r);

}  // namespace clampai::python
