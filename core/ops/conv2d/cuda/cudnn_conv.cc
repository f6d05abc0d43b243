#include "core/ops/conv2d/cuda/cudnn_conv.h"

#include <string>
#include <utility>
#include <vector>

#include "core/cuda/activation.h"
#include "core/cuda/kernel.h"
#include "core/cuda/libraries.h"
#include "core/errors.h"

namespace ai3 {
namespace cuda {
namespace {

cudnnDataType_t DataType(DType dtype) {
  return dtype == DType::kFloat64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
}

class CudnnKernel : public CudaKernel {
 public:
  CudnnKernel(const Conv2dAttrs& attrs, const std::vector<Tensor>& params,
              std::string name, std::vector<cudnnConvolutionFwdAlgo_t> algos)
      : attrs_(attrs),
        weights_(params, attrs.has_bias),
        name_(std::move(name)),
        algos_(std::move(algos)) {
    const cudnnDataType_t type = DataType(attrs.dtype);
    CheckCudnn(cudnnCreate(&handle_), "creating a handle");
    CheckCudnn(cudnnCreateFilterDescriptor(&filter_), "creating a descriptor");
    CheckCudnn(cudnnCreateConvolutionDescriptor(&conv_),
               "creating a descriptor");
    CheckCudnn(cudnnCreateTensorDescriptor(&x_), "creating a descriptor");
    CheckCudnn(cudnnCreateTensorDescriptor(&y_), "creating a descriptor");
    CheckCudnn(cudnnCreateTensorDescriptor(&bias_), "creating a descriptor");
    CheckCudnn(cudnnSetFilter4dDescriptor(
                   filter_, type, CUDNN_TENSOR_NCHW, int(attrs.out_channels),
                   int(attrs.in_channels_per_group()), int(attrs.kernel_h),
                   int(attrs.kernel_w)),
               "describing the weights");
    CheckCudnn(
        cudnnSetConvolution2dDescriptor(
            conv_, int(attrs.pad_top), int(attrs.pad_left), int(attrs.stride_h),
            int(attrs.stride_w), int(attrs.dilation_h), int(attrs.dilation_w),
            CUDNN_CROSS_CORRELATION, type),
        "describing the convolution");
    CheckCudnn(cudnnSetConvolutionGroupCount(conv_, int(attrs.groups)),
               "setting the groups");
    CheckCudnn(cudnnSetConvolutionMathType(conv_, CUDNN_FMA_MATH),
               "setting the math type");
    CheckCudnn(cudnnSetTensor4dDescriptor(bias_, CUDNN_TENSOR_NCHW, type, 1,
                                          int(attrs.out_channels), 1, 1),
               "describing the bias");
  }

  ~CudnnKernel() override {
    // Teardown errors are not actionable (and a destructor must not throw).
    cudnnDestroyTensorDescriptor(bias_);
    cudnnDestroyTensorDescriptor(y_);
    cudnnDestroyTensorDescriptor(x_);
    cudnnDestroyConvolutionDescriptor(conv_);
    cudnnDestroyFilterDescriptor(filter_);
    cudnnDestroy(handle_);
  }

 protected:
  void RunOnDevice(const Tensor& input, const Tensor& output,
                   cudaStream_t stream) override {
    if (input.shape != planned_shape_) Plan(input.shape);
    CheckCudnn(cudnnSetStream(handle_, stream), "setting the stream");
    if (attrs_.dtype == DType::kFloat64) {
      Forward<double>(input, output);
    } else {
      Forward<float>(input, output);
    }
    ApplyActivation(attrs_.activation, attrs_.dtype, output.data,
                    output.numel(), stream);
  }

 private:
  template <typename T>
  void Forward(const Tensor& input, const Tensor& output) {
    const T one = 1, zero = 0;
    CheckCudnn(cudnnConvolutionForward(handle_, &one, x_, input.data, filter_,
                                       weights_.w<T>(), conv_, algo_,
                                       workspace_.data(), workspace_bytes_,
                                       &zero, y_, output.data),
               "running the convolution");
    if (attrs_.has_bias) {
      CheckCudnn(cudnnAddTensor(handle_, &one, bias_, weights_.b<T>(), &one, y_,
                                output.data),
                 "adding the bias");
    }
  }

