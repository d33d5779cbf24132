"""numerics: oracle, ulp errors, rounding, emulated pipelines, error model, relative drift."""

from fractions import Fraction

import ml_dtypes
import mpmath
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from refimpl import cos_sin
from refimpl.numerics import (
    FORMATS,
    PIPELINES,
    cos_sin_bf16_angles,
    cos_sin_recurrence,
    cos_sin_transformers_float32,
    error_bound,
    oracle_cos_sin,
    pipeline_cos_sin,
    relative_drift,
    round_to,
    transformers_inv_freq_float32,
    ulp_error,
)

# Stated looseness of the error model: on the samples below, the largest measured error is
# at least 1/LOOSENESS of the largest predicted bound (and never above it).
LOOSENESS = 16.0


# ------------------------------------------------------------------------------ oracle
def test_oracle_matches_mpmath_at_higher_precision():
    c, s = oracle_cos_sin([1, 12345, 2**30], dim=8, base=500000.0)
    with mpmath.workdps(100):
        for r, m in enumerate([1, 12345, 2**30]):
            for i in range(4):
                t = mpmath.mpf(500000) ** (-mpmath.mpf(2 * i) / 8)
                assert c[r, i] == float(mpmath.cos(m * t))
                assert s[r, i] == float(mpmath.sin(m * t))


def test_oracle_rounds_to_nearest():
    # cos(1) = 0.54030230586813971740..., float64 neighbours differ in the last digit
    c, _ = oracle_cos_sin([1], [1.0])
    assert (
        Fraction(float(c[0, 0])) - Fraction("0.5403023058681397174009366074429766")
        < Fraction(2) ** -54
    )
    assert c[0, 0] == 0.5403023058681398


def test_oracle_pairs_select_columns():
    full = oracle_cos_sin([3, 70], dim=8)[0]
    part = oracle_cos_sin([3, 70], dim=8, pairs=[3, 1])[0]
    np.testing.assert_array_equal(part, full[:, [3, 1]])


def test_oracle_errors():
    with pytest.raises(ValueError, match="dps must be at least 20"):
        oracle_cos_sin([1], dim=4, dps=15)
    with pytest.raises(TypeError, match="either inv_freq or dim"):
        oracle_cos_sin([1])
    with pytest.raises(ValueError, match="inv_freq has 2 entries but dim=8"):
        oracle_cos_sin([1], [1.0, 0.1], dim=8)
    with pytest.raises(ValueError, match=r"pairs must lie in \[0, 1\]"):
        oracle_cos_sin([1], dim=4, pairs=[2])
    with pytest.raises(TypeError, match="pairs must be a 1-D array of integer"):
        oracle_cos_sin([1], dim=4, pairs=[0.5])


# ------------------------------------------------------------------------------ ulp_error
@given(st.floats(1e-300, 1e300), st.integers(-3, 3))
def test_ulp_error_counts_float_steps(x, steps):
    y = x
    for _ in range(abs(steps)):
        y = np.nextafter(y, np.inf if steps > 0 else -np.inf)
    err = ulp_error([y], [x])[0]
    if steps >= 0 or np.spacing(np.nextafter(x, -np.inf)) == np.spacing(x):
        assert err == abs(steps)
    else:  # crossing a power of two downwards: steps below are half as large
        assert err in (abs(steps), abs(steps) - 0.5, abs(steps) - 1.0, abs(steps) - 1.5)


def test_ulp_error_in_float32_units():
    assert ulp_error(np.float32([1 + 2**-23]), np.float32([1.0]))[0] == 1.0


def test_ulp_error_errors():
    with pytest.raises(ValueError, match="same shape"):
        ulp_error([1.0, 2.0], [1.0])
    with pytest.raises(ValueError, match="exact must contain only finite"):
        ulp_error([1.0], [np.nan])


