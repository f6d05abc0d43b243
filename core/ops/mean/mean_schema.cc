// The reductions' declarations (core/op_schema.h), one attribute set for
// the family and their input gradients.
#include <string>

#include "core/op_schema.h"
#include "core/ops/mean/mean.h"

namespace ai3 {
namespace {

AI3_DECLARE_ATTRIBUTES(
        .Field("axes", &A::axes,
               "memory-order axes (negative from the end); empty: all")
        .Field("keepdim", &A::keepdim, "keep them as size 1"));

// The reduction and its input gradient, on the same attributes.
template <Reduction R>
bool DeclareWithGradient(const char* doc) {
  return Declare<ReduceAttrs<R>>(doc)
             .Default(Device::kCPU, {{"direct"}})
             .Register() &&
         Declare<ReduceBackwardDataAttrs<R>>(std::string(ReductionName(R)) +
                                             "'s input gradient")
             .Default(Device::kCPU, {{"direct"}})
             .Register();
}

const bool kDeclared =
    DeclareWithGradient<Reduction::kMean>("the mean over axes") &&
    DeclareWithGradient<Reduction::kSum>("the sum over axes (0 over none)") &&
    DeclareWithGradient<Reduction::kProd>(
        "the product over axes (1 over none)") &&
    DeclareWithGradient<Reduction::kMax>(
        "the maximum over axes, NaN wins (-inf over none)") &&
    DeclareWithGradient<Reduction::kMin>(
        "the minimum over axes, NaN wins (inf over none)") &&
    DeclareWithGradient<Reduction::kL1>("the sum of |x| over axes") &&
    DeclareWithGradient<Reduction::kL2>("sqrt of the sum of x^2 over axes") &&
    DeclareWithGradient<Reduction::kSumSquare>("the sum of x^2 over axes") &&
    DeclareWithGradient<Reduction::kLogSumExp>(
        "log of the sum of exp(x) over axes, without overflow (-inf over "
        "none)");

}  // namespace
}  // namespace ai3
