// matmul "direct": GEMMs from core/math (BLIS).
//   - right operand without batch (x @ W, a constant, ViT/Swin MLPs): the
//     left operand's batch folds into M, one GEMM for everything;
//   - otherwise one GEMM per output batch entry, operands located through
//     the broadcast batch index (BroadcastIndex);
//   - a batch of small or medium products (attention per head and window):
//     one library call per product threads each one poorly (measured 10x
//     slower than torch for 96 products of 197x64x197), so the batch is
//     split over OpenMP threads, each running register-blocked products
//     (SmallGemm, core/math/small_gemm.h).
#include <omp.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "core/layer.h"
#include "core/math/dispatch.h"
#include "core/math/gemm.h"
#include "core/math/small_gemm.h"
#include "core/ops/binary/broadcast.h"
#include "core/ops/binary/operands.h"
#include "core/ops/matmul/matmul.h"
#include "core/parallel.h"
#include "core/registry.h"

namespace ai3 {
namespace {

// Up to this many multiply-adds per product (with several products) the
// batch-parallel loop beats one library call per product.
constexpr int64_t kSmallProduct = 256 * 256 * 256;

// The scratch SmallGemm needs per thread for these products.
template <typename T>
int64_t PackedPerThread(const MatmulAttrs::Dims& d) {
  return SmallGemmPackedElements<T>(/*trans_b=*/false, d.k, d.n);
}
bool SmallProducts(const MatmulAttrs::Dims& d) {
  return d.k != 0 && NumElements(d.b_batch) != 1 &&
         d.m * d.k * d.n <= kSmallProduct;
}

// `packed`: omp_get_max_threads() * PackedPerThread<T>(d) elements where
// SmallProducts(d), as the kernel's workspace.
template <typename T>
void Matmul(const MatmulAttrs::Dims& d, const T* a, const T* b, T* c,
            T* packed) {
  const int64_t m = d.m, k = d.k, n = d.n;
  if (k == 0) {  // an empty sum: zeros
    std::memset(c, 0, NumElements(d.out) * sizeof(T));
    return;
  }
  if (NumElements(d.b_batch) == 1) {
    const int64_t rows = NumElements(d.a_batch) * m;
    Gemm<T>(false, false, rows, n, k, T(1), a, k, b, n, T(0), c, n);
    return;
  }
  const BroadcastIndex ix(d.a_batch, d.b_batch, d.batch);
  const int64_t count = NumElements(d.batch);
  const int64_t inner = ix.inner();
  auto operands = [&](int64_t t, const T** pa, const T** pb) {
    int64_t oa, ob;
    ix.RowOffsets(t / inner, &oa, &ob);
    const int64_t i = t % inner;
    *pa = a + (oa + i * ix.stride_a[ix.rank - 1]) * m * k;
    *pb = b + (ob + i * ix.stride_b[ix.rank - 1]) * k * n;
  };
  if (SmallProducts(d)) {
    const int threads = omp_get_max_threads();  // as InputsWorkspaceBytes
    const int64_t per_thread = PackedPerThread<T>(d);
    ParallelFor(
        0, count, threads > 1 && count > 1 && count * m * k * n >= (1 << 16),
        [&](int64_t t) {
          const T *pa, *pb;
          operands(t, &pa, &pb);
          SmallGemm<T>(/*trans_b=*/false, m, n, k, T(1), pa, pb, c + t * m * n,
                       packed + omp_get_thread_num() * per_thread);
        });
    return;
  }
  for (int64_t t = 0; t < count; ++t) {
    const T *pa, *pb;
    operands(t, &pa, &pb);
    Gemm<T>(false, false, m, n, k, T(1), pa, k, pb, n, T(0), c + t * m * n, n);
  }
}

class DirectKernel : public OperandsKernel<MatmulAttrs> {
 public:
  using OperandsKernel::OperandsKernel;

  size_t InputsWorkspaceBytes(
      const std::vector<Tensor>& inputs) const override {
    const MatmulAttrs::Dims d =
        attrs_.DimsOf(inputs[0].shape, Other(inputs).shape);
    if (!SmallProducts(d)) return 0;
    return DispatchFloat(inputs[0].dtype, [&](auto zero) {
      using T = decltype(zero);
      return static_cast<size_t>(omp_get_max_threads()) *
             PackedPerThread<T>(d) * sizeof(T);
    });
  }

  void RunInputs(const std::vector<Tensor>& inputs, const Tensor& output,
                 void* workspace) override {
    const Tensor& a = inputs[0];
    const Tensor& b = Other(inputs);
    // The dims are kept for the last operand shapes (the layer runs one call
    // at a time): working them out builds Shapes, and a Model's repeated
    // passes should not allocate.
    if (!planned_ || a.shape != a_shape_ || b.shape != b_shape_) {
      planned_ = false;
      dims_ = attrs_.DimsOf(a.shape, b.shape);
      a_shape_ = a.shape;
      b_shape_ = b.shape;
      planned_ = true;
    }
    DispatchFloat(output.dtype, [&](auto zero) {
      using T = decltype(zero);
      Matmul<T>(dims_, a.data_as<const T>(), b.data_as<const T>(),
                output.data_as<T>(), static_cast<T*>(workspace));
    });
  }

 private:
  bool planned_ = false;
  Shape a_shape_, b_shape_;
  MatmulAttrs::Dims dims_;
};

AI3_REGISTER_ALGORITHM(MatmulAttrs, "direct", Device::kCPU,
                       KernelAlgorithm<MatmulAttrs, DirectKernel>);

}  // namespace
}  // namespace ai3
