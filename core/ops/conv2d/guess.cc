// conv2d "guess": oneDNN's own convolution primitive with
// algorithm::convolution_auto, i.e. oneDNN's heuristic choice of
// implementation for this CPU and these shapes -- the CPU analogue of
// cuDNN's heuristic pick (hence the name).
//
// Activations are described with the plain tag of the layer's layout (nchw or
// nhwc), so each call runs on the caller's buffers without reorders. Weights
// are described with format_tag::any and reordered once into the layout the
// chosen implementation wants. The chosen implementation depends on the input
// N/H/W, so the kernel caches the primitive and the reordered weights for the
// last input shape, rebuilding when the shape changes (and reusing the
// reordered weights when the new primitive wants the same weights layout).
// The kernel is not thread-safe (nor need it be: a Layer runs one call at a
// time). The primitive's scratchpad is user-managed and cached with it:
// oneDNN's default library-managed scratchpad lives in the thread-local
// storage of the thread that created the primitive, so running the
// primitive from another thread (a Model or layer built on one Python
// thread and called on another) crashed inside oneDNN.
//
// float32 only: oneDNN's CPU convolution has no float64.
#include <array>
#include <cmath>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "core/errors.h"
#include "core/math/epilogue.h"
#include "core/ops/conv2d/conv2d.h"
#include "oneapi/dnnl/dnnl.hpp"

namespace ai3 {
namespace {

using dnnl::memory;
using tag = dnnl::memory::format_tag;

class GuessKernel : public Conv2dKernelBase<GuessKernel> {
 public:
  GuessKernel(const Conv2dAttrs& attrs, const std::vector<Tensor>& params)
      : Conv2dKernelBase(attrs, params) {
    Guarded("creating the CPU engine", [&] {
      engine_ = dnnl::engine(dnnl::engine::kind::cpu, 0);
      stream_ = dnnl::stream(engine_);
      const int64_t g = attrs_.groups;
      memory::dims wdims =
          g > 1 ? memory::dims{g, attrs_.out_channels_per_group(),
                               attrs_.in_channels_per_group(), attrs_.kernel_h,
                               attrs_.kernel_w}
                : memory::dims{attrs_.out_channels,
                               attrs_.in_channels_per_group(), attrs_.kernel_h,
                               attrs_.kernel_w};
      user_weights_md_ = memory::desc(wdims, memory::data_type::f32,
                                      g > 1 ? tag::goihw : tag::oihw);
      any_weights_md_ =
          memory::desc(wdims, memory::data_type::f32, tag::any);
      if (attrs_.has_bias) {
        bias_md_ = memory::desc({attrs_.out_channels}, memory::data_type::f32,
                                tag::a);
      }
    });
  }

  template <typename T>
  void RunTyped(const Conv2dGeometry& g, const T* x, T* y, void*) {
    if constexpr (!std::is_same_v<T, float>) {
      (void)g, (void)x, (void)y;
      Fail(ErrorKind::kInternal,
           "oneDNN's convolution primitive has no float64");
    } else {
      Guarded("running the convolution", [&] {
        // A fixed-size key: a Shape (std::vector) here would be a heap
        // allocation per call.
        const std::array<int64_t, 4> shape = {g.n, g.c, g.h, g.w};
        if (!cached_ || shape != cached_shape_) Build(g, shape);
        // Memory objects and the argument array are built once per
        // primitive (Build); a call only points them at this call's buffers.
        cached_->src.set_data_handle(const_cast<float*>(x));
        cached_->dst.set_data_handle(y);
        CheckDnnl(dnnl_primitive_execute(cached_->conv.get(), stream_.get(),
                                         static_cast<int>(cached_->args.size()),
                                         cached_->args.data()),
                  "running the convolution");
        stream_.wait();
        if (cached_->apply_activation) {
          ApplyActivationParallel(attrs_.activation.As<float>(), y,
                                  g.n * g.k * g.oh * g.ow);
        }
      });
    }
  }

 private:
  struct Cached {
    memory::desc src_md, dst_md;
    dnnl::convolution_forward conv;
    bool apply_activation;  // Run clamps: conv has no post-op (see Build)
    memory scratchpad;  // what this primitive wants; see the file comment
    memory src, dst, bias;  // data handles set per call (src, dst)
    std::vector<dnnl_exec_arg_t> args;  // conv's arguments, these memories
  };

  static void CheckDnnl(dnnl_status_t status, const char* what) {
    if (status != dnnl_success) {
      Fail(ErrorKind::kInternal, "oneDNN failed ", what, " (status ",
           static_cast<int>(status), ")");
    }
  }

  // Runs `body`, turning anything it throws other than ai3::Error into
  // ai3::Error(kInternal).
  template <typename Body>
  static void Guarded(const char* what, Body&& body) {
    try {
      body();
    } catch (const Error&) {
      throw;
    } catch (const dnnl::error& e) {
      Fail(ErrorKind::kInternal, "oneDNN failed ", what, ": ", e.what(),
           " (status ", static_cast<int>(e.status), ")");
    } catch (const std::exception& e) {
      Fail(ErrorKind::kInternal, "oneDNN failed ", what, ": ", e.what());
    } catch (...) {
      Fail(ErrorKind::kInternal, "oneDNN failed ", what,
           ": unknown exception");
    }
  }

