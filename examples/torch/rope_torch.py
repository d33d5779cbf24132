"""A kernel-style RoPE in torch (CPU), checked two ways against refimpl.

``rope_kernel`` takes its arguments the way inference engines do (vLLM's ``forward_native``):
flattened tokens ``(T, H, D)``, one int64 position per token, and a precomputed cos/sin cache
``(max_position, rotary_dim)`` holding ``[cos | sin]``. Two adapters connect it to refimpl:

* ``as_check_fn(cache, rotary_dim)`` wraps it as ``fn(x, positions)`` for
  :func:`refimpl.check_rope` (black-box diagnosis from probes);
* ``write_results(suite, results)`` runs it on every case of a conformance suite (format
  ``refimpl-conformance/2``: the inputs files and their metadata) and writes each case's
  outputs for ``python -m refimpl verify SUITE RESULTS``.

The kernel rotates the first ``rotary_dim`` features (``rotary_offset`` 0). Run:
``python examples/torch/rope_torch.py SUITE RESULTS`` (the suite from
``python -m refimpl conformance CONFIG --out SUITE``).
"""

from __future__ import annotations

import json
import pathlib
import sys

import numpy as np
import torch

from refimpl.conformance import read_safetensors, write_safetensors


def cos_sin_cache(inv_freq, max_position: int, attention_scaling: float = 1.0) -> torch.Tensor:
    """``[cos | sin]`` of ``m * inv_freq`` for m < max_position, float32 (as vLLM builds it)."""
    t = torch.arange(max_position, dtype=torch.float32)
    freqs = torch.outer(t, torch.as_tensor(inv_freq, dtype=torch.float32))
    return torch.cat([freqs.cos(), freqs.sin()], dim=-1) * attention_scaling


def rope_kernel(
    x, positions, cache, *, rotary_dim: int, is_neox: bool = True, half_output: bool = False
) -> torch.Tensor:
    """Rotate the first ``rotary_dim`` features of ``x`` (T, H, D) at ``positions`` (T,).

    ``is_neox``: pairs ``(i, i + r/2)``, else ``(2i, 2i + 1)``; ``half_output`` with
    adjacent pairs writes pair i to ``(i, i + r/2)`` (MLA's rotary part)."""
    cos, sin = cache[positions].chunk(2, dim=-1)  # (T, r/2) each
    cos, sin = cos[:, None, :].to(x.dtype), sin[:, None, :].to(x.dtype)
    rot, rest = x[..., :rotary_dim], x[..., rotary_dim:]
    if is_neox:
        x1, x2 = rot.chunk(2, dim=-1)
        out = torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)
    else:
        x1, x2 = rot[..., 0::2], rot[..., 1::2]
        o1, o2 = x1 * cos - x2 * sin, x2 * cos + x1 * sin
        out = torch.cat([o1, o2], -1) if half_output else torch.stack([o1, o2], -1).flatten(-2)
    return torch.cat([out, rest], dim=-1)


def as_check_fn(cache, rotary_dim: int, is_neox: bool = True):
    """``fn(x, positions)`` on NumPy ``(seq, dim)`` input, for :func:`refimpl.check_rope`."""

    def fn(x, positions):
        xt = torch.as_tensor(np.asarray(x, dtype=np.float32))[:, None, :]  # (T, 1, D)
        pos = torch.as_tensor(np.asarray(positions).astype(np.int64))
        return rope_kernel(xt, pos, cache, rotary_dim=rotary_dim, is_neox=is_neox)[:, 0].numpy()

    return fn


def _tokens(arrays, meta, name):
    """The case's input ``name`` as (T, H, D) tokens with one position each, and the map back
    to its stored layout (format refimpl-conformance/2, book page "Suite format")."""
    d = int(meta["dim"])
    if f"{name}_view_buffer" in meta:  # a strided view: offset and strides in elements
        buf = arrays[meta[f"{name}_view_buffer"]].reshape(-1)
        shape = [int(v) for v in meta[f"{name}_view_shape"].split(",")]
        strides = [int(v) * buf.itemsize for v in meta[f"{name}_view_strides"].split(",")]
        off = int(meta[f"{name}_view_offset"])
        x = np.lib.stride_tricks.as_strided(buf[off:], shape=shape, strides=strides).copy()
    else:
        x = arrays[name]
    layout, form = meta["layout"], meta["position_form"]
    if form == "mrope":
        raise ValueError("this kernel takes one position per token; M-RoPE cases need three")
    if layout in ("thd", "t(hd)", "t(qkv)"):
        t = x.shape[0]
        return x.reshape(t, -1, d), arrays["positions"], lambda y: y.reshape(x.shape)
    if layout == "bhsd":  # (B, H, S, D) -> (B*S, H, D)
        b, h, s, _ = x.shape
        tokens = x.transpose(0, 2, 1, 3).reshape(b * s, h, d)
        back = lambda y: y.reshape(b, s, h, d).transpose(0, 2, 1, 3)  # noqa: E731
    else:  # (B, S, H, D)
        b, s, h, _ = x.shape
        tokens = x.reshape(b * s, h, d)
        back = lambda y: y.reshape(x.shape)  # noqa: E731
    if form == "offsets":
        ids = arrays["offsets"][:, None] + np.arange(s)[None, :]
    elif form == "position_ids":
        ids = arrays["position_ids"]
    else:
        ids = np.broadcast_to(arrays["positions"], (b, s))
    return tokens, ids.reshape(-1), back


def write_results(suite, results) -> int:
    """Run ``rope_kernel`` on every case of ``suite``; write each case's outputs to ``results``."""
    suite, results = pathlib.Path(suite), pathlib.Path(results)
    results.mkdir(parents=True, exist_ok=True)
    manifest = json.loads((suite / "manifest.json").read_text())
    for entry in manifest["cases"]:
        arrays, meta = read_safetensors(suite / entry["files"]["inputs"]["safetensors"])
        r = int(meta["rotary_dim"])
        if meta["position_form"] == "cache":
            cache = torch.as_tensor(arrays["cos_sin_cache"])
        else:
            top = 1 + max(entry["max_position"], 0)
            cache = cos_sin_cache(arrays["inv_freq"], top, float(meta["attention_scaling"]))
        out = {}
        for pair in meta["outputs"].split(","):
            name, src = pair.split(":")
            tokens, pos, back = _tokens(arrays, meta, src)
            x = torch.as_tensor(np.asarray(tokens, dtype=np.float32))
            heads = dict(kv.split(":") for kv in meta.get("heads", "").split(",") if kv)
            n_rot = int(heads["q"]) + int(heads["k"]) if heads else x.shape[1]  # v copied
            y = x.clone()
            y[:, :n_rot] = rope_kernel(
                x[:, :n_rot],
                torch.as_tensor(np.array(pos, dtype=np.int64)),  # a copy: views are read-only
                cache,
                rotary_dim=r,
                is_neox=meta["pairing"] == "half",
                half_output=meta["output_order"] == "half",
            )
            out[name] = back(y.numpy())
        write_safetensors(results / f"{entry['name']}.safetensors", out)
    return len(manifest["cases"])


if __name__ == "__main__":
    n = write_results(sys.argv[1], sys.argv[2])
    print(f"wrote {n} result files to {sys.argv[2]}")
