"""nn.Module replacements whose forward runs an ai3 custom op.

One class per op (`CLASS_OF_OP`), each made from the PyTorch module it
replaces::

    new = Conv2d.from_torch(model.features[0], "winograd", "features.0")

The new module takes over the original's Parameters (the same objects, so
``state_dict()`` has the same keys, "weight" and "bias", and an optimizer or
another module sharing them sees one tensor) and its hyper-parameters, and
stores the algorithm and its name (the module path). Its forward calls
``torch.ops.ai3.<op>`` (ai3.torch.ops), so it works under torch.compile,
torch.export and torch.jit.trace; it holds nothing but Parameters, ints and
strings, so ``copy.deepcopy``, ``pickle`` and ``.to(dtype)`` work as for any
module (the core layer is cached by ai3.torch.ops, keyed by the weight's
contents, and rebuilt when they change).

Errors (ai3.Error subclasses, re-raised as the same class) name the module
as the rest of ai3 names layers: "conv2d layer 'features.0': input (1, 4,
16, 16) has 4 channels, ...". Inputs are CPU float32/float64 tensors, NCHW
for the image ops (a 3-D CHW input is taken as a batch of one, as PyTorch
does).

Inference only: the forward runs whatever the grad mode, but a backward
through an ai3 module raises ai3.UnsupportedOperation.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar, Optional, Sequence, Union

import torch
from torch import nn
from torch.nn.utils import parametrize

from ai3 import cuda, errors
from ai3.torch import ops, params

CLASS_OF_OP = {
    "conv2d": "Conv2d",
    "linear": "Linear",
    "relu": "ReLU",
    "maxpool2d": "MaxPool2d",
    "avgpool2d": "AvgPool2d",
    "adaptiveavgpool2d": "AdaptiveAvgPool2d",
    "flatten": "Flatten",
}


def _layer(op: str, name: str) -> str:
    """How messages name a layer, as everywhere in ai3: "conv2d layer 'features.0'"."""
    return f"{op} layer '{name}'" if name else f"{op} layer"


def _named(error: errors.Error, op: str, name: str) -> errors.Error:
    """`error` again, as the same class, naming the layer: the op's
    "conv2d (smm): input ..." becomes "conv2d layer 'features.0' (smm):
    input ..."."""
    message = str(error)
    where = _layer(op, name)
    if message.startswith(where):
        return error
    match = re.match(rf"{re.escape(op)}(?: \(([^)]*)\))?: ", message)
    if match:
        algorithm, message = match.group(1), message[match.end() :]
        if algorithm:
            where += f" ({algorithm})"
    try:
        named = type(error)(f"{where}: {message}")
    except TypeError:  # a subclass with another constructor: keep it as it is
        return error
    return named.with_traceback(error.__traceback__)


def _as_parameter(t: Optional[torch.Tensor], what: str, op: str, name: str) -> Optional[nn.Parameter]:
    if t is None or isinstance(t, nn.Parameter):
        if isinstance(t, nn.parameter.UninitializedParameter):
            raise errors.UnsupportedOperation(
                f"{_layer(op, name)}: {what} is not initialized yet (a lazy module); run it once before swapping"
            )
        return t
    if isinstance(t, torch.Tensor):
        return nn.Parameter(t, requires_grad=t.requires_grad)
    raise errors.InvalidArgument(f"{_layer(op, name)}: {what} must be a tensor, got {type(t).__name__}")


def _source_parameter(module: nn.Module, attr: str, op: str, name: str) -> Optional[nn.Parameter]:
    """module.<attr>, which must be a Parameter (or None for a bias): a plain
    tensor there is computed by a hook (old-style weight_norm, pruning), so
    taking it would change both the state_dict and the result."""
    t = getattr(module, attr)
    if t is None and attr == "bias":
        return None
    if not isinstance(t, nn.Parameter):
        raise errors.UnsupportedOperation(
            f"{_layer(op, name)}: {attr} is a {type(t).__name__}, not a Parameter (set by a hook such as weight_norm or "
            "pruning?); ai3 takes modules with plain Parameters"
        )
    return _as_parameter(t, attr, op, name)


