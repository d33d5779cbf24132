"""Correctly rounded tables (``cos_sin(..., method="correct")``) against mpmath.

Every entry checked must *equal* the 50-digit oracle (the float64 nearest the exact value):
about 10^4 entries in all, with the hard cases (positions where cos or sin of a pair comes
closest to zero, tiny angles, positions at the angle limit, negative and fractional
positions), every scaling record's exact frequencies, the attention scaling folded in, the
fallback tiers forced, and the proved error bounds measured against 200-bit values. The whole
tables of d = 64..256 run against MPFR in ``make test-numerics`` (tests/numerics).
"""

from __future__ import annotations

from fractions import Fraction

import mpmath
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_exact import hard_positions

import refimpl
from refimpl import ROPE_SCALINGS, ExactFrequencies, _correct, cos_sin
from refimpl.numerics import _mpf_to_float, oracle_cos_sin

LIMIT = 2**31


def _assert_oracle(pos, dim=None, base=10000.0, inv_freq=None, pairs=None, scale=1.0, **kw):
    """cos_sin(method="correct") equals the oracle on the given pairs, bit for bit."""
    pos = np.asarray(pos, dtype=np.float64)
    c, s = cos_sin(pos, inv_freq, dim=dim, base=base, attention_scaling=scale, method="correct")
    oc, os_ = oracle_cos_sin(pos, inv_freq, dim=dim, base=base, pairs=pairs, **kw)
    cols = slice(None) if pairs is None else np.asarray(pairs)
    if scale != 1.0:  # the oracle's values times the scale, rounded once
        oc, os_ = _oracle_scaled(pos, dim, base, inv_freq, pairs, scale)
    bad = (c[:, cols] != oc) | (s[:, cols] != os_)
    assert not bad.any(), (pos[np.nonzero(bad)[0][:3]], np.nonzero(bad)[1][:3])
    return c, s


def _theta_mp(dim, base, inv_freq, i):
    if inv_freq is not None:
        return mpmath.mpf(float(np.asarray(inv_freq)[i]))
    return mpmath.mpf(base) ** (-mpmath.mpf(2 * i) / dim)


def _oracle_scaled(pos, dim, base, inv_freq, pairs, scale):
    n = len(inv_freq) if inv_freq is not None else dim // 2
    cols = range(n) if pairs is None else pairs
    oc = np.empty((len(pos), len(cols)))
    os_ = np.empty_like(oc)
    with mpmath.workdps(60):
        for k, i in enumerate(cols):
            t = _theta_mp(dim, base, inv_freq, int(i))
            for r, m in enumerate(pos):
                c, s = mpmath.cos_sin(mpmath.mpf(m) * t)
                oc[r, k] = _mpf_to_float(mpmath.mpf(scale) * c)
                os_[r, k] = _mpf_to_float(mpmath.mpf(scale) * s)
    return oc, os_


