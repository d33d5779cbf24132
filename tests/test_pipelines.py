"""The precision registry (refimpl.pipelines): every name through RopeSpec.cos_sin/apply, the
engine pipelines equal to the engines' functions with the arguments each engine derives from
a released config, bad names and specs an engine cannot run refused by name."""

import dataclasses
import glob
import json
import math
import os

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from refimpl import check_rope, rope_from_config
from refimpl._pipeline_classes import HALF_FORMATS, STAGES
from refimpl.check import PRECISIONS as CHECK_CLASSES
from refimpl.check import TABLE_PRECISION_CLASSES
from refimpl.config import PRECISIONS as SPEC_PRECISIONS
from refimpl.engines import ENGINE_PRECISIONS, ggml_cos_sin, mlx_cos_sin, vllm_cos_sin
from refimpl.gguf import GgufRope, _full_and_local, gguf_rope_metadata, llamacpp_rope_parameters
from refimpl.numerics import (
    PIPELINES,
    RENAMED_PIPELINES,
    error_bound,
    pipeline_cos_sin,
    round_to,
)
from refimpl.pipelines import (
    PIPELINE_CLASSES,
    PRECISIONS,
    accepted_classes,
    pipeline_class_for_stage,
)

F = np.float32
HERE = os.path.dirname(__file__)
# Released configs (copied from the models' files; sources in each folder's SOURCES.md).
RELEASED = sorted(
    f
    for f in glob.glob(os.path.join(HERE, "parity", "configs", "*.json"))
    + glob.glob(os.path.join(HERE, "engines", "configs", "*.json"))
    if ".handmade." not in f and ".transformers-defaults." not in f
)
NAMES = (
    "float64",
    "transformers-float32",
    "ggml-float32",
    "mlx-float32",
    "vllm-float32",
    "vllm-bfloat16",
    "vllm-float16",
)


def _full_spec(path):
    try:
        return _full_and_local(path)[0]
    except ValueError as exc:  # a config another part of the package refuses
        pytest.skip(f"{os.path.basename(path)}: {exc}")


def _positions(spec, n=4096):
    limit = spec._position_limit() or 2**20
    return np.unique(np.concatenate([np.arange(64), np.linspace(0, limit - 1, n)])).astype(int)


def _text(path):
    with open(path) as fh:
        cfg = json.load(fh)
    return cfg.get("text_config") if isinstance(cfg.get("text_config"), dict) else cfg


def test_one_registry_of_names():
    assert tuple(PRECISIONS) == NAMES == SPEC_PRECISIONS
    assert set(ENGINE_PRECISIONS) == set(NAMES) - {"float64", "transformers-float32"}
    for name, rec in PRECISIONS.items():
        assert rec.name == name and rec.dtype in ("float64", "float32", "bfloat16", "float16")
        assert rec.description and callable(rec.tables)
    # every registry name maps to a class the checker reports
    assert set(TABLE_PRECISION_CLASSES) == set(NAMES)
    assert set(TABLE_PRECISION_CLASSES.values()) <= set(CHECK_CLASSES)
    # numerics' named pipelines are a view of the pipeline classes (plus the reference)
    views = set(PIPELINE_CLASSES) - {"half-tables"}
    assert set(PIPELINES) == {"accurate"} | views


@pytest.mark.parametrize("path", RELEASED, ids=os.path.basename)
def test_ggml_precision_is_ggml_with_llamacpps_arguments(path):
    spec = _full_spec(path)
    try:
        meta = gguf_rope_metadata(path)
    except ValueError as exc:
        pytest.skip(f"no llama.cpp mapping of this config in refimpl.gguf: {exc}")
    keys = {**meta["keys"], f"{meta['arch']}.attention.key_length": spec.dim}
    args = llamacpp_rope_parameters(GgufRope("<converted>", meta["arch"], keys, meta["tensors"]))
    pos = _positions(spec)
    c, s = spec.cos_sin(pos, precision="ggml-float32")
    c2, s2 = ggml_cos_sin(pos, **args)
    np.testing.assert_array_equal(c, c2)
    np.testing.assert_array_equal(s, s2)
    assert c.dtype == np.float32


