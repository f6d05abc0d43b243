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
ai3.tuning), "predict" (a learned model's pick from the layer's parameters
and input shape, without timing; see ai3.predict), or, for in-place swaps only, "torch"/"keep" (leave the
framework's own layer).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ai3 import errors, tuning
from ai3.spec import is_note

Selector = str | Sequence[str] | Callable[..., str]
KEEP_NAMES = ("torch", "keep")
DEFAULT = "default"
AUTO = "auto"
PREDICT = "predict"


def sample_shape(value: Sequence[int] | None, *, batched: bool = True) -> tuple[int, ...] | None:
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
    input_shape: tuple[int, ...] | None = None
    make_layer: Callable[[str], Any] | None = None
    params: None | dict[str, Any] | Callable[[], dict[str, Any]] = None  # a callable: computed when tuned
    dtype: str = "float32"
    layout: str = "NCHW"
    via: str = "core"
    extra: tuple[str, ...] = ()  # more choices make_layer builds (see tuning.Tunable)
    # Raises what make_layer(algorithm) would, without building the layer
    # (ai3.predict checks its pick with it); None: build it to find out.
    check: Callable[[str], None] | None = None


class _OtherInputsFixed:
    """A layer of several inputs as "auto" times it: called on its first
    input, with the other inputs fixed random arrays of their shapes (made
    once, by tuning's input maker, as it makes the first)."""

    def __init__(self, layer: Any, input_shapes: Sequence[Sequence[int]], dtype: np.dtype):
        self.layer = layer
        self.algorithm = getattr(layer, "algorithm", None)
        self.input_shapes = [list(s) for s in input_shapes]
        self.others = [tuning.random_input(s, dtype.name) for s in input_shapes[1:]]

    def __call__(self, x: Any) -> Any:
        return self.layer(x, *self.others)

    def workspace_bytes(self, input_shape: Sequence[int], dtype: str = "float32") -> int:
        return self.layer.workspace_bytes([list(input_shape), *self.input_shapes[1:]], dtype)


@dataclass(frozen=True)
class EveryOp:
    """swap_backend's `algos` giving one selector to every op, e.g.
    EveryOp("auto") (a bare selector means conv2d only)."""

    selector: Any


def spec_candidate(
    spec: Any,
    factory: Callable[..., Any] | None,
    dtype: Any,
    layout: str,
    input_shapes: Sequence[Sequence[int]] | None = None,
) -> Candidate:
    """The Candidate for a LayerSpec whose core layers `factory`
    (ai3.model.make_layer) makes: timed as the core layer it becomes. A spec
    of several inputs is timed where `input_shapes` gives all of theirs
    (ai3.model works them out): on its first input, with the others fixed
    random ones of their shapes; otherwise it cannot be timed."""
    dtype = np.dtype(dtype)
    make_layer = check = None
    several = len(spec.inputs) > 1
    if factory is not None and (not several or input_shapes is not None):

        def make_layer(algorithm: str) -> Any:
            layer = factory(spec, algorithm, dtype, layout)
            return _OtherInputsFixed(layer, input_shapes, dtype) if several else layer

        def check(algorithm: str) -> None:
            factory(spec, algorithm, dtype, layout, check_only=True)

    params = {
        "attrs": {k: v for k, v in spec.attrs.items() if not is_note(k)},  # names, not parameters
        "weights": {k: (None if w is None else tuple(np.shape(w))) for k, w in spec.weights.items()},
    }
    input_shape = spec.input_shape
    if several and input_shapes is not None:  # the others' shapes key the cache too
        params["input_shapes"] = [tuple(int(d) for d in shape) for shape in input_shapes]
        input_shape = params["input_shapes"][0]  # what the fixed others were made to go with
    return Candidate(spec.name, spec.layer, input_shape, make_layer, params, dtype.name, layout, "core", check=check)


known_algorithms = tuning.known_algorithms


def _takes_shape(selector: Callable[..., str]) -> bool:
    """Whether a callable selector wants (layer, input_shape) or (layer)."""
    try:
        params = inspect.signature(selector).parameters.values()
    except (TypeError, ValueError):  # builtins without a signature
        return False
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty]
    if any(p.kind == p.VAR_POSITIONAL for p in params):
        return False
    return len(positional) >= 2


