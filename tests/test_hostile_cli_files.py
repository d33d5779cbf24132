"""Every command of ``python -m refimpl`` on hostile files and options: each case ends with exit
status 0 (a valid input), 1 (a failing verdict) or 2 with one line on stderr naming the file,
key or option and the rule; never a traceback, a hang or unbounded memory, and ``golden`` never
leaves a partial file.

``CLI_CASES`` lists the cases per command; ``CLI_COVERAGE`` says, for every command and every
option of the command line, which cases cover it, and ``READERS`` where every public function
that reads a file is covered: ``test_every_command_option_and_reader_is_covered`` fails when a
new command, option or reader has no entry. The ``conformance`` and ``verify`` commands and
their readers are covered in ``tests/test_conformance_hostile.py``.

The default run executes every case in process through ``main(argv)`` with the memory it
allocates bounded (tracemalloc). ``make test-hostile`` (``REFIMPL_HOSTILE_CLI=1``) also runs
each case as a subprocess under a wall-time limit and an address-space limit
(``resource.setrlimit`` in the child), as a user runs the command.
"""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
import io
import json
import os
import pathlib
import struct
import subprocess
import sys
import tracemalloc

import numpy as np
import pytest
from hostile_files import CRAFTED_GGUF, VALID, gguf_bytes, u32

import refimpl
from refimpl.__main__ import build_parser, main

POINTER = "tests/test_conformance_hostile.py"
# Limits of the subprocess runs: far above what a refusal needs (a second and ~200 MB), far
# below what a hang or an unbounded allocation would take.
WALL_LIMIT_S = 120
MEMORY_LIMIT = 4 * 2**30
# Python allocations one in-process case may make (a golden file of a few positions included).
CASE_MEMORY_BOUND = 16 * 2**20


# ------------------------------------------------------------------------------ the files
def _valid_gguf() -> bytes:
    return gguf_bytes([*VALID, u32("llama.block_count", 2)])


def _npz() -> bytes:
    buf = io.BytesIO()
    np.savez(buf, cos=np.ones((2, 2)))
    return buf.getvalue()


def _safetensors(header_len: int = 2**40) -> bytes:
    """A safetensors file whose header claims ``header_len`` bytes (there are 20)."""
    header = json.dumps({"x": {"dtype": "F32", "shape": [2**40], "data_offsets": [0, 4]}})
    return struct.pack("<Q", header_len) + header.encode()[:20]


CONFIG = {
    "model_type": "llama",
    "hidden_size": 64,
    "num_attention_heads": 4,
    "rope_theta": 10000.0,
    "max_position_embeddings": 2048,
}  # hand-made, in the shape of a transformers config.json

FILES = {
    **{f"gguf: {name}": build for name, (build, _) in CRAFTED_GGUF.items()},
    "gguf: valid with two layers": _valid_gguf,
    "config.json": lambda: json.dumps(CONFIG).encode(),
    "npz instead of a config": _npz,
    "safetensors with a 2**40-byte header": _safetensors,
    "binary junk": lambda: bytes(range(256)) * 8,
    "empty file": lambda: b"",
}
# What each file must give: None (read; exit 0) or words of the one-line refusal.
FILE_WORDS = {
    f"gguf: {name}": ("error",) if words and "not a GGUF" in words else words
    for name, (_, words) in CRAFTED_GGUF.items()
}  # without GGUF's magic bytes the command line reads a file as a config.json
FILE_WORDS.update(
    {
        "gguf: valid with two layers": None,
        "config.json": None,
        "npz instead of a config": ("error",),
        "safetensors with a 2**40-byte header": ("error",),
        "binary junk": ("error",),
        "empty file": ("error",),
    }
)
# Valid GGUF files without block_count: describe and golden refuse them, as llama.cpp does.
for _name, (_, _words) in CRAFTED_GGUF.items():
    if _words is None and _name != "50k-entry tokenizer":  # the tokenizer file has 16 layers
        FILE_WORDS[f"gguf: {_name}"] = ("llama.block_count", "refuses")


@dataclasses.dataclass(frozen=True)
class Case:
    """``python -m refimpl ARGV``; ``files`` are written first (``{name}`` in argv is the
    path); ``words`` None means exit 0 or 1, else exit 2 with these words in the line."""

    argv: tuple
    words: tuple | None
    covers: tuple  # the positional arguments and options this case exercises
    files: tuple = ()


