// conv2d "smm" on CUDA: the seed paper's Scalar-Matrix-Multiplication
// convolution with zero packing, ai3's own kernel.
//
// Zero packing: one pass copies the input into a zero-padded buffer (the
// layer's device workspace, kept across calls), trimmed to the rows and
// columns an output reads, so the main kernel has no bounds checks.
// Then every output plane is a sum of scalar x matrix products,
//   Y[n, k] = bias[k] + sum over c, r, s of w[k, c, r, s] * Xpad[n, c0 + c](r,
//   s),
// Xpad(r, s) being the padded plane shifted by (r*dh, s*dw) and sampled with
// the stride. A block owns one (n, k) and kThreads output pixels; the
// scalars w[k, c, :, :] are staged in shared memory a chunk of channels at a
// time, so every thread of the block reads each scalar from shared memory
// and streams its shifted matrix elements from global memory.
//
// NCHW only, as on the CPU: the algorithm works on whole channel planes.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/cuda/kernel.h"
#include "core/math/dispatch.h"
#include "core/ops/conv2d/conv2d.h"

namespace ai3 {
namespace {

// Weights staged per chunk of input channels (elements of shared memory).
constexpr int kSharedWeights = 2048;

struct PaddedDims {
  int64_t ph, pw;
};
PaddedDims PaddedOf(const Conv2dGeometry& g) {
  // The last window starts at (oh-1)*sh and spans dh*(kh-1)+1 rows.
  return {(g.oh - 1) * g.sh + g.dh * (g.kh - 1) + 1,
          (g.ow - 1) * g.sw + g.dw * (g.kw - 1) + 1};
}

template <typename T>
__global__ void ZeroPack(Conv2dGeometry g, PaddedDims p,
                         const T* __restrict__ x, T* __restrict__ pad) {
  const int64_t total = g.n * g.c * p.ph * p.pw;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t col = i % p.pw;
    const int64_t row = (i / p.pw) % p.ph;
    const int64_t plane = i / (p.pw * p.ph);  // n * C + c
    const int64_t ih = row - g.ph, iw = col - g.pw;
    pad[i] = (ih >= 0 && ih < g.h && iw >= 0 && iw < g.w)
                 ? x[plane * g.h * g.w + ih * g.w + iw]
                 : T(0);
  }
}

template <typename T>
__global__ void ScalarMatrix(Conv2dGeometry g, PaddedDims p,
                             const T* __restrict__ pad, const T* __restrict__ w,
                             const T* __restrict__ b, bool act, T lo, T hi,
                             T* __restrict__ y) {
  __shared__ T scalars[kSharedWeights];
  const int64_t n = blockIdx.z, k = blockIdx.y;
  const int64_t pixel = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  const bool active = pixel < g.oh * g.ow;
  const int64_t oh = active ? pixel / g.ow : 0, ow = active ? pixel % g.ow : 0;
  const int64_t taps = g.kh * g.kw;
  const int64_t chunk = max(int64_t(1), int64_t(kSharedWeights) / taps);
  const int64_t c0 = (k / g.kg) * g.cg;
  const T* wk = w + k * g.cg * taps;
  const T* origin =
      pad + (n * g.c + c0) * p.ph * p.pw + oh * g.sh * p.pw + ow * g.sw;
  T acc = b ? b[k] : T(0);
  for (int64_t cs = 0; cs < g.cg; cs += chunk) {
    const int64_t cn = min(chunk, g.cg - cs);
    // A kernel too large for the buffer even with one channel is refused
    // by WhyNot, so cn * taps always fits.
    __syncthreads();
    for (int64_t j = threadIdx.x; j < cn * taps; j += blockDim.x) {
      scalars[j] = wk[cs * taps + j];
    }
    __syncthreads();
    if (!active) continue;
    for (int64_t c = 0; c < cn; ++c) {
      const T* plane = origin + (cs + c) * p.ph * p.pw;
      for (int64_t r = 0; r < g.kh; ++r) {
        const T* row = plane + r * g.dh * p.pw;
        for (int64_t s = 0; s < g.kw; ++s) {
          acc += scalars[c * taps + r * g.kw + s] * row[s * g.dw];
        }
      }
    }
  }
  if (!active) return;
  if (act) acc = acc < lo ? lo : (acc > hi ? hi : acc);
  y[((n * g.k + k) * g.oh + oh) * g.ow + ow] = acc;
}

class SmmKernel : public cuda::CudaKernel {
 public:
  SmmKernel(const Conv2dAttrs& attrs, const std::vector<Tensor>& params)
      : attrs_(attrs), weights_(params, attrs.has_bias) {}

 protected:
  void RunOnDevice(const Tensor& input, const Tensor& output,
                   cudaStream_t stream) override {
    const Conv2dGeometry g = GeometryOf(attrs_, input.shape);
    const PaddedDims p = PaddedOf(g);
    if (g.n > 65535 || g.k > 65535) {
      Fail(ErrorKind::kUnsupported, "smm on CUDA takes at most 65535 images ",
           "and output channels per call, got ", g.n, " and ", g.k);
    }
    DispatchFloat(attrs_.dtype, [&](auto zero) {
      using T = decltype(zero);
      const int64_t packed = g.n * g.c * p.ph * p.pw;
      pad_.Reserve(packed * sizeof(T));
      ZeroPack<T><<<cuda::BlocksFor(packed), cuda::kThreads, 0, stream>>>(
          g, p, input.data_as<const T>(), pad_.as<T>());
      const auto act = attrs_.activation.As<T>();
      const dim3 grid(static_cast<unsigned>((g.oh * g.ow + cuda::kThreads - 1) /
                                            cuda::kThreads),
                      static_cast<unsigned>(g.k), static_cast<unsigned>(g.n));
      ScalarMatrix<T><<<grid, cuda::kThreads, 0, stream>>>(
          g, p, pad_.as<const T>(), weights_.w<T>(), weights_.b<T>(),
          act.enabled, act.lo, act.hi, output.data_as<T>());
    });
    cuda::CheckLaunch("conv2d smm");
  }

 private:
  Conv2dAttrs attrs_;
  cuda::DeviceWeights weights_;
  cuda::DeviceBuffer pad_;  // the zero-packed input, reused across calls
};

class Smm : public KernelAlgorithm<Conv2dAttrs, SmmKernel> {
 public:
  std::string WhyNot(const Conv2dAttrs& a) const override {
    std::string why = a.activation.WhyNotClampOnly();
    if (!why.empty()) return why;
    if (a.layout != Layout::kNCHW) {
      return "smm works on NCHW channel planes; NHWC has none";
    }
    if (a.kernel_h * a.kernel_w > kSharedWeights) {
      return "smm on CUDA stages one channel's " + std::to_string(a.kernel_h) +
             "x" + std::to_string(a.kernel_w) +
             " kernel in shared memory, which holds " +
             std::to_string(kSharedWeights) + " weights";
    }
    return {};
  }
};

AI3_REGISTER_ALGORITHM(Conv2dAttrs, "smm", Device::kCUDA, Smm);

}  // namespace
}  // namespace ai3
