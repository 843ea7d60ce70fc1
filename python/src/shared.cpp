// A kernel on a shared ledger for Python (`_SharedKernel`, docs/LEDGER.md): the C++ SharedKernel
// on the ledger a URL names (`postgresql://...`, `file:PATH`, `memory:`), so that processes share
// one task's budget and trace. The GIL is released around every call that reaches the ledger.
// Models with Python callables are refused: every process replays every entry, and a callable
// is not part of the model's digest.
#include "shared.hpp"

#include <pybind11/stl.h>

#include <memory>
#include <string>
#include <utility>

#include "clampai/kernel/ledger.hpp"
#include "clampai/ledger/ledger.hpp"
#include "types.hpp"
#include "values.hpp"

namespace clampai::python {
namespace {

namespace ck = clampai::kernel;
using namespace pybind11::literals;

class PySharedKernel {
 public:
  PySharedKernel(const Model& model, const std::string& url) : model_(model.model) {
    if (model.python_predicates)
      throw py::value_error(
          "a kernel on a shared ledger needs a model without Python callables (every process "
          "replays every entry): use expressions or templates");
    py::gil_scoped_release nogil;
    kernel_ = std::make_unique<ck::SharedKernel>(model_, ledger::open_ledger(url, model_->name));
  }

  PyOutcome execute(const std::string& action, py::handle params) {
    const ck::ParamMap p = params.is_none() ? ck::ParamMap{} : to_params(params);
    py::gil_scoped_release nogil;
    return {kernel_->execute(action, p), model_};
  }

  std::uint64_t refresh() {
    py::gil_scoped_release nogil;
    return kernel_->refresh();
  }

  [[nodiscard]] ck::State state() const { return kernel_->local().state(); }

  [[nodiscard]] py::tuple budget() const {
    const ck::BudgetController b = kernel_->local().budget();
    return py::make_tuple(make_decimal(model_->format_amount(b.total())),
                          make_decimal(model_->format_amount(b.gross())),
                          make_decimal(model_->format_amount(b.net())),
                          make_decimal(model_->format_amount(b.remaining())));
  }

  [[nodiscard]] std::uint64_t length() const { return kernel_->length(); }
  [[nodiscard]] std::string describe() const { return kernel_->ledger().describe(); }

 private:
  std::shared_ptr<const ck::TaskModel> model_;
  std::unique_ptr<ck::SharedKernel> kernel_;
};

}  // namespace

void bind_shared(py::module_& m) {
  py::class_<PySharedKernel>(m, "_SharedKernel")
      .def(py::init<const Model&, const std::string&>(), "model"_a, "url"_a)
      .def("execute", &PySharedKernel::execute, "action"_a, "params"_a = py::none())
      .def("refresh", &PySharedKernel::refresh)
      .def("_budget", &PySharedKernel::budget)
      .def_property_readonly("state", &PySharedKernel::state)
      .def_property_readonly("length", &PySharedKernel::length)
      .def_property_readonly("ledger", &PySharedKernel::describe);
}

}  // namespace clampai::python
