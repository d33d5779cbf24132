"""Write the configs of this folder that are not copies of released files.

Two kinds, both labelled in the file name:

* ``<family>.transformers-defaults.json``: ``<ConfigClass>().to_dict()`` of transformers
  (the version installed, recorded in each file's ``transformers_version``), for families
  whose released ``config.json`` was not found in a public mirror (see SOURCES.md).
* ``<family>.handmade.json``: those defaults with the rope fields of the released model set
  by hand to the values given in SOURCES.md (the released file itself was not found), or a
  4.x-form file written by hand with the keys of the released model (``HANDMADE_4X``).
* ``<model>.transformers5.json``: a released file of this folder loaded by its config class and
  written back (``Config(**file).to_dict()``, what ``save_pretrained`` stores): the released
  values in transformers' 5.x form (nested ``rope_parameters`` per layer type).

Run: ``.venv/bin/python tests/parity/configs/make_defaults.py`` (rewrites the files).
"""

from __future__ import annotations

import json
import pathlib

import transformers

HERE = pathlib.Path(__file__).resolve().parent

DEFAULTS = {
    "deepseek-v3": "DeepseekV3Config",
    "gemma3-text": "Gemma3TextConfig",
    "gemma4-text": "Gemma4TextConfig",
    "llama4-text": "Llama4TextConfig",
    "cohere2": "Cohere2Config",
    "glm4": "Glm4Config",
    "glm4v-text": "Glm4vTextConfig",
    "qwen2.5-vl-text": "Qwen2_5_VLTextConfig",
    "qwen3-vl-text": "Qwen3VLTextConfig",
    "qwen3-next": "Qwen3NextConfig",
    "exaone4": "Exaone4Config",
    "hunyuan-v1-dense": "HunYuanDenseV1Config",
    "ernie4.5": "Ernie4_5Config",
    "deepseek-v32": "DeepseekV32Config",
    "glm-moe-dsa": "GlmMoeDsaConfig",
    "kimi-linear": "KimiLinearConfig",
    "lfm2": "Lfm2Config",
    "zamba2": "Zamba2Config",
    "olmo3": "Olmo3Config",
    "qwen3.5": "Qwen3_5Config",
    "qwen3.5-moe": "Qwen3_5MoeConfig",
    "exaone4.5": "Exaone4_5_Config",
    "voxtral": "VoxtralConfig",
    "kimi-k2.5": "Kimi_K25Config",
    "deepseek-v4": "DeepseekV4Config",
    "qwen2": "Qwen2Config",
    "exaone-moe": "ExaoneMoeConfig",
    "laguna": "LagunaConfig",
    "mellum": "MellumConfig",
    "mimo-v2-flash": "MiMoV2FlashConfig",
    "modernbert-decoder": "ModernBertDecoderConfig",
    "jetmoe": "JetMoeConfig",
    "glm-ocr-text": "GlmOcrTextConfig",
    "helium": "HeliumConfig",
    "openai-privacy-filter": "OpenAIPrivacyFilterConfig",
    "afmoe": "AfmoeConfig",
    "flint": "FlintConfig",
    "blt-global-transformer": "BltGlobalTransformerConfig",
    "blt-local-decoder": "BltLocalDecoderConfig",
    "blt-local-encoder": "BltLocalEncoderConfig",
    "blt-patcher": "BltPatcherConfig",
    "moonshine-streaming": "MoonshineStreamingConfig",
    "mllama-text": "MllamaTextConfig",
    "kolibri1": "Kolibri1Config",
    "glm-image-text": "GlmImageTextConfig",
    "axk1": "AXK1Config",
    "axk2": "AXK2Config",
    "minicpm3": "MiniCPM3Config",
    "youtu": "YoutuConfig",
    "apertus1p5-text": "Apertus1p5TextConfig",
    "aria-text": "AriaTextConfig",
    "granite4-vision-text": "Granite4VisionTextConfig",
    "granite-docling-text": "GraniteDoclingTextConfig",
    "hyperclovax": "HyperCLOVAXConfig",
    "minimax": "MiniMaxConfig",
    "olmo-hybrid": "OlmoHybridConfig",
    "hy-v4-vl-text": "HYV4VLTextConfig",
    "dots3-note-text": "Dots3NoteTextConfig",
    "minimax-m3-vl-text": "MiniMaxM3VLTextConfig",
    "qwen4-exp-text": "Qwen4ExpTextConfig",
    "hunyuan-v1-moe": "HunYuanMoEV1Config",
    "ministral": "MinistralConfig",
    "nemotron": "NemotronConfig",
    "dbrx": "DbrxConfig",
    "chameleon": "ChameleonConfig",
    "dots1": "Dots1Config",
    "deepseek-ocr2-text": "DeepseekOcr2TextConfig",
    "diffusion-gemma-text": "DiffusionGemmaTextConfig",
    "lfm2-moe": "Lfm2MoeConfig",
    "qwen3-omni-moe-talker-text": "Qwen3OmniMoeTalkerTextConfig",
    "t5gemma2-text": "T5Gemma2TextConfig",
}

