// The shell of a kernel that is one function of the layer's attributes, its
// input and its output (no weights, no workspace, nothing prepared), so that
// such an algorithm's file holds only that function:
//   void Direct(const RollAttrs& attrs, const Tensor& input,
//               const Tensor& output);
//   AI3_REGISTER_ALGORITHM(RollAttrs, "direct", Device::kCPU,
//                          FunctionAlgorithm<RollAttrs, Direct>);
#ifndef AI3_CORE_OPS_FUNCTION_KERNEL_H_
#define AI3_CORE_OPS_FUNCTION_KERNEL_H_

#include "core/registry.h"
#include "core/tensor.h"

namespace ai3 {

template <class Attrs>
using KernelFunction = void (*)(const Attrs& attrs, const Tensor& input,
                                const Tensor& output);

// Keeps the attributes (the layer's may go before the kernel does) and
// calls `Fn` with them on every Run.
template <class Attrs, KernelFunction<Attrs> Fn>
class FunctionKernel : public Kernel {
 public:
  explicit FunctionKernel(const Attrs& attrs) : attrs_(attrs) {}

  void Run(const Tensor& input, const Tensor& output, void*) override {
    Fn(attrs_, input, output);
  }

 private:
  Attrs attrs_;
};

template <class Attrs, KernelFunction<Attrs> Fn>
using FunctionAlgorithm = KernelAlgorithm<Attrs, FunctionKernel<Attrs, Fn>>;

}  // namespace ai3

#endif  // AI3_CORE_OPS_FUNCTION_KERNEL_H_
