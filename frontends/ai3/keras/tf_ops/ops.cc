// One TensorFlow op, Ai3Layer, running any core layer: what the Keras
// frontend's generic layer (frontends/ai3/keras/layers.py) calls, and what
// its gradient (frontends/ai3/keras/ops.py) calls again with a backward op.
//
//   Ai3Layer(inputs: K * T, weights: N * T) -> y
//     inputs      the layer's inputs: one for a single-input op (x), as
//                 many as a multi-input op takes (a backward op of the
//                 training contract: [grad_output, x, y])
//     op          the core op (core/ops/<op>/<op>_schema.cc declares it)
//     attrs       its attributes as a JSON object, the declaration's names
//     weights_layout
//                 a JSON list, one entry per weight the op declares, in
//                 declaration order: null (an optional weight left out) or
//                 {"perm": [...], "shape": [...]}: the next tensor of
//                 `weights` (a Keras variable, in Keras' own layout), permuted
//                 by `perm` (numpy.transpose's meaning; absent: as is) and
//                 read as `shape`
//     same        "" or a JSON object {attr: {"kernel", "stride",
//                 "dilation", "input"}}: that padding attribute is
//                 TensorFlow's "SAME" of the height and width of the NHWC
//                 input `input` (default 0; a backward op's x is input 1),
//                 which the graph left unknown, so it is resolved per call
//                 (see OpConfig::For)
//     backward    a JSON object {target: algorithm}, read by the gradient
//                 only (ops.py): the algorithm of each backward op
//     algorithm, layer_name
//
// No op is named here: the kernel builds its layer through the op's schema
// (core/op_schema.h, the declarations _core.make_layer uses) and the shape
// function asks the schema's OutputShape (the op's own rule), so a new op
// needs nothing in this file.
//
// Cache validity. A layer depends on (a) what the input shape determines
// (only the "SAME" padding of `same`), (b) the dtype and (c) the weights'
// values. The cache is keyed by (a, b) and holds a reference (a shallow
// tf::Tensor) to the weight buffers it was built from. TensorFlow's resource
// variables are copy-on-write: an assign writes in place only when nobody
// else references the variable's buffer (AssignVariableOp /
// PrepareToUpdateVariable check RefCountIsOne). Because the cache holds a
// reference, any later assignment (set_weights, variable.assign,
// load_weights, an optimizer step) gives the variable a new buffer, so "same
// buffer pointer" proves "same values" in O(1): a call neither rebuilds nor
// hashes nor copies weights. When the pointer differs (a new buffer, or
// weights that are not variables), the bytes are compared with the held ones
// (early exit); only different values rebuild.
// Training relies on this: Keras' optimizers update a variable with
// AssignAddVariableOp / AssignSubVariableOp / AssignVariableOp, each of
// which copies a buffer that is referenced elsewhere before writing
// (PrepareToUpdateVariable), so the step after an update sees a new buffer,
// compares it and rebuilds (tests/training_keras/fit_test.py's
// test_optimizer_updates_are_seen fails if a layer kept the old weights).
//
// Errors: an ai3::Error becomes an InvalidArgument (Unimplemented for
// kUnsupported, Internal for kInternal) status whose message starts with
// "ai3.<ErrorClass>: ", which the Python side (keras/ops.py) re-raises as
// that class.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/errors.h"
#include "core/json_attrs.h"
#include "core/layer.h"
#include "core/op_schema.h"
#include "core/tensor.h"
#include "tensorflow/core/framework/op.h"
#include "tensorflow/core/framework/op_kernel.h"
#include "tensorflow/core/framework/shape_inference.h"

