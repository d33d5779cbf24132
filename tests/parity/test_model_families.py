"""Parity of refimpl's per-layer schedule with transformers on real model configs.

The configs are in ``configs/`` with their sources in ``configs/SOURCES.md`` (released files
copied unchanged, transformers config-class defaults and hand-made variants, each labelled in
its file name). No weights are loaded and no whole model is built:

* the model's rotary module is built from the real config and called on sampled positions up
  to 131071: its float32 ``inv_freq`` against refimpl's float32 emulation (equal except the
  pairs in ``POW_ULP_PAIRS``, where torch's float32 ``pow`` is off by 1 ulp), its attention
  scaling against ``spec.attention_scaling`` (equal), its cos/sin against
  ``spec.cos_sin(..., precision="transformers-float32")`` (within ``(a + 2) 2**-24``, on the
  pow pairs within the drift bound that grows with the position);
* one attention layer per distinct layer of the schedule is built from the config with small
  projections (head widths and every rope field kept) and run once with random weights: the
  model's own rotation function (``apply_rotary_pos_emb`` and its family variants) is recorded
  with the module that called it, so the test sees which layers rotate (NoPE layers never call
  it), what goes in and what comes out (against ``spec.apply``, or ``LayerRope.indexer`` for a
  DeepSeek Sparse Attention indexer's call), which layers have an indexer, and the query scale
  and softmax scale handed to attention (against ``LayerRope.query_scaling``); a model with no
  rotary module (Kimi Linear) must have no RoPE layer;
* the records: every config-class default a :mod:`refimpl.families` record declares is the
  class's, every wrapper's text type is the class's; Llama 3's float32 emulation against
  torch at bases 1e4 to 1.2e7; Dual Chunk Attention read and ignored by transformers.

Versions: torch 2.13.0 (CPU), transformers 5.24.0 (``make test-parity``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import json
import pathlib
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="parity tests need torch (make test-parity)")
transformers = pytest.importorskip(
    "transformers", reason="parity tests need transformers (make test-parity)"
)

from refimpl.config import rope_from_config, rope_schedule  # noqa: E402

CONFIGS = pathlib.Path(__file__).resolve().parent / "configs"
MAX_POS = 131072
U32 = 2.0**-24  # unit roundoff of float32
SEQ_ATTENTION = 48  # positions fed through one attention layer


@dataclasses.dataclass(frozen=True)
class Family:
    """How to build a family's rotary module and attention layer in transformers."""

    module: str  # transformers.models.<module>.modeling_<module>
    config_class: str
    rotary: str
    attention: str
    rotate_fns: tuple[str, ...] = ("apply_rotary_pos_emb",)  # the model's rotation functions
    per_layer_type: bool = False  # rotary forward takes layer_type (Gemma 3/4)
    decoder: str = ""  # decoder layer class (default: <attention without "Attention">DecoderLayer)
    attention_attr: str = "self_attn"
    attention_kwargs: tuple = ()  # extra forward keywords: (name, factory)
    table_only: bool = False  # the rotary module keeps a sin/cos table, no inv_freq (GPT-J)
    causal_mask: bool = False  # the attention needs a 4-D additive mask (the DSA indexer)
    rope_key: str = ""  # rotary forward takes layer_type=<the schedule spec's rope key>
    layer_index: bool = True  # the layer and attention classes take the layer's index
    # (config key listing layer indices, decoder class) or (layer_types, a type, decoder class)
    other_decoder: tuple = ()
    linear_attention: str = ""  # the attention class of linear layers (MiniMax's lightning)
    attention_from_layer: bool = False  # the decoder layer passes the attention its head counts
    slot_positions: bool = False  # the indexer takes position_ids as cache slots (MiniMax-M3)
    block_keys: bool = False  # the indexer rotates pooled key blocks at their first position


