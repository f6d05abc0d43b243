// batchnorm2d's declaration (core/op_schema.h).
#include <utility>

#include "core/op_schema.h"
#include "core/ops/batchnorm2d/batchnorm2d.h"

namespace ai3 {
namespace {

using A = BatchNorm2dAttrs;

// batchnorm2d's attributes and weights (in the order of
// BatchNorm2dAttrs::Param), which its gradients take as they are.
template <class A>
OpDeclaration<A> Declare(const char* doc) {
  return std::move(
      OpDeclaration<A>(doc)
          .Field("eps", &A::eps, "added to the variance")
          .LayoutAttr()
          .Weight("weight", "(channels,) scale")
          .Weight("bias", "(channels,) shift")
          .Weight("running_mean", "(channels,)")
          .Weight("running_var", "(channels,)")
          .FromWeights([](A& a, const AttrMap&, const WeightSlots& w) {
            a.channels = internal::WeightShape(w, A::kWeight, 1, "weight")[0];
            a.dtype = w[A::kWeight]->dtype;
          }));
}

AI3_REGISTER_OP_SCHEMA(
    Declare<BatchNorm2dAttrs>("inference batch normalisation per channel of a "
                              "rank-4 tensor")
        .Default(Device::kCPU, {{"direct"}})
        .Default(Device::kCUDA, {{"direct"}}));
AI3_REGISTER_OP_SCHEMA(Declare<BatchNorm2dBackwardDataAttrs>(
                           "batchnorm2d's input gradient: dy * scale")
                           .Default(Device::kCPU, {{"direct"}}));
AI3_REGISTER_OP_SCHEMA(
    Declare<BatchNorm2dBackwardWeightAttrs>(
        "batchnorm2d's weight gradient: sum of dy (x - mean) / std per channel")
        .Default(Device::kCPU, {{"direct"}}));
AI3_REGISTER_OP_SCHEMA(Declare<BatchNorm2dBackwardBiasAttrs>(
                           "batchnorm2d's bias gradient: sum of dy per channel")
                           .Default(Device::kCPU, {{"direct"}}));

}  // namespace
}  // namespace ai3