namespace ai3 {
namespace tf_ops {
namespace {

namespace tf = ::tensorflow;
using tf::shape_inference::DimensionHandle;
using tf::shape_inference::InferenceContext;
using tf::shape_inference::ShapeHandle;

absl::Status ToStatus(ErrorKind kind, const std::string& what) {
  std::string message =
      std::string("ai3.") + ErrorClassName(kind) + ": " + what;
  switch (kind) {
    case ErrorKind::kUnsupported:
      return absl::UnimplementedError(message);
    case ErrorKind::kInternal:
      return absl::InternalError(message);
    default:
      return absl::InvalidArgumentError(message);
  }
}

// How one declared weight reaches the core from a TF input.
struct WeightLayout {
  bool present = false;
  std::vector<int64_t> perm;  // empty: as is
  Shape shape;                // the core's shape of it
};

// TensorFlow's "SAME" geometry of a padding attribute left to run time.
struct SameRule {
  std::string attr;
  std::vector<int64_t> kernel, stride, dilation;
  int64_t input = 0;  // which of the op's inputs has that height and width
};

// Everything the op's attrs say, parsed once per kernel (or shape call).
struct OpConfig {
  const OpSchema* schema = nullptr;
  AttrMap attrs;
  std::vector<WeightLayout> weights;
  std::vector<SameRule> same;
  std::string name;  // the layer's
  int present = 0;   // how many weight inputs the op takes

  template <class Context>
  static OpConfig Read(Context* c) {
    std::string op, attrs, weights, same;
    OpConfig config;
    auto get = [&](const char* attr, std::string* out) {
      absl::Status s = c->GetAttr(attr, out);
      if (!s.ok()) Fail(ErrorKind::kInternal, s.ToString());
    };
    get("op", &op);
    get("attrs", &attrs);
    get("weights_layout", &weights);
    get("same", &same);
    get("layer_name", &config.name);
    config.schema = &GetOpSchema(op);
    config.attrs = JsonAttrs(*config.schema, attrs);
    const Json w = ParseJson(weights.empty() ? "[]" : weights);
    if (w.kind != Json::kList ||
        w.list.size() != config.schema->weights().size()) {
      Fail(ErrorKind::kInvalidArgument, LayerContext(op, config.name),
           ": weights_layout must list the op's ",
           config.schema->weights().size(), " declared weights");
    }
    for (const Json& e : w.list) {
      WeightLayout layout;
      if (e.kind == Json::kObject) {
        layout.present = true;
        layout.perm = Ints(e.Find("perm"), "perm");
        layout.shape = Ints(e.Find("shape"), "shape");
        ++config.present;
      }
      config.weights.push_back(std::move(layout));
    }
    if (!same.empty()) {
      const Json s = ParseJson(same);
      for (const auto& [key, rule] : s.object) {
        const Json* input = rule.Find("input");
        if (input != nullptr && (input->kind != Json::kInt || input->i < 0)) {
          Fail(ErrorKind::kInvalidArgument, "same: input must be an int >= 0");
        }
        config.same.push_back({key, Ints(rule.Find("kernel"), "kernel"),
                               Ints(rule.Find("stride"), "stride"),
                               Ints(rule.Find("dilation"), "dilation"),
                               input == nullptr ? 0 : input->i});
        if (config.same.back().kernel.size() != 2 ||
            config.same.back().stride.size() != 2 ||
            config.same.back().dilation.size() != 2) {
          Fail(ErrorKind::kInvalidArgument,
               "same: kernel, stride and dilation take 2 ints");
        }
      }
    }
    return config;
  }

  static std::string LayerContext(const std::string& op,
                                  const std::string& name) {
    return internal::LayerContext(op, name);
  }

  // The height and width of each rule's NHWC input among `inputs` (their
  // shapes), in the order of `same`: what the resolved attributes depend on
  // (the kernel's cache key). A rule's input must exist and be rank 4.
  std::vector<int64_t> SameSizes(const std::vector<Shape>& inputs) const {
    std::vector<int64_t> sizes;
    for (const SameRule& r : same) {
      if (r.input >= static_cast<int64_t>(inputs.size()) ||
          inputs[r.input].size() != 4) {
        Fail(ErrorKind::kShape, LayerContext(schema->op(), name),
             ": expected a rank-4 NHWC input ", r.input,
             " (\"same\" padding of ", r.attr, "), got ",
             r.input < static_cast<int64_t>(inputs.size())
                 ? ToString(inputs[r.input])
                 : std::string("none"));
      }
      sizes.push_back(inputs[r.input][1]);
      sizes.push_back(inputs[r.input][2]);
    }
    return sizes;
  }

