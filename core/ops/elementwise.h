// What every parameter-free elementwise op (relu, sigmoid, silu, tanh, gelu,
// hardswish, hardsigmoid) has in common: no weights, any input shape (rank 0
// included), the output shaped like the input, the dtype (float32 or
// float64) taken from the input. Ops with scalar attributes (gelu's
// approximation, hardsigmoid's alpha and beta) add them as fields.
//
// ElementwiseDirect is the "direct" algorithm of such an op from one
// function object: the loop, the threading and the dtype dispatch live here
// once, each op's file only says what y is for one x.
//
// Each op's gradient (<op>_backward_data, core/ops/backward.h) is declared
// beside it the same way, in one line where its formula is short
// (AI3_ELEMENTWISE_GRADIENT: relu, sigmoid, clamp...), else as a function
// object saying what dx is for one (dy, x, y) (gelu, silu); the gradient
// kernel (ElementwiseBackwardDirect) runs either.
#ifndef AI3_CORE_OPS_ELEMENTWISE_H_
#define AI3_CORE_OPS_ELEMENTWISE_H_

#include <cstdint>
#include <memory>
#include <type_traits>
#include <vector>

#include "core/errors.h"
#include "core/layer.h"
#include "core/math/dispatch.h"
#include "core/ops/backward.h"
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

