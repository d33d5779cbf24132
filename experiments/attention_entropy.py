"""Attention maps and attention entropy against length, with and without YaRN's temperature.

Run: python experiments/attention_entropy.py   (writes results/attention_entropy.json)
"""

import os
import sys
import time

os.environ["OPENBLAS_NUM_THREADS"] = "1"
os.environ["OMP_NUM_THREADS"] = "1"
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _common as C
import numpy as np

from refimpl.experiments import forward, make_batch, make_encoding, train

TASK = "induction"
N_SEQS = 32
MAP_LENGTHS = (16, 32)


def entropies(params, enc, length):
    """Mean entropy (nats) of the attention rows of the last quarter of positions, per head."""
    rng = np.random.default_rng([C.EVAL_SEED, length])
    tokens, _ = make_batch(TASK, rng, batch=N_SEQS, seq_len=length, vocab=C.MODEL.vocab)
    _, cache = forward(params, tokens, C.MODEL, enc)
    rows = np.arange(3 * length // 4, length)
    uniform = float(np.mean(np.log(rows + 1.0)))  # entropy of uniform attention over t + 1 keys
    out = []
    for layer, a in enumerate(cache["attn"]):  # (B, H, T, T)
        p = a[:, :, rows, :]
        with np.errstate(divide="ignore", invalid="ignore"):
            h = -np.where(p > 0, p * np.log(np.where(p > 0, p, 1.0)), 0.0).sum(
                -1
            )  # [eq:exp-entropy]
        for head in range(h.shape[1]):
            out.append(
                {
                    "layer": layer,
                    "head": head,
                    "entropy": float(h[:, head].mean()),
                    "uniform_entropy": uniform,
                }
            )
    return out, cache


def main() -> None:
    started = time.perf_counter()
    doc = C.header("attention_entropy")
    doc["task"] = TASK
    rope = make_encoding(
        "rope", head_dim=C.MODEL.head_dim, max_len=max(C.EVAL_LENGTHS), **C.ENCODING_KWARGS["rope"]
    )
    params, _ = train(C.MODEL, rope, C.train_config(TASK))
    methods = {"none": lambda n: rope}

    def yarn(n, temp):
        kw = C.scaling_call_kwargs(
            "yarn", factor=max(1.0, n / C.TRAIN_LEN), original_max_position=C.TRAIN_LEN
        )
        return rope.with_scaling("yarn", **kw, **({} if temp else {"attention_scaling": 1.0}))

    def linear(n):
        return rope.with_scaling(
            "linear", **C.scaling_call_kwargs("linear", factor=max(1.0, n / C.TRAIN_LEN))
        )

    methods["linear"] = linear
    methods["yarn"] = lambda n: yarn(n, True)
    methods["yarn-no-temperature"] = lambda n: yarn(n, False)
    doc["maps"] = []
    for method, enc_for in methods.items():
        for length in C.EVAL_LENGTHS:
            rows, cache = entropies(params, enc_for(length), length)
            for r in rows:
                doc["results"].append(C.rounded({"method": method, "length": length, **r}))
            if method == "none" and length in MAP_LENGTHS:
                for layer, a in enumerate(cache["attn"]):
                    for head in range(a.shape[1]):
                        doc["maps"].append(
                            {
                                "length": length,
                                "layer": layer,
                                "head": head,
                                "tokens": cache["tokens"][0].tolist(),
                                "weights": np.round(a[0, head], 3).tolist(),
                            }
                        )
            print(
                f"{method:20s} L={length:4d} " + " ".join(f"{r['entropy']:.3f}" for r in rows),
                flush=True,
            )
    C.save(doc, started)


if __name__ == "__main__":
    main()