  // The attributes for inputs of these shapes: `same` resolved. This is the
  // one "SAME" rule outside frontends/ai3/padding.py (same_1d, which it must
  // match: the odd pixel after): Python resolves every size it knows, so
  // this runs only for sizes a traced graph leaves to run time.
  AttrMap For(const std::vector<Shape>& inputs) const {
    if (same.empty()) return attrs;
    const std::vector<int64_t> sizes = SameSizes(inputs);
    AttrMap out = attrs;
    for (size_t i = 0; i < same.size(); ++i) {
      const SameRule& r = same[i];
      std::vector<int64_t> pads;
      const int64_t size[2] = {sizes[2 * i], sizes[2 * i + 1]};
      for (int k = 0; k < 2; ++k) {
        const int64_t effective = (r.kernel[k] - 1) * r.dilation[k] + 1;
        const int64_t positions = (size[k] + r.stride[k] - 1) / r.stride[k];
        const int64_t total = std::max<int64_t>(
            (positions - 1) * r.stride[k] + effective - size[k], 0);
        pads.push_back(total / 2);
        pads.push_back(total - total / 2);
      }
      out[r.attr] = pads;
    }
    return out;
  }
};

DType CoreDType(tf::DataType dtype) {
  if (dtype == tf::DT_FLOAT) return DType::kFloat32;
  if (dtype == tf::DT_DOUBLE) return DType::kFloat64;
  Fail(ErrorKind::kDType, "dtype ", tf::DataTypeString(dtype),
       " is not float32 or float64");
}

Shape ShapeOf(const tf::TensorShape& shape) {
  Shape s;
  for (int i = 0; i < shape.dims(); ++i) s.push_back(shape.dim_size(i));
  return s;
}

// A view of a TF tensor (no copy); TF tensors are dense and row-major.
Tensor View(const tf::Tensor& t, Layout layout) {
  Tensor v;
  v.dtype = CoreDType(t.dtype());
  v.data = const_cast<char*>(t.tensor_data().data());
  v.shape = ShapeOf(t.shape());
  v.layout = layout;
  return v;
}

// `src` (row-major, dims `in`) permuted by `perm` into `dst`: dst's dim d
// is src's dim perm[d]. Runs when a layer is (re)built, never per call.
void Permute(const char* src, const Shape& in, const std::vector<int64_t>& perm,
             size_t elem, char* dst) {
  const size_t rank = in.size();
  std::vector<int64_t> in_strides(rank, 1), out_dims(rank), strides(rank);
  for (size_t d = rank; d-- > 1;) in_strides[d - 1] = in_strides[d] * in[d];
  for (size_t d = 0; d < rank; ++d) {
    out_dims[d] = in[perm[d]];
    strides[d] = in_strides[perm[d]];
  }
  const int64_t total = NumElements(in);
  if (total == 0) return;
  if (rank == 0) {
    std::memcpy(dst, src, elem);
    return;
  }
  std::vector<int64_t> index(rank, 0);
  const int64_t inner = out_dims[rank - 1];
  const int64_t inner_stride = strides[rank - 1];
  for (int64_t done = 0; done < total; done += inner) {
    int64_t offset = 0;
    for (size_t d = 0; d + 1 < rank; ++d) offset += index[d] * strides[d];
    for (int64_t k = 0; k < inner; ++k) {
      std::memcpy(dst, src + (offset + k * inner_stride) * elem, elem);
      dst += elem;
    }
    for (size_t d = rank - 1; d-- > 0;) {  // the next outer index
      if (++index[d] < out_dims[d]) break;
      index[d] = 0;
    }
  }
}

bool SameBytes(const tf::Tensor& a, const tf::Tensor& b) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) return false;
  auto x = a.tensor_data(), y = b.tensor_data();
  return x.size() == y.size() &&
         (x.data() == y.data() ||
          std::memcmp(x.data(), y.data(), x.size()) == 0);
}

class Ai3LayerKernel : public tf::OpKernel {
 public:
  explicit Ai3LayerKernel(tf::OpKernelConstruction* c) : OpKernel(c) {
    OP_REQUIRES_OK(c, c->GetAttr("algorithm", &algorithm_));
    try {
      config_ = OpConfig::Read(c);
    } catch (const Error& e) {
      c->CtxFailure(ToStatus(e.kind(), e.what()));
    }
  }

