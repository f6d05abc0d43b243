// Layer: one op with its parameters, weights and chosen algorithm, ready to
// run. This is what the frontends create per framework layer.
//
// AnyLayer is the same thing with the op erased: what a Model (core/graph.h)
// holds, so one graph can chain conv2d, relu, linear... without knowing them.
//
// Two kinds of layer share that interface:
//   Layer<Attrs>       one input (conv2d, relu, ...). `Attrs` provides:
//     static constexpr char kOp[];
//     void Validate(const std::vector<Tensor>& params) const;  // attrs+weights
//     Shape OutputShape(const Tensor& input) const;            // checks input
//   MultiLayer<Attrs>  N inputs (broadcasting add, matmul, attention). `Attrs`
//     provides kOp and Validate as above, and
//     int MinInputs() const; int MaxInputs() const;  // how many it reads
//     Shape OutputShape(const std::vector<Tensor>& inputs) const;
//     its algorithms' kernels derive from MultiInputKernel (below).
// Both run through the same registry (core/registry.h), so a multi-input op
// has named algorithms, "default" and applicability like any other.
#ifndef AI3_CORE_LAYER_H_
#define AI3_CORE_LAYER_H_

#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/buffer.h"
#include "core/errors.h"
#include "core/registry.h"
#include "core/tensor.h"

namespace ai3 {

// A layer of any op. Implementations must be safe to call from several
// threads (Layer<Attrs> and MultiLayer<Attrs> serialise their own Forward
// calls), since one layer object may be shared by Python code and one or
// more Models.
class AnyLayer {
 public:
  virtual ~AnyLayer() = default;

  virtual const std::string& name() const = 0;
  virtual const char* op() const = 0;
  // The algorithm actually running ("default" already resolved).
  virtual const std::string& algorithm() const = 0;
  // The layer's data layout; kNCHW for ops that have none (relu, linear).
  virtual Layout layout() const = 0;
  // Where the layer runs (its inputs and outputs live there).
  virtual Device device() const { return Device::kCPU; }

  // The shape Forward would produce for `input` (only its shape, dtype and
  // device are read: `input.data` may be null). Throws an Error naming the
  // layer if the layer cannot take such an input.
  virtual Shape OutputShape(const Tensor& input) const = 0;
  // The dtype of that output: the input's, except for the ops that take or
  // give other dtypes (gather, cast, comparisons; internal::AnyDType).
  virtual DType OutputDType(const Tensor& input) const { return input.dtype; }
  // Runs the layer; `output` must have OutputShape(input) and input's dtype,
  // and must not overlap `input`.
  virtual void Forward(const Tensor& input, const Tensor& output) = 0;
  // Scratch bytes Forward keeps for an input of this shape and dtype (only
  // those are read), besides the input and output: what "auto" and plans
  // report beside each algorithm's time. 0 for layers that need none.
  virtual size_t InputWorkspaceBytes(const Tensor& input) const {
    (void)input;
    return 0;
  }

  // Where the layer's result for an input of this shape is that input's
  // elements [offset, offset + numel) in their order -- a reshape, a
  // flatten, a slice of one contiguous block, a permute that moves only
  // dimensions of size 1 -- that offset; otherwise none. A Model then gives
  // the layer's readers a view of its input's buffer instead of running it
  // (core/graph.h). Only the core's own "direct" algorithm on the CPU
  // promises this; a user's may compute anything.
  virtual std::optional<int64_t> ViewOffset(const Shape& input) const {
    (void)input;
    return std::nullopt;
  }

  // The weights the layer copied when it was built (the present ones, in
  // the op's declared order), untouched by the kernel, which keeps any
  // transformed form (winograd's, packed GEMM panels) of its own: with the
  // op, attributes and algorithm, what rebuilds an equal layer (a pickled
  // ai3.Model does). Empty for layers without weights.
  virtual const std::vector<Tensor>& weights() const {
    static const std::vector<Tensor> kNone;
    return kNone;
  }

  // How many inputs the layer reads: 1 and 1 for single-input layers. A
  // multi-input layer may take a range (e.g. add: 2 tensors, or 1 and its
  // constant operand; attention: q, k, v and an optional mask).
  virtual int min_inputs() const { return 1; }
  virtual int max_inputs() const { return 1; }

