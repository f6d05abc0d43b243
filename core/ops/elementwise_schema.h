// The declaration (core/op_schema.h) of an elementwise op whose Attrs are
// ElementwiseAttrs and nothing more (relu, sigmoid, silu, tanh, hardswish):
// no attributes, no weights, and "direct" its only algorithm on every
// device that has one. In the op's <op>_schema.cc:
//   AI3_DECLARE_ELEMENTWISE_OP(ReluAttrs, "max(x, 0) elementwise");
#ifndef AI3_CORE_OPS_ELEMENTWISE_SCHEMA_H_
#define AI3_CORE_OPS_ELEMENTWISE_SCHEMA_H_

#include "core/op_schema.h"

#define AI3_DECLARE_ELEMENTWISE_OP(Attrs, doc)              \
  AI3_REGISTER_OP_SCHEMA(::ai3::OpDeclaration<Attrs>(doc)   \
                             .Default(Device::kCPU, {{"direct"}}) \
                             .Default(Device::kCUDA, {{"direct"}}))

// The same for such an op's gradient, <op>_backward_data (its "direct" is
// ElementwiseBackwardDirect, on the CPU).
#define AI3_DECLARE_ELEMENTWISE_BACKWARD_OP(Attrs, doc)   \
  AI3_REGISTER_OP_SCHEMA(::ai3::OpDeclaration<Attrs>(doc) \
                             .Default(Device::kCPU, {{"direct"}}))

#endif  // AI3_CORE_OPS_ELEMENTWISE_SCHEMA_H_
