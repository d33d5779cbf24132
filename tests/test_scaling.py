"""The scaling registry: shared properties of every method, identities, and error paths."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import refimpl
from refimpl.scaling import (
    ROPE_SCALINGS,
    ScaledFrequencies,
    UnknownRopeTypeError,
    dynamic_ntk_base,
    ntk_base,
    scale_frequencies,
    transformers_float32_frequencies,
    yarn_attention_scaling,
    yarn_correction_range,
    yarn_ramp,
)

DIM, BASE = 64, 10000.0


def _extra(name, factor, dim=DIM):
    """Method-specific arguments for a scale `factor` (the shared ones are dim, base)."""
    h = dim // 2
    return {
        "default": {},
        "linear": {"factor": factor},
        "ntk": {"factor": factor},
        "dynamic": {"factor": factor, "max_position": 1024, "seq_len": int(1024 * factor)},
        "yarn": {"factor": factor, "original_max_position": 1024},
        "llama3": {"factor": factor, "original_max_position": 1024},
        "longrope": {
            "short_factor": [1.0] * h,
            "long_factor": list(np.linspace(1.0, factor, h)),
            "original_max_position": 1024,
            "factor": factor,
            "seq_len": 2048,
        },
        "proportional": {"factor": factor},
        "ntk_alpha": {"alpha": factor},
        "freq_factors": {"factors": list(np.linspace(1.0, factor, h))},
        # nothing is rounded at factor 1: the training length is below the shortest wavelength
        "resonance": {"original_max_position": 4 if factor == 1.0 else int(1024 * factor)},
    }[name]


# methods whose frequencies stay within [theta / factor, theta]
BOUNDED = ("linear", "ntk", "dynamic", "yarn", "llama3", "longrope", "proportional", "ntk_alpha")


def test_registry_has_the_documented_keys():
    assert set(ROPE_SCALINGS) == {
        "default",
        "linear",
        "ntk",
        "dynamic",
        "yarn",
        "llama3",
        "longrope",
        "proportional",
        "ntk_alpha",
        "freq_factors",
        "resonance",
    }


@pytest.mark.parametrize("name", sorted(ROPE_SCALINGS))
def test_every_method_with_factor_one_is_unscaled(name):
    theta = refimpl.inv_freq(DIM, BASE)
    out = ROPE_SCALINGS[name](dim=DIM, base=BASE, **_extra(name, 1.0))
    assert isinstance(out, ScaledFrequencies)
    assert out.inv_freq.dtype == np.float64 and out.inv_freq.shape == (DIM // 2,)
    np.testing.assert_allclose(out.inv_freq, theta, rtol=1e-14)
    assert out.attention_scaling == 1.0


@pytest.mark.parametrize("name", BOUNDED)
@pytest.mark.parametrize("factor", [1.5, 4.0, 32.0])
def test_every_method_stays_between_theta_over_factor_and_theta(name, factor):
    theta = refimpl.inv_freq(DIM, BASE)
    out = ROPE_SCALINGS[name](dim=DIM, base=BASE, **_extra(name, factor)).inv_freq
    if name == "dynamic":  # bounded by the effective scale s l / L - (s - 1), here l = s L
        factor = factor * factor - (factor - 1)
    assert np.all(out <= theta * (1 + 1e-13))
    assert np.all(out >= theta / factor * (1 - 1e-13))
    assert np.all(np.diff(out) < 0)  # still strictly decreasing


@given(st.sampled_from([4, 8, 16, 64, 96, 128]), st.floats(1.0, 1e3), st.floats(10.0, 1e7))
def test_linear_is_default_over_factor(dim, factor, base):
    out = ROPE_SCALINGS["linear"](dim=dim, base=base, factor=factor).inv_freq
    np.testing.assert_allclose(out, refimpl.inv_freq(dim, base) / factor, rtol=1e-15)


@given(st.sampled_from([4, 8, 16, 64, 96, 128, 256]), st.floats(1.0, 1e3), st.floats(10.0, 1e7))
def test_ntk_keeps_theta0_and_divides_the_lowest_frequency_by_the_factor(dim, factor, base):
    theta = refimpl.inv_freq(dim, base)
    out = ROPE_SCALINGS["ntk"](dim=dim, base=base, factor=factor).inv_freq
    assert out[0] == 1.0
    assert math.isclose(theta[-1] / out[-1], factor, rel_tol=1e-12)
    # pair i is divided by factor ** (2i / (d - 2))
    i = np.arange(dim // 2)
    np.testing.assert_allclose(theta / out, factor ** (2 * i / (dim - 2)), rtol=1e-11)


def _ntk_loop(dim, base, factor):
    """Slow oracle: NTK-aware frequencies pair by pair."""
    b = base * factor ** (dim / (dim - 2))
    return np.array([b ** (-(2 * i) / dim) for i in range(dim // 2)])


def test_ntk_against_loop_oracle():
    np.testing.assert_allclose(
        ROPE_SCALINGS["ntk"](dim=96, base=5e5, factor=7.0).inv_freq,
        _ntk_loop(96, 5e5, 7.0),
        rtol=1e-14,
    )


@given(st.integers(1, 10**6), st.floats(1.0, 64.0))
def test_dynamic_is_default_up_to_max_position_and_ntk_of_effective_scale_beyond(seq_len, factor):
    L = 4096
    out = ROPE_SCALINGS["dynamic"](
        dim=DIM, base=BASE, factor=factor, max_position=L, seq_len=seq_len
    )
    if seq_len <= L:
        np.testing.assert_allclose(out.inv_freq, refimpl.inv_freq(DIM, BASE), rtol=1e-14)
    else:
        eff = factor * seq_len / L - (factor - 1)  # transformers' effective NTK scale
        want = ROPE_SCALINGS["ntk"](dim=DIM, base=BASE, factor=eff).inv_freq
        np.testing.assert_allclose(out.inv_freq, want, rtol=1e-12)


def test_dynamic_none_seq_len_means_max_position():
    a = dynamic_ntk_base(dim=DIM, base=BASE, factor=4.0, max_position=100)
    assert a == BASE


def test_yarn_correction_range_matches_reference_table():
    # peer-formulas 1.7: LlamaConfig() with factor 10 -> (16, 41); Qwen2.5 -> (23, 40)
    assert yarn_correction_range(dim=128, base=1e4, original_max_position=2048) == (16.0, 41.0)
    assert yarn_correction_range(dim=128, base=1e6, original_max_position=32768) == (23.0, 40.0)
    lo, hi = yarn_correction_range(
        dim=64, base=150000.0, original_max_position=4096, truncate=False
    )
    assert math.isclose(lo, 8.0928, abs_tol=1e-4) and math.isclose(hi, 17.3980, abs_tol=1e-4)


def _paper_ramp_loop(dim, base, L, alpha, beta):
    out = []
    for i in range(dim // 2):
        r = L / (2 * math.pi * base ** (2 * i / dim))
        gamma = 0.0 if r < alpha else 1.0 if r > beta else (r - alpha) / (beta - alpha)
        out.append(1.0 - gamma)
    return np.array(out)


def test_yarn_paper_ramp_against_loop_and_differs_from_transformers():
    paper = yarn_ramp(dim=128, base=1e4, original_max_position=4096, ramp="paper")
    np.testing.assert_allclose(paper, _paper_ramp_loop(128, 1e4, 4096, 1.0, 32.0), rtol=1e-14)
    code = yarn_ramp(dim=128, base=1e4, original_max_position=4096)
    # peer-formulas 7.5 table (s = 16): pair 25 -> h/theta 0.57213 (paper), 0.81971 (code)
    s = 16.0
    ratio = lambda w: (1 - w) + w / s  # noqa: E731
    assert math.isclose(ratio(paper[25]), 0.57213, abs_tol=1e-5)
    assert math.isclose(ratio(code[25]), 0.81971, abs_tol=1e-5)


@given(st.floats(1.0, 1e3))
def test_yarn_attention_scaling_is_point_one_log_plus_one(s):
    assert math.isclose(yarn_attention_scaling(factor=s), 0.1 * math.log(s) + 1.0, rel_tol=1e-15)


def test_yarn_attention_precedence():
    s = 40.0
    assert yarn_attention_scaling(factor=s, attention_factor=1.0, mscale=1.0) == 1.0
    # both mscales: ratio (DeepSeek pair 1.0/0.8)
    want = (0.1 * math.log(s) + 1) / (0.1 * 0.8 * math.log(s) + 1)
    assert yarn_attention_scaling(factor=s, mscale=1.0, mscale_all_dim=0.8) == want
    # one alone (or a zero) is ignored, as in transformers
    plain = 0.1 * math.log(s) + 1
    assert yarn_attention_scaling(factor=s, mscale=0.707) == plain
    assert yarn_attention_scaling(factor=s, mscale=0.0, mscale_all_dim=1.0) == plain
    assert yarn_attention_scaling(factor=1.0, mscale=2.0, mscale_all_dim=1.0) == 1.0


def test_llama3_is_ntk_by_parts_with_alpha_1_beta_4():
    f = ROPE_SCALINGS["llama3"](dim=128, base=5e5, factor=8.0, original_max_position=8192)
    theta = refimpl.inv_freq(128, 5e5)
    w = yarn_ramp(
        dim=128, base=5e5, original_max_position=8192, beta_fast=4.0, beta_slow=1.0, ramp="paper"
    )
    np.testing.assert_allclose(f.inv_freq, theta / 8 * w + theta * (1 - w), rtol=1e-14)
    regime = theta / f.inv_freq
    assert np.all(regime[:29] == 1.0) and np.allclose(regime[35:], 8.0)  # peer-formulas 1.9
    assert np.all((regime[29:35] > 1) & (regime[29:35] < 8))


def test_longrope_switches_after_the_original_context():
    h = DIM // 2
    kw = dict(
        dim=DIM,
        base=BASE,
        short_factor=[2.0] * h,
        long_factor=[5.0] * h,
        original_max_position=4096,
        factor=32.0,
    )
    theta = refimpl.inv_freq(DIM, BASE)
    for seq_len, lam in ((None, 2.0), (4096, 2.0), (4097, 5.0)):
        out = ROPE_SCALINGS["longrope"](seq_len=seq_len, **kw)
        np.testing.assert_allclose(out.inv_freq, theta / lam, rtol=1e-15)
        assert out.attention_scaling == math.sqrt(1 + math.log(32.0) / math.log(4096))
    dflt = ROPE_SCALINGS["longrope"](**{**kw, "factor": None}, max_position=131072)
    assert dflt.attention_scaling == math.sqrt(1 + math.log(32.0) / math.log(4096))


def test_float32_emulation_is_float32_and_close_to_exact():
    for name in sorted(ROPE_SCALINGS):
        f32 = transformers_float32_frequencies(name, dim=DIM, base=BASE, **_extra(name, 4.0))
        exact = scale_frequencies(name, dim=DIM, base=BASE, **_extra(name, 4.0))
        assert f32.inv_freq.dtype == np.float32
        np.testing.assert_allclose(f32.inv_freq, exact.inv_freq, rtol=5e-7)
        assert f32.attention_scaling == exact.attention_scaling


# ----------------------------------------------------------------------------- errors


def test_unknown_name_lists_the_known_ones():
    with pytest.raises(ValueError, match="unknown rope type 'rope'; known rope types: default"):
        scale_frequencies("rope", dim=8)
    with pytest.raises(KeyError, match="llama3"):
        ROPE_SCALINGS["su"]
    assert issubclass(UnknownRopeTypeError, ValueError)
    with pytest.raises(TypeError, match="rope_type must be a string"):
        scale_frequencies(3)


# methods without a scale factor >= 1 (per-pair factors are any positive divisors)
NO_FACTOR = ("default", "longrope", "freq_factors", "resonance")


@pytest.mark.parametrize("name", [n for n in sorted(ROPE_SCALINGS) if n not in NO_FACTOR])
def test_factor_below_one_is_rejected(name):
    with pytest.raises(ValueError, match=r"(factor|alpha) must be >= 1"):
        ROPE_SCALINGS[name](dim=DIM, base=BASE, **_extra(name, 0.5))


def test_longrope_factor_below_one_is_rejected():
    with pytest.raises(ValueError, match="factor must be >= 1"):
        ROPE_SCALINGS["longrope"](dim=DIM, base=BASE, **{**_extra("longrope", 1.0), "factor": 0.5})


def test_beta_order_is_checked():
    with pytest.raises(ValueError, match="beta_fast must be at least beta_slow"):
        ROPE_SCALINGS["yarn"](
            dim=DIM, base=BASE, factor=4.0, original_max_position=1024, beta_fast=1, beta_slow=32
        )
    with pytest.raises(ValueError, match="beta_fast must be greater than beta_slow"):
        yarn_ramp(dim=DIM, original_max_position=1024, beta_fast=2, beta_slow=2, ramp="paper")
    with pytest.raises(ValueError, match="beta_slow must be positive"):
        yarn_ramp(dim=DIM, original_max_position=1024, beta_slow=0, ramp="paper")


def test_llama3_band_order_is_checked():
    with pytest.raises(ValueError, match="high_freq_factor must be >= low_freq_factor"):
        ROPE_SCALINGS["llama3"](
            dim=DIM, factor=8.0, original_max_position=8192, low_freq_factor=4, high_freq_factor=2
        )


def test_factor_lists_are_checked():
    kw = dict(dim=8, base=BASE, original_max_position=16, factor=2.0)
    with pytest.raises(ValueError, match="short_factor must have dim // 2 = 4 entries"):
        ROPE_SCALINGS["longrope"](short_factor=[1.0] * 3, long_factor=[1.0] * 4, **kw)
    with pytest.raises(TypeError, match="long_factor must contain only numbers"):
        ROPE_SCALINGS["longrope"](short_factor=[1.0] * 4, long_factor=[1, 2, "3", 4], **kw)
    with pytest.raises(TypeError, match="short_factor must be a list of 4 numbers"):
        ROPE_SCALINGS["longrope"](short_factor="1111", long_factor=[1.0] * 4, **kw)
    with pytest.raises(ValueError, match="long_factor must contain finite positive numbers"):
        ROPE_SCALINGS["longrope"](short_factor=[1.0] * 4, long_factor=[1, 2, 0, 4], **kw)
    with pytest.raises(ValueError, match="longrope needs factor, max_position or attention"):
        ROPE_SCALINGS["longrope"](
            dim=8, short_factor=[1] * 4, long_factor=[1] * 4, original_max_position=16
        )


def test_other_argument_errors():
    with pytest.raises(ValueError, match="dim must be at least 4 for NTK"):
        ntk_base(dim=2, factor=2.0)
    with pytest.raises(ValueError, match="truncate applies only to ramp='transformers'"):
        yarn_ramp(dim=8, original_max_position=16, truncate=True, ramp="paper")
    with pytest.raises(ValueError, match="ramp must be one of"):
        yarn_ramp(dim=8, original_max_position=16, ramp="linear")
    with pytest.raises(TypeError, match="truncate must be a bool"):
        yarn_correction_range(dim=8, original_max_position=16, truncate="no")
    with pytest.raises(TypeError, match="max_position must be an integer"):
        dynamic_ntk_base(dim=8, factor=2.0, max_position="4k")
    with pytest.raises(ValueError, match="attention_factor must be positive"):
        yarn_attention_scaling(factor=2.0, attention_factor=0.0)
    with pytest.raises(TypeError, match="unexpected keyword"):
        ROPE_SCALINGS["linear"](dim=8, factor=2.0, beta_fast=3)
    with pytest.raises(ValueError, match="base must be greater than 1"):
        ROPE_SCALINGS["yarn"](dim=8, base=1.0, factor=2.0, original_max_position=16)


def test_freq_factors_divide_each_pair_and_keep_their_magnitude():
    f = np.linspace(1.0, 8.0, DIM // 2)
    out = ROPE_SCALINGS["freq_factors"](dim=DIM, base=BASE, factors=f, attention_factor=1.25)
    np.testing.assert_array_equal(out.inv_freq, refimpl.inv_freq(DIM, BASE) / f)
    assert out.attention_scaling == 1.25
    with pytest.raises(ValueError, match="factors must have dim // 2"):
        ROPE_SCALINGS["freq_factors"](dim=DIM, factors=[1.0] * 3)
    with pytest.raises(ValueError, match="factors must contain finite positive"):
        ROPE_SCALINGS["freq_factors"](dim=4, factors=[1.0, 0.0])


@given(st.sampled_from([16, 64, 128]), st.floats(100.0, 1e6), st.integers(8, 2**16))
def test_resonance_wavelengths_are_integers_below_the_training_length(dim, base, length):
    theta = refimpl.inv_freq(dim, base)
    out = ROPE_SCALINGS["resonance"](dim=dim, base=base, original_max_position=length).inv_freq
    wl = 2 * np.pi / theta
    short = wl < length
    new_wl = 2 * np.pi / out
    np.testing.assert_allclose(new_wl[short], np.round(new_wl[short]), rtol=1e-12)
    assert np.all(np.abs(new_wl[short] - wl[short]) <= 0.5 + 1e-9)  # the nearest integer
    np.testing.assert_array_equal(out[~short], theta[~short])
    # an integer wavelength repeats its angles exactly: angle(p + wl) = angle(p) + 2 pi
    p = np.arange(length)[:, None]
    k = np.round(new_wl[short])[None, :]
    np.testing.assert_allclose(
        np.cos((p + k) * out[short]), np.cos(p * out[short]), atol=1e-9 * length
    )


@pytest.mark.parametrize("truncate", [True, False])
def test_equal_betas_are_a_step(truncate):
    # Kimi-K2 ships beta_fast == beta_slow == 1: transformers' ramp has zero width there,
    # widened by 0.001, so every pair is either interpolated or extrapolated (at most one
    # pair in between when the correction index is not an integer)
    d, b, L = 128, 50000.0, 4096
    ramp = yarn_ramp(
        dim=d, base=b, original_max_position=L, beta_fast=1.0, beta_slow=1.0, truncate=truncate
    )
    c = d * np.log(L / (2 * np.pi)) / (2 * np.log(b))
    j = np.arange(d // 2)
    low, high = (np.floor(c), np.ceil(c)) if truncate else (c, c)
    if high == low:
        high = high + 0.001
    assert np.array_equal(ramp, np.clip((j - low) / (high - low), 0.0, 1.0))
    assert np.count_nonzero((ramp > 0) & (ramp < 1)) <= 1
    f = ROPE_SCALINGS["yarn"](
        dim=d,
        base=b,
        factor=32.0,
        original_max_position=L,
        beta_fast=1.0,
        beta_slow=1.0,
        truncate=truncate,
    )
    assert np.all(np.isfinite(f.inv_freq))


def test_float32_frequencies_refuse_unknown_keywords_naming_the_function():
    with pytest.raises(TypeError, match=r"transformers_float32_frequencies\(\) got unexpected"):
        transformers_float32_frequencies("yarn", dim=8, factor=2.0, original_max_position=16, x=1)
    with pytest.raises(TypeError, match="rope_type 'yarn' takes"):
        transformers_float32_frequencies("yarn", dim=8, factor=2.0, original_max_position=16, x=1)


def test_removed_runtime_keyword_warns_and_keeps_its_meaning_for_one_version():
    kw = {"dim": 8, "base": 1e4, "factor": 2.0, "max_position": 16, "seq_len": 64}
    with pytest.warns(DeprecationWarning, match="runtime=.*deprecated.*dynamic_ntk_base"):
        on = transformers_float32_frequencies("dynamic", runtime=True, **kw)
    np.testing.assert_array_equal(
        on.inv_freq, transformers_float32_frequencies("dynamic", **kw).inv_freq
    )
    with pytest.warns(DeprecationWarning):
        off = transformers_float32_frequencies("dynamic", runtime=False, **kw)
    base = refimpl.scaling.dynamic_ntk_base(**kw)
    want = transformers_float32_frequencies("default", dim=8, base=base)
    np.testing.assert_array_equal(off.inv_freq, want.inv_freq)
    with pytest.raises(TypeError, match="runtime must be True or False"):
        transformers_float32_frequencies("dynamic", runtime="yes", **kw)


def test_llama3_float32_wavelengths_are_reciprocal_times_scalar():
    """torch evaluates ``2 pi / t`` and ``L / wave`` as ``t.reciprocal() * scalar``: two
    float32 roundings (checked against live torch in tests/parity/test_model_families.py)."""
    from refimpl.scaling import _f32_scalar_over

    t = np.array([1.0, 0.1234567, 3.3e-7, 7.9e-4], dtype=np.float32)
    got = _f32_scalar_over(2 * math.pi, t)
    want = ((np.float32(1) / t).astype(np.float32) * np.float32(2 * math.pi)).astype(np.float32)
    np.testing.assert_array_equal(got, want)
    one_rounding = (np.float32(2 * math.pi) / t).astype(np.float32)
    assert not np.array_equal(got, one_rounding)  # they differ for some t
