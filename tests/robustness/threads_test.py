"""One ai3.Model, one in-place swapped PyTorch module, one ONNX model run by
ai3's core, and single core layers, each called from 8 Python threads at
once and from a thread pool: results identical to serial calls, no crash,
no deadlock (the guarantee the README states)."""

from __future__ import annotations

import numpy as np
import pytest
import pytest_main
import torch
import torchvision
from concurrency import assert_same_as_serial

import ai3


def inputs(shape, count=4):
    g = torch.Generator().manual_seed(0)
    return [torch.randn(shape, generator=g) for _ in range(count)]


@pytest.fixture(scope="module")
def resnet():
    torch.manual_seed(0)
    return torchvision.models.resnet18(weights=None).eval()


@pytest.mark.parametrize("algo", ["default", "gemm", "winograd", "smm", "direct"])
def test_model_from_threads(resnet, algo):
    model = ai3.swap_backend(resnet, {"conv2d": "default" if algo == "winograd" else algo})
    assert_same_as_serial(model, inputs((2, 3, 64, 64)))


def test_model_numpy_inputs_from_threads(resnet):
    model = ai3.swap_backend(resnet)
    assert_same_as_serial(model, [x.numpy() for x in inputs((1, 3, 48, 48))])


def test_model_on_different_shapes_from_threads(resnet):
    # Each shape makes the model re-plan its buffers: threads alternate shapes.
    model = ai3.swap_backend(resnet)
    xs = inputs((1, 3, 64, 64), 2) + inputs((3, 3, 32, 32), 2)
    assert_same_as_serial(model, xs)


@pytest.mark.parametrize("algo", ["default", "implicit gemm", "kn2row"])
def test_swapped_module_from_threads(resnet, algo):
    import copy

    module = ai3.swap_conv2d(copy.deepcopy(resnet), algo)
    ai3.swap_linear(module)

    def call(x):
        with torch.no_grad():
            return module(x)

    assert_same_as_serial(call, inputs((2, 3, 64, 64)))


def test_one_layer_shared_by_threads():
    rng = np.random.default_rng(0)
    conv = ai3.layers.Conv2d(
        rng.standard_normal((8, 3, 3, 3)).astype(np.float32), None, stride=1, padding=1, algorithm="smm"
    )
    assert_same_as_serial(conv, [rng.standard_normal((2, 3, 20, 20)).astype(np.float32) for _ in range(4)])


def test_onnx_model_from_threads(resnet):
    import io

    import onnx

    import ai3.onnx

    buffer = io.BytesIO()
    torch.onnx.export(resnet, (torch.randn(1, 3, 64, 64),), buffer, opset_version=17, dynamo=False)
    model = ai3.onnx.swap_backend(onnx.load_from_string(buffer.getvalue()))
    assert_same_as_serial(model, [x.numpy() for x in inputs((1, 3, 64, 64))])


if __name__ == "__main__":
    pytest_main.run(__file__)
