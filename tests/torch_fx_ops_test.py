"""swap_backend on small modules using the activation, softmax and padding
ops (clamp, sigmoid, silu, tanh, softmax, pad2d), as modules, functions and
tensor methods, against the unswapped module."""

from __future__ import annotations

import pytest
import pytest_main
import torch
import torch.nn.functional as F
from torch import nn

import ai3

torch.set_num_threads(2)


class Modules(nn.Module):
    """Every supported module form."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)
        self.pad = nn.ZeroPad2d((1, 2, 0, 3))
        self.cpad = nn.ConstantPad2d(1, -0.5)
        self.relu6 = nn.ReLU6()
        self.hardtanh = nn.Hardtanh(-0.3, 0.4)
        self.sigmoid = nn.Sigmoid()
        self.silu = nn.SiLU()
        self.tanh = nn.Tanh()
        self.softmax = nn.Softmax(dim=1)
        self.fc = nn.Linear(4, 5)
        self.softmax_last = nn.Softmax(dim=-1)

    def forward(self, x):
        x = self.cpad(self.pad(x))
        x = self.relu6(self.conv(x))
        x = self.hardtanh(self.silu(x))
        x = self.tanh(self.sigmoid(x))
        x = self.softmax(x)
        x = torch.flatten(F.adaptive_avg_pool2d(x, 1), 1)
        return self.softmax_last(self.fc(x))


class Functions(nn.Module):
    """Every supported function and tensor-method form."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 6, 3, padding=1)

    def forward(self, x):
        x = F.pad(x, (2, 1, 0, 3))
        x = F.pad(x, (1, 1, 1, 1), "constant", 0.25)
        x = self.conv(x)
        x = F.relu6(x)
        x = F.hardtanh(x, -0.5, 0.5)
        x = F.hardtanh(x, min_val=-0.25, max_val=0.3)
        x = torch.sigmoid(x)
        x = F.sigmoid(x)
        x = F.silu(x)
        x = torch.tanh(x)
        x = x.sigmoid()
        x = x.tanh()
        x = torch.clamp(x, -0.2, 0.6)
        x = x.clamp(min=0.1)
        x = F.softmax(x, dim=1)
        x = torch.softmax(x, -1)
        x = x.softmax(2)
        return x


CASES = {"modules": Modules, "functions": Functions}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
@pytest.mark.parametrize("name", list(CASES))
def test_swap_backend_matches_torch(name, dtype) -> None:
    torch.manual_seed(0)
    model = CASES[name]().to(dtype).eval()
    x = torch.randn(2, 3, 9, 11, dtype=dtype) * 3
    with torch.inference_mode():
        want = model(x)
    swapped = ai3.swap_backend(model, sample_input_shape=tuple(x.shape))
    got = swapped(x)
    tol = 1e-5 if dtype == torch.float32 else 1e-12
    torch.testing.assert_close(got, want, atol=tol, rtol=tol)
    ops = [op for _, op, _ in swapped.layers()]
    for op in ["clamp", "sigmoid", "tanh", "softmax", "pad2d"]:
        assert op in ops, (op, ops)
    # The relu6 right after the conv is fused into it (ai3.fusion).
    if name == "modules":
        assert ops.count("clamp") == 1 and "silu" in ops
    else:
        assert ops.count("clamp") == 4 and "silu" in ops and ops.count("pad2d") == 2 and ops.count("softmax") == 3


def test_attrs_of_the_specs() -> None:
    from ai3.torch import fx

    specs, _, _ = fx.to_specs(Modules().eval(), (1, 3, 8, 8))
    by_name = {s.name: s for s in specs}
    assert by_name["pad"].op == "pad2d" and by_name["pad"].attrs == {"padding": (0, 3, 1, 2), "value": 0.0}
    assert by_name["cpad"].attrs == {"padding": (1, 1, 1, 1), "value": -0.5}
    assert by_name["relu6"].op == "clamp" and by_name["relu6"].attrs == {"min": 0.0, "max": 6.0}
    assert by_name["hardtanh"].attrs == pytest.approx({"min": -0.3, "max": 0.4})
    assert by_name["softmax"].attrs == {"axis": 1}
    assert by_name["softmax_last"].attrs == {"axis": -1}
    assert [by_name[n].op for n in ("sigmoid", "silu", "tanh")] == ["sigmoid", "silu", "tanh"]


