"""Why a case fails. Two sources, one implementation each:

* the causes only the suite's layout can see: the results are reproduced (within the
  accepted envelope) by the case's own inputs and positions with one layout mistake applied
  -- GQA head loops, sequences of a packed batch not restarted, decode offsets, strides,
  positions held in 16 bits, int32 positions read as int64, a packed ``qkv``'s ``v`` heads,
  M-RoPE rows swapped or collapsed to 1-D, a ``cos_sin_cache`` row or half mixed up;
* the checker's stages (:func:`refimpl.check.check_rope_arrays`) on the probe case's arrays,
  with the case's full declarations (the spec, hence its pairing, output order, rotary slice
  and attention factor): pairing, direction, base, scaling, offsets, precision.

Every case's diagnosis runs on its own; one that cannot run says so in one line.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping

import numpy as np

from .._pipeline_classes import PIPELINE_CLASSES, pipeline_class_for_stage
from ..check import check_rope_arrays
from ..config import RopeSpec
from ..multiaxis import MROPE_LAYOUTS, mrope_axis_of_pair
from ._layout import (
    allowed_error,
    envelope_bound,
    expected_rotation,
    logical_outputs,
    pair_axes,
    varlen_token_positions,
)

WRAP = 2**16
_ROWS = ("t", "h", "w", "e")
# Case names of one spec (_cases.spec_cases), longest first so that suffixes match exactly.
_CASE_NAMES = sorted(
    ("prefill", "decode", "batch-ids", "varlen", "long", "odd-heads", "strided",
     "positions-int32", "flat", "qkv-packed", "in-place", "cos-sin-cache", "mrope", "probe"),
    key=len, reverse=True,
)  # fmt: skip
_NOTHING = "the inputs unchanged: nothing was rotated"
# What a case alone tests, for a case that is the only one of its spec to fail.
_ONLY_THIS = {
    "positions-int32": "its positions are stored as int32 (every other case's as int64): read "
    "them as 4-byte integers",
    "strided": "its q and k are strided views: read them with the view's offset and strides "
    "(in elements)",
    "varlen": "it packs several sequences (cu_seqlens): restart the positions at each "
    "sequence and add that sequence's offset",
    "decode": "it gives each sequence its own offset: position = offsets[b] + s",
    "batch-ids": "its layout is (B, S, H, D) with a position id per token",
    "flat": "its layout is (T, H*D): head h is features [h*D, (h+1)*D)",
    "qkv-packed": "it packs q, k and v in one buffer: rotate the q and k heads, copy v",
    "in-place": "the results must hold the rotated q and k under their input names",
    "cos-sin-cache": "its cos/sin come from cos_sin_cache rows positions[t] ([cos | sin])",
    "mrope": "its tokens have distinct (t, h, w) position rows (M-RoPE)",
    "long": "its positions are the largest (2**16 up to the context)",
}


def _one_line(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {' '.join(str(exc).split()) or '(no message)'}"


def _group(name: str) -> str:
    """The spec-group prefix of a case name (``""``, ``"layer5-"``, ``"above-switch-"``...)."""
    for suffix in _CASE_NAMES:
        if name == suffix or name.endswith("-" + suffix):
            return name[: len(name) - len(suffix)]
    return name


def diagnose_cases(failed, manifest: Mapping) -> list[str]:
    """Diagnosis lines for the failing cases (``_Judged`` records), spec group by spec group:
    each case's layout causes, then the checker's findings on the group's probe case (unless
    a layout cause explains the probe); a failing case with neither gets one line saying so."""
    dtype = manifest["dtype"]
    groups: dict = {}
    for j in failed:
        groups.setdefault(_group(j.entry["name"]), []).append(j)
    lines: list[str] = []
    for prefix, cases in groups.items():
        found = {}
        for j in cases:
            try:
                found[j.entry["name"]] = _case_lines(j, dtype)
            except Exception as exc:
                found[j.entry["name"]] = [
                    f"{j.entry['name']}: the diagnosis could not run ({_one_line(exc)})"
                ]
        probe = next((j for j in cases if j.entry["name"] == prefix + "probe"), None)
        checker = []
        if probe is not None and probe.got and not _layout_cause(found[probe.entry["name"]]):
            try:
                checker = _checker_lines(probe, dtype)
            except Exception as exc:
                checker = [
                    f"{probe.entry['name']}: the checker could not run on these arrays "
                    f"({_one_line(exc)})"
                ]
        for j in cases:
            name = j.entry["name"]
            lines += found[name]
            cls = j.result.pipeline
            by_class = bool(cls) and not PIPELINE_CLASSES[cls].accepted_for(dtype)
            if j.got and not found[name] and not checker and not by_class:
                suffix = name[len(prefix) :]
                if len(cases) == 1 and suffix in _ONLY_THIS:
                    lines.append(f"{name}: only this case fails: {_ONLY_THIS[suffix]}")
                    continue
                why = "its probe case passes" if probe is None else "nor does the checker"
                lines.append(f"{name}: no known layout mistake reproduces these results ({why})")
        lines += checker
    return _merge(lines)


def _merge(lines: list[str]) -> list[str]:
    """One line per finding: ``a: the results match X`` and ``b: the results match X`` become
    ``a, b: the results match X`` (in the order of first appearance)."""
    merged: dict = {}
    for line in lines:
        name, sep, text = line.partition(": ")
        key = text if sep and text.startswith("the results match ") else line
        merged.setdefault(key, []).append(name)
    return [
        f"{', '.join(names)}: {key}" if key.startswith("the results match ") else key
        for key, names in merged.items()
    ]


def _layout_cause(lines) -> bool:
    return any(": the results match " in line for line in lines)


def _case_lines(j, dtype: str) -> list[str]:
    """The layout mistakes that reproduce a case's results (or why none is looked for)."""
    name, got = j.entry["name"], j.got
    if not got:
        return []
    bad = {o: ~np.isfinite(np.asarray(a, np.float64)) for o, a in got.items()}
    n_bad = sum(int(b.sum()) for b in bad.values())
    if n_bad:
        out, mask = next((o, b) for o, b in bad.items() if b.any())
        idx = tuple(int(i) for i in np.argwhere(mask)[0])
        return [
            f"{name}: {n_bad} outputs are NaN or infinite (first {out}{list(idx)}): a kernel "
            "that forms angles or positions in float16 overflows above 65504; no further "
            "diagnosis of this case"
        ]
    logical = logical_outputs(j.entry, j.inputs)
    inv = np.asarray(j.expected["inv_freq"], dtype=np.float64)
    rope = j.entry["rope"]
    bound = envelope_bound(dtype)
    tols = [allowed_error(lg.x, lg.m, inv, rope, dtype, bound, lg.rotate) for lg in logical]
    matches = []
    for text, make in _variants(j, logical):
        try:
            alt = make()
            if alt is not None and _reproduces(logical, alt, got, inv, rope, tols, dtype):
                matches.append(text)
        except ValueError:  # positions the reference cannot evaluate: not this mistake
            continue
    if len(matches) > 1 and _NOTHING in matches[0]:
        matches = matches[1:]  # a rotation by 0 everywhere: the specific cause says more
    if not matches:
        return []
    head = f"{name}: the results match {matches[0]}"
    return [head + (f" (equally: {'; '.join(matches[1:])})" if matches[1:] else "")]


