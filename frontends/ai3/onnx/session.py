"""Running rewritten models in ONNX Runtime: the "ai3" domain's custom ops,
as onnxruntime-extensions Python ops backed by ai3's core layers.

    sess = ai3.onnx.InferenceSession(ai3.onnx.swap_conv2d(model, "gemm"))
    y, = sess.run(None, {"input": x})

How the ops work, and what they cost:
  - onnxruntime-extensions tells a Python op nothing about its node, and
    hands it every input, initializers (weights) included, as a fresh NumPy
    copy on every run. The core layer (with its copied/packed weights) is
    therefore built once and cached in a process-wide dict keyed by the
    node's `node_key` attribute (a uuid the rewrite gives each node), the op
    type, its attributes, the weight/bias shapes and a fingerprint of up to
    64 evenly spaced weight and bias values (so a model whose initializers
    were edited after the rewrite gets new layers). Per call that costs a
    dict lookup and a 64-element gather, not a weight hash. The cache is
    bounded: an ai3.onnx.InferenceSession drops its nodes' layers when it
    is garbage collected, and past CACHE_LIMIT layers the least recently
    used go (a long-running process that keeps building sessions, or plain
    ORT sessions that ai3 can't track, stays bounded); `clear_cache()`
    empties it.
  - Weights: an ai3.onnx.InferenceSession takes each ai3 node's weights
    out of the graph it hands to ORT (the node becomes "<type>_prepared",
    with only its activation input) and keeps them for the node's layer,
    so no weight is copied or fingerprinted per call. The rewritten model
    itself keeps its weights as node inputs, so it stays a complete ONNX
    file that a plain onnxruntime.InferenceSession with `session_options()`
    also runs (copying the weights on every run, as the extension does).
  - Data copies per call: ORT -> NumPy for each input (the extension's own
    copy), none into the core (inputs are read in place),
    the core's output array, and NumPy -> ORT for the output. The extension's
    stock invocation hook turns outputs into Python lists (`tolist()`);
    ai3 installs a hook that returns the NumPy array instead (about 30x
    faster on a 4 MB output) for ai3's ops and defers to the stock hook for
    every other Python op.
  - float32 only: an onnxruntime-extensions op has fixed input types, and
    one op type per domain; a double model fails in ORT's type check.
  - A Python exception escaping an extension op terminates the process
    (pybind11 error_already_set inside ORT), so ai3's ops never raise: they
    record the error and return an empty tensor. `InferenceSession.run`
    re-raises the first recorded error as the same ai3.Error subclass,
    naming the node. A plain onnxruntime.InferenceSession built with
    `session_options()` cannot do this: it returns (wrong, empty) results and
    the error is only logged to the `ai3.onnx` logger. The record is
    process-wide: two sessions running at once in different threads may
    see each other's errors.
"""

from __future__ import annotations

import collections
import logging
import os
import threading
import weakref
from typing import Any, Optional, Sequence

import numpy as np
import onnx
import onnxruntime as ort
import onnxruntime_extensions as ortx
from onnx import numpy_helper
from onnxruntime_extensions import _ocos

from ai3 import errors, layers, padding
from ai3.onnx.rewrite import ATTRS, DOMAIN, _INPUTS

_log = logging.getLogger("ai3.onnx")
_lock = threading.Lock()
# node key -> core layer, least recently used first (see the module doc).
_cache: "collections.OrderedDict[tuple, Any]" = collections.OrderedDict()
CACHE_LIMIT = 4096
_pending: list[tuple[str, str, BaseException]] = []  # (node, op type, error)
_registered = False
_ai3_ids: set[int] = set()
_stock_hook = _ocos._on_pyop_invocation
# SessionOptions that already have the library (registering it twice on one
# SessionOptions fails at session creation with "Conflicting ... kernel").
_with_library: "weakref.WeakSet[ort.SessionOptions]" = weakref.WeakSet()


def clear_cache() -> None:
    """Drops every cached core layer (they are rebuilt on the next run)."""
    with _lock:
        _cache.clear()


def _ints(text: str) -> list[int]:
    return [int(v) for v in text.split(",")] if text else []


