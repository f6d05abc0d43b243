// GEMM libraries side by side on the products ai3's models make:
//   BLIS       ai3::Gemm as the core runs it (core/math/gemm.cc: BLIS' OpenMP
//              build, with ai3's rule for its small/skinny path);
//   matmul     oneDNN 3.2's matmul primitive, created once per shape with a
//              user-managed scratchpad, its memory objects and argument array
//              built once, so a call is one dnnl_primitive_execute;
//   sgemm      oneDNN's dnnl_sgemm (float32 only).
// Each product is timed in this one process, the three interleaved, best of
// N calls after a warm-up, with OpenMP's thread count (2 on the build machines;
// OMP_NUM_THREADS sets it). The products: the im2col products of
// resnet18/resnet50's 3x3 convs, resnet50's and mobilenet_v2's 1x1 convs (M =
// output channels, N = pixels, K = input channels x kernel, as the "gemm"
// conv2d algorithm calls it in NCHW), and ViT-B/16's linears at 197 tokens (x
// W^T, as "gemm" linear calls it). Each result is checked against BLIS' (max
// |difference| / max |BLIS|).
//
//   bazel run //bench/onednn:gemm                 # both dtypes
//   bazel run //bench/onednn:gemm -- --f32        # float32 only
//   bazel run //bench/onednn:gemm -- --seconds=3  # longer timing per row
//   bazel run //bench/onednn:gemm -- --threads=1 --thread_cpu  # busy machine
//   bazel run //bench/onednn:gemm -- --cold  # operands from memory
//
// A benchmark, not a test: it prints a table and decides nothing.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "core/math/gemm.h"
#include "oneapi/dnnl/dnnl.hpp"

namespace {

struct Product {
  const char* what;
  int64_t m, n, k;
  bool trans_b;  // B stored [N, K] (a linear's weights)
};

// The model shapes named in the file comment, batch 1.
const Product kProducts[] = {
    {"resnet18 conv1 7x7/2", 64, 12544, 147, false},
    {"resnet 3x3 64", 64, 3136, 576, false},
    {"resnet 3x3 128", 128, 784, 1152, false},
    {"resnet 3x3 256", 256, 196, 2304, false},
    {"resnet 3x3 512", 512, 49, 4608, false},
    {"resnet50 1x1 64<-256", 64, 3136, 256, false},
    {"resnet50 1x1 256<-64", 256, 3136, 64, false},
    {"resnet50 1x1 512<-128", 512, 784, 128, false},
    {"resnet50 1x1 1024<-256", 1024, 196, 256, false},
    {"resnet50 1x1 2048<-512", 2048, 49, 512, false},
    {"mobilenet_v2 1x1 96<-16", 96, 12544, 16, false},
    {"mobilenet_v2 1x1 144<-24", 144, 3136, 24, false},
    {"mobilenet_v2 1x1 32<-144", 32, 784, 144, false},
    {"mobilenet_v2 1x1 384<-64", 384, 196, 64, false},
    {"mobilenet_v2 1x1 96<-384", 96, 196, 384, false},
    {"mobilenet_v2 1x1 960<-160", 960, 49, 160, false},
    {"mobilenet_v2 1x1 1280<-320", 1280, 49, 320, false},
    {"vit qkv", 197, 2304, 768, true},
    {"vit proj", 197, 768, 768, true},
    {"vit fc1", 197, 3072, 768, true},
    {"vit fc2", 197, 768, 3072, true},
    {"resnet fc", 1, 1000, 512, true},
};

using Clock = std::chrono::steady_clock;

// What a call is timed with: wall-clock time (the default), or with
// --thread_cpu the calling thread's CPU time, for --threads=1 on a machine
// shared with other work, where wall-clock times include the slices other
// processes ran (the thread's CPU time leaves them out; its caches still
// feel them).
bool g_thread_cpu = false;

// With --cold, each timed call starts after 256 MiB have been written
// elsewhere (untimed), so the product's operands come from memory, as a
// layer's weights do inside a whole model whose weights exceed the caches.
bool g_cold = false;
void Evict() {
  static std::vector<char> other(size_t{256} << 20);
  static char value = 0;
  ++value;
#pragma omp parallel for schedule(static)
  for (size_t i = 0; i < other.size(); i += 64) other[i] = value;
}

double Now() {
  if (g_thread_cpu) {
    timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
  }
  return std::chrono::duration<double>(Clock::now().time_since_epoch()).count();
}

// Best seconds of one call of each of `fs`, after a warm-up call of each:
// rounds of one call of each in turn, at least 10 rounds and until
// `budget` seconds have passed. Interleaving keeps the libraries' numbers
// comparable when the machine is shared (its load drifts between rounds);
// the best call is the one least disturbed.
std::vector<double> BestOf(const std::vector<std::function<void()>>& fs,
                           double budget) {
  for (auto& f : fs) f();
  std::vector<double> best(fs.size(), 1e30);
  const auto start = Clock::now();
  for (int round = 0;
       round < 10 ||
       std::chrono::duration<double>(Clock::now() - start).count() < budget;
       ++round) {
    for (size_t i = 0; i < fs.size(); ++i) {
      if (g_cold) Evict();
      const double t0 = Now();
      fs[i]();
      best[i] = std::min(best[i], Now() - t0);
    }
  }
  return best;
}

template <typename T>
double MaxRelDiff(const std::vector<T>& x, const std::vector<T>& ref) {
  double diff = 0, scale = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    diff = std::max(diff, std::abs(double(x[i]) - double(ref[i])));
    scale = std::max(scale, std::abs(double(ref[i])));
  }
  return scale > 0 ? diff / scale : diff;
}

