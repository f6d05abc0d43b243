"""ONNX's own backend test suite (onnx.backend.test.BackendTest) run by ai3:
every node case (single-operator models built by onnx's Python, with
reference inputs and outputs) and the model cases shipped in the onnx
package (the "light" model zoo, simple, pytorch-converted and
pytorch-operator models), each prepared and run by ai3.onnx.backend (the
whole model through ai3.onnx.swap_backend) and compared by the suite itself.
Nothing is downloaded: the "light" models carry their expected outputs.

A case either passes or fails for the reason expected_failures.txt (next
to this file) gives it, checked word for word: a case that starts passing,
or fails for another reason (a new error, a numeric mismatch), fails this
test. After a change that makes cases pass, regenerate the list with

    PYTHONPATH=<ai3>:tests .venv/bin/python tests/onnx_conformance/onnx_conformance_test.py --update

and review its diff.
"""

from __future__ import annotations

import collections
import functools
import os
import re
import sys
import tempfile
import unittest
import warnings

import pytest
import pytest_main

# The "light" zoo cases write their inputs under ONNX_HOME; never the user's.
os.environ["ONNX_HOME"] = tempfile.mkdtemp(prefix="onnx_home_", dir=os.environ.get("TEST_TMPDIR"))

import onnx.backend.test  # noqa: E402

import ai3  # noqa: E402
import ai3.onnx.backend as backend  # noqa: E402
from ai3.onnx import graph  # noqa: E402

EXPECTED_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "expected_failures.txt")
_DEVICE_SUFFIX = re.compile(r"_(cpu|cuda)$")
_NO_OP = "ai3's core has no equivalent of this operator (after folding the constant subgraphs)"


def reason_of(e: BaseException) -> str:
    """The reason a case fails, in the words of expected_failures.txt: what
    ai3 refused (by op type), or how the output differs."""
    if isinstance(e, graph.UnsupportedNodes):
        missing = sorted({node.op_type for node, why in e.nodes if why == _NO_OP})
        refused = sorted({node.op_type for node, why in e.nodes if why != _NO_OP})
        reasons = []
        if missing:
            reasons.append(f"ai3's core has no op {', '.join(missing)}")
        if refused:
            reasons.append(f"ai3 refuses this form of {', '.join(refused)}")
        return "; ".join(reasons)
    text = str(e)
    if isinstance(e, ai3.UnsupportedOperation):
        m = re.search(r"the model has (\d+) \(non-initializer\) inputs", text)
        if m:
            return "no input" if m.group(1) == "0" else "several inputs"
        if re.search(r"the model has \d+ outputs", text):
            return "several outputs"
        if "opset" in text and "version converter" in text:
            return "the opset converter fails"
        if "is not computed from its input" in text:
            return "the output does not depend on the input's values"
        if "imports no opset of the default ONNX domain" in text:
            return "operators of another domain only"
    if isinstance(e, ai3.DTypeError):
        m = re.search(r"the model's input '.*' is a (\w+)", text)  # (no tensor: a sequence, an optional)
        if m:
            return f"an input of {m.group(1)}"
        m = re.search(r"the model's input '.*' is (\w+)", text)
        if m:
            return f"an input of type {m.group(1)}"
    if isinstance(e, ai3.Error):
        return f"ai3.{type(e).__name__}"
    if isinstance(e, AssertionError):
        if "incorrect shape" in text:
            return "wrong output shape"
        if "Not equal to tolerance" in text or "Mismatched elements" in text:
            return "numeric mismatch"
        return "wrong output"
    return f"not an ai3.Error: {type(e).__name__}"


def case_name(test_name: str) -> str:
    return _DEVICE_SUFFIX.sub("", test_name)


def load_expected(path: str = EXPECTED_FILE) -> dict[str, str]:
    """Case name -> reason, from the "## reason" sections of the file."""
    expected, reason = {}, None
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("# "):
                continue
            if line.startswith("## "):
                reason = line[3:]
            elif reason is None:
                raise ValueError(f"{path}: case {line!r} before any '## reason' line")
            else:
                expected[line] = reason
    return expected


