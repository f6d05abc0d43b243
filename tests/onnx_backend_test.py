"""ai3.onnx.graph: ONNX files exported from torchvision models, run whole
by ai3's core (swap_backend), against onnxruntime on the same file.

Every torchvision classification family (ai3.onnx.coverage: the torch zoo's
models, batch 2, small inputs) at opset 17, a subset at opsets 13 (written-
out layer norms, HardSigmoid) and 18 (ReduceMean axes as inputs), and the
older resnet/squeezenet/... set at opset 11. Tolerances per family
are ai3.torch.coverage's (1e-4 of the output's scale; 1e-3 for the
transformers and ConvNeXt). Exports use the TorchScript exporter
(dynamo=False); the dynamo exporter needs onnxscript, which this
environment does not have, so it is not exercised here.
"""

from __future__ import annotations

import os
import pickle
import warnings

import numpy as np
import pytest
import pytest_main

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
torch = pytest.importorskip("torch")
torchvision = pytest.importorskip("torchvision")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import ai3  # noqa: E402
from ai3 import model as ai3_model  # noqa: E402
from ai3.onnx import coverage, graph  # noqa: E402

torch.set_num_threads(max(1, min(4, os.cpu_count() or 1)))


# -- exports, cached per module -------------------------------------------
MODELS = {
    # name -> (constructor, input size)
    "resnet18": (lambda: torchvision.models.resnet18(weights=None), 64),
    "squeezenet1_1": (lambda: torchvision.models.squeezenet1_1(weights=None), 64),
    "googlenet": (lambda: torchvision.models.googlenet(weights=None, init_weights=False, aux_logits=False), 64),
    "densenet121": (lambda: torchvision.models.densenet121(weights=None), 64),
    "mobilenet_v2": (lambda: torchvision.models.mobilenet_v2(weights=None), 64),
    # inception_v3 takes at least 75x75.
    "inception_v3": (lambda: torchvision.models.inception_v3(weights=None, init_weights=False, aux_logits=False), 80),
    # vgg's AdaptiveAvgPool2d((7, 7)) exports only where 7 divides the map:
    # 224 gives 7x7 (an AveragePool of kernel 1).
    "vgg11": (lambda: torchvision.models.vgg11(weights=None), 224),
}
# test_family already runs each of these families' model at opset 17
# (coverage.FAMILIES: the same constructors), so the older set adds opset 11.
OPSETS = (11,)


@pytest.fixture(scope="module")
def export_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("onnx_exports")


_cache: dict = {}


def _export(module, size, path, opset, dynamic_batch=False):
    x = torch.randn(1, 3, size, size)
    kwargs = {}
    if dynamic_batch:
        kwargs["dynamic_axes"] = {"input": {0: "batch"}, "output": {0: "batch"}}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            module,
            (x,),
            str(path),
            opset_version=opset,
            input_names=["input"],
            output_names=["output"],
            dynamo=False,
            **kwargs,
        )


def exported(export_dir, name, opset, dynamic_batch=False):
    key = (name, opset, dynamic_batch)
    if key not in _cache:
        make, size = MODELS[name]
        torch.manual_seed(0)
        module = make().eval()
        path = export_dir / f"{name}_{opset}{'_dyn' if dynamic_batch else ''}.onnx"
        _export(module, size, path, opset, dynamic_batch)
        _cache[key] = (path, size)
    return _cache[key]


def run_ort(path, x):
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return sess.run(None, {sess.get_inputs()[0].name: x})[0]


def assert_close(got, want, rel=1e-4):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape
    scale = max(float(np.abs(want).max()), 1e-6)
    err = float(np.abs(got - want).max())
    assert err <= rel * scale + 1e-6, f"max abs error {err} vs output scale {scale}"


# -- every torchvision family ---------------------------------------------------
CORE_OPS = set(ai3_model.CORE_OPS) | set(ai3_model.GRAPH_OPS) | {"identity"}

ZOO_CASES = (
    [(family, 17) for family in coverage.FAMILIES]
    + [(family, 13) for family in ("convnext", "mobilenet_v3", "shufflenet_v2", "swin")]
    + [(family, 18) for family in ("mnasnet", "vit", "efficientnet")]
)


@pytest.mark.parametrize("family,opset", ZOO_CASES)
def test_family(export_dir, family, opset):
    path = str(export_dir / f"zoo_{family}_{opset}.onnx")
    coverage.export(family, path, opset)
    specs, _ = graph.to_specs(path)
    missing = sorted({s.op for s in specs} - CORE_OPS)
    if missing:
        pytest.skip(f"this build of ai3's core lacks the op(s) {missing}")
    ok, reason = coverage.check_file(family, path)
    assert ok, f"{family} (opset {opset}): {reason}"


# -- the older set, two opsets ------------------------------------------------
@pytest.mark.parametrize("opset", OPSETS)
@pytest.mark.parametrize("name", list(MODELS))
def test_zoo_matches_onnxruntime(export_dir, name, opset):
    path, size = exported(export_dir, name, opset)
    x = np.random.default_rng(0).standard_normal((1, 3, size, size)).astype(np.float32)
    model = graph.swap_backend(str(path))
    assert isinstance(model, ai3.Model)
    assert model.layout == "NCHW" and model.dtype == np.float32
    assert_close(model(x), run_ort(path, x))


def test_bytes_and_modelproto_inputs(export_dir):
    path, size = exported(export_dir, "resnet18", 17)
    x = np.random.default_rng(1).standard_normal((1, 3, size, size)).astype(np.float32)
    want = run_ort(path, x)
    data = path.read_bytes()
    assert_close(graph.swap_backend(data)(x), want)
    assert_close(graph.swap_backend(onnx.load(str(path)), "gemm")(x), want)


def test_dynamic_batch_two_sizes(export_dir):
    path, size = exported(export_dir, "resnet18", 17, dynamic_batch=True)
    model = graph.swap_backend(path)
    rng = np.random.default_rng(2)
    for n in (1, 3):
        x = rng.standard_normal((n, 3, size, size)).astype(np.float32)
        assert_close(model(x), run_ort(path, x))
    specs, _ = graph.to_specs(path)
    assert specs[0].input_shape[0] is None  # the symbolic batch
    specs, _ = graph.to_specs(path, (2, 3, size, size))
    assert specs[0].input_shape == (2, 3, size, size)


def test_dynamic_batch_without_shape_reads_is_one_model(export_dir):
    """resnet18's export reads no shapes (Flatten, not Shape -> Reshape):
    the model built at one batch runs any other, with nothing rebuilt."""
    path, size = exported(export_dir, "resnet18", 17, dynamic_batch=True)
    assert graph.swap_backend(path, sample_input_shape=(2, 3, size, size)).per_shape is None


