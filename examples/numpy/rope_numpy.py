"""A RoPE kernel in NumPy that reads a ``refimpl-conformance/2`` suite as a C, Rust or CUDA
kernel would (the book page "Suite format" is all it follows), with the table recipe and a
planted mistake selectable: the tests and the book run the verifier on it.

    python examples/numpy/rope_numpy.py SUITE RESULTS [--recipe R] [--mistake M]

Recipes (how the cos/sin tables are built): ``float64``; ``float32-angles`` (the suite's
``inv_freq`` rounded to float32, float32 angles and cos/sin); ``float32-pow``,
``float32-exp-log``, ``float32-exp2-log2`` (the base frequencies computed in float32 by that
formula, then scaled by the config's ratio in float32); ``float32-ggml-product`` (ggml's
running product); ``half-tables`` (float32 angles, tables and outputs in the suite's
bfloat16/float16). Mistakes: the keys of :data:`MISTAKES`.
"""

from __future__ import annotations

import argparse
import json
import math
import pathlib

import numpy as np

from refimpl import ROPE_SCALINGS
from refimpl.conformance import read_safetensors, write_safetensors

F32 = np.float32
RECIPES = (
    "float64",
    "float32-angles",
    "float32-pow",
    "float32-exp-log",
    "float32-exp2-log2",
    "float32-ggml-product",
    "half-tables",
)
MISTAKES = {
    "pairing": "the other pairing (half <-> interleaved)",
    "sign": "rotation the other way (sin negated)",
    "shift": "positions counted from 1",
    "base": "base 10000 instead of the config's",
    "index-origin": "pair index counted from 1 in the frequencies",
    "unscaled": "the config's scaling ignored (plain base frequencies)",
    "output-order": "output written in the input's pair order",
    "partial-width": "every feature rotated instead of the rotary slice",
    "no-attention-scaling": "the attention factor not multiplied into cos/sin",
    "attention-scaling-twice": "the attention factor applied twice",
    "rotated-twice": "the rotation applied twice",
    "bfloat16-angles": "angles formed in bfloat16",
    "float16-angles": "angles formed in float16",
    "bfloat16-frequencies": "inv_freq cast to bfloat16",
    "bfloat16-tables": "cos/sin tables stored in bfloat16",
    "varlen-no-restart": "a packed batch's positions not restarted per sequence",
    "decode-offsets-ignored": "decode offsets ignored",
    "gqa-heads": "the head loop over the key heads' count (query heads left unrotated)",
    "gqa-keys-repeated": "keys rotated once per query head of their group",
    "strides-ignored": "strided views read as contiguous",
    "wrap-16": "positions held in 16 bits",
    "int32-as-int64": "int32 positions read as int64",
    "qkv-v-rotated": "the v heads of a packed qkv rotated too",
    "mrope-swapped": "M-RoPE h and w rows swapped",
    "mrope-1d": "M-RoPE collapsed to 1-D (t row only)",
    "cache-row-index": "cos_sin_cache rows taken by token index",
    "not-written": "an in-place kernel that never writes back",
    "always-long-factors": "LongRoPE's long factors at every length (mlx-lm's choice)",
}


def _round(x, fmt: str) -> np.ndarray:
    """Round-to-nearest-even to bfloat16 (bit operations) or float16, as float32 values."""
    x = np.asarray(x, dtype=F32)
    if fmt == "float16":
        with np.errstate(over="ignore"):
            return x.astype(np.float16).astype(F32)
    u = x.view(np.uint32)
    bits = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) << 16
    return bits.astype(np.uint32).view(F32)


# ---------------------------------------------------------------- reading a case


def _input(arrays, meta, name) -> np.ndarray:
    """An input tensor as float64; a strided view gathered from its buffer."""
    if f"{name}_view_buffer" in meta:
        buf = arrays[meta[f"{name}_view_buffer"]].astype(np.float64).reshape(-1)
        shape = [int(v) for v in meta[f"{name}_view_shape"].split(",")]
        strides = [int(v) for v in meta[f"{name}_view_strides"].split(",")]
        off = int(meta[f"{name}_view_offset"])
        return np.lib.stride_tricks.as_strided(
            buf[off:], shape=shape, strides=[s * 8 for s in strides]
        ).copy()
    return arrays[name].astype(np.float64)


