// The binary ops' "direct": the broadcast as rows of a contiguous
// innermost run (BroadcastIndex, broadcast.h), so each inner loop is a
// plain vectorisable stream of one of three forms: both operands
// contiguous, or one of them a scalar repeated along the run. Work is split
// into (row, block of the run) tasks over OpenMP threads when large enough,
// so one long row (same-shape operands) threads as well as many short ones.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <type_traits>
#include <vector>

#include "core/layer.h"
#include "core/math/dispatch.h"
#include "core/ops/binary/binary.h"
#include "core/ops/binary/broadcast_runs.h"
#include "core/ops/binary/operands.h"
#include "core/registry.h"

namespace ai3 {
namespace {

// Below this many elements threads cost more than they save.
constexpr int64_t kParallelThreshold = 1 << 15;
// Elements of a row per task.
constexpr int64_t kBlock = 4096;

template <BinaryOp Op, typename T>
inline T Apply(T a, T b) {
  if constexpr (std::is_integral_v<T> &&
                (Op == BinaryOp::kAdd || Op == BinaryOp::kSub ||
                 Op == BinaryOp::kMul)) {
    // Through uint64: an overflow wraps instead of being undefined.
    const uint64_t ua = static_cast<uint64_t>(a), ub = static_cast<uint64_t>(b);
    if constexpr (Op == BinaryOp::kAdd) return static_cast<T>(ua + ub);
    if constexpr (Op == BinaryOp::kSub) return static_cast<T>(ua - ub);
    if constexpr (Op == BinaryOp::kMul) return static_cast<T>(ua * ub);
  }
  if constexpr (Op == BinaryOp::kRemainder || Op == BinaryOp::kFmod) {
    T r;
    if constexpr (std::is_integral_v<T>) {
      // x % 0 and INT64_MIN % -1 are undefined in C++: 0, as NumPy gives.
      if (b == 0 || (b == -1 && a == std::numeric_limits<T>::min())) return 0;
      r = a % b;  // truncated: the dividend's sign
    } else {
      r = std::fmod(a, b);
    }
    // remainder: the divisor's sign (floored division's remainder).
    if (Op == BinaryOp::kRemainder && r != 0 && ((r < 0) != (b < 0))) r += b;
    return r;
  }
  if constexpr (Op == BinaryOp::kAdd) return a + b;
  if constexpr (Op == BinaryOp::kSub) return a - b;
  if constexpr (Op == BinaryOp::kMul) return a * b;
  if constexpr (Op == BinaryOp::kDiv) return a / b;
  if constexpr (Op == BinaryOp::kPow) return std::pow(a, b);
  // NaN wins: a compare with NaN is false.
  if constexpr (Op == BinaryOp::kMaximum) return a != a || a > b ? a : b;
  if constexpr (Op == BinaryOp::kMinimum) return a != a || a < b ? a : b;
  if constexpr (Op == BinaryOp::kPrelu) return a < T(0) ? a * b : a;
}

// x ** c for a constant exponent c repeated along a run: c = 2, 1, -1
// without std::pow (exactly what pow gives, rounded once), which then
// vectorises; true if it was one of them.
template <BinaryOp Op, typename T>
bool ConstantExponent(const T* __restrict x, T c, T* __restrict y,
                      int64_t len) {
  if constexpr (Op != BinaryOp::kPow) {
    return false;
  } else {
    if (c == T(2)) {
#pragma omp simd
      for (int64_t i = 0; i < len; ++i) y[i] = x[i] * x[i];
    } else if (c == T(1)) {
#pragma omp simd
      for (int64_t i = 0; i < len; ++i) y[i] = x[i];
    } else if (c == T(-1)) {
#pragma omp simd
      for (int64_t i = 0; i < len; ++i) y[i] = T(1) / x[i];
    } else {
      return false;
    }
    return true;
  }
}

template <BinaryOp Op, typename T>
void Broadcast(const BroadcastIndex& ix, const T* a, const T* b, T* y) {
  const int64_t step_a = ix.stride_a[ix.rank - 1];
  const int64_t step_b = ix.stride_b[ix.rank - 1];
  ForEachBroadcastRun(
      ix, kBlock, kParallelThreshold,
      [&](int64_t off_a, int64_t off_b, int64_t off_y, int64_t len) {
        const T* __restrict pa = a + off_a;
        const T* __restrict pb = b + off_b;
        T* __restrict py = y + off_y;
        if (step_a == 1 && step_b == 1) {
#pragma omp simd
          for (int64_t i = 0; i < len; ++i) py[i] = Apply<Op>(pa[i], pb[i]);
        } else if (step_a == 1) {
          const T vb = pb[0];
          if (ConstantExponent<Op>(pa, vb, py, len)) return;
#pragma omp simd
          for (int64_t i = 0; i < len; ++i) py[i] = Apply<Op>(pa[i], vb);
        } else if (step_b == 1) {
          const T va = pa[0];
#pragma omp simd
          for (int64_t i = 0; i < len; ++i) py[i] = Apply<Op>(va, pb[i]);
        } else {  // both broadcast along the run: one value repeated
          const T v = Apply<Op>(pa[0], pb[0]);
          for (int64_t i = 0; i < len; ++i) py[i] = v;
        }
      });
}

template <class Attrs>
class DirectKernel : public OperandsKernel<Attrs> {
 public:
  using OperandsKernel<Attrs>::OperandsKernel;

