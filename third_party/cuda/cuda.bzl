"""cuda_library: .cu files compiled by nvcc, linked like any cc_library.

    cuda_library(
        name = "algorithms",
        srcs = ["direct.cu", "gemm.cc"],   # .cu -> nvcc, the rest -> cc_library
        deps = [":conv2d", "//core/cuda"],
    )

Each .cu file becomes one position-independent object (<name>_nvcc/x.pic.o)
that a cc_library(alwayslink = 1) links, so the algorithms registering
themselves at load time are kept. nvcc sees the include paths and defines of
`deps` (their CcInfo), the same C++17 as the host code, and device code for
CUDA_ARCHS. The action uses the default shell environment: nvcc runs the host
compiler (g++), which needs PATH to find cc1plus and as.
"""

load("@local_cuda//:defs.bzl", "AVAILABLE", "NVCC", "REASON")

# Ampere (A100) and Hopper (H100/H200) machine code, plus PTX for the newest
# so later GPUs JIT-compile it.
CUDA_ARCHS = ["80", "90"]

# target_compatible_with for everything CUDA: only under --config=cuda.
CUDA_ONLY = select({
    "//third_party/cuda:enabled": [],
    "//conditions:default": ["//third_party/cuda:requires_cuda_config"],
})

def _gencode_flags():
    flags = ["-gencode=arch=compute_%s,code=sm_%s" % (a, a) for a in CUDA_ARCHS]
    newest = CUDA_ARCHS[-1]
    flags.append("-gencode=arch=compute_%s,code=compute_%s" % (newest, newest))
    return flags

def _nvcc_objects_impl(ctx):
    if not AVAILABLE:
        fail("ai3: --config=cuda needs CUDA, but " + REASON)
    compilation = cc_common.merge_cc_infos(
        cc_infos = [d[CcInfo] for d in ctx.attr.deps if CcInfo in d],
    ).compilation_context
    include_flags = ["-I.", "-I" + ctx.bin_dir.path]
    for path in compilation.includes.to_list() + compilation.quote_includes.to_list():
        include_flags.append("-I" + path)
    for path in compilation.system_includes.to_list():
        include_flags += ["-isystem", path]
    define_flags = ["-D" + d for d in compilation.defines.to_list()]
    outputs = []
    for src in ctx.files.srcs:
        stem = src.basename[:-len(".cu")]
        out = ctx.actions.declare_file("%s/%s.pic.o" % (ctx.label.name, stem))
        args = ctx.actions.args()
        args.add_all(["-c", "-ccbin", "g++", "-std=c++17", "-Xcompiler", "-fPIC", "-O2"])
        # Host-side headers carry OpenMP pragmas nvcc does not compile.
        args.add_all(["-Xcompiler", "-Wall", "-Xcompiler", "-Wno-unknown-pragmas", "--expt-relaxed-constexpr"])
        args.add_all(_gencode_flags())
        args.add_all(include_flags)
        args.add_all(define_flags)
        args.add_all(ctx.attr.copts)
        args.add_all(["-o", out.path, src.path])
        ctx.actions.run(
            executable = NVCC,
            arguments = [args],
            inputs = depset([src] + ctx.files.hdrs, transitive = [compilation.headers]),
            outputs = [out],
            mnemonic = "NvccCompile",
            progress_message = "nvcc %s" % src.short_path,
            use_default_shell_env = True,
        )
        outputs.append(out)
    return [DefaultInfo(files = depset(outputs))]

_nvcc_objects = rule(
    implementation = _nvcc_objects_impl,
    attrs = {
        "srcs": attr.label_list(allow_files = [".cu"]),
        "hdrs": attr.label_list(allow_files = [".h", ".cuh"]),
        "deps": attr.label_list(providers = [CcInfo]),
        "copts": attr.string_list(),
    },
)

def cuda_library(name, srcs = [], hdrs = [], deps = [], copts = [], nvcc_copts = [], **kwargs):
    """A CUDA-only cc_library(alwayslink = 1) of .cu (nvcc) and .cc (g++) files."""
    cu_srcs = [s for s in srcs if s.endswith(".cu")]
    cc_srcs = [s for s in srcs if not s.endswith(".cu")]
    deps = deps + ["@local_cuda//:cuda_runtime"]
    objects = []
    if cu_srcs:
        _nvcc_objects(
            name = name + "_nvcc",
            srcs = cu_srcs,
            hdrs = hdrs,
            deps = deps,
            copts = nvcc_copts,
            target_compatible_with = CUDA_ONLY,
        )
        objects = [":" + name + "_nvcc"]
    native.cc_library(
        name = name,
        srcs = cc_srcs + objects,
        hdrs = hdrs,
        deps = deps,
        copts = copts,
        alwayslink = 1,
        target_compatible_with = CUDA_ONLY,
        **kwargs
    )
