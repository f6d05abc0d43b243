"""ai3's PyTorch frontend.

    model = ai3.swap_backend(net, {"conv2d": "direct"})   # whole net in the core
    ai3.swap_conv2d(net, ["direct", "smm", ...])         # in place, module by module

swap_backend traces with torch.fx and returns an ai3.Model; the in-place
swaps replace matching submodules with ai3.torch.Layer modules calling the
one torch.library op ai3::layer (ai3.torch.ops) backed by the core, so the
model stays an nn.Module. Both start from one mapping of torch modules onto
core ops (ai3.torch.mapping): swap_operation(op, ...) takes any op a module
class maps onto.
"""

from __future__ import annotations

import copy
import functools
import inspect
from collections.abc import Mapping, Sequence
from typing import Any, Optional, Union

import numpy as np
import torch
from torch import nn

from ai3 import errors, frontend, layers, model, selection
from ai3.selection import Selector
from ai3.spec import MODEL_INPUT, OUTPUTS
from ai3.torch import fx, mapping, ops, rnn, tracing
from ai3.torch.modules import Layer

# The frontend contract (ai3.frontend): torch models compute on NCHW images.
LAYOUT = "NCHW"


def swap_backend(
    module: nn.Module,
    algos: Selector | Mapping[str, Selector] | None = None,
    sample_input_shape: Sequence[int] | None = None,
    *,
    dtype: Any | None = None,
    recorder: Any | None = None,
    fallback: bool = False,
) -> model.Model:
    """The whole network as an ai3.Model run by the core.

    `algos` maps an op ("conv2d", "linear", ...) to a selector (a name, a
    list of names, or a callable; see ai3.selection); ops it leaves out get
    "default". Sequence selectors index an op's layers in execution order.
    Batch norms that follow a convolution are folded into it; dropout is
    dropped (inference). An operation the core lacks raises
    ai3.UnsupportedOperation naming the fx node, its target and module.

    A model of several inputs takes one shape per forward argument as
    sample_input_shape (`[(2, 16, 32), (2, 1, 16, 16)]`; later arguments
    stay at their defaults; an example tensor may stand for a shape, as
    token ids must, since random samples are float), or a mapping from
    forward's argument names to them (`{"input_ids": ids,
    "attention_mask": mask}`, a tokenizer's output: the model is traced as
    called with those by keyword, the others at their defaults). Its
    ai3.Model takes them by position or by name; a forward returning a
    tuple, list or dict of tensors gives a model returning a tuple (a dict,
    of the same class when forward's was a dict subclass such as Hugging
    Face's ModelOutput).

    fallback=True (with sample_input_shape): where some nodes have no ai3
    equivalent, the supported runs of the graph become ai3.Models and the
    rest runs in PyTorch (ai3.torch.fallback); the result, a
    FallbackModule, lists what fell back in `fallbacks()`. Without it, the
    refusal lists every unsupported node.
    """
    if not isinstance(module, nn.Module):
        raise errors.InvalidArgument(f"swap_backend takes an nn.Module, got {type(module).__name__}")
    if fallback:
        from ai3.torch import fallback as partitioned

        return partitioned.swap_backend(module, algos, sample_input_shape, dtype=dtype, recorder=recorder)
    # The Model runs where the module's parameters are (a CUDA module gives a
    # model of CUDA layers, see ai3.cuda); it is traced from a CPU copy so
    # shape propagation runs on CPU sample inputs.
    device = next((p.device for p in module.parameters()), torch.device("cpu"))
    traced = copy.deepcopy(module).cpu() if device.type == "cuda" else module
    traced, sample_input_shape = tracing.by_name(traced, sample_input_shape)
    if tracing.is_several_shapes(sample_input_shape):
        return _swap_backend_several(traced, algos, sample_input_shape, dtype=dtype, device=device, recorder=recorder)
    shape = selection.sample_shape(sample_input_shape)
    found, unbatched = _trace(traced, shape)
    specs, output, _ = found
    if specs[output].op == OUTPUTS:
        return _unrolled(_built_several(found, algos, module, dtype, device, recorder), module, algos, dtype, [shape])
    built = frontend.build_model(
        specs,
        output,
        algos,
        dtype=fx.model_dtype(module, dtype),
        layout=LAYOUT,
        sample_input_shape=(1,) + shape if unbatched else shape,
        device=device,
        recorder=recorder,
    )
    built.unbatched = unbatched
    return _unrolled(built, module, algos, dtype, [shape])


