"""ai3.onnx in-graph swaps: torchvision models exported to ONNX, nodes
rewritten into the "ai3" domain, run in ONNX Runtime through ai3's core
against the original model in plain ONNX Runtime."""

import functools
import io
import os
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch
import torchvision

import ai3
import ai3.onnx
import pytest_main

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


@functools.lru_cache(maxsize=None)
def exported(name: str, opset: int) -> tuple[bytes, np.ndarray, np.ndarray]:
    """(serialized model, input, ORT's output on the original)."""
    make, size = MODELS[name]
    torch.manual_seed(0)
    module = make().eval()
    x = torch.randn(1, 3, size, size)
    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(module, (x,), buf, opset_version=opset, dynamo=False,
                          input_names=["input"], output_names=["output"])
    data = buf.getvalue()
    ref = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, {"input": x.numpy()})[0]
    return data, x.numpy(), ref


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
    assert len(ai3_nodes(model)) == len(convs) > 0
    run_and_compare(model, name, opset, 1e-4)


@pytest.mark.parametrize("name", ["resnet18", "googlenet", "mobilenet_v2"])
def test_conv2d_gemm(name):
    run_and_compare(ai3.onnx.swap_conv2d(model_of(name), "gemm"), name, 17, 1e-4)


@pytest.mark.parametrize("name", ["resnet18", "vgg11", "inception_v3"])
def test_conv2d_winograd_selector(name):
    model = ai3.onnx.swap_conv2d(model_of(name), winograd_or_default)
    algos = {onnx.helper.get_attribute_value(a) for n in ai3_nodes(model) for a in n.attribute if a.name == "algorithm"}
    assert b"winograd" in algos
    run_and_compare(model, name, 17, 5e-3)


def test_conv2d_direct_small_model():
    run_and_compare(ai3.onnx.swap_conv2d(model_of("squeezenet1_1"), "direct"), "squeezenet1_1", 17, 1e-4)


@pytest.mark.parametrize("name", ["densenet121", "inception_v3", "resnet18"])
def test_every_op(name):
    model = model_of(name)
    for op in ALL_OPS:
        model = ai3.onnx.swap_operation(op, model, "default")
    kinds = {n.op_type for n in ai3_nodes(model)}
    assert {"Conv2D", "ReLU", "Linear", "GlobalAvgPool2D", "Flatten"} <= kinds
    run_and_compare(model, name, 17, 1e-4)


def test_each_swap_function():
    for op in ALL_OPS:
        model = getattr(ai3.onnx, f"swap_{op}")(model_of("densenet121"))
        assert ai3_nodes(model), op
        run_and_compare(model, "densenet121", 17, 1e-4)


def test_attributes_and_opset():
    original = model_of("resnet18")
    model = ai3.onnx.swap_conv2d(original, "gemm")
    assert any(o.domain == "ai3" and o.version == 1 for o in model.opset_import)
    first = ai3_nodes(model)[0]
    orig = next(n for n in original.graph.node if n.op_type == "Conv")
    assert first.op_type == "Conv2D" and first.name == orig.name
    assert list(first.output) == list(orig.output) and list(first.input[:2]) == list(orig.input[:2])
    a = {x.name: onnx.helper.get_attribute_value(x) for x in first.attribute}
    assert a["algorithm"] == b"gemm" and a["pads"] == b"3,3,3,3" and a["strides"] == b"2,2"
    assert a["kernel_shape"] == b"7,7" and a["dilations"] == b"1,1" and a["group"] == 1


def test_keep_and_sequence_selectors():
    original = model_of("squeezenet1_1")
    convs = [n for n in original.graph.node if n.op_type == "Conv"]
    names = ["keep" if i % 2 else "gemm" for i in range(len(convs))]
    model = ai3.onnx.swap_conv2d(original, names)
    assert len(ai3_nodes(model)) == (len(convs) + 1) // 2
    run_and_compare(model, "squeezenet1_1", 17, 1e-4)
    assert not ai3_nodes(ai3.onnx.swap_conv2d(original, "torch"))


def test_selector_gets_node_and_shape():
    seen = []

    def pick(node, shape):
        seen.append((node.op_type, shape))
        return "default"

    ai3.onnx.swap_conv2d(model_of("resnet18"), pick)  # the export's input shape is static
    assert seen and all(t == "Conv" and len(s) == 4 for t, s in seen)
    assert seen[0][1] == (1, 3, 64, 64)
    seen.clear()
    ai3.onnx.swap_conv2d(model_of("resnet18"), pick, sample_input_shape=(2, 3, 96, 96))
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
        y = sess.run(None, {{"input": np.load({str(tmp_path / 'x.npy')!r})}})[0]
        np.save({str(tmp_path / 'y.npy')!r}, y)
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
        ai3.onnx.swap_operation("conv3d", model_of("resnet18"))


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
        with pytest.raises(Exception):
            sess.run(None, feed)
    assert sess.run(None, {"input": x})[0].shape == (1, 1000)


def test_core_error_surfaces_as_ai3_error():
    # winograd cannot take a stride-2 convolution: the core refuses when the
    # layer is built inside the custom op; run() raises it naming the node.
    sess = ai3.onnx.InferenceSession(ai3.onnx.swap_conv2d(model_of("resnet18"), "winograd"))
    _, x, _ = exported("resnet18", 17)
    with pytest.raises(ai3.Error) as info:
        sess.run(None, {"input": x})
    assert "ONNX node" in str(info.value)


def test_dynamic_batch():
    make, size = MODELS["squeezenet1_1"]
    torch.manual_seed(0)
    module = make().eval()
    x = torch.randn(3, 3, size, size)
    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(module, (x[:1],), buf, opset_version=17, dynamo=False, input_names=["input"],
                          dynamic_axes={"input": {0: "batch"}})
    ref = ort.InferenceSession(buf.getvalue(), providers=["CPUExecutionProvider"]).run(None, {"input": x.numpy()})[0]
    model = ai3.onnx.swap_conv2d(buf.getvalue(), "gemm")
    sess = ai3.onnx.InferenceSession(model)
    for batch in (3, 1):
        y = sess.run(None, {"input": x.numpy()[:batch]})[0]
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
    assert seen == ["MatMul", "Gemm"]  # the bias-free MatMul is not a candidate
    kinds = [(n.domain, n.op_type) for n in model.graph.node]
    assert kinds.count(("ai3", "Linear")) == 2 and ("", "Add") not in kinds and ("", "MatMul") in kinds
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
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "w")
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], name="conv", auto_pad=auto_pad, strides=[2, 2]),
        helper.make_node("MaxPool", ["c"], ["p"], name="pool", auto_pad=auto_pad, kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("AveragePool", ["p"], ["y"], name="avg", auto_pad=auto_pad, kernel_shape=[3, 3]),
    ]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 19, 20])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, "h", "w"])], [w],
    )
    original = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    x = rng.standard_normal((1, 3, 19, 20)).astype(np.float32)
    ref = ort.InferenceSession(original.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    model = original
    for op in ("conv2d", "maxpool2d", "avgpool2d"):
        model = ai3.onnx.swap_operation(op, model, "default")
    assert len(ai3_nodes(model)) == 3
    y = ai3.onnx.InferenceSession(model).run(None, {"x": x})[0]
    np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-5)


if __name__ == "__main__":
    pytest_main.run(__file__)