def _mlx_args(text, spec):
    """mlx-lm's initialize_rope read off the config itself (default, linear, llama3, yarn)."""
    rope = text.get("rope_parameters") or text.get("rope_scaling") or {}
    rope = rope.get("full_attention", rope)  # per-layer-type parameters (Gemma 3)
    kind = rope.get("rope_type", rope.get("type", "default"))
    dims, base = spec.rotary_dim, spec.base  # the base, family defaults included
    if kind in ("default", "linear"):
        return {
            "dims": dims,
            "base": base,
            "scale": 1 / rope["factor"] if kind == "linear" else 1,
        }, 1
    if kind == "llama3":
        return {"dims": dims, "freqs": (1 / spec.inv_freq).astype(F)}, 1
    if kind == "yarn":
        f = rope["factor"]
        m, m_all = rope.get("mscale", 1), rope.get("mscale_all_dim", 0)
        g = lambda s, mm: 1.0 if s <= 1 else 0.1 * mm * math.log(s) + 1.0  # noqa: E731
        return None, g(f, m) / g(f, m_all)
    return None, None


@pytest.mark.parametrize("path", RELEASED, ids=os.path.basename)
def test_mlx_precision_is_mlx_with_mlx_lms_arguments(path):
    spec = _full_spec(path)
    text = _text(path)
    pos = _positions(spec)
    try:
        c, s = spec.cos_sin(pos, precision="mlx-float32")
    except ValueError as exc:
        assert "mlx-float32" in str(exc)
        return
    kw, scale = _mlx_args(text, spec)
    if kw is not None:
        c2, s2 = mlx_cos_sin(pos, **kw)
        np.testing.assert_array_equal(c, c2 * F(scale))
        np.testing.assert_array_equal(s, s2 * F(scale))
    if scale is not None:  # YaRN: mlx-lm's magnitude, attention_factor not read
        assert float(c[0, 0]) == float(F(scale))


@pytest.mark.parametrize("path", RELEASED, ids=os.path.basename)
@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16"])
def test_vllm_precisions_are_vllms_cache_cast_to_the_model_dtype(path, dtype):
    spec = _full_spec(path)
    pos = _positions(spec)
    try:
        c, s = spec.cos_sin(pos, precision=f"vllm-{dtype}")
    except ValueError as exc:
        assert "vllm-float32" in str(exc)
        return
    if spec.rope_type == "default":
        c2, s2 = vllm_cos_sin(pos, rotary_dim=spec.rotary_dim, base=spec.base, dtype=dtype)
    else:
        c2, s2 = vllm_cos_sin(pos, rotary_dim=spec.rotary_dim, inv_freq=spec.inv_freq.astype(F))
        mag = F(spec.attention_scaling)  # vLLM's magnitude equals transformers' for these
        c2, s2 = c2 * mag, s2 * mag
        if dtype != "float32":
            c2, s2 = round_to(c2, dtype).astype(F), round_to(s2, dtype).astype(F)
    np.testing.assert_array_equal(c, c2)
    np.testing.assert_array_equal(s, s2)
    assert np.array_equal(round_to(c, dtype).astype(F), c)  # values of the model dtype


@pytest.mark.parametrize("name", NAMES)
def test_every_precision_through_the_spec_follows_the_exact_tables(name):
    spec = rope_from_config(
        {
            "head_dim": 128,
            "rope_theta": 5e5,
            "max_position_embeddings": 131072,
            "rope_scaling": {
                "rope_type": "yarn",
                "factor": 4.0,
                "original_max_position_embeddings": 32768,
            },
        }
    )  # fmt: skip  (a hand-made YaRN config)
    pos = np.arange(0, 131072, 101)
    c, s = spec.cos_sin(pos, precision=name)
    ce, se = spec.cos_sin(pos)
    assert c.shape == ce.shape == (pos.shape[0], 64)
    unit = {"bfloat16": 2.0**-8, "float16": 2.0**-11}.get(PRECISIONS[name].dtype, 1e-6)
    bound = ((pos[:, None] + 1) * 2.0**-18 + unit) * spec.attention_scaling
    assert np.all(np.abs(c - ce) <= bound) and np.all(np.abs(s - se) <= bound)
    # one YaRN magnitude in every engine for this config (within the table format)
    assert abs(float(c[0, 0]) / spec.attention_scaling - 1) <= unit
    assert PRECISIONS[name](spec, pos[:3])[0].dtype == c.dtype  # the record, called directly


