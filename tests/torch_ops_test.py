"""The one PyTorch custom op (ai3::layer, ai3.torch.ops) and the one module
(ai3.torch.Layer) the in-place swaps are built from.

- torch.library.opcheck of ai3::layer (schema, autograd registration, fake
  kernel, AOT dispatch with dynamic shapes) for the ops over their grids,
  float32 and float64, every conv2d algorithm that takes the case;
- Layer.from_module against the PyTorch module it replaces, over parameter
  sets, and an in-place swap of every single-layer op of the mapping;
- what a swapped module must keep doing as an nn.Module: state_dict keys,
  .to(float64), deepcopy, pickle, torch.compile (eager, aot_eager, inductor),
  torch.export, torch.jit.trace, weight updates, errors naming the module,
  autograd through the core's gradient ops (or, for an op the core has
  none for, an error naming the layer; tests/training_torch checks the
  gradients in depth).
"""

from __future__ import annotations

import copy
import os
import pickle
import threading

if os.environ.get("TEST_TMPDIR"):  # inductor writes its cache; keep it in the sandbox
    os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", os.path.join(os.environ["TEST_TMPDIR"], "inductor"))

import pytest
import pytest_main
import torch
import torch.nn.functional as F
import torch.nn.utils.prune
from tolerances import DTYPES
from tolerances import tolerance as tol
from torch import nn

import ai3
from ai3.torch import Layer, mapping, ops

torch.set_num_threads(2)


def assert_close(got, want, t: float, what: str = "") -> None:
    assert got.shape == want.shape, f"{what}: shape {tuple(got.shape)} != {tuple(want.shape)}"
    torch.testing.assert_close(got, want, atol=t, rtol=t, msg=lambda m: f"{what}: {m}")


def randn(*shape, dtype=torch.float32, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=dtype)


def present(op: str, weights: list) -> tuple[list, str]:
    """Weights in the declared order, None for an absent one -> ai3::layer's
    weights and weight_names."""
    pairs = [(w, n) for w, n in zip(weights, ops.weight_names(op)) if w is not None]
    return [w for w, _ in pairs], ",".join(n for _, n in pairs)


def args(inputs, weights, op, attrs, algorithm, name="layer") -> tuple:
    return (list(inputs), *present(op, weights), op, ops.canonical(attrs), algorithm, name)


def layer(inputs, weights, op, attrs, algorithm, name="layer"):
    """torch.ops.ai3.layer, with the attrs as a dict and weights by position."""
    return torch.ops.ai3.layer(*args(inputs, weights, op, attrs, algorithm, name))


def applicable(op: str, attrs: dict, weights: list, algorithm: str) -> bool:
    """Whether `algorithm` takes this layer (it must refuse with
    AlgorithmNotApplicable, never run wrongly)."""
    try:
        ops.prepare(op, ops.canonical(attrs), *present(op, weights), algorithm)
    except ai3.AlgorithmNotApplicable:
        return False
    return True


def opcheck(inputs, weights, op, attrs, algorithm):
    torch.library.opcheck(torch.ops.ai3.layer, args(inputs, weights, op, attrs, algorithm))


# --------------------------------------------------------------------------
# opcheck of ai3::layer, over each op's grid


CONV_OPCHECK_CASES = [
    # x shape, weight shape, bias, stride, padding (top, bottom, left, right), dilation, groups
    ((2, 3, 9, 9), (4, 3, 3, 3), True, [1, 1], [1, 1, 1, 1], [1, 1], 1),
    ((1, 4, 10, 7), (6, 2, 3, 3), False, [2, 1], [1, 1, 0, 0], [1, 2], 2),
    ((1, 2, 6, 6), (3, 2, 2, 2), True, [1, 1], [0, 1, 0, 1], [1, 1], 1),  # asymmetric ("same" for an even kernel)
]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("case", range(len(CONV_OPCHECK_CASES)))
@pytest.mark.parametrize("algorithm", ai3.algorithms()["conv2d"] + ["default"])
def test_opcheck_conv2d(algorithm, case, dtype):
    xs, ws, has_bias, stride, pads, dilation, groups = CONV_OPCHECK_CASES[case]
    x, w = randn(*xs, dtype=dtype), randn(*ws, dtype=dtype, seed=1)
    b = randn(ws[0], dtype=dtype, seed=2) if has_bias else None
    attrs = {"stride": stride, "padding": pads, "dilation": dilation, "groups": groups}
    if not applicable("conv2d", attrs, [w, b], algorithm):
        pytest.skip(f"{algorithm} does not take this case")
    opcheck([x], [w, b], "conv2d", attrs, algorithm)
    want = F.conv2d(
        F.pad(x, (pads[2], pads[3], pads[0], pads[1])), w, b, stride=stride, dilation=dilation, groups=groups
    )
    assert_close(layer([x], [w, b], "conv2d", attrs, algorithm), want, tol(dtype, algorithm), algorithm)


