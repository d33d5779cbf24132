"""Model coverage: every model type of the pinned transformers against refimpl's schedule reader.

For each ``model_type`` of transformers' ``CONFIG_MAPPING_NAMES`` (a wrapper judged through its
``text_config``) this builds the config class's defaults, and every stored config of
``tests/parity/configs/`` of that type, finds the decoder's rotary module in
``transformers.models.<x>.modeling_<x>``, builds only that module, runs its forward (a
module that cannot run on the config is never matched) and compares it with
:func:`refimpl.rope_schedule` layer by layer: rotated width, pairing and output order, inverse
frequencies (float64: transformers' own init function run with float64 arithmetic; where that
fails, the float32 buffer within ``F32_INV_FREQ_RTOL``), attention scaling and which layers
rotate; the position row that drives each pair (one token at rows t, h, w = 1, 2, 3 through the
module, against refimpl's M-RoPE layout; a refusal of M-RoPE sections is true where those
rows turn the two features of a pair by different angles); and, for a model with a
sparse-attention indexer, the layers that hold one (the text model built on the meta device)
and the rotation its indexer class applies (its rotation function run on a probe with the
module's tables). The text
model itself (the class transformers' auto mapping builds for the type; for a wrapper's decoder,
the class of its modeling file that takes the decoder's config) is built on the meta device
too, within the type's time box: a model that transformers cannot build from the config is
never matched, and a refusal that says the model cannot be built is checked the same way. A
type without a
rotary module is read from its modeling source as learned absolute, sinusoidal, ALiBi,
relative-bucket or no positions.

Statuses: ``matched`` (refimpl's schedule equals transformers'), ``refused`` (refimpl raises
ValueError and transformers does something a schedule does not express), ``wrongly_refused``
(refimpl refuses a model it could express), ``silent`` (refimpl returns a schedule that differs
from transformers') and ``failed`` (the tool could not build the type). Only the first two are
final; the others are written under ``"open"`` so that the test fails on them.

Run ``make model-coverage`` (writes ``tests/parity/model_coverage.json`` and
``tests/parity/model_coverage_configs.json``); ``--only TYPE ...`` judges some types and prints
them without writing.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import hashlib
import importlib
import importlib.util
import inspect
import json
import pathlib
import re
import signal
import sys
import time
import types
import warnings

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
CONFIGS = ROOT / "tests" / "parity" / "configs"
TABLE = ROOT / "tests" / "parity" / "model_coverage.json"
CLASS_CONFIGS = ROOT / "tests" / "parity" / "model_coverage_configs.json"
TRANSFORMERS_VERSION = "5.24.0"
# what the table depends on besides transformers: the tool, the stored configs, the readers
HASHED_FILES = (
    "tools/model_coverage.py",
    "refimpl/families.py",
    "refimpl/family_rules.py",
    "refimpl/config.py",
)
FINAL = ("matched", "refused")
OPEN = ("wrongly_refused", "silent", "failed")
SECONDS_PER_TYPE = 60  # building one config class and one rotary module takes well under this
# float64 inverse frequencies from the same formula agree to a few units in the last place
# (numpy's and torch's pow are not correctly rounded): 2**-50 relative is 4 ulp.
F64_INV_FREQ_RTOL = 2.0**-50
# float32 buffers (where the float64 run fails): torch's float32 pow, the reciprocal and the
# division each round once, so 4 float32 ulp cover them.
F32_INV_FREQ_RTOL = 2.0**-21
SCALING_RTOL = 1e-6  # attention scaling: a Python float in both (float32 in a few models)

# words in a rotary class's name that mark a module over patches, frames or other
# non-token positions (vision, audio, speech, codec and time-series towers)
TOWER_WORDS = re.compile(
    r"(Vision|Visual|Audio|Image|Video|Patch|2D|Speech|Mel|DiT|Dit|Code2Wav|Token2Wav|Siglip|"
    r"Pixtral|Encoder|Codec|Wav|Spatial|Temporal|Frame|Conformer|ViT|Vit)(?![a-z])"
)


def tower_word(rotary_name: str, config) -> str | None:
    """A tower word in a rotary class's name beyond the model's own name (Mellum, Kyutai
    Speech-To-Text and Granite 4 Vision's text decoder keep theirs), or None."""
    own = type(config).__name__.removesuffix("Config")
    i = 0
    while i < min(len(own), len(rotary_name)) and own[i] == rotary_name[i]:
        i += 1
    m = TOWER_WORDS.search(rotary_name[i:])
    return None if m is None else m.group(1)


POSITION_KINDS = (
    # (regular expression over the modeling source, kind as refimpl.families.NO_ROPE names it)
    (r"alibi", "ALiBi"),
    (r"relative_attention_bias|relative_position_bucket", "relative position buckets"),
    (
        r"relative_position_bias_table|rel_pos_bias|relative_position_index",
        "relative position bias tables",
    ),
    (r"relative_positional|RelPositional|linear_pos\b", "relative sinusoidal positions"),
    (
        r"SinusoidalPositionalEmbedding|sinusoid|SinusoidsPositionEmbedding",
        "sinusoidal absolute positions",
    ),
    (
        r"position_embeddings|embed_positions|\bwpe\b|pos_embed|position_embedding|"
        r"positions_embed|PositionalEmbedding",
        "learned absolute positions",
    ),
)
# a call of rotary code that is not in a *RotaryEmbedding class (conformer and ViT variants,
# RoFormer); a definition that nothing calls (Jamba, Nemotron-H) or a comment is not one
ROTARY_CALL = re.compile(r"\w*(?:rotary|_rope|rope_)\w*\(", re.I)


def calls_rotary_code(source: str) -> bool:
    for line in source.splitlines():
        line = line.strip()
        if line.startswith(("#", "def ", "@")):
            continue
        if ROTARY_CALL.search(line.split("#")[0]):
            return True
    return False


# rotary code outside a *RotaryEmbedding class that the tool builds and compares: model type ->
# (module class, how to build it from the config, the attribute holding the rotation's flag)
SINUSOIDAL_ROTARY = {
    # RoFormerEncoder: RoFormerSinusoidalPositionalEmbedding(max_position_embeddings,
    # hidden_size // num_attention_heads), a sin | cos table that every self-attention layer
    # applies to adjacent pairs (apply_rotary_position_embeddings)
    "roformer": "RoFormerSinusoidalPositionalEmbedding",
}
# types whose modeling file holds rotary code that only another model of the file runs: model
# type -> (the positions its own model uses, where that is in the code)
ROTARY_ELSEWHERE = {
    "clvp_decoder": (
        "learned absolute positions",
        "ClvpDecoder adds position_embeds_layer; its ClvpDecoderLayer calls ClvpSelfAttention "
        "without rotary_pos_emb, which only ClvpEncoder builds",
    ),
}

# sub-model configs that are settings of the model itself, not other models
OWN_SUBCONFIGS = ("text_config", "attn_config")


# --------------------------------------------------------------------------- inputs


def input_hash() -> str:
    """sha256 over the tool, the stored configs and refimpl's family readers (path and bytes)."""
    paths = [ROOT / p for p in HASHED_FILES] + sorted(CONFIGS.glob("*.json"))
    h = hashlib.sha256()
    for path in paths:
        h.update(path.relative_to(ROOT).as_posix().encode() + b"\0")
        h.update(path.read_bytes() + b"\0")
    return h.hexdigest()


def stored_configs() -> dict:
    """model_type -> [(file name, config dict)] of tests/parity/configs."""
    out: dict = {}
    for path in sorted(CONFIGS.glob("*.json")):
        cfg = json.loads(path.read_text())
        out.setdefault(cfg.get("model_type"), []).append((path.name, cfg))
    return out


def reduced(cfg: dict) -> dict:
    """A wrapper's config without its non-text sub-configs (vision, audio, ...), which
    refimpl's reader never reads beside a text_config: what the table stores."""
    if "text_config" not in cfg:
        return cfg
    return {
        k: v
        for k, v in cfg.items()
        if not (k.endswith("_config") and k != "text_config" and isinstance(v, dict))
    }


def jsonable(value):
    return json.loads(json.dumps(value, default=str))


# --------------------------------------------------------------------------- fingerprints


def fingerprint(schedule) -> str:
    """A digest of a schedule: per run of alike layers, its width, pairing, output order,
    offset, base, attention scaling, frequencies (to 12 digits), its indexer's head and
    rotated width, offset, pairing and output order, and its M-RoPE layout and sections (the
    last two only where a layer has them, so that other schedules keep their digest)."""
    runs = []
    for first, last, layer in schedule.runs():
        spec = layer.spec
        if spec is None:
            runs.append([first, last, None])
            continue
        inv = np.asarray(spec.inv_freq, dtype=np.float64)
        sub = layer.indexer
        run = [
            first,
            last,
            spec.dim,
            spec.rotary_dim,
            spec.pairing,
            spec.output_order,
            spec.rotary_offset,
            f"{spec.base:.12g}",
            f"{float(spec.attention_scaling):.12g}",
            [f"{v:.12g}" for v in inv],
            None
            if sub is None
            else [sub.rotary_dim, sub.dim, sub.rotary_offset, sub.pairing, sub.output_order],
        ]
        if spec.mrope_section is not None:
            run.append([spec.mrope_layout, list(spec.mrope_section)])
        runs.append(run)
    text = json.dumps(runs, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def summary(schedule) -> str:
    """One line: layers, and per kind of layer its rotated / head width and pairing."""
    kinds: dict = {}
    for layer in schedule:
        spec = layer.spec
        key = (
            "NoPE"
            if spec is None
            else f"{spec.rotary_dim}/{spec.dim} {spec.pairing}"
            + (" (half-order out)" if spec.output_order == "half" else "")
        )
        kinds[key] = kinds.get(key, 0) + 1
    parts = [f"{n} x {k}" if len(kinds) > 1 else k for k, n in kinds.items()]
    return f"{len(schedule)} layers: " + ", ".join(parts)


def refimpl_reading(cfg: dict):
    """``("schedule", schedule)`` or ``("refused", message)``."""
    import refimpl

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return "schedule", refimpl.rope_schedule(cfg)
    except (ValueError, TypeError) as exc:
        return "refused", str(exc)


# --------------------------------------------------------------------------- transformers side


class _Timeout(Exception):
    pass


@contextlib.contextmanager
def time_box(seconds: int):
    def _raise(signum, frame):
        raise _Timeout(f"took longer than {seconds} s")

    old = signal.signal(signal.SIGALRM, _raise)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


@contextlib.contextmanager
def float64_arithmetic():
    """transformers' init functions write ``dtype=torch.float``: make that float64 for the
    time of one module's construction, so its frequencies come out in float64."""
    import torch

    old = torch.float
    torch.float = torch.float64
    try:
        yield
    finally:
        torch.float = old


def source_of(module) -> str:
    """A modeling module's source (read from its file when it could not be imported)."""
    return getattr(module, "__source_text__", None) or inspect.getsource(module)


def modeling_module(config):
    """``transformers.models.<x>.modeling_<x>`` of a config; where it imports a package that
    is not installed (torchaudio), a stand-in holding only its source text, provided that the
    text defines no rotary class (which would need the module itself)."""
    name = type(config).__module__.replace(".configuration_", ".modeling_")
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name == name:
            borrowed = borrowed_modeling(config)
            if borrowed is not None:
                return borrowed
            raise ModuleNotFoundError(
                f"transformers {TRANSFORMERS_VERSION} ships a config class for this type but no "
                f"model ({name} does not exist and MODEL_MAPPING_NAMES maps no model class "
                "to it)"
            ) from None
        spec = importlib.util.find_spec(name)
        text = pathlib.Path(spec.origin).read_text() if spec and spec.origin else ""
        if not text or re.search(r"class \w+RotaryEmbedding", text):
            raise
        stand_in = types.ModuleType(name)
        stand_in.__source_text__ = text
        return stand_in


def borrowed_modeling(config):
    """The modeling module of the model class that transformers' auto mapping gives a type
    that ships a config class only (EXAONE and InternLM 3 run LlamaModel, Sarvam's types
    DeepseekV3Model and Glm4MoeModel), or None where the mapping gives it no model."""
    import transformers
    from transformers.models.auto.modeling_auto import MODEL_MAPPING_NAMES

    cls_name = MODEL_MAPPING_NAMES.get(config.model_type)
    cls = getattr(transformers, cls_name, None) if isinstance(cls_name, str) else None
    if cls is None:
        return None
    return importlib.import_module(cls.__module__)


def rotary_classes(module) -> list:
    return [
        obj
        for name, obj in vars(module).items()
        if inspect.isclass(obj) and name.endswith("RotaryEmbedding")
    ]


def text_rotary(module, config):
    """The rotary class the decoder of ``config`` builds, or None (and the candidates)."""
    classes = rotary_classes(module)
    if not classes:
        return None, []
    source = source_of(module)
    by_name = {c.__name__: c for c in classes}
    users = []
    for obj in vars(module).values():
        if not inspect.isclass(obj) or getattr(obj, "config_class", None) is not type(config):
            continue
        try:
            text = inspect.getsource(obj)
        except (OSError, TypeError):
            continue
        users += [n for n in re.findall(r"(\w+RotaryEmbedding)\(", text) if n in by_name]
    users = list(dict.fromkeys(users))
    if len(users) == 1:
        return by_name[users[0]], classes
    tokens = [c for c in classes if not tower_word(c.__name__, config)] or classes
    used = [c for c in tokens if re.search(rf"\b{c.__name__}\(", source)]
    pick = used or tokens
    if len(pick) == 1:
        return pick[0], classes
    text_named = [c for c in pick if "Text" in c.__name__]
    if len(text_named) == 1:
        return text_named[0], classes
    if pick:
        # the shortest name is the family's own (Foo over FooDynamicNTK...)
        return min(pick, key=lambda c: len(c.__name__)), classes
    return None, classes


def composed_of(config) -> list[str]:
    """The config attributes that hold other models' configs (an encoder-decoder, a
    retrieval model, a detector's backbone)."""
    from transformers import PretrainedConfig

    return sorted(
        k
        for k, v in vars(config).items()
        if isinstance(v, PretrainedConfig) and k not in OWN_SUBCONFIGS
    )


def position_kind(module) -> str:
    """What a modeling file without a rotary module uses for positions (the first of
    POSITION_KINDS its source names; none of them: no positions in attention)."""
    source = source_of(module)
    if calls_rotary_code(source):
        return "rotary code outside a RotaryEmbedding class"
    for pattern, kind in POSITION_KINDS:
        if re.search(pattern, source):
            return kind
    return "no position encoding"


def build_rotary(cls, config, float64: bool):
    ctx = float64_arithmetic() if float64 else contextlib.nullcontext()
    with ctx, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return cls(config=config)
        except TypeError:
            return cls(config)


def build_rotary_unscaled(cls, config):
    with float64_arithmetic(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return cls(config, scaled=False)


def forward_failure(rot_cls, config) -> str | None:
    """Why transformers' rotary module cannot run on ``config`` (None: a forward ran)."""
    import torch

    try:
        module = build_rotary(rot_cls, config, float64=False)
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"[:300]
    params = inspect.signature(module.forward).parameters
    x = torch.zeros(1, 4, 8)
    kwargs = {}
    if "layer_type" in params:
        keys = [k for k in rotary_tables(module) if k is not None]
        kwargs["layer_type"] = keys[0] if keys else None
    error = None
    for ids in (torch.arange(4)[None], torch.arange(4)[None, None].expand(3, 1, 4)):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                module(x, ids, **kwargs)
            return None
        except Exception as exc:
            error = error or f"{type(exc).__name__}: {exc}"[:300]
    return error


def rotary_tables(module) -> dict:
    """layer type (None: every layer) -> (inv_freq float64 array, attention scaling)."""
    out = {}
    for name, buf in list(module.named_buffers(recurse=False)) + [
        (n, getattr(module, n)) for n in dir(module) if n.endswith("inv_freq")
    ]:
        if not name.endswith("inv_freq") or "original" in name or buf is None:
            continue
        key = None if name == "inv_freq" else name[: -len("_inv_freq")]
        scale = getattr(
            module, "attention_scaling" if key is None else f"{key}_attention_scaling", 1.0
        )
        if isinstance(scale, dict):
            scale = scale.get(key, 1.0)
        out[key] = (buf.detach().to("cpu").double().numpy().copy(), float(scale))
    if not out and hasattr(module, "embed_positions"):  # GPT-J keeps a sin|cos table
        table = module.embed_positions.detach().double().numpy()
        half = table.shape[-1] // 2
        out[None] = (np.arcsin(table[1, :half]), 1.0)
    return out


def pairing_of(modeling, config) -> tuple[str, str] | None:
    """Pairing and output order of the decoder's rotation (None: not told by the source)."""
    source = source_of(modeling)
    if "def apply_rotary_pos_emb_interleave" in source:
        if "rope_interleave" in source:
            flag = getattr(config, "rope_interleave", None)
            if flag is None:
                return None
            return ("interleaved", "half") if flag else ("half", "same")
        return "interleaved", "half"
    if "def rotate_half_llm" in source:
        return "interleaved", "same"
    m = re.search(r"def rotate_half\(x\):(.*?)\n(?:def |class |@)", source, re.S)
    if m and "::2" in m.group(1):
        return "interleaved", "same"
    if "def rotate_every_two" in source and "rotate_half" not in source:
        return "interleaved", "same"
    if m:
        return "half", "same"
    return None


def rope_layers(modeling, config, tables: dict, rot_cls=None) -> list | None:
    """Per layer, the key of ``tables`` it rotates with, or False (no RoPE); None when the
    config gives no layer count. ``layer_rope_theta`` (0: NoPE) adds one table per base where
    the model builds one rotary module per base (``rotary_embs``)."""
    n = getattr(config, "num_hidden_layers", None)
    if not isinstance(n, int):
        return None
    scaled = vars(config).get("rope_scaling_layers")
    if isinstance(scaled, list) and "self.rotary_emb_unscaled" in source_of(modeling):
        # Molmo 2: a second, unscaled module for the layers outside rope_scaling_layers
        inv, scale = rotary_tables(rot_cls(config, scaled=False))[None]
        inv64 = rotary_tables(build_rotary_unscaled(rot_cls, config))[None][0]
        tables["unscaled"] = (inv, scale, None if np.array_equal(inv64, inv) else inv64)
        return [None if i in scaled else "unscaled" for i in range(n)]
    thetas = vars(config).get("layer_rope_theta")
    if isinstance(thetas, list) and len(thetas) == n:
        if "self.rotary_embs" not in source_of(modeling):
            return [None if t else False for t in thetas]
        for t in sorted({t for t in thetas if t}):
            other = copy.deepcopy(config)
            other.rope_parameters = {**config.rope_parameters, "rope_theta": t}
            inv, scale = rotary_tables(build_rotary(rot_cls, other, float64=False))[None]
            inv64 = rotary_tables(build_rotary(rot_cls, other, float64=True))[None][0]
            tables[f"theta {t}"] = (inv, scale, None if np.array_equal(inv64, inv) else inv64)
        return [f"theta {t}" if t else False for t in thetas]
    types = getattr(config, "layer_types", None)
    if not isinstance(types, (list, tuple)) or len(types) != n:
        # hybrids name their layers in layers_block_type (Zamba2, Bamba, RecurrentGemma)
        types = getattr(config, "layers_block_type", None)
    if not isinstance(types, (list, tuple)) or len(types) != n:
        types = [None] * n
    source = source_of(modeling)
    if "if alibi is None:" in source and vars(config).get("alibi"):
        return [False] * n  # Falcon-RW: ALiBi instead of RoPE
    only = re.search(r'position_embeddings if layer_type == "(\w+)" else None', source)
    # a guard on the window around the rotation itself (Cohere 2, Flint), not another use of
    # the window (Dory trims its looped cache under the same test)
    sliding_guard = re.search(
        r"if self\.sliding_window is not None:\n(?:[^\n]*\n)?[^\n]*apply_rotary", source
    )
    no_rope = getattr(config, "no_rope_layers", None)
    out = []
    if None not in tables and not any(t in tables for t in types):
        return None  # the rotary module's keys are not layer types: layers not mapped
    for i, t in enumerate(types):
        if None in tables:
            key = None
        elif t in tables:
            key = t
        else:
            out.append(False)
            continue
        uses = True
        attends = (
            t is None
            or t == "hybrid"
            or ("attention" in t and not t.startswith("linear"))
            or t.endswith("_sparse")  # MiniMax-M3's sparse attention layers
        )
        if not attends and None in tables:
            uses = False  # conv, mamba, linear-attention layers (Zamba2's hybrid ones attend)
        if isinstance(no_rope, (list, tuple)) and len(no_rope) == n and "use_rope" in source:
            uses = uses and bool(no_rope[i])
        if only:  # the model passes its tables to one layer type only (Lara Mini)
            uses = uses and t == only.group(1)
        cross = getattr(config, "cross_attention_layers", None)
        if isinstance(cross, (list, tuple)) and i in cross:
            uses = False  # cross-attention layers attend to image states without RoPE
        if "if self.config.use_mem_rope" in source:
            uses = uses and bool(getattr(config, "use_mem_rope", False))
        if "if self.is_local_attention:" in source:
            uses = uses and t == "sliding_attention"
        if "if self.sliding_window is not None or self.force_rope" in source:
            mlp = vars(config).get("mlp_layer_types") or [None] * n
            force = (
                mlp[i] == "dense" and vars(config).get("prefix_dense_sliding_window_pattern") == 1
            )
            window = vars(config).get("sliding_window") is not None
            uses = uses and ((t == "sliding_attention" and window) or force)
        elif "if self.sliding_window is None or self.is_sliding" in source:
            uses = uses and (
                getattr(config, "sliding_window", None) is None or t == "sliding_attention"
            )
        elif sliding_guard and t is not None:
            uses = uses and t == "sliding_attention"
        out.append(key if uses else False)
    return out


# --------------------------------------------------------------------------- judging


def _relative(ours: np.ndarray, theirs: np.ndarray) -> float:
    scale = np.where(theirs == 0, 1.0, np.abs(theirs))
    return float(np.max(np.abs(ours - theirs) / scale, initial=0.0))


def _closest(spec, tables: dict):
    if spec is None:
        return next(iter(tables))
    ours = np.asarray(spec.inv_freq, dtype=np.float64)
    fits = [k for k, v in tables.items() if v[0].shape == ours.shape]
    return min(fits, key=lambda k: _relative(ours, tables[k][0])) if fits else next(iter(tables))


def compare(schedule, tables: dict, layers: list | None, pairing) -> tuple[list[str], str]:
    """Differences between refimpl's schedule and transformers' module (empty: matched), and
    how the frequencies agreed (``float64`` or ``float32``)."""
    diffs, agreement = [], "float64"
    if layers is not None and len(schedule) != len(layers) and len(schedule) != 1:
        diffs.append(f"{len(schedule)} layers in refimpl, {len(layers)} in the config")
        return diffs, agreement
    if layers is None or (len(schedule) == 1 and len(layers) != 1):
        if None in tables or len(tables) == 1:
            layers = [next(iter(tables))] * len(schedule)
        else:  # unmapped: each rotating layer must equal one of the module's tables
            layers = [_closest(layer.spec, tables) for layer in schedule]
    for layer, key in zip(schedule, layers, strict=True):
        spec = layer.spec
        if key is False:
            if spec is not None:
                diffs.append(f"layer {layer.index}: refimpl rotates, transformers does not")
            continue
        if spec is None:
            diffs.append(f"layer {layer.index}: transformers rotates, refimpl does not")
            continue
        inv32, scale, inv64 = tables[key]
        ours = np.asarray(spec.inv_freq, dtype=np.float64)
        if ours.shape != inv32.shape:
            diffs.append(
                f"layer {layer.index}: rotates {2 * ours.size} features in refimpl, "
                f"{2 * inv32.size} in transformers"
            )
            continue
        if inv64 is not None and _relative(ours, inv64) <= F64_INV_FREQ_RTOL:
            pass
        elif _relative(ours, inv32) <= F32_INV_FREQ_RTOL:
            agreement = "float32"
        else:
            rel = _relative(ours, inv32)
            diffs.append(f"layer {layer.index}: inv_freq differs (max relative {rel:.3g})")
        if abs(spec.attention_scaling - scale) > SCALING_RTOL * max(1.0, abs(scale)):
            diffs.append(
                f"layer {layer.index}: attention scaling {spec.attention_scaling} in refimpl, "
                f"{scale} in transformers"
            )
        if pairing is not None and (spec.pairing, spec.output_order) != pairing:
            diffs.append(
                f"layer {layer.index}: pairing {spec.pairing}/{spec.output_order} in refimpl, "
                f"{pairing[0]}/{pairing[1]} in transformers"
            )
        if len(diffs) > 4:
            break
    return diffs, agreement


TOWER_KEYS = (
    "patch_size",
    "image_size",
    "num_mel_bins",
    "sampling_rate",
    "num_channels",
    "feature_size",
    "num_feat_extract_layers",
)
TOWER_TYPES = re.compile(
    r"vision|audio|speech|encoder|wav2vec|conformer|sapiens|parakeet|mel|seamless|lightglue"
)


def tower_reason(config, rotary_cls) -> str | None:
    """Why a config's RoPE turns over positions that are not tokens (None: it does not)."""
    if rotary_cls is not None and tower_word(rotary_cls.__name__, config):
        return f"its rotary module {rotary_cls.__name__} turns over non-token positions"
    keys = [k for k in TOWER_KEYS if k in vars(config)]
    if keys and (not vars(config).get("vocab_size") or TOWER_TYPES.search(config.model_type)):
        return f"{config.model_type} is an encoder over patches or frames (config keys {keys})"
    return None


def verdict(result: dict, got, diffs: list, agreement: str) -> dict:
    """``result`` judged from the comparison: ``silent`` with the differences, or ``matched``
    with the schedule's fingerprint; ``inv_freq`` says in which precision the frequencies agreed."""
    if diffs:
        result.update(status="silent", why="; ".join(diffs))
    else:
        result.update(status="matched", fingerprint=fingerprint(got), summary=summary(got))
    result["inv_freq"] = agreement
    return result


def refusal(result: dict, got: str, true: bool, why: str) -> dict:
    """``result`` with refimpl's refusal ``got`` recorded: ``refused`` when ``true`` (the tool saw
    transformers do what a schedule does not express), else ``wrongly_refused`` with ``why``."""
    result.update(status="refused" if true else "wrongly_refused", reason=got, api=api_of(got))
    if not true:
        result["why"] = why
    return result


# --------------------------------------------------------------------------- multi-axis rows

# one token at (t, h, w) = (1, 2, 3): every angle p * inv_freq stays below pi (inv_freq <= 1),
# so atan2 of the module's sin and cos (scale-free) over inv_freq gives the row each pair reads
PROBE_ROWS = (1, 2, 3)
# a pair's recovered position is an integer within float32 rounding of the angle (~1e-7)
PROBE_ROW_TOLERANCE = 1e-3


def _halves(table: np.ndarray, pairs: int) -> np.ndarray | None:
    """The per-pair half of a module's cos or sin output (cat or repeat_interleave form)."""
    if table.shape[-1] == pairs:
        return table
    if table.shape[-1] != 2 * pairs:
        return None
    if np.array_equal(table[..., :pairs], table[..., pairs:]):
        return table[..., :pairs]
    if np.array_equal(table[..., 0::2], table[..., 1::2]):
        return table[..., 0::2]
    return None


def module_rows(module, key, inv: np.ndarray) -> tuple[int, np.ndarray] | str | None:
    """``(rows, axis)``: the number of position rows transformers' rotary module combines
    and, per rotated pair, the row (0-based) that drives it (-1 where the pair has no
    frequency); None for a module that takes one row (given several it broadcasts them, or
    refuses them); a string where its output cannot be read."""
    import torch

    params = inspect.signature(module.forward).parameters
    kwargs = {"layer_type": key} if "layer_type" in params and key is not None else {}
    for rows in (3, 2, 4):
        ids = torch.tensor([[[p]] for p in (*PROBE_ROWS, 4)[:rows]])  # (rows, 1, 1)
        try:
            with torch.no_grad(), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                out = module(torch.zeros(1, 1, 8), ids, **kwargs)
        except Exception:
            continue
        cos, sin = (out.real, out.imag) if torch.is_tensor(out) else out
        if tuple(cos.shape[:-1]) != (1, 1):
            continue  # one row per position: the rows were broadcast, not combined
        c = _halves(cos[0, 0].double().numpy(), inv.size)
        s = _halves(sin[0, 0].double().numpy(), inv.size)
        if c is None or s is None:
            if cos.shape[-1] == 2 * inv.size:
                return (
                    f"fed {rows} position rows, the two features of a pair turn by different "
                    "angles (not one rotation per pair)"
                )
            return f"its {rows}-row output of width {cos.shape[-1]} is not {inv.size} pairs"
        with np.errstate(divide="ignore", invalid="ignore"):
            pos = np.arctan2(s, c) / inv
        axis = np.full(inv.size, -1, dtype=np.int64)
        live = inv > 0
        near = np.rint(pos[live])
        if np.any(np.abs(pos[live] - near) > PROBE_ROW_TOLERANCE) or not set(near) <= set(
            range(1, rows + 1)
        ):
            return f"its {rows}-row output does not read one row per pair"
        axis[live] = near.astype(np.int64) - 1
        return rows, axis
    return None


def unreadable_rows(rot_cls, config) -> str | None:
    """Why the rows transformers' rotary module combines cannot be read as one position row
    per pair (a pair whose two features turn by different angles), or None."""
    try:
        module = build_rotary(rot_cls, config, float64=False)
    except Exception:
        return None
    for key, (inv, _) in rotary_tables(module).items():
        got = module_rows(module, key, inv)
        if isinstance(got, str):
            return got
    return None


def mrope_diffs(module, tables: dict, schedule, layers) -> list[str]:
    """Differences in which position row drives each pair: transformers' module fed rows
    (t, h, w) = (1, 2, 3) against refimpl's M-RoPE layout (all t for a plain spec)."""
    from refimpl.multiaxis import mrope_axis_of_pair

    module_keys = set(rotary_tables(module))
    keys = layers if layers is not None else [next(iter(tables))] * len(schedule)
    if len(schedule) == 1 and len(keys) != 1:
        keys = keys[:1]
    diffs, seen = [], set()
    for layer, key in zip(schedule, keys, strict=False):
        spec = layer.spec
        if spec is None or key is False or key not in module_keys:
            continue
        memo = (key, spec.mrope_section, spec.mrope_layout, spec.rotary_dim)
        if memo in seen:
            continue
        seen.add(memo)
        got = module_rows(module, key, tables[key][0])
        ours = (
            np.zeros(spec.rotary_dim // 2, dtype=np.int64)
            if spec.mrope_section is None
            else mrope_axis_of_pair(spec.mrope_section, spec.mrope_layout)
        )
        where = f"layer {layer.index}"
        if isinstance(got, str):
            diffs.append(f"{where}: M-RoPE rows not read ({got})")
        elif got is None:
            if spec.mrope_section is not None:
                diffs.append(
                    f"{where}: refimpl reads M-RoPE sections {list(spec.mrope_section)}; "
                    "transformers' rotary module takes one row of positions"
                )
        else:
            rows, theirs = got
            live = theirs >= 0
            if rows == 3:
                same = ours.shape == theirs.shape and np.array_equal(ours[live], theirs[live])
            else:  # 2 or 4 rows: the pairs each row drives, up to the rows' names
                parts = {frozenset(np.flatnonzero(live & (theirs == r))) for r in range(rows)}
                mine = {frozenset(np.flatnonzero(live & (ours == r))) for r in range(4)}
                same = ours.shape == theirs.shape and parts - {frozenset()} == mine - {frozenset()}
            if not same:
                layout = (
                    "plain RoPE (every pair on t)"
                    if spec.mrope_section is None
                    else f"{spec.mrope_layout} {list(spec.mrope_section)}"
                )
                diffs.append(
                    f"{where}: position rows per pair differ: refimpl {layout}, transformers "
                    f"rows {''.join(str(a) if a >= 0 else '-' for a in theirs)}"
                )
    return diffs


# --------------------------------------------------------------------------- the text model


def text_model_class(modeling, config):
    """The model class transformers builds for ``config``: the one its auto mapping
    (``MODEL_MAPPING_NAMES``, what ``AutoModel.from_config`` builds) names for the type;
    otherwise the model class of the modeling file whose ``config_class`` it is (a wrapper's
    text decoder, which the mapping does not name: the class the wrapper's own model builds
    for its ``text_config``), or None."""
    import transformers
    from transformers.models.auto.modeling_auto import MODEL_MAPPING_NAMES

    name = MODEL_MAPPING_NAMES.get(config.model_type)
    mapped = getattr(transformers, name, None) if isinstance(name, str) else None
    if mapped is not None:
        return mapped
    # a sub-model's class need not end in Model (BltPatcher, DiaDecoder, T5Gemma2Encoder)
    fits = [
        obj
        for name, obj in vars(modeling).items()
        if inspect.isclass(obj)
        and issubclass(obj, transformers.PreTrainedModel)
        and "PreTrained" not in name
        and "For" not in name
        and getattr(obj, "config_class", None) is type(config)
    ]
    fits.sort(
        key=lambda c: (not c.__name__.endswith("Model"), "Text" not in c.__name__, len(c.__name__))
    )
    return fits[0] if fits else None


def build_on_meta(cls, config):
    """``cls(config)`` on the meta device (no memory, no weights)."""
    import torch

    with torch.device("meta"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return cls(copy.deepcopy(config))


def model_build_failure(modeling, config) -> str | None:
    """Why transformers cannot build the model of ``config`` (None: it builds)."""
    cls = text_model_class(modeling, config)
    if cls is None:
        return None
    try:
        build_on_meta(cls, config)
    except Exception as exc:
        return f"{cls.__name__}: {type(exc).__name__}: {exc}"[:300]
    return None


# --------------------------------------------------------------------------- indexers

INDEXER_PROBE_LENGTH = 9  # positions 0..8 through the indexer's rotation function
INDEXER_TOLERANCE = 1e-5  # float32 rotation of unit-size features at small angles


def indexer_layers(modeling, config) -> list[bool] | str:
    """Per layer, whether transformers' text model builds an indexer module there (built on
    the meta device), or why that could not be told."""
    cls = text_model_class(modeling, config)
    if cls is None:
        return "no text model class"
    try:
        model = build_on_meta(cls, config)
    except Exception as exc:
        return f"{cls.__name__} not built ({type(exc).__name__}: {str(exc)[:120]})"
    layers = getattr(model, "layers", None)
    if layers is None:
        return f"{cls.__name__} has no layers"
    return [any(type(m).__name__.endswith("Indexer") for m in layer.modules()) for layer in layers]


def indexer_source(modeling) -> tuple[str, str] | None:
    """``(class name, source)`` of the modeling file's text indexer class, or None."""
    for name, obj in vars(modeling).items():
        if inspect.isclass(obj) and name.endswith("Indexer"):
            try:
                return name, inspect.getsource(obj)
            except (OSError, TypeError):
                return None
    return None


def indexer_rotation(modeling, module, key, indexer) -> str | None:
    """Run the rotation function the indexer class calls on a probe, with the module's own
    cos/sin, and compare it with refimpl's indexer spec (None: equal). Where the class splits
    its heads before the call, the split (leading or trailing rope slice) is read from its
    source and the function gets the rotated slice only."""
    import torch

    found = indexer_source(modeling)
    if found is None:
        return "no indexer class in the modeling file"
    name, src = found
    calls = re.findall(r"(apply_rotary\w*)\(", src)
    if not calls or not hasattr(modeling, calls[0]):
        return f"{name} calls no rotation function the tool can run"
    fn = getattr(modeling, calls[0])
    split = re.search(r"(\w+)\s*,\s*(\w+)\s*=\s*torch\.split\(\s*q\s*,", src)
    n = INDEXER_PROBE_LENGTH
    params = inspect.signature(module.forward).parameters
    kwargs = {"layer_type": key} if "layer_type" in params and key is not None else {}
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cos, sin = module(torch.zeros(1, n, 8), torch.arange(n)[None], **kwargs)
    rng = np.random.default_rng(0)
    if split:
        leading = "rot" in split.group(1) or "pe" in split.group(1).split("_")
        if leading != (indexer.rotary_offset == 0):
            return (
                f"{name} rotates the {'leading' if leading else 'trailing'} slice, refimpl the "
                f"{'leading' if indexer.rotary_offset == 0 else 'trailing'} one"
            )
        width = indexer.rotary_dim
    else:
        width = indexer.dim
    x = rng.standard_normal((1, 1, n, width)).astype(np.float32)
    q = torch.from_numpy(x)
    names = list(inspect.signature(fn).parameters)
    keys = {"cos": cos, "sin": sin} | ({names[1]: q.clone()} if names[1] in ("k", "key") else {})
    with torch.no_grad():
        out = fn(q, **keys)  # (q, k, cos, sin), or (x, cos, sin) as DeepSeek-V4's
    got = (out[0] if isinstance(out, tuple) else out)[0, 0].double().numpy()
    pos = np.arange(n)
    if split:
        full = np.zeros((n, indexer.dim), dtype=np.float32)
        o = indexer.rotary_offset
        full[:, o : o + width] = x[0, 0]
        want = indexer.apply(full, pos)[:, o : o + width]
    else:
        want = indexer.apply(x[0, 0], pos)
    err = float(np.max(np.abs(got - want)))
    if err > INDEXER_TOLERANCE:
        return (
            f"{name}'s rotation ({calls[0]}) differs from refimpl's indexer "
            f"({indexer.pairing}/{indexer.output_order}, {indexer.rotary_dim} of "
            f"{indexer.dim} at offset {indexer.rotary_offset}) by {err:.3g}"
        )
    return None


def indexer_diffs(modeling, text, module, tables: dict, schedule, layers) -> list[str]:
    """Which layers have an indexer (refimpl's schedule against the model built on meta) and
    its rotation (run once per distinct indexer spec)."""
    ours = [layer.indexer is not None for layer in schedule]
    if not any(ours) and indexer_source(modeling) is None:
        return []
    theirs = indexer_layers(modeling, text)
    if isinstance(theirs, str):
        return [f"indexer layers not compared: {theirs}"] if any(ours) else []
    if len(schedule) == len(theirs) and ours != theirs:
        bad = [i for i, (a, b) in enumerate(zip(ours, theirs, strict=True)) if a != b]
        return [
            f"layers {bad[:8]}: indexer in {'refimpl' if ours[bad[0]] else 'transformers'} only"
        ]
    diffs, seen = [], set()
    keys = layers if layers is not None else [None] * len(schedule)
    for layer, key in zip(schedule, keys, strict=False):
        if layer.indexer is None or layer.indexer.key() in seen:
            continue
        seen.add(layer.indexer.key())
        if key is None and None not in tables:  # unmapped keys: the table the indexer uses
            key = _closest(layer.indexer, tables)
        why = indexer_rotation(modeling, module, key, layer.indexer)
        if why:
            diffs.append(f"layer {layer.index}: {why}")
    return diffs


def judge_one(model_type: str, config, cfg_dict: dict) -> dict:
    """Judge one config (a transformers config object and the dict refimpl reads)."""
    import refimpl.families as fam

    text = getattr(config, "text_config", None)
    text = text if text is not None and hasattr(text, "to_dict") else config
    how, got = refimpl_reading(cfg_dict)
    try:
        modeling = modeling_module(text)
    except ModuleNotFoundError as exc:
        if "but no model" not in str(exc):
            raise
        # nothing to compare with: the honest reading is a refusal that says so
        result = {"rotary": None, "transformers": str(exc)}
        parts = composed_of(text)
        if how == "refused" and (
            "no model class" in got or (parts and "composes other models" in got)
        ):
            if parts:
                result["transformers"] += f"; composed of other models ({', '.join(parts)})"
            result.update(status="refused", reason=got, api=api_of(got))
        else:
            result.update(
                status="failed" if how == "refused" else "silent",
                reason=got if how == "refused" else None,
                why=f"{exc}; refimpl "
                + ("refuses for another reason" if how == "refused" else "reads a schedule"),
            )
        return result
    rot_cls, _ = text_rotary(modeling, text)
    result = {"rotary": None if rot_cls is None else rot_cls.__name__}
    text_type = getattr(text, "model_type", model_type)
    if text is not config:
        result["decoder"] = text_type
    if rot_cls is None:
        heads = ("num_attention_heads", "n_heads", "n_head", "num_heads")
        subs = composed_of(text) if not any(k in cfg_dict for k in heads) else []
        if subs:
            result["transformers"] = f"composed of other models ({', '.join(subs)})"
            named = how == "refused" and "composes other models" in got
            if named:
                result.update(status="refused", reason=got, api=api_of(got))
            else:
                result.update(
                    status="wrongly_refused" if how == "refused" else "silent",
                    reason=got if how == "refused" else None,
                    why="refimpl does not say that the config composes other models",
                )
            return result
        kind = position_kind(modeling)
        if text_type in SINUSOIDAL_ROTARY:
            return judge_sinusoidal_rotary(result, modeling, text, how, got)
        if text_type in ROTARY_ELSEWHERE and kind.startswith("rotary code"):
            kind, where = ROTARY_ELSEWHERE[text_type]
            result["note"] = where
        result["transformers"] = f"no rotary module ({kind})"
        if kind.startswith("rotary code") and how == "refused":
            true = bool(tower_reason(text, None) or TOWER_TYPES.search(text.model_type))
            why = "rotary code outside a RotaryEmbedding class; not judged"
            return refusal(result, got, true, why)
        if how == "refused":
            named = "no rope" in got.lower() and kind.lower() in got.lower()
            why = f"transformers has no rotary module ({kind}); refusal names another"
            return refusal(result, got, named, why)
        if all(layer.spec is None for layer in got):
            result.update(status="matched", fingerprint=fingerprint(got), summary=summary(got))
        else:
            result.update(
                status="silent", why=f"refimpl reads RoPE; transformers has none ({kind})"
            )
        return result
    tower = tower_reason(text, rot_cls)
    if how == "refused":
        documented = text_type in fam.UNSUPPORTED or text_type in fam.TOWERS
        if vars(text).get("alibi") is True and "if alibi is None:" in source_of(modeling):
            result["transformers"] = "alibi true: ALiBi biases, no RoPE"
            documented = "ALiBi" in got
        kind = vars(text).get("position_embedding_type", "rotary")
        if (
            kind not in ("rotary", "rope")
            and "position_embedding_type" in got
            and "position_embedding_type ==" in source_of(modeling)
        ):
            # the model builds its rotary module only for position_embedding_type rotary/rope
            result["transformers"] = f"position_embedding_type {kind!r}: no RoPE"
            documented = True
        ignored = not hasattr(getattr(text, "text_config", None), "to_dict")
        if "whose class ignores text_config" in got and ignored:
            # the file puts its decoder keys in a text_config that its config class never reads
            result["transformers"] = f"{type(text).__name__} ignores the file's text_config"
            documented = True
        broken = None if tower or documented else forward_failure(rot_cls, text)
        heads = vars(text).get("num_attention_heads")
        hidden = vars(text).get("hidden_size")
        if (
            not broken
            and "not divisible" in got
            and isinstance(heads, int)
            and isinstance(hidden, int)
            and hidden % heads
            and vars(text).get("head_dim") is None
        ):
            broken = (
                f"no head_dim and hidden_size {hidden} is not a multiple of "
                f"num_attention_heads {heads}: transformers floors the quotient"
            )
        if broken:
            result["transformers"] = (
                broken
                if "floors" in broken
                else f"its own rotary module fails on this config ({broken})"
            )
        elif not (tower or documented) and "cannot be built on this config" in got:
            # refimpl says the model cannot be built: build it (on meta) to see
            broken = model_build_failure(modeling, text)
            if broken:
                result["transformers"] = f"its model cannot be built on this config ({broken})"
        elif not (tower or documented) and re.search(r"\b(mrope|xdrope)_section\b", got):
            # refimpl refuses the sections, and the module runs: a schedule cannot express it
            # where its position rows do not give each pair one angle
            broken = unreadable_rows(rot_cls, text)
            if broken:
                result["transformers"] = f"{rot_cls.__name__} runs, but {broken}"
        why = f"transformers builds {rot_cls.__name__} for the decoder"
        return refusal(result, got, bool(tower or documented or broken), why)
    module = build_rotary(rot_cls, text, float64=False)
    tables = rotary_tables(module)
    try:
        t64 = rotary_tables(build_rotary(rot_cls, text, float64=True))
    except Exception as exc:
        t64 = {}
        result["note"] = f"float64 construction failed ({type(exc).__name__}); float32 buffers"
    # a float64 table equal to the float32 one was cast, not computed, in float64
    tables = {
        k: (v[0], v[1], None if k not in t64 or np.array_equal(t64[k][0], v[0]) else t64[k][0])
        for k, v in tables.items()
    }
    if not tables:
        result.update(status="failed", why=f"{rot_cls.__name__} holds no inv_freq")
        return result
    if tower:
        result.update(status="silent", why=f"refimpl reads a schedule; {tower}")
        return result
    # matched means transformers ran: a module that builds but cannot run is no match, nor is
    # a model that transformers cannot build from the config
    broken = forward_failure(rot_cls, text)
    if broken:
        result["transformers"] = f"its own rotary module fails on this config ({broken})"
        result.update(status="silent", why="refimpl reads a schedule; " + result["transformers"])
        return result
    broken = model_build_failure(modeling, text)
    if broken:
        result["transformers"] = f"its model cannot be built on this config ({broken})"
        result.update(status="silent", why="refimpl reads a schedule; " + result["transformers"])
        return result
    layers = rope_layers(modeling, text, tables, rot_cls)
    diffs, agreement = compare(got, tables, layers, pairing_of(modeling, text))
    if not diffs:
        diffs += mrope_diffs(module, tables, got, layers)
        diffs += indexer_diffs(modeling, text, module, tables, got, layers)
    return verdict(result, got, diffs, agreement)


def judge_sinusoidal_rotary(result: dict, modeling, config, how, got) -> dict:
    """RoFormer: build its sinusoidal table module, read the frequencies off position 1
    (arcsin of the float32 sine table, as for GPT-J) and compare every layer."""
    name = SINUSOIDAL_ROTARY[config.model_type]
    cls = getattr(modeling, name)
    result["rotary"] = name
    result["transformers"] = f"{name}: sin | cos table rotating adjacent pairs"
    if how == "refused":
        flag = "rotary_value"
        true = bool(getattr(config, flag, False)) and f"config key {flag} true" in got
        if true:
            result["transformers"] += f"; {flag} true: the values are rotated too"
        why = f"transformers builds {name} for every self-attention layer"
        return refusal(result, got, true, why)
    dim = config.hidden_size // config.num_attention_heads
    table = cls(config.max_position_embeddings, dim).create_weight().double().numpy()
    inv = np.arcsin(table[1, : dim // 2])
    tables = {None: (inv, 1.0, None)}
    source = source_of(modeling)
    pairing = None
    if re.search(r"stack\(\[-\w+\[\.\.\., 1::2\], \w+\[\.\.\., ::2\]\]", source):
        pairing = ("interleaved", "same")  # [-x1, x0, -x3, x2, ...] against doubled sin/cos
    diffs, agreement = compare(got, tables, [None] * config.num_hidden_layers, pairing)
    if pairing is None:
        diffs.append("the pairing of apply_rotary_position_embeddings was not found")
    return verdict(result, got, diffs, agreement)


def api_of(message: str) -> str | None:
    names = [
        n for n in re.findall(r"refimpl(?:\.\w+)+", message) if not n.startswith("refimpl.families")
    ]
    return ", ".join(dict.fromkeys(n.rstrip(".") for n in names)) or None


# types whose config class does not build from its defaults alone: the fewest arguments that
# make it valid, each as the class's own validator or registry demands
CLASS_ARGS = {
    # Gemma4AssistantConfig.validate_architecture: the drafter's text_config has no per-layer
    # input embeddings (hidden_size_per_layer_input and vocab_size_per_layer_input must be 0;
    # Gemma4TextConfig's defaults are 256 and 262144)
    "gemma4_assistant": {
        "text_config": {"hidden_size_per_layer_input": 0, "vocab_size_per_layer_input": 0}
    },
    # NougatConfig's default encoder names model_type donut_swin, which AutoConfig registers
    # as donut-swin
    "nougat": {"encoder": {"model_type": "donut-swin"}},
}

RANK = {"silent": 0, "failed": 1, "wrongly_refused": 2, "refused": 3, "matched": 4}


def judge_type(model_type: str, stored: list) -> tuple[dict, dict | None]:
    """The type's entry and the class-default config the table stores (None if not built)."""
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    entries, sources, class_cfg = [], [], None
    try:
        with time_box(SECONDS_PER_TYPE), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            config = CONFIG_MAPPING[model_type](**copy.deepcopy(CLASS_ARGS.get(model_type, {})))
            class_cfg = reduced(jsonable(config.to_dict()))
            class_cfg.setdefault("model_type", model_type)
            entries.append(judge_one(model_type, config, class_cfg))
            sources.append("class defaults")
    except Exception as exc:
        entries.append({"status": "failed", "why": f"{type(exc).__name__}: {exc}"[:400]})
        sources.append("class defaults")
    for name, cfg in stored:
        try:
            with time_box(SECONDS_PER_TYPE), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                config = CONFIG_MAPPING[model_type].from_dict(dict(cfg))
                entries.append(judge_one(model_type, config, cfg))
        except Exception as exc:
            entries.append({"status": "failed", "why": f"{type(exc).__name__}: {exc}"[:400]})
        sources.append(name)
    worst = min(entries, key=lambda e: RANK[e["status"]])
    entry = {
        "status": worst["status"],
        "reason": worst.get("reason"),
        "api": worst.get("api"),
        "source": ", ".join(sources),
        "rotary": worst.get("rotary"),
        "transformers": worst.get("transformers"),
        "decoder": worst.get("decoder"),
        "summary": worst.get("summary"),
    }
    if worst.get("why"):
        entry["why"] = worst["why"]
    agreements = {e.get("inv_freq") for e in entries}
    entry["inv_freq"] = next((a for a in ("float32", "float64") if a in agreements), None)
    if entry["status"] in FINAL:
        # per source, what the test re-checks without transformers
        entry["checks"] = {
            src: e.get("fingerprint", "refused") for src, e in zip(sources, entries, strict=True)
        }
    return {k: v for k, v in entry.items() if v is not None}, class_cfg


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", nargs="*", help="judge these model types, print, write nothing")
    parser.add_argument(
        "--no-rope-kinds",
        action="store_true",
        help="print, per position kind, the types without a rotary module",
    )
    args = parser.parse_args(argv)
    import transformers
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES

    if transformers.__version__ != TRANSFORMERS_VERSION:
        sys.exit(
            f"transformers {transformers.__version__} is installed; the table pins "
            f"{TRANSFORMERS_VERSION} (make model-coverage installs it)"
        )
    import torch

    torch.set_num_threads(1)
    stored = stored_configs()
    types = args.only or sorted(CONFIG_MAPPING_NAMES)
    start = time.perf_counter()
    table, class_cfgs = {}, {}
    for model_type in types:
        entry, cfg = judge_type(model_type, stored.get(model_type, []))
        table[model_type] = entry
        if cfg is not None:
            class_cfgs[model_type] = cfg
        if args.only:
            print(model_type, {k: v for k, v in entry.items() if k != "fingerprints"})
    counts: dict = {}
    for entry in table.values():
        counts[entry["status"]] = counts.get(entry["status"], 0) + 1
    wall = time.perf_counter() - start
    print(
        f"{len(table)} model types in {wall:.0f} s: "
        + ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
    )
    for name, entry in table.items():
        if entry["status"] not in FINAL:
            print(
                f"  {entry['status']:16s} {name}: {entry.get('why', entry.get('reason', ''))[:300]}"
            )
    if args.no_rope_kinds:
        from refimpl.families import FAMILIES

        kinds: dict = {}
        for name, entry in table.items():
            kind = entry.get("transformers", "")
            if kind.startswith("no rotary module (") and "rotary code" not in kind:
                which = entry.get("decoder", name)
                if which not in FAMILIES:
                    kinds.setdefault(kind[len("no rotary module (") : -1], set()).add(which)
        kinds = {k: sorted(v) for k, v in kinds.items()}
        print(json.dumps(kinds, indent=1))
    if args.only or args.no_rope_kinds:
        return 0
    final = {k: v for k, v in table.items() if v["status"] in FINAL}
    open_ = {k: v for k, v in table.items() if v["status"] not in FINAL}
    out = {
        "transformers": TRANSFORMERS_VERSION,
        "input_hash": input_hash(),
        "counts": dict(sorted(counts.items())),
        "types": final,
    }
    if open_:
        out["open"] = open_
    TABLE.write_text(json.dumps(out, indent=1, sort_keys=False) + "\n")
    # one line per type, keys in the config class's order (refimpl names the first marker key)
    lines = [
        f"{json.dumps(k)}:{json.dumps(v, separators=(',', ':'))}" for k, v in class_cfgs.items()
    ]
    CLASS_CONFIGS.write_text("{\n" + ",\n".join(lines) + "\n}\n")
    print(f"wrote {TABLE.relative_to(ROOT)} and {CLASS_CONFIGS.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
