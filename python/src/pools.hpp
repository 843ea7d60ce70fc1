// Budget pools for Python (pools.cpp, docs/POOLS.md).
#pragma once

#include <pybind11/pybind11.h>

namespace clampai::python {

namespace py = pybind11;

/// Binds `_PoolTree` (a `clampai::kernel::PoolTree`, shared with the kernels bound to it):
/// `_status()`, `set_total(name, total)`, `names`; and `_pools_from_json(text)`,
/// `_load_pools(path)`, which make one.
void bind_pools(py::module_& m);

}  // namespace clampai::python
