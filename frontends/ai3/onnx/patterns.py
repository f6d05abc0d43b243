"""Recognising GELU, SiLU, layer norm and attention written out in an ONNX graph.

Exporters before opset 20 (which has a Gelu operator) write the exact GELU,
x * 0.5 * (1 + erf(x / sqrt(2))), as five nodes: Div(x, 1.414...) (or
Mul(x, 0.7071...)) -> Erf -> Add(., 1) -> two Muls, by x and by 0.5, in
either order (or 0.5 * x computed on the side and multiplied in). `find_gelus`
returns each such chain so the mapper emits one gelu spec for it: one op,
and the exact erf instead of a chain of broadcasts. A chain whose inner
tensors are used elsewhere (or a constant that is not the GELU's) is left
alone, and its Erf is then refused by the mapper.

Before opset 17 (which has LayerNormalization) torch writes a layer norm
as ReduceMean -> Sub -> Pow(2) -> ReduceMean -> Add(eps) -> Sqrt -> Div,
then Mul(gamma) and Add(beta); `find_layernorms` returns each such chain.

Scaled dot-product attention is exported (torch's SDPA before opset 23,
a hand-written MultiheadAttention) as MatMul(Softmax(MatMul(q', k')), v)
with q' = q or q * c and k' = Transpose(k) (last two axes swapped),
possibly times a constant, the scores possibly times or over a constant; `find_attentions` returns each such chain
without a mask, its scale the product of the constants, so the mapper
emits one attention op (whose algorithms never need the score matrix).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

_RTOL = 1e-4


@dataclass
class Gelu:
    x: str  # the GELU's input tensor
    last: int  # index of the chain's final node (it outputs the GELU)
    nodes: list[int]  # indices of every node in the chain


def _scalar(value: np.ndarray | None) -> float | None:
    if value is None or np.asarray(value).size != 1:
        return None
    return float(np.asarray(value).reshape(()))


def _near(value: float | None, target: float) -> bool:
    return value is not None and abs(value - target) <= _RTOL * abs(target)


def _producers(nodes: list[Any]) -> dict[str, int]:
    """Each tensor's producing node (an index into `nodes`)."""
    return {o: i for i, n in enumerate(nodes) for o in n.output if o}


def _only_reader_of(nodes: list[Any], uses: dict[str, int]) -> Callable[[str, str], int | None]:
    """A function (tensor, op_type) -> the index of the one node reading
    `tensor` if that node is an `op_type` and nothing else (not even the
    graph's outputs, which `uses` counts) reads it; else None. A chain is
    only fused when its inner tensors have no other use."""
    readers: dict[str, list[int]] = {}
    for i, n in enumerate(nodes):
        for name in n.input:
            readers.setdefault(name, []).append(i)

    def only_reader(tensor: str, op_type: str) -> int | None:
        r = readers.get(tensor, [])
        if uses.get(tensor, 0) != 1 or len(r) != 1 or nodes[r[0]].op_type != op_type:
            return None
        return r[0]

    return only_reader


def find_gelus(nodes: list[Any], constant: Callable[[str], np.ndarray | None], uses: dict[str, int]) -> list[Gelu]:
    """Every erf-GELU chain among `nodes` (a graph's nodes, in order).
    `constant(name)` is a tensor's constant value or None; `uses` counts
    each tensor's readers."""
    producer = _producers(nodes)
    only_reader = _only_reader_of(nodes, uses)

    def split(node: Any) -> tuple[str | None, float | None]:
        """(the tensor operand, the scalar constant operand) of a binary node."""
        a, b = node.input[0], node.input[1]
        if constant(b) is not None:
            return a, _scalar(constant(b))
        if constant(a) is not None:
            return b, _scalar(constant(a))
        return None, None

    found = []
    for e, erf in enumerate(nodes):
        if erf.op_type != "Erf" or erf.input[0] not in producer:
            continue
        scale_at = producer[erf.input[0]]
        scale = nodes[scale_at]
        x, c = split(scale) if scale.op_type in ("Div", "Mul") else (None, None)
        if x is None or uses.get(erf.input[0], 0) != 1:
            continue
        if scale.op_type == "Div" and not (_near(c, math.sqrt(2.0)) and constant(scale.input[1]) is not None):
            continue
        if scale.op_type == "Mul" and not _near(c, 1.0 / math.sqrt(2.0)):
            continue
        add_at = only_reader(erf.output[0], "Add")
        if add_at is None or not _near(split(nodes[add_at])[1], 1.0):
            continue
        m1_at = only_reader(nodes[add_at].output[0], "Mul")
        if m1_at is None:
            continue
        m1 = nodes[m1_at]
        other = m1.input[1] if m1.input[0] == nodes[add_at].output[0] else m1.input[0]
        chain = [scale_at, e, add_at, m1_at]
        if other == x or _near(_scalar(constant(other)), 0.5):
            # (1 + erf) * x then * 0.5, or (1 + erf) * 0.5 then * x.
            m2_at = only_reader(m1.output[0], "Mul")
            if m2_at is None:
                continue
            _, c2 = split(nodes[m2_at])
            rest = nodes[m2_at].input[1] if nodes[m2_at].input[0] == m1.output[0] else nodes[m2_at].input[0]
            if not ((other == x and _near(c2, 0.5)) or (other != x and rest == x)):
                continue
            chain.append(m2_at)
        elif other in producer and nodes[producer[other]].op_type == "Mul" and uses.get(other, 0) == 1:
            # (0.5 * x) * (1 + erf)
            half_at = producer[other]
            t, c2 = split(nodes[half_at])
            if t != x or not _near(c2, 0.5):
                continue
            chain.append(half_at)
        else:
            continue
        found.append(Gelu(x=x, last=max(chain), nodes=sorted(chain)))
    return found


