r"""GGUF files and llama.cpp's RoPE: read a file's rope metadata, write what llama.cpp's
converter writes for a ``config.json``, compare the two, and build the spec llama.cpp runs.

A GGUF file describes RoPE with keys under ``{arch}.rope.*`` (``arch`` is
``general.architecture``) and, for some methods, tensors of per-pair factors
(``rope_freqs.weight`` for Llama 3's band scaling, ``rope_factors_long/short.weight`` for
LongRoPE). It has no key for the pairing: llama.cpp hard-codes a rope type per architecture
(NORM pairs ``2i, 2i+1``; NEOX pairs ``i, i + n/2``), and its converter permutes the q/k rows of
Llama-family checkpoints (half layout to interleaved) so that NORM on the permuted rows equals
transformers' half pairing on the original ones. That permutation is part of the mapping, not a
divergence.

M-RoPE files (Qwen2-VL, Qwen2.5-VL, Qwen3-VL, GLM-4.xV) store the pairs per position axis in
``{arch}.rope.dimension_sections`` (four integers: t, h, w and an extra row). llama.cpp's
rope type MROPE lays them out in blocks (refimpl's ``"blocked"``), IMROPE (Qwen3-VL,
Qwen3.5) by ggml's sector rule (``"imrope"`` of :mod:`refimpl.multiaxis`): pair ``j`` follows
``t``, ``h`` or ``w`` when ``j % 3`` names that axis and ``j`` lies within three times its
section, else the extra row, which llama.cpp fills with 0 for text tokens. Both rotate in NEOX
order; GLM-4.xV's adjacent pairs reach it through the converter's q/k permutation.

Files are read by refimpl's own bounded reader of the header: only the keys llama.cpp's RoPE
depends on and the rope factor tensors are read, every other key is skipped by its length, and
every size is checked against the bytes left before anything is allocated. The keys' types,
defaults and refusals follow llama.cpp's loader, from one table (:data:`LLAMACPP_KEYS`). The
``gguf`` package writes test files and serves as a test oracle; it is not needed to read.
"""

from __future__ import annotations

import dataclasses
import math
import os
import struct
import types
from collections.abc import Callable, Mapping

import numpy as np

from ._checks import (
    MAX_DIM,
    MAX_POSITION,
    check_base,
    check_choice,
    check_count,
    check_dim,
    check_flag,
    check_int,
    check_positive,
    check_positive_int,
    check_real,
)
from .config import LayerRope, RopeSchedule, RopeSpec, load_config
from .multiaxis import mrope_axis_of_pair
from .pipelines import llamacpp_llama3_factors
from .scaling import ROPE_SCALINGS

__all__ = [
    "ARCH_ROPE_MODES",
    "LLAMACPP_KEYS",
    "GgufRope",
    "LlamaCppKey",
    "compare_gguf",
    "gguf_rope_metadata",
    "gguf_schedule",
    "is_gguf",
    "llamacpp_rope_parameters",
    "read_gguf_rope",
    "rope_from_gguf",
]

# llama.cpp's rope type per architecture (src/llama-model.cpp, llama_model_rope_type).
ARCH_ROPE_MODES = {
    **dict.fromkeys(
        (
            "llama",
            "llama4",
            "granite",
            "smollm3",
            "command-r",
            "cohere2",
            "deepseek2",
            "chatglm",
            "glm4",
            "ernie4_5",
            "olmo",
            "internlm2",
            "minicpm",
            "baichuan",
        ),
        "norm",
    ),
    **dict.fromkeys(
        (
            "qwen2",
            "qwen2moe",
            "qwen3",
            "qwen3moe",
            "qwen3next",
            "gemma",
            "gemma2",
            "gemma3",
            "phi2",
            "phi3",
            "gptneox",
            "stablelm",
            "olmo2",
            "starcoder2",
            "falcon",
            "nemotron",
            "exaone",
            "exaone4",
            "gpt-oss",
            "hunyuan-dense",
            "hunyuan-moe",
        ),
        "neox",
    ),
    "glm4moe": "neox",
    "qwen2vl": "mrope",
    **dict.fromkeys(("qwen3vl", "qwen3vlmoe", "qwen35", "qwen35moe"), "imrope"),
}
# Architectures that switch to MROPE when the file has sections (llama-model.cpp: use_mrope(),
# sections[0] > 0 and sections[1] > 0); the others above need the sections to load at all.
_MROPE_IF_SECTIONS = frozenset({"glm4", "glm4moe"})
# llama.cpp's M-RoPE rope types -> refimpl's section layouts (refimpl.multiaxis); "imrope" is
# ggml's own sector rule, not transformers' "interleaved".
_MROPE_LAYOUT_OF_MODE = {"mrope": "blocked", "imrope": "imrope"}
# Architectures whose converter permutes q/k rows to NEOX order for M-RoPE (glm.py).
_MROPE_PERMUTED_ARCHS = frozenset({"glm4", "glm4moe"})
# transformers model_type -> the GGUF architecture llama.cpp's converter writes for it.
_HF_TO_ARCH = {
    "llama": "llama",
    "mistral": "llama",
    "mixtral": "llama",
    "llama4": "llama4",
    "llama4_text": "llama4",
    "granite": "granite",
    "smollm3": "smollm3",
    "qwen2": "qwen2",
    "qwen2_moe": "qwen2moe",
    "qwen3": "qwen3",
    "qwen3_moe": "qwen3moe",
    "qwen3_next": "qwen3next",
    "qwen2_vl": "qwen2vl",
    "qwen2_vl_text": "qwen2vl",
    "qwen2_5_vl": "qwen2vl",
    "qwen2_5_vl_text": "qwen2vl",
    "qwen3_vl": "qwen3vl",
    "qwen3_vl_text": "qwen3vl",
    "qwen3_vl_moe": "qwen3vlmoe",
    "qwen3_vl_moe_text": "qwen3vlmoe",
    "qwen3_5": "qwen35",
    "qwen3_5_moe": "qwen35moe",
    "glm4v": "glm4",
    "glm4v_text": "glm4",
    "glm4_moe": "glm4moe",
    "glm4v_moe": "glm4moe",
    "glm4v_moe_text": "glm4moe",
    "gemma": "gemma",
    "gemma2": "gemma2",
    "gemma3": "gemma3",
    "gemma3_text": "gemma3",
    "phi": "phi2",
    "phi3": "phi3",
    "gpt_neox": "gptneox",
    "stablelm": "stablelm",
    "cohere": "command-r",
    "cohere2": "cohere2",
    "deepseek_v2": "deepseek2",
    "deepseek_v3": "deepseek2",
    "kimi_k2": "deepseek2",
    "glm4": "glm4",
    "chatglm": "chatglm",
    "exaone4": "exaone4",
    "gpt_oss": "gpt-oss",
    "hunyuan_v1_dense": "hunyuan-dense",
    "ernie4_5": "ernie4_5",
    "olmo2": "olmo2",
    "starcoder2": "starcoder2",
    "falcon": "falcon",
    "nemotron": "nemotron",
}
# Architectures whose converter permutes q/k rows from the half layout to interleaved pairs.
_PERMUTED_ARCHS = frozenset({"llama", "granite", "smollm3"})
# Llama 3's original context, read by the converter from the top level of config.json (8192
# when absent there; conversion/llama.py, LlamaModel.generate_extra_tensors).
_LLAMA3_CONVERTER_ORIGINAL = 8192
# Architectures whose every 4th layer has no RoPE in llama.cpp (n_no_rope_layer_step = 4).
_NO_ROPE_EVERY_4TH = frozenset({"llama4", "smollm3"})
_NO_ROPE_STEP = 4
# Hybrids with linear-attention (recurrent, no RoPE) layers: attention.recurrent_layers when the
# file has it, else all but every full_attention_interval-th layer (src/models/qwen3next.cpp,
# qwen35.cpp: is_recr_impl[i] = (i + 1) % interval != 0, interval 4 when absent).
_LINEAR_ATTENTION_ARCHS = frozenset({"qwen3next", "qwen35", "qwen35moe"})
_FULL_ATTENTION_INTERVAL = 4
# Architectures whose loader multiplies the base by alpha^(d / (d - 2)) when the file has
# rope.scaling.alpha (src/models/hunyuan-vl.cpp, load_arch_hparams; hunyuan-dense inherits it).
_ALPHA_ARCHS = frozenset({"hunyuan-dense", "hunyuan-vl"})
# float32 storage of a float key: values agree when within a few float32 rounding errors.
_F32_AGREE = 4 * 2.0**-24

