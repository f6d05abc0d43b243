// conv2d "winograd": Winograd minimal filtering F(4x4, 3x3) (Lavin & Gray,
// "Fast Algorithms for Convolutional Neural Networks", 2015).
//
// The output is cut into 4x4 tiles; each needs a 6x6 input tile (stride 4,
// overlapping by 2). With the standard matrices
//   Bᵀ = [[4, 0,-5, 0, 1, 0],      G = [[ 1/4,     0,    0],
//         [0,-4,-4, 1, 1, 0],           [-1/6,  -1/6, -1/6],
//         [0, 4,-4,-1, 1, 0],           [-1/6,   1/6, -1/6],
//         [0,-2,-1, 2, 1, 0],           [1/24,  1/12,  1/6],
//         [0, 2,-1,-2, 1, 0],           [1/24, -1/12,  1/6],
//         [0, 4, 0,-5, 0, 1]]           [   0,     0,    1]]
//   Aᵀ = [[1, 1, 1, 1, 1, 0],
//         [0, 1,-1, 2,-2, 0],
//         [0, 1, 1, 4, 4, 0],
//         [0, 1,-1, 8,-8, 1]]
// one output tile is Y = Aᵀ [ Σ_c (G g_kc Gᵀ) ⊙ (Bᵀ d_c B) ] A. The sum over c
// at each of the 36 tile positions is a matrix product, so:
//   Prepare: U[pos][group][kg][cg] = (G g Gᵀ)[pos], once (in double, rounded).
//   Run, per chunk of tiles (all images' tiles numbered together):
//     V[pos][c][tile] = (Bᵀ d B)[pos]                      (OpenMP)
//     M[pos][k][tile] = U[pos] (kg x cg) x V[pos] (cg x tiles), per group
//                       (ai3::Gemm; a plain loop for tiny grouped matrices)
//     y = Aᵀ M A + bias, tiles clipped at the right/bottom edges (OpenMP)
// Both transforms take a block of tiles at once, one vector register of T
// per matrix element (tile axis = lanes), so V and M are read and written a
// whole register at a time; only gathering the input tiles and scattering
// the output tiles is done per tile. Padding (any, asymmetric included) is
// read as zeros while gathering; both layouts are indexed through
// ImageStridesOf.
//
// The workspace holds V and M for one chunk: 36 * (C + K) * chunk_tiles
// elements, the chunk sized to about kChunkBudgetBytes (at least
// kMinChunkTiles tiles, at most every tile of the batch, rounded up to whole
// vectors; lanes past the last tile are computed and dropped).
//
// Accuracy: F(4x4,3x3) loses a few bits against direct convolution in
// float32 (the transforms have entries up to 8 and the 1/6, 1/24 of G are not
// exact in binary); the errors stay within the test's 1e-4 relative bound.
#include <algorithm>
#include <cstring>
#include <memory>
#include <string>

#include "core/buffer.h"
#include "core/math/gemm.h"
#include "core/ops/conv2d/conv2d.h"

