// batchnorm2d's declaration (core/op_schema.h).
#include "core/op_schema.h"
#include "core/ops/batchnorm2d/batchnorm2d.h"
#include "core/ops/elementwise_schema.h"

namespace ai3 {
namespace {

using A = BatchNorm2dAttrs;

// batchnorm2d's attributes and weights (in the order of
// BatchNorm2dAttrs::Param), which its gradients take as they are.
AI3_DECLARE_ATTRIBUTES(
        .Field("eps", &A::eps, "added to the variance")
        .LayoutAttr()
        .ActivationAttr()
        .Weight("weight", "(channels,) scale")
        .Weight("bias", "(channels,) shift")
        .Weight("running_mean", "(channels,)")
        .Weight("running_var", "(channels,)")
        .FromWeights([](A& a, const AttrMap&, const WeightSlots& w) {
          a.channels = internal::WeightShape(w, A::kWeight, 1, "weight")[0];
          a.dtype = w[A::kWeight]->dtype;
        }));

AI3_REGISTER_OP_SCHEMA(
    Declare<BatchNorm2dAttrs>("inference batch normalisation per channel of a "
                              "rank-4 tensor")
        .DirectOn({Device::kCPU, Device::kCUDA}));
AI3_REGISTER_GRADIENT_SCHEMA(Declare<BatchNorm2dBackwardDataAttrs>(
    "batchnorm2d's input gradient: dy * scale"));
AI3_REGISTER_GRADIENT_SCHEMA(Declare<BatchNorm2dBackwardWeightAttrs>(
    "batchnorm2d's weight gradient: sum of dy (x - mean) / std per channel"));
AI3_REGISTER_GRADIENT_SCHEMA(Declare<BatchNorm2dBackwardBiasAttrs>(
    "batchnorm2d's bias gradient: sum of dy per channel"));

}  // namespace
}  // namespace ai3
