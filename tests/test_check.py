"""check_rope: a gallery of broken implementations, each diagnosed; correct ones pass.

Every broken implementation is written here from the formulas (one injected bug each), never
by calling the checker's internals.
"""

import types

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import refimpl
from refimpl.check import DEFAULT_TOLERANCE, PRECISIONS, RopeReport, check_rope

D = 64
BASE = 10000.0
YARN_FACTOR = 8.0
YARN_MSCALE = 0.1 * np.log(YARN_FACTOR) + 1.0


def bf16(x):
    """Round to bfloat16 (nearest even) via ml_dtypes, a second opinion independent of refimpl."""
    ml_dtypes = pytest.importorskip("ml_dtypes")
    return np.asarray(x, np.float64).astype(ml_dtypes.bfloat16).astype(np.float64)


def fp16(x):
    return np.asarray(x, np.float64).astype(np.float16).astype(np.float64)


def rotate(x, angles, *, pairing="half", scale=1.0, features=None):
    """Rotate the pairs of ``features`` (default: all) of x (seq, d) by ``angles`` (seq, r/2)."""
    x = np.asarray(x, dtype=np.float64)
    out = x.copy()
    idx = np.arange(x.shape[-1]) if features is None else np.asarray(features)
    r = len(idx)
    if pairing == "half":
        a, b = idx[: r // 2], idx[r // 2 :]
    else:
        a, b = idx[0::2], idx[1::2]
    c, s = scale * np.cos(angles), scale * np.sin(angles)
    out[:, a] = x[:, a] * c - x[:, b] * s
    out[:, b] = x[:, b] * c + x[:, a] * s
    return out


def theta(d=D, base=BASE):
    return base ** (-np.arange(0, d, 2) / d)


# --- the gallery ---------------------------------------------------------------------------


def sign_flipped(x, p):
    return rotate(x, -np.outer(p, theta()))


def pairing_swapped(x, p):  # interleaved where half-split is expected
    return rotate(x, np.outer(p, theta()), pairing="interleaved")


def index_from_one(x, p):
    i = np.arange(1, D // 2 + 1)
    return rotate(x, np.outer(p, BASE ** (-2 * i / D)))


def base_wrong(x, p):
    return rotate(x, np.outer(p, theta(base=500000.0)))


def exponent_over_d(x, p):  # frequencies spread over d features instead of d/2 pairs
    return rotate(x, np.outer(p, BASE ** (-np.arange(D // 2) / D)))


def bf16_angles(x, p):
    return rotate(x, bf16(np.outer(p, theta())))


def fp16_angles(x, p):
    return rotate(x, fp16(np.outer(p, theta())))


def bf16_inv_freq(x, p):
    return rotate(x, np.outer(p, bf16(theta())))


def bf16_tables(x, p):
    ang = np.outer(p, theta())
    x = np.asarray(x, np.float64)
    c, s = bf16(np.cos(ang)), bf16(np.sin(ang))
    h = D // 2
    return np.concatenate([x[:, :h] * c - x[:, h:] * s, x[:, h:] * c + x[:, :h] * s], axis=1)


def yarn_scaling_missing(x, p):
    return rotate(x, np.outer(p, theta()))


def yarn_scaling_twice(x, p):
    return rotate(x, np.outer(p, theta()), scale=YARN_MSCALE**2)


def positions_plus_one(x, p):
    return rotate(x, np.outer(np.asarray(p) + 1, theta()))


def partial_wrong_features(x, p):  # rotates the LAST 32 features instead of the first
    return rotate(x, np.outer(p, theta(32)), features=np.arange(32, 64))


def partial_wrong_denominator(x, p):  # rotary 32 of 64, exponent 2i/64 instead of 2i/32
    return rotate(x, np.outer(p, BASE ** (-np.arange(0, 32, 2) / 64)), features=np.arange(32))


def row_index_positions(x, p):  # ignores positions, uses arange(seq)
    return rotate(x, np.outer(np.arange(len(p)), theta()))


def mixed_layout(x, p):  # rotate_half with interleaved (repeated) angles
    ang = np.repeat(np.outer(p, theta()), 2, axis=1)  # (seq, d): f0, f0, f1, f1, ...
    x = np.asarray(x, np.float64)
    h = D // 2
    rot_half = np.concatenate([-x[:, h:], x[:, :h]], axis=1)
    return x * np.cos(ang) + rot_half * np.sin(ang)


def not_linear(x, p):
    return np.tanh(refimpl.apply_rope(x, p))


def float32_pipeline(x, p):  # like transformers: float32 positions, inv_freq and angles
    ang = np.outer(np.asarray(p, np.float32), theta().astype(np.float32)).astype(np.float32)
    return rotate(x, ang.astype(np.float64))


EXPECT = {"base": BASE, "pairing": "half"}


def _check(fn, **kw):
    kwargs = dict(EXPECT)
    kwargs.update(kw)
    return check_rope(fn, dim=D, **kwargs)


def _has(rep, *words):
    text = " ".join(rep.findings).lower()
    return all(w.lower() in text for w in words)


def test_sign_flipped():
    rep = _check(sign_flipped)
    assert not rep.ok and rep.direction == -1
    assert _has(rep, "wrong way", "flip the sign of sin")


def test_pairing_swapped():
    rep = _check(pairing_swapped)
    assert not rep.ok and rep.pairing == "interleaved"
    assert _has(rep, "pairing='half' was expected", "interleaved_to_half_weights")
    # the other way round suggests the inverse permutation
    rep2 = _check(refimpl.apply_rope, pairing="interleaved")
    assert not rep2.ok and _has(rep2, "half_to_interleaved_weights")


def test_index_counted_from_one():
    rep = _check(index_from_one)
    assert not rep.ok and rep.index_origin == 1 and rep.base == BASE
    assert _has(rep, "counted from 1")
    assert rep.precision == "float64"  # the bug is in the formula, not the arithmetic
    # without an expected base the checker still flags the missing 1 rad/token pair
    assert not check_rope(index_from_one, dim=D).ok


def test_base_wrong():
    rep = _check(base_wrong)
    assert not rep.ok and rep.base == 500000.0
    assert _has(rep, "fit base 500000, not 10000", "rope_theta")


def test_exponent_over_d_instead_of_pairs():
    rep = _check(exponent_over_d)
    assert not rep.ok and rep.base == pytest.approx(100.0)
    assert _has(rep, "sqrt(10000)", "i/d")


def test_bf16_angles():
    rep = _check(bf16_angles)
    assert not rep.ok and rep.precision == "bfloat16 angles"
    assert _has(rep, "float32")
    assert rep.relative_position_error > 1e-3


def test_fp16_angles():
    rep = _check(fp16_angles)
    assert not rep.ok and rep.precision == "float16 angles"


def test_bf16_inv_freq():
    rep = _check(bf16_inv_freq)
    assert not rep.ok and rep.precision == "bfloat16 inv_freq"
    assert _has(rep, "keep inv_freq in float32")
    # bf16 inv_freq keeps scores relative (the frequencies are just different)
    assert rep.relative_position_error < 1e-10


def test_bf16_tables():
    rep = _check(bf16_tables)
    assert not rep.ok and rep.precision == "bfloat16 tables"
    assert 1e-3 < rep.max_error < 1e-2  # constant error, no growth with the position


def test_yarn_attention_scaling_missing():
    rep = _check(yarn_scaling_missing, attention_scaling=YARN_MSCALE)
    assert not rep.ok and rep.attention_scaling_applied == "none"
    assert _has(rep, "missing")


def test_yarn_attention_scaling_twice():
    rep = _check(yarn_scaling_twice, attention_scaling=YARN_MSCALE)
    assert not rep.ok and rep.attention_scaling_applied == "twice"
    assert rep.attention_scaling == pytest.approx(YARN_MSCALE**2)
    assert _has(rep, "applied twice")


def test_yarn_attention_scaling_once_passes():
    fn = lambda x, p: refimpl.apply_rope(x, p, attention_scaling=YARN_MSCALE)  # noqa: E731
    rep = _check(fn, attention_scaling=YARN_MSCALE)
    assert rep.ok and rep.attention_scaling_applied == "once", str(rep)


def test_positions_offset_by_one():
    rep = _check(positions_plus_one)
    assert not rep.ok and rep.position_offset == 1.0
    assert _has(rep, "counted from 1", "position_ids")


def test_partial_rotation_over_wrong_features():
    rep = _check(partial_wrong_features)
    assert not rep.ok and rep.rotary_dim == 32
    assert list(rep.rotated_features) == list(range(32, 64))
    assert _has(rep, "not the first 32")


def test_partial_rotation_wrong_denominator():
    rep = _check(partial_wrong_denominator, rotary_dim=32)
    assert not rep.ok and _has(rep, "head dim 64, not the rotary width 32")


def test_partial_rotary_width_mismatch():
    rep = _check(lambda x, p: refimpl.apply_rope(x, p, rotary_dim=16), rotary_dim=32)
    assert not rep.ok and _has(rep, "rotates 16 features but rotary_dim=32")


def test_positions_ignored():
    rep = _check(row_index_positions)
    assert not rep.ok and _has(rep, "ignores the positions")


def test_mixed_layout_is_not_a_rotation():
    rep = _check(mixed_layout)
    assert not rep.ok and _has(rep, "not rotations", "same pairing as rotate_half")


def test_not_linear():
    rep = _check(not_linear)
    assert not rep.ok and _has(rep, "not linear")


def test_report_str_is_readable():
    rep = _check(sign_flipped)
    text = str(rep)
    assert text.startswith("RoPE check: FAIL")
    for key in ("pairing", "direction", "base", "precision", "Findings:", "wrong way"):
        assert key in text
    assert str(_check(refimpl.apply_rope)).startswith("RoPE check: PASS")
    assert isinstance(rep, RopeReport)
    assert rep.precision in PRECISIONS


# --- correct implementations pass ----------------------------------------------------------


@pytest.mark.parametrize("base", [10000.0, 500000.0, 1000000.0, 100.0])
@pytest.mark.parametrize("pairing", ["half", "interleaved"])
def test_refimpl_passes(base, pairing):
    fn = lambda x, p: refimpl.apply_rope(x, p, base=base, pairing=pairing)  # noqa: E731
    rep = check_rope(fn, dim=D, base=base, pairing=pairing)
    assert rep.ok, str(rep)
    assert rep.base == base and rep.pairing == pairing and rep.index_origin == 0
    assert rep.precision == "float64" and rep.position_offset == 0.0
    np.testing.assert_allclose(rep.inv_freq, refimpl.inv_freq(D, base), rtol=1e-12)
    # and without any expectation: "a correct RoPE of some base and pairing"
    assert check_rope(fn, dim=D).ok


@pytest.mark.parametrize("rotary_dim", [16, 32, 48])
def test_partial_refimpl_passes(rotary_dim):
    fn = lambda x, p: refimpl.apply_rope(x, p, rotary_dim=rotary_dim)  # noqa: E731
    rep = check_rope(fn, dim=D, base=BASE, rotary_dim=rotary_dim)
    assert rep.ok, str(rep)
    assert rep.rotary_dim == rotary_dim and list(rep.rotated_features) == list(range(rotary_dim))


def test_complex_form_passes_as_interleaved():
    th = refimpl.inv_freq(D)
    rep = check_rope(lambda x, p: refimpl.apply_rope_complex(x, p, th), dim=D, base=BASE)
    assert rep.ok and rep.pairing == "interleaved"


def test_float32_pipeline_passes_with_default_tolerance():
    rep = _check(float32_pipeline)
    assert rep.ok, str(rep)
    assert rep.precision == "float32"
    assert 1e-6 < rep.max_error < 1e-2  # at 32768 tokens the float32 angle error shows
    # a tolerance tighter than float32 fails it and names the precision
    strict = _check(float32_pipeline, tolerance=1e-12)
    assert not strict.ok and _has(strict, "float32")


def test_float32_input_dtype_function():
    fn = lambda x, p: refimpl.apply_rope(np.asarray(x, np.float32), p)  # noqa: E731
    rep = _check(fn)
    assert rep.ok and rep.precision == "float32"


def test_linear_scaling_identified():
    th = refimpl.inv_freq(D) / 4.0
    rep = check_rope(lambda x, p: refimpl.apply_rope(x, p, inv_freq=th), dim=D)
    assert rep.scaling == "linear" and rep.scaling_params == {"factor": 4.0}
    assert rep.base == BASE


def test_expected_spec_duck_typed():
    th = refimpl.inv_freq(D) / 4.0
    spec = types.SimpleNamespace(
        dim=D, rotary_dim=D, base=BASE, rope_type="linear", inv_freq=th, pairing="half",
        attention_scaling=1.0,
    )  # fmt: skip
    good = check_rope(lambda x, p: refimpl.apply_rope(x, p, inv_freq=th), dim=D, expected=spec)
    assert good.ok, str(good)
    bad = check_rope(refimpl.apply_rope, dim=D, expected=spec)
    assert not bad.ok and _has(bad, "frequencies")


@given(
    base=st.floats(min_value=200.0, max_value=2e6),
    half=st.integers(min_value=4, max_value=40),
    pairing=st.sampled_from(["half", "interleaved"]),
)
def test_any_base_and_width_is_recovered(base, half, pairing):
    d = 2 * half
    fn = lambda x, p: refimpl.apply_rope(x, p, base=base, pairing=pairing)  # noqa: E731
    rep = check_rope(fn, dim=d)
    assert rep.ok, str(rep)
    assert rep.pairing == pairing
    assert rep.base == pytest.approx(base, rel=2e-3)
    np.testing.assert_allclose(rep.inv_freq, refimpl.inv_freq(d, base), rtol=1e-9)


@given(offset=st.integers(min_value=-5, max_value=5))
def test_any_integer_offset_is_measured(offset):
    fn = lambda x, p: refimpl.apply_rope(x, np.asarray(p) + offset)  # noqa: E731
    rep = check_rope(fn, dim=16, base=BASE)
    assert rep.position_offset == offset
    assert rep.ok == (offset == 0)


def test_default_tolerance_value():
    assert DEFAULT_TOLERANCE == 2.0**-20


# --- argument errors -----------------------------------------------------------------------


def test_errors():
    with pytest.raises(TypeError, match="fn must be callable"):
        check_rope(3, dim=8)
    with pytest.raises(ValueError, match="dim must be even"):
        check_rope(refimpl.apply_rope, dim=7)
    with pytest.raises(ValueError, match="base must be greater than 1"):
        check_rope(refimpl.apply_rope, dim=8, base=1.0)
    with pytest.raises(ValueError, match="pairing must be one of"):
        check_rope(refimpl.apply_rope, dim=8, pairing="neox")
    with pytest.raises(ValueError, match="positions must include 0 and 1"):
        check_rope(refimpl.apply_rope, dim=8, positions=[2, 3])
    with pytest.raises(ValueError, match="rotary_dim=16 exceeds dim=8"):
        check_rope(refimpl.apply_rope, dim=8, rotary_dim=16)
    with pytest.raises(ValueError, match="tolerance must be positive"):
        check_rope(refimpl.apply_rope, dim=8, tolerance=0.0)
    with pytest.raises(ValueError, match="attention_scaling must be positive"):
        check_rope(refimpl.apply_rope, dim=8, attention_scaling=-1.0)
    with pytest.raises(ValueError, match="backend must be one of"):
        check_rope(refimpl.apply_rope, dim=8, backend="jax")
    with pytest.raises(ValueError, match="fn must return an array of the input's shape"):
        check_rope(lambda x, p: x[:, :4], dim=8)
    with pytest.raises(ValueError, match="fn returned NaN or inf"):
        check_rope(lambda x, p: x * np.nan, dim=8)
    with pytest.raises(TypeError, match="expected must be a RopeSpec"):
        check_rope(refimpl.apply_rope, dim=8, expected=object())
    spec = types.SimpleNamespace(dim=16, rotary_dim=16, inv_freq=np.ones(8), pairing="half")
    with pytest.raises(ValueError, match="dim=8 differs from the expected spec's dim=16"):
        check_rope(refimpl.apply_rope, dim=8, expected=spec)


def test_reciprocal_frequencies_alias():
    fn = lambda x, p: refimpl.apply_rope(x, p, inv_freq=BASE ** (np.arange(0, D, 2) / D))  # noqa: E731
    rep = _check(fn)
    assert not rep.ok and _has(rep, "base**(+2i/d) gives the reciprocals")
    assert rep.precision == "undetermined"


def test_integer_division_exponent_gives_one_frequency():
    fn = lambda x, p: refimpl.apply_rope(x, p, inv_freq=BASE ** (-(np.arange(0, D, 2) // D)))  # noqa: E731
    rep = _check(fn)
    assert not rep.ok and _has(rep, "same frequency 1 rad/token", "integer division")


# --- scaling families: matched against the registry of refimpl.scaling ---------------------


def _fake_scaling_module():
    """A stand-in registry with the contract of refimpl.scaling.ROPE_SCALINGS: keyword-only
    fn(*, dim, base, factor, original_max_position) -> (inv_freq, attention_scaling)."""

    def by_parts(*, dim, base, factor, original_max_position):
        theta = refimpl.inv_freq(dim, base)
        slow = 2 * np.pi / theta > original_max_position / 8  # long wavelengths interpolated
        inv = np.where(slow, theta / factor, theta)
        return types.SimpleNamespace(inv_freq=inv, attention_scaling=0.1 * np.log(factor) + 1)

    return types.SimpleNamespace(ROPE_SCALINGS={"by_parts": by_parts})


def test_scaling_family_matched_and_its_attention_factor_expected(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "refimpl.scaling", _fake_scaling_module())
    monkeypatch.setattr(refimpl, "scaling", sys.modules["refimpl.scaling"], raising=False)
    fam = sys.modules["refimpl.scaling"].ROPE_SCALINGS["by_parts"]
    res = fam(dim=D, base=BASE, factor=16.0, original_max_position=4096)
    right = lambda x, p: refimpl.apply_rope(  # noqa: E731
        x, p, inv_freq=res.inv_freq, attention_scaling=res.attention_scaling
    )
    rep = check_rope(right, dim=D)
    assert rep.ok, str(rep)
    assert rep.scaling == "by_parts"
    assert rep.scaling_params == {"factor": 16.0, "original_max_position": 4096}
    assert rep.attention_scaling_applied == "once"
    # the same frequencies without the family's attention factor: blind, the measured
    # factor is reported (not judged); with the factor expected, it is missing
    missing = lambda x, p: refimpl.apply_rope(x, p, inv_freq=res.inv_freq)  # noqa: E731
    rep = check_rope(missing, dim=D)
    assert rep.ok and rep.attention_scaling_applied == "none", str(rep)
    assert _has(rep, "by 1 (measured)", "or expected= to judge it")
    rep = check_rope(missing, dim=D, attention_scaling=res.attention_scaling)
    assert not rep.ok and _has(rep, "is missing")


def test_errors_raised_by_fn_propagate():
    def broken(x, p):
        raise RuntimeError("my kernel failed")

    with pytest.raises(RuntimeError, match="my kernel failed"):
        check_rope(broken, dim=8)


def test_ntk_base_change_identified():
    ntk_base = BASE * 8.0 ** (D / (D - 2))
    fn = lambda x, p: refimpl.apply_rope(x, p, base=ntk_base)  # noqa: E731
    rep = check_rope(fn, dim=D)
    assert rep.ok and rep.scaling == "ntk"
    assert rep.scaling_params == {"factor": 8.0, "original_base": BASE}
    # with the unscaled base expected, the verdict fails and names the NTK change
    rep = check_rope(fn, dim=D, base=BASE)
    assert not rep.ok and _has(rep, "NTK base change by factor 8")
    # a plain common base is not mistaken for a scaled one
    assert check_rope(lambda x, p: refimpl.apply_rope(x, p, base=5e5), dim=D).scaling == "none"


# --- expected configurations from a model config (refimpl.config, floor 4) -----------------

LLAMA_LIKE = {
    "hidden_size": 128,
    "num_attention_heads": 2,
    "head_dim": 64,
    "max_position_embeddings": 32768,
    "rope_theta": 500000.0,
}
YARN_LIKE = dict(
    LLAMA_LIKE,
    rope_theta=10000.0,
    rope_scaling={"rope_type": "yarn", "factor": 8.0, "original_max_position_embeddings": 4096},
)


def test_expected_from_config():
    config = pytest.importorskip("refimpl.config", reason="refimpl.config not present yet")
    spec = config.rope_from_config(LLAMA_LIKE)
    good = lambda x, p: refimpl.apply_rope(x, p, base=500000.0)  # noqa: E731
    assert check_rope(good, dim=64, expected=spec).ok
    assert check_rope(good, dim=64, expected=LLAMA_LIKE).ok  # a dict goes through the parser
    rep = check_rope(refimpl.apply_rope, dim=64, expected=LLAMA_LIKE)
    assert not rep.ok and _has(rep, "fit base 10000, not 500000")
    rep = check_rope(refimpl.apply_rope, dim=64, expected=YARN_LIKE)  # scaling forgotten
    assert not rep.ok and _has(rep, "unscaled ones of base 10000", "'yarn'")


def test_yarn_config_attention_scaling_and_family():
    config = pytest.importorskip("refimpl.config", reason="refimpl.config not present yet")
    spec = config.rope_from_config(YARN_LIKE)
    assert spec.attention_scaling == pytest.approx(YARN_MSCALE)
    right = lambda x, p: spec.apply(x, p)  # noqa: E731
    rep = check_rope(right, dim=64, expected=spec)
    assert rep.ok and rep.attention_scaling_applied == "once", str(rep)
    # without expectations the family and its factor are recognised from the frequencies
    rep = check_rope(right, dim=64)
    assert rep.ok and rep.scaling == "yarn", str(rep)
    assert rep.scaling_params["factor"] == 8.0
    assert rep.scaling_params["original_max_position"] == 4096
    # the same frequencies without the attention factor, and with it twice
    th = np.asarray(spec.inv_freq)
    missing = lambda x, p: refimpl.apply_rope(x, p, inv_freq=th)  # noqa: E731
    twice = lambda x, p: refimpl.apply_rope(x, p, inv_freq=th, attention_scaling=YARN_MSCALE**2)  # noqa: E731
    assert check_rope(missing, dim=64, expected=spec).attention_scaling_applied == "none"
    assert check_rope(missing, dim=64).attention_scaling_applied == "none"  # from the family
    assert check_rope(twice, dim=64, expected=spec).attention_scaling_applied == "twice"


def test_llama3_family_recognised():
    scaling = pytest.importorskip("refimpl.scaling", reason="refimpl.scaling not present yet")
    res = scaling.ROPE_SCALINGS["llama3"](
        dim=64, base=500000.0, factor=8.0, original_max_position=8192
    )
    fn = lambda x, p: refimpl.apply_rope(x, p, inv_freq=res.inv_freq)  # noqa: E731
    rep = check_rope(fn, dim=64)
    assert rep.ok and rep.scaling == "llama3" and rep.base == 500000.0, str(rep)


def test_rotation_error_measures_orthogonality():
    assert _check(refimpl.apply_rope).rotation_error < 1e-14
    assert 1e-4 < _check(bf16_tables).rotation_error < 1e-2  # rounded tables: nearly a rotation
    assert _check(mixed_layout).rotation_error > 5e-2


def test_short_cache_is_probed_within_its_length():
    cos, sin = refimpl.cos_sin(np.arange(4096), dim=D)  # a table for 4096 positions

    def cached(x, p):
        c, s = cos[np.asarray(p)], sin[np.asarray(p)]  # IndexError beyond 4095
        h = D // 2
        return np.concatenate([x[:, :h] * c - x[:, h:] * s, x[:, h:] * c + x[:, :h] * s], 1)

    rep = _check(cached)
    assert rep.ok and _has(rep, "only positions below 4096 were probed")
    rep = _check(cached, positions=[0, 1, 2, 5000])  # chosen by the caller: a failing verdict
    assert not rep.ok and _has(rep, "IndexError", "size its cache")


def test_custom_positions():
    rep = _check(refimpl.apply_rope, positions=[0, 1, 2, 4, 8, 16, 3000])
    assert rep.ok and rep.base == BASE
    rep = _check(bf16_angles, positions=[0, 1, 2, 4, 300, 1000, 3000])
    assert not rep.ok and rep.precision == "bfloat16 angles"


def test_square_root_of_a_common_base_is_pointed_out():
    rep = check_rope(exponent_over_d, dim=D)  # no base expected: a valid RoPE of base 100
    assert rep.ok and rep.base == pytest.approx(100.0)
    assert _has(rep, "sqrt(10000)", "pass base=")


def test_arbitrary_frequencies_fail_without_expectation_and_pass_with_it():
    th = np.sort(np.random.default_rng(0).uniform(1e-4, 1.0, D // 2))[::-1]
    fn = lambda x, p: refimpl.apply_rope(x, p, inv_freq=th)  # noqa: E731
    rep = check_rope(fn, dim=D)
    assert not rep.ok and rep.scaling == "unknown" and _has(rep, "not a RoPE of any base")
    np.testing.assert_allclose(rep.inv_freq, th, rtol=1e-9)  # still read back exactly
    spec = types.SimpleNamespace(
        dim=D, rotary_dim=D, inv_freq=th, pairing="half", attention_scaling=1.0
    )
    assert check_rope(fn, dim=D, expected=spec).ok
