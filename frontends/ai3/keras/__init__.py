"""ai3's Keras frontend (Keras 3 on the TensorFlow backend).

    swapped = ai3.keras.swap_conv2d(model, "gemm")      # a new keras.Model
    ai3.keras.chosen_algorithms(swapped)                # what runs where

The swaps return a copy of the model (keras.models.clone_model, recursing
into nested Functional/Sequential models) in which every matching layer is
an ai3.keras.layers.Layer holding a copy of the original's variables and
running the core layers the Keras mapping gives for it (ai3.keras.graph's
MAPPING, the one swap_backend uses) through ai3's one TensorFlow op; every
other layer is a copy of the original. The original model is not modified.
The copy is an ordinary Keras model: it runs eagerly, inside tf.function
and in model.predict with any batch size, and saves and loads as ".keras"
(after `import ai3.keras`) with its algorithm choices.

Which layers swap_operation(op, ...) swaps: those of a class with an entry
in the mapping (exact classes: a subclass may override `call`, which ai3
would not honour) whose first core layer runs `op`, and which run it once,
e.g.
  conv2d             keras.layers.Conv2D (channels_last; channels_first
                     raises ai3.UnsupportedOperation unless kept),
                     DepthwiseConv2D
  linear             keras.layers.Dense (on rank-2 inputs)
  relu               keras.layers.ReLU() with default arguments and
                     keras.layers.Activation("relu")
  maxpool2d          keras.layers.MaxPooling2D
  avgpool2d          keras.layers.AveragePooling2D
  adaptiveavgpool2d  keras.layers.GlobalAveragePooling2D
  flatten            keras.layers.Flatten
  batchnorm2d, softmax, sigmoid, ...: whatever the mapping gives, as long
                     as the weights are the layer's own variables.
A layer's fused activation (Conv2D(..., activation="swish")) runs as a
second core layer after it, with "default".

Selectors are ai3.selection's: a name for every layer, a list (one name
per matching layer, in the order `ai3.keras.layers_of(model, op)` gives:
the model's layers depth first, nested models in place, a shared layer
once), or a callable taking the Keras layer, or (layer, input_shape) with
`sample_input_shape` given (NHWC; the layer's input shape with the batch
dimension taken from sample_input_shape). "keep"/"torch" leaves a layer
as Keras' own. A name the layer cannot take raises at swap time
(ai3.AlgorithmNotApplicable naming the layer); `applicable(layer, name)`
tells a selector beforehand.

Training: the swapped layers are differentiable (tf.GradientTape,
model.fit, eager and in tf.function): each gradient runs a core gradient op
(`<op>_backward_data`, `<op>_backward_<weight>`: ai3.layers.backward_ops)
through the same TensorFlow op. `backward=` chooses their algorithms with
the forward selector's forms (ai3.selection.split_backward): a name, a
list, a callable, "default", "auto" (timed on the layer's input shape), or
a mapping {"backward_data": ..., "backward_weight": ..., "backward_bias":
...}, which may also be the swap's `algos` with a "forward" entry, e.g.
    ai3.keras.swap_conv2d(model, "winograd", backward="gemm")
    ai3.keras.swap_conv2d(model, {"forward": "winograd", "backward_data": "direct"})
BatchNormalization called with training=True runs Keras' own
batch-statistics forward (ai3.keras.layers.Layer); inference runs ai3.

Performance: ai3's kernels use OpenMP beside TensorFlow's own thread pool.
Leave libgomp's default wait policy (its idle threads spin a bounded while,
then sleep): OMP_WAIT_POLICY=PASSIVE wakes ai3's threads from sleep at every
swapped layer (MobileNetV2 with its convs swapped ran at 0.88-1.04x Keras'
time under it, 0.73-0.86x by default, 2 cores), and OMP_WAIT_POLICY=ACTIVE
spins without end beside TensorFlow's threads (bench/keras_models.py).

Every conv2d algorithm takes NHWC, Keras's layout; winograd needs 3x3,
stride 1, dilation 1 and no groups.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Optional

import keras
import tensorflow as tf

from ai3 import errors, selection
from ai3 import layers as core_layers
from ai3.keras import graph, ops, tf_version
from ai3.keras import layers as ai3_layers
from ai3.selection import Selector

# The TensorFlow the op library was built for, before anything loads it.
tf_version.check(tf.version.VERSION)

# The frontend contract (ai3.frontend): Keras models compute on NHWC images.
LAYOUT = "NHWC"

# The ops swap_operation takes: every single-input op of the core.
OPS = ai3_layers.single_input_ops()


def _shape_of(layer: Any) -> tuple | None:
    """The layer's input shape in the model (batch None), else its build shape."""
    shape = _static_input_shape(layer)
    if shape is None:
        shape = _layer_build_shape(layer)
    return tuple(shape) if shape is not None else None


