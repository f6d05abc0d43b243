"""Keras 3 model -> LayerSpecs, by walking the functional graph.

    model = ai3.keras.swap_backend(keras_model, {"conv2d": "direct"})
    y = model(x_nhwc)            # NumPy (or torch) in, same kind out

The model's nodes (Keras 3 `keras.src.ops.node.Node`s, one per call of a
layer) are visited in the order Keras itself runs them (Function's
`_nodes_by_depth`, deepest first). A nested model (a Functional or a built
Sequential used as a layer) is flattened into the same DAG, its inputs
wired to the outer tensors; a layer called at several places becomes one
spec per call. Everything runs channels-last (the core's NHWC layout); a
layer the core cannot run is an ai3.UnsupportedOperation naming the layer
and its class, never a silent fallback.

"same" padding with a stride above 1 depends on the input's height and
width; it is computed for the model's static input size (or
sample_input_shape's), so the returned ai3.Model matches Keras at that size
(any batch).

Keras layer -> specs (the table MAPPING below, one entry per class, which the
in-place swaps of ai3.keras use as well):
  Conv2D                   conv2d (HWIO kernel -> OIHW), + activation
  DepthwiseConv2D          conv2d with groups = C, out = C * multiplier
  SeparableConv2D          depthwise conv2d + pointwise (1x1) conv2d
  Conv2DTranspose          conv_transpose2d ((kh,kw,out,in) -> (in,out,kh,kw))
  GroupNormalization       groupnorm over the channels (gamma, beta)
  UpSampling2D, Resizing   resize (nearest repeats / bilinear half-pixel;
                           Resizing as tf.image.resize)
  Dense                    linear ([in,out] -> [out,in]) over the last
                           axis, any rank, + activation
  BatchNormalization       batchnorm2d (inference statistics)
  LayerNormalization       layernorm over the trailing axes (gamma, beta)
  Activation / activation= relu, relu6 -> clamp(0,6), sigmoid, silu/swish,
                           tanh, softmax, log_softmax, gelu (exact or tanh),
                           hard_silu/hard_swish, hard_sigmoid (1/6, 1/2),
                           elu, selu, softplus, softsign, exponential (exp),
                           mish, linear (identity)
  ReLU / Softmax layers    relu, clamp(0,max_value) or thresholded_relu
                           (threshold) / softmax(axis)
  LeakyReLU / ELU / PReLU  leaky_relu(alpha = negative_slope) / elu(alpha) /
                           prelu (alpha broadcast over the input)
  MaxPooling2D             maxpool2d ("same" -> explicit asymmetric pads)
  AveragePooling2D         avgpool2d ("same" -> pads, count_include_pad=False)
  GlobalAveragePooling2D   adaptiveavgpool2d (1,1) [+ flatten unless keepdims]
  GlobalMaxPooling2D       maxpool2d over the whole (static) map + flatten
  Flatten                  flatten(1, -1) (Keras flattens NHWC memory order)
  Add / Multiply / Subtract  add / mul / sub (NumPy broadcasting, as Keras's
  Maximum / Minimum        merge layers do; more than two inputs: a chain),
  Average                  maximum / minimum, the sum times 1 / n
  Concatenate              concat(axis)
  ZeroPadding2D            pad2d (folded into a following conv2d, or a max
                           pool over a relu's output, where exact)
  Cropping2D               slice along H, then W
  Reshape                  identity where it moves nothing (same shape, or
                           (N,C) -> (N,1,1,C) undoing a global pooling's
                           flatten), else reshape([0, *target_shape])
  Permute                  permute([0, *dims])
  keras.ops add/subtract/multiply/divide (`a + b`, `x * 0.5` on KerasTensors)
                           add / sub / mul / div of two tensors, or of a
                           tensor and a constant (weights["other"])
  keras.ops sin, cos, tan, arcsin, arccos, arctan, sinh, cosh, arcsinh,
  arccosh, arctanh         the unary op (asin for arcsin, ...)
  MultiHeadAttention       multihead_attention (torch's layout, batch first;
                           one input for self-attention), unmasked or causal
  LSTM, GRU, SimpleRNN,    unrolled over the (fixed) sequence by
  Bidirectional (concat,   ai3.recurrent: a linear of the whole input, then
  sum)                     per step a linear of H and the gates; states of
                           return_state for the layers that read them
  LayerScale (ConvNeXt)    mul by gamma;  CustomScaleLayer
  (InceptionResNetV2)      x + scale * r as mul then add
  Rescaling, Normalization batchnorm2d computing x * scale + offset exactly
  Dropout, SpatialDropout*, GaussianNoise/Dropout, ActivityRegularization,
  Identity, InputLayer     identity (dropped)
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ai3 import errors, frontend, padding, recurrent, selection, spec
from ai3.spec import MODEL_INPUT, LayerSpec, fold_zero_padding, prune_dead


def _keras():
    import keras

    return keras


def _describe(layer: Any) -> str:
    return f"layer '{getattr(layer, 'name', '?')}' ({type(layer).__module__}.{type(layer).__name__})"


def _unsupported(layer: Any, why: str) -> errors.UnsupportedOperation:
    return errors.UnsupportedOperation(f"{_describe(layer)}: {why}")


def _numpy(value: Any) -> np.ndarray:
    if hasattr(value, "numpy"):  # a keras.Variable or backend tensor
        return np.asarray(value.numpy())
    return np.asarray(_keras().ops.convert_to_numpy(value))


def _is_model(layer: Any) -> bool:
    """A Functional (or built Sequential) whose graph can be flattened."""
    keras = _keras()
    if isinstance(layer, keras.Sequential):
        return getattr(layer, "_functional", None) is not None
    return isinstance(layer, keras.Model) and hasattr(layer, "_nodes_by_depth")


def _graph_of(model: Any) -> Any:
    """The Function (inputs, outputs, _nodes_by_depth) of a model."""
    keras = _keras()
    if isinstance(model, keras.Sequential):
        return model._functional
    return model


def _ints(v: Any, count: int) -> tuple[int, ...]:
    """`count` ints (one per spatial dim) from an int or a sequence of 1 or
    `count` of them, as Keras' layers take strides and rates."""
    if isinstance(v, int):
        return (v,) * count
    v = tuple(int(x) for x in v)
    return v * count if len(v) == 1 else v[:count]


def _pair(v: Any) -> tuple[int, int]:
    h, w = _ints(v, 2)
    return h, w


def same_padding(size: int | None, kernel: int, stride: int, dilation: int = 1) -> tuple[int, int] | None:
    """TensorFlow's "same" padding along one axis as (before, after), the odd
    pixel after (ai3.padding); None when it depends on an unknown size
    (stride > 1)."""
    return padding.same_1d(size, kernel, stride, dilation)


# Keras activation functions ai3 has, by their name in keras.activations.
_ACTIVATIONS = (
    "relu",
    "relu6",
    "sigmoid",
    "silu",
    "swish",
    "tanh",
    "softmax",
    "log_softmax",
    "gelu",
    "hard_silu",
    "hard_swish",
    "hard_sigmoid",
    "linear",
    # issue 17 (core/ops/unary)
    "elu",
    "selu",
    "softplus",
    "softsign",
    "exponential",
    "mish",
)


def _activation_name(fn: Any) -> str | None:
    """The keras.activations name of a built-in activation function, or
    None for anything else (a lambda, a custom function)."""
    activations = _keras().activations
    if fn is None:
        return "linear"
    name = getattr(fn, "__name__", None)
    if name and getattr(activations, name, None) is fn:
        return name
    for candidate in _ACTIVATIONS:
        if getattr(activations, candidate, None) is fn:
            return candidate
    return None


# Keras' recurrent layers (issue 17) by ai3.recurrent's cell kind.
_RECURRENT = {"LSTM": "lstm", "GRU": "gru", "SimpleRNN": "rnn"}
# Keras' gate blocks in ONNX's order: LSTM (i, f, c, o) -> (i, o, f, c);
# GRU's (z, r, h) is ONNX's already.
_KERAS_GATES = {"lstm": [0, 3, 1, 2], "gru": [0, 1, 2], "rnn": [0]}


def _recurrent_direction(layer: Any, kind: str, reverse: bool) -> recurrent.Direction:
    """One recurrent layer's weights as ai3.recurrent's Direction: Keras'
    (in, G*units) kernels transposed, in ONNX's gate order; GRU's
    reset_after bias is (input, recurrent) rows."""
    cell = layer.cell
    order = _KERAS_GATES[kind]

    gates = functools.partial(recurrent.in_onnx_order, order=order)
    rows = len(order) * int(cell.units)
    bias = _numpy(cell.bias) if cell.use_bias else np.zeros(rows)
    w_bias, r_bias = (bias[0], bias[1]) if bias.ndim == 2 else (bias, np.zeros(rows))
    names = [_activation_name(cell.activation)]
    if kind != "rnn":
        names = [_activation_name(cell.recurrent_activation)] + names * (2 if kind == "lstm" else 1)
    return recurrent.Direction(
        w=gates(_numpy(cell.kernel).T),
        r=gates(_numpy(cell.recurrent_kernel).T),
        w_bias=gates(w_bias),
        r_bias=gates(r_bias),
        activations=[str(n) for n in names],
        reverse=reverse or bool(layer.go_backwards),
    )


