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
                             .DirectOn({Device::kCPU, Device::kCUDA}))

// The registration of any gradient op's declaration (core/ops/backward.h):
// `declaration` its forward's attributes and weights (the forward's own
// Declare template, instantiated for the gradient's Attrs), "direct" its
// "default" on the CPU:
//   AI3_REGISTER_GRADIENT_SCHEMA(Declare<GeluBackwardDataAttrs>("doc"));
#define AI3_REGISTER_GRADIENT_SCHEMA(declaration) \
  AI3_REGISTER_OP_SCHEMA(                         \
      (declaration).Default(::ai3::Device::kCPU, {{"direct"}}))

// The declaration an op shares with its gradients, which take its
// attributes and weights as they are: defines, where it stands (the
// <op>_schema.cc's anonymous namespace), `Declare<A>(doc)`, the
// OpDeclaration<A>(doc) with the calls given, for A the op's Attrs or a
// gradient's:
//   AI3_DECLARE_ATTRIBUTES(.Field("min", &A::min, "lower bound")
//                              .Field("max", &A::max, "upper bound"));
//   AI3_REGISTER_OP_SCHEMA(
//       Declare<ClampAttrs>("doc").Default(Device::kCPU, {{"direct"}}));
//   AI3_REGISTER_GRADIENT_SCHEMA(Declare<ClampBackwardDataAttrs>("doc"));
#define AI3_DECLARE_ATTRIBUTES(...)                     \
  template <class A>                                    \
  ::ai3::OpDeclaration<A> Declare(const char* doc) {    \
    ::ai3::OpDeclaration<A> declaration(doc);           \
    declaration __VA_ARGS__;                            \
    return declaration;                                 \
  }                                                     \
  static_assert(true, "AI3_DECLARE_ATTRIBUTES takes a ;")

// An elementwise op's gradient, <op>_backward_data, when the op is declared
// as above.
#define AI3_DECLARE_ELEMENTWISE_BACKWARD_OP(Attrs, doc) \
  AI3_REGISTER_GRADIENT_SCHEMA(::ai3::OpDeclaration<Attrs>(doc))

#endif  // AI3_CORE_OPS_ELEMENTWISE_SCHEMA_H_
