"""Test-suite wall time: collection only (the floor), the suite without notebooks, and the full
suite (HYPOTHESIS_PROFILE=ci), each run once in a subprocess.

Run: .venv/bin/python benchmarks/bench_tests.py
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import time

from _common import print_table

ROOT = pathlib.Path(__file__).resolve().parents[1]


def run(*args: str) -> float:
    env = dict(os.environ, HYPOTHESIS_PROFILE="ci")
    t0 = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
        cwd=ROOT,
        env=env,
        check=False,
        capture_output=True,
    )
    return time.perf_counter() - t0


def main():
    floor = run("--collect-only")
    rows = [("collection only: floor", floor, 1.0)]
    fast = run("-m", "not notebook")
    rows.append(("suite without notebooks", fast, fast / floor))
    full = run()
    rows.append(("full suite (make test-fast)", full, full / floor))
    print_table("pytest wall time", rows, ("run", "seconds", "/ floor"))


if __name__ == "__main__":
    main()
