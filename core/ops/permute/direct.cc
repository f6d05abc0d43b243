// permute "direct": the output walked in order, each element read from the
// input at the permuted strides. Output dimensions of size 1 are dropped and
// neighbours whose input strides are contiguous with each other merged
// (PermutePlanOf, permute.h), so
// e.g. (N, C, H, W) -> (N, H, W, C) becomes a batch of 2-D transposes
// [C, HW] -> [HW, C]. When the innermost output dimension is contiguous in
// the input too, rows are copied whole; otherwise the last two merged
// dimensions are transposed in square tiles, so both the reads and the
// writes stay within a few cache lines. Tasks (a row, or a tile) are split
// over OpenMP threads when there is enough work.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "core/layer.h"
#include "core/math/dispatch.h"
#include "core/ops/permute/permute.h"
#include "core/parallel.h"
#include "core/registry.h"

namespace ai3 {
namespace {

constexpr int64_t kParallelThreshold = 1 << 15;
constexpr int64_t kTile = 32;

// The input offset of the first element of outer index `o` over the plan's
// dimensions [0, dims).
int64_t Offset(const PermutePlan& p, int dims, int64_t o) {
  int64_t off = 0;
  for (int d = dims - 1; d >= 0; --d) {
    off += (o % p.size[d]) * p.stride[d];
    o /= p.size[d];
  }
  return off;
}

// A few input rows interleaved into the innermost output dimension: y[i][j] =
// x[j * sb + i] for j < b, i < a, where a is contiguous in the input
// (NCHW -> NHWC of an RGB image: [3, HW] -> [HW, 3], the permute in front of
// a model whose convolutions run NHWC). The square tiles below would be 32 x
// 3, rows too short to pay for their loop; here each input row is read in
// order and b is a constant for the usual counts, so the inner loop unrolls
// into straight-line stores. Threads split the i range.
template <int64_t B, typename T>
void InterleaveRange(const T* __restrict x, int64_t sb, T* __restrict y,
                     int64_t b, int64_t lo, int64_t hi) {
  const int64_t count = B > 0 ? B : b;
  for (int64_t i = lo; i < hi; ++i) {
    for (int64_t j = 0; j < count; ++j) y[i * count + j] = x[j * sb + i];
  }
}

// Widest innermost output dimension the interleave above takes.
constexpr int64_t kMaxInterleaved = 8;

template <typename T>
void Interleave(const PermutePlan& p, const T* x, T* y, int64_t numel,
                bool parallel) {
  const int64_t a = p.size[p.rank - 2];
  const int64_t b = p.size[p.rank - 1], sb = p.stride[p.rank - 1];
  const int64_t batches = numel / (a * b);
  ParallelRanges(0, a, parallel, [&](int64_t lo, int64_t hi) {
    for (int64_t batch = 0; batch < batches; ++batch) {
      const T* xb = x + Offset(p, p.rank - 2, batch);
      T* yb = y + batch * a * b;
      switch (b) {
        case 2:
          InterleaveRange<2>(xb, sb, yb, b, lo, hi);
          break;
        case 3:
          InterleaveRange<3>(xb, sb, yb, b, lo, hi);
          break;
        case 4:
          InterleaveRange<4>(xb, sb, yb, b, lo, hi);
          break;
        default:
          InterleaveRange<0>(xb, sb, yb, b, lo, hi);
          break;
      }
    }
  });
}

template <typename T>
void Permute(const PermutePlan& p, const T* x, T* y, int64_t numel) {
  const bool parallel = numel >= kParallelThreshold;
  const int64_t inner = p.size[p.rank - 1];
  if (p.stride[p.rank - 1] == 1) {  // rows stay rows
    const int64_t rows = numel / inner;
    ParallelFor(0, rows, parallel, [&](int64_t r) {
      std::memcpy(y + r * inner, x + Offset(p, p.rank - 1, r),
                  inner * sizeof(T));
    });
    return;
  }
  if (p.rank == 1) {  // a single strided row
    const int64_t st = p.stride[0];
    for (int64_t i = 0; i < inner; ++i) y[i] = x[i * st];
    return;
  }
  if (p.size[p.rank - 1] <= kMaxInterleaved && p.stride[p.rank - 2] == 1) {
    Interleave(p, x, y, numel, parallel);
    return;
  }
  // Tiles over the last two merged output dimensions [a, b]: y[i][j] =
  // x[i * sa + j * sb]; the dimension contiguous in the input is among the
  // outer ones or is `a`, so tiling keeps both sides local.
  const int64_t a = p.size[p.rank - 2], sa = p.stride[p.rank - 2];
  const int64_t b = inner, sb = p.stride[p.rank - 1];
  const int64_t batches = numel / (a * b);
  const int64_t ta = (a + kTile - 1) / kTile, tb = (b + kTile - 1) / kTile;
  ParallelFor(0, batches * ta * tb, parallel, [&](int64_t t) {
    const int64_t batch = t / (ta * tb);
    const int64_t i0 = (t / tb % ta) * kTile, j0 = (t % tb) * kTile;
    const T* xb = x + Offset(p, p.rank - 2, batch);
    T* yb = y + batch * a * b;
    const int64_t i1 = std::min(a, i0 + kTile), j1 = std::min(b, j0 + kTile);
    for (int64_t i = i0; i < i1; ++i) {
      for (int64_t j = j0; j < j1; ++j) yb[i * b + j] = xb[i * sa + j * sb];
    }
  });
}

class DirectKernel : public Kernel {
 public:
  explicit DirectKernel(const PermuteAttrs& attrs)
      : perm_(attrs.Normalized()) {}