def weightless_cases(dtype):
    x = randn(2, 3, 9, 11, dtype=dtype)

    def pool(kernel, stride, padding, **more):
        return {"kernel": kernel, "stride": stride, "padding": padding, **more}

    return [
        ("relu", randn(3, 5, dtype=dtype), {}, "direct", lambda: F.relu(randn(3, 5, dtype=dtype))),
        ("relu", randn((), dtype=dtype), {}, "default", lambda: F.relu(randn((), dtype=dtype))),
        (
            "maxpool2d",
            x,
            pool([3, 3], [2, 2], [1, 1, 1, 1], dilation=[1, 1], ceil_mode=True),
            "direct",
            lambda: F.max_pool2d(x, 3, 2, 1, 1, True),
        ),
        ("maxpool2d", x, pool([2, 3], [1, 2], [0, 1, 0, 1], dilation=[2, 1], ceil_mode=False), "default", None),
        (
            "avgpool2d",
            x,
            pool([3, 3], [2, 2], [1, 1, 1, 1], ceil_mode=True, count_include_pad=False, divisor_override=None),
            "direct",
            lambda: F.avg_pool2d(x, 3, 2, 1, True, False),
        ),
        (
            "avgpool2d",
            x,
            pool([2, 2], [2, 2], [0, 0, 0, 0], ceil_mode=False, count_include_pad=True, divisor_override=3),
            "direct",
            lambda: F.avg_pool2d(x, 2, 2, 0, False, True, 3),
        ),
        ("adaptiveavgpool2d", x, {"output_size": [2, 3]}, "direct", lambda: F.adaptive_avg_pool2d(x, (2, 3))),
        ("adaptiveavgpool2d", x, {"output_size": [1, 1]}, "default", lambda: F.adaptive_avg_pool2d(x, 1)),
        ("flatten", x, {"start_dim": 1, "end_dim": -1}, "direct", lambda: torch.flatten(x, 1)),
        ("flatten", x, {"start_dim": 0, "end_dim": 2}, "default", lambda: torch.flatten(x, 0, 2)),
        (
            "flatten",
            randn((), dtype=dtype),
            {"start_dim": 0, "end_dim": -1},
            "direct",
            lambda: torch.flatten(randn((), dtype=dtype)),
        ),
        ("softmax", x, {"axis": 1}, "default", lambda: F.softmax(x, 1)),
        ("clamp", x, {"min": -0.5, "max": None}, "direct", lambda: x.clamp(min=-0.5)),
    ]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("index", range(13))
def test_opcheck_weightless(index, dtype):
    op, x, attrs, algorithm, want = weightless_cases(dtype)[index]
    opcheck([x], [], op, attrs, algorithm)
    if want is not None:
        assert_close(layer([x], [], op, attrs, algorithm), want(), tol(dtype), op)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("algorithm", ai3.algorithms()["linear"])
@pytest.mark.parametrize("shape,bias", [((5, 7), True), ((2, 3, 7), False), ((7,), True)])
def test_opcheck_linear(shape, bias, algorithm, dtype):
    x, w = randn(*shape, dtype=dtype), randn(4, 7, dtype=dtype, seed=1)
    b = randn(4, dtype=dtype, seed=2) if bias else None
    if not applicable("linear", {}, [w, b], algorithm):
        pytest.skip(f"{algorithm} does not take this case")
    opcheck([x], [w, b], "linear", {}, algorithm)
    assert_close(layer([x], [w, b], "linear", {}, algorithm), F.linear(x, w, b), tol(dtype), algorithm)


def test_opcheck_multi_input_and_weight_orders():
    """Several inputs (attention's q, k, v, mask) and a four-weight op in its
    declared order (batchnorm2d: weight, bias, running_mean, running_var)."""
    q, k, v = randn(2, 3, 5, 4), randn(2, 3, 6, 4, seed=1), randn(2, 3, 6, 4, seed=2)
    mask = randn(5, 6, seed=3)
    attrs = {"causal": False, "scale": None, "has_mask": True}
    opcheck([q, k, v, mask], [], "attention", attrs, "naive")
    assert_close(
        layer([q, k, v, mask], [], "attention", attrs, "naive"), F.scaled_dot_product_attention(q, k, v, mask), 1e-5
    )
    x = randn(2, 3, 5, 5)
    bn = nn.BatchNorm2d(3).eval()
    with torch.no_grad():
        bn.running_mean.uniform_(-1, 1)
        bn.running_var.uniform_(0.5, 2)
    weights = [t.detach() for t in (bn.weight, bn.bias, bn.running_mean, bn.running_var)]
    opcheck([x], weights, "batchnorm2d", {"eps": bn.eps}, "default")
    with torch.no_grad():
        assert_close(layer([x], weights, "batchnorm2d", {"eps": bn.eps}, "default"), bn(x), 1e-5)


def test_op_result_never_aliases_its_input():
    x = randn(2, 3, 4, 4)
    y = layer([x], [], "flatten", {"start_dim": 0, "end_dim": -1}, "direct")
    assert y.untyped_storage().data_ptr() != x.untyped_storage().data_ptr()
    y.zero_()
    assert x.abs().sum() > 0


