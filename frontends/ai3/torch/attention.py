"""Attention in the PyTorch frontend: nn.MultiheadAttention and
F.scaled_dot_product_attention.

- swap_backend (ai3.torch.fx calls map_module / map_function): an
  nn.MultiheadAttention node becomes one "multihead_attention" spec (inputs
  x, or q, k, v; weights in torch's layout), an SDPA call one "attention"
  spec (q, k, v[, mask]; with enable_gqa, k and v first repeated to the
  query's heads). A mask must be a computed float tensor (it becomes
  the layer's last input); boolean or constant masks are refused naming the
  node (the core's graph takes additive float masks only).
- In place: swap_attention(module, algos) replaces every
  nn.MultiheadAttention with ai3.torch.attention.MultiheadAttention, whose
  forward calls the generic op ``torch.ops.ai3.layer`` (ai3.torch.ops) with
  op "multihead_attention"; SDPA is the same op with "attention". (The
  module keeps nn.MultiheadAttention's mask arguments and its out_proj
  submodule, so its state_dict keys stay those of the original.) Masks there may be boolean or float:
  nn.MultiheadAttention's attn_mask / key_padding_mask (True = masked out)
  are folded into one additive mask of shape broadcastable to
  (B, num_heads, L, S); SDPA's boolean attn_mask means True = take part.

Masks become additive as in torch: 0 where a key takes part, -inf where it
does not; a query whose keys are all masked gives zeros (torch does too).
Attention weights are not computed: the ai3 module returns None for them
(need_weights=True warns once).
"""

from __future__ import annotations

import inspect
import math
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch import fx, nn

from ai3 import errors, selection
from ai3.selection import Selector
from ai3.spec import repeat_heads_steps
from ai3.torch import ops, params
from ai3.torch.nodes import normalized, unsupported
from ai3.torch.tracing import values

# ---------------------------------------------------------------------------
# swap_backend: fx nodes -> LayerSpecs


def _mha_support(m: nn.MultiheadAttention) -> str | None:
    """Why the core cannot run this module, or None."""
    if not m._qkv_same_embed_dim:
        return "kdim/vdim differ from embed_dim (separate q/k/v projection weights)"
    if m.bias_k is not None or m.bias_v is not None:
        return "add_bias_kv=True"
    if m.add_zero_attn:
        return "add_zero_attn=True"
    if type(m).forward is not nn.MultiheadAttention.forward:
        return f"{type(m).__name__} overrides forward"
    return None


_MHA_SIGNATURE = inspect.signature(nn.MultiheadAttention.forward)


def _float_mask_input(mapper: Any, node: fx.Node, mask: Any, what: str) -> int:
    """The spec index of a computed float mask, or an error naming the node."""

    if not isinstance(mask, fx.Node) or mask not in mapper.index:
        raise unsupported(node, f"{what} is a constant; the core's attention takes a computed float mask only")
    vals = values(mask)
    if vals is not None and not vals[0].is_floating_point():
        raise unsupported(node, f"{what} is {vals[0].dtype}; the core's graph takes additive float masks only")
    return mapper.index[mask]


def dtype_name(dtype: torch.dtype) -> str:
    return {torch.float32: "float32", torch.float64: "float64"}[dtype]


def _from_bool(mapper: Any, node: fx.Node, mask: fx.Node, dtype: torch.dtype) -> int:
    """A computed bool mask (True = take part; Hugging Face's sdpa masks)
    as the core's attention takes it: additive, 0 where kept and -inf where
    masked, so that a row with no key kept (a left-padded GPT-2's padding
    positions) gives zeros in the core, as torch's sdpa does. Built exactly
    as where(mask, 0, -inf): the core's where takes one constant branch, so
    the -inf one is made computed first, float(mask) * 0 + -inf (an
    arithmetic (float(mask) - 1) * inf would give 0 * inf = nan on the kept
    entries). Made once per mask: every layer of a model reads the same one."""
    cache = mapper.__dict__.setdefault("_bool_masks", {})
    if (mask, dtype) not in cache:
        name = f"{mapper.name_of(mask)}.additive"
        core = dtype_name(dtype)
        shape = tuple(values(mask)[0].shape)

        def step(op: str, suffix: str, inputs: list[int], attrs: dict, weights: dict | None = None) -> int:
            return mapper.emit(node, op, f"{name}{suffix}", inputs, attrs, weights, input_shape=shape)

        as_float = step("cast", ".cast", [mapper.index[mask]], {"to": core})
        zero = step("mul", ".zero", [as_float], {"reverse": False}, {"other": np.zeros((), core)})
        masked = step("add", ".masked", [zero], {"reverse": False}, {"other": np.asarray(-np.inf, core)})
        cache[(mask, dtype)] = step(
            "where", "", [mapper.index[mask], masked], {"other_is_x": True}, {"other": np.zeros((), core)}
        )
    return cache[(mask, dtype)]


