"""`python -m refimpl describe|golden`: output, files, and one-line errors (most run the CLI as
a subprocess, as a user does). Every config here is hand-made."""

import json
import subprocess
import sys
import tracemalloc

import numpy as np
import pytest

from refimpl import ROPE_SCALINGS
from refimpl.__main__ import golden_tables, main
from refimpl.config import rope_from_config, rope_schedule


def _exact_inv_freq(spec):
    """The float64 nearest each exact frequency: a correct golden file's inv_freq member."""
    return ROPE_SCALINGS[spec.rope_type].exact_frequencies(**spec.method_params()).float64()


LLAMA3 = {  # hand-made, Llama-3.1 rope keys
    "hidden_size": 512,
    "num_attention_heads": 4,
    "max_position_embeddings": 131072,
    "rope_theta": 5e5,
    "rope_scaling": {
        "rope_type": "llama3",
        "factor": 8.0,
        "low_freq_factor": 1.0,
        "high_freq_factor": 4.0,
        "original_max_position_embeddings": 8192,
    },
}
GEMMA3 = {  # hand-made, Gemma 3 4.x keys
    "model_type": "gemma3_text",
    "head_dim": 16,
    "num_hidden_layers": 12,
    "rope_theta": 1e6,
    "rope_local_base_freq": 1e4,
    "rope_scaling": {"rope_type": "linear", "factor": 8.0},
}
LLAMA4 = {"model_type": "llama4_text", "head_dim": 8, "num_hidden_layers": 8}  # hand-made


def _cli(*args, cwd=None):
    return subprocess.run(
        [sys.executable, "-m", "refimpl", *map(str, args)], capture_output=True, text=True, cwd=cwd
    )


@pytest.fixture
def cfg_path(tmp_path):
    p = tmp_path / "config.json"
    p.write_text(json.dumps(LLAMA3))
    return p


def _write(tmp_path, name, cfg):
    p = tmp_path / name
    p.write_text(json.dumps(cfg))
    return p


def test_describe_prints_schedule_spec_and_pair_table(cfg_path, capsys):
    assert main(["describe", str(cfg_path)]) == 0
    out = capsys.readouterr().out
    assert "A layer  0 (all): base 500000, 128 of 128 features, half, llama3" in out
    assert "rotary width    128 (64 pairs)" in out
    lines = [ln.split() for ln in out.splitlines() if ln[:4].strip().isdigit()]
    assert len(lines) == 64
    regimes = [ln[-1] for ln in lines]
    assert regimes[:29] == ["extrapolated"] * 29
    assert regimes[29:35] == ["ramped"] * 6 and regimes[35:] == ["interpolated"] * 29


def test_describe_lists_layer_ranges_nope_and_query_scaling(tmp_path):
    res = _cli("describe", _write(tmp_path, "g.json", GEMMA3), "--no-pairs")
    assert res.returncode == 0, res.stderr
    assert "A layers 0-4, 6-10 (sliding_attention): base 10000, 16 of 16 features" in res.stdout
    assert "B layers 5, 11 (full_attention): base 1e+06" in res.stdout and "factor=8" in res.stdout
    res = _cli("describe", _write(tmp_path, "l.json", LLAMA4), "--no-pairs")
    assert "- layers 3, 7 (full_attention): no RoPE; q x (1 + 0.1 ln(floor((p+1)/8192)" in (
        res.stdout
    )
    # no rope_theta in the file: Llama4TextConfig's default_theta 5e5, as transformers reads it
    assert "A layers 0-2, 4-6 (full_attention): base 500000, 8 of 8 features, interleaved" in (
        res.stdout
    )
    assert not any(ln[:4].strip().isdigit() for ln in res.stdout.splitlines())


@pytest.mark.parametrize(
    ("precision", "method"),
    [("float64", None), ("float64", "fast"), ("transformers-float32", None)],
)
def test_golden_writes_tables_and_metadata(cfg_path, tmp_path, precision, method, capsys):
    out = tmp_path / "g.npz"
    args = ["golden", str(cfg_path), "--positions", "300", "--out", str(out)]
    assert main([*args, "--precision", precision, *(["--method", method] if method else [])]) == 0
    data = np.load(out)
    spec = rope_from_config(cfg_path)
    used = ("correct" if method is None else method) if precision == "float64" else None
    if used == "fast":
        c, s = spec.cos_sin(np.arange(300), precision=precision)
    else:  # the default float64 tables are the correctly rounded ones
        c, s = golden_tables(spec, np.arange(300), precision, used)
    np.testing.assert_array_equal(data["cos"], c)
    np.testing.assert_array_equal(data["sin"], s)
    assert data["cos"].dtype == (np.float64 if precision == "float64" else np.float32)
    assert data["inv_freq"].shape == (64,)
    assert float(data["attention_scaling"]) == 1.0
    meta = json.loads(str(data["metadata"]))
    assert meta["precision"] == precision and meta["config"] == str(cfg_path)
    assert meta["method"] == used
    assert meta["rope_type"] == "llama3" and "refimpl_version" in meta
    assert meta["schedule"] == [{"index": 0, "layer_type": "all", "spec": 0, "query_scaling": None}]


