"""Timing on the GPU with CUDA events, for ai3's "auto" selection.

``"auto"`` (ai3.tuning / ai3.selection) measures each applicable algorithm
on the real input shape and keeps the fastest. On the CPU a wall clock does;
CUDA kernels are asynchronous, so on a GPU the time between two events
recorded on the caller's stream is what counts (a wall clock would measure
the launch, or, with a synchronize per call, the launch latency too).

The hook for the tuner::

    from ai3 import cuda_timing
    seconds = cuda_timing.time_call(lambda: layer(x), device=x.device,
                                    warmup=2, repeats=5)

returns the median seconds per call of `fn` on `device`'s current stream.
``timer_for(x)`` picks this or a CPU wall-clock timer by the input's device,
so the tuner can call one function for both; ``measure(layer, x, best)`` has
exactly ai3.tuning.measure's contract (median, samples, stopped early) on a
CUDA input, for the tuner to call when ``Tunable.device == "cuda"``.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any


def time_call(fn: Callable[[], Any], *, device: Any = None, warmup: int = 2, repeats: int = 5) -> float:
    """Median seconds per call of `fn`, timed with CUDA events on the current
    stream of `device` (a torch.device or None for the current GPU). `fn`
    must queue its work on that stream (ai3's layers and PyTorch's ops do)."""
    import torch

    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")
    stream = torch.cuda.current_stream(device)
    for _ in range(warmup):
        fn()
    stream.synchronize()
    times = []
    for _ in range(repeats):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record(stream)
        fn()
        end.record(stream)
        end.synchronize()
        times.append(start.elapsed_time(end) / 1000.0)  # elapsed_time is ms
    return statistics.median(times)


def time_call_cpu(fn: Callable[[], Any], *, warmup: int = 1, repeats: int = 3) -> float:
    """Median wall-clock seconds per call of `fn` (CPU inputs)."""
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def measure(
    layer: Callable[[Any], Any],
    x: Any,
    best: float | None = None,
    *,
    warmup: int = 2,
    slow_factor: float = 3.0,
    min_reps: int = 3,
    max_reps: int = 25,
    target_seconds: float = 0.2,
) -> tuple[float, int, bool]:
    """ai3.tuning.measure's contract on a GPU: times `layer(x)` for a CUDA
    torch tensor `x` with CUDA events and returns (median seconds, samples,
    stopped early). `best` is the fastest time so far: an algorithm over
    `slow_factor` times slower on two samples is cut short, as on the CPU.
    "auto" on CUDA is then: build each candidate inside
    ``ai3.cuda.layer_device(x.device)``, give it a CUDA input
    (``random_input(shape, dtype, device)``) and call this instead of the
    wall-clock measure."""
    import torch

    stream = torch.cuda.current_stream(x.device)

    def sample() -> float:
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record(stream)
        layer(x)
        end.record(stream)
        end.synchronize()
        return start.elapsed_time(end) / 1000.0

    for _ in range(warmup):
        layer(x)
    stream.synchronize()
    samples = [sample()]
    if best is not None and samples[0] > slow_factor * best:
        samples.append(sample())
        if min(samples) > slow_factor * best:
            return min(samples), len(samples), True
    reps = int(min(max_reps, max(min_reps, target_seconds / max(samples[0], 1e-9))))
    samples += [sample() for _ in range(reps - 1)]
    return statistics.median(samples), len(samples), False


def random_input(shape: Sequence[int], dtype: str, device: Any = "cuda") -> Any:
    """The tuner's fixed-seed input (same values as on the CPU) on `device`."""
    import numpy as np
    import torch

    values = np.random.default_rng(0).standard_normal(tuple(shape), dtype=np.float64).astype(dtype)
    return torch.from_numpy(values).to(device)


def timer_for(x: Any) -> Callable[..., float]:
    """time_call (CUDA events) for a CUDA torch tensor, else time_call_cpu."""
    device = getattr(x, "device", None)
    if getattr(device, "type", None) == "cuda":
        return lambda fn, **kw: time_call(fn, device=device, **kw)
    return time_call_cpu


__all__ = ["measure", "random_input", "time_call", "time_call_cpu", "timer_for"]
