// groupnorm "direct": the statistics of each (image, group) in double
// (a group spans up to C*H*W elements, too many to sum in float32), the
// mean first and the variance around it (two passes: no cancellation),
// then one pass y = x * scale[c] + shift[c], with scale = rstd * weight[c]
// and shift = bias[c] - mean * scale per channel.
// NCHW: a group is one contiguous block of (C / groups) * S elements; one
// task per (image, group). NHWC: a group is a strided set of channels of
// every pixel; one task per image, which sums each channel over the pixels
// (vectorised along the channels) into its workspace.
#include <cmath>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/math/dispatch.h"
#include "core/ops/groupnorm/groupnorm.h"
#include "core/parallel.h"
#include "core/registry.h"

namespace ai3 {
namespace {

constexpr int64_t kParallelThreshold = 1 << 14;

template <typename T>
struct Affine {
  const T* weight;  // or null
  const T* bias;    // or null
  // scale[c], shift[c] of a channel with the group's mean and rstd.
  void Of(int64_t c, double mean, double rstd, T* scale, T* shift) const {
    const double s = rstd * (weight ? double(weight[c]) : 1.0);
    *scale = T(s);
    *shift = T((bias ? double(bias[c]) : 0.0) - mean * s);
  }
};

template <typename T>
void Nchw(const GroupNormDims& d, int64_t groups, double eps,
          const Affine<T>& affine, const T* x, T* y) {
  const int64_t cg = d.c / groups, block = cg * d.s;
  ParallelFor(0, d.n * groups, d.n * d.c * d.s >= kParallelThreshold,
              [&](int64_t ng) {
                const int64_t c0 = (ng % groups) * cg;
                const T* __restrict xb = x + ng * block;
                T* __restrict yb = y + ng * block;
                double sum = 0;
#pragma omp simd reduction(+ : sum)
                for (int64_t i = 0; i < block; ++i) sum += xb[i];
                const double mean = sum / double(block);
                double sq = 0;
#pragma omp simd reduction(+ : sq)
                for (int64_t i = 0; i < block; ++i) {
                  sq += (xb[i] - mean) * (xb[i] - mean);
                }
                const double rstd = 1.0 / std::sqrt(sq / double(block) + eps);
                for (int64_t c = 0; c < cg; ++c) {
                  T scale, shift;
                  affine.Of(c0 + c, mean, rstd, &scale, &shift);
                  const T* __restrict xc = xb + c * d.s;
                  T* __restrict yc = yb + c * d.s;
#pragma omp simd
                  for (int64_t i = 0; i < d.s; ++i)
                    yc[i] = xc[i] * scale + shift;
                }
              });
}

// The workspace per image: 2*C doubles (channel sums, means), then 2*C
// Ts (scale, shift), room for doubles (an input of either dtype may run
// without weights, which would say which).
size_t NhwcScratch(int64_t c) {
  return static_cast<size_t>(c) * 4 * sizeof(double);
}

template <typename T>
void Nhwc(const GroupNormDims& d, int64_t groups, double eps,
          const Affine<T>& affine, const T* x, T* y, void* workspace) {
  const int64_t cg = d.c / groups;
  const size_t per_image = NhwcScratch(d.c);
  ParallelFor(0, d.n, d.n * d.c * d.s >= kParallelThreshold, [&](int64_t n) {
    char* scratch = static_cast<char*>(workspace) + n * per_image;
    double* sums = reinterpret_cast<double*>(scratch);
    double* mean = sums + d.c;  // per channel: its group's
    T* scale = reinterpret_cast<T*>(mean + d.c);
    T* shift = scale + d.c;
    const T* xn = x + n * d.s * d.c;
    T* yn = y + n * d.s * d.c;
    auto channel_sums = [&](auto term) {
      for (int64_t c = 0; c < d.c; ++c) sums[c] = 0;
      for (int64_t p = 0; p < d.s; ++p) {
        const T* __restrict xp = xn + p * d.c;
#pragma omp simd
        for (int64_t c = 0; c < d.c; ++c) sums[c] += term(xp[c], c);
      }
    };
    // The group's total of channel sums, over its cg * S elements.
    auto group_of = [&](int64_t g) {
      double total = 0;
      for (int64_t c = g * cg; c < (g + 1) * cg; ++c) total += sums[c];
      return total / double(cg * d.s);
    };
    channel_sums([](T v, int64_t) { return double(v); });
    for (int64_t g = 0; g < groups; ++g) {
      const double m = group_of(g);
      for (int64_t c = g * cg; c < (g + 1) * cg; ++c) mean[c] = m;
    }
    channel_sums([&](T v, int64_t c) { return (v - mean[c]) * (v - mean[c]); });
    for (int64_t g = 0; g < groups; ++g) {
      const double rstd = 1.0 / std::sqrt(group_of(g) + eps);
      for (int64_t c = g * cg; c < (g + 1) * cg; ++c) {
        affine.Of(c, mean[c], rstd, &scale[c], &shift[c]);
      }
    }
    for (int64_t p = 0; p < d.s; ++p) {
      const T* __restrict xp = xn + p * d.c;
      T* __restrict yp = yn + p * d.c;
#pragma omp simd
      for (int64_t c = 0; c < d.c; ++c) yp[c] = xp[c] * scale[c] + shift[c];
    }
  });
}

class DirectKernel : public Kernel {
 public:
  DirectKernel(const GroupNormAttrs& attrs, const std::vector<Tensor>& params)
      : attrs_(attrs) {
    size_t next = 0;
    if (attrs.has_weight) weight_ = params[next++].data;
    if (attrs.has_bias) bias_ = params[next++].data;
  }

  size_t WorkspaceBytes(const Shape& input_shape) const override {
    if (attrs_.layout != Layout::kNHWC) return 0;
    const GroupNormDims d = GroupNormDimsOf(input_shape, attrs_.layout);
    return static_cast<size_t>(d.n) * NhwcScratch(d.c);
  }

  void Run(const Tensor& input, const Tensor& output,
           void* workspace) override {
    const GroupNormDims d = GroupNormDimsOf(input.shape, attrs_.layout);
    // groups = 0: instance normalisation, a group per channel.
    const int64_t groups = attrs_.groups ? attrs_.groups : d.c;
    DispatchFloat(input.dtype, [&](auto zero) {
      using T = decltype(zero);
      const Affine<T> affine{static_cast<const T*>(weight_),
                             static_cast<const T*>(bias_)};
      const T* x = input.data_as<const T>();
      T* y = output.data_as<T>();
      if (attrs_.layout == Layout::kNHWC) {
        Nhwc<T>(d, groups, attrs_.eps, affine, x, y, workspace);
      } else {
        Nchw<T>(d, groups, attrs_.eps, affine, x, y);
      }
    });
  }

 private:
  GroupNormAttrs attrs_;
  const void* weight_ = nullptr;
  const void* bias_ = nullptr;
};

AI3_REGISTER_ALGORITHM(GroupNormAttrs, "direct", Device::kCPU,
                       KernelAlgorithm<GroupNormAttrs, DirectKernel>);

}  // namespace
}  // namespace ai3