def test_golden_writes_one_table_set_per_distinct_layer_spec(tmp_path):
    cfg = _write(tmp_path, "g.json", GEMMA3)
    out = tmp_path / "g.npz"
    res = _cli("golden", cfg, "--positions", "50", "--out", out)
    assert res.returncode == 0, res.stderr
    assert "2 table set(s) of 8, 8 pairs" in res.stdout
    sched = rope_schedule(cfg, seq_len=50)
    with np.load(out) as z:
        meta = json.loads(str(z["metadata"]))
        assert [m["rope_type"] for m in meta["specs"]] == ["default", "linear"]
        assert [layer["spec"] for layer in meta["schedule"]] == ([0] * 5 + [1]) * 2
        for layer in sched:
            k = meta["schedule"][layer.index]["spec"]
            c, s = golden_tables(layer.spec, np.arange(50), "float64", "correct")
            assert z[f"cos_{k}"].tobytes() == c.tobytes() and z[f"sin_{k}"].tobytes() == s.tobytes()
            np.testing.assert_array_equal(z[f"inv_freq_{k}"], _exact_inv_freq(layer.spec))
    nope = _cli("golden", _write(tmp_path, "l.json", LLAMA4), "--positions", "9", "--out", out)
    with np.load(out) as z:
        meta = json.loads(str(z["metadata"]))
        assert meta["schedule"][3] == {
            "index": 3,
            "layer_type": "full_attention",
            "spec": None,
            "query_scaling": {
                "kind": "llama4_temperature",
                "params": {"floor_scale": 8192.0, "attn_scale": 0.1},
                "softmax_scale": 1.0,
            },
        }
    assert nope.returncode == 0


DYNAMIC_CFG = {  # hand-made
    "head_dim": 16,
    "max_position_embeddings": 100,
    "rope_parameters": {"rope_type": "dynamic", "rope_theta": 1e4, "factor": 2.0},
}


@pytest.fixture
def dynamic_config(tmp_path):
    """A dynamic-NTK config.json (original length 100) written to a temporary file."""
    return _write(tmp_path, "c.json", DYNAMIC_CFG)


def test_golden_dynamic_defaults_seq_len_to_positions(tmp_path, dynamic_config):
    out = tmp_path / "g.npz"
    assert main(["golden", str(dynamic_config), "--positions", "400", "--out", str(out)]) == 0
    want = _exact_inv_freq(rope_from_config(DYNAMIC_CFG, seq_len=400))
    np.testing.assert_array_equal(np.load(out)["inv_freq"], want)


@pytest.mark.parametrize("precision", ["float64", "transformers-float32"])
def test_streamed_golden_equals_the_in_memory_tables_bit_for_bit(
    cfg_path, tmp_path, precision, capsys
):
    n = 5000
    out = tmp_path / "s.npz"
    args = ["golden", str(cfg_path), "--positions", str(n), "--out", str(out)]
    assert main([*args, "--precision", precision, "--chunk", "777"]) == 0
    err = capsys.readouterr().err
    assert "cos positions 5000 / 5000 (100.0 %)" in err and "sin positions/s" in err
    spec = rope_from_config(cfg_path)
    method = "correct" if precision == "float64" else None
    cos, sin = golden_tables(spec, np.arange(n), precision, method)  # the whole range at once
    inv = _exact_inv_freq(spec) if precision == "float64" else spec.inv_freq_float32
    want = {"inv_freq": inv, "cos": cos, "sin": sin}
    with np.load(out) as z:
        assert z.files == ["positions", "attention_scaling", "metadata", "inv_freq", "cos", "sin"]
        assert np.array_equal(z["positions"], np.arange(n)) and z["positions"].dtype == np.int64
        for key in ("inv_freq", "cos", "sin"):
            assert z[key].dtype == want[key].dtype
            assert z[key].tobytes() == want[key].tobytes()  # bit for bit
    quiet = tmp_path / "q.npz"
    q_args = ["golden", str(cfg_path), "--positions", str(n), "--out", str(quiet)]
    assert main([*q_args, "--precision", precision, "--chunk", "777", "--quiet"]) == 0
    assert capsys.readouterr().err == ""
    with np.load(quiet) as z:
        assert z["cos"].tobytes() == want["cos"].tobytes()


