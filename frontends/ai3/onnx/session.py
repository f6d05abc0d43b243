"""Running rewritten models in ONNX Runtime: the "ai3" domain's node
types, "ai3::Layer" and "ai3::ResidualLayer" (ai3.onnx.rewrite), backed by
ai3's core.

    sess = ai3.onnx.InferenceSession(ai3.onnx.swap_conv2d(model, "gemm"))
    y, = sess.run(None, {"input": x})

Two ops run these nodes:
  - ai3's native ops, "ai3.native::Layer" and "ResidualLayer" (_ort_ops.so, built from
    frontends/ai3/onnx/ort_op against ONNX Runtime's C API headers, which
    ./bazelw takes from Debian's libonnxruntime-dev). An
    ai3.onnx.InferenceSession hands it every single-layer node whose W is a
    constant initializer (_prepare changes the node's domain). The op builds
    the node's core layer once, when ORT creates its kernel, and a call runs
    that layer on ORT's input and output buffers: no Python, no copies, no
    hashing (//bench:overhead: ~0.4 us per trivial node, against ~0.2 us for
    ORT's own and ~3.6 us for the Python op below). A layer the core refuses
    fails when the session is made; a bad input fails the run; both reach
    the caller as the ai3.Error the op marks in ORT's message. A node that
    heavy ORT work follows gives its OpenMP threads back after its layer
    (YIELD_THREADS), instead of leaving them spinning beside ORT's.
  - onnxruntime-extensions' Python op for the "ai3" domain: region nodes
    ("model", an ai3.Model that Python's pipeline builds), nodes whose W is
    computed in the graph or fed by the caller, and every ai3 node of a plain
    onnxruntime.InferenceSession given `session_options()` (its model is
    not ours to change). It builds the node's layer (`op` and its JSON
    `attrs`; for op "model", the region's ai3.Model) once and caches it by
    the node's `node_key`; the weights are input W, a flat float32 tensor
    that the `weights` attribute cuts into views.
    - An ai3.onnx.InferenceSession takes each region node's W out of the
      graph it hands to ORT (W becomes one shared empty initializer) and
      holds the weights by node_key, so nothing is copied, hashed or
      unpacked per call. In a plain session the extension copies W into
      every call, and the cache key adds a fingerprint of 64 evenly spaced
      values of W (so a model whose initializers were edited gets new
      layers). The held layers serve only calls whose W is the empty shared
      one, so a plain session beside an ai3.onnx.InferenceSession of the
      same file (same node keys) never runs the held weights in place of its
      own. The cache is bounded (CACHE_LIMIT, least recently used first); an
      InferenceSession drops its nodes' layers when it is collected, and
      `clear_cache()` empties it.
    - Once a held node's layer is built, the hook finds its core object by
      (node_key, algorithm) in one dict and calls it on ORT's array. What is
      left per node is the extension's: its GIL acquire, the attribute dict
      it builds per call, the input copied into a new NumPy array and the
      output copied back.
    - The extension's stock invocation hook turns outputs into Python lists
      (`tolist()`); ai3 installs a hook that returns the array (about 30x
      faster on a 4 MB output) for ai3's op and defers to the stock hook for
      every other Python op.
    - A Python exception escaping an extension op terminates the process
      (pybind11 error_already_set inside ORT), so the op never raises: it
      records the error and returns an empty tensor.
      `InferenceSession.run` re-raises the first recorded error as the same
      ai3.Error subclass, naming the node. A plain
      onnxruntime.InferenceSession cannot: it returns (wrong, empty) results
      and the error is only logged to the `ai3.onnx` logger. The record is
      process-wide.
The rewrite also writes weightless nodes straight into the native domain
(ai3.native::Concat and ::MultiLayer, see ai3.onnx.rewrite._sink_transposes):
with nothing to hold or feed, every session with session_options() runs
them natively.
The two ops live in two domains because ORT refuses a domain that two
libraries both register ("Domain already set in registry").
"""

from __future__ import annotations

import collections
import json
import logging
import os
import threading
import weakref
from collections.abc import Sequence
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import onnxruntime_extensions as ortx
from onnx import numpy_helper
from onnxruntime_extensions import _ocos

from ai3 import errors, layers
from ai3.onnx import rewrite
from ai3.onnx.rewrite import DOMAIN, NATIVE_DOMAIN, NODE_TYPE, NODE_TYPES, RESIDUAL_NODE_TYPE, node_attr

