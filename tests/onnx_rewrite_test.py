"""ai3.onnx in-graph swaps: torchvision models exported to ONNX, nodes
rewritten into the "ai3" domain, run in ONNX Runtime through ai3's core
against the original model in plain ONNX Runtime."""

import functools
import io
import json
import os
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import pytest_main
import torch
import torchvision

import ai3
import ai3.onnx
import ai3.onnx.graph
from ai3.onnx import session

ALL_OPS = ("conv2d", "linear", "relu", "maxpool2d", "avgpool2d", "adaptiveavgpool2d", "flatten")


def small_vgg11() -> torch.nn.Module:
    m = torchvision.models.vgg11(weights=None)
    m.avgpool = torch.nn.Identity()
    m.classifier[0] = torch.nn.Linear(512, 4096)
    return m


# name -> (constructor, input H=W)
MODELS = {
    "resnet18": (lambda: torchvision.models.resnet18(weights=None), 64),
    # At 32x32 the features end at 1x1; the adaptive pool to 7x7 would not
    # export (not a factor), so the classifier takes the 512 features.
    "vgg11": (lambda: small_vgg11(), 32),
    "squeezenet1_1": (lambda: torchvision.models.squeezenet1_1(weights=None), 64),
    "googlenet": (
        lambda: torchvision.models.googlenet(weights=None, init_weights=False, aux_logits=False),
        64,
    ),
    "densenet121": (lambda: torchvision.models.densenet121(weights=None), 64),
    "mobilenet_v2": (lambda: torchvision.models.mobilenet_v2(weights=None), 64),
    "inception_v3": (
        lambda: torchvision.models.inception_v3(weights=None, init_weights=False, aux_logits=False),
        75,
    ),
}


def export(name: str, batch: int, opset: int, **kwargs) -> tuple[bytes, np.ndarray, np.ndarray]:
    """(serialized model, an input of `batch` images, ORT's output on the
    original) for MODELS[name], exported at batch 1 (kwargs go to
    torch.onnx.export)."""
    make, size = MODELS[name]
    torch.manual_seed(0)
    module = make().eval()
    x = torch.randn(batch, 3, size, size)
    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(module, (x[:1],), buf, opset_version=opset, dynamo=False, input_names=["input"], **kwargs)
    data = buf.getvalue()
    ref = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, {"input": x.numpy()})[0]
    return data, x.numpy(), ref


@functools.cache
def exported(name: str, opset: int) -> tuple[bytes, np.ndarray, np.ndarray]:
    """(serialized model, input, ORT's output on the original)."""
    return export(name, 1, opset, output_names=["output"])


def model_of(name: str, opset: int = 17) -> onnx.ModelProto:
    return onnx.load_model_from_string(exported(name, opset)[0])


def run_and_compare(model: onnx.ModelProto, name: str, opset: int, rtol: float) -> None:
    _, x, ref = exported(name, opset)
    onnx.checker.check_model(model)
    y = ai3.onnx.InferenceSession(model).run(None, {"input": x})[0]
    assert y.shape == ref.shape
    err = np.abs(y - ref).max() / max(np.abs(ref).max(), 1e-6)
    assert err <= rtol, f"{name}: relative error {err}"


def ai3_nodes(model: onnx.ModelProto) -> list[onnx.NodeProto]:
    return [n for n in model.graph.node if n.domain == "ai3"]


def attrs_of(node: onnx.NodeProto) -> dict:
    """An ai3 node's string attributes, decoded."""
    return {a.name: onnx.helper.get_attribute_value(a).decode() for a in node.attribute}


def one_io_model(nodes: list, inits: list, x_shape: list, y_shape: list, opset: int = 17) -> onnx.ModelProto:
    """A float32 model of `nodes` and initializers `inits`, reading input
    "x" of x_shape and writing output "y" of y_shape (dims may be names)."""
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, y_shape)],
        inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def ai3_ops(model: onnx.ModelProto) -> list[str]:
    """The core op each ai3 node runs (the one node type's `op`)."""
    return [attrs_of(n)["op"] for n in ai3_nodes(model)]


def winograd_or_default(node: onnx.NodeProto) -> str:
    a = {x.name: onnx.helper.get_attribute_value(x) for x in node.attribute}
    ok = (
        list(a.get("kernel_shape", [])) == [3, 3]
        and list(a.get("strides", [1, 1])) == [1, 1]
        and list(a.get("dilations", [1, 1])) == [1, 1]
        and a.get("group", 1) == 1
    )
    return "winograd" if ok else "default"


CONV_CASES = [(name, 17) for name in MODELS] + [("resnet18", 11), ("squeezenet1_1", 11), ("inception_v3", 11)]


@pytest.mark.parametrize("name,opset", CONV_CASES)
def test_conv2d_default(name, opset):
    model = ai3.onnx.swap_conv2d(model_of(name, opset), "default")
    convs = [n for n in model_of(name, opset).graph.node if n.op_type == "Conv"]
    # One ai3 node per Conv; the pools and batch norms that read the NHWC
    # chain run as ai3's in NHWC too (see rewrite._sink_transposes).
    assert ai3_ops(model).count("conv2d") == len(convs) > 0
    assert set(ai3_ops(model)) <= {"conv2d", *ai3.onnx.rewrite._NHWC_OPS}
    run_and_compare(model, name, opset, 1e-4)


def conv_bn_activation_model(activation: str) -> onnx.ModelProto:
    """Conv -> BatchNormalization -> `activation` ("Relu", or "SiLU" written
    out as x * Sigmoid(x)) -> Conv: a pre-activation batch norm between two
    convolutions, as DenseNet's."""
    from onnx import helper, numpy_helper

    rng = np.random.default_rng(3)

    def const(name, *shape, lo=-1.0, hi=1.0):
        return numpy_helper.from_array(rng.uniform(lo, hi, shape).astype(np.float32), name)

    n = helper.make_node
    nodes = [
        n("Conv", ["x", "w1"], ["c1"], pads=[1, 1, 1, 1]),
        n("BatchNormalization", ["c1", "s", "b", "m", "v"], ["bn"], epsilon=1e-5),
    ]
    if activation == "Relu":
        nodes.append(n("Relu", ["bn"], ["act"]))
    else:
        nodes += [n("Sigmoid", ["bn"], ["sg"]), n("Mul", ["bn", "sg"], ["act"])]
    nodes.append(n("Conv", ["act", "w2"], ["y"]))
    inits = [const("w1", 6, 3, 3, 3), const("s", 6), const("b", 6), const("m", 6), const("v", 6, lo=0.5, hi=1.5)]
    inits.append(const("w2", 5, 6, 1, 1))
    return one_io_model(nodes, inits, [2, 3, 8, 8], [2, 5, 8, 8])


