"""A user algorithm placed where custom_algos/ says is compiled in and
reachable as "custom" from Python, and its default switch makes "default"
choose it.

Bazel builds a second ai3._core (this directory's BUILD) linking
tests/custom_algo/conv2d.cc instead of the shipped custom_algos/. The test
assembles an `ai3` package from the shipped Python sources and that
extension in a temporary directory and imports it from there.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile

import pytest
import pytest_main
import torch
import torch.nn.functional as F


def _runfile(path: str) -> str:
    root = os.environ.get("TEST_SRCDIR", "")
    return os.path.join(root, os.environ.get("TEST_WORKSPACE", "ai3"), path)


@pytest.fixture(scope="module")
def ai3_with_user_algorithm():
    package = os.path.join(tempfile.mkdtemp(), "ai3")
    sources = _runfile("frontends/ai3")
    shutil.copytree(sources, package, ignore=shutil.ignore_patterns("_core.so", "BUILD"))
    shutil.copy(_runfile("tests/custom_algo/_core.so"), os.path.join(package, "_core.so"))
    sys.path.insert(0, os.path.dirname(package))
    for name in [m for m in sys.modules if m == "ai3" or m.startswith("ai3.")]:
        del sys.modules[name]
    import ai3

    assert ai3.__file__.startswith(package), ai3.__file__
    return ai3


def test_custom_is_listed(ai3_with_user_algorithm) -> None:
    assert "custom" in ai3_with_user_algorithm.algorithms()["conv2d"]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
@pytest.mark.parametrize("stride,padding,groups", [(1, 1, 1), (2, 0, 1), (1, 2, 2)])
def test_custom_runs_the_user_code(ai3_with_user_algorithm, dtype, stride, padding, groups) -> None:
    ai3 = ai3_with_user_algorithm
    x = torch.randn(2, 4, 9, 9, dtype=dtype)
    w = torch.randn(6, 4 // groups, 3, 3, dtype=dtype)
    b = torch.randn(6, dtype=dtype)
    layer = ai3.layers.Conv2d(w, b, stride, padding, groups=groups, algorithm="custom")
    assert layer.algorithm == "custom"
    tol = 1e-4 if dtype == torch.float32 else 1e-10
    torch.testing.assert_close(layer(x), F.conv2d(x, w, b, stride, padding, groups=groups), atol=tol, rtol=tol)


def test_default_switch_makes_custom_the_default(ai3_with_user_algorithm) -> None:
    layer = ai3_with_user_algorithm.layers.Conv2d(torch.randn(4, 3, 3, 3), padding=1)
    assert layer.algorithm == "custom"


if __name__ == "__main__":
    pytest_main.run(__file__)