# ------------------------------------------------------------------- llama.cpp's keys
# llama.cpp's layer limit (src/llama-hparams.h: #define LLAMA_MAX_LAYERS 512): its per-layer
# arrays have this many entries, so a larger block_count or per-layer list cannot load.
LLAMA_MAX_LAYERS = 512
# The scaling types llama.cpp knows (src/llama-model.cpp, LLAMA_ROPE_SCALING_TYPES); any other
# string fails GGML_ASSERT(rope_scaling_type_train != LLAMA_ROPE_SCALING_TYPE_UNSPECIFIED).
LLAMACPP_SCALING_TYPES = ("none", "linear", "yarn", "longrope")
# M-RoPE sections: llama.cpp reads them into std::array<int, 4> rope_sections.
_MAX_SECTIONS = 4
_REQUIRED = "required"  # a default that is no value: llama.cpp refuses the file without the key


def _rule_factor(value, key):
    """A scaling factor: finite and non-negative; llama.cpp reads 0 as "not set"."""
    value = check_real(value, key)
    if value < 0:
        raise ValueError(
            f"{key} must be 0 (not set, as llama.cpp reads it) or positive, got {value}"
        )
    return value


def _rule_head_width(value, key):
    return check_positive_int(value, key, maximum=MAX_DIM)


def _rule_context(value, key):
    return check_positive_int(value, key, maximum=MAX_POSITION)


def _rule_layers(value, key):
    n = check_int(value, key)
    if not 1 <= n <= LLAMA_MAX_LAYERS:
        raise ValueError(
            f"{key} must be 1 .. {LLAMA_MAX_LAYERS} (llama.cpp's LLAMA_MAX_LAYERS), got {n}"
        )
    return n


def _rule_scaling_type(value, key):
    if not isinstance(value, str) or value not in LLAMACPP_SCALING_TYPES:
        raise ValueError(
            f"{key} is {value!r}; llama.cpp knows {', '.join(LLAMACPP_SCALING_TYPES)} and refuses "
            "any other (GGML_ASSERT in llama_model::load_hparams)"
        )
    return value


def _rule_head_count(value, key):
    """A head count, or one per layer (llama.cpp's n_head() is the first layer's)."""
    if isinstance(value, list):
        if not value:
            raise ValueError(f"{key} must not be an empty list")
        return [check_count(v, f"{key}[{i}]") for i, v in enumerate(value)]
    return check_positive_int(value, key)


def _rule_flags(value, key):
    if not isinstance(value, list) or not all(isinstance(v, bool) for v in value):
        raise ValueError(f"{key} must be a list of booleans (one per layer), got {value!r}")
    return value


def _rule_window_pattern(value, key):
    return _rule_flags(value, key) if isinstance(value, list) else check_positive_int(value, key)


def _rule_sections(value, key):
    if not isinstance(value, list) or len(value) > _MAX_SECTIONS:
        raise ValueError(
            f"{key} must be a list of at most {_MAX_SECTIONS} integers (llama.cpp's "
            f"rope_sections), got {value!r}"
        )
    return value


@dataclasses.dataclass(frozen=True)
class LlamaCppKey:
    """How llama.cpp reads one ``{arch}.*`` key of a GGUF file.

    Attributes
    ----------
    types : tuple of str
        The GGUF value types llama.cpp accepts (its loader refuses a key of any other type:
        ``llama_model_loader``'s "key ... has wrong type"). Arrays are written
        ``"array<int32>"``.
    default : object
        What llama.cpp uses when the file lacks the key: a value, a function of the
        :class:`GgufRope` (a default computed from other keys), ``"required"`` (llama.cpp
        refuses the file) or None (the key stays absent).
    rule : callable
        ``rule(value, key) -> value``: the values refimpl accepts; raises ValueError naming
        the key.
    source : str
        The llama.cpp source line that sets the default.
    """

    types: tuple
    default: object
    rule: Callable
    source: str


def _head_dim_default(rope: GgufRope):
    return rope.head_dim


#: How llama.cpp reads each key refimpl uses, by suffix after ``{arch}.``: one table for every
#: GGUF reader (:func:`read_gguf_rope`, :func:`rope_from_gguf`, :func:`gguf_schedule`,
#: :func:`compare_gguf`, ``python -m refimpl describe``). Sources are llama.cpp's
#: ``src/llama-model.cpp`` (``llama_model::load_hparams``), ``src/llama-hparams.h`` and
#: ``src/llama-context.cpp``.
LLAMACPP_KEYS: Mapping[str, LlamaCppKey] = types.MappingProxyType(
    {
        "context_length": LlamaCppKey(
            ("uint32",),
            None,
            _rule_context,
            "load_hparams: ml.get_key(LLM_KV_CONTEXT_LENGTH, hparams.n_ctx_train) (required to "
            "load; refimpl needs it only where YaRN or LongRoPE use it)",
        ),
        "embedding_length": LlamaCppKey(
            ("uint32",),
            None,
            check_positive_int,
            "load_hparams: ml.get_key(LLM_KV_EMBEDDING_LENGTH, ...)",
        ),
        "block_count": LlamaCppKey(
            ("uint32",),
            _REQUIRED,
            _rule_layers,
            "load_hparams: ml.get_key(LLM_KV_BLOCK_COUNT, hparams.n_layer) (required)",
        ),
        "attention.head_count": LlamaCppKey(
            ("uint32", "array<uint32>"),
            None,
            _rule_head_count,
            "load_hparams: ml.get_key_or_arr(LLM_KV_ATTENTION_HEAD_COUNT, hparams.n_head_arr, ...)",
        ),
        "attention.key_length": LlamaCppKey(
            ("uint32",),
            lambda rope: rope.derived_head_dim(),
            _rule_head_width,
            "load_hparams: hparams.n_embd_head_k = hparams.n_embd / hparams.n_head()",
        ),
        "rope.dimension_count": LlamaCppKey(
            ("uint32",),
            _head_dim_default,
            check_dim,
            "load_hparams: hparams.n_rot = hparams.n_embd_head_k",
        ),
        "rope.dimension_count_swa": LlamaCppKey(
            ("uint32",),
            lambda rope: rope.value("rope.dimension_count"),
            check_dim,
            "load_hparams: hparams.n_rot_swa = hparams.n_rot_full",
        ),
        "rope.dimension_sections": LlamaCppKey(
            ("array<int32>",),
            None,
            _rule_sections,
            "load_hparams: ml.get_key_or_arr(LLM_KV_ROPE_DIMENSION_SECTIONS, "
            "hparams.rope_sections, 4, ...) (required by the M-RoPE architectures)",
        ),
        "rope.freq_base": LlamaCppKey(
            ("float32",),
            10000.0,
            check_base,
            "load_hparams: hparams.rope_freq_base_train = 10000.0f",
        ),
        "rope.freq_base_swa": LlamaCppKey(
            ("float32",),
            lambda rope: rope.value("rope.freq_base"),
            check_base,
            "load_hparams: hparams.rope_freq_base_train_swa = hparams.rope_freq_base_train",
        ),
        "rope.scaling.type": LlamaCppKey(
            ("string",),
            "linear",
            _rule_scaling_type,
            'load_hparams: std::string rope_scaling("linear")',
        ),
        "rope.scaling.factor": LlamaCppKey(
            ("float32",),
            lambda rope: rope.value("rope.scale_linear"),
            _rule_factor,
            "load_hparams: float ropescale = 0.0f; ... rope_freq_scale_train = ropescale == "
            "0.0f ? 1.0f : 1.0f/ropescale",
        ),
        "rope.scale_linear": LlamaCppKey(
            ("float32",),
            0.0,
            _rule_factor,
            "load_hparams: the old key name, read when rope.scaling.factor is absent",
        ),
        "rope.scaling.attn_factor": LlamaCppKey(
            ("float32",),
            1.0,
            check_positive,
            "llama-hparams.h: float rope_attn_factor = 1.0f",
        ),
        "rope.scaling.original_context_length": LlamaCppKey(
            ("uint32",),
            lambda rope: rope.value("context_length"),
            _rule_context,
            "load_hparams: hparams.n_ctx_orig_yarn = hparams.n_ctx_train",
        ),
        "rope.scaling.finetuned": LlamaCppKey(
            ("bool",), False, check_flag, "load_hparams: bool rope_finetuned = false"
        ),
        "rope.scaling.yarn_ext_factor": LlamaCppKey(
            ("float32",),
            -1.0,
            check_real,
            "llama-hparams.h: yarn_ext_factor = -1.0f (not set: llama-context.cpp makes it 1 "
            "for YaRN, else 0)",
        ),
        "rope.scaling.yarn_attn_factor": LlamaCppKey(
            ("float32",), 1.0, check_positive, "llama-hparams.h: yarn_attn_factor = 1.0f"
        ),
        "rope.scaling.yarn_beta_fast": LlamaCppKey(
            ("float32",), 32.0, check_real, "llama-hparams.h: yarn_beta_fast = 32.0f"
        ),
        "rope.scaling.yarn_beta_slow": LlamaCppKey(
            ("float32",), 1.0, check_real, "llama-hparams.h: yarn_beta_slow = 1.0f"
        ),
        "rope.scaling.yarn_log_multiplier": LlamaCppKey(
            ("float32",),
            0.0,
            check_real,
            "llama-hparams.h: float rope_yarn_log_mul = 0.0f",
        ),
        "rope.scaling.alpha": LlamaCppKey(
            ("float32",),
            None,
            check_positive,
            "load_hparams: ml.get_key(LLM_KV_ROPE_SCALING_ALPHA, hparams.rope_scaling_alpha, "
            "false); applied to the base by src/models/hunyuan-vl.cpp (hunyuan-dense too)",
        ),
        "attention.sliding_window_pattern": LlamaCppKey(
            ("uint32", "array<bool>"),
            None,
            _rule_window_pattern,
            "per architecture: a period or one flag per layer",
        ),
        "full_attention_interval": LlamaCppKey(
            ("uint32",),
            _FULL_ATTENTION_INTERVAL,
            check_positive_int,
            "src/models/qwen3next.cpp, qwen35.cpp: interval 4 when absent",
        ),
        "attention.recurrent_layers": LlamaCppKey(
            ("array<bool>",),
            None,
            _rule_flags,
            "qwen3next: one flag per layer, else the interval",
        ),
    }
)


