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

def ai3_py_library(name, src = None, deps = [], imports_ai3 = True, **kwargs):
    """<name>.py (or `src`) importable as a top-level module (imports = "."),
    with `import ai3` (//frontends/ai3) unless imports_ai3 is False (the
    pytest runner, which //tests:wheel_test uses without ai3)."""
    native.py_library(
        name = name,
        srcs = [src or (name + ".py")],
        imports = ["."],
        deps = deps + (["//frontends/ai3"] if imports_ai3 else []),
        **kwargs
    )