_log = logging.getLogger("ai3.onnx")
_lock = threading.Lock()
# (node key, algorithm, weights fingerprint) -> core layer / ai3.Model, least recently used first.
_cache: collections.OrderedDict[tuple, Any] = collections.OrderedDict()
CACHE_LIMIT = 4096
_pending: list[tuple[str, str, BaseException]] = []  # (node, op type, error)
_registered = False
_ai3_ops: dict[int, Any] = {}  # the extension's id of each of ai3's Python ops -> its function
_stock_hook = _ocos._on_pyop_invocation
# SessionOptions that already have the library (registering it twice on one
# SessionOptions fails at session creation with "Conflicting ... kernel").
_with_library: weakref.WeakSet[ort.SessionOptions] = weakref.WeakSet()
# node key -> (sessions holding it, its weights), see the module doc.
_held: dict[str, tuple[int, dict]] = {}
# (node key, algorithm) -> the core's own callable of a held node's layer
# (held region nodes only, see _kernel): what _hook runs, with no other work, on every call after the
# node's first.
_bound: dict[tuple[str, str], Any] = {}
_NO_WEIGHTS = "ai3_no_weights"
_ATTRS = ("op", "attrs", "weights", "algorithm", "node", "node_key")


def clear_cache() -> None:
    """Drops every cached core layer (they are rebuilt on the next run)."""
    with _lock:
        _cache.clear()
        _bound.clear()