# keras.ops arithmetic (what `a + b`, `x * 0.5` on KerasTensors record) by
# the core op it becomes.
_TENSOR_OPS = {
    "Add": "add", "Subtract": "sub", "Multiply": "mul", "Divide": "div", "TrueDivide": "div", "Mod": "remainder",
}  # fmt: skip


# keras.ops comparisons and logical ops of two operands (`x > 0`), by the
# core op (core/ops/compare, bool results); _FLIPPED_COMPARE: the op with
# its operands swapped (a constant on the left).
_COMPARE_OPS = {
    "Greater": "greater", "GreaterEqual": "greater_equal", "Less": "less", "LessEqual": "less_equal",
    "Equal": "equal", "NotEqual": "not_equal", "LogicalAnd": "logical_and", "LogicalOr": "logical_or",
    "LogicalXor": "logical_xor",
}  # fmt: skip
_FLIPPED_COMPARE = {"greater": "less", "less": "greater", "greater_equal": "less_equal", "less_equal": "greater_equal"}


# keras.ops functions of one tensor (keras.ops.sin(x), ...) by the core op
# (core/ops/unary).
_UNARY_TENSOR_OPS = {
    "Sin": "sin", "Cos": "cos", "Tan": "tan", "Arcsin": "asin", "Arccos": "acos", "Arctan": "atan", "Sinh": "sinh",
    "Cosh": "cosh", "Arcsinh": "asinh", "Arccosh": "acosh", "Arctanh": "atanh",
}  # fmt: skip


# keras.ops functions of one tensor with attributes of their own (issue 17),
# by the core op; _Mapper.numpy_op maps them.
_NUMPY_OPS = {"Argmax": "argmax", "Argmin": "argmin", "Triu": "trilu", "Tril": "trilu", "Cumsum": "cumsum"}


def _two_operands(node: Any, layer: Any) -> tuple[list[Any], list[bool]]:
    """A binary keras.ops call's two positional operands, and which are
    KerasTensors (at least one: two constants would have been computed)."""
    args = list(node.arguments.args)
    if len(args) != 2 or node.arguments.kwargs:
        raise _unsupported(layer, f"a keras.ops call with {len(args)} positional arguments; ai3 maps binary ones")
    is_tensor = [isinstance(a, _keras().KerasTensor) for a in args]
    if not any(is_tensor):
        raise _unsupported(layer, "an operation on two constants")
    return args, is_tensor


def _is_top_k(op: Any) -> bool:
    """Whether `op` is keras.ops.top_k's operation (two outputs)."""
    from keras.src.ops import math as kmath

    return type(op) is getattr(kmath, "TopK", None)


def _is_core_op(op: Any, name: str) -> bool:
    """Whether `op` is the keras.ops operation `name` of keras.src.ops.core
    (keras.ops.cast's Cast)."""
    from keras.src.ops import core as kcore

    return type(op) is getattr(kcore, name, None)


def _tensor_op(op: Any, table: dict[str, str] = _TENSOR_OPS) -> str | None:
    """The core op of a keras.ops operation of `table`, else None."""
    from keras.src.ops import numpy as knp

    name = type(op).__name__
    return table[name] if name in table and type(op) is getattr(knp, name, None) else None


def _merge_op(layer: Any) -> str | None:
    """The core op of a Keras merge layer that maps to one (Add, Multiply,
    Subtract), else None."""
    L = _keras().layers
    for cls, op in (
        ("Add", "add"),
        ("Multiply", "mul"),
        ("Subtract", "sub"),
        ("Maximum", "maximum"),
        ("Minimum", "minimum"),
        ("Average", "average"),
    ):
        if type(layer) is getattr(L, cls, None):
            return op
    return None


_IDENTITY_LAYERS = (
    "InputLayer",
    "Dropout",
    "SpatialDropout1D",
    "SpatialDropout2D",
    "SpatialDropout3D",
    "GaussianNoise",
    "GaussianDropout",
    "AlphaDropout",
    "ActivityRegularization",
    "Identity",
)


def _broadcast(a: tuple, b: tuple) -> tuple:
    """NumPy's broadcast of two shapes (None: unknown)."""
    n = max(len(a), len(b))
    a, b = (1,) * (n - len(a)) + tuple(a), (1,) * (n - len(b)) + tuple(b)
    return tuple(y if x == 1 else x if y == 1 or x == y else (x or y) for x, y in zip(a, b))


