"""`python -m refimpl describe|golden`: output, files, and one-line errors."""

import json
import subprocess
import sys
import tracemalloc

import numpy as np
import pytest

from refimpl.__main__ import main
from refimpl.config import rope_from_config

LLAMA3 = {
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


@pytest.fixture
def cfg_path(tmp_path):
    p = tmp_path / "config.json"
    p.write_text(json.dumps(LLAMA3))
    return p


def test_describe_prints_summary_and_pair_table(cfg_path, capsys):
    assert main(["describe", str(cfg_path)]) == 0
    out = capsys.readouterr().out
    assert "rope type         llama3" in out
    assert "rotary width      128 (64 pairs)" in out
    lines = [ln.split() for ln in out.splitlines() if ln[:4].strip().isdigit()]
    assert len(lines) == 64
    regimes = [ln[-1] for ln in lines]
    assert regimes[:29] == ["extrapolated"] * 29
    assert regimes[29:35] == ["ramped"] * 6 and regimes[35:] == ["interpolated"] * 29


@pytest.mark.parametrize("precision", ["float64", "transformers-float32"])
def test_golden_writes_tables_and_metadata(cfg_path, tmp_path, precision, capsys):
    out = tmp_path / "g.npz"
    args = ["golden", str(cfg_path), "--positions", "300", "--out", str(out)]
    assert main([*args, "--precision", precision]) == 0
    data = np.load(out)
    spec = rope_from_config(cfg_path)
    c, s = spec.cos_sin(np.arange(300), precision=precision)
    np.testing.assert_array_equal(data["cos"], c)
    np.testing.assert_array_equal(data["sin"], s)
    assert data["cos"].dtype == (np.float64 if precision == "float64" else np.float32)
    assert data["inv_freq"].shape == (64,)
    assert float(data["attention_scaling"]) == 1.0
    meta = json.loads(str(data["metadata"]))
    assert meta["precision"] == precision and meta["config"] == str(cfg_path)
    assert meta["rope_type"] == "llama3" and "refimpl_version" in meta


DYNAMIC_CFG = {
    "head_dim": 16,
    "max_position_embeddings": 100,
    "rope_parameters": {"rope_type": "dynamic", "rope_theta": 1e4, "factor": 2.0},
}


@pytest.fixture
def dynamic_config(tmp_path):
    """A dynamic-NTK config.json (original length 100) written to a temporary file."""
    p = tmp_path / "c.json"
    p.write_text(json.dumps(DYNAMIC_CFG))
    return p


def test_golden_dynamic_defaults_seq_len_to_positions(tmp_path, dynamic_config):
    p = dynamic_config
    out = tmp_path / "g.npz"
    assert main(["golden", str(p), "--positions", "400", "--out", str(out)]) == 0
    want = rope_from_config(DYNAMIC_CFG, seq_len=400).inv_freq
    np.testing.assert_array_equal(np.load(out)["inv_freq"], want)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["describe", "/no/such/config.json"], "no such file"),
        (["golden", "BAD", "--positions", "3", "--out", "x.npz"], "not valid JSON"),
        (["describe", "UNKNOWN"], "unknown rope_type 'foo'"),
        (["golden", "CFG", "--positions", "0", "--out", "x.npz"], "--positions must be positive"),
    ],
)
def test_errors_are_one_line_on_stderr(tmp_path, cfg_path, capsys, args, message):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    unknown = tmp_path / "unknown.json"
    unknown.write_text(json.dumps({"head_dim": 8, "rope_scaling": {"rope_type": "foo"}}))
    subst = {"BAD": str(bad), "UNKNOWN": str(unknown), "CFG": str(cfg_path)}
    args = [subst.get(a, a) for a in args]
    args = [str(tmp_path / a) if a == "x.npz" else a for a in args]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err


def test_module_entry_point_runs(cfg_path):
    res = subprocess.run(
        [sys.executable, "-m", "refimpl", "describe", str(cfg_path)],
        capture_output=True,
        text=True,
    )
    assert res.returncode == 0 and "llama3" in res.stdout
    res = subprocess.run(
        [sys.executable, "-m", "refimpl", "describe", "/nope.json"], capture_output=True, text=True
    )
    assert res.returncode == 2 and res.stderr.strip().startswith("refimpl describe: error:")


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
    cos, sin = spec.cos_sin(np.arange(n), precision=precision)  # the whole range at once
    inv = spec.inv_freq if precision == "float64" else spec.inv_freq_float32
    want = {"inv_freq": inv, "cos": cos, "sin": sin}
    with np.load(out) as z:
        assert z.files == ["positions", "attention_scaling", "metadata", "inv_freq", "cos", "sin"]
        assert np.array_equal(z["positions"], np.arange(n)) and z["positions"].dtype == np.int64
        for key in ("inv_freq", "cos", "sin"):
            assert z[key].dtype == want[key].dtype
            # bit for bit: compare the raw bytes, not only the values
            assert z[key].tobytes() == want[key].tobytes()
    quiet = tmp_path / "q.npz"
    q_args = ["golden", str(cfg_path), "--positions", str(n), "--out", str(quiet)]
    assert main([*q_args, "--precision", precision, "--chunk", "777", "--quiet"]) == 0
    assert capsys.readouterr().err == ""
    with np.load(quiet) as z:
        assert z["cos"].tobytes() == want["cos"].tobytes()


@pytest.mark.parametrize("precision", ["float64", "transformers-float32"])
def test_golden_memory_is_bounded_by_the_chunk(tmp_path, precision):
    cfg = tmp_path / "small.json"
    cfg.write_text(json.dumps({"head_dim": 32, "rope_theta": 1e4}))
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
        c, s = spec.cos_sin(np.arange(n - 3, n), precision=precision)
        assert np.array_equal(z["cos"][-3:], c) and np.array_equal(z["sin"][-3:], s)


def test_golden_chunk_must_be_positive(cfg_path, tmp_path, capsys):
    args = ["golden", str(cfg_path), "--positions", "3", "--out", str(tmp_path / "x.npz")]
    assert main([*args, "--chunk", "0"]) == 2
    assert "--chunk must be positive" in capsys.readouterr().err


def test_golden_refuses_positions_past_a_dynamic_seq_len_before_writing(
    tmp_path, capsys, dynamic_config
):
    p = dynamic_config
    out = tmp_path / "g.npz"
    args = ["golden", str(p), "--positions", "400", "--seq-len", "200", "--out", str(out)]
    assert main(args) == 2
    assert "positions reach 399" in capsys.readouterr().err
    assert not out.exists()
