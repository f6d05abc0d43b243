"""ONNX's backend API (onnx.backend.base) over ai3: the whole model run by
ai3's core through ai3.onnx.swap_backend, as ONNX's backend test suite
(onnx.backend.test.BackendTest) and tools written for any backend expect::

    import ai3.onnx.backend as backend
    rep = backend.prepare(onnx.load("net.onnx"), "CPU", algos={"conv2d": "winograd"})
    y, = rep.run([x])
    y, = backend.run_node(node, [x, w])     # one node; the inputs after the first are its constants

`prepare` takes swap_backend's keywords (algos, sample_input_shape,
dtype). A model of several inputs runs them all as the ai3.Model's inputs
where ai3 maps the graph so; else it runs its first as the model's input
and binds the others at `run` as constants, as run_node does (ai3's layers
take weights, exponents, scales and shapes as constants; each new set of
values prepares the model again). A model of several outputs returns them all,
in the graph's order. A non-float input, or an output ai3 does not
compute, is refused (an ai3.DTypeError / ai3.UnsupportedOperation naming
it), never run partly. The core runs on the CPU here; a CUDA device is
refused.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import onnx
from onnx import helper
from onnx.backend import base

from ai3 import errors, frontend
from ai3.onnx import LAYOUT as graph_layout
from ai3.onnx import graph
from ai3.spec import MODEL_INPUT

_PREPARE_KEYWORDS = ("algos", "sample_input_shape", "dtype")


def _check_device(device: str) -> None:
    if not supports_device(device):
        raise errors.UnsupportedOperation(f"ai3.onnx.backend runs models on the CPU, not on {device!r}")


class BackendRep(base.BackendRep):
    """A prepared model: `run(inputs)` returns its outputs in a tuple
    (a namedtuple, indexable by the outputs' names too)."""

    def __init__(self, model: Any, proto: Any):
        self.model = model  # the ai3.Model
        inp = graph.graph_inputs(proto)[0]  # (one: the others are bound by _BindingRep)
        self.input_name = inp.name
        self.output_names = [o.name for o in proto.graph.output]
        # The declared output types: ai3 computes in the input's float
        # dtype, and a Cast to another float type is an identity inside it.
        self._out_dtypes = _declared_dtypes(proto)
        self._outputs = base.namedtupledict("Outputs", self.output_names)

    def run(self, inputs: Any, **kwargs: Any) -> tuple:
        if kwargs:
            raise errors.InvalidArgument(f"ai3.onnx.backend's run takes no options, got {sorted(kwargs)}")
        if isinstance(inputs, dict):
            extra = sorted(set(inputs) - {self.input_name})
            if self.input_name not in inputs or extra:
                raise errors.InvalidArgument(
                    f"the model takes one input '{self.input_name}'; got inputs {sorted(inputs)}"
                )
            x = inputs[self.input_name]
        elif isinstance(inputs, (list, tuple)):
            if len(inputs) != 1:
                raise errors.InvalidArgument(f"the model takes one input '{self.input_name}'; got {len(inputs)} inputs")
            x = inputs[0]
        else:
            x = inputs
        return _results(self._outputs, self._out_dtypes, self.model(np.asarray(x)))


def _declared_dtypes(proto: Any, values: Sequence[Any] | None = None) -> list[np.dtype | None]:
    """The NumPy types the graph declares for `values` (its outputs by
    default); None where it declares none."""
    return [
        onnx.helper.tensor_dtype_to_np_dtype(o.type.tensor_type.elem_type) if o.type.tensor_type.elem_type else None
        for o in (proto.graph.output if values is None else values)
    ]


def _results(outputs: type, dtypes: list[np.dtype | None], y: Any) -> tuple:
    """The ai3.Model's result (a tuple where the graph has several outputs)
    as the backend's namedtuple, each in its declared float type."""
    ys = [np.asarray(v) for v in y] if len(dtypes) > 1 else [np.asarray(y)]
    return outputs(
        *(v.astype(d) if d is not None and d.kind == "f" and v.dtype != d else v for v, d in zip(ys, dtypes))
    )


class _BindingRep(base.BackendRep):
    """A model of several inputs, as ONNX's backend tests feed them. Where
    ai3 maps the graph with every input a tensor (two activations
    concatenated, added, multiplied), it runs so (`whole`); else the first
    is the model's input and the others are bound at run time as constants
    (ai3's layers need weights, exponents, slopes, scales and shapes
    constant, and a second activation operand bound as a constant gives
    the same result). Each distinct set of bound values prepares the model
    once; a new set prepares it again."""

    def __init__(self, proto: Any, kwargs: dict[str, Any]):
        self.proto = proto
        self.kwargs = kwargs
        inputs = graph.graph_inputs(proto)
        for inp in inputs:  # (bound or not, each must be a tensor)
            kind = inp.type.WhichOneof("value")
            if kind != "tensor_type":
                raise errors.DTypeError(
                    f"ai3 models take tensors; the model's input '{inp.name}' is a {kind or 'value of no type'}"
                )
        self.names = [i.name for i in inputs]
        self._prepared: dict[bytes, BackendRep] = {}
        self.whole = None
        if kwargs.get("sample_input_shape") is None:
            try:
                model = graph.swap_backend(proto, kwargs.get("algos"), dtype=kwargs.get("dtype"))
            except errors.Error:
                pass  # (the inputs after the first are bound at run)
            else:
                self.whole = model
                self._outputs = base.namedtupledict("Outputs", [o.name for o in proto.graph.output])
                self._out_dtypes = _declared_dtypes(proto)

    def run(self, inputs: Any, **kwargs: Any) -> tuple:
        if kwargs:
            raise errors.InvalidArgument(f"ai3.onnx.backend's run takes no options, got {sorted(kwargs)}")
        if isinstance(inputs, dict):
            if sorted(inputs) != sorted(self.names):
                raise errors.InvalidArgument(f"the model takes inputs {self.names}; got inputs {sorted(inputs)}")
            inputs = [inputs[n] for n in self.names]
        if not isinstance(inputs, (list, tuple)) or len(inputs) != len(self.names):
            got = len(inputs) if isinstance(inputs, (list, tuple)) else 1
            raise errors.InvalidArgument(f"the model takes {len(self.names)} inputs {self.names}; got {got}")
        if self.whole is not None:
            return _results(self._outputs, self._out_dtypes, self.whole(*[np.asarray(v) for v in inputs]))
        bound = [np.asarray(v) for v in inputs[1:]]
        key = b"".join(str((v.dtype.str, v.shape)).encode() + np.ascontiguousarray(v).tobytes() for v in bound)
        rep = self._prepared.get(key)
        if rep is None:
            proto = onnx.ModelProto()
            proto.CopyFrom(self.proto)
            names = set(self.names[1:])
            kept = [i for i in proto.graph.input if i.name not in names]
            del proto.graph.input[:]
            proto.graph.input.extend(kept)
            proto.graph.initializer.extend(
                onnx.numpy_helper.from_array(v, name) for name, v in zip(self.names[1:], bound)
            )
            rep = Backend.prepare(proto, **self.kwargs)
            self._prepared[key] = rep
        return rep.run([inputs[0]])


class Backend(base.Backend):
    @classmethod
    def is_compatible(cls, model: Any, device: str = "CPU", **kwargs: Any) -> bool:
        return supports_device(device)

    @classmethod
    def prepare(cls, model: Any, device: str = "CPU", **kwargs: Any) -> BackendRep:
        """The model (a ModelProto, path or bytes) as an ai3.Model ready to
        run; keywords are swap_backend's."""
        _check_device(device)
        unknown = sorted(set(kwargs) - set(_PREPARE_KEYWORDS))
        if unknown:
            raise errors.InvalidArgument(f"ai3.onnx.backend.prepare takes {list(_PREPARE_KEYWORDS)}, not {unknown}")
        proto = graph.load(model)
        if len(graph.graph_inputs(proto)) > 1:
            return _BindingRep(proto, kwargs)
        dtype = graph.model_dtype(proto, kwargs.get("dtype"))
        try:
            ai3_model = graph.swap_backend(proto, kwargs.get("algos"), kwargs.get("sample_input_shape"), dtype=dtype)
        except errors.UnsupportedOperation:
            if not _is_identity(proto, kwargs.get("sample_input_shape")):
                raise
            # A graph that computes nothing (Identity, Dropout, a Cast
            # between float types) has no core layer to run; ai3.Model
            # refuses to be empty, the backend returns the input.
            ai3_model = _Identity(dtype, _declared_dtypes(proto, graph.graph_inputs(proto))[0])
        return BackendRep(ai3_model, proto)

    @classmethod
    def run_node(
        cls,
        node: Any,
        inputs: Any,
        device: str = "CPU",
        outputs_info: Sequence[tuple[Any, tuple[int, ...]]] | None = None,
        **kwargs: Any,
    ) -> tuple:
        """One node on `inputs` (one array per node input, in order): the
        first is the model's input, the others are the node's constants
        (weights, shapes), which ai3 needs constant anyway."""
        _check_device(device)
        opset = int(kwargs.pop("opset_version", min(onnx.defs.onnx_opset_version(), graph.MAX_OPSET)))
        super().run_node(node, inputs, device, outputs_info, opset_version=opset)  # onnx.checker on the node
        return cls.run_model(_node_model(node, list(inputs), opset, outputs_info), [inputs[0]], device, **kwargs)

    @classmethod
    def supports_device(cls, device: str) -> bool:
        return supports_device(device)


class _Identity:
    def __init__(self, dtype: np.dtype, declared: np.dtype | None = None):
        self.dtype = dtype
        self.declared = declared  # the input's type in the graph (int8, float16, ...)

    def __call__(self, x: Any) -> np.ndarray:
        x = np.asarray(x)
        if x.dtype != self.dtype and x.dtype != self.declared:
            raise errors.DTypeError(f"the model's input is {self.dtype}, got {x.dtype}")
        return x.copy()


def _is_identity(proto: Any, sample_input_shape: Any) -> bool:
    """Whether the graph's output is its input once the identities
    (Identity, Dropout, float Casts) are dropped."""
    try:
        specs, output = graph.to_specs(proto, sample_input_shape)
    except errors.Error:
        return False
    return frontend.prepare_specs(specs, output, graph_layout)[1] == MODEL_INPUT


def _node_model(node: Any, inputs: list, opset: int, outputs_info: Any) -> Any:
    if not inputs or not node.input or not node.input[0]:
        raise errors.UnsupportedOperation(
            f"{graph.describe_node(node)}: run_node needs the node's first input as an array"
        )
    x = np.asarray(inputs[0])
    elem = helper.np_dtype_to_tensor_dtype(x.dtype)
    consts = [onnx.numpy_helper.from_array(np.asarray(v), name) for name, v in zip(node.input[1:], inputs[1:]) if name]
    outs = []
    for k, name in enumerate(node.output):
        if outputs_info is not None and k < len(outputs_info):
            dtype, shape = outputs_info[k]
            outs.append(
                helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(np.dtype(dtype)), list(shape))
            )
        else:
            outs.append(helper.make_empty_tensor_value_info(name))
    g = helper.make_graph(
        [node],
        "run_node",
        [helper.make_tensor_value_info(node.input[0], elem, list(x.shape))],
        outs,
        initializer=consts,
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    if outputs_info is None:
        # The checker wants typed outputs: ONNX's shape inference gives them.
        try:
            inferred = onnx.shape_inference.infer_shapes(m, strict_mode=True)
        except Exception as e:
            raise errors.ShapeError(
                f"{graph.describe_node(node)}: ONNX shape inference failed on these inputs: {e}"
            ) from e
        del m.graph.output[:]
        m.graph.output.extend(inferred.graph.output)
    return m


def supports_device(device: str) -> bool:
    """The CPU only: ai3 on CUDA runs on torch tensors (ai3.cuda), which
    this NumPy-in, NumPy-out API does not take."""
    try:
        return base.Device(device).type == base.DeviceType.CPU
    except (AttributeError, ValueError):  # not a device name ONNX knows ("CPU", "CUDA:1")
        return False


# The module is the backend, as ONNX's backend test suite and
# onnxruntime.backend expect.
prepare = Backend.prepare
run_model = Backend.run_model
run_node = Backend.run_node
is_compatible = Backend.is_compatible

__all__ = ["Backend", "BackendRep", "is_compatible", "prepare", "run_model", "run_node", "supports_device"]
