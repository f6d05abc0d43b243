"""Compiler flags shared by the core's C++ targets."""

# AVX2 + FMA is the baseline every x86-64 machine ai3 targets has; the
# compiler vectorises the kernels' inner loops with it. (-march=native is not
# portable to other machines.)
AI3_COPTS = [
    "-mavx2",
    "-mfma",
    "-fopenmp",
    "-Wno-unknown-pragmas",
]
