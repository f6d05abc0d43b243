// The kernel behind linear's "packed" (packed.cc), written once for any
// vector width: packed.cc builds it for AVX2, packed_avx512.cc for AVX-512.
//
// y[rows, out] = act(x[rows, in] W^T + b), with W packed once, at Prepare,
// into panels of kColumns output features: panel j holds, for each input
// feature c, the kColumns weights W[j*kColumns + q][c] side by side (zeros
// past `out`), so that a register block of kRows rows x kVectors vectors of
// outputs reads its weights as whole aligned vectors, one step of c after
// another. Each thread takes a contiguous range of panels and runs every
// row block against a panel before moving on, so it reads each weight once
// per chunk of rows (Chunk: every row while x fits in twice the L2).
//
// Why: inside a whole model a layer's weights come from memory. ViT-B/16's
// MLP linears hold 9.4 MB each; oneDNN ("guess") ran fc1 (197 x 768 -> 3072)
// in 2.69-2.74 ms with the weights hot and 3.19-3.24 ms after 256 MB had
// been written elsewhere, which is the time it took inside the model: the
// weight stream (at 23 GB/s here) was not overlapped with the arithmetic
// (bench/onednn:gemm --cold shows the same for its matmul). Here, while a
// panel runs, each row block prefetches its share of the thread's next panel
// into L2 (a line every kPrefetchSteps steps of its sum), so the next
// weights arrive while these are being used.
//
// In an unnamed namespace on purpose: each instruction set's translation
// unit keeps its own copy (see core/ops/avx512_symbols_test.sh).
#ifndef AI3_CORE_OPS_LINEAR_PACKED_KERNEL_H_
#define AI3_CORE_OPS_LINEAR_PACKED_KERNEL_H_

#include <omp.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <utility>

#include "core/math/epilogue.h"
#include "core/math/vectors.h"

namespace ai3 {

// One call's operands. `packed` and `bias` come from PackedLinear<T, the
// ISA's vector bytes>::Pack and PackBias (bias: null without one).
template <typename T>
struct PackedLinearProblem {
  const T* x;  // [rows, in]
  const T* packed;
  const T* bias;
  T* y;  // [rows, out]
  int64_t rows, in, out;
  Activation::Bounds<T> act;
  int64_t l2_bytes;  // one core's L2 (Chunk)
  int threads;
};

// PackedLinear<T, 64>::Run, defined in packed_avx512.cc: call only where
// KernelIsa() is kAvx512.
void PackedLinearAvx512(const PackedLinearProblem<float>& p);
void PackedLinearAvx512(const PackedLinearProblem<double>& p);

namespace {

template <typename T, int64_t kVectorBytes>
struct PackedLinear {
  using Vec = Vectors<T, kVectorBytes>;
  using V = typename Vec::V;
  static constexpr int64_t kLanes = Vec::kLanes;
  // kRows * kVectors accumulators, kVectors of weights and a broadcast:
  // 28 of AVX-512's 32 registers, 15 of AVX2's 16. Of the AVX-512 blocks
  // measured on ViT's fc1 in a standalone build (6x4, 8x3, 12x2, 14x2),
  // 8x3 ran fastest: 318 GFLOP/s hot, 306 cold.
  static constexpr int kRows = kVectorBytes == 64 ? 8 : 6;
  static constexpr int kVectors = kVectorBytes == 64 ? 3 : 2;
  static constexpr int64_t kColumns = kVectors * kLanes;
  // Steps of the sum between two prefetches of the next panel.
  static constexpr int64_t kPrefetchSteps = 4;
  static constexpr int64_t kLine = 64;

  static int64_t Panels(int64_t out) { return (out + kColumns - 1) / kColumns; }
  static int64_t PackedElements(int64_t in, int64_t out) {
    return Panels(out) * in * kColumns;
  }
  static int64_t PackedBiasElements(int64_t out) {
    return Panels(out) * kColumns;
  }

