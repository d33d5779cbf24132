"""Model families: what a config's ``model_type`` says about its rotary embedding.

A ``config.json`` does not say everything about a model's RoPE: where the rotated width comes
from, how features are paired, which layers rotate at all and how queries are rescaled by
position are written in each model's code. This module holds those facts, one
:class:`Family` record per model family, each checked against the modeling and configuration
files of the pinned transformers (5.24, ``transformers/models/<name>/``) or, for families that
ship their own code, against that code (named in the record). :mod:`refimpl.config` reads
them; an explicit config flag (``rope_interleave``, ``partial_rotary_factor``, ``rotary_dim``,
``layer_types``, ``no_rope_layers``) wins over the family default, as it does in the model
code. A ``model_type`` that is not listed keeps the generic reading (``head_dim`` or
``hidden_size // num_attention_heads``, half pairing, every layer alike) and the spec says so
in a note.

The pieces:

* width sources (:data:`WIDTH_SOURCES`): ``head_dim`` (times ``partial_rotary_factor`` /
  ``rotary_pct``), ``qk_rope_head_dim`` (MLA: the decoupled rope head ``q_pe``/``k_pe``, which
  the attention concatenates after the ``qk_nope_head_dim`` features), ``rotary_dim``
  (GPT-J, CodeGen, MiniMax-M2: a leading slice of ``n_embd / n_head``), ``kv_channels``
  (ChatGLM: half of the head);
* pairing and output order: ``"half"`` (``i`` with ``i + r/2``) or ``"interleaved"``
  (``2i`` with ``2i+1``); MLA's ``rope_interleave`` reads adjacent pairs and writes the
  rotated pairs back in half order (``output_order="half"``);
* layer rules (:data:`LAYER_RULES`): which layers rotate, with which rope parameters and head
  width;
* query scaling (:class:`QueryScaling`): a per-position factor on the queries and a constant
  factor on the softmax scale.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from types import MappingProxyType

import numpy as np

from ._checks import MAX_DIM, as_positions, check_flag, check_int, check_real

__all__ = [
    "FAMILIES",
    "LAYER_RULES",
    "QUERY_SCALINGS",
    "WIDTH_SOURCES",
    "Family",
    "LayerPlan",
    "QueryScaling",
    "ReadOnlyDict",
    "Widths",
    "family_for",
    "layer_plan",
    "query_scaling",
    "rotary_widths",
]

WIDTH_SOURCES = ("head_dim", "qk_rope_head_dim", "rotary_dim", "kv_channels")
LAYER_RULES = (
    "uniform",
    "gemma2",
    "gemma3",
    "gemma4",
    "no_rope_layers",
    "sliding_rope_only",
    "exaone4",
    "linear_attention",
    "deepseek_v4",
)
QUERY_RULES = ("llama4_temperature", "llama_4_scaling_beta", "mla_mscale")
QUERY_SCALINGS = ("llama4_temperature", "llama_4_scaling_beta", "softmax_scale")


class ReadOnlyDict(dict):
    """A dict that refuses changes (the parameters of frozen records; unlike
    ``types.MappingProxyType`` it pickles and deep-copies)."""

    def _refuse(self, *args, **kwargs):
        raise TypeError("this mapping is read-only (the record it belongs to is frozen)")

    __setitem__ = __delitem__ = __ior__ = _refuse
    clear = pop = popitem = setdefault = update = _refuse

    def __reduce__(self):
        return (type(self), (dict(self),))


@dataclasses.dataclass(frozen=True)
class Family:
    """What one model family's code does with RoPE beyond the rope parameters.

    Attributes
    ----------
    name : str
        The family (its transformers ``model_type``).
    model_types : tuple of str
        Every ``model_type`` (and GGUF ``general.architecture`` name) read as this family.
    width : str
        One of :data:`WIDTH_SOURCES`: where the rotated width comes from.
    partial_default : float or None
        ``partial_rotary_factor`` the family's config class sets when the config omits it.
    pairing : {"half", "interleaved"}
        Pairing of the rotated features when no flag says otherwise.
    interleave_flag : str or None
        Config key that selects interleaved (true) or half (false) pairing.
    flag_default : bool
        The flag's value when the config omits it.
    flag_output_order : {"same", "half"}
        Output order of the rotated features when the flag selects interleaved pairing.
    output_order : {"same", "half"}
        Output order without a flag.
    rotary_slice : {"leading", "trailing"}
        Where the rotated slice sits in the head.
    layers : str
        One of :data:`LAYER_RULES`.
    query : tuple of str
        Query rules (:data:`QUERY_RULES`) the family's attention applies.
    mrope_layout : str or None
        Layout of M-RoPE sections (``"blocked"`` or ``"interleaved"``) for multimodal families.
    mrope_section : tuple of int or None
        Sections the model code uses when the config omits ``mrope_section``.
    honours_partial : bool
        Whether the family's code rotates ``int(head_dim * partial_rotary_factor)`` features
        (False: its default RoPE ignores the factor and its ``rotate_half`` turns whole heads).
    dynamic_alpha : bool
        ``rope_type: dynamic`` with a non-zero ``alpha`` is the static NTK-alpha base (HunYuan).
    rope_head_default : int or None
        ``qk_rope_head_dim`` the family's config class sets when the config omits it (MLA).
    base_from : str or None
        ``"gptj"``: the base is fixed at 10000 by the model code; ``"rope_ratio"``: ChatGLM's
        ``10000 * rope_ratio``; None: ``rope_theta``.
    source : str
        The code the rules were checked against.
    """

    name: str
    model_types: tuple = ()
    width: str = "head_dim"
    partial_default: float | None = None
    pairing: str = "half"
    interleave_flag: str | None = None
    flag_default: bool = False
    flag_output_order: str = "same"
    output_order: str = "same"
    rotary_slice: str = "leading"
    layers: str = "uniform"
    query: tuple = ()
    mrope_layout: str | None = None
    mrope_section: tuple | None = None
    honours_partial: bool = True
    dynamic_alpha: bool = False
    rope_head_default: int | None = None
    base_from: str | None = None
    source: str = ""

    def __post_init__(self):
        if self.width not in WIDTH_SOURCES:
            raise ValueError(f"width must be one of {WIDTH_SOURCES}, got {self.width!r}")
        if self.layers not in LAYER_RULES:
            raise ValueError(f"layers must be one of {LAYER_RULES}, got {self.layers!r}")
        for rule in self.query:
            if rule not in QUERY_RULES:
                raise ValueError(f"query rules must be among {QUERY_RULES}, got {rule!r}")


def _tf(name: str) -> str:
    return f"transformers 5.24 models/{name}/modeling_{name}.py, configuration_{name}.py"


_MLA = dict(
    width="qk_rope_head_dim",
    rope_head_default=64,
    interleave_flag="rope_interleave",
    flag_default=True,
    flag_output_order="half",
    query=("mla_mscale",),
)

_RECORDS = (
    # Half pairing, leading slice, one rope for every layer (the generic reading, listed so
    # that they carry no "unknown family" note).
    Family(
        "llama",
        (
            "llama",
            "mistral",
            "mixtral",
            "ministral",
            "qwen2",
            "qwen2_moe",
            "qwen3",
            "qwen3_moe",
            "granite",
            "olmo2",
            "olmo3",
            "starcoder2",
            "falcon",
            "gemma",
            "gpt_oss",
            "qwen3moe",
            "gpt-oss",
        ),
        honours_partial=False,
        source=_tf("llama") + " (rotate_half over whole heads; the default RoPE ignores "
        "partial_rotary_factor)",
    ),
    Family(
        "hunyuan_v1_dense",
        ("hunyuan_v1_dense", "hunyuan_v1_moe", "hunyuan-dense", "hunyuan-moe"),
        honours_partial=False,
        dynamic_alpha=True,
        source=_tf("hunyuan_v1_dense") + " (dynamic with alpha is the static ntk_alpha base)",
    ),
    Family("phi3", ("phi3",), source=_tf("phi3") + " (rotates the leading slice)"),
    Family("gpt_neox", ("gpt_neox", "gptneox"), partial_default=0.25, source=_tf("gpt_neox")),
    Family("stablelm", ("stablelm",), partial_default=0.25, source=_tf("stablelm")),
    Family("phi", ("phi", "phi2"), partial_default=0.5, source=_tf("phi")),
    Family("persimmon", ("persimmon",), partial_default=0.5, source=_tf("persimmon")),
    Family("nemotron", ("nemotron",), partial_default=0.5, source=_tf("nemotron")),
    Family("glm4_moe", ("glm4_moe", "glm4moe"), partial_default=0.5, source=_tf("glm4_moe")),
    Family(
        "minimax_m2",
        ("minimax_m2", "minimax-m2"),
        width="rotary_dim",
        source=_tf("minimax_m2") + " (partial_rotary_factor = rotary_dim / head_dim)",
    ),
    # Interleaved pairs.
    Family(
        "gptj",
        ("gptj", "codegen"),
        width="rotary_dim",
        pairing="interleaved",
        base_from="gptj",
        source=_tf("gptj") + ", codegen (rotate_every_two; base 10000 in the code)",
    ),
    Family(
        "cohere",
        ("cohere", "command-r"),
        pairing="interleaved",
        honours_partial=False,
        source=_tf("cohere") + " (repeat_interleave of the frequencies)",
    ),
    Family(
        "cohere2",
        ("cohere2",),
        pairing="interleaved",
        honours_partial=False,
        layers="sliding_rope_only",
        source=_tf("cohere2") + " (RoPE only where sliding_window is set)",
    ),
    Family(
        "glm",
        ("glm", "glm4"),
        partial_default=0.5,
        pairing="interleaved",
        source=_tf("glm") + ", glm4 (adjacent pairs inside the leading slice)",
    ),
    Family(  # GLM's rotation with M-RoPE sections (the text model alone has none)
        "glm4v",
        ("glm4v", "glm4v_text"),
        partial_default=0.5,
        pairing="interleaved",
        mrope_layout="blocked",
        mrope_section=(8, 12, 12),
        source=_tf("glm4v") + " (adjacent pairs inside the leading slice, M-RoPE sections)",
    ),
    Family(
        "glm4v_moe",
        ("glm4v_moe", "glm4v_moe_text"),
        partial_default=0.5,
        mrope_layout="blocked",
        mrope_section=(8, 12, 12),
        source=_tf("glm4v_moe") + " (rotate_half over the leading slice)",
    ),
    Family(
        "chatglm",
        ("chatglm",),
        width="kv_channels",
        pairing="interleaved",
        base_from="rope_ratio",
        source="THUDM chatglm modeling_chatglm.py (RotaryEmbedding(kv_channels // 2), "
        "base 10000 * rope_ratio); not a transformers 5.24 model",
    ),
    Family(
        "ernie4_5",
        ("ernie4_5", "ernie4_5_moe", "ernie4_5-moe"),
        pairing="interleaved",
        honours_partial=False,
        source=_tf("ernie4_5") + ", ernie4_5_moe (GLM-style interleaved over the head)",
    ),
    Family(
        "llama4",
        ("llama4", "llama4_text"),
        pairing="interleaved",
        honours_partial=False,
        layers="no_rope_layers",
        query=("llama4_temperature",),
        source=_tf("llama4") + " (complex form on adjacent pairs)",
    ),
    # MLA: the rope part of each q/k head.
    Family(
        "deepseek_v2",
        ("deepseek_v2", "deepseek2"),
        width="qk_rope_head_dim",
        rope_head_default=64,
        pairing="interleaved",
        query=("mla_mscale",),
        source=_tf("deepseek_v2") + " (complex form on adjacent pairs, same order out)",
    ),
    Family(
        "deepseek_v3",
        ("deepseek_v3", "kimi_k2"),
        **_MLA,
        source=_tf("deepseek_v3") + " (apply_rotary_pos_emb_interleave); kimi_k2 ships "
        "DeepseekV3 code",
    ),
    Family("glm4_moe_lite", ("glm4_moe_lite",), **_MLA, source=_tf("glm4_moe_lite")),
    Family(
        "mistral4",
        ("mistral4",),
        **{**_MLA, "query": ("llama_4_scaling_beta", "mla_mscale")},
        source=_tf("mistral4"),
    ),
    Family(
        "longcat_flash",
        ("longcat_flash",),
        width="qk_rope_head_dim",
        rope_head_default=64,
        pairing="interleaved",
        output_order="half",
        query=("mla_mscale",),
        source=_tf("longcat_flash") + " (always apply_rotary_pos_emb_interleave)",
    ),
    Family(
        "deepseek_v4",
        ("deepseek_v4",),
        pairing="interleaved",
        rotary_slice="trailing",
        layers="deepseek_v4",
        source=_tf("deepseek_v4") + " (trailing slice; sliding layers 'main', others 'compress')",
    ),
    # Per-layer schedules with half pairing.
    Family("gemma2", ("gemma2",), layers="gemma2", honours_partial=False, source=_tf("gemma2")),
    Family(
        "gemma3",
        ("gemma3", "gemma3_text"),
        layers="gemma3",
        honours_partial=False,
        source=_tf("gemma3"),
    ),
    Family(
        "gemma4",
        ("gemma4", "gemma4_text"),
        layers="gemma4",
        honours_partial=False,
        source=_tf("gemma4") + " (per_layer_config head widths; proportional full layers)",
    ),
    Family(
        "smollm3",
        ("smollm3",),
        layers="no_rope_layers",
        honours_partial=False,
        source=_tf("smollm3"),
    ),
    Family("exaone4", ("exaone4",), layers="exaone4", honours_partial=False, source=_tf("exaone4")),
    Family(
        "qwen3_next",
        ("qwen3_next", "qwen3next"),
        partial_default=0.25,
        layers="linear_attention",
        source=_tf("qwen3_next"),
    ),
    Family(
        "qwen3_5",
        ("qwen3_5", "qwen3_5_moe", "qwen35", "qwen35moe"),
        partial_default=0.25,
        layers="linear_attention",
        mrope_layout="interleaved",
        mrope_section=(11, 11, 10),
        source=_tf("qwen3_5") + " (interleaved M-RoPE sections)",
    ),
    Family(
        "ministral3",
        ("ministral3",),
        query=("llama_4_scaling_beta",),
        honours_partial=False,
        source=_tf("ministral3"),
    ),
    # Multimodal text decoders (M-RoPE; text positions reduce to 1-D RoPE).
    Family(
        "qwen2_vl",
        ("qwen2_vl", "qwen2_vl_text", "qwen2_5_vl", "qwen2_5_vl_text", "qwen2vl"),
        mrope_layout="blocked",
        mrope_section=(16, 24, 24),
        honours_partial=False,
        source=_tf("qwen2_vl") + ", qwen2_5_vl",
    ),
    Family(
        "qwen3_vl",
        ("qwen3_vl", "qwen3_vl_text", "qwen3_vl_moe", "qwen3_vl_moe_text", "qwen3vl", "qwen3vlmoe"),
        mrope_layout="interleaved",
        mrope_section=(24, 20, 20),
        honours_partial=False,
        source=_tf("qwen3_vl") + " (interleaved sections whatever mrope_interleaved says)",
    ),
)

FAMILIES: Mapping[str, Family] = MappingProxyType(
    {model_type: fam for fam in _RECORDS for model_type in (fam.name, *fam.model_types)}
)
"""``model_type`` (or GGUF architecture) -> :class:`Family`."""


def family_for(model_type) -> Family | None:
    """The family of a config's ``model_type`` (None when it is not listed).

    Examples
    --------
    >>> family_for("kimi_k2").name, family_for("deepseek2").width
    ('deepseek_v3', 'qk_rope_head_dim')
    >>> family_for("my_model") is None
    True
    """
    if model_type is None:
        return None
    if not isinstance(model_type, str):
        raise TypeError(f"config key model_type must be a string, got {model_type!r}")
    return FAMILIES.get(model_type)


# --------------------------------------------------------------------------- config values


def config_int(cfg: Mapping, key: str, *, minimum: int = 1, maximum: int | None = None):
    """``cfg[key]`` as an int (None when absent or null); JSON's ``8.0`` is accepted, a
    boolean, a fraction, NaN or inf is refused with the key's name."""
    value = cfg.get(key)
    if value is None:
        return None
    return check_int(
        value, f"config key {key}", minimum=minimum, maximum=maximum, integral_float=True
    )


