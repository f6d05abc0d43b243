// What the ops that run oneDNN primitives ("guess" of conv2d and conv3d)
// share: the CPU engine, running a primitive from an argument array built
// once, oneDNN's failures as ai3::Error, weights reordered once, and a
// fused activation as post-ops.
#ifndef AI3_CORE_OPS_ONEDNN_H_
#define AI3_CORE_OPS_ONEDNN_H_

#include <cmath>
#include <exception>
#include <mutex>
#include <vector>

#include "core/errors.h"
#include "core/math/epilogue.h"
#include "oneapi/dnnl/dnnl.hpp"

namespace ai3 {
namespace onednn {

inline void CheckStatus(dnnl_status_t status, const char* what) {
  if (status != dnnl_success) {
    Fail(ErrorKind::kInternal, "oneDNN failed ", what, " (status ",
         static_cast<int>(status), ")");
  }
}

// Runs `body`, turning anything it throws other than ai3::Error into
// ai3::Error(kInternal).
template <typename Body>
void Guarded(const char* what, Body&& body) {
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
    Fail(ErrorKind::kInternal, "oneDNN failed ", what, ": unknown exception");
  }
}

// The CPU engine. The first call turns oneDNN's primitive cache off for
// the process's ai3 oneDNN (torch links its own copy): each kernel keeps
// its primitives per shape already, so the cache only shared one primitive
// between equal layers, and such a shared brgemm 1x1 primitive crashed
// oneDNN 3.2 inside exec_ker (core/ops/conv2d/guess.cc's file comment).
inline dnnl::engine CpuEngine() {
  static std::once_flag no_primitive_cache;
  std::call_once(no_primitive_cache,
                 [] { dnnl::set_primitive_cache_capacity(0); });
  return dnnl::engine(dnnl::engine::kind::cpu, 0);
}

// Through the C API with an argument array built once: the C++ execute()
// takes an unordered_map, built per call.
inline void Execute(const dnnl::stream& stream, const dnnl::primitive& prim,
                    const std::vector<dnnl_exec_arg_t>& args) {
  CheckStatus(
      dnnl_primitive_execute(prim.get(), stream.get(),
                             static_cast<int>(args.size()), args.data()),
      "running a primitive");
}

// A copy of the float32 tensor at `data` (layout `from`) in layout `to`,
// owned by the returned memory: weights reordered once, when a primitive
// is planned.
inline dnnl::memory Reordered(const dnnl::engine& engine, dnnl::stream& stream,
                              const dnnl::memory::desc& from,
                              const dnnl::memory::desc& to, const void* data) {
  dnnl::memory user(from, engine, const_cast<void*>(data));
  dnnl::memory copy(to, engine);
  dnnl::reorder(user, copy).execute(stream, user, copy);
  stream.wait();
  return copy;
}

// The activations that cost an exp per element: oneDNN 3.2's post-ops for
// them cost about twice ai3's own loop (core/ops/conv2d/guess.cc).
inline bool ExpBased(ActivationFn fn) {
  return fn == ActivationFn::kSilu || fn == ActivationFn::kSigmoid ||
         fn == ActivationFn::kGelu || fn == ActivationFn::kGeluTanh;
}

// `a` as oneDNN eltwise post-ops appended to `ops`: its function, then its
// clamp (an unbounded one is left out). Nothing for a disabled activation.
inline void AppendActivation(const Activation& a, dnnl::post_ops* ops) {
  if (!a.enabled) return;
  switch (a.fn) {
    case ActivationFn::kSilu:  // x * sigmoid(alpha x), alpha = 1
      ops->append_eltwise(dnnl::algorithm::eltwise_swish, 1.f, 0.f);
      break;
    case ActivationFn::kSigmoid:
      ops->append_eltwise(dnnl::algorithm::eltwise_logistic, 0.f, 0.f);
      break;
    case ActivationFn::kHardSwish:  // x * clip(alpha x + beta, 0, 1)
      ops->append_eltwise(dnnl::algorithm::eltwise_hardswish, 1.f / 6.f, 0.5f);
      break;
    case ActivationFn::kGelu:
      ops->append_eltwise(dnnl::algorithm::eltwise_gelu_erf, 0.f, 0.f);
      break;
    case ActivationFn::kGeluTanh:
      ops->append_eltwise(dnnl::algorithm::eltwise_gelu_tanh, 0.f, 0.f);
      break;
    case ActivationFn::kIdentity:
      break;
  }
  if (a.min == 0 && std::isinf(a.max) && a.max > 0) {
    ops->append_eltwise(dnnl::algorithm::eltwise_relu, 0.f, 0.f);
  } else if (!(std::isinf(a.min) && a.min < 0 && std::isinf(a.max) &&
               a.max > 0)) {
    ops->append_eltwise(dnnl::algorithm::eltwise_clip,
                        static_cast<float>(a.min), static_cast<float>(a.max));
  }
}

}  // namespace onednn
}  // namespace ai3

#endif  // AI3_CORE_OPS_ONEDNN_H_
