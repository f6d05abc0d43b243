// conv3d "guess": oneDNN's own convolution primitive with
// algorithm::convolution_auto on the layer's plain NCDHW or NDHWC tensors,
// i.e. oneDNN's heuristic choice of implementation for this CPU and shape
// (as conv2d's guess; core/ops/conv2d/guess.cc).
//
// Per input shape the kernel builds, once: the primitive, its memories and
// argument arrays, and the weights reordered into the layout it asks for;
// a call only points the memories at its buffers. The scratchpad is
// user-managed and lives in the layer's workspace, so a forward pass
// allocates nothing of its own.
//
// On NCDHW oneDNN 3.2 picks its gemm-based implementation (vol2col +
// sgemm), which lost to its blocked direct one (nCdhw16c) even counting a
// reorder of the input in and of the output back, as for conv2d's NCHW:
// r3d_18's 3x3x3 64 -> 64 at 16x56x56, batch 1, 2 threads of the 2-core
// EPYC (Zen 4): gemm-based 105-179 ms, blocked 64 ms plus 5 ms of
// reorder. So there the convolution runs blocked, between two reorders
// whose buffers are in the workspace too. A fused clamp (ReLU) is an
// eltwise post-op, applied as the convolution writes; an exp-based
// activation runs after it over the output, in ai3's vectorised loop
// (conv2d's guess measured oneDNN's exp-based post-ops at twice its cost).
//
// float32 only: oneDNN's CPU convolution has no float64.
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/math/activation.h"
#include "core/ops/conv3d/conv3d.h"
#include "core/ops/onednn.h"
#include "oneapi/dnnl/dnnl.hpp"

namespace ai3 {
namespace {

using dnnl::memory;
using tag = dnnl::memory::format_tag;
using ConvPd = dnnl::convolution_forward::primitive_desc;

class GuessKernel : public WeightBiasKernel<Conv3dAttrs> {
 public:
  GuessKernel(const Conv3dAttrs& attrs, const std::vector<Tensor>& params)
      : WeightBiasKernel(attrs, params) {
    onednn::Guarded("creating the CPU engine", [&] {
      engine_ = onednn::CpuEngine();
      stream_ = dnnl::stream(engine_);
    });
  }

  size_t WorkspaceBytes(const Shape& input_shape) const override {
    if (attrs_.dtype != DType::kFloat32) return 0;  // refused (WhyNot)
    size_t bytes = 0;
    onednn::Guarded("planning the 3-D convolution", [&] {
      std::lock_guard<std::mutex> lock(mutex_);
      bytes = PlanFor(input_shape).workspace_bytes;
    });
    return bytes;
  }

  void Run(const Tensor& input, const Tensor& output,
           void* workspace) override {
    onednn::Guarded("running the 3-D convolution", [&] {
      std::lock_guard<std::mutex> lock(mutex_);
      Plan& p = PlanFor(input.shape);
      if (p.workspace_bytes > 0) {
        if (workspace == nullptr) {
          Fail(ErrorKind::kInternal, "guess needs a workspace of ",
               p.workspace_bytes, " bytes and got none");
        }
        char* base = static_cast<char*>(workspace);
        p.scratchpad.set_data_handle(base);
        if (p.to_blocked) {
          p.conv_src.set_data_handle(base + p.src_offset);
          p.conv_dst.set_data_handle(base + p.dst_offset);
        }
      }
      p.src.set_data_handle(input.data);
      p.dst.set_data_handle(output.data);
      if (p.to_blocked)
        onednn::Execute(stream_, p.to_blocked, p.to_blocked_args);
      onednn::Execute(stream_, p.conv, p.conv_args);
      if (p.from_blocked) {
        onednn::Execute(stream_, p.from_blocked, p.from_blocked_args);
      }
      stream_.wait();
    });
    if (!PostOpActivation()) {
      ApplyActivationParallelWidest(attrs_.activation.As<float>(),
                                    output.data_as<float>(), output.numel());
    }
  }

 private:
  struct Plan {
    Shape shape;
    dnnl::convolution_forward conv;
    // The caller's tensors; the convolution's own where it runs blocked
    // (conv_src/conv_dst in the workspace, filled and emptied by the
    // reorders), else the same memories.
    memory src, dst, conv_src, conv_dst, weights, bias, scratchpad;
    dnnl::reorder to_blocked, from_blocked;  // null where it runs plain
    size_t workspace_bytes = 0, src_offset = 0, dst_offset = 0;
    std::vector<dnnl_exec_arg_t> conv_args, to_blocked_args, from_blocked_args;
  };

  // Whether the convolution applies the fused activation as post-ops
  // (file comment).
  bool PostOpActivation() const {
    return attrs_.activation.enabled && !onednn::ExpBased(attrs_.activation.fn);
  }

  // The convolution from `src` to `dst` (weights in the layout oneDNN
  // picks) with a user scratchpad and the activation's post-ops.
  ConvPd Describe(const Conv3dGeometry& g, const memory::desc& src,
                  const memory::desc& dst,
                  const memory::dims& weight_dims) const {
    const Conv3dAttrs& a = attrs_;
    const auto f32 = memory::data_type::f32;
    const memory::desc any_weights(weight_dims, f32, tag::any);
    const memory::desc bias_md({g.k}, f32, tag::a);
    const memory::dims strides(g.stride.begin(), g.stride.end());
    const memory::dims dilates = {g.dilation[0] - 1, g.dilation[1] - 1,
                                  g.dilation[2] - 1};
    const memory::dims pad_l = {a.padding[0], a.padding[2], a.padding[4]};
    const memory::dims pad_r = {a.padding[1], a.padding[3], a.padding[5]};
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    if (PostOpActivation()) {
      dnnl::post_ops ops;
      onednn::AppendActivation(a.activation, &ops);
      attr.set_post_ops(ops);
    }
    const auto prop = dnnl::prop_kind::forward_inference;
    const auto alg = dnnl::algorithm::convolution_auto;
    return a.has_bias ? ConvPd(engine_, prop, alg, src, any_weights, bias_md,
                               dst, strides, dilates, pad_l, pad_r, attr)
                      : ConvPd(engine_, prop, alg, src, any_weights, dst,
                               strides, dilates, pad_l, pad_r, attr);
  }

