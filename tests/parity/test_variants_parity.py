"""Parity of the variants (ALiBi, T5 buckets, xPos, M-RoPE, 2-D RoPE) with the peers that
define them in practice, run here: transformers 5.24.0 (BLOOM, T5, Qwen2-VL, Qwen3-VL) and
rotary-embedding-torch 0.9.1 (xPos). Skipped with a reason when a peer is not installed
(``make venv-torch`` installs them)."""

import numpy as np
import pytest

import refimpl

torch = pytest.importorskip("torch", reason="parity tests need torch (make venv-torch)")
transformers = pytest.importorskip(
    "transformers", reason="parity tests need transformers (make venv-torch)"
)


# --- ALiBi: transformers' BLOOM -------------------------------------------------------------


@pytest.mark.parametrize("n_heads", [1, 2, 3, 4, 5, 6, 8, 12, 16, 24, 32, 40, 64, 71, 112])
def test_alibi_slopes_match_bloom(n_heads):
    from transformers.models.bloom.modeling_bloom import _get_alibi_slopes

    peer = _get_alibi_slopes(n_heads, torch.device("cpu")).numpy()  # float32 pow
    ours = refimpl.alibi_slopes(n_heads)
    assert peer.shape == ours.shape
    # BLOOM raises a float32 base to integer powers in float32; our slopes are exact float64.
    # The reference spec measures at most 5e-7 relative difference; power-of-two counts up to
    # 8 heads are exact in float32.
    np.testing.assert_allclose(peer.astype(np.float64), ours, rtol=6e-7, atol=0)
    if n_heads in (1, 2, 4, 8):
        assert np.array_equal(peer, ours.astype(np.float32))


@pytest.mark.parametrize("n_heads", [4, 12])
def test_alibi_bias_matches_bloom_tensor_up_to_row_constants(n_heads):
    from transformers.models.bloom.modeling_bloom import build_alibi_tensor

    seq = 9
    mask = torch.ones(1, seq, dtype=torch.long)
    peer = build_alibi_tensor(mask, n_heads, torch.float64).numpy()  # (n_heads, 1, seq): +m j
    peer_full = np.broadcast_to(peer, (n_heads, seq, seq))
    shifted = refimpl.alibi_shifted_bias(n_heads, seq, causal=False)
    np.testing.assert_allclose(shifted, peer_full, rtol=6e-7, atol=0)
    # paper form = BLOOM's form minus the per-row constant m i, so the causal softmax agrees
    causal = refimpl.alibi_bias(n_heads, seq)
    mask_add = refimpl.causal_mask(seq)
    s = np.random.default_rng(0).normal(size=(n_heads, seq, seq))
    w_ours = refimpl.softmax(s + causal)
    w_peer = refimpl.softmax(s + peer_full + mask_add)
    np.testing.assert_allclose(w_ours, w_peer, rtol=1e-5, atol=1e-7)


def test_bloom_positions_count_non_padding_tokens():
    # BLOOM's key positions skip left padding; ours are plain indices, equal once the padding
    # is removed: the bias of the real tokens matches with query_offset/k_len of the real part.
    from transformers.models.bloom.modeling_bloom import build_alibi_tensor

    mask = torch.tensor([[0, 0, 1, 1, 1]])
    peer = build_alibi_tensor(mask, 4, torch.float64).numpy()[:, 0, 2:]  # real tokens
    ours = refimpl.alibi_shifted_bias(4, 3, causal=False)[:, 0, :]
    np.testing.assert_allclose(peer, ours, rtol=6e-7)


# --- T5 buckets -------------------------------------------------------------------------------

T5_CONFIGS = [(32, 128), (32, 256), (64, 512), (128, 1024), (16, 64), (8, 20)]


@pytest.mark.parametrize("bidirectional", [True, False])
@pytest.mark.parametrize(("num_buckets", "max_distance"), T5_CONFIGS)
def test_t5_buckets_equal_transformers_exactly(num_buckets, max_distance, bidirectional):
    from transformers.models.t5.modeling_t5 import T5Attention

    rel = np.arange(-5000, 5001, dtype=np.int64)
    peer = T5Attention._relative_position_bucket(
        torch.from_numpy(rel),
        bidirectional=bidirectional,
        num_buckets=num_buckets,
        max_distance=max_distance,
    ).numpy()
    ours = refimpl.t5_relative_position_bucket(
        rel, bidirectional=bidirectional, num_buckets=num_buckets, max_distance=max_distance
    )
    assert ours.dtype == np.int64
    assert np.array_equal(ours, peer)


