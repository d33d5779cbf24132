"""CoPE against x-transformers' CoPE inside its Attend module (pinned in the parity extra)."""

import numpy as np
import pytest

from refimpl.contextual import cope_logits

pytestmark = pytest.mark.parity

torch = pytest.importorskip("torch")
attend = pytest.importorskip("x_transformers.attend", reason="x-transformers not installed")
xt = pytest.importorskip("x_transformers.x_transformers")


@pytest.mark.parametrize(("q_len", "k_len", "max_pos"), [(6, 6, 4), (9, 9, 16), (3, 8, 5)])
def test_cope_logits_match_x_transformers(q_len, k_len, max_pos):
    torch.manual_seed(0)
    heads, d = 2, 8
    cope = xt.CoPE(dim=d, heads=heads, max_pos=max_pos)
    with torch.no_grad():
        cope.pos_emb.normal_()
    att = attend.Attend(causal=True, cope=cope)
    q = torch.randn(1, heads, q_len, d, dtype=torch.float64)
    k = torch.randn(1, heads, k_len, d, dtype=torch.float64)
    v = torch.randn(1, heads, k_len, d, dtype=torch.float64)
    cope.double()
    _, inter = att(q, k, v)
    theirs = inter.pre_softmax_attn[0].detach().numpy()
    emb = cope.pos_emb.detach().numpy()
    ours = np.stack([cope_logits(q[0, h].numpy(), k[0, h].numpy(), emb) for h in range(heads)])
    allowed = np.isfinite(ours)
    np.testing.assert_allclose(ours[allowed], theirs[allowed], rtol=1e-12, atol=1e-12)