  void Compute(tf::OpKernelContext* ctx) override {
    tf::OpInputList xs, inputs;
    OP_REQUIRES_OK(ctx, ctx->input_list("inputs", &xs));
    OP_REQUIRES_OK(ctx, ctx->input_list("weights", &inputs));
    try {
      if (inputs.size() != config_.present) {
        Fail(ErrorKind::kInvalidArgument, Context(), ": takes ",
             config_.present, " weight tensors, got ", inputs.size());
      }
      const tf::Tensor& x = xs[0];  // K >= 1 (the op's registration)
      std::vector<Shape> shapes;
      for (const tf::Tensor& t : xs) shapes.push_back(ShapeOf(t.shape()));
      std::vector<tf::Tensor> weights(inputs.begin(), inputs.end());
      std::vector<int64_t> key = {static_cast<int64_t>(CoreDType(x.dtype()))};
      for (int64_t size : config_.SameSizes(shapes)) key.push_back(size);
      std::shared_ptr<AnyLayer> layer = Lookup(shapes, x.dtype(), weights, key);
      // The layer checks the count, the dtypes and the shapes of these.
      std::vector<Tensor> views;
      for (const tf::Tensor& t : xs) views.push_back(View(t, layer->layout()));
      Shape out_shape = layer->OutputShape(views);
      tf::Tensor* y = nullptr;
      OP_REQUIRES_OK(
          ctx, ctx->allocate_output(0,
                                    tf::TensorShape(absl::Span<const int64_t>(
                                        out_shape.data(), out_shape.size())),
                                    &y));
      layer->Forward(views, View(*y, layer->layout()));
    } catch (const Error& e) {
      // The core's layer errors name the layer already.
      std::string what = e.what();
      if (what.rfind(Context(), 0) != 0) what = Context() + ": " + what;
      ctx->CtxFailure(ToStatus(e.kind(), what));
    } catch (const std::exception& e) {
      ctx->CtxFailure(ToStatus(ErrorKind::kInternal, e.what()));
    }
  }

 private:
  struct Entry {
    std::vector<int64_t> key;
    std::vector<tf::Tensor> weights;  // references: see the file comment
    std::shared_ptr<AnyLayer> layer;
  };
  static constexpr size_t kMaxEntries = 4;

  std::string Context() const {
    return OpConfig::LayerContext(config_.schema->op(), config_.name);
  }

