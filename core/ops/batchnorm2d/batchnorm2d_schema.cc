// batchnorm2d's declaration (core/op_schema.h).
#include "core/op_schema.h"
#include "core/ops/batchnorm2d/batchnorm2d.h"

namespace ai3 {
namespace {

using A = BatchNorm2dAttrs;

// The weights in the order of BatchNorm2dAttrs::Param.
AI3_REGISTER_OP_SCHEMA(
    OpDeclaration<A>("inference batch normalisation per channel of a "
                     "rank-4 tensor")
        .Field("eps", &A::eps, "added to the variance")
        .LayoutAttr()
        .Weight("weight", "(channels,) scale")
        .Weight("bias", "(channels,) shift")
        .Weight("running_mean", "(channels,)")
        .Weight("running_var", "(channels,)")
        .FromWeights([](A& a, const AttrMap&, const WeightSlots& w) {
          a.channels = internal::WeightShape(w, A::kWeight, 1, "weight")[0];
          a.dtype = w[A::kWeight]->dtype;
        })
        .Default(Device::kCPU, {{"direct"}})
        .Default(Device::kCUDA, {{"direct"}}));

}  // namespace
}  // namespace ai3
