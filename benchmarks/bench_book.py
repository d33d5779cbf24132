"""Book build time in a temporary copy of the repository (the real _build is never touched):
cold with the notebooks executed one at a time, cold with them executed in parallel
(book/_ext/parallel_execute.py, one worker per CPU), and cached (nothing to execute: the
floor). Wall and CPU seconds (user + sys of every process the build started), measured in one
run so that the ratios see the same load.

Run: .venv/bin/python benchmarks/bench_book.py
"""

from __future__ import annotations

import os
import pathlib
import resource
import shutil
import subprocess
import sys
import tempfile
import time

from _common import print_table

ROOT = pathlib.Path(__file__).resolve().parents[1]
JB = pathlib.Path(sys.executable).parent / "jupyter-book"


def build(where: pathlib.Path, jobs: int | None = None) -> tuple[float, float]:
    """(wall, CPU) seconds of one ``-W`` build of the copy at ``where``."""
    env = dict(os.environ)
    if jobs is not None:
        env["REFIMPL_BOOK_JOBS"] = str(jobs)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(
        [str(JB), "build", str(where), "-W", "--keep-going", "-q", "--all"],
        check=True,
        capture_output=True,
        env=env,
    )
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main():
    with tempfile.TemporaryDirectory() as tmp:
        dst = pathlib.Path(tmp) / "repo"
        shutil.copytree(
            ROOT, dst, ignore=shutil.ignore_patterns(".venv", "_build", ".git", "*.pyc")
        )
        serial = build(dst, jobs=1)
        shutil.rmtree(dst / "_build")
        parallel = build(dst)
        cached = build(dst)
    rows = [
        ("cached rebuild (nothing to execute): floor", *cached, 1.0),
        ("cold, notebooks one at a time", *serial, serial[0] / cached[0]),
        (
            f"cold, notebooks in parallel ({os.cpu_count()} workers)",
            *parallel,
            parallel[0] / cached[0],
        ),
    ]
    print_table(
        "jupyter-book build -W --keep-going --all",
        rows,
        ("build", "wall s", "CPU s", "wall / floor"),
    )
    print(f"\nparallel / serial wall time: {parallel[0] / serial[0]:.2f}")


if __name__ == "__main__":
    main()
