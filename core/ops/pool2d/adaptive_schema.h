// The attributes of the adaptive pools (adaptiveavgpool2d,
// adaptivemaxpool2d) and of their gradients, declared once
// (core/op_schema.h).
#ifndef AI3_CORE_OPS_POOL2D_ADAPTIVE_SCHEMA_H_
#define AI3_CORE_OPS_POOL2D_ADAPTIVE_SCHEMA_H_

#include <utility>

#include "core/op_schema.h"

namespace ai3 {

// OpDeclaration<A>(doc) with the output size and layout; A derives
// AdaptiveAvgPool2dAttrs.
template <class A>
OpDeclaration<A> AdaptivePool(const char* doc) {
  return std::move(
      OpDeclaration<A>(doc)
          .Pair("output_size", &A::output_h, &A::output_w, "(h, w)")
          .Required()
          .LayoutAttr());
}

}  // namespace ai3

#endif  // AI3_CORE_OPS_POOL2D_ADAPTIVE_SCHEMA_H_
