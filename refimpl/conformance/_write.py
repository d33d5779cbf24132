"""Writing a suite: the plan of specs (every distinct layer spec, every distinct MLA-indexer
spec, both sides of a length switch, the sweep), the cases of each, their files and the
manifest, written last with every file's sha256."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import pathlib
from collections.abc import Callable, Mapping

import numpy as np

from .._checks import check_choice, check_count
from .._pipeline_classes import PIPELINE_CLASSES, SUITE_DTYPES, accepted_classes
from ..config import load_config, rope_schedule
from ..scaling import ROPE_SCALINGS
from ._cases import spec_cases, sweep_variants
from ._files import SuiteFileError, Tensor, atomic_write, sha256, write_safetensors
from ._layout import (
    MARGIN,
    ROTATION_ROUNDINGS,
    TINY,
    allowed_error,
    envelope_bound,
    expected_rotation,
    logical_outputs,
)

FORMAT = "refimpl-conformance/2"
#: Earlier formats verify refuses, naming the command that rewrites a suite.
OLD_FORMATS = ("refimpl-conformance/1",)
#: How a kernel gets its frequencies: ``"given"`` (``inv_freq`` in every inputs file) or
#: ``"computed"`` (no ``inv_freq``: the kernel computes them from the manifest's scaling
#: parameters).
FREQUENCY_MODES = ("given", "computed")
MANIFEST = "manifest.json"
INPUTS, EXPECTED = "inputs", "expected"
# What a suite directory may hold; anything else makes write_suite refuse the directory.
_SUITE_ENTRIES = {MANIFEST, INPUTS, EXPECTED}
# Fields of a schedule's layer the suite reads; another (a feature the suite cannot express)
# is refused by name.
_LAYER_FIELDS = {"index", "layer_type", "spec", "query_scaling", "indexer"}
# Cases of a sweep variant (the sweep multiplies the suite; these cover the rotation).
_SWEEP_CASES = ("prefill", "decode", "probe")

FORMULA = (
    "for each pair (a_i, b_i) of the rotated slice [rotary_offset, rotary_offset + "
    "rotary_dim): c = A cos(m theta_i), s = A sin(m theta_i) (A = attention_scaling); "
    "y[a_i] = x[a_i] c - x[b_i] s, y[b_i] = x[a_i] s + x[b_i] c; pairs (i, i + r/2) for "
    "pairing 'half', (2i, 2i+1) for 'interleaved'; output_order 'half' writes pair i to "
    "(i, i + r/2); every other feature copied"
)
POSITION_FORMS = {
    "positions": "m = positions[s] for (B, H, S, D) and (B, S, H, D), positions[t] for "
    "(T, H, D), (T, H*D) and (T, (Hq + 2 Hk)*D)",
    "offsets": "m(b, h, s) = offsets[b] + s",
    "position_ids": "m(b, s, h) = position_ids[b, s]",
    "cu_seqlens": "m(t) = t - cu_seqlens[j] + offsets[j] for cu_seqlens[j] <= t < "
    "cu_seqlens[j + 1] (the array positions holds m(t))",
    "mrope": "pair i of token s: m = position_ids[axis(i), s], axis(i) from mrope_section and "
    "mrope_layout",
    "cache": "c_i = cos_sin_cache[positions[t], i], s_i = cos_sin_cache[positions[t], r/2 + i] "
    "(A included); the expected outputs are exact, so the cache's own rounding counts",
}
LAYOUTS = {
    "bhsd": "q (B, Hq, S, D), k (B, Hk, S, D)",
    "bshd": "q (B, S, Hq, D), k (B, S, Hk, D)",
    "thd": "q (T, Hq, D), k (T, Hk, D)",
    "t(hd)": "query (T, Hq*D), key (T, Hk*D): head h is features [h*D, (h+1)*D)",
    "t(qkv)": "qkv (T, (Hq + 2 Hk)*D): q heads, then k heads, then v heads (copied)",
}


@dataclasses.dataclass
class Group:
    """One spec of the suite and where it comes from: case-name prefix, positions bound, the
    layers using it, its role (``"layers"`` or ``"indexer"``) and the query scaling."""

    prefix: str
    spec: object
    top: int
    layers: list
    role: str = "layers"
    query_scaling: object = None


def _layer_parts(layer) -> dict:
    """The fields of a schedule layer, refusing any the suite cannot express."""
    fields = (
        {f.name: getattr(layer, f.name) for f in dataclasses.fields(layer)}
        if dataclasses.is_dataclass(layer)
        else dict(vars(layer))
    )
    extra = sorted(k for k, v in fields.items() if k not in _LAYER_FIELDS and v is not None)
    if extra:
        raise ValueError(
            f"layer {fields.get('index')}: the conformance suite cannot express {extra} "
            "(no case would test it); no suite is written"
        )
    return fields


def _sides(schedule_at, spec, first: int, role: str):
    """Specs either side of a length switch (dynamic NTK, LongRoPE): [(prefix, spec, top)]."""
    key = "spec" if role == "layers" else "indexer"
    top = int(spec.max_position or 2**16)
    if spec.rope_type not in ("dynamic", "longrope"):
        return [("", spec, top)]
    orig = int(spec.params.get("original_max_position", top))
    above = max(top, orig + 1)
    below_spec = _layer_parts(schedule_at(orig)[first])[key]
    above_spec = _layer_parts(schedule_at(above)[first])[key]
    return [("below-switch-", below_spec, orig), ("above-switch-", above_spec, above)]


def plan_specs(schedule_at: Callable) -> list[Group]:
    """Every distinct spec of a schedule, as :class:`Group`.

    ``schedule_at(seq_len)`` returns the schedule (a sequence of layers with ``index``,
    ``spec``, ``query_scaling`` and, for MLA models, ``indexer``) for a sequence length
    (None: the config's own); layers without RoPE are skipped.
    """
    schedule = schedule_at(None)
    found: dict = {}
    for layer in schedule:
        parts = _layer_parts(layer)
        for role in ("layers", "indexer"):
            spec = parts.get("spec" if role == "layers" else "indexer")
            if spec is None:
                continue
            qs = repr(parts.get("query_scaling")) if role == "layers" else None
            key = (role, spec.key(), qs)
            found.setdefault(key, (spec, parts["query_scaling"], []))[2].append(parts["index"])
    n_layer_groups = sum(1 for role, *_ in found if role == "layers")
    groups = []
    for (role, _, _), (spec, qs, layers) in found.items():
        first = layers[0]
        if role == "indexer":
            base = f"indexer{first}-"
        else:
            base = "" if n_layer_groups == 1 else f"layer{first}-"
        for side, s, top in _sides(schedule_at, spec, first, role):
            groups.append(
                Group(base + side, s, top, layers, role, qs if role == "layers" else None)
            )
    return groups


def _in_dtype(x64: np.ndarray, dtype: str) -> tuple[np.ndarray, Tensor, np.ndarray]:
    """Values of ``x64`` rounded once to ``dtype``: (their float64 values, the safetensors
    tensor, the .npz array; bfloat16 goes to .npz as float32, which holds it exactly)."""
    if dtype == "bfloat16":
        u = x64.astype(np.float32).view(np.uint32)  # the float32 draw *is* the input's source
        bits = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)  # round to nearest even
        f32 = (bits.astype(np.uint32) << 16).view(np.float32)
        return f32.astype(np.float64), Tensor("BF16", bits.shape, lambda: [bits]), f32
    a = x64.astype(dtype)
    return a.astype(np.float64), Tensor.of(a), a


def _jsonable(value):
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, np.ndarray)):
        return [_jsonable(v) for v in np.asarray(value).tolist()]
    if isinstance(value, (np.floating, np.integer, np.bool_)):
        return value.item()
    return value


def rope_entry(spec) -> dict:
    """The rotation a spec defines, with its scaling parameters, as the manifest states it."""
    return {
        "rope_type": spec.rope_type,
        "dim": int(spec.dim),
        "rotary_dim": int(spec.rotary_dim),
        "rotary_offset": int(spec.rotary_offset),
        "pairing": spec.pairing,
        "output_order": spec.output_order,
        "attention_scaling": float(spec.attention_scaling),
        "base": float(spec.base),
        "params": _jsonable(dict(spec.params)),
        "seq_len": spec.seq_len,
        "max_position": spec.max_position,
        "mrope_section": None if spec.mrope_section is None else list(spec.mrope_section),
        "mrope_layout": spec.mrope_layout,
    }


def _cache_table(spec, top: int) -> tuple[np.ndarray, str]:
    """vLLM's cos_sin_cache for positions 0..top-1: [cos | sin] in float32 as vLLM builds
    it (``"vllm-float32"``), or the exact tables rounded to float32 where vLLM cannot run
    the spec; and which of the two it is."""
    pos = np.arange(top)
    try:
        c, s = spec.cos_sin(pos, precision="vllm-float32")
        recipe = "vllm-float32"
    except ValueError as exc:
        c, s = spec.cos_sin(pos)
        recipe = f"float64 tables rounded to float32 ({' '.join(str(exc).split())})"
    return np.concatenate([c, s], axis=1).astype(np.float32), recipe


def _metadata(entry: Mapping, dtype: str, frequencies: str) -> dict[str, str]:
    """What a kernel needs besides the arrays, as the inputs file's string metadata (so that
    a reader in any language needs no manifest parser)."""
    rope = entry["rope"]
    meta = {
        "format": FORMAT,
        "case": entry["name"],
        "dtype": dtype,
        "layout": entry["layout"],
        "position_form": entry["position_form"],
        "frequencies": frequencies,
        "outputs": ",".join(f"{o}:{v['from']}" for o, v in entry["outputs"].items()),
    }
    for k in ("rope_type", "pairing", "output_order"):
        meta[k] = rope[k]
    for k in ("dim", "rotary_dim", "rotary_offset"):
        meta[k] = str(rope[k])
    meta["attention_scaling"] = repr(rope["attention_scaling"])
    meta["base"] = repr(rope["base"])
    meta["scaling"] = json.dumps(rope["params"], sort_keys=True)
    if rope["seq_len"] is not None:
        meta["seq_len"] = str(rope["seq_len"])
    if rope["mrope_section"] is not None:
        meta["mrope_section"] = ",".join(map(str, rope["mrope_section"]))
        meta["mrope_layout"] = rope["mrope_layout"]
    for name, v in (entry.get("views") or {}).items():
        meta[f"{name}_view_buffer"] = v["buffer"]
        meta[f"{name}_view_offset"] = str(v["offset"])
        meta[f"{name}_view_shape"] = ",".join(map(str, v["shape"]))
        meta[f"{name}_view_strides"] = ",".join(map(str, v["strides"]))
    if entry.get("heads"):
        meta["heads"] = ",".join(f"{k}:{v}" for k, v in entry["heads"].items())
    return meta


def _write_case(folder: pathlib.Path, case, group: Group, dtype: str, frequencies: str) -> dict:
    """Write one case's inputs and expected files; return its manifest entry."""
    spec = group.spec
    st, npz, values, shapes = {}, {}, {}, {}
    for name, raw in case.inputs.items():
        v, t, a = _in_dtype(np.asarray(raw, dtype=np.float64), dtype)
        values[name], st[name], npz[name] = v, t, a
        shapes[name] = {"shape": list(v.shape), "dtype": dtype}
    for name, p in case.positions.items():
        arr = np.asarray(p, dtype=case.position_dtype if name == "positions" else np.int64)
        values[name] = st[name] = npz[name] = arr
        shapes[name] = {"shape": list(arr.shape), "dtype": str(arr.dtype)}
    if frequencies == "given":
        st["inv_freq"] = npz["inv_freq"] = values["inv_freq"] = np.asarray(spec.inv_freq)
        shapes["inv_freq"] = {"shape": [int(spec.inv_freq.shape[0])], "dtype": "float64"}
    entry = {
        "name": group.prefix + case.name,
        "description": case.description,
        "layers": list(group.layers),
        "role": group.role,
        "layout": case.layout,
        "position_form": case.form,
        "rope": rope_entry(spec),
        "inputs": shapes,
        "views": case.views,
        "heads": case.heads,
    }
    if case.form == "cache":
        top = int(np.max(case.positions["positions"])) + 1
        table, recipe = _cache_table(spec, top)
        st["cos_sin_cache"] = npz["cos_sin_cache"] = table
        shapes["cos_sin_cache"] = {"shape": list(table.shape), "dtype": "float32"}
        entry["cache_recipe"] = recipe
    if group.query_scaling is not None:
        qs = group.query_scaling
        entry["query_scaling"] = {
            "kind": qs.kind,
            "params": _jsonable(dict(qs.params)),
            "softmax_scale": float(qs.softmax_scale),
            "note": "multiplies the rotated queries after RoPE; not part of these outputs",
        }
    entry["outputs"] = {}
    for out, src in case.outputs.items():
        x = values[src] if src in values else None
        shape = list(x.shape) if x is not None else list(case.views[src]["shape"])
        entry["outputs"][out] = {"from": src, "shape": shape}
    inv = np.asarray(spec.inv_freq)
    exp, outs, top_pos = {"inv_freq": inv}, entry["outputs"], 0
    for lg in logical_outputs(entry, values):
        y = expected_rotation(lg.x, lg.m, inv, entry["rope"], lg.rotate)
        tol = allowed_error(lg.x, lg.m, inv, entry["rope"], dtype, envelope_bound(dtype), lg.rotate)
        exp[lg.name] = lg.to_stored(y)
        exp[f"{lg.name}_allowed"] = lg.to_stored(tol)
        outs[lg.name]["expected"] = lg.name
        outs[lg.name]["allowed"] = f"{lg.name}_allowed"
        top_pos = max(top_pos, int(np.max(np.abs(lg.m), initial=0)))
    entry["max_position"] = top_pos
    files = {}
    for kind, arrays in ((INPUTS, (st, npz)), (EXPECTED, (exp, exp))):
        base = folder / kind / entry["name"]
        meta = _metadata(entry, dtype, frequencies) if kind == INPUTS else {"case": entry["name"]}
        write_safetensors(base.with_suffix(".safetensors"), arrays[0], meta)
        atomic_write(base.with_suffix(".npz"), lambda f, a=arrays[1]: np.savez(f, **a))
        files[kind] = {fmt: f"{kind}/{entry['name']}.{fmt}" for fmt in ("safetensors", "npz")}
    entry["files"] = files
    return entry


