// groupnorm's gradients' "direct" (groupnorm.h), one generic walk for both
// layouts: element (n, c, s) of an (N, C, S) view at n*ns + c*cs + s*ss.
// Each (image, group)'s mean and rstd in double, as the forward's.
//   data: one task per (image, group): the statistics, a pass summing
//     g = dy * weight[c] and g xhat, and one writing dx.
//   weight / bias: the statistics of every (image, group) into the
//     workspace (tasks per (image, group)), then one task per channel
//     summing dy xhat (or dy) over the images and positions.
// NHWC walks each channel at stride C: correct, not yet fast (no model in
// the benches trains through a group norm).
#include <cmath>
#include <cstdint>
#include <vector>

#include "core/layer.h"
#include "core/math/dispatch.h"
#include "core/ops/backward.h"
#include "core/ops/groupnorm/groupnorm.h"
#include "core/parallel.h"
#include "core/registry.h"

namespace ai3 {
namespace {

constexpr int64_t kParallelThreshold = 1 << 14;

struct GroupStats {
  double mean, rstd;
};

// The (N, C, S) view's strides, the groups (0: one per channel) and the
// channels per group.
struct Walk {
  GroupNormDims d;
  int64_t ns, cs, ss;
  int64_t groups, cg;

  Walk(const GroupNormAttrs& a, const Shape& x) {
    d = GroupNormDimsOf(x, a.layout);
    const bool nhwc = a.layout == Layout::kNHWC;
    ns = d.c * d.s;
    cs = nhwc ? 1 : d.s;
    ss = nhwc ? d.c : 1;
    groups = a.groups ? a.groups : d.c;
    cg = groups ? d.c / groups : 0;
  }
  int64_t At(int64_t n, int64_t c, int64_t s) const {
    return n * ns + c * cs + s * ss;
  }
  // fn(offset, c) over image n's group g.
  template <class Fn>
  void ForGroup(int64_t n, int64_t g, Fn fn) const {
    for (int64_t c = g * cg; c < (g + 1) * cg; ++c) {
      for (int64_t s = 0; s < d.s; ++s) fn(At(n, c, s), c);
    }
  }
  template <typename T>
  GroupStats StatsOf(const T* x, int64_t n, int64_t g, double eps) const {
    const double count = double(cg * d.s);
    double sum = 0;
    ForGroup(n, g, [&](int64_t i, int64_t) { sum += x[i]; });
    const double mean = sum / count;
    double sq = 0;
    ForGroup(n, g,
             [&](int64_t i, int64_t) { sq += (x[i] - mean) * (x[i] - mean); });
    return {mean, 1.0 / std::sqrt(sq / count + eps)};
  }
};

// The layer's weight and bias pointers, as the forward's kernel reads them.
struct Params {
  const void* weight = nullptr;
  const void* bias = nullptr;
  Params(const GroupNormAttrs& attrs, const std::vector<Tensor>& params) {
    size_t next = 0;
    if (attrs.has_weight) weight = params[next++].data;
    if (attrs.has_bias) bias = params[next++].data;
  }
};

class DataKernel : public MultiInputKernel {
 public:
  DataKernel(const GroupNormAttrs& attrs, const std::vector<Tensor>& params)
      : attrs_(attrs), params_(attrs, params) {}