def _file_cases(command: str, extra: tuple = ()) -> dict:
    out = {}
    for name in FILES:
        words = FILE_WORDS[name]
        if command == "engines" and name.startswith("gguf"):
            words = ("error",)  # engines reads a config.json, not a GGUF
        out[f"{command} {name}"] = Case(
            (command, "{file}", *extra), words, ("config", *extra[:1]), (("file", name),)
        )
    return out


def _option_cases() -> dict:
    cfg = (("file", "config.json"),)
    gg = (("file", "gguf: valid with two layers"),)
    c = {}
    for value, words in (("0", None), ("-1", None), (str(2**70), None), ("x", ("invalid int",))):
        c[f"describe --seq-len {value}"] = Case(
            ("describe", "{file}", "--seq-len", value, "--no-pairs"),
            words if value == "x" else ("error",),
            ("--seq-len", "--no-pairs"),
            cfg,
        )
    c["describe gguf --no-pairs"] = Case(
        ("describe", "{file}", "--no-pairs"), None, ("--no-pairs",), gg
    )
    for opts, words in (
        (("--positions", str(2**40)), ("--positions",)),
        (("--positions", "0"), ("--positions",)),
        (("--positions", "4", "--chunk", "0"), ("--chunk",)),
        (("--positions", "4", "--precision", "bogus"), ("invalid choice",)),
        (("--positions", "4", "--seq-len", "-5"), ("error",)),
        (("--positions", "8", "--precision", "ggml-float32", "--quiet"), None),
        (("--positions", "4", "--method", "bogus"), ("invalid choice",)),
        (("--positions", "4", "--method", "fast", "--quiet"), None),
        (("--positions", "4", "--method", "fast", "--precision", "ggml-float32"), ("--method",)),
    ):
        c[f"golden gguf {' '.join(opts)}"] = Case(
            ("golden", "{file}", "--out", "{out}", *opts),
            words,
            ("config", "--out", *[o for o in opts if o.startswith("--")]),
            gg,
        )
    c["golden to a folder that does not exist"] = Case(
        ("golden", "{file}", "--positions", "4", "--out", "{tmp}/no/such/g.npz"),
        ("error",),
        ("--out",),
        gg,
    )
    c["engines --dtype bogus"] = Case(
        ("engines", "{file}", "--dtype", "bogus"), ("invalid choice",), ("--dtype",), cfg
    )
    c["engines --dtype float16"] = Case(
        ("engines", "{file}", "--dtype", "float16"), None, ("--dtype",), cfg
    )
    c["engines --seq-len -1"] = Case(
        ("engines", "{file}", "--seq-len", "-1"), ("seq_len",), ("--seq-len",), cfg
    )
    c["engines --seq-len 9000"] = Case(
        ("engines", "{file}", "--seq-len", "9000"), None, ("--seq-len",), cfg
    )
    return c


_FN = """
import sys
import numpy as np
def exits(x, p):
    sys.exit(3)
def nan(x, p):
    return x * np.nan
def none(x, p):
    return None
def rope(x, p):
    import refimpl
    return refimpl.apply_rope(x, p)
def op(x, cos, sin):
    import refimpl
    return refimpl.apply_rope_tables(x, cos, sin)
def op_nan(x, cos, sin):
    return x * np.nan
def calls(x, positions, seq_len):
    import refimpl
    return refimpl.apply_rope(x, positions)
def scores(layer, q, k, positions):
    return q @ k.T
def dca(q, k, positions):
    return q @ k.T
"""


