"""Any core layer as one PyTorch custom operator: ``torch.ops.ai3.layer``.

Importing this module registers, in the ``ai3`` namespace::

    ai3::layer(Tensor[] inputs, Tensor[] weights, str weight_names,
               str op, str attrs, str algorithm, str name,
               str backward="") -> Tensor

- ``op``: a core op (``ai3.layers.schema(op)``, core/ops/README.md);
- ``inputs``: its inputs (one for most ops; q, k, v[, mask] for attention);
- ``weights``: the layer's weights, ``weight_names`` theirs (comma-separated:
  torch.jit.trace takes no list of strings), in the op's declared order (``ai3.layers.schema(op)["weights"]``), an absent optional
  one (a missing bias) left out. (Not ``Tensor?[]`` with None for it:
  torch's autograd takes a list with a None in it as one opaque argument,
  so its tensors would get no gradient; a backward needs them as tensors);
- ``attrs``: the layer's attributes as canonical JSON (``canonical(attrs)``:
  sorted keys, no spaces), so graphs captured by torch.compile,
  torch.export and torch.jit.trace stay self-describing;
- ``algorithm``: a name from ``ai3.algorithms()[op]`` or "default";
- ``name``: the layer's name in error messages (the module path);
- ``backward``: the algorithms of the op's gradient ops, as canonical JSON
  ``{target: algorithm}`` (target "data" or a weight name, as in
  ``ai3.layers.backward_ops(op)``; e.g. ``{"data":"gemm","weight":"direct"}``);
  a target left out, or ``""`` for all, runs "default". The forward ignores
  it (beyond checking it); it is an argument, not module state, so a graph
  captured by torch.compile or torch.export keeps the backward choice.

Inputs and weights: float32 or float64, of one dtype, on the CPU or (in a
--config=cuda build) on a GPU, where they stay: weighted layers run on
their weight's device, weightless ones on the input's (ai3.cuda). A tensor
on another device raises ai3.UnsupportedOperation; another dtype
ai3.DTypeError. The fake (meta) kernel answers the output shape with the
core's own rule (``ai3.layers.output_shape``), so a bad shape or attribute
raises the same ai3 error at trace time (torch.compile, torch.export) as
at run time. The result is a new tensor (never a view of an input).

Core layers are built once and reused: a layer copies (and may transform,
e.g. winograd) its weights, so rebuilding it per call would cost more than
the op. Layers with weights are cached per (first) weight tensor (weakly:
the entry goes with the tensor) and keyed by every weight's data pointer,
version counter, dtype, shape and strides, the other weights' identities,
the op, attrs, algorithm and name; an in-place update of a weight
(optimizer step, ``load_state_dict``) or a replaced ``.data``
(``module.to(torch.float64)``) therefore builds a new layer, and the stale
one is dropped. (A write through ``t.data`` bumps no version counter, as
torch.autograd.gradcheck's perturbations do: call clear_cache() after
one.) Weightless layers are cached per thread by their
parameters, at most WEIGHTLESS_CACHE_SIZE of them.

Autograd: the backward of a layer of op F runs F's gradient ops
(``F_backward_data``, ``F_backward_<weight>``: core ops like any other,
found by ``ai3.layers.backward_ops``) through ai3::layer itself, with
inputs [grad_output, x, y], F's weights and attrs and the algorithm
``backward`` names, computing only the gradients autograd asks for. Those
layers are cached as above: a weight's in-place update (an optimizer's
step) bumps its version, so the next forward and backward build fresh
layers and the stale ones go. A gradient the core has no op for raises
ai3.UnsupportedOperation naming the layer when the backward runs (not when
torch.compile traces it). Backward through a backward (double backward)
raises the same way: the gradient ops have no gradient ops.
"""

from __future__ import annotations

import collections
import functools
import json
import threading
import warnings
import weakref
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch
from torch.utils.weak import WeakIdKeyDictionary

from ai3 import cuda, errors, layers

NAMESPACE = "ai3"
SCHEMA = (
    "(Tensor[] inputs, Tensor[] weights, str weight_names, str op, str attrs, str algorithm, str name, "
    'str backward="") -> Tensor'
)
WEIGHTLESS_CACHE_SIZE = 1024
_FLOATS = (torch.float32, torch.float64)


