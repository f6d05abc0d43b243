// lrn_backward_data "direct" (lrn.h): two passes over the elements, split
// over OpenMP threads: the first writes each element's divisor base d and
// t = dy y / d into the workspace; the second sums t over the channels
// whose windows hold each element. Either layout, through the channel's
// stride (NCHW: the plane size; NHWC: 1).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "core/layer.h"
#include "core/math/dispatch.h"
#include "core/ops/lrn/lrn.h"
#include "core/parallel.h"
#include "core/registry.h"

namespace ai3 {
namespace {

constexpr int64_t kParallelThreshold = 1 << 14;

template <typename T>
void LrnGradient(const LrnAttrs& a, int64_t n, int64_t c, int64_t s,
                 const T* dy, const T* x, const T* y, T* dx, T* d, T* t) {
  const bool nhwc = a.layout == Layout::kNHWC;
  const int64_t stride = nhwc ? 1 : s;  // between channels
  const T scale = T(a.alpha / double(a.size)), bias = T(a.bias);
  const T beta = T(a.beta);
  const T factor = T(2) * scale * beta;
  // Element e's channel.
  auto channel = [&](int64_t e) { return nhwc ? e % c : (e / s) % c; };
  const int64_t total = n * c * s;
  const bool big = total * a.size >= kParallelThreshold;
  ParallelFor(0, total, big, [&](int64_t e) {
    const int64_t ch = channel(e);
    const T* x0 = x + e - ch * stride;
    const int64_t lo = std::max<int64_t>(0, ch - a.before);
    const int64_t hi = std::min<int64_t>(c, ch - a.before + a.size);
    T sum = 0;
    for (int64_t k = lo; k < hi; ++k) sum += x0[k * stride] * x0[k * stride];
    d[e] = bias + scale * sum;
    t[e] = dy[e] * y[e] / d[e];
  });
  ParallelFor(0, total, big, [&](int64_t e) {
    const int64_t ch = channel(e);
    const T* t0 = t + e - ch * stride;
    // The windows that hold ch: those of j in [ch + before - size + 1,
    // ch + before].
    const int64_t lo = std::max<int64_t>(0, ch + a.before - a.size + 1);
    const int64_t hi = std::min<int64_t>(c - 1, ch + a.before);
    T sum = 0;
    for (int64_t j = lo; j <= hi; ++j) sum += t0[j * stride];
    dx[e] = dy[e] * std::pow(d[e], -beta) - factor * x[e] * sum;
  });
}

class BackwardKernel : public MultiInputKernel {
 public:
  explicit BackwardKernel(const LrnBackwardDataAttrs& attrs) : attrs_(attrs) {}

  // d and t, each shaped like x.
  size_t InputsWorkspaceBytes(
      const std::vector<Tensor>& inputs) const override {
    const Tensor& x = inputs[kForwardInput];
    return 2 * static_cast<size_t>(x.numel()) * SizeOf(x.dtype);
  }

  void RunInputs(const std::vector<Tensor>& inputs, const Tensor& output,
                 void* workspace) override {
    const Tensor& x = inputs[kForwardInput];
    const bool nhwc = attrs_.layout == Layout::kNHWC;
    const int64_t c = nhwc ? x.shape.back() : x.shape[1];
    const int64_t n = x.shape[0];
    if (x.numel() == 0) return;
    const int64_t s = x.numel() / (n * c);
    DispatchFloat(x.dtype, [&](auto zero) {
      using T = decltype(zero);
      T* d = static_cast<T*>(workspace);
      LrnGradient<T>(attrs_, n, c, s, inputs[kGradOutput].data_as<const T>(),
                     x.data_as<const T>(),
                     inputs[kForwardOutput].data_as<const T>(),
                     output.data_as<T>(), d, d + x.numel());
    });
  }

 private:
  LrnBackwardDataAttrs attrs_;
};

AI3_REGISTER_ALGORITHM(LrnBackwardDataAttrs, "direct", Device::kCPU,
                       KernelAlgorithm<LrnBackwardDataAttrs, BackwardKernel>);

}  // namespace
}  // namespace ai3
