"""The selection layer: turning a user's selector into one algorithm name
per layer. One implementation for every frontend.

A selector for an op is one of
  - a string: that algorithm for every layer of the op;
  - a sequence of strings: the i-th layer gets the i-th name (the lengths
    must match);
  - a callable taking the framework's layer object, or the layer object and
    that layer's input shape (which needs a sample input shape);
  - an ai3.Plan (ai3.plans), which names the algorithm of each layer it
    lists, by the layer's name;
and a name is an algorithm of this build (`ai3.algorithms()`), "default"
(the core's pick for the layer's parameters), "auto" (each applicable
algorithm timed on the layer's input shape, the fastest kept; see
ai3.tuning), or, for in-place swaps only, "torch"/"keep" (leave the
framework's own layer).
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Optional, Sequence, Union

import numpy as np

from ai3 import errors, tuning
from ai3.spec import is_note

Selector = Union[str, Sequence[str], Callable[..., str]]
KEEP_NAMES = ("torch", "keep")
DEFAULT = "default"
AUTO = "auto"


def sample_shape(value: Optional[Sequence[int]], *, batched: bool = True) -> Optional[tuple[int, ...]]:
    """A user's sample_input_shape as a tuple of ints (None stays None).
    `batched`: the caller traces at two batch sizes, so dim 0 must exist."""
    if value is None:
        return None
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence) and not hasattr(value, "__iter__"):
        raise errors.InvalidArgument(f"sample_input_shape must be a sequence of ints, got {value!r}")
    dims = list(value)
    if not all(isinstance(d, (int, np.integer)) and not isinstance(d, bool) for d in dims):
        raise errors.InvalidArgument(f"sample_input_shape must be a sequence of ints, got {value!r}")
    shape = tuple(int(d) for d in dims)
    if any(d <= 0 for d in shape):
        raise errors.ShapeError(f"sample_input_shape {shape} has a dimension < 1")
    if batched and not shape:
        raise errors.ShapeError(
            "sample_input_shape () has no dimensions; ai3 needs the input's full shape, batch dimension first"
        )
    return shape


@dataclass
class Candidate:
    """One layer a selector chooses for.

    For "auto", the frontend also gives `make_layer(algorithm)`: a runnable
    layer (see ai3.tuning.Tunable) for timing, and `params`, the layer's
    parameters for the tuning cache key; `dtype`, `layout` and `via` (what
    runs the layer) complete the key."""

    name: str  # the layer's path in the model, used in messages
    layer: Any  # the framework's own layer object
    input_shape: Optional[tuple[int, ...]] = None
    make_layer: Optional[Callable[[str], Any]] = None
    params: Union[None, dict[str, Any], Callable[[], dict[str, Any]]] = None  # a callable: computed when tuned
    dtype: str = "float32"
    layout: str = "NCHW"
    via: str = "core"
    extra: tuple[str, ...] = ()  # more choices make_layer builds (see tuning.Tunable)


@dataclass(frozen=True)
class EveryOp:
    """swap_backend's `algos` giving one selector to every op, e.g.
    EveryOp("auto") (a bare selector means conv2d only)."""

    selector: Any


def spec_candidate(spec: Any, factory: Optional[Callable[..., Any]], dtype: Any, layout: str) -> Candidate:
    """The Candidate for a LayerSpec whose core layers `factory`
    (ai3.model.make_layer) makes: timed as the core layer it becomes.
    Specs of several inputs cannot be timed from one input shape."""
    dtype = np.dtype(dtype)
    make_layer = None
    if factory is not None and len(spec.inputs) == 1:

        def make_layer(algorithm: str) -> Any:
            return factory(spec, algorithm, dtype, layout)

    params = {
        "attrs": {k: v for k, v in spec.attrs.items() if not is_note(k)},  # names, not parameters
        "weights": {k: (None if w is None else tuple(np.shape(w))) for k, w in spec.weights.items()},
    }
    return Candidate(spec.name, spec.layer, spec.input_shape, make_layer, params, dtype.name, layout, "core")


known_algorithms = tuning.known_algorithms


def _takes_shape(selector: Callable[..., str]) -> bool:
    """Whether a callable selector wants (layer, input_shape) or (layer)."""
    try:
        params = inspect.signature(selector).parameters.values()
    except (TypeError, ValueError):  # builtins without a signature
        return False
    positional = [
        p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty
    ]
    if any(p.kind == p.VAR_POSITIONAL for p in params):
        return False
    return len(positional) >= 2


def select(
    op: str,
    selector: Optional[Selector],
    candidates: Sequence[Candidate],
    *,
    allow_keep: bool,
    device: str = "cpu",
    recorder: Optional[tuning.Recording] = None,
) -> list[str]:
    """One validated algorithm name per candidate ("torch"/"keep" only with
    allow_keep). Raises InvalidSelector, UnknownAlgorithm naming the layer.
    `recorder` (ai3.plan's) keeps what was selected and tuned."""
    if selector is None:
        selector = DEFAULT
    count = len(candidates)
    if hasattr(selector, "select_for"):  # an ai3.Plan
        chosen = list(selector.select_for(op, candidates))
    elif isinstance(selector, str):
        chosen = [selector] * count
    elif callable(selector):
        with_shape = _takes_shape(selector)
        chosen = []
        for c in candidates:
            if with_shape and c.input_shape is None:
                raise errors.InvalidSelector(
                    f"the {op} selector takes (layer, input_shape); pass sample_input_shape "
                    f"so ai3 can find the input shape of layer '{c.name}'"
                )
            try:
                chosen.append(selector(c.layer, c.input_shape) if with_shape else selector(c.layer))
            except errors.Error:
                raise
            except Exception as e:
                raise errors.InvalidSelector(
                    f"{op} layer '{c.name}': the selector raised {type(e).__name__}: {e}"
                ) from e
    elif isinstance(selector, Sequence):
        if len(selector) != count:
            raise errors.InvalidSelector(
                f"the {op} selector lists {len(selector)} algorithms but the model has {count} {op} layers"
            )
        chosen = list(selector)
    else:
        raise errors.InvalidSelector(
            f"a {op} selector must be a string, a sequence of strings or a callable, "
            f"got {type(selector).__name__}"
        )
    known = known_algorithms(op, device)
    allowed = set(known) | {DEFAULT, AUTO} | (set(KEEP_NAMES) if allow_keep else set())
    for name, c in zip(chosen, candidates):
        if isinstance(name, str) and name in allowed:
            continue
        if name in KEEP_NAMES:
            raise errors.InvalidSelector(
                f"{op} layer '{c.name}': '{name}' keeps the framework's layer, which only the "
                f"in-place swaps (swap_{op}) can do; swap_backend runs every layer in ai3"
            )
        choices = ", ".join(repr(a) for a in [*known, DEFAULT, AUTO, *(KEEP_NAMES if allow_keep else ())])
        if not isinstance(name, str):
            raise errors.InvalidSelector(
                f"{op} layer '{c.name}': the selector gave {name!r} ({type(name).__name__}), "
                f"not an algorithm name; choose from {choices}"
            )
        raise errors.UnknownAlgorithm(
            f"{op} layer '{c.name}': '{name}' is not a {op} algorithm of this build; choose from {choices}"
        )
    auto = [i for i, name in enumerate(chosen) if name == AUTO]
    if auto:
        timed = []
        for i in auto:
            t = _tunable(op, candidates[i], device, recorder)
            if t is None:
                chosen[i] = DEFAULT
            else:
                timed.append((i, t))
        results = tuning.tune_all([t for _, t in timed], recorder)
        for (i, _), result in zip(timed, results):
            chosen[i] = result.choice
    tuning.note_selection(op, [c.name for c in candidates], [c.input_shape for c in candidates], chosen, recorder)
    return chosen


def _tunable(op: str, c: Candidate, device: str, recorder: Optional[tuning.Recording]) -> Optional[tuning.Tunable]:
    if c.input_shape is None:
        raise errors.InvalidSelector(
            f"{op} layer '{c.name}': 'auto' times each algorithm on the layer's input shape, which is unknown; "
            "pass sample_input_shape"
        )
    if c.make_layer is None:
        if recorder is not None:
            # ai3.plan's blanket "auto": a layer that cannot be timed alone
            # keeps "default" (the plan lists it untimed).
            return None
        raise errors.UnsupportedOperation(
            f"{op} layer '{c.name}': 'auto' cannot time this layer (a layer of several inputs, or a frontend "
            "that cannot build it alone); name an algorithm"
        )
    params = c.params() if callable(c.params) else c.params
    return tuning.Tunable(
        op, c.name, c.make_layer, params or {}, tuple(int(d) for d in c.input_shape), c.dtype, c.layout, device, c.via,
        c.extra,
    )


def wants_shapes(selector: Any, sample_input_shape_given: bool) -> bool:
    """Whether a frontend should find its layers' input shapes for
    `selector`: "auto" (or a list naming it), a callable taking the shape,
    or any callable (which may answer "auto") when the user gave a sample
    input shape."""
    if isinstance(selector, str):
        return selector == AUTO
    if callable(selector):
        return sample_input_shape_given or _takes_shape(selector)
    if isinstance(selector, Sequence):
        return AUTO in selector
    return False


def conv2d_selector(algos: Any) -> Any:
    """The selector swap_backend's `algos` gives conv2d (None: "default"),
    as per_op_selectors would, without checking the other ops it names
    (model.build does): what the layout pass asks to know whether conv2d
    is "auto"."""
    if hasattr(algos, "select_for"):  # an ai3.Plan
        return algos if "conv2d" in algos.ops() else None
    if isinstance(algos, EveryOp):
        return algos.selector
    return algos.get("conv2d") if isinstance(algos, Mapping) else algos


def per_op_selectors(algos: Optional[Union[Selector, Mapping[str, Selector]]], ops: Sequence[str]) -> dict[str, Selector]:
    """swap_backend's `algos`: None, a mapping op -> selector, an ai3.Plan,
    or one selector for conv2d (the op users choose for most)."""
    if algos is None:
        return {}
    if hasattr(algos, "select_for"):  # an ai3.Plan: the ops it lists
        return {op: algos for op in algos.ops()}
    if isinstance(algos, EveryOp):
        return {op: algos.selector for op in ops}
    if isinstance(algos, Mapping):
        unknown = sorted(set(algos) - set(ops) - {"batchnorm2d", "add", "concat"})
        if unknown:
            raise errors.InvalidSelector(
                f"algos names ops {unknown} that ai3 does not have; ops are {sorted(ops)}"
            )
        return dict(algos)
    return {"conv2d": algos}
