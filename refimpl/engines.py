r"""RoPE as inference engines compute it: ggml (llama.cpp), MLX and vLLM, in their own arithmetic.

The engines' cos/sin arithmetic (:func:`ggml_cos_sin`, :func:`mlx_cos_sin`,
:func:`vllm_cos_sin`, re-exported here) lives in :mod:`refimpl.pipelines`, where a
:class:`~refimpl.RopeSpec` evaluates it by precision name (``spec.cos_sin(positions,
precision="ggml-float32")``). This module holds what each engine *means* for a config:
:func:`engine_differences` (attention factor, ramp truncation, length policy, rope type, and
the table and score error against transformers) and :func:`frequency_switch_error`.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping

import numpy as np

from ._checks import as_inv_freq, as_positions, check_positive_int
from .pipelines import (
    PRECISIONS,
    _uses_long,
    ggml_cos_sin,
    ggml_yarn_corr_dims,
    mlx_cos_sin,
    spec_mlx_arguments,
    spec_vllm_arguments,
    vllm_cos_sin,
)
from .rotary import reference_rotation

__all__ = [
    "ENGINE_PRECISIONS",
    "EngineReport",
    "engine_differences",
    "frequency_switch_error",
    "ggml_cos_sin",
    "ggml_yarn_corr_dims",
    "mlx_cos_sin",
    "vllm_cos_sin",
]

#: The engine precision names of the registry :data:`refimpl.pipelines.PRECISIONS`.
ENGINE_PRECISIONS = tuple(n for n, p in PRECISIONS.items() if p.engine in ("ggml", "mlx", "vllm"))
_F32 = np.float32


# ---------------------------------------------------------------------------------------------
# Engine semantics: what each engine computes for a transformers config.

# Positions sampled for the table and score comparisons: every position below this many, then
# a geometric grid up to the model's context (the largest differences sit at the far end).
_DENSE_POSITIONS = 64
_GRID_POSITIONS = 64
# Random unit queries and keys for the score comparison (seeded; the maximum over them).
_SCORE_VECTORS = 8


@dataclasses.dataclass(frozen=True)
class EngineReport:
    """How one engine computes the RoPE of a config, and how far it lands from transformers.

    Attributes
    ----------
    engine : str
    source : str
        The engine code (and version) the semantics were read from.
    attention_factor : float
        What the engine multiplies into cos and sin (transformers' is in ``reference_factor``).
    reference_factor : float
    truncated_ramp : bool or None
        Whether YaRN's correction range is rounded (None for other methods).
    length_policy : str
        When length-dependent frequencies (LongRoPE's set, dynamic NTK's base) change.
    rope_type : str
        The pairing the engine runs (in its own weight layout).
    max_table_error : float
        Largest ``|cos - cos_ref|``, ``|sin - sin_ref|`` over the sampled positions.
    max_score_error : float
        Largest difference of ``q_m . k_n`` for unit ``q``, ``k`` over sampled position pairs.
    positions : int
        Largest sampled position.
    notes : tuple of str
    backend : str
        Whose arithmetic the tables are: the engine's backend and its frequency recipe (a
        class of :data:`refimpl.pipelines.PIPELINE_CLASSES`).
    """

    engine: str
    source: str
    attention_factor: float
    reference_factor: float
    truncated_ramp: bool | None
    length_policy: str
    rope_type: str
    max_table_error: float
    max_score_error: float
    positions: int
    notes: tuple = ()
    backend: str = ""


def _sample_positions(max_position: int) -> np.ndarray:
    top = max(int(max_position) - 1, _DENSE_POSITIONS)
    grid = np.unique(np.round(np.geomspace(_DENSE_POSITIONS, top, _GRID_POSITIONS)))
    return np.concatenate([np.arange(_DENSE_POSITIONS), grid]).astype(np.int64)


def _unit_pairs(h: int, seed: int):
    """Seeded random unit queries and keys, each ``(_SCORE_VECTORS, 2h)``."""
    v = np.random.default_rng(seed).normal(size=(_SCORE_VECTORS, 2, 2 * h))
    v /= np.linalg.norm(v, axis=-1, keepdims=True)
    return v[:, 0], v[:, 1]


def _rotated(x: np.ndarray, cos, sin) -> np.ndarray:
    """Every vector of ``x`` (V, d) rotated at every table row: (V, seq, d), half pairing."""
    c, s = np.asarray(cos, np.float64), np.asarray(sin, np.float64)
    xs = np.broadcast_to(x[:, None, :], (x.shape[0], c.shape[0], x.shape[1]))
    return reference_rotation(xs, c, s, pairing="half")


def _scores(cos, sin, seed: int = 0) -> np.ndarray:
    """q_m . k_n of seeded unit vectors rotated with the tables (half pairing)."""
    q, k = _unit_pairs(cos.shape[1], seed)
    return np.einsum("vmd,vnd->vmn", _rotated(q, cos, sin), _rotated(k, cos, sin))


def _yarn_notes(params: Mapping, engine: str) -> list[str]:
    """What the engine does not read of a YaRN config (vLLM 0.33 forwards every key)."""
    notes = []
    if engine == "mlx-lm" and params.get("attention_factor") is not None:
        notes.append("attention_factor is ignored (A from mscale / mscale_all_dim only)")
    if engine == "llama.cpp" and params.get("attention_factor") is not None:
        notes.append("attention_factor is recomputed at load time (the GGUF's value is unused)")
    if params.get("truncate") is False and engine in ("mlx-lm", "llama.cpp"):
        notes.append("truncate: false is ignored (the correction range is always rounded)")
    return notes


_SOURCES = {
    "llama.cpp": "llama.cpp convert_hf_to_gguf.py, src/llama-context.cpp and ggml's CPU rope "
    "(kernel tested live with ggml-python 0.0.45)",
    "vllm": "vLLM 0.33.0 model_executor/layers/rotary_embedding (get_rope's YaRN keys, static "
    "dynamic-NTK cache, LongRoPE by max_model_len, cache cast to the model dtype; cache "
    "construction tested live from the wheel's sources)",
    "mlx-lm": "mlx-lm 0.32.2 models/rope_utils.py (YarnRoPE, SuScaledRoPE always long) on "
    "mx.fast.rope (tested live with mlx 0.32.4)",
}
_BACKENDS = {
    "llama.cpp": "ggml's CPU kernel: frequencies by a running float32 product "
    "(float32-ggml-product)",
    "vllm": "forward_native (torch): a float32 cache of 1 / b**(2i/d) (float32-pow), cast to "
    "the model dtype",
    "mlx-lm": "mx.fast.rope on the CPU: frequencies exp(-i ln(b) / (d/2)) (float32-exp-log); "
    "its Metal and CUDA kernels form exp2(-(i / (d/2)) log2(b)) (float32-exp2-log2)",
}
_POLICIES = {
    "longrope": {
        "vllm": "long factors for every token when max_model_len > original",
        "mlx-lm": "always the long factors",
        "llama.cpp": "factor set chosen by the allocated context",
    },
    "dynamic": {
        "vllm": "one static base at the served length",
        "mlx-lm": "recomputed per call from max(T + offset, L), no reset",
        "llama.cpp": "not supported: runs the unscaled base",
    },
}
# How each engine names the spec's pairing (in the transformers weight layout).
_PAIRING_NAMES = {
    "vllm": {"half": "NEOX", "interleaved": "GPT-J"},
    "mlx-lm": {"half": "traditional=False", "interleaved": "traditional=True"},
}
# The registry precision and argument mapping of each engine whose tables come from the spec.
_ENGINE_PIPELINES = {"vllm": spec_vllm_arguments, "mlx-lm": spec_mlx_arguments}


def _full_spec(config, seq_len):
    from .gguf import _full_and_local

    return _full_and_local(config, seq_len=seq_len)[0]


def _llamacpp_tables(config, spec, pos, max_pos):
    """ggml's tables with the arguments llama.cpp derives from the converted config."""
    from .gguf import GgufRope, gguf_rope_metadata, llamacpp_rope_parameters

    meta = gguf_rope_metadata(config)
    keys = {**meta["keys"], f"{meta['arch']}.attention.key_length": spec.dim}
    rope = GgufRope("<converted>", meta["arch"], keys, meta["tensors"])
    c, s = ggml_cos_sin(pos, **llamacpp_rope_parameters(rope, seq_len=max_pos))
    return c, s, float(c[0, 0]), (rope.mode or "unknown").upper()


