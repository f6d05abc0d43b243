// The cuDNN convolution behind the CUDA conv2d algorithms named after
// cuDNN's own: "gemm", "implicit gemm", "implicit precomp gemm",
// "winograd", "fft" (each one cuDNN forward algorithm, or two variants of
// it) and "guess" (cuDNN's heuristic pick,
// cudnnGetConvolutionForwardAlgorithm_v7).
//
// Everything cuDNN needs is cached per layer, which the seed paper names as
// the cause of its end-to-end losses to PyTorch: the handle, the filter,
// convolution and bias descriptors and the weights on the GPU are made once
// when the layer is prepared; the input/output descriptors, the chosen
// algorithm and the workspace once per input shape (a new shape re-plans,
// the workspace only grows). A forward pass is then cudnnSetStream,
// cudnnConvolutionForward and, with a bias, cudnnAddTensor.
//
// float32 runs in plain FP32 (CUDNN_FMA_MATH: no TF32 tensor cores), so
// results agree with the CPU algorithms to float32 rounding.
#ifndef AI3_CORE_OPS_CONV2D_CUDA_CUDNN_CONV_H_
#define AI3_CORE_OPS_CONV2D_CUDA_CUDNN_CONV_H_

#include <cudnn.h>

#include <memory>
#include <string>
#include <vector>

#include "core/ops/conv2d/conv2d.h"
#include "core/registry.h"

namespace ai3 {
namespace cuda {

// What no cuDNN algorithm here takes: NHWC tensors (the layers keep OIHW
// weights, and cuDNN pairs NHWC data with NHWC filters) and padding that
// differs between top and bottom or left and right (cuDNN pads
// symmetrically). Empty if `attrs` is fine.
std::string CudnnWhyNot(const Conv2dAttrs& attrs);
// What the transform algorithms ("winograd", "fft") also need, after their
// own checks: stride 1, dilation 1, float32, groups=1. `who` names the
// algorithm in the reason ("cuDNN fft").
std::string CudnnTransformWhyNot(const Conv2dAttrs& attrs,
                                 const std::string& who);

// A conv2d algorithm running cuDNN. `algos` are tried in order for each
// input shape and the first one cuDNN supports runs; empty means "guess"
// (cuDNN's heuristics).
class CudnnConv2d : public Algorithm<Conv2dAttrs> {
 public:
  CudnnConv2d(std::string name, std::vector<cudnnConvolutionFwdAlgo_t> algos)
      : name_(std::move(name)), algos_(std::move(algos)) {}
  std::string WhyNot(const Conv2dAttrs& attrs) const override {
    return CudnnWhyNot(attrs);
  }
  std::unique_ptr<Kernel> Prepare(
      const Conv2dAttrs& attrs,
      const std::vector<Tensor>& params) const override;

 private:
  std::string name_;
  std::vector<cudnnConvolutionFwdAlgo_t> algos_;
};

}  // namespace cuda
}  // namespace ai3

// Registers the CUDA conv2d algorithm `name` as a plain CudnnConv2d trying
// the cuDNN algorithms given, in order (none: cuDNN's guess):
//   AI3_REGISTER_CUDNN_CONV2D("gemm", CUDNN_CONVOLUTION_FWD_ALGO_GEMM);
#define AI3_REGISTER_CUDNN_CONV2D(name, ...)                                \
  static const bool AI3_CONCAT(ai3_registered_cudnn_conv2d_, __LINE__) =    \
      (::ai3::Registry<::ai3::Conv2dAttrs>::Get().Add(                      \
           name, ::ai3::Device::kCUDA,                                      \
           std::make_unique<::ai3::cuda::CudnnConv2d>(                      \
               name, std::vector<cudnnConvolutionFwdAlgo_t>{__VA_ARGS__})), \
       true)

#endif  // AI3_CORE_OPS_CONV2D_CUDA_CUDNN_CONV_H_
