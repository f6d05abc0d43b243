"""multihead_attention against torch.nn.MultiheadAttention, and attention in
the PyTorch frontend: ai3.layers.MultiheadAttention, swap_attention (in
place, torch.ops.ai3.layer) on torchvision's vit_b_16, and
swap_backend of models whose attention is an nn.MultiheadAttention or an
F.scaled_dot_product_attention call.

Tolerances, |ai3 - torch| <= tol + tol |torch|: float32 1e-4 (1e-3 for a
whole ViT), float64 1e-10.
"""

from __future__ import annotations

import copy

import pytest
import pytest_main
import torch
import torch.nn.functional as F
import torchvision
from torch import nn

import ai3
from ai3.torch import attention

torch.set_num_threads(2)

ALGORITHMS = ["naive", "flash", "chunked"]


def tolerance(dtype: torch.dtype) -> float:
    return 1e-10 if dtype == torch.float64 else 1e-4


def check(got, want, dtype, what, tol=None):
    got = torch.as_tensor(got)
    tol = tol or tolerance(dtype)
    torch.testing.assert_close(got, want, atol=tol, rtol=tol, msg=lambda m: f"{what}: {m}")


def mha(embed, heads, batch_first, dtype, bias=True, seed=0):
    torch.manual_seed(seed)
    return nn.MultiheadAttention(embed, heads, batch_first=batch_first, bias=bias, dtype=dtype).eval()


def ai3_layer(m: nn.MultiheadAttention, algorithm, **kwargs):
    return ai3.layers.MultiheadAttention(
        m.in_proj_weight,
        m.in_proj_bias,
        m.out_proj.weight,
        m.out_proj.bias,
        m.num_heads,
        batch_first=m.batch_first,
        algorithm=algorithm,
        **kwargs,
    )


