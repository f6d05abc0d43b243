// The register-blocked product behind SmallGemm (small_gemm.h), written once
// for any vector width: small_gemm.cc builds it for AVX2, small_gemm_avx512.cc
// for AVX-512, like conv2d's smm_kernel.h.
//
// Why blocked: the plain i-p-j loop it replaced (matmul "direct"'s) loaded
// and stored a row of c for every multiply-add (one FMA per load and
// store), 50-70 GFLOP/s on the 2-core EPYC, below PyTorch's bmm. Here a
// block of kRows rows by up to kPanel vectors of columns stays in registers
// over the whole sum: per step of p, kPanel loads of b and kRows broadcasts
// of a feed kRows * kPanel FMAs, and c is written once.
//
// b is read as [k, ldb] rows of whole vectors. It is read in place when it
// already is that (not transposed, n a multiple of the lanes); otherwise it
// is first copied into `packed` ([k, n rounded up to whole vectors], the
// extra columns zero; transposed on the way for trans_b). The blocks at the
// right edge store only the columns that exist.
//
// In an unnamed namespace on purpose: each instruction set's translation
// unit keeps its own copy (see core/ops/avx512_symbols_test.sh).
#ifndef AI3_CORE_MATH_SMALL_GEMM_KERNEL_H_
#define AI3_CORE_MATH_SMALL_GEMM_KERNEL_H_

#include <algorithm>
#include <cstdint>

#include "core/math/vectors.h"

namespace ai3 {

// SmallGemmKernel<T, 64>::Run, defined in small_gemm_avx512.cc: call only
// where KernelIsa() is kAvx512.
void SmallGemmAvx512(bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                     const float* a, const float* b, float* c, float* packed);
void SmallGemmAvx512(bool trans_b, int64_t m, int64_t n, int64_t k,
                     double alpha, const double* a, const double* b, double* c,
                     double* packed);

namespace {

template <typename T, int64_t kVectorBytes>
struct SmallGemmKernel {
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
  // Elements of `packed` Run needs (0: b is read in place).
  static int64_t PackedElements(bool trans_b, int64_t k, int64_t n) {
    return !trans_b && n % kLanes == 0 ? 0 : k * PaddedColumns(n);
  }

  static void Run(bool trans_b, int64_t m, int64_t n, int64_t k, T alpha,
                  const T* a, const T* b, T* c, T* packed) {
    const int64_t ldb = PaddedColumns(n);
    if (PackedElements(trans_b, k, n) != 0) {
      Pack(trans_b, k, n, ldb, b, packed);
      b = packed;
    }
    constexpr int64_t kPanelColumns = kPanel * kLanes;
    for (int64_t j = 0; j < n; j += kPanelColumns) {
      const int64_t columns = std::min(kPanelColumns, n - j);
      const int vectors = static_cast<int>((columns + kLanes - 1) / kLanes);
      int64_t i = 0;
      for (; i + kRows <= m; i += kRows) {
        Panel<kRows>(vectors, a + i * k, b + j, c + i * n + j, k, ldb, n,
                     columns, alpha);
      }
      RowsLeft(static_cast<int>(m - i), vectors, a + i * k, b + j,
               c + i * n + j, k, ldb, n, columns, alpha);
    }
  }

 private:
  // packed[p, j] = op(b)[p, j] for j < n, 0 up to ldb.
  static void Pack(bool trans_b, int64_t k, int64_t n, int64_t ldb, const T* b,
                   T* packed) {
    for (int64_t p = 0; p < k; ++p) {
      T* row = packed + p * ldb;
      if (trans_b) {
        for (int64_t j = 0; j < n; ++j) row[j] = b[j * k + p];
      } else {
        std::copy(b + p * n, b + (p + 1) * n, row);
      }
      std::fill(row + n, row + ldb, T(0));
    }
  }

  // The last m % kRows rows, with a block of that many rows.
  static void RowsLeft(int rows, int vectors, const T* a, const T* b, T* c,
                       int64_t k, int64_t ldb, int64_t ldc, int64_t columns,
                       T alpha) {
    switch (rows) {
      case 1:
        return Panel<1>(vectors, a, b, c, k, ldb, ldc, columns, alpha);
      case 2:
        return Panel<2>(vectors, a, b, c, k, ldb, ldc, columns, alpha);
      case 3:
        return Panel<3>(vectors, a, b, c, k, ldb, ldc, columns, alpha);
      case 4:
        return Panel<4>(vectors, a, b, c, k, ldb, ldc, columns, alpha);
      case 5:
        return Panel<5>(vectors, a, b, c, k, ldb, ldc, columns, alpha);
      default:
        return;
    }
  }

  template <int kR>
  static void Panel(int vectors, const T* a, const T* b, T* c, int64_t k,
                    int64_t ldb, int64_t ldc, int64_t columns, T alpha) {
    static_assert(kPanel == 2 || kPanel == 4);
    switch (vectors) {
      case 1:
        return Block<kR, 1>(a, b, c, k, ldb, ldc, columns, alpha);
      case 2:
        return Block<kR, 2>(a, b, c, k, ldb, ldc, columns, alpha);
      case 3:
        if constexpr (kPanel > 2) {
          return Block<kR, 3>(a, b, c, k, ldb, ldc, columns, alpha);
        }
        return;
      case 4:
        if constexpr (kPanel > 2) {
          return Block<kR, 4>(a, b, c, k, ldb, ldc, columns, alpha);
        }
        return;
      default:
        return;
    }
  }

  // c[kR rows, `columns`] = alpha * a[kR rows, k] @ b[k, kP vectors]; a's
  // rows are k apart, b's ldb, c's ldc. `columns` <= kP * kLanes: the last
  // vector's extra lanes (zero columns of packed b) are not stored.
  template <int kR, int kP>
  static void Block(const T* __restrict a, const T* __restrict b,
                    T* __restrict c, int64_t k, int64_t ldb, int64_t ldc,
                    int64_t columns, T alpha) {
    V acc[kR][kP];
    for (int r = 0; r < kR; ++r) {
      for (int q = 0; q < kP; ++q) acc[r][q] = V{};
    }
    for (int64_t p = 0; p < k; ++p) {
      V bv[kP];
      for (int q = 0; q < kP; ++q) bv[q] = Vec::Load(b + p * ldb + q * kLanes);
      for (int r = 0; r < kR; ++r) {
        // A scalar operand, which GCC broadcasts (a folded vbroadcastss).
        // `V{} + a[...]` instead cost a vaddss before every broadcast (the
        // sum with +0 is not a no-op for -0): ViT's heads ran ~15% slower.
        const T ar = a[r * k + p];
        for (int q = 0; q < kP; ++q) acc[r][q] += ar * bv[q];
      }
    }
    if (alpha != T(1)) {
      for (int r = 0; r < kR; ++r) {
        for (int q = 0; q < kP; ++q) acc[r][q] *= alpha;
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

#endif  // AI3_CORE_MATH_SMALL_GEMM_KERNEL_H_
