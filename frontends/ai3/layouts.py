"""Layouts chosen per layer inside ai3.Model.

A model comes from its framework in one memory order: NCHW from torch and
ONNX, NHWC from Keras. The core's convolutions are not equally fast in both:
oneDNN's "guess" runs its JIT kernels on NHWC but falls back to a gemm-based
implementation on NCHW for AVX2, and depthwise convolutions differ by an
order of magnitude. This pass lets the convolutions run in the other order
(the "alternative" layout) and keeps the tensors between them there, so that
a network pays one conversion on entry and, at most, one on exit:

    x (NCHW) -> permute -> conv (NHWC) -> ... -> global pool (NHWC)
             -> flatten (the same (N, C) in both) -> linear

Each spec's output is stored either in the model's layout or in the
alternative one (rank-4 tensors only). Ops that carry a layout attribute
(conv2d, pools, batchnorm2d, pad2d) run in either; elementwise ops follow
their inputs; ops that carry axes (concat, softmax, log_softmax, mean,
slice) get their axes rewritten to the new memory order; a flatten or mean
whose result is the same in both orders (a flatten after a global pool)
needs nothing. Every other op reads the model's layout, through a
conversion node (a core permute) in front of it, shared by every consumer
of the same tensor. A model's own permute between the two orders is a
no-op where its input is already stored the way it permutes to (ConvNeXt's
channels-last blocks), and is removed. The result equals the model-layout
run.

Which plan runs is `plan`:
  "default" (None): the convolutions whose algorithm was measured faster
           in the alternative layout (FASTER_IN: guess, direct and
           winograd with whole vectors of channels, in NHWC)
           run there, if that needs conversions at the model's ends only;
  "keep":  every layer in the model's layout (the framework's order);
  "convs": every convolution whose algorithm takes the alternative layout
           runs there.
In each, the tensors between moved layers stay in the alternative layout.
`fastest` builds the model under each plan, times the whole forward pass
on a sample input and keeps the fastest: per-layer timing cannot see the
conversions a plan adds or saves. Under "auto" it also builds each plan
with the core's default conv2d algorithms in place of the per-layer
answers, and keeps those where they run the whole model faster: a layer
timed alone, warm and over and over, can win that way and still lose
inside the model, where its neighbours have just filled the caches
(googlenet and efficientnet_b0 measured so on the 2-core EPYC, batch 1:
"auto" 1.08-1.5x ORT against "default" 0.96-1.05x, from one process).

The blocked nChw8c layout is not offered: the core's Tensor knows NCHW and
NHWC only, and no conv, pool, elementwise or concat kernel reads blocked
tensors, so it would be a conversion before and after every layer.
"""

from __future__ import annotations

import dataclasses
import functools
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ai3 import errors, selection
from ai3.spec import MODEL_INPUT, LayerSpec

KEEP = "keep"
CONVS = "convs"
DEFAULT = "default"
PLANS = (DEFAULT, KEEP, CONVS)

# Where a conv algorithm was measured faster than in the other layout, so
# the "default" plan moves its convs there (and only there): oneDNN's guess
# runs JIT kernels on NHWC but a gemm-based path on NCHW on AVX2 (3x3 convs
# of ResNet ~2x, depthwise ~10x; a 2-core EPYC). A conv moves when the
# algorithm it would run there (the core's pick, for "default") is one of
# these. Measured again on the AVX-512 Xeon (batch 1, float32, 2 threads,
# NHWC time / NCHW time, medians of 7 interleaved in one process, load 7.8):
#   conv                      direct  gemm  guess  impl.gemm  kn2row  smm  winograd
#   64->64 3x3 @56             0.84   1.13  0.85     1.78      1.21   1.08   1.35
#   256->256 3x3 @14           0.96   1.05  0.87     1.44      1.05   1.04   0.95
#   64->256 1x1 @56            0.63   0.59  0.49     1.49      0.35   1.81    -
#   256->64 1x1 @56            0.54   5.91  0.88     1.46      0.42   1.27    -
#   144 depthwise 3x3 @56      0.05  12.59  0.18     2.36      1.92   2.85   1.55
#   16->96 1x1 @112            0.57   1.50  0.78     2.23      2.39   2.40    -
#   3->64 7x7/2 @224           0.93   1.65  0.90     2.12      4.21   1.45    -
#   128->32 3x3 @28            0.87   1.02  0.78     1.71      1.04   1.09   1.16
# direct and guess are faster in NHWC on every one; kn2row on 1x1 convs
# only, the others nowhere, so they stay unless the plan is "convs".
# winograd too where NHWC runs it with channels in the lanes (ungrouped,
# channels in whole float32 vectors; see _faster_in). 2-core EPYC, one
# process, NHWC / NCHW, batch 1: 64->64 3x3 @56 0.53, 128->128 @28 0.50,
# 256->256 @14 0.75, 128->32 @28 0.32, 96->96 @35 0.57, 32->128 @27 0.43;
# 64->64 @56 at batch 8 0.55.
FASTER_IN = {"guess": "NHWC", "direct": "NHWC", "winograd": "NHWC"}


