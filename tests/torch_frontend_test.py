"""The PyTorch frontend: the paper's listings, every selector form, and bad
input, on small networks (the model zoo is in torch_models_test)."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import pytest_main
import torch
import torchvision
from torch import nn

import ai3

torch.set_num_threads(2)


class ConvNet(nn.Module):
    """The network of the paper's Listing 1."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels=3, out_channels=16, kernel_size=3, padding=1)
        self.maxpool = nn.MaxPool2d(kernel_size=2, stride=2)
        self.conv2 = nn.Conv2d(in_channels=16, out_channels=32, kernel_size=3, padding=1)

    def forward(self, x):
        x = torch.relu(self.conv1(x))
        x = self.maxpool(x)
        x = torch.relu(self.conv2(x))
        x = torch.flatten(x, 1)
        return x


def test_listing_1() -> None:
    input_data = torch.randn(10, 3, 224, 224)
    orig = ConvNet()
    with torch.inference_mode():
        torch_out = orig(input_data)
    model: ai3.Model = ai3.swap_backend(orig, {"conv2d": "direct"})
    sb_out = model(input_data)
    ai3.swap_conv2d(orig, ["direct", "smm"])
    with torch.inference_mode():
        sc_out = orig(input_data)
    assert model.algorithms("conv2d") == ["direct", "direct"]
    assert [m.algorithm for m in (orig.conv1, orig.conv2)] == ["direct", "smm"]
    assert torch.allclose(torch_out, sb_out, atol=1e-6)
    assert torch.allclose(torch_out, sc_out, atol=1e-6)


def test_listing_2() -> None:
    def selector(orig: torch.nn.Conv2d) -> str:
        in_channels = orig.weight.shape[1]
        if in_channels > 200:
            return "smm"
        return "direct"

    input_data = torch.randn(1, 3, 224, 224)
    vgg16 = torchvision.models.vgg16(weights=None)
    vgg16.eval()
    with torch.inference_mode():
        torch_out = vgg16(input_data)
    model: ai3.Model = ai3.swap_backend(vgg16, {"conv2d": selector})
    sb_out = model(input_data)
    assert torch.allclose(torch_out, sb_out, atol=1e-4)
    ai3.swap_conv2d(vgg16, selector)
    with torch.inference_mode():
        sc_out = vgg16(input_data)
    assert torch.allclose(torch_out, sc_out, atol=1e-4)
    assert model.algorithms("conv2d") == ["direct"] * 5 + ["smm"] * 8


