// linear "packed": ai3's own product for linear layers, with the weights
// packed once into panels (packed_kernel.h) and the next panel prefetched
// while one runs, so that weights streamed from memory inside a whole model
// arrive while the arithmetic goes on. float32 and float64, any activation
// linear fuses; no workspace, so a call allocates nothing.
//
// Measured on ViT-B/16's MLP linears (2-core AVX-512 Xeon, 2 threads):
// fc1 (197 x 768 -> 3072) ran in 2.61-2.71 ms hot and 2.81-2.99 ms after
// 256 MB had been written elsewhere, against oneDNN's ("guess") 2.70-2.80
// and 3.26-3.48 ms; ViT-B/16 whole in 116.5-118.4 ms against 128.6-129.5.
#include <omp.h>

#include <cstdint>
#include <vector>

#include "core/buffer.h"
#include "core/cpu.h"
#include "core/math/dispatch.h"
#include "core/ops/linear/linear.h"
#include "core/ops/linear/packed_kernel.h"
#include "core/registry.h"

namespace ai3 {
namespace {

// LinearKernelBase dispatches the dtype and counts the rows; the weights
// it hands RunTyped are the caller's; RunTyped reads them packed instead.
class PackedKernel : public LinearKernelBase<PackedKernel> {
 public:
  PackedKernel(const LinearAttrs& attrs, const std::vector<Tensor>& params)
      : LinearKernelBase(attrs, params), avx512_(KernelIsa() == Isa::kAvx512) {
    DispatchFloat(attrs.dtype, [&](auto zero) {
      using T = decltype(zero);
      if (avx512_) {
        Pack<PackedLinear<T, 64>, T>();
      } else {
        Pack<PackedLinear<T, 32>, T>();
      }
    });
  }

  template <typename T>
  void RunTyped(const T* x, const T* /*w: packed_*/, const T* /*b: bias_*/,
                T* y, int64_t rows, int64_t in, int64_t out) const {
    PackedLinearProblem<T> p;
    p.x = x;
    p.packed = packed_.as<const T>();
    p.bias = attrs_.has_bias ? bias_.as<const T>() : nullptr;
    p.y = y;
    p.rows = rows;
    p.in = in;
    p.out = out;
    p.act = attrs_.activation.As<T>();
    p.l2_bytes = L2CacheBytes();
    p.threads = omp_get_max_threads();
    if (avx512_) {
      PackedLinearAvx512(p);
    } else {
      PackedLinear<T, 32>::Run(p);
    }
  }

 private:
  // The weights (and bias) in `Layout`'s panels, for the vector width the
  // CPU runs.
  template <class Layout, typename T>
  void Pack() {
    const int64_t in = attrs_.in_features, out = attrs_.out_features;
    packed_ = Buffer(CheckedBytes(Layout::PackedElements(in, out), sizeof(T),
                                  "linear's packed weights"));
    Layout::Pack(weight<T>(), in, out, packed_.as<T>());
    if (attrs_.has_bias) {
      bias_ = Buffer(Layout::PackedBiasElements(out) * sizeof(T));
      Layout::PackBias(bias<T>(), out, bias_.as<T>());
    }
  }

  bool avx512_;
  Buffer packed_, bias_;
};

AI3_REGISTER_ALGORITHM(LinearAttrs, "packed", Device::kCPU,
                       KernelAlgorithm<LinearAttrs, PackedKernel>);

}  // namespace
}  // namespace ai3
