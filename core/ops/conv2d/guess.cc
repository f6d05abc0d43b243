// conv2d "guess": oneDNN's own convolution primitive with
// algorithm::convolution_auto, i.e. oneDNN's heuristic choice of
// implementation for this CPU and these shapes -- the CPU analogue of
// cuDNN's heuristic pick (hence the name). oneDNN 3.x API (3.2 from PyPI's
// onednn-cpu-gomp; third_party/math/math_configure.bzl).
//
// Per input shape the kernel builds, once: the primitive, its memory objects
// and argument arrays (a call only points them at its buffers and runs
// them), and the weights reordered into the layout the primitive asks for
// (format_tag::any; kept across shapes while the wanted layout stays the
// same). The chosen implementation depends on the input N/H/W, hence per
// shape and not at Prepare.
//
// Activation layout. The layer's tensors are plain NCHW or NHWC. For NHWC,
// and for NCHW where oneDNN has a direct implementation, the primitive runs
// on the caller's buffers. For NCHW oneDNN 3.2 mostly picks its gemm-based
// implementation (im2col + sgemm), which on the AVX-512 build machine (1
// thread, thread CPU time, ms) lost to its blocked implementations even
// counting a reorder of the input into nChw16c and of the output back:
//   resnet18 3x3 64@56: gemm 2.07, blocked+reorders 1.25, nhwc 1.02
//   resnet18 3x3 512@7: gemm 2.36, blocked+reorders 1.45
//   resnet18 conv1 7x7/2: gemm 2.34, blocked+reorders 1.47
//   mobilenet_v2 depthwise 3x3 144@56: gemm 2.92, blocked+reorders 0.82
// but won for 1x1 kernels, where the two reorders cost more than the
// convolution saves:
//   resnet50 1x1 64->256@56: gemm 0.81, blocked+reorders 1.29
//   mobilenet_v2 1x1 16->96@112: gemm 0.71, blocked+reorders 1.05
// So an NCHW layer with a kernel larger than 1x1 that oneDNN would run
// gemm-based runs blocked instead, reordering in and out around the
// convolution (what a layout pass inside ai3::Model could leave out).
//
// Fused activation. Clamps (ReLU, ReLU6) and HardSwish are oneDNN eltwise
// post-ops, applied in the epilogue of the JIT implementations. The
// exp-based ones (SiLU, sigmoid, both GELUs) are not: oneDNN 3.2's swish
// post-op cost 0.32 ns an element on 2 threads of the 2-core EPYC (a 32-channel
// depthwise 3x3 at 112x112: 0.078 ms without it, 0.207 with it), and
// ai3's own loop at AVX-512 (core/math/activation.h), run over the output
// after the convolution, about half that; efficientnet_b0 (6.2M SiLU
// elements a forward) went from 9.98 to 8.71 ms and 9.68 to 8.75 ms in
// two runs, "default" convs, alternating in one process. The gemm-based one
// applies post-ops with slow element-wise code: 1x1 64->256@56, 3.99 ms
// with a clip post-op against 0.81 ms without (oneDNN 3.2 as in 2.6). Where
// the primitive stays gemm-based, it is built without the post-op and the
// kernel clamps the output itself, vectorised, while it is still in cache.
// A residual add after the conv is oneDNN's sum post-op, in a kernel of
// its own that the graph makes when it fuses the pair (GuessResidualConv,
// residual_conv.h).
//
// Memory. The scratchpad is user-managed and, with the blocked activations,
// lives in the layer's workspace (WorkspaceBytes): nothing oneDNN needs is
// allocated per call, and oneDNN's default library-managed scratchpad,
// which lives in the thread-local storage of the thread that created the
// primitive, crashed when a Model or layer built on one Python thread was
// called on another. oneDNN's execute() itself still heap-allocates per
// call (its argument map and execution context: ~15 allocations per
// convolution, see core/model_alloc_test.cc).
//
// oneDNN's primitive cache is turned off (once, for the process's ai3
// oneDNN; torch links its own copy). Each kernel keeps its primitives per
// shape already, so the cache only shared one primitive between equal
// layers, and such a shared brgemm 1x1 primitive crashed oneDNN 3.2 inside
// exec_ker: a 4 -> 16 1x1 NHWC conv on a 1x1 map (a squeeze-excite gate),
// created as a cache hit after other layers of the same parameters had come
// and gone, segfaulted on its first run, in tests/layouts and in
// torch_models_test's maxvit; with ONEDNN_PRIMITIVE_CACHE_CAPACITY=0 both
// pass. The cost is one JIT per layer and shape, at build time.
//
// The kernel is not thread-safe for Run (a Layer runs one call at a time);
// its per-shape cache is guarded so that a workspace query from another
// thread is safe. float32 only: oneDNN's CPU convolution has no float64.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/buffer.h"
#include "core/cpu.h"
#include "core/errors.h"
#include "core/math/activation.h"
#include "core/math/epilogue.h"
#include "core/ops/conv2d/conv2d.h"
#include "core/ops/conv2d/pointwise_depthwise.h"
#include "core/ops/conv2d/residual_conv.h"
#include "core/ops/conv2d/scaled_input_conv.h"
#include "core/ops/onednn.h"
#include "oneapi/dnnl/dnnl.hpp"