@pytest.mark.parametrize("activation", ["Relu", "SiLU"])
def test_conv2d_folds_the_activation_after_a_batch_norm_in_nhwc(activation):
    # The batch norm reads the NHWC chain, so it runs as ai3's layer in NHWC
    # (rewrite._sink_transposes), and the activation after it, read by
    # nothing else, is folded into it: no ORT node between the two convs.
    original = conv_bn_activation_model(activation)
    model = ai3.onnx.swap_conv2d(original, "default")
    onnx.checker.check_model(model)
    assert [n.op_type for n in model.graph.node if n.domain != "ai3"] == ["Transpose", "Transpose"]
    norms = [attrs_of(n) for n in ai3_nodes(model) if attrs_of(n)["op"] == "batchnorm2d"]
    fused = json.loads(norms[0]["attrs"]) if len(norms) == 1 else {}
    if activation == "Relu":  # a clamp to [0, inf)
        assert fused.get("activation") == [0.0, float("inf")]
    else:
        assert fused.get("activation_fn") == "silu"
    x = np.random.default_rng(4).standard_normal((2, 3, 8, 8)).astype(np.float32)
    ref = ort.InferenceSession(original.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    y = ai3.onnx.InferenceSession(model).run(None, {"x": x})[0]
    np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name", ["resnet18", "googlenet", "mobilenet_v2"])
def test_conv2d_gemm(name):
    run_and_compare(ai3.onnx.swap_conv2d(model_of(name), "gemm"), name, 17, 1e-4)


@pytest.mark.parametrize("name", ["resnet18", "vgg11", "inception_v3"])
def test_conv2d_winograd_selector(name):
    model = ai3.onnx.swap_conv2d(model_of(name), winograd_or_default)
    algos = {attrs_of(n)["algorithm"] for n in ai3_nodes(model)}
    assert "winograd" in algos
    run_and_compare(model, name, 17, 5e-3)


def test_conv2d_direct_small_model():
    run_and_compare(ai3.onnx.swap_conv2d(model_of("squeezenet1_1"), "direct"), "squeezenet1_1", 17, 1e-4)


@pytest.mark.parametrize("name", ["densenet121", "inception_v3", "resnet18"])
def test_every_op(name):
    model = model_of(name)
    for op in ALL_OPS:
        model = ai3.onnx.swap_operation(op, model, "default")
    assert {n.op_type for n in ai3_nodes(model)} <= {"Layer", "ResidualLayer"}
    assert {"conv2d", "linear", "adaptiveavgpool2d", "flatten"} <= set(ai3_ops(model))
    # Each ReLU is folded into the conv, batch norm or residual add before
    # it (inception_v3's every ReLU follows a conv, densenet121's a conv or
    # a batch norm, resnet18's a conv or a residual add), so none is left
    # for swap_relu.
    assert "Relu" not in {n.op_type for n in model.graph.node}
    assert "relu" not in ai3_ops(model)
    run_and_compare(model, name, 17, 1e-4)


def test_each_swap_function():
    for op in ALL_OPS:
        model = getattr(ai3.onnx, f"swap_{op}")(model_of("densenet121"))
        assert ai3_nodes(model), op
        run_and_compare(model, "densenet121", 17, 1e-4)


def test_attributes_and_opset():
    original = model_of("resnet18")
    model = ai3.onnx.swap_conv2d(original, "gemm", layout="NCHW")
    assert any(o.domain == "ai3" and o.version == 1 for o in model.opset_import)
    first = ai3_nodes(model)[0]
    orig = next(n for n in original.graph.node if n.op_type == "Conv")
    assert first.op_type == "Layer" and first.name == orig.name
    # The stem's ReLU is folded in: the node ends where that ReLU did.
    relu = next(n for n in original.graph.node if n.op_type == "Relu")
    assert list(relu.input) == list(orig.output)
    assert list(first.output) == list(relu.output) and first.input[0] == orig.input[0]
    a = attrs_of(first)
    assert a["op"] == "conv2d" and a["algorithm"] == "gemm"
    # The core's attributes, as JSON: ONNX pads [t, l, b, r] as (top, bottom, left, right).
    core = json.loads(a["attrs"])
    assert core["padding"] == [3, 3, 3, 3] and core["stride"] == [2, 2] and core["dilation"] == [1, 1]
    assert core["groups"] == 1 and core["activation"] == [0.0, float("inf")]
    # W holds the 7x7 weight (the export has no conv bias: batch norms folded in by torch, bias null).
    weights = dict((name, shape) for name, shape in json.loads(a["weights"]))
    assert weights["weight"] == [64, 3, 7, 7]
    w = next(t for t in model.graph.initializer if t.name == first.input[1])
    assert list(w.dims) == [64 * 3 * 7 * 7 + (64 if weights.get("bias") else 0)]


def test_nhwc_layout_transposes_only_at_the_ends():
    # The default layout: convs run NHWC; the Transposes around them move
    # past the residual adds and ReLUs and cancel, and the pools that read
    # the chain become ai3's NHWC pools, leaving Transposes only at the
    # chain's ends.
    original = model_of("resnet18")
    model = ai3.onnx.swap_conv2d(original, "gemm")
    convs = [n for n in ai3_nodes(model) if attrs_of(n)["op"] == "conv2d"]
    assert convs and all(json.loads(attrs_of(n)["attrs"])["layout"] == "NHWC" for n in convs)
    transposes = [n for n in model.graph.node if n.op_type == "Transpose"]
    assert 0 < len(transposes) <= 6, len(transposes)
    assert "maxpool2d" in ai3_ops(model)  # the stem's pool reads the chain: ai3's, in NHWC
    onnx.checker.check_model(model)
    run_and_compare(model, "resnet18", 17, 1e-4)
    # Shapes stay declared, so a second rewrite of the result still maps.
    pooled = ai3.onnx.swap_adaptiveavgpool2d(model)
    assert "adaptiveavgpool2d" in ai3_ops(pooled)
    run_and_compare(pooled, "resnet18", 17, 1e-4)


def test_keep_and_sequence_selectors():
    original = model_of("squeezenet1_1")
    convs = [n for n in original.graph.node if n.op_type == "Conv"]
    names = ["keep" if i % 2 else "gemm" for i in range(len(convs))]
    model = ai3.onnx.swap_conv2d(original, names)
    assert ai3_ops(model).count("conv2d") == (len(convs) + 1) // 2
    run_and_compare(model, "squeezenet1_1", 17, 1e-4)
    assert not ai3_nodes(ai3.onnx.swap_conv2d(original, "torch"))


def test_selector_gets_node_and_shape():
    seen = []

    def pick(node, shape):
        seen.append((node.op_type, shape))
        return "default"

    # The shape the layer runs on: NHWC under the default layout.
    ai3.onnx.swap_conv2d(model_of("resnet18"), pick)  # the export's input shape is static
    assert seen and all(t == "Conv" and len(s) == 4 for t, s in seen)
    assert seen[0][1] == (1, 64, 64, 3)
    seen.clear()
    ai3.onnx.swap_conv2d(model_of("resnet18"), pick, sample_input_shape=(2, 3, 96, 96), layout="NCHW")
    assert seen[0][1] == (2, 3, 96, 96)


def test_original_unchanged_and_path_input(tmp_path):
    original = model_of("resnet18")
    before = original.SerializeToString()
    ai3.onnx.swap_conv2d(original, "gemm")
    ai3.onnx.swap_relu(original)
    assert original.SerializeToString() == before
    path = tmp_path / "resnet18.onnx"
    onnx.save(original, str(path))
    model = ai3.onnx.swap_conv2d(str(path), "default")
    assert ai3_nodes(model)
    assert path.read_bytes() == before


def test_save_and_run_in_fresh_process(tmp_path):
    model = ai3.onnx.swap_conv2d(model_of("resnet18"), winograd_or_default)
    model = ai3.onnx.swap_relu(model)
    onnx.checker.check_model(model)
    path = tmp_path / "rewritten.onnx"
    onnx.save(model, str(path))
    reloaded = onnx.load(str(path))
    onnx.checker.check_model(reloaded)
    _, x, ref = exported("resnet18", 17)
    np.save(tmp_path / "x.npy", x)
    script = textwrap.dedent(
        f"""
        import numpy as np, ai3.onnx
        sess = ai3.onnx.InferenceSession({str(path)!r})
        y = sess.run(None, {{"input": np.load({str(tmp_path / "x.npy")!r})}})[0]
        np.save({str(tmp_path / "y.npy")!r}, y)
        """
    )
    package_dir = os.path.dirname(os.path.dirname(ai3.__file__))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([package_dir, os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    y = np.load(tmp_path / "y.npy")
    assert np.abs(y - ref).max() / np.abs(ref).max() <= 5e-3


def test_unknown_op():
    with pytest.raises(ai3.UnsupportedOperation):
        ai3.onnx.swap_operation("conv4d", model_of("resnet18"))


def test_bad_selectors():
    model = model_of("resnet18")
    with pytest.raises(ai3.InvalidSelector):
        ai3.onnx.swap_conv2d(model, 42)
    with pytest.raises(ai3.InvalidSelector):
        ai3.onnx.swap_conv2d(model, ["gemm"])
    with pytest.raises(ai3.InvalidSelector):
        ai3.onnx.swap_conv2d(model, lambda node: 7)
    with pytest.raises(ai3.UnknownAlgorithm):
        ai3.onnx.swap_conv2d(model, "nope")
    with pytest.raises(ai3.InvalidSelector):
        ai3.onnx.swap_conv2d(model, lambda node: 1 / 0)


def test_bad_model_argument():
    with pytest.raises(ai3.Error):
        ai3.onnx.swap_conv2d("/nonexistent/model.onnx")
    with pytest.raises(ai3.Error):
        ai3.onnx.swap_conv2d(12345)


def test_bad_run_inputs_are_errors_not_crashes():
    _, x, _ = exported("resnet18", 17)
    sess = ai3.onnx.InferenceSession(ai3.onnx.swap_conv2d(model_of("resnet18"), "gemm"))
    for feed in (
        {"wrong_name": x},
        {"input": x[:, :, :32, :32]},
        {"input": x.astype(np.float64)},
    ):
        # ONNX Runtime's own error types (a wrong name or dtype) or ai3's (a
        # wrong shape inside an ai3 node): any Python error, not a crash.
        with pytest.raises(Exception):  # noqa: B017
            sess.run(None, feed)
    assert sess.run(None, {"input": x})[0].shape == (1, 1000)


def test_core_error_surfaces_as_ai3_error():
    # winograd cannot take a 7x7 convolution: the core refuses when the
    # native op builds the layer, i.e. when ORT creates the node's kernel
    # with the session, which raises it naming the node.
    with pytest.raises(ai3.AlgorithmNotApplicable) as info:
        ai3.onnx.InferenceSession(ai3.onnx.swap_conv2d(model_of("resnet18"), "winograd"))
    assert "ONNX node '/conv1/Conv'" in str(info.value)


def test_dynamic_batch():
    data, x, ref = export("squeezenet1_1", 3, 17, dynamic_axes={"input": {0: "batch"}})
    model = ai3.onnx.swap_conv2d(data, "gemm")
    sess = ai3.onnx.InferenceSession(model)
    for batch in (3, 1):
        y = sess.run(None, {"input": x[:batch]})[0]
        np.testing.assert_allclose(y, ref[:batch], rtol=1e-4, atol=1e-4 * np.abs(ref).max())


class _Mlp(torch.nn.Module):
    """nn.Linear on a rank-3 input exports as MatMul + Add."""

    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(16, 32)
        self.b = torch.nn.Linear(32, 8, bias=False)
        self.c = torch.nn.Linear(40, 3)

    def forward(self, x):
        return self.c(self.b(torch.relu(self.a(x))).flatten(1))


def test_matmul_add_and_gemm_as_linear():
    torch.manual_seed(0)
    x = torch.randn(2, 5, 16)
    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(_Mlp().eval(), (x,), buf, opset_version=17, dynamo=False, input_names=["input"])
    original = onnx.load_model_from_string(buf.getvalue())
    ref = ort.InferenceSession(buf.getvalue(), providers=["CPUExecutionProvider"]).run(None, {"input": x.numpy()})[0]
    seen = []
    model = ai3.onnx.swap_linear(original, lambda node: seen.append(node.op_type) or "default")
    # The mapping's linear: a MatMul by a 2-D constant (with its bias Add), any rank; a Gemm.
    assert seen == ["MatMul", "MatMul", "Gemm"]
    kinds = [(n.domain, n.op_type) for n in model.graph.node]
    assert ai3_ops(model).count("linear") == 3 and ("", "Add") not in kinds and ("", "MatMul") not in kinds
    onnx.checker.check_model(model)
    y = ai3.onnx.InferenceSession(model).run(None, {"input": x.numpy()})[0]
    np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-5)


def test_session_options_reuse_and_plain_ort():
    model = ai3.onnx.swap_conv2d(model_of("squeezenet1_1"), "gemm")
    _, x, ref = exported("squeezenet1_1", 17)
    so = ai3.onnx.session_options()
    assert ai3.onnx.session_options(so) is so  # registering twice would fail at session creation
    for sess in (
        ai3.onnx.InferenceSession(model, so),
        ai3.onnx.InferenceSession(model.SerializeToString(), so),
        ort.InferenceSession(model.SerializeToString(), ai3.onnx.session_options(), providers=["CPUExecutionProvider"]),
    ):
        y = sess.run(None, {"input": x})[0]
        assert np.abs(y - ref).max() <= 1e-4 * np.abs(ref).max()
    # A failing ai3 op inside a plain ORT session: no crash, an error or an empty result.
    bad = ort.InferenceSession(
        ai3.onnx.swap_conv2d(model_of("squeezenet1_1"), "winograd").SerializeToString(),
        ai3.onnx.session_options(),
        providers=["CPUExecutionProvider"],
    )
    try:
        out = bad.run(None, {"input": x})[0]
        assert out.size != ref.size
    except Exception as e:
        assert not isinstance(e, ai3.Error)


@pytest.mark.parametrize("auto_pad", ["SAME_UPPER", "SAME_LOWER", "VALID"])
def test_auto_pad(auto_pad):
    from onnx import helper, numpy_helper

    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "w")
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], name="conv", auto_pad=auto_pad, strides=[2, 2]),
        helper.make_node("MaxPool", ["c"], ["p"], name="pool", auto_pad=auto_pad, kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("AveragePool", ["p"], ["y"], name="avg", auto_pad=auto_pad, kernel_shape=[3, 3]),
    ]
    original = one_io_model(nodes, [w], [1, 3, 19, 20], [1, 4, "h", "w"])
    x = rng.standard_normal((1, 3, 19, 20)).astype(np.float32)
    ref = ort.InferenceSession(original.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    model = original
    for op in ("conv2d", "maxpool2d", "avgpool2d"):
        model = ai3.onnx.swap_operation(op, model, "default")
    assert len(ai3_nodes(model)) == 3
    y = ai3.onnx.InferenceSession(model).run(None, {"x": x})[0]
    np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-5)