def test_op_errors():
    x, w = randn(1, 3, 8, 8), randn(4, 3, 3, 3)
    conv = {"padding": [0, 0, 0, 0]}
    with pytest.raises(ai3.DTypeError, match="^relu layer 'r': input has dtype torch.int32"):
        layer([x.int()], [], "relu", {}, "direct", "r")
    with pytest.raises(ai3.DTypeError, match="bfloat16"):
        layer([x.bfloat16()], [], "relu", {}, "direct")
    with pytest.raises(ai3.DTypeError, match="float64 but weight is torch.float32"):
        layer([x.double()], [w, None], "conv2d", conv, "direct")
    with pytest.raises(ai3.ShapeError, match="^conv2d layer 'c'.*has 2 channels"):
        layer([x[:, :2]], [w, None], "conv2d", conv, "direct", "c")
    with pytest.raises(ai3.InvalidArgument, match="^conv2d layer 'c': padding must be a list of 4 ints"):
        layer([x], [w, None], "conv2d", {"padding": [0, 0, 0]}, "direct", "c")
    with pytest.raises(
        ai3.InvalidArgument, match=r"^conv2d layer 'c': weight names \['bias', 'weight'\] are not among"
    ):
        torch.ops.ai3.layer([x], [w[0, :, 0, 0], w], "bias,weight", "conv2d", "{}", "direct", "c")
    with pytest.raises(ai3.InvalidArgument, match="2 weights but 1 weight names"):
        torch.ops.ai3.layer([x], [w, w], "weight", "conv2d", "{}", "direct", "c")
    with pytest.raises(ai3.InvalidArgument, match="attrs must be a JSON object"):
        torch.ops.ai3.layer([x], [], "", "relu", "[1]", "direct", "r")
    with pytest.raises(ai3.UnsupportedOperation, match="no op 'nosuchop'"):
        layer([x], [], "nosuchop", {}, "direct")
    with pytest.raises(ai3.UnknownAlgorithm):
        layer([x], [], "relu", {}, "no such algorithm")
    with pytest.raises(ai3.AlgorithmNotApplicable, match=r"^conv2d layer 'c': .*winograd"):
        layer([x], [w, None], "conv2d", {"stride": [2, 2]}, "winograd", "c")
    # The fake kernel asks the core's shape rule, so tracing fails early, with the same error.
    with torch._subclasses.fake_tensor.FakeTensorMode():
        with pytest.raises(ai3.ShapeError, match="^conv2d layer 'c'.*has 2 channels"):
            layer([torch.empty(1, 2, 8, 8)], [torch.empty(4, 3, 3, 3), None], "conv2d", conv, "direct", "c")
        with pytest.raises(ai3.InvalidArgument, match="padding must be a list of 4 ints"):
            layer(
                [torch.empty(1, 3, 8, 8)],
                [torch.empty(4, 3, 3, 3), None],
                "conv2d",
                {"padding": [0, 0, 0]},
                "direct",
                "c",
            )


def test_op_on_cuda_is_refused_as_cpu_only():
    if torch.cuda.is_available():
        with pytest.raises(ai3.UnsupportedOperation, match="CPU only"):
            layer([torch.randn(3, device="cuda")], [], "relu", {}, "direct")
        with pytest.raises(ai3.UnsupportedOperation, match="^conv2d layer 'c': input is on cuda"):
            Layer.from_module(nn.Conv2d(1, 1, 1).cuda(), "direct", "c")(torch.randn(1, 1, 2, 2, device="cuda"))
    else:  # no GPU here: the device check that the real and fake kernels share
        with pytest.raises(ai3.UnsupportedOperation, match="input is on cuda:0; this ai3 build runs on the CPU only"):
            ops._check_tensor("relu layer 'r'", _FakeCuda(), "input")


class _FakeCuda:
    """Just enough of a CUDA tensor for the device check."""

    device = torch.device("cuda", 0)
    dtype = torch.float32


def has_gradients(*ops_: str) -> bool:
    """Whether the core has every gradient op of these ops' input and
    weights (conv2d: conv2d_backward_data, _weight, _bias)."""
    return all(
        {"data", *ops.weight_names(o)} - {"running_mean", "running_var"} <= set(ai3.layers.backward_ops(o))
        for o in ops_
    )


def backward_matches_torch_or_raises(ops_: tuple, run, want, what: str, t: float = 1e-4) -> None:
    """run() / want(): the (gradient) tensors of the ai3 and the torch
    computation. Where the core has the ops' gradients they must agree;
    where it does not, the backward raises naming the layer."""
    if has_gradients(*ops_):
        for k, (g, w) in enumerate(zip(run(), want())):
            assert_close(g, w, t, f"{what}: gradient {k}")
    else:
        with pytest.raises(ai3.UnsupportedOperation, match="layer '.*': no gradient w.r.t."):
            run()


def test_backward_runs_the_gradient_ops():
    x = randn(1, 3, 6, 6).requires_grad_()
    w = randn(2, 3, 3, 3).requires_grad_()
    y = layer([x], [w, None], "conv2d", {"padding": [1, 1, 1, 1]}, "direct")  # forward runs
    assert_close(y, F.conv2d(x, w, padding=1), 1e-4)
    xr, wr = x.detach().clone().requires_grad_(), w.detach().clone().requires_grad_()

    def run():
        y.sum().backward()
        return x.grad, w.grad

    def want():
        F.conv2d(xr, wr, padding=1).sum().backward()
        return xr.grad, wr.grad

    backward_matches_torch_or_raises(("conv2d",), run, want, "conv2d")


# --------------------------------------------------------------------------
# The modules against PyTorch's

