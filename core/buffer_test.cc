// Buffer and CheckedBytes on sizes that would wrap around size_t: each must
// throw an ai3::Error instead of handing out a buffer smaller than recorded
// (which the copy or kernel after it would overrun); Buffer's alignment. And
// a layer refuses a weight that claims elements but has no data, instead of
// copying from null.
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "core/buffer.h"
#include "core/errors.h"
#include "core/layer.h"
#include "core/ops/conv2d/conv2d.h"
#include "core/testing/reference.h"

namespace ai3 {
namespace {

using testing::Check;
using testing::ExpectError;

void Sizes() {
  Check(CheckedBytes(0, 4, "x") == 0, "0 elements");
  Check(CheckedBytes(10, 8, "x") == 80, "10 doubles");
  ExpectError("negative count", ErrorKind::kInvalidArgument,
              "w has a negative element count (-3)",
              [] { CheckedBytes(-3, 4, "w"); });
  ExpectError("count * size wraps", ErrorKind::kInvalidArgument,
              "more than the address space", [] {
                CheckedBytes(std::numeric_limits<int64_t>::max(), 4, "w");
              });
  // Rounding up to 64 bytes would wrap to a 0-byte buffer.
  ExpectError("rounding wraps", ErrorKind::kInvalidArgument,
              "more than the address space",
              [] { Buffer b(std::numeric_limits<size_t>::max() - 10); });
  Buffer grown;
  grown.Reserve(100);
  Check(grown.size() == 100 && grown.data() != nullptr, "Reserve(100)");
  grown.Reserve(10);
  Check(grown.size() == 100, "Reserve never shrinks");
  Check(reinterpret_cast<uintptr_t>(grown.data()) % 64 == 0, "64-aligned");
  // From 2 MiB on: whole huge pages (buffer.h), every byte writable.
  const size_t big = (size_t{2} << 20) + 1;
  Buffer huge(big);
  Check(huge.size() == big, "a 2 MiB + 1 buffer keeps its size");
  Check(reinterpret_cast<uintptr_t>(huge.data()) % (size_t{2} << 20) == 0,
        "a 2 MiB + 1 buffer starts on a 2 MiB boundary");
  std::memset(huge.data(), 1, big);
  Check(huge.as<unsigned char>()[big - 1] == 1, "its last byte holds");
}

void WeightWithoutData() {
  Conv2dAttrs a;
  a.in_channels = a.out_channels = 2;
  ExpectError("null weight", ErrorKind::kInvalidArgument,
              "conv2d layer 'c': a weight has no data", [&] {
                Layer<Conv2dAttrs>(
                    "c", a, {Tensor{nullptr, DType::kFloat32, {2, 2, 1, 1}}},
                    "direct");
              });
}

}  // namespace

int Main() {
  Sizes();
  WeightWithoutData();
  return testing::Summary("buffer");
}

}  // namespace ai3
