"""Repository rule finding the CPU math libraries ai3's core links.

- oneDNN (Debian's libdnnl-dev, 2.6): dnnl_sgemm for float32 GEMM (the
  fastest SGEMM measured on the target machines) and its convolution
  primitive, which is the "guess" conv2d algorithm.
- OpenBLAS, OpenMP build (libopenblas-openmp-dev): cblas_dgemm for float64,
  which oneDNN does not offer. The OpenMP build shares the OpenMP runtime
  with oneDNN and with ai3's own loops instead of adding a pthread pool.

Both are system packages that ./bazelw installs; the rule fails with that
hint when they are missing rather than leaving a link error.
"""

_SEARCH_INCLUDE = ["/usr/include", "/usr/local/include"]
_SEARCH_LIB = ["/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib", "/usr/local/lib"]

def _find(ctx, dirs, name):
    for d in dirs:
        p = ctx.path(d + "/" + name)
        if p.exists:
            return d
    return None

def _math_configure_impl(ctx):
    dnnl_inc = _find(ctx, _SEARCH_INCLUDE, "oneapi/dnnl/dnnl.h")
    dnnl_lib = _find(ctx, _SEARCH_LIB, "libdnnl.so")
    blas_inc = _find(ctx, _SEARCH_INCLUDE + ["/usr/include/x86_64-linux-gnu"], "cblas.h")
    blas_lib = _find(ctx, _SEARCH_LIB, "libopenblas.so")
    missing = []
    if not dnnl_inc or not dnnl_lib:
        missing.append("oneDNN (libdnnl-dev)")
    if not blas_inc or not blas_lib:
        missing.append("OpenBLAS (libopenblas-openmp-dev)")
    if missing:
        fail("ai3: missing %s. Run ./bazelw, which installs them." % ", ".join(missing))
    ctx.symlink(dnnl_inc + "/oneapi", "dnnl_include/oneapi")
    ctx.symlink(blas_inc + "/cblas.h", "blas_include/cblas.h")
    if ctx.path(blas_inc + "/openblas_config.h").exists:
        ctx.symlink(blas_inc + "/openblas_config.h", "blas_include/openblas_config.h")
    ctx.file("BUILD", """\
package(default_visibility = ["//visibility:public"])

cc_library(
    name = "dnnl",
    hdrs = glob(["dnnl_include/**/*.h", "dnnl_include/**/*.hpp"]),
    includes = ["dnnl_include"],
    linkopts = ["-L{dnnl_lib}", "-ldnnl"],
)

cc_library(
    name = "openblas",
    hdrs = glob(["blas_include/*.h"]),
    includes = ["blas_include"],
    linkopts = ["-L{blas_lib}", "-lopenblas"],
)
""".format(dnnl_lib = dnnl_lib, blas_lib = blas_lib))
    ctx.file("libs.bzl", "DNNL_LIB_DIR = %r\nOPENBLAS_LIB_DIR = %r\n" % (dnnl_lib, blas_lib))

math_configure = repository_rule(
    implementation = _math_configure_impl,
    local = True,
)
