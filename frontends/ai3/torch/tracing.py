"""torch.fx tracers for swap_backend.

_PathTracer is symbolic_trace's tracer plus, on every node, the module it
was traced inside (for error messages).

_ValueTracer also runs the model for real while it traces, on two sample
inputs that differ only in their batch size, and keeps both results on every
node (node.meta[VALUES]). That is what lets ai3 trace torchvision's
transformers, whose forward passes branch and compute on shapes
(`B, H, W, C = x.shape`, `pad = (w - W % w) % w`, `if pad_H <= window: ...`):

- `x.shape`, `x.size()`, `x.dim()`, `len(x)` answer with plain ints for the
  dimensions that are the same in both runs; a dimension that differs
  depends on the batch size and stays in the graph as a `size` node, so the
  model keeps running at other batch sizes;
- control flow on a traced value is taken the way both runs take it, and is
  refused only where the two runs disagree (it depends on the batch);
- tensors built from shapes and constants alone (`x.new_zeros(...)`, masks,
  relative position biases from parameters) are computed while tracing and
  enter the graph as constants;
- helpers torchvision marks with torch.fx.wrap (swin's window attention and
  patch-merging pad, stochastic depth) are traced through instead of being
  kept as opaque calls, since their shape logic now resolves.
"""

from __future__ import annotations

import contextlib
import copy
import inspect
import keyword
import operator
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import torch
from torch import fx, nn
from torch.fx import _symbolic_trace
from torch.fx.node import map_aggregate

from ai3 import errors

VALUES = "ai3_values"  # node.meta key: (value on sample 1, value on sample 2)
DEFAULTED = "ai3_defaulted"  # node.meta key of a placeholder left at its default
OUTPUT_TYPES = "ai3_output_types"  # a called_by_name class's record of its results' types


class _PathTracer(fx.Tracer):
    """symbolic_trace's tracer, noting on every node the module it was
    traced inside. With `maps`, a torch.nn module is kept whole (a leaf,
    fx's default for torch.nn) only where `maps` says ai3 maps it as a
    module; the others are traced through, so that a container of mapped
    parts (nn.TransformerEncoderLayer, called with its masks as keywords)
    maps part by part."""

    def __init__(self, maps: Callable[[nn.Module], bool] | None = None) -> None:
        super().__init__()
        self._paths: list[str] = []
        self._maps = maps

    def is_leaf_module(self, m: nn.Module, module_qualified_name: str) -> bool:
        leaf = super().is_leaf_module(m, module_qualified_name)
        return leaf and (self._maps is None or self._maps(m))

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


def values(node: fx.Node) -> Any:
    """The node's (value on sample 1, value on sample 2), or None when it
    was traced without sample inputs."""
    return node.meta.get(VALUES)


class _ValueProxy(fx.Proxy):
    """A proxy that knows its node's values on both samples, and answers
    shape questions with ints where the batch size does not matter."""

    def _values(self) -> tuple[Any, Any]:
        return self.node.meta[VALUES]

    def __getattr__(self, k: str) -> Any:
        first = self.node.meta[VALUES][0]
        if isinstance(first, torch.Tensor):
            if k == "shape":
                return self.size()
            if k == "ndim":
                return first.dim()
            if k in ("dtype", "device", "layout", "is_cuda", "requires_grad", "is_sparse"):
                return getattr(first, k)
        return super().__getattr__(k)

    def size(self, dim: Any = None) -> Any:
        a, b = self._values()
        if not isinstance(a, torch.Tensor):
            return self.tracer.create_proxy("call_method", "size", (self,) if dim is None else (self, dim), {})
        if dim is not None:
            return self._dim(a, b, dim)
        dims = tuple(self._dim(a, b, i) for i in range(a.dim()))
        return torch.Size(dims) if all(isinstance(d, int) for d in dims) else dims

    def _dim(self, a: torch.Tensor, b: torch.Tensor, i: int) -> Any:
        if a.shape[i] == b.shape[i]:
            return int(a.shape[i])
        return self.tracer.create_proxy("call_method", "size", (self, i), {})

    def dim(self) -> int:
        return self._values()[0].dim()

    def __setitem__(self, index: Any, value: Any) -> None:
        # x[index] = value (and x[index] += y, run by Python as a getitem,
        # an add and this) as an operator.setitem node; evaluating it writes
        # into both runs' real values, as the model would. fx's Proxy has
        # no __setitem__: MViT's `attn[:, :, 1:, 1:] += rel_pos` failed.
        self.tracer.create_proxy("call_function", operator.setitem, (self, index, value), {})

    def __len__(self) -> int:
        a, b = self._values()
        if len(a) != len(b):
            raise fx.proxy.TraceError(f"len() of fx node '{self.node.name}' depends on the batch size")
        return len(a)

    # Factories that read only x's dtype and device: computed now.
    def _factory(self, name: str, *args: Any, **kwargs: Any) -> Any:
        return getattr(self._values()[0], name)(*args, **kwargs)

    def new_zeros(self, *args: Any, **kwargs: Any) -> Any:
        return self._factory("new_zeros", *args, **kwargs)

    def new_ones(self, *args: Any, **kwargs: Any) -> Any:
        return self._factory("new_ones", *args, **kwargs)

    def new_full(self, *args: Any, **kwargs: Any) -> Any:
        return self._factory("new_full", *args, **kwargs)

    def new_empty(self, *args: Any, **kwargs: Any) -> Any:
        return self._factory("new_empty", *args, **kwargs)

    def new_tensor(self, *args: Any, **kwargs: Any) -> Any:
        return self._factory("new_tensor", *args, **kwargs)