def select(
    op: str,
    selector: Selector | None,
    candidates: Sequence[Candidate],
    *,
    allow_keep: bool,
    device: str = "cpu",
    recorder: tuning.Recording | None = None,
) -> list[str]:
    """One validated algorithm name per candidate ("torch"/"keep" only with
    allow_keep). Raises InvalidSelector, UnknownAlgorithm naming the layer.
    `recorder` (ai3.plan's) keeps what was selected and tuned."""
    return _resolve(op, _evaluate(op, selector, candidates), candidates, allow_keep, device, recorder)


def _evaluate(op: str, selector: Selector | None, candidates: Sequence[Candidate], role: str = "") -> list[Any]:
    """What the selector names for each candidate, not yet checked; `role`
    (" backward") says which of the op's selectors it is, in messages."""
    if selector is None:
        selector = DEFAULT
    count = len(candidates)
    if hasattr(selector, "select_for"):  # an ai3.Plan
        return list(selector.select_for(op, candidates))
    if isinstance(selector, str):
        return [selector] * count
    if callable(selector):
        with_shape = _takes_shape(selector)
        chosen = []
        for c in candidates:
            if with_shape and c.input_shape is None:
                raise errors.InvalidSelector(
                    f"the {op}{role} selector takes (layer, input_shape); pass sample_input_shape "
                    f"so ai3 can find the input shape of layer '{c.name}'"
                )
            try:
                chosen.append(selector(c.layer, c.input_shape) if with_shape else selector(c.layer))
            except errors.Error:
                raise
            except Exception as e:
                raise errors.InvalidSelector(
                    f"{op} layer '{c.name}': the{role} selector raised {type(e).__name__}: {e}"
                ) from e
        return chosen
    if isinstance(selector, Sequence):
        if len(selector) != count:
            raise errors.InvalidSelector(
                f"the {op}{role} selector lists {len(selector)} algorithms but the model has {count} {op} layers"
            )
        return list(selector)
    raise errors.InvalidSelector(
        f"a {op}{role} selector must be a string, a sequence of strings or a callable, got {type(selector).__name__}"
    )


def _not_a_name(op: str, c: Candidate, name: Any, choices: str, role: str = "") -> errors.Error:
    return errors.InvalidSelector(
        f"{op} layer '{c.name}': the{role} selector gave {name!r} ({type(name).__name__}), "
        f"not an algorithm name; choose from {choices}"
    )


def _resolve(
    op: str,
    chosen: list[Any],
    candidates: Sequence[Candidate],
    allow_keep: bool,
    device: str,
    recorder: tuning.Recording | None,
) -> list[str]:
    """Checks each name against the op's algorithms and runs "auto"."""
    known = known_algorithms(op, device)
    allowed = set(known) | {DEFAULT, AUTO, PREDICT} | (set(KEEP_NAMES) if allow_keep else set())
    for name, c in zip(chosen, candidates):
        if isinstance(name, str) and name in allowed:
            continue
        if name in KEEP_NAMES:
            raise errors.InvalidSelector(
                f"{op} layer '{c.name}': '{name}' keeps the framework's layer, which only the "
                f"in-place swaps (swap_{op}) can do; swap_backend runs every layer in ai3"
            )
        choices = ", ".join(repr(a) for a in [*known, DEFAULT, AUTO, PREDICT, *(KEEP_NAMES if allow_keep else ())])
        if not isinstance(name, str):
            raise _not_a_name(op, c, name, choices)
        raise errors.UnknownAlgorithm(
            f"{op} layer '{c.name}': '{name}' is not a {op} algorithm of this build; choose from {choices}"
        )
    predicted = [i for i, name in enumerate(chosen) if name == PREDICT]
    if predicted:
        from ai3 import predict

        for i, p in zip(predicted, predict.choose(op, [candidates[i] for i in predicted], device)):
            chosen[i] = p.choice
            if recorder is not None:
                recorder.predicted.append((op, candidates[i].name, p, _cached(op, candidates[i], device)))
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


def _cached(op: str, c: Candidate, device: str) -> tuning.TuneResult | None:
    """What "auto" measured for this layer, if the tuning cache has it
    (nothing is timed): ai3.plan shows it beside "predict"'s choice."""
    if c.input_shape is None or c.make_layer is None:
        return None
    t = _tunable(op, c, device, None)
    return tuning.cache_load(tuning.cache_key(t), known_algorithms(op, device) + list(t.extra), c.name)