@dataclasses.dataclass(frozen=True)
class GgufRope:
    """The rope metadata of one GGUF file (keys and factor tensors), as stored.

    Attributes
    ----------
    path : str
    arch : str
        ``general.architecture``.
    keys : Mapping[str, object]
        The keys of :data:`LLAMACPP_KEYS` the file has, by full name (``{arch}.{suffix}``).
    tensors : Mapping[str, numpy.ndarray]
        ``rope_freqs.weight``, ``rope_factors_long.weight``, ``rope_factors_short.weight``
        (float32) when present.
    """

    path: str
    arch: str
    keys: Mapping
    tensors: Mapping

    def get(self, suffix: str, default=None):
        """The stored value of ``{arch}.{suffix}`` (e.g. ``"rope.freq_base"``), or ``default``."""
        return self.keys.get(f"{self.arch}.{suffix}", default)

    def value(self, suffix: str):
        """The value llama.cpp uses for ``{arch}.{suffix}``: the stored one, checked against
        its rule in :data:`LLAMACPP_KEYS`, or llama.cpp's default when the file lacks it
        (None where llama.cpp has none; ValueError naming the key where llama.cpp refuses
        the file)."""
        entry = LLAMACPP_KEYS[suffix]
        key = f"{self.arch}.{suffix}"
        raw = self.keys.get(key)
        if raw is None:
            if entry.default == _REQUIRED:
                raise ValueError(
                    f"{self.path}: no {key}; llama.cpp refuses to load a file without it"
                )
            return entry.default(self) if callable(entry.default) else entry.default
        try:
            return entry.rule(raw, key)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{self.path}: {exc}") from None

    @property
    def mode(self) -> str | None:
        """llama.cpp's rope type for the file (``"norm"``, ``"neox"``, ``"mrope"``,
        ``"imrope"``): the architecture's, or MROPE for GLM-4 files with sections."""
        sections = self.get("rope.dimension_sections")
        if self.arch in _MROPE_IF_SECTIONS and isinstance(sections, list) and len(sections) > 1:
            if sections[0] > 0 and sections[1] > 0:
                return "mrope"
        return ARCH_ROPE_MODES.get(self.arch)

    @property
    def head_dim(self) -> int | None:
        """``attention.key_length``, else ``embedding_length // attention.head_count`` (the
        first layer's head count, as llama.cpp's ``n_head()``); None when neither is there."""
        return self.value("attention.key_length")

    def derived_head_dim(self) -> int | None:
        """``embedding_length // attention.head_count``, llama.cpp's default key length."""
        embd, heads = self.value("embedding_length"), self.value("attention.head_count")
        if embd is None or heads is None:
            return None
        first = heads[0] if isinstance(heads, list) else heads
        if first <= 0:
            return None
        return embd // first


_TENSORS = ("rope_freqs.weight", "rope_factors_long.weight", "rope_factors_short.weight")

# ----------------------------------------------------------------- the bounded reader
# GGUF value types (ggml's gguf.h, enum gguf_type): name, struct format, size in bytes.
_GGUF_TYPES = {
    0: ("uint8", "<B", 1),
    1: ("int8", "<b", 1),
    2: ("uint16", "<H", 2),
    3: ("int16", "<h", 2),
    4: ("uint32", "<I", 4),
    5: ("int32", "<i", 4),
    6: ("float32", "<f", 4),
    7: ("bool", "<B", 1),
    8: ("string", None, None),
    9: ("array", None, None),
    10: ("uint64", "<Q", 8),
    11: ("int64", "<q", 8),
    12: ("float64", "<d", 8),
}
_STRING, _ARRAY, _BOOL = 8, 9, 7
# The versions llama.cpp reads (ggml's gguf.cpp refuses version 1 and later versions than 3).
_GGUF_VERSIONS = (2, 3)
# A key is at most 65535 bytes (the GGUF specification).
MAX_GGUF_KEY = 2**16 - 1
# The strings refimpl reads (an architecture, a scaling type) are short names.
_MAX_NAME = 256
# Tensor names are shorter than GGML_MAX_NAME = 64 bytes (gguf.cpp refuses longer ones).
_GGML_MAX_NAME = 64
# A tensor has at most GGML_MAX_DIMS = 4 dimensions.
_GGML_MAX_DIMS = 4
# ggml type of a float32 tensor (GGML_TYPE_F32): ggml_rope_ext takes only F32 factors.
_GGML_TYPE_F32 = 0
# The smallest key-value pair (an empty key, a type and one byte) and tensor description (an
# empty name, a dimension count, a type and an offset): counts beyond what the bytes left can
# hold are refused before any loop runs.
_MIN_KV_BYTES = 8 + 4 + 1
_MIN_TENSOR_BYTES = 8 + 4 + 4 + 8
# Keys of the table seen before general.architecture names the prefix: one architecture has at
# most one of each, so more than twice the table is not a file llama.cpp writes.
_MAX_PENDING = 2 * len(LLAMACPP_KEYS)
# Default data alignment (GGUF_DEFAULT_ALIGNMENT) and the read buffer.
_GGUF_ALIGNMENT = 32
_READ_BUFFER = 1 << 16
_U64 = struct.Struct("<Q")