def _unrolled(built: model.Model, module: nn.Module, algos: Any, dtype: Any, shapes: Sequence[Any]) -> model.Model:
    """`built`, told to run other input shapes in a model built for them
    (ai3.model.PerShape) where the module has a recurrent layer: its steps
    are unrolled for the sample's sequence length (ai3.torch.rnn)."""
    if not any(rnn.is_recurrent(m) for m in module.modules()):
        return built
    # Any batch where the traced specs do not depend on it; else (a
    # sequence-first recurrent layer, tracing.batch_leads) these shapes only.
    shapes = [tuple(s.shape if isinstance(s, torch.Tensor) else s) for s in shapes]
    if tracing.batch_leads(module):
        shapes = [(None, *s[1:]) for s in shapes]
    torch_dtypes = [torch.from_numpy(np.zeros((), d)).dtype for d in built._input_dtypes()]
    built.per_shape = model.PerShape(shapes, functools.partial(_rebuilt, module, algos, dtype, torch_dtypes))
    return built


def _rebuilt(
    module: nn.Module, algos: Any, dtype: Any, torch_dtypes: list[torch.dtype], shapes: list[tuple[int, ...]]
) -> model.Model:
    """PerShape's rebuild: the model for inputs of these shapes (one
    example input of its dtype per input where there are several)."""
    if len(shapes) == 1:
        return swap_backend(module, algos, shapes[0], dtype=dtype)
    return swap_backend(module, algos, [torch.zeros(s, dtype=t) for s, t in zip(shapes, torch_dtypes)], dtype=dtype)


def _swap_backend_several(
    module: nn.Module, algos: Any, shapes: Sequence[Sequence[int]], *, dtype: Any, device: Any, recorder: Any
) -> model.Model:
    shapes = [s if isinstance(s, torch.Tensor) else selection.sample_shape(s) for s in shapes]  # or example inputs
    built = _built_several(fx.to_specs(module, shapes), algos, module, dtype=dtype, device=device, recorder=recorder)
    return _unrolled(built, module, algos, dtype, shapes)


def _built_several(
    traced: fx.Traced, algos: Any, module: nn.Module, dtype: Any, device: Any, recorder: Any
) -> model.Model:
    """The ai3.Model of a traced model of several inputs or outputs, named
    as forward names them."""
    specs, output, _ = traced
    float_dtype = fx.model_dtype(module, dtype)
    # Token ids and masks keep their traced dtype; float inputs take the model's.
    input_dtypes = [
        d if d is not None and d.kind in "ib" else float_dtype
        for d in getattr(traced, "input_dtypes", [None] * traced.input_count)
    ]
    built = frontend.build_model(
        specs,
        output,
        algos,
        dtype=float_dtype,
        layout=LAYOUT,
        device=device,
        recorder=recorder,
        input_count=traced.input_count,
        input_dtypes=input_dtypes,
    )
    built.input_names = list(traced.input_names)
    built.output_names = traced.output_names
    built.output_type = getattr(traced, "output_type", None)
    return built


def _trace(module: nn.Module, shape: tuple[int, ...] | None) -> tuple[fx.Traced, bool]:
    """The module's specs for inputs of `shape`, and whether that shape is
    one unbatched image. PyTorch's conv and pool modules take a rank-3
    input as one (C, H, W) image; a model whose input goes only into such
    modules is traced (and built) for a batch of one, and its ai3.Model
    runs (C, H, W) inputs as that batch. That is only right where the
    module gives an unbatched image the result of a batch of one, less its
    batch dim (not where e.g. a flatten from dim 1 sees (C, H, W)): checked
    on the module itself."""
    if shape is not None and len(shape) == 3:
        try:
            found: fx.Traced | None = fx.to_specs(module, (1,) + shape)
        except errors.Error:
            found = None  # not an image model: (N, L, E) sequences and the like
        if found is not None:
            readers = [s.op for s in found[0] if MODEL_INPUT in s.inputs]
            if readers and set(readers) <= mapping.image_ops():
                _check_unbatched(module, shape)
                return found, True
    return fx.to_specs(module, shape), False


