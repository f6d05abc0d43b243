// Loops split over the OpenMP threads only when they are big enough, with no
// OpenMP region at all when they are not.
//
// Why not `#pragma omp parallel for if (n >= threshold)`: when the if() is
// false, libgomp still enters a parallel region with a team of one thread,
// and it mallocs (and frees) that team every time (a full team is built
// once and reused). A model run at a small input then allocates on every
// forward, which ai3::Model promises not to do (core/model_alloc_test.cc).
// These helpers take the same condition and run a plain loop on the calling
// thread when it is false.
//
// Call them from outside a parallel region, as the loops they replace were:
// nested inside one, the parallel branch runs on a one-thread team as
// before.
#ifndef AI3_CORE_PARALLEL_H_
#define AI3_CORE_PARALLEL_H_

#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

namespace ai3 {

// body(i) for every i in [begin, end): `#pragma omp parallel for
// schedule(static)` when `parallel`, else a serial loop.
template <typename Fn>
inline void ParallelFor(int64_t begin, int64_t end, bool parallel, Fn&& body) {
  if (parallel) {
#pragma omp parallel for schedule(static)
    for (int64_t i = begin; i < end; ++i) body(i);
  } else {
    std::decay_t<Fn> serial(body);  // see ParallelRanges
    for (int64_t i = begin; i < end; ++i) serial(i);
  }
}

// body(lo, hi) on contiguous pieces that cover [begin, end): one per thread
// (the chunks schedule(static) gives) when `parallel`, else one call for the
// whole range. For elementwise loops: the body keeps its own inner loop over
// [lo, hi) (with `#pragma omp simd` where it was `parallel for simd`), a
// plain counted loop the compiler vectorises on either path, instead of a
// call per element.
template <typename Fn>
inline void ParallelRanges(int64_t begin, int64_t end, bool parallel,
                           Fn&& body) {
  if (begin >= end) return;
  if (!parallel) {
    // A copy whose address never escapes (the parallel branch below hands
    // `body`'s to OpenMP): the compiler can keep what a [=] body captured
    // in registers instead of reloading it around the loop's stores.
    std::decay_t<Fn> serial(body);
    serial(begin, end);
    return;
  }
#pragma omp parallel
  {
    const int64_t threads = omp_get_num_threads();
    const int64_t t = omp_get_thread_num();
    const int64_t n = end - begin, q = n / threads, r = n % threads;
    const int64_t lo = begin + t * q + std::min(t, r);
    const int64_t hi = lo + q + (t < r ? 1 : 0);
    if (lo < hi) {
      // Each thread's own copy, for the same reason as the serial path's:
      // called through the shared `body`, the loop reloaded its members
      // around every store, and exact GELU's select did not vectorise.
      std::decay_t<Fn> local(body);
      local(lo, hi);
    }
  }
}

// Makes `value` unknown to the optimiser: afterwards it is read as a
// run-time value, never folded to the constant it was initialised with. For
// bodies that vectorise only on run-time values (vmath::ExpRange, see
// core/ops/sigmoid/exp.h): the parallel path reads what the body captures
// through OpenMP's shared-data block, where the compiler cannot see
// constants, but the serial path inlines the body into its caller, where it
// can. Call it on such values before the loop so both paths vectorise.
template <typename T>
inline void HideFromOptimizer(T& value) {
  asm("" : "+m"(value));
}

}  // namespace ai3

#endif  // AI3_CORE_PARALLEL_H_
