// "direct" of every reduction's input gradient (mean.h): each element of x
// gets dy of the output it folds into times that output's derivative in it,
// walking x as the forward does (reduce_walk.h), rows split over OpenMP
// threads (each writes its own elements of dx):
//   mean dy / count, sum dy, sum_square 2 x dy, l1 sign(x) dy,
//   l2 x / y dy (0 where y is 0, as torch's norm), log_sum_exp exp(x - y) dy;
//   max / min: dy shared evenly by the elements equal to y (torch's amax);
//   prod: the product of the other elements times dy, exact with zeros
//   (one zero: only it gets the product of the rest; two: nothing).
// max, min and prod first count per output, in the workspace, the ties or
// the zeros (and prod the product of the non-zero elements): one serial
// pass, since rows fold into shared outputs.
#include <cmath>
#include <cstdint>
#include <vector>

#include "core/layer.h"
#include "core/math/dispatch.h"
#include "core/ops/mean/mean.h"
#include "core/ops/mean/reduce_walk.h"
#include "core/parallel.h"
#include "core/registry.h"

namespace ai3 {
namespace {

// Reductions whose gradient needs the counting pass.
constexpr bool Counts(Reduction r) {
  return r == Reduction::kMax || r == Reduction::kMin || r == Reduction::kProd;
}

// Per output o: count[o] the elements tied with y[o] (max, min) or the zero
// elements (prod), and product[o] (prod) the product of the non-zero ones.
template <Reduction R, typename T>
void CountPass(const reduce::Blocks& b, const T* x, const T* y,
               int64_t in_numel, int64_t out_numel, double* count,
               double* product) {
  for (int64_t o = 0; o < out_numel; ++o) count[o] = 0, product[o] = 1;
  const int64_t inner = b.size[b.count - 1];
  const bool folded = b.reduced[b.count - 1];
  for (int64_t r = 0; r < in_numel / inner; ++r) {
    const int64_t off = reduce::OutputOffset(b, 0, r);
    const T* xr = x + r * inner;
    for (int64_t i = 0; i < inner; ++i) {
      const int64_t o = folded ? off : off + i;
      if constexpr (R == Reduction::kProd) {
        if (xr[i] == T(0)) {
          count[o] += 1;
        } else {
          product[o] *= xr[i];
        }
      } else {
        count[o] += xr[i] == y[o] ? 1 : 0;
      }
    }
  }
}

// d y[o] / d x times dy[o], for one element x of output o.
template <Reduction R, typename T>
T Gradient(T x, T y, T dy, T scale, double count, double product) {
  if constexpr (R == Reduction::kMean) return dy * scale;
  if constexpr (R == Reduction::kSum) return dy;
  if constexpr (R == Reduction::kSumSquare) return T(2) * x * dy;
  if constexpr (R == Reduction::kL1) {
    return x > T(0) ? dy : x < T(0) ? -dy : T(0);
  }
  if constexpr (R == Reduction::kL2) return y == T(0) ? T(0) : x / y * dy;
  if constexpr (R == Reduction::kLogSumExp) return std::exp(x - y) * dy;
  if constexpr (R == Reduction::kMax || R == Reduction::kMin) {
    return x == y ? static_cast<T>(dy / count) : T(0);
  }
  if constexpr (R == Reduction::kProd) {
    if (count == 0) return static_cast<T>(product / x * dy);
    return count == 1 && x == T(0) ? static_cast<T>(product * dy) : T(0);
  }
}

template <Reduction R, typename T>
void Backward(const reduce::Blocks& b, const T* dy, const T* x, const T* y,
              T* dx, int64_t in_numel, int64_t out_numel, double* workspace) {
  if (in_numel == 0) return;
  double* count = workspace;
  double* product = Counts(R) ? workspace + out_numel : nullptr;
  if constexpr (Counts(R)) {
    CountPass<R, T>(b, x, y, in_numel, out_numel, count, product);
  }
  const T scale = T(1) / T(b.reduce_count);
  const int64_t inner = b.size[b.count - 1];
  const bool folded = b.reduced[b.count - 1];
  ParallelFor(0, in_numel / inner, in_numel >= reduce::kParallelElements,
              [&](int64_t r) {
                const int64_t off = reduce::OutputOffset(b, 0, r);
                const T* xr = x + r * inner;
                T* dxr = dx + r * inner;
                for (int64_t i = 0; i < inner; ++i) {
                  const int64_t o = folded ? off : off + i;
                  dxr[i] = Gradient<R, T>(xr[i], y[o], dy[o], scale,
                                          Counts(R) ? count[o] : 0,
                                          Counts(R) ? product[o] : 0);
                }
              });
}

template <Reduction R>
class BackwardKernel : public MultiInputKernel {
 public:
  using Attrs = ReduceBackwardDataAttrs<R>;
  explicit BackwardKernel(const Attrs& attrs) : attrs_(attrs) {}

