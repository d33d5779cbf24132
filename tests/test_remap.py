"""Training-free position maps (refimpl.remap): loop oracles and defining properties."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import refimpl
from refimpl import apply_rope, inv_freq, round_to
from refimpl.remap import (
    dual_chunk_relative_positions,
    relative_rope_scores,
    rerope_relative_positions,
    rerotate_keys,
    self_extend_cache_positions,
    self_extend_relative_positions,
)

lengths = st.integers(1, 24)


def _pairs(q_len, k_len):
    off = k_len - q_len
    for a in range(q_len):
        for b in range(k_len):
            yield a, b, a + off, b


def _rerope_loop(q_len, k_len, w, leak):
    out = np.zeros((q_len, k_len))
    for a, b, i, j in _pairs(q_len, k_len):
        d = i - j
        if d <= w:
            out[a, b] = j - i
        elif leak is None:
            out[a, b] = -w
        else:
            out[a, b] = -(w + (d - w) / leak)
    return out


def _self_extend_loop(q_len, k_len, g, w):
    out = np.zeros((q_len, k_len))
    for a, b, i, j in _pairs(q_len, k_len):
        if i - j < w:
            out[a, b] = j - i
        else:
            out[a, b] = (j // g) - ((i // g) + w - (w // g))
    return out


def _dca_loop(q_len, k_len, size, local):
    c = size - local
    out = np.zeros((q_len, k_len))
    for a, b, i, j in _pairs(q_len, k_len):
        if j > i:
            out[a, b] = j - i
            continue
        if i // c == j // c:
            qpos = i % c
        elif i // c == j // c + 1:
            qpos = min(i % c + c, size)
        else:
            qpos = min(2 * c - 1, size)
        out[a, b] = j % c - qpos
    return out


def _lengths(q_len, k_len):
    return min(q_len, k_len), max(q_len, k_len)


@given(lengths, lengths, st.integers(1, 10), st.one_of(st.none(), st.floats(1.5, 8.0)))
def test_rerope_equals_loop(a, b, w, leak):
    ql, kl = _lengths(a, b)
    got = rerope_relative_positions(ql, kl, window=w, leak=leak)
    np.testing.assert_array_equal(got, _rerope_loop(ql, kl, w, leak))


@given(lengths, lengths, st.integers(1, 6), st.integers(1, 10))
def test_self_extend_equals_loop(a, b, g, w):
    ql, kl = _lengths(a, b)
    got = self_extend_relative_positions(ql, kl, group=g, window=w)
    np.testing.assert_array_equal(got, _self_extend_loop(ql, kl, g, w))


@given(lengths, lengths, st.integers(2, 12), st.integers(0, 6))
def test_dual_chunk_equals_loop(a, b, size, local):
    ql, kl = _lengths(a, b)
    if size - local < 1:
        return
    got = dual_chunk_relative_positions(ql, kl, chunk_size=size, local_size=local)
    np.testing.assert_array_equal(got, _dca_loop(ql, kl, size, local))


@given(lengths, st.integers(1, 6), st.integers(1, 4))
def test_self_extend_is_continuous_and_ordered(n, g, windows):
    w = g * windows  # continuity at the window's edge needs G | W
    rel = self_extend_relative_positions(n, group=g, window=w)
    causal = np.tril(np.ones((n, n), dtype=bool))
    # For every query, moving the key closer never moves the seen distance away from 0 ...
    row_steps = np.diff(np.where(causal, rel, 0.0), axis=1)
    assert np.all(row_steps[np.tril(np.ones_like(row_steps, dtype=bool))] >= 0)
    # ... and the grouped distance at the window's edge is the exact one.
    i = np.arange(n)[:, None]
    j = np.arange(n)[None, :]
    np.testing.assert_array_equal(rel[(i - j) == w], -w)


def test_maps_reduce_to_rope_when_they_do_nothing():
    exact = np.arange(9)[None, :] - np.arange(9)[:, None] + 0.0
    np.testing.assert_array_equal(rerope_relative_positions(9, window=9), exact)
    np.testing.assert_array_equal(self_extend_relative_positions(9, group=1, window=3), exact)
    dca = dual_chunk_relative_positions(9, chunk_size=20, local_size=0)
    np.testing.assert_array_equal(dca, exact)


def test_seen_distances_are_bounded():
    n = 300
    assert rerope_relative_positions(n, window=16).min() == -16
    dca = dual_chunk_relative_positions(n, chunk_size=40, local_size=8)
    assert np.abs(np.tril(dca)).max() <= 40
    se = self_extend_relative_positions(n, group=4, window=32)
    assert -se.min() <= 32 + (n - 32) / 4 + 1


@given(st.integers(1, 6), st.integers(1, 6), st.sampled_from(["half", "interleaved"]), st.data())
def test_scores_with_exact_relative_positions_are_rope_scores(ql, kl, pairing, data):
    d = 8
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    q, k = rng.normal(size=(ql, d)), rng.normal(size=(kl, d))
    pq = rng.integers(0, 500, ql).astype(float)
    pk = rng.integers(0, 500, kl).astype(float)
    f = inv_freq(d)
    want = apply_rope(q, pq, pairing=pairing) @ apply_rope(k, pk, pairing=pairing).T
    got = relative_rope_scores(q, k, pk[None, :] - pq[:, None], f, pairing=pairing)
    np.testing.assert_allclose(got, want, rtol=1e-11, atol=1e-9)


def _cache_loop(n_tokens, g, w, batch):
    """llama.cpp's loop with the cache as a list of cells, one operation per cell."""
    cells, queries, n_past, ga_i = [], [], 0, 0
    t = 0
    while t < n_tokens:
        while n_past >= ga_i + w:
            ib, bd = (g * ga_i) // w, (w // g) * (g - 1)
            dd = (w // g) - ib * bd - w
            cells = [p + ib * bd if ga_i <= p < n_past else p for p in cells]
            lo = ga_i + ib * bd
            cells = [p // g if lo <= p < lo + w else p for p in cells]
            cells = [p + dd if lo + w <= p < n_past + ib * bd else p for p in cells]
            n_past -= bd
            ga_i += w // g
        for _ in range(min(batch, n_tokens - t)):
            queries.append(n_past)
            cells.append(n_past)
            n_past += 1
            t += 1
    return queries, cells


@given(
    st.integers(0, 80), st.sampled_from([(1, 4), (2, 4), (2, 8), (4, 8), (3, 9)]), st.integers(1, 5)
)
def test_self_extend_cache_equals_loop(n, gw, batch):
    g, w = gw
    q, kv = self_extend_cache_positions(n, group=g, window=w, batch=batch)
    q_ref, kv_ref = _cache_loop(n, g, w, batch)
    assert q.tolist() == q_ref
    assert kv.tolist() == kv_ref


def test_self_extend_cache_group_one_is_identity_and_grouping_compresses():
    q, kv = self_extend_cache_positions(50, group=1, window=8)
    assert q.tolist() == list(range(50)) == kv.tolist()
    q, kv = self_extend_cache_positions(512, group=4, window=64)
    assert np.all(np.diff(kv) >= 0)
    assert kv.max() < 512 // 2  # positions grow far slower than the token count


def test_rerotated_keys_equal_keys_rotated_at_the_sum():
    rng = np.random.default_rng(0)
    k = rng.normal(size=(5, 16))
    pos = np.array([0.0, 3.0, 10.0, 1000.0, 70000.0])
    moved = rerotate_keys(apply_rope(k, pos), 123.0)
    np.testing.assert_allclose(moved, apply_rope(k, pos + 123.0), rtol=0, atol=1e-9)
    per_key = rerotate_keys(apply_rope(k, pos), -pos)  # back to position 0
    np.testing.assert_allclose(per_key, k, atol=1e-9)


def test_repeated_float32_shifts_accumulate_rounding():
    rng = np.random.default_rng(1)
    k0 = rng.normal(size=(64, 64))
    f = inv_freq(64)
    k32 = apply_rope(k0.astype(np.float32), np.zeros(64), inv_freq=f)
    for _ in range(50):
        k32 = rerotate_keys(k32, 1.0, f)
    assert k32.dtype == np.float32
    exact = apply_rope(k0, np.full(64, 50.0), inv_freq=f)
    err = np.abs(k32 - exact).max()
    one_step = np.abs(round_to(exact, "float32") - exact).max()
    assert err > one_step  # more than one rounding: the shifts add up


@pytest.mark.parametrize(
    ("call", "word"),
    [
        (lambda: rerope_relative_positions(4, window=0), "window"),
        (lambda: rerope_relative_positions(4, window=2, leak=1.0), "leak"),
        (lambda: rerope_relative_positions(0, window=2), "q_len"),
        (lambda: self_extend_relative_positions(4, group=0, window=2), "group"),
        (lambda: dual_chunk_relative_positions(4, chunk_size=4, local_size=4), "chunk_size"),
        (lambda: self_extend_cache_positions(4, group=3, window=4), "multiple"),
        (
            lambda: relative_rope_scores(np.ones((2, 4)), np.ones((3, 4)), np.zeros((3, 2))),
            "relative",
        ),
        (lambda: rerotate_keys(np.ones((3, 4)), [1.0, 2.0]), "delta"),
    ],
)
def test_bad_arguments_are_named(call, word):
    with pytest.raises((ValueError, TypeError), match=word):
        call()


def test_dual_chunk_attention_record_reads_a_config():
    dca = refimpl.DualChunkAttention.from_config(
        {"chunk_size": 262144, "local_size": 8192, "original_max_position_embeddings": 262144}
    )
    assert (dca.chunk_size, dca.local_size, dca.chunk_len) == (262144, 8192, 253952)
    assert dca.original_max_position == 262144 and dca.extra == ()
    with pytest.raises(ValueError, match="local_size"):
        refimpl.DualChunkAttention.from_config({"chunk_size": 8})
    with pytest.raises(ValueError, match="chunk_size - local_size"):
        refimpl.DualChunkAttention(chunk_size=4, local_size=4)
    with pytest.raises(TypeError, match="dual_chunk_attention_config"):
        refimpl.DualChunkAttention.from_config([1, 2])


# --- M-RoPE K-shift ----------------------------------------------------------------------------

# (layout, sections): Qwen2-VL's blocked [16, 24, 24] scaled down, ggml's MROPE with its empty
# fourth section, Qwen3-VL's interleaved and ggml's IMROPE (with and without a fourth row),
# Ernie 4.5 VL's alternating.
MROPE_CASES = [
    ("blocked", [4, 6, 6]),
    ("blocked", [4, 6, 6, 0]),
    ("interleaved", [6, 5, 5]),
    ("imrope", [6, 5, 5]),
    ("imrope", [5, 4, 4, 3]),
    ("alternating", [5, 5, 6]),
]


def _rows(layout, sec):
    return 4 if layout == "imrope" or len(sec) == 4 else 3


@given(
    st.sampled_from(MROPE_CASES),
    st.sampled_from(["half", "interleaved"]),
    st.integers(0, 2**31 - 1),
)
def test_mrope_shift_then_rotate_equals_rotate_at_shifted_ids(case, pairing, seed):
    from refimpl.multiaxis import mrope_cos_sin
    from refimpl.remap import rerotate_keys_mrope
    from refimpl.rotary import apply_rope_tables

    layout, sec = case
    rng = np.random.default_rng(seed)
    n, d = 7, 2 * sum(sec)
    f = inv_freq(d, 1e6)
    ids = rng.integers(0, 50000, (_rows(layout, sec), n))
    delta = rng.integers(-5000, 5000, ids.shape)
    k0 = rng.standard_normal((2, n, d))

    def rotated(p):
        return apply_rope_tables(k0, *mrope_cos_sin(p, f, sec, layout=layout), pairing=pairing)

    moved = rerotate_keys_mrope(
        rotated(ids), delta, f, mrope_section=sec, layout=layout, pairing=pairing
    )
    np.testing.assert_allclose(moved, rotated(ids + delta), rtol=0, atol=1e-8)
    # two shifts compose into their sum, and a shift back returns the keys
    twice = rerotate_keys_mrope(moved, delta, f, mrope_section=sec, layout=layout, pairing=pairing)
    np.testing.assert_allclose(twice, rotated(ids + 2 * delta), rtol=0, atol=1e-8)
    back = rerotate_keys_mrope(moved, -delta, f, mrope_section=sec, layout=layout, pairing=pairing)
    np.testing.assert_allclose(back, rotated(ids), rtol=0, atol=1e-8)


@pytest.mark.parametrize(("layout", "sec"), [c for c in MROPE_CASES if _rows(*c) == 3])
def test_mrope_text_shift_is_the_one_axis_shift(layout, sec):
    """A text token has equal ids on every row: its shift is rerotate_keys' shift."""
    from refimpl.remap import rerotate_keys_mrope

    d = 2 * sum(sec)
    k = np.random.default_rng(3).standard_normal((5, d))
    got = rerotate_keys_mrope(k, 37.0, mrope_section=sec, layout=layout, base=1e6)
    np.testing.assert_allclose(got, rerotate_keys(k, 37.0, base=1e6), rtol=0, atol=1e-12)


def test_mrope_shift_layout_matters():
    """IMROPE and blocked MROPE send the same pairs to different axes: shifting h alone by
    the wrong layout's rule moves other pairs."""
    from refimpl.remap import rerotate_keys_mrope

    sec, d = [6, 5, 5, 0], 32
    k = np.random.default_rng(4).standard_normal((3, d))
    shift_h = [0, 100, 0, 0]
    a = rerotate_keys_mrope(k, shift_h, mrope_section=sec, layout="imrope")
    b = rerotate_keys_mrope(k, shift_h, mrope_section=sec, layout="blocked")
    assert np.abs(a - b).max() > 0.1
    float32 = rerotate_keys_mrope(k.astype(np.float32), shift_h, mrope_section=sec)
    assert float32.dtype == np.float32


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(delta=5.0, mrope_section=[6, 5, 5, 0], layout="imrope"), "each of the 4 position"),
        (dict(delta=[1.0, 2.0], mrope_section=[6, 5, 5]), r"delta must be a number, shape \(3,\)"),
        (dict(delta=1.0, mrope_section=[6, 5, 4]), "must sum to dim/2 = 16"),
        (dict(delta=1.0, mrope_section=[6, 5, 5], layout="zigzag"), "layout must be one of"),
        (dict(delta=np.nan, mrope_section=[6, 5, 5]), "delta"),
        (dict(delta=1.0, mrope_section=[6, 5]), "mrope_section must be 3 or 4"),
    ],
)
def test_mrope_shift_bad_arguments_are_named(kwargs, match):
    from refimpl.remap import rerotate_keys_mrope

    with pytest.raises((ValueError, TypeError), match=match):
        rerotate_keys_mrope(np.ones((3, 32)), **kwargs)
