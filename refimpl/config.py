"""RoPE of a real model: read a ``config.json`` and return its exact rotary embedding, layer
by layer.

:func:`rope_from_config` returns the :class:`~refimpl.spec.RopeSpec` of one layer type and
:func:`rope_schedule` the whole model: one :class:`LayerRope` per layer (a spec, or none for a
layer without RoPE, the query scaling the layer applies, and the RoPE of its indexer). Both
read the transformers 4.x form (``rope_scaling`` + ``rope_theta``), the 5.x form
(``rope_parameters``, flat or nested per layer type), legacy ``"type"`` keys, and the
model-family records of :mod:`refimpl.families` in one pass: which family reads the config
(and why), its class defaults, its rope form, its layer rule, then per layer the widths,
pairing, scaling method and query scaling. The scaling method's keys, defaults and required
parameters come from its record in :data:`refimpl.scaling.ROPE_SCALINGS`.

One refusal policy:

* refused (ValueError/TypeError naming the key and what refimpl would need): what
  transformers cannot load or run either, what refimpl cannot express although transformers
  uses it, an unknown ``model_type`` whose config shows per-layer or non-RoPE structure
  (:data:`refimpl.families.MARKERS`), and values invalid by the method's own definition
  (``factor < 1``, ``beta_fast = 0``, a negative ``mscale``, ...);
* recorded in ``notes`` (and shown by ``python -m refimpl describe``): keys transformers
  ignores, defaults applied (each config-class default by name, e.g. GPT-NeoX's
  ``rotary_pct`` 0.25), and choices transformers makes that a reader may not expect (an
  explicit YaRN ``factor`` that differs from ``max_position_embeddings / original``);
* where transformers would silently use another value, refimpl refuses: a yarn/llama3/longrope
  config without ``original_max_position_embeddings`` (transformers 5.x takes
  ``max_position_embeddings``), ``original_max_position_embeddings`` written twice with
  different values, a base written twice.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Sequence
from typing import Any

from . import families as fam
from . import family_rules as rules
from ._checks import (
    MAX_POSITION,
    check_base,
    check_flag,
    check_int,
    check_pairing,
    check_positive_int,
    check_real,
)
from .family_rules import LayerPlan, QueryScaling
from .remap import DualChunkAttention
from .scaling import ROPE_SCALINGS
from .spec import (  # INV_FREQ_AGREEMENT, OUTPUT_ORDERS, PRECISIONS: re-exported
    INV_FREQ_AGREEMENT,  # noqa: F401
    OUTPUT_ORDERS,  # noqa: F401
    PRECISIONS,  # noqa: F401
    RopeSpec,
    _mrope_section,
)

# RopeSpec, PRECISIONS, OUTPUT_ORDERS and INV_FREQ_AGREEMENT are importable from here too;
# they are documented where they are defined (refimpl.spec, refimpl.spec_tables).
__all__ = [
    "LayerRope",
    "RopeSchedule",
    "load_config",
    "rope_from_config",
    "rope_schedule",
]

DEFAULT_BASE = 10000.0
# config.json files are kilobytes; a file this large is not a model config.
MAX_CONFIG_BYTES = 64 * 2**20
_LEGACY_TYPE_NAMES = {"su": "longrope", "mrope": "default"}
_COMMON_KEYS = {"rope_type", "type", "rope_theta", "partial_rotary_factor"}
_MROPE_KEYS = {"mrope_section", "mrope_interleaved", "mrope_layout"}


# --------------------------------------------------------------------------- schedule


@dataclasses.dataclass(frozen=True)
class LayerRope:
    """One layer of a model: its RoPE (``spec``; None for a layer without RoPE), the query
    scaling its attention applies (None: none), and the RoPE of its indexer (``indexer``:
    the DeepSeek Sparse Attention indexer's own rotation of its heads with the layer's
    tables; None where the layer has none)."""

    index: int
    layer_type: str
    spec: RopeSpec | None
    query_scaling: QueryScaling | None = None
    indexer: RopeSpec | None = None


@dataclasses.dataclass(frozen=True)
class RopeSchedule(Sequence):
    """Every layer of a model as a sequence of :class:`LayerRope`.

    Attributes
    ----------
    layers : tuple of LayerRope
    notes : tuple of str
        Model-level notes (family, layer rules, defaults); each spec carries its own too.
    source : str
    model_type : str or None
    family : str or None
        The :mod:`refimpl.families` record that read the config (None: the generic reading).
    reason : str
        Why that record (or the generic reading) applies.
    dual_chunk_attention : DualChunkAttention or None
        The config's ``dual_chunk_attention_config`` (Qwen2.5-1M): transformers ignores it,
        vLLM and SGLang run Dual Chunk Attention with it
        (:func:`refimpl.remap.dual_chunk_attention_scores`).
    """

    layers: tuple
    notes: tuple = ()
    source: str = "<dict>"
    model_type: str | None = None
    family: str | None = None
    reason: str = ""
    dual_chunk_attention: DualChunkAttention | None = None

    def __getitem__(self, i):
        return self.layers[i]

    def __len__(self) -> int:
        return len(self.layers)

    def groups(self) -> dict:
        """``spec.key()`` (None for layers without RoPE) -> the layer indices with that spec,
        in order of first appearance.

        Examples
        --------
        >>> cfg = {"model_type": "llama4_text", "head_dim": 8, "num_hidden_layers": 4}
        >>> [len(v) for v in rope_schedule(cfg).groups().values()]
        [3, 1]
        """
        out: dict = {}
        for layer in self.layers:
            out.setdefault(None if layer.spec is None else layer.spec.key(), []).append(layer.index)
        return out

    def specs(self) -> dict:
        """``spec.key()`` -> one :class:`RopeSpec` with that key (layers with RoPE only)."""
        return {
            layer.spec.key(): layer.spec
            for layer in reversed(self.layers)
            if layer.spec is not None
        }

    def runs(self) -> list[tuple[int, int, LayerRope]]:
        """Maximal runs ``(first, last, layer)`` of consecutive layers with the same spec,
        query scaling and indexer (for a compact listing)."""
        out: list = []
        for layer in self.layers:
            sig = (
                None if layer.spec is None else layer.spec.key(),
                layer.layer_type,
                layer.query_scaling,
                None if layer.indexer is None else layer.indexer.key(),
            )
            if out and out[-1][3] == sig and out[-1][1] == layer.index - 1:
                out[-1][1] = layer.index
            else:
                out.append([layer.index, layer.index, layer, sig])
        return [(a, b, layer) for a, b, layer, _ in out]


# --------------------------------------------------------------------------- loading


def _no_duplicates(pairs):
    out = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"duplicate key {key!r} in the JSON object (its last value would win)")
        out[key] = value
    return out


def load_config(config) -> tuple[dict, str]:
    """Return ``(dict, source)`` from a config dict, a transformers config object (anything
    with ``to_dict()``) or the path of a ``config.json``.

    Parameters
    ----------
    config : dict, object with ``to_dict()``, str or os.PathLike

    Returns
    -------
    config_dict : dict
        A copy of the configuration.
    source : str
        ``"<dict>"``, the object's class name, or the path.

    Raises
    ------
    ValueError
        The path does not exist, is larger than :data:`MAX_CONFIG_BYTES`, is not UTF-8, is
        not valid JSON, repeats a key in an object, or nests more than
        :data:`refimpl.families.MAX_CONFIG_DEPTH` levels deep (the message names the path).
    TypeError
        ``config`` is none of the accepted kinds.

    Examples
    --------
    >>> load_config({"head_dim": 8})
    ({'head_dim': 8}, '<dict>')
    """
    if isinstance(config, dict):
        rules.check_depth(config, "config")
        return dict(config), "<dict>"
    if hasattr(config, "to_dict") and callable(config.to_dict):
        data = dict(config.to_dict())
        rules.check_depth(data, f"config {type(config).__name__}")
        return data, type(config).__name__
    if not isinstance(config, (str, os.PathLike)):
        raise TypeError(
            f"config must be a dict, a path to config.json or a transformers config, "
            f"got {type(config).__name__}"
        )
    path = os.fspath(config)
    if not os.path.isfile(path):
        raise ValueError(f"config: no such file: {path}")
    if os.path.getsize(path) > MAX_CONFIG_BYTES:
        raise ValueError(f"config: {path} is larger than {MAX_CONFIG_BYTES} bytes")
    try:
        with open(path, "rb") as fh:
            text = fh.read().decode("utf-8")
        data = json.loads(text, object_pairs_hook=_no_duplicates)
    except UnicodeDecodeError as exc:
        where = f"{exc.reason} at byte {exc.start}"
        raise ValueError(f"config: {path} is not UTF-8 text ({where})") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"config: {path} is not valid JSON ({exc})") from None
    except RecursionError:
        raise ValueError(f"config: {path} nests JSON too deeply to be a config") from None
    except ValueError as exc:
        raise ValueError(f"config: {path}: {exc}") from None
    if not isinstance(data, dict):
        raise ValueError(f"config: {path} must hold a JSON object, got {type(data).__name__}")
    rules.check_depth(data, f"config: {path}")
    return data, path


# --------------------------------------------------------------------------- readers


def _one_value(candidates: list[tuple[str, Any]], what: str):
    """The common value of the keys that are present; an error if they disagree."""
    present = [(k, v) for k, v in candidates if v is not None]
    if not present:
        return None
    first = present[0][1]
    for _, v in present[1:]:
        if v != first:
            listing = ", ".join(f"{k}={v!r}" for k, v in present)
            raise ValueError(f"config gives {what} twice with different values: {listing}")
    return first


def _read_rope_type(rope: dict, family, notes: list) -> str:
    t_new, t_old = rope.get("rope_type"), rope.get("type")
    if t_new is not None and t_old is not None and t_new != t_old:
        raise ValueError(f"rope parameters have rope_type={t_new!r} and type={t_old!r}")
    t = t_new if t_new is not None else t_old
    if t is None:
        if set(rope) - _COMMON_KEYS - _MROPE_KEYS - {"llama_4_scaling_beta"}:
            raise ValueError("rope_scaling has no rope_type (nor legacy type) key")
        return "default"
    if not isinstance(t, str):
        raise TypeError(f"rope_type must be a string, got {t!r}")
    if t in _LEGACY_TYPE_NAMES:
        notes.append(f"legacy rope type {t!r} read as {_LEGACY_TYPE_NAMES[t]!r}")
        t = _LEGACY_TYPE_NAMES[t]
    if t == "dynamic" and family is not None and family.dynamic_alpha and rope.get("alpha"):
        notes.append(
            f"{family.name}: rope_type 'dynamic' with alpha is the static NTK-alpha base "
            "(ntk_alpha), as its rotary module computes"
        )
        t = "ntk_alpha"
    if t not in ROPE_SCALINGS:
        raise ValueError(
            f"unknown rope_type {t!r}; refimpl knows: {', '.join(sorted(ROPE_SCALINGS))}"
        )
    return t


def _null_base(raw: dict) -> str | None:
    """The key that writes the base as null (top level or inside a rope dict), or None."""
    if "rope_theta" in raw and raw["rope_theta"] is None:
        return "rope_theta"
    for key in ("rope_parameters", "rope_scaling"):
        block = raw.get(key)
        if not isinstance(block, dict):
            continue
        if "rope_theta" in block and block["rope_theta"] is None:
            return f"{key}.rope_theta"
        for sub, inner in block.items():
            if isinstance(inner, dict) and "rope_theta" in inner and inner["rope_theta"] is None:
                return f"{key}.{sub}.rope_theta"
    return None


def _read_base(ctx: dict, rope: dict, notes: list) -> float:
    """The base: ``rope_theta`` wherever it is written once (a nested per-layer dict's own
    value, else the top-level one), ``rotary_emb_base``, a family rule, or the config class's
    ``default_theta``."""
    cfg, family, nested = ctx["cfg"], ctx["family"], None not in ctx["ropes"]
    if family is not None and family.base_from == "gptj":
        notes.append(f"{family.name}: base 10000 (fixed in the model code)")
        return DEFAULT_BASE
    null = _null_base(cfg.raw)
    if null is not None:
        raise ValueError(
            f"config key {null} is null: transformers computes the frequencies from the base "
            "and cannot run a null one; give a number (OLMo hybrid, whose null base means "
            "no RoPE, is read by its record)"
        )
    top = [] if nested else [("rope_theta", cfg.given("rope_theta"))]
    base = _one_value(
        [
            ("rope_parameters.rope_theta", rope.get("rope_theta")),
            *top,
            ("rotary_emb_base", cfg.given("rotary_emb_base")),
        ],
        "the base (rope_theta)",
    )
    if base is None and nested:
        base = cfg.given("rope_theta")
    if family is not None and family.base_from == "rope_ratio":
        ratio = rules.config_real(cfg, "rope_ratio", 1.0)
        return check_base((DEFAULT_BASE if base is None else base) * ratio, "base")
    if base is None and family is not None and "rope_theta" in family.defaults:
        base = cfg.get("rope_theta")  # the class default, noted by the view
    if base is None:
        if ctx["model_type"] is not None:
            raise ValueError(
                f"config has no rope_theta and model_type {ctx['model_type']!r} is not in "
                "refimpl's family table: if it rotates, transformers would take its config "
                "class's default_theta, which refimpl does not know (write rope_theta); if its "
                "positions are learned, ALiBi or relative buckets, it has no RoPE to read "
                f"(ALiBi and T5 buckets: refimpl.bias); {fam.TOWER_HINT}"
            )
        notes.append("no rope_theta: base 10000.0 (transformers' default)")
        return DEFAULT_BASE
    return check_base(base, "config key rope_theta")


def _read_partial(cfg: rules.ConfigView, rope: dict):
    partial = _one_value(
        [
            ("rope_parameters.partial_rotary_factor", rope.get("partial_rotary_factor")),
            ("partial_rotary_factor", cfg.given("partial_rotary_factor")),
            ("rotary_pct", cfg.given("rotary_pct")),
        ],
        "partial_rotary_factor",
    )
    if partial is None and "partial_rotary_factor" in cfg.defaults:
        partial = cfg.get("partial_rotary_factor")  # the class default, noted by the view
    if partial is None:
        return None
    partial = check_real(partial, "config key partial_rotary_factor")
    if not 0.0 < partial <= 1.0:
        raise ValueError(f"config key partial_rotary_factor must be in (0, 1], got {partial}")
    return partial


def _read_widths(ctx, rope, method, plan: LayerPlan, rope_type, notes) -> tuple:
    """``(widths, partial as a method parameter or None)``."""
    cfg, family = ctx["cfg"], ctx["family"]
    partial = _read_partial(cfg, rope)
    if "partial_rotary_factor" in method.keys.values():  # proportional: pairs span the head
        d = plan.head_dim or rules.rotary_widths(None, cfg, None, notes).head_dim
        return rules.Widths(d, d, 0), partial
    if family is not None and not family.honours_partial and partial not in (None, 1.0):
        if rope_type != "default":
            raise ValueError(
                f"{family.name} with partial_rotary_factor={partial} and rope_type "
                f"{rope_type!r}: transformers computes frequencies for int(head_dim * "
                f"{partial}) features but its rotate_half turns the whole head, so it cannot "
                "run this config; remove partial_rotary_factor or use a model type that "
                "rotates a slice"
            )
        notes.append(
            f"partial_rotary_factor {partial} is ignored: {family.name}'s default RoPE "
            "rotates the whole head (as transformers does)"
        )
        partial = None
    return rules.rotary_widths(family, cfg, partial, notes, head_dim=plan.head_dim), None


# transformers reads these with `or`, so 0 silently becomes the default
_OR_DEFAULTS = {"beta_fast": 32.0, "beta_slow": 1.0}


def _param_value(name: str, key: str, value):
    if name in ("short_factor", "long_factor"):
        return value
    if name in _OR_DEFAULTS and value == 0 and not isinstance(value, bool):
        raise ValueError(
            f"config key {key}=0 is undefined for the method (a rotation count) and silently "
            f"replaced by {_OR_DEFAULTS[name]:g} in transformers; write {_OR_DEFAULTS[name]:g} "
            "(or the value you mean) explicitly"
        )
    if name == "truncate":
        return check_flag(value, f"config key {key}")
    if name in ("original_max_position", "max_position"):
        return check_int(
            value, f"config key {key}", minimum=1, maximum=MAX_POSITION, integral_float=True
        )
    return check_real(value, f"config key {key}")


def _read_params(method, rope, cfg, max_pos, partial, notes) -> dict:
    """The method's parameters from its record's config keys (no dim, base, seq_len)."""
    raw = {k: rope[k] for k in method.keys if rope.get(k) is not None}
    if "original_max_position" in method.keys.values():
        orig = _one_value(
            [
                (
                    "rope_scaling.original_max_position_embeddings",
                    raw.get("original_max_position_embeddings"),
                ),
                (
                    "original_max_position_embeddings",
                    cfg.given("original_max_position_embeddings"),
                ),
            ],
            "original_max_position_embeddings",
        )
        if orig is not None:
            raw["original_max_position_embeddings"] = orig
    params = {method.keys[k]: _param_value(method.keys[k], k, v) for k, v in raw.items()}
    if partial is not None:
        params["partial_rotary_factor"] = partial
    if "max_position" in method.parameters and max_pos is not None:
        params["max_position"] = max_pos
    missing = [p for p in method.required if p not in params]
    if missing:
        back = {v: k for k, v in method.keys.items()}
        keys = [
            back.get(p, "max_position_embeddings" if p == "max_position" else p) for p in missing
        ]
        hint = ""
        if "original_max_position_embeddings" in keys:
            hint = (
                " (transformers 5.x would silently use max_position_embeddings as the "
                "original context)"
            )
        raise ValueError(f"rope_type {method.name!r} needs config keys {keys}{hint}")
    for name, default in method.defaults.items():
        if name not in params and name != "partial_rotary_factor":
            notes.append(f"{method.name}: no {name}: {default!r} (the method's default)")
    _ratio_notes(method, params, max_pos, notes)
    return params


def _ratio_notes(method, params: dict, max_pos, notes: list) -> None:
    """Notes on choices transformers makes that a reader may not expect."""
    factor, orig = params.get("factor"), params.get("original_max_position")
    if factor is not None and orig is not None and max_pos is not None:
        if max_pos / orig not in (1.0, factor):
            notes.append(
                f"factor {factor:g} differs from max_position_embeddings / original = "
                f"{max_pos / orig:g}; the explicit factor is used (as transformers 5.x does)"
            )
            if "short_factor" in params and "attention_factor" not in params:
                notes.append(
                    "transformers 4.x (to 4.57) replaced a LongRoPE factor by "
                    "max_position_embeddings / original when original_max_position_embeddings "
                    "is at the top level: its attention factor differs, not its frequencies"
                )
    if "mscale" in method.parameters and "attention_factor" not in params:
        m, m_all = params.get("mscale"), params.get("mscale_all_dim")
        if (m is None) != (m_all is None) or (m is not None and not (m and m_all)):
            notes.append(
                "mscale/mscale_all_dim are used only when both are non-zero: "
                "attention factor 0.1 ln(factor) + 1"
            )


def _read_mrope(rope: dict, family, rotary_dim: int, legacy: bool, notes: list):
    """``(mrope_section, mrope_layout)`` or ``(None, None)``."""
    section = rope.get("mrope_section")
    fam_layout = family.mrope_layout if family is not None else None
    default = family.mrope_section if family is not None else None
    if section is None and default is None:
        if legacy:
            raise ValueError("legacy rope type 'mrope' needs config key mrope_section")
        if "mrope_interleaved" in rope:
            notes.append("mrope_interleaved without mrope_section is ignored")
        return None, None
    key = "config key mrope_section"
    if section is None:  # the model code falls back on its own sections, as transformers does
        section = default
        notes.append(f"no mrope_section: {list(section)} ({family.name}'s default)")
        key = f"mrope_section (not in the config; {family.name}'s default)"
    section = _mrope_section(section, key)
    flag = rope.get("mrope_interleaved")
    if flag is not None:
        flag = check_flag(flag, "config key mrope_interleaved")
    layout = "interleaved" if flag else "blocked"
    if fam_layout is not None:
        if flag is not None and layout != fam_layout:
            notes.append(
                f"mrope_interleaved={str(flag).lower()} is ignored: {family.name}'s code lays "
                f"the sections out {fam_layout}"
            )
        layout = fam_layout
    pairs = rotary_dim // 2
    if sum(section) != pairs and layout == "interleaved":
        section = _interleaved_section(section, pairs, key, notes)
    if sum(section) != pairs:
        raise ValueError(f"{key} {list(section)} must sum to the rotary pairs {pairs}")
    return section, layout


def _interleaved_section(section: tuple, pairs: int, key: str, notes: list) -> tuple:
    """Interleaved sections that do not sum to the rotated pairs, as transformers lays them
    out (Qwen3-VL's ``apply_interleaved_mrope`` and the ``recomposition_frequencies`` of the
    models that repeat it): pair ``j`` follows h where ``j % 3 == 1`` and ``j < 3 s_h``, w where
    ``j % 3 == 2`` and ``j < 3 s_w`` (both cut at the last pair), t every other pair; ``s_t``
    is never read. The same layout written with sections that sum to the pairs."""
    j = range(pairs)
    s_h = sum(1 for i in j if i % 3 == 1 and i < 3 * section[1])  # [eq:mrope-interleaved]
    s_w = sum(1 for i in j if i % 3 == 2 and i < 3 * section[2])
    out = (pairs - s_h - s_w, s_h, s_w)
    notes.append(
        f"{key} {list(section)} sums to {sum(section)}, not the {pairs} rotated pairs: the "
        "interleaved layout gives h the pairs j % 3 == 1 below 3 s_h, w the pairs j % 3 == 2 "
        f"below 3 s_w and t all others (s_t is not read), which is the section {list(out)}"
    )
    return out


def _unused_key_notes(rope: dict, method, notes: list) -> None:
    """Keys of the rope dict that nothing reads: transformers ignores them (with a warning),
    so they are notes, not errors."""
    known = set(method.keys) | _COMMON_KEYS | _MROPE_KEYS | {"llama_4_scaling_beta"}
    if method.name == "ntk_alpha":
        known.add("rope_type")
    for key in sorted(set(rope) - known):
        notes.append(
            f"rope parameter {key}={rope[key]!r} is not used by rope_type {method.name!r} "
            "(transformers ignores it)"
        )


# --------------------------------------------------------------------------- one layer


def _layer_spec(ctx: dict, plan: LayerPlan, pairing, seq_len) -> RopeSpec:
    """The spec of one layer (``ctx`` holds the config, family, rope dicts and notes)."""
    cfg, family = ctx["cfg"], ctx["family"]
    rope = _layer_rope(ctx["ropes"], plan)
    notes: list[str] = []  # this layer's own; the view adds the defaults it uses to ctx's
    if None not in ctx["ropes"]:
        notes.append(f"rope_parameters of layer type {plan.rope_key!r}")
    if family is not None and family.layers == "deepseek_v4":
        notes.append(
            "deepseek_v4 also rotates the attention output back by the query's position "
            "(apply(..., inverse=True))"
        )
    if family is not None and family.base_from == "gptj" and rope:
        notes.append(
            f"rope parameters {rope} are ignored: {family.name}'s code builds fixed tables "
            "(base 10000) and reads none of them"
        )
        rope = {}
    legacy = rope.get("rope_type", rope.get("type")) == "mrope"
    rope_type = _read_rope_type(rope, family, notes)
    method = ROPE_SCALINGS[rope_type]
    base = _read_base(ctx, rope, notes)
    widths, partial = _read_widths(ctx, rope, method, plan, rope_type, notes)
    params = _read_params(method, rope, cfg, ctx["max_pos"], partial, notes)
    _unused_key_notes(rope, method, notes)
    section, layout = _read_mrope(rope, family, widths.rotary_dim, legacy, notes)
    if pairing is None:
        pairing, order = rules.pairing_and_order(family, cfg, notes)
    else:
        order = "same"
    call = {"dim": widths.rotary_dim, "base": base, **params}
    if "seq_len" in method.parameters:
        call["seq_len"] = seq_len
    try:
        scaled = method(**call)
    except (ValueError, TypeError) as exc:
        raise type(exc)(f"rope parameters of rope_type {rope_type!r}: {exc}") from None
    return RopeSpec(
        dim=widths.head_dim,
        rotary_dim=widths.rotary_dim,
        base=base,
        rope_type=rope_type,
        inv_freq=scaled.inv_freq,
        attention_scaling=float(scaled.attention_scaling),
        pairing=pairing,
        params=params,
        seq_len=seq_len,
        max_position=ctx["max_pos"],
        notes=tuple(dict.fromkeys([*ctx["notes"], *notes])),
        source=ctx["source"],
        output_order=order,
        rotary_offset=widths.rotary_offset,
        mrope_section=section,
        mrope_layout=layout,
    )


def _submodule_head(cfg, sub: fam.Submodule, notes: list):
    """The submodule's head width: ``head_dim_key``, or the nested key its config class copies
    over it (``head_dim_override``)."""
    if sub.head_dim_override is not None:
        outer, inner = sub.head_dim_override.split(".")
        block = cfg.get(outer)
        if block is not None and not isinstance(block, dict):
            raise TypeError(f"config key {outer} must be an object, got {type(block).__name__}")
        if block and block.get(inner) is not None:
            notes.append(
                f"{sub.name} head width from {sub.head_dim_override} (its config class copies "
                f"it over {sub.head_dim_key})"
            )
            return rules.config_int(block, inner, maximum=rules.MAX_DIM)
    return rules.config_int(cfg, sub.head_dim_key, maximum=rules.MAX_DIM)


def _submodule_spec(ctx: dict, sub: fam.Submodule, layer: RopeSpec) -> RopeSpec:
    """The RoPE a submodule (an indexer) applies with the layer's tables."""
    cfg, name = ctx["cfg"], ctx["family"].name
    missing = [k for k in sub.needs if cfg.get(k) is None]
    if missing:
        raise ValueError(
            f"{name}: transformers 5.24 builds the {sub.name} ({sub.builder}) of every layer it "
            f"runs on from config keys {list(sub.needs)}, and {missing} are null or missing "
            "here, so its attention cannot be built on this config; give them"
        )
    notes: list[str] = []
    head = _submodule_head(cfg, sub, notes)
    rotary = (
        layer.rotary_dim
        if sub.rotary_key is None
        else rules.config_int(cfg, sub.rotary_key, maximum=rules.MAX_DIM)
    )
    what = (
        f"config key {sub.rotary_key}={rotary}"
        if sub.rotary_key
        else f"the layer's rotated width {rotary}"
    )
    if head is None or rotary is None:
        raise ValueError(
            f"{name}'s {sub.name} needs config keys {sub.head_dim_key} and "
            f"{sub.rotary_key} (its head width and rotated width)"
        )
    if rotary != layer.rotary_dim:
        raise ValueError(
            f"{name}'s {sub.name} rotates {sub.rotary_key}={rotary} features with "
            f"the layer's tables, which cover {layer.rotary_dim}; the config is inconsistent"
        )
    if rotary > head:
        raise ValueError(
            f"{what} exceeds {sub.head_dim_key}={head}: the "
            f"{sub.name} cannot rotate more features than its heads have"
        )
    offset = head - rotary if sub.rotary_slice == "trailing" else 0
    where = "trailing" if offset else "leading"
    text = (
        f"{sub.name}: {sub.pairing} pairs"
        + (", half-order output" if sub.output_order == "half" else "")
        + f" on the {where} {rotary} of {head} features, with the layer's tables; {sub.note}"
    )
    return dataclasses.replace(
        layer,
        dim=head,
        pairing=sub.pairing,
        output_order=sub.output_order,
        rotary_offset=offset,
        notes=(*layer.notes, *notes, text),
    )


