"""The conformance suite: golden cases written for real and labelled configs in every dtype,
read back with the ``safetensors`` package, ``verify DIR DIR`` passing by construction, and
kernels with planted mistakes failing with the mistake named."""

from __future__ import annotations

import json
import pathlib

import numpy as np
import pytest

from refimpl import _cli_conformance
from refimpl.conformance import (
    PIPELINES,
    read_safetensors,
    verify_outputs,
    write_safetensors,
    write_suite,
)
from refimpl.rotary import apply_rope

CONFIGS = pathlib.Path(__file__).parent / "parity" / "configs"

# Hand-made (labelled): the rope fields of meta-llama/Meta-Llama-3.1-8B (rope_theta 5e5, llama3
# scaling factor 8, low/high frequency factors 1 and 4, original context 8192, 131072
# positions; /work/shared/reference/engines-and-families.md §2.1) with a head width of 64 so
# that the suite stays small.
LLAMA31 = {
    "model_type": "llama",
    "hidden_size": 512,
    "num_attention_heads": 8,
    "num_key_value_heads": 2,
    "head_dim": 64,
    "max_position_embeddings": 131072,
    "rope_theta": 500000.0,
    "rope_scaling": {
        "factor": 8.0,
        "low_freq_factor": 1.0,
        "high_freq_factor": 4.0,
        "original_max_position_embeddings": 8192,
        "rope_type": "llama3",
    },
}
# Released config (tests/parity/configs/SOURCES.md): openai/gpt-oss-20b (yarn, attention
# factor 1.35).
GPT_OSS = CONFIGS / "gpt-oss-20b.json"
# Hand-made (labelled in SOURCES.md): DeepSeek-V3's yarn rope fields on transformers' defaults.
DEEPSEEK_V3 = CONFIGS / "deepseek-v3.handmade.json"


@pytest.fixture(scope="module")
def suites(tmp_path_factory):
    """Suites for the Llama-3.1 rope fields in the three dtypes and for DeepSeek-V3 (float32)."""
    root = tmp_path_factory.mktemp("suites")
    made = {}
    for dtype in ("float32", "bfloat16", "float16"):
        made[("llama", dtype)] = root / f"llama-{dtype}"
        write_suite(LLAMA31, made[("llama", dtype)], dtype=dtype)
    made[("deepseek", "float32")] = root / "deepseek"
    write_suite(DEEPSEEK_V3, made[("deepseek", "float32")], dtype="float32")
    return made


def _manifest(folder):
    return json.loads((folder / "manifest.json").read_text())


def _input(arrays, entry, name):
    """A case's input tensor as float64, the strided view rebuilt from its buffer."""
    spec = entry["inputs"][name]
    if "buffer" not in spec:
        return arrays[name].astype(np.float64)
    buf = arrays[spec["buffer"]].astype(np.float64)
    return np.lib.stride_tricks.as_strided(
        buf[spec["offset"] :], shape=spec["shape"], strides=[s * 8 for s in spec["strides"]]
    )


def _positions(arrays, entry, shape):
    form = entry["position_form"]
    if form == "cu_seqlens":
        return np.broadcast_to(arrays["positions"][:, None], shape[:-1])
    if form == "offsets":
        return np.broadcast_to(arrays["position_ids"][:, None, :], shape[:-1])
    return np.broadcast_to(arrays["positions"], shape[:-1])


def _kernel(x, m, inv_freq, rope, *, pairing=None, sign=1.0, angle_dtype=np.float64, shift=0):
    """A kernel written from the manifest's formula, with optional planted mistakes."""
    lo, r = rope["rotary_offset"], rope["rotary_dim"]
    with np.errstate(over="ignore", invalid="ignore"):  # float16 angles overflow at 65504
        ang = (m.astype(angle_dtype)[..., None] + angle_dtype(shift)) * inv_freq.astype(angle_dtype)
        c = np.cos(ang.astype(np.float64)) * rope["attention_scaling"]
        s = sign * np.sin(ang.astype(np.float64)) * rope["attention_scaling"]
    h = r // 2
    if (pairing or rope["pairing"]) == "half":
        a, b = np.arange(h), np.arange(h, r)
    else:
        a, b = np.arange(0, r, 2), np.arange(1, r, 2)
    oa, ob = (np.arange(h), np.arange(h, r)) if rope["output_order"] == "half" else (a, b)
    y = np.array(x, dtype=np.float64)
    xs = x[..., lo : lo + r]
    y[..., lo + oa] = xs[..., a] * c - xs[..., b] * s
    y[..., lo + ob] = xs[..., a] * s + xs[..., b] * c
    return y


