"""How the PyTorch frontend's fx mappings (ai3.torch.fx, ai3.torch.attention)
describe, refuse and read an fx node: one home for both, so neither
imports the other's private names."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

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


class UnsupportedNodes(errors.UnsupportedOperation):
    """Every fx node of a model that ai3 cannot run, with why: `nodes` holds
    (node, why) pairs in graph order, so one refusal shows all a model lacks
    (and the opt-in fallback knows what runs in PyTorch)."""

    def __init__(self, nodes: list[tuple[fx.Node, str]]):
        self.nodes = list(nodes)
        if len(self.nodes) == 1:
            text = self.nodes[0][1]
        else:
            text = f"{len(self.nodes)} nodes have no ai3 equivalent:\n" + "\n".join(f"  {why}" for _, why in self.nodes)
            text += "\n(ai3.swap_backend(..., fallback=True) runs them in PyTorch and the rest in ai3)"
        super().__init__(text)


def normalized(node: fx.Node, fn: Callable) -> dict[str, Any]:
    """The call's arguments by parameter name, defaults filled in."""
    try:
        bound = inspect.signature(fn).bind(*node.args, **node.kwargs)
    except TypeError as e:
        raise unsupported(node, f"unexpected arguments ({e})") from e
    bound.apply_defaults()
    return dict(bound.arguments)


__all__ = ["UnsupportedNodes", "describe", "normalized", "unsupported"]
