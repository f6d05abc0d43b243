"""Hugging Face transformer language models (issue 17) through swap_backend
with no fallback: BERT (BertModel: token ids, attention mask, token types),
GPT-2 (GPT2Model, and GPT2LMHeadModel's logits: causal mask, Conv1D's
addmm), T5's encoder (T5EncoderModel: relative position buckets from log,
min and int casts), T5 whole (T5Model: encoder, causal decoder and
cross-attention), Llama (LlamaModel: rotary positions, RMS norms, a gated
SiLU MLP, grouped-query attention), RoBERTa (RobertaModel: positions
from a cumsum of the padding mask, token types gathered by position) and
Bloom (ALiBi biases through baddbmm, a float32 softmax) and Falcon
(multi-query attention: one key/value head broadcast by sdpa), each (a) traced
from torch and compared with torch, and
(b) exported to ONNX and compared with ONNX Runtime on the same file; the
decoders and encoders that take ids and a mask are also called with token
ids alone. BART (its decoder's default mask is torch.ones of the batch's
size) and CLIP's text tower (its unused pooled output is dead code) run the
same way. Six vision families (ViT, CLIP's vision tower, Swin, ConvNeXt,
SegFormer, LeViT) and two speech encoders (Whisper's, wav2vec 2.0's with
its weight-normed conv) run through swap_backend against torch.

Nothing is downloaded: every model is built from a small config with random
weights (HF_HUB_OFFLINE=1, seeded), in eval mode, and run on batch 2,
length 8 (T5's decoder 5), the first sequence padded (mask 0 on 3 tokens,
on the right, and on the left).

Tolerance: tolerances.tolerance(dtype) relative to max|reference| (float32
1e-4, float64 1e-10; the ONNX exports are float32).
"""

from __future__ import annotations

import os

os.environ["HF_HUB_OFFLINE"] = "1"  # before transformers is imported: nothing may be fetched

import inspect
import io
from collections.abc import Callable
from typing import Any

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
DECODER_LENGTH = 5  # T5's decoder: not the encoder's length, so cross-attention is not square


# The size of the BERT-shaped models' configs (BERT, Llama, RoBERTa).
_SMALL = dict(
    vocab_size=VOCAB,
    hidden_size=64,
    num_hidden_layers=2,
    num_attention_heads=4,
    intermediate_size=128,
    max_position_embeddings=64,
)


# The vision transformers' (ViT, CLIP).
_VISION_SMALL = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128)


def _bert() -> nn.Module:
    return transformers.BertModel(transformers.BertConfig(**_SMALL))


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


def _t5_config() -> Any:
    return transformers.T5Config(
        vocab_size=VOCAB,
        d_model=64,
        d_kv=16,
        d_ff=128,
        num_layers=2,
        num_heads=4,
        decoder_start_token_id=0,
        use_cache=False,
    )


def _llama() -> nn.Module:
    # The decoder most open language models share: rotary positions, RMS
    # norms, a gated SiLU MLP, and grouped-query attention (2 key/value
    # heads for 4 query heads).
    return transformers.LlamaModel(
        transformers.LlamaConfig(
            **_SMALL,
            num_key_value_heads=2,
            use_cache=False,
        )
    )


def _roberta() -> nn.Module:
    # BERT with positions counted from the padding (cumsum of the mask, in
    # int32) and token types gathered from a buffer by position.
    return transformers.RobertaModel(
        transformers.RobertaConfig(
            **_SMALL,
            pad_token_id=1,
        )
    )


def _bloom() -> nn.Module:
    # ALiBi position biases (slopes times positions counted from the mask,
    # int64 times float) added by baddbmm; a softmax cast to float32.
    return transformers.BloomModel(
        transformers.BloomConfig(vocab_size=VOCAB, hidden_size=64, n_layer=2, n_head=4, use_cache=False)
    )


def _funnel() -> nn.Module:
    # An encoder that pools its sequence between blocks; its token-type
    # matrix and class-token mask are built from ones of the batch's shape,
    # cast by type_as (constants that reach a where and a getitem).
    return transformers.FunnelModel(
        transformers.FunnelConfig(
            vocab_size=VOCAB, d_model=64, n_head=4, d_head=16, d_inner=128, block_sizes=[1, 1], num_decoder_layers=1
        )
    )