def canonical(attrs: Mapping[str, Any]) -> str:
    """attrs as the op's `attrs` argument: JSON with sorted keys (tuples
    become lists), so equal attributes give equal strings."""
    try:
        return json.dumps(dict(attrs), sort_keys=True, separators=(",", ":"))
    except TypeError as e:
        raise errors.InvalidArgument(
            f"layer attributes must be JSON values (numbers, strings, lists, None): {e}"
        ) from None


@functools.lru_cache(maxsize=4096)
def parse(attrs: str) -> dict[str, Any]:
    try:
        value = json.loads(attrs)
    except ValueError as e:
        raise errors.InvalidArgument(f"attrs must be a JSON object, got {attrs!r} ({e})") from None
    if not isinstance(value, dict):
        raise errors.InvalidArgument(f"attrs must be a JSON object, got {attrs!r}")
    return value


def label(op: str, name: str) -> str:
    """How messages name a layer, as everywhere in ai3: "conv2d layer 'features.0'"."""
    return f"{op} layer '{name or op}'"


@functools.cache
def weight_names(op: str) -> tuple[str, ...]:
    """The op's weights, in their declared order."""
    return tuple(w["name"] for w in layers.schema(op)["weights"])


# ---------------------------------------------------------------------------
# Argument checks, shared by the real and the fake kernel. They read only
# metadata (shapes may be SymInts under torch.compile(dynamic=True)); the
# core checks shapes and attributes.


def _check_tensor(where: str, t: torch.Tensor, what: str) -> None:
    if t.device.type == "cuda" and not cuda.built():
        raise errors.UnsupportedOperation(
            f"{where}: {what} is on {t.device}; this ai3 build runs on the CPU only (build with --config=cuda)"
        )
    if t.device.type not in ("cpu", "meta", "cuda"):
        raise errors.UnsupportedOperation(f"{where}: {what} is on {t.device}; ai3 runs on cpu and cuda")
    if t.dtype not in _FLOATS:
        raise errors.DTypeError(f"{where}: {what} has dtype {t.dtype}; ai3 takes float32 or float64")


@functools.lru_cache(maxsize=1024)
def _declared(op: str, names: str) -> tuple[str, ...] | None:
    """`names` split, if they are among the op's weights, each once, in the
    declared order; else None. (Cached: the same few come with every call.)"""
    declared = weight_names(op)
    split = tuple(names.split(",")) if names else ()
    ok = all(n in declared for n in split) and list(split) == [n for n in declared if n in split]
    return split if ok else None


def named_weights(op: str, weights: Sequence[torch.Tensor], names: str, where: str) -> dict[str, torch.Tensor]:
    """{name: weight} from ai3::layer's weights and weight_names, checked
    against the op's declaration."""
    split = _declared(op, names)
    if split is None:
        raise errors.InvalidArgument(
            f"{where}: weight names {names.split(',')} are not among {op}'s weights {weight_names(op)}, in that order"
        )
    if len(split) != len(weights):
        raise errors.InvalidArgument(f"{where}: {len(weights)} weights but {len(split)} weight names {list(split)}")
    return dict(zip(split, weights))


def _check(
    inputs: Sequence[torch.Tensor], weights: Sequence[torch.Tensor], names: str, op: str, name: str
) -> dict[str, torch.Tensor]:
    where = label(op, name)
    named = named_weights(op, weights, names, where)
    if not inputs:
        raise errors.InvalidArgument(f"{where}: takes at least one input, got none")
    x = inputs[0]
    _check_tensor(where, x, "input")
    for i, t in enumerate(inputs[1:], 1):
        _check_other(where, x, t, f"input {i}")
    for n, w in named.items():
        _check_other(where, x, w, n)
    return named


def _check_other(where: str, x: torch.Tensor, t: torch.Tensor, what: str) -> None:
    _check_tensor(where, t, what)
    if t.device.type != x.device.type:
        raise errors.InvalidArgument(f"{where}: input is on {x.device} but {what} is on {t.device}")
    if t.dtype != x.dtype:
        raise errors.DTypeError(f"{where}: input is {x.dtype} but {what} is {t.dtype}; convert one of them")


