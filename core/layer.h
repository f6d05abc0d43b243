// Layer: one op with its parameters, weights and chosen algorithm, ready to
// run. This is what the frontends create per framework layer.
//
// AnyLayer is the same thing with the op erased: what a Model (core/graph.h)
// holds, so one graph can chain conv2d, relu, linear... without knowing them.
//
// `Attrs` (e.g. Conv2dAttrs) provides:
//   static constexpr char kOp[];
//   void Validate(const std::vector<Tensor>& params) const;  // attrs+weights
//   Shape OutputShape(const Tensor& input) const;            // checks input
#ifndef AI3_CORE_LAYER_H_
#define AI3_CORE_LAYER_H_

#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/buffer.h"
#include "core/errors.h"
#include "core/registry.h"
#include "core/tensor.h"

namespace ai3 {

// A single-input layer of any op. Implementations must be safe to call from
// several threads (Layer<Attrs> serialises its own Forward calls), since one
// layer object may be shared by Python code and one or more Models.
class AnyLayer {
 public:
  virtual ~AnyLayer() = default;

  virtual const std::string& name() const = 0;
  virtual const char* op() const = 0;
  // The algorithm actually running ("default" already resolved).
  virtual const std::string& algorithm() const = 0;
  // The layer's data layout; kNCHW for ops that have none (relu, linear).
  virtual Layout layout() const = 0;

  // The shape Forward would produce for `input` (only its shape, dtype and
  // device are read: `input.data` may be null). Throws an Error naming the
  // layer if the layer cannot take such an input.
  virtual Shape OutputShape(const Tensor& input) const = 0;
  // Runs the layer; `output` must have OutputShape(input) and input's dtype,
  // and must not overlap `input`.
  virtual void Forward(const Tensor& input, const Tensor& output) = 0;
};

namespace internal {
// Image ops carry a layout attribute; the others read any rank.
template <class Attrs, class = void>
struct HasLayout : std::false_type {};
template <class Attrs>
struct HasLayout<Attrs, std::void_t<decltype(std::declval<Attrs>().layout)>>
    : std::true_type {};
}  // namespace internal

template <class Attrs>
class Layer : public AnyLayer {
 public:
  // Copies `params` (the layer owns its weights; the framework's tensors may
  // change or go away) and prepares the algorithm called `algorithm`.
  Layer(std::string name, Attrs attrs, const std::vector<Tensor>& params,
        const std::string& algorithm, Device device = Device::kCPU)
      : name_(std::move(name)), attrs_(std::move(attrs)), device_(device) {
    try {
      attrs_.Validate(params);
      for (const Tensor& p : params) {
        if (!p.IsContiguous()) {
          Fail(ErrorKind::kInvalidArgument, "weights must be contiguous");
        }
        Buffer& storage = param_storage_.emplace_back(p.numel() *
                                                      SizeOf(p.dtype));
        if (p.numel()) std::memcpy(storage.data(), p.data, storage.size());
        Tensor copy = p;
        copy.data = storage.data();
        copy.strides.clear();
        params_.push_back(copy);
      }
      const Algorithm<Attrs>& chosen = Registry<Attrs>::Get().Resolve(
          algorithm, device_, attrs_, &algorithm_);
      kernel_ = chosen.Prepare(attrs_, params_);
    } catch (const Error& e) {
      throw e.WithContext(Context());
    }
  }

  Layer(const Layer&) = delete;
  Layer& operator=(const Layer&) = delete;

  const std::string& name() const override { return name_; }
  const char* op() const override { return Attrs::kOp; }
  const std::string& algorithm() const override { return algorithm_; }
  Layout layout() const override {
    if constexpr (internal::HasLayout<Attrs>::value) {
      return attrs_.layout;
    } else {
      return Layout::kNCHW;
    }
  }
  const Attrs& attrs() const { return attrs_; }

  Shape OutputShape(const Tensor& input) const override {
    try {
      // A shape query: the data pointer is not needed (see Forward).
      CheckTensor(input, "input", /*need_data=*/false);
      return attrs_.OutputShape(input);
    } catch (const Error& e) {
      throw e.WithContext(Context());
    }
  }

  // Runs the layer; `output` must have OutputShape(input) and input's dtype.
  void Forward(const Tensor& input, const Tensor& output) override {
    Shape expected = OutputShape(input);
    try {
      CheckTensor(input, "input", /*need_data=*/true);
      CheckTensor(output, "output", /*need_data=*/true);
      if (output.shape != expected || output.dtype != input.dtype) {
        Fail(ErrorKind::kShape, "output buffer is ", Name(output.dtype), " ",
             ToString(output.shape), ", expected ", Name(input.dtype), " ",
             ToString(expected));
      }
      if (input.numel() == 0 || output.numel() == 0) return;
      // The workspace and the kernel's own state (e.g. oneDNN primitives it
      // caches) are per layer, and callers release the GIL: one call at a
      // time. Kernels are parallel inside, so little is lost.
      std::lock_guard<std::mutex> lock(run_mutex_);
      workspace_.Reserve(kernel_->WorkspaceBytes(input.shape));
      kernel_->Run(input, output, workspace_.data());
    } catch (const Error& e) {
      throw e.WithContext(Context());
    }
  }

 private:
  std::string Context() const {
    std::string context = std::string(Attrs::kOp) + " layer";
    if (!name_.empty()) context += " '" + name_ + "'";
    if (!algorithm_.empty()) context += " (" + algorithm_ + ")";
    return context;
  }

  void CheckTensor(const Tensor& t, const char* what, bool need_data) const {
    if (t.device != device_) {
      Fail(ErrorKind::kInvalidArgument, what, " is on ", Name(t.device),
           " but the layer runs on ", Name(device_));
    }
    if (!t.IsContiguous()) {
      Fail(ErrorKind::kInvalidArgument, what,
           " is not contiguous; the core reads dense buffers only");
    }
    if (t.dtype != DType::kFloat32 && t.dtype != DType::kFloat64) {
      Fail(ErrorKind::kDType, what, " dtype is not float32 or float64");
    }
    if (need_data && t.numel() > 0 && t.data == nullptr) {
      Fail(ErrorKind::kInvalidArgument, what, " has no data");
    }
  }

  std::string name_;
  Attrs attrs_;
  Device device_;
  std::vector<Buffer> param_storage_;
  std::vector<Tensor> params_;
  std::string algorithm_;
  std::unique_ptr<Kernel> kernel_;
  std::mutex run_mutex_;  // guards workspace_ and kernel_ while running
  Buffer workspace_;
};

}  // namespace ai3

#endif  // AI3_CORE_LAYER_H_
