"""The op packages under core/ops/: their one list, and the macros their
BUILD files are made of."""

load("//core:copts.bzl", "AI3_COPTS")
load("//core:defs.bzl", "ai3_avx512_library", "ai3_cc_test")
load("//third_party/cuda:cuda.bzl", "cuda_library")

# Every op package that is an ai3_op, as "<package under core/ops>" (its
# attributes target named like its folder) or "<package>:<name>", mapped to
# whether it has CUDA algorithms (<package>/cuda, ai3_cuda_algorithms).
# A new op adds its one line here; //core:builtin (the algorithms linked
# into ai3._core), //core/ops:all_ops (the attributes, for custom_algos/)
# and //core/cuda:algorithms are made from it.
AI3_OPS = {
    "adaptivemaxpool2d": False,
    "argmax": False,
    "attention": False,
    "attention/multihead:multihead_attention": False,
    "batchnorm2d": True,
    "binary": True,
    "cast": False,
    "clamp": True,
    "compare": False,
    "conv2d": True,
    "conv2d/backward/bias:conv2d_backward_bias": False,
    "conv2d/backward/data:conv2d_backward_data": False,
    "conv2d/backward/weight:conv2d_backward_weight": False,
    "conv3d": False,
    "conv_transpose2d": False,
    "cumsum": False,
    "depth_to_space": False,
    "flatten": True,
    "gather": False,
    "gather_elements": False,
    "gelu": False,
    "grid_sample": False,
    "groupnorm": False,
    "hardsigmoid": False,
    "hardswish": False,
    "layernorm": False,
    "leaky_relu": True,
    "linear": True,
    "linear/backward/bias:linear_backward_bias": False,
    "linear/backward/data:linear_backward_data": False,
    "linear/backward/weight:linear_backward_weight": False,
    "log_softmax": False,
    "lrn": False,
    "matmul": False,
    "mean": False,
    "pad2d": False,
    "permute": False,
    "pool2d": True,
    "pool3d": False,
    "relu": True,
    "rmsnorm": False,
    "reshape": False,
    "resize": False,
    "roll": False,
    "sigmoid": True,
    "silu": True,
    "scatter": False,
    "slice": False,
    "softmax": False,
    "space_to_depth": False,
    "tanh": True,
    "tile": False,
    "topk": False,
    "trilu": False,
    "unary": False,
    "where": False,
}

def ai3_op_labels(target = None, cuda = False):
    """One label per op of AI3_OPS: its attributes (target None) or its
    `target` (e.g. "algorithms"); with cuda, its CUDA package's `target`
    for the ops that have one."""
    labels = []
    for entry, has_cuda in AI3_OPS.items():
        package, _, name = entry.partition(":")
        if cuda:
            if has_cuda:
                labels.append("//core/ops/%s/cuda:%s" % (package, target))
        else:
            labels.append("//core/ops/%s:%s" % (package, target or name or package.split("/")[-1]))
    return labels

def ai3_op(name, algorithm_deps = [], extra_hdrs = [], deps = [], test_deps = []):
    """Declares an op's package.

    :<name>        the op's attributes (<name>.h, <name>.cc if any): what a layer of it is,
                   how its output shape follows from its input
    :schema        the *_schema.cc files: the op's declaration for the
                   generic bindings (core/op_schema.h) and its "default"
                   list, registering themselves (hence alwayslink)
    :algorithms    every other .cc file: one algorithm each, registering
                   itself (hence alwayslink); it depends on :schema, so
                   whatever links the algorithms has their "default" order
    :avx512        the *_avx512.cc files, if any: kernels an algorithm also
                   builds for AVX-512 and picks at run time (core/cpu.h),
                   compiled with AI3_AVX512_COPTS; a dependency of :algorithms
    :avx512_symbols_test  that :avx512 defines nothing the AVX2 code could
                   link to by mistake (core/ops/avx512_symbols_test.sh)
    :<name>_test   every algorithm against a naive reference (if there is
                   a <name>_test.cc; multihead_attention is checked against
                   torch in //tests:attention_layers_test)

    extra_hdrs / deps: more headers and libraries of :<name> (e.g. a helper
    header several ops of one package share); test_deps: more for the test
    (e.g. //core:graph for a test through ai3::Model).
    """
    native.cc_library(
        name = name,
        srcs = native.glob([name + ".cc"]),  # header-only for elementwise ops
        hdrs = [name + ".h"] + extra_hdrs,
        copts = AI3_COPTS,
        deps = [
            "//core:base",
            "//core/ops:elementwise",
        ] + deps,
        visibility = ["//visibility:public"],
    )
    native.cc_library(
        name = "schema",
        srcs = native.glob(["*_schema.cc"]),
        copts = AI3_COPTS,
        deps = [
            ":" + name,
            "//core:base",
            "//core:op_schema",
            "//core/ops:elementwise_schema",
        ] + deps,
        alwayslink = 1,
        visibility = ["//visibility:public"],
    )
    avx512_srcs = native.glob(["*_avx512.cc"])
    avx512_deps = []
    if avx512_srcs:
        ai3_avx512_library(
            name = "avx512",
            srcs = avx512_srcs,
            hdrs = native.glob(["*_kernel.h"]),
            deps = [":" + name, "//core:base"],
        )
        avx512_deps = [":avx512"]
    native.cc_library(
        name = "algorithms",
        srcs = native.glob(
            ["*.cc", "*_kernel.h"],
            exclude = [
                name + ".cc",
                "*_test.cc",
                "*_avx512.cc",
                "*_schema.cc",
            ],
        ),
        copts = AI3_COPTS,
        deps = [
            ":" + name,
            ":schema",
            "//core:base",
            "//core:math",
        ] + algorithm_deps + avx512_deps,
        alwayslink = 1,
        visibility = ["//visibility:public"],
    )
    if native.glob([name + "_test.cc"]):
        ai3_cc_test(
            name = name + "_test",
            deps = [":algorithms", ":" + name] + test_deps,
        )

def ai3_cuda_algorithms(hdrs = [], deps = []):
    """The :algorithms target of an op's CUDA package (core/ops/<op>/cuda):
    every .cu and .cc file there, one algorithm each registering itself for
    Device::kCUDA, built by nvcc under --config=cuda only (cuda_library).
    It depends on the op's attributes (the parent package), the core and the
    CUDA runtime helpers; `deps` adds libraries such as cuDNN or cuBLAS."""
    cuda_library(
        name = "algorithms",
        srcs = native.glob(["*.cu", "*.cc"]),
        hdrs = hdrs,
        visibility = ["//visibility:public"],
        deps = [
            "//core:base",
            "//core/cuda:runtime",
            "//" + native.package_name().rsplit("/", 1)[0],
        ] + deps,
    )

def ai3_graph_op(name):
    """An op ai3::Model (core/graph.h) calls directly, not an ai3_op: it
    takes several inputs, so it is no Layer and has no registry entry.
    :<name> is <name>.h and its one implementation, direct.cc."""
    native.cc_library(
        name = name,
        srcs = ["direct.cc"],
        hdrs = [name + ".h"],
        copts = AI3_COPTS,
        visibility = ["//visibility:public"],
        deps = ["//core:base"],  # core/parallel.h
    )

def ai3_graph_op_cuda(name):
    """The GPU form of an ai3_graph_op, for the Model's CUDA backend
    (--config=cuda only): <name>_cuda.h and the .cu/.cc files beside it."""
    cuda_library(
        name = name,
        srcs = native.glob(["*.cu", "*.cc"]),
        hdrs = [name + "_cuda.h"],
        visibility = ["//visibility:public"],
        deps = ["//core/cuda:runtime"],
    )