def _layer_rope(ropes: dict, plan: LayerPlan) -> dict:
    if None in ropes:
        return ropes[None]
    if plan.rope_key not in ropes:
        raise ValueError(
            f"rope_parameters is nested per layer type {sorted(ropes)} but has no entry for "
            f"layer type {plan.rope_key!r}"
        )
    return ropes[plan.rope_key]


def _context(config, need_layers: bool = True) -> dict:
    """Load a config and read what every layer shares, in one pass through its family
    record: which record (and why), class defaults, rope dicts, layer plan, notes."""
    raw, source = load_config(config)
    notes: list[str] = []
    reading = fam.resolve(raw, notes)
    cfg = reading.cfg
    max_pos = cfg.get("max_position_embeddings", cfg.get("n_positions"))
    if max_pos is not None:
        max_pos = check_int(
            max_pos,
            "config key max_position_embeddings",
            minimum=1,
            maximum=MAX_POSITION,
            integral_float=True,
        )
    ropes = rules.rope_dicts(reading.family, cfg, notes)
    plan = rules.layer_plan(reading.family, cfg, notes, need_layers=need_layers)
    return {
        "cfg": cfg,
        "source": source,
        "family": reading.family,
        "model_type": reading.model_type,
        "reason": reading.reason,
        "max_pos": max_pos,
        "ropes": ropes,
        "plan": plan,
        "notes": notes,
        "dca": _dual_chunk(cfg, notes),
    }


