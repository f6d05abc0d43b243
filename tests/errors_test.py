"""Bad input gets an ai3.Error subclass naming the layer and the problem,
never a crash: wrong rank, mismatched channels, zero-size dims, unsupported
dtypes, unknown and inapplicable algorithms, bad parameters."""

from __future__ import annotations

import numpy as np
import pytest
import pytest_main
import torch

import ai3


def conv(**kwargs):
    args = dict(weight=torch.randn(4, 3, 3, 3), padding=1, name="features.0")
    args.update(kwargs)
    return ai3.layers.Conv2d(**args)


def test_hierarchy() -> None:
    assert issubclass(ai3.ShapeError, ai3.Error) and issubclass(ai3.ShapeError, ValueError)
    assert issubclass(ai3.DTypeError, ai3.Error) and issubclass(ai3.DTypeError, TypeError)
    assert issubclass(ai3.UnsupportedOperation, NotImplementedError)
    assert issubclass(ai3.UnknownAlgorithm, ValueError)
    assert issubclass(ai3.AlgorithmNotApplicable, ValueError)


def test_wrong_rank() -> None:
    with pytest.raises(ai3.ShapeError, match=r"conv2d layer 'features.0'.*rank-4.*rank 3"):
        conv()(torch.randn(3, 8, 8))


def test_mismatched_channels() -> None:
    with pytest.raises(ai3.ShapeError, match=r"'features.0'.*5 channels.*expects 3"):
        conv()(torch.randn(1, 5, 8, 8))


def test_input_smaller_than_kernel() -> None:
    with pytest.raises(ai3.ShapeError, match="smaller than the dilated kernel"):
        conv(padding=0, dilation=3)(torch.randn(1, 3, 4, 4))


def test_zero_size_spatial_dim() -> None:
    with pytest.raises(ai3.ShapeError, match="empty spatial dimension"):
        conv()(torch.randn(1, 3, 0, 8))


def test_zero_batch_gives_empty_output() -> None:
    y = conv()(torch.randn(0, 3, 8, 8))
    assert tuple(y.shape) == (0, 4, 8, 8)


@pytest.mark.parametrize("dtype", [torch.float16, torch.int32, torch.bfloat16, torch.complex64])
def test_unsupported_input_dtype(dtype) -> None:
    x = torch.zeros(1, 3, 8, 8, dtype=dtype)
    try:
        np_ok = True
        x.numpy()
    except Exception:
        np_ok = False
    with pytest.raises(ai3.Error) as info:
        conv()(x)
    assert "features.0" in str(info.value) or not np_ok
    assert isinstance(info.value, (ai3.DTypeError, ai3.InvalidArgument))


def test_float64_input_to_float32_layer() -> None:
    with pytest.raises(ai3.DTypeError, match=r"'features.0'.*float64.*float32"):
        conv()(torch.randn(1, 3, 8, 8, dtype=torch.float64))


def test_unsupported_weight_dtype() -> None:
    with pytest.raises(ai3.DTypeError, match="weight has dtype int64"):
        ai3.layers.Conv2d(np.zeros((4, 3, 3, 3), dtype=np.int64))


def test_bad_weight_rank() -> None:
    with pytest.raises(ai3.ShapeError, match=r"conv2d layer 'c'.*weight must have rank 4"):
        ai3.layers.Conv2d(np.zeros((4, 3, 3), dtype=np.float32), name="c")


def test_bias_shape() -> None:
    with pytest.raises(ai3.ShapeError, match=r"bias has shape \(3,\), expected \(4,\)"):
        conv(bias=torch.zeros(3))


def test_bad_groups() -> None:
    with pytest.raises(ai3.InvalidArgument, match="groups=2 must divide"):
        ai3.layers.Conv2d(torch.randn(3, 3, 3, 3), groups=2)


@pytest.mark.parametrize("field,value", [("stride", 0), ("dilation", -1), ("padding", -1)])
def test_bad_parameters(field, value) -> None:
    with pytest.raises(ai3.InvalidArgument):
        conv(**{field: value})


def test_unknown_algorithm() -> None:
    with pytest.raises(ai3.UnknownAlgorithm, match=r"'features.0'.*unknown conv2d algorithm 'fastest'.*'direct'"):
        conv(algorithm="fastest")


def test_inapplicable_algorithm_says_why() -> None:
    with pytest.raises(ai3.AlgorithmNotApplicable, match=r"'features.0'.*winograd.*stride"):
        conv(stride=2, algorithm="winograd")
    with pytest.raises(ai3.AlgorithmNotApplicable, match=r"winograd.*3x3"):
        conv(weight=torch.randn(4, 3, 5, 5), algorithm="winograd")


def test_guess_refuses_float64() -> None:
    with pytest.raises(ai3.AlgorithmNotApplicable, match="float64"):
        conv(weight=torch.randn(4, 3, 3, 3, dtype=torch.float64), algorithm="guess")


def test_placeholder_custom_refuses_with_where_to_write_it() -> None:
    with pytest.raises(ai3.AlgorithmNotApplicable, match=r"custom_algos/conv2d.cc"):
        conv(algorithm="custom")


def test_not_an_array() -> None:
    with pytest.raises(ai3.InvalidArgument, match="NumPy array, a torch tensor or a TensorFlow tensor"):
        conv()([[1.0, 2.0]])


def test_bad_layout() -> None:
    with pytest.raises(ai3.InvalidArgument, match="layout"):
        conv(layout="HWCN")


def test_linear_errors() -> None:
    lin = ai3.layers.Linear(torch.randn(4, 6), name="fc")
    with pytest.raises(ai3.ShapeError, match="fc"):
        lin(torch.randn(2, 5))
    with pytest.raises(ai3.ShapeError):
        ai3.layers.Linear(torch.randn(4, 6, 1))


def test_pool_errors() -> None:
    with pytest.raises(ai3.ShapeError, match="pool"):
        ai3.layers.MaxPool2d(2, name="pool")(torch.randn(3, 8, 8))
    with pytest.raises(ai3.InvalidArgument, match="half of kernel"):
        ai3.layers.MaxPool2d(2, padding=2)
    with pytest.raises(ai3.InvalidArgument):
        ai3.layers.AvgPool2d(0)
    with pytest.raises(ai3.Error):
        ai3.layers.AdaptiveAvgPool2d(0)


def test_flatten_errors() -> None:
    with pytest.raises(ai3.Error, match="flat"):
        ai3.layers.Flatten(3, name="flat")(torch.randn(2, 3))


def test_cuda_tensor_is_refused_clearly() -> None:
    class FakeCuda:
        pass

    with pytest.raises(ai3.InvalidArgument):
        conv()(FakeCuda())


def test_core_layer_refuses_non_contiguous_array() -> None:
    # ai3.layers copies a non-contiguous input; the raw core refuses one
    # instead of misreading it.
    from ai3 import _core

    layer = _core.make_layer("relu", algorithm="direct", name="r")
    x = np.zeros((4, 4), dtype=np.float32)[:, ::2]
    with pytest.raises(ai3.InvalidArgument, match="not contiguous"):
        layer(x)


if __name__ == "__main__":
    pytest_main.run(__file__)
