"""ONNX's Attention operator (opset 23) through ai3.onnx.swap_backend,
against ONNX's reference implementation (onnx.reference, the operator as
the standard defines it) and ONNX Runtime, over a grid: 3-D and 4-D inputs,
equal and grouped-query heads, a different value head size, prefill and
one-token decode shapes, no / bool / float masks of several ranks, causal,
an explicit scale, and a past KV cache with its present outputs. What the
core's attention cannot express is refused by name. ONNX's own backend
cases for the operator run in onnx_conformance_test."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import pytest_main

import ai3
import ai3.onnx

OPSET = 23
BATCH, HEAD, VALUE_HEAD = 2, 8, 6


def _rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def attention_model(shapes: dict[str, tuple], dtypes: dict[str, int], outputs: list[str], **attrs):
    """One Attention node whose inputs are graph inputs of these shapes (in
    Attention's input order; "" leaves an optional input out)."""
    from onnx import TensorProto, helper

    order = ["Q", "K", "V", "attn_mask", "past_key", "past_value"]
    names = [n if n in shapes else "" for n in order]
    while names and not names[-1]:
        names.pop()
    node = helper.make_node("Attention", names, outputs, **attrs)
    inputs = [helper.make_tensor_value_info(n, dtypes.get(n, TensorProto.FLOAT), shapes[n]) for n in names if n]
    # Output shapes by symbolic dims: Y has q's rank, the present outputs 4.
    ranks = {"Y": len(shapes["Q"])}
    outs = [
        helper.make_tensor_value_info(o, TensorProto.FLOAT, [f"{o}{i}" for i in range(ranks.get(o, 4))])
        for o in outputs
        if o
    ]
    model = helper.make_model(
        helper.make_graph([node], "attention", inputs, outs), opset_imports=[helper.make_opsetid("", OPSET)]
    )
    model.ir_version = 10
    return model


def reference(model, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    from onnx.reference import ReferenceEvaluator

    return ReferenceEvaluator(model).run(None, feeds)


def heads_tensor(rng: np.random.Generator, rank: int, heads: int, seq: int, size: int) -> np.ndarray:
    """q, k or v: (B, heads, seq, size), or 3-D (B, seq, heads * size)."""
    shape = (BATCH, heads, seq, size) if rank == 4 else (BATCH, seq, heads * size)
    return rng.standard_normal(shape).astype(np.float32)


def case(rank: int, q_heads: int, kv_heads: int, lengths: tuple[int, int], mask: str, causal: bool, seed: int):
    """The model and its feeds for one point of the grid."""
    from onnx import TensorProto

    length, keys = lengths
    rng = _rng(seed)
    feeds = {
        "Q": heads_tensor(rng, rank, q_heads, length, HEAD),
        "K": heads_tensor(rng, rank, kv_heads, keys, HEAD),
        "V": heads_tensor(rng, rank, kv_heads, keys, VALUE_HEAD),
    }
    dtypes = {}
    if mask == "bool (L, S)":
        allowed = rng.random((length, keys)) < 0.7
        allowed[:, 0] = True  # every row sees a key (a fully masked row is its own test)
        feeds["attn_mask"] = allowed
        dtypes["attn_mask"] = TensorProto.BOOL
    elif mask == "float (B, 1, L, S)":
        feeds["attn_mask"] = rng.standard_normal((BATCH, 1, length, keys)).astype(np.float32)
    elif mask == "float (H, L, S)":
        feeds["attn_mask"] = rng.standard_normal((q_heads, length, keys)).astype(np.float32)
    attrs = {"is_causal": int(causal)}
    if rank == 3:
        attrs.update(q_num_heads=q_heads, kv_num_heads=kv_heads)
    model = attention_model({n: v.shape for n, v in feeds.items()}, dtypes, ["Y"], **attrs)
    return model, feeds


GRID = list(
    itertools.product(
        (3, 4),
        ((4, 4), (4, 2), (6, 1)),
        ((5, 5), (3, 7), (1, 9)),
        ("none", "bool (L, S)", "float (B, 1, L, S)", "float (H, L, S)"),
        (False, True),
    )
)


@pytest.mark.parametrize("rank,heads,lengths,mask,causal", GRID, ids=str)
def test_matches_onnx_reference(rank, heads, lengths, mask, causal) -> None:
    model, feeds = case(rank, *heads, lengths, mask, causal, seed=hash((rank, heads, lengths, mask, causal)) % 2**31)
    want = reference(model, feeds)[0]
    got = ai3.onnx.swap_backend(model)(*feeds.values())
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("rank,heads", [(3, (4, 2)), (4, (4, 4)), (4, (6, 2))], ids=str)
def test_matches_onnxruntime(rank, heads) -> None:
    import onnxruntime as ort

    model, feeds = case(rank, *heads, (5, 7), "float (B, 1, L, S)", False, seed=7)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    got = ai3.onnx.swap_backend(model)(*feeds.values())
    np.testing.assert_allclose(got, session.run(None, feeds)[0], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("scale", [0.3, 2.0])
def test_scale(scale) -> None:
    model, feeds = case(4, 2, 2, (4, 6), "none", False, seed=3)
    model.graph.node[0].attribute.append(_attribute("scale", scale))
    got = ai3.onnx.swap_backend(model)(*feeds.values())
    np.testing.assert_allclose(got, reference(model, feeds)[0], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("rank", [3, 4])
def test_past_key_value_and_present_outputs(rank) -> None:
    """past_key / past_value (B, kv_heads, P, D) are concatenated before the
    new keys; present_key / present_value are the concatenations."""
    rng = _rng(11)
    q_heads, kv_heads, length, keys, past = 4, 2, 3, 3, 4
    feeds = {
        "Q": heads_tensor(rng, rank, q_heads, length, HEAD),
        "K": heads_tensor(rng, rank, kv_heads, keys, HEAD),
        "V": heads_tensor(rng, rank, kv_heads, keys, VALUE_HEAD),
        "attn_mask": rng.standard_normal((length, past + keys)).astype(np.float32),
        "past_key": rng.standard_normal((BATCH, kv_heads, past, HEAD)).astype(np.float32),
        "past_value": rng.standard_normal((BATCH, kv_heads, past, VALUE_HEAD)).astype(np.float32),
    }
    attrs = {"q_num_heads": q_heads, "kv_num_heads": kv_heads} if rank == 3 else {}
    model = attention_model({n: v.shape for n, v in feeds.items()}, {}, ["Y", "present_key", "present_value"], **attrs)
    want = reference(model, feeds)
    got = ai3.onnx.swap_backend(model)(*feeds.values())
    assert len(got) == 3
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)


def _attribute(name, value):
    from onnx import helper

    return helper.make_attribute(name, value)


@pytest.mark.parametrize("form", ["softcap", "causal with past", "sliding window", "qk_matmul_output"])
def test_forms_the_core_cannot_express_run_through_the_function_body(form) -> None:
    """An Attention whose form the core's attention cannot express (a score
    cap, a causal mask offset by a KV cache, a sliding window, the
    qk_matmul_output output) runs through its ONNX function body instead:
    matmuls, softmax and the masking arithmetic, each a core layer."""
    rng = _rng(5)
    feeds = {n: rng.standard_normal((1, 2, 3, HEAD)).astype(np.float32) for n in ("Q", "K", "V")}
    attrs, outputs = {}, ["Y"]
    if form == "softcap":
        attrs["softcap"] = 2.0
    elif form == "causal with past":
        attrs["is_causal"] = 1
        feeds["attn_mask"] = rng.standard_normal((3, 5)).astype(np.float32)
        feeds["past_key"] = rng.standard_normal((1, 2, 2, HEAD)).astype(np.float32)
        feeds["past_value"] = rng.standard_normal((1, 2, 2, HEAD)).astype(np.float32)
    elif form == "sliding window":  # (opset 25's)
        attrs["left_window_size"] = 1
    else:
        attrs["qk_matmul_output_mode"] = 1
        outputs = ["Y", "", "", "qk"]
    model = attention_model({n: v.shape for n, v in feeds.items()}, {}, outputs, **attrs)
    if form == "sliding window":
        model.opset_import[0].version = 25
    want = reference(model, feeds)
    got = ai3.onnx.swap_backend(model)(*feeds.values())
    got = got if isinstance(got, (list, tuple)) else [got]
    assert "attention" not in [op for _, op, _ in ai3.onnx.swap_backend(model).layers()]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)


def test_a_mask_shorter_than_the_keys_is_refused_naming_the_node() -> None:
    rng = _rng(5)
    feeds = {n: rng.standard_normal((1, 2, 3, HEAD)).astype(np.float32) for n in ("Q", "K", "V")}
    feeds["attn_mask"] = np.zeros((3, 2), np.float32)
    model = attention_model({n: v.shape for n, v in feeds.items()}, {}, ["Y"])
    with pytest.raises(ai3.UnsupportedOperation, match="as long as the keys") as raised:
        ai3.onnx.swap_backend(model)
    assert "Attention" in str(raised.value)


if __name__ == "__main__":
    pytest_main.run(__file__)
