// The one attribute of softmax, log_softmax and their gradients, declared
// once for the four of them (core/op_schema.h).
#ifndef AI3_CORE_OPS_SOFTMAX_AXIS_SCHEMA_H_
#define AI3_CORE_OPS_SOFTMAX_AXIS_SCHEMA_H_

#include <utility>

#include "core/op_schema.h"

namespace ai3 {

// OpDeclaration<A>(doc) with the axis; A derives SoftmaxAttrs.
template <class A>
OpDeclaration<A> DeclareAxis(const char* doc) {
  return std::move(OpDeclaration<A>(doc).Field(
      "axis", &A::axis, "memory-order axis (negative from the end)"));
}

}  // namespace ai3

#endif  // AI3_CORE_OPS_SOFTMAX_AXIS_SCHEMA_H_