class _Cursor:
    """Reads a GGUF file front to back; every length is checked against the bytes left before
    anything is read, skipped or allocated."""

    def __init__(self, fh, size: int, path: str):
        self.fh, self.size, self.path, self.pos = fh, size, path, 0

    def need(self, n: int, what: str) -> None:
        left = self.size - self.pos
        if n > left:
            raise ValueError(
                f"{self.path}: damaged or truncated GGUF file: {what} needs {n} bytes at "
                f"offset {self.pos}, {left} are left"
            )

    def take(self, n: int, what: str) -> bytes:
        self.need(n, what)
        data = self.fh.read(n)
        if len(data) != n:
            raise ValueError(f"{self.path}: damaged or truncated GGUF file (it changed while read)")
        self.pos += n
        return data

    def skip(self, n: int, what: str) -> None:
        self.need(n, what)
        self.fh.seek(n, os.SEEK_CUR)
        self.pos += n

    def scalar(self, code: int, what: str):
        _, fmt, size = _GGUF_TYPES[code]
        value = struct.unpack(fmt, self.take(size, what))[0]
        return value != 0 if code == _BOOL else value

    def u32(self, what: str) -> int:
        return self.scalar(4, what)

    def u64(self, what: str) -> int:
        return self.scalar(10, what)

    def string(self, what: str, limit: int, *, strict: bool = True) -> str:
        """A string of at most ``limit`` bytes. Names (keys, tensor names) are compared, not
        shown, and llama.cpp takes any bytes there (``strict=False``: undecodable bytes
        never match a name refimpl reads); a value refimpl uses must be UTF-8."""
        n = self.u64(f"the length of {what}")
        if n > limit:
            self.need(n, what)  # a length beyond the file is damage, not a long string
            raise ValueError(f"{self.path}: {what} is {n} bytes long; at most {limit} are read")
        raw = self.take(n, what)
        try:
            return raw.decode("utf-8") if strict else raw.decode("utf-8", "replace")
        except UnicodeDecodeError:
            raise ValueError(f"{self.path}: {what} is not UTF-8 text") from None

    def value_type(self, what: str) -> int:
        code = self.u32(f"the type of {what}")
        if code not in _GGUF_TYPES:
            raise ValueError(f"{self.path}: {what} has invalid GGUF type {code}")
        return code

    def array_header(self, key: str) -> tuple[int, int]:
        """Element type and count of an array, refusing nested arrays as llama.cpp does."""
        code = self.value_type(f"the elements of {key}")
        if code == _ARRAY:
            raise ValueError(
                f"{self.path}: {key} is an array of arrays; llama.cpp refuses nested arrays "
                "(gguf.cpp: invalid GGUF type)"
            )
        n = self.u64(f"the length of {key}")
        size = _GGUF_TYPES[code][2]
        self.need(n * (8 if code == _STRING else size), f"{key}'s {n} elements")
        return code, n

    def skip_value(self, code: int, key: str) -> None:
        """Step over a value without reading it (strings and arrays by their lengths)."""
        if code == _STRING:
            self.skip(self.u64(f"the length of {key}"), key)
        elif code == _ARRAY:
            elem, n = self.array_header(key)
            if elem != _STRING:
                self.skip(n * _GGUF_TYPES[elem][2], key)
                return
            self.skip_strings(n, key)
        else:
            self.skip(_GGUF_TYPES[code][2], key)

    def skip_strings(self, n: int, key: str) -> None:
        """Step over ``n`` length-prefixed strings, reading the lengths from blocks of at most
        ``_READ_BUFFER`` bytes (memory bounded by one block)."""
        while n:
            block = self.fh.read(min(_READ_BUFFER, self.size - self.pos))
            off, end = 0, len(block)
            while n and off + 8 <= end:
                (length,) = _U64.unpack_from(block, off)
                if off + 8 + length > end:
                    break
                off += 8 + length
                n -= 1
            self.fh.seek(self.pos + off)
            self.pos += off
            if n and off == 0:  # one string longer than a block (or the file's end)
                self.skip(self.u64(f"a string length in {key}"), key)
                n -= 1

    def read_value(self, code: int, key: str) -> tuple[str, object]:
        """``(type name, value)`` of a value refimpl uses; arrays of at most LLAMA_MAX_LAYERS
        entries, strings of at most ``_MAX_NAME`` bytes."""
        if code == _STRING:
            return "string", self.string(key, _MAX_NAME)
        if code != _ARRAY:
            return _GGUF_TYPES[code][0], self.scalar(code, key)
        elem, n = self.array_header(key)
        name = f"array<{_GGUF_TYPES[elem][0]}>"
        if n > LLAMA_MAX_LAYERS or elem == _STRING:
            raise ValueError(
                f"{self.path}: {key} is an {name} of {n} entries; llama.cpp reads it as one "
                f"entry per layer or section, at most {LLAMA_MAX_LAYERS}"
            )
        return name, [self.scalar(elem, key) for _ in range(n)]


def _suffix(key: str) -> str | None:
    """The table suffix of ``{arch}.{suffix}``, or None for a key refimpl does not read."""
    _, dot, rest = key.partition(".")
    return rest if dot and rest in LLAMACPP_KEYS else None


def _typed(path: str, key: str, type_name: str, value):
    """``value`` after checking its GGUF type against the table (llama.cpp's loader refuses a
    key of another type) and its rule."""
    entry = LLAMACPP_KEYS[_suffix(key)]
    if type_name not in entry.types:
        raise ValueError(
            f"{path}: {key} is stored as {type_name}; llama.cpp reads it as "
            f"{' or '.join(entry.types)} and refuses the file (key has wrong type)"
        )
    return value


@dataclasses.dataclass
class _Header:
    arch: str | None = None
    alignment: int = _GGUF_ALIGNMENT
    keys: dict = dataclasses.field(default_factory=dict)
    tensors: dict = dataclasses.field(default_factory=dict)  # name -> (shape, type, offset)


def _read_kv(cur: _Cursor, head: _Header, n_kv: int) -> None:
    """The key-value pairs: general.architecture, general.alignment and the table's keys are
    read (typed and bounded); every other value is skipped by its length."""
    pending: dict = {}
    for i in range(n_kv):
        key = cur.string(f"key {i}", MAX_GGUF_KEY, strict=False)
        code = cur.value_type(key)
        if key == "general.architecture":
            if code != _STRING or head.arch is not None:
                raise ValueError(f"{cur.path}: general.architecture must be one string")
            head.arch = cur.string(key, _MAX_NAME)
            if not head.arch:
                raise ValueError(f"{cur.path}: general.architecture is empty")
        elif key == "general.alignment":
            if code != 4:
                raise ValueError(f"{cur.path}: general.alignment must be a uint32")
            head.alignment = cur.u32(key)
            if head.alignment == 0 or head.alignment & (head.alignment - 1):
                raise ValueError(
                    f"{cur.path}: general.alignment must be a power of 2, got {head.alignment}"
                )
        elif _suffix(key) is not None and (head.arch is None or key.startswith(head.arch + ".")):
            if key in pending or key in head.keys:
                raise ValueError(f"{cur.path}: duplicate key {key} (llama.cpp refuses the file)")
            type_name, value = cur.read_value(code, key)
            pending[key] = (type_name, value)
            if len(pending) > _MAX_PENDING:
                raise ValueError(
                    f"{cur.path}: more than {_MAX_PENDING} rope keys before "
                    "general.architecture; a GGUF file holds one architecture's keys"
                )
        else:
            cur.skip_value(code, key)
        if head.arch is not None and pending:
            for k, (type_name, value) in pending.items():
                if k.startswith(head.arch + "."):
                    head.keys[k] = _typed(cur.path, k, type_name, value)
            pending.clear()


def _read_tensor_infos(cur: _Cursor, head: _Header, n_tensors: int) -> None:
    """Tensor descriptions: names, shapes, types and offsets; only the rope tensors kept."""
    for i in range(n_tensors):
        name = cur.string(f"tensor name {i}", _GGML_MAX_NAME - 1, strict=False)
        n_dims = cur.u32(f"the dimensions of {name}")
        if n_dims > _GGML_MAX_DIMS:
            raise ValueError(
                f"{cur.path}: tensor {name} has {n_dims} dimensions; ggml has at most "
                f"{_GGML_MAX_DIMS}"
            )
        shape = tuple(cur.u64(f"the shape of {name}") for _ in range(n_dims))
        ggml_type = cur.u32(f"the type of {name}")
        offset = cur.u64(f"the offset of {name}")
        if name in _TENSORS:
            head.tensors[name] = (shape, ggml_type, offset)


def _read_tensor(cur: _Cursor, name: str, info, data_start: int) -> np.ndarray:
    """A rope factor tensor: float32, one dimension (trailing 1s allowed, as in ggml), at most
    MAX_DIM / 2 entries, inside the file."""
    shape, ggml_type, offset = info
    if ggml_type != _GGML_TYPE_F32:
        raise ValueError(
            f"{cur.path}: tensor {name} has ggml type {ggml_type}; its factors must be F32 "
            "(type 0): ggml_rope_ext takes only float32 frequency factors"
        )
    if not shape or any(d != 1 for d in shape[1:]):
        raise ValueError(
            f"{cur.path}: tensor {name} has shape {list(shape)}; llama.cpp needs one factor "
            "per rotated pair, a 1-D tensor (n_rot/2,)"
        )
    n = shape[0]
    if not 1 <= n <= MAX_DIM // 2:
        raise ValueError(f"{cur.path}: tensor {name} has {n} factors; at most {MAX_DIM // 2}")
    start = data_start + offset
    if start + 4 * n > cur.size:
        raise ValueError(
            f"{cur.path}: damaged or truncated GGUF file: tensor {name} lies past the end"
        )
    cur.fh.seek(start)
    cur.pos = start
    data = np.frombuffer(cur.take(4 * n, f"tensor {name}"), dtype="<f4").astype(np.float32)
    if not np.all(np.isfinite(data)) or np.any(data <= 0):
        raise ValueError(f"{cur.path}: tensor {name} must hold finite positive factors")
    return data