def _tunable(op: str, c: Candidate, device: str, recorder: tuning.Recording | None) -> tuning.Tunable | None:
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
        op,
        c.name,
        c.make_layer,
        params or {},
        tuple(int(d) for d in c.input_shape),
        c.dtype,
        c.layout,
        device,
        c.via,
        c.extra,
    )


def wants_shapes(selector: Any, sample_input_shape_given: bool) -> bool:
    """Whether a frontend should find its layers' input shapes for
    `selector`: "auto" or "predict" (or a list naming one), a callable
    taking the shape, or any callable (which may answer "auto") when the
    user gave a sample input shape."""
    if isinstance(selector, str):
        return selector in (AUTO, PREDICT)
    if callable(selector):
        return sample_input_shape_given or _takes_shape(selector)
    if isinstance(selector, Sequence):
        return AUTO in selector or PREDICT in selector
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


def with_conv2d(algos: Any, selector: Selector, ops: Sequence[str]) -> dict[str, Selector]:
    """swap_backend's `algos` (not an ai3.Plan) with conv2d's selector
    replaced by `selector`, the other ops' left as they were."""
    return {**per_op_selectors(algos, ops), "conv2d": selector}


def per_op_selectors(algos: Selector | Mapping[str, Selector] | None, ops: Sequence[str]) -> dict[str, Selector]:
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
            raise errors.InvalidSelector(f"algos names ops {unknown} that ai3 does not have; ops are {sorted(ops)}")
        return dict(algos)
    return {"conv2d": algos}


# ---- Training: the backward selector beside the forward one ------------------
#
# Each gradient of an op F is a core op of its own, F_backward_<target>
# (target "data": the gradient w.r.t. F's input; or one of F's weight
# names), with its own algorithms and "default" list; ai3.layers.backward_ops
# finds them. A swap's `backward=` chooses their algorithms, in the forms of
# the forward selector:
#   - None: "default" for every gradient op;
#   - a name, a sequence of names, a callable, an ai3.Plan: applied to each
#     gradient op of the layer that offers the name, "default" to the others
#     (backward="gemm" on conv2d: gemm for backward_data and backward_weight
#     where they have one); a name no gradient op of the op offers is an
#     UnknownAlgorithm;
#   - a mapping {"backward_data": ..., "backward_weight": ...,
#     "backward_bias": ...}, one selector per gradient (absent ones get
#     "default"), each checked against its own op's algorithms. The mapping
#     may also hold "forward" (the forward selector), and may then be given
#     as the swap's `algos` itself instead of as `backward=`.

FORWARD_KEY = "forward"
BACKWARD_KEY = "backward_"


@dataclass(frozen=True)
class TrainingSelectors:
    """A swap's selectors split by pass: `forward`, and per gradient target
    ("data", "weight", "bias", ...) its own selector, or `shared` (one
    selector applied to every gradient op that offers the names it gives)."""

    forward: Selector | None = None
    per_target: Mapping[str, Selector] = field(default_factory=dict)
    shared: Selector | None = None


def _is_pass_mapping(value: Any) -> bool:
    return isinstance(value, Mapping) and all(
        isinstance(k, str) and (k == FORWARD_KEY or k.startswith(BACKWARD_KEY)) for k in value
    )


def split_backward(op: str, algos: Any, backward: Any) -> TrainingSelectors:
    """A swap's (`algos`, `backward=`) as TrainingSelectors (see above);
    framework-free, shared by every frontend's in-place swaps. Raises
    InvalidSelector for a mapping with other keys, or a forward selector
    given twice."""
    forward = algos
    if _is_pass_mapping(algos):
        if backward is not None:
            raise errors.InvalidSelector(
                f"the {op} selectors are a {{'forward': ..., 'backward_...': ...}} mapping and backward= is given too; "
                "give the backward selectors once"
            )
        forward, backward = algos.get(FORWARD_KEY), {k: v for k, v in algos.items() if k != FORWARD_KEY}
    if backward is None:
        return TrainingSelectors(forward)
    if isinstance(backward, Mapping):
        bad = [k for k in backward if not isinstance(k, str) or not (k == FORWARD_KEY or k.startswith(BACKWARD_KEY))]
        if bad:
            raise errors.InvalidSelector(
                f"the {op} backward selector has key {bad[0]!r}; its keys are 'forward' and "
                "'backward_<target>' ('backward_data', 'backward_weight', ...)"
            )
        if FORWARD_KEY in backward:
            if forward is not None:
                raise errors.InvalidSelector(
                    f"the {op} forward selector is given twice: as the swap's algos and as backward['forward']"
                )
            forward = backward[FORWARD_KEY]
        targets = {k[len(BACKWARD_KEY) :]: v for k, v in backward.items() if k != FORWARD_KEY}
        return TrainingSelectors(forward, targets)
    return TrainingSelectors(forward, {}, backward)