def _run(suite, out, fmt="safetensors", **mistake):
    """Write a results directory from ``_kernel`` (float32 outputs) and verify it."""
    out.mkdir()
    for entry in _manifest(suite)["cases"]:
        arrays, _ = read_safetensors(suite / entry["files"]["safetensors"])
        res = {}
        for t in ("q", "k"):
            x = _input(arrays, entry, t)
            m = _positions(arrays, entry, x.shape)
            res[f"{t}_out"] = _kernel(x, m, arrays["inv_freq"], entry["rope"], **mistake).astype(
                np.float32
            )
        if fmt == "safetensors":
            write_safetensors(out / entry["files"]["safetensors"], res)
        else:
            np.savez(out / entry["files"]["npz"], **res)
    return verify_outputs(suite, out)


# ---------------------------------------------------------------- the suite's files


def test_manifest_describes_every_case(suites):
    man = _manifest(suites[("llama", "float32")])
    names = [c["name"] for c in man["cases"]]
    assert names == ["prefill", "decode", "varlen", "long", "odd-heads", "strided", "probe"]
    assert man["format"] == "refimpl-conformance/1" and man["dtype"] == "float32"
    assert len(man["config_sha256"]) == 64 and man["refimpl_version"]
    assert "y[a_i] = x[a_i] c - x[b_i] t" in man["formula"]
    assert man["pipelines"] == list(PIPELINES)
    long = next(c for c in man["cases"] if c["name"] == "long")
    assert long["max_position"] == 131071  # up to the config's max_position_embeddings
    odd = next(c for c in man["cases"] if c["name"] == "odd-heads")
    assert odd["inputs"]["q"]["shape"][1] == 3 and odd["inputs"]["k"]["shape"][1] == 1
    strided = next(c for c in man["cases"] if c["name"] == "strided")
    assert set(strided["inputs"]["q"]) == {"buffer", "offset", "shape", "strides"}
    for entry in man["cases"]:
        assert (suites[("llama", "float32")] / entry["files"]["npz"]).is_file()
    assert not list(suites[("llama", "float32")].glob(".*tmp"))  # nothing half-written left


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16"])
def test_files_read_back_with_the_safetensors_package(suites, dtype):
    """The writer is the simple format itself: the safetensors package reads it, and the .npz
    holds the same arrays."""
    pytest.importorskip("safetensors")
    from safetensors import safe_open

    folder = suites[("llama", dtype)]
    entry = _manifest(folder)["cases"][0]
    ours, meta = read_safetensors(folder / entry["files"]["safetensors"])
    assert meta["case"] == "prefill"
    framework = "pt" if dtype == "bfloat16" else "np"  # NumPy has no bfloat16
    if framework == "pt":
        pytest.importorskip("torch")
    with safe_open(str(folder / entry["files"]["safetensors"]), framework=framework) as f:
        assert set(f.keys()) == set(ours)
        for key in f.keys():
            theirs = f.get_tensor(key)
            if framework == "pt":
                is_bf16 = str(theirs.dtype) == "torch.bfloat16"
                assert is_bf16 == (key in ("q", "k"))  # the inputs are stored as BF16
                theirs = (theirs.float() if is_bf16 else theirs).numpy()
            assert np.array_equal(np.asarray(theirs, dtype=ours[key].dtype), ours[key]), key
    with np.load(folder / entry["files"]["npz"]) as z:
        for key in ours:
            assert np.array_equal(z[key].astype(ours[key].dtype), ours[key]), key


