// linear: y = x W^T + b over the last dimension of x (PyTorch's nn.Linear).
// Weights are [out_features, in_features], bias [out_features]. The input may
// have any rank >= 1; every leading dimension is a batch dimension.
#ifndef AI3_CORE_OPS_LINEAR_LINEAR_H_
#define AI3_CORE_OPS_LINEAR_LINEAR_H_

#include <cstdint>
#include <vector>

#include "core/math/dispatch.h"
#include "core/math/epilogue.h"
#include "core/registry.h"
#include "core/tensor.h"

namespace ai3 {

struct LinearAttrs {
  static constexpr char kOp[] = "linear";

  int64_t in_features = 0;
  int64_t out_features = 0;
  bool has_bias = false;
  DType dtype = DType::kFloat32;
  // A fused clamp (ReLU, ReLU6) applied as the output is written; see
  // core/math/epilogue.h.
  Activation activation;

  // Checks the attributes and the weights: params = {weight[, bias]}.
  void Validate(const std::vector<Tensor>& params) const;
  // Checks the input (rank >= 1, last dimension in_features, dtype) and
  // returns its shape with the last dimension replaced by out_features.
  Shape OutputShape(const Tensor& input) const;
};

// What every linear kernel keeps: the attributes and the weights. Subclasses
// implement RunTyped<T>(x, w, b, y, rows, in, out) for T = float, double:
// w is [out, in], b the bias or null, and rows the product of the input's
// leading dimensions.
template <class Derived>
class LinearKernelBase : public WeightBiasKernel<LinearAttrs> {
 public:
  using WeightBiasKernel::WeightBiasKernel;

  void Run(const Tensor& input, const Tensor& output, void*) override {
    DispatchFloat(attrs_.dtype, [&](auto zero) {
      using T = decltype(zero);
      static_cast<Derived*>(this)->template RunTyped<T>(
          input.data_as<const T>(), weight<T>(), bias<T>(), output.data_as<T>(),
          input.numel() / attrs_.in_features, attrs_.in_features,
          attrs_.out_features);
    });
  }
};

}  // namespace ai3

#endif  // AI3_CORE_OPS_LINEAR_LINEAR_H_
