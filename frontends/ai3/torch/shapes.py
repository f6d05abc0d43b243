"""Shape arithmetic for the torch.fx mapping: PyTorch's reshapes, indexing,
chunking and einsum expressed in the core's ops (reshape with 0 / -1,
slice, permute, matmul).

The fx graph's values are known on two sample inputs that differ only in
their batch size (ai3.torch.tracing), so a dimension that differs between
the two depends on the batch size and one that does not is a constant. Every
function here is pure and raises ValueError with the reason a form is not
expressible; the mapper turns that into an UnsupportedOperation naming the
fx node.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

Shape = Sequence[int]
END = sys.maxsize  # a slice's stop meaning "to the end" (slices clamp, as Python's do)


def reshape_target(in1: Shape, in2: Shape, out1: Shape, out2: Shape) -> list[int]:
    """The core reshape's `shape` taking an input of shape in1 to out1 and
    of shape in2 to out2 (the same reshape at two batch sizes): a dimension
    the same in both outputs is a constant; one that follows the input's
    dimension at the same position is 0 (copy); the one left, if any, is -1
    (inferred)."""
    target = []
    for i, (a, b) in enumerate(zip(out1, out2)):
        if a == b:
            target.append(int(a))
        elif i < len(in1) and in1[i] == a and in2[i] == b:
            target.append(0)
        else:
            target.append(-1)
    if target.count(-1) > 1:
        raise ValueError(
            f"reshape {tuple(in1)} -> {tuple(out1)} has more than one dimension that depends on the batch size"
        )
    return target


def permutation(rank: int, dims: Sequence[int]) -> list[int]:
    """A permute's dims, negatives resolved, checked to be a permutation."""
    perm = [d + rank if d < 0 else d for d in dims]
    if sorted(perm) != list(range(rank)):
        raise ValueError(f"{tuple(dims)} is not a permutation of {rank} dims")
    return perm


def transposition(rank: int, a: int, b: int) -> list[int]:
    perm = list(range(rank))
    a, b = a % rank, b % rank
    perm[a], perm[b] = perm[b], perm[a]
    return perm


def _slice_bounds(s: slice, dim: int | None) -> tuple[int, int, int] | None:
    """(start, stop, step) of a slice along a dimension of size `dim` (None
    when it depends on the batch size), or None when it keeps everything."""
    step = 1 if s.step is None else s.step
    for v in (s.start, s.stop, step):
        if v is not None and not isinstance(v, int):
            raise ValueError(f"slice bounds must be ints, got {s!r}")
    if step <= 0:
        raise ValueError(f"slices with step {step} are not supported (only positive steps)")
    start = 0 if s.start is None else s.start
    stop = END if s.stop is None else s.stop
    if dim is not None:
        start, stop, _ = slice(start, None if stop == END else stop, step).indices(dim)
        if start == 0 and stop >= dim and step == 1:
            return None
    elif start == 0 and stop == END and step == 1:
        return None
    elif start < 0 or stop < 0:
        raise ValueError("negative slice bounds along a dimension that depends on the batch size")
    return int(start), int(stop), int(step)


