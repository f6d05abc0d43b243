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
// Padding (any, asymmetric included) is read as zeros while loading the
// input tiles; both layouts are indexed through ImageStridesOf.
//
// The workspace holds V and M for one chunk: 36 * (C + K) * chunk_tiles
// elements, the chunk sized to about kChunkBudgetBytes (at least
// kMinChunkTiles tiles, at most every tile of the batch).
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

constexpr int64_t kTile = 6;     // input tile side (m + r - 1)
constexpr int64_t kOut = 4;      // output tile side (m)
constexpr int64_t kPos = 36;     // positions per transformed tile
constexpr size_t kChunkBudgetBytes = size_t{16} << 20;
constexpr int64_t kMinChunkTiles = 64;

constexpr double kG[6][3] = {
    {1.0 / 4, 0, 0},
    {-1.0 / 6, -1.0 / 6, -1.0 / 6},
    {-1.0 / 6, 1.0 / 6, -1.0 / 6},
    {1.0 / 24, 1.0 / 12, 1.0 / 6},
    {1.0 / 24, -1.0 / 12, 1.0 / 6},
    {0, 0, 1},
};

// o = Bᵀ d for one 6-vector (elements `s` apart in, `os` apart out).
template <typename T>
inline void BtTransform(const T* d, int64_t s, T* o, int64_t os) {
  const T d0 = d[0], d1 = d[s], d2 = d[2 * s], d3 = d[3 * s], d4 = d[4 * s],
          d5 = d[5 * s];
  o[0] = T(4) * d0 - T(5) * d2 + d4;
  o[os] = -T(4) * d1 - T(4) * d2 + d3 + d4;
  o[2 * os] = T(4) * d1 - T(4) * d2 - d3 + d4;
  o[3 * os] = -T(2) * d1 - d2 + T(2) * d3 + d4;
  o[4 * os] = T(2) * d1 - d2 - T(2) * d3 + d4;
  o[5 * os] = T(4) * d1 - T(5) * d3 + d5;
}

// o = Aᵀ m for one 6-vector -> 4-vector.
template <typename T>
inline void AtTransform(const T* m, int64_t s, T* o, int64_t os) {
  const T m0 = m[0], m1 = m[s], m2 = m[2 * s], m3 = m[3 * s], m4 = m[4 * s],
          m5 = m[5 * s];
  o[0] = m0 + m1 + m2 + m3 + m4;
  o[os] = m1 - m2 + T(2) * (m3 - m4);
  o[2 * os] = m1 + m2 + T(4) * (m3 + m4);
  o[3 * os] = m1 - m2 + T(8) * (m3 - m4) + m5;
}

struct Tiling {
  int64_t th, tw;         // tiles per image, down and across
  int64_t total;          // tiles in the batch
  int64_t chunk;          // tiles per chunk
};

