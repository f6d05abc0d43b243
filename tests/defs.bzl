"""ai3_py_test: a pytest file as a Bazel py_test; ai3_py_library: a helper
module the tests beside it import by its bare name."""

def ai3_py_test(name, src = None, deps = [], **kwargs):
    src = src or (name + ".py")
    native.py_test(
        name = name,
        srcs = [src],
        main = src,
        python_version = "PY3",
        deps = deps + [
            "//frontends/ai3",
            "//tests:pytest_main",
            "//tests:tolerances",
        ],
        **kwargs
    )

def ai3_py_library(name, src = None, deps = [], **kwargs):
    """<name>.py (or `src`) importable as a top-level module (imports = ".")."""
    native.py_library(
        name = name,
        srcs = [src or (name + ".py")],
        imports = ["."],
        deps = deps,
        **kwargs
    )