def _check_unbatched(module: nn.Module, shape: tuple[int, ...]) -> None:
    dtype = tracing.float_dtype(module)
    with torch.no_grad():
        batch = module(torch.zeros((1,) + shape, dtype=dtype))
        try:
            single = module(torch.zeros(shape, dtype=dtype))
        except Exception as e:  # the module's own failure on (C, H, W), whatever it raises
            single = f"an error: {e}"
    if not isinstance(single, torch.Tensor) or tuple(single.shape) != tuple(batch.shape[1:]):
        got = tuple(single.shape) if isinstance(single, torch.Tensor) else single
        raise errors.ShapeError(
            f"sample_input_shape {shape} is one unbatched image, but the model's result for it ({got}) is not its "
            f"result for a batch of one less the batch dim ({tuple(batch.shape[1:])}); give the batched shape {(1,) + shape}"
        )


def _input_shapes(module: nn.Module, targets: list[nn.Module], sample_input_shape: Sequence[int]) -> dict[int, tuple]:
    """Each target module's input shape, by running the model once on zeros
    with forward pre-hooks (works for models torch.fx cannot trace)."""
    shapes: dict[int, tuple] = {}

    def record(m, args):
        if args and isinstance(args[0], torch.Tensor):
            shapes.setdefault(id(m), tuple(args[0].shape))

    hooks = [m.register_forward_pre_hook(record) for m in targets]
    try:
        dtype = tracing.float_dtype(module)
        with torch.no_grad():
            module(torch.zeros(tuple(sample_input_shape), dtype=dtype))
    except errors.Error:
        raise
    except Exception as e:
        raise errors.ShapeError(f"the model cannot run on an input of shape {tuple(sample_input_shape)}: {e}") from e
    finally:
        for h in hooks:
            h.remove()
    return shapes


def swap_operation(
    op: str,
    module: nn.Module,
    algos: Selector | None = None,
    sample_input_shape: Sequence[int] | None = None,
    swap_with: type | None = None,
    *,
    backward: Any | None = None,
    recorder: Any | None = None,
) -> nn.Module:
    """Replaces, in place, every `op` layer of `module` (e.g. each nn.Conv2d
    for "conv2d") with an ai3 module running the selected algorithm, and
    returns `module` (or its replacement, if `module` itself is such a
    layer). "torch"/"keep" leaves a layer as it is. Sequence selectors index
    the layers in `module.named_modules()` order.

    The swapped layers are differentiable: `backward` chooses the algorithms
    of each layer's gradient ops (ai3.layers.backward_ops), in the forms of
    the forward selector (a name, a list, a callable, an ai3.Plan, "default",
    "auto"): one name applies to each gradient op that offers it ("default"
    to the others), or a mapping {"backward_data": ..., "backward_weight":
    ..., "backward_bias": ...} gives each gradient its own selector (see
    ai3.selection.split_backward). That mapping may carry "forward" too and
    be given as `algos`. "auto" times the gradient ops on the layer's input
    shape, as it times the forward.

    `swap_with`: the class the replacements are made of. A subclass of
    ai3.torch.Layer is built with ``swap_with.from_module(original,
    algorithm, name, backward)``; any other class with
    ``swap_with(original, algorithm)``: the original torch layer and the
    algorithm chosen for it, returning an nn.Module (as the seed ai3 did).
    `recorder`: an ai3.tuning.Recording keeping what was selected and
    timed (ai3.plan's)."""
    if op not in mapping.swappable_ops():
        raise errors.UnsupportedOperation(f"swap_operation: unknown op {op!r}; ai3 swaps {mapping.swappable_ops()}")
    if not isinstance(module, nn.Module):
        raise errors.InvalidArgument(f"swap_{op} takes an nn.Module, got {type(module).__name__}")
    if swap_with is not None and not callable(swap_with):
        raise errors.InvalidArgument(
            f"swap_{op}: swap_with must be a class (or callable) making an nn.Module, got {swap_with!r}"
        )
    selectors = selection.split_backward(op, algos, backward)
    classes = mapping.classes_of(op)
    # Exact type: a subclass may override forward, which ai3 would not honour.
    targets = [(name, m) for name, m in module.named_modules() if type(m) in classes]
    sample_input_shape = selection.sample_shape(sample_input_shape, batched=False)
    shapes = (
        _input_shapes(module, [m for _, m in targets], sample_input_shape) if sample_input_shape is not None else {}
    )
    dtype = tracing.float_dtype(module)
    named = [(name or type(m).__name__, m) for name, m in targets]
    candidates = [_candidate(name, m, shapes.get(id(m)), dtype) for name, m in named]
    chosen = selection.select(op, selectors.forward, candidates, allow_keep=True, recorder=recorder)
    gradient_ops = layers.backward_ops(op)
    gradients = [
        None
        if algorithm in selection.KEEP_NAMES
        else _gradient_candidates(name, m, shapes.get(id(m)), dtype, gradient_ops)
        for (name, m), algorithm in zip(named, chosen)
    ]
    backwards = selection.select_backward(op, selectors, candidates, gradients, gradient_ops, recorder=recorder)
    for (name, m), (full_name, _), algorithm, grads in zip(targets, named, chosen, backwards):
        if algorithm in selection.KEEP_NAMES:
            continue
        new = _replacement(swap_with, m, algorithm, full_name, grads, op)
        if not name:  # the module itself is the layer
            return new
        parent_name, _, child = name.rpartition(".")
        setattr(module.get_submodule(parent_name), child, new)
    return module


