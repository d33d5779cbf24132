"""The examples run: the C++17 kernel (compiled with the machine's g++) passes a conformance
suite and its planted bug is failed and named; the torch kernel-style function passes
check_rope and the verifier."""

from __future__ import annotations

import importlib.util
import pathlib
import shutil
import subprocess
import sys

import numpy as np
import pytest

from refimpl.check import check_rope
from refimpl.conformance import verify_outputs, write_suite

ROOT = pathlib.Path(__file__).resolve().parents[1]
CPP = ROOT / "examples" / "cpp" / "rope_conformance.cpp"
TORCH_EXAMPLE = ROOT / "examples" / "torch" / "rope_torch.py"
# Released config (tests/parity/configs/SOURCES.md): openai/gpt-oss-20b (yarn, attention
# factor 1.35, half pairing, 131072 positions).
GPT_OSS = ROOT / "tests" / "parity" / "configs" / "gpt-oss-20b.json"
# Hand-made (labelled): interleaved pairs and partial rotary (24 of 32 features), so that the
# kernels' other branches run too.
INTERLEAVED = {
    "head_dim": 32,
    "hidden_size": 128,
    "num_attention_heads": 4,
    "partial_rotary_factor": 0.75,
    "rope_theta": 10000.0,
    "max_position_embeddings": 70000,
}


@pytest.fixture(scope="module")
def suite(tmp_path_factory):
    folder = tmp_path_factory.mktemp("suite")
    write_suite(GPT_OSS, folder, dtype="bfloat16")
    return folder


def _compile(tmp_path, *flags):
    gxx = shutil.which("g++")
    if gxx is None:
        pytest.skip("no g++ on this machine: the C++ example is not compiled")
    exe = tmp_path / ("rope_conformance" + "".join(f.strip("-").lower() for f in flags))
    subprocess.run(
        [gxx, "-std=c++17", "-O2", "-Wall", "-Werror", *flags, "-o", str(exe), str(CPP)],
        check=True,
        capture_output=True,
        text=True,
    )
    return exe


def _verify_cli(suite, results):
    return subprocess.run(
        [sys.executable, "-m", "refimpl._cli_conformance", "verify", str(suite), str(results)],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )


def test_cpp_example_passes_the_suite(suite, tmp_path):
    exe = _compile(tmp_path)
    subprocess.run([str(exe), str(suite), str(tmp_path / "out")], check=True, capture_output=True)
    report = verify_outputs(suite, tmp_path / "out")
    assert report.ok, str(report)
    done = _verify_cli(suite, tmp_path / "out")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "PASS: 7 of 7 cases pass" in done.stdout


def test_cpp_planted_bug_is_failed_and_named(suite, tmp_path):
    exe = _compile(tmp_path, "-DPLANTED_BUG")
    subprocess.run([str(exe), str(suite), str(tmp_path / "bug")], check=True, capture_output=True)
    report = verify_outputs(suite, tmp_path / "bug")
    assert not report.ok
    assert any("pairing 'interleaved' instead of 'half'" in d for d in report.diagnosis), str(
        report
    )
    done = _verify_cli(suite, tmp_path / "bug")
    assert done.returncode == 1
    assert "diagnosis: probe: the results match pairing 'interleaved'" in done.stdout


def test_cpp_example_on_interleaved_partial_rotary(tmp_path):
    write_suite(INTERLEAVED, tmp_path / "s", dtype="float16")
    exe = _compile(tmp_path)
    subprocess.run(
        [str(exe), str(tmp_path / "s"), str(tmp_path / "o")], check=True, capture_output=True
    )
    assert verify_outputs(tmp_path / "s", tmp_path / "o").ok


def _torch_example():
    pytest.importorskip("torch")
    spec = importlib.util.spec_from_file_location("rope_torch", TORCH_EXAMPLE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_torch_example_passes_check_rope_and_verify(suite, tmp_path):
    ex = _torch_example()
    theta = 10000.0 ** (-np.arange(32) / 32)
    cache = ex.cos_sin_cache(theta, 4096)
    report = check_rope(ex.as_check_fn(cache, rotary_dim=64), dim=64, base=10000.0, pairing="half")
    assert report.ok, str(report)
    assert ex.write_results(suite, tmp_path / "torch") == 7
    result = verify_outputs(suite, tmp_path / "torch")
    assert result.ok, str(result)
    assert {c.pipeline for c in result.cases} <= {"table-dtype", "float32-angles"}


def test_torch_example_with_the_wrong_pairing_is_diagnosed(tmp_path):
    ex = _torch_example()
    cache = ex.cos_sin_cache(10000.0 ** (-np.arange(16) / 16), 4096)
    report = check_rope(
        ex.as_check_fn(cache, 32, is_neox=False), dim=32, base=10000.0, pairing="half"
    )
    assert not report.ok
    assert report.pairing == "interleaved"
