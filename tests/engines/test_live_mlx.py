"""refimpl.engines.mlx_cos_sin against MLX's ``mx.fast.rope`` (CPU wheel).

With explicit periods (``freqs``) MLX computes the frequencies with one float32 division, and
the tables agree to MLX's cos/sin accuracy (1 ulp). With ``base`` MLX uses its own float32
``exp``, which is not correctly rounded: the frequencies are compared in ulp and the tables
within the drift that bound implies.
"""

import glob
import json
import math
import os

import numpy as np
import pytest

from refimpl.engines import mlx_cos_sin
from refimpl.gguf import _full_and_local
from refimpl.pipelines import spec_mlx_arguments

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


# ---------------------------------------------------------------------------------------------
# The spec's precision name "mlx-float32" against mlx-lm's own rope modules, released configs.

HERE = os.path.dirname(__file__)
RELEASED = sorted(
    f
    for f in glob.glob(os.path.join(HERE, "..", "parity", "configs", "*.json"))
    + glob.glob(os.path.join(HERE, "configs", "*.json"))
    if ".handmade." not in f and ".transformers-defaults." not in f
)
# mlx-lm computes Llama 3 / YaRN periods with MLX's float32 pow, which is not correctly rounded:
# frequencies within this many float32 ulp of the spec's (measured up to 2 on the released configs).
POW_ULP = 8


def _scaling_config(path):
    with open(path) as fh:
        cfg = json.load(fh)
    text = cfg.get("text_config") if isinstance(cfg.get("text_config"), dict) else cfg
    rope = text.get("rope_parameters") or text.get("rope_scaling")
    if isinstance(rope, dict):
        rope = dict(rope.get("full_attention", rope))  # per-layer-type parameters (Gemma 3)
        rope.pop("rope_theta", None)
    return text, rope


@pytest.mark.parametrize("path", RELEASED, ids=os.path.basename)
def test_mlx_precision_of_released_configs_matches_mlx_lm(path):
    rope_utils = pytest.importorskip("mlx_lm.models.rope_utils", reason="mlx-lm not installed")
    try:
        spec = _full_and_local(path)[0]
    except ValueError as exc:  # a config the package refuses (tested elsewhere)
        pytest.skip(f"{os.path.basename(path)}: {exc}")
    text, rope = _scaling_config(path)
    if rope is not None and "original_max_position_embeddings" not in rope:
        orig = text.get("original_max_position_embeddings")
        rope = {**rope, **({"original_max_position_embeddings": orig} if orig else {})}
    d, T = spec.rotary_dim, 64
    offset = min(int(spec._position_limit() or 100000), 100000) - T
    try:
        c, s = spec.cos_sin(np.arange(T) + offset, precision="mlx-float32")
    except ValueError as exc:
        assert "mlx-float32" in str(exc)
        pytest.skip(str(exc))
    try:
        module = rope_utils.initialize_rope(
            d, spec.base, False, rope, text.get("max_position_embeddings")
        )
    except ValueError as exc:  # e.g. GPT-J's rope_scaling {"rope_type": "gptj"}
        pytest.skip(f"mlx-lm's initialize_rope refuses the config: {exc}")
    kw, _ = spec_mlx_arguments(spec)
    if "freqs" in kw:  # mlx-lm's periods (float32 pow) against the pipeline's, in ulp
        theirs = np.array(module._freqs).astype(np.float64)
        finite = np.isfinite(kw["freqs"])
        ulps = np.abs(theirs[finite] - kw["freqs"][finite]) / np.spacing(kw["freqs"][finite])
        assert ulps.max() <= POW_ULP
    x = np.zeros((1, 1, T, d), F)
    x[..., : d // 2] = 1.0
    y = np.array(module(mx.array(x), offset=offset))[0, 0]
    c_live, s_live = y[:, : d // 2], y[:, d // 2 :]
    theta = spec.inv_freq.astype(np.float64)
    mag = float(abs(c[0]).max()) if offset == 0 else float(np.hypot(c[0], s[0]).max())
    exact_freqs = spec.rope_type in ("default", "linear")  # mx.fast.rope's own exp
    ulps = EXP_ULP if exact_freqs else POW_ULP
    drift = (offset + T) * ulps * np.spacing(theta.astype(F)).astype(np.float64) + 2.0**-22
    assert np.all(np.abs(c - c_live) <= mag * drift[None, :])
    assert np.all(np.abs(s - s_live) <= mag * drift[None, :])
