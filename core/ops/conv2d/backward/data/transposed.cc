// conv2d_backward_data "transposed": the transposed convolution
// (transposed_kernel.h) run by conv2d's "default", i.e. whichever forward
// algorithm the forward op would pick for it.
#include "core/ops/conv2d/backward/data/transposed_kernel.h"

namespace ai3 {
namespace {

constexpr char kDefault[] = "default";

AI3_REGISTER_ALGORITHM(Conv2dBackwardDataAttrs, "transposed", Device::kCPU,
                       TransposedAlgorithm<kDefault>);

}  // namespace
}  // namespace ai3
