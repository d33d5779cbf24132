"""A kernel-style RoPE in torch (CPU), checked two ways against refimpl.

``rope_kernel`` takes its arguments the way inference engines do (vLLM's ``forward_native``):
flattened tokens ``(T, H, D)``, one int64 position per token, and a precomputed cos/sin cache
``(max_position, rotary_dim)`` holding ``[cos | sin]``. Two adapters connect it to refimpl:

* ``as_check_fn(cache, rotary_dim)`` wraps it as ``fn(x, positions)`` for
  :func:`refimpl.check_rope` (black-box diagnosis from probes);
* ``write_results(suite, results, ...)`` runs it on every case of a conformance suite and
  writes ``q_out`` and ``k_out`` for ``python -m refimpl verify SUITE RESULTS``.

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


def _rows(arrays, entry, name):
    """The case's input as (T, H, D) tokens with one position each (any layout)."""
    spec = entry["inputs"][name]
    if "buffer" in spec:
        buf = arrays[spec["buffer"]]
        isz = buf.itemsize
        x = np.lib.stride_tricks.as_strided(
            buf[spec["offset"] :], shape=spec["shape"], strides=[s * isz for s in spec["strides"]]
        ).copy()
    else:
        x = arrays[name]
    form = entry["position_form"]
    if form == "cu_seqlens":  # already (T, H, D)
        return x, arrays["positions"], lambda y: y
    b, h, s, d = x.shape
    ids = (
        arrays["position_ids"]
        if form == "offsets"
        else np.broadcast_to(arrays["positions"], (b, s))
    )
    tokens = x.transpose(0, 2, 1, 3).reshape(b * s, h, d)  # (B*S, H, D)
    return tokens, ids.reshape(-1), lambda y: y.reshape(b, s, h, d).transpose(0, 2, 1, 3)


def write_results(suite, results) -> int:
    """Run ``rope_kernel`` on every case of ``suite``; write ``q_out``/``k_out`` to ``results``."""
    suite, results = pathlib.Path(suite), pathlib.Path(results)
    results.mkdir(parents=True, exist_ok=True)
    manifest = json.loads((suite / "manifest.json").read_text())
    for entry in manifest["cases"]:
        arrays, _ = read_safetensors(suite / entry["files"]["safetensors"])
        rope = entry["rope"]
        top = 1 + max(entry["max_position"], 0)
        cache = cos_sin_cache(arrays["inv_freq"], top, rope["attention_scaling"])
        out = {}
        for name in ("q", "k"):
            tokens, pos, back = _rows(arrays, entry, name)
            y = rope_kernel(
                torch.as_tensor(np.asarray(tokens, dtype=np.float32)),
                torch.as_tensor(np.array(pos, dtype=np.int64)),  # a copy: views are read-only
                cache,
                rotary_dim=rope["rotary_dim"],
                is_neox=rope["pairing"] == "half",
                half_output=rope["output_order"] == "half",
            )
            out[f"{name}_out"] = back(y.numpy())
        write_safetensors(results / entry["files"]["safetensors"], out)
    return len(manifest["cases"])


if __name__ == "__main__":
    n = write_results(sys.argv[1], sys.argv[2])
    print(f"wrote {n} result files to {sys.argv[2]}")
