// matmul against a naive triple loop in double over operand pairs covering
// 1-D operands, plain 2-D, batched, broadcast batch dims on either side,
// large products (the GEMM paths), batches of smaller ones (the
// batch-parallel path), K = 0 and empty batches; both dtypes; the constant
// form; errors.
#include <cstdio>
#include <string>
#include <vector>

#include "core/errors.h"
#include "core/layer.h"
#include "core/ops/matmul/matmul.h"
#include "core/testing/reference.h"

namespace ai3 {
namespace {

using testing::Check;
using testing::ExpectError;

// y = a @ b with torch.matmul's rules, in double.
std::vector<double> Reference(const Shape& sa, const std::vector<double>& a,
                              const Shape& sb, const std::vector<double>& b,
                              const MatmulAttrs::Dims& d) {
  const int64_t count = NumElements(d.batch);
  std::vector<double> y(count * d.m * d.n, 0.0);
  const size_t rank = d.batch.size();
  for (int64_t t = 0; t < count; ++t) {
    // Batch offsets of each operand (right-aligned, size-1 dims broadcast).
    int64_t rest = t, oa = 0, ob = 0, stride_a = 1, stride_b = 1;
    for (int i = static_cast<int>(rank) - 1; i >= 0; --i) {
      const int64_t coord = rest % d.batch[i];
      rest /= d.batch[i];
      const int ia = i - static_cast<int>(rank - d.a_batch.size());
      const int ib = i - static_cast<int>(rank - d.b_batch.size());
      if (ia >= 0) {
        if (d.a_batch[ia] != 1) oa += coord * stride_a;
        stride_a *= d.a_batch[ia];
      }
      if (ib >= 0) {
        if (d.b_batch[ib] != 1) ob += coord * stride_b;
        stride_b *= d.b_batch[ib];
      }
    }
    for (int64_t i = 0; i < d.m; ++i)
      for (int64_t j = 0; j < d.n; ++j)
        for (int64_t p = 0; p < d.k; ++p)
          y[(t * d.m + i) * d.n + j] +=
              a[oa * d.m * d.k + i * d.k + p] * b[ob * d.k * d.n + p * d.n + j];
  }
  (void)sa;
  (void)sb;
  return y;
}

template <typename T>
void Case(const Shape& sa, const Shape& sb, const Shape& want, bool constant) {
  const DType dtype = sizeof(T) == 8 ? DType::kFloat64 : DType::kFloat32;
  auto a = testing::Cast<T>(testing::RandomVector(NumElements(sa), 1));
  auto b = testing::Cast<T>(testing::RandomVector(NumElements(sb), 2));
  MatmulAttrs attrs;
  std::vector<Tensor> params, inputs = {Tensor{a.data(), dtype, sa}};
  Tensor bt{b.data(), dtype, sb};
  if (constant) {
    attrs.has_other = true;
    attrs.other_shape = sb;
    attrs.other_dtype = dtype;
    params = {bt};
  } else {
    inputs.push_back(bt);
  }
  MultiLayer<MatmulAttrs> layer("mm", attrs, params, "direct");
  const std::string desc = std::string("matmul ") + Name(dtype) + " " +
                           ToString(sa) + " @ " + ToString(sb) +
                           (constant ? " (constant)" : "");
  const Shape out = layer.OutputShape(inputs);
  Check(out == want, desc + ": shape " + ToString(out));
  if (out != want) return;
  std::vector<T> y(NumElements(out), T(-3));
  layer.Forward(inputs, Tensor{y.data(), dtype, out});
  const auto d = attrs.DimsOf(sa, sb);
  const auto ref = Reference(sa, std::vector<double>(a.begin(), a.end()), sb,
                             std::vector<double>(b.begin(), b.end()), d);
  const double tol = sizeof(T) == 8 ? 1e-12 : 2e-5 * (1 + d.k / 64.0);
  const double err = testing::MaxRelativeError(y, ref);
  Check(err <= tol, desc + ": max relative error " + std::to_string(err));
}

}  // namespace

int Main() {
  struct C {
    Shape a, b, out;
  };
  const std::vector<C> cases = {
      {{5}, {5}, {}},
      {{5}, {5, 3}, {3}},
      {{4, 5}, {5}, {4}},
      {{4, 5}, {5, 3}, {4, 3}},
      {{2, 4, 5}, {5, 3}, {2, 4, 3}},
      {{2, 4, 5}, {2, 5, 3}, {2, 4, 3}},
      {{2, 1, 4, 5}, {3, 5, 6}, {2, 3, 4, 6}},
      {{4, 5}, {3, 5, 6}, {3, 4, 6}},
      {{7}, {2, 7, 3}, {2, 3}},
      {{2, 3, 7}, {7}, {2, 3}},
      {{2, 130, 70}, {70, 90}, {2, 130, 90}},
      {{3, 100, 80}, {3, 80, 120}, {3, 100, 120}},
      {{2, 300, 260}, {2, 260, 256}, {2, 300, 256}},  // one GEMM each
      {{2, 12, 49, 32}, {2, 12, 32, 49}, {2, 12, 49, 49}},
      {{2, 3, 0}, {2, 0, 4}, {2, 3, 4}},
      {{0, 3, 5}, {5, 4}, {0, 3, 4}},
      {{0, 3, 5}, {0, 5, 4}, {0, 3, 4}},
  };
  // Batches of small products (the register-blocked kernel): rows around
  // its block of 6, columns around whole vectors (8 lanes for AVX2, 16 for
  // AVX-512, panels of 2 or 4 vectors), so every edge block runs.
  std::vector<C> all = cases;
  for (int64_t m : {1, 5, 6, 7, 13}) {
    for (int64_t n : {1, 7, 8, 16, 17, 33, 64, 65}) {
      for (int64_t k : {1, 9}) {
        all.push_back({{3, m, k}, {3, k, n}, {3, m, n}});
      }
    }
  }
  int ran = 0;
  for (const C& c : all) {
    for (int constant = 0; constant < 2; ++constant) {
      Case<float>(c.a, c.b, c.out, constant);
      Case<double>(c.a, c.b, c.out, constant);
      ran += 2;
    }
  }
  std::vector<float> x(24);
  Tensor a{x.data(), DType::kFloat32, {2, 3, 4}};
  Tensor b{x.data(), DType::kFloat32, {3, 4}};
  Tensor c{x.data(), DType::kFloat32, {3, 4, 2}};
  MultiLayer<MatmulAttrs> layer("mm", MatmulAttrs{}, {}, "direct");
  ExpectError("inner", ErrorKind::kShape,
              "matmul layer 'mm' (direct): cannot multiply (2, 3, 4) by (3, "
              "4): the left operand has 4 columns, the right one 3 rows",
              [&] { layer.OutputShape(std::vector<Tensor>{a, b}); });
  ExpectError("batch", ErrorKind::kShape, "do not broadcast",
              [&] { layer.OutputShape(std::vector<Tensor>{a, c}); });
  Tensor s{x.data(), DType::kFloat32, {}};
  ExpectError("scalar", ErrorKind::kShape, "operands of rank >= 1",
              [&] { layer.OutputShape(std::vector<Tensor>{s, b}); });
  std::printf("matmul: %d cases, %d failed\n", ran, testing::Failures());
  return testing::Failures() != 0;
}

}  // namespace ai3