def _check_cases() -> dict:
    mod = (("module", "hostile_fn.py"),)
    cases = {
        "check fn calls sys.exit": (("hostile_fn:exits", "--dim", "8"), ("sys.exit(3)",)),
        "check fn returns NaN": (("hostile_fn:nan", "--dim", "8"), ("NaN",)),
        "check fn returns None": (("hostile_fn:none", "--dim", "8"), ("shape",)),
        "check a missing module": (("no_such_module_x:fn", "--dim", "8"), ("no_such_module_x",)),
        "check --dim 7": (("hostile_fn:rope", "--dim", "7"), ("dim",)),
        "check --dim 2**20": (("hostile_fn:rope", "--dim", str(2**20)), ("dim",)),
        "check --base nan": (("hostile_fn:rope", "--dim", "8", "--base", "nan"), ("base",)),
        "check --tolerance -1": (
            ("hostile_fn:rope", "--dim", "8", "--tolerance", "-1"),
            ("tolerance",),
        ),
        "check --rotary-dim 3": (
            ("hostile_fn:rope", "--dim", "8", "--rotary-dim", "3"),
            ("rotary_dim",),
        ),
        "check --attention-scaling inf": (
            ("hostile_fn:rope", "--dim", "8", "--attention-scaling", "inf"),
            ("attention_scaling",),
        ),
        "check --pairing bogus": (
            ("hostile_fn:rope", "--dim", "8", "--pairing", "x"),
            ("invalid choice",),
        ),
        "check --backend bogus": (
            ("hostile_fn:rope", "--dim", "8", "--backend", "x"),
            ("invalid choice",),
        ),
        "check --config junk": (
            ("hostile_fn:rope", "--dim", "8", "--config", "{file}"),
            ("error",),
        ),
        "check --seq-len -1 with a config": (
            ("hostile_fn:rope", "--dim", "16", "--config", "{cfg}", "--seq-len", "-1"),
            ("seq_len",),
        ),
        "check --operator --tables bogus": (
            ("hostile_fn:op", "--operator", "--dim", "8", "--tables", "x"),
            ("invalid choice",),
        ),
        "check --operator with half tables": (
            ("hostile_fn:op", "--operator", "--dim", "8", "--tables", "half"),
            None,
        ),
        "check --operator returning NaN": (
            ("hostile_fn:op_nan", "--operator", "--dim", "8"),
            ("NaN",),
        ),
        "check --operator --position-ids on a three-argument op": (
            (
                "hostile_fn:op",
                "--operator",
                "--dim",
                "8",
                "--backend",
                "numpy",
                "--position-ids",
                "--positions",
                "0,1,2,3,5,8,13",
            ),
            ("positional arguments",),
        ),
        "check --operator with --calls": (
            ("hostile_fn:op", "--operator", "--calls", "8", "--dim", "8"),
            ("not allowed with",),
        ),
        "check --calls x": (
            ("hostile_fn:calls", "--calls", "x", "--config", "{cfg}"),
            ("--calls",),
        ),
        "check --calls --policy bogus": (
            ("hostile_fn:calls", "--calls", "8,0:4", "--config", "{cfg}", "--policy", "x"),
            ("invalid choice",),
        ),
        "check --calls --policy vllm --max-model-len -1": (
            (
                "hostile_fn:calls",
                "--calls",
                "8",
                "--config",
                "{cfg}",
                "--policy",
                "vllm",
                "--max-model-len",
                "-1",
            ),
            ("max_model_len",),
        ),
        "check --calls --policy table_length --table-length 0": (
            (
                "hostile_fn:calls",
                "--calls",
                "8",
                "--config",
                "{cfg}",
                "--policy",
                "table_length",
                "--table-length",
                "0",
            ),
            ("table_length",),
        ),
        "check --positions 1,2,x": (
            ("hostile_fn:rope", "--dim", "8", "--positions", "1,2,x"),
            ("--positions",),
        ),
        "check --attention-scale --head-dim 0": (
            ("hostile_fn:scores", "--attention-scale", "--config", "{cfg}", "--head-dim", "0"),
            ("head_dim",),
        ),
        "check --attention-scale --softmax-scale (a --dual-chunk option)": (
            ("hostile_fn:scores", "--attention-scale", "--config", "{cfg}", "--softmax-scale", "1"),
            ("--softmax-scale",),
        ),
        "check --dual-chunk --chunk-size 0": (
            (
                "hostile_fn:dca",
                "--dual-chunk",
                "--dim",
                "8",
                "--chunk-size",
                "0",
                "--local-size",
                "4",
            ),
            ("chunk_size",),
        ),
        "check --dual-chunk --local-size -4": (
            (
                "hostile_fn:dca",
                "--dual-chunk",
                "--dim",
                "8",
                "--chunk-size",
                "16",
                "--local-size",
                "-4",
            ),
            ("local_size",),
        ),
        "check --dual-chunk --softmax-scale nan": (
            (
                "hostile_fn:dca",
                "--dual-chunk",
                "--dim",
                "8",
                "--chunk-size",
                "16",
                "--local-size",
                "4",
                "--softmax-scale",
                "nan",
            ),
            ("softmax_scale",),
        ),
        "check a correct fn": (
            (
                "hostile_fn:rope",
                "--dim",
                "8",
                "--base",
                "10000",
                "--pairing",
                "half",
                "--backend",
                "numpy",
            ),
            None,
        ),
    }
    out = {}
    for name, (args, words) in cases.items():
        covers = (*(a for a in args if a.startswith("--")), "target")
        out[name] = Case(
            ("check", *args), words, covers, (*mod, ("file", "binary junk"), ("cfg", "config.json"))
        )
    return out


