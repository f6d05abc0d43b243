// Gate -> conv fusion: a conv2d whose input is another tensor multiplied
// by a gate of one value per image and channel (the squeeze-excitation
// block of EfficientNet and MobileNetV3: x * s, s of shape (N, C, 1, 1),
// read only by the block's projecting conv). A convolution is linear in
// each input channel, so conv(x * s) is the conv with input channel c's
// weights multiplied by s[n, c]: the fused conv scales a copy of its
// weights per image and runs on x itself, and the multiply's pass over the
// activation (reading x, writing x * s) is gone. Where the weights outnumber
// the activation that would cost more than the pass it saves, and the
// maker declines. ai3::Model (core/graph.cc) fuses such a pair when a
// maker is registered and accepts it; guess.cc registers one (oneDNN's
// convolution, weights rescaled in its own layout).
#ifndef AI3_CORE_OPS_CONV2D_SCALED_INPUT_CONV_H_
#define AI3_CORE_OPS_CONV2D_SCALED_INPUT_CONV_H_

#include <memory>
#include <vector>

#include "core/ops/conv2d/conv2d.h"
#include "core/tensor.h"

namespace ai3 {

// The fused conv, made for one input shape.
class ScaledInputConv {
 public:
  virtual ~ScaledInputConv() = default;
  // `input`: x, of the shape the fused conv was made for; `gate`: s, N x C
  // values (one image's C repeated for all when it holds C); `output`: of
  // the conv's output shape, receiving conv(x * s). Not thread-safe (the
  // Model runs one call at a time).
  virtual void Run(const Tensor& input, const Tensor& gate,
                   const Tensor& output) = 0;
};

// Makes the fused conv of a layer (attributes and weights as the layer
// holds them) for `input_shape` and a gate of `gate_images` images (1 or
// the input's batch), or returns null where the maker does not take it or
// fusing would not pay. The fused conv keeps copies of the weights.
using ScaledInputConvMaker = std::unique_ptr<ScaledInputConv> (*)(
    const Conv2dAttrs& conv, const std::vector<Tensor>& weights,
    const Shape& input_shape, int64_t gate_images);

// The registered maker: null unless a linked algorithm set it at load time
// (a build without "guess" fuses no such pairs).
inline ScaledInputConvMaker& ScaledInputConvFusion() {
  static ScaledInputConvMaker maker = nullptr;
  return maker;
}

}  // namespace ai3

#endif  // AI3_CORE_OPS_CONV2D_SCALED_INPUT_CONV_H_
