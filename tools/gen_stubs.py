"""Writes ai3/_core.pyi, the type stubs of the built extension (run by
//tools:core_stubs at build time, shipped in the wheel).

pybind11-stubgen imports the extension and writes what pybind11 knows of
each function and class: the signatures, with their argument names and
types, and the docstrings (less the `__all__` it adds; see below). It
imports `ai3._core`, so the ai3 package sources and the built `_core.so`
are laid out as a package in a scratch directory first (`import ai3` loads
no framework).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True, help="the .pyi to write")
    parser.add_argument("--extension", required=True, help="_core.so")
    parser.add_argument("sources", nargs="+", help="ai3 package .py files (paths end in ai3/...)")
    args = parser.parse_args()

    scratch = tempfile.mkdtemp()
    for source in args.sources:
        relative = source[source.rindex("ai3/") :]
        os.makedirs(os.path.join(scratch, os.path.dirname(relative)), exist_ok=True)
        shutil.copy(source, os.path.join(scratch, relative))
    shutil.copy(args.extension, os.path.join(scratch, "ai3", "_core.so"))
    sys.path.insert(0, scratch)

    import pybind11_stubgen

    stubs = os.path.join(scratch, "stubs")
    sys.argv = ["pybind11-stubgen", "ai3._core", "--output-dir", stubs]
    pybind11_stubgen.main()
    with open(os.path.join(stubs, "ai3", "_core.pyi")) as f:
        lines = f.read().splitlines(keepends=True)
    # pybind11-stubgen lists the module's public names as __all__, which the
    # extension does not define: a stub claiming it would let a type checker
    # pass `ai3._core.__all__`, which fails at run time (mypy.stubtest,
    # tests/stubs_test.py, reports it). Without it a stub exports exactly
    # its public names, the same set.
    with open(args.out, "w") as f:
        f.writelines(line for line in lines if not line.startswith("__all__"))
    shutil.rmtree(scratch)


if __name__ == "__main__":
    main()
