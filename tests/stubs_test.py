"""ai3/_core.pyi (//tools:core_stubs, shipped in the wheel) describes the
built extension: it parses, it names every public function, class, method,
property and constant of `ai3._core` and nothing the module lacks, each
function with a signature of typed arguments, and the names it uses are
resolvable (no `Any` standing in for a type pybind11 could not name).

And a type checker agrees: mypy.stubtest finds the stubs consistent with
the extension at run time (only the differences stubs_allowlist.txt
explains), and mypy --strict finds no error in the stubs nor in
stubs_user_code.py, a user's typed code whose assert_type calls pin the
types an editor shows for the core's API; that code then runs.
"""

from __future__ import annotations

import ast
import inspect
import os
import shutil
import subprocess
import sys
import tempfile

import pytest_main

import ai3
from ai3 import _core

RUNFILES = os.path.join(os.environ["TEST_SRCDIR"], os.environ.get("TEST_WORKSPACE", "ai3"))
STUBS = os.path.join(RUNFILES, "tools", "_core.pyi")
ALLOWLIST = os.path.join(RUNFILES, "tests", "stubs_allowlist.txt")
USER_CODE = os.path.join(RUNFILES, "tests", "stubs_user_code.py")

# mypy --strict for the stubs and the user's code. The ai3 package's own
# modules are read for their types but not reported on (they are not what
# is checked here), and the frameworks some of them import are not read at
# all: mypy would spend minutes in torch and TensorFlow for nothing the
# core's API uses.
MYPY_CONFIG = """
[mypy]
strict = True
[mypy-ai3.*]
follow_imports = silent
[mypy-torch.*,torchvision.*,tensorflow.*,keras.*,onnx.*,onnxruntime.*,matplotlib.*,rich.*,ray.*,sklearn.*,scipy.*]
follow_imports = skip
"""


def parsed() -> ast.Module:
    with open(STUBS) as f:
        return ast.parse(f.read(), STUBS)


def public(names: list[str]) -> set[str]:
    return {n for n in names if not n.startswith("_")}


def stub_members(tree: ast.Module) -> dict[str, set[str] | None]:
    """{top-level name: its members' names (a class) or None}."""
    members: dict[str, set[str] | None] = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            members[node.name] = {
                n.name if isinstance(n, (ast.FunctionDef, ast.ClassDef)) else n.target.id
                for n in node.body
                if isinstance(n, (ast.FunctionDef, ast.ClassDef))
                or (isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name))
            }
        elif isinstance(node, ast.FunctionDef):
            members[node.name] = None
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            members[node.target.id] = None
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    members[target.id] = None
    return members


def test_stubs_parse_and_cover_the_module() -> None:
    members = stub_members(parsed())
    module_names = public(dir(_core))
    assert module_names, "ai3._core exports nothing"
    assert public(list(members)) == module_names
    for name in sorted(module_names):
        value = getattr(_core, name)
        if inspect.isclass(value):
            own = public([n for n in vars(value) if n not in ("__init__",)])
            assert own <= members[name], f"{name}: stubs lack {sorted(own - members[name])}"


def typed_package() -> tuple[str, str]:
    """A scratch copy of the ai3 package as installed (the sources, the
    built _core.so) with the stubs beside the extension, as in the wheel;
    returns (its root, a mypy config file in it)."""
    root = tempfile.mkdtemp()
    shutil.copytree(os.path.dirname(ai3.__file__), os.path.join(root, "ai3"))
    shutil.copy(STUBS, os.path.join(root, "ai3", "_core.pyi"))
    config = os.path.join(root, "mypy.ini")
    with open(config, "w") as f:
        f.write(MYPY_CONFIG)
    return root, config


def run_in(root: str, *args: str) -> subprocess.CompletedProcess[str]:
    """`python args...` with only the scratch package importable (and seen
    by mypy, through MYPYPATH)."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": root, "PYTHONPATH": root, "MYPYPATH": root}
    return subprocess.run([sys.executable, *args], cwd=root, env=env, capture_output=True, text=True)


def test_stubtest_finds_the_stubs_match_the_extension() -> None:
    root, config = typed_package()
    out = run_in(root, "-m", "mypy.stubtest", "ai3._core", "--mypy-config-file", config, "--allowlist", ALLOWLIST)
    assert out.returncode == 0, out.stdout + out.stderr


def test_mypy_strict_passes_the_stubs_and_typed_user_code() -> None:
    root, config = typed_package()
    user_code = os.path.join(root, "user_code.py")
    shutil.copy(USER_CODE, user_code)
    checked = run_in(
        root,
        "-m",
        "mypy",
        "--config-file",
        config,
        "--cache-dir",
        os.path.join(root, ".mypy_cache"),
        os.path.join(root, "ai3", "_core.pyi"),
        user_code,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "Success: no issues found in 2 source files" in checked.stdout, checked.stdout
    ran = run_in(root, user_code)
    assert ran.returncode == 0, ran.stderr
    assert "typed user code ran" in ran.stdout


def test_functions_have_typed_signatures() -> None:
    untyped = []
    for node in ast.walk(parsed()):
        if isinstance(node, ast.FunctionDef):
            args = node.args.posonlyargs + node.args.args + node.args.kwonlyargs
            for arg in args:
                if arg.arg not in ("self", "cls") and arg.annotation is None:
                    untyped.append(f"{node.name}({arg.arg})")
            if node.returns is None and node.name != "__init__":
                untyped.append(f"{node.name} -> ?")
    assert not untyped, untyped


def test_stub_annotations_name_real_types() -> None:
    """Every dotted name an annotation uses resolves (e.g. numpy.ndarray,
    ai3._core.Layer), so a type checker reads no unknown names."""
    import builtins
    import collections.abc
    import typing

    import numpy

    tree = parsed()
    defined = set(stub_members(tree))
    unresolved = set()
    for node in ast.walk(tree):
        annotations = []
        if isinstance(node, ast.arg) and node.annotation is not None:
            annotations.append(node.annotation)
        if isinstance(node, ast.FunctionDef) and node.returns is not None:
            annotations.append(node.returns)
        for annotation in annotations:
            for sub in ast.walk(annotation):
                if isinstance(sub, ast.Attribute) and isinstance(sub.value, (ast.Name, ast.Attribute)):
                    dotted = ast.unparse(sub)
                    root, _, rest = dotted.partition(".")
                    obj = {"numpy": numpy, "typing": typing, "collections": collections, "ai3": ai3}.get(root)
                    try:
                        for part in rest.split("."):
                            obj = getattr(obj, part)
                        assert obj is not None
                    except (AttributeError, AssertionError):
                        unresolved.add(dotted)
                elif isinstance(sub, ast.Name) and sub.id not in defined:
                    if sub.id not in dir(builtins) and sub.id not in ("numpy", "typing", "collections", "ai3"):
                        unresolved.add(sub.id)
    assert not unresolved, sorted(unresolved)


if __name__ == "__main__":
    pytest_main.run(__file__)