class _Mapper:
    def __init__(self, sample_input_shape: tuple[int, ...] | None):
        self.specs: list[LayerSpec] = []
        self.names: dict[str, int] = {}
        self.sample = sample_input_shape
        # id(graph tensor) -> (spec index, concrete shape)
        self.tensors: dict[int, tuple[int, tuple]] = {}
        # Every layer the mapping refused, with why: the mapping goes on
        # past one (its outputs stand in as unknown tensors), so that one
        # refusal lists them all.
        self.refused: list[tuple[Any, str]] = []

    # -- bookkeeping ----------------------------------------------------
    def unique(self, name: str) -> str:
        count = self.names.get(name, 0)
        self.names[name] = count + 1
        return name if count == 0 else f"{name}#{count}"

    def add(self, op: str, name: str, inputs: list[int], layer: Any, in_shape: tuple, attrs=None, weights=None) -> int:
        shape = None if in_shape is None else tuple(None if d is None else int(d) for d in in_shape)
        self.specs.append(LayerSpec(self.unique(name), op, inputs, attrs or {}, weights or {}, layer, shape))
        return len(self.specs) - 1

    # -- graph walk -----------------------------------------------------
    def walk(self, model: Any, prefix: str, inputs: list[tuple[int, tuple]]) -> list[tuple[int, tuple]]:
        """Maps the graph of `model` with its inputs bound to `inputs`
        ((spec index, shape) each); returns its outputs likewise."""
        graph = _graph_of(model)
        if len(graph.inputs) != len(inputs):
            raise _unsupported(model, f"takes {len(graph.inputs)} inputs; ai3 models take one")
        for t, bound in zip(graph.inputs, inputs):
            self.tensors[id(t)] = bound
        for depth in sorted(graph._nodes_by_depth, reverse=True):
            for node in graph._nodes_by_depth[depth]:
                if node.operation is None or node.is_input:
                    continue
                try:
                    self.node(node, prefix)
                except Exception as e:
                    if any(id(t) not in self.tensors for t in node.input_tensors):
                        raise  # not connected to the input at all
                    if isinstance(e, errors.UnsupportedOperation):
                        self.refused.append((node.operation, str(e)))
                    elif not self.refused:
                        raise
                    # (Otherwise it reads a refused layer's stand-in, whose
                    # values are unknown: the refusal is that layer's.)
                    for t in node.outputs:  # its readers map on; they only need a tensor of this shape
                        self.tensors[id(t)] = (_REFUSED, tuple(getattr(t, "shape", ())))
        outs = []
        for t in graph.outputs:
            if id(t) not in self.tensors:
                raise _unsupported(model, f"output '{getattr(t, 'name', t)}' is not connected to the input")
            outs.append(self.tensors[id(t)])
        return outs

    def node(self, node: Any, prefix: str) -> None:
        keras = _keras()
        layer = node.operation
        name = prefix + layer.name
        tensors = list(node.input_tensors)
        missing = [t for t in tensors if id(t) not in self.tensors]
        if missing:
            raise _unsupported(layer, "takes a tensor that does not come from the model's input")
        bound = [self.tensors[id(t)] for t in tensors]
        if type(layer).__name__ in _RECURRENT or isinstance(layer, keras.layers.Bidirectional):
            for t, out in zip(node.outputs, self.recurrent(layer, name, bound)):
                self.tensors[id(t)] = out
            return
        if _is_top_k(layer) and len(bound) == 1:
            for t, out in zip(node.outputs, self.top_k(layer, name, *bound[0])):
                self.tensors[id(t)] = out
            return
        if len(node.outputs) != 1 and not _is_model(layer):
            raise _unsupported(layer, f"returns {len(node.outputs)} tensors; ai3 layers return one")
        if _is_model(layer):
            outs = self.walk(layer, name + "/", bound)
            if len(outs) != len(node.outputs):
                raise _unsupported(layer, "a nested model whose outputs do not match its call")
            for t, o in zip(node.outputs, outs):
                self.tensors[id(t)] = o
            return
        out_shape = self.output_shape(layer, node, bound)
        op = _tensor_op(layer)
        if op is not None:  # `a + b`, `x * 0.5` written on KerasTensors
            index = self.tensor_op(op, node, layer, name, bound)
        elif _tensor_op(layer, _UNARY_TENSOR_OPS) is not None and len(bound) == 1:
            index = self.add(_tensor_op(layer, _UNARY_TENSOR_OPS), name, [bound[0][0]], layer, bound[0][1])
        elif _tensor_op(layer, _NUMPY_OPS) is not None and len(bound) == 1:
            index = self.numpy_op(_tensor_op(layer, _NUMPY_OPS), layer, name, *bound[0])
        elif _is_core_op(layer, "Cast") and len(bound) == 1:
            index = self.cast(layer, name, *bound[0])
        elif _tensor_op(layer, _COMPARE_OPS) is not None:
            index = self.comparison(_tensor_op(layer, _COMPARE_OPS), node, layer, name, bound)
        elif _tensor_op(layer, {"GetItem": "getitem"}) is not None and len(bound) == 1:
            index = self.get_item(node, layer, name, *bound[0], out_shape)
        elif _merge_op(layer) is not None:
            if len(bound) < 2:
                raise _unsupported(layer, "needs at least two inputs")
            index = self.merge(_merge_op(layer), layer, name, bound)
        elif isinstance(layer, keras.layers.Concatenate):
            if len(bound) < 2:
                raise _unsupported(layer, "needs at least two inputs")
            index = self.add("concat", name, [i for i, _ in bound], layer, bound[0][1], {"axis": int(layer.axis)})
        elif isinstance(layer, keras.layers.MultiHeadAttention):
            index = self.multihead_attention(node, layer, name)
        elif type(layer).__name__ == "CustomScaleLayer" and len(bound) == 2:
            # InceptionResNetV2's residual: inputs[0] + inputs[1] * scale.
            scaled = self.add(
                "mul",
                name + "/scale",
                [bound[1][0]],
                layer,
                bound[1][1],
                {"reverse": False},
                {"other": np.asarray(float(layer.scale))},
            )
            index = self.add("add", name, [bound[0][0], scaled], layer, bound[0][1])
        else:
            if len(bound) != 1:
                raise _unsupported(
                    layer, f"ai3's core has no equivalent of this layer (called on {len(bound)} tensors)"
                )
            index = self.layer(layer, name, bound[0][0], bound[0][1])
        self.tensors[id(node.outputs[0])] = (index, out_shape)

    def comparison(self, op: str, node: Any, layer: Any, name: str, bound: list[tuple[int, tuple]]) -> int:
        """A comparison or logical op of two tensors, or of a tensor and a
        number (in the tensor's dtype; on the left, the op flipped);
        not_equal the logical_not of equal."""
        if op == "not_equal":
            equal = self.comparison("equal", node, layer, name + "/equal", bound)
            return self.add("logical_not", name, [equal], layer, bound[0][1])
        args, is_tensor = _two_operands(node, layer)
        if all(is_tensor):
            return self.add(op, name, [i for i, _ in bound], layer, bound[0][1])
        ((x, shape),) = bound
        tensor, other = (args[0], args[1]) if is_tensor[0] else (args[1], args[0])
        dtype = str(tensor.dtype)
        kind = np.bool_ if dtype == "bool" else np.int64 if "int" in dtype else np.dtype(dtype)
        constant = np.asarray(
            other if isinstance(other, (int, float, list, tuple, np.ndarray)) else _numpy(other), dtype=kind
        )
        if not is_tensor[0]:
            op = _FLIPPED_COMPARE.get(op, op)
        return self.add(op, name, [x], layer, shape, {}, {"other": constant})

    def get_item(self, node: Any, layer: Any, name: str, x: int, shape: tuple, out_shape: tuple) -> int:
        """x[key] (Keras' GetItem), basic indexing (ints, slices, None,
        ...): core slices as ai3.spec.index_slices plans them (the None
        batch dim taken as 1 and 2, to tell it apart), then a reshape to
        the output's shape where ints drop axes or None adds them."""
        if shape is None or out_shape is None or sum(d is None for d in out_shape) > 1:
            raise _unsupported(layer, "indexing a tensor of unknown shape: pass sample_input_shape to swap_backend")
        key = node.arguments.args[1]
        try:
            slices, reshape = spec.index_slices(
                key, [1 if d is None else d for d in shape], [2 if d is None else d for d in shape]
            )
        except ValueError as e:
            raise _unsupported(layer, str(e)) from e
        current, dims = x, list(shape)
        for n, (axis, start, stop, step) in enumerate(slices):
            attrs = {"axis": axis, "start": start, "stop": stop, "step": step}
            current = self.add("slice", f"{name}/slice{n}", [current], layer, tuple(dims), attrs)
            if dims[axis] is not None:
                dims[axis] = len(range(*slice(start, stop, step).indices(dims[axis])))
        if reshape:
            target = [-1 if d is None else int(d) for d in out_shape]
            current = self.add("reshape", name, [current], layer, tuple(dims), {"shape": target})
        return current

    def cast(self, layer: Any, name: str, x: int, shape: tuple) -> int:
        """keras.ops.cast(x, dtype): the core's cast; integers of any width
        in int64 (ai3's one integer dtype, whose values agree while they
        fit the narrower one), bool, float32 and float64."""
        dtype = str(layer.dtype)
        to = "int64" if "int" in dtype else dtype
        if to not in ("int64", "bool", "float32", "float64"):
            raise _unsupported(layer, f"a cast to {dtype}; ai3 computes float32, float64, int64 and bool")
        return self.add("cast", name, [x], layer, shape, {"to": to})

    def top_k(self, layer: Any, name: str, x: int, shape: tuple) -> list[tuple[int, tuple]]:
        """keras.ops.top_k(x, k, sorted=True) along the last axis: topk (the
        indices, best first, ties by index: an order sorted=False allows
        too) and gather_elements of x by them; (values, indices)."""
        k = int(layer.k)
        out_shape = None if shape is None else (*shape[:-1], k)
        indices = self.add("topk", name + "/indices", [x], layer, shape, {"k": k, "axis": -1, "largest": True})
        values = self.add("gather_elements", name, [x, indices], layer, shape, {"axis": -1})
        return [(values, out_shape), (indices, out_shape)]

    def recurrent(self, layer: Any, name: str, bound: list[tuple[int, tuple]]) -> list[tuple[int, tuple]]:
        """LSTM, GRU and SimpleRNN, alone or in a Bidirectional (merge_mode
        concat or sum), unrolled over the sequence by ai3.recurrent: their
        outputs, (output, *states) with return_state."""
        keras = _keras()
        wrapped = isinstance(layer, keras.layers.Bidirectional)
        inner = [layer.forward_layer, layer.backward_layer] if wrapped else [layer]
        if type(inner[0]).__name__ not in _RECURRENT:
            raise _unsupported(layer, f"a Bidirectional {type(inner[0]).__name__}; ai3 maps LSTM, GRU and SimpleRNN")
        if len(bound) != 1:
            raise _unsupported(layer, "an initial state or mask given as an input; ai3 maps zero initial states")
        (x, shape) = bound[0]
        if shape is None or len(shape) != 3 or shape[1] is None:
            raise _unsupported(layer, "an input of unknown sequence length: pass sample_input_shape to swap_backend")
        first = inner[0]
        if getattr(first, "stateful", False):
            raise _unsupported(layer, "a stateful layer; ai3 runs each call from a zero state")
        if first.go_backwards and first.return_sequences and not wrapped:
            raise _unsupported(layer, "go_backwards with return_sequences (outputs in reversed order)")
        merge = getattr(layer, "merge_mode", None) if wrapped else None
        if wrapped and merge not in ("concat", "sum"):
            raise _unsupported(layer, f"merge_mode {merge!r}; ai3 maps 'concat' and 'sum'")
        kind, hidden, steps = _RECURRENT[type(first).__name__], int(first.cell.units), int(shape[1])
        directions = [_recurrent_direction(lay, kind, wrapped and k == 1) for k, lay in enumerate(inner)]
        for d in directions:
            why = recurrent.check_activations(kind, d.activations)
            if why:
                raise _unsupported(layer, why)
        cell = recurrent.Cell(kind, hidden, linear_before_reset=kind == "gru" and bool(first.cell.reset_after))

        def emit(op: str, ins: list, attrs: dict, weights: dict, suffix: str, in_shape: tuple | None = None) -> int:
            return self.add(op, name + suffix, ins, layer, in_shape, attrs, weights)

        source = emit("permute", [x], {"dims": [1, 0, 2]}, {}, "/time_major")
        done = recurrent.run(emit, source, steps, cell, directions, batch=shape[0])
        width = hidden * (2 if merge == "concat" else 1)

        def merged(parts: list, axis: int, what: str) -> int:
            if merge == "sum":
                return emit("add", parts, {}, {}, f"/{what}")
            return recurrent.joined(emit, parts, axis, what)

        if first.return_sequences:
            y = merged(done.ys, 2, "sequences")
            out = (emit("permute", [y], {"dims": [1, 0, 2]}, {}, "/batch_major"), (shape[0], steps, width))
        else:
            last = merged(done.hs, 2, "last")
            out = (emit("reshape", [last], {"shape": [-1, width]}, {}, "/last_output"), (shape[0], width))
        if not first.return_state:
            return [out]
        states = [done.hs] + ([done.cs] if kind == "lstm" else [])
        # (Keras' Bidirectional returns each direction's states in turn.)
        flat = [(s[k], k) for k in range(len(inner)) for s in states]
        return [out] + [
            (emit("reshape", [index], {"shape": [-1, hidden]}, {}, f"/state{n}"), (shape[0], hidden))
            for n, (index, _) in enumerate(flat)
        ]

    def numpy_op(self, op: str, layer: Any, name: str, x: int, shape: tuple) -> int:
        """keras.ops.argmax / argmin(x, axis=None, keepdims=False),
        cumsum(x, axis=None, dtype=None) and triu / tril(x, k=0). Without an
        axis they read the flattened tensor, as NumPy; argmax's keepdims
        then keeps every dim as size 1."""
        if op == "trilu":
            return self.add(
                "trilu", name, [x], layer, shape, {"upper": type(layer).__name__ == "Triu", "k": int(layer.k)}
            )
        axis = layer.axis
        if op == "cumsum" and getattr(layer, "dtype", None) not in (None, "float32", "float64"):
            raise _unsupported(layer, f"a cumsum in {layer.dtype}; ai3 maps Keras' float sums")
        if axis is not None:
            attrs = {"axis": int(axis)} if op == "cumsum" else {"axis": int(axis), "keepdim": bool(layer.keepdims)}
            return self.add(op, name, [x], layer, shape, attrs)
        flat_shape = (None if any(d is None for d in shape) else math.prod(shape),)
        flat = self.add("reshape", name + "/flat", [x], layer, shape, {"shape": [-1]})
        if op == "cumsum" or not layer.keepdims:
            return self.add(op, name, [flat], layer, flat_shape, {"axis": 0})
        found = self.add(op, name + "/" + op, [flat], layer, flat_shape, {"axis": 0, "keepdim": True})
        return self.add("reshape", name, [found], layer, (1,), {"shape": [1] * len(shape)})

    def merge(self, op: str, layer: Any, name: str, bound: list[tuple[int, tuple]]) -> int:
        """A merge layer over its inputs: one add node where all shapes
        match (the core sums N tensors at once), else a left-to-right chain
        of broadcasting binary ops, as Keras computes it."""
        ins = [i for i, _ in bound]
        if op == "average":  # the sum, times 1 / n (issue 17)
            total = self.merge("add", layer, name + "/sum", bound)
            shape = bound[0][1]
            for _, s in bound[1:]:
                shape = _broadcast(shape, s)
            return self.add(
                "mul", name, [total], layer, shape, {"reverse": False}, {"other": np.asarray(1.0 / len(bound))}
            )
        if op == "add" and len({s[1:] for _, s in bound}) == 1:
            return self.add("add", name, ins, layer, bound[0][1])
        index, shape = ins[0], bound[0][1]
        for k, (i, s) in enumerate(bound[1:], start=1):
            step = name if k == len(bound) - 1 else f"{name}/{k}"
            index = self.add(op, step, [index, i], layer, shape)
            shape = _broadcast(shape, s)
        return index

    def multihead_attention(self, node: Any, layer: Any, name: str) -> int:
        """MultiHeadAttention over (B, L, D) tensors as the core's
        multihead_attention (torch's nn.MultiheadAttention layout, batch
        first): the query/key/value kernels (D, H, Dh) become the rows of
        in_proj_weight (3D, D), the output kernel (H, Dh, D) out_proj_weight.
        Self-attention (query, key and value one tensor) takes one input."""
        keras = _keras()
        names = ("query", "value", "key")
        args = dict(zip(names, node.arguments.args[:3]))
        kwargs = dict(node.arguments.kwargs)
        args.update({k: kwargs.pop(k) for k in names if k in kwargs})
        if (
            any(kwargs.get(k) is not None for k in ("query_mask", "value_mask", "key_mask", "attention_mask"))
            or len(node.arguments.args) > 3
        ):
            raise _unsupported(layer, "an attention mask; ai3 maps unmasked (or causal) MultiHeadAttention")
        if kwargs.get("return_attention_scores"):
            raise _unsupported(layer, "return_attention_scores=True; ai3's attention never materialises the scores")
        q, v = args["query"], args["value"]
        k = args.get("key") if args.get("key") is not None else v
        if not all(isinstance(t, keras.KerasTensor) for t in (q, k, v)):
            raise _unsupported(layer, "a query, key or value that is not a tensor of the model")
        h, dk, dv = int(layer.num_heads), int(layer.key_dim), int(layer.value_dim or layer.key_dim)
        shape = self.tensors[id(q)][1]
        d = shape[-1]
        if (
            len(shape) != 3
            or dk != dv
            or h * dk != d
            or getattr(layer, "_output_shape", None) not in (None, d, (d,))
            or getattr(layer, "_use_gate", False)
            or getattr(layer, "_attention_axes", None) not in (None, (1,), [1])
        ):
            raise _unsupported(
                layer,
                f"num_heads={h}, key_dim={dk}, value_dim={dv} on a {shape} query; ai3 maps the torch-shaped "
                "form: (B, L, D) tensors, num_heads * key_dim = value_dim * num_heads = D = output dim, no gate",
            )
        dense = (layer._query_dense, layer._key_dense, layer._value_dense)
        weight = np.concatenate([_numpy(x.kernel).reshape(d, d).T for x in dense], axis=0)
        use_bias = bool(getattr(layer, "_use_bias", True))
        bias = np.concatenate([_numpy(x.bias).reshape(d) for x in dense]) if use_bias else np.zeros(3 * d)
        out = layer._output_dense
        weights = {
            "in_proj_weight": weight,
            "in_proj_bias": bias,
            "out_proj_weight": _numpy(out.kernel).reshape(d, d).T.copy(),
            "out_proj_bias": _numpy(out.bias).reshape(d) if use_bias else np.zeros(d),
        }
        attrs = {"num_heads": h, "batch_first": True, "causal": bool(kwargs.get("use_causal_mask", False))}
        if q is k and k is v:
            ins = [self.tensors[id(q)][0]]
        else:
            ins = [self.tensors[id(t)][0] for t in (q, k, v)]
        return self.add("multihead_attention", name, ins, layer, shape, attrs, weights)

    def tensor_op(self, op: str, node: Any, layer: Any, name: str, bound: list[tuple[int, tuple]]) -> int:
        """keras.ops arithmetic on two tensors, or on a tensor and a
        constant (a Python number or an array), which becomes the spec's
        weights["other"]; `reverse` when the constant is the left operand."""
        args, is_tensor = _two_operands(node, layer)
        if all(is_tensor):
            return self.merge(op, layer, name, bound)
        ((x, shape),) = bound
        tensor, other = (args[0], args[1]) if is_tensor[0] else (args[1], args[0])
        other = np.asarray(
            other if isinstance(other, (int, float, list, tuple, np.ndarray)) else _numpy(other), dtype=np.float64
        )
        if "int" in str(tensor.dtype):
            # An integer tensor (indices, ids) keeps its kind with an
            # integral constant, as Keras computes it; with a fractional
            # one Keras promotes to float32, and so does ai3, first.
            if np.array_equal(other, np.round(other)):
                other = other.astype(np.int64)
            else:
                x = self.add("cast", name + "/to_float32", [x], layer, shape, {"to": "float32"})
        return self.add(op, name, [x], layer, shape, {"reverse": not is_tensor[0]}, {"other": other})

    def output_shape(self, layer: Any, node: Any, bound: list[tuple[int, tuple]]) -> tuple:
        """The node's output shape: the graph's own, or, with a sample
        input shape, computed by the layer for the concrete input."""
        if self.sample is None:
            return tuple(node.outputs[0].shape)
        keras = _keras()
        values = {id(t): keras.KerasTensor(shape=s, dtype=t.dtype) for t, (_, s) in zip(node.input_tensors, bound)}
        args, kwargs = node.arguments.fill_in(values)
        try:
            spec = layer.compute_output_spec(*args, **kwargs)
        except Exception as e:
            raise errors.ShapeError(f"{_describe(layer)} cannot take an input of shape {bound[0][1]}: {e}") from e
        return tuple(spec.shape)

    # -- single-input layers: the table below ------------------------------
    def layer(self, layer: Any, name: str, x: int, shape: tuple) -> int:
        if isinstance(layer, _keras().layers.Reshape):
            return self.reshape(layer, name, x, shape)
        return self.chain(layer, name, x, shape, map_layer(layer, shape))

    def chain(self, layer: Any, name: str, x: int, shape: tuple, steps: list[Step]) -> int:
        """The steps of one Keras layer as specs, each reading the last."""
        for step in steps:
            in_shape = step.in_shape if step.in_shape is not None else shape
            attrs = {k: self.resolve(layer, v, in_shape) for k, v in step.attrs.items()}
            weights = {k: v.value(layer) if isinstance(v, Var) else v for k, v in step.weights.items()}
            x = self.add(step.op, name + step.suffix, [x], layer, in_shape, attrs, weights)
        return x

    def resolve(self, layer: Any, value: Any, shape: tuple) -> Any:
        if not isinstance(value, Same):
            return value
        pads = value.pads(shape)
        if pads is None:
            raise _unsupported(
                layer,
                "padding='same' with stride > 1 depends on the input's height and width, which the model "
                "leaves unknown; pass sample_input_shape (N, H, W, C)",
            )
        return pads

    def reshape(self, layer: Any, name: str, x: int, shape: tuple) -> int:
        """The reshapes that move no data in NHWC: to the same shape, and
        (N, C) back to (N, 1, 1, C) right after a global pooling's flatten
        (squeeze-and-excitation blocks), which undoes that flatten."""
        try:
            target = tuple(layer.compute_output_shape(shape))[1:]
        except Exception:
            target = None
        if target is not None and target == tuple(shape[1:]) and None not in target:
            return self.add("identity", name, [x], layer, shape)
        source = self.specs[x] if x != MODEL_INPUT else None
        if (
            target is not None
            and source is not None
            and source.op == "flatten"
            and source.inputs[0] != MODEL_INPUT
            and self.specs[source.inputs[0]].op in ("adaptiveavgpool2d", "maxpool2d")
            and len(target) == 3
            and target[:2] == (1, 1)
            and target[2] == shape[-1]
        ):
            return self.add("identity", name, [source.inputs[0]], layer, shape)
        dims = [int(d) for d in layer.target_shape]
        if dims.count(-1) > 1:
            raise _unsupported(layer, f"a reshape to {layer.target_shape} with more than one unknown (-1) dimension")
        # 0 copies the input's batch dimension, so any batch runs.
        return self.add("reshape", name, [x], layer, shape, {"shape": [0, *dims]})


