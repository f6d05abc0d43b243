// The comparisons' and logical ops' CPU "direct": the broadcast output as
// rows of a contiguous innermost run (BroadcastIndex, core/ops/binary),
// each operand read with its stride along the run (0 where broadcast),
// rows split over threads for large outputs; logical_not one loop.
#include <cstdint>
#include <vector>

#include "core/layer.h"
#include "core/math/dispatch.h"
#include "core/ops/binary/broadcast_runs.h"
#include "core/ops/binary/operands.h"
#include "core/ops/compare/compare.h"
#include "core/ops/function_kernel.h"
#include "core/registry.h"

namespace ai3 {
namespace {

constexpr int64_t kParallelElements = 1 << 16;
constexpr int64_t kBlock = 4096;  // elements of a row per task

template <CompareOp Op, typename T>
bool Apply(T a, T b) {
  switch (Op) {
    case CompareOp::kEqual:
      return a == b;
    case CompareOp::kLess:
      return a < b;
    case CompareOp::kGreater:
      return a > b;
    case CompareOp::kLessEqual:
      return a <= b;
    case CompareOp::kGreaterEqual:
      return a >= b;
    case CompareOp::kAnd:
      return a != T(0) && b != T(0);
    case CompareOp::kOr:
      return a != T(0) || b != T(0);
    case CompareOp::kXor:
      return (a != T(0)) != (b != T(0));
  }
  return false;
}

template <CompareOp Op, typename T>
void Broadcast(const BroadcastIndex& ix, const T* a, const T* b, bool* y) {
  const int64_t sa = ix.stride_a[ix.rank - 1], sb = ix.stride_b[ix.rank - 1];
  ForEachBroadcastRun(
      ix, kBlock, kParallelElements,
      [&](int64_t off_a, int64_t off_b, int64_t off_y, int64_t len) {
        const T* pa = a + off_a;
        const T* pb = b + off_b;
        bool* py = y + off_y;
        for (int64_t i = 0; i < len; ++i) {
          py[i] = Apply<Op, T>(pa[i * sa], pb[i * sb]);
        }
      });
}

template <class Attrs>
class DirectKernel : public OperandsKernel<Attrs> {
 public:
  using OperandsKernel<Attrs>::OperandsKernel;

  void RunInputs(const std::vector<Tensor>& inputs, const Tensor& output,
                 void*) override {
    const Tensor& a = inputs[0];
    const Tensor& b = this->Other(inputs);
    if (a.numel() == 0 || b.numel() == 0) return;
    const BroadcastIndex ix(a.shape, b.shape, output.shape);
    DispatchAnyDType(a.dtype, [&](auto zero) {
      using T = decltype(zero);
      Broadcast<Attrs::kCompareOp, T>(ix, a.data_as<const T>(),
                                      b.data_as<const T>(),
                                      output.data_as<bool>());
    });
  }
};

template <class Attrs>
using Direct = KernelAlgorithm<Attrs, DirectKernel<Attrs>>;

AI3_REGISTER_ALGORITHM(EqualAttrs, "direct", Device::kCPU, Direct<EqualAttrs>);
AI3_REGISTER_ALGORITHM(LessAttrs, "direct", Device::kCPU, Direct<LessAttrs>);
AI3_REGISTER_ALGORITHM(GreaterAttrs, "direct", Device::kCPU,
                       Direct<GreaterAttrs>);
AI3_REGISTER_ALGORITHM(LessEqualAttrs, "direct", Device::kCPU,
                       Direct<LessEqualAttrs>);
AI3_REGISTER_ALGORITHM(GreaterEqualAttrs, "direct", Device::kCPU,
                       Direct<GreaterEqualAttrs>);
AI3_REGISTER_ALGORITHM(LogicalAndAttrs, "direct", Device::kCPU,
                       Direct<LogicalAndAttrs>);
AI3_REGISTER_ALGORITHM(LogicalOrAttrs, "direct", Device::kCPU,
                       Direct<LogicalOrAttrs>);
AI3_REGISTER_ALGORITHM(LogicalXorAttrs, "direct", Device::kCPU,
                       Direct<LogicalXorAttrs>);

void NotDirect(const LogicalNotAttrs&, const Tensor& input,
               const Tensor& output) {
  const int64_t n = input.numel();
  bool* y = output.data_as<bool>();
  DispatchAnyDType(input.dtype, [&](auto zero) {
    using T = decltype(zero);
    const T* x = input.data_as<const T>();
    ParallelRanges(0, n, n >= kParallelElements, [=](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) y[i] = x[i] == T(0);
    });
  });
}

AI3_REGISTER_ALGORITHM(LogicalNotAttrs, "direct", Device::kCPU,
                       FunctionAlgorithm<LogicalNotAttrs, NotDirect>);

}  // namespace
}  // namespace ai3