def index_slices(index: Any, shape1: Shape, shape2: Shape) -> tuple[list[tuple[int, int, int, int]], bool]:
    """PyTorch basic indexing `x[index]` as core slices
    [(axis, start, stop, step), ...] on x's axes, and whether a reshape must
    follow (ints drop their axis, None adds one). One list of evenly spaced,
    increasing ints along an axis (Falcon's qkv[..., [-2], :]) is that
    slice: a single advanced index keeps its axis where it was. Other
    advanced indexing (tensors, bools, several lists) is refused."""
    items = list(index) if isinstance(index, tuple) else [index]
    lists = [it for it in items if isinstance(it, list)]
    for it in items:
        if isinstance(it, list) and len(lists) == 1 and it and all(_is_int(v) for v in it):
            continue
        if not (it is None or it is Ellipsis or isinstance(it, (int, slice))) or isinstance(it, bool):
            raise ValueError(f"only ints, slices, None and ... can index a tensor here, got {it!r}")
    consuming = sum(1 for it in items if it is not None and it is not Ellipsis)
    if items.count(Ellipsis) > 1:
        raise ValueError("an index with more than one ...")
    if Ellipsis in items:
        at = items.index(Ellipsis)
        items[at : at + 1] = [slice(None)] * (len(shape1) - consuming)
    if consuming > len(shape1):
        raise ValueError(f"too many indices ({consuming}) for a tensor of rank {len(shape1)}")
    slices, reshape, axis = [], False, 0
    for it in items:
        if it is None:
            reshape = True
            continue
        dim = int(shape1[axis]) if shape1[axis] == shape2[axis] else None
        if isinstance(it, int):
            if dim is None:
                raise ValueError("an int index along a dimension that depends on the batch size")
            if not -dim <= it < dim:
                raise ValueError(f"index {it} is out of range for a dimension of size {dim}")
            i = it % dim
            slices.append((axis, i, i + 1, 1))
            reshape = True
        elif isinstance(it, list):
            if dim is None:
                raise ValueError("a list index along a dimension that depends on the batch size")
            if not all(-dim <= v < dim for v in it):
                raise ValueError(f"index {it} is out of range for a dimension of size {dim}")
            taken = [v % dim for v in it]
            step = taken[1] - taken[0] if len(taken) > 1 else 1
            if step < 1 or taken != list(range(taken[0], taken[0] + step * len(taken), step)):
                raise ValueError(f"a list index {it} that is not evenly spaced and increasing (not a slice)")
            slices.append((axis, taken[0], taken[-1] + 1, step))
        else:
            bounds = _slice_bounds(it, dim)
            if bounds is not None:
                slices.append((axis,) + bounds)
        axis += 1
    return slices, reshape


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def split_bounds(size: int, sections: Any) -> list[tuple[int, int]]:
    """torch.split's pieces of a dimension of `size`: `sections` is a piece
    size (the last piece may be smaller) or a list of sizes."""
    if isinstance(sections, int):
        if sections <= 0:
            raise ValueError(f"split size must be positive, got {sections}")
        lengths = [min(sections, size - s) for s in range(0, size, sections)] or [0]
    else:
        lengths = [int(s) for s in sections]
        if sum(lengths) != size:
            raise ValueError(f"split sizes {lengths} do not add up to the dimension's size {size}")
    bounds, start = [], 0
    for n in lengths:
        bounds.append((start, start + n))
        start += n
    return bounds


def tensor_split_bounds(size: int, indices_or_sections: Any) -> list[tuple[int, int]]:
    """torch.tensor_split's pieces of a dimension of `size`: `n` sections
    (the first size % n one element longer), or the pieces between the
    given indices (each clamped into [0, size], as torch does: an index
    past the end gives an empty piece)."""
    if isinstance(indices_or_sections, int):
        n = indices_or_sections
        if n <= 0:
            raise ValueError(f"tensor_split takes a positive number of sections, got {n}")
        short, extra = divmod(size, n)
        lengths = [short + (1 if k < extra else 0) for k in range(n)]
        return split_bounds(size, lengths)
    points = [min(max(int(i), 0), size) for i in indices_or_sections]
    starts = [0, *points]
    ends = [*points, size]
    return [(s, max(s, e)) for s, e in zip(starts, ends)]


def chunk_bounds(size: int, chunks: int) -> list[tuple[int, int]]:
    """torch.chunk's pieces: ceil(size / chunks) each, fewer pieces when
    that already covers the dimension."""
    if chunks <= 0:
        raise ValueError(f"chunk count must be positive, got {chunks}")
    return split_bounds(size, max(1, -(-size // chunks)))


def is_identity(perm: Sequence[int]) -> bool:
    return list(perm) == list(range(len(perm)))