@pytest.mark.parametrize("precision", ["float64", "transformers-float32"])
def test_golden_memory_is_bounded_by_the_chunk(tmp_path, precision):
    cfg = _write(tmp_path, "small.json", {"head_dim": 32, "rope_theta": 1e4})
    n, chunk, width = 2**18, 2**12, 16
    out = tmp_path / "big.npz"
    args = ["golden", str(cfg), "--positions", str(n), "--out", str(out), "--quiet"]
    tracemalloc.start()
    try:
        assert main([*args, "--precision", precision, "--chunk", str(chunk)]) == 0
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    table_bytes = n * width * 8  # one whole float64 table: 32 MiB
    assert peak < 12 * chunk * width * 8, peak  # a few chunk-sized temporaries (about 4 used)
    assert 2 * table_bytes > 20 * peak  # the in-memory path would hold both tables
    with np.load(out) as z:
        assert z["cos"].shape == (n, width)
        spec = rope_from_config(cfg)
        method = "correct" if precision == "float64" else None
        c, s = golden_tables(spec, np.arange(n - 3, n), precision, method)
        assert np.array_equal(z["cos"][-3:], c) and np.array_equal(z["sin"][-3:], s)


def test_golden_refuses_positions_past_a_dynamic_seq_len_before_writing(
    tmp_path, capsys, dynamic_config
):
    out = tmp_path / "g.npz"
    args = ["golden", str(dynamic_config), "--positions", "400", "--seq-len", "200"]
    assert main([*args, "--out", str(out)]) == 2
    assert "positions reach 399" in capsys.readouterr().err
    assert not out.exists()


def test_module_entry_point_runs(cfg_path):
    res = _cli("describe", cfg_path)
    assert res.returncode == 0 and "llama3" in res.stdout


# ----------------------------------------------------------------- one line, exit 2

HOSTILE_JSON = {
    "inf_head_dim": '{"head_dim": Infinity}',
    "huge_head_dim": '{"head_dim": 1e400}',
    "inf_max_position": '{"head_dim": 8, "max_position_embeddings": Infinity}',
    "huge_max_position": '{"head_dim": 8, "max_position_embeddings": 1e400}',
    "nan_head_dim": '{"head_dim": NaN}',
    "text_config_5": '{"text_config": 5}',
    "duplicate": '{"head_dim": 8, "rope_theta": 1e4, "rope_theta": 5e5}',
    "mrope_strings": '{"model_type": "qwen2_vl_text", "head_dim": 8, '
    '"rope_parameters": {"mrope_section": ["1", "1", "2"]}}',
    "mrope_fraction": '{"model_type": "qwen2_vl_text", "head_dim": 8, '
    '"rope_parameters": {"mrope_section": [1.5, 1, 1.5]}}',
    "bool_factor": '{"head_dim": 8, "rope_scaling": {"rope_type": "linear", "factor": true}}',
    "bool_head_dim": '{"head_dim": true}',
    "deep": "[" * 100_000 + "]" * 100_000,
}
MESSAGES = {
    "inf_head_dim": "config key head_dim must be an integer, got inf",
    "huge_head_dim": "config key head_dim must be an integer, got inf",
    "inf_max_position": "config key max_position_embeddings must be an integer, got inf",
    "huge_max_position": "config key max_position_embeddings must be an integer, got inf",
    "nan_head_dim": "config key head_dim must be an integer, got nan",
    "text_config_5": "config key text_config must be an object, got 5",
    "duplicate": "duplicate key 'rope_theta'",
    "mrope_strings": "mrope_section[0] must be an integer, got str",
    "mrope_fraction": "mrope_section[0] must be an integer, got float",
    "bool_factor": "config key factor must be a real number, got bool True",
    "bool_head_dim": "config key head_dim must be an integer, got a boolean",
    "deep": "nests JSON too deeply",
}


