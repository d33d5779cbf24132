"""The conformance suite (format refimpl-conformance/2): suites written for real and labelled
configs, read back with the safetensors package; a NumPy kernel written from the Suite format
page (examples/numpy/rope_numpy.py) passes in every accepted table recipe and fails with its
planted mistake named; verdicts come before any diagnosis. Crafted files are in
test_conformance_hostile.py; the full planted-mistake table and the live engines run in
``make test-engines``."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import pathlib

import numpy as np
import pytest

from refimpl import ROPE_SCALINGS, _cli_conformance, apply_rope
from refimpl.config import rope_from_config, rope_schedule
from refimpl.conformance import (
    FORMAT,
    PIPELINES,
    SuiteFileError,
    _diagnose,
    accepted_classes,
    read_safetensors,
    verify_outputs,
    write_safetensors,
    write_suite,
)
from refimpl.conformance._cases import sweep_variants
from refimpl.conformance._write import Group, plan_specs, write_groups
from refimpl.pipelines import PIPELINE_CLASSES

ROOT = pathlib.Path(__file__).resolve().parents[1]
CONFIGS = ROOT / "tests" / "parity" / "configs"
KERNEL = ROOT / "examples" / "numpy" / "rope_numpy.py"

# Hand-made (labelled): the rope fields of meta-llama/Meta-Llama-3.1-8B (rope_theta 5e5, llama3
# scaling factor 8, low/high frequency factors 1 and 4, original context 8192, 131072
# positions; /work/shared/reference/engines-and-families.md §2.1) with a head width of 16.
LLAMA31 = {
    "model_type": "llama",
    "hidden_size": 64,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 16,
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
# Hand-made (labelled): Qwen2-VL's M-RoPE (blocked sections, rope_theta 1e6) at head width 16,
# sections [2, 3, 3] in the proportions of the released [16, 24, 24].
QWEN2VL = {
    "model_type": "qwen2_vl",
    "hidden_size": 64,
    "num_attention_heads": 4,
    "rope_theta": 1000000.0,
    "rope_scaling": {"type": "mrope", "mrope_section": [2, 3, 3]},
    "max_position_embeddings": 32768,
}
# Hand-made (labelled): Phi-2's partial rotary (partial_rotary_factor 0.4) at head width 20.
PARTIAL = {
    "model_type": "phi",
    "hidden_size": 80,
    "num_attention_heads": 4,
    "partial_rotary_factor": 0.4,
    "rope_theta": 10000.0,
    "max_position_embeddings": 2048,
}
# Released config (tests/parity/configs/SOURCES.md): openai/gpt-oss-20b (yarn, attention
# factor 1.35, truncate false). Hand-made (labelled there): DeepSeek-V3's yarn rope fields
# (interleaved pairs written in half order).
GPT_OSS = CONFIGS / "gpt-oss-20b.json"
# Hand-made (labelled): a LongRoPE config at head width 8.
LONGROPE = {
    "head_dim": 8, "hidden_size": 64, "num_attention_heads": 8,
    "max_position_embeddings": 8192, "rope_theta": 10000.0,
    "rope_scaling": {
        "rope_type": "longrope", "short_factor": [1.0, 1.1, 1.2, 1.3],
        "long_factor": [1.0, 2.0, 4.0, 8.0], "original_max_position_embeddings": 1024,
    },
}  # fmt: skip
DEEPSEEK_V3 = CONFIGS / "deepseek-v3.handmade.json"


def _kernel():
    spec = importlib.util.spec_from_file_location("rope_numpy", KERNEL)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


K = _kernel()


@pytest.fixture(scope="module")
def suites(tmp_path_factory):
    root = tmp_path_factory.mktemp("suites")
    made = {}
    for key, cfg, dtype in [
        ("llama", LLAMA31, "float32"),
        ("llama-bf16", LLAMA31, "bfloat16"),
        ("qwen2vl", QWEN2VL, "float32"),
        ("partial", PARTIAL, "float32"),
        ("deepseek", DEEPSEEK_V3, "float32"),
    ]:
        made[key] = root / key
        write_suite(cfg, made[key], dtype=dtype)
    return made


def _manifest(folder):
    return json.loads((folder / "manifest.json").read_text())


def _run(suite, out, **kw):
    K.run(suite, out, **kw)
    return verify_outputs(suite, out)


# ---------------------------------------------------------------- the suite's files


def test_suite_layout_format_2(suites):
    folder = suites["llama"]
    man = _manifest(folder)
    assert man["format"] == FORMAT == "refimpl-conformance/2" and man["dtype"] == "float32"
    names = [c["name"] for c in man["cases"]]
    assert names == [
        "prefill", "decode", "batch-ids", "varlen", "long", "odd-heads", "strided",
        "positions-int32", "flat", "qkv-packed", "in-place", "cos-sin-cache", "probe",
    ]  # fmt: skip
    assert man["pipelines"] == list(PIPELINE_CLASSES) == list(PIPELINES)
    assert man["accepted_pipelines"] == list(accepted_classes("float32"))
    assert "half-tables" not in man["accepted_pipelines"]
    listed = set(man["files"])
    on_disk = {str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()}
    assert on_disk == listed | {"manifest.json"}  # nothing else, nothing half-written
    assert all(len(h) == 64 for h in man["files"].values())
    prefill = man["cases"][0]
    assert prefill["files"]["inputs"]["safetensors"] == "inputs/prefill.safetensors"
    assert prefill["rope"]["params"]["factor"] == 8.0  # the scaling parameters travel
    inputs, meta = read_safetensors(folder / "inputs" / "prefill.safetensors")
    assert set(inputs) == {"q", "k", "positions", "inv_freq"}  # no expected outputs
    assert meta["position_form"] == "positions" and meta["outputs"] == "q_out:q,k_out:k"
    expected, _ = read_safetensors(folder / "expected" / "prefill.safetensors")
    assert set(expected) == {"q_out", "q_out_allowed", "k_out", "k_out_allowed", "inv_freq"}
    long = next(c for c in man["cases"] if c["name"] == "long")
    assert long["max_position"] == 131071
    pos = read_safetensors(folder / "inputs" / "long.safetensors")[0]["positions"]
    assert {65535, 65536, 65537} <= set(pos.tolist())  # the 2**16 boundary
    int32 = read_safetensors(folder / "inputs" / "positions-int32.safetensors")[0]
    assert int32["positions"].dtype == np.int32


def test_files_read_back_with_the_safetensors_package(suites):
    pytest.importorskip("safetensors")
    torch = pytest.importorskip("torch")
    from safetensors import safe_open

    path = suites["llama-bf16"] / "inputs" / "prefill.safetensors"
    ours, meta = read_safetensors(path)
    with safe_open(str(path), framework="pt") as f:
        assert set(f.keys()) == set(ours) and f.metadata() == meta
        q = f.get_tensor("q")
        assert q.dtype == torch.bfloat16
        assert np.array_equal(q.float().numpy(), ours["q"])
    with np.load(path.with_suffix(".npz")) as z:
        assert np.array_equal(z["q"], ours["q"])


def test_expected_outputs_are_the_reference_on_the_stored_inputs(suites):
    """Expected outputs equal the package's rotation of the stored inputs (a check that does
    not go through the suite's own layout code)."""
    folder = suites["deepseek"]
    spec = rope_from_config(DEEPSEEK_V3)
    x, _ = read_safetensors(folder / "inputs" / "prefill.safetensors")
    y, _ = read_safetensors(folder / "expected" / "prefill.safetensors")
    want = spec.apply(x["q"].astype(np.float64), x["positions"])
    assert np.allclose(y["q_out"], want, rtol=0, atol=1e-12)
    v, _ = read_safetensors(folder / "inputs" / "varlen.safetensors")
    e, _ = read_safetensors(folder / "expected" / "varlen.safetensors")
    want = apply_rope(
        v["k"].astype(np.float64),  # (T, H, D), flash-attention's varlen layout
        None,
        inv_freq=spec.inv_freq,
        pairing=spec.pairing,
        output_order=spec.output_order,
        cu_seqlens=v["cu_seqlens"],
        offsets=v["offsets"],
    )
    assert np.allclose(e["k_out"], want, rtol=0, atol=1e-11)  # float64 angles up to 2000