def test_numerics_names_mean_the_same_arithmetic():
    """transformers' float32 precision is the float32-pow class's recipe bit for bit; the
    renamed numerics names still work, with a DeprecationWarning naming the class."""
    spec = rope_from_config({"head_dim": 64, "rope_theta": 1e4})
    pos = np.arange(0, 50000, 13)
    c, s = spec.cos_sin(pos, precision="transformers-float32")
    c2, s2 = PIPELINES["float32-pow"](pos, dim=64, base=1e4)
    np.testing.assert_array_equal(c, c2)
    np.testing.assert_array_equal(s, s2)
    c, _ = spec.cos_sin(pos)
    c2, _ = PIPELINES["float64-tables"](pos, dim=64, base=1e4)
    assert np.all(np.abs(c - c2) <= error_bound("float64-tables", pos, dim=64, base=1e4))
    for old, new in RENAMED_PIPELINES.items():
        with pytest.warns(DeprecationWarning, match=f"'{old}' is deprecated; use '{new}'"):
            c3, _ = pipeline_cos_sin(old, pos[:5], dim=8)
        np.testing.assert_array_equal(c3, pipeline_cos_sin(new, pos[:5], dim=8)[0])


# ---------------------------------------------------------------------------------------------
# The pipeline classes.

ACCEPTED = (
    "float64-tables",
    "float32-angles",
    "float32-pow",
    "float32-exp-log",
    "float32-exp2-log2",
    "float32-ggml-product",
    "half-tables",
)


def test_the_classes_and_their_verdicts():
    names = set(PIPELINE_CLASSES)
    assert set(ACCEPTED) <= names
    failing = {f"{f}-{st}" for f in HALF_FORMATS for st in STAGES}
    assert failing <= names
    for name, cls in PIPELINE_CLASSES.items():
        assert cls.name == name and cls.recipe
        assert cls.accepted == bool(cls.dtypes) == (not cls.fix or name == "half-tables")
    every = set(ACCEPTED) - {"half-tables"} | {"float64-recurrence"}
    assert set(accepted_classes("float32")) == every
    assert "half-tables" in accepted_classes("bfloat16") and "half-tables" in accepted_classes(
        "float16"
    )
    assert not any(n in accepted_classes("float32") for n in failing | {"half-tables"})
    for dtype in ("float32", "bfloat16", "float16"):
        assert not any(PIPELINE_CLASSES[n].accepted_for(dtype) for n in failing)


@pytest.mark.parametrize("fmt", HALF_FORMATS)
@pytest.mark.parametrize("stage", STAGES)
def test_a_stage_reading_maps_to_its_class(fmt, stage):
    assert pipeline_class_for_stage(stage, fmt).name == f"{fmt}-{stage}"
    same = pipeline_class_for_stage(stage, fmt, fmt).name
    assert same == ("half-tables" if stage == "tables" else f"{fmt}-{stage}")
    assert pipeline_class_for_stage(stage, "float32") is None


def test_stage_lookup_and_bound_refuse_bad_arguments():
    with pytest.raises(ValueError, match="stage must be one of"):
        pipeline_class_for_stage("table", "bfloat16")
    with pytest.raises(ValueError, match="fmt must be one of"):
        pipeline_class_for_stage("angles", "fp8")
    with pytest.raises(ValueError, match="dtype must be one of"):
        pipeline_class_for_stage("angles", "bfloat16", "int8")
    cls = PIPELINE_CLASSES["float32-angles"]
    with pytest.raises(ValueError, match="inv_freq must be 1-D, finite and non-negative"):
        cls.bound([[1]], [-1.0])
    with pytest.raises(ValueError, match="positions must be finite"):
        cls.bound([[np.nan]], [1.0])
    with pytest.raises(ValueError, match="dtype must be one of"):
        cls.bound([[1]], [1.0], "int8")
    with pytest.raises(ValueError, match="dtype must be one of"):
        cls.accepted_for("float64")


