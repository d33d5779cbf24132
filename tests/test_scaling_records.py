"""The scaling records: their metadata agrees with the methods, fits round-trip, the float32
emulation is float32 and near the exact values, and the bad inputs of the bad-input issue are
refused with the argument named."""

import inspect
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from refimpl._checks import MAX_DIM, MAX_POSITION
from refimpl.scaling import (
    ROPE_SCALINGS,
    ScaledFrequencies,
    ScalingMethod,
    dynamic_ntk_base,
    longrope_attention_scaling,
    ntk_base,
    scale_frequencies,
    transformers_float32_frequencies,
    yarn_attention_scaling,
)

# the smallest complete argument set of each method (hand-made)
ARGS = {
    "default": {},
    "linear": {"factor": 4.0},
    "ntk": {"factor": 4.0},
    "dynamic": {"factor": 4.0, "max_position": 1024, "seq_len": 4096},
    "yarn": {"factor": 4.0, "original_max_position": 1024},
    "llama3": {
        "factor": 8.0,
        "original_max_position": 1024,
        "low_freq_factor": 1.0,
        "high_freq_factor": 4.0,
    },
    "longrope": {
        "short_factor": [1.0] * 32,
        "long_factor": list(np.linspace(1.0, 4.0, 32)),
        "original_max_position": 1024,
        "factor": 4.0,
        "seq_len": 2048,
    },
    "proportional": {"partial_rotary_factor": 0.25, "factor": 2.0},
    "ntk_alpha": {"alpha": 50.0},
    "freq_factors": {"factors": list(np.linspace(1.0, 8.0, 32)), "attention_factor": 1.1},
    "resonance": {"original_max_position": 4096},
}
DIM, BASE = 64, 1e4


def test_every_record_is_a_scaling_method_with_a_test_case():
    assert set(ARGS) == set(ROPE_SCALINGS)
    for name, rec in ROPE_SCALINGS.items():
        assert isinstance(rec, ScalingMethod) and rec.name == name


@pytest.mark.parametrize("name", sorted(ARGS))
def test_metadata_agrees_with_the_method_signature(name):
    rec = ROPE_SCALINGS[name]
    sig = inspect.signature(rec.frequencies)
    assert inspect.signature(rec) == sig  # the record shows its method's keywords
    assert rec.parameters == tuple(sig.parameters)
    no_default = {n for n, p in sig.parameters.items() if p.default is inspect.Parameter.empty}
    # required: no default in the signature, or (llama3's bands) required by configs
    assert no_default - {"dim"} <= set(rec.required) <= set(sig.parameters)
    assert set(rec.keys.values()) <= set(sig.parameters)
    for param, value in rec.defaults.items():
        assert param in rec.keys.values()
        default = sig.parameters[param].default
        assert default == value or (default is None and param == "truncate" and value is True)
    assert isinstance(rec.family, str) and rec.family