def _bart() -> nn.Module:
    # An encoder-decoder whose decoder builds its default mask with
    # torch.ones(batch_size, length): a factory of a batch-dependent size.
    return transformers.BartModel(
        transformers.BartConfig(
            vocab_size=VOCAB, d_model=64, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
            decoder_attention_heads=4, encoder_ffn_dim=128, decoder_ffn_dim=128, max_position_embeddings=64,
            use_cache=False,
        )
    )  # fmt: skip


def _clip_text() -> nn.Module:
    # Its unused pooled output indexes the hidden states by the ids' argmax
    # (computed indices, which ai3 does not map): left out as dead code.
    return transformers.CLIPTextModel(transformers.CLIPTextConfig(**_VISION_SMALL, vocab_size=VOCAB))


def _falcon() -> nn.Module:
    # Multi-query attention: one key/value head, which sdpa broadcasts to
    # the query heads; its fused qkv split by list indices (qkv[..., [-2], :]).
    return transformers.FalconModel(
        transformers.FalconConfig(vocab_size=VOCAB, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                                  use_cache=False)
    )  # fmt: skip


def _gpt2_lm_head() -> nn.Module:
    # (its lm_head shares the token embedding's weight)
    return transformers.GPT2LMHeadModel(_gpt2().config)


class _Called(nn.Module):
    """An HF model called with its inputs by name (GPT-2's second positional
    argument is past_key_values, not the mask), returning one field of its
    output: what a user wraps an HF model in to trace or export it. The
    subclasses differ only in forward's inputs."""

    def __init__(self, model: nn.Module, output: str):
        super().__init__()
        self.model = model
        self.output = output

    def call(self, **inputs: torch.Tensor) -> torch.Tensor:
        return getattr(self.model(**inputs), self.output)


class _Ids(_Called):
    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        return self.call(input_ids=input_ids, attention_mask=attention_mask)


class _IdsOnly(_Called):
    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        return self.call(input_ids=input_ids)


class _IdsAndTypes(_Called):
    def forward(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor, token_type_ids: torch.Tensor
    ) -> torch.Tensor:
        return self.call(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids)


class _EncoderDecoder(_Called):
    def forward(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor, decoder_input_ids: torch.Tensor
    ) -> torch.Tensor:
        return self.call(input_ids=input_ids, attention_mask=attention_mask, decoder_input_ids=decoder_input_ids)


# name -> (builder, wrapper, output field)
MODELS: dict[str, tuple[Callable[[], nn.Module], type[_Called], str]] = {
    "bart": (_bart, _EncoderDecoder, "last_hidden_state"),
    "bert": (_bert, _IdsAndTypes, "last_hidden_state"),
    "clip_text": (_clip_text, _Ids, "last_hidden_state"),
    "falcon": (_falcon, _Ids, "last_hidden_state"),
    "funnel": (_funnel, _Ids, "last_hidden_state"),
    "bloom": (_bloom, _Ids, "last_hidden_state"),
    "gpt2": (_gpt2, _Ids, "last_hidden_state"),
    "gpt2_lm_head": (_gpt2_lm_head, _Ids, "logits"),
    "llama": (_llama, _Ids, "last_hidden_state"),
    "roberta": (_roberta, _Ids, "last_hidden_state"),
    "t5_encoder": (lambda: transformers.T5EncoderModel(_t5_config()), _Ids, "last_hidden_state"),
    "t5": (lambda: transformers.T5Model(_t5_config()), _EncoderDecoder, "last_hidden_state"),
}


def _model(name: str) -> tuple[nn.Module, tuple[str, ...]]:
    """The wrapped model in eval mode, seeded, and its inputs' names."""
    build, wrapper, output = MODELS[name]
    torch.manual_seed(0)
    names = tuple(inspect.signature(wrapper.forward).parameters)[1:]
    return wrapper(build(), output).eval(), names