def test_bounds_grow_with_the_recipes_roundings():
    """Per element: correctly rounded frequencies <= pow <= exp/log; a half-precision angle
    adds at least its own rounding; every bound is capped at 2."""
    m = np.array([[0], [1], [1000], [131071], [2**25]], dtype=float)
    theta = 500000.0 ** (-np.arange(32) / 32)
    b = {n: c.bound(m, theta) for n, c in PIPELINE_CLASSES.items()}
    assert np.all(b["float32-angles"] <= b["float32-pow"])
    assert np.all(b["float32-pow"] <= b["float32-exp-log"])
    assert np.all(b["bfloat16-angles"] >= np.minimum(2.0, m * theta * 2.0**-8))
    assert np.all(b["bfloat16-tables"] >= 2.0**-8) and np.all(b["float16-tables"] >= 2.0**-11)
    assert max(v.max() for v in b.values()) == 2.0
    assert np.all(b["float32-ggml-product"][:, 0] <= b["float32-angles"][:, 0])  # pair 0: m


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_half_tables_are_within_their_bound_in_their_own_dtype(dtype):
    pos = np.unique(np.r_[np.arange(64), np.geomspace(64, 2**20, 200).astype(int)])
    c32, _ = PIPELINES["float32-pow"](pos, dim=64, base=5e5)
    c = round_to(c32, dtype).astype(np.float64)
    ref, _ = PIPELINES["accurate"](pos, dim=64, base=5e5)
    theta = 5e5 ** (-np.arange(32) / 32)
    bound = PIPELINE_CLASSES["half-tables"].bound(pos[:, None], theta, dtype)
    assert np.all(np.abs(c - ref) <= bound)


def test_unknown_names_are_refused_listing_the_known_ones():
    spec = rope_from_config({"head_dim": 8})
    for bad in ("ggml", "float32", "vllm-int8", None):
        with pytest.raises((ValueError, TypeError), match="precision"):
            spec.cos_sin([0, 1], precision=bad)
        with pytest.raises((ValueError, TypeError), match="precision"):
            spec.apply(np.ones((2, 8)), [0, 1], precision=bad)
    with pytest.raises(ValueError, match="mlx-float32"):
        spec.cos_sin([0], precision="nope")


def _longrope(seq_len):
    short, long = [1.0] * 4, [2.0, 3.0, 4.0, 5.0]
    return rope_from_config(
        {
            "head_dim": 8,
            "max_position_embeddings": 8192,
            "original_max_position_embeddings": 2048,
            "rope_scaling": {"type": "longrope", "short_factor": short, "long_factor": long},
        },
        seq_len=seq_len,
    )  # fmt: skip  (a hand-made LongRoPE config)


def test_specs_an_engine_cannot_run_are_refused_with_the_reason():
    with pytest.raises(ValueError, match=r"'mlx-float32'.*always uses the long factors"):
        _longrope(1000).cos_sin([0, 1], precision="mlx-float32")
    assert _longrope(4096).cos_sin([0, 1], precision="mlx-float32")[0].dtype == F
    # vLLM: long factors from max_model_len (8192 > 2048) for every token
    with pytest.raises(ValueError, match=r"'vllm-float32'.*long factors"):
        _longrope(1000).cos_sin([0, 1], precision="vllm-bfloat16")
    assert _longrope(4096).cos_sin([0, 1], precision="vllm-float16")[0].dtype == F
    dyn = rope_from_config(
        {
            "head_dim": 8,
            "max_position_embeddings": 2048,
            "rope_scaling": {"type": "dynamic", "factor": 2.0},
        },
        seq_len=4096,
    )  # fmt: skip  (hand-made)
    with pytest.raises(ValueError, match=r"'ggml-float32'.*no 'dynamic' scaling"):
        dyn.cos_sin([0], precision="ggml-float32")
    with pytest.raises(ValueError, match=r"'vllm-float32'.*static cache"):
        dyn.cos_sin([0], precision="vllm-float32")
    ntk = rope_from_config({"head_dim": 8, "rope_scaling": {"type": "ntk", "factor": 2.0}})
    with pytest.raises(ValueError, match=r"'mlx-float32'.*no 'ntk' scaling"):
        ntk.apply(np.ones((1, 8)), [0], precision="mlx-float32")


