"""Forms that vision models outside torchvision use (found running timm's
models through swap_backend), each over a grid against torch: x.unbind(dim)
(attention's q, k, v = qkv.unbind(0)), torch.stack, F.normalize (p 1 and 2),
F.pad of the last one or two dims of tensors of rank 2 to 5 in every mode,
negative pads (cropping: F.pad, nn.ZeroPad2d), nn.Conv1d and F.conv1d
(strides, padding, dilation, groups, 'same'), nn.BatchNorm1d on (N, C) and
(N, C, L), repeat_interleave by an int along a dim, torch.addcmul,
torch.tensor_split (sections, indices, either keyword), a matmul with a
constant left operand (a buffer, a vector, one batch-expanded as timm's
lambda layers' position embeddings), in-place calls on
computed tensors whose operand is read afterwards, item assignment
(`x[:, 1:] = v`, `x[..., -1] += v`), torch.flip / fliplr / flipud, F.glu
and F.softmin (and their modules), index_select by constant indices; and a call ai3 refuses whose tuple's
elements are read, which is refused by that call's name (it was an
AttributeError)."""

from __future__ import annotations

import numpy as np
import pytest
import pytest_main
import torch
import torch.nn.functional as F
from torch import nn

import ai3

torch.set_num_threads(2)
DTYPES = [torch.float32, torch.float64]
TOL = {torch.float32: 1e-5, torch.float64: 1e-12}


def _check(net: nn.Module, shape, dtype=torch.float32, batches=(3, 1)) -> ai3.Model:
    net = net.eval().to(dtype)
    model = ai3.swap_backend(net, "default", sample_input_shape=shape, dtype=dtype)
    assert isinstance(model, ai3.Model), type(model)
    for batch in (shape[0], *batches):
        x = torch.randn((batch, *shape[1:]), dtype=dtype)
        with torch.no_grad():
            want = net(x)
        got = np.asarray(model(x))
        assert got.shape == tuple(want.shape)
        np.testing.assert_allclose(got, want.numpy(), rtol=TOL[dtype], atol=TOL[dtype])
    return model


