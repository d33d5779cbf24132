"""How a family record's rules read a config: the machinery behind :mod:`refimpl.families`.

:mod:`refimpl.families` holds the records (what each model family's code does);
this module holds what a record's fields name:

* :class:`ConfigView`: a config read through its config class's defaults, each default used
  noted;
* the rope forms (:data:`ROPE_FORMS`, :func:`rope_dicts`): how the rope fields become one
  rope dict per layer kind;
* the width sources (:data:`WIDTH_SOURCES`, :func:`rotary_widths`) and
  :func:`pairing_and_order`;
* the layer rules (:data:`LAYER_RULES`, :func:`layer_plan`): which layers rotate, with which
  rope dict and head width, and where a record's submodules run;
* query scaling (:class:`QueryScaling`, :func:`query_scaling`).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterator, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING

import numpy as np

from ._checks import MAX_DIM, as_positions, check_flag, check_int, check_real

if TYPE_CHECKING:
    from .families import Family

__all__ = [
    "LAYER_RULES",
    "QUERY_SCALINGS",
    "ROPE_FORMS",
    "WIDTH_SOURCES",
    "ConfigView",
    "LayerPlan",
    "QueryScaling",
    "ReadOnlyDict",
    "Widths",
    "check_depth",
    "config_flag",
    "config_int",
    "config_real",
    "layer_plan",
    "pairing_and_order",
    "query_scaling",
    "rope_dicts",
    "rotary_widths",
]

WIDTH_SOURCES = (
    "head_dim",
    "hidden_over_heads",
    "qk_rope_head_dim",
    "rotary_dim",
    "kv_channels",
    "zamba2",
)
QUERY_RULES = ("llama4_temperature", "llama_4_scaling_beta", "mla_mscale")
QUERY_SCALINGS = ("llama4_temperature", "llama_4_scaling_beta", "softmax_scale")
PLAIN_LAYER_TYPES = ("full_attention", "sliding_attention")
# transformers 5.24 renames these layer types in every config (configuration_utils.py,
# _LEGACY_LAYER_TYPE_REMAP).
LEGACY_LAYER_TYPES = {
    "mamba": "linear_attention",
    "attention": "full_attention",
    "deepseek_sparse_attention": "indexed_attention",
    "qwen_sparse_attention": "indexed_attention",
}
# A layer count above this is not a model (the deepest released decoders have ~100 layers).
MAX_LAYERS = 100_000
# JSON deeper than this is not a model config (released files nest three or four levels).
MAX_CONFIG_DEPTH = 64


class ReadOnlyDict(dict):
    """A dict that refuses changes (the parameters of frozen records; unlike
    ``types.MappingProxyType`` it pickles and deep-copies)."""

    def _refuse(self, *args, **kwargs):
        raise TypeError("this mapping is read-only (the record it belongs to is frozen)")

    __setitem__ = __delitem__ = __ior__ = _refuse
    clear = pop = popitem = setdefault = update = _refuse

    def __reduce__(self):
        return (type(self), (dict(self),))


# --------------------------------------------------------------------------- config values


class ConfigView(Mapping):
    """A (text) config read through its family's config class defaults.

    A key the file holds (even as null) reads as written; a key it omits reads as the
    default, and the first read of each default appends a note naming it and the class, as
    transformers' config class would fill it. :meth:`given` reads the file alone.
    """

    def __init__(self, raw: Mapping, defaults: Mapping, owner: str, notes: list):
        self.raw = raw
        self.defaults = defaults
        self.owner = owner
        self.notes = notes
        self._noted: set = set()

    def __getitem__(self, key):
        if key in self.raw:
            return self.raw[key]
        value = self.defaults[key]
        if key not in self._noted:
            self._noted.add(key)
            self.notes.append(f"no {key}: {value!r} ({self.owner}'s default)")
        return value

    def __iter__(self) -> Iterator:
        return iter({**dict.fromkeys(self.defaults), **dict.fromkeys(self.raw)})

    def __len__(self) -> int:
        return len(set(self.raw) | set(self.defaults))

    def __contains__(self, key) -> bool:
        return key in self.raw or key in self.defaults

    def given(self, key, default=None):
        """The file's own value of ``key`` (``default`` when it omits it)."""
        return self.raw.get(key, default)


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


