"""Compiler flags shared by the core's C++ targets."""

# AVX2 + FMA is the baseline every x86-64 machine ai3 targets has; the
# compiler vectorises the kernels' inner loops with it. (-march=native is not
# portable to other machines.)
AI3_COPTS = [
    "-mavx2",
    "-mfma",
    "-fopenmp",
    # The core never reads the floating-point exception flags, so the
    # compiler may evaluate both sides of a select. Under GCC's default
    # -ftrapping-math it kept the exp-based epilogues (SiLU, sigmoid, GELU)
    # scalar at AVX2 ("control flow in loop"): SiLU over 1M floats, 1
    # thread, 2-core EPYC: 3.41 ns an element at AVX2 and 0.83 at AVX-512
    # before, 0.48 and 0.37 with this. IEEE results (NaN and infinities
    # included) are unchanged; only the flags may be.
    "-fno-trapping-math",
    "-Wno-unknown-pragmas",
]

# The extra flags of a kernel's AVX-512 build (a *_avx512.cc file, see
# core/ops/defs.bzl and core/cpu.h): called only on CPUs that have these.
# 512-bit vectors are preferred for the loops the compiler vectorises itself.
AI3_AVX512_COPTS = [
    "-mavx512f",
    "-mavx512bw",
    "-mavx512vl",
    "-mavx512dq",
    "-mprefer-vector-width=512",
]