def _prepare(folder: pathlib.Path) -> None:
    """Make ``folder`` ready for a new suite: refuse a directory holding other things, then
    remove the old manifest *first* (so an interrupted rewrite leaves no suite that
    verifies) and the old case files."""
    if folder.exists() and not folder.is_dir():
        raise ValueError(f"out_dir {folder} exists and is not a directory")
    folder.mkdir(parents=True, exist_ok=True)
    other = sorted(p.name for p in folder.iterdir() if p.name not in _SUITE_ENTRIES)
    if other:
        raise ValueError(
            f"out_dir {folder} holds {other[:5]}, which are not a suite's: write a suite into "
            "an empty directory or over an existing suite"
        )
    (folder / MANIFEST).unlink(missing_ok=True)
    for kind in (INPUTS, EXPECTED):
        sub = folder / kind
        sub.mkdir(exist_ok=True)
        for p in sub.iterdir():
            if p.is_dir() and not p.is_symlink():
                raise ValueError(f"out_dir {folder}: {p} is a directory, not a case file")
            p.unlink()


def _config_hash(cfg: Mapping) -> str:
    return hashlib.sha256(json.dumps(cfg, sort_keys=True, default=str).encode()).hexdigest()


def write_suite(
    config,
    out_dir,
    *,
    dtype: str = "float32",
    seed: int = 0,
    progress=None,
    frequencies: str = "given",
    sweep: bool = False,
) -> dict:
    """Write the golden cases of one model configuration for kernels that take ``dtype`` input.

    Parameters
    ----------
    config : dict or path
        A model ``config.json`` (as :func:`refimpl.config.rope_schedule` reads it).
    out_dir : path
        Directory to write (created if missing; it must be empty or hold a suite): the
        format ``refimpl-conformance/2`` -- ``inputs/CASE.safetensors`` and ``.npz`` (what a
        kernel reads), ``expected/CASE.safetensors`` and ``.npz`` (expected outputs and
        allowed errors, for the verifier) and ``manifest.json``, written last with every
        file's sha256. An existing suite's manifest is removed before anything else is
        written, so an interrupted write leaves no suite that verifies.
    dtype : {"float32", "bfloat16", "float16"}, default "float32"
        Dtype of the inputs; the expected outputs are float64.
    seed : int, default 0
        Seed of the random inputs.
    progress : callable, optional
        ``progress(done, total, name)`` after each case.
    frequencies : {"given", "computed"}, default "given"
        ``"given"``: every inputs file holds ``inv_freq``; ``"computed"``: it does not, and a
        kernel computes the frequencies from the manifest's ``rope_type``, ``base`` and
        scaling ``params`` (in the inputs file's metadata as ``scaling``).
    sweep : bool, default False
        Also write head-size and rotary-fraction variants (64, 128, 256 features; 1, 1/2, 1/4
        rotated) and the other pairing of each spec (prefill, decode and probe cases): tests
        of a kernel beyond the model.

    Returns
    -------
    dict
        The manifest.

    Raises
    ------
    ValueError
        ``dtype`` or ``frequencies`` unknown; ``out_dir`` holds files other than a suite's;
        the config has a feature no case can express (named).

    Notes
    -----
    Cases, for every distinct layer spec of the config's schedule (names prefixed
    ``layer<first>-`` when there are several; each lists its layers) and every distinct
    MLA-indexer spec (``indexer<first>-``): prefill (GQA heads), batched decode with
    per-sequence offsets (across 2**16), a (B, S, H, D) batch with position ids, a packed
    varlen batch with offsets, long positions (2**16 up to the context, at most 2**24), odd
    head counts, strided q and k, int32 positions, vLLM's flat (T, H*D) layout, a packed qkv
    buffer, an in-place case, vLLM's ``cos_sin_cache`` (or, for M-RoPE, text, image and
    video position ids) and basis-vector probes. Scaling methods whose frequencies switch
    with the length (dynamic NTK, LongRoPE) get every case on both sides of the switch. Each
    case is generated and written on its own, so memory is bounded by one case.
    """
    check_choice(dtype, "dtype", SUITE_DTYPES)
    check_choice(frequencies, "frequencies", FREQUENCY_MODES)
    seed = check_count(seed, "seed")
    if not isinstance(sweep, bool):
        raise TypeError(f"sweep must be a bool, got {type(sweep).__name__}")
    cfg, source = load_config(config)
    groups = plan_specs(lambda seq_len: rope_schedule(cfg, seq_len=seq_len))
    return write_groups(
        out_dir, groups, dtype=dtype, seed=seed, progress=progress, frequencies=frequencies,
        sweep=sweep, source=str(source), config_sha256=_config_hash(cfg),
    )  # fmt: skip


