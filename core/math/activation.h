// The fused activation over a whole output, at the CPU's widest vectors.
//
// A kernel whose output a library wrote (oneDNN, BLIS) applies the
// activation afterwards, in one more pass over the output. For the
// exp-based functions (SiLU, sigmoid, GELU) the arithmetic, not the memory,
// is the cost of that pass: SiLU over 1M floats on one thread of the 2-core
// EPYC, in cache, 0.48 ns an element at AVX2 and 0.36 at AVX-512
// (core/math/epilogue.h's loop either way). So this runs the AVX-512 build
// of that loop where the CPU has it (core/cpu.h), the AVX2 one elsewhere.
#ifndef AI3_CORE_MATH_ACTIVATION_H_
#define AI3_CORE_MATH_ACTIVATION_H_

#include <cstdint>

#include "core/math/epilogue.h"

namespace ai3 {

// ApplyActivationParallel (core/math/epilogue.h) on n contiguous floats,
// with the ISA KernelIsa() picks. Call it from outside a parallel region.
void ApplyActivationParallelWidest(const Activation::Bounds<float>& act,
                                   float* p, int64_t n);

// float64 has no AVX-512 build: the AVX2 loop.
inline void ApplyActivationParallelWidest(const Activation::Bounds<double>& act,
                                          double* p, int64_t n) {
  ApplyActivationParallel(act, p, n);
}

// The AVX-512 build (activation_avx512.cc); only where the CPU has AVX-512.
void ApplyActivationParallelAvx512(const Activation::Bounds<float>& act,
                                   float* p, int64_t n);

}  // namespace ai3

#endif  // AI3_CORE_MATH_ACTIVATION_H_