FAMILIES = {
    "deepseek_v2": Family(
        "deepseek_v2",
        "DeepseekV2Config",
        "DeepseekV2RotaryEmbedding",
        "DeepseekV2Attention",
        ("apply_rotary_emb",),
    ),
    "deepseek_v3": Family(
        "deepseek_v3",
        "DeepseekV3Config",
        "DeepseekV3RotaryEmbedding",
        "DeepseekV3Attention",
        ("apply_rotary_pos_emb", "apply_rotary_pos_emb_interleave"),
    ),
    "kimi_k2": Family(  # Kimi-K2 ships DeepSeek-V3's code (architectures DeepseekV3ForCausalLM)
        "deepseek_v3",
        "DeepseekV3Config",
        "DeepseekV3RotaryEmbedding",
        "DeepseekV3Attention",
        ("apply_rotary_pos_emb", "apply_rotary_pos_emb_interleave"),
    ),
    "gemma2": Family("gemma2", "Gemma2Config", "Gemma2RotaryEmbedding", "Gemma2Attention"),
    "gemma3_text": Family(
        "gemma3",
        "Gemma3TextConfig",
        "Gemma3RotaryEmbedding",
        "Gemma3Attention",
        per_layer_type=True,
    ),
    "gemma4_text": Family(
        "gemma4",
        "Gemma4TextConfig",
        "Gemma4TextRotaryEmbedding",
        "Gemma4TextAttention",
        per_layer_type=True,
        attention_kwargs=(("shared_kv_states", dict),),
    ),
    "llama4_text": Family(
        "llama4",
        "Llama4TextConfig",
        "Llama4TextRotaryEmbedding",
        "Llama4TextAttention",
        ("apply_rotary_emb",),
    ),
    "smollm3": Family("smollm3", "SmolLM3Config", "SmolLM3RotaryEmbedding", "SmolLM3Attention"),
    "cohere": Family("cohere", "CohereConfig", "CohereRotaryEmbedding", "CohereAttention"),
    "cohere2": Family("cohere2", "Cohere2Config", "Cohere2RotaryEmbedding", "Cohere2Attention"),
    "glm4": Family("glm4", "Glm4Config", "Glm4RotaryEmbedding", "Glm4Attention"),
    "glm4v_text": Family(
        "glm4v", "Glm4vTextConfig", "Glm4vTextRotaryEmbedding", "Glm4vTextAttention"
    ),
    "glm_ocr_text": Family(
        "glm_ocr", "GlmOcrTextConfig", "GlmOcrTextRotaryEmbedding", "GlmOcrTextAttention"
    ),
    "helium": Family("helium", "HeliumConfig", "HeliumRotaryEmbedding", "HeliumAttention"),
    "openai_privacy_filter": Family(
        "openai_privacy_filter",
        "OpenAIPrivacyFilterConfig",
        "OpenAIPrivacyFilterRotaryEmbedding",
        "OpenAIPrivacyFilterAttention",
        decoder="OpenAIPrivacyFilterEncoderLayer",
        layer_index=False,
    ),
    "afmoe": Family("afmoe", "AfmoeConfig", "AfmoeRotaryEmbedding", "AfmoeAttention"),
    **{
        name: Family(
            "blt", cls, "BltRotaryEmbedding", "BltSelfAttention", decoder="BltTransformerLayer"
        )
        for name, cls in (
            ("blt_global_transformer", "BltGlobalTransformerConfig"),
            ("blt_local_decoder", "BltLocalDecoderConfig"),
            ("blt_local_encoder", "BltLocalEncoderConfig"),
            ("blt_patcher", "BltPatcherConfig"),
        )
    },
    "moonshine_streaming": Family(
        "moonshine_streaming",
        "MoonshineStreamingConfig",
        "MoonshineStreamingRotaryEmbedding",
        "MoonshineStreamingAttention",
        decoder="MoonshineStreamingDecoderLayer",
        attention_from_layer=True,
    ),
    "mllama_text_model": Family(
        "mllama",
        "MllamaTextConfig",
        "MllamaRotaryEmbedding",
        "MllamaTextSelfAttention",
        decoder="MllamaSelfAttentionDecoderLayer",
        other_decoder=("cross_attention_layers", "MllamaCrossAttentionDecoderLayer"),
    ),
    "minimax": Family(
        "minimax",
        "MiniMaxConfig",
        "MiniMaxRotaryEmbedding",
        "MiniMaxAttention",
        linear_attention="MiniMaxLightningAttention",
    ),
    "olmo_hybrid": Family(
        "olmo_hybrid",
        "OlmoHybridConfig",
        "OlmoHybridRotaryEmbedding",
        "OlmoHybridAttention",
        decoder="OlmoHybridAttentionDecoderLayer",
        other_decoder=("layer_types", "linear_attention", "OlmoHybridLinearAttentionDecoderLayer"),
    ),
    "kolibri1": Family(
        "kolibri1", "Kolibri1Config", "Kolibri1RotaryEmbedding", "Kolibri1Attention"
    ),
    "glm_image_text": Family(
        "glm_image", "GlmImageTextConfig", "GlmImageTextRotaryEmbedding", "GlmImageTextAttention"
    ),
    "flint": Family("flint", "FlintConfig", "FlintRotaryEmbedding", "FlintAttention"),
    "ministral3": Family(
        "ministral3",
        "Ministral3Config",
        "Ministral3RotaryEmbedding",
        "Ministral3Attention",
    ),
    "qwen2_5_vl_text": Family(
        "qwen2_5_vl", "Qwen2_5_VLTextConfig", "Qwen2_5_VLRotaryEmbedding", "Qwen2_5_VLAttention"
    ),
    "qwen3_vl_text": Family(
        "qwen3_vl", "Qwen3VLTextConfig", "Qwen3VLTextRotaryEmbedding", "Qwen3VLTextAttention"
    ),
    "qwen3_next": Family(
        "qwen3_next", "Qwen3NextConfig", "Qwen3NextRotaryEmbedding", "Qwen3NextAttention"
    ),
    "exaone4": Family("exaone4", "Exaone4Config", "Exaone4RotaryEmbedding", "Exaone4Attention"),
    "hunyuan_v1_dense": Family(
        "hunyuan_v1_dense",
        "HunYuanDenseV1Config",
        "HunYuanDenseV1RotaryEmbedding",
        "HunYuanDenseV1Attention",
    ),
    "hunyuan_v1_moe": Family(
        "hunyuan_v1_moe",
        "HunYuanMoEV1Config",
        "HunYuanMoEV1RotaryEmbedding",
        "HunYuanMoEV1Attention",
    ),
    "ministral": Family(
        "ministral", "MinistralConfig", "MinistralRotaryEmbedding", "MinistralAttention"
    ),
    "nemotron": Family(
        "nemotron", "NemotronConfig", "NemotronRotaryEmbedding", "NemotronAttention"
    ),
    "chameleon": Family(
        "chameleon", "ChameleonConfig", "ChameleonRotaryEmbedding", "ChameleonAttention"
    ),
    "dots1": Family("dots1", "Dots1Config", "Dots1RotaryEmbedding", "Dots1Attention"),
    "lfm2_moe": Family("lfm2_moe", "Lfm2MoeConfig", "Lfm2MoeRotaryEmbedding", "Lfm2MoeAttention"),
    "deepseek_ocr2_text": Family(
        "deepseek_ocr2",
        "DeepseekOcr2TextConfig",
        "DeepseekOcr2TextRotaryEmbedding",
        "DeepseekOcr2TextAttention",
    ),
    "diffusion_gemma_text": Family(
        "diffusion_gemma",
        "DiffusionGemmaTextConfig",
        "DiffusionGemmaTextRotaryEmbedding",
        "DiffusionGemmaEncoderTextAttention",
        per_layer_type=True,
        decoder="DiffusionGemmaEncoderTextLayer",
    ),
    "qwen3_omni_moe_talker_text": Family(
        "qwen3_omni_moe",
        "Qwen3OmniMoeTalkerTextConfig",
        "Qwen3OmniMoeTalkerRotaryEmbedding",
        "Qwen3OmniMoeThinkerTextAttention",
        decoder="Qwen3OmniMoeTalkerDecoderLayer",
    ),
    "t5gemma2_text": Family(
        "t5gemma2",
        "T5Gemma2TextConfig",
        "T5Gemma2RotaryEmbedding",
        "T5Gemma2SelfAttention",
        per_layer_type=True,
        decoder="T5Gemma2EncoderLayer",
    ),
    "dbrx": Family(
        "dbrx",
        "DbrxConfig",
        "DbrxRotaryEmbedding",
        "DbrxAttention",
        decoder="DbrxNormAttentionNorm",
        attention_attr="attn",
    ),
    "hunyuan_vl_text": Family(
        "hunyuan_vl",
        "HunYuanVLTextConfig",
        "HunYuanVLRotaryEmbedding",
        "HunYuanVLDenseV1Attention",
    ),
    "ernie4_5": Family(
        "ernie4_5", "Ernie4_5Config", "Ernie4_5RotaryEmbedding", "Ernie4_5Attention"
    ),
    "gpt_oss": Family("gpt_oss", "GptOssConfig", "GptOssRotaryEmbedding", "GptOssAttention"),
    **{
        name: Family(
            name,
            cls,
            f"{prefix}RotaryEmbedding",
            f"{prefix}Attention",
            ("apply_rotary_pos_emb", "apply_rotary_pos_emb_interleave"),
        )
        for name, cls, prefix in (
            ("axk1", "AXK1Config", "AXK1"),
            ("youtu", "YoutuConfig", "Youtu"),
        )
    },
    **{
        name: Family(module, cls, f"{prefix}RotaryEmbedding", f"{prefix}Attention")
        for name, module, cls, prefix in (
            ("apertus1p5_text", "apertus1p5", "Apertus1p5TextConfig", "Apertus1p5Text"),
            ("aria_text", "aria", "AriaTextConfig", "AriaText"),
            (
                "granite4_vision_text",
                "granite4_vision",
                "Granite4VisionTextConfig",
                "Granite4VisionText",
            ),
            (
                "granite_docling_text",
                "granite_docling",
                "GraniteDoclingTextConfig",
                "GraniteDoclingText",
            ),
            ("hyperclovax", "hyperclovax", "HyperCLOVAXConfig", "HyperCLOVAX"),
        )
    },
    "minicpm3": Family(
        "minicpm3", "MiniCPM3Config", "MiniCPM3RotaryEmbedding", "MiniCPM3Attention"
    ),
    "axk2": Family(
        "axk2",
        "AXK2Config",
        "AXK2RotaryEmbedding",
        "AXK2Attention",
        ("apply_rotary_pos_emb", "apply_rotary_pos_emb_interleave"),
        causal_mask=True,
    ),
    "deepseek_v32": Family(
        "deepseek_v32",
        "DeepseekV32Config",
        "DeepseekV32RotaryEmbedding",
        "DeepseekV32Attention",
        ("apply_rotary_pos_emb", "apply_rotary_pos_emb_interleave"),
        causal_mask=True,
    ),
    "glm_moe_dsa": Family(
        "glm_moe_dsa",
        "GlmMoeDsaConfig",
        "GlmMoeDsaRotaryEmbedding",
        "GlmMoeDsaAttention",
        ("apply_rotary_pos_emb_interleave",),
        causal_mask=True,
    ),
    "hy_v4_vl_text": Family(
        "hy_v4_vl",
        "HYV4VLTextConfig",
        "HYV4VLRotaryEmbedding",
        "HYV4VLAttention",
        causal_mask=True,
    ),
    "dots3_note_text": Family(
        "dots3_note",
        "Dots3NoteTextConfig",
        "Dots3NoteTextRotaryEmbedding",
        "Dots3NoteTextAttention",
        ("apply_rotary_pos_emb_interleave",),
        per_layer_type=True,
        causal_mask=True,
    ),
    "minimax_m3_vl_text": Family(
        "minimax_m3_vl",
        "MiniMaxM3VLTextConfig",
        "MiniMaxM3VLRotaryEmbedding",
        "MiniMaxM3VLAttention",
        causal_mask=True,
        slot_positions=True,
    ),
    "qwen4_exp_text": Family(
        "qwen4_exp",
        "Qwen4ExpTextConfig",
        "Qwen4ExpTextRotaryEmbedding",
        "Qwen4ExpTextAttention",
        causal_mask=True,
        block_keys=True,
    ),
    "kimi_linear": Family(  # no rotary module at all: every layer is NoPE
        "kimi_linear", "KimiLinearConfig", "", "KimiLinearMLAAttention", ()
    ),
    "lfm2": Family("lfm2", "Lfm2Config", "Lfm2RotaryEmbedding", "Lfm2Attention"),
    "zamba2": Family("zamba2", "Zamba2Config", "Zamba2RotaryEmbedding", "Zamba2Attention"),
    "olmo3": Family(
        "olmo3", "Olmo3Config", "Olmo3RotaryEmbedding", "Olmo3Attention", per_layer_type=True
    ),
    "qwen3_5_text": Family(
        "qwen3_5", "Qwen3_5TextConfig", "Qwen3_5TextRotaryEmbedding", "Qwen3_5Attention"
    ),
    "qwen3_5_moe_text": Family(
        "qwen3_5_moe",
        "Qwen3_5MoeTextConfig",
        "Qwen3_5MoeTextRotaryEmbedding",
        "Qwen3_5MoeAttention",
    ),
    "llama": Family("llama", "LlamaConfig", "LlamaRotaryEmbedding", "LlamaAttention"),
    "exaone_moe": Family(
        "exaone_moe", "ExaoneMoeConfig", "ExaoneMoeRotaryEmbedding", "ExaoneMoeAttention"
    ),
    "laguna": Family(
        "laguna", "LagunaConfig", "LagunaRotaryEmbedding", "LagunaAttention", per_layer_type=True
    ),
    "step3p5": Family(
        "step3p7",
        "Step3p7TextConfig",
        "Step3p7RotaryEmbedding",
        "Step3p7Attention",
        per_layer_type=True,
        decoder="Step3p7DecoderLayer",
    ),
    "mellum": Family(
        "mellum", "MellumConfig", "MellumRotaryEmbedding", "MellumAttention", per_layer_type=True
    ),
    "mimo_v2_flash": Family(
        "mimo_v2_flash",
        "MiMoV2FlashConfig",
        "MiMoV2FlashRotaryEmbedding",
        "MiMoV2FlashAttention",
        per_layer_type=True,
    ),
    "modernbert-decoder": Family(
        "modernbert_decoder",
        "ModernBertDecoderConfig",
        "ModernBertDecoderRotaryEmbedding",
        "ModernBertDecoderAttention",
        per_layer_type=True,
        decoder="ModernBertDecoderLayer",
        attention_attr="attn",
    ),
    "jetmoe": Family(
        "jetmoe",
        "JetMoeConfig",
        "JetMoeRotaryEmbedding",
        "JetMoeAttention",
        attention_attr="self_attention",
    ),
    "qwen2": Family("qwen2", "Qwen2Config", "Qwen2RotaryEmbedding", "Qwen2Attention"),
    "deepseek_v4": Family(
        "deepseek_v4",
        "DeepseekV4Config",
        "DeepseekV4RotaryEmbedding",
        "DeepseekV4Attention",
        rope_key="rope",
    ),
    "gptj": Family(
        "gptj",
        "GPTJConfig",
        "GPTJRotaryEmbedding",
        "GPTJAttention",
        decoder="GPTJBlock",
        attention_attr="attn",
        table_only=True,
    ),
}

