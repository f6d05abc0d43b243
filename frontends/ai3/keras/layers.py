"""The one Keras layer running ai3's core: `ai3.keras.layers.Layer`.

An in-place swap (ai3.keras.swap_operation) replaces a Keras layer by a
Layer made from that layer's steps in the Keras mapping (ai3.keras.graph's
MAPPING, the one swap_backend uses): the core layers computing it, usually
one (Conv2D with an activation: conv2d, then the activation). Each step
runs through the one TensorFlow op, Ai3Layer (ai3.keras.ops), which builds
the core layer from the op's declaration and caches it per weight buffer.

The Layer holds copies of the original layer's variables, with the same
names, shapes, dtypes, trainability and order, so get_weights/set_weights,
saving the weights and an optimizer see the same weights as the original;
the TF op reads them in place (in Keras' layout; the step says how the core
reads each: e.g. Conv2D's HWIO kernel as OIHW) and rebuilds its core layer
only when a variable is assigned. Its config is the steps, the variables'
shapes and the algorithm, so `keras.models.load_model` rebuilds it once
`ai3.keras` is imported.

Training: Ai3Layer has a gradient (ai3.keras.ops), which runs the op's
backward ops (`<op>_backward_data`, `<op>_backward_<weight>`) with the
algorithms `backward` names ("default" otherwise), so tf.GradientTape and
model.fit train through the Layer and its variables. A layer whose mapping
is its inference form only (graph.Entry.training: BatchNormalization) runs
Keras' own forward, on the Layer's variables, when called with training=True (batch statistics, the
moving averages updated, as Keras does); otherwise, and for every other
layer, the core runs it (a batch norm in its inference form). Layers Keras
treats as identities at inference (Dropout) are never swapped, so they keep
Keras' training behaviour. A TensorFlow custom op has no XLA kernel, so
the Layer says supports_jit = False and model.fit does not jit-compile.

Unlike Keras' own layers it does not autocast inputs: an input that is not
float32/float64, or not of the weights' dtype, is an ai3.DTypeError; a wrong
shape is an ai3.ShapeError naming the layer (the core's own rule, asked by
the op's shape function while tracing, and by the kernel when it runs).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from typing import Any

import keras
import numpy as np
import tensorflow as tf

from ai3 import _core, errors
from ai3.keras import graph, ops

_PACKAGE = "ai3"
_FLOATS = ("float32", "float64")
_SAME = "__same__"  # marks an attribute that is a graph.Same in a step's config


@functools.cache
def _schemas() -> dict[str, dict]:
    """The core's op declarations by op (ai3._core.op_schemas)."""
    return {s["op"]: s for s in _core.op_schemas()}


def single_input_ops() -> tuple[str, ...]:
    """The ops a Layer can run: every single-input op the core declares."""
    return tuple(sorted(op for op, s in _schemas().items() if not s["multi_input"]))


def _encode(value: Any) -> Any:
    if isinstance(value, graph.Same):
        return {_SAME: {"kernel": list(value.kernel), "stride": list(value.stride), "dilation": list(value.dilation)}}
    return list(value) if isinstance(value, tuple) else value


def _same_of(value: Any) -> graph.Same | None:
    if isinstance(value, dict) and _SAME in value:
        rule = value[_SAME]
        return graph.Same(tuple(rule["kernel"]), tuple(rule["stride"]), tuple(rule["dilation"]))
    return None