def _dual_chunk(cfg: rules.ConfigView, notes: list) -> DualChunkAttention | None:
    value = cfg.given("dual_chunk_attention_config")
    if value is None:
        return None
    try:
        dca = DualChunkAttention.from_config(value)
    except (ValueError, TypeError) as exc:
        raise type(exc)(f"config key dual_chunk_attention_config: {exc}") from None
    notes.append(
        f"dual_chunk_attention_config (chunk_size {dca.chunk_size}, local_size "
        f"{dca.local_size}): transformers ignores it (ordinary RoPE attention); vLLM and "
        "SGLang run Dual Chunk Attention with it (refimpl.remap.dual_chunk_attention_scores)"
    )
    return dca


def _memo(ctx: dict, plan: LayerPlan) -> tuple:
    """Layers with the same rope dict and head width share one spec object."""
    return (None if None in ctx["ropes"] else plan.rope_key, plan.head_dim)


def _check_seq_len(seq_len):
    if seq_len is None:
        return None
    return check_positive_int(seq_len, "seq_len", maximum=MAX_POSITION)


def _indexer(ctx: dict, plan: LayerPlan, spec: RopeSpec | None, specs: dict, seq_len):
    """The indexer spec of one layer (None where the layer has none)."""
    if not plan.submodules:
        return None
    sub = next(s for s in ctx["family"].submodules if s.name in plan.submodules)
    layer = spec
    if sub.rope_key is not None and (sub.rope_key, plan.head_dim) != _memo(ctx, plan):
        memo = (sub.rope_key, plan.head_dim)
        if memo not in specs:
            other = dataclasses.replace(plan, rope_key=sub.rope_key)
            specs[memo] = _layer_spec(ctx, other, None, seq_len)
        layer = specs[memo]
    if layer is None:
        return None
    key = ("indexer", _memo(ctx, plan))
    if key not in specs:
        specs[key] = _submodule_spec(ctx, sub, layer)
    return specs[key]