# stored configs that refimpl refuses (with what the refusal names), kept for the coverage
# table; every other file must read to a schedule
REFUSED_FILES = {
    # transformers 5.24 splits each pair's two features across position rows
    "hunyuan-ocr-text.xdrope.handmade.json": r"xdrope_section \[16, 16, 16, 16\].*different rows",
}
CONFIG_FILES = sorted(p.name for p in CONFIGS.glob("*.json") if p.name not in REFUSED_FILES)


@pytest.mark.parametrize("name", sorted(REFUSED_FILES))
def test_refused_files_are_refused(name):
    with pytest.raises(ValueError, match=REFUSED_FILES[name]):
        rope_schedule(_load(name))


# (config file, layer type) -> pairs whose float32 inv_freq from torch differs by exactly 1
# float32 ulp from refimpl's float32 emulation (torch's float32 pow is not correctly rounded).
# Measured with torch 2.13.0 CPU; asserted as an exact set so a change is seen.
POW_ULP_PAIRS: dict[tuple[str, str], list[int]] = {
    ("gemma2-2b.json", "full_attention"): [111],
    ("gemma2-2b.json", "sliding_attention"): [111],
    ("gemma2-9b.json", "full_attention"): [111],
    ("gemma2-9b.json", "sliding_attention"): [111],
    ("gemma3-12b-it.json", "full_attention"): [74],
    ("gemma3-12b-it.json", "sliding_attention"): [111],
    ("gemma3-12b-it.transformers5.json", "full_attention"): [74],
    ("gemma3-12b-it.transformers5.json", "sliding_attention"): [111],
    ("gemma3-1b-it.json", "full_attention"): [74],
    ("gemma3-1b-it.json", "sliding_attention"): [111],
    ("gemma3-27b-it.reduced.json", "full_attention"): [37],
    ("gemma3-text.transformers-defaults.json", "full_attention"): [74],
    ("gemma3-text.transformers-defaults.json", "sliding_attention"): [111],
    ("gemma4-text.transformers-defaults.json", "full_attention"): [29],
    ("gemma4-text.transformers-defaults.json", "sliding_attention"): [111],
    ("gpt-oss-20b.json", "full_attention"): [6, 10],
    ("gpt-oss-20b.json", "sliding_attention"): [6, 10],
    ("hunyuan-v1-dense.handmade.json", "full_attention"): [48],
    ("hunyuan-vl-text.position-row.handmade.json", "full_attention"): [48],
    ("kimi-k2-instruct-0905.excerpt.json", "full_attention"): [5],
    ("ministral3-3b-2512.json", "full_attention"): [37],
    ("qwen2.5-vl-text.handmade.json", "full_attention"): [37],
    ("qwen2.5-vl-text.transformers-defaults.json", "full_attention"): [37],
    ("smollm3-3b.json", "full_attention"): [19],
    ("gemma3-4b.diff-style.handmade.json", "full_attention"): [74],
    ("gemma3-4b.diff-style.handmade.json", "sliding_attention"): [111],
    ("voxtral.transformers-defaults.json", "full_attention"): [37, 44, 59],
    ("openai-privacy-filter.transformers-defaults.json", "full_attention"): [6, 10],
    ("apertus1p5-text.transformers-defaults.json", "full_attention"): [34, 55],
    ("minimax.transformers-defaults.json", "full_attention"): [37],
    ("dots3-note-text.legacy.handmade.json", "indexed_attention"): [20],
    ("dots3-note-text.transformers-defaults.json", "indexed_attention"): [20],
    ("dots3-note-text.transformers-defaults.json", "sliding_attention"): [5],
    ("minimax-m3-vl-text.transformers-defaults.json", "full_attention"): [19],
    ("diffusion-gemma-text.handmade.json", "full_attention"): [29],
    ("diffusion-gemma-text.handmade.json", "sliding_attention"): [111],
    ("dots1.handmade.json", "full_attention"): [30],
    ("t5gemma2-text.handmade.json", "full_attention"): [74],
    ("t5gemma2-text.handmade.json", "sliding_attention"): [111],
}


