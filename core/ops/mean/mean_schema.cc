// The reductions' declarations (core/op_schema.h), one attribute set for
// the family.
#include "core/op_schema.h"
#include "core/ops/mean/mean.h"

namespace ai3 {
namespace {

template <class A>
bool Declare(const char* doc) {
  return OpDeclaration<A>(doc)
      .Field("axes", &A::axes,
             "memory-order axes (negative from the end); empty: all")
      .Field("keepdim", &A::keepdim, "keep them as size 1")
      .Default(Device::kCPU, {{"direct"}})
      .Register();
}

const bool kDeclared =
    Declare<MeanAttrs>("the mean over axes") &&
    Declare<ReduceSumAttrs>("the sum over axes (0 over none)") &&
    Declare<ReduceProdAttrs>("the product over axes (1 over none)") &&
    Declare<ReduceMaxAttrs>(
        "the maximum over axes, NaN wins (-inf over none)") &&
    Declare<ReduceMinAttrs>(
        "the minimum over axes, NaN wins (inf over none)") &&
    Declare<ReduceL1Attrs>("the sum of |x| over axes") &&
    Declare<ReduceL2Attrs>("sqrt of the sum of x^2 over axes") &&
    Declare<ReduceSumSquareAttrs>("the sum of x^2 over axes") &&
    Declare<ReduceLogSumExpAttrs>(
        "log of the sum of exp(x) over axes, without overflow (-inf over "
        "none)");

}  // namespace
}  // namespace ai3