def write_groups(
    out_dir, groups, *, dtype, seed, progress, frequencies, sweep, source, config_sha256
) -> dict:
    """Write the cases of planned spec groups and the manifest (see :func:`write_suite`)."""
    check_choice(dtype, "dtype", SUITE_DTYPES)
    folder = pathlib.Path(out_dir)
    rng = np.random.default_rng(seed)
    plan, notes = [], []
    for g in groups:
        plan += [(g, c) for c in spec_cases(g.spec, rng, g.top)]
        if sweep:
            variants, skipped = sweep_variants(g.spec, ROPE_SCALINGS)
            notes += [f"{g.prefix or 'suite'}: {s}" for s in skipped]
            for suffix, v in variants:
                vg = dataclasses.replace(g, prefix=f"{g.prefix}sweep-{suffix}-", spec=v)
                plan += [(vg, c) for c in spec_cases(v, rng, g.top) if c.name in _SWEEP_CASES]
    names = [g.prefix + c.name for g, c in plan]
    if len(set(names)) != len(names):
        raise ValueError(f"case names repeat: {sorted(n for n in names if names.count(n) > 1)}")
    _prepare(folder)
    entries = []
    for n, (g, case) in enumerate(plan):
        entries.append(_write_case(folder, case, g, dtype, frequencies))
        if progress is not None:
            progress(n + 1, len(plan), entries[-1]["name"])
    files = {}
    for e in entries:
        for kind in (INPUTS, EXPECTED):
            for rel in e["files"][kind].values():
                files[rel] = sha256(folder / rel)
    manifest = _manifest(source, config_sha256, dtype, seed, frequencies, sweep, entries, files)
    manifest["notes"] = notes
    text = json.dumps(manifest, indent=1).encode()
    atomic_write(folder / MANIFEST, lambda f: f.write(text))
    return manifest


