// where "direct": the output as rows of its last dimension; each of the
// three operands is read with its own stride per output dimension (0 where
// it is broadcast), kept in fixed arrays so a run allocates nothing. Rows
// are split over threads for large outputs.
#include <cstdint>
#include <vector>

#include "core/layer.h"
#include "core/math/dispatch.h"
#include "core/ops/binary/broadcast.h"
#include "core/ops/binary/operands.h"
#include "core/ops/where/where.h"
#include "core/parallel.h"
#include "core/registry.h"

namespace ai3 {
namespace {

constexpr int64_t kParallelElements = 1 << 16;

// Element strides of `shape` along each dimension of `out` (right-aligned;
// 0 where `shape` has 1 or lacks the dimension).
void BroadcastStrides(const Shape& shape, const Shape& out, int64_t* strides) {
  const int rank = static_cast<int>(out.size());
  const int offset = rank - static_cast<int>(shape.size());
  int64_t step = 1;
  for (int d = rank - 1; d >= 0; --d) {
    const int64_t size = d >= offset ? shape[d - offset] : 1;
    strides[d] = size == 1 ? 0 : step;
    step *= size;
  }
}

class DirectKernel : public OperandsKernel<WhereAttrs> {
 public:
  using OperandsKernel::OperandsKernel;

  void RunInputs(const std::vector<Tensor>& inputs, const Tensor& output,
                 void*) override {
    const Tensor& cond = inputs[0];
    const Tensor* x = &inputs[1];
    const Tensor* y = attrs_.has_other ? &Other(inputs) : &inputs[2];
    if (attrs_.has_other && attrs_.other_is_x) std::swap(x, y);
    const Shape& out = output.shape;
    const int rank = static_cast<int>(out.size());
    if (rank == 0) {
      DispatchAnyDType(output.dtype, [&](auto zero) {
        using T = decltype(zero);
        *output.data_as<T>() = *cond.data_as<const bool>()
                                   ? *x->data_as<const T>()
                                   : *y->data_as<const T>();
      });
      return;
    }
    int64_t sc[kMaxBroadcastRank], sx[kMaxBroadcastRank], sy[kMaxBroadcastRank];
    BroadcastStrides(cond.shape, out, sc);
    BroadcastStrides(x->shape, out, sx);
    BroadcastStrides(y->shape, out, sy);
    const int64_t len = out[rank - 1];
    const int64_t rows = output.numel() / len;
    DispatchAnyDType(output.dtype, [&](auto zero) {
      using T = decltype(zero);
      const bool* c = cond.data_as<const bool>();
      const T* px = x->data_as<const T>();
      const T* py = y->data_as<const T>();
      T* dst = output.data_as<T>();
      ParallelFor(
          0, rows, rows * len >= kParallelElements && rows > 1, [&](int64_t r) {
            int64_t oc = 0, ox = 0, oy = 0, rest = r;
            for (int d = rank - 2; d >= 0; --d) {
              const int64_t i = rest % out[d];
              rest /= out[d];
              oc += i * sc[d];
              ox += i * sx[d];
              oy += i * sy[d];
            }
            const int64_t lc = sc[rank - 1], lx = sx[rank - 1],
                          ly = sy[rank - 1];
            T* row = dst + r * len;
            for (int64_t i = 0; i < len; ++i) {
              row[i] = c[oc + i * lc] ? px[ox + i * lx] : py[oy + i * ly];
            }
          });
    });
  }
};

AI3_REGISTER_ALGORITHM(WhereAttrs, "direct", Device::kCPU,
                       KernelAlgorithm<WhereAttrs, DirectKernel>);

}  // namespace
}  // namespace ai3