namespace ai3 {
namespace {

constexpr int64_t kTile = 6;  // input tile side (m + r - 1)
constexpr int64_t kOut = 4;   // output tile side (m)
constexpr int64_t kPos = 36;  // positions per transformed tile
// V and M of one chunk. Each chunk reads all of U (36 * C * K values, 36 MB
// at C = K = 512), so fewer, larger chunks save that traffic until V and M
// outgrow the 32 MB L3. Measured on the 2-core EPYC (ms, best of 2 runs of
// 10, budgets 8/16/32/64 MB): 10x256x28x28 27.6/27.2/21.9/21.4, 10x512x14x14
// 30.8/28.1/21.2/23.9; 10x64x56x56, 10x128x28x28 and 10x256x14x14 within
// the noise of each other; 128 MB was slower again.
constexpr size_t kChunkBudgetBytes = size_t{32} << 20;
constexpr int64_t kMinChunkTiles = 64;

constexpr double kG[6][3] = {
    {1.0 / 4, 0, 0},
    {-1.0 / 6, -1.0 / 6, -1.0 / 6},
    {-1.0 / 6, 1.0 / 6, -1.0 / 6},
    {1.0 / 24, 1.0 / 12, 1.0 / 6},
    {1.0 / 24, -1.0 / 12, 1.0 / 6},
    {0, 0, 1},
};

// L tiles go through the transforms at once, as one AVX2 register of T (8
// floats, 4 doubles) per matrix element: V and M keep the tile axis
// innermost, so each element of L tiles is one contiguous vector there. GCC
// and Clang vector extensions make that whole-register arithmetic whatever
// the optimiser decides about loops, from one template for both dtypes.
template <typename T>
struct Lanes {
  typedef T V __attribute__((vector_size(32)));
  static constexpr int64_t kN = 32 / sizeof(T);
  // memcpy: unaligned and alias-safe; one vmovups/vmovupd.
  static V Load(const T* p) {
    V v;
    std::memcpy(&v, p, sizeof(V));
    return v;
  }
  static void Store(T* p, const V& v) { std::memcpy(p, &v, sizeof(V)); }
};

// o[i * os] = (Bᵀ d)[i] for the 6-vector d[i * s] (lanes: separate tiles).
template <typename T, typename V = typename Lanes<T>::V>
inline void BtTransform(const V* d, int64_t s, V* o, int64_t os) {
  const V d0 = d[0], d1 = d[s], d2 = d[2 * s], d3 = d[3 * s], d4 = d[4 * s],
          d5 = d[5 * s];
  o[0] = T(4) * d0 - T(5) * d2 + d4;
  o[os] = -T(4) * d1 - T(4) * d2 + d3 + d4;
  o[2 * os] = T(4) * d1 - T(4) * d2 - d3 + d4;
  o[3 * os] = -T(2) * d1 - d2 + T(2) * d3 + d4;
  o[4 * os] = T(2) * d1 - d2 - T(2) * d3 + d4;
  o[5 * os] = T(4) * d1 - T(5) * d3 + d5;
}

// o[i * os] = (Aᵀ m)[i], a 6-vector to a 4-vector, strided as BtTransform.
template <typename T, typename V = typename Lanes<T>::V>
inline void AtTransform(const V* m, int64_t s, V* o, int64_t os) {
  const V m0 = m[0], m1 = m[s], m2 = m[2 * s], m3 = m[3 * s], m4 = m[4 * s],
          m5 = m[5 * s];
  o[0] = m0 + m1 + m2 + m3 + m4;
  o[os] = m1 - m2 + T(2) * (m3 - m4);
  o[2 * os] = m1 + m2 + T(4) * (m3 + m4);
  o[3 * os] = m1 - m2 + T(8) * (m3 - m4) + m5;
}

int64_t RoundUp(int64_t v, int64_t multiple) {
  return (v + multiple - 1) / multiple * multiple;
}

struct Tiling {
  int64_t th, tw;  // tiles per image, down and across
  int64_t total;   // tiles in the batch
  int64_t chunk;   // tiles per chunk (a multiple of the lanes)
};

// Where tile `tile` (numbered across the whole batch) starts: its image and
// the top-left output pixel of its 4x4 block.
struct TileOrigin {
  int64_t n, oh0, ow0;
};
inline TileOrigin OriginOf(const Tiling& t, int64_t tile) {
  const int64_t per_image = t.th * t.tw;
  const int64_t rem = tile % per_image;
  return {tile / per_image, (rem / t.tw) * kOut, (rem % t.tw) * kOut};
}
// The tile after o: the lanes of a block step through tiles this way, one
// division per block instead of two per lane.
inline void Advance(const Tiling& t, TileOrigin& o) {
  o.ow0 += kOut;
  if (o.ow0 < t.tw * kOut) return;
  o.ow0 = 0;
  o.oh0 += kOut;
  if (o.oh0 < t.th * kOut) return;
  o.oh0 = 0;
  ++o.n;
}

Tiling TilingOf(const Conv2dGeometry& g, size_t elem_size) {
  Tiling t;
  t.th = (g.oh + kOut - 1) / kOut;
  t.tw = (g.ow + kOut - 1) / kOut;
  t.total = g.n * t.th * t.tw;
  const int64_t lanes = 32 / static_cast<int64_t>(elem_size);
  const int64_t per_tile = kPos * (g.c + g.k) * static_cast<int64_t>(elem_size);
  const int64_t budget_tiles =
      static_cast<int64_t>(kChunkBudgetBytes) / std::max<int64_t>(per_tile, 1);
  if (t.total == 0) {
    t.chunk = 0;
    return t;
  }
  const int64_t most =
      std::min(t.total, std::max(kMinChunkTiles, budget_tiles));
  // Equal chunks: every chunk reads all of U once, so a small last chunk
  // would pay that for few tiles (and multiply thin matrices).
  const int64_t chunks = (t.total + most - 1) / most;
  t.chunk = RoundUp((t.total + chunks - 1) / chunks, lanes);
  return t;
}

class WinogradKernel : public Conv2dKernelBase<WinogradKernel> {
 public:
  WinogradKernel(const Conv2dAttrs& attrs, const std::vector<Tensor>& params)
      : Conv2dKernelBase(attrs, params) {
    if (attrs.dtype == DType::kFloat64) {
      TransformWeights<double>();
    } else {
      TransformWeights<float>();
    }
  }

