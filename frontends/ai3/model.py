"""ai3.Model: a whole network in the core, built from LayerSpecs.

The network is a DAG run entirely in C++: one call from Python per forward
pass, no Python between layers. Every frontend's swap_backend ends here.
"""

from __future__ import annotations

from typing import Any, Callable, Optional, Sequence

import numpy as np

from ai3 import _arrays, _core, cuda, errors, fusion, layers, layouts, profile, selection
from ai3.spec import MODEL_INPUT, LayerSpec


def _weight(spec: LayerSpec, key: str, dtype: np.dtype) -> Optional[np.ndarray]:
    value = spec.weights.get(key)
    return None if value is None else np.ascontiguousarray(value, dtype=dtype)


# op -> a function making the core layer for a spec.
def _conv2d(spec, algorithm, dtype, layout):
    a = spec.attrs
    return layers.Conv2d(
        _weight(spec, "weight", dtype),
        _weight(spec, "bias", dtype),
        a["stride"],
        a["padding"],
        a["dilation"],
        a["groups"],
        algorithm=algorithm,
        layout=layout,
        name=spec.name,
        activation=a.get("activation"),  # fused by ai3.fusion
    )


def _linear(spec, algorithm, dtype, layout):
    return layers.Linear(
        _weight(spec, "weight", dtype),
        _weight(spec, "bias", dtype),
        algorithm=algorithm,
        name=spec.name,
        activation=spec.attrs.get("activation"),
    )


def _relu(spec, algorithm, dtype, layout):
    return layers.ReLU(algorithm=algorithm, name=spec.name)


def _maxpool2d(spec, algorithm, dtype, layout):
    a = spec.attrs
    return layers.MaxPool2d(
        a["kernel"], a["stride"], a["padding"], a["dilation"], a["ceil_mode"], algorithm=algorithm, layout=layout, name=spec.name
    )


def _avgpool2d(spec, algorithm, dtype, layout):
    a = spec.attrs
    return layers.AvgPool2d(
        a["kernel"],
        a["stride"],
        a["padding"],
        a["ceil_mode"],
        a["count_include_pad"],
        a["divisor_override"],
        algorithm=algorithm,
        layout=layout,
        name=spec.name,
    )


def _adaptiveavgpool2d(spec, algorithm, dtype, layout):
    return layers.AdaptiveAvgPool2d(spec.attrs["output_size"], algorithm=algorithm, layout=layout, name=spec.name)


def _flatten(spec, algorithm, dtype, layout):
    return layers.Flatten(spec.attrs["start_dim"], spec.attrs["end_dim"], algorithm=algorithm, name=spec.name)


def _batchnorm2d(spec, algorithm, dtype, layout):
    w = {k: _weight(spec, k, dtype) for k in ("weight", "bias", "running_mean", "running_var")}
    return layers.BatchNorm2d(
        w["weight"], w["bias"], w["running_mean"], w["running_var"], spec.attrs["eps"], algorithm=algorithm, layout=layout, name=spec.name
    )


def _clamp(spec, algorithm, dtype, layout):
    return layers.Clamp(spec.attrs["min"], spec.attrs["max"], algorithm=algorithm, name=spec.name)


def _sigmoid(spec, algorithm, dtype, layout):
    return layers.Sigmoid(algorithm=algorithm, name=spec.name)


def _silu(spec, algorithm, dtype, layout):
    return layers.SiLU(algorithm=algorithm, name=spec.name)


def _tanh(spec, algorithm, dtype, layout):
    return layers.Tanh(algorithm=algorithm, name=spec.name)


def _softmax(spec, algorithm, dtype, layout):
    return layers.Softmax(spec.attrs.get("axis", -1), algorithm=algorithm, name=spec.name)


def _binary(cls):
    """add / sub / mul / div: 2 inputs, or 1 and weights["other"] (reverse:
    other op x)."""

    def make(spec, algorithm, dtype, layout):
        return cls(_weight(spec, "other", dtype), reverse=spec.attrs.get("reverse", False), algorithm=algorithm, name=spec.name)

    return make


def _matmul(spec, algorithm, dtype, layout):
    return layers.Matmul(_weight(spec, "other", dtype), algorithm=algorithm, name=spec.name)


def _attr_layer(cls, *keys, **defaults):
    """A factory passing attrs `keys` (then `defaults`' keys, with their
    defaults) as keywords to `cls`."""

    def make(spec, algorithm, dtype, layout):
        kwargs = {k: spec.attrs[k] for k in keys}
        kwargs.update({k: spec.attrs.get(k, v) for k, v in defaults.items()})
        return cls(**kwargs, algorithm=algorithm, name=spec.name)

    return make


