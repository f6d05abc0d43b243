"""Hugging Face transformer language models (issue 17) through swap_backend:
BERT (BertModel: token ids, attention mask, token types), GPT-2
(GPT2Model: token ids and attention mask, causal mask) and T5's encoder
(T5EncoderModel: relative position buckets from log, min and int casts),
each (a) traced from torch and compared with torch, and (b) exported to
ONNX and compared with ONNX Runtime on the same file.

Nothing is downloaded: every model is built from a small config with random
weights (HF_HUB_OFFLINE=1, seeded), in eval mode, and run on batch 2,
length 8, with the first sequence padded (mask 0 on its last 3 tokens).

Tolerance: 1e-4 relative to max|reference| (float32, tolerances.tolerance).
"""

from __future__ import annotations

import os

os.environ["HF_HUB_OFFLINE"] = "1"  # before transformers is imported: nothing may be fetched

import io

import numpy as np
import pytest
import pytest_main
import torch
from tolerances import tolerance
from torch import nn

import ai3
import ai3.onnx

transformers = pytest.importorskip("transformers")

torch.set_num_threads(2)

BATCH, LENGTH, VOCAB = 2, 8, 1000


def _bert() -> nn.Module:
    return transformers.BertModel(
        transformers.BertConfig(
            vocab_size=VOCAB,
            hidden_size=64,
            num_hidden_layers=2,
            num_attention_heads=4,
            intermediate_size=128,
            max_position_embeddings=64,
        )
    )


def _gpt2() -> nn.Module:
    # bos / eos inside the small vocabulary (GPT-2's default 50256 is not);
    # no key/value cache (inference on whole sequences).
    return transformers.GPT2Model(
        transformers.GPT2Config(
            vocab_size=VOCAB,
            n_embd=64,
            n_layer=2,
            n_head=4,
            n_positions=64,
            bos_token_id=0,
            eos_token_id=0,
            use_cache=False,
        )
    )


def _t5_encoder() -> nn.Module:
    return transformers.T5EncoderModel(
        transformers.T5Config(vocab_size=VOCAB, d_model=64, d_kv=16, d_ff=128, num_layers=2, num_heads=4)
    )


# name -> (builder, forward's inputs, in the order the wrapper takes them)
MODELS = {
    "bert": (_bert, ("input_ids", "attention_mask", "token_type_ids")),
    "gpt2": (_gpt2, ("input_ids", "attention_mask")),
    "t5_encoder": (_t5_encoder, ("input_ids", "attention_mask")),
}


class LastHiddenState(nn.Module):
    """The model called with its inputs by name (GPT-2's second positional
    argument is past_key_values, not the mask), returning the last hidden
    state: what a user wraps an HF model in to trace or export it."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor, token_type_ids: torch.Tensor | None = None
    ) -> torch.Tensor:
        kwargs = {} if token_type_ids is None else {"token_type_ids": token_type_ids}
        out = self.model(input_ids=input_ids, attention_mask=attention_mask, **kwargs)
        return out.last_hidden_state


def _model(name: str) -> tuple[nn.Module, tuple[str, ...]]:
    build, names = MODELS[name]
    torch.manual_seed(0)
    return LastHiddenState(build()).eval(), names


def _inputs(names: tuple[str, ...], batch: int = BATCH, seed: int = 0) -> tuple[torch.Tensor, ...]:
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(1, VOCAB, (batch, LENGTH), generator=g)
    mask = torch.ones(batch, LENGTH, dtype=torch.int64)
    mask[0, -3:] = 0  # the first sequence is padded
    by_name = {
        "input_ids": ids,
        "attention_mask": mask,
        "token_type_ids": torch.randint(0, 2, (batch, LENGTH), generator=g),
    }
    return tuple(by_name[n] for n in names)


def _close(got, want) -> None:
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape
    err = np.abs(got - want).max(initial=0.0)
    assert err <= tolerance(torch.float32) * max(1.0, np.abs(want).max(initial=0.0)), err


@pytest.mark.parametrize("name", sorted(MODELS))
def test_torch_swap_backend_matches_torch(name):
    net, names = _model(name)
    x = _inputs(names)
    model = ai3.swap_backend(net, "default", sample_input_shape=list(x))
    assert isinstance(model, ai3.Model), type(model)
    for batch, seed in ((BATCH, 1), (3, 2)):  # the batch stays free
        y = _inputs(names, batch, seed)
        with torch.no_grad():
            want = net(*y)
        _close(model(*y), want)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_onnx_export_matches_onnxruntime(name):
    ort = pytest.importorskip("onnxruntime")
    net, names = _model(name)
    x = _inputs(names)
    buf = io.BytesIO()
    torch.onnx.export(
        net,
        x,
        buf,
        input_names=list(names),
        output_names=["last_hidden_state"],
        dynamo=False,
        opset_version=17,
    )
    model = ai3.onnx.swap_backend(buf.getvalue(), "default", sample_input_shape=[tuple(t.shape) for t in x])
    assert isinstance(model, ai3.Model), type(model)
    session = ort.InferenceSession(buf.getvalue(), providers=["CPUExecutionProvider"])
    # The ONNX frontend folds the export's shape arithmetic for the sample
    # shape, so the model runs at that shape: two other inputs of it.
    for seed in (1, 2):
        feeds = {n: t.numpy() for n, t in zip(names, _inputs(names, seed=seed))}
        want = session.run(None, feeds)[0]
        _close(model(*feeds.values()), want)
    with torch.no_grad():
        _close(want, net(*_inputs(names, seed=2)))


if __name__ == "__main__":
    pytest_main.main(__file__)
