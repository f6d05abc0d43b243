// ai3._core: the one pybind11 module over the core. It knows NumPy arrays
// (the buffer protocol) and nothing of any framework; ai3's Python layer
// turns torch tensors into arrays through DLPack without copying.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <pybind11/typing.h>

#include <cstring>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "core/cpu.h"
#include "core/cuda/device_bindings.h"
#include "core/errors.h"
#include "core/graph.h"
#include "core/layer.h"
#include "core/op_schema.h"  // InputsWorkspace
#include "core/python/arrays.h"
#include "core/registry.h"
#include "core/tensor.h"

namespace py = pybind11;

namespace ai3 {

// The generic bindings of every op (schema_bindings.cc).
void BindSchemas(py::module_& m);
void BindLayouts(py::module_& m);  // layout_bindings.cc

namespace {

// ---- Errors: ai3::Error kinds -> the classes of ai3.errors --------------

void TranslateErrors(std::exception_ptr error) {
  try {
    std::rethrow_exception(error);
  } catch (const Error& e) {
    py::object cls =
        py::module_::import("ai3.errors").attr(ErrorClassName(e.kind()));
    PyErr_SetString(cls.ptr(), e.what());
  }
}

// ---- Layers ---------------------------------------------------------------
//
// Every layer, of any op, is bound as the one Python class "Layer" (AnyLayer)
// held by shared_ptr, so that a Model can hold the very object Python holds.
// Layers are made by make_layer (schema_bindings.cc) from the op's
// declaration. The weights are copied once into the layer; inputs are read
// in place; each call returns a new array.

std::string LayerContext(const AnyLayer& layer) {
  return std::string(layer.op()) + " layer '" + layer.name() + "'";
}

py::array CallLayer(AnyLayer& layer, const py::array& x) {
  Tensor input;
  try {
    input = TensorOf(x, "input", layer.layout());
  } catch (const Error& e) {
    throw e.WithContext(LayerContext(layer));
  }
  const Shape shape = layer.OutputShape(input);
  py::array y = EmptyArray(layer.OutputDType(input), shape);
  Tensor output = TensorOf(y, "output", input.layout);
  {
    py::gil_scoped_release release;
    layer.Forward(input, output);
  }
  return y;
}

// A multi-input layer called on several arrays: layer(x, y).
py::array CallLayerN(AnyLayer& layer, const py::Args<py::array>& args) {
  if (args.size() == 1) return CallLayer(layer, args[0].cast<py::array>());
  std::vector<py::array> arrays;
  std::vector<Tensor> inputs;
  try {
    for (size_t k = 0; k < args.size(); ++k) {
      arrays.push_back(args[k].cast<py::array>());
      inputs.push_back(TensorOf(arrays.back(), "input", layer.layout()));
    }
  } catch (const Error& e) {
    throw e.WithContext(LayerContext(layer));
  }
  if (inputs.empty()) {
    Fail(ErrorKind::kInvalidArgument, LayerContext(layer),
         ": called with no inputs");
  }
  const Shape shape = layer.OutputShape(inputs);
  py::array y = EmptyArray(layer.OutputDType(inputs), shape);
  Tensor output = TensorOf(y, "output", inputs[0].layout);
  {
    py::gil_scoped_release release;
    layer.Forward(inputs, output);
  }
  return y;
}

std::vector<int64_t> LayerOutputShape(const AnyLayer& layer,
                                      const std::vector<int64_t>& input_shape,
                                      const std::string& dtype) {
  Tensor probe;
  probe.shape = input_shape;
  try {
    probe.dtype = ParseDType(dtype);
  } catch (const Error& e) {
    throw e.WithContext(LayerContext(layer));
  }
  probe.layout = layer.layout();
  probe.device = layer.device();  // a shape query is never refused for it
  return layer.OutputShape(probe);
}

// Copies, not views: the caller (pickling a Model) keeps them past the
// layer's life. Only host memory is read here.
py::typing::List<py::array> LayerWeights(const AnyLayer& layer) {
  if (layer.device() != Device::kCPU) {
    Fail(ErrorKind::kUnsupported, LayerContext(layer), ": its weights are on ",
         Name(layer.device()), "; only CPU layers give them back");
  }
  py::typing::List<py::array> out;
  for (const Tensor& w : layer.weights()) {
    py::array copy = EmptyArray(w.dtype, w.shape);
    if (w.numel()) {
      std::memcpy(copy.mutable_data(), w.data, w.numel() * SizeOf(w.dtype));
    }
    out.append(copy);
  }
  return out;
}

void BindAnyLayer(py::module_& m) {
  py::class_<AnyLayer, std::shared_ptr<AnyLayer>>(
      m, "Layer",
      "The base of every core layer class: one op with its weights and "
      "chosen algorithm.")
      .def("__call__", &CallLayer, py::arg("x"),
           "Runs the layer on a NumPy array (read in place) and returns a "
           "new array.")
      .def("__call__", &CallLayerN,
           "Runs a multi-input layer on several NumPy arrays: layer(x, y).")
      .def("output_shape", &LayerOutputShape, py::arg("input_shape"),
           py::arg("dtype") = "float32")
      .def_property_readonly("weights", &LayerWeights,
                             "Copies of the weights the layer was built "
                             "from (the present ones, in declared order).")
      .def(
          "output_shape",
          [](const AnyLayer& layer,
             const std::vector<std::vector<int64_t>>& input_shapes,
             const py::object& dtype) {
            const std::vector<DType> dtypes =
                ParseDTypes(dtype, input_shapes.size());
            if (dtypes.size() != input_shapes.size()) {
              Fail(ErrorKind::kInvalidArgument, LayerContext(layer), ": got ",
                   input_shapes.size(), " shapes but ", dtypes.size(),
                   " dtypes");
            }
            std::vector<Tensor> probes(input_shapes.size());
            for (size_t k = 0; k < probes.size(); ++k) {
              probes[k].shape = input_shapes[k];
              probes[k].dtype = dtypes[k];
              probes[k].layout = layer.layout();
            }
            return layer.OutputShape(probes);
          },
          py::arg("input_shapes"), py::arg("dtype") = "float32",
          "The output shape of a multi-input layer for these input shapes; "
          "`dtype`: one name for every input, or a list of one per input.")
      .def_property_readonly("min_inputs", &AnyLayer::min_inputs)
      .def_property_readonly("max_inputs", &AnyLayer::max_inputs)
      .def_property_readonly("algorithm",
                             [](const AnyLayer& l) { return l.algorithm(); })
      .def_property_readonly("name", [](const AnyLayer& l) { return l.name(); })
      .def_property_readonly(
          "op", [](const AnyLayer& l) { return std::string(l.op()); })
      .def(
          "workspace_bytes",
          [](const AnyLayer& l, const std::vector<int64_t>& input_shape,
             const std::string& dtype) {
            Tensor probe;  // shape and dtype only: no data is read
            probe.shape = input_shape;
            probe.dtype = ParseDType(dtype);
            probe.layout = l.layout();
            probe.device = l.device();
            return l.InputWorkspaceBytes(probe);
          },
          py::arg("input_shape"), py::arg("dtype") = "float32",
          "Scratch bytes a call on an input of this shape keeps (the layer "
          "reuses it between calls), besides the input and the output.")
      .def(
          "workspace_bytes",
          [](const AnyLayer& l,
             const std::vector<std::vector<int64_t>>& input_shapes,
             const std::string& dtype) {
            const auto* reporting = dynamic_cast<const InputsWorkspace*>(&l);
            if (!reporting) {
              Fail(ErrorKind::kInvalidArgument, LayerContext(l),
                   ": takes one input; give workspace_bytes one shape");
            }
            std::vector<Tensor> probes(input_shapes.size());
            for (size_t k = 0; k < probes.size(); ++k) {
              probes[k].shape = input_shapes[k];
              probes[k].dtype = ParseDType(dtype);
              probes[k].layout = l.layout();
              probes[k].device = l.device();
            }
            return reporting->InputsWorkspaceBytes(probes);
          },
          py::arg("input_shapes"), py::arg("dtype") = "float32",
          "The same for a multi-input layer, given every input's shape.");
}

// ---- Models ---------------------------------------------------------------

// Runs a whole Model on a NumPy array: one call, no Python between layers.
py::array CallModel(Model& model, const py::array& x) {
  Tensor input = TensorOf(x, "model input");
  Shape output_shape;
  {
    // Planning may wait for another thread's Forward on this model.
    py::gil_scoped_release release;
    output_shape = model.Prepare(input);
  }
  py::array y = EmptyArray(model.OutputDTypes()[0], output_shape);
  Tensor output = TensorOf(y, "model output", input.layout);
  {
    py::gil_scoped_release release;
    model.Forward(input, output);
  }
  return y;
}

// Runs a Model of several inputs and outputs: one array per input (read in
// place), a new array per output.
std::vector<py::array> CallModelN(Model& model,
                                  const std::vector<py::array>& xs) {
  std::vector<Tensor> inputs;
  for (size_t k = 0; k < xs.size(); ++k) {
    try {
      inputs.push_back(TensorOf(xs[k], "it"));
    } catch (const Error& e) {
      throw e.WithContext("model input " + std::to_string(k));
    }
  }
  std::vector<Shape> shapes;
  std::vector<DType> dtypes;
  {
    py::gil_scoped_release release;
    shapes = model.Prepare(inputs);
    dtypes = model.OutputDTypes();
  }
  std::vector<py::array> ys;
  std::vector<Tensor> outputs;
  for (size_t o = 0; o < shapes.size(); ++o) {
    const Shape& shape = shapes[o];
    ys.push_back(EmptyArray(dtypes[o], shape));
    outputs.push_back(TensorOf(ys.back(), "model output", inputs[0].layout));
  }
  {
    py::gil_scoped_release release;
    model.Forward(inputs, outputs);
  }
  return ys;
}

void BindModel(py::module_& m) {
  m.attr("MODEL_INPUT") = Model::kInput;
  py::class_<Model>(
      m, "Model",
      "A whole network as a DAG of core layers, add and concat nodes, run "
      "in C++ by one call. Nodes are added in topological order; each add_* "
      "returns the new node's id, and MODEL_INPUT (-1) names the model's "
      "input. The output is the last node added unless set_output says "
      "otherwise; nodes it does not depend on are not run. The model keeps "
      "its layers alive; one layer may appear at several nodes.")
      .def(py::init<>())
      .def("add_layer",
           py::overload_cast<std::shared_ptr<AnyLayer>, int>(&Model::AddLayer),
           py::arg("layer"), py::arg("input"),
           "Adds a layer reading node `input` (or MODEL_INPUT); returns the "
           "node id.")
      .def("add_layer",
           py::overload_cast<std::shared_ptr<AnyLayer>, std::vector<int>>(
               &Model::AddLayer),
           py::arg("layer"), py::arg("inputs"),
           "Adds a layer reading the nodes `inputs` in order (a multi-input "
           "layer: add, matmul, attention...); returns the node id.")
      .def("add_add", &Model::AddAdd, py::arg("inputs"), py::arg("name"),
           "Adds the elementwise sum of >= 2 nodes of one shape; returns the "
           "node id.")
      .def("add_concat", &Model::AddConcat, py::arg("inputs"), py::arg("axis"),
           py::arg("name"),
           "Adds the concatenation of >= 1 nodes along `axis` (negative "
           "counts from the end; NCHW channels are axis 1); returns the node "
           "id.")
      .def("set_output", &Model::SetOutput, py::arg("node"))
      .def("set_outputs", &Model::SetOutputs, py::arg("nodes"),
           "Several output nodes, in order (run() returns one array each).")
      .def_property_readonly("output", &Model::output,
                             "The (first) output node's id.")
      .def_property_readonly("outputs", &Model::outputs,
                             "The output nodes' ids.")
      .def("set_input_count", &Model::SetInputCount, py::arg("count"),
           "How many inputs the model takes; input k is node id -1 - k "
           "(input_id(k)).")
      .def_property_readonly("input_count", &Model::input_count)
      .def_static("input_id", &Model::InputId, py::arg("k"),
                  "The node id of model input k: -1 - k.")
      .def(
          "output_shapes",
          [](const Model& model,
             const std::vector<std::vector<int64_t>>& input_shapes,
             const py::object& dtype) {
            return model.OutputShapes(
                std::vector<Shape>(input_shapes.begin(), input_shapes.end()),
                ParseDTypes(dtype, input_shapes.size()));
          },
          py::arg("input_shapes"), py::arg("dtype") = "float32",
          "Every output's shape for inputs of these shapes; `dtype` is one "
          "dtype name for every input or a list of one per input.")
      .def("run", &CallModelN, py::arg("inputs"),
           "Runs the model on one contiguous array per input (float32, "
           "float64, int64 or bool, each its own; read in place); returns "
           "one new array per output, of its node's dtype.")
      .def(
          "output_shape",
          [](const Model& model, const std::vector<int64_t>& input_shape,
             const std::string& dtype) {
            return model.OutputShape(input_shape, ParseDType(dtype));
          },
          py::arg("input_shape"), py::arg("dtype") = "float32",
          "The output's shape for an input of this shape and dtype; raises "
          "naming the first node that cannot take its input.")
      .def("__call__", &CallModel, py::arg("x"),
           "Runs the model on a contiguous float32/float64 NumPy array (read "
           "in place) and returns a new array.")
      .def("set_profiling", &Model::SetProfiling, py::arg("on"),
           "While on, each forward adds every node's wall time to "
           "node_seconds(node); turning it on clears the sums.")
      .def("node_seconds", &Model::NodeSeconds, py::arg("node"),
           "Seconds node `node` took, summed over the forwards run while "
           "profiling.")
      .def("__len__", &Model::size)
      .def(
          "layers",
          [](const Model& model) {
            std::vector<std::tuple<std::string, std::string, std::string>> out;
            for (int i = 0; i < model.size(); ++i) {
              Model::NodeInfo info = model.Describe(i);
              out.emplace_back(info.name, info.op, info.algorithm);
            }
            return out;
          },
          "(name, op, algorithm) of every node, by node id; add and concat "
          "nodes run 'direct'.")
      .def("__repr__", [](const Model& model) {
        return "<ai3._core.Model with " + std::to_string(model.size()) +
               " nodes>";
      });
}

PYBIND11_MODULE(_core, m) {
  m.doc() =
      "ai3's C++ core: algorithms per op, layers that run them, and "
      "models that run whole networks.";
  py::register_exception_translator(&TranslateErrors);

  m.def(
      "algorithms",
      [] {
        std::vector<std::tuple<std::string, std::string, std::string>> out;
        for (const AlgorithmInfo& info : ListAlgorithms()) {
          out.emplace_back(info.op, info.name, Name(info.device));
        }
        return out;
      },
      "Every (op, algorithm, device) this build offers.");

  m.def(
      "kernel_isa", [] { return std::string(IsaName(KernelIsa())); },
      "The instruction set ai3's own kernels run with on this CPU: 'avx512' "
      "or 'avx2' (AI3_ISA=avx2 forces the baseline; core/cpu.h).");

  BindAnyLayer(m);
  BindModel(m);
  BindSchemas(m);      // make_layer, output_shape, op_schemas
  BindLayouts(m);      // the Model's fusion controls
  BindDeviceCalls(m);  // device tensors and the layer device (core/cuda)
}

}  // namespace
}  // namespace ai3
