"""refimpl.engines.mlx_cos_sin against MLX's ``mx.fast.rope`` (CPU wheel).

With explicit periods (``freqs``) MLX computes the frequencies with one float32 division, and
the tables agree to MLX's cos/sin accuracy (1 ulp). With ``base`` MLX uses its own float32
``exp``, which is not correctly rounded: the frequencies are compared in ulp and the tables
within the drift that bound implies.
"""

import math

import numpy as np
import pytest

from refimpl.engines import mlx_cos_sin

pytestmark = pytest.mark.engines

mx = pytest.importorskip("mlx.core", reason="mlx not installed (pip install mlx-cpu)")

F = np.float32
# MLX's float32 exp on the frequency exponents of common bases: up to 9 ulp measured here.
EXP_ULP = 16


def _live(d, T, offset, **kw):
    x = np.zeros((1, 1, T, d), F)
    x[..., : d // 2] = 1.0
    y = np.array(mx.fast.rope(mx.array(x), d, traditional=False, offset=offset, **kw))
    return y[0, 0, :, : d // 2], y[0, 0, :, d // 2 :]


@pytest.mark.parametrize("offset", [0, 1000, 100000, 3_000_000])
def test_tables_with_periods_match_mlx(offset):
    d, T = 128, 64
    periods = (500000.0 ** (np.arange(0, d, 2) / d)).astype(F)
    c_live, s_live = _live(d, T, offset, base=None, scale=1.0, freqs=mx.array(periods))
    c, s = mlx_cos_sin(np.arange(T) + offset, dims=d, freqs=periods)
    assert np.abs(c - c_live).max() <= 2.0**-23 and np.abs(s - s_live).max() <= 2.0**-23


@pytest.mark.parametrize("base", [10000.0, 500000.0, 1e6])
def test_frequencies_from_the_base_are_within_mlx_exp_error(base):
    d = 128
    step = F(math.log(base) / (d // 2))
    exponent = -np.arange(d // 2, dtype=F) * step
    theirs = np.array(mx.exp(mx.array(exponent)))
    ours = np.exp(exponent.astype(np.float64)).astype(F)
    ulps = np.abs(theirs.astype(np.float64) - ours) / np.spacing(ours)
    assert ulps.max() <= EXP_ULP
    T, offset = 64, 50000
    c_live, _ = _live(d, T, offset, base=base, scale=1.0)
    c, _ = mlx_cos_sin(np.arange(T) + offset, dims=d, base=base)
    drift = (offset + T) * EXP_ULP * np.spacing(ours).astype(np.float64) + 2.0**-22
    assert np.all(np.abs(c - c_live) <= drift[None, :])