def map_module(mapper: Any, node: fx.Node, m: nn.Module) -> None:
    """An nn.MultiheadAttention call: one multihead_attention spec; the
    node's value is a tuple (output, weights), of which only the output
    exists in ai3."""

    why = _mha_support(m)
    if why:
        raise unsupported(node, f"nn.MultiheadAttention with {why} is not supported")
    try:
        a = _MHA_SIGNATURE.bind(m, *node.args, **node.kwargs)
    except TypeError as e:
        raise unsupported(node, f"unexpected arguments ({e})") from e
    a.apply_defaults()
    a = a.arguments
    if a["key_padding_mask"] is not None:
        raise unsupported(node, "key_padding_mask is not supported by swap_backend (use swap_attention)")
    q, k, v = a["query"], a["key"], a["value"]
    inputs = [mapper.tensor(node, q)] if q is k and k is v else [mapper.tensor(node, t) for t in (q, k, v)]
    if a["attn_mask"] is not None:
        inputs.append(_float_mask_input(mapper, node, a["attn_mask"], "attn_mask"))
    causal = bool(a["is_causal"]) and a["attn_mask"] is None
    w = params.numpy_weight
    weights = {
        "in_proj_weight": w(m.in_proj_weight),
        "in_proj_bias": w(m.in_proj_bias),
        "out_proj_weight": w(m.out_proj.weight),
        "out_proj_bias": w(m.out_proj.bias),
    }
    attrs = {"num_heads": m.num_heads, "batch_first": m.batch_first, "causal": causal}
    index = mapper.add(node, "multihead_attention", node.target, inputs, m, attrs, weights)
    mapper.pieces[node] = [index, None]  # (output, attention weights)