def _positions(arrays, meta, lead, mistake) -> np.ndarray:
    """Position of every row (and pair, for M-RoPE), (*lead, 1 or n), by the position form."""
    form, layout = meta["position_form"], meta["layout"]
    seq_axis = {"bhsd": 2, "bshd": 1}.get(layout, 0)

    def along(p, axis):
        shape = [1] * len(lead)
        shape[axis] = -1
        return np.broadcast_to(np.asarray(p).reshape(shape), lead)[..., None]

    if form in ("positions", "cache"):
        p = arrays["positions"]
        if mistake == "int32-as-int64" and p.dtype == np.int32 and p.size % 2 == 0:
            wide = p.view(np.int64)
            p = np.concatenate([wide, np.zeros(p.size - wide.size, np.int64)])
        m = along(p.astype(np.int64), seq_axis)
    elif form == "offsets":
        off = arrays["offsets"] * (mistake != "decode-offsets-ignored")
        s = np.arange(lead[seq_axis])
        m = along(off, 0) + along(s, seq_axis)
    elif form == "position_ids":
        ids = arrays["position_ids"]
        m = ids[:, None, :, None] if layout == "bhsd" else ids[:, :, None, None]
        m = np.broadcast_to(m, (*lead, 1))
    elif form == "cu_seqlens":
        cu, off = arrays["cu_seqlens"], arrays["offsets"]
        t = np.arange(int(cu[-1]))
        j = np.searchsorted(cu, t, side="right") - 1
        p = t if mistake == "varlen-no-restart" else t - cu[j] + off[j]
        m = along(p, 0)
    else:  # mrope: pair i of token s at position_ids[axis(i), s]
        ids = arrays["position_ids"]
        if mistake == "mrope-swapped":
            ids = ids[[0, 2, 1, *range(3, ids.shape[0])]]
        axes = _mrope_axes(meta)
        if mistake == "mrope-1d":
            axes = np.zeros_like(axes)
        per_pair = ids[axes].T  # (S, n)
        shape = [1] * len(lead)
        shape[seq_axis] = per_pair.shape[0]
        m = np.broadcast_to(per_pair.reshape(*shape, -1), (*lead, per_pair.shape[1]))
    if mistake == "wrap-16":
        m = np.mod(m, 2**16)
    if mistake == "shift":
        m = m + 1
    return m


def _mrope_axes(meta) -> np.ndarray:
    """Row of the position ids driving each pair (blocked sections or Qwen3-VL interleaving)."""
    sec = [int(v) for v in meta["mrope_section"].split(",")]
    j = np.arange(sum(sec))
    if meta["mrope_layout"] == "blocked":
        return np.repeat(np.arange(len(sec)), sec)
    axes = np.zeros(sum(sec), dtype=np.int64)
    axes[(j % 3 == 1) & (j < 3 * sec[1])] = 1
    axes[(j % 3 == 2) & (j < 3 * sec[2])] = 2
    return axes


# ---------------------------------------------------------------- the tables


def _base_frequencies(recipe: str, r: int, b: float) -> np.ndarray:
    """float32 base frequencies b**(-2i/r) by the recipe's formula."""
    h = r // 2
    i = np.arange(h, dtype=F32)
    if recipe == "float32-exp-log":
        return np.exp(-(i * (F32(math.log(b)) / F32(h)))).astype(F32)
    if recipe == "float32-exp2-log2":
        return np.exp2(-((i / F32(h)) * F32(math.log2(b)))).astype(F32)
    expo = (np.arange(0, r, 2, dtype=F32) / F32(r)).astype(F32)
    return (F32(1) / np.power(F32(b), expo)).astype(F32)


def _frequencies(meta, arrays, mistake) -> tuple[np.ndarray, float]:
    """(exact frequencies the kernel aims at, base), with the frequency mistakes applied."""
    r, b = int(meta["rotary_dim"]), float(meta["base"])
    if "inv_freq" in arrays:
        inv = arrays["inv_freq"].astype(np.float64)
    else:  # frequencies="computed": from the scaling method and its parameters
        params = json.loads(meta["scaling"])
        if "seq_len" in meta:
            params["seq_len"] = int(meta["seq_len"])
        inv = ROPE_SCALINGS[meta["rope_type"]](dim=r, base=b, **params).inv_freq
    plain = b ** (-np.arange(0, r, 2) / r)
    if mistake == "base":
        inv = inv * (10000.0 ** (-np.arange(0, r, 2) / r)) / plain
    elif mistake == "index-origin":
        inv = inv * b ** (-2.0 / r)
    elif mistake == "unscaled":
        inv = plain
    elif mistake == "always-long-factors" and meta["rope_type"] == "longrope":
        inv = plain / np.asarray(json.loads(meta["scaling"])["long_factor"])
    return inv, b


