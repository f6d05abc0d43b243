"""Long runs: the resident memory stays flat (within RSS_SLACK_MIB) over
1,000 forwards of a model in the PyTorch and ONNX frontends, and over 200
swap / drop cycles (no leaked layers, caches bounded)."""

from __future__ import annotations

import copy
import io

import numpy as np
import onnx
import pytest
import pytest_main
import torch
from concurrency import assert_flat_rss
from torch import nn

import ai3
import ai3.onnx


def small_cnn() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1, groups=2), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 10),
    ).eval()  # fmt: skip


X = torch.randn(2, 3, 32, 32)


@pytest.mark.parametrize("algo", ["default", "gemm", "smm", "winograd", "guess"])
def test_model_forwards(algo):
    model = ai3.swap_backend(small_cnn(), {"conv2d": algo if algo != "winograd" else "default"})
    assert_flat_rss(lambda: model(X), count=1000, warmup=50, what=f"ai3.Model ({algo}) forward")


def test_swapped_module_forwards():
    module = ai3.swap_conv2d(small_cnn(), "default")
    ai3.swap_linear(module)

    def step():
        with torch.no_grad():
            module(X)

    assert_flat_rss(step, count=1000, warmup=50, what="swapped nn.Module forward")


def onnx_model() -> onnx.ModelProto:
    buffer = io.BytesIO()
    torch.onnx.export(small_cnn(), (X,), buffer, opset_version=17, dynamo=False)
    return onnx.load_from_string(buffer.getvalue())


def test_onnx_swap_backend_forwards():
    model = ai3.onnx.swap_backend(onnx_model())
    x = X.numpy()
    assert_flat_rss(lambda: model(x), count=1000, warmup=50, what="ai3.onnx.swap_backend forward")


def test_onnx_rewritten_graph_forwards():
    session = ai3.onnx.InferenceSession(ai3.onnx.swap_conv2d(onnx_model(), "default"))
    feed = {session.get_inputs()[0].name: X.numpy()}
    assert_flat_rss(lambda: session.run(None, feed), count=1000, warmup=50, what="rewritten ONNX graph in ORT")


def test_swap_backend_cycles():
    net = small_cnn()
    assert_flat_rss(lambda: ai3.swap_backend(net)(X), count=200, warmup=20, what="swap_backend + forward, dropped")


def test_in_place_swap_cycles():
    net = small_cnn()

    def cycle():
        module = ai3.swap_conv2d(copy.deepcopy(net), "gemm")
        with torch.no_grad():
            module(X)

    assert_flat_rss(cycle, count=200, warmup=20, what="swap_conv2d + forward, dropped")


def test_onnx_swap_cycles():
    model = onnx_model()
    x = X.numpy()

    def cycle():
        session = ai3.onnx.InferenceSession(ai3.onnx.swap_conv2d(model, "default"))
        session.run(None, {session.get_inputs()[0].name: x})

    assert_flat_rss(cycle, count=200, warmup=20, what="onnx swap_conv2d + session + run, dropped")


def test_layer_cycles():
    rng = np.random.default_rng(0)
    w = rng.standard_normal((16, 3, 3, 3)).astype(np.float32)
    x = rng.standard_normal((2, 3, 32, 32)).astype(np.float32)
    assert_flat_rss(
        lambda: ai3.layers.Conv2d(w, None, padding=1, algorithm="winograd")(x),
        count=200,
        warmup=20,
        what="core layer built, run, dropped",
    )


if __name__ == "__main__":
    pytest_main.run(__file__)
