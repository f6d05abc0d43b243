// ai3._core.Attention and ai3._core.MultiheadAttention: the attention ops'
// layers (core/ops/attention), bound as subclasses of _core.Layer so Models
// take them like any layer; they are called with several arrays through
// Layer.__call__ (q, k, v[, mask]; or x[, mask] for self-attention).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/errors.h"
#include "core/layer.h"
#include "core/ops/attention/attention.h"
#include "core/ops/attention/multihead/multihead_attention.h"
#include "core/tensor.h"

namespace py = pybind11;

namespace ai3 {
namespace {

// A multi-input layer that also says how much scratch memory a call with
// these inputs takes (the memory tests compare algorithms with it).
template <class Attrs>
class ReportingLayer : public MultiLayer<Attrs> {
 public:
  using MultiLayer<Attrs>::MultiLayer;

  size_t WorkspaceBytes(const std::vector<Tensor>& inputs) const {
    this->OutputShape(inputs);  // validates, errors name the layer
    return static_cast<const MultiInputKernel*>(this->kernel_.get())
        ->InputsWorkspaceBytes(inputs);
  }
};

template <class Attrs>
using ReportingClass = py::class_<ReportingLayer<Attrs>, AnyLayer,
                                  std::shared_ptr<ReportingLayer<Attrs>>>;

// The weights as core tensors, read in place (the layer copies them). They
// must be C-contiguous: the Python wrappers make them so.
Tensor WeightOf(const py::array& a, const std::string& what) {
  Tensor t;
  if (a.dtype().is(py::dtype::of<float>())) {
    t.dtype = DType::kFloat32;
  } else if (a.dtype().is(py::dtype::of<double>())) {
    t.dtype = DType::kFloat64;
  } else {
    Fail(ErrorKind::kDType, what, " has dtype ",
         std::string(py::str(a.dtype())), "; ai3 takes float32 or float64");
  }
  if (!(a.flags() & py::array::c_style)) {
    Fail(ErrorKind::kInvalidArgument, what, " is not C-contiguous");
  }
  t.data = const_cast<void*>(a.data());
  for (py::ssize_t i = 0; i < a.ndim(); ++i) t.shape.push_back(a.shape(i));
  return t;
}

DType DTypeNamed(const std::string& dtype) {
  if (dtype == "float64") return DType::kFloat64;
  if (dtype != "float32") {
    Fail(ErrorKind::kDType, "dtype must be 'float32' or 'float64', got '",
         dtype, "'");
  }
  return DType::kFloat32;
}

// Shape-only tensors (no data) for output_shape / workspace_bytes queries.
std::vector<Tensor> Probes(const std::vector<std::vector<int64_t>>& shapes,
                           const std::string& dtype) {
  std::vector<Tensor> probes(shapes.size());
  for (size_t i = 0; i < shapes.size(); ++i) {
    probes[i].shape = shapes[i];
    probes[i].dtype = DTypeNamed(dtype);
  }
  return probes;
}

template <class Attrs>
void AddWorkspaceBytes(ReportingClass<Attrs>& cls) {
  cls.def(
      "workspace_bytes",
      [](const ReportingLayer<Attrs>& layer,
         const std::vector<std::vector<int64_t>>& input_shapes,
         const std::string& dtype) {
        return layer.WorkspaceBytes(Probes(input_shapes, dtype));
      },
      py::arg("input_shapes"), py::arg("dtype") = "float32",
      "Scratch bytes one call with inputs of these shapes uses (the layer "
      "keeps it between calls), besides the inputs and the output.");
}

}  // namespace

void BindAttention(py::module_& m) {
  ReportingClass<AttentionAttrs> attention(
      m, "Attention",
      "Scaled dot-product attention: layer(q, k, v[, mask]) with q (*batch, "
      "L, E), k (*batch, S, E), v (*batch, S, Ev) -> (*batch, L, Ev); mask "
      "is additive, of q's dtype, broadcastable to (*batch, L, S).");
  attention.def(
      py::init([](bool causal, std::optional<double> scale, bool has_mask,
                  const std::string& algorithm, const std::string& name) {
        AttentionAttrs a;
        a.causal = causal;
        a.has_scale = scale.has_value();
        a.scale = scale.value_or(0.0);
        a.has_mask = has_mask;
        return std::make_shared<ReportingLayer<AttentionAttrs>>(name, a,
                                                                std::vector<Tensor>{},
                                                                algorithm);
      }),
      py::kw_only(), py::arg("causal"), py::arg("scale"), py::arg("has_mask"),
      py::arg("algorithm"), py::arg("name"));
  AddWorkspaceBytes(attention);

  ReportingClass<MultiheadAttentionAttrs> mha(
      m, "MultiheadAttention",
      "torch.nn.MultiheadAttention at inference: layer(x[, mask]) or "
      "layer(q, k, v[, mask]); inputs (L, B, D), (B, L, D) with "
      "batch_first, or (L, D); mask additive, broadcastable to (B, "
      "num_heads, L, S). Its algorithm is the attention algorithm the heads "
      "run.");
  mha.def(
      py::init([](const py::array& in_proj_weight,
                  const std::optional<py::array>& in_proj_bias,
                  const py::array& out_proj_weight,
                  const std::optional<py::array>& out_proj_bias,
                  int64_t num_heads, bool batch_first, bool causal,
                  bool self_attention, bool has_mask,
                  const std::string& algorithm, const std::string& name) {
        const std::string context = "multihead_attention layer '" + name + "'";
        try {
          if (in_proj_bias.has_value() != out_proj_bias.has_value()) {
            Fail(ErrorKind::kInvalidArgument,
                 "in_proj_bias and out_proj_bias must be given together");
          }
          MultiheadAttentionAttrs a;
          std::vector<Tensor> params = {
              WeightOf(in_proj_weight, "in_proj_weight"),
              WeightOf(out_proj_weight, "out_proj_weight")};
          if (in_proj_bias) {
            params.push_back(WeightOf(*in_proj_bias, "in_proj_bias"));
            params.push_back(WeightOf(*out_proj_bias, "out_proj_bias"));
          }
          a.embed_dim = params[1].shape.empty() ? 0 : params[1].shape[0];
          a.num_heads = num_heads;
          a.batch_first = batch_first;
          a.causal = causal;
          a.has_bias = in_proj_bias.has_value();
          a.self_attention = self_attention;
          a.has_mask = has_mask;
          a.dtype = params[0].dtype;
          return std::make_shared<ReportingLayer<MultiheadAttentionAttrs>>(
              name, a, params, algorithm);
        } catch (const Error& e) {
          // The layer's own errors name it already.
          if (std::string(e.what()).rfind(context, 0) == 0) throw;
          throw e.WithContext(context);
        }
      }),
      py::kw_only(), py::arg("in_proj_weight"), py::arg("in_proj_bias"),
      py::arg("out_proj_weight"), py::arg("out_proj_bias"),
      py::arg("num_heads"), py::arg("batch_first"), py::arg("causal"),
      py::arg("self_attention"), py::arg("has_mask"), py::arg("algorithm"),
      py::arg("name"));
  AddWorkspaceBytes(mha);
}

}  // namespace ai3