class Unbind(nn.Module):
    def __init__(self, dim, method):
        super().__init__()
        self.dim, self.method = dim, method

    def forward(self, x):
        parts = x.unbind(self.dim) if self.method else torch.unbind(x, dim=self.dim)
        return parts[0] * 2 + parts[-1] - parts[len(parts) // 2]


@pytest.mark.parametrize("dim", [1, 2, -1])
@pytest.mark.parametrize("method", [False, True])
@pytest.mark.parametrize("dtype", DTYPES)
def test_unbind(dim, method, dtype):
    _check(Unbind(dim, method), (2, 3, 4, 5), dtype)


class QkvAttention(nn.Module):
    """timm's attention: a qkv projection reshaped and permuted to
    (3, B, heads, N, head_dim), unbound into q, k, v."""

    def __init__(self, dim=16, heads=2):
        super().__init__()
        self.heads, self.qkv, self.proj = heads, nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)

    def forward(self, x):
        b, n, c = x.shape
        qkv = self.qkv(x).reshape(b, n, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        y = F.scaled_dot_product_attention(q, k, v)
        return self.proj(y.transpose(1, 2).reshape(b, n, c))


def test_qkv_unbind_attention():
    _check(QkvAttention(), (2, 7, 16))


class Stack(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return torch.stack([x, x.sigmoid(), x * 3], dim=self.dim).sum(self.dim if self.dim >= 0 else self.dim)


class StackAsOutput(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return torch.stack((x.relu(), x.tanh()), self.dim)


@pytest.mark.parametrize("dim", [0, 1, 3, -1])
@pytest.mark.parametrize("dtype", DTYPES)
def test_stack(dim, dtype):
    if dim != 0:
        _check(Stack(dim), (2, 3, 4), dtype)
    _check(StackAsOutput(dim), (2, 3, 4), dtype)


class Normalize(nn.Module):
    def __init__(self, p, dim, eps):
        super().__init__()
        self.p, self.dim, self.eps = p, dim, eps

    def forward(self, x):
        return F.normalize(x, p=self.p, dim=self.dim, eps=self.eps)


@pytest.mark.parametrize("p", [1, 2, 2.0])
@pytest.mark.parametrize("dim", [1, -1])
@pytest.mark.parametrize("eps", [1e-12, 0.5])
@pytest.mark.parametrize("dtype", DTYPES)
def test_normalize(p, dim, eps, dtype):
    _check(Normalize(p, dim, eps), (2, 3, 5), dtype)


def test_normalize_with_another_p_is_refused_naming_the_node():
    with pytest.raises(ai3.UnsupportedOperation, match=r"normalize.*p=3"):
        ai3.swap_backend(Normalize(3, 1, 1e-12), "default", sample_input_shape=(2, 3))


class Pad(nn.Module):
    def __init__(self, pad, mode, value=None):
        super().__init__()
        self.pad, self.mode, self.value = pad, mode, value

    def forward(self, x):
        return (
            F.pad(x, self.pad, mode=self.mode, value=self.value)
            if self.mode == "constant"
            else F.pad(x, self.pad, mode=self.mode)
        )


@pytest.mark.parametrize(
    "shape,pad",
    [
        ((2, 3, 5, 6), (0, 1)),  # the last dim of a rank-4 tensor (EfficientViT)
        ((2, 3, 6), (1, 2)),
        ((2, 3, 6), (2, 1, 1, 0)),
        ((2, 6), (1, 3)),
        ((2, 3, 2, 4, 5), (1, 1)),
        ((2, 3, 2, 4, 5), (1, 0, 2, 1)),
    ],
)
@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
def test_pad_of_the_last_dims(shape, pad, mode):
    if mode != "constant" and (len(shape), len(pad)) not in {(2, 2), (3, 2), (3, 4), (4, 4)}:
        pytest.skip("torch pads a tensor of this rank with this many pads in constant mode only")
    _check(Pad(pad, mode, 0.25 if mode == "constant" else None), shape)


class Crop(nn.Module):
    def __init__(self, pad, module):
        super().__init__()
        self.pad, self.module = pad, nn.ZeroPad2d(pad) if module else None

    def forward(self, x):
        y = self.module(x) if self.module is not None else F.pad(x, self.pad)
        return y * 2


@pytest.mark.parametrize("pad", [(-1, 1, -1, 1), (-2, 0), (1, -1, 0, -2), (-1, -1, -1, -1)])
@pytest.mark.parametrize("module", [False, True])
def test_negative_pads_crop(pad, module):
    _check(Crop(pad, module), (2, 3, 6, 7))


class Conv1d(nn.Module):
    def __init__(self, functional, **kw):
        super().__init__()
        self.functional, self.kw = functional, kw
        self.conv = nn.Conv1d(6, 4, 3, groups=kw.get("groups", 1), **{k: v for k, v in kw.items() if k != "groups"})

    def forward(self, x):
        if not self.functional:
            return self.conv(x)
        return F.conv1d(x, self.conv.weight, self.conv.bias, **self.kw)


@pytest.mark.parametrize(
    "kw",
    [{}, {"stride": 2}, {"padding": 1}, {"padding": "same"}, {"dilation": 2, "padding": 2}, {"groups": 2}],
)
@pytest.mark.parametrize("functional", [False, True])
@pytest.mark.parametrize("dtype", DTYPES)
def test_conv1d(kw, functional, dtype):
    torch.manual_seed(0)
    _check(Conv1d(functional, **kw), (2, 6, 11), dtype)


class Eca(nn.Module):
    """ECA's channel attention: a conv1d across the pooled channels."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.eca = nn.Conv1d(1, 1, 3, padding=1, bias=False)

    def forward(self, x):
        x = self.conv(x)
        y = x.mean((2, 3)).view(x.shape[0], 1, -1)
        y = self.eca(y).view(x.shape[0], -1, 1, 1).sigmoid()
        return x * y


def test_eca_channel_attention():
    torch.manual_seed(0)
    _check(Eca(), (2, 3, 8, 8))


@pytest.mark.parametrize("shape", [(4, 6), (4, 6, 5)])
@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("dtype", DTYPES)
def test_batchnorm1d(shape, affine, dtype):
    torch.manual_seed(0)
    bn = nn.BatchNorm1d(6, affine=affine)
    with torch.no_grad():
        bn.running_mean.uniform_(-1, 1)
        bn.running_var.uniform_(0.5, 2)
        if affine:
            bn.weight.uniform_(0.5, 1.5)
            bn.bias.uniform_(-1, 1)
    _check(nn.Sequential(nn.Identity(), bn, nn.ReLU()), shape, dtype)


class RepeatInterleave(nn.Module):
    def __init__(self, repeats, dim, method):
        super().__init__()
        self.repeats, self.dim, self.method = repeats, dim, method

    def forward(self, x):
        if self.method:
            return x.repeat_interleave(self.repeats, dim=self.dim) * 2
        return torch.repeat_interleave(x, self.repeats, self.dim) * 2


@pytest.mark.parametrize("repeats", [1, 3])
@pytest.mark.parametrize("dim", [1, 2, -1])
@pytest.mark.parametrize("method", [False, True])
def test_repeat_interleave(repeats, dim, method):
    _check(RepeatInterleave(repeats, dim, method), (2, 3, 4))


def test_repeat_interleave_by_a_computed_count_is_refused_naming_the_node():
    class ByBatch(nn.Module):
        def forward(self, x):
            return x.repeat_interleave(x.shape[0] // 2, dim=1)

    with pytest.raises(ai3.UnsupportedOperation, match=r"repeat_interleave.*computed in forward"):
        ai3.swap_backend(ByBatch(), "default", sample_input_shape=(2, 3))


class Addcmul(nn.Module):
    """ResMLP's affine (addcmul of two parameters and x) and the forms
    around it."""

    def __init__(self, form, value):
        super().__init__()
        self.form, self.value = form, value
        self.alpha, self.beta = nn.Parameter(torch.randn(5)), nn.Parameter(torch.randn(5))

    def forward(self, x):
        if self.form == "affine":
            return torch.addcmul(self.beta, self.alpha, x, value=self.value)
        if self.form == "computed":
            return torch.addcmul(x, x.sigmoid(), x.tanh(), value=self.value)
        if self.form == "constant product":
            return torch.addcmul(x, self.alpha, self.beta, value=self.value)
        return x.addcmul(x.relu(), self.alpha, value=self.value)


@pytest.mark.parametrize("form", ["affine", "computed", "constant product", "method"])
@pytest.mark.parametrize("value", [1, 0.5])
@pytest.mark.parametrize("dtype", DTYPES)
def test_addcmul(form, value, dtype):
    torch.manual_seed(0)
    _check(Addcmul(form, value), (2, 3, 5), dtype)


class ReadsARefusedTuple(nn.Module):
    def forward(self, x):
        values, indices = torch.sort(x, dim=-1)
        return values.relu() + indices.float()


def test_elements_of_a_refused_call_are_refused_by_its_name():
    with pytest.raises(ai3.UnsupportedOperation, match=r"fx node 'sort'"):
        ai3.swap_backend(ReadsARefusedTuple(), "default", sample_input_shape=(2, 5))


class TensorSplit(nn.Module):
    def __init__(self, how, dim: int, keyword: str | None) -> None:
        super().__init__()
        self.how, self.dim, self.keyword = how, dim, keyword

    def forward(self, x):
        if self.keyword is None:
            parts = torch.tensor_split(x, self.how, dim=self.dim)
        elif self.keyword == "method":
            parts = x.tensor_split(self.how, self.dim)
        else:
            parts = torch.tensor_split(x, **{self.keyword: self.how}, dim=self.dim)
        return torch.cat([p * (k + 1) for k, p in enumerate(parts)], dim=self.dim)


@pytest.mark.parametrize(
    "how,dim,keyword",
    [(3, 1, None), (4, -1, "method"), ((1,), 1, "indices"), ([2, 3, 9], -1, None), (2, 2, "sections")],
)
def test_tensor_split(how, dim, keyword):
    _check(TensorSplit(how, dim, keyword), (2, 7, 5, 6))


class AddInPlace(nn.Module):
    """MViT's positional encoding: the class token is concatenated, the
    embedding added in place, and the concatenation returned."""

    def __init__(self) -> None:
        super().__init__()
        self.pos = nn.Parameter(torch.randn(1, 5, 4))
        self.token = nn.Parameter(torch.randn(1, 1, 4))

    def forward(self, x):
        y = torch.cat((self.token.expand(x.shape[0], -1, -1), x), dim=1)
        y.add_(self.pos)
        y.mul_(2.0)
        return y


def test_in_place_calls_change_their_operand():
    _check(AddInPlace(), (2, 4, 4))


class ConstantLeftMatmul(nn.Module):
    """a @ x, `a` a buffer of shape `left` (expanded over the batch when
    `expand`: pos_emb.expand(B, ...) @ v, timm's LambdaLayer)."""

    def __init__(self, left, expand=False):
        super().__init__()
        self.register_buffer("a", torch.randn(*left))
        self.expand = expand

    def forward(self, x):
        a = self.a.expand(x.shape[0], *self.a.shape) if self.expand else self.a
        return torch.matmul(a, x) + 1


@pytest.mark.parametrize(
    "left,shape,expand",
    [
        ((5, 8), (2, 8, 3), False),  # a matrix on a batch of matrices
        ((8,), (2, 8, 3), False),  # a vector: its 1-D rule
        ((4, 5, 8), (2, 1, 8, 3), False),  # batch dims broadcast both ways
        ((3, 1, 5, 8), (4, 8, 6), False),  # the constant of higher rank
        ((6, 5, 8), (2, 1, 8, 3), True),  # expanded over the batch
    ],
)
@pytest.mark.parametrize("dtype", DTYPES)
def test_matmul_with_a_constant_left_operand(left, shape, expand, dtype):
    _check(ConstantLeftMatmul(left, expand), shape, dtype)


if __name__ == "__main__":
    pytest_main.run(__file__)


def _matches_at_two_batches(net: nn.Module, dtype: torch.dtype = torch.float32, tol: float | None = None) -> None:
    """net through swap_backend, traced at (2, 4, 6), against torch at that
    batch and at another."""
    tol = TOL[dtype] if tol is None else tol
    model = ai3.swap_backend(net, sample_input_shape=(2, 4, 6))
    for batch in (2, 3):
        x = torch.randn(batch, 4, 6, dtype=dtype)
        with torch.no_grad():
            want = net(x)
        torch.testing.assert_close(model(x), want, atol=tol, rtol=tol)


class _Form(nn.Module):
    """A linear projection of the input, then the form `which` picks."""

    def __init__(self, which):
        super().__init__()
        self.which = which
        self.proj = nn.Linear(6, 6)


class Assign(_Form):
    """x[index] = value and x[index] += value into a computed tensor, the
    value computed, broadcast or cast."""

    def forward(self, x):
        y = self.proj(x)  # (N, 4, 6)
        if self.which == "augmented":  # MViT's attn[:, :, 1:, 1:] += rel_pos
            y[:, :, 1:] += x[:, :, 1:]
        elif self.which == "box":
            y[:, 1:3, 2:5] = x[:, :2, :3] * 2
        elif self.which == "int":
            y[:, 0] = x[:, 1]
        elif self.which == "ellipsis":
            y[..., -1] = x.sum(-1)
        elif self.which == "broadcast":
            y[:, :, :2] = x[:, :1, :2]
        elif self.which == "whole":
            y[:] = x * 3
        elif self.which == "twice":
            y[:, 0] = x[:, 3]
            y[:, :, 0] = y[:, :, 5] * 3
        return y * 1.5


@pytest.mark.parametrize("which", ["augmented", "box", "int", "ellipsis", "broadcast", "whole", "twice"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_item_assignment(which, dtype):
    torch.manual_seed(0)
    _matches_at_two_batches(Assign(which).to(dtype).eval(), dtype)


class AssignThroughView(nn.Module):
    def forward(self, x):
        y = x * 2
        first = y[:, 0]
        y[:, 1] = x[:, 0]
        return y + first.unsqueeze(1)


def test_item_assignment_beside_a_view_is_refused():
    """A view of the target read after the assignment would need to see it
    (in general); ai3 assigns into a copy, so it refuses by name."""
    with pytest.raises(ai3.UnsupportedOperation, match="setitem.*shares.*later node reads"):
        ai3.swap_backend(AssignThroughView().eval(), sample_input_shape=(2, 4, 6))


class FlipGluSoftmin(_Form):
    def forward(self, x):
        y = self.proj(x)  # (N, 4, 6)
        if self.which == "flip":
            return y.flip(-1) + torch.flip(y, (0, 1))  # the batch dim too
        if self.which == "fliplr/ud":
            return torch.fliplr(y) * 2 + y.flipud()
        if self.which == "glu":
            return F.glu(y, -1) + F.glu(y.transpose(1, 2), 1).transpose(1, 2)[..., :3]
        return F.softmin(y, 1)


@pytest.mark.parametrize("which", ["flip", "fliplr/ud", "glu", "softmin"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_flip_glu_softmin(which, dtype):
    torch.manual_seed(0)
    _matches_at_two_batches(FlipGluSoftmin(which).to(dtype).eval(), dtype)


def test_glu_and_softmin_modules():
    """nn.GLU and nn.Softmin, which ai3 does not map whole: traced through."""
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(6, 8), nn.GLU(), nn.Softmin(-1)).eval()
    model = ai3.swap_backend(net, sample_input_shape=(3, 6))
    x = torch.randn(5, 6)
    with torch.no_grad():
        want = net(x)
    torch.testing.assert_close(model(x), want, atol=1e-6, rtol=1e-6)


class SelectConstant(nn.Module):
    """index_select by constant indices (XLNet's relative shift selects by
    arange), evenly spaced or not, beside a dropout of a constant table
    expanded along the batch."""

    def __init__(self, indices):
        super().__init__()
        self.register_buffer("indices", torch.tensor(indices))
        self.table = nn.Parameter(torch.randn(1, 4, 6))
        self.drop = nn.Dropout(0.1)

    def forward(self, x):
        pos = self.drop(self.table.expand(x.size(0), -1, -1))
        return torch.index_select(x + pos, 2, self.indices) * 2


@pytest.mark.parametrize("indices", [[0, 1, 2, 3], [1, 3, 5], [4], [5, 3, 1], [2, 0, 2, 5]])
def test_index_select_by_constant_indices(indices):
    torch.manual_seed(0)
    _matches_at_two_batches(SelectConstant(indices).eval(), tol=1e-6)


class AssignIntoState(nn.Module):
    """A cache kept between calls, written in forward."""

    def __init__(self):
        super().__init__()
        self.register_buffer("cache", torch.zeros(4, 6))

    def forward(self, x):
        self.cache[1:3] = x[:, :2].sum(0)
        return x + self.cache


class AssignIntoConstant(nn.Module):
    def forward(self, x):
        mask = torch.zeros(4, 6)
        mask[1:3] = x[:, :2].sum(0)
        return x + mask


def test_item_assignment_into_model_state_or_a_constant_is_refused():
    """Into a buffer: refused before tracing writes into the user's model
    (which it used to, silently dropping the assignment); into a tensor made
    from no input: refused by name."""
    net = AssignIntoState().eval()
    with pytest.raises(ai3.UnsupportedOperation, match="assignment into a parameter or buffer"):
        ai3.swap_backend(net, sample_input_shape=(2, 4, 6))
    assert not net.cache.any()
    with pytest.raises(ai3.UnsupportedOperation, match="setitem.*assignment into a constant tensor"):
        ai3.swap_backend(AssignIntoConstant().eval(), sample_input_shape=(2, 4, 6))


class ConstantOperands(nn.Module):
    """A where whose branch is a parameter expanded along the batch (its
    row broadcasts), one whose condition is a constant of the batch's rows,
    and constants cast to the input's dtype by type_as (Funnel's
    `ones.type_as(x)`: a constant still) and sliced."""

    def __init__(self):
        super().__init__()
        self.table = nn.Parameter(torch.randn(1, 4, 6))

    def forward(self, x):
        row = self.table.expand(x.size(0), -1, -1)
        ones = torch.ones(4, 7).type_as(x)[:, 1:]  # a slice of a constant: constant
        batch_ones = torch.ones(x.shape[:2]).type_as(x)[:, :, None]  # the batch's rows: a row
        kept = torch.where(batch_ones > 0.5, x, row)  # a constant condition, expanded along the batch
        return torch.where(x > 0, row, x) * ones + torch.where(x < 0.5, x, row) + kept


def test_constant_operands_of_where_and_type_as():
    torch.manual_seed(0)
    _matches_at_two_batches(ConstantOperands().eval(), tol=1e-6)
