"""Parity of refimpl's timm-style vision RoPE with timm 1.0.31's own code, run here.

``timm``'s package ``__init__`` imports torchvision, which is not installed (installing it would
replace torch 2.13.0), so the test loads only ``timm/layers/pos_embed_sincos.py`` and the three
small modules it imports (``_fx``, ``grid``, ``trace_utils``; ``_fx`` imports torchvision only
inside a ``try``). Install with ``pip install timm==1.0.31 --no-deps``.

Compared: ``pixel_freq_bands``, ``build_rotary_pos_embed`` (pixel grid, with and without
``ref_feat_shape``), ``RotaryEmbeddingCat`` and its rotation ``apply_rot_embed_cat``, and
RoPE-Mixed's ``init_random_2d_freqs`` / ``get_mixed_freqs`` (the frequency formula with the
random directions passed in, and the angles of learned frequencies), and refimpl's analytic
gradient of RoPE-Mixed scores against torch autograd through timm's functions.
"""

import importlib
import importlib.util
import sys
import types

import numpy as np
import pytest

from refimpl.multiaxis import (
    apply_rope_tables,
    rope_mixed_angles,
    timm_pixel_bands,
    timm_rope_angles,
)

torch = pytest.importorskip("torch", reason="parity tests need torch (make venv-torch)")

pytestmark = pytest.mark.parity

TIMM_VERSION = "1.0.31"
# float32 angles of at most max_res/2 * pi * |coord| <= ~400 rad: half an ulp is ~3e-5
ATOL_F32 = 1e-4


def _load_pos_embed_sincos():
    """Import timm.layers.pos_embed_sincos without running timm's package __init__."""
    spec = importlib.util.find_spec("timm")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip(f"timm is not installed (pip install timm=={TIMM_VERSION} --no-deps)")
    root = spec.submodule_search_locations[0]
    saved = {k: sys.modules.get(k) for k in ("timm", "timm.layers")}
    try:
        pkg = types.ModuleType("timm")
        pkg.__path__ = [root]
        layers = types.ModuleType("timm.layers")
        layers.__path__ = [f"{root}/layers"]
        sys.modules["timm"], sys.modules["timm.layers"] = pkg, layers
        mod = importlib.import_module("timm.layers.pos_embed_sincos")
        version = {}
        with open(f"{root}/version.py") as fh:
            exec(fh.read(), version)
    finally:
        for k, v in saved.items():
            if v is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = v
        for k in [k for k in sys.modules if k.startswith("timm.layers.")]:
            sys.modules.pop(k)
    if version.get("__version__") != TIMM_VERSION:
        pytest.skip(f"timm {version.get('__version__')} installed, the test pins {TIMM_VERSION}")
    return mod


@pytest.fixture(scope="module")
def timm_rope():
    return _load_pos_embed_sincos()


@pytest.mark.parametrize("linear", [False, True])
@pytest.mark.parametrize(("n", "res"), [(16, 224.0), (8, 64.0), (1, 2.0)])
def test_pixel_bands_match(timm_rope, n, res, linear):
    peer = timm_rope.pixel_freq_bands(n, res, linear_bands=linear).double().numpy()
    np.testing.assert_allclose(timm_pixel_bands(n, max_res=res, linear=linear), peer, rtol=1e-6)


@pytest.mark.parametrize(
    ("shape", "ref", "dim"),
    [((14, 14), None, 64), ((7, 9), None, 32), ((16, 16), (14, 14), 64), ((6, 10), (8, 12), 16)],
)
def test_build_rotary_pos_embed_matches(timm_rope, shape, ref, dim):
    sin_t, cos_t = timm_rope.build_rotary_pos_embed(
        list(shape), dim=dim, max_res=224, in_pixels=True, ref_feat_shape=ref
    )
    ang = timm_rope_angles(shape, dim=dim, max_res=224.0, ref_feat_shape=ref)
    # timm repeats each pair's value twice (interleaved layout [f0, f0, f1, f1, ...])
    assert sin_t.shape == (shape[0] * shape[1], dim)
    np.testing.assert_allclose(sin_t[:, 0::2].double().numpy(), np.sin(ang), atol=ATOL_F32)
    np.testing.assert_allclose(cos_t[:, 1::2].double().numpy(), np.cos(ang), atol=ATOL_F32)


