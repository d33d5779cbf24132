"""Settings shared by the experiment scripts (imported after the thread variables are set)."""

from __future__ import annotations

import os
import pathlib
import time

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"  # one thread: bit-for-bit reproducible on the same machine

import inspect  # noqa: E402

import numpy as np  # noqa: E402

from refimpl.experiments import ModelConfig, TrainConfig, evaluate  # noqa: E402
from refimpl.experiments.results import command_line, versions, write_result  # noqa: E402
from refimpl.scaling import ROPE_SCALINGS  # noqa: E402

RESULTS = pathlib.Path(__file__).resolve().parent / "results"
MODEL = ModelConfig(vocab=64, d_model=32, n_heads=2, n_layers=2)  # head width 16
TRAIN_LEN = 16
EVAL_LENGTHS = (16, 32, 64, 128)  # 1x .. 8x the training length
STEPS = 1500
SEED = 0
EVAL_SEED = 12345
N_EVAL = 64

# Settings of each encoding at this scale (documented in the book).
ENCODING_KWARGS = {
    "learned": {},
    "sinusoidal": {},
    "rope": {"base": 10000.0},
    "xpos": {"base": 10000.0, "scale_base": 32.0},
    "t5": {"num_buckets": 16, "max_distance": 32},
}


def evaluate_at(params, enc, task: str, lengths=EVAL_LENGTHS) -> list:
    """Accuracy of a trained model at ``lengths`` with the shared evaluation settings."""
    return evaluate(
        params, MODEL, enc, task, lengths, train_len=TRAIN_LEN, n_seqs=N_EVAL, seed=EVAL_SEED
    )


def train_config(task: str, **overrides) -> TrainConfig:
    """The training settings every script uses, with ``overrides``."""
    kw = {"task": task, "seq_len": TRAIN_LEN, "steps": STEPS, "batch": 32, "lr": 3e-3, "seed": SEED}
    kw.update(overrides)
    return TrainConfig(**kw)


def header(name: str) -> dict:
    """Common keys of a result file."""
    return {
        "experiment": name,
        "command": command_line(),
        "seeds": {"train": SEED, "eval": EVAL_SEED},
        "versions": versions(),
        "model": MODEL.as_dict(),
        "training": {
            **train_config("<task>").as_dict(),
            "eval_lengths": list(EVAL_LENGTHS),
            "n_eval": N_EVAL,
        },
        "pending": [],
        "results": [],
    }


def save(doc: dict, started: float) -> None:
    """Write the result file of ``doc["experiment"]`` and report where."""
    path = RESULTS / f"{doc['experiment']}.json"
    write_result(path, doc)  # no timings inside: the file is the same bit for bit on every run
    print(f"wrote {path} in {time.perf_counter() - started:.1f} s")


def rounded(x, nd: int = 6):
    """Round floats (recursively) so that the JSON stays small and readable."""
    if isinstance(x, float):
        return round(x, nd)
    if isinstance(x, dict):
        return {k: rounded(v, nd) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [rounded(v, nd) for v in x]
    if isinstance(x, np.floating):
        return round(float(x), nd)
    return x


def scaling_call_kwargs(method: str, **candidates) -> dict:
    """The subset of ``candidates`` that the registry function of ``method`` accepts.

    The registry shares parameter names across methods (DESIGN.md) but each method takes only
    some of them (linear has no ``original_max_position``); this keeps one call site for all.
    """
    accepted = inspect.signature(ROPE_SCALINGS[method]).parameters
    return {k: v for k, v in candidates.items() if k in accepted}
