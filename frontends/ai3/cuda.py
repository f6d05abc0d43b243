"""ai3 on CUDA: running core layers and models on tensors PyTorch keeps on a GPU.

A build with ``--config=cuda`` registers CUDA algorithms for the core's ops
(``ai3.algorithms("cuda")``). A torch tensor on a GPU then stays there: it
crosses into the core as its data pointer (what DLPack would carry), the
output is allocated by torch on the same device, and the core queues its
kernels on the caller's current CUDA stream
(``torch.cuda.current_stream().cuda_stream``) without waiting, exactly as a
PyTorch op would. Nothing is copied to the host.

Layers are built for one device. ``layer_device(device)`` makes layers built
inside it (``ai3.layers.*``, the torch frontend's swaps) run on that device;
CUDA layers copy their weights to the GPU once, when built.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from ai3 import _core, errors


def built() -> bool:
    """Whether this build of ai3 has CUDA algorithms (``--config=cuda``)."""
    return bool(_core.cuda_algorithms_built())


def unavailable_reason() -> str | None:
    """None when ai3 can run on a GPU here, else why not."""
    if not built():
        return "this ai3 build has no CUDA algorithms (build it with ./bazelw build --config=cuda)"
    try:
        import torch
    except ImportError:
        return "PyTorch is not installed (ai3 runs CUDA tensors that PyTorch allocates)"
    if not torch.cuda.is_available():
        return "no CUDA GPU is visible to PyTorch (torch.cuda.is_available() is False)"
    return None


def is_available() -> bool:
    """Whether ai3 can run on a GPU here: a CUDA build and a visible GPU."""
    return unavailable_reason() is None


def is_cuda_tensor(x: Any) -> bool:
    device = getattr(x, "device", None)
    return type(x).__module__.startswith("torch") and getattr(device, "type", None) == "cuda"


def _device_type(device: Any) -> tuple[str, int | None]:
    if device is None:
        return "cpu", None
    if isinstance(device, str):
        import torch

        device = torch.device(device)
    return device.type, device.index


@contextlib.contextmanager
def layer_device(device: Any) -> Iterator[None]:
    """Layers built inside run on `device` (a torch.device, "cpu", "cuda" or
    "cuda:N"). For a GPU, the layer is prepared on that GPU (its weights,
    cuDNN/cuBLAS handles and workspaces live there)."""
    kind, index = _device_type(device)
    if kind == "cpu":
        previous = _core.set_layer_device("cpu")
        try:
            yield
        finally:
            _core.set_layer_device(previous)
        return
    if kind != "cuda":
        raise errors.UnsupportedOperation(f"ai3 runs on cpu and cuda, not on {device}")
    reason = unavailable_reason()
    if reason:
        raise errors.UnsupportedOperation(f"cannot build a layer on {device}: {reason}")
    import torch

    with torch.cuda.device(index if index is not None else torch.cuda.current_device()):
        previous = _core.set_layer_device("cuda")
        try:
            yield
        finally:
            _core.set_layer_device(previous)


def _dtype_name(x: Any, what: str) -> str:
    import torch

    names = {torch.float32: "float32", torch.float64: "float64"}
    if x.dtype not in names:
        raise errors.DTypeError(f"{what} has dtype {x.dtype}; ai3 takes float32 or float64")
    return names[x.dtype]


def _prepared(x: Any) -> Any:
    if x.requires_grad:
        x = x.detach()
    if not x.is_contiguous():
        x = x.contiguous()  # the deliberate copy (on the GPU), as on the CPU
    return x


def call_layer(core_layer: Any, x: Any, what: str, *more: Any) -> Any:
    """Runs a core layer on CUDA torch tensors (x, or x and `more` for a
    multi-input layer, all on x's GPU); returns a new CUDA tensor on the same
    device, computed on the caller's current stream."""
    import torch

    x = _prepared(x)
    dtype = _dtype_name(x, what)
    index = x.device.index if x.device.index is not None else torch.cuda.current_device()
    stream = torch.cuda.current_stream(x.device).cuda_stream
    if not more:
        shape = _core.layer_output_shape_device(core_layer, list(x.shape), dtype, "cuda", index)
        y = torch.empty(tuple(shape), dtype=x.dtype, device=x.device)
        _core.layer_forward_device(
            core_layer, x.data_ptr(), list(x.shape), y.data_ptr(), list(y.shape), dtype, "cuda", index, stream
        )
        return y
    xs = [x]
    for k, m in enumerate(more):
        if not is_cuda_tensor(m) or m.device != x.device:
            raise errors.InvalidArgument(
                f"{what}: input {k + 1} is on {getattr(m, 'device', 'cpu')}, input 0 on {x.device}"
            )
        if m.dtype != x.dtype:
            raise errors.DTypeError(f"{what}: input {k + 1} is {m.dtype}, input 0 is {x.dtype}")
        xs.append(_prepared(m))
    shapes = [list(t.shape) for t in xs]
    shape = _core.layer_output_shape_device_n(core_layer, shapes, dtype, "cuda", index)
    y = torch.empty(tuple(shape), dtype=x.dtype, device=x.device)
    _core.layer_forward_device_n(
        core_layer, [t.data_ptr() for t in xs], shapes, y.data_ptr(), list(y.shape), dtype, "cuda", index, stream
    )
    return y


class StreamOrder:
    """Orders the calls of one core Model across CUDA streams.

    A Model reuses its activation buffers on every call, and its kernels are
    queued without waiting. A call on another stream than the previous one
    therefore first makes its stream wait for everything queued on that one,
    so two calls never write the same buffers at once."""

    def __init__(self) -> None:
        self._last: Any = None

    def enter(self, stream: Any) -> None:
        if self._last is not None and self._last != stream:
            stream.wait_stream(self._last)
        self._last = stream


def call_model(core_model: Any, x: Any, order: StreamOrder | None = None) -> Any:
    """Runs a whole core Model (built on CUDA) on a CUDA torch tensor."""
    import torch

    x = _prepared(x)
    dtype = _dtype_name(x, "model input")
    index = x.device.index if x.device.index is not None else torch.cuda.current_device()
    current = torch.cuda.current_stream(x.device)
    if order is not None:
        order.enter(current)
    stream = current.cuda_stream
    out: list[Any] = []

    def allocate(shape: list[int]) -> int:
        out.append(torch.empty(tuple(shape), dtype=x.dtype, device=x.device))
        return out[0].data_ptr()

    _core.model_forward_device(core_model, x.data_ptr(), list(x.shape), dtype, "cuda", index, stream, allocate)
    return out[0]


__all__ = [
    "StreamOrder",
    "built",
    "call_layer",
    "call_model",
    "is_available",
    "is_cuda_tensor",
    "layer_device",
    "unavailable_reason",
]