class Ai3Module(nn.Module):
    """Base class of the modules here: `op`, `algorithm` (as requested,
    possibly "default"), `name` (the module path, for messages)."""

    op: ClassVar[str] = ""
    torch_class: ClassVar[type] = nn.Module
    _image_op: ClassVar[bool] = False

    def __init__(self, *, algorithm: str = "default", name: str = ""):
        super().__init__()
        if not isinstance(algorithm, str):
            raise errors.InvalidArgument(f"{_layer(self.op, name)}: algorithm must be a string, got {algorithm!r}")
        self.algorithm = algorithm
        self.name = str(name)

    # -- from_torch helpers -------------------------------------------------

    @classmethod
    def _check_source(cls, module: Any, name: str) -> None:
        if isinstance(module, cls):
            return
        if not isinstance(module, cls.torch_class):
            raise errors.InvalidArgument(
                f"{_layer(cls.op, name)}: {cls.__name__}.from_torch takes an nn.{cls.torch_class.__name__}, got {type(module).__name__}"
            )
        for method in ("forward", "_conv_forward"):
            base = getattr(cls.torch_class, method, None)
            if base is not None and getattr(type(module), method) is not base:
                raise errors.UnsupportedOperation(
                    f"{_layer(cls.op, name)}: {type(module).__name__} overrides nn.{cls.torch_class.__name__}.{method}; "
                    f"ai3 would not compute what it computes"
                )
        if parametrize.is_parametrized(module):
            raise errors.UnsupportedOperation(
                f"{_layer(cls.op, name)}: the module's parameters are parametrized (torch.nn.utils.parametrize, e.g. "
                "weight_norm); ai3 takes plain Parameters"
            )

    def _finish(self, module: nn.Module) -> "Ai3Module":
        self.train(module.training)
        self._prepare()
        return self

    def _prepare(self) -> None:
        """Builds (and caches) the core layer now, so that an algorithm that
        cannot take the layer is refused when swapping, naming the module."""
        args = self._op_args(None)
        if args is None:
            return
        try:
            ops.prepare(self.op, *args)
        except errors.Error as e:
            raise _named(e, self.op, self.name) from None

    def _op_args(self, x: Optional[torch.Tensor]) -> Optional[tuple]:
        """The op's arguments after the input; None when they cannot be
        known without an input (or the weights are not CPU floats)."""
        raise NotImplementedError

    # -- forward ------------------------------------------------------------

    def _call_op(self, x: Any) -> torch.Tensor:
        if not isinstance(x, torch.Tensor):
            raise errors.InvalidArgument(f"{_layer(self.op, self.name)}: input must be a torch.Tensor, got {type(x).__name__}")
        unbatched = self._image_op and x.dim() == 3
        if unbatched:
            x = x.unsqueeze(0)
        op = getattr(torch.ops.ai3, self.op)
        try:
            y = op(x, *self._op_args(x))
        except errors.Error as e:
            raise _named(e, self.op, self.name) from None
        return y.squeeze(0) if unbatched else y

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self._call_op(x)

    def resolved_algorithm(self) -> str:
        """The algorithm the core runs for this module ("default" resolved);
        the requested name where that cannot be known yet (weights not CPU
        float32/float64)."""
        args = self._op_args(None)
        if args is None:
            return self.algorithm
        try:
            return ops.prepare(self.op, *args)
        except errors.Error as e:
            raise _named(e, self.op, self.name) from None

    def _ai3_repr(self) -> str:
        return f"algorithm={self.algorithm!r}"


def _cpu_float(t: torch.Tensor) -> bool:
    # CUDA weights too, in a CUDA build: the layer is then built on their GPU.
    on_device = t.device.type == "cpu" or (t.device.type == "cuda" and cuda.built())
    return on_device and t.dtype in (torch.float32, torch.float64)


