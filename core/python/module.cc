// ai3._core: the one pybind11 module over the core. It knows NumPy arrays
// (the buffer protocol) and nothing of any framework; ai3's Python layer
// turns torch tensors into arrays through DLPack without copying.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/cpu.h"
#include "core/cuda/device_bindings.h"
#include "core/errors.h"
#include "core/graph.h"
#include "core/layer.h"
#include "core/ops/batchnorm2d/batchnorm2d.h"
#include "core/ops/binary/binary.h"
#include "core/ops/adaptivemaxpool2d/adaptivemaxpool2d.h"
#include "core/ops/gelu/gelu.h"
#include "core/ops/hardsigmoid/hardsigmoid.h"
#include "core/ops/hardswish/hardswish.h"
#include "core/ops/layernorm/layernorm.h"
#include "core/ops/log_softmax/log_softmax.h"
#include "core/ops/matmul/matmul.h"
#include "core/ops/mean/mean.h"
#include "core/ops/permute/permute.h"
#include "core/ops/reshape/reshape.h"
#include "core/ops/roll/roll.h"
#include "core/ops/slice/slice.h"
#include "core/ops/clamp/clamp.h"
#include "core/ops/conv2d/conv2d.h"
#include "core/ops/flatten/flatten.h"
#include "core/ops/linear/linear.h"
#include "core/ops/pad2d/pad2d.h"
#include "core/ops/pool2d/pool2d.h"
#include "core/ops/relu/relu.h"
#include "core/ops/sigmoid/sigmoid.h"
#include "core/ops/silu/silu.h"
#include "core/ops/softmax/softmax.h"
#include "core/ops/tanh/tanh.h"
#include "core/registry.h"
#include "core/tensor.h"

namespace py = pybind11;

namespace ai3 {

// attention and multihead_attention (attention_bindings.cc).
void BindAttention(py::module_& m);
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

// ---- Arrays <-> core tensors --------------------------------------------

DType DTypeOf(const py::array& a, const char* what) {
  if (a.dtype().is(py::dtype::of<float>())) return DType::kFloat32;
  if (a.dtype().is(py::dtype::of<double>())) return DType::kFloat64;
  Fail(ErrorKind::kDType, what, " has dtype ",
       std::string(py::str(a.dtype())), "; ai3 takes float32 or float64");
}

// A view of the array's memory (no copy). Strides are kept so the core can
// refuse a non-contiguous array instead of misreading it.
Tensor TensorOf(const py::array& a, const char* what,
                Layout layout = Layout::kNCHW) {
  Tensor t;
  t.dtype = DTypeOf(a, what);
  t.data = const_cast<void*>(a.data());
  t.layout = layout;
  for (py::ssize_t i = 0; i < a.ndim(); ++i) {
    t.shape.push_back(a.shape(i));
    t.strides.push_back(a.strides(i) / static_cast<py::ssize_t>(a.itemsize()));
    if (a.strides(i) % static_cast<py::ssize_t>(a.itemsize()) != 0) {
      Fail(ErrorKind::kInvalidArgument, what, " has unaligned strides");
    }
  }
  return t;
}

py::array EmptyArray(DType dtype, const Shape& shape) {
  std::vector<py::ssize_t> dims(shape.begin(), shape.end());
  if (dtype == DType::kFloat64) return py::array_t<double>(dims);
  return py::array_t<float>(dims);
}

Layout ParseLayout(const std::string& layout) {
  if (layout == "NCHW") return Layout::kNCHW;
  if (layout == "NHWC") return Layout::kNHWC;
  Fail(ErrorKind::kInvalidArgument, "layout must be 'NCHW' or 'NHWC', got '",
       layout, "'");
}

DType ParseDType(const std::string& dtype) {
  if (dtype == "float32") return DType::kFloat32;
  if (dtype == "float64") return DType::kFloat64;
  Fail(ErrorKind::kDType, "dtype must be 'float32' or 'float64', got '", dtype,
       "'");
}

// ---- Layers ---------------------------------------------------------------
//
// Every op's layer is bound as its core class, Layer<Attrs>, held by
// shared_ptr and derived from the Python class "Layer" (AnyLayer), so that a
// Model can hold the very object Python holds. The weights are copied once
// into the layer; inputs are read in place; each call returns a new array.

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
  py::array y = EmptyArray(input.dtype, layer.OutputShape(input));
  Tensor output = TensorOf(y, "output", input.layout);
  {
    py::gil_scoped_release release;
    layer.Forward(input, output);
  }
  return y;
}