class _ValueTracer(_PathTracer):
    def __init__(self, samples: Sequence[Any], maps: Callable[[nn.Module], bool] | None = None) -> None:
        """`samples`: the two runs' inputs, each a tensor or (a model of
        several inputs) a tuple of one tensor per forward argument."""
        super().__init__(maps)
        first, second = samples
        pairs = [(first, second)] if isinstance(first, torch.Tensor) else list(zip(first, second))
        self._placeholder_values = iter(pairs)  # per placeholder, in order
        self._evaluating = 0  # > 0 while a leaf module runs for real

    def proxy(self, node: fx.Node) -> fx.Proxy:
        return _ValueProxy(node, self)

    def call_module(self, m, forward, args, kwargs):
        if self._evaluating:  # a submodule of a leaf module running for real
            return forward(*args, **kwargs)
        return super().call_module(m, forward, args, kwargs)

    def getattr(self, attr, attr_val, parameter_proxy_cache):
        # Parameters and buffers stay real tensors: what is computed from
        # them alone (relative position biases, ...) is computed now, and
        # where they meet traced values they enter the graph as get_attr.
        return attr_val

    def create_proxy(self, kind, target, args, kwargs, name=None, type_expr=None, proxy_factory_fn=None):
        if is_item_assignment(kind, target):
            self._check_not_model_state(args[0])
        proxy = super().create_proxy(kind, target, args, kwargs, name, type_expr, proxy_factory_fn)
        if kind == "placeholder":
            values = next(self._placeholder_values, None)
            if values is None:  # an argument at its default (concrete_args), or **kwargs: not an input
                name = str(target)
                default = {} if name.startswith("**") else () if name.startswith("*") else next(self.defaults)
                values = (default, default)
                proxy.node.meta[DEFAULTED] = True
            proxy.node.meta[VALUES] = values
        else:
            proxy.node.meta[VALUES] = tuple(self._evaluate(kind, target, args, kwargs, k) for k in range(2))
        return proxy

    def _check_not_model_state(self, target: Any) -> None:
        """Refuses an item assignment into the model's own parameters or
        buffers (a cache it keeps between calls; `self.cache[1:3] = x`,
        which reaches the tracer as a real tensor's __setitem__), before
        it is evaluated: that would write into the user's model, and the
        model's result depends on state ai3 does not keep."""
        value = target.node.meta[VALUES][0] if isinstance(target, fx.Proxy) else target
        if not isinstance(value, torch.Tensor):
            return
        storage = value.untyped_storage().data_ptr()
        kept = (*self.root.parameters(), *self.root.buffers())
        if any(t.untyped_storage().data_ptr() == storage for t in kept):
            raise fx.proxy.TraceError(
                "an item assignment into a parameter or buffer of the model (state it keeps between calls)"
            )

    def _evaluate(self, kind: str, target: Any, args: Any, kwargs: Any, k: int) -> Any:
        def real(a: Any) -> Any:
            return a.node.meta[VALUES][k] if isinstance(a, fx.Proxy) else a

        args, kwargs = map_aggregate(args, real), map_aggregate(kwargs, real)
        self._evaluating += 1
        try:
            with torch.no_grad():
                if kind == "call_function":
                    return target(*args, **kwargs)
                if kind == "call_method":
                    return getattr(args[0], target)(*args[1:], **kwargs)
                if kind == "call_module":
                    return _symbolic_trace._orig_module_call(self.root.get_submodule(target), *args, **kwargs)
                if kind == "get_attr":
                    return _get_attr(self.root, target)
        finally:
            self._evaluating -= 1
        raise AssertionError(f"unexpected node kind {kind}")

    def to_bool(self, obj: fx.Proxy) -> bool:
        a, b = (bool(v) for v in obj.node.meta[VALUES])
        if a != b:
            raise fx.proxy.TraceError(f"control flow on fx node '{obj.node.name}' depends on the batch size")
        return a

    def iter(self, obj: fx.Proxy) -> Iterator:
        return iter([obj[i] for i in range(len(obj))])


