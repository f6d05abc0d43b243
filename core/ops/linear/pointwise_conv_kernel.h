// A linear layer run by a conv2d algorithm. y[rows, out] = x[rows, in] W^T + b
// is exactly a 1x1 convolution of an NHWC image of 1 x rows pixels with `in`
// channels, whose OIHW weights are W viewed as [out, in, 1, 1] and whose
// output is y read as [1, 1, rows, out]: the same bytes, no copy in or out.
// So the register-blocked kernels conv2d already has for pointwise layers
// serve linear too, instead of a second copy of them here. linear's "direct"
// and "guess" are conv2d's "direct" (direct_kernel.h, its unpadded NHWC 1x1
// form) and "guess" (oneDNN) run that way.
//
// Why: BLIS, the library behind linear's "gemm", takes its AVX2 kernels on
// the virtual AVX-512 Xeons these benches run on (core/math/gemm.cc, it
// cannot tell their FMA units), and measured there (2 threads, median of 20,
// GFLOP/s, bias on):
//   rows x in -> out        gemm  direct  guess  torch.nn.functional.linear
//   197 x  768 -> 2304       210     319    425    325   (vit qkv)
//   197 x  768 -> 3072       208     341    435    320   (vit fc1)
//   197 x 3072 ->  768       211     311    419    365   (vit fc2)
//  3136 x   96 ->  384       206     313    399    319   (convnext_tiny fc1)
//  3136 x  384 ->   96       188     341    421    352   (convnext_tiny fc2)
//    49 x 3072 ->  768       155     267    360    252   (convnext_tiny fc2
//    last)
// With the AVX2 kernels forced (AI3_ISA=avx2, BLIS's are AVX2 already),
// direct ran those products 1.0-1.5x slower than gemm.
//
// On the 2-core AMD EPYC (Zen 4) machines, guess / gemm, same process,
// interleaved, median of 7 (float32, 2 threads, bias on):
//   197 x 768 -> 3072 0.88, 3072 -> 768 0.71-0.88, 768 -> 2304 0.83,
//   768 -> 768 0.73; 3136 x 96 -> 384 0.91, 384 -> 96 0.89; 49 x 3072 ->
//   768 0.71; 8 x 25088 -> 4096 0.74; 1 x 2048 -> 1000 0.88; and 1.00-1.03
//   only at one row of a large weight (1 x 25088 -> 4096, 4096 -> 4096),
//   where both stream the weight from memory. guess ran the vit shapes at
//   218-222 GFLOP/s. So "guess" is linear's "default" for float32
//   (linear_schema.cc) and "gemm" for float64, which oneDNN does not run,
//   outside 256-8192 input features, where ai3's "packed" is (packed.cc).
//   What guess costs: oneDNN's execute() allocates on each call
//   (core/model_alloc_test.cc), as conv2d's guess does.
#ifndef AI3_CORE_OPS_LINEAR_POINTWISE_CONV_KERNEL_H_
#define AI3_CORE_OPS_LINEAR_POINTWISE_CONV_KERNEL_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/ops/conv2d/conv2d.h"
#include "core/ops/linear/linear.h"
#include "core/registry.h"

namespace ai3 {

// The 1x1 NHWC convolution that computes a linear layer of `attrs`.
inline Conv2dAttrs PointwiseConvOf(const LinearAttrs& attrs) {
  Conv2dAttrs conv;
  conv.in_channels = attrs.in_features;
  conv.out_channels = attrs.out_features;
  conv.has_bias = attrs.has_bias;
  conv.dtype = attrs.dtype;
  conv.layout = Layout::kNHWC;
  conv.activation = attrs.activation;
  return conv;  // 1x1, stride 1, no padding, dilation 1, one group
}

// A linear input (any rank, `in` last) as that convolution's NHWC image.
// Its rows: every dimension of the input but the last, multiplied out.
inline int64_t PointwiseRows(const Shape& linear_shape) {
  const int64_t in = linear_shape.empty() ? 0 : linear_shape.back();
  return in == 0 ? 0 : NumElements(linear_shape) / in;
}
inline Shape PointwiseImageShape(const Shape& linear_shape) {
  return {1, 1, PointwiseRows(linear_shape), linear_shape.back()};
}

class PointwiseConvKernel : public Kernel {
 public:
  explicit PointwiseConvKernel(std::unique_ptr<Kernel> conv)
      : conv_(std::move(conv)) {}

  size_t WorkspaceBytes(const Shape& input_shape) const override {
    return conv_->WorkspaceBytes(PointwiseImageShape(input_shape));
  }

  void Run(const Tensor& input, const Tensor& output,
           void* workspace) override {
    conv_->Run(AsImage(input, &input_image_), AsImage(output, &output_image_),
               workspace);
  }

 private:
  // `t` (contiguous, the caller's contract) as the image `*image`, whose
  // shape is rewritten in place: a forward allocates nothing
  // (core/model_alloc_test.cc).
  static const Tensor& AsImage(const Tensor& t, Tensor* image) {
    image->data = t.data;
    image->dtype = t.dtype;
    image->layout = Layout::kNHWC;
    image->device = t.device;
    image->shape.resize(4);  // once: the size stays 4
    image->shape[0] = image->shape[1] = 1;
    image->shape[2] = PointwiseRows(t.shape);
    image->shape[3] = t.shape.empty() ? 0 : t.shape.back();
    return *image;
  }

  std::unique_ptr<Kernel> conv_;
  Tensor input_image_, output_image_;  // see AsImage (one call at a time)
};

// linear's algorithm that runs conv2d's algorithm `kConvAlgorithm` (whose
// name it also has) on the layer's PointwiseConvOf.
template <const char* kConvAlgorithm>
class PointwiseConvAlgorithm : public Algorithm<LinearAttrs> {
 public:
  std::string WhyNot(const LinearAttrs& attrs) const override {
    return Conv().WhyNot(PointwiseConvOf(attrs));
  }

  std::unique_ptr<Kernel> Prepare(
      const LinearAttrs& attrs,
      const std::vector<Tensor>& params) const override {
    // The weights as OIHW; the data stays the caller's (it outlives the
    // kernel, as Prepare's contract says) and conv2d's kernels pack from it.
    std::vector<Tensor> conv_params = params;
    conv_params[0].shape = {attrs.out_features, attrs.in_features, 1, 1};
    conv_params[0].strides.clear();
    return std::make_unique<PointwiseConvKernel>(
        Conv().Prepare(PointwiseConvOf(attrs), conv_params));
  }

 private:
  static const Algorithm<Conv2dAttrs>& Conv() {
    const Algorithm<Conv2dAttrs>* conv =
        Registry<Conv2dAttrs>::Get().Named(kConvAlgorithm, Device::kCPU);
    if (!conv) {
      Fail(ErrorKind::kInternal, "linear '", kConvAlgorithm,
           "' needs conv2d's, which this build does not register");
    }
    return *conv;
  }
};

}  // namespace ai3

#endif  // AI3_CORE_OPS_LINEAR_POINTWISE_CONV_KERNEL_H_
