""""auto" for the in-graph ONNX swaps (ai3.onnx.rewrite): how to time one
node alone.

A candidate node (with, for a MatMul+Add linear, its Add) is cut out into a
model of its own (the node, its initializers, one input of the node's input
shape) and mapped by ai3.onnx.graph into a LayerSpec, the same mapping
swap_backend uses, so the node is timed as the core layer that runs it
(the ai3-domain op calls the same layer). This is done lazily, only for the
nodes a selector sends to "auto": the other swaps never need it.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Optional, Sequence

import onnx
from onnx import helper

from ai3 import errors, selection


def _constant(model: onnx.ModelProto, name: str) -> Optional[onnx.TensorProto]:
    """The constant tensor `name` holds, as an initializer named `name`:
    an initializer, a Constant node's value, or either through Identity
    nodes (torch.onnx.export writes one Identity per layer when several
    layers' parameters are equal, e.g. the zero biases of weights=None)."""
    inits = {t.name: t for t in model.graph.initializer}
    producers = {out: node for node in model.graph.node for out in node.output}
    source = name
    for _ in range(len(model.graph.node) + 1):
        if source in inits:
            tensor = onnx.TensorProto()
            tensor.CopyFrom(inits[source])
            tensor.name = name
            return tensor
        node = producers.get(source)
        if node is None:
            return None
        if node.op_type == "Identity" and node.domain in ("", "ai.onnx"):
            source = node.input[0]
            continue
        if node.op_type == "Constant" and node.domain in ("", "ai.onnx"):
            value = next((a.t for a in node.attribute if a.name == "value" and a.HasField("t")), None)
            if value is None:
                return None
            tensor = onnx.TensorProto()
            tensor.CopyFrom(value)
            tensor.name = name
            return tensor
        return None
    return None


def _single_node_model(
    model: onnx.ModelProto, nodes: Sequence[onnx.NodeProto], input_shape: Sequence[int], output_shape: Optional[Sequence[int]]
) -> onnx.ModelProto:
    x_name = nodes[0].input[0]
    produced = {out for node in nodes for out in node.output}
    used = []
    for node in nodes:
        for name in node.input:
            if name and name != x_name and name not in produced:
                tensor = _constant(model, name)
                if tensor is None:
                    raise errors.UnsupportedOperation(
                        f"node '{node.name}': 'auto' times it alone, but its input '{name}' is neither an "
                        "initializer nor a constant (Constant / Identity of one)"
                    )
                used.append(tensor)
    elem = next(
        (vi.type.tensor_type.elem_type for vi in [*model.graph.input, *model.graph.value_info] if vi.name == x_name),
        onnx.TensorProto.FLOAT,
    )
    graph = helper.make_graph(
        list(nodes),
        "ai3_autotune",
        [helper.make_tensor_value_info(x_name, elem, list(input_shape))],
        # The checker wants a shape on outputs; symbolic dims when unknown.
        [helper.make_tensor_value_info(nodes[-1].output[0], elem, list(output_shape) if output_shape else ["n", "c", "h", "w"][: len(input_shape)])],
        initializer=used,
    )
    opsets = [o for o in model.opset_import if o.domain in ("", "ai.onnx")]
    return helper.make_model(graph, opset_imports=opsets, ir_version=model.ir_version)


def candidate(
    op: str,
    model: onnx.ModelProto,
    label: str,
    nodes: Sequence[onnx.NodeProto],
    input_shape: Optional[tuple[int, ...]],
    output_shape: Optional[tuple[int, ...]] = None,
) -> selection.Candidate:
    """The selection Candidate for `nodes[0]` (`nodes` also holds a fused
    Add), able to build its core layer for "auto" once a shape is known."""
    if input_shape is None:
        return selection.Candidate(label, nodes[0], None)

    @functools.lru_cache(maxsize=1)
    def spec_candidate() -> selection.Candidate:
        from ai3 import model as ai3_model
        from ai3.onnx import graph

        specs, _ = graph.to_specs(_single_node_model(model, nodes, input_shape, output_shape), input_shape)
        mine = [s for s in specs if s.op == op]
        if len(mine) != 1:
            raise errors.UnsupportedOperation(
                f"{op} layer '{label}': 'auto' could not map this node alone onto one ai3 {op} layer"
            )
        dtype = graph.model_dtype(model)
        return selection.spec_candidate(mine[0], ai3_model.LAYER_FACTORIES.get(op), dtype, "NCHW")

    def make_layer(algorithm: str) -> Any:
        make = spec_candidate().make_layer
        if make is None:
            raise errors.UnsupportedOperation(f"{op} layer '{label}': 'auto' cannot time this node alone")
        return make(algorithm)

    def params() -> dict[str, Any]:
        return spec_candidate().params

    # float32: ai3's ONNX Runtime ops take float32 only (ai3.onnx.session).
    return selection.Candidate(label, nodes[0], input_shape, make_layer, params, "float32", "NCHW", "onnx")


def candidates(
    op: str,
    model: onnx.ModelProto,
    targets: Sequence[tuple[int, onnx.NodeProto]],
    fused_add: dict[int, tuple[int, onnx.NodeProto, str]],
    shapes: dict[str, tuple[int, ...]],
    label: Callable[[onnx.NodeProto, int], str],
) -> list[selection.Candidate]:
    """One Candidate per target node of ai3.onnx.rewrite.swap_operation."""
    out = []
    for i, node in targets:
        nodes = [node] + ([fused_add[i][1]] if i in fused_add else [])
        shape = shapes.get(node.input[0]) if node.input else None
        out.append(candidate(op, model, label(node, i), nodes, shape, shapes.get(nodes[-1].output[0])))
    return out
