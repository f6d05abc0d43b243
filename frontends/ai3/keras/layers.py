"""Keras layers running ai3's core through TensorFlow ops (ai3.keras.ops).

Each class subclasses the Keras layer it replaces, so it holds the very same
variables (Conv2D "kernel" HWIO + "bias", Dense "kernel" [in, out] + "bias"),
computes the same output shapes and serialises the same config, plus
`algorithm` (an ai3 algorithm name or "default"). Only `call` differs: one
ai3 op on the NHWC (channels_last) tensor, then the layer's `activation`
(in-graph Keras/TF, no NumPy). They are registered as "ai3>Conv2D" etc., so
`keras.models.load_model` rebuilds them, algorithm included, once
`ai3.keras` is imported.

Unlike Keras' own layers they do not autocast inputs: an input that is not
float32/float64, or not of the weights' dtype, is an ai3.DTypeError; a wrong
shape is an ai3.ShapeError naming the layer (Keras' input specs are dropped
so that ai3 reports it). channels_first is not supported (the core runs
NHWC here; transposing every call is not ai3's job): constructing such a
layer raises ai3.UnsupportedOperation.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

import keras
import numpy as np
import tensorflow as tf

from ai3 import _core, errors, padding
from ai3.keras import ops

_PACKAGE = "ai3"
_FLOATS = ("float32", "float64")


def _same_pads(size: Optional[int], kernel: int, stride: int, dilation: int) -> tuple[int, int]:
    """TensorFlow's "same" padding (before, after) for one dimension; for an
    unknown size, the stride-1 padding (only used to ask the registry)."""
    pads = padding.same_1d(size, kernel, stride, dilation)
    return pads if pads is not None else padding.same_1d(None, kernel, 1, dilation)


class Ai3Layer:
    """What every ai3 Keras layer adds to its Keras base class."""

    op: str = ""

    def _init_ai3(self, algorithm: str) -> None:
        if not isinstance(algorithm, str):
            raise errors.InvalidSelector(
                f"{self.op} layer '{self.name}': algorithm must be a string, got {type(algorithm).__name__}"
            )
        self.algorithm = algorithm
        self.input_spec = None  # ai3 checks shapes itself (ai3.ShapeError)
        data_format = getattr(self, "data_format", "channels_last")
        if data_format != "channels_last":
            raise errors.UnsupportedOperation(
                f"{self.op} layer '{self.name}': data_format={data_format!r}; ai3's Keras layers run "
                "channels_last (NHWC) only"
            )

    def build(self, input_shape: Any) -> None:
        super().build(input_shape)  # type: ignore[misc]
        self.input_spec = None

    def _check_input(self, x: Any, weight_dtype: Optional[str] = None) -> None:
        dtype = tf.as_dtype(x.dtype).name
        if dtype not in _FLOATS:
            raise errors.DTypeError(
                f"{self.op} layer '{self.name}' ({self.algorithm}): input dtype is {dtype}; "
                "ai3 takes float32 or float64"
            )
        if weight_dtype is not None and dtype != weight_dtype:
            raise errors.DTypeError(
                f"{self.op} layer '{self.name}' ({self.algorithm}): input is {dtype} but the weights are {weight_dtype}"
            )

    def get_config(self) -> dict:
        config = super().get_config()  # type: ignore[misc]
        config["algorithm"] = self.algorithm
        return config

    # ---- What the core will run ------------------------------------------

    def core_layer(self, input_shape: Optional[Sequence[Optional[int]]] = None) -> Any:
        """A throwaway ai3._core layer with this layer's parameters (zero
        weights): constructing it checks that `algorithm` can take the layer
        (ai3.AlgorithmNotApplicable naming it otherwise) and resolves
        "default". `input_shape` (NHWC) gives "same" padding exactly."""
        return self._core_layer(None if input_shape is None else tuple(input_shape))

    def resolved_algorithm(self, input_shape: Optional[Sequence[Optional[int]]] = None) -> str:
        """The algorithm the core runs for this layer ("default" resolved)."""
        return self.core_layer(input_shape).algorithm

    def _core_layer(self, input_shape: Optional[tuple]) -> Any:
        raise NotImplementedError


def _weight_dtype(layer: Any) -> str:
    return tf.as_dtype(layer.kernel.dtype).name


@keras.saving.register_keras_serializable(package=_PACKAGE)
class Conv2D(Ai3Layer, keras.layers.Conv2D):
    """keras.layers.Conv2D run by an ai3 conv2d algorithm (NHWC)."""

    op = "conv2d"

    def __init__(self, *args: Any, algorithm: str = "default", **kwargs: Any) -> None:
        kwargs.setdefault("autocast", False)
        super().__init__(*args, **kwargs)
        self._init_ai3(algorithm)

    def call(self, inputs: Any) -> Any:
        dtype = _weight_dtype(self)
        self._check_input(inputs, dtype)
        bias = self.bias if self.use_bias else tf.zeros([0], dtype=dtype)
        outputs = ops.conv2d(
            inputs,
            self.kernel,
            bias,
            strides=self.strides,
            dilations=self.dilation_rate,
            groups=self.groups,
            padding=self.padding,
            use_bias=self.use_bias,
            algorithm=self.algorithm,
            layer_name=self.name,
        )
        if self.activation is not None:
            outputs = self.activation(outputs)
        return outputs

    def _core_layer(self, input_shape: Optional[tuple]) -> Any:
        kh, kw, cin_g, cout = (int(d) for d in self.kernel.shape)
        dtype = np.dtype(_weight_dtype(self))
        if self.padding == "same":
            h = input_shape[1] if input_shape is not None and len(input_shape) == 4 else None
            w = input_shape[2] if input_shape is not None and len(input_shape) == 4 else None
            pads = _same_pads(h, kh, self.strides[0], self.dilation_rate[0]) + _same_pads(
                w, kw, self.strides[1], self.dilation_rate[1]
            )
        else:
            pads = (0, 0, 0, 0)
        return _core.make_layer(
            "conv2d",
            dict(stride=tuple(self.strides), padding=tuple(pads), dilation=tuple(self.dilation_rate), groups=self.groups, layout="NHWC"),
            dict(weight=np.zeros((cout, cin_g, kh, kw), dtype), bias=np.zeros((cout,), dtype) if self.use_bias else None),
            algorithm=self.algorithm,
            name=self.name,
        )


@keras.saving.register_keras_serializable(package=_PACKAGE)
class Dense(Ai3Layer, keras.layers.Dense):
    """keras.layers.Dense run by an ai3 linear algorithm."""

    op = "linear"

    def __init__(self, *args: Any, algorithm: str = "default", **kwargs: Any) -> None:
        kwargs.setdefault("autocast", False)
        super().__init__(*args, **kwargs)
        self._init_ai3(algorithm)

    def call(self, inputs: Any, training: Any = None) -> Any:
        dtype = _weight_dtype(self)
        self._check_input(inputs, dtype)
        bias = self.bias if self.use_bias else tf.zeros([0], dtype=dtype)
        outputs = ops.dense(
            inputs, self.kernel, bias, use_bias=self.use_bias, algorithm=self.algorithm, layer_name=self.name
        )
        if self.activation is not None:
            outputs = self.activation(outputs)
        return outputs

    def _core_layer(self, input_shape: Optional[tuple]) -> Any:
        fin, fout = (int(d) for d in self.kernel.shape)
        dtype = np.dtype(_weight_dtype(self))
        return _core.make_layer(
            "linear",
            {},
            dict(weight=np.zeros((fout, fin), dtype), bias=np.zeros((fout,), dtype) if self.use_bias else None),
            algorithm=self.algorithm,
            name=self.name,
        )


@keras.saving.register_keras_serializable(package=_PACKAGE)
class ReLU(Ai3Layer, keras.layers.ReLU):
    """keras.layers.ReLU() (default arguments only) run by ai3's relu."""

    op = "relu"

    def __init__(self, *args: Any, algorithm: str = "default", **kwargs: Any) -> None:
        kwargs.setdefault("autocast", False)
        super().__init__(*args, **kwargs)
        self._init_ai3(algorithm)
        if self.max_value is not None or float(self.negative_slope) != 0.0 or float(self.threshold) != 0.0:
            raise errors.UnsupportedOperation(
                f"relu layer '{self.name}': ai3's relu is max(x, 0); max_value, negative_slope and "
                "threshold must keep their defaults"
            )

    def call(self, inputs: Any) -> Any:
        self._check_input(inputs)
        return ops.relu(inputs, algorithm=self.algorithm, layer_name=self.name)

    def _core_layer(self, input_shape: Optional[tuple]) -> Any:
        return _core.make_layer("relu", algorithm=self.algorithm, name=self.name)


