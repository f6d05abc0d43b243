"""How the PyTorch frontend's fx mappings (ai3.torch.fx, ai3.torch.attention)
describe, refuse and read an fx node: one home for both, so neither
imports the other's private names."""

from __future__ import annotations

import inspect
from typing import Any, Callable

from torch import fx

from ai3 import errors


def describe(node: fx.Node) -> str:
    target = node.target if isinstance(node.target, str) else getattr(node.target, "__name__", repr(node.target))
    where = node.meta.get("ai3_module_path") or "<top level>"
    if node.op == "call_module":
        where = node.target
    return f"fx node '{node.name}' ({node.op} {target}) in module '{where}'"


def unsupported(node: fx.Node, why: str) -> errors.UnsupportedOperation:
    return errors.UnsupportedOperation(f"{describe(node)}: {why}")


def normalized(node: fx.Node, fn: Callable) -> dict[str, Any]:
    """The call's arguments by parameter name, defaults filled in."""
    try:
        bound = inspect.signature(fn).bind(*node.args, **node.kwargs)
    except TypeError as e:
        raise unsupported(node, f"unexpected arguments ({e})") from e
    bound.apply_defaults()
    return dict(bound.arguments)


__all__ = ["describe", "normalized", "unsupported"]