def test_expected_outputs_are_the_reference_on_the_stored_inputs(suites):
    folder = suites[("deepseek", "float32")]
    for entry in _manifest(folder)["cases"]:
        arrays, _ = read_safetensors(folder / entry["files"]["safetensors"])
        for t in ("q", "k"):
            x = _input(arrays, entry, t)
            m = _positions(arrays, entry, x.shape)
            want = _kernel(x, m, arrays["inv_freq"], entry["rope"])
            assert np.allclose(arrays[f"{t}_out"], want, rtol=0, atol=1e-12), entry["name"]
            assert np.all(arrays[f"{t}_allowed_table_dtype"] > 0)


def test_bfloat16_inputs_are_bfloat16_values(suites):
    folder = suites[("llama", "bfloat16")]
    arrays, _ = read_safetensors(folder / "prefill.safetensors")
    bits = arrays["q"].astype(np.float32).view(np.uint32)
    assert np.all(bits & 0xFFFF == 0)  # exactly representable in bfloat16


# ---------------------------------------------------------------- the verifier


@pytest.mark.parametrize(
    "key", [("llama", "float32"), ("llama", "bfloat16"), ("deepseek", "float32")]
)
def test_verify_dir_dir_passes_by_construction(suites, key):
    report = verify_outputs(suites[key], suites[key])
    assert report.ok, str(report)
    assert all(c.pipeline == "table-dtype" for c in report.cases)
    assert report.diagnosis == []


def test_a_correct_float64_kernel_passes_and_float32_angles_are_their_own_class(suites, tmp_path):
    suite = suites[("llama", "float32")]
    good = _run(suite, tmp_path / "good")
    assert good.ok and {c.pipeline for c in good.cases} == {"table-dtype"}
    f32 = _run(suite, tmp_path / "f32", fmt="npz", angle_dtype=np.float32)
    assert f32.ok, str(f32)
    assert "float32-angles" in {c.pipeline for c in f32.cases}


@pytest.mark.parametrize(
    "mistake, named",
    [
        (dict(pairing="interleaved"), "pairing 'interleaved' instead of 'half'"),
        (dict(sign=-1.0), "rotation the other way"),
        (dict(shift=1), "positions shifted by +1"),
        (dict(angle_dtype=np.float16), "half-angles class only"),
    ],
)
def test_planted_mistakes_fail_and_are_named(suites, tmp_path, mistake, named):
    report = _run(suites[("llama", "float32")], tmp_path / "bad", **mistake)
    assert not report.ok
    assert any(named in line for line in report.diagnosis), str(report)
    worst = next(c for c in report.cases if not c.ok)
    assert worst.allowed < abs(worst.got - worst.expected)  # the reported element is out


def test_the_checker_reads_the_probe_rows(suites, tmp_path):
    """The diagnosis includes check_rope_arrays' findings on the probe case's data."""
    report = _run(suites[("llama", "float32")], tmp_path / "bad", sign=-1.0)
    checker = [d for d in report.diagnosis if d.startswith("probe: checker:")]
    assert any("the rotation goes the wrong way" in d for d in checker), str(report)


def test_missing_files_arrays_and_shapes_fail_the_case(suites, tmp_path):
    suite = suites[("llama", "float32")]
    (tmp_path / "r").mkdir()
    write_safetensors(tmp_path / "r" / "prefill.safetensors", {"q_out": np.zeros(3)})
    report = verify_outputs(suite, tmp_path / "r")
    by_name = {c.name: c for c in report.cases}
    assert "shape" in by_name["prefill"].message
    assert by_name["decode"].message == "no results file"
    assert not report.ok


def test_cli_exit_codes(suites, tmp_path, capsys):
    suite = str(suites[("llama", "float32")])
    assert _cli_conformance.main(["verify", suite, suite]) == 0
    assert "PASS: 7 of 7 cases pass" in capsys.readouterr().out
    (tmp_path / "empty").mkdir()
    assert _cli_conformance.main(["verify", suite, str(tmp_path / "empty")]) == 1
    capsys.readouterr()
    assert _cli_conformance.main(["verify", str(tmp_path), suite]) == 2
    assert "no manifest.json" in capsys.readouterr().err
    out = tmp_path / "cli"
    args = ["conformance", str(GPT_OSS), "--dtype", "float16", "--out", str(out)]
    assert _cli_conformance.main(args) == 0
    assert "cases" in capsys.readouterr().err  # progress on stderr
    man = _manifest(out)
    assert man["cases"][0]["rope"]["attention_scaling"] > 1.3  # yarn's factor in the tables
    assert verify_outputs(out, out).ok
    assert (
        _cli_conformance.main(["conformance", str(tmp_path / "nope.json"), "--out", str(out)]) == 2
    )