def _get_attr(root: nn.Module, target: str) -> Any:
    value: Any = root
    for part in target.split("."):
        value = getattr(value, part)
    return value


# Methods of constant tensors that take sizes: called with a batch-dependent
# size (ViT's `class_token.expand(n, -1, -1)`) they must become graph nodes,
# which torch's argument parsing would not let a Proxy size do.
_SIZE_METHODS = ("expand", "repeat", "view", "reshape")
# Factories of torch's own that take sizes: called with a batch-dependent one
# (BART's decoder: torch.ones(batch_size, length) as its default mask) they
# become graph nodes too, where torch's argument parsing refuses a Proxy.
_SIZE_FACTORIES = ("ones", "zeros", "full", "empty")
_FACTORY_FUNCTIONS = frozenset(getattr(torch, f) for f in _SIZE_FACTORIES)


@contextlib.contextmanager
def _traced_through_torchvision_wraps() -> Iterator[None]:
    """For this trace only: lets the tracer go inside torchvision's
    torch.fx.wrap'ed helpers (with concrete shapes their bodies trace), and
    records the size-taking methods of constant tensors and torch's
    size-taking factories."""
    table = _symbolic_trace._wrapped_fns_to_patch
    removed = {k: g for k, g in table.items() if str(g.get("__name__", "")).startswith("torchvision.")}
    for k in removed:
        del table[k]
    methods = _symbolic_trace._wrapped_methods_to_patch
    added = [(torch.Tensor, m) for m in _SIZE_METHODS if (torch.Tensor, m) not in methods]
    methods.extend(added)
    factories = [(id(torch.__dict__), f) for f in _SIZE_FACTORIES if (id(torch.__dict__), f) not in table]
    table.update(dict.fromkeys(factories, torch.__dict__))
    try:
        yield
    finally:
        table.update(removed)
        for entry in added:
            methods.remove(entry)
        for key in factories:
            del table[key]


def _defaulted_arguments(module: nn.Module, given: int) -> dict[str, Any]:
    """forward's parameters after the first `given`, at their defaults
    (Hugging Face's `token_type_ids=None, ...`): fx traces them as
    constants, not as inputs."""
    try:
        params = list(inspect.signature(module.forward).parameters.values())
    except (TypeError, ValueError):  # a forward without a signature: traced as it is
        return {}
    concrete = {}
    for p in params[given:]:
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        if p.default is inspect.Parameter.empty:
            raise fx.proxy.TraceError(f"forward's argument '{p.name}' has no default and no sample input")
        concrete[p.name] = p.default
    return concrete


def _decorated(module: nn.Module) -> bool:
    """Whether forward is wrapped by a decorator (functools.wraps; Hugging
    Face's `merge_with_config_defaults`, `can_return_tuple`, ...)."""
    forward = type(module).forward
    return inspect.unwrap(forward) is not forward


