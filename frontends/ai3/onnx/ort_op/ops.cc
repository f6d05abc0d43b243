// ai3's native ONNX Runtime custom-op library: the node types of the domain
// "ai3.native", which run core layers inside ONNX Runtime without Python.
// ai3.onnx.InferenceSession hands the layer nodes that ai3.onnx.rewrite
// wrote ("ai3::Layer" and "ai3::ResidualLayer", one layer each, with a
// constant W) to the first two; the rewrite writes the weightless Concat
// and MultiLayer nodes in this domain itself. A region ("model") node still
// runs as the Python op (frontends/ai3/onnx/session.py), since building an
// ai3.Model is Python's pipeline.
//
//   ai3.native::Layer(X, W) -> Y
//     X        the layer's input, float32, as the layer's layout has it
//     W        a constant initializer: the layer's weights, flat float32
//     op       the core op (core/ops/<op>/<op>_schema.cc declares it)
//     attrs    its attributes as a JSON object (core/json_attrs.h)
//     weights  JSON [[name, shape or null], ...]: how W holds the weights,
//              in that order (ai3.onnx.rewrite's _pack)
//     algorithm, node (the layer's name), node_key (unused here)
//     yield_threads  optional int: 1 to give the OpenMP threads back after
//              the layer (ai3.onnx.session's YIELD_THREADS says when)
//
//   ai3.native::ResidualLayer(X, W, R) -> Y = after(layer(X) + R)
//     the same attributes, and
//     R        the residual, of the layer's output shape (ai3.onnx.rewrite
//              folds a residual Add, and the Relu after it, into the layer
//              whose result only that Add reads: _fold_residual_adds)
//     after    "relu", or "" for none
//   A "guess" conv2d adds into R inside its own kernel (oneDNN's sum
//   post-op, core/ops/conv2d/residual_conv.h, as ai3::Model fuses it), so
//   the add's own pass over memory is gone; ORT may hand Y R's buffer (the
//   op declares that it may run in place), else Y starts as a copy of R.
//   Any other layer writes Y, then adds R (and the relu) in one pass.
//
//   ai3.native::Concat(X1, ..., Xn) -> Y
//     Xk       float32 tensors of one rank, equal but along `axis`
//     axis     int: the axis they are joined along (negative from the end)
//   ai3's concat (core/ops/concat), threaded over rows: what ai3.onnx.rewrite
//   runs an NHWC channel concat with, one short row per pixel and input,
//   which ORT's own Concat copies at about half the speed of its NCHW one
//   (DenseNet-121's 62 concats: 7.7 ms against 4.0). It has no weights, so
//   the rewrite writes it in this domain directly (_sink_transposes).
//
//   ai3.native::MultiLayer(X1, ..., Xn) -> Y
//     a core layer without weights on several float32 inputs (a
//     broadcasting mul, add, ...), attributes op, attrs, algorithm, node as
//     Layer's. ai3.onnx.rewrite writes it directly (no weights to hold) for
//     a broadcasting elementwise node of the NHWC chain (_sink_transposes):
//     a squeeze-excitation block's Mul of [N,H,W,C] by [N,1,1,C], which ORT
//     runs at 2-3x its time in NCHW.
//
// What a call costs: the layer is built once, when ORT creates the kernel
// (weights copied into it then); a call wraps X's and Y's ORT buffers as
// core tensors (no copy) and runs the layer's Forward, which writes Y in
// place. The layer serialises its own Forward, so concurrent runs of a
// session are safe.
//
// No op is named here: the layer comes from the op's schema, as for
// ai3._core.make_layer and the TensorFlow op, so a new op needs nothing in
// this file.
//
// Errors: an ai3::Error becomes an ORT status (INVALID_ARGUMENT;
// NOT_IMPLEMENTED for kUnsupported; FAIL for kInternal) whose message starts
// with "ai3.<ErrorClass>: ONNX node '<name>'"; ai3.onnx.InferenceSession
// re-raises it as that class. A layer the core refuses to build fails when
// ORT creates the node's kernel, i.e. when the session is made; a bad input,
// at run. Nothing throws across the C API.
#include <omp.h>

#include <cstdint>
#include <cstring>
#include <exception>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/errors.h"
#include "core/json_attrs.h"
#include "core/layer.h"
#include "core/op_schema.h"
#include "core/ops/add/add.h"
#include "core/ops/concat/concat.h"
#include "core/ops/conv2d/residual_conv.h"
#include "core/tensor.h"