def test_m_rope_configs_get_multi_axis_cases(suites):
    man = _manifest(suites["qwen2vl"])
    case = next(c for c in man["cases"] if c["name"] == "mrope")
    ids = read_safetensors(suites["qwen2vl"] / "inputs" / "mrope.safetensors")[0]["position_ids"]
    assert case["position_form"] == "mrope" and ids.shape[0] == 3
    assert not np.array_equal(ids[1], ids[2]) and not np.array_equal(ids[0], ids[1])
    assert case["rope"]["mrope_section"] == [2, 3, 3]
    assert "cos-sin-cache" not in [c["name"] for c in man["cases"]]


# ---------------------------------------------------------------- accepted recipes


@pytest.mark.parametrize("recipe", [r for r in K.RECIPES if r != "half-tables"])
def test_every_accepted_float32_recipe_passes_the_float32_suite(suites, tmp_path, recipe):
    report = _run(suites["llama"], tmp_path / "r", recipe=recipe)
    assert report.ok, str(report)
    assert PIPELINE_CLASSES[report.pipeline].accepted_for("float32")


def test_half_tables_pass_in_bfloat16_and_fail_in_float32(suites, tmp_path):
    ok = _run(suites["llama-bf16"], tmp_path / "bf16", recipe="half-tables")
    assert ok.ok, str(ok)
    bad = _run(suites["llama"], tmp_path / "f32", recipe="float32-pow", mistake="bfloat16-tables")
    assert not bad.ok
    failing = [c for c in bad.cases if not c.ok]
    assert {c.pipeline for c in failing} == {"bfloat16-tables"}, str(bad)
    assert all("meets only bfloat16-tables" in c.message for c in failing)
    # the checker, run on the probe case's basis vectors, names the same stage (its coupling
    # floor once read every pair of a bfloat16-table rotation as rounding noise: "identity")
    text = "\n".join(bad.diagnosis)
    assert "bfloat16 tables" in text and "rotates no feature" not in text, text
    assert "pipeline class bfloat16-tables (not accepted for float32 inputs)" in text, text