def _shape_reading_graph() -> bytes:
    """y = relu(reshape(x, concat(shape(x)[0], [-1]))) + range(L) for x of
    symbolic shape (N, L): the shape arithmetic an export writes (and ai3
    folds for the sample shape)."""
    ints = lambda name, v: numpy_helper.from_array(np.asarray(v, np.int64), name)  # noqa: E731
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Gather", ["s", "i0"], ["n"], axis=0),
        helper.make_node("Gather", ["s", "i1"], ["l"], axis=0),
        helper.make_node("Concat", ["n", "minus1"], ["target"], axis=0),
        helper.make_node("Reshape", ["x", "target"], ["flat"]),
        helper.make_node("Relu", ["flat"], ["r"]),
        helper.make_node("Squeeze", ["l"], ["end"]),
        helper.make_node("Range", ["zero", "end", "one"], ["pos"]),
        helper.make_node("Cast", ["pos"], ["posf"], to=TensorProto.FLOAT),
        helper.make_node("Add", ["r", "posf"], ["y"]),
    ]
    g = helper.make_graph(
        nodes,
        "shapes",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", "L"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", "L"])],
        [ints("i0", [0]), ints("i1", [1]), ints("minus1", [-1]), ints("zero", 0), ints("one", 1)],
    )
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()


def test_shapes_folded_for_the_sample_rebuild_for_others():
    """A graph that reads its input's shape is folded for the sample shape;
    other shapes run in models built for them (ai3.model.PerShape), cached,
    the least recently used dropped past PerShape.KEPT. Never in the model
    built for the sample: its folded range(4) would broadcast a length-1
    input into a wrong (N, 4) result."""
    import copy

    data = _shape_reading_graph()
    session = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    model = graph.swap_backend(data, sample_input_shape=(2, 4))
    assert model.per_shape is not None and model.per_shape.shapes == [(2, 4)]
    rng = np.random.default_rng(5)
    for shape in [(2, 4), (3, 4), (2, 1), (1, 6), (3, 4)]:
        x = rng.standard_normal(shape).astype(np.float32)
        np.testing.assert_allclose(model(x), session.run(None, {"x": x})[0], rtol=1e-6, atol=1e-6)
    per_shape = model.per_shape
    assert list(per_shape.models) == [((2, 1),), ((1, 6),), ((3, 4),)]  # (2, 4) is the model itself
    again = per_shape.model_for([(3, 4)])
    assert again is per_shape.models[((3, 4),)] and again.per_shape is None
    for length in range(7, 7 + per_shape.KEPT):
        per_shape.model_for([(1, length)])
    assert len(per_shape.models) == per_shape.KEPT and ((3, 4),) not in per_shape.models
    # Why: the sample's model itself, at length 1.
    unguarded = copy.deepcopy(model)
    unguarded.per_shape = None
    assert np.shape(unguarded(np.ones((2, 1), np.float32))) == (2, 4)
    # A copy, and a pickle, keep the rule (and build their other shapes again on use).
    x = rng.standard_normal((2, 3)).astype(np.float32)
    for copied in (copy.deepcopy(model), pickle.loads(pickle.dumps(model))):
        np.testing.assert_allclose(copied(x), session.run(None, {"x": x})[0], rtol=1e-6, atol=1e-6)
    # A selector that does not pickle: the unpickled copy runs its own shapes, and says why not others.
    by_lambda = graph.swap_backend(data, {"relu": lambda node: "direct"}, sample_input_shape=(2, 4))
    restored = pickle.loads(pickle.dumps(by_lambda))
    np.testing.assert_allclose(restored(np.ones((2, 4), np.float32)), by_lambda(np.ones((2, 4), np.float32)))
    with pytest.raises(ai3.UnsupportedOperation, match=r"built for inputs of shapes \[\(2, 4\)\]"):
        restored(x)


def test_float64_and_algorithms(export_dir):
    path, size = exported(export_dir, "squeezenet1_1", 11)
    x = np.random.default_rng(3).standard_normal((1, 3, size, size)).astype(np.float32)
    want = run_ort(path, x)
    model = graph.swap_backend(path, {"conv2d": "gemm", "maxpool2d": "direct"}, dtype="float64")
    assert model.dtype == np.float64
    assert set(model.algorithms("conv2d")) == {"gemm"}
    assert_close(model(x.astype(np.float64)), want)


@pytest.mark.parametrize(
    "name,options",
    [
        # Unfolded: weights behind Identity nodes, Clip bounds as Constant
        # nodes, every BatchNormalization left in the graph.
        ("mobilenet_v2", {"do_constant_folding": False}),
        # Older exports list the initializers among the graph's inputs.
        ("squeezenet1_1", {"keep_initializers_as_inputs": True}),
    ],
)
def test_export_variants(export_dir, name, options):
    make, size = MODELS[name]
    torch.manual_seed(0)
    path = export_dir / f"{name}_variant.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            make().eval(), (torch.randn(1, 3, size, size),), str(path), opset_version=11, dynamo=False, **options
        )
    x = np.random.default_rng(9).standard_normal((1, 3, size, size)).astype(np.float32)
    assert_close(graph.swap_backend(path)(x), run_ort(path, x))


def test_sample_shape_leaves_model_unchanged(export_dir):
    path, size = exported(export_dir, "resnet18", 17, dynamic_batch=True)
    proto = onnx.load(str(path))
    before = proto.graph.input[0].SerializeToString()
    model = graph.swap_backend(proto, sample_input_shape=(2, 3, size, size))
    assert model.sample_input_shape == (2, 3, size, size)
    assert proto.graph.input[0].SerializeToString() == before


# -- selectors --------------------------------------------------------------
def test_selector_gets_node_and_shape(export_dir):
    path, size = exported(export_dir, "resnet18", 11)
    seen = []

    def pick(node, shape):
        assert isinstance(node, onnx.NodeProto) and node.op_type == "Conv"
        seen.append(shape)
        return "direct" if shape[1] == 3 else "gemm"

    model = graph.swap_backend(
        path,
        {"conv2d": pick, "linear": lambda n: "gemm" if n.op_type == "Gemm" else "x"},
        sample_input_shape=(1, 3, size, size),
    )
    assert seen[0] == (1, 3, size, size)
    assert len(seen) == 20
    algos = model.algorithms("conv2d")
    assert algos[0] == "direct" and set(algos[1:]) == {"gemm"}
    assert model.algorithms("linear") == ["gemm"]
    x = np.random.default_rng(4).standard_normal((1, 3, size, size)).astype(np.float32)
    assert_close(model(x), run_ort(path, x))


