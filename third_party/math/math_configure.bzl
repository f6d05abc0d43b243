"""Repository rule finding the CPU math libraries ai3's core links.

- oneDNN (Debian's libdnnl-dev, 2.6): its convolution primitive, which is
  the "guess" conv2d algorithm.
- BLIS, OpenMP build (libblis-openmp-dev, 0.9): GEMM for both dtypes (why
  BLIS and not dnnl_sgemm or OpenBLAS: core/math/gemm.cc). The OpenMP build
  shares the OpenMP runtime with oneDNN and with ai3's own loops instead of
  adding a pthread pool. Debian installs it beside the other BLIS builds
  under its own directory, so it is linked by that path with an rpath, not
  through the libblis.so alternative (which may name another build).

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
    blis_inc = _find(ctx, [d + "/blis-openmp" for d in _SEARCH_INCLUDE + ["/usr/include/x86_64-linux-gnu"]], "blis.h")
    blis_lib = _find(ctx, [d + "/blis-openmp" for d in _SEARCH_LIB], "libblis.so")
    missing = []
    if not dnnl_inc or not dnnl_lib:
        missing.append("oneDNN (libdnnl-dev)")
    if not blis_inc or not blis_lib:
        missing.append("BLIS (libblis-openmp-dev)")
    if missing:
        fail("ai3: missing %s. Run ./bazelw, which installs them." % ", ".join(missing))
    ctx.symlink(dnnl_inc + "/oneapi", "dnnl_include/oneapi")
    ctx.symlink(blis_inc + "/blis.h", "blis_include/blis.h")
    ctx.file("BUILD", """\
package(default_visibility = ["//visibility:public"])

cc_library(
    name = "dnnl",
    hdrs = glob(["dnnl_include/**/*.h", "dnnl_include/**/*.hpp"]),
    includes = ["dnnl_include"],
    linkopts = ["-L{dnnl_lib}", "-ldnnl"],
)

cc_library(
    name = "blis",
    hdrs = ["blis_include/blis.h"],
    includes = ["blis_include"],
    linkopts = ["-L{blis_lib}", "-l:libblis.so.4", "-Wl,-rpath,{blis_lib}"],
)
""".format(dnnl_lib = dnnl_lib, blis_lib = blis_lib))

math_configure = repository_rule(
    implementation = _math_configure_impl,
    local = True,
)
