"""Partial rotary and p-RoPE: the exact long-term decay of their frequency sets, and trained
toy models' length generalisation with a fraction of the pairs rotating.

Partial rotary rotates the first rotary_dim features with theta_i = b^(-2i/rotary_dim) (the
whole range of frequencies in fewer pairs); p-RoPE keeps the highest-frequency fraction p of
the head's own frequencies b^(-2i/d) and sets the others to zero (the registry's
"proportional" record). Both leave d/2 - k pairs unrotated, k the rotating pairs.

Run: python experiments/partial_rotary.py   (writes results/partial_rotary.json)
"""

import os
import sys
import time

os.environ["OPENBLAS_NUM_THREADS"] = "1"
os.environ["OMP_NUM_THREADS"] = "1"
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _common as C
import numpy as np

from refimpl.experiments import make_encoding, train
from refimpl.experiments.analysis import long_term_decay

TASKS = ("fetch", "induction")
BASE = C.ENCODING_KWARGS["rope"]["base"]
FRACTIONS = (0.5, 0.25)  # rotating fraction of the pairs (rotary_dim = fraction * head_dim)
DECAY_HEAD_DIMS = (C.MODEL.head_dim, 128)  # the toy head, and the usual head of 128
DECAY_DISTANCES = np.unique(np.round(np.logspace(0, 5, 300)))  # 1 .. 1e5 tokens


def variants(head_dim: int) -> dict:
    """Encoding name -> (registry name, constructor keyword arguments)."""
    out = {"rope": ("rope", {"base": BASE})}
    for p in FRACTIONS:
        out[f"partial-{p:g}"] = ("partial", {"rotary_dim": int(p * head_dim), "base": BASE})
        out[f"p-rope-{p:g}"] = ("p-rope", {"proportion": p, "base": BASE})
    return out


def full_head_frequencies(enc, head_dim: int) -> np.ndarray:
    """The frequency of every pair of the head, unrotated pairs as 0 (highest first)."""
    f = enc.training_inv_freq()
    return np.concatenate([f, np.zeros(head_dim // 2 - f.shape[0])])


def decay_rows() -> list:
    """Exact decay bound factor and all-ones score of every variant, for each head width."""
    rows = []
    for head_dim in DECAY_HEAD_DIMS:
        for name, (kind, kw) in variants(head_dim).items():
            enc = make_encoding(kind, head_dim=head_dim, max_len=1, **kw)
            theta = full_head_frequencies(enc, head_dim)
            out = long_term_decay(theta, DECAY_DISTANCES)
            rows.append(
                {
                    "encoding": name,
                    "head_dim": head_dim,
                    "rotated_pairs": int(np.count_nonzero(theta)),
                    "distance": DECAY_DISTANCES.tolist(),
                    "bound": out["bound"].tolist(),
                    "ones_score": out["ones_score"].tolist(),
                }
            )
    return rows


def main() -> None:
    started = time.perf_counter()
    doc = C.header("partial_rotary")
    doc["variants"] = {k: {"kind": v[0], **v[1]} for k, v in variants(C.MODEL.head_dim).items()}
    doc["decay"] = C.rounded(decay_rows(), 8)
    for task in TASKS:
        for name, (kind, kw) in variants(C.MODEL.head_dim).items():
            t0 = time.perf_counter()
            enc = make_encoding(kind, head_dim=C.MODEL.head_dim, max_len=max(C.EVAL_LENGTHS), **kw)
            params, hist = train(C.MODEL, enc, C.train_config(task))
            theta = full_head_frequencies(enc, C.MODEL.head_dim)
            row = {
                "task": task,
                "encoding": name,
                "settings": enc.describe(),
                "rotated_pairs": int(np.count_nonzero(theta)),
                "inv_freq": theta.tolist(),
                "final_loss": hist[-1][1],
                "eval": C.evaluate_at(params, enc, task),
            }
            doc["results"].append(C.rounded(row, 8))
            accs = " ".join(f"{e['acc']:.3f}" for e in row["eval"])
            dt = time.perf_counter() - t0
            print(f"{task:9s} {name:13s} acc {accs} ({dt:.0f} s)", flush=True)
    C.save(doc, started)


if __name__ == "__main__":
    main()
