"""PyTorch model -> LayerSpecs, through torch.fx.

The model is traced with a torch.fx tracer that also records which module
each node was traced inside (for messages about functional calls), its
nodes are mapped one by one onto the core's ops, and an operation the core
lacks is an ai3.UnsupportedOperation naming the fx node, its target and the
module path: never a silent fallback.
"""

from __future__ import annotations

import operator
from typing import Any, Callable, Optional, Sequence

import numpy as np
import torch
import torch.nn.functional as F
from torch import fx, nn
from torch.fx.passes.shape_prop import ShapeProp

from ai3 import errors
from ai3.spec import MODEL_INPUT, LayerSpec
from ai3.torch import params


class _PathTracer(fx.Tracer):
    """symbolic_trace's tracer, noting on every node the module it was
    traced inside."""

    def __init__(self) -> None:
        super().__init__()
        self._paths: list[str] = []

    def call_module(self, m, forward, args, kwargs):
        self._paths.append(self.path_of_module(m))
        try:
            return super().call_module(m, forward, args, kwargs)
        finally:
            self._paths.pop()

    def create_node(self, *args, **kwargs):
        node = super().create_node(*args, **kwargs)
        node.meta["ai3_module_path"] = self._paths[-1] if self._paths else ""
        return node


def trace(module: nn.Module) -> fx.GraphModule:
    tracer = _PathTracer()
    try:
        graph = tracer.trace(module)
    except Exception as e:
        raise errors.UnsupportedOperation(
            f"torch.fx could not trace {type(module).__name__} ({type(e).__name__}: {e}); "
            "swap_backend needs a model torch.fx can trace (the in-place swap_<op> functions do not)"
        ) from e
    return fx.GraphModule(tracer.root, graph)


def _describe(node: fx.Node) -> str:
    target = node.target if isinstance(node.target, str) else getattr(node.target, "__name__", repr(node.target))
    where = node.meta.get("ai3_module_path") or "<top level>"
    if node.op == "call_module":
        where = node.target
    return f"fx node '{node.name}' ({node.op} {target}) in module '{where}'"


def _unsupported(node: fx.Node, why: str) -> errors.UnsupportedOperation:
    return errors.UnsupportedOperation(f"{_describe(node)}: {why}")


def _input_shape(node: fx.Node) -> Optional[tuple[int, ...]]:
    for arg in node.all_input_nodes:
        meta = arg.meta.get("tensor_meta")
        if meta is not None and hasattr(meta, "shape"):
            return tuple(meta.shape)
    return None


def _normalized(node: fx.Node, fn: Callable) -> dict[str, Any]:
    """The call's arguments by parameter name, defaults filled in."""
    import inspect

    bound = inspect.signature(fn).bind(*node.args, **node.kwargs)
    bound.apply_defaults()
    return dict(bound.arguments)


def _bound(value: Any, default: float, node: fx.Node, what: str) -> float:
    """A clamp bound: a number, or None for an open side."""
    if value is None:
        return default
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    raise _unsupported(node, f"clamp's {what} must be a number, not {type(value).__name__} (tensor bounds are not supported)")


def _rank(node: fx.Node) -> Optional[int]:
    shape = _input_shape(node)
    return None if shape is None else len(shape)


def _softmax_axis(node: fx.Node, dim: Any, dtype: Any) -> int:
    """softmax's dim as an int; dim=None is PyTorch's legacy implicit dim
    (0 for ranks 0, 1 and 3, else 1), which needs the input's rank."""
    if dtype is not None:
        raise _unsupported(node, "softmax with a dtype argument (a cast) is not supported")
    if dim is None:
        rank = _rank(node)
        if rank is None:
            raise _unsupported(node, "softmax without dim needs the input's rank: pass dim, or a sample input shape")
        return 0 if rank in (0, 1, 3) else 1
    if isinstance(dim, bool) or not isinstance(dim, int):
        raise _unsupported(node, f"softmax's dim must be an int, got {dim!r}")
    return dim