  void RunInputs(const std::vector<Tensor>& inputs, const Tensor& output,
                 void*) override {
    const Tensor* a = &inputs[0];
    const Tensor* b = &this->Other(inputs);
    if (this->attrs_.reverse) std::swap(a, b);
    if (a->numel() == 0 || b->numel() == 0) return;
    const BroadcastIndex ix(
        a->shape, Attrs::OperandShape(b->shape, a->shape.size()), output.shape);
    if constexpr (Attrs::kTakesInt64) {
      if (output.dtype == DType::kInt64) {
        Broadcast<Attrs::kBinaryOp, int64_t>(ix, a->data_as<const int64_t>(),
                                             b->data_as<const int64_t>(),
                                             output.data_as<int64_t>());
        return;
      }
    }
    DispatchFloat(output.dtype, [&](auto zero) {
      using T = decltype(zero);
      Broadcast<Attrs::kBinaryOp, T>(ix, a->data_as<const T>(),
                                     b->data_as<const T>(),
                                     output.data_as<T>());
    });
  }
};

template <class Attrs>
using Direct = KernelAlgorithm<Attrs, DirectKernel<Attrs>>;

AI3_REGISTER_ALGORITHM(AddAttrs, "direct", Device::kCPU, Direct<AddAttrs>);
AI3_REGISTER_ALGORITHM(SubAttrs, "direct", Device::kCPU, Direct<SubAttrs>);
AI3_REGISTER_ALGORITHM(MulAttrs, "direct", Device::kCPU, Direct<MulAttrs>);
AI3_REGISTER_ALGORITHM(DivAttrs, "direct", Device::kCPU, Direct<DivAttrs>);
AI3_REGISTER_ALGORITHM(PowAttrs, "direct", Device::kCPU, Direct<PowAttrs>);
AI3_REGISTER_ALGORITHM(MaximumAttrs, "direct", Device::kCPU,
                       Direct<MaximumAttrs>);
AI3_REGISTER_ALGORITHM(MinimumAttrs, "direct", Device::kCPU,
                       Direct<MinimumAttrs>);
AI3_REGISTER_ALGORITHM(PreluAttrs, "direct", Device::kCPU, Direct<PreluAttrs>);
AI3_REGISTER_ALGORITHM(RemainderAttrs, "direct", Device::kCPU,
                       Direct<RemainderAttrs>);
AI3_REGISTER_ALGORITHM(FmodAttrs, "direct", Device::kCPU, Direct<FmodAttrs>);

}  // namespace
}  // namespace ai3