def _reproduces(logical, alt, got, inv, rope, tols, dtype: str) -> bool:
    """Whether every output equals the variant's expected rotation within the case's own
    envelope ``tols`` (the tolerance of the case's inputs and positions, so that a variant with
    huge positions does not match by a loose bound)."""
    for lg, variant, tol in zip(logical, alt, tols, strict=True):
        x, m, rotate = variant[:3]
        v_inv, v_rope = variant[3:] if len(variant) == 5 else (inv, rope)  # other frequencies
        y = expected_rotation(x, m, v_inv, v_rope, rotate)
        g = lg.to_heads(np.asarray(got[lg.name], dtype=np.float64))
        if x is not lg.x or rotate is not lg.rotate:  # other inputs or rows: they count too
            extra = allowed_error(x, lg.m, inv, rope, dtype, envelope_bound(dtype), rotate)
            tol = np.maximum(tol, extra)
        if not np.all(np.abs(g - y) <= tol):
            return False
    return True


def _same(logical):
    return [(lg.x, lg.m, lg.rotate) for lg in logical]


def _with_m(logical, new_m: Callable):
    """Every output with positions ``new_m(lg)`` (None: the variant does not apply)."""
    out = []
    for lg in logical:
        m = new_m(lg)
        if m is None:
            return None
        out.append((lg.x, np.asarray(m, dtype=np.float64), lg.rotate))
    return out


