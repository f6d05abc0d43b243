// conv2d "direct" on CUDA: ai3's own kernel, the definition of convolution
// with one thread per output element (n, k, oh, ow), summing over its
// group's input channels and the kernel taps that land inside the input.
// Takes every parameter set and both layouts (through element strides);
// like the CPU "direct" it is the reference, not the fast path.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/cuda/kernel.h"
#include "core/math/dispatch.h"
#include "core/ops/conv2d/conv2d.h"

namespace ai3 {
namespace {

template <typename T>
__global__ void DirectConv(Conv2dGeometry g, ImageStrides xs, ImageStrides ys,
                           const T* __restrict__ x, const T* __restrict__ w,
                           const T* __restrict__ b, bool act, T lo, T hi,
                           T* __restrict__ y) {
  const int64_t total = g.n * g.k * g.oh * g.ow;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    // Consecutive threads take consecutive output columns (NCHW) so their
    // input reads are close together.
    const int64_t ow = i % g.ow;
    const int64_t oh = (i / g.ow) % g.oh;
    const int64_t k = (i / (g.ow * g.oh)) % g.k;
    const int64_t n = i / (g.ow * g.oh * g.k);
    const int64_t c0 = (k / g.kg) * g.cg;  // first input channel of k's group
    const T* wk = w + k * g.cg * g.kh * g.kw;
    T acc = b ? b[k] : T(0);
    for (int64_t c = 0; c < g.cg; ++c) {
      const T* xc = x + n * xs.n + (c0 + c) * xs.c;
      for (int64_t r = 0; r < g.kh; ++r) {
        const int64_t ih = oh * g.sh - g.ph + r * g.dh;
        if (ih < 0 || ih >= g.h) continue;
        for (int64_t s = 0; s < g.kw; ++s) {
          const int64_t iw = ow * g.sw - g.pw + s * g.dw;
          if (iw < 0 || iw >= g.w) continue;
          acc += wk[(c * g.kh + r) * g.kw + s] * xc[ih * xs.h + iw * xs.w];
        }
      }
    }
    if (act) acc = acc < lo ? lo : (acc > hi ? hi : acc);
    y[n * ys.n + k * ys.c + oh * ys.h + ow * ys.w] = acc;
  }
}

class DirectKernel : public cuda::CudaKernel {
 public:
  DirectKernel(const Conv2dAttrs& attrs, const std::vector<Tensor>& params)
      : attrs_(attrs), weights_(params, attrs.has_bias) {}

 protected:
  void RunOnDevice(const Tensor& input, const Tensor& output,
                   cudaStream_t stream) override {
    const Conv2dGeometry g = GeometryOf(attrs_, input.shape);
    const ImageStrides xs = ImageStridesOf({g.n, g.c, g.h, g.w}, g.layout);
    const ImageStrides ys = ImageStridesOf({g.n, g.k, g.oh, g.ow}, g.layout);
    DispatchFloat(attrs_.dtype, [&](auto zero) {
      using T = decltype(zero);
      const auto act = attrs_.activation.As<T>();
      DirectConv<T>
          <<<cuda::BlocksFor(output.numel()), cuda::kThreads, 0, stream>>>(
              g, xs, ys, input.data_as<const T>(), weights_.w<T>(),
              weights_.b<T>(), act.enabled, act.lo, act.hi,
              output.data_as<T>());
    });
    cuda::CheckLaunch("conv2d direct");
  }

 private:
  Conv2dAttrs attrs_;
  cuda::DeviceWeights weights_;
};

class Direct : public KernelAlgorithm<Conv2dAttrs, DirectKernel> {
 public:
  std::string WhyNot(const Conv2dAttrs& a) const override {
    return a.activation.WhyNotClampOnly();  // the kernel clamps only
  }
};

AI3_REGISTER_ALGORITHM(Conv2dAttrs, "direct", Device::kCUDA, Direct);

}  // namespace
}  // namespace ai3
