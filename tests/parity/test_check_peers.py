"""Peers' RoPE implementations pass check_rope (run the peer; skip with a reason when absent).

transformers: LlamaRotaryEmbedding (float32 angles) + apply_rotary_pos_emb (half-split), with and
without YaRN; rotary-embedding-torch: RotaryEmbedding.rotate_queries_or_keys (interleaved).
"""

import types

import numpy as np
import pytest

from refimpl.check import check_rope

torch = pytest.importorskip("torch", reason="torch not installed (make venv-torch)")


def _transformers_fn(head_dim, rope_theta, rope_parameters=None, partial=None):
    llama = pytest.importorskip(
        "transformers.models.llama.modeling_llama", reason="transformers not installed"
    )
    from transformers import LlamaConfig

    params = {"rope_type": "default", "rope_theta": rope_theta}
    if rope_parameters:
        params.update(rope_parameters)
    kw = {} if partial is None else {"partial_rotary_factor": partial}
    config = LlamaConfig(
        hidden_size=head_dim * 2, num_attention_heads=2, head_dim=head_dim,
        max_position_embeddings=32768, rope_parameters=params, **kw,
    )  # fmt: skip
    rotary = llama.LlamaRotaryEmbedding(config)

    def fn(x, positions):
        x = torch.as_tensor(np.asarray(x), dtype=torch.float64)
        pos = torch.as_tensor(np.asarray(positions), dtype=torch.int64)[None]  # (1, seq)
        q = x[None, None]  # (batch, heads, seq, dim)
        cos, sin = rotary(q, pos)
        q_out, _ = llama.apply_rotary_pos_emb(q, q, cos, sin)
        return q_out[0, 0].numpy()

    return fn, rotary


@pytest.mark.parametrize("base", [10000.0, 500000.0])
def test_transformers_llama_rope_passes(base):
    fn, _ = _transformers_fn(64, base)
    rep = check_rope(fn, dim=64, base=base, pairing="half")
    assert rep.ok, str(rep)
    assert rep.precision == "float32"  # transformers computes the angles in float32
    assert rep.base == base and rep.index_origin == 0 and rep.position_offset == 0.0


def test_transformers_yarn_attention_scaling_once():
    fn, rotary = _transformers_fn(
        64, 10000.0, {"rope_type": "yarn", "factor": 8.0, "original_max_position_embeddings": 4096}
    )
    inv = rotary.inv_freq.double().numpy()
    scale = float(rotary.attention_scaling)
    assert scale == pytest.approx(0.1 * np.log(8.0) + 1.0)
    # expected: transformers' own frequencies and factor (a duck-typed RopeSpec)
    spec = types.SimpleNamespace(
        dim=64, rotary_dim=64, base=10000.0, pairing="half", inv_freq=inv,
        attention_scaling=scale,
    )  # fmt: skip
    rep = check_rope(fn, dim=64, expected=spec)
    assert rep.ok and rep.precision == "float32", str(rep)
    assert rep.attention_scaling_applied == "once"
    np.testing.assert_allclose(rep.inv_freq, inv, rtol=1e-6)  # YaRN's, read back
    # without expectations: the family and the parameters consistent with the measurement
    free = check_rope(fn, dim=64)
    assert free.ok and free.scaling == "yarn", str(free)
    assert free.scaling_params["factor"] == 8.0
    assert free.scaling_params["original_max_position"] == 4096
    assert free.attention_scaling_applied == "once"


def test_rotary_embedding_torch_passes():
    ret = pytest.importorskip("rotary_embedding_torch", reason="rotary-embedding-torch absent")
    rot = ret.RotaryEmbedding(dim=32)

    def fn(x, positions):
        x = torch.as_tensor(np.asarray(x), dtype=torch.float64)
        pos = torch.as_tensor(np.asarray(positions), dtype=torch.float64)
        freqs = rot(pos)  # (seq, 32): angles repeated per pair (interleaved)
        return ret.apply_rotary_emb(freqs, x).numpy()

    rep = check_rope(fn, dim=32, base=10000.0, pairing="interleaved")
    assert rep.ok, str(rep)
    assert rep.pairing == "interleaved"


def test_rotary_embedding_torch_partial_passes():
    ret = pytest.importorskip("rotary_embedding_torch", reason="rotary-embedding-torch absent")
    rot = ret.RotaryEmbedding(dim=16)  # rotates the first 16 of 64 features

    def fn(x, positions):
        x = torch.as_tensor(np.asarray(x), dtype=torch.float64)
        freqs = rot(torch.as_tensor(np.asarray(positions), dtype=torch.float64))
        return ret.apply_rotary_emb(freqs, x).numpy()

    rep = check_rope(fn, dim=64, base=10000.0, pairing="interleaved", rotary_dim=16)
    assert rep.ok, str(rep)
    assert rep.rotary_dim == 16


def test_torch_only_function_is_called_with_tensors():
    # fn uses tensor methods, so NumPy input raises and the checker retries with torch tensors
    def torch_rope(x, positions):
        d = x.shape[-1]
        inv = 10000.0 ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
        ang = positions.unsqueeze(-1).double() * inv
        x1, x2 = x[..., : d // 2], x[..., d // 2 :]
        return torch.cat([x1 * ang.cos() - x2 * ang.sin(), x2 * ang.cos() + x1 * ang.sin()], -1)

    rep = check_rope(torch_rope, dim=32, base=10000.0, pairing="half")
    assert rep.ok and rep.precision == "float64", str(rep)
    rep = check_rope(torch_rope, dim=32, backend="torch")
    assert rep.ok
