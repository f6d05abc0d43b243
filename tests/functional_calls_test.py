"""Modules that call torch.nn.functional with their own parameters and
buffers (F.conv2d(x, self.weight, ...), F.linear, F.batch_norm,
F.layer_norm) through ai3.swap_backend, against the module itself, in both
dtypes, over the padding / stride / kernel forms PyTorch accepts; a weight
computed in forward is refused naming the fx node.

Tolerance: tolerances.tolerance(dtype) relative to max|torch|.
"""

from __future__ import annotations

import pytest
import pytest_main
import torch
import torch.nn.functional as F
from tolerances import DTYPES, tolerance
from torch import nn

import ai3

torch.set_num_threads(2)


class FunctionalConv(nn.Module):
    def __init__(self, cin, cout, kernel, bias, stride, padding, dilation, groups):
        super().__init__()
        kh, kw = (kernel, kernel) if isinstance(kernel, int) else (kernel * 2)[:2]  # a 1-tuple is both dims
        self.weight = nn.Parameter(torch.randn(cout, cin // groups, kh, kw) * 0.2)
        self.bias = nn.Parameter(torch.randn(cout)) if bias else None
        self.args = (stride, padding, dilation, groups)

    def forward(self, x):
        stride, padding, dilation, groups = self.args
        return F.relu(F.conv2d(x, self.weight, self.bias, stride, padding, dilation, groups))


class FunctionalNet(nn.Module):
    """Batch norm (buffers), layer norm and linear, all functional."""

    def __init__(self):
        super().__init__()
        self.conv_w = nn.Parameter(torch.randn(8, 3, 3, 3) * 0.2)
        self.register_buffer("mean", torch.randn(8) * 0.1)
        self.register_buffer("var", torch.rand(8) + 0.5)
        self.gamma = nn.Parameter(torch.rand(8) + 0.5)
        self.beta = nn.Parameter(torch.randn(8))
        self.ln_w = nn.Parameter(torch.rand(8 * 6 * 6) + 0.5)
        self.fc_w = nn.Parameter(torch.randn(5, 8 * 6 * 6) * 0.05)
        self.fc_b = nn.Parameter(torch.randn(5))

    def forward(self, x):
        y = F.conv2d(x, self.conv_w, padding="valid")
        y = F.batch_norm(y, self.mean, self.var, self.gamma, self.beta, False, 0.1, 1e-3)
        y = torch.flatten(F.relu(y), 1)
        y = F.layer_norm(y, (y.shape[-1],), self.ln_w, None, 1e-5)
        return F.linear(y, self.fc_w, self.fc_b)


def _check(module, shape, dtype):
    module = module.to(dtype).eval()
    x = torch.randn(shape, dtype=dtype)
    model = ai3.swap_backend(module, sample_input_shape=shape)
    with torch.no_grad():
        want = module(x)
    got = model(x)
    assert got.shape == want.shape
    assert (got - want).abs().max().item() <= tolerance(dtype) * max(1.0, want.abs().max().item())
    return model


# (kernel, bias, stride, padding, dilation, groups): ints, 1-tuples, pairs,
# "same" / "valid", empty-free forms torch accepts.
CONV_FORMS = [
    (3, True, 1, 1, 1, 1),
    ((3,), False, (1,), (1,), (1,), 1),
    ((3, 5), True, (2, 1), (1, 2), 1, 1),
    (3, True, 1, "same", 2, 1),
    ((2, 4), False, 1, "same", 1, 1),  # even kernels: the extra pad at the bottom/right
    (3, True, 2, "valid", 1, 2),
    (1, False, (2,), 0, 1, 4),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("form", CONV_FORMS, ids=lambda f: "-".join(map(str, f)))
def test_functional_conv2d(form, dtype):
    kernel, bias, stride, padding, dilation, groups = form
    _check(FunctionalConv(8, 8, kernel, bias, stride, padding, dilation, groups), (2, 8, 11, 10), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_functional_norms_and_linear(dtype):
    model = _check(FunctionalNet(), (3, 3, 8, 8), dtype)
    ops = [op for _, op, _ in model.layers()]
    assert "conv2d" in ops and "linear" in ops and "layernorm" in ops


class ComputedWeight(nn.Module):
    """A weight that depends on the input (a weight computed from the
    model's own tensors alone is folded while tracing)."""

    def forward(self, x, w):
        return F.linear(x, w)


class TrainingBatchNorm(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("mean", torch.zeros(3))
        self.register_buffer("var", torch.ones(3))

    def forward(self, x):
        return F.batch_norm(x, self.mean, self.var, training=True)


class StridedSame(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(4, 3, 3, 3))

    def forward(self, x):
        return F.conv2d(x, self.weight, stride=2, padding="same")


def test_computed_weight_is_refused_naming_the_node():
    with pytest.raises(
        ai3.UnsupportedOperation, match=r"fx node 'linear'.*weight is 'w', a tensor computed in forward"
    ):
        ai3.swap_backend(ComputedWeight().eval(), sample_input_shape=[(1, 3), (4, 3)])


def test_batch_norm_in_training_mode_is_refused():
    with pytest.raises(ai3.UnsupportedOperation, match="training=True"):
        ai3.swap_backend(TrainingBatchNorm().eval(), sample_input_shape=(1, 3, 8, 8))


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
def test_padding_modes_other_than_zeros(mode):
    # nn.Conv2d pads through F.pad in these modes: a pad2d of that mode
    # before the conv.
    torch.manual_seed(0)
    conv = nn.Conv2d(3, 4, 3, padding=(1, 2), padding_mode=mode).eval()
    x = torch.randn(2, 3, 8, 8)
    swapped = ai3.swap_backend(conv, sample_input_shape=(2, 3, 8, 8))
    torch.testing.assert_close(torch.as_tensor(swapped(x)), conv(x), rtol=1e-4, atol=1e-5)


def test_embedding_runs_as_a_gather_of_its_table():
    # int64 token ids enter since issue 17 (helper int64); the example
    # tensor gives their dtype.
    emb = nn.Sequential(nn.Embedding(10, 4)).eval()
    ids = torch.tensor([[1, 9, 0], [3, 3, 2]])
    swapped = ai3.swap_backend(emb, sample_input_shape=[ids])
    assert [op for _, op, _ in swapped.layers()] == ["gather"]
    torch.testing.assert_close(torch.as_tensor(swapped(ids)), emb(ids).detach())


if __name__ == "__main__":
    pytest_main.run(__file__)