#define ORT_API_MANUAL_INIT
#include "onnxruntime_cxx_api.h"
#undef ORT_API_MANUAL_INIT

namespace ai3 {
namespace ort_op {
namespace {

constexpr const char* kDomain = "ai3.native";
constexpr const char* kNodeType = "Layer";
constexpr const char* kResidualNodeType = "ResidualLayer";
constexpr const char* kConcatNodeType = "Concat";
constexpr const char* kMultiNodeType = "MultiLayer";

OrtErrorCode CodeOf(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kUnsupported:
      return ORT_NOT_IMPLEMENTED;
    case ErrorKind::kInternal:
      return ORT_FAIL;
    default:
      return ORT_INVALID_ARGUMENT;
  }
}

// "ONNX node 'name' (ai3::Layer op)": how errors name a node, as the Python
// op's do (session.py's _as_ai3_error).
std::string NodeContext(const std::string& name, const std::string& op) {
  return "ONNX node '" + name + "' (ai3::Layer " + op + ")";
}

// Runs `body`, turning whatever it throws into an ORT status whose message
// `context` (the node, once known) prefixes.
template <class Body>
OrtStatusPtr Guarded(const std::string& context, Body&& body) {
  auto status = [&](ErrorKind kind, std::string what) -> OrtStatusPtr {
    if (!context.empty()) what = context + ": " + what;
    return Ort::GetApi().CreateStatus(
        CodeOf(kind),
        (std::string("ai3.") + ErrorClassName(kind) + ": " + what).c_str());
  };
  try {
    body();
    return nullptr;
  } catch (const Error& e) {
    return status(e.kind(), e.what());
  } catch (const Ort::Exception& e) {
    return status(ErrorKind::kInvalidArgument, e.what());
  } catch (const std::exception& e) {
    return status(ErrorKind::kInternal, e.what());
  }
}

// The weights W holds, per the `weights` attribute, as the schema's slots
// (views into W; MakeLayer copies them).
WeightSlots CutWeights(const OpSchema& schema, const std::string& layout_json,
                       const float* w, int64_t w_size) {
  const Json layout = ParseJson(layout_json.empty() ? "[]" : layout_json);
  if (layout.kind != Json::kList) {
    Fail(ErrorKind::kInvalidArgument, "the weights attribute must be a list");
  }
  WeightSlots slots(schema.weights().size());
  int64_t offset = 0;
  for (const Json& entry : layout.list) {
    if (entry.kind != Json::kList || entry.list.size() != 2 ||
        entry.list[0].kind != Json::kString) {
      Fail(ErrorKind::kInvalidArgument,
           "each entry of the weights attribute must be [name, shape]");
    }
    const std::string& name = entry.list[0].s;
    const int index = schema.WeightIndex(name);
    if (index < 0) {
      Fail(ErrorKind::kInvalidArgument, "op ", schema.op(), " has no weight '",
           name, "'");
    }
    if (entry.list[1].kind == Json::kNull) continue;
    Tensor t;
    t.dtype = DType::kFloat32;
    t.shape = Ints(&entry.list[1], "a weight's shape");
    CheckShape(t.shape, "a weight's shape");
    const int64_t size = t.numel();
    if (size > w_size - offset) {
      Fail(ErrorKind::kShape, "the weights input holds ", w_size,
           " values; weight '", name, "' ", ToString(t.shape), " needs more");
    }
    t.data = const_cast<float*>(w + offset);
    offset += size;
    slots[index] = t;
  }
  return slots;
}

// An optional int attribute of the node, 0 if absent (through the C API,
// which reports absence as a status rather than an exception).
int64_t OptionalInt(const OrtKernelInfo* info, const char* name) {
  int64_t value = 0;
  if (OrtStatus* status =
          Ort::GetApi().KernelInfoGetAttribute_int64(info, name, &value)) {
    Ort::GetApi().ReleaseStatus(status);
    return 0;
  }
  return value;
}

// The schema of the node's `op`; `context` becomes NodeContext.
const OpSchema& NodeSchema(const Ort::ConstKernelInfo& info,
                           std::string* context) {
  const std::string op = info.GetAttribute<std::string>("op");
  *context = NodeContext(info.GetAttribute<std::string>("node"), op);
  return GetOpSchema(op);
}

// The node's core layer, from its attributes and these weights.
std::shared_ptr<AnyLayer> MakeNodeLayer(const Ort::ConstKernelInfo& info,
                                        const OpSchema& schema,
                                        const WeightSlots& slots) {
  return schema.MakeLayer(
      info.GetAttribute<std::string>("node"),
      JsonAttrs(schema, info.GetAttribute<std::string>("attrs")), slots,
      info.GetAttribute<std::string>("algorithm"), Device::kCPU);
}

// Input `index` as a core tensor over ORT's buffer (float32, the ops'
// declared input type), in `layout`.
Tensor InputTensor(Ort::KernelContext& ctx, size_t index, Layout layout) {
  Ort::ConstValue x = ctx.GetInput(index);
  if (!x) Fail(ErrorKind::kInvalidArgument, "input ", index, " is missing");
  Tensor t;
  t.dtype = DType::kFloat32;
  t.shape = x.GetTensorTypeAndShapeInfo().GetShape();
  t.layout = layout;
  t.data = const_cast<float*>(x.GetTensorData<float>());
  return t;
}

struct LayerKernel {
  std::shared_ptr<AnyLayer> layer;
  std::string context;  // NodeContext, for messages
  // Give the calling thread's OpenMP threads back after the layer, instead
  // of leaving them spinning beside the heavy ORT nodes that run next
  // (attribute yield_threads, set by ai3.onnx.session: see YIELD_THREADS).
  bool yield_threads = false;
  // A ResidualLayer node: input 2 is R, and `relu` follows the sum.
  bool residual = false;
  bool relu = false;

