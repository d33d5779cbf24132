"""Finite-difference check of the hand-written backward pass."""

from __future__ import annotations

import numpy as np

from .encodings import PositionalEncoding
from .model import ModelConfig, cross_entropy, forward, loss_and_grads

__all__ = ["gradient_check"]


def gradient_check(
    params: dict,
    tokens: np.ndarray,
    targets: np.ndarray,
    cfg: ModelConfig,
    encoding: PositionalEncoding,
    *,
    n_probe: int = 6,
    eps: float = 1e-5,
    seed: int = 0,
) -> float:
    r"""Largest relative error between the analytic gradient and central differences.

    For ``n_probe`` randomly chosen entries of every parameter array, compares
    :math:`\partial L/\partial p` with :math:`(L(p+\epsilon) - L(p-\epsilon)) / (2\epsilon)`
    (float64). The relative error of an entry is ``|a - f| / max(|a| + |f|, 1e-8)``.

    Returns
    -------
    float
        The worst relative error over all probed entries (about 1e-7 or less when the
        backward pass is right).

    Examples
    --------
    >>> from refimpl.experiments import ModelConfig, init_params, make_batch, make_encoding
    >>> cfg = ModelConfig(vocab=8, d_model=16, n_heads=1, n_layers=1)
    >>> enc = make_encoding("rope", head_dim=16, max_len=8)
    >>> rng = np.random.default_rng(0)
    >>> p = init_params(cfg, enc, rng)
    >>> tok, tgt = make_batch("fetch", rng, batch=2, seq_len=6, vocab=8, offset=1)
    >>> gradient_check(p, tok, tgt, cfg, enc) < 1e-6
    True
    """
    _, grads = loss_and_grads(params, tokens, targets, cfg, encoding)
    rng = np.random.default_rng(seed)
    worst = 0.0
    for name in sorted(params):
        p = params[name]
        flat = p.reshape(-1)
        for idx in rng.choice(flat.size, size=min(n_probe, flat.size), replace=False):
            old = flat[idx]
            flat[idx] = old + eps
            lp = cross_entropy(forward(params, tokens, cfg, encoding)[0], targets)[0]
            flat[idx] = old - eps
            lm = cross_entropy(forward(params, tokens, cfg, encoding)[0], targets)[0]
            flat[idx] = old
            fd = (lp - lm) / (2 * eps)  # [eq:exp-central-difference]
            an = grads[name].reshape(-1)[idx]
            worst = max(worst, float(abs(an - fd) / max(abs(an) + abs(fd), 1e-8)))
    return worst
