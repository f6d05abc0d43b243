#include "core/cpu.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

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

// The kernel's description of CPU 0's caches (sysfs) first: glibc's
// sysconf derives the L3 from CPUID and reported 320 MiB on the 2-core EPYC
// VMs, whose L3 is 32 MiB (what sysfs and lscpu say). sysconf where sysfs
// has nothing; it answers -1 or 0 for a level it does not know.
// The size in bytes of CPU 0's data (or unified) cache of level `want`,
// or with want = 0 of its highest level; 0 where sysfs lists none.
long SysfsCacheBytes(long want) {
  long best_level = 0, best_bytes = 0;
  for (int index = 0; index < 8; ++index) {
    const std::string dir =
        "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index);
    std::ifstream level_file(dir + "/level"), type_file(dir + "/type"),
        size_file(dir + "/size");
    long level = 0;
    std::string type, size;
    if (!(level_file >> level) || !(type_file >> type) ||
        !(size_file >> size) || type == "Instruction") {
      continue;
    }
    char* end = nullptr;
    long bytes = std::strtol(size.c_str(), &end, 10);
    if (*end == 'K') bytes <<= 10;
    if (*end == 'M') bytes <<= 20;
    if (want != 0 ? level == want : level > best_level) {
      if (bytes > 0) {
        best_level = level;
        best_bytes = bytes;
      }
    }
  }
  return best_bytes;
}

long DetectLastLevelCache() {
  const long bytes = SysfsCacheBytes(0);
  if (bytes > 0) return bytes;
  return std::max(
      {0L, sysconf(_SC_LEVEL3_CACHE_SIZE), sysconf(_SC_LEVEL2_CACHE_SIZE)});
}

// The L2, else sysconf's, else the 512 KiB of the Zen 3 cores these
// kernels were first tuned on.
long DetectL2Cache() {
  const long bytes = SysfsCacheBytes(2);
  if (bytes > 0) return bytes;
  const long reported = sysconf(_SC_LEVEL2_CACHE_SIZE);
  return reported > 0 ? reported : 512L << 10;
}

}  // namespace

Isa KernelIsa() {
  static const Isa isa = DetectIsa();
  return isa;
}

const char* IsaName(Isa isa) { return isa == Isa::kAvx512 ? "avx512" : "avx2"; }

long LastLevelCacheBytes() {
  static const long bytes = DetectLastLevelCache();
  return bytes;
}

long L2CacheBytes() {
  static const long bytes = DetectL2Cache();
  return bytes;
}

}  // namespace ai3
