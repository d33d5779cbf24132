"""Model families: what a config's ``model_type`` says about its rotary embedding.

A ``config.json`` does not say everything about a model's RoPE: where the rotated width comes
from, how features are paired, which layers rotate at all, what a key the file omits defaults
to and how queries are rescaled by position are written in each model's code. This module
holds those facts as declarative records, one :class:`Family` per model family, each checked
against the modeling and configuration files of the pinned transformers (5.24,
``transformers/models/<name>/``) or, for families that ship their own code, against that code
(named in the record). :mod:`refimpl.config` reads a config in one pass through its record,
with the machinery of :mod:`refimpl.family_rules` that the record's fields name:

1. :func:`resolve` finds the decoder's config (a wrapper's ``text_config``, through
   :data:`WRAPPERS`), its record, and why; an unknown ``model_type`` is read as one RoPE for
   every layer only when the config carries none of the :data:`MARKERS` of other structure,
   and the types of :data:`UNSUPPORTED` are refused with what they do;
2. a :class:`~refimpl.family_rules.ConfigView` reads keys through the record's ``defaults``
   (its config class's defaults), noting each default used, as a diff-style released file
   relies on them;
3. :func:`~refimpl.family_rules.rope_dicts` turns the rope fields into one rope dict per layer
   kind (``rope_form``: the 4.x forms of Gemma 3, OLMo 3 and DeepSeek-V4 as their config
   classes convert them);
4. :func:`~refimpl.family_rules.layer_plan` lists every layer by the record's rule
   (``layers``);
5. per layer, :func:`~refimpl.family_rules.rotary_widths` (``width``),
   :func:`~refimpl.family_rules.pairing_and_order`,
   :func:`~refimpl.family_rules.query_scaling` and each :class:`Submodule` (an MLA indexer's
   own RoPE).

An explicit config flag (``rope_interleave``, ``partial_rotary_factor``, ``rotary_dim``,
``layer_types``, ``no_rope_layers``) wins over the family default, as it does in the model code.
Adding a family is one record (and its tests).
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Mapping
from types import MappingProxyType

from .family_rules import (  # noqa: F401 (the rules' names, importable from here too)
    LAYER_RULES,
    PLAIN_LAYER_TYPES,
    QUERY_RULES,
    QUERY_SCALINGS,
    ROPE_FORMS,
    WIDTH_SOURCES,
    ConfigView,
    LayerPlan,
    QueryScaling,
    ReadOnlyDict,
    Widths,
    layer_plan,
    query_scaling,
    rope_dicts,
    rotary_widths,
)

__all__ = [
    "FAMILIES",
    "MARKERS",
    "NO_MODEL",
    "NO_ROPE",
    "TOWERS",
    "UNSUPPORTED",
    "WRAPPERS",
    "Family",
    "Need",
    "Reading",
    "Submodule",
    "family_for",
    "marker_of",
    "resolve",
]

# --------------------------------------------------------------------------- markers

# What tells a config of an unknown model type apart from "one RoPE on every layer". Each entry
# is a config key (exact, prefix or suffix) that some model type transformers 5.24 ships uses
# for per-layer or non-RoPE structure; a config that has one is refused naming the key.
MARKER_KEYS = (
    # per-layer RoPE and NoPE layers
    "no_rope_layers",
    "no_rope_layer_interval",
    "nope_layer_interval",
    "rope_local_base_freq",
    "local_rope_theta",
    "global_rope_theta",
    "layer_rope_theta",
    "compress_rope_theta",
    "rope_scaling_layers",
    "per_layer_config",
    "global_head_dim",
    "use_mem_rope",
    # widths and pairings the generic reading would not see
    "qk_rope_head_dim",
    "qk_nope_head_dim",
    "kv_lora_rank",
    "rope_interleave",
    "rotary_dim",
    # linear-attention, recurrent, conv and SSM hybrids
    "full_attention_interval",
    "full_attn_idxs",
    "layers_block_type",
    "block_types",
    "attn_layer_indices",
    "attn_layer_period",
    "attn_layer_offset",
    "lru_width",
    "state_size",
    "conv_kernel",
    "use_conv_bias",
    "short_conv_kernel_size",
    "kv_channels",
    "cross_attention_layers",
    # not RoPE at all
    "position_embedding_type",
    "alibi",
    "use_alibi",
    # vision and audio encoders (2-D, axial or time RoPE: refimpl.multiaxis, refimpl.audio)
    "patch_size",
    "image_size",
    "num_channels",
    "num_mel_bins",
    "sampling_rate",
)
# what serves a marked config, where refimpl has an API for it
MARKER_APIS = {
    "patch_size": "refimpl.multiaxis.apply_rope_2d and the vision variants of refimpl.multiaxis",
    "image_size": "refimpl.multiaxis.apply_rope_2d and the vision variants of refimpl.multiaxis",
    "num_channels": "refimpl.multiaxis.apply_rope_2d and the vision variants of refimpl.multiaxis",
    "num_mel_bins": "refimpl.audio (frame_times, apply_rope_time_frequency)",
    "sampling_rate": "refimpl.audio (frame_times, apply_rope_time_frequency)",
}
MARKER_PREFIXES = (
    "index_",
    "mrope_",
    "xdrope_",
    "linear_",
    "mamba_",
    "ssm_",
    "conv_",
    "kda_",
    "time_step_",
    "hybrid_",
    "recurrent_",
)
MARKER_SUFFIXES = ("_pattern",)
MARKERS = MappingProxyType(
    {"keys": MARKER_KEYS, "prefixes": MARKER_PREFIXES, "suffixes": MARKER_SUFFIXES}
)
"""Config keys that mark per-layer or non-RoPE structure (``keys`` exact, ``prefixes``,
``suffixes``); besides them, ``layer_types`` values other than :data:`PLAIN_LAYER_TYPES`, a
rope dict per layer type, ``mrope_*`` or ``xdrope_*`` inside the rope dict and a
``text_config`` of a type refimpl does not know."""


def marker_of(cfg: Mapping) -> str | None:
    """The first sign of per-layer or non-RoPE structure in a config (a description naming
    the key), or None.

    Examples
    --------
    >>> marker_of({"hidden_size": 64, "num_attention_heads": 4})
    >>> marker_of({"layer_types": ["full_attention", "conv"]})
    "layer_types value 'conv'"
    >>> marker_of({"sliding_window_pattern": 6})
    'config key sliding_window_pattern'
    """
    for key in cfg:
        if not isinstance(key, str):
            continue
        if key in MARKER_KEYS or key.startswith(MARKER_PREFIXES) or key.endswith(MARKER_SUFFIXES):
            return f"config key {key}"
    types = cfg.get("layer_types")
    if isinstance(types, list):
        for t in types:
            if t not in PLAIN_LAYER_TYPES:
                return f"layer_types value {t!r}"
    for key in ("rope_parameters", "rope_scaling"):
        rope = cfg.get(key)
        if isinstance(rope, Mapping):
            if rope and all(isinstance(v, Mapping) for v in rope.values()):
                return f"config key {key} nested per layer type {sorted(rope)}"
            for inner in rope:
                if isinstance(inner, str) and inner.startswith(("mrope_", "xdrope_")):
                    return f"config key {key}.{inner}"
            if rope.get("rope_type", rope.get("type")) == "mrope":
                return f"config key {key}.rope_type 'mrope'"
    return None


# --------------------------------------------------------------------------- records


@dataclasses.dataclass(frozen=True)
class Submodule:
    """A module of a layer, beside its attention, that rotates with the layer's tables.

    The DeepSeek Sparse Attention indexer is one: it takes the attention's cos and sin and
    rotates ``rotary_key`` features of its own ``head_dim_key``-wide heads, with its own
    pairing and slice.

    Attributes
    ----------
    name : str
        ``"indexer"``: the :class:`LayerPlan`/``LayerRope`` field it fills.
    head_dim_key : str
        Config key of the submodule's head width.
    rotary_key : str or None
        Config key of its rotated width (None: the layer's rotated width, the width of the
        cos/sin tables it is handed, as MiniMax-M3's, Qwen4-Exp's and Dots3's indexers take it).
    pairing : {"half", "interleaved"}
    output_order : {"same", "half"}
    rotary_slice : {"leading", "trailing"}
    layers_key : str or None
        Config key of a per-layer list saying where the submodule runs.
    runs_on : tuple of str
        The values of that list where it runs (it runs on every layer without the list).
    layer_types : tuple of str or None
        Layer types whose layers hold the submodule (None: every layer).
    rope_key : str or None
        Entry of a nested ``rope_parameters`` whose tables it uses (None: the layer's).
    ignored_flag : str or None
        A config key about the submodule's pairing that transformers does not read (noted
        when it disagrees).
    head_dim_override : str or None
        ``"object.key"``: a nested config key that, when the file has it, replaces
        ``head_dim_key`` (the config class copies it over, as MiniMax-M3's legacy
        ``sparse_attention_config.sparse_index_dim``).
    needs : tuple of str
        Config keys the model's code reads to build the submodule; a config where one is
        missing or null is refused where the submodule runs (the model's attention cannot be
        built on it).
    builder : str
        The class that builds the submodule (named in that refusal).
    note : str
        What peers do differently (with sources); shown by ``describe``.
    """

    name: str
    head_dim_key: str
    rotary_key: str | None
    pairing: str = "half"
    output_order: str = "same"
    rotary_slice: str = "leading"
    layers_key: str | None = None
    runs_on: tuple = ()
    layer_types: tuple | None = None
    rope_key: str | None = None
    ignored_flag: str | None = None
    head_dim_override: str | None = None
    needs: tuple = ()
    builder: str = ""
    note: str = ""


@dataclasses.dataclass(frozen=True)
class Need:
    """Config keys the model's code reads to build its layers, where the config class may leave
    them null or not define them at all: a config without them cannot be built by transformers,
    so refimpl refuses it, naming the keys (a schedule of a model that does not exist would be a
    guess).

    Attributes
    ----------
    keys : tuple of str
        The keys (``"outer.inner"`` for one inside a nested object); the config is refused when
        one is null or missing (after the record's ``defaults``).
    builder : str
        The class whose construction reads them.
    reads : str
        What that code does with them (the failure a null value gives).
    first_layer_key : str or None
        A config key holding the first layer that builds with them (DeepSeek-style
        ``first_k_dense_replace``): the keys are needed only when it is below
        ``num_hidden_layers`` (None: every layer needs them).

    Examples
    --------
    >>> need = Need(("head_dim",), "FooAttention", "self.head_dim**-0.5")
    >>> need.missing({"head_dim": None}), need.missing({"head_dim": 64})
    (['head_dim'], [])
    """

    keys: tuple
    builder: str
    reads: str
    first_layer_key: str | None = None

    def missing(self, cfg: Mapping, defaults: Mapping = MappingProxyType({})) -> list[str]:
        """The keys that are null or missing in ``cfg`` (read through ``defaults``), or ``[]``
        where the model's layers do not read them."""
        if self.first_layer_key is not None:
            first = cfg.get(self.first_layer_key, defaults.get(self.first_layer_key))
            layers = cfg.get("num_hidden_layers", defaults.get("num_hidden_layers"))
            if isinstance(first, int) and isinstance(layers, int) and first >= layers:
                return []
        out = []
        for key in self.keys:
            block, name = cfg, key
            if "." in key:
                outer, name = key.split(".", 1)
                block = cfg.get(outer, defaults.get(outer))
                if block is not None and not isinstance(block, Mapping):
                    raise TypeError(
                        f"config key {outer} must be an object, got {type(block).__name__}"
                    )
                block = block or {}
            value = block.get(name, defaults.get(key) if block is cfg else None)
            if value is None:
                out.append(key)
        return out


@dataclasses.dataclass(frozen=True, eq=False)
class Family:
    """What one model family's code does with RoPE beyond the rope parameters.

    Attributes
    ----------
    name : str
        The family (its transformers ``model_type``).
    model_types : tuple of str
        Every ``model_type`` (and GGUF ``general.architecture`` name) read as this family.
    config_class : str
        The transformers config class whose defaults ``defaults`` holds.
    defaults : mapping
        The config class's defaults for the keys RoPE reading uses (``rope_theta`` is its
        ``default_theta``); a key the config omits takes this value, with a note.
    width : str
        One of :data:`WIDTH_SOURCES`: where the rotated width comes from.
    pairing : {"half", "interleaved"}
        Pairing of the rotated features when no flag says otherwise.
    interleave_flag : str or None
        Config key that selects interleaved (true) or half (false) pairing; its default is in
        ``defaults``.
    flag_output_order : {"same", "half"}
        Output order of the rotated features when the flag selects interleaved pairing.
    output_order : {"same", "half"}
        Output order without a flag.
    rotary_slice : {"leading", "trailing"}
        Where the rotated slice sits in the head.
    layers : str
        One of :data:`LAYER_RULES`.
    rope_form : str
        One of :data:`ROPE_FORMS`: how the rope fields become one dict per layer kind.
    query : tuple of str
        Query rules (``"llama4_temperature"``, ``"llama_4_scaling_beta"``, ``"mla_mscale"``)
        the family's attention applies.
    mrope_layout : str or None
        Layout of M-RoPE sections (``"blocked"`` or ``"interleaved"``) for multimodal families.
    mrope_section : tuple of int or None
        Sections the model code uses when the config omits ``mrope_section``.
    honours_partial : bool
        Whether the family's code rotates ``int(head_dim * partial_rotary_factor)`` features
        (False: its default RoPE ignores the factor and its ``rotate_half`` turns whole heads).
    dynamic_alpha : bool
        ``rope_type: dynamic`` with a non-zero ``alpha`` is the static NTK-alpha base (HunYuan).
    base_from : str or None
        ``"gptj"``: the base is fixed at 10000 by the model code; ``"rope_ratio"``: ChatGLM's
        ``10000 * rope_ratio``; None: ``rope_theta``.
    submodules : tuple of Submodule
        Other modules of a layer that rotate (an MLA indexer).
    layer_count : tuple (str, int) or None
        ``(key, per_block)``: the config counts blocks of ``per_block`` attention layers in
        ``key`` (None: ``num_hidden_layers`` counts the layers).
    aliases : mapping
        The config class's ``attribute_map``: a name the reader uses -> the key the file
        writes it under (JetMoe's ``head_dim`` is ``kv_channels``).
    refuse_when : mapping
        Config flag -> what the model does when the flag is true that a schedule does not
        express (RoFormer's ``rotary_value``); a config with the flag true is refused.
    needs : tuple of Need
        Keys the model's code reads to build its layers and the config class may leave null
        (a config without them is refused: transformers cannot build the model from it).
    source : str
        The code the rules were checked against.
    """

    name: str
    model_types: tuple = ()
    config_class: str = ""
    defaults: Mapping = dataclasses.field(default_factory=dict)
    width: str = "head_dim"
    pairing: str = "half"
    interleave_flag: str | None = None
    flag_output_order: str = "same"
    output_order: str = "same"
    rotary_slice: str = "leading"
    layers: str = "uniform"
    rope_form: str = "flat"
    query: tuple = ()
    mrope_layout: str | None = None
    mrope_section: tuple | None = None
    honours_partial: bool = True
    dynamic_alpha: bool = False
    base_from: str | None = None
    submodules: tuple = ()
    layer_count: tuple | None = None
    aliases: Mapping = dataclasses.field(default_factory=dict)
    refuse_when: Mapping = dataclasses.field(default_factory=dict)
    needs: tuple = ()
    source: str = ""

    def __post_init__(self):
        if self.width not in WIDTH_SOURCES:
            raise ValueError(f"width must be one of {WIDTH_SOURCES}, got {self.width!r}")
        if self.layers not in LAYER_RULES:
            raise ValueError(f"layers must be one of {LAYER_RULES}, got {self.layers!r}")
        if self.rope_form not in ROPE_FORMS:
            raise ValueError(f"rope_form must be one of {ROPE_FORMS}, got {self.rope_form!r}")
        for rule in self.query:
            if rule not in QUERY_RULES:
                raise ValueError(f"query rules must be among {QUERY_RULES}, got {rule!r}")
        if self.interleave_flag is not None and self.interleave_flag not in self.defaults:
            raise ValueError(f"{self.name}: the default of {self.interleave_flag} is needed")
        object.__setattr__(self, "defaults", ReadOnlyDict(self.defaults))
        object.__setattr__(self, "aliases", ReadOnlyDict(self.aliases))

    def _removed(self, name: str, key: str):
        warnings.warn(
            f"Family.{name} is deprecated and will be removed in refimpl 0.3.0: use "
            f"Family.defaults[{key!r}] (the config class's default)",
            DeprecationWarning,
            stacklevel=3,
        )
        return self.defaults.get(key)

    @property
    def flag_default(self) -> bool:
        """Deprecated: ``defaults[interleave_flag]``."""
        key = self.interleave_flag or "rope_interleave"
        return bool(self._removed("flag_default", key))

    @property
    def partial_default(self) -> float | None:
        """Deprecated: ``defaults["partial_rotary_factor"]``."""
        return self._removed("partial_default", "partial_rotary_factor")

    @property
    def rope_head_default(self) -> int | None:
        """Deprecated: ``defaults["qk_rope_head_dim"]``."""
        return self._removed("rope_head_default", "qk_rope_head_dim")


def _tf(name: str) -> str:
    return f"transformers 5.24 models/{name}/modeling_{name}.py, configuration_{name}.py"


def _like(record: Family, name: str, model_types: tuple, config_class: str, defaults, **kw):
    """A record that differs from ``record`` in its names and config class defaults."""
    return dataclasses.replace(
        record,
        name=name,
        model_types=model_types,
        config_class=config_class,
        defaults=defaults,
        **kw,
    )


def _d(hidden, heads, layers, max_pos, theta, **extra) -> dict:
    """Config class defaults: hidden_size, num_attention_heads, num_hidden_layers,
    max_position_embeddings, rope_theta (``default_theta``), and others by name."""
    out = {
        "hidden_size": hidden,
        "num_attention_heads": heads,
        "num_hidden_layers": layers,
        "max_position_embeddings": max_pos,
        "rope_theta": theta,
    }
    out.update(extra)
    return out


def _need_head_dim(attention: str) -> Need:
    """``head_dim`` as attentions that take ``getattr(config, "head_dim", ...)`` read it: the
    config class defines it as None, so the fallback never applies."""
    return Need(
        ("head_dim",),
        attention,
        "getattr(config, 'head_dim', hidden_size // num_attention_heads) returns the class "
        "default None, and self.scaling = self.head_dim**-0.5 raises a TypeError",
    )


_LLAMA = Family(
    "llama",
    ("llama",),
    "LlamaConfig",
    _d(4096, 32, 32, 2048, 10000.0),
    honours_partial=False,
    source=_tf("llama") + " (rotate_half over whole heads; the default RoPE ignores "
    "partial_rotary_factor)",
)
_NEOX = Family(
    "gpt_neox",
    ("gpt_neox", "gptneox"),
    "GPTNeoXConfig",
    _d(6144, 64, 44, 2048, 10000.0, partial_rotary_factor=0.25),
    source=_tf("gpt_neox") + " (rotary_pct becomes partial_rotary_factor, default 0.25)",
)
_MLA = Family(
    "deepseek_v3",
    ("deepseek_v3", "kimi_k2"),
    "DeepseekV3Config",
    _d(7168, 128, 61, 4096, 10000.0, qk_rope_head_dim=64, rope_interleave=True),
    width="qk_rope_head_dim",
    interleave_flag="rope_interleave",
    flag_output_order="half",
    query=("mla_mscale",),
    source=_tf("deepseek_v3") + " (apply_rotary_pos_emb_interleave); kimi_k2 ships "
    "DeepseekV3 code and Kimi_K25Config maps its text type kimi_k2 to deepseek_v3",
)
_INDEXER_V32 = Submodule(
    "indexer",
    "index_head_dim",
    "qk_rope_head_dim",
    pairing="half",
    note=(
        "transformers 5.24 (DeepseekV32Indexer) rotates the leading qk_rope_head_dim features "
        "of each indexer head half-split (apply_rotary_pos_emb) with the attention's cos/sin; "
        "DeepSeek's reference inference/model.py rotated them interleaved, like the attention, "
        "until commit 8631a81 of deepseek-ai/DeepSeek-V3.2-Exp (2025-11: 'rope in indexer is "
        "not interleaved'); vLLM follows the fix since vllm-project/vllm PR 28968 and SGLang "
        "rotates the V3.2 indexer NeoX-style (is_neox_style, sgl-project/sglang PR 30342)"
    ),
)
_INDEXER_AXK2 = Submodule(
    "indexer",
    "index_head_dim",
    "qk_rope_head_dim",
    pairing="half",
    note=(
        "transformers 5.24 (AXK2Indexer) rotates the leading qk_rope_head_dim features of each "
        "indexer head half-split (apply_rotary_pos_emb) with the attention's cos/sin, unlike "
        "the attention's interleaved rope head"
    ),
)
_INDEXER_GLM = Submodule(
    "indexer",
    "index_head_dim",
    "qk_rope_head_dim",
    pairing="interleaved",
    output_order="half",
    layers_key="indexer_types",
    runs_on=("full",),
    ignored_flag="indexer_rope_interleave",
    note=(
        "transformers 5.24 (GlmMoeDsaIndexer) rotates the leading qk_rope_head_dim features "
        "of each indexer head with apply_rotary_pos_emb_interleave (adjacent pairs in, half "
        "order out) whatever the config key indexer_rope_interleave says (huggingface/"
        "transformers PR 46842), unlike DeepSeek-V3.2's half-split indexer; vLLM reads "
        "indexer_rope_interleave; layers whose indexer_types entry is 'shared' have no indexer "
        "and reuse the previous full layer's top-k"
    ),
)

# DeepSeek-V3.2's layout: the MLA rope head interleaved with half-order output on every layer,
# a DSA indexer with its own rope (the records built on it change the indexer and defaults).
_DSA_V32 = Family(
    "deepseek_v32",
    ("deepseek_v32",),
    "DeepseekV32Config",
    _d(7168, 128, 61, 163840, 1e4, qk_rope_head_dim=64, index_head_dim=128),
    width="qk_rope_head_dim",
    pairing="interleaved",
    output_order="half",
    layers="indexed",
    query=("mla_mscale",),
    submodules=(_INDEXER_V32,),
    source=_tf("deepseek_v32") + " (MLA rope head: apply_rotary_pos_emb_interleave, no "
    "rope_interleave flag; DSA indexer: DeepseekV32Indexer)",
)
_INDEXER_V4 = Submodule(
    "indexer",
    "index_head_dim",
    "qk_rope_head_dim",
    pairing="interleaved",
    rotary_slice="trailing",
    layer_types=("compressed_sparse_attention",),
    rope_key="compress",
    note=(
        "transformers 5.24 (DeepseekV4Indexer) rotates the trailing qk_rope_head_dim features "
        "of each indexer head (adjacent pairs, same order) with the 'compress' rope; the "
        "compressor's keys are rotated at their compressed positions, which this record does "
        "not tabulate"
    ),
)

_INDEXER_HYV4 = Submodule(
    "indexer",
    "index_head_dim",
    "qk_rope_head_dim",
    pairing="half",
    rotary_slice="trailing",
    layers_key="indexer_types",
    runs_on=("full",),
    note=(
        "transformers 5.24 (HYV4Indexer) rotates the trailing qk_rope_head_dim features of "
        "each indexer head half-split (apply_rotary_pos_emb) with the attention's cos/sin; "
        "layers whose indexer_types entry is 'shared' have no indexer and reuse the previous "
        "full layer's top-k"
    ),
)

_INDEXER_HYV4_VL = Submodule(
    "indexer",
    "index_head_dim",
    "qk_rope_head_dim",
    pairing="interleaved",
    rotary_slice="trailing",
    layers_key="indexer_types",
    runs_on=("full",),
    note=(
        "transformers 5.24 (HYV4VLIndexer) rotates the trailing qk_rope_head_dim features of "
        "each indexer head with the attention's M-RoPE cos/sin and the model's "
        "apply_rotary_pos_emb, whose rotate_half turns adjacent pairs (x[0::2], x[1::2]) with "
        "the first half of cos/sin repeated per pair (HY V4's text model, hy_v4, turns them "
        "half-split); layers whose indexer_types entry is 'shared' have no indexer and reuse "
        "the previous full layer's top-k"
    ),
)
_INDEXER_DOTS3 = Submodule(
    "indexer",
    "index_head_dim",
    None,
    pairing="interleaved",
    output_order="half",
    layer_types=("indexed_attention",),
    note=(
        "transformers 5.24 (Dots3NoteTextIndexer) rotates the leading features of each "
        "indexer head, as many as the layer's rope head, with apply_rotary_pos_emb_interleave "
        "(adjacent pairs in, half order out), like the attention's rope head and unlike "
        "DeepSeek-V3.2's half-split indexer"
    ),
)
_INDEXER_MINIMAX_M3 = Submodule(
    "indexer",
    "index_head_dim",
    None,
    pairing="half",
    layer_types=("minimax_m3_sparse",),
    head_dim_override="sparse_attention_config.sparse_index_dim",
    note=(
        "transformers 5.24 (MiniMaxM3VLIndexer) rotates the leading features of each index "
        "head half-split (apply_rotary_pos_emb) with the attention's cos/sin cut to "
        "index_head_dim, which covers the layer's whole rotated width"
    ),
)
_INDEXER_QWEN4 = Submodule(
    "indexer",
    "indexer_head_dim",
    None,
    pairing="half",
    layer_types=("indexed_attention",),
    needs=(
        "indexer_n_heads",
        "indexer_kv_heads",
        "indexer_head_dim",
        "indexer_budget",
        "indexer_compress_ratio",
    ),
    builder="Qwen4ExpTextQSAIndexer",
    note=(
        "transformers 5.24 (Qwen4ExpTextQSAIndexer) rotates the leading features of each "
        "indexer query head, as many as the attention's cos/sin cover, half-split "
        "(apply_rotary_pos_emb) with the attention's M-RoPE tables; its keys are averaged over "
        "blocks of indexer_compress_ratio tokens and rotated at each block's first position, "
        "which this record does not tabulate"
    ),
)

_RECORDS = (
    # Half pairing, leading slice, one rope for every layer.
    _LLAMA,
    # Config classes only: transformers' auto mapping runs LlamaModel for these types.
    _like(
        _LLAMA,
        "exaone",
        ("exaone",),
        "ExaoneConfig",
        _d(4096, 32, 32, 4096, 500000.0),
        aliases={"num_hidden_layers": "num_layers"},
        source="transformers 5.24 models/exaone/configuration_exaone.py (a config class only: "
        "the auto mapping runs LlamaModel; attribute_map num_layers -> num_hidden_layers, "
        "default_theta 500000)",
    ),
    _like(
        _LLAMA,
        "internlm3",
        ("internlm3",),
        "InternLM3Config",
        _d(4096, 32, 48, 32768, 1e4, head_dim=128),
        source="transformers 5.24 models/internlm3/configuration_internlm3.py (a config class "
        "only: the auto mapping runs LlamaModel)",
    ),
    _like(
        _LLAMA,
        "iquestcoder",
        ("iquestcoder",),
        "IQuestCoderConfig",
        _d(5120, 40, 80, 131072, 1e4, head_dim=128),
        source="transformers 5.24 models/iquestcoder/configuration_iquestcoder.py (a config "
        "class only: the auto mapping runs LlamaModel)",
    ),
    _like(_LLAMA, "mistral", ("mistral",), "MistralConfig", _d(4096, 32, 32, 131072, 1e4)),
    _like(_LLAMA, "mixtral", ("mixtral",), "MixtralConfig", _d(4096, 32, 32, 131072, 1e6)),
    _like(
        _LLAMA,
        "ministral",
        ("ministral",),
        "MinistralConfig",
        _d(4096, 32, 32, 131072, 1e4),
        needs=(_need_head_dim("MinistralAttention"),),
    ),
    _like(
        _LLAMA,
        "chameleon",
        ("chameleon",),
        "ChameleonConfig",
        _d(4096, 32, 32, 4096, 1e4),
        needs=(
            Need(
                ("vocabulary_map",),
                "ChameleonModel",
                "ChameleonImageVocabularyMapping(config.vocabulary_map) calls "
                "vocabulary_map.get('<image>'), an AttributeError on the class default None",
            ),
        ),
        source=_tf("chameleon") + " (rotate_half over whole heads of hidden_size // "
        "num_attention_heads)",
    ),
    _like(
        _LLAMA,
        "dots1",
        ("dots1",),
        "Dots1Config",
        _d(4608, 32, 62, 2048, 1e4),
        needs=(
            Need(
                ("n_routed_experts", "n_shared_experts"),
                "Dots1MoE",
                "on every layer from first_k_dense_replace on it builds Dots1Experts, "
                "torch.empty(n_routed_experts, 2 * moe_intermediate_size, hidden_size), and "
                "shared experts of moe_intermediate_size * n_shared_experts: a TypeError on "
                "the class defaults None",
                first_layer_key="first_k_dense_replace",
            ),
        ),
        source=_tf("dots1") + " (rotate_half over whole heads; MoE layers from "
        "first_k_dense_replace on)",
    ),
    _like(_LLAMA, "qwen2", ("qwen2",), "Qwen2Config", _d(4096, 32, 32, 32768, 1e4)),
    _like(_LLAMA, "qwen2_moe", ("qwen2_moe",), "Qwen2MoeConfig", _d(2048, 16, 24, 32768, 1e4)),
    _like(_LLAMA, "qwen3", ("qwen3",), "Qwen3Config", _d(4096, 32, 32, 32768, 1e4, head_dim=128)),
    _like(
        _LLAMA,
        "qwen3_moe",
        ("qwen3_moe", "qwen3moe"),
        "Qwen3MoeConfig",
        _d(2048, 32, 24, 32768, 1e4),
    ),
    _like(_LLAMA, "granite", ("granite",), "GraniteConfig", _d(4096, 32, 32, 2048, 1e4)),
    _like(_LLAMA, "olmo2", ("olmo2",), "Olmo2Config", _d(4096, 32, 32, 2048, 1e4)),
    _like(_LLAMA, "starcoder2", ("starcoder2",), "Starcoder2Config", _d(3072, 24, 30, 4096, 1e4)),
    _like(
        _LLAMA,
        "falcon",
        ("falcon",),
        "FalconConfig",
        _d(4544, 71, 32, 2048, 1e4, alibi=False),
        layers="falcon",
        source=_tf("falcon") + " (RoPE unless alibi is true)",
    ),
    _like(
        _LLAMA,
        "jetmoe",
        ("jetmoe",),
        "JetMoeConfig",
        {
            "hidden_size": 2048,
            "num_attention_heads": 32,
            "num_hidden_layers": 12,
            "max_position_embeddings": 4096,
            "rope_theta": 1e4,
            "kv_channels": 128,
        },
        aliases={"head_dim": "kv_channels"},
        source=_tf("jetmoe") + " (attribute_map: head_dim is kv_channels, the attention's "
        "head width)",
    ),
    _like(_LLAMA, "gemma", ("gemma",), "GemmaConfig", _d(3072, 16, 28, 8192, 1e4, head_dim=256)),
    _like(
        _LLAMA,
        "gpt_oss",
        ("gpt_oss", "gpt-oss"),
        "GptOssConfig",
        _d(2880, 64, 36, 131072, 150000.0, head_dim=64),
    ),
    _like(
        _LLAMA,
        "apertus1p5_text",
        ("apertus1p5_text",),
        "Apertus1p5TextConfig",
        _d(
            4096,
            32,
            32,
            65536,
            12000000.0,
            rope_parameters={
                "rope_type": "llama3",
                "rope_theta": 12000000.0,
                "factor": 8.0,
                "original_max_position_embeddings": 8192,
                "low_freq_factor": 1.0,
                "high_freq_factor": 4.0,
            },
        ),
        source=_tf("apertus1p5") + " (rotate_half over whole heads; the class's own Llama 3 "
        "block when the file gives none)",
    ),
    _like(
        _LLAMA,
        "aria_text",
        ("aria_text",),
        "AriaTextConfig",
        _d(4096, 32, 32, 2048, 1e4),
        source=_tf("aria") + " (rotate_half over whole heads)",
    ),
    _like(
        _LLAMA,
        "granite4_vision_text",
        ("granite4_vision_text",),
        "Granite4VisionTextConfig",
        _d(4096, 32, 32, 2048, 1e4),
        source=_tf("granite4_vision") + " (rotate_half over whole heads)",
    ),
    _like(
        _LLAMA,
        "granite_docling_text",
        ("granite_docling_text",),
        "GraniteDoclingTextConfig",
        _d(1024, 16, 28, 32768, 1e4),
        source=_tf("granite_docling") + " (rotate_half over whole heads)",
    ),
    _like(
        _LLAMA,
        "hyperclovax",
        ("hyperclovax",),
        "HyperCLOVAXConfig",
        _d(4096, 32, 32, 2048, 1e4, head_dim=128),
        source=_tf("hyperclovax") + " (rotate_half over whole heads)",
    ),
    _like(
        _LLAMA,
        "laguna",
        ("laguna",),
        "LagunaConfig",
        _d(
            2048,
            48,
            40,
            131072,
            1e4,
            head_dim=128,
            rope_parameters={
                "full_attention": {
                    "rope_type": "default",
                    "rope_theta": 500000.0,
                    "partial_rotary_factor": 0.5,
                },
                "sliding_attention": {
                    "rope_type": "default",
                    "rope_theta": 10000.0,
                    "partial_rotary_factor": 1.0,
                },
            },
        ),
        honours_partial=True,
        source=_tf("laguna") + " (a rope per layer type; the leading slice rotates)",
    ),
    _like(
        _LLAMA,
        "mellum",
        ("mellum",),
        "MellumConfig",
        _d(
            2304,
            32,
            28,
            131072,
            1e4,
            head_dim=128,
            rope_parameters={
                "full_attention": {"rope_type": "default", "rope_theta": 500000.0},
                "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
            },
        ),
        source=_tf("mellum") + " (a rope per layer type)",
    ),
    _like(
        _LLAMA,
        "mimo_v2_flash",
        ("mimo_v2_flash",),
        "MiMoV2FlashConfig",
        _d(
            4096,
            64,
            48,
            131072,
            1e4,
            head_dim=192,
            rope_parameters={
                "full_attention": {
                    "rope_type": "default",
                    "rope_theta": 5000000.0,
                    "partial_rotary_factor": 0.334,
                },
                "sliding_attention": {
                    "rope_type": "default",
                    "rope_theta": 10000.0,
                    "partial_rotary_factor": 0.334,
                },
            },
        ),
        honours_partial=True,
        layers="layer_types",
        source=_tf("mimo_v2_flash") + " (a rope per layer type; the leading slice rotates)",
    ),
    _like(
        _LLAMA,
        "modernbert-decoder",
        ("modernbert-decoder",),
        "ModernBertDecoderConfig",
        _d(
            768,
            12,
            22,
            8192,
            160000.0,
            rope_parameters={
                "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
                "full_attention": {"rope_type": "default", "rope_theta": 160000.0},
            },
        ),
        layers="layer_types",
        source=_tf("modernbert_decoder") + " (a rope per layer type)",
    ),
    _like(
        _LLAMA,
        "olmo3",
        ("olmo3",),
        "Olmo3Config",
        _d(4096, 32, 32, 2048, 500000.0),
        layers="sliding_full",
        rope_form="olmo3",
        source=_tf("olmo3") + " (a 4.x rope_scaling belongs to the full-attention layers, as "
        "Olmo3Config.convert_rope_params_to_dict puts it)",
    ),
    _like(
        _LLAMA,
        "hunyuan_v1_dense",
        ("hunyuan_v1_dense", "hunyuan-dense"),
        "HunYuanDenseV1Config",
        _d(4096, 32, 32, 2048, 1e4),
        dynamic_alpha=True,
        needs=(_need_head_dim("HunYuanDenseV1Attention"),),
        source=_tf("hunyuan_v1_dense") + " (dynamic with alpha is the static ntk_alpha base)",
    ),
    _like(
        _LLAMA,
        "hunyuan_v1_moe",
        ("hunyuan_v1_moe", "hunyuan-moe"),
        "HunYuanMoEV1Config",
        _d(4096, 32, 32, 2048, 1e4),
        dynamic_alpha=True,
        needs=(_need_head_dim("HunYuanMoEV1Attention"),),
        source=_tf("hunyuan_v1_moe") + " (dynamic with alpha is the static ntk_alpha base)",
    ),
    _like(
        _LLAMA,
        "hunyuan_vl_text",
        ("hunyuan_vl_text",),
        "HunYuanVLTextConfig",
        _d(4096, 32, 32, 2048, 1e4),
        dynamic_alpha=True,
        rope_form="hunyuan_vl",
        source=_tf("hunyuan_vl") + " (HunYuanVLRotaryEmbedding: xD-RoPE sections over "
        "cat(freq, freq) in chunks of 2 s_a; dynamic with alpha is the static ntk_alpha base)",
    ),
    _like(
        _LLAMA,
        "step3p5",
        ("step3p5",),
        "Step3p7TextConfig",
        _d(4096, 64, 45, 128000, 1e4, head_dim=128),
        honours_partial=True,
        rope_form="step3p5",
        source=_tf("step3p7") + " (a rope per layer type, built from per-layer rope_theta and "
        "partial_rotary_factors lists; the leading slice rotates)",
    ),
    _like(
        _LLAMA,
        "dory",
        ("dory",),
        "DoryConfig",
        _d(
            2560,
            16,
            36,
            8192,
            1e4,
            head_dim=256,
            rope_parameters={
                "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
                "full_attention": {"rope_type": "default", "rope_theta": 10000000.0},
            },
        ),
        layers="dory",
        source=_tf("dory") + " (a rope per layer type over whole heads; released layer_types "
        "alternate attention and mlp blocks)",
    ),
    _like(
        _LLAMA,
        "neomme",
        ("neomme",),
        "NeoMMEConfig",
        {  # no single rope_theta: default_theta is per layer type (in the rope form)
            "hidden_size": 1024,
            "num_attention_heads": 16,
            "num_hidden_layers": 17,
            "max_position_embeddings": 16384,
            "head_dim": 64,
        },
        honours_partial=True,
        mrope_layout="alternating",
        layers="neomme",
        rope_form="neomme",
        source=_tf("neomme") + " (a rope per layer type on the leading slice; row and column "
        "positions alternate over its pairs, recomposition_frequencies)",
    ),
    Family(
        "dbrx",
        ("dbrx",),
        "DbrxConfig",
        _d(2048, 16, 24, 2048, 1e4),
        aliases={
            "hidden_size": "d_model",
            "num_attention_heads": "n_heads",
            "num_hidden_layers": "n_layers",
            "max_position_embeddings": "max_seq_len",
        },
        rope_form="dbrx",
        needs=(
            Need(
                ("attn_config.rope_theta",),
                "DbrxAttention",
                "self.rope_theta = config.attn_config.rope_theta, an AttributeError where the "
                "file leaves it out: DbrxAttentionConfig has no such field",
            ),
        ),
        source=_tf("dbrx") + " (rotate_half over whole heads of d_model // n_heads; the base "
        "from the top-level rope_parameters, not attn_config)",
    ),
    Family(
        "phi3",
        ("phi3",),
        "Phi3Config",
        _d(3072, 32, 32, 4096, 1e4),
        source=_tf("phi3") + " (rotates the leading slice)",
    ),
    # Partial rotary (leading slice) with a class default for the factor.
    _NEOX,
    _like(
        _NEOX,
        "stablelm",
        ("stablelm",),
        "StableLmConfig",
        _d(2560, 32, 32, 4096, 1e4, partial_rotary_factor=0.25),
        source=_tf("stablelm"),
    ),
    _like(
        _NEOX,
        "phi",
        ("phi", "phi2"),
        "PhiConfig",
        _d(2048, 32, 24, 2048, 1e4, partial_rotary_factor=0.5),
        source=_tf("phi"),
    ),
    _like(
        _NEOX,
        "persimmon",
        ("persimmon",),
        "PersimmonConfig",
        _d(4096, 64, 36, 16384, 1e4, partial_rotary_factor=0.5),
        source=_tf("persimmon"),
    ),
    _like(
        _NEOX,
        "nemotron",
        ("nemotron",),
        "NemotronConfig",
        _d(6144, 48, 32, 4096, 1e4, partial_rotary_factor=0.5),
        needs=(
            Need(
                ("num_key_value_heads",),
                "NemotronAttention",
                "num_heads // num_key_value_heads, a TypeError on the class default None "
                "(NemotronConfig does not fill it from num_attention_heads)",
            ),
        ),
        source=_tf("nemotron"),
    ),
    _like(
        _NEOX,
        "glm4_moe",
        ("glm4_moe", "glm4moe"),
        "Glm4MoeConfig",
        _d(4096, 96, 46, 131072, 1e4, partial_rotary_factor=0.5),
        source=_tf("glm4_moe"),
    ),
    _like(
        _NEOX,
        "sarvam_moe",
        ("sarvam_moe",),
        "SarvamMoEConfig",
        _d(4096, 64, 19, 131072, 8e6, head_dim=64, partial_rotary_factor=1.0),
        source="transformers 5.24 models/sarvam_moe/configuration_sarvam_moe.py (a config class "
        "only: the auto mapping runs Glm4MoeModel, models/glm4_moe/modeling_glm4_moe.py; "
        "partial_rotary_factor defaults to 1.0, the whole head)",
    ),
    Family(
        "minimax_m2",
        ("minimax_m2", "minimax-m2"),
        "MiniMaxM2Config",
        _d(3072, 48, 62, 196608, 5e6, head_dim=128),
        width="rotary_dim",
        source=_tf("minimax_m2") + " (partial_rotary_factor = rotary_dim / head_dim)",
    ),
    # Interleaved pairs.
    Family(
        "roformer",
        ("roformer",),
        "RoFormerConfig",
        _d(768, 12, 12, 1536, 1e4),
        pairing="interleaved",
        base_from="gptj",
        honours_partial=False,
        refuse_when={
            "rotary_value": (
                "transformers 5.24 RoFormerSelfAttention rotates the values as well as the "
                "queries and keys (apply_rotary_position_embeddings with value_layer), so the "
                "attention output carries the rotation; a schedule rotates queries and keys only"
            )
        },
        source=_tf("roformer") + " (RoFormerSinusoidalPositionalEmbedding: sin/cos tables of "
        "hidden_size // num_attention_heads features, base 10000 in the code, applied to "
        "adjacent pairs of every self-attention layer)",
    ),
    Family(
        "gptj",
        ("gptj",),
        "GPTJConfig",
        {"rotary_dim": 64, "n_embd": 4096, "n_head": 16, "n_layer": 28, "n_positions": 2048},
        width="rotary_dim",
        pairing="interleaved",
        base_from="gptj",
        source=_tf("gptj") + " (rotate_every_two; base 10000 in the code)",
    ),
    Family(
        "codegen",
        ("codegen",),
        "CodeGenConfig",
        {"rotary_dim": 64, "n_embd": 4096, "n_head": 16, "n_layer": 28, "n_positions": 2048},
        width="rotary_dim",
        pairing="interleaved",
        base_from="gptj",
        source=_tf("codegen") + " (GPT-J's rotate_every_two; base 10000 in the code)",
    ),
    Family(
        "cohere",
        ("cohere", "command-r"),
        "CohereConfig",
        _d(8192, 64, 40, 8192, 500000.0),
        pairing="interleaved",
        honours_partial=False,
        source=_tf("cohere") + " (repeat_interleave of the frequencies)",
    ),
    Family(
        "cohere2",
        ("cohere2",),
        "Cohere2Config",
        _d(8192, 64, 40, 8192, 1e4, sliding_window=4096, sliding_window_pattern=4),
        pairing="interleaved",
        honours_partial=False,
        layers="sliding_rope_only",
        source=_tf("cohere2") + " (RoPE only where sliding_window is set)",
    ),
    Family(
        "cohere2_moe",
        ("cohere2_moe",),
        "Cohere2MoeConfig",
        _d(8192, 64, 40, 8192, 1e4, sliding_window=4096, prefix_dense_sliding_window_pattern=1),
        pairing="interleaved",
        honours_partial=False,
        layers="cohere2_moe",
        source=_tf("cohere2_moe") + " (RoPE where sliding_window is set, and on dense-MLP "
        "layers when prefix_dense_sliding_window_pattern is 1)",
    ),
    Family(
        "glm",
        ("glm",),
        "GlmConfig",
        _d(4096, 32, 40, 131072, 1e4, head_dim=128, partial_rotary_factor=0.5),
        pairing="interleaved",
        source=_tf("glm") + " (adjacent pairs inside the leading slice)",
    ),
    Family(
        "glm4",
        ("glm4",),
        "Glm4Config",
        _d(4096, 32, 40, 131072, 1e4, head_dim=128, partial_rotary_factor=0.5),
        pairing="interleaved",
        source=_tf("glm4") + " (adjacent pairs inside the leading slice)",
    ),
    Family(  # GLM's rotation with M-RoPE sections (the text model alone has none)
        "glm4v",
        ("glm4v", "glm4v_text"),
        "Glm4vTextConfig",
        _d(4096, 32, 40, 32768, 1e4),
        pairing="interleaved",
        mrope_layout="blocked",
        mrope_section=(8, 12, 12),
        source=_tf("glm4v") + " (adjacent pairs inside the leading slice, M-RoPE sections)",
    ),
    Family(
        "glm4v_moe",
        ("glm4v_moe", "glm4v_moe_text"),
        "Glm4vMoeTextConfig",
        _d(4096, 96, 46, 65536, 1e4, partial_rotary_factor=0.5),
        mrope_layout="blocked",
        mrope_section=(8, 12, 12),
        source=_tf("glm4v_moe") + " (rotate_half over the leading slice)",
    ),
    Family(  # GLM-4.1V's text rotation, as GLM-OCR's decoder repeats it
        "glm_ocr",
        ("glm_ocr_text",),
        "GlmOcrTextConfig",
        _d(1024, 16, 16, 131072, 1e4),
        pairing="interleaved",
        mrope_layout="blocked",
        mrope_section=(8, 12, 12),
        source=_tf("glm_ocr") + " (adjacent pairs inside the leading slice, M-RoPE sections)",
    ),
    Family(  # GLM-4.1V-MoE's rotation (half pairs in the leading slice, M-RoPE sections)
        "glm_image",
        ("glm_image_text",),
        "GlmImageTextConfig",
        _d(4096, 32, 40, 131072, 1e4),
        mrope_layout="blocked",
        mrope_section=(8, 12, 12),
        source=_tf("glm_image") + " (rotate_half over the leading slice, M-RoPE sections)",
    ),
    Family(
        "moonshine_streaming",
        ("moonshine_streaming",),
        "MoonshineStreamingConfig",
        _d(
            320,
            8,
            6,
            4096,
            1e4,
            rope_parameters={
                "rope_type": "default",
                "rope_theta": 10000.0,
                "partial_rotary_factor": 0.8,
            },
        ),
        pairing="interleaved",
        needs=(
            Need(
                ("num_key_value_heads",),
                "MoonshineStreamingDecoderLayer",
                "it passes config.num_key_value_heads to its attentions, an AttributeError "
                "where the file leaves it out: MoonshineStreamingConfig has no such field",
            ),
        ),
        source=_tf("moonshine_streaming") + " (the decoder's self-attention: adjacent pairs "
        "inside the leading slice; the class's own rope block rotates 0.8 of each head)",
    ),
    Family(
        "mllama_text",
        ("mllama_text_model",),
        "MllamaTextConfig",
        _d(4096, 32, 40, 131072, 500000.0, cross_attention_layers=[3, 8, 13, 18, 23, 28, 33, 38]),
        layers="cross_attention",
        honours_partial=False,
        source=_tf("mllama") + " (the layers of cross_attention_layers attend to the image "
        "without RoPE)",
    ),
    Family(
        "minimax",
        ("minimax",),
        "MiniMaxConfig",
        _d(4096, 32, 32, 131072, 1e6),
        layers="minimax",
        honours_partial=False,
        source=_tf("minimax") + " (RoPE on the full-attention layers; lightning attention "
        "on the linear ones)",
    ),
    Family(
        "olmo_hybrid",
        ("olmo_hybrid",),
        "OlmoHybridConfig",
        _d(3840, 30, 32, 65536, 1e4),
        layers="olmo_hybrid",
        honours_partial=False,
        source=_tf("olmo_hybrid") + " (RoPE on the full-attention layers when the rope's "
        "base is set; gated DeltaNet on the linear ones)",
    ),
    Family(
        "kolibri1",
        ("kolibri1",),
        "Kolibri1Config",
        _d(2560, 48, 50, 262144, 1e4, head_dim=128, sliding_window=513),
        layers="kolibri1",
        honours_partial=False,
        source=_tf("kolibri1") + " (RoPE on every layer without a sliding window, else on "
        "the sliding layers only)",
    ),
    Family(
        "helium",
        ("helium",),
        "HeliumConfig",
        _d(2560, 20, 24, 4096, 100000.0, head_dim=128),
        pairing="interleaved",
        honours_partial=False,
        source=_tf("helium") + " (GLM-style interleaved over the head)",
    ),
    *(
        Family(
            name,
            (name,),
            cls,
            defaults,
            width="hidden_over_heads",
            pairing="interleaved",
            honours_partial=False,
            source=_tf("blt") + " (adjacent pairs over the head; the class sets head_dim to "
            "hidden_size // num_attention_heads)",
        )
        for name, cls, defaults in (
            ("blt_global_transformer", "BltGlobalTransformerConfig", _d(2048, 16, 25, 4096, 5e5)),
            ("blt_local_decoder", "BltLocalDecoderConfig", _d(1024, 16, 9, 24576, 5e5)),
            ("blt_local_encoder", "BltLocalEncoderConfig", _d(1024, 16, 1, 24576, 5e5)),
            ("blt_patcher", "BltPatcherConfig", _d(768, 12, 14, 8192, 1e4)),
        )
    ),
    Family(
        "openai_privacy_filter",
        ("openai_privacy_filter",),
        "OpenAIPrivacyFilterConfig",
        _d(
            640,
            14,
            8,
            131072,
            150000.0,
            head_dim=64,
            rope_parameters={
                "rope_type": "yarn",
                "factor": 32.0,
                "beta_fast": 32.0,
                "beta_slow": 1.0,
                "truncate": False,
                "original_max_position_embeddings": 4096,
                "rope_theta": 150000.0,
            },
        ),
        pairing="interleaved",
        honours_partial=False,
        source=_tf("openai_privacy_filter") + " (even and odd features rotate as pairs, "
        "written back interleaved; the class's own YaRN block when the file gives none)",
    ),
    Family(
        "chatglm",
        ("chatglm",),
        "ChatGLMConfig (THUDM's remote code)",
        {},
        width="kv_channels",
        pairing="interleaved",
        base_from="rope_ratio",
        source="THUDM chatglm modeling_chatglm.py (RotaryEmbedding(kv_channels // 2), "
        "base 10000 * rope_ratio); not a transformers 5.24 model",
    ),
    Family(
        "ernie4_5",
        ("ernie4_5",),
        "Ernie4_5Config",
        _d(1024, 16, 18, 131072, 500000.0, head_dim=128),
        pairing="interleaved",
        honours_partial=False,
        source=_tf("ernie4_5") + " (GLM-style interleaved over the head)",
    ),
    Family(
        "ernie4_5_moe",
        ("ernie4_5_moe", "ernie4_5-moe"),
        "Ernie4_5_MoeConfig",
        _d(2560, 20, 28, 131072, 500000.0),
        pairing="interleaved",
        honours_partial=False,
        source=_tf("ernie4_5_moe") + " (GLM-style interleaved over the head)",
    ),
    Family(
        "llama4",
        ("llama4", "llama4_text"),
        "Llama4TextConfig",
        _d(
            5120,
            40,
            48,
            131072,
            500000.0,
            head_dim=128,
            no_rope_layer_interval=4,
            attn_temperature_tuning=True,
            floor_scale=8192,
            attn_scale=0.1,
        ),
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
        "DeepseekV2Config",
        _d(4096, 32, 32, 2048, 1e4, qk_rope_head_dim=64),
        width="qk_rope_head_dim",
        pairing="interleaved",
        query=("mla_mscale",),
        source=_tf("deepseek_v2") + " (complex form on adjacent pairs, same order out)",
    ),
    _MLA,
    _like(
        _MLA,
        "glm4_moe_lite",
        ("glm4_moe_lite",),
        "Glm4MoeLiteConfig",
        _d(2048, 20, 47, 202752, 1e4, qk_rope_head_dim=64, rope_interleave=True),
        source=_tf("glm4_moe_lite"),
    ),
    _like(
        _MLA,
        "sarvam_mla",
        ("sarvam_mla",),
        "SarvamMLAConfig",
        _d(4096, 64, 32, 4096, 1e4, qk_rope_head_dim=64, rope_interleave=True),
        source="transformers 5.24 models/sarvam_mla/configuration_sarvam_mla.py (a config "
        "class only: the auto mapping runs DeepseekV3Model, models/deepseek_v3/"
        "modeling_deepseek_v3.py)",
    ),
    _like(
        _MLA,
        "mistral4",
        ("mistral4",),
        "Mistral4Config",
        _d(4096, 32, 36, 1048576, 1e4, qk_rope_head_dim=64, rope_interleave=True),
        query=("llama_4_scaling_beta", "mla_mscale"),
        source=_tf("mistral4"),
    ),
    Family(
        "longcat_flash",
        ("longcat_flash",),
        "LongcatFlashConfig",
        {
            "hidden_size": 6144,
            "num_attention_heads": 64,
            "num_layers": 28,
            "max_position_embeddings": 131072,
            "rope_theta": 1e7,
            "qk_rope_head_dim": 64,
        },
        layer_count=("num_layers", 2),
        width="qk_rope_head_dim",
        pairing="interleaved",
        output_order="half",
        query=("mla_mscale",),
        source=_tf("longcat_flash") + " (always apply_rotary_pos_emb_interleave; two "
        "attention layers per num_layers block)",
    ),
    _like(
        _MLA,
        "axk1",
        ("axk1",),
        "AXK1Config",
        _d(7168, 64, 61, 32768, 1e4, qk_rope_head_dim=64, rope_interleave=True),
        source=_tf("axk1") + " (DeepSeek-V3's MLA rope head and rope_interleave flag)",
    ),
    _like(
        _MLA,
        "youtu",
        ("youtu",),
        "YoutuConfig",
        _d(2048, 16, 32, 131072, 1e4, qk_rope_head_dim=64, rope_interleave=True),
        source=_tf("youtu") + " (DeepSeek-V3's MLA rope head and rope_interleave flag)",
    ),
    Family(
        "minicpm3",
        ("minicpm3",),
        "MiniCPM3Config",
        _d(2560, 40, 62, 32768, 1e4, qk_rope_head_dim=32),
        width="qk_rope_head_dim",
        query=("mla_mscale",),
        source=_tf("minicpm3") + " (MLA rope head rotated half-split by apply_rotary_pos_emb)",
    ),
    _DSA_V32,
    _like(
        _DSA_V32,
        "axk2",
        ("axk2",),
        "AXK2Config",
        _d(2048, 32, 48, 131072, 1e4, qk_rope_head_dim=32, index_head_dim=128),
        submodules=(_INDEXER_AXK2,),
        source=_tf("axk2") + " (DeepSeek-V3.2's layout: MLA rope head by "
        "apply_rotary_pos_emb_interleave, a half-split DSA indexer)",
    ),
    _like(
        _DSA_V32,
        "glm_moe_dsa",
        ("glm_moe_dsa",),
        "GlmMoeDsaConfig",
        _d(6144, 64, 78, 202752, 1e4, qk_rope_head_dim=64, index_head_dim=128),
        submodules=(_INDEXER_GLM,),
        source=_tf("glm_moe_dsa") + " (MLA rope head: apply_rotary_pos_emb_interleave; "
        "GlmMoeDsaIndexer on 'full' indexer layers)",
    ),
    Family(
        "hy_v4",
        ("hy_v4",),
        "HYV4Config",
        _d(2816, 32, 34, 262144, 1e4, qk_rope_head_dim=64, index_head_dim=128),
        width="qk_rope_head_dim",
        pairing="half",
        layers="indexed",
        query=("mla_mscale",),
        submodules=(_INDEXER_HYV4,),
        source=_tf("hy_v4") + " (MLA rope head: rotate_half; HYV4Indexer on 'full' indexer layers)",
    ),
    Family(
        "hy_v4_vl",
        ("hy_v4_vl_text",),
        "HYV4VLTextConfig",
        _d(6144, 64, 78, 262144, 1e4, qk_rope_head_dim=64, index_head_dim=128),
        width="qk_rope_head_dim",
        pairing="interleaved",
        layers="indexed",
        query=("mla_mscale",),
        mrope_layout="interleaved",
        mrope_section=(12, 10, 10),
        submodules=(_INDEXER_HYV4_VL,),
        source=_tf("hy_v4_vl") + " (MLA rope head: apply_rotary_pos_emb on adjacent pairs, "
        "same order out; interleaved M-RoPE sections, HYV4VLTextConfig's default [12, 10, 10]; "
        "HYV4VLIndexer on 'full' indexer layers)",
    ),
    Family(
        "dots3_note",
        ("dots3_note_text",),
        "Dots3NoteTextConfig",
        _d(
            5120,
            128,
            46,
            524288,
            80000000.0,
            head_dim=256,
            qk_rope_head_dim=64,
            index_head_dim=128,
        ),
        width="qk_rope_head_dim",
        pairing="interleaved",
        output_order="half",
        layers="dots3",
        rope_form="dots3",
        submodules=(_INDEXER_DOTS3,),
        source=_tf("dots3_note") + " (MLA rope head: apply_rotary_pos_emb_interleave, a rope "
        "and rope head per layer type from per_layer_config; Dots3NoteTextIndexer on "
        "indexed_attention layers)",
    ),
    Family(
        "minimax_m3_vl",
        ("minimax_m3_vl_text",),
        "MiniMaxM3VLTextConfig",
        _d(6144, 64, 60, 524288, 5000000.0, head_dim=128, index_head_dim=128),
        layers="minimax_m3",
        submodules=(_INDEXER_MINIMAX_M3,),
        source=_tf("minimax_m3_vl") + " (rotate_half over the leading int(head_dim * "
        "partial_rotary_factor) features, rotary_dim not read; MiniMaxM3VLIndexer on "
        "minimax_m3_sparse layers)",
    ),
    Family(
        "qwen4_exp",
        ("qwen4_exp_text",),
        "Qwen4ExpTextConfig",
        _d(2048, 16, 40, 32768, 1e4, head_dim=256),
        layers="qwen4_exp",
        mrope_layout="interleaved",
        mrope_section=(11, 11, 10),
        submodules=(_INDEXER_QWEN4,),
        source=_tf("qwen4_exp") + " (interleaved M-RoPE sections, the rotary module's default "
        "[11, 11, 10]; the leading slice rotates; gated-DeltaNet linear-attention layers; "
        "Qwen4ExpTextQSAIndexer on indexed_attention layers)",
    ),
    Family(
        "bailing_hybrid",
        ("bailing_hybrid",),
        "BailingHybridConfig",
        _d(2560, 32, 42, 262144, 6e6, qk_rope_head_dim=64, layer_group_size=6),
        width="qk_rope_head_dim",
        pairing="interleaved",
        output_order="half",
        layers="layer_group",
        query=("mla_mscale",),
        source=_tf("bailing_hybrid") + " (MLA rope head: apply_rotary_pos_emb_interleave on "
        "the full-attention layers; BailingHybridDeltaAttention layers have no RoPE)",
    ),
    Family(
        "kimi_linear",
        ("kimi_linear",),
        "KimiLinearConfig",
        _d(2304, 32, 27, 1048576, 1e4, qk_rope_head_dim=64),
        width="qk_rope_head_dim",
        layers="kimi_linear",
        source=_tf("kimi_linear") + " (no rotary module: the MLA layers are NoPE, the KDA "
        "layers linear attention)",
    ),
    Family(
        "deepseek_v4",
        ("deepseek_v4",),
        "DeepseekV4Config",
        _d(
            4096,
            64,
            43,
            1048576,
            1e4,
            head_dim=512,
            partial_rotary_factor=64 / 512,
            compress_rope_theta=160000.0,
            index_head_dim=128,
            qk_rope_head_dim=64,
        ),
        pairing="interleaved",
        rotary_slice="trailing",
        layers="deepseek_v4",
        rope_form="deepseek_v4",
        submodules=(_INDEXER_V4,),
        source=_tf("deepseek_v4") + " (trailing slice; sliding layers 'main', others 'compress')",
    ),
    # Per-layer schedules with half pairing.
    Family(
        "gemma2",
        ("gemma2",),
        "Gemma2Config",
        _d(2304, 8, 26, 8192, 1e4, head_dim=256),
        layers="gemma2",
        honours_partial=False,
        source=_tf("gemma2"),
    ),
    Family(
        "gemma3",
        ("gemma3", "gemma3_text"),
        "Gemma3TextConfig",
        _d(
            2304,
            8,
            26,
            131072,
            1e6,
            head_dim=256,
            rope_local_base_freq=1e4,
            sliding_window_pattern=6,
        ),
        layers="gemma3",
        rope_form="gemma3",
        honours_partial=False,
        source=_tf("gemma3") + " (default_theta global 1e6, local 1e4)",
    ),
    Family(
        "gemma4",
        ("gemma4", "gemma4_text"),
        "Gemma4TextConfig",
        _d(2304, 8, 30, 131072, 1e4, head_dim=256, global_head_dim=512, sliding_window_pattern=6),
        layers="gemma4",
        honours_partial=False,
        source=_tf("gemma4") + " (per_layer_config head widths; proportional full layers)",
    ),
    Family(
        "afmoe",
        ("afmoe",),
        "AfmoeConfig",
        _d(2048, 16, 32, 16384, 1e4, head_dim=128, global_attn_every_n_layers=4),
        layers="afmoe",
        honours_partial=False,
        source=_tf("afmoe") + " (RoPE on the sliding-window layers only; every "
        "global_attn_every_n_layers-th layer is full attention without RoPE)",
    ),
    Family(
        "flint",
        ("flint",),
        "FlintConfig",
        _d(2048, 32, 49, 262144, 1e4, head_dim=128, sliding_window=513),
        layers="flint",
        honours_partial=False,
        source=_tf("flint") + " (RoPE where sliding_window applies; layers 0, 1, every 4th "
        "from 1 and the last are full attention without RoPE)",
    ),
    Family(
        "smollm3",
        ("smollm3",),
        "SmolLM3Config",
        _d(2048, 16, 36, 32768, 2e6, no_rope_layer_interval=4),
        layers="no_rope_layers",
        honours_partial=False,
        source=_tf("smollm3"),
    ),
    Family(
        "exaone4",
        ("exaone4", "exaone4_5_text"),
        "Exaone4Config",
        _d(4096, 32, 32, 2048, 1e4, sliding_window=4096, sliding_window_pattern=4),
        layers="exaone4",
        honours_partial=False,
        source=_tf("exaone4") + "; exaone4_5_text is EXAONE 4.5's text type, which "
        "Exaone4_5_Config maps to exaone4",
    ),
    Family(
        "exaone_moe",
        ("exaone_moe",),
        "ExaoneMoeConfig",
        _d(4096, 32, 32, 2048, 1e4, sliding_window=4096, sliding_window_pattern=4),
        layers="exaone4",
        honours_partial=False,
        source=_tf("exaone_moe") + " (EXAONE 4's rule: RoPE without a sliding window or on "
        "sliding layers)",
    ),
    Family(
        "qwen3_next",
        ("qwen3_next", "qwen3next"),
        "Qwen3NextConfig",
        _d(
            2048,
            16,
            48,
            32768,
            1e4,
            head_dim=256,
            partial_rotary_factor=0.25,
            full_attention_interval=4,
        ),
        layers="linear_attention",
        source=_tf("qwen3_next"),
    ),
    Family(
        "qwen3_5",
        ("qwen3_5", "qwen3_5_text", "qwen35"),
        "Qwen3_5TextConfig",
        _d(
            4096,
            16,
            32,
            32768,
            1e4,
            head_dim=256,
            partial_rotary_factor=0.25,
            full_attention_interval=4,
        ),
        layers="linear_attention",
        mrope_layout="interleaved",
        mrope_section=(11, 11, 10),
        source=_tf("qwen3_5") + " (interleaved M-RoPE sections; linear-attention layers)",
    ),
    Family(
        "qwen3_5_moe",
        ("qwen3_5_moe", "qwen3_5_moe_text", "qwen35moe"),
        "Qwen3_5MoeTextConfig",
        _d(
            2048,
            16,
            40,
            32768,
            1e4,
            head_dim=256,
            partial_rotary_factor=0.25,
            full_attention_interval=4,
        ),
        layers="linear_attention",
        mrope_layout="interleaved",
        mrope_section=(11, 11, 10),
        source=_tf("qwen3_5_moe") + " (interleaved M-RoPE sections; linear-attention layers)",
    ),
    Family(
        "ministral3",
        ("ministral3",),
        "Ministral3Config",
        _d(4096, 32, 34, 262144, 1e4, head_dim=128),
        query=("llama_4_scaling_beta",),
        honours_partial=False,
        source=_tf("ministral3"),
    ),
    Family(
        "lfm2",
        ("lfm2",),
        "Lfm2Config",
        _d(2560, 32, 32, 128000, 1e6),
        layers="conv_hybrid",
        honours_partial=False,
        source=_tf("lfm2") + " (conv layers have no attention; layer_types or full_attn_idxs)",
    ),
    Family(
        "lfm2_moe",
        ("lfm2_moe",),
        "Lfm2MoeConfig",
        _d(2048, 32, 32, 128000, 1e6),
        layers="conv_hybrid",
        honours_partial=False,
        needs=(
            Need(
                ("layer_types",),
                "Lfm2MoeDecoderLayer",
                "config.layer_types[layer_idx] tells conv from attention layers, a TypeError on "
                "the class default None (Lfm2MoeConfig neither fills it nor reads full_attn_idxs)",
            ),
        ),
        source=_tf("lfm2_moe") + " (conv layers have no attention)",
    ),
    Family(
        "zamba2",
        ("zamba2",),
        "Zamba2Config",
        _d(2560, 32, 54, 4096, 1e4, use_mem_rope=False),
        width="zamba2",
        layers="zamba2",
        honours_partial=False,
        source=_tf("zamba2") + " (the shared attention runs on the concatenation of the "
        "hidden state and the embeddings: head 2 * hidden_size // num_attention_heads; RoPE "
        "only with use_mem_rope)",
    ),
    # Multimodal text decoders (M-RoPE; text positions reduce to 1-D RoPE).
    Family(
        "qwen2_vl",
        ("qwen2_vl", "qwen2_vl_text", "qwen2vl"),
        "Qwen2VLTextConfig",
        _d(8192, 64, 80, 32768, 1e6),
        mrope_layout="blocked",
        mrope_section=(16, 24, 24),
        honours_partial=False,
        source=_tf("qwen2_vl"),
    ),
    Family(
        "qwen2_5_vl",
        ("qwen2_5_vl", "qwen2_5_vl_text"),
        "Qwen2_5_VLTextConfig",
        _d(8192, 64, 80, 32768, 1e6),
        mrope_layout="blocked",
        mrope_section=(16, 24, 24),
        honours_partial=False,
        source=_tf("qwen2_5_vl"),
    ),
    Family(
        "qwen3_vl",
        ("qwen3_vl", "qwen3_vl_text", "qwen3vl"),
        "Qwen3VLTextConfig",
        _d(4096, 32, 32, 128000, 500000.0, head_dim=128),
        mrope_layout="interleaved",
        mrope_section=(24, 20, 20),
        honours_partial=False,
        source=_tf("qwen3_vl") + " (interleaved sections whatever mrope_interleaved says)",
    ),
    Family(
        "qwen3_vl_moe",
        ("qwen3_vl_moe", "qwen3_vl_moe_text", "qwen3vlmoe"),
        "Qwen3VLMoeTextConfig",
        _d(2048, 16, 24, 128000, 500000.0),
        mrope_layout="interleaved",
        mrope_section=(24, 20, 20),
        honours_partial=False,
        source=_tf("qwen3_vl_moe") + " (interleaved sections whatever mrope_interleaved says)",
    ),
)

# Records for decoders whose rope is an existing record's, under their own config class's
# defaults (each checked by tools/model_coverage.py against the rotary module transformers
# builds for it).
_NAMED = {fam.name: fam for fam in _RECORDS}
_RECORDS += (
    _like(
        _NAMED["modernbert-decoder"],
        "modernbert",
        ("modernbert",),
        "ModernBertConfig",
        _NAMED["modernbert-decoder"].defaults,
        source=_tf("modernbert") + " (a rope per layer type; the encoder ModernBERT-decoder "
        "repeats)",
    ),
    _like(
        _NAMED["modernbert-decoder"],
        "t5gemma2_text",
        ("t5gemma2_text", "t5gemma2_decoder"),
        "T5Gemma2TextConfig",
        _d(
            2304,
            8,
            26,
            131072,
            1e6,
            head_dim=256,
            rope_parameters={
                "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
                "full_attention": {"rope_type": "default", "rope_theta": 1000000.0},
            },
        ),
        needs=(
            Need(
                ("dropout_rate",),
                "T5Gemma2TextEncoder / T5Gemma2Decoder",
                "nn.Dropout(config.dropout_rate) in their layers, an AttributeError where the "
                "file leaves it out: T5Gemma2TextConfig and T5Gemma2DecoderConfig have no such "
                "field, only T5Gemma2Config sets it on its encoder's and decoder's configs",
            ),
        ),
        source=_tf("t5gemma2") + " (a rope per layer type, Gemma 3's; T5Gemma2DecoderConfig "
        "has the same defaults)",
    ),
    _like(
        _LLAMA,
        "emu3_text_model",
        ("emu3_text_model",),
        "Emu3TextConfig",
        _d(4096, 32, 32, 9216, 1e6),
        source=_tf("emu3"),
    ),
    _like(
        _LLAMA,
        "deepseek_ocr2_text",
        ("deepseek_ocr2_text",),
        "DeepseekOcr2TextConfig",
        _d(4096, 32, 32, 2048, 1e4, head_dim=128),
        needs=(
            Need(
                ("mlp_layer_types",),
                "DeepseekOcr2TextDecoderLayer",
                "config.mlp_layer_types[layer_idx] picks each layer's MLP, a TypeError on the "
                "class default None",
            ),
        ),
        source=_tf("deepseek_ocr2"),
    ),
    _like(
        _LLAMA,
        "voxtral_realtime_text",
        ("voxtral_realtime_text",),
        "VoxtralRealtimeTextConfig",
        _d(4096, 32, 32, 131072, 1e4, head_dim=128),
        source=_tf("voxtral_realtime"),
    ),
    _like(
        _LLAMA,
        "dia_decoder",
        ("dia_decoder",),
        "DiaDecoderConfig",
        _d(2048, 16, 18, 3072, 1e4, head_dim=128),
        source=_tf("dia") + " (the decoder over audio-code frames, one position per frame)",
    ),
    _like(
        _NAMED["qwen2_5_vl"],
        "qwen2_5_omni_text",
        ("qwen2_5_omni_text",),
        "Qwen2_5OmniTextConfig",
        _d(3584, 28, 28, 32768, 1e6),
        source=_tf("qwen2_5_omni") + " (the thinker's decoder: Qwen2.5-VL's M-RoPE, "
        "mrope_section default [16, 24, 24])",
    ),
    _like(
        _NAMED["qwen2_5_vl"],
        "qwen2_5_omni_talker",
        ("qwen2_5_omni_talker",),
        "Qwen2_5OmniTalkerConfig",
        _d(3584, 28, 28, 32768, 1e6, head_dim=128),
        source=_tf("qwen2_5_omni") + " (the talker's decoder: Qwen2_5OmniRotaryEmbedding, "
        "blocked M-RoPE sections, default [16, 24, 24])",
    ),
    _like(
        _NAMED["qwen2_5_vl"],
        "paddleocr_vl_text",
        ("paddleocr_vl_text",),
        "PaddleOCRTextConfig",
        _d(1024, 16, 18, 131072, 500000.0, head_dim=128),
        source=_tf("paddleocr_vl") + " (blocked M-RoPE sections, default [16, 24, 24])",
    ),
    _like(
        _NAMED["qwen3_vl"],
        "cosmos3_edge_text",
        ("cosmos3_edge_text",),
        "Cosmos3EdgeTextConfig",
        _d(2048, 16, 28, 131072, 1e8, head_dim=128),
        source=_tf("cosmos3_edge") + " (interleaved M-RoPE sections, default [24, 20, 20])",
    ),
    _like(
        _NAMED["modernbert-decoder"],
        "gemma3n_text",
        ("gemma3n_text",),
        "Gemma3nTextConfig",
        _d(
            2048,
            8,
            35,
            32768,
            1e6,
            head_dim=256,
            rope_parameters={
                "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
                "full_attention": {"rope_type": "default", "rope_theta": 1000000.0},
            },
        ),
        source=_tf("gemma3n") + " (a rope per layer type, Gemma 3's)",
    ),
    _like(
        _NAMED["lfm2"],
        "lfm3",
        ("lfm3",),
        "Lfm3Config",
        _d(
            2048,
            16,
            24,
            128000,
            1e6,
            head_dim=128,
            rope_parameters={
                "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
                "full_attention": {
                    "rope_type": "proportional",
                    "rope_theta": 1000000.0,
                    "partial_rotary_factor": 0.5,
                },
            },
        ),
        honours_partial=True,
        source=_tf("lfm3") + " (conv layers have no attention; a rope per attention layer "
        "type, proportional on full attention)",
    ),
    _like(
        _NAMED["modernbert-decoder"],
        "ultrabert",
        ("ultrabert",),
        "UltrabertConfig",
        _d(
            4096,
            32,
            32,
            32768,
            10000.0,
            head_dim=128,
            rope_parameters={
                "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
                "full_attention": {"rope_type": "default", "rope_theta": 2560000.0},
            },
        ),
        source=_tf("ultrabert") + " (a rope per layer type)",
    ),
    _like(
        _NAMED["modernbert-decoder"],
        "beam",
        ("beam",),
        "BeamConfig",
        _d(
            5120,
            48,
            52,
            8192,
            1e4,
            head_dim=128,
            rope_parameters={
                "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
                "full_attention": None,
            },
        ),
        source=_tf("beam") + " (sliding layers rotate; full_attention's null rope is NoPE)",
    ),
    _like(
        _NAMED["qwen3_vl_moe"],
        "qwen3_omni_moe_text",
        ("qwen3_omni_moe_text",),
        "Qwen3OmniMoeTextConfig",
        _d(2048, 28, 28, 32768, 1e6),
        source=_tf("qwen3_omni_moe") + " (the thinker's decoder: interleaved M-RoPE sections, "
        "default [24, 20, 20])",
    ),
    _like(
        _NAMED["qwen3_vl_moe"],
        "qwen3_omni_moe_talker_text",
        ("qwen3_omni_moe_talker_text",),
        "Qwen3OmniMoeTalkerTextConfig",
        _d(1024, 16, 20, 32768, 1e4),
        needs=(
            Need(
                ("shared_expert_intermediate_size",),
                "Qwen3OmniMoeTalkerTextSparseMoeBlock",
                "every Qwen3OmniMoeTalkerDecoderLayer builds it with a shared expert of "
                "config.shared_expert_intermediate_size, an AttributeError where the file leaves "
                "it out: Qwen3OmniMoeTalkerTextConfig has no such field",
            ),
        ),
        source=_tf("qwen3_omni_moe") + " (the talker's decoder: "
        "Qwen3OmniMoeThinkerTextRotaryEmbedding, interleaved M-RoPE sections, default "
        "[24, 20, 20])",
    ),
    _like(
        _NAMED["gemma4"],
        "gemma4_unified_text",
        ("gemma4_unified_text",),
        "Gemma4UnifiedTextConfig",
        _d(2304, 8, 30, 262144, 1e4, head_dim=256),
        source=_tf("gemma4_unified")
        + " (Gemma 4's layers: per_layer_config head widths, a rope per "
        "layer type)",
    ),
    _like(
        _NAMED["gemma4"],
        "diffusion_gemma_text",
        ("diffusion_gemma_text",),
        "DiffusionGemmaTextConfig",
        _d(2304, 8, 30, 131072, 1e4, head_dim=256),
        needs=(
            Need(
                ("num_experts", "moe_intermediate_size"),
                "DiffusionGemmaEncoderTextLayer",
                "every layer builds DiffusionGemmaTextRouter, nn.Linear(hidden_size, "
                "num_experts), and DiffusionGemmaTextExperts, torch.empty(num_experts, "
                "2 * moe_intermediate_size, hidden_size): a TypeError on the class defaults None",
            ),
        ),
        source=_tf("diffusion_gemma")
        + " (Gemma 4's layers: per_layer_config head widths, a rope per "
        "layer type)",
    ),
    _like(
        _NAMED["gemma4"],
        "embedding_gemma2_text",
        ("embedding_gemma2_text",),
        "EmbeddingGemma2TextConfig",
        _d(512, 4, 24, 262144, 1e4, head_dim=256),
        source=_tf("embedding_gemma2")
        + " (Gemma 4's layers: per_layer_config head widths, a rope per "
        "layer type)",
    ),
    _like(
        _LLAMA,
        "lara_mini",
        ("lara_mini",),
        "LaraMiniConfig",
        _d(1024, 16, 34, 131072, 1e4, head_dim=128),
        layers="linear_sliding_rope",
        source=_tf("lara_mini") + " (RoPE on the sliding-window layers only; full attention "
        "is NoPE; linear-attention layers have none)",
    ),
    _like(
        _NEOX,
        "zaya",
        ("zaya",),
        "ZayaConfig",
        _d(
            2048,
            8,
            40,
            131072,
            1e4,
            head_dim=128,
            rope_parameters={
                "hybrid": {
                    "rope_type": "default",
                    "rope_theta": 5000000.0,
                    "partial_rotary_factor": 0.5,
                },
                "hybrid_sliding": {
                    "rope_type": "default",
                    "rope_theta": 10000.0,
                    "partial_rotary_factor": 0.5,
                },
            },
        ),
        layers="zaya",
        source=_tf("zaya") + " (a rope per layer type, the leading half of each head)",
    ),
    _like(
        _LLAMA,
        "molmo2_text",
        ("molmo2_text",),
        "Molmo2TextConfig",
        _d(4096, 32, 36, 36864, 1e4, head_dim=128),
        layers="molmo2",
        rope_form="molmo2",
        source=_tf("molmo2") + " (the rope dict on rope_scaling_layers, the same base "
        "unscaled elsewhere)",
    ),
    _like(
        _LLAMA,
        "unlimited_ocr_text",
        ("unlimited_ocr_text",),
        "UnlimitedOcrTextConfig",
        _d(1280, 10, 12, 32768, 1e4, head_dim=128),
        layers="reference_sliding",
        source=_tf("unlimited_ocr") + " (one rope on every layer, reference-window layers too)",
    ),
    _like(
        _LLAMA,
        "falcon_h1",
        ("falcon_h1",),
        "FalconH1Config",
        _d(4096, 32, 32, 8192, 1e4),
        source=_tf("falcon_h1") + " (every layer runs attention beside its Mamba 2 mixer)",
    ),
    _like(
        _NEOX,
        "recurrent_gemma",
        ("recurrent_gemma",),
        "RecurrentGemmaConfig",
        {  # RecurrentGemmaConfig has no max_position_embeddings
            "hidden_size": 2560,
            "num_attention_heads": 10,
            "num_hidden_layers": 26,
            "rope_theta": 1e4,
            "head_dim": 256,
            "partial_rotary_factor": 0.5,
            "block_types": ("recurrent", "recurrent", "attention"),
        },
        layers="block_types",
        source=_tf("recurrent_gemma") + " (local attention blocks rotate the leading half of "
        "each head; recurrent blocks have no attention)",
    ),
    _like(
        _NEOX,
        "bamba",
        ("bamba",),
        "BambaConfig",
        _d(4096, 32, 32, 262144, 1e4, partial_rotary_factor=0.5, attn_layer_indices=None),
        layers="attn_layer_indices",
        source=_tf("bamba") + " (attention at attn_layer_indices rotates the leading half of "
        "each head; Mamba 2 layers elsewhere)",
    ),
    _like(
        _LLAMA,
        "granite_swa",
        ("granite_swa",),
        "GraniteSWAConfig",
        _d(2560, 20, 24, 8192, 1e4),
        layers="layer_rope_theta",
        rope_form="layer_rope_theta",
        source=_tf("granite_swa") + " (one rotary module per distinct layer_rope_theta; 0 is NoPE)",
    ),
    _like(
        _LLAMA,
        "granitemoe_swa",
        ("granitemoe_swa",),
        "GraniteMoeSWAConfig",
        _d(4096, 32, 32, 2048, 1e4),
        layers="layer_rope_theta",
        rope_form="layer_rope_theta",
        source=_tf("granitemoe_swa") + " (one rotary module per distinct layer_rope_theta; 0 "
        "is NoPE)",
    ),
    _like(
        _LLAMA,
        "muse_spark_text",
        ("muse_spark_text",),
        "MuseSparkTextConfig",
        _d(
            8192,
            128,
            62,
            1048576,
            1e4,
            head_dim=64,
            rope_parameters={"rope_type": "default", "rope_theta": 500000.0},
        ),
        layers="layer_theta_nope",
        source=_tf("muse_spark") + " (layer_rope_theta 0 is NoPE; one rotary module)",
    ),
    _like(
        _LLAMA,
        "muse_glimmer_text",
        ("muse_glimmer_text",),
        "MuseGlimmerTextConfig",
        _d(6656, 32, 52, 131072, 1e4, head_dim=128),
        layers="layer_theta_nope",
        source=_tf("muse_glimmer") + " (layer_rope_theta 0 is NoPE; one rotary module)",
    ),
)

FAMILIES: Mapping[str, Family] = MappingProxyType(
    {model_type: fam for fam in _RECORDS for model_type in (fam.name, *fam.model_types)}
)
"""``model_type`` (or GGUF architecture) -> :class:`Family`."""

# Wrapper model type -> (its text decoder's model type, whether the type is fixed by the
# wrapper's config class). From each transformers 5.24 config class's
# ``sub_configs_defaults["text_config"]``: a fixed class reads ``text_config`` as its own type
# whatever the dict says; otherwise the dict's ``model_type`` wins and this is the default.
# Only wrappers whose text decoders can have RoPE are listed (CLIP-style text towers are not).
WRAPPERS: Mapping[str, tuple[str, bool]] = MappingProxyType(
    {
        "apertus1p5": ("apertus1p5_text", True),
        "aria": ("aria_text", True),
        "granite4_vision": ("granite4_vision_text", True),
        "granite_docling": ("granite_docling_text", True),
        "hyperclovax_vision_v2": ("hyperclovax", False),
        "audioflamingo3": ("qwen2", False),
        "aya_vision": ("cohere2", False),
        "cohere2_vision": ("cohere2", False),
        "cosmos3_omni": ("qwen3_vl_text", False),
        "deepseek_vl": ("llama", False),
        "deepseek_vl_hybrid": ("llama", False),
        "diffusion_gemma": ("diffusion_gemma_text", True),
        "cosmos3_edge": ("cosmos3_edge_text", True),
        "deepseek_ocr2": ("deepseek_ocr2_text", True),
        "dots3_note": ("dots3_note_text", True),
        "emu3": ("emu3_text_model", True),
        "embedding_gemma2": ("embedding_gemma2_text", True),
        "ernie4_5_vl_moe": ("ernie4_5_vl_moe_text", True),
        "exaone4_5": ("exaone4", False),
        "fast_vlm": ("qwen2", False),
        "fun_asr_nano": ("qwen3", False),
        "fuyu": ("persimmon", False),
        "gemma3": ("gemma3_text", True),
        "gemma3n": ("gemma3n_text", True),
        "gemma4": ("gemma4_text", True),
        "gemma4_assistant": ("gemma4_text", False),
        "step3p7": ("step3p5", True),
        "gemma4_unified": ("gemma4_unified_text", True),
        "gemma4_unified_assistant": ("gemma4_unified_text", False),
        "glm46v": ("glm4v_text", False),
        "glm4v": ("glm4v_text", True),
        "glm4v_moe": ("glm4v_moe_text", True),
        "glm5_next": ("glm5_next_text", True),
        "glm_image": ("glm_image_text", True),
        "glm_ocr": ("glm_ocr_text", True),
        "glmasr": ("llama", False),
        "glmga": ("glm4v_text", False),
        "got_ocr2": ("qwen2", False),
        "granite_speech": ("granite", False),
        "granite_speech_plus": ("granite", False),
        "hunyuan_vl": ("hunyuan_vl_text", True),
        "hy_v4_vl": ("hy_v4_vl_text", True),
        "idefics2": ("mistral", False),
        "idefics3": ("llama", False),
        "internvl": ("qwen2", False),
        "janus": ("llama", False),
        "jev": ("qwen3_5_text", False),
        "kimi_k25": ("deepseek_v3", False),
        "lfm2_vl": ("lfm2", False),
        "lfm3_vl": ("lfm3", False),
        "lighton_ocr": ("qwen3", False),
        "llama4": ("llama4_text", True),
        "llava": ("llama", False),
        "llava_next": ("llama", False),
        "llava_next_video": ("llama", False),
        "llava_onevision": ("qwen2", False),
        "minicpm_ocr": ("qwen3_5_text", False),
        "minicpmv4_6": ("qwen3_5_text", False),
        "minicpmv4_7": ("qwen3_5_text", False),
        "minimax_m3_vl": ("minimax_m3_vl_text", True),
        "mistral3": ("mistral", False),
        "mllama": ("mllama_text_model", True),
        "muse_glimmer": ("muse_glimmer_text", True),
        "muse_spark": ("muse_spark_text", True),
        "modernvbert": ("modernbert", False),
        "molmo2": ("molmo2_text", True),
        "moss_transcribe_diarize": ("qwen3", False),
        "musicflamingo": ("qwen2", False),
        "omniasr": ("llama", False),
        "ovis2": ("qwen2", False),
        "paddleocr_vl": ("paddleocr_vl_text", True),
        "paligemma": ("gemma", False),
        "pe_audio": ("modernbert", False),
        "pe_audio_video": ("modernbert", False),
        "pe_video": ("modernbert", False),
        "perception_lm": ("llama", False),
        "pp_chart2table": ("qwen2", False),
        "qianfan_ocr": ("qwen3", False),
        "qwen2_5_omni_thinker": ("qwen2_5_omni_text", True),
        "qwen2_5_vl": ("qwen2_5_vl_text", True),
        "qwen2_audio": ("qwen2", False),
        "qwen2_vl": ("qwen2_vl_text", True),
        "qwen3_5": ("qwen3_5_text", True),
        "qwen3_5_moe": ("qwen3_5_moe_text", True),
        "qwen3_asr": ("qwen3", False),
        "qwen3_omni_moe_thinker": ("qwen3_omni_moe_text", True),
        "qwen3_vl": ("qwen3_vl_text", True),
        "qwen3_vl_moe": ("qwen3_vl_moe_text", True),
        "qwen4_exp": ("qwen4_exp_text", True),
        "shieldgemma2": ("gemma3_text", False),
        "t5gemma2_encoder": ("t5gemma2_text", True),
        "ultravbert": ("ultrabert", False),
        "unlimited_ocr": ("unlimited_ocr_text", True),
        "smolvlm": ("llama", False),
        "vibevoice": ("qwen2", False),
        "vibevoice_asr": ("qwen2", False),
        "video_llama_3": ("qwen2", False),
        "video_llava": ("llama", False),
        "vipllava": ("llama", False),
        "voxtral": ("llama", False),
        "voxtral_realtime": ("voxtral_realtime_text", False),
    }
)

# Text types a wrapper's config class renames before reading (``__post_init__``).
WRAPPER_TEXT_ALIASES: Mapping[tuple[str, str], str] = MappingProxyType(
    {("exaone4_5", "exaone4_5_text"): "exaone4", ("kimi_k25", "kimi_k2"): "deepseek_v3"}
)

# Wrappers whose config class fills missing text_config keys from its own defaults
# (VoxtralConfig.__post_init__ merges sub_configs_defaults' init_kwargs into the dict).
WRAPPER_TEXT_DEFAULTS: Mapping[str, Mapping] = MappingProxyType(
    {
        "voxtral": ReadOnlyDict(
            {
                "hidden_size": 3072,
                "num_hidden_layers": 30,
                "max_position_embeddings": 131072,
                "rope_theta": 100000000.0,
                "head_dim": 128,
            }
        )
    }
)


TOWER_HINT = (
    "if it is a vision or audio tower, its RoPE turns over patches or frames, not tokens: "
    "refimpl.multiaxis.apply_rope_2d (patch grids), refimpl.audio.frame_times (audio frames)"
)
"""What a refusal of an unknown model type adds: the APIs for RoPE over positions that are not
tokens."""

# Model types transformers runs with a RoPE refimpl's specs cannot express: refused with what
# the model does and the refimpl API that serves it, where one does.
UNSUPPORTED: Mapping[str, str] = MappingProxyType(
    {
        "ernie4_5_vl_moe_text": (
            "Ernie 4.5 VL's text decoder permutes its frequencies before rotating (the "
            "height/width pairs take the even, then the odd frequencies of the leading "
            "sections; time keeps the trailing ones: transformers 5.24 "
            "Ernie4_5_VLMoeTextRotaryEmbedding, mrope_section default [22, 22, 20]), so even "
            "text positions see a permuted RoPE; a RopeSpec's frequencies are its method's in "
            "order, and refimpl's M-RoPE layouts (refimpl.multiaxis.mrope_cos_sin) do not "
            "express the permutation"
        ),
        "qwen2_5_omni_dit": (
            "Qwen2.5-Omni's token-to-wave DiT rotates the first attention head only, after "
            "reordering its adjacent pairs into halves (transformers 5.24 DiTAttention: "
            "query[:, :1] through deinterleave_head_dim and apply_rotary_pos_emb) over mel "
            "frames (positions in seconds: refimpl.audio.frame_times); a RopeSpec rotates "
            "every head alike"
        ),
        "hrm_text": (
            "HRM-Text applies its two stacks of num_layers_per_stack blocks H_cycles x "
            "(L_cycles + 1) times, and its config class rewrites num_hidden_layers from the "
            "per-stack count to that number of attention calls on first construction, so a "
            "file's num_hidden_layers means either; every call rotates with the one RoPE of "
            "its rope fields"
        ),
        "mistral_large4_text": (
            "Mistral Large 4's text decoder multiplies its inverse frequencies by exp(alpha), "
            "alpha a learned per-frequency parameter of the checkpoint (transformers 5.24 "
            "MistralLarge4TextRotaryEmbedding: inv_freq * self.alpha.exp(), alpha an "
            "nn.Parameter), and scales queries by learned per-head scale * log(position + 1) + "
            "bias (MistralLarge4TextSoftmaxScaling); neither is in the config, so its RoPE "
            "cannot be read from the config alone"
        ),
        "nanochat": (
            "NanoChat's rotate_half returns (x2, -x1), so each pair turns by -theta_i * p "
            "(clockwise: transformers 5.24 modeling_nanochat), the transpose of RoPE's "
            "rotation; a RopeSpec turns by +theta_i * p and has no direction, so refimpl "
            "would give the wrong sign of every sine"
        ),
    }
)


# Model types for which transformers 5.24 ships a config class and no model: neither a
# modeling file nor a model class in its auto mapping (MODEL_MAPPING_NAMES), so there is no code
# that fixes which layers rotate, over what width and pairing; refused with what is missing.
NO_MODEL: Mapping[str, str] = MappingProxyType(
    {
        "layoutxlm": (
            "LayoutXLMConfig (a LayoutLMv2Config) serves LayoutXLM's processor and tokenizer; "
            "the model LayoutXLM's weights load into is LayoutLMv2's (model_type layoutlmv2), "
            "which has no RoPE"
        ),
        "pp_chart2table_vision": (
            "PPChart2TableVisionConfig is the vision encoder's part of pp_chart2table, whose "
            "auto mapping runs GotOcr2ForConditionalGeneration (its vision encoder, "
            "got_ocr2_vision, has no RoPE); read a pp_chart2table file whole: its text_config "
            "is the Qwen2 decoder"
        ),
    }
)


# Model types whose rotary module turns over positions that are not tokens: refimpl's schedule
# reader describes text decoders; these build a RopeSpec and give it their own positions.
TOWERS: Mapping[str, str] = MappingProxyType(
    {
        "neucodec": "audio frames (NeuCodec's codec transformer)",
        "pe_audio_encoder": "audio frames (Perception Encoder audio)",
        "pe_video_encoder": "video frames (Perception Encoder video)",
        "pe_audio_video_encoder": "audio and video frames (Perception Encoder audio-video)",
        "timesfm2_5": "time-series patches (TimesFM 2.5)",
        "nemotron3_5_transcribe_word_timestamp": (
            "audio frames and word positions (Nemotron 3.5 Transcribe's word-timestamp head)"
        ),
        "efficientloftr": "image feature grids (EfficientLoFTR's 2-D RoPE)",
        "moonshine": (
            "audio frames in its encoder and tokens in its decoder (Moonshine: each has its "
            "own encoder_* and decoder_* keys)"
        ),
    }
)


# Model types transformers 5.24 builds without a rotary embedding (no *RotaryEmbedding class and
# no rotary code in models/<name>/modeling_<name>.py), by the position encoding their modeling
# file uses (found by tools/model_coverage.py; "no position encoding": none in the file, as in
# convolutional, recurrent and state-space models or ones that import their layers). A config
# of one of these types is refused naming it: there is no RoPE to read.
NO_ROPE: Mapping[str, tuple] = MappingProxyType(
    {
        "learned absolute positions": (
            "albert",
            "align_text_model",
            "align_vision_model",
            "altclip_text_model",
            "altclip_vision_model",
            "audio-spectrogram-transformer",
            "audioflamingo3_encoder",
            "bart",
            "bert",
            "bert-generation",
            "big_bird",
            "bigbird_pegasus",
            "biogpt",
            "blenderbot",
            "blenderbot-small",
            "blip_2_qformer",
            "blip_2_vision_model",
            "blip_text_model",
            "blip_vision_model",
            "bridgetower_text_model",
            "bridgetower_vision_model",
            "camembert",
            "canine",
            "chinese_clip_text_model",
            "chinese_clip_vision_model",
            "clip_text_model",
            "clip_vision_model",
            "clvp_decoder",
            "clipseg_text_model",
            "clipseg_vision_model",
            "convbert",
            "data2vec-audio",
            "data2vec-text",
            "deberta",
            "deberta-v2",
            "decision_transformer",
            "deit",
            "dinov2",
            "dinov2_with_registers",
            "dpt",
            "edgetam_mask_decoder",
            "edgetam_prompt_encoder",
            "electra",
            "eomt",
            "ernie",
            "flava_image_codebook",
            "flava_image_model",
            "flava_multimodal_model",
            "flava_text_model",
            "fnet",
            "fun_asr_nano_encoder",
            "git",
            "git_vision_model",
            "got_ocr2_vision",
            "gpt-sw3",
            "gpt2",
            "gpt_bigcode",
            "gpt_neo",
            "granite_speech5_encoder",
            "groupvit_text_model",
            "groupvit_vision_model",
            "hiera",
            "hubert",
            "ibert",
            "idefics2_perceiver",
            "idefics2_vision",
            "idefics3_vision",
            "ijepa",
            "imagegpt",
            "instructblip_qformer",
            "instructblip_vision_model",
            "instructblipvideo_qformer",
            "instructblipvideo_vision_model",
            "internvl_vision",
            "janus_vision_model",
            "janus_vqgan",
            "layoutlm",
            "led",
            "lilt",
            "longformer",
            "luke",
            "lxmert",
            "markuplm",
            "mask2former",
            "maskformer",
            "mbart",
            "megatron-bert",
            "metaclip_2_text_model",
            "metaclip_2_vision_model",
            "mgp-str",
            "minicpm_ocr_vision",
            "minicpmv4_6_vision",
            "mobilebert",
            "moss_transcribe_diarize_audio",
            "mra",
            "mvp",
            "nystromformer",
            "omniasr_audio",
            "oneformer",
            "openai-gpt",
            "opt",
            "ovis2_vision",
            "owlv2_text_model",
            "owlv2_vision_model",
            "owlvit_text_model",
            "owlvit_vision_model",
            "perceiver",
            "pixio",
            "plbart",
            "pp_formulanet_text",
            "pp_formulanet_vision",
            "pvt",
            "qianfan_ocr_vision",
            "qwen2_audio_encoder",
            "radio",
            "reformer",
            "rembert",
            "roberta",
            "roberta-prelayernorm",
            "roc_bert",
            "sam2_hiera_det_model",
            "sam2_mask_decoder",
            "sam2_prompt_encoder",
            "sam3_lite_text_detr_decoder",
            "sam3_lite_text_detr_encoder",
            "sam3_lite_text_geometry_encoder",
            "sam3_lite_text_mask_decoder",
            "sam3_lite_text_text_model",
            "sam3_tracker_mask_decoder",
            "sam3_tracker_prompt_encoder",
            "sam_hq_mask_decoder",
            "sam_hq_prompt_encoder",
            "sam_hq_vision_model",
            "sam_mask_decoder",
            "sam_prompt_encoder",
            "sam_vision_model",
            "seggpt",
            "sew",
            "sew-d",
            "siglip2_text_model",
            "siglip2_vision_model",
            "siglip_text_model",
            "siglip_vision_model",
            "slanext_vision",
            "smolvlm_vision",
            "splinter",
            "squeezebert",
            "tapas",
            "timesformer",
            "timm_wrapper",
            "tvp",
            "unispeech",
            "unispeech-sat",
            "videomt",
            "vilt",
            "visual_bert",
            "vit",
            "vit_msn",
            "vitdet",
            "vitpose_backbone",
            "vivit",
            "voxtral_encoder",
            "wav2vec2",
            "xclip_text_model",
            "xclip_vision_model",
            "xlm-roberta",
            "xlm-roberta-xl",
            "xmod",
            "yolos",
            "yoso",
            "zamba",
        ),
        "sinusoidal absolute positions": (
            "aimv2_text_model",
            "aimv2_vision_model",
            "autoformer",
            "bros",
            "canary_decoder",
            "cohere_asr",
            "ctrl",
            "distilbert",
            "flaubert",
            "florence_vision",
            "fsmt",
            "informer",
            "kosmos_2_5_text_model",
            "kosmos_2_5_vision_model",
            "kosmos_2_text_model",
            "kosmos_2_vision_model",
            "lw_detr_vit",
            "m2m_100",
            "marian",
            "musicgen_decoder",
            "musicgen_melody_decoder",
            "nllb-moe",
            "pegasus",
            "pegasus_x",
            "qwen3_asr_encoder",
            "rf_detr_dinov2",
            "seamless_m4t_v2",
            "speech_to_text",
            "time_series_transformer",
            "timesfm",
            "tipsv2_text_model",
            "tipsv2_vision_model",
            "trocr",
            "videomae",
            "videoprism_text_model",
            "videoprism_vision_model",
            "vit_mae",
            "whisper",
            "xglm",
            "xlm",
        ),
        "relative sinusoidal positions": (
            "fastspeech2_conformer",
            "fastspeech2_conformer_hifigan",
            "funnel",
            "nemotron_asr_streaming_encoder",
            "parakeet_encoder",
            "xlnet",
        ),
        "ALiBi": (
            "bloom",
            "mpt",
        ),
        "relative position buckets": (
            "cpmant",
            "layoutlmv2",
            "layoutlmv3",
            "longt5",
            "mpnet",
            "mt5",
            "pix2struct_text_model",
            "pix2struct_vision_model",
            "pop2piano",
            "prophetnet",
            "switch_transformers",
            "t5",
            "udop",
            "umt5",
            "wavlm",
        ),
        "relative position bias tables": (
            "beit",
            "clap_audio_model",
            "clap_text_model",
            "data2vec-vision",
            "donut-swin",
            "maskformer-swin",
            "speecht5",
            "speecht5_hifigan",
            "swin",
            "swin2sr",
            "swinv2",
            "vits",
        ),
        "no position encoding": (
            "bit",
            "convnext",
            "convnextv2",
            "cvt",
            "dac",
            "dinat",
            "dinov3_convnext",
            "dpr",
            "efficientnet",
            "encodec",
            "falcon_mamba",
            "focalnet",
            "glpn",
            "granite_speech_encoder",
            "granite_speech_plus_encoder",
            "hgnet_v2",
            "inkling2_loop_text",
            "inkling_audio",
            "inkling_text",
            "inkling_vision",
            "jamba",
            "levit",
            "mamba",
            "mamba2",
            "mobilenet_v1",
            "mobilenet_v2",
            "mobilevit",
            "mobilevitv2",
            "nemotron_h",
            "patchtsmixer",
            "patchtst",
            "poolformer",
            "pp_lcnet",
            "pp_lcnet_v3",
            "pp_lcnet_v4",
            "pp_ocrv5_mobile_rec",
            "pp_ocrv5_server_rec",
            "pp_ocrv6_small_rec",
            "pvt_v2",
            "regnet",
            "resnet",
            "rt_detr_resnet",
            "rwkv",
            "segformer",
            "superglue",
            "superpoint",
            "swiftformer",
            "textnet",
            "timm_backbone",
            "univnet",
            "uvdoc_backbone",
            "vibevoice_acoustic_tokenizer",
            "vibevoice_acoustic_tokenizer_decoder",
            "vibevoice_acoustic_tokenizer_encoder",
            "vibevoice_diffusion",
            "wavtokenizer",
            "wavtokenizer_encoder",
            "xlstm",
        ),
    }
)
NO_ROPE_APIS: Mapping[str, str] = MappingProxyType(
    {
        "sinusoidal absolute positions": "refimpl.absolute.sinusoidal",
        "ALiBi": "refimpl.bias.alibi_bias",
        "relative position buckets": "refimpl.bias.t5_bias",
    }
)
_NO_ROPE_KIND = {t: kind for kind, types in NO_ROPE.items() for t in types}


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


# --------------------------------------------------------------------------- which record


@dataclasses.dataclass(frozen=True)
class Reading:
    """Which family reads a config, and why.

    Attributes
    ----------
    family : Family or None
        None: the generic reading (one RoPE for every layer, half pairing).
    cfg : ConfigView
        The decoder's config (a wrapper's ``text_config``) through the family's defaults.
    model_type : str or None
        The decoder's model type as read.
    reason : str
        One line: the family and the key that chose it, or why the generic reading applies.
    """

    family: Family | None
    cfg: ConfigView
    model_type: str | None
    reason: str


def _text_of(cfg: dict, notes: list) -> tuple[dict, str | None, str]:
    """The decoder's config of a (multimodal) config: ``(dict, model type, how found)``."""
    top = cfg.get("model_type")
    if top is not None and not isinstance(top, str):
        raise TypeError(f"config key model_type must be a string, got {top!r}")
    text = cfg.get("text_config")
    if text is None:
        return cfg, top, f"model_type {top!r}" if top is not None else "no model_type"
    if not isinstance(text, dict):
        raise TypeError(f"config key text_config must be an object, got {text!r}")
    inner = text.get("model_type")
    if inner is not None and not isinstance(inner, str):
        raise TypeError(f"config key text_config.model_type must be a string, got {inner!r}")
    wrapper = WRAPPERS.get(top)
    out = dict(text)
    if wrapper is not None:
        default, fixed = wrapper
        kind = inner if inner is not None and not fixed else default
        alias = WRAPPER_TEXT_ALIASES.get((top, kind))
        how = f"text_config of {top!r} ({'its fixed text type' if fixed else 'model_type'} "
        how += f"{kind!r}" + (f", which {top!r} maps to {alias!r}" if alias else "") + ")"
        if inner is None and not fixed:
            how = f"text_config of {top!r} (no model_type: the wrapper's default {kind!r})"
        kind = alias or kind
        for key, value in WRAPPER_TEXT_DEFAULTS.get(top, {}).items():
            if key not in out:
                out[key] = value
                notes.append(f"no text_config.{key}: {value!r} ({top}'s text default)")
    elif top in FAMILIES:
        raise ValueError(
            f"config key text_config beside model_type {top!r}: {top!r} is a decoder "
            f"({FAMILIES[top].config_class}), whose class ignores text_config and builds the "
            "decoder from the top-level keys and its defaults; a multimodal file names its "
            "wrapper's model_type at top level (refimpl.families.WRAPPERS), a decoder's file "
            "has no text_config"
        )
    elif inner is not None:
        kind, how = inner, f"text_config model_type {inner!r} (wrapper {top!r})"
    else:
        raise ValueError(
            f"config has a text_config without model_type and its model_type {top!r} is not "
            "a wrapper refimpl knows: the decoder's family is unknown; give "
            "text_config.model_type"
        )
    ignored = sorted(k for k in ("rope_parameters", "rope_scaling", "rope_theta") if k in cfg)
    if ignored:
        notes.append(
            f"top-level {ignored} ignored: transformers 5.x reads the decoder's RoPE from "
            "text_config when the config has one"
        )
    out["model_type"] = kind
    notes.append("RoPE read from text_config")
    return out, kind, how


def resolve(cfg: dict, notes: list) -> Reading:
    """The family that reads a config, and its view of the decoder's keys.

    Parameters
    ----------
    cfg : dict
        A loaded ``config.json``.
    notes : list of str
        Notes (defaults applied, keys ignored) are appended here.

    Returns
    -------
    Reading

    Raises
    ------
    ValueError
        An unknown ``model_type`` whose config carries a marker of per-layer or non-RoPE
        structure (:data:`MARKERS`; the message names the key), a ``text_config`` of an
        unknown type, or JSON nested too deeply.

    Examples
    --------
    >>> r = resolve({"model_type": "gemma3", "text_config": {"head_dim": 128}}, [])
    >>> r.family.name, r.cfg["head_dim"], r.cfg["rope_local_base_freq"]
    ('gemma3', 128, 10000.0)
    >>> r.reason.split(": ")[1]
    'record gemma3 (Gemma3TextConfig)'
    >>> resolve({"hidden_size": 64, "num_attention_heads": 4}, []).family is None
    True
    """
    text, model_type, how = _text_of(cfg, notes)
    if model_type in UNSUPPORTED:
        raise ValueError(f"model_type {model_type!r}: {UNSUPPORTED[model_type]}")
    if model_type in TOWERS:
        raise ValueError(
            f"model_type {model_type!r} is not a text decoder: its RoPE turns over "
            f"{TOWERS[model_type]}, not token positions; build a refimpl.RopeSpec of its head "
            "width and base and give it those positions (audio frames in seconds: "
            "refimpl.audio.frame_times; patch grids: refimpl.multiaxis.apply_rope_2d)"
        )
    if model_type in NO_MODEL:
        raise ValueError(
            f"model_type {model_type!r}: transformers 5.24 ships a config class for it but no "
            "model class (no modeling file, nothing in its auto mapping; "
            f"refimpl.families.NO_MODEL), so no code says how it rotates: {NO_MODEL[model_type]}"
        )
    kind = _NO_ROPE_KIND.get(model_type)
    if kind is not None:
        api = NO_ROPE_APIS.get(kind)
        raise ValueError(
            f"model_type {model_type!r} has no RoPE: transformers 5.24 builds it without a "
            f"rotary embedding (refimpl.families.NO_ROPE); its modeling file's positions: {kind}"
            + (f" (refimpl: {api})" if api else "")
        )
    family = family_for(model_type)
    heads = ("num_attention_heads", "n_heads", "n_head", "num_heads")
    if family is None and "text_config" not in cfg and not any(k in text for k in heads):
        composed = sorted(
            k
            for k, v in text.items()
            if isinstance(v, dict) and isinstance(v.get("model_type"), str)
        )
        if composed:
            raise ValueError(
                f"model_type {model_type!r} composes other models (config keys {composed}, each "
                "a model's config), and refimpl reads one decoder's config: give "
                "refimpl.rope_schedule the part that holds the decoder, e.g. "
                f"config[{composed[0]!r}]"
            )
    if family is not None:
        for alias, key in family.aliases.items():
            if alias not in text and key in text:
                text[alias] = text[key]
                notes.append(f"{key} read as {alias} ({family.config_class}'s attribute_map)")
        for flag, why in family.refuse_when.items():
            if text.get(flag):
                raise ValueError(f"model_type {model_type!r} with config key {flag} true: {why}")
        for need in family.needs:
            missing = need.missing(text, family.defaults)
            if missing:
                one = len(missing) == 1
                raise ValueError(
                    f"{model_type}: config key{'' if one else 's'} {', '.join(missing)} "
                    f"{'is' if one else 'are'} null or missing here, and transformers 5.24's "
                    f"{need.builder} needs {'it' if one else 'them'} ({need.reads}), so the "
                    f"model cannot be built on this config; give {', '.join(missing)}"
                )
        view = ConfigView(text, family.defaults, family.config_class, notes)
        reason = f"{how}: record {family.name} ({family.config_class})"
        return Reading(family, view, model_type, reason)
    if "text_config" in cfg and model_type is not None:
        raise ValueError(
            f"text_config has model_type {model_type!r}, which is not in refimpl's family "
            "table: its layers, widths and pairing are unknown"
        )
    marker = marker_of(text)
    which = "no model_type" if model_type is None else f"model_type {model_type!r}"
    if marker is not None:
        api = next((v for k, v in MARKER_APIS.items() if marker == f"config key {k}"), None)
        serve = (
            f"; a vision or audio encoder's RoPE is served by {api}" if api else f"; {TOWER_HINT}"
        )
        raise ValueError(
            f"{which} is not in refimpl's family table and the config has {marker}, a sign of "
            "per-layer or non-RoPE structure that the generic reading (one RoPE for every "
            f"layer) would silently get wrong; refimpl needs a family record for it{serve}"
        )
    notes.append(
        f"{which} (not in refimpl's family table): generic reading (head_dim or "
        "hidden_size // num_attention_heads, half pairing, leading slice, every layer alike)"
    )
    reason = (
        f"generic reading: {which} is not in refimpl's family table and the config has none "
        "of the markers of per-layer or non-RoPE structure (refimpl.families.MARKERS)"
    )
    return Reading(None, ConfigView(text, {}, "", notes), model_type, reason)