def _fingerprint(w: np.ndarray) -> tuple:
    flat = w.reshape(-1)
    step = max(1, flat.size // 64)
    return (flat.size, flat[::step][:64].tobytes())


def _build(attrs: dict[str, Any], weights: dict) -> Any:
    core_attrs = json.loads(attrs["attrs"])
    if attrs["op"] == rewrite.REGION:
        return rewrite.region_model(core_attrs, weights, json.loads(attrs["algorithm"]))
    return layers.Layer(attrs["op"], core_attrs, weights, algorithm=attrs["algorithm"], name=attrs["node"])


def _kernel(x: np.ndarray, w: np.ndarray, **attrs: Any) -> np.ndarray:
    """Every ai3 node: its cached layer on x."""
    if x.dtype != np.float32:
        raise errors.DTypeError(f"ai3's ONNX op takes float32, got {x.dtype}")
    node_key = attrs["node_key"]
    # Only an ai3.onnx.InferenceSession's node reads the empty shared W; a
    # plain ORT session over the same file (same node keys, maybe edited
    # weights) passes its own W and must not get the held layer. (An empty
    # W that nobody holds is unpacked as it is: right for a layer without
    # weights, a ShapeError naming the weight otherwise.)
    held = _held.get(node_key) if w.size == 0 else None
    key = (node_key, attrs["algorithm"]) if held is not None else (node_key, attrs["algorithm"], _fingerprint(w))
    with _lock:
        layer = _cache.get(key)
        if layer is not None:
            _cache.move_to_end(key)
    if layer is None:
        weights = held[1] if held is not None else rewrite.unpack(w, json.loads(attrs["weights"]))
        layer = _build(attrs, weights)
        with _lock:
            _cache[key] = layer
            while len(_cache) > CACHE_LIMIT:
                _cache.popitem(last=False)
            if held is not None and node_key in _held:
                # Held weights cannot change: later calls go straight to the
                # core (_hook); _release_session unbinds it. Only region nodes
                # are held (_prepare), so `layer` is an ai3.Model; its core
                # object validates ORT's fresh C-contiguous float32 input and
                # returns a new array, all the op needs.
                _bound[key] = layer._core
    return layer(x)


def _residual_kernel(x: np.ndarray, w: np.ndarray, r: np.ndarray, after: str = "", **attrs: Any) -> np.ndarray:
    """A ResidualLayer node: after(layer(x) + r) (ai3.onnx.rewrite's
    _fold_residual_adds; the native op fuses the sum into the layer)."""
    y = np.array(_kernel(x, w, **attrs), dtype=np.float32)
    if r.shape != y.shape:
        raise errors.ShapeError(f"the residual R is {tuple(r.shape)}; the layer's output is {tuple(y.shape)}")
    y += r
    if after == "relu":
        np.maximum(y, 0, out=y)
    elif after:
        raise errors.InvalidArgument(f"attribute after must be 'relu' or empty, got {after!r}")
    return y


def _read(model: Any) -> onnx.ModelProto:
    if isinstance(model, onnx.ModelProto):
        return model
    if isinstance(model, str):
        return onnx.load(model)
    return onnx.load_from_string(bytes(model))


# The native op's attribute telling it to give its OpenMP threads back after
# its layer (omp_pause_resource_all): ai3's OpenMP worker spins for about
# 9 ms after each parallel region (libgomp's default), on a core that ORT's
# own threads need where ORT's heavy nodes run next. convnext_tiny's
# rewritten graph (ai3's depthwise convs, each followed by ORT's LayerNorm
# and MatMuls) ran at 1.15-1.32x ORT, and at 1.02-1.04x with its nodes
# yielding. Not after every node: the threads are made again at the next
# ai3 node (about 50 us), which made efficientnet_b0 (ai3 nodes one after
# the other, elementwise ORT nodes between) 1.9-2.7x.
YIELD_THREADS = "yield_threads"
# A node yields where ORT's own work before the next ai3 node is at least
# this many floating-point operations (about 1 ms on 2 cores). Below it,
# making the threads again costs more than their spinning: yielding before
# the classifier Gemm at the end of mobilenet_v2 (2.6 MFLOP) made it
# 2.0-3.6x ORT, since the next run's first ai3 node made its threads anew.
YIELD_MIN_FLOPS = 1e8


def _known_shapes(model: onnx.ModelProto) -> dict[str, tuple[int, ...]]:
    """Every tensor's static shape that ONNX's shape inference finds (the
    rewrite records its ai3 nodes' outputs), {} where it fails."""
    try:
        inferred = onnx.shape_inference.infer_shapes(model)
    except Exception:  # noqa: BLE001 - a model inference cannot read: no estimates, no yielding
        return {}
    g = inferred.graph
    shapes = {t.name: tuple(t.dims) for t in g.initializer}
    for v in [*g.input, *g.value_info, *g.output]:
        t = v.type.tensor_type
        if v.type.HasField("tensor_type") and t.HasField("shape") and all(d.HasField("dim_value") for d in t.shape.dim):
            shapes[v.name] = tuple(d.dim_value for d in t.shape.dim)
    return shapes


# Products whose shapes inference could not resolve (a transformer's
# reshapes computed from Shape nodes): this many of them before the next ai3
# node count as heavy work (a transformer block has four or more).
_UNKNOWN_PRODUCTS = 4
_PRODUCTS = frozenset({"MatMul", "Gemm", "Conv", "ConvTranspose", "Einsum"})


def _flops(node: onnx.NodeProto, shapes: dict[str, tuple[int, ...]]) -> float | None:
    """An ORT node's floating-point operations, where they are most of the
    work (products, convolutions, normalisations); 0 for other nodes, None
    for a product whose shapes are unknown."""
    out = shapes.get(node.output[0]) if node.output else None
    if node.domain not in ("", "ai.onnx"):
        return 0.0
    if out is None:
        return None if node.op_type in _PRODUCTS else 0.0
    numel = float(np.prod(out)) if out else 1.0
    first = shapes.get(node.input[0]) if node.input else None
    if node.op_type == "MatMul" and first:
        return 2.0 * numel * first[-1]
    if node.op_type == "Gemm" and first and len(first) == 2:
        trans_a = any(a.name == "transA" and a.i for a in node.attribute)
        return 2.0 * numel * first[0 if trans_a else 1]
    if node.op_type in ("Conv", "ConvTranspose") and len(node.input) > 1 and shapes.get(node.input[1]):
        return 2.0 * numel * float(np.prod(shapes[node.input[1]][1:]))
    if node.op_type in ("LayerNormalization", "BatchNormalization", "InstanceNormalization", "Softmax"):
        return 8.0 * numel
    return 0.0


def _heavy_work_follows(nodes: Sequence[onnx.NodeProto], i: int, shapes: dict[str, tuple[int, ...]]) -> bool:
    """Whether ORT's nodes after node i, up to the next ai3 node in the
    graph's order (ONNX's topological order, which ORT's sequential executor
    follows closely), do at least YIELD_MIN_FLOPS, or hold _UNKNOWN_PRODUCTS
    products of unknown shapes."""
    work, unknown = 0.0, 0
    for node in nodes[i + 1 :]:
        if node.domain in (DOMAIN, NATIVE_DOMAIN):
            break
        flops = _flops(node, shapes)
        if flops is None:
            unknown += 1
        else:
            work += flops
    return work >= YIELD_MIN_FLOPS or unknown >= _UNKNOWN_PRODUCTS


def _prepare(model: onnx.ModelProto) -> tuple[onnx.ModelProto, frozenset]:
    """A copy of `model` for ORT, and the node keys whose weights it holds:
      - a single-layer node with a constant W runs as the native op
        (NATIVE_DOMAIN, _ort_ops.so), which reads W once, when ORT creates
        its kernel;
      - a region node with a constant W reads the shared empty W instead,
        its weights held in _held for the Python op.
    A node whose W is computed in the graph, or is a graph input that a
    caller may feed, stays the Python op and reads W per call."""
    prepared = onnx.ModelProto()
    prepared.CopyFrom(model)
    graph = prepared.graph
    fed = {i.name for i in graph.input}
    inits = {t.name: t for t in graph.initializer if t.name not in fed}
    keys: list[str] = []
    native = False
    nodes = list(graph.node)
    shapes: dict[str, tuple[int, ...]] | None = None  # inferred once, if a native node asks
    for i, node in enumerate(graph.node):
        arity = 3 if node.op_type == RESIDUAL_NODE_TYPE else 2
        if node.domain != DOMAIN or node.op_type not in NODE_TYPES or len(node.input) != arity:
            continue
        if node.input[1] not in inits:
            continue  # W computed inside the graph: the portable path
        if node_attr(node, "op") != rewrite.REGION:
            node.domain = NATIVE_DOMAIN
            if shapes is None:
                shapes = _known_shapes(model)
            if _heavy_work_follows(nodes, i, shapes):
                node.attribute.append(onnx.helper.make_attribute(YIELD_THREADS, 1))
            native = True
            continue
        key = node_attr(node, "node_key")
        w = np.ascontiguousarray(numpy_helper.to_array(inits[node.input[1]]), dtype=np.float32)
        weights = rewrite.unpack(w, json.loads(node_attr(node, "weights")))
        with _lock:
            count, _ = _held.get(key, (0, weights))
            _held[key] = (count + 1, weights)
        keys.append(key)
        node.input[1] = _NO_WEIGHTS
    if native and not any(o.domain == NATIVE_DOMAIN for o in prepared.opset_import):
        prepared.opset_import.append(onnx.helper.make_opsetid(NATIVE_DOMAIN, rewrite.DOMAIN_VERSION))
    if keys:
        used = {name for node in graph.node for name in node.input} | {o.name for o in graph.output}
        kept = [t for t in graph.initializer if t.name in used]
        del graph.initializer[:]
        graph.initializer.extend(kept)
        graph.initializer.append(numpy_helper.from_array(np.zeros((0,), np.float32), _NO_WEIGHTS))
    return prepared, frozenset(keys)


def _release_session(node_keys: frozenset) -> None:
    """Drops the layers and held weights of a collected session's nodes."""
    with _lock:
        for key in [k for k in _cache if k[0] in node_keys]:
            del _cache[key]
        for key in [k for k in _bound if k[0] in node_keys]:
            del _bound[key]
        for key in node_keys:
            count, weights = _held.get(key, (1, {}))
            if count <= 1:
                _held.pop(key, None)
            else:
                _held[key] = (count - 1, weights)


def _hook(k_id: int, feed: Any, attributes: Any) -> tuple:
    """The extension's invocation hook: ai3's op returns NumPy arrays (not
    lists) and never raises; every other Python op goes to the stock hook."""
    kernel = _ai3_ops.get(k_id)
    if kernel is None:
        return _stock_hook(k_id, feed, attributes)
    attrs: dict[str, Any] = attributes
    try:
        held = kernel is _kernel and feed[1].size == 0  # (only region nodes are held)
        run = _bound.get((attrs["node_key"], attrs["algorithm"])) if held else None
        if run is not None:  # the floor: one dict look-up, then the core
            out = run(feed[0])
            return (k_id, out.shape, out.reshape(-1))
        out = np.ascontiguousarray(kernel(*feed, **attributes), dtype=np.float32)
    except BaseException as e:  # noqa: B902 -- must not escape into ORT
        node = attrs.get("node", "?") if isinstance(attrs, dict) else "?"
        op = attrs.get("op", "?") if isinstance(attrs, dict) else "?"
        with _lock:
            _pending.append((node, op, e))
        _log.error("ai3 node '%s' (%s) failed: %s: %s", node, op, type(e).__name__, e)
        out = np.zeros((0,), np.float32)
    return (k_id, out.shape, out.reshape(-1))


def _register() -> None:
    global _registered
    with _lock:
        if _registered:
            return
        dt = ortx.PyOp
        for node_type, kernel, inputs, attrs in (
            (NODE_TYPE, _kernel, 2, _ATTRS),
            (RESIDUAL_NODE_TYPE, _residual_kernel, 3, (*_ATTRS, "after")),
        ):
            opdef = ortx.onnx_op(
                op_type=f"{DOMAIN}::{node_type}",
                inputs=[dt.dt_float] * inputs,
                outputs=[dt.dt_float],
                attrs={a: dt.dt_string for a in attrs},
            )(kernel)
            _ai3_ops[id(opdef)] = kernel
        dt.install_hooker(_hook)
        _registered = True


_SPINNING = "session.intra_op.allow_spinning"
_NATIVE_LIBRARY = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "_ort_ops.so")