def _faster_in(spec: LayerSpec, algorithm: str) -> str | None:
    """The layout where `algorithm` was measured faster for this conv
    (FASTER_IN), if any. winograd's NHWC gain is its channels-in-lanes path
    (core/ops/conv2d/winograd.cc), which takes ungrouped convs whose input
    and output channels fill whole vectors of 8: the core's
    WinogradChannelsInLanes (core/ops/conv2d/conv2d.h), as conv2d's default
    rule asks it, read here from the spec's weight shape."""
    if algorithm == "winograd":
        shape = np.shape(spec.weights.get("weight"))  # (out, in / groups, kh, kw)
        if len(shape) != 4 or int(spec.attrs.get("groups", 1)) != 1 or shape[0] % 8 or shape[1] % 8:
            return None
    return FASTER_IN.get(algorithm)


# Memory order of the alternative layout, as indices into the model's:
# alt_tensor.shape[d] == model_tensor.shape[PERMS[layout][d]].
PERMS: dict[str, tuple[int, ...]] = {"NCHW": (0, 2, 3, 1), "NHWC": (0, 3, 1, 2)}
OTHER = {"NCHW": "NHWC", "NHWC": "NCHW"}

# Ops whose core layer takes a `layout` attribute (the kernel indexes the
# tensor through it), so they run in either order.
LAYOUT_OPS = ("conv2d", "maxpool2d", "avgpool2d", "adaptiveavgpool2d", "adaptivemaxpool2d", "batchnorm2d", "pad2d")
# One input, one output of the same shape, each element on its own: the
# memory order does not matter.
ELEMENTWISE = ("relu", "clamp", "sigmoid", "silu", "tanh", "gelu", "hardswish", "hardsigmoid")
# Broadcasting binary ops: two rank-4 operands permuted alike broadcast alike.
BINARY = ("add", "sub", "mul", "div")
# Ops with one `axis` attribute, rewritten to the alternative order.
AXIS_OPS = ("softmax", "log_softmax", "slice")


@dataclass
class LayoutDecision:
    """What the pass did: the plan, each spec's layout (by name; specs it
    left in the model's layout are not listed) and the conversions it
    added (their names)."""

    plan: str
    model_layout: str
    layouts: dict[str, str] = field(default_factory=dict)
    conversions: list[str] = field(default_factory=list)
    # The model's own permutes the layout made no-ops (_elided_permute).
    elided: list[str] = field(default_factory=list)
    # Filled by `fastest`: each candidate's measured seconds per forward
    # pass, by its label (candidate_label: the plan, and which conv2d
    # algorithms it ran).
    seconds: dict[str, float] = field(default_factory=dict)
    # Where the convolutions' algorithms came from: "" for the selector's
    # own answers, or the selector whose answers ran the whole model faster
    # ("default": `fastest`'s conv alternatives).
    conv2d: str = ""
    # The core Model's graph fusion (core/graph.h: the in-place residual
    # add and the relu folded into it, the zero-copy concat, the concat ->
    # batchnorm2d fold): on unless "auto" measured it slower (choose_fusion)
    # or a replayed plan says off; its measured seconds, "on" / "off".
    fusion: bool = True
    fusion_seconds: dict[str, float] = field(default_factory=dict)

    @property
    def candidate(self) -> str:
        """This decision's label among the candidates `fastest` timed (the
        keys of `seconds`)."""
        return candidate_label(self.plan, self.conv2d)

    def __str__(self) -> str:
        return describe(dataclasses.asdict(self))


def candidate_label(plan: str, conv2d: str = "") -> str:
    """A candidate of the whole-model timing: the layout plan, and the
    selector its conv2d algorithms came from where that is not the
    caller's (e.g. "convs, conv2d default")."""
    return f"{plan}, conv2d {conv2d}" if conv2d else plan


def parse_candidate(label: str) -> tuple[str, str]:
    """candidate_label's inverse: (plan, conv2d selector or "")."""
    plan, _, conv2d = label.partition(", conv2d ")
    return plan, conv2d


def describe(decision: dict[str, Any]) -> str:
    """A LayoutDecision (as a dict: a Plan keeps it so) in a line, e.g.
    "layout plan 'default': 60 layers in NHWC, 1 conversions; graph fusion
    on; timed: default 9.20 ms, keep 21.40 ms". The times come last: there
    are up to six, and a table caption wraps."""
    moved, conversions = len(decision.get("layouts", {})), len(decision.get("conversions", []))
    other = OTHER.get(decision.get("model_layout", ""), "?")
    text = f"layout plan '{decision.get('plan')}': {moved} layers in {other}, {conversions} conversions"
    if decision.get("elided"):
        text += f", {len(decision['elided'])} permutes elided"
    if decision.get("conv2d"):
        text += f", conv2d algorithms of '{decision['conv2d']}' (faster end to end)"
    text += "; graph fusion " + ("on" if decision.get("fusion", True) else "off")
    fusion_seconds = decision.get("fusion_seconds") or {}
    if fusion_seconds:
        text += " (" + ", ".join(f"{k}: {s * 1e3:.2f} ms" for k, s in sorted(fusion_seconds.items())) + ")"
    seconds = decision.get("seconds") or {}
    if seconds:
        text += "; timed: " + ", ".join(
            f"{p} {s * 1e3:.2f} ms" for p, s in sorted(seconds.items(), key=lambda kv: kv[1])
        )
    return text