def test_mlx_dynamic_ntk_is_recomputed_for_the_spec_length():
    cfg = {
        "head_dim": 8,
        "max_position_embeddings": 2048,
        "rope_scaling": {"type": "dynamic", "factor": 2.0},
    }  # fmt: skip  (hand-made)
    spec = rope_from_config(cfg, seq_len=4096)
    c, s = spec.cos_sin(np.arange(4096), precision="mlx-float32")
    base = 1e4 * ((2.0 * 4096 / 2048) - 1.0) ** (8 / 6)
    c2, s2 = mlx_cos_sin(np.arange(4096), dims=8, base=base)
    np.testing.assert_array_equal(c, c2)
    np.testing.assert_array_equal(s, s2)


@given(
    st.lists(st.integers(0, 2**20), min_size=1, max_size=12),
    st.sampled_from(NAMES),
    st.sampled_from(["half", "interleaved"]),
)
def test_apply_rotates_with_the_precisions_tables_in_its_format(pos, name, pairing):
    cfg = {
        "head_dim": 16,
        "rope_theta": 5e5,
        "rope_scaling": {"rope_type": "linear", "factor": 2.0},
    }  # fmt: skip  (hand-made)
    spec = rope_from_config(cfg)
    if pairing == "interleaved":
        spec = dataclasses.replace(spec, pairing="interleaved")
    x = np.random.default_rng(len(pos)).normal(size=(2, len(pos), 16)).astype(F)
    y = spec.apply(x, pos, precision=name)
    c, s = spec.cos_sin(pos, precision=name)
    fmt = PRECISIONS[name].dtype
    xr = x if fmt in ("float64", "float32") else round_to(x, fmt).astype(F)
    h = 8
    i1, i2 = (np.arange(h), np.arange(h) + h) if pairing == "half" else (
        np.arange(0, 16, 2), np.arange(1, 16, 2))  # fmt: skip
    want1 = xr[..., i1] * c - xr[..., i2] * s
    assert y.shape == x.shape
    if fmt == "float64":
        np.testing.assert_allclose(y[..., i1], want1, atol=1e-6)
    elif fmt == "float32":
        np.testing.assert_array_equal(y[..., i1], want1)
        assert y.dtype == F
    else:  # every product and the sum rounded to the format: one unit of it per step
        assert np.allclose(y[..., i1], want1, rtol=0, atol=3 * 2.0**-7 * (1 + np.abs(xr).max()))
        assert np.array_equal(round_to(y, fmt).astype(F), y)


@given(st.lists(st.integers(0, 2**22), min_size=1, max_size=20))
def test_registry_tables_match_the_engine_functions_over_positions(pos):
    spec = rope_from_config({"head_dim": 64, "rope_theta": 1e6})
    np.testing.assert_array_equal(
        spec.cos_sin(pos, precision="ggml-float32")[0],
        ggml_cos_sin(pos, n_dims=64, freq_base=1e6)[0],
    )
    np.testing.assert_array_equal(
        spec.cos_sin(pos, precision="mlx-float32")[1], mlx_cos_sin(pos, dims=64, base=1e6)[1]
    )
    np.testing.assert_array_equal(
        spec.cos_sin(pos, precision="vllm-bfloat16")[0],
        vllm_cos_sin(pos, rotary_dim=64, base=1e6, dtype="bfloat16")[0],
    )


@pytest.mark.parametrize("name", NAMES)
def test_the_checker_reports_each_precisions_class(name):
    spec = rope_from_config({"head_dim": 64, "rope_theta": 1e4})
    report = check_rope(lambda x, p: spec.apply(x, p, precision=name), dim=64)
    assert report.precision == TABLE_PRECISION_CLASSES[name]
    assert report.base == pytest.approx(1e4, rel=1e-6) and report.pairing == "half"


@pytest.mark.parametrize("name", NAMES)
def test_mrope_specs_on_text_positions_are_plain_rope_in_every_precision(name):
    path = os.path.join(HERE, "parity", "configs", "qwen2.5-vl-text.handmade.json")
    spec = _full_spec(path)  # a hand-made config (see that folder's SOURCES.md)
    assert spec.mrope_section is not None
    plain = dataclasses.replace(spec, mrope_section=None, mrope_layout=None)
    pos = np.arange(0, 30000, 7)
    got, want = spec.cos_sin(pos, precision=name), plain.cos_sin(pos, precision=name)
    for a, b in zip(got, want, strict=True):
        np.testing.assert_array_equal(a, b)