# family defaults -> rope fields of the released model (values and their sources: SOURCES.md)
HANDMADE = {
    "glm-image-text": {  # not a released value: the half slice the default sections need
        "rope_parameters": {
            "rope_type": "default",
            "rope_theta": 10000.0,
            "partial_rotary_factor": 0.5,
        },
    },
    "deepseek-v3": {
        "rope_parameters": {
            "rope_type": "yarn",
            "rope_theta": 10000.0,
            "factor": 40.0,
            "original_max_position_embeddings": 4096,
            "beta_fast": 32.0,
            "beta_slow": 1.0,
            "mscale": 1.0,
            "mscale_all_dim": 1.0,
        },
        "max_position_embeddings": 163840,
    },
    "llama4-text": {
        "rope_parameters": {
            "rope_type": "llama3",
            "rope_theta": 500000.0,
            "factor": 16.0,
            "low_freq_factor": 1.0,
            "high_freq_factor": 1.0,
            "original_max_position_embeddings": 8192,
        },
        "max_position_embeddings": 10485760,
    },
    "qwen2.5-vl-text": {
        "rope_parameters": {
            "rope_type": "default",
            "rope_theta": 1000000.0,
            "mrope_section": [16, 24, 24],
        },
    },
    "qwen3-vl-text": {
        "rope_parameters": {
            "rope_type": "default",
            "rope_theta": 500000.0,
            "mrope_section": [24, 20, 20],
            "mrope_interleaved": True,
        },
    },
    "glm4v-text": {
        "rope_parameters": {
            "rope_type": "default",
            "rope_theta": 10000.0,
            "partial_rotary_factor": 0.5,
            "mrope_section": [8, 12, 12],
        },
    },
    "hunyuan-v1-dense": {
        "rope_parameters": {
            "rope_type": "dynamic",
            "rope_theta": 10000.0,
            "factor": 1.0,
            "alpha": 1000.0,
        },
        "head_dim": 128,
    },
    "deepseek-v32": {
        "rope_parameters": {
            "rope_type": "yarn",
            "rope_theta": 10000.0,
            "factor": 40.0,
            "original_max_position_embeddings": 4096,
            "beta_fast": 32.0,
            "beta_slow": 1.0,
            "mscale": 1.0,
            "mscale_all_dim": 1.0,
        },
    },
    "glm-moe-dsa": {
        "num_hidden_layers": 8,
        "indexer_types": ["full", "full", "full", "shared", "shared", "full", "shared", "shared"],
        "layer_types": ["indexed_attention"] * 8,
        "mlp_layer_types": ["dense"] * 3 + ["sparse"] * 5,
    },
    "zamba2": {"use_mem_rope": True},
    "qwen4-exp-text": {  # the QSA indexer's keys, which the class leaves null, and a rope block
        # shaped like Qwen3.5's (a quarter of each head rotates); not released values
        "indexer_n_heads": 4,
        "indexer_kv_heads": 1,
        "indexer_head_dim": 128,
        "indexer_budget": 2048,
        "indexer_compress_ratio": 4,
        "rope_parameters": {
            "rope_type": "default",
            "rope_theta": 10000000.0,
            "partial_rotary_factor": 0.25,
            "mrope_section": [11, 11, 10],
            "mrope_interleaved": True,
        },
    },
    # keys the model's code needs to build its layers, which the class leaves null or does not
    # define (illustrative values, not a release's: SOURCES.md)
    "hunyuan-v1-moe": {"head_dim": 128},
    "ministral": {"head_dim": 128},
    "nemotron": {"num_key_value_heads": 8},
    "dbrx": {
        # clip_qkv set too: DbrxAttention.forward clamps with it (None leaves both bounds None,
        # which torch.clamp rejects)
        "attn_config": {"attn_pdrop": 0.0, "clip_qkv": 8.0, "kv_n_heads": 1, "rope_theta": 10000.0}
    },
    "chameleon": {"vocabulary_map": {"<image>": 8711}},
    "dots1": {"n_routed_experts": 128, "n_shared_experts": 2, "num_experts_per_tok": 6},
    "deepseek-ocr2-text": {"mlp_layer_types": ["dense"] * 32},
    "diffusion-gemma-text": {"num_experts": 128, "top_k_experts": 8, "moe_intermediate_size": 704},
    "lfm2-moe": {
        "layer_types": ["full_attention" if i % 4 == 2 else "conv" for i in range(32)],
    },
    "moonshine-streaming": {"num_key_value_heads": 8},
    "qwen3-omni-moe-talker-text": {"shared_expert_intermediate_size": 768},
    "t5gemma2-text": {"dropout_rate": 0.0},
}