# ------------------------------------------------------------------------------ round_to
def _exact_round(x: float, fmt: str) -> float:
    """Round-to-nearest-even with exact rational arithmetic (slow, independent)."""
    p, emin, emax = FORMATS[fmt]
    if x == 0:
        return x
    fx = Fraction(x)
    e = max(abs(fx).numerator.bit_length() - abs(fx).denominator.bit_length(), emin - 5)
    while Fraction(2) ** e > abs(fx):
        e -= 1
    while Fraction(2) ** (e + 1) <= abs(fx):
        e += 1
    q = Fraction(2) ** (max(e, emin) - p + 1)
    n = fx / q
    fl = n.numerator // n.denominator
    rem = n - fl
    if rem > Fraction(1, 2) or (rem == Fraction(1, 2) and fl % 2):
        fl += 1
    y = fl * q
    big = Fraction(2) ** emax * (2 - Fraction(2) ** (1 - p))
    if abs(y) > big:
        return float("inf") if y > 0 else float("-inf")
    return float(y)


finite64 = st.floats(allow_nan=False, allow_infinity=False, width=64)
interesting64 = st.one_of(
    finite64,
    st.floats(-70000.0, 70000.0),
    st.floats(-1e-6, 1e-6),
    st.floats(3e38, 4e38),
    st.floats(-1e-38, 1e-38),
)


@pytest.mark.parametrize("fmt", sorted(FORMATS))
@given(x=interesting64)
def test_round_to_is_a_single_rounding_to_nearest_even(fmt, x):
    got = round_to([x], fmt)[0]
    assert float(got) == _exact_round(x, fmt) or (got == 0 and _exact_round(x, fmt) == 0)


@given(hnp.arrays(np.float32, 16, elements=st.floats(width=32)))
def test_round_to_bfloat16_matches_ml_dtypes_on_float32(x):
    got = round_to(x, "bfloat16")
    ref = x.astype(ml_dtypes.bfloat16).astype(np.float32)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, ref)  # NaN positions equal too


@given(hnp.arrays(np.float32, 16, elements=st.floats(width=32, allow_nan=False)))
def test_bfloat16_bit_trick_equals_the_grid_rounding(x):
    np.testing.assert_array_equal(
        round_to(x, "bfloat16"), round_to(x.astype(np.float64), "bfloat16")
    )


@given(hnp.arrays(np.float64, 16, elements=st.floats(width=64)))
def test_round_to_float16_matches_numpy(x):
    got = round_to(x, "float16")
    assert got.dtype == np.float16
    with np.errstate(over="ignore"):
        ref = x.astype(np.float16)
    np.testing.assert_array_equal(got, ref)


@given(hnp.arrays(np.float64, 16, elements=st.floats(width=64)))
def test_round_to_float32_matches_numpy(x):
    with np.errstate(over="ignore"):
        ref = x.astype(np.float32)
    np.testing.assert_array_equal(round_to(x, "float32"), ref)


def test_round_to_special_values():
    x = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e300, -1e300, 65520.0, 65519.99]
    r16 = round_to(x, "float16")
    assert np.isnan(r16[0]) and r16[1] == np.inf and r16[2] == -np.inf
    assert r16[5] == np.inf and r16[6] == -np.inf
    assert r16[7] == np.inf and r16[8] == 65504.0  # the overflow threshold is 65520
    assert np.signbit(round_to([-0.0], "bfloat16")[0])
    # bfloat16: ties to even at 1 + 2^-8 (down) and 1 + 3 * 2^-8 (up)
    np.testing.assert_array_equal(
        round_to([1 + 2**-8, 1 + 3 * 2**-8], "bfloat16"), [1.0, 1 + 2**-6]
    )
    # float64 -> bfloat16 rounds once (ml_dtypes and torch go through float32 and round twice)
    assert round_to([1 + 2**-8 + 2**-40], "bfloat16")[0] == 1 + 2**-7
    assert np.isnan(round_to(np.float32([np.nan]), "bfloat16")[0])
    assert round_to(np.float32([3.4e38]), "bfloat16")[0] == np.inf


