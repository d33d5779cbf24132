"""Running an engine's RoPE on a conformance suite: each case's inputs as tokens ``(N, H, D)``
with one position each (the layouts and position forms of the book page "Suite format"),
the engine's outputs written back in the case's layout, the verdict, and the worst ratio of
error to allowed error."""

from __future__ import annotations

import json
import pathlib

import numpy as np

from refimpl.config import RopeSpec
from refimpl.conformance import read_safetensors, verify_outputs, write_safetensors
from refimpl.conformance._diagnose import _spec as case_spec


def spec_of(entry) -> RopeSpec:
    """The case's RopeSpec (from the manifest's rope entry and the suite's frequencies), as the
    verifier's diagnosis builds it."""
    return case_spec(entry["rope"], entry["_inv_freq"])


def tokens(arrays, meta, name):
    """Input ``name`` as float32 tokens (N, H, D), the position of each, and the map back."""
    d = int(meta["dim"])
    if f"{name}_view_buffer" in meta:
        buf = arrays[meta[f"{name}_view_buffer"]].reshape(-1)
        shape = [int(v) for v in meta[f"{name}_view_shape"].split(",")]
        strides = [int(v) * buf.itemsize for v in meta[f"{name}_view_strides"].split(",")]
        off = int(meta[f"{name}_view_offset"])
        x = np.lib.stride_tricks.as_strided(buf[off:], shape=shape, strides=strides).copy()
    else:
        x = arrays[name]
    x = np.asarray(x, dtype=np.float32)
    layout, form = meta["layout"], meta["position_form"]
    if layout in ("thd", "t(hd)", "t(qkv)"):
        return x.reshape(x.shape[0], -1, d), arrays["positions"], lambda y: y.reshape(x.shape)
    if layout == "bhsd":
        b, h, s, _ = x.shape
        tok = x.transpose(0, 2, 1, 3).reshape(b * s, h, d)

        def back(y):
            return y.reshape(b, s, h, d).transpose(0, 2, 1, 3)

    else:
        b, s, h, _ = x.shape
        tok = x.reshape(b * s, h, d)

        def back(y):
            return y.reshape(x.shape)

    if form == "offsets":
        ids = arrays["offsets"][:, None] + np.arange(s)[None, :]
    elif form == "position_ids":
        ids = arrays["position_ids"]
    else:
        ids = np.broadcast_to(arrays["positions"], (b, s))
    return tok, np.asarray(ids).reshape(-1).astype(np.int64), back


def run_engine(suite, results, engine, *, skip=()) -> list[str]:
    """``engine(tokens, positions, spec) -> outputs`` (float32 (N, H, D)) on every case of a
    suite (each engine computes its own tables: the ``cache`` form's cache is not read); the
    ``v`` heads of a packed qkv are copied. Cases whose position form is in ``skip`` are not
    run (their verdict is "no results file"). Returns the names of the skipped cases."""
    suite, results = pathlib.Path(suite), pathlib.Path(results)
    results.mkdir(parents=True, exist_ok=True)
    manifest = json.loads((suite / "manifest.json").read_text())
    skipped = []
    for entry in manifest["cases"]:
        arrays, meta = read_safetensors(suite / entry["files"]["inputs"]["safetensors"])
        if meta["position_form"] in skip:
            skipped.append(entry["name"])
            continue
        expected, _ = read_safetensors(
            suite / entry["files"]["expected"]["safetensors"], ["inv_freq"]
        )
        spec = spec_of({**entry, "_inv_freq": expected["inv_freq"]})
        out = {}
        for pair in meta["outputs"].split(","):
            name, src = pair.split(":")
            tok, pos, back = tokens(arrays, meta, src)
            heads = dict(kv.split(":") for kv in meta.get("heads", "").split(",") if kv)
            n_rot = int(heads["q"]) + int(heads["k"]) if heads else tok.shape[1]
            y = tok.copy()
            y[:, :n_rot] = engine(tok[:, :n_rot], pos, spec)
            out[name] = back(y)
        write_safetensors(results / f"{entry['name']}.safetensors", out)
    return skipped


def worst_ratio(report) -> float:
    """The largest error over allowed error of any case's worst element."""
    return max((c.err / c.allowed if c.allowed else 0.0) for c in report.cases if c.index)


def verify(suite, results):
    report = verify_outputs(suite, results)
    return report, worst_ratio(report)
