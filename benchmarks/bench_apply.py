"""RoPE application: copy floor, transformers' apply_rotary_pos_emb and Meta's complex form
(torch CPU, one thread), and refimpl, side by side; medians over repeats, ratios per pair.

Run: .venv/bin/python benchmarks/bench_apply.py [--repeats N] [--seq 4096]
"""

from __future__ import annotations

import argparse

import numpy as np
from _common import median_time, print_table

import refimpl


def torch_peers(x, c, s, pairing):
    """Peer timings (seconds) from the formulas of peer-formulas.md sections 1.12 and 2.1."""
    try:
        import torch
    except ImportError:
        return {}
    torch.set_num_threads(1)
    q = torch.from_numpy(x)
    out = {}
    if pairing == "half":
        from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

        cos = torch.from_numpy(np.concatenate([c, c], -1).astype(x.dtype))[None]  # (1, seq, d)
        sin = torch.from_numpy(np.concatenate([s, s], -1).astype(x.dtype))[None]
        out["transformers apply_rotary_pos_emb (q only)"] = median_time(
            lambda: apply_rotary_pos_emb(q, q, cos, sin)[0], 5
        )
    else:
        fc = torch.polar(torch.ones(c.shape), torch.from_numpy(np.arctan2(s, c)).float())

        def meta():
            xc = torch.view_as_complex(q.float().reshape(*q.shape[:-1], -1, 2))
            return torch.view_as_real(xc * fc).flatten(-2).type_as(q)

        out["Meta complex form (torch)"] = median_time(meta, 5)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--seq", type=int, default=4096)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    pos = np.arange(args.seq)
    c, s = refimpl.cos_sin(pos, dim=128)
    for dtype in (np.float32, np.float64):
        x = rng.standard_normal((1, 32, args.seq, 128)).astype(dtype)
        o = np.empty_like(x)
        floor = median_time(lambda x=x, o=o: np.copyto(o, x), args.repeats)
        rows = [("copy floor (np.copyto)", "-", floor * 1e3, 1.0)]
        for pairing in ("interleaved", "half"):
            for name, t in torch_peers(x, c, s, pairing).items():
                rows.append((name, pairing, t * 1e3, t / floor))
            kern = median_time(
                lambda x=x, o=o, p=pairing: refimpl.apply_rope_tables(x, c, s, pairing=p, out=o),
                args.repeats,
            )
            rows.append(("refimpl apply_rope_tables (exact)", pairing, kern * 1e3, kern / floor))
            nochk = median_time(
                lambda x=x, o=o, p=pairing: refimpl.apply_rope_tables(
                    x, c, s, pairing=p, out=o, check_finite=False
                ),
                args.repeats,
            )
            rows.append(
                ("refimpl ... exact, check_finite=False", pairing, nochk * 1e3, nochk / floor)
            )
            if pairing == "interleaved":
                for chk in (True, False):
                    fused = median_time(
                        lambda x=x, o=o, chk=chk: refimpl.apply_rope_tables(
                            x, c, s, pairing="interleaved", out=o, fused=True, check_finite=chk
                        ),
                        args.repeats,
                    )
                    name = "refimpl apply_rope_tables fused" + (
                        "" if chk else ", check_finite=False"
                    )
                    rows.append((name, pairing, fused * 1e3, fused / floor))
            full = median_time(
                lambda x=x, o=o, p=pairing: refimpl.apply_rope(x, pos, pairing=p, out=o),
                max(3, args.repeats // 2),
            )
            rows.append(("refimpl apply_rope (tables included)", pairing, full * 1e3, full / floor))
        peers = {r[1]: r[2] for r in rows if not r[0].startswith(("refimpl", "copy"))}
        hf = [r[2] for r in rows if r[0].startswith("transformers")]

        def ratio(r, ref):
            return f"{ref / r[2]:.1f}x" if r[0].startswith("refimpl") and ref else ""

        rows = [(*r, ratio(r, peers.get(r[1])), ratio(r, hf[0] if hf else None)) for r in rows]
        print_table(
            f"x {x.shape} {np.dtype(dtype).name}, torch threads = 1",
            rows,
            (
                "implementation",
                "pairing",
                "median ms",
                "/ copy floor",
                "same-pairing peer / refimpl",
                "transformers / refimpl",
            ),
        )


if __name__ == "__main__":
    main()
