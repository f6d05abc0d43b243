"""ai3: choose, layer by layer, which algorithm runs each operation of a
deep neural network.

This package is the Python side of ai3: the exceptions (`ai3.Error` and its
subclasses), `ai3.algorithms()`, and single core layers in `ai3.layers`. The
framework frontends build on these.
"""

from __future__ import annotations

from ai3 import _core, layers
from ai3.errors import (
    AlgorithmNotApplicable,
    DTypeError,
    Error,
    InternalError,
    InvalidArgument,
    ShapeError,
    UnknownAlgorithm,
    UnsupportedOperation,
)

__version__ = "0.1.0"


def algorithms(device: str = "cpu") -> dict[str, list[str]]:
    """Op -> the algorithms this build offers on `device` ("cpu" or "cuda").

    Every op also accepts "default" (the core's pick for the layer's
    parameters), which is not listed.
    """
    if device not in ("cpu", "cuda"):
        raise InvalidArgument(f"device must be 'cpu' or 'cuda', got {device!r}")
    table: dict[str, list[str]] = {}
    for op, name, dev in _core.algorithms():
        if dev == device:
            table.setdefault(op, []).append(name)
    return table


__all__ = [
    "AlgorithmNotApplicable",
    "DTypeError",
    "Error",
    "InternalError",
    "InvalidArgument",
    "ShapeError",
    "UnknownAlgorithm",
    "UnsupportedOperation",
    "algorithms",
    "layers",
]