def native_library() -> str:
    """The path of ai3's native ONNX Runtime op library (_ort_ops.so)."""
    if not os.path.exists(_NATIVE_LIBRARY):
        raise errors.UnsupportedOperation(
            f"ai3's ONNX Runtime op library is not in this build ({_NATIVE_LIBRARY} is missing); "
            "build //frontends/ai3:_ort_ops.so (part of Bazel target //frontends/ai3:ai3)"
        )
    return _NATIVE_LIBRARY


def session_options(sess_options: ort.SessionOptions | None = None) -> ort.SessionOptions:
    """SessionOptions (new, or the one given, which is modified) with the
    libraries that run ai3's nodes registered: the extension's, whose Python
    op is the "ai3" domain, and ai3's native one (NATIVE_DOMAIN). Safe to call
    again on the same SessionOptions. (SessionOptions on which the library
    was registered by hand, not here, would get it twice and fail at session
    creation: pass those to onnxruntime.InferenceSession directly.)

    Unless the options already say otherwise, ORT's intra-op threads do not
    spin while idle: an ai3 node runs its own OpenMP team on the caller's
    thread, and ORT's pool spinning beside it takes the cores that team
    needs (resnet18 with its convs swapped, 2 threads: 89 ms spinning,
    28 ms not, against plain ORT's 11 ms)."""
    _register()
    so = sess_options if sess_options is not None else ort.SessionOptions()
    with _lock:
        if so not in _with_library:
            so.register_custom_ops_library(ortx.get_library_path())
            so.register_custom_ops_library(native_library())
            _with_library.add(so)
        try:
            so.get_session_config_entry(_SPINNING)
        except RuntimeError:  # not set by the caller
            so.add_session_config_entry(_SPINNING, "0")
    return so


