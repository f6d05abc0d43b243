// lrn "direct": NCHW, one task per (image, channel) plane, summing the
// window's squared planes into the output row, vectorised along the
// spatial positions, then y = x * (bias + alpha/size * sum)^-beta; NHWC,
// one task per pixel, the window along its C contiguous channels. Split
// over OpenMP threads when large enough.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "core/math/dispatch.h"
#include "core/ops/lrn/lrn.h"
#include "core/parallel.h"
#include "core/registry.h"

namespace ai3 {
namespace {

constexpr int64_t kParallelThreshold = 1 << 14;

template <typename T>
void Lrn(const LrnAttrs& a, int64_t n, int64_t c, int64_t s, const T* x, T* y) {
  const T scale = T(a.alpha / double(a.size)), bias = T(a.bias);
  const T beta = T(a.beta);
  auto window = [&](int64_t ch, int64_t* lo, int64_t* hi) {
    *lo = std::max<int64_t>(0, ch - a.before);
    *hi = std::min<int64_t>(c, ch - a.before + a.size);
  };
  const bool big = n * c * s * a.size >= kParallelThreshold;
  if (a.layout == Layout::kNHWC) {
    ParallelFor(0, n * s, big, [&](int64_t p) {
      const T* __restrict xp = x + p * c;
      T* __restrict yp = y + p * c;
      for (int64_t ch = 0; ch < c; ++ch) {
        int64_t lo, hi;
        window(ch, &lo, &hi);
        T sum = 0;
        for (int64_t k = lo; k < hi; ++k) sum += xp[k] * xp[k];
        yp[ch] = xp[ch] * std::pow(bias + scale * sum, -beta);
      }
    });
    return;
  }
  ParallelFor(0, n * c, big, [&](int64_t plane) {
    const int64_t ch = plane % c;
    const T* xn = x + (plane - ch) * s;  // the image's first plane
    T* __restrict yp = y + plane * s;
    int64_t lo, hi;
    window(ch, &lo, &hi);
    std::fill(yp, yp + s, T(0));
    for (int64_t k = lo; k < hi; ++k) {
      const T* __restrict xk = xn + k * s;
#pragma omp simd
      for (int64_t i = 0; i < s; ++i) yp[i] += xk[i] * xk[i];
    }
    const T* __restrict xp = xn + ch * s;
    for (int64_t i = 0; i < s; ++i) {
      yp[i] = xp[i] * std::pow(bias + scale * yp[i], -beta);
    }
  });
}

class DirectKernel : public Kernel {
 public:
  explicit DirectKernel(const LrnAttrs& attrs) : attrs_(attrs) {}

  void Run(const Tensor& input, const Tensor& output, void*) override {
    const Shape& shape = input.shape;
    const bool nhwc = attrs_.layout == Layout::kNHWC;
    const int64_t c = nhwc ? shape.back() : shape[1];
    const int64_t n = shape[0];
    const int64_t s = input.numel() / (n * c);
    DispatchFloat(input.dtype, [&](auto zero) {
      using T = decltype(zero);
      Lrn<T>(attrs_, n, c, s, input.data_as<const T>(), output.data_as<T>());
    });
  }

 private:
  LrnAttrs attrs_;
};

AI3_REGISTER_ALGORITHM(LrnAttrs, "direct", Device::kCPU,
                       KernelAlgorithm<LrnAttrs, DirectKernel>);

}  // namespace
}  // namespace ai3