def single_layer_ops_model() -> onnx.ModelProto:
    """A chain through every ONNX op the mapping turns into one core layer
    of one input (opset 20, for Gelu)."""
    from onnx import helper, numpy_helper

    rng = np.random.default_rng(0)

    def const(name, *shape):
        return numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32), name)

    inits = [
        const("w", 6, 4, 3, 3),
        const("cb", 6),
        const("s", 6),
        const("b", 6),
        const("m", 6),
        numpy_helper.from_array(rng.uniform(0.5, 1.5, 6).astype(np.float32), "v"),
        const("k", 1, 6, 1, 1),
        const("ln_s", 8),
        const("ln_b", 8),
        const("gw", 8, 5),
        const("gb", 5),
        const("mw", 5, 7),
        const("mb", 7),
        numpy_helper.from_array(np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64), "pads"),
        numpy_helper.from_array(np.array([-1.0], np.float32), "lo"),
        numpy_helper.from_array(np.array([1.0], np.float32), "hi"),
        numpy_helper.from_array(np.array([1], np.int64), "s0"),
        numpy_helper.from_array(np.array([5], np.int64), "s1"),
        numpy_helper.from_array(np.array([3], np.int64), "sa"),
        numpy_helper.from_array(np.array([0, -1], np.int64), "shape"),
    ]
    n = helper.make_node
    nodes = [
        n("Conv", ["x", "w", "cb"], ["c"], pads=[1, 1, 1, 1]),
        n("BatchNormalization", ["c", "s", "b", "m", "v"], ["bn"]),
        n("Relu", ["bn"], ["r"]),
        n("Pad", ["r", "pads"], ["p"]),
        n("MaxPool", ["p"], ["mp"], kernel_shape=[2, 2], strides=[1, 1]),
        n("AveragePool", ["mp"], ["ap"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], count_include_pad=1),
        n("Mul", ["ap", "k"], ["mul"]),
        n("Sigmoid", ["mul"], ["sg"]),
        n("Tanh", ["sg"], ["th0"]),
        n("LeakyRelu", ["th0"], ["th"], alpha=0.2),
        n("HardSwish", ["th"], ["hs"]),
        n("HardSigmoid", ["hs"], ["hsg"], alpha=0.3),
        n("Clip", ["hsg", "lo", "hi"], ["cl"]),
        n("Transpose", ["cl"], ["tr"], perm=[0, 1, 3, 2]),
        n("Slice", ["tr", "s0", "s1", "sa"], ["sl"]),
        n("Gelu", ["sl"], ["ge"]),
        n("GlobalMaxPool", ["ge"], ["gmp"]),
        n("Sub", ["ge", "gmp"], ["sub"]),  # two tensors: not a single-input layer
        n("GlobalAveragePool", ["sub"], ["gap"]),
        n("Flatten", ["gap"], ["f"]),
        n("Softmax", ["f"], ["sm"]),
        n("Reshape", ["sm", "shape"], ["rs"]),
        n("Gemm", ["rs", "gw", "gb"], ["gm"], transB=0),
        n("LogSoftmax", ["gm"], ["ls"]),
        n("MatMul", ["ls", "mw"], ["mm"]),
        n("Add", ["mm", "mb"], ["y"]),
    ]
    # (Gemm reads 8 features: make the Flatten's 6 channels 8 with a wider conv.)
    inits[0] = const("w", 8, 4, 3, 3)
    for i, name in ((1, "cb"), (2, "s"), (3, "b"), (4, "m")):
        inits[i] = const(name, 8)
    inits[5] = numpy_helper.from_array(rng.uniform(0.5, 1.5, 8).astype(np.float32), "v")
    inits[6] = const("k", 1, 8, 1, 1)
    nodes.insert(20, n("LayerNormalization", ["f", "ln_s", "ln_b"], ["ln"]))
    nodes[21] = n("Softmax", ["ln"], ["sm"])
    return one_io_model(nodes, inits, [2, 4, 9, 9], [2, 7], opset=20)