def _read_file(p: str) -> _Header:
    size = os.path.getsize(p)
    head = _Header()
    with open(p, "rb", buffering=_READ_BUFFER) as fh:
        cur = _Cursor(fh, size, p)
        if size < 4 or cur.take(4, "the magic") != b"GGUF":
            raise ValueError(f"{p}: not a GGUF file (it does not start with the bytes 'GGUF')")
        version = cur.u32("the version")
        if version not in _GGUF_VERSIONS:
            raise ValueError(
                f"{p}: GGUF version {version}; llama.cpp reads versions 2 and 3 (gguf.cpp)"
            )
        n_tensors = cur.u64("the tensor count")
        n_kv = cur.u64("the key count")
        cur.need(
            n_kv * _MIN_KV_BYTES + n_tensors * _MIN_TENSOR_BYTES,
            f"{n_kv} keys and {n_tensors} tensors",
        )
        _read_kv(cur, head, n_kv)
        if head.arch is None:
            raise ValueError(f"{p}: GGUF file without a general.architecture string")
        _read_tensor_infos(cur, head, n_tensors)
        data_start = -(-cur.pos // head.alignment) * head.alignment
        head.tensors = {
            name: _read_tensor(cur, name, info, data_start) for name, info in head.tensors.items()
        }
    return head


def read_gguf_rope(path) -> GgufRope:
    """Read the rope metadata of a GGUF file with refimpl's bounded reader.

    Only the keys of :data:`LLAMACPP_KEYS` (and ``general.architecture`` and
    ``general.alignment``) and the rope factor tensors are read; every other key (a tokenizer
    of any size) is skipped by its length. Sizes, counts and string lengths are checked
    against the bytes left before anything is allocated, so a damaged or hostile file is
    refused at once, in bounded memory.

    Parameters
    ----------
    path : str or os.PathLike

    Returns
    -------
    GgufRope
        Keys of the table the file has (types and values checked), by full name.

    Raises
    ------
    ValueError
        One line naming the file (and the key or tensor): missing, not a GGUF file, a version
        llama.cpp does not read, truncated, no ``general.architecture``, a key of a type
        llama.cpp refuses or a value outside its rule (an unknown scaling type, an infinite
        factor, a layer count above llama.cpp's 512), nested arrays, duplicate keys, factor
        tensors that are not 1-D float32.
    """
    p = _path(path)
    if not os.path.isfile(p):
        raise ValueError(f"{p}: no such GGUF file")
    try:
        head = _read_file(p)
    except OSError as exc:
        raise ValueError(f"{p}: cannot read the file ({exc.strerror or exc})") from None
    rope = GgufRope(p, head.arch, head.keys, head.tensors)
    for key in head.keys:
        rope.value(key[len(head.arch) + 1 :])  # every stored value against its rule
    return rope


def _get_mscale(s: float, m: float) -> float:
    """YaRN's magnitude 1 + 0.1 m ln s (1 for s <= 1), as llama.cpp computes it."""
    return 1.0 if s <= 1.0 else 1.0 + 0.1 * m * math.log(s)


def llamacpp_rope_parameters(
    rope: GgufRope, *, layer_type: str | None = None, seq_len: int | None = None
) -> dict:
    r"""The ``ggml_rope_ext`` arguments llama.cpp derives from a GGUF file.

    Parameters
    ----------
    rope : GgufRope
    layer_type : {"full_attention", "sliding_attention"}, optional
        Sliding layers use the ``_swa`` base and width and no scaling.
    seq_len : int, optional
        The allocated per-sequence context (``n_ctx_seq``); chooses LongRoPE's factor set.

    Returns
    -------
    dict
        ``n_dims``, ``freq_base``, ``freq_scale``, ``ext_factor``, ``attn_factor``,
        ``beta_fast``, ``beta_slow``, ``n_ctx_orig`` and ``freq_factors`` (or None), the
        keywords of :func:`refimpl.engines.ggml_cos_sin`.

    Notes
    -----
    Every absent key takes llama.cpp's default from :data:`LLAMACPP_KEYS`: a
    ``rope.scaling.factor`` without ``rope.scaling.type`` is linear scaling, the legacy
    ``rope.scale_linear`` stands in for the factor, and a factor of 0 means none.

    Book equation ``eq:engines-llamacpp-attn``: when ``ext_factor != 0`` llama.cpp recomputes
    the YaRN magnitude (the file's ``yarn_attn_factor`` is not used), divides out the
    :math:`1 + 0.1 \ln(1/\text{freq\_scale})` that ggml multiplies in, and multiplies
    ``rope.scaling.attn_factor``.
    """
    sliding = layer_type == "sliding_attention"
    n_dims = rope.value("rope.dimension_count_swa" if sliding else "rope.dimension_count")
    if n_dims is None:
        raise ValueError(
            f"{rope.path}: no rope.dimension_count and no head width (attention.key_length, "
            "or embedding_length and attention.head_count)"
        )
    base = rope.value("rope.freq_base_swa" if sliding else "rope.freq_base")
    alpha = rope.value("rope.scaling.alpha")
    if alpha is not None and rope.arch in _ALPHA_ARCHS:
        head = rope.head_dim or n_dims  # NTK-alpha: base * alpha^(d / (d - 2)), d the head
        base = base * alpha ** (head / (head - 2))
    kind = "none" if sliding else rope.value("rope.scaling.type")
    factor = rope.value("rope.scaling.factor")
    freq_scale = 1.0 if kind == "none" or factor == 0.0 else 1.0 / factor
    n_ctx_orig = rope.value("rope.scaling.original_context_length") or 0
    ext = rope.value("rope.scaling.yarn_ext_factor")
    ext = (1.0 if kind == "yarn" else 0.0) if ext < 0 else ext
    if ext != 0.0 and n_ctx_orig == 0:
        raise ValueError(
            f"{rope.path}: YaRN needs rope.scaling.original_context_length or context_length "
            "(llama.cpp's n_ctx_orig_yarn)"
        )
    attn = rope.value("rope.scaling.attn_factor")
    if ext != 0.0:
        f = 1.0 / freq_scale
        log_mul = rope.value("rope.scaling.yarn_log_multiplier")
        if log_mul != 0.0:
            m = log_mul if rope.arch == "deepseek2" and log_mul != 1.0 else 1.0
            yarn = _get_mscale(f, m) / _get_mscale(f, log_mul)
        else:
            yarn = _get_mscale(f, 1.0)
        attn = yarn / (1.0 + 0.1 * math.log(f)) * attn  # [eq:engines-llamacpp-attn]
    factors = _factor_tensor(rope, kind, n_ctx_orig, seq_len, n_dims)
    return {
        "n_dims": n_dims,
        "freq_base": base,
        "freq_scale": freq_scale,
        "ext_factor": ext,
        "attn_factor": attn,
        "beta_fast": rope.value("rope.scaling.yarn_beta_fast"),
        "beta_slow": rope.value("rope.scaling.yarn_beta_slow"),
        "n_ctx_orig": n_ctx_orig,
        "freq_factors": factors,
    }


def _factor_tensor(rope: GgufRope, kind: str, n_ctx_orig: int, seq_len, n_dims: int):
    if kind == "longrope":
        use_long = seq_len is not None and seq_len > n_ctx_orig
        name = "rope_factors_long.weight" if use_long else "rope_factors_short.weight"
        if name not in rope.tensors:
            raise ValueError(f"{rope.path}: LongRoPE scaling without the tensor {name}")
    else:
        name = "rope_freqs.weight"
        if name not in rope.tensors:
            return None
    factors = rope.tensors[name]
    if len(factors) != n_dims // 2:
        raise ValueError(
            f"{rope.path}: tensor {name} has {len(factors)} factors; llama.cpp needs "
            f"n_rot/2 = {n_dims // 2} (create_tensor's shape check)"
        )
    return factors


def rope_from_gguf(path, *, layer_type: str | None = None, seq_len: int | None = None) -> RopeSpec:
    """The RoPE llama.cpp runs for a GGUF file, as a :class:`~refimpl.RopeSpec`.

    Parameters
    ----------
    path : str or os.PathLike
    layer_type : {"full_attention", "sliding_attention"}, optional
    seq_len : int, optional
        Allocated context (LongRoPE's factor set).

    Returns
    -------
    RopeSpec
        Exact float64 frequencies of llama.cpp's formulas, the magnitude llama.cpp uses as
        ``attention_scaling``, and the pairing in the GGUF's own weight layout (NORM:
        ``"interleaved"``; NEOX, MROPE, IMROPE: ``"half"``). M-RoPE files also carry
        ``mrope_section`` (the first three of ``rope.dimension_sections``) and
        ``mrope_layout`` (MROPE: ``"blocked"``; IMROPE: ggml's ``"imrope"``), with a note
        naming the pairs that IMROPE drives by the extra position row (0 for text tokens).

    Raises
    ------
    ValueError
        One line naming the file: unknown architecture, an M-RoPE file without (or with
        malformed, four-axis, or short) ``rope.dimension_sections``, or scaling refimpl has
        no method for.
    """
    if seq_len is not None:
        seq_len = check_positive_int(seq_len, "seq_len", maximum=MAX_POSITION)
    if layer_type is not None:
        check_choice(layer_type, "layer_type", ("full_attention", "sliding_attention"))
    return _spec_of(read_gguf_rope(path), layer_type, seq_len)


def _spec_of(rope: GgufRope, layer_type, seq_len) -> RopeSpec:
    """The spec llama.cpp runs for a file already read (see :func:`rope_from_gguf`)."""
    args = llamacpp_rope_parameters(rope, layer_type=layer_type, seq_len=seq_len)
    mode = rope.mode
    if mode is None:
        raise ValueError(
            f"{rope.path}: architecture {rope.arch!r} is not in refimpl's table of llama.cpp "
            f"rope types (known: {', '.join(sorted(ARCH_ROPE_MODES))})"
        )
    n = args["n_dims"]
    section, layout, mrope_notes = _mrope_fields(rope, mode, n)
    head = rope.head_dim or n
    if n > head:
        raise ValueError(
            f"{rope.path}: rope.dimension_count {n} exceeds the head width {head} "
            "(attention.key_length); llama.cpp cannot rotate more features than a head has"
        )
    rope_type, params = _spec_method(rope, args)
    try:
        exact = ROPE_SCALINGS[rope_type](dim=n, base=args["freq_base"], **params)
    except ValueError as exc:
        raise ValueError(f"{rope.path}: llama.cpp's {rope_type} parameters: {exc}") from None
    return RopeSpec(
        dim=head,
        rotary_dim=n,
        base=args["freq_base"],
        rope_type=rope_type,
        inv_freq=exact.inv_freq,
        attention_scaling=exact.attention_scaling,
        pairing="interleaved" if mode == "norm" else "half",
        params=params,
        max_position=rope.value("context_length"),
        mrope_section=section,
        mrope_layout=layout,
        notes=(f"read from GGUF ({rope.arch}, llama.cpp rope type {mode.upper()})", *mrope_notes),
        source=rope.path,
    )


def _mrope_fields(rope: GgufRope, mode: str, n_dims: int):
    """``(mrope_section, mrope_layout, notes)`` of an M-RoPE file, ``(None, None, ())`` else."""
    if mode not in _MROPE_LAYOUT_OF_MODE:
        return None, None, ()
    raw = rope.get("rope.dimension_sections")
    if raw is None:
        raise ValueError(
            f"{rope.path}: {rope.arch} files need rope.dimension_sections (llama.cpp refuses "
            "to load the file without it)"
        )
    ok = isinstance(raw, list) and len(raw) == 4
    if not ok or not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in raw):
        raise ValueError(
            f"{rope.path}: rope.dimension_sections must be 4 non-negative integers "
            f"(t, h, w, extra pairs), got {raw!r}"
        )
    if raw[3]:
        raise ValueError(
            f"{rope.path}: rope.dimension_sections {raw} gives {raw[3]} pairs to the extra "
            "position row; refimpl's RopeSpec has three M-RoPE axes (t, h, w)"
        )
    section = tuple(raw[:3])
    if sum(section) != n_dims // 2:
        raise ValueError(
            f"{rope.path}: rope.dimension_sections {raw} cover {sum(section)} pairs, "
            f"rope.dimension_count {n_dims} has {n_dims // 2}; ggml would repeat the sections "
            "cyclically, which refimpl's M-RoPE layouts cannot express"
        )
    layout = _MROPE_LAYOUT_OF_MODE[mode]
    notes = [f"M-RoPE sections {list(section)} laid out {layout} (llama.cpp {mode.upper()})"]
    extra = np.flatnonzero(mrope_axis_of_pair(section, layout) == 3).tolist()
    if extra:
        notes.append(
            f"pairs {extra} follow the extra position row, which llama.cpp sets to 0 for "
            "text tokens: they are not rotated for text"
        )
    return section, layout, tuple(notes)