def _fingerprint(*arrays: np.ndarray) -> tuple:
    out = []
    for a in arrays:
        flat = a.reshape(-1)
        step = max(1, flat.size // 64)
        out.append((a.shape, flat[::step][:64].tobytes()))
    return tuple(out)


def _pads(x_shape: Sequence[int], kernel: Sequence[int], strides: Sequence[int], dilations: Sequence[int],
          pads: Sequence[int], auto_pad: str) -> tuple[int, int, int, int]:
    """ai3's (top, bottom, left, right) from ONNX pads / auto_pad."""
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        return padding.same_2d(x_shape[2:4], kernel, strides, dilations, lower=auto_pad == "SAME_LOWER")
    if auto_pad == "VALID" or not pads:
        return 0, 0, 0, 0
    return padding.from_onnx(pads)


def _spatial(x: np.ndarray, attrs: dict[str, Any], kernel: Sequence[int]) -> tuple:
    if x.ndim != 4:
        raise errors.ShapeError(f"expected a 4-D NCHW input, got shape {tuple(x.shape)}")
    strides = _ints(attrs["strides"]) or [1, 1]
    dilations = _ints(attrs["dilations"]) or [1, 1]
    pads = _pads(x.shape, kernel, strides, dilations, _ints(attrs["pads"]), attrs["auto_pad"])
    return tuple(strides), tuple(dilations), pads


def _layer(key: tuple, build) -> Any:
    with _lock:
        layer = _cache.get(key)
        if layer is not None:
            _cache.move_to_end(key)
            return layer
    layer = build()
    with _lock:
        _cache[key] = layer
        while len(_cache) > CACHE_LIMIT:
            _cache.popitem(last=False)
    return layer


def _release(node_keys: frozenset) -> None:
    """Drops the cached layers of these nodes (key[1] is the node_key)."""
    with _lock:
        for key in [k for k in _cache if k[1] in node_keys]:
            del _cache[key]


def _read(model: Any) -> onnx.ModelProto:
    if isinstance(model, onnx.ModelProto):
        return model
    if isinstance(model, str):
        return onnx.load(model)
    return onnx.load_from_string(bytes(model))


def _release_session(node_keys: frozenset, held: frozenset) -> None:
    _release(node_keys)
    _unhold(held)


def _node_keys(model: onnx.ModelProto) -> frozenset:
    keys = set()
    for node in model.graph.node:
        if node.domain == DOMAIN:
            keys.update(a.s.decode() for a in node.attribute if a.name == "node_key")
    return frozenset(keys)


def _check_float(*arrays: np.ndarray) -> None:
    for a in arrays:
        if a.dtype != np.float32:
            raise errors.DTypeError(f"ai3's ONNX ops take float32, got {a.dtype}")


def _weights_key(attrs: dict[str, Any], *arrays: np.ndarray) -> tuple:
    """What tells this node's weights apart: nothing for a prepared node (the
    session holds them fixed), else a fingerprint of the arrays ORT passed."""
    return () if attrs.get(_FIXED) else _fingerprint(*arrays)


def _conv2d(x, w, b, **attrs):
    _check_float(x, w, b)
    if w.ndim != 4:
        raise errors.ShapeError(f"Conv weight must be 4-D, got shape {tuple(w.shape)}")
    strides, dilations, pads = _spatial(x, attrs, w.shape[2:4])
    key = ("Conv2D", attrs["node_key"], attrs["algorithm"], strides, dilations, pads, attrs["group"], _weights_key(attrs, w, b))
    layer = _layer(key, lambda: layers.Conv2d(
        w, b, stride=strides, padding=pads, dilation=dilations, groups=attrs["group"],
        algorithm=attrs["algorithm"], name=attrs["node"]))
    return layer(x)


def _linear(x, w, b, **attrs):
    _check_float(x, w, b)
    lead = None
    if attrs["matmul"]:  # MatMul + Add: any rank >= 2, the last dim contracted (a view, no copy)
        if x.ndim < 2 or w.ndim != 2 or x.shape[-1] != w.shape[0]:
            raise errors.ShapeError(f"MatMul input of shape {tuple(x.shape)} does not fit weight {tuple(w.shape)}")
        lead = x.shape[:-1]
        x = x.reshape(-1, x.shape[-1])
    elif x.ndim != 2:
        raise errors.ShapeError(f"Gemm input A must be 2-D, got shape {tuple(x.shape)}")
    key = ("Linear", attrs["node_key"], attrs["algorithm"], attrs["transB"], _weights_key(attrs, w, b))
    # Gemm computes A @ B (+ C); ai3's Linear x @ W^T + b, so transB=0 takes B^T (one copy, at build time).
    layer = _layer(key, lambda: layers.Linear(
        w if attrs["transB"] else np.ascontiguousarray(w.T), b.reshape(-1),
        algorithm=attrs["algorithm"], name=attrs["node"]))
    y = layer(x)
    return y if lead is None else y.reshape(*lead, y.shape[-1])


def _relu(x, **attrs):
    _check_float(x)
    key = ("ReLU", attrs["node_key"], attrs["algorithm"])
    return _layer(key, lambda: layers.ReLU(algorithm=attrs["algorithm"], name=attrs["node"]))(x)


def _maxpool2d(x, **attrs):
    _check_float(x)
    kernel = tuple(_ints(attrs["kernel_shape"]))
    strides, dilations, pads = _spatial(x, attrs, kernel)
    key = ("MaxPool2D", attrs["node_key"], attrs["algorithm"], kernel, strides, dilations, pads, attrs["ceil_mode"])
    return _layer(key, lambda: layers.MaxPool2d(
        kernel, strides, pads, dilations, bool(attrs["ceil_mode"]),
        algorithm=attrs["algorithm"], name=attrs["node"]))(x)


def _avgpool2d(x, **attrs):
    _check_float(x)
    kernel = tuple(_ints(attrs["kernel_shape"]))
    strides, _, pads = _spatial(x, attrs, kernel)
    key = ("AvgPool2D", attrs["node_key"], attrs["algorithm"], kernel, strides, pads, attrs["ceil_mode"],
           attrs["count_include_pad"])
    return _layer(key, lambda: layers.AvgPool2d(
        kernel, strides, pads, bool(attrs["ceil_mode"]), bool(attrs["count_include_pad"]),
        algorithm=attrs["algorithm"], name=attrs["node"]))(x)


def _globalavgpool2d(x, **attrs):
    _check_float(x)
    if x.ndim != 4:
        raise errors.ShapeError(f"expected a 4-D NCHW input, got shape {tuple(x.shape)}")
    key = ("GlobalAvgPool2D", attrs["node_key"], attrs["algorithm"])
    return _layer(key, lambda: layers.AdaptiveAvgPool2d(1, algorithm=attrs["algorithm"], name=attrs["node"]))(x)


def _flatten(x, **attrs):
    _check_float(x)
    if attrs["axis"] != 1:
        raise errors.UnsupportedOperation(f"Flatten with axis {attrs['axis']} (ai3 flattens from axis 1)")
    if x.ndim < 2:
        raise errors.ShapeError(f"Flatten input must have at least 2 dims, got shape {tuple(x.shape)}")
    key = ("Flatten", attrs["node_key"], attrs["algorithm"])
    return _layer(key, lambda: layers.Flatten(1, -1, algorithm=attrs["algorithm"], name=attrs["node"]))(x)


_IMPLS = {
    "Conv2D": _conv2d,
    "Linear": _linear,
    "ReLU": _relu,
    "MaxPool2D": _maxpool2d,
    "AvgPool2D": _avgpool2d,
    "GlobalAvgPool2D": _globalavgpool2d,
    "Flatten": _flatten,
}


# Prepared nodes (see the module doc): op type suffix, and the weights the
# sessions hold, by node key, with how many live sessions hold each.
PREPARED = "_prepared"
_FIXED = "_ai3_fixed_weights"
_held: dict[str, tuple[int, list[np.ndarray]]] = {}


def _prepared(impl):
    """The op body of a prepared node: the node's weights from the session."""

    def run(x, **attrs):
        count_and_weights = _held.get(attrs["node_key"])
        if count_and_weights is None:
            raise errors.InternalError("a prepared ai3 node ran without its session's weights")
        return impl(x, *count_and_weights[1], **attrs, **{_FIXED: True})

    return run


def _prepare(model: onnx.ModelProto) -> tuple[onnx.ModelProto, frozenset]:
    """A copy of `model` whose ai3 nodes with constant weights take only their
    activation (the weights are held in _held), and the node keys held."""
    prepared = onnx.ModelProto()
    prepared.CopyFrom(model)
    graph = prepared.graph
    inits = {t.name: t for t in graph.initializer}
    keys: list[str] = []
    for node in graph.node:
        weights = list(node.input[1:])
        if node.domain != DOMAIN or node.op_type not in _INPUTS or not weights or not all(w in inits for w in weights):
            continue  # weights computed inside the graph: the portable path
        key = next(a.s.decode() for a in node.attribute if a.name == "node_key")
        arrays = [np.ascontiguousarray(numpy_helper.to_array(inits[w]), dtype=np.float32) for w in weights]
        with _lock:
            count, _ = _held.get(key, (0, arrays))
            _held[key] = (count + 1, arrays)
        keys.append(key)
        del node.input[1:]
        node.op_type += PREPARED
    used = {name for node in graph.node for name in node.input} | {o.name for o in graph.output}
    kept = [t for t in graph.initializer if t.name in used]
    del graph.initializer[:]
    graph.initializer.extend(kept)
    return prepared, frozenset(keys)


def _unhold(keys: frozenset) -> None:
    with _lock:
        for key in keys:
            count, arrays = _held.get(key, (1, []))
            if count <= 1:
                _held.pop(key, None)
            else:
                _held[key] = (count - 1, arrays)


def _hook(k_id: int, feed: Any, attributes: Any) -> tuple:
    """The extension's invocation hook: ai3's ops return NumPy arrays (not
    lists) and never raise; every other Python op goes to the stock hook."""
    if k_id not in _ai3_ids:
        return _stock_hook(k_id, feed, attributes)
    opdef = _ocos.Opdef._odlist[k_id]
    attrs: dict[str, Any] = {}
    try:
        attrs = opdef.cast_attributes(attributes)
        out = np.ascontiguousarray(opdef.body(*feed, **attrs), dtype=np.float32)
    except BaseException as e:  # noqa: B902 -- must not escape into ORT
        node = attrs.get("node", "?") if isinstance(attrs, dict) else "?"
        with _lock:
            _pending.append((node, opdef.op_type, e))
        _log.error("ai3 op %s (node '%s') failed: %s: %s", opdef.op_type, node, type(e).__name__, e)
        out = np.zeros((0,), np.float32)
    return (k_id, out.shape, out.reshape(-1))


def _register() -> None:
    global _registered
    with _lock:
        if _registered:
            return
        dt = ortx.PyOp
        variants = [(t, impl, _INPUTS.get(t, 1)) for t, impl in _IMPLS.items()]
        variants += [(t + PREPARED, _prepared(_IMPLS[t]), 1) for t in _INPUTS]
        for op_type, impl, inputs in variants:
            strings, ints, floats = ATTRS[op_type.removesuffix(PREPARED)]
            attrs = {**{a: dt.dt_string for a in strings}, **{a: dt.dt_int64 for a in ints},
                     **{a: dt.dt_float for a in floats}}
            opdef = ortx.onnx_op(
                op_type=f"{DOMAIN}::{op_type}",
                inputs=[dt.dt_float] * inputs,
                outputs=[dt.dt_float],
                attrs=attrs,
            )(impl)
            _ai3_ids.add(id(opdef))
        dt.install_hooker(_hook)
        _registered = True


def session_options(sess_options: Optional[ort.SessionOptions] = None) -> ort.SessionOptions:
    """SessionOptions (new, or the one given, which is modified) with the
    extension library that runs the "ai3" domain registered. Safe to call
    again on the same SessionOptions. (SessionOptions on which the library
    was registered by hand, not here, would get it twice and fail at session
    creation: pass those to onnxruntime.InferenceSession directly.)"""
    _register()
    so = sess_options if sess_options is not None else ort.SessionOptions()
    with _lock:
        if so not in _with_library:
            so.register_custom_ops_library(ortx.get_library_path())
            _with_library.add(so)
    return so


def _take_pending() -> list[tuple[str, str, BaseException]]:
    with _lock:
        found = list(_pending)
        _pending.clear()
    return found


def _as_ai3_error(node: str, op_type: str, e: BaseException) -> errors.Error:
    message = f"ONNX node '{node}' ({DOMAIN}::{op_type}): {e}"
    cls = type(e) if isinstance(e, errors.Error) else errors.InternalError
    try:
        return cls(message)
    except Exception:
        return errors.InternalError(message)


class InferenceSession(ort.InferenceSession):
    """onnxruntime.InferenceSession over a model with "ai3"-domain nodes
    (a ModelProto, serialized bytes or a path), with the ai3 ops registered.
    `run` raises errors from ai3's ops as ai3.Error subclasses naming the
    node."""

    def __init__(
        self,
        model_or_path: Any,
        sess_options: Optional[ort.SessionOptions] = None,
        providers: Optional[Sequence[Any]] = None,
        **kwargs: Any,
    ):
        if isinstance(model_or_path, os.PathLike):
            model_or_path = os.fspath(model_or_path)
        try:
            proto = _read(model_or_path)
        except Exception as e:  # onnx's own exception types are not ai3.Errors
            raise errors.InvalidArgument(f"could not read an ONNX model from {model_or_path!r:.80}: {e}") from e
        prepared, held = _prepare(proto)
        # The session's nodes' layers and weights go when the session does.
        weakref.finalize(self, _release_session, _node_keys(proto), held)
        so = session_options(sess_options)
        try:
            super().__init__(prepared.SerializeToString(), so, providers=list(providers or ["CPUExecutionProvider"]), **kwargs)
        except Exception as e:  # ORT's own exception types are not ai3.Errors
            pending = _take_pending()
            if pending:
                raise _as_ai3_error(*pending[0]) from e
            raise errors.InvalidArgument(f"ONNX Runtime could not load the model: {e}") from e

    def run(self, output_names, input_feed, run_options=None):  # type: ignore[override]
        _take_pending()
        try:
            result = super().run(output_names, input_feed, run_options)
        except Exception as e:
            pending = _take_pending()
            if pending:
                raise _as_ai3_error(*pending[0]) from e
            raise
        pending = _take_pending()
        if pending:
            raise _as_ai3_error(*pending[0]) from pending[0][2]
        return result


__all__ = ["InferenceSession", "clear_cache", "session_options"]
