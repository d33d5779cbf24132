"""RoPE application: copy floor, transformers' apply_rotary_pos_emb and Meta's complex form
(torch CPU, one thread), and refimpl, side by side; medians over repeats, ratios per pair.
refimpl's rows are timed alternately with the copy floor and their "/ copy floor" column is
the median of the per-repeat ratios; the last lines compare the best rows with the goals.
"in place" rows rotate a buffer into itself (out=x), as a model does with the q/k it owns:
no second array is written, so they avoid the reads that writing a fresh `out` costs
(np.copyto streams its stores past the cache; NumPy's arithmetic loops cannot).

``--complexity`` instead times four ways of adding position (additive absolute table,
relative-bias table, element-wise RoPE, dense rotation matrices) over ranges of the length L
and the head width d, fits the log-log slopes and writes them with the timings to
``benchmarks/results/complexity.json``, which the book's complexity page plots (wall time is
measured here, not while the book builds).

Run: .venv/bin/python benchmarks/bench_apply.py [--repeats N] [--seq 4096] [--complexity]
"""

from __future__ import annotations

import argparse
import json
import pathlib
import platform

import numpy as np
from _common import median_time, paired_ratio, print_table

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


VARIANTS = (  # (row name, keyword arguments of apply_rope_tables, in place?)
    ("refimpl apply_rope_tables (exact)", {}, False),
    ("refimpl ... exact, check_finite=False", {"check_finite": False}, False),
    ("refimpl ... exact, in place (out=x)", {}, True),
    ("refimpl apply_rope_tables fused", {"fused": True}, False),
    ("refimpl ... fused, check_finite=False", {"fused": True, "check_finite": False}, False),
    ("refimpl ... fused, in place (out=x)", {"fused": True}, True),
    (
        "refimpl ... fused, check_finite=False, in place",
        {"fused": True, "check_finite": False},
        True,
    ),
)
GOALS = (  # (pairing, most times the copy floor, least speed-up over transformers)
    ("interleaved", 1.3, 20.0),
    ("half", 4.0, 5.0),
)


def goal_lines(rows, hf_ms):
    """One line per goal of the issue: the best refimpl row against it, and whether it is met."""
    lines = []
    for pairing, floor_goal, speed_goal in GOALS:
        mine = [r for r in rows if r[0].startswith("refimpl") and "tables included" not in r[0]]
        mine = [r for r in mine if r[1] == pairing]
        best = min(mine, key=lambda r: r[3])
        exact = min((r for r in mine if "exact" in r[0]), key=lambda r: r[3])
        met = "met" if best[3] <= floor_goal else "NOT met"
        lines.append(
            f"{pairing}: goal <= {floor_goal}x the copy floor: best {best[3]:.2f}x "
            f"({best[0]}) -> {met}; exact form {exact[3]:.2f}x"
        )
        if hf_ms:
            speed = hf_ms / best[2]
            met = "met" if speed >= speed_goal else "NOT met"
            lines.append(
                f"{pairing}: goal >= {speed_goal:g}x faster than transformers' "
                f"apply_rotary_pos_emb: {speed:.1f}x ({best[0]}) -> {met}; "
                f"exact form {hf_ms / exact[2]:.1f}x"
            )
    return lines


RESULTS = pathlib.Path(__file__).parent / "results" / "complexity.json"


def complexity_kernels(rng):
    """name -> (make(L, d) -> run(), L sweep, d of the L sweep, L of the d sweep)."""

    def additive(L, d):
        x = rng.standard_normal((L, d))
        return lambda: x + refimpl.sinusoidal(L, d)

    def bias_table(L, d=None):
        pos = np.arange(L, dtype=np.float32)
        out = np.empty((L, L), dtype=np.float32)

        def run():
            np.subtract.outer(pos, pos, out=out)
            np.abs(out, out=out)
            return np.multiply(out, -0.5, out=out)

        return run

    def rope(L, d):
        x = rng.standard_normal((L, d))
        return lambda: refimpl.apply_rope(x, np.arange(L))

    def dense(L, d):
        x = rng.standard_normal((L, d))
        theta = refimpl.inv_freq(d)

        def run():
            c, s = refimpl.cos_sin(np.arange(L), theta)
            i1, i2 = refimpl.pair_indices(d)
            R = np.zeros((L, d, d))
            R[:, i1, i1], R[:, i1, i2], R[:, i2, i1], R[:, i2, i2] = c, -s, s, c
            return np.einsum("lij,lj->li", R, x)

        return run

    lin, sq = [2**14, 2**15, 2**16, 2**17], [2**9, 2**10, 2**11, 2**12]
    return {
        "additive absolute": (additive, lin, 64, 2**15),
        "relative-bias table": (bias_table, sq, 64, 2**10),
        "RoPE element-wise": (rope, lin, 64, 2**13),
        "RoPE dense matrix": (dense, sq, 32, 256),
    }


