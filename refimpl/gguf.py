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

The ``gguf`` package (the format's own reader, the ``engines`` extra) is imported only when a
file is read; ``import refimpl`` stays NumPy-only.
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Mapping

import numpy as np

from .config import LayerRope, RopeSchedule, RopeSpec, load_config
from .multiaxis import mrope_axis_of_pair
from .pipelines import llamacpp_llama3_factors
from .scaling import ROPE_SCALINGS

__all__ = [
    "ARCH_ROPE_MODES",
    "GgufRope",
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
# llama.cpp's defaults: the YaRN betas (llama-context.cpp) and Llama 3's original context
# read from the top level of config.json by the converter when it is absent there.
_LLAMACPP_BETAS = (32.0, 1.0)
_LLAMA3_CONVERTER_ORIGINAL = 8192
# Architectures whose every 4th layer has no RoPE in llama.cpp (n_no_rope_layer_step = 4).
_NO_ROPE_EVERY_4TH = frozenset({"llama4", "smollm3"})
_NO_ROPE_STEP = 4
# Hybrids with linear-attention (recurrent, no RoPE) layers: attention.recurrent_layers when the
# file has it, else all but every full_attention_interval-th layer (src/models/qwen3next.cpp,
# qwen35.cpp: is_recr_impl[i] = (i + 1) % interval != 0, interval 4 when absent).
_LINEAR_ATTENTION_ARCHS = frozenset({"qwen3next", "qwen35", "qwen35moe"})
_FULL_ATTENTION_INTERVAL = 4
# float32 storage of a float key: values agree when within a few float32 rounding errors.
_F32_AGREE = 4 * 2.0**-24


@dataclasses.dataclass(frozen=True)
class GgufRope:
    """The rope metadata of one GGUF file (keys and factor tensors), as stored.

    Attributes
    ----------
    path : str
    arch : str
        ``general.architecture``.
    keys : Mapping[str, object]
        Every ``{arch}.rope.*`` key plus ``{arch}.context_length``,
        ``{arch}.attention.key_length``, ``{arch}.embedding_length`` and
        ``{arch}.attention.head_count`` when present, by full name.
    tensors : Mapping[str, numpy.ndarray]
        ``rope_freqs.weight``, ``rope_factors_long.weight``, ``rope_factors_short.weight``
        (float32) when present.
    """

    path: str
    arch: str
    keys: Mapping
    tensors: Mapping

    def get(self, suffix: str, default=None):
        """The value of ``{arch}.{suffix}`` (e.g. ``"rope.freq_base"``), or ``default``."""
        return self.keys.get(f"{self.arch}.{suffix}", default)

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
        """``attention.key_length``, else ``embedding_length // attention.head_count``."""
        k = self.get("attention.key_length")
        if k is not None:
            return int(k)
        e, h = self.get("embedding_length"), self.get("attention.head_count")
        return int(e) // int(h) if e and h else None


_TENSORS = ("rope_freqs.weight", "rope_factors_long.weight", "rope_factors_short.weight")
_OTHER_KEYS = (
    "context_length",
    "attention.key_length",
    "embedding_length",
    "attention.head_count",
    "block_count",
    "attention.sliding_window_pattern",
    "full_attention_interval",
    "attention.recurrent_layers",
)


def _field_value(field):
    """A GGUF field's value as Python (scalar, string or list)."""
    value = field.contents()
    return value.tolist() if isinstance(value, np.ndarray) else value


def read_gguf_rope(path) -> GgufRope:
    """Read the rope metadata of a GGUF file.

    Parameters
    ----------
    path : str or os.PathLike

    Returns
    -------
    GgufRope

    Raises
    ------
    ValueError
        One line naming the file when it is missing, not a GGUF file, truncated or has no
        ``general.architecture``.
    """
    p = _path(path)
    if not os.path.isfile(p):
        raise ValueError(f"{p}: no such GGUF file")
    with open(p, "rb") as fh:
        magic = fh.read(4)
    if magic != b"GGUF":
        raise ValueError(f"{p}: not a GGUF file (it does not start with the bytes 'GGUF')")
    try:
        import gguf  # the format's reader (engines extra)
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ValueError("reading GGUF files needs the 'gguf' package (pip install gguf)") from exc
    try:
        reader = gguf.GGUFReader(p)
        fields = {name: _field_value(f) for name, f in reader.fields.items()}
        tensors = {
            t.name: np.array(t.data, dtype=np.float32).reshape(-1)
            for t in reader.tensors
            if t.name in _TENSORS
        }
    except (ValueError, OSError, IndexError, KeyError, TypeError, AttributeError) as exc:
        raise ValueError(f"{p}: damaged or truncated GGUF file ({type(exc).__name__})") from exc
    arch = fields.get("general.architecture")
    if not isinstance(arch, str):
        raise ValueError(f"{p}: GGUF file without a general.architecture string")
    wanted = {f"{arch}.{k}" for k in _OTHER_KEYS}
    keys = {k: v for k, v in fields.items() if k.startswith(f"{arch}.rope.") or k in wanted}
    return GgufRope(p, arch, keys, tensors)


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
    Book equation ``eq:engines-llamacpp-attn``: when ``ext_factor != 0`` llama.cpp recomputes
    the YaRN magnitude (the file's ``yarn_attn_factor`` is not used), divides out the
    :math:`1 + 0.1 \ln(1/\text{freq\_scale})` that ggml multiplies in, and multiplies
    ``rope.scaling.attn_factor``.
    """
    sliding = layer_type == "sliding_attention"
    n_dims = rope.get("rope.dimension_count_swa" if sliding else "rope.dimension_count")
    n_dims = int(n_dims if n_dims is not None else (rope.head_dim or 0))
    if n_dims <= 0:
        raise ValueError(f"{rope.path}: no rope.dimension_count and no head width")
    base = rope.get("rope.freq_base_swa") if sliding else None
    base = float(base if base is not None else rope.get("rope.freq_base", 10000.0))
    kind = "none" if sliding else str(rope.get("rope.scaling.type", "none"))
    factor = float(rope.get("rope.scaling.factor", 1.0) or 1.0)
    freq_scale = 1.0 if kind == "none" else 1.0 / factor
    n_ctx_orig = int(
        rope.get("rope.scaling.original_context_length", 0) or rope.get("context_length", 0) or 0
    )
    ext = float(rope.get("rope.scaling.yarn_ext_factor", -1.0))
    ext = (1.0 if kind == "yarn" else 0.0) if ext < 0 else ext
    attn = float(rope.get("rope.scaling.attn_factor", 1.0))
    if ext != 0.0:
        f = 1.0 / freq_scale
        log_mul = float(rope.get("rope.scaling.yarn_log_multiplier", 0.0))
        if log_mul != 0.0:
            m = log_mul if rope.arch == "deepseek2" and log_mul != 1.0 else 1.0
            yarn = _get_mscale(f, m) / _get_mscale(f, log_mul)
        else:
            yarn = _get_mscale(f, 1.0)
        attn = yarn / (1.0 + 0.1 * math.log(f)) * attn  # [eq:engines-llamacpp-attn]
    factors = _factor_tensor(rope, kind, n_ctx_orig, seq_len)
    return {
        "n_dims": n_dims,
        "freq_base": base,
        "freq_scale": freq_scale,
        "ext_factor": ext,
        "attn_factor": attn,
        "beta_fast": float(rope.get("rope.scaling.yarn_beta_fast", _LLAMACPP_BETAS[0])),
        "beta_slow": float(rope.get("rope.scaling.yarn_beta_slow", _LLAMACPP_BETAS[1])),
        "n_ctx_orig": n_ctx_orig,
        "freq_factors": factors,
    }


def _factor_tensor(rope: GgufRope, kind: str, n_ctx_orig: int, seq_len):
    if kind == "longrope":
        use_long = seq_len is not None and seq_len > n_ctx_orig
        name = "rope_factors_long.weight" if use_long else "rope_factors_short.weight"
        if name not in rope.tensors:
            raise ValueError(f"{rope.path}: LongRoPE scaling without the tensor {name}")
        return rope.tensors[name]
    return rope.tensors.get("rope_freqs.weight")


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
    rope = read_gguf_rope(path)
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
    rope_type, params = _spec_method(rope, args)
    exact = ROPE_SCALINGS[rope_type](dim=n, base=args["freq_base"], **params)
    return RopeSpec(
        dim=head,
        rotary_dim=n,
        base=args["freq_base"],
        rope_type=rope_type,
        inv_freq=exact.inv_freq,
        attention_scaling=exact.attention_scaling,
        pairing="interleaved" if mode == "norm" else "half",
        params=params,
        max_position=int(rope.get("context_length")) if rope.get("context_length") else None,
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
        keys[f"{k}.yarn_beta_fast"] = float(p.get("beta_fast", _LLAMACPP_BETAS[0]))
        keys[f"{k}.yarn_beta_slow"] = float(p.get("beta_slow", _LLAMACPP_BETAS[1]))
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
    """Divergences of the stored keys from the converter's (base, widths, scaling keys)."""
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
            out.append(f"The GGUF lacks {name} (the config gives {want!r}).")
        elif isinstance(want, (list, str)) and got != want:
            out.append(f"{name} is {got!r} in the GGUF, {want!r} from the config.")
        elif isinstance(want, (int, float)) and not _near(got, want):
            out.append(f"{name} is {got!r} in the GGUF, {want!r} from the config.")
    for name in ("rope.scaling.type",):
        if rope.get(name) not in (None, "none") and f"{rope.arch}.{name}" not in meta["keys"]:
            out.append(f"The GGUF has {name} = {rope.get(name)!r}; the config has no scaling.")
    return out


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


def _sliding_layers(rope: GgufRope, n_layers: int) -> list[bool] | None:
    """Which layers are sliding-window layers, from ``attention.sliding_window_pattern``."""
    pattern = rope.get("attention.sliding_window_pattern")
    if isinstance(pattern, list) and len(pattern) == n_layers:
        return [bool(v) for v in pattern]
    if isinstance(pattern, int) and pattern > 0:  # every pattern-th layer is global
        return [(i + 1) % pattern != 0 for i in range(n_layers)]
    return None


def _linear_layers(rope: GgufRope, n_layers: int) -> list[bool] | None:
    """Which layers are linear attention (no RoPE) in llama.cpp, for the hybrid archs."""
    if rope.arch not in _LINEAR_ATTENTION_ARCHS:
        return None
    flags = rope.get("attention.recurrent_layers")
    if isinstance(flags, list) and len(flags) == n_layers:
        return [bool(v) for v in flags]
    interval = int(rope.get("full_attention_interval", _FULL_ATTENTION_INTERVAL))
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
        One :class:`~refimpl.config.LayerRope` per block (``{arch}.block_count``); sliding
        layers (``attention.sliding_window_pattern`` with ``rope.freq_base_swa``) get their
        own spec; llama.cpp's every-4th-layer NoPE rule for Llama 4 and SmolLM3 gives
        ``spec=None`` there, and so do the linear-attention layers of Qwen3-Next and Qwen3.5
        (``attention.recurrent_layers``, else all but every ``full_attention_interval``-th
        layer, 4 when the key is absent).
    """
    rope = read_gguf_rope(path)
    notes = [f"read from GGUF: architecture {rope.arch}"]
    n_layers = rope.keys.get(f"{rope.arch}.block_count")
    full = rope_from_gguf(path, seq_len=seq_len)
    if not n_layers:
        notes.append("no block_count in the file: one layer shown")
        n_layers = 1
    n_layers = int(n_layers)
    has_swa = rope.get("rope.freq_base_swa") is not None
    sliding = _sliding_layers(rope, n_layers) if has_swa else None
    if has_swa and sliding is None:
        notes.append("rope.freq_base_swa is set but no sliding_window_pattern says which layers")
    local = rope_from_gguf(path, layer_type="sliding_attention") if sliding else None
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
