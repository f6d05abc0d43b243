// add / sub / mul / div "direct" on CUDA: one thread per output element
// finds its operands' elements through the broadcast (BroadcastIndex,
// broadcast.h: the merged dimensions, outermost first, and each operand's
// stride per dimension, 0 where it is broadcast). A constant operand is
// copied to the GPU once, when the layer is prepared.
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "core/cuda/runtime.h"
#include "core/errors.h"
#include "core/layer.h"
#include "core/math/dispatch.h"
#include "core/ops/binary/binary.h"
#include "core/ops/binary/broadcast.h"

namespace ai3 {
namespace {

template <BinaryOp Op, typename T>
__device__ inline T Apply(T a, T b) {
  if constexpr (Op == BinaryOp::kAdd) return a + b;
  if constexpr (Op == BinaryOp::kSub) return a - b;
  if constexpr (Op == BinaryOp::kMul) return a * b;
  return a / b;
}

template <BinaryOp Op, typename T>
__global__ void Broadcast(BroadcastIndex ix, int64_t n, const T* __restrict__ a,
                          const T* __restrict__ b, T* __restrict__ y) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t rest = i, oa = 0, ob = 0;
    for (int d = ix.rank - 1; d >= 0; --d) {
      const int64_t k = rest % ix.dims[d];
      rest /= ix.dims[d];
      oa += k * ix.stride_a[d];
      ob += k * ix.stride_b[d];
    }
    y[i] = Apply<Op, T>(a[oa], b[ob]);
  }
}

template <class Attrs>
class DirectKernel : public MultiInputKernel {
 public:
  DirectKernel(const Attrs& attrs, const std::vector<Tensor>& params)
      : attrs_(attrs), device_(cuda::CurrentDevice()) {
    if (attrs.has_other) {
      other_ = params[0];
      other_data_ = cuda::Upload(params[0].data,
                                 params[0].numel() * SizeOf(params[0].dtype));
      other_.data = other_data_.data();
      other_.device = Device::kCUDA;
      other_.device_index = device_;
    }
  }

  void RunInputs(const std::vector<Tensor>& inputs, const Tensor& output,
                 void*) override {
    for (const Tensor& t : inputs) cuda::CheckOnDevice(t, device_, "input");
    cuda::CheckOnDevice(output, device_, "output");
    if (!IsFloat(output.dtype)) {  // (the CPU's int64 forms are CPU only)
      Fail(ErrorKind::kDType, Attrs::kOp,
           " on CUDA takes float32 or float64, got ", Name(output.dtype));
    }
    cuda::DeviceGuard guard(device_);
    const Tensor* a = &inputs[0];
    const Tensor* b = attrs_.has_other ? &other_ : &inputs[1];
    if (attrs_.reverse) std::swap(a, b);
    if (a->numel() == 0 || b->numel() == 0) return;
    const BroadcastIndex ix(a->shape, b->shape, output.shape);
    const int64_t n = output.numel();
    cudaStream_t stream = cuda::StreamOf(inputs[0]);
    DispatchFloat(output.dtype, [&](auto zero) {
      using T = decltype(zero);
      Broadcast<Attrs::kBinaryOp, T>
          <<<cuda::BlocksFor(n), cuda::kThreads, 0, stream>>>(
              ix, n, a->data_as<const T>(), b->data_as<const T>(),
              output.data_as<T>());
    });
    cuda::CheckLaunch(Attrs::kOp);
  }

 private:
  Attrs attrs_;
  int device_;
  Tensor other_;  // the constant operand on the GPU, if any
  cuda::DeviceBuffer other_data_;
};

template <class Attrs>
using Direct = KernelAlgorithm<Attrs, DirectKernel<Attrs>>;

using AddDirect = Direct<AddAttrs>;
using SubDirect = Direct<SubAttrs>;
using MulDirect = Direct<MulAttrs>;
using DivDirect = Direct<DivAttrs>;
AI3_REGISTER_ALGORITHM(AddAttrs, "direct", Device::kCUDA, AddDirect);
AI3_REGISTER_ALGORITHM(SubAttrs, "direct", Device::kCUDA, SubDirect);
AI3_REGISTER_ALGORITHM(MulAttrs, "direct", Device::kCUDA, MulDirect);
AI3_REGISTER_ALGORITHM(DivAttrs, "direct", Device::kCUDA, DivDirect);

}  // namespace
}  // namespace ai3