def complexity(repeats: int) -> dict:
    """Wall time (median of ``repeats``) against L and d for each kernel, and fitted slopes."""
    kernels = complexity_kernels(np.random.default_rng(0))
    d_sizes = [32, 64, 128, 256]
    out = {"machine": platform.processor() or platform.machine(), "d_sizes": d_sizes}
    for name, (make, Ls, d, L_for_d) in kernels.items():
        t_L = [median_time(make(L, d), repeats) for L in Ls]
        t_d = [median_time(make(L_for_d, dd), repeats) for dd in d_sizes]
        out[name] = {
            "L": Ls,
            "seconds_L": t_L,
            "slope_L": float(np.polyfit(np.log(Ls), np.log(t_L), 1)[0]),
            "seconds_d": t_d,
            "slope_d": float(np.polyfit(np.log(d_sizes), np.log(t_d), 1)[0]),
        }
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--seq", type=int, default=4096)
    ap.add_argument("--complexity", action="store_true", help="time the complexity kernels")
    args = ap.parse_args()
    if args.complexity:
        res = complexity(args.repeats)
        RESULTS.parent.mkdir(exist_ok=True)
        RESULTS.write_text(json.dumps(res, indent=1) + "\n")
        rows = [(k, v["slope_L"], v["slope_d"]) for k, v in res.items() if isinstance(v, dict)]
        print_table("Fitted wall-time slopes (log-log)", rows, ("kernel", "in L", "in d"))
        return
    rng = np.random.default_rng(0)
    pos = np.arange(args.seq)
    c, s = refimpl.cos_sin(pos, dim=128)
    for dtype in (np.float32, np.float64):
        x = rng.standard_normal((1, 32, args.seq, 128)).astype(dtype)
        o = np.empty_like(x)

        def copy(x=x, o=o):
            np.copyto(o, x)

        floor = median_time(copy, args.repeats)
        rows = [("copy floor (np.copyto)", "-", floor * 1e3, 1.0)]
        for pairing in ("interleaved", "half"):
            for name, t in torch_peers(x, c, s, pairing).items():
                rows.append((name, pairing, t * 1e3, t / floor))
            y = x.copy()  # rotated again and again by the in-place rows (norms are kept)
            for name, kw, in_place in VARIANTS:
                src, dst = (y, y) if in_place else (x, o)
                t, ratio = paired_ratio(
                    lambda src=src, dst=dst, p=pairing, kw=kw: refimpl.apply_rope_tables(
                        src, c, s, pairing=p, out=dst, **kw
                    ),
                    copy,
                    args.repeats,
                )
                rows.append((name, pairing, t * 1e3, ratio))
            full, ratio = paired_ratio(
                lambda x=x, o=o, p=pairing: refimpl.apply_rope(x, pos, pairing=p, out=o),
                copy,
                max(3, args.repeats // 2),
            )
            rows.append(("refimpl apply_rope (tables included)", pairing, full * 1e3, ratio))
        peers = {r[1]: r[2] for r in rows if not r[0].startswith(("refimpl", "copy"))}
        hf = [r[2] for r in rows if r[0].startswith("transformers")]

        def ratio(r, ref):
            return f"{ref / r[2]:.1f}x" if r[0].startswith("refimpl") and ref else ""

        table = [(*r, ratio(r, peers.get(r[1])), ratio(r, hf[0] if hf else None)) for r in rows]
        print_table(
            f"x {x.shape} {np.dtype(dtype).name}, torch threads = 1",
            table,
            (
                "implementation",
                "pairing",
                "median ms",
                "/ copy floor",
                "same-pairing peer / refimpl",
                "transformers / refimpl",
            ),
        )
        print()
        for line in goal_lines(rows, hf[0] if hf else None):
            print("- " + line)


if __name__ == "__main__":
    main()