def _is_target(op: str, layer: Any) -> bool:
    """Whether swap_operation(op) replaces `layer`: its mapping's first core
    layer runs `op`, and only that one does. A layer the mapping refuses is
    a target of the op its entry names, so the swap says why."""
    entry = graph.entry_of(layer, exact=True)
    if entry is None:
        return False
    try:
        steps = [s.op for s in graph.map_layer(layer, _shape_of(layer), exact=True)]
    except errors.Error:
        return entry.op == op
    return bool(steps) and steps[0] == op and steps.count(op) == 1


def _is_graph_model(layer: Any) -> bool:
    """A Functional or Sequential model (what clone_model recurses into)."""
    return isinstance(layer, (keras.Sequential, keras.src.models.functional.Functional))


def _walk(model: Any, prefix: str = ""):
    """(path, layer) of every layer, depth first, nested graph models in
    place, each layer object once."""
    seen: set[int] = set()

    def visit(m: Any, prefix: str):
        for layer in m.layers:
            if id(layer) in seen:
                continue
            seen.add(id(layer))
            path = f"{prefix}{layer.name}"
            if _is_graph_model(layer):
                yield from visit(layer, path + "/")
            else:
                yield path, layer

    yield from visit(model, prefix)


def layers_of(model: Any, op: str) -> list[tuple[str, Any]]:
    """(path, layer) of every layer swap_operation(op, ...) would replace,
    in the order sequence selectors index them."""
    return [(path, layer) for path, layer in _walk(model) if _is_target(op, layer)]


def _input_shape(layer: Any, sample_input_shape: Sequence[int] | None) -> tuple | None:
    """The layer's (first) input shape in the model, with the batch
    dimension from sample_input_shape; None if not fully known."""
    if sample_input_shape is None:
        return None
    try:
        nodes = layer._inbound_nodes
        shape = tuple(nodes[0].input_tensors[0].shape)
    except (AttributeError, IndexError):
        return None
    shape = (int(sample_input_shape[0]),) + tuple(shape[1:])
    if any(d is None for d in shape):
        return None
    return shape


def _check_model(model: Any, op: str) -> None:
    if not isinstance(model, keras.Model):
        raise errors.InvalidArgument(f"swap_{op} takes a keras.Model, got {type(model).__name__}")
    if not _is_graph_model(model):
        raise errors.UnsupportedOperation(
            f"swap_{op}: {type(model).__name__} is a subclassed keras.Model; ai3 swaps layers of "
            "Functional and Sequential models (keras.models.clone_model cannot copy a subclassed model)"
        )


def _ai3_layer(op: str, layer: Any, algorithm: str, backward: dict | None = None) -> Any:
    """The ai3 layer replacing `layer` (its mapping's steps, the algorithm
    for its `op` step and for each of its gradients), holding a copy of its
    weights; one whose mapping is its inference form only
    (graph.Entry.training) also keeps its own serialisation, for Keras'
    training-mode forward."""
    steps, variables = ai3_layers.plan(layer, _shape_of(layer))
    entry = graph.entry_of(layer, exact=True)
    keras_layer = keras.layers.serialize(layer) if entry is not None and entry.training else None
    new = ai3_layers.Layer(
        op,
        steps,
        variables,
        algorithm,
        backward,
        keras_layer,
        name=layer.name,
        trainable=layer.trainable,
        dtype=layer.dtype_policy,
    )
    values = layer.get_weights()
    if values:
        new.set_weights(values)
    return new


def _copy_layer(layer: Any) -> Any:
    """A fresh copy of a layer that is not swapped (weights copied later)."""
    try:
        return layer.__class__.from_config(layer.get_config())
    except Exception:
        # A custom layer that cannot round-trip its config: share it.
        return layer