def outcome(func) -> str | None:
    """None when the case passes, else the reason it fails; skips propagate."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            func(None)
    except unittest.SkipTest:
        raise
    except Exception as e:  # noqa: BLE001 -- every failure is classified
        return reason_of(e)
    return None


def _checked(name: str, func, expected: dict[str, str]):
    want = expected.get(case_name(name))

    @functools.wraps(func)
    def test(self) -> None:
        try:
            func(self)
        except unittest.SkipTest:
            raise
        except Exception as e:  # noqa: BLE001
            got = reason_of(e)
            if want is None:
                raise AssertionError(f"{case_name(name)} fails ({got}); it is not in expected_failures.txt") from e
            if got != want:
                raise AssertionError(
                    f"{case_name(name)} is expected to fail with '{want}' but fails with '{got}'"
                ) from e
        else:
            if want is not None:
                raise AssertionError(
                    f"{case_name(name)} passes now; remove it from expected_failures.txt (was '{want}')"
                )
            return
        # The case failed for exactly the reason expected_failures.txt gives it, in
        # a user's words (e.g. "ai3's core has no op Round", "an input of type
        # INT64"): ai3 refuses what it cannot run, and the report shows why.
        # Outside the except block: no chained traceback for pytest to render.
        pytest.xfail(want)

    return test


def _suite() -> dict[str, type]:
    return onnx.backend.test.BackendTest(backend, __name__).test_cases


def _install(expected: dict[str, str]) -> None:
    for class_name, case in _suite().items():
        for name in [n for n in vars(case) if n.startswith("test_")]:
            setattr(case, name, _checked(name, getattr(case, name), expected))
        globals()[class_name] = case


def test_expected_failures_are_cases():
    """Every listed case exists (a renamed or dropped case is not kept)."""
    names = {case_name(n) for case in _suite().values() for n in vars(case) if n.startswith("test_")}
    stale = sorted(set(load_expected()) - names)
    assert not stale, f"expected_failures.txt lists cases the suite does not have: {stale}"


# Cases where ai3 follows ONNX's operator spec (and ONNX Runtime) and the
# suite's expected output, from ONNX's reference implementation, does not:
# written under the case in expected_failures.txt.
DEVIATIONS = {
    "test_resize_downsample_scales_linear_align_corners": (
        "align_corners is x_resized * (length_original - 1) / (length_resized - 1) with length_resized "
        "the resized tensor's length (Resize's spec; 2 here: floor(4 * 0.6)); ONNX's reference takes "
        "4 * 0.6 = 2.4 unrounded and expects 3.142857 where ai3 and ONNX Runtime give 4 "
        "(tests/ops_spatial_test.py checks ai3 against ONNX Runtime in every coordinate mode)"
    ),
}

_FLOAT_TYPES = (onnx.TensorProto.FLOAT, onnx.TensorProto.DOUBLE)
_NODE_CLASS = "OnnxBackendNodeModelTest"


def node_case_kinds() -> dict[str, tuple[bool, bool]]:
    """Node case name -> (float, listed): float when every (non-initializer)
    input of its model is a float32 or float64 tensor, the dtypes ai3
    computes in; listed when, besides, every node of its graph is of an op
    ai3.onnx lists (graph.SUPPORTED_OPS, the ops the mapper reads)."""
    from onnx.backend.test.loader import load_model_tests

    kinds = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cases = load_model_tests(kind="node")
    for case in cases:
        g = case.model.graph
        inits = {t.name for t in g.initializer}
        inputs = [i for i in g.input if i.name not in inits]
        is_float = bool(inputs) and all(
            i.type.WhichOneof("value") == "tensor_type" and i.type.tensor_type.elem_type in _FLOAT_TYPES for i in inputs
        )
        listed = is_float and all(n.domain in ("", "ai.onnx") and n.op_type in graph.SUPPORTED_OPS for n in g.node)
        kinds[case.name] = (is_float, listed)
    return kinds


def counts(results: dict[str, tuple[str, str | None]]) -> list[str]:
    """The summary lines of expected_failures.txt's header from `results`
    (case name -> (test class name, reason or None when it passes))."""
    kinds = node_case_kinds()

    def tally(names: list[str]) -> tuple[int, int]:
        passed = sum(results[n][1] is None for n in names)
        return passed, len(names) - passed

    node = [n for n, (cls, _) in results.items() if cls == _NODE_CLASS]
    models = [n for n, (cls, _) in results.items() if cls != _NODE_CLASS]
    floats = [n for n in node if kinds.get(n, (False, False))[0]]
    listed = [n for n in node if kinds.get(n, (False, False))[1]]
    listed_pass = tally(listed)[0]
    share = 100.0 * listed_pass / len(listed) if listed else 0.0
    return [
        "node cases with float inputs: {} pass / {} expected failures".format(*tally(floats)),
        "model cases: {} pass / {} expected failures".format(*tally(models)),
        f"float node cases whose ops ai3 lists: {listed_pass} of {len(listed)} ({share:.0f}%)",
    ]


def update(path: str = EXPECTED_FILE) -> None:
    """Runs every CPU case and rewrites the file, grouped by reason, with
    the counts of counts() in its header."""
    by_reason: dict[str, list[str]] = collections.defaultdict(list)
    results: dict[str, tuple[str, str | None]] = {}
    passed = skipped = 0
    for class_name, case in _suite().items():
        for name in sorted(n for n in vars(case) if n.startswith("test_") and n.endswith("_cpu")):
            try:
                reason = outcome(getattr(case, name))
            except unittest.SkipTest:
                skipped += 1
                continue
            results[case_name(name)] = (class_name, reason)
            if reason is None:
                passed += 1
            else:
                by_reason[reason].append(case_name(name))
    failed = sum(len(v) for v in by_reason.values())
    summary = counts(results)
    with open(path, "w") as f:
        f.write("# ONNX backend test cases (onnx.backend.test) that ai3.onnx.backend fails, by reason;\n")
        f.write("# read by onnx_conformance_test.py, regenerated by its --update.\n")
        f.write(f"# {passed} pass, {failed} expected to fail, {skipped} skipped.\n")
        f.write("# A float node case: every input of its model is a float32 or float64 tensor;\n")
        f.write("# its ops ai3 lists: every node is of an op in ai3.onnx.graph.SUPPORTED_OPS.\n")
        f.writelines(f"# {line}\n" for line in summary)
        for reason in sorted(by_reason, key=lambda r: (-len(by_reason[r]), r)):
            f.write(f"\n## {reason}\n")
            for n in sorted(by_reason[reason]):
                f.write(n + "\n")
                if n in DEVIATIONS:
                    f.write(f"# ({DEVIATIONS[n]})\n")
    print(f"{passed} pass, {failed} expected failures in {len(by_reason)} reasons, {skipped} skipped -> {path}")
    for line in summary:
        print(line)


if __name__ == "__main__" and "--update" in sys.argv:
    update()
    sys.exit(0)

_install(load_expected())

if __name__ == "__main__":
    pytest_main.run(__file__)