def test_softmax_without_dim_uses_torch_implicit_dim() -> None:
    model = nn.Sequential(nn.Flatten(), nn.Softmax()).eval()
    x = torch.randn(3, 2, 4)
    with pytest.warns(UserWarning):
        want = model(x)
    swapped = ai3.swap_backend(model, sample_input_shape=tuple(x.shape))
    torch.testing.assert_close(swapped(x), want)


@pytest.mark.parametrize(
    "forward,match",
    [
        (lambda x: F.pad(x, (1, 1, 1, 1, 1, 1)), "only 4 int pads"),  # the channels too
        (lambda x: F.pad(x.flatten(2), (1, -1)), "negative pads"),  # cropping: rank-4 tensors only
    ],
)
def test_unsupported_forms_are_refused(forward, match) -> None:
    class M(nn.Module):
        def forward(self, x):
            return forward(x)

    with pytest.raises(ai3.UnsupportedOperation, match=match):
        ai3.swap_backend(M().eval(), sample_input_shape=(1, 2, 5, 5))


@pytest.mark.parametrize(
    "model_dtype,softmax_dtype",
    [(torch.float32, torch.float32), (torch.float64, torch.float32), (torch.float32, torch.float64)],
    ids=str,
)
def test_softmax_with_a_dtype_casts_first(model_dtype, softmax_dtype) -> None:
    """F.softmax(x, dim, dtype=...) casts x to dtype first, as torch does:
    nothing where x has it, a float32 island in a float64 model (Bloom's
    attention), a float64 one in a float32 model."""

    class M(nn.Module):
        def forward(self, x):
            return F.softmax(x * 2, -1, dtype=softmax_dtype).to(x.dtype) + x

    x = torch.randn(2, 3, 5, dtype=model_dtype)
    model = ai3.swap_backend(M(), sample_input_shape=x.shape, dtype=model_dtype)
    torch.testing.assert_close(model(x), M()(x))


class Float32Island(nn.Module):
    """A float64 model computing a statistic in float32, as T5's layer norm
    does: numbers beside the float32 tensors (2, eps) and float64 * float32
    (promoted to float64) as PyTorch types them."""

    def __init__(self) -> None:
        super().__init__()
        self.scale = nn.Parameter(torch.linspace(0.5, 1.5, 8))

    def forward(self, x):
        variance = x.to(torch.float32).pow(2).mean(-1, keepdim=True)
        y = x * torch.rsqrt(variance + 1e-6)
        return self.scale * (y + variance.sqrt())


def test_a_float32_island_in_a_float64_model() -> None:
    net = Float32Island().double().eval()
    x = torch.randn(3, 5, 8, dtype=torch.float64)
    model = ai3.swap_backend(net, "default", sample_input_shape=tuple(x.shape))
    assert str(model.dtype) == "float64"
    ops = [op for _, op, _ in model.layers()]
    assert ops.count("cast") == 3  # to float32, and each float32 operand back to float64 for its product/sum
    with torch.no_grad():
        want = net(x)
    got = model(x)
    assert got.dtype == torch.float64
    # The statistic is float32 on both sides, rounded in each one's order.
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)


class _Unfolded(nn.Module):
    """nn.Unfold or F.unfold (issue 17), its columns then used as a
    transformer's tokens would be."""

    def __init__(self, functional: bool, **kwargs) -> None:
        super().__init__()
        self.kwargs = kwargs
        self.unfold = None if functional else nn.Unfold(**kwargs)

    def forward(self, x):
        cols = F.unfold(x, **self.kwargs) if self.unfold is None else self.unfold(x)
        return cols.transpose(1, 2) * 2.0


