"""Repository rule finding the CPU math libraries ai3's core links.

- oneDNN 3.2 (PyPI's onednn-cpu-gomp + onednn-devel-cpu-gomp wheels, which
  ./bazelw unpacks under the user cache dir and names in $AI3_ONEDNN): its
  convolution primitive, which is the "guess" conv2d algorithm. It is linked
  as libdnnl.so.3 from that directory with an rpath, the way the cuDNN notes
  say for a library that must be found where it lies rather than through a
  Bazel symlink; the wheel bundles it beside _core.so (tools/build_wheel.py).
  Its threading is GNU OpenMP, the system libgomp.so.1 that BLIS and ai3's
  loops use, so a process holds one OpenMP runtime.
- BLIS, OpenMP build (libblis-openmp-dev, 0.9): GEMM for both dtypes (why
  BLIS and not dnnl_sgemm or OpenBLAS: core/math/gemm.cc). The OpenMP build
  shares the OpenMP runtime with oneDNN and with ai3's own loops instead of
  adding a pthread pool. Debian installs it beside the other BLIS builds
  under its own directory, so it is linked by that path with an rpath, not
  through the libblis.so alternative (which may name another build).

./bazelw provides both (BLIS as a system package); the rule fails with that
hint when one is missing rather than leaving a link error.
"""

_SEARCH_INCLUDE = ["/usr/include", "/usr/local/include"]
_SEARCH_LIB = ["/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib", "/usr/local/lib"]

def _find(ctx, dirs, name):
    for d in dirs:
        p = ctx.path(d + "/" + name)
        if p.exists:
            return d
    return None

# The oneDNN major version the core is written against (its 3.x API:
# primitive descriptors built without op descriptors, user scratchpads).
_DNNL_MAJOR = 3

def _find_dnnl(ctx):
    """The oneDNN prefix bazelw unpacked, or None; fails on a wrong version."""
    prefix = ctx.os.environ.get("AI3_ONEDNN", "")
    if not prefix:
        return None
    version_h = ctx.path(prefix + "/include/oneapi/dnnl/dnnl_version.h")
    if not version_h.exists or not ctx.path(prefix + "/lib/libdnnl.so.%d" % _DNNL_MAJOR).exists:
        return None
    if ("#define DNNL_VERSION_MAJOR %d" % _DNNL_MAJOR) not in ctx.read(version_h):
        fail("ai3: %s is not oneDNN %d.x. Run ./bazelw, which fetches it." % (prefix, _DNNL_MAJOR))
    return prefix

def _math_configure_impl(ctx):
    dnnl = _find_dnnl(ctx)
    blis_inc = _find(ctx, [d + "/blis-openmp" for d in _SEARCH_INCLUDE + ["/usr/include/x86_64-linux-gnu"]], "blis.h")
    blis_lib = _find(ctx, [d + "/blis-openmp" for d in _SEARCH_LIB], "libblis.so")
    missing = []
    if not dnnl:
        missing.append("oneDNN %d ($AI3_ONEDNN, fetched by ./bazelw)" % _DNNL_MAJOR)
    if not blis_inc or not blis_lib:
        missing.append("BLIS (libblis-openmp-dev)")
    if missing:
        fail("ai3: missing %s. Run ./bazelw, which installs them." % ", ".join(missing))
    ctx.symlink(dnnl + "/include/oneapi", "dnnl_include/oneapi")
    ctx.symlink(blis_inc + "/blis.h", "blis_include/blis.h")
    ctx.file("BUILD", """\
package(default_visibility = ["//visibility:public"])

cc_library(
    name = "dnnl",
    hdrs = glob(["dnnl_include/**/*.h", "dnnl_include/**/*.hpp"]),
    includes = ["dnnl_include"],
    linkopts = ["-L{dnnl_lib}", "-l:libdnnl.so.{dnnl_major}", "-Wl,-rpath,{dnnl_lib}"],
)

cc_library(
    name = "blis",
    hdrs = ["blis_include/blis.h"],
    includes = ["blis_include"],
    linkopts = ["-L{blis_lib}", "-l:libblis.so.4", "-Wl,-rpath,{blis_lib}"],
)
""".format(dnnl_lib = dnnl + "/lib", dnnl_major = _DNNL_MAJOR, blis_lib = blis_lib))

math_configure = repository_rule(
    implementation = _math_configure_impl,
    environ = ["AI3_ONEDNN"],
    local = True,
)
