"""Typed user code calling ai3's core through the package: what an editor
or a type checker sees of `ai3._core` (tests/stubs_test.py runs mypy
--strict over this file against the generated stubs, then runs it). Each
assert_type fails the check if a stub's type is wrong or is Any."""

from __future__ import annotations

from typing import Any, assert_type

import numpy as np

import ai3
from ai3 import _core

algorithms = _core.algorithms()
assert_type(algorithms, list[tuple[str, str, str]])
assert ("conv2d", "gemm", "cpu") in algorithms

schemas = _core.op_schemas()
assert_type(schemas, list[dict[str, Any]])
assert any(s["op"] == "conv2d" for s in schemas)

weight = np.ones((3, 2, 3, 3), np.float32)
conv = _core.make_layer("conv2d", {"padding": 1}, {"weight": weight}, algorithm="gemm", name="conv")
assert_type(conv, _core.Layer)
assert_type(conv.op, str)
assert_type(conv.algorithm, str)
assert_type(conv.weights, list[np.ndarray])
shape = conv.output_shape([1, 2, 4, 4])
assert_type(shape, list[int])
assert shape == [1, 3, 4, 4]
assert_type(conv.workspace_bytes([1, 2, 4, 4]), int)
y = conv(np.ones((1, 2, 4, 4), np.float32))
assert_type(y, np.ndarray)
assert y[0, 0, 1, 1] == 18.0

assert_type(_core.output_shape("conv2d", {"padding": 1}, {"weight": [3, 2, 3, 3]}, [[1, 2, 4, 4]]), list[int])
assert_type(_core.kernel_isa(), str)
assert_type(_core.MODEL_INPUT, int)

model = _core.Model()
assert_type(model, _core.Model)
assert_type(len(model), int)

# The package's own names over the core.
assert_type(ai3.Error, type[ai3.errors.Error])
print("typed user code ran")