def test_selector_list_and_inferred_shape(export_dir):
    path, size = exported(export_dir, "resnet18", 11)
    # Without sample_input_shape a two-argument selector gets the shape
    # ONNX shape inference gives (the export's static batch of 1 here).
    seen = []
    graph.swap_backend(path, {"conv2d": lambda node, shape: seen.append(shape) or "direct"})
    assert seen[0] == (1, 3, size, size)
    with pytest.raises(ai3.InvalidSelector):
        graph.swap_backend(path, ["direct"] * 3)
    model = graph.swap_backend(path, ["direct"] * 19 + ["gemm"])
    assert model.algorithms("conv2d")[-1] == "gemm"


# -- small hand-built graphs ---------------------------------------------------
def _tensor(name, array):
    return numpy_helper.from_array(np.asarray(array, dtype=np.float32), name)


def _model(nodes, inits, in_shape, out_shape, opset=17, elem=TensorProto.FLOAT):
    g = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", elem, in_shape)],
        [helper.make_tensor_value_info("y", elem, out_shape)],
        initializer=inits,
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    if opset <= 21:
        m.ir_version = 8  # what older onnxruntimes read
    return m


def _ort_model(m, x):
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, {"x": x})[0]


@pytest.mark.parametrize("opset", [13, 28])
def test_small_ops_graph(opset):
    rng = np.random.default_rng(5)
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    nodes = [
        helper.make_node("Pad", ["x", "pads"], ["p"], mode="constant"),
        helper.make_node("Conv", ["p", "w"], ["c"], auto_pad="SAME_UPPER", strides=[2, 2], name="conv"),
        helper.make_node("Clip", ["c", "lo", "hi"], ["r"], name="clip"),
        helper.make_node("MaxPool", ["r"], ["m"], kernel_shape=[2, 2], auto_pad="SAME_LOWER", strides=[2, 2]),
        helper.make_node("Sigmoid", ["m"], ["s"]),
        helper.make_node("Tanh", ["m"], ["t"]),
        helper.make_node("Add", ["s", "t"], ["a"]),
        helper.make_node("GlobalMaxPool", ["a"], ["g"]),
        helper.make_node("Reshape", ["g", "shape"], ["f"]),
        helper.make_node("MatMul", ["f", "mw"], ["mm"]),
        helper.make_node("Add", ["mm", "mb"], ["l"]),
        helper.make_node("Softmax", ["l"], ["y"], axis=1),
    ]
    inits = [
        numpy_helper.from_array(np.array([0, 0, 1, 0, 0, 0, 0, 2], dtype=np.int64), "pads"),
        _tensor("w", w),
        _tensor("lo", -0.5),
        _tensor("hi", 2.0),
        numpy_helper.from_array(np.array([0, -1], dtype=np.int64), "shape"),
        _tensor("mw", rng.standard_normal((4, 5))),
        _tensor("mb", rng.standard_normal(5)),
    ]
    m = _model(nodes, inits, [2, 3, 11, 13], [2, 5], opset=opset)
    x = rng.standard_normal((2, 3, 11, 13)).astype(np.float32)
    model = graph.swap_backend(m)
    ops = [op for _, op, _ in model.layers()]
    assert "pad2d" not in ops and "linear" in ops and "add" in ops  # the pad is folded into the conv
    assert_close(model(x), _ort_model(m, x))
    # A pad with a non-zero value stays a pad2d.
    inits.append(_tensor("v", 0.25))
    nodes[0] = helper.make_node("Pad", ["x", "pads", "v"], ["p"], mode="constant")
    m = _model(nodes, inits, [2, 3, 11, 13], [2, 5], opset=opset)
    model = graph.swap_backend(m)
    assert "pad2d" in [op for _, op, _ in model.layers()]
    assert_close(model(x), _ort_model(m, x))


def test_legacy_softmax_rank2_and_refuse_rank4():
    nodes = [helper.make_node("Flatten", ["x"], ["f"]), helper.make_node("Softmax", ["f"], ["y"])]
    m = _model(nodes, [], [2, 3, 2, 2], [2, 12], opset=11)
    x = np.random.default_rng(6).standard_normal((2, 3, 2, 2)).astype(np.float32)
    assert_close(graph.swap_backend(m)(x), _ort_model(m, x))
    m = _model([helper.make_node("Softmax", ["x"], ["y"], name="sm")], [], [2, 3, 2, 2], [2, 3, 2, 2], opset=11)
    with pytest.raises(ai3.UnsupportedOperation, match="sm"):
        graph.swap_backend(m)
    # axis = the last one: the 2-D coercion is a softmax over that axis.
    m = _model([helper.make_node("Softmax", ["x"], ["y"], axis=3)], [], [2, 3, 2, 2], [2, 3, 2, 2], opset=11)
    assert_close(graph.swap_backend(m)(x), _ort_model(m, x))
    m = _model([helper.make_node("Softmax", ["x"], ["y"], axis=1)], [], [2, 3, 2, 2], [2, 3, 2, 2], opset=13)
    assert_close(graph.swap_backend(m)(x), _ort_model(m, x))


@pytest.mark.parametrize("opset", [11, 13, 17, 21, 28])
def test_gemm_pool_batchnorm_concat_graph(opset):
    rng = np.random.default_rng(7)
    c = 3
    drop = [helper.make_node("Dropout", ["bn"], ["d"])]
    nodes = [
        helper.make_node("BatchNormalization", ["x", "s", "b", "mean", "var"], ["bn"], epsilon=1e-3),
        *drop,
        helper.make_node(
            "AveragePool",
            ["d"],
            ["ap"],
            kernel_shape=[3, 3],
            strides=[2, 2],
            pads=[1, 0, 1, 1],
            count_include_pad=1,
            ceil_mode=0,
        ),
        helper.make_node("AveragePool", ["d"], ["ap2"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 0, 1, 1]),
        helper.make_node("Concat", ["ap", "ap2"], ["cat"], axis=-3),
        helper.make_node("Identity", ["cat"], ["id"]),
        helper.make_node("Flatten", ["id"], ["f"], axis=1),
        helper.make_node("Gemm", ["f", "gw", "gb"], ["gm"], transB=0, alpha=0.5, beta=2.0),
        helper.make_node("Relu", ["gm"], ["y"]),
    ]
    inits = [
        _tensor("s", rng.uniform(0.5, 1.5, c)),
        _tensor("b", rng.standard_normal(c)),
        _tensor("mean", rng.standard_normal(c)),
        _tensor("var", rng.uniform(0.5, 2, c)),
        _tensor("gw", rng.standard_normal((2 * c * 4 * 4, 6))),
        _tensor("gb", rng.standard_normal((1, 6))),
    ]
    m = _model(nodes, inits, [2, c, 8, 9], [2, 6], opset=opset)
    onnx.checker.check_model(m)
    x = rng.standard_normal((2, c, 8, 9)).astype(np.float32)
    model = graph.swap_backend(m)
    ops = [op for _, op, _ in model.layers()]
    assert ops.count("avgpool2d") == 2 and "batchnorm2d" in ops and "concat" in ops
    assert_close(model(x), _ort_model(m, x))