@dataclass
class LayerNorm:
    x: str  # the normalised tensor
    last: int
    nodes: list[int]
    axes: list[int]  # the ReduceMean axes, as written
    eps: float
    weight: np.ndarray | None  # gamma (None: 1)
    bias: np.ndarray | None  # beta (None: 0)


def find_layernorms(
    nodes: list[Any], constant: Callable[[str], np.ndarray | None], uses: dict[str, int], opset: int
) -> list[LayerNorm]:
    """Every decomposed layer norm among `nodes`, found from its Pow(., 2)."""
    from onnx import helper

    producer = _producers(nodes)
    only_reader = _only_reader_of(nodes, uses)

    def reduce_axes(node: Any) -> list[int] | None:
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        if int(attrs.get("keepdims", 1)) != 1:
            return None
        axes = attrs.get("axes") if opset < 18 else (constant(node.input[1]) if len(node.input) > 1 else None)
        return None if axes is None else [int(v) for v in np.asarray(axes).reshape(-1)]

    found = []
    for pw_at, pw in enumerate(nodes):
        if pw.op_type != "Pow" or not _near(_scalar(constant(pw.input[1])), 2.0) or pw.input[0] not in producer:
            continue
        sub_at = producer[pw.input[0]]
        sub = nodes[sub_at]
        if sub.op_type != "Sub" or sub.input[1] not in producer or uses.get(sub.output[0], 0) != 2:
            continue
        x, mean_at = sub.input[0], producer[sub.input[1]]
        mean = nodes[mean_at]
        if mean.op_type != "ReduceMean" or mean.input[0] != x or uses.get(mean.output[0], 0) != 1:
            continue
        axes = reduce_axes(mean)
        var_at = only_reader(pw.output[0], "ReduceMean")
        if axes is None or var_at is None or reduce_axes(nodes[var_at]) != axes:
            continue
        add_at = only_reader(nodes[var_at].output[0], "Add")
        eps = _scalar(constant(nodes[add_at].input[1])) if add_at is not None else None
        sqrt_at = only_reader(nodes[add_at].output[0], "Sqrt") if eps is not None else None
        div_at = only_reader(nodes[sqrt_at].output[0], "Div") if sqrt_at is not None else None
        if div_at is None or nodes[div_at].input != [sub.output[0], nodes[sqrt_at].output[0]]:
            continue
        chain = [mean_at, sub_at, pw_at, var_at, add_at, sqrt_at, div_at]
        weight = bias = None
        mul_at = only_reader(nodes[div_at].output[0], "Mul")
        if mul_at is not None:
            m = nodes[mul_at]
            weight = constant(m.input[1] if m.input[0] == nodes[div_at].output[0] else m.input[0])
            if weight is not None:
                chain.append(mul_at)
                bias_at = only_reader(m.output[0], "Add")
                if bias_at is not None:
                    b = nodes[bias_at]
                    bias = constant(b.input[1] if b.input[0] == m.output[0] else b.input[0])
                    if bias is not None:
                        chain.append(bias_at)
        found.append(LayerNorm(x, max(chain), sorted(chain), axes, float(eps), weight, bias))
    return found


@dataclass
class Attention:
    q: str
    k: str
    v: str
    last: int
    nodes: list[int]
    scale: float


