// batchnorm2d "direct": at inference batch normalisation is a per-channel
// affine map, so Prepare folds the four parameter vectors into
//   scale = weight / sqrt(running_var + eps),  shift = bias - mean * scale
// once (in double, then rounded to the layer's dtype) and Run is one fused
// multiply-add per element. NCHW threads over (n, c) planes with the plane
// as the vectorised loop; NHWC threads over pixels with the channels as the
// vectorised loop.
#include <cstdint>
#include <memory>
#include <vector>

#include "core/buffer.h"
#include "core/math/dispatch.h"
#include "core/ops/batchnorm2d/batchnorm2d.h"
#include "core/parallel.h"
#include "core/registry.h"

namespace ai3 {
namespace {

// Below this many elements threads cost more than they save.
constexpr int64_t kParallelThreshold = 1 << 15;

template <typename T>
void ScaleShiftNchw(const ImageDims& d, const T* scale, const T* shift,
                    const T* x, T* y) {
  const int64_t planes = d.n * d.c;
  const int64_t hw = d.h * d.w;
  ParallelFor(0, planes, planes * hw >= kParallelThreshold, [&](int64_t p) {
    const T s = scale[p % d.c];
    const T b = shift[p % d.c];
    const T* __restrict xp = x + p * hw;
    T* __restrict yp = y + p * hw;
#pragma omp simd
    for (int64_t i = 0; i < hw; ++i) yp[i] = xp[i] * s + b;
  });
}

template <typename T>
void ScaleShiftNhwc(const ImageDims& d, const T* scale, const T* shift,
                    const T* x, T* y) {
  const int64_t pixels = d.n * d.h * d.w;
  const int64_t c = d.c;
  ParallelFor(0, pixels, pixels * c >= kParallelThreshold, [&](int64_t p) {
    const T* __restrict xp = x + p * c;
    T* __restrict yp = y + p * c;
    const T* __restrict s = scale;
    const T* __restrict b = shift;
#pragma omp simd
    for (int64_t k = 0; k < c; ++k) yp[k] = xp[k] * s[k] + b[k];
  });
}

class DirectKernel : public Kernel {
 public:
  DirectKernel(const BatchNorm2dAttrs& attrs,
               const std::vector<Tensor>& params)
      : attrs_(attrs), folded_(attrs.FoldScaleShift(params)) {}

  void Run(const Tensor& input, const Tensor& output, void*) override {
    const ImageDims d = ImageDimsOf(input.shape, attrs_.layout);
    DispatchFloat(input.dtype, [&](auto zero) {
      using T = decltype(zero);
      const T* scale = folded_.as<const T>();
      const T* shift = scale + attrs_.channels;
      if (attrs_.layout == Layout::kNHWC) {
        ScaleShiftNhwc<T>(d, scale, shift, input.data_as<const T>(),
                          output.data_as<T>());
      } else {
        ScaleShiftNchw<T>(d, scale, shift, input.data_as<const T>(),
                          output.data_as<T>());
      }
    });
  }

 private:
  BatchNorm2dAttrs attrs_;
  Buffer folded_;  // scale[channels], then shift[channels], of attrs_.dtype
};

AI3_REGISTER_ALGORITHM(BatchNorm2dAttrs, "direct", Device::kCPU,
                       KernelAlgorithm<BatchNorm2dAttrs, DirectKernel>);

}  // namespace
}  // namespace ai3