def swap_operation(
    op: str,
    model: Any,
    algos: Selector | None = None,
    sample_input_shape: Sequence[int] | None = None,
    backward: Any | None = None,
    *,
    recorder: Any | None = None,
) -> Any:
    """A copy of `model` whose `op` layers (see the module doc) run ai3's
    algorithms chosen by `algos` (default: "default"), and their gradients
    those `backward` chooses (see the module doc). The original model is
    left as it is. `recorder` (ai3.plan's, see record_backward) keeps the
    gradient ops' selections and timings."""
    if op not in OPS:
        raise errors.UnsupportedOperation(f"swap_operation: unknown op {op!r}; ai3.keras swaps {list(OPS)}")
    _check_model(model, op)
    ops.library()  # fail early if the op library is missing
    sample_input_shape = selection.sample_shape(sample_input_shape)
    selectors = selection.split_backward(op, algos, backward)
    targets = layers_of(model, op)
    candidates = [_candidate(op, path, layer, _input_shape(layer, sample_input_shape)) for path, layer in targets]
    chosen = selection.select(op, selectors.forward, candidates, allow_keep=True)
    gradient_ops = core_layers.backward_ops(op)
    gradients = [
        {}
        if algorithm in selection.KEEP_NAMES
        else {
            t: _candidate(op, path, layer, c.input_shape, g)
            for t, g in gradient_ops.items()
            if t in _targets(op, layer)
        }
        for (path, layer), algorithm, c in zip(targets, chosen, candidates)
    ]
    backward_chosen = selection.select_backward(op, selectors, candidates, gradients, gradient_ops, recorder=recorder)

    # Build every replacement first: a name the layer cannot take fails here,
    # naming the layer, before anything is cloned.
    replacements: dict[int, Any] = {}
    for (path, layer), algorithm, cand, grads in zip(targets, chosen, candidates, backward_chosen):
        if algorithm in selection.KEEP_NAMES:
            continue
        try:
            new = _ai3_layer(op, layer, algorithm, grads)
            shape = cand.input_shape or _static_input_shape(layer)
            new.core_layer(shape)
            for target, name in grads.items():
                if name != selection.DEFAULT:  # "default" takes what applies
                    new.core_layer(shape, name, gradient_ops[target])
        except errors.Error as e:
            raise type(e)(f"{path}: {e}" if path != layer.name else str(e)) from None
        replacements[id(layer)] = new

    pairs: list[tuple[Any, Any]] = []
    copies: dict[int, Any] = {}  # a shared layer stays shared in the copy

    def clone_function(layer: Any) -> Any:
        new = replacements.get(id(layer))
        if new is None:
            new = copies.get(id(layer))
        if new is None:
            new = copies[id(layer)] = _copy_layer(layer)
            if new is not layer:
                pairs.append((layer, new))
        return new

    try:
        clone = keras.models.clone_model(model, clone_function=clone_function, recursive=True)
    except errors.Error:
        raise
    for orig, new in pairs:
        # Operators written as `x + y` are keras Operations, not Layers:
        # they have no weights to copy.
        if getattr(orig, "weights", None):
            _copy_weights(orig, new)
    return clone


def _targets(op: str, layer: Any) -> set[str]:
    """What a swapped layer's `op` step has gradients with respect to: its
    input ("data") and the weights it has (a Conv2D without a bias has no
    bias gradient to choose an algorithm for)."""
    steps, _ = ai3_layers.plan(layer, _shape_of(layer))
    step = next(s for s in steps if s["op"] == op)
    return {"data"} | {w["name"] for w in step["weights"] if "index" in w}


def _candidate(
    op: str, path: str, layer: Any, shape: tuple | None, gradient_op: str | None = None
) -> selection.Candidate:
    """A layer to swap; "auto" times the core layer its ai3 layer runs
    (ai3.keras.layers.core_layer, with zero weights: the time does not
    depend on them), or with `gradient_op` that gradient of it
    (ai3.keras.layers.gradient_runner, timed on the layer's input)."""

    def make_layer(algorithm: str) -> Any:
        steps, variables = ai3_layers.plan(layer, _shape_of(layer))
        if gradient_op is not None:
            return ai3_layers.gradient_runner(steps, variables, op, gradient_op, algorithm, layer.name, shape)
        return ai3_layers.core_layer(steps, variables, op, algorithm, layer.name, shape)

    config = {k: v for k, v in layer.get_config().items() if k not in ("name", "trainable")}
    params = {"layer": type(layer).__name__, "config": config, "weights": [tuple(w.shape) for w in layer.weights]}
    dtype = getattr(layer, "compute_dtype", None) or "float32"
    return selection.Candidate(path, layer, shape, make_layer, params, str(dtype), "NHWC", "keras")