def _pool_pads(layer: Any, input_shape: Optional[tuple]) -> tuple[int, int, int, int]:
    if layer.padding != "same":
        return (0, 0, 0, 0)
    h = input_shape[1] if input_shape is not None and len(input_shape) == 4 else None
    w = input_shape[2] if input_shape is not None and len(input_shape) == 4 else None
    return _same_pads(h, layer.pool_size[0], layer.strides[0], 1) + _same_pads(
        w, layer.pool_size[1], layer.strides[1], 1
    )


@keras.saving.register_keras_serializable(package=_PACKAGE)
class MaxPooling2D(Ai3Layer, keras.layers.MaxPooling2D):
    """keras.layers.MaxPooling2D run by ai3's maxpool2d."""

    op = "maxpool2d"

    def __init__(self, *args: Any, algorithm: str = "default", **kwargs: Any) -> None:
        kwargs.setdefault("autocast", False)
        super().__init__(*args, **kwargs)
        self._init_ai3(algorithm)

    def call(self, inputs: Any) -> Any:
        self._check_input(inputs)
        return ops.max_pool2d(
            inputs,
            ksize=self.pool_size,
            strides=self.strides,
            padding=self.padding,
            algorithm=self.algorithm,
            layer_name=self.name,
        )

    def _core_layer(self, input_shape: Optional[tuple]) -> Any:
        return _core.make_layer(
            "maxpool2d",
            dict(kernel=tuple(self.pool_size), stride=tuple(self.strides), padding=_pool_pads(self, input_shape), layout="NHWC"),
            algorithm=self.algorithm,
            name=self.name,
        )


