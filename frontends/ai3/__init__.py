"""ai3: choose, layer by layer, which algorithm runs each operation of a
deep neural network.

    model = ai3.swap_backend(torch_model, {"conv2d": "direct"})  # -> ai3.Model
    ai3.swap_conv2d(torch_model, ["direct", "smm"])              # in place

The PyTorch frontend's functions are available at the top level as in the
paper ai3 comes from; `ai3.torch`, `ai3.keras` and `ai3.onnx` are the
frontends. Each is imported on first use, so `import ai3` alone loads no
framework. `ai3.layers` holds single core layers and `ai3.algorithms()` what
this build offers.
"""

from __future__ import annotations

import importlib
from typing import Any

from ai3 import _core, errors, layers

# `X as X` marks a name as the package's own for type checkers: mypy
# --strict does not read the __all__ below (built from errors.__all__) as
# exporting these, and would refuse a user's `except ai3.Error`.
from ai3.errors import AlgorithmNotApplicable as AlgorithmNotApplicable
from ai3.errors import DTypeError as DTypeError
from ai3.errors import Error as Error
from ai3.errors import InternalError as InternalError
from ai3.errors import InvalidArgument as InvalidArgument
from ai3.errors import InvalidSelector as InvalidSelector
from ai3.errors import ShapeError as ShapeError
from ai3.errors import UnknownAlgorithm as UnknownAlgorithm
from ai3.errors import UnsupportedOperation as UnsupportedOperation
from ai3.frontend import SWAP_SHORTHANDS
from ai3.model import Model as Model
from ai3.plans import Plan as Plan
from ai3.plans import plan as plan

# PyTorch frontend functions re-exported lazily at the top level.
_TORCH_EXPORTS = (
    "swap_backend",
    "swap_operation",
    *(f"swap_{op}" for op in SWAP_SHORTHANDS),
    "swap_attention",
)


# The frontends, each imported on first use (ai3.torch, ai3.keras,
# ai3.onnx) so that `import ai3` loads no framework, and a process loads
# only the frameworks its calls need.
_FRONTENDS = ("torch", "keras", "onnx")


def __getattr__(name: str) -> Any:
    if name in _FRONTENDS or name in _TORCH_EXPORTS:
        frontend = importlib.import_module(f"ai3.{'torch' if name in _TORCH_EXPORTS else name}")
        return getattr(frontend, name) if name in _TORCH_EXPORTS else frontend
    raise AttributeError(f"module 'ai3' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_FRONTENDS) | set(_TORCH_EXPORTS))


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
    *errors.__all__,
    "Model",
    "Plan",
    "algorithms",
    "layers",
    "plan",
    *_TORCH_EXPORTS,
]
