"""ai3's TensorFlow op (keras/tf_ops/ops.cc): loading the library and calling
its one op, Ai3Layer, with ai3's errors.

The library `_tf_ops.so` sits next to `_core.so` in the ai3 package and is
loaded once, on first use, with `tf.load_op_library` (which also registers
Ai3Layer's gradient, `_gradient`). Ai3Layer runs any core layer: NHWC
inputs (read in place; one for a Keras layer's step, [grad, x, y] for a
gradient op), the Keras layer's
variables as inputs (read into the core's layout once and cached per weight
buffer inside the kernel), the core op, attributes, algorithm and layer name
as attrs. A failure inside the core comes back as a
TensorFlow error whose message starts "ai3.<ErrorClass>: "; `call` turns it
into that ai3.Error subclass (shape-function errors at tf.function tracing
time as well as kernel errors in eager mode). Errors raised while a
tf.function graph *runs* surface as TensorFlow's own OpError, whose message
still carries the marker and layer name.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Callable
from typing import Any

from ai3 import errors

_LIBRARY: Any | None = None
_LOCK = threading.Lock()
_PATH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "_tf_ops.so")
# What TensorFlow appends after the op's message.
_TF_SUFFIXES = (re.compile(r" \[Op:\w+\].*$", re.S), re.compile(r" for '\{\{node .*$", re.S))


def library() -> Any:
    """The loaded op library (tf.load_op_library's module)."""
    global _LIBRARY
    if _LIBRARY is None:
        with _LOCK:
            if _LIBRARY is None:
                import tensorflow as tf

                if not os.path.exists(_PATH):
                    raise errors.UnsupportedOperation(
                        f"ai3's TensorFlow ops are not in this build ({_PATH} is missing); "
                        "build //frontends/ai3:_tf_ops.so (Bazel target //frontends/ai3:keras)"
                    )
                library = tf.load_op_library(_PATH)
                try:
                    tf.RegisterGradient("Ai3Layer")(_gradient)
                except KeyError:  # registered already (this module reloaded)
                    pass
                _LIBRARY = library
    return _LIBRARY


def translate(error: BaseException) -> errors.Error | None:
    """The ai3.Error a TensorFlow error carries, or None if it is not ai3's."""
    found = errors.marked(getattr(error, "message", None) or str(error))
    if found is None:
        return None
    cls, text = found
    for suffix in _TF_SUFFIXES:
        text = suffix.sub("", text)
    return cls(text.strip())


def call(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """fn(*args, **kwargs), re-raising ai3's errors as ai3.Error subclasses."""
    import tensorflow as tf

    try:
        return fn(*args, **kwargs)
    except (tf.errors.OpError, ValueError, TypeError) as e:
        if isinstance(e, errors.Error):
            raise
        ai3_error = translate(e)
        if ai3_error is None:
            raise
        raise ai3_error from None


def layer(
    inputs: list,
    weights: list,
    *,
    op: str,
    attrs: str,
    weights_layout: str,
    same: str,
    algorithm: str,
    layer_name: str,
    backward: str = "{}",
) -> Any:
    """The one op, Ai3Layer (keras/tf_ops/ops.cc): the core layer of `op`
    on `inputs` (one tensor for a single-input op). `attrs` is the core
    attributes as JSON; `weights` the present weights in the op's declared
    order, each as `weights_layout` says how to read it; `same` the "SAME"
    paddings left to run time (or ""); `backward` the algorithm of each of
    the op's backward ops by target, as JSON (read by its gradient)."""
    library()
    return call(
        _LIBRARY.ai3_layer,
        inputs,
        weights,
        op=op,
        attrs=attrs,
        weights_layout=weights_layout,
        same=same,
        algorithm=algorithm,
        layer_name=layer_name,
        backward=backward,
    )


# ---- The gradient: the op's backward ops through the same Ai3Layer ----------


def _attr(op: Any, name: str) -> Any:
    value = op.get_attr(name)
    return value.decode() if isinstance(value, bytes) else value


def _variable_layout(grad: Any, layout: dict, shape: Any) -> Any:
    """A gradient in the core's layout of a weight (layout["shape"]) back in
    the TF tensor's own (`shape`): the inverse of weights_layout's reading
    (tensor permuted by "perm", then read as "shape")."""
    import tensorflow as tf

    perm = layout.get("perm")
    if perm:
        permuted = [shape[p] for p in perm]
        grad = tf.transpose(tf.reshape(grad, permuted), [perm.index(d) for d in range(len(perm))])
    return tf.reshape(grad, shape)


def _gradient(op: Any, grad: Any) -> list:
    """Ai3Layer's gradient (registered by `library`): the gradient of each
    input that needs one, each by the core op `<op>_backward_<target>`
    (target "data" for the input, a weight's declared name for that weight;
    ai3.layers.backward_ops finds them) run through Ai3Layer itself on
    [grad, x, y], with the forward's attrs, weights and "SAME" rules (which
    read x, input 1), and the algorithm the `backward` attr names for the
    target ("default" otherwise). Inputs TensorFlow does not need a
    gradient of (op.skip_input_indices: the model's input, frozen weights)
    get None and cost nothing.

    A tape (eager, or inside a tf.function) says which inputs it needs; a
    gradient it needs that the core lacks is an ai3.UnsupportedOperation
    naming the layer. tf.gradients (and a tape around a whole tf.function)
    asks for every input's gradient without saying which it needs: those of
    weights the core has no gradient op for (a batch norm's moving
    statistics, which no optimizer trains) are None there, and TensorFlow
    prunes the gradient ops it computed but no one reads."""
    import json

    import tensorflow as tf

    from ai3 import layers as core_layers

    forward = _attr(op, "op")
    name = _attr(op, "layer_name")
    count = _attr(op, "K")
    if count != 1:
        raise errors.UnsupportedOperation(
            f"{forward} layer '{name}': ai3 computes first derivatives only (this is a backward op, "
            "or a multi-input op, which ai3's Keras layer does not differentiate)"
        )
    targets = core_layers.backward_ops(forward)
    algorithms = json.loads(_attr(op, "backward") or "{}")
    weights_layout = json.loads(_attr(op, "weights_layout") or "[]")
    same = json.loads(_attr(op, "same") or "{}")
    common = dict(
        attrs=_attr(op, "attrs"),
        weights_layout=json.dumps(weights_layout),
        same=json.dumps({k: {**rule, "input": 1} for k, rule in same.items()}) if same else "",
        layer_name=name,
    )
    x, weights, y = op.inputs[0], list(op.inputs[1:]), op.outputs[0]
    # A tape passes a stand-in for the op with skip_input_indices (None:
    # none skipped); tf.gradients passes the graph's own Operation.
    every_input = isinstance(op, tf.Operation)
    skip = set(getattr(op, "skip_input_indices", None) or ())

    def backward(target: str) -> Any:
        if target not in targets:
            if every_input and target != "data":
                return None
            raise errors.UnsupportedOperation(
                f"{forward} layer '{name}': ai3 has no gradient of {forward} with respect to {target} "
                f"({forward}_backward_{target} is not a core op; it has {sorted(targets) or 'none'})"
            )
        return layer([grad, x, y], weights, op=targets[target], algorithm=algorithms.get(target, "default"), **common)

    grads = [None]
    if 0 not in skip:
        grads[0] = backward("data")
        grads[0].set_shape(x.shape)
    present = [(decl, layout) for decl, layout in zip(core_layers.schema(forward)["weights"], weights_layout) if layout]
    for k, ((decl, layout), w) in enumerate(zip(present, weights)):
        if k + 1 in skip:
            grads.append(None)
            continue
        g = backward(decl["name"])
        # a weight is a variable of the Keras layer: its shape is static
        grads.append(None if g is None else _variable_layout(g, layout, w.shape.as_list()))
    return grads
