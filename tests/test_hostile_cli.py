"""The command line under hostile configs, paths and options: every failure is one line on
stderr and exit status 2, never a traceback, and ``golden`` never leaves a partial file.

Every config here is hand-made (minimal dicts in the shape of a transformers config.json),
written as text so that non-standard JSON (``Infinity``, ``NaN``, ``1e400``, duplicate keys,
deep nesting) and non-UTF-8 bytes reach the reader as a user's file would. The CLI runs as a
subprocess, as a user runs it; hypothesis-generated values go through ``main(argv)`` in the
same process (a subprocess per example would take minutes).
"""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from refimpl.__main__ import main

BASE = {
    "model_type": "llama",
    "hidden_size": 64,
    "num_attention_heads": 4,
    "rope_theta": 10000.0,
    "max_position_embeddings": 2048,
}


def _with(key: str, raw: str) -> str:
    """BASE as JSON text with ``key`` set to the raw JSON text ``raw``."""
    rest = {k: v for k, v in BASE.items() if k != key}
    return json.dumps(rest)[:-1] + f', "{key}": {raw}}}'


def _longrope(omp: str) -> str:
    scaling = (
        '{"type": "longrope", "short_factor": [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0], '
        '"long_factor": [2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0], '
        f'"original_max_position_embeddings": {omp}}}'
    )
    return _with("rope_scaling", scaling)


HOSTILE_CONFIGS = {
    "head_dim Infinity": _with("head_dim", "Infinity"),
    "head_dim 1e400": _with("head_dim", "1e400"),
    "head_dim NaN": _with("head_dim", "NaN"),
    "max_position_embeddings Infinity": _with("max_position_embeddings", "Infinity"),
    "rope_theta a string": _with("rope_theta", '"ten thousand"'),
    "rope_theta true": _with("rope_theta", "true"),
    "longrope original_max_position_embeddings 1": _longrope("1"),
    "longrope original_max_position_embeddings true": _longrope("true"),
    "yarn negative mscale": _with(
        "rope_scaling",
        '{"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 512, "mscale": -1}',
    ),
    "dynamic factor 1e200": _with("rope_scaling", '{"type": "dynamic", "factor": 1e200}'),
    "unknown rope type": _with("rope_scaling", '{"type": "no-such-type", "factor": 2.0}'),
    "duplicate keys": json.dumps(BASE)[:-1] + ', "rope_theta": 500000.0}',
    "nested 10**5 deep": "[" * 10**5 + "]" * 10**5,
    "text_config 5": '{"model_type": "llava", "text_config": 5}',
    "a JSON list": "[1, 2, 3]",
    "malformed JSON": '{"model_type": "llama",',
    "empty file": "",
}
HOSTILE_BYTES = {
    "not UTF-8": b'{"model_type": "\xff\xfe"}',
    "binary": bytes(range(256)),
}


def _cli(*args, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "refimpl", *map(str, args)],
        capture_output=True,
        text=True,
        errors="replace",
        cwd=cwd,
        timeout=120,
    )


def _assert_one_line_exit_2(result: subprocess.CompletedProcess, *words: str) -> str:
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2, (result.returncode, result.stderr[-2000:])
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr[-2000:]
    assert "error" in lines[0]
    for word in words:
        assert word in lines[0], (word, lines[0])
    return lines[0]


@pytest.mark.parametrize("case", sorted(HOSTILE_CONFIGS) + sorted(HOSTILE_BYTES))
def test_hostile_config_files_give_one_line_and_exit_2(tmp_path, case):
    path = tmp_path / "config.json"
    if case in HOSTILE_BYTES:
        path.write_bytes(HOSTILE_BYTES[case])
    else:
        path.write_text(HOSTILE_CONFIGS[case])
    _assert_one_line_exit_2(_cli("describe", path))
    out = tmp_path / "golden.npz"
    _assert_one_line_exit_2(_cli("golden", path, "--positions", 4, "--out", out))
    assert not out.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["config.json"]