def test_rotary_embedding_cat_rotation_matches(timm_rope):
    dim, shape, ref = 32, (10, 12), (8, 8)
    module = timm_rope.RotaryEmbeddingCat(
        dim, max_res=64, feat_shape=list(shape), ref_feat_shape=ref
    )
    emb = module.get_embed()  # (N, 2 dim): [sin | cos]
    x = torch.randn(2, shape[0] * shape[1], dim, generator=torch.Generator().manual_seed(3))
    peer = timm_rope.apply_rot_embed_cat(x.double(), emb.double()).numpy()
    ang = timm_rope_angles(shape, dim=dim, max_res=64.0, ref_feat_shape=ref)
    ours = apply_rope_tables(x.double().numpy(), np.cos(ang), np.sin(ang), pairing="interleaved")
    np.testing.assert_allclose(ours, peer, atol=ATOL_F32)


def test_rope_mixed_angles_match_get_mixed_freqs(timm_rope):
    torch.manual_seed(0)
    freqs = timm_rope.init_random_2d_freqs(16, depth=1, num_heads=3)[:, 0]  # (2, heads, 8)
    t_x, t_y = timm_rope.get_mixed_grid([5, 6])  # row index on t_x, column on t_y ('ij')
    emb = timm_rope.get_mixed_freqs(freqs.double(), t_x.double(), t_y.double())
    sin_t = emb[..., :16][..., 0::2].numpy()  # (heads, N, 8)
    ang = rope_mixed_angles(t_x.numpy(), t_y.numpy(), freqs.double().numpy())
    # get_mixed_freqs computes the angles in float32 whatever the input dtype (angles < 10 rad)
    np.testing.assert_allclose(np.sin(ang), sin_t, atol=1e-6)
    # timm's initial magnitudes are temperature^(-4j/D), as rope_mixed_frequencies states
    mag = torch.hypot(freqs[0], freqs[1])[0].double().numpy()
    want = 10.0 ** (-4 * np.arange(4) / 16)
    np.testing.assert_allclose(mag, np.concatenate([want, want]), rtol=1e-6)


def test_rope_mixed_frequency_grad_matches_autograd_through_timm(timm_rope):
    """The analytic gradient of the scores with respect to the mixed frequencies against
    torch autograd through timm's get_mixed_freqs and apply_rot_embed_cat (float32 inside)."""
    from refimpl.multiaxis import rope_mixed_frequency_grad, rope_mixed_scores

    torch.manual_seed(1)
    freqs = timm_rope.init_random_2d_freqs(16, depth=1, num_heads=2)[:, 0].clone()
    freqs.requires_grad_(True)
    t_x, t_y = timm_rope.get_mixed_grid([4, 5])
    emb = timm_rope.get_mixed_freqs(freqs, t_x, t_y)  # (heads, N, 2 D)
    gen = torch.Generator().manual_seed(2)
    q, k = torch.randn(2, 2, 20, 16, generator=gen)
    scores = timm_rope.apply_rot_embed_cat(q, emb) @ timm_rope.apply_rot_embed_cat(k, emb).mT
    upstream = torch.randn(2, 20, 20, generator=gen)
    (upstream * scores).sum().backward()
    pos = torch.stack([t_x, t_y], dim=1).double().numpy()
    f = freqs.detach().double().numpy()
    qn, kn, g = q.double().numpy(), k.double().numpy(), upstream.double().numpy()
    ours = rope_mixed_scores(qn, kn, pos, pos, f)
    np.testing.assert_allclose(ours, scores.detach().double().numpy(), atol=1e-4)
    grad = rope_mixed_frequency_grad(qn, kn, pos, pos, f, g)
    # float32 forward and backward over 400 score terms per head
    peer = freqs.grad.double().numpy()
    assert np.abs(peer).max() > 1.0  # gradients of order 10-100: the tolerance is tight
    np.testing.assert_allclose(grad, peer, rtol=1e-4, atol=1e-3)