def test_every_single_layer_op_matches_ort():
    original = single_layer_ops_model()
    onnx.checker.check_model(original)
    x = np.random.default_rng(1).standard_normal((2, 4, 9, 9)).astype(np.float32)
    ref = ort.InferenceSession(original.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    specs = ai3.onnx.graph.map_nodes(original).specs
    # (identity: a Reshape that keeps the shape; the pipeline drops it, it is no layer)
    ops = sorted({s.op for s in specs if len(s.inputs) == 1} - {ai3.onnx.graph.EXTERNAL, "identity"})
    assert {
        "conv2d",
        "batchnorm2d",
        "relu",
        "pad2d",
        "maxpool2d",
        "avgpool2d",
        "mul",
        "sigmoid",
        "tanh",
        "leaky_relu",
        "hardswish",
        "hardsigmoid",
        "clamp",
        "permute",
        "slice",
        "gelu",
        "adaptiveavgpool2d",
        "flatten",
        "layernorm",
        "softmax",
        "linear",
        "log_softmax",
    } <= set(ops)
    everything = original
    for op in ops:
        model = ai3.onnx.swap_operation(op, original, "default")
        assert ai3_ops(model).count(op) == sum(s.op == op and len(s.inputs) == 1 for s in specs), op
        onnx.checker.check_model(model)
        y = ai3.onnx.InferenceSession(model).run(None, {"x": x})[0]
        np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-5, err_msg=op)
        everything = ai3.onnx.swap_operation(op, everything, "default")
    # ORT keeps the shape-keeping Reshape (an identity to ai3). The
    # two-tensor Sub of [N,H,W,C] by [N,1,1,C] reads the NHWC chain, so it
    # runs as ai3's broadcasting sub (_sink_transposes).
    assert [(n.domain, n.op_type) for n in everything.graph.node if n.domain != "ai3"] == [
        (ai3.onnx.rewrite.NATIVE_DOMAIN, "MultiLayer"),
        ("", "Reshape"),
    ]
    y = ai3.onnx.InferenceSession(everything).run(None, {"x": x})[0]
    np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name", ["resnet18", "mobilenet_v2", "densenet121"])