def test_round_to_errors():
    with pytest.raises(ValueError, match="fmt must be one of"):
        round_to([1.0], "float8")
    with pytest.raises(TypeError, match="x must be a real numeric array"):
        round_to(["a"], "float16")


# ------------------------------------------------------------------------------ pipelines
def test_transformers_inv_freq_float32_recipe():
    inv = transformers_inv_freq_float32(128, 10000.0)
    assert inv.dtype == np.float32 and inv[0] == 1.0
    exact = 10000.0 ** (-np.arange(0, 128, 2) / 128)
    np.testing.assert_allclose(inv, exact, rtol=2e-6)  # float32, exponent rounded first
    assert np.any(inv != exact.astype(np.float32))  # not simply the rounded exact value


def test_table_casts_hold_exact_low_precision_values():
    pos = np.arange(0, 5000, 7)
    c, s = pipeline_cos_sin("bfloat16-tables", pos, dim=64)
    np.testing.assert_array_equal(round_to(c, "bfloat16"), c)
    np.testing.assert_array_equal(round_to(s, "bfloat16"), s)
    c16, _ = pipeline_cos_sin("float16-tables", pos, dim=64)
    assert c16.dtype == np.float16
    c32, _ = cos_sin_transformers_float32(pos, dim=64)
    np.testing.assert_array_equal(round_to(c32, "bfloat16"), c)


def test_bf16_angles_alias_positions_above_256():
    c, _ = cos_sin_bf16_angles([256, 257, 258], dim=2)
    assert c[0, 0] == c[1, 0] and c[1, 0] != c[2, 0]  # 257 is not a bfloat16 number


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_recurrence_agrees_with_direct_tables_at_short_range(dtype):
    pos = np.array([0, 1, 2, 5, 4100, 9000, 3])
    c, s = cos_sin_recurrence(pos, dim=16, dtype=dtype)
    ce, se = cos_sin(pos, dim=16, method="accurate")
    tol = 1e-3 if dtype == "float32" else 1e-11
    np.testing.assert_allclose(c, ce, atol=tol)
    np.testing.assert_allclose(s, se, atol=tol)
    assert c.dtype == dtype


def test_recurrence_errors():
    with pytest.raises(ValueError, match="non-negative integers"):
        cos_sin_recurrence([1.5], dim=4)
    with pytest.raises(ValueError, match="non-negative integers"):
        cos_sin_recurrence([-1], dim=4)
    with pytest.raises(ValueError, match="dtype must be one of"):
        cos_sin_recurrence([1], dim=4, dtype="float16")


def test_pipeline_errors():
    with pytest.raises(ValueError, match="name must be one of"):
        pipeline_cos_sin("float8", [1], dim=4)
    with pytest.raises(ValueError, match="dim must be even"):
        pipeline_cos_sin("float64-tables", [1], dim=5)
    with pytest.raises(ValueError, match="table_dtype must be one of"):
        cos_sin_transformers_float32([1], dim=4, table_dtype="int8")


# ---------------------------------------------------------------------------- error model
MODEL_CASES = [(128, 10000.0), (128, 500000.0), (64, 1e6), (16, 2.0), (256, 1e7)]


def _measured(name, pos, dim, base):
    c, s = pipeline_cos_sin(name, pos, dim=dim, base=base)
    ce, se = cos_sin(pos, dim=dim, base=base, method="accurate")
    return np.maximum(np.abs(c.astype(float) - ce), np.abs(s.astype(float) - se))


def _sample(name, base, dim):
    rng = np.random.default_rng(int(base) + dim)
    top = 2**17 if name.endswith("recurrence") else 2**22
    if name.split("-")[0] in ("bfloat16", "float16") and not name.endswith("-tables"):
        top = 3000  # keep the bound below its cap of 2 so that tightness means something
    logs = np.round(np.logspace(0, np.log10(top - 1), 120))
    return np.unique(np.concatenate([[0], logs, rng.integers(0, top, 120)])).astype(float)