def test_hostile_paths_give_one_line_and_exit_2(tmp_path):
    _assert_one_line_exit_2(_cli("describe", tmp_path / "missing.json"), "missing.json")
    _assert_one_line_exit_2(_cli("describe", tmp_path))  # a folder
    good = tmp_path / "good.json"
    good.write_text(json.dumps(BASE))
    _assert_one_line_exit_2(
        _cli("golden", good, "--positions", 4, "--out", tmp_path / "no-such-folder" / "g.npz")
    )
    _assert_one_line_exit_2(_cli("golden", good, "--positions", 4, "--out", tmp_path))


@pytest.mark.parametrize(
    "options",
    [
        ["--positions", str(2**40)],
        ["--positions", "0"],
        ["--positions", "-3"],
        ["--positions", "1e3"],
        ["--positions", "4", "--chunk", "0"],
        ["--positions", "4", "--precision", "no-such-precision"],
    ],
    ids=lambda o: " ".join(o),
)
def test_hostile_golden_options_give_one_line_and_exit_2_and_no_file(tmp_path, options):
    good = tmp_path / "good.json"
    good.write_text(json.dumps(BASE))
    out = tmp_path / "g.npz"
    _assert_one_line_exit_2(_cli("golden", good, "--out", out, *options))
    assert not out.exists()


def test_golden_keeps_the_previous_file_when_a_rerun_fails(tmp_path):
    good = tmp_path / "good.json"
    good.write_text(json.dumps(BASE))
    out = tmp_path / "g.npz"
    result = _cli("golden", good, "--positions", 16, "--out", out, "--quiet")
    assert result.returncode == 0, result.stderr
    before = out.read_bytes()
    _assert_one_line_exit_2(_cli("golden", good, "--positions", 2**40, "--out", out))
    assert out.read_bytes() == before
    with np.load(out) as z:
        assert z["cos"].shape == (16, 8)


def test_hostile_check_targets_give_one_line_and_exit_2(tmp_path):
    (tmp_path / "bad_syntax.py").write_text("def fn(:\n")
    (tmp_path / "raises.py").write_text("raise RuntimeError('boom')\n")
    for target, word in [
        (f"{tmp_path / 'x.json'}:fn", "x.json"),
        ("bad_syntax:fn", "bad_syntax"),
        ("raises:fn", "raises"),
        ("no_such_module_here:fn", "no_such_module_here"),
        ("bad_syntax", "MODULE:FUNCTION"),
        (f"{tmp_path / 'bad_syntax.py'}:fn", "bad_syntax.py"),
    ]:
        _assert_one_line_exit_2(_cli("check", target, "--dim", 8, cwd=tmp_path), word)
    for options in (["--dim", "7"], ["--dim", "x"], ["--dim", "4096"]):
        _assert_one_line_exit_2(_cli("check", "math:cos", *options, cwd=tmp_path))


_JSON_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.text(max_size=4),
    st.sampled_from([-1, 0, 1, 3, 2**70, -(2**70), 1.5, -1e300, 1e300, []]),
    st.sampled_from(["NaN", "Infinity", "-Infinity", "1e400"]).map(lambda raw: ("raw", raw)),
)
_KEYS = ["head_dim", "hidden_size", "num_attention_heads", "rope_theta", "max_position_embeddings"]


@settings(max_examples=25)
@given(st.sampled_from(_KEYS), _JSON_VALUES)
def test_generated_hostile_config_values_never_crash_the_cli(tmp_path_factory, key, value):
    """``describe`` either accepts a value (exit 0) or fails with one line and exit 2."""
    import contextlib
    import io

    folder = tmp_path_factory.mktemp("cfg")
    raw = value[1] if isinstance(value, tuple) else json.dumps(value)
    path = folder / "config.json"
    path.write_text(_with(key, raw))
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            status = main(["describe", str(path)])
        except SystemExit as exc:  # argparse's own exits
            status = exc.code
    assert status in (0, 2), (key, raw, status, err.getvalue())
    if status == 2:
        assert len(err.getvalue().strip().splitlines()) == 1, err.getvalue()