CONV_MODULES = [
    dict(in_channels=3, out_channels=8, kernel_size=3, padding=1),
    dict(in_channels=3, out_channels=4, kernel_size=3, stride=2, padding=1, bias=False),
    dict(in_channels=4, out_channels=6, kernel_size=(3, 5), stride=(1, 2), padding=(1, 2), dilation=(2, 1), groups=2),
    dict(in_channels=3, out_channels=5, kernel_size=4, padding="same"),
    dict(in_channels=3, out_channels=5, kernel_size=3, padding="valid", dilation=2),
    dict(in_channels=4, out_channels=4, kernel_size=3, padding=1, groups=4),
]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("kwargs", CONV_MODULES, ids=str)
@pytest.mark.parametrize("algorithm", ["default", "direct", "smm", "gemm", "winograd"])
def test_conv2d_module(algorithm, kwargs, dtype):
    torch.manual_seed(0)
    ref = nn.Conv2d(**kwargs).to(dtype).eval()
    x = randn(2, kwargs["in_channels"], 11, 10, dtype=dtype)
    try:
        m = Layer.from_module(ref, algorithm, "features.0")
    except ai3.AlgorithmNotApplicable as e:
        assert str(e).startswith("conv2d layer 'features.0': "), str(e)
        return
    assert m.weight is ref.weight and m.bias is ref.bias
    with torch.no_grad():
        assert_close(m(x), ref(x), tol(dtype, m.resolved_algorithm()), f"{algorithm} {kwargs}")
        assert_close(m(x[0]), ref(x[0]), tol(dtype, m.resolved_algorithm()), "unbatched")
    assert m.in_channels == ref.in_channels and m.out_channels == ref.out_channels
    assert m.kernel_size == ref.kernel_size and m.stride == ref.stride and m.padding == ref.padding
    assert f"algorithm='{algorithm}'" in repr(m)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("algorithm", ["default"] + ai3.algorithms()["linear"])
@pytest.mark.parametrize("shape,bias", [((4, 10), True), ((2, 3, 10), False), ((10,), True)])
def test_linear_module(shape, bias, algorithm, dtype):
    torch.manual_seed(0)
    ref = nn.Linear(10, 6, bias=bias).to(dtype)
    try:
        m = Layer.from_module(ref, algorithm, "fc")
    except ai3.AlgorithmNotApplicable:
        return
    x = randn(*shape, dtype=dtype)
    with torch.no_grad():
        assert_close(m(x), ref(x), tol(dtype), algorithm)
    assert (m.in_features, m.out_features) == (10, 6)


WEIGHTLESS_MODULES = [
    nn.ReLU(),
    nn.ReLU(inplace=True),
    nn.MaxPool2d(2),
    nn.MaxPool2d(3, stride=2, padding=1, ceil_mode=True),
    nn.MaxPool2d((2, 3), stride=(1, 2), padding=(1, 0), dilation=(2, 1)),
    nn.AvgPool2d(2),
    nn.AvgPool2d(3, stride=2, padding=1, ceil_mode=True, count_include_pad=False),
    nn.AvgPool2d((3, 2), stride=1, divisor_override=4),
    nn.AdaptiveAvgPool2d(1),
    nn.AdaptiveAvgPool2d((3, 4)),
    nn.AdaptiveAvgPool2d((None, 2)),
    nn.AdaptiveAvgPool2d((5, None)),
    nn.Flatten(),
    nn.Flatten(0, 2),
    nn.Flatten(-2, -1),
]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("index", range(len(WEIGHTLESS_MODULES)))
def test_weightless_module(index, dtype):
    ref = copy.deepcopy(WEIGHTLESS_MODULES[index])
    op = {
        nn.ReLU: "relu",
        nn.MaxPool2d: "maxpool2d",
        nn.AvgPool2d: "avgpool2d",
        nn.AdaptiveAvgPool2d: "adaptiveavgpool2d",
        nn.Flatten: "flatten",
    }[type(ref)]
    m = Layer.from_module(ref, "direct", "layer")
    assert m.op == op and m.resolved_algorithm() == "direct"
    for shape in [(2, 3, 9, 11), (1, 2, 7, 7)]:
        x = randn(*shape, dtype=dtype)
        assert_close(m(x), ref(x.clone()), tol(dtype), repr(ref))
        if op != "flatten":
            assert_close(m(x[0]), ref(x[0].clone()), tol(dtype), f"unbatched {ref!r}")
    assert "algorithm='direct'" in repr(m)