def _replacement(swap_with: type | None, m: nn.Module, algorithm: str, name: str, backward: dict, op: str) -> nn.Module:
    if swap_with is None:
        return Layer.from_module(m, algorithm, name, backward)
    if isinstance(swap_with, type) and issubclass(swap_with, Layer):
        return swap_with.from_module(m, algorithm, name, backward)
    try:
        new = swap_with(m, algorithm)
    except errors.Error:
        raise
    except Exception as e:
        raise errors.InvalidArgument(
            f"{op} layer '{name}': swap_with {swap_with!r} raised {type(e).__name__}: {e}"
        ) from e
    if not isinstance(new, nn.Module):
        raise errors.InvalidArgument(
            f"{op} layer '{name}': swap_with {swap_with!r} made a {type(new).__name__}, not an nn.Module"
        )
    return new


def _candidate(name: str, m: nn.Module, shape: tuple | None, dtype: torch.dtype) -> selection.Candidate:
    """A layer to swap; "auto" times the ai3 module that would replace it,
    and PyTorch's own layer ("torch", kept where it is fastest)."""

    def make_layer(algorithm: str) -> Any:
        new = m if algorithm == "torch" else Layer.from_module(m, algorithm, name)

        def run(x: np.ndarray) -> torch.Tensor:
            with torch.no_grad():
                return new(torch.from_numpy(x))

        run.algorithm = algorithm if new is m else new.resolved_algorithm()
        return run

    return selection.Candidate(
        name, m, shape, make_layer, _params(m), _dtype_name(m, dtype), "NCHW", "torch", ("torch",)
    )


def _params(m: nn.Module) -> dict[str, Any]:
    """What keys a torch layer in the tuning cache."""
    weights = {k: tuple(p.shape) for k, p in m.named_parameters(recurse=False)}
    return {"module": type(m).__name__, "config": m.extra_repr(), "weights": weights}


def _dtype_name(m: nn.Module, dtype: torch.dtype) -> str:
    return str(next((p.dtype for p in m.parameters(recurse=False)), dtype)).replace("torch.", "")


def _gradient_candidates(
    name: str, m: nn.Module, shape: tuple | None, dtype: torch.dtype, gradient_ops: Mapping[str, str]
) -> dict[str, selection.Candidate]:
    dtype = next((p.dtype for p in m.parameters(recurse=False)), dtype)
    """{target: Candidate} for each gradient op of the ai3 layer replacing
    `m` (its input's, each present weight's). "auto" times a gradient op
    on its real inputs: x random of the layer's input shape (seeded), y =
    the torch layer's output for it, a random grad_output."""
    _, weights_of = mapping.lookup(m).read(m, name)
    present = {"data", *(n for n, w in weights_of.items() if w is not None)}
    probe: list[Layer] = []  # the ai3 layer, built once if "auto" times a gradient

    def inputs() -> list[torch.Tensor]:
        generator = torch.Generator().manual_seed(0)
        x = torch.randn(shape, generator=generator, dtype=dtype)
        with torch.no_grad():
            y = m(x)
        return [torch.randn(y.shape, generator=generator, dtype=y.dtype), x, y]

    def candidate(grad_op: str) -> selection.Candidate:
        def make_layer(algorithm: str) -> Any:
            if not probe:
                probe.append(Layer.from_module(m, "default", name))
            weights, names = probe[0].weights()
            attrs = probe[0].attrs_json(shape)
            resolved = ops.prepare(grad_op, attrs, weights, names, algorithm, name)  # refuses what cannot take it
            args = inputs()

            def run(_: np.ndarray) -> torch.Tensor:
                return torch.ops.ai3.layer(args, weights, names, grad_op, attrs, algorithm, name)

            run.algorithm = resolved
            return run

        return selection.Candidate(name, m, shape, make_layer, _params(m), _dtype_name(m, dtype), "NCHW", "torch")

    return {t: candidate(g) for t, g in gradient_ops.items() if t in present}