def _spec_method(rope: GgufRope, args: dict) -> tuple[str, dict]:
    """Registry method and parameters reproducing llama.cpp's frequencies for ``args``."""
    ff, scale = args["freq_factors"], args["freq_scale"]
    ext = args["ext_factor"]
    if ext not in (0.0, 1.0):
        raise ValueError(
            f"{rope.path}: rope.scaling.yarn_ext_factor = {ext} (a partial extrapolation mix) "
            "has no refimpl method; refimpl would need YaRN's mix factor as a parameter"
        )
    if ext == 1.0:
        if ff is not None:
            raise ValueError(f"{rope.path}: YaRN with a rope_freqs tensor has no refimpl method")
        return "yarn", {
            "factor": 1.0 / scale,
            "original_max_position": args["n_ctx_orig"],
            "beta_fast": args["beta_fast"],
            "beta_slow": args["beta_slow"],
            "truncate": True,
            "attention_factor": args["attn_factor"] * (1.0 + 0.1 * math.log(1.0 / scale)),
        }
    if ff is not None or args["attn_factor"] != 1.0:
        factors = np.ones(args["n_dims"] // 2) if ff is None else np.asarray(ff, np.float64)
        return "freq_factors", {
            "factors": (factors / scale).tolist(),
            "attention_factor": args["attn_factor"],
        }
    return ("linear", {"factor": 1.0 / scale}) if scale != 1.0 else ("default", {})


def _llama3_factors(spec: RopeSpec, top_original) -> np.ndarray:
    """The rope_freqs divisors llama.cpp's converter writes for a llama3 config."""
    p = spec.params
    return llamacpp_llama3_factors(
        spec.rotary_dim,
        spec.base,
        p["factor"],
        p["low_freq_factor"],
        p["high_freq_factor"],
        top_original or _LLAMA3_CONVERTER_ORIGINAL,
    )


def gguf_rope_metadata(config) -> dict:
    """The rope keys and tensors llama.cpp's converter writes for a ``config.json``.

    Parameters
    ----------
    config : dict, str or os.PathLike
        A model configuration (as for :func:`refimpl.rope_from_config`).

    Returns
    -------
    dict
        ``{"arch": str, "keys": {full key: value}, "tensors": {name: float32 array}}``.

    Notes
    -----
    The mapping of ``convert_hf_to_gguf.py``: linear and YaRN scaling as ``scaling.*`` keys
    (YaRN's ``truncate``, ``mscale`` and ``mscale_all_dim`` are not written; DeepSeek's
    ``mscale_all_dim`` becomes ``yarn_log_multiplier = 0.1 * mscale_all_dim``); Llama 3's bands
    as a ``rope_freqs`` tensor computed with the *top-level* ``original_max_position_embeddings``
    (8192 when absent); LongRoPE as two factor tensors and ``scaling.attn_factor``; HunYuan's
    alpha as ``scaling.alpha``; M-RoPE sections padded to four.
    """
    cfg, _ = load_config(config)
    text = cfg.get("text_config") if isinstance(cfg.get("text_config"), dict) else cfg
    model_type = text.get("model_type", cfg.get("model_type"))
    arch = _HF_TO_ARCH.get(model_type)
    if arch is None:
        raise ValueError(
            f"model_type {model_type!r} has no GGUF architecture in refimpl's table (known: "
            f"{', '.join(sorted(_HF_TO_ARCH))})"
        )
    spec, local = _full_and_local(config)
    keys = {f"{arch}.rope.dimension_count": spec.rotary_dim, f"{arch}.rope.freq_base": spec.base}
    if text.get("max_position_embeddings"):
        keys[f"{arch}.context_length"] = int(text["max_position_embeddings"])
    tensors = {}
    _scaling_keys(spec, arch, text, keys, tensors)
    if spec.mrope_section is not None:
        keys[f"{arch}.rope.dimension_sections"] = [*spec.mrope_section, 0]
    if arch in _LINEAR_ATTENTION_ARCHS:  # qwen.py: add_full_attention_interval(..., 4)
        keys[f"{arch}.full_attention_interval"] = int(
            text.get("full_attention_interval") or _FULL_ATTENTION_INTERVAL
        )
    if local is not None and local.base != spec.base:
        keys[f"{arch}.rope.freq_base_swa"] = local.base
    return {"arch": arch, "keys": keys, "tensors": tensors}


def _scaling_keys(spec: RopeSpec, arch: str, text: dict, keys: dict, tensors: dict) -> None:
    p, k = spec.params, f"{arch}.rope.scaling"
    if spec.rope_type in ("linear", "yarn", "longrope"):
        keys[f"{k}.type"] = spec.rope_type
    if spec.rope_type in ("linear", "yarn") or (spec.rope_type == "longrope" and p.get("factor")):
        keys[f"{k}.factor"] = float(p.get("factor"))
    if spec.rope_type == "yarn":
        keys[f"{k}.original_context_length"] = int(p["original_max_position"])
        if p.get("attention_factor") is not None:
            keys[f"{k}.yarn_attn_factor"] = float(p["attention_factor"])
        for beta in ("beta_fast", "beta_slow"):  # written only when the config gives them
            if p.get(beta) is not None:
                keys[f"{k}.yarn_{beta}"] = float(p[beta])
        if arch == "deepseek2" and p.get("mscale_all_dim"):
            keys[f"{k}.yarn_log_multiplier"] = 0.1 * float(p["mscale_all_dim"])
    elif spec.rope_type == "longrope":
        keys[f"{k}.original_context_length"] = int(p["original_max_position"])
        keys[f"{k}.attn_factor"] = float(spec.attention_scaling)
        tensors["rope_factors_long.weight"] = np.asarray(p["long_factor"], np.float32)
        tensors["rope_factors_short.weight"] = np.asarray(p["short_factor"], np.float32)
    elif spec.rope_type == "llama3":
        top = text.get("original_max_position_embeddings")
        tensors["rope_freqs.weight"] = _llama3_factors(spec, top).astype(np.float32)
    elif spec.rope_type == "ntk_alpha":
        keys[f"{k}.alpha"] = float(p["alpha"])


def _full_and_local(config, seq_len=None) -> tuple[RopeSpec, RopeSpec | None]:
    """The spec of the full-attention layers (what ``rope.*`` describes) and of the
    sliding-window layers when the schedule has both (``rope.*_swa``)."""
    from .config import rope_schedule

    full = local = None
    for layer in rope_schedule(config, seq_len=seq_len):
        if layer.spec is None:
            continue
        if layer.layer_type == "sliding_attention":
            local = local or layer.spec
        else:
            full = full or layer.spec
    if full is None:
        if local is None:
            raise ValueError("the config has no layer with RoPE")
        full, local = local, None
    return full, local


def _sentence_keys(rope: GgufRope, meta: dict) -> list[str]:
    """Divergences of the keys llama.cpp uses from the converter's (base, widths, scaling
    keys). An absent key takes llama.cpp's default from :data:`LLAMACPP_KEYS` first: a file
    without ``yarn_beta_fast`` runs 32, which is no divergence from a config that says 32."""
    out = []
    if rope.arch != meta["arch"]:
        out.append(
            f"The GGUF's architecture is {rope.arch!r}; llama.cpp's converter writes "
            f"{meta['arch']!r} for this config."
        )
    for key, want in meta["keys"].items():
        name = key.split(".", 1)[1]
        got = rope.get(name)
        if got is None:
            used = _default_or_none(rope, name)
            if used is None:
                out.append(f"The GGUF lacks {name} (the config gives {want!r}).")
                continue
            if _same(used, want):
                continue
            out.append(
                f"The GGUF lacks {name}: llama.cpp uses {used!r} in its place, the config "
                f"gives {want!r}."
            )
        elif not _same(got, want):
            out.append(f"{name} is {got!r} in the GGUF, {want!r} from the config.")
    scaled = f"{rope.arch}.rope.scaling.type" in meta["keys"]
    kind = rope.get("rope.scaling.type")
    if kind not in (None, "none") and not scaled:
        out.append(f"The GGUF has rope.scaling.type = {kind!r}; the config has no scaling.")
    factor = _default_or_none(rope, "rope.scaling.factor")
    if kind is None and factor and factor != 1.0 and not scaled:
        out.append(
            f"The GGUF has a scaling factor {factor!r} without rope.scaling.type: llama.cpp "
            "reads it as linear scaling; the config has no scaling."
        )
    return out


def _default_or_none(rope: GgufRope, suffix: str):
    """llama.cpp's value for ``suffix`` (the stored one or its default), None where it has
    none or refuses the file."""
    if suffix not in LLAMACPP_KEYS:
        return rope.get(suffix)
    try:
        return rope.value(suffix)
    except ValueError:
        return None


def _same(got, want) -> bool:
    """Two key values agree (numbers up to float32 storage)."""
    if isinstance(want, (list, str)) or isinstance(got, (list, str)):
        return got == want
    return _near(got, want)


def _sentence_tensors(rope: GgufRope, meta: dict) -> list[str]:
    out = []
    for name, want in meta["tensors"].items():
        got = rope.tensors.get(name)
        if got is None:
            out.append(
                f"The GGUF has no {name} tensor: the config's scaling is lost (llama.cpp "
                "would run unscaled frequencies)."
            )
        elif got.shape != want.shape or np.max(np.abs(got - want) / want) > _F32_AGREE:
            i = int(np.argmax(np.abs(got - want) / want)) if got.shape == want.shape else 0
            out.append(
                f"The {name} tensor differs from the config's factors (pair {i}: "
                f"{float(got[i])!r} in the GGUF, {float(want[i])!r} from the config)."
            )
    for name in set(rope.tensors) - set(meta["tensors"]):
        out.append(f"The GGUF has a {name} tensor the config does not call for.")
    return out


def _sentence_semantics(rope: GgufRope, spec: RopeSpec, config) -> list[str]:
    """Where llama.cpp's semantics depart from transformers' for the same config."""
    out = []
    mode = rope.mode
    if mode is None:
        out.append(f"llama.cpp's rope type for {rope.arch!r} is not in refimpl's table.")
    elif mode in _MROPE_LAYOUT_OF_MODE:  # NEOX order; GLM's pairs permuted by the converter
        if spec.pairing != "half" and rope.arch not in _MROPE_PERMUTED_ARCHS:
            out.append(
                f"llama.cpp's {mode.upper()} rotates in NEOX order, but the config's "
                f"{spec.pairing} pairing is not permuted to it for {rope.arch!r}."
            )
    else:
        permuted = rope.arch in _PERMUTED_ARCHS and spec.pairing == "half"
        want = "norm" if spec.pairing == "interleaved" or permuted else "neox"
        if mode != want:
            out.append(
                f"llama.cpp uses rope type {mode.upper()} for {rope.arch!r}, but the config's "
                f"{spec.pairing} pairing needs {want.upper()}."
            )
    out += _sentence_mrope(rope, mode, spec)
    p = spec.params
    if spec.rope_type == "yarn" and p.get("truncate") is False:
        out.append(
            "The config sets truncate: false; llama.cpp always truncates YaRN's correction "
            "range (floor/ceil), so the ramp's edges differ."
        )
    if spec.rope_type == "llama3":
        cfg, _ = load_config(config)
        top = cfg.get("original_max_position_embeddings") or _LLAMA3_CONVERTER_ORIGINAL
        if int(top) != int(p["original_max_position"]):
            out.append(
                f"llama.cpp's converter computes rope_freqs with original context {int(top)} "
                f"(top-level key or 8192), the config's rope scaling says "
                f"{int(p['original_max_position'])}."
            )
    return out


def _sentence_mrope(rope: GgufRope, mode, spec: RopeSpec) -> list[str]:
    """M-RoPE divergences: sections llama.cpp ignores or lacks, and layouts that differ."""
    sections = rope.get("rope.dimension_sections")
    if mode not in _MROPE_LAYOUT_OF_MODE:
        why = "without rope.dimension_sections"
        if sections is not None:
            why = "it ignores the file's rope.dimension_sections"
        if spec.mrope_section is not None:
            return [
                f"llama.cpp runs 1-D RoPE ({str(mode).upper()}) for this {rope.arch!r} file "
                f"({why}): image and video tokens lose their t/h/w positions."
            ]
        if sections is not None:
            return [
                f"The GGUF has rope.dimension_sections, which llama.cpp ignores for {rope.arch!r}."
            ]
        return []
    if spec.mrope_section is None:
        return [
            f"llama.cpp runs M-RoPE ({mode.upper()}) for {rope.arch!r}; the config has no "
            "mrope_section (1-D RoPE)."
        ]
    layout = _MROPE_LAYOUT_OF_MODE[mode]
    if not isinstance(sections, list) or len(sections) != 4 or sections[3]:
        return []  # reported by the key comparison or by rope_from_gguf
    section = tuple(sections[:3])
    if sum(section) != spec.rotary_dim // 2:
        return []
    ours = mrope_axis_of_pair(section, layout)
    theirs = mrope_axis_of_pair(section, spec.mrope_layout)
    differ = np.flatnonzero(ours != theirs).tolist()
    if not differ:
        return []
    axes = "thwe"
    where = ", ".join(f"{j} ({axes[ours[j]]}, not {axes[theirs[j]]})" for j in differ[:8])
    more = f" and {len(differ) - 8} more" if len(differ) > 8 else ""
    text = " (the extra row is 0 for text tokens: those pairs are not rotated)"
    return [
        f"llama.cpp's {mode.upper()} ({layout} layout) drives pairs by other position rows "
        f"than the config's {spec.mrope_layout} layout: pairs {where}{more}"
        f"{text if 3 in ours[differ] else ''}."
    ]


def _sentence_numbers(rope: GgufRope, spec: RopeSpec) -> list[str]:
    """Frequencies and magnitude of llama.cpp's spec against the config's."""
    try:
        g = rope_from_gguf(rope.path, seq_len=spec.seq_len)
    except ValueError as exc:
        return [f"refimpl cannot build the rope llama.cpp runs for the GGUF: {exc}"]
    out = []
    if g.rotary_dim == spec.rotary_dim:
        rel = np.abs(g.inv_freq - spec.inv_freq) / np.where(spec.inv_freq == 0, 1, spec.inv_freq)
        if rel.max() > 1e-6:
            i = int(np.argmax(rel))
            out.append(
                f"llama.cpp's frequencies differ from the config's: pair {i} is "
                f"{g.inv_freq[i]:.9g} against {spec.inv_freq[i]:.9g} (relative {rel[i]:.2g})."
            )
    if abs(g.attention_scaling - spec.attention_scaling) > 1e-6 * spec.attention_scaling:
        out.append(
            f"llama.cpp multiplies cos and sin by {g.attention_scaling:.6g}; transformers "
            f"by {spec.attention_scaling:.6g}."
        )
    return out


def compare_gguf(gguf_path, config) -> list[str]:
    """Every divergence between a GGUF file's RoPE and the ``config.json`` it came from.

    Parameters
    ----------
    gguf_path : str or os.PathLike
    config : dict, str or os.PathLike

    Returns
    -------
    list of str
        Plain sentences, empty when llama.cpp runs the config's RoPE. The q/k row permutation
        of Llama-family conversions (NORM rope on permuted rows) is part of the mapping and is
        not reported.
    """
    rope = read_gguf_rope(gguf_path)
    meta = gguf_rope_metadata(config)
    spec, _ = _full_and_local(config)
    found = _sentence_keys(rope, meta) + _sentence_tensors(rope, meta)
    found += _sentence_semantics(rope, spec, config)
    for sentence in _sentence_numbers(rope, spec):
        if sentence not in found:
            found.append(sentence)
    return found


def _near(a, b) -> bool:
    """Two stored numbers agree up to float32 storage."""
    if a is None or b is None:
        return False
    scale = max(abs(float(a)), abs(float(b)), 1e-30)
    return abs(float(a) - float(b)) <= _F32_AGREE * scale


def _path(path) -> str:
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a str or os.PathLike, got {type(path).__name__}")
    return os.fspath(path)


def is_gguf(path) -> bool:
    """Whether ``path`` names an existing file that starts with GGUF's magic bytes."""
    p = _path(path)
    if not os.path.isfile(p):
        return False
    with open(p, "rb") as fh:
        return fh.read(4) == b"GGUF"


def _per_layer(rope: GgufRope, suffix: str, flags, n_layers: int) -> list[bool]:
    """A per-layer list, which llama.cpp requires to have one entry per block
    (get_key_or_arr: "key has wrong array length")."""
    if len(flags) != n_layers:
        raise ValueError(
            f"{rope.path}: {rope.arch}.{suffix} has {len(flags)} entries; llama.cpp needs one "
            f"per block (block_count {n_layers})"
        )
    return [bool(v) for v in flags]


def _sliding_layers(rope: GgufRope, n_layers: int) -> list[bool] | None:
    """Which layers are sliding-window layers, from ``attention.sliding_window_pattern``."""
    pattern = rope.value("attention.sliding_window_pattern")
    if isinstance(pattern, list):
        return _per_layer(rope, "attention.sliding_window_pattern", pattern, n_layers)
    if pattern is not None:  # every pattern-th layer is global
        return [(i + 1) % pattern != 0 for i in range(n_layers)]
    return None


def _linear_layers(rope: GgufRope, n_layers: int) -> list[bool] | None:
    """Which layers are linear attention (no RoPE) in llama.cpp, for the hybrid archs."""
    if rope.arch not in _LINEAR_ATTENTION_ARCHS:
        return None
    flags = rope.value("attention.recurrent_layers")
    if flags is not None:
        return _per_layer(rope, "attention.recurrent_layers", flags, n_layers)
    interval = rope.value("full_attention_interval")
    return [(i + 1) % interval != 0 for i in range(n_layers)]


def gguf_schedule(path, *, seq_len: int | None = None) -> RopeSchedule:
    """The per-layer RoPE llama.cpp runs for a GGUF file.

    Parameters
    ----------
    path : str or os.PathLike
    seq_len : int, optional
        Allocated context (LongRoPE's factor set).

    Returns
    -------
    RopeSchedule
        One :class:`~refimpl.config.LayerRope` per block (``{arch}.block_count``, which
        llama.cpp requires, at most its ``LLAMA_MAX_LAYERS`` = 512); sliding
        layers (``attention.sliding_window_pattern`` with ``rope.freq_base_swa``) get their
        own spec; llama.cpp's every-4th-layer NoPE rule for Llama 4 and SmolLM3 gives
        ``spec=None`` there, and so do the linear-attention layers of Qwen3-Next and Qwen3.5
        (``attention.recurrent_layers``, else all but every ``full_attention_interval``-th
        layer, 4 when the key is absent).
    """
    rope = read_gguf_rope(path)
    notes = [f"read from GGUF: architecture {rope.arch}"]
    if seq_len is not None:
        seq_len = check_positive_int(seq_len, "seq_len", maximum=MAX_POSITION)
    full = _spec_of(rope, None, seq_len)
    n_layers = rope.value("block_count")  # 1 .. LLAMA_MAX_LAYERS; required by llama.cpp
    has_swa = rope.get("rope.freq_base_swa") is not None
    sliding = _sliding_layers(rope, n_layers) if has_swa else None
    if has_swa and sliding is None:
        notes.append("rope.freq_base_swa is set but no sliding_window_pattern says which layers")
    local = _spec_of(rope, "sliding_attention", None) if sliding else None
    linear = _linear_layers(rope, n_layers)
    layers = []
    for i in range(n_layers):
        if rope.arch in _NO_ROPE_EVERY_4TH and (i + 1) % _NO_ROPE_STEP == 0:
            layers.append(LayerRope(i, "full_attention", None))
        elif linear and linear[i]:
            layers.append(LayerRope(i, "linear_attention", None))
        elif sliding and sliding[i]:
            layers.append(LayerRope(i, "sliding_attention", local))
        else:
            layers.append(LayerRope(i, "full_attention", full))
    return RopeSchedule(tuple(layers), tuple(notes), rope.path, rope.arch)