def test_t5_bias_equals_transformers_compute_bias():
    from transformers import T5Config
    from transformers.models.t5.modeling_t5 import T5Attention

    for is_decoder in (False, True):
        cfg = T5Config(d_model=16, d_kv=4, num_heads=3, relative_attention_num_buckets=32)
        cfg.is_decoder = is_decoder
        att = T5Attention(cfg, has_relative_attention_bias=True)
        torch.manual_seed(0)
        torch.nn.init.normal_(att.relative_attention_bias.weight)
        table = att.relative_attention_bias.weight.detach().numpy().astype(np.float64)
        for q_len, k_len, past in [(7, 7, 0), (1, 200, 199), (3, 300, 297)]:
            peer = att.compute_bias(q_len, k_len, past_seen_tokens=past)[0].detach().numpy()
            ours = refimpl.t5_bias(
                table, q_len, k_len, bidirectional=not is_decoder, query_offset=past
            )
            np.testing.assert_array_equal(ours.astype(np.float32), peer)


# --- xPos: rotary-embedding-torch ---------------------------------------------------------------


@pytest.mark.parametrize("seq", [1, 6, 7, 64])
@pytest.mark.parametrize("dim", [8, 32])
def test_xpos_matches_rotary_embedding_torch(seq, dim):
    ret = pytest.importorskip(
        "rotary_embedding_torch", reason="needs rotary-embedding-torch (make venv-torch)"
    )
    rot = ret.RotaryEmbedding(dim=dim, use_xpos=True, xpos_scale_base=512)
    rng = np.random.default_rng(seq * 100 + dim)
    q = rng.normal(size=(2, seq, dim))
    k = rng.normal(size=(2, seq, dim))
    qp, kp = rot.rotate_queries_and_keys(torch.from_numpy(q), torch.from_numpy(k))
    # the peer computes in float32 and centres the scale at floor(seq / 2)
    qo, ko = refimpl.apply_xpos(q, k, np.arange(seq), pairing="interleaved", scale_offset=seq // 2)
    np.testing.assert_allclose(qo, qp.double().numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(ko, kp.double().numpy(), rtol=1e-5, atol=1e-5)
    # scores do not depend on the centring
    q0, k0 = refimpl.apply_xpos(q, k, np.arange(seq), pairing="interleaved")
    np.testing.assert_allclose(q0 @ np.swapaxes(k0, -1, -2), qo @ np.swapaxes(ko, -1, -2))


# --- M-RoPE: transformers' Qwen2-VL and Qwen3-VL rotary modules ---------------------------------


def _mrope_ids(seed, seq=23):
    rng = np.random.default_rng(seed)
    text = np.arange(5)
    img = (
        np.stack(np.meshgrid(np.arange(1), np.arange(3), np.arange(4), indexing="ij")).reshape(
            3, -1
        )
        + 5
    )  # an image block (t, h, w) after 5 text tokens
    tail = np.arange(seq - 5 - img.shape[1]) + 9
    ids = np.concatenate([np.stack([text] * 3), img, np.stack([tail] * 3)], axis=1)
    assert ids.shape == (3, seq)
    return ids + int(rng.integers(0, 1000))


@pytest.mark.parametrize("section", [[4, 6, 6], [2, 3, 3], [16, 8, 8]])
def test_mrope_matches_qwen2_vl_rotary(section):
    from transformers.models.qwen2_vl.configuration_qwen2_vl import Qwen2VLTextConfig
    from transformers.models.qwen2_vl.modeling_qwen2_vl import Qwen2VLRotaryEmbedding

    half = sum(section)
    cfg = Qwen2VLTextConfig(
        hidden_size=2 * half * 2,
        num_attention_heads=2,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "mrope_section": section},
    )
    rot = Qwen2VLRotaryEmbedding(cfg)
    ids = _mrope_ids(sum(section))
    x = torch.zeros(1, ids.shape[1], 4, dtype=torch.float32)
    cos_p, sin_p = rot(x, torch.from_numpy(ids)[:, None, :])  # (1, seq, d)
    inv = rot.inv_freq.double().numpy()  # the peer's float32 frequencies, taken as given
    cos, sin = refimpl.mrope_cos_sin(ids, inv, section)
    # peer: float32 angles; compare within float32 angle rounding at positions ~1e3
    tol = 2e-4
    np.testing.assert_allclose(np.concatenate([cos, cos], -1), cos_p[0].double(), atol=tol)
    np.testing.assert_allclose(np.concatenate([sin, sin], -1), sin_p[0].double(), atol=tol)


def test_mrope_interleaved_matches_qwen3_vl_rotary():
    from transformers.models.qwen3_vl.configuration_qwen3_vl import Qwen3VLTextConfig
    from transformers.models.qwen3_vl.modeling_qwen3_vl import Qwen3VLTextRotaryEmbedding

    section = [24, 20, 20]
    cfg = Qwen3VLTextConfig(
        hidden_size=256,
        num_attention_heads=2,
        head_dim=128,
        rope_parameters={"rope_type": "default", "rope_theta": 5e6, "mrope_section": section},
    )
    rot = Qwen3VLTextRotaryEmbedding(cfg)
    ids = _mrope_ids(3)
    x = torch.zeros(1, ids.shape[1], 4, dtype=torch.float32)
    cos_p, sin_p = rot(x, torch.from_numpy(ids)[:, None, :])
    inv = rot.inv_freq.double().numpy()
    cos, sin = refimpl.mrope_cos_sin(ids, inv, section, layout="interleaved")
    np.testing.assert_allclose(np.concatenate([cos, cos], -1), cos_p[0].double(), atol=2e-4)
    np.testing.assert_allclose(np.concatenate([sin, sin], -1), sin_p[0].double(), atol=2e-4)
    # and it really differs from the blocked layout on the image tokens
    cb, _ = refimpl.mrope_cos_sin(ids, inv, section, layout="blocked")
    assert not np.allclose(cb, cos)


def test_mrope_applied_matches_qwen2_vl_apply_rotary_pos_emb():
    from transformers.models.qwen2_vl.modeling_qwen2_vl import apply_rotary_pos_emb

    section = [2, 3, 3]
    inv = refimpl.inv_freq(16, 10000.0)
    ids = _mrope_ids(1)
    cos, sin = refimpl.mrope_cos_sin(ids, inv, section)
    rng = np.random.default_rng(5)
    q = rng.normal(size=(1, 2, ids.shape[1], 16))
    c2 = torch.from_numpy(np.concatenate([cos, cos], -1))[None]
    s2 = torch.from_numpy(np.concatenate([sin, sin], -1))[None]
    qp, _ = apply_rotary_pos_emb(torch.from_numpy(q), torch.from_numpy(q), c2, s2)
    np.testing.assert_allclose(refimpl.apply_rope_tables(q, cos, sin), qp.numpy(), atol=1e-13)


# --- 2-D RoPE: transformers' Qwen2-VL vision rotary -----------------------------------------------


def test_rope_2d_matches_qwen2_vl_vision_rotary():
    from transformers.models.qwen2_vl.configuration_qwen2_vl import Qwen2VLVisionConfig
    from transformers.models.qwen2_vl.modeling_qwen2_vl import (
        Qwen2VLVisionRotaryEmbedding,
        apply_rotary_pos_emb_vision,
    )

    head_dim = 32
    cfg = Qwen2VLVisionConfig(embed_dim=head_dim * 2, num_heads=2)
    rot = Qwen2VLVisionRotaryEmbedding(cfg)
    rows, cols = np.meshgrid(np.arange(6), np.arange(5), indexing="ij")
    rows, cols = rows.ravel(), cols.ravel()
    pos = torch.from_numpy(np.stack([rows, cols], axis=1))  # (N, 2): (h, w)
    cos, sin = rot(torch.zeros(1), pos)
    rng = np.random.default_rng(2)
    q = rng.normal(size=(rows.size, 2, head_dim))  # (seq, heads, dim) as the vision tower
    qp, _ = apply_rotary_pos_emb_vision(torch.from_numpy(q), torch.from_numpy(q), cos, sin)
    inv = rot.inv_freq.double().numpy()
    ours = refimpl.apply_rope_2d(np.swapaxes(q, 0, 1), rows, cols, inv_freq=inv)
    np.testing.assert_allclose(np.swapaxes(ours, 0, 1), qp.double().numpy(), atol=1e-5)
    # with our own exact frequencies the difference is the float32 rounding of the peer's
    exact = refimpl.apply_rope_2d(np.swapaxes(q, 0, 1), rows, cols, base=10000.0)
    np.testing.assert_allclose(np.swapaxes(exact, 0, 1), qp.double().numpy(), atol=1e-5)
