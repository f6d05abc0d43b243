"""ai3.torch.Layer: one nn.Module for any core layer, running
``torch.ops.ai3.layer`` (ai3.torch.ops).

An in-place swap makes one from the module it replaces, through the one
mapping of torch modules (ai3.torch.mapping)::

    new = Layer.from_module(model.features[0], "winograd", "features.0")

The new module takes over the original's Parameters and buffers (the same
objects, under the same names: ``state_dict()`` has the original's keys,
``.to()``, optimizers and ``load_state_dict`` act on the tensors the layer
reads) and copies its plain hyper-parameters (``in_channels``,
``kernel_size``, ...) for code that reads them. It holds nothing but
tensors, numbers and strings, so ``copy.deepcopy``, ``pickle`` and
``.to(dtype)`` work as for any module (the core layer is cached by
ai3.torch.ops, keyed by the weights' contents, and rebuilt when they
change); torch.compile, torch.export and torch.jit.trace capture
``ai3::layer`` with its op, attrs and algorithm as arguments.

Errors (ai3.Error subclasses) name the module as the rest of ai3 names
layers: "conv2d layer 'features.0': input (1, 4, 16, 16) (NCHW) has 4
channels, ...". The image ops take a 3-D CHW input as a batch of one, as
PyTorch does.

Training: the layer is differentiable. Its backward runs the op's gradient
ops (ai3.layers.backward_ops) with the algorithms of `backward` ({target:
algorithm}, "default" for a target left out), through ai3::layer
(ai3.torch.ops). ``train()`` / ``eval()`` mean what they mean for the
module replaced: a swapped BatchNorm2d in training mode runs torch's own
batch-statistics forward and updates the running statistics
(mapping.Entry.training); in eval mode, the core's. An op without gradient
ops raises ai3.UnsupportedOperation naming the layer when its backward runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
from torch import nn
from torch.nn.utils import parametrize

from ai3 import errors, layers
from ai3.torch import mapping, ops, params

_PLAIN = (int, float, bool, str, type(None))


def _plain(value: Any) -> bool:
    """A hyper-parameter worth copying: a number, a string, or a tuple of them."""
    if isinstance(value, (tuple, list)):
        return all(_plain(v) for v in value)
    return isinstance(value, _PLAIN)


class Layer(nn.Module):
    """A core layer of `op` with `attrs` (the core's names) running the
    algorithm `algorithm`; `weights` by the op's declared names
    (ai3.layers.schema(op)), registered as this module's parameters (a
    Parameter, or a tensor that requires grad) or buffers; `backward`:
    {target: algorithm} of its gradient ops (ai3.layers.backward_ops; a
    target left out runs "default"). Prefer `from_module` to replace a
    torch module."""

    def __init__(
        self,
        op: str,
        attrs: Mapping[str, Any] | None = None,
        weights: Mapping[str, torch.Tensor | None] | None = None,
        *,
        algorithm: str = "default",
        name: str = "",
        image: bool = False,
        resolve: mapping.Resolve | None = None,
        backward: Mapping[str, str] | None = None,
    ):
        super().__init__()
        if not isinstance(algorithm, str):
            raise errors.InvalidArgument(f"{ops.label(op, name)}: algorithm must be a string, got {algorithm!r}")
        names = ops.weight_names(op)
        unknown = sorted(set(weights or {}) - set(names))
        if unknown:
            raise errors.InvalidArgument(
                f"{ops.label(op, name)}: {op} has no weight {unknown[0]!r}; its weights are {names}"
            )
        keys = []
        for n in names:
            t = (weights or {}).get(n)
            if t is not None and not isinstance(t, torch.Tensor):
                raise errors.InvalidArgument(f"{ops.label(op, name)}: {n} must be a tensor, got {type(t).__name__}")
            if isinstance(t, nn.Parameter) or (t is not None and t.requires_grad):
                self.register_parameter(n, t if isinstance(t, nn.Parameter) else nn.Parameter(t))
            elif t is not None:
                self.register_buffer(n, t)
            keys.append(None if t is None else n)
        self._setup(op, dict(attrs or {}), keys, algorithm, name, image, resolve, backward)

    def _setup(self, op, attrs, keys, algorithm, name, image, resolve, backward=None, training=None) -> None:
        self.op = op
        self.algorithm = algorithm
        self.backward = _backward_choice(op, name, backward)
        self._backward_json = ops.canonical(self.backward) if self.backward else ""
        self._training = training  # what runs in training mode, if not the core op (mapping.Entry.training)
        self.name = str(name)
        self._weight_keys = tuple(keys)  # the attribute holding each declared weight (None: absent)
        self._weight_names = ",".join(n for n, k in zip(ops.weight_names(op), keys) if k is not None)
        self._image = bool(image)
        self._resolve = resolve
        # attrs that depend on the input (a None output_size, softmax's
        # dim=None) are resolved per call; the rest once, here.
        self.attrs = attrs
        self._attrs_json: str | None = None
        try:
            self.attrs = attrs if resolve is None else resolve(attrs, None, self.name)
            self._attrs_json = ops.canonical(self.attrs)
        except params.NeedsInputShape:
            pass
        self._prepare()

    @classmethod
    def from_module(
        cls, module: nn.Module, algorithm: str = "default", name: str = "", backward: Mapping[str, str] | None = None
    ) -> Layer:
        """The ai3 layer computing what `module` computes, by the mapping's
        entry for its class (ai3.torch.mapping), with `module`'s own tensors;
        `backward`: {target: algorithm} of its gradient ops."""
        entry = mapping.lookup(module)
        what = f"{type(module).__module__}.{type(module).__name__}"
        if entry is None or entry.op == "identity":
            raise errors.UnsupportedOperation(f"layer '{name}': ai3 has no in-place swap for {what}")
        where = ops.label(entry.op, name)
        base = mapping.base_class(module)
        for method in entry.methods:
            if getattr(base, method, None) is not None and getattr(type(module), method) is not getattr(base, method):
                raise errors.UnsupportedOperation(
                    f"{where}: {type(module).__name__} overrides nn.{base.__name__}.{method}; ai3 would not compute what it computes"
                )
        if parametrize.is_parametrized(module):
            raise errors.UnsupportedOperation(
                f"{where}: the module's parameters are parametrized (torch.nn.utils.parametrize, e.g. weight_norm); "
                "ai3 takes plain Parameters"
            )
        for k, p in module.named_parameters(recurse=False):
            if isinstance(p, nn.parameter.UninitializedParameter):
                raise errors.UnsupportedOperation(
                    f"{where}: {k} is not initialized yet (a lazy module); run it once before swapping"
                )
        attrs, weights = entry.read(module, name)

        new = cls.__new__(cls)
        nn.Module.__init__(new)
        # The module's hyper-parameters (in_channels, kernel_size, ...) for
        # code that reads them; its tensors under their own names.
        for k, v in vars(module).items():
            if not k.startswith("_") and k != "training" and _plain(v):
                new.__dict__[k] = v
        for k, p in module._parameters.items():
            new.register_parameter(k, p)
        for k, b in module._buffers.items():
            new.register_buffer(k, b, persistent=k not in module._non_persistent_buffers_set)
        keys = []
        for n in ops.weight_names(entry.op):
            t = weights.get(n)
            key = None if t is None else _key_of(module, t)
            if t is not None and key is None:
                hooked = next((k for k, v in vars(module).items() if v is t), None)
                if hooked is not None:
                    raise errors.UnsupportedOperation(
                        f"{where}: {hooked} is a {type(t).__name__}, not a Parameter (set by a hook such as weight_norm or "
                        "pruning?); ai3 takes modules with plain Parameters"
                    )
                key = f"{n}_ai3"  # a constant the mapping made (affine=False batchnorm's ones): not in state_dict
                new.register_buffer(key, t.detach(), persistent=False)
            keys.append(key)
        new.train(module.training)
        new._setup(entry.op, attrs, keys, algorithm, name, entry.image, entry.resolve, backward, entry.training)
        return new

    # -- running ------------------------------------------------------------

    def weights(self) -> tuple[list[torch.Tensor], str]:
        """The layer's weights as ai3::layer takes them: the tensors and
        their declared names, absent optional ones left out."""
        return [getattr(self, k) for k in self._weight_keys if k is not None], self._weight_names

    def _prepare(self) -> None:
        """Builds (and caches) the core layer now, and the gradient layers of
        the algorithms `backward` names, so that an algorithm that cannot
        take the layer is refused when swapping, naming the module. (The
        "default" gradient layers wait for the first backward: a model that
        only runs inference keeps no copies of its weights for them.)"""
        self.resolved_algorithm()
        self._resolve_backward(self.backward)

    def resolved_backward(self) -> dict[str, str]:
        """{target: the algorithm its gradient op runs} ("default" resolved
        where it can be known, as resolved_algorithm), for every gradient op
        of this layer (its input's, and each present weight's)."""
        return self._resolve_backward(None)

    def _resolve_backward(self, only: Mapping[str, str] | None) -> dict[str, str]:
        weights, names = self.weights()
        present = {"data", *(names.split(",") if names else ())}
        gradients = {
            t: g for t, g in layers.backward_ops(self.op).items() if t in present and (only is None or t in only)
        }
        chosen = {t: self.backward.get(t, "default") for t in gradients}
        if self._attrs_json is None or not ops.buildable(weights):
            return chosen
        return {t: ops.prepare(g, self._attrs_json, weights, names, chosen[t], self.name) for t, g in gradients.items()}

    def attrs_json(self, input_shape: Any) -> str:
        """The attrs ai3::layer gets for an input of this (batched) shape."""
        if self._attrs_json is not None:
            return self._attrs_json
        return ops.canonical(self._resolve(self.attrs, tuple(int(d) for d in input_shape), self.name))

    def resolved_algorithm(self) -> str:
        """The algorithm the core runs for this layer ("default" resolved);
        the requested name where that cannot be known yet (attributes that
        depend on the input, weights not CPU float32/float64)."""
        weights, names = self.weights()
        if self._attrs_json is None or not ops.buildable(weights):
            return self.algorithm
        return ops.prepare(self.op, self._attrs_json, weights, names, self.algorithm, self.name)

    def forward(self, *inputs: Any) -> torch.Tensor:
        for i, x in enumerate(inputs):
            if not isinstance(x, torch.Tensor):
                what = "input" if i == 0 else f"input {i}"
                raise errors.InvalidArgument(
                    f"{ops.label(self.op, self.name)}: {what} must be a torch.Tensor, got {type(x).__name__}"
                )
        if not inputs:
            raise errors.InvalidArgument(f"{ops.label(self.op, self.name)}: takes at least one input")
        if self.training and self._training is not None:
            return self._training(self, *inputs)
        unbatched = self._image and inputs[0].dim() == 3
        if unbatched:
            inputs = (inputs[0].unsqueeze(0), *inputs[1:])
        attrs = self.attrs_json(inputs[0].shape)
        weights, names = self.weights()
        y = torch.ops.ai3.layer(
            list(inputs), weights, names, self.op, attrs, self.algorithm, self.name, self._backward_json
        )
        return y.squeeze(0) if unbatched else y

    def extra_repr(self) -> str:
        attrs = ", ".join(f"{k}={v!r}" for k, v in self.attrs.items())
        backward = f", backward={self.backward!r}" if self.backward else ""
        return f"{self.op}, {attrs + ', ' if attrs else ''}algorithm={self.algorithm!r}{backward}"


def _backward_choice(op: str, name: str, backward: Mapping[str, str] | None) -> dict[str, str]:
    """`backward` checked: {target: algorithm name} over the op's gradient
    ops, "default" entries left out (they are what a missing one means)."""
    if backward is None:
        return {}
    gradients = layers.backward_ops(op)
    if not isinstance(backward, Mapping):
        raise errors.InvalidArgument(
            f"{ops.label(op, name)}: backward must map gradient targets to algorithms, got {backward!r}"
        )
    chosen = {}
    for target, algorithm in backward.items():
        if target not in gradients:
            raise errors.InvalidArgument(
                f"{ops.label(op, name)}: backward names gradient {target!r}; {op}'s gradients are {sorted(gradients) or 'none'}"
            )
        if not isinstance(algorithm, str):
            raise errors.InvalidArgument(
                f"{ops.label(op, name)}: the {target} gradient's algorithm must be a string, got {algorithm!r}"
            )
        if algorithm != "default":
            chosen[target] = algorithm
    return dict(sorted(chosen.items()))


def _key_of(module: nn.Module, t: torch.Tensor) -> str | None:
    """The name under which `module` holds `t` as its own parameter or buffer."""
    for k, v in (*module._parameters.items(), *module._buffers.items()):
        if v is t:
            return k
    return None


__all__ = ["Layer"]