def output_ranks(specs: Sequence[LayerSpec], shapes: dict[int, tuple[int, ...]]) -> dict[int, int | None]:
    """Each spec's output rank: from its recorded shape, else by the op's
    rule (a conv or pool gives rank 4; elementwise ops, concat and
    broadcasting binary ops keep their inputs' rank); None where unknown."""
    ranks: dict[int, int | None] = {j: len(shape) for j, shape in shapes.items()}
    for i, s in enumerate(specs):
        if i in ranks:
            continue
        inputs = [ranks.get(j) for j in s.inputs]
        if s.op in LAYOUT_OPS:
            ranks[i] = 4
        elif s.op in ELEMENTWISE or s.op in AXIS_OPS or s.op == "concat":
            ranks[i] = inputs[0] if inputs else None
        elif s.op == "permute":
            ranks[i] = len(s.attrs.get("dims", ())) or None
        elif s.op in BINARY and None not in inputs:
            other = [np.ndim(s.weights["other"])] if "other" in s.weights else []
            ranks[i] = max(inputs + other) if inputs else None
        else:
            ranks[i] = None
    return ranks


def output_shapes(specs: Sequence[LayerSpec], input_shape: Sequence[int] | None) -> dict[int, tuple[int, ...]]:
    """Each spec's output shape (model order) where some consumer records it
    as its input shape (first input), plus the model input's."""

    def dims(shape: Sequence[Any]) -> tuple[Any, ...]:
        return tuple(None if d is None else int(d) for d in shape)  # None: dynamic

    shapes: dict[int, tuple[int, ...]] = {}
    if input_shape is not None:
        shapes[MODEL_INPUT] = dims(input_shape)
    for s in specs:
        if s.inputs and s.input_shape is not None and s.inputs[0] not in shapes:
            shapes[s.inputs[0]] = dims(s.input_shape)
    return shapes


def _rank_in(s: LayerSpec, ranks: dict[int, int | None]) -> int | None:
    """The rank of a spec's (first) input: recorded, else inferred
    (output_ranks). The ops that take a layout read rank-4 tensors only
    (the core refuses any other), so theirs is 4 even where no shape was
    recorded: swap_backend without sample_input_shape records none."""
    if s.input_shape is not None:
        return len(s.input_shape)
    if s.op in LAYOUT_OPS:
        return 4
    return ranks.get(s.inputs[0]) if s.inputs else None


def _output_shape(
    j: int, specs: Sequence[LayerSpec], shapes: dict[int, tuple[int, ...]], layout: str
) -> tuple[Any, ...] | None:
    """Output j's shape (model order) as recorded, else what its op fixes
    without shapes: an adaptive pool to (1, 1) gives (N, C, 1, 1) (NHWC:
    (N, 1, 1, C)) with N and C unknown (None). That is what lets a flatten
    after a global pool read either order with no shapes recorded."""
    if j in shapes:
        return shapes[j]
    if j == MODEL_INPUT:
        return None
    s = specs[j]
    if s.op in ("adaptiveavgpool2d", "adaptivemaxpool2d") and tuple(s.attrs.get("output_size", ())) == (1, 1):
        return (None, None, 1, 1) if layout == "NCHW" else (None, 1, 1, None)
    return None


def permuted_shape(shape: Sequence[int] | None, perm: Sequence[int]) -> tuple[int, ...] | None:
    """A rank-4 shape read in the order `perm` (PERMS' meaning); another
    rank as it is; None as None."""
    if shape is None or len(shape) != 4:
        return None if shape is None else tuple(shape)
    return tuple(shape[p] for p in perm)


def _same_memory(shape: Sequence[int] | None, perm: Sequence[int]) -> bool:
    """Whether a tensor of this (model-order) shape has the same bytes in
    both orders: its non-unit dims come in the same order (e.g. a global
    pool's (N, C, 1, 1))."""
    if shape is None or len(shape) != 4:
        return False
    # An unknown dim (None) counts as one that is not 1: if the orders agree
    # so, they agree with any of those dims dropped.
    model_order = [d for d in range(4) if shape[d] != 1]
    alt_order = [d for d in perm if shape[d] != 1]
    return model_order == alt_order


def _runs_there(spec: LayerSpec, algorithm: str, dtype: np.dtype, layout: str, probe: Callable[..., Any]) -> str:
    """The algorithm the conv would run in `layout` ("default" resolved by
    the core), or "" where it cannot run there."""
    try:
        return str(getattr(probe(spec, algorithm, dtype, layout), "algorithm", algorithm))
    except errors.Error:
        return ""


def _takes_layout(spec: LayerSpec, algorithm: str, dtype: np.dtype, layout: str, probe: Callable[..., Any]) -> bool:
    """Whether `algorithm` can run this conv in `layout` (its own check in
    the core: smm and kn2row, for one, take NCHW only)."""
    if algorithm in (selection.DEFAULT, selection.AUTO):
        return True  # both pick among the algorithms that take the layer
    try:
        probe(spec, algorithm, dtype, layout)
    except errors.Error:  # not applicable; anything else the build reports
        return False
    return True