# Every single-layer op of the mapping (ai3.torch.mapping), swapped in place
# by swap_operation: (module, input shape). A new mapping entry needs a row.
SWAP_CASES = {
    "conv2d": [
        (nn.Conv2d(3, 4, 3, padding=1), (2, 3, 8, 8)),
        (nn.Conv2d(3, 6, 2, padding="same", groups=3), (1, 3, 7, 6)),
    ],
    "linear": [(nn.Linear(8, 5), (2, 3, 8)), (nn.Linear(8, 5, bias=False), (8,))],
    "relu": [(nn.ReLU(), (2, 3, 4, 4))],
    "sigmoid": [(nn.Sigmoid(), (2, 7))],
    "silu": [(nn.SiLU(), (2, 7))],
    "tanh": [(nn.Tanh(), (2, 7))],
    "hardswish": [(nn.Hardswish(), (2, 3, 5))],
    "hardsigmoid": [(nn.Hardsigmoid(), (2, 3, 5))],
    "leaky_relu": [(nn.LeakyReLU(), (2, 3, 5)), (nn.LeakyReLU(0.3), (2, 7))],
    "gelu": [(nn.GELU(), (2, 7)), (nn.GELU("tanh"), (2, 7))],
    "clamp": [(nn.ReLU6(), (2, 7)), (nn.Hardtanh(-0.5, 0.25), (2, 7))],
    "softmax": [(nn.Softmax(1), (2, 3, 4, 4)), (nn.Softmax(-1), (3, 7))],
    "log_softmax": [(nn.LogSoftmax(-1), (3, 7))],
    "maxpool2d": [(nn.MaxPool2d(2), (2, 3, 8, 8)), (nn.MaxPool2d(3, 2, 1, ceil_mode=True), (1, 2, 7, 9))],
    "avgpool2d": [(nn.AvgPool2d(3, 2, 1, count_include_pad=False), (2, 3, 8, 8))],
    "adaptiveavgpool2d": [(nn.AdaptiveAvgPool2d((3, None)), (2, 3, 8, 7)), (nn.AdaptiveAvgPool2d(1), (2, 3, 5, 5))],
    "adaptivemaxpool2d": [(nn.AdaptiveMaxPool2d(2), (2, 3, 8, 7)), (nn.AdaptiveMaxPool2d((None, 3)), (1, 2, 5, 6))],
    "flatten": [(nn.Flatten(), (2, 3, 4, 4)), (nn.Flatten(0, 1), (2, 3, 4))],
    "layernorm": [(nn.LayerNorm(8), (2, 3, 8)), (nn.LayerNorm((3, 8), elementwise_affine=False), (2, 3, 8))],
    "pad2d": [
        (nn.ZeroPad2d((1, 2, 0, 1)), (2, 3, 4, 4)),
        (nn.ConstantPad2d(1, 0.5), (1, 2, 3, 3)),
        (nn.ReflectionPad2d((1, 2, 2, 0)), (2, 3, 4, 4)),
        (nn.ReplicationPad2d(2), (1, 2, 3, 3)),
        (nn.CircularPad2d(1), (1, 2, 3, 3)),
    ],
    "batchnorm2d": [
        (nn.BatchNorm2d(3), (2, 3, 4, 4)),
        (nn.BatchNorm2d(3, affine=False), (2, 3, 4, 4)),
        (nn.BatchNorm1d(3), (2, 3)),
        (nn.BatchNorm1d(3), (2, 3, 5)),
        (nn.BatchNorm3d(3), (2, 3, 2, 4, 4)),
    ],
    # issue 17 (helper N2)
    "conv_transpose2d": [
        (nn.ConvTranspose2d(3, 4, 3, stride=2, padding=1, output_padding=1), (2, 3, 5, 4)),
        (nn.ConvTranspose2d(4, 2, 2, stride=2, groups=2, bias=False), (1, 4, 3, 3)),
    ],
    "resize": [
        (nn.Upsample(scale_factor=2), (2, 3, 4, 5)),
        (nn.Upsample(size=(7, 5), mode="bilinear"), (1, 2, 4, 4)),
        (nn.UpsamplingBilinear2d(scale_factor=2), (1, 2, 3, 3)),
    ],
    "groupnorm": [
        (nn.GroupNorm(2, 4), (2, 4, 3, 3)),
        (nn.InstanceNorm2d(3, affine=True), (2, 3, 4, 4)),
        (nn.InstanceNorm1d(3), (2, 3, 5)),
    ],
    "rmsnorm": [
        (nn.RMSNorm(8, eps=1e-6), (2, 3, 8)),
        (nn.RMSNorm((3, 8), eps=1e-5, elementwise_affine=False), (2, 3, 8)),
    ],
    "lrn": [(nn.LocalResponseNorm(3), (2, 5, 3, 3)), (nn.LocalResponseNorm(4, alpha=0.1, k=2.0), (2, 6, 3))],
    "depth_to_space": [(nn.PixelShuffle(2), (2, 8, 3, 3))],
    "space_to_depth": [(nn.PixelUnshuffle(2), (2, 2, 4, 6))],
    # issue 17
    "elu": [(nn.ELU(), (2, 7)), (nn.ELU(0.4), (2, 3, 5))],
    "celu": [(nn.CELU(1.5), (2, 7))],
    "selu": [(nn.SELU(), (2, 7))],
    "softplus": [(nn.Softplus(), (2, 7)), (nn.Softplus(2.0, 1.0), (2, 3, 5))],
    "softsign": [(nn.Softsign(), (2, 7))],
    "mish": [(nn.Mish(), (2, 7))],
    "prelu": [(nn.PReLU(), (2, 7)), (nn.PReLU(3), (2, 3, 4, 4)), (nn.PReLU(3), (2, 3))],
    # video and volumetric models
    "conv3d": [
        (nn.Conv3d(3, 4, 3, padding=1), (2, 3, 4, 5, 5)),
        (nn.Conv3d(4, 4, (1, 3, 3), stride=(1, 2, 2), groups=2, bias=False), (1, 4, 3, 6, 6)),
    ],
    "maxpool3d": [(nn.MaxPool3d(2), (2, 3, 4, 4, 4)), (nn.MaxPool3d((1, 3, 3), (1, 2, 2), (0, 1, 1)), (1, 2, 3, 7, 7))],
    "avgpool3d": [(nn.AvgPool3d(2, ceil_mode=True), (2, 3, 5, 4, 5)), (nn.AvgPool3d(3, 1, 1, False), (1, 2, 3, 4, 4))],
    "mean": [(nn.AdaptiveAvgPool3d(1), (2, 3, 4, 5, 5))],
}


