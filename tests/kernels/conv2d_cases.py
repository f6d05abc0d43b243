"""One conv2d layer shape, for the kernels test and the kernels bench."""

from __future__ import annotations

from typing import NamedTuple


class Case(NamedTuple):
    name: str
    n: int
    c: int
    h: int
    w: int
    k: int
    kernel: int
    stride: int = 1
    # (top, bottom, left, right)
    padding: tuple[int, int, int, int] = (0, 0, 0, 0)
    dilation: int = 1
    groups: int = 1
    bias: bool = True
    activation: str | None = None


def same(kernel: int, dilation: int = 1) -> tuple[int, int, int, int]:
    p = dilation * (kernel - 1) // 2
    return (p, p, p, p)