def config_real(cfg: Mapping, key: str, default=None):
    """``cfg[key]`` as a finite float (``default`` when absent or null)."""
    value = cfg.get(key)
    if value is None:
        return default
    return check_real(value, f"config key {key}")


def config_flag(cfg: Mapping, key: str, default=None):
    """``cfg[key]`` as a bool (``default`` when absent or null); only true/false accepted."""
    value = cfg.get(key)
    if value is None:
        return default
    return check_flag(value, f"config key {key}")


# --------------------------------------------------------------------------- widths


@dataclasses.dataclass(frozen=True)
class Widths:
    """Head width, rotated width and the first rotated feature of one layer's heads."""

    head_dim: int
    rotary_dim: int
    rotary_offset: int = 0


def _head_dim(cfg: Mapping, notes: list) -> int:
    """``head_dim``, else ``hidden_size // num_attention_heads`` (or GPT-J's n_embd/n_head)."""
    head_dim = config_int(cfg, "head_dim", maximum=MAX_DIM)
    if head_dim is not None:
        return head_dim
    if "head_dim" in cfg:
        notes.append("head_dim is null: using hidden_size // num_attention_heads")
    hs_key = "hidden_size" if "hidden_size" in cfg else "n_embd"
    nh_key = "num_attention_heads" if "num_attention_heads" in cfg else "n_head"
    hs = config_int(cfg, hs_key, maximum=MAX_DIM * 1024)
    nh = config_int(cfg, nh_key, maximum=MAX_DIM)
    if hs is None or nh is None:
        raise ValueError(
            "config needs head_dim, or hidden_size and num_attention_heads (n_embd and "
            "n_head), to size RoPE"
        )
    if hs % nh:
        raise ValueError(
            f"config key {hs_key}={hs} is not divisible by {nh_key}={nh}; give head_dim"
        )
    return hs // nh