def select_backward(
    op: str,
    selectors: TrainingSelectors,
    candidates: Sequence[Candidate],
    gradients: Sequence[Mapping[str, Candidate] | None],
    gradient_ops: Mapping[str, str],
    *,
    device: str = "cpu",
    recorder: tuning.Recording | None = None,
) -> list[dict[str, str]]:
    """Per layer, {target: algorithm} of its gradient ops. `candidates`: the
    op's layers as the forward selection saw them (list and callable
    selectors index and see these); `gradients[i]`: layer i's gradients that
    exist (target -> a Candidate timing that gradient op, for "auto"; empty
    for a layer ai3 does not run); `gradient_ops`: target -> the op's
    gradient op (ai3.layers.backward_ops)."""
    unknown = sorted(set(selectors.per_target) - set(gradient_ops))
    if unknown:
        offered = ", ".join(f"'{BACKWARD_KEY}{t}'" for t in gradient_ops) or "none"
        raise errors.InvalidSelector(
            f"the {op} backward selector names {', '.join(repr(BACKWARD_KEY + t) for t in unknown)}; "
            f"{op}'s gradients are {offered}"
        )
    chosen: list[dict[str, str]] = [{} for _ in candidates]
    shared = selectors.shared
    shared_names = None
    if shared is not None and not hasattr(shared, "select_for"):
        shared_names = _backward_names(op, shared, candidates, gradients)
    for target, grad_op in gradient_ops.items():
        present = [i for i, g in enumerate(gradients) if g is not None and target in g]
        grad_candidates = [gradients[i][target] for i in present]
        if target in selectors.per_target:
            selector = selectors.per_target[target]
            if hasattr(selector, "select_for"):
                names = list(selector.select_for(grad_op, grad_candidates))
            else:
                every = _backward_names(op, selector, candidates, gradients)
                names = [every[i] for i in present]
        elif shared is not None and shared_names is None:  # an ai3.Plan: it names each gradient op's choice
            names = list(shared.select_for(grad_op, grad_candidates))
        elif shared_names is not None:
            offered = set(known_algorithms(grad_op, device)) | {DEFAULT, AUTO, PREDICT}
            names = [shared_names[i] if shared_names[i] in offered else DEFAULT for i in present]
        else:
            names = [DEFAULT] * len(present)
        for i, name in zip(present, _resolve(grad_op, names, grad_candidates, False, device, recorder)):
            chosen[i][target] = name
    if shared_names is not None:
        offered_any = {DEFAULT, AUTO, PREDICT}.union(*(known_algorithms(g, device) for g in gradient_ops.values()))
        for c, g, name in zip(candidates, gradients, shared_names):
            # An op with no gradient ops at all takes no algorithm name either
            # (its layers' gradient lists are empty, so nothing else checks it).
            if (g is not None or not gradient_ops) and name not in offered_any:
                lists = "; ".join(
                    f"{g_op}: {', '.join(known_algorithms(g_op, device))}" for g_op in gradient_ops.values()
                )
                raise errors.UnknownAlgorithm(
                    f"{op} layer '{c.name}': backward '{name}' is not an algorithm of any of {op}'s gradient ops "
                    f"({lists or 'it has none'}); choose from those, {DEFAULT!r} or {AUTO!r}"
                )
    return chosen


def _backward_names(
    op: str, selector: Selector, candidates: Sequence[Candidate], gradients: Sequence[Mapping[str, Candidate] | None]
) -> list[Any]:
    """A backward selector's names per layer, checked to be names (not
    junk, not 'torch')."""
    names = _evaluate(op, selector, candidates, " backward")
    for c, g, name in zip(candidates, gradients, names):
        if g is None:
            continue
        if not isinstance(name, str):
            raise _not_a_name(op, c, name, "the gradient ops' algorithms, 'default' or 'auto'", " backward")
        if name in KEEP_NAMES:
            raise errors.InvalidSelector(
                f"{op} layer '{c.name}': backward '{name}' names no gradient algorithm; to keep the framework's own "
                f"layer (forward and backward), give '{name}' as the forward selector"
            )
    return names