// A multi-input layer called on several arrays: layer(x, y).
py::array CallLayerN(AnyLayer& layer, const py::args& args) {
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
  py::array y = EmptyArray(inputs[0].dtype, layer.OutputShape(inputs));
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
      .def(
          "output_shape",
          [](const AnyLayer& layer,
             const std::vector<std::vector<int64_t>>& input_shapes,
             const std::string& dtype) {
            std::vector<Tensor> probes(input_shapes.size());
            for (size_t k = 0; k < probes.size(); ++k) {
              probes[k].shape = input_shapes[k];
              probes[k].dtype = ParseDType(dtype);
              probes[k].layout = layer.layout();
            }
            return layer.OutputShape(probes);
          },
          py::arg("input_shapes"), py::arg("dtype") = "float32",
          "The output shape of a multi-input layer for these input shapes.")
      .def_property_readonly("min_inputs", &AnyLayer::min_inputs)
      .def_property_readonly("max_inputs", &AnyLayer::max_inputs)
      .def_property_readonly(
          "algorithm", [](const AnyLayer& l) { return l.algorithm(); })
      .def_property_readonly("name",
                             [](const AnyLayer& l) { return l.name(); })
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
          "reuses it between calls), besides the input and the output.");
}

template <class Attrs>
using LayerClass =
    py::class_<Layer<Attrs>, AnyLayer, std::shared_ptr<Layer<Attrs>>>;

template <class Attrs>
LayerClass<Attrs> BindLayer(py::module_& m, const char* class_name,
                            const char* doc) {
  return LayerClass<Attrs>(m, class_name, doc);
}

template <class Attrs>
std::shared_ptr<Layer<Attrs>> MakeLayer(const std::string& name,
                                        const Attrs& attrs,
                                        const std::vector<py::array>& params,
                                        const std::string& algorithm) {
  std::vector<Tensor> tensors;
  for (const py::array& p : params) tensors.push_back(TensorOf(p, "weight"));
  // Weights come as host arrays; a CUDA layer copies them to its GPU.
  return std::make_shared<Layer<Attrs>>(name, attrs, tensors, algorithm,
                                        LayerDevice());
}

// Multi-input ops (add, matmul, attention...) are bound as MultiLayer<Attrs>.
template <class Attrs>
using MultiLayerClass = py::class_<MultiLayer<Attrs>, AnyLayer,
                                   std::shared_ptr<MultiLayer<Attrs>>>;

template <class Attrs>
std::shared_ptr<MultiLayer<Attrs>> MakeMultiLayer(
    const std::string& name, const Attrs& attrs,
    const std::vector<py::array>& params, const std::string& algorithm) {
  std::vector<Tensor> tensors;
  for (const py::array& p : params) tensors.push_back(TensorOf(p, "weight"));
  return std::make_shared<MultiLayer<Attrs>>(name, attrs, tensors, algorithm,
                                             LayerDevice());
}

// add / sub / mul / div: two inputs, or one and a constant `other`.
template <class Attrs>
void BindBinary(py::module_& m, const char* class_name, const char* doc) {
  MultiLayerClass<Attrs>(m, class_name, doc)
      .def(py::init([](const std::optional<py::array>& other, bool reverse,
                       const std::string& algorithm, const std::string& name) {
             return Named(Attrs::kOp, name, [&] {
               Attrs a;
               a.has_other = other.has_value();
               a.reverse = reverse;
               std::vector<py::array> params;
               if (other) {
                 Tensor t = TensorOf(*other, "constant operand");
                 a.other_shape = t.shape;
                 a.other_dtype = t.dtype;
                 params.push_back(*other);
               }
               return MakeMultiLayer<Attrs>(name, a, params, algorithm);
             });
           }),
           py::kw_only(), py::arg("other") = py::none(),
           py::arg("reverse") = false, py::arg("algorithm"), py::arg("name"));
}

