// ai3's native ONNX Runtime custom-op library: the node type "Layer" of the
// domain "ai3.native", any single core layer on one float32 input, run
// inside ONNX Runtime without Python. ai3.onnx.InferenceSession hands the
// nodes that ai3.onnx.swap_operation wrote ("ai3::Layer", one layer each,
// with a constant W) to this op; a region ("model") node still runs as the
// Python op (frontends/ai3/onnx/session.py), since building an ai3.Model is
// Python's pipeline.
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
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "core/errors.h"
#include "core/json_attrs.h"
#include "core/layer.h"
#include "core/op_schema.h"
#include "core/tensor.h"

#define ORT_API_MANUAL_INIT
#include "onnxruntime_cxx_api.h"
#undef ORT_API_MANUAL_INIT

namespace ai3 {
namespace ort_op {
namespace {

constexpr const char* kDomain = "ai3.native";
constexpr const char* kNodeType = "Layer";

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

struct LayerKernel {
  std::shared_ptr<AnyLayer> layer;
  std::string context;  // NodeContext, for messages
  // Give the calling thread's OpenMP threads back after the layer, instead
  // of leaving them spinning beside the heavy ORT nodes that run next
  // (attribute yield_threads, set by ai3.onnx.session: see YIELD_THREADS).
  bool yield_threads = false;

  OrtStatusPtr ComputeV2(OrtKernelContext* raw) {
    return Guarded(context, [&] {
      Ort::KernelContext ctx(raw);
      Ort::ConstValue x = ctx.GetInput(0);
      Ort::TensorTypeAndShapeInfo info = x.GetTensorTypeAndShapeInfo();
      Tensor in;
      in.dtype = DType::kFloat32;  // the op's declared input type
      in.shape = info.GetShape();
      in.layout = layer->layout();
      in.data = const_cast<float*>(x.GetTensorData<float>());
      const Shape out_shape = layer->OutputShape(in);  // validates `in`
      Ort::UnownedValue y = ctx.GetOutput(0, out_shape);
      Tensor out = in;
      out.shape = out_shape;
      out.data = y.GetTensorMutableData<float>();
      layer->Forward(in, out);
      if (yield_threads) omp_pause_resource_all(omp_pause_soft);
    });
  }
};

struct LayerOp : Ort::CustomOpBase<LayerOp, LayerKernel, /*WithStatus=*/true> {
  OrtStatusPtr CreateKernelV2(const OrtApi&, const OrtKernelInfo* raw,
                              void** kernel) const {
    *kernel = nullptr;
    std::string context;
    return Guarded(context, [&] {
      Ort::ConstKernelInfo info(raw);
      const std::string op = info.GetAttribute<std::string>("op");
      const std::string name = info.GetAttribute<std::string>("node");
      context = NodeContext(name, op);
      const OpSchema& schema = GetOpSchema(op);
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
      kernel_object->layer = schema.MakeLayer(
          name, JsonAttrs(schema, info.GetAttribute<std::string>("attrs")),
          slots, info.GetAttribute<std::string>("algorithm"), Device::kCPU);
      *kernel = kernel_object.release();
    });
  }

  const char* GetName() const { return kNodeType; }
  size_t GetInputTypeCount() const { return 2; }
  ONNXTensorElementDataType GetInputType(size_t) const {
    return ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT;
  }
  size_t GetOutputTypeCount() const { return 1; }
  ONNXTensorElementDataType GetOutputType(size_t) const {
    return ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT;
  }
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
  static ai3::ort_op::LayerOp op;
  try {
    static Ort::CustomOpDomain domain(ai3::ort_op::kDomain);
    static const bool added = (domain.Add(&op), true);
    (void)added;
    Ort::UnownedSessionOptions(options).Add(domain);
  } catch (const Ort::Exception& e) {
    return api->CreateStatus(ORT_FAIL, e.what());
  }
  return nullptr;
}