  // V and M of one chunk, the tile axis padded to whole lanes.
  size_t WorkspaceBytes(const Shape& input_shape) const override {
    const Conv2dGeometry g = GeometryOf(attrs_, input_shape);
    const size_t elem = SizeOf(attrs_.dtype);
    const Tiling t = TilingOf(g, elem);
    return static_cast<size_t>(kPos * (g.c + g.k) * t.chunk) * elem;
  }

  template <typename T>
  void RunTyped(const Conv2dGeometry& g, const T* x, T* y,
                void* workspace) const {
    using V = typename Lanes<T>::V;
    constexpr int64_t L = Lanes<T>::kN;
    const Tiling tiling = TilingOf(g, sizeof(T));
    const ImageStrides xs = ImageStridesOf({g.n, g.c, g.h, g.w}, g.layout);
    const ImageStrides ys = ImageStridesOf({g.n, g.k, g.oh, g.ow}, g.layout);
    const T* u = u_.as<const T>();
    const T* b = bias<T>();
    T* v = static_cast<T*>(workspace);
    T* m = v + kPos * g.c * tiling.chunk;
    const bool use_gemm = g.groups == 1 || g.cg * g.kg >= 64;
    const auto act = attrs_.activation.As<T>();

    for (int64_t t0 = 0; t0 < tiling.total; t0 += tiling.chunk) {
      const int64_t nt = std::min(tiling.chunk, tiling.total - t0);
      const int64_t ntp = RoundUp(nt, L);  // V's and M's row length
      const int64_t blocks = ntp / L;

      // V[pos][c][t] = Bᵀ d B, L tiles at a time. Lanes past the last tile
      // transform zeros, so every row of V is fully written.
#pragma omp parallel for collapse(2) schedule(static)
      for (int64_t c = 0; c < g.c; ++c) {
        for (int64_t blk = 0; blk < blocks; ++blk) {
          const int64_t t = blk * L;
          alignas(32) T d[kPos * L];  // [i][j][lane]
          TileOrigin o = OriginOf(tiling, t0 + t);
          for (int64_t l = 0; l < L; Advance(tiling, o), ++l) {
            if (t + l >= nt) {
              for (int64_t e = 0; e < kPos; ++e) d[e * L + l] = T(0);
              continue;
            }
            const int64_t row0 = o.oh0 - g.ph, col0 = o.ow0 - g.pw;
            // The part of the 6x6 tile inside the image; the rest is padding.
            const int64_t i0 = std::max<int64_t>(0, -row0);
            const int64_t i1 = std::min<int64_t>(kTile, g.h - row0);
            const int64_t j0 = std::max<int64_t>(0, -col0);
            const int64_t j1 = std::min<int64_t>(kTile, g.w - col0);
            if (i0 > 0 || i1 < kTile || j0 > 0 || j1 < kTile) {
              for (int64_t e = 0; e < kPos; ++e) d[e * L + l] = T(0);
            }
            // Offsets stay integers: row0/col0 may be negative, and a
            // pointer before the tensor would be undefined even unread.
            const T* xc = x + o.n * xs.n + c * xs.c;
            for (int64_t i = i0; i < i1; ++i) {
              const int64_t row = (row0 + i) * xs.h + col0 * xs.w;
              for (int64_t j = j0; j < j1; ++j) {
                d[(i * kTile + j) * L + l] = xc[row + j * xs.w];
              }
            }
          }
          V dv[kPos], tmp[kPos];  // d, then Bᵀ d: [i][j]
          for (int64_t e = 0; e < kPos; ++e) dv[e] = Lanes<T>::Load(d + e * L);
          for (int64_t j = 0; j < kTile; ++j) {
            BtTransform<T>(dv + j, kTile, tmp + j, kTile);
          }
          // Row i of (Bᵀ d) B holds positions i*6 .. i*6+5.
          for (int64_t i = 0; i < kTile; ++i) {
            V o[kTile];
            BtTransform<T>(tmp + i * kTile, 1, o, 1);
            for (int64_t j = 0; j < kTile; ++j) {
              Lanes<T>::Store(v + ((i * kTile + j) * g.c + c) * ntp + t, o[j]);
            }
          }
        }
      }

      // M[pos][k][t] = U[pos][group] x V[pos][group].
      if (use_gemm) {
        // One product after another, each threaded by BLIS. Side by side
        // (an OpenMP loop over the products, each Gemm then on its own
        // thread) measured 6-20% faster at batch 1 (1x512x7x7: 2.7 vs 3.3
        // ms; level at batch 10), but allocates: BLIS 0.9 opens a nested
        // one-thread OpenMP region in every call, and libgomp mallocs a team
        // for each (//core:model_alloc_test: 288 allocations a forward, the
        // AI3_ALLOC_TRACE stacks ending in GOMP_parallel under bli_gemm_ex).
        // A register-blocked product of our own (6x16 block, U unpacked)
        // side by side was allocation free but no faster than this.
        for (int64_t p = 0; p < kPos; ++p) {
          for (int64_t grp = 0; grp < g.groups; ++grp) {
            Gemm<T>(false, false, g.kg, nt, g.cg, T(1),
                    u + (p * g.groups + grp) * g.kg * g.cg, g.cg,
                    v + (p * g.c + grp * g.cg) * ntp, ntp, T(0),
                    m + (p * g.k + grp * g.kg) * ntp, ntp);
          }
        }
      } else {
        // Tiny per-group matrices (depthwise and the like): one GEMM call
        // per (position, group) would cost more than the arithmetic.
#pragma omp parallel for collapse(2) schedule(static)
        for (int64_t p = 0; p < kPos; ++p) {
          for (int64_t k = 0; k < g.k; ++k) {
            const int64_t grp = k / g.kg;
            const T* uk = u + ((p * g.groups + grp) * g.kg + k % g.kg) * g.cg;
            const T* vg = v + (p * g.c + grp * g.cg) * ntp;
            T* mk = m + (p * g.k + k) * ntp;
            for (int64_t t = 0; t < nt; ++t) mk[t] = T(0);
            for (int64_t c = 0; c < g.cg; ++c) {
              const T w = uk[c];
              const T* vc = vg + c * ntp;
              for (int64_t t = 0; t < nt; ++t) mk[t] += w * vc[t];
            }
          }
        }
      }

      // y = Aᵀ M A + bias, L tiles at a time, clipped to the output. Lanes
      // past nt read M's padding (never written by the GEMM) and are dropped.
#pragma omp parallel for collapse(2) schedule(static)
      for (int64_t k = 0; k < g.k; ++k) {
        for (int64_t blk = 0; blk < blocks; ++blk) {
          const int64_t t = blk * L;
          const int64_t ps = g.k * ntp;  // from one position to the next
          const T* mk = m + k * ntp + t;
          V mv[kPos], tmp[kOut * kTile];  // M, then Aᵀ M: [i][j]
          for (int64_t p = 0; p < kPos; ++p)
            mv[p] = Lanes<T>::Load(mk + p * ps);
          for (int64_t j = 0; j < kTile; ++j) {
            AtTransform<T>(mv + j, kTile, tmp + j, kTile);
          }
          alignas(32) T out[kOut * kOut * L];  // [i][j][lane]
          for (int64_t i = 0; i < kOut; ++i) {
            V o[kOut];
            AtTransform<T>(tmp + i * kTile, 1, o, 1);
            for (int64_t j = 0; j < kOut; ++j) {
              Lanes<T>::Store(out + (i * kOut + j) * L, o[j]);
            }
          }
          const T bk = b ? b[k] : T(0);
          for (int64_t e = 0; e < kOut * kOut * L; ++e) out[e] += bk;
          ApplyActivation(act, out, kOut * kOut * L);  // vectorised
          const int64_t lanes = std::min(L, nt - t);
          TileOrigin o = OriginOf(tiling, t0 + t);
          for (int64_t l = 0; l < lanes; Advance(tiling, o), ++l) {
            const int64_t rows = std::min(kOut, g.oh - o.oh0);
            const int64_t cols = std::min(kOut, g.ow - o.ow0);
            T* yk = y + o.n * ys.n + k * ys.c;
            for (int64_t i = 0; i < rows; ++i) {
              T* row = yk + (o.oh0 + i) * ys.h + o.ow0 * ys.w;
              for (int64_t j = 0; j < cols; ++j) {
                row[j * ys.w] = out[(i * kOut + j) * L + l];
              }
            }
          }
        }
      }
    }
  }