  void Run(const Tensor& input, const Tensor& output, void*) override {
    if (input.rank() > PermutePlan::kMaxRank) {
      Fail(ErrorKind::kUnsupported, "permute 'direct' takes up to ",
           PermutePlan::kMaxRank, " dimensions, got ", input.rank());
    }
    const PermutePlan p = PermutePlanOf(input.shape, perm_);
    DispatchAnyDType(input.dtype, [&](auto zero) {
      using T = decltype(zero);
      Permute<T>(p, input.data_as<const T>(), output.data_as<T>(),
                 input.numel());
    });
  }

 private:
  std::vector<int64_t> perm_;
};

using Direct = KernelAlgorithm<PermuteAttrs, DirectKernel>;

AI3_REGISTER_ALGORITHM(PermuteAttrs, "direct", Device::kCPU, Direct);

// The permutation that undoes `attrs`': output dim d of the forward is its
// input dim dims[d], so the gradient's output dim dims[d] is dy's dim d.
PermuteAttrs Inverse(const PermuteAttrs& attrs) {
  const std::vector<int64_t> dims = attrs.Normalized();
  PermuteAttrs inverse;
  inverse.dims.resize(dims.size());
  for (size_t d = 0; d < dims.size(); ++d) {
    inverse.dims[dims[d]] = static_cast<int64_t>(d);
  }
  return inverse;
}

// permute_backward_data's "direct": the forward's kernel on dy, with the
// inverse permutation.
class DataKernel : public MultiInputKernel {
 public:
  explicit DataKernel(const PermuteBackwardDataAttrs& attrs)
      : inverse_(Inverse(attrs)) {}

  void RunInputs(const std::vector<Tensor>& inputs, const Tensor& output,
                 void* workspace) override {
    inverse_.Run(inputs[kGradOutput], output, workspace);
  }

 private:
  DirectKernel inverse_;
};

AI3_REGISTER_ALGORITHM(PermuteBackwardDataAttrs, "direct", Device::kCPU,
                       KernelAlgorithm<PermuteBackwardDataAttrs, DataKernel>);

}  // namespace
}  // namespace ai3