@pytest.mark.parametrize("name", sorted(set(PIPELINES) - {"accurate"}))
@pytest.mark.parametrize(("dim", "base"), MODEL_CASES)
def test_measured_errors_stay_under_the_predicted_bound(name, dim, base):
    pos = _sample(name, base, dim)
    err = _measured(name, pos, dim, base)
    bound = error_bound(name, pos, dim=dim, base=base)
    assert np.all(err <= bound)
    assert err.max() >= bound.max() / LOOSENESS  # and the bound is not loose


def test_accurate_bound_is_one_ulp_of_the_oracle():
    pos = np.array([3.0, 1e5 + 1, 2**31 - 1])
    c, _ = cos_sin(pos, dim=8, method="accurate")
    co, _ = oracle_cos_sin(pos, dim=8)
    assert np.all(np.abs(c - co) <= error_bound("accurate", pos, dim=8))


def test_float32_error_reaches_the_documented_size_near_one_million():
    # the measurement: about 5e-2 absolute error near m = 1e6 for transformers float32
    pos = np.arange(10**6 - 2000, 10**6, dtype=float)
    err = _measured("float32-pow", pos, 128, 10000.0)
    assert 1e-2 < err.max() < 0.2


def test_error_bound_errors():
    with pytest.raises(ValueError, match="name must be one of"):
        error_bound("fp8", [1], dim=4)


# ---------------------------------------------------------------------------- relative drift
QK = np.random.default_rng(3).standard_normal((2, 64))
Q, K = QK / np.linalg.norm(QK, axis=1, keepdims=True)


@given(m=st.integers(0, 10**7), r=st.integers(-1000, 1000))
def test_exact_tables_keep_the_relative_property(m, r):
    m = max(m, -r)
    assert relative_drift("accurate", [m], r, Q, K)[0] < 1e-14


def test_float32_drift_grows_with_position_and_bf16_breaks_it():
    near, far = np.arange(10.0, 210.0), np.arange(1e5, 1e5 + 200)
    f32_near = relative_drift("float32-pow", near, 7, Q, K).max()
    f32_far = relative_drift("float32-pow", far, 7, Q, K).max()
    assert f32_far > 10 * f32_near and f32_far > 1e-5
    bf16 = relative_drift("bfloat16-angles", np.arange(1000.0, 1200.0), 7, Q, K)
    assert bf16.max() > 1e-2


def test_bf16_inv_freq_is_shift_invariant_but_wrong():
    m = np.array([100.0, 1000.0, 5000.0])
    shift = relative_drift("bfloat16-frequencies", m, 2000, Q, K, against="shift")
    wrong = relative_drift("bfloat16-frequencies", m, 2000, Q, K, against="exact")
    assert shift.max() < 1e-5 < 1e-2 < wrong.max()


def test_bf16_rotated_vectors_set_a_floor():
    d = relative_drift("accurate", [10.0, 20.0], 1, Q, K, rotated_dtype="bfloat16")
    assert d.max() > 1e-4


def test_recurrence_drift():
    m = np.array([10.0, 20000.0])
    d = relative_drift("float32-recurrence", m, 5, Q, K)
    assert d[1] > d[0]


def test_relative_drift_errors():
    with pytest.raises(ValueError, match="same shape"):
        relative_drift("accurate", [1], 1, Q, K[:8])
    with pytest.raises(ValueError, match="non-negative"):
        relative_drift("accurate", [1], -5, Q, K)
    with pytest.raises(ValueError, match="against must be one of"):
        relative_drift("accurate", [1], 1, Q, K, against="both")
    with pytest.raises(ValueError, match="dim=32 entries"):
        relative_drift("accurate", [1], 1, Q, K, dim=32)


def _mp_round_int(v: int, bits: int) -> float:
    """The integer v rounded to ``bits`` significant bits by mpmath (nearest, ties to even)."""
    with mpmath.workprec(bits):
        return float(+mpmath.mpf(v))


# Integers next to a float32 rounding tie (where rounding through float64 first goes wrong)
# as well as anywhere in the int64 range beyond 2^53.
_near_ties = st.builds(
    lambda q, e, delta: ((2 * q + 1) << (e - 1)) + delta,
    st.integers(2**23, 2**24 - 1),
    st.integers(31, 39),
    st.integers(-(2**12), 2**12),
)