class Conv2d(Ai3Module):
    """nn.Conv2d (padding_mode "zeros") running ai3::conv2d."""

    op = "conv2d"
    torch_class = nn.Conv2d
    _image_op = True

    def __init__(
        self,
        weight: torch.Tensor,
        bias: Optional[torch.Tensor] = None,
        stride: Union[int, Sequence[int]] = 1,
        padding: Union[int, str, Sequence[int]] = 0,
        dilation: Union[int, Sequence[int]] = 1,
        groups: int = 1,
        *,
        algorithm: str = "default",
        name: str = "",
    ):
        """`padding`: an int, a pair (h, w), 4 ints (top, bottom, left,
        right), or "same"/"valid" as nn.Conv2d."""
        super().__init__(algorithm=algorithm, name=name)
        self.register_parameter("weight", _as_parameter(weight, "weight", self.op, name))
        self.register_parameter("bias", _as_parameter(bias, "bias", self.op, name))  # None: as PyTorch, no "bias" key
        if self.weight.dim() != 4:
            raise errors.ShapeError(f"{_layer(self.op, name)}: weight must be rank 4 (OIHW), got shape {tuple(self.weight.shape)}")
        self.out_channels = int(self.weight.shape[0])
        self.in_channels = int(self.weight.shape[1]) * int(groups)
        self.kernel_size = (int(self.weight.shape[2]), int(self.weight.shape[3]))
        layer = _layer(self.op, name)
        self.stride = params.pair(stride, "stride", layer)
        self.dilation = params.pair(dilation, "dilation", layer)
        self.groups = int(groups)
        self.padding = padding if isinstance(padding, str) else tuple(padding) if isinstance(padding, (tuple, list)) else params.pair(padding, "padding", layer)
        if isinstance(padding, (tuple, list)) and len(padding) == 4:
            self.pads = tuple(int(p) for p in padding)
        else:
            self.pads = params.padding4(padding, self.kernel_size, self.dilation, layer)
        self.padding_mode = "zeros"

    @classmethod
    def from_torch(cls, module: nn.Conv2d, algorithm: str = "default", name: str = "") -> "Conv2d":
        cls._check_source(module, name)
        if isinstance(module, cls):  # another algorithm for an ai3 module
            stride, pads, dilation, groups = module.stride, module.pads, module.dilation, module.groups
        else:
            attrs = params.conv2d(module, name)  # refuses padding_mode other than "zeros"
            stride, pads, dilation, groups = attrs["stride"], attrs["padding"], attrs["dilation"], attrs["groups"]
        weight, bias = _source_parameter(module, "weight", cls.op, name), _source_parameter(module, "bias", cls.op, name)
        new = cls(weight, bias, stride, pads, dilation, groups, algorithm=algorithm, name=name)
        new.padding = module.padding  # PyTorch's form ("same", (1, 1), ...) for reading
        return new._finish(module)

    def _op_args(self, x):
        if x is None and not _cpu_float(self.weight):
            return None
        return (self.weight, self.bias, self.stride, self.pads, self.dilation, self.groups, self.algorithm)

    def extra_repr(self) -> str:
        s = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        if any(self.pads):
            s += f", padding={self.padding}"
        if self.dilation != (1, 1):
            s += f", dilation={self.dilation}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        return f"{s}, {self._ai3_repr()}"


class Linear(Ai3Module):
    """nn.Linear running ai3::linear."""

    op = "linear"
    torch_class = nn.Linear

    def __init__(self, weight: torch.Tensor, bias: Optional[torch.Tensor] = None, *, algorithm: str = "default", name: str = ""):
        super().__init__(algorithm=algorithm, name=name)
        self.register_parameter("weight", _as_parameter(weight, "weight", self.op, name))
        self.register_parameter("bias", _as_parameter(bias, "bias", self.op, name))  # None: as PyTorch, no "bias" key
        if self.weight.dim() != 2:
            raise errors.ShapeError(f"{_layer(self.op, name)}: weight must be rank 2, got shape {tuple(self.weight.shape)}")
        self.out_features, self.in_features = (int(d) for d in self.weight.shape)

    @classmethod
    def from_torch(cls, module: nn.Linear, algorithm: str = "default", name: str = "") -> "Linear":
        cls._check_source(module, name)
        weight, bias = _source_parameter(module, "weight", cls.op, name), _source_parameter(module, "bias", cls.op, name)
        return cls(weight, bias, algorithm=algorithm, name=name)._finish(module)

    def _op_args(self, x):
        if x is None and not _cpu_float(self.weight):
            return None
        return (self.weight, self.bias, self.algorithm)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}, {self._ai3_repr()}"


