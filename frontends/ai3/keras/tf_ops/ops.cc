// TensorFlow custom ops running ai3's core layers on NHWC tensors: what the
// Keras frontend's layers (frontends/ai3/keras/layers.py) call.
//
//   Ai3Conv2D            input NHWC, kernel HWIO (Keras), bias [O] or [0]
//   Ai3Dense             input [..., in], kernel [in, out] (Keras), bias
//   Ai3Relu              any shape
//   Ai3MaxPool2D         NHWC, TF "SAME"/"VALID" windows
//   Ai3AvgPool2D         NHWC, padding excluded from the divisor (as TF)
//   Ai3GlobalAvgPool2D   NHWC -> [N, 1, 1, C] (keepdims) or [N, C]
//   Ai3Flatten           [N, ...] -> [N, prod(...)]
//
// Every op has attrs `algorithm` (an ai3 algorithm name or "default") and
// `layer_name` (used in messages). Inputs are read in place and the output
// is allocated by TensorFlow; the core layer (weights converted once to the
// core's layout: OIHW for conv2d, [out, in] for linear) is cached in the
// OpKernel.
//
// Cache validity. A layer depends on (a) what the input shape determines
// (TF "SAME" padding is computed per call from the input's spatial size),
// (b) the dtype and (c) the weights' values. The cache is keyed by (a, b)
// and holds a reference (a shallow tf::Tensor) to the weight buffers it was
// built from. TensorFlow's resource variables are copy-on-write: an assign
// writes in place only when nobody else references the variable's buffer
// (AssignVariableOp / PrepareToUpdateVariable check RefCountIsOne). Because
// the cache holds a reference, any later assignment (set_weights,
// variable.assign, load_weights) gives the variable a new buffer, so "same
// buffer pointer" proves "same values" in O(1), and a held buffer is never
// freed and reused while referenced. When the pointer differs (a new
// buffer, or weights that are not variables), the bytes are compared with
// the held ones (O(weights), early exit); only different values rebuild.
//
// Errors: an ai3::Error becomes an InvalidArgument (Unimplemented for
// kUnsupported, Internal for kInternal) status whose message starts with
// "ai3.<ErrorClass>: ", which the Python side re-raises as that class.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "core/errors.h"
#include "core/layer.h"
#include "core/ops/conv2d/conv2d.h"
#include "core/ops/flatten/flatten.h"
#include "core/ops/linear/linear.h"
#include "core/ops/pool2d/pool2d.h"
#include "core/ops/relu/relu.h"
#include "core/tensor.h"
#include "tensorflow/core/framework/common_shape_fns.h"
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

// ---- Errors -----------------------------------------------------------------

absl::Status ToStatus(ErrorKind kind, const std::string& what) {
  std::string message = std::string("ai3.") + ErrorClassName(kind) + ": " + what;
  switch (kind) {
    case ErrorKind::kUnsupported:
      return absl::UnimplementedError(message);
    case ErrorKind::kInternal:
      return absl::InternalError(message);
    default:
      return absl::InvalidArgumentError(message);
  }
}

absl::Status ShapeStatus(const std::string& layer, const std::string& what) {
  return ToStatus(ErrorKind::kShape, layer + ": " + what);
}

// ---- Padding ------------------------------------------------------------------

// TF's "SAME" padding for one dimension: (before, after), the extra at the end.
std::pair<int64_t, int64_t> SamePadding(int64_t in, int64_t kernel,
                                        int64_t stride, int64_t dilation) {
  int64_t effective = (kernel - 1) * dilation + 1;
  int64_t out = (in + stride - 1) / stride;
  int64_t total = std::max<int64_t>((out - 1) * stride + effective - in, 0);
  return {total / 2, total - total / 2};
}

// Output size of one spatial dim, or -1 for an unknown input size.
int64_t WindowOutput(int64_t in, int64_t kernel, int64_t stride,
                     int64_t dilation, const std::string& padding,
                     int64_t pad_before, int64_t pad_after) {
  if (in < 0) return -1;
  if (padding == "SAME") return (in + stride - 1) / stride;
  int64_t effective = (kernel - 1) * dilation + 1;
  if (padding == "VALID") pad_before = pad_after = 0;
  int64_t span = in + pad_before + pad_after - effective;
  return span < 0 ? 0 : span / stride + 1;
}