// oneDNN's matmul for one product, built once; nullptr-like (!ok) when
// oneDNN has no implementation (float64 on CPU).
template <typename T>
struct Matmul {
  bool ok = false;
  std::string impl;
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  dnnl::matmul prim;
  dnnl::memory src, wei, dst, scratch;
  std::vector<dnnl_exec_arg_t> args;

  Matmul(const Product& p, T* a, T* b, T* c) {
    const auto dt = std::is_same_v<T, float> ? dnnl::memory::data_type::f32
                                             : dnnl::memory::data_type::f64;
    using md = dnnl::memory::desc;
    const md a_md({p.m, p.k}, dt, dnnl::memory::dims{p.k, 1});
    // B is [K, N] row-major, or stored [N, K] (strides 1, K) when trans_b.
    const md b_md(
        {p.k, p.n}, dt,
        p.trans_b ? dnnl::memory::dims{1, p.k} : dnnl::memory::dims{p.n, 1});
    const md c_md({p.m, p.n}, dt, dnnl::memory::dims{p.n, 1});
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    try {
      dnnl::matmul::primitive_desc pd(engine, a_md, b_md, c_md, attr);
      impl = pd.impl_info_str();
      prim = dnnl::matmul(pd);
      src = dnnl::memory(a_md, engine, a);
      wei = dnnl::memory(b_md, engine, b);
      dst = dnnl::memory(c_md, engine, c);
      scratch = dnnl::memory(pd.scratchpad_desc(), engine);
      args = {{DNNL_ARG_SRC, src.get()},
              {DNNL_ARG_WEIGHTS, wei.get()},
              {DNNL_ARG_DST, dst.get()},
              {DNNL_ARG_SCRATCHPAD, scratch.get()}};
      ok = true;
    } catch (const dnnl::error& e) {
      impl = e.status == dnnl_unimplemented ? "unimplemented" : e.what();
    }
  }

  void Run() {
    dnnl_primitive_execute(prim.get(), stream.get(),
                           static_cast<int>(args.size()), args.data());
    stream.wait();
  }
};