def test_every_single_layer_op_of_the_mapping_has_a_swap_case():
    assert sorted(SWAP_CASES) == mapping.swappable_ops()


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("op,index", [(op, i) for op, cases in SWAP_CASES.items() for i in range(len(cases))])
def test_swap_operation_of_every_op_matches_torch(op, index, dtype):
    module, shape = SWAP_CASES[op][index]
    torch.manual_seed(index)
    ref = nn.Sequential(copy.deepcopy(module)).to(dtype).eval()
    with torch.no_grad():  # statistics and affine parameters that are not the identity
        for t in (*ref.parameters(), *ref.buffers()):
            if t.is_floating_point():
                t.copy_(torch.rand_like(t) + 0.5)
    net = ai3.swap_operation(op, copy.deepcopy(ref), "default")
    assert type(net[0]) is Layer and net[0].op == op and ai3.torch.chosen_algorithms(net)[0][1] == op
    assert list(net.state_dict()) == list(ref.state_dict())
    x = randn(*shape, dtype=dtype) * 2
    with torch.no_grad():
        assert_close(net(x), ref(x), tol(dtype), f"{op} {module}")


# --------------------------------------------------------------------------
# Behaving as an nn.Module


def small_net(dtype=torch.float32) -> nn.Sequential:
    torch.manual_seed(0)
    return (
        nn.Sequential(
            nn.Conv2d(3, 8, 3, padding=1),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(2),
            nn.Conv2d(8, 8, 3, padding="same", bias=False),
            nn.AvgPool2d(2, ceil_mode=True),
            nn.AdaptiveAvgPool2d((2, 2)),
            nn.Flatten(),
            nn.Linear(32, 5),
        )
        .to(dtype)
        .eval()
    )


def swapped(net: nn.Sequential, algorithms: dict | None = None) -> nn.Sequential:
    """The net with every layer replaced (a copy; `net` is left alone)."""
    net = copy.deepcopy(net)
    for i, m in enumerate(list(net)):
        op = mapping.lookup(m).op
        net[i] = Layer.from_module(m, (algorithms or {}).get(op, "default"), str(i))
    return net


def test_state_dict_keys_and_values_are_the_original_ones():
    ref = small_net()
    new = swapped(ref)
    assert list(new.state_dict().keys()) == list(ref.state_dict().keys())
    for k, v in ref.state_dict().items():
        assert torch.equal(new.state_dict()[k], v), k
    # A torch model loads an ai3 model's state_dict and vice versa.
    again = small_net()
    again.load_state_dict(new.state_dict())
    new.load_state_dict(ref.state_dict())


def test_from_module_shares_the_parameters():
    conv = nn.Conv2d(3, 4, 3)
    m = Layer.from_module(conv, "direct", "c")
    assert m.weight is conv.weight and m.bias is conv.bias
    assert [p for p in m.parameters()] == [conv.weight, conv.bias]


@pytest.mark.parametrize("algorithm", ["direct", "smm", "winograd"])
def test_load_state_dict_updates_are_picked_up(algorithm):
    ref = small_net()
    new = swapped(ref, {"conv2d": algorithm})
    x = randn(2, 3, 16, 16)
    with torch.no_grad():
        assert_close(new(x), ref(x), tol(torch.float32, algorithm))
        other = small_net()
        for p in other.parameters():
            p.mul_(-1.5).add_(0.25)
        ref.load_state_dict(other.state_dict())
        new.load_state_dict(other.state_dict())
        assert_close(new(x), ref(x), tol(torch.float32, algorithm), "after load_state_dict")
        # An in-place update (an optimizer step) and a replaced .data too.
        ref[0].weight.add_(1.0)
        new[0].weight.add_(1.0)
        assert_close(new(x), ref(x), tol(torch.float32, algorithm), "after add_")
        ref[7].weight.data = randn(5, 32, seed=7)
        new[7].weight.data = randn(5, 32, seed=7)
        assert_close(new(x), ref(x), tol(torch.float32, algorithm), "after .data =")


def test_cache_keeps_one_layer_per_weight_state():
    conv = nn.Conv2d(3, 4, 3)
    m = Layer.from_module(conv, "smm", "c")
    x = randn(1, 3, 8, 8)
    ops.clear_cache()
    with torch.no_grad():
        for _ in range(5):
            conv.weight.add_(0.1)
            assert_close(m(x), F.conv2d(x, conv.weight, conv.bias), 1e-4)
            m(x)
    assert ops.cached_layer_count() == 1  # stale layers were dropped; repeated calls hit