@pytest.mark.parametrize("command", ["describe", "golden"])
@pytest.mark.parametrize("name", sorted(HOSTILE_JSON))
def test_hostile_configs_fail_with_one_line_and_status_2(tmp_path, name, command):
    p = tmp_path / f"{name}.json"
    p.write_text(HOSTILE_JSON[name])
    extra = ["--positions", "4", "--out", tmp_path / "x.npz"] if command == "golden" else []
    res = _cli(command, p, *extra)
    assert res.returncode == 2, res.stderr
    assert res.stderr.count("\n") == 1 and res.stdout == "", res.stderr
    assert res.stderr.startswith(f"refimpl {command}: error: ")
    assert MESSAGES[name] in res.stderr
    assert not (tmp_path / "x.npz").exists()


def test_binary_and_non_utf8_files_are_named(tmp_path):
    for name, data in (
        ("w.bin", bytes(range(256)) * 8),
        ("l.json", '{"a": "\xe9"}'.encode("latin-1")),
    ):
        p = tmp_path / name
        p.write_bytes(data)
        res = _cli("describe", p)
        assert res.returncode == 2 and res.stderr.count("\n") == 1
        assert f"{p} is not UTF-8 text" in res.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["describe", "/no/such/config.json"], "no such file"),
        (["golden", "BAD", "--positions", "3", "--out", "x.npz"], "not valid JSON"),
        (["describe", "UNKNOWN"], "unknown rope_type 'foo'"),
        (["golden", "CFG", "--positions", "0", "--out", "x.npz"], "--positions must be positive"),
        (
            ["golden", "CFG", "--positions", str(2**40), "--out", "x.npz"],
            "--positions must be at most 2147483648",
        ),
        (["golden", "CFG", "--positions", "3", "--out", "x.npz", "--chunk", "0"], "--chunk must"),
        (["golden", "CFG", "--positions", "2**40", "--out", "x.npz"], "invalid int value"),
        (["golden", "CFG", "--out", "x.npz"], "the following arguments are required: --positions"),
        (["golden", "CFG", "--positions", "3", "--out", "/no/such/dir/x.npz"], "does not exist"),
        (["frobnicate"], "invalid choice"),
    ],
)
def test_errors_are_one_line_on_stderr(tmp_path, cfg_path, args, message):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    unknown = _write(
        tmp_path, "unknown.json", {"head_dim": 8, "rope_scaling": {"rope_type": "foo"}}
    )
    subst = {"BAD": str(bad), "UNKNOWN": str(unknown), "CFG": str(cfg_path)}
    args = [subst.get(a, a) for a in args]
    args = [str(tmp_path / a) if a == "x.npz" else a for a in args]
    res = _cli(*args)
    assert res.returncode == 2, res.stderr
    assert res.stderr.count("\n") == 1 and message in res.stderr, res.stderr
    assert not (tmp_path / "x.npz").exists()


def test_describe_writes_periodic_layer_patterns_compactly(tmp_path):
    cfg = {"model_type": "llama4_text", "head_dim": 8, "num_hidden_layers": 48}  # hand-made
    res = _cli("describe", _write(tmp_path, "l4.json", cfg), "--no-pairs")
    assert "A layers 0-46 except 3, 7, ..., 43 (full_attention)" in res.stdout
    assert "- layers 3, 7, ..., 47 (every 4th) (full_attention): no RoPE" in res.stdout


def test_golden_checks_the_free_space_before_writing(cfg_path, tmp_path, capsys, monkeypatch):
    import collections

    import refimpl.streaming

    usage = collections.namedtuple("usage", "total used free")
    monkeypatch.setattr(refimpl.streaming.shutil, "disk_usage", lambda _: usage(10, 10, 4096))
    out = tmp_path / "g.npz"
    assert main(["golden", str(cfg_path), "--positions", "100000", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "GiB free" in err
    assert not out.exists() and list(tmp_path.iterdir()) == [cfg_path]


def test_every_registered_command_has_a_parser():
    from refimpl.__main__ import COMMANDS, build_parser

    parser = build_parser()
    names = set(parser._subparsers._group_actions[0].choices)
    assert names == {"describe", "golden", "check", "engines", "conformance", "verify"}
    assert len(COMMANDS) == 5
    for command in ("engines", "conformance"):
        extra = ["--out", "/no/such/dir"] if command == "conformance" else []
        res = _cli(command, "/no/such/config.json", *extra)
        assert res.returncode == 2 and res.stderr.count("\n") == 1, res.stderr
        assert "no such file" in res.stderr
