// One small matrix product, register-blocked, for matmul "direct"'s batches
// of small products (attention per head and window: Swin's 49x32 @ 32x49,
// ViT's 197x64 @ 64x197):
//   c[m, n] = a[m, k] @ b[k, n], all row-major and dense.
// Built for AVX2 in direct.cc and for AVX-512 in small_product_avx512.cc,
// like conv2d's smm_kernel.h.
//
// Why blocked: the plain i-p-j loop it replaces loaded and stored a row of c
// for every multiply-add (one FMA per load and store), 50-70 GFLOP/s on the
// 2-core EPYC, below PyTorch's bmm. Here a block of kRows rows by up to
// kPanel vectors of columns stays in registers over the whole sum: per step
// of p, kPanel loads of b and kRows broadcasts of a feed kRows * kPanel
// FMAs, and c is written once.
//
// Columns: b is read in whole vectors, so a row length n that is not a
// multiple of the lanes is first copied into `packed` ([k, padded n], the
// extra columns zero); the blocks at the right edge store only the columns
// that exist.
#ifndef AI3_CORE_OPS_MATMUL_SMALL_PRODUCT_KERNEL_H_
#define AI3_CORE_OPS_MATMUL_SMALL_PRODUCT_KERNEL_H_

#include <algorithm>
#include <cstdint>

#include "core/math/vectors.h"

namespace ai3 {

// SmallProduct<T, 64>::Run, defined in small_product_avx512.cc: call only
// where KernelIsa() is kAvx512.
void SmallProductAvx512(const float* a, const float* b, float* c, int64_t m,
                        int64_t k, int64_t n, float* packed);
void SmallProductAvx512(const double* a, const double* b, double* c, int64_t m,
                        int64_t k, int64_t n, double* packed);

namespace {

template <typename T, int64_t kVectorBytes>
struct SmallProduct {
  using Vec = Vectors<T, kVectorBytes>;
  using V = typename Vec::V;
  static constexpr int64_t kLanes = Vec::kLanes;
  // kRows * kPanel accumulators, kPanel vectors of b and a broadcast: 29 of
  // AVX-512's 32 registers, 15 of AVX2's 16.
  static constexpr int kRows = 6;
  static constexpr int kPanel = kVectorBytes == 64 ? 4 : 2;

  // The row length b is read at: n rounded up to whole vectors.
  static int64_t PaddedColumns(int64_t n) {
    return (n + kLanes - 1) / kLanes * kLanes;
  }
  // Elements of `packed` Run needs for these sizes (0: b is read in place).
  static int64_t PackedElements(int64_t k, int64_t n) {
    return n % kLanes == 0 ? 0 : k * PaddedColumns(n);
  }

  static void Run(const T* a, const T* b, T* c, int64_t m, int64_t k, int64_t n,
                  T* packed) {
    const int64_t ldb = PaddedColumns(n);
    if (ldb != n) {
      for (int64_t p = 0; p < k; ++p) {
        std::copy(b + p * n, b + (p + 1) * n, packed + p * ldb);
        std::fill(packed + p * ldb + n, packed + (p + 1) * ldb, T(0));
      }
      b = packed;
    }
    constexpr int64_t kPanelColumns = kPanel * kLanes;
    for (int64_t j = 0; j < n; j += kPanelColumns) {
      const int64_t columns = std::min(kPanelColumns, n - j);
      const int vectors = static_cast<int>((columns + kLanes - 1) / kLanes);
      int64_t i = 0;
      for (; i + kRows <= m; i += kRows) {
        Panel<kRows>(vectors, a + i * k, b + j, c + i * n + j, k, ldb, n,
                     columns);
      }
      RowsLeft(static_cast<int>(m - i), vectors, a + i * k, b + j,
               c + i * n + j, k, ldb, n, columns);
    }
  }

 private:
  // The last m % kRows rows, with a block of that many rows.
  static void RowsLeft(int rows, int vectors, const T* a, const T* b, T* c,
                       int64_t k, int64_t ldb, int64_t ldc, int64_t columns) {
    switch (rows) {
      case 1:
        return Panel<1>(vectors, a, b, c, k, ldb, ldc, columns);
      case 2:
        return Panel<2>(vectors, a, b, c, k, ldb, ldc, columns);
      case 3:
        return Panel<3>(vectors, a, b, c, k, ldb, ldc, columns);
      case 4:
        return Panel<4>(vectors, a, b, c, k, ldb, ldc, columns);
      case 5:
        return Panel<5>(vectors, a, b, c, k, ldb, ldc, columns);
      default:
        return;
    }
  }

  template <int kR>
  static void Panel(int vectors, const T* a, const T* b, T* c, int64_t k,
                    int64_t ldb, int64_t ldc, int64_t columns) {
    static_assert(kPanel == 2 || kPanel == 4);
    switch (vectors) {
      case 1:
        return Block<kR, 1>(a, b, c, k, ldb, ldc, columns);
      case 2:
        return Block<kR, 2>(a, b, c, k, ldb, ldc, columns);
      case 3:
        if constexpr (kPanel > 2) {
          return Block<kR, 3>(a, b, c, k, ldb, ldc, columns);
        }
        return;
      case 4:
        if constexpr (kPanel > 2) {
          return Block<kR, 4>(a, b, c, k, ldb, ldc, columns);
        }
        return;
      default:
        return;
    }
  }

  // c[kR rows, `columns`] = a[kR rows, k] @ b[k, kP vectors]; a's rows are
  // k apart, b's ldb, c's ldc. `columns` <= kP * kLanes: the last vector's
  // extra lanes (zero columns of packed b) are not stored.
  template <int kR, int kP>
  static void Block(const T* __restrict a, const T* __restrict b,
                    T* __restrict c, int64_t k, int64_t ldb, int64_t ldc,
                    int64_t columns) {
    V acc[kR][kP];
    for (int r = 0; r < kR; ++r) {
      for (int q = 0; q < kP; ++q) acc[r][q] = V{};
    }
    for (int64_t p = 0; p < k; ++p) {
      V bv[kP];
      for (int q = 0; q < kP; ++q) bv[q] = Vec::Load(b + p * ldb + q * kLanes);
      for (int r = 0; r < kR; ++r) {
        const V ar = V{} + a[r * k + p];
        for (int q = 0; q < kP; ++q) acc[r][q] += ar * bv[q];
      }
    }
    if (columns == kP * kLanes) {
      for (int r = 0; r < kR; ++r) {
        for (int q = 0; q < kP; ++q) {
          Vec::Store(c + r * ldc + q * kLanes, acc[r][q]);
        }
      }
      return;
    }
    for (int r = 0; r < kR; ++r) {
      T row[kP * kLanes];
      for (int q = 0; q < kP; ++q) Vec::Store(row + q * kLanes, acc[r][q]);
      std::copy(row, row + columns, c + r * ldc);
    }
  }
};

}  // namespace
}  // namespace ai3

#endif  // AI3_CORE_OPS_MATMUL_SMALL_PRODUCT_KERNEL_H_
