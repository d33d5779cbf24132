"""The examples run: the C++17 kernel (compiled with the machine's g++) passes a conformance
suite and its planted bug is failed and named; the torch kernel-style function passes
check_rope and the verifier."""

from __future__ import annotations

import importlib.util
import json
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
# Hand-made (labelled): partial rotary (24 of 32 features), so that the kernels' pass-through
# branch runs too.
INTERLEAVED = {
    "head_dim": 32,
    "hidden_size": 128,
    "num_attention_heads": 4,
    "partial_rotary_factor": 0.75,
    "rope_theta": 10000.0,
    "max_position_embeddings": 70000,
}


# Hand-made (labelled): the rope fields of meta-llama/Meta-Llama-3.1-8B (llama3 scaling, theta
# 5e5, factor 8, low/high 1/4, original 8192, 131072 positions) with a head width of 64.
LLAMA31 = {
    "head_dim": 64,
    "hidden_size": 512,
    "num_attention_heads": 8,
    "max_position_embeddings": 131072,
    "rope_theta": 500000.0,
    "rope_scaling": {
        "rope_type": "llama3",
        "factor": 8.0,
        "low_freq_factor": 1.0,
        "high_freq_factor": 4.0,
        "original_max_position_embeddings": 8192,
    },
}
# Hand-made (labelled in tests/parity/configs/SOURCES.md): DeepSeek-V3's yarn rope fields.
DEEPSEEK_V3 = ROOT / "tests" / "parity" / "configs" / "deepseek-v3.handmade.json"
MODELS = {"gpt-oss-20b": GPT_OSS, "llama-3.1": LLAMA31, "deepseek-v3": DEEPSEEK_V3}
# Hand-made (labelled): Qwen2-VL's M-RoPE at head width 16, sections [2, 3, 3].
QWEN2VL = {
    "model_type": "qwen2_vl",
    "hidden_size": 64,
    "num_attention_heads": 4,
    "rope_theta": 1000000.0,
    "rope_scaling": {"type": "mrope", "mrope_section": [2, 3, 3]},
    "max_position_embeddings": 32768,
}


@pytest.fixture(scope="module", params=sorted(MODELS))
def suite(request, tmp_path_factory):
    folder = tmp_path_factory.mktemp(request.param)
    write_suite(MODELS[request.param], folder, dtype="bfloat16")
    return folder


def _compile(folder, *flags):
    gxx = shutil.which("g++")
    if gxx is None:
        pytest.skip("no g++ on this machine: the C++ example is not compiled")
    exe = folder / ("rope_conformance" + "".join(f.strip("-").lower() for f in flags))
    subprocess.run(
        [gxx, "-std=c++17", "-O2", "-Wall", "-Werror", *flags, "-o", str(exe), str(CPP)],
        check=True,
        capture_output=True,
        text=True,
    )
    return exe


@pytest.fixture(scope="module")
def good_exe(tmp_path_factory):
    return _compile(tmp_path_factory.mktemp("bin"))


@pytest.fixture(scope="module")
def bug_exe(tmp_path_factory):
    return _compile(tmp_path_factory.mktemp("bin"), "-DPLANTED_BUG")


def _verify_cli(suite, results):
    return subprocess.run(
        [sys.executable, "-m", "refimpl._cli_conformance", "verify", str(suite), str(results)],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )


def test_cpp_example_passes_the_suite(suite, good_exe, tmp_path):
    subprocess.run(
        [str(good_exe), str(suite), str(tmp_path / "out")], check=True, capture_output=True
    )
    report = verify_outputs(suite, tmp_path / "out")
    assert report.ok, str(report)
    done = _verify_cli(suite, tmp_path / "out")
    assert done.returncode == 0, done.stdout + done.stderr
    n = len(json.loads((suite / "manifest.json").read_text())["cases"])
    assert f"PASS: {n} of {n} cases pass" in done.stdout


