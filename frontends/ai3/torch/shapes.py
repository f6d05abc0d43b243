"""Shape arithmetic for the torch.fx mapping: PyTorch's reshapes, chunks
and splits expressed in the core's ops (reshape with 0 / -1, slice,
permute). Basic indexing and einsum, which other frontends share, are in
ai3.spec (index_slices, einsum_plan).

The fx graph's values are known on two sample inputs that differ only in
their batch size (ai3.torch.tracing), so a dimension that differs between
the two depends on the batch size and one that does not is a constant. Every
function here is pure and raises ValueError with the reason a form is not
expressible; the mapper turns that into an UnsupportedOperation naming the
fx node.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

Shape = Sequence[int]


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