@keras.saving.register_keras_serializable(package=_PACKAGE)
class AveragePooling2D(Ai3Layer, keras.layers.AveragePooling2D):
    """keras.layers.AveragePooling2D run by ai3's avgpool2d (padding is not
    counted in the average, as in TensorFlow)."""

    op = "avgpool2d"

    def __init__(self, *args: Any, algorithm: str = "default", **kwargs: Any) -> None:
        kwargs.setdefault("autocast", False)
        super().__init__(*args, **kwargs)
        self._init_ai3(algorithm)

    def call(self, inputs: Any) -> Any:
        self._check_input(inputs)
        return ops.avg_pool2d(
            inputs,
            ksize=self.pool_size,
            strides=self.strides,
            padding=self.padding,
            algorithm=self.algorithm,
            layer_name=self.name,
        )

    def _core_layer(self, input_shape: Optional[tuple]) -> Any:
        return _core.make_layer(
            "avgpool2d",
            dict(
                kernel=tuple(self.pool_size),
                stride=tuple(self.strides),
                padding=_pool_pads(self, input_shape),
                count_include_pad=False,  # TF divides by the window's pixels inside the input
                layout="NHWC",
            ),
            algorithm=self.algorithm,
            name=self.name,
        )


@keras.saving.register_keras_serializable(package=_PACKAGE)
class GlobalAveragePooling2D(Ai3Layer, keras.layers.GlobalAveragePooling2D):
    """keras.layers.GlobalAveragePooling2D run by ai3's adaptiveavgpool2d
    (output 1x1; keepdims honoured)."""

    op = "adaptiveavgpool2d"

    def __init__(self, *args: Any, algorithm: str = "default", **kwargs: Any) -> None:
        kwargs.setdefault("autocast", False)
        super().__init__(*args, **kwargs)
        self._init_ai3(algorithm)

    def call(self, inputs: Any) -> Any:
        self._check_input(inputs)
        return ops.global_avg_pool2d(inputs, keepdims=self.keepdims, algorithm=self.algorithm, layer_name=self.name)

    def _core_layer(self, input_shape: Optional[tuple]) -> Any:
        return _core.make_layer("adaptiveavgpool2d", dict(output_size=(1, 1), layout="NHWC"), algorithm=self.algorithm, name=self.name)


@keras.saving.register_keras_serializable(package=_PACKAGE)
class Flatten(Ai3Layer, keras.layers.Flatten):
    """keras.layers.Flatten (channels_last) run by ai3's flatten."""

    op = "flatten"

    def __init__(self, *args: Any, algorithm: str = "default", **kwargs: Any) -> None:
        kwargs.setdefault("autocast", False)
        super().__init__(*args, **kwargs)
        self._init_ai3(algorithm)

    def call(self, inputs: Any) -> Any:
        self._check_input(inputs)
        return ops.flatten(inputs, algorithm=self.algorithm, layer_name=self.name)

    def _core_layer(self, input_shape: Optional[tuple]) -> Any:
        return _core.make_layer("flatten", dict(start_dim=1, end_dim=-1), algorithm=self.algorithm, name=self.name)


# op -> the ai3 layer class.
CLASS_OF_OP: dict[str, type] = {
    "conv2d": Conv2D,
    "linear": Dense,
    "relu": ReLU,
    "maxpool2d": MaxPooling2D,
    "avgpool2d": AveragePooling2D,
    "adaptiveavgpool2d": GlobalAveragePooling2D,
    "flatten": Flatten,
}

__all__ = [
    "AveragePooling2D",
    "CLASS_OF_OP",
    "Conv2D",
    "Dense",
    "Flatten",
    "GlobalAveragePooling2D",
    "MaxPooling2D",
    "ReLU",
]
