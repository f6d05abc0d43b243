// Which vector instruction set ai3's own kernels run with, chosen at run time.
//
// Everything is built for the AVX2 + FMA baseline (core/copts.bzl). Kernels
// that gain from wider vectors also have an AVX-512 build (a *_avx512.cc
// file next to the algorithm, compiled with AVX-512 flags; see
// core/ops/defs.bzl), used only when the CPU running the process has
// AVX-512 F/BW/VL/DQ. -march=native at build time would tie the binary to
// the build machine instead.
//
// AI3_ISA=avx2 in the environment forces the baseline (to compare the two,
// or to rule the AVX-512 build out); any other value is an error.
#ifndef AI3_CORE_CPU_H_
#define AI3_CORE_CPU_H_

namespace ai3 {

enum class Isa { kAvx2, kAvx512 };

// The CPU's best supported Isa, or AVX2 when AI3_ISA=avx2; read once.
Isa KernelIsa();

// "avx2" or "avx512".
const char* IsaName(Isa isa);

// The size in bytes of the largest data cache the OS reports (the L3 on
// these machines, else the L2), 0 when it reports none; read once. For
// kernels choosing between keeping a tensor in cache and streaming it.
long LastLevelCacheBytes();

// The size in bytes of one core's L2 cache (512 KiB where the OS reports
// none); read once. For kernels sizing the block of data they reuse.
long L2CacheBytes();

}  // namespace ai3

#endif  // AI3_CORE_CPU_H_
