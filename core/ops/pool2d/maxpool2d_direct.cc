// maxpool2d "direct": each output is the max over its window's in-bounds taps
// (padding never wins, as in PyTorch; a window with no in-bounds tap, possible
// only with dilation, gives -inf). NaN propagates. NCHW runs one thread per
// (n, c) plane, a row of outputs per tap; NHWC runs threads over (n, output
// row) with the channels in vector lanes, kept in registers over the window
// (ReduceTapsNhwc), or for 3-wide windows over a sliding run of column
// maxima (Sliding3Nhwc).
#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <type_traits>
#include <vector>

#include "core/ops/pool2d/pool2d.h"
#include "core/ops/pool2d/pool2d_direct.h"
#include "core/registry.h"

namespace ai3 {
namespace {

// Output columns [lo, hi) whose tap at input column ow*stride + offset is
// in [0, size).
inline void OutputColumns(int64_t offset, int64_t stride, int64_t size,
                          int64_t count, int64_t* lo, int64_t* hi) {
  *lo = offset >= 0 ? 0 : (-offset + stride - 1) / stride;
  *hi = size - 1 - offset < 0 ? 0 : (size - 1 - offset) / stride + 1;
  if (*lo > count) *lo = count;
  if (*hi > count) *hi = count;
  if (*hi < *lo) *hi = *lo;
}

struct MaxPoolLoops {
  // One output row at a time, one tap column at a time: for tap (r, s) the
  // whole row takes max(y[ow], x[r][ow*sw + s*dw - pl]) over the columns
  // where that tap is in bounds. The inner loop runs along the row, so it
  // vectorises (strided loads for stride 2), instead of one window at a time.
  template <typename T>
  static void Nchw(const MaxPool2dAttrs&, const Pool2dGeometry& g, const T* x,
                   T* y) {
    if (g.kw == 3 && g.dw == 1 && g.dh == 1 && (g.sw == 1 || g.sw == 2)) {
      Sliding3Nchw(g, x, y);
      return;
    }
    ForEachPlane(g, x, y, [&](const T* xp, T* yp) {
      for (int64_t oh = 0; oh < g.oh; ++oh) {
        const int64_t hstart = oh * g.sh - g.pt;
        int64_t r0, r1;
        PoolTapRange(hstart, g.kh, g.dh, g.h, &r0, &r1);
        T* __restrict yrow = yp + oh * g.ow;
        for (int64_t ow = 0; ow < g.ow; ++ow) {
          yrow[ow] = -std::numeric_limits<T>::infinity();
        }
        for (int64_t r = r0; r < r1; ++r) {
          const T* xrow = xp + (hstart + r * g.dh) * g.w;
          for (int64_t s = 0; s < g.kw; ++s) {
            const int64_t offset = s * g.dw - g.pl;
            int64_t lo, hi;
            OutputColumns(offset, g.sw, g.w, g.ow, &lo, &hi);
            const T* __restrict src = xrow + offset;
            for (int64_t ow = lo; ow < hi; ++ow) {
              const T v = src[ow * g.sw];
              const T m = yrow[ow];
              yrow[ow] = (v > m || v != v) ? v : m;  // NaN propagates
            }
          }
        }
      }
    });
  }

  // Output columns Sliding3Nchw fills its column buffer for at once.
  static constexpr int64_t kColumnChunk = 256;