def _variants(j, logical) -> list[tuple[str, Callable]]:
    """Layout mistakes that apply to this case: (text, function giving the variant)."""
    entry, arrays = j.entry, j.inputs
    form, layout = entry["position_form"], entry["layout"]
    out = [
        (
            _NOTHING
            + (
                " (an in-place kernel that did not write back)"
                if "in-place" in entry["name"]
                else ""
            ),
            lambda: [(lg.x, lg.m, np.zeros(lg.x.shape[:-1], dtype=bool)) for lg in logical],
        )
    ]
    out += _position_variants(form, layout, arrays, logical)
    out += _wrap_variants(form, arrays, logical)
    out += _view_variants(entry, arrays, logical)
    out += _head_variants(entry, logical)
    if form == "mrope":
        out += _mrope_variants(entry, arrays, logical)
    if form == "cache":
        out += _cache_variants(arrays, logical)
    if j.switch is not None:  # a length-dependent method: the other side's frequencies
        side, inv, rope = j.switch
        text = (
            f"the frequencies of the {side} side of the length switch (LongRoPE's other "
            "factor set, or dynamic NTK's other base): the engine chooses them by another "
            "length than the sequence's"
        )
        out.append((text, lambda: [(lg.x, lg.m, lg.rotate, inv, rope) for lg in logical]))
    return out


def _along(values, axis: int):
    """``lg -> positions``: ``values`` laid along ``axis`` of an output's rows."""

    def place(lg):
        shape = [1] * (lg.x.ndim - 1)
        shape[axis] = -1
        return np.broadcast_to(np.asarray(values).reshape(shape), lg.x.shape[:-1])[..., None]

    return place


def _position_variants(form, layout, arrays, logical):
    """Mistakes in the position form: offsets, packed sequences, batch position ids."""
    axis = {"bhsd": 2, "bshd": 1}.get(layout, 0)
    seq = logical[0].x.shape[axis]
    s = np.arange(seq)
    if form == "offsets":
        off = np.asarray(arrays["offsets"])
        return [
            ("offsets ignored: every sequence rotated from position 0",
             lambda: _with_m(logical, _along(s, axis))),
            ("one offset for the whole batch (offsets[0]) instead of one per sequence",
             lambda: _with_m(logical, _along(s + int(off[0]), axis))),
        ]  # fmt: skip
    if form == "cu_seqlens":
        cu, off = np.asarray(arrays["cu_seqlens"]), np.asarray(arrays["offsets"])
        restart = varlen_token_positions(cu, np.zeros_like(off))
        return [
            ("positions not restarted per sequence: the packed token index t used",
             lambda: _with_m(logical, _along(np.arange(int(cu[-1])), 0))),
            ("per-sequence offsets ignored: every sequence of the packed batch from 0",
             lambda: _with_m(logical, _along(restart, 0))),
        ]  # fmt: skip
    if form == "position_ids":
        ids = np.asarray(arrays["position_ids"])
        return [
            ("the first row's position ids used for every sequence of the batch",
             lambda: _with_m(logical, _along(ids[0], axis))),
            ("positions 0..S-1 instead of the position ids",
             lambda: _with_m(logical, _along(s, axis))),
        ]  # fmt: skip
    return []