CLI_CASES = {
    **_file_cases("describe", ("--no-pairs",)),
    **_file_cases("golden", ("--positions", "4", "--out", "{out}", "--quiet")),
    **_file_cases("engines"),
    **_option_cases(),
    **_check_cases(),
}

# command -> {argument or option: how it is covered} (a CLI_CASES "covers" entry, or a test)
CLI_COVERAGE = {
    "describe": {"config": "cases", "--seq-len": "cases", "--no-pairs": "cases"},
    "golden": {
        "config": "cases",
        "--positions": "cases",
        "--out": "cases",
        "--precision": "cases",
        "--seq-len": "cases",
        "--chunk": "cases",
        "--quiet": "cases",
        "--method": "cases",
    },
    "engines": {"config": "cases", "--dtype": "cases", "--seq-len": "cases"},
    "check": {
        "target": "cases",
        "--dim": "cases",
        "--config": "cases",
        "--seq-len": "cases",
        "--base": "cases",
        "--pairing": "cases",
        "--rotary-dim": "cases",
        "--attention-scaling": "cases",
        "--tolerance": "cases",
        "--backend": "cases",
        "--operator": "cases",
        "--calls": "cases",
        "--attention-scale": "cases",
        "--dual-chunk": "cases",
        "--positions": "cases",
        "--tables": "cases",
        "--position-ids": "cases",
        "--policy": "cases",
        "--max-model-len": "cases",
        "--table-length": "cases",
        "--head-dim": "cases",
        "--chunk-size": "cases",
        "--local-size": "cases",
        "--softmax-scale": "cases",
    },
    "conformance": POINTER,
    "verify": POINTER,
}

# Public functions that read a file (a path or a config given as a path) -> where covered.
READERS = {
    "read_gguf_rope": "tests/test_hostile_gguf.py (CRAFTED_GGUF)",
    "rope_from_gguf": "tests/test_hostile_gguf.py (CRAFTED_GGUF)",
    "compare_gguf": "tests/test_hostile_gguf.py::test_every_reader_refuses_the_hostile_files",
    "gguf_rope_metadata": "tests/test_hostile_cli.py (HOSTILE_CONFIGS, through the config reader)",
    "rope_from_config": "tests/test_hostile_cli.py (HOSTILE_CONFIGS)",
    "rope_schedule": "CLI_CASES (describe and golden on every file)",
    "engine_differences": "CLI_CASES (engines on every file)",
    "check_rope": "CLI_CASES (check --config)",
    "check_rope_arrays": "CLI_CASES (check --config)",
    "write_cos_sin_npz": "a writer, not a reader: tests/test_cli.py (no partial file is left)",
    "write_suite": POINTER,
    "verify_outputs": POINTER,
}
_READER_PARAMS = {
    "path",
    "gguf_path",
    "config",
    "config_or_path",
    "suite_dir",
    "results_dir",
    "expected",
}


# ------------------------------------------------------------------------------- helpers
def _prepare(case: Case, tmp_path: pathlib.Path) -> list[str]:
    subs = {"{tmp}": str(tmp_path), "{out}": str(tmp_path / "golden.npz")}
    for kind, name in case.files:
        if kind == "module":
            (tmp_path / name).write_text(_FN)
            continue
        path = tmp_path / f"{kind}-{abs(hash(name)) % 10**8}.bin"
        path.write_bytes(FILES[name]())
        subs["{" + kind + "}"] = str(path)
    argv = []
    for a in case.argv:
        for key, value in subs.items():
            a = a.replace(key, value)
        argv.append(a)
    return argv