  // The N-input forms, for layers whose max_inputs() > 1. For single-input
  // layers they take exactly one input and call the forms above. All inputs
  // share the first one's dtype. Forward must not allocate per call beyond
  // what the one-input form does (Models call it once per node per batch).
  virtual Shape OutputShape(const std::vector<Tensor>& inputs) const {
    CheckInputCount(inputs.size());
    return OutputShape(inputs[0]);
  }
  virtual void Forward(const std::vector<Tensor>& inputs,
                       const Tensor& output) {
    CheckInputCount(inputs.size());
    Forward(inputs[0], output);
  }
  virtual DType OutputDType(const std::vector<Tensor>& inputs) const {
    CheckInputCount(inputs.size());
    return OutputDType(inputs[0]);
  }

 protected:
  // Throws kInvalidArgument naming the layer unless min_inputs() <= count <=
  // max_inputs().
  void CheckInputCount(size_t count) const {
    const int n = static_cast<int>(count);
    if (n >= min_inputs() && n <= max_inputs()) return;
    std::string context = std::string(op()) + " layer";
    if (!name().empty()) context += " '" + name() + "'";
    if (min_inputs() == max_inputs()) {
      Fail(ErrorKind::kInvalidArgument, context, ": takes ", min_inputs(),
           " input", min_inputs() == 1 ? "" : "s", ", got ", count);
    }
    Fail(ErrorKind::kInvalidArgument, context, ": takes ", min_inputs(), " to ",
         max_inputs(), " inputs, got ", count);
  }
};

// The kernel of a multi-input op's algorithm: Algorithm<Attrs>::Prepare
// returns one of these (as a Kernel) for a MultiLayer to run. The one-input
// Run of Kernel is not used.
class MultiInputKernel : public Kernel {
 public:
  // Scratch memory RunInputs needs for these inputs (only their shapes and
  // dtypes are read).
  virtual size_t InputsWorkspaceBytes(const std::vector<Tensor>& inputs) const {
    (void)inputs;
    return 0;
  }
  // `inputs` and `output` are contiguous, on this kernel's device, of the
  // dtype and shapes the layer validated; `workspace` has
  // InputsWorkspaceBytes.
  virtual void RunInputs(const std::vector<Tensor>& inputs,
                         const Tensor& output, void* workspace) = 0;

