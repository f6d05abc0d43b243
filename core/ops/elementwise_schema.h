// The declaration (core/op_schema.h) of an elementwise op whose Attrs are
// ElementwiseAttrs and nothing more (relu, sigmoid, silu, tanh, hardswish):
// no attributes, no weights, and "direct" its only algorithm on every
// device that has one. In the op's <op>_schema.cc:
//   AI3_DECLARE_ELEMENTWISE_OP(ReluAttrs, "max(x, 0) elementwise");
#ifndef AI3_CORE_OPS_ELEMENTWISE_SCHEMA_H_
#define AI3_CORE_OPS_ELEMENTWISE_SCHEMA_H_

#include "core/op_schema.h"

#define AI3_DECLARE_ELEMENTWISE_OP(Attrs, doc)                      \
  AI3_REGISTER_OP_SCHEMA(::ai3::OpDeclaration<Attrs>(doc).DirectOn( \
      {Device::kCPU, Device::kCUDA}))

// The registration of any gradient op's declaration (core/ops/backward.h):
// `declaration` its forward's attributes and weights (the forward's own
// Declare template, instantiated for the gradient's Attrs), "direct" its
// "default" on the CPU:
//   AI3_REGISTER_GRADIENT_SCHEMA(Declare<GeluBackwardDataAttrs>("doc"));
#define AI3_REGISTER_GRADIENT_SCHEMA(declaration) \
  AI3_REGISTER_OP_SCHEMA(                         \
      (declaration).Default(::ai3::Device::kCPU, {{"direct"}}))

// An elementwise op's gradient, <op>_backward_data, when the op is declared
// as above.
#define AI3_DECLARE_ELEMENTWISE_BACKWARD_OP(Attrs, doc) \
  AI3_REGISTER_GRADIENT_SCHEMA(::ai3::OpDeclaration<Attrs>(doc))

#endif  // AI3_CORE_OPS_ELEMENTWISE_SCHEMA_H_
