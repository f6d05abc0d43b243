// Pointwise -> depthwise fusion: a 1x1 conv2d whose result only a 3x3
// depthwise conv2d reads (the expand and depthwise steps of MobileNetV2's
// inverted residual block), run as one pass that never writes the expanded
// tensor to memory. ai3::Model (core/graph.cc) fuses such a pair of layers
// when a maker is registered and it accepts them; guess.cc registers one
// (oneDNN's depthwise post-op) for pairs that both run "guess".
#ifndef AI3_CORE_OPS_CONV2D_POINTWISE_DEPTHWISE_H_
#define AI3_CORE_OPS_CONV2D_POINTWISE_DEPTHWISE_H_

#include <memory>
#include <vector>

#include "core/ops/conv2d/conv2d.h"
#include "core/tensor.h"

namespace ai3 {

// The fused pair, made for one input shape.
class PointwiseDepthwise {
 public:
  virtual ~PointwiseDepthwise() = default;
  // `input`: the pointwise layer's input, of the shape the pair was made
  // for; `output`: the depthwise layer's output. Not thread-safe (the
  // Model runs one call at a time).
  virtual void Run(const Tensor& input, const Tensor& output) = 0;
};

// Makes the fused pair of two layers (attributes and weights as the layers
// hold them) for `input_shape`, or returns null where the maker does not
// take them or fusing would not pay. The pair keeps copies of the weights.
using PointwiseDepthwiseMaker = std::unique_ptr<PointwiseDepthwise> (*)(
    const Conv2dAttrs& pointwise, const std::vector<Tensor>& pointwise_weights,
    const Conv2dAttrs& depthwise, const std::vector<Tensor>& depthwise_weights,
    const Shape& input_shape);

// The registered maker: null unless a linked algorithm set it at load time
// (a build without "guess" fuses no such pairs).
inline PointwiseDepthwiseMaker& PointwiseDepthwiseFusion() {
  static PointwiseDepthwiseMaker maker = nullptr;
  return maker;
}

}  // namespace ai3

#endif  // AI3_CORE_OPS_CONV2D_POINTWISE_DEPTHWISE_H_
