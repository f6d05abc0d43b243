"""The macro of the core's cc_tests."""

load("//core:copts.bzl", "AI3_AVX512_COPTS", "AI3_COPTS")

def ai3_cc_test(name, srcs = None, ops = [], deps = [], **kwargs):
    """A cc_test of the core: <name>.cc (or `srcs`) with the core's copts,
    defining ai3::Main() for the shared main() of //core/testing:main
    beside the references of //core/testing:reference.

    ops: packages under core/ops whose layers the test builds: each adds
    its attributes (//core/ops/<op>) and its algorithms (:algorithms).
    """
    op_deps = []
    for op in ops:
        op_deps += ["//core/ops/" + op, "//core/ops/%s:algorithms" % op]
    native.cc_test(
        name = name,
        srcs = srcs or [name + ".cc"],
        copts = AI3_COPTS,
        deps = deps + op_deps + [
            "//core:base",
            "//core/testing:main",
            "//core/testing:reference",
        ],
        **kwargs
    )

def ai3_avx512_library(name, srcs, hdrs = [], deps = []):
    """A library of kernels built for AVX-512 (compiled with
    AI3_AVX512_COPTS, called only where core/cpu.h finds AVX-512), and
    :<name>_symbols_test, which checks that it defines nothing the AVX2
    code could link to by mistake (core/ops/avx512_symbols_test.sh)."""
    native.cc_library(
        name = name,
        srcs = srcs,
        hdrs = hdrs,
        copts = AI3_COPTS + AI3_AVX512_COPTS,
        deps = deps,
    )
    native.sh_test(
        name = name + "_symbols_test",
        srcs = ["//core/ops:avx512_symbols_test.sh"],
        args = ["$(locations :%s)" % name],
        data = [":" + name],
    )
