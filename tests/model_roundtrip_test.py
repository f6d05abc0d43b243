"""ai3.Model as a user keeps it: deep copies, pickles and torch.save files
that rebuild the same model (same algorithms, same weights, same results,
nothing selected or timed again); a clear error when a gradient is asked of
it; and unbatched (C, H, W) images where PyTorch takes them."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest
import torch
import torchvision
from round_trips import round_trips
from torch import nn

import ai3


def _conv_algorithm(conv: nn.Conv2d) -> str:
    return "winograd" if conv.kernel_size == (3, 3) and conv.stride == (1, 1) and conv.groups == 1 else "gemm"


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_resnet18_round_trips_keep_algorithms_weights_and_results(dtype) -> None:
    torch.manual_seed(0)
    net = torchvision.models.resnet18(weights=None).eval().to(dtype)
    m = ai3.swap_backend(net, {"conv2d": _conv_algorithm}, sample_input_shape=(1, 3, 64, 64))
    x = torch.randn(2, 3, 64, 64, dtype=dtype)
    want = m(x)
    for how, copied in round_trips(m).items():
        assert copied.layers() == m.layers(), how
        assert (copied.dtype, copied.layout, copied.sample_input_shape) == (m.dtype, m.layout, m.sample_input_shape), (
            how
        )
        torch.testing.assert_close(copied(x), want, rtol=0, atol=0, msg=how)
        assert copied.layout_decision.plan == m.layout_decision.plan, how


def test_a_copy_keeps_the_weights_the_model_was_built_with() -> None:
    """The model is a snapshot of the module: training the module after
    swap_backend changes neither the model nor its pickles."""
    net = nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8), nn.ReLU(), nn.Flatten(), nn.Linear(8 * 6 * 6, 4)).eval()
    m = ai3.swap_backend(net, sample_input_shape=(1, 3, 8, 8))
    x = torch.randn(3, 3, 8, 8)
    want = net(x).detach()
    with torch.no_grad():
        for p in net.parameters():
            p.mul_(3)
    for how, copied in round_trips(m).items():
        torch.testing.assert_close(copied(x), want, msg=how)
    torch.testing.assert_close(m(x), want)


def test_a_copy_runs_independently_of_the_original() -> None:
    m = ai3.swap_backend(nn.Sequential(nn.Linear(5, 3), nn.ReLU()).eval(), sample_input_shape=(2, 5))
    copied = copy.deepcopy(m)
    del m
    x = np.random.default_rng(0).standard_normal((4, 5)).astype(np.float32)
    assert copied(x).shape == (4, 3)


def test_auto_is_not_timed_again_on_unpickling(monkeypatch) -> None:
    m = ai3.swap_backend(nn.Sequential(nn.Conv2d(3, 4, 3)).eval(), "auto", sample_input_shape=(1, 3, 12, 12))
    data = pickle.dumps(m)
    from ai3 import layouts, tuning

    def no_timing(*args, **kwargs):
        raise AssertionError("unpickling timed something")

    monkeypatch.setattr(tuning, "measure", no_timing)
    monkeypatch.setattr(layouts, "time_alternately", no_timing)
    assert pickle.loads(data).layers() == m.layers()


def test_keras_and_onnx_models_round_trip(tmp_path) -> None:
    import keras

    inputs = keras.Input((10, 10, 3))
    y = keras.layers.Conv2D(4, 3, activation="relu")(inputs)
    y = keras.layers.GlobalAveragePooling2D()(y)
    km = keras.Model(inputs, keras.layers.Dense(2)(y))
    x = np.random.default_rng(1).standard_normal((2, 10, 10, 3)).astype(np.float32)
    m = ai3.keras.swap_backend(km)
    for how, copied in round_trips(m).items():
        np.testing.assert_array_equal(copied(x), m(x), err_msg=how)

    net = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten()).eval()
    path = tmp_path / "net.onnx"
    torch.onnx.export(net, (torch.randn(1, 3, 10, 10),), str(path), dynamo=False)
    om = ai3.onnx.swap_backend(str(path))
    xo = np.random.default_rng(2).standard_normal((1, 3, 10, 10)).astype(np.float32)
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(om))(xo), om(xo))


def test_a_gradient_through_the_model_says_it_is_inference_only() -> None:
    m = ai3.swap_backend(nn.Sequential(nn.Conv2d(3, 4, 3)).eval(), sample_input_shape=(1, 3, 8, 8))
    x = torch.randn(1, 3, 8, 8, requires_grad=True)
    y = m(x)
    assert y.requires_grad
    with pytest.raises(ai3.UnsupportedOperation, match="inference-only.*swap layers in place"):
        y.sum().backward()
    with torch.no_grad():
        assert not m(x).requires_grad
    assert not m(x.detach()).requires_grad


def test_unbatched_image_sample_shape() -> None:
    """PyTorch's convs and pools take one (C, H, W) image: so does the model."""
    torch.manual_seed(0)
    net = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(8, 4, 3, padding=1)).eval()
    m = ai3.swap_backend(net, sample_input_shape=(3, 16, 16))
    x = torch.randn(3, 16, 16)
    torch.testing.assert_close(m(x), net(x), rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(m(x[None]), net(x[None]), rtol=1e-4, atol=1e-5)  # batches still run
    torch.testing.assert_close(pickle.loads(pickle.dumps(m))(x), net(x), rtol=1e-4, atol=1e-5)


def test_unbatched_shape_where_the_model_does_not_take_it() -> None:
    net = nn.Sequential(nn.Conv2d(3, 4, 3), nn.Flatten(), nn.Linear(4 * 14 * 14, 2)).eval()
    with pytest.raises(ai3.ShapeError, match=r"unbatched image.*give the batched shape \(1, 3, 16, 16\)"):
        ai3.swap_backend(net, sample_input_shape=(3, 16, 16))


def test_rank3_sequence_input_stays_batched() -> None:
    """A (N, L, E) sequence is not an image: its dim 0 stays the batch."""
    net = nn.Sequential(nn.LayerNorm(8), nn.Linear(8, 4)).eval()
    m = ai3.swap_backend(net, sample_input_shape=(2, 5, 8))
    assert not m.unbatched
    x = torch.randn(3, 5, 8)
    torch.testing.assert_close(m(x), net(x).detach(), rtol=1e-4, atol=1e-5)