# Files whose top-level model_type is not the Hub file's: the mlc-llm preset of Ministral 3
# writes the text type at top level, where Ministral3Config would ignore text_config (refimpl
# refuses that form: tests/test_families.py); the Hub file names the wrapper 'mistral3'.
HUB_MODEL_TYPE = {"ministral3-3b-2512.json": "mistral3"}


def _load(name: str) -> dict:
    cfg = json.loads((CONFIGS / name).read_text(encoding="utf8"))
    if name in HUB_MODEL_TYPE:
        cfg["model_type"] = HUB_MODEL_TYPE[name]
    return cfg


def _text(cfg: dict) -> dict:
    """The language model's config: ``text_config`` of a multimodal file, else the file."""
    return cfg.get("text_config", cfg)


def _family(cfg: dict) -> Family:
    inner = cfg.get("text_config", {})
    for key in (inner.get("model_type"), cfg.get("model_type")):
        if key in FAMILIES:
            return FAMILIES[key]
    raise KeyError(f"no transformers family for model_type {cfg.get('model_type')!r}")


def _hf_module(fam: Family):
    return importlib.import_module(f"transformers.models.{fam.module}.modeling_{fam.module}")


def _hf_config(name: str, **overrides):
    cfg = _load(name)
    fam = _family(cfg)
    body = {**_text(cfg), **overrides}
    body.pop("model_type", None)
    return getattr(transformers, fam.config_class)(**body), fam


def _positions(top: int = MAX_POS) -> np.ndarray:
    rng = np.random.default_rng(0)
    tail = rng.integers(0, top, size=2000)
    return np.unique(np.concatenate([np.arange(1024), tail, [top - 1]])).astype(np.int64)


def _half_tables(cos: np.ndarray, sin: np.ndarray, h: int) -> tuple[np.ndarray, np.ndarray]:
    """The (n, h) per-pair tables from a module's output (complex, cat or repeat_interleave)."""
    if cos.shape[-1] == h:
        return cos, sin
    if np.array_equal(cos[:, :h], cos[:, h : 2 * h]):
        return cos[:, :h], sin[:, :h]
    assert np.array_equal(cos[:, 0::2], cos[:, 1::2]), "unknown cos/sin layout"
    return cos[:, 0::2], sin[:, 0::2]


@dataclasses.dataclass
class PeerTables:
    inv_freq: np.ndarray | None  # None where the module keeps only a table (GPT-J)
    attention_scaling: float
    cos: np.ndarray
    sin: np.ndarray


_PEER: dict[tuple[str, str], PeerTables] = {}


def _max_position(name: str) -> int:
    """Positions sampled below this: 131072, or the table length of a table-only module."""
    hf_cfg, fam = _hf_config(name)
    return min(MAX_POS, hf_cfg.max_position_embeddings) if fam.table_only else MAX_POS


def _peer_tables(name: str, layer_type: str, positions: np.ndarray) -> PeerTables:
    key = (name, layer_type)
    if key in _PEER:
        return _PEER[key]
    hf_cfg, fam = _hf_config(name)
    rot = getattr(_hf_module(fam), fam.rotary)(hf_cfg)
    x = torch.zeros(1, dtype=torch.float32)
    pid = torch.from_numpy(positions)[None, :]
    key = _rope_key(fam, layer_type)
    extra = {"layer_type": key} if fam.per_layer_type or fam.rope_key else {}
    with torch.no_grad():
        out = rot(x, pid, **extra)
    prefix = f"{key}_" if fam.per_layer_type or fam.rope_key else ""
    if fam.table_only:  # GPT-J: (sin, cos), each (B, S, rotary_dim / 2), no scaling
        sin, cos = out[0][0].numpy(), out[1][0].numpy()
        _PEER[key] = PeerTables(None, 1.0, cos, sin)
        return _PEER[key]
    inv = getattr(rot, f"{prefix}inv_freq").numpy().astype(np.float32)
    scaling = getattr(rot, f"{prefix}attention_scaling")
    if torch.is_tensor(out):  # complex freqs_cis (Llama 4, DeepSeek-V2)
        cos, sin = out.real[0].numpy(), out.imag[0].numpy()
    else:
        cos, sin = out[0][0].numpy(), out[1][0].numpy()
    cos, sin = _half_tables(cos, sin, inv.shape[0])
    _PEER[key] = PeerTables(inv, float(scaling), cos, sin)
    return _PEER[key]


