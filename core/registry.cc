#include "core/registry.h"

#include <algorithm>

namespace ai3 {
namespace {
std::vector<std::vector<AlgorithmInfo> (*)()>& OpListers() {
  static auto* listers = new std::vector<std::vector<AlgorithmInfo> (*)()>();
  return *listers;
}
}  // namespace

namespace internal {
void AddOpLister(std::vector<AlgorithmInfo> (*lister)()) {
  OpListers().push_back(lister);
}
}  // namespace internal

void ValidateWeightBias(const std::vector<Tensor>& params, bool has_bias,
                        const Shape& weight_shape, const char* weight_dims,
                        DType dtype) {
  if (params.size() != (has_bias ? 2u : 1u)) {
    Fail(ErrorKind::kInvalidArgument, "expected ", has_bias ? 2 : 1,
         " parameter tensors (weight", has_bias ? ", bias" : "", "), got ",
         params.size());
  }
  if (params[0].shape != weight_shape) {
    Fail(ErrorKind::kShape, "weight has shape ", ToString(params[0].shape),
         ", expected ", ToString(weight_shape), " ", weight_dims);
  }
  if (has_bias && params[1].shape != Shape{weight_shape[0]}) {
    Fail(ErrorKind::kShape, "bias has shape ", ToString(params[1].shape),
         ", expected (", weight_shape[0], ",)");
  }
  for (const Tensor& p : params) {
    if (p.dtype != dtype) {
      Fail(ErrorKind::kDType, "weights are ", Name(p.dtype), ", layer is ",
           Name(dtype));
    }
  }
}

void ValidateInputDType(const Tensor& input, DType dtype) {
  if (input.dtype != dtype) {
    Fail(ErrorKind::kDType, "input is ", Name(input.dtype), " but weights are ",
         Name(dtype));
  }
}

std::vector<AlgorithmInfo> ListAlgorithms() {
  std::vector<AlgorithmInfo> all;
  for (auto lister : OpListers()) {
    for (AlgorithmInfo& info : lister()) all.push_back(std::move(info));
  }
  std::stable_sort(all.begin(), all.end(),
                   [](const AlgorithmInfo& a, const AlgorithmInfo& b) {
                     return a.op < b.op;
                   });
  return all;
}

}  // namespace ai3
