"""Moving framework tensors into the core and back without copies.

The core reads NumPy arrays through the buffer protocol. A CPU torch tensor
becomes an array through DLPack (a view of the same memory) and the result
goes back with torch.from_numpy (again a view). The one deliberate copy: a
non-contiguous input is made contiguous first, since the core reads dense
buffers only; this keeps results right for transposed or sliced inputs.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ai3 import errors


def _is_torch_tensor(x: Any) -> bool:
    # Checked by module name so that importing ai3 does not import torch.
    return type(x).__module__.startswith("torch") and hasattr(x, "__dlpack__")


def to_array(x: Any, what: str) -> tuple[np.ndarray, bool]:
    """Returns (array view of x, whether x was a torch tensor)."""
    if _is_torch_tensor(x):
        if x.device.type != "cpu":
            raise errors.UnsupportedOperation(
                f"{what} is on {x.device}; this ai3 build runs on the CPU only"
            )
        if x.requires_grad:
            x = x.detach()
        if not x.is_contiguous():
            x = x.contiguous()  # the deliberate copy (see module docstring)
        try:
            return np.from_dlpack(x), True
        except (BufferError, RuntimeError, TypeError) as e:
            # NumPy has no such dtype (bfloat16, ...); the core couldn't read it either.
            raise errors.DTypeError(f"{what} has dtype {x.dtype}; ai3 takes float32 or float64") from e
    if isinstance(x, np.ndarray):
        if not x.flags.c_contiguous:
            x = np.ascontiguousarray(x)  # the deliberate copy
        return x, False
    raise errors.InvalidArgument(
        f"{what} must be a NumPy array or a torch tensor, got {type(x).__name__}"
    )


def from_array(y: np.ndarray, as_torch: bool) -> Any:
    if as_torch:
        import torch

        return torch.from_numpy(y)
    return y
