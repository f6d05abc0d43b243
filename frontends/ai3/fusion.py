"""Fusing activations into the convolution, linear or batchnorm layer before
them.

A ReLU, ReLU6 or clamp whose only input is a conv2d / conv3d / linear /
batchnorm2d that nothing else reads is folded into that layer as an ``activation`` attribute: the
core's algorithms clamp each output element in their epilogue, as they write
it (core/math/epilogue.h), so the pair costs one pass over memory instead of
two. Together with ``spec.fold_batchnorm`` this makes conv + BatchNorm + ReLU
one core layer. A SiLU, sigmoid, HardSwish or GELU folds the same way, as
the layer's ``activation_fn`` (EfficientNet's conv + BN + SiLU, MobileNetV3's
conv + BN + HardSwish, the sigmoid gate of a squeeze-excite block, a
transformer MLP's linear + GELU), on the
CPU: the CUDA algorithms fuse clamps only. (An ONNX file's ``x * sigmoid(x)``
reaches this pass as a silu: frontends/ai3/onnx/patterns.py.)

The pass runs in ``ai3.model.build`` after the selection layer has chosen an
algorithm per spec (so "auto" times the layers as the user wrote them) and
before the core layers are made.
"""

from __future__ import annotations

from ai3.spec import LayerSpec, _remove, consumers

# Ops whose core layers take an activation attribute. A batchnorm2d left
# after spec.fold_batchnorm (one with no conv before it: DenseNet's
# pre-activation BN -> ReLU -> conv, 10-13% of densenet121 in ai3.Model's
# profile) applies it in its one pass over memory.
FUSABLE_PRODUCERS = ("conv2d", "conv3d", "linear", "batchnorm2d")
# Algorithms that are the user's own code: they get the weights and the
# attributes but nobody promises they apply the activation, so nothing is
# fused into them.
UNFUSABLE_ALGORITHMS = ("custom",)


def activation_bounds(spec: LayerSpec) -> tuple[float, float] | None:
    """The (min, max) clamp a relu / clamp spec computes, or None for any
    other spec."""
    if spec.op == "relu":
        return 0.0, float("inf")
    if spec.op == "clamp":
        lo = spec.attrs.get("min")
        hi = spec.attrs.get("max")
        return (
            float("-inf") if lo is None else float(lo),
            float("inf") if hi is None else float(hi),
        )
    return None


# Elementwise ops the core's CPU epilogues apply before the clamp, as the
# "activation_fn" attribute of conv2d / linear (the op's name is the value;
# a gelu's is its form's, "gelu" or "gelu_tanh").
FUSABLE_FUNCTIONS = ("silu", "sigmoid", "hardswish", "gelu")


def activation_function(spec: LayerSpec) -> str | None:
    """The "activation_fn" a silu / sigmoid / hardswish / gelu spec fuses
    as, or None for any other spec."""
    if spec.op not in FUSABLE_FUNCTIONS:
        return None
    if spec.op == "gelu":
        return "gelu_tanh" if spec.attrs.get("approximate", "none") == "tanh" else "gelu"
    return spec.op


def _has_activation(spec: LayerSpec) -> bool:
    return "activation" in spec.attrs or spec.attrs.get("activation_fn", "identity") != "identity"


def fuse_activations(
    specs: list[LayerSpec], output: int, algorithms: dict[int, str], device: str = "cpu"
) -> tuple[list[LayerSpec], int, dict[int, str]]:
    """Folds each relu / clamp (and, on the CPU, each silu / sigmoid /
    hardswish / gelu) into its producer where that is exact: the producer is a
    conv2d / conv3d / linear / batchnorm2d read by nothing but this activation, has no activation
    yet, and does not run a "custom" algorithm. Returns the new specs,
    output index and per-spec algorithms (re-indexed)."""
    used = consumers(specs)
    fused: dict[int, int] = {}  # activation index -> producer index
    for i, spec in enumerate(specs):
        bounds = activation_bounds(spec)
        function = activation_function(spec) if device == "cpu" else None
        if (bounds is None and function is None) or len(spec.inputs) != 1:
            continue
        j = spec.inputs[0]
        if j < 0 or j == output or used.get(j) != [i]:  # j < 0: a model input
            continue
        producer = specs[j]
        if producer.op not in FUSABLE_PRODUCERS or _has_activation(producer):
            continue
        if bounds is not None and not bounds[0] <= bounds[1]:  # crossed or NaN bounds: keep torch's own semantics
            continue
        if algorithms.get(j) in UNFUSABLE_ALGORITHMS:
            continue
        if bounds is not None:
            producer.attrs["activation"] = bounds
        else:
            producer.attrs["activation_fn"] = function
        producer.attrs["fused_activation"] = spec.name
        fused[i] = j
    if not fused:
        return specs, output, algorithms
    by_spec = {id(s): algorithms[i] for i, s in enumerate(specs) if i in algorithms}
    specs, output = _remove(specs, output, fused)
    return specs, output, {i: by_spec[id(s)] for i, s in enumerate(specs) if id(s) in by_spec}