# ---- Keras layer -> steps: the one mapping ---------------------------------
#
# One entry per Keras layer class (MAPPING below): a function of the layer
# and its input shape giving the core layers ("steps", run one after the
# other) that compute it. swap_backend turns the steps into LayerSpecs
# (_Mapper.chain); the in-place swaps (ai3.keras.swap_operation) run them
# in one generic Keras layer (ai3.keras.layers.Layer) over the one TF op,
# reading the weights from that layer's copies of the Keras variables (Var
# says which variable and how it becomes the core's weight). So a new op's
# Keras layer is one entry here and works in both.


@dataclass(frozen=True)
class Var:
    """A weight read from the Keras layer's variable `name` (an attribute
    of the layer), transposed by `perm` (numpy.transpose's meaning) and
    reshaped to `shape` (None: as transposed)."""

    name: str
    perm: tuple[int, ...] | None = None
    shape: tuple[int, ...] | None = None

    def variable(self, layer: Any) -> Any:
        return getattr(layer, self.name)

    def core_shape(self, layer: Any) -> tuple[int, ...]:
        shape = tuple(int(d) for d in self.variable(layer).shape)
        if self.perm is not None:
            shape = tuple(shape[p] for p in self.perm)
        return tuple(self.shape) if self.shape is not None else shape

    def value(self, layer: Any) -> np.ndarray:
        v = _numpy(self.variable(layer))
        if self.perm is not None:
            v = v.transpose(self.perm)
        return np.ascontiguousarray(v.reshape(self.core_shape(layer)))