def choose(
    specs: list[LayerSpec],
    output: int,
    chosen: dict[int, str],
    *,
    layout: str,
    dtype: Any,
    plan: str | None = None,
    algos: Any = None,
    sample_input_shape: Sequence[int] | None = None,
    make_layer: Callable[..., Any] | None = None,
    device: str = "cpu",
    recorder: Any = None,
) -> tuple[list[LayerSpec], int, dict[int, str]]:
    """The layout pass (see the module doc). Runs in ai3.model.build after
    the algorithms are chosen and activations fused. Sets attrs["layout"] on
    the specs it moves to the alternative layout (and permutes their
    recorded input shapes, axes and constant operands), and inserts
    "permute" specs as conversions. Under the "convs" plan with the "auto"
    conv2d selector, the moved convolutions are timed again in their new
    layout. Returns the new
    specs, output index and per-spec algorithms; `decision(specs)` tells
    what was done."""
    plan = DEFAULT if plan is None else plan
    if plan not in PLANS:
        raise errors.InvalidArgument(f"layout plan must be one of {', '.join(repr(p) for p in PLANS)}, got {plan!r}")
    if plan == KEEP or layout not in PERMS or device != "cpu" or make_layer is None:
        return specs, output, chosen
    dtype = np.dtype(dtype)
    if plan == DEFAULT and OTHER[layout] not in FASTER_IN.values():
        return specs, output, chosen  # nothing measured faster in the other layout
    perm = PERMS[layout]
    alt = OTHER[layout]
    inverse = tuple(int(d) for d in np.argsort(perm))
    shapes = output_shapes(specs, sample_input_shape)
    ranks = output_ranks(specs, shapes)

    # 1. Which specs store their output in the alternative layout. Under
    # the "convs" plan and the "auto" conv2d selector a conv may move
    # whatever it was timed to run (in the model's layout): it is timed
    # again where it moves. The "default" plan moves the convs whose
    # algorithm (as selected, "auto" included) is faster there.
    if plan == DEFAULT:  # only the convs whose algorithm there was measured faster there
        eligible = {
            i: name
            for i, name in chosen.items()
            if specs[i].op == "conv2d"
            and _faster_in(specs[i], _runs_there(specs[i], name, dtype, alt, make_layer)) == alt
        }
    elif _per_layout_convs(algos):
        eligible = {i: selection.AUTO for i, s in enumerate(specs) if s.op == "conv2d"}
    else:
        eligible = chosen

    def place(elide: bool) -> tuple[dict[int, bool], dict[int, bool], set[int], set[int]]:
        # Each spec's output layout, the layout it reads, the permutes that
        # vanish (below) and the tensors converted between two layers.
        is_alt: dict[int, bool] = {MODEL_INPUT: False}
        elided: set[int] = set()
        for i, s in enumerate(specs):
            to_alt = _elided_permute(s, is_alt, ranks, perm, inverse) if elide else None
            if to_alt is None:
                is_alt[i] = _wants_alt(s, i, is_alt, ranks, eligible, dtype, alt, make_layer)
            else:
                is_alt[i] = to_alt
                elided.add(i)
        wants = {}
        for i, s in enumerate(specs):
            if i in elided:  # reads its input as it is stored
                wants[i] = is_alt[s.inputs[0]]
                continue
            shape_in = _output_shape(s.inputs[0], specs, shapes, layout) if s.inputs else None
            wants[i] = is_alt[i] or _reads_alt(s, is_alt, shape_in, ranks, perm)
        inner = {j for i, s in enumerate(specs) for j in s.inputs if j != MODEL_INPUT and is_alt[j] != wants[i]}
        return is_alt, wants, elided, inner

    # Unmeasured, the default plan only takes a plan that converts at the
    # model's ends: each conversion in between is a pass over memory that
    # the moved convs must win back, which only `fastest` can tell. Where
    # eliding the model's own permutes would add such a conversion, the
    # plan is tried again with them kept.
    is_alt, wants, elided, inner = place(elide=True)
    if plan == DEFAULT and inner:
        is_alt, wants, elided, inner = place(elide=False)
    if plan == DEFAULT and inner:
        return specs, output, chosen

    # 2. The conversions each spec needs in front of it, and the rewrites.
    conversions: dict[tuple[int, bool], LayerSpec] = {}  # (producer, to alt?) -> permute spec
    before: dict[int, list[LayerSpec]] = {}
    new_inputs: dict[int, list[Any]] = {}  # spec -> its inputs (ints, or a conversion spec)

    def converted(j: int, to_alt: bool, consumer: int) -> Any:
        key = (j, to_alt)
        if key not in conversions:
            source = "input" if j == MODEL_INPUT else specs[j].name
            shape = shapes.get(j)
            conv = LayerSpec(
                f"{source}.to_{(alt if to_alt else layout).lower()}",
                "permute",
                [j],
                {"dims": list(perm if to_alt else inverse)},
                input_shape=None if shape is None else (shape if to_alt else permuted_shape(shape, perm)),
            )
            conversions[key] = conv
            before.setdefault(consumer, []).append(conv)
        return conversions[key]

    for i, s in enumerate(specs):
        if i in elided:
            s.attrs["elided_by_layout"] = True
            continue
        want = wants[i]
        inputs: list[Any] = []
        for j in s.inputs:
            inputs.append(j if is_alt[j] == want else converted(j, want, i))
        new_inputs[i] = inputs
        if want:
            _rewrite(s, perm, alt, shapes)
            if not is_alt[i]:  # reads the alternative layout, writes the model's
                s.attrs.pop("memory_layout")

    # 3. The new list: conversions just before their first consumer.
    order: list[LayerSpec] = []
    index_of: dict[int, int] = {MODEL_INPUT: MODEL_INPUT}
    new_chosen: dict[int, str] = {}
    placed: dict[int, int] = {}  # id(conversion) -> index
    for i, s in enumerate(specs):
        if i in elided:  # its consumers read its input's buffer
            index_of[i] = index_of[s.inputs[0]]
            continue
        for conv in before.get(i, []):
            conv.inputs = [index_of[conv.inputs[0]]]
            placed[id(conv)] = len(order)
            new_chosen[len(order)] = selection.DEFAULT
            order.append(conv)
        s.inputs = [placed[id(x)] if isinstance(x, LayerSpec) else index_of[x] for x in new_inputs[i]]
        index_of[i] = len(order)
        if i in chosen:
            new_chosen[len(order)] = chosen[i]
        order.append(s)
    new_output = index_of[output]
    if is_alt[output]:  # the caller gets the model's layout back
        back = LayerSpec(
            f"{specs[output].name}.to_{layout.lower()}",
            "permute",
            [new_output],
            {"dims": list(inverse), "layout_conversion": True},
            input_shape=permuted_shape(shapes.get(output), perm),
        )
        new_chosen[len(order)] = selection.DEFAULT
        order.append(back)
        new_output = len(order) - 1
    for conv in conversions.values():
        conv.attrs["layout_conversion"] = True
    if plan == CONVS:
        _reselect_moved_convs(order, new_chosen, algos, dtype, make_layer, device, recorder)
    return order, new_output, new_chosen