def find_attentions(
    nodes: list[Any],
    constant: Callable[[str], np.ndarray | None],
    uses: dict[str, int],
    rank: Callable[[str], int | None],
    opset: int,
) -> list[Attention]:
    """Every unmasked MatMul-Softmax-MatMul attention among `nodes`;
    `rank(name)` is a tensor's rank (None: unknown)."""
    from onnx import helper

    producer = _producers(nodes)

    def single(tensor: str, op_type: str) -> int | None:
        """The producer of `tensor` if it is an `op_type` read only here."""
        i = producer.get(tensor)
        if i is None or uses.get(tensor, 0) != 1 or nodes[i].op_type != op_type:
            return None
        return i

    def peel(tensor: str, want_transpose: bool) -> tuple[str | None, float, list[int]]:
        """(the tensor under constant Muls and, for k, one last-two-axes
        Transpose; their scale product; the nodes peeled)."""
        scale, peeled, transposed = 1.0, [], False
        while True:
            mul = single(tensor, "Mul")
            if mul is not None:
                a, b = nodes[mul].input
                c = _scalar(constant(b)) if constant(b) is not None else _scalar(constant(a))
                t = a if constant(b) is not None else b
                if c is None or constant(t) is not None:
                    return None, 1.0, []
                scale, tensor = scale * c, t
                peeled.append(mul)
                continue
            tr = single(tensor, "Transpose")
            if want_transpose and not transposed and tr is not None:
                perm = (
                    [int(v) for v in helper.get_attribute_value(nodes[tr].attribute[0])]
                    if nodes[tr].attribute
                    else None
                )
                n = len(perm) if perm else 0
                if not perm or perm != list(range(n - 2)) + [n - 1, n - 2]:
                    return None, 1.0, []
                tensor, transposed = nodes[tr].input[0], True
                peeled.append(tr)
                continue
            break
        if want_transpose and not transposed:
            return None, 1.0, []
        return tensor, scale, peeled

    found = []
    for out_at, out in enumerate(nodes):
        if out.op_type != "MatMul":
            continue
        sm_at = single(out.input[0], "Softmax")
        if sm_at is None:
            continue
        r = rank(out.input[0])
        axis = {a.name: helper.get_attribute_value(a) for a in nodes[sm_at].attribute}.get(
            "axis", -1 if opset >= 13 else 1
        )
        if r is None or r < 3 or int(axis) not in (-1, r - 1):
            continue
        scores, s_scale, s_nodes = nodes[sm_at].input[0], 1.0, []
        for op_type in ("Mul", "Div"):  # scores * c or scores / c
            at = single(scores, op_type)
            if at is not None and constant(nodes[at].input[1]) is not None and _scalar(constant(nodes[at].input[1])):
                c = _scalar(constant(nodes[at].input[1]))
                s_scale = c if op_type == "Mul" else 1.0 / c
                scores, s_nodes = nodes[at].input[0], [at]
                break
        qk_at = single(scores, "MatMul")
        if qk_at is None:
            continue
        q, sq, q_nodes = peel(nodes[qk_at].input[0], False)
        k, sk, k_nodes = peel(nodes[qk_at].input[1], True)
        v = out.input[1]
        if q is None or k is None or constant(v) is not None or any(rank(t) != r for t in (q, k, v)):
            continue
        chain = sorted([*q_nodes, *k_nodes, *s_nodes, qk_at, sm_at, out_at])
        found.append(Attention(q, k, v, out_at, chain, sq * sk * s_scale))
    return found


@dataclass
class Silu:
    x: str
    last: int
    nodes: list[int]


def find_silus(nodes: list[Any], uses: dict[str, int]) -> list[Silu]:
    """Mul(x, Sigmoid(x)) (torch exports nn.SiLU so before opset 22's
    Swish): one silu instead of two ops and a temporary."""
    producer = _producers(nodes)
    found = []
    for mul_at, mul in enumerate(nodes):
        if mul.op_type != "Mul" or len(mul.input) != 2:
            continue
        for x, s in (mul.input, mul.input[::-1]):
            sig_at = producer.get(s)
            if (
                sig_at is not None
                and nodes[sig_at].op_type == "Sigmoid"
                and nodes[sig_at].input[0] == x
                and uses.get(s, 0) == 1
            ):
                found.append(Silu(x, mul_at, sorted([sig_at, mul_at])))
                break
    return found


__all__ = ["Attention", "Gelu", "LayerNorm", "Silu", "find_attentions", "find_gelus", "find_layernorms", "find_silus"]