  // NCHW, a window 3 columns wide at column stride 1 or 2, undilated
  // (GoogLeNet's and Inception's pools where the layout plan keeps NCHW).
  // Per output row, a chunk of columns at a time: each input column's max
  // over the window's rows (its "column max") goes into a buffer, whole
  // vectors along the row, with -inf for the columns outside the input
  // (padding never wins); then each vector of outputs is the max of three
  // loads from the buffer, shifted by 0, 1 and 2 columns at stride 1, or
  // the even lanes at those offsets at stride 2 (LoadStride2). The per-tap
  // loop above read the input at stride 2 an element at a time: 3x3 / 2
  // (ceil) over 1x64x111x111 on the 2-core EPYC took 0.31 ms, ONNX Runtime
  // 0.094 and NHWC 0.062.
  template <typename T>
  static void Sliding3Nchw(const Pool2dGeometry& g, const T* x, T* y) {
    using Vec = Vectors<T, 32>;  // AVX2's width: these TUs build for AVX2
    using V = typename Vec::V;
    constexpr int64_t kLanes = Vec::kLanes;
    // The last vector at stride 2 reads 2 * kLanes columns from its first.
    constexpr int64_t kBuffer = 2 * kColumnChunk + 2 * kLanes + 2;
    const MaxOp<T> op;
    const T none = op.template Init<T>();
    const int64_t sw = g.sw;
    ForEachPlane(g, x, y, [&](const T* xp, T* yp) {
      alignas(64) T cols[kBuffer];
      for (int64_t oh = 0; oh < g.oh; ++oh) {
        const int64_t hstart = oh * g.sh - g.pt;
        int64_t r0, r1;
        PoolTapRange(hstart, g.kh, 1, g.h, &r0, &r1);
        T* yrow = yp + oh * g.ow;
        for (int64_t o0 = 0; o0 < g.ow; o0 += kColumnChunk) {
          const int64_t count = std::min(kColumnChunk, g.ow - o0);
          // cols[i] is input column w0 + i; the outputs read up to
          // (count - 1) * sw + 2, the vector loads a little past it.
          const int64_t w0 = o0 * sw - g.pl;
          const int64_t filled = (count - 1) * sw + 3 + kLanes * sw;
          // No row in bounds (not with PyTorch's padding): all -inf, and
          // nothing of the input is read.
          const int64_t lo =
              r1 == r0 ? filled : std::clamp<int64_t>(-w0, 0, filled);
          const int64_t hi = std::clamp<int64_t>(g.w - w0, lo, filled);
          for (int64_t i = 0; i < lo; ++i) cols[i] = none;
          for (int64_t i = hi; i < filled; ++i) cols[i] = none;
          const T* first = xp + (hstart + r0) * g.w + w0;
          int64_t i = lo;
          for (; i + kLanes <= hi; i += kLanes) {
            V m = Vec::Load(first + i);
            for (int64_t r = 1; r < r1 - r0; ++r) {
              m = op.Combine(m, Vec::Load(first + r * g.w + i));
            }
            Vec::Store(cols + i, m);
          }
          for (; i < hi; ++i) {
            T m = first[i];
            for (int64_t r = 1; r < r1 - r0; ++r) {
              m = op.Combine(m, first[r * g.w + i]);
            }
            cols[i] = m;
          }
          T* out = yrow + o0;
          int64_t j = 0;
          if (sw == 1) {
            for (; j + kLanes <= count; j += kLanes) {
              Vec::Store(out + j,
                         op.Combine(op.Combine(Vec::Load(cols + j),
                                               Vec::Load(cols + j + 1)),
                                    Vec::Load(cols + j + 2)));
            }
          } else {
            for (; j + kLanes <= count; j += kLanes) {
              const T* c = cols + 2 * j;
              Vec::Store(out + j,
                         op.Combine(op.Combine(Vec::LoadStride2(c),
                                               Vec::LoadStride2(c + 1)),
                                    Vec::LoadStride2(c + 2)));
            }
          }
          for (; j < count; ++j) {
            const T* c = cols + j * sw;
            out[j] = op.Combine(op.Combine(c[0], c[1]), c[2]);
          }
        }
      }
    });
  }

  // max(acc, v), NaN propagating: a NaN tap wins and stays, in each of a
  // vector's lanes. For vectors, `v > acc ? v : acc` keeps acc wherever
  // either is NaN (one vmaxps), so a NaN already in acc stays; a NaN in v
  // is ORed in as all-one bits (a NaN) from the mask v != v. Three single
  // micro-ops, where the blend on (v > acc) | (v != v) used before took two
  // compares, an OR and a vblendvps (2-3 micro-ops on Intel). GoogLeNet's
  // 3x3 / 1 branch pool in NHWC, 192 channels at 28x28, on the 2-core Xeon:
  // 42.8-43.1 us before, 30.7-31.5 after; its 13 pools, 0.57 -> 0.47 ms a
  // forward. (Taking two taps' NaN masks from one vcmpunordps in
  // Sliding3Nhwc measured slower, 34.7 us: more registers live per walk.)
  template <typename T>
  struct MaxOp {
    template <typename V>
    V Init() const {
      return V{} + -std::numeric_limits<T>::infinity();
    }
    template <typename V>
    V Combine(V acc, V v) const {
      if constexpr (std::is_same_v<V, T>) {
        return (v > acc || v != v) ? v : acc;
      } else {
        using Mask = decltype(v != v);
        return reinterpret_cast<V>(reinterpret_cast<Mask>(v > acc ? v : acc) |
                                   (v != v));
      }
    }
    template <typename V>
    V Finish(V acc) const {
      return acc;
    }
  };

  // The rows a sliding window may read at once (Sliding3Nhwc).
  static constexpr int64_t kMaxSlidingRows = 8;