def test_cpp_planted_bug_is_failed_and_named(suite, bug_exe, tmp_path):
    subprocess.run(
        [str(bug_exe), str(suite), str(tmp_path / "bug")], check=True, capture_output=True
    )
    report = verify_outputs(suite, tmp_path / "bug")
    assert not report.ok and all(not c.ok for c in report.cases)
    actual = json.loads((suite / "manifest.json").read_text())["cases"][0]["rope"]["pairing"]
    other = {"half": "interleaved", "interleaved": "half"}[actual]
    named = f"checker: fn pairs features {other}"
    assert any(named in d for d in report.diagnosis), str(report)
    done = _verify_cli(suite, tmp_path / "bug")
    assert done.returncode == 1
    lines = done.stdout.splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("diagnosis:"))
    assert all("FAIL" in line for line in lines[: first - 1])  # every verdict, then the cause
    assert any(named in line for line in lines[first:])


def test_cpp_example_on_partial_rotary(good_exe, bug_exe, tmp_path):
    """Partial rotary with the planted bug: every case fails, none crashes the verifier."""
    write_suite(INTERLEAVED, tmp_path / "s", dtype="float16")
    subprocess.run(
        [str(good_exe), str(tmp_path / "s"), str(tmp_path / "o")], check=True, capture_output=True
    )
    assert verify_outputs(tmp_path / "s", tmp_path / "o").ok
    subprocess.run(
        [str(bug_exe), str(tmp_path / "s"), str(tmp_path / "b")], check=True, capture_output=True
    )
    bad = verify_outputs(tmp_path / "s", tmp_path / "b")
    assert not bad.ok and len(bad.cases) == len(bad.cases) > 0
    assert any("checker: fn pairs features interleaved" in d for d in bad.diagnosis), str(bad)


def test_cpp_example_on_m_rope_position_ids(good_exe, bug_exe, tmp_path):
    write_suite(QWEN2VL, tmp_path / "s", dtype="bfloat16")
    subprocess.run(
        [str(good_exe), str(tmp_path / "s"), str(tmp_path / "o")], check=True, capture_output=True
    )
    report = verify_outputs(tmp_path / "s", tmp_path / "o")
    assert report.ok and "mrope" in [c.name for c in report.cases], str(report)
    subprocess.run(
        [str(bug_exe), str(tmp_path / "s"), str(tmp_path / "b")], check=True, capture_output=True
    )
    assert not verify_outputs(tmp_path / "s", tmp_path / "b").ok


def _torch_example():
    pytest.importorskip("torch")
    spec = importlib.util.spec_from_file_location("rope_torch", TORCH_EXAMPLE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_torch_example_passes_check_rope_and_verify(tmp_path):
    ex = _torch_example()
    theta = 10000.0 ** (-np.arange(32) / 32)
    cache = ex.cos_sin_cache(theta, 4096)
    report = check_rope(ex.as_check_fn(cache, rotary_dim=64), dim=64, base=10000.0, pairing="half")
    assert report.ok, str(report)
    suite = tmp_path / "suite"
    write_suite(DEEPSEEK_V3, suite, dtype="bfloat16")  # interleaved pairs in, half order out
    n = ex.write_results(suite, tmp_path / "torch")
    assert n == len(json.loads((suite / "manifest.json").read_text())["cases"])
    result = verify_outputs(suite, tmp_path / "torch")
    assert result.ok, str(result)
    assert {c.pipeline for c in result.cases} <= {"float64-tables", "float32-angles"}


def test_torch_example_with_the_wrong_pairing_is_diagnosed(tmp_path):
    ex = _torch_example()
    cache = ex.cos_sin_cache(10000.0 ** (-np.arange(16) / 16), 4096)
    report = check_rope(
        ex.as_check_fn(cache, 32, is_neox=False), dim=32, base=10000.0, pairing="half"
    )
    assert not report.ok
    assert report.pairing == "interleaved"