  size_t InputsWorkspaceBytes(
      const std::vector<Tensor>& inputs) const override {
    if (!Counts(R)) return 0;
    return 2 * static_cast<size_t>(inputs[kGradOutput].numel()) *
           sizeof(double);
  }

  void RunInputs(const std::vector<Tensor>& inputs, const Tensor& output,
                 void* workspace) override {
    const Tensor& x = inputs[kForwardInput];
    if (x.rank() > reduce::kMaxBlocks) {
      Fail(ErrorKind::kUnsupported, Attrs::kOp, " 'direct' takes up to ",
           reduce::kMaxBlocks, " dimensions, got ", x.rank());
    }
    const reduce::Blocks b =
        reduce::MakeBlocks(x.shape, attrs_.Reduced(x.shape));
    DispatchFloat(x.dtype, [&](auto zero) {
      using T = decltype(zero);
      Backward<R, T>(
          b, inputs[kGradOutput].data_as<const T>(), x.data_as<const T>(),
          inputs[kForwardOutput].data_as<const T>(), output.data_as<T>(),
          x.numel(), inputs[kGradOutput].numel(),
          static_cast<double*>(workspace));
    });
  }

 private:
  Attrs attrs_;
};

template <Reduction R>
using Direct = KernelAlgorithm<ReduceBackwardDataAttrs<R>, BackwardKernel<R>>;

AI3_REGISTER_ALGORITHM(ReduceBackwardDataAttrs<Reduction::kMean>, "direct",
                       Device::kCPU, Direct<Reduction::kMean>);
AI3_REGISTER_ALGORITHM(ReduceBackwardDataAttrs<Reduction::kSum>, "direct",
                       Device::kCPU, Direct<Reduction::kSum>);
AI3_REGISTER_ALGORITHM(ReduceBackwardDataAttrs<Reduction::kProd>, "direct",
                       Device::kCPU, Direct<Reduction::kProd>);
AI3_REGISTER_ALGORITHM(ReduceBackwardDataAttrs<Reduction::kMax>, "direct",
                       Device::kCPU, Direct<Reduction::kMax>);
AI3_REGISTER_ALGORITHM(ReduceBackwardDataAttrs<Reduction::kMin>, "direct",
                       Device::kCPU, Direct<Reduction::kMin>);
AI3_REGISTER_ALGORITHM(ReduceBackwardDataAttrs<Reduction::kL1>, "direct",
                       Device::kCPU, Direct<Reduction::kL1>);
AI3_REGISTER_ALGORITHM(ReduceBackwardDataAttrs<Reduction::kL2>, "direct",
                       Device::kCPU, Direct<Reduction::kL2>);
AI3_REGISTER_ALGORITHM(ReduceBackwardDataAttrs<Reduction::kSumSquare>, "direct",
                       Device::kCPU, Direct<Reduction::kSumSquare>);
AI3_REGISTER_ALGORITHM(ReduceBackwardDataAttrs<Reduction::kLogSumExp>, "direct",
                       Device::kCPU, Direct<Reduction::kLogSumExp>);

}  // namespace
}  // namespace ai3
