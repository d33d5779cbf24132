"""refimpl.remap.rerotate_keys_mrope against ggml's own M-RoPE kernel (``ggml_rope_multi``,
ggml-python built from source by ``make test-engines``), in llama.cpp's MROPE (blocked
sections ``[t, h, w, e]``) and IMROPE (interleaved sector rule with its fourth row) modes.

A K-shift in ggml is one more ``ggml_rope_multi`` on the cached keys with the shift as the
positions. ggml builds each pair's angle by cumulative float32 products of
``theta_scale = base**(-2/n_dims)``, which drift by up to about ``n_dims/2`` float32 ulps, so
the bound on a shift of ``|delta|`` positions is ``(|delta| n_dims/2 + 4) 2**-24`` per unit of
key (the 4: cos/sin and the rotation's own float32 rounding).
"""

import ctypes

import numpy as np
import pytest

from refimpl import inv_freq
from refimpl.multiaxis import mrope_cos_sin
from refimpl.remap import rerotate_keys_mrope
from refimpl.rotary import apply_rope_tables

pytestmark = pytest.mark.engines

ggml = pytest.importorskip("ggml", reason="ggml-python not installed (make test-engines builds it)")
ggml_utils = pytest.importorskip("ggml.utils")

D, BASE, N = 32, 1e6, 9
CASES = {  # mode, refimpl layout, llama.cpp's rope.dimension_sections [t, h, w, e]
    "mrope": (ggml.GGML_ROPE_TYPE_MROPE, "blocked", [4, 6, 6, 0]),
    "imrope": (ggml.GGML_ROPE_TYPE_IMROPE, "imrope", [6, 5, 5, 0]),
    "imrope-fourth-row": (ggml.GGML_ROPE_TYPE_IMROPE, "imrope", [5, 4, 4, 3]),
}


def _rope_multi(x, pos4, sections, mode):
    """ggml_rope_multi on x (n, D) (one head) at position rows pos4 (4, n), float32."""
    ctx = ggml.ggml_init(ggml.ggml_init_params(mem_size=64 * 2**20, mem_buffer=None))
    try:
        a = ggml_utils.from_numpy(np.ascontiguousarray(x[:, None, :], dtype=np.float32), ctx)
        b = ggml_utils.from_numpy(np.ascontiguousarray(pos4.reshape(-1), dtype=np.int32), ctx)
        sec = (ctypes.c_int * 4)(*sections)
        y = ggml.ggml_rope_multi(ctx, a, b, None, D, sec, mode, 0, BASE, 1.0, 0.0, 1.0, 32.0, 1.0)
        graph = ggml.ggml_new_graph(ctx)
        ggml.ggml_build_forward_expand(graph, y)
        ggml.ggml_graph_compute_with_ctx(ctx, graph, 1)
        return ggml_utils.to_numpy(y).copy()[:, 0, :].astype(np.float64)
    finally:
        ggml.ggml_free(ctx)


def _case(name, seed=0):
    mode, layout, sec = CASES[name]
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, 4000, (4, N))
    delta = rng.integers(-300, 300, (4, N))
    if sec[3] == 0:  # llama.cpp's fourth row of text and image tokens
        ids[3], delta[3] = 0, 0
    return mode, layout, sec, ids, delta, rng.standard_normal((N, D))


def _bound(delta, k):
    return (np.abs(delta).max() * D / 2 + 4) * 2.0**-24 * 2 * np.abs(k).max()


@pytest.mark.parametrize("name", sorted(CASES))
def test_ggml_k_shift_equals_the_golden(name):
    mode, layout, sec, ids, delta, k0 = _case(name)
    cached = _rope_multi(k0, ids, sec, mode)  # keys as ggml cached them
    shifted = _rope_multi(cached, delta, sec, mode)  # ggml's K-shift
    golden = rerotate_keys_mrope(cached, delta, inv_freq(D, BASE), mrope_section=sec, layout=layout)
    assert np.abs(shifted - golden).max() <= _bound(delta, cached)


@pytest.mark.parametrize("name", sorted(CASES))
def test_ggml_shift_then_rotate_equals_rotate_at_shifted_ids(name):
    mode, layout, sec, ids, delta, k0 = _case(name, seed=1)
    shifted = _rope_multi(_rope_multi(k0, ids, sec, mode), delta, sec, mode)
    direct = _rope_multi(k0, ids + delta, sec, mode)
    exact = apply_rope_tables(
        k0, *mrope_cos_sin(ids + delta, inv_freq(D, BASE), sec, layout=layout)
    )
    # ggml's cumulative frequencies drift with the position: bound both by the largest id
    bound = _bound(ids + np.abs(delta), k0)
    assert np.abs(shifted - exact).max() <= bound and np.abs(direct - exact).max() <= bound


def test_the_other_layouts_rule_is_far_from_ggml():
    """The test can fail: IMROPE's keys shifted with the blocked rule are off by O(1)."""
    mode, _, sec, ids, delta, k0 = _case("imrope", seed=2)
    cached = _rope_multi(k0, ids, sec, mode)
    shifted = _rope_multi(cached, delta, sec, mode)
    wrong = rerotate_keys_mrope(cached, delta, inv_freq(D, BASE), mrope_section=sec)
    assert np.abs(shifted - wrong).max() > 0.1