def _elided_permute(
    s: LayerSpec,
    is_alt: dict[int, bool],
    ranks: dict[int, int | None],
    perm: Sequence[int],
    inverse: Sequence[int],
) -> bool | None:
    """A model's own permute that the alternative layout turns into a
    no-op, and so removes: whether its result is stored in the alternative
    layout, or None where it is a real permute. ConvNeXt's blocks (and
    LayerNorm2d) run `x.permute(0, 2, 3, 1)` to reach channels-last and
    `.permute(0, 3, 1, 2)` to come back. With x stored NHWC, the first
    permute's result (model order N,H,W,C) has the very bytes of x, and the
    second's result stored NHWC has the bytes of its input: both vanish,
    where the pass would otherwise add a conversion back in front of each
    and run the permute as well (two copies for none)."""
    # Never of the model's input: an elided permute's consumers (and the
    # caller, where it is the output) read its input's buffer instead.
    if s.op != "permute" or len(s.inputs) != 1 or s.inputs[0] == MODEL_INPUT or _rank_in(s, ranks) != 4:
        return None
    dims = tuple(int(d) % 4 for d in s.attrs.get("dims", ()))
    if is_alt[s.inputs[0]]:
        return False if dims == tuple(perm) else None
    # Into the alternative layout only once the plan holds tensors there:
    # its consumers (a layer-scale mul, a residual add) then follow.
    return True if dims == tuple(inverse) and any(is_alt.values()) else None


def _wants_alt(
    s: LayerSpec,
    i: int,
    is_alt: dict[int, bool],
    ranks: dict[int, int | None],
    chosen: dict[int, str],
    dtype: np.dtype,
    alt: str,
    make_layer: Callable[..., Any],
) -> bool:
    """Whether spec i stores its output in the alternative layout. Greedy,
    in topological order: convolutions go there when their algorithm takes
    it; the ops that can run there follow their inputs."""
    inputs_alt = [is_alt[j] for j in s.inputs]
    rank_in = _rank_in(s, ranks)
    if s.op == "conv2d":
        if rank_in != 4 or "layout" in s.attrs:  # already placed by the frontend
            return False
        return i in chosen and _takes_layout(s, chosen[i], dtype, alt, make_layer)
    if not any(inputs_alt):
        return False
    if s.op in LAYOUT_OPS or s.op in ELEMENTWISE or s.op in AXIS_OPS:
        return len(s.inputs) == 1 and rank_in == 4
    if s.op == "concat":
        return all(ranks.get(j) == 4 for j in s.inputs)
    if s.op in BINARY:
        if "other" in s.weights:
            other = np.ndim(s.weights["other"])
            return len(s.inputs) == 1 and rank_in == 4 and other <= 4
        return len(s.inputs) >= 2 and all(ranks.get(j) == 4 for j in s.inputs)
    if s.op == "mean":
        # keepdim: a rank-4 result in the alternative order.
        return rank_in == 4 and bool(s.attrs.get("keepdim", False))
    return False


def _reads_alt(
    s: LayerSpec,
    is_alt: dict[int, bool],
    input_shape: tuple[Any, ...] | None,
    ranks: dict[int, int | None],
    perm: Sequence[int],
) -> bool:
    """Ops whose output is in the model's layout but which read the
    alternative one as it is: a flatten or a mean (without keepdim) whose
    result is the same in both orders. `input_shape` is the input's shape
    in the model's order (_output_shape), where known."""
    shape = s.input_shape if s.input_shape is not None else input_shape
    if len(s.inputs) != 1 or not is_alt[s.inputs[0]] or _rank_in(s, ranks) != 4:
        return False
    if s.op == "flatten":
        start, end = s.attrs.get("start_dim", 1), s.attrs.get("end_dim", -1)
        return start == 1 and end in (-1, 3) and _same_memory(shape, perm)
    if s.op == "mean" and not s.attrs.get("keepdim", False):
        axes = [a % 4 for a in (s.attrs.get("axes") or range(4))]
        kept_model = [d for d in range(4) if d not in axes]
        kept_alt = [d for d in perm if d not in axes]
        return kept_model == kept_alt
    return False