  // Describes this input shape's tensors and picks the algorithm and its
  // workspace. Throws kAlgorithmNotApplicable when cuDNN supports none of
  // this algorithm's variants for the shape.
  void Plan(const Shape& shape) {
    planned_shape_.clear();
    const cudnnDataType_t type = DataType(attrs_.dtype);
    const Conv2dGeometry g = GeometryOf(attrs_, shape);
    CheckCudnn(cudnnSetTensor4dDescriptor(x_, CUDNN_TENSOR_NCHW, type, int(g.n),
                                          int(g.c), int(g.h), int(g.w)),
               "describing the input");
    CheckCudnn(cudnnSetTensor4dDescriptor(y_, CUDNN_TENSOR_NCHW, type, int(g.n),
                                          int(g.k), int(g.oh), int(g.ow)),
               "describing the output");
    std::vector<cudnnConvolutionFwdAlgo_t> candidates = algos_;
    if (candidates.empty()) candidates = Heuristic();
    std::string refused;
    for (cudnnConvolutionFwdAlgo_t algo : candidates) {
      size_t bytes = 0;
      cudnnStatus_t status = cudnnGetConvolutionForwardWorkspaceSize(
          handle_, x_, filter_, conv_, y_, algo, &bytes);
      if (status == CUDNN_STATUS_SUCCESS) {
        algo_ = algo;
        workspace_bytes_ = bytes;
        workspace_.Reserve(bytes);
        planned_shape_ = shape;
        return;
      }
      refused += std::string(refused.empty() ? "" : "; ") + "algorithm " +
                 std::to_string(int(algo)) + ": " + cudnnGetErrorString(status);
    }
    Fail(ErrorKind::kAlgorithmNotApplicable, "cuDNN has no '", name_,
         "' convolution for input ", ToString(shape), " (", refused, ")");
  }

  // cuDNN's heuristic ranking for this shape, best first.
  std::vector<cudnnConvolutionFwdAlgo_t> Heuristic() {
    int max_count = 0;
    CheckCudnn(cudnnGetConvolutionForwardAlgorithmMaxCount(handle_, &max_count),
               "counting the algorithms");
    std::vector<cudnnConvolutionFwdAlgoPerf_t> perf(max_count);
    int returned = 0;
    CheckCudnn(
        cudnnGetConvolutionForwardAlgorithm_v7(
            handle_, x_, filter_, conv_, y_, max_count, &returned, perf.data()),
        "asking for its heuristic choice");
    std::vector<cudnnConvolutionFwdAlgo_t> ranked;
    for (int i = 0; i < returned; ++i) {
      // Only FP32 math (see cudnn_conv.h): TF32 entries would round inputs.
      if (perf[i].status == CUDNN_STATUS_SUCCESS &&
          perf[i].mathType != CUDNN_TENSOR_OP_MATH) {
        ranked.push_back(perf[i].algo);
      }
    }
    return ranked;
  }

  Conv2dAttrs attrs_;
  DeviceWeights weights_;
  std::string name_;
  std::vector<cudnnConvolutionFwdAlgo_t> algos_;
  cudnnHandle_t handle_ = nullptr;
  cudnnFilterDescriptor_t filter_ = nullptr;
  cudnnConvolutionDescriptor_t conv_ = nullptr;
  cudnnTensorDescriptor_t x_ = nullptr, y_ = nullptr, bias_ = nullptr;
  // Per input shape:
  Shape planned_shape_;
  cudnnConvolutionFwdAlgo_t algo_ = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  size_t workspace_bytes_ = 0;
  DeviceBuffer workspace_;
};

}  // namespace

std::string CudnnWhyNot(const Conv2dAttrs& a) {
  std::string why = a.activation.WhyNotClampOnly();
  if (!why.empty()) return why;
  if (a.layout != Layout::kNCHW) {
    return "the cuDNN algorithms take NCHW tensors only";
  }
  if (a.pad_top != a.pad_bottom || a.pad_left != a.pad_right) {
    return "cuDNN pads symmetrically; this layer pads top/bottom " +
           std::to_string(a.pad_top) + "/" + std::to_string(a.pad_bottom) +
           " and left/right " + std::to_string(a.pad_left) + "/" +
           std::to_string(a.pad_right);
  }
  return {};
}

std::string CudnnTransformWhyNot(const Conv2dAttrs& a, const std::string& who) {
  std::string why = WhyNotUnitStrideDilation(a, who);
  if (!why.empty()) return why;
  if (a.dtype != DType::kFloat32) return who + " is float32 only";
  if (a.groups != 1) {
    return who + " is used here for groups=1 only, got groups=" +
           std::to_string(a.groups);
  }
  return {};
}

std::unique_ptr<Kernel> CudnnConv2d::Prepare(
    const Conv2dAttrs& attrs, const std::vector<Tensor>& params) const {
  return std::make_unique<CudnnKernel>(attrs, params, name_, algos_);
}

}  // namespace cuda
}  // namespace ai3