  std::shared_ptr<AnyLayer> Lookup(const std::vector<Shape>& shapes,
                                   tf::DataType dtype,
                                   const std::vector<tf::Tensor>& weights,
                                   const std::vector<int64_t>& key) {
    std::lock_guard<std::mutex> lock(mu_);
    auto same_buffers = [&](const Entry& e) {
      for (size_t i = 0; i < weights.size(); ++i) {
        if (e.weights[i].dtype() != weights[i].dtype() ||
            e.weights[i].shape() != weights[i].shape() ||
            e.weights[i].tensor_data().data() !=
                weights[i].tensor_data().data()) {
          return false;
        }
      }
      return true;
    };
    auto same_values = [&](const Entry& e) {
      for (size_t i = 0; i < weights.size(); ++i) {
        if (!SameBytes(e.weights[i], weights[i])) return false;
      }
      return true;
    };
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
      if (it->key == key && same_buffers(*it)) {
        entries_.splice(entries_.begin(), entries_, it);
        return entries_.front().layer;
      }
    }
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
      if (it->key == key && same_values(*it)) {
        it->weights = weights;  // hold the new buffers instead
        entries_.splice(entries_.begin(), entries_, it);
        return entries_.front().layer;
      }
    }
    std::shared_ptr<AnyLayer> layer = Build(shapes, dtype, weights);
    entries_.push_front({key, weights, layer});
    if (entries_.size() > kMaxEntries) entries_.pop_back();
    return layer;
  }

  // The core layer from the op's schema; permuted weights live in `scratch`
  // until MakeLayer has copied them in.
  std::shared_ptr<AnyLayer> Build(const std::vector<Shape>& shapes,
                                  tf::DataType x_dtype,
                                  const std::vector<tf::Tensor>& inputs) {
    const DType dtype = CoreDType(x_dtype);
    std::vector<std::vector<char>> scratch;
    WeightSlots slots;
    size_t next = 0;
    for (const WeightLayout& layout : config_.weights) {
      if (!layout.present) {
        slots.emplace_back(std::nullopt);
        continue;
      }
      const tf::Tensor& t = inputs[next++];
      if (t.dtype() != x_dtype) {
        Fail(ErrorKind::kDType, Context(), ": input is ",
             tf::DataTypeString(x_dtype), " but a weight is ",
             tf::DataTypeString(t.dtype()));
      }
      Tensor w = View(t, Layout::kNCHW);
      if (!layout.perm.empty()) {
        if (layout.perm.size() != w.shape.size()) {
          Fail(ErrorKind::kShape, Context(), ": weight of shape ",
               ToString(w.shape), " cannot take the permutation of rank ",
               layout.perm.size());
        }
        scratch.emplace_back(t.tensor_data().size());
        Permute(static_cast<const char*>(w.data), w.shape, layout.perm,
                SizeOf(dtype), scratch.back().data());
        w.data = scratch.back().data();
      }
      if (!layout.shape.empty()) {
        if (NumElements(layout.shape) != w.numel()) {
          Fail(ErrorKind::kShape, Context(), ": weight of shape ",
               ToString(w.shape), " cannot be read as ",
               ToString(layout.shape));
        }
        w.shape = layout.shape;
      }
      slots.emplace_back(w);
    }
    return config_.schema->MakeLayer(config_.name, config_.For(shapes), slots,
                                     algorithm_, Device::kCPU);
  }

  OpConfig config_;
  std::string algorithm_;
  std::mutex mu_;
  std::list<Entry> entries_;  // most recently used first
};

// ---- Shape function: the core's rule --------------------------------------

// The output shape for inputs of shapes `dims` (all known), or the core's
// error.
Shape CoreOutputShape(const OpConfig& config, const std::vector<Shape>& dims,
                      DType dtype) {
  WeightSlots slots;
  for (const WeightLayout& layout : config.weights) {
    if (!layout.present) {
      slots.emplace_back(std::nullopt);
      continue;
    }
    Tensor w;
    w.dtype = dtype;
    w.shape = layout.shape;
    slots.emplace_back(w);
  }
  std::vector<Tensor> inputs;
  for (const Shape& shape : dims) {
    Tensor input;
    input.dtype = dtype;
    input.shape = shape;
    input.layout = Layout::kNHWC;  // what the layout attr says counts, not this
    inputs.push_back(input);
  }
  return config.schema->OutputShape(config.name, config.For(dims), slots,
                                    inputs);
}