@pytest.mark.parametrize(
    "case",
    [
        "gather_shuffled",
        "maxpool_indices",
        "bn_training",
        "conv4d",
        "resize_crop",
        "computed_weight",
    ],
)
def test_unsupported_forms(case):
    rng = np.random.default_rng(8)
    inits, out = [], [1, 3, 4, 4]
    if case == "gather_shuffled":
        nodes = [helper.make_node("Gather", ["x", "idx"], ["y"], axis=1, name="bad")]
        inits = [numpy_helper.from_array(np.array([2, 0], dtype=np.int64), "idx")]
        out = [1, 2, 4, 4]
    elif case == "maxpool_indices":
        nodes = [helper.make_node("MaxPool", ["x"], ["y", "idx"], kernel_shape=[2, 2], name="bad")]
        out = [1, 3, 3, 3]
    elif case == "bn_training":
        nodes = [
            helper.make_node(
                "BatchNormalization", ["x", "s", "b", "m", "v"], ["y", "rm", "rv"], training_mode=1, name="bad"
            )
        ]
        inits = [_tensor(n, np.ones(3)) for n in ("s", "b", "m", "v")]
    elif case == "resize_crop":
        nodes = [
            helper.make_node(
                "Resize",
                ["x", "", "scales"],
                ["y"],
                mode="linear",
                coordinate_transformation_mode="tf_crop_and_resize",
                name="bad",
            )
        ]
        inits = [_tensor("scales", [1, 1, 2, 2])]
        out = [1, 3, 8, 8]
    elif case == "computed_weight":
        nodes = [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Conv", ["x", "r"], ["y"], name="bad")]
        out = None
    else:
        nodes = [helper.make_node("Conv", ["x", "w"], ["y"], name="bad")]
        inits = [_tensor("w", rng.standard_normal((2, 3, 1, 1, 1, 1)))]
        out = None
    in_shape = [1, 3, 4, 4, 4, 4] if case == "conv4d" else [1, 3, 4, 4]
    if out is None:
        out = [1, 2, 4, 4, 4, 4] if case == "conv4d" else [1, 1, 1, 1]
    m = _model(nodes, inits, in_shape, out)
    with pytest.raises(ai3.UnsupportedOperation, match="'bad'"):
        graph.swap_backend(m)


@pytest.mark.parametrize(
    "attrs,c_shape",
    [
        ({"transA": 1}, (5,)),
        ({"transA": 1, "transB": 1, "alpha": 0.5, "beta": 2.0}, (6, 5)),
        ({}, (6, 1)),
        ({"beta": -1.5}, (1, 5)),
        ({"transB": 1}, ()),
    ],
    ids=["transA", "all", "column_C", "row_C", "scalar_C"],
)
def test_gemm_forms_match_onnxruntime(attrs, c_shape):
    # x is (6, 4), or (4, 6) read transposed; B is (4, 5) or (5, 4); C
    # broadcasts to (6, 5): per output, per row, the whole matrix, a scalar.
    rng = np.random.default_rng(11)
    in_shape = [4, 6] if attrs.get("transA") else [6, 4]
    b = rng.standard_normal((5, 4) if attrs.get("transB") else (4, 5))
    nodes = [helper.make_node("Gemm", ["x", "b", "c"], ["y"], **attrs)]
    m = _model(nodes, [_tensor("b", b), _tensor("c", rng.standard_normal(c_shape))], in_shape, [6, 5])
    x = rng.standard_normal(in_shape).astype(np.float32)
    assert_close(graph.swap_backend(m)(x), _ort_model(m, x))


def _run_both(m, x, **kw):
    """swap_backend(m) and ONNX Runtime on x (skipping where the core lacks
    an op the graph maps to)."""
    specs, _ = graph.to_specs(m, **kw)
    missing = sorted({s.op for s in specs} - CORE_OPS)
    if missing:
        pytest.skip(f"this build of ai3's core lacks the op(s) {missing}")
    return graph.swap_backend(m, **kw)(x), _ort_model(m, x)


@pytest.mark.parametrize(
    "left,x_shape",
    [((5, 8), (2, 8, 3)), ((8,), (2, 8, 3)), ((6, 8), (8,)), ((4, 5, 8), (2, 1, 8, 3)), ((3, 1, 5, 8), (4, 8, 6))],
)
def test_matmul_with_a_constant_left_operand_matches_onnxruntime(left, x_shape):
    """MatMul(A, x) with A an initializer: a permute of x, a matmul by A^T
    and a permute of the product (1-D operands and broadcast batch dims as
    ONNX's MatMul)."""
    rng = np.random.default_rng(len(left) + len(x_shape))
    a = rng.standard_normal(left).astype(np.float32)
    x = rng.standard_normal(x_shape).astype(np.float32)
    out_shape = list(np.matmul(a, x).shape)
    m = _model([helper.make_node("MatMul", ["a", "x"], ["y"])], [_tensor("a", a)], list(x_shape), out_shape)
    got, want = _run_both(m, x, sample_input_shape=list(x_shape))
    assert_close(np.asarray(got), want, rel=1e-5)


def _ints(name, values):
    return numpy_helper.from_array(np.asarray(values, dtype=np.int64), name)


@pytest.mark.parametrize("opset", [13, 18, 21])
def test_transformer_ops_graph(opset):
    """Tokens through LayerNormalization (or its written-out form before 17),
    a two-tensor MatMul attention with Split / Transpose / Softmax, an
    erf-GELU chain, broadcasting arithmetic with constants on either side,
    Gather of the first token, Unsqueeze/Squeeze and ReduceMean."""
    rng = np.random.default_rng(11)
    b, l, d = 2, 5, 8
    axes_in = opset >= 18  # ReduceMean's axes are an input

    def reduce_mean(inp, out, axes, keepdims=1, name=None):
        if axes_in:
            return [helper.make_node("ReduceMean", [inp, f"{out}_axes"], [out], keepdims=keepdims, name=name)], [
                _ints(f"{out}_axes", axes)
            ]
        return [helper.make_node("ReduceMean", [inp], [out], axes=axes, keepdims=keepdims, name=name)], []

    nodes, inits = [], [_tensor("g", rng.uniform(0.5, 1.5, d)), _tensor("beta", rng.standard_normal(d))]
    if opset >= 17:
        nodes.append(helper.make_node("LayerNormalization", ["x", "g", "beta"], ["ln"], axis=-1, epsilon=1e-5))
    else:
        n1, i1 = reduce_mean("x", "mu", [-1])
        n2, i2 = reduce_mean("sq", "var", [-1])
        nodes += (
            n1
            + [helper.make_node("Sub", ["x", "mu"], ["xc"]), helper.make_node("Pow", ["xc", "two"], ["sq"])]
            + n2
            + [
                helper.make_node("Add", ["var", "eps"], ["ve"]),
                helper.make_node("Sqrt", ["ve"], ["sd"]),
                helper.make_node("Div", ["xc", "sd"], ["nrm"]),
                helper.make_node("Mul", ["nrm", "g"], ["sc"]),
                helper.make_node("Add", ["sc", "beta"], ["ln"]),
            ]
        )
        inits += i1 + i2 + [_tensor("two", 2.0), _tensor("eps", 1e-5)]
    inits += [
        _tensor("wqkv", rng.standard_normal((d, 3 * d)) * 0.3),
        _tensor("half", 0.5),
        _tensor("one", 1.0),
        _tensor("rt2", np.sqrt(2.0)),
        _tensor("scale", 1 / np.sqrt(d)),
        _tensor("three", 3.0),
        _ints("split", [d, d, d]),
        _ints("zero", 0),
        _ints("ax1", [1]),
    ]
    split_inputs = ["qkv", "split"] if opset >= 13 else ["qkv"]
    nodes += [
        helper.make_node("MatMul", ["ln", "wqkv"], ["qkv"]),
        helper.make_node("Split", split_inputs, ["q", "k", "v"], axis=-1),
        helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 2, 1]),
        helper.make_node("MatMul", ["q", "kt"], ["s"]),
        helper.make_node("Mul", ["s", "scale"], ["ss"]),
        helper.make_node("Softmax", ["ss"], ["p"], axis=-1),
        helper.make_node("MatMul", ["p", "v"], ["att"]),
        # GELU written out: x * 0.5 * (1 + erf(x / sqrt 2))
        helper.make_node("Div", ["att", "rt2"], ["gd"]),
        helper.make_node("Erf", ["gd"], ["ge"]),
        helper.make_node("Add", ["ge", "one"], ["ga"]),
        helper.make_node("Mul", ["att", "ga"], ["gm"]),
        helper.make_node("Mul", ["gm", "half"], ["gelu"]),
        helper.make_node("Sub", ["three", "gelu"], ["rs"]),  # constant on the left
        helper.make_node("Add", ["rs", "x"], ["res"]),
        helper.make_node("Gather", ["res", "zero"], ["cls"], axis=1),  # (b, d)
    ]
    if opset >= 13:  # (Squeeze / Unsqueeze axes became inputs in 13, ReduceMean's in 18)
        nodes += [
            helper.make_node("Unsqueeze", ["cls", "ax1"], ["u"]),
            helper.make_node("Squeeze", ["u", "ax1"], ["sq1"]),
        ]
    else:
        nodes += [
            helper.make_node("Unsqueeze", ["cls"], ["u"], axes=[1]),
            helper.make_node("Squeeze", ["u"], ["sq1"], axes=[1]),
        ]
    n3, i3 = reduce_mean("res", "pooled", [1], keepdims=0)
    nodes += n3 + [helper.make_node("Add", ["sq1", "pooled"], ["y"])]
    inits += i3
    m = _model(nodes, inits, [b, l, d], [b, d], opset=opset)
    specs, _ = graph.to_specs(m)
    ops = [s.op for s in specs]
    # The MatMul-Softmax-MatMul is one attention op, the Transpose of k inside it;
    # the rank-3 MatMul by the constant wqkv is a linear (the core's linear takes any rank).
    assert "layernorm" in ops and "gelu" in ops and ops.count("matmul") == 0 and "attention" in ops and "mean" in ops
    assert [s for s in specs if s.layer is not None and s.layer.output[0] == "qkv"][0].op == "linear"
    assert "permute" not in ops and "softmax" not in ops
    assert [s.attrs["scale"] for s in specs if s.op == "attention"] == [pytest.approx(1 / np.sqrt(d))]
    x = rng.standard_normal((b, l, d)).astype(np.float32)
    got, want = _run_both(m, x)
    assert_close(got, want)


