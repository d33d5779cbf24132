"""Conformance suites: generation (cases per second, bytes per second against the copy floor
of writing the same bytes) and verification of a kernel without error (bytes per second, peak
memory against the largest case: every case is read, judged and dropped) on a suite whose
long-position case reaches 2**24.

The copy floor is writing every file of the suite again from memory (``shutil.copyfile`` of
each file, so the same bytes go through the file system). Generation and the floor are timed
alternately (see ``_common.paired_ratio``); peak memory is counted by ``tracemalloc``.

Run: .venv/bin/python benchmarks/bench_conformance.py [--repeats N] [--head-dim D]
"""

from __future__ import annotations

import argparse
import pathlib
import shutil
import tempfile
import tracemalloc

from _common import paired_ratio, print_table

from refimpl.conformance import read_safetensors, verify_outputs, write_safetensors, write_suite


def config(head_dim: int) -> dict:
    """Hand-made (labelled): Llama 3.1's rope fields with 2**24 positions allowed, so that the
    long case samples positions up to 2**24."""
    return {
        "head_dim": head_dim,
        "hidden_size": 8 * head_dim,
        "num_attention_heads": 8,
        "max_position_embeddings": 2**24 + 1,
        "rope_theta": 500000.0,
        "rope_scaling": {
            "rope_type": "llama3",
            "factor": 8.0,
            "low_freq_factor": 1.0,
            "high_freq_factor": 4.0,
            "original_max_position_embeddings": 8192,
        },
    }


def suite_bytes(folder: pathlib.Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def largest(folder: pathlib.Path) -> int:
    return max(p.stat().st_size for p in folder.rglob("*.safetensors"))


def perfect_results(folder: pathlib.Path, manifest: dict, out: pathlib.Path) -> None:
    """A results directory holding each case's expected outputs (a kernel without error)."""
    out.mkdir(exist_ok=True)
    for case in manifest["cases"]:
        exp, _ = read_safetensors(folder / case["files"]["expected"]["safetensors"])
        write_safetensors(out / f"{case['name']}.safetensors", {o: exp[o] for o in case["outputs"]})


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--head-dim", type=int, default=128)
    args = ap.parse_args()
    cfg = config(args.head_dim)
    work = pathlib.Path(tempfile.mkdtemp())
    rows = []
    try:
        for dtype in ("float32", "bfloat16"):
            folder = work / dtype
            manifest = write_suite(cfg, folder, dtype=dtype)
            n_cases, size = len(manifest["cases"]), suite_bytes(folder)

            def copy(src=folder, dst=work / f"copy-{dtype}"):
                shutil.rmtree(dst, ignore_errors=True)
                shutil.copytree(src, dst)

            seconds, ratio = paired_ratio(
                lambda f=folder, d=dtype: write_suite(cfg, f, dtype=d), copy, args.repeats
            )
            rows.append(
                (f"write_suite {dtype}", n_cases / seconds, size / seconds / 2**20, ratio, "")
            )
            long_max = max(c["max_position"] for c in manifest["cases"])
            tracemalloc.start()
            results = work / f"results-{dtype}"
            perfect_results(folder, manifest, results)
            vsec, vratio = paired_ratio(
                lambda f=folder, r=results: verify_outputs(f, r), copy, args.repeats
            )
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
            rows.append(
                (
                    f"verify_outputs {dtype} (positions to {long_max})",
                    n_cases / vsec,
                    size / vsec / 2**20,
                    vratio,
                    f"{peak / 2**20:.1f} MiB peak; suite {size / 2**20:.1f} MiB, largest case "
                    f"file {largest(folder) / 2**20:.1f} MiB (inputs, expected and results read)",
                )
            )
    finally:
        shutil.rmtree(work)
    print_table(
        f"Conformance suites (head dim {args.head_dim}; medians of {args.repeats})",
        rows,
        ("operation", "cases/s", "MiB/s", "/ copy floor", "memory"),
    )


if __name__ == "__main__":
    main()
