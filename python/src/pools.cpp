// `_PoolTree`: the kernel's PoolTree, for clampai.PoolTree (python/clampai/__init__.py). The
// tree is held by a shared_ptr, as the kernels bound to it hold it (`KernelOptions::pools`).
#include "pools.hpp"

#include <pybind11/stl.h>

#include <memory>
#include <string>
#include <vector>

#include "clampai/kernel/error.hpp"
#include "clampai/kernel/number.hpp"
#include "clampai/kernel/pools.hpp"
#include "values.hpp"

namespace clampai::python {

namespace ck = clampai::kernel;
using namespace pybind11::literals;

void bind_pools(py::module_& m) {
  m.def(
      "_pools_from_json",
      [](const std::string& text) { return ck::load_pools(text); },
      "text"_a,
      "Reads a pools file's text: {\"pools\": {NAME: {\"total\": ..., \"parent\": ...}}}.");
  m.def(
      "_load_pools",
      [](const std::string& path) { return ck::load_pools_file(path); },
      "path"_a,
      "Reads a pools file.");
  py::class_<ck::PoolTree, std::shared_ptr<ck::PoolTree>>(
      m, "_PoolTree", "A tree of budget pools (docs/POOLS.md); clampai.PoolTree wraps it.")
      .def(
          "_status",
          [](const ck::PoolTree& t) {
            std::vector<py::tuple> out;
            for (const ck::PoolStatus& s : t.status())
              out.push_back(py::make_tuple(s.name,
                                           s.parent,
                                           make_decimal(s.format(s.total)),
                                           make_decimal(s.format(s.gross)),
                                           make_decimal(s.format(s.net)),
                                           make_decimal(s.format(s.total - s.net)),
                                           s.tasks));
            return out;
          },
          "Every pool, parents first: (name, parent, total, gross, net, remaining, tasks).")
      .def(
          "set_total",
          [](ck::PoolTree& t, const std::string& name, const std::string& total) {
            const std::optional<ck::Decimal> d = ck::Decimal::parse(total);
            if (!d)
              throw InvalidArgument("cannot set pool `" + name + "`'s total to `" + total +
                                    "`: not a decimal number");
            t.set_total(name, *d);
          },
          "name"_a,
          "total"_a,
          "Raises or lowers a pool's total (never below its net spend).")
      .def_property_readonly("names", [](const ck::PoolTree& t) {
        std::vector<std::string> names;
        for (const ck::PoolStatus& s : t.status()) names.push_back(s.name);
        return names;
      });
}

}  // namespace clampai::python