def _rope_key(fam: Family, layer_type: str) -> str:
    """The rotary module's layer_type argument: the layer type, or DeepSeek-V4's rope label
    (sliding layers 'main', compressed ones 'compress')."""
    if fam.rope_key:
        return "main" if layer_type == "sliding_attention" else "compress"
    return layer_type


def _ulps(a32: np.ndarray, b32: np.ndarray) -> np.ndarray:
    ia = a32.astype(np.float32).view(np.int32).astype(np.int64)
    ib = b32.astype(np.float32).view(np.int32).astype(np.int64)
    return np.abs(ia - ib)


def _rope_layers(name: str) -> list[tuple[str, object]]:
    """(layer type, spec) of each distinct rotating layer of the schedule."""
    seen: dict[str, object] = {}
    for layer in rope_schedule(_load(name)):
        if layer.spec is not None and layer.layer_type not in seen:
            seen[layer.layer_type] = layer.spec
    return sorted(seen.items())


CASES = [(n, lt) for n in CONFIG_FILES for lt, _ in _rope_layers(n)]
MEASURED: dict[str, dict] = {}


@pytest.fixture(scope="module", autouse=True)
def _report():
    yield
    if MEASURED:
        print("\nmodel families: largest differences per config and layer type")
        for cid in sorted(MEASURED):
            row = ", ".join(f"{k}={v:.3g}" for k, v in sorted(MEASURED[cid].items()))
            print(f"  {cid}: {row}")


def _spec(name: str, layer_type: str):
    return dict(_rope_layers(name))[layer_type]


@pytest.mark.parametrize(("name", "layer_type"), CASES)
def test_inv_freq_and_attention_scaling(name, layer_type):
    spec = _spec(name, layer_type)
    # one layer type read alone is the schedule's spec for that type
    assert rope_from_config(_load(name), layer_type=layer_type).key() == spec.key()
    peer = _peer_tables(name, layer_type, _positions(_max_position(name)))
    assert peer.attention_scaling == spec.attention_scaling
    if peer.inv_freq is None:
        pytest.skip(f"{name}: the rotary module keeps only its sin/cos table (no inv_freq)")
    nonzero = spec.inv_freq != 0.0
    assert peer.inv_freq.shape == spec.inv_freq.shape
    assert np.array_equal(peer.inv_freq == 0.0, ~nonzero), f"{name} {layer_type}: zero pairs"
    ulps = _ulps(peer.inv_freq, spec.inv_freq_float32)
    row = MEASURED.setdefault(f"{name}:{layer_type}", {})
    row["inv_freq_ulp"] = float(ulps.max())
    assert ulps.max() <= 1, f"{name} {layer_type}: {ulps.max()} ulp"
    assert np.flatnonzero(ulps).tolist() == POW_ULP_PAIRS.get((name, layer_type), [])


@pytest.mark.parametrize(("name", "layer_type"), CASES)
def test_float32_cos_sin(name, layer_type):
    spec = _spec(name, layer_type)
    pos = _positions(_max_position(name))
    peer = _peer_tables(name, layer_type, pos)
    c32, s32 = spec.cos_sin(pos, precision="transformers-float32")
    bad = POW_ULP_PAIRS.get((name, layer_type), [])
    good = np.setdiff1d(np.arange(c32.shape[1]), bad)
    a = spec.attention_scaling
    tol = (a + 2.0) * U32  # 1 ulp of torch's cos/sin times a, and the product's rounding
    row = MEASURED.setdefault(f"{name}:{layer_type}", {})
    for mine, theirs in ((c32, peer.cos), (s32, peer.sin)):
        err = np.abs(mine[:, good].astype(np.float64) - theirs[:, good])
        row["cos_sin_f32"] = max(row.get("cos_sin_f32", 0.0), float(err.max()))
        assert err.max() <= tol, f"{name} {layer_type}: {err.max():.3g} > {tol:.3g}"
    if bad:  # (never for table-only modules: they have no inv_freq to compare)
        dtheta = np.abs(peer.inv_freq[bad].astype(np.float64) - spec.inv_freq_float32[bad])
        angle = pos[:, None] * peer.inv_freq[bad][None, :].astype(np.float64)
        bound = a * (pos[:, None] * dtheta + np.spacing(angle.astype(np.float32))) + 2.4e-7
        for mine, theirs in ((c32, peer.cos), (s32, peer.sin)):
            gap = np.abs(mine[:, bad] - theirs[:, bad])
            row["cos_sin_pow_pairs"] = max(row.get("cos_sin_pow_pairs", 0.0), float(gap.max()))
            assert np.all(gap <= bound)


# ---------------------------------------------------------------- one attention layer each


@dataclasses.dataclass
class Recorded:
    calls: list = dataclasses.field(default_factory=list)  # (caller class, [(before, after)])
    attention: list = dataclasses.field(default_factory=list)  # (query, key, scaling)
    q_proj: object = None  # output of the query projection, (B, S, H * D)


def _small_overrides(name: str) -> dict:
    """Narrow projections and few experts, same head widths and rope fields (read from the
    config as transformers builds it, class defaults included)."""
    cfg, fam = _hf_config(name)
    if getattr(cfg, "is_heterogeneous", False):  # Dots3's per_layer_config: its global values
        cfg.allow_global_per_layer_attribute_access = True
    text = _text(_load(name))
    heads = getattr(cfg, "num_attention_heads", None) or cfg.n_head
    width = getattr(cfg, "hidden_size", None) or cfg.n_embd
    if "head_dim" in text:  # Gemma 4's config refuses a global head_dim read
        head_dim = text["head_dim"] or width // heads
    else:
        head_dim = getattr(cfg, "head_dim", None) or width // heads
    out = {"num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": head_dim}
    out["hidden_size"] = 2 * head_dim
    if fam.module in MLA_MODULES:  # MLA: head_dim is the rope head
        del out["head_dim"]
        out["hidden_size"] = 64
    if fam.module == "moonshine_streaming":  # its queries are viewed with the kv head count
        out["num_key_value_heads"] = 2
    if fam.module == "zamba2":  # the head follows from hidden_size: 2 * hidden / heads
        out = {"num_attention_heads": 2, "num_key_value_heads": 2, "hidden_size": head_dim}
    for key in ("q_lora_rank", "kv_lora_rank"):
        if getattr(cfg, key, None):
            out[key] = 32
    if getattr(cfg, "index_n_heads", None):
        out["index_n_heads"] = 2
    if getattr(cfg, "num_attention_heads_per_layer", None):  # Laguna's per-layer head counts
        out["num_attention_heads_per_layer"] = [2] * len(cfg.num_attention_heads_per_layer)
    for key in ("num_experts", "n_routed_experts", "num_local_experts"):
        if getattr(cfg, key, None):
            out[key] = 2
    for key in ("intermediate_size", "moe_intermediate_size", "shared_expert_intermediate_size"):
        if getattr(cfg, key, None):
            out[key] = 16
    if fam.module == "qwen4_exp":  # its config class checks top-k against the expert count
        out["num_experts_per_tok"] = 1
    if fam.module == "dots3_note":  # MLA keys and values per query head, per layer type too
        small = {"num_attention_heads": 2, "num_key_value_heads": 2}
        small |= {"q_lora_rank": 32, "kv_lora_rank": 32}
        out["num_key_value_heads"] = 2
        if "per_layer_config" in text:
            out["per_layer_config"] = {
                k: {**v, **small} for k, v in text["per_layer_config"].items()
            }
        else:  # the class builds the sliding layers' overrides from the swa_* keys
            out |= {f"swa_{k}": v for k, v in small.items()}
    return out