def test_frequencies_computed_mode_hands_over_no_inv_freq(tmp_path):
    man = write_suite(LLAMA31, tmp_path / "s", frequencies="computed")
    inputs, meta = read_safetensors(tmp_path / "s" / "inputs" / "decode.safetensors")
    assert "inv_freq" not in inputs and json.loads(meta["scaling"])["factor"] == 8.0
    assert man["frequencies"] == "computed"
    assert _run(tmp_path / "s", tmp_path / "r", recipe="float32-pow").ok


# ---------------------------------------------------------------- planted mistakes


@pytest.mark.parametrize(
    ("suite", "mistake", "named"),
    [
        ("llama", "sign", "probe (q_out): checker: the rotation goes the wrong way"),
        ("llama", "varlen-no-restart", "varlen: the results match positions not restarted"),
        ("llama", "gqa-heads", ": the results match query heads 2..3 left unrotated"),
        ("llama", "strides-ignored", "strided: the results match strides ignored"),
        (
            "llama",
            "wrap-16",
            "long, positions-int32, probe: the results match positions held in 16 bits",
        ),
        ("llama", "decode-offsets-ignored", "decode: the results match offsets ignored"),
        ("llama", "qkv-v-rotated", "the v heads of the packed qkv rotated too"),
        ("qwen2vl", "mrope-swapped", "mrope: the results match the M-RoPE sections swapped"),
        ("qwen2vl", "mrope-1d", "mrope: the results match M-RoPE collapsed to 1-D"),
        ("partial", "sign", "probe (q_out): checker: the rotation goes the wrong way"),
    ],
)
def test_planted_mistakes_fail_with_the_cause_named(suites, tmp_path, suite, mistake, named):
    report = _run(suites[suite], tmp_path / "r", recipe="float32-angles", mistake=mistake)
    assert not report.ok
    assert any(named in d for d in report.diagnosis), "\n".join(report.diagnosis)
    worst = next(c for c in report.cases if not c.ok)
    assert worst.allowed < worst.err  # the reported element is out


def test_failing_partial_rotary_and_nan_kernels_keep_their_verdict(suites, tmp_path):
    """Partial rotary (Phi-2's 0.4) with float16 angles: NaN above 65504 and a wrong precision
    elsewhere; every case has a verdict and the diagnosis says what it can in lines."""
    report = _run(suites["partial"], tmp_path / "r", mistake="float16-angles")
    assert not report.ok and len(report.cases) == len(_manifest(suites["partial"])["cases"])
    assert all(isinstance(d, str) and "\n" not in d for d in report.diagnosis)
    report = _run(suites["partial"], tmp_path / "p", mistake="pairing")
    assert any("checker: fn pairs features interleaved" in d for d in report.diagnosis)


