"""Length generalisation of every encoding on every task: train at 16 tokens, test up to 128.

Run: python experiments/length_generalisation.py   (writes results/length_generalisation.json)
"""

import os
import sys
import time

os.environ["OPENBLAS_NUM_THREADS"] = "1"
os.environ["OMP_NUM_THREADS"] = "1"
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _common as C

from refimpl.experiments import ENCODINGS, TASKS, make_encoding, train


def main() -> None:
    started = time.perf_counter()
    doc = C.header("length_generalisation")
    doc["encoding_settings"] = C.ENCODING_KWARGS
    for name in ENCODINGS:
        for task in TASKS:
            enc = make_encoding(
                name,
                head_dim=C.MODEL.head_dim,
                max_len=max(C.EVAL_LENGTHS),
                **C.ENCODING_KWARGS.get(name, {}),
            )
            t0 = time.perf_counter()
            params, hist = train(C.MODEL, enc, C.train_config(task))
            ev = C.evaluate_at(params, enc, task)
            row = {
                "task": task,
                "encoding": name,
                "settings": enc.describe(),
                "final_loss": hist[-1][1],
            }
            row.update({"loss_curve": hist, "eval": ev})
            doc["results"].append(C.rounded(row))
            accs = " ".join(f"{e['acc']:.3f}" for e in ev)
            dt = time.perf_counter() - t0
            print(
                f"{name:10s} {task:9s} loss {hist[-1][1]:.4f} acc {accs} ({dt:.0f} s)", flush=True
            )
    C.save(doc, started)


if __name__ == "__main__":
    main()