int64_t Dim(const py::array& a, int axis, int rank, const char* what) {
  if (a.ndim() != rank) {
    Fail(ErrorKind::kShape, what, " must have rank ", rank, ", got rank ",
         a.ndim());
  }
  return a.shape(axis);
}

DType LayerDType(const py::array& weight) { return DTypeOf(weight, "weight"); }

std::vector<py::array> Params(const py::array& weight,
                              const std::optional<py::array>& bias) {
  std::vector<py::array> params = {weight};
  if (bias) params.push_back(*bias);
  return params;
}

// Runs `make`, prefixing any error with the op and layer name, for errors
// found before a Layer exists (e.g. a weight of the wrong rank). Errors the
// Layer constructor raises name the layer already and pass unchanged.
template <class Fn>
auto Named(const char* op, const std::string& name, Fn&& make) {
  const std::string context = std::string(op) + " layer '" + name + "'";
  try {
    return make();
  } catch (const Error& e) {
    if (std::string(e.what()).rfind(context, 0) == 0) throw;
    throw e.WithContext(context);
  }
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
  py::array y = EmptyArray(input.dtype, output_shape);
  Tensor output = TensorOf(y, "model output", input.layout);
  {
    py::gil_scoped_release release;
    model.Forward(input, output);
  }
  return y;
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
      .def_property_readonly("output", &Model::output,
                             "The output node's id.")
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

using Pair = std::pair<int64_t, int64_t>;
using Pads = std::tuple<int64_t, int64_t, int64_t, int64_t>;  // t, b, l, r

// The ops issue 7 added (core/ops/README.md): matmul, shape ops, norms and
// activations of modern networks.
void BindIssue7Ops(py::module_& m) {
  MultiLayerClass<MatmulAttrs>(
      m, "Matmul",
      "x0 @ x1 as torch.matmul (batched, broadcast batch dims), or x @ other.")
      .def(py::init([](const std::optional<py::array>& other,
                       const std::string& algorithm, const std::string& name) {
             return Named("matmul", name, [&] {
               MatmulAttrs a;
               std::vector<py::array> params;
               if (other) {
                 Tensor t = TensorOf(*other, "constant operand");
                 a.has_other = true;
                 a.other_shape = t.shape;
                 a.other_dtype = t.dtype;
                 params.push_back(*other);
               }
               return MakeMultiLayer<MatmulAttrs>(name, a, params, algorithm);
             });
           }),
           py::kw_only(), py::arg("other") = py::none(), py::arg("algorithm"),
           py::arg("name"));

  BindLayer<ReshapeAttrs>(m, "Reshape",
                          "The elements under another shape (-1 inferred, 0 "
                          "copies the input's dim).")
      .def(py::init([](const std::vector<int64_t>& shape,
                       const std::string& algorithm, const std::string& name) {
             ReshapeAttrs a;
             a.shape = shape;
             return MakeLayer<ReshapeAttrs>(name, a, {}, algorithm);
           }),
           py::kw_only(), py::arg("shape"), py::arg("algorithm"),
           py::arg("name"));

  BindLayer<PermuteAttrs>(m, "Permute",
                          "Output dim d is input dim dims[d].")
      .def(py::init([](const std::vector<int64_t>& dims,
                       const std::string& algorithm, const std::string& name) {
             PermuteAttrs a;
             a.dims = dims;
             return MakeLayer<PermuteAttrs>(name, a, {}, algorithm);
           }),
           py::kw_only(), py::arg("dims"), py::arg("algorithm"),
           py::arg("name"));

  BindLayer<SliceAttrs>(m, "Slice",
                        "x[..., start:stop:step, ...] along `axis` (Python "
                        "slice semantics).")
      .def(py::init([](int64_t axis, int64_t start, int64_t stop, int64_t step,
                       const std::string& algorithm, const std::string& name) {
             return MakeLayer<SliceAttrs>(
                 name, SliceAttrs{axis, start, stop, step}, {}, algorithm);
           }),
           py::kw_only(), py::arg("axis"), py::arg("start"), py::arg("stop"),
           py::arg("step"), py::arg("algorithm"), py::arg("name"));

  BindLayer<LogSoftmaxAttrs>(m, "LogSoftmax", "log(softmax(x)) along `axis`.")
      .def(py::init([](int64_t axis, const std::string& algorithm,
                       const std::string& name) {
             LogSoftmaxAttrs a;
             a.axis = axis;
             return MakeLayer<LogSoftmaxAttrs>(name, a, {}, algorithm);
           }),
           py::kw_only(), py::arg("axis"), py::arg("algorithm"),
           py::arg("name"));

  BindLayer<LayerNormAttrs>(m, "LayerNorm",
                            "Normalisation over the last `axes` dims.")
      .def(py::init([](const std::optional<py::array>& weight,
                       const std::optional<py::array>& bias, int64_t axes,
                       double eps, const std::string& algorithm,
                       const std::string& name) {
             return Named("layernorm", name, [&] {
               LayerNormAttrs a;
               a.axes = axes;
               a.eps = eps;
               a.has_weight = weight.has_value();
               a.has_bias = bias.has_value();
               std::vector<py::array> params;
               for (const auto* p : {&weight, &bias}) {
                 if (!*p) continue;
                 Tensor t = TensorOf(**p, "weight");
                 a.normalized_shape = t.shape;
                 a.dtype = t.dtype;
                 params.push_back(**p);
               }
               return MakeLayer<LayerNormAttrs>(name, a, params, algorithm);
             });
           }),
           py::kw_only(), py::arg("weight") = py::none(),
           py::arg("bias") = py::none(), py::arg("axes"), py::arg("eps"),
           py::arg("algorithm"), py::arg("name"));

  BindLayer<GeluAttrs>(m, "GELU", "x * Phi(x) elementwise, exact or tanh.")
      .def(py::init([](const std::string& approximate,
                       const std::string& algorithm, const std::string& name) {
             return Named("gelu", name, [&] {
               GeluAttrs a;
               if (approximate == "tanh") {
                 a.approximate = GeluAttrs::Approximate::kTanh;
               } else if (approximate != "none") {
                 Fail(ErrorKind::kInvalidArgument,
                      "approximate must be 'none' or 'tanh', got '",
                      approximate, "'");
               }
               return MakeLayer<GeluAttrs>(name, a, {}, algorithm);
             });
           }),
           py::kw_only(), py::arg("approximate"), py::arg("algorithm"),
           py::arg("name"));

  BindLayer<HardswishAttrs>(m, "Hardswish", "x * relu6(x + 3) / 6.")
      .def(py::init([](const std::string& algorithm, const std::string& name) {
             return MakeLayer<HardswishAttrs>(name, HardswishAttrs{}, {},
                                              algorithm);
           }),
           py::kw_only(), py::arg("algorithm"), py::arg("name"));

  BindLayer<HardsigmoidAttrs>(m, "Hardsigmoid",
                              "clamp(alpha * x + beta, 0, 1).")
      .def(py::init([](double alpha, double beta, const std::string& algorithm,
                       const std::string& name) {
             HardsigmoidAttrs a;
             a.alpha = alpha;
             a.beta = beta;
             return MakeLayer<HardsigmoidAttrs>(name, a, {}, algorithm);
           }),
           py::kw_only(), py::arg("alpha"), py::arg("beta"),
           py::arg("algorithm"), py::arg("name"));

  BindLayer<AdaptiveMaxPool2dAttrs>(m, "AdaptiveMaxPool2d",
                                    "2-D adaptive max pooling.")
      .def(py::init([](Pair output_size, const std::string& layout,
                       const std::string& algorithm, const std::string& name) {
             return Named("adaptivemaxpool2d", name, [&] {
               AdaptiveMaxPool2dAttrs a;
               std::tie(a.output_h, a.output_w) = output_size;
               a.layout = ParseLayout(layout);
               return MakeLayer<AdaptiveMaxPool2dAttrs>(name, a, {},
                                                        algorithm);
             });
           }),
           py::kw_only(), py::arg("output_size"), py::arg("layout"),
           py::arg("algorithm"), py::arg("name"));

  BindLayer<MeanAttrs>(m, "Mean", "The mean over `axes` (empty: all).")
      .def(py::init([](const std::vector<int64_t>& axes, bool keepdim,
                       const std::string& algorithm, const std::string& name) {
             MeanAttrs a;
             a.axes = axes;
             a.keepdim = keepdim;
             return MakeLayer<MeanAttrs>(name, a, {}, algorithm);
           }),
           py::kw_only(), py::arg("axes"), py::arg("keepdim"),
           py::arg("algorithm"), py::arg("name"));

  BindLayer<RollAttrs>(m, "Roll", "torch.roll(x, shifts, dims).")
      .def(py::init([](const std::vector<int64_t>& shifts,
                       const std::vector<int64_t>& axes,
                       const std::string& algorithm, const std::string& name) {
             return MakeLayer<RollAttrs>(name, RollAttrs{shifts, axes}, {},
                                         algorithm);
           }),
           py::kw_only(), py::arg("shifts"), py::arg("axes"),
           py::arg("algorithm"), py::arg("name"));
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
  BindAttention(m);
  BindLayouts(m);  // the Model's fusion controls
  BindDeviceCalls(m);  // device tensors and the layer device (core/cuda)

  BindLayer<Conv2dAttrs>(m, "Conv2d", "2-D convolution (weights OIHW).")
      .def(py::init([](const py::array& weight,
                       const std::optional<py::array>& bias, Pair stride,
                       Pads padding, Pair dilation, int64_t groups,
                       const std::string& layout, const std::string& algorithm,
                       const std::string& name,
                       const std::optional<std::pair<double, double>>&
                           activation) {
             return Named("conv2d", name, [&] {
               Conv2dAttrs a;
               a.out_channels = Dim(weight, 0, 4, "weight");
               a.in_channels = weight.shape(1) * groups;
               a.kernel_h = weight.shape(2);
               a.kernel_w = weight.shape(3);
               std::tie(a.stride_h, a.stride_w) = stride;
               std::tie(a.pad_top, a.pad_bottom, a.pad_left, a.pad_right) =
                   padding;
               std::tie(a.dilation_h, a.dilation_w) = dilation;
               a.groups = groups;
               a.has_bias = bias.has_value();
               a.dtype = LayerDType(weight);
               a.layout = ParseLayout(layout);
               if (activation) {
                 a.activation =
                     Activation::Clamp(activation->first, activation->second);
               }
               return MakeLayer<Conv2dAttrs>(name, a, Params(weight, bias),
                                               algorithm);
             });
           }),
           py::kw_only(), py::arg("weight"), py::arg("bias"),
           py::arg("stride"), py::arg("padding"), py::arg("dilation"),
           py::arg("groups"), py::arg("layout"), py::arg("algorithm"),
           py::arg("name"), py::arg("activation") = py::none(),
           "activation: (min, max) of a clamp fused into the epilogue (ReLU "
           "is (0, inf)), or None.");

  BindLayer<LinearAttrs>(m, "Linear", "y = x W^T + b over the last dim.")
      .def(py::init([](const py::array& weight,
                       const std::optional<py::array>& bias,
                       const std::string& algorithm, const std::string& name,
                       const std::optional<std::pair<double, double>>&
                           activation) {
             return Named("linear", name, [&] {
               LinearAttrs a;
               a.out_features = Dim(weight, 0, 2, "weight");
               a.in_features = weight.shape(1);
               a.has_bias = bias.has_value();
               a.dtype = LayerDType(weight);
               if (activation) {
                 a.activation =
                     Activation::Clamp(activation->first, activation->second);
               }
               return MakeLayer<LinearAttrs>(name, a, Params(weight, bias),
                                               algorithm);
             });
           }),
           py::kw_only(), py::arg("weight"), py::arg("bias"),
           py::arg("algorithm"), py::arg("name"),
           py::arg("activation") = py::none(),
           "activation: (min, max) of a clamp fused into the epilogue, or "
           "None.");

  BindLayer<ReluAttrs>(m, "ReLU", "max(x, 0) elementwise.")
      .def(py::init([](const std::string& algorithm, const std::string& name) {
             return MakeLayer<ReluAttrs>(name, ReluAttrs{}, {}, algorithm);
           }),
           py::kw_only(), py::arg("algorithm"), py::arg("name"));

  BindLayer<MaxPool2dAttrs>(m, "MaxPool2d", "2-D max pooling.")
      .def(py::init([](Pair kernel, Pair stride, Pads padding, Pair dilation,
                       bool ceil_mode, const std::string& layout,
                       const std::string& algorithm, const std::string& name) {
             return Named("maxpool2d", name, [&] {
               MaxPool2dAttrs a;
               std::tie(a.kernel_h, a.kernel_w) = kernel;
               std::tie(a.stride_h, a.stride_w) = stride;
               std::tie(a.pad_top, a.pad_bottom, a.pad_left, a.pad_right) =
                   padding;
               std::tie(a.dilation_h, a.dilation_w) = dilation;
               a.ceil_mode = ceil_mode;
               a.layout = ParseLayout(layout);
               return MakeLayer<MaxPool2dAttrs>(name, a, {}, algorithm);
             });
           }),
           py::kw_only(), py::arg("kernel"), py::arg("stride"),
           py::arg("padding"), py::arg("dilation"), py::arg("ceil_mode"),
           py::arg("layout"), py::arg("algorithm"), py::arg("name"));

  BindLayer<AvgPool2dAttrs>(m, "AvgPool2d", "2-D average pooling.")
      .def(py::init([](Pair kernel, Pair stride, Pads padding, bool ceil_mode,
                       bool count_include_pad, int64_t divisor_override,
                       const std::string& layout, const std::string& algorithm,
                       const std::string& name) {
             return Named("avgpool2d", name, [&] {
               AvgPool2dAttrs a;
               std::tie(a.kernel_h, a.kernel_w) = kernel;
               std::tie(a.stride_h, a.stride_w) = stride;
               std::tie(a.pad_top, a.pad_bottom, a.pad_left, a.pad_right) =
                   padding;
               a.ceil_mode = ceil_mode;
               a.count_include_pad = count_include_pad;
               a.divisor_override = divisor_override;
               a.layout = ParseLayout(layout);
               return MakeLayer<AvgPool2dAttrs>(name, a, {}, algorithm);
             });
           }),
           py::kw_only(), py::arg("kernel"), py::arg("stride"),
           py::arg("padding"), py::arg("ceil_mode"),
           py::arg("count_include_pad"), py::arg("divisor_override"),
           py::arg("layout"), py::arg("algorithm"), py::arg("name"));

  BindLayer<AdaptiveAvgPool2dAttrs>(m, "AdaptiveAvgPool2d",
                                    "2-D adaptive average pooling.")
      .def(py::init([](Pair output_size, const std::string& layout,
                       const std::string& algorithm, const std::string& name) {
             return Named("adaptiveavgpool2d", name, [&] {
               AdaptiveAvgPool2dAttrs a;
               std::tie(a.output_h, a.output_w) = output_size;
               a.layout = ParseLayout(layout);
               return MakeLayer<AdaptiveAvgPool2dAttrs>(name, a, {},
                                                          algorithm);
             });
           }),
           py::kw_only(), py::arg("output_size"), py::arg("layout"),
           py::arg("algorithm"), py::arg("name"));

  BindLayer<FlattenAttrs>(m, "Flatten", "Flattens dims start..end into one.")
      .def(py::init([](int64_t start_dim, int64_t end_dim,
                       const std::string& algorithm, const std::string& name) {
             FlattenAttrs a;
             a.start_dim = start_dim;
             a.end_dim = end_dim;
             return MakeLayer<FlattenAttrs>(name, a, {}, algorithm);
           }),
           py::kw_only(), py::arg("start_dim"), py::arg("end_dim"),
           py::arg("algorithm"), py::arg("name"));

  BindLayer<BatchNorm2dAttrs>(
      m, "BatchNorm2d",
      "Inference batch normalisation per channel of a rank-4 tensor.")
      .def(py::init([](const py::array& weight, const py::array& bias,
                       const py::array& running_mean,
                       const py::array& running_var, double eps,
                       const std::string& layout, const std::string& algorithm,
                       const std::string& name) {
             return Named("batchnorm2d", name, [&] {
               BatchNorm2dAttrs a;
               a.channels = Dim(weight, 0, 1, "weight");
               a.eps = eps;
               a.dtype = LayerDType(weight);
               a.layout = ParseLayout(layout);
               return MakeLayer<BatchNorm2dAttrs>(
                   name, a, {weight, bias, running_mean, running_var},
                   algorithm);
             });
           }),
           py::kw_only(), py::arg("weight"), py::arg("bias"),
           py::arg("running_mean"), py::arg("running_var"), py::arg("eps"),
           py::arg("layout"), py::arg("algorithm"), py::arg("name"));

  BindLayer<ClampAttrs>(
      m, "Clamp",
      "min(max(x, min), max) elementwise (ReLU6, Hardtanh); NaN passes.")
      .def(py::init([](double min, double max, const std::string& algorithm,
                       const std::string& name) {
             ClampAttrs a;
             a.min = min;
             a.max = max;
             return MakeLayer<ClampAttrs>(name, a, {}, algorithm);
           }),
           py::kw_only(), py::arg("min"), py::arg("max"), py::arg("algorithm"),
           py::arg("name"));

  BindLayer<SigmoidAttrs>(m, "Sigmoid", "1 / (1 + exp(-x)) elementwise.")
      .def(py::init([](const std::string& algorithm, const std::string& name) {
             return MakeLayer<SigmoidAttrs>(name, SigmoidAttrs{}, {},
                                            algorithm);
           }),
           py::kw_only(), py::arg("algorithm"), py::arg("name"));

  BindLayer<SiluAttrs>(m, "SiLU", "x * sigmoid(x) elementwise (swish).")
      .def(py::init([](const std::string& algorithm, const std::string& name) {
             return MakeLayer<SiluAttrs>(name, SiluAttrs{}, {}, algorithm);
           }),
           py::kw_only(), py::arg("algorithm"), py::arg("name"));

  BindLayer<TanhAttrs>(m, "Tanh", "tanh(x) elementwise.")
      .def(py::init([](const std::string& algorithm, const std::string& name) {
             return MakeLayer<TanhAttrs>(name, TanhAttrs{}, {}, algorithm);
           }),
           py::kw_only(), py::arg("algorithm"), py::arg("name"));

  BindLayer<SoftmaxAttrs>(
      m, "Softmax",
      "Numerically stable softmax along `axis` (negative counts from the "
      "end).")
      .def(py::init([](int64_t axis, const std::string& algorithm,
                       const std::string& name) {
             SoftmaxAttrs a;
             a.axis = axis;
             return MakeLayer<SoftmaxAttrs>(name, a, {}, algorithm);
           }),
           py::kw_only(), py::arg("axis"), py::arg("algorithm"),
           py::arg("name"));

  BindIssue7Ops(m);

  BindBinary<AddAttrs>(m, "Add",
                       "x0 + x1 with NumPy broadcasting, or x + other.");
  BindBinary<SubAttrs>(m, "Sub",
                       "x0 - x1 with NumPy broadcasting, or x - other (other "
                       "- x with reverse).");
  BindBinary<MulAttrs>(m, "Mul",
                       "x0 * x1 with NumPy broadcasting, or x * other.");
  BindBinary<DivAttrs>(m, "Div",
                       "x0 / x1 with NumPy broadcasting, or x / other (other "
                       "/ x with reverse).");

  BindLayer<Pad2dAttrs>(
      m, "Pad2d",
      "Constant padding of H and W of a rank-4 tensor; padding is (top, "
      "bottom, left, right).")
      .def(py::init([](Pads padding, double value, const std::string& layout,
                       const std::string& algorithm, const std::string& name) {
             return Named("pad2d", name, [&] {
               Pad2dAttrs a;
               std::tie(a.pad_top, a.pad_bottom, a.pad_left, a.pad_right) =
                   padding;
               a.value = value;
               a.layout = ParseLayout(layout);
               return MakeLayer<Pad2dAttrs>(name, a, {}, algorithm);
             });
           }),
           py::kw_only(), py::arg("padding"), py::arg("value"),
           py::arg("layout"), py::arg("algorithm"), py::arg("name"));
}

}  // namespace
}  // namespace ai3
