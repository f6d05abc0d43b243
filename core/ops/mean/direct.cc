// "direct" of every reduction (mean.h): the input, walked in blocks of kept
// and reduced dims (reduce_kernel.h), is read once, in order, as rows of its
// innermost block: a reduced innermost block folds along the row into one
// output element, a kept one folds the row into a run of outputs (both
// vectorised where the fold is a sum or a product). Each output then gets
// its finish (mean: / count, l2: sqrt, ...). When the outermost block is
// kept, its indices own disjoint outputs and are split over OpenMP
// threads. log_sum_exp is two such passes: the maximum m into the output,
// then sum exp(x - m) into the workspace, y = m + log(sum).
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <vector>

#include "core/math/dispatch.h"
#include "core/ops/mean/mean.h"
#include "core/ops/mean/reduce_kernel.h"
#include "core/parallel.h"
#include "core/registry.h"

namespace ai3 {
namespace {

constexpr int64_t kParallelThreshold = 1 << 15;
using reduce::Blocks;
using reduce::kMaxBlocks;
using reduce::MakeBlocks;

// What a reduction folds: acc = Combine(acc, Map(x, shift)) from Init(),
// then y = Finish(acc, count, shift). `shift` is log_sum_exp's maximum (0
// for the others).
template <Reduction R, typename T>
struct Fold {
  static constexpr bool kSum = R == Reduction::kMean || R == Reduction::kSum ||
                               R == Reduction::kL1 || R == Reduction::kL2 ||
                               R == Reduction::kSumSquare ||
                               R == Reduction::kLogSumExp;
  static T Init() {
    if constexpr (R == Reduction::kProd) return T(1);
    if constexpr (R == Reduction::kMax) {
      return -std::numeric_limits<T>::infinity();
    }
    if constexpr (R == Reduction::kMin) {
      return std::numeric_limits<T>::infinity();
    }
    return T(0);
  }
  static T Map(T x, T shift) {
    (void)shift;
    if constexpr (R == Reduction::kL1) return std::fabs(x);
    if constexpr (R == Reduction::kL2 || R == Reduction::kSumSquare) {
      return x * x;
    }
    if constexpr (R == Reduction::kLogSumExp) return std::exp(x - shift);
    return x;
  }
  // NaN wins in max and min: a compare with NaN is false.
  static T Combine(T acc, T v) {
    if constexpr (R == Reduction::kProd) return acc * v;
    if constexpr (R == Reduction::kMax) return acc != acc || acc > v ? acc : v;
    if constexpr (R == Reduction::kMin) return acc != acc || acc < v ? acc : v;
    return acc + v;
  }
  static T Finish(T acc, T scale, T shift) {
    if constexpr (R == Reduction::kMean) return acc * scale;
    if constexpr (R == Reduction::kL2) return std::sqrt(acc);
    if constexpr (R == Reduction::kLogSumExp) return shift + std::log(acc);
    return acc;
  }
};

// Folds the rows of blocks [first, count) starting at x into acc (offsets
// relative to the outermost index handled by the caller); shift (log_sum_exp
// only, else null) is read at acc's offsets.
template <Reduction R, typename T>
void Accumulate(const Blocks& b, int first, const T* x, T* acc,
                const T* shift) {
  using F = Fold<R, T>;
  const int64_t inner = b.size[b.count - 1];
  int64_t rows = 1;
  for (int i = first; i < b.count - 1; ++i) rows *= b.size[i];
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t off = reduce::OutputOffset(b, first, r);
    const T* __restrict xr = x + r * inner;
    T* __restrict ar = acc + off;
    if (b.reduced[b.count - 1]) {
      const T s = shift != nullptr ? shift[off] : T(0);
      T v = F::Init();
      if constexpr (F::kSum) {
#pragma omp simd reduction(+ : v)
        for (int64_t i = 0; i < inner; ++i) v += F::Map(xr[i], s);
      } else if constexpr (R == Reduction::kProd) {
#pragma omp simd reduction(* : v)
        for (int64_t i = 0; i < inner; ++i) v *= xr[i];
      } else {
        for (int64_t i = 0; i < inner; ++i) v = F::Combine(v, xr[i]);
      }
      ar[0] = F::Combine(ar[0], v);
    } else if constexpr (R == Reduction::kLogSumExp) {
      const T* __restrict sr = shift + off;
#pragma omp simd
      for (int64_t i = 0; i < inner; ++i) ar[i] += F::Map(xr[i], sr[i]);
    } else {
#pragma omp simd
      for (int64_t i = 0; i < inner; ++i) {
        ar[i] = F::Combine(ar[i], F::Map(xr[i], T(0)));
      }
    }
  }
}

// acc = the fold of x over the reduced blocks (from Init()), outputs split
// over threads by the outermost kept block.
template <Reduction R, typename T>
void FoldInto(const Blocks& b, const T* x, T* acc, const T* shift,
              int64_t in_numel, int64_t out_numel) {
  const T init = Fold<R, T>::Init();
  for (int64_t i = 0; i < out_numel; ++i) acc[i] = init;
  if (in_numel == 0) return;
  if (!b.reduced[0] && b.count > 1) {
    const int64_t per = in_numel / b.size[0];
    ParallelFor(0, b.size[0], in_numel >= kParallelThreshold, [&](int64_t o) {
      const int64_t at = o * b.out_stride[0];
      Accumulate<R, T>(b, 1, x + o * per, acc + at,
                       shift != nullptr ? shift + at : nullptr);
    });
  } else {
    Accumulate<R, T>(b, 0, x, acc, shift);
  }
}

template <Reduction R, typename T>
void Reduce(const Blocks& b, const T* x, T* y, T* workspace, int64_t in_numel,
            int64_t out_numel) {
  using F = Fold<R, T>;
  const T scale = T(1) / T(b.reduce_count);  // mean: inf for none, so NaN
  if constexpr (R == Reduction::kLogSumExp) {
    FoldInto<Reduction::kMax, T>(b, x, y, nullptr, in_numel, out_numel);
    // The maximum as the shift; 0 where it is not finite (all -inf: the
    // sum is 0, log -inf; an inf or NaN: it comes through exp).
    for (int64_t i = 0; i < out_numel; ++i) {
      if (!std::isfinite(y[i])) y[i] = T(0);
    }
    FoldInto<R, T>(b, x, workspace, y, in_numel, out_numel);
    for (int64_t i = 0; i < out_numel; ++i) {
      y[i] = F::Finish(workspace[i], scale, y[i]);
    }
  } else {
    FoldInto<R, T>(b, x, y, nullptr, in_numel, out_numel);
    if constexpr (R == Reduction::kMean || R == Reduction::kL2) {
#pragma omp simd
      for (int64_t i = 0; i < out_numel; ++i) {
        y[i] = F::Finish(y[i], scale, T(0));
      }
    }
  }
}

template <class Attrs>
class ReduceKernel : public Kernel {
 public:
  explicit ReduceKernel(const Attrs& attrs) : attrs_(attrs) {}