  // The plan for `shape`, built on the first call with it.
  Plan& PlanFor(const Shape& shape) const {
    if (plan_ && plan_->shape == shape) return *plan_;
    const Conv3dAttrs& a = attrs_;
    const Conv3dGeometry g = GeometryOf(a, shape);
    const auto f32 = memory::data_type::f32;
    const tag plain = a.layout == Layout::kNHWC ? tag::ndhwc : tag::ncdhw;
    const memory::desc src_md({g.n, g.c, g.in[0], g.in[1], g.in[2]}, f32,
                              plain);
    const memory::desc dst_md({g.n, g.k, g.out[0], g.out[1], g.out[2]}, f32,
                              plain);
    const memory::dims weight_dims =
        a.groups > 1
            ? memory::dims{a.groups,    g.kg,        g.cg,
                           g.kernel[0], g.kernel[1], g.kernel[2]}
            : memory::dims{g.k, g.cg, g.kernel[0], g.kernel[1], g.kernel[2]};
    ConvPd pd = Describe(g, src_md, dst_md, weight_dims);
    const bool gemm_based =
        std::string(pd.impl_info_str()).find("gemm") != std::string::npos;
    if (gemm_based && a.layout == Layout::kNCHW) {
      const memory::desc any_src({g.n, g.c, g.in[0], g.in[1], g.in[2]}, f32,
                                 tag::any);
      const memory::desc any_dst({g.n, g.k, g.out[0], g.out[1], g.out[2]}, f32,
                                 tag::any);
      pd = Describe(g, any_src, any_dst, weight_dims);
    }
    auto plan = std::make_unique<Plan>();
    plan->shape = shape;
    plan->conv = dnnl::convolution_forward(pd);
    plan->src = memory(src_md, engine_, DNNL_MEMORY_NONE);
    plan->dst = memory(dst_md, engine_, DNNL_MEMORY_NONE);
    plan->conv_src = plan->src;
    plan->conv_dst = plan->dst;
    // The workspace: the scratchpad, then the blocked input and output.
    auto align = [](size_t n) { return (n + 63) / 64 * 64; };
    size_t bytes = align(pd.scratchpad_desc().get_size());
    if (pd.src_desc() != src_md || pd.dst_desc() != dst_md) {
      plan->conv_src = memory(pd.src_desc(), engine_, DNNL_MEMORY_NONE);
      plan->conv_dst = memory(pd.dst_desc(), engine_, DNNL_MEMORY_NONE);
      plan->src_offset = bytes;
      bytes += align(pd.src_desc().get_size());
      plan->dst_offset = bytes;
      bytes += align(pd.dst_desc().get_size());
      plan->to_blocked = dnnl::reorder(plan->src, plan->conv_src);
      plan->from_blocked = dnnl::reorder(plan->conv_dst, plan->dst);
      plan->to_blocked_args = {{DNNL_ARG_FROM, plan->src.get()},
                               {DNNL_ARG_TO, plan->conv_src.get()}};
      plan->from_blocked_args = {{DNNL_ARG_FROM, plan->conv_dst.get()},
                                 {DNNL_ARG_TO, plan->dst.get()}};
    }
    plan->workspace_bytes = bytes;
    plan->weights = onednn::Reordered(
        engine_, stream_,
        memory::desc(weight_dims, f32, a.groups > 1 ? tag::goidhw : tag::oidhw),
        pd.weights_desc(), weight_);
    plan->scratchpad = memory(pd.scratchpad_desc(), engine_, DNNL_MEMORY_NONE);
    plan->conv_args = {{DNNL_ARG_SRC, plan->conv_src.get()},
                       {DNNL_ARG_WEIGHTS, plan->weights.get()},
                       {DNNL_ARG_DST, plan->conv_dst.get()},
                       {DNNL_ARG_SCRATCHPAD, plan->scratchpad.get()}};
    if (a.has_bias) {
      plan->bias = memory(memory::desc({g.k}, f32, tag::a), engine_,
                          const_cast<void*>(bias_));
      plan->conv_args.push_back({DNNL_ARG_BIAS, plan->bias.get()});
    }
    plan_ = std::move(plan);
    return *plan_;
  }

  dnnl::engine engine_;
  mutable dnnl::stream stream_;
  // The per-shape plan, built by the const WorkspaceBytes query too.
  mutable std::mutex mutex_;
  mutable std::unique_ptr<Plan> plan_;
};

class GuessAlgorithm final : public KernelAlgorithm<Conv3dAttrs, GuessKernel> {
 public:
  std::string WhyNot(const Conv3dAttrs& attrs) const override {
    if (attrs.dtype != DType::kFloat32) {
      return "oneDNN's CPU convolution takes float32 only";
    }
    return {};
  }
};

AI3_REGISTER_ALGORITHM(Conv3dAttrs, "guess", Device::kCPU, GuessAlgorithm);

}  // namespace
}  // namespace ai3
