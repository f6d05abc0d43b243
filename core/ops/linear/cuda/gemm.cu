// linear "gemm" on CUDA: y[M, out] = x[M, in] W^T + b through cuBLAS.
// cuBLAS is column-major: the row-major y is the column-major y^T (out x M),
// and y^T = W x^T where row-major W [out, in] read column-major is W^T, hence
// op(A) = T. The bias is broadcast into y first and accumulated (beta = 1).
// The cuBLAS handle is created once per layer (Prepare) and pointed at the
// caller's stream on each call; a fused activation is one more pass.
#include <cstdint>
#include <memory>
#include <vector>

#include "core/cuda/activation.h"
#include "core/cuda/kernel.h"
#include "core/cuda/libraries.h"
#include "core/math/dispatch.h"
#include "core/ops/linear/linear.h"

namespace ai3 {
namespace {

template <typename T>
__global__ void BroadcastRows(const T* __restrict__ bias, T* __restrict__ y,
                              int64_t rows, int64_t cols) {
  const int64_t n = rows * cols;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    y[i] = bias[i % cols];
  }
}

cublasStatus_t Gemm(cublasHandle_t h, int m, int n, int k, const float* alpha,
                    const float* a, const float* b, const float* beta,
                    float* c) {
  return cublasSgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, alpha, a, k, b, k,
                     beta, c, m);
}
cublasStatus_t Gemm(cublasHandle_t h, int m, int n, int k, const double* alpha,
                    const double* a, const double* b, const double* beta,
                    double* c) {
  return cublasDgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, alpha, a, k, b, k,
                     beta, c, m);
}

class GemmKernel : public cuda::CudaKernel {
 public:
  GemmKernel(const LinearAttrs& attrs, const std::vector<Tensor>& params)
      : attrs_(attrs), weights_(params, attrs.has_bias) {
    cuda::CheckCublas(cublasCreate(&handle_), "creating a handle");
  }
  ~GemmKernel() override { cublasDestroy(handle_); }

 protected:
  void RunOnDevice(const Tensor& input, const Tensor& output,
                   cudaStream_t stream) override {
    const int64_t rows = input.numel() / attrs_.in_features;
    const int64_t out = attrs_.out_features, in = attrs_.in_features;
    if (rows > INT32_MAX || out > INT32_MAX || in > INT32_MAX) {
      Fail(ErrorKind::kUnsupported, "cuBLAS takes 32-bit sizes; got ", rows,
           " rows of ", in, " features");
    }
    cuda::CheckCublas(cublasSetStream(handle_, stream), "setting the stream");
    DispatchFloat(attrs_.dtype, [&](auto zero) {
      using T = decltype(zero);
      T* y = output.data_as<T>();
      const T* b = weights_.b<T>();
      if (b) {
        BroadcastRows<T>
            <<<cuda::BlocksFor(rows * out), cuda::kThreads, 0, stream>>>(
                b, y, rows, out);
        cuda::CheckLaunch("linear bias");
      }
      const T one = 1, beta = b ? T(1) : T(0);
      cuda::CheckCublas(
          Gemm(handle_, int(out), int(rows), int(in), &one, weights_.w<T>(),
               input.data_as<const T>(), &beta, y),
          "running the GEMM");
    });
    cuda::ApplyActivation(attrs_.activation, attrs_.dtype, output.data,
                          output.numel(), stream);
  }

 private:
  LinearAttrs attrs_;
  cuda::DeviceWeights weights_;
  cublasHandle_t handle_ = nullptr;
};

class GemmAlgorithm : public KernelAlgorithm<LinearAttrs, GemmKernel> {
 public:
  std::string WhyNot(const LinearAttrs& a) const override {
    return a.activation.WhyNotClampOnly();  // cuda::ApplyActivation clamps
  }
};

AI3_REGISTER_ALGORITHM(LinearAttrs, "gemm", Device::kCUDA, GemmAlgorithm);

}  // namespace
}  // namespace ai3