def _manifest(source, config_sha256, dtype, seed, frequencies, sweep, entries, files) -> dict:
    """The suite's description: format, versions, formulas, the tolerance model, cases, files."""
    from .. import __version__

    return {
        "format": FORMAT,
        "refimpl_version": __version__,
        "config_source": source,
        "config_sha256": config_sha256,
        "dtype": dtype,
        "seed": seed,
        "frequencies": frequencies,
        "sweep": sweep,
        "formula": FORMULA,
        "position_forms": POSITION_FORMS,
        "layouts": LAYOUTS,
        "pipelines": list(PIPELINE_CLASSES),
        "accepted_pipelines": list(accepted_classes(dtype)),
        "tolerance_model": {
            "allowed": "MARGIN * A * (|x_a| + |x_b|) * (e_class(m, theta_i) + "
            "ROTATION_ROUNDINGS * u) + tiny; the arrays <output>_allowed hold the largest "
            "over accepted_pipelines",
            "MARGIN": MARGIN,
            "ROTATION_ROUNDINGS": ROTATION_ROUNDINGS,
            "u": {"float32": 2.0**-24, "bfloat16": 2.0**-8, "float16": 2.0**-11}[dtype],
            "tiny": TINY[dtype],
            "e": {n: c.recipe for n, c in PIPELINE_CLASSES.items()},
            "copied": "features outside the rotated slice and v heads: allowed 0",
        },
        "results": "a directory (not the suite) with RESULTS/<case>.safetensors or .npz "
        "holding each case's outputs under the names of its 'outputs' (any float dtype, the "
        "shapes given; other arrays are ignored)",
        "cases": entries,
        "files": files,
    }


def refuse_old_format(path, fmt) -> None:
    """SuiteFileError for a suite in an earlier format, naming the command that rewrites it."""
    raise SuiteFileError(
        f"{path}: format {fmt!r} is no longer read; rewrite the suite with "
        f"'python -m refimpl conformance CONFIG --dtype DTYPE --out DIR' (format {FORMAT!r})"
    )
