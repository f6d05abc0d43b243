// What every parameter-free elementwise op (relu, sigmoid, silu, tanh, gelu,
// hardswish, hardsigmoid) has in common: no weights, any input shape (rank 0
// included), the output shaped like the input, the dtype (float32 or
// float64) taken from the input. Ops with scalar attributes (gelu's
// approximation, hardsigmoid's alpha and beta) add them as fields.
//
// ElementwiseDirect is the "direct" algorithm of such an op from one
// function object: the loop, the threading and the dtype dispatch live here
// once, each op's file only says what y is for one x.
#ifndef AI3_CORE_OPS_ELEMENTWISE_H_
#define AI3_CORE_OPS_ELEMENTWISE_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "core/errors.h"
#include "core/math/dispatch.h"
#include "core/parallel.h"
#include "core/registry.h"
#include "core/tensor.h"

// A formula both a CPU algorithm (ElementwiseDirect) and a CUDA one
// (core/cuda/elementwise.h) apply, compiled for each side.
#ifdef __CUDACC__
#define AI3_HOST_DEVICE __host__ __device__
#else
#define AI3_HOST_DEVICE
#endif

namespace ai3 {

// An op's attributes derive from this with itself as `Derived` and define
// `static constexpr char kOp[]`.
template <class Derived>
struct ElementwiseAttrs {
  void Validate(const std::vector<Tensor>& params) const {
    if (!params.empty()) {
      Fail(ErrorKind::kInvalidArgument, Derived::kOp,
           " takes no parameter tensors, got ", params.size());
    }
  }

  Shape OutputShape(const Tensor& input) const {
    CheckShape(input.shape, "input");
    return input.shape;
  }
};

// "direct" for the elementwise op `Attrs`: y[i] = Fn<T>(attrs)(x[i]), one
// pass split over OpenMP threads when the tensor has at least
// `kParallelThreshold` elements, the loop vectorised where Fn allows (keep
// Fn's constants in members: see core/ops/sigmoid/exp.h on ExpRange).
//   AI3_REGISTER_ALGORITHM(GeluAttrs, "direct", Device::kCPU,
//                          ElementwiseDirect<GeluAttrs, GeluFn>);
template <class Attrs, template <typename> class Fn,
          int64_t kParallelThreshold = (1 << 13)>
class ElementwiseDirect : public Algorithm<Attrs> {
 public:
  std::unique_ptr<Kernel> Prepare(const Attrs& attrs,
                                  const std::vector<Tensor>&) const override {
    return std::make_unique<RunKernel>(attrs);
  }

 private:
  class RunKernel : public Kernel {
   public:
    explicit RunKernel(const Attrs& attrs) : attrs_(attrs) {}
    void Run(const Tensor& input, const Tensor& output, void*) override {
      DispatchFloat(input.dtype, [&](auto zero) {
        using T = decltype(zero);
        Apply<T> apply{Fn<T>(attrs_), input.data_as<const T>(),
                       output.data_as<T>()};
        HideFromOptimizer(apply.fn);  // its constants: see core/parallel.h
        const int64_t n = input.numel();
        ParallelRanges(0, n, n >= kParallelThreshold, apply);
      });
    }

   private:
    // y[i] = fn(x[i]) over [lo, hi): the ParallelRanges body. Fn comes
    // from an op's .cc, in an anonymous namespace; GCC warns about any type
    // declared in a header that holds one (-Wsubobject-linkage), which is
    // harmless here: each instantiation is used in that one .cc only.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wsubobject-linkage"
    template <typename T>
    struct Apply {
      Fn<T> fn;
      const T* __restrict x;
      T* __restrict y;
      void operator()(int64_t lo, int64_t hi) const {
#pragma omp simd
        for (int64_t i = lo; i < hi; ++i) y[i] = fn(x[i]);
      }
    };
#pragma GCC diagnostic pop

    Attrs attrs_;
  };
};

namespace internal {
template <class Fn>
struct EveryType {
  template <typename>
  using Of = Fn;
};
}  // namespace internal

// ElementwiseDirect of a formula the op's header shares with its CUDA
// algorithm (core/cuda/elementwise.h): one class with a template
// `AI3_HOST_DEVICE T operator()(T) const`, e.g. ReluFn (core/ops/relu).
template <class Attrs, class Fn, int64_t kParallelThreshold = (1 << 13)>
using SharedElementwiseDirect =
    ElementwiseDirect<Attrs, internal::EveryType<Fn>::template Of,
                      kParallelThreshold>;

}  // namespace ai3

#endif  // AI3_CORE_OPS_ELEMENTWISE_H_