def _ints(shape: Sequence[Any]) -> list[int]:
    # SymInts (torch.compile(dynamic=True)) become their hints here, which
    # guards the graph on them: the core answers for concrete shapes.
    return [int(d) for d in shape]


def output_shape(inputs, weights, names, op: str, attrs: str, name: str) -> tuple[int, ...]:
    """The layer's output shape from the core's shape rule (the fake kernel)."""
    named = _check(inputs, weights, names, op, name)
    dtype = str(inputs[0].dtype).replace("torch.", "")
    weight_shapes = {n: _ints(w.shape) for n, w in named.items()}
    return layers.output_shape(op, parse(attrs), weight_shapes, [_ints(x.shape) for x in inputs], dtype, name or op)


# ---------------------------------------------------------------------------
# The cache of core layers.


class _Entry:
    """A core layer and the lock that serializes its calls (a core layer
    owns a workspace, so one layer must not run on two threads at once).

    A layer runs on one device. Weighted layers are built on their weight's
    device; a weightless entry keeps `build` and makes a layer for each other
    device an input comes from (a CUDA layer per GPU, see ai3.cuda)."""

    __slots__ = ("layer", "lock", "state", "others", "build", "on_device", "__weakref__")

    def __init__(self, layer, state=None, others: Sequence[torch.Tensor] = (), build=None):
        self.layer = layer
        self.lock = threading.Lock()
        self.state = state  # the first weight's
        self.others = [(weakref.ref(t), _state(t)) for t in others]  # the other weights
        self.build = build
        self.on_device: dict = {}

    def run(self, inputs: Sequence[torch.Tensor]) -> torch.Tensor:
        with self.lock:
            layer = self.layer
            if inputs[0].device.type == "cuda" and self.build is not None:
                layer = self.on_device.get(inputs[0].device)
                if layer is None:
                    layer = self.on_device[inputs[0].device] = _build(self.build, inputs[0].device)
            return layer(*inputs)

    def stale(self, state, others: Sequence[torch.Tensor]) -> bool:
        """Whether this entry can no longer hit: an older content of the
        first weight, a dead other weight, or an older content of one."""
        if self.state != state:
            return True
        for ref, s in self.others:
            t = ref()
            if t is None or (any(t is o for o in others) and s != _state(t)):
                return True
        return False

    def holds(self, others: Sequence[torch.Tensor]) -> bool:
        return len(others) == len(self.others) and all(ref() is t for (ref, _), t in zip(self.others, others))


def _build(build: Callable[[], Any], device: torch.device | None = None) -> Any:
    with cuda.layer_device(device):  # the device the layer runs on
        return build()


_weighted: WeakIdKeyDictionary = WeakIdKeyDictionary()  # first weight -> {key: _Entry}
_weighted_lock = threading.Lock()
_thread_local = threading.local()  # .layers: OrderedDict {key: _Entry} of weightless layers
_warned_inference_tensor = False


def _state(t: torch.Tensor):
    """What identifies the contents of `t`, or None when it cannot be known
    (an inference tensor has no version counter)."""
    try:
        version = t._version
    except RuntimeError:
        return None
    return (t.data_ptr(), version, t.dtype, tuple(t.shape), tuple(t.stride()))


def _weighted_layer(key: tuple, tensors: list[torch.Tensor], build: Callable[[], Any]) -> _Entry:
    first, others = tensors[0], tensors[1:]
    states = [_state(t) for t in tensors]
    if any(s is None for s in states):
        global _warned_inference_tensor
        if not _warned_inference_tensor:
            _warned_inference_tensor = True
            warnings.warn(
                "ai3: a weight is an inference tensor (made under torch.inference_mode), which has no "
                "version counter; ai3 rebuilds its layer on every call instead of caching it",
                stacklevel=4,
            )
        return _Entry(_build(build, first.device))
    key = (key, states[0], tuple((id(t), s) for t, s in zip(others, states[1:])))
    with _weighted_lock:
        per_weight = _weighted.get(first)
        entry = None if per_weight is None else per_weight.get(key)
    if entry is not None and entry.holds(others):
        return entry
    entry = _Entry(_build(build, first.device), states[0], others)
    with _weighted_lock:
        per_weight = _weighted.get(first)
        if per_weight is None:
            per_weight = _weighted[first] = {}
        for k in [k for k, e in per_weight.items() if e.stale(states[0], others)]:
            del per_weight[k]
        per_weight[key] = entry
    return entry