def _engine_spec(config, spec, engine: str, max_pos: int):
    """The spec an engine's length policy runs where the sequence's length selects another:
    vLLM's and mlx-lm's LongRoPE use the long factors below the switch; vLLM's dynamic NTK
    keeps the base of its static cache (the served length) above it."""
    if spec.rope_type == "longrope" and engine in ("vllm", "mlx-lm") and not _uses_long(spec):
        orig = int(spec.params["original_max_position"])
        return _full_spec(config, max(orig + 1, max_pos))
    if spec.rope_type == "dynamic" and engine == "vllm" and (spec.seq_len or 0) > max_pos:
        r = spec.rotary_dim  # the static cache's base is the config's, at every position
        plain = spec.base ** (-np.arange(0, r, 2) / r)
        return dataclasses.replace(spec, rope_type="default", inv_freq=plain, params={},
                                   seq_len=None)  # fmt: skip
    return spec


def _pipeline_tables(spec, engine: str, pos, model_dtype: str):
    """(cos, sin, attention factor) from the registry precision, or NaNs and the reason."""
    name = f"vllm-{model_dtype}" if engine == "vllm" else "mlx-float32"
    try:
        factor = float(_ENGINE_PIPELINES[engine](spec)[1])
        c, s = spec.cos_sin(pos, precision=name)
    except ValueError as exc:  # the engine cannot run this spec: say why, compute nothing
        nan = np.full((pos.shape[0], spec.rotary_dim // 2), np.nan)
        return nan, nan, math.nan, str(exc)
    return c, s, factor, None


def engine_differences(
    config, *, dtype: str | None = None, seq_len: int | None = None
) -> list[EngineReport]:
    """How llama.cpp, vLLM and MLX-LM compute a config's RoPE, against transformers.

    Parameters
    ----------
    config : dict, str or os.PathLike
        A model configuration (the full-attention layers' RoPE is compared).
    dtype : {"float32", "bfloat16", "float16"}, optional
        vLLM's model dtype (default: the config's ``torch_dtype``, else bfloat16).
    seq_len : int, optional
        The length of the sequence the tables are for (default ``max_position_embeddings``):
        transformers' dynamic NTK and LongRoPE choose their frequencies by it, the engines by
        their own policy (``length_policy``; llama.cpp's allocated context is taken to be
        ``seq_len``).

    Returns
    -------
    list of EngineReport
        One per engine. Positions sampled: 0..63, then 64 geometric steps up to
        ``max_position_embeddings - 1``; scores of 8 seeded unit query/key pairs over every pair
        of sampled positions.

    Notes
    -----
    The semantics come from the engines' sources as summarised in each report's ``source``.
    vLLM's and MLX-LM's tables are the spec's ``"vllm-<dtype>"`` and ``"mlx-float32"``
    precisions (:mod:`refimpl.pipelines`), llama.cpp's are ggml's with the arguments of the
    converted GGUF; all three are tested against the live engines (or, for vLLM, its own cache
    construction) in ``tests/engines``. Where an engine cannot run the config (no such method,
    another frequency set for the length), its report has NaN factor and errors and the reason
    in ``notes``.
    """
    from .config import load_config

    cfg, _ = load_config(config)
    text = cfg.get("text_config") if isinstance(cfg.get("text_config"), dict) else cfg
    max_pos = int(text.get("max_position_embeddings") or 4096)
    length = max_pos if seq_len is None else check_positive_int(seq_len, "seq_len")
    spec = _full_spec(config, length)
    pos = _sample_positions(length)
    ref_c, ref_s = spec.cos_sin(pos)
    ref_scores = _scores(ref_c, ref_s)
    model_dtype = dtype or _model_dtype(cfg)
    reports = []
    for engine in ("llama.cpp", "vllm", "mlx-lm"):
        notes = _yarn_notes(spec.params, engine) if spec.rope_type == "yarn" else []
        policy = _POLICIES.get(spec.rope_type, {}).get(
            engine, "frequencies do not depend on the length"
        )
        if engine == "llama.cpp":
            c, s, factor, mode = _llamacpp_tables(config, spec, pos, length)
        else:
            ran = _engine_spec(config, spec, engine, max_pos)
            c, s, factor, refused = _pipeline_tables(ran, engine, pos, model_dtype)
            notes += [refused] if refused else []
            mode = _PAIRING_NAMES[engine][spec.pairing]
        err = float(max(np.abs(c - ref_c).max(), np.abs(s - ref_s).max()))
        finite = bool(np.all(np.isfinite(c)) and np.all(np.isfinite(s)))  # refused: NaN
        score = float(np.abs(_scores(c, s) - ref_scores).max()) if finite else math.nan
        ramp = bool(spec.params.get("truncate", True)) if spec.rope_type == "yarn" else None
        if ramp is not None and engine != "vllm":
            ramp = True
        reports.append(
            EngineReport(
                engine,
                _SOURCES[engine],
                factor,
                spec.attention_scaling,
                ramp,
                policy,
                mode,
                err,
                score,
                int(pos[-1]),
                tuple(notes),
                _BACKENDS[engine],
            )
        )
    return reports


def _model_dtype(cfg: Mapping) -> str:
    value = cfg.get("torch_dtype") or cfg.get("dtype") or "bfloat16"
    return value if value in ("float32", "bfloat16", "float16") else "bfloat16"


def _tables(pos: np.ndarray, inv: np.ndarray):
    ang = pos[:, None] * inv  # [eq:engines-switch]
    return np.cos(ang), np.sin(ang)


def frequency_switch_error(
    inv_before, inv_after, *, key_positions, query_positions, seed: int = 0
) -> float:
    r"""Score error when cached keys keep one frequency set and new queries use another.

    An engine that switches frequencies mid-sequence (LongRoPE's short-to-long switch, a
    dynamic-NTK base recomputed at a new length) without re-rotating its cache scores
    :math:`q_m^\top R_{\text{after}}(m)^\top R_{\text{before}}(n)\,k_n`, which is no longer a
    function of :math:`n - m`.

    Parameters
    ----------
    inv_before, inv_after : array_like, shape (d/2,)
        Frequencies the keys were rotated with, and the queries are.
    key_positions, query_positions : array_like of int
    seed : int, default 0
        Seed of the 8 random unit query/key pairs.

    Returns
    -------
    float
        Largest ``|mixed score - consistent score|`` (both with the *after* set), over the
        vector pairs and every (query, key) position pair.

    Notes
    -----
    Book equation ``eq:engines-switch``.
    """
    a = as_inv_freq(inv_before, "inv_before", allow_zero=True)
    b = as_inv_freq(inv_after, "inv_after", allow_zero=True)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(
            f"inv_before and inv_after must be 1-D of one shape, got {a.shape}, {b.shape}"
        )
    kp = as_positions(key_positions, "key_positions")
    qp = as_positions(query_positions, "query_positions")
    q, k = _unit_pairs(a.shape[0], seed)
    q_after = _rotated(q, *_tables(qp, b))
    mixed = np.einsum("vmd,vnd->vmn", q_after, _rotated(k, *_tables(kp, a)))
    consistent = np.einsum("vmd,vnd->vmn", q_after, _rotated(k, *_tables(kp, b)))
    return float(np.abs(mixed - consistent).max())