def test_partition_whole_model_is_one_node(name):
    model = ai3.onnx.partition(model_of(name), "default")
    assert [(n.domain, n.op_type) for n in model.graph.node] == [("ai3", "Layer")]
    assert ai3_ops(model) == ["model"]
    run_and_compare(model, name, 17, 1e-4)
    # The file runs in plain ORT too.
    _, x, ref = exported(name, 17)
    plain = ort.InferenceSession(
        model.SerializeToString(), ai3.onnx.session_options(), providers=["CPUExecutionProvider"]
    )
    np.testing.assert_allclose(plain.run(None, {"input": x})[0], ref, rtol=1e-4, atol=1e-4 * np.abs(ref).max())


def test_partition_splits_around_an_unsupported_op():
    from onnx import helper, numpy_helper

    rng = np.random.default_rng(0)
    inits = [
        numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "w1"),
        numpy_helper.from_array(rng.standard_normal((4, 4, 1, 1)).astype(np.float32), "w2"),
    ]
    nodes = [
        helper.make_node("Conv", ["x", "w1"], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("Round", ["r1"], ["s"]),  # no core op: ORT's
        helper.make_node("Conv", ["s", "w2"], ["c2"]),
        helper.make_node("Relu", ["c2"], ["y"]),
    ]
    original = one_io_model(nodes, inits, [1, 3, 8, 8], [1, 4, 8, 8])
    model = ai3.onnx.partition(original, {"conv2d": "gemm"})
    assert [(n.domain, n.op_type) for n in model.graph.node] == [
        ("ai3", "Layer"),
        ("", "Round"),
        ("ai3", "Layer"),
    ]
    x = rng.standard_normal((1, 3, 8, 8)).astype(np.float32)
    ref = ort.InferenceSession(original.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    session.clear_cache()
    held = ai3.onnx.InferenceSession(model)  # its regions' models stay cached while it lives
    y = held.run(None, {"x": x})[0]
    np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-5)
    # Each region's ai3.Model is built for the region's input shape, as
    # swap_backend's is for its sample shape (what lets "auto" time the
    # whole-model layout and fusion candidates).
    assert sorted(m.sample_input_shape for m in session._cache.values()) == [(1, 3, 8, 8), (1, 4, 8, 8)]
    with pytest.raises(ai3.InvalidSelector):
        ai3.onnx.partition(original, lambda node: "gemm")


@pytest.mark.parametrize("name", ["mobilenet_v2", "resnet18"])
def test_swap_conv2d_folds_the_activation_after_a_conv(name):
    # A conv's ReLU / Clip(0, 6) read by nothing else becomes the ai3 node's
    # epilogue (ai3.fusion's rule), so it is not an ORT node after it.
    original = model_of(name)
    model = ai3.onnx.swap_conv2d(original, "default")
    kinds = [n.op_type for n in model.graph.node]
    fused = [json.loads(attrs_of(n)["attrs"]).get("activation") for n in ai3_nodes(model)]
    if name == "mobilenet_v2":  # every Clip follows a conv
        assert "Clip" not in kinds and fused.count([0.0, 6.0]) == 35
    else:  # the stem's and each block's first ReLU; each Add and the ReLU after it join the conv before the Add
        assert "Relu" not in kinds and "Add" not in kinds and sum(a is not None for a in fused) == 9
        assert [attrs_of(n)["after"] for n in ai3_nodes(model) if n.op_type == "ResidualLayer"] == ["relu"] * 8
    run_and_compare(model, name, 17, 1e-4)


def runs_like_ort(original: onnx.ModelProto, model: onnx.ModelProto, x: np.ndarray, runs: int = 1) -> None:
    """The rewritten `model` gives ORT's result for the original on x (fed as
    "x"): `runs` times in an ai3.onnx.InferenceSession (the native ops), and
    in a plain ORT session given ai3.onnx.session_options() (the Python op
    for "ai3" nodes)."""
    feed = {"x": x}
    want = ort.InferenceSession(original.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feed)[0]
    native = ai3.onnx.InferenceSession(model)
    for _ in range(runs):
        np.testing.assert_allclose(native.run(None, feed)[0], want, rtol=1e-4, atol=1e-5)
    plain = ort.InferenceSession(
        model.SerializeToString(), ai3.onnx.session_options(), providers=["CPUExecutionProvider"]
    )
    np.testing.assert_allclose(plain.run(None, feed)[0], want, rtol=1e-4, atol=1e-5)


def residual_model() -> onnx.ModelProto:
    """Three residual adds over 1x1 and 3x3 convs of 6 channels:
    r1 = relu(conv_b(c1) + c1), c1 = conv_a(x)   (the conv's Add, then its Relu)
    r2 = conv_p(r1) + conv_q(r1)                 (two convs: the later one takes the Add)
    y  = conv_z(r2 + s), s of shape (1, 6, 1, 1) (a broadcast: stays ORT's)"""
    from onnx import helper, numpy_helper

    rng = np.random.default_rng(5)

    def const(name, *shape):
        return numpy_helper.from_array(rng.uniform(-0.5, 0.5, shape).astype(np.float32), name)

    n = helper.make_node
    nodes = [
        n("Conv", ["x", "wa"], ["c1"], pads=[1, 1, 1, 1]),
        n("Conv", ["c1", "wb", "bb"], ["c2"], pads=[1, 1, 1, 1]),
        n("Add", ["c2", "c1"], ["a1"]),
        n("Relu", ["a1"], ["r1"]),
        n("Conv", ["r1", "wp"], ["p"]),
        n("Conv", ["r1", "wq"], ["q"], pads=[1, 1, 1, 1]),
        n("Add", ["p", "q"], ["r2"]),
        n("Add", ["r2", "s"], ["r3"]),
        n("Conv", ["r3", "wz"], ["y"]),
    ]
    inits = [const("wa", 6, 3, 3, 3), const("wb", 6, 6, 3, 3), const("bb", 6), const("wp", 6, 6, 1, 1)]
    inits += [const("wq", 6, 6, 3, 3), const("s", 1, 6, 1, 1), const("wz", 4, 6, 1, 1)]
    return one_io_model(nodes, inits, [2, 3, 7, 7], [2, 4, 7, 7])


@pytest.mark.parametrize("layout", ["NHWC", "NCHW"])
@pytest.mark.parametrize("algorithm", ["guess", "direct", "gemm"])
def test_swap_conv2d_folds_residual_adds_into_the_conv_before(algorithm, layout):
    # An Add that alone reads a conv's result (and the Relu after it) runs
    # inside the conv's node: a "guess" conv adds into R in its own kernel
    # (oneDNN's sum post-op), other algorithms add R in one pass after. The
    # same results through the native op, the Python op, and ORT's own graph.
    original = residual_model()
    model = ai3.onnx.swap_conv2d(original, algorithm, layout=layout)
    onnx.checker.check_model(model)
    residual = [n for n in ai3_nodes(model) if n.op_type == "ResidualLayer"]
    # (R by its NCHW name: in NHWC it is "<name>/ai3_nhwc".)
    assert [(n.input[2].split("/")[0], attrs_of(n)["after"]) for n in residual] == [("c1", "relu"), ("p", "")]
    assert [n.op_type for n in model.graph.node if n.domain != "ai3"].count("Add") == 1  # the broadcast
    assert "Relu" not in [n.op_type for n in model.graph.node]
    x = np.random.default_rng(6).standard_normal((2, 3, 7, 7)).astype(np.float32)
    assert {n.domain for n in session._prepare(model)[0].graph.node if n.op_type == "ResidualLayer"} == {
        session.NATIVE_DOMAIN
    }
    runs_like_ort(original, model, x, runs=2)  # a second run: the same


def concat_model() -> onnx.ModelProto:
    """Two convs of x (4 and 5 channels) joined along the channels with x
    itself, then a 1x1 conv: an Inception / DenseNet block's join."""
    from onnx import helper, numpy_helper

    rng = np.random.default_rng(7)
    inits = [
        numpy_helper.from_array(rng.uniform(-0.5, 0.5, shape).astype(np.float32), name)
        for name, shape in (("wa", (4, 3, 3, 3)), ("wb", (5, 3, 1, 1)), ("wz", (2, 12, 1, 1)))
    ]
    n = helper.make_node
    nodes = [
        n("Conv", ["x", "wa"], ["a"], pads=[1, 1, 1, 1]),
        n("Conv", ["x", "wb"], ["b"]),
        n("Concat", ["a", "x", "b"], ["c"], axis=1),
        n("Conv", ["c", "wz"], ["y"]),
    ]
    return one_io_model(nodes, inits, [2, 3, 5, 6], [2, 2, 5, 6])


@pytest.mark.parametrize("layout", ["NHWC", "NCHW"])
def test_nhwc_channel_concat_runs_as_ai3s(layout):
    # In the NHWC chain a channel concat joins short rows (one per pixel and
    # input), ai3's concat's case: it becomes ai3.native::Concat on the last
    # axis, which every session with ai3's libraries runs. In NCHW it stays
    # ORT's.
    original = concat_model()
    model = ai3.onnx.swap_conv2d(original, "default", layout=layout)
    onnx.checker.check_model(model)
    concats = [(n.domain, n.attribute[0].i) for n in model.graph.node if n.op_type == "Concat"]
    assert concats == ([(ai3.onnx.rewrite.NATIVE_DOMAIN, 3)] if layout == "NHWC" else [("", 1)])
    x = np.random.default_rng(8).standard_normal((2, 3, 5, 6)).astype(np.float32)
    runs_like_ort(original, model, x)


def squeeze_excitation_model() -> onnx.ModelProto:
    """conv -> squeeze-excitation (global pool, 1x1 conv, sigmoid, Mul of
    the conv's [N,C,H,W] by [N,C,1,1]) -> conv, as EfficientNet's blocks."""
    from onnx import helper, numpy_helper

    rng = np.random.default_rng(9)
    inits = [
        numpy_helper.from_array(rng.uniform(-0.5, 0.5, shape).astype(np.float32), name)
        for name, shape in (("wa", (6, 3, 3, 3)), ("ws", (6, 6, 1, 1)), ("wz", (4, 6, 1, 1)))
    ]
    n = helper.make_node
    nodes = [
        n("Conv", ["x", "wa"], ["c"], pads=[1, 1, 1, 1]),
        n("GlobalAveragePool", ["c"], ["p"]),
        n("Conv", ["p", "ws"], ["s"]),
        n("Sigmoid", ["s"], ["g"]),
        n("Mul", ["c", "g"], ["m"]),
        n("Conv", ["m", "wz"], ["y"]),
    ]
    return one_io_model(nodes, inits, [2, 3, 5, 6], [2, 4, 5, 6])


@pytest.mark.parametrize("layout", ["NHWC", "NCHW"])
def test_nhwc_broadcasting_mul_runs_as_ai3s(layout):
    # The squeeze-excitation Mul of [N,H,W,C] by [N,1,1,C] in the NHWC chain
    # becomes ai3's mul layer (ai3.native::MultiLayer); in NCHW it stays ORT's.
    original = squeeze_excitation_model()
    model = ai3.onnx.swap_conv2d(original, "default", layout=layout)
    onnx.checker.check_model(model)
    muls = [(n.domain, n.op_type) for n in model.graph.node if n.op_type in ("Mul", "MultiLayer")]
    assert muls == ([(ai3.onnx.rewrite.NATIVE_DOMAIN, "MultiLayer")] if layout == "NHWC" else [("", "Mul")])
    x = np.random.default_rng(10).standard_normal((2, 3, 5, 6)).astype(np.float32)
    runs_like_ort(original, model, x)


def native_node_model(node: onnx.NodeProto) -> onnx.ModelProto:
    """A model of one ai3 native node reading inputs "a" and "b" (4-D, any
    shape) and writing "y"."""
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info(v, TensorProto.FLOAT, ["n", "h", "w", "c"]) for v in "ab"],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    return helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(ai3.onnx.rewrite.NATIVE_DOMAIN, 1)]
    )


