// The glue that turns a user's function in custom_algos/<op>.cc into the
// op's "custom" algorithm. Users don't edit this file.
//
// A user function has the same shape for every op:
//   void MyConv2d(const Conv2dAttrs& attrs, const Tensor& input,
//                 const std::vector<Tensor>& params, const Tensor& output);
// `input` and `output` are contiguous CPU tensors of the layer's dtype
// (float32 or float64) in the layer's layout, already validated; `params`
// are the layer's weights (conv2d/linear: weight, then bias if present).
#ifndef AI3_CUSTOM_ALGOS_CUSTOM_ALGORITHM_H_
#define AI3_CUSTOM_ALGOS_CUSTOM_ALGORITHM_H_

#include <memory>
#include <string>
#include <vector>

#include "core/registry.h"
#include "core/tensor.h"

namespace ai3 {

template <class Attrs>
using CustomFunction = void (*)(const Attrs& attrs, const Tensor& input,
                                const std::vector<Tensor>& params,
                                const Tensor& output);

// How a custom_algos/<op>.cc file describes its algorithm.
struct CustomSwitches {
  // False while the file holds the shipped placeholder: "custom" is then
  // listed but refuses every layer, saying where to fill it in.
  bool implemented;
  // True makes "default" choose this algorithm wherever it applies.
  bool is_default;
  const char* file;
};

template <class Attrs>
class CustomAlgorithm : public Algorithm<Attrs> {
 public:
  CustomAlgorithm(CustomFunction<Attrs> function, CustomSwitches switches)
      : function_(function), switches_(switches) {}

  std::string WhyNot(const Attrs&) const override {
    if (switches_.implemented) return {};
    return std::string("custom ") + Attrs::kOp +
           " is the unfilled placeholder; write it in " + switches_.file +
           " and set its 'implemented' switch to true";
  }

  // "default" takes the user's algorithm first, wherever it applies, when
  // its file switches it on as the default.
  bool ChosenFirst(const Attrs&) const override { return switches_.is_default; }

  std::unique_ptr<Kernel> Prepare(
      const Attrs& attrs, const std::vector<Tensor>& params) const override {
    return std::make_unique<CustomKernel>(function_, attrs, params);
  }

 private:
  class CustomKernel : public Kernel {
   public:
    CustomKernel(CustomFunction<Attrs> function, const Attrs& attrs,
                 const std::vector<Tensor>& params)
        : function_(function), attrs_(attrs), params_(params) {}
    void Run(const Tensor& input, const Tensor& output, void*) override {
      function_(attrs_, input, params_, output);
    }

   private:
    CustomFunction<Attrs> function_;
    Attrs attrs_;
    std::vector<Tensor> params_;
  };

  CustomFunction<Attrs> function_;
  CustomSwitches switches_;
};

// Registers `function` as the "custom" algorithm of the op `AttrsType`.
#define AI3_REGISTER_CUSTOM(AttrsType, function, implemented, is_default)  \
  static const bool AI3_CONCAT(ai3_registered_custom_, __LINE__) =         \
      (::ai3::Registry<AttrsType>::Get().Add(                              \
           "custom", ::ai3::Device::kCPU,                                  \
           std::make_unique<::ai3::CustomAlgorithm<AttrsType>>(            \
               function,                                                   \
               ::ai3::CustomSwitches{implemented, is_default, __FILE__})), \
       true)

}  // namespace ai3

#endif  // AI3_CUSTOM_ALGOS_CUSTOM_ALGORITHM_H_
