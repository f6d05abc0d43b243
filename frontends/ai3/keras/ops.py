"""ai3's TensorFlow op (keras/tf_ops/ops.cc): loading the library and calling
its one op, Ai3Layer, with ai3's errors.

The library `_tf_ops.so` sits next to `_core.so` in the ai3 package and is
loaded once, on first use, with `tf.load_op_library`. Ai3Layer runs any
single-input core layer: NHWC input (read in place), the Keras layer's
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
from typing import Any, Callable, Optional

from ai3 import errors

_LIBRARY: Optional[Any] = None
_LOCK = threading.Lock()
_PATH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "_tf_ops.so")
_MARKER = re.compile(r"ai3\.(\w+): (.*)", re.S)
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
                _LIBRARY = tf.load_op_library(_PATH)
    return _LIBRARY


def translate(error: BaseException) -> Optional[errors.Error]:
    """The ai3.Error a TensorFlow error carries, or None if it is not ai3's."""
    message = getattr(error, "message", None) or str(error)
    match = _MARKER.search(message)
    if not match:
        return None
    cls = getattr(errors, match.group(1), None)
    if not (isinstance(cls, type) and issubclass(cls, errors.Error)):
        cls = errors.InternalError
    text = match.group(2)
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


def layer(x: Any, weights: list, *, op: str, attrs: str, weights_layout: str, same: str, algorithm: str, layer_name: str) -> Any:
    """The one op, Ai3Layer (keras/tf_ops/ops.cc): the core layer of `op`
    on x. `attrs` is the core attributes as JSON; `weights` the present
    weights in the op's declared order, each as `weights_layout` says how to
    read it; `same` the "SAME" paddings left to run time (or "")."""
    return call(
        library().ai3_layer,
        x,
        weights,
        op=op,
        attrs=attrs,
        weights_layout=weights_layout,
        same=same,
        algorithm=algorithm,
        layer_name=layer_name,
    )