 private:
  // U[pos][group][kg][cg] = (G g Gᵀ)[pos], computed in double.
  template <typename T>
  void TransformWeights() {
    const int64_t k_total = attrs_.out_channels;
    const int64_t cg = attrs_.in_channels_per_group();
    const int64_t kg = attrs_.out_channels_per_group();
    const int64_t groups = attrs_.groups;
    u_ = Buffer(static_cast<size_t>(kPos * k_total * cg) * sizeof(T));
    const T* w = weight<T>();
    T* u = u_.as<T>();
#pragma omp parallel for collapse(2) schedule(static)
    for (int64_t k = 0; k < k_total; ++k) {
      for (int64_t c = 0; c < cg; ++c) {
        const T* g3 = w + (k * cg + c) * 9;
        double gg[6][3];  // G g
        for (int a = 0; a < 6; ++a) {
          for (int s = 0; s < 3; ++s) {
            double acc = 0;
            for (int r = 0; r < 3; ++r) acc += kG[a][r] * double(g3[r * 3 + s]);
            gg[a][s] = acc;
          }
        }
        const int64_t grp = k / kg;
        for (int a = 0; a < 6; ++a) {
          for (int bcol = 0; bcol < 6; ++bcol) {
            double acc = 0;
            for (int s = 0; s < 3; ++s) acc += gg[a][s] * kG[bcol][s];
            const int64_t p = a * 6 + bcol;
            u[((p * groups + grp) * kg + k % kg) * cg + c] =
                static_cast<T>(acc);
          }
        }
      }
    }
  }

  Buffer u_;
};

class Winograd : public KernelAlgorithm<Conv2dAttrs, WinogradKernel> {
 public:
  std::string WhyNot(const Conv2dAttrs& a) const override {
    if (a.kernel_h != 3 || a.kernel_w != 3) {
      return "winograd F(4x4,3x3) needs a 3x3 kernel, got " +
             std::to_string(a.kernel_h) + "x" + std::to_string(a.kernel_w);
    }
    return WhyNotUnitStrideDilation(a, "winograd F(4x4,3x3)");
  }
};

AI3_REGISTER_ALGORITHM(Conv2dAttrs, "winograd", Device::kCPU, Winograd);

}  // namespace
}  // namespace ai3
