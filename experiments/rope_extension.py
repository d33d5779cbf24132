"""RoPE models extended beyond their training length without retraining (PI, NTK, dynamic NTK,
YaRN with and without its temperature) and with a short fine-tune at the longer length.

Run: python experiments/rope_extension.py   (writes results/rope_extension.json)
"""

import os
import sys
import time

os.environ["OPENBLAS_NUM_THREADS"] = "1"
os.environ["OMP_NUM_THREADS"] = "1"
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _common as C

from refimpl.experiments import make_encoding, train

TASKS = ("fetch", "induction")
FT_LEN = 64  # fine-tune length (4x the training length)
FT_STEPS = 150
FT_FACTOR = FT_LEN / C.TRAIN_LEN
MAX_FACTOR = max(C.EVAL_LENGTHS) / C.TRAIN_LEN  # 8: a static scaling configured for 128 tokens
# method name -> (registry key, extra keyword arguments); the factor is eval_len / train_len
# (the factor matched to each evaluation length), except for "ntk-fixed", configured once for
# the longest length and used at every length, which is what dynamic NTK is meant to improve on
METHODS = {
    "linear": ("linear", {}),
    "ntk": ("ntk", {}),
    "ntk-fixed": ("ntk", {}),
    "dynamic": ("dynamic", {}),
    "yarn": ("yarn", {}),
    "yarn-no-temperature": ("yarn", {"attention_scaling": 1.0}),
}


def eval_one(params, enc_for_len, task):
    """Evaluate with an encoding chosen per evaluation length."""
    out = []
    for length in C.EVAL_LENGTHS:
        enc = enc_for_len(length)
        out += C.evaluate_at(params, enc, task, [length])
    return out


def scaled(rope, method, length):
    key, extra = METHODS[method]
    factor = MAX_FACTOR if method == "ntk-fixed" else max(1.0, length / C.TRAIN_LEN)
    if key == "dynamic":  # configured s = 1: the NTK scale is s * l / L - (s - 1) = l / L
        factor = 1.0
    kw = C.scaling_call_kwargs(
        key, factor=factor, original_max_position=C.TRAIN_LEN, max_position=C.TRAIN_LEN
    )
    return rope.with_scaling(key, **kw, **extra)


def main() -> None:
    started = time.perf_counter()
    doc = C.header("rope_extension")
    doc["fine_tune"] = {"length": FT_LEN, "steps": FT_STEPS, "factor": FT_FACTOR, "lr": 1e-3}
    doc["methods"] = {
        m: {"registry": key, "factor": "8" if m == "ntk-fixed" else "eval_len / 16", **extra}
        for m, (key, extra) in METHODS.items()
    }
    for task in TASKS:
        rope = make_encoding(
            "rope",
            head_dim=C.MODEL.head_dim,
            max_len=max(C.EVAL_LENGTHS),
            **C.ENCODING_KWARGS["rope"],
        )
        params, _ = train(C.MODEL, rope, C.train_config(task))
        rows = [("none", eval_one(params, lambda n, e=rope: e, task))]
        for method in METHODS:
            rows.append(
                (method, eval_one(params, lambda n, m=method, e=rope: scaled(e, m, n), task))
            )
        # a short fine-tune at the longer length, without and with position interpolation
        ft = C.train_config(task, seq_len=FT_LEN, steps=FT_STEPS, lr=1e-3, seed=C.SEED + 1)
        p_plain, _ = train(C.MODEL, rope, ft, params=params)
        rows.append(("finetune", eval_one(p_plain, lambda n, e=rope: e, task)))
        pi = rope.with_scaling("linear", **C.scaling_call_kwargs("linear", factor=FT_FACTOR))
        p_pi, _ = train(C.MODEL, pi, ft, params=params)
        rows.append(("finetune-linear", eval_one(p_pi, lambda n, e=pi: e, task)))
        for method, ev in rows:
            doc["results"].append(C.rounded({"task": task, "method": method, "eval": ev}))
            print(f"{task:9s} {method:22s} " + " ".join(f"{e['acc']:.3f}" for e in ev), flush=True)
    C.save(doc, started)


if __name__ == "__main__":
    main()
