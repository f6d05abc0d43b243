"""swap_backend(..., fallback=True) for PyTorch: the supported subgraphs
run in ai3's core, the rest in PyTorch.

The model is traced once with sample inputs (ai3.torch.tracing) and mapped
(ai3.torch.fx.specs_of), which names every node it cannot map. The graph is
then cut with torch.fx.passes.split_module into runs of consecutive nodes
that map or do not (size arithmetic goes with the run it is in). Each run
that maps becomes an ai3.Model of as many inputs and outputs as the run
has, traced again on the values the run actually receives from the sample
inputs; the others stay fx submodules run by PyTorch. A run whose inputs
are not tensors the core takes (float ones of the model's dtype, int64 ids
and positions, bool masks; not sizes or other dtypes) stays in PyTorch
too, and says so.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch import fx, nn
from torch.fx.passes.split_module import split_module

from ai3 import errors, model
from ai3.spec import Fallback
from ai3.torch import fx as torch_fx
from ai3.torch import tracing
from ai3.torch.nodes import UnsupportedNodes, describe


def _fallback_of(node: fx.Node, reason: str) -> Fallback:
    """The node's name, its target (a module's path, a function's or
    method's name) and why, less the node's description."""
    target = node.target if isinstance(node.target, str) else getattr(node.target, "__name__", repr(node.target))
    prefix = describe(node) + ": "
    return Fallback(node.name, str(target), reason[len(prefix) :] if reason.startswith(prefix) else reason)


class _CoreIsland(nn.Module):
    """A run of the graph that ai3's core runs: the split module's
    submodule, replaced by its ai3.Model."""

    def __init__(self, core_model: model.Model):
        super().__init__()
        self.core_model = core_model

    def forward(self, *args: Any) -> Any:
        return self.core_model(*args)


class FallbackModule(nn.Module):
    """The model split between ai3 and PyTorch (swap_backend's
    fallback=True): call it like the original. `fallbacks()` lists the
    nodes PyTorch runs and why; `islands()` the ai3.Models that run the
    rest. Inference only, as ai3.Model."""

    def __init__(self, split: fx.GraphModule, fallbacks: list[Fallback]):
        super().__init__()
        self.split = split
        self._fallbacks = fallbacks

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return self.split(*args, **kwargs)

    def fallbacks(self) -> list[Fallback]:
        return list(self._fallbacks)

    def islands(self) -> dict[str, model.Model]:
        return {name: m.core_model for name, m in self.split.named_children() if isinstance(m, _CoreIsland)}

    def layers(self) -> list[tuple[str, str, str]]:
        """(name, op, algorithm) of every layer ai3 runs, island by island."""
        return [(f"{island}/{name}", op, algo) for island, m in self.islands().items() for name, op, algo in m.layers()]


def _runs(gm: fx.GraphModule, refused: set[fx.Node]) -> dict[fx.Node, int]:
    """Each node's run: consecutive nodes that all map, or all do not."""
    part: dict[fx.Node, int] = {}
    current, in_torch = 0, None
    for node in gm.graph.nodes:
        if node.op in ("placeholder", "output", "get_attr"):
            continue
        is_refused = node in refused
        tensor = torch_fx._is_tensor_valued(node)
        if tensor and in_torch is not None and is_refused != in_torch:
            current += 1
        if tensor or in_torch is None:
            in_torch = is_refused
        part[node] = current
    return part


def _island_inputs(split: fx.GraphModule, names: list[str], samples: Sequence[Any]) -> dict[str, list[tuple]]:
    """What each submodule in `names` receives on each sample: {name:
    [args on sample 1, args on sample 2]}."""
    seen: dict[str, list[tuple]] = {n: [] for n in names}
    hooks = [
        getattr(split, n).register_forward_pre_hook(lambda m, args, n=n: seen[n].append(tuple(args))) for n in names
    ]
    try:
        with torch.no_grad():
            for run in samples:
                split(*run) if isinstance(run, tuple) else split(run)
    finally:
        for h in hooks:
            h.remove()
    return seen


def _why_not_core(args: tuple, dtype: torch.dtype) -> str | None:
    """Why an island receiving `args` cannot be an ai3.Model, or None: it
    takes tensors of the model's float dtype, int64 (token ids, positions)
    and bool (masks)."""
    takes = (dtype, torch.int64, torch.bool)
    for k, a in enumerate(args):
        if not isinstance(a, torch.Tensor):
            return f"its input {k} is a {type(a).__name__}, not a tensor (ai3.Models take tensors)"
        if a.dtype not in takes:
            return f"its input {k} is {a.dtype}; ai3.Models take {dtype}, torch.int64 and torch.bool tensors"
    return None


def swap_backend(
    module: nn.Module,
    algos: Any,
    sample_input_shape: Sequence[Any] | None,
    *,
    dtype: Any = None,
    recorder: Any = None,
) -> Any:
    """ai3.swap_backend(..., fallback=True): an ai3.Model when every node
    maps, else a FallbackModule."""
    from ai3 import torch as ai3_torch  # swap_backend's own paths

    if sample_input_shape is None:
        raise errors.InvalidArgument(
            "swap_backend(..., fallback=True) needs sample_input_shape (the islands are traced on the values they receive)"
        )
    module, sample_input_shape = tracing.by_name(module, sample_input_shape)
    several = tracing.is_several_shapes(sample_input_shape)
    shapes = (
        [s if isinstance(s, torch.Tensor) else tuple(s) for s in sample_input_shape]
        if several
        else tuple(sample_input_shape)
    )
    samples = tracing.sample_inputs(module, shapes)
    gm, _ = tracing.trace(module, samples, torch_fx.maps_as_module)
    try:
        torch_fx.specs_of(gm, True)
    except UnsupportedNodes as e:
        refused = dict(e.nodes)
    else:
        built = ai3_torch.swap_backend(module, algos, sample_input_shape, dtype=dtype, recorder=recorder)
        return built
    model_dtype = torch_fx.model_dtype(module, dtype)
    part = _runs(gm, set(refused))
    torch_runs = {part[n] for n in refused}
    split = split_module(gm, module, lambda node: part[node])
    names = [n for n, _ in split.named_children() if n.startswith("submod_")]
    candidates = [n for n in names if int(n.split("_")[1]) not in torch_runs]
    received = _island_inputs(split, candidates, samples)
    fallbacks = [_fallback_of(node, why) for node, why in refused.items()]
    torch_dtype = {"float32": torch.float32, "float64": torch.float64}[model_dtype.name]
    for name in candidates:
        runs = received[name]
        why = "it does not run on the sample inputs" if len(runs) != 2 else _why_not_core(runs[0], torch_dtype)
        sub = getattr(split, name)
        if why is None:
            try:
                island_gm, _ = tracing.trace(
                    sub, (runs[0], runs[1]) if len(runs[0]) > 1 else (runs[0][0], runs[1][0]), torch_fx.maps_as_module
                )
                traced = torch_fx.specs_of(island_gm, True)
                core = ai3_torch._built_several(traced, algos, module, dtype, None, recorder)
            except errors.Error as e:
                why = f"ai3 could not build it ({e})"
        if why is not None:
            fallbacks.append(Fallback(name, "submodule", f"a run of supported nodes kept in PyTorch: {why}"))
            continue
        setattr(split, name, _CoreIsland(core))
    return FallbackModule(split, fallbacks)


__all__ = ["Fallback", "FallbackModule", "swap_backend"]
