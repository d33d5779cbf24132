"""Functional relative biases (Kerple, Sandwich, FIRE): loop oracles and defining properties."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from refimpl import alibi_bias, sinusoidal
from refimpl.bias import fire_bias, kerple_bias, sandwich_bias

lengths = st.integers(1, 12)
positive = st.floats(0.05, 4.0)


def _shape(a, b):
    return min(a, b), max(a, b)


@given(lengths, lengths, st.lists(positive, min_size=1, max_size=3), st.data())
def test_kerple_equals_loop(a, b, r1, data):
    ql, kl = _shape(a, b)
    r2 = data.draw(st.lists(st.floats(0.1, 2.0), min_size=len(r1), max_size=len(r1)))
    for form in ("log", "power"):
        got = kerple_bias(ql, kl, r1=r1, r2=r2, form=form)
        off = kl - ql
        for h in range(len(r1)):
            for x in range(ql):
                for y in range(kl):
                    i, j = x + off, y
                    if j > i:
                        assert got[h, x, y] == -math.inf
                        continue
                    d = i - j
                    want = -r1[h] * (math.log(1 + r2[h] * d) if form == "log" else d ** r2[h])
                    assert got[h, x, y] == pytest.approx(want, rel=1e-12, abs=1e-12)


@given(lengths, lengths, st.lists(positive, min_size=1, max_size=4))
def test_kerple_power_one_is_alibi(a, b, slopes):
    ql, kl = _shape(a, b)
    got = kerple_bias(ql, kl, r1=slopes, r2=[1.0] * len(slopes), form="power")
    want = alibi_bias(len(slopes), ql, kl, slopes=slopes)
    np.testing.assert_allclose(got, want, rtol=1e-15, atol=0)


@given(st.integers(1, 10), st.integers(0, 50), st.sampled_from([2, 4, 16, 64]))
def test_sandwich_is_the_inner_product_of_sinusoidal_encodings(n, offset, dim):
    pe = sinusoidal(np.arange(offset + n), dim)  # (positions, dim)
    want = pe[offset:] @ pe.T  # queries are the last n positions
    got = sandwich_bias([1.0], n, offset + n, dim=dim, causal=False)[0]
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


@given(st.integers(1, 8), st.integers(0, 40), st.integers(0, 40))
def test_kerple_and_sandwich_depend_only_on_the_distance(n, o1, o2):
    k1 = kerple_bias(n, n, r1=[0.7], r2=[0.3], query_offset=0, causal=False)
    for off in (o1, o2):
        shifted = kerple_bias(n, n + off, r1=[0.7], r2=[0.3], causal=False)[:, :, off:]
        np.testing.assert_allclose(shifted, k1, rtol=1e-14)
        s = sandwich_bias([2.0], n, n + off, dim=8, causal=False)[:, :, off:]
        np.testing.assert_allclose(s, sandwich_bias([2.0], n, dim=8, causal=False), atol=1e-12)


def _fire_loop(mlp, ql, kl, c, big_l):
    w1, b1, w2, b2 = (np.asarray(m, dtype=float) for m in mlp)
    out = np.zeros((w2.shape[0], ql, kl))
    off = kl - ql
    for x in range(ql):
        for y in range(kl):
            i, j = x + off, y
            if j > i:
                out[:, x, y] = -math.inf
                continue
            u = math.log(c * (i - j) + 1) / math.log(c * max(big_l, i) + 1)
            hidden = np.maximum(w1 * u + b1, 0.0)
            out[:, x, y] = w2 @ hidden + b2
    return out


@given(lengths, lengths, st.floats(0.1, 5.0), st.floats(1.0, 40.0), st.integers(0, 99))
def test_fire_equals_loop(a, b, c, big_l, seed):
    ql, kl = _shape(a, b)
    rng = np.random.default_rng(seed)
    mlp = (rng.normal(size=4), rng.normal(size=4), rng.normal(size=(2, 4)), rng.normal(size=2))
    got = fire_bias(mlp, ql, kl, c=c, threshold=big_l)
    np.testing.assert_allclose(got, _fire_loop(mlp, ql, kl, c, big_l), rtol=1e-12, atol=1e-12)


@given(st.integers(1, 300), st.floats(0.1, 5.0), st.floats(1.0, 600.0))
def test_fire_inputs_stay_in_the_unit_interval_at_every_length(n, c, big_l):
    identity = ([1.0], [0.0], [[1.0]], [0.0])  # f(x) = max(x, 0) = x on [0, 1]
    u = fire_bias(identity, 1, n, c=c, threshold=big_l)[0, 0]
    assert np.all((u >= 0.0) & (u <= 1.0 + 1e-15))


@pytest.mark.parametrize(
    ("call", "word"),
    [
        (lambda: kerple_bias(3, r1=[1.0], r2=[1.0, 2.0]), "r2"),
        (lambda: kerple_bias(3, r1=[-1.0], r2=[1.0]), "r1"),
        (lambda: kerple_bias(3, r1=[1.0], r2=[2.5], form="power"), "r2"),
        (lambda: kerple_bias(3, r1=[1.0], r2=[1.0], form="exp"), "form"),
        (lambda: kerple_bias(3, r1=[1.0], r2=[1.0], causal="no"), "causal"),
        (lambda: sandwich_bias([], 3), "scales"),
        (lambda: sandwich_bias([1.0], 3, dim=3), "dim"),
        (lambda: fire_bias(([1.0], [0.0], [[1.0]]), 3), "mlp"),
        (lambda: fire_bias(([1.0], [0.0], [[1.0, 2.0]], [0.0]), 3), "mlp"),
        (lambda: fire_bias(([1.0], [0.0], [[1.0]], [0.0]), 3, c=0.0), "c"),
    ],
)
def test_bad_arguments_are_named(call, word):
    with pytest.raises((ValueError, TypeError), match=word):
        call()


@pytest.mark.parametrize(
    ("rel", "kw", "word"),
    [
        (np.array([2**64 - 1], np.uint64), {}, "relative_position"),  # was bucket 1
        (np.array([-(2**63)]), {}, "relative_position"),  # was an IndexError
        (np.array([1]), {"max_distance": 10**9}, "max_distance"),  # was unbounded work
    ],
)
def test_t5_buckets_refuse_what_they_cannot_bucket(rel, kw, word):
    from refimpl import t5_relative_position_bucket

    with pytest.raises(ValueError, match=word):
        t5_relative_position_bucket(rel, **kw)


def test_t5_buckets_of_large_unsigned_distances_are_the_last_bucket():
    from refimpl import t5_relative_position_bucket

    got = t5_relative_position_bucket(np.array([5, 2**31], np.uint64))
    assert got.tolist() == [21, 31]
