"""Fused activations: a conv2d / linear with a ReLU, ReLU6 or clamp in its
epilogue gives what the unfused pair gives, for every algorithm; and
ai3.Model folds such layers (after a folded BatchNorm too) only where that
is exact."""

from __future__ import annotations

import functools

import numpy as np
import pytest
import pytest_main
import torch
import torch.nn.functional as F

import ai3
from ai3 import fusion
from ai3.spec import MODEL_INPUT, LayerSpec

ACTIVATIONS = {"relu": (0.0, float("inf")), "relu6": (0.0, 6.0), "clamp": (-0.5, 0.75)}
CONV_ALGORITHMS = [a for a in ai3.algorithms()["conv2d"] if a != "custom"]
LINEAR_ALGORITHMS = [a for a in ai3.algorithms()["linear"] if a != "custom"]


def _clamp(y: torch.Tensor, bounds: tuple[float, float]) -> torch.Tensor:
    return y.clamp(bounds[0], None if bounds[1] == float("inf") else bounds[1])


# Both layouts: "guess" fuses through a oneDNN post-op where the chosen
# implementation is a JIT kernel (NHWC here) and clamps itself where it is
# gemm-based (NCHW).
@pytest.mark.parametrize(
    "algorithm, layout",
    [(a, layout) for a in CONV_ALGORITHMS for layout in ("NCHW", "NHWC")],
)
@pytest.mark.parametrize("activation", ["relu", "relu6", (-0.5, 0.75)])
def test_conv2d_fused_matches_unfused(algorithm, layout, activation) -> None:
    torch.manual_seed(0)
    x = torch.randn(2, 8, 10, 9) * 2
    w = torch.randn(12, 8, 3, 3)
    b = torch.randn(12)
    bounds = ACTIVATIONS.get(activation, activation) if isinstance(activation, str) else tuple(activation)
    xin = x if layout == "NCHW" else x.permute(0, 2, 3, 1).contiguous()

    def run(layer):
        y = layer(xin)
        return y if layout == "NCHW" else y.permute(0, 3, 1, 2)

    plain = ai3.layers.Conv2d(w, b, padding=1, algorithm=algorithm, layout=layout)
    fused = ai3.layers.Conv2d(w, b, padding=1, algorithm=algorithm, layout=layout, activation=activation)
    unfused = _clamp(run(plain), bounds)
    torch.testing.assert_close(run(fused), unfused, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(run(fused), _clamp(F.conv2d(x, w, b, padding=1), bounds), atol=1e-3, rtol=1e-3)


@pytest.mark.parametrize("algorithm", LINEAR_ALGORITHMS)
def test_linear_fused_matches_unfused(algorithm) -> None:
    torch.manual_seed(1)
    x = torch.randn(5, 33)
    w = torch.randn(17, 33)
    b = torch.randn(17)
    for activation in ("relu", "relu6", (-1.0, 2.0)):
        bounds = ACTIVATIONS[activation] if isinstance(activation, str) else activation
        fused = ai3.layers.Linear(w, b, algorithm=algorithm, activation=activation)
        torch.testing.assert_close(fused(x), _clamp(F.linear(x, w, b), bounds), atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("bad", ["gelu", (1.0, 0.0), (float("nan"), 1.0), (1.0,)])
def test_bad_activation_is_refused(bad) -> None:
    with pytest.raises(ai3.InvalidArgument, match="layer 'c'.*activation"):
        ai3.layers.Conv2d(torch.randn(2, 2, 1, 1), activation=bad, name="c")


class Net(torch.nn.Module):
    """conv-bn-relu, conv-relu6, a conv whose output a relu and the residual
    add both read (not fusable), and linear-relu."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.bn1 = torch.nn.BatchNorm2d(8)
        self.conv2 = torch.nn.Conv2d(8, 8, 3, padding=1, bias=False)
        self.conv3 = torch.nn.Conv2d(8, 8, 1)
        self.fc1 = torch.nn.Linear(8 * 6 * 6, 16)
        self.fc2 = torch.nn.Linear(16, 4)

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)))
        x = F.relu6(self.conv2(x))
        y = self.conv3(x)
        x = F.relu(y) + y
        x = torch.flatten(x, 1)
        return self.fc2(F.relu(self.fc1(x)))


@pytest.mark.parametrize("algorithm", ["default", "direct", "implicit gemm", "smm"])
def test_model_fuses_where_exact(algorithm) -> None:
    torch.manual_seed(2)
    net = Net().eval()
    with torch.no_grad():  # a batch norm that is not the identity
        net.bn1.running_mean.uniform_(-1, 1)
        net.bn1.running_var.uniform_(0.5, 2)
    x = torch.randn(2, 3, 6, 6)
    with torch.inference_mode():
        want = net(x)
    model = ai3.swap_backend(net, {"conv2d": algorithm})
    torch.testing.assert_close(model(x), want, atol=1e-4, rtol=1e-4)
    listing = model.layers()
    ops = [op for _, op, _ in listing]
    # bn1 folds into conv1; relu into conv1, relu6 into conv2, relu into fc1.
    # conv3 is read by the relu and the add, so that relu stays.
    assert "batchnorm2d" not in ops
    assert ops.count("relu") == 1 and "clamp" not in ops, ops
    assert ops.count("conv2d") == 3 and ops.count("linear") == 2


def _spec(name, op, inputs, **attrs) -> LayerSpec:
    return LayerSpec(name=name, op=op, inputs=inputs, attrs=attrs)


def test_pass_keeps_algorithms_and_output() -> None:
    specs = [
        _spec("c0", "conv2d", [MODEL_INPUT]),
        _spec("r0", "relu", [0]),
        _spec("c1", "conv2d", [1]),
        _spec("r1", "clamp", [2], min=0.0, max=6.0),
        _spec("c2", "conv2d", [3]),  # "custom": its relu stays
        _spec("r2", "relu", [4]),
        _spec("c3", "linear", [5]),
        _spec("r3", "clamp", [6], min=2.0, max=1.0),  # crossed bounds: torch's semantics kept
    ]
    chosen = {0: "gemm", 1: "direct", 2: "smm", 3: "direct", 4: "custom", 5: "direct", 6: "gemm", 7: "direct"}
    out, output, algos = fusion.fuse_activations(specs, 7, chosen)
    assert [s.name for s in out] == ["c0", "c1", "c2", "r2", "c3", "r3"]
    assert output == 5
    assert algos == {0: "gemm", 1: "smm", 2: "custom", 3: "direct", 4: "gemm", 5: "direct"}
    assert out[0].attrs["activation"] == (0.0, float("inf"))
    assert out[1].attrs["activation"] == (0.0, 6.0) and out[1].inputs == [0]
    assert "activation" not in out[2].attrs and "activation" not in out[4].attrs


def test_activation_as_the_output_is_fused() -> None:
    specs = [_spec("c", "conv2d", [MODEL_INPUT]), _spec("r", "relu", [0])]
    out, output, algos = fusion.fuse_activations(specs, 1, {0: "direct", 1: "direct"})
    assert [s.name for s in out] == ["c"] and output == 0 and algos == {0: "direct"}


def test_numpy_model_same_result_with_and_without_fusion() -> None:
    """The same network with the ReLU fused (swap_backend) and run as
    separate core layers gives the same numbers."""
    torch.manual_seed(3)
    conv = torch.nn.Conv2d(4, 6, 3, padding=1)
    net = torch.nn.Sequential(conv, torch.nn.ReLU()).eval()
    x = np.random.default_rng(0).standard_normal((1, 4, 7, 7)).astype(np.float32)
    fused = ai3.swap_backend(net, {"conv2d": "winograd"})
    assert [op for _, op, _ in fused.layers()] == ["conv2d"]
    layer = ai3.layers.Conv2d(conv.weight.detach(), conv.bias.detach(), padding=1, algorithm="winograd")
    relu = ai3.layers.ReLU()
    np.testing.assert_allclose(fused(x), relu(layer(x)), atol=1e-5, rtol=1e-5)


# The functions the CPU epilogues apply before the clamp (activation_fn),
# against torch's own.
FUNCTIONS = {
    "silu": F.silu,
    "sigmoid": torch.sigmoid,
    "hardswish": F.hardswish,
    "gelu": F.gelu,
    "gelu_tanh": functools.partial(F.gelu, approximate="tanh"),
}


@pytest.mark.parametrize(
    "algorithm, layout",
    [(a, layout) for a in CONV_ALGORITHMS for layout in ("NCHW", "NHWC")],
)
@pytest.mark.parametrize("function", sorted(FUNCTIONS))
def test_conv2d_fused_function_matches_torch(algorithm, layout, function) -> None:
    torch.manual_seed(4)
    # Values across HardSwish's kinks (-3, 3) and SiLU's saturation.
    x = torch.randn(2, 8, 10, 9) * 2
    w = torch.randn(12, 8, 3, 3) * 0.5
    b = torch.randn(12)
    xin = x if layout == "NCHW" else x.permute(0, 2, 3, 1).contiguous()
    attrs = {"padding": [1, 1, 1, 1], "layout": layout, "activation_fn": function}
    layer = ai3.layers.Layer("conv2d", attrs, {"weight": w, "bias": b}, algorithm=algorithm)
    y = torch.as_tensor(np.asarray(layer(xin)))
    y = y if layout == "NCHW" else y.permute(0, 3, 1, 2)
    torch.testing.assert_close(y, FUNCTIONS[function](F.conv2d(x, w, b, padding=1)), atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("algorithm", LINEAR_ALGORITHMS)
@pytest.mark.parametrize("function", sorted(FUNCTIONS))
def test_linear_fused_function_matches_torch(algorithm, function) -> None:
    torch.manual_seed(5)
    x = torch.randn(5, 33)
    w = torch.randn(17, 33) * 0.5
    b = torch.randn(17)
    layer = ai3.layers.Layer("linear", {"activation_fn": function}, {"weight": w, "bias": b}, algorithm=algorithm)
    want = FUNCTIONS[function](F.linear(x, w, b))
    torch.testing.assert_close(torch.as_tensor(np.asarray(layer(x))), want, atol=1e-4, rtol=1e-4)


def test_fused_function_then_clamp() -> None:
    """activation_fn runs before the activation clamp: y = clamp(fn(x))."""
    torch.manual_seed(6)
    x = torch.randn(1, 4, 6, 6) * 3
    w = torch.randn(5, 4, 1, 1)
    attrs = {"activation_fn": "hardswish", "activation": [-0.2, 0.5]}
    layer = ai3.layers.Layer("conv2d", attrs, {"weight": w}, algorithm="direct")
    want = F.hardswish(F.conv2d(x, w)).clamp(-0.2, 0.5)
    torch.testing.assert_close(torch.as_tensor(np.asarray(layer(x))), want, atol=1e-5, rtol=1e-5)


def test_bad_activation_fn_is_refused() -> None:
    with pytest.raises(ai3.Error, match="activation_fn"):
        ai3.layers.Layer("conv2d", {"activation_fn": "mish"}, {"weight": torch.randn(2, 2, 1, 1)}, name="c")


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_transformer_mlp_fuses_gelu_into_its_linear(approximate) -> None:
    """A transformer MLP (linear -> GELU -> linear, as ViT's and ConvNeXt's)
    runs as two linears, the first with the GELU in its epilogue, in
    either of GELU's forms, with torch's result."""
    torch.manual_seed(8)
    net = torch.nn.Sequential(
        torch.nn.Linear(24, 96), torch.nn.GELU(approximate=approximate), torch.nn.Linear(96, 24)
    ).eval()
    x = torch.randn(3, 7, 24) * 2
    for algorithm in LINEAR_ALGORITHMS:
        model = ai3.swap_backend(net, {"linear": algorithm}, sample_input_shape=(3, 7, 24))
        assert [op for _, op, _ in model.layers()] == ["linear", "linear"], algorithm
        with torch.no_grad():
            want = net(x)
        torch.testing.assert_close(torch.as_tensor(np.asarray(model(x.numpy()))), want, atol=1e-4, rtol=1e-4)


class GatedNet(torch.nn.Module):
    """EfficientNet / MobileNetV3 in small: conv-bn-silu, a squeeze-excite
    gate (conv-silu, conv-sigmoid, mul), conv-hardswish, a conv whose output
    a silu and the residual add both read (not fusable), linear-silu."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.bn1 = torch.nn.BatchNorm2d(8)
        self.se1 = torch.nn.Conv2d(8, 4, 1)
        self.se2 = torch.nn.Conv2d(4, 8, 1)
        self.conv2 = torch.nn.Conv2d(8, 8, 3, padding=1, groups=8)
        self.conv3 = torch.nn.Conv2d(8, 8, 1)
        self.fc = torch.nn.Linear(8 * 6 * 6, 16)

    def forward(self, x):
        x = F.silu(self.bn1(self.conv1(x)))
        s = torch.sigmoid(self.se2(F.silu(self.se1(F.adaptive_avg_pool2d(x, 1)))))
        x = x * s
        x = F.hardswish(self.conv2(x))
        y = self.conv3(x)
        x = F.silu(y) + y
        return F.silu(self.fc(torch.flatten(x, 1)))


@pytest.mark.parametrize("algorithm", ["default", "direct", "implicit gemm", "smm", "guess"])
def test_model_fuses_functions_where_exact(algorithm) -> None:
    torch.manual_seed(7)
    net = GatedNet().eval()
    with torch.no_grad():
        net.bn1.running_mean.uniform_(-1, 1)
        net.bn1.running_var.uniform_(0.5, 2)
    x = torch.randn(2, 3, 6, 6) * 2
    with torch.inference_mode():
        want = net(x)
    model = ai3.swap_backend(net, {"conv2d": algorithm})
    torch.testing.assert_close(model(x), want, atol=1e-4, rtol=1e-4)
    ops = [op for _, op, _ in model.layers()]
    # Every silu / sigmoid / hardswish folds into its conv / linear but the
    # silu of conv3, which the residual add reads too.
    assert "batchnorm2d" not in ops and "sigmoid" not in ops and "hardswish" not in ops, ops
    assert ops.count("silu") == 1 and ops.count("conv2d") == 5 and ops.count("linear") == 1, ops


def test_functions_fuse_on_cpu_only_and_not_twice() -> None:
    specs = [
        _spec("c0", "conv2d", [MODEL_INPUT]),
        _spec("s0", "silu", [0]),
        _spec("c1", "linear", [1]),
        _spec("r1", "relu", [2]),
        _spec("h1", "hardswish", [3]),  # its producer was fused away: stays
    ]
    chosen = {i: "direct" for i in range(5)}
    out, output, _ = fusion.fuse_activations(
        [LayerSpec(s.name, s.op, list(s.inputs), dict(s.attrs)) for s in specs], 4, dict(chosen)
    )
    assert [s.name for s in out] == ["c0", "c1", "h1"] and output == 2
    assert out[0].attrs["activation_fn"] == "silu" and "activation" not in out[0].attrs
    assert out[1].attrs["activation"] == (0.0, float("inf"))
    gpu, _, _ = fusion.fuse_activations(
        [LayerSpec(s.name, s.op, list(s.inputs), dict(s.attrs)) for s in specs], 4, dict(chosen), device="cuda"
    )
    assert [s.name for s in gpu] == ["c0", "s0", "c1", "h1"]  # the relu still fuses


class PreActivation(torch.nn.Module):
    """DenseNet's pattern: batch norms with no conv before them, each read
    by a ReLU / ReLU6 alone (they fuse), and one also read by the concat
    (its ReLU stays)."""

    def __init__(self) -> None:
        super().__init__()
        self.bn1 = torch.nn.BatchNorm2d(4)
        self.conv = torch.nn.Conv2d(4, 6, 3, padding=1)
        self.bn2 = torch.nn.BatchNorm2d(10)
        self.bn3 = torch.nn.BatchNorm2d(10)

    def forward(self, x):
        y = self.conv(F.relu(self.bn1(x)))
        z = torch.cat([x, y], 1)
        b = self.bn3(z)
        return torch.cat([F.relu6(self.bn2(z)), F.relu(b), b], 1)


def _randomise_batchnorms(net: torch.nn.Module) -> None:
    with torch.no_grad():  # batch norms that are not the identity
        for m in net.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.uniform_(-1, 1)
                m.running_var.uniform_(0.5, 2)
                m.weight.uniform_(-1.5, 1.5)
                m.bias.uniform_(-1, 1)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_batchnorm_fuses_the_activation_after_it(dtype, monkeypatch) -> None:
    torch.manual_seed(9)
    net = PreActivation().eval().to(dtype)
    _randomise_batchnorms(net)
    x = torch.randn(2, 4, 7, 6, dtype=dtype) * 2
    with torch.inference_mode():
        want = net(x)
    tol = 1e-5 if dtype == torch.float32 else 1e-12
    model = ai3.swap_backend(net, {"conv2d": "direct"}, dtype=dtype)
    torch.testing.assert_close(model(x), want, atol=tol, rtol=tol)
    ops = [op for _, op, _ in model.layers() if op != "permute"]
    assert ops.count("batchnorm2d") == 3 and ops.count("relu") == 1 and "clamp" not in ops, ops
    # The same model with batchnorm2d taking no activation: the same numbers.
    monkeypatch.setattr(fusion, "FUSABLE_PRODUCERS", ("conv2d", "linear"))
    unfused = ai3.swap_backend(net, {"conv2d": "direct"}, dtype=dtype)
    assert [op for _, op, _ in unfused.layers()].count("relu") == 2
    torch.testing.assert_close(model(x), unfused(x), atol=tol, rtol=tol)


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("activation, function", [((0.0, 6.0), "identity"), (None, "silu"), ((-0.5, 0.25), "sigmoid")])
def test_batchnorm_layer_activation_matches_torch(layout, activation, function) -> None:
    torch.manual_seed(10)
    bn = torch.nn.BatchNorm2d(5).eval()
    _randomise_batchnorms(bn)
    x = torch.randn(2, 5, 6, 7) * 3
    with torch.inference_mode():
        y = bn(x)
    y = FUNCTIONS.get(function, lambda v: v)(y)
    if activation is not None:
        y = y.clamp(*activation)
    weights = [t.detach().numpy() for t in (bn.weight, bn.bias, bn.running_mean, bn.running_var)]
    attrs = {"eps": bn.eps, "layout": layout, "activation": activation, "activation_fn": function}
    layer = ai3._core.make_layer("batchnorm2d", attrs, weights, "direct", "bn")
    xin = x if layout == "NCHW" else x.permute(0, 2, 3, 1).contiguous()
    got = torch.from_numpy(np.asarray(layer(xin.numpy())))
    got = got if layout == "NCHW" else got.permute(0, 3, 1, 2)
    torch.testing.assert_close(got, y, atol=1e-5, rtol=1e-5)


def test_batchnorm_gradients_refuse_an_activation() -> None:
    weights = [np.ones(3, np.float32), np.zeros(3, np.float32), np.zeros(3, np.float32), np.ones(3, np.float32)]
    with pytest.raises(ai3.Error, match="no fused activation"):
        ai3._core.make_layer("batchnorm2d_backward_data", {"activation": (0.0, float("inf"))}, weights, "direct", "bn")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_densenet_block_concats_without_copies(dtype) -> None:
    """torchvision's densenet121 (weights=None): at batch 1 in NCHW ("keep")
    each dense block's concats write into one buffer (core/graph.h), and in
    NHWC (the default plan, float32) they copy, applying the batchnorm (and
    ReLU) that reads each; both give torch's numbers and the
    numbers of the same model with the core's graph fusions off, as does
    batch 2 (where a channel slice is strided and nothing is placed). One
    trace (the slow part) serves both plans and batches."""
    import copy

    import torchvision

    from ai3 import model as ai3_model
    from ai3.frontend import prepare_specs
    from ai3.torch import fx

    torch.manual_seed(11)
    tdtype = torch.float64 if dtype == np.float64 else torch.float32
    net = torchvision.models.densenet121(weights=None).eval().to(tdtype)
    _randomise_batchnorms(net)
    tol = 2e-4 if dtype == np.float32 else 1e-10
    shape = (1, 3, 32, 32)
    specs, output, _ = fx.to_specs(net, shape)
    specs, output = prepare_specs(specs, output, "NCHW")
    for plan in ("keep", None):
        model = ai3_model.build(
            copy.deepcopy(specs),
            output,
            {"conv2d": "default"},
            dtype=dtype,
            layout="NCHW",
            sample_input_shape=shape,
            layout_plan=plan,
        )
        ops = [op for _, op, _ in model.layers()]
        assert "relu" not in ops, ops  # every BN -> ReLU is one layer
        for batch in (1, 2):
            x = np.random.default_rng(batch).standard_normal((batch,) + shape[1:]).astype(dtype)
            with torch.inference_mode():
                want = net(torch.from_numpy(x)).numpy()
            model._core.set_fusion(True)
            got = np.asarray(model(x))
            np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
            # DenseNet has no residual adds: every fused node is a concat's
            # input or a concat taken into the next; each of the 58 dense
            # layers' features is one (and each block's first input).
            # (The classifier's flatten reads the pool's buffer as a view.)
            fused = [i for i in range(len(model._core)) if model._core.fused_into(i) >= 0]
            placed = sum(ops[i] not in ("batchnorm2d", "flatten") for i in fused)
            # (float64 keeps NCHW in the default plan too; in NHWC the last
            # block, at 1x1 pixels here, has contiguous channel slices.)
            in_nchw = "permute" not in ops
            assert placed == 0 if batch == 2 else placed >= 58 or not in_nchw, (plan, batch, placed)
            # In NHWC the concats copy, and each one's BN -> ReLU (the one
            # reader) is folded into that copy: 58 dense layers, 3
            # transitions and the final norm; at batch 1 the last block's 16
            # and the final norm read concats placed without copies instead.
            folded = sum(ops[i] == "batchnorm2d" for i in fused)
            assert folded == (0 if in_nchw else 62 if batch == 2 else 45), (plan, batch, folded)
            model._core.set_fusion(False)
            np.testing.assert_array_equal(np.asarray(model(x)), got)


def test_onnx_silu_as_sigmoid_and_mul_matches_ort() -> None:
    """An ONNX Conv -> Sigmoid -> Mul (how torch exports SiLU) run by
    ai3.onnx.swap_backend: the frontend reads a silu, which fuses into the
    conv; ONNX Runtime's numbers."""
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(8)
    w = rng.standard_normal((6, 3, 3, 3)).astype(np.float32)
    b = rng.standard_normal(6).astype(np.float32)
    graph = helper.make_graph(
        [
            helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
            helper.make_node("Sigmoid", ["c"], ["s"]),
            helper.make_node("Mul", ["c", "s"], ["y"]),
        ],
        "silu",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 6, 8, 8])],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    x = (rng.standard_normal((1, 3, 8, 8)) * 2).astype(np.float32)
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    backend = ai3.onnx.swap_backend(onnx.load_from_string(model.SerializeToString()), {"conv2d": "direct"})
    # (the layout pass may run the conv in NHWC between two permutes)
    assert [op for _, op, _ in backend.layers() if op != "permute"] == ["conv2d"]
    np.testing.assert_allclose(np.asarray(backend(x)), want, atol=1e-4, rtol=1e-4)


if __name__ == "__main__":
    pytest_main.run(__file__)