@dataclass(frozen=True)
class Same:
    """TensorFlow's "same" padding of a 2-D (or 3-D) window (ai3.padding),
    to be resolved against the channels-last input's spatial size."""

    kernel: tuple[int, ...]
    stride: tuple[int, ...]
    dilation: tuple[int, ...] = (1, 1)

    def pads(self, shape: Sequence[int | None] | None) -> tuple[int, ...] | None:
        n = len(self.kernel)
        sizes = tuple(shape[1:-1]) if shape is not None and len(shape) == n + 2 else (None,) * n
        return padding.same_nd(sizes, self.kernel, self.stride, self.dilation)


@dataclass
class Step:
    """One core layer of a Keras layer: op, attributes (a value may be a
    Same), weights by the op's declared names (a Var, a NumPy constant, or
    None for an absent optional one), the spec name's suffix, and its input
    shape where it is not the Keras layer's."""

    op: str
    attrs: dict = field(default_factory=dict)
    weights: dict = field(default_factory=dict)
    suffix: str = ""
    in_shape: tuple | None = None


@dataclass(frozen=True)
class Entry:
    """How one Keras layer class maps: `fn(layer, input_shape)` -> steps.
    `exact`: only that class, not subclasses (which may override `call`).
    `op`: the op its layers are for swap_operation even where mapping one
    fails (so swapping it reports why), or None. `training`: its steps are
    the layer's inference form only (BatchNormalization's moving
    statistics): in training mode an in-place swap runs Keras' own
    forward (ai3.keras.layers.Layer). Layers whose call merely accepts
    `training` (Dense) compute the same either way and leave it False."""

    fn: Callable[[Any, tuple], list[Step]]
    exact: bool = False
    op: str | None = None
    training: bool = False


def _spatial(layer: Any, shape: tuple) -> tuple[int | None, int | None]:
    if shape is None or len(shape) != 4:
        rank = "an unknown" if shape is None else f"a rank-{len(shape)}"
        raise _unsupported(layer, f"takes {rank} input; ai3 runs this op on NHWC (rank-4) tensors")
    return shape[1], shape[2]


def _ranked(layer: Any, shape: tuple | None) -> tuple:
    if shape is None:
        raise _unsupported(layer, "its input shape is unknown (the layer was never called)")
    return shape


def _window_padding(layer: Any, shape: tuple, kernel, stride, dilation=(1, 1)) -> Any:
    """(top, bottom, left, right) for "valid"; for "same" a Same, which
    whoever runs the step resolves for its input (swap_backend: the model's
    size; an in-place layer: each call's)."""
    mode = str(layer.padding).lower()
    if mode == "valid":
        return (0,) * (2 * len(kernel))
    if mode != "same":
        raise _unsupported(layer, f"padding={layer.padding!r}; ai3 maps 'valid' and 'same'")
    return Same(tuple(kernel), tuple(stride), tuple(dilation))


def _activation_steps(fn_name: str | None, layer: Any, suffix: str = "", fn: Any = None, in_shape=None) -> list[Step]:
    """The steps of a Keras activation function ([] for linear)."""

    def step(op: str, attrs: dict | None = None) -> list[Step]:
        return [Step(op, attrs or {}, suffix=suffix, in_shape=in_shape)]

    if fn_name is None:
        raise _unsupported(
            layer, f"activation {getattr(fn, '__name__', fn)!r} is not one ai3 has ({', '.join(_ACTIVATIONS)})"
        )
    if fn_name == "linear":
        return []
    if fn_name in ("relu", "sigmoid", "tanh"):
        return step(fn_name)
    if fn_name == "relu6":
        return step("clamp", {"min": 0.0, "max": 6.0})
    if fn_name in ("silu", "swish"):
        return step("silu")
    if fn_name in ("softmax", "log_softmax"):
        return step(fn_name, {"axis": -1})
    if fn_name == "gelu":  # keras.activations.gelu's default: the exact (erf) form
        return step("gelu", {"approximate": "none"})
    if fn_name in ("hard_silu", "hard_swish"):  # x * relu6(x + 3) / 6, as torch's hardswish
        return step("hardswish")
    if fn_name == "hard_sigmoid":  # Keras 3: relu6(x + 3) / 6
        return step("hardsigmoid", {"alpha": 1.0 / 6.0, "beta": 0.5})
    # issue 17: keras.activations' defaults (softplus: log(exp(x) + 1), no threshold)
    if fn_name in ("selu", "softsign", "mish"):
        return step(fn_name)
    if fn_name == "elu":
        return step("elu", {"alpha": 1.0})
    if fn_name == "exponential":
        return step("exp")
    if fn_name == "softplus":
        return step("softplus", {"beta": 1.0, "threshold": float("inf")})
    raise _unsupported(layer, f"activation {fn_name!r} is not one ai3 has ({', '.join(_ACTIVATIONS)})")


def _fused_activation(layer: Any, in_shape=None) -> list[Step]:
    fn = getattr(layer, "activation", None)
    act = _activation_name(fn)
    return _activation_steps(act, layer, "/" + str(act), fn, in_shape)


def _bias(layer: Any) -> Var | None:
    return Var("bias") if layer.use_bias else None


def _conv2d(layer: Any, shape: tuple) -> list[Step]:
    """Conv2D: conv2d, the HWIO kernel read as OIHW; + its activation."""
    _spatial(layer, shape)
    kh, kw = (int(d) for d in layer.kernel.shape[:2])
    stride, dil = _pair(layer.strides), _pair(layer.dilation_rate)
    attrs = {
        "stride": stride,
        "padding": _window_padding(layer, shape, (kh, kw), stride, dil),
        "dilation": dil,
        "groups": int(layer.groups),
    }
    return [
        Step("conv2d", attrs, {"weight": Var("kernel", (3, 2, 0, 1)), "bias": _bias(layer)}),
        *_fused_activation(layer),
    ]


def _conv3d(layer: Any, shape: tuple) -> list[Step]:
    """Conv3D: conv3d on NDHWC, the DHWIO kernel read as OIDHW; + its
    activation."""
    if shape is None or len(shape) != 5:
        rank = "an unknown" if shape is None else f"a rank-{len(shape)}"
        raise _unsupported(layer, f"takes {rank} input; ai3 runs Conv3D on NDHWC (rank-5) tensors")
    kernel = tuple(int(d) for d in layer.kernel.shape[:3])
    stride, dil = _ints(layer.strides, 3), _ints(layer.dilation_rate, 3)
    attrs = {
        "stride": stride,
        "padding": _window_padding(layer, shape, kernel, stride, dil),
        "dilation": dil,
        "groups": int(layer.groups),
    }
    return [
        Step("conv3d", attrs, {"weight": Var("kernel", (4, 3, 0, 1, 2)), "bias": _bias(layer)}),
        *_fused_activation(layer),
    ]