def _layernorm(spec, algorithm, dtype, layout):
    return layers.LayerNorm(
        _weight(spec, "weight", dtype),
        _weight(spec, "bias", dtype),
        axes=spec.attrs.get("axes", 1),
        eps=spec.attrs.get("eps", 1e-5),
        algorithm=algorithm,
        name=spec.name,
    )


def _adaptivemaxpool2d(spec, algorithm, dtype, layout):
    return layers.AdaptiveMaxPool2d(spec.attrs["output_size"], algorithm=algorithm, layout=layout, name=spec.name)


def _pad2d(spec, algorithm, dtype, layout):
    a = spec.attrs
    return layers.Pad2d(a["padding"], a.get("value", 0.0), algorithm=algorithm, layout=layout, name=spec.name)


def _attention(spec, algorithm, dtype, layout):
    """attention: inputs q, k, v[, mask] (an additive float mask node)."""
    a = spec.attrs
    return layers.Attention(
        causal=a.get("causal", False),
        scale=a.get("scale"),
        has_mask=len(spec.inputs) == 4,
        algorithm=algorithm,
        name=spec.name,
    )


def _multihead_attention(spec, algorithm, dtype, layout):
    """multihead_attention: inputs x[, mask] or q, k, v[, mask]."""
    a = spec.attrs
    return layers.MultiheadAttention(
        _weight(spec, "in_proj_weight", dtype),
        _weight(spec, "in_proj_bias", dtype),
        _weight(spec, "out_proj_weight", dtype),
        _weight(spec, "out_proj_bias", dtype),
        a["num_heads"],
        batch_first=a.get("batch_first", False),
        causal=a.get("causal", False),
        self_attention=len(spec.inputs) in (1, 2),
        has_mask=len(spec.inputs) in (2, 4),
        algorithm=algorithm,
        name=spec.name,
    )


LAYER_FACTORIES: dict[str, Callable[..., Any]] = {
    "conv2d": _conv2d,
    "linear": _linear,
    "relu": _relu,
    "maxpool2d": _maxpool2d,
    "avgpool2d": _avgpool2d,
    "adaptiveavgpool2d": _adaptiveavgpool2d,
    "flatten": _flatten,
    "batchnorm2d": _batchnorm2d,
    "clamp": _clamp,
    "sigmoid": _sigmoid,
    "silu": _silu,
    "tanh": _tanh,
    "softmax": _softmax,
    "attention": _attention,
    "multihead_attention": _multihead_attention,
    "pad2d": _pad2d,
    "add": _binary(layers.Add),  # broadcasting; 3+ same-shape inputs: the graph's add node
    "sub": _binary(layers.Sub),
    "mul": _binary(layers.Mul),
    "div": _binary(layers.Div),
    "matmul": _matmul,
    "reshape": _attr_layer(layers.Reshape, "shape"),
    "permute": _attr_layer(layers.Permute, "dims"),
    "slice": _attr_layer(layers.Slice, "axis", start=None, stop=None, step=1),
    "log_softmax": _attr_layer(layers.LogSoftmax, axis=-1),
    "layernorm": _layernorm,
    "gelu": _attr_layer(layers.GELU, approximate="none"),
    "hardswish": _attr_layer(layers.Hardswish),
    "hardsigmoid": _attr_layer(layers.Hardsigmoid, alpha=1.0 / 6.0, beta=0.5),
    "adaptivemaxpool2d": _adaptivemaxpool2d,
    "mean": _attr_layer(layers.Mean, axes=None, keepdim=False),
    "roll": _attr_layer(layers.Roll, "shifts", "axes"),
}
GRAPH_OPS = ("add", "concat")  # run by the core's Model itself


def _is_graph_node(spec: LayerSpec) -> bool:
    """concat, and an add of 3+ inputs (same shapes), are nodes of the core
    Model itself; a 2-input or constant add is a broadcasting add layer."""
    return spec.op == "concat" or (spec.op == "add" and len(spec.inputs) > 2 and "other" not in spec.weights)