def _swap_of(op: str, what: str) -> Any:
    """swap_<op>: swap_operation(op, ...) under its own name and signature."""

    def swap(module: nn.Module, *args: Any, **kwargs: Any) -> nn.Module:
        return swap_operation(op, module, *args, **kwargs)

    signature = inspect.signature(swap_operation)
    swap.__signature__ = signature.replace(parameters=list(signature.parameters.values())[1:])  # type: ignore[attr-defined]
    swap.__name__ = swap.__qualname__ = f"swap_{op}"
    swap.__doc__ = (
        f"swap_operation({op!r}, ...): every {what}, in place (see swap_operation for algos, backward and swap_with)."
    )
    return swap


swap_conv2d = _swap_of("conv2d", "nn.Conv2d")
swap_linear = _swap_of("linear", "nn.Linear")
swap_relu = _swap_of("relu", "nn.ReLU")
swap_maxpool2d = _swap_of("maxpool2d", "nn.MaxPool2d")
swap_avgpool2d = _swap_of("avgpool2d", "nn.AvgPool2d")
swap_adaptiveavgpool2d = _swap_of("adaptiveavgpool2d", "nn.AdaptiveAvgPool2d")
swap_flatten = _swap_of("flatten", "nn.Flatten")


def swap_attention(
    module: nn.Module, algos: Selector | None = None, sample_input_shape: Sequence[int] | None = None
) -> nn.Module:
    """Every nn.MultiheadAttention, in place, on the core's attention
    algorithms (ai3.torch.attention)."""
    from ai3.torch import attention

    return attention.swap_attention(module, algos, sample_input_shape)


def record_backward(module: nn.Module, backward: Any, sample_input_shape: Sequence[int], *, recorder: Any) -> None:
    """For ai3.plan(..., backward=...): the selection (and "auto" timing)
    the in-place swaps make for the gradient ops of `module`'s layers, into
    `recorder`; `module` itself is left alone (a copy is swapped)."""
    target = copy.deepcopy(module)
    present = {e.op for e in map(mapping.lookup, target.modules()) if e is not None}
    for op in mapping.swappable_ops():
        if op in present and layers.backward_ops(op):
            target = swap_operation(op, target, "default", sample_input_shape, backward=backward, recorder=recorder)


def applicable(layer: nn.Module, algorithm: str) -> bool:
    """Whether `algorithm` can take this PyTorch layer (winograd cannot take
    a stride-2 convolution, for instance), for selectors that want to pick
    an algorithm only where it applies."""
    if mapping.lookup(layer, exact=True) is None:
        raise errors.UnsupportedOperation(f"ai3 has no in-place swap for {type(layer).__name__}")
    try:
        Layer.from_module(layer, algorithm, type(layer).__name__)
    except errors.AlgorithmNotApplicable:
        return False
    return True


def chosen_algorithms(module: nn.Module) -> list[tuple[str, str, str]]:
    """(module path, op, algorithm actually running) of every ai3 module in
    `module`, for printing what a swap chose."""
    found = []
    for name, m in module.named_modules():
        if isinstance(m, Layer):
            found.append((name, m.op, m.resolved_algorithm()))
    return found


__all__ = [
    "Layer",
    "applicable",
    "chosen_algorithms",
    "swap_adaptiveavgpool2d",
    "swap_attention",
    "swap_avgpool2d",
    "swap_backend",
    "swap_conv2d",
    "swap_flatten",
    "swap_linear",
    "swap_maxpool2d",
    "swap_operation",
    "swap_relu",
]
