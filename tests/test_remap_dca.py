"""Dual Chunk Attention scores (refimpl.remap.dual_chunk_attention_scores) against vLLM's
arithmetic re-expressed in NumPy, and their defining properties.

The re-expression follows vLLM's two files step by step, written here independently of
refimpl. ``vllm/model_executor/layers/rotary_embedding/dual_chunk_rope.py``:
``DualChunkRotaryEmbedding._compute_cos_sin_cache`` (the ``q``, ``qc`` and ``k`` caches as
``cat(cos, sin)``) and ``forward_native`` (keys from ``k`` at ``positions``; the intra query
from ``q``, the successive from ``qc`` at ``positions % chunk_len``, the inter from
``qc[chunk_len - 1]``; NeoX ``rotate_neox``). ``vllm/attention/backends/dual_chunk_flash_attn.py``:
``_dual_chunk_flash_attn_prefill_func`` (the loop over query chunks from ``begin``, intra
causal over ``[prev_chunk_end_pos, end)``, successive over the chunk before, inter over every
earlier key, each a flash-attention call returning its output and log-sum-exp; the key and
the softmax scale multiplied by ``scaling_factor`` when ``original_max_position_embeddings`` is
set) and ``_merge_attn_outputs``. The cases are hand-made chunk settings, small enough to run
the loops; Qwen2.5-1M's released values (chunk 262144, local 8192) need far more tokens than
a test can hold.
"""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import refimpl
from refimpl.remap import (
    DCA_INTER,
    DCA_MASKED,
    DCA_SUCCESSIVE,
    DualChunkAttention,
    dual_chunk_attention_scores,
    dual_chunk_query_tables,
    dual_chunk_relative_positions,
    relative_rope_scores,
)

D, BASE = 16, 10000.0

# (chunk_size, local_size, k_len, q_len, original_max_position_embeddings)
CASES = [
    (24, 8, 70, 70, None),  # three query tables, clamped successive (local < c - 1)
    (24, 8, 70, 13, None),  # a prefill continuing a cache, starting mid-chunk
    (16, 0, 50, 50, None),  # no local window: every successive query clamped at c
    (10, 6, 41, 41, None),  # local >= c - 1: the clamp never acts
    (12, 11, 9, 9, None),  # chunks of one position
    (32, 8, 20, 20, None),  # the sequence fits one chunk: ordinary RoPE
    (24, 8, 70, 70, 16),  # length scaling: s = 0.1 ln(70/16) + 1 on keys and softmax scale
    (24, 8, 70, 30, 128),  # shorter than the original context: s clipped at 1
]


def _vllm_caches(inv, chunk_size, local_size, max_pos):
    """DualChunkRotaryEmbedding._compute_cos_sin_cache (float64 here)."""
    chunk_len = chunk_size - local_size
    q_t = np.arange(chunk_len, dtype=np.float64)
    qc_t = np.minimum(np.arange(chunk_len, dtype=np.float64) + chunk_len, chunk_size)
    k_t = np.arange(max_pos, dtype=np.float64) % chunk_len

    def cache(t):
        f = np.outer(t, inv)
        return np.concatenate([np.cos(f), np.sin(f)], axis=-1)

    return cache(q_t), cache(qc_t), cache(k_t)


def _vllm_rotate(cos_sin, x):
    """_apply_rotary_embedding, NeoX style: x * cos + rotate_neox(x) * sin."""
    cos, sin = np.split(cos_sin, 2, axis=-1)
    cos, sin = np.concatenate([cos, cos], -1), np.concatenate([sin, sin], -1)
    x1, x2 = np.split(x, 2, axis=-1)
    return x * cos + np.concatenate([-x2, x1], -1) * sin


def _vllm_forward(positions, query, key, chunk_size, local_size):
    """forward_native: the key and the three queries."""
    inv = 1.0 / BASE ** (np.arange(0, D, 2, dtype=np.float64) / D)
    q_cache, qc_cache, k_cache = _vllm_caches(inv, chunk_size, local_size, 4096)
    chunk_len = chunk_size - local_size
    k = _vllm_rotate(k_cache[positions], key)
    q = _vllm_rotate(q_cache[positions % chunk_len], query)
    q_succ = _vllm_rotate(qc_cache[positions % chunk_len], query)
    q_inter = _vllm_rotate(np.repeat(qc_cache[chunk_len - 1][None], len(positions), 0), query)
    return q, q_succ, q_inter, k