def _torch_pads(node: fx.Node, pad: Any, mode: str, value: Any) -> dict[str, Any]:
    """pad2d attrs from F.pad's (left, right, top, bottom) on the last two
    dims of an NCHW tensor, constant mode."""
    if mode != "constant":
        raise _unsupported(node, f"padding mode '{mode}' is not supported (only 'constant')")
    if not isinstance(pad, (list, tuple)) or len(pad) != 4 or not all(isinstance(p, int) for p in pad):
        raise _unsupported(node, f"only 4 int pads (left, right, top, bottom) of a rank-4 tensor are supported, got {pad!r}")
    if any(p < 0 for p in pad):
        raise _unsupported(node, f"negative pads (cropping) are not supported, got {tuple(pad)}")
    rank = _rank(node)
    if rank is not None and rank != 4:
        raise _unsupported(node, f"pad2d takes a rank-4 tensor, this one has rank {rank}")
    left, right, top, bottom = pad
    return {"padding": (top, bottom, left, right), "value": 0.0 if value is None else float(value)}


class _Mapper:
    def __init__(self, gm: fx.GraphModule):
        self.gm = gm
        self.modules = dict(gm.named_modules())
        self.specs: list[LayerSpec] = []
        self.index: dict[fx.Node, int] = {}

    def inputs_of(self, node: fx.Node, args: Sequence[Any]) -> list[int]:
        found = []
        for a in args:
            if isinstance(a, fx.Node):
                found.append(self.index[a])
            elif isinstance(a, (list, tuple)) and all(isinstance(x, fx.Node) for x in a):
                found += [self.index[x] for x in a]
            else:
                raise _unsupported(node, f"takes a non-tensor argument {a!r} where ai3 needs a tensor")
        return found

    def add(self, node: fx.Node, op: str, name: str, inputs: list[int], layer: Any, attrs=None, weights=None) -> None:
        spec = LayerSpec(name, op, inputs, attrs or {}, weights or {}, layer, _input_shape(node))
        self.index[node] = len(self.specs)
        self.specs.append(spec)

    def alias(self, node: fx.Node, source: fx.Node) -> None:
        self.index[node] = self.index[source]

    # -- call_module ---------------------------------------------------
    def module(self, node: fx.Node) -> None:
        m = self.modules[node.target]
        name = node.target
        if len(node.args) != 1 or node.kwargs or not isinstance(node.args[0], fx.Node):
            raise _unsupported(node, "a module called with more than one tensor input")
        x = node.args[0]
        inputs = [self.index[x]]
        w = params.numpy_weight
        if isinstance(m, (nn.Dropout, nn.Dropout2d, nn.Identity)):
            self.alias(node, x)
        elif isinstance(m, nn.Conv2d):
            self.add(node, "conv2d", name, inputs, m, params.conv2d(m, name), {"weight": w(m.weight), "bias": w(m.bias)})
        elif isinstance(m, nn.Linear):
            self.add(node, "linear", name, inputs, m, {}, {"weight": w(m.weight), "bias": w(m.bias)})
        elif isinstance(m, nn.ReLU):
            self.add(node, "relu", name, inputs, m)
        elif isinstance(m, nn.MaxPool2d):
            attrs = params.maxpool2d(m.kernel_size, m.stride, m.padding, m.dilation, m.ceil_mode, m.return_indices, name=name)
            self.add(node, "maxpool2d", name, inputs, m, attrs)
        elif isinstance(m, nn.AvgPool2d):
            attrs = params.avgpool2d(m.kernel_size, m.stride, m.padding, m.ceil_mode, m.count_include_pad, m.divisor_override, name=name)
            self.add(node, "avgpool2d", name, inputs, m, attrs)
        elif isinstance(m, nn.AdaptiveAvgPool2d):
            size = params.adaptive_output_size(m.output_size, _input_shape(node), name)
            self.add(node, "adaptiveavgpool2d", name, inputs, m, {"output_size": size})
        elif isinstance(m, nn.Flatten):
            self.add(node, "flatten", name, inputs, m, {"start_dim": m.start_dim, "end_dim": m.end_dim})
        elif isinstance(m, nn.Hardtanh):  # nn.ReLU6 too: Hardtanh(0, 6)
            self.add(node, "clamp", name, inputs, m, {"min": float(m.min_val), "max": float(m.max_val)})
        elif isinstance(m, nn.Sigmoid):
            self.add(node, "sigmoid", name, inputs, m)
        elif isinstance(m, nn.SiLU):
            self.add(node, "silu", name, inputs, m)
        elif isinstance(m, nn.Tanh):
            self.add(node, "tanh", name, inputs, m)
        elif isinstance(m, nn.Softmax):
            self.add(node, "softmax", name, inputs, m, {"axis": _softmax_axis(node, m.dim, None)})
        elif isinstance(m, nn.ConstantPad2d):  # nn.ZeroPad2d too
            self.add(node, "pad2d", name, inputs, m, _torch_pads(node, tuple(m.padding), "constant", m.value))
        elif isinstance(m, nn.BatchNorm2d):
            if m.running_mean is None or m.running_var is None:
                raise _unsupported(node, "BatchNorm2d without running statistics (track_running_stats=False)")
            weight = m.weight if m.weight is not None else torch.ones(m.num_features)
            bias = m.bias if m.bias is not None else torch.zeros(m.num_features)
            weights = {"weight": w(weight), "bias": w(bias), "running_mean": w(m.running_mean), "running_var": w(m.running_var)}
            self.add(node, "batchnorm2d", name, inputs, m, {"eps": float(m.eps)}, weights)
        else:
            raise _unsupported(node, f"ai3's core has no equivalent of {type(m).__module__}.{type(m).__name__}")

    # -- call_function / call_method --------------------------------------
    def function(self, node: fx.Node) -> None:
        t = node.target
        name = f"{node.meta.get('ai3_module_path') or ''}.{node.name}".lstrip(".")
        if t in (F.relu, torch.relu, torch.relu_):
            self.add(node, "relu", name, [self.index[node.args[0]]], node)
        elif t in (operator.add, operator.iadd, torch.add):
            if len(node.args) != 2 or node.kwargs.get("alpha", 1) != 1:
                raise _unsupported(node, "only the sum of two tensors is supported")
            self.add(node, "add", name, self.inputs_of(node, node.args), node)
        elif t is torch.cat:
            a = node.args
            tensors = a[0]
            dim = a[1] if len(a) > 1 else node.kwargs.get("dim", 0)
            self.add(node, "concat", name, self.inputs_of(node, [tensors]), node, {"axis": int(dim)})
        elif t is torch.flatten:
            a = _normalized(node, lambda input, start_dim=0, end_dim=-1: None)
            self.add(node, "flatten", name, [self.index[a["input"]]], node, {"start_dim": a["start_dim"], "end_dim": a["end_dim"]})
        elif t is F.adaptive_avg_pool2d:
            a = _normalized(node, lambda input, output_size: None)
            size = params.adaptive_output_size(a["output_size"], _input_shape(node), name)
            self.add(node, "adaptiveavgpool2d", name, [self.index[a["input"]]], node, {"output_size": size})
        elif t is F.avg_pool2d:
            a = _normalized(node, lambda input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True, divisor_override=None: None)
            x = a.pop("input")
            self.add(node, "avgpool2d", name, [self.index[x]], node, params.avgpool2d(**a, name=name))
        elif t is F.max_pool2d:
            a = _normalized(node, lambda input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False: None)
            x = a.pop("input")
            self.add(node, "maxpool2d", name, [self.index[x]], node, params.maxpool2d(**a, name=name))
        elif t is F.relu6:
            a = _normalized(node, lambda input, inplace=False: None)
            self.add(node, "clamp", name, [self.index[a["input"]]], node, {"min": 0.0, "max": 6.0})
        elif t is F.hardtanh:
            a = _normalized(node, lambda input, min_val=-1.0, max_val=1.0, inplace=False: None)
            attrs = {"min": _bound(a["min_val"], -1.0, node, "min"), "max": _bound(a["max_val"], 1.0, node, "max")}
            self.add(node, "clamp", name, [self.index[a["input"]]], node, attrs)
        elif t is torch.clamp or t is torch.clip:
            a = _normalized(node, lambda input, min=None, max=None: None)
            self.clamp(node, name, a)
        elif t in (torch.sigmoid, F.sigmoid):
            self.add(node, "sigmoid", name, [self.index[node.args[0]]], node)
        elif t is F.silu:
            a = _normalized(node, lambda input, inplace=False: None)
            self.add(node, "silu", name, [self.index[a["input"]]], node)
        elif t in (torch.tanh, F.tanh):
            self.add(node, "tanh", name, [self.index[node.args[0]]], node)
        elif t in (F.softmax, torch.softmax):
            a = _normalized(node, lambda input, dim=None, _stacklevel=3, dtype=None: None)
            self.add(node, "softmax", name, [self.index[a["input"]]], node, {"axis": _softmax_axis(node, a["dim"], a["dtype"])})
        elif t is F.pad:
            a = _normalized(node, lambda input, pad, mode="constant", value=None: None)
            self.add(node, "pad2d", name, [self.index[a["input"]]], node, _torch_pads(node, a["pad"], a["mode"], a["value"]))
        elif t in (F.dropout, F.dropout2d):
            self.alias(node, node.args[0])
        else:
            raise _unsupported(node, "ai3's core has no equivalent of this function")

    def clamp(self, node: fx.Node, name: str, a: dict[str, Any]) -> None:
        if a["min"] is None and a["max"] is None:
            raise _unsupported(node, "clamp needs min or max")
        attrs = {"min": _bound(a["min"], float("-inf"), node, "min"), "max": _bound(a["max"], float("inf"), node, "max")}
        self.add(node, "clamp", name, [self.index[a["input"]]], node, attrs)

    def method(self, node: fx.Node) -> None:
        name = f"{node.meta.get('ai3_module_path') or ''}.{node.name}".lstrip(".")
        if node.target in ("relu", "relu_"):
            self.add(node, "relu", name, [self.index[node.args[0]]], node)
        elif node.target in ("add", "add_", "__add__") and len(node.args) == 2 and not node.kwargs:
            self.add(node, "add", name, self.inputs_of(node, node.args), node)
        elif node.target == "flatten":
            a = _normalized(node, lambda input, start_dim=0, end_dim=-1: None)
            self.add(node, "flatten", name, [self.index[a["input"]]], node, {"start_dim": a["start_dim"], "end_dim": a["end_dim"]})
        elif node.target in ("sigmoid", "sigmoid_", "tanh", "tanh_") and len(node.args) == 1 and not node.kwargs:
            self.add(node, node.target.rstrip("_"), name, [self.index[node.args[0]]], node)
        elif node.target == "softmax":
            a = _normalized(node, lambda input, dim=None, dtype=None: None)
            self.add(node, "softmax", name, [self.index[a["input"]]], node, {"axis": _softmax_axis(node, a["dim"], a["dtype"])})
        elif node.target in ("clamp", "clamp_", "clip", "clip_"):
            self.clamp(node, name, _normalized(node, lambda input, min=None, max=None: None))
        else:
            raise _unsupported(node, f"ai3's core has no equivalent of the tensor method '{node.target}'")