  OrtStatusPtr ComputeV2(OrtKernelContext* raw) {
    return Guarded(context, [&] {
      Ort::KernelContext ctx(raw);
      const Tensor in = InputTensor(ctx, 0, layer->layout());
      const Shape out_shape = layer->OutputShape(in);  // validates `in`
      Ort::UnownedValue y = ctx.GetOutput(0, out_shape);
      Tensor out = in;
      out.shape = out_shape;
      out.data = y.GetTensorMutableData<float>();
      if (residual) {
        AddIntoResidual(in, out, InputTensor(ctx, 2, layer->layout()));
      } else {
        layer->Forward(in, out);
      }
      if (yield_threads) omp_pause_resource_all(omp_pause_soft);
    });
  }

 private:
  // out = after(layer(in) + r).
  void AddIntoResidual(const Tensor& in, const Tensor& out, const Tensor& r) {
    if (r.shape != out.shape) {
      Fail(ErrorKind::kShape, "the residual R is ", ToString(r.shape),
           "; the layer's output is ", ToString(out.shape));
    }
    const int64_t n = out.numel();
    float* y = out.data_as<float>();
    const float* r_data = r.data_as<const float>();
    std::lock_guard<std::mutex> hold(mu_);
    // ORT may hand Y R's buffer only, but X may be R too (x + conv(x)):
    // then the layer must read X before anything writes Y.
    ResidualConv* fused = y != in.data ? FusedFor(in.shape) : nullptr;
    if (fused != nullptr) {
      // The fused conv accumulates into Y: Y must hold R first.
      if (y != r_data) std::memcpy(y, r_data, sizeof(float) * n);
      fused->Run(in, out);
      return;
    }
    if (y != r_data) {
      layer->Forward(in, out);
      AddInPlace(y, r_data, n, relu);
      return;
    }
    // Y is R's buffer: the layer writes aside first.
    scratch_.resize(n);
    Tensor aside = out;
    aside.data = scratch_.data();
    layer->Forward(in, aside);
    AddInPlace(y, scratch_.data(), n, relu);
  }

  // The conv that adds into its output itself, for this input shape, or
  // null where there is none (not a "guess" conv2d, or its maker declines).
  ResidualConv* FusedFor(const Shape& input_shape) {
    if (fused_tried_ && fused_shape_ == input_shape) return fused_.get();
    fused_tried_ = true;
    fused_shape_ = input_shape;
    fused_.reset();
    const ResidualConvMaker make = ResidualConvFusion();
    const auto* conv = dynamic_cast<const Layer<Conv2dAttrs>*>(layer.get());
    if (make != nullptr && conv != nullptr && conv->algorithm() == "guess") {
      const Activation after =
          relu ? Activation::Clamp(0, std::numeric_limits<double>::infinity())
               : Activation{};
      fused_ = make(conv->attrs(), conv->weights(), after, input_shape);
    }
    return fused_.get();
  }

