// mean "direct": the input's dimensions merged into alternating blocks of
// kept and reduced ones (size-1 dims dropped), e.g. NCHW over (H, W) is
// [kept NC, reduced HW] and NHWC over (H, W) is [kept N, reduced HW, kept
// C]. The input is read once, in order, as rows of its innermost block:
// a reduced innermost block sums along the row into one output element, a
// kept one adds the row into a run of outputs (both vectorised). Then the
// sums are scaled by 1 / count. When the outermost block is kept, its
// indices own disjoint outputs and are split over OpenMP threads.
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/math/dispatch.h"
#include "core/ops/function_kernel.h"
#include "core/ops/mean/mean.h"
#include "core/parallel.h"
#include "core/registry.h"

namespace ai3 {
namespace {

constexpr int64_t kParallelThreshold = 1 << 15;
constexpr int kMaxBlocks = 32;

struct Blocks {
  int count = 0;
  int64_t size[kMaxBlocks];
  bool reduced[kMaxBlocks];
  int64_t out_stride[kMaxBlocks];  // 0 for reduced blocks
  int64_t reduce_count = 1;        // elements averaged per output
};

Blocks MakeBlocks(const Shape& shape, const std::vector<bool>& reduced) {
  Blocks b;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (reduced[i]) b.reduce_count *= shape[i];
    if (shape[i] == 1) continue;
    if (b.count > 0 && b.reduced[b.count - 1] == reduced[i]) {
      b.size[b.count - 1] *= shape[i];
      continue;
    }
    b.size[b.count] = shape[i];
    b.reduced[b.count] = reduced[i];
    ++b.count;
  }
  if (b.count == 0) {  // one element
    b.size[0] = 1;
    b.reduced[0] = false;
    b.count = 1;
  }
  int64_t s = 1;
  for (int i = b.count - 1; i >= 0; --i) {
    b.out_stride[i] = b.reduced[i] ? 0 : s;
    if (!b.reduced[i]) s *= b.size[i];
  }
  return b;
}

// Adds the rows of blocks [first, count) starting at x into y (offsets
// relative to the outermost index handled by the caller).
template <typename T>
void Accumulate(const Blocks& b, int first, const T* x, T* y) {
  const int64_t inner = b.size[b.count - 1];
  int64_t rows = 1;
  for (int i = first; i < b.count - 1; ++i) rows *= b.size[i];
  for (int64_t r = 0; r < rows; ++r) {
    int64_t rest = r, off = 0;
    for (int i = b.count - 2; i >= first; --i) {
      off += (rest % b.size[i]) * b.out_stride[i];
      rest /= b.size[i];
    }
    const T* __restrict xr = x + r * inner;
    T* __restrict yr = y + off;
    if (b.reduced[b.count - 1]) {
      T sum = 0;
#pragma omp simd reduction(+ : sum)
      for (int64_t i = 0; i < inner; ++i) sum += xr[i];
      yr[0] += sum;
    } else {
#pragma omp simd
      for (int64_t i = 0; i < inner; ++i) yr[i] += xr[i];
    }
  }
}

template <typename T>
void Mean(const Blocks& b, const T* x, T* y, int64_t in_numel,
          int64_t out_numel) {
  std::memset(y, 0, out_numel * sizeof(T));
  if (in_numel > 0) {
    if (!b.reduced[0] && b.count > 1) {
      const int64_t per = in_numel / b.size[0];
      ParallelFor(0, b.size[0], in_numel >= kParallelThreshold,
                  [&](int64_t o) {
                    Accumulate<T>(b, 1, x + o * per, y + o * b.out_stride[0]);
                  });
    } else {
      Accumulate<T>(b, 0, x, y);
    }
  }
  const T scale = T(1) / T(b.reduce_count);  // inf for no elements: NaN
#pragma omp simd
  for (int64_t i = 0; i < out_numel; ++i) y[i] *= scale;
}

void Direct(const MeanAttrs& attrs, const Tensor& input, const Tensor& output) {
  if (input.rank() > kMaxBlocks) {
    Fail(ErrorKind::kUnsupported, "mean 'direct' takes up to ", kMaxBlocks,
         " dimensions, got ", input.rank());
  }
  const Blocks b = MakeBlocks(input.shape, attrs.Reduced(input.shape));
  DispatchFloat(input.dtype, [&](auto zero) {
    using T = decltype(zero);
    Mean<T>(b, input.data_as<const T>(), output.data_as<T>(), input.numel(),
            output.numel());
  });
}

AI3_REGISTER_ALGORITHM(MeanAttrs, "direct", Device::kCPU,
                       FunctionAlgorithm<MeanAttrs, Direct>);

}  // namespace
}  // namespace ai3
