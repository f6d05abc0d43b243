"""Moving framework tensors into the core and back without copies.

The core reads NumPy arrays through the buffer protocol. A CPU torch tensor
or a TensorFlow eager tensor becomes an array through DLPack (a view of the
same memory), and the result goes back the same way (torch.from_numpy, TF's
DLPack import), so the caller gets its own framework's tensor. The one
deliberate copy: a non-contiguous input is made contiguous first, since the
core reads dense buffers only; this keeps results right for transposed,
sliced or channels_last inputs.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ai3 import errors

NUMPY, TORCH, TENSORFLOW = "numpy", "torch", "tensorflow"


def framework(x: Any) -> str:
    # Checked by module name so that importing ai3 imports neither framework.
    module = type(x).__module__
    if module.startswith("torch") and hasattr(x, "__dlpack__"):
        return TORCH
    if module.startswith("tensorflow") and hasattr(x, "__dlpack__"):
        return TENSORFLOW
    return NUMPY


def _from_dlpack(x: Any, what: str) -> np.ndarray:
    try:
        return np.from_dlpack(x)
    except (BufferError, RuntimeError, TypeError) as e:
        # NumPy has no such dtype (bfloat16, ...); the core couldn't read it either.
        raise errors.DTypeError(f"{what} has dtype {x.dtype}; ai3 takes float32, float64, int64 and bool") from e


def to_array(x: Any, what: str) -> tuple[np.ndarray, str]:
    """Returns (array view of x, the framework x came from)."""
    kind = framework(x)
    if kind == TORCH:
        if x.device.type != "cpu":
            raise errors.UnsupportedOperation(f"{what} is on {x.device}; this ai3 build runs on the CPU only")
        if x.requires_grad:
            x = x.detach()
        if not x.is_contiguous():
            x = x.contiguous()  # the deliberate copy (see module docstring)
        return _from_dlpack(x, what), kind
    if kind == TENSORFLOW:
        if "CPU" not in x.device.upper() and x.device:
            raise errors.UnsupportedOperation(f"{what} is on {x.device}; this ai3 build runs on the CPU only")
        return _from_dlpack(x, what), kind
    if isinstance(x, np.generic):  # a NumPy scalar (np.float32(2.0)) is a 0-d array
        x = np.asarray(x)
    if isinstance(x, np.ndarray):
        if not x.flags.c_contiguous:
            x = np.ascontiguousarray(x)  # the deliberate copy
        return x, NUMPY
    raise errors.InvalidArgument(
        f"{what} must be a NumPy array, a torch tensor or a TensorFlow tensor, got {type(x).__name__}"
    )


def from_array(y: np.ndarray, kind: str) -> Any:
    if kind == TORCH:
        import torch

        return torch.from_numpy(y)
    if kind == TENSORFLOW:
        import tensorflow as tf

        return tf.experimental.dlpack.from_dlpack(y.__dlpack__())
    return y