  void RunInputs(const std::vector<Tensor>& inputs, const Tensor& output,
                 void*) override {
    const Walk w(attrs_, output.shape);
    if (w.d.n * w.d.c * w.d.s == 0) return;
    DispatchFloat(output.dtype, [&](auto zero) {
      using T = decltype(zero);
      const T* dy = inputs[kGradOutput].data_as<const T>();
      const T* x = inputs[kForwardInput].data_as<const T>();
      const T* weight = static_cast<const T*>(params_.weight);
      T* dx = output.data_as<T>();
      ParallelFor(
          0, w.d.n * w.groups, w.d.n * w.d.c * w.d.s >= kParallelThreshold,
          [&](int64_t ng) {
            const int64_t n = ng / w.groups, g = ng % w.groups;
            const GroupStats st = w.StatsOf(x, n, g, attrs_.eps);
            auto gradient = [&](int64_t i, int64_t c) {
              return weight ? double(dy[i]) * weight[c] : double(dy[i]);
            };
            double sum_g = 0, sum_gx = 0;
            w.ForGroup(n, g, [&](int64_t i, int64_t c) {
              const double gi = gradient(i, c);
              sum_g += gi;
              sum_gx += gi * (x[i] - st.mean) * st.rstd;
            });
            const double count = double(w.cg * w.d.s);
            const double mean_g = sum_g / count;
            const double mean_gx = sum_gx / count;
            w.ForGroup(n, g, [&](int64_t i, int64_t c) {
              const double xhat = (x[i] - st.mean) * st.rstd;
              dx[i] = T(st.rstd * (gradient(i, c) - mean_g - xhat * mean_gx));
            });
          });
    });
  }

 private:
  GroupNormAttrs attrs_;
  Params params_;
};

// The weight's (kXhat: sum of dy xhat) or the bias's (sum of dy) gradient.
template <bool kXhat>
class ChannelSumKernel : public MultiInputKernel {
 public:
  explicit ChannelSumKernel(const GroupNormAttrs& attrs) : attrs_(attrs) {}

  size_t InputsWorkspaceBytes(
      const std::vector<Tensor>& inputs) const override {
    if (!kXhat) return 0;
    const Walk w(attrs_, inputs[kForwardInput].shape);
    return static_cast<size_t>(w.d.n * w.groups) * sizeof(GroupStats);
  }

  void RunInputs(const std::vector<Tensor>& inputs, const Tensor& output,
                 void* workspace) override {
    const Walk w(attrs_, inputs[kForwardInput].shape);
    DispatchFloat(output.dtype, [&](auto zero) {
      using T = decltype(zero);
      const T* dy = inputs[kGradOutput].data_as<const T>();
      const T* x = inputs[kForwardInput].data_as<const T>();
      T* out = output.data_as<T>();
      const bool parallel = w.d.n * w.d.c * w.d.s >= kParallelThreshold;
      auto* stats = static_cast<GroupStats*>(workspace);
      if constexpr (kXhat) {
        ParallelFor(0, w.d.n * w.groups, parallel, [&](int64_t ng) {
          stats[ng] = w.StatsOf(x, ng / w.groups, ng % w.groups, attrs_.eps);
        });
      }
      ParallelFor(0, w.d.c, parallel, [&](int64_t c) {
        double acc = 0;
        for (int64_t n = 0; n < w.d.n; ++n) {
          for (int64_t s = 0; s < w.d.s; ++s) {
            const int64_t i = w.At(n, c, s);
            if constexpr (kXhat) {
              const GroupStats& st = stats[n * w.groups + c / w.cg];
              acc += double(dy[i]) * ((x[i] - st.mean) * st.rstd);
            } else {
              acc += dy[i];
            }
          }
        }
        out[c] = T(acc);
      });
    });
  }

 private:
  GroupNormAttrs attrs_;
};

AI3_REGISTER_ALGORITHM(GroupNormBackwardDataAttrs, "direct", Device::kCPU,
                       KernelAlgorithm<GroupNormBackwardDataAttrs, DataKernel>);
AI3_REGISTER_ALGORITHM(
    GroupNormBackwardWeightAttrs, "direct", Device::kCPU,
    KernelAlgorithm<GroupNormBackwardWeightAttrs, ChannelSumKernel<true>>);
AI3_REGISTER_ALGORITHM(
    GroupNormBackwardBiasAttrs, "direct", Device::kCPU,
    KernelAlgorithm<GroupNormBackwardBiasAttrs, ChannelSumKernel<false>>);

}  // namespace
}  // namespace ai3
