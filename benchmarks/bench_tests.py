"""`make test` from a fresh clone, phase by phase: wall time and CPU time (user + sys of every
process the phase started, kernels and workers included).

The phases are those of `make test`, run in a clone of the repository's HEAD in a temporary
folder (uncommitted changes are not in it), as CI sees it:

1. venv: `make venv` (the virtual environment from the warm pip cache);
2. lint: `make lint`;
3. book: `jupyter-book build . -W --keep-going --all` from an empty cache (every page executed
   once, in parallel, then the build);
4. pytest: the suite as `make test` runs it (it skips the pages the build executed).

After them, a rebuild of the book from its warm cache (`--all`, nothing executed) gives the
build alone; the book phase minus it is the notebooks' execution. `make test` itself overlaps
two phases (the tests that do not read the built book start once the notebooks have run, beside
Sphinx's one-core read and write), so the phases' sum is an upper bound: the last row is
`make test` run whole in a second fresh clone. On a shared machine the wall
times grow with the load while CPU times barely change: compare CPU times between runs, and
wall times only on a quiet machine. CPU / wall above 1 means the phase used several cores.

Run: .venv/bin/python benchmarks/bench_tests.py [--keep DIR]
"""

from __future__ import annotations

import argparse
import os
import pathlib
import resource
import shutil
import subprocess
import tempfile
import time

from _common import print_table

ROOT = pathlib.Path(__file__).resolve().parents[1]


def timed(cmd: list[str], cwd: pathlib.Path, env: dict | None = None) -> tuple[float, float, int]:
    """Run ``cmd`` to completion; return (wall seconds, CPU seconds of all its processes, exit
    status). A failing phase is timed and reported, and the phases after it still run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if proc.returncode != 0:
        tail = (proc.stdout + proc.stderr)[-1500:]
        print(f"{' '.join(cmd)} failed (exit {proc.returncode}):\n{tail}", flush=True)
    return wall, cpu, proc.returncode


def phases(repo: pathlib.Path) -> list[tuple[str, float, float]]:
    env = dict(os.environ, HYPOTHESIS_PROFILE="ci")
    env.pop("VIRTUAL_ENV", None)
    jb = str(repo / ".venv" / "bin" / "jupyter-book")
    pytest_env = dict(env, REFIMPL_BOOK_BUILD_EXECUTES="1", REFIMPL_BUILT_BOOK="1")
    steps = [
        ("venv (make venv, warm pip cache)", ["make", "venv"], env),
        ("lint (make lint)", ["make", "lint"], env),
        (
            "book: execution + build (-W, empty cache)",
            [jb, "build", ".", "-W", "--keep-going", "--all"],
            env,
        ),
        (
            "pytest (as make test runs it)",
            [str(repo / ".venv" / "bin" / "pytest"), "-q", "-n", "auto"],
            pytest_env,
        ),
    ]
    rows = []
    for name, cmd, step_env in steps:
        wall, cpu, status = timed(cmd, repo, step_env)
        label = name if status == 0 else f"{name} [exit {status}]"
        rows.append((label, wall, cpu))
        print(f"{label}: {wall:.0f} s wall, {cpu:.0f} s CPU", flush=True)
    wall, cpu, _ = timed([jb, "build", ".", "--all"], repo, env)
    rows.append(("(after) book rebuild from the warm cache: build alone", wall, cpu))
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keep", type=pathlib.Path, help="clone into DIR and keep it")
    args = ap.parse_args()
    tmp = None
    if args.keep:
        repo = args.keep
    else:
        tmp = tempfile.mkdtemp(prefix="refimpl-bench-tests-")
        repo = pathlib.Path(tmp) / "repo"
    try:
        subprocess.run(["git", "clone", "-q", str(ROOT), str(repo)], check=True)
        rows = phases(repo)
        whole = repo.with_name(repo.name + "-whole")
        subprocess.run(["git", "clone", "-q", str(ROOT), str(whole)], check=True)
        env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
        wall, cpu, status = timed(["make", "test"], whole, env)
        label = "make test, run whole (fresh clone)"
        rows.append((label if status == 0 else f"{label} [exit {status}]", wall, cpu))
        print(f"{label}: {wall:.0f} s wall, {cpu:.0f} s CPU", flush=True)
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    make_test = rows[:4]
    total_wall = sum(r[1] for r in make_test)
    total_cpu = sum(r[2] for r in make_test)
    book, rebuild = rows[2], rows[4]
    whole_row = rows.pop()
    table = [(name, wall, cpu, cpu / wall if wall else 0.0) for name, wall, cpu in rows]
    table.insert(
        4,
        (
            "sum of the four phases (run one after another)",
            total_wall,
            total_cpu,
            total_cpu / total_wall,
        ),
    )
    table.append(
        (
            "(difference) notebooks' execution",
            book[1] - rebuild[1],
            book[2] - rebuild[2],
            (book[2] - rebuild[2]) / max(book[1] - rebuild[1], 1e-9),
        )
    )
    table.append((whole_row[0], whole_row[1], whole_row[2], whole_row[2] / whole_row[1]))
    print_table(
        f"make test from a fresh clone ({os.cpu_count()} CPUs)",
        table,
        ("phase", "wall s", "CPU s", "CPU / wall"),
    )


if __name__ == "__main__":
    main()
