"""The core's whole-network Model (ai3._core.Model) and the batchnorm2d op,
against the same computations in torch: a residual CNN, an Inception-style
concat block, batchnorm in both layouts and dtypes, layer sharing and
lifetime, repeated and concurrent calls, and the errors a malformed graph or
input must raise, naming the node."""

from __future__ import annotations

import gc
import threading

import numpy as np
import pytest
import pytest_main
import torch
import torch.nn.functional as F
from tolerances import DTYPES
from tolerances import tolerance as tol

import ai3
from ai3 import _core

torch.set_num_threads(2)

IN = _core.MODEL_INPUT


def assert_close(got, want: torch.Tensor, dtype: torch.dtype) -> None:
    got = torch.as_tensor(got)
    assert tuple(got.shape) == tuple(want.shape)
    assert got.dtype == want.dtype
    torch.testing.assert_close(got, want, atol=tol(dtype), rtol=tol(dtype))


def bn_params(c: int, dtype: torch.dtype, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    weight = torch.randn(c, generator=g, dtype=dtype)
    bias = torch.randn(c, generator=g, dtype=dtype)
    mean = torch.randn(c, generator=g, dtype=dtype)
    var = torch.rand(c, generator=g, dtype=dtype) + 0.5
    return weight, bias, mean, var


# ---- batchnorm2d -------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("shape", [(2, 3, 5, 7), (1, 64, 28, 28), (0, 4, 3, 3)])
def test_batchnorm2d_matches_torch(dtype, layout, shape) -> None:
    c = shape[1]
    weight, bias, mean, var = bn_params(c, dtype)
    x = torch.randn(*shape, dtype=dtype)
    want = F.batch_norm(x, mean, var, weight, bias, training=False, eps=1e-3)
    bn = ai3.layers.BatchNorm2d(weight, bias, mean, var, 1e-3, layout=layout, name="bn")
    assert bn.op == "batchnorm2d" and bn.algorithm == "direct" and bn.name == "bn"
    if layout == "NHWC":
        got = bn(x.permute(0, 2, 3, 1).contiguous()).permute(0, 3, 1, 2)
    else:
        got = bn(x)
    assert_close(got, want, dtype)


def test_batchnorm2d_without_affine_and_core_signature() -> None:
    _, _, mean, var = bn_params(5, torch.float32, seed=3)
    x = torch.randn(2, 5, 4, 4)
    want = F.batch_norm(x, mean, var, None, None, training=False)
    assert_close(ai3.layers.BatchNorm2d(None, None, mean, var)(x), want, torch.float32)
    core = _core.make_layer(
        "batchnorm2d",
        dict(eps=1e-5, layout="NCHW"),
        dict(
            weight=np.ones(5, np.float32),
            bias=np.zeros(5, np.float32),
            running_mean=mean.numpy(),
            running_var=var.numpy(),
        ),
        algorithm="default",
        name="bn",
    )
    assert_close(core(x.numpy()), want, torch.float32)


def test_batchnorm2d_errors() -> None:
    w, b, m, v = bn_params(4, torch.float32)
    with pytest.raises(ai3.ShapeError, match=r"batchnorm2d layer 'bn1'.*running_var has shape \(3,\), expected \(4,\)"):
        ai3.layers.BatchNorm2d(w, b, m, v[:3], name="bn1")
    with pytest.raises(ai3.DTypeError, match=r"'bn1'.*bias is float64, layer is float32"):
        ai3.layers.BatchNorm2d(w, b.double(), m, v, name="bn1")
    with pytest.raises(ai3.InvalidArgument, match="eps"):
        ai3.layers.BatchNorm2d(w, b, m, v, -1.0)
    bn = ai3.layers.BatchNorm2d(w, b, m, v, name="bn2")
    with pytest.raises(ai3.ShapeError, match=r"'bn2'.*has 3 channels, the layer expects 4"):
        bn(torch.randn(1, 3, 2, 2))
    with pytest.raises(ai3.ShapeError, match=r"'bn2'.*rank 2 or more"):
        bn(torch.randn(4))
    with pytest.raises(ai3.AlgorithmNotApplicable, match="custom_algos/batchnorm2d.cc"):
        ai3.layers.BatchNorm2d(w, b, m, v, algorithm="custom")


# ---- A residual CNN ------------------------------------------------------------


class ResidualNet:
    """conv-bn-relu, a basic residual block (its ReLU object used twice),
    pooling and a classifier: built once in ai3 and computed in torch."""

    def __init__(self, dtype: torch.dtype, algorithm: str = "default"):
        g = torch.Generator().manual_seed(7)
        r = lambda *s: torch.randn(*s, generator=g, dtype=dtype) * 0.3  # noqa: E731
        self.dtype = dtype
        self.w0, self.b0 = r(8, 3, 3, 3), r(8)
        self.bn0 = bn_params(8, dtype, seed=1)
        self.w1 = r(8, 8, 3, 3)
        self.bn1 = bn_params(8, dtype, seed=2)
        self.w2 = r(8, 8, 3, 3)
        self.bn2 = bn_params(8, dtype, seed=3)
        self.fc_w, self.fc_b = r(5, 8), r(5)

        L = ai3.layers
        conv_algo = algorithm if dtype == torch.float32 or algorithm != "guess" else "default"
        self.layers = dict(
            conv0=L.Conv2d(self.w0, self.b0, padding=1, algorithm=conv_algo, name="conv0"),
            bn0=L.BatchNorm2d(*self.bn0, name="bn0"),
            relu0=L.ReLU(name="relu0"),
            conv1=L.Conv2d(self.w1, None, padding=1, algorithm=conv_algo, name="layer1.0.conv1"),
            bn1=L.BatchNorm2d(*self.bn1, name="layer1.0.bn1"),
            relu=L.ReLU(name="layer1.0.relu"),
            conv2=L.Conv2d(self.w2, None, padding=1, algorithm=conv_algo, name="layer1.0.conv2"),
            bn2=L.BatchNorm2d(*self.bn2, name="layer1.0.bn2"),
            pool=L.AdaptiveAvgPool2d(1, name="avgpool"),
            flat=L.Flatten(name="flatten"),
            fc=L.Linear(self.fc_w, self.fc_b, name="fc"),
        )
        k = {name: layer._core_layer for name, layer in self.layers.items()}
        m = _core.Model()
        n = m.add_layer(k["conv0"], IN)
        n = m.add_layer(k["bn0"], n)
        stem = m.add_layer(k["relu0"], n)
        n = m.add_layer(k["conv1"], stem)
        n = m.add_layer(k["bn1"], n)
        n = m.add_layer(k["relu"], n)
        n = m.add_layer(k["conv2"], n)
        n = m.add_layer(k["bn2"], n)
        n = m.add_add([n, stem], "layer1.0.add")
        n = m.add_layer(k["relu"], n)  # the block's ReLU again
        n = m.add_layer(k["pool"], n)
        n = m.add_layer(k["flat"], n)
        m.set_output(m.add_layer(k["fc"], n))
        self.model = m

    def torch_forward(self, x: torch.Tensor) -> torch.Tensor:
        def bn(t, p):
            w, b, mean, var = p
            return F.batch_norm(t, mean, var, w, b, training=False)

        stem = F.relu(bn(F.conv2d(x, self.w0, self.b0, padding=1), self.bn0))
        y = F.relu(bn(F.conv2d(stem, self.w1, padding=1), self.bn1))
        y = bn(F.conv2d(y, self.w2, padding=1), self.bn2)
        y = F.relu(y + stem)
        y = torch.flatten(F.adaptive_avg_pool2d(y, 1), 1)
        return F.linear(y, self.fc_w, self.fc_b)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("algorithm", ["default", "direct", "gemm"])
def test_residual_cnn_matches_torch(dtype, algorithm) -> None:
    net = ResidualNet(dtype, algorithm)
    for batch in (2, 3, 2):  # a new shape replans; the old one again
        x = torch.randn(batch, 3, 9, 11, dtype=dtype)
        y = net.model(x.numpy())
        assert isinstance(y, np.ndarray)
        assert_close(torch.from_numpy(y), net.torch_forward(x), dtype)
    assert net.model.output_shape([4, 3, 9, 11], "float64" if dtype == torch.float64 else "float32") == [4, 5]


def test_model_listing() -> None:
    net = ResidualNet(torch.float32, "direct")
    m = net.model
    assert len(m) == 13
    assert m.output == 12
    listing = m.layers()
    assert listing[0] == ("conv0", "conv2d", "direct")
    assert listing[1] == ("bn0", "batchnorm2d", "direct")
    assert listing[8] == ("layer1.0.add", "add", "direct")
    assert listing[9] == ("layer1.0.relu", "relu", "direct")
    assert listing[12] == ("fc", "linear", listing[12][2])
    assert "13 nodes" in repr(m)
    assert isinstance(net.layers["conv0"]._core_layer, _core.Layer)


def test_model_keeps_layers_alive() -> None:
    m = _core.Model()
    w = torch.randn(4, 3, 1, 1)
    m.add_layer(ai3.layers.Conv2d(w, name="c")._core_layer, IN)  # the wrapper dies at once
    relu = _core.make_layer("relu", algorithm="direct", name="r")
    m.add_layer(relu, 0)
    del relu
    gc.collect()
    x = torch.randn(1, 3, 4, 4)
    assert_close(torch.from_numpy(m(x.numpy())), F.relu(F.conv2d(x, w)), torch.float32)


def test_layer_shared_with_python_and_two_models() -> None:
    conv = ai3.layers.Conv2d(torch.randn(4, 3, 3, 3), padding=1, name="shared")
    a, b = _core.Model(), _core.Model()
    a.add_layer(conv._core_layer, IN)
    b.add_layer(conv._core_layer, IN)
    b.add_layer(_core.make_layer("relu", algorithm="direct", name="r"), 0)
    x = torch.randn(2, 3, 6, 6)
    direct = conv(x)
    assert_close(torch.from_numpy(a(x.numpy())), direct, torch.float32)
    assert_close(torch.from_numpy(b(x.numpy())), F.relu(direct), torch.float32)


def test_concurrent_calls_share_one_model() -> None:
    net = ResidualNet(torch.float32)
    xs = [torch.randn(2, 3, 16, 16) for _ in range(4)] + [torch.randn(1, 3, 8, 8) for _ in range(4)]
    results: dict[int, np.ndarray] = {}

    def run(i: int) -> None:
        for _ in range(3):
            results[i] = net.model(xs[i].numpy())

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(xs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i, x in enumerate(xs):
        assert_close(torch.from_numpy(results[i]), net.torch_forward(x), torch.float32)


# ---- Concat -------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
def test_inception_style_concat(dtype) -> None:
    w1, w3 = torch.randn(4, 6, 1, 1, dtype=dtype), torch.randn(5, 6, 3, 3, dtype=dtype)
    L = ai3.layers
    b1 = L.Conv2d(w1, name="branch1")
    b2 = L.Conv2d(w3, padding=1, name="branch2")
    b3 = L.MaxPool2d(3, stride=1, padding=1, name="branch3")
    m = _core.Model()
    n1 = m.add_layer(b1._core_layer, IN)
    n2 = m.add_layer(b2._core_layer, IN)
    n3 = m.add_layer(b3._core_layer, IN)
    cat = m.add_concat([n1, n2, n3, IN], 1, "inception.cat")
    m.add_layer(L.ReLU(name="out")._core_layer, cat)
    x = torch.randn(2, 6, 7, 7, dtype=dtype)
    want = F.relu(torch.cat([F.conv2d(x, w1), F.conv2d(x, w3, padding=1), F.max_pool2d(x, 3, 1, 1), x], 1))
    assert m.output_shape([2, 6, 7, 7], "float64" if dtype == torch.float64 else "float32") == [2, 21, 7, 7]
    assert_close(torch.from_numpy(m(x.numpy())), want, dtype)


def test_concat_nhwc_last_axis_and_negative_axis() -> None:
    x = torch.randn(2, 5, 5, 3)  # NHWC
    m = _core.Model()
    r = m.add_layer(_core.make_layer("relu", algorithm="direct", name="r"), IN)
    m.add_concat([IN, r], -1, "cat")
    assert_close(torch.from_numpy(m(x.numpy())), torch.cat([x, F.relu(x)], -1), torch.float32)


def test_unused_nodes_are_pruned() -> None:
    m = _core.Model()
    r = m.add_layer(_core.make_layer("relu", algorithm="direct", name="r"), IN)
    # A dead branch that could not even take the input.
    m.add_layer(ai3.layers.Conv2d(torch.randn(2, 7, 1, 1), name="dead")._core_layer, r)
    m.set_output(r)
    x = np.array([[-1.0, 2.0]], dtype=np.float32)
    np.testing.assert_array_equal(m(x), [[0.0, 2.0]])


# ---- Errors -------------------------------------------------------------------


def test_bad_input_node_id() -> None:
    m = _core.Model()
    relu = _core.make_layer("relu", algorithm="direct", name="r")
    with pytest.raises(ai3.InvalidArgument, match=r"relu layer 'r': input 3 is not a node of this model"):
        m.add_layer(relu, 3)
    m.add_layer(relu, IN)
    with pytest.raises(ai3.InvalidArgument, match=r"add node 's': input 5 is not a node"):
        m.add_add([0, 5], "s")
    with pytest.raises(ai3.InvalidArgument, match=r"add node 's': needs at least 2 inputs"):
        m.add_add([0], "s")
    with pytest.raises(ai3.InvalidArgument, match=r"concat node 'k': needs at least 1 input"):
        m.add_concat([], 1, "k")
    with pytest.raises(ai3.InvalidArgument, match="SetOutput"):
        m.set_output(4)
    with pytest.raises(TypeError):
        m.add_layer("not a layer", IN)
    assert len(m) == 1


def test_add_with_mismatched_shapes_names_the_node() -> None:
    m = _core.Model()
    c = m.add_layer(ai3.layers.Conv2d(torch.randn(8, 3, 3, 3), name="layer1.0.conv1")._core_layer, IN)
    m.add_add([c, IN], "layer1.0.add")
    pattern = (
        r"add node 'layer1.0.add': input 1 \(the model input\) has shape \(1, 3, 6, 6\) "
        r"but input 0 \(node 0 'layer1.0.conv1'\) has shape \(1, 8, 4, 4\)"
    )
    with pytest.raises(ai3.ShapeError, match=pattern):
        m.output_shape([1, 3, 6, 6])
    with pytest.raises(ai3.ShapeError, match=pattern):
        m(np.zeros((1, 3, 6, 6), np.float32))


def test_concat_mismatch_names_the_node() -> None:
    m = _core.Model()
    c = m.add_layer(ai3.layers.MaxPool2d(2, name="pool")._core_layer, IN)
    m.add_concat([c, IN], 1, "blocks.cat")
    with pytest.raises(ai3.ShapeError, match=r"concat node 'blocks.cat': input 1 \(the model input\) has shape"):
        m.output_shape([1, 3, 6, 6])
    m2 = _core.Model()
    m2.add_concat([IN], 4, "c4")
    with pytest.raises(ai3.ShapeError, match="axis 4 is out of range"):
        m2.output_shape([1, 3, 6, 6])


def test_wrong_input_channels_names_the_layer() -> None:
    net = ResidualNet(torch.float32, "direct")
    with pytest.raises(ai3.ShapeError, match=r"conv2d layer 'conv0' \(direct\): .*has 4 channels, the layer expects 3"):
        net.model(np.zeros((1, 4, 8, 8), np.float32))
    # Deeper in the graph: a block whose conv expects other channels.
    m = _core.Model()
    c = m.add_layer(ai3.layers.Conv2d(torch.randn(32, 3, 1, 1), name="stem")._core_layer, IN)
    m.add_layer(ai3.layers.Conv2d(torch.randn(64, 64, 3, 3), algorithm="gemm", name="layer1.0.conv1")._core_layer, c)
    with pytest.raises(
        ai3.ShapeError, match=r"conv2d layer 'layer1.0.conv1' \(gemm\): input .* has 32 channels, the layer expects 64"
    ):
        m.output_shape([1, 3, 8, 8])


def test_bad_model_inputs() -> None:
    net = ResidualNet(torch.float32)
    x = np.zeros((1, 3, 8, 16), np.float32)
    with pytest.raises(ai3.InvalidArgument, match="not contiguous"):
        net.model(x[:, :, :, ::2])
    with pytest.raises(ai3.DTypeError, match="int32"):
        net.model(np.zeros((1, 3, 8, 8), np.int32))
    with pytest.raises(ai3.DTypeError, match=r"conv2d layer 'conv0'.*float64.*float32"):
        net.model(np.zeros((1, 3, 8, 8), np.float64))
    with pytest.raises(ai3.DTypeError, match="float16"):
        net.model.output_shape([1, 3, 8, 8], "float16")
    with pytest.raises(ai3.InvalidArgument, match="no nodes"):
        _core.Model()(x)


if __name__ == "__main__":
    pytest_main.run(__file__)
