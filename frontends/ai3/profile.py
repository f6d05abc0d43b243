"""ai3.Model.profile: where the time of a whole forward pass goes.

"auto" and ai3.plan time each layer alone, warm, over and over. Inside a
forward pass a layer also pays for what its neighbours left in the caches
and for waking the threads, and the model pays for what runs between nodes
and for converting its input and output. This runs the model itself with the
core's per-node clock on (Model::SetProfiling: two clock reads per node) and
reports each node's median time per forward, next to the whole call's.
Medians, not means: on a shared machine one stalled call (a descheduled
thread) would otherwise land on whichever node it hit and rank that node
first.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from typing import Any

from ai3 import cuda, errors


@dataclass(frozen=True)
class NodeTime:
    name: str
    op: str
    algorithm: str
    seconds: float  # median per forward


@dataclass(frozen=True)
class Profile:
    nodes: list[NodeTime]
    forward_seconds: float  # median wall time of a whole call, from Python
    repeats: int
    # The median over the calls of each call's time outside its nodes.
    outside: float

    @property
    def node_seconds(self) -> float:
        return sum(n.seconds for n in self.nodes)

    @property
    def outside_seconds(self) -> float:
        """The call's time not spent in any node: argument conversion,
        output allocation, Python and pybind11. Taken per call (a call's
        time less its own nodes'): medians do not add, and the median call
        less the sum of the nodes' medians counted the spread of a noisy
        machine as time outside the nodes (squeezenet: 0.3-0.6 ms "outside"
        of 2.9 ms, 0.04 ms per call)."""
        return self.outside

    def by_op(self) -> dict[str, float]:
        totals: dict[str, float] = {}
        for n in self.nodes:
            totals[n.op] = totals.get(n.op, 0.0) + n.seconds
        return dict(sorted(totals.items(), key=lambda kv: -kv[1]))

    def __str__(self) -> str:
        total = self.forward_seconds or 1.0
        width = max([len(n.name) for n in self.nodes] + [4])
        lines = [f"{'node':<{width}}  {'op':<18} {'algorithm':<14} {'ms':>9} {'%':>6}"]
        for n in self.nodes:
            lines.append(
                f"{n.name:<{width}}  {n.op:<18} {n.algorithm:<14} {n.seconds * 1e3:9.3f} {100 * n.seconds / total:6.1f}"
            )
        lines.append(
            f"{'(outside the nodes)':<{width}}  {'':<18} {'':<14} {self.outside_seconds * 1e3:9.3f} "
            f"{100 * self.outside_seconds / total:6.1f}"
        )
        lines.append(
            f"forward: {self.forward_seconds * 1e3:.3f} ms per call (median of {self.repeats}); by op: "
            + ", ".join(f"{op} {s * 1e3:.2f} ms" for op, s in self.by_op().items())
        )
        return "\n".join(lines)


def profile(model: Any, x: Any, repeats: int = 10, warmup: int = 2) -> Profile:
    """Runs `model` (an ai3.Model) on `x` `warmup` times, then `repeats`
    times with the per-node clock on. The core's clock accumulates, so each
    node's time in one call is the difference of two readings."""
    if repeats < 1 or warmup < 0:
        raise errors.InvalidArgument(f"profile: repeats must be >= 1 and warmup >= 0, got {repeats}, {warmup}")
    if cuda.is_cuda_tensor(x):
        raise errors.UnsupportedOperation(
            "profile: the per-node clock is the host's, and CUDA nodes only queue work on the stream; "
            "profile a CPU input, or time the whole call with CUDA events (ai3.cuda_timing)"
        )
    for _ in range(warmup):
        model(x)
    core = model._core
    core.set_profiling(True)
    layers = model.layers()
    try:
        calls: list[float] = []
        outside: list[float] = []
        per_node: list[list[float]] = [[] for _ in layers]
        before = [core.node_seconds(i) for i in range(len(layers))]
        for _ in range(repeats):
            start = time.perf_counter()
            model(x)
            calls.append(time.perf_counter() - start)
            after = [core.node_seconds(i) for i in range(len(layers))]
            for i, (b, a) in enumerate(zip(before, after)):
                per_node[i].append(a - b)
            outside.append(max(calls[-1] - sum(a - b for b, a in zip(before, after)), 0.0))
            before = after
        forward = statistics.median(calls)
        nodes = [
            NodeTime(name, op, algorithm, statistics.median(per_node[i]))
            for i, (name, op, algorithm) in enumerate(layers)
        ]
    finally:
        core.set_profiling(False)
    return Profile(nodes, forward, repeats, statistics.median(outside))