def _weightless_layer(key: tuple, build: Callable[[], Any]) -> _Entry:
    cache = getattr(_thread_local, "layers", None)
    if cache is None:
        cache = _thread_local.layers = collections.OrderedDict()
    entry = cache.get(key)
    if entry is None:
        entry = cache[key] = _Entry(_build(build), build=build)
        while (
            len(cache) > WEIGHTLESS_CACHE_SIZE
        ):  # bounded: attrs that vary per call (a per-input size) must not grow it forever
            cache.popitem(last=False)
    else:
        cache.move_to_end(key)
    return entry


def clear_cache() -> None:
    """Forgets every cached core layer (of this thread, for weightless ones)."""
    with _weighted_lock:
        _weighted.clear()
    _thread_local.layers = collections.OrderedDict()


def cached_layer_count() -> int:
    """How many core layers the cache holds (those with weights, plus this
    thread's weightless ones): for tests and diagnostics."""
    with _weighted_lock:
        weighted = sum(len(d) for d in _weighted.values())
    return weighted + len(getattr(_thread_local, "layers", {}))


def _entry(named: Mapping[str, torch.Tensor], op: str, attrs: str, algorithm: str, name: str) -> _Entry:
    """The cached core layer for these arguments, built if needed."""
    tensors = list(named.values())

    def build() -> layers.Layer:
        return layers.Layer(op, parse(attrs), dict(named), algorithm=algorithm, name=name or op)

    key = (op, tuple(named), attrs, algorithm, name)
    if not tensors:
        return _weightless_layer(key, build)
    return _weighted_layer(key, tensors, build)


def buildable(weights: Sequence[torch.Tensor]) -> bool:
    """Whether a layer can be built from these weights now (CPU floats, or
    CUDA ones in a CUDA build: the layer is then built on their GPU)."""
    for t in weights:
        on_device = t.device.type == "cpu" or (t.device.type == "cuda" and cuda.built())
        if not on_device or t.dtype not in _FLOATS:
            return False
    return True


def prepare(op: str, attrs: str, weights: Sequence[torch.Tensor], names: str, algorithm: str, name: str = "") -> str:
    """Builds (and caches) the core layer that ``torch.ops.ai3.layer`` would
    run for these arguments and returns the algorithm it runs ("default"
    resolved). Raises what building the layer raises
    (ai3.AlgorithmNotApplicable, ...), so a swap can refuse a layer before
    its first forward."""
    where = label(op, name)
    named = named_weights(op, weights, names, where)
    for n, t in named.items():
        _check_tensor(where, t, n)
        if t.dtype != weights[0].dtype:
            raise errors.DTypeError(f"{where}: weight {next(iter(named))} is {weights[0].dtype} but {n} is {t.dtype}")
    return _entry(named, op, attrs, algorithm, name).layer.algorithm


# ---------------------------------------------------------------------------
# The op.


@torch.library.custom_op("ai3::layer", mutates_args=(), schema=SCHEMA)
def layer(inputs, weights, weight_names, op, attrs, algorithm, name, backward=""):
    named = _check(inputs, weights, weight_names, op, name)
    parse_backward(backward, op, name)
    return _entry(named, op, attrs, algorithm, name).run(inputs)


@layer.register_fake
def _(inputs, weights, weight_names, op, attrs, algorithm, name, backward=""):
    parse_backward(backward, op, name)
    return inputs[0].new_empty(output_shape(inputs, weights, weight_names, op, attrs, name))