def test_shape_arithmetic_folds():
    """Shape -> Gather -> Unsqueeze -> Concat -> Reshape (what exporters
    write for x.view(x.size(0), -1, ...)) folds to a constant reshape; a
    class token concatenated at the front and a HardSwish/HardSigmoid/
    LogSoftmax head run too."""
    rng = np.random.default_rng(12)
    nodes = [
        helper.make_node("Shape", ["x"], ["shp"]),
        helper.make_node("Gather", ["shp", "i0"], ["n"], axis=0),
        helper.make_node("Unsqueeze", ["n", "ax0"], ["n1"]),
        helper.make_node("Concat", ["n1", "tail"], ["target"], axis=0),
        helper.make_node("Reshape", ["x", "target"], ["tok"]),  # (n, c, h*w)
        helper.make_node("Transpose", ["tok"], ["t"], perm=[0, 2, 1]),  # (n, h*w, c)
        helper.make_node("Expand", ["cls", "cls_shape"], ["cls_b"]),
        helper.make_node("Concat", ["cls_b", "t"], ["seq"], axis=1),  # class token first
        helper.make_node("Add", ["seq", "pos"], ["e"]),
        helper.make_node("HardSwish", ["e"], ["hs"]),
        helper.make_node("HardSigmoid", ["hs"], ["hg"], alpha=0.25, beta=0.4),
        helper.make_node("Slice", ["hg", "st", "en", "sax", "sstep"], ["sl"]),
        helper.make_node("LogSoftmax", ["sl"], ["y"], axis=-1),
    ]
    inits = [
        _ints("i0", 0),
        _ints("ax0", [0]),
        _ints("tail", [3, -1]),
        _tensor("cls", rng.standard_normal((1, 1, 3))),
        _ints("cls_shape", [2, 1, 3]),
        _tensor("pos", rng.standard_normal((1, 17, 3))),
        _ints("st", [1, 0]),
        _ints("en", [100, 3]),
        _ints("sax", [1, 2]),
        _ints("sstep", [2, 1]),
    ]
    m = _model(nodes, inits, [2, 3, 4, 4], [2, 8, 3], opset=17)
    specs, _ = graph.to_specs(m)
    ops = [s.op for s in specs]
    assert "reshape" in ops and "permute" in ops and "slice" in ops and "hardswish" in ops and "log_softmax" in ops
    x = rng.standard_normal((2, 3, 4, 4)).astype(np.float32)
    got, want = _run_both(m, x)
    assert_close(got, want)