template <typename T>
void RunProduct(const Product& p, double budget) {
  std::mt19937 rng(static_cast<uint32_t>(p.m * 31 + p.n * 7 + p.k));
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<T> a(p.m * p.k), b(p.k * p.n), ref(p.m * p.n), c_mm(p.m * p.n),
      c_sg(p.m * p.n);
  for (T& v : a) v = u(rng);
  for (T& v : b) v = u(rng);
  const int64_t ldb = p.trans_b ? p.k : p.n;
  const double flop = 2.0 * p.m * p.n * p.k;

  std::vector<std::function<void()>> fs = {[&] {
    ai3::Gemm<T>(false, p.trans_b, p.m, p.n, p.k, T(1), a.data(), p.k, b.data(),
                 ldb, T(0), ref.data(), p.n);
  }};
  Matmul<T> mm(p, a.data(), b.data(), c_mm.data());
  if (mm.ok) fs.push_back([&] { mm.Run(); });
  if constexpr (std::is_same_v<T, float>) {
    fs.push_back([&] {
      dnnl_sgemm('N', p.trans_b ? 'T' : 'N', p.m, p.n, p.k, 1.f, a.data(), p.k,
                 b.data(), ldb, 0.f, c_sg.data(), p.n);
    });
  }
  const std::vector<double> t = BestOf(fs, budget);
  const double t_blis = t[0];
  const double t_mm = mm.ok ? t[1] : 0;
  const double t_sg = std::is_same_v<T, float> ? t.back() : 0;
  const double d_mm = mm.ok ? MaxRelDiff(c_mm, ref) : 0;
  const double d_sg = t_sg > 0 ? MaxRelDiff(c_sg, ref) : 0;

  auto gf = [&](double t) { return t > 0 ? flop / t * 1e-9 : 0.0; };
  const double best = std::max({gf(t_blis), gf(t_mm), gf(t_sg)});
  const char* winner = best == gf(t_blis) ? "BLIS"
                       : best == gf(t_mm) ? "matmul"
                                          : "sgemm";
  char mm_col[32] = "n/a", sg_col[32] = "n/a", mm_diff[32] = "n/a",
       sg_diff[32] = "n/a";
  if (mm.ok) {
    std::snprintf(mm_col, sizeof mm_col, "%.1f", gf(t_mm));
    std::snprintf(mm_diff, sizeof mm_diff, "%.1e", d_mm);
  }
  if (t_sg > 0) {
    std::snprintf(sg_col, sizeof sg_col, "%.1f", gf(t_sg));
    std::snprintf(sg_diff, sizeof sg_diff, "%.1e", d_sg);
  }
  std::printf(
      "| %-26s | %5lld x %5lld x %4lld | %s | %6.1f | %6s | %6s | %-6s "
      "| %s / %s | %s |\n",
      p.what, static_cast<long long>(p.m), static_cast<long long>(p.n),
      static_cast<long long>(p.k), std::is_same_v<T, float> ? "f32" : "f64",
      gf(t_blis), mm_col, sg_col, winner, mm_diff, sg_diff, mm.impl.c_str());
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  bool f32_only = false;
  double budget = 1.0;  // seconds of timing per product and dtype
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--f32") == 0) {
      f32_only = true;
    } else if (std::strncmp(argv[i], "--seconds=", 10) == 0) {
      budget = std::atof(argv[i] + 10);
    } else if (std::strncmp(argv[i], "--threads=", 10) == 0) {
      omp_set_num_threads(std::atoi(argv[i] + 10));
    } else if (std::strcmp(argv[i], "--thread_cpu") == 0) {
      g_thread_cpu = true;
    } else if (std::strcmp(argv[i], "--cold") == 0) {
      g_cold = true;
    } else {
      std::fprintf(stderr,
                   "usage: gemm [--f32] [--seconds=S] [--threads=N] "
                   "[--thread_cpu] [--cold]\n");
      return 2;
    }
  }
  if (g_thread_cpu && omp_get_max_threads() != 1) {
    std::fprintf(stderr,
                 "gemm: --thread_cpu times one thread: add --threads=1\n");
    return 2;
  }
  const dnnl_version_t* v = dnnl_version();
  std::printf(
      "GEMM, GFLOP/s (best of >= 10 interleaved calls, %s%s), %d OpenMP "
      "threads, oneDNN %d.%d.%d (%s)\n\n",
      g_thread_cpu ? "thread CPU time" : "wall clock",
      g_cold ? ", caches evicted before each call" : "", omp_get_max_threads(),
      v->major, v->minor, v->patch,
      v->cpu_runtime == DNNL_RUNTIME_OMP ? "OpenMP" : "other runtime");
  std::printf(
      "| product | M x N x K | dtype | BLIS | matmul | sgemm | best | rel. "
      "diff matmul / sgemm | matmul impl |\n"
      "|---|---|---|---|---|---|---|---|---|\n");
  for (const Product& p : kProducts) RunProduct<float>(p, budget);
  if (!f32_only) {
    for (const Product& p : kProducts) RunProduct<double>(p, budget);
  }
  return 0;
}