def test_native_multi_input_layer_errors_are_ai3_errors():
    # ai3.native::MultiLayer: a shape the layer refuses fails the run with
    # the core's error naming the node; an op the core lacks fails the
    # session's creation.
    from onnx import helper

    def model(op):
        return native_node_model(
            helper.make_node(
                "MultiLayer", ["a", "b"], ["y"], name="scale", domain=ai3.onnx.rewrite.NATIVE_DOMAIN,
                op=op, attrs="{}", algorithm="default", node="scale",
            )
        )  # fmt: skip

    sess = ai3.onnx.InferenceSession(model("mul"))
    a = np.full((1, 2, 3, 4), 3, np.float32)
    np.testing.assert_array_equal(sess.run(None, {"a": a, "b": np.full((1, 1, 1, 4), 2, np.float32)})[0], 6)
    with pytest.raises(ai3.ShapeError, match="ONNX node 'scale'"):
        sess.run(None, {"a": a, "b": a[:, :, :2, :3]})
    with pytest.raises(ai3.UnsupportedOperation):
        ai3.onnx.InferenceSession(model("no_such_op"))


def test_native_concat_of_mismatched_inputs_is_an_ai3_error():
    from onnx import helper

    node = helper.make_node("Concat", ["a", "b"], ["y"], name="join", domain=ai3.onnx.rewrite.NATIVE_DOMAIN, axis=-1)
    sess = ai3.onnx.InferenceSession(native_node_model(node))
    a = np.ones((1, 2, 3, 4), np.float32)
    np.testing.assert_array_equal(sess.run(None, {"a": a, "b": 2 * a[..., :1]})[0][..., 4], 2)
    with pytest.raises(ai3.ShapeError, match="ONNX node 'join'.*may differ along axis 3 only"):
        sess.run(None, {"a": a, "b": a[:, :, :2]})