def _wrap_variants(form, arrays, logical):
    out = []
    top = max(int(np.max(np.abs(lg.m), initial=0)) for lg in logical)
    if top >= WRAP // 2:
        out.append(
            (
                f"positions held in 16 bits: wrapped modulo 2**16 ({WRAP})",
                lambda: _with_m(logical, lambda lg: np.mod(lg.m, WRAP)),
            )
        )
        out.append(
            (
                "positions held in int16: wrapped into [-2**15, 2**15)",
                lambda: _with_m(logical, lambda lg: np.mod(lg.m + WRAP // 2, WRAP) - WRAP // 2),
            )
        )
    pos = arrays.get("positions")
    if (
        form in ("positions", "cache")
        and pos is not None
        and pos.dtype == np.int32
        and pos.size % 2 == 0
    ):
        wide = pos.view(np.int64)
        out.append(("int32 positions read as int64", lambda: _reinterpret(logical, pos, wide)))
    if form in ("positions", "cache") and pos is not None and pos.dtype == np.int64:
        narrow = pos.view(np.int32)[: pos.size]
        out.append(("int64 positions read as int32", lambda: _reinterpret(logical, pos, narrow)))
    return out  # fmt: skip


def _reinterpret(logical, pos, new):
    """Positions replaced element by element (``pos[i] -> new[i]``, padded with 0)."""
    full = np.zeros(pos.size, dtype=np.int64)
    full[: min(new.size, pos.size)] = new[: pos.size]
    table = dict(zip(pos.tolist(), full.tolist(), strict=True))
    if len(table) != pos.size:
        return None
    return _with_m(logical, lambda lg: np.vectorize(table.get, otypes=[np.int64])(lg.m))


def _view_variants(entry, arrays, logical):
    views = entry.get("views") or {}
    if not views:
        return []

    def read(contiguous: bool, use_offset: bool):
        out = []
        for lg in logical:
            v = views.get(lg.source)
            if v is None:
                out.append((lg.x, lg.m, lg.rotate))
                continue
            buf = np.asarray(arrays[v["buffer"]], dtype=np.float64).reshape(-1)
            off = int(v["offset"]) if use_offset else 0
            n = int(np.prod(v["shape"]))
            if contiguous:
                if off + n > buf.size:
                    return None
                x = buf[off : off + n].reshape(v["shape"])
            else:
                x = np.lib.stride_tricks.as_strided(
                    buf[off:], shape=v["shape"],
                    strides=[st * buf.itemsize for st in v["strides"]],
                ).copy()  # fmt: skip
            out.append((x, lg.m, lg.rotate))
        return out

    return [
        ("strides ignored: the view read as contiguous from its offset", lambda: read(True, True)),
        ("the view's offset ignored", lambda: read(False, False)),
    ]


def _head_variants(entry, logical):
    out = []
    names = [lg.source for lg in logical]
    layout = entry["layout"]
    if layout == "t(qkv)":
        h = entry["heads"]

        def qkv(rotate_v: bool, rotate_k: bool):
            lg = logical[0]
            rot = np.zeros(lg.x.shape[:-1], dtype=bool)
            rot[:, : h["q"]] = True
            if rotate_k:
                rot[:, h["q"] : h["q"] + h["k"]] = True
            if rotate_v:
                rot[:, h["q"] + h["k"] :] = True
            return [(lg.x, lg.m, rot)]

        return [
            ("the v heads of the packed qkv rotated too", lambda: qkv(True, True)),
            ("the k heads of the packed qkv not rotated", lambda: qkv(False, False)),
        ]
    if len(logical) != 2:
        return out
    q, k = logical
    head_axis = 1 if layout in ("bhsd", "thd", "t(hd)") else 2
    hq, hk = q.x.shape[head_axis], k.x.shape[head_axis]
    if hq > hk:

        def q_heads_skipped():
            rot = np.zeros(q.x.shape[:-1], dtype=bool)
            idx = [slice(None)] * rot.ndim
            idx[head_axis] = slice(0, hk)
            rot[tuple(idx)] = True
            return [(q.x, q.m, rot), (k.x, k.m, k.rotate)]

        which = f"query head {hk}" if hk == hq - 1 else f"query heads {hk}..{hq - 1}"
        text = (
            f"{which} left unrotated: the head loop runs over the {hk} key heads' count "
            f"({names[0]} has {hq} heads)"
        )
        out.append((text, q_heads_skipped))
        if hq % hk == 0 and hq // hk > 1:
            g = hq // hk
            out.append((
                f"the keys rotated {g} times (once per query head of the group, GQA)",
                lambda: [(q.x, q.m, q.rotate), (k.x, k.m * g, k.rotate)],
            ))  # fmt: skip
    return out


def _mrope_variants(entry, arrays, logical):
    rope = entry["rope"]
    ids = np.asarray(arrays["position_ids"], dtype=np.int64)
    axes = pair_axes(rope)
    out = []

    def with_axes(ax, rows):
        per_pair = rows[ax].T  # (S, n)
        return _with_m(
            logical,
            lambda lg: np.broadcast_to(
                per_pair.reshape(1, 1, *per_pair.shape), (*lg.x.shape[:-1], per_pair.shape[1])
            ),
        )

    out.append(
        (
            "M-RoPE collapsed to 1-D: every pair at the t row",
            lambda: with_axes(np.zeros_like(axes), ids),
        )
    )
    n = ids.shape[0]
    for perm in itertools.permutations(range(min(n, 3))):
        if perm == tuple(range(len(perm))):
            continue
        order = list(perm) + list(range(len(perm), n))
        words = ", ".join(_ROWS[i] for i in order)
        out.append(
            (
                f"the M-RoPE sections swapped: rows taken in the order ({words})",
                lambda o=order: with_axes(axes, ids[o]),
            )
        )
    for layout in MROPE_LAYOUTS:
        if layout == rope["mrope_layout"]:
            continue
        try:
            other = mrope_axis_of_pair(rope["mrope_section"], layout)
        except ValueError:
            continue
        if other.max() < n and not np.array_equal(other, axes):
            out.append(
                (
                    f"the M-RoPE layout {layout!r} instead of {rope['mrope_layout']!r}",
                    lambda o=other: with_axes(o, ids),
                )
            )
    return out  # fmt: skip


def _cache_variants(arrays, logical):
    t = np.arange(np.asarray(arrays["positions"]).size)
    return [
        ("the cos_sin_cache row of the token index t instead of positions[t]",
         lambda: _with_m(logical, lambda lg: np.broadcast_to(
             t.reshape(-1, 1), lg.x.shape[:-1])[..., None])),
    ]  # fmt: skip


def _spec(rope: Mapping, inv) -> RopeSpec:
    """The case's RopeSpec, from the manifest's rope entry and the suite's frequencies."""
    return RopeSpec(
        dim=rope["dim"],
        rotary_dim=rope["rotary_dim"],
        base=rope["base"],
        rope_type=rope["rope_type"],
        inv_freq=np.asarray(inv, dtype=np.float64),
        attention_scaling=rope["attention_scaling"],
        pairing=rope["pairing"],
        params=rope["params"],
        seq_len=rope["seq_len"],
        max_position=rope["max_position"],
        output_order=rope["output_order"],
        rotary_offset=rope["rotary_offset"],
        mrope_section=None if rope["mrope_section"] is None else tuple(rope["mrope_section"]),
        mrope_layout=rope["mrope_layout"],
    )


def _checker_lines(j, dtype: str) -> list[str]:
    """The checker's error findings on a probe case's rows, with the spec as the expectation,
    and the pipeline class of each rounded stage it read (whether a ``dtype`` suite accepts it)."""
    name, rope = j.entry["name"], j.entry["rope"]
    axes = pair_axes(rope)
    if axes is not None and rope["mrope_layout"] == "imrope" and np.any(axes == 3):
        return [f"{name}: checker not run (the imrope text rows hold pairs at position 0)"]
    spec = _spec(rope, j.expected["inv_freq"])
    d = int(rope["dim"])
    out = []
    for lg in logical_outputs(j.entry, j.inputs):
        g = np.asarray(j.got[lg.name], dtype=np.float64).reshape(-1, d)
        pos = np.broadcast_to(lg.m[..., :1], (*lg.x.shape[:-1], 1)).reshape(-1)
        keep = np.all(np.isfinite(g), axis=1)  # rows with NaN/inf are named by the case line
        rep = check_rope_arrays(pos[keep], lg.x.reshape(-1, d)[keep], g[keep], dim=d, expected=spec)
        errors = [f for f in rep.findings if getattr(f, "severity", "error") == "error"]
        out += [f"{name} ({lg.name}): checker: {f}" for f in errors]
        out += _stage_lines(f"{name} ({lg.name})", rep.precision_stages, dtype) if errors else []
        break  # q_out and k_out hold the same probe rows
    return out


def _stage_lines(where: str, stages, dtype: str) -> list[str]:
    """One line per half-precision stage the checker read: its pipeline class (the registry's
    name, as the cases' ``pipeline`` column gives it) and whether a ``dtype`` suite accepts it."""
    out = []
    for st in stages:
        cls = pipeline_class_for_stage(st.stage, st.format, dtype)
        if cls is None:
            continue
        verdict = "accepted" if cls.accepted_for(dtype) else "not accepted"
        out.append(
            f"{where}: the {st.stage} in {st.format} are pipeline class {cls.name} "
            f"({verdict} for {dtype} inputs)"
        )
    return out