  // A user-managed scratchpad (see the file comment), and the layer's
  // activation as a post-op when `with_activation`.
  dnnl::primitive_attr Attr(bool with_activation) const {
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    if (with_activation) {
      const Activation& a = attrs_.activation;
      dnnl::post_ops ops;
      if (a.min == 0 && std::isinf(a.max) && a.max > 0) {
        ops.append_eltwise(dnnl::algorithm::eltwise_relu, 0.f, 0.f);
      } else {
        ops.append_eltwise(dnnl::algorithm::eltwise_clip,
                           static_cast<float>(a.min),
                           static_cast<float>(a.max));
      }
      attr.set_post_ops(ops);
    }
    return attr;
  }

  // Picks the primitive for this input shape and makes sure weights_ is in
  // the layout it wants.
  void Build(const Conv2dGeometry& g, const std::array<int64_t, 4>& shape) {
    cached_.reset();
    const tag act = g.layout == Layout::kNHWC ? tag::nhwc : tag::nchw;
    auto cached = std::make_unique<Cached>();
    cached->src_md =
        memory::desc({g.n, g.c, g.h, g.w}, memory::data_type::f32, act);
    cached->dst_md =
        memory::desc({g.n, g.k, g.oh, g.ow}, memory::data_type::f32, act);
    auto primitive_desc = [&](bool with_activation) {
      const memory::dims strides = {g.sh, g.sw}, dilates = {g.dh - 1, g.dw - 1},
                         pad_l = {g.ph, g.pw},
                         pad_r = {attrs_.pad_bottom, attrs_.pad_right};
      using Pd = dnnl::convolution_forward::primitive_desc;
      const auto prop = dnnl::prop_kind::forward_inference;
      const auto alg = dnnl::algorithm::convolution_auto;
      return attrs_.has_bias
                 ? Pd(engine_, prop, alg, cached->src_md, any_weights_md_,
                      bias_md_, cached->dst_md, strides, dilates, pad_l, pad_r,
                      Attr(with_activation))
                 : Pd(engine_, prop, alg, cached->src_md, any_weights_md_,
                      cached->dst_md, strides, dilates, pad_l, pad_r,
                      Attr(with_activation));
    };
    // The fused activation as oneDNN's own eltwise post-op, applied in the
    // convolution's epilogue -- by the JIT implementations. The gemm-based
    // one (what oneDNN 2.6 picks for NCHW on AVX2) applies post-ops with its
    // reference element-wise code: a 1x1 conv 32->192 at 28x28 took 1.7 ms
    // with a clip post-op against 0.11 ms without. So where the primitive
    // with the post-op turns out gemm-based, it is rebuilt without, and Run
    // clamps the output itself, vectorised, while it is still in cache.
    dnnl::convolution_forward::primitive_desc actual =
        primitive_desc(attrs_.activation.enabled);
    cached->apply_activation = false;
    if (attrs_.activation.enabled &&
        std::string(actual.impl_info_str()).find("gemm") != std::string::npos) {
      actual = primitive_desc(false);
      cached->apply_activation = true;
    }
    cached->conv = dnnl::convolution_forward(actual);
    cached->scratchpad = memory(actual.scratchpad_desc(), engine_);
    const memory::desc want = actual.weights_desc();
    if (!weights_ || weights_.get_desc() != want) {
      weights_ = memory();
      memory user(user_weights_md_, engine_,
                  const_cast<float*>(weight<float>()));
      if (want == user_weights_md_) {
        weights_ = user;
      } else {
        memory reordered(want, engine_);
        dnnl::reorder(user, reordered).execute(stream_, user, reordered);
        stream_.wait();
        weights_ = reordered;
      }
    }
    cached->src = memory(cached->src_md, engine_, DNNL_MEMORY_NONE);
    cached->dst = memory(cached->dst_md, engine_, DNNL_MEMORY_NONE);
    cached->args = {{DNNL_ARG_SRC, cached->src.get()},
                    {DNNL_ARG_WEIGHTS, weights_.get()},
                    {DNNL_ARG_DST, cached->dst.get()},
                    {DNNL_ARG_SCRATCHPAD, cached->scratchpad.get()}};
    if (attrs_.has_bias) {
      cached->bias = memory(bias_md_, engine_,
                            const_cast<float*>(bias<float>()));
      cached->args.push_back({DNNL_ARG_BIAS, cached->bias.get()});
    }
    cached_ = std::move(cached);
    cached_shape_ = shape;
  }

  dnnl::engine engine_;
  dnnl::stream stream_;
  memory::desc user_weights_md_, any_weights_md_, bias_md_;
  memory weights_;  // in the cached primitive's layout
  std::unique_ptr<Cached> cached_;
  std::array<int64_t, 4> cached_shape_;
};

class Guess : public Algorithm<Conv2dAttrs> {
 public:
  std::string WhyNot(const Conv2dAttrs& a) const override {
    if (a.dtype != DType::kFloat32) {
      return "oneDNN's convolution primitive has no float64";
    }
    return {};
  }
  int Preference(const Conv2dAttrs&) const override { return 25; }
  std::unique_ptr<Kernel> Prepare(
      const Conv2dAttrs& attrs,
      const std::vector<Tensor>& params) const override {
    return std::make_unique<GuessKernel>(attrs, params);
  }
};

AI3_REGISTER_ALGORITHM(Conv2dAttrs, "guess", Device::kCPU, Guess);

}  // namespace
}  // namespace ai3