Tiling TilingOf(const Conv2dGeometry& g, size_t elem_size) {
  Tiling t;
  t.th = (g.oh + kOut - 1) / kOut;
  t.tw = (g.ow + kOut - 1) / kOut;
  t.total = g.n * t.th * t.tw;
  const int64_t per_tile =
      kPos * (g.c + g.k) * static_cast<int64_t>(elem_size);
  const int64_t budget_tiles =
      static_cast<int64_t>(kChunkBudgetBytes) / std::max<int64_t>(per_tile, 1);
  t.chunk = std::min(t.total, std::max(kMinChunkTiles, budget_tiles));
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

  size_t WorkspaceBytes(const Shape& input_shape) const override {
    const Conv2dGeometry g = GeometryOf(attrs_, input_shape);
    const size_t elem = SizeOf(attrs_.dtype);
    const Tiling t = TilingOf(g, elem);
    return static_cast<size_t>(kPos * (g.c + g.k) * t.chunk) * elem;
  }

  template <typename T>
  void RunTyped(const Conv2dGeometry& g, const T* x, T* y,
                void* workspace) const {
    const Tiling tiling = TilingOf(g, sizeof(T));
    const int64_t tiles_per_image = tiling.th * tiling.tw;
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
      // V[pos][c][t] = Bᵀ d B.
#pragma omp parallel for collapse(2) schedule(static)
      for (int64_t c = 0; c < g.c; ++c) {
        for (int64_t t = 0; t < nt; ++t) {
          const int64_t tile = t0 + t;
          const int64_t n = tile / tiles_per_image;
          const int64_t rem = tile % tiles_per_image;
          const int64_t row0 = (rem / tiling.tw) * kOut - g.ph;
          const int64_t col0 = (rem % tiling.tw) * kOut - g.pw;
          const T* xc = x + n * xs.n + c * xs.c;
          T d[kTile][kTile];
          if (row0 >= 0 && row0 + kTile <= g.h && col0 >= 0 &&
              col0 + kTile <= g.w) {
            for (int64_t i = 0; i < kTile; ++i) {
              const T* row = xc + (row0 + i) * xs.h + col0 * xs.w;
              for (int64_t j = 0; j < kTile; ++j) d[i][j] = row[j * xs.w];
            }
          } else {
            for (int64_t i = 0; i < kTile; ++i) {
              const int64_t ih = row0 + i;
              for (int64_t j = 0; j < kTile; ++j) {
                const int64_t iw = col0 + j;
                d[i][j] = (ih >= 0 && ih < g.h && iw >= 0 && iw < g.w)
                              ? xc[ih * xs.h + iw * xs.w]
                              : T(0);
              }
            }
          }
          T tmp[kTile][kTile];
          for (int64_t j = 0; j < kTile; ++j) {
            BtTransform(&d[0][j], kTile, &tmp[0][j], kTile);
          }
          T out[kTile][kTile];
          for (int64_t i = 0; i < kTile; ++i) {
            BtTransform(&tmp[i][0], 1, &out[i][0], 1);
          }
          T* vct = v + c * nt + t;
          for (int64_t p = 0; p < kPos; ++p) {
            vct[p * g.c * nt] = (&out[0][0])[p];
          }
        }
      }

      // M[pos][k][t] = U[pos][group] x V[pos][group].
      if (use_gemm) {
        for (int64_t p = 0; p < kPos; ++p) {
          for (int64_t grp = 0; grp < g.groups; ++grp) {
            Gemm<T>(false, false, g.kg, nt, g.cg, T(1),
                    u + (p * g.groups + grp) * g.kg * g.cg, g.cg,
                    v + (p * g.c + grp * g.cg) * nt, nt, T(0),
                    m + (p * g.k + grp * g.kg) * nt, nt);
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
            const T* vg = v + (p * g.c + grp * g.cg) * nt;
            T* mk = m + (p * g.k + k) * nt;
            for (int64_t t = 0; t < nt; ++t) mk[t] = T(0);
            for (int64_t c = 0; c < g.cg; ++c) {
              const T w = uk[c];
              const T* vc = vg + c * nt;
              for (int64_t t = 0; t < nt; ++t) mk[t] += w * vc[t];
            }
          }
        }
      }

      // y = Aᵀ M A + bias, clipped to the output.
#pragma omp parallel for collapse(2) schedule(static)
      for (int64_t k = 0; k < g.k; ++k) {
        for (int64_t t = 0; t < nt; ++t) {
          const int64_t tile = t0 + t;
          const int64_t n = tile / tiles_per_image;
          const int64_t rem = tile % tiles_per_image;
          const int64_t oh0 = (rem / tiling.tw) * kOut;
          const int64_t ow0 = (rem % tiling.tw) * kOut;
          T mm[kTile][kTile];
          const T* mkt = m + k * nt + t;
          for (int64_t p = 0; p < kPos; ++p) {
            (&mm[0][0])[p] = mkt[p * g.k * nt];
          }
          T tmp[kOut][kTile];
          for (int64_t j = 0; j < kTile; ++j) {
            AtTransform(&mm[0][j], kTile, &tmp[0][j], kTile);
          }
          T out[kOut][kOut];
          for (int64_t i = 0; i < kOut; ++i) {
            AtTransform(&tmp[i][0], 1, &out[i][0], 1);
          }
          const T bk = b ? b[k] : T(0);
          const int64_t rows = std::min(kOut, g.oh - oh0);
          const int64_t cols = std::min(kOut, g.ow - ow0);
          T* yk = y + n * ys.n + k * ys.c;
          for (int64_t i = 0; i < rows; ++i) {
            T* row = yk + (oh0 + i) * ys.h + ow0 * ys.w;
            for (int64_t j = 0; j < cols; ++j) {
              row[j * ys.w] = act(out[i][j] + bk);
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
            u[((p * groups + grp) * kg + k % kg) * cg + c] = static_cast<T>(acc);
          }
        }
      }
    }
  }

  Buffer u_;
};

class Winograd : public Algorithm<Conv2dAttrs> {
 public:
  std::string WhyNot(const Conv2dAttrs& a) const override {
    if (a.kernel_h != 3 || a.kernel_w != 3) {
      return "winograd F(4x4,3x3) needs a 3x3 kernel, got " +
             std::to_string(a.kernel_h) + "x" + std::to_string(a.kernel_w);
    }
    if (a.stride_h != 1 || a.stride_w != 1) {
      return "winograd F(4x4,3x3) needs stride 1, got " +
             std::to_string(a.stride_h) + "," + std::to_string(a.stride_w);
    }
    if (a.dilation_h != 1 || a.dilation_w != 1) {
      return "winograd F(4x4,3x3) needs dilation 1, got " +
             std::to_string(a.dilation_h) + "," + std::to_string(a.dilation_w);
    }
    return {};
  }

  int Preference(const Conv2dAttrs& a) const override {
    return a.in_channels_per_group() >= 16 && a.out_channels_per_group() >= 16
               ? 30
               : 1;
  }

  std::unique_ptr<Kernel> Prepare(
      const Conv2dAttrs& attrs,
      const std::vector<Tensor>& params) const override {
    return std::make_unique<WinogradKernel>(attrs, params);
  }
};

AI3_REGISTER_ALGORITHM(Conv2dAttrs, "winograd", Device::kCPU, Winograd);

}  // namespace
}  // namespace ai3