def _inputs(names: tuple[str, ...], batch: int = BATCH, seed: int = 0, left: bool = False) -> tuple[torch.Tensor, ...]:
    """The first sequence padded: on the right, or on the left (then under
    a causal mask its padded queries keep no key, rows torch's sdpa makes
    0)."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(1, VOCAB, (batch, LENGTH), generator=g)
    mask = torch.ones(batch, LENGTH, dtype=torch.int64)
    if left:
        mask[0, :3] = 0
    else:
        mask[0, -3:] = 0
    by_name = {
        "input_ids": ids,
        "attention_mask": mask,
        "token_type_ids": torch.randint(0, 2, (batch, LENGTH), generator=g),
        "decoder_input_ids": torch.randint(0, VOCAB, (batch, DECODER_LENGTH), generator=g),
    }
    return tuple(by_name[n] for n in names)


def _close(got, want, dtype=torch.float32) -> None:
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape
    # NaN exactly where the framework gives NaN (a float64 Bloom's left-padded
    # rows: its softmax casts the float64 minimum to float32's -inf).
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(got), nan)
    err = np.abs(np.where(nan, 0.0, got - want)).max(initial=0.0)
    assert err <= tolerance(dtype) * max(1.0, np.abs(np.where(nan, 0.0, want)).max(initial=0.0)), err


# T5's layer norm computes its variance in float32 whatever the model's
# dtype (`hidden_states.to(torch.float32).pow(2).mean(-1)`): a float32
# island in a float64 model, which ai3 keeps (its constants in float32, the
# float64 * float32 product promoted as in PyTorch). Both sides round that
# variance to float32, each in its own order, so a float64 T5 agrees to
# float32's tolerance, not float64's. Llama's RMS norm does the same, and
# its rotary embedding computes cos and sin in float32, and Bloom its ALiBi
# biases and its attention's softmax.
_FLOAT32_ISLANDS = ("t5", "llama", "bloom")


@pytest.mark.parametrize(
    "name,dtype",
    [(n, torch.float32) for n in sorted(MODELS)] + [(n, torch.float64) for n in sorted(MODELS)],
)
def test_torch_swap_backend_matches_torch(name, dtype):
    net, names = _model(name)
    net = net.to(dtype)
    x = _inputs(names)
    model = ai3.swap_backend(net, "default", sample_input_shape=list(x))
    assert isinstance(model, ai3.Model), type(model)
    for batch, seed, left in ((BATCH, 1, False), (3, 2, False), (BATCH, 3, True)):  # the batch stays free
        y = _inputs(names, batch, seed, left)
        with torch.no_grad():
            want = net(*y)
        _close(model(*y), want, torch.float32 if name.startswith(_FLOAT32_ISLANDS) else dtype)


# Models whose whole output (every field of their ModelOutput) ai3 refuses,
# and why; their last_hidden_state runs (the tests above).
_WHOLE_OUTPUT_REFUSED = {
    # pooler_output: the hidden state at each sequence's argmax id
    "clip_text": "indexing by computed tensors",
}


@pytest.mark.parametrize("name", sorted(MODELS))
def test_unwrapped_model_by_name_matches_torch(name):
    """The Hugging Face model itself, no wrapper: its inputs named as a
    tokenizer's output names them, its result the model's own ModelOutput
    class with every field torch returns."""
    build, wrapper, _ = MODELS[name]
    torch.manual_seed(0)
    net = build().eval()
    names = tuple(inspect.signature(wrapper.forward).parameters)[1:]
    if name in _WHOLE_OUTPUT_REFUSED:  # refused by name, never run wrong
        with pytest.raises(ai3.UnsupportedOperation, match=_WHOLE_OUTPUT_REFUSED[name]):
            ai3.swap_backend(net, "default", sample_input_shape=dict(zip(names, _inputs(names))))
        return
    model = ai3.swap_backend(net, "default", sample_input_shape=dict(zip(names, _inputs(names))))
    assert model.input_names == list(names)
    y = dict(zip(names, _inputs(names, 3, seed=1, left=True)))
    got = model(**y)
    with torch.no_grad():
        want = net(**y)
    assert type(got) is type(want)
    assert list(got.keys()) == list(want.keys())
    for field in want.keys():
        _close(got[field], want[field])
    assert getattr(got, MODELS[name][2]) is got[MODELS[name][2]]


# Models whose forward without a mask ai3 refuses, and why.
_NEEDS_A_MASK = {
    # alibi.repeat(batch_size, 1, 1): a constant tiled by the batch size
    "bloom": "repeats [size, 1, 1] that depend on the batch size",
}


@pytest.mark.parametrize("name", sorted(n for n, (_, wrapper, _) in MODELS.items() if wrapper is _Ids))
def test_token_ids_alone_match_torch(name):
    """Called with token ids alone, as users most often call a model: the
    model builds its mask and position ids from the input's shape. Llama's
    check for packed sequences (torch.diff and cumsum of the position ids
    expanded along the batch, indexed per batch row) and its causal mask
    fold to constants that broadcast over the batch; a mask that is exactly
    causal runs as the core's causal attention."""
    build, _, output = MODELS[name]
    torch.manual_seed(0)
    net = _IdsOnly(build(), output).eval()
    if name in _NEEDS_A_MASK:  # refused by name, never run wrong
        with pytest.raises(ai3.UnsupportedOperation, match=_NEEDS_A_MASK[name].replace("[", r"\[")):
            ai3.swap_backend(net, "default", sample_input_shape=list(_inputs(("input_ids",))))
        return
    model = ai3.swap_backend(net, "default", sample_input_shape=list(_inputs(("input_ids",))))
    assert isinstance(model, ai3.Model), type(model)
    for batch, seed in ((BATCH, 1), (3, 2), (1, 3)):
        y = _inputs(("input_ids",), batch, seed)
        with torch.no_grad():
            want = net(*y)
        _close(model(*y), want)