@pytest.mark.parametrize("alpha", [None, 0.2, -1.5])
def test_leaky_relu(alpha):
    attrs = {} if alpha is None else {"alpha": alpha}
    m = _model([helper.make_node("LeakyRelu", ["x"], ["y"], **attrs)], [], [2, 3, 5], [2, 3, 5])
    assert [s.attrs["alpha"] for s in graph.to_specs(m)[0]] == [pytest.approx(0.01 if alpha is None else alpha)]
    x = np.random.default_rng(15).standard_normal((2, 3, 5)).astype(np.float32)
    got, want = _run_both(m, x)
    assert_close(got, want)


@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("p", [1, 2])
def test_lp_normalization(p, axis):
    """LpNormalization: a reduce_l1 / reduce_l2 (keepdim), a clamp and a
    broadcast div, against ORT, along the batch, a middle and the last
    axis; one slice of zeros, which gives zeros."""
    nodes = [helper.make_node("LpNormalization", ["x"], ["y"], axis=axis, p=p)]
    m = _model(nodes, [], [2, 3, 4, 5], [2, 3, 4, 5], opset=17)
    x = np.random.default_rng(p).standard_normal((2, 3, 4, 5)).astype(np.float32)
    np.moveaxis(x, axis, -1)[0, 0, 0, :] = 0.0
    got, want = _run_both(m, x)
    assert_close(got, want)


@pytest.mark.parametrize("opset,axis", [(17, 0), (17, 1), (17, None), (11, 2)])
def test_hardmax(opset, axis):
    """Hardmax: argmax, equal to the axis' indices and a cast, against ORT,
    with a tie (the first maximum wins); before opset 13, only along the
    last dim (the older op flattens the dims from `axis` on)."""
    kwargs = {} if axis is None else {"axis": axis}
    m = _model([helper.make_node("Hardmax", ["x"], ["y"], **kwargs)], [], [2, 3, 4], [2, 3, 4], opset=opset)
    x = np.random.default_rng(3).standard_normal((2, 3, 4)).astype(np.float32)
    x[0, 0, :] = 1.0
    got, want = _run_both(m, x)
    assert_close(got, want)


def test_hardmax_refused_forms():
    """Before opset 13 Hardmax is taken only along the last dim; an
    LpNormalization p other than 1 and 2 is refused."""
    old = _model([helper.make_node("Hardmax", ["x"], ["y"], axis=1)], [], [2, 3, 4], [2, 3, 4], opset=11)
    with pytest.raises(ai3.UnsupportedOperation, match="before opset 13"):
        graph.swap_backend(old)
    lp3 = _model([helper.make_node("LpNormalization", ["x"], ["y"], axis=1, p=3)], [], [2, 3, 4], [2, 3, 4])
    with pytest.raises(ai3.UnsupportedOperation, match="p=3"):
        graph.swap_backend(lp3)


@pytest.mark.parametrize("axis,values", [(-1, [0.0, 1.0]), (0, [2.0, 5.0]), (1, [-1.0, 3.0])])
def test_one_hot(axis, values):
    """OneHot of int64 indices (one negative, counted from depth; one out
    of range: all off_value) with constant depth and values, against ORT;
    integer values are refused (ai3 writes a float one-hot)."""
    out_shape = {-1: [2, 3, 5], 0: [5, 2, 3], 1: [2, 5, 3]}[axis]

    def one_hot(values):
        inits = [numpy_helper.from_array(np.asarray(5, np.int64), "depth"), numpy_helper.from_array(values, "values")]
        node = helper.make_node("OneHot", ["x", "depth", "values"], ["y"], axis=axis)
        g = helper.make_graph(
            [node],
            "g",
            [helper.make_tensor_value_info("x", TensorProto.INT64, [2, 3])],
            [helper.make_tensor_value_info("y", helper.np_dtype_to_tensor_dtype(values.dtype), out_shape)],
            inits,
        )
        return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])

    m = one_hot(np.asarray(values, np.float32))
    x = np.array([[0, 4, -1], [-5, 7, 2]], dtype=np.int64)
    got, want = _run_both(m, x)
    assert_close(got, want)
    with pytest.raises(ai3.UnsupportedOperation, match="float one-hot"):
        graph.swap_backend(one_hot(np.asarray(values, np.int64)))


@pytest.mark.parametrize(
    "starts,ends,steps", [([3], [-100], [-1]), ([-1], [0], [-2]), ([1], [1000], [3]), ([0], [-1], [1])]
)
def test_slice_steps(starts, ends, steps):
    nodes = [helper.make_node("Slice", ["x", "st", "en", "ax", "sp"], ["y"])]
    inits = [_ints("st", starts), _ints("en", ends), _ints("ax", [-1]), _ints("sp", steps)]
    width = len(range(*slice(starts[0], ends[0], steps[0]).indices(7)))
    m = _model(nodes, inits, [2, 3, 7], [2, 3, width], opset=17)
    x = np.random.default_rng(14).standard_normal((2, 3, 7)).astype(np.float32)
    got, want = _run_both(m, x)
    assert_close(got, want)


def test_dynamic_shape_arithmetic_needs_sample_shape(export_dir):
    """A dynamic-batch export whose reshapes read x.shape: refused with a
    hint, then folded for the given sample_input_shape."""
    path = str(export_dir / "shufflenet_dyn.onnx")
    coverage.export("shufflenet_v2", path, 17, dynamic_batch=True)
    with pytest.raises(ai3.UnsupportedOperation, match="Shape.*sample_input_shape"):
        graph.to_specs(path)
    size = coverage.size_of("shufflenet_v2")
    specs, _ = graph.to_specs(path, (2, 3, size, size))
    assert "reshape" in {s.op for s in specs}