# ------------------------------------------------------------------- against the oracle
@pytest.mark.parametrize(("dim", "base"), [(64, 10000.0), (128, 500000.0), (256, 1e7)])
def test_consecutive_positions_from_zero_equal_the_oracle(dim, base):
    pairs = np.unique(np.r_[0, 1, 2, dim // 4, dim // 2 - 1])
    _assert_oracle(np.arange(300), dim, base, pairs=pairs)  # anchored and l-rows


def test_random_positions_up_to_2_to_24_equal_the_oracle():
    rng = np.random.default_rng(24)
    pos = rng.integers(0, 2**24, 400)
    pos[::2] *= -1
    _assert_oracle(pos, 128, 10000.0, pairs=rng.integers(0, 64, 6))
    frac = rng.integers(0, 2**24, 300) + rng.random(300)
    _assert_oracle(frac, 96, 1e6, pairs=rng.integers(0, 48, 6))


@pytest.mark.parametrize(("dim", "base"), [(128, 10000.0), (128, 500000.0), (64, 2.0)])
def test_hard_positions_where_cos_or_sin_is_nearly_zero(dim, base):
    pairs = np.unique(np.r_[1, 2, 3, dim // 8, dim // 2 - 1])
    pos = hard_positions(dim, base, pairs)
    c, s = _assert_oracle(pos, dim, base, pairs=pairs)
    assert min(np.abs(c[:, pairs]).min(), np.abs(s[:, pairs]).min()) < 1e-7


def test_angles_near_multiples_of_half_pi_and_tiny_angles():
    half_pi = np.pi / 2
    near = np.array([k * half_pi for k in range(1, 9)])  # binary values next to k pi/2
    near = np.concatenate([near, np.nextafter(near, 0), np.nextafter(near, 10)])
    _assert_oracle(near, inv_freq=[1.0, 0.5, 2.0 / 3.0])
    tiny = np.array([1e-300, 3e-200, 1e-30, 2.0**-600, 1e-12, 5e-7])
    _assert_oracle(tiny, inv_freq=[1.0, 1e-10])
    _assert_oracle([1.0, 3.0, 12345.0], inv_freq=[1e-300, 1e-200, 2.0**-700])


@pytest.mark.parametrize("position", [2.0**31, 2.0**31 - 1, -(2.0**31), 2.0**31 - 0.375])
def test_positions_at_the_angle_limit(position):
    _assert_oracle([position, position * 0.75 - 1], inv_freq=[1.0, 0.5, 1e-3])
    _assert_oracle([position], 16, 10000.0)


@given(m=st.integers(-LIMIT + 1, LIMIT - 1), i=st.integers(0, 63), base=st.floats(2.0, 1e7))
def test_single_entries_equal_the_oracle(m, i, base):
    _assert_oracle([m], 128, base, pairs=[i])


@given(m=st.floats(-(2.0**31), 2.0**31), f=st.floats(1e-7, 1.0))
def test_explicit_frequencies_and_fractional_positions(m, f):
    _assert_oracle([m], inv_freq=[f])


def test_accurate_is_the_correctly_rounded_table():
    pos = np.r_[np.arange(260), 2**31 - 5.5]
    a = cos_sin(pos, dim=32, method="accurate")
    c = cos_sin(pos, dim=32, method="correct")
    assert all(np.array_equal(x, y) for x, y in zip(a, c, strict=True))
    _assert_oracle(pos[-40:], 32)


# ----------------------------------------------------------------- scaling, special values
@pytest.mark.parametrize("scale", [1.19, 0.5, -1.3, 2.0**-300])
def test_attention_scaling_is_folded_in_before_the_rounding(scale):
    pos = np.r_[0, 1, 5, 2**20 + 3, np.arange(256, 520)]
    _assert_oracle(pos[:10], 16, 500000.0, scale=scale)
    c, s = cos_sin(pos, dim=16, base=500000.0, attention_scaling=scale, method="correct")
    c1, s1 = cos_sin(pos, dim=16, base=500000.0, method="correct")
    if scale == 0.5:  # a power of two: scaling the rounded values is exact
        assert np.array_equal(c, 0.5 * c1) and np.array_equal(s, 0.5 * s1)


def test_position_zero_negative_zero_and_a_zero_scale():
    c, s = cos_sin([0.0, -0.0, 3.0], dim=4, method="correct")
    assert np.array_equal(c[:2], np.ones((2, 2))) and np.array_equal(s[:2], np.zeros((2, 2)))
    assert not np.signbit(s[0]).any() and np.signbit(s[1]).all()  # sin(-0) = -0
    c0, s0 = cos_sin([0.0, 3.0], dim=4, method="correct", attention_scaling=0.0)
    f0, g0 = cos_sin([0.0, 3.0], dim=4, method="fast", attention_scaling=0.0)
    assert np.array_equal(c0, f0) and np.array_equal(np.signbit(s0), np.signbit(g0))


def _mp_theta(rec, params, i):
    """theta_i of a scaling record computed independently in mpmath (the record's formula)."""
    d, b = params["dim"], mpmath.mpf(params["base"])
    t = b ** (-mpmath.mpf(2 * i) / d)
    two_pi = 2 * mpmath.pi
    if rec == "linear":
        return t / params["factor"]
    if rec in ("ntk", "ntk_alpha"):
        s = mpmath.mpf(params.get("factor", params.get("alpha")))
        return (b * s ** (mpmath.mpf(d) / (d - 2))) ** (-mpmath.mpf(2 * i) / d)
    if rec == "llama3":
        s, L = params["factor"], params["original_max_position"]
        lf, hf = params["low_freq_factor"], params["high_freq_factor"]
        r = L * t / two_pi
        g = (r > lf) * mpmath.mpf(1) if hf == lf else min(max((r - lf) / (hf - lf), 0), 1)
        return (1 - g) * t / s + g * t
    if rec == "yarn_paper":
        s, L = params["factor"], params["original_max_position"]
        r = L * t / two_pi
        gamma = min(
            max((r - params["beta_slow"]) / (params["beta_fast"] - params["beta_slow"]), 0), 1
        )
        return t / s * (1 - gamma) + t * gamma
    if rec == "longrope":
        return t / params["long_factor"][i]
    raise AssertionError(rec)


@pytest.mark.parametrize(
    ("rec", "params"),
    [
        ("linear", dict(factor=4.0)),
        ("ntk", dict(factor=8.0)),
        ("ntk_alpha", dict(alpha=1000.0)),
        (
            "llama3",
            dict(factor=8.0, original_max_position=8192, low_freq_factor=1.0, high_freq_factor=4.0),
        ),
        (
            "llama3",
            dict(
                factor=32.0, original_max_position=8192, low_freq_factor=1.0, high_freq_factor=1.0
            ),
        ),
        (
            "yarn_paper",
            dict(
                factor=16.0, original_max_position=4096, beta_fast=32.0, beta_slow=1.0, ramp="paper"
            ),
        ),
        (
            "longrope",
            dict(
                short_factor=[1.0] * 32,
                long_factor=[1.0 + k / 7 for k in range(32)],
                original_max_position=4096,
                factor=32.0,
                seq_len=8192,
            ),
        ),
    ],
)
def test_scaled_frequencies_are_the_records_exact_values(rec, params):
    name = "yarn" if rec == "yarn_paper" else rec
    full = dict(dim=64, base=500000.0, **params)
    freqs = ROPE_SCALINGS[name].exact_frequencies(**full)
    pos = np.r_[1.0, 7.0, 1000.0, 123457.0, 2.0**24 - 1, 0.5]
    c, s = cos_sin(pos, freqs, method="correct")
    with mpmath.workdps(60):
        for i in range(0, 32, 3):
            t = _mp_theta(rec, full, i)
            assert abs(mpmath.mpf(freqs.float64()[i]) - t) <= abs(t) * 2.0**-53
            for r, m in enumerate(pos):
                cm, sm = mpmath.cos_sin(mpmath.mpf(m) * t)
                assert c[r, i] == _mpf_to_float(cm) and s[r, i] == _mpf_to_float(sm)


def test_yarn_transformers_ramp_with_its_attention_factor():
    params = dict(dim=64, base=10000.0, factor=40.0, original_max_position=4096, mscale=1.0,
                  mscale_all_dim=0.0)  # fmt: skip
    rec = ROPE_SCALINGS["yarn"]
    freqs = rec.exact_frequencies(**params)
    scale = rec.attention_factor(**params)
    assert np.max(np.abs(freqs.float64() / rec(**params).inv_freq - 1)) < 1e-15
    pos = np.array([3.0, 4097.0, 65537.0])
    with mpmath.workprec(200):
        theta = [mpmath.mpf(t.numerator) / t.denominator for t in freqs.approx(200)]
    c, s = cos_sin(pos, freqs, attention_scaling=scale, method="correct")
    with mpmath.workdps(60):
        for i in (0, 10, 20, 31):
            for r, m in enumerate(pos):
                cm, sm = mpmath.cos_sin(mpmath.mpf(m) * theta[i])
                assert c[r, i] == _mpf_to_float(mpmath.mpf(scale) * cm)
                assert s[r, i] == _mpf_to_float(mpmath.mpf(scale) * sm)


def test_resonance_turns_are_periodic_and_exact_where_rational():
    freqs = ROPE_SCALINGS["resonance"].exact_frequencies(dim=16, base=1e4, original_max_position=64)
    n = [c.n for c in freqs.columns if hasattr(c, "n")]
    assert n[:3] == [6, 20, 63]
    pos = np.arange(-40.0, 400.0)
    c, s = cos_sin(pos, freqs, method="correct")
    assert np.array_equal(c[6:, 0], c[:-6, 0]) and np.array_equal(s[20:, 1], s[:-20, 1])
    assert set(np.unique(c[:, 0])) == {-1.0, -0.5, 0.5, 1.0}  # cos(2 pi k / 6) is rational
    with mpmath.workdps(60):
        for r in range(0, pos.size, 7):
            for i, k in enumerate(n):
                u = mpmath.mpf(pos[r]) / k
                assert c[r, i] == _mpf_to_float(mpmath.cospi(2 * u))
                assert s[r, i] == _mpf_to_float(mpmath.sinpi(2 * u))


def test_proportional_pass_through_pairs_are_exact():
    freqs = ROPE_SCALINGS["proportional"].exact_frequencies(
        dim=16, base=1e4, partial_rotary_factor=0.5, factor=2.0
    )
    c, s = cos_sin(np.arange(300.0), freqs, attention_scaling=1.5, method="correct")
    assert np.all(c[:, 4:] == 1.5) and np.all(s[:, 4:] == 0.0)
    _assert_oracle(np.arange(5.0), inv_freq=freqs.float64()[:4] * 0 + freqs.float64()[:4])


# ------------------------------------------------------------ paths, tiers and the bounds
def test_run_gather_direct_and_chunks_are_bit_identical():
    f = ExactFrequencies.power(64, 500000.0)
    pos = np.arange(1000, 3000, dtype=np.float64)
    run = cos_sin(pos, f, method="correct")
    perm = np.random.default_rng(3).permutation(pos.size)
    gather = cos_sin(pos[perm], f, method="correct")
    direct = [cos_sin(pos[k : k + 100], f, method="correct") for k in range(0, pos.size, 100)]
    for j in (0, 1):
        assert np.array_equal(gather[j], run[j][perm])
        assert np.array_equal(np.concatenate([d[j] for d in direct]), run[j])
    parts = list(refimpl.iter_cos_sin(pos, f, method="correct", chunk=333))
    assert np.array_equal(np.concatenate([p[1] for p in parts]), run[0])


def test_forced_fallbacks_still_give_the_oracle(monkeypatch):
    pos = np.arange(250.0, 520.0)
    want = oracle_cos_sin(pos, dim=8, base=1e4)
    monkeypatch.setattr(_correct, "E_ADD", 1.0)  # every anchored entry fails: direct tier
    stats = {}
    got = _correct.correct_cos_sin(pos, ExactFrequencies.power(8, 1e4), 1.0, stats)
    assert stats["direct"] == pos.size * 4 and stats["exact"] == 0
    assert all(np.array_equal(g, w) for g, w in zip(got, want, strict=True))
    real_test = _correct._test

    def never(ws, key, h, lo, e, mag, ok, out=None):  # every rounding test fails: exact tier
        value = real_test(ws, key, h, lo, e, mag, ok, out)
        ok[...] = False
        return value

    monkeypatch.setattr(_correct, "_test", never)
    stats = {}
    got = _correct.correct_cos_sin(pos[:30], ExactFrequencies.power(8, 1e4), 1.0, stats)
    assert stats["exact"] == 30 * 4
    assert all(np.array_equal(g, w[:30]) for g, w in zip(got, want, strict=True))


def test_the_error_bounds_cover_the_measured_errors():
    """|v - (H + L)| <= E for the direct and the anchored steps, measured at 200 bits."""
    prep = _correct.prepare(ExactFrequencies.power(32, 10000.0))
    rng = np.random.default_rng(5)
    m = np.r_[rng.integers(1, LIMIT, 40).astype(float), rng.random(10) * 100, 1e-5, 7.0]
    hc, lc, ec, hs, ls, es, tiny = (np.copy(a) for a in _correct.direct(m[:, None], prep))
    assert not tiny.any()
    lo_parts, lo_bound = _correct._lo_rows(prep)
    worst = 0.0
    with mpmath.workprec(200):
        thetas = [mpmath.mpf(10000) ** (-mpmath.mpf(2 * i) / 32) for i in range(16)]
        for r, mm in enumerate(m):
            for i in range(16):
                c, s = mpmath.cos_sin(mpmath.mpf(mm) * thetas[i])
                for v, h, lo, e in ((c, hc, lc, ec), (s, hs, ls, es)):
                    err = abs(v - mpmath.mpf(h[r, i]) - mpmath.mpf(lo[r, i]))
                    worst = max(worst, float(err / mpmath.mpf(e[r, i])))
        for ll in range(1, _correct.ANCHOR_STEP, 9):  # the l-rows the anchored step uses
            for i in range(16):
                c, s = mpmath.cos_sin(ll * thetas[i])
                err_c = abs(c - mpmath.mpf(lo_parts[0][ll, i]) - mpmath.mpf(lo_parts[3][ll, i]))
                err_s = abs(s - mpmath.mpf(lo_parts[4][ll, i]) - mpmath.mpf(lo_parts[7][ll, i]))
                assert err_c + err_s <= lo_bound[i]
    assert worst < 1.0


def test_turn_table_and_fixed_point_values():
    t = _correct.turn_table()
    hi, lo = t["c"][0], t["c"][1]
    n = _correct.N_TURN
    assert (hi[0], hi[n // 4], hi[n // 2], hi[3 * n // 4]) == (1.0, 0.0, -1.0, 0.0)
    with mpmath.workprec(200):
        for j in (1, 5, 511, 512, 1000, 2047, 3001, 4095):
            exact = mpmath.cospi(mpmath.mpf(2 * j) / n)
            assert abs(mpmath.mpf(hi[j]) + mpmath.mpf(lo[j]) - exact) <= 2.0**-106
    for x in (0.1, 1.5, 7.0, 2.0**31, -123456.75):
        c, s, err = _correct._cos_sin_fixed(Fraction(x), 200)
        with mpmath.workprec(300):
            bound = mpmath.mpf(err.numerator) / err.denominator
            assert bound < 2.0**-190
            assert abs(mpmath.mpf(c.numerator) / c.denominator - mpmath.cos(x)) <= bound
            assert abs(mpmath.mpf(s.numerator) / s.denominator - mpmath.sin(x)) <= bound


# ------------------------------------------------------------------------------ refusals
def test_refusals_name_the_argument():
    with pytest.raises(ValueError, match=r"positions: method='correct' is proved .*2\*\*31"):
        cos_sin([2**33], [1.0], method="correct")
    with pytest.raises(ValueError, match=r"positions: method='correct'"):
        cos_sin([2**30], [4.0], method="correct")  # the angle counts, not the position
    with pytest.raises(ValueError, match=r"positions: method='accurate'"):
        cos_sin([-(2**40)], dim=8, method="accurate")
    with pytest.raises(ValueError, match="positions must be finite"):
        cos_sin([np.nan], dim=8, method="correct")
    with pytest.raises(ValueError, match=r"attention_scaling: method='correct' .*2\*\*400"):
        cos_sin([1], dim=8, method="correct", attention_scaling=1e300)
    with pytest.raises(ValueError, match="attention_scaling must be finite"):
        cos_sin([1], dim=8, method="correct", attention_scaling=np.inf)
    with pytest.raises(ValueError, match="inv_freq has 2 entries but dim=8"):
        cos_sin([1], ExactFrequencies.power(4, 10.0), dim=8, method="correct")
    with pytest.raises(ValueError, match="table_method"):
        refimpl.apply_rope(np.ones((2, 4)), [0, 1], table_method="exactly")
    with pytest.raises(ValueError, match=r"positions: method='correct'"):
        refimpl.apply_rope(np.ones((2, 4)), [0, 2**33], table_method="correct")


def test_apply_rope_with_correct_tables_equals_the_reference_rotation():
    x = np.random.default_rng(0).normal(size=(2, 300, 16))
    pos = np.arange(300.0) * 1000.0 + 0.5
    c, s = cos_sin(pos, dim=16, base=500000.0, method="correct")
    y = refimpl.apply_rope(x, pos, base=500000.0, table_method="correct")
    assert np.array_equal(y, refimpl.reference_rotation(x, c, s))
    f = ROPE_SCALINGS["linear"].exact_frequencies(dim=16, base=1e4, factor=4.0)
    y = refimpl.apply_rope(x, pos, inv_freq=f, table_method="correct", inverse=True)
    c, s = cos_sin(pos, f, method="correct")
    assert np.array_equal(y, refimpl.reference_rotation(x, c, -s))


CONFIGS = __import__("pathlib").Path(__file__).parent / "parity" / "configs"


@pytest.mark.parametrize(
    "name", ["gpt-oss-20b.json", "gemma3-1b-it.json", "deepseek-v2-lite.json", "smollm3-3b.json"]
)
def test_spec_method_correct_is_the_record_s_exact_frequencies_correctly_rounded(name):
    sched = refimpl.rope_schedule(CONFIGS / name)
    pos = np.array([0, 1, 7, 4095, 65537, 131071])
    for spec in {layer.spec.key(): layer.spec for layer in sched if layer.spec}.values():
        top = refimpl.spec_tables.position_limit(spec)
        p = pos if top is None else pos[pos < top]
        freqs = ROPE_SCALINGS[spec.rope_type].exact_frequencies(**spec.method_params())
        want = cos_sin(p, freqs, attention_scaling=spec.attention_scaling, method="correct")
        got = spec.cos_sin(p, method="correct")
        assert all(np.array_equal(g, w) for g, w in zip(got, want, strict=True))
        fast = spec.cos_sin(p)  # the fast path is within a few ulp of the position's angle
        assert np.allclose(got[0], fast[0], rtol=0, atol=1e-9)
        x = np.random.default_rng(0).standard_normal((len(p), spec.dim))
        y = spec.apply(x, p, method="correct")
        assert np.array_equal(y, refimpl.apply_rope_tables(
            x, *got, pairing=spec.pairing, rotary_offset=spec.rotary_offset,
            output_order=spec.output_order))  # fmt: skip


def test_spec_method_is_for_float64_tables_only():
    spec = refimpl.rope_from_config({"head_dim": 8, "rope_theta": 10000.0})
    with pytest.raises(ValueError, match="method='correct' applies to precision='float64'"):
        spec.cos_sin([1], precision="transformers-float32", method="correct")
    with pytest.raises(ValueError, match="method='correct' applies"):
        spec.apply(np.ones((1, 8)), [1], precision="ggml-float32", method="correct")
    with pytest.raises(ValueError, match="method must be one of"):
        spec.cos_sin([1], method="exact")
    with pytest.raises(TypeError, match=r"RopeSpec\.apply got unexpected keyword"):
        spec.apply(np.ones((1, 8)), [1], table_method="correct")


def test_spec_with_frequencies_of_its_own_takes_them_exactly():
    spec = refimpl.rope_from_config({"head_dim": 8, "rope_theta": 10000.0})
    assert refimpl.spec_tables.exact_frequencies(spec).float64().tolist() == (
        spec.inv_freq.tolist()
    )
    # float32 frequencies, as a GGUF file's rope_freqs tensor ships them: taken exactly
    own = spec.inv_freq.astype(np.float32).astype(np.float64)
    held = refimpl.spec.RopeSpec(
        dim=8, rotary_dim=8, base=10000.0, rope_type="default", inv_freq=own
    )
    assert refimpl.spec_tables.exact_frequencies(held) is held.inv_freq
    got = held.cos_sin([3, 1000], method="correct")
    want = cos_sin([3, 1000], own, method="correct")
    assert all(np.array_equal(g, w) for g, w in zip(got, want, strict=True))