def test_unwrapped_bert_by_position_defaults_token_types():
    """BertModel by position (its first two arguments): the token types
    left at their default are a constant (its buffer of zeros) expanded
    along the batch, whose embeddings become a constant operand."""
    torch.manual_seed(0)
    net = _bert().eval()
    names = ("input_ids", "attention_mask")
    model = ai3.swap_backend(net, "default", sample_input_shape=list(_inputs(names)))
    for batch, seed in ((BATCH, 1), (3, 2)):
        y = _inputs(names, batch, seed)
        with torch.no_grad():
            want = net(*y)
        _close(model(*y).last_hidden_state, want.last_hidden_state)


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
        # Batch and lengths free, as a user exports for serving.
        dynamic_axes={n: {0: "batch", 1: "decoder_length" if n.startswith("decoder") else "length"} for n in names},
    )
    # The inputs as ONNX Runtime's feeds name them.
    model = ai3.onnx.swap_backend(
        buf.getvalue(), "default", sample_input_shape={n: t.numpy() for n, t in zip(names, x)}
    )
    assert isinstance(model, ai3.Model), type(model)
    session = ort.InferenceSession(buf.getvalue(), providers=["CPUExecutionProvider"])
    # The ONNX frontend folds the export's shape arithmetic for the sample
    # shapes; other batches and lengths run in models built for them
    # (ai3.model.PerShape).
    for seed, left, batch, length in (
        (1, False, BATCH, LENGTH),
        (2, True, BATCH, LENGTH),
        (3, False, 3, 5),
        (4, True, 1, 6),
    ):
        feeds = {n: t[:, :length].numpy() for n, t in zip(names, _inputs(names, batch, seed=seed, left=left))}
        want = session.run(None, feeds)[0]
        _close(model(*feeds.values()), want)
    assert set(model.per_shape.models) == {
        tuple((b, min(n, DECODER_LENGTH) if name.startswith("decoder") else n) for name in names)
        for b, n in ((3, 5), (1, 6))
    }
    # And the export itself is the torch model's.
    feeds = {n: t.numpy() for n, t in zip(names, _inputs(names, seed=2, left=True))}
    with torch.no_grad():
        _close(session.run(None, feeds)[0], net(*_inputs(names, seed=2, left=True)))


