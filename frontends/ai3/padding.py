"""Padding of 2-D and 3-D windows (convolution, pooling), one rule for every
frontend: TensorFlow's and ONNX's "SAME" (SAME_UPPER: the odd pixel after;
SAME_LOWER: before), PyTorch's "same" (stride 1, the odd pixel after, as
F.conv2d), "VALID", and explicit symmetric or asymmetric padding.

The core takes padding as (top, bottom, left, right).
"""

from __future__ import annotations

from collections.abc import Sequence

from ai3 import errors

Pads = tuple[int, int, int, int]


def same_1d(
    size: int | None, kernel: int, stride: int = 1, dilation: int = 1, *, lower: bool = False
) -> tuple[int, int] | None:
    """ "SAME" padding along one axis as (before, after): the output has
    ceil(size / stride) positions, total = max((ceil(size / stride) - 1) *
    stride + (kernel - 1) * dilation + 1 - size, 0). With stride 1 that is
    (kernel - 1) * dilation whatever the size; with a larger stride it
    depends on the size, and an unknown size gives None."""
    effective = (kernel - 1) * dilation + 1
    if stride == 1:
        total = effective - 1
    elif size is None:
        return None
    else:
        total = max((-(-size // stride) - 1) * stride + effective - size, 0)
    small, big = total // 2, total - total // 2
    return (big, small) if lower else (small, big)


def same_2d(
    hw: Sequence[int | None],
    kernel: Sequence[int],
    stride: Sequence[int],
    dilation: Sequence[int],
    *,
    lower: bool = False,
) -> Pads | None:
    """(top, bottom, left, right) of "SAME" padding for an input of spatial
    size `hw` ((None, None) when unknown); None if it depends on an
    unknown size."""
    return same_nd(hw, kernel, stride, dilation, lower=lower)  # type: ignore[return-value]


def same_nd(
    sizes: Sequence[int | None],
    kernel: Sequence[int],
    stride: Sequence[int],
    dilation: Sequence[int],
    *,
    lower: bool = False,
) -> tuple[int, ...] | None:
    """(before, after) of "SAME" padding for each spatial dim of an input of
    size `sizes` (None where unknown), flattened: (front, back, top, bottom,
    left, right) for a volume; None if it depends on an unknown size."""
    pads: tuple[int, ...] = ()
    for size, k, s, d in zip(sizes, kernel, stride, dilation, strict=True):
        one = same_1d(size, k, s, d, lower=lower)
        if one is None:
            return None
        pads += one
    return pads


def explicit(value: Sequence[int], what: str = "padding") -> Pads:
    """(top, bottom, left, right) from 1 int (all sides), 2 (h, w) or 4
    (top, bottom, left, right) ints."""
    v = tuple(value)
    if not all(isinstance(p, int) and not isinstance(p, bool) for p in v) or len(v) not in (1, 2, 4):
        raise errors.InvalidArgument(
            f"{what} must be 1, 2 (h, w) or 4 (top, bottom, left, right) ints, got {list(v)!r}"
        )
    if len(v) == 1:
        return (v[0],) * 4
    if len(v) == 2:
        return v[0], v[0], v[1], v[1]
    return v[0], v[1], v[2], v[3]


def from_onnx(pads: Sequence[int]) -> Pads:
    """ONNX's 2-D pads [top, left, bottom, right] as (top, bottom, left, right)."""
    if len(pads) != 4:
        raise errors.InvalidArgument(f"pads {list(pads)} is not a 2-D padding (4 values)")
    return pads[0], pads[2], pads[1], pads[3]


def from_onnx_nd(pads: Sequence[int]) -> tuple[int, ...]:
    """ONNX's pads [x1_begin, x2_begin, ..., x1_end, x2_end, ...] as
    (x1_begin, x1_end, x2_begin, x2_end, ...), the core's order."""
    n = len(pads) // 2
    return tuple(p for d in range(n) for p in (pads[d], pads[n + d]))


__all__ = ["Pads", "explicit", "from_onnx", "from_onnx_nd", "same_1d", "same_2d", "same_nd"]
