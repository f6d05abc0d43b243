#include "core/cpu.h"

#include <cstdlib>
#include <cstring>

#include "core/errors.h"

namespace ai3 {
namespace {

Isa DetectIsa() {
  const char* forced = std::getenv("AI3_ISA");
  if (forced != nullptr && *forced != '\0') {
    if (std::strcmp(forced, "avx2") == 0) return Isa::kAvx2;
    if (std::strcmp(forced, "avx512") != 0) {
      Fail(ErrorKind::kInvalidArgument, "AI3_ISA='", forced,
           "': expected 'avx2' or 'avx512' (or unset)");
    }
  }
  __builtin_cpu_init();
  const bool avx512 =
      __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
  if (forced != nullptr && *forced != '\0' && !avx512) {
    Fail(ErrorKind::kInvalidArgument,
         "AI3_ISA='avx512' but this CPU has no AVX-512 (F, BW, VL, DQ)");
  }
  return avx512 ? Isa::kAvx512 : Isa::kAvx2;
}

}  // namespace

Isa KernelIsa() {
  static const Isa isa = DetectIsa();
  return isa;
}

const char* IsaName(Isa isa) { return isa == Isa::kAvx512 ? "avx512" : "avx2"; }

}  // namespace ai3
