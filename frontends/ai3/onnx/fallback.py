"""ai3.onnx.swap_backend(..., fallback=True): the supported runs of an ONNX
graph in ai3's core, the rest in ONNX Runtime.

The graph's nodes (in their topological order) are cut into runs of
consecutive nodes that ai3 maps or does not (ai3.onnx.graph's refusal,
UnsupportedNodes, names them all). Each run becomes a sub-model: its nodes,
the initializers they read, as inputs the tensors they read from outside
and as outputs those read later or returned. A supported run is built as
an ai3.Model of that many inputs and outputs (bound to the sample shapes
shape inference gives its inputs); the others, and any supported run ai3
cannot build after all (an int64 input, say), get an ONNX Runtime session.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np

from ai3 import errors
from ai3.onnx import graph
from ai3.spec import Fallback, split_runs


@dataclasses.dataclass
class _Run:
    nodes: list[Any]
    indices: list[int]  # the nodes' positions in the model's graph
    inputs: list[str]
    outputs: list[str]
    runner: Any = None  # an ai3.Model or an onnxruntime.InferenceSession
    in_core: bool = False


class FallbackSession:
    """The model split between ai3 and ONNX Runtime. `run(None, feeds)` as
    ONNX Runtime's InferenceSession (feeds: input name -> array) returns
    the outputs in graph order; calling it with the inputs by position or
    name returns them as a tuple (one output: the array). `fallbacks()`
    lists what ONNX Runtime runs and why; `islands()` the ai3.Models."""

    def __init__(self, runs: list[_Run], input_names: list[str], output_names: list[str], fallbacks: list[Fallback]):
        self._runs = runs
        self.input_names = input_names
        self.output_names = output_names
        self._fallbacks = fallbacks

    def fallbacks(self) -> list[Fallback]:
        return list(self._fallbacks)

    def islands(self) -> list[Any]:
        return [r.runner for r in self._runs if r.in_core]

    def run(self, output_names: Sequence[str] | None, feeds: dict[str, Any]) -> list[np.ndarray]:
        missing = [n for n in self.input_names if n not in feeds]
        if missing:
            raise errors.InvalidArgument(
                f"model input{'s' if len(missing) > 1 else ''} {', '.join(repr(m) for m in missing)} not given"
            )
        env = {n: np.asarray(feeds[n]) for n in self.input_names}
        for run in self._runs:
            args = [env[n] for n in run.inputs]
            if run.in_core:
                got = run.runner(*args)
                got = list(got) if isinstance(got, tuple) else [got]
            else:
                got = run.runner.run(run.outputs, dict(zip(run.inputs, args)))
            env.update(zip(run.outputs, (np.asarray(g) for g in got)))
        return [env[n] for n in (output_names or self.output_names)]

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        feeds = dict(zip(self.input_names, args), **kwargs)
        outputs = self.run(None, feeds)
        return outputs[0] if len(outputs) == 1 else tuple(outputs)


def _types(proto: Any) -> dict[str, Any]:
    """Tensor name -> its TypeProto, from shape inference (declared inputs,
    outputs and initializers included)."""
    import onnx

    inferred = onnx.shape_inference.infer_shapes(proto)
    g = inferred.graph
    types = {vi.name: vi.type for vi in [*g.input, *g.value_info, *g.output]}
    for t in proto.graph.initializer:
        types[t.name] = onnx.helper.make_tensor_type_proto(t.data_type, list(t.dims))
    return types


def _runs(proto: Any, refused: set[int]) -> list[_Run]:
    nodes = list(proto.graph.node)
    inits = {t.name for t in proto.graph.initializer}
    runs = split_runs(
        range(len(nodes)),
        lambda i: i in refused,
        lambda i: [x for x in nodes[i].input if x and x not in inits],
        lambda i: [o for o in nodes[i].output if o],
        [o.name for o in proto.graph.output],
    )
    return [_Run([nodes[i] for i in members], list(members), inputs, outputs) for members, inputs, outputs in runs]


def _sub_model(proto: Any, run: _Run, types: dict[str, Any]) -> Any:
    import onnx

    used = {x for n in run.nodes for x in n.input}
    inits = [t for t in proto.graph.initializer if t.name in used]

    def info(name: str) -> Any:
        if name not in types:
            raise errors.UnsupportedOperation(f"shape inference gives no type for tensor '{name}'")
        return onnx.helper.make_value_info(name, types[name])

    g = onnx.helper.make_graph(
        run.nodes, "ai3_run", [info(n) for n in run.inputs], [info(n) for n in run.outputs], inits
    )
    model = onnx.helper.make_model(g, opset_imports=list(proto.opset_import))
    model.ir_version = proto.ir_version
    return model


def swap_backend(model: Any, algos: Any, sample_input_shape: Any, *, dtype: Any = None, recorder: Any = None) -> Any:
    """An ai3.Model when ai3 maps every node, else a FallbackSession."""
    import onnxruntime

    proto = graph.load(model)
    try:
        return graph.swap_backend(proto, algos, sample_input_shape, dtype=dtype, recorder=recorder)
    except graph.UnsupportedNodes as e:
        refusal = e
    if sample_input_shape is None:
        raise errors.InvalidArgument(
            "ai3.onnx.swap_backend(..., fallback=True) needs sample_input_shape (the runs are built for the shapes they receive)"
        ) from refusal
    # The refused nodes are the folded graph's; they are found in the model by their outputs.
    why_of = {o: why for node, why in refusal.nodes for o in node.output if o}
    refused = {i for i, n in enumerate(proto.graph.node) if any(o in why_of for o in n.output)}
    fallbacks = [
        Fallback(n.name, n.op_type, next(why_of[o] for o in n.output if o in why_of))
        for i, n in enumerate(proto.graph.node)
        if i in refused
    ]
    inputs = graph.graph_inputs(proto)
    bound = graph._bound_inputs(proto, sample_input_shape)
    bound_proto = graph._onnx().ModelProto()
    bound_proto.CopyFrom(proto)
    shapes = graph.infer_shapes(bound_proto, {inp.name: dims for inp, dims in bound})
    types = _types(proto)
    runs = _runs(proto, refused)
    for run in runs:
        sub = _sub_model(proto, run, types)
        if not refused.intersection(run.indices):
            try:
                run_shapes = [shapes[n] for n in run.inputs]
                if any(d is None for s in run_shapes for d in s):
                    raise errors.ShapeError("shape inference leaves a dimension of its inputs unknown")
                run.runner = graph.swap_backend(
                    sub, algos, run_shapes if len(run_shapes) > 1 else run_shapes[0], dtype=dtype, recorder=recorder
                )
                run.in_core = True
                continue
            except (errors.Error, KeyError) as e:
                fallbacks.append(
                    Fallback(
                        f"{run.nodes[0].name}..{run.nodes[-1].name}",
                        "run",
                        f"a run of supported nodes kept in ONNX Runtime: {e}",
                    )
                )
        run.runner = onnxruntime.InferenceSession(sub.SerializeToString(), providers=["CPUExecutionProvider"])
    return FallbackSession(runs, [i.name for i in inputs], [o.name for o in proto.graph.output], fallbacks)


__all__ = ["Fallback", "FallbackSession", "swap_backend"]