def plan(layer: Any, input_shape: Sequence[int | None] | None) -> tuple[list[dict], list[dict]]:
    """(steps, variables): the config of the Layer replacing a Keras layer.
    Each step is {"op", "attrs", "weights"}: weights one per weight the op
    declares, {"name"} for an absent optional one, else {"name", "index"
    (into the layer's weights), "perm", "shape" (the core's)}."""
    steps = graph.map_layer(layer, input_shape, exact=True)
    if not steps:
        raise errors.UnsupportedOperation(f"{graph._describe(layer)}: computes nothing ai3 would run (an identity)")
    index = {id(v): i for i, v in enumerate(layer.weights)}
    out = []
    for step in steps:
        schema = _schemas().get(step.op)
        if schema is None or schema["multi_input"]:
            raise errors.UnsupportedOperation(
                f"{graph._describe(layer)}: maps to '{step.op}', which ai3's Keras layer cannot run in place "
                "(ai3.keras.swap_backend maps it)"
            )
        attrs = {k: _encode(v) for k, v in step.attrs.items()}
        if any(a["name"] == "layout" for a in schema["attrs"]):
            attrs.setdefault("layout", "NHWC")
        declared = [w["name"] for w in schema["weights"]]
        unknown = set(step.weights) - set(declared)
        if unknown:
            raise errors.InternalError(
                f"the Keras mapping of {graph._describe(layer)} gives {step.op} weights {sorted(unknown)}"
            )
        weights = []
        for name in declared:
            ref = step.weights.get(name)
            if ref is None:
                weights.append({"name": name})
                continue
            if not isinstance(ref, graph.Var) or id(ref.variable(layer)) not in index:
                raise errors.UnsupportedOperation(
                    f"{graph._describe(layer)}: its {step.op} weight '{name}' is computed, not one of the layer's "
                    "variables, so it cannot be swapped in place (ai3.keras.swap_backend maps it)"
                )
            weights.append(
                {
                    "name": name,
                    "index": index[id(ref.variable(layer))],
                    "perm": list(ref.perm) if ref.perm is not None else None,
                    "shape": list(ref.core_shape(layer)),
                }
            )
        out.append({"op": step.op, "attrs": attrs, "weights": weights})
    variables = [
        {"name": v.name, "shape": [int(d) for d in v.shape], "dtype": str(v.dtype), "trainable": bool(v.trainable)}
        for v in layer.weights
    ]
    return out, variables


def core_layer(
    steps: list[dict],
    variables: list[dict],
    op: str,
    algorithm: str,
    name: str,
    input_shape: Sequence[int | None] | None = None,
    run_op: str | None = None,
) -> Any:
    """A throwaway ai3._core layer of the step running `op` (zero weights):
    making it checks that `algorithm` can take the layer
    (ai3.AlgorithmNotApplicable naming it otherwise) and resolves "default".
    `input_shape` (NHWC) gives "same" padding exactly; without it the
    stride-1 padding stands in (only the registry is asked). `run_op`: a
    gradient op of `op` instead (ai3.layers.backward_ops), made from the
    same attributes and weights."""
    k = next(i for i, s in enumerate(steps) if s["op"] == op)
    step = steps[k]
    attrs, same = _attrs(step, tuple(input_shape) if input_shape is not None and k == 0 else None)
    for key, rule in same.items():
        attrs[key] = graph.Same(tuple(rule["kernel"]), (1, 1), tuple(rule["dilation"])).pads(None)
    weights = {}
    for w in step["weights"]:
        dtype = np.dtype(variables[w["index"]]["dtype"]) if "index" in w else None
        weights[w["name"]] = np.zeros(w["shape"], dtype) if dtype is not None else None
    return _core.make_layer(run_op or op, attrs, weights, algorithm=algorithm, name=name)


class GradientRunner:
    """A gradient op's core layer callable on F's input alone, as ai3.tuning
    times a layer: `run(x)` runs it on [grad_output, x, y], with y = F(x)
    (F's "default" layer) and a fixed random grad_output made once per
    input shape, outside the timed call's work after the first."""

    def __init__(self, forward: Any, gradient: Any) -> None:
        self._forward, self._gradient = forward, gradient
        self.algorithm = gradient.algorithm
        self._made: dict[tuple, tuple] = {}

    def __call__(self, x: np.ndarray) -> Any:
        key = (x.shape, x.dtype.str, id(x))
        if key not in self._made:
            y = np.asarray(self._forward(x))
            grad = np.random.default_rng(1).standard_normal(y.shape).astype(y.dtype)
            self._made = {key: (x, grad, y)}  # x kept: its id stays its own
        _, grad, y = self._made[key]
        return self._gradient(grad, x, y)


def gradient_runner(
    steps: list[dict],
    variables: list[dict],
    op: str,
    gradient_op: str,
    algorithm: str,
    name: str,
    input_shape: Sequence[int | None] | None = None,
) -> GradientRunner:
    """`gradient_op` of the step running `op`, with `algorithm`, as
    GradientRunner times it (zero weights, as core_layer)."""
    return GradientRunner(
        core_layer(steps, variables, op, "default", name, input_shape),
        core_layer(steps, variables, op, algorithm, name, input_shape, gradient_op),
    )


