"""Every (op, algorithm) pair of the core against torch.nn.functional.

Each op is checked over a grid of parameters in float32 and float64. An
algorithm that cannot take a case must refuse it with AlgorithmNotApplicable
(and a reason); one that takes it must match PyTorch within the tolerance of
the dtype:
  float32: |ai3 - torch| <= 1e-4 + 1e-4 |torch|  (winograd: 5e-4, since its
           tile transforms add rounding; see the algorithm's file)
  float64: |ai3 - torch| <= 1e-10 + 1e-10 |torch|
"""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest
import pytest_main
import torch
import torch.nn.functional as F
from tolerances import DTYPES, tolerance

import ai3

torch.set_num_threads(2)


def assert_close(got, want, tol: float, what: str) -> None:
    got = torch.as_tensor(got)
    assert got.shape == want.shape, f"{what}: shape {tuple(got.shape)} != {tuple(want.shape)}"
    torch.testing.assert_close(got, want, atol=tol, rtol=tol, msg=lambda m: f"{what}: {m}")


def algorithms(op: str) -> list[str]:
    """Every algorithm of `op`, "custom" included: once a user fills in
    custom_algos/<op>.cc, this grid checks it too."""
    names = ai3.algorithms()[op]
    assert names, f"no {op} algorithms registered"
    return names


def build(make_layer, algorithm: str):
    """The layer, or None when `algorithm` refuses these parameters, which
    it must do with AlgorithmNotApplicable saying why (never a wrong result)."""
    try:
        layer = make_layer()
    except ai3.AlgorithmNotApplicable as e:
        assert f"algorithm '{algorithm}' cannot take this layer: " in str(e), str(e)
        return None
    assert layer.algorithm == algorithm
    return layer


# --------------------------------------------------------------------------
# conv2d: a grid over batch, channels, sizes (odd, 1x1), kernel 1/3/5/7,
# stride, padding (incl. asymmetric), dilation, groups, bias, layout.


