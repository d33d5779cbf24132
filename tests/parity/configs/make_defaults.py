"""Write the configs of this folder that are not copies of released files.

Two kinds, both labelled in the file name:

* ``<family>.transformers-defaults.json``: ``<ConfigClass>().to_dict()`` of transformers
  (the version installed, recorded in each file's ``transformers_version``), for families
  whose released ``config.json`` was not found in a public mirror (see SOURCES.md).
* ``<family>.handmade.json``: those defaults with the rope fields of the released model set
  by hand to the values given in SOURCES.md (the released file itself was not found).
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
}

# family defaults -> rope fields of the released model (values and their sources: SOURCES.md)
HANDMADE = {
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
}


# released file -> config class whose to_dict() gives its transformers 5.x form
RESAVED = {"gemma3-12b-it": "Gemma3Config"}


def _write(name: str, cfg: dict) -> None:
    path = HERE / name
    path.write_text(json.dumps(cfg, indent=2, sort_keys=True) + "\n", encoding="utf8")


# class defaults that transformers' own rotary module cannot run (GLM-4V's default M-RoPE
# sections [8, 12, 12] need the half-width rotary slice, which the defaults do not set)
NOT_RUNNABLE = {"glm4v-text"}


def main() -> None:
    for family, cls_name in DEFAULTS.items():
        cfg = getattr(transformers, cls_name)().to_dict()
        if family not in NOT_RUNNABLE:
            _write(f"{family}.transformers-defaults.json", cfg)
        if family in HANDMADE:
            _write(f"{family}.handmade.json", {**cfg, **HANDMADE[family]})
    for model, cls_name in RESAVED.items():
        released = json.loads((HERE / f"{model}.json").read_text(encoding="utf8"))
        body = {k: v for k, v in released.items() if k != "model_type"}
        _write(f"{model}.transformers5.json", getattr(transformers, cls_name)(**body).to_dict())


if __name__ == "__main__":
    main()