@pytest.mark.parametrize("name", sorted(ARGS))
def test_call_attention_factor_float32_and_describe(name):
    rec = ROPE_SCALINGS[name]
    out = rec(dim=DIM, base=BASE, **ARGS[name])
    assert isinstance(out, ScaledFrequencies) and out.inv_freq.dtype == np.float64
    again = scale_frequencies(name, dim=DIM, base=BASE, **ARGS[name])
    assert np.array_equal(out.inv_freq, again.inv_freq)
    assert rec.attention_factor(dim=DIM, base=BASE, **ARGS[name]) == out.attention_scaling
    f32 = rec.float32(dim=DIM, base=BASE, **ARGS[name])
    assert f32.dtype == np.float32 and f32.shape == (DIM // 2,)
    np.testing.assert_allclose(f32, out.inv_freq, rtol=5e-7)
    via = transformers_float32_frequencies(name, dim=DIM, base=BASE, **ARGS[name])
    assert np.array_equal(via.inv_freq, f32) and via.attention_scaling == out.attention_scaling
    text = rec.describe({"dim": DIM, "base": BASE, **ARGS[name]})
    assert text.startswith(name + " (") and "\n" not in text
    for param in ARGS[name]:
        assert f"{param}=" in text


def test_float32_takes_seq_len_for_every_method():
    for name, rec in ROPE_SCALINGS.items():
        args = {k: v for k, v in ARGS[name].items() if k != "seq_len"}
        assert rec.float32(dim=DIM, base=BASE, seq_len=4096, **args).dtype == np.float32
    # dynamic and longrope depend on it
    dyn = {k: v for k, v in ARGS["dynamic"].items() if k != "seq_len"}
    a = ROPE_SCALINGS["dynamic"].float32(dim=DIM, base=BASE, seq_len=100, **dyn)
    b = ROPE_SCALINGS["dynamic"].float32(dim=DIM, base=BASE, seq_len=8192, **dyn)
    assert np.array_equal(a, ROPE_SCALINGS["default"].float32(dim=DIM, base=BASE))
    assert np.all(b[1:] < a[1:])


def test_attention_factor_rejects_unknown_names():
    with pytest.raises(TypeError, match="unexpected keyword"):
        ROPE_SCALINGS["linear"].attention_factor(factor=2.0, mscale=1.0)


def test_describe_shows_lists_by_length():
    text = ROPE_SCALINGS["longrope"].describe(ARGS["longrope"])
    assert "short_factor=[32 values]" in text


# ----------------------------------------------------------------------------- fits


@given(
    st.sampled_from([8, 16, 64, 128, 256]),
    st.floats(10.0, 1e7),
    st.floats(1.0, 64.0),
    st.sampled_from([0.25, 0.5, 0.75, 1.0]),
)
def test_fits_recover_the_parameters(dim, base, factor, p):
    cases = {
        "default": {},
        "linear": {"factor": factor},
        "ntk": {"factor": factor},
        "proportional": {"partial_rotary_factor": p, "factor": factor},
    }
    for name, params in cases.items():
        rec = ROPE_SCALINGS[name]
        inv = rec(dim=dim, base=base, **params).inv_freq
        # ntk needs the original base; so does proportional with a single rotated pair
        one_pair = name == "proportional" and int(p * dim // 2) < 2
        given_base = base if name == "ntk" or one_pair else None
        got = rec.fit(inv, dim=dim, base=given_base, tol=1e-9)
        assert got is not None, name
        assert math.isclose(got["base"], base, rel_tol=1e-7), name
        for k, v in params.items():
            if k == "partial_rotary_factor":  # recovered as 2k/D, the same rotated pairs
                assert int(got[k] * dim // 2) == int(v * dim // 2)
            else:
                assert math.isclose(got[k], v, rel_tol=1e-7), (name, k)
        np.testing.assert_allclose(rec(dim=dim, **got).inv_freq, inv, rtol=1e-9)


def test_fits_refuse_profiles_of_other_methods():
    yarn = ROPE_SCALINGS["yarn"](dim=128, base=1e4, factor=8.0, original_max_position=2048)
    for name in ("default", "linear", "ntk", "proportional"):
        assert ROPE_SCALINGS[name].fit(yarn.inv_freq, dim=128, base=1e4, tol=1e-6) is None
    lin = ROPE_SCALINGS["linear"](dim=128, base=1e4, factor=8.0).inv_freq
    assert ROPE_SCALINGS["default"].fit(lin, dim=128, base=None, tol=1e-6) is None
    assert ROPE_SCALINGS["ntk"].fit(lin, dim=128, base=None, tol=1e-6) is None  # needs base
    assert ROPE_SCALINGS["yarn"].fit is None


# ----------------------------------------------------------------------------- bad input


def test_negative_mscale_is_refused_not_a_negative_attention_factor():
    with pytest.raises(ValueError, match="mscale must be >= 0"):
        yarn_attention_scaling(factor=40.0, mscale=-20.0, mscale_all_dim=1.0)
    with pytest.raises(ValueError, match="mscale_all_dim must be >= 0"):
        ROPE_SCALINGS["yarn"](
            dim=8, factor=40.0, original_max_position=16, mscale=1.0, mscale_all_dim=-3.0
        )


@pytest.mark.parametrize("value", [0.0, -1.0])
def test_non_positive_attention_factor_is_refused(value):
    with pytest.raises(ValueError, match="attention_factor must be positive"):
        ROPE_SCALINGS["yarn"](dim=8, factor=2.0, original_max_position=16, attention_factor=value)
    with pytest.raises(ValueError, match="attention_factor must be positive"):
        ROPE_SCALINGS["longrope"](
            dim=8,
            short_factor=[1] * 4,
            long_factor=[1] * 4,
            original_max_position=16,
            attention_factor=value,
        )


def test_overflowing_bases_name_the_argument():
    with pytest.raises(ValueError, match=r"factor=1e\+200 is too large"):
        ntk_base(dim=4, factor=1e200)
    with pytest.raises(ValueError, match="seq_len must be at most"):
        dynamic_ntk_base(dim=8, factor=2.0, max_position=16, seq_len=10**400)
    with pytest.raises(ValueError, match=r"seq_len=\d+ is too large"):
        dynamic_ntk_base(dim=4, factor=1e150, max_position=1, seq_len=2**31)
    with pytest.raises(ValueError, match=r"alpha=1e\+200 is too large"):
        ROPE_SCALINGS["ntk_alpha"](dim=4, alpha=1e200)


def test_huge_dims_are_refused_before_any_allocation():
    for name in ROPE_SCALINGS:
        with pytest.raises(ValueError, match=f"dim must be at most {MAX_DIM}"):
            ROPE_SCALINGS[name](dim=10**9, **ARGS[name])


@pytest.mark.parametrize("value", [8.0, True, "8"])
def test_integer_arguments_follow_check_positive_int(value):
    from refimpl._checks import check_positive_int

    with pytest.raises(TypeError):
        check_positive_int(value, "x")
    with pytest.raises(TypeError, match="original_max_position must be an integer"):
        ROPE_SCALINGS["yarn"](dim=8, factor=2.0, original_max_position=value)
    with pytest.raises(TypeError, match="max_position must be an integer"):
        ROPE_SCALINGS["dynamic"](dim=8, factor=2.0, max_position=value)


def test_booleans_are_not_numbers():
    with pytest.raises(TypeError, match="factor must be a real number"):
        ROPE_SCALINGS["linear"](dim=8, factor=True)
    with pytest.raises(TypeError, match="original_max_position must be an integer"):
        longrope_attention_scaling(factor=2.0, original_max_position=True)
    with pytest.raises(TypeError, match="alpha must be a real number"):
        ROPE_SCALINGS["ntk_alpha"](dim=8, alpha=True)


def test_longrope_with_original_context_one_is_refused_not_divided_by_zero():
    with pytest.raises(ValueError, match="original_max_position must be at least 2"):
        longrope_attention_scaling(factor=4.0, original_max_position=1)
    with pytest.raises(ValueError, match="original_max_position must be at least 2"):
        ROPE_SCALINGS["longrope"](
            dim=8, short_factor=[1] * 4, long_factor=[1] * 4, original_max_position=1, factor=2.0
        )
    # defined where no logarithm is divided: s <= 1
    assert longrope_attention_scaling(factor=1.0, original_max_position=1) == 1.0


def test_lengths_above_the_limit_are_refused():
    with pytest.raises(ValueError, match="max_position must be at most"):
        ROPE_SCALINGS["dynamic"](dim=8, factor=2.0, max_position=MAX_POSITION + 1)


def test_proportional_arguments_are_checked():
    with pytest.raises(ValueError, match=r"partial_rotary_factor must be in \[0, 1\]"):
        ROPE_SCALINGS["proportional"](dim=8, partial_rotary_factor=1.5)
    with pytest.raises(ValueError, match="factor must be >= 1"):
        ROPE_SCALINGS["proportional"](dim=8, factor=0.5)


def test_float32_emulation_refuses_a_base_beyond_float32_without_a_warning():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match="exceeds float32's range"):
            ROPE_SCALINGS["default"].float32(dim=8, base=1e300)


@pytest.mark.parametrize(
    ("name", "kwargs", "word"),
    [
        ("yarn", dict(attention_factor=1.0, mscale=True), "mscale"),
        ("yarn", dict(attention_factor=1.0, mscale_all_dim=float("nan")), "mscale_all_dim"),
        ("yarn", dict(attention_factor=1.0, mscale=-1.0), "mscale"),
        ("longrope", dict(attention_factor=1.0, factor=True), "factor"),
        ("longrope", dict(attention_factor=1.0, max_position=8.5), "max_position"),
    ],
)
def test_parameters_are_checked_even_when_an_explicit_attention_factor_wins(name, kwargs, word):
    base_args = {k: v for k, v in ARGS[name].items() if k not in ("factor", "seq_len")}
    if name == "yarn":
        base_args["factor"] = 4.0
    with pytest.raises((ValueError, TypeError), match=word):
        ROPE_SCALINGS[name](dim=DIM, base=BASE, **{**base_args, **kwargs})