def test_einsum_batched_matmuls():
    rng = np.random.default_rng(13)
    nodes = [
        helper.make_node("Einsum", ["x", "x"], ["s"], equation="bgid,bgjd->bgij"),
        helper.make_node("Softmax", ["s"], ["p"], axis=-1),
        helper.make_node("Einsum", ["p", "x"], ["o"], equation="b g i j , b g j d -> b g i d"),
        helper.make_node("Einsum", ["o", "x"], ["y"], equation="bgid,bgjd->bgji"),
    ]
    m = _model(nodes, [], [2, 3, 4, 5], [2, 3, 4, 4], opset=17)
    x = rng.standard_normal((2, 3, 4, 5)).astype(np.float32)
    got, want = _run_both(m, x)
    assert_close(got, want)
    bad = _model([helper.make_node("Einsum", ["x"], ["y"], equation="bii->bi", name="bad")], [], [2, 3, 3], [2, 3])
    with pytest.raises(ai3.UnsupportedOperation, match="'bad'.*Einsum"):
        graph.to_specs(bad)


@pytest.mark.parametrize(
    "equation,out",
    [("bgid->bgdi", [2, 3, 5, 4]), ("bgid->bd", [2, 5]), ("bgid->dgb", [5, 3, 2]), ("bgid->gbid", [3, 2, 4, 5])],
)
def test_einsum_one_operand(equation, out):
    x = np.random.default_rng(14).standard_normal((2, 3, 4, 5)).astype(np.float32)
    m = _model([helper.make_node("Einsum", ["x"], ["y"], equation=equation)], [], list(x.shape), out)
    got, want = _run_both(m, x)
    assert_close(got, want)


def test_coverage_rows():
    rows = coverage.coverage(["squeezenet"])
    assert [(r.family, r.model) for r in rows] == [("squeezenet", "squeezenet1_1")]
    assert rows[0].ok, rows[0].reason


@pytest.mark.parametrize("shape", [(3, 6), (3, 6, 5), (2, 6, 4, 4)])
def test_batchnorm_of_rank_2_and_3(shape):
    """BatchNormalization over (N, C) and (N, C, L) (LeViT's and RepViT's
    exported heads), as over (N, C, H, W)."""
    rng = np.random.default_rng(len(shape))
    stats = [rng.uniform(0.5, 1.5, 6), rng.uniform(-1, 1, 6), rng.uniform(-1, 1, 6), rng.uniform(0.5, 2, 6)]
    inits = [_tensor(n, v) for n, v in zip(("s", "b", "m", "v"), stats)]
    nodes = [helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"], epsilon=1e-3)]
    x = rng.standard_normal(shape).astype(np.float32)
    got, want = _run_both(_model(nodes, inits, list(shape), list(shape)), x)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    "pads",
    [
        [0, 0, -1, -1, 0, 0, 1, 1],  # NASNet's exported one-pixel shift
        [0, 0, -2, 0, 0, 0, 0, -1],
        [0, -1, 1, 0, 0, 0, -1, 2],
        [0, 0, -1, -1, 0, 0, -1, -1],  # crop only
    ],
)
def test_pad_with_negative_pads_crops(pads):
    nodes = [helper.make_node("Pad", ["x", "pads"], ["y"], mode="constant")]
    x = np.random.default_rng(3).standard_normal((2, 3, 6, 7)).astype(np.float32)
    out = [d + pads[i] + pads[i + 4] for i, d in enumerate(x.shape)]
    got, want = _run_both(_model(nodes, [_ints("pads", pads)], list(x.shape), out), x)
    np.testing.assert_array_equal(got, want)


def test_shape_reads_chained_through_many_reshapes_fold():
    """A chain of Shape -> Reshape links, each foldable only once the one
    before it is (LeViT's export needs 34 rounds of folding): 40 links."""
    nodes, inits, cur = [], [_ints("flat", [0, -1]), _ints("back", [0, 3, 4, 4])], "x"
    for k in range(40):
        nodes += [
            helper.make_node("Shape", [cur], [f"s{k}"]),
            helper.make_node("Reshape", [cur, "flat"], [f"f{k}"]),
            helper.make_node("Relu", [f"f{k}"], [f"r{k}"]),
            helper.make_node("Reshape", [f"r{k}", f"s{k}"], [f"b{k}"]),
        ]
        cur = f"b{k}"
    nodes.append(helper.make_node("Identity", [cur], ["y"]))
    m = _model(nodes, inits, [2, 3, 4, 4], [2, 3, 4, 4])
    x = np.random.default_rng(4).standard_normal((2, 3, 4, 4)).astype(np.float32)
    got, want = _run_both(m, x, sample_input_shape=(2, 3, 4, 4))
    np.testing.assert_array_equal(got, want)


# -- bad input ----------------------------------------------------------------
def test_truncated_and_garbage_bytes(export_dir):
    path, _ = exported(export_dir, "squeezenet1_1", 17)
    data = path.read_bytes()
    for bad in (data[: len(data) // 3], b"\x00\xffnot an onnx model" * 10, b""):
        with pytest.raises(ai3.InvalidArgument, match="not a valid ONNX model"):
            graph.swap_backend(bad)
    with pytest.raises(ai3.InvalidArgument):
        graph.load(str(path) + ".missing")
    with pytest.raises(ai3.InvalidArgument):
        graph.load(42)


def test_checker_failure():
    # A node reading a tensor nothing produces fails onnx.checker.
    m = _model([helper.make_node("Relu", ["nowhere"], ["y"])], [], [1, 3, 4, 4], [1, 3, 4, 4])
    with pytest.raises(ai3.InvalidArgument, match="not a valid ONNX model"):
        graph.swap_backend(m)


@pytest.mark.parametrize("op,kwargs", [("RandomUniformLike", {}), ("Round", {})])
def test_unsupported_op(op, kwargs):
    nodes = [helper.make_node("Relu", ["x"], ["r"]), helper.make_node(op, ["r"], ["y"], name="act7", **kwargs)]
    m = _model(nodes, [], [1, 3, 4, 4], [1, 3, 4, 4], opset=20)
    with pytest.raises(ai3.UnsupportedOperation, match=f"act7.*{op}.*ai.onnx"):
        graph.swap_backend(m)


def test_every_unsupported_node_listed():
    """One refusal lists every node ai3 cannot run, grouped by op type with
    counts: ops the core lacks, forms the mapping refuses, other domains'
    nodes; a node reading a refused one's output is not listed again."""
    nodes = [
        helper.make_node("Round", ["x"], ["e1"], name="round1"),
        helper.make_node("Round", ["e1"], ["e2"], name="round2"),
        helper.make_node("Relu", ["e2"], ["r"], name="after_round"),  # downstream only: not listed
        helper.make_node("RandomUniformLike", ["x"], ["s"], name="noise"),
        helper.make_node("MaxPool", ["x"], ["m", "idx"], kernel_shape=[1, 1], name="mp"),
        helper.make_node("Add", ["r", "s"], ["a"]),
        helper.make_node("Add", ["a", "m"], ["y"]),
    ]
    m = _model(nodes, [], [1, 3, 4, 4], [1, 3, 4, 4], opset=20)
    with pytest.raises(graph.UnsupportedNodes) as info:
        graph.swap_backend(m)
    e = info.value
    assert isinstance(e, ai3.UnsupportedOperation)
    assert [n.name for n, _ in e.nodes] == ["round1", "round2", "noise", "mp"]
    assert e.op_types() == ["Round", "RandomUniformLike", "MaxPool"]
    text = str(e)
    assert text.startswith("4 nodes of the model ai3 cannot run (3 op types)")
    assert "Round (domain 'ai.onnx'): 2 nodes" in text and "'round1', 'round2'" in text
    assert "after_round" not in text
    assert "RandomUniformLike (domain 'ai.onnx'): 1 node" in text and "'mp': its indices output" in text
    # Other domains' nodes are listed all together too.
    nodes = [
        helper.make_node("Relu", ["x"], ["r"], name="c1", domain="com.example"),
        helper.make_node("Relu", ["r"], ["y"], name="c2", domain="com.example"),
    ]
    g = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3])],
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.example", 1)])
    with pytest.raises(
        ai3.UnsupportedOperation, match=r"2 nodes.*\n  Relu \(domain 'com.example'\): 2 nodes\n    'c1', 'c2'"
    ):
        graph.swap_backend(m)