def to_specs(module: nn.Module, sample_input_shape: Optional[Sequence[int]] = None) -> tuple[list[LayerSpec], int, fx.GraphModule]:
    """The model's LayerSpecs in execution order and the index of its output
    spec. With sample_input_shape, every spec also gets its input shape."""
    training = [n for n, m in module.named_modules() if m.training and isinstance(m, (nn.BatchNorm2d, nn.Dropout, nn.Dropout2d))]
    if training:
        raise errors.InvalidArgument(
            f"ai3 runs inference, but module '{training[0] or type(module).__name__}' is in training mode; call model.eval() first"
        )
    gm = trace(module)
    if sample_input_shape is not None:
        dtype = next((p.dtype for p in module.parameters()), torch.float32)
        try:
            with torch.no_grad():
                ShapeProp(gm).propagate(torch.zeros(tuple(sample_input_shape), dtype=dtype))
        except Exception as e:
            raise errors.ShapeError(f"the model cannot run on an input of shape {tuple(sample_input_shape)}: {e}") from e
    mapper = _Mapper(gm)
    output: Optional[int] = None
    for node in gm.graph.nodes:
        if node.op == "placeholder":
            if MODEL_INPUT in mapper.index.values():
                raise _unsupported(node, "ai3 models take one input tensor")
            mapper.index[node] = MODEL_INPUT
        elif node.op == "call_module":
            mapper.module(node)
        elif node.op == "call_function":
            mapper.function(node)
        elif node.op == "call_method":
            mapper.method(node)
        elif node.op == "output":
            result = node.args[0]
            if not isinstance(result, fx.Node):
                raise _unsupported(node, "ai3 models return one tensor (this one returns a tuple or structure)")
            output = mapper.index[result]
        else:  # get_attr: a parameter used directly in the graph
            raise _unsupported(node, "tensors read from module attributes inside forward are not supported")
    assert output is not None
    return mapper.specs, output, gm


def model_dtype(module: nn.Module, dtype: Optional[Any]) -> np.dtype:
    if dtype is None:
        dtype = next((p.dtype for p in module.parameters()), torch.float32)
    if isinstance(dtype, torch.dtype):
        dtype = {torch.float32: np.float32, torch.float64: np.float64}.get(dtype)
        if dtype is None:
            raise errors.DTypeError("ai3 models run in float32 or float64")
    dtype = np.dtype(dtype)
    if dtype not in (np.float32, np.float64):
        raise errors.DTypeError(f"ai3 models run in float32 or float64, not {dtype}")
    return dtype
