"""The generic bindings over the ops' declarations (core/op_schema.h):
every declared op builds through _core.make_layer from its schema, answers
its output shape through _core.output_shape without a layer, and refuses
bad attributes and weights with an ai3.Error naming the layer."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import pytest_main

import ai3
from ai3 import _core, layers

# op -> (attrs, weight shapes by name, input shapes): a small layer of each
# declared op. A new op's declaration without a sample here fails
# test_every_declared_op_has_a_sample.
SAMPLES: dict[str, tuple[dict[str, Any], dict[str, tuple[int, ...]], list[tuple[int, ...]]]] = {
    "conv2d": ({"padding": 1, "stride": [1, 2]}, {"weight": (4, 3, 3, 3), "bias": (4,)}, [(1, 3, 8, 8)]),
    "linear": ({}, {"weight": (5, 3), "bias": (5,)}, [(2, 3)]),
    # Gradient ops (issue 16): the forward's attrs and weights, inputs
    # [grad_output, x, y].
    **{
        f"conv2d_backward_{t}": (
            {"padding": 1, "stride": [1, 2]},
            {"weight": (4, 3, 3, 3), "bias": (4,)},
            [(1, 4, 8, 4), (1, 3, 8, 8), (1, 4, 8, 4)],
        )
        for t in ("data", "weight", "bias")
    },
    **{
        f"linear_backward_{t}": ({}, {"weight": (5, 3), "bias": (5,)}, [(2, 5), (2, 3), (2, 5)])
        for t in ("data", "weight", "bias")
    },
    "relu": ({}, {}, [(2, 3)]),
    "sigmoid": ({}, {}, [(2, 3)]),
    "silu": ({}, {}, [(2, 3)]),
    "tanh": ({}, {}, [(2, 3)]),
    "hardswish": ({}, {}, [(2, 3)]),
    "hardsigmoid": ({"alpha": 0.2}, {}, [(2, 3)]),
    "leaky_relu": ({"alpha": 0.2}, {}, [(2, 3)]),
    "gelu": ({"approximate": "tanh"}, {}, [(2, 3)]),
    "clamp": ({"min": 0, "max": 1.5}, {}, [(2, 3)]),
    "softmax": ({}, {}, [(2, 3)]),
    "log_softmax": ({"axis": 0}, {}, [(2, 3)]),
    "maxpool2d": ({"kernel": 2}, {}, [(1, 2, 4, 4)]),
    "avgpool2d": ({"kernel": [2, 1], "padding": [1, 0]}, {}, [(1, 2, 4, 4)]),
    "adaptiveavgpool2d": ({"output_size": 2}, {}, [(1, 2, 5, 5)]),
    "adaptivemaxpool2d": ({"output_size": [1, 2]}, {}, [(1, 2, 5, 5)]),
    "flatten": ({}, {}, [(2, 3, 4)]),
    "batchnorm2d": (
        {"eps": 1e-3},
        {"weight": (3,), "bias": (3,), "running_mean": (3,), "running_var": (3,)},
        [(1, 3, 4, 4)],
    ),
    "pad2d": ({"padding": [1, 2, 0, 1]}, {}, [(1, 1, 2, 2)]),
    "conv_transpose2d": ({"stride": 2, "output_padding": 1}, {"weight": (2, 3, 3, 3), "bias": (3,)}, [(1, 2, 3, 3)]),
    "resize": ({"scale": [2.0, 1.5], "mode": "linear"}, {}, [(1, 2, 3, 4)]),
    "groupnorm": ({"groups": 2}, {"weight": (4,), "bias": (4,)}, [(2, 4, 3)]),
    "rmsnorm": ({"eps": 1e-6}, {"weight": (3,)}, [(2, 3)]),
    "lrn": ({"size": 3}, {}, [(1, 4, 2, 2)]),
    "depth_to_space": ({"blocksize": 2, "mode": "CRD"}, {}, [(1, 8, 2, 3)]),
    "space_to_depth": ({"blocksize": 2}, {}, [(1, 2, 4, 6)]),
    "add": ({}, {}, [(2, 3), (3,)]),
    "sub": ({"reverse": True}, {"other": (3,)}, [(2, 3)]),
    "mul": ({}, {}, [(2, 1), (1, 3)]),
    "div": ({}, {"other": (2, 3)}, [(2, 3)]),
    "matmul": ({}, {}, [(2, 3), (3, 4)]),
    "reshape": ({"shape": [3, -1]}, {}, [(2, 3)]),
    "permute": ({"dims": [1, 0]}, {}, [(2, 3)]),
    "slice": ({"axis": 1, "start": 1}, {}, [(2, 3)]),
    "layernorm": ({}, {"weight": (3,), "bias": (3,)}, [(2, 3)]),
    "mean": ({"axes": [1], "keepdim": True}, {}, [(2, 3)]),
    "roll": ({"shifts": 1, "axes": 1}, {}, [(2, 3)]),
    "attention": ({"causal": True}, {}, [(1, 2, 4, 8), (1, 2, 5, 8), (1, 2, 5, 8)]),
    "multihead_attention": ({"num_heads": 2}, {"in_proj_weight": (24, 8), "out_proj_weight": (8, 8)}, [(4, 1, 8)]),
    # issue 17: unary math and activations, pow / maximum / minimum / prelu,
    # the reductions, tile and expand
    **{
        op: ({}, {}, [(2, 3)])
        for op in (
            "exp",
            "log",
            "sqrt",
            "neg",
            "abs",
            "erf",
            "reciprocal",
            "floor",
            "ceil",
            "sign",
            "sin",
            "cos",
            "tan",
            "asin",
            "acos",
            "atan",
            "sinh",
            "cosh",
            "asinh",
            "acosh",
            "atanh",
            "softsign",
            "mish",
            "selu",
        )
    },  # fmt: skip
    "elu": ({"alpha": 0.5}, {}, [(2, 3)]),
    "celu": ({"alpha": 2.0}, {}, [(2, 3)]),
    "softplus": ({"beta": 2.0, "threshold": 10.0}, {}, [(2, 3)]),
    "thresholded_relu": ({"alpha": 0.5}, {}, [(2, 3)]),
    "pow": ({}, {"other": ()}, [(2, 3)]),
    "maximum": ({}, {}, [(2, 3), (3,)]),
    "minimum": ({}, {}, [(2, 1), (1, 3)]),
    "prelu": ({}, {"other": (3,)}, [(2, 3, 4)]),
    "remainder": ({"reverse": True}, {"other": (3,)}, [(2, 3)]),
    "fmod": ({}, {}, [(2, 3), (3,)]),
    # Video and volumetric models (issue 17): 3-D convolution and pools.
    "conv3d": (
        {"padding": [1, 1, 1, 1, 0, 0], "stride": [1, 2, 1]},
        {"weight": (4, 3, 3, 3, 1), "bias": (4,)},
        [(1, 3, 4, 6, 5)],
    ),
    "maxpool3d": ({"kernel": [1, 2, 2], "padding": [0, 0, 1, 1, 0, 0]}, {}, [(1, 2, 3, 4, 4)]),
    "avgpool3d": ({"kernel": [2, 2, 2], "stride": [1, 1, 1]}, {}, [(1, 2, 3, 4, 4)]),
    "grid_sample": ({"mode": "bicubic", "padding_mode": "border"}, {}, [(1, 2, 4, 5), (1, 3, 3, 2)]),
    **{
        op: ({"axes": [-1], "keepdim": True}, {}, [(2, 3)])
        for op in (
            "reduce_sum",
            "reduce_prod",
            "reduce_max",
            "reduce_min",
            "reduce_l1",
            "reduce_l2",
            "reduce_sum_square",
            "reduce_log_sum_exp",
        )
    },  # fmt: skip
    "tile": ({"repeats": [2, 1]}, {}, [(2, 3)]),
    "expand": ({"shape": [4, 2, 3]}, {}, [(2, 3)]),
    # Integer tensors (issue 17): an embedding (gather of a table by int64
    # ids), cast, the comparisons and logical ops, where.
    "gather": ({"axis": 0}, {"other": (5, 3)}, [(2, 4)]),
    "gather_elements": ({"axis": 1}, {"other": (2, 5)}, [(2, 3)]),
    "cumsum": ({"axis": 1, "exclusive": True}, {}, [(2, 3)]),
    "argmax": ({"axis": 1, "keepdim": True}, {}, [(2, 3)]),
    "argmin": ({"axis": 0, "select_last_index": True}, {}, [(2, 3)]),
    "topk": ({"k": 2, "axis": -1, "largest": False}, {}, [(2, 3)]),
    "scatter_elements": ({"axis": 1, "reduction": "add"}, {}, [(2, 3), (2, 2), (2, 2)]),
    "scatter_nd": ({"reduction": "none"}, {}, [(3, 4), (2, 1), (2, 4)]),
    "trilu": ({"upper": False, "k": 1}, {}, [(2, 3, 3)]),
    "cast": ({"to": "int64"}, {}, [(2, 3)]),
    **{
        op: ({}, {}, [(2, 3), (3,)])
        for op in (
            "equal",
            "less",
            "greater",
            "less_equal",
            "greater_equal",
            "logical_and",
            "logical_or",
            "logical_xor",
        )
    },
    "logical_not": ({}, {}, [(2, 3)]),
    "where": ({}, {}, [(2, 3), (2, 3), (3,)]),
}
# The samples whose inputs are not all float32: each input's dtype.
SAMPLE_DTYPES: dict[str, list[str]] = {
    "gather": ["int64"],
    "gather_elements": ["int64"],
    "where": ["bool", "float32", "float32"],
    "scatter_elements": ["float32", "int64", "float32"],
    "scatter_nd": ["float32", "int64", "float32"],
}

SCHEMAS = {s["op"]: s for s in _core.op_schemas()}

# A gradient op F_backward_<target> (issue 16) takes F's attributes and
# weights and the inputs [grad_output, x, y]: its sample is F's.
for _op in SCHEMAS:
    _forward = _op.partition("_backward_")[0]
    if _forward != _op and _forward in SAMPLES and _op not in SAMPLES:
        _attrs, _weights, (_x,) = SAMPLES[_forward]
        _y = tuple(_core.output_shape(_forward, _attrs, _weights, [list(_x)], "float32", "sample"))
        SAMPLES[_op] = (_attrs, _weights, [_y, _x, _y])


def _arrays(shapes: dict[str, tuple[int, ...]], seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    out = {k: rng.standard_normal(s).astype(np.float32) for k, s in shapes.items()}
    if "running_var" in out:
        out["running_var"] = np.abs(out["running_var"]) + 0.5
    return out


def test_every_declared_op_has_a_sample() -> None:
    assert sorted(SCHEMAS) == sorted(SAMPLES)


def test_every_op_the_core_runs_is_declared() -> None:
    assert {op for op, _, _ in _core.algorithms()} <= set(SCHEMAS)


@pytest.mark.parametrize("op", sorted(SAMPLES))
def test_every_declared_op_builds_runs_and_answers_its_shape(op: str) -> None:
    attrs, weight_shapes, input_shapes = SAMPLES[op]
    layer = _core.make_layer(op, attrs, _arrays(weight_shapes), "default", f"my_{op}")
    assert (layer.op, layer.name) == (op, f"my_{op}")
    assert layer.algorithm in [name for o, name, dev in _core.algorithms() if o == op and dev == "cpu"]
    rng = np.random.default_rng(1)
    dtypes = SAMPLE_DTYPES.get(op, ["float32"] * len(input_shapes))
    inputs = [
        rng.standard_normal(s).astype(np.float32) if d == "float32" else rng.integers(0, 2, s).astype(d)
        for s, d in zip(input_shapes, dtypes)
    ]
    y = layer(*inputs)
    # The shape query needs no layer and no weight data, only shapes.
    want = _core.output_shape(op, attrs, weight_shapes, [list(s) for s in input_shapes], dtypes, "q")
    assert tuple(y.shape) == tuple(want)
    assert layers.output_shape(op, attrs, weight_shapes, input_shapes, dtype=dtypes) == tuple(want)
    # The weights as a list in the declared order give the same layer.
    names = [w["name"] for w in SCHEMAS[op]["weights"]]
    as_list = [_arrays(weight_shapes).get(n) for n in names]
    np.testing.assert_array_equal(_core.make_layer(op, attrs, as_list, layer.algorithm, "l")(*inputs), y)


def _run(op: str, attrs: dict[str, Any], weights: dict[str, np.ndarray], *inputs: np.ndarray) -> np.ndarray:
    return layers.Layer(op, attrs, weights, algorithm="direct")(*inputs)


def test_generic_layers_against_numpy() -> None:
    rng = np.random.default_rng(2)
    x = rng.standard_normal((3, 4)).astype(np.float64)
    y = rng.standard_normal((4, 5)).astype(np.float64)
    w = rng.standard_normal((2, 4)).astype(np.float64)
    b = rng.standard_normal(2).astype(np.float64)
    tol = {"rtol": 1e-12, "atol": 1e-12}
    np.testing.assert_allclose(_run("relu", {}, {}, x), np.maximum(x, 0), **tol)
    np.testing.assert_allclose(_run("linear", {}, {"weight": w, "bias": b}, x), x @ w.T + b, **tol)
    np.testing.assert_allclose(
        _run("linear", {"activation": [0, 0.5]}, {"weight": w}, x), np.clip(x @ w.T, 0, 0.5), **tol
    )
    np.testing.assert_allclose(_run("matmul", {}, {}, x, y), x @ y, **tol)
    c = y[:, 0].copy()  # (4,): broadcast over x's rows
    np.testing.assert_allclose(_run("sub", {"reverse": True}, {"other": c}, x), c - x, **tol)
    np.testing.assert_allclose(_run("permute", {"dims": [1, 0]}, {}, x), x.T, **tol)
    np.testing.assert_allclose(_run("reshape", {"shape": [0, 2, -1]}, {}, x), x.reshape(3, 2, 2), **tol)
    np.testing.assert_allclose(_run("slice", {"axis": 1, "step": -2}, {}, x), x[:, ::-2], **tol)
    np.testing.assert_allclose(_run("slice", {"axis": 0, "start": -2, "stop": None}, {}, x), x[-2:], **tol)
    np.testing.assert_allclose(_run("mean", {"axes": -1}, {}, x), x.mean(-1), **tol)
    np.testing.assert_allclose(_run("mean", {}, {}, x), x.mean(), **tol)
    np.testing.assert_allclose(
        _run("roll", {"shifts": [1, -1], "axes": [0, 1]}, {}, x), np.roll(x, (1, -1), (0, 1)), **tol
    )
    np.testing.assert_allclose(_run("clamp", {"max": 0.1}, {}, x), np.minimum(x, 0.1), **tol)
    img = rng.standard_normal((1, 2, 4, 4))
    np.testing.assert_allclose(
        _run("maxpool2d", {"kernel": 2}, {}, img), img.reshape(1, 2, 2, 2, 2, 2).max(axis=(3, 5)), **tol
    )  # stride None: the kernel


def test_schemas_describe_attributes_weights_and_default() -> None:
    conv = SCHEMAS["conv2d"]
    assert [w["name"] for w in conv["weights"]] == ["weight", "bias"]
    assert [w["optional"] for w in conv["weights"]] == [False, True]
    attrs = {a["name"]: a for a in conv["attrs"]}
    assert attrs["stride"]["type"] == "list[int]" and attrs["stride"]["size"] == 2
    assert attrs["stride"]["default"] == [1, 1] and not attrs["stride"]["required"]
    assert attrs["layout"]["choices"] == ["NCHW", "NHWC"]
    assert attrs["activation"]["nullable"]
    assert SCHEMAS["reshape"]["attrs"][0]["required"]
    mha = SCHEMAS["multihead_attention"]
    assert [w["name"] for w in mha["weights"]] == ["in_proj_weight", "out_proj_weight", "in_proj_bias", "out_proj_bias"]
    assert mha["multi_input"] and not conv["multi_input"]
    cpu = [name for name, _ in conv["default"]["cpu"]]
    assert cpu == [
        "direct",
        "smm",
        "implicit gemm",
        "winograd",
        "winograd",
        "guess",
        "gemm",
        "implicit gemm",
        "kn2row",
        "smm",
        "winograd",
        "direct",
    ]
    assert conv["default"]["cpu"][0][1]  # the condition in words
    assert [name for name, _ in SCHEMAS["linear"]["default"]["cpu"]] == ["packed", "guess", "gemm", "direct"]
    assert [name for name, _ in SCHEMAS["attention"]["default"]["cpu"]] == ["flash", "chunked", "naive"]
    for op, s in SCHEMAS.items():
        assert s["doc"] and s["default"].get("cpu"), op


@pytest.mark.parametrize(
    "channels, stride, dtype, want",
    [
        (64, 1, np.float32, "winograd"),  # 64 in and out per group: winograd first
        (32, 1, np.float32, "guess"),  # too narrow for winograd: oneDNN's choice
        (64, 2, np.float32, "guess"),  # winograd cannot take stride 2
        (32, 1, np.float64, "gemm"),  # oneDNN's convolution has no float64
    ],
)
def test_conv2d_default_follows_its_list(channels: int, stride: int, dtype: Any, want: str) -> None:
    weight = np.zeros((channels, channels, 3, 3), dtype)
    layer = _core.make_layer("conv2d", {"stride": stride}, {"weight": weight}, "default", "c")
    assert layer.algorithm == want


@pytest.mark.parametrize(
    "cin, cout, groups, layout, want",
    [
        (32, 32, 32, "NCHW", "direct"),  # narrow NCHW depthwise 3x3: direct's planar form
        (384, 384, 384, "NCHW", "smm"),  # wider NCHW depthwise: smm's one-channel block
        (32, 32, 32, "NHWC", "guess"),  # NHWC depthwise: oneDNN's
        (3, 64, 1, "NCHW", "implicit gemm"),  # an RGB first layer
        (64, 64, 1, "NHWC", "winograd"),  # NHWC winograd: channels in the lanes
        (20, 64, 1, "NHWC", "guess"),  # channels that fill no float32 vector
        (512, 512, 1, "NHWC", "guess"),  # U too big for NHWC winograd's rule
    ],
)
def test_conv2d_default_rules(cin: int, cout: int, groups: int, layout: str, want: str) -> None:
    weight = np.zeros((cout, cin // groups, 3, 3), np.float32)
    layer = _core.make_layer(
        "conv2d", {"groups": groups, "layout": layout, "padding": 1}, {"weight": weight}, "default", "c"
    )
    assert layer.algorithm == want


def _raises(kind: type, pattern: str, *args: Any) -> None:
    with pytest.raises(kind, match=pattern):
        _core.make_layer(*args)


def test_bad_attributes_name_the_layer_and_the_attribute() -> None:
    w = {"weight": np.zeros((2, 1, 3, 3), np.float32)}
    _raises(
        ai3.InvalidArgument,
        r"conv2d layer 'c': unknown attribute 'strides'; conv2d takes stride, padding",
        "conv2d",
        {"strides": 1},
        w,
        "default",
        "c",
    )
    _raises(
        ai3.InvalidArgument,
        r"conv2d layer 'c': stride must be a list of 2 ints \(or one int\), got 'x'",
        "conv2d",
        {"stride": "x"},
        w,
        "default",
        "c",
    )
    _raises(
        ai3.InvalidArgument,
        r"conv2d layer 'c': stride must be a list of 2 ints.*got \[1, 2, 3\]",
        "conv2d",
        {"stride": [1, 2, 3]},
        w,
        "default",
        "c",
    )
    _raises(
        ai3.InvalidArgument,
        r"conv2d layer 'c': groups must be an int, got True",
        "conv2d",
        {"groups": True},
        w,
        "default",
        "c",
    )
    _raises(
        ai3.InvalidArgument,
        r"conv2d layer 'c': groups must be an int, got 1.5",
        "conv2d",
        {"groups": 1.5},
        w,
        "default",
        "c",
    )
    _raises(
        ai3.InvalidArgument,
        r"conv2d layer 'c': layout must be 'NCHW' or 'NHWC', got 'CHW'",
        "conv2d",
        {"layout": "CHW"},
        w,
        "default",
        "c",
    )
    _raises(
        ai3.InvalidArgument,
        r"conv2d layer 'c': attribute 'padding' must hold numbers only",
        "conv2d",
        {"padding": [1, "a"]},
        w,
        "default",
        "c",
    )
    _raises(
        ai3.InvalidArgument,
        r"reshape layer 'r': missing attribute 'shape' \(an int or a list of ints\)",
        "reshape",
        {},
        {},
        "default",
        "r",
    )
    _raises(
        ai3.InvalidArgument,
        r"slice layer 's': attribute 'start' = .* does not fit in 64 bits",
        "slice",
        {"axis": 0, "start": 2**64},
        {},
        "default",
        "s",
    )
    _raises(
        ai3.InvalidArgument,
        r"relu layer 'r': unknown attribute 'inplace'; relu takes none",
        "relu",
        {"inplace": False},
        {},
        "default",
        "r",
    )


def test_bad_weights_name_the_layer_and_the_weight() -> None:
    _raises(ai3.InvalidArgument, r"conv2d layer 'c': missing weight 'weight'", "conv2d", {}, {}, "default", "c")
    _raises(
        ai3.InvalidArgument,
        r"conv2d layer 'c': unknown weight 'kernel'; conv2d takes weight, bias",
        "conv2d",
        {},
        {"kernel": np.zeros(1)},
        "default",
        "c",
    )
    _raises(
        ai3.InvalidArgument,
        r"linear layer 'l': got 3 weights; linear takes 2: weight, bias",
        "linear",
        {},
        [np.zeros((1, 1))] * 3,
        "default",
        "l",
    )
    _raises(
        ai3.ShapeError,
        r"conv2d layer 'c': weight must have rank 4, got rank 2",
        "conv2d",
        {},
        {"weight": np.zeros((2, 2), np.float32)},
        "default",
        "c",
    )
    _raises(
        ai3.DTypeError,
        r"linear layer 'l': weight has dtype int64",
        "linear",
        {},
        {"weight": np.zeros((2, 2), np.int64)},
        "default",
        "l",
    )
    _raises(
        ai3.InvalidArgument,
        r"multihead_attention layer 'm': in_proj_bias and out_proj_bias must be given together",
        "multihead_attention",
        {"num_heads": 1},
        {
            "in_proj_weight": np.zeros((6, 2), np.float32),
            "out_proj_weight": np.zeros((2, 2), np.float32),
            "in_proj_bias": np.zeros(6, np.float32),
        },
        "default",
        "m",
    )


def test_unknown_op_and_algorithm() -> None:
    _raises(
        ai3.UnsupportedOperation, r"ai3's core has no op 'conv4d'; it has: .*conv2d", "conv4d", {}, {}, "default", "c"
    )
    _raises(ai3.UnknownAlgorithm, r"relu layer 'r'.*unknown relu algorithm 'fast'", "relu", {}, {}, "fast", "r")


def test_output_shape_errors_name_the_layer() -> None:
    with pytest.raises(ai3.ShapeError, match=r"conv2d layer 'q': .*3 channels"):
        _core.output_shape("conv2d", {}, {"weight": [2, 4, 3, 3]}, [[1, 3, 8, 8]], "float32", "q")
    with pytest.raises(ai3.InvalidArgument, match=r"add layer 'a': takes 2 to 2 inputs, got 1"):
        _core.output_shape("add", {}, {}, [[2, 3]], "float32", "a")
    with pytest.raises(ai3.InvalidArgument, match=r"relu layer 'r': takes 1 input, got 2"):
        _core.output_shape("relu", {}, {}, [[2], [2]], "float32", "r")
    assert _core.output_shape("conv2d", {"layout": "NHWC"}, [[5, 3, 3, 3], None], [[1, 8, 8, 3]], "float64") == [
        1,
        6,
        6,
        5,
    ]


def _outcome(fn: Any) -> type | None:
    try:
        fn()
    except ai3.Error as e:
        return type(e)
    return None


@pytest.mark.parametrize(
    "op, attrs, weight_shapes",
    [
        ("conv2d", {"padding": 1}, {"weight": (8, 4, 3, 3), "bias": (8,)}),
        ("conv2d", {"stride": 2, "padding": 1}, {"weight": (8, 4, 3, 3)}),
        ("conv2d", {"dilation": 2, "layout": "NHWC"}, {"weight": (8, 4, 3, 3)}),
        ("conv2d", {"groups": 4, "padding": 2}, {"weight": (4, 1, 5, 5), "bias": (4,)}),
        ("conv2d", {"groups": 3}, {"weight": (8, 4, 3, 3)}),  # 4 channels per group do not divide 8 outputs by 3
        ("conv2d", {"stride": 0}, {"weight": (8, 4, 3, 3)}),
        ("linear", {}, {"weight": (6, 5), "bias": (6,)}),
        ("linear", {}, {"weight": (6, 5), "bias": (7,)}),
        ("layernorm", {"normalized_shape": [5]}, {"weight": (5,), "bias": (5,)}),
    ],
)
def test_check_algorithm_agrees_with_building_the_layer(op: str, attrs: dict[str, Any], weight_shapes: Any) -> None:
    """_core.check_algorithm (what "predict" asks instead of building the
    layer) raises what make_layer raises, for every algorithm and "default",
    an unknown name and parameters no algorithm or only some take."""
    rng = np.random.default_rng(0)
    weights = {k: rng.standard_normal(s).astype(np.float32) for k, s in weight_shapes.items()}
    for algorithm in [*ai3.algorithms().get(op, []), "default", "no_such_algorithm"]:
        built = _outcome(lambda: _core.make_layer(op, attrs, weights, algorithm, "l"))
        checked = _outcome(lambda: _core.check_algorithm(op, algorithm, attrs, weight_shapes, "float32", "l"))
        assert checked == built, (op, attrs, algorithm, checked, built)


def test_forms_keep_their_framework_style_arguments() -> None:
    w = np.random.default_rng(3).standard_normal((4, 2, 3, 3)).astype(np.float32)
    x = np.random.default_rng(4).standard_normal((1, 2, 6, 6)).astype(np.float32)
    same = layers.Conv2d(w, None, 1, "same", algorithm="direct", name="c", activation="relu")
    generic = layers.Layer(
        "conv2d", {"padding": [1, 1, 1, 1], "activation": [0, float("inf")]}, {"weight": w}, algorithm="direct"
    )
    np.testing.assert_array_equal(same(x), generic(x))
    assert isinstance(same, layers.Layer) and isinstance(same, layers.Conv2d)
    assert repr(same) == "ai3.layers.Conv2d(name='c', algorithm='direct')"
    assert list(__import__("inspect").signature(layers.Conv2d).parameters)[:6] == [
        "weight",
        "bias",
        "stride",
        "padding",
        "dilation",
        "groups",
    ]
    assert layers.Add().name == "add" and layers.MaxPool2d(2).output_shape((1, 1, 4, 4)) == (1, 1, 2, 2)
    with pytest.raises(TypeError):
        layers.Conv2d()


if __name__ == "__main__":
    pytest_main.run(__file__)