def _sdpa(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    """F.scaled_dot_product_attention's signature, for binding fx args."""


def map_function(mapper: Any, node: fx.Node) -> None:
    """An F.scaled_dot_product_attention call: one attention spec."""

    a = normalized(node, _sdpa)
    if a["dropout_p"]:
        raise unsupported(node, f"dropout_p={a['dropout_p']} (ai3 runs inference)")
    if a["is_causal"] and a["attn_mask"] is not None:
        raise unsupported(node, "attn_mask together with is_causal (torch refuses it too)")
    if a["scale"] is not None and not isinstance(a["scale"], (int, float)):
        raise unsupported(node, f"scale must be a number, got {a['scale']!r}")
    mask = a["attn_mask"]
    causal = bool(a["is_causal"])
    if mask is not None and not (isinstance(mask, fx.Node) and mask in mapper.index):
        if not _is_causal_mask(mapper, node, a):
            return _constant_mask_attention(mapper, node, a)
        mask, causal = None, True
    name = mapper.name_of(node)
    inputs = [mapper.tensor(node, a["query"]), *_key_value(mapper, node, a, name)]
    attrs = {"causal": causal, "scale": None if a["scale"] is None else float(a["scale"])}
    mask_vals, query_vals = values(mask) if mask is not None else None, values(a["query"])
    if mask_vals is not None and mask_vals[0].dtype == torch.bool and query_vals is not None:
        inputs.append(_from_bool(mapper, node, mask, query_vals[0].dtype))
        mapper.add(node, "attention", name, inputs, node, attrs)
        return
    if mask is not None:
        inputs.append(_float_mask_input(mapper, node, mask, "attn_mask"))
    mapper.add(node, "attention", name, inputs, node, attrs)


def _key_value(mapper: Any, node: fx.Node, a: dict[str, Any], name: str) -> list[int]:
    """The spec indices of sdpa's key and value; with enable_gqa and fewer
    key/value heads than query heads (dim -3), each head repeated in place
    to the query's count, as torch does."""
    k, v = mapper.tensor(node, a["key"]), mapper.tensor(node, a["value"])
    qv, kv, vv = values(a["query"]), values(a["key"]), values(a["value"])
    if not a["enable_gqa"]:
        return _broadcast_batch(mapper, node, name, [("key", k, kv), ("value", v, vv)], qv)
    if qv is None or kv is None or vv is None:
        raise unsupported(node, "enable_gqa=True needs the heads' counts: pass sample_input_shape to swap_backend")
    q_heads, kv_heads = qv[0].shape[-3], kv[0].shape[-3]
    if q_heads == kv_heads:
        return [k, v]
    if q_heads % kv_heads:
        raise unsupported(node, f"enable_gqa with {q_heads} query heads over {kv_heads} key heads (not a multiple)")
    repeated = []
    for what, index, traced in (("key", k, kv[0]), ("value", v, vv[0])):
        for step, (op, attrs) in enumerate(repeat_heads_steps(traced.dim(), q_heads, kv_heads, traced.shape[-1])):
            index = mapper.emit(node, op, f"{name}.{what}_heads{step}", [index], attrs, None, None)
        repeated.append(index)
    return repeated


def _broadcast_batch(mapper: Any, node: fx.Node, name: str, operands: list, qv: Any) -> list[int]:
    """Key and value whose batch dims (all but the last two) broadcast to the
    query's, expanded to them, as torch's sdpa broadcasts them (Falcon's
    one key/value head beside its query heads)."""
    if qv is None:
        return [index for _, index, _ in operands]
    q_batch = tuple(qv[0].shape[:-2])
    out = []
    for what, index, traced in operands:
        batch = tuple(traced[0].shape[:-2]) if traced is not None else q_batch
        if batch != q_batch:
            if len(batch) != len(q_batch) or any(b not in (1, q) for b, q in zip(batch, q_batch)):
                raise unsupported(
                    node, f"a {what} of batch dims {batch} that do not broadcast to the query's {q_batch}"
                )
            varying = [d for d in range(len(q_batch)) if qv[0].shape[d] != qv[1].shape[d]]
            if any(batch[d] != q_batch[d] for d in varying):
                raise unsupported(node, f"a {what} broadcast along the query's batch dimension")
            # -1 keeps a dim (the batch's, whatever its size); a 1 grows to the query's.
            shape = [-1 if b == q else int(q) for b, q in zip(batch, q_batch)] + [-1, -1]
            index = mapper.emit(node, "expand", f"{name}.{what}_broadcast", [index], {"shape": shape}, None, None)
        out.append(index)
    return out


def _is_causal_mask(mapper: Any, node: fx.Node, a: dict[str, Any]) -> bool:
    """Whether sdpa's constant mask is exactly the causal one over as many
    queries as keys (a decoder's mask when no padding mask is passed:
    Llama's, built from its position ids): True on and below the diagonal,
    or 0 there and -inf or the dtype's lowest above; the core's causal
    attention then runs it, without the mask."""
    qv, kv = values(a["query"]), values(a["key"])
    if qv is None or kv is None:
        return False
    length = qv[0].shape[-2]
    if kv[0].shape[-2] != length or length == 0:
        return False
    mask = np.asarray(mapper.constant_or_row(node, a["attn_mask"]))
    if mask.ndim < 2 or mask.shape[-2:] != (length, length):
        return False
    below = np.tril(np.ones((length, length), bool))
    if mask.dtype == np.bool_:
        return bool(np.all(mask == below))
    if mask.dtype.kind != "f":
        return False
    lowest = torch.finfo(qv[0].dtype).min
    above = (mask == -np.inf) | (mask <= lowest)
    return bool(np.all(np.where(below, mask == 0, above)))


def _constant_mask_attention(mapper: Any, node: fx.Node, a: dict[str, Any]) -> None:
    """sdpa with a constant mask (T5's decoder self-attention: its causal
    mask plus the position bias, both folded from shapes and parameters).
    The core's attention takes its mask as a computed input only, so this
    one is written out as sdpa's definition, softmax(q @ k^T * scale +
    mask) @ v, in core matmul / mul / add / softmax layers, the mask the
    add's constant."""
    q, k = a["query"], a["key"]
    qv, kv = values(q), values(k)
    if qv is None or kv is None:
        raise unsupported(node, "attention with a constant mask needs sample_input_shape")
    dtype = qv[0].dtype
    mask = np.asarray(mapper.constant_or_row(node, a["attn_mask"]))
    # A bool mask as 0 / finfo.min, and rows with no key kept zeroed after,
    # as torch's sdpa gives them (with -inf their softmax would be nan).
    rows = mask.any(-1, keepdims=True).astype(dtype_name(dtype)) if mask.dtype == np.bool_ else None
    if mask.dtype == np.bool_:
        additive = np.where(mask, 0.0, torch.finfo(dtype).min).astype(dtype_name(dtype))
    else:
        additive = _additive(torch.from_numpy(mask), dtype, keep=True).numpy()
    name = mapper.name_of(node)
    key, value = _key_value(mapper, node, a, name)
    key_shape = tuple(kv[0].shape)
    if a["enable_gqa"]:  # the key repeated to the query's heads
        key_shape = (*key_shape[:-3], qv[0].shape[-3], *key_shape[-2:])
    rank = qv[0].dim()
    perm = list(range(rank))
    perm[-2], perm[-1] = perm[-1], perm[-2]
    kt = mapper.emit(node, "permute", f"{name}.key_t", [key], {"dims": perm}, input_shape=key_shape)
    scores = mapper.emit(node, "matmul", f"{name}.scores", [mapper.tensor(node, q), kt], input_shape=tuple(qv[0].shape))
    scale = a["scale"] if a["scale"] is not None else 1.0 / math.sqrt(qv[0].shape[-1])
    if scale != 1.0:
        weight = {"other": np.asarray(scale, additive.dtype)}
        scores = mapper.emit(node, "mul", f"{name}.scale", [scores], {"reverse": False}, weight)
    masked = mapper.emit(node, "add", f"{name}.mask", [scores], {"reverse": False}, {"other": additive})
    probs = mapper.emit(node, "softmax", f"{name}.softmax", [masked], {"axis": -1})
    if rows is None or rows.all():
        mapper.add(node, "matmul", name, [probs, value], node)
        return
    out = mapper.emit(node, "matmul", f"{name}.out", [probs, value], {})
    mapper.add(node, "mul", name, [out], node, {"reverse": False}, {"other": rows})


# ---------------------------------------------------------------------------
# Masks


def _additive(mask: torch.Tensor | None, dtype: torch.dtype, keep: bool) -> torch.Tensor | None:
    """0 / -inf from a boolean mask (`keep`: True means take part), or a
    float mask cast to `dtype`."""
    if mask is None:
        return None
    if mask.dtype == torch.bool:
        take_part = mask if keep else ~mask
        zeros = torch.zeros((), dtype=dtype, device=mask.device)
        return torch.where(take_part, zeros, torch.full((), float("-inf"), dtype=dtype, device=mask.device))
    return mask.to(dtype)


def mha_mask(
    query: torch.Tensor,
    key: torch.Tensor,
    num_heads: int,
    batch_first: bool,
    attn_mask: torch.Tensor | None,
    key_padding_mask: torch.Tensor | None,
) -> torch.Tensor | None:
    """nn.MultiheadAttention's attn_mask ((L, S) or (B * num_heads, L, S))
    and key_padding_mask ((B, S) or (S,) unbatched), True = masked out, as
    one additive mask broadcastable to (B, num_heads, L, S)."""
    dtype = query.dtype
    am = _additive(attn_mask, dtype, keep=False)
    kp = _additive(key_padding_mask, dtype, keep=False)
    batched = query.dim() == 3
    l_len = query.shape[1 if batched and batch_first else 0]
    s_len = key.shape[1 if batched and batch_first else 0]
    if am is not None and am.dim() == 3:
        am = am.reshape(-1, num_heads, l_len, s_len)
    if kp is not None:
        kp = kp.reshape(-1, 1, 1, s_len)
    if am is None:
        return kp
    return am if kp is None else am + kp


# ---------------------------------------------------------------------------
# The ops run through the generic torch.ops.ai3.layer (ai3.torch.ops).


def _attention_attrs(causal: bool, scale: float | None, has_mask: bool) -> str:
    return ops.canonical(
        {"causal": bool(causal), "scale": None if scale is None else float(scale), "has_mask": has_mask}
    )


def scaled_dot_product_attention(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attn_mask: torch.Tensor | None = None,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    scale: float | None = None,
    *,
    algorithm: str = "default",
) -> torch.Tensor:
    """F.scaled_dot_product_attention through torch.ops.ai3.layer's
    "attention" (inference: dropout_p must be 0)."""
    if dropout_p:
        raise errors.UnsupportedOperation(
            f"scaled_dot_product_attention: dropout_p={dropout_p}; ai3 runs inference only"
        )
    mask = _additive(attn_mask, query.dtype, keep=True)
    inputs = [query, key, value] + ([] if mask is None else [mask])
    attrs = _attention_attrs(is_causal, scale, mask is not None)
    return torch.ops.ai3.layer(inputs, [], "", "attention", attrs, algorithm, "scaled_dot_product_attention")


# ---------------------------------------------------------------------------
# In-place swap


class MultiheadAttention(nn.Module):
    """An nn.MultiheadAttention whose forward runs ai3's core (inference).
    It keeps the original's Parameters (state_dict keys unchanged:
    in_proj_weight, in_proj_bias, out_proj.weight, out_proj.bias) and
    hyper-parameters. forward returns (output, None): attention weights are
    not computed."""

    op = "multihead_attention"

    def __init__(self, module: nn.MultiheadAttention, algorithm: str = "default", name: str = ""):
        super().__init__()
        why = _mha_support(module)
        if why:
            raise errors.UnsupportedOperation(
                f"multihead_attention layer '{name}': nn.MultiheadAttention with {why} is not supported"
            )
        self.embed_dim = module.embed_dim
        self.num_heads = module.num_heads
        self.batch_first = module.batch_first
        self.in_proj_weight = module.in_proj_weight
        self.in_proj_bias = module.in_proj_bias
        self.out_proj = module.out_proj
        self.algorithm = algorithm
        self.name = name
        self.train(module.training)
        self._warned = False
        # Refuse an algorithm that cannot take the layer now, naming it.
        self.resolved_algorithm()

    @classmethod
    def from_torch(
        cls, module: nn.MultiheadAttention, algorithm: str = "default", name: str = ""
    ) -> MultiheadAttention:
        return cls(module, algorithm, name)

    def resolved_algorithm(self) -> str:
        attrs = {
            "num_heads": self.num_heads,
            "batch_first": self.batch_first,
            "causal": False,
            "self_attention": True,
            "has_mask": False,
        }
        weights, names = self._weights()
        if not ops.buildable(weights):
            return self.algorithm
        return ops.prepare(self.op, ops.canonical(attrs), weights, names, self.algorithm, self.name)

    def _weights(self) -> tuple[list[torch.Tensor], str]:
        """The weights as ai3::layer takes them (the biases are both there or neither)."""
        named = {"in_proj_weight": self.in_proj_weight, "in_proj_bias": self.in_proj_bias,
                 "out_proj_weight": self.out_proj.weight, "out_proj_bias": self.out_proj.bias}  # fmt: skip
        present = [(k, named[k]) for k in ops.weight_names(self.op) if named[k] is not None]  # the declared order
        return [t for _, t in present], ",".join(k for k, _ in present)

    def forward(
        self,
        query: torch.Tensor,
        key: torch.Tensor,
        value: torch.Tensor,
        key_padding_mask: torch.Tensor | None = None,
        need_weights: bool = True,
        attn_mask: torch.Tensor | None = None,
        average_attn_weights: bool = True,
        is_causal: bool = False,
    ) -> tuple[torch.Tensor, None]:
        if need_weights and not self._warned:
            self._warned = True
            warnings.warn(
                f"multihead_attention layer '{self.name}': ai3 does not compute attention weights; "
                "it returns None for them (call with need_weights=False to silence this)",
                stacklevel=2,
            )
        mask = mha_mask(query, key, self.num_heads, self.batch_first, attn_mask, key_padding_mask)
        causal = bool(is_causal) and mask is None
        self_attention = query is key and key is value  # one projection GEMM
        inputs = [query] if self_attention else [query, key, value]
        if mask is not None:
            inputs.append(mask)
        attrs = {"num_heads": self.num_heads, "batch_first": self.batch_first, "causal": causal,
                 "self_attention": self_attention, "has_mask": mask is not None}  # fmt: skip
        out = torch.ops.ai3.layer(inputs, *self._weights(), self.op, ops.canonical(attrs), self.algorithm, self.name)
        return out, None

    def extra_repr(self) -> str:
        return f"embed_dim={self.embed_dim}, num_heads={self.num_heads}, batch_first={self.batch_first}, algorithm={self.algorithm!r}"


def swap_attention(
    module: nn.Module, algos: Selector | None = None, sample_input_shape: Sequence[int] | None = None
) -> nn.Module:
    """Replaces, in place, every nn.MultiheadAttention (exact type) of
    `module` with an ai3 MultiheadAttention running the selected attention
    algorithm ("naive", "flash", "chunked", "default"; "torch"/"keep" leaves
    one as it is) and returns `module` (or its replacement, if `module` is
    one). "auto" needs sample_input_shape (not supported here yet)."""
    if not isinstance(module, nn.Module):
        raise errors.InvalidArgument(f"swap_attention takes an nn.Module, got {type(module).__name__}")
    targets = [(name, m) for name, m in module.named_modules() if type(m) is nn.MultiheadAttention]
    candidates = [selection.Candidate(name or type(m).__name__, m, None) for name, m in targets]
    chosen = selection.select("multihead_attention", algos, candidates, allow_keep=True)
    for (name, m), algorithm in zip(targets, chosen):
        if algorithm in selection.KEEP_NAMES:
            continue
        new = MultiheadAttention(m, algorithm, name or type(m).__name__)
        if not name:
            return new
        parent_name, _, child = name.rpartition(".")
        setattr(module.get_submodule(parent_name), child, new)
    return module
