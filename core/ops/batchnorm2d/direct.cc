// batchnorm2d "direct": at inference batch normalisation is a per-channel
// affine map, so Prepare folds the four parameter vectors into
//   scale = weight / sqrt(running_var + eps),  shift = bias - mean * scale
// once (in double, then rounded to the layer's dtype) and Run is one fused
// multiply-add per element. NCHW threads over (n, c) planes with the plane
// as the vectorised loop; NHWC threads over pixels with the channels as the
// vectorised loop.
#include <cstdint>
#include <memory>
#include <vector>

#include "core/buffer.h"
#include "core/math/dispatch.h"
#include "core/ops/batchnorm2d/batchnorm2d.h"
#include "core/ops/batchnorm2d/scale_shift_kernel.h"
#include "core/registry.h"

namespace ai3 {
namespace {

class DirectKernel : public Kernel {
 public:
  DirectKernel(const BatchNorm2dAttrs& attrs, const std::vector<Tensor>& params)
      : map_(attrs, params, /*shift=*/true) {}

  void Run(const Tensor& input, const Tensor& output, void*) override {
    map_.Apply(input, output);
  }

 private:
  ScaleShiftMap map_;
};

AI3_REGISTER_ALGORITHM(BatchNorm2dAttrs, "direct", Device::kCPU,
                       KernelAlgorithm<BatchNorm2dAttrs, DirectKernel>);

}  // namespace
}  // namespace ai3
