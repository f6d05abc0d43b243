// Layer: one op with its parameters, weights and chosen algorithm, ready to
// run. This is what the frontends create per framework layer.
//
// `Attrs` (e.g. Conv2dAttrs) provides:
//   static constexpr char kOp[];
//   void Validate(const std::vector<Tensor>& params) const;  // attrs+weights
//   Shape OutputShape(const Tensor& input) const;            // checks input
#ifndef AI3_CORE_LAYER_H_
#define AI3_CORE_LAYER_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/buffer.h"
#include "core/errors.h"
#include "core/registry.h"
#include "core/tensor.h"

namespace ai3 {

template <class Attrs>
class Layer {
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

  const std::string& name() const { return name_; }
  const std::string& algorithm() const { return algorithm_; }
  const Attrs& attrs() const { return attrs_; }

  Shape OutputShape(const Tensor& input) const {
    try {
      CheckTensor(input, "input");
      return attrs_.OutputShape(input);
    } catch (const Error& e) {
      throw e.WithContext(Context());
    }
  }

  // Runs the layer; `output` must have OutputShape(input) and input's dtype.
  void Forward(const Tensor& input, const Tensor& output) {
    Shape expected = OutputShape(input);
    try {
      CheckTensor(output, "output");
      if (output.shape != expected || output.dtype != input.dtype) {
        Fail(ErrorKind::kShape, "output buffer is ", Name(output.dtype), " ",
             ToString(output.shape), ", expected ", Name(input.dtype), " ",
             ToString(expected));
      }
      if (input.numel() == 0 || output.numel() == 0) return;
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

  void CheckTensor(const Tensor& t, const char* what) const {
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
    if (t.numel() > 0 && t.data == nullptr) {
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
  Buffer workspace_;
};

}  // namespace ai3

#endif  // AI3_CORE_LAYER_H_
