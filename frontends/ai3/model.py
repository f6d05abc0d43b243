"""ai3.Model: a whole network in the core, built from LayerSpecs.

The network is a DAG run entirely in C++: one call from Python per forward
pass, no Python between layers. Every frontend's swap_backend ends here.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import pickle
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ai3 import _arrays, _core, cuda, errors, fusion, layers, layouts, profile, selection, tuning
from ai3.spec import MODEL_INPUT, OUTPUTS, Fallback, IndexMap, LayerSpec, consumers, is_note


def spec_attrs(spec: LayerSpec, layout: str) -> dict[str, Any]:
    """The core attributes of a spec's layer: its attrs under the core's
    names (core/ops/README.md), less the passes' notes (spec.is_note), with what
    the model decides rather than the spec: the layout, and for the
    attention ops which inputs the spec wires up."""
    attrs = {k: v for k, v in spec.attrs.items() if not is_note(k)}
    declared = {a["name"] for a in layers.schema(spec.op)["attrs"]}
    if "layout" in declared:
        attrs["layout"] = layout
    if spec.op == "attention":  # q, k, v[, mask]
        attrs["has_mask"] = len(spec.inputs) == 4
    elif spec.op == "multihead_attention":  # x[, mask] or q, k, v[, mask]
        attrs["self_attention"] = len(spec.inputs) in (1, 2)
        attrs["has_mask"] = len(spec.inputs) in (2, 4)
    return attrs


def _weight_array(w: Any, dtype: np.dtype) -> np.ndarray:
    """A weight as the core takes it: float ones in the model's dtype;
    int64 and bool ones (a comparison's constant, an integer table) keep
    theirs, other integer widths become int64."""
    a = np.asarray(w)
    if a.dtype == np.bool_:
        return np.ascontiguousarray(a)
    if np.issubdtype(a.dtype, np.integer):
        return np.ascontiguousarray(a, dtype=np.int64)
    return np.ascontiguousarray(a, dtype=dtype)


def make_layer(
    spec: LayerSpec, algorithm: str, dtype: np.dtype, layout: str, *, check_only: bool = False
) -> layers.Layer | None:
    """The core layer of any spec, from its op's declaration in the core;
    float weights in the model's dtype, integer and bool ones as they are.
    check_only: raise what building it would raise, and return None,
    without copying a weight or preparing a kernel (_core.check_algorithm)."""
    if check_only:
        shapes = {k: None if w is None else tuple(np.shape(w)) for k, w in spec.weights.items()}
        _core.check_algorithm(spec.op, algorithm, spec_attrs(spec, layout), shapes, np.dtype(dtype).name, spec.name)
        return None
    # A float island's constants keep the island's dtype (ai3.torch.fx).
    float_dtype = np.dtype(spec.attrs.get("weights_dtype", dtype))
    weights = {k: None if w is None else _weight_array(w, float_dtype) for k, w in spec.weights.items()}
    return layers.Layer(spec.op, spec_attrs(spec, layout), weights, algorithm=algorithm, name=spec.name)


# Every op the core declares: make_layer builds a layer of any of them.
CORE_OPS: frozenset[str] = frozenset(s["op"] for s in _core.op_schemas())
GRAPH_OPS = ("add", "concat")  # run by the core's Model itself


def _selected_layers(specs: Sequence[LayerSpec], op: str) -> list[int]:
    """The specs of `op` the selection layer picks algorithms for, in the
    order it asks (a selector given as a list names one per entry)."""
    return [i for i, s in enumerate(specs) if s.op == op and not _is_graph_node(s)]


def _is_graph_node(spec: LayerSpec) -> bool:
    """concat, and an add of 3+ inputs (same shapes), are nodes of the core
    Model itself; a 2-input or constant add is a broadcasting add layer.
    The OUTPUTS spec (ai3.spec) is the list of a model's outputs."""
    return spec.op in ("concat", OUTPUTS) or (spec.op == "add" and len(spec.inputs) > 2 and "other" not in spec.weights)


class Model:
    """A network run entirely by ai3's core. Call it on a torch tensor
    (returns a torch tensor) or a NumPy array (returns NumPy).

    A model of several inputs takes them in order or by name
    (`model(ids, mask)`, `model(input_ids=ids, attention_mask=mask)`; the
    names are `input_names`), each of its dtype in `input_dtypes` (the
    model's float dtype unless the frontend declared int64 token ids or bool
    masks). A model of several
    outputs returns a tuple of them, or a dict when the framework's model
    returned one (`output_names`).

    Inference only: a gradient asked through it raises
    ai3.UnsupportedOperation (the in-place swaps are the differentiable
    route). It can be deep-copied, pickled and saved with torch.save: it
    rebuilds itself from its layers' specs, the weights its core layers
    hold and the algorithms they run, so nothing is selected or timed
    again."""

    def __init__(self, core_model: Any, dtype: np.dtype, layout: str, input_shape: tuple[int, ...] | None = None):
        self._core = core_model
        self.dtype = np.dtype(dtype)
        self.layout = layout
        self.sample_input_shape = input_shape
        # Set by a frontend whose framework takes one unbatched image (C, H, W)
        # where the model was built for a batch of one (ai3.torch.swap_backend).
        self.unbatched = False
        self._recipe: _Recipe | None = None
        # Several inputs / outputs (set by the frontend that traced them).
        self.input_names: list[str] = ["input"]
        self.input_dtypes: list[np.dtype] = [self.dtype]
        self.output_names: list[str] | None = None  # a dict's keys, else None
        self.output_type: type | None = None  # the dict's class when not dict (_named)
        self.output_count = 1
        # Set by a frontend that folded the sample input shapes into the
        # model's constants (see PerShape); None: the model takes any shape
        # its layers take.
        self.per_shape: PerShape | None = None
        # Inputs and outputs that an ONNX graph declares in a narrower type
        # than the core keeps (int32 or uint8 ids, float16 tensors), by
        # index: arrays of that type are widened exactly on the way in (to
        # int64, or to the model's float dtype), and those outputs come back
        # in their declared type, as ONNX Runtime's CPU provider computes
        # float16 in float32 where it has no float16 kernel.
        self.narrow_inputs: dict[int, np.dtype] = {}
        self.narrow_outputs: dict[int, np.dtype] = {}

    def _inputs(self, args: tuple, kwargs: dict[str, Any]) -> list[Any]:
        """The call's inputs in the model's order, from positional and
        keyword arguments; errors name the input."""
        names = self.input_names
        if len(args) > len(names):
            raise errors.InvalidArgument(
                f"the model takes {len(names)} input{'s' if len(names) != 1 else ''} ({', '.join(names)}), got {len(args)}"
            )
        given: dict[str, Any] = dict(zip(names, args))
        for name, value in kwargs.items():
            if name not in names:
                raise errors.InvalidArgument(
                    f"the model has no input named '{name}'; its inputs are {', '.join(names)}"
                )
            if name in given:
                raise errors.InvalidArgument(f"model input '{name}' was given twice (by position and by name)")
            given[name] = value
        missing = [n for n in names if n not in given]
        if missing:
            raise errors.InvalidArgument(
                f"model input{'s' if len(missing) > 1 else ''} {', '.join(repr(m) for m in missing)} not given"
            )
        return [given[n] for n in names]

    def _call_several(self, args: tuple, kwargs: dict[str, Any]) -> Any:
        xs = self._inputs(args, kwargs)
        arrays, kinds = [], []
        for name, want, x in zip(self.input_names, self._input_dtypes(), xs):
            if cuda.is_cuda_tensor(x):
                raise errors.UnsupportedOperation(
                    f"model input '{name}' is on {x.device}; models of several inputs or outputs run on the CPU"
                )
            array, kind = _arrays.to_array(x, f"model input '{name}'")
            array = self._widened(len(arrays), array)
            if array.dtype != want:
                raise errors.DTypeError(f"model input '{name}' is {array.dtype}, the model takes {want} there")
            arrays.append(array)
            kinds.append(kind)
        outputs = [
            _inference_only(xs[0], _arrays.from_array(self._narrowed(i, y), kinds[0]))
            for i, y in enumerate(self._core.run(arrays))
        ]
        if self.output_names is not None:
            return self._named(outputs)
        return outputs[0] if self.output_count == 1 and len(outputs) == 1 else tuple(outputs)

    def _widened(self, index: int, array: np.ndarray) -> np.ndarray:
        """Input `index` in the type the core keeps it in, where the graph
        declares it narrower and the array is of that declared type."""
        narrow = self.__dict__.get("narrow_inputs") or {}  # (pickles from before it have none)
        if index in narrow and array.dtype == narrow[index]:
            return array.astype(self._input_dtypes()[index])
        return array

    def _narrowed(self, index: int, y: np.ndarray) -> np.ndarray:
        """Output `index` in its declared type (integers wrap, as the
        narrower type's arithmetic would have)."""
        narrow = self.__dict__.get("narrow_outputs") or {}
        return y.astype(narrow[index]) if index in narrow else y

    def _input_dtypes(self) -> list[np.dtype]:
        # Pickles of models from before input_dtypes have one float dtype.
        dtypes = self.__dict__.get("input_dtypes") or [self.dtype]
        return dtypes + [self.dtype] * (len(self.input_names) - len(dtypes))

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        per_shape = self.__dict__.get("per_shape")  # (pickles from before it have none)
        if per_shape is not None:
            several = len(self.input_names) > 1 or kwargs or len(args) != 1
            xs = self._inputs(args, kwargs) if several else args
            other = per_shape.model_for([tuple(np.shape(x)) for x in xs])
            if other is not None:
                return other(*args, **kwargs)
        if self._input_dtypes()[0] != self.dtype:  # int64 ids: checked per input
            return self._call_several(args, kwargs)
        if len(self.input_names) > 1 or self.output_count > 1 or kwargs or len(args) != 1:
            return self._call_several(args, kwargs)
        y = self._call_one(args[0])
        # A forward that returned a dict of one tensor gets its dict back
        # (torchvision's segmentation models: {"out": ...}).
        return self._named([y]) if self.output_names else y

    def _named(self, outputs: list[Any]) -> Any:
        """The outputs by name: in a dict, or in the dict subclass the
        traced forward returned (a Hugging Face ModelOutput, which also
        reads them as attributes)."""
        named = dict(zip(self.output_names, outputs))
        output_type = self.__dict__.get("output_type")  # (pickles from before it have none)
        return output_type(**named) if output_type is not None else named

    def _call_one(self, x: Any) -> Any:
        if (
            self.unbatched
            and self.sample_input_shape is not None
            and getattr(x, "ndim", None) == len(self.sample_input_shape) - 1
        ):
            return self._call_one(x[None])[0]
        if cuda.is_cuda_tensor(x):  # stays on its GPU (ai3.cuda)
            import torch

            order = self.__dict__.setdefault("_cuda_order", cuda.StreamOrder())
            with torch.cuda.device(x.device):
                return _inference_only(x, cuda.call_model(self._core, x, order))
        array, kind = _arrays.to_array(x, "model input")
        y = self._narrowed(0, self._core(self._widened(0, array)))
        return _inference_only(x, _arrays.from_array(y, kind))

    forward = __call__

    def __getstate__(self) -> dict[str, Any]:
        if self._recipe is None:
            raise errors.UnsupportedOperation(
                "this ai3.Model was not built by ai3.model.build, so it cannot rebuild itself"
            )
        state = {k: v for k, v in self.__dict__.items() if k not in ("_core", "_cuda_order")}
        state["_recipe"] = self._recipe.with_weights()
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._core, self._recipe = self._recipe.assemble()
        decision = getattr(self, "layout_decision", None)
        if decision is not None and not decision.fusion:  # "auto" measured it off
            self._core.set_fusion(False)

    def layers(self) -> list[tuple[str, str, str]]:
        """(name, op, algorithm) of every layer, in execution order."""
        return [tuple(entry) for entry in self._core.layers()]

    def fallbacks(self) -> list[Fallback]:
        """The nodes the framework runs instead of ai3: none, for a model
        ai3 runs whole (swap_backend(..., fallback=True) returns a model
        split between the two where some fell back)."""
        return []

    def algorithms(self, op: str | None = None) -> list[str]:
        return [algo for _, o, algo in self.layers() if op is None or o == op]

    def profile(self, x: Any, repeats: int = 10, warmup: int = 2) -> profile.Profile:
        """Each node's mean time inside whole forward passes on `x`, and the
        call's (ai3/profile.py); print it for a table."""
        return profile.profile(self, x, repeats, warmup)

    def output_shape(self, input_shape: Sequence[int]) -> tuple[int, ...]:
        return tuple(self._core.output_shape(list(input_shape), self.dtype.name))

    def output_shapes(self, *input_shapes: Sequence[int]) -> list[tuple[int, ...]]:
        """Every output's shape for inputs of these shapes (one per input)."""
        dtypes = [d.name for d in self._input_dtypes()][: len(input_shapes)]
        return [tuple(s) for s in self._core.output_shapes([list(x) for x in input_shapes], dtypes)]

    def __len__(self) -> int:
        return len(self._core)

    def __repr__(self) -> str:
        rows = "\n".join(f"  {name}: {op} [{algo}]" for name, op, algo in self.layers())
        return f"ai3.Model({self.dtype.name}, {self.layout}, {len(self)} nodes)\n{rows}"


@functools.cache
def _inference_only_function() -> Any:
    import torch

    class InferenceOnly(torch.autograd.Function):
        """The identity on a Model's output, whose backward says why there
        is no gradient (instead of torch's "does not require grad")."""

        @staticmethod
        def forward(ctx: Any, x: Any, y: Any) -> Any:
            return y

        @staticmethod
        def backward(ctx: Any, grad: Any) -> Any:
            raise errors.UnsupportedOperation(
                "ai3.Model (swap_backend) is inference-only and has no backward pass; to train through ai3, "
                "swap layers in place (ai3.swap_conv2d, ai3.swap_linear, ai3.swap_operation), which are differentiable"
            )

    return InferenceOnly


def _inference_only(x: Any, y: Any) -> Any:
    """y, marked so that a gradient through it raises, when x is a torch
    tensor that requires grad and autograd is recording."""
    if getattr(x, "requires_grad", False) and _arrays.framework(x) == _arrays.TORCH:
        import torch

        if torch.is_grad_enabled():
            return _inference_only_function().apply(x, y)
    return y


@dataclasses.dataclass
class PerShape:
    """Where a frontend folded the sample input shapes into constants (an
    ONNX export's Shape -> Gather -> Concat -> Reshape arithmetic, a Range
    of positions), the model is right for those shapes only, though the
    graph takes others: a call at other shapes runs in a model built again
    for them by `rebuild` (same algorithm selectors; "auto" times the new
    shapes' layers), never in this one. The KEPT most recently used of
    those are kept, since each holds its own copy of the weights."""

    # What the model itself was built for; a None dim takes any size (the
    # batch, where the frontend's layers do not depend on it).
    shapes: list[tuple[int | None, ...]]
    # None in a copy whose rebuild did not pickle (a lambda selector)
    rebuild: Callable[[list[tuple[int, ...]]], Model] | None
    models: collections.OrderedDict = dataclasses.field(default_factory=collections.OrderedDict)

    KEPT = 4

    def builds(self, shapes: list[tuple[int, ...]]) -> bool:
        """Whether the model itself was built for inputs of these shapes."""
        return len(shapes) == len(self.shapes) and all(
            len(given) == len(built) and all(b is None or b == g for b, g in zip(built, given))
            for given, built in zip(shapes, self.shapes)
        )

    def model_for(self, shapes: list[tuple[int, ...]]) -> Model | None:
        """The model for inputs of these shapes; None for the built ones."""
        if self.builds(shapes):
            return None
        key = tuple(shapes)
        if key in self.models:
            self.models.move_to_end(key)
            return self.models[key]
        if self.rebuild is None:
            raise errors.UnsupportedOperation(
                f"this model was built for inputs of shapes {self.shapes}, not {shapes}, and this copy of it "
                "cannot build another (its selector did not pickle): build it again with swap_backend"
            )
        model = self.rebuild(shapes)
        model.per_shape = None  # only ever called at these shapes
        self.models[key] = model
        while len(self.models) > self.KEPT:
            self.models.popitem(last=False)
        return model

    def __getstate__(self) -> dict[str, Any]:
        try:
            rebuild = self.rebuild if pickle.dumps(self.rebuild) else None
        except (pickle.PicklingError, AttributeError, TypeError):
            rebuild = None
        return {**self.__dict__, "rebuild": rebuild, "models": collections.OrderedDict()}  # rebuilt on use


@dataclasses.dataclass
class _Recipe:
    """What rebuilds a Model's core DAG: the specs as the passes left them,
    each layer's algorithm, the output, dtype, layout and device. The
    weights are not kept here while the model lives (that would double its
    memory, and the framework's tensors they came from may change): the
    core layers hold the copies they were built from, and with_weights
    reads them back when the model is pickled."""

    specs: list[LayerSpec]
    output: int
    chosen: dict[int, str]
    dtype: np.dtype
    layout: str
    device: Any
    core_layers: dict[int, Any] = dataclasses.field(default_factory=dict)  # spec index -> its core layer
    input_count: int = 1

    def with_weights(self) -> _Recipe:
        specs = []
        for i, spec in enumerate(self.specs):
            weights = dict(spec.weights)
            if i in self.core_layers:
                present = [
                    w["name"] for w in layers.schema(spec.op)["weights"] if spec.weights.get(w["name"]) is not None
                ]
                weights.update(zip(present, self.core_layers[i].weights))
            specs.append(dataclasses.replace(spec, weights=weights))
        device = self.device if isinstance(self.device, str) else str(self.device)
        return dataclasses.replace(self, specs=specs, device=device, core_layers={})

    def assemble(self) -> tuple[Any, _Recipe]:
        """The core DAG, and the recipe to keep beside it (no weights, no
        framework layer objects: only their presence is recorded)."""
        core = _core.Model()
        core.set_input_count(self.input_count)
        node_of: dict[int, int] = IndexMap()  # model input k is -1 - k in both
        core_layers: dict[int, Any] = {}
        for i, spec in enumerate(self.specs):
            inputs = [node_of[j] for j in spec.inputs]
            if spec.op == OUTPUTS:
                if i != self.output:
                    raise errors.InvalidArgument("ai3 models list their outputs once, last")
                if any(j < 0 for j in inputs):
                    k = next(n for n, j in enumerate(inputs) if j < 0)
                    raise errors.UnsupportedOperation(
                        f"the model returns its input unchanged as output {k}; there is nothing to run"
                    )
                core.set_outputs(inputs)
            elif spec.op == "add" and _is_graph_node(spec):
                node_of[i] = core.add_add(inputs, spec.name)
            elif spec.op == "concat":
                node_of[i] = core.add_concat(inputs, spec.attrs["axis"], spec.name)
            elif spec.op in CORE_OPS:
                with cuda.layer_device(self.device):
                    layer = make_layer(spec, self.chosen[i], self.dtype, spec.attrs.get("layout", self.layout))
                core_layers[i] = layer._core_layer
                node_of[i] = core.add_layer(layer._core_layer, inputs)  # all of spec.inputs, in order
            else:
                raise errors.UnsupportedOperation(f"layer '{spec.name}': ai3's core has no op '{spec.op}'")
        if self.output < 0:
            raise errors.UnsupportedOperation("the model returns its input unchanged; there is nothing to run")
        if self.specs[self.output].op != OUTPUTS:
            core.set_output(node_of[self.output])
        specs = [
            dataclasses.replace(
                s, layer=None, weights={k: None if w is None else _PRESENT for k, w in s.weights.items()}
            )
            for s in self.specs
        ]
        return core, dataclasses.replace(self, specs=specs, core_layers=core_layers)


# A kept spec's stand-in for a weight its core layer holds (see _Recipe).
_PRESENT = "present"


def _projection_specs(spec: LayerSpec) -> list[LayerSpec]:
    """A multihead_attention spec's in- and out-projections as the linear
    specs they are (q, k and v's at once for self-attention; q's, whose
    shape k's and v's share, otherwise), for linear's selector; [] without
    a recorded input shape."""
    if spec.input_shape is None:
        return []
    w_in, w_out = spec.weights["in_proj_weight"], spec.weights["out_proj_weight"]
    b_in, b_out = spec.weights.get("in_proj_bias"), spec.weights.get("out_proj_bias")
    d = int(np.shape(w_out)[0])
    if not spec.attrs.get("self_attention", True):
        w_in, b_in = w_in[:d], None if b_in is None else b_in[:d]
    rows = (*tuple(spec.input_shape)[:-1], d)

    def linear(part: str, w: Any, b: Any) -> LayerSpec:
        weights = {"weight": w} if b is None else {"weight": w, "bias": b}
        return LayerSpec(f"{spec.name}.{part}", "linear", [MODEL_INPUT], {}, weights, input_shape=rows)

    return [linear("in_proj", w_in, b_in), linear("out_proj", w_out, b_out)]


def _choose_projections(
    specs: Sequence[LayerSpec], selector: Any, dtype: Any, layout: str, device_type: str, recorder: Any
) -> None:
    """The linear algorithms of each multihead_attention's projections (its
    in_projection / out_projection attributes): what linear's selector
    picks for linear layers of the projections' shapes, so that "auto"
    times them as it times the model's other linears (and shares their
    cache entries). In ViT the projections are a third of the products.
    A selector that names layers one by one (a list, a callable) does not
    name these, and a plan made before them does not list them: they keep
    linear's "default", as with no selector."""
    if device_type != "cpu" or selector is None:
        return
    for s in specs:
        if s.op != "multihead_attention" or "in_projection" in s.attrs:
            continue
        pieces = _projection_specs(s)
        if not pieces:
            continue
        if hasattr(selector, "select_for"):  # an ai3.Plan
            planned = {name for name, _, _ in selector.choices("linear")}
            if not all(p.name in planned for p in pieces):
                continue
        elif not isinstance(selector, str):
            continue
        candidates = [selection.spec_candidate(p, make_layer, dtype, layout) for p in pieces]
        names = selection.select(
            "linear", selector, candidates, allow_keep=False, device=device_type, recorder=recorder
        )
        s.attrs["in_projection"], s.attrs["out_projection"] = names


def _input_shapes(
    specs: list[LayerSpec], sample_input_shape: Sequence[Any] | None, dtype: np.dtype, layout: str
) -> dict[int, list[tuple[int, ...]]]:
    """Every input shape of each spec whose inputs' shapes follow from the
    model's (one) input shape through the core's shape rules: what "auto"
    times a layer of several inputs on (attention's q, k, v). A spec whose
    shape cannot be worked out here (an integer input, an op the rules
    refuse) is left out, and so is everything after it."""
    if sample_input_shape is None or None in tuple(sample_input_shape):
        return {}
    out: dict[int, tuple[int, ...]] = {MODEL_INPUT: tuple(int(d) for d in sample_input_shape)}
    found: dict[int, list[tuple[int, ...]]] = {}
    for i, s in enumerate(specs):
        if s.op == OUTPUTS or any(j not in out for j in s.inputs):
            continue
        shapes = [out[j] for j in s.inputs]
        try:
            if s.op == "concat":
                axis = s.attrs["axis"] % len(shapes[0])
                shape = list(shapes[0])
                shape[axis] = sum(x[axis] for x in shapes)
                out[i] = tuple(shape)
            elif _is_graph_node(s):  # an add of 3+ inputs of one shape
                out[i] = shapes[0]
            else:
                weights = {k: None if w is None else tuple(np.shape(w)) for k, w in s.weights.items()}
                out[i] = layers.output_shape(s.op, spec_attrs(s, layout), weights, shapes, np.dtype(dtype).name, s.name)
        except (errors.Error, KeyError, ZeroDivisionError):
            continue
        found[i] = shapes
    return found


def build(
    specs: list[LayerSpec],
    output: int,
    algos: Any,
    *,
    dtype: np.dtype,
    layout: str,
    sample_input_shape: tuple[int, ...] | None = None,
    device: Any = "cpu",
    layout_plan: str | None = None,
    recorder: Any = None,
    input_count: int = 1,
    input_dtypes: Sequence[Any] | None = None,
) -> Model:
    """Resolves one algorithm per spec with the selection layer and builds
    the core DAG. `algos` is swap_backend's argument (see
    selection.per_op_selectors). The layers run on `device` ("cpu", or a
    CUDA torch.device / "cuda:N" in a --config=cuda build), and names are
    checked against that device's algorithms. `input_dtypes` gives each
    input's dtype where some are not `dtype` (int64 token ids, bool masks)."""
    device_type = getattr(device, "type", None) or str(device).split(":")[0]
    if layout_plan is None:
        layout_plan = getattr(algos, "layout_plan", None)  # an ai3.Plan replays its layout choice
    input_dtypes = [np.dtype(d) for d in input_dtypes] if input_dtypes else [np.dtype(dtype)] * input_count
    several = input_count > 1 or (output >= 0 and specs[output].op == OUTPUTS) or input_dtypes[0] != np.dtype(dtype)
    if several:
        # The layout pass and its whole-model timing follow one input
        # through the net (ai3.layouts); a model of several inputs or
        # outputs keeps the frontend's layout.
        layout_plan = layouts.KEEP
    if layout_plan is None and _whole_model_auto(algos, sample_input_shape, device_type):
        return _fastest_layout(specs, output, algos, dtype, layout, sample_input_shape, device, recorder)
    selectors = selection.per_op_selectors(algos, _core_ops())
    chosen: dict[int, str] = {}
    # The input shapes of layers of several inputs where there is a choice
    # to time: their op's selector measures and the op has several
    # algorithms (attention's). The others (add, where, gather: one
    # algorithm each) keep it untimed, so no random stand-in for an integer
    # or bool input is ever fed to one. On the CPU: the stand-ins are NumPy.
    several_inputs = [
        i
        for i, s in enumerate(specs)
        if len(s.inputs) > 1 and not _is_graph_node(s) and selection.wants_shapes(selectors.get(s.op), True)
    ]
    with_choice = {
        op for op in {specs[i].op for i in several_inputs} if len(tuning.known_algorithms(op, device_type)) > 1
    }
    several_inputs = [i for i in several_inputs if specs[i].op in with_choice]
    shapes = {}
    if device_type == "cpu" and several_inputs:
        found = _input_shapes(specs, sample_input_shape if input_count == 1 else None, dtype, layout)
        shapes = {i: found[i] for i in several_inputs if i in found}
    for op in sorted({s.op for s in specs if not _is_graph_node(s)}):
        indices = _selected_layers(specs, op)
        candidates = [
            selection.spec_candidate(
                specs[i], make_layer if op in CORE_OPS else None, dtype, layout, input_shapes=shapes.get(i)
            )
            for i in indices
        ]
        names = selection.select(
            op, selectors.get(op), candidates, allow_keep=False, device=device_type, recorder=recorder
        )
        chosen.update(zip(indices, names))
    _choose_projections(specs, selectors.get("linear"), dtype, layout, device_type, recorder)
    # Activations fold into the conv/linear before them once the algorithms
    # are known (nothing is fused into a "custom" one).
    specs, output, chosen = fusion.fuse_activations(specs, output, chosen, device=device_type)
    placed = specs  # the layout pass marks these (decision reads the marks)
    specs, output, chosen = layouts.choose(
        specs,
        output,
        chosen,
        layout=layout,
        dtype=dtype,
        plan=layout_plan,
        algos=algos,
        sample_input_shape=sample_input_shape,
        make_layer=make_layer,
        device=device_type,
        recorder=recorder,
    )  # noqa: E501

    core, recipe = _Recipe(specs, output, chosen, np.dtype(dtype), layout, device, input_count=input_count).assemble()
    model = Model(core, dtype, layout, sample_input_shape)
    model.input_dtypes = input_dtypes
    if several:
        model.input_names = [f"input{k}" for k in range(input_count)]  # the frontend names them
        model.output_count = len(specs[output].inputs) if specs[output].op == OUTPUTS else 1
    model._recipe = recipe
    # What the layout pass did (layouts.fastest adds each plan's time), for
    # people and for ai3.plan, which records it.
    model.layout_decision = layouts.decision(placed, model, layout_plan or layouts.DEFAULT, layout)
    fusion_choice = getattr(algos, "fusion", None)  # an ai3.Plan replays its graph fusion choice
    if fusion_choice is not None:
        layouts.set_fusion(model, fusion_choice)
    return model


def _core_ops() -> list[str]:
    """Every op the core has an algorithm for."""
    return sorted({op for op, _, _ in _core.algorithms()})


def _whole_model_auto(algos: Any, sample_input_shape: Sequence[Any] | None, device_type: str) -> bool:
    """Whether the layout plan is chosen by timing whole forward passes:
    conv2d's selector is "auto" (its algorithms are timed anyway) or
    "predict" (which times no layer, but no per-layer answer sees the
    conversions a plan adds or saves: on this 2-core EPYC, predict's picks
    under the "default" plan ran mobilenet_v3_large in 5.3 ms and mnasnet1_0
    in 9.8, against auto's 3.1 and 5.5 with its whole-model choice), the
    model runs on the CPU (the only device with a second layout) and the
    sample shape is concrete, so whole forward passes can be timed."""
    if device_type != "cpu" or sample_input_shape is None or None in tuple(sample_input_shape):
        return False
    return selection.conv2d_selector(algos) in (selection.AUTO, selection.PREDICT)


def _fastest_layout(
    specs: list[LayerSpec],
    output: int,
    algos: Any,
    dtype: Any,
    layout: str,
    sample_input_shape: Sequence[int],
    device: Any,
    recorder: Any,
) -> Model:
    """ "auto" that sees the whole model: per-layer timing misses the
    conversions a layout plan adds or saves, so the model is built under
    each plan and whole forward passes are timed (layouts.fastest). The
    caller's recorder (ai3.plan's) gets what the kept model's build saw;
    each candidate records into its own, by (layout plan, selectors)."""
    recordings: dict[tuple[Any, int], Any] = {}

    def build_one(candidate_specs: list[LayerSpec], out: int, selectors: Any, **kwargs: Any) -> Model:
        seen = None if recorder is None else type(recorder)()
        built = build(candidate_specs, out, selectors, recorder=seen, **kwargs)
        recordings[(kwargs.get("layout_plan"), id(selectors))] = seen
        return built

    kwargs = dict(dtype=dtype, layout=layout, sample_input_shape=tuple(sample_input_shape), device=device)
    # Each plan also with conv2d's "default" algorithms: per-layer timing
    # can pick a conv that wins alone and loses inside the model (ai3.layouts).
    alternatives = {selection.DEFAULT: selection.with_conv2d(algos, selection.DEFAULT, _core_ops())}
    residual = _residual_conv_selector(specs, selection.conv2d_selector(algos))
    if residual is not None:
        alternatives[RESIDUAL_DEFAULT] = selection.with_conv2d(algos, residual, _core_ops())
    candidates = [layouts.candidate_label(p, c) for c in ("", *alternatives, layouts.IN_MODEL) for p in layouts.PLANS]
    # Like every "auto" answer, the choice is cached on disk (ai3.tuning),
    # keyed by the whole model, so a second build times nothing.
    key = _layout_key(specs, output, algos, dtype, layout, sample_input_shape)
    cached = tuning.cache_load(key, candidates)
    if cached is not None and cached.choice.endswith(layouts.IN_MODEL):
        names = set(tuning.known_algorithms("conv2d", "cpu")) | {selection.DEFAULT}
        convs = len(_selected_layers(specs, "conv2d"))
        listed = cached.selection
        if listed is None or len(listed) != convs or not set(listed) <= names:
            cached = None  # not a list of this model's convs and this build's algorithms: timed again
    if cached is not None:
        plan, conv2d = layouts.parse_candidate(cached.choice)
        if conv2d == layouts.IN_MODEL:
            alternatives[conv2d] = selection.with_conv2d(algos, cached.selection, _core_ops())
        chosen_algos = alternatives[conv2d] if conv2d else algos
        model = build_one(layouts.copy_specs(specs), output, chosen_algos, layout_plan=plan, **kwargs)
        model.layout_decision.conv2d = conv2d
        model.layout_decision.seconds = {m.algorithm: m.seconds for m in cached.measurements if m.timed}
    else:
        x = np.random.default_rng(0).standard_normal(tuple(int(d) for d in sample_input_shape)).astype(dtype)
        model = layouts.fastest(build_one, specs, output, algos, x, conv2d_alternatives=alternatives, **kwargs)
        model = _faster_inside_the_model(model, build_one, specs, output, algos, alternatives, x, kwargs)
        seconds = model.layout_decision.seconds
        measured = [tuning.Measurement(c, seconds.get(c), 1 if c in seconds else 0) for c in candidates]
        in_model = alternatives.get(layouts.IN_MODEL) if model.layout_decision.conv2d == layouts.IN_MODEL else None
        tuning.cache_store(
            key,
            tuning.TuneResult(
                model.layout_decision.candidate, measured, selection=in_model["conv2d"] if in_model else None
            ),
        )
    # Graph fusion is the other whole-model choice per-layer timing cannot see.
    layouts.choose_fusion(model, key, sample_input_shape, dtype)
    if recorder is not None:
        d = model.layout_decision
        seen = recordings[(d.plan, id(alternatives[d.conv2d] if d.conv2d else algos))]
        # Where the kept build ran "default"'s convs, the plan still shows
        # what "auto" measured per layer: the per-layer build of that plan
        # recorded it, or, for a cached choice, builds it now (its layers
        # from the cache: nothing is timed).
        if (d.plan, id(algos)) not in recordings:
            build_one(layouts.copy_specs(specs), output, algos, layout_plan=d.plan, **kwargs)
        timed = recordings[(d.plan, id(algos))]
        recorder.tuned.extend(timed.tuned)
        recorder.predicted.extend(timed.predicted)  # "predict"'s picks, likewise
        recorder.selected.extend(seen.selected)
    return model


def _faster_inside_the_model(
    model: Model,
    build_one: Any,
    specs: list[LayerSpec],
    output: int,
    algos: Any,
    alternatives: dict[str, Any],
    x: np.ndarray,
    kwargs: dict[str, Any],
) -> Model:
    """The kept build of the whole-model choice (`model`, conv2d from
    "auto"'s or "predict"'s picks), or one more candidate where it runs
    faster: under the same plan, each conv runs whichever of the kept
    build's algorithm and "default"'s ran it faster inside the model
    (layouts.compose_in_model, from both builds' per-node profiles). The
    convs are chosen per layer alone, with their weights hot in cache, and
    that misses what a forward pass costs them; a build that mixes the two
    is kept only if whole forward passes of it are faster. Adds
    layouts.IN_MODEL to `alternatives` (its per-conv list) when it is built."""
    d = model.layout_decision
    if selection.conv2d_selector(algos) not in (selection.AUTO, selection.PREDICT) or d.conv2d == selection.DEFAULT:
        return model
    default = build_one(
        layouts.copy_specs(specs), output, alternatives[selection.DEFAULT], layout_plan=d.plan, **kwargs
    )
    names = [specs[i].name for i in _selected_layers(specs, "conv2d")]
    chosen = layouts.compose_in_model(model, default, names, x)
    if chosen is None:
        return model
    per_conv = [chosen.get(n, selection.DEFAULT) for n in names]
    alternatives[layouts.IN_MODEL] = selection.with_conv2d(algos, per_conv, _core_ops())
    mixed = layouts.build_candidate(
        build_one, specs, output, alternatives[layouts.IN_MODEL], d.plan, layouts.IN_MODEL, **kwargs
    )
    layouts.check_same_output(np.asarray(model(x)), np.asarray(mixed(x)), layouts.IN_MODEL)
    label = mixed.layout_decision.candidate
    seconds = layouts.time_alternately(
        {d.candidate: functools.partial(model, x), label: functools.partial(mixed, x)},
        layouts.TIMING_ROUNDS,
        per_block=2,
    )
    # Decided on this timing alone, both builds timed side by side. The
    # mixed build's time is shown on the scale of the whole-model timing
    # that chose the kept build (its side-by-side ratio times the kept
    # build's time there): times from two sessions on a busy machine do
    # not compare, and the record must rank the builds as the decision did.
    faster = seconds[label] < seconds[d.candidate]
    kept = d.seconds.get(d.candidate, seconds[d.candidate])
    d.seconds[label] = kept * seconds[label] / seconds[d.candidate]
    if not faster:
        return model
    mixed.layout_decision.seconds = d.seconds
    return mixed


# The whole-model candidate whose convs are "auto"'s picks but for those
# a residual add reads, which run "default"'s (_residual_conv_selector).
RESIDUAL_DEFAULT = "default where a residual add follows"


def _residual_conv_selector(specs: Sequence[LayerSpec], conv2d: Any) -> list[str] | None:
    """conv2d's selector as a list, one name per conv2d layer in the order
    the selection layer asks (spec order): "default" for each conv whose
    only reader is a 2-input add, conv2d's own ("auto", "predict")
    elsewhere; None where conv2d's selector is not one of those or no conv
    feeds an add.

    The core fuses such an add (and its relu) into the conv, writing the
    sum in place, when the conv runs "guess" (core/graph.h,
    FuseResidualConvs); per-layer timing cannot see that, and another
    algorithm that times faster alone costs the add's pass over memory
    inside the model. So "auto" is also tried with "default" there and
    its own picks elsewhere: resnet50 at batch 8 (2-core Xeon) ran its
    1x1 convs better in "default" (guess, fused) and its 512-channel 3x3
    convs better in winograd, which "default" leaves to guess at that width."""
    if conv2d not in (selection.AUTO, selection.PREDICT):
        return None
    readers = consumers(list(specs))
    convs = _selected_layers(specs, "conv2d")
    residual = [
        len(readers.get(i, [])) == 1 and specs[readers[i][0]].op == "add" and len(specs[readers[i][0]].inputs) == 2
        for i in convs
    ]
    if not any(residual):
        return None
    return [selection.DEFAULT if r else conv2d for r in residual]


def _layout_key(
    specs: Sequence[LayerSpec], output: int, algos: Any, dtype: Any, layout: str, sample_input_shape: Sequence[int]
) -> dict[str, Any]:
    """The tuning-cache key of a model's layout choice: every spec's op,
    inputs, attributes and weight shapes (never values), the selectors, the
    input shape, dtype and layout."""
    graph = [[s.op, list(s.inputs), {k: v for k, v in s.attrs.items() if not is_note(k)}, s.weights] for s in specs]
    return tuning.jsonable(
        {
            "op": "layout_plan",
            "params": {"graph": graph, "output": output, "algos": algos},
            "input_shape": list(sample_input_shape),
            "dtype": np.dtype(dtype).name,
            "layout": layout,
            "device": "cpu",
        }
    )
