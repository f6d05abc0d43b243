// slice against Python's slice semantics computed naively (the index list
// start, start+step, ... within the clamped bounds), over every axis
// (positive and negative) of a few shapes, many start/stop/step triples
// including negative, out-of-range and the INT64 sentinels; then the
// errors.
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "core/errors.h"
#include "core/layer.h"
#include "core/ops/slice/slice.h"
#include "core/testing/op_test.h"
#include "core/testing/reference.h"

namespace ai3 {
namespace {

using testing::Check;
using testing::ExpectError;

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();

// Python's range(*slice(start, stop, step).indices(n)), written directly
// from the language reference's rules.
std::vector<int64_t> PyIndices(int64_t n, int64_t start, int64_t stop,
                               int64_t step) {
  std::vector<int64_t> out;
  auto norm = [&](int64_t v) -> int64_t {
    if (v == kMax) return step > 0 ? n : n - 1;
    if (v == kMin) return step > 0 ? 0 : -1;
    if (v < 0) v += n;
    if (step > 0) return v < 0 ? 0 : (v > n ? n : v);
    return v < 0 ? -1 : (v > n - 1 ? n - 1 : v);
  };
  const int64_t b = norm(start), e = norm(stop);
  // In 128 bits: a step near the int64 limits would wrap the index.
  for (__int128 i = b; step > 0 ? i < e : i > e; i += step) {
    out.push_back(static_cast<int64_t>(i));
  }
  return out;
}

// The dtype of element type T (int64_t and bool: the integer tensors the
// copy moves by their sizes, 8 and 1 bytes).
template <typename T>
constexpr DType DTypeOf() {
  if constexpr (std::is_same_v<T, bool>) return DType::kBool;
  if constexpr (std::is_same_v<T, int64_t>) return DType::kInt64;
  return sizeof(T) == 8 ? DType::kFloat64 : DType::kFloat32;
}

template <typename T>
void Case(const Shape& in, int64_t axis, int64_t start, int64_t stop,
          int64_t step) {
  const DType dtype = DTypeOf<T>();
  // bool's values in bytes (std::vector<bool> packs bits).
  using Stored = std::conditional_t<std::is_same_v<T, bool>, uint8_t, T>;
  std::vector<Stored> x(NumElements(in));
  const std::vector<double> values = testing::RandomVector(NumElements(in), 9);
  for (size_t i = 0; i < x.size(); ++i) {
    x[i] = std::is_same_v<T, bool> ? Stored(values[i] > 0)
                                   : Stored(values[i] * 1000);
  }
  SliceAttrs a{axis, start, stop, step};
  Layer<SliceAttrs> layer("s", a, {}, "direct");
  Tensor xt{x.data(), dtype, in};
  const int64_t rank = static_cast<int64_t>(in.size());
  const int64_t ax = axis < 0 ? axis + rank : axis;
  const std::vector<int64_t> idx = PyIndices(in[ax], start, stop, step);
  Shape want = in;
  want[ax] = static_cast<int64_t>(idx.size());
  const std::string desc = "slice " + ToString(in) + " axis " +
                           std::to_string(axis) + " " + std::to_string(start) +
                           ":" + std::to_string(stop) + ":" +
                           std::to_string(step);
  const Shape out = layer.OutputShape(xt);
  Check(out == want, desc + ": shape " + ToString(out));
  if (out != want) return;
  std::vector<Stored> y(NumElements(out), Stored(7));
  layer.Forward(xt, Tensor{y.data(), dtype, out});
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < ax; ++d) outer *= in[d];
  for (int64_t d = ax + 1; d < rank; ++d) inner *= in[d];
  bool ok = true;
  for (int64_t o = 0; o < outer; ++o) {
    for (size_t k = 0; k < idx.size(); ++k) {
      for (int64_t i = 0; i < inner; ++i) {
        ok &= y[(o * idx.size() + k) * inner + i] ==
              x[(o * in[ax] + idx[k]) * inner + i];
      }
    }
  }
  Check(ok, desc + ": values");
}

}  // namespace

int Main() {
  const std::vector<Shape> shapes = {{7}, {2, 5, 3}, {3, 0, 2}, {1, 300, 97}};
  const std::vector<int64_t> bounds = {0,  1,  2,    4,    -1,
                                       -3, 10, -100, kMax, kMin};
  // The extreme steps wrapped the count (distance + step - 1) / step, and
  // -kMin is not an int64 (found by tests/fuzz).
  const std::vector<int64_t> steps = {
      1, 2, 3, -1, -2, kMax, kMin, kMin + 1, 1LL << 40, -(1LL << 40)};
  int ran = 0;
  for (const Shape& s : shapes) {
    const int64_t rank = static_cast<int64_t>(s.size());
    for (int64_t axis = -rank; axis < rank; ++axis) {
      for (int64_t start : bounds) {
        for (int64_t stop : bounds) {
          for (int64_t step : steps) {
            Case<float>(s, axis, start, stop, step);
            ++ran;
          }
        }
      }
      Case<double>(s, axis, 1, -1, 1);
      ++ran;
      // Every element size the copy specialises (1, 4, 8 bytes), at steps
      // 1 (blocks), 2 and -1 (element by element on the last axis).
      for (int64_t step : {1, 2, -1}) {
        Case<bool>(s, axis, 1, kMax, step);
        Case<int64_t>(s, axis, -2, kMin, step);
        Case<double>(s, axis, 0, 5, step);
        ran += 3;
      }
    }
  }
  std::vector<float> x(6);
  Tensor xt{x.data(), DType::kFloat32, {2, 3}};
  ExpectError("step 0", ErrorKind::kInvalidArgument, "step cannot be 0", [&] {
    Layer<SliceAttrs>("s", SliceAttrs{0, 0, 1, 0}, {}, "direct");
  });
  Layer<SliceAttrs> layer("s", SliceAttrs{2, 0, 1, 1}, {}, "direct");
  ExpectError("axis", ErrorKind::kShape,
              "slice layer 's' (direct): axis 2 is out of range for a rank-2 "
              "input (2, 3)",
              [&] { layer.OutputShape(xt); });
  return testing::Summary("slice", ran);
}

}  // namespace ai3