namespace internal {
// Runs body = make(T()) over [0, n) on `dtype`, split over OpenMP threads
// from kParallelThreshold elements; body.fn is its function object, whose
// constants are hidden from the optimiser first (see core/parallel.h).
template <int64_t kParallelThreshold, class Make>
void RunElementwise(DType dtype, int64_t n, Make make) {
  DispatchFloat(dtype, [&](auto zero) {
    auto body = make(zero);
    HideFromOptimizer(body.fn);
    ParallelRanges(0, n, n >= kParallelThreshold, body);
  });
}
}  // namespace internal

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
      internal::RunElementwise<kParallelThreshold>(
          input.dtype, input.numel(), [&](auto zero) {
            using T = decltype(zero);
            return Apply<T>{Fn<T>(attrs_), input.data_as<const T>(),
                            output.data_as<T>()};
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

namespace internal {
// The kernel of ElementwiseBackwardDirect.
template <class Attrs, template <typename> class Grad,
          int64_t kParallelThreshold>
class GradientKernel : public MultiInputKernel {
 public:
  explicit GradientKernel(const Attrs& attrs) : attrs_(attrs) {}
  void RunInputs(const std::vector<Tensor>& inputs, const Tensor& output,
                 void*) override {
    RunElementwise<kParallelThreshold>(
        output.dtype, output.numel(), [&](auto zero) {
          using T = decltype(zero);
          return Apply<T>{MakeGrad<T>(), inputs[kGradOutput].data_as<const T>(),
                          inputs[kForwardInput].data_as<const T>(),
                          inputs[kForwardOutput].data_as<const T>(),
                          output.data_as<T>()};
        });
  }

 private:
  // From the attributes, where Grad reads them (leaky_relu's alpha).
  template <typename T>
  Grad<T> MakeGrad() const {
    if constexpr (std::is_constructible_v<Grad<T>, const Attrs&>) {
      return Grad<T>(attrs_);
    } else {
      return Grad<T>();
    }
  }

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wsubobject-linkage"  // as ElementwiseDirect
  template <typename T>
  struct Apply {
    Grad<T> fn;
    const T* __restrict dy;
    const T* __restrict x;
    const T* __restrict y;
    T* __restrict dx;
    void operator()(int64_t lo, int64_t hi) const {
#pragma omp simd
      for (int64_t i = lo; i < hi; ++i) dx[i] = fn(dy[i], x[i], y[i]);
    }
  };
#pragma GCC diagnostic pop

  Attrs attrs_;
};

// The function object of a gradient declared with AI3_ELEMENTWISE_GRADIENT:
// the layer's attributes, whose Grad is the formula.
template <class Attrs>
struct AttrsGrad {
  template <typename T>
  struct Of {
    explicit Of(const Attrs& attrs) : a(attrs) {}
    T operator()(T dy, T x, T y) const { return a.template Grad<T>(dy, x, y); }
    Attrs a;
  };
};
}  // namespace internal

// "direct" for the data gradient of an elementwise op, `Attrs` deriving
// DataGradientAttrs<the op's Attrs>: dx[i] = Grad<T>(attrs)(dy[i], x[i],
// y[i]) (Grad<T>() where it takes no attributes) over the inputs [dy, x,
// y], threaded and vectorised as ElementwiseDirect. Grad reads x or y,
// whichever its formula is exact and cheap in (sigmoid and tanh y, relu y as
// torch does, gelu x).
//   AI3_REGISTER_ALGORITHM(SiluBackwardDataAttrs, "direct", Device::kCPU,
//                          ElementwiseBackwardDirect<..., SiluGradFn>);
template <class Attrs, template <typename> class Grad,
          int64_t kParallelThreshold = (1 << 13)>
using ElementwiseBackwardDirect =
    KernelAlgorithm<Attrs,
                    internal::GradientKernel<Attrs, Grad, kParallelThreshold>>;

// An elementwise op's gradient in one line beside the op (relu.h):
//   AI3_ELEMENTWISE_GRADIENT(Relu, "relu", y <= T(0) ? T(0) : dy);
// declares ReluBackwardDataAttrs, the op "relu_backward_data", whose dx is
// the expression, in the dtype T, of dy, x, y and the forward's attributes
// (e.g. leaky_relu's alpha). Its "direct" is ElementwiseGradientDirect.
#define AI3_ELEMENTWISE_GRADIENT(Name, op, ...)                     \
  struct Name##BackwardDataAttrs : DataGradientAttrs<Name##Attrs> { \
    static constexpr char kOp[] = op "_backward_data";              \
    template <typename T>                                           \
    T Grad(T dy, T x, T y) const {                                  \
      (void)dy, (void)x, (void)y;                                   \
      return __VA_ARGS__;                                           \
    }                                                               \
  }

template <class Attrs, int64_t kParallelThreshold = (1 << 13)>
using ElementwiseGradientDirect =
    ElementwiseBackwardDirect<Attrs, internal::AttrsGrad<Attrs>::template Of,
                              kParallelThreshold>;

// In an op's direct.cc: <op>_backward_data's "direct", the gradient
// AI3_ELEMENTWISE_GRADIENT declares beside the op (Name##BackwardDataAttrs),
// threaded from `threshold` elements and vectorised as the forward's:
//   AI3_REGISTER_ELEMENTWISE_GRADIENT_DIRECT(Relu, (1 << 15));
#define AI3_REGISTER_ELEMENTWISE_GRADIENT_DIRECT(Name, threshold) \
  AI3_REGISTER_ALGORITHM(                                         \
      Name##BackwardDataAttrs, "direct", ::ai3::Device::kCPU,     \
      ::ai3::ElementwiseGradientDirect<Name##BackwardDataAttrs, threshold>)

// Both "direct"s of an op whose formula Name##Fn its header shares with its
// CUDA algorithm (SharedElementwiseDirect) and of its gradient, threaded
// from the same `threshold`:
//   AI3_REGISTER_SHARED_ELEMENTWISE_DIRECTS(Relu, (1 << 15));
#define AI3_REGISTER_SHARED_ELEMENTWISE_DIRECTS(Name, threshold)           \
  static const bool AI3_CONCAT(ai3_registered_forward_direct_, __LINE__) = \
      (::ai3::Registry<Name##Attrs>::Get().Add(                            \
           "direct", ::ai3::Device::kCPU,                                  \
           std::make_unique<::ai3::SharedElementwiseDirect<                \
               Name##Attrs, Name##Fn, threshold>>()),                      \
       true);                                                              \
  AI3_REGISTER_ELEMENTWISE_GRADIENT_DIRECT(Name, threshold)

}  // namespace ai3

#endif  // AI3_CORE_OPS_ELEMENTWISE_H_