def test_a_crashing_diagnosis_says_so_in_one_line(suites, tmp_path, monkeypatch):
    def boom(*a, **k):
        raise RuntimeError("stage failed")

    monkeypatch.setattr(_diagnose, "_case_lines", boom)
    monkeypatch.setattr(_diagnose, "_checker_lines", boom)
    report = _run(suites["llama"], tmp_path / "r", mistake="varlen-no-restart")
    assert [c.name for c in report.cases if not c.ok] == ["varlen"]
    assert report.diagnosis == ["varlen: the diagnosis could not run (RuntimeError: stage failed)"]


def test_no_finding_about_a_correct_part(suites, tmp_path):
    """With the spec as the expectation, DeepSeek's half-order output is not reported as a
    permutation and Llama 3.1's correct base is not questioned."""
    deep = _run(suites["deepseek"], tmp_path / "d", mistake="sign")
    text = "\n".join(deep.diagnosis)
    assert "wrong way" in text and "permut" not in text and "order" not in text
    llama = _run(suites["llama"], tmp_path / "l", mistake="sign")
    assert "base 10000" not in "\n".join(llama.diagnosis)


# ---------------------------------------------------------------- verify's interface


def test_cli_prints_verdicts_before_the_diagnosis_and_json(suites, tmp_path, capsys):
    suite = str(suites["llama"])
    K.run(suites["llama"], tmp_path / "bad", mistake="varlen-no-restart")
    assert _cli_conformance.main(["verify", suite, str(tmp_path / "bad")]) == 1
    out = capsys.readouterr().out.splitlines()
    first_diag = next(i for i, line in enumerate(out) if line.startswith("diagnosis:"))
    assert sum(line.lstrip().startswith(("PASS", "FAIL")) for line in out[:first_diag]) == 14
    assert _cli_conformance.main(["verify", "--json", suite, str(tmp_path / "bad")]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["ok"] is False and data["exit_code"] == 1 and len(data["cases"]) == 13
    varlen = next(c for c in data["cases"] if c["name"] == "varlen")
    assert varlen["err"] > varlen["allowed"] > 0 and varlen["pipeline"] == ""
    K.run(suites["llama"], tmp_path / "good")
    assert _cli_conformance.main(["verify", "--json", suite, str(tmp_path / "good")]) == 0
    # float64 tables everywhere but the float32 cos_sin_cache case
    assert json.loads(capsys.readouterr().out)["pipeline"] == "float32-angles"


def test_cli_help_names_defaults_and_exit_codes(capsys):
    with pytest.raises(SystemExit):
        _cli_conformance.main(["verify", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "exit status: 0 every case passes, 1 a case fails, 2 usage error" in text
    with pytest.raises(SystemExit):
        _cli_conformance.main(["conformance", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "(default: float32)" in text and "(default: given)" in text


def test_results_file_problems_fail_the_case_not_the_run(suites, tmp_path):
    folder = suites["llama"]
    (tmp_path / "r").mkdir()
    write_safetensors(tmp_path / "r" / "prefill.safetensors", {"q_out": np.zeros(3)})
    q = np.zeros((6, 4, 1, 16), np.float32)
    write_safetensors(
        tmp_path / "r" / "decode.safetensors", {"q_out": q.transpose(0, 2, 1, 3), "k_out": q}
    )
    report = verify_outputs(folder, tmp_path / "r", diagnose=False)
    by = {c.name: c for c in report.cases}
    assert "q_out has shape (3,), expected (1, 4, 64, 16)" == by["prefill"].message
    assert "the same axes in another order" in by["decode"].message
    assert by["varlen"].message == "no results file" and not report.ok


# ---------------------------------------------------------------- what the suite covers


def test_length_dependent_methods_get_cases_on_both_sides_of_the_switch(tmp_path):
    """Hand-made (labelled) LongRoPE config: short factors up to the original length, long
    factors above it."""
    man = write_suite(LONGROPE, tmp_path / "s")
    names = [c["name"] for c in man["cases"]]
    assert "below-switch-prefill" in names and "above-switch-probe" in names
    below = read_safetensors(tmp_path / "s" / "inputs" / "below-switch-prefill.safetensors")
    above = read_safetensors(tmp_path / "s" / "inputs" / "above-switch-prefill.safetensors")
    assert not np.array_equal(below[0]["inv_freq"], above[0]["inv_freq"])
    assert _run(tmp_path / "s", tmp_path / "r").ok


def test_the_other_side_of_a_length_switch_is_named(tmp_path):
    write_suite(LONGROPE, tmp_path / "s")
    report = _run(tmp_path / "s", tmp_path / "r", mistake="always-long-factors")
    failing = {c.name for c in report.cases if not c.ok}
    assert failing and all(n.startswith("below-switch-") for n in failing)
    assert any(
        "the results match the frequencies of the above side of the length switch" in d
        for d in report.diagnosis
    ), "\n".join(report.diagnosis)


def test_every_distinct_layer_spec_gets_its_cases():
    """Released config (tests/parity/configs/SOURCES.md): google/gemma-3-1b-it, sliding layers
    (base 1e4) and full-attention layers (base 1e6, every sixth layer)."""
    cfg = CONFIGS / "gemma3-1b-it.json"
    groups = plan_specs(lambda seq_len: rope_schedule(cfg, seq_len=seq_len))
    assert [g.prefix for g in groups] == ["layer0-", "layer5-"]
    assert groups[0].spec.base != groups[1].spec.base and groups[1].layers[:2] == [5, 11]


@dataclasses.dataclass(frozen=True)
class _Layer:
    """A hand-built schedule layer with an MLA indexer (the field the families work adds)."""

    index: int
    layer_type: str
    spec: object
    query_scaling: object = None
    indexer: object = None


def test_an_mla_indexer_spec_gets_its_own_cases(tmp_path):
    main = rope_from_config(DEEPSEEK_V3)
    indexer = rope_from_config({"head_dim": 8, "rope_theta": 10000.0})
    layers = [_Layer(i, "full_attention", main, None, indexer) for i in range(3)]
    groups = plan_specs(lambda seq_len: layers)
    assert [(g.prefix, g.role, g.layers) for g in groups] == [
        ("", "layers", [0, 1, 2]),
        ("indexer0-", "indexer", [0, 1, 2]),
    ]
    man = write_groups(
        tmp_path / "s", groups, dtype="float32", seed=0, progress=None, frequencies="given",
        sweep=False, source="<hand-built>", config_sha256="0" * 64,
    )  # fmt: skip
    idx = [c for c in man["cases"] if c["name"].startswith("indexer0-")]
    assert idx and all(c["rope"]["dim"] == 8 and c["role"] == "indexer" for c in idx)


def test_a_layer_feature_the_suite_cannot_express_is_refused_by_name():
    @dataclasses.dataclass(frozen=True)
    class Layer(_Layer):
        dual_chunk: object = None

    spec = rope_from_config({"head_dim": 8})
    with pytest.raises(ValueError, match=r"cannot express \['dual_chunk'\]"):
        plan_specs(lambda seq_len: [Layer(0, "full_attention", spec, dual_chunk="dca")])
    assert isinstance(Group("", spec, 16, [0]).spec, type(spec))


def test_sweep_is_behind_its_flag():
    spec = rope_from_config(PARTIAL)
    variants, skipped = sweep_variants(spec, ROPE_SCALINGS)
    names = [name for name, _ in variants]
    assert names[0] == "pairing-interleaved" and "d64-r32" in names and not skipped
    assert all(v.rotary_dim <= v.dim for _, v in variants)
    longrope = rope_from_config(LONGROPE, seq_len=2048)
    assert (
        "per-pair parameters ['short_factor', 'long_factor']"
        in sweep_variants(longrope, ROPE_SCALINGS)[1][0]
    )


def test_write_suite_and_verify_argument_errors(tmp_path):
    with pytest.raises(ValueError, match="dtype must be one of"):
        write_suite(LLAMA31, tmp_path / "a", dtype="int8")
    with pytest.raises(ValueError, match="frequencies must be one of"):
        write_suite(LLAMA31, tmp_path / "a", frequencies="guess")
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "notes.txt").write_text("mine")
    with pytest.raises(ValueError, match=r"holds \['notes.txt'\], which are not a suite's"):
        write_suite(LLAMA31, tmp_path / "b")
    with pytest.raises(SuiteFileError, match=r"no manifest\.json"):
        verify_outputs(tmp_path / "b", tmp_path)