def _take_pending() -> list[tuple[str, str, BaseException]]:
    with _lock:
        found = list(_pending)
        _pending.clear()
    return found


def _native_error(e: BaseException) -> errors.Error | None:
    """The ai3.Error a native node's failure carries in ORT's message (the
    op marks it "ai3.<ErrorClass>: ..." and names the layer), or None."""
    found = errors.marked(str(e))
    return None if found is None else found[0](found[1].strip())


def _as_ai3_error(node: str, op_type: str, e: BaseException) -> errors.Error:
    message = f"ONNX node '{node}' ({DOMAIN}::{NODE_TYPE} {op_type}): {e}"
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
        sess_options: ort.SessionOptions | None = None,
        providers: Sequence[Any] | None = None,
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
        weakref.finalize(self, _release_session, held)
        so = session_options(sess_options)
        try:
            super().__init__(
                prepared.SerializeToString(), so, providers=list(providers or ["CPUExecutionProvider"]), **kwargs
            )
        except Exception as e:  # ORT's own exception types are not ai3.Errors
            pending = _take_pending()
            if pending:
                raise _as_ai3_error(*pending[0]) from e
            native = _native_error(e)
            if native is not None:
                raise native from e
            raise errors.InvalidArgument(f"ONNX Runtime could not load the model: {e}") from e

    def run(self, output_names, input_feed, run_options=None):  # type: ignore[override]
        _take_pending()
        try:
            result = super().run(output_names, input_feed, run_options)
        except Exception as e:
            pending = _take_pending()
            if pending:
                raise _as_ai3_error(*pending[0]) from e
            native = _native_error(e)
            if native is not None:
                raise native from e
            raise
        pending = _take_pending()
        if pending:
            raise _as_ai3_error(*pending[0]) from pending[0][2]
        return result


__all__ = ["InferenceSession", "clear_cache", "native_library", "session_options"]
