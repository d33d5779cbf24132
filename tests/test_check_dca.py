"""check_dual_chunk_attention names a wrong Dual Chunk Attention setting from an
implementation's logits: the local window, the chunk size, the chunk relation that picks the
query table, ordinary RoPE in place of DCA, vLLM's critical tables and the length scaling.

The implementations are vLLM's arithmetic (``DualChunkRotaryEmbedding`` tables, the dual-chunk
backend's three passes) re-expressed in tests/test_remap_dca.py, run with a wrong setting.
"""

import numpy as np
import pytest
from test_remap_dca import _vllm_forward

import refimpl
from refimpl import DualChunkAttention, check_dual_chunk_attention

D = 16
DCA = DualChunkAttention(chunk_size=24, local_size=8)


def vllm_logits(rec, *, succ_as_inter=False, critical=False, scaling=1.0):
    """The dense logits vLLM's dual-chunk backend computes (no softmax scale), with a
    planted mistake where asked."""

    def fn(q, k, positions):
        size, local = rec.chunk_size, rec.local_size
        c = size - local
        qr, q_succ, q_inter, kr = _vllm_forward(positions, q, k, size, local)
        if critical:  # vLLM's qc_no_clamp and q_inter tables (sparse-attention selection)
            q_succ = refimpl.apply_rope(q, positions % c + c)
            q_inter = refimpl.apply_rope(q, positions % c + size)
        kr = kr * scaling
        i, j = positions[:, None], positions[None, :]
        gap = i // c - j // c
        if succ_as_inter:
            gap = np.where(gap == 1, 2, gap)
        out = np.where(gap == 0, qr @ kr.T, np.where(gap == 1, q_succ @ kr.T, q_inter @ kr.T))
        return out * scaling

    return fn


def test_a_correct_implementation_passes():
    rep = check_dual_chunk_attention(vllm_logits(DCA), DCA, dim=D)
    assert rep.ok and (rep.chunk_size, rep.local_size) == (24, 8), str(rep)
    scaled = lambda q, k, p: vllm_logits(DCA)(q, k, p) / np.sqrt(D)  # noqa: E731
    assert check_dual_chunk_attention(scaled, DCA, dim=D, softmax_scale=1 / np.sqrt(D)).ok


def test_a_wrong_local_window_is_named():
    rep = check_dual_chunk_attention(vllm_logits(DualChunkAttention(24, 4)), DCA, dim=D)
    assert not rep.ok and (rep.chunk_size, rep.local_size) == (24, 4), str(rep)
    assert "the local window is local_size = 4, not the declared 8" in rep.findings[0]


def test_a_wrong_chunk_size_is_named():
    rep = check_dual_chunk_attention(vllm_logits(DualChunkAttention(32, 8)), DCA, dim=D)
    assert not rep.ok and (rep.chunk_size, rep.local_size) == (32, 8), str(rep)
    assert "the chunk size is 32, not the declared chunk_size = 24" in rep.findings[0]


def test_ordinary_rope_is_named():
    def plain(q, k, p):
        return refimpl.apply_rope(q, p) @ refimpl.apply_rope(k, p).T

    rep = check_dual_chunk_attention(plain, DCA, dim=D)
    assert not rep.ok and "no dual chunk remapping" in rep.findings[0], str(rep)


def test_successive_keys_scored_with_the_inter_query():
    rep = check_dual_chunk_attention(vllm_logits(DCA, succ_as_inter=True), DCA, dim=D)
    assert not rep.ok, str(rep)
    text = " ".join(rep.findings)
    assert (
        "the chunk just before the query's (successive)" in text and "with the inter query" in text
    )
    assert "chooses the wrong query table" in text


def test_critical_tables_in_place_of_the_scoring_tables():
    rep = check_dual_chunk_attention(vllm_logits(DCA, critical=True), DCA, dim=D)
    assert not rep.ok and "critical tables" in rep.findings[0], str(rep)


@pytest.mark.parametrize(("power", "words"), [(0, "is missing"), (1, "is applied once")])
def test_length_scaling(power, words):
    rec = DualChunkAttention(24, 8, original_max_position=16)
    s = 0.1 * np.log(64 / 16) + 1.0  # the probe's 64 tokens against 16

    def fn(q, k, p):
        return vllm_logits(rec)(q, k, p) * s**power

    assert check_dual_chunk_attention(vllm_logits(rec, scaling=s), rec, dim=D).ok
    rep = check_dual_chunk_attention(fn, rec, dim=D)
    assert not rep.ok and f"the length scaling {words}" in rep.findings[0], str(rep)


def test_a_wrong_base_is_not_blamed_on_the_chunks():
    def wrong_base(q, k, p):
        out = refimpl.dual_chunk_attention_scores(q, k, p, DCA, base=500.0)
        return out.scores

    rep = check_dual_chunk_attention(wrong_base, DCA, dim=D)
    assert not rep.ok and "check the frequencies" in " ".join(rep.findings), str(rep)
    assert rep.chunk_size is None


def test_masked_keys_are_named():
    def windowed(q, k, p):  # attends only to its own chunk and the one before
        out = vllm_logits(DCA)(q, k, p)
        c = DCA.chunk_len
        gap = p[:, None] // c - p[None, :] // c
        return np.where(gap >= 2, -np.inf, out)

    rep = check_dual_chunk_attention(windowed, DCA, dim=D)
    assert not rep.ok and "earlier chunks (inter) are masked" in rep.findings[0], str(rep)


@pytest.mark.parametrize(
    ("kwargs", "exc", "match"),
    [
        (dict(fn_scores=None), TypeError, "fn_scores must be callable"),
        (dict(dca=DualChunkAttention(262144, 8192)), ValueError, "scaled-down"),
        (dict(seq_len=5000), ValueError, "seq_len"),
        (dict(base=2.0), ValueError, "too long to read relative positions"),
        (dict(fn_scores=lambda q, k, p: q), ValueError, "fn_scores must return"),
        (dict(softmax_scale=0.0), ValueError, "softmax_scale"),
    ],
)
def test_bad_arguments_are_named(kwargs, exc, match):
    args = dict(fn_scores=vllm_logits(DCA), dca=DCA, dim=D) | kwargs
    with pytest.raises(exc, match=match):
        check_dual_chunk_attention(**args)
