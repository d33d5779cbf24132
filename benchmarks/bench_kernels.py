"""A notebook's kernel start-up, ordinary against forked from a preloaded process
(``tools/fork_kernel.py``, which the book build and the workbook tests use).

Each repeat executes the same two-cell notebook (the imports of a book page, then one line)
once in an ordinary ``python3`` kernel and once in a forked one, and reports the median wall
time of each and the median of the per-repeat ratios (the two runs of one repeat see the same
load). The zygote's own start, paid once per build or test process, is reported apart.

Run: cd benchmarks && ../.venv/bin/python bench_kernels.py [--repeats N]
"""

from __future__ import annotations

import argparse
import os
import pathlib
import statistics
import sys
import time

import nbclient
from _common import print_table
from nbformat import v4

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import fork_kernel  # noqa: E402

CELLS = [
    "import numpy as np, matplotlib.pyplot as plt, sympy, refimpl\nfrom myst_nb import glue",
    "np.arange(3).sum()",
]


def run_notebook() -> float:
    nb = v4.new_notebook()
    nb.cells = [v4.new_code_cell(src) for src in CELLS]
    t0 = time.perf_counter()
    nbclient.NotebookClient(nb, kernel_name="python3", startup_timeout=300).execute()
    return time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    os.environ.pop(fork_kernel.ENABLE_ENV, None)
    ordinary_path = os.environ.get("JUPYTER_PATH")
    t0 = time.perf_counter()
    with fork_kernel.forked_kernels():
        zygote_s = time.perf_counter() - t0
        forked_path = os.environ["JUPYTER_PATH"]
        ordinary, forked = [], []
        for _ in range(args.repeats):
            _set("JUPYTER_PATH", ordinary_path)
            ordinary.append(run_notebook())
            os.environ["JUPYTER_PATH"] = forked_path
            forked.append(run_notebook())
    ratios = [o / f for o, f in zip(ordinary, forked, strict=True)]
    rows = [
        ("ordinary kernel + page imports", statistics.median(ordinary), ""),
        ("forked kernel + page imports", statistics.median(forked), ""),
        ("ordinary / forked (median per repeat)", "", f"{statistics.median(ratios):.1f}x"),
        ("zygote start (once per process)", zygote_s, ""),
    ]
    title = f"{args.repeats} repeats; notebook: {CELLS[0]!r} then one line"
    print_table(title, rows, ("run", "median s", "ratio"))


def _set(name: str, value: str | None) -> None:
    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = value


if __name__ == "__main__":
    main()
