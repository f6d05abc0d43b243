"""Repository rule giving Bazel the project's Python.

Bazel 4.2.3 would otherwise run Python targets with whatever `python3` is on
PATH (and a stub starting `#!/usr/bin/env python`, which does not exist
here). This rule picks the interpreter the project installs packages into,
probes it, and writes a repository with:
  :python_headers  the interpreter's C headers
  :pybind11        pybind11's headers (from the venv's pybind11 package)
  :toolchain       a Python toolchain running that interpreter
  :tensorflow_framework  the pip TensorFlow's headers, compile defines and
                   libtensorflow_framework.so.2, for custom op libraries
                   (frontends/ai3/keras/tf_ops); empty when the interpreter has no TensorFlow
"""

def _tensorflow(ctx, info):
    """Symlinks TensorFlow's include dir and returns the BUILD text of
    :tensorflow_framework from tf.sysconfig's compile and link flags."""
    compile_flags = info.get("tf_compile_flags")
    link_flags = info.get("tf_link_flags")
    if not compile_flags or not link_flags:
        return """
# The interpreter has no (importable) TensorFlow: nothing to build against.
cc_library(name = "tensorflow_framework")
"""
    include = None
    defines = []
    for flag in compile_flags:
        if flag.startswith("-I"):
            include = flag[2:]
        elif flag.startswith("-D"):
            defines.append(flag[2:])
    lib_dir = None
    libs = []
    for flag in link_flags:
        if flag.startswith("-L"):
            lib_dir = flag[2:]
        elif flag.startswith("-l"):
            libs.append(flag)
    if not include or not lib_dir or not libs:
        fail("ai3: unexpected tf.sysconfig flags: %s %s" % (compile_flags, link_flags))
    ctx.symlink(include, "tf_include")

    # The library is linked from where pip put it (by soname: at run time
    # TensorFlow has loaded it already, before tf.load_op_library).
    return """
cc_library(
    name = "tensorflow_framework",
    hdrs = glob(["tf_include/**"], exclude = ["tf_include/**/*.c", "tf_include/**/*.cc"]),
    includes = ["tf_include"],
    defines = {defines},
    linkopts = ["-L{lib_dir}"] + {libs},
)
""".format(defines = repr(defines), lib_dir = lib_dir, libs = repr(libs))

def _interpreter(ctx):
    env_python = ctx.os.environ.get("PYTHON_BIN_PATH", "")
    if env_python:
        return env_python
    venv_python = ctx.path(Label("//:WORKSPACE")).dirname.get_child(".venv").get_child("bin").get_child("python3")

    # Keep the venv path as it is: resolving its symlink lands on the base
    # interpreter, which lacks the venv's packages.
    if venv_python.exists:
        return str(venv_python)
    found = ctx.which("python3")
    if not found:
        fail("ai3: no Python found. Run ./bazelw (it creates .venv) or set PYTHON_BIN_PATH.")
    return str(found)

def _python_configure_impl(ctx):
    python = _interpreter(ctx)
    result = ctx.execute([python, str(ctx.path(Label("//third_party/python:probe.py")))])
    if result.return_code != 0:
        fail("ai3: probing %s failed:\n%s" % (python, result.stderr))
    info = json.decode(result.stdout)
    if info["version"] != "3.11":
        print("ai3: warning: %s is Python %s; ai3 is pinned to 3.11" % (python, info["version"]))
    if not info["pybind11_include"]:
        fail("ai3: %s has no pybind11. Run ./bazelw, which installs requirements.txt into .venv." % python)

    ctx.symlink(info["include"], "python_include")
    ctx.symlink(info["pybind11_include"], "pybind11_include")
    ctx.file("BUILD", """\
load("@bazel_tools//tools/python:toolchain.bzl", "py_runtime_pair")

package(default_visibility = ["//visibility:public"])

cc_library(
    name = "python_headers",
    hdrs = glob(["python_include/**/*.h"]),
    includes = ["python_include"],
)

cc_library(
    name = "pybind11",
    hdrs = glob(["pybind11_include/**/*.h"]),
    includes = ["pybind11_include"],
    deps = [":python_headers"],
)

py_runtime(
    name = "py3_runtime",
    interpreter_path = "{python}",
    python_version = "PY3",
    stub_shebang = "#!{python}",
)

py_runtime_pair(
    name = "runtime_pair",
    py3_runtime = ":py3_runtime",
)

toolchain(
    name = "toolchain",
    toolchain = ":runtime_pair",
    toolchain_type = "@bazel_tools//tools/python:toolchain_type",
)

exports_files(["interpreter"])
""".format(python = python) + _tensorflow(ctx, info))
    ctx.file("interpreter", python + "\n")
    ctx.file("defs.bzl", "PYTHON_BIN = %r\nSITE_PACKAGES = %r\n" % (python, info["site_packages"]))

python_configure = repository_rule(
    implementation = _python_configure_impl,
    environ = ["PYTHON_BIN_PATH"],
    local = True,
)