// Unknown input dims are probed with two sizes far apart (and far above any
// kernel): an output dim that changes with them is unknown, one that does
// not is known. Both probes failing is the layer's own error (e.g. a channel
// count that cannot match); one failing leaves the shape unknown. Probing
// holds for one input only: the inputs of a multi-input op (a backward op's
// grad_output, x and y) depend on each other's sizes, which one probe size
// would not respect, so with any unknown dim its shape is left unknown (the
// gradient sets the shape it knows, ops.py) and the kernel checks it.
absl::Status Ai3LayerShape(InferenceContext* c) {
  try {
    const OpConfig config = OpConfig::Read(c);
    tf::DataType t;
    TF_RETURN_IF_ERROR(c->GetAttr("T", &t));
    const DType dtype = CoreDType(t);
    for (const WeightLayout& layout : config.weights) {
      if (layout.present && layout.shape.empty()) {
        c->set_output(0, c->UnknownShape());  // only the kernel can tell
        return absl::OkStatus();
      }
    }
    int count = 0;
    TF_RETURN_IF_ERROR(c->GetAttr("K", &count));
    constexpr int64_t kProbes[2] = {331, 669};
    std::vector<Shape> probe[2];
    bool unknown = false;
    for (int k = 0; k < count; ++k) {
      ShapeHandle x = c->input(k);
      if (!c->RankKnown(x)) {
        c->set_output(0, c->UnknownShape());
        return absl::OkStatus();
      }
      for (std::vector<Shape>& p : probe) p.emplace_back();
      for (int i = 0; i < c->Rank(x); ++i) {
        const int64_t d = c->Value(c->Dim(x, i));
        unknown = unknown || d < 0;
        for (int j = 0; j < 2; ++j)
          probe[j].back().push_back(d < 0 ? kProbes[j] : d);
      }
    }
    if (unknown && count > 1) {
      c->set_output(0, c->UnknownShape());
      return absl::OkStatus();
    }
    if (!unknown) {
      const Shape out = CoreOutputShape(config, probe[0], dtype);
      std::vector<DimensionHandle> dims;
      for (int64_t d : out) dims.push_back(c->MakeDim(d));
      c->set_output(0, c->MakeShape(dims));
      return absl::OkStatus();
    }
    std::optional<Shape> out[2];
    std::optional<Error> error;
    for (int k = 0; k < 2; ++k) {
      try {
        out[k] = CoreOutputShape(config, probe[k], dtype);
      } catch (const Error& e) {
        if (!error) error = e;
      }
    }
    if (!out[0] && !out[1]) throw *error;
    if (!out[0] || !out[1] || out[0]->size() != out[1]->size()) {
      c->set_output(0, c->UnknownShape());
      return absl::OkStatus();
    }
    std::vector<DimensionHandle> dims;
    for (size_t i = 0; i < out[0]->size(); ++i) {
      dims.push_back((*out[0])[i] == (*out[1])[i] ? c->MakeDim((*out[0])[i])
                                                  : c->UnknownDim());
    }
    c->set_output(0, c->MakeShape(dims));
    return absl::OkStatus();
  } catch (const Error& e) {
    return ToStatus(e.kind(), e.what());
  }
}

}  // namespace

REGISTER_OP("Ai3Layer")
    .Input("inputs: K * T")
    .Input("weights: N * T")
    .Output("y: T")
    .Attr("T: {float, double}")
    .Attr("K: int >= 1")
    .Attr("N: int >= 0")
    .Attr("op: string")
    .Attr("attrs: string = '{}'")
    .Attr("weights_layout: string = '[]'")
    .Attr("same: string = ''")
    .Attr("backward: string = '{}'")
    .Attr("algorithm: string = 'default'")
    .Attr("layer_name: string = ''")
    .SetShapeFn(Ai3LayerShape)
    .Doc("Any ai3 core layer on its inputs (see ops.cc).");

REGISTER_KERNEL_BUILDER(Name("Ai3Layer")
                            .Device(::tensorflow::DEVICE_CPU)
                            .TypeConstraint<float>("T"),
                        Ai3LayerKernel);
REGISTER_KERNEL_BUILDER(Name("Ai3Layer")
                            .Device(::tensorflow::DEVICE_CPU)
                            .TypeConstraint<double>("T"),
                        Ai3LayerKernel);

}  // namespace tf_ops
}  // namespace ai3
