"""Which torchvision families, exported to ONNX, ai3.onnx.swap_backend runs,
and how closely against ONNX Runtime on the same file: the zoo of
tests/onnx_backend_test.py and the ONNX column of the README's coverage
table (tools/coverage_table.py reads `FRONTEND`, `FAMILIES`, `coverage()`).

The models are ai3.torch.coverage's (one per family, weights=None, same
seed and input size), exported with the TorchScript exporter
(torch.onnx.export(..., dynamo=False)) at a static batch of 2. Two
departures, both about the exporter, not ai3: alexnet and vgg run at
224x224, since the exporter writes AdaptiveAvgPool2d only where the output
size divides the input's (6x6 and 7x7 maps); and ViT's classifier, which
torchvision initialises to zeros, gets random weights, or every output
would be 0 and the comparison empty. Tolerances are ai3.torch.coverage's.
"""

from __future__ import annotations

import os
import tempfile
import time
import warnings
from typing import Any

import numpy as np

FRONTEND = "ONNX"
DEFAULT_OPSET = 17
BATCH = 2

# Input sizes where the exporter needs another than the torch zoo's.
EXPORT_SIZES = {"alexnet": 224, "vgg": 224}


def _torch_zoo():
    from ai3.torch import coverage

    return coverage


def __getattr__(name: str) -> Any:
    # FAMILIES is the torch zoo's, read lazily (tools/coverage_table.py
    # reads it only to filter families).
    if name == "FAMILIES":
        return _torch_zoo().FAMILIES
    raise AttributeError(name)


def size_of(family: str) -> int:
    return EXPORT_SIZES.get(family, _torch_zoo().FAMILIES[family].size)


def tolerance(family: str) -> float:
    return _torch_zoo().FAMILIES[family].tol


def build(family: str, seed: int = 0) -> Any:
    """The torch zoo's model of the family, ready to export."""
    import torch

    model = _torch_zoo().build(family, seed)
    heads = getattr(model, "heads", None)
    if heads is not None and hasattr(heads, "head"):  # ViT: zero-initialised classifier
        torch.manual_seed(seed)
        torch.nn.init.normal_(heads.head.weight, std=0.02)
    return model


def export(family: str, path: str, opset: int = DEFAULT_OPSET, batch: int = BATCH, dynamic_batch: bool = False) -> str:
    """Exports the family's model to `path` (TorchScript exporter)."""
    import torch

    size = size_of(family)
    x = torch.randn(batch, 3, size, size)
    kwargs = {"dynamic_axes": {"input": {0: "batch"}, "output": {0: "batch"}}} if dynamic_batch else {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            build(family),
            (x,),
            path,
            opset_version=opset,
            input_names=["input"],
            output_names=["output"],
            dynamo=False,
            **kwargs,
        )
    return path


def input_for(family: str, batch: int = BATCH, seed: int = 1) -> np.ndarray:
    size = size_of(family)
    return np.random.default_rng(seed).standard_normal((batch, 3, size, size)).astype(np.float32)


def run_onnxruntime(path: str, x: np.ndarray) -> np.ndarray:
    import onnxruntime as ort

    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    return session.run(None, {session.get_inputs()[0].name: x})[0]


def check_file(family: str, path: str, algos: Any | None = None) -> tuple[bool, str]:
    """(ok, reason): swap_backend of an exported file against ONNX Runtime."""
    import ai3
    from ai3.onnx import graph

    x = input_for(family)
    want = run_onnxruntime(path, x)
    try:
        got = np.asarray(graph.swap_backend(path, algos)(x))
    except ai3.Error as e:
        return False, f"{type(e).__name__}: {e}"
    if got.shape != want.shape:
        return False, f"output shape {got.shape}, ONNX Runtime {want.shape}"
    err = float(np.abs(got - want).max()) / max(float(np.abs(want).max()), 1e-30)
    tol = tolerance(family)
    if err > tol:
        return False, f"max error {err:.2g} x output scale (tolerance {tol:g})"
    return True, f"max error {err:.1g} x output scale"


def coverage(families: list[str] | None = None, log: Any = None, opset: int = DEFAULT_OPSET) -> list[Any]:
    Row = _torch_zoo().Row
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for family in families or list(_torch_zoo().FAMILIES):
            start = time.perf_counter()
            model = _torch_zoo().FAMILIES[family].constructor
            path = os.path.join(tmp, f"{family}.onnx")
            try:
                export(family, path, opset)
            except Exception as e:  # the exporter's own failure, not ai3's
                ok, reason = (
                    False,
                    f"torch.onnx.export (opset {opset}) failed: {type(e).__name__}: {str(e).splitlines()[0]}",
                )
            else:
                try:
                    ok, reason = check_file(family, path)
                except Exception as e:  # one broken family must not stop the table
                    ok, reason = False, f"{type(e).__name__}: {e}"
                os.remove(path)
            rows.append(Row(family, model, ok, reason))
            if log is not None:
                log(f"{FRONTEND} {family}: {'ok' if ok else 'FAILS'} ({time.perf_counter() - start:.0f} s) {reason}")
    return rows


__all__ = ["DEFAULT_OPSET", "FRONTEND", "build", "check_file", "coverage", "export", "input_for", "run_onnxruntime"]