// [top, bottom, left, right] for an NHWC input of spatial size h x w.
std::vector<int64_t> Pads(const std::string& padding,
                          const std::vector<int64_t>& explicit_pads, int64_t h,
                          int64_t w, int64_t kh, int64_t kw, int64_t sh,
                          int64_t sw, int64_t dh, int64_t dw) {
  if (padding == "VALID") return {0, 0, 0, 0};
  if (padding == "EXPLICIT") return explicit_pads;
  auto [t, b] = SamePadding(h, kh, sh, dh);
  auto [l, r] = SamePadding(w, kw, sw, dw);
  return {t, b, l, r};
}

// ---- Core tensors over TF tensors ---------------------------------------------

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
Tensor View(const tf::Tensor& t, Layout layout, Shape shape = {}) {
  Tensor v;
  v.dtype = CoreDType(t.dtype());
  v.data = const_cast<char*>(t.tensor_data().data());
  v.shape = shape.empty() ? ShapeOf(t.shape()) : std::move(shape);
  v.layout = layout;
  return v;
}

// Keras HWIO [kh, kw, in/groups, out] -> core OIHW [out, in/groups, kh, kw].
template <typename T>
std::vector<char> HwioToOihw(const tf::Tensor& kernel) {
  const int64_t kh = kernel.dim_size(0), kw = kernel.dim_size(1),
                ci = kernel.dim_size(2), co = kernel.dim_size(3);
  std::vector<char> bytes(kernel.NumElements() * sizeof(T));
  const T* src = reinterpret_cast<const T*>(kernel.tensor_data().data());
  T* dst = reinterpret_cast<T*>(bytes.data());
  for (int64_t h = 0; h < kh; ++h)
    for (int64_t w = 0; w < kw; ++w)
      for (int64_t i = 0; i < ci; ++i)
        for (int64_t o = 0; o < co; ++o)
          dst[((o * ci + i) * kh + h) * kw + w] =
              src[((h * kw + w) * ci + i) * co + o];
  return bytes;
}

// Keras Dense [in, out] -> core linear [out, in].
template <typename T>
std::vector<char> Transpose2d(const tf::Tensor& kernel) {
  const int64_t rows = kernel.dim_size(0), cols = kernel.dim_size(1);
  std::vector<char> bytes(kernel.NumElements() * sizeof(T));
  const T* src = reinterpret_cast<const T*>(kernel.tensor_data().data());
  T* dst = reinterpret_cast<T*>(bytes.data());
  constexpr int64_t kBlock = 64;
  for (int64_t r0 = 0; r0 < rows; r0 += kBlock)
    for (int64_t c0 = 0; c0 < cols; c0 += kBlock)
      for (int64_t r = r0; r < std::min(rows, r0 + kBlock); ++r)
        for (int64_t c = c0; c < std::min(cols, c0 + kBlock); ++c)
          dst[c * rows + r] = src[r * cols + c];
  return bytes;
}

template <template <typename> class Convert>
std::vector<char> ConvertWeight(const tf::Tensor& kernel) {
  if (kernel.dtype() == tf::DT_DOUBLE) return Convert<double>::Run(kernel);
  return Convert<float>::Run(kernel);
}
template <typename T>
struct HwioConvert {
  static std::vector<char> Run(const tf::Tensor& k) { return HwioToOihw<T>(k); }
};
template <typename T>
struct DenseConvert {
  static std::vector<char> Run(const tf::Tensor& k) {
    return Transpose2d<T>(k);
  }
};

// ---- The shared kernel ----------------------------------------------------------

bool SameBytes(const tf::Tensor& a, const tf::Tensor& b) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) return false;
  auto x = a.tensor_data(), y = b.tensor_data();
  return x.size() == y.size() &&
         (x.data() == y.data() || std::memcmp(x.data(), y.data(), x.size()) == 0);
}

// One OpKernel class per op: `Op` says how to key, build and shape a layer.
//   static constexpr int kNumWeights;
//   explicit Op(OpKernelConstruction*);           reads the op's attrs
//   std::vector<int64_t> Key(x, weights);          what x's shape determines
//   std::shared_ptr<AnyLayer> Build(name, x, weights, key, algorithm);
//   Shape CoreInputShape(x) / tf::TensorShape TfOutput(core output shape)
template <class Op>
class Ai3Kernel : public tf::OpKernel {
 public:
  explicit Ai3Kernel(tf::OpKernelConstruction* c) : OpKernel(c), op_(c) {
    OP_REQUIRES_OK(c, c->GetAttr("algorithm", &algorithm_));
    OP_REQUIRES_OK(c, c->GetAttr("layer_name", &layer_name_));
  }