def called_by_name(module: nn.Module, names: Sequence[str]) -> nn.Module:
    """`module` as fx traces it when the inputs are forward's arguments
    `names` (a model called as `model(input_ids=..., attention_mask=...)`):
    a shallow copy (the same submodules and parameters, so the same paths)
    whose forward takes exactly `names` and passes them by keyword to the
    module's own forward. The others stay at forward's defaults, and
    whatever decorates forward runs as it would in the user's call.

    Why a generated forward: fx makes the graph's inputs from the code of
    forward with its decorators unwrapped, then calls the decorated one
    with them by position, which a decorator taking (*args, **kwargs)
    misreads (GPT-2's second positional argument is not its mask either).

    The class records the type of each result (OUTPUT_TYPES): fx keeps a
    dict subclass (Hugging Face's ModelOutput) as a plain dict."""
    cls = type(module)
    try:
        params = inspect.signature(cls.forward).parameters
    except (TypeError, ValueError):
        params = None
    for name in names:
        if not isinstance(name, str) or not name.isidentifier() or keyword.iskeyword(name):
            raise errors.InvalidArgument(f"sample_input_shape names an input {name!r}, which is not an argument name")
        if params is not None and name not in params and not any(p.kind == p.VAR_KEYWORD for p in params.values()):
            takes = ", ".join(n for n in params if n != "self")
            raise errors.InvalidArgument(f"{cls.__name__}.forward has no argument '{name}'; it takes {takes}")
    source = (
        f"def forward(self, {', '.join(names)}):\n"
        f"    result = _forward(self, {', '.join(f'{n}={n}' for n in names)})\n"
        "    _types.append(type(result))\n"
        "    return result\n"
    )
    scope: dict[str, Any] = {"_forward": cls.forward, "_types": []}
    exec(source, scope)  # names checked above: identifiers only
    by_name = type(cls.__name__, (cls,), {"forward": scope["forward"], OUTPUT_TYPES: scope["_types"]})
    by_name.__module__ = cls.__module__
    root = copy.copy(module)
    root.__class__ = by_name
    return root


def output_type(root: Any) -> type | None:
    """The dict subclass a called_by_name root's forward returned (a
    ModelOutput), or None: the ai3.Model returns its outputs in it."""
    seen = getattr(type(root), OUTPUT_TYPES, None)
    if not seen or not issubclass(seen[-1], dict) or seen[-1] is dict:
        return None
    return seen[-1]


def trace(
    module: nn.Module, samples: Sequence[Any] | None = None, maps: Callable[[nn.Module], bool] | None = None
) -> tuple[fx.GraphModule, Any]:
    """(GraphModule, the tracer's root) of `module`; with two `samples`
    (each a tensor, or a tuple of one per input), every node also carries
    its values on them (see values()). A decorated forward is traced
    through called_by_name, its first arguments taking the samples.
    `maps` (ai3.torch.fx.maps_as_module): the torch.nn modules kept whole;
    the others are traced through, unless that fails (a forward fx cannot
    trace), when every torch.nn module is kept whole, as fx keeps them,
    and the mapping names the one it lacks."""
    if maps is not None:
        try:
            return _trace(module, samples, maps)
        except Exception:
            pass
    return _trace(module, samples, None)


def _trace(
    module: nn.Module, samples: Sequence[Any] | None, maps: Callable[[nn.Module], bool] | None
) -> tuple[fx.GraphModule, Any]:
    if samples is None:
        tracer: _PathTracer = _PathTracer(maps)
        graph = tracer.trace(module)  # (sets tracer.root)
        return fx.GraphModule(tracer.root, graph), tracer.root
    given = 1 if isinstance(samples[0], torch.Tensor) else len(samples[0])
    if _decorated(module):  # (called_by_name's own forward is not)
        try:
            names = [p.name for p in inspect.signature(type(module).forward).parameters.values()][1 : 1 + given]
        except (TypeError, ValueError):
            names = []
        if len(names) == given:
            module = called_by_name(module, names)
    tracer = _ValueTracer(samples, maps)
    concrete = _defaulted_arguments(module, given) or None
    tracer.defaults = iter(list((concrete or {}).values()))
    before = set(vars(module))
    try:
        with _traced_through_torchvision_wraps():
            graph = tracer.trace(module, concrete_args=concrete)
        for node in graph.nodes:
            # fx marks a call of a patched function "wrapped", and the code it
            # generates would register the factory's dotted name as a wrapped
            # global of its own, which every later trace fails to patch.
            if node.op == "call_function" and node.target in _FACTORY_FUNCTIONS:
                node.meta.pop("is_wrapped", None)
        gm = fx.GraphModule(tracer.root, graph)
        gm.meta[OUTPUT_TYPES] = output_type(tracer.root)
    finally:
        # fx stores the constants it meets on the root as
        # _tensor_constant<N>; they live on in the GraphModule.
        for added in set(vars(module)) - before:
            delattr(module, added)
    return gm, tracer.root


