"""refimpl.engines.ggml_cos_sin against ggml's own CPU rope kernel (ggml-python, built from source).

The tables are read from ``ggml_rope_ext`` in NEOX mode on inputs whose first half of every
pair is 1 and second half 0, so the outputs are cos and sin without any rounding of a
rotation. ggml computes ``cosf``/``sinf`` with the C library, which can differ from the
correctly rounded value by one float32 ulp: that is the stated bound.
"""

import glob
import os

import numpy as np
import pytest

from refimpl.engines import ggml_cos_sin
from refimpl.gguf import _full_and_local
from refimpl.pipelines import spec_ggml_arguments

pytestmark = pytest.mark.engines

ggml = pytest.importorskip("ggml", reason="ggml-python not installed (make test-engines builds it)")
ggml_utils = pytest.importorskip("ggml.utils")

NEOX = 2
CASES = {
    "llama3-base": dict(n_dims=128, freq_base=500000.0),
    "linear-4": dict(n_dims=64, freq_base=10000.0, freq_scale=0.25),
    "yarn-8": dict(n_dims=128, freq_base=1e6, freq_scale=1 / 8, ext_factor=1.0, n_ctx_orig=4096),
    "yarn-gpt-oss-like": dict(
        n_dims=64,
        freq_base=150000.0,
        freq_scale=1 / 32,
        ext_factor=1.0,
        n_ctx_orig=4096,
        attn_factor=0.75,
    ),
    "rope-freqs": dict(n_dims=128, freq_base=500000.0, freq_factors=np.linspace(1, 8, 64)),
}


def _live(
    positions,
    n_dims,
    freq_base,
    freq_scale=1.0,
    ext_factor=0.0,
    attn_factor=1.0,
    beta_fast=32.0,
    beta_slow=1.0,
    n_ctx_orig=0,
    freq_factors=None,
):
    ctx = ggml.ggml_init(ggml.ggml_init_params(mem_size=256 * 2**20, mem_buffer=None))
    try:
        x = np.zeros((len(positions), 1, n_dims), np.float32)
        x[..., : n_dims // 2] = 1.0
        a = ggml_utils.from_numpy(x, ctx)
        b = ggml_utils.from_numpy(np.asarray(positions, np.int32), ctx)
        c = (
            None
            if freq_factors is None
            else ggml_utils.from_numpy(np.asarray(freq_factors, np.float32), ctx)
        )
        y = ggml.ggml_rope_ext(
            ctx,
            a,
            b,
            c,
            n_dims,
            NEOX,
            n_ctx_orig,
            freq_base,
            freq_scale,
            ext_factor,
            attn_factor,
            beta_fast,
            beta_slow,
        )
        graph = ggml.ggml_new_graph(ctx)
        ggml.ggml_build_forward_expand(graph, y)
        ggml.ggml_graph_compute_with_ctx(ctx, graph, 1)
        out = ggml_utils.to_numpy(y).copy()
    finally:
        ggml.ggml_free(ctx)
    return out[:, 0, : n_dims // 2], out[:, 0, n_dims // 2 :]


@pytest.mark.parametrize("name", sorted(CASES))
def test_tables_match_ggml_within_one_float32_ulp(name):
    kw = CASES[name]
    pos = np.arange(0, 2**20, 997)
    c_live, s_live = _live(pos, **kw)
    c, s = ggml_cos_sin(pos, **kw)
    mag = float(np.abs(c_live[0]).max())  # the magnitude at position 0 (cos 0 times mscale)
    ulp = float(np.spacing(np.float32(mag)))
    assert np.abs(c - c_live).max() <= ulp and np.abs(s - s_live).max() <= ulp
    # most entries are bit-identical: only the C library's cosf/sinf last bit differs
    assert np.mean(c == c_live) > 0.9 and np.mean(s == s_live) > 0.9


def test_the_unfused_blend_is_not_what_this_build_computes():
    kw = CASES["yarn-8"]
    pos = np.arange(0, 2**20, 997)
    c_live, _ = _live(pos, **kw)
    c_fused, _ = ggml_cos_sin(pos, **kw)
    c_plain, _ = ggml_cos_sin(pos, fused=False, **kw)
    assert np.abs(c_fused - c_live).max() < np.abs(c_plain - c_live).max()


# ---------------------------------------------------------------------------------------------
# The spec's precision name "ggml-float32" against the live kernel, for released configs.

HERE = os.path.dirname(__file__)
RELEASED = sorted(
    f
    for f in glob.glob(os.path.join(HERE, "..", "parity", "configs", "*.json"))
    + glob.glob(os.path.join(HERE, "configs", "*.json"))
    if ".handmade." not in f and ".transformers-defaults." not in f
)


def _spec(path):
    try:
        return _full_and_local(path)[0]
    except ValueError as exc:  # a config the package refuses (tested elsewhere)
        pytest.skip(f"{os.path.basename(path)}: {exc}")


@pytest.mark.parametrize("path", RELEASED, ids=os.path.basename)
def test_ggml_precision_of_released_configs_matches_the_kernel(path):
    spec = _spec(path)
    try:
        args = spec_ggml_arguments(spec)
    except ValueError as exc:
        assert "ggml-float32" in str(exc)
        pytest.skip(str(exc))
    limit = spec._position_limit() or 2**20
    pos = np.unique(np.r_[np.arange(64), np.linspace(0, limit - 1, 512).astype(int)])
    c_live, s_live = _live(pos, **args)
    c, s = spec.cos_sin(pos, precision="ggml-float32")
    ulp = float(np.spacing(np.float32(np.abs(c_live[0]).max())))
    assert np.abs(c - c_live).max() <= ulp and np.abs(s - s_live).max() <= ulp
    assert np.mean(c == c_live) > 0.9 and np.mean(s == s_live) > 0.9
