"""The selection layer: turning a user's selector into one algorithm name
per layer. One implementation for every frontend.

A selector for an op is one of
  - a string: that algorithm for every layer of the op;
  - a sequence of strings: the i-th layer gets the i-th name (the lengths
    must match);
  - a callable taking the framework's layer object, or the layer object and
    that layer's input shape (which needs a sample input shape);
and a name is an algorithm of this build (`ai3.algorithms()`), "default"
(the core's pick for the layer's parameters), or, for in-place swaps only,
"torch"/"keep" (leave the framework's own layer).
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Optional, Sequence, Union

from ai3 import _core, errors

Selector = Union[str, Sequence[str], Callable[..., str]]
KEEP_NAMES = ("torch", "keep")
DEFAULT = "default"


@dataclass
class Candidate:
    """One layer a selector chooses for."""

    name: str  # the layer's path in the model, used in messages
    layer: Any  # the framework's own layer object
    input_shape: Optional[tuple[int, ...]] = None


def known_algorithms(op: str, device: str = "cpu") -> list[str]:
    return [name for o, name, dev in _core.algorithms() if o == op and dev == device]


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
) -> list[str]:
    """One validated algorithm name per candidate ("torch"/"keep" only with
    allow_keep). Raises InvalidSelector, UnknownAlgorithm naming the layer."""
    if selector is None:
        selector = DEFAULT
    count = len(candidates)
    if isinstance(selector, str):
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
    allowed = set(known) | {DEFAULT} | (set(KEEP_NAMES) if allow_keep else set())
    for name, c in zip(chosen, candidates):
        if isinstance(name, str) and name in allowed:
            continue
        if name in KEEP_NAMES:
            raise errors.InvalidSelector(
                f"{op} layer '{c.name}': '{name}' keeps the framework's layer, which only the "
                f"in-place swaps (swap_{op}) can do; swap_backend runs every layer in ai3"
            )
        if name == "auto":
            raise errors.UnsupportedOperation(
                f"{op} layer '{c.name}': 'auto' (measured selection) is not available in this build yet"
            )
        choices = ", ".join(repr(a) for a in [*known, DEFAULT, *(KEEP_NAMES if allow_keep else ())])
        if not isinstance(name, str):
            raise errors.InvalidSelector(
                f"{op} layer '{c.name}': the selector gave {name!r} ({type(name).__name__}), "
                f"not an algorithm name; choose from {choices}"
            )
        raise errors.UnknownAlgorithm(
            f"{op} layer '{c.name}': '{name}' is not a {op} algorithm of this build; choose from {choices}"
        )
    return chosen


def per_op_selectors(algos: Optional[Union[Selector, Mapping[str, Selector]]], ops: Sequence[str]) -> dict[str, Selector]:
    """swap_backend's `algos`: None, a mapping op -> selector, or one
    selector for conv2d (the op users choose for most)."""
    if algos is None:
        return {}
    if isinstance(algos, Mapping):
        unknown = sorted(set(algos) - set(ops) - {"batchnorm2d", "add", "concat"})
        if unknown:
            raise errors.InvalidSelector(
                f"algos names ops {unknown} that ai3 does not have; ops are {sorted(ops)}"
            )
        return dict(algos)
    return {"conv2d": algos}