@pytest.mark.parametrize("algorithm", ALGORITHMS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("bias", [True, False])
def test_self_attention(algorithm, dtype, batch_first, bias):
    m = mha(32, 4, batch_first, dtype, bias)
    x = torch.randn((3, 10, 32) if batch_first else (10, 3, 32), dtype=dtype)
    with torch.no_grad():
        want = m(x, x, x, need_weights=False)[0]
    check(ai3_layer(m, algorithm)(x), want, dtype, f"{algorithm} self-attention")


LINEAR_ALGORITHMS = [a for a in ai3.algorithms()["linear"] if a != "custom"]


@pytest.mark.parametrize("projection", LINEAR_ALGORITHMS)
@pytest.mark.parametrize("self_attention", [True, False])
@pytest.mark.parametrize("bias", [True, False])
def test_projections_run_each_linear_algorithm(projection, self_attention, bias):
    """The projections are linear layers of the algorithm each attribute
    names, in and out apart, with torch's result (float32: guess has no
    float64)."""
    dtype = torch.float32
    m = mha(48, 4, True, dtype, bias, seed=3)
    q, kv = torch.randn(2, 13, 48), torch.randn(2, 9 if not self_attention else 13, 48)
    kv = q if self_attention else kv
    with torch.no_grad():
        want = m(q, kv, kv, need_weights=False)[0]
    for in_projection, out_projection in ((projection, "default"), ("default", projection)):
        layer = ai3_layer(
            m, "flash", self_attention=self_attention, in_projection=in_projection, out_projection=out_projection
        )
        got = layer(q) if self_attention else layer(q, kv, kv)
        check(got, want, dtype, f"projections {in_projection}/{out_projection}")


def test_projection_errors_name_the_projection():
    m = mha(16, 2, True, torch.float64)
    with pytest.raises(ai3.Error, match="in_projection.*winograd"):
        ai3_layer(m, "naive", in_projection="winograd")
    with pytest.raises(ai3.Error, match="out_projection.*float64"):
        ai3_layer(m, "naive", out_projection="guess")


def test_swap_backend_chooses_projections_with_linears_selector(tmp_path, monkeypatch):
    """swap_backend gives the projections what linear's selector picks for
    linears of their shapes: a name as it is, "auto" timed (and recorded
    in the plan as '<mha>.in_proj' / '.out_proj', which a replay reads)."""
    monkeypatch.setenv("AI3_CACHE_DIR", str(tmp_path))
    torch.manual_seed(1)
    net = SelfAttentionNet().eval()
    shape = (2, 9, 16)
    x = torch.randn(shape)
    with torch.no_grad():
        want = net(x)
    for selector in ("direct", "auto"):
        model = ai3.swap_backend(net, {"linear": selector}, sample_input_shape=shape)
        check(model(x), want, torch.float32, f"projections {selector}")
    plan = ai3.plan(net, shape, {"linear": "auto"})
    names = [name for name, _, _ in plan.choices("linear")]
    assert "attn.in_proj" in names and "attn.out_proj" in names, names
    replayed = ai3.swap_backend(net, plan, sample_input_shape=shape)
    check(replayed(x), want, torch.float32, "projections from a plan")


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_cross_attention_unbatched_and_masks(algorithm):
    dtype = torch.float64
    m = mha(24, 3, False, dtype)
    q, kv = torch.randn(7, 2, 24, dtype=dtype), torch.randn(11, 2, 24, dtype=dtype)
    with torch.no_grad():
        want = m(q, kv, kv, need_weights=False)[0]
    layer = ai3_layer(m, algorithm, self_attention=False)
    check(layer(q, kv, kv), want, dtype, "cross-attention")
    # Unbatched (L, D).
    with torch.no_grad():
        want = m(q[:, 0], kv[:, 0], kv[:, 0], need_weights=False)[0]
    check(layer(q[:, 0], kv[:, 0], kv[:, 0]), want, dtype, "unbatched")
    # attn_mask (bool: True = masked out; and float) and key_padding_mask,
    # through the in-place module, which folds them into one mask.
    am = torch.rand(7, 11) < 0.3
    kpm = torch.zeros(2, 11, dtype=torch.bool)
    kpm[1, 8:] = True
    am3 = torch.randn(2 * 3, 7, 11, dtype=dtype)
    swapped = attention.MultiheadAttention(copy.deepcopy(m), algorithm, "mha")
    for kwargs in (
        {"attn_mask": am},
        {"key_padding_mask": kpm},
        {"attn_mask": am, "key_padding_mask": kpm},
        {"attn_mask": am3},
    ):
        with torch.no_grad():
            want = m(q, kv, kv, need_weights=False, **kwargs)[0]
            got, weights = swapped(q, kv, kv, need_weights=False, **kwargs)
        assert weights is None
        check(got, want, dtype, f"masks {list(kwargs)}")


def test_errors_name_the_layer():
    m = mha(32, 4, True, torch.float32)
    layer = ai3_layer(m, "flash", name="enc.attn")
    with pytest.raises(ai3.ShapeError, match="multihead_attention layer 'enc.attn'.*last dimension embed_dim=32"):
        layer(torch.randn(2, 5, 16))
    with pytest.raises(ai3.ShapeError, match="multihead_attention layer 'enc.attn'.*must be \\(B, L, D\\)"):
        layer(torch.randn(32))
    with pytest.raises(ai3.InvalidArgument, match="multihead_attention layer 'bad'.*num_heads must be >= 1 and divide"):
        ai3.layers.MultiheadAttention(
            m.in_proj_weight, m.in_proj_bias, m.out_proj.weight, m.out_proj.bias, 5, name="bad"
        )
    with pytest.raises(ai3.ShapeError, match="multihead_attention layer 'w'.*in_proj_weight has shape \\(32, 32\\)"):
        ai3.layers.MultiheadAttention(
            m.in_proj_weight[:32], m.in_proj_bias, m.out_proj.weight, m.out_proj.bias, 4, name="w"
        )
    cross = ai3_layer(m, "naive", self_attention=False, has_mask=True, name="x")
    q = torch.randn(2, 5, 32)
    with pytest.raises(ai3.ShapeError, match="multihead_attention layer 'x'.*does not broadcast"):
        cross(q, q, q, mask=torch.zeros(5, 6))


def vit():
    torch.manual_seed(0)
    m = torchvision.models.vit_b_16(weights=None, image_size=32, num_classes=10).eval()
    nn.init.normal_(m.heads.head.weight, std=0.02)  # torchvision zeroes the head
    return m


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_swap_attention_vit(algorithm):
    m = vit()
    x = torch.randn(2, 3, 32, 32)
    with torch.no_grad():
        want = m(x)
    swapped = ai3.swap_attention(copy.deepcopy(m), algorithm)
    assert all(isinstance(layer.self_attention, attention.MultiheadAttention) for layer in swapped.encoder.layers)
    assert set(swapped.state_dict()) == set(m.state_dict())
    with torch.no_grad():
        got = swapped(x)
    check(got, want, torch.float32, f"vit_b_16 swap_attention {algorithm}", tol=1e-3)


def test_swap_attention_selectors():
    m = vit()
    swapped = ai3.swap_attention(copy.deepcopy(m), ["naive", "keep"] + ["flash"] * 10)
    kinds = [type(layer.self_attention).__module__ for layer in swapped.encoder.layers]
    assert kinds[1] == "torch.nn.modules.activation" and kinds.count("ai3.torch.attention") == 11
    assert swapped.encoder.layers[0].self_attention.resolved_algorithm() == "naive"
    with pytest.raises(ai3.InvalidSelector):
        ai3.swap_attention(copy.deepcopy(m), ["naive"])


class SelfAttentionNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.attn = nn.MultiheadAttention(16, 2, batch_first=True)

    def forward(self, x):
        return self.attn(x, x, x, need_weights=False)[0]


class SdpaNet(nn.Module):
    def forward(self, x):
        return F.scaled_dot_product_attention(x, x, x, is_causal=True)


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_swap_backend(algorithm):
    torch.manual_seed(0)
    for net, shape in ((SelfAttentionNet().eval(), (2, 9, 16)), (SdpaNet().eval(), (2, 3, 9, 8))):
        x = torch.randn(shape)
        with torch.no_grad():
            want = net(x)
        model = ai3.swap_backend(
            net, {"multihead_attention": algorithm, "attention": algorithm}, sample_input_shape=shape
        )
        check(model(x), want, torch.float32, f"swap_backend {type(net).__name__} {algorithm}")
        assert any(op in ("attention", "multihead_attention") and algo == algorithm for _, op, algo in model.layers())


class GroupedQueryNet(nn.Module):
    """sdpa with enable_gqa: fewer key/value heads (dim -3) than query
    heads; causal, or a constant (buffer) mask."""

    def __init__(self, kv_heads: int, length: int, constant_mask: bool):
        super().__init__()
        self.kv_heads = kv_heads
        self.register_buffer("mask", torch.randn(length, length) if constant_mask else None)

    def forward(self, x):
        k = x[:, : self.kv_heads]
        v = x[:, -self.kv_heads :] * 2.0
        return F.scaled_dot_product_attention(
            x, k, v, attn_mask=self.mask, is_causal=self.mask is None, enable_gqa=True
        )


@pytest.mark.parametrize("algorithm", ALGORITHMS)
@pytest.mark.parametrize(
    "shape,kv_heads", [((2, 4, 9, 8), 2), ((2, 6, 9, 8), 1), ((1, 6, 5, 16), 3), ((2, 4, 9, 8), 4)]
)
@pytest.mark.parametrize("constant_mask", [False, True])
def test_swap_backend_grouped_query(algorithm, shape, kv_heads, constant_mask):
    torch.manual_seed(1)
    net = GroupedQueryNet(kv_heads, shape[-2], constant_mask).eval()
    x = torch.randn(shape)
    with torch.no_grad():
        want = net(x)
    model = ai3.swap_backend(net, {"attention": algorithm}, sample_input_shape=shape)
    check(model(x), want, torch.float32, f"grouped-query sdpa {shape} over {kv_heads} heads, {algorithm}")


if __name__ == "__main__":
    pytest_main.run(__file__)