  // packed[j][c][q] = w[j*kColumns + q][c], zero past `out`. One panel at a
  // time (in * kColumns elements, within L2 for every in up to 10k), reading
  // W's rows in order.
  static void Pack(const T* w, int64_t in, int64_t out, T* packed) {
    for (int64_t j = 0; j < Panels(out); ++j) {
      T* panel = packed + j * in * kColumns;
      for (int64_t q = 0; q < kColumns; ++q) {
        const int64_t o = j * kColumns + q;
        for (int64_t c = 0; c < in; ++c) {
          panel[c * kColumns + q] = o < out ? w[o * in + c] : T(0);
        }
      }
    }
  }
  static void PackBias(const T* b, int64_t out, T* packed) {
    const int64_t n = PackedBiasElements(out);
    for (int64_t o = 0; o < n; ++o) packed[o] = o < out ? b[o] : T(0);
  }

  // Rows per chunk, a multiple of kRows. Every row at once while x takes
  // at most twice the L2: then each weight is read once, and x comes back
  // from L3 for each panel (ViT's fc2, 197 x 3072 -> 768, x 2.4 MB: 2.84 ms
  // hot, 3.13 cold, against 2.93-2.99 and 3.34 with x in chunks of half the
  // L2). Beyond that, chunks whose x fits in half the L2: at 1576 rows
  // (ViT at batch 8) fc1 ran 22.1-22.5 ms so, 22.8-24.2 in one or two chunks.
  static int64_t Chunk(const PackedLinearProblem<T>& p) {
    const int64_t row_bytes = p.in * static_cast<int64_t>(sizeof(T));
    if (p.rows * row_bytes <= 2 * p.l2_bytes)
      return std::max<int64_t>(1, p.rows);
    const int64_t fit = std::max<int64_t>(1, p.l2_bytes / 2 / row_bytes);
    return std::max<int64_t>(kRows, fit / kRows * kRows);
  }

  static void Run(const PackedLinearProblem<T>& p) {
    const int64_t panels = Panels(p.out);
    const int64_t chunk = Chunk(p);
    // Threads split the panels, or, with too few panels to go round, the
    // rows (each thread then runs every panel on its rows).
    const bool by_panels = panels >= 2 * p.threads;
#pragma omp parallel num_threads(p.threads)
    {
      const int t = omp_get_thread_num(), n = omp_get_num_threads();
      int64_t j0 = 0, j1 = panels, r0 = 0, r1 = p.rows;
      if (by_panels) {
        j0 = panels * t / n;
        j1 = panels * (t + 1) / n;
      } else {
        // Whole blocks of rows per thread.
        const int64_t blocks = (p.rows + kRows - 1) / kRows;
        r0 = std::min(p.rows, blocks * t / n * kRows);
        r1 = std::min(p.rows, blocks * (t + 1) / n * kRows);
      }
      for (int64_t c0 = r0; c0 < r1; c0 += chunk) {
        RunChunk(p, c0, std::min(r1, c0 + chunk), j0, j1);
      }
    }
  }

 private:
  // Rows [r0, r1) against panels [j0, j1).
  static void RunChunk(const PackedLinearProblem<T>& p, int64_t r0, int64_t r1,
                       int64_t j0, int64_t j1) {
    const int64_t panel_elements = p.in * kColumns;
    const int64_t lines =
        panel_elements * static_cast<int64_t>(sizeof(T)) / kLine;
    const int64_t blocks = (r1 - r0 + kRows - 1) / kRows;
    for (int64_t j = j0; j < j1; ++j) {
      const T* panel = p.packed + j * panel_elements;
      const char* next =
          j + 1 < j1 ? reinterpret_cast<const char*>(panel + panel_elements)
                     : nullptr;
      const int64_t columns = std::min(kColumns, p.out - j * kColumns);
      const T* bias = p.bias ? p.bias + j * kColumns : nullptr;
      for (int64_t b = 0; b < blocks; ++b) {
        const int64_t i = r0 + b * kRows;
        // This block's share of the next panel's lines.
        const int64_t lo = next ? lines * b / blocks : 0;
        const int64_t hi = next ? lines * (b + 1) / blocks : 0;
        const Operands o{
            p.x + i * p.in, panel,   p.in,
            bias,           p.act,   p.y + i * p.out + j * kColumns,
            p.out,          columns, next ? next + lo * kLine : nullptr,
            hi - lo};
        RowsBlock(static_cast<int>(std::min<int64_t>(kRows, r1 - i)), o);
      }
    }
  }