@given(st.one_of(st.integers(2**53 + 1, 2**63 - 1), _near_ties), st.sampled_from([1, -1]))
def test_round_to_rounds_huge_integers_once(v, sign):
    """int64 beyond 2^53 used to be rounded to float64 first and then again (double
    rounding): 2^53 + 2^29 + 1 gave 2^53 instead of 2^53 + 2^30."""
    x = np.array([sign * v], dtype=np.int64)
    assert round_to(x, "float32")[0] == _mp_round_int(sign * v, 24)
    assert round_to(x, "bfloat16")[0] == _mp_round_int(sign * v, 8)
    assert round_to(x, "float16")[0] == sign * np.inf


def test_round_to_double_rounding_regressions():
    assert round_to(np.array([2**53 + 2**29 + 1]), "float32")[0] == 2.0**53 + 2.0**30
    assert round_to([2**53 + 2**29 + 1], "float32")[0] == 2.0**53 + 2.0**30  # a list too
    assert round_to(np.array([2**53 + 2**29]), "float32")[0] == 2.0**53  # a tie: to even
    u = np.array([2**64 - 1, 2**63 + 2**39 + 1], dtype=np.uint64)
    assert round_to(u, "float32").tolist() == [2.0**64, 2.0**63 + 2.0**40]
    assert round_to(np.array([-(2**63)]), "bfloat16")[0] == -(2.0**63)
    with pytest.raises(TypeError, match="x must be a real numeric array"):
        round_to([1 + 2j], "float32")
    with pytest.raises(ValueError, match="x must be a rectangular array"):
        round_to([[1.0], [1.0, 2.0]], "float32")


def test_transformers_float32_forward_validates_its_frequencies():
    from refimpl.numerics import transformers_float32_forward as fwd

    for bad, rule in [
        ([np.nan, 0.1], "finite"),
        ([[1.0, 0.1]], "1 dimension"),
        ([1.0, -0.1], "non-negative"),
        ([], "must not be empty"),
        ([1e39], "finite in float32"),
    ]:
        with pytest.raises(ValueError, match=f"inv_freq32.*{rule}|inv_freq32 must {rule}"):
            fwd([0, 1], bad)
    for bad in (0.0, -1.0, np.nan):
        with pytest.raises(ValueError, match="attention_scaling"):
            fwd([0, 1], [1.0], attention_scaling=bad)
    with pytest.raises(TypeError, match="attention_scaling"):
        fwd([0, 1], [1.0], attention_scaling=True)
    # zero frequencies are legal: proportional RoPE's pass-through pairs
    c, s = fwd([0, 5, 70000], np.float32([1.0, 0.0]))
    np.testing.assert_array_equal(c[:, 1], 1.0)
    np.testing.assert_array_equal(s[:, 1], 0.0)
    assert c[1, 0] == np.float32(np.cos(5.0))


def test_recurrence_and_oracle_refuse_unbounded_work_up_front():
    from refimpl._checks import MAX_DPS, MAX_TABLE_ELEMENTS

    with pytest.raises(ValueError, match=f"positions: .*MAX_TABLE_ELEMENTS = {MAX_TABLE_ELEMENTS}"):
        cos_sin_recurrence([10**12], dim=8)
    with pytest.raises(ValueError, match=f"dps must be at most {MAX_DPS}"):
        oracle_cos_sin([1], dim=2, dps=10**6)
    with pytest.raises(TypeError, match="dps must be an integer"):
        oracle_cos_sin([1], dim=2, dps=50.0)
    with pytest.raises(ValueError, match="dim must be at most"):
        cos_sin([1], dim=10**6, method="accurate")
    c, _ = oracle_cos_sin([1], dim=2, dps=MAX_DPS)  # the limit itself is accepted
    assert ulp_error(c, np.cos([[1.0]]))[0, 0] <= 1.0