def _angles(m, inv, b, r, recipe, mistake) -> np.ndarray:
    """Angles (float64 or float32) of positions m for the recipe."""
    if recipe == "float64":
        ang = m * (_round(inv, "bfloat16") if mistake == "bfloat16-frequencies" else inv)
        for fmt in ("bfloat16", "float16"):
            if mistake == f"{fmt}-angles":
                ang = _round(ang, fmt).astype(np.float64)
        return ang
    plain = b ** (-np.arange(0, r, 2) / r)
    ratio = (inv / plain).astype(F32)  # the config's scaling, applied in float32
    m32 = m.astype(F32)
    if mistake == "bfloat16-frequencies":
        theta = _round(inv, "bfloat16")
        return (m32 * theta).astype(F32)
    if recipe == "float32-angles":
        theta = inv.astype(F32)
    elif recipe == "float32-ggml-product":  # pair i: the position times s, i times over
        s = np.power(F32(b), F32(-2.0) / F32(r))
        chain = np.broadcast_to(m32, (*m32.shape[:-1], r // 2)).astype(F32)
        for i in range(1, r // 2):
            chain[..., i:] = (chain[..., i:] * s).astype(F32)
        return (chain * ratio).astype(F32)
    else:  # pow / exp-log / exp2-log2 / half-tables (pow)
        theta = (_base_frequencies(recipe, r, b) * ratio).astype(F32)
    ang = (m32 * theta).astype(F32)
    for fmt in ("bfloat16", "float16"):
        if mistake == f"{fmt}-angles":
            ang = _round(ang, fmt)
    return ang


def _tables(ang, scale, recipe, mistake, dtype):
    """cos and sin (times the attention factor) in the recipe's arithmetic."""
    if recipe == "float64":
        c, s = np.cos(ang), np.sin(ang)
    else:
        with np.errstate(invalid="ignore"):
            c = np.cos(ang.astype(np.float64)).astype(F32)
            s = np.sin(ang.astype(np.float64)).astype(F32)
    a = {"no-attention-scaling": 1.0, "attention-scaling-twice": scale * scale}.get(mistake, scale)
    c, s = c * (F32(a) if recipe != "float64" else a), s * (F32(a) if recipe != "float64" else a)
    if recipe == "half-tables":
        c, s = _round(c, dtype), _round(s, dtype)
    if mistake == "bfloat16-tables":
        c, s = _round(c, "bfloat16"), _round(s, "bfloat16")
    if mistake == "sign":
        s = -s
    return c, s


# ---------------------------------------------------------------- the rotation


def _rotate(x, c, s, rot: dict, recipe: str):
    """y = x with pairs (a, b) of the rotated slice -> (x_a c - x_b s, x_a s + x_b c)."""
    r, lo = int(rot["rotary_dim"]), int(rot["rotary_offset"])
    h = r // 2
    if rot["pairing"] == "half":
        a, b = np.arange(h), np.arange(h, r)
    else:
        a, b = np.arange(0, r, 2), np.arange(1, r, 2)
    oa, ob = (np.arange(h), np.arange(h, r)) if rot["output_order"] == "half" else (a, b)
    work = np.float64 if recipe == "float64" else F32
    xs = x[..., lo : lo + r].astype(work)
    c, s = c.astype(work), s.astype(work)
    y = x.astype(work).copy()
    y[..., lo + oa] = xs[..., a] * c - xs[..., b] * s
    y[..., lo + ob] = xs[..., a] * s + xs[..., b] * c
    return y


def _rotation(meta, arrays, mistake) -> tuple[dict, np.ndarray, float]:
    """The rotation the kernel performs: its slice, pairing and order, and frequencies."""
    rot = {k: meta[k] for k in ("rotary_dim", "rotary_offset", "pairing", "output_order")}
    inv, b = _frequencies(meta, arrays, mistake)
    if mistake == "pairing":
        rot["pairing"] = "interleaved" if rot["pairing"] == "half" else "half"
    if mistake == "output-order":
        rot["output_order"] = "same"
    d = int(meta["dim"])
    if mistake == "partial-width":
        rot["rotary_dim"], rot["rotary_offset"] = d, 0
        inv = b ** (-np.arange(0, d, 2) / d)
    return rot, inv, b


def _heads(x, meta) -> np.ndarray:
    d = int(meta["dim"])
    return x.reshape(x.shape[0], -1, d) if meta["layout"] in ("t(hd)", "t(qkv)") else x


def _case(arrays, meta, recipe, mistake, dtype) -> dict:
    """One case's outputs under the names of its ``outputs``."""
    scale = float(meta["attention_scaling"])
    cache_form = meta["position_form"] == "cache"  # the cache fixes the rotated width
    rot, inv, b = _rotation(
        meta, arrays, None if cache_form and mistake == "partial-width" else mistake
    )
    r = int(rot["rotary_dim"])
    head_axis = 2 if meta["layout"] == "bshd" else 1
    pairs = [p.split(":") for p in meta["outputs"].split(",")]
    sources = {src: _heads(_input(arrays, meta, src), meta) for _, src in pairs}
    n_heads = {src: x.shape[head_axis] for src, x in sources.items()}
    hk = min(n_heads.values())
    group = max(n_heads.values()) // hk
    qkv = dict(kv.split(":") for kv in meta.get("heads", "").split(",") if kv)
    out = {}
    for name, src in pairs:
        x = sources[src]
        if mistake == "strides-ignored" and f"{src}_view_buffer" in meta:
            buf = arrays[meta[f"{src}_view_buffer"]].astype(np.float64).reshape(-1)
            off = int(meta[f"{src}_view_offset"])
            x = buf[off : off + x.size].reshape(x.shape)
        m = _positions(arrays, meta, x.shape[:-1], mistake)
        if meta["position_form"] == "cache":
            rows = m[..., 0].astype(np.int64)
            if mistake == "cache-row-index":
                rows = np.broadcast_to(np.arange(x.shape[0])[:, None], rows.shape)
            cache = arrays["cos_sin_cache"]
            table = cache[np.clip(rows, 0, cache.shape[0] - 1)]  # a shifted row stays in it
            c, s = table[..., : r // 2], table[..., r // 2 :]
        else:
            repeat = group if mistake == "gqa-keys-repeated" and n_heads[src] == hk else 1
            twice = 2 if mistake == "rotated-twice" else 1
            ang = _angles(m * repeat * twice, inv, b, r, recipe, mistake)
            c, s = _tables(ang, scale, recipe, mistake, dtype)
            if mistake == "rotated-twice":  # the second pass multiplies by A again
                c, s = c * scale, s * scale
        y = _rotate(x, c, s, rot, recipe)
        if mistake == "gqa-heads" and n_heads[src] > hk:
            keep = [slice(None)] * x.ndim
            keep[head_axis] = slice(hk, None)
            y[tuple(keep)] = x[tuple(keep)]
        if qkv and mistake != "qkv-v-rotated":
            v0 = int(qkv["q"]) + int(qkv["k"])
            y[:, v0:] = x[:, v0:]
        if mistake == "not-written" and name == src:
            y = x
        out[name] = y.reshape(arrays[src].shape if src in arrays else x.shape)
    return out


def _store(out: dict, recipe: str, dtype: str) -> dict:
    if recipe == "half-tables":
        return {k: _round(v, dtype) for k, v in out.items()}
    kind = np.float64 if recipe == "float64" else F32
    return {k: np.asarray(v, dtype=kind) for k, v in out.items()}


def run(
    suite, results, *, recipe: str = "float64", mistake: str | None = None, fmt: str = "safetensors"
) -> int:
    """Run the kernel on every case of ``suite``; write ``RESULTS/<case>.<fmt>``."""
    if recipe not in RECIPES or (mistake is not None and mistake not in MISTAKES):
        raise ValueError(f"recipe must be one of {RECIPES}, mistake one of {sorted(MISTAKES)}")
    suite, results = pathlib.Path(suite), pathlib.Path(results)
    results.mkdir(parents=True, exist_ok=True)
    manifest = json.loads((suite / "manifest.json").read_text())
    dtype = manifest["dtype"]
    for entry in manifest["cases"]:
        arrays, meta = read_safetensors(suite / entry["files"]["inputs"]["safetensors"])
        out = _store(_case(arrays, meta, recipe, mistake, dtype), recipe, dtype)
        path = results / f"{entry['name']}.{fmt}"
        if fmt == "npz":
            np.savez(path, **out)
        else:
            write_safetensors(path, out)
    return len(manifest["cases"])


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("suite")
    p.add_argument("results")
    p.add_argument("--recipe", choices=RECIPES, default="float64")
    p.add_argument("--mistake", choices=sorted(MISTAKES))
    args = p.parse_args()
    n = run(args.suite, args.results, recipe=args.recipe, mistake=args.mistake)
    print(f"wrote {n} result files to {args.results}")