def _rewrite(s: LayerSpec, perm: Sequence[int], alt: str, shapes: dict[int, tuple[int, ...]]) -> None:
    """Rewrites a spec that runs in (or reads) the alternative layout: its
    layout attribute, its axes, its constant operand and its recorded input
    shape (for "auto" timing and plans)."""
    axis_map = {int(m): a for a, m in enumerate(perm)}  # model axis -> alt axis
    if s.op in LAYOUT_OPS:
        s.attrs["layout"] = alt
    if s.op in AXIS_OPS or s.op == "concat":
        axis = s.attrs.get("axis", -1)
        s.attrs["axis"] = axis_map[axis % 4]
    if s.op == "mean":
        axes = s.attrs.get("axes")
        if axes:  # empty: every axis, in either order
            s.attrs["axes"] = sorted(axis_map[a % 4] for a in axes)
    if s.op in BINARY and "other" in s.weights:
        other = np.asarray(s.weights["other"])
        s.weights["other"] = np.ascontiguousarray(other.reshape((1,) * (4 - other.ndim) + other.shape).transpose(perm))
    s.attrs["memory_layout"] = alt
    s.input_shape = permuted_shape(s.input_shape, perm)


def _reselect_moved_convs(
    specs: list[LayerSpec],
    chosen: dict[int, str],
    algos: Any,
    dtype: np.dtype,
    make_layer: Callable[..., Any],
    device: str,
    recorder: Any = None,
) -> None:
    """Under the "auto" or "predict" conv2d selector, the moved convolutions
    were chosen for the model's layout; choose again for the one they now
    run in (timed again, or predicted from the new layout), and tell
    ai3.plan's recorder, whose later entries win."""
    selector = _per_layout_convs(algos)
    if selector is None:
        return
    moved = [i for i, s in enumerate(specs) if s.op == "conv2d" and "layout" in s.attrs]
    if not moved:
        return
    candidates = [selection.spec_candidate(specs[i], make_layer, dtype, specs[i].attrs["layout"]) for i in moved]
    names = selection.select("conv2d", selector, candidates, allow_keep=False, device=device, recorder=recorder)
    chosen.update(zip(moved, names))


def _per_layout_convs(algos: Any) -> str | None:
    """conv2d's selector where it answers per layer and layout ("auto" times
    the layer there, "predict" reads the layout as a feature), so a conv the
    "convs" plan moves may run anything and is chosen again where it
    lands; None for other selectors, whose names stand."""
    if algos is None:
        return None
    selector = selection.conv2d_selector(algos)
    return selector if selector in (selection.AUTO, selection.PREDICT) else None


def decision(specs: Sequence[LayerSpec], model: Any, plan: str, layout: str) -> LayoutDecision:
    """What `choose` did to these specs (the ones given to ai3.model.build,
    which the pass marks) and which conversion nodes `model` runs."""
    d = LayoutDecision(plan, layout)
    d.layouts = {s.name: s.attrs["memory_layout"] for s in specs if "memory_layout" in s.attrs}
    d.elided = [s.name for s in specs if s.attrs.get("elided_by_layout")]
    suffixes = tuple(f".to_{name.lower()}" for name in PERMS)
    d.conversions = [name for name, op, _ in model.layers() if op == "permute" and name.endswith(suffixes)]
    return d


def copy_specs(specs: Sequence[LayerSpec]) -> list[LayerSpec]:
    """Copies the passes may change (inputs, attrs, the weights dict),
    sharing the weight arrays: one build's passes must not leak into the
    next candidate's."""
    return [dataclasses.replace(s, inputs=list(s.inputs), attrs=dict(s.attrs), weights=dict(s.weights)) for s in specs]


# Rounds of time_alternately in `fastest`: each candidate runs a block of
# calls in turn, and keeps its fastest block's median. The load on these
# shared machines comes and goes over seconds and only ever adds time (a
# whole model measured 8 ms in one block and 12 ms in the next, in one
# process): the fastest block is the one least disturbed, and every
# candidate gets several tries at one.
TIMING_ROUNDS = 5


def time_alternately(
    calls: dict[str, Callable[[], Any]], rounds: int, per_block: int, warmup: int = 2, pause_s: float = 0.0
) -> dict[str, float]:
    """Seconds per call of each of `calls`, timed side by side: `rounds`
    rounds visit every call in turn, each block pausing `pause_s` (another
    runtime's idle threads may still spin), making `warmup` untimed calls
    (the others have just evicted this one's data from the caches) and then
    `per_block` timed ones; a call's time is the smallest of its blocks'
    medians. //bench times the frameworks against ai3 with this too."""
    best: dict[str, float] = {name: float("inf") for name in calls}
    for _ in range(max(1, rounds)):
        for name, fn in calls.items():
            if pause_s > 0:
                time.sleep(pause_s)
            for _ in range(warmup):
                fn()
            block = []
            for _ in range(max(1, per_block)):
                start = time.perf_counter()
                fn()
                block.append(time.perf_counter() - start)
            best[name] = min(best[name], float(np.median(block)))
    return best


