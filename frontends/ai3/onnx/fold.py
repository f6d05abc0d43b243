"""Constant folding of an ONNX graph for a known input shape.

Exporters write shape arithmetic into the graph: Shape -> Gather ->
Unsqueeze -> Concat feeding a Reshape, ConstantOfShape/Range/Where building
masks (swin), Cast/Sqrt of a head dimension (vit). Once the input's shape is
known, all of it is constant. `fold` evaluates every node whose inputs are
constants with ONNX's own reference implementation (onnx.reference, so each
operator's semantics are ONNX's, not a rewrite of them), turns Shape/Size of
a tensor whose shape is known into constants, and returns a model whose
folded nodes are initializers; shape inference is re-run after each round,
since a folded Reshape target makes the shapes downstream known, which lets
the next Shape fold.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ai3 import errors

# Operators whose result is not a function of their inputs' values.
_NONDETERMINISTIC = (
    "RandomNormal",
    "RandomNormalLike",
    "RandomUniform",
    "RandomUniformLike",
    "Multinomial",
    "Bernoulli",
)
_DEFAULT_DOMAINS = ("", "ai.onnx")
# Each round folds what the last round's shapes allow, and a chain of shape
# reads through reshapes takes a round per link: LeViT-128's export needs
# 34. The rounds stop as soon as one folds nothing; this only bounds them.
_MAX_ROUNDS = 256


def _onnx():
    import onnx

    return onnx


def _evaluate(node: Any, values: list[np.ndarray | None], opset: int) -> list[np.ndarray]:
    """The outputs of one node on constant inputs, by onnx.reference."""
    from onnx.reference import ReferenceEvaluator

    onnx = _onnx()
    feeds = {name: value for name, value in zip(node.input, values) if name}
    # Wrapped in a graph run at the model's opset: given a bare NodeProto,
    # the evaluator runs the newest version of the operator (an opset-11
    # Unsqueeze's `axes` attribute would be refused).
    info = onnx.helper.make_empty_tensor_value_info
    g = onnx.helper.make_graph([node], "fold", [info(n) for n in feeds], [info(o) for o in node.output if o])
    outputs = ReferenceEvaluator(g, opsets={"": opset}).run(None, feeds)
    return [np.asarray(o) for o in outputs]


def _shape_value(node: Any, shape: tuple | None) -> np.ndarray | None:
    """Shape / Size of a tensor whose shape is fully known."""
    if shape is None or any(d is None for d in shape):
        return None
    if node.op_type == "Size":
        return np.asarray(int(np.prod(shape, dtype=np.int64)), dtype=np.int64)
    attrs = {a.name: a.i for a in node.attribute}
    rank = len(shape)
    start, end = attrs.get("start", 0), attrs.get("end", rank)
    return np.asarray(shape[slice(start, end)], dtype=np.int64)


def _round(model: Any, shapes: dict[str, tuple], constants: dict[str, np.ndarray], opset: int) -> bool:
    """One pass over the nodes in order; True when something folded."""
    onnx = _onnx()
    changed = False
    for node in model.graph.node:
        if node.domain not in _DEFAULT_DOMAINS or node.op_type in _NONDETERMINISTIC:
            continue
        if all(o in constants for o in node.output if o):
            continue
        if node.op_type == "Constant":
            outputs = [onnx.numpy_helper.to_array(_constant_tensor(node))]
        elif node.op_type in ("Shape", "Size"):
            value = _shape_value(node, shapes.get(node.input[0]))
            if value is None:
                continue
            outputs = [value]
        elif node.input and all((not name) or name in constants for name in node.input) and any(node.input):
            try:
                outputs = _evaluate(node, [constants.get(n) if n else None for n in node.input], opset)
            except Exception as e:
                raise errors.UnsupportedOperation(
                    f"node '{node.name or '<unnamed>'}' (op_type {node.op_type}): folding it on constant inputs "
                    f"failed: {type(e).__name__}: {e}"
                ) from e
        else:
            continue
        for name, value in zip(node.output, outputs):
            if name:
                constants[name] = value
        changed = True
    return changed


def _constant_tensor(node: Any) -> Any:
    """A Constant node's value as a TensorProto (every attribute form)."""
    onnx = _onnx()
    a = {x.name: onnx.helper.get_attribute_value(x) for x in node.attribute}
    if "value" in a:
        return a["value"]
    for key, kind in (
        ("value_float", np.float32),
        ("value_floats", np.float32),
        ("value_int", np.int64),
        ("value_ints", np.int64),
    ):
        if key in a:
            return onnx.numpy_helper.from_array(np.asarray(a[key], dtype=kind))
    raise errors.UnsupportedOperation(
        f"node '{node.name or '<unnamed>'}' (op_type Constant): a Constant of kind {sorted(a)}; ai3 reads tensors, floats and ints"
    )


def _rebuild(model: Any, constants: dict[str, np.ndarray]) -> Any:
    """A copy of the model with each node whose outputs are all constants
    removed and those constants as initializers (only the ones still read)."""
    onnx = _onnx()
    out = onnx.ModelProto()
    out.CopyFrom(model)
    graph = out.graph
    kept = [n for n in graph.node if not all(o in constants for o in n.output if o)]
    read = {name for n in kept for name in n.input} | {o.name for o in graph.output}
    existing = {t.name for t in graph.initializer}
    del graph.node[:]
    graph.node.extend(kept)
    for name, value in constants.items():
        if name in read and name not in existing:
            # (np.array, not ascontiguousarray, which makes a 0-d value 1-d)
            graph.initializer.append(onnx.numpy_helper.from_array(np.array(value, order="C"), name))
    initializers = [t for t in graph.initializer if t.name in read]
    del graph.initializer[:]
    graph.initializer.extend(initializers)
    # The graph input list may name initializers (IR < 4); drop the stale ones.
    inputs = [i for i in graph.input if i.name in read or i.name not in existing]
    del graph.input[:]
    graph.input.extend(inputs)
    # Shapes stay for what is still computed (a rewritten model's ai3
    # outputs, which inference cannot see through); folded values go.
    shapes = [v for v in graph.value_info if v.name not in constants]
    del graph.value_info[:]
    graph.value_info.extend(shapes)
    return out


def fold(
    model: Any,
    infer: Callable[[Any], dict[str, tuple]],
    opset: int,
) -> tuple[Any, dict[str, tuple]]:
    """(the folded model, its tensor shapes). `infer(model)` returns tensor
    name -> shape for a model (ai3.onnx.graph.infer_shapes bound to the
    sample input shape)."""
    onnx = _onnx()
    constants = {t.name: onnx.numpy_helper.to_array(t) for t in model.graph.initializer}
    shapes = infer(model)
    current = model
    for _ in range(_MAX_ROUNDS):
        if not _round(current, shapes, constants, opset):
            break
        current = _rebuild(model, constants)
        shapes = infer(current)
    return current, shapes


__all__ = ["fold"]