def _layer_build_shape(layer: Any) -> Any:
    shape = getattr(layer, "_build_shapes_dict", None)
    if shape:
        values = list(shape.values())
        if len(values) == 1:
            return values[0]
    return _static_input_shape(layer)


def _static_input_shape(layer: Any) -> tuple | None:
    try:
        return tuple(layer._inbound_nodes[0].input_tensors[0].shape)
    except (AttributeError, IndexError):
        return None


def _copy_weights(orig: Any, new: Any) -> None:
    if not new.built and orig.built:
        new.build(_layer_build_shape(orig))
    values = orig.get_weights()
    if values:
        new.set_weights(values)


def _swap(op: str, doc: str) -> Any:
    """swap_<op>: swap_operation(op, ...) under its own name."""

    def swap(
        model: Any,
        algos: Selector | None = None,
        sample_input_shape: Sequence[int] | None = None,
        backward: Any | None = None,
    ) -> Any:
        return swap_operation(op, model, algos, sample_input_shape, backward)

    swap.__name__ = swap.__qualname__ = f"swap_{op}"
    swap.__doc__ = f'swap_operation("{op}", ...): {doc}'
    return swap


swap_conv2d = _swap("conv2d", "every keras.layers.Conv2D and DepthwiseConv2D.")
swap_linear = _swap("linear", "every keras.layers.Dense.")
swap_relu = _swap("relu", 'ReLU() layers and Activation("relu").')
swap_maxpool2d = _swap("maxpool2d", "every keras.layers.MaxPooling2D.")
swap_avgpool2d = _swap("avgpool2d", "every keras.layers.AveragePooling2D.")
swap_adaptiveavgpool2d = _swap("adaptiveavgpool2d", "every keras.layers.GlobalAveragePooling2D.")
swap_flatten = _swap("flatten", "every keras.layers.Flatten.")


def record_backward(model: Any, backward: Any, sample_input_shape: Sequence[int], *, recorder: Any) -> None:
    """For ai3.plan(..., backward=...): the selection (and "auto" timing)
    the in-place swaps make for the gradient ops of `model`'s layers, into
    `recorder`; `model` is left alone (each swap returns a copy)."""
    target = model
    for op in OPS:
        if core_layers.backward_ops(op) and layers_of(target, op):
            target = swap_operation(op, target, "default", sample_input_shape, backward, recorder=recorder)


def applicable(layer: Any, algorithm: str, input_shape: Sequence[int] | None = None) -> bool:
    """Whether `algorithm` can take this Keras layer (one swap_* would
    replace, or an ai3 layer): e.g. winograd cannot take a stride-2 conv."""
    shape = input_shape or _static_input_shape(layer)
    try:
        if isinstance(layer, ai3_layers.Layer):
            layer.core_layer(shape, algorithm)
            return True
        op = next((o for o in OPS if _is_target(o, layer)), None)
        if op is None:
            raise errors.UnsupportedOperation(f"ai3.keras has no swap for {type(layer).__name__} layer '{layer.name}'")
        steps, variables = ai3_layers.plan(layer, _shape_of(layer))
        ai3_layers.core_layer(steps, variables, op, algorithm, layer.name, shape)
    except errors.AlgorithmNotApplicable:
        return False
    return True


def chosen_algorithms(model: Any) -> list[tuple[str, str, str]]:
    """(layer path, op, algorithm the core runs) of every ai3 layer in
    `model` ("default" resolved)."""
    found = []
    for path, layer in _walk(model):
        if isinstance(layer, ai3_layers.Layer):
            found.append((path, layer.op, layer.resolved_algorithm(_static_input_shape(layer))))
    return found


def swap_backend(*args: Any, **kwargs: Any) -> Any:
    """The whole Keras model as an ai3.Model (see ai3.keras.graph)."""
    from ai3.keras import graph

    return graph.swap_backend(*args, **kwargs)


__all__ = [
    "OPS",
    "applicable",
    "chosen_algorithms",
    "layers_of",
    "record_backward",
    "swap_adaptiveavgpool2d",
    "swap_avgpool2d",
    "swap_backend",
    "swap_conv2d",
    "swap_flatten",
    "swap_linear",
    "swap_maxpool2d",
    "swap_operation",
    "swap_relu",
]
