// ai3._core: the one pybind11 module over the core. It knows NumPy arrays
// (the buffer protocol) and nothing of any framework; ai3's Python layer
// turns torch tensors into arrays through DLPack without copying.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/errors.h"
#include "core/layer.h"
#include "core/ops/conv2d/conv2d.h"
#include "core/ops/flatten/flatten.h"
#include "core/ops/linear/linear.h"
#include "core/ops/pool2d/pool2d.h"
#include "core/ops/relu/relu.h"
#include "core/registry.h"
#include "core/tensor.h"

namespace py = pybind11;

namespace ai3 {
namespace {

// ---- Errors: ai3::Error kinds -> the classes of ai3.errors --------------

const char* PythonErrorClass(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kInvalidArgument:
      return "InvalidArgument";
    case ErrorKind::kShape:
      return "ShapeError";
    case ErrorKind::kDType:
      return "DTypeError";
    case ErrorKind::kUnknownAlgorithm:
      return "UnknownAlgorithm";
    case ErrorKind::kAlgorithmNotApplicable:
      return "AlgorithmNotApplicable";
    case ErrorKind::kUnsupported:
      return "UnsupportedOperation";
    case ErrorKind::kInternal:
      break;
  }
  return "InternalError";
}

void TranslateErrors(std::exception_ptr error) {
  try {
    std::rethrow_exception(error);
  } catch (const Error& e) {
    py::object cls =
        py::module_::import("ai3.errors").attr(PythonErrorClass(e.kind()));
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

// Image ops carry a layout attribute; the others read any rank.
template <class Attrs, class = void>
struct HasLayout : std::false_type {};
template <class Attrs>
struct HasLayout<Attrs, std::void_t<decltype(std::declval<Attrs>().layout)>>
    : std::true_type {};

template <class Attrs>
Layout LayoutOf(const Attrs& attrs) {
  if constexpr (HasLayout<Attrs>::value) {
    return attrs.layout;
  } else {
    return Layout::kNCHW;
  }
}

Layout ParseLayout(const std::string& layout) {
  if (layout == "NCHW") return Layout::kNCHW;
  if (layout == "NHWC") return Layout::kNHWC;
  Fail(ErrorKind::kInvalidArgument, "layout must be 'NCHW' or 'NHWC', got '",
       layout, "'");
}

// ---- Layers ---------------------------------------------------------------

// A core Layer callable on NumPy arrays. The weights are copied once into
// the layer; inputs are read in place; each call returns a new array.
template <class Attrs>
class PyLayer {
 public:
  PyLayer(const std::string& name, const Attrs& attrs,
          const std::vector<py::array>& params, const std::string& algorithm)
      : layer_(name, attrs, Tensors(params), algorithm) {}

  py::array Forward(const py::array& x) {
    Tensor input;
    try {
      input = TensorOf(x, "input", LayoutOf(layer_.attrs()));
    } catch (const Error& e) {
      throw e.WithContext(std::string(Attrs::kOp) + " layer '" +
                          layer_.name() + "'");
    }
    py::array y = EmptyArray(input.dtype, layer_.OutputShape(input));
    Tensor output = TensorOf(y, "output", input.layout);
    {
      py::gil_scoped_release release;
      layer_.Forward(input, output);
    }
    return y;
  }

  std::vector<int64_t> OutputShape(const std::vector<int64_t>& input_shape,
                                   const std::string& dtype) {
    Tensor probe;
    probe.shape = input_shape;
    probe.dtype = dtype == "float64" ? DType::kFloat64 : DType::kFloat32;
    probe.layout = LayoutOf(layer_.attrs());
    return layer_.OutputShape(probe);
  }

  const Layer<Attrs>& layer() const { return layer_; }

 private:
  static std::vector<Tensor> Tensors(const std::vector<py::array>& params) {
    std::vector<Tensor> tensors;
    for (const py::array& p : params) tensors.push_back(TensorOf(p, "weight"));
    return tensors;
  }
  Layer<Attrs> layer_;
};

template <class Attrs, typename... ConstructorArgs>
py::class_<PyLayer<Attrs>> BindLayer(py::module_& m, const char* class_name,
                                     const char* doc) {
  py::class_<PyLayer<Attrs>> cls(m, class_name, doc);
  cls.def("__call__", &PyLayer<Attrs>::Forward, py::arg("x"),
          "Runs the layer on a NumPy array (read in place) and returns a "
          "new array.")
      .def("output_shape", &PyLayer<Attrs>::OutputShape,
           py::arg("input_shape"), py::arg("dtype") = "float32")
      .def_property_readonly(
          "algorithm",
          [](const PyLayer<Attrs>& l) { return l.layer().algorithm(); })
      .def_property_readonly(
          "name", [](const PyLayer<Attrs>& l) { return l.layer().name(); })
      .def_property_readonly("op", [](const PyLayer<Attrs>&) {
        return std::string(Attrs::kOp);
      });
  return cls;
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
// found before a Layer exists (e.g. a weight of the wrong rank).
template <class Fn>
auto Named(const char* op, const std::string& name, Fn&& make) {
  try {
    return make();
  } catch (const Error& e) {
    throw e.WithContext(std::string(op) + " layer '" + name + "'");
  }
}

using Pair = std::pair<int64_t, int64_t>;
using Pads = std::tuple<int64_t, int64_t, int64_t, int64_t>;  // t, b, l, r

PYBIND11_MODULE(_core, m) {
  m.doc() = "ai3's C++ core: algorithms per op, and layers that run them.";
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

  BindLayer<Conv2dAttrs>(m, "Conv2d", "2-D convolution (weights OIHW).")
      .def(py::init([](const py::array& weight,
                       const std::optional<py::array>& bias, Pair stride,
                       Pads padding, Pair dilation, int64_t groups,
                       const std::string& layout, const std::string& algorithm,
                       const std::string& name) {
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
               return new PyLayer<Conv2dAttrs>(name, a, Params(weight, bias),
                                               algorithm);
             });
           }),
           py::kw_only(), py::arg("weight"), py::arg("bias"),
           py::arg("stride"), py::arg("padding"), py::arg("dilation"),
           py::arg("groups"), py::arg("layout"), py::arg("algorithm"),
           py::arg("name"));

  BindLayer<LinearAttrs>(m, "Linear", "y = x W^T + b over the last dim.")
      .def(py::init([](const py::array& weight,
                       const std::optional<py::array>& bias,
                       const std::string& algorithm, const std::string& name) {
             return Named("linear", name, [&] {
               LinearAttrs a;
               a.out_features = Dim(weight, 0, 2, "weight");
               a.in_features = weight.shape(1);
               a.has_bias = bias.has_value();
               a.dtype = LayerDType(weight);
               return new PyLayer<LinearAttrs>(name, a, Params(weight, bias),
                                               algorithm);
             });
           }),
           py::kw_only(), py::arg("weight"), py::arg("bias"),
           py::arg("algorithm"), py::arg("name"));

  BindLayer<ReluAttrs>(m, "ReLU", "max(x, 0) elementwise.")
      .def(py::init([](const std::string& algorithm, const std::string& name) {
             return new PyLayer<ReluAttrs>(name, ReluAttrs{}, {}, algorithm);
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
               return new PyLayer<MaxPool2dAttrs>(name, a, {}, algorithm);
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
               return new PyLayer<AvgPool2dAttrs>(name, a, {}, algorithm);
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
               return new PyLayer<AdaptiveAvgPool2dAttrs>(name, a, {},
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
             return new PyLayer<FlattenAttrs>(name, a, {}, algorithm);
           }),
           py::kw_only(), py::arg("start_dim"), py::arg("end_dim"),
           py::arg("algorithm"), py::arg("name"));
}

}  // namespace
}  // namespace ai3
