// Elementwise CUDA ops (relu, clamp, sigmoid, silu, tanh): one grid-stride
// kernel template applying a functor, so each op's file holds only its
// formula (AI3_CUDA_ELEMENTWISE_DIRECT where the op has no attributes).
// Included by .cu files only.
#ifndef AI3_CORE_CUDA_ELEMENTWISE_H_
#define AI3_CORE_CUDA_ELEMENTWISE_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "core/cuda/kernel.h"
#include "core/math/dispatch.h"
#include "core/registry.h"

namespace ai3 {
namespace cuda {

template <typename T, class Fn>
__global__ void ElementwiseKernel(const T* __restrict__ x, T* __restrict__ y,
                                  int64_t n, Fn fn) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    y[i] = fn(x[i]);
  }
}

// `Op` has `template <typename T> __device__ T operator()(T) const` and is
// built from the layer's attributes.
template <class Attrs, class Op>
class ElementwiseKernelFor : public CudaKernel {
 public:
  explicit ElementwiseKernelFor(const Attrs& attrs) : attrs_(attrs) {}

 protected:
  void RunOnDevice(const Tensor& input, const Tensor& output,
                   cudaStream_t stream) override {
    const int64_t n = input.numel();
    DispatchFloat(input.dtype, [&](auto zero) {
      using T = decltype(zero);
      ElementwiseKernel<T><<<BlocksFor(n), kThreads, 0, stream>>>(
          input.data_as<const T>(), output.data_as<T>(), n, Op(attrs_));
    });
    CheckLaunch(Attrs::kOp);
  }

 private:
  Attrs attrs_;
};

template <class Attrs, class Op>
class ElementwiseAlgorithm : public Algorithm<Attrs> {
 public:
  std::unique_ptr<Kernel> Prepare(const Attrs& attrs,
                                  const std::vector<Tensor>&) const override {
    return std::make_unique<ElementwiseKernelFor<Attrs, Op>>(attrs);
  }
};

}  // namespace cuda
}  // namespace ai3

// "direct" on CUDA of a parameter-free elementwise op, from its formula: y
// is `expr` of the element `v` (of type T), e.g.
//   AI3_CUDA_ELEMENTWISE_DIRECT(TanhAttrs, v, tanh(v));
// inside namespace ai3, in the op's .cu.
#define AI3_CUDA_ELEMENTWISE_DIRECT(AttrsType, v, expr) \
  namespace {                                           \
  struct AttrsType##CudaFn {                            \
    explicit AttrsType##CudaFn(const AttrsType&) {}     \
    template <typename T>                               \
    __device__ T operator()(T v) const {                \
      return expr;                                      \
    }                                                   \
  };                                                    \
  }                                                     \
  AI3_REGISTER_ALGORITHM(                               \
      AttrsType, "direct", Device::kCUDA,               \
      ::ai3::cuda::ElementwiseAlgorithm<AttrsType, AttrsType##CudaFn>)

#endif  // AI3_CORE_CUDA_ELEMENTWISE_H_