MLA_MODULES = (
    "hy_v4_vl",
    "dots3_note",
    "deepseek_v2",
    "deepseek_v3",
    "deepseek_v32",
    "glm_moe_dsa",
    "axk1",
    "axk2",
    "minicpm3",
    "youtu",
)


@contextlib.contextmanager
def _recording(fam: Family, rec: Recorded):
    mod = _hf_module(fam)
    originals = {n: getattr(mod, n) for n in fam.rotate_fns}

    def wrap(fn_name, fn):
        def inner(*args, **kwargs):
            out = fn(*args, **kwargs)
            outs = out if isinstance(out, tuple) else (out,)
            ins = args[: len(outs)]
            pairs = [(a.clone(), o.clone()) for a, o in zip(ins, outs, strict=True)]
            caller = sys._getframe(1).f_locals.get("self")  # the attention or its indexer
            rec.calls.append((type(caller).__name__, pairs))
            return out

        return inner

    def capture(module, query, key, value, attention_mask, scaling=None, **kwargs):
        rec.attention.append((query.detach().clone(), key.detach().clone(), scaling))
        out = torch.zeros(query.shape[0], query.shape[2], query.shape[1], value.shape[-1])
        return out, None

    transformers.AttentionInterface.register("refimpl_record", capture)
    try:
        for n, fn in originals.items():
            setattr(mod, n, wrap(n, fn))
        yield
    finally:
        for n, fn in originals.items():
            setattr(mod, n, fn)


def _attention_class(fam: Family, hf_cfg, index: int):
    """The attention class the model's decoder layer builds at ``index`` (None: no attention,
    e.g. Qwen3-Next's linear-attention layers), found by building the layer on meta."""
    mod = _hf_module(fam)
    decoder = fam.decoder or fam.attention.replace("Attention", "DecoderLayer")
    if fam.other_decoder:  # Mllama's cross-attention layers, OLMo hybrid's linear ones
        key, *which, cls = fam.other_decoder
        chosen = getattr(hf_cfg, key)
        if (which and chosen[index] == which[0]) or (not which and index in chosen):
            decoder = cls
    args = (hf_cfg, index) if fam.layer_index else (hf_cfg,)
    with torch.device("meta"):
        layer = getattr(mod, decoder)(*args)
    attn = getattr(layer, fam.attention_attr, None)
    if attn is None or type(attn).__name__ == fam.linear_attention:
        return None
    return type(attn)


def _run_layer(name: str, index: int, pos: np.ndarray) -> Recorded | None:
    """Run the attention of layer ``index`` once at positions ``pos``; None if it has none."""
    hf_cfg, fam = _hf_config(name, **_small_overrides(name))
    hf_cfg._attn_implementation = "refimpl_record"
    mod = _hf_module(fam)
    if fam.module == "zamba2":  # the shared attention block runs inside the hybrid layers
        if hf_cfg.layers_block_type[index] != "hybrid":
            return None
        cls = mod.Zamba2Attention
        attn = cls(hf_cfg, layer_idx=-1, num_fwd_mem_blocks=1, block_id=0).eval()
        width = hf_cfg.attention_hidden_size
    else:
        cls = _attention_class(fam, hf_cfg, index)
        if cls is None:
            return None
        torch.manual_seed(index)
        try:
            if fam.attention_from_layer:
                raise TypeError(fam.attention)
            attn = (cls(hf_cfg, index) if fam.layer_index else cls(hf_cfg)).eval()
        except TypeError:  # per-layer arguments (Laguna's head count): the layer builds it
            decoder = fam.decoder or fam.attention.replace("Attention", "DecoderLayer")
            attn = getattr(getattr(mod, decoder)(hf_cfg, index), fam.attention_attr).eval()
        width = hf_cfg.hidden_size
    with torch.no_grad():  # parameters a class leaves as torch.empty (JetMoe's experts)
        for param in attn.parameters():
            if not torch.isfinite(param).all() or param.abs().max() > 1e3:
                param.normal_(0.0, 0.02)
    rot = getattr(mod, fam.rotary)(hf_cfg)
    pid = torch.from_numpy(pos)[None, :]
    hidden = torch.randn(1, pos.shape[0], width)
    layer_type = hf_cfg.layer_types[index] if getattr(hf_cfg, "layer_types", None) else None
    extra = {"layer_type": layer_type} if fam.per_layer_type else {}
    kwargs = {k: factory() for k, factory in fam.attention_kwargs}
    mask = None
    if fam.causal_mask:
        n = pos.shape[0]
        mask = torch.triu(torch.full((n, n), float("-inf")), diagonal=1)[None, None]
    if fam.module == "zamba2":
        kwargs["layer_idx"] = index
    if getattr(hf_cfg, "indexer_types", None) and hf_cfg.indexer_types[index] == "shared":
        n = pos.shape[0]  # a shared layer reuses the previous indexer's top-k: keep them all
        kwargs["prev_topk_indices"] = torch.arange(n, dtype=torch.int32).expand(1, n, n)
    rec = Recorded()
    if getattr(attn, "q_proj", None) is not None:
        attn.q_proj.register_forward_hook(lambda m, i, o: setattr(rec, "q_proj", o.clone()))
    with torch.no_grad(), _recording(fam, rec):
        pe = rot(hidden, pid, **extra)
        attn(hidden, position_embeddings=pe, attention_mask=mask, position_ids=pid, **kwargs)
    return rec


def _layer_cases() -> list[tuple[str, int]]:
    cases = []
    for n in CONFIG_FILES:
        first = {}
        for layer in rope_schedule(_load(n)):
            k = (
                layer.spec.key() if layer.spec is not None else None,
                layer.layer_type,
                layer.indexer is not None,
            )
            first.setdefault(k, layer.index)
        cases += [(n, i) for i in sorted(first.values())]
    return cases


def _apply_width(spec, x: np.ndarray, pos: np.ndarray) -> np.ndarray:
    """``spec.apply`` (transformers' float32 arithmetic) on what the model's rotation function
    received: the whole head, or only the rotated slice (GPT-J and MLA hand the slice over)."""
    d = x.shape[-1]
    if d == spec.dim:
        return spec.apply(x, pos, precision="transformers-float32")
    assert d == spec.rotary_dim, f"rotation function got width {d}, spec {spec.dim}"
    full = np.zeros((*x.shape[:-1], spec.dim), dtype=x.dtype)
    o = spec.rotary_offset
    full[..., o : o + d] = x
    return spec.apply(full, pos, precision="transformers-float32")[..., o : o + d]


