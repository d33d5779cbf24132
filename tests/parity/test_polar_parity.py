"""PoPE against x-transformers' PolarEmbedding and apply_polar_pos_emb (parity extra)."""

import numpy as np
import pytest

from refimpl.polar import apply_pope

pytestmark = pytest.mark.parity

torch = pytest.importorskip("torch")
xt = pytest.importorskip("x_transformers.x_transformers", reason="x-transformers not installed")


def test_queries_and_keys_match_x_transformers():
    torch.manual_seed(0)
    heads, d, n = 2, 16, 12
    # bias_uniform_init=True fails in x-transformers 2.31.10 (an in-place uniform_ on a leaf
    # that requires grad), so the bias is drawn the same way under no_grad
    emb = xt.PolarEmbedding(d, heads)
    with torch.no_grad():
        emb.learned_bias.uniform_(-2.0 * np.pi, 0.0)
    pos = torch.arange(n)
    freqs, bias = emb(pos)
    q = torch.randn(1, heads, n, d)
    k = torch.randn(1, heads, n, d)
    q_x = xt.apply_polar_pos_emb(q, freqs).detach().numpy()
    k_x = xt.apply_polar_pos_emb(k, freqs + bias).detach().numpy()
    delta = bias.detach().numpy()[:, 0, :]  # (heads, d)
    for h in range(heads):
        q_r = apply_pope(q[0, h].numpy(), pos.numpy())
        k_r = apply_pope(k[0, h].numpy(), pos.numpy(), phase_bias=delta[h])
        np.testing.assert_allclose(q_r, q_x[0, h], rtol=2e-6, atol=2e-5)
        np.testing.assert_allclose(k_r, k_x[0, h], rtol=2e-6, atol=2e-5)


def test_the_uniform_bias_initialisation_of_this_version_raises():
    """Kept as a documented peer bug: if it stops raising, the workaround above can go."""
    with pytest.raises(RuntimeError, match="leaf Variable"):
        xt.PolarEmbedding(8, 2, bias_uniform_init=True)
