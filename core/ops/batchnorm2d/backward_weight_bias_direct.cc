// batchnorm2d_backward_weight and batchnorm2d_backward_bias "direct", one
// kernel: per channel c, the sum over (n, h, w) of dy, or (the weight's) of
// dy (x - running_mean[c]) / sqrt(running_var[c] + eps), accumulated in
// double. NCHW threads over channels, each summing its planes with the
// plane as the vectorised loop; NHWC threads over blocks of channels, the
// block the vectorised loop, so each thread owns its sums.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/layer.h"
#include "core/math/dispatch.h"
#include "core/ops/backward.h"
#include "core/ops/batchnorm2d/batchnorm2d.h"
#include "core/parallel.h"
#include "core/registry.h"

namespace ai3 {
namespace {

// kCentered: the weight's sums of dy (x - mean) / std; else the bias's, of
// dy alone.
template <bool kCentered>
class ChannelSumKernel : public MultiInputKernel {
 public:
  ChannelSumKernel(const BatchNorm2dAttrs& attrs,
                   const std::vector<Tensor>& params)
      : attrs_(attrs), mean_(attrs.channels, 0.0), rstd_(attrs.channels, 1.0) {
    if (!kCentered) return;
    DispatchFloat(attrs.dtype, [&](auto zero) {
      using T = decltype(zero);
      const T* mean = params[BatchNorm2dAttrs::kRunningMean].data_as<const T>();
      const T* var = params[BatchNorm2dAttrs::kRunningVar].data_as<const T>();
      for (int64_t c = 0; c < attrs.channels; ++c) {
        mean_[c] = mean[c];
        rstd_[c] = 1.0 / std::sqrt(double(var[c]) + attrs.eps);
      }
    });
  }

  void RunInputs(const std::vector<Tensor>& inputs, const Tensor& output,
                 void*) override {
    const ImageDims d = ChannelDims(inputs[kForwardInput].shape, attrs_.layout);
    DispatchFloat(output.dtype, [&](auto zero) {
      using T = decltype(zero);
      const T* dy = inputs[kGradOutput].data_as<const T>();
      const T* x = inputs[kForwardInput].data_as<const T>();
      T* out = output.data_as<T>();
      const bool parallel = d.n * d.c * d.h * d.w >= (1 << 15);
      if (attrs_.layout == Layout::kNHWC) {
        SumsNhwc(d, dy, x, out, parallel);
      } else {
        SumsNchw(d, dy, x, out, parallel);
      }
    });
  }

 private:
  // What dy is multiplied by: x - mean, or 1 for the bias.
  template <typename T>
  static double Centred(T x, double mean) {
    if constexpr (kCentered) {
      return x - mean;
    } else {
      (void)x, (void)mean;
      return 1.0;
    }
  }

  template <typename T>
  void SumsNchw(const ImageDims& d, const T* dy, const T* x, T* out,
                bool parallel) const {
    const int64_t hw = d.h * d.w;
    ParallelFor(0, d.c, parallel, [&](int64_t c) {
      const double m = mean_[c];
      double acc = 0;
      for (int64_t n = 0; n < d.n; ++n) {
        const T* __restrict g = dy + (n * d.c + c) * hw;
        const T* __restrict v = x + (n * d.c + c) * hw;
#pragma omp simd reduction(+ : acc)
        for (int64_t i = 0; i < hw; ++i) acc += double(g[i]) * Centred(v[i], m);
      }
      out[c] = static_cast<T>(acc * rstd_[c]);
    });
  }

  template <typename T>
  void SumsNhwc(const ImageDims& d, const T* dy, const T* x, T* out,
                bool parallel) const {
    constexpr int64_t kBlock = 64;
    const int64_t blocks = (d.c + kBlock - 1) / kBlock;
    const int64_t pixels = d.n * d.h * d.w;
    ParallelFor(0, blocks, parallel && blocks > 1, [&](int64_t b) {
      const int64_t c0 = b * kBlock, width = std::min(kBlock, d.c - c0);
      double acc[kBlock] = {};
      const double* __restrict m = mean_.data() + c0;
      for (int64_t p = 0; p < pixels; ++p) {
        const T* __restrict g = dy + p * d.c + c0;
        const T* __restrict v = x + p * d.c + c0;
#pragma omp simd
        for (int64_t k = 0; k < width; ++k) {
          acc[k] += double(g[k]) * Centred(v[k], m[k]);
        }
      }
      for (int64_t k = 0; k < width; ++k) {
        out[c0 + k] = static_cast<T>(acc[k] * rstd_[c0 + k]);
      }
    });
  }

  BatchNorm2dAttrs attrs_;
  // The centre and 1/std per channel (0 and 1 for the bias's plain sums).
  std::vector<double> mean_, rstd_;
};

// "direct" of the weight (kCentered) or bias gradient `Attrs`.
template <class Attrs, bool kCentered>
class ChannelSumDirect : public Algorithm<Attrs> {
 public:
  std::unique_ptr<Kernel> Prepare(
      const Attrs& attrs, const std::vector<Tensor>& params) const override {
    return std::make_unique<ChannelSumKernel<kCentered>>(attrs, params);
  }
};

AI3_REGISTER_ALGORITHM(BatchNorm2dBackwardWeightAttrs, "direct", Device::kCPU,
                       ChannelSumDirect<BatchNorm2dBackwardWeightAttrs,
                                        /*kCentered=*/true>);
AI3_REGISTER_ALGORITHM(BatchNorm2dBackwardBiasAttrs, "direct", Device::kCPU,
                       ChannelSumDirect<BatchNorm2dBackwardBiasAttrs,
                                        /*kCentered=*/false>);

}  // namespace
}  // namespace ai3
