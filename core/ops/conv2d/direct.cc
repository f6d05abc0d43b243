// conv2d "direct": the definition of convolution, each output element summed
// from the input it reads, in place: no im2col buffer, no GEMM call, no
// transform of the input. Takes every parameter set and both layouts.
//
// The sums are register-blocked (direct_kernel.h, where the loops are
// explained): a block of output channels in the vector lanes times a few
// output pixels of one row stays in registers for the whole reduction over
// (r, s, c), with the weights of the block packed once here so each step of
// the reduction reads them as two vector loads. Layers with one input
// channel per group (depthwise) put the input channels in the lanes instead
// in NHWC, and a row's output pixels in NCHW; NCHW 1x1 convolutions hold
// pixels in the lanes too, a GEMM of the weights by the input's planes, and
// unpadded NHWC 1x1s (any stride) block pixels across rows and images, a
// GEMM over the whole batch's pixels (DirectFormOf).
//
// Kernels: AVX2 here (2 x 8 float lanes x 6 pixels), AVX-512 in
// direct_avx512.cc (2 x 16 lanes x 12 pixels); the CPU picks (core/cpu.h),
// and the packing follows the pick.
#include <omp.h>

#include <memory>

#include "core/buffer.h"
#include "core/cpu.h"
#include "core/math/dispatch.h"
#include "core/ops/conv2d/conv2d.h"
#include "core/ops/conv2d/direct_kernel.h"

namespace ai3 {
namespace {

constexpr int64_t kAvx2Pixels = 6;  // 2 x 6 accumulators + 2 weights of 16

class DirectKernel : public Conv2dKernelBase<DirectKernel> {
 public:
  DirectKernel(const Conv2dAttrs& attrs, const std::vector<Tensor>& params)
      : Conv2dKernelBase(attrs, params),
        form_(DirectFormOf(attrs.layout, attrs.groups,
                           attrs.in_channels_per_group(), attrs.is_1x1_unit(),
                           attrs.kernel_h == 1 && attrs.kernel_w == 1 &&
                               attrs.pad_top == 0 && attrs.pad_bottom == 0 &&
                               attrs.pad_left == 0 && attrs.pad_right == 0)),
        depthwise_(form_ == DirectForm::kDepthwise) {
    const int64_t vector_bytes = KernelIsa() == Isa::kAvx512 ? 64 : 32;
    DispatchFloat(attrs.dtype, [&](auto zero) {
      using T = decltype(zero);
      // The planar form reads one output channel's scalars: blocks of 1
      // are the weights in their own order.
      Pack<T>(form_ == DirectForm::kPlanarDepthwise
                  ? 1
                  : DirectBlockChannels(vector_bytes, sizeof(T)));
      return 0;
    });
  }

  // The general form: one input strip per thread, the planar one a padded
  // channel plane per thread (direct_kernel.h).
  size_t WorkspaceBytes(const Shape& input_shape) const override {
    return DirectWorkspaceBytes(GeometryOf(attrs_, input_shape),
                                omp_get_max_threads(), SizeOf(attrs_.dtype));
  }

  template <typename T>
  void RunTyped(const Conv2dGeometry& g, const T* x, T* y,
                void* workspace) const {
    DirectProblem<T> p;
    // threads must match WorkspaceBytes, called just before Run in the same
    // context.
    SetOperands<T>(p, g, x, y, packed_.as<T>(),
                   bias_ ? packed_bias_.as<T>() : nullptr,
                   omp_get_max_threads());
    p.form = form_;
    p.workspace = workspace;
    // An output that cannot stay in the last-level cache is written around
    // it: a plain store would read each line from memory first. The seed's
    // (10, 3, 224, 224) -> 64 writes 128 MB.
    const long cache = LastLevelCacheBytes();
    p.stream_output =
        cache > 0 && static_cast<double>(g.n) * g.k * g.oh * g.ow * sizeof(T) >
                         static_cast<double>(cache);
    if (KernelIsa() == Isa::kAvx512) {
      DirectAvx512(p);
    } else {
      DirectCompute<T, /*kVectorBytes=*/32, kAvx2Pixels>::Run(p);
    }
  }

 private:
  // The weights (and bias) in the kernel's lane order, `kb` channels a
  // block, zero past the last channel (see DirectProblem::packed):
  //   general:   packed[grp][b][r][s][c][l] = W[grp*kg + b*kb + l][c][r][s]
  //   depthwise: packed[i][b][r][s][l]      = W[(b*kb + l)*m + i][0][r][s]
  template <typename T>
  void Pack(int64_t kb) {
    const int64_t kh = attrs_.kernel_h, kw = attrs_.kernel_w;
    const int64_t cg = attrs_.in_channels_per_group();
    const int64_t kg = attrs_.out_channels_per_group();
    // General: groups x blocks of output channels; depthwise: multiplier
    // passes x blocks of input channels.
    const int64_t outer = depthwise_ ? kg : attrs_.groups;
    const int64_t lanes_of = depthwise_ ? attrs_.in_channels : kg;
    const int64_t blocks = (lanes_of + kb - 1) / kb;
    const int64_t taps = depthwise_ ? kh * kw : kh * kw * cg;
    packed_ =
        Buffer(static_cast<size_t>(outer * blocks * taps * kb) * sizeof(T));
    packed_bias_ = Buffer(static_cast<size_t>(outer * blocks * kb) * sizeof(T));
    const T* w = weight<T>();
    const T* bias = this->template bias<T>();
    T* dst = packed_.as<T>();
    T* bdst = packed_bias_.as<T>();
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t b = 0; b < blocks; ++b) {
        for (int64_t l = 0; l < kb; ++l) {
          const int64_t lane = b * kb + l;
          // The output channel of this lane, or -1 past the last.
          const int64_t k = lane >= lanes_of ? -1
                            : depthwise_     ? lane * kg + o
                                             : o * kg + lane;
          bdst[(o * blocks + b) * kb + l] = k >= 0 && bias ? bias[k] : T(0);
          for (int64_t r = 0; r < kh; ++r)
            for (int64_t s = 0; s < kw; ++s)
              for (int64_t c = 0; c < (depthwise_ ? 1 : cg); ++c) {
                const int64_t tap = (r * kw + s) * (depthwise_ ? 1 : cg) + c;
                dst[((o * blocks + b) * taps + tap) * kb + l] =
                    k >= 0 ? w[((k * cg + c) * kh + r) * kw + s] : T(0);
              }
        }
      }
  }

  DirectForm form_;
  bool depthwise_;      // the NHWC form, whose lanes are input channels
  Buffer packed_;       // see Pack
  Buffer packed_bias_;  // the bias in the same lane order
};

AI3_REGISTER_ALGORITHM(Conv2dAttrs, "direct", Device::kCPU,
                       KernelAlgorithm<Conv2dAttrs, DirectKernel>);

}  // namespace
}  // namespace ai3