def rope_schedule(config, *, seq_len: int | None = None) -> RopeSchedule:
    r"""Every layer's RoPE, query scaling and indexer RoPE, as the model's code builds them.

    Parameters
    ----------
    config : dict, str, os.PathLike or transformers config
        A ``config.json`` as a dict or a path, or an object with ``to_dict()``.
    seq_len : int, optional
        Sequence length for the methods that depend on it (dynamic, longrope).

    Returns
    -------
    RopeSchedule
        One :class:`LayerRope` per layer (``num_hidden_layers``, the config class's default
        when the file omits it; one entry standing for all layers when the count is unknown
        and every layer is alike), the family that read the config and why, and the config's
        Dual Chunk Attention settings.

    Notes
    -----
    Layer rules (:mod:`refimpl.families`): Gemma 2/3/4 sliding and full layers (Gemma 3's
    ``rope_local_base_freq``, Gemma 4's wider full-attention heads and proportional RoPE),
    Llama 4 and SmolLM3 ``no_rope_layers`` / ``no_rope_layer_interval``, Cohere2 and EXAONE 4
    full-attention layers without RoPE, OLMo 3's scaled full-attention layers, the
    linear-attention layers of Qwen3-Next and Qwen3.5, LFM2's conv layers, Zamba2's shared
    attention, Kimi Linear's NoPE MLA, the sparse-attention indexers of DeepSeek-V3.2, GLM-5,
    HY V4 (VL), Dots3 Note, MiniMax-M3 VL and Qwen4-Exp, Dots3's rope per layer type and
    DeepSeek-V4's ``main``/``compress`` ropes. Book page "Real configurations".

    Examples
    --------
    >>> cfg = {"model_type": "gemma3_text", "head_dim": 16, "num_hidden_layers": 6,
    ...        "rope_theta": 1e6, "rope_local_base_freq": 1e4}
    >>> [layer.spec.base for layer in rope_schedule(cfg)]
    [10000.0, 10000.0, 10000.0, 10000.0, 10000.0, 1000000.0]
    """
    seq_len = _check_seq_len(seq_len)
    ctx = _context(config)
    cfg, family = ctx["cfg"], ctx["family"]
    specs: dict = {}
    layers = []
    for plan in ctx["plan"]:
        spec = None
        rope = _layer_rope(ctx["ropes"], plan) if plan.uses_rope or None in ctx["ropes"] else {}
        if plan.uses_rope:
            memo = _memo(ctx, plan)
            if memo not in specs:
                specs[memo] = _layer_spec(ctx, plan, None, seq_len)
            spec = specs[memo]
        query = rules.query_scaling(family, cfg, rope, plan, ctx["notes"])
        indexer = _indexer(ctx, plan, spec, specs, seq_len)
        layers.append(LayerRope(plan.index, plan.layer_type, spec, query, indexer))
    return RopeSchedule(
        tuple(layers),
        tuple(dict.fromkeys(ctx["notes"])),
        ctx["source"],
        ctx["model_type"],
        None if family is None else family.name,
        ctx["reason"],
        ctx["dca"],
    )