namespace ai3 {
namespace {

using dnnl::memory;
using tag = dnnl::memory::format_tag;
using ConvPd = dnnl::convolution_forward::primitive_desc;
using onednn::AppendActivation;
using onednn::Execute;
using onednn::ExpBased;
using onednn::Guarded;
using onednn::Reordered;

// Workspace pieces start on cache lines (the workspace itself does: Buffer).
constexpr size_t kAlign = 64;
size_t AlignUp(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

// The weights' dims as oneDNN takes them: (g, O/g, I/g, kh, kw) grouped,
// (O, I, kh, kw) not.
memory::dims WeightDims(const Conv2dAttrs& a) {
  return a.groups > 1
             ? memory::dims{a.groups, a.out_channels_per_group(),
                            a.in_channels_per_group(), a.kernel_h, a.kernel_w}
             : memory::dims{a.out_channels, a.in_channels_per_group(),
                            a.kernel_h, a.kernel_w};
}

// The weights as the layer holds them (PyTorch's OIHW).
memory::desc UserWeightsDesc(const Conv2dAttrs& a) {
  return memory::desc(WeightDims(a), memory::data_type::f32,
                      a.groups > 1 ? tag::goihw : tag::oihw);
}

// The convolution of `a` from src to dst (weights in the layout oneDNN
// picks), with `attr`'s post-ops and scratchpad mode.
ConvPd ConvDesc(const dnnl::engine& engine, const Conv2dAttrs& a,
                const Conv2dGeometry& g, const memory::desc& src,
                const memory::desc& dst, const dnnl::primitive_attr& attr) {
  const memory::dims strides = {g.sh, g.sw}, dilates = {g.dh - 1, g.dw - 1},
                     pad_l = {g.ph, g.pw}, pad_r = {a.pad_bottom, a.pad_right};
  const auto prop = dnnl::prop_kind::forward_inference;
  const auto alg = dnnl::algorithm::convolution_auto;
  const memory::desc weights(WeightDims(a), memory::data_type::f32, tag::any);
  return a.has_bias ? ConvPd(engine, prop, alg, src, weights,
                             memory::desc({a.out_channels},
                                          memory::data_type::f32, tag::a),
                             dst, strides, dilates, pad_l, pad_r, attr)
                    : ConvPd(engine, prop, alg, src, weights, dst, strides,
                             dilates, pad_l, pad_r, attr);
}

// Whether oneDNN picked its gemm-based implementation (im2col + sgemm).
bool IsGemmBased(const ConvPd& pd) {
  return std::string(pd.impl_info_str()).find("gemm") != std::string::npos;
}

// The plain layout of the layer's activations.
tag ActivationTag(Layout layout) {
  return layout == Layout::kNHWC ? tag::nhwc : tag::nchw;
}

// A copy of a layer's bias, zeros for a layer without one.
memory BiasCopy(const dnnl::engine& engine, const Conv2dAttrs& a,
                const std::vector<Tensor>& weights) {
  memory bias(memory::desc({a.out_channels}, memory::data_type::f32, tag::a),
              engine);
  float* out = static_cast<float*>(bias.get_data_handle());
  const float* in =
      a.has_bias ? static_cast<const float*>(weights[1].data) : nullptr;
  for (int64_t k = 0; k < a.out_channels; ++k) out[k] = in ? in[k] : 0.f;
  return bias;
}

class GuessKernel : public Conv2dKernelBase<GuessKernel> {
 public:
  GuessKernel(const Conv2dAttrs& attrs, const std::vector<Tensor>& params)
      : Conv2dKernelBase(attrs, params) {
    Guarded("creating the CPU engine", [&] {
      engine_ = onednn::CpuEngine();  // primitive cache off: file comment
      stream_ = dnnl::stream(engine_);
      user_weights_md_ = UserWeightsDesc(attrs_);
    });
  }

  size_t WorkspaceBytes(const Shape& input_shape) const override {
    if (attrs_.dtype != DType::kFloat32) return 0;  // refused (WhyNot)
    const Conv2dGeometry g = GeometryOf(attrs_, input_shape);
    // An empty input or output never reaches Run (Layer::Forward).
    if (g.n * g.c * g.h * g.w == 0 || g.k * g.oh * g.ow == 0) return 0;
    size_t bytes = 0;
    Guarded("planning the convolution", [&] {
      std::lock_guard<std::mutex> lock(mutex_);
      bytes = PlanFor(g).workspace_bytes;
    });
    return bytes;
  }

  template <typename T>
  void RunTyped(const Conv2dGeometry& g, const T* x, T* y, void* workspace) {
    if constexpr (!std::is_same_v<T, float>) {
      (void)g, (void)x, (void)y, (void)workspace;
      Fail(ErrorKind::kInternal,
           "oneDNN's convolution primitive has no float64");
    } else {
      Guarded("running the convolution", [&] {
        std::lock_guard<std::mutex> lock(mutex_);
        Plan& p = PlanFor(g);
        if (p.workspace_bytes > 0 && workspace == nullptr) {
          Fail(ErrorKind::kInternal, "guess needs a workspace of ",
               p.workspace_bytes, " bytes and got none");
        }
        if (workspace != p.bound_workspace) Bind(&p, workspace);
        p.user_src.set_data_handle(const_cast<float*>(x));
        p.user_dst.set_data_handle(y);
        if (p.to_blocked) Execute(stream_, p.to_blocked, p.to_blocked_args);
        Execute(stream_, p.conv, p.conv_args);
        if (p.from_blocked)
          Execute(stream_, p.from_blocked, p.from_blocked_args);
        stream_.wait();
        if (p.apply_activation) {
          ApplyActivationParallelWidest(attrs_.activation.As<float>(), y,
                                        g.n * g.k * g.oh * g.ow);
        }
      });
    }
  }

 private:
  // Everything a call with one input shape runs: built once (Make), then
  // only pointed at the call's buffers.
  struct Plan {
    dnnl::convolution_forward conv;
    bool apply_activation = false;  // after conv (no post-op: above)
    // Reorders of the input into the blocked layout conv reads and of its
    // output back; empty where conv runs on the plain tensors.
    dnnl::reorder to_blocked, from_blocked;
    memory user_src, user_dst;  // the caller's x and y (handles per call)
    memory src, dst;            // what conv reads/writes: user_* or blocked
    memory scratchpad, bias;
    // Workspace layout: scratchpad, then the blocked src and dst, if any.
    size_t scratchpad_offset = 0, src_offset = 0, dst_offset = 0;
    size_t workspace_bytes = 0;
    void* bound_workspace = nullptr;  // where the memories above point
    std::vector<dnnl_exec_arg_t> conv_args, to_blocked_args, from_blocked_args;
  };

  // A user-managed scratchpad (see the file comment), and the layer's
  // activation as a post-op when `with_activation`.
  dnnl::primitive_attr Attr(bool with_activation) const {
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    if (with_activation) {
      dnnl::post_ops ops;
      AppendActivation(attrs_.activation, &ops);
      attr.set_post_ops(ops);
    }
    return attr;
  }

  ConvPd PrimitiveDesc(const Conv2dGeometry& g, const memory::desc& src,
                       const memory::desc& dst, bool with_activation) const {
    return ConvDesc(engine_, attrs_, g, src, dst, Attr(with_activation));
  }

  // The plan for this input shape, built when the shape changes. Caller
  // holds mutex_.
  Plan& PlanFor(const Conv2dGeometry& g) const {
    // A fixed-size key: a Shape (std::vector) here would be a heap
    // allocation per call.
    const std::array<int64_t, 4> shape = {g.n, g.c, g.h, g.w};
    if (!plan_ || shape != plan_shape_) {
      plan_.reset();
      plan_ = Make(g);
      plan_shape_ = shape;
    }
    return *plan_;
  }

  std::unique_ptr<Plan> Make(const Conv2dGeometry& g) const {
    auto p = std::make_unique<Plan>();
    const tag act = ActivationTag(g.layout);
    const auto f32 = memory::data_type::f32;
    const memory::dims src_dims = {g.n, g.c, g.h, g.w},
                       dst_dims = {g.n, g.k, g.oh, g.ow};
    const memory::desc user_src_md(src_dims, f32, act),
        user_dst_md(dst_dims, f32, act);
    // The exp-based activations never go to oneDNN (file comment).
    const bool own_activation =
        attrs_.activation.enabled && ExpBased(attrs_.activation.fn);
    const bool activation = attrs_.activation.enabled && !own_activation;
    ConvPd pd = PrimitiveDesc(g, user_src_md, user_dst_md, activation);
    // Blocked activations where they paid (file comment).
    if (IsGemmBased(pd) && g.kh * g.kw > 1) {
      try {
        ConvPd blocked =
            PrimitiveDesc(g, memory::desc(src_dims, f32, tag::any),
                          memory::desc(dst_dims, f32, tag::any), activation);
        if (!IsGemmBased(blocked)) pd = blocked;
      } catch (const dnnl::error&) {
        // No implementation for free layouts: the plain one stands.
      }
    }
    if (activation && IsGemmBased(pd)) {
      pd = PrimitiveDesc(g, user_src_md, user_dst_md, false);
      p->apply_activation = true;
    }
    p->apply_activation = p->apply_activation || own_activation;
    p->conv = dnnl::convolution_forward(pd);

    // The workspace: scratchpad, blocked input, blocked output.
    const bool reorder_src = pd.src_desc() != user_src_md;
    const bool reorder_dst = pd.dst_desc() != user_dst_md;
    size_t bytes = 0;
    p->scratchpad_offset = bytes;
    bytes = AlignUp(bytes + pd.scratchpad_desc().get_size());
    p->src_offset = bytes;
    if (reorder_src) bytes = AlignUp(bytes + pd.src_desc().get_size());
    p->dst_offset = bytes;
    if (reorder_dst) bytes = AlignUp(bytes + pd.dst_desc().get_size());
    p->workspace_bytes = bytes;

    // Memories without data: handles are set per call (x, y) and per
    // workspace (Bind).
    p->user_src = memory(user_src_md, engine_, DNNL_MEMORY_NONE);
    p->user_dst = memory(user_dst_md, engine_, DNNL_MEMORY_NONE);
    p->src = reorder_src ? memory(pd.src_desc(), engine_, DNNL_MEMORY_NONE)
                         : p->user_src;
    p->dst = reorder_dst ? memory(pd.dst_desc(), engine_, DNNL_MEMORY_NONE)
                         : p->user_dst;
    p->scratchpad = memory(pd.scratchpad_desc(), engine_, DNNL_MEMORY_NONE);
    if (reorder_src) {
      p->to_blocked = dnnl::reorder(p->user_src, p->src);
      p->to_blocked_args = {{DNNL_ARG_FROM, p->user_src.get()},
                            {DNNL_ARG_TO, p->src.get()}};
    }
    if (reorder_dst) {
      p->from_blocked = dnnl::reorder(p->dst, p->user_dst);
      p->from_blocked_args = {{DNNL_ARG_FROM, p->dst.get()},
                              {DNNL_ARG_TO, p->user_dst.get()}};
    }
    ReorderWeights(pd.weights_desc());
    p->conv_args = {{DNNL_ARG_SRC, p->src.get()},
                    {DNNL_ARG_WEIGHTS, weights_.get()},
                    {DNNL_ARG_DST, p->dst.get()},
                    {DNNL_ARG_SCRATCHPAD, p->scratchpad.get()}};
    if (attrs_.has_bias) {
      p->bias =
          memory(pd.bias_desc(), engine_, const_cast<float*>(bias<float>()));
      p->conv_args.push_back({DNNL_ARG_BIAS, p->bias.get()});
    }
    return p;
  }

  // Makes weights_ hold the weights in the layout `want` (once per layout).
  void ReorderWeights(const memory::desc& want) const {
    if (weights_ && weights_.get_desc() == want) return;
    weights_ = memory();
    const float* w = weight<float>();
    weights_ = want == user_weights_md_
                   ? memory(user_weights_md_, engine_, const_cast<float*>(w))
                   : Reordered(engine_, stream_, user_weights_md_, want, w);
  }

  // Points the plan's workspace memories into `workspace`.
  static void Bind(Plan* p, void* workspace) {
    char* base = static_cast<char*>(workspace);
    if (p->scratchpad.get_desc().get_size() > 0) {
      p->scratchpad.set_data_handle(base + p->scratchpad_offset);
    }
    if (p->to_blocked) p->src.set_data_handle(base + p->src_offset);
    if (p->from_blocked) p->dst.set_data_handle(base + p->dst_offset);
    p->bound_workspace = workspace;
  }

  dnnl::engine engine_;
  mutable dnnl::stream stream_;
  memory::desc user_weights_md_;
  // The per-shape cache, built by the const WorkspaceBytes query too.
  mutable std::mutex mutex_;
  mutable memory weights_;  // in the current plan's layout
  mutable std::unique_ptr<Plan> plan_;
  mutable std::array<int64_t, 4> plan_shape_{};
};

// What a fused oneDNN convolution made for one input shape holds and runs
// (GuessPointwiseDepthwise, GuessResidualConv): its primitive, the caller's
// tensors as memories whose handles are set per call, copies of the
// weights and bias, the scratchpad, and the argument array, built once.
class FusedConvPrimitive {
 protected:
  // A new T, built (T::Build(args...), false where T declines the layers),
  // or null; oneDNN's own failures become ai3::Error naming `what`.
  template <typename T, typename... Args>
  static std::unique_ptr<T> MakeBuilt(const char* what, const Args&... args) {
    std::unique_ptr<T> fused;
    Guarded(what, [&] {
      fused.reset(new T);
      if (!fused->Build(args...)) fused.reset();
    });
    return fused;
  }

  // conv_ from `pd`, reading and writing the caller's tensors of these
  // descriptions, with its scratchpad; args_ names src, weights_, dst and
  // the scratchpad (a caller appends the rest).
  void Bind(const ConvPd& pd, const memory::desc& src,
            const memory::desc& dst) {
    conv_ = dnnl::convolution_forward(pd);
    workspace_ = Buffer(pd.scratchpad_desc().get_size());
    scratchpad_ = memory(pd.scratchpad_desc(), engine_, workspace_.data());
    src_ = memory(src, engine_, DNNL_MEMORY_NONE);
    dst_ = memory(dst, engine_, DNNL_MEMORY_NONE);
    args_ = {{DNNL_ARG_SRC, src_.get()},
             {DNNL_ARG_WEIGHTS, weights_.get()},
             {DNNL_ARG_DST, dst_.get()},
             {DNNL_ARG_SCRATCHPAD, scratchpad_.get()}};
  }

  // The convolution of `a` at `g` on the caller's plain tensors (the
  // layer's layout), with `ops` as post-ops, into *pd and its tensors'
  // descriptions; false where oneDNN has no implementation for it, or only
  // a gemm-based or reference one, or would want other layouts: where the
  // fused kernel would not pay (GuessResidualConv, GuessScaledInputConv).
  bool PlainConv(const Conv2dAttrs& a, const Conv2dGeometry& g,
                 const dnnl::post_ops& ops, ConvPd* pd, memory::desc* src,
                 memory::desc* dst) {
    const auto f32 = memory::data_type::f32;
    *src = memory::desc({g.n, g.c, g.h, g.w}, f32, ActivationTag(g.layout));
    *dst = memory::desc({g.n, g.k, g.oh, g.ow}, f32, ActivationTag(g.layout));
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    attr.set_post_ops(ops);
    try {
      *pd = ConvDesc(engine_, a, g, *src, *dst, attr);
    } catch (const dnnl::error&) {
      return false;
    }
    return !IsGemmBased(*pd) &&
           std::string(pd->impl_info_str()).find("ref") == std::string::npos &&
           pd->src_desc() == *src && pd->dst_desc() == *dst;
  }

  // A copy of the layer's bias, if it has one, as conv_'s bias argument.
  void BindBias(const Conv2dAttrs& a, const std::vector<Tensor>& weights) {
    if (!a.has_bias) return;
    bias_ = BiasCopy(engine_, a, weights);
    args_.push_back({DNNL_ARG_BIAS, bias_.get()});
  }

  // One run of conv_ from `input` into `output`.
  void RunOn(const char* what, const Tensor& input, const Tensor& output) {
    Guarded(what, [&] {
      src_.set_data_handle(input.data);
      dst_.set_data_handle(output.data);
      Execute(stream_, conv_, args_);
      stream_.wait();
    });
  }

  dnnl::engine engine_ = onednn::CpuEngine();
  dnnl::stream stream_{engine_};
  dnnl::convolution_forward conv_;
  memory src_, dst_;  // the caller's tensors (handles per call)
  memory weights_, bias_, scratchpad_;
  Buffer workspace_;  // the scratchpad's memory
  std::vector<dnnl_exec_arg_t> args_;
};

// A 1x1 conv2d and the 3x3 depthwise conv2d reading it
// (pointwise_depthwise.h) as one oneDNN convolution with a depthwise
// post-op: its JIT kernel keeps a few rows of the expanded tensor in cache
// and runs the depthwise over them, so the expanded tensor never reaches
// memory. oneDNN 3.2 on the 2-core EPYC, NHWC, ReLU6 after each, ms, the
// two primitives one after the other against fused (prototype, best of 30):
//   batch 8, 16->96 at 112x112, depthwise stride 2:  4.3-5.6 vs 2.3-2.6
//   batch 8, 24->144 at 56x56, stride 1:             2.5-2.7 vs 1.4-1.5
//   batch 8, 24->144 at 56x56, stride 2:             1.2-1.6 vs 1.0-1.2
//   batch 8, 28x28 and below; batch 1, every shape:  within noise
// For most batch-1 pairs oneDNN has only ref_fused_convolution, its two
// primitives run through a buffer, which gains nothing: Make declines
// those, and the layers run apart as before.
class GuessPointwiseDepthwise final : public PointwiseDepthwise,
                                      FusedConvPrimitive {
 public:
  static std::unique_ptr<PointwiseDepthwise> Make(
      const Conv2dAttrs& pw, const std::vector<Tensor>& pw_weights,
      const Conv2dAttrs& dw, const std::vector<Tensor>& dw_weights,
      const Shape& input_shape) {
    if (!Takes(pw, dw, input_shape)) return nullptr;
    return MakeBuilt<GuessPointwiseDepthwise>(
        "planning a fused pointwise and depthwise convolution", pw, pw_weights,
        dw, dw_weights, input_shape);
  }

  void Run(const Tensor& input, const Tensor& output) override {
    RunOn("running a fused pointwise and depthwise convolution", input, output);
  }

 private:
  friend class FusedConvPrimitive;  // MakeBuilt
  GuessPointwiseDepthwise() = default;

  // What oneDNN's depthwise post-op takes (a 3x3 depthwise, stride 1 or 2,
  // padding 1, after a unit 1x1), in NHWC float32 (what was measured); an
  // exp-based activation (which ai3's guess otherwise runs itself, file
  // comment) only on an expanded tensor larger than the last-level cache.
  static bool Takes(const Conv2dAttrs& pw, const Conv2dAttrs& dw,
                    const Shape& input_shape) {
    auto plain = [](const Conv2dAttrs& a) {
      return a.dtype == DType::kFloat32 && a.layout == Layout::kNHWC &&
             a.dilation_h == 1 && a.dilation_w == 1;
    };
    auto exp_based = [](const Conv2dAttrs& a) {
      return a.activation.enabled && ExpBased(a.activation.fn);
    };
    const int64_t e = pw.out_channels;
    if (input_shape.size() == 4 && (exp_based(pw) || exp_based(dw))) {
      // oneDNN's exp-based post-ops cost about twice ai3's own loop (file
      // comment). Fused, that pays only where the expanded tensor would
      // otherwise go through memory: where it outgrows the last-level
      // cache. EfficientNet-B0 at batch 8, SiLU, "default" convs, ms, fused
      // against apart (one process, medians of 8):
      //   16->96 at 112x112 (38.5 MB), stride 2: 5.6 vs 4.5 + 2.8
      //   24->144 at 56x56 (14.5 MB), stride 1:  4.2 vs 1.7 + 1.9
      // whole model 58.0 vs 60.0 with both fused.
      const long cache = LastLevelCacheBytes();
      const double expanded = 4.0 * input_shape[0] * input_shape[1] *
                              input_shape[2] * static_cast<double>(e);
      if (cache <= 0 || expanded <= static_cast<double>(cache)) return false;
    }
    return plain(pw) && plain(dw) && pw.is_1x1_unit() && pw.groups == 1 &&
           dw.in_channels == e && dw.out_channels == e && dw.groups == e &&
           dw.kernel_h == 3 && dw.kernel_w == 3 && dw.stride_h == dw.stride_w &&
           (dw.stride_h == 1 || dw.stride_h == 2) && dw.pad_top == 1 &&
           dw.pad_left == 1 && dw.pad_bottom == 1 && dw.pad_right == 1 &&
           input_shape.size() == 4 && input_shape[3] == pw.in_channels &&
           input_shape[0] * input_shape[1] * input_shape[2] > 0 && e > 0;
  }

  // The primitive and its memories; false where oneDNN has no fused
  // implementation worth running (class comment) or would write another
  // shape or layout than the depthwise layer's.
  bool Build(const Conv2dAttrs& pw, const std::vector<Tensor>& pw_weights,
             const Conv2dAttrs& dw, const std::vector<Tensor>& dw_weights,
             const Shape& input_shape) {
    const auto f32 = memory::data_type::f32;
    const int64_t n = input_shape[0], h = input_shape[1], w = input_shape[2];
    const int64_t c = pw.in_channels, e = pw.out_channels, s = dw.stride_h;
    const Shape out = dw.OutputShape(
        Tensor{nullptr, DType::kFloat32, {n, h, w, e}, {}, Layout::kNHWC});
    const memory::desc src_md({n, c, h, w}, f32, tag::nhwc),
        mid_md({n, e, h, w}, f32, tag::nhwc),
        dst_md({n, e, out[1], out[2]}, f32, tag::nhwc),
        bias_md({e}, f32, tag::a);
    dnnl::post_ops ops;
    AppendActivation(pw.activation, &ops);
    ops.append_dw(f32, f32, f32, 3, s, 1);
    AppendActivation(dw.activation, &ops);
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    attr.set_post_ops(ops);
    const memory::desc any_weights({e, c, 1, 1}, f32, tag::any);
    const auto prop = dnnl::prop_kind::forward_inference;
    const auto alg = dnnl::algorithm::convolution_auto;
    ConvPd pd;
    try {
      // With a bias always: oneDNN 3.2's fused kernel (jit_1x1) crashed
      // on a pointwise conv without one (graph_test's HardSwish case).
      pd = ConvPd(engine_, prop, alg, src_md, any_weights, bias_md, mid_md,
                  {1, 1}, {0, 0}, {0, 0}, attr);
    } catch (const dnnl::error&) {
      return false;  // no implementation takes the pair
    }
    if (std::string(pd.impl_info_str()).find("ref") != std::string::npos ||
        pd.dst_desc() != dst_md) {
      return false;
    }
    weights_ =
        Reordered(engine_, stream_, memory::desc({e, c, 1, 1}, f32, tag::oihw),
                  pd.weights_desc(), pw_weights[0].data);
    dw_weights_ = Reordered(
        engine_, stream_, memory::desc({e, 1, 1, 3, 3}, f32, tag::goihw),
        pd.query_md(dnnl::query::exec_arg_md,
                    DNNL_ARG_ATTR_POST_OP_DW | DNNL_ARG_WEIGHTS),
        dw_weights[0].data);
    bias_ = BiasCopy(engine_, pw, pw_weights);
    dw_bias_ = BiasCopy(engine_, dw, dw_weights);
    Bind(pd, src_md, dst_md);
    args_.insert(
        args_.end(),
        {{DNNL_ARG_ATTR_POST_OP_DW | DNNL_ARG_WEIGHTS, dw_weights_.get()},
         {DNNL_ARG_BIAS, bias_.get()},
         {DNNL_ARG_ATTR_POST_OP_DW | DNNL_ARG_BIAS, dw_bias_.get()}});
    return true;
  }

  memory dw_weights_, dw_bias_;  // the depthwise post-op's
};

const bool kPointwiseDepthwiseRegistered = [] {
  PointwiseDepthwiseFusion() = &GuessPointwiseDepthwise::Make;
  return true;
}();

// A conv2d that adds its result into a residual in place
// (residual_conv.h): oneDNN's sum post-op, then the activation after the
// add (a clamp: ResNet's relu) as an eltwise post-op, in the epilogue of
// the JIT kernel, so the add's own pass over memory is gone. Declined
// where oneDNN would run its gemm-based implementation (post-ops there are
// slow element-wise passes, file comment), a reference one, or blocked
// activations (the residual is in the layer's plain layout), and for
// exp-based activations (which guess runs itself, file comment).
class GuessResidualConv final : public ResidualConv, FusedConvPrimitive {
 public:
  static std::unique_ptr<ResidualConv> Make(const Conv2dAttrs& conv,
                                            const std::vector<Tensor>& weights,
                                            const Activation& after,
                                            const Shape& input_shape) {
    if (conv.dtype != DType::kFloat32 || conv.activation.enabled ||
        !after.IsClamp() || input_shape.size() != 4 ||
        NumElements(input_shape) == 0) {
      return nullptr;
    }
    return MakeBuilt<GuessResidualConv>(
        "planning a convolution fused with a residual add", conv, weights,
        after, input_shape);
  }

  void Run(const Tensor& input, const Tensor& accumulator) override {
    RunOn("running a convolution fused with a residual add", input,
          accumulator);
  }

 private:
  friend class FusedConvPrimitive;  // MakeBuilt
  GuessResidualConv() = default;

  bool Build(const Conv2dAttrs& a, const std::vector<Tensor>& weights,
             const Activation& after, const Shape& input_shape) {
    const Conv2dGeometry g = GeometryOf(a, input_shape);
    if (g.k * g.oh * g.ow == 0) return false;
    dnnl::post_ops ops;
    ops.append_sum(1.f);
    AppendActivation(after, &ops);
    ConvPd pd;
    memory::desc src_md, dst_md;
    if (!PlainConv(a, g, ops, &pd, &src_md, &dst_md)) return false;
    weights_ = Reordered(engine_, stream_, UserWeightsDesc(a),
                         pd.weights_desc(), weights[0].data);
    Bind(pd, src_md, dst_md);
    BindBias(a, weights);
    return true;
  }
};

const bool kResidualConvRegistered = [] {
  ResidualConvFusion() = &GuessResidualConv::Make;
  return true;
}();

// A conv2d whose input is x times a per-image, per-channel gate
// (scaled_input_conv.h: a squeeze-excitation block's projecting conv), run
// on x with its weights scaled by the gate, per image (each has its own
// gate), then the convolution. The weights stay in the blocked layout
// oneDNN's convolution reads. Which input channel each of their elements
// belongs to is learnt once, by reordering the channel numbers (1 to C; the
// layout's padding reads 0) into that layout, and kept as runs of elements
// of one channel: oneDNN's 1x1 layouts block the output channels
// innermost, so a run is 16 or 32 contiguous weights, one vector multiply
// or two. (A oneDNN reorder of the layer's weights with the gate as its
// scales took 4-14 us a call for 512-9600 weights, timed alone.) Declined
// where the weights
// number more than a quarter of an image's input elements, as the scaling
// would cost about the multiply it replaces (the late, small maps of
// EfficientNet: 1152 -> 320 at 7x7), for activations other than clamps
// (the exp-based ones are guess's own pass after the conv, file comment),
// and where oneDNN would run gemm-based, a reference implementation or
// blocked activations. The scaling runs on every thread: 240 -> 40 at
// 28x28 (9600 weights) ran 12 us over the conv alone with the scaling on
// one thread (through a per-element channel index), 10 with these runs on
// one thread, 5 on both (the convolution's other thread reads what the
// first wrote). EfficientNet-B0 at batch 1 on the 2-core Xeon, its five fused
// pairs (32 -> 16 at 112x112 to 240 -> 40 at 28x28): 525 us a forward
// (mul + conv) before, 331 after; the model back to back against ONNX
// Runtime, 0.93-0.95x before, 0.88-0.90x after.
class GuessScaledInputConv final : public ScaledInputConv, FusedConvPrimitive {
 public:
  static std::unique_ptr<ScaledInputConv> Make(
      const Conv2dAttrs& conv, const std::vector<Tensor>& weights,
      const Shape& input_shape, int64_t gate_images) {
    if (conv.dtype != DType::kFloat32 || conv.groups != 1 ||
        (conv.activation.enabled && !conv.activation.IsClamp()) ||
        input_shape.size() != 4 || NumElements(input_shape) == 0 ||
        (gate_images != 1 && gate_images != input_shape[0])) {
      return nullptr;
    }
    const Conv2dGeometry g = GeometryOf(conv, input_shape);
    const double weight_elements = static_cast<double>(g.k) * g.c * g.kh * g.kw;
    if (g.k * g.oh * g.ow == 0 ||
        4 * weight_elements > static_cast<double>(g.c) * g.h * g.w) {
      return nullptr;
    }
    return MakeBuilt<GuessScaledInputConv>(
        "planning a convolution fused with its input's gate", conv, weights,
        input_shape, gate_images);
  }

  void Run(const Tensor& input, const Tensor& gate,
           const Tensor& output) override {
    Guarded("running a convolution fused with its input's gate", [&] {
      const float* x = input.data_as<const float>();
      const float* s = gate.data_as<const float>();
      float* y = output.data_as<float>();
      for (int64_t n = 0; n < images_; ++n) {
        if (n == 0 || gate_images_ > 1) Scale(s + n * channels_);
        src_.set_data_handle(const_cast<float*>(x + n * input_image_));
        dst_.set_data_handle(y + n * output_image_);
        Execute(stream_, conv_, args_);
        stream_.wait();
      }
    });
  }

 private:
  friend class FusedConvPrimitive;  // MakeBuilt
  GuessScaledInputConv() = default;

  bool Build(const Conv2dAttrs& a, const std::vector<Tensor>& weights,
             const Shape& input_shape, int64_t gate_images) {
    Shape image = input_shape;
    image[0] = 1;  // one primitive per image: each has its own weights
    const Conv2dGeometry g = GeometryOf(a, image);
    dnnl::post_ops ops;
    AppendActivation(a.activation, &ops);  // a clamp, or nothing (Make)
    ConvPd pd;
    memory::desc src_md, dst_md;
    if (!PlainConv(a, g, ops, &pd, &src_md, &dst_md)) return false;
    const memory::desc user = UserWeightsDesc(a), blocked = pd.weights_desc();
    base_ = Reordered(engine_, stream_, user, blocked, weights[0].data);
    // Each weight's input channel plus one (OIHW: rows of kh * kw taps, C
    // rows per output channel), in oneDNN's layout; exact in float.
    std::vector<float> numbers(NumElements(weights[0].shape));
    for (size_t j = 0; j < numbers.size(); ++j) {
      numbers[j] = static_cast<float>((j / (g.kh * g.kw)) % g.c + 1);
    }
    const memory placed =
        Reordered(engine_, stream_, user, blocked, numbers.data());
    const float* number = static_cast<const float*>(placed.get_data_handle());
    const int64_t size = static_cast<int64_t>(blocked.get_size() / 4);
    for (int64_t j = 0; j < size; ++j) {
      const int32_t c = static_cast<int32_t>(number[j]);
      if (runs_.empty() || runs_.back().channel != c) {
        runs_.push_back({j, 0, c});
      }
      ++runs_.back().length;
    }
    gate_.assign(g.c + 1, 0.f);
    weights_ = memory(blocked, engine_);
    Bind(pd, src_md, dst_md);
    BindBias(a, weights);
    images_ = input_shape[0];
    gate_images_ = gate_images;
    channels_ = g.c;
    input_image_ = g.c * g.h * g.w;
    output_image_ = g.k * g.oh * g.ow;
    return true;
  }

  // weights_ = base_ with input channel c's weights times s[c].
  void Scale(const float* s) {
    std::copy(s, s + channels_, gate_.begin() + 1);
    const float* base = static_cast<const float*>(base_.get_data_handle());
    float* out = static_cast<float*>(weights_.get_data_handle());
    const int64_t runs = static_cast<int64_t>(runs_.size());
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < runs; ++i) {
      const ChannelRun& r = runs_[i];
      const float gate = gate_[r.channel];
      const float* __restrict from = base + r.start;
      float* __restrict to = out + r.start;
      for (int32_t t = 0; t < r.length; ++t) to[t] = from[t] * gate;
    }
  }

  // Consecutive elements of base_ of one input channel (plus one; 0: the
  // layout's padding, which gate_[0] = 0 keeps 0).
  struct ChannelRun {
    int64_t start;
    int32_t length;
    int32_t channel;
  };
  memory base_;                   // the weights in oneDNN's layout
  std::vector<ChannelRun> runs_;  // covering base_, in order
  std::vector<float> gate_;       // 0, then the current image's gate
  int64_t images_ = 0, gate_images_ = 0, channels_ = 0;
  int64_t input_image_ = 0, output_image_ = 0;
};

const bool kScaledInputConvRegistered = [] {
  ScaledInputConvFusion() = &GuessScaledInputConv::Make;
  return true;
}();

class Guess : public KernelAlgorithm<Conv2dAttrs, GuessKernel> {
 public:
  std::string WhyNot(const Conv2dAttrs& a) const override {
    if (a.dtype != DType::kFloat32) {
      return "oneDNN's convolution primitive has no float64";
    }
    return {};
  }
};

AI3_REGISTER_ALGORITHM(Conv2dAttrs, "guess", Device::kCPU, Guess);

}  // namespace
}  // namespace ai3
