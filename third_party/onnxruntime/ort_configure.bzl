"""Repository rule for ONNX Runtime's C/C++ API headers (@onnxruntime_headers).

./bazelw unpacks them from Debian's libonnxruntime-dev package under the user
cache dir and names the include directory in $AI3_ORT_HEADERS (see
ensure_ort_headers there for why that package and version). Headers only:
the custom-op library built against them is loaded by the onnxruntime wheel,
which provides the API at run time (RegisterCustomOps receives it), so
nothing links ONNX Runtime.
"""

def _ort_configure_impl(ctx):
    include = ctx.os.environ.get("AI3_ORT_HEADERS", "")
    if not include or not ctx.path(include + "/onnxruntime_c_api.h").exists:
        fail("ai3: missing ONNX Runtime's headers ($AI3_ORT_HEADERS). Run ./bazelw, which fetches them.")
    ctx.symlink(include, "include")
    ctx.file("BUILD", """\
package(default_visibility = ["//visibility:public"])

cc_library(
    name = "headers",
    hdrs = glob(["include/**/*.h"]),
    includes = ["include"],
)
""")

ort_configure = repository_rule(
    implementation = _ort_configure_impl,
    environ = ["AI3_ORT_HEADERS"],
    local = True,
)
