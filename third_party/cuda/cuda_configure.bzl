"""Repository rule finding what the CUDA half of ai3's core builds with.

- nvcc and the CUDA toolkit (headers, libcudart): $CUDA_PATH, else the
  toolkit nvcc on PATH belongs to (/usr/local/bin/nvcc may be a wrapper
  script, so /usr/local/cuda is tried too);
- cuDNN 9, cuBLAS and the cudart torch runs with: the pinned NVIDIA wheels in
  the project's venv (site-packages/nvidia/{cudnn,cu13}), so ai3 links the
  very libraries PyTorch loads into the same process.

The repository always comes into being, even on a machine with no CUDA at
all: `available` in defs.bzl is then False and the targets built under
--config=cuda fail with the reason (the default CPU build never looks).
"""

def _interpreter(ctx):
    # The same choice as //third_party/python (the project's venv).
    env_python = ctx.os.environ.get("PYTHON_BIN_PATH", "")
    if env_python:
        return env_python
    venv = ctx.path(Label("//:WORKSPACE")).dirname.get_child(".venv").get_child("bin").get_child("python3")
    if venv.exists:
        return str(venv)
    found = ctx.which("python3")
    return str(found) if found else None

def _site_packages(ctx, python):
    if not python:
        return None
    result = ctx.execute([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"])
    if result.return_code != 0:
        return None
    return result.stdout.strip()

def _toolkit(ctx):
    """(toolkit root, nvcc path) or (None, reason)."""
    candidates = []
    if ctx.os.environ.get("CUDA_PATH", ""):
        candidates.append(ctx.os.environ["CUDA_PATH"])
    candidates.append("/usr/local/cuda")
    nvcc_on_path = ctx.which("nvcc")
    if nvcc_on_path:
        candidates.append(str(nvcc_on_path.dirname.dirname))
    for root in candidates:
        nvcc = ctx.path(root + "/bin/nvcc")
        if nvcc.exists and ctx.path(root + "/include/cuda_runtime.h").exists:
            return root, str(nvcc)
    return None, "no CUDA toolkit (nvcc + cuda_runtime.h) in %s" % candidates

def _unavailable(ctx, reason):
    ctx.file("BUILD", """\
package(default_visibility = ["//visibility:public"])

# No CUDA here ({reason}): anything asking for it fails when built.
cc_library(name = "cuda_runtime")
cc_library(name = "cudnn")
cc_library(name = "cublas")
""".format(reason = reason))
    ctx.file("defs.bzl", "AVAILABLE = False\nREASON = %r\nNVCC = None\nCUDA_INCLUDE = None\nNVIDIA_INCLUDES = []\n" % reason)

def _lib_dir(ctx, root, lib):
    return root if ctx.path(root + "/" + lib).exists else None

def _cuda_configure_impl(ctx):
    root, nvcc_or_reason = _toolkit(ctx)
    if not root:
        _unavailable(ctx, nvcc_or_reason)
        return
    nvcc = nvcc_or_reason
    site = _site_packages(ctx, _interpreter(ctx))
    nvidia = (site + "/nvidia") if site else None
    cudnn_lib = _lib_dir(ctx, nvidia + "/cudnn/lib", "libcudnn.so.9") if nvidia else None
    cu13_lib = _lib_dir(ctx, nvidia + "/cu13/lib", "libcublas.so.13") if nvidia else None
    if not cudnn_lib or not cu13_lib:
        _unavailable(ctx, "no nvidia-cudnn-cu13 / nvidia cu13 wheels (libcudnn.so.9, libcublas.so.13) under %s" % nvidia)
        return
    cudart = "libcudart.so.13" if ctx.path(cu13_lib + "/libcudart.so.13").exists else None
    if not cudart:
        _unavailable(ctx, "no libcudart.so.13 in %s" % cu13_lib)
        return

    # Headers are symlinked in so Bazel can track them; libraries are not
    # handed to Bazel at all: the pip cuDNN is a loader that dlopens its
    # siblings next to itself ($ORIGIN), so it is linked where pip put it,
    # by exact file name, with an rpath to that directory.
    ctx.symlink(root + "/include", "cuda_include")
    ctx.symlink(nvidia + "/cudnn/include", "cudnn_include")
    # Only cuBLAS's own headers from the wheel: the rest of its include
    # directory repeats the toolkit's runtime headers.
    for header in ["cublas_api.h", "cublas_v2.h", "cublas.h"]:
        ctx.symlink(nvidia + "/cu13/include/" + header, "cublas_include/" + header)
    ctx.file("BUILD", """\
package(default_visibility = ["//visibility:public"])

# The CUDA runtime API, from the toolkit's headers; linked against the
# wheel's libcudart (the one torch loads).
cc_library(
    name = "cuda_runtime",
    # cuda_fp16.h (pulled in by cuBLAS) includes <nv/target> from CCCL.
    hdrs = glob(["cuda_include/*.h", "cuda_include/*.hpp", "cuda_include/crt/**", "cuda_include/cccl/nv/**"]),
    includes = ["cuda_include", "cuda_include/cccl"],
    linkopts = ["-L{cu13}", "-l:{cudart}", "-Wl,-rpath,{cu13}"],
)

cc_library(
    name = "cudnn",
    hdrs = glob(["cudnn_include/*.h"]),
    includes = ["cudnn_include"],
    linkopts = ["-L{cudnn}", "-l:libcudnn.so.9", "-Wl,-rpath,{cudnn}"],
    deps = [":cuda_runtime"],
)

cc_library(
    name = "cublas",
    hdrs = glob(["cublas_include/*.h"]),
    includes = ["cublas_include"],
    linkopts = ["-L{cu13}", "-l:libcublas.so.13", "-l:libcublasLt.so.13", "-Wl,-rpath,{cu13}"],
    deps = [":cuda_runtime"],
)
""".format(cu13 = cu13_lib, cudnn = cudnn_lib, cudart = cudart))
    ctx.file("defs.bzl", "AVAILABLE = True\nREASON = ''\nNVCC = %r\nCUDA_INCLUDE = %r\n" % (nvcc, root + "/include"))

cuda_configure = repository_rule(
    implementation = _cuda_configure_impl,
    environ = ["CUDA_PATH", "PYTHON_BIN_PATH"],
    local = True,
)