def by_name(module: nn.Module, sample_input_shape: Any) -> tuple[nn.Module, Any]:
    """A sample_input_shape that maps forward's argument names to shapes or
    example tensors (`{"input_ids": ids, "attention_mask": mask}`, a
    tokenizer's output) as the called_by_name module and the values in
    order; any other sample_input_shape, and the module, unchanged."""
    if not isinstance(sample_input_shape, Mapping):
        return module, sample_input_shape
    if not sample_input_shape:
        raise errors.InvalidArgument("sample_input_shape is an empty mapping; name at least one input")
    return called_by_name(module, list(sample_input_shape)), list(sample_input_shape.values())


def sample_inputs(module: nn.Module, shape: Sequence[Any]) -> tuple[Any, Any]:
    """Two random inputs: `shape`, and `shape` with one more in the batch
    dimension (to tell the batch-dependent dimensions from the fixed ones;
    `shape` again where dim 0 is not the batch, see batch_leads).
    `shape` may be a sequence of shapes, one per input of a model of
    several: then each run is a tuple of inputs."""
    if isinstance(shape, torch.Tensor):  # an example input (token ids, say): the second run repeats its first row
        return shape, torch.cat([shape, shape[:1]]) if batch_leads(module) else shape.clone()
    if is_several_shapes(shape):
        runs = [sample_inputs(module, s) for s in shape]
        return tuple(r[0] for r in runs), tuple(r[1] for r in runs)
    dtype = float_dtype(module)
    generator = torch.Generator().manual_seed(0)
    shape = tuple(int(d) for d in shape)
    other = (shape[0] + 1,) + shape[1:] if batch_leads(module) else shape
    return (torch.randn(shape, generator=generator, dtype=dtype), torch.randn(other, generator=generator, dtype=dtype))


def is_item_assignment(kind: str, target: Any) -> bool:
    """Whether an fx node of this kind and target is `x[index] = value`:
    operator.setitem from a traced tensor's __setitem__, or the method
    __setitem__ of a real tensor (a parameter, a buffer, a constant)."""
    return (kind == "call_function" and target is operator.setitem) or (
        kind == "call_method" and target == "__setitem__"
    )


def batch_leads(module: nn.Module) -> bool:
    """Whether dim 0 of the module's inputs may be taken for the batch: not
    where it has a sequence-first recurrent layer (nn.LSTM, nn.GRU or
    nn.RNN with batch_first=False, torch's default), whose input's dim 0 is
    time, and time is unrolled into a fixed number of steps. Such a module
    is traced with its second run at the sample's own shape, so that no
    dimension depends on the batch: every one is fixed, and its ai3.Model
    runs other shapes in a model built again for them (ai3.model.PerShape)."""
    return not any(isinstance(m, nn.RNNBase) and not m.batch_first for m in module.modules())


def float_dtype(module: nn.Module) -> torch.dtype:
    """The dtype a module computes in: its first float parameter's, or
    buffer's (a BatchNorm without affine weights has only its running
    statistics), float32 if it has neither."""
    tensors = (*module.parameters(), *module.buffers())
    return next((t.dtype for t in tensors if t.is_floating_point()), torch.float32)


def is_several_shapes(shape: Any) -> bool:
    """Whether a sample_input_shape is one shape per input ([(1, 8), (1, 8)])
    rather than one input's shape."""
    return (
        isinstance(shape, (tuple, list))
        and len(shape) > 0
        and isinstance(shape[0], (tuple, list, torch.Size, torch.Tensor))
    )
