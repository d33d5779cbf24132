"""The measurement behind ``method="accurate"`` becoming the correctly rounded tables.

Times, in one run (CPU seconds of one thread, medians of 5 interleaved repeats, ratios to the
fast path per repeat), the fast path, ``method="correct"`` and the former faithful
``"accurate"`` kernel (platform ``cos``/``sin`` of the exactly reduced angle plus a first-order
correction, within 1 ulp), which is loaded from the git history (commit da11a97, the last one
that has it) since the package no longer ships it.

Run (in a git clone): ``cd benchmarks && ../.venv/bin/python bench_accurate_decision.py``
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import importlib.util
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

import refimpl

FAITHFUL_COMMIT = "da11a97"


def _faithful_module():
    src = subprocess.run(
        ["git", "show", f"{FAITHFUL_COMMIT}:refimpl/_exact.py"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    path = pathlib.Path(tempfile.mkdtemp()) / "faithful_exact.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location("faithful_exact", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["faithful_exact"] = module
    spec.loader.exec_module(module)
    return module


def _methods(faithful, n, d, b):
    pos = np.arange(float(n))
    theta = refimpl.inv_freq(d, b)
    return {
        "fast": lambda: refimpl.cos_sin(pos, theta),
        "correct": lambda: refimpl.cos_sin(pos, dim=d, base=b, method="correct"),
        "correct, fractional": lambda: refimpl.cos_sin(pos + 0.5, dim=d, base=b, method="correct"),
        "faithful (former accurate)": lambda: faithful.accurate_cos_sin(pos, dim=d, base=b),
        "faithful, fractional": lambda: faithful.accurate_cos_sin(pos + 0.5, dim=d, base=b),
    }


def main() -> None:
    faithful = _faithful_module()
    d, b = 128, 500000.0
    for n in (4096, 131072):
        fns = _methods(faithful, n, d, b)
        for fn in fns.values():
            fn()
        times = {k: [] for k in fns}
        for _ in range(5):
            for k, fn in fns.items():
                t0 = time.process_time()
                fn()
                times[k].append(time.process_time() - t0)
        print(f"{n} positions x {d // 2} pairs, CPU time / fast:")
        for k, v in times.items():
            ratio = statistics.median(a / f for a, f in zip(v, times["fast"], strict=True))
            print(f"  {k:<28} {ratio:5.2f}")


if __name__ == "__main__":
    main()