def conv_cases() -> list[dict]:
    rng = random.Random(0)
    cases = []
    for kernel, stride, dilation, groups in itertools.product([1, 3, 5, 7], [1, 2], [1, 2], [1, 2, "depthwise"]):
        in_ch = rng.choice([2, 4, 6]) if groups != 1 else rng.choice([1, 3, 5, 8])
        g = in_ch if groups == "depthwise" else groups
        out_ch = g * rng.choice([1, 2, 3])
        span = dilation * (kernel - 1) + 1
        size = rng.choice([span, span + 1, span + 4, 13])
        pad = rng.choice([0, kernel // 2])
        cases.append(
            dict(
                n=rng.choice([1, 2, 3]),
                c=in_ch,
                h=size,
                w=size + rng.choice([0, 1, 3]),
                k=out_ch,
                kernel=(kernel, kernel),
                stride=stride,
                padding=(pad, pad, pad, pad),
                dilation=dilation,
                groups=g,
                bias=rng.random() < 0.7,
            )
        )
    # Hand-picked edges: 1x1 input, rectangular kernel, asymmetric padding
    # ("same" with an even kernel), a large channel count, a 1x1 unit conv.
    cases += [
        dict(n=2, c=4, h=1, w=1, k=5, kernel=(1, 1), stride=1, padding=(0,) * 4, dilation=1, groups=1, bias=True),
        dict(
            n=1, c=3, h=6, w=9, k=4, kernel=(3, 1), stride=(2, 1), padding=(1, 1, 0, 0), dilation=1, groups=1, bias=True
        ),
        dict(n=1, c=3, h=8, w=7, k=2, kernel=(2, 2), stride=1, padding=(0, 1, 0, 1), dilation=1, groups=1, bias=False),
        dict(n=1, c=2, h=5, w=5, k=3, kernel=(3, 3), stride=1, padding=(2, 0, 1, 0), dilation=1, groups=1, bias=True),
        dict(n=1, c=32, h=14, w=14, k=48, kernel=(3, 3), stride=1, padding=(1,) * 4, dilation=1, groups=1, bias=True),
        dict(n=3, c=16, h=9, w=9, k=8, kernel=(1, 1), stride=1, padding=(0,) * 4, dilation=1, groups=1, bias=False),
        dict(n=1, c=4, h=3, w=3, k=2, kernel=(5, 5), stride=1, padding=(2,) * 4, dilation=1, groups=1, bias=True),
    ]
    return cases


CONV_CASES = conv_cases()


def conv_case_id(case: dict) -> str:
    return (
        "n{n}c{c}_{h}x{w}_k{k}_kern{kernel[0]}x{kernel[1]}_s{stride}_p{padding}_d{dilation}_g{groups}_b{bias:d}".format(
            **case
        ).replace(" ", "")
    )


def torch_conv(x: torch.Tensor, w: torch.Tensor, b, case: dict) -> torch.Tensor:
    top, bottom, left, right = case["padding"]
    x = F.pad(x, (left, right, top, bottom))
    return F.conv2d(x, w, b, stride=case["stride"], dilation=case["dilation"], groups=case["groups"])


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("case", CONV_CASES, ids=conv_case_id)
@pytest.mark.parametrize("algorithm", algorithms("conv2d"))
def test_conv2d(algorithm: str, case: dict, dtype: torch.dtype, layout: str) -> None:
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(case["n"], case["c"], case["h"], case["w"], generator=gen, dtype=dtype)
    w = torch.randn(case["k"], case["c"] // case["groups"], *case["kernel"], generator=gen, dtype=dtype)
    b = torch.randn(case["k"], generator=gen, dtype=dtype) if case["bias"] else None
    want = torch_conv(x, w, b, case)
    layer = build(
        lambda: ai3.layers.Conv2d(
            w,
            b,
            stride=case["stride"],
            padding=case["padding"],
            dilation=case["dilation"],
            groups=case["groups"],
            algorithm=algorithm,
            layout=layout,
        ),
        algorithm,
    )
    if layer is None:
        return
    if layout == "NHWC":
        got = layer(x.permute(0, 2, 3, 1).contiguous()).permute(0, 3, 1, 2)
    else:
        got = layer(x)
    assert_close(got, want, tolerance(dtype, algorithm), f"conv2d {algorithm}")


def test_conv2d_default_picks_an_applicable_algorithm() -> None:
    w = torch.randn(8, 4, 3, 3)
    strided = ai3.layers.Conv2d(w, stride=2, padding=1)
    assert strided.algorithm in algorithms("conv2d") and strided.algorithm != "winograd"
    x = torch.randn(1, 4, 9, 9)
    assert_close(strided(x), F.conv2d(x, w, stride=2, padding=1), 1e-4, "default")


def test_conv2d_numpy_in_numpy_out() -> None:
    x = np.random.default_rng(0).standard_normal((1, 3, 8, 8)).astype(np.float32)
    w = np.random.default_rng(1).standard_normal((4, 3, 3, 3)).astype(np.float32)
    y = ai3.layers.Conv2d(w, padding=1, algorithm="direct")(x)
    assert isinstance(y, np.ndarray) and y.dtype == np.float32
    want = F.conv2d(torch.from_numpy(x), torch.from_numpy(w), padding=1)
    assert_close(torch.from_numpy(y), want, 1e-4, "numpy")


def test_conv2d_non_contiguous_input_is_read_correctly() -> None:
    x = torch.randn(1, 8, 8, 3).permute(0, 3, 1, 2)  # NCHW view, not contiguous
    assert not x.is_contiguous()
    w = torch.randn(4, 3, 3, 3)
    for algorithm in algorithms("conv2d"):
        layer = build(lambda: ai3.layers.Conv2d(w, padding=1, algorithm=algorithm), algorithm)
        if layer is None:
            continue
        assert_close(layer(x), F.conv2d(x, w, padding=1), tolerance(torch.float32, algorithm), algorithm)


def test_conv2d_input_is_not_copied() -> None:
    """The core reads the caller's buffer: a contiguous tensor and the array
    the core sees share memory (DLPack view)."""
    from ai3 import _arrays

    x = torch.randn(1, 3, 4, 4)
    array, kind = _arrays.to_array(x, "x")
    assert kind == "torch" and array.ctypes.data == x.data_ptr()


def test_large_results_reuse_memory_but_never_alias() -> None:
    """A large result's memory comes from results freed before it (pages
    already mapped: core/python/arrays.h's ResultMemory), never from one
    still alive: each result is its own writable C-contiguous array, and
    torch and NumPy views of it keep it alive."""
    w = torch.randn(16, 3, 3, 3)
    layer = ai3.layers.Conv2d(w, padding=1, algorithm="direct", layout="NHWC")
    x1, x2 = torch.randn(2, 128, 128, 3), torch.randn(2, 128, 128, 3)  # 2 MB results
    want1 = F.conv2d(x1.permute(0, 3, 1, 2), w, padding=1).permute(0, 2, 3, 1)
    y1 = layer(x1)
    y2 = layer(x2)  # y1 alive: another block
    assert y1.data_ptr() != y2.data_ptr()
    assert_close(y1, want1, 1e-4, "the first result, after a second call")
    address = y1.data_ptr()
    del y1
    y3 = layer(x1)  # y1's block, freed, is the one a same-sized result takes
    assert y3.data_ptr() == address and y3.is_contiguous()
    assert_close(y3, want1, 1e-4, "a result in reused memory")
    view = y3.numpy()[0]
    del y3
    y4 = layer(x2)  # y3 is still held through the view: not reused
    assert y4.data_ptr() != address
    assert_close(torch.from_numpy(view), want1[0], 1e-4, "a view of a freed tensor")
    array = ai3.layers.Conv2d(w.numpy(), padding=1, algorithm="direct", layout="NHWC")(x1.numpy())
    assert array.flags.c_contiguous and array.flags.writeable and array.dtype == np.float32
    array[...] = 0  # the caller's to write


# --------------------------------------------------------------------------
# linear


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize(
    "shape,out,bias",
    [((5, 7), 3, True), ((1, 1), 1, False), ((2, 3, 16), 9, True), ((16,), 4, True), ((64, 300), 129, False)],
)
@pytest.mark.parametrize("algorithm", algorithms("linear"))
def test_linear(algorithm, shape, out, bias, dtype) -> None:
    gen = torch.Generator().manual_seed(2)
    x = torch.randn(*shape, generator=gen, dtype=dtype)
    w = torch.randn(out, shape[-1], generator=gen, dtype=dtype)
    b = torch.randn(out, generator=gen, dtype=dtype) if bias else None
    layer = build(lambda: ai3.layers.Linear(w, b, algorithm=algorithm), algorithm)
    if layer is None:
        return
    assert_close(layer(x), F.linear(x, w, b), tolerance(dtype), f"linear {algorithm}")


# --------------------------------------------------------------------------
# relu, pools, flatten

IMAGE_SHAPES = [(1, 1, 1, 1), (2, 3, 7, 9), (1, 4, 12, 12), (3, 2, 5, 16)]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", [(7,), (2, 3, 7, 9), (1, 1000), ()], ids=str)
@pytest.mark.parametrize("algorithm", algorithms("relu"))
def test_relu(algorithm, shape, dtype) -> None:
    x = torch.randn(shape, dtype=dtype)
    layer = build(lambda: ai3.layers.ReLU(algorithm=algorithm), algorithm)
    if layer is not None:
        assert_close(layer(x), F.relu(x), 0.0, "relu")


POOL_CASES = [
    dict(kernel=2, stride=2, padding=0, dilation=1, ceil_mode=False),
    dict(kernel=3, stride=2, padding=1, dilation=1, ceil_mode=False),
    dict(kernel=3, stride=2, padding=0, dilation=1, ceil_mode=True),
    dict(kernel=3, stride=1, padding=1, dilation=2, ceil_mode=False),
    dict(kernel=(2, 3), stride=(1, 2), padding=(1, 0), dilation=1, ceil_mode=True),
    dict(kernel=1, stride=1, padding=0, dilation=1, ceil_mode=False),
]


def pooled_input(shape, case, dtype):
    kh, kw = case["kernel"] if isinstance(case["kernel"], tuple) else (case["kernel"],) * 2
    d = case.get("dilation", 1)
    n, c, h, w = shape
    return torch.randn(n, c, max(h, d * (kh - 1) + 1), max(w, d * (kw - 1) + 1), dtype=dtype)


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", IMAGE_SHAPES, ids=str)
@pytest.mark.parametrize("case", POOL_CASES, ids=str)
@pytest.mark.parametrize("algorithm", algorithms("maxpool2d"))
def test_maxpool2d(algorithm, case, shape, dtype, layout) -> None:
    x = pooled_input(shape, case, dtype)
    want = F.max_pool2d(x, case["kernel"], case["stride"], case["padding"], case["dilation"], case["ceil_mode"])
    layer = build(
        lambda: ai3.layers.MaxPool2d(
            case["kernel"],
            case["stride"],
            case["padding"],
            case["dilation"],
            case["ceil_mode"],
            algorithm=algorithm,
            layout=layout,
        ),
        algorithm,
    )
    if layer is not None:
        assert_close(run_in_layout(layer, x, layout), want, 0.0, "maxpool2d")


def run_in_layout(layer, x, layout):
    if layout == "NHWC":
        return layer(x.permute(0, 2, 3, 1).contiguous()).permute(0, 3, 1, 2)
    return layer(x)


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", IMAGE_SHAPES, ids=str)
@pytest.mark.parametrize("count_include_pad,divisor", [(True, None), (False, None), (True, 5)])
@pytest.mark.parametrize("case", [c for c in POOL_CASES if c["dilation"] == 1], ids=str)
@pytest.mark.parametrize("algorithm", algorithms("avgpool2d"))
def test_avgpool2d(algorithm, case, count_include_pad, divisor, shape, dtype, layout) -> None:
    x = pooled_input(shape, case, dtype)
    want = F.avg_pool2d(
        x, case["kernel"], case["stride"], case["padding"], case["ceil_mode"], count_include_pad, divisor
    )
    layer = build(
        lambda: ai3.layers.AvgPool2d(
            case["kernel"],
            case["stride"],
            case["padding"],
            case["ceil_mode"],
            count_include_pad,
            divisor,
            algorithm=algorithm,
            layout=layout,
        ),
        algorithm,
    )
    if layer is not None:
        assert_close(run_in_layout(layer, x, layout), want, tolerance(dtype), "avgpool2d")


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", IMAGE_SHAPES + [(1, 3, 13, 17)], ids=str)
@pytest.mark.parametrize("output_size", [1, (2, 3), 7, (5, 1)], ids=str)
@pytest.mark.parametrize("algorithm", algorithms("adaptiveavgpool2d"))
def test_adaptiveavgpool2d(algorithm, output_size, shape, dtype, layout) -> None:
    x = torch.randn(*shape, dtype=dtype)
    layer = build(lambda: ai3.layers.AdaptiveAvgPool2d(output_size, algorithm=algorithm, layout=layout), algorithm)
    if layer is not None:
        assert_close(
            run_in_layout(layer, x, layout),
            F.adaptive_avg_pool2d(x, output_size),
            tolerance(dtype),
            "adaptiveavgpool2d",
        )


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize(
    "shape,start,end",
    [((2, 3, 4, 5), 1, -1), ((2, 3, 4, 5), 0, -1), ((2, 3, 4, 5), 1, 2), ((2, 3, 4, 5), -2, -1), ((7,), 0, 0)],
)
@pytest.mark.parametrize("algorithm", algorithms("flatten"))
def test_flatten(algorithm, shape, start, end, dtype) -> None:
    x = torch.randn(*shape, dtype=dtype)
    layer = build(lambda: ai3.layers.Flatten(start, end, algorithm=algorithm), algorithm)
    if layer is not None:
        assert_close(layer(x), torch.flatten(x, start, end), 0.0, "flatten")


# --------------------------------------------------------------------------
# clamp, sigmoid, silu, tanh, softmax, pad2d

ELEMENTWISE_SHAPES = [(7,), (2, 3, 7, 9), (1, 1000), (), (3, 0, 2), (2, 3, 4, 5, 6)]


def wide_input(shape, dtype) -> torch.Tensor:
    """randn scaled to reach the tails and the clamp bounds, with the extremes."""
    x = torch.randn(shape, dtype=dtype, generator=torch.Generator().manual_seed(3)) * 5
    flat = x.view(-1)
    if flat.numel() >= 4:
        flat[:4] = torch.tensor([60.0, -60.0, 0.0, 6.0], dtype=dtype)
    return x


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", ELEMENTWISE_SHAPES, ids=str)
@pytest.mark.parametrize(
    "bounds", [(0.0, 6.0), (-1.0, 1.0), (-2.5, 0.5), (None, 1.0), (-1.0, None), (3.0, -3.0)], ids=str
)
@pytest.mark.parametrize("algorithm", algorithms("clamp"))
def test_clamp(algorithm, bounds, shape, dtype) -> None:
    lo, hi = bounds
    x = wide_input(shape, dtype)
    layer = build(lambda: ai3.layers.Clamp(lo, hi, algorithm=algorithm), algorithm)
    if layer is None:
        return
    want = torch.clamp(x, lo, hi)
    if lo is not None and hi is not None and lo < hi:
        torch.testing.assert_close(want, F.hardtanh(x, lo, hi), atol=0, rtol=0)
    assert_close(layer(x), want, 0.0, f"clamp {bounds}")


def test_clamp_is_relu6_and_passes_nan() -> None:
    x = torch.tensor([-1.0, 3.0, 7.0, float("nan"), float("inf"), float("-inf")])
    got = ai3.layers.Clamp(0, 6)(x)
    torch.testing.assert_close(got, F.relu6(x), equal_nan=True, atol=0, rtol=0)


UNARY = {
    "sigmoid": (lambda a: ai3.layers.Sigmoid(algorithm=a), torch.sigmoid),
    "silu": (lambda a: ai3.layers.SiLU(algorithm=a), F.silu),
    "tanh": (lambda a: ai3.layers.Tanh(algorithm=a), torch.tanh),
}


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", ELEMENTWISE_SHAPES, ids=str)
@pytest.mark.parametrize("op,algorithm", [(op, a) for op in UNARY for a in algorithms(op)])
def test_unary_activation(op, algorithm, shape, dtype) -> None:
    make, reference = UNARY[op]
    x = wide_input(shape, dtype)
    layer = build(lambda: make(algorithm), algorithm)
    if layer is not None:
        assert layer.op == op
        assert_close(layer(x), reference(x), tolerance(dtype), f"{op} {algorithm}")


@pytest.mark.parametrize("op", list(UNARY))
def test_unary_activation_special_values(op) -> None:
    make, reference = UNARY[op]
    x = torch.tensor([float("nan"), float("inf"), float("-inf"), -200.0, 200.0, 0.0, -0.0], dtype=torch.float64)
    torch.testing.assert_close(make("direct")(x), reference(x), equal_nan=True, atol=1e-300, rtol=1e-12)


SOFTMAX_CASES = [
    ((7,), 0),
    ((7,), -1),
    ((3, 5), 0),
    ((3, 5), 1),
    ((3, 5), -1),
    ((2, 3, 4, 5), 1),
    ((2, 3, 4, 5), -1),
    ((2, 3, 4, 5), 2),
    ((2, 3, 4, 5), 0),
    ((2, 3, 4, 5), -3),
    ((1, 1000), 1),
    ((4, 300, 2), 1),
    ((2, 600, 1, 300), 3),
    ((2, 3, 0), 1),
    ((), 0),
    ((), -1),
    ((5, 1), 1),
]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape,axis", SOFTMAX_CASES, ids=str)
@pytest.mark.parametrize("algorithm", algorithms("softmax"))
def test_softmax(algorithm, shape, axis, dtype) -> None:
    x = torch.randn(shape, dtype=dtype, generator=torch.Generator().manual_seed(4)) * 10
    if x.numel() > 1:
        x.view(-1)[1] = 1000.0  # overflows exp unless the max is subtracted
    layer = build(lambda: ai3.layers.Softmax(axis, algorithm=algorithm), algorithm)
    if layer is not None:
        assert_close(layer(x), F.softmax(x, dim=axis), tolerance(dtype), f"softmax axis {axis}")


def test_softmax_bad_axis() -> None:
    layer = ai3.layers.Softmax(2, name="sm")
    with pytest.raises(ai3.ShapeError, match=r"softmax layer 'sm'.*axis 2 is out of range for a rank-2 input"):
        layer(torch.randn(2, 3))


PAD_CASES = [(1, 1, 1, 1), (0, 1, 0, 1), (2, 0, 3, 1), (0, 0, 0, 0), (3, 2, 0, 0), (0, 0, 1, 4)]


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", IMAGE_SHAPES + [(0, 2, 3, 3)], ids=str)
@pytest.mark.parametrize("value", [0.0, -1.5])
@pytest.mark.parametrize("pads", PAD_CASES, ids=str)
@pytest.mark.parametrize("algorithm", algorithms("pad2d"))
def test_pad2d(algorithm, pads, value, shape, dtype, layout) -> None:
    top, bottom, left, right = pads
    x = torch.randn(*shape, dtype=dtype)
    want = F.pad(x, (left, right, top, bottom), mode="constant", value=value)
    layer = build(lambda: ai3.layers.Pad2d(pads, value, algorithm=algorithm, layout=layout), algorithm)
    if layer is not None:
        assert_close(run_in_layout(layer, x, layout), want, 0.0, f"pad2d {pads}")


def test_pad2d_int_and_pair_padding_and_errors() -> None:
    x = torch.randn(1, 2, 3, 4)
    assert_close(ai3.layers.Pad2d(2)(x), F.pad(x, (2, 2, 2, 2)), 0.0, "int")
    assert_close(ai3.layers.Pad2d((1, 3))(x), F.pad(x, (3, 3, 1, 1)), 0.0, "pair")
    assert ai3.layers.Pad2d((1, 2, 3, 4)).output_shape((1, 2, 3, 4)) == (1, 2, 6, 11)
    with pytest.raises(ai3.InvalidArgument, match=r"pad2d layer 'p'.*pads must be >= 0"):
        ai3.layers.Pad2d((0, 0, -1, 0), name="p")
    with pytest.raises(ai3.ShapeError, match=r"expected a rank-4 NCHW input"):
        ai3.layers.Pad2d(1)(torch.randn(3, 4))


def test_every_op_has_direct() -> None:
    table = ai3.algorithms()
    for op in [
        "conv2d",
        "linear",
        "relu",
        "maxpool2d",
        "avgpool2d",
        "adaptiveavgpool2d",
        "flatten",
        "clamp",
        "sigmoid",
        "silu",
        "tanh",
        "softmax",
        "pad2d",
    ]:
        assert "direct" in table[op], op
    for name in ["direct", "smm", "gemm", "kn2row", "winograd", "implicit gemm", "guess", "custom"]:
        assert name in table["conv2d"], name


if __name__ == "__main__":
    pytest_main.run(__file__)
