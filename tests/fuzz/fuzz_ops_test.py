"""Property-based fuzzing of every core op x every CPU algorithm (issue 13).

For each (op, algorithm) that ai3.algorithms() lists, plus "default",
hypothesis draws attributes (zero, negative, huge, kernels larger than the
input, groups that do not divide), shapes (1, odd, zero-size), dtypes
(float32, float64 and wrong ones: int64, float16, bool), layouts and memory
forms of the inputs (views, transposes, negative strides, slices of a larger
buffer, misaligned buffers, torch tensors) and holds ai3 to one property:

    the call returns what PyTorch / NumPy compute (within a tolerance per
    dtype), or raises an ai3.Error subclass whose message names the layer.

Anything else fails the case: a crash, a bare Python exception, an output of
the wrong shape, or numbers PyTorch does not give. A result ai3 returns
where PyTorch refuses the input fails too, unless the op's reference says
why the two legitimately differ (ops.NoReference).

Size: AI3_FUZZ_EXAMPLES examples per (op, algorithm) (default below, sized
for CI on 2 cores and for the ASan pass); AI3_FUZZ_SEED=<int> or "random"
changes the examples (//tests/fuzz:fuzz_long runs many with random seeds).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from typing import Any

import ops
import pytest
import pytest_main
import torch
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

import ai3
from ai3 import errors

torch.set_num_threads(1)

# Examples per (op, algorithm). 40 keeps the whole file within a few minutes
# on 2 cores; the ASan pass scales it down through the same variable.
EXAMPLES = int(os.environ.get("AI3_FUZZ_EXAMPLES", "40"))
_SEED = os.environ.get("AI3_FUZZ_SEED", "")


def _cases() -> list[tuple[str, str]]:
    table = ai3.algorithms("cpu")
    missing = sorted(set(table) - set(ops.OPS))
    # Every op the build offers must be fuzzed: a new op without a case here
    # fails this collection instead of going unfuzzed.
    assert not missing, f"ops without a fuzz case in tests/fuzz/ops.py: {missing}"
    return [(op, algo) for op in sorted(table) for algo in table[op] + ["default"]]


CASES = _cases()


def _settings(fn):
    derandomize = _SEED == ""
    fn = settings(
        max_examples=EXAMPLES,
        derandomize=derandomize,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
        print_blob=True,
    )(fn)
    if not derandomize and _SEED != "random":
        fn = seed(int(_SEED))(fn)
    return fn


@pytest.fixture(scope="module", autouse=True)
def _print_outcomes(pytestconfig: Any) -> Iterator[None]:
    yield
    # Past pytest's capture, into the test log: how many examples each
    # (op, algorithm) ran and how they ended.
    capture = pytestconfig.pluginmanager.getplugin("capturemanager")
    with capture.global_and_fixture_disabled():
        print(
            f"\nfuzz examples ({EXAMPLES} per (op, algorithm) requested):\n{ops.outcome_table()}",
            file=sys.stderr,
            flush=True,
        )


@pytest.mark.parametrize("op,algorithm", CASES, ids=[f"{o}-{a}" for o, a in CASES])
@_settings
@given(data=st.data())
def test_op(op: str, algorithm: str, data: Any) -> None:
    ops.check(ops.OPS[op](data.draw, algorithm), data.draw, algorithm)


def test_every_op_has_a_case():
    # The collection above asserts it; this names it as a test of its own.
    assert {op for op, _ in CASES} <= set(ops.OPS)
    assert issubclass(errors.ShapeError, ai3.Error)


if __name__ == "__main__":
    pytest_main.run(__file__)