  std::mutex mu_;  // ORT may run a session from several threads
  std::unique_ptr<ResidualConv> fused_;
  Shape fused_shape_;
  bool fused_tried_ = false;
  std::vector<float> scratch_;
};

// The two node types: Layer(X, W) and ResidualLayer(X, W, R).
struct LayerOp : Ort::CustomOpBase<LayerOp, LayerKernel, /*WithStatus=*/true> {
  explicit LayerOp(bool residual) : residual_(residual) {
    if (residual_) {
      // Y may take R's buffer where nothing else reads R (ORT decides).
      OrtCustomOp::GetMayInplace = [](int** input_index, int** output_index) {
        *input_index = new int[1]{2};
        *output_index = new int[1]{0};
        return size_t{1};
      };
      OrtCustomOp::ReleaseMayInplace = [](int* input_index, int* output_index) {
        delete[] input_index;
        delete[] output_index;
      };
    }
  }

  OrtStatusPtr CreateKernelV2(const OrtApi&, const OrtKernelInfo* raw,
                              void** kernel) const {
    *kernel = nullptr;
    std::string context;
    return Guarded(context, [&] {
      Ort::ConstKernelInfo info(raw);
      const OpSchema& schema = NodeSchema(info, &context);
      int is_constant = 0;
      Ort::ConstValue w = info.GetTensorConstantInput(1, &is_constant);
      if (!is_constant) {
        Fail(ErrorKind::kInvalidArgument,
             "input W must be a constant initializer");
      }
      const int64_t w_size = w.GetTensorTypeAndShapeInfo().GetElementCount();
      const WeightSlots slots =
          CutWeights(schema, info.GetAttribute<std::string>("weights"),
                     w.GetTensorData<float>(), w_size);
      auto kernel_object = std::make_unique<LayerKernel>();
      kernel_object->context = context;
      kernel_object->yield_threads = OptionalInt(raw, "yield_threads") != 0;
      kernel_object->residual = residual_;
      if (residual_) {
        const std::string after = info.GetAttribute<std::string>("after");
        if (after != "relu" && !after.empty()) {
          Fail(ErrorKind::kInvalidArgument,
               "attribute after must be 'relu' or empty, got '", after, "'");
        }
        kernel_object->relu = after == "relu";
      }
      kernel_object->layer = MakeNodeLayer(info, schema, slots);
      *kernel = kernel_object.release();
    });
  }

  const char* GetName() const {
    return residual_ ? kResidualNodeType : kNodeType;
  }
  size_t GetInputTypeCount() const { return residual_ ? 3 : 2; }
  ONNXTensorElementDataType GetInputType(size_t) const {
    return ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT;
  }
  size_t GetOutputTypeCount() const { return 1; }
  ONNXTensorElementDataType GetOutputType(size_t) const {
    return ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT;
  }

 private:
  bool residual_;
};

// An op of any number (at least 1) of float32 inputs and one float32 output.
template <class Op, class Kernel>
struct VariadicOp : Ort::CustomOpBase<Op, Kernel, /*WithStatus=*/true> {
  size_t GetInputTypeCount() const { return 1; }
  ONNXTensorElementDataType GetInputType(size_t) const {
    return ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT;
  }
  OrtCustomOpInputOutputCharacteristic GetInputCharacteristic(size_t) const {
    return INPUT_OUTPUT_VARIADIC;
  }
  size_t GetOutputTypeCount() const { return 1; }
  ONNXTensorElementDataType GetOutputType(size_t) const {
    return ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT;
  }
};

struct MultiLayerKernel {
  std::shared_ptr<AnyLayer> layer;
  std::string context;

  OrtStatusPtr ComputeV2(OrtKernelContext* raw) {
    return Guarded(context, [&] {
      Ort::KernelContext ctx(raw);
      std::vector<Tensor> inputs(ctx.GetInputCount());
      for (size_t k = 0; k < inputs.size(); ++k) {
        inputs[k] = InputTensor(ctx, k, layer->layout());
      }
      // Validates the count, shapes and dtypes.
      const Shape out_shape = layer->OutputShape(inputs);
      Ort::UnownedValue y = ctx.GetOutput(0, out_shape);
      Tensor out = inputs[0];
      out.shape = out_shape;
      out.data = y.GetTensorMutableData<float>();
      layer->Forward(inputs, out);
    });
  }
};

struct MultiLayerOp : VariadicOp<MultiLayerOp, MultiLayerKernel> {
  OrtStatusPtr CreateKernelV2(const OrtApi&, const OrtKernelInfo* raw,
                              void** kernel) const {
    *kernel = nullptr;
    std::string context;
    return Guarded(context, [&] {
      Ort::ConstKernelInfo info(raw);
      const OpSchema& schema = NodeSchema(info, &context);
      auto kernel_object = std::make_unique<MultiLayerKernel>();
      kernel_object->context = context;
      kernel_object->layer =
          MakeNodeLayer(info, schema, WeightSlots(schema.weights().size()));
      *kernel = kernel_object.release();
    });
  }