def _check_rotary(rotary: int, head_dim: int, offset: int, what: str) -> Widths:
    if rotary < 2 or rotary % 2:
        raise ValueError(f"rotary width {what} = {rotary} must be even and >= 2")
    if offset + rotary > head_dim:
        raise ValueError(
            f"rotary width {what} = {rotary} at offset {offset} exceeds the head width {head_dim}"
        )
    return Widths(head_dim, rotary, offset)


def rotary_widths(
    family: Family | None, cfg: Mapping, partial, notes: list, *, head_dim: int | None = None
) -> Widths:
    """The widths of one layer: the family's width source, or ``head_dim`` times ``partial``.

    Parameters
    ----------
    family : Family or None
    cfg : mapping
        The (text) config.
    partial : float or None
        ``partial_rotary_factor`` as read from the config (None: absent).
    notes : list of str
        Defaults applied are appended here.
    head_dim : int, optional
        A per-layer head width (Gemma 4's full-attention layers) that replaces the config's.

    Examples
    --------
    >>> rotary_widths(family_for("deepseek_v3"), {"qk_rope_head_dim": 64,
    ...               "qk_nope_head_dim": 128, "head_dim": 192}, None, [])
    Widths(head_dim=64, rotary_dim=64, rotary_offset=0)
    >>> rotary_widths(family_for("glm"), {"head_dim": 128}, None, [])
    Widths(head_dim=128, rotary_dim=64, rotary_offset=0)
    """
    source = family.width if family is not None else "head_dim"
    if source == "qk_rope_head_dim":
        rope = config_int(cfg, "qk_rope_head_dim", maximum=MAX_DIM)
        if rope is None and "qk_rope_head_dim" not in cfg and family.rope_head_default:
            rope = family.rope_head_default
            notes.append(f"no qk_rope_head_dim: {rope} ({family.name}'s config default)")
        if rope is None:
            raise ValueError(
                f"{family.name} (multi-head latent attention) needs config key "
                "qk_rope_head_dim: RoPE rotates only that decoupled part of each query and key"
            )
        notes.append(
            f"{family.name}: the spec is the decoupled rope head q_pe/k_pe ({rope} features), "
            "which follows the qk_nope_head_dim features in the attention's q/k head"
        )
        return _check_rotary(rope, rope, 0, "qk_rope_head_dim")
    if source == "kv_channels":
        width = config_int(cfg, "kv_channels", maximum=MAX_DIM) or _head_dim(cfg, notes)
        return _check_rotary(width // 2, width, 0, "kv_channels // 2")
    d = head_dim if head_dim is not None else _head_dim(cfg, notes)
    if source == "rotary_dim":
        rotary = config_int(cfg, "rotary_dim", maximum=MAX_DIM)
        if rotary is None and family.name == "gptj":
            if "rotary_dim" in cfg:
                raise ValueError(
                    "config key rotary_dim is null: GPT-J's code then sizes its tables by "
                    "n_embd, not the head, and cannot rotate a head; give rotary_dim"
                )
            rotary = 64
            notes.append("no rotary_dim: 64 (GPTJConfig's default)")
        if rotary is not None:
            if partial is not None and int(d * partial) != rotary:
                raise ValueError(
                    f"config gives rotary_dim={rotary} and partial_rotary_factor={partial}, "
                    f"which disagree for head_dim={d}"
                )
            return _check_rotary(rotary, d, 0, "rotary_dim")
    if partial is None and family is not None and family.partial_default is not None:
        partial = family.partial_default
        notes.append(
            f"no partial_rotary_factor: {partial:g} ({family.name}'s config default in "
            "transformers)"
        )
    partial = 1.0 if partial is None else partial
    rotary = int(d * partial)
    offset = d - rotary if family is not None and family.rotary_slice == "trailing" else 0
    return _check_rotary(rotary, d, offset, f"int(head_dim * partial_rotary_factor) for {d}")


def pairing_and_order(family: Family | None, cfg: Mapping, notes: list) -> tuple[str, str]:
    """``(pairing, output_order)`` of a family, an explicit interleave flag winning.

    Examples
    --------
    >>> pairing_and_order(family_for("deepseek_v3"), {"rope_interleave": False}, [])
    ('half', 'same')
    >>> pairing_and_order(family_for("deepseek_v3"), {}, [])
    ('interleaved', 'half')
    """
    if family is None:
        return "half", "same"
    if family.interleave_flag is not None:
        flag = config_flag(cfg, family.interleave_flag)
        if flag is None:
            flag = family.flag_default
            notes.append(f"no {family.interleave_flag}: {str(flag).lower()} ({family.name})")
        if flag:
            return "interleaved", family.flag_output_order
        return "half", "same"
    return family.pairing, family.output_order


# --------------------------------------------------------------------------- layers


@dataclasses.dataclass(frozen=True)
class LayerPlan:
    """One layer as the family's code builds it.

    ``rope_key`` names the entry of a nested ``rope_parameters`` the layer reads (its layer
    type, or DeepSeek-V4's ``main``/``compress`` label); ``uses_rope`` False is a NoPE layer;
    ``head_dim`` overrides the config's head width (Gemma 4 full-attention layers).
    """

    index: int
    layer_type: str
    rope_key: str
    uses_rope: bool = True
    head_dim: int | None = None


def _num_layers(cfg: Mapping, notes: list) -> int | None:
    for key in ("num_hidden_layers", "n_layer", "num_layers"):
        n = config_int(cfg, key, maximum=100_000)
        if n is not None:
            return n
    return None


def _pattern_types(n: int, pattern: int, hit: str, other: str) -> list[str]:
    """``other`` where ``(i + 1) % pattern`` is non-zero, ``hit`` at every ``pattern``-th."""
    return [other if (i + 1) % pattern else hit for i in range(n)]


def _layer_types(cfg: Mapping, family: Family | None, n: int | None, notes: list):
    """``layer_types`` of the config, or the family's default pattern (None if unknown)."""
    types = cfg.get("layer_types")
    if types is not None:
        if not isinstance(types, list) or not all(isinstance(t, str) for t in types):
            raise TypeError("config key layer_types must be a list of strings")
        if n is not None and len(types) != n:
            raise ValueError(
                f"config key layer_types has {len(types)} entries but num_hidden_layers={n}"
            )
        return list(types)
    rule = family.layers if family is not None else "uniform"
    if n is None or rule in ("uniform", "no_rope_layers", "deepseek_v4"):
        return None
    if rule == "gemma2":  # every other layer is full attention, one rope for both
        return _pattern_types(n, 2, "full_attention", "sliding_attention")
    key, default, hit, other = {
        "gemma3": ("sliding_window_pattern", 6, "full_attention", "sliding_attention"),
        "gemma4": ("sliding_window_pattern", 6, "full_attention", "sliding_attention"),
        "sliding_rope_only": ("sliding_window_pattern", 4, "full_attention", "sliding_attention"),
        "exaone4": ("sliding_window_pattern", 4, "full_attention", "sliding_attention"),
        "linear_attention": ("full_attention_interval", 4, "full_attention", "linear_attention"),
    }[rule]
    pattern = config_int(cfg, key, maximum=100_000)
    if pattern is None:
        pattern = default
        notes.append(f"no layer_types nor {key}: every {default}th layer is {hit}")
    types = _pattern_types(n, pattern, hit, other)
    if rule == "gemma4" and types and types[-1] != "full_attention":
        types[-1] = "full_attention"
        notes.append("gemma4: the last layer is full attention (as transformers forces)")
    return types


def _no_rope_flags(cfg: Mapping, family: Family, n: int | None, notes: list) -> list[bool]:
    flags = cfg.get("no_rope_layers")
    if flags is not None and not isinstance(flags, list):
        raise TypeError("config key no_rope_layers must be a list of 0/1 entries")
    # Llama 4 replaces an empty list by the interval rule; SmolLM3 only a missing one.
    if flags is None or (not flags and family.name == "llama4"):
        interval = config_int(cfg, "no_rope_layer_interval", maximum=100_000)
        if interval is None:
            interval = 4
            notes.append("no no_rope_layers nor no_rope_layer_interval: every 4th layer is NoPE")
        if n is None:
            raise ValueError(
                f"{family.name}: the NoPE layers follow no_rope_layer_interval, which needs "
                "num_hidden_layers"
            )
        return [(i + 1) % interval != 0 for i in range(n)]
    out = []
    for i, v in enumerate(flags):
        if isinstance(v, bool) or v not in (0, 1):
            raise ValueError(
                f"config key no_rope_layers[{i}] must be 1 (RoPE) or 0 (NoPE), got {v!r}"
            )
        out.append(v == 1)
    if n is not None and len(out) != n:
        raise ValueError(
            f"config key no_rope_layers has {len(out)} entries but num_hidden_layers={n}"
        )
    return out


def _gemma4_head_dims(cfg: Mapping, types: list[str], notes: list) -> list[int | None]:
    per_layer = cfg.get("per_layer_config")
    if per_layer is not None:
        if not isinstance(per_layer, dict):
            raise TypeError("config key per_layer_config must be an object (layer -> overrides)")
        dims: list[int | None] = [None] * len(types)
        for key, override in per_layer.items():
            idx = check_int(key if not isinstance(key, str) else _int_key(key), "per_layer_config")
            if not 0 <= idx < len(types):
                raise ValueError(f"config key per_layer_config names layer {idx} of {len(types)}")
            if not isinstance(override, dict):
                raise TypeError(f"config key per_layer_config[{key}] must be an object")
            dims[idx] = config_int(override, "head_dim", maximum=MAX_DIM)
        return dims
    width = config_int(cfg, "global_head_dim", maximum=MAX_DIM)
    if width is None:
        width = 512
        notes.append("gemma4: no global_head_dim: full-attention heads are 512 wide")
    return [width if t == "full_attention" else None for t in types]


def _int_key(key: str) -> int:
    try:
        return int(key)
    except ValueError:
        raise ValueError(f"config key per_layer_config has a non-integer layer {key!r}") from None


def layer_plan(
    family: Family | None, cfg: Mapping, notes: list, *, need_layers: bool = True
) -> list[LayerPlan]:
    """Every layer of the model as the family's code builds it.

    A config without a layer count gives one entry standing for every layer (layer type
    ``"all"``) when the family's layers are alike; with per-layer rules it is an error, or,
    with ``need_layers=False`` (one spec is asked for), the entry stands for the layers that
    apply RoPE.

    Examples
    --------
    >>> plan = layer_plan(family_for("llama4"), {"num_hidden_layers": 4}, [])
    >>> [p.uses_rope for p in plan]
    [True, True, True, False]
    """
    n = _num_layers(cfg, notes)
    types = _layer_types(cfg, family, n, notes)
    if types is not None:
        n = len(types)
    rule = family.layers if family is not None else "uniform"
    if n is None:
        if rule not in ("uniform", "gemma2") and need_layers:
            raise ValueError(
                f"{family.name} has per-layer rules ({rule}); the config needs "
                "num_hidden_layers or layer_types"
            )
        if rule in ("uniform", "gemma2"):
            notes.append("no num_hidden_layers: one entry stands for every layer")
        else:
            notes.append(
                f"no num_hidden_layers: {family.name}'s per-layer rule ({rule}) is not applied; "
                "the spec is that of its RoPE layers"
            )
        return [LayerPlan(0, "all", "all")]
    types = types or ["full_attention"] * n
    if rule == "no_rope_layers":
        flags = _no_rope_flags(cfg, family, n, notes)
        return [LayerPlan(i, types[i], types[i], flags[i]) for i in range(n)]
    if rule == "sliding_rope_only":
        window = cfg.get("sliding_window")
        if window is None:
            notes.append("cohere2 with sliding_window null: no layer applies RoPE")
        uses = [t == "sliding_attention" and window is not None for t in types]
        return [LayerPlan(i, types[i], types[i], uses[i]) for i in range(n)]
    if rule == "exaone4":
        everywhere = cfg.get("sliding_window") is None
        return [
            LayerPlan(i, t, t, everywhere or t == "sliding_attention") for i, t in enumerate(types)
        ]
    if rule == "linear_attention":
        return [LayerPlan(i, t, t, t != "linear_attention") for i, t in enumerate(types)]
    if rule == "deepseek_v4":
        return _deepseek_v4_plan(cfg, types if cfg.get("layer_types") else None, n)
    if rule == "gemma4":
        dims = _gemma4_head_dims(cfg, types, notes)
        return [LayerPlan(i, t, t, True, dims[i]) for i, t in enumerate(types)]
    return [LayerPlan(i, t, t) for i, t in enumerate(types)]


def _deepseek_v4_plan(cfg: Mapping, types, n: int) -> list[LayerPlan]:
    if types is None:
        ratios = cfg.get("compress_ratios")
        table = {0: "sliding_attention", 4: "compressed_sparse_attention"}
        table[128] = "heavily_compressed_attention"
        if not isinstance(ratios, list) or any(r not in table for r in ratios):
            raise ValueError(
                "deepseek_v4 needs config key layer_types (or compress_ratios of 0/4/128) to "
                "say which layers use the 'main' and which the 'compress' rope"
            )
        types = [table[r] for r in ratios]
    labels = ["main" if t == "sliding_attention" else "compress" for t in types]
    return [LayerPlan(i, t, labels[i]) for i, t in enumerate(types)]


# --------------------------------------------------------------------------- query scaling


def _mscale(factor: float, m: float) -> float:
    """YaRN's magnitude ``0.1 m ln s + 1`` (1 for ``s <= 1``)."""
    if factor <= 1.0:
        return 1.0
    return 0.1 * m * math.log(factor) + 1.0  # [eq:config-mla-softmax-scale]


@dataclasses.dataclass(frozen=True)
class QueryScaling:
    """A position-dependent factor on the queries and a constant factor on the softmax scale.

    Calling it on positions returns the factor each query row is multiplied by, after RoPE
    (float64, shape ``(seq,)``); ``softmax_scale`` multiplies the attention's
    ``1/sqrt(d_qk)``.

    Kinds (:data:`QUERY_SCALINGS`):

    * ``"llama4_temperature"`` (Llama 4 NoPE layers, ``floor_scale`` F, ``attn_scale`` a):
      :math:`1 + a\\,\\ln(\\lfloor (p+1)/F \\rfloor + 1)`, where transformers takes
      :math:`p` as the token's place in the cache (``arange(seq) + cached length``), not
      ``position_ids``;
    * ``"llama_4_scaling_beta"`` (Ministral 3, Mistral 4; ``beta`` β,
      ``original_max_position`` L0): :math:`1 + \\beta\\,\\ln(1 + \\lfloor p/L_0 \\rfloor)`;
    * ``"softmax_scale"``: 1 at every position (only ``softmax_scale`` differs from 1).

    Examples
    --------
    >>> q = QueryScaling("llama4_temperature", {"floor_scale": 8192, "attn_scale": 0.1})
    >>> q([0, 8190, 8191]).round(6)
    array([1.      , 1.      , 1.069315])
    """

    kind: str
    params: Mapping = dataclasses.field(default_factory=dict)
    softmax_scale: float = 1.0

    def __post_init__(self):
        if self.kind not in QUERY_SCALINGS:
            raise ValueError(f"kind must be one of {QUERY_SCALINGS}, got {self.kind!r}")
        need = {
            "llama4_temperature": ("floor_scale", "attn_scale"),
            "llama_4_scaling_beta": ("beta", "original_max_position"),
            "softmax_scale": (),
        }[self.kind]
        params = dict(self.params)
        if sorted(params) != sorted(need):
            raise ValueError(f"{self.kind} takes params {list(need)}, got {sorted(params)}")
        for key in need:
            check_real(params[key], f"params[{key!r}]")
        if "floor_scale" in params or "original_max_position" in params:
            length = params.get("floor_scale", params.get("original_max_position"))
            if check_real(length, "params length") <= 0:
                raise ValueError(f"{self.kind}: the length scale must be positive, got {length}")
        scale = check_real(self.softmax_scale, "softmax_scale")
        if scale <= 0:
            raise ValueError(f"softmax_scale must be positive, got {scale}")
        object.__setattr__(self, "params", ReadOnlyDict(params))
        object.__setattr__(self, "softmax_scale", scale)

    def __hash__(self) -> int:
        return hash((self.kind, tuple(sorted(self.params.items())), self.softmax_scale))

    def __call__(self, positions) -> np.ndarray:
        p = as_positions(positions)
        if self.kind == "llama4_temperature":
            f, a = float(self.params["floor_scale"]), float(self.params["attn_scale"])
            return 1.0 + a * np.log1p(np.floor((p + 1.0) / f))  # [eq:config-llama4-temperature]
        if self.kind == "llama_4_scaling_beta":
            beta = float(self.params["beta"])
            length = float(self.params["original_max_position"])
            return 1.0 + beta * np.log1p(np.floor(p / length))  # [eq:config-llama4-scaling-beta]
        return np.ones_like(p)

    def describe(self) -> str:
        """One line: the formula and its parameters."""
        soft = "" if self.softmax_scale == 1.0 else f"softmax scale x{self.softmax_scale:.6g}"
        if self.kind == "llama4_temperature":
            text = (
                f"q x (1 + {self.params['attn_scale']:g} ln(floor((p+1)/"
                f"{self.params['floor_scale']:g}) + 1))"
            )
        elif self.kind == "llama_4_scaling_beta":
            text = (
                f"q x (1 + {self.params['beta']:g} ln(1 + floor(p/"
                f"{self.params['original_max_position']:g})))"
            )
        else:
            return soft
        return f"{text}, {soft}" if soft else text


def query_scaling(
    family: Family | None, cfg: Mapping, rope: Mapping, plan: LayerPlan, notes: list
) -> QueryScaling | None:
    """The query scaling one layer applies (None: none).

    Parameters
    ----------
    family : Family or None
    cfg : mapping
        The (text) config.
    rope : mapping
        The layer's rope parameters (``rope_scaling`` / ``rope_parameters`` entry).
    plan : LayerPlan
    notes : list of str

    Examples
    --------
    >>> rope = {"rope_type": "yarn", "factor": 40.0, "mscale_all_dim": 1.0}
    >>> q = query_scaling(family_for("deepseek_v3"), {}, rope, LayerPlan(0, "a", "a"), [])
    >>> q.kind, round(q.softmax_scale, 4)  # (1 + 0.1 ln 40)**2
    ('softmax_scale', 1.8739)
    """
    rules = family.query if family is not None else ()
    kind, params, soft = None, {}, 1.0
    if "llama4_temperature" in rules and not plan.uses_rope:
        if config_flag(cfg, "attn_temperature_tuning", True):
            kind = "llama4_temperature"
            params = {
                "floor_scale": config_real(cfg, "floor_scale", 8192.0),
                "attn_scale": config_real(cfg, "attn_scale", 0.1),
            }
    if "llama_4_scaling_beta" in rules:
        beta = rope.get("llama_4_scaling_beta")
        length = rope.get("original_max_position_embeddings")
        if beta is None or length is None:
            raise ValueError(
                f"{family.name} multiplies queries by 1 + beta ln(1 + floor(p / L0)) with "
                "rope parameters llama_4_scaling_beta and original_max_position_embeddings; "
                "the config lacks one (transformers' attention would fail on it)"
            )
        kind = "llama_4_scaling_beta"
        params = {
            "beta": check_real(beta, "config key llama_4_scaling_beta"),
            "original_max_position": config_int(rope, "original_max_position_embeddings"),
        }
    elif rope.get("llama_4_scaling_beta") is not None:
        notes.append(
            f"llama_4_scaling_beta is ignored: {family.name if family else 'this model'}'s "
            "attention in transformers does not read it (Ministral 3 and Mistral 4 do)"
        )
    if "mla_mscale" in rules and rope.get("rope_type", rope.get("type", "default")) != "default":
        m = config_real(rope, "mscale_all_dim", 0.0)
        if m:
            factor = config_real(rope, "factor")
            if factor is None:
                raise ValueError("mscale_all_dim needs the rope parameter factor")
            soft = _mscale(factor, m) ** 2
    if kind is None and soft == 1.0:
        return None
    return QueryScaling(kind or "softmax_scale", params, soft)
