"""Parity of refimpl.fourier (FoPE) with lmdeploy 0.18.0's own FoPE code, run here.

lmdeploy serves FoPE models (Intern-S1-Pro) with ``FopeRotaryEmbeddingImpl`` in
``lmdeploy/pytorch/backends/default/rotary_embedding.py`` and rotates with
``DefaultApplyRotaryEmbImpl`` in ``.../default/apply_rotary_emb.py``. Its package
``__init__`` imports the whole engine (and lmdeploy's requirements would replace torch
2.13.0), so it is installed with ``pip install lmdeploy==0.18.0 --no-deps`` and only those
two files and the two interface modules they import (``backends/rotary_embedding.py``,
``backends/apply_rotary_emb.py``) are loaded. Their one import of ``backends/base.py`` (which
pulls in the engine's config) is met by a stand-in ``BuildSpec``: a type marker with no
computation, so every number compared comes from lmdeploy's files.

Compared: the FoPE tables (per key-value head, clipped pairs padded with 1, the
``clipped="pad-one"`` mode) and the rotated queries, against the float64 reference within
the float32 rounding of lmdeploy's angles and einsum.
"""

import importlib
import importlib.util
import pathlib
import sys
import types
from typing import Generic, TypeVar

import numpy as np
import pytest

from refimpl.fourier import apply_fope, fope_coefficients, fope_cos_sin, fope_kept
from refimpl.rotary import inv_freq

torch = pytest.importorskip("torch", reason="parity tests need torch (make venv-torch)")

pytestmark = pytest.mark.parity

LMDEPLOY_VERSION = "0.18.0"
# float32 angles p * omega with p < 512 are off by at most 512 * 2^-24 ~ 3e-5 rad; the einsum
# adds M float32 products; with coefficients of column sums below 2 the tables are within
# 1e-4 of the float64 reference
ATOL_F32 = 1e-4


@pytest.fixture(scope="module")
def lmdeploy_fope():
    spec = importlib.util.find_spec("lmdeploy")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip(f"lmdeploy not installed (pip install lmdeploy=={LMDEPLOY_VERSION} --no-deps)")
    from importlib.metadata import version

    if version("lmdeploy") != LMDEPLOY_VERSION:
        pytest.skip(f"lmdeploy {version('lmdeploy')} installed, the test pins {LMDEPLOY_VERSION}")
    root = pathlib.Path(spec.submodule_search_locations[0])
    backends = root / "pytorch" / "backends"
    saved = {k: v for k, v in sys.modules.items() if k == "lmdeploy" or k.startswith("lmdeploy.")}
    for name, path in (
        ("lmdeploy", root),
        ("lmdeploy.pytorch", root / "pytorch"),
        ("lmdeploy.pytorch.backends", backends),
        ("lmdeploy.pytorch.backends.default", backends / "default"),
    ):
        pkg = types.ModuleType(name)
        pkg.__path__ = [str(path)]
        sys.modules[name] = pkg
    base = types.ModuleType("lmdeploy.pytorch.backends.base")
    impl = TypeVar("impl")

    class BuildSpec(Generic[impl]):  # the type marker base.py defines, nothing more
        pass

    base.BuildSpec = BuildSpec
    sys.modules[base.__name__] = base
    try:
        rot = importlib.import_module("lmdeploy.pytorch.backends.default.rotary_embedding")
        app = importlib.import_module("lmdeploy.pytorch.backends.default.apply_rotary_emb")
        iface = importlib.import_module("lmdeploy.pytorch.backends.rotary_embedding")
        yield rot.FopeRotaryEmbeddingImpl, app.DefaultApplyRotaryEmbImpl, iface.FopeParameters
    finally:
        for k in [k for k in sys.modules if k == "lmdeploy" or k.startswith("lmdeploy.")]:
            del sys.modules[k]
        sys.modules.update(saved)


@pytest.mark.parametrize(
    ("dim", "base", "train_length", "kv_heads"), [(32, 1e4, 512, 2), (64, 5e5, 256, 1)]
)
def test_tables_and_rotation_match_lmdeploy(lmdeploy_fope, dim, base, train_length, kv_heads):
    fope_impl, apply_impl, fope_params = lmdeploy_fope
    w = inv_freq(dim, base)
    m = int(fope_kept(w, train_length).sum())
    c, s = fope_coefficients(m, m, std=0.1, heads=kv_heads, seed=dim)
    params = fope_params(
        num_inv_freq=None,
        num_key_value_heads=kv_heads,
        fope_sep_head=True,
        inv_freq=torch.tensor(w, dtype=torch.float32),
    )
    peer = fope_impl(dim, max_position_embeddings=train_length, scaling_factor=1.0, params=params)
    assert peer.inv_freq.shape[0] == m  # the same frequencies are clipped
    pos = np.array([0, 1, 7, 100, 255, 511][: 6 if train_length > 256 else 5])
    x = torch.zeros(1, pos.size, kv_heads * dim, dtype=torch.float32)
    cos, sin = peer.forward(
        x,
        torch.tensor(pos[None], dtype=torch.long),
        sin_coef=torch.tensor(s, dtype=torch.float32),
        cos_coef=torch.tensor(c, dtype=torch.float32),
    )
    ref_cos, ref_sin = fope_cos_sin(pos, w, c, s, train_length=train_length, clipped="pad-one")
    half = dim // 2
    for h in range(kv_heads):
        for got, want in ((cos, ref_cos), (sin, ref_sin)):
            table = got[0, :, h].double().numpy()
            np.testing.assert_allclose(table[:, :half], want[h], rtol=0, atol=ATOL_F32)
            np.testing.assert_array_equal(table[:, half:], table[:, :half])
    # the rotation of two query heads per key-value head, as lmdeploy groups them
    rng = np.random.default_rng(dim)
    q = rng.normal(size=(2 * kv_heads, pos.size, dim))
    want_q = apply_fope(q, pos, w, c, s, train_length=train_length, clipped="pad-one")
    for h in range(2 * kv_heads):
        qt = torch.tensor(q[h][:, None, :], dtype=torch.float32)
        got_q, _ = apply_impl().forward(
            qt, qt.clone(), cos[0, :, h // 2], sin[0, :, h // 2], inplace=False
        )
        np.testing.assert_allclose(got_q[:, 0].double().numpy(), want_q[h], atol=20 * ATOL_F32)