# ---------------------------------------------------------------------------
# Autograd, for every op at once: each gradient is a core op of its own
# (<op>_backward_<target>, ai3.layers.backward_ops), run through this same
# ai3::layer with inputs [grad_output, x, y] and the forward's weights and
# attrs, so eager, torch.compile, torch.export and opcheck see custom ops
# with fake kernels in the backward graph too. Only the gradients autograd
# asks for (ctx.needs_input_grad) are computed. A gradient the core lacks
# (an op without gradient ops, an input of a multi-input op) goes through
# ai3::backward_unsupported, whose real kernel raises and whose fake kernel
# lets torch.compile/AOTAutograd trace the backward graph of such a model
# (the error then comes only if backward runs).


def parse_backward(backward: str, op: str, name: str) -> dict[str, str]:
    """ai3::layer's `backward`: canonical JSON {target: algorithm} of the
    op's gradient ops ("" or a target left out: "default")."""
    if not backward:
        return {}
    chosen = _parse_backward(backward)
    if chosen is None:
        raise errors.InvalidArgument(
            f"{label(op, name)}: backward must be a JSON object of algorithm names, got {backward!r}"
        )
    unknown = sorted(set(chosen) - set(layers.backward_ops(op)))
    if unknown:
        raise errors.InvalidArgument(
            f"{label(op, name)}: backward names gradient {unknown[0]!r}, but {op}'s gradient ops are "
            f"{layers.backward_ops(op) or 'none'}"
        )
    return chosen


@functools.lru_cache(maxsize=1024)
def _parse_backward(backward: str) -> dict[str, str] | None:
    try:
        value = json.loads(backward)
    except ValueError:
        return None
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        return None
    return value


def no_gradient(op: str, name: str, target: str, multi_input: bool) -> str:
    """Why the gradient w.r.t. `target` ("data" or a weight) cannot be had."""
    what = "its input" if target == "data" else target
    if multi_input:
        why = "gradients of multi-input layers are not implemented"
    else:
        have = ", ".join(layers.backward_ops(op).values()) or "none"
        why = f"the core has no op {op}{layers.BACKWARD}{target} (its gradient ops: {have})"
    return (
        f"{label(op, name)}: no gradient w.r.t. {what}: {why}; keep the PyTorch layer (selector 'torch') "
        "where you need this gradient, or run under torch.no_grad()"
    )


@torch.library.custom_op("ai3::backward_unsupported", mutates_args=(), schema="(Tensor grad, str why) -> Tensor")
def backward_unsupported(grad, why):
    raise errors.UnsupportedOperation(why)


@backward_unsupported.register_fake
def _(grad, why):
    return grad.new_empty(())


def _setup_context(ctx, inputs, output):
    tensors, weights, names, op, attrs, _, name, backward = inputs
    ctx.call = (names, op, attrs, name, backward, len(tensors))
    ctx.save_for_backward(*tensors, output, *weights)


def _backward(ctx, grad):
    names, op, attrs, name, backward, count = ctx.call
    saved = ctx.saved_tensors
    inputs, y, weights = saved[:count], saved[count], list(saved[count + 1 :])
    need_inputs, need_weights = ctx.needs_input_grad[0], ctx.needs_input_grad[1]
    chosen = parse_backward(backward, op, name)
    gradient_ops = layers.backward_ops(op)
    grad = grad.contiguous()  # autograd hands e.g. sum()'s gradient as a stride-0 expand

    def gradient(target: str, like: torch.Tensor) -> torch.Tensor:
        grad_op = gradient_ops.get(target)
        if grad_op is None or count != 1:
            return torch.ops.ai3.backward_unsupported(grad, no_gradient(op, name, target, count != 1)).expand(
                like.shape
            )
        return torch.ops.ai3.layer(
            [grad, inputs[0], y], weights, names, grad_op, attrs, chosen.get(target, "default"), name
        )

    grad_inputs = [gradient("data", x) if need else None for x, need in zip(inputs, need_inputs)]
    split = names.split(",") if names else []
    grad_weights = [gradient(n, w) if need else None for n, w, need in zip(split, weights, need_weights)]
    return grad_inputs, grad_weights, None, None, None, None, None, None


layer.register_autograd(_backward, setup_context=_setup_context)


__all__ = [
    "SCHEMA",
    "buildable",
    "cached_layer_count",
    "canonical",
    "clear_cache",
    "label",
    "layer",
    "named_weights",
    "no_gradient",
    "output_shape",
    "parse",
    "parse_backward",
    "prepare",
]