def _judge(case: Case, status: int, err: str, tmp_path: pathlib.Path) -> None:
    lines = err.strip().splitlines()
    assert "Traceback" not in err, err[-2000:]
    if case.words is None:
        assert status in (0, 1), (status, err[-2000:])
        return
    assert status == 2 and len(lines) == 1, (status, err[-2000:])
    for word in case.words:
        assert word in lines[0], (word, lines[0])
    if case.argv[0] == "golden":
        assert not (tmp_path / "golden.npz").exists(), "golden left a file after failing"


# --------------------------------------------------------------------------------- tests
# The in-process run (the default one) takes every case except repeats of the reader's work:
# golden and engines on every crafted GGUF read them as describe does (the subprocess run takes
# them all), and the 50k-entry tokenizer is read in bounded memory in test_hostile_gguf.py.
_GOLDEN_AND_ENGINES_FILES = {
    "gguf: valid with two layers",
    "gguf: string cut inside its last byte",
    "gguf: 180-byte file, last key 2**40 strings",
    "gguf: block_count 2**32-1",
    "gguf: infinite scaling factor",
    "config.json",
    "npz instead of a config",
    "safetensors with a 2**40-byte header",
    "binary junk",
}
IN_PROCESS = sorted(
    name
    for name in CLI_CASES
    if "50k-entry" not in name
    and not (
        name.split(" ", 1)[0] in ("golden", "engines")
        and name.split(" ", 1)[1] in FILES
        and name.split(" ", 1)[1] not in _GOLDEN_AND_ENGINES_FILES
    )
)


@pytest.mark.parametrize("name", IN_PROCESS)
def test_cli_case_in_process(tmp_path, monkeypatch, name):
    case = CLI_CASES[name]
    argv = _prepare(case, tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    err = io.StringIO()
    tracemalloc.start()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            try:
                status = main(argv)
            except SystemExit as exc:  # argparse's own usage errors
                status = exc.code
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        sys.modules.pop("hostile_fn", None)
    _judge(case, status, err.getvalue(), tmp_path)
    assert peak < CASE_MEMORY_BOUND, f"{name}: {peak} bytes"


def _capped():
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
    resource.setrlimit(resource.RLIMIT_CPU, (WALL_LIMIT_S, WALL_LIMIT_S))


@pytest.mark.skipif(
    not os.environ.get("REFIMPL_HOSTILE_CLI"),
    reason="the subprocess runs take minutes on a shared machine: make test-hostile",
)
@pytest.mark.parametrize("name", sorted(CLI_CASES))
def test_cli_case_as_a_capped_subprocess(tmp_path, name):
    case = CLI_CASES[name]
    argv = _prepare(case, tmp_path)
    result = subprocess.run(
        [sys.executable, "-m", "refimpl", *argv],
        capture_output=True,
        text=True,
        errors="replace",
        cwd=tmp_path,
        timeout=WALL_LIMIT_S,
        preexec_fn=_capped,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path])},
    )
    assert result.returncode >= 0, f"killed by signal {-result.returncode} (a limit)"
    _judge(case, result.returncode, result.stderr, tmp_path)


def _subcommands() -> dict:
    parser = build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    return sub.choices


_POINTED = (pathlib.Path(__file__).parent / pathlib.Path(POINTER).name).read_text()


def test_every_command_option_and_reader_is_covered():
    commands = _subcommands()
    assert set(commands) == set(CLI_COVERAGE), set(commands) ^ set(CLI_COVERAGE)
    covered = {(c.argv[0], what) for c in CLI_CASES.values() for what in c.covers}
    for command, parser in commands.items():
        entry = CLI_COVERAGE[command]
        if isinstance(entry, str):
            # covered by the conformance suite's own crafted-file tests, run as subprocesses
            assert entry == POINTER, (command, entry)
            assert f'_cli("{command}"' in _POINTED, f"{POINTER} never runs {command}"
            continue
        names = set()
        for action in parser._actions:
            if action.dest == "help":
                continue
            names.add(action.option_strings[0] if action.option_strings else action.dest)
        assert names == set(entry), (command, names ^ set(entry))
        for name, where in entry.items():
            if where == "cases":
                assert (command, name) in covered, f"{command} {name}: no case in CLI_CASES"
    readers = set()
    for name in refimpl.__all__:
        obj = getattr(refimpl, name)
        if inspect.isfunction(obj) and _READER_PARAMS & set(inspect.signature(obj).parameters):
            readers.add(name)
    assert readers == set(READERS), readers ^ set(READERS)
