"""What a trained toy model uses: attention by relative distance, position probes, and the
exact long-term decay of a set of rotary frequencies.

These read a model's activations (:func:`refimpl.experiments.model.forward`'s cache) or only
the frequencies; nothing here trains.
"""

from __future__ import annotations

import numpy as np

from .._checks import check_count

__all__ = ["attention_by_distance", "long_term_decay", "position_probe_r2"]

# Ridge added to the probe's normal equations, relative to their trace: enough to keep the
# solve well-posed when features are collinear (e.g. the embedding of a small vocabulary),
# small enough (1e-8 of the mean eigenvalue) not to change a well-posed fit visibly.
PROBE_RIDGE = 1e-8


def attention_by_distance(attn: np.ndarray, max_distance: int) -> tuple[np.ndarray, float]:
    r"""Mean attention weight at each relative distance, and the uniform baseline.

    For queries :math:`i \ge \Delta_{\max}` (every distance up to :math:`\Delta_{\max}` has a
    key), :math:`\bar a_h(\Delta) = \operatorname{mean}_{b, i}\, a_{b h i, i - \Delta}`
    (book eq. ``exp-attn-distance``); uniform causal attention would put
    :math:`\operatorname{mean}_i 1/(i+1)` at every distance.

    Parameters
    ----------
    attn : numpy.ndarray, shape (B, H, T, T)
        Attention weights of one layer (rows sum to 1, causal).
    max_distance : int
        Largest distance :math:`\Delta_{\max} < T`.

    Returns
    -------
    profile : numpy.ndarray, shape (H, max_distance + 1)
        :math:`\bar a_h(\Delta)` for :math:`\Delta = 0 .. \Delta_{\max}`.
    uniform : float
        :math:`\operatorname{mean}_{i \ge \Delta_{\max}} 1/(i + 1)`.

    Examples
    --------
    >>> a = np.tril(np.ones((4, 4))) / np.arange(1, 5)[:, None]  # uniform causal attention
    >>> prof, uni = attention_by_distance(a[None, None], 2)
    >>> bool(np.allclose(prof, uni)), round(uni, 4)
    (True, 0.2917)
    """
    attn = np.asarray(attn, dtype=np.float64)
    if attn.ndim != 4 or attn.shape[-1] != attn.shape[-2]:
        raise ValueError(f"attn must have shape (B, H, T, T), got {attn.shape}")
    t = attn.shape[-1]
    dmax = check_count(max_distance, "max_distance")
    if dmax >= t:
        raise ValueError(f"max_distance must be < T = {t}, got {dmax}")
    rows = np.arange(dmax, t)
    cols = rows[None, :] - np.arange(dmax + 1)[:, None]  # (distances, rows): key = i - delta
    picked = attn[:, :, rows[None, :], cols]  # (B, H, distances, rows)
    profile = picked.mean(axis=(0, 3))  # [eq:exp-attn-distance]
    return profile, float(np.mean(1.0 / (rows + 1.0)))


def position_probe_r2(train_x, train_y, test_x, test_y) -> float:
    r"""Coefficient of determination of a linear probe that reads a target from features.

    The probe :math:`\hat y = X w + c` is fitted by least squares on ``(train_x, train_y)``
    (normal equations with a ridge of :data:`PROBE_RIDGE` times their mean eigenvalue) and
    scored on the test set: :math:`R^2 = 1 - \sum (y - \hat y)^2 / \sum (y - \bar y)^2`
    (book eq. ``exp-probe-r2``, :math:`\bar y` the test mean). 1 means the target is a
    linear function of the features, 0 that the probe does no better than the mean; it is
    negative when it does worse.

    Parameters
    ----------
    train_x, test_x : numpy.ndarray, shape (N, D) and (M, D)
    train_y, test_y : numpy.ndarray, shape (N,) and (M,)
        E.g. token positions, or a function of them.

    Returns
    -------
    float

    Examples
    --------
    >>> x = np.arange(10.0)[:, None]
    >>> position_probe_r2(x, 3 * x[:, 0] + 1, x + 0.5, 3 * x[:, 0] + 2.5) > 0.999999
    True
    """
    xs = [np.asarray(a, dtype=np.float64) for a in (train_x, test_x)]
    ys = [np.asarray(a, dtype=np.float64) for a in (train_y, test_y)]
    for name, x, y in (("train", xs[0], ys[0]), ("test", xs[1], ys[1])):
        if x.ndim != 2 or y.shape != (x.shape[0],):
            raise ValueError(
                f"{name}_x must be (N, D) and {name}_y (N,), got {x.shape} and {y.shape}"
            )
    if xs[0].shape[1] != xs[1].shape[1]:
        raise ValueError(
            f"train_x and test_x must have the same width, got {xs[0].shape[1]} "
            f"and {xs[1].shape[1]}"
        )
    a = np.hstack([xs[0], np.ones((xs[0].shape[0], 1))])
    gram = a.T @ a
    gram += PROBE_RIDGE * np.trace(gram) / gram.shape[0] * np.eye(gram.shape[0])
    w = np.linalg.solve(gram, a.T @ ys[0])
    pred = np.hstack([xs[1], np.ones((xs[1].shape[0], 1))]) @ w
    total = float(np.sum((ys[1] - ys[1].mean()) ** 2))
    if total == 0.0:
        raise ValueError("test_y must not be constant (R^2 is undefined)")
    return 1.0 - float(np.sum((ys[1] - pred) ** 2)) / total  # [eq:exp-probe-r2]


def long_term_decay(inv_freq, distances) -> dict:
    r"""RoFormer's long-term decay bound factor and the all-ones score, exactly.

    With :math:`S_j(r) = \sum_{l < j} e^{\mathrm i r \theta_l}` over the pairs in the order
    given (zero frequencies included: they contribute 1 at every distance),
    the bound factor of book eq. ``rope-decay-bound`` is
    :math:`\frac{1}{n}\sum_{j=1}^{n} |S_j(r)|` (:math:`n` pairs), and the score of
    :math:`q = k = (1, \dots, 1)` per pair is :math:`\frac{1}{n}\sum_i \cos(r\theta_i)`.
    Both are divided by their value at :math:`r = 0`, :math:`(n + 1)/2` and 1.

    Parameters
    ----------
    inv_freq : array_like, shape (n,)
        Frequencies :math:`\theta_i \ge 0`, highest first as RoPE lists them.
    distances : array_like, shape (R,)
        Relative distances :math:`r`.

    Returns
    -------
    dict
        ``"bound"`` and ``"ones_score"``, each a float64 array of shape (R,).

    Examples
    --------
    >>> out = long_term_decay([1.0, 0.0], [0.0, np.pi])
    >>> out["ones_score"].tolist()  # the zero-frequency pair never decays
    [1.0, 0.0]
    """
    theta = np.asarray(inv_freq, dtype=np.float64)
    r = np.asarray(distances, dtype=np.float64)
    if theta.ndim != 1 or theta.size == 0 or np.any(~np.isfinite(theta)) or np.any(theta < 0):
        raise ValueError("inv_freq must be a non-empty 1-d array of finite values >= 0")
    if r.ndim != 1 or np.any(~np.isfinite(r)):
        raise ValueError("distances must be a 1-d array of finite values")
    n = theta.size
    phase = np.exp(1j * np.multiply.outer(r, theta))  # (R, n)
    bound = np.abs(np.cumsum(phase, axis=1)).mean(axis=1)  # [eq:rope-decay-bound]
    ones = phase.real.mean(axis=1)
    return {"bound": bound / ((n + 1) / 2.0), "ones_score": ones}
