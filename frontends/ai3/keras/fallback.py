"""ai3.keras.swap_backend(..., fallback=True): the supported runs of a Keras
functional graph in ai3's core, the layers ai3 lacks run by Keras itself.

The graph's nodes, in the order ai3.keras.graph maps them, are cut into
runs of consecutive nodes that map or do not (its refusal,
UnsupportedLayers, names them all). A run that maps is mapped again with
the tensors it reads from outside bound to the inputs of an ai3.Model of
as many inputs and outputs as the run has (NHWC, as the whole-model
path); a refused layer is called as Keras calls it in a functional
model (its node's arguments filled in with the values computed so far).
A nested model is one node: it falls back whole when anything in it does.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np

from ai3 import errors, frontend
from ai3.keras import graph
from ai3.spec import OUTPUTS, Fallback, LayerSpec, model_input, prune_dead, split_runs


@dataclasses.dataclass
class _Run:
    nodes: list[Any]
    inputs: list[Any]  # KerasTensors read from outside the run
    outputs: list[Any]  # KerasTensors read later or returned
    core: Any = None  # the ai3.Model of a run that maps


class FallbackModel:
    """The Keras model split between ai3 and Keras: call it on an NHWC
    array as the model. `fallbacks()` names the layers Keras runs and
    why; `islands()` the ai3.Models that run the rest."""

    def __init__(self, model: Any, runs: list[_Run], fallbacks: list[Fallback]):
        self.model = model
        self._runs = runs
        self._fallbacks = fallbacks

    def fallbacks(self) -> list[Fallback]:
        return list(self._fallbacks)

    def islands(self) -> list[Any]:
        return [r.core for r in self._runs if r.core is not None]

    def __call__(self, x: Any) -> np.ndarray:
        keras = graph._keras()
        g = graph._graph_of(self.model)
        env: dict[int, Any] = {id(g.inputs[0]): np.asarray(x)}
        for run in self._runs:
            if run.core is not None:
                got = run.core(*[env[id(t)] for t in run.inputs])
                env.update(zip((id(t) for t in run.outputs), got if isinstance(got, tuple) else (got,)))
                continue
            for node in run.nodes:
                args, kwargs = node.arguments.fill_in(env)
                values = keras.tree.flatten(node.operation(*args, **kwargs))
                env.update((id(t), keras.ops.convert_to_numpy(v)) for t, v in zip(node.outputs, values))
        return env[id(g.outputs[0])]


def _nodes(model: Any) -> list[Any]:
    g = graph._graph_of(model)
    return [
        node
        for depth in sorted(g._nodes_by_depth, reverse=True)
        for node in g._nodes_by_depth[depth]
        if node.operation is not None and not node.is_input
    ]


def _runs(model: Any, refused: set[int]) -> list[_Run]:
    runs = split_runs(
        _nodes(model),
        lambda node: id(node.operation) in refused,
        lambda node: node.input_tensors,
        lambda node: node.outputs,
        graph._graph_of(model).outputs,
        key=id,
    )
    return [_Run(members, inputs, outputs) for members, inputs, outputs in runs]


def _core_run(run: _Run, shapes: dict[int, tuple], sample: tuple, algos: Any, dtype: np.dtype, recorder: Any) -> Any:
    """The ai3.Model of a run that maps, its inputs bound to the run's."""
    mapper = graph._Mapper(sample)
    for k, t in enumerate(run.inputs):
        mapper.tensors[id(t)] = (model_input(k), shapes[id(t)])
    for node in run.nodes:
        mapper.node(node, "")
    if mapper.refused:
        raise graph.UnsupportedLayers(mapper.refused)
    outs = [mapper.tensors[id(t)][0] for t in run.outputs]
    if any(o < 0 for o in outs):
        raise errors.UnsupportedOperation("the run returns one of its inputs unchanged")
    specs = mapper.specs
    if len(outs) > 1:
        specs.append(LayerSpec("outputs", OUTPUTS, outs))
        output = len(specs) - 1
    else:
        output = outs[0]
    specs, output = prune_dead(specs, output)
    return frontend.build_model(
        specs, output, algos, dtype=dtype, layout="NHWC", recorder=recorder, input_count=len(run.inputs)
    )


def swap_backend(
    model: Any, algos: Any, sample_input_shape: Sequence[int] | None, *, dtype: Any = None, recorder: Any = None
) -> Any:
    """An ai3.Model when every layer maps, else a FallbackModel."""
    try:
        return graph.swap_backend(model, algos, sample_input_shape, dtype=dtype, recorder=recorder)
    except graph.UnsupportedLayers as e:
        refusal = e
    if sample_input_shape is None:
        raise errors.InvalidArgument(
            "ai3.keras.swap_backend(..., fallback=True) needs sample_input_shape (the runs are built for the shapes they receive)"
        ) from refusal
    np_dtype = graph.model_dtype(model, dtype)
    sample = tuple(int(d) for d in sample_input_shape)
    refused = {id(layer): why for layer, why in refusal.layers}
    fallbacks = [Fallback(layer.name, type(layer).__name__, why) for layer, why in refusal.layers]
    runs = _runs(model, set(refused))
    # Every tensor's shape at the sample: the model run once by Keras itself.
    shapes: dict[int, tuple] = {}
    keras = graph._keras()
    g = graph._graph_of(model)
    env: dict[int, Any] = {id(g.inputs[0]): np.zeros(sample, dtype=np_dtype)}
    for node in _nodes(model):
        args, kwargs = node.arguments.fill_in(env)
        values = keras.tree.flatten(node.operation(*args, **kwargs))
        for t, v in zip(node.outputs, values):
            env[id(t)] = v
            shapes[id(t)] = tuple(int(d) for d in v.shape)
    shapes[id(g.inputs[0])] = sample
    for run in runs:
        if any(id(n.operation) in refused for n in run.nodes):
            continue
        try:
            run.core = _core_run(run, shapes, sample, algos, np_dtype, recorder)
        except errors.Error as e:
            names = ", ".join(n.operation.name for n in run.nodes)
            fallbacks.append(Fallback(names, "run", f"a run of supported layers kept in Keras: {e}"))
    return FallbackModel(model, runs, fallbacks)


__all__ = ["Fallback", "FallbackModel", "swap_backend"]