def test_length_dependent_methods_get_cases_on_both_sides_of_the_switch(tmp_path):
    """Hand-made (labelled) LongRoPE config: short factors up to the original length, long
    factors above it."""
    cfg = {
        "head_dim": 8,
        "hidden_size": 64,
        "num_attention_heads": 8,
        "max_position_embeddings": 8192,
        "rope_theta": 10000.0,
        "rope_scaling": {
            "rope_type": "longrope",
            "short_factor": [1.0, 1.1, 1.2, 1.3],
            "long_factor": [1.0, 2.0, 4.0, 8.0],
            "original_max_position_embeddings": 1024,
        },
    }
    man = write_suite(cfg, tmp_path / "s")
    names = [c["name"] for c in man["cases"]]
    assert "below-switch-prefill" in names and "above-switch-prefill" in names
    below = read_safetensors(tmp_path / "s" / "below-switch-prefill.safetensors")[0]["inv_freq"]
    above = read_safetensors(tmp_path / "s" / "above-switch-prefill.safetensors")[0]["inv_freq"]
    assert not np.array_equal(below, above)
    assert verify_outputs(tmp_path / "s", tmp_path / "s").ok


def test_partial_rotary_cases_copy_the_pass_through_features_exactly(tmp_path):
    """Hand-made (labelled) config: head 32, partial_rotary_factor 0.5 (16 features rotated)."""
    cfg = {
        "head_dim": 32,
        "hidden_size": 128,
        "num_attention_heads": 4,
        "partial_rotary_factor": 0.5,
        "rope_theta": 10000.0,
        "max_position_embeddings": 4096,
    }
    man = write_suite(cfg, tmp_path / "s")
    entry = man["cases"][0]
    assert entry["rope"]["rotary_dim"] == 16 and entry["rope"]["dim"] == 32
    arrays, _ = read_safetensors(tmp_path / "s" / entry["files"]["safetensors"])
    assert np.all(arrays["q_allowed_float32_angles"][..., 16:] == 0)
    assert np.array_equal(arrays["q_out"][..., 16:], arrays["q"][..., 16:])
    assert verify_outputs(tmp_path / "s", tmp_path / "s").ok


def test_every_distinct_layer_spec_gets_its_cases(tmp_path):
    """Released config (tests/parity/configs/SOURCES.md): google/gemma-3-1b-it, sliding layers
    (base 1e4) and full-attention layers (base 1e6, every sixth layer)."""
    man = write_suite(CONFIGS / "gemma3-1b-it.json", tmp_path / "s")
    by_prefix = {}
    for case in man["cases"]:
        by_prefix.setdefault(case["name"].split("-")[0], case)
    assert set(by_prefix) == {"layer0", "layer5"}
    assert by_prefix["layer0"]["rope"]["base"] != by_prefix["layer5"]["rope"]["base"]
    assert by_prefix["layer5"]["layers"][:2] == [5, 11]
    assert verify_outputs(tmp_path / "s", tmp_path / "s").ok


def test_write_suite_argument_errors(tmp_path):
    with pytest.raises(ValueError, match="dtype must be one of"):
        write_suite(LLAMA31, tmp_path, dtype="int8")
    with pytest.raises(ValueError, match=r"suite_dir .* has no manifest\.json"):
        verify_outputs(tmp_path, tmp_path)


def test_reader_refuses_a_truncated_file(tmp_path):
    p = tmp_path / "x.safetensors"
    p.write_bytes(b"\x01\x00")
    with pytest.raises(ValueError, match="not a safetensors file"):
        read_safetensors(p)
    write_safetensors(p, {"a": np.arange(3.0)})
    data, _ = read_safetensors(p)
    assert np.array_equal(data["a"], np.arange(3.0))
    assert np.array_equal(apply_rope(data["a"][None, :2], [0]), data["a"][None, :2])
