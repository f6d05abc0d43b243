"""The macro of the core's cc_tests."""

load("//core:copts.bzl", "AI3_COPTS")

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