# Hugging Face vision models from small configs (random weights), through
# swap_backend against torch at two batches: the image families users
# bring besides torchvision's (Swin's pooler is a 1-D pool, SegFormer's
# efficient attention a strided conv over the keys, LeViT's attention
# biases gathered by index).
_VISION = {
    "vit": lambda: transformers.ViTModel(transformers.ViTConfig(image_size=32, patch_size=8, **_VISION_SMALL)),
    "clip_vision": lambda: transformers.CLIPVisionModel(
        transformers.CLIPVisionConfig(image_size=32, patch_size=8, **_VISION_SMALL)
    ),
    "swin": lambda: transformers.SwinModel(
        transformers.SwinConfig(
            image_size=32, patch_size=4, embed_dim=16, depths=[1, 1], num_heads=[2, 4], window_size=4
        )
    ),
    "convnext": lambda: transformers.ConvNextModel(
        transformers.ConvNextConfig(hidden_sizes=[16, 32, 64, 128], depths=[1, 1, 1, 1])
    ),
    "segformer": lambda: transformers.SegformerModel(
        transformers.SegformerConfig(
            num_encoder_blocks=2,
            depths=[1, 1],
            sr_ratios=[2, 1],
            hidden_sizes=[16, 32],
            num_attention_heads=[1, 2],
            mlp_ratios=[2, 2],
            strides=[4, 2],
            patch_sizes=[7, 3],
        )
    ),  # fmt: skip
    "levit": lambda: transformers.LevitModel(transformers.LevitConfig(image_size=64)),
}


class _Pixels(nn.Module):
    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, pixel_values: torch.Tensor) -> torch.Tensor:
        return self.model(pixel_values=pixel_values).last_hidden_state


@pytest.mark.parametrize("name", sorted(_VISION))
def test_vision_models_match_torch(name):
    torch.manual_seed(0)
    net = _Pixels(_VISION[name]()).eval()
    size = 64 if name in ("convnext", "segformer", "levit") else 32
    model = ai3.swap_backend(net, "default", sample_input_shape=(BATCH, 3, size, size))
    for batch in (BATCH, 3):
        x = torch.randn(batch, 3, size, size)
        with torch.no_grad():
            want = net(x)
        _close(model(x), want)


# Speech encoders: Whisper's (conv1d front end, sinusoidal positions) and
# wav2vec 2.0's (a conv feature extractor, group norm, a weight-normed
# (parametrized) positional conv1d), from small configs against torch.
_AUDIO = {
    "whisper_encoder": (
        lambda: transformers.WhisperModel(
            transformers.WhisperConfig(
                vocab_size=VOCAB, num_mel_bins=16, max_source_positions=16, d_model=64, encoder_layers=2,
                decoder_layers=2, encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=128,
                decoder_ffn_dim=128, pad_token_id=0, bos_token_id=0, eos_token_id=0, decoder_start_token_id=0,
            )
        ).get_encoder(),
        "input_features",
        (BATCH, 16, 32),
    ),
    "wav2vec2": (
        lambda: transformers.Wav2Vec2Model(
            transformers.Wav2Vec2Config(
                **_VISION_SMALL, conv_dim=(16, 16), conv_stride=(5, 2), conv_kernel=(10, 3),
                num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=4,
            )
        ),
        "input_values",
        (BATCH, 400),
    ),
}  # fmt: skip


class _Audio(nn.Module):
    def __init__(self, model: nn.Module, key: str):
        super().__init__()
        self.model = model
        self.key = key

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.model(**{self.key: x}).last_hidden_state


@pytest.mark.parametrize("name", sorted(_AUDIO))
def test_audio_encoders_match_torch(name):
    build, key, shape = _AUDIO[name]
    torch.manual_seed(0)
    net = _Audio(build(), key).eval()
    model = ai3.swap_backend(net, "default", sample_input_shape=shape)
    for batch in (BATCH, 3):
        x = torch.randn(batch, *shape[1:])
        with torch.no_grad():
            want = net(x)
        _close(model(x), want)


if __name__ == "__main__":
    pytest_main.run(__file__)
