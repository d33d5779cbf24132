"""Model families: what a config's ``model_type`` says about its rotary embedding.

A ``config.json`` does not say everything about a model's RoPE: where the rotated width comes
from, how features are paired, which layers rotate at all, what a key the file omits defaults
to and how queries are rescaled by position are written in each model's code. This module
holds those facts as declarative records, one :class:`Family` per model family, each checked
against the modeling and configuration files of the pinned transformers (5.24,
``transformers/models/<name>/``) or, for families that ship their own code, against that code
(named in the record). :mod:`refimpl.config` reads a config in one pass through its record:

1. :func:`resolve` finds the decoder's config (a wrapper's ``text_config``, through
   :data:`WRAPPERS`), its record, and why; an unknown ``model_type`` is read as one RoPE for
   every layer only when the config carries none of the :data:`MARKERS` of other structure;
2. :class:`ConfigView` reads keys through the record's ``defaults`` (its config class's
   defaults), noting each default used, as a diff-style released file relies on them;
3. :func:`rope_dicts` turns the rope fields into one rope dict per layer kind
   (:data:`ROPE_FORMS`: the 4.x forms of Gemma 3, OLMo 3 and DeepSeek-V4 as their config
   classes convert them);
4. :func:`layer_plan` lists every layer by the record's rule (:data:`LAYER_RULES`);
5. per layer, :func:`rotary_widths` (:data:`WIDTH_SOURCES`), :func:`pairing_and_order`,
   :func:`query_scaling` and each :class:`Submodule` (an MLA indexer's own RoPE).

An explicit config flag (``rope_interleave``, ``partial_rotary_factor``, ``rotary_dim``,
``layer_types``, ``no_rope_layers``) wins over the family default, as it does in the model code.
Adding a family is one record (and its tests).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterator, Mapping
from types import MappingProxyType

import numpy as np

from ._checks import MAX_DIM, as_positions, check_flag, check_int, check_real

__all__ = [
    "FAMILIES",
    "LAYER_RULES",
    "MARKERS",
    "QUERY_SCALINGS",
    "ROPE_FORMS",
    "WIDTH_SOURCES",
    "WRAPPERS",
    "ConfigView",
    "Family",
    "LayerPlan",
    "QueryScaling",
    "ReadOnlyDict",
    "Reading",
    "Submodule",
    "Widths",
    "family_for",
    "layer_plan",
    "query_scaling",
    "resolve",
    "rope_dicts",
    "rotary_widths",
]

WIDTH_SOURCES = ("head_dim", "qk_rope_head_dim", "rotary_dim", "kv_channels", "zamba2")
LAYER_RULES = (
    "uniform",
    "gemma2",
    "gemma3",
    "gemma4",
    "no_rope_layers",
    "sliding_rope_only",
    "exaone4",
    "sliding_full",
    "linear_attention",
    "deepseek_v4",
    "indexed",
    "kimi_linear",
    "conv_hybrid",
    "zamba2",
)
ROPE_FORMS = ("flat", "gemma3", "olmo3", "deepseek_v4")
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
    # not RoPE at all
    "position_embedding_type",
    "alibi",
    "use_alibi",
)
MARKER_PREFIXES = (
    "index_",
    "mrope_",
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
rope dict per layer type, ``mrope_*`` inside the rope dict and a ``text_config`` of a type
refimpl does not know."""


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
                if isinstance(inner, str) and inner.startswith("mrope_"):
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
    rotary_key : str
        Config key of its rotated width.
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
    note : str
        What peers do differently (with sources); shown by ``describe``.
    """

    name: str
    head_dim_key: str
    rotary_key: str
    pairing: str = "half"
    output_order: str = "same"
    rotary_slice: str = "leading"
    layers_key: str | None = None
    runs_on: tuple = ()
    layer_types: tuple | None = None
    rope_key: str | None = None
    note: str = ""


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
        "of each indexer head half-split, with the attention's cos/sin; DeepSeek's reference "
        "inference/model.py (deepseek-ai/DeepSeek-V3.2-Exp) applies the indexer's RoPE "
        "non-interleaved since its 2025-11 fix (interleaved before it, which the attention "
        "uses); vLLM (vllm/model_executor/models/deepseek_v2.py, Indexer) and SGLang "
        "(nsa_indexer.py) rotate it half-split (is_neox_style=True)"
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
    note=(
        "transformers 5.24 (GlmMoeDsaIndexer) rotates the leading qk_rope_head_dim features "
        "of each indexer head with apply_rotary_pos_emb_interleave (adjacent pairs in, half "
        "order out), unlike DeepSeek-V3.2's half-split indexer; layers whose indexer_types "
        "entry is 'shared' have no indexer and reuse the previous layer's top-k; vLLM reads "
        "the indexer pairing from the config key indexer_rope_interleave"
    ),
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

_RECORDS = (
    # Half pairing, leading slice, one rope for every layer.
    _LLAMA,
    _like(_LLAMA, "mistral", ("mistral",), "MistralConfig", _d(4096, 32, 32, 131072, 1e4)),
    _like(_LLAMA, "mixtral", ("mixtral",), "MixtralConfig", _d(4096, 32, 32, 131072, 1e6)),
    _like(_LLAMA, "ministral", ("ministral",), "MinistralConfig", _d(4096, 32, 32, 131072, 1e4)),
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
    _like(_LLAMA, "falcon", ("falcon",), "FalconConfig", _d(4544, 71, 32, 2048, 1e4)),
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
        source=_tf("hunyuan_v1_dense") + " (dynamic with alpha is the static ntk_alpha base)",
    ),
    _like(
        _LLAMA,
        "hunyuan_v1_moe",
        ("hunyuan_v1_moe", "hunyuan-moe"),
        "HunYuanMoEV1Config",
        _d(4096, 32, 32, 2048, 1e4),
        dynamic_alpha=True,
        source=_tf("hunyuan_v1_moe") + " (dynamic with alpha is the static ntk_alpha base)",
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
        _d(4096, 32, 40, 32768, 1e4, partial_rotary_factor=0.5),
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
        _d(6144, 64, 28, 131072, 1e7, qk_rope_head_dim=64),
        width="qk_rope_head_dim",
        pairing="interleaved",
        output_order="half",
        query=("mla_mscale",),
        source=_tf("longcat_flash") + " (always apply_rotary_pos_emb_interleave)",
    ),
    Family(
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
    ),
    Family(
        "glm_moe_dsa",
        ("glm_moe_dsa",),
        "GlmMoeDsaConfig",
        _d(6144, 64, 78, 202752, 1e4, qk_rope_head_dim=64, index_head_dim=128),
        width="qk_rope_head_dim",
        pairing="interleaved",
        output_order="half",
        layers="indexed",
        query=("mla_mscale",),
        submodules=(_INDEXER_GLM,),
        source=_tf("glm_moe_dsa") + " (MLA rope head: apply_rotary_pos_emb_interleave; "
        "GlmMoeDsaIndexer on 'full' indexer layers)",
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
        "audioflamingo3": ("qwen2", False),
        "aya_vision": ("cohere2", False),
        "cohere2_vision": ("cohere2", False),
        "cosmos3_omni": ("qwen3_vl_text", False),
        "deepseek_vl": ("llama", False),
        "deepseek_vl_hybrid": ("llama", False),
        "emu3": ("emu3_text_model", True),
        "ernie4_5_vl_moe": ("ernie4_5_vl_moe_text", True),
        "exaone4_5": ("exaone4", False),
        "fast_vlm": ("qwen2", False),
        "fun_asr_nano": ("qwen3", False),
        "fuyu": ("persimmon", False),
        "gemma3": ("gemma3_text", True),
        "gemma3n": ("gemma3n_text", True),
        "gemma4": ("gemma4_text", True),
        "gemma4_assistant": ("gemma4_text", False),
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
        "mistral3": ("mistral", False),
        "mllama": ("mllama_text_model", True),
        "molmo2": ("molmo2_text", True),
        "moss_transcribe_diarize": ("qwen3", False),
        "musicflamingo": ("qwen2", False),
        "omniasr": ("llama", False),
        "ovis2": ("qwen2", False),
        "paddleocr_vl": ("paddleocr_vl_text", True),
        "paligemma": ("gemma", False),
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
        "shieldgemma2": ("gemma3_text", False),
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
    >>> r.family.name, r.reason
    ("gemma3", "family gemma3: text_config of 'gemma3' (its fixed text type 'gemma3_text')")
    >>> resolve({"hidden_size": 64, "num_attention_heads": 4}, []).family is None
    True
    """
    text, model_type, how = _text_of(cfg, notes)
    family = family_for(model_type)
    if family is not None:
        view = ConfigView(text, family.defaults, family.config_class, notes)
        return Reading(family, view, model_type, f"family {family.name}: {how}")
    if "text_config" in cfg and model_type is not None:
        raise ValueError(
            f"text_config has model_type {model_type!r}, which is not in refimpl's family "
            "table: its layers, widths and pairing are unknown"
        )
    marker = marker_of(text)
    which = "no model_type" if model_type is None else f"model_type {model_type!r}"
    if marker is not None:
        raise ValueError(
            f"{which} is not in refimpl's family table and the config has {marker}, a sign of "
            "per-layer or non-RoPE structure that the generic reading (one RoPE for every "
            "layer) would silently get wrong; refimpl needs a family record for it"
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


# --------------------------------------------------------------------------- rope dicts


def _object(value, key: str):
    if value is not None and not isinstance(value, dict):
        raise TypeError(f"config key {key} must be an object, got {type(value).__name__}")
    return value


def _nested(rp) -> bool:
    return bool(rp) and all(isinstance(v, dict) for v in rp.values())


def _flat_dicts(cfg: ConfigView, rp, rs, notes: list) -> dict:
    if _nested(rp):
        for key, sub in rp.items():
            _object(sub, f"rope_parameters.{key}")
        if rs:
            raise ValueError("config has rope_scaling beside a nested rope_parameters")
        return {key: dict(sub) for key, sub in rp.items()}
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


_ROPE_FORM_FUNCTIONS: Mapping[str, Callable] = MappingProxyType(
    {
        "flat": _flat_dicts,
        "gemma3": _gemma3_dicts,
        "olmo3": _olmo3_dicts,
        "deepseek_v4": _deepseek_v4_dicts,
    }
)


def rope_dicts(family: Family | None, cfg: ConfigView, notes: list) -> dict:
    """The rope dict(s) of a config: ``{None: flat}`` or ``{layer type or label: dict}``.

    Examples
    --------
    >>> r = resolve({"model_type": "gemma3_text", "rope_theta": 1e6}, [])
    >>> sorted(rope_dicts(r.family, r.cfg, []))
    ['full_attention', 'sliding_attention']
    """
    rp = _object(cfg.given("rope_parameters"), "rope_parameters")
    rs = _object(cfg.given("rope_scaling"), "rope_scaling")
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


def _mla_width(family: Family, cfg: Mapping, notes: list) -> Widths:
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
        A per-layer head width (Gemma 4's full-attention layers) that replaces the config's.

    Examples
    --------
    >>> rotary_widths(family_for("deepseek_v3"), {"qk_rope_head_dim": 64,
    ...               "qk_nope_head_dim": 128, "head_dim": 192}, None, [])
    Widths(head_dim=64, rotary_dim=64, rotary_offset=0)
    >>> rotary_widths(family_for("glm"), {"head_dim": 128}, 0.5, [])
    Widths(head_dim=128, rotary_dim=64, rotary_offset=0)
    """
    source = family.width if family is not None else "head_dim"
    if source == "qk_rope_head_dim":
        return _mla_width(family, cfg, notes)
    if source == "zamba2":
        return _zamba2_width(cfg, notes)
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
    config's head width (Gemma 4 full-attention layers); ``submodules`` names the
    :class:`Submodule` s that run at this layer.
    """

    index: int
    layer_type: str
    rope_key: str
    uses_rope: bool = True
    head_dim: int | None = None
    submodules: tuple = ()


def _num_layers(cfg: Mapping) -> int | None:
    for key in ("num_hidden_layers", "n_layer", "num_layers"):
        n = config_int(cfg, key, minimum=1, maximum=MAX_LAYERS)
        if n is not None:
            return n
    return None


def _pattern_types(n: int, pattern: int, hit: str, other: str) -> list[str]:
    """``other`` where ``(i + 1) % pattern`` is non-zero, ``hit`` at every ``pattern``-th."""
    return [other if (i + 1) % pattern else hit for i in range(n)]


def _given_types(cfg: Mapping, key: str, n: int | None, notes: list) -> list[str] | None:
    """A per-layer list of strings (legacy names renamed as transformers does), or None."""
    types = cfg.get(key)
    if types is None:
        return None
    if not isinstance(types, list) or not all(isinstance(t, str) for t in types):
        raise TypeError(f"config key {key} must be a list of strings")
    if n is not None and len(types) != n:
        raise ValueError(f"config key {key} has {len(types)} entries but num_hidden_layers={n}")
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


def _int_key(key: str) -> int:
    try:
        return int(key)
    except ValueError:
        raise ValueError(f"config key per_layer_config has a non-integer layer {key!r}") from None


_LAYER_RULE_FUNCTIONS: Mapping[str, Callable] = MappingProxyType(
    {
        "uniform": _rule_uniform,
        "gemma2": _rule_gemma2,
        "gemma3": _rule_gemma3,
        "gemma4": _rule_gemma4,
        "no_rope_layers": _rule_no_rope_layers,
        "sliding_rope_only": _rule_sliding_rope_only,
        "exaone4": _rule_exaone4,
        "sliding_full": _rule_sliding_full,
        "linear_attention": _rule_linear_attention,
        "deepseek_v4": _rule_deepseek_v4,
        "indexed": _rule_indexed,
        "kimi_linear": _rule_kimi_linear,
        "conv_hybrid": _rule_conv_hybrid,
        "zamba2": _rule_zamba2,
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
    >>> r = resolve({"model_type": "llama4_text", "num_hidden_layers": 4}, [])
    >>> [p.uses_rope for p in layer_plan(r.family, r.cfg, [])]
    [True, True, True, False]
    """
    n = _num_layers(cfg)
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
