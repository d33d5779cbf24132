"""NoPE, RoPE and hybrids (RoPE on one layer, NoPE on the other) on every task: length
generalisation, attention by relative distance, and whether position can be read from the
residual stream (linear and quadratic probes).

Run: python experiments/nope_hybrid.py   (writes results/nope_hybrid.json)
"""

import os
import sys
import time

os.environ["OPENBLAS_NUM_THREADS"] = "1"
os.environ["OMP_NUM_THREADS"] = "1"
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _common as C
import numpy as np

from refimpl.experiments import TASKS, forward, make_batch, make_encoding, train
from refimpl.experiments.analysis import attention_by_distance, position_probe_r2

# encoding name -> the encoding of each layer (layer 0 first); Llama 4 and SmolLM3 leave RoPE
# out of the last layer of every group of four, "rope-nope" is that pattern at depth 2
HYBRIDS = {
    "nope": ("nope", "nope"),
    "rope": ("rope", "rope"),
    "rope-nope": ("rope", "nope"),
    "nope-rope": ("nope", "rope"),
}
PROBE_SEQS = 32  # sequences for fitting the probe, and as many fresh ones to score it
PROBE_SEED = 7
MAX_DISTANCE = 8  # attention by distance for distances 0 .. 8
PROFILE_LENGTHS = (C.TRAIN_LEN, 4 * C.TRAIN_LEN)
N_PROFILE = 32


def build(name: str):
    """The encoding of one entry of :data:`HYBRIDS` (a plain one when both layers agree)."""
    first, second = HYBRIDS[name]
    kw = C.ENCODING_KWARGS["rope"]
    if first == second:
        return make_encoding(first, head_dim=C.MODEL.head_dim, max_len=max(C.EVAL_LENGTHS), **kw)
    return make_encoding(
        "hybrid", head_dim=C.MODEL.head_dim, max_len=max(C.EVAL_LENGTHS), layers=HYBRIDS[name], **kw
    )


def probes(params, enc, task: str) -> list:
    """R^2 of probes reading the position t from the residual stream after each layer.

    Fitted on PROBE_SEQS sequences of the training length and scored on as many fresh ones;
    "linear" reads x_l, "quadratic" reads x_l and its squares (so it can use the size of
    x_l, not only its direction).
    """
    rng = np.random.default_rng([PROBE_SEED, TASKS.index(task)])
    states = []
    for _ in range(2):  # fit, then score
        tokens, _ = make_batch(
            task, rng, batch=PROBE_SEQS, seq_len=C.TRAIN_LEN, vocab=C.MODEL.vocab
        )
        states.append(forward(params, tokens, C.MODEL, enc)[1]["x"])
    pos = np.tile(np.arange(C.TRAIN_LEN, dtype=np.float64), PROBE_SEQS)
    out = []
    for layer in range(C.MODEL.n_layers + 1):
        fit, score = (s[layer].reshape(-1, C.MODEL.d_model) for s in states)
        for features in ("linear", "quadratic"):
            if features == "quadratic":
                fit, score = np.hstack([fit, fit**2]), np.hstack([score, score**2])
            r2 = position_probe_r2(fit, pos, score, pos)
            out.append({"layer": layer, "features": features, "r2": r2})
    return out


def attention_profiles(params, enc, task: str) -> list:
    """Mean attention weight at distances 0 .. MAX_DISTANCE, per layer and head and length."""
    out = []
    for length in PROFILE_LENGTHS:
        rng = np.random.default_rng([C.EVAL_SEED, length, TASKS.index(task)])
        tokens, _ = make_batch(task, rng, batch=N_PROFILE, seq_len=length, vocab=C.MODEL.vocab)
        for layer, a in enumerate(forward(params, tokens, C.MODEL, enc)[1]["attn"]):
            prof, uniform = attention_by_distance(a, MAX_DISTANCE)
            for head in range(prof.shape[0]):
                row = {"layer": layer, "head": head, "length": length, "uniform": uniform}
                out.append({**row, "profile": prof[head].tolist()})
    return out


def main() -> None:
    started = time.perf_counter()
    doc = C.header("nope_hybrid")
    doc["hybrids"] = {k: list(v) for k, v in HYBRIDS.items()}
    doc["probe"] = {"seqs": PROBE_SEQS, "seed": PROBE_SEED, "target": "position t"}
    doc["attention_profile"] = {"max_distance": MAX_DISTANCE, "lengths": list(PROFILE_LENGTHS)}
    for task in TASKS:
        for name in HYBRIDS:
            t0 = time.perf_counter()
            enc = build(name)
            params, hist = train(C.MODEL, enc, C.train_config(task))
            row = {
                "task": task,
                "encoding": name,
                "layers": list(HYBRIDS[name]),
                "settings": enc.describe(),
                "final_loss": hist[-1][1],
                "eval": C.evaluate_at(params, enc, task),
                "probe": probes(params, enc, task),
                "attention": attention_profiles(params, enc, task),
            }
            doc["results"].append(C.rounded(row))
            accs = " ".join(f"{e['acc']:.3f}" for e in row["eval"])
            r2 = " ".join(f"{p['r2']:.2f}" for p in row["probe"])
            dt = time.perf_counter() - t0
            print(f"{task:9s} {name:9s} acc {accs} probe R2 {r2} ({dt:.0f} s)", flush=True)
    C.save(doc, started)


if __name__ == "__main__":
    main()