def test_residual_node_with_a_wrong_residual_is_an_ai3_error():
    # A ResidualLayer whose R does not match the layer's output (a hand-edited
    # model) fails the run with the core's error naming the node, in both ops.
    from onnx import helper

    model = ai3.onnx.swap_conv2d(residual_model(), "default", layout="NCHW")
    node = next(n for n in model.graph.node if n.op_type == "ResidualLayer")
    node.input[2] = "x"  # (2, 3, 7, 7) against the conv's (2, 6, 7, 7)
    del model.graph.value_info[:]
    x = np.zeros((2, 3, 7, 7), np.float32)
    with pytest.raises(ai3.ShapeError, match="residual R"):
        ai3.onnx.InferenceSession(model).run(None, {"x": x})
    fed = onnx.ModelProto()
    fed.CopyFrom(model)
    fed.graph.input.append(helper.make_tensor_value_info(node.input[1], onnx.TensorProto.FLOAT, None))
    with pytest.raises(ai3.ShapeError, match="residual R"):  # W fed: the Python op
        ai3.onnx.InferenceSession(fed).run(None, {"x": x})


def _one_conv_any_channels() -> onnx.ModelProto:
    """A 1x1 Conv 4 -> 4 whose input's dims are all symbolic, so ORT passes
    an input of any channel count on to the node."""
    from onnx import helper, numpy_helper

    w = numpy_helper.from_array(np.full((4, 4, 1, 1), 0.25, np.float32), "w")
    return one_io_model(
        [helper.make_node("Conv", ["x", "w"], ["y"], name="conv", kernel_shape=[1, 1])],
        [w],
        ["n", "c", "h", "w"],
        ["n", 4, "h", "w"],
    )


def test_bad_input_to_a_prepared_node_is_an_ai3_error():
    # In an ai3.onnx.InferenceSession the node runs as the native op, its
    # layer built when the session is made; a wrong input then is still the
    # core's ai3 error naming the node, and the node keeps working.
    original = _one_conv_any_channels()
    sess = ai3.onnx.InferenceSession(ai3.onnx.swap_conv2d(original, "default", sample_input_shape=[1, 4, 8, 8]))
    ref_sess = ort.InferenceSession(original.SerializeToString(), providers=["CPUExecutionProvider"])
    x = np.random.default_rng(0).standard_normal((1, 4, 8, 8)).astype(np.float32)
    np.testing.assert_allclose(sess.run(None, {"x": x})[0], ref_sess.run(None, {"x": x})[0], rtol=1e-5, atol=1e-6)
    with pytest.raises(ai3.ShapeError, match="ONNX node 'conv'"):
        sess.run(None, {"x": x[:, :3]})
    np.testing.assert_allclose(sess.run(None, {"x": x})[0], ref_sess.run(None, {"x": x})[0], rtol=1e-5, atol=1e-6)


