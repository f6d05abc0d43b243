// conv2d "implicit gemm": the convolution as the GEMM
//   Y_g[M = kg, N = OH*OW] = W_g[M, K = cg*kh*kw] x col[K, N]
// computed with blocked GEMM loops, without ever materialising col (the
// im2col matrix). Per image, group and block of up to kMaxPixels output
// pixels, and per block of kDepthBlock rows of K, the needed input values
// are gathered into a small panel (kDepthBlock x pixels, cache resident, one
// per thread in the workspace); a register-blocked micro-kernel then
// accumulates kMr output channels x kNr pixels at a time from it into the
// output. The weights are packed once in Prepare into kMr-row slivers laid
// out K-major, so the micro-kernel streams both operands contiguously.
//
// Work is spread over OpenMP threads by (image, group, pixel block); the
// workspace holds omp_get_max_threads() panels.
//
// Both layouts: the gather reads the input through its layout's strides and
// the micro-kernel writes the output through the output's, so NHWC only costs
// strided gathers and scattered stores.
//
// The gather and micro-kernel live in implicit_gemm_kernel.h, built for AVX2
// here and for AVX-512 in implicit_gemm_avx512.cc; the CPU picks (core/cpu.h).
// Both use the same packed weights and workspace: only the micro-tile's pixel
// width (two vectors) differs.
#include <omp.h>

#include <algorithm>
#include <memory>

#include "core/buffer.h"
#include "core/cpu.h"
#include "core/ops/conv2d/conv2d.h"
#include "core/ops/conv2d/implicit_gemm_kernel.h"

namespace ai3 {
namespace {

constexpr int64_t kMr = kImplicitGemmMr;

class ImplicitGemmKernel : public Conv2dKernelBase<ImplicitGemmKernel> {
 public:
  ImplicitGemmKernel(const Conv2dAttrs& attrs,
                     const std::vector<Tensor>& params)
      : Conv2dKernelBase(attrs, params) {
    // packed[grp][m-sliver][kidx][i] = W[grp*kg + sliver*kMr + i][kidx].
    packed_ = PackWeightSlivers(kMr);
  }

  size_t WorkspaceBytes(const Shape&) const override {
    return static_cast<size_t>(omp_get_max_threads()) * PanelElements() *
           SizeOf(attrs_.dtype);
  }

  template <typename T>
  void RunTyped(const Conv2dGeometry& g, const T* x, T* y,
                void* workspace) const {
    ImplicitGemmProblem<T> p;
    // threads must match WorkspaceBytes, called just before Run in the same
    // context.
    SetOperands<T>(p, g, x, y, packed_.as<T>(), bias<T>(),
                   omp_get_max_threads());
    p.workspace = static_cast<T*>(workspace);
    if (KernelIsa() == Isa::kAvx512) {
      ImplicitGemmAvx512(p);
    } else {
      ImplicitGemmCompute<T, /*kVectorBytes=*/32>::Run(p);
    }
  }

 private:
  static int64_t PanelElements() {
    return kImplicitGemmDepthBlock * kImplicitGemmMaxPixels;
  }

  Buffer packed_;  // weights as [group][kMr-row sliver][K][kMr]
};

AI3_REGISTER_ALGORITHM(Conv2dAttrs, "implicit gemm", Device::kCPU,
                       KernelAlgorithm<Conv2dAttrs, ImplicitGemmKernel>);

}  // namespace
}  // namespace ai3