def test_weightless_layers_are_cached_by_their_parameters_and_bounded(monkeypatch):
    ops.clear_cache()
    x = randn(1, 2, 9, 9)
    with torch.no_grad():
        a, b = Layer.from_module(nn.MaxPool2d(2), "direct", "p"), Layer.from_module(nn.MaxPool2d(2), "direct", "p")
        a(x), b(x), a(x)
        assert ops.cached_layer_count() == 1  # the same op, attrs, algorithm and name: one layer
        Layer.from_module(nn.MaxPool2d(3), "direct", "p")(x)
        assert ops.cached_layer_count() == 2
        # A size resolved per input (output_size None) makes a layer per size, at most so many.
        monkeypatch.setattr(ops, "WEIGHTLESS_CACHE_SIZE", 4)
        pool = Layer.from_module(nn.AdaptiveAvgPool2d((None, 1)), "direct", "a")
        for h in range(1, 9):
            assert_close(pool(randn(1, 2, h, 5)), F.adaptive_avg_pool2d(randn(1, 2, h, 5), (h, 1)), 1e-5)
        assert ops.cached_layer_count() == 4


@pytest.mark.parametrize("make", [lambda: small_net(), lambda: small_net(torch.float64)], ids=["f32", "f64"])
def test_to_float64(make):
    ref = make()
    new = swapped(ref).to(torch.float64)
    ref = ref.to(torch.float64)
    x = randn(2, 3, 16, 16, dtype=torch.float64)
    with torch.no_grad():
        assert_close(new(x), ref(x), 1e-10)
        new.to(torch.float32)
        ref.to(torch.float32)
        assert_close(new(x.float()), ref(x.float()), 1e-4, "back to float32")


def test_deepcopy_and_pickle_round_trip():
    ref = small_net()
    new = swapped(ref, {"conv2d": "smm", "linear": "gemm"})
    x = randn(2, 3, 16, 16)
    with torch.no_grad():
        want = ref(x)
        for copied in (copy.deepcopy(new), pickle.loads(pickle.dumps(new))):
            assert (
                type(copied[0]) is Layer
                and copied[0].op == "conv2d"
                and copied[0].algorithm == "smm"
                and copied[0].name == "0"
            )
            assert copied[0].weight is not new[0].weight
            assert_close(copied(x), want, 1e-4)
            copied[0].weight.zero_()  # the copy owns its weights
        assert_close(new(x), want, 1e-4, "original after changing the copies")


def test_module_errors_name_the_module():
    new = swapped(small_net())
    with pytest.raises(ai3.ShapeError, match=r"^conv2d layer '0'.*: input \(1, 4, 16, 16\) \(NCHW\) has 4 channels"):
        new(randn(1, 4, 16, 16))
    with pytest.raises(ai3.DTypeError, match=r"^conv2d layer '0': input is torch.float64 but weight is torch.float32"):
        new(randn(1, 3, 16, 16, dtype=torch.float64))
    with pytest.raises(ai3.DTypeError, match=r"^conv2d layer '0': input has dtype torch.int64"):
        new(torch.ones(1, 3, 16, 16, dtype=torch.int64))
    with pytest.raises(
        ai3.ShapeError, match=r"^linear layer '7'.*: expected an input .*whose last dimension is in_features=32"
    ):
        new[7](randn(2, 31))
    with pytest.raises(ai3.InvalidArgument, match="^maxpool2d layer '2': input must be a torch.Tensor"):
        new[2]([1.0])
    with pytest.raises(
        ai3.AlgorithmNotApplicable,
        match="^conv2d layer 'features.3': conv2d algorithm 'winograd' cannot take this layer: .*stride 1",
    ):
        Layer.from_module(nn.Conv2d(3, 3, 3, stride=2), "winograd", "features.3")
    with pytest.raises(ai3.UnknownAlgorithm, match="^relu layer 'act': unknown relu algorithm 'fast'"):
        Layer.from_module(nn.ReLU(), "fast", "act")
    with pytest.raises(ai3.UnsupportedOperation, match="'b.conv'.*padding_mode='reflect'"):
        Layer.from_module(nn.Conv2d(3, 3, 3, padding=1, padding_mode="reflect"), "direct", "b.conv")
    with pytest.raises(ai3.UnsupportedOperation, match="^maxpool2d layer 'p': return_indices=True"):
        Layer.from_module(nn.MaxPool2d(2, return_indices=True), "direct", "p")
    with pytest.raises(
        ai3.UnsupportedOperation, match="^layer 'l': ai3 has no in-place swap for torch.nn.modules.linear.Bilinear"
    ):
        Layer.from_module(nn.Bilinear(2, 2, 2), "direct", "l")
    with pytest.raises(ai3.UnsupportedOperation, match="^layer 'd': ai3 has no in-place swap for .*Dropout"):
        Layer.from_module(nn.Dropout(), "direct", "d")

    class Doubled(nn.Conv2d):
        def forward(self, x):
            return 2 * super().forward(x)

    with pytest.raises(ai3.UnsupportedOperation, match="^conv2d layer 'd': Doubled overrides nn.Conv2d.forward"):
        Layer.from_module(Doubled(1, 1, 1), "direct", "d")
    with pytest.raises(ai3.UnsupportedOperation, match="^conv2d layer 'lazy': weight is not initialized"):
        Layer.from_module(nn.LazyConv2d(3, 3), "direct", "lazy")
    normed = nn.utils.parametrizations.weight_norm(nn.Conv2d(3, 3, 3))
    with pytest.raises(ai3.UnsupportedOperation, match="^conv2d layer 'wn': the module's parameters are parametrized"):
        Layer.from_module(normed, "direct", "wn")
    pruned = torch.nn.utils.prune.random_unstructured(nn.Linear(4, 4), "weight", amount=0.5)
    with pytest.raises(ai3.UnsupportedOperation, match="^linear layer 'pr': weight is a Tensor, not a Parameter"):
        Layer.from_module(pruned, "direct", "pr")