def _conv_transpose2d(layer: Any, shape: tuple) -> list[Step]:
    """Conv2DTranspose: conv_transpose2d, the (kh, kw, out, in) kernel read
    as (in, out, kh, kw); + its activation. Keras (TF's conv2d_transpose)
    gives the output size from padding and output_padding
    (compute_conv_transpose_output_shape) and places the input by the
    padding of the conv2d whose gradient it is on that size: zero for
    "valid", TF's "same" (odd pixel after) otherwise. pad2d's top/left pads
    are those; the bottom/right pad or output_padding makes up the size."""
    h, w = _spatial(layer, shape)
    if h is None or w is None:
        raise _unsupported(layer, "needs the input's height and width (pass sample_input_shape)")
    kh, kw = (int(d) for d in layer.kernel.shape[:2])
    stride, dil = _pair(layer.strides), _pair(layer.dilation_rate)
    same = str(layer.padding).lower() == "same"
    out_pad = layer.output_padding
    out_pad = None if out_pad is None else _pair(out_pad)
    pads, extra = [], []
    for i, (size, k, s, d) in enumerate(zip((h, w), (kh, kw), stride, dil)):
        span = (k - 1) * d + 1
        if out_pad is None:
            out = size * s if same else size * s + max(span - s, 0)
        else:
            out = (size - 1) * s + span - 2 * (span // 2 if same else 0) + out_pad[i]
        before = padding.same_1d(out, k, s, d)[0] if same else 0
        rest = (size - 1) * s + span - before - out  # > 0: rows cut at the end
        pads += [before, max(rest, 0)]
        extra.append(max(-rest, 0))
    attrs = {"stride": stride, "padding": tuple(pads), "output_padding": tuple(extra), "dilation": dil, "groups": 1}
    weights = {"weight": Var("kernel", (3, 2, 0, 1)), "bias": _bias(layer)}
    return [Step("conv_transpose2d", attrs, weights), *_fused_activation(layer)]


def _group_norm(layer: Any, shape: tuple) -> list[Step]:
    """GroupNormalization over the last axis: groupnorm (gamma, beta)."""
    rank = len(_ranked(layer, shape))
    if int(layer.axis) not in (-1, rank - 1):
        raise _unsupported(layer, f"axis={layer.axis}; ai3 normalises groups of the last (channels) axis")
    weights = {"weight": Var("gamma") if layer.scale else None, "bias": Var("beta") if layer.center else None}
    return [Step("groupnorm", {"groups": int(layer.groups), "eps": float(layer.epsilon)}, weights)]


# Keras' image interpolations as resize's: TF's resize (tf.image.resize,
# half-pixel centres; nearest rounds half up) for Resizing and for
# UpSampling2D's bilinear; UpSampling2D's nearest repeats pixels.
_RESIZE = {"bilinear": ("linear", "half_pixel", "floor"), "nearest": ("nearest", "half_pixel", "round_prefer_ceil")}


def _resize_attrs(layer: Any, interpolation: str) -> dict:
    if interpolation not in _RESIZE:
        raise _unsupported(layer, f"interpolation={interpolation!r}; ai3 resizes by {' or '.join(_RESIZE)}")
    mode, coords, rounding = _RESIZE[interpolation]
    return {"mode": mode, "coordinate_transformation_mode": coords, "nearest_mode": rounding}


def _upsampling2d(layer: Any, shape: tuple) -> list[Step]:
    """UpSampling2D: resize by its integer size."""
    _spatial(layer, shape)
    attrs = _resize_attrs(layer, str(layer.interpolation))
    if layer.interpolation == "nearest":
        attrs.update(coordinate_transformation_mode="asymmetric", nearest_mode="floor")
    return [Step("resize", {**attrs, "scale": tuple(float(v) for v in _pair(layer.size))})]


def _resizing(layer: Any, shape: tuple) -> list[Step]:
    """Resizing: resize to (height, width)."""
    _spatial(layer, shape)
    if getattr(layer, "crop_to_aspect_ratio", False) or getattr(layer, "pad_to_aspect_ratio", False):
        raise _unsupported(layer, "crop_to_aspect_ratio / pad_to_aspect_ratio are not supported")
    attrs = _resize_attrs(layer, str(layer.interpolation))
    return [Step("resize", {**attrs, "size": (int(layer.height), int(layer.width))})]


def _depthwise(layer: Any, shape: tuple, name: str = "kernel", suffix: str = "", with_bias: bool = True) -> list[Step]:
    """DepthwiseConv2D: conv2d with groups = C; the [kh, kw, C, multiplier]
    kernel read as (C * multiplier, 1, kh, kw)."""
    _spatial(layer, shape)
    kh, kw, c, mult = (int(d) for d in getattr(layer, name).shape)
    stride, dil = _pair(layer.strides), _pair(layer.dilation_rate)
    attrs = {
        "stride": stride,
        "padding": _window_padding(layer, shape, (kh, kw), stride, dil),
        "dilation": dil,
        "groups": c,
    }
    weights = {"weight": Var(name, (2, 3, 0, 1), (c * mult, 1, kh, kw)), "bias": _bias(layer) if with_bias else None}
    return [Step("conv2d", attrs, weights, suffix)]


def _depthwise_conv2d(layer: Any, shape: tuple) -> list[Step]:
    return [*_depthwise(layer, shape), *_fused_activation(layer)]


def _separable(layer: Any, shape: tuple) -> list[Step]:
    """SeparableConv2D: a depthwise conv2d (groups = C, with the layer's
    strides, dilation and padding) then a 1x1 pointwise conv2d carrying the
    bias and the activation."""
    (depthwise,) = _depthwise(layer, shape, "depthwise_kernel", "/depthwise", with_bias=False)
    kh, kw, c, mult = (int(d) for d in layer.depthwise_kernel.shape)
    h, w = shape[1], shape[2]
    pads, stride, dil = depthwise.attrs["padding"], depthwise.attrs["stride"], depthwise.attrs["dilation"]
    if isinstance(pads, Same):
        pads = pads.pads(shape)
    if pads is None or h is None or w is None:
        h = w = None
    else:  # the depthwise output's size
        h = (h + pads[0] + pads[1] - ((kh - 1) * dil[0] + 1)) // stride[0] + 1
        w = (w + pads[2] + pads[3] - ((kw - 1) * dil[1] + 1)) // stride[1] + 1
    mid = (shape[0], h, w, c * mult)
    unit = {"stride": (1, 1), "padding": (0, 0, 0, 0), "dilation": (1, 1), "groups": 1}
    pointwise = Step(
        "conv2d", unit, {"weight": Var("pointwise_kernel", (3, 2, 0, 1)), "bias": _bias(layer)}, in_shape=mid
    )
    return [depthwise, pointwise, *_fused_activation(layer, mid)]


def _dense(layer: Any, shape: tuple) -> list[Step]:
    """Dense: linear ([in, out] read as [out, in]) over the last axis, as
    Keras applies it, at any rank (the core's linear takes (..., in), as
    torch's does); + its activation. A higher rank once ran as a matmul by
    the kernel and an add of the bias: neither a linear algorithm nor the
    bias and activation fusions reached it (Keras ConvNeXt's and
    transformers' Dense layers)."""
    if getattr(layer, "lora_enabled", False):
        raise _unsupported(layer, "LoRA-enabled Dense")
    steps = [Step("linear", {}, {"weight": Var("kernel", (1, 0)), "bias": _bias(layer)})]
    return [*steps, *_fused_activation(layer, shape)]


def _layernorm(layer: Any, shape: tuple) -> list[Step]:
    """LayerNormalization over trailing axes -> layernorm(axes = their
    count); gamma/beta (or ones/zeros) shaped like those axes."""
    rank = len(_ranked(layer, shape))
    axes = [layer.axis] if isinstance(layer.axis, int) else list(layer.axis)
    axes = sorted(a + rank if a < 0 else a for a in axes)
    if not axes or axes != list(range(rank - len(axes), rank)) or axes[0] == 0:
        raise _unsupported(
            layer, f"axis={layer.axis!r} on a rank-{rank} input; ai3 normalizes trailing axes (not the batch)"
        )
    if getattr(layer, "rms_scaling", False):
        raise _unsupported(layer, "rms_scaling=True (RMS normalization)")
    trailing = tuple(shape[a] for a in axes)
    if None in trailing:
        raise _unsupported(layer, f"normalizes axes of unknown size {trailing}")
    weights = {
        "weight": Var("gamma", shape=trailing) if layer.scale else np.ones(trailing),
        "bias": Var("beta", shape=trailing) if layer.center else np.zeros(trailing),
    }
    return [Step("layernorm", {"axes": len(axes), "eps": float(layer.epsilon)}, weights)]


def _layer_scale(layer: Any, shape: tuple) -> list[Step]:
    """ConvNeXt's layer scale: x * gamma (per channel, the last axis)."""
    if not hasattr(layer, "gamma"):
        raise _unsupported(layer, "a LayerScale without gamma")
    return [Step("mul", {"reverse": False}, {"other": Var("gamma")})]


def _cropping(layer: Any, shape: tuple) -> list[Step]:
    """Cropping2D as a slice along H then along W (only where it crops)."""
    h, w = _spatial(layer, shape)
    (top, bottom), (left, right) = layer.cropping
    steps, cur = [], tuple(shape)
    for axis, size, lo, hi in ((1, h, top, bottom), (2, w, left, right)):
        if lo == 0 and hi == 0:
            continue
        stop = size - hi if size is not None else (-hi if hi else None)  # None: to the end
        attrs = {"axis": axis, "start": int(lo), "stop": None if stop is None else int(stop), "step": 1}
        steps.append(Step("slice", attrs, suffix="" if axis == 2 or (left, right) == (0, 0) else "/rows", in_shape=cur))
        cur = tuple(cur[:axis]) + ((None if size is None else size - lo - hi),) + tuple(cur[axis + 1 :])
    return steps or [Step("identity")]


def _batchnorm(layer: Any, shape: tuple) -> list[Step]:
    if len(_ranked(layer, shape)) not in (2, 3, 4, 5):  # the core's batchnorm2d takes them channels last
        raise _unsupported(layer, f"takes a rank-{len(shape)} input; ai3 runs batchnorm on ranks 2 to 5")
    axis = layer.axis if isinstance(layer.axis, int) else (layer.axis[0] if len(layer.axis) == 1 else None)
    if axis not in (-1, len(shape) - 1):
        raise _unsupported(layer, f"axis={layer.axis!r}; ai3 normalizes the channel axis (-1) of NHWC")
    if getattr(layer, "renorm", False):
        raise _unsupported(layer, "batch renormalization")
    channels = tuple(int(d) for d in layer.moving_mean.shape)
    weights = {
        "weight": Var("gamma") if layer.scale else np.ones(channels),
        "bias": Var("beta") if layer.center else np.zeros(channels),
        "running_mean": Var("moving_mean"),
        "running_var": Var("moving_variance"),
    }
    return [Step("batchnorm2d", {"eps": float(layer.epsilon)}, weights)]


def _activation_layer(layer: Any, shape: tuple) -> list[Step]:
    fn = layer.activation
    return _activation_steps(_activation_name(fn), layer, fn=fn)


def _relu(layer: Any, shape: tuple) -> list[Step]:
    threshold = float(layer.threshold or 0)
    if float(layer.negative_slope or 0) != 0:
        raise _unsupported(layer, "ReLU with negative_slope (ai3 has relu, clamp and thresholded_relu)")
    if threshold != 0:  # x where x > threshold, else 0 (issue 17)
        if layer.max_value is not None:
            raise _unsupported(layer, "ReLU with both threshold and max_value")
        return [Step("thresholded_relu", {"alpha": threshold})]
    if layer.max_value is None:
        return [Step("relu")]
    return [Step("clamp", {"min": 0.0, "max": float(layer.max_value)})]


def _leaky_relu(layer: Any, shape: tuple) -> list[Step]:
    return [Step("leaky_relu", {"alpha": float(layer.negative_slope)})]


# issue 17: ELU, and PReLU, whose alpha (the input's shape past the batch,
# 1 along shared_axes) broadcasts over the NHWC input as NumPy does.
def _elu(layer: Any, shape: tuple) -> list[Step]:
    return [Step("elu", {"alpha": float(layer.alpha)})]


def _prelu(layer: Any, shape: tuple) -> list[Step]:
    return [Step("prelu", {}, {"other": Var("alpha")})]


def _softmax(layer: Any, shape: tuple) -> list[Step]:
    axis = layer.axis
    if not isinstance(axis, int):
        if len(axis) != 1:
            raise _unsupported(layer, f"softmax over several axes {axis!r}")
        axis = axis[0]
    return [Step("softmax", {"axis": int(axis)})]


def _pool_window(layer: Any, shape: tuple, dims: int) -> dict:
    """kernel, stride and padding of a Keras pooling layer over `dims`
    spatial dims (MaxPooling2D / 3D and the averages), channels last."""
    if dims == 2:
        _spatial(layer, shape)
    elif shape is None or len(shape) != dims + 2:
        raise _unsupported(layer, f"ai3 runs {type(layer).__name__} on channels-last rank-{dims + 2} tensors")
    kernel, stride = _ints(layer.pool_size, dims), _ints(layer.strides, dims)
    return {"kernel": kernel, "stride": stride, "padding": _window_padding(layer, shape, kernel, stride, (1,) * dims)}


def _maxpool(layer: Any, shape: tuple, dims: int = 2) -> list[Step]:
    attrs = {**_pool_window(layer, shape, dims), "dilation": (1,) * dims, "ceil_mode": False}
    return [Step(f"maxpool{dims}d", attrs)]


def _avgpool(layer: Any, shape: tuple, dims: int = 2) -> list[Step]:
    attrs = {
        **_pool_window(layer, shape, dims),
        "ceil_mode": False,
        "count_include_pad": False,  # TF's "same" average excludes the padding
        "divisor_override": None,
    }
    return [Step(f"avgpool{dims}d", attrs)]


def _maxpool3d(layer: Any, shape: tuple) -> list[Step]:
    return _maxpool(layer, shape, dims=3)


def _avgpool3d(layer: Any, shape: tuple) -> list[Step]:
    return _avgpool(layer, shape, dims=3)


def _keepdims_or_flatten(layer: Any, shape: tuple) -> list[Step]:
    if layer.keepdims:
        return []
    return [Step("flatten", {"start_dim": 1, "end_dim": -1}, suffix="/flatten", in_shape=(shape[0], 1, 1, shape[3]))]


def _global_avgpool(layer: Any, shape: tuple) -> list[Step]:
    _spatial(layer, shape)
    return [Step("adaptiveavgpool2d", {"output_size": (1, 1)}), *_keepdims_or_flatten(layer, shape)]


def _global_avgpool3d(layer: Any, shape: tuple) -> list[Step]:
    """GlobalAveragePooling3D on NDHWC: the mean over the three spatial dims."""
    if shape is None or len(shape) != 5:
        raise _unsupported(layer, "ai3 runs GlobalAveragePooling3D on NDHWC (rank-5) tensors")
    steps = [Step("mean", {"axes": [1, 2, 3], "keepdim": True})]
    if not layer.keepdims:
        steps.append(
            Step("flatten", {"start_dim": 1, "end_dim": -1}, suffix="/flatten", in_shape=(shape[0], 1, 1, 1, shape[4]))
        )
    return steps


def _global_maxpool(layer: Any, shape: tuple) -> list[Step]:
    h, w = _spatial(layer, shape)
    if h is None or w is None:
        raise _unsupported(layer, "global max pooling over an unknown height and width; pass sample_input_shape")
    attrs = {"kernel": (h, w), "stride": (h, w), "padding": (0, 0, 0, 0), "dilation": (1, 1), "ceil_mode": False}
    return [Step("maxpool2d", attrs), *_keepdims_or_flatten(layer, shape)]


def _flatten(layer: Any, shape: tuple) -> list[Step]:
    return [Step("flatten", {"start_dim": 1, "end_dim": -1})]


def _zero_padding(layer: Any, shape: tuple) -> list[Step]:
    _spatial(layer, shape)
    (top, bottom), (left, right) = layer.padding
    return [Step("pad2d", {"padding": (int(top), int(bottom), int(left), int(right)), "value": 0.0})]


def _per_channel(layer: Any, value: Any, channels: int, what: str) -> np.ndarray:
    v = np.asarray(_numpy(value) if not isinstance(value, (int, float, list, tuple)) else value, dtype=np.float64)
    if v.size == 1:
        return np.full(channels, float(v.reshape(())), dtype=np.float64)
    if v.shape[-1] == channels and v.size == channels:
        return v.reshape(channels)
    raise _unsupported(layer, f"{what} of shape {v.shape} is not per-channel (last axis, {channels} channels)")


def _affine(layer: Any, shape: tuple, scale: Any, offset: Any) -> list[Step]:
    """x * scale + offset per channel, as an exact batchnorm2d."""
    _spatial(layer, shape)
    c = shape[3]
    if c is None:
        raise _unsupported(layer, "an unknown number of channels")
    weights = {
        "weight": _per_channel(layer, scale, c, "scale"),
        "bias": _per_channel(layer, offset, c, "offset"),
        "running_mean": np.zeros(c),
        "running_var": np.ones(c),
    }
    return [Step("batchnorm2d", {"eps": 0.0}, weights)]


def _rescaling(layer: Any, shape: tuple) -> list[Step]:
    return _affine(layer, shape, layer.scale, layer.offset)


def _normalization(layer: Any, shape: tuple) -> list[Step]:
    axis = tuple(layer.axis) if layer.axis is not None else ()
    if len(_ranked(layer, shape)) != 4 or axis not in ((-1,), (3,)):
        raise _unsupported(
            layer,
            f"axis={layer.axis!r} on a rank-{len(shape)} input; ai3 maps per-channel (axis -1) normalization of NHWC",
        )
    c = shape[3]
    mean = _per_channel(layer, layer.mean, c, "mean")
    std = np.maximum(np.sqrt(_per_channel(layer, layer.variance, c, "variance")), _keras().backend.epsilon())
    if layer.invert:  # mean + x * std
        return _affine(layer, shape, std, mean)
    return _affine(layer, shape, 1.0 / std, -mean / std)


def _permute(layer: Any, shape: tuple) -> list[Step]:
    return [Step("permute", {"dims": [0, *(int(d) for d in layer.dims)]})]


def _identity(layer: Any, shape: tuple) -> list[Step]:
    return [Step("identity")]


# Keras layer class name -> its entry. Lookup: the layer's class, then its
# bases (a subclass maps as its base unless the entry is exact); a class
# outside keras.layers (LayerScale) is matched by name.
MAPPING: dict[str, Entry] = {
    "Conv2D": Entry(_conv2d, exact=True, op="conv2d"),
    "Conv3D": Entry(_conv3d, exact=True, op="conv3d"),
    "DepthwiseConv2D": Entry(_depthwise_conv2d, op="conv2d"),
    "Conv2DTranspose": Entry(_conv_transpose2d, exact=True, op="conv_transpose2d"),
    "GroupNormalization": Entry(_group_norm, op="groupnorm"),
    "UpSampling2D": Entry(_upsampling2d, op="resize"),
    "Resizing": Entry(_resizing, op="resize"),
    "SeparableConv2D": Entry(_separable, exact=True),
    "Dense": Entry(_dense, exact=True, op="linear"),
    "LayerNormalization": Entry(_layernorm, op="layernorm"),
    "LayerScale": Entry(_layer_scale),
    "Cropping2D": Entry(_cropping),
    "Permute": Entry(_permute, op="permute"),
    "BatchNormalization": Entry(_batchnorm, op="batchnorm2d", training=True),
    "Activation": Entry(_activation_layer),
    "ReLU": Entry(_relu),
    "LeakyReLU": Entry(_leaky_relu, op="leaky_relu"),
    "ELU": Entry(_elu, op="elu"),
    "PReLU": Entry(_prelu),  # prelu is a two-operand op: swap_backend only (the in-place swaps take one-input ops)
    "Softmax": Entry(_softmax, op="softmax"),
    "MaxPooling2D": Entry(_maxpool, op="maxpool2d"),
    "AveragePooling2D": Entry(_avgpool, op="avgpool2d"),
    "MaxPooling3D": Entry(_maxpool3d, op="maxpool3d"),
    "AveragePooling3D": Entry(_avgpool3d, op="avgpool3d"),
    "GlobalAveragePooling2D": Entry(_global_avgpool, op="adaptiveavgpool2d"),
    "GlobalAveragePooling3D": Entry(_global_avgpool3d, op="mean"),
    "GlobalMaxPooling2D": Entry(_global_maxpool),
    "Flatten": Entry(_flatten, op="flatten"),
    "ZeroPadding2D": Entry(_zero_padding, op="pad2d"),
    "Rescaling": Entry(_rescaling),
    "Normalization": Entry(_normalization),
    **{name: Entry(_identity) for name in _IDENTITY_LAYERS},
}


def entry_of(layer: Any, exact: bool = False) -> Entry | None:
    """The entry mapping `layer`, or None. exact: only the entry of the
    layer's own class (what the in-place swaps take)."""
    layers = _keras().layers
    for k, cls in enumerate(type(layer).__mro__):
        entry = MAPPING.get(cls.__name__)
        if entry is None or getattr(layers, cls.__name__, cls) is not cls:
            if exact:
                return None
            continue
        if k > 0 and (entry.exact or exact):
            return None
        return entry
    return None


def _channels_last(layer: Any) -> None:
    fmt = getattr(layer, "data_format", "channels_last")
    if fmt not in (None, "channels_last"):
        raise _unsupported(layer, f"data_format={fmt!r}; ai3's Keras frontend runs channels_last (NHWC) only")


def map_layer(layer: Any, shape: tuple, exact: bool = False) -> list[Step]:
    """The steps computing a single-input Keras layer on an input of
    `shape` (NHWC; None where unknown); ai3.UnsupportedOperation naming the
    layer if ai3 cannot run it."""
    entry = entry_of(layer, exact)
    if entry is None:
        raise _unsupported(layer, "ai3's core has no equivalent of this layer")
    _channels_last(layer)
    return entry.fn(layer, tuple(shape) if shape is not None else None)


def _input_shape(model: Any, sample_input_shape: Sequence[int] | None) -> tuple[int, ...] | None:
    if sample_input_shape is None:
        return None
    try:
        shape = tuple(int(d) for d in sample_input_shape)
    except (TypeError, ValueError) as e:
        raise errors.InvalidArgument(
            f"sample_input_shape must be a sequence of ints, got {sample_input_shape!r}"
        ) from e
    if any(d <= 0 for d in shape):
        raise errors.ShapeError(f"sample_input_shape {shape} has a non-positive dimension")
    expected = tuple(_graph_of(model).inputs[0].shape)
    if len(expected) != len(shape) or any(e is not None and e != s for e, s in zip(expected[1:], shape[1:])):
        raise errors.ShapeError(f"sample_input_shape {shape} does not match the model's input shape {expected}")
    return shape


def _check_model(model: Any, sample_input_shape: Sequence[int] | None) -> None:
    keras = _keras()
    if not isinstance(model, keras.Model):
        raise errors.InvalidArgument(f"swap_backend takes a keras.Model, got {type(model).__name__}")
    if isinstance(model, keras.Sequential) and getattr(model, "_functional", None) is None:
        if sample_input_shape is None:
            raise errors.InvalidArgument(
                f"Sequential model '{model.name}' has no input shape yet; build it (model.build, keras.Input) "
                "or pass sample_input_shape"
            )
        model.build((None, *tuple(sample_input_shape)[1:]))
    if not _is_model(model):
        raise errors.UnsupportedOperation(
            f"{_describe(model)} is a subclassed model without a functional graph; ai3's Keras frontend "
            "takes Functional and Sequential models"
        )
    graph = _graph_of(model)
    if len(graph.inputs) != 1:
        raise errors.UnsupportedOperation(f"model '{model.name}' has {len(graph.inputs)} inputs; ai3 models take one")
    if len(graph.outputs) != 1:
        raise errors.UnsupportedOperation(
            f"model '{model.name}' has {len(graph.outputs)} outputs; ai3 models return one"
        )


def to_specs(model: Any, sample_input_shape: Sequence[int] | None = None) -> tuple[list[LayerSpec], int]:
    """The model's LayerSpecs in execution order and the index of its output
    spec. Each spec's input_shape is its layer's input shape in the graph
    (batch None, and None where the model leaves a size unknown); with
    sample_input_shape (N, H, W, C) the shapes are computed for that input
    (batch N), and so are "same" paddings the model's unknown H and W would
    leave open."""
    _check_model(model, sample_input_shape)
    shape = _input_shape(model, sample_input_shape)
    mapper = _Mapper(shape)
    graph_input = _graph_of(model).inputs[0]
    start = shape if shape is not None else tuple(graph_input.shape)
    ((output, _),) = mapper.walk(model, "", [(MODEL_INPUT, start)])
    if mapper.refused:
        raise UnsupportedLayers(mapper.refused)
    return prune_dead(mapper.specs, output)


# The stand-in spec index of a refused layer's outputs (never built: the
# mapping that meets one raises UnsupportedLayers).
_REFUSED = -(1 << 30)


class UnsupportedLayers(errors.UnsupportedOperation):
    """Every layer of a Keras model that ai3 cannot run, with why: `layers`
    holds (layer, why) pairs in graph order."""

    def __init__(self, layers: list[tuple[Any, str]]):
        self.layers = list(layers)
        if len(self.layers) == 1:
            text = self.layers[0][1]
        else:
            text = f"{len(self.layers)} layers have no ai3 equivalent:\n" + "\n".join(
                f"  {why}" for _, why in self.layers
            )
        super().__init__(text)


def model_dtype(model: Any, dtype: Any | None) -> np.dtype:
    if dtype is None:
        dtype = getattr(model, "compute_dtype", None) or "float32"
    try:
        dtype = np.dtype(getattr(dtype, "name", dtype))
    except TypeError as e:
        raise errors.DTypeError(f"ai3 models run in float32 or float64, not {dtype}") from e
    if dtype not in (np.float32, np.float64):
        raise errors.DTypeError(
            f"ai3 models run in float32 or float64, not {dtype}; pass dtype='float32' to run a "
            "mixed-precision model in float32"
        )
    return dtype


def swap_backend(
    model: Any,
    algos: Any = None,
    sample_input_shape: Sequence[int] | None = None,
    *,
    dtype: Any | None = None,
    recorder: Any | None = None,
    fallback: bool = False,
):
    """The whole Keras model as an ai3.Model run by the core in NHWC.

    fallback=True (with sample_input_shape): where some layers have no ai3
    equivalent, the supported runs of the graph run in ai3 and those
    layers in Keras (ai3.keras.fallback.FallbackModel, whose fallbacks()
    names them); without it the refusal lists them all.

    `algos` is as for ai3.swap_backend: None, one selector for conv2d, or a
    mapping op -> selector (a name, a list of names in execution order, or
    a callable taking the Keras layer, or the layer and its input shape,
    which needs sample_input_shape). Batch norms that follow a convolution
    are folded into it; dropout and the like are dropped (inference). The
    returned model takes NHWC NumPy arrays (or torch tensors).
    """
    from ai3 import model as ai3_model

    if fallback:
        from ai3.keras import fallback as partitioned

        return partitioned.swap_backend(model, algos, sample_input_shape, dtype=dtype, recorder=recorder)
    if not isinstance(model, _keras().Model):
        raise errors.InvalidArgument(f"swap_backend takes a keras.Model, got {type(model).__name__}")
    np_dtype = model_dtype(model, dtype)
    shape = selection.sample_shape(sample_input_shape)
    specs, output = to_specs(model, shape)
    available = set(ai3_model.CORE_OPS) | set(ai3_model.GRAPH_OPS) | {"identity"}
    for s in specs:
        if s.op not in available:
            raise _unsupported(s.layer, f"maps to the op '{s.op}', which this build of ai3's core does not have")
    built = frontend.build_model(
        specs, output, algos, dtype=np_dtype, layout="NHWC", sample_input_shape=shape, recorder=recorder
    )
    if any(type(s.layer).__name__ in _RECURRENT or type(s.layer).__name__ == "Bidirectional" for s in specs):
        # Unrolled for this sequence length (ai3.recurrent): another is
        # built for (any batch: the specs do not depend on it).
        length = (shape or tuple(model.inputs[0].shape))[1]
        rest = tuple(shape or model.inputs[0].shape)[2:]
        built.per_shape = ai3_model.PerShape(
            [(None, length, *rest)], functools.partial(_rebuilt, model, algos, np_dtype)
        )
    return built


def _rebuilt(model: Any, algos: Any, dtype: np.dtype, shapes: list[tuple[int, ...]]) -> Any:
    """PerShape's rebuild: the model for an input of this shape."""
    return swap_backend(model, algos, shapes[0], dtype=dtype)


__all__ = [
    "MAPPING",
    "Entry",
    "Same",
    "Step",
    "Var",
    "entry_of",
    "fold_zero_padding",
    "map_layer",
    "model_dtype",
    "same_padding",
    "swap_backend",
    "to_specs",
]