  // NHWC, a window 3 columns wide at column stride 1 or 2, undilated
  // (GoogLeNet's 3x3 / stride 1 branch pools and 3x3 / stride 2 pools,
  // ResNet's stem pool). Walking an output row, each input column's max
  // over the window's rows (its "column max") is computed once and kept in
  // registers for the windows that share it: per output vector kh loads
  // at stride 1 (2 * kh at stride 2) instead of 3 * kh. Columns outside the
  // input are -inf (padding never wins). Channels: vectors, then scalars.
  template <typename T>
  static void Sliding3Nhwc(const Pool2dGeometry& g, const T* x, T* y) {
    using Vec = Vectors<T, 32>;  // AVX2's width: these TUs build for AVX2
    const MaxOp<T> op;
    ForEachOutputRow(g, [&](int64_t n, int64_t oh) {
      const int64_t hstart = oh * g.sh - g.pt;
      int64_t r0, r1;
      PoolTapRange(hstart, g.kh, g.dh, g.h, &r0, &r1);
      const T* rows[kMaxSlidingRows];
      const int64_t row_count = r1 - r0;
      for (int64_t r = r0; r < r1; ++r) {
        rows[r - r0] = x + n * g.xs.n + (hstart + r) * g.xs.h;
      }
      T* yrow = y + n * g.ys.n + oh * g.ys.h;
      // kVecs adjacent channel blocks (vectors, or one scalar lane) along
      // the row, together, so that a walk uses whole 64-byte lines of the
      // window's rows. One vector per walk read each line once per vector
      // in it, the rows having left L1 by the next walk (64 channels: 3
      // rows of 112 pixels, 86 KB). ResNet's stem pool, 3x3 / 2 over
      // 8x112x112x64 on the 2-core EPYC: 1.68 ms before, 0.85-1.18 after
      // (PyTorch channels-last 1.5-2.6, ONNX Runtime in NCHW 2.3-3.4).
      auto walk = [&](auto lane, auto vecs, int64_t k) {
        using L = decltype(lane);
        constexpr int kVecs = decltype(vecs)::value;
        constexpr int64_t kStep = std::is_same_v<L, T> ? 1 : Vec::kLanes;
        struct Columns {
          L v[kVecs];
        };
        auto load = [&](const T* p) {
          if constexpr (std::is_same_v<L, T>) {
            return *p;
          } else {
            return Vec::Load(p);
          }
        };
        const L none = op.template Init<L>();
        auto column = [&](int64_t w) {
          Columns m;
          for (int i = 0; i < kVecs; ++i) m.v[i] = none;
          if (w < 0 || w >= g.w) return m;
          for (int64_t r = 0; r < row_count; ++r) {
            const T* p = rows[r] + w * g.xs.w + k;
            for (int i = 0; i < kVecs; ++i) {
              m.v[i] = op.Combine(m.v[i], load(p + i * kStep));
            }
          }
          return m;
        };
        auto store = [&](int64_t ow, const Columns& a, const Columns& b,
                         const Columns& c) {
          T* p = yrow + ow * g.ys.w + k;
          for (int i = 0; i < kVecs; ++i) {
            const L v = op.Combine(op.Combine(a.v[i], b.v[i]), c.v[i]);
            if constexpr (std::is_same_v<L, T>) {
              p[i] = v;
            } else {
              Vec::Store(p + i * kStep, v);
            }
          }
        };
        const int64_t w0 = -g.pl;  // window ow covers w0 + ow * sw + {0,1,2}
        if (g.sw == 1) {
          Columns a = column(w0), b = column(w0 + 1);
          for (int64_t ow = 0; ow < g.ow; ++ow) {
            const Columns c = column(w0 + ow + 2);
            store(ow, a, b, c);
            a = b;
            b = c;
          }
        } else {
          Columns a = column(w0);
          for (int64_t ow = 0; ow < g.ow; ++ow) {
            const Columns b = column(w0 + 2 * ow + 1),
                          c = column(w0 + 2 * ow + 2);
            store(ow, a, b, c);
            a = c;
          }
        }
      };
      using One = std::integral_constant<int, 1>;
      using Four = std::integral_constant<int, 4>;
      int64_t k = 0;
      for (; k + 4 * Vec::kLanes <= g.c; k += 4 * Vec::kLanes) {
        walk(typename Vec::V{}, Four{}, k);
      }
      for (; k + Vec::kLanes <= g.c; k += Vec::kLanes) {
        walk(typename Vec::V{}, One{}, k);
      }
      for (; k < g.c; ++k) walk(T{}, One{}, k);
    });
  }

  template <typename T>
  static void Nhwc(const MaxPool2dAttrs&, const Pool2dGeometry& g, const T* x,
                   T* y) {
    if (g.kw == 3 && g.dw == 1 && g.dh == 1 && (g.sw == 1 || g.sw == 2) &&
        g.kh <= kMaxSlidingRows) {
      Sliding3Nhwc(g, x, y);
      return;
    }
    ForEachOutputRow(g, [&](int64_t n, int64_t oh) {
      const int64_t hstart = oh * g.sh - g.pt;
      int64_t r0, r1;
      PoolTapRange(hstart, g.kh, g.dh, g.h, &r0, &r1);
      for (int64_t ow = 0; ow < g.ow; ++ow) {
        const int64_t wstart = ow * g.sw - g.pl;
        int64_t s0, s1;
        PoolTapRange(wstart, g.kw, g.dw, g.w, &s0, &s1);
        const T* image = x + n * g.xs.n;
        ReduceTapsNhwc(g.c, y + n * g.ys.n + oh * g.ys.h + ow * g.ys.w,
                       MaxOp<T>{}, [&](auto&& fn) {
                         for (int64_t r = r0; r < r1; ++r) {
                           for (int64_t s = s0; s < s1; ++s) {
                             fn(image + (hstart + r * g.dh) * g.xs.h +
                                (wstart + s * g.dw) * g.xs.w);
                           }
                         }
                       });
      }
    });
  }
};

AI3_REGISTER_ALGORITHM(MaxPool2dAttrs, "direct", Device::kCPU,
                       PoolDirect<MaxPool2dAttrs, MaxPoolLoops>);

}  // namespace
}  // namespace ai3
