"""Engine pipelines (refimpl.engines) against loop oracles, exact tables and their own rules."""

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from refimpl import cos_sin, inv_freq, round_to
from refimpl.engines import (
    ggml_cos_sin,
    ggml_yarn_corr_dims,
    mlx_cos_sin,
    vllm_cos_sin,
)
from refimpl.pipelines import _fma32
from refimpl.scaling import ROPE_SCALINGS, yarn_correction_range

F = np.float32


def _ggml_loop(p, n, base, fs, ff):
    """ggml_rope_cache_init for one position, one float32 operation at a time."""
    ts = F(float(F(base)) ** float(F(-2.0) / F(n)))
    theta = F(p)
    cos = []
    for i in range(n // 2):
        te = theta / F(ff[i]) if ff is not None else theta
        t = F(fs) * te
        cos.append(F(math.cos(float(t))))
        theta = theta * ts
    return np.array(cos, dtype=F)


@given(
    st.lists(st.integers(0, 2**24), min_size=1, max_size=6),
    st.sampled_from([8, 64, 128]),
    st.sampled_from([10000.0, 500000.0, 1e6]),
    st.sampled_from([1.0, 0.25, 1 / 8]),
    st.booleans(),
)
def test_ggml_tables_equal_the_per_operation_loop(pos, n, base, fs, with_ff):
    ff = np.linspace(1.0, 8.0, n // 2) if with_ff else None
    c, s = ggml_cos_sin(pos, n_dims=n, freq_base=base, freq_scale=fs, freq_factors=ff)
    for row, p in zip(c, pos, strict=True):
        np.testing.assert_array_equal(row, _ggml_loop(p, n, base, fs, ff))
    assert c.dtype == s.dtype == np.float32


def test_ggml_frequencies_are_cumulative_products_not_powers():
    # the repeated product drifts from b**(-2i/d) by a few float32 ulp at the last pairs
    n, base = 128, 500000.0
    c, s = ggml_cos_sin([1], n_dims=n, freq_base=base)
    theta = np.arctan2(s[0].astype(np.float64), c[0].astype(np.float64))
    exact = inv_freq(n, base)
    rel = np.abs(theta - exact) / exact
    assert rel.max() < 64 * 2.0**-24  # a few ulp of float32 after 63 products
    assert rel.max() > 2.0**-24  # but not the correctly rounded power


@pytest.mark.parametrize(
    ("n", "orig", "base", "bf", "bs"),
    [
        (128, 4096, 1e4, 32, 1),
        (128, 8192, 5e5, 32, 1),
        (64, 2048, 1e6, 32, 1),
        (128, 4096, 1.5e5, 32, 1),
    ],
)
def test_ggml_correction_range_is_the_truncated_one(n, orig, base, bf, bs):
    low, high = ggml_yarn_corr_dims(n, orig, base, bf, bs)
    want = yarn_correction_range(
        dim=n, base=base, original_max_position=orig, beta_fast=bf, beta_slow=bs
    )
    assert (float(low), float(high)) == tuple(float(v) for v in want)


def test_ggml_linear_and_yarn_tables_follow_the_exact_method_within_float32():
    pos = np.arange(0, 4096)
    n = 128
    c, _ = ggml_cos_sin(pos, n_dims=n, freq_base=1e4, freq_scale=0.25)
    exact = ROPE_SCALINGS["linear"](dim=n, base=1e4, factor=4.0).inv_freq
    ce, _ = cos_sin(pos, exact)
    bound = (pos[:, None] + 1) * 2.0**-18  # angle error grows with position (float32 products)
    assert np.all(np.abs(c - ce) <= bound)
    c, _ = ggml_cos_sin(
        pos, n_dims=n, freq_base=1e4, freq_scale=0.25, ext_factor=1.0, n_ctx_orig=4096
    )
    yarn = ROPE_SCALINGS["yarn"](dim=n, base=1e4, factor=4.0, original_max_position=4096)
    ce, _ = cos_sin(pos, yarn.inv_freq)
    mag = 1 + 0.1 * math.log(4.0)  # ggml's own magnitude, attn_factor = 1
    assert abs(float(c[0, 0]) - mag) < 1e-6 and abs(yarn.attention_scaling - mag) < 1e-12
    assert np.all(np.abs(c / mag - ce) <= bound)


@given(st.lists(st.floats(-1e6, 1e6, width=32), min_size=3, max_size=3))
def test_fma32_rounds_once(vals):
    a, b, c = (np.array([v], dtype=F) for v in vals)
    got = _fma32(a, b, c)[0]
    exact = Fraction(float(a[0])) * Fraction(float(b[0])) + Fraction(float(c[0]))
    near = F(float(exact))
    for cand in (np.nextafter(near, F(np.inf)), np.nextafter(near, F(-np.inf))):
        assert abs(Fraction(float(got)) - exact) <= abs(Fraction(float(cand)) - exact)


def test_fused_and_unfused_blend_differ_only_in_the_last_bits():
    kw = dict(n_dims=128, freq_base=1e6, freq_scale=1 / 8, ext_factor=1.0, n_ctx_orig=4096)
    pos = np.arange(0, 2**20, 4099)
    c1, _ = ggml_cos_sin(pos, **kw)
    c2, _ = ggml_cos_sin(pos, fused=False, **kw)
    assert np.any(c1 != c2)
    mag = float(c1[0, 0])
    theta_ulp = np.spacing(F(pos.max()))  # one float32 ulp of the largest angle
    assert np.abs(c1 - c2).max() <= mag * float(theta_ulp) * 1.01


def test_mlx_recipe():
    c, _ = mlx_cos_sin(np.arange(5), dims=8, base=10000.0)
    step = F(math.log(10000.0) / 4)
    inv = np.exp((-np.arange(4, dtype=F) * step).astype(np.float64)).astype(F)
    theta = (np.arange(5, dtype=F)[:, None] * inv).astype(np.float64)
    np.testing.assert_array_equal(c, np.cos(theta).astype(F))
    periods = np.array([1.0, 2.0, 4.0, 8.0])
    c, _ = mlx_cos_sin([3], dims=8, freqs=periods, scale=0.5)
    want = np.cos((F(1.5) * (F(1) / periods.astype(F))).astype(np.float64)).astype(F)
    np.testing.assert_array_equal(c[0], want)


def test_vllm_cache_is_rounded_to_the_model_dtype_before_use():
    pos = np.arange(0, 8192, 7)
    c32, _ = vllm_cos_sin(pos, rotary_dim=128, base=5e5)
    cbf, _ = vllm_cos_sin(pos, rotary_dim=128, base=5e5, dtype="bfloat16")
    np.testing.assert_array_equal(cbf, round_to(c32, "bfloat16"))
    assert np.abs(cbf - c32).max() <= 2.0**-9 and np.abs(cbf - c32).max() > 2.0**-12
    c16, _ = vllm_cos_sin(pos, rotary_dim=128, base=5e5, dtype="float16")
    np.testing.assert_array_equal(c16, round_to(c32, "float16"))


@pytest.mark.parametrize(
    ("call", "word"),
    [
        (lambda: ggml_cos_sin([0.5], n_dims=8), "integers"),
        (lambda: ggml_cos_sin([1], n_dims=7), "n_dims"),
        (lambda: ggml_cos_sin([1], n_dims=8, freq_scale=0.0), "freq_scale"),
        (lambda: ggml_cos_sin([1], n_dims=8, freq_factors=[1.0, 2.0]), "freq_factors"),
        (lambda: ggml_cos_sin([1], n_dims=8, fused=1), "fused"),
        (lambda: mlx_cos_sin([1], dims=8, freqs=[1.0]), "freqs"),
        (lambda: vllm_cos_sin([1], rotary_dim=8, dtype="int8"), "dtype"),
    ],
)
def test_bad_arguments_are_named(call, word):
    with pytest.raises((ValueError, TypeError), match=word):
        call()


# ----------------------------------------------------------------------------- semantics

import pathlib  # noqa: E402

from refimpl.engines import engine_differences, frequency_switch_error  # noqa: E402

CONFIGS = pathlib.Path(__file__).parent / "parity" / "configs"
LLAMA32 = pathlib.Path(__file__).parent / "engines" / "configs" / "llama-3.2-1b-instruct.json"


def _by_engine(cfg):
    return {r.engine: r for r in engine_differences(cfg)}


def test_gpt_oss_truncate_false_is_kept_by_vllm_only():
    r = _by_engine(CONFIGS / "gpt-oss-20b.json")
    assert r["vllm"].truncated_ramp is False
    assert r["llama.cpp"].truncated_ramp is True and r["mlx-lm"].truncated_ramp is True
    assert r["llama.cpp"].max_table_error > 100 * r["vllm"].max_table_error
    assert any("truncate" in n for n in r["mlx-lm"].notes)
    assert r["vllm"].positions == 131071


ENGINE_CONFIGS = pathlib.Path(__file__).parent / "engines" / "configs"


def test_length_policies_diverge_on_their_side_of_the_switch():
    """Hand-made (labelled) LongRoPE and dynamic-NTK configs: below LongRoPE's switch vLLM and
    mlx-lm run the long factors; beyond dynamic NTK's context llama.cpp and vLLM keep the
    base; each side matches where the engine's policy agrees with transformers."""
    longrope = ENGINE_CONFIGS / "longrope.handmade.json"
    below = {r.engine: r for r in engine_differences(longrope, seq_len=1024)}
    assert below["llama.cpp"].max_table_error < 1e-3 and below["llama.cpp"].positions == 1023
    assert below["vllm"].max_table_error > 1 and below["mlx-lm"].max_table_error > 1
    dynamic = ENGINE_CONFIGS / "dynamic-ntk.handmade.json"
    above = {r.engine: r for r in engine_differences(dynamic, seq_len=16384)}
    assert above["mlx-lm"].max_table_error < 1e-2  # recomputed per call, as transformers
    assert above["llama.cpp"].max_table_error > 1 and above["vllm"].max_table_error > 1
    with pytest.raises(ValueError, match="seq_len must be"):
        engine_differences(dynamic, seq_len=0)


def test_each_report_says_whose_arithmetic_it_is():
    by = _by_engine(LLAMA32)
    assert "exp(-i ln(b) / (d/2))" in by["mlx-lm"].backend
    assert "exp2" in by["mlx-lm"].backend and "float32-exp2-log2" in by["mlx-lm"].backend
    assert "float32-ggml-product" in by["llama.cpp"].backend
    assert "float32-pow" in by["vllm"].backend


def test_llama3_runs_alike_in_every_engine():
    for rep in engine_differences(LLAMA32):
        assert rep.attention_factor == rep.reference_factor == 1.0
        assert rep.max_table_error < 1e-2 and rep.max_score_error < 2e-3
        assert rep.truncated_ramp is None


def test_an_explicit_attention_factor_is_kept_by_vllm_and_dropped_by_mlx_and_llamacpp():
    cfg = {  # hand-made YaRN config with an explicit attention_factor
        "model_type": "qwen3",
        "hidden_size": 512,
        "num_attention_heads": 4,
        "max_position_embeddings": 32768,
        "rope_theta": 1e6,
        "rope_scaling": {
            "rope_type": "yarn",
            "factor": 4.0,
            "original_max_position_embeddings": 8192,
            "attention_factor": 1.0,
        },
    }
    r = _by_engine(cfg)
    assert r["llama.cpp"].reference_factor == 1.0
    want = 1 + 0.1 * math.log(4.0)
    assert abs(r["mlx-lm"].attention_factor - want) < 1e-12 and r["mlx-lm"].notes
    assert abs(r["llama.cpp"].attention_factor - want) < 1e-6  # recomputed at load time
    assert r["llama.cpp"].notes
    # vLLM 0.33's get_rope forwards attention_factor (tests/engines/test_vllm_live.py)
    assert r["vllm"].attention_factor == 1.0 and not r["vllm"].notes


def test_longrope_policies_are_stated():
    h = 48
    cfg = {  # hand-made Phi-3-style LongRoPE config
        "model_type": "phi3",
        "hidden_size": 3072,
        "num_attention_heads": 32,
        "max_position_embeddings": 131072,
        "original_max_position_embeddings": 4096,
        "rope_theta": 10000.0,
        "rope_scaling": {
            "type": "longrope",
            "short_factor": [1.0] * h,
            "long_factor": list(np.linspace(1.0, 8.0, h)),
        },
    }
    r = _by_engine(cfg)
    assert "max_model_len" in r["vllm"].length_policy
    assert "always" in r["mlx-lm"].length_policy
    assert "allocated" in r["llama.cpp"].length_policy


def test_switching_frequencies_without_rerotating_breaks_relative_scores():
    short = inv_freq(64, 1e4)
    long = short / np.linspace(1.0, 8.0, 32)
    keys, queries = np.arange(0, 4096, 64), np.arange(4096, 4200, 8)
    assert frequency_switch_error(short, long, key_positions=keys, query_positions=queries) > 0.1
    assert frequency_switch_error(long, long, key_positions=keys, query_positions=queries) < 1e-12
    with pytest.raises(ValueError, match="inv_before"):
        frequency_switch_error(short, long[:3], key_positions=keys, query_positions=queries)


@pytest.mark.parametrize(
    ("call", "word"),
    [
        (lambda: ggml_cos_sin([1], n_dims=8, freq_base=True), "freq_base"),
        (lambda: vllm_cos_sin([1], rotary_dim=8, base=True), "base"),
        (lambda: mlx_cos_sin([1], dims=8, base=1.0), "base"),
        (
            lambda: frequency_switch_error(
                [1.0, np.inf], [1.0, 1.0], key_positions=[0], query_positions=[1]
            ),
            "inv_before",
        ),
    ],
)
def test_hostile_bases_and_frequencies_are_refused_by_name(call, word):
    with pytest.raises((ValueError, TypeError), match=word):
        call()
