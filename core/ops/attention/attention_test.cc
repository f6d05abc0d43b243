// Every registered CPU attention algorithm against the definition computed
// in double (scores, mask, causal, a softmax that gives zeros for a row with
// every key masked), over a grid: batch shapes of rank 0 to 2, L and S from
// 1 past several blocks (L != S both ways), head dims (E != Ev), masks of
// every broadcast form with -inf entries and fully masked rows, causal,
// explicit scales, float32 and float64; then the errors bad inputs raise.
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "core/errors.h"
#include "core/layer.h"
#include "core/ops/attention/attention.h"
#include "core/testing/op_test.h"
#include "core/testing/reference.h"

namespace ai3 {
namespace {

using testing::Check;
using testing::ExpectError;

constexpr double kInf = std::numeric_limits<double>::infinity();

struct Case {
  Shape lead;  // batch dims
  int64_t l, s, e, ev;
  Shape mask;  // empty: no mask
  bool causal = false;
  double scale = 0;  // 0: the default 1/sqrt(E)
};

// The mask element broadcast to (lead, L, S) at flat batch index n, row i,
// column j.
double MaskAt(const Case& c, const std::vector<double>& mask, int64_t n,
              int64_t i, int64_t j) {
  Shape target = c.lead;
  target.push_back(c.l);
  target.push_back(c.s);
  const int64_t rank = static_cast<int64_t>(target.size());
  // The full index in target, then its broadcast position in the mask.
  std::vector<int64_t> index(rank);
  index[rank - 1] = j;
  index[rank - 2] = i;
  for (int64_t d = rank - 3; d >= 0; --d) {
    index[d] = n % target[d];
    n /= target[d];
  }
  int64_t offset = 0, stride = 1;
  const int64_t mrank = static_cast<int64_t>(c.mask.size());
  for (int64_t md = mrank - 1, d = rank - 1; md >= 0; --md, --d) {
    if (c.mask[md] != 1) offset += index[d] * stride;
    stride *= c.mask[md];
  }
  return mask[offset];
}

std::vector<double> Reference(const Case& c, const std::vector<double>& q,
                              const std::vector<double>& k,
                              const std::vector<double>& v,
                              const std::vector<double>& mask) {
  const int64_t batch = NumElements(c.lead);
  const double scale = c.scale != 0 ? c.scale : 1 / std::sqrt(double(c.e));
  std::vector<double> out(batch * c.l * c.ev, 0.0), p(c.s);
  for (int64_t n = 0; n < batch; ++n) {
    for (int64_t i = 0; i < c.l; ++i) {
      double m = -kInf;
      for (int64_t j = 0; j < c.s; ++j) {
        double dot = 0;
        for (int64_t x = 0; x < c.e; ++x) {
          dot += q[(n * c.l + i) * c.e + x] * k[(n * c.s + j) * c.e + x];
        }
        p[j] = scale * dot;
        if (!c.mask.empty()) p[j] += MaskAt(c, mask, n, i, j);
        if (c.causal && j > i) p[j] = -kInf;
        m = std::fmax(m, p[j]);
      }
      if (m == -kInf) continue;  // every key masked: zeros
      double sum = 0;
      for (int64_t j = 0; j < c.s; ++j) sum += p[j] = std::exp(p[j] - m);
      for (int64_t j = 0; j < c.s; ++j) {
        for (int64_t x = 0; x < c.ev; ++x) {
          out[(n * c.l + i) * c.ev + x] +=
              p[j] / sum * v[(n * c.s + j) * c.ev + x];
        }
      }
    }
  }
  return out;
}

Shape With(Shape lead, int64_t a, int64_t b) {
  lead.push_back(a);
  lead.push_back(b);
  return lead;
}

template <typename T>
void RunCase(const Case& c, const std::string& algorithm) {
  const DType dtype = testing::DTypeOf<T>();
  const int64_t batch = NumElements(c.lead);
  auto qd = testing::RandomVector(batch * c.l * c.e, 1);
  auto kd = testing::RandomVector(batch * c.s * c.e, 2);
  auto vd = testing::RandomVector(batch * c.s * c.ev, 3);
  for (double& x : qd) x *= 3;  // peaked softmaxes, not just flat ones
  std::vector<double> md;
  if (!c.mask.empty()) {
    md = testing::RandomVector(NumElements(c.mask), 4);
    // Some keys removed outright, and (when the mask has rows) one fully
    // masked row.
    for (size_t x = 0; x < md.size(); x += 3) md[x] = -kInf;
    const int64_t cols = c.mask.back();
    if (c.mask.size() >= 2 && c.mask[c.mask.size() - 2] > 1) {
      for (int64_t j = 0; j < cols; ++j) md[cols + j] = -kInf;
    }
  }
  auto q = testing::Cast<T>(qd), k = testing::Cast<T>(kd),
       v = testing::Cast<T>(vd), m = testing::Cast<T>(md);
  auto want = Reference(c, std::vector<double>(q.begin(), q.end()),
                        std::vector<double>(k.begin(), k.end()),
                        std::vector<double>(v.begin(), v.end()),
                        std::vector<double>(m.begin(), m.end()));
  AttentionAttrs a;
  a.causal = c.causal;
  a.has_scale = c.scale != 0;
  a.scale = c.scale;
  a.has_mask = !c.mask.empty();
  MultiLayer<AttentionAttrs> layer("test", a, {}, algorithm);
  std::vector<Tensor> in = {Tensor{q.data(), dtype, With(c.lead, c.l, c.e)},
                            Tensor{k.data(), dtype, With(c.lead, c.s, c.e)},
                            Tensor{v.data(), dtype, With(c.lead, c.s, c.ev)}};
  if (a.has_mask) in.push_back(Tensor{m.data(), dtype, c.mask});
  const Shape out_shape = With(c.lead, c.l, c.ev);
  std::string desc = algorithm + " " + Name(dtype) + " q" +
                     ToString(in[0].shape) + " k" + ToString(in[1].shape) +
                     " v" + ToString(in[2].shape) + " mask" + ToString(c.mask) +
                     (c.causal ? " causal" : "") + " scale " +
                     std::to_string(c.scale);
  Check(layer.OutputShape(in) == out_shape, desc + ": output shape");
  std::vector<T> y(NumElements(out_shape), T(-42));
  layer.Forward(in, Tensor{y.data(), dtype, out_shape});
  const double tol = std::is_same_v<T, double> ? 1e-12 : 2e-5;
  double err = testing::MaxRelativeError(y, want);
  Check(err <= tol, desc + ": max relative error " + std::to_string(err));
}

void RunErrors() {
  std::vector<float> buf(4096);
  auto t = [&](Shape s) { return Tensor{buf.data(), DType::kFloat32, s}; };
  std::vector<double> dbuf(64);
  AttentionAttrs plain;
  MultiLayer<AttentionAttrs> layer("attn", plain, {}, "flash");
  auto shape_error = [&](const std::string& what, std::vector<Tensor> in,
                         const std::string& text) {
    ExpectError(what, ErrorKind::kShape, text, [&] { layer.OutputShape(in); });
  };
  shape_error("E mismatch", {t({2, 5, 8}), t({2, 6, 4}), t({2, 6, 3})},
              "attention layer 'attn' (flash): k's last dimension is 4 but "
              "q's is 8");
  shape_error("S mismatch", {t({2, 5, 8}), t({2, 6, 8}), t({2, 7, 3})},
              "v has 7 keys but k has 6");
  shape_error("batch mismatch", {t({2, 5, 8}), t({3, 6, 8}), t({3, 6, 3})},
              "same batch dimensions");
  shape_error("rank mismatch", {t({1, 2, 5, 8}), t({2, 6, 8}), t({2, 6, 3})},
              "one rank");
  shape_error("rank 1", {t({8}), t({6, 8}), t({6, 3})},
              "q must have rank >= 2");
  ExpectError("two inputs", ErrorKind::kInvalidArgument,
              "attention layer 'attn': takes 3 inputs, got 2",
              [&] { layer.OutputShape({t({5, 8}), t({6, 8})}); });
  ExpectError("dtype mismatch", ErrorKind::kDType, "float64", [&] {
    layer.OutputShape(
        {t({5, 8}), t({6, 8}), Tensor{dbuf.data(), DType::kFloat64, {6, 3}}});
  });
  AttentionAttrs masked;
  masked.has_mask = true;
  MultiLayer<AttentionAttrs> mlayer("attn", masked, {}, "naive");
  ExpectError("mask broadcast", ErrorKind::kShape,
              "mask (5, 7) does not broadcast to the scores (2, 5, 6)", [&] {
                mlayer.OutputShape(
                    {t({2, 5, 8}), t({2, 6, 8}), t({2, 6, 3}), t({5, 7})});
              });
  ExpectError("mask rank", ErrorKind::kShape, "more dimensions", [&] {
    mlayer.OutputShape({t({5, 8}), t({6, 8}), t({6, 3}), t({1, 5, 6})});
  });
  AttentionAttrs bad_scale;
  bad_scale.has_scale = true;
  bad_scale.scale = std::nan("");
  ExpectError(
      "scale", ErrorKind::kInvalidArgument, "scale must be finite",
      [&] { MultiLayer<AttentionAttrs>("attn", bad_scale, {}, "default"); });
  ExpectError("unknown", ErrorKind::kUnknownAlgorithm, "'chunked'", [&] {
    MultiLayer<AttentionAttrs>("attn", plain, {}, "winograd");
  });
  MultiLayer<AttentionAttrs> def("attn", plain, {}, "default");
  Check(def.algorithm() == "flash", "default is flash, got " + def.algorithm());
}

}  // namespace

int Main() {
  std::vector<Case> cases;
  // Shapes: blocks of 64 in flash, so 1, odd sizes and a few blocks.
  for (Shape lead : {Shape{}, Shape{3}, Shape{2, 3}}) {
    cases.push_back({lead, 5, 7, 8, 8, {}});
  }
  for (int64_t l : {1, 3, 64, 65, 130}) {
    for (int64_t s : {1, 5, 64, 129}) {
      cases.push_back({{2, 1}, l, s, 16, 8, {}});
      cases.push_back({{1, 2}, l, s, 8, 16, {}, /*causal=*/true});
    }
  }
  for (int64_t e : {1, 3, 64, 80}) {
    for (int64_t ev : {1, 17, 64, 80})
      cases.push_back({{2}, 33, 70, e, ev, {}});
  }
  // Masks of every broadcast form; with and without causal.
  for (Shape mask :
       {Shape{2, 3, 20, 70}, Shape{20, 70}, Shape{1, 3, 1, 70},
        Shape{2, 1, 20, 1}, Shape{70}, Shape{1}, Shape{3, 20, 70}}) {
    cases.push_back({{2, 3}, 20, 70, 8, 5, mask});
    cases.push_back({{2, 3}, 20, 70, 8, 5, mask, true});
  }
  cases.push_back({{1}, 100, 100, 16, 16, {100, 100}, true, 0.3});
  cases.push_back({{2}, 6, 4, 8, 8, {}, false, -1.5});
  cases.push_back({{1}, 200, 300, 64, 64, {}});  // several blocks both ways

  const std::vector<std::string> names =
      Registry<AttentionAttrs>::Get().Names(Device::kCPU);
  Check(names.size() >= 3, "naive, flash and chunked registered");
  const int ran = testing::RunEach(
      names, cases, [](auto zero, const Case& c, const std::string& algorithm) {
        RunCase<decltype(zero)>(c, algorithm);
      });
  RunErrors();
  return testing::Summary("attention", ran);
}

}  // namespace ai3
