// linear "guess": oneDNN's own pick of implementation, as for conv2d (its
// "guess", core/ops/conv2d/guess.cc, run on the layer as a 1x1 NHWC
// convolution, pointwise_conv_kernel.h). oneDNN JITs a brgemm kernel for the
// CPU it finds (AVX-512 where there is one, which the BLIS behind "gemm"
// misses on virtual Xeons), keeps a primitive per input shape and the
// weights reordered once, and fuses the activation as a post-op. Like
// conv2d's, it allocates inside oneDNN's execute() on each call, and runs
// float32 only.
#include "core/ops/linear/linear.h"
#include "core/ops/linear/pointwise_conv_kernel.h"
#include "core/registry.h"

namespace ai3 {
namespace {

constexpr char kGuess[] = "guess";

AI3_REGISTER_ALGORITHM(LinearAttrs, kGuess, Device::kCPU,
                       PointwiseConvAlgorithm<kGuess>);

}  // namespace
}  // namespace ai3