class Model:
    """A network run entirely by ai3's core. Call it on a torch tensor
    (returns a torch tensor) or a NumPy array (returns NumPy)."""

    def __init__(self, core_model: Any, dtype: np.dtype, layout: str, input_shape: Optional[tuple[int, ...]] = None):
        self._core = core_model
        self.dtype = np.dtype(dtype)
        self.layout = layout
        self.sample_input_shape = input_shape

    def __call__(self, x: Any) -> Any:
        if cuda.is_cuda_tensor(x):  # stays on its GPU (ai3.cuda)
            import torch

            order = self.__dict__.setdefault("_cuda_order", cuda.StreamOrder())
            with torch.cuda.device(x.device):
                return cuda.call_model(self._core, x, order)
        array, kind = _arrays.to_array(x, "model input")
        return _arrays.from_array(self._core(array), kind)

    forward = __call__

    def layers(self) -> list[tuple[str, str, str]]:
        """(name, op, algorithm) of every layer, in execution order."""
        return [tuple(entry) for entry in self._core.layers()]

    def algorithms(self, op: Optional[str] = None) -> list[str]:
        return [algo for _, o, algo in self.layers() if op is None or o == op]

    def profile(self, x: Any, repeats: int = 10, warmup: int = 2) -> "profile.Profile":
        """Each node's mean time inside whole forward passes on `x`, and the
        call's (ai3/profile.py); print it for a table."""
        return profile.profile(self, x, repeats, warmup)

    def output_shape(self, input_shape: Sequence[int]) -> tuple[int, ...]:
        return tuple(self._core.output_shape(list(input_shape), self.dtype.name))

    def __len__(self) -> int:
        return len(self._core)

    def __repr__(self) -> str:
        rows = "\n".join(f"  {name}: {op} [{algo}]" for name, op, algo in self.layers())
        return f"ai3.Model({self.dtype.name}, {self.layout}, {len(self)} nodes)\n{rows}"


def build(
    specs: list[LayerSpec],
    output: int,
    algos: Any,
    *,
    dtype: np.dtype,
    layout: str,
    sample_input_shape: Optional[tuple[int, ...]] = None,
    device: Any = "cpu",
    layout_plan: Optional[str] = None,
) -> Model:
    """Resolves one algorithm per spec with the selection layer and builds
    the core DAG. `algos` is swap_backend's argument (see
    selection.per_op_selectors). The layers run on `device` ("cpu", or a
    CUDA torch.device / "cuda:N" in a --config=cuda build), and names are
    checked against that device's algorithms."""
    device_type = getattr(device, "type", None) or str(device).split(":")[0]
    ops = sorted({op for op, _, _ in _core.algorithms()})
    selectors = selection.per_op_selectors(algos, ops)
    chosen: dict[int, str] = {}
    for op in sorted({s.op for s in specs if not _is_graph_node(s)}):
        indices = [i for i, s in enumerate(specs) if s.op == op and not _is_graph_node(s)]
        candidates = [selection.spec_candidate(specs[i], LAYER_FACTORIES.get(op), dtype, layout) for i in indices]
        names = selection.select(op, selectors.get(op), candidates, allow_keep=False, device=device_type)
        chosen.update(zip(indices, names))
    # Activations fold into the conv/linear before them once the algorithms
    # are known (nothing is fused into a "custom" one).
    specs, output, chosen = fusion.fuse_activations(specs, output, chosen)
    specs, output, chosen = layouts.choose(specs, output, chosen, layout=layout, dtype=dtype, plan=layout_plan, algos=algos, sample_input_shape=sample_input_shape, factories=LAYER_FACTORIES, device=device_type)  # noqa: E501

    core = _core.Model()
    node_of: dict[int, int] = {MODEL_INPUT: _core.MODEL_INPUT}
    for i, spec in enumerate(specs):
        inputs = [node_of[j] for j in spec.inputs]
        if spec.op == "add" and _is_graph_node(spec):
            node_of[i] = core.add_add(inputs, spec.name)
        elif spec.op == "concat":
            node_of[i] = core.add_concat(inputs, spec.attrs["axis"], spec.name)
        elif spec.op in LAYER_FACTORIES:
            with cuda.layer_device(device):
                layer = LAYER_FACTORIES[spec.op](spec, chosen[i], dtype, spec.attrs.get("layout", layout))
            node_of[i] = core.add_layer(layer._core_layer, inputs)  # all of spec.inputs, in order
        else:
            raise errors.UnsupportedOperation(f"layer '{spec.name}': ai3's core has no op '{spec.op}'")
    if output == MODEL_INPUT:
        raise errors.UnsupportedOperation("the model returns its input unchanged; there is nothing to run")
    core.set_output(node_of[output])
    return Model(core, dtype, layout, sample_input_shape)
