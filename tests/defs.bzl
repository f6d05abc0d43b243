"""ai3_py_test: a pytest file as a Bazel py_test."""

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
        ],
        **kwargs
    )