# HunyuanOCR's text decoder as Blaizzy/mlx-vlm transcribes its released config (SOURCES.md)
HUNYUAN_OCR_TEXT = {
    "hidden_size": 1024,
    "num_hidden_layers": 24,
    "num_attention_heads": 16,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "max_position_embeddings": 32768,
    "rope_theta": 10000.0,
}
HUNYUAN_OCR_XDROPE = {
    "type": "xdrope",
    "alpha": 1000.0,
    "beta_fast": 32,
    "beta_slow": 1,
    "factor": 1.0,
    "mscale": 1.0,
    "mscale_all_dim": 1.0,
}

# 4.x-form files written by hand (the released keys of the model, the class defaults left out)
HANDMADE_4X = {
    "olmo3": {
        "model_type": "olmo3",
        "architectures": ["Olmo3ForCausalLM"],
        "hidden_size": 4096,
        "num_attention_heads": 32,
        "num_key_value_heads": 32,
        "num_hidden_layers": 32,
        "max_position_embeddings": 65536,
        "sliding_window": 4096,
        "layer_types": (["sliding_attention"] * 3 + ["full_attention"]) * 8,
        "rope_theta": 500000,
        "rope_scaling": {
            "rope_type": "yarn",
            "factor": 8.0,
            "original_max_position_embeddings": 8192,
            "beta_fast": 32.0,
            "beta_slow": 1.0,
            "attention_factor": 1.2079441541679836,
        },
    },
    "deepseek-v4": {
        "model_type": "deepseek_v4",
        "architectures": ["DeepseekV4ForCausalLM"],
        "num_hidden_layers": 6,
        "head_dim": 512,
        "qk_rope_head_dim": 64,
        "rope_theta": 10000.0,
        "compress_rope_theta": 160000.0,
        "compress_ratios": [0, 0, 4, 128, 4, 128],
        "max_position_embeddings": 1048576,
        "rope_scaling": {
            "type": "yarn",
            "factor": 16.0,
            "original_max_position_embeddings": 65536,
            "beta_fast": 32,
            "beta_slow": 1,
        },
    },
    "qwen2.5-1m": {
        "model_type": "qwen2",
        "architectures": ["Qwen2ForCausalLM"],
        "hidden_size": 3584,
        "num_attention_heads": 28,
        "num_key_value_heads": 4,
        "num_hidden_layers": 28,
        "max_position_embeddings": 1010000,
        "rope_theta": 10000000.0,
        "dual_chunk_attention_config": {
            "chunk_size": 262144,
            "local_size": 8192,
            "original_max_position_embeddings": 262144,
        },
    },
    "hy-v4-vl.yarn": {
        "model_type": "hy_v4_vl",
        "text_config": {
            "model_type": "hy_v4_vl_text",
            "num_hidden_layers": 6,
            "indexer_types": ["full", "shared", "full", "shared", "shared", "full"],
            "rope_parameters": {
                "rope_type": "yarn",
                "rope_theta": 10000.0,
                "factor": 4.0,
                "original_max_position_embeddings": 65536,
                "mscale_all_dim": 1.0,
                "mrope_section": [12, 10, 10],
            },
        },
    },
    "dots3-note-text.legacy": {
        "model_type": "dots3_note_text",
        "num_hidden_layers": 8,
        "use_dsa": True,
        "layer_types": ["full_attention"] * 2
        + ["sliding_attention"] * 3
        + ["full_attention"]
        + ["sliding_attention"] * 2,
        "rope_theta": 80000000.0,
        "swa_rope_theta": 100000.0,
        "swa_head_dim": 256,
        "swa_qk_nope_head_dim": 224,
        "swa_qk_rope_head_dim": 32,
    },
    "minimax-m3-vl-text.sparse": {
        "model_type": "minimax_m3_vl_text",
        "num_hidden_layers": 6,
        "head_dim": 128,
        "rotary_dim": 64,
        "rope_theta": 5000000.0,
        "partial_rotary_factor": 0.5,
        "sparse_attention_config": {
            "sparse_attention_freq": [0, 0, 1, 1, 1, 1],
            "sparse_index_dim": 128,
            "sparse_num_index_heads": 4,
            "sparse_block_size": 128,
            "sparse_topk_blocks": 16,
        },
    },
    # HunyuanOCR's text decoder keys in the legacy form with its xD-RoPE sections (transcribed)
    "hunyuan-ocr-text.xdrope": {
        "model_type": "hunyuan_vl_text",
        **HUNYUAN_OCR_TEXT,
        "rope_scaling": {**HUNYUAN_OCR_XDROPE, "xdrope_section": [16, 16, 16, 16]},
    },
    # the same with every pair on row 0, the 1-D position (illustrative, not a release's)
    "hunyuan-vl-text.position-row": {
        "model_type": "hunyuan_vl_text",
        **HUNYUAN_OCR_TEXT,
        "rope_scaling": {**HUNYUAN_OCR_XDROPE, "xdrope_section": [64, 0, 0, 0]},
    },
    "gemma3-4b.diff-style": {
        "model_type": "gemma3",
        "text_config": {
            "model_type": "gemma3_text",
            "hidden_size": 2560,
            "num_hidden_layers": 34,
            "rope_scaling": {"rope_type": "linear", "factor": 8.0},
        },
    },
}


