// ai3._core.Model's fusion controls (core/graph.h, "Fusion"): bound here,
// beside the layout pass's needs, so module.cc keeps one line for them.
// They are methods of the Model class module.cc defines, added to it.
#include <pybind11/pybind11.h>

#include "core/graph.h"

namespace py = pybind11;

namespace ai3 {

void BindLayouts(py::module_& m) {
  py::object model = m.attr("Model");
  model.attr("set_fusion") = py::cpp_function(
      [](Model& self, bool on) { self.SetFusion(on); }, py::name("set_fusion"),
      py::is_method(model), py::arg("on"),
      "Turns the in-place residual add (and the relu folded into it) on or "
      "off; on by default. The next forward plans again.");
  model.attr("fused_into") = py::cpp_function(
      [](const Model& self, int node) { return self.FusedInto(node); },
      py::name("fused_into"), py::is_method(model), py::arg("node"),
      "Under the current plan (after a forward): the node whose result "
      "`node` adds into in place (for a folded relu: the add applying it), "
      "or -1.");
}

}  // namespace ai3
