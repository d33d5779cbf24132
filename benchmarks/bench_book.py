"""Book build time, cold (empty cache) and cached, in a temporary copy of the repository so the
real _build is never touched. The floor is a Sphinx run with nothing to execute (cached).

Run: .venv/bin/python benchmarks/bench_book.py
"""

from __future__ import annotations

import pathlib
import shutil
import subprocess
import sys
import tempfile
import time

from _common import print_table

ROOT = pathlib.Path(__file__).resolve().parents[1]
JB = pathlib.Path(sys.executable).parent / "jupyter-book"


def build(where: pathlib.Path) -> float:
    t0 = time.perf_counter()
    subprocess.run(
        [str(JB), "build", str(where), "-W", "--keep-going", "-q"],
        check=True,
        capture_output=True,
    )
    return time.perf_counter() - t0


def main():
    with tempfile.TemporaryDirectory() as tmp:
        dst = pathlib.Path(tmp) / "repo"
        shutil.copytree(
            ROOT, dst, ignore=shutil.ignore_patterns(".venv", "_build", ".git", "*.pyc")
        )
        cold = build(dst)
        cached = build(dst)
    rows = [
        ("cached rebuild (nothing to execute): floor", cached, 1.0),
        ("cold build (every notebook executed)", cold, cold / cached),
    ]
    print_table("jupyter-book build -W --keep-going", rows, ("build", "seconds", "/ floor"))


if __name__ == "__main__":
    main()