def test_native_op_takes_single_layers_with_constant_weights():
    # ai3.onnx.InferenceSession hands each single-layer node with a constant
    # W to the native op (_ort_ops.so); a region node, and a node whose W a
    # caller may feed (an initializer that is also a graph input), stay the
    # Python op. Every route gives ORT's result.
    from onnx import helper, numpy_helper

    original = _one_conv_any_channels()
    model = ai3.onnx.swap_conv2d(original, "default", sample_input_shape=[1, 4, 8, 8])
    prepared, _ = session._prepare(model)
    assert [n.domain for n in prepared.graph.node if n.op_type == "Layer"] == [session.NATIVE_DOMAIN]
    x = np.random.default_rng(2).standard_normal((2, 4, 6, 6)).astype(np.float32)
    want = ort.InferenceSession(original.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    np.testing.assert_allclose(ai3.onnx.InferenceSession(model).run(None, {"x": x})[0], want, rtol=1e-5, atol=1e-6)

    fed = onnx.ModelProto()
    fed.CopyFrom(model)
    w = next(n for n in fed.graph.node if n.op_type == "Layer").input[1]
    init = next(t for t in fed.graph.initializer if t.name == w)
    fed.graph.input.append(helper.make_tensor_value_info(w, onnx.TensorProto.FLOAT, list(init.dims)))
    prepared, _ = session._prepare(fed)
    assert [n.domain for n in prepared.graph.node if n.op_type == "Layer"] == [ai3.onnx.rewrite.DOMAIN]
    sess = ai3.onnx.InferenceSession(fed)
    np.testing.assert_allclose(sess.run(None, {"x": x})[0], want, rtol=1e-5, atol=1e-6)
    twice = 2 * numpy_helper.to_array(init)
    np.testing.assert_allclose(sess.run(None, {"x": x, w: twice})[0], 2 * want, rtol=1e-5, atol=1e-6)

    region = ai3.onnx.partition(original, {"conv2d": "default"}, sample_input_shape=[1, 4, 8, 8])
    prepared, held = session._prepare(region)
    assert [n.domain for n in prepared.graph.node] == [ai3.onnx.rewrite.DOMAIN] and len(held) == 1


def _conv_then_matmul(columns: int) -> onnx.ModelProto:
    """conv (16 -> 16, 3x3, on 1x16x32x32) -> conv -> reshape to 512 rows
    of 32 -> MatMul by a 32 x `columns` weight: ORT's one product after
    ai3's two convs, of 2 * 512 * 32 * columns FLOPs."""
    from onnx import helper, numpy_helper

    rng = np.random.default_rng(0)
    w = [numpy_helper.from_array(rng.standard_normal((16, 16, 3, 3)).astype(np.float32), f"w{k}") for k in (0, 1)]
    m = numpy_helper.from_array(rng.standard_normal((32, columns)).astype(np.float32), "m")
    rows = numpy_helper.from_array(np.asarray([-1, 32], np.int64), "rows")
    nodes = [
        helper.make_node("Conv", ["x", "w0"], ["c0"], pads=[1] * 4, name="conv0"),
        helper.make_node("Conv", ["c0", "w1"], ["c1"], pads=[1] * 4, name="conv1"),
        helper.make_node("Reshape", ["c1", "rows"], ["r"]),
        helper.make_node("MatMul", ["r", "m"], ["y"]),
    ]
    return one_io_model(nodes, [*w, m, rows], [1, 16, 32, 32], [512, columns])


@pytest.mark.parametrize("columns,yields", [(4096, True), (4, False)])  # 134 and 0.1 MFLOP
def test_native_nodes_yield_their_threads_before_heavy_ort_work(columns, yields):
    """A native node whose following ORT work (up to the next ai3 node) is
    at least YIELD_MIN_FLOPS gives its OpenMP threads back (yield_threads);
    conv0, followed by ai3's conv1, never does. Results are ORT's either way."""
    original = _conv_then_matmul(columns)
    model = ai3.onnx.swap_conv2d(original, "default", sample_input_shape=[1, 16, 32, 32], layout="NCHW")
    prepared, _ = session._prepare(model)
    marked = {n.name: any(a.name == session.YIELD_THREADS for a in n.attribute) for n in prepared.graph.node}
    layer_names = [n.name for n in prepared.graph.node if n.domain == session.NATIVE_DOMAIN]
    assert [marked[name] for name in layer_names] == [False, yields]
    x = np.random.default_rng(1).standard_normal((1, 16, 32, 32)).astype(np.float32)
    want = ort.InferenceSession(original.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    sess = ai3.onnx.InferenceSession(model)
    # Outputs reach ~2000 while some are near 0: ai3's and ORT's float32 sums
    # in another order differ there by ~1e-6 of the largest (1.5e-3 seen on
    # an AVX2 EPYC), so the absolute tolerance scales with the output.
    atol = 1e-5 * float(np.abs(want).max())
    for _ in range(2):  # the second run makes the yielded threads again
        np.testing.assert_allclose(sess.run(None, {"x": x})[0], want, rtol=1e-4, atol=atol)


def test_python_op_without_a_held_session_still_runs():
    # The portable path: a plain onnxruntime.InferenceSession over the
    # rewritten file (W copied into every call, layers cached by node key
    # and a fingerprint of W), beside an ai3.onnx.InferenceSession of the
    # same file, whose nodes are bound; edited weights give new layers.
    from onnx import numpy_helper

    original = _one_conv_any_channels()
    model = ai3.onnx.swap_conv2d(original, "default", sample_input_shape=[1, 4, 8, 8])
    x = np.random.default_rng(1).standard_normal((2, 4, 5, 5)).astype(np.float32)
    want = ort.InferenceSession(original.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    held = ai3.onnx.InferenceSession(model)
    plain = ort.InferenceSession(
        model.SerializeToString(), ai3.onnx.session_options(), providers=["CPUExecutionProvider"]
    )
    for sess in (held, plain, held):
        np.testing.assert_allclose(sess.run(None, {"x": x})[0], want, rtol=1e-5, atol=1e-6)
    w = model.graph.initializer[0]
    w.CopyFrom(numpy_helper.from_array(2 * numpy_helper.to_array(w), w.name))
    edited = ort.InferenceSession(
        model.SerializeToString(), ai3.onnx.session_options(), providers=["CPUExecutionProvider"]
    )
    np.testing.assert_allclose(edited.run(None, {"x": x})[0], 2 * want, rtol=1e-5, atol=1e-6)
    # A layer without weights: its W is empty in every session.
    relu = ai3.onnx.swap_relu(model_of("resnet18"))
    _, x, ref = exported("resnet18", 17)
    plain = ort.InferenceSession(
        relu.SerializeToString(), ai3.onnx.session_options(), providers=["CPUExecutionProvider"]
    )
    np.testing.assert_allclose(plain.run(None, {"input": x})[0], ref, rtol=1e-4, atol=1e-4 * np.abs(ref).max())


if __name__ == "__main__":
    pytest_main.run(__file__)