# fastest() times the candidates within this factor of the fastest again.
RETIME_MARGIN = 1.15


def build_candidate(
    build: Callable[..., Any],
    specs: Sequence[LayerSpec],
    output: int,
    algos: Any,
    plan: str,
    conv2d: str = "",
    **build_kwargs: Any,
) -> Any:
    """One candidate of the whole-model choice: `build` (ai3.model.build)
    on a copy of the specs under layout plan `plan`, with its
    LayoutDecision, whose conv2d names where its convs' algorithms came
    from ("" for `algos`' own selector)."""
    copies = copy_specs(specs)
    model = build(copies, output, algos, layout_plan=plan, **build_kwargs)
    model.layout_decision = decision(copies, model, plan, build_kwargs.get("layout", "NCHW"))
    model.layout_decision.conv2d = conv2d
    return model


def check_same_output(reference: np.ndarray, y: np.ndarray, label: str) -> None:
    """A candidate's output must be the first candidate's: a layout plan or
    an algorithm choice that changed the result would be a bug, not a
    speed-up."""
    if reference.shape != y.shape or not np.allclose(reference, y, rtol=1e-3, atol=1e-3):
        raise errors.InternalError(
            f"layout candidate '{label}' changed the model's output; this is a bug in ai3.layouts"
        )