class Residual(nn.Module):
    """A DAG: a residual add and a concatenation, functional calls, a batch
    norm to fold and one not to (its input is a concat)."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(8)
        self.branch_a = nn.Conv2d(8, 8, 3, padding=1)
        self.branch_b = nn.Conv2d(8, 4, 1)
        self.bn_cat = nn.BatchNorm2d(12)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(12, 5)
        for bn in (self.bn, self.bn_cat):
            bn.running_mean.uniform_(-1, 1)
            bn.running_var.uniform_(0.5, 2)
            bn.weight.data.uniform_(0.5, 1.5)
            bn.bias.data.uniform_(-1, 1)

    def forward(self, x):
        x = torch.relu(self.bn(self.stem(x)))
        x = x + self.branch_a(x)
        x = torch.cat([x, self.branch_b(x)], dim=1)
        x = nn.functional.relu(self.bn_cat(x))
        return self.fc(torch.flatten(self.pool(x), 1))


@pytest.mark.parametrize(
    "algorithm", ["default", "direct", "gemm", "smm", "winograd", "implicit gemm", "kn2row", "guess"]
)
def test_dag_model(algorithm) -> None:
    net = Residual().eval()
    x = torch.randn(2, 3, 12, 12)
    with torch.inference_mode():
        want = net(x)
    model = ai3.swap_backend(
        net,
        {
            "conv2d": algorithm
            if algorithm != "winograd"
            else lambda c: "winograd" if c.kernel_size == (3, 3) else "gemm"
        },
    )
    torch.testing.assert_close(model(x), want, atol=1e-4, rtol=1e-4)
    ops = [op for _, op, _ in model.layers()]
    assert ops.count("batchnorm2d") == 1, "the stem's batch norm folds into its conv; the concat's cannot"
    # NumPy in, NumPy out; another batch size.
    y = model(x[:1].numpy())
    assert isinstance(y, np.ndarray)
    np.testing.assert_allclose(y, want[:1].numpy(), atol=1e-4, rtol=1e-4)


def test_float64_model() -> None:
    net = Residual().eval().double()
    x = torch.randn(1, 3, 9, 9, dtype=torch.float64)
    model = ai3.swap_backend(net)
    torch.testing.assert_close(model(x), net(x), atol=1e-10, rtol=1e-10)


# ---- selectors ---------------------------------------------------------


def small_net() -> nn.Sequential:
    return nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1),
        nn.ReLU(),
        nn.Conv2d(8, 8, 3, stride=2),
        nn.ReLU(),
        nn.Conv2d(8, 4, 1),
        nn.Flatten(),
        nn.Linear(4 * 7 * 7, 3),
    ).eval()


def test_selector_with_input_shape_gets_each_layers_own_shape() -> None:
    seen = []

    def selector(conv, shape):
        seen.append(shape)
        return "gemm"

    net = small_net()
    ai3.swap_conv2d(net, selector, sample_input_shape=(1, 3, 16, 16))
    assert seen == [(1, 3, 16, 16), (1, 8, 16, 16), (1, 8, 7, 7)]
    seen.clear()
    model = ai3.swap_backend(small_net(), {"conv2d": selector}, sample_input_shape=(2, 3, 16, 16))
    assert seen == [(2, 3, 16, 16), (2, 8, 16, 16), (2, 8, 7, 7)]
    assert model.algorithms("conv2d") == ["gemm"] * 3


def test_torch_keeps_the_pytorch_layer() -> None:
    net = small_net()
    ai3.swap_conv2d(net, ["torch", "smm", "keep"])
    assert type(net[0]) is nn.Conv2d and type(net[4]) is nn.Conv2d and type(net[2]) is not nn.Conv2d


def test_every_swap_function() -> None:
    net = nn.Sequential(
        nn.Conv2d(3, 4, 3),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.AvgPool2d(2, ceil_mode=True),
        nn.AdaptiveAvgPool2d((2, 2)),
        nn.Flatten(),
        nn.Linear(16, 2),
    ).eval()
    x = torch.randn(2, 3, 17, 17)
    with torch.inference_mode():
        want = net(x)
    for swap in (
        ai3.swap_conv2d,
        ai3.swap_relu,
        ai3.swap_maxpool2d,
        ai3.swap_avgpool2d,
        ai3.swap_adaptiveavgpool2d,
        ai3.swap_flatten,
        ai3.swap_linear,
    ):
        swap(net)
    assert not any(type(m).__module__.startswith("torch.nn") for m in net.children())
    with torch.inference_mode():
        torch.testing.assert_close(net(x), want, atol=1e-5, rtol=1e-5)


def test_swap_operation_and_default_and_custom_names() -> None:
    net = small_net()
    ai3.swap_operation("conv2d", net, "default")
    with pytest.raises(ai3.AlgorithmNotApplicable, match="custom"):
        ai3.swap_conv2d(small_net(), "custom")  # the shipped placeholder refuses


def test_swap_module_that_is_itself_the_layer() -> None:
    conv = nn.Conv2d(3, 4, 3)
    swapped = ai3.swap_conv2d(conv, "gemm")
    x = torch.randn(1, 3, 8, 8)
    torch.testing.assert_close(swapped(x), conv(x), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize(
    "selector,error,message",
    [
        (["direct"], ai3.InvalidSelector, "lists 1 algorithms but the model has 3 conv2d layers"),
        (42, ai3.InvalidSelector, "must be a string, a sequence of strings or a callable"),
        (lambda conv: None, ai3.InvalidSelector, r"conv2d layer '0': the selector gave None"),
        (lambda conv: 3, ai3.InvalidSelector, "not an algorithm name"),
        (lambda conv: "fastest", ai3.UnknownAlgorithm, r"conv2d layer '0': 'fastest' is not a conv2d algorithm"),
        ("winograd", ai3.AlgorithmNotApplicable, r"'2'.*stride"),
        (lambda conv, shape: "gemm", ai3.InvalidSelector, "pass sample_input_shape"),
        (lambda conv: 1 / 0, ai3.InvalidSelector, "ZeroDivisionError"),
    ],
)
def test_bad_selectors(selector, error, message) -> None:
    with pytest.raises(error, match=message):
        ai3.swap_conv2d(small_net(), selector)
    with pytest.raises(error, match=message):
        ai3.swap_backend(small_net(), {"conv2d": selector})


def test_torch_name_in_swap_backend_is_refused() -> None:
    with pytest.raises(ai3.InvalidSelector, match="in-place swaps"):
        ai3.swap_backend(small_net(), {"conv2d": "torch"})


def test_unknown_op() -> None:
    with pytest.raises(ai3.UnsupportedOperation, match="unknown op 'conv4d'"):
        ai3.swap_operation("conv4d", small_net(), "direct")
    with pytest.raises(ai3.InvalidSelector, match="conv4d"):
        ai3.swap_backend(small_net(), {"conv4d": "direct"})


# ---- bad input -------------------------------------------------------------


def test_unsupported_operation_names_node_target_and_module() -> None:
    class Hardshrink(nn.Module):  # an activation the core does not have
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 3, 1)
            self.act = nn.Hardshrink()

        def forward(self, x):
            return torch.sigmoid(self.act(self.conv(x)))

    # A torch.nn module ai3 does not map whole is traced through: the
    # refusal names the function inside it, and the module it is in.
    with pytest.raises(
        ai3.UnsupportedOperation, match=r"fx node 'hardshrink' \(call_function hardshrink\) in module 'act'"
    ):
        ai3.swap_backend(Hardshrink().eval())


class _Decoder(nn.Module):
    def __init__(self, layer: nn.Module):
        super().__init__()
        self.layer = layer

    def forward(self, x):
        return self.layer(x, x * 0.5)


@pytest.mark.parametrize(
    "make, shapes",
    [
        # torch's defaults: sequence-first, post-norm, relu
        (
            lambda: nn.TransformerEncoder(nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0), 2),
            [(7, 3, 16), (9, 2, 16)],
        ),
        (
            lambda: nn.TransformerEncoder(
                nn.TransformerEncoderLayer(16, 4, 32, 0.0, "gelu", batch_first=True, norm_first=True),
                2,
                norm=nn.LayerNorm(16),
            ),
            [(3, 7, 16), (2, 9, 16)],
        ),
        (lambda: _Decoder(nn.TransformerDecoderLayer(16, 2, 32, dropout=0.0, batch_first=True)), [(3, 7, 16)]),
        (lambda: _Decoder(nn.Transformer(16, 2, 1, 1, 32, dropout=0.0, batch_first=True)), [(3, 7, 16), (2, 5, 16)]),
    ],
)
def test_torch_transformer_modules_match_torch(make, shapes) -> None:
    """nn.TransformerEncoder / DecoderLayer / Transformer: fx keeps torch.nn
    modules whole, but these are containers of mapped parts called with
    their masks as keywords, so the tracer goes through them."""
    torch.manual_seed(0)
    m = make().eval()
    model = ai3.swap_backend(m, sample_input_shape=shapes[0])
    for shape in shapes:
        x = torch.randn(*shape)
        with torch.no_grad():
            want = m(x)
        torch.testing.assert_close(model(x), want, atol=1e-5, rtol=1e-5)


def test_training_mode_is_refused() -> None:
    with pytest.raises(ai3.InvalidArgument, match="eval"):
        ai3.swap_backend(Residual())


@pytest.fixture
def swapped_pair():
    """(swap_backend model, in-place swapped net, the original net)."""
    net = small_net()
    original = copy.deepcopy(net)
    return ai3.swap_backend(copy.deepcopy(net)), ai3.swap_conv2d(net, "gemm"), original


def test_wrong_input_shape(swapped_pair) -> None:
    model, inplace, _ = swapped_pair
    with pytest.raises(ai3.ShapeError, match=r"conv2d layer '0'.*4 channels"):
        model(torch.randn(1, 4, 16, 16))
    with pytest.raises(ai3.ShapeError, match=r"'0'"):
        inplace(torch.randn(1, 4, 16, 16))
    with pytest.raises(ai3.ShapeError, match="linear"):
        model(torch.randn(1, 3, 20, 20))  # the convolutions take it, the linear layer not


def test_wrong_dtype(swapped_pair) -> None:
    model, inplace, _ = swapped_pair
    for f in (model, inplace):
        with pytest.raises(ai3.DTypeError):
            f(torch.randn(1, 3, 16, 16, dtype=torch.float64))
        with pytest.raises(ai3.DTypeError):
            f(torch.zeros(1, 3, 16, 16, dtype=torch.bfloat16))


def test_non_contiguous_and_channels_last_inputs_work(swapped_pair) -> None:
    model, inplace, net = swapped_pair
    x = torch.randn(1, 3, 16, 16)
    with torch.inference_mode():
        want = net(x)
        for f in (model, inplace):
            torch.testing.assert_close(f(x), want, atol=1e-5, rtol=1e-5)
            # channels_last memory and a permuted view: same values, other strides.
            torch.testing.assert_close(f(x.to(memory_format=torch.channels_last)), want, atol=1e-5, rtol=1e-5)
            view = x.permute(0, 2, 3, 1).contiguous().permute(0, 3, 1, 2)
            assert not view.is_contiguous()
            torch.testing.assert_close(f(view), want, atol=1e-5, rtol=1e-5)


if __name__ == "__main__":
    pytest_main.run(__file__)