def test_sum_of_tensors():
    nodes = [
        helper.make_node("Relu", ["x"], ["r"]),
        helper.make_node("Sigmoid", ["x"], ["s"]),
        helper.make_node("Sum", ["x", "r", "s"], ["y"]),
    ]
    m = _model(nodes, [], [2, 3, 4], [2, 3, 4])
    x = np.random.default_rng(16).standard_normal((2, 3, 4)).astype(np.float32)
    got, want = _run_both(m, x)
    assert_close(got, want)


@pytest.mark.parametrize("auto_pad", ["NOTSET", "SAME_UPPER"])
def test_1d_conv_and_pools(auto_pad):
    """Conv / MaxPool / AveragePool over (N, C, L) run as the 2-D layers
    over (N, C, 1, L); selectors see the model's own 1-D node."""
    rng = np.random.default_rng(17)
    pads = {"pads": [2, 1]} if auto_pad == "NOTSET" else {"auto_pad": auto_pad}
    nodes = [
        helper.make_node(
            "Conv",
            ["x", "w", "b"],
            ["c"],
            strides=[2],
            dilations=[2 if auto_pad == "NOTSET" else 1],
            group=2,
            name="conv1d",
            **pads,
        ),
        helper.make_node("MaxPool", ["c"], ["m"], kernel_shape=[3], strides=[1], pads=[1, 1]),
        helper.make_node("AveragePool", ["m"], ["y"], kernel_shape=[2], strides=[2], ceil_mode=1),
    ]
    inits = [_tensor("w", rng.standard_normal((6, 2, 3))), _tensor("b", rng.standard_normal(6))]
    g = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4, 17])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 6, None])],
        initializer=inits,
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    seen = []
    model = graph.swap_backend(m, {"conv2d": lambda node: seen.append(node.name) or "direct"})
    assert seen == ["conv1d"]
    x = rng.standard_normal((2, 4, 17)).astype(np.float32)
    assert_close(model(x), _ort_model(m, x))


@pytest.mark.parametrize("op,attrs", [("MaxPool", {}), ("AveragePool", {"count_include_pad": 1})])
def test_pool_pads_wider_than_half_the_window(op, attrs):
    """ONNX allows pads up to the window (ORT: below it); the core's pools take
    at most half, so the mapping pads first (-inf / 0) and pools unpadded."""
    m = _model(
        [helper.make_node(op, ["x"], ["y"], kernel_shape=[3, 3], strides=[2, 1], pads=[2, 0, 2, 2], **attrs)],
        [],
        [2, 3, 6, 5],
        [2, 3, 4, 5],
    )
    assert "pad2d" in [s.op for s in graph.to_specs(m)[0]]
    x = np.random.default_rng(18).standard_normal((2, 3, 6, 5)).astype(np.float32)
    got, want = _run_both(m, x)
    assert_close(got, want)


def test_other_domain_unsupported():
    nodes = [helper.make_node("Relu", ["x"], ["y"], name="custom_relu", domain="com.example")]
    g = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3])],
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.example", 1)])
    with pytest.raises(ai3.UnsupportedOperation, match="custom_relu.*Relu.*com.example"):
        graph.swap_backend(m)


def test_unsupported_dtype():
    # float16 computes in float32 and int32 in int64 (int_tensors_test.py);
    # bfloat16 (NumPy has no such type) and uint64 (beyond int64) are refused.
    for elem in (TensorProto.BFLOAT16, TensorProto.UINT64):
        m = _model([helper.make_node("Relu", ["x"], ["y"])], [], [1, 3, 4, 4], [1, 3, 4, 4], elem=elem)
        with pytest.raises(ai3.DTypeError, match="BFLOAT16|UINT64"):
            graph.swap_backend(m)
    m = _model([helper.make_node("Relu", ["x"], ["y"])], [], [1, 3, 4, 4], [1, 3, 4, 4])
    with pytest.raises(ai3.DTypeError):
        graph.swap_backend(m, dtype="int32")


def test_wrong_sample_shape(export_dir):
    path, size = exported(export_dir, "resnet18", 17)
    with pytest.raises(ai3.ShapeError):
        graph.swap_backend(path, sample_input_shape=(1, 4, size, size))
    with pytest.raises(ai3.ShapeError):
        graph.swap_backend(path, sample_input_shape=(1, 3, size))


def test_wrong_input_at_run_time(export_dir):
    path, size = exported(export_dir, "resnet18", 17)
    model = graph.swap_backend(path)
    with pytest.raises(ai3.Error):
        model(np.zeros((1, 4, size, size), dtype=np.float32))
    with pytest.raises(ai3.Error):
        model(np.zeros((1, 3, size), dtype=np.float32))
    with pytest.raises(ai3.Error):
        model(np.zeros((1, 3, size, size), dtype=np.int32))


if __name__ == "__main__":
    pytest_main.run(__file__)