def fastest(
    build: Callable[..., Any],
    specs: Sequence[LayerSpec],
    output: int,
    algos: Any,
    sample_input: np.ndarray,
    *,
    plans: Sequence[str] = (KEEP, DEFAULT, CONVS),
    conv2d_alternatives: dict[str, Any] | None = None,
    repeats: int = 10,
    **build_kwargs: Any,
) -> Any:
    """Builds the model under each layout plan (`build` is ai3.model.build,
    called on a copy of the specs with `layout_plan=`), and under each plan
    again with each of `conv2d_alternatives` (selector name -> the `algos`
    that use it for conv2d), times whole forward passes on `sample_input`
    (time_alternately) and returns the fastest model, with its
    LayoutDecision, every candidate's time included, as
    `model.layout_decision`. Builds that come out the same (the same layers,
    algorithms and layouts) are timed once. The candidates' outputs are
    checked against the first's: a plan that changed the result would be a
    bug, not a speed-up. The candidates are all alive while they are timed
    (up to six builds of the model's weights)."""
    variants = [("", algos)] + list((conv2d_alternatives or {}).items())
    built: dict[str, Any] = {}
    reference: np.ndarray | None = None
    seen: list[Any] = []
    for conv2d, variant in variants:
        for p in plans:
            model = build_candidate(build, specs, output, variant, p, conv2d, **build_kwargs)
            d = model.layout_decision
            same_as = (d.layouts, d.elided, model.layers())
            if same_as in seen:  # the same model as an earlier candidate's
                continue
            seen.append(same_as)
            y = np.asarray(model(sample_input))
            if reference is None:
                reference = y
            else:
                check_same_output(reference, y, d.candidate)
            built[d.candidate] = model
    rounds = min(TIMING_ROUNDS, max(repeats, 1))
    per_block = -(-max(repeats, 1) // rounds)
    calls = {label: functools.partial(m, sample_input) for label, m in built.items()}
    seconds = time_alternately(calls, rounds, per_block=per_block)
    # Candidates within RETIME_MARGIN of the fastest are timed again and
    # keep the lower of their two times (a busy moment only adds time): one
    # timing of a near tie cached a plan 15-20% slower than another for
    # densenet121 and efficientnet_b0 at batch 8 (stop 32).
    best = min(seconds.values())
    close = {label: call for label, call in calls.items() if seconds[label] <= best * RETIME_MARGIN}
    if len(close) > 1:
        again = time_alternately(close, rounds, per_block=per_block)
        seconds.update({label: min(seconds[label], t) for label, t in again.items()})
    model = built[min(seconds, key=seconds.get)]
    model.layout_decision.seconds = seconds
    return model


# The whole-model candidate whose convs each run, of two builds' algorithms,
# the one that ran faster inside the model (compose_in_model; ai3.model).
IN_MODEL = "faster inside the model"

# A conv keeps the picks model's algorithm unless the other model's node ran
# it at most this fraction of the picks' time inside the model (per-node
# medians carry a few percent of noise).
IN_MODEL_MARGIN = 0.95


_VIEW_OPS = ("reshape", "flatten", "slice", "permute")


def node_seconds(model: Any, x: np.ndarray, repeats: int) -> dict[str, float]:
    """Each node's median seconds inside whole forward passes (ai3.profile),
    by name; nodes another node's kernel runs (a residual add fused into its
    conv, a depthwise conv fused into its pointwise one) and nodes that
    such a node is fused into are left out: their times are not their own."""
    from ai3 import profile

    p = profile.profile(model, x, repeats)  # planned: fused_into answers
    layers = model.layers()
    mixed = set()
    for i, (name, op, _) in enumerate(layers):
        into = model._core.fused_into(i)
        # A view, or a result written into its slice of a concat, does its
        # own work only.
        if into < 0 or op in _VIEW_OPS or layers[into][1] == "concat":
            continue
        mixed.update((name, layers[into][0]))
    return {n.name: n.seconds for n in p.nodes if n.name not in mixed and n.seconds > 0}


def compose_in_model(
    picks: Any, other: Any, names: Sequence[str], x: np.ndarray, repeats: int = 10
) -> dict[str, str] | None:
    """Per-layer choice made inside the model: `picks` and `other` are two
    builds of one model under one layout plan whose layers `names` ran
    different algorithms (e.g. "auto"'s picks, timed per layer alone, and
    "default"'s). Each build is profiled twice, alternately, and each layer
    keeps the lower of its two per-node medians; a layer takes `other`'s
    algorithm where that ran it in at most IN_MODEL_MARGIN of the picks'
    time. Returns {name: algorithm} for every one of `names` both builds
    have, or None when no layer would change.

    Why: a layer timed alone runs with its weights and workspace hot in
    cache; inside a forward pass its weights come back from L3 or memory,
    and winograd's transformed weights are 4x the raw ones. googlenet at
    b1 (2-core Xeon): inception4e's 3x3 conv ran winograd in 0.36-0.41 ms
    alone and 0.74 ms inside the model, where ORT's ran 0.65; with guess
    for it and 4c the model ran 10.38-10.66 ms a forward against
    10.54-11.07. densenet121 at b1 kept the mixed build: 23.03 ms against
    23.48 for "auto"'s own picks."""
    algorithm = [{n: a for n, _, a in m.layers()} for m in (picks, other)]
    both = [n for n in names if n in algorithm[0] and n in algorithm[1]]
    differ = {n for n in both if algorithm[0][n] != algorithm[1][n]}
    if not differ:
        return None
    seconds: list[dict[str, float]] = [{}, {}]
    for _ in range(2):
        for m, best in zip((picks, other), seconds):
            for name, t in node_seconds(m, x, repeats).items():
                best[name] = min(t, best.get(name, t))
    chosen: dict[str, str] = {}
    changed = False
    for name in both:
        mine, theirs = algorithm[0][name], algorithm[1][name]
        chosen[name] = mine
        t_mine, t_theirs = seconds[0].get(name), seconds[1].get(name)
        if name in differ and t_mine and t_theirs and t_theirs <= IN_MODEL_MARGIN * t_mine:
            chosen[name] = theirs
            changed = True
    return chosen if changed else None


# The graph fusion choices "auto" measures (choose_fusion), as cached.
FUSION_CHOICES = ("on", "off")
# Off is kept only when it measured this much faster than on (its time
# below on's times this): fusion also saves activation memory, and on a
# loaded machine a difference of a few percent is the load's (a resnet18
# timed at load 14 came out "off" by noise).
FUSION_OFF_MARGIN = 0.95


def set_fusion(model: Any, on: bool) -> None:
    """Turns `model`'s graph fusion (core/graph.h) on or off and records it
    in its layout decision (which ai3.plan keeps)."""
    model._core.set_fusion(bool(on))
    model.layout_decision.fusion = bool(on)


def time_fusion(model: Any, x: np.ndarray, repeats: int = 10) -> dict[str, float]:
    """Median seconds of a forward pass of `model` with graph fusion on and
    off, the two timed alternately so that a change in the machine's load
    falls on both; the outputs must agree (fusion only moves where results
    are written). Leaves fusion on."""
    core = model._core
    outputs, samples = {}, {choice: [] for choice in FUSION_CHOICES}
    for choice in FUSION_CHOICES:
        core.set_fusion(choice == "on")
        outputs[choice] = np.asarray(model(x))  # plans, and warms up
    if not np.allclose(outputs["on"], outputs["off"], rtol=1e-4, atol=1e-5):
        raise errors.InternalError("graph fusion changed the model's output; this is a bug in ai3.Model")
    for _ in range(repeats):
        for choice in FUSION_CHOICES:
            core.set_fusion(choice == "on")
            model(x)  # replans after the switch
            start = time.perf_counter()
            model(x)
            samples[choice].append(time.perf_counter() - start)
    core.set_fusion(True)
    return {choice: float(np.median(v)) for choice, v in samples.items()}


def choose_fusion(model: Any, key: dict[str, Any], sample_input_shape: Sequence[int], dtype: Any) -> None:
    """ "auto" that sees the whole model, for graph fusion: whole forward
    passes of `model` timed with it on and off (time_fusion), the faster
    kept (on unless off wins by FUSION_OFF_MARGIN) and recorded in model.layout_decision. The
    choice is cached on disk under `key` (the model's layout key, marked
    as the fusion choice), so a second build times nothing."""
    from ai3 import tuning

    fusion_key = {**key, "params": {**key["params"], "choice": "graph_fusion"}}
    cached = tuning.cache_load(fusion_key, FUSION_CHOICES)
    if cached is not None:
        seconds = {m.algorithm: m.seconds for m in cached.measurements if m.timed}
        choice = cached.choice
    else:
        x = np.random.default_rng(0).standard_normal(tuple(int(d) for d in sample_input_shape)).astype(dtype)
        seconds = time_fusion(model, x)
        choice = "off" if seconds["off"] < seconds["on"] * FUSION_OFF_MARGIN else "on"
        measured = [tuning.Measurement(c, seconds[c], 1) for c in FUSION_CHOICES]
        tuning.cache_store(fusion_key, tuning.TuneResult(choice, measured))
    set_fusion(model, choice == "on")
    model.layout_decision.fusion_seconds = seconds
