"""The golden cases of one RoPE spec: the positions and layouts engines pass, as the suite
stores them (raw float64 inputs that the writer rounds to the suite's dtype)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

import numpy as np

from ..multiaxis import mrope_axis_of_pair, mrope_position_ids
from ._layout import varlen_token_positions

# Heads of the query and key tensors (grouped-query attention: two query heads per key head).
Q_HEADS, K_HEADS = 4, 2
# Positions the probe case puts basis vectors at (those below the spec's bound), the 2**16
# boundary included (a position stored in 16 bits wraps there).
PROBE_POSITIONS = (0, 1, 2, 3, 7, 100, 4096, 65535, 65536, 65537)
# The long case: this many log-spaced positions from 2**16 to the spec's bound (at most 2**24,
# beyond which float32 positions are not integers and the bound is not a kernel's contract).
LONG_POSITIONS = 64
LONG_LIMIT = 2**24
WRAP = 2**16
# The M-RoPE case: text, an image (8 x 8 patches, merged 2 x 2) and a video (2 frames of 4 x 6
# patches), as Qwen2-VL's processor lays them out.
MROPE_SEGMENTS = (
    ("text", 5),
    ("image", (1, 8, 8)),
    ("text", 3),
    ("video", (2, 4, 6)),
    ("text", 4),
)


@dataclasses.dataclass
class Case:
    """One golden case before rounding: raw float64 inputs (``name -> array``), integer
    position arrays, strided views (``name -> {buffer, offset, shape, strides}``), outputs
    (``output name -> input name``), the layout and the position form."""

    name: str
    layout: str
    form: str
    inputs: dict
    positions: dict
    outputs: dict
    views: dict = dataclasses.field(default_factory=dict)
    heads: dict | None = None
    position_dtype: str = "int64"
    description: str = ""


def _normal(rng, *shape):
    return rng.standard_normal(shape)


def _qk(name, layout, form, rng, d, lead_q, lead_k, positions, description, **kw) -> Case:
    return Case(
        name,
        layout,
        form,
        {"q": _normal(rng, *lead_q, d), "k": _normal(rng, *lead_k, d)},
        positions,
        {"q_out": "q", "k_out": "k"},
        description=description,
        **kw,
    )


def below(values, top: int) -> np.ndarray:
    """The values below ``top`` (and at least 0), sorted and unique, int64."""
    v = np.unique(np.asarray(values, dtype=np.int64))
    return v[(v >= 0) & (v < top)]


def spec_cases(spec, rng, top: int) -> list[Case]:
    """Every case of one spec, positions below ``top``."""
    d = int(spec.dim)
    out = [
        _prefill(rng, d, top),
        _decode(rng, d, top),
        _batch_ids(rng, d, top),
        _varlen(rng, d, top),
    ]
    if top > WRAP:
        out.append(_long(rng, d, top))
    out += [
        _odd_heads(rng, d, top),
        _strided(rng, d, top),
        _int32(rng, d, top),
        _flat(rng, d, top),
        _packed(rng, d, top),
        _in_place(rng, d, top),
    ]
    if spec.mrope_section is not None:
        out.append(_mrope(rng, spec, d))
    else:
        out.append(_cache(rng, d, top))
    out.append(_probe(d, top))
    return out


def _prefill(rng, d, top) -> Case:
    pos = below(np.arange(64), top)
    s = pos.size
    return _qk(
        "prefill", "bhsd", "positions", rng, d, (1, Q_HEADS, s), (1, K_HEADS, s),
        {"positions": pos}, "one sequence from position 0, 4 query heads sharing 2 key heads",
    )  # fmt: skip


def _decode(rng, d, top) -> Case:
    off = below([0, 17, 4095, WRAP - 1, WRAP, top - 1], top)
    return _qk(
        "decode", "bhsd", "offsets", rng, d, (off.size, Q_HEADS, 1), (off.size, K_HEADS, 1),
        {"offsets": off}, "one new token per sequence, each at its own cache length",
    )  # fmt: skip


def _batch_ids(rng, d, top) -> Case:
    s = 16
    start = below([0, 300, 5000], top - s)
    ids = start[:, None] + np.arange(s)[None, :]
    ids[0, :5] = 0  # a left-padded row: padding tokens at position 0
    ids[0, 5:] = np.arange(s - 5)
    return _qk(
        "batch-ids", "bshd", "position_ids", rng, d, (ids.shape[0], s, Q_HEADS),
        (ids.shape[0], s, K_HEADS), {"position_ids": ids},
        "a batch in (B, S, H, D) with one position id per token (a left-padded row first)",
    )  # fmt: skip


def _varlen(rng, d, top) -> Case:
    cu = np.array([0, 5, 16, 17, 40], dtype=np.int64)
    off = np.minimum(np.array([0, 100, 7, 2000], dtype=np.int64), max(top - 40, 0))
    tok = varlen_token_positions(cu, off)
    return _qk(
        "varlen", "thd", "cu_seqlens", rng, d, (40, Q_HEADS), (40, K_HEADS),
        {"cu_seqlens": cu, "offsets": off, "positions": tok},
        "a packed batch of 4 sequences (cu_seqlens), each continuing a cache at its offset",
    )  # fmt: skip


def _long(rng, d, top) -> Case:
    hi = min(top, LONG_LIMIT + 1) - 1
    grid = np.geomspace(WRAP, hi, LONG_POSITIONS).astype(np.int64)
    pos = below(np.r_[WRAP - 2 : WRAP + 3, grid, hi], top)
    return _qk(
        "long", "bhsd", "positions", rng, d, (1, 2, pos.size), (1, 1, pos.size),
        {"positions": pos}, "positions across 2**16 up to the model's context (at most 2**24)",
    )  # fmt: skip


def _odd_heads(rng, d, top) -> Case:
    pos = below(np.arange(9) * 37 + 5, top)
    return _qk(
        "odd-heads", "bhsd", "positions", rng, d, (1, 3, pos.size), (1, 1, pos.size),
        {"positions": pos}, "3 query heads and 1 key head",
    )  # fmt: skip


def _strided(rng, d, top) -> Case:
    """q and k as views into (B, S, H, D + 8) buffers with padded rows, read as (B, H, S, D)
    from feature 3 of head 1 (offset and strides in elements)."""
    b, s, w = 1, 24, d + 8
    pos = below(np.arange(s) * 3 + 1, top)
    s = pos.size
    views, inputs = {}, {}
    for name, h in (("q", Q_HEADS + 1), ("k", K_HEADS + 1)):
        buf = _normal(rng, b * s * h * w)
        views[name] = {
            "buffer": f"{name}_buffer",
            "offset": 1 * w + 3,
            "shape": [b, h - 1, s, d],
            "strides": [s * h * w, w, h * w, 1],
        }
        inputs[f"{name}_buffer"] = buf
    return Case(
        "strided", "bhsd", "positions", inputs, {"positions": pos},
        {"q_out": "q", "k_out": "k"}, views=views,
        description="q and k as strided views into larger buffers (offset, strides given)",
    )  # fmt: skip


def _int32(rng, d, top) -> Case:
    pos = below(np.r_[np.arange(16) * 997 + 3, WRAP - 2, WRAP - 1, WRAP, WRAP + 1], top)
    pos = pos[: pos.size // 2 * 2]  # an even count: read as int64 they make whole values
    return _qk(
        "positions-int32", "bhsd", "positions", rng, d, (1, Q_HEADS, pos.size),
        (1, K_HEADS, pos.size), {"positions": pos}, "positions stored as int32",
        position_dtype="int32",
    )  # fmt: skip


def _flat(rng, d, top) -> Case:
    pos = below(rng.integers(0, min(top, 8192), 24), top)
    t = pos.size
    c = _qk(
        "flat", "t(hd)", "positions", rng, d, (t, Q_HEADS), (t, K_HEADS), {"positions": pos},
        "vLLM's layout: query (T, H*D), key (T, Hk*D), one position per token",
    )  # fmt: skip
    c.inputs = {"query": c.inputs["q"].reshape(t, -1), "key": c.inputs["k"].reshape(t, -1)}
    c.outputs = {"query_out": "query", "key_out": "key"}
    return c


def _packed(rng, d, top) -> Case:
    pos = below(np.arange(20) * 11, top)
    t = pos.size
    qkv = _normal(rng, t, (Q_HEADS + 2 * K_HEADS) * d)
    return Case(
        "qkv-packed", "t(qkv)", "positions", {"qkv": qkv}, {"positions": pos},
        {"qkv_out": "qkv"}, heads={"q": Q_HEADS, "k": K_HEADS, "v": K_HEADS},
        description="one packed (T, (Hq + 2 Hk) * D) buffer: q and k heads rotated, v copied",
    )  # fmt: skip


def _in_place(rng, d, top) -> Case:
    pos = below(np.arange(12) * 5 + 2, top)
    c = _qk(
        "in-place", "bshd", "positions", rng, d, (1, pos.size, Q_HEADS),
        (1, pos.size, K_HEADS), {"positions": pos},
        "an in-place kernel: the results file holds the rotated q and k under their input names",
    )  # fmt: skip
    c.outputs = {"q": "q", "k": "k"}
    return c


def _cache(rng, d, top) -> Case:
    pos = rng.integers(0, min(top, 4096), 32).astype(np.int64)
    t = pos.size
    c = _qk(
        "cos-sin-cache", "t(hd)", "cache", rng, d, (t, Q_HEADS), (t, K_HEADS),
        {"positions": pos},
        "vLLM's and FlashInfer's apply-with-cache layout: cos_sin_cache [P, rotary_dim] "
        "(cos | sin, float32) gathered by positions",
    )  # fmt: skip
    c.inputs = {"query": c.inputs["q"].reshape(t, -1), "key": c.inputs["k"].reshape(t, -1)}
    c.outputs = {"query_out": "query", "key_out": "key"}
    return c


def _mrope(rng, spec, d) -> Case:
    ids = mrope_position_ids(MROPE_SEGMENTS).position_ids
    rows = 1 + int(max(np.max(mrope_axis_of_pair(spec.mrope_section, spec.mrope_layout)), 2))
    if rows > ids.shape[0]:  # a fourth row (ggml's e, XD-RoPE's fourth axis): 0 here
        ids = np.concatenate([ids, np.zeros((rows - ids.shape[0], ids.shape[1]), np.int64)])
    s = ids.shape[1]
    return _qk(
        "mrope", "bhsd", "mrope", rng, d, (1, Q_HEADS, s), (1, K_HEADS, s),
        {"position_ids": ids},
        "M-RoPE: text, image and video tokens with distinct (t, h, w) position rows",
    )  # fmt: skip


def _probe(d, top) -> Case:
    probe = below(PROBE_POSITIONS, top)
    pos = np.repeat(probe, d)
    basis = np.tile(np.eye(d), (probe.size, 1))[None, None]  # row j of each block: e_j
    return Case(
        "probe", "bhsd", "positions", {"q": basis, "k": basis.copy()}, {"positions": pos},
        {"q_out": "q", "k_out": "k"},
        description="basis vectors e_j at chosen positions: the outputs are the columns of "
        "each position's rotation matrix",
    )  # fmt: skip


def sweep_variants(spec, scalings: Mapping) -> tuple[list, list]:
    """(variants, skipped): specs for a head-size and rotary-fraction sweep and the config's
    other pairing, as ``(suffix, spec)``; and the reasons sweeps were left out."""
    method = scalings[spec.rope_type]
    per_pair = [k for k, v in spec.params.items() if np.ndim(v) == 1]
    out, skipped = [], []
    other = "interleaved" if spec.pairing == "half" else "half"
    if spec.output_order == "same" and spec.mrope_section is None:
        out.append((f"pairing-{other}", dataclasses.replace(spec, pairing=other)))
    if per_pair or spec.mrope_section is not None:
        skipped.append(
            f"head-size sweep: {spec.rope_type} has per-pair parameters {per_pair} or M-RoPE "
            "sections tied to the rotary width"
        )
        return out, skipped
    for head in (64, 128, 256):
        for frac in (1.0, 0.5, 0.25):
            r = int(head * frac) // 2 * 2
            if (head, r) == (spec.dim, spec.rotary_dim) or spec.rotary_offset:
                continue
            params = {**spec.method_params(), "dim": r}
            inv = method(**params).inv_freq
            v = dataclasses.replace(spec, dim=head, rotary_dim=r, inv_freq=inv)
            out.append((f"d{head}-r{r}", v))
    return out, skipped