def _attrs(step: dict, shape: tuple | None) -> tuple[dict, dict]:
    """(attributes, same): a step's attributes with each "same" padding
    resolved for an input of `shape` (ai3.padding), and those its size
    leaves open (unknown height or width), by attribute."""
    attrs, same = {}, {}
    for key, value in step["attrs"].items():
        rule = _same_of(value)
        pads = rule.pads(shape) if rule is not None else None
        if rule is None:
            attrs[key] = value
        elif pads is None:
            same[key] = value[_SAME]
        else:
            attrs[key] = list(pads)
    return attrs, same


@keras.saving.register_keras_serializable(package=_PACKAGE)
class Layer(keras.layers.Layer):
    """Any Keras layer the mapping turns into core layers, run by ai3:
    `op` is the op swapped (its steps run `algorithm`, any other step
    "default"), `steps` and `variables` as `plan` gives them."""

    def __init__(
        self,
        op: str,
        steps: list,
        variables: list,
        algorithm: str = "default",
        backward: dict | None = None,
        keras_layer: dict | None = None,
        **kwargs: Any,
    ) -> None:
        kwargs.setdefault("autocast", False)
        super().__init__(**kwargs)
        if not isinstance(algorithm, str):
            raise errors.InvalidSelector(
                f"{op} layer '{self.name}': algorithm must be a string, got {type(algorithm).__name__}"
            )
        backward = dict(backward or {})
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in backward.items()):
            raise errors.InvalidSelector(
                f"{op} layer '{self.name}': backward must map gradient targets to algorithm names, got {backward!r}"
            )
        if not any(s["op"] == op for s in steps):
            raise errors.InvalidArgument(f"layer '{self.name}': none of its steps runs {op}")
        self.op = op
        self.algorithm = algorithm
        # {target: algorithm} of the op step's backward ops (ops._gradient)
        self.backward = backward
        # the original layer's serialisation, for its training-mode forward
        self.keras_layer = keras_layer
        self.supports_jit = False  # Ai3Layer has no XLA kernel
        self.steps = [dict(s) for s in steps]
        self.variable_specs = [dict(v) for v in variables]
        self._vars = [
            self.add_weight(
                name=v["name"], shape=tuple(v["shape"]), dtype=v["dtype"], trainable=v["trainable"], initializer="zeros"
            )
            for v in self.variable_specs
        ]
        for v in self._vars:  # layer.kernel etc., as on the Keras layer (tracked once)
            if v.name.isidentifier() and not hasattr(self, v.name):
                setattr(self, v.name, v)
        # Keras' own layer for training=True, reading these variables; kept
        # out of Keras' tracking so that they are not the model's twice.
        object.__setattr__(self, "_keras_form", self._training_form() if keras_layer is not None else None)
        self.built = True
        # static input shape (without the batch) -> what each step's op
        # call takes; filled on first call per shape, so a call does no
        # more than look it up.
        self._calls: dict[tuple, list[tuple]] = {}

    def _prepare(self, shape: tuple) -> list[tuple]:
        calls = []
        for k, step in enumerate(self.steps):
            # after the first step the size is the op's to know (tf_ops/ops.cc)
            attrs, same = _attrs(step, shape if k == 0 else None)
            layout = [
                {"shape": w["shape"], **({"perm": w["perm"]} if w.get("perm") is not None else {})}
                if "index" in w
                else None
                for w in step["weights"]
            ]
            calls.append(
                (
                    step["op"],
                    json.dumps(attrs, sort_keys=True),
                    json.dumps(layout),
                    json.dumps(same, sort_keys=True) if same else "",
                    [w["index"] for w in step["weights"] if "index" in w],
                    self.algorithm if step["op"] == self.op else "default",
                    json.dumps(self.backward if step["op"] == self.op else {}, sort_keys=True),
                )
            )
        return calls

    def _training_form(self) -> Any:
        """The original Keras layer (keras_layer, a serialisation with its
        build config, so it comes back built), each of its variable
        attributes pointed at the Layer's own variable of the same position.
        Made with the Layer: a layer cannot create state in its call."""
        form = keras.layers.deserialize(self.keras_layer)
        if not form.built or len(form.weights) != len(self._vars):
            raise errors.InternalError(
                f"{self.op} layer '{self.name}': its Keras form for training mode came back without its "
                f"{len(self._vars)} variables"
            )
        own = {id(v): i for i, v in enumerate(form.weights)}
        for attr, value in list(vars(form).items()):
            if id(value) in own:
                object.__setattr__(form, attr, self._vars[own[id(value)]])
        return form

    def call(self, inputs: Any, training: Any = None) -> Any:
        if training and self._keras_form is not None:
            self._keras_form.trainable = self.trainable  # frozen: Keras' inference form
            return self._keras_form.call(inputs, training=True)
        dtype = tf.as_dtype(inputs.dtype).name
        if dtype not in _FLOATS:
            raise errors.DTypeError(
                f"{self.op} layer '{self.name}' ({self.algorithm}): input dtype is {dtype}; ai3 takes float32 or float64"
            )
        if self._vars and dtype != tf.as_dtype(self._vars[0].dtype).name:
            raise errors.DTypeError(
                f"{self.op} layer '{self.name}' ({self.algorithm}): input is {dtype} but the weights are "
                f"{tf.as_dtype(self._vars[0].dtype).name}"
            )
        shape = tuple(inputs.shape)
        calls = self._calls.get(shape[1:])
        if calls is None:
            calls = self._calls[shape[1:]] = self._prepare(shape)
        x = inputs
        for op, attrs, layout, same, indices, algorithm, backward in calls:
            x = ops.layer(
                [x],
                [self._vars[i] for i in indices],
                op=op,
                attrs=attrs,
                weights_layout=layout,
                same=same,
                algorithm=algorithm,
                layer_name=self.name,
                backward=backward,
            )
        return x

    def compute_output_shape(self, input_shape: Any) -> tuple:
        """The core's shape rule (ai3._core.output_shape) step by step, so
        Keras need not trace `call` to learn it. Unknown dims are probed with
        two sizes far apart, as the op's shape function does: a dim that
        follows them is unknown."""
        shape = tuple(input_shape)
        if None not in shape:
            return self._output_shape(shape)
        outs = [self._output_shape(tuple(p if d is None else d for d in shape)) for p in (331, 669)]
        return tuple(a if a == b else None for a, b in zip(*outs))

    def _output_shape(self, shape: tuple) -> tuple:
        dtype = self.variable_specs[0]["dtype"] if self.variable_specs else "float32"
        for step in self.steps:
            attrs, _ = _attrs(step, shape)
            weights = {w["name"]: w["shape"] if "index" in w else None for w in step["weights"]}
            shape = tuple(_core.output_shape(step["op"], attrs, weights, [list(shape)], dtype, self.name))
        return shape

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(
            op=self.op,
            steps=self.steps,
            variables=self.variable_specs,
            algorithm=self.algorithm,
            backward=self.backward,
            keras_layer=self.keras_layer,
        )
        return config

    # ---- What the core will run ------------------------------------------

    def core_layer(
        self,
        input_shape: Sequence[int | None] | None = None,
        algorithm: str | None = None,
        run_op: str | None = None,
    ) -> Any:
        """A throwaway ai3._core layer of this layer's `op` step (zero
        weights), with `algorithm` (default: this layer's), or of its
        gradient op `run_op` (algorithm default: "default"); see
        core_layer."""
        if algorithm is None:
            algorithm = self.algorithm if run_op is None else "default"
        return core_layer(self.steps, self.variable_specs, self.op, algorithm, self.name, input_shape, run_op)

    def resolved_algorithm(self, input_shape: Sequence[int | None] | None = None) -> str:
        """The algorithm the core runs for this layer ("default" resolved)."""
        return self.core_layer(input_shape).algorithm

    def __repr__(self) -> str:
        ops_ = " -> ".join(s["op"] for s in self.steps)
        return f"<ai3.keras.layers.Layer '{self.name}': {ops_} ({self.op}: {self.algorithm})>"


__all__ = ["GradientRunner", "Layer", "core_layer", "gradient_runner", "plan", "single_input_ops"]