class ReLU(Ai3Module):
    """nn.ReLU running ai3::relu. The result is always a new tensor: with
    inplace=True the input is not overwritten (the returned value is what
    nn.ReLU returns)."""

    op = "relu"
    torch_class = nn.ReLU

    def __init__(self, inplace: bool = False, *, algorithm: str = "default", name: str = ""):
        super().__init__(algorithm=algorithm, name=name)
        self.inplace = bool(inplace)

    @classmethod
    def from_torch(cls, module: nn.ReLU, algorithm: str = "default", name: str = "") -> "ReLU":
        cls._check_source(module, name)
        return cls(module.inplace, algorithm=algorithm, name=name)._finish(module)

    def _op_args(self, x):
        return (self.algorithm,)

    def extra_repr(self) -> str:
        return self._ai3_repr()


class MaxPool2d(Ai3Module):
    """nn.MaxPool2d (return_indices=False) running ai3::maxpool2d."""

    op = "maxpool2d"
    torch_class = nn.MaxPool2d
    _image_op = True

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, *, algorithm="default", name=""):
        """`padding`: an int, a pair (h, w) or 4 ints (top, bottom, left, right)."""
        super().__init__(algorithm=algorithm, name=name)
        self.kernel_size, self.stride, self.padding, self.dilation = kernel_size, stride, padding, dilation
        self.ceil_mode = bool(ceil_mode)
        self.return_indices = False
        pads = tuple(padding) if isinstance(padding, (tuple, list)) and len(padding) == 4 else 0
        attrs = params.maxpool2d(kernel_size, stride, 0 if pads else padding, dilation, ceil_mode, name=name)
        self._kernel, self._stride, self._dilation = attrs["kernel"], attrs["stride"], attrs["dilation"]
        self._pads = tuple(int(p) for p in pads) if pads else attrs["padding"]

    @classmethod
    def from_torch(cls, module: nn.MaxPool2d, algorithm: str = "default", name: str = "") -> "MaxPool2d":
        cls._check_source(module, name)
        if module.return_indices:
            raise errors.UnsupportedOperation(f"{_layer(cls.op, name)}: return_indices=True is not supported")
        new = cls(module.kernel_size, module.stride, module.padding, module.dilation, module.ceil_mode, algorithm=algorithm, name=name)
        return new._finish(module)

    def _op_args(self, x):
        return (self._kernel, self._stride, self._pads, self._dilation, self.ceil_mode, self.algorithm)

    def extra_repr(self) -> str:
        return (
            f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
            f"dilation={self.dilation}, ceil_mode={self.ceil_mode}, {self._ai3_repr()}"
        )


class AvgPool2d(Ai3Module):
    """nn.AvgPool2d running ai3::avgpool2d."""

    op = "avgpool2d"
    torch_class = nn.AvgPool2d
    _image_op = True

    def __init__(
        self, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True, divisor_override=None, *, algorithm="default", name=""
    ):
        """`padding`: an int, a pair (h, w) or 4 ints (top, bottom, left, right)."""
        super().__init__(algorithm=algorithm, name=name)
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding
        self.ceil_mode, self.count_include_pad = bool(ceil_mode), bool(count_include_pad)
        self.divisor_override = None if divisor_override is None else int(divisor_override)
        pads = tuple(padding) if isinstance(padding, (tuple, list)) and len(padding) == 4 else 0
        attrs = params.avgpool2d(kernel_size, stride, 0 if pads else padding, ceil_mode, count_include_pad, divisor_override, name=name)
        self._kernel, self._stride = attrs["kernel"], attrs["stride"]
        self._pads = tuple(int(p) for p in pads) if pads else attrs["padding"]

    @classmethod
    def from_torch(cls, module: nn.AvgPool2d, algorithm: str = "default", name: str = "") -> "AvgPool2d":
        cls._check_source(module, name)
        new = cls(
            module.kernel_size,
            module.stride,
            module.padding,
            module.ceil_mode,
            module.count_include_pad,
            module.divisor_override,
            algorithm=algorithm,
            name=name,
        )
        return new._finish(module)

    def _op_args(self, x):
        return (self._kernel, self._stride, self._pads, self.ceil_mode, self.count_include_pad, self.divisor_override, self.algorithm)

    def extra_repr(self) -> str:
        s = f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"
        if self.ceil_mode or not self.count_include_pad or self.divisor_override is not None:
            s += f", ceil_mode={self.ceil_mode}, count_include_pad={self.count_include_pad}, divisor_override={self.divisor_override}"
        return f"{s}, {self._ai3_repr()}"