# released file -> config class whose to_dict() gives its transformers 5.x form
RESAVED = {"gemma3-12b-it": "Gemma3Config"}


def _write(name: str, cfg: dict) -> None:
    path = HERE / name
    path.write_text(json.dumps(cfg, indent=2, sort_keys=True) + "\n", encoding="utf8")


# class defaults that transformers cannot run (GLM-4V's and GLM-Image's default M-RoPE sections
# [8, 12, 12] need the half-width rotary slice, which the defaults do not set; Qwen4-Exp's
# attention builds its QSA indexer from keys the class leaves null) or cannot build (the keys
# of HANDMADE's second part are null or undefined in the class)
NOT_RUNNABLE = {
    "glm4v-text",
    "glm-image-text",
    "qwen4-exp-text",
    "hunyuan-v1-dense",
    "hunyuan-v1-moe",
    "ministral",
    "nemotron",
    "dbrx",
    "chameleon",
    "dots1",
    "deepseek-ocr2-text",
    "diffusion-gemma-text",
    "lfm2-moe",
    "moonshine-streaming",
    "qwen3-omni-moe-talker-text",
    "t5gemma2-text",
}


def main() -> None:
    for family, cls_name in DEFAULTS.items():
        cfg = getattr(transformers, cls_name)().to_dict()
        if family not in NOT_RUNNABLE:
            _write(f"{family}.transformers-defaults.json", cfg)
        if family in HANDMADE:
            _write(f"{family}.handmade.json", {**cfg, **HANDMADE[family]})
    for name, cfg in HANDMADE_4X.items():
        _write(f"{name}.handmade.json", cfg)
    for model, cls_name in RESAVED.items():
        released = json.loads((HERE / f"{model}.json").read_text(encoding="utf8"))
        body = {k: v for k, v in released.items() if k != "model_type"}
        _write(f"{model}.transformers5.json", getattr(transformers, cls_name)(**body).to_dict())


if __name__ == "__main__":
    main()
