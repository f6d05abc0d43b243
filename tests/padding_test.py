"""ai3.padding, the one padding rule of every frontend, against the
frameworks' own: TF's "SAME", ONNX's SAME_UPPER / SAME_LOWER (run by ONNX
Runtime) and PyTorch's "same", over sizes, kernels, strides and dilations."""

from __future__ import annotations

import itertools

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import pytest_main
import torch
import torch.nn.functional as F
from onnx import TensorProto, helper

import ai3
from ai3 import padding

GRID = list(itertools.product([1, 2, 5, 7, 8], [1, 2, 3, 4], [1, 2, 3], [1, 2]))  # size, kernel, stride, dilation


def onnx_conv(auto_pad: str, pads, size, kernel, stride, dilation) -> np.ndarray:
    x = np.arange(size * size, dtype=np.float32).reshape(1, 1, size, size)
    w = np.ones((1, 1, kernel, kernel), np.float32)
    attrs = dict(kernel_shape=[kernel, kernel], strides=[stride, stride], dilations=[dilation, dilation])
    attrs.update(auto_pad=auto_pad) if auto_pad else attrs.update(pads=pads)
    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "w"], ["y"], **attrs)],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [onnx.numpy_helper.from_array(w, "w")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]


# ONNX Runtime refuses auto_pad SAME with a dilation ("Dilation not supported
# for AutoPadType::SAME_UPPER or AutoPadType::SAME_LOWER").
@pytest.mark.parametrize("size, kernel, stride, dilation", [g for g in GRID if g[3] == 1])
@pytest.mark.parametrize("mode", ["SAME_UPPER", "SAME_LOWER"])
def test_onnx_same(mode, size, kernel, stride, dilation):
    t, b, l, r = padding.same_2d(
        (size, size), (kernel, kernel), (stride, stride), (dilation, dilation), lower=mode == "SAME_LOWER"
    )
    np.testing.assert_array_equal(
        onnx_conv(None, [t, l, b, r], size, kernel, stride, dilation),
        onnx_conv(mode, None, size, kernel, stride, dilation),
    )


@pytest.mark.parametrize("size, kernel, stride, dilation", [g for g in GRID if g[2] == 1])
def test_torch_same(size, kernel, stride, dilation):
    x = torch.arange(size * size, dtype=torch.float32).reshape(1, 1, size, size)
    w = torch.ones(1, 1, kernel, kernel)
    t, b, l, r = padding.same_2d((None, None), (kernel, kernel), (1, 1), (dilation, dilation))
    ours = F.conv2d(F.pad(x, (l, r, t, b)), w, dilation=dilation)
    torch.testing.assert_close(ours, F.conv2d(x, w, padding="same", dilation=dilation))


def test_tf_same_matches_onnx_same_upper():
    import os

    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import tensorflow as tf

    for size, kernel, stride, dilation in GRID:
        if stride > 1 and dilation > 1:
            continue  # TF's conv2d refuses strides and dilations > 1 together
        x = np.arange(size * size, dtype=np.float32).reshape(1, size, size, 1)
        w = np.ones((kernel, kernel, 1, 1), np.float32)
        t, b, l, r = padding.same_2d((size, size), (kernel, kernel), (stride, stride), (dilation, dilation))
        same = tf.nn.conv2d(x, w, stride, "SAME", dilations=dilation).numpy()
        explicit = tf.nn.conv2d(x, w, stride, [[0, 0], [t, b], [l, r], [0, 0]], dilations=dilation).numpy()
        np.testing.assert_array_equal(same, explicit)


def test_unknown_size_with_stride_is_none():
    assert padding.same_1d(None, 3, 2) is None
    assert padding.same_1d(None, 3, 1, 2) == (2, 2)


@pytest.mark.parametrize("value, want", [((1,), (1, 1, 1, 1)), ((1, 2), (1, 1, 2, 2)), ((1, 2, 3, 4), (1, 2, 3, 4))])
def test_explicit(value, want):
    assert padding.explicit(value) == want


@pytest.mark.parametrize("value", [(1, 2, 3), (1.5,), (True, 1), ()])
def test_explicit_refuses_other_forms(value):
    with pytest.raises(ai3.InvalidArgument):
        padding.explicit(value)


if __name__ == "__main__":
    pytest_main.run(__file__)