SMALL_NET_OPS = ("conv2d", "relu", "maxpool2d", "avgpool2d", "adaptiveavgpool2d", "flatten", "linear")


def test_grad_mode_forward_and_backward():
    ref = small_net()
    new = swapped(ref)
    x = randn(2, 3, 16, 16).requires_grad_()
    assert torch.is_grad_enabled() and new[0].weight.requires_grad
    y = new(x)
    assert_close(y.detach(), ref(x).detach(), 1e-4)

    def grads(net):
        def run():
            x.grad = None
            net.zero_grad()
            net(x).sum().backward()
            return [x.grad, *(p.grad for p in net.parameters())]

        return run

    backward_matches_torch_or_raises(SMALL_NET_OPS, grads(new), grads(ref), "small net")
    with torch.inference_mode():
        assert_close(new(x), ref(x), 1e-4, "inference_mode")


def test_concurrent_forward_from_threads():
    ref = small_net()
    new = swapped(ref, {"conv2d": "smm"})
    x = randn(2, 3, 16, 16)
    with torch.no_grad():
        want = ref(x)
    failures = []

    def work():
        try:
            with torch.no_grad():
                for _ in range(20):
                    assert_close(new(x), want, 1e-4)
        except Exception as e:  # noqa: BLE001 - reported below
            failures.append(e)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures, failures


# --------------------------------------------------------------------------
# Compilers and tracers


@pytest.mark.parametrize("grad", [False, True], ids=["no_grad", "grad"])
@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_torch_compile(backend, grad):
    torch._dynamo.reset()
    ref = small_net()
    new = swapped(ref, {"conv2d": "smm"})
    compiled = torch.compile(new, backend=backend)
    x = randn(2, 3, 16, 16)
    with torch.set_grad_enabled(grad):
        assert_close(compiled(x).detach(), ref(x).detach(), 1e-4, backend)
        assert_close(compiled(x).detach(), ref(x).detach(), 1e-4, f"{backend}, second call")
        with torch.no_grad():  # the compiled model sees new weights too
            for p in ref.parameters():
                p.mul_(0.5)
        new.load_state_dict(ref.state_dict())
        assert_close(compiled(x).detach(), ref(x).detach(), 1e-4, f"{backend}, after load_state_dict")
        if grad:
            xg = x.clone().requires_grad_()

            def grads(net):
                def run():
                    xg.grad = None
                    net(xg).sum().backward()
                    return [xg.grad]

                return run

            backward_matches_torch_or_raises(SMALL_NET_OPS, grads(compiled), grads(ref), backend)
    torch._dynamo.reset()


def test_torch_compile_dynamic_shapes_and_errors():
    torch._dynamo.reset()
    ref = small_net()
    new = swapped(ref)
    compiled = torch.compile(new, backend="aot_eager", dynamic=True)
    with torch.no_grad():
        for n, size in [(1, 16), (3, 16), (2, 20)]:
            x = randn(n, 3, size, size)
            assert_close(compiled(x), ref(x), 1e-4, f"batch {n}, size {size}")
        # The fake kernel raises the core's error while tracing; Dynamo
        # reports it as it reports a failing fake kernel of torch's own ops
        # (TorchRuntimeError), carrying the ai3 error's class and message.
        with pytest.raises(
            torch._dynamo.exc.TorchRuntimeError, match=r"ShapeError\(\"conv2d layer '0'.*has 4 channels"
        ):
            compiled(randn(1, 4, 16, 16))
        with pytest.raises(ai3.ShapeError, match="^conv2d layer '0'.*has 4 channels"):
            new(randn(1, 4, 16, 16))
    torch._dynamo.reset()


def test_torch_export():
    ref = small_net()
    new = swapped(ref, {"conv2d": "smm"})
    x = randn(2, 3, 16, 16)
    exported = torch.export.export(new, (x,))
    calls = [n for n in exported.graph.nodes if n.op == "call_function" and str(n.target) == "ai3.layer.default"]
    captured = {(n.args[3], n.args[5]) for n in calls}  # (op, algorithm): the graph says what runs
    assert ("conv2d", "smm") in captured and ("linear", "default") in captured, captured
    assert all(isinstance(n.args[4], str) and ops.parse(n.args[4]) is not None for n in calls)
    with torch.no_grad():
        assert_close(exported.module()(x), ref(x), 1e-4)


def test_torch_jit_trace(tmp_path):
    ref = small_net()
    new = swapped(ref, {"conv2d": "gemm"})
    x = randn(2, 3, 16, 16)
    with torch.no_grad():
        traced = torch.jit.trace(new, (x,))
        assert "ai3::layer" in str(traced.inlined_graph) and '"conv2d"' in str(traced.inlined_graph)
        assert_close(traced(x), ref(x), 1e-4)
        path = str(tmp_path / "traced.pt")
        traced.save(path)
        loaded = torch.jit.load(path)  # the ai3 ops are registered in this process
        assert_close(loaded(x), ref(x), 1e-4, "saved and loaded")


if __name__ == "__main__":
    pytest_main.run(__file__)