def _flash(q, k, v, scale, causal):
    """flash_attn_varlen_func for one head: output and log-sum-exp (causal aligned to the
    bottom right, as flash-attention does for q_len < k_len)."""
    s = scale * q @ k.T
    if causal:
        off = k.shape[0] - q.shape[0]
        s = np.where(np.arange(k.shape[0])[None] > np.arange(q.shape[0])[:, None] + off, -np.inf, s)
    lse = np.log(np.sum(np.exp(s - s.max(1, keepdims=True)), 1)) + s.max(1)
    return np.exp(s - lse[:, None]) @ v, lse, s


def _vllm_prefill(q, q_succ, q_inter, k, v, chunk_size, local_size, scaling, softmax_scale):
    """_dual_chunk_flash_attn_prefill_func (dense, no sparse attention) and
    _merge_attn_outputs; also the logits each stage used, placed in a (q_len, k_len) matrix."""
    chunk_len = chunk_size - local_size
    k_length, q_len = k.shape[0], q.shape[0]
    softmax_scale = softmax_scale * scaling
    logits = np.full((q_len, k_length), -np.inf)
    outputs = []
    begin = k_length - q_len
    while begin < k_length:
        prev_chunk_end_pos = (begin // chunk_len) * chunk_len
        end = min(prev_chunk_end_pos + chunk_len, k_length)
        qbegin, qend = begin - (k_length - q_len), end - (k_length - q_len)
        stages = [(q[qbegin:qend], prev_chunk_end_pos, end, True)]
        if prev_chunk_end_pos - chunk_len >= 0:
            stages.append(
                (q_succ[qbegin:qend], prev_chunk_end_pos - chunk_len, prev_chunk_end_pos, False)
            )
        if prev_chunk_end_pos - chunk_len * 2 >= 0:
            stages.append((q_inter[qbegin:qend], 0, prev_chunk_end_pos - chunk_len, False))
        per_chunk = []
        for qs, lo, hi, causal in stages:
            out, lse, s = _flash(qs, k[lo:hi], v[lo:hi], softmax_scale, causal)
            per_chunk.append((out, lse))
            logits[qbegin:qend, lo:hi] = s
        outs = np.stack([o for o, _ in per_chunk])
        lses = np.stack([lse for _, lse in per_chunk])
        w = np.exp(lses - lses.max(0))
        w /= w.sum(0)
        outputs.append(np.sum(outs * w[:, :, None], 0))
        begin = end
    return np.concatenate(outputs), logits


@pytest.mark.parametrize("case", CASES, ids=[str(c) for c in CASES])
def test_scores_and_attention_equal_vllms_arithmetic(case):
    size, local, k_len, q_len, orig = case
    rng = np.random.default_rng(k_len + q_len)
    query, key, value = rng.standard_normal((3, k_len, D))
    positions = np.arange(k_len)
    q, q_succ, q_inter, k = _vllm_forward(positions, query, key, size, local)
    scaling = 1.0 if orig is None else max(1.0, 0.1 * np.log(k_len / orig) + 1.0)
    k = k * scaling  # the backend scales the keys before caching them
    softmax_scale = 1.0 / np.sqrt(D)
    qs = slice(k_len - q_len, k_len)
    out, logits = _vllm_prefill(
        q[qs], q_succ[qs], q_inter[qs], k, value, size, local, scaling, softmax_scale
    )
    dca = {"chunk_size": size, "local_size": local}
    if orig is not None:
        dca["original_max_position_embeddings"] = orig
    got = dual_chunk_attention_scores(query[qs], key, positions, dca, base=BASE)
    np.testing.assert_allclose(got.scores * softmax_scale, logits, rtol=1e-12, atol=1e-12)
    assert got.length_factor == pytest.approx(scaling**2, rel=1e-15)
    attended = refimpl.softmax(got.scores * softmax_scale, axis=-1) @ value  # one softmax
    np.testing.assert_allclose(attended, out, rtol=0, atol=1e-12)
    # the relative positions are the remap's, and the scores are RoPE at those positions
    rel = dual_chunk_relative_positions(q_len, k_len, chunk_size=size, local_size=local)
    np.testing.assert_array_equal(got.relative, rel)
    seen = got.relation != DCA_MASKED
    plain = relative_rope_scores(query[qs], key, rel, base=BASE) * got.length_factor
    np.testing.assert_allclose(got.scores[seen], plain[seen], rtol=1e-10, atol=1e-10)


def test_query_tables_are_vllms_caches():
    size, local = 24, 8
    c = size - local
    pos = np.arange(200)
    tables = dual_chunk_query_tables(pos, {"chunk_size": size, "local_size": local})
    q_t = np.arange(c)
    qc_t = np.minimum(np.arange(c) + c, size)
    np.testing.assert_array_equal(tables[0], q_t[pos % c])
    np.testing.assert_array_equal(tables[1], qc_t[pos % c])
    np.testing.assert_array_equal(tables[2], np.full(200, qc_t[c - 1]))
    # the local window: the first local_size queries of a chunk see the chunk before exactly
    assert np.all(tables[1][(pos % c) < local] == (pos % c + c)[(pos % c) < local])
    assert np.all(tables[1][(pos % c) >= local] == size)


settings_cases = st.tuples(st.integers(1, 40), st.integers(0, 30), st.integers(1, 90))


@given(settings_cases, st.integers(0, 2**31 - 1))
def test_every_relative_position_is_within_chunk_size(case, seed):
    c, local, n = case
    size = c + local
    rng = np.random.default_rng(seed)
    q_len = int(rng.integers(1, n + 1))
    q, k = rng.standard_normal((2, n, 8))
    out = dual_chunk_attention_scores(q[-q_len:], k, np.arange(n), DualChunkAttention(size, local))
    seen = out.relation != DCA_MASKED
    assert np.all(out.relative[seen] <= 0) and np.all(out.relative[seen] >= -size)
    assert np.all(np.isneginf(out.scores[~seen])) and np.all(np.isfinite(out.scores[seen]))
    # every relation appears where the chunks allow it, and only there
    qpos = np.arange(n - q_len, n)[:, None]
    gap = qpos // c - np.arange(n)[None] // c
    assert np.all((out.relation == DCA_SUCCESSIVE) == (seen & (gap == 1)))
    assert np.all((out.relation == DCA_INTER) == (seen & (gap >= 2)))


@given(st.integers(1, 60), st.integers(0, 20), st.integers(0, 2**31 - 1))
def test_one_chunk_is_ordinary_rope(c, local, seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, c + 1))  # the whole sequence in the first chunk
    q, k = rng.standard_normal((2, n, 8))
    out = dual_chunk_attention_scores(
        q, k, np.arange(n), {"chunk_size": c + local, "local_size": local}
    )
    ordinary = refimpl.apply_rope(q, np.arange(n)) @ refimpl.apply_rope(k, np.arange(n)).T
    seen = np.tril(np.ones((n, n), bool))
    np.testing.assert_allclose(out.scores[seen], ordinary[seen], rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: dual_chunk_attention_scores(np.ones((2, 4)), np.ones((2, 4)), [0, 1], 5), "dca"),
        (lambda: dual_chunk_attention_scores(np.ones((2, 4)), np.ones((2, 4)), [0, 1], {}),
         "chunk_size"),
        (lambda: dual_chunk_attention_scores(np.ones((3, 4)), np.ones((2, 4)), [0, 1],
                                             {"chunk_size": 4, "local_size": 1}), "q_len"),
        (lambda: dual_chunk_attention_scores(np.ones((2, 4)), np.ones((2, 4)), [0, 1.5],
                                             {"chunk_size": 4, "local_size": 1}), "positions"),
        (lambda: dual_chunk_attention_scores(np.ones((2, 4)), np.ones((2, 4)), [0, 1, 2],
                                             {"chunk_size": 4, "local_size": 1}), "positions"),
        (lambda: dual_chunk_attention_scores(np.ones((2, 4)), np.ones((2, 6)), [0, 1],
                                             {"chunk_size": 4, "local_size": 1}), "same width"),
        (lambda: dual_chunk_attention_scores(np.ones((2, 4)), np.ones((2, 4)), [0, 1],
                                             {"chunk_size": 4, "local_size": 1}, seq_len=0),
         "seq_len"),
        (lambda: dual_chunk_query_tables([-1, 0], {"chunk_size": 4, "local_size": 1}),
         "query_positions"),
    ],
)  # fmt: skip
def test_dca_scores_bad_arguments_are_named(call, match):
    with pytest.raises((ValueError, TypeError), match=match):
        call()
