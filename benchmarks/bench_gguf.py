"""Reading the rope metadata of a GGUF file that carries a tokenizer: refimpl's bounded
reader (only the rope keys and tensors are read, every other key is skipped by its length)
against the ``gguf`` package's ``GGUFReader``, which parses every field (what
``refimpl.gguf.read_gguf_rope`` used before it had its own reader).

Each reader runs in a fresh process that has imported NumPy, refimpl and gguf; the table gives
the peak of Python allocations during the read (``tracemalloc``), the growth of the process's
peak resident set (``ru_maxrss``) and the median wall time. The files hold six rope keys, a
``rope_freqs`` tensor and a tokenizer of N tokens (tokens, scores, token types) and N merges.

Run: .venv/bin/python benchmarks/bench_gguf.py [--tokens 50000 128000] [--repeats 5]
"""

from __future__ import annotations

import argparse
import json
import pathlib
import subprocess
import sys
import tempfile

import numpy as np
from _common import print_table

_CHILD = r"""
import json, resource, statistics, sys, time, tracemalloc
import numpy as np
import gguf
from refimpl.gguf import read_gguf_rope

path, which, repeats = sys.argv[1], sys.argv[2], int(sys.argv[3])

def bounded():
    return read_gguf_rope(path)

def full():
    reader = gguf.GGUFReader(path)
    return {name: field.contents() for name, field in reader.fields.items()}

fn = bounded if which == "refimpl" else full
rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
tracemalloc.start()
fn()
peak = tracemalloc.get_traced_memory()[1]
tracemalloc.stop()
rss1 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
times = []
for _ in range(repeats):
    t0 = time.perf_counter()
    fn()
    times.append(time.perf_counter() - t0)
print(json.dumps({"peak": peak, "rss": (rss1 - rss0) * 1024, "time": statistics.median(times)}))
"""


def write_file(path: pathlib.Path, n_tokens: int) -> None:
    import gguf

    w = gguf.GGUFWriter(str(path), "llama")
    w.add_uint32("llama.attention.key_length", 128)
    w.add_uint32("llama.rope.dimension_count", 128)
    w.add_float32("llama.rope.freq_base", 500000.0)
    w.add_uint32("llama.context_length", 131072)
    w.add_uint32("llama.block_count", 32)
    w.add_uint32("llama.embedding_length", 4096)
    w.add_tokenizer_model("gpt2")
    w.add_token_list([f"token-{i:06d}" for i in range(n_tokens)])
    w.add_token_scores([float(-i) for i in range(n_tokens)])
    w.add_token_types([1] * n_tokens)
    w.add_token_merges([f"tok{i} en{i}" for i in range(n_tokens)])
    w.add_tensor("rope_freqs.weight", np.linspace(1.0, 8.0, 64, dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def measure(path: pathlib.Path, which: str, repeats: int) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, str(path), which, str(repeats)],
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(out.stdout)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokens", type=int, nargs="+", default=[50000, 128000])
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    work = pathlib.Path(tempfile.mkdtemp())
    rows = []
    for n in args.tokens:
        path = work / f"tok{n}.gguf"
        write_file(path, n)
        size = path.stat().st_size
        got = {w: measure(path, w, args.repeats) for w in ("refimpl", "gguf")}
        for which, label in (("gguf", "gguf.GGUFReader, every field"), ("refimpl", "refimpl")):
            r = got[which]
            rows.append(
                [
                    f"{n}",
                    f"{size / 2**20:.1f}",
                    label,
                    f"{r['peak'] / 2**20:.2f}",
                    f"{r['rss'] / 2**20:.1f}",
                    f"{r['time'] * 1e3:.1f}",
                    f"{got['gguf']['peak'] / max(r['peak'], 1):.0f}x",
                ]
            )
    print_table(
        "Rope metadata of a GGUF file with a tokenizer (fresh process per reader)",
        rows,
        (
            "tokens",
            "file MiB",
            "reader",
            "tracemalloc peak MiB",
            "maxrss growth MiB",
            "median ms",
            "gguf peak / this peak",
        ),
    )


if __name__ == "__main__":
    main()