  // log_sum_exp's sums, one per output, of the widest dtype.
  size_t WorkspaceBytes(const Shape& input_shape) const override {
    if (Attrs::kReduction != Reduction::kLogSumExp) return 0;
    const Shape out =
        attrs_.OutputShape(Tensor{nullptr, DType::kFloat64, input_shape});
    return static_cast<size_t>(NumElements(out)) * sizeof(double);
  }

  void Run(const Tensor& input, const Tensor& output,
           void* workspace) override {
    if (input.rank() > kMaxBlocks) {
      Fail(ErrorKind::kUnsupported, Attrs::kOp, " 'direct' takes up to ",
           kMaxBlocks, " dimensions, got ", input.rank());
    }
    const Blocks b = MakeBlocks(input.shape, attrs_.Reduced(input.shape));
    DispatchFloat(input.dtype, [&](auto zero) {
      using T = decltype(zero);
      Reduce<Attrs::kReduction, T>(
          b, input.data_as<const T>(), output.data_as<T>(),
          static_cast<T*>(workspace), input.numel(), output.numel());
    });
  }

 private:
  Attrs attrs_;
};

template <class Attrs>
using Direct = KernelAlgorithm<Attrs, ReduceKernel<Attrs>>;

AI3_REGISTER_ALGORITHM(MeanAttrs, "direct", Device::kCPU, Direct<MeanAttrs>);
AI3_REGISTER_ALGORITHM(ReduceSumAttrs, "direct", Device::kCPU,
                       Direct<ReduceSumAttrs>);
AI3_REGISTER_ALGORITHM(ReduceProdAttrs, "direct", Device::kCPU,
                       Direct<ReduceProdAttrs>);
AI3_REGISTER_ALGORITHM(ReduceMaxAttrs, "direct", Device::kCPU,
                       Direct<ReduceMaxAttrs>);
AI3_REGISTER_ALGORITHM(ReduceMinAttrs, "direct", Device::kCPU,
                       Direct<ReduceMinAttrs>);
AI3_REGISTER_ALGORITHM(ReduceL1Attrs, "direct", Device::kCPU,
                       Direct<ReduceL1Attrs>);
AI3_REGISTER_ALGORITHM(ReduceL2Attrs, "direct", Device::kCPU,
                       Direct<ReduceL2Attrs>);
AI3_REGISTER_ALGORITHM(ReduceSumSquareAttrs, "direct", Device::kCPU,
                       Direct<ReduceSumSquareAttrs>);
AI3_REGISTER_ALGORITHM(ReduceLogSumExpAttrs, "direct", Device::kCPU,
                       Direct<ReduceLogSumExpAttrs>);

}  // namespace
}  // namespace ai3