  void Run(const Tensor&, const Tensor&, void*) final {
    Fail(ErrorKind::kInternal,
         "a multi-input kernel was run through the one-input interface");
  }
};

namespace internal {
// Image ops carry a layout attribute; the others read any rank.
template <class Attrs, class = void>
struct HasLayout : std::false_type {};
template <class Attrs>
struct HasLayout<Attrs, std::void_t<decltype(std::declval<Attrs>().layout)>>
    : std::true_type {};
// Ops whose output has elements even for an empty input (mean over an empty
// axis is NaN) declare `static constexpr bool kRunsOnEmptyInput = true;`;
// the others are skipped when the input is empty.
template <class Attrs, class = void>
struct RunsOnEmptyInput : std::false_type {};
template <class Attrs>
struct RunsOnEmptyInput<Attrs, std::void_t<decltype(Attrs::kRunsOnEmptyInput)>>
    : std::bool_constant<Attrs::kRunsOnEmptyInput> {};
// Most ops take float32 or float64 only, every input of one dtype, and give
// that dtype; the layer checks it. Ops that take other dtypes (gather's
// int64 indices, cast, where's bool condition, comparisons) declare
// `static constexpr bool kAnyDType = true;`, check their inputs' dtypes in
// OutputShape themselves and give their output's in
// `DType OutputDType(const Tensor&)` (Layer) or
// `DType OutputDType(const std::vector<Tensor>&)` (MultiLayer).
template <class Attrs, class = void>
struct AnyDType : std::false_type {};
template <class Attrs>
struct AnyDType<Attrs, std::void_t<decltype(Attrs::kAnyDType)>>
    : std::bool_constant<Attrs::kAnyDType> {};
// Ops whose result can be a view of their input (a reshape, a contiguous
// slice) declare `std::optional<int64_t> ViewOffset(const Shape&) const`
// (AnyLayer::ViewOffset).
template <class Attrs, class = void>
struct HasViewOffset : std::false_type {};
template <class Attrs>
struct HasViewOffset<
    Attrs,
    std::void_t<decltype(std::declval<const Attrs&>().ViewOffset(Shape{}))>>
    : std::true_type {};
}  // namespace internal

// What Layer and MultiLayer share: the name, attributes, a copy of the
// weights, the resolved algorithm and its kernel, and the checks and error
// context of every call.
template <class Attrs>
class LayerBase : public AnyLayer {
 public:
  // Copies `params` (the layer owns its weights; the framework's tensors may
  // change or go away) and prepares the algorithm called `algorithm`.
  LayerBase(std::string name, Attrs attrs, const std::vector<Tensor>& params,
            const std::string& algorithm, Device device)
      : name_(std::move(name)), attrs_(std::move(attrs)), device_(device) {
    try {
      attrs_.Validate(params);
      for (const Tensor& p : params) {
        if (!p.IsContiguous()) {
          Fail(ErrorKind::kInvalidArgument, "weights must be contiguous");
        }
        if (p.numel() > 0 && p.data == nullptr) {
          Fail(ErrorKind::kInvalidArgument, "a weight has no data");
        }
        // Kernels read float weights as float or double: an int64 or bool
        // one would be misread (or read past its end).
        if (!internal::AnyDType<Attrs>::value && !IsFloat(p.dtype)) {
          Fail(ErrorKind::kDType, "weight has dtype ", Name(p.dtype), "; ",
               Attrs::kOp, " takes float32 or float64 weights");
        }
        Buffer& storage = param_storage_.emplace_back(
            CheckedBytes(p.numel(), SizeOf(p.dtype), "a weight"));
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

  LayerBase(const LayerBase&) = delete;
  LayerBase& operator=(const LayerBase&) = delete;

  const std::string& name() const override { return name_; }
  const char* op() const override { return Attrs::kOp; }
  const std::string& algorithm() const override { return algorithm_; }
  Device device() const override { return device_; }
  Layout layout() const override {
    if constexpr (internal::HasLayout<Attrs>::value) {
      return attrs_.layout;
    } else {
      return Layout::kNCHW;
    }
  }
  const Attrs& attrs() const { return attrs_; }
  const std::vector<Tensor>& weights() const override { return params_; }

 protected:
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
    if (!internal::AnyDType<Attrs>::value && !IsFloat(t.dtype)) {
      Fail(ErrorKind::kDType, what, " is ", Name(t.dtype), "; ", Attrs::kOp,
           " takes float32 or float64");
    }
    if (need_data && t.numel() > 0 && t.data == nullptr) {
      Fail(ErrorKind::kInvalidArgument, what, " has no data");
    }
  }

  // Checks the output buffer against the expected shape and dtype.
  void CheckOutput(const Tensor& output, const Shape& expected,
                   DType dtype) const {
    CheckTensor(output, "output", /*need_data=*/true);
    if (output.shape != expected || output.dtype != dtype) {
      Fail(ErrorKind::kShape, "output buffer is ", Name(output.dtype), " ",
           ToString(output.shape), ", expected ", Name(dtype), " ",
           ToString(expected));
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

template <class Attrs>
class Layer : public LayerBase<Attrs> {
 public:
  Layer(std::string name, Attrs attrs, const std::vector<Tensor>& params,
        const std::string& algorithm, Device device = Device::kCPU)
      : LayerBase<Attrs>(std::move(name), std::move(attrs), params, algorithm,
                         device) {}

  using AnyLayer::Forward;
  using AnyLayer::OutputDType;
  using AnyLayer::OutputShape;

  DType OutputDType(const Tensor& input) const override {
    if constexpr (internal::AnyDType<Attrs>::value) {
      try {
        return this->attrs_.OutputDType(input);
      } catch (const Error& e) {
        throw e.WithContext(this->Context());
      }
    } else {
      return input.dtype;
    }
  }

  std::optional<int64_t> ViewOffset(const Shape& input) const override {
    if constexpr (internal::HasViewOffset<Attrs>::value) {
      if (this->algorithm_ == "direct" && this->device_ == Device::kCPU) {
        return this->attrs_.ViewOffset(input);
      }
    }
    (void)input;
    return std::nullopt;
  }

  size_t InputWorkspaceBytes(const Tensor& input) const override {
    OutputShape(input);  // validates the input, naming the layer
    try {
      return this->kernel_->WorkspaceBytes(input.shape);
    } catch (const Error& e) {
      throw e.WithContext(this->Context());
    }
  }

  Shape OutputShape(const Tensor& input) const override {
    try {
      // A shape query: the data pointer is not needed (see Forward).
      this->CheckTensor(input, "input", /*need_data=*/false);
      return this->attrs_.OutputShape(input);
    } catch (const Error& e) {
      throw e.WithContext(this->Context());
    }
  }

  // Runs the layer; `output` must have OutputShape(input) and input's dtype.
  void Forward(const Tensor& input, const Tensor& output) override {
    // The workspace and the kernel's own state (e.g. oneDNN primitives it
    // caches) are per layer, and callers release the GIL: one call at a
    // time. Kernels are parallel inside, so little is lost.
    std::lock_guard<std::mutex> lock(this->run_mutex_);
    // The output shape and workspace size follow from the input's shape and
    // dtype alone; working them out allocates (a Shape is a vector), so they
    // are kept for the last input seen and a Model's repeated forward passes
    // allocate nothing (core/model_alloc_test.cc).
    if (!planned_ || input.shape != planned_input_ ||
        input.dtype != planned_dtype_) {
      planned_ = false;
      planned_output_ = OutputShape(input);  // names the layer if it throws
      planned_output_dtype_ = OutputDType(input);
      try {
        planned_workspace_ = this->kernel_->WorkspaceBytes(input.shape);
      } catch (const Error& e) {
        throw e.WithContext(this->Context());
      }
      planned_input_ = input.shape;
      planned_dtype_ = input.dtype;
      planned_ = true;
    }
    try {
      this->CheckTensor(input, "input", /*need_data=*/true);
      this->CheckOutput(output, planned_output_, planned_output_dtype_);
      if (output.numel() == 0) return;
      if (input.numel() == 0 && !internal::RunsOnEmptyInput<Attrs>::value) {
        return;
      }
      this->workspace_.Reserve(planned_workspace_);
      this->kernel_->Run(input, output, this->workspace_.data());
    } catch (const Error& e) {
      throw e.WithContext(this->Context());
    }
  }

 private:
  // The last input shape Forward planned for (guarded by run_mutex_).
  bool planned_ = false;
  Shape planned_input_, planned_output_;
  DType planned_dtype_ = DType::kFloat32;
  DType planned_output_dtype_ = DType::kFloat32;
  size_t planned_workspace_ = 0;
};

// A layer reading attrs.MinInputs() to attrs.MaxInputs() tensors. Every
// input is checked like a Layer's (device, contiguous, float dtype) and must
// share input 0's dtype (unless the op checks its own, AnyDType); the op's
// OutputShape checks the shapes. A layer that may take a single input (add with
// a constant operand) can also be called through the one-input interface.
template <class Attrs>
class MultiLayer : public LayerBase<Attrs> {
 public:
  MultiLayer(std::string name, Attrs attrs, const std::vector<Tensor>& params,
             const std::string& algorithm, Device device = Device::kCPU)
      : LayerBase<Attrs>(std::move(name), std::move(attrs), params, algorithm,
                         device) {
    multi_kernel_ =
        dynamic_cast<MultiInputKernel*>(LayerBase<Attrs>::kernel_.get());
    if (!multi_kernel_) {
      Fail(ErrorKind::kInternal, this->Context(),
           ": the algorithm's kernel is not a MultiInputKernel");
    }
  }

  int min_inputs() const override { return this->attrs_.MinInputs(); }
  int max_inputs() const override { return this->attrs_.MaxInputs(); }

  DType OutputDType(const std::vector<Tensor>& inputs) const override {
    if constexpr (internal::AnyDType<Attrs>::value) {
      try {
        CheckInputs(inputs, /*need_data=*/false);
        return this->attrs_.OutputDType(inputs);
      } catch (const Error& e) {
        throw e.WithContext(this->Context());
      }
    } else {
      return inputs.at(0).dtype;
    }
  }
  DType OutputDType(const Tensor& input) const override {
    return OutputDType(std::vector<Tensor>{input});
  }

  Shape OutputShape(const std::vector<Tensor>& inputs) const override {
    try {
      CheckInputs(inputs, /*need_data=*/false);
      return this->attrs_.OutputShape(inputs);
    } catch (const Error& e) {
      throw e.WithContext(this->Context());
    }
  }

  void Forward(const std::vector<Tensor>& inputs,
               const Tensor& output) override {
    std::lock_guard<std::mutex> lock(this->run_mutex_);  // see Layer
    ForwardLocked(inputs, output);
  }

  // The one-input interface, for layers that may take one input.
  Shape OutputShape(const Tensor& input) const override {
    return OutputShape(std::vector<Tensor>{input});
  }
  void Forward(const Tensor& input, const Tensor& output) override {
    std::lock_guard<std::mutex> lock(this->run_mutex_);
    one_input_.resize(1);
    one_input_[0] = input;  // reuses the vectors' storage: no allocation
    ForwardLocked(one_input_, output);
  }

 private:
  // Forward under run_mutex_. As Layer::Forward, the output shape and
  // workspace size are kept for the last input shapes and dtype, so a
  // Model's repeated passes allocate nothing here.
  void ForwardLocked(const std::vector<Tensor>& inputs, const Tensor& output) {
    bool same = planned_ && inputs.size() == planned_inputs_.size();
    for (size_t k = 0; same && k < inputs.size(); ++k) {
      same = inputs[k].shape == planned_inputs_[k] &&
             inputs[k].dtype == planned_dtypes_[k];
    }
    if (!same) {
      planned_ = false;
      planned_output_ = OutputShape(inputs);  // names the layer if it throws
      planned_output_dtype_ = OutputDType(inputs);
      try {
        planned_workspace_ = multi_kernel_->InputsWorkspaceBytes(inputs);
      } catch (const Error& e) {
        throw e.WithContext(this->Context());
      }
      planned_inputs_.resize(inputs.size());
      planned_dtypes_.resize(inputs.size());
      for (size_t k = 0; k < inputs.size(); ++k) {
        planned_inputs_[k] = inputs[k].shape;
        planned_dtypes_[k] = inputs[k].dtype;
      }
      planned_ = true;
    }
    try {
      CheckInputs(inputs, /*need_data=*/true);
      this->CheckOutput(output, planned_output_, planned_output_dtype_);
      if (output.numel() == 0) return;
      this->workspace_.Reserve(planned_workspace_);
      multi_kernel_->RunInputs(inputs, output, this->workspace_.data());
    } catch (const Error& e) {
      throw e.WithContext(this->Context());
    }
  }

  void CheckInputs(const std::vector<Tensor>& inputs, bool need_data) const {
    this->CheckInputCount(inputs.size());
    static const char* const kNames[] = {"input 0", "input 1", "input 2",
                                         "input 3", "input 4", "input 5"};
    for (size_t k = 0; k < inputs.size(); ++k) {
      const char* what = k < 6 ? kNames[k] : "an input";
      this->CheckTensor(inputs[k], what, need_data);
      if (!internal::AnyDType<Attrs>::value &&
          inputs[k].dtype != inputs[0].dtype) {
        Fail(ErrorKind::kDType, what, " is ", Name(inputs[k].dtype),
             " but input 0 is ", Name(inputs[0].dtype),
             "; every input must have one dtype");
      }
    }
  }

  // Guarded by run_mutex_: what ForwardLocked planned for the last inputs.
  bool planned_ = false;
  std::vector<Shape> planned_inputs_;
  std::vector<DType> planned_dtypes_;
  Shape planned_output_;
  DType planned_output_dtype_ = DType::kFloat32;
  size_t planned_workspace_ = 0;
  std::vector<Tensor> one_input_;   // the one-input Forward's input, reused
  MultiInputKernel* multi_kernel_;  // kernel_, as what it is
};

}  // namespace ai3

#endif  // AI3_CORE_LAYER_H_