def check_depth(value, where: str, depth: int = 0) -> None:
    """Refuse JSON nested deeper than :data:`MAX_CONFIG_DEPTH` (iteratively bounded)."""
    stack = [(value, depth)]
    while stack:
        item, level = stack.pop()
        if level > MAX_CONFIG_DEPTH:
            raise ValueError(
                f"{where} nests more than {MAX_CONFIG_DEPTH} levels deep; a model config "
                "nests a few"
            )
        if isinstance(item, Mapping):
            stack.extend((v, level + 1) for v in item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend((v, level + 1) for v in item)


# --------------------------------------------------------------------------- rope dicts


def _object(value, key: str):
    if value is not None and not isinstance(value, dict):
        raise TypeError(f"config key {key} must be an object, got {type(value).__name__}")
    return value


def _nested(rp) -> bool:
    """A rope dict per layer type (a null entry: that type has no RoPE, as in Beam)."""
    values = list(rp.values()) if rp else []
    return any(isinstance(v, dict) for v in values) and all(
        isinstance(v, dict) or v is None for v in values
    )


def _flat_dicts(cfg: ConfigView, rp, rs, notes: list) -> dict:
    if _nested(rp):
        for key, sub in rp.items():
            if sub is not None:
                _object(sub, f"rope_parameters.{key}")
        if rs:
            raise ValueError("config has rope_scaling beside a nested rope_parameters")
        return {key: dict(sub) for key, sub in rp.items() if sub is not None}
    if rs and rp:
        strip = {"rope_theta", "partial_rotary_factor"}
        a = {k: v for k, v in rs.items() if k not in strip}
        b = {k: v for k, v in rp.items() if k not in strip}
        if a != b:
            raise ValueError(
                f"config has both rope_scaling and rope_parameters and they disagree: {a} vs {b}"
            )
        return {None: {**rp, **rs}}
    return {None: dict(rs or rp or {})}


def _gemma3_dicts(cfg: ConfigView, rp, rs, notes: list) -> dict:
    """Gemma 3's 4.x form, as its config class converts it: full-attention layers take
    ``rope_scaling`` and ``rope_theta``, sliding ones ``rope_local_base_freq`` unscaled."""
    if _nested(rp):
        return _flat_dicts(cfg, rp, rs, notes)
    full = dict(rp or {})
    full.update(rs or {})
    full.setdefault("rope_theta", cfg.get("rope_theta"))
    full.setdefault("rope_type", full.get("type", "default"))
    local = cfg.get("rope_local_base_freq")
    return {
        "full_attention": full,
        "sliding_attention": {"rope_type": "default", "rope_theta": local},
    }


def _olmo3_dicts(cfg: ConfigView, rp, rs, notes: list) -> dict:
    """OLMo 3's 4.x form, as ``Olmo3Config.convert_rope_params_to_dict`` converts it: a
    ``rope_scaling`` block belongs to the full-attention layers; the sliding layers are
    unscaled with the class's ``default_theta`` (the conversion pops ``rope_theta`` for the
    full layers before the sliding ones read it)."""
    if _nested(rp):
        return _flat_dicts(cfg, rp, rs, notes)
    if rp:
        raise ValueError(
            "olmo3 with a flat rope_parameters: Olmo3Config expects it nested per layer type "
            "(full_attention, sliding_attention) and would mix the flat keys in; write the "
            "nested form or the 4.x rope_scaling + rope_theta"
        )
    default_theta = cfg.defaults["rope_theta"]
    theta = cfg.given("rope_theta")
    if theta is not None and theta != default_theta:
        raise ValueError(
            f"olmo3: rope_theta {theta!r} goes to the full-attention layers only; transformers "
            f"5.24 (Olmo3Config) gives the sliding layers its default_theta {default_theta!r} "
            "instead of the config's value, a silent mismatch refimpl does not follow; write "
            "rope_parameters nested per layer type"
        )
    full = {"rope_type": "default", **(rs or {})}
    full.setdefault("rope_theta", cfg.get("rope_theta"))
    if rs:
        notes.append("olmo3: rope_scaling applies to the full-attention layers only")
    return {
        "full_attention": full,
        "sliding_attention": {"rope_type": "default", "rope_theta": default_theta},
    }


def _deepseek_v4_dicts(cfg: ConfigView, rp, rs, notes: list) -> dict:
    """DeepSeek-V4's released flat form, as ``DeepseekV4Config.__post_init__`` builds
    ``{"main", "compress"}``: ``main`` unscaled with ``rope_theta``, ``compress`` the flat
    scaling block with ``compress_rope_theta`` (YaRN's attention factor 1 unless given)."""
    if _nested(rp):
        if set(rp) != {"main", "compress"}:
            raise ValueError(
                f"deepseek_v4 rope_parameters must be nested as 'main' and 'compress', got "
                f"{sorted(rp)}"
            )
        return _flat_dicts(cfg, rp, rs, notes)
    flat = _flat_dicts(cfg, rp, rs, notes)[None]
    partial = cfg.get("partial_rotary_factor")
    if partial is None:
        rope_head = config_int(cfg.raw, "qk_rope_head_dim", maximum=MAX_DIM)
        head = config_int(cfg, "head_dim", maximum=MAX_DIM)
        if rope_head is not None and head is not None:
            partial = rope_head / head
            notes.append(
                f"deepseek_v4: partial_rotary_factor = qk_rope_head_dim / head_dim "
                f"= {rope_head}/{head}"
            )
        else:
            partial = cfg.defaults["partial_rotary_factor"]
            notes.append(f"no partial_rotary_factor: {partial!r} (DeepseekV4Config's default)")
    main = {
        "rope_type": "default",
        "rope_theta": cfg.get("rope_theta"),
        "partial_rotary_factor": partial,
    }
    compress = {k: v for k, v in flat.items() if k not in ("rope_theta",)}
    compress["rope_theta"] = cfg.get("compress_rope_theta")
    compress["partial_rotary_factor"] = partial
    compress.setdefault("rope_type", compress.get("type", "default"))
    if compress["rope_type"] == "yarn" and "attention_factor" not in compress:
        compress["attention_factor"] = 1.0
        notes.append(
            "deepseek_v4: the compress rope's YaRN attention factor is 1 (as "
            "DeepseekV4Config sets it)"
        )
    notes.append(
        "deepseek_v4: flat rope fields read as {'main', 'compress'}, as "
        "DeepseekV4Config builds them"
    )
    return {"main": main, "compress": compress}


def _layer_thetas(cfg: Mapping, n: int | None) -> list[float] | None:
    """``layer_rope_theta``: one base per layer, 0 for a layer without RoPE (None: absent)."""
    values = cfg.get("layer_rope_theta")
    if values is None:
        return None
    if not isinstance(values, list):
        raise TypeError("config key layer_rope_theta must be a list of numbers, one per layer")
    if n is not None and len(values) != n:
        raise ValueError(
            f"config key layer_rope_theta has {len(values)} entries but num_hidden_layers={n}"
        )
    out = [config_real({"v": v}, "v") for v in values]
    for i, v in enumerate(out):
        if v < 0:
            raise ValueError(f"config key layer_rope_theta[{i}] = {v!r} must be 0 (NoPE) or > 0")
    return out


def _theta_key(theta: float) -> str:
    return f"rope_theta {theta!r}"


def _layer_theta_dicts(cfg: ConfigView, rp, rs, notes: list) -> dict:
    """Granite SWA's ``layer_rope_theta``: the flat rope dict once per distinct non-zero base
    (transformers 5.24 builds one rotary module per base, ``theta_config.rope_parameters =
    {**rope_parameters, "rope_theta": theta}``)."""
    flat = _flat_dicts(cfg, rp, rs, notes)
    thetas = _layer_thetas(cfg, None)
    if thetas is None:
        return flat
    return {_theta_key(t): {**flat[None], "rope_theta": t} for t in sorted(set(thetas)) if t}


def _molmo2_dicts(cfg: ConfigView, rp, rs, notes: list) -> dict:
    """Molmo 2: the flat rope dict for the layers of ``rope_scaling_layers`` ("scaled"), and
    the same base unscaled for the others (transformers 5.24 ``Molmo2RotaryEmbedding(config,
    scaled=False)``: rope_type default)."""
    flat = dict(_flat_dicts(cfg, rp, rs, notes)[None])
    flat.setdefault("rope_theta", cfg.get("rope_theta"))
    flat.setdefault("rope_type", flat.get("type", "default"))
    return {"scaled": flat, "unscaled": {"rope_type": "default", "rope_theta": flat["rope_theta"]}}


def _dbrx_dicts(cfg: ConfigView, rp, rs, notes: list) -> dict:
    """DBRX: the flat rope fields. Its released files put the base in ``attn_config.rope_theta``,
    which transformers 5.24's ``DbrxAttentionConfig`` keeps as an unread attribute while the
    rotary module reads the top-level ``rope_parameters`` (default 10000): a base there that
    differs from the one transformers rotates with is refused, naming the key."""
    flat = _flat_dicts(cfg, rp, rs, notes)
    attn = cfg.raw.get("attn_config")
    if attn is None:
        return flat
    if not isinstance(attn, Mapping):
        raise TypeError(f"config key attn_config must be an object, got {attn!r}")
    if attn.get("rope_theta") is None:
        return flat
    inner = config_real(attn, "rope_theta")
    used = flat[None].get("rope_theta") if None in flat else None
    used = cfg.get("rope_theta") if used is None else config_real({"v": used}, "v")
    if inner != used:
        raise ValueError(
            f"dbrx: config key attn_config.rope_theta = {inner!r}, but transformers 5.24 "
            "(DbrxConfig, DbrxRotaryEmbedding) reads the base from the top-level rope_parameters "
            f"/ rope_theta ({used!r}) and ignores attn_config.rope_theta, so the model would run "
            "with a base other than the file's; refimpl does not choose between them: write the "
            "base as the top-level rope_theta (or rope_parameters) equal to attn_config's"
        )
    notes.append(f"dbrx: attn_config.rope_theta {inner!r} equals the top-level base")
    return flat


NEOMME_THETA = {"full_attention": 1_000_000.0, "sliding_attention": 10_000.0}
NEOMME_PARTIAL = {"full_attention": 0.25, "sliding_attention": 1.0}


def _neomme_types(cfg: Mapping, n: int, notes: list) -> list[str]:
    types = _given_types(cfg, "layer_types", n, notes)
    if types is None:
        types = [
            "full_attention" if (i + 1) % 6 == 0 or i == n - 1 else "sliding_attention"
            for i in range(n)
        ]
    return types


def _neomme_dicts(cfg: ConfigView, rp, rs, notes: list) -> dict:
    """NeoMME (NeoMMEConfig.convert_rope_params_to_dict): one rope dict per layer type, each
    key the file omits from the class's per-type defaults (rope_theta 1e6 full / 1e4 sliding,
    or the top-level rope_theta; partial_rotary_factor 0.25 full / 1 sliding); the two
    position axes alternate over the rotated pairs (NeoMMERotaryEmbedding.
    recomposition_frequencies: row the even pairs, column the odd), which is refimpl's
    "alternating" M-RoPE layout with sections (pairs/2, pairs/2, 0): rows (t, h, w) of
    positions are (unused, row, column)."""
    if rs:
        raise ValueError("neomme: rope_scaling is not read by NeoMMEConfig; write rope_parameters")
    if rp is not None and not _nested(rp):
        raise ValueError("neomme: rope_parameters must be nested per layer type (NeoMMEConfig)")
    n = config_int(cfg, "num_hidden_layers", minimum=1)
    types = _neomme_types(cfg, n, [])
    head_dim = config_int(cfg, "head_dim", maximum=MAX_DIM)
    top = cfg.raw.get("rope_theta")
    out = {}
    for t in dict.fromkeys(types):
        d = dict((rp or {}).get(t) or {})
        d.setdefault("rope_type", "default")
        d.setdefault("rope_theta", top if top is not None else NEOMME_THETA.get(t))
        d.setdefault("partial_rotary_factor", NEOMME_PARTIAL.get(t))
        rotary = int(head_dim * check_real(d["partial_rotary_factor"], "partial_rotary_factor"))
        if rotary < 4 or rotary % 4:
            raise ValueError(
                f"neomme: rope_parameters[{t!r}] rotates {rotary} of head_dim={head_dim} "
                "features, not a multiple of 4 (NeoMMEConfig rejects it: the two axes split "
                "the pairs evenly)"
            )
        if "mrope_section" in d:
            raise ValueError("neomme: NeoMMEConfig has no mrope_section; its axes alternate")
        d["mrope_section"] = [rotary // 4, rotary // 4, 0]
        out[t] = d
    notes.append(
        "neomme: row and column positions alternate over the rotated pairs (mrope_section "
        "[pairs/2, pairs/2, 0], alternating layout: position rows (t, h, w) = (unused, row, "
        "column)); text tokens have equal rows"
    )
    return out


def _step3p5_per_layer(cfg: ConfigView, key: str, n: int, padded: int, types: list) -> dict:
    """``{layer type: value}`` of a per-layer list (or a scalar for every layer), as
    ``Step3p7TextConfig.__post_init__`` reads it: each type takes its first layer's value."""
    value = cfg.raw.get(key)
    if not isinstance(value, list):
        return dict.fromkeys(types, value)
    if len(value) == padded and padded != n:
        value = value[:n]  # the class drops the trailing multi-token-prediction entries
    if len(value) != n:
        raise ValueError(
            f"step3p5: config key {key} has {len(value)} entries but num_hidden_layers={n}"
            + (f" (or {padded} with num_nextn_predict_layers)" if padded != n else "")
            + ": Step3p7TextConfig reads one entry per layer"
        )
    out: dict = {}
    for i, (t, v) in enumerate(zip(types, value, strict=True)):
        v = config_real({"v": v}, "v")
        if t in out and out[t] != v:
            raise ValueError(
                f"step3p5: config key {key}[{i}] = {v!r} differs from {out[t]!r} of an earlier "
                f"{t!r} layer; transformers 5.24 (Step3p7TextConfig) builds one rope per layer "
                "type from its first layer's entry, so this layer would rotate with another "
                "value than the file's; refimpl does not choose"
            )
        out.setdefault(t, v)
    return out


def _step3p5_dicts(cfg: ConfigView, rp, rs, notes: list) -> dict:
    """Step 3.5 / 3.7's per-layer rope fields, as ``Step3p7TextConfig.__post_init__`` builds
    ``rope_parameters``: one dict per layer type from ``rope_theta`` (a scalar or one entry per
    layer) and ``partial_rotary_factors`` (one per layer), ``rope_scaling`` on the
    full-attention type; a ``rope_parameters`` nested per layer type is kept as it is."""
    n = config_int(cfg, "num_hidden_layers", minimum=1)
    mtp = config_int(cfg.raw, "num_nextn_predict_layers", minimum=0) or 0
    types = cfg.raw.get("layer_types")
    if not isinstance(types, list) or not all(isinstance(t, str) for t in types):
        types = None
    if types is not None and len(types) == n + mtp and mtp:
        types = types[:n]
    if types is None or len(types) != n:
        types = ["full_attention"] * n if types is None else list(types)
    if isinstance(rp, Mapping) and rp and all(isinstance(rp.get(t), Mapping) for t in set(types)):
        return {t: dict(rp[t]) for t in set(types)}
    if rp:
        raise ValueError(
            "step3p5: rope_parameters not nested per layer type; Step3p7TextConfig rebuilds it "
            "from rope_theta and partial_rotary_factors and ignores this one: write "
            "rope_parameters nested per layer type, or rope_theta"
        )
    if cfg.raw.get("rope_theta") is None:
        notes.append(f"no rope_theta: {cfg.defaults['rope_theta']!r} (Step3p7TextConfig's default)")
        thetas = dict.fromkeys(types, cfg.defaults["rope_theta"])
    else:
        thetas = _step3p5_per_layer(cfg, "rope_theta", n, n + mtp, types)
    partial = cfg.raw.get("partial_rotary_factors")
    partials = (
        None
        if partial is None
        else _step3p5_per_layer(cfg, "partial_rotary_factors", n, n + mtp, types)
    )
    out = {}
    for t in dict.fromkeys(types):
        d = {"rope_type": "default", "rope_theta": thetas[t]}
        if partials:
            d["partial_rotary_factor"] = partials[t]
        out[t] = d
    if rs and "full_attention" in out:
        out["full_attention"].update(rs)
        notes.append("step3p5: rope_scaling applies to the full-attention layers only")
    return out


def _dots3_dicts(cfg: ConfigView, rp, rs, notes: list) -> dict:
    """Dots3 Note (Dots3NoteTextConfig.convert_rope_params_to_dict): one rope dict per layer
    type. Without ``rope_parameters``: the flat ``rope_scaling`` copied to every type, or
    default RoPE at ``swa_rope_theta`` (50000) on the sliding layers and ``rope_theta`` (the
    class's 8e7) on the others; a flat ``rope_parameters`` is copied to every type; a type's
    dict without ``rope_theta`` takes the top-level one. Each type's partial_rotary_factor is
    set by the class from its rope head (read by the layer rule)."""
    if rp is not None and rs:
        raise ValueError(
            "dots3: config has rope_scaling beside rope_parameters; Dots3NoteTextConfig reads "
            "one or the other at different steps: write one"
        )
    n = config_int(cfg, "num_hidden_layers", minimum=1, maximum=MAX_LAYERS)
    types = list(dict.fromkeys(_dots3_types(cfg, n, [])))
    swa = cfg.raw.get("swa_rope_theta")
    if rp is None and not rs:
        swa_theta = DOTS3_SWA_THETA if swa is None else swa
        if "sliding_attention" in types and swa is None:
            notes.append(f"dots3: no swa_rope_theta: {DOTS3_SWA_THETA!r} (Dots3NoteTextConfig's)")
        return {
            t: {
                "rope_type": "default",
                "rope_theta": swa_theta if t == "sliding_attention" else cfg.get("rope_theta"),
            }
            for t in types
        }
    if swa is not None:
        notes.append(
            f"dots3: swa_rope_theta {swa!r} is not read: Dots3NoteTextConfig uses it only "
            "when the file has neither rope_parameters nor rope_scaling"
        )
    flat = rs or rp
    if _nested(flat):
        out = {t: dict(_object(flat[t], f"rope_parameters.{t}")) for t in types if flat.get(t)}
    else:
        out = {t: dict(flat) for t in types}
        notes.append(f"dots3: the flat rope fields apply to every layer type {types}")
    for d in out.values():
        if "rope_theta" not in d:
            d["rope_theta"] = cfg.get("rope_theta")
        d.setdefault("rope_type", d.get("type", "default"))
        d.pop("partial_rotary_factor", None)  # the class sets it from the rope head
    return out


def _hunyuan_vl_dicts(cfg: ConfigView, rp, rs, notes: list) -> dict:
    """HunYuan VL's text decoder (HunYuanVLTextConfig.convert_rope_params_to_dict and
    HunYuanVLRotaryEmbedding, transformers 5.24): the legacy ``xdrope_section`` is renamed
    ``mrope_section`` (both present and different: refused, as the class does), rope type
    ``xdrope`` becomes ``dynamic`` (with ``alpha``: the static NTK-alpha base). The rotary
    module's forward expands the positions to ``len(mrope_section)`` rows and lays the sections
    out over ``cat(freq, freq)`` in chunks of ``2 s_a`` features, chunk ``a`` from row ``a``
    (``recomposition_frequencies``). A config is read only where that is one RoPE of token
    positions: a single non-zero section on a row that holds the 1-D position (every row before
    the last three, which are width, height and image index). Refused otherwise, naming the key:
    no sections (the forward fails), sections that do not sum to the pairs (the class rejects
    them), several non-zero sections (the two features of a pair follow different rows, not a
    rotation once the rows differ), and a null ``head_dim`` (the attention cannot be built)."""
    d = _flat_dicts(cfg, rp, rs, notes)[None]
    where = "rope_scaling" if rs and not rp else "rope_parameters"
    legacy = d.pop("xdrope_section", None)
    name = f"{where}.xdrope_section" if legacy is not None else f"{where}.mrope_section"
    if legacy is not None:
        section = d.get("mrope_section")
        if section is not None and list(section) != list(legacy):
            raise ValueError(
                f"hunyuan_vl_text: {where} has mrope_section {section!r} and legacy "
                f"xdrope_section {legacy!r}, which differ (HunYuanVLTextConfig rejects it)"
            )
        d["mrope_section"] = legacy
        notes.append("hunyuan_vl_text: legacy xdrope_section read as mrope_section")
    for key in ("rope_type", "type"):
        if d.get(key) == "xdrope":
            d[key] = "dynamic"
            notes.append(f"hunyuan_vl_text: {key} 'xdrope' read as 'dynamic', as its class does")
    section = d.get("mrope_section")
    if section is None:
        raise ValueError(
            f"hunyuan_vl_text: {where}.mrope_section (legacy xdrope_section) is null: "
            "transformers 5.24's HunYuanVLRotaryEmbedding.forward expands the positions to "
            "len(mrope_section) rows and fails without sections (TypeError), so its text "
            "decoder cannot run on this config; give the xD-RoPE sections"
        )
    if isinstance(section, (str, bytes)) or not isinstance(section, (list, tuple)):
        raise TypeError(f"{name} must be a list of integers, got {section!r}")
    section = [check_int(v, f"{name}[{i}]", minimum=0) for i, v in enumerate(section)]
    head_dim = config_int(cfg, "head_dim", maximum=MAX_DIM)
    if head_dim is None:
        raise ValueError(
            "hunyuan_vl_text: head_dim is null: HunYuanVLDenseV1Attention takes "
            "getattr(config, 'head_dim', ...), which is None here, so the model cannot be built "
            "on this config (TypeError); give head_dim"
        )
    if sum(section) != head_dim // 2:
        raise ValueError(
            f"hunyuan_vl_text: {name} {section} must sum to head_dim // 2 = "
            f"{head_dim // 2} (HunYuanVLTextConfig rejects it)"
        )
    live = [a for a, s in enumerate(section) if s]
    if len(live) > 1:
        raise ValueError(
            f"hunyuan_vl_text: {name} {section}: transformers 5.24's "
            "HunYuanVLRotaryEmbedding.recomposition_frequencies cuts cat(freq, freq) into "
            "chunks of 2 s_a features, chunk a from position row a, so feature j and feature "
            "j + head_dim/2 of pair j follow different rows and the pair is not rotated once "
            "the rows differ (image tokens); a RopeSpec turns each pair by one angle. "
            "Tencent's apply_rotary_pos_emb_xdrope and vLLM's xdrope.py give each pair one row: "
            "refimpl.multiaxis.mrope_cos_sin with the 4-section blocked layout and "
            "refimpl.multiaxis.hunyuanvl_position_ids"
        )
    if not live or live[0] >= len(section) - 3:
        raise ValueError(
            f"hunyuan_vl_text: {name} {section} turns every pair by position "
            f"row {live[0] if live else None}, not one of the rows before the last three that "
            "hold the token's 1-D position (the last three are width, height and image index: "
            "HunYuanVLModel.get_rope_index)"
        )
    del d["mrope_section"]
    notes.append(
        f"hunyuan_vl_text: mrope_section {section} turns every pair by row {live[0]}, which "
        "holds the 1-D position (HunYuanVLModel.get_rope_index): plain RoPE"
    )
    return {None: d}


_ROPE_FORM_FUNCTIONS: Mapping[str, Callable] = MappingProxyType(
    {
        "flat": _flat_dicts,
        "step3p5": _step3p5_dicts,
        "neomme": _neomme_dicts,
        "dbrx": _dbrx_dicts,
        "molmo2": _molmo2_dicts,
        "layer_rope_theta": _layer_theta_dicts,
        "gemma3": _gemma3_dicts,
        "olmo3": _olmo3_dicts,
        "deepseek_v4": _deepseek_v4_dicts,
        "dots3": _dots3_dicts,
        "hunyuan_vl": _hunyuan_vl_dicts,
    }
)
ROPE_FORMS = tuple(_ROPE_FORM_FUNCTIONS)
"""How a family's rope fields become one rope dict per layer kind (``Family.rope_form``)."""


def rope_dicts(family: Family | None, cfg: ConfigView, notes: list) -> dict:
    """The rope dict(s) of a config: ``{None: flat}`` or ``{layer type or label: dict}``.

    Examples
    --------
    >>> from refimpl.families import resolve
    >>> r = resolve({"model_type": "gemma3_text", "rope_theta": 1e6}, [])
    >>> sorted(rope_dicts(r.family, r.cfg, []))
    ['full_attention', 'sliding_attention']
    """
    rp = _object(cfg.given("rope_parameters"), "rope_parameters")
    rs = _object(cfg.given("rope_scaling"), "rope_scaling")
    if rp is None and rs is None and "rope_parameters" in cfg.defaults:
        if cfg.given("rope_theta") is not None:
            raise ValueError(
                f"{family.name}: config key rope_theta without rope_parameters; "
                f"{family.config_class} fills in its own rope block (one per layer type, or "
                "one whose base some classes keep and others replace) and refimpl does not "
                "guess where a top-level base goes: write rope_parameters"
            )
        rp = cfg.get("rope_parameters")  # the class's own rope, noted by the view
    form = family.rope_form if family is not None else "flat"
    return _ROPE_FORM_FUNCTIONS[form](cfg, rp, rs, notes)


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
    hs_key = "n_embd" if "hidden_size" not in cfg and "n_embd" in cfg else "hidden_size"
    nh_key = (
        "n_head"
        if "num_attention_heads" not in cfg and "n_head" in cfg
        else ("num_attention_heads")
    )
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


def _mla_width(family: Family, cfg: Mapping, notes: list, layer_rope: int | None = None) -> Widths:
    """The decoupled rope head: ``qk_rope_head_dim``, or a layer's own (``layer_rope``: Dots3's
    per-layer-type widths, from its ``per_layer_config``)."""
    if layer_rope is not None:
        return _check_rotary(layer_rope, layer_rope, 0, "the layer's qk_rope_head_dim")
    rope = config_int(cfg, "qk_rope_head_dim", maximum=MAX_DIM)
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


def _zamba2_width(cfg: Mapping, notes: list) -> Widths:
    hs = config_int(cfg, "hidden_size", maximum=MAX_DIM * 1024)
    nh = config_int(cfg, "num_attention_heads", maximum=MAX_DIM)
    if hs is None or nh is None:
        raise ValueError("zamba2 needs config keys hidden_size and num_attention_heads")
    head = 2 * hs // nh
    for key in ("head_dim", "attention_head_dim"):
        given = cfg.given(key) if isinstance(cfg, ConfigView) else cfg.get(key)
        if given is not None and given != head:
            notes.append(
                f"zamba2: {key}={given!r} is ignored; Zamba2Config sets it to "
                f"2 * hidden_size // num_attention_heads = {head}"
            )
    notes.append(
        "zamba2: the shared attention runs on [hidden state, embeddings] (2 * hidden_size "
        f"features): head width 2 * {hs} // {nh} = {head}"
    )
    return _check_rotary(head, head, 0, "2 * hidden_size // num_attention_heads")


def rotary_widths(
    family: Family | None, cfg: Mapping, partial, notes: list, *, head_dim: int | None = None
) -> Widths:
    """The widths of one layer: the family's width source, or ``head_dim`` times ``partial``.

    Parameters
    ----------
    family : Family or None
    cfg : mapping
        The (text) config (a :class:`ConfigView` applies the family's defaults).
    partial : float or None
        ``partial_rotary_factor`` as read from the config (None: absent).
    notes : list of str
        Defaults applied are appended here.
    head_dim : int, optional
        A per-layer head width (Gemma 4's full-attention layers) that replaces the config's;
        for a family whose width is ``qk_rope_head_dim``, the layer's own rope head width.

    Examples
    --------
    >>> from refimpl.families import family_for
    >>> rotary_widths(family_for("deepseek_v3"), {"qk_rope_head_dim": 64,
    ...               "qk_nope_head_dim": 128, "head_dim": 192}, None, [])
    Widths(head_dim=64, rotary_dim=64, rotary_offset=0)
    >>> rotary_widths(family_for("glm"), {"head_dim": 128}, 0.5, [])
    Widths(head_dim=128, rotary_dim=64, rotary_offset=0)
    """
    source = family.width if family is not None else "head_dim"
    if source == "qk_rope_head_dim":
        return _mla_width(family, cfg, notes, head_dim)
    if source == "zamba2":
        return _zamba2_width(cfg, notes)
    if source == "hidden_over_heads":  # the class sets head_dim = hidden_size // heads
        given = config_int(cfg, "head_dim", maximum=MAX_DIM)
        d = _head_dim({k: v for k, v in cfg.items() if k != "head_dim"}, notes)
        if given is not None and given != d:
            notes.append(
                f"head_dim {given} ignored: {family.config_class} uses hidden_size // "
                f"num_attention_heads = {d}"
            )
        return _check_rotary(d, d, 0, "hidden_size // num_attention_heads")
    if source == "kv_channels":
        width = config_int(cfg, "kv_channels", maximum=MAX_DIM) or _head_dim(cfg, notes)
        return _check_rotary(width // 2, width, 0, "kv_channels // 2")
    d = head_dim if head_dim is not None else _head_dim(cfg, notes)
    if source == "rotary_dim":
        if "rotary_dim" in cfg and cfg.get("rotary_dim") is None and family.base_from == "gptj":
            raise ValueError(
                "config key rotary_dim is null: GPT-J's code then sizes its tables by "
                "n_embd, not the head, and cannot rotate a head; give rotary_dim"
            )
        rotary = config_int(cfg, "rotary_dim", maximum=MAX_DIM)
        if rotary is not None:
            if partial is not None and int(d * partial) != rotary:
                raise ValueError(
                    f"config gives rotary_dim={rotary} and partial_rotary_factor={partial}, "
                    f"which disagree for head_dim={d}"
                )
            return _check_rotary(rotary, d, 0, "rotary_dim")
    partial = 1.0 if partial is None else partial
    rotary = int(d * partial)
    offset = d - rotary if family is not None and family.rotary_slice == "trailing" else 0
    return _check_rotary(rotary, d, offset, f"int(head_dim * partial_rotary_factor) for {d}")


def pairing_and_order(family: Family | None, cfg: Mapping, notes: list) -> tuple[str, str]:
    """``(pairing, output_order)`` of a family, an explicit interleave flag winning.

    Examples
    --------
    >>> from refimpl.families import family_for
    >>> pairing_and_order(family_for("deepseek_v3"), {"rope_interleave": False}, [])
    ('half', 'same')
    >>> pairing_and_order(family_for("deepseek_v3"), {"rope_interleave": True}, [])
    ('interleaved', 'half')
    """
    if family is None:
        return "half", "same"
    if family.interleave_flag is not None:
        flag = config_flag(cfg, family.interleave_flag, family.defaults[family.interleave_flag])
        if flag:
            return "interleaved", family.flag_output_order
        return "half", "same"
    return family.pairing, family.output_order


# --------------------------------------------------------------------------- layers


@dataclasses.dataclass(frozen=True)
class LayerPlan:
    """One layer as the family's code builds it.

    ``rope_key`` names the entry of a nested ``rope_parameters`` the layer reads (its layer
    type, or DeepSeek-V4's ``main``/``compress`` label); ``uses_rope`` False is a layer
    without RoPE (NoPE attention, or no attention at all); ``head_dim`` overrides the
    config's head width (Gemma 4 full-attention layers; for a family whose width is
    ``qk_rope_head_dim``, the layer's rope head: Dots3's per-layer-type MLA shapes);
    ``submodules`` names the
    :class:`Submodule` s that run at this layer.
    """

    index: int
    layer_type: str
    rope_key: str
    uses_rope: bool = True
    head_dim: int | None = None
    submodules: tuple = ()


def _num_layers(family: Family | None, cfg: Mapping) -> int | None:
    """The decoder's layer count: ``num_hidden_layers`` (GPT-J's ``n_layer``), or for a
    family that counts blocks, ``per_block`` times its block count (LongCat-Flash: two
    attention layers per ``num_layers`` block)."""
    count = family.layer_count if family is not None else None
    if count is not None and (
        not isinstance(cfg, ConfigView) or "num_hidden_layers" not in cfg.raw
    ):
        key, per_block = count
        blocks = config_int(cfg, key, minimum=1, maximum=MAX_LAYERS)
        return None if blocks is None else per_block * blocks
    for key in ("num_hidden_layers", "n_layer", "num_layers"):
        n = config_int(cfg, key, minimum=1, maximum=MAX_LAYERS)
        if n is not None:
            return n
    return None


def _pattern_types(n: int, pattern: int, hit: str, other: str) -> list[str]:
    """``other`` where ``(i + 1) % pattern`` is non-zero, ``hit`` at every ``pattern``-th."""
    return [other if (i + 1) % pattern else hit for i in range(n)]


def _given_types(
    cfg: Mapping, key: str, n: int | None, notes: list, first: Mapping | None = None
) -> list[str] | None:
    """A per-layer list of strings (legacy names renamed as transformers does), or None.
    ``first``: a config class's own renames, which its post-init applies before the legacy
    ones (Dots3's and Qwen4-Exp's ``full_attention`` -> ``indexed_attention``)."""
    types = cfg.get(key)
    if types is None:
        return None
    if not isinstance(types, list) or not all(isinstance(t, str) for t in types):
        raise TypeError(f"config key {key} must be a list of strings")
    if n is not None and len(types) != n:
        raise ValueError(f"config key {key} has {len(types)} entries but num_hidden_layers={n}")
    if first:
        own = [first.get(t, t) for t in types]
        if own != types:
            notes.append(
                f"{key}: {sorted({t for t in types if t in first})} read as "
                f"{sorted({first[t] for t in types if t in first})} (the config class renames them)"
            )
        types = own
    renamed = [LEGACY_LAYER_TYPES.get(t, t) for t in types]
    if renamed != types:
        old = sorted({t for t in types if t in LEGACY_LAYER_TYPES})
        notes.append(f"{key}: legacy names {old} read as transformers renames them")
    return renamed


def _pattern(cfg: Mapping, key: str) -> int:
    value = cfg.get(key)
    if value is None:
        raise ValueError(f"config key {key} is null; the layer pattern needs it")
    return check_int(value, f"config key {key}", minimum=1, maximum=MAX_LAYERS, integral_float=True)


def _only(types: list[str], allowed: tuple, family: Family, key: str = "layer_types") -> None:
    for i, t in enumerate(types):
        if t not in allowed:
            raise ValueError(
                f"{family.name}: {key}[{i}] = {t!r}; its code has layers {list(allowed)} only"
            )


def _plans(types: list[str], uses=None, keys=None) -> list[LayerPlan]:
    return [
        LayerPlan(
            i,
            t,
            keys[i] if keys is not None else t,
            True if uses is None else bool(uses[i]),
        )
        for i, t in enumerate(types)
    ]


def _rule_uniform(family, cfg, n, notes):
    types = _given_types(cfg, "layer_types", n, notes) or ["full_attention"] * n
    if family is not None:
        _only(types, PLAIN_LAYER_TYPES, family)
    return _plans(types)


def _rule_neomme(family, cfg, n, notes):
    """NeoMME: every layer rotates with its type's rope; without layer_types every sixth
    layer and the last are full attention (NeoMMEConfig.__post_init__)."""
    types = _neomme_types(cfg, n, notes)
    _only(types, PLAIN_LAYER_TYPES, family)
    return _plans(types)


def _rule_dory(family, cfg, n, notes):
    """Dory (DoryConfig.__post_init__): released files list an attention block and an "mlp"
    block per layer in layer_types and count both in num_hidden_layers; each layer rotates with
    its attention type's rope. Without layer_types every fourth layer is full attention. The
    recurrent section's layers run n_recurrent_loops times at the same positions."""
    types = cfg.get("layer_types")
    if isinstance(types, list) and "mlp" in types:
        if len(types) != n or len(types) % 2 or any(t != "mlp" for t in types[1::2]):
            raise ValueError(
                f"dory: config key layer_types with 'mlp' blocks must alternate an attention "
                f"type and 'mlp' over num_hidden_layers={n} entries, as DoryConfig halves them"
            )
        notes.append(
            "dory: layer_types lists (attention, mlp) blocks; each pair is one layer "
            f"({n // 2} layers, as DoryConfig reads them)"
        )
        types = types[::2]
    else:
        types = _given_types(cfg, "layer_types", n, notes)
        if types is None:
            types = [
                "full_attention" if (i + 1) % 4 == 0 else "sliding_attention" for i in range(n)
            ]
            notes.append("no layer_types: every fourth layer full attention (DoryConfig's default)")
    _only(types, PLAIN_LAYER_TYPES, family)
    return _plans(types)


def _rule_layer_types(family, cfg, n, notes):
    """Every layer rotates with the rope of its layer type; the types must be given (the
    config class builds its default pattern in code the record does not repeat)."""
    types = _given_types(cfg, "layer_types", n, notes)
    if types is None:
        raise ValueError(
            f"{family.name} needs config key layer_types: {family.config_class} builds a "
            "default pattern of sliding and full layers that refimpl's record does not hold"
        )
    _only(types, PLAIN_LAYER_TYPES, family)
    rp = cfg.get("rope_parameters")
    off = sorted(k for k, v in rp.items() if v is None) if isinstance(rp, dict) else []
    if off:
        notes.append(
            f"rope_parameters {off} null: those layers have no RoPE (no table is built for them)"
        )
    return _plans(types, [t not in off for t in types])


def _rule_gemma2(family, cfg, n, notes):
    types = _given_types(cfg, "layer_types", n, notes)
    if types is None:  # every other layer is full attention, one rope for both
        types = _pattern_types(n, 2, "full_attention", "sliding_attention")
    _only(types, PLAIN_LAYER_TYPES, family)
    return _plans(types)


def _sliding_types(family, cfg, n, notes, key="sliding_window_pattern"):
    types = _given_types(cfg, "layer_types", n, notes)
    if types is None:
        types = _pattern_types(n, _pattern(cfg, key), "full_attention", "sliding_attention")
    _only(types, PLAIN_LAYER_TYPES, family)
    return types


def _rule_gemma3(family, cfg, n, notes):
    return _plans(_sliding_types(family, cfg, n, notes))


def _rule_gemma4(family, cfg, n, notes):
    types = _sliding_types(family, cfg, n, notes)
    if "layer_types" not in cfg and types[-1] != "full_attention":
        types[-1] = "full_attention"
        notes.append("gemma4: the last layer is full attention (as transformers forces)")
    dims = _gemma4_head_dims(cfg, types)
    return [LayerPlan(i, t, t, True, dims[i]) for i, t in enumerate(types)]


def _rule_sliding_rope_only(family, cfg, n, notes):
    types = _sliding_types(family, cfg, n, notes)
    window = cfg.get("sliding_window")
    if window is None:
        notes.append(f"{family.name} with sliding_window null: no layer applies RoPE")
    return _plans(types, [t == "sliding_attention" and window is not None for t in types])


def _rule_afmoe(family, cfg, n, notes):
    """AFMoE: sliding layers rotate whatever sliding_window is; the full-attention layers
    (every ``global_attn_every_n_layers``-th when layer_types is absent) have no RoPE."""
    types = _sliding_types(family, cfg, n, notes, key="global_attn_every_n_layers")
    return _plans(types, [t == "sliding_attention" for t in types])


def _rule_flint(family, cfg, n, notes):
    """Flint: RoPE where the sliding window applies (a sliding layer with sliding_window set);
    without layer_types, layers 0 and 1, every 4th from 1 and the last are full attention."""
    types = _given_types(cfg, "layer_types", n, notes)
    if types is None:
        types = [
            "full_attention" if i < 2 or i % 4 == 1 or i == n - 1 else "sliding_attention"
            for i in range(n)
        ]
        notes.append(f"{family.name}: no layer_types: FlintConfig's pattern of full layers")
    _only(types, PLAIN_LAYER_TYPES, family)
    window = cfg.get("sliding_window")
    if window is None:
        notes.append(f"{family.name} with sliding_window null: no layer applies RoPE")
    return _plans(types, [t == "sliding_attention" and window is not None for t in types])


def _rule_minimax(family, cfg, n, notes):
    """MiniMax-Text: full attention at even layers, linear (lightning) attention at odd ones
    when layer_types is absent; RoPE on the full-attention layers."""
    types = _given_types(cfg, "layer_types", n, notes)
    if types is None:
        types = _pattern_types(n, 2, "linear_attention", "full_attention")
        notes.append(f"{family.name}: no layer_types: full attention at even layers")
    _only(types, ("full_attention", "linear_attention"), family)
    return _plans(types, [t == "full_attention" for t in types])


def _rule_olmo_hybrid(family, cfg, n, notes):
    """OLMo hybrid: every 4th layer full attention (the last one when none is) when
    layer_types is absent; RoPE on the full layers, and on none when the rope's base is null
    (the released checkpoints' NoPE form: the model then builds no rotary module)."""
    types = _given_types(cfg, "layer_types", n, notes)
    if types is None:
        types = _pattern_types(n, 4, "full_attention", "linear_attention")
        if "full_attention" not in types:
            types[-1] = "full_attention"
        notes.append(f"{family.name}: no layer_types: every 4th layer is full attention")
    _only(types, ("full_attention", "linear_attention"), family)
    rope = (
        cfg.given("rope_parameters") if isinstance(cfg, ConfigView) else cfg.get("rope_parameters")
    )
    null = ("rope_theta" in cfg and cfg.get("rope_theta") is None) or (
        isinstance(rope, dict) and "rope_theta" in rope and rope["rope_theta"] is None
    )
    if null:
        notes.append(f"{family.name} with a null rope_theta: no layer applies RoPE (NoPE)")
    return _plans(types, [t == "full_attention" and not null for t in types])


def _rule_kolibri1(family, cfg, n, notes):
    """Kolibri-1: every 5th layer is full attention when layer_types is absent; RoPE on every
    layer without a sliding window, else on the sliding layers only."""
    types = _given_types(cfg, "layer_types", n, notes)
    if types is None:
        types = _pattern_types(n, 5, "full_attention", "sliding_attention")
        notes.append(f"{family.name}: no layer_types: every 5th layer is full attention")
    _only(types, PLAIN_LAYER_TYPES, family)
    everywhere = cfg.get("sliding_window") is None
    return _plans(types, [everywhere or t == "sliding_attention" for t in types])


def _rule_cross_attention(family, cfg, n, notes):
    """Mllama's text model: the layers in cross_attention_layers attend to the image without
    RoPE; the others are self-attention with the one rope."""
    given = cfg.get("cross_attention_layers")
    if not isinstance(given, list) or not all(
        isinstance(i, int) and not isinstance(i, bool) for i in given
    ):
        raise TypeError("config key cross_attention_layers must be a list of layer indices")
    bad = [i for i in given if not 0 <= i < n]
    if bad:
        raise ValueError(f"config key cross_attention_layers has {bad}, outside the {n} layers")
    cross = set(given)
    types = ["cross_attention" if i in cross else "full_attention" for i in range(n)]
    return _plans(types, [i not in cross for i in range(n)])


def _rule_exaone4(family, cfg, n, notes):
    types = _sliding_types(family, cfg, n, notes)
    everywhere = cfg.get("sliding_window") is None
    return _plans(types, [everywhere or t == "sliding_attention" for t in types])


def _rule_sliding_full(family, cfg, n, notes):
    """Sliding layers except every 4th (Olmo3Config's default), each its own rope dict."""
    types = _given_types(cfg, "layer_types", n, notes)
    if types is None:
        types = _pattern_types(n, 4, "full_attention", "sliding_attention")
        notes.append(f"{family.name}: no layer_types: every 4th layer is full attention")
    _only(types, PLAIN_LAYER_TYPES, family)
    return _plans(types)


def _rule_linear_attention(family, cfg, n, notes):
    types = _given_types(cfg, "layer_types", n, notes)
    if types is None:
        interval = _pattern(cfg, "full_attention_interval")
        types = _pattern_types(n, interval, "full_attention", "linear_attention")
    _only(types, ("full_attention", "linear_attention"), family)
    return _plans(types, [t == "full_attention" for t in types])


def _rule_layer_group(family, cfg, n, notes):
    """Bailing hybrid (BailingHybridConfig): without layer_types every layer_group_size-th
    layer is full attention (MLA with RoPE), the others linear attention without RoPE."""
    types = _given_types(cfg, "layer_types", n, notes)
    if types is None:
        types = _pattern_types(
            n, _pattern(cfg, "layer_group_size"), "full_attention", "linear_attention"
        )
    _only(types, ("full_attention", "linear_attention"), family)
    return _plans(types, [t == "full_attention" for t in types])


def _rule_no_rope_layers(family, cfg, n, notes):
    types = _given_types(cfg, "layer_types", n, notes) or ["full_attention"] * n
    flags = _no_rope_flags(cfg, family, n, notes)
    return _plans(types, flags)


def _rule_deepseek_v4(family, cfg, n, notes):
    types = _given_types(cfg, "layer_types", n, notes)
    if types is None:
        types = _deepseek_v4_types(cfg, n, notes)
    allowed = ("sliding_attention", "compressed_sparse_attention", "heavily_compressed_attention")
    _only(types, allowed, family)
    keys = ["main" if t == "sliding_attention" else "compress" for t in types]
    return _plans(types, keys=keys)


def _deepseek_v4_types(cfg: Mapping, n: int, notes: list) -> list[str]:
    ratios = cfg.get("compress_ratios")
    table = {0: "sliding_attention", 4: "compressed_sparse_attention"}
    table[128] = "heavily_compressed_attention"
    if ratios is None:
        notes.append(
            "deepseek_v4: no layer_types nor compress_ratios: two heavily compressed layers, "
            "then compressed sparse and heavily compressed alternating (DeepseekV4Config's "
            "default)"
        )
        tail = [
            "compressed_sparse_attention" if i % 2 else "heavily_compressed_attention"
            for i in range(max(n - 2, 0))
        ]
        return ["heavily_compressed_attention"] * min(n, 2) + tail
    if not isinstance(ratios, list) or any(isinstance(r, bool) or r not in table for r in ratios):
        raise ValueError(
            "deepseek_v4: config key compress_ratios must be a list of 0, 4 or 128 (one per "
            f"layer), got {ratios!r}"
        )
    if len(ratios) != n:
        raise ValueError(
            f"deepseek_v4: config key compress_ratios has {len(ratios)} entries but "
            f"num_hidden_layers={n}; it names each layer's attention"
        )
    return [table[r] for r in ratios]


def _rule_indexed(family, cfg, n, notes):
    """DeepSeek Sparse Attention: every layer is MLA with an indexer ("indexed_attention")."""
    types = _given_types(cfg, "layer_types", n, notes) or ["indexed_attention"] * n
    _only(types, ("indexed_attention",), family)
    return _plans(types)


def _rule_kimi_linear(family, cfg, n, notes):
    """Kimi Linear: MLA layers without RoPE and KDA (linear attention) layers."""
    types = _given_types(cfg, "layer_types", n, notes)
    if types is None:
        lin = cfg.get("linear_attn_config") or {}
        if not isinstance(lin, Mapping):
            raise TypeError("config key linear_attn_config must be an object")
        if "full_attn_layers" in lin and "kda_layers" in lin:
            types = _one_based_types(lin, n)
        else:
            types = ["full_attention" if i and i % 4 == 0 else "linear_attention" for i in range(n)]
            notes.append(
                "kimi_linear: no layer_types nor linear_attn_config layers: "
                "KimiLinearConfig's default (every 4th layer from layer 4 is MLA)"
            )
    _only(types, ("full_attention", "linear_attention"), family)
    notes.append(
        "kimi_linear: transformers has no rotary module for it; its MLA layers are "
        "NoPE (mla_use_nope) and its KDA layers linear attention"
    )
    return _plans(types, [False] * n)


def _one_based_types(lin: Mapping, n: int) -> list[str]:
    types: list = [None] * n
    for key, kind in (("full_attn_layers", "full_attention"), ("kda_layers", "linear_attention")):
        layers = lin[key]
        if not isinstance(layers, list):
            raise TypeError(f"config key linear_attn_config.{key} must be a list of layers")
        for j in layers:
            j = check_int(j, f"linear_attn_config.{key} entry", minimum=1, maximum=n)
            types[j - 1] = kind
    missing = [i + 1 for i, t in enumerate(types) if t is None]
    if missing:
        raise ValueError(
            f"kimi_linear: linear_attn_config names no kind for layers {missing} (1-based)"
        )
    return types


def _rule_conv_hybrid(family, cfg, n, notes):
    """LFM2: short-convolution layers ("conv") without attention, attention layers with RoPE."""
    types = _given_types(cfg, "layer_types", n, notes)
    if types is None:
        idxs = cfg.get("full_attn_idxs")
        if idxs is None:
            idxs = list(range(n))
            notes.append(
                f"{family.name}: no layer_types nor full_attn_idxs: every layer is "
                "attention (the config class's default)"
            )
        if not isinstance(idxs, list):
            raise TypeError("config key full_attn_idxs must be a list of layer indices")
        idxs = {check_int(i, "full_attn_idxs entry", minimum=0, maximum=n - 1) for i in idxs}
        types = ["full_attention" if i in idxs else "conv" for i in range(n)]
    _only(types, ("full_attention", "sliding_attention", "conv"), family)
    return _plans(types, [t != "conv" for t in types])


def _rule_zamba2(family, cfg, n, notes):
    """Zamba2: Mamba2 layers, and "hybrid" layers that add the shared attention block."""
    types = _given_types(cfg, "layers_block_type", n, notes)
    if types is None:
        pattern = (
            ["linear_attention"]
            + (["linear_attention"] * 5 + ["hybrid"]) * 7
            + ["linear_attention"] * 4
            + ["hybrid"]
            + ["linear_attention"] * 3
            + ["hybrid"]
            + ["linear_attention"] * 2
        )
        if n != len(pattern):
            raise ValueError(
                f"zamba2 without layers_block_type: Zamba2Config's default pattern has "
                f"{len(pattern)} layers, the config has num_hidden_layers={n}"
            )
        types = pattern
        notes.append("zamba2: no layers_block_type: Zamba2Config's default pattern")
    _only(types, ("linear_attention", "hybrid"), family, "layers_block_type")
    rope = config_flag(cfg, "use_mem_rope", False)
    if not rope:
        notes.append("zamba2: use_mem_rope is false: the shared attention has no RoPE")
    return _plans(types, [t == "hybrid" and rope for t in types])


def _no_rope_flags(cfg: Mapping, family: Family, n: int, notes: list) -> list[bool]:
    flags = cfg.get("no_rope_layers")
    if flags is not None and not isinstance(flags, list):
        raise TypeError("config key no_rope_layers must be a list of 0/1 entries")
    # Llama 4 replaces an empty list by the interval rule; SmolLM3 only a missing one.
    if flags is None or (not flags and family.name == "llama4"):
        interval = _pattern(cfg, "no_rope_layer_interval")
        return [(i + 1) % interval != 0 for i in range(n)]
    out = []
    for i, v in enumerate(flags):
        if isinstance(v, bool) or v not in (0, 1):
            raise ValueError(
                f"config key no_rope_layers[{i}] must be 1 (RoPE) or 0 (NoPE), got {v!r}"
            )
        out.append(v == 1)
    if len(out) != n:
        raise ValueError(
            f"config key no_rope_layers has {len(out)} entries but num_hidden_layers={n}"
        )
    return out


def _gemma4_head_dims(cfg: Mapping, types: list[str]) -> list[int | None]:
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
    return [width if t == "full_attention" else None for t in types]


def _rule_layer_rope_theta(family, cfg, n, notes):
    """Granite SWA: layer i rotates with base ``layer_rope_theta[i]`` (0: no RoPE); without
    the list every layer takes ``rope_theta`` (the config class's default)."""
    types = _given_types(cfg, "layer_types", n, notes) or ["full_attention"] * n
    _only(types, PLAIN_LAYER_TYPES, family)
    thetas = _layer_thetas(cfg, n)
    if thetas is None:
        notes.append(f"{family.name}: no layer_rope_theta: every layer at rope_theta")
        return _plans(types)
    return _plans(types, [t != 0 for t in thetas], [_theta_key(t) for t in thetas])


def _rule_layer_theta_nope(family, cfg, n, notes):
    """Muse Spark and Glimmer: ``layer_rope_theta[i] == 0`` marks a layer without RoPE; every
    other layer takes the one rotary module at ``rope_theta`` whatever non-zero value the list
    holds (transformers 5.24 passes ``position_embeddings if layer_rope_theta[i] else None``).
    Without the list the config class puts NoPE on every fourth layer counting back from the
    last."""
    types = _given_types(cfg, "layer_types", n, notes) or ["full_attention"] * n
    _only(types, PLAIN_LAYER_TYPES, family)
    thetas = _layer_thetas(cfg, n)
    if thetas is None:
        thetas = [0.0 if (n - 1 - i) % 4 == 0 else 1.0 for i in range(n)]
        notes.append(
            f"{family.name}: no layer_rope_theta: NoPE on every fourth layer from the last "
            f"({family.config_class}'s default)"
        )
    elif len({t for t in thetas if t}) > 1:
        notes.append(
            f"{family.name}: layer_rope_theta's non-zero values differ, but every rotating "
            "layer uses the one rotary module at rope_theta"
        )
    return _plans(types, [t != 0 for t in thetas])


def _rule_linear_sliding_rope(family, cfg, n, notes):
    """Lara Mini: linear-attention layers, and attention layers of which only the sliding ones
    get the rotary tables (transformers 5.24 passes ``position_embeddings if layer_type ==
    "sliding_attention" else None``); the full-attention layers are NoPE."""
    types = _given_types(cfg, "layer_types", n, notes)
    if types is None:
        raise ValueError(
            f"{family.name} needs config key layer_types: {family.config_class} builds its "
            "default pattern in code that refimpl's record does not hold"
        )
    _only(types, ("full_attention", "sliding_attention", "linear_attention"), family)
    return _plans(types, [t == "sliding_attention" for t in types])


def _rule_zaya(family, cfg, n, notes):
    """ZAYA: every layer attends (beside its mixer) with the rope of its type, "hybrid" or
    "hybrid_sliding"; without layer_types every layer is "hybrid" (the config class's
    default)."""
    types = _given_types(cfg, "layer_types", n, notes)
    if types is None:
        types = ["hybrid"] * n
        notes.append(f"{family.name}: no layer_types: every layer 'hybrid' (class default)")
    _only(types, ("hybrid", "hybrid_sliding"), family)
    return _plans(types)


def _rule_molmo2(family, cfg, n, notes):
    """Molmo 2: layers in ``rope_scaling_layers`` (every layer without the list, the config
    class's default) rotate with the scaled rope, the others with the unscaled one."""
    types = _given_types(cfg, "layer_types", n, notes) or ["full_attention"] * n
    _only(types, PLAIN_LAYER_TYPES, family)
    idxs = cfg.get("rope_scaling_layers")
    if idxs is None:
        idxs = list(range(n))
    if not isinstance(idxs, list):
        raise TypeError("config key rope_scaling_layers must be a list of layer indices")
    idxs = {check_int(i, "rope_scaling_layers entry", minimum=0, maximum=n - 1) for i in idxs}
    return _plans(types, None, ["scaled" if i in idxs else "unscaled" for i in range(n)])


def _rule_cohere2_moe(family, cfg, n, notes):
    """Cohere2 MoE: RoPE where sliding_window is set (sliding layers), and on the dense-MLP
    layers too when ``prefix_dense_sliding_window_pattern`` is 1 (transformers 5.24
    ``force_rope``). The config class derives both lists from ``first_k_dense_replace`` and two
    patterns, which refimpl does not repeat: the lists must be given."""
    types = _given_types(cfg, "layer_types", n, notes)
    mlp = _given_types(cfg, "mlp_layer_types", n, notes)
    if types is None or mlp is None:
        raise ValueError(
            f"{family.name} needs config keys layer_types and mlp_layer_types: "
            f"{family.config_class} derives them from first_k_dense_replace and two patterns"
        )
    _only(types, PLAIN_LAYER_TYPES, family)
    window = cfg.get("sliding_window") is not None
    force = cfg.get("prefix_dense_sliding_window_pattern") == 1
    uses = [
        (t == "sliding_attention" and window) or (m == "dense" and force)
        for t, m in zip(types, mlp, strict=True)
    ]
    return _plans(types, uses)


def _rule_reference_sliding(family, cfg, n, notes):
    """Unlimited OCR: every layer rotates with the one rope, its "reference_sliding_attention"
    layers (a sliding window over a reference cache) included."""
    allowed = (*PLAIN_LAYER_TYPES, "reference_sliding_attention")
    types = _given_types(cfg, "layer_types", n, notes) or ["reference_sliding_attention"] * n
    _only(types, allowed, family)
    return _plans(types)


def _rule_falcon(family, cfg, n, notes):
    """Falcon: RoPE on every layer, unless ``alibi`` is true (Falcon-RW), where the attention
    adds ALiBi biases and rotates nothing (transformers 5.24 ``if alibi is None``)."""
    if config_flag(cfg, "alibi", False):
        raise ValueError(
            f"{family.name} with config key alibi true has no RoPE: its attention adds ALiBi "
            "biases instead (refimpl.bias.alibi_bias)"
        )
    return _rule_uniform(family, cfg, n, notes)


def _rule_block_types(family, cfg, n, notes):
    """RecurrentGemma: ``block_types`` repeated over the layers; "attention" blocks are local
    attention with RoPE, "recurrent" ones have none (transformers names them
    sliding_attention and linear_attention)."""
    blocks = cfg.get("block_types")
    if (
        not isinstance(blocks, (list, tuple))
        or not blocks
        or not all(isinstance(b, str) for b in blocks)
    ):
        raise TypeError("config key block_types must be a non-empty list of strings")
    _only(list(blocks), ("recurrent", "attention"), family, "block_types")
    names = {"recurrent": "linear_attention", "attention": "sliding_attention"}
    types = [names[blocks[i % len(blocks)]] for i in range(n)]
    return _plans(types, [t == "sliding_attention" for t in types])


def _rule_attn_layer_indices(family, cfg, n, notes):
    """Bamba: attention (with RoPE) at ``attn_layer_indices``, Mamba 2 layers elsewhere; no
    list means no attention layer (the config class's default)."""
    idxs = cfg.get("attn_layer_indices")
    if idxs is None:
        idxs = []
        notes.append(f"{family.name}: no attn_layer_indices: every layer is Mamba (no RoPE)")
    if not isinstance(idxs, list):
        raise TypeError("config key attn_layer_indices must be a list of layer indices")
    idxs = {check_int(i, "attn_layer_indices entry", minimum=0, maximum=n - 1) for i in idxs}
    types = ["full_attention" if i in idxs else "linear_attention" for i in range(n)]
    return _plans(types, [i in idxs for i in range(n)])


# Dots3 Note (Dots3NoteTextConfig.__post_init__): the legacy keys of the sliding layers' MLA
# shape and their class defaults, and the three layer types its model builds masks for
DOTS3_SWA_DEFAULTS = {"head_dim": 256, "qk_nope_head_dim": 192}
DOTS3_SWA_THETA = 50000.0
DOTS3_LAYER_TYPES = ("full_attention", "sliding_attention", "indexed_attention")


def _dots3_types(cfg: Mapping, n: int, notes: list) -> list[str]:
    """Dots3NoteTextConfig's layer types: ``layer_types`` (``use_dsa`` true, the default without
    ``per_layer_config``, renames full_attention to indexed_attention; false the other way), or
    indexed (full without DSA) on layers 0, 1 and every fourth from 1, sliding elsewhere
    (every layer indexed with ``use_sliding_window`` false)."""
    raw = cfg.raw if isinstance(cfg, ConfigView) else cfg
    if "use_dsa" in raw:
        use_dsa = None if raw["use_dsa"] is None else check_flag(raw["use_dsa"], "use_dsa")
    else:
        use_dsa = None if "per_layer_config" in raw else True
    sliding = raw.get("use_sliding_window", True)
    sliding = False if sliding is None else check_flag(sliding, "config key use_sliding_window")
    renames = None
    if use_dsa is not None:
        pair = ("full_attention", "indexed_attention")
        old, new = pair if use_dsa else pair[::-1]
        renames = {old: new}
    types = _given_types(raw, "layer_types", n, notes, first=renames)
    if types is None:
        full = "full_attention" if use_dsa is False else "indexed_attention"
        types = [
            full if not sliding or i < 2 or i % 4 == 1 else "sliding_attention" for i in range(n)
        ]
        notes.append(
            f"dots3: no layer_types: {full} on layers 0, 1 and every fourth from 1, sliding "
            "attention elsewhere (Dots3NoteTextConfig's default)"
            if sliding
            else f"dots3: no layer_types and use_sliding_window false: every layer {full}"
        )
    return types


def _dots3_overrides(cfg: Mapping, types: list[str], notes: list) -> list[dict]:
    """Each layer's ``per_layer_config`` overrides; without that key the config class gives the
    sliding layers theirs from the legacy ``swa_*`` keys (head 256, nope 192, rope the rest)."""
    raw = cfg.raw if isinstance(cfg, ConfigView) else cfg
    per_layer = raw.get("per_layer_config")
    n = len(types)
    if per_layer is None:
        head = config_int(raw, "swa_head_dim", maximum=MAX_DIM) or DOTS3_SWA_DEFAULTS["head_dim"]
        nope = config_int(raw, "swa_qk_nope_head_dim", minimum=0, maximum=MAX_DIM)
        nope = DOTS3_SWA_DEFAULTS["qk_nope_head_dim"] if nope is None else nope
        rope = config_int(raw, "swa_qk_rope_head_dim", maximum=MAX_DIM)
        if rope is None:
            rope = head - nope
        if "sliding_attention" in types:
            notes.append(
                f"dots3: no per_layer_config: the sliding layers' rope head is "
                f"swa_qk_rope_head_dim {rope} of head {head} (Dots3NoteTextConfig builds their "
                "overrides from the swa_* keys)"
            )
        sliding = {"head_dim": head, "qk_rope_head_dim": rope}
        return [dict(sliding) if t == "sliding_attention" else {} for t in types]
    if not isinstance(per_layer, dict):
        raise TypeError("config key per_layer_config must be an object (layer -> overrides)")
    out: list[dict] = [{} for _ in range(n)]
    for key, override in per_layer.items():
        idx = check_int(key if not isinstance(key, str) else _int_key(key), "per_layer_config")
        if not 0 <= idx < n:
            raise ValueError(f"config key per_layer_config names layer {idx} of {n}")
        if not isinstance(override, dict):
            raise TypeError(f"config key per_layer_config[{key}] must be an object")
        out[idx] = dict(override)
    return out


def _rule_dots3(family, cfg, n, notes):
    """Dots3 Note: MLA on every layer, its rope head per layer type; each type's rotary
    table is built from the first layer of that type (``per_layer_config[layer_type]``, which
    transformers refuses when the type's layers differ) with ``partial_rotary_factor`` set to
    ``qk_rope_head_dim / head_dim`` of that layer; "indexed_attention" layers run the DSA
    indexer."""
    types = _dots3_types(cfg, n, notes)
    _only(types, DOTS3_LAYER_TYPES, family)
    overrides = _dots3_overrides(cfg, types, notes)
    rope_of: dict[str, int] = {}
    for t in dict.fromkeys(types):
        first = types.index(t)
        for i, u in enumerate(types):
            if u == t and overrides[i] != overrides[first]:
                raise ValueError(
                    f"dots3: layer type {t!r} is not homogeneous across layers (the "
                    f"per_layer_config of layer {i} differs from layer {first}'s): transformers "
                    "5.24 builds one rotary table per layer type and raises on this config"
                )
        o = overrides[first]
        rope = config_int(o, "qk_rope_head_dim", maximum=MAX_DIM)
        rope = rope if rope is not None else config_int(cfg, "qk_rope_head_dim", maximum=MAX_DIM)
        head = config_int(o, "head_dim", maximum=MAX_DIM)
        head = head if head is not None else _head_dim(cfg, notes)
        if rope is None:
            raise ValueError("dots3 needs config key qk_rope_head_dim (the MLA rope head)")
        # the width of the type's table: the class's partial_rotary_factor times head_dim
        table = int(head * (rope / head))
        if table != rope:
            raise ValueError(
                f"dots3: layer type {t!r} rotates qk_rope_head_dim={rope} features, but "
                f"transformers sizes its table int(head_dim * {rope}/{head}) = {table}: its "
                "attention cannot apply that table"
            )
        rope_of[t] = rope
    return [LayerPlan(i, t, t, True, rope_of[t]) for i, t in enumerate(types)]


def _rule_minimax_m3(family, cfg, n, notes):
    """MiniMax-M3: every layer rotates with the one rope; its "minimax_m3_sparse" layers run
    the lightning indexer. Without ``layer_types`` the config class reads them from the legacy
    ``sparse_attention_config.sparse_attention_freq`` (truthy: sparse), else every layer is full
    attention."""
    types = _given_types(cfg, "layer_types", n, notes)
    if types is None:
        sparse = cfg.get("sparse_attention_config") or {}
        if not isinstance(sparse, Mapping):
            raise TypeError("config key sparse_attention_config must be an object")
        freq = sparse.get("sparse_attention_freq")
        if freq is None:
            types = ["full_attention"] * n
            notes.append(f"{family.name}: no layer_types: every layer full attention (no indexer)")
        else:
            key = "config key sparse_attention_config.sparse_attention_freq"
            if not isinstance(freq, list) or len(freq) != n:
                raise ValueError(f"{key} must be a list of {n} entries (one per layer)")
            if any(f not in (0, 1) for f in freq):  # true/false compare equal to 1/0
                raise ValueError(f"{key} entries must be 0/1 or true/false, got {freq!r}")
            types = ["minimax_m3_sparse" if f else "full_attention" for f in freq]
            notes.append(f"{family.name}: layer types from {key[11:]} (1: minimax_m3_sparse)")
    _only(types, ("full_attention", "minimax_m3_sparse"), family)
    given = config_int(cfg.raw if isinstance(cfg, ConfigView) else cfg, "rotary_dim")
    if given is not None:
        notes.append(
            f"{family.name}: rotary_dim {given} is not read by transformers 5.24 "
            "(MiniMaxM3VLRotaryEmbedding rotates int(head_dim * partial_rotary_factor) "
            "features, the spec's rotary width)"
        )
    return _plans(types)


def _rule_qwen4_exp(family, cfg, n, notes):
    """Qwen4-Exp: gated-DeltaNet linear-attention layers without RoPE, and attention layers with
    the QSA indexer ("indexed_attention"; a file's "full_attention" is renamed to it). Without
    ``layer_types`` every ``full_attention_interval``-th layer (4, the class's default)
    attends."""
    types = _given_types(
        cfg, "layer_types", n, notes, first={"full_attention": "indexed_attention"}
    )
    if types is None:
        raw = cfg.raw if isinstance(cfg, ConfigView) else cfg
        interval = config_int(raw, "full_attention_interval") or 4
        types = _pattern_types(n, interval, "indexed_attention", "linear_attention")
        notes.append(
            f"{family.name}: no layer_types: every {interval}th layer indexed attention, linear "
            "attention elsewhere (Qwen4ExpTextConfig's default)"
        )
    _only(types, ("linear_attention", "indexed_attention"), family)
    return _plans(types, [t == "indexed_attention" for t in types])


def _int_key(key: str) -> int:
    try:
        return int(key)
    except ValueError:
        raise ValueError(f"config key per_layer_config has a non-integer layer {key!r}") from None


_LAYER_RULE_FUNCTIONS: Mapping[str, Callable] = MappingProxyType(
    {
        "uniform": _rule_uniform,
        "layer_types": _rule_layer_types,
        "dory": _rule_dory,
        "layer_group": _rule_layer_group,
        "neomme": _rule_neomme,
        "gemma2": _rule_gemma2,
        "gemma3": _rule_gemma3,
        "gemma4": _rule_gemma4,
        "no_rope_layers": _rule_no_rope_layers,
        "sliding_rope_only": _rule_sliding_rope_only,
        "afmoe": _rule_afmoe,
        "kolibri1": _rule_kolibri1,
        "minimax": _rule_minimax,
        "olmo_hybrid": _rule_olmo_hybrid,
        "cross_attention": _rule_cross_attention,
        "flint": _rule_flint,
        "exaone4": _rule_exaone4,
        "sliding_full": _rule_sliding_full,
        "linear_attention": _rule_linear_attention,
        "deepseek_v4": _rule_deepseek_v4,
        "indexed": _rule_indexed,
        "kimi_linear": _rule_kimi_linear,
        "conv_hybrid": _rule_conv_hybrid,
        "zamba2": _rule_zamba2,
        "layer_rope_theta": _rule_layer_rope_theta,
        "layer_theta_nope": _rule_layer_theta_nope,
        "falcon": _rule_falcon,
        "reference_sliding": _rule_reference_sliding,
        "cohere2_moe": _rule_cohere2_moe,
        "molmo2": _rule_molmo2,
        "zaya": _rule_zaya,
        "linear_sliding_rope": _rule_linear_sliding_rope,
        "block_types": _rule_block_types,
        "attn_layer_indices": _rule_attn_layer_indices,
        "dots3": _rule_dots3,
        "minimax_m3": _rule_minimax_m3,
        "qwen4_exp": _rule_qwen4_exp,
    }
)
LAYER_RULES = tuple(_LAYER_RULE_FUNCTIONS)
"""The layer rules a record may name (``Family.layers``)."""


def _glm_indexer_types(cfg: Mapping, n: int, notes: list) -> list[str]:
    """GlmMoeDsaConfig's indexer_types when the config omits them: ``index_topk_pattern``
    (``F``ull / ``S``hared), else ``index_topk_freq`` (1) from ``index_skip_topk_offset`` (2)."""
    pattern = cfg.get("index_topk_pattern")
    if pattern is not None:
        if isinstance(pattern, str):
            if set(pattern) - {"F", "S"}:
                raise ValueError("config key index_topk_pattern must hold only F and S")
            types = ["full" if c == "F" else "shared" for c in pattern]
        elif isinstance(pattern, list) and all(t in ("full", "shared") for t in pattern):
            types = list(pattern)
        else:
            raise TypeError("config key index_topk_pattern must be a string of F/S or a list")
        if len(types) != n:
            raise ValueError(
                f"config key index_topk_pattern has {len(types)} entries but num_hidden_layers={n}"
            )
        return types
    freq = check_int(cfg.get("index_topk_freq", 1), "config key index_topk_freq", minimum=0)
    offset = cfg.get("index_skip_topk_offset", 2)
    offset = check_int(offset, "config key index_skip_topk_offset", minimum=-MAX_LAYERS)
    freq = max(freq, 1)
    types = ["full" if max(i - offset + 1, 0) % freq == 0 else "shared" for i in range(n)]
    if "shared" in types:
        notes.append(
            f"no indexer_types: from index_topk_freq {freq} and index_skip_topk_offset "
            f"{offset}, layers {[i for i, t in enumerate(types) if t == 'shared']} reuse the "
            "previous indexer's top-k"
        )
    return types


def _hy_v4_indexer_types(cfg: Mapping, n: int, notes: list) -> list[str]:
    """HYV4Config's indexer_types when the config omits them: layer 0 and every fourth layer
    from layer 1 run the indexer ("full"), the others reuse its top-k ("shared")."""
    notes.append(
        "no indexer_types: 'full' on layer 0 and every fourth from layer 1 (HYV4Config's and "
        "HYV4VLTextConfig's default)"
    )
    return ["full" if i == 0 or (i - 1) % 4 == 0 else "shared" for i in range(n)]


# per (family, key), else per key: how a family's code derives a per-layer list the config omits
_DERIVED_LAYER_LISTS: Mapping[str, Callable] = MappingProxyType(
    {
        "indexer_types": _glm_indexer_types,
        "hy_v4:indexer_types": _hy_v4_indexer_types,
        "hy_v4_vl:indexer_types": _hy_v4_indexer_types,
    }
)


def _with_submodules(family: Family | None, cfg: Mapping, plans: list, notes) -> list:
    if family is None or not family.submodules:
        return plans
    n = len(plans)
    runs: dict[int, list[str]] = {p.index: [] for p in plans}
    for sub in family.submodules:
        where = None
        if sub.layers_key is not None:
            where = _given_types(cfg, sub.layers_key, n, notes)
            derive = _DERIVED_LAYER_LISTS.get(
                f"{family.name}:{sub.layers_key}", _DERIVED_LAYER_LISTS.get(sub.layers_key)
            )
            if where is None and derive is not None:
                where = derive(cfg, n, notes)
        flag = sub.ignored_flag
        if flag is not None and cfg.get(flag) is not None:
            said = check_flag(cfg.get(flag), f"config key {flag}")
            if said != (sub.pairing == "interleaved"):
                notes.append(
                    f"{flag}={str(said).lower()} is ignored: transformers 5.24 rotates the "
                    f"{family.name} {sub.name} with {sub.pairing} pairs whatever it says "
                    "(vLLM reads it)"
                )
        for p in plans:
            if sub.layer_types is not None and p.layer_type not in sub.layer_types:
                continue
            if where is not None and where[p.index] not in sub.runs_on:
                continue
            runs[p.index].append(sub.name)
    return [dataclasses.replace(p, submodules=tuple(runs[p.index])) for p in plans]


def layer_plan(
    family: Family | None, cfg: Mapping, notes: list, *, need_layers: bool = True
) -> list[LayerPlan]:
    """Every layer of the model as the family's code builds it.

    A config without a layer count (and no class default for it) gives one entry standing
    for every layer (layer type ``"all"``) when the layers are alike; with per-layer rules
    it is an error, or, with ``need_layers=False`` (one spec is asked for), the entry stands
    for the layers that apply RoPE.

    Examples
    --------
    >>> from refimpl.families import resolve
    >>> r = resolve({"model_type": "llama4_text", "num_hidden_layers": 4}, [])
    >>> [p.uses_rope for p in layer_plan(r.family, r.cfg, [])]
    [True, True, True, False]
    """
    n = _num_layers(family, cfg)
    types = cfg.get("layer_types")
    if n is None and isinstance(types, list):
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
        subs = tuple(s.name for s in family.submodules) if family is not None else ()
        return [LayerPlan(0, "all", "all", submodules=subs)]
    plans = _LAYER_RULE_FUNCTIONS[rule](family, cfg, n, notes)
    return _with_submodules(family, cfg, plans, notes)


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
    >>> from refimpl.families import family_for
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