class AdaptiveAvgPool2d(Ai3Module):
    """nn.AdaptiveAvgPool2d running ai3::adaptiveavgpool2d. A None entry of
    output_size (keep that input dimension) is resolved per input."""

    op = "adaptiveavgpool2d"
    torch_class = nn.AdaptiveAvgPool2d
    _image_op = True

    def __init__(self, output_size, *, algorithm="default", name=""):
        super().__init__(algorithm=algorithm, name=name)
        if isinstance(output_size, (tuple, list)):
            if len(output_size) != 2:
                raise errors.InvalidArgument(f"{_layer(self.op, name)}: output_size must be an int or a pair, got {output_size!r}")
            output_size = tuple(None if v is None else int(v) for v in output_size)
        elif output_size is not None:
            output_size = int(output_size)
        self.output_size = output_size

    @classmethod
    def from_torch(cls, module: nn.AdaptiveAvgPool2d, algorithm: str = "default", name: str = "") -> "AdaptiveAvgPool2d":
        cls._check_source(module, name)
        return cls(module.output_size, algorithm=algorithm, name=name)._finish(module)

    def _output_size(self, x: Optional[torch.Tensor]) -> Optional[tuple[int, int]]:
        size = self.output_size
        oh, ow = size if isinstance(size, tuple) else (size, size)
        if oh is None or ow is None:
            if x is None:
                return None
            if x.dim() < 2:
                raise errors.ShapeError(f"{_layer(self.op, self.name)}: expected a rank-4 NCHW input, got shape {tuple(x.shape)}")
            oh = int(x.shape[-2]) if oh is None else oh
            ow = int(x.shape[-1]) if ow is None else ow
        return oh, ow

    def _op_args(self, x):
        size = self._output_size(x)
        return None if size is None else (size, self.algorithm)

    def resolved_algorithm(self) -> str:
        size = self.output_size
        if isinstance(size, tuple) and None in size:  # any size will do to resolve the name
            try:
                return ops.prepare(self.op, tuple(1 if v is None else v for v in size), self.algorithm)
            except errors.Error as e:
                raise _named(e, self.op, self.name) from None
        return super().resolved_algorithm()

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}, {self._ai3_repr()}"


class Flatten(Ai3Module):
    """nn.Flatten running ai3::flatten (which copies: the result is never a
    view of the input)."""

    op = "flatten"
    torch_class = nn.Flatten

    def __init__(self, start_dim: int = 1, end_dim: int = -1, *, algorithm: str = "default", name: str = ""):
        super().__init__(algorithm=algorithm, name=name)
        self.start_dim, self.end_dim = int(start_dim), int(end_dim)

    @classmethod
    def from_torch(cls, module: nn.Flatten, algorithm: str = "default", name: str = "") -> "Flatten":
        cls._check_source(module, name)
        return cls(module.start_dim, module.end_dim, algorithm=algorithm, name=name)._finish(module)

    def _op_args(self, x):
        return (self.start_dim, self.end_dim, self.algorithm)

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}, {self._ai3_repr()}"


__all__ = [
    "CLASS_OF_OP",
    "AdaptiveAvgPool2d",
    "Ai3Module",
    "AvgPool2d",
    "Conv2d",
    "Flatten",
    "Linear",
    "MaxPool2d",
    "ReLU",
]
