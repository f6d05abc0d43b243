"""The frontend contract, the registry of frontends, and the one pipeline
every frontend's models go through.

A frontend is a package (ai3.torch, ai3.keras, ai3.onnx) that maps its
framework's models onto LayerSpecs (ai3.spec) and runs them. It provides:

  LAYOUT                      the memory order of its image tensors
                              ("NCHW" for PyTorch and ONNX, "NHWC" for Keras)
  swap_backend(model, algos, sample_input_shape, *, dtype)
                              the whole model as an ai3.Model: its trace to
                              LayerSpecs, then `build_model` below
  swap_operation(op, model, algos, sample_input_shape)
                              the in-place swap: the framework's own model
                              with `op` layers run by its native wrapper of
                              core layers (a torch.library op, a TF op, an
                              "ai3"-domain ONNX node)
  swap_<op>(model, algos, sample_input_shape)
                              swap_operation(op, ...) for each op of
                              SWAP_SHORTHANDS below

The shared modules (ai3.plans, ai3.explore, ai3.tuning) reach frontends only
through this registry, never by name. A frontend is found for a model
without importing any framework: `claims` looks at the model's type and at
the frameworks already in sys.modules (a model of a framework means that
framework is imported).
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from ai3 import errors, spec
from ai3.spec import LayerSpec

# The ops each frontend has a swap_<op> shorthand of swap_operation for, as
# the paper ai3 comes from names them.
SWAP_SHORTHANDS = ("conv2d", "linear", "relu", "maxpool2d", "avgpool2d", "adaptiveavgpool2d", "flatten")


@dataclass(frozen=True)
class Frontend:
    name: str  # "torch", "keras", "onnx": also its selector names' `via`
    module: str  # the package implementing the contract above
    layout: str
    claims: Callable[[Any], bool]  # is `model` one of this frontend's?
    describes: str  # what it takes, for messages

    def load(self) -> ModuleType:
        return importlib.import_module(self.module)

    def swap_backend(
        self, model: Any, algos: Any = None, sample_input_shape: Sequence[int] | None = None, **kwargs: Any
    ):
        return self.load().swap_backend(model, algos, sample_input_shape, **kwargs)

    def swap_operation(self, op: str, model: Any, algos: Any = None, sample_input_shape: Sequence[int] | None = None):
        return self.load().swap_operation(op, model, algos, sample_input_shape)


_REGISTRY: dict[str, Frontend] = {}


def register(frontend: Frontend) -> Frontend:
    """Adds a frontend (a new one, or replacing one of the same name)."""
    _REGISTRY[frontend.name] = frontend
    return frontend


def get(name: str) -> Frontend:
    if name not in _REGISTRY:
        raise errors.InvalidArgument(f"no ai3 frontend {name!r}; there are {sorted(_REGISTRY)}")
    return _REGISTRY[name]


def all_frontends() -> list[Frontend]:
    return list(_REGISTRY.values())


def of(model: Any, caller: str = "ai3") -> Frontend:
    """The frontend whose models `model` is one of; `caller` names who
    asked, in the error for a model no frontend takes."""
    for frontend in _REGISTRY.values():
        if frontend.claims(model):
            return frontend
    takes = ", ".join(f.describes for f in _REGISTRY.values())
    raise errors.InvalidArgument(f"{caller} takes {takes}; got {type(model).__name__}")


def _instance_of(module: str, attribute: str) -> Callable[[Any], bool]:
    """A claim by isinstance, on a framework only if it is already imported."""

    def claims(model: Any) -> bool:
        framework = sys.modules.get(module)
        cls = framework
        for part in attribute.split("."):
            cls = getattr(cls, part, None) if cls is not None else None
        return cls is not None and isinstance(model, cls)

    return claims


def _onnx_claims(model: Any) -> bool:
    return isinstance(model, (str, bytes, bytearray, os.PathLike)) or type(model).__module__.startswith("onnx")


register(Frontend("torch", "ai3.torch", "NCHW", _instance_of("torch", "nn.Module"), "a torch.nn.Module"))
register(Frontend("keras", "ai3.keras", "NHWC", _instance_of("keras", "Model"), "a keras.Model"))
register(Frontend("onnx", "ai3.onnx", "NCHW", _onnx_claims, "an ONNX model (ModelProto, path or bytes)"))


# ---- The pipeline -----------------------------------------------------------


def prepare_specs(specs: list[LayerSpec], output: int, layout: str) -> tuple[list[LayerSpec], int]:
    """The spec passes every frontend's trace goes through, in one order:
    identities (dropout, contiguous, ...) dropped, zero pads feeding only a
    convolution folded into its padding, batch norms folded into the
    convolution or linear before them, and so are constant multiplications
    of their output features (layer scale)."""
    specs, output = spec.remove_identities(specs, output)
    specs, output = spec.fold_zero_padding(specs, output)
    specs, output = spec.fold_batchnorm(specs, output, layout=layout)
    return spec.fold_constant_scale(specs, output, layout=layout)


def build_model(
    specs: list[LayerSpec],
    output: int,
    algos: Any | None,
    *,
    dtype: Any,
    layout: str,
    sample_input_shape: Sequence[int] | None = None,
    device: Any = None,
    **kwargs: Any,
):
    """A frontend's traced specs -> the pipeline -> an ai3.Model."""
    from ai3 import model

    specs, output = prepare_specs(specs, output, layout)
    shape = None if sample_input_shape is None else tuple(int(d) for d in sample_input_shape)
    if device is not None:
        kwargs["device"] = device
    return model.build(specs, output, algos, dtype=dtype, layout=layout, sample_input_shape=shape, **kwargs)


__all__ = ["Frontend", "all_frontends", "build_model", "get", "of", "prepare_specs", "register"]
