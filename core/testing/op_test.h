// The driver every op's cc_test shares: which CPU algorithms are
// registered, each of them run over the test's cases in float32 and
// float64, and Main()'s closing line and exit status (reference.h).
#ifndef AI3_CORE_TESTING_OP_TEST_H_
#define AI3_CORE_TESTING_OP_TEST_H_

#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "core/registry.h"
#include "core/tensor.h"
#include "core/testing/reference.h"

namespace ai3::testing {

// The registered CPU algorithms of `Attrs`, checking that `first` leads
// them ("direct": the op's reference algorithm, registered first).
template <class Attrs>
std::vector<std::string> CpuAlgorithms(const std::string& first = "direct") {
  std::vector<std::string> names = Registry<Attrs>::Get().Names(Device::kCPU);
  Check(!names.empty() && names[0] == first,
        std::string(Attrs::kOp) + " '" + first + "' registered");
  return names;
}

// Calls run(T(0), c, algorithm) with T = float, then double, for every
// case c and algorithm; returns how many (case, dtype, algorithm) ran.
template <class Cases, class Run>
int RunEach(const std::vector<std::string>& algorithms, const Cases& cases,
            Run run) {
  int ran = 0;
  for (const std::string& algorithm : algorithms) {
    for (const auto& c : cases) {
      run(0.0f, c, algorithm);
      run(0.0, c, algorithm);
      ran += 2;
    }
  }
  return ran;
}

// RunEach for an image op, in both layouts: run(T(0), c, layout, algorithm)
// for every layout, case c, dtype and algorithm.
template <class Cases, class Run>
int RunEachLayout(const std::vector<std::string>& algorithms,
                  const Cases& cases, Run run) {
  int ran = 0;
  for (Layout layout : {Layout::kNCHW, Layout::kNHWC}) {
    ran += RunEach(algorithms, cases,
                   [&](auto zero, const auto& c, const std::string& algorithm) {
                     run(zero, c, layout, algorithm);
                   });
  }
  return ran;
}

// The (shape, axis) cases of the ops along one axis (cumsum, argmax):
// a vector, a matrix along either axis and a negative one, a middle axis,
// a unit and an empty one, and one large enough to split over threads.
inline std::vector<std::pair<Shape, int64_t>> AxisCases() {
  return {{{7}, 0},       {{3, 5}, 0},    {{3, 5}, 1},    {{3, 5}, -1},
          {{2, 3, 4}, 1}, {{2, 1, 4}, 1}, {{2, 0, 4}, 2}, {{64, 96, 33}, 1}};
}

// Prints what ran and failed; Main()'s exit status.
inline int Summary(const std::string& what, int ran) {
  std::printf("%s: %d cases ran, %d failed\n", what.c_str(), ran, Failures());
  return Failures() != 0;
}

}  // namespace ai3::testing

#endif  // AI3_CORE_TESTING_OP_TEST_H_