def rope_from_config(
    config,
    seq_len: int | None = None,
    *,
    layer_type: str | None = None,
    pairing: str | None = None,
) -> RopeSpec:
    r"""The rotary embedding of one layer type of a model configuration.

    Parameters
    ----------
    config : dict, str, os.PathLike or transformers config
        A ``config.json`` as a dict or a path, or an object with ``to_dict()``.
    seq_len : int, optional
        Sequence length (max position + 1) for the methods that depend on it: ``dynamic`` and
        ``longrope``. ``None``: the frequencies the module has at initialisation (unscaled
        dynamic, short LongRoPE factors).
    layer_type : str, optional
        Which layers (a ``layer_types`` entry, a nested ``rope_parameters`` key). Needed when
        the layers' ropes differ; :func:`rope_schedule` gives them all.
    pairing : {"half", "interleaved"}, optional
        Layout of the rotated features; None: the config's flag or the family's default
        (:mod:`refimpl.families`).

    Returns
    -------
    RopeSpec

    Notes
    -----
    See the module docstring for the refusal policy. Book page "Real configurations".

    Examples
    --------
    >>> spec = rope_from_config({"hidden_size": 64, "num_attention_heads": 4,
    ...                          "rope_theta": 10000.0, "max_position_embeddings": 64})
    >>> spec.rope_type, spec.dim, spec.rotary_dim, spec.inv_freq[:2]
    ('default', 16, 16, array([1.        , 0.31622777]))
    >>> rope_from_config({"model_type": "cohere", "head_dim": 8}).pairing
    'interleaved'
    """
    seq_len = _check_seq_len(seq_len)
    if pairing is not None:
        check_pairing(pairing)
    ctx = _context(config, need_layers=False)
    plans = ctx["plan"]
    if layer_type is not None:
        if not isinstance(layer_type, str):
            raise TypeError(f"layer_type must be a string, got {layer_type!r}")
        plans = [p for p in plans if layer_type in (p.layer_type, p.rope_key)]
        if not plans and layer_type in ctx["ropes"]:
            plans = [LayerPlan(0, layer_type, layer_type)]
        if not plans:
            known = sorted({p.layer_type for p in ctx["plan"]} | set(ctx["ropes"]) - {None})
            raise ValueError(f"layer_type must be one of {known}, got {layer_type!r}")
    elif None not in ctx["ropes"] and all(p.layer_type == "all" for p in plans):
        if len({json.dumps(v, sort_keys=True) for v in ctx["ropes"].values()}) > 1:
            raise ValueError(
                f"rope_parameters is nested per layer type {sorted(ctx['ropes'])}; pass "
                "layer_type=... (or use rope_schedule)"
            )
        plans = [LayerPlan(0, next(iter(ctx["ropes"])), next(iter(ctx["ropes"])))]
    roped = [p for p in plans if p.uses_rope]
    if not roped:
        raise ValueError(
            f"layer type {layer_type!r} has no RoPE (NoPE layers); rope_schedule lists them"
        )
    specs = {}
    for p in roped:
        memo = _memo(ctx, p)
        if memo not in specs:
            specs[memo] = _layer_spec(ctx, p, pairing, seq_len)
    distinct = {s.key(): s for s in specs.values()}
    if len(distinct) > 1:
        types = sorted({p.layer_type for p in roped})
        raise ValueError(
            f"the layers' ropes differ (layer types {types}); pass layer_type=... (or use "
            "rope_schedule)"
        )
    return next(iter(specs.values()))
