// Conv -> residual add (-> relu) fusion: a conv2d whose result only a
// residual add reads, run so that it adds its result into the add's other
// operand where that already lies (a ResNet block's tail:
// relu(bn(conv3(.)) + x) with the batchnorm folded into the conv). The
// conv's epilogue does the sum and the relu on its output tile while it is
// still in cache, so the add's own pass over memory (reading both
// operands, writing the sum) is gone. ai3::Model (core/graph.cc) fuses
// such a conv when a maker is registered and accepts it; guess.cc
// registers one (oneDNN's sum post-op).
#ifndef AI3_CORE_OPS_CONV2D_RESIDUAL_CONV_H_
#define AI3_CORE_OPS_CONV2D_RESIDUAL_CONV_H_

#include <memory>
#include <vector>

#include "core/math/epilogue.h"
#include "core/ops/conv2d/conv2d.h"
#include "core/tensor.h"

namespace ai3 {

// The fused conv, made for one input shape.
class ResidualConv {
 public:
  virtual ~ResidualConv() = default;
  // `input`: the conv layer's input, of the shape the fused conv was made
  // for; `accumulator`: of the conv's output shape, holding the residual
  // on entry and act(conv(input) + bias + residual) on return. Not
  // thread-safe (the Model runs one call at a time).
  virtual void Run(const Tensor& input, const Tensor& accumulator) = 0;
};

// Makes the fused conv of a layer (attributes and weights as the layer
// holds them; its own activation disabled) that applies `after` to the
// sum, for `input_shape`, or returns null where the maker does not take it.
// The fused conv keeps copies of the weights.
using ResidualConvMaker = std::unique_ptr<ResidualConv> (*)(
    const Conv2dAttrs& conv, const std::vector<Tensor>& weights,
    const Activation& after, const Shape& input_shape);

// The registered maker: null unless a linked algorithm set it at load time
// (a build without "guess" fuses no such convs).
inline ResidualConvMaker& ResidualConvFusion() {
  static ResidualConvMaker maker = nullptr;
  return maker;
}

}  // namespace ai3

#endif  // AI3_CORE_OPS_CONV2D_RESIDUAL_CONV_H_