  struct Operands {
    const T* x;  // the block's first row; rows `in` apart
    const T* panel;
    int64_t in;
    const T* bias;  // the panel's kColumns, or null
    const Activation::Bounds<T>& act;
    T* y;  // the block's first output; rows `out` apart
    int64_t out, columns;
    const char* prefetch;  // lines to prefetch, or null
    int64_t prefetch_lines;
  };

  // Block<rows>, for 1 <= rows <= kRows (a block's row count is a
  // constant, so its accumulators stay in registers).
  static void RowsBlock(int rows, const Operands& o) {
    static constexpr auto kBlocks =
        BlockTable(std::make_integer_sequence<int, kRows>{});
    kBlocks[rows - 1](o);
  }
  template <int... I>
  static constexpr std::array<void (*)(const Operands&), sizeof...(I)>
  BlockTable(std::integer_sequence<int, I...>) {
    return {&Block<I + 1>...};
  }

  // y[kR rows, columns] = act(x[kR rows, in] panel + bias), the panel's
  // kVectors vectors of each row in registers over the whole sum.
  template <int kR>
  static void Block(const Operands& o) {
    const T* __restrict x = o.x;
    const T* __restrict w = o.panel;
    V acc[kR][kVectors];
    for (int r = 0; r < kR; ++r)
      for (int v = 0; v < kVectors; ++v) acc[r][v] = V{};
    // One step of the sum: input feature c of the kR rows.
    auto step = [&](int64_t c) [[gnu::always_inline]] {
      V wv[kVectors];
      for (int v = 0; v < kVectors; ++v) {
        wv[v] = Vec::Load(w + c * kColumns + v * kLanes);
      }
      for (int r = 0; r < kR; ++r) {
        // A scalar operand: GCC folds its broadcast into the FMA.
        const T xr = x[r * o.in + c];
        for (int v = 0; v < kVectors; ++v) acc[r][v] += xr * wv[v];
      }
    };
    // Whole groups of kPrefetchSteps steps (unrolled: a loop with a
    // variable count inside each group spilled its bounds every 4 steps),
    // each starting with a prefetch while there are lines left.
    const char* prefetch = o.prefetch;
    const char* const prefetch_end = prefetch + o.prefetch_lines * kLine;
    int64_t c = 0;
    for (; c + kPrefetchSteps <= o.in; c += kPrefetchSteps) {
      if (prefetch < prefetch_end) {
        __builtin_prefetch(prefetch, 0, 2);  // into L2
        prefetch += kLine;
      }
#pragma GCC unroll 8
      for (int64_t s = 0; s < kPrefetchSteps; ++s) step(c + s);
    }
    for (; c < o.in; ++c) step(c);
    // A block with fewer groups than its share of lines (a short sum)
    // sends the rest at once.
    for (; prefetch < prefetch_end; prefetch += kLine) {
      __builtin_prefetch(prefetch, 0, 2);
    }
    Store(acc, o);
  }

  template <int kR>
  static void Store(V (&acc)[kR][kVectors], const Operands& o) {
    const bool clamp = o.act.enabled && o.act.fn == ActivationFn::kIdentity;
    for (int r = 0; r < kR; ++r) {
      T* y = o.y + r * o.out;
      for (int v = 0; v < kVectors; ++v) {
        if (o.bias) acc[r][v] += Vec::Load(o.bias + v * kLanes);
        if (clamp) acc[r][v] = ActivateVector(o.act, acc[r][v]);
      }
      if (o.columns == kColumns) {
        for (int v = 0; v < kVectors; ++v) {
          Vec::Store(y + v * kLanes, acc[r][v]);
        }
      } else {
        alignas(kVectorBytes) T row[kColumns];
        for (int v = 0; v < kVectors; ++v) {
          Vec::Store(row + v * kLanes, acc[r][v]);
        }
        std::copy(row, row + o.columns, y);
      }
      // A function (GELU, SiLU, ...) over the row's columns, still in L1.
      if (o.act.enabled && !clamp) ApplyActivation(o.act, y, o.columns);
    }
  }
};

}  // namespace
}  // namespace ai3

#endif  // AI3_CORE_OPS_LINEAR_PACKED_KERNEL_H_
