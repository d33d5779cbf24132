"""transformers' rotary module and Meta's complex form, on each available device and in
float32, bfloat16 and float16, against refimpl in float64.

Error model (numerics notes section 5; u = unit roundoff of the storage dtype: 2^-24 float32,
2^-8 bfloat16, 2^-11 float16; positions m < 2^24, theta_i <= 1):

* table: transformers computes the angle as float32(m) * float32(theta_i), one float32 rounding,
  with theta_i itself rounded to float32, so the angle is off by at most about
  2 * 2^-24 * m * theta_i; float32 cos/sin add about 2^-24; the cast of the tables to the model
  dtype adds u. Envelope used: e_table = 1.5 * 2^-23 * m + 2^-23 + u (1.5x margin).
* application in the model dtype: q * cos + rotate_half(q) * sin rounds each product and the sum
  to the dtype: at most 3 u (|x1| + |x2|) for the pair (x1, x2).
* per entry: |got - ref| <= (|x1| + |x2|) * (e_table + 3 u), with ref = refimpl float64 applied to
  the same dtype-rounded input. The complex form computes in float32 and rounds once to the
  dtype, which the same envelope covers.

The tests run on the CPU whenever torch is installed and on CUDA when a device is present.
"""

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch is not installed (make test-gpu installs it)")

import refimpl  # noqa: E402

DEVICES = [
    "cpu",
    pytest.param(
        "cuda",
        marks=pytest.mark.skipif(
            not torch.cuda.is_available(), reason="no CUDA device on this machine"
        ),
    ),
]
UNIT = {"float32": 2.0**-24, "bfloat16": 2.0**-8, "float16": 2.0**-11}
DTYPES = list(UNIT)
DIM, HEADS, SEQ, BASE = 64, 4, 2048, 10000.0


def _inputs(dtype, device):
    g = torch.Generator().manual_seed(0)
    q = torch.randn(1, HEADS, SEQ, DIM, generator=g).to(getattr(torch, dtype)).to(device)
    pos = torch.arange(SEQ) * 3 + 5  # up to 6146: the angle error term matters
    return q, pos


def _bound(x64, pairing, dtype):
    """(|x1| + |x2|) * (e_table + 3u) per entry, for the pair each entry belongs to."""
    u = UNIT[dtype]
    m = (np.arange(SEQ) * 3 + 5).astype(np.float64)[:, None]
    e_table = 1.5 * 2.0**-23 * m + 2.0**-23 + u  # (seq, 1)
    i1, i2 = refimpl.pair_indices(DIM, pairing)
    mag = np.abs(x64[..., i1]) + np.abs(x64[..., i2])  # (..., seq, d/2)
    per_pair = mag * (e_table + 3 * u)
    out = np.empty_like(x64)
    out[..., i1] = per_pair
    out[..., i2] = per_pair
    return out


def _transformers_apply(q, pos, device):
    """transformers' LlamaRotaryEmbedding tables (in q's dtype) applied by apply_rotary_pos_emb."""
    from transformers import LlamaConfig
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding, apply_rotary_pos_emb

    cfg = LlamaConfig(
        hidden_size=DIM * HEADS,
        num_attention_heads=HEADS,
        max_position_embeddings=8192,
        rope_parameters={"rope_type": "default", "rope_theta": BASE},
    )
    rope = LlamaRotaryEmbedding(cfg).to(device)
    cos, sin = rope(q, pos[None].to(device))
    assert cos.dtype == q.dtype
    return apply_rotary_pos_emb(q, q, cos, sin)[0]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_transformers_rotary_embedding_and_apply(device, dtype):
    pytest.importorskip("transformers", reason="transformers is not installed")
    q, pos = _inputs(dtype, device)
    got = _transformers_apply(q, pos, device)
    x64 = q.float().cpu().numpy().astype(np.float64)
    ref = refimpl.apply_rope(x64, pos.numpy(), base=BASE, pairing="half")
    err = np.abs(got.float().cpu().numpy().astype(np.float64) - ref)
    bound = _bound(x64, "half", dtype)
    assert np.all(err <= bound), f"worst excess {np.max(err - bound):.3g}"
    assert err.max() > 0  # the peer really computed in reduced precision


def _meta_freqs_cis(dim, end_positions, theta, device):
    """precompute_freqs_cis as in Meta's reference (peer-formulas section 2.1), float32."""
    f = 1.0 / (theta ** (torch.arange(0, dim, 2)[: dim // 2].float() / dim))
    angle = torch.outer(end_positions.float(), f)
    return torch.polar(torch.ones_like(angle), angle).to(device)


def _meta_apply(x, freqs_cis):
    """apply_rotary_emb: pairs (x_2i, x_2i+1) as complex numbers, float32, cast back."""
    xc = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
    out = torch.view_as_real(xc * freqs_cis).flatten(-2)
    return out.type_as(x)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_meta_complex_form(device, dtype):
    q, pos = _inputs(dtype, device)
    freqs_cis = _meta_freqs_cis(DIM, pos, BASE, device)  # (seq, d/2)
    got = _meta_apply(q, freqs_cis)
    x64 = q.float().cpu().numpy().astype(np.float64)
    ref = refimpl.apply_rope(x64, pos.numpy(), base=BASE, pairing="interleaved")
    err = np.abs(got.float().cpu().numpy().astype(np.float64) - ref)
    bound = _bound(x64, "interleaved", dtype)
    assert np.all(err <= bound), f"worst excess {np.max(err - bound):.3g}"
    assert err.max() > 0


def test_error_model_is_not_vacuous():
    """The envelope is tight enough to catch a wrong base or a missing position offset."""
    q, pos = _inputs("float32", "cpu")
    x64 = q.numpy().astype(np.float64)
    ref = refimpl.apply_rope(x64, pos.numpy(), base=BASE, pairing="interleaved")
    wrong = _meta_apply(q, _meta_freqs_cis(DIM, pos + 1, BASE, "cpu")).numpy()
    assert np.any(np.abs(wrong - ref) > _bound(x64, "interleaved", "float32"))