  void Compute(tf::OpKernelContext* ctx) override {
    const tf::Tensor& x = ctx->input(0);
    std::vector<tf::Tensor> weights;
    for (int i = 1; i <= Op::kNumWeights; ++i) weights.push_back(ctx->input(i));
    try {
      DType dtype = CoreDType(x.dtype());
      std::vector<int64_t> key = op_.Key(x, weights);
      key.push_back(static_cast<int64_t>(dtype));
      std::shared_ptr<AnyLayer> layer = Lookup(x, weights, key);
      Tensor input = View(x, layer->layout(), op_.CoreInputShape(x));
      Shape out_shape = layer->OutputShape(input);
      tf::Tensor* y = nullptr;
      OP_REQUIRES_OK(ctx, ctx->allocate_output(0, op_.TfOutput(out_shape), &y));
      Tensor output = View(*y, layer->layout(), out_shape);
      layer->Forward(input, output);
    } catch (const Error& e) {
      // Errors from the Layer name it already; the others get the name here.
      const std::string context =
          std::string(Op::kOpName) + " layer '" + layer_name_ + "'";
      std::string what = e.what();
      if (what.rfind(context, 0) != 0) what = context + ": " + what;
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

  std::shared_ptr<AnyLayer> Lookup(const tf::Tensor& x,
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
    std::shared_ptr<AnyLayer> layer =
        op_.Build(layer_name_, x, weights, key, algorithm_);
    entries_.push_front({key, weights, layer});
    if (entries_.size() > kMaxEntries) entries_.pop_back();
    return layer;
  }

  Op op_;
  std::string algorithm_;
  std::string layer_name_;
  std::mutex mu_;
  std::list<Entry> entries_;  // most recently used first
};

template <typename Attrs>
std::shared_ptr<AnyLayer> MakeLayer(const std::string& name,
                                    const Attrs& attrs,
                                    const std::vector<Tensor>& params,
                                    const std::string& algorithm) {
  return std::make_shared<Layer<Attrs>>(name, attrs, params, algorithm);
}

std::string Context(const char* op, const std::string& name) {
  return std::string(op) + " layer '" + name + "'";
}

// ---- Conv2D ---------------------------------------------------------------------

struct Conv2dOp {
  static constexpr const char* kOpName = "conv2d";
  static constexpr int kNumWeights = 2;
  std::vector<int32_t> strides, dilations;
  std::vector<int64_t> explicit_paddings;
  int64_t groups = 1;
  bool use_bias = true;
  std::string padding;

  explicit Conv2dOp(tf::OpKernelConstruction* c) {
    OP_REQUIRES_OK(c, c->GetAttr("strides", &strides));
    OP_REQUIRES_OK(c, c->GetAttr("dilations", &dilations));
    OP_REQUIRES_OK(c, c->GetAttr("padding", &padding));
    OP_REQUIRES_OK(c, c->GetAttr("explicit_paddings", &explicit_paddings));
    int32_t g = 1;
    OP_REQUIRES_OK(c, c->GetAttr("groups", &g));
    groups = g;
    OP_REQUIRES_OK(c, c->GetAttr("use_bias", &use_bias));
  }

  Shape CoreInputShape(const tf::Tensor& x) const { return ShapeOf(x.shape()); }
  tf::TensorShape TfOutput(const Shape& s) const {
    return tf::TensorShape(absl::Span<const int64_t>(s.data(), s.size()));
  }

  std::vector<int64_t> Key(const tf::Tensor& x,
                           const std::vector<tf::Tensor>& w) const {
    if (x.dims() != 4) {
      Fail(ErrorKind::kShape, "expected a rank-4 NHWC input, got rank ",
           x.dims(), " ", ToString(ShapeOf(x.shape())));
    }
    if (w[0].dims() != 4) {
      Fail(ErrorKind::kShape, "kernel must be rank 4 (HWIO), got ",
           ToString(ShapeOf(w[0].shape())));
    }
    if (padding == "EXPLICIT" && explicit_paddings.size() != 4) {
      Fail(ErrorKind::kInvalidArgument,
           "explicit_paddings must be [top, bottom, left, right]");
    }
    return Pads(padding, explicit_paddings, x.dim_size(1), x.dim_size(2),
                w[0].dim_size(0), w[0].dim_size(1), strides[0], strides[1],
                dilations[0], dilations[1]);
  }

  std::shared_ptr<AnyLayer> Build(const std::string& name, const tf::Tensor& x,
                                  const std::vector<tf::Tensor>& w,
                                  const std::vector<int64_t>& key,
                                  const std::string& algorithm) {
    const tf::Tensor& kernel = w[0];
    const tf::Tensor& bias = w[1];
    try {
      if (kernel.dims() != 4) {
        Fail(ErrorKind::kShape, "kernel must be rank 4 (HWIO), got ",
             ToString(ShapeOf(kernel.shape())));
      }
      if (kernel.dtype() != x.dtype() || (use_bias && bias.dtype() != x.dtype())) {
        Fail(ErrorKind::kDType, "input is ", tf::DataTypeString(x.dtype()),
             " but the weights are ", tf::DataTypeString(kernel.dtype()));
      }
    } catch (const Error& e) {
      throw e.WithContext(Context("conv2d", name));
    }
    Conv2dAttrs a;
    a.kernel_h = kernel.dim_size(0);
    a.kernel_w = kernel.dim_size(1);
    a.in_channels = kernel.dim_size(2) * groups;
    a.out_channels = kernel.dim_size(3);
    a.stride_h = strides[0];
    a.stride_w = strides[1];
    a.dilation_h = dilations[0];
    a.dilation_w = dilations[1];
    a.groups = groups;
    a.has_bias = use_bias;
    a.dtype = CoreDType(x.dtype());
    a.layout = Layout::kNHWC;
    const std::vector<int64_t>& pads = key;  // t, b, l, r (then the dtype)
    a.pad_top = pads[0];
    a.pad_bottom = pads[1];
    a.pad_left = pads[2];
    a.pad_right = pads[3];
    std::vector<char> oihw = ConvertWeight<HwioConvert>(kernel);
    Tensor weight;
    weight.data = oihw.data();
    weight.dtype = a.dtype;
    weight.shape = {a.out_channels, kernel.dim_size(2), a.kernel_h, a.kernel_w};
    std::vector<Tensor> params = {weight};
    if (use_bias) params.push_back(View(bias, Layout::kNCHW));
    return MakeLayer(name, a, params, algorithm);
  }
};

// ---- Dense -----------------------------------------------------------------------

struct DenseOp {
  static constexpr const char* kOpName = "linear";
  static constexpr int kNumWeights = 2;
  bool use_bias = true;

  explicit DenseOp(tf::OpKernelConstruction* c) {
    OP_REQUIRES_OK(c, c->GetAttr("use_bias", &use_bias));
  }
  Shape CoreInputShape(const tf::Tensor& x) const { return ShapeOf(x.shape()); }
  tf::TensorShape TfOutput(const Shape& s) const {
    return tf::TensorShape(absl::Span<const int64_t>(s.data(), s.size()));
  }
  std::vector<int64_t> Key(const tf::Tensor&,
                           const std::vector<tf::Tensor>&) const {
    return {};
  }

  std::shared_ptr<AnyLayer> Build(const std::string& name, const tf::Tensor& x,
                                  const std::vector<tf::Tensor>& w,
                                  const std::vector<int64_t>&,
                                  const std::string& algorithm) {
    const tf::Tensor& kernel = w[0];
    const tf::Tensor& bias = w[1];
    try {
      if (kernel.dims() != 2) {
        Fail(ErrorKind::kShape, "kernel must be rank 2 [in, out], got ",
             ToString(ShapeOf(kernel.shape())));
      }
      if (kernel.dtype() != x.dtype() || (use_bias && bias.dtype() != x.dtype())) {
        Fail(ErrorKind::kDType, "input is ", tf::DataTypeString(x.dtype()),
             " but the weights are ", tf::DataTypeString(kernel.dtype()));
      }
    } catch (const Error& e) {
      throw e.WithContext(Context("linear", name));
    }
    LinearAttrs a;
    a.in_features = kernel.dim_size(0);
    a.out_features = kernel.dim_size(1);
    a.has_bias = use_bias;
    a.dtype = CoreDType(x.dtype());
    std::vector<char> oi = ConvertWeight<DenseConvert>(kernel);
    Tensor weight;
    weight.data = oi.data();
    weight.dtype = a.dtype;
    weight.shape = {a.out_features, a.in_features};
    std::vector<Tensor> params = {weight};
    if (use_bias) params.push_back(View(bias, Layout::kNCHW));
    return MakeLayer(name, a, params, algorithm);
  }
};

// ---- Weightless ops -----------------------------------------------------------------

struct ReluOp {
  static constexpr const char* kOpName = "relu";
  static constexpr int kNumWeights = 0;
  explicit ReluOp(tf::OpKernelConstruction*) {}
  Shape CoreInputShape(const tf::Tensor& x) const { return ShapeOf(x.shape()); }
  tf::TensorShape TfOutput(const Shape& s) const {
    return tf::TensorShape(absl::Span<const int64_t>(s.data(), s.size()));
  }
  std::vector<int64_t> Key(const tf::Tensor&,
                           const std::vector<tf::Tensor>&) const {
    return {};
  }
  std::shared_ptr<AnyLayer> Build(const std::string& name, const tf::Tensor&,
                                  const std::vector<tf::Tensor>&,
                                  const std::vector<int64_t>&,
                                  const std::string& algorithm) {
    return MakeLayer(name, ReluAttrs{}, {}, algorithm);
  }
};

struct FlattenOp {
  static constexpr const char* kOpName = "flatten";
  static constexpr int kNumWeights = 0;
  explicit FlattenOp(tf::OpKernelConstruction*) {}
  Shape CoreInputShape(const tf::Tensor& x) const { return ShapeOf(x.shape()); }
  tf::TensorShape TfOutput(const Shape& s) const {
    return tf::TensorShape(absl::Span<const int64_t>(s.data(), s.size()));
  }
  std::vector<int64_t> Key(const tf::Tensor&,
                           const std::vector<tf::Tensor>&) const {
    return {};
  }
  std::shared_ptr<AnyLayer> Build(const std::string& name, const tf::Tensor&,
                                  const std::vector<tf::Tensor>&,
                                  const std::vector<int64_t>&,
                                  const std::string& algorithm) {
    FlattenAttrs a;
    a.start_dim = 1;
    a.end_dim = -1;
    return MakeLayer(name, a, {}, algorithm);
  }
};

struct GlobalAvgPoolOp {
  static constexpr const char* kOpName = "adaptiveavgpool2d";
  static constexpr int kNumWeights = 0;
  bool keepdims = false;
  explicit GlobalAvgPoolOp(tf::OpKernelConstruction* c) {
    OP_REQUIRES_OK(c, c->GetAttr("keepdims", &keepdims));
  }
  Shape CoreInputShape(const tf::Tensor& x) const { return ShapeOf(x.shape()); }
  tf::TensorShape TfOutput(const Shape& s) const {
    // The core gives [N, 1, 1, C]; without keepdims TF's output is [N, C]
    // (the same memory).
    Shape t = keepdims ? s : Shape{s[0], s[3]};
    return tf::TensorShape(absl::Span<const int64_t>(t.data(), t.size()));
  }
  std::vector<int64_t> Key(const tf::Tensor&,
                           const std::vector<tf::Tensor>&) const {
    return {};
  }
  std::shared_ptr<AnyLayer> Build(const std::string& name, const tf::Tensor&,
                                  const std::vector<tf::Tensor>&,
                                  const std::vector<int64_t>&,
                                  const std::string& algorithm) {
    AdaptiveAvgPool2dAttrs a;
    a.output_h = a.output_w = 1;
    a.layout = Layout::kNHWC;
    return MakeLayer(name, a, {}, algorithm);
  }
};

template <class Attrs>
struct Pool2dOp {
  static constexpr const char* kOpName = Attrs::kOp;
  static constexpr int kNumWeights = 0;
  std::vector<int32_t> ksize, strides;
  std::string padding;

  explicit Pool2dOp(tf::OpKernelConstruction* c) {
    OP_REQUIRES_OK(c, c->GetAttr("ksize", &ksize));
    OP_REQUIRES_OK(c, c->GetAttr("strides", &strides));
    OP_REQUIRES_OK(c, c->GetAttr("padding", &padding));
  }
  Shape CoreInputShape(const tf::Tensor& x) const { return ShapeOf(x.shape()); }
  tf::TensorShape TfOutput(const Shape& s) const {
    return tf::TensorShape(absl::Span<const int64_t>(s.data(), s.size()));
  }
  std::vector<int64_t> Key(const tf::Tensor& x,
                           const std::vector<tf::Tensor>&) const {
    if (x.dims() != 4) {
      Fail(ErrorKind::kShape, "expected a rank-4 NHWC input, got rank ",
           x.dims(), " ", ToString(ShapeOf(x.shape())));
    }
    return Pads(padding, {}, x.dim_size(1), x.dim_size(2), ksize[0], ksize[1],
                strides[0], strides[1], 1, 1);
  }
  std::shared_ptr<AnyLayer> Build(const std::string& name, const tf::Tensor&,
                                  const std::vector<tf::Tensor>&,
                                  const std::vector<int64_t>& key,
                                  const std::string& algorithm) {
    Attrs a;
    a.kernel_h = ksize[0];
    a.kernel_w = ksize[1];
    a.stride_h = strides[0];
    a.stride_w = strides[1];
    a.pad_top = key[0];
    a.pad_bottom = key[1];
    a.pad_left = key[2];
    a.pad_right = key[3];
    a.layout = Layout::kNHWC;
    if constexpr (std::is_same_v<Attrs, AvgPool2dAttrs>) {
      a.count_include_pad = false;  // TF averages over the real inputs only
    }
    return MakeLayer(name, a, {}, algorithm);
  }
};

// ---- Shape functions ---------------------------------------------------------------

absl::Status LayerName(InferenceContext* c, std::string* name) {
  return c->GetAttr("layer_name", name);
}

absl::Status SpatialOutput(InferenceContext* c, ShapeHandle in,
                           const std::vector<int32_t>& k,
                           const std::vector<int32_t>& s,
                           const std::vector<int32_t>& d,
                           const std::string& padding,
                           const std::vector<int64_t>& pads,
                           DimensionHandle* oh, DimensionHandle* ow) {
  DimensionHandle dims_in[2] = {c->Dim(in, 1), c->Dim(in, 2)};
  DimensionHandle* outs[2] = {oh, ow};
  for (int i = 0; i < 2; ++i) {
    int64_t v = c->Value(dims_in[i]);
    int64_t pb = pads.size() == 4 ? pads[2 * i] : 0;
    int64_t pa = pads.size() == 4 ? pads[2 * i + 1] : 0;
    int64_t o = WindowOutput(v, k[i], s[i], d[i], padding, pb, pa);
    *outs[i] = o < 0 ? c->UnknownDim() : c->MakeDim(o);
  }
  return absl::OkStatus();
}

absl::Status CheckPositive(const std::string& name, const char* what,
                           const std::vector<int32_t>& v) {
  if (v.size() != 2 || v[0] < 1 || v[1] < 1) {
    return ToStatus(ErrorKind::kInvalidArgument,
                    name + ": " + what + " must be two integers >= 1");
  }
  return absl::OkStatus();
}

absl::Status Conv2dShape(InferenceContext* c) {
  std::string name;
  TF_RETURN_IF_ERROR(LayerName(c, &name));
  name = Context("conv2d", name);
  ShapeHandle x, kernel;
  if (!c->WithRank(c->input(0), 4, &x).ok()) {
    return ShapeStatus(name, "expected a rank-4 NHWC input, got " +
                                 c->DebugString(c->input(0)));
  }
  if (!c->WithRank(c->input(1), 4, &kernel).ok()) {
    return ShapeStatus(name, "kernel must be rank 4 (HWIO)");
  }
  std::vector<int32_t> strides, dilations;
  std::vector<int64_t> explicit_paddings;
  std::string padding;
  int32_t groups;
  TF_RETURN_IF_ERROR(c->GetAttr("strides", &strides));
  TF_RETURN_IF_ERROR(c->GetAttr("dilations", &dilations));
  TF_RETURN_IF_ERROR(c->GetAttr("padding", &padding));
  TF_RETURN_IF_ERROR(c->GetAttr("explicit_paddings", &explicit_paddings));
  TF_RETURN_IF_ERROR(c->GetAttr("groups", &groups));
  TF_RETURN_IF_ERROR(CheckPositive(name, "strides", strides));
  TF_RETURN_IF_ERROR(CheckPositive(name, "dilations", dilations));
  if (padding == "EXPLICIT" && explicit_paddings.size() != 4) {
    return ToStatus(ErrorKind::kInvalidArgument,
                    name + ": explicit_paddings must be [top, bottom, left, right]");
  }
  int64_t kh = c->Value(c->Dim(kernel, 0)), kw = c->Value(c->Dim(kernel, 1));
  int64_t kin = c->Value(c->Dim(kernel, 2));
  int64_t cin = c->Value(c->Dim(x, 3));
  if (kin >= 0 && cin >= 0 && kin * groups != cin) {
    return ShapeStatus(
        name, "input has " + std::to_string(cin) +
                  " channels but the kernel takes " + std::to_string(kin) +
                  " x groups=" + std::to_string(groups));
  }
  DimensionHandle oh = c->UnknownDim(), ow = c->UnknownDim();
  if (kh >= 0 && kw >= 0) {
    TF_RETURN_IF_ERROR(SpatialOutput(
        c, x, {static_cast<int32_t>(kh), static_cast<int32_t>(kw)}, strides,
        dilations, padding, explicit_paddings, &oh, &ow));
  }
  c->set_output(0, c->MakeShape({c->Dim(x, 0), oh, ow, c->Dim(kernel, 3)}));
  return absl::OkStatus();
}

absl::Status DenseShape(InferenceContext* c) {
  std::string name;
  TF_RETURN_IF_ERROR(LayerName(c, &name));
  name = Context("linear", name);
  ShapeHandle x, kernel;
  if (!c->WithRankAtLeast(c->input(0), 1, &x).ok()) {
    return ShapeStatus(name, "the input needs rank >= 1");
  }
  if (!c->WithRank(c->input(1), 2, &kernel).ok()) {
    return ShapeStatus(name, "kernel must be rank 2 [in, out]");
  }
  if (c->RankKnown(x)) {
    int64_t last = c->Value(c->Dim(x, -1));
    int64_t in = c->Value(c->Dim(kernel, 0));
    if (last >= 0 && in >= 0 && last != in) {
      return ShapeStatus(name, "input's last dimension is " +
                                   std::to_string(last) + ", expected " +
                                   std::to_string(in));
    }
    ShapeHandle lead, out;
    TF_RETURN_IF_ERROR(c->Subshape(x, 0, -1, &lead));
    TF_RETURN_IF_ERROR(
        c->Concatenate(lead, c->Vector(c->Dim(kernel, 1)), &out));
    c->set_output(0, out);
  } else {
    c->set_output(0, c->UnknownShape());
  }
  return absl::OkStatus();
}

template <bool kAvg>
absl::Status Pool2dShape(InferenceContext* c) {
  std::string name;
  TF_RETURN_IF_ERROR(LayerName(c, &name));
  name = Context(kAvg ? "avgpool2d" : "maxpool2d", name);
  ShapeHandle x;
  if (!c->WithRank(c->input(0), 4, &x).ok()) {
    return ShapeStatus(name, "expected a rank-4 NHWC input, got " +
                                 c->DebugString(c->input(0)));
  }
  std::vector<int32_t> ksize, strides;
  std::string padding;
  TF_RETURN_IF_ERROR(c->GetAttr("ksize", &ksize));
  TF_RETURN_IF_ERROR(c->GetAttr("strides", &strides));
  TF_RETURN_IF_ERROR(c->GetAttr("padding", &padding));
  TF_RETURN_IF_ERROR(CheckPositive(name, "pool size", ksize));
  TF_RETURN_IF_ERROR(CheckPositive(name, "strides", strides));
  DimensionHandle oh, ow;
  TF_RETURN_IF_ERROR(
      SpatialOutput(c, x, ksize, strides, {1, 1}, padding, {}, &oh, &ow));
  for (DimensionHandle d : {oh, ow}) {
    if (c->ValueKnown(d) && c->Value(d) < 1) {
      return ShapeStatus(name, "input " + c->DebugString(x) +
                                   " is smaller than the pooling window");
    }
  }
  c->set_output(0, c->MakeShape({c->Dim(x, 0), oh, ow, c->Dim(x, 3)}));
  return absl::OkStatus();
}

absl::Status GlobalAvgPoolShape(InferenceContext* c) {
  std::string name;
  TF_RETURN_IF_ERROR(LayerName(c, &name));
  ShapeHandle x;
  if (!c->WithRank(c->input(0), 4, &x).ok()) {
    return ShapeStatus(Context("adaptiveavgpool2d", name),
                       "expected a rank-4 NHWC input, got " +
                           c->DebugString(c->input(0)));
  }
  bool keepdims;
  TF_RETURN_IF_ERROR(c->GetAttr("keepdims", &keepdims));
  c->set_output(0, keepdims ? c->MakeShape({c->Dim(x, 0), c->MakeDim(1),
                                            c->MakeDim(1), c->Dim(x, 3)})
                            : c->MakeShape({c->Dim(x, 0), c->Dim(x, 3)}));
  return absl::OkStatus();
}

absl::Status FlattenShape(InferenceContext* c) {
  std::string name;
  TF_RETURN_IF_ERROR(LayerName(c, &name));
  ShapeHandle x = c->input(0);
  if (!c->RankKnown(x)) {
    c->set_output(0, c->Matrix(c->UnknownDim(), c->UnknownDim()));
    return absl::OkStatus();
  }
  if (c->Rank(x) < 2) {
    return ShapeStatus(Context("flatten", name),
                       "expected rank >= 2, got " + c->DebugString(x));
  }
  DimensionHandle rest = c->MakeDim(1);
  for (int i = 1; i < c->Rank(x); ++i) {
    TF_RETURN_IF_ERROR(c->Multiply(rest, c->Dim(x, i), &rest));
  }
  c->set_output(0, c->Matrix(c->Dim(x, 0), rest));
  return absl::OkStatus();
}

}  // namespace

#define AI3_COMMON_ATTRS                    \
  Attr("T: {float, double}")                \
      .Attr("algorithm: string = 'default'") \
      .Attr("layer_name: string = ''")

REGISTER_OP("Ai3Conv2D")
    .Input("input: T")
    .Input("kernel: T")
    .Input("bias: T")
    .Output("output: T")
    .AI3_COMMON_ATTRS
    .Attr("strides: list(int) = [1, 1]")
    .Attr("dilations: list(int) = [1, 1]")
    .Attr("groups: int = 1")
    .Attr("padding: {'SAME', 'VALID', 'EXPLICIT'} = 'VALID'")
    .Attr("explicit_paddings: list(int) = []")
    .Attr("use_bias: bool = true")
    .SetShapeFn(Conv2dShape)
    .Doc("ai3 conv2d on NHWC input; kernel HWIO, bias [O] (or [0] without).");

REGISTER_OP("Ai3Dense")
    .Input("input: T")
    .Input("kernel: T")
    .Input("bias: T")
    .Output("output: T")
    .AI3_COMMON_ATTRS
    .Attr("use_bias: bool = true")
    .SetShapeFn(DenseShape)
    .Doc("ai3 linear over the last dimension; kernel [in, out].");

REGISTER_OP("Ai3Relu")
    .Input("input: T")
    .Output("output: T")
    .AI3_COMMON_ATTRS
    .SetShapeFn(tf::shape_inference::UnchangedShape);

REGISTER_OP("Ai3MaxPool2D")
    .Input("input: T")
    .Output("output: T")
    .AI3_COMMON_ATTRS
    .Attr("ksize: list(int)")
    .Attr("strides: list(int)")
    .Attr("padding: {'SAME', 'VALID'} = 'VALID'")
    .SetShapeFn(Pool2dShape<false>);

REGISTER_OP("Ai3AvgPool2D")
    .Input("input: T")
    .Output("output: T")
    .AI3_COMMON_ATTRS
    .Attr("ksize: list(int)")
    .Attr("strides: list(int)")
    .Attr("padding: {'SAME', 'VALID'} = 'VALID'")
    .SetShapeFn(Pool2dShape<true>);

REGISTER_OP("Ai3GlobalAvgPool2D")
    .Input("input: T")
    .Output("output: T")
    .AI3_COMMON_ATTRS
    .Attr("keepdims: bool = false")
    .SetShapeFn(GlobalAvgPoolShape);

REGISTER_OP("Ai3Flatten")
    .Input("input: T")
    .Output("output: T")
    .AI3_COMMON_ATTRS
    .SetShapeFn(FlattenShape);

#define AI3_REGISTER_KERNEL(name, Op)                                    \
  REGISTER_KERNEL_BUILDER(                                              \
      Name(name).Device(::tensorflow::DEVICE_CPU).TypeConstraint<float>("T"), \
      Ai3Kernel<Op>);                                                   \
  REGISTER_KERNEL_BUILDER(Name(name)                                    \
                              .Device(::tensorflow::DEVICE_CPU)         \
                              .TypeConstraint<double>("T"),             \
                          Ai3Kernel<Op>)

AI3_REGISTER_KERNEL("Ai3Conv2D", Conv2dOp);
AI3_REGISTER_KERNEL("Ai3Dense", DenseOp);
AI3_REGISTER_KERNEL("Ai3Relu", ReluOp);
AI3_REGISTER_KERNEL("Ai3MaxPool2D", Pool2dOp<MaxPool2dAttrs>);
AI3_REGISTER_KERNEL("Ai3AvgPool2D", Pool2dOp<AvgPool2dAttrs>);
AI3_REGISTER_KERNEL("Ai3GlobalAvgPool2D", GlobalAvgPoolOp);
AI3_REGISTER_KERNEL("Ai3Flatten", FlattenOp);

}  // namespace tf_ops
}  // namespace ai3