@pytest.mark.parametrize("functional", [False, True])
@pytest.mark.parametrize(
    "kwargs,shape",
    [
        ({"kernel_size": 3}, (2, 3, 8, 8)),
        ({"kernel_size": (2, 2), "stride": 2}, (1, 5, 6, 6)),
        ({"kernel_size": 3, "padding": 1, "dilation": 2}, (2, 4, 9, 7)),
        ({"kernel_size": (2, 3), "dilation": (1, 2), "padding": 1, "stride": (2, 1)}, (2, 3, 7, 9)),
    ],
)
def test_unfold_is_exact_at_any_batch(functional, kwargs, shape, dtype=torch.float32) -> None:
    """im2col as a grouped conv2d with one-hot filters: the same values
    (exactly, but for winograd's transforms where it is chosen), at the
    sample's batch and at another."""
    m = _Unfolded(functional, **kwargs)
    model = ai3.swap_backend(m, sample_input_shape=shape)
    for batch in (shape[0], 3):
        x = torch.randn(batch, *shape[1:], dtype=dtype)
        torch.testing.assert_close(model(x), m(x), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize(
    "pool",
    [
        nn.MaxPool1d(3),
        nn.MaxPool1d(3, 2, 1),
        nn.MaxPool1d(2, dilation=2, ceil_mode=True),
        nn.AvgPool1d(3, 2, 1),
        nn.AvgPool1d(4, padding=2, ceil_mode=True, count_include_pad=False),
        nn.AdaptiveAvgPool1d(1),
        nn.AdaptiveAvgPool1d(5),
        nn.AdaptiveMaxPool1d(4),
    ],
    ids=repr,
)
def test_1d_pool_modules_match_torch(pool) -> None:
    """1-D pools (issue 17: text and audio CNNs, Hugging Face Swin's pooler)
    as the 2-D pool of a (N, C, 1, L) view, at the sample's batch and
    another."""
    model = ai3.swap_backend(pool, sample_input_shape=(2, 6, 17))
    for batch in (2, 3):
        x = torch.randn(batch, 6, 17)
        torch.testing.assert_close(model(x), pool(x))


@pytest.mark.parametrize(
    "module,shape,match",
    [
        (nn.MaxPool1d(2, return_indices=True), (2, 4, 8), "return_indices"),
        (nn.AdaptiveMaxPool1d(2, return_indices=True), (2, 4, 8), "return_indices"),
    ],
    ids=repr,
)
def test_1d_pool_forms_ai3_lacks_are_refused(module, shape, match) -> None:
    class M(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.m = module

        def forward(self, x):
            y = self.m(x)
            return y[0] if isinstance(y, tuple) else y

    with pytest.raises(ai3.UnsupportedOperation, match=match):
        ai3.swap_backend(M(), sample_input_shape=shape)


def test_1d_pool_functions_match_torch() -> None:
    class M(nn.Module):
        def forward(self, x):
            y = F.max_pool1d(x, 2).sum(-1, keepdim=True) + F.avg_pool1d(x, 3, 1, 1).mean(-1, keepdim=True)
            return y + F.adaptive_avg_pool1d(x, 1) + F.adaptive_max_pool1d(x, 1)

    x = torch.randn(2, 6, 17)
    torch.testing.assert_close(ai3.swap_backend(M(), sample_input_shape=x.shape)(x), M()(x))


if __name__ == "__main__":
    pytest_main.run(__file__)


class LeakyReLUs(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)
        self.leaky = nn.LeakyReLU(0.2)

    def forward(self, x):
        return F.leaky_relu(self.leaky(self.conv(x)), negative_slope=-0.5) + F.leaky_relu(x[:, :1, 1:-1, 1:-1])


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
def test_leaky_relu_module_and_function(dtype) -> None:
    torch.manual_seed(0)
    model = LeakyReLUs().to(dtype).eval()
    x = torch.randn(2, 3, 9, 11, dtype=dtype) * 3
    with torch.inference_mode():
        want = model(x)
    swapped = ai3.swap_backend(model, sample_input_shape=tuple(x.shape))
    tol = 1e-5 if dtype == torch.float32 else 1e-12
    torch.testing.assert_close(swapped(x), want, atol=tol, rtol=tol)
    assert [op for _, op, _ in swapped.layers()].count("leaky_relu") == 3
