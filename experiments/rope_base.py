"""The effect of RoPE's base on usable context: the same model trained with bases 10 .. 1e6.

Run: python experiments/rope_base.py   (writes results/rope_base.json)
"""

import os
import sys
import time

os.environ["OPENBLAS_NUM_THREADS"] = "1"
os.environ["OMP_NUM_THREADS"] = "1"
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _common as C

from refimpl.experiments import make_encoding, train

BASES = (10.0, 100.0, 10000.0, 1e6)
TASKS = ("fetch", "induction")


def main() -> None:
    started = time.perf_counter()
    doc = C.header("rope_base")
    for task in TASKS:
        for base in BASES:
            enc = make_encoding(
                "rope", head_dim=C.MODEL.head_dim, max_len=max(C.EVAL_LENGTHS), base=base
            )
            params, hist = train(C.MODEL, enc, C.train_config(task))
            ev = C.evaluate_at(params, enc, task)
            doc["results"].append(
                C.rounded({"task": task, "base": base, "final_loss": hist[-1][1], "eval": ev})
            )
            print(
                f"{task:9s} base {base:8.0f} loss {hist[-1][1]:.4f} acc "
                + " ".join(f"{e['acc']:.3f}" for e in ev),
                flush=True,
            )
    C.save(doc, started)


if __name__ == "__main__":
    main()