def _pow_drift(name: str, layer_type: str, top: int) -> float:
    """Largest angle drift up to position ``top`` from the 1-ulp pow pairs (radians)."""
    bad = POW_ULP_PAIRS.get((name, layer_type), [])
    if not bad:
        return 0.0
    spec = _spec(name, layer_type)
    peer = _peer_tables(name, layer_type, _positions(_max_position(name)))
    dtheta = np.abs(peer.inv_freq[bad].astype(np.float64) - spec.inv_freq_float32[bad])
    return float(top * dtheta.max())


LAYER_CASES = _layer_cases()
SPREAD = 997  # positions 0, 997, 1994, ...: large angles in a short sequence


@pytest.mark.parametrize(("name", "index"), LAYER_CASES)
def test_attention_layer_rotation_nope_and_scaling(name, index):
    layer = rope_schedule(_load(name))[index]
    fam = _family(_load(name))
    if not fam.rotary:  # a model with no rotary module: every layer must be NoPE
        assert layer.spec is None and layer.indexer is None
        names = dir(_hf_module(fam))
        assert not [n for n in names if "Rotary" in n or n.startswith("apply_rotary")], name
        return
    if fam.module == "deepseek_v4":
        pytest.skip(
            "DeepSeek-V4's attention runs its compressor with a cache and compressed "
            "positions; its rotary module is compared per rope key by the table tests"
        )
    spread = 1 if fam.slot_positions else min(SPREAD, _max_position(name) // SEQ_ATTENTION)
    pos = np.arange(SEQ_ATTENTION, dtype=np.int64) * spread
    rec = _run_layer(name, index, pos)
    if rec is None:  # the model builds no attention here (linear attention): no rope
        assert layer.spec is None, f"{name} layer {index}: no attention, schedule has a spec"
        return
    assert len(rec.attention) == 1, f"{name} layer {index}: attention not reached"
    if layer.spec is None:  # NoPE: the model's rotation function is never called
        assert rec.calls == [], f"{name} layer {index} rotates but the schedule says NoPE"
    else:
        assert rec.calls, f"{name} layer {index}: the model does not rotate"
        n = pos.shape[0]
        a = layer.spec.attention_scaling
        drift = _pow_drift(name, layer.layer_type, int(pos.max()))
        row = MEASURED.setdefault(f"{name}:layer{index}", {})
        callers = {caller for caller, _ in rec.calls}
        indexed = any(c.endswith("Indexer") for c in callers)
        assert indexed == (layer.indexer is not None), f"{name} layer {index}: indexer {callers}"
        for caller, pairs in rec.calls:
            spec = layer.indexer if caller.endswith("Indexer") else layer.spec
            if fam.block_keys and caller.endswith("Indexer") and n not in pairs[0][0].shape:
                continue  # pooled key blocks at their first positions: not tabulated
            for before, after in pairs:
                axis = list(before.shape).index(n)  # (B, H, S, D) or (B, S, H, D)
                x = np.moveaxis(before.numpy(), axis, -2)
                want = np.moveaxis(after.numpy(), axis, -2).astype(np.float64)
                got = _apply_width(spec, x, pos)
                assert got.dtype == np.float32
                err = float(np.max(np.abs(got - want)))
                # torch's float32 cos/sin and products (a few roundings of 2**-24 each), plus
                # the angle drift of the pow pairs (a pair's rotation error is its norm, at most
                # sqrt(2) max|x|, times the angle error)
                tol = a * np.sqrt(2.0) * float(np.max(np.abs(x))) * (8 * U32 + drift)
                row["apply_f32"] = max(row.get("apply_f32", 0.0), err)
                assert err <= tol, f"{name} layer {index}: rotated features off by {err:.3g}"
    _, _, scaling = rec.attention[0]
    qs = layer.query_scaling
    softmax = 1.0 if qs is None else qs.softmax_scale
    assert scaling == pytest.approx(softmax * _base_softmax_scale(name, index), rel=1e-12), name


def _base_softmax_scale(name: str, index: int = 0) -> float:
    """The family's softmax scale before any rope-related factor (1/sqrt of the q.k width)."""
    cfg, fam = _hf_config(name)
    if fam.module == "dots3_note":  # MLA widths per layer (per_layer_config)
        layer = cfg.per_layer_config[index]
        return (layer.qk_nope_head_dim + layer.qk_rope_head_dim) ** -0.5
    if fam.module in ("gemma4", "diffusion_gemma"):  # q and k RMS-normalised: scale 1
        return 1.0
    if fam.module == "openai_privacy_filter":  # q and k each times head_dim**-0.25, then 1
        return 1.0
    if fam.module == "zamba2":  # its attention scales by the width of one input half
        return (cfg.head_dim / 2) ** -0.5
    if getattr(cfg, "attention_multiplier", None):  # Granite's scale in place of 1/sqrt(d)
        return cfg.attention_multiplier
    if getattr(cfg, "query_pre_attn_scalar", None):
        return cfg.query_pre_attn_scalar**-0.5
    width = getattr(cfg, "qk_head_dim", None) or getattr(cfg, "head_dim", None)
    return (width or cfg.hidden_size // cfg.num_attention_heads) ** -0.5


# config file -> positions that cross the query-scaling steps, and whether the model takes them
# from position_ids (Ministral 3) or from the token index in the sequence (Llama 4)
QUERY_SCALING = {
    "ministral3-3b-2512.json": ("position_ids", np.arange(0, 5 * 16384, 1000)),
    "llama4-text.handmade.json": ("sequence", np.arange(3 * 8192 + 5)),
    "llama4-scout-17b-16e.excerpt.json": ("sequence", np.arange(3 * 8192 + 5)),
    "llama4-maverick-17b-128e.reduced.json": ("sequence", np.arange(3 * 8192 + 5)),
}


@pytest.mark.parametrize("name", sorted(QUERY_SCALING))
def test_query_scaling_matches_attention_module(name):
    _, pos = QUERY_SCALING[name]
    layers = [layer for layer in rope_schedule(_load(name)) if layer.query_scaling is not None]
    assert layers, f"{name}: the schedule has no query scaling"
    for layer in layers[:2]:
        want = np.asarray(layer.query_scaling(pos), dtype=np.float64)
        assert np.ptp(want) > 0.1, f"{name}: the positions do not cross a scaling step"
        rec = _run_layer(name, layer.index, pos)
        query = rec.attention[0][0][0, 0].numpy().astype(np.float64)  # (S, D), head 0
        if rec.calls:  # rotated, then scaled: the rotated query is the reference
            before = rec.calls[0][1][0][1]
            axis = list(before.shape).index(pos.shape[0])
            before = np.moveaxis(before.numpy(), axis, -2)[0, 0].astype(np.float64)
        else:  # NoPE layer: the query projection is the reference
            before = rec.q_proj[0].view(pos.shape[0], -1, query.shape[-1])[:, 0].numpy()
        ratio = np.median(query / before, axis=-1)
        assert np.max(np.abs(ratio - want)) <= 4 * U32 * np.max(want), name


@pytest.mark.parametrize("name", sorted(n for n in CONFIG_FILES if ".transformers5." in n))
def test_4x_and_5x_forms_of_a_released_config_read_alike(name):
    """A released 4.x file and transformers 5.24's re-serialisation of it (nested
    rope_parameters per layer type) give the same schedule, layer by layer."""
    old = rope_schedule(_load(name.replace(".transformers5", "")))
    new = rope_schedule(_load(name))
    assert "rope_parameters" in _text(_load(name)) and len(old) == len(new)
    for a, b in zip(old, new, strict=True):
        assert a.layer_type == b.layer_type
        assert (a.spec is None) == (b.spec is None)
        assert a.spec is None or a.spec.key() == b.spec.key()


# ---------------------------------------------------------------- the records themselves


def _class_default(cls, instance, key):
    """What ``cls`` gives ``key`` when a config omits it (its default, after post-init)."""
    theta = getattr(cls, "default_theta", 10000.0)
    if key == "rope_theta" and isinstance(getattr(instance, "rope_theta", None), (int, float)):
        # a rope_theta field (Bailing hybrid) that the class builds its rope_parameters from
        field = getattr(cls, "__dataclass_fields__", {}).get("rope_theta")
        if field is not None and isinstance(field.default, (int, float)):
            return field.default
    if key in ("rope_theta", "rope_local_base_freq"):
        if isinstance(theta, dict):
            return theta["global" if key == "rope_theta" else "local"]
        return theta
    if key == "partial_rotary_factor":
        rope = instance.rope_parameters
        rope = (
            next(iter(rope.values())) if all(isinstance(v, dict) for v in rope.values()) else rope
        )
        return rope.get(
            "partial_rotary_factor", getattr(cls, "default_partial_rotary_factor", None)
        )
    if key == "rope_parameters":  # the class's own rope per layer type
        return instance.rope_parameters
    if key == "global_head_dim":  # Gemma 4: the head width of the full-attention layers
        return next(iter(instance.to_dict()["per_layer_config"].values()))["head_dim"]
    if key in ("sliding_window_pattern", "full_attention_interval"):
        explicit = getattr(instance, key, None) or getattr(instance, f"_{key}", None)
        if explicit:
            return explicit
        return instance.layer_types.index("full_attention") + 1
    fields = getattr(cls, "__dataclass_fields__", {})
    if key in fields and not isinstance(fields[key].default, dataclasses._MISSING_TYPE):
        if fields[key].default is None:  # filled in by the class's post-init (Mllama's list)
            return getattr(instance, key)
        return fields[key].default
    return getattr(instance, key)


def test_family_defaults_match_the_config_classes():
    """Every default a refimpl record declares is its transformers config class's."""
    from refimpl.families import _RECORDS

    checked = 0
    for record in _RECORDS:
        cls = getattr(transformers, record.config_class, None)
        if cls is None:  # a family outside transformers (ChatGLM's remote code)
            assert " " in record.config_class, record.name
            continue
        instance = cls()
        for key, value in record.defaults.items():
            want = _class_default(cls, instance, key)
            assert value == want, f"{record.name}: {key} is {value!r}, {cls.__name__} {want!r}"
            checked += 1
    assert checked > 200


def test_wrappers_table_matches_the_config_classes():
    from transformers import AutoConfig
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    from refimpl.families import FAMILIES, WRAPPERS

    for wrapper, (text, fixed) in WRAPPERS.items():
        spec = CONFIG_MAPPING[wrapper].sub_configs_defaults["text_config"]
        assert fixed == (spec.config_class is not AutoConfig), wrapper
        assert text == (spec.config_class.model_type if fixed else spec.model_type), wrapper
    for model_type in CONFIG_MAPPING.keys():
        spec = (getattr(CONFIG_MAPPING[model_type], "sub_configs_defaults", None) or {}).get(
            "text_config"
        )
        if spec is None:
            continue
        text = spec.model_type if spec.config_class is AutoConfig else spec.config_class.model_type
        if text in FAMILIES:  # every wrapper of a decoder refimpl reads is in the table
            assert WRAPPERS.get(model_type, (None,))[0] == text, model_type


@pytest.mark.parametrize("base", [1e4, 5e5, 1e6, 1.2e7])
def test_llama3_float32_emulation_matches_torch(base):
    """torch computes Llama 3's ``2 pi / inv_freq`` and ``L / wavelen`` as a reciprocal and a
    product (two float32 roundings); refimpl's emulation does the same. With torch's own
    float32 powers substituted the frequencies are bit-identical; with correctly rounded
    powers they are within the 1 ulp of torch's pow."""
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

    import refimpl.scaling as sc

    worst = 0
    for d, factor, high, orig in [
        (64, 32.0, 4.0, 8192),
        (128, 8.0, 4.0, 8192),
        (128, 16.0, 2.0, 4096),
    ]:
        params = {"factor": factor, "low_freq_factor": 1.0, "high_freq_factor": high}
        cfg = transformers.LlamaConfig(
            hidden_size=4 * d,
            num_attention_heads=4,
            head_dim=d,
            max_position_embeddings=1 << 17,
            rope_parameters={
                "rope_type": "llama3",
                "rope_theta": base,
                "original_max_position_embeddings": orig,
                **params,
            },
        )
        theirs = ROPE_INIT_FUNCTIONS["llama3"](cfg)[0].numpy()
        kw = {"dim": d, "base": base, "original_max_position": orig, **params}
        mine = sc.ROPE_SCALINGS["llama3"].float32(**kw)
        worst = max(worst, int(_ulps(theirs, mine).max()))
        torch_default = (1.0 / (base ** (torch.arange(0, d, 2).float() / d))).numpy()
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(sc, "_f32_default", lambda dim, b, t=torch_default: t)
            np.testing.assert_array_equal(sc._f32_llama3(**kw), theirs)
    assert worst <= 1
    MEASURED.setdefault(f"llama3-float32:base{base:g}", {})["inv_freq_ulp"] = float(worst)


def test_dual_chunk_attention_is_read_and_transformers_ignores_it():
    name = "qwen2.5-1m.handmade.json"
    sched = rope_schedule(_load(name))
    dca = sched.dual_chunk_attention
    hf_cfg, fam = _hf_config(name)
    given = hf_cfg.dual_chunk_attention_config
    assert (dca.chunk_size, dca.local_size) == (given["chunk_size"], given["local_size"])
    plain = {k: v for k, v in _load(name).items() if k != "dual_chunk_attention_config"}
    body = {k: v for k, v in plain.items() if k != "model_type"}
    rot = getattr(_hf_module(fam), fam.rotary)
    with_dca, without = rot(hf_cfg).inv_freq, rot(transformers.Qwen2Config(**body)).inv_freq
    assert torch.equal(with_dca, without)  # transformers' RoPE does not read it
    assert rope_schedule(plain)[0].spec.key() == sched[0].spec.key()
