"""LayerSpec: what every frontend turns its framework's graph into, and the
framework-independent passes over a list of them.

A frontend traces its model (torch.fx graph, Keras layer graph, ONNX
GraphProto) into LayerSpecs in topological order; the selection layer picks
an algorithm per spec; ai3.model builds the core's DAG from them.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

MODEL_INPUT = -1  # as an input index: the model's (first) input

# A model of several outputs ends in one spec of this op, which reads them
# in order: every pass keeps its `output` an int, and sees the outputs as
# read (so nothing is folded away from under one).
OUTPUTS = "outputs"


def model_input(k: int) -> int:
    """The input index of the model's input k (as the core numbers them:
    -1 - k); MODEL_INPUT is input 0."""
    return -1 - k


def is_model_input(i: int) -> bool:
    return i < 0


class IndexMap(dict):
    """Old spec index -> new, for the passes that drop or insert specs:
    model inputs (negative) map to themselves."""

    def __missing__(self, key: int) -> int:
        if key < 0:
            return key
        raise KeyError(key)


# Attributes the spec passes write as notes for people and plans (which
# batchnorm was folded into a conv, which activation was fused, the memory
# order the layout pass gave a tensor, which permutes it inserted), not as
# parameters of the core layer.
NOTE_PREFIXES = ("folded_", "fused_", "memory_layout", "layout_conversion", "weights_dtype")


def is_note(attr: str) -> bool:
    return attr.startswith(NOTE_PREFIXES)


@dataclass(frozen=True)
class Fallback:
    """A node (layer) of a model that its framework runs instead of ai3
    (swap_backend(..., fallback=True)), in every frontend's words: its name
    in the model, what it is (the fx target, the ONNX op type, the Keras
    layer class) and why ai3 does not run it."""

    name: str
    op: str
    reason: str


def split_runs(
    nodes: Sequence[Any],
    refused: Callable[[Any], bool],
    reads: Callable[[Any], Sequence[Any]],
    writes: Callable[[Any], Sequence[Any]],
    returned: Sequence[Any],
    key: Callable[[Any], Any] = lambda value: value,
) -> list[tuple[list[Any], list[Any], list[Any]]]:
    """A graph (`nodes` in run order) cut for the partitioned fallback into
    runs of consecutive nodes that are all `refused` or all not: per run,
    (its nodes, the values it reads from outside itself in first-read order,
    the values it writes that a later run reads or the graph returns).
    Values are compared by `key` (ONNX tensor names as they are, Keras
    tensors by identity)."""
    groups: list[tuple[bool, list[Any]]] = []
    for node in nodes:
        is_refused = refused(node)
        if groups and groups[-1][0] == is_refused:
            groups[-1][1].append(node)
        else:
            groups.append((is_refused, [node]))
    returned_keys = {key(v) for v in returned}
    runs = []
    for k, (_, members) in enumerate(groups):
        produced = {key(v) for n in members for v in writes(n)}
        later = {key(v) for _, rest in groups[k + 1 :] for n in rest for v in reads(n)}
        inputs: list[Any] = []
        seen: set[Any] = set()
        for n in members:
            for v in reads(n):
                if key(v) not in produced and key(v) not in seen:
                    seen.add(key(v))
                    inputs.append(v)
        outputs = [v for n in members for v in writes(n) if key(v) in later or key(v) in returned_keys]
        runs.append((members, inputs, outputs))
    return runs


@dataclass
class LayerSpec:
    name: str  # the layer's path in the model (module path, node name)
    op: str  # a core op ("conv2d", "linear", ...) or "add" / "concat"
    inputs: list[int]  # indices of earlier specs, or model inputs (model_input(k))
    attrs: dict[str, Any] = field(default_factory=dict)
    weights: dict[str, np.ndarray] = field(default_factory=dict)
    layer: Any = None  # the framework's own layer object (for selectors)
    input_shape: tuple[int, ...] | None = None


def repeat_heads_steps(rank: int, q_heads: int, kv_heads: int, head_size: int) -> list[tuple[str, dict[str, Any]]]:
    """The (op, attrs) specs, in order, that repeat each head of a rank-`rank`
    (*batch, kv_heads, S, head_size) key or value q_heads // kv_heads times
    in place ([h0, h0, h1, h1, ...]: grouped-query attention, as torch's
    enable_gqa and ONNX's Attention repeat them): a reshape adding a unit
    axis after the heads, an expand along it, a reshape merging it back."""
    lead = [0] * (rank - 3)
    return [
        ("reshape", {"shape": [*lead, 0, 1, -1, head_size]}),
        ("expand", {"shape": [-1] * (rank - 2) + [q_heads // kv_heads, -1, -1]}),
        ("reshape", {"shape": [*lead, q_heads, -1, head_size]}),
    ]


# -- basic indexing, shared by the torch and Keras mappings -------------------
#
# x[index] on two sample shapes that differ only in the batch dimension (the
# torch tracer's two runs; Keras' None batch taken as 1 and 2): a dimension
# that differs depends on the batch size. The functions raise ValueError with
# the reason a form is not expressible; each frontend names its node.

END = sys.maxsize  # a slice's stop meaning "to the end" (slices clamp, as Python's do)


def _slice_bounds(s: slice, dim: int | None) -> tuple[int, int, int] | None:
    """(start, stop, step) of a slice along a dimension of size `dim` (None
    when it depends on the batch size), or None when it keeps everything."""
    step = 1 if s.step is None else s.step
    for v in (s.start, s.stop, step):
        if v is not None and not isinstance(v, int):
            raise ValueError(f"slice bounds must be ints, got {s!r}")
    if step <= 0:
        raise ValueError(f"slices with step {step} are not supported (only positive steps)")
    start = 0 if s.start is None else s.start
    stop = END if s.stop is None else s.stop
    if dim is not None:
        start, stop, _ = slice(start, None if stop == END else stop, step).indices(dim)
        if start == 0 and stop >= dim and step == 1:
            return None
    elif start == 0 and stop == END and step == 1:
        return None
    elif start < 0 or stop < 0:
        raise ValueError("negative slice bounds along a dimension that depends on the batch size")
    return int(start), int(stop), int(step)


def index_slices(
    index: Any, shape1: Sequence[int], shape2: Sequence[int]
) -> tuple[list[tuple[int, int, int, int]], bool]:
    """Basic indexing `x[index]` (PyTorch's, Keras' GetItem) as core slices
    [(axis, start, stop, step), ...] on x's axes, and whether a reshape must
    follow (ints drop their axis, None adds one). One list of evenly spaced,
    increasing ints along an axis (Falcon's qkv[..., [-2], :]) is that
    slice: a single advanced index keeps its axis where it was. Other
    advanced indexing (tensors, bools, several lists) is refused."""
    items = list(index) if isinstance(index, tuple) else [index]
    lists = [it for it in items if isinstance(it, list)]
    for it in items:
        if isinstance(it, list) and len(lists) == 1 and it and all(_is_int(v) for v in it):
            continue
        if not (it is None or it is Ellipsis or isinstance(it, (int, slice))) or isinstance(it, bool):
            raise ValueError(f"only ints, slices, None and ... can index a tensor here, got {it!r}")
    consuming = sum(1 for it in items if it is not None and it is not Ellipsis)
    if items.count(Ellipsis) > 1:
        raise ValueError("an index with more than one ...")
    if Ellipsis in items:
        at = items.index(Ellipsis)
        items[at : at + 1] = [slice(None)] * (len(shape1) - consuming)
    if consuming > len(shape1):
        raise ValueError(f"too many indices ({consuming}) for a tensor of rank {len(shape1)}")
    slices, reshape, axis = [], False, 0
    for it in items:
        if it is None:
            reshape = True
            continue
        dim = int(shape1[axis]) if shape1[axis] == shape2[axis] else None
        if isinstance(it, int):
            if dim is None:
                raise ValueError("an int index along a dimension that depends on the batch size")
            if not -dim <= it < dim:
                raise ValueError(f"index {it} is out of range for a dimension of size {dim}")
            i = it % dim
            slices.append((axis, i, i + 1, 1))
            reshape = True
        elif isinstance(it, list):
            if dim is None:
                raise ValueError("a list index along a dimension that depends on the batch size")
            if not all(-dim <= v < dim for v in it):
                raise ValueError(f"index {it} is out of range for a dimension of size {dim}")
            taken = [v % dim for v in it]
            step = taken[1] - taken[0] if len(taken) > 1 else 1
            if step < 1 or taken != list(range(taken[0], taken[0] + step * len(taken), step)):
                raise ValueError(f"a list index {it} that is not evenly spaced and increasing (not a slice)")
            slices.append((axis, taken[0], taken[-1] + 1, step))
        else:
            bounds = _slice_bounds(it, dim)
            if bounds is not None:
                slices.append((axis,) + bounds)
        axis += 1
    return slices, reshape


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


@dataclass
class EinsumPlan:
    """A two-operand einsum as one batched matmul (einsum_plan): each operand
    permuted to (batch..., free..., contracted...) / (batch..., contracted...,
    free...) and reshaped to (batch..., M, K) / (batch..., K, N); the product
    reshaped to (batch..., free_a..., free_b...) and permuted to the output.
    A perm is None where it is the identity, a reshape target None where it
    changes nothing. Targets copy the batch dims (0) and give the rest, one
    unknown size at most as -1."""

    a_perm: list[int] | None
    a_shape: list[int] | None
    b_perm: list[int] | None
    b_shape: list[int] | None
    product_shape: list[int] | None
    out_perm: list[int] | None

    def right_constant(self, b: np.ndarray) -> np.ndarray:
        """A constant right operand arranged as the matmul reads it (its
        permute and reshape applied here, a 0 in the target keeping its
        dim), for the matmul's constant operand."""
        arranged = b if self.b_perm is None else np.transpose(b, self.b_perm)
        if self.b_shape is not None:
            arranged = arranged.reshape([arranged.shape[i] if d == 0 else d for i, d in enumerate(self.b_shape)])
        return np.ascontiguousarray(arranged)


def einsum_plan(equation: str, a_sizes: Sequence[int | None], b_sizes: Sequence[int | None]) -> EinsumPlan:
    """The plan of `equation` ("bhid,bhjd->bhij", "ibh,hnd->ibnd", ...) for
    operands of these sizes (None: unknown, the batch's). Every index is a
    batch index (both operands and the output), a free one (one operand and
    the output) or a contracted one (both operands, not the output); any
    number of each. ValueError for anything else (a sum over an index of
    one operand, a repeated index, '...')."""
    eq = equation.replace(" ", "")
    if "->" not in eq or "." in eq:
        raise ValueError(f"einsum '{equation}': only explicit '->' equations without ... are supported")
    lhs, out = eq.split("->")
    terms = lhs.split(",")
    if len(terms) != 2:
        raise ValueError(f"einsum '{equation}': only two operands are supported")
    a, b = terms
    if any(len(set(t)) != len(t) for t in (a, b, out)):
        raise ValueError(f"einsum '{equation}': repeated indices (traces, diagonals) are not supported")
    if len(a) != len(a_sizes) or len(b) != len(b_sizes):
        raise ValueError(f"einsum '{equation}': operands of rank {len(a_sizes)} and {len(b_sizes)}")
    size = {**dict(zip(b, b_sizes)), **dict(zip(a, a_sizes))}
    batch = [c for c in out if c in a and c in b]
    free_a = [c for c in out if c in a and c not in b]
    free_b = [c for c in out if c in b and c not in a]
    contracted = [c for c in a if c in b and c not in out]
    if any(c not in out and not (c in a and c in b) for c in a + b) or set(out) != set(batch + free_a + free_b):
        raise ValueError(f"einsum '{equation}': an index summed over one operand only is not supported")

    def group(letters: list[str]) -> int:
        sizes = [size[c] for c in letters]
        return -1 if None in sizes else int(np.prod(sizes, dtype=np.int64))

    def target(groups: list[list[str]]) -> list[int]:
        t = [0] * len(batch) + [group(g) for g in groups]
        if t.count(-1) > 1:
            raise ValueError(f"einsum '{equation}': more than one index group of unknown size")
        return t

    def permutation(letters: str, order: list[str]) -> list[int] | None:
        perm = [letters.index(c) for c in order]
        return None if perm == list(range(len(perm))) else perm

    product = batch + free_a + free_b
    return EinsumPlan(
        a_perm=permutation(a, batch + free_a + contracted),
        a_shape=None if len(free_a) == 1 and len(contracted) == 1 else target([free_a, contracted]),
        b_perm=permutation(b, batch + contracted + free_b),
        b_shape=None if len(free_b) == 1 and len(contracted) == 1 else target([contracted, free_b]),
        product_shape=None
        if len(free_a) == 1 and len(free_b) == 1
        else target([[c] for c in free_a] + [[c] for c in free_b]),
        out_perm=permutation("".join(product), list(out)),
    )


def constant_left_matmul_steps(left: np.ndarray, rank: int) -> list[tuple[str, dict[str, Any], dict[str, np.ndarray]]]:
    """The (op, attrs, weights) specs, in order, of `left @ y` for a
    constant `left` and a computed y of rank `rank`, with torch.matmul's
    and ONNX MatMul's semantics (1-D operands and batch broadcasting
    included). The core's matmul takes its constant on the right, so this
    is (y^T @ left^T)^T, ^T swapping the last two dims: a permute of y, a
    matmul by left^T, a permute of the product. A 1-D operand has no dims
    to swap: its side's permute drops out (torch.matmul's 1-D rule puts
    the vector on the same side either way)."""

    def swap_last(n: int) -> list[int]:
        return [*range(n - 2), n - 1, n - 2]

    steps: list[tuple[str, dict[str, Any], dict[str, np.ndarray]]] = []
    if rank >= 2:
        steps.append(("permute", {"dims": swap_last(rank)}, {}))
    other = np.swapaxes(left, -1, -2) if left.ndim >= 2 else left
    steps.append(("matmul", {}, {"other": np.ascontiguousarray(other)}))
    if rank >= 2 and left.ndim >= 2:
        steps.append(("permute", {"dims": swap_last(max(rank, left.ndim))}, {}))
    return steps


def consumers(specs: list[LayerSpec]) -> dict[int, list[int]]:
    used: dict[int, list[int]] = {}
    for i, spec in enumerate(specs):
        for j in spec.inputs:
            used.setdefault(j, []).append(i)
    return used


def _batchnorm_on_last_dim(spec: LayerSpec, layout: str) -> bool:
    """Whether this batchnorm normalises its input's last dim (where a
    linear's output features are): a BatchNorm1d on (N, C), or any
    channels-last (NHWC model) batchnorm. Unknown shapes: no."""
    shape = spec.input_shape
    return shape is not None and (len(shape) == 2 or (layout == "NHWC" and len(shape) >= 2))


def fold_batchnorm(specs: list[LayerSpec], output: int, layout: str = "NCHW") -> tuple[list[LayerSpec], int]:
    """Folds each inference batchnorm2d whose only input is a conv2d (or a
    conv3d: BatchNorm3d) used by nothing else into that conv's weights and
    bias:
        w' = w * s,  b' = (b - mean) * s + beta,  s = gamma / sqrt(var + eps)
    so the pair costs one convolution. Likewise into a linear (weight
    (out, in): row o scaled by s[o]) when the batchnorm normalises the
    linear's output features, its input's last dim (BatchNorm1d after
    nn.Linear; `layout` "NHWC" for channels-last models). A batchnorm that
    cannot fold stays a batchnorm2d layer. Returns the new specs and output
    index.
    """
    used = consumers(specs)
    folded_into: dict[int, int] = {}  # batchnorm index -> conv/linear index
    for i, spec in enumerate(specs):
        if spec.op != "batchnorm2d" or len(spec.inputs) != 1:
            continue
        j = spec.inputs[0]
        if is_model_input(j) or used.get(j) != [i] or j == output:
            continue
        if specs[j].op == "linear" and not _batchnorm_on_last_dim(spec, layout):
            continue
        if specs[j].op not in ("conv2d", "conv3d", "linear") or specs[j].attrs.get("activation") is not None:
            continue
        conv, bn = specs[j], spec.weights
        if conv.weights["weight"].shape[0] != bn["running_mean"].shape[0]:
            continue
        scale = bn["weight"] / np.sqrt(bn["running_var"] + spec.attrs["eps"])
        _scale_outputs(conv, scale, bn["bias"] - bn["running_mean"] * scale)
        conv.attrs["folded_batchnorm"] = spec.name
        folded_into[i] = j
    return _remove(specs, output, folded_into)


def _scale_outputs(producer: LayerSpec, scale: np.ndarray, shift: np.ndarray | None = None) -> None:
    """A conv2d's or linear's weights and bias changed so that each output
    feature o comes out as out[o] * scale[o] + shift[o]: weight row o (the
    first dim of both ops' weights) times scale[o], the bias likewise, plus
    shift[o]."""
    weight = producer.weights["weight"]
    bias = producer.weights.get("bias")
    if bias is None:
        bias = np.zeros(weight.shape[0], dtype=weight.dtype)
    producer.weights["weight"] = (weight * scale.reshape((-1,) + (1,) * (weight.ndim - 1))).astype(weight.dtype)
    producer.weights["bias"] = (bias * scale + (0 if shift is None else shift)).astype(weight.dtype)


def fold_constant_scale(specs: list[LayerSpec], output: int, layout: str = "NCHW") -> tuple[list[LayerSpec], int]:
    """Folds each multiplication by a constant that scales only the output
    features of a conv2d or linear into that layer's weights and bias, as
    fold_batchnorm folds a batchnorm's scale: ConvNeXt's and CaiT's layer
    scale (torch `gamma * block(x)`, Keras LayerScale, ONNX Mul by an
    initializer), one elementwise pass over the block's output saved. The
    mul may read the layer through permutes (ConvNeXt's linears run
    channels-last, and the block permutes back before the scale). Every
    node on the way must feed only the next (the layer's output changes),
    and the layer must have no fused activation. `layout` places a conv's
    channel axis (1 for NCHW, last for NHWC)."""
    used = consumers(specs)
    folded: dict[int, int] = {}
    for i, s in enumerate(specs):
        other = s.weights.get("other")
        if s.op != "mul" or len(s.inputs) != 1 or other is None or s.input_shape is None:
            continue
        shape = tuple(s.input_shape)
        # Back through permutes to the producer, each node read only by the next.
        chain, reader, j = [], i, s.inputs[0]
        while not is_model_input(j) and used.get(j) == [reader] and j != output and specs[j].op == "permute":
            chain.append(j)
            reader, j = j, specs[j].inputs[0]
        if is_model_input(j) or used.get(j) != [reader] or j == output:
            continue
        producer = specs[j]
        if producer.op not in ("conv2d", "linear") or producer.attrs.get("activation") is not None:
            continue
        rank = len(shape)
        if producer.op == "conv2d":
            if rank != 4:
                continue
            axis = 1 if layout == "NCHW" else 3
        else:
            axis = rank - 1
        for p in reversed(chain):  # the feature axis' place after each permute
            dims = [d % rank for d in specs[p].attrs["dims"]]
            axis = dims.index(axis)
        features = producer.weights["weight"].shape[0]
        if shape[axis] != features or other.ndim > rank:
            continue
        aligned = (1,) * (rank - other.ndim) + tuple(other.shape)
        if any(n != 1 and k != axis for k, n in enumerate(aligned)) or aligned[axis] not in (1, features):
            continue
        scale = np.broadcast_to(np.asarray(other).reshape(aligned[axis]), (features,))
        _scale_outputs(producer, scale)
        producer.attrs["folded_scale"] = s.name
        folded[i] = s.inputs[0]
    return _remove(specs, output, folded)


def remove_identities(specs: list[LayerSpec], output: int) -> tuple[list[LayerSpec], int]:
    """Drops "identity" specs (dropout and the like at inference), wiring
    their consumers to their input."""
    aliases = {i: s.inputs[0] for i, s in enumerate(specs) if s.op == "identity"}
    return _remove(specs, output, aliases)


def fold_zero_padding(specs: list[LayerSpec], output: int) -> tuple[list[LayerSpec], int]:
    """Folds each zero pad2d (Keras ZeroPadding2D, ONNX Pad, torch F.pad)
    whose only consumer is a conv2d into that convolution's own (zero)
    padding, as exporters write an asymmetric "same" convolution: one op
    instead of two, and no padded copy of the activations. A zero pad before a max
    pool is folded too where the pad's input is non-negative (a relu's),
    where it is exact."""
    used = consumers(specs)
    folded: dict[int, int] = {}
    for i, s in enumerate(specs):
        if (
            s.op != "pad2d"
            or s.attrs.get("value", 0.0) != 0.0
            or s.attrs.get("mode", "constant") != "constant"
            or i == output
        ):
            continue
        users = used.get(i, [])
        if len(users) != 1:
            continue
        conv = specs[users[0]]
        if conv.op == "maxpool2d":
            # Zeros never win a max over a non-negative input (relu's, or a
            # clamp's from 0 up), and each window keeps one real element
            # while each side's padding is at most half the kernel.
            source = specs[s.inputs[0]] if not is_model_input(s.inputs[0]) else None
            nonnegative = source is not None and (
                source.op == "relu" or (source.op == "clamp" and source.attrs.get("min", -1.0) >= 0.0)
            )
            pads = tuple(a + b for a, b in zip(conv.attrs["padding"], s.attrs["padding"]))
            k = conv.attrs["kernel"]
            if not nonnegative or any(2 * p > k[0] for p in pads[:2]) or any(2 * p > k[1] for p in pads[2:]):
                continue
        elif conv.op != "conv2d":
            continue
        conv.attrs["padding"] = tuple(a + b for a, b in zip(conv.attrs["padding"], s.attrs["padding"]))
        conv.attrs["folded_padding"] = s.name
        if s.input_shape is not None:
            conv.input_shape = s.input_shape  # the conv now reads the unpadded tensor
        folded[i] = s.inputs[0]
    return _remove(specs, output, folded)


def prune_dead(specs: list[LayerSpec], output: int) -> tuple[list[LayerSpec], int]:
    """Drops the specs the output does not depend on (a branch a model
    computes but never uses, a flatten undone by a reshape)."""
    live, todo = set(), [output]
    while todo:
        i = todo.pop()
        if is_model_input(i) or i in live:
            continue
        live.add(i)
        todo += specs[i].inputs
    if len(live) == len(specs):
        return specs, output
    new_index = IndexMap()
    kept = []
    for i, s in enumerate(specs):
        if i in live:
            s.inputs = [new_index[j] for j in s.inputs]
            new_index[i] = len(kept)
            kept.append(s)
    return kept, new_index[output]


def _remove(specs: list[LayerSpec], output: int, alias: dict[int, int]) -> tuple[list[LayerSpec], int]:
    """Removes the specs in `alias` (index -> the index that replaces it)."""

    def resolve(i: int) -> int:
        while i in alias:
            i = alias[i]
        return i

    new_index: dict[int, int] = IndexMap()
    kept: list[LayerSpec] = []
    for i, spec in enumerate(specs):
        if i in alias:
            continue
        spec.inputs = [new_index[resolve(j)] for j in spec.inputs]
        new_index[i] = len(kept)
        kept.append(spec)
    return kept, new_index[resolve(output)]