  const char* GetName() const { return kMultiNodeType; }
};

struct ConcatKernel {
  int64_t axis = 0;
  std::string context;

  OrtStatusPtr ComputeV2(OrtKernelContext* raw) {
    return Guarded(context, [&] {
      Ort::KernelContext ctx(raw);
      const size_t count = ctx.GetInputCount();
      std::vector<Tensor> xs(count);
      for (size_t k = 0; k < count; ++k) {
        xs[k] = InputTensor(ctx, k, Layout::kNCHW);  // (no layout: a copy)
      }
      const Shape& first = xs[0].shape;
      const int64_t rank = static_cast<int64_t>(first.size());
      const int64_t a = axis < 0 ? axis + rank : axis;
      if (a < 0 || a >= rank) {
        Fail(ErrorKind::kShape, "axis ", axis, " is outside rank ", rank);
      }
      Shape out_shape = first;
      out_shape[a] = 0;
      for (size_t k = 0; k < count; ++k) {
        Shape rest = xs[k].shape;
        if (static_cast<int64_t>(rest.size()) == rank) rest[a] = first[a];
        if (rest != first) {
          Fail(ErrorKind::kShape, "input ", k, " is ", ToString(xs[k].shape),
               "; input 0 is ", ToString(first), " (they may differ along ",
               "axis ", a, " only)");
        }
        out_shape[a] += xs[k].shape[a];
      }
      int64_t outer = 1, inner = 1;
      for (int64_t d = 0; d < a; ++d) outer *= out_shape[d];
      for (int64_t d = a + 1; d < rank; ++d) inner *= out_shape[d];
      std::vector<const float*> data(count);
      std::vector<int64_t> widths(count);
      for (size_t k = 0; k < count; ++k) {
        data[k] = xs[k].data_as<const float>();
        widths[k] = xs[k].shape[a] * inner;
      }
      Ort::UnownedValue y = ctx.GetOutput(0, out_shape);
      if (outer * inner == 0 || out_shape[a] == 0) return;
      ConcatForward(data.data(), widths.data(), static_cast<int>(count), outer,
                    y.GetTensorMutableData<float>());
    });
  }
};

struct ConcatOp : VariadicOp<ConcatOp, ConcatKernel> {
  OrtStatusPtr CreateKernelV2(const OrtApi&, const OrtKernelInfo* raw,
                              void** kernel) const {
    *kernel = nullptr;
    return Guarded("", [&] {
      Ort::ConstKernelInfo info(raw);
      auto kernel_object = std::make_unique<ConcatKernel>();
      kernel_object->context =
          "ONNX node '" + info.GetNodeName() + "' (ai3.native::Concat)";
      kernel_object->axis = info.GetAttribute<int64_t>("axis");
      *kernel = kernel_object.release();
    });
  }

  const char* GetName() const { return kConcatNodeType; }
};

}  // namespace
}  // namespace ort_op
}  // namespace ai3

// ORT's entry point (SessionOptions.register_custom_ops_library). The API
// asked for is the headers' version; ORT serves every older version, so
// this library runs in any newer onnxruntime.
extern "C" OrtStatus* ORT_API_CALL RegisterCustomOps(OrtSessionOptions* options,
                                                     const OrtApiBase* base) {
  const OrtApi* api = base->GetApi(ORT_API_VERSION);
  if (api == nullptr) {
    // An onnxruntime older than the headers: say so through the oldest API.
    return base->GetApi(1)->CreateStatus(
        ORT_FAIL, "ai3's ONNX Runtime op library needs onnxruntime >= 1.21");
  }
  Ort::InitApi(api);
  static ai3::ort_op::LayerOp op(/*residual=*/false);
  static ai3::ort_op::LayerOp residual_op(/*residual=*/true);
  static ai3::ort_op::ConcatOp concat_op;
  static ai3::ort_op::MultiLayerOp multi_op;
  try {
    static Ort::CustomOpDomain domain(ai3::ort_op::kDomain);
    static const bool added =
        (domain.Add(&op), domain.Add(&residual_op), domain.Add(&concat_op),
         domain.Add(&multi_op), true);
    (void)added;
    Ort::UnownedSessionOptions(options).Add(domain);
  } catch (const Ort::Exception& e) {
    return api->CreateStatus(ORT_FAIL, e.what());
  }
  return nullptr;
}
