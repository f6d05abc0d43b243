"""Every attention algorithm against torch.nn.functional.scaled_dot_product_attention.

A grid of batch shapes, heads, sequence lengths from 1 to 4096 (L != S both
ways), head dims (8, 64, 80, Ev != E), masks (additive float with -inf,
boolean, every broadcast form, fully masked rows), causal, explicit scales,
in float32 and float64. Tolerances, |ai3 - torch| <= tol + tol |torch|:
  float32: 1e-4    float64: 1e-10
Then the errors bad inputs raise, naming the layer.
"""

from __future__ import annotations

import numpy as np
import pytest
import pytest_main
import torch
import torch.nn.functional as F
from tolerances import DTYPES, tolerance

import ai3

torch.set_num_threads(2)

ALGORITHMS = ["naive", "flash", "chunked"]


def check(got, want, dtype, what):
    got = torch.as_tensor(got)
    assert got.shape == want.shape, f"{what}: shape {tuple(got.shape)} != {tuple(want.shape)}"
    assert not torch.isnan(got).any(), f"{what}: NaN in the output"
    tol = tolerance(dtype)
    torch.testing.assert_close(got, want, atol=tol, rtol=tol, msg=lambda m: f"{what}: {m}")


def qkv(lead, l, s, e, ev, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(*lead, l, e, generator=g, dtype=dtype) * 2
    k = torch.randn(*lead, s, e, generator=g, dtype=dtype)
    v = torch.randn(*lead, s, ev, generator=g, dtype=dtype)
    return q, k, v


def test_algorithms_registered():
    assert set(ALGORITHMS) <= set(ai3.algorithms()["attention"])
    assert set(ALGORITHMS) <= set(ai3.algorithms()["multihead_attention"])
    assert ai3.layers.Attention().algorithm == "flash"


# (batch dims, L, S, E, Ev): sequences 1 .. 1000, L != S, E != Ev, batch ranks 0 .. 2.
SHAPES = [
    ((), 1, 1, 8, 8),
    ((2,), 7, 5, 8, 8),
    ((2, 3), 1, 65, 64, 64),
    ((1, 4), 64, 64, 64, 64),
    ((2, 2), 65, 130, 80, 80),
    ((1, 2), 200, 7, 8, 16),
    ((1, 1), 129, 1000, 64, 32),
    ((3, 1), 33, 70, 80, 5),
]


@pytest.mark.parametrize("algorithm", ALGORITHMS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("causal", [False, True])
def test_grid(algorithm, dtype, shape, causal):
    lead, l, s, e, ev = shape
    q, k, v = qkv(lead, l, s, e, ev, dtype)
    want = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    got = ai3.layers.scaled_dot_product_attention(q, k, v, is_causal=causal, algorithm=algorithm)
    check(got, want, dtype, f"{algorithm} {shape} causal={causal}")


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_long_sequence(algorithm):
    """L = S = 4096 (B = H = 1, E = 64): several thousand keys per softmax."""
    q, k, v = qkv((1, 1), 4096, 4096, 64, 64, torch.float32, seed=3)
    want = F.scaled_dot_product_attention(q, k, v)
    got = ai3.layers.scaled_dot_product_attention(q, k, v, algorithm=algorithm)
    check(got, want, torch.float32, f"{algorithm} 4096")


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_long_sequence_causal_float64(algorithm):
    q, k, v = qkv((1, 2), 1500, 1500, 64, 64, torch.float64, seed=4)
    want = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    got = ai3.layers.scaled_dot_product_attention(q, k, v, is_causal=True, algorithm=algorithm)
    check(got, want, torch.float64, f"{algorithm} 1500 causal")


# Mask shapes broadcastable to (2, 3, L, S) with L, S = 20, 70.
MASKS = [(2, 3, 20, 70), (20, 70), (1, 3, 1, 70), (2, 1, 20, 1), (70,), (3, 20, 70)]


@pytest.mark.parametrize("algorithm", ALGORITHMS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("mask_shape", MASKS, ids=str)
@pytest.mark.parametrize("kind", ["bool", "float"])
def test_masks(algorithm, dtype, mask_shape, kind):
    q, k, v = qkv((2, 3), 20, 70, 16, 8, dtype, seed=1)
    g = torch.Generator().manual_seed(2)
    if kind == "bool":
        mask = torch.rand(mask_shape, generator=g) > 0.3  # True = take part
    else:
        mask = torch.randn(mask_shape, generator=g, dtype=dtype)
        mask[torch.rand(mask_shape, generator=g) < 0.3] = float("-inf")
    # torch wants a mask of rank >= 2; ai3 broadcasts a row as NumPy does.
    want = F.scaled_dot_product_attention(q, k, v, attn_mask=mask if mask.dim() > 1 else mask.reshape(1, -1))
    got = ai3.layers.scaled_dot_product_attention(q, k, v, attn_mask=mask, algorithm=algorithm)
    check(got, want, dtype, f"{algorithm} mask {mask_shape} {kind}")


@pytest.mark.parametrize("algorithm", ALGORITHMS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_fully_masked_rows_give_zeros(algorithm, dtype):
    """torch's SDPA gives zeros for a query whose keys are all masked; so
    must every algorithm (not NaN), also when the masked keys span several
    of flash's key blocks."""
    q, k, v = qkv((1, 2), 9, 300, 8, 8, dtype)
    mask = torch.ones(9, 300, dtype=torch.bool)
    mask[3] = False
    mask[5, :250] = False  # only the last block's keys
    want = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    got = ai3.layers.scaled_dot_product_attention(q, k, v, attn_mask=mask, algorithm=algorithm)
    check(got, want, dtype, f"{algorithm} fully masked")
    assert torch.all(torch.as_tensor(got)[..., 3, :] == 0)


@pytest.mark.parametrize("algorithm", ALGORITHMS)
@pytest.mark.parametrize("scale", [0.05, 1.0, -0.5])
def test_scale(algorithm, scale):
    q, k, v = qkv((2, 2), 17, 23, 8, 8, torch.float64)
    want = F.scaled_dot_product_attention(q, k, v, scale=scale)
    got = ai3.layers.scaled_dot_product_attention(q, k, v, scale=scale, algorithm=algorithm)
    check(got, want, torch.float64, f"{algorithm} scale {scale}")


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_causal_with_mask(algorithm):
    """torch refuses attn_mask with is_causal; ai3 takes both: the same as
    the causal mask folded into the mask."""
    q, k, v = qkv((2,), 30, 40, 8, 8, torch.float64)
    mask = torch.randn(30, 40, dtype=torch.float64)
    causal = torch.ones(30, 40, dtype=torch.bool).tril()
    want = F.scaled_dot_product_attention(q, k, v, attn_mask=mask.masked_fill(~causal, float("-inf")))
    got = ai3.layers.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=True, algorithm=algorithm)
    check(got, want, torch.float64, f"{algorithm} causal + mask")


def test_empty_keys_and_queries():
    for algorithm in ALGORITHMS:
        q, k, v = qkv((2,), 4, 0, 8, 8, torch.float32)
        got = torch.as_tensor(ai3.layers.scaled_dot_product_attention(q, k, v, algorithm=algorithm))
        assert got.shape == (2, 4, 8) and torch.all(got == 0)  # torch gives zeros too
        q, k, v = qkv((2,), 0, 5, 8, 8, torch.float32)
        assert tuple(ai3.layers.scaled_dot_product_attention(q, k, v, algorithm=algorithm).shape) == (2, 0, 8)


def test_torch_custom_op_matches():
    from ai3.torch import attention

    q, k, v = qkv((2, 3), 11, 13, 8, 8, torch.float32)
    mask = torch.rand(11, 13) > 0.2
    want = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    for algorithm in ALGORITHMS:
        got = attention.scaled_dot_product_attention(q, k, v, attn_mask=mask, algorithm=algorithm)
        check(got, want, torch.float32, f"torch.ops.ai3.layer attention {algorithm}")


# ---- errors -------------------------------------------------------------


def test_mismatched_head_dims():
    q, k, v = qkv((2,), 5, 6, 8, 3, torch.float32)
    with pytest.raises(
        ai3.ShapeError,
        match=r"attention layer 'scaled_dot_product_attention' \(flash\): k's last dimension is 4 but q's is 8",
    ):
        ai3.layers.scaled_dot_product_attention(q, k[..., :4], v)
    with pytest.raises(ai3.ShapeError, match="v has 5 keys but k has 6"):
        ai3.layers.scaled_dot_product_attention(q, k, v[:, :5])
    with pytest.raises(ai3.ShapeError, match="same batch dimensions"):
        ai3.layers.scaled_dot_product_attention(q, k[:1], v[:1])


def test_wrong_rank():
    layer = ai3.layers.Attention(name="attn")
    with pytest.raises(ai3.ShapeError, match="attention layer 'attn'.*q must have rank >= 2"):
        layer(np.zeros(8, np.float32), np.zeros((6, 8), np.float32), np.zeros((6, 3), np.float32))
    with pytest.raises(ai3.ShapeError, match="attention layer 'attn'.*one rank"):
        layer(np.zeros((1, 5, 8), np.float32), np.zeros((6, 8), np.float32), np.zeros((6, 3), np.float32))


def test_mask_not_broadcastable():
    q, k, v = qkv((2,), 5, 6, 8, 3, torch.float32)
    with pytest.raises(
        ai3.ShapeError, match=r"attention layer 'scaled_dot_product_attention'.*mask \(5, 7\) does not broadcast"
    ):
        ai3.layers.scaled_dot_product_attention(q, k, v, attn_mask=torch.zeros(5, 7))
    layer = ai3.layers.Attention(has_mask=True, name="m")
    with pytest.raises(ai3.InvalidArgument, match="attention layer 'm': made with has_mask=True but called without"):
        layer(q, k, v)


def test_mixed_dtypes_and_bad_algorithm():
    q, k, v = qkv((2,), 5, 6, 8, 3, torch.float32)
    with pytest.raises(ai3.DTypeError, match="attention layer 'scaled_dot_product_attention'"):
        ai3.layers.scaled_dot_product_attention(q, k.double(), v)
    with pytest.raises(ai3.UnknownAlgorithm, match="'winograd'"):
        ai3.layers.Attention(algorithm="winograd")
    with pytest.raises(ai3.UnsupportedOperation, match="dropout_p"):
        ai3.layers.scaled_dot_product_attention(q, k, v, dropout_p=0.1)


def test_workspace_bytes():
    """What each algorithm keeps per call at L = S = 8192 (float32): naive
    the whole score matrix, chunked a bounded chunk, flash a few blocks per
    thread and one transposed copy of k, which grows linearly with S."""
    shapes = [[1, 1, 8192, 64]] * 3
    naive = ai3.layers.Attention(algorithm="naive").workspace_bytes(shapes)
    chunked = ai3.layers.Attention(algorithm="chunked").workspace_bytes(shapes)
    flash = ai3.layers.Attention(algorithm="flash").workspace_bytes(shapes)
    assert naive == 8192 * 8192 * 4
    assert chunked <= 8 << 20
    assert flash < 16 << 20
    doubled = ai3.layers.Attention(algorithm="flash").workspace_bytes([[1, 1, 16384, 64]] * 3)
    assert doubled - flash == 8192 * 64 * 4  # the extra keys' copy, nothing quadratic


if __name__ == "__main__":
    pytest_main.run(__file__)
