"""Learnable RoPE frequencies (per head, with analytic gradients of the attention scores) and
the mixed encoding h = RoPE(x) + alpha * PE_abs, with a measure of how far its scores are from
being relative.

For one pair ``i`` with query features ``(q1, q2)`` and key features ``(k1, k2)``, RoPE's score
contribution is ``a_i cos(delta theta_i) + b_i sin(delta theta_i)`` with ``delta = n - m``
(key minus query), ``a_i = q1 k1 + q2 k2`` and ``b_i = q2 k1 - q1 k2``.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ._checks import (
    as_float_array,
    as_inv_freq,
    as_positions,
    check_base,
    check_choice,
    check_pairing,
    check_positive,
    check_positive_int,
    check_real,
    result_dtype,
)
from .absolute import sinusoidal
from .rotary import apply_rope, pair_indices

__all__ = [
    "FrequencyFit",
    "apply_rope_per_head",
    "fit_inv_freq",
    "max_stable_lr",
    "mixed_encoding",
    "pair_coefficients",
    "relative_defect",
    "relative_profile",
    "relative_profile_grad",
    "rope_scores",
    "rope_scores_grad",
]

PARAMETRIZATIONS = ("log", "linear")


def apply_rope_per_head(x, positions, inv_freq, *, pairing: str = "half") -> np.ndarray:
    r"""RoPE with a different frequency table for every head.

    Parameters
    ----------
    x : array_like, shape (..., n_heads, seq, dim)
    positions : array_like, shape (seq,)
    inv_freq : array_like, shape (n_heads, dim/2)
        Positive frequencies of each head (learned, or chosen per head).
    pairing : {"half", "interleaved"}, default "half"

    Returns
    -------
    numpy.ndarray, shape (..., n_heads, seq, dim)
        Head ``h`` equals ``apply_rope(x[..., h, :, :], positions, inv_freq=inv_freq[h])``.

    Notes
    -----
    Book equation ``eq:rope-per-head``.

    Examples
    --------
    >>> x = np.ones((2, 1, 2))
    >>> apply_rope_per_head(x, [1], [[np.pi / 2], [np.pi]]).round(12)
    array([[[-1.,  1.]],
    <BLANKLINE>
           [[-1., -1.]]])
    """
    check_pairing(pairing)
    xa = as_float_array(x, "x", min_ndim=3)
    f = as_float_array(inv_freq, "inv_freq", ndim=2).astype(np.float64)
    if np.any(f <= 0):
        raise ValueError("inv_freq must be positive")
    n_heads, _, d = xa.shape[-3:]
    if f.shape != (n_heads, d // 2) or d % 2:
        raise ValueError(
            f"inv_freq must have shape (n_heads, dim/2) = {(n_heads, d // 2)} for x of shape "
            f"{xa.shape} (dim even), got {f.shape}"
        )
    out = np.empty(xa.shape, dtype=result_dtype(xa))
    for h in range(n_heads):  # [eq:rope-per-head]
        out[..., h, :, :] = apply_rope(xa[..., h, :, :], positions, inv_freq=f[h], pairing=pairing)
    return out


def pair_coefficients(q, k, *, pairing: str = "half") -> tuple[np.ndarray, np.ndarray]:
    r"""The per-pair coefficients :math:`a_i = q_1 k_1 + q_2 k_2` and
    :math:`b_i = q_2 k_1 - q_1 k_2` of every query-key pair.

    Parameters
    ----------
    q : array_like, shape (..., q_len, dim)
    k : array_like, shape (..., k_len, dim)
    pairing : {"half", "interleaved"}, default "half"

    Returns
    -------
    a, b : numpy.ndarray, each shape (..., q_len, k_len, dim/2), float64

    Notes
    -----
    Book equation ``eq:learned-score``.

    Examples
    --------
    >>> a, b = pair_coefficients([[1.0, 0.0]], [[0.0, 1.0]])
    >>> float(a[0, 0, 0]), float(b[0, 0, 0])
    (0.0, -1.0)
    """
    check_pairing(pairing)
    qa = as_float_array(q, "q", min_ndim=2).astype(np.float64)
    ka = as_float_array(k, "k", min_ndim=2).astype(np.float64)
    if qa.shape[-1] != ka.shape[-1] or qa.shape[-1] % 2:
        raise ValueError(
            f"q and k must share an even feature size, got shapes {qa.shape} and {ka.shape}"
        )
    first, second = pair_indices(qa.shape[-1], pairing)
    q1, q2 = qa[..., :, None, first], qa[..., :, None, second]  # (..., q_len, 1, d/2)
    k1, k2 = ka[..., None, :, first], ka[..., None, :, second]  # (..., 1, k_len, d/2)
    return q1 * k1 + q2 * k2, q2 * k1 - q1 * k2  # [eq:learned-score]


def _score_setup(q, k, positions, inv_freq, pairing, k_positions, scale):
    f = as_inv_freq(inv_freq)
    a, b = pair_coefficients(q, k, pairing=pairing)
    if a.shape[-1] != f.shape[0]:
        raise ValueError(f"inv_freq must have dim/2 = {a.shape[-1]} entries, got {f.shape[0]}")
    pm = as_positions(positions)
    pn = pm if k_positions is None else as_positions(k_positions, "k_positions")
    if pm.shape[0] != a.shape[-3] or pn.shape[0] != a.shape[-2]:
        raise ValueError(
            f"positions ({pm.shape[0]}) and k_positions ({pn.shape[0]}) must match q_len "
            f"({a.shape[-3]}) and k_len ({a.shape[-2]})"
        )
    sc = check_positive(scale, "scale")
    delta = pn[None, :] - pm[:, None]  # (q_len, k_len): key - query
    phase = delta[..., None] * f  # (q_len, k_len, d/2)
    return a, b, delta, phase, sc


def rope_scores(
    q, k, positions, inv_freq, *, pairing: str = "half", k_positions=None, scale: float = 1.0
) -> np.ndarray:
    r"""Attention scores of RoPE-rotated queries and keys, written in the frequencies.

    Parameters
    ----------
    q : array_like, shape (..., q_len, dim)
    k : array_like, shape (..., k_len, dim)
    positions : array_like, shape (q_len,)
        Query positions (and key positions when ``k_positions`` is omitted).
    inv_freq : array_like, shape (dim/2,)
    pairing : {"half", "interleaved"}, default "half"
    k_positions : array_like, shape (k_len,), optional
    scale : float, default 1.0
        Multiplies the scores (e.g. :math:`1/\sqrt{d}`).

    Returns
    -------
    numpy.ndarray, shape (..., q_len, k_len), float64
        :math:`s_{mn} = \text{scale} \sum_i a_i \cos(\delta\theta_i) + b_i \sin(\delta\theta_i)`,
        :math:`\delta = n - m`; equal to the dot products of ``apply_rope`` outputs.

    Notes
    -----
    Book equation ``eq:learned-score``.

    Examples
    --------
    >>> q = np.array([[1.0, 0.0]]); k = np.array([[1.0, 0.0], [1.0, 0.0]])
    >>> rope_scores(q, k, [0], [0.5], k_positions=[0, 2]).round(6)  # cos(0), cos(1)
    array([[1.      , 0.540302]])
    """
    a, b, _, phase, sc = _score_setup(q, k, positions, inv_freq, pairing, k_positions, scale)
    return sc * np.sum(a * np.cos(phase) + b * np.sin(phase), axis=-1)  # [eq:learned-score]


def rope_scores_grad(
    q, k, positions, inv_freq, *, pairing: str = "half", k_positions=None, scale: float = 1.0
) -> np.ndarray:
    r"""Analytic gradient of every RoPE attention score with respect to every frequency.

    Parameters
    ----------
    q, k, positions, inv_freq, pairing, k_positions, scale
        As in :func:`rope_scores`.

    Returns
    -------
    numpy.ndarray, shape (..., q_len, k_len, dim/2), float64
        :math:`\partial s_{mn} / \partial\theta_i =
        \text{scale}\cdot\delta\,\big(b_i\cos(\delta\theta_i) - a_i \sin(\delta\theta_i)\big)`.

    Notes
    -----
    Book equation ``eq:learned-grad``. The factor :math:`\delta` makes the gradient grow with
    the distance: a step size safe for short contexts is too large for long ones.

    Examples
    --------
    >>> q = np.array([[1.0, 0.0]]); k = np.array([[1.0, 0.0], [1.0, 0.0]])
    >>> rope_scores_grad(q, k, [0], [0.5], k_positions=[0, 2])[0, :, 0].round(6)  # -2 sin(1)
    array([ 0.      , -1.682942])
    """
    a, b, delta, phase, sc = _score_setup(q, k, positions, inv_freq, pairing, k_positions, scale)
    return sc * delta[..., None] * (b * np.cos(phase) - a * np.sin(phase))  # [eq:learned-grad]


def _profile_setup(distances, inv_freq, a, b):
    dist = as_positions(distances, "distances")
    f = as_inv_freq(inv_freq)
    aa = as_float_array(a, "a", ndim=1).astype(np.float64)
    bb = np.zeros_like(aa) if b is None else as_float_array(b, "b", ndim=1).astype(np.float64)
    if aa.shape != f.shape or bb.shape != f.shape:
        raise ValueError(
            f"a and b must have one entry per frequency ({f.shape[0]}), got {aa.shape} "
            f"and {bb.shape}"
        )
    return dist, f, aa, bb


def _profile(dist, f, aa, bb) -> np.ndarray:
    """g(delta) for validated inputs."""
    ph = np.multiply.outer(dist, f)
    return np.cos(ph) @ aa + np.sin(ph) @ bb  # [eq:learned-score]


def _profile_jacobian(dist, f, aa, bb) -> np.ndarray:
    """dg(delta)/dtheta_i for validated inputs, shape (n, d/2)."""
    ph = np.multiply.outer(dist, f)
    return dist[:, None] * (bb * np.cos(ph) - aa * np.sin(ph))  # [eq:learned-grad]


def relative_profile(distances, inv_freq, a, b=None) -> np.ndarray:
    r"""The score as a function of the relative position for fixed pair coefficients:
    :math:`g(\delta) = \sum_i a_i \cos(\delta\theta_i) + b_i \sin(\delta\theta_i)`.

    Parameters
    ----------
    distances : array_like, shape (n,)
        Relative positions :math:`\delta` (key - query).
    inv_freq : array_like, shape (d/2,)
    a : array_like, shape (d/2,)
    b : array_like, shape (d/2,), optional
        Default zeros (a query equal to the key gives ``a_i = |q_i|^2``, ``b_i = 0``).

    Returns
    -------
    numpy.ndarray, shape (n,), float64

    Notes
    -----
    Book equation ``eq:learned-score``.

    Examples
    --------
    >>> relative_profile([0, 1], [np.pi], [1.0])
    array([ 1., -1.])
    """
    return _profile(*_profile_setup(distances, inv_freq, a, b))


def relative_profile_grad(distances, inv_freq, a, b=None) -> np.ndarray:
    r"""Gradient of :func:`relative_profile` with respect to each frequency.

    Returns
    -------
    numpy.ndarray, shape (n, d/2), float64
        :math:`\partial g(\delta)/\partial\theta_i = \delta\,(b_i\cos\delta\theta_i -
        a_i\sin\delta\theta_i)`.

    Notes
    -----
    Book equation ``eq:learned-grad``.

    Examples
    --------
    >>> relative_profile_grad([2.0], [np.pi / 4], [1.0])
    array([[-2.]])
    """
    return _profile_jacobian(*_profile_setup(distances, inv_freq, a, b))


class FrequencyFit(NamedTuple):
    """Result of :func:`fit_inv_freq`."""

    inv_freq: np.ndarray  # (d/2,) fitted frequencies
    losses: np.ndarray  # (steps + 1,) mean squared error before each step and at the end
    diverged: bool  # the loss became non-finite or grew above 1e6 times its start


def fit_inv_freq(
    distances,
    target,
    init_inv_freq,
    a,
    b=None,
    *,
    lr: float = 1e-2,
    steps: int = 500,
    parametrization: str = "log",
) -> FrequencyFit:
    r"""Fit frequencies by gradient descent so that :func:`relative_profile` matches a target.

    Parameters
    ----------
    distances : array_like, shape (n,)
    target : array_like, shape (n,)
        Desired score at each distance.
    init_inv_freq : array_like, shape (d/2,)
        Starting frequencies (positive).
    a, b : array_like, shape (d/2,)
        Fixed pair coefficients (``b`` defaults to zeros).
    lr : float, default 1e-2
        Step size.
    steps : int, default 500
    parametrization : {"log", "linear"}, default "log"
        ``"log"`` descends on :math:`\log\theta_i` (frequencies stay positive and a step
        changes each one by a relative amount, which slows the low frequencies down by
        :math:`\theta_i^2`); ``"linear"`` on :math:`\theta_i` itself. A step that would make
        a frequency non-positive or non-finite stops the run as diverged.

    Returns
    -------
    FrequencyFit
        ``inv_freq``, the loss history and whether the run diverged (the run stops there).

    Notes
    -----
    Book equation ``eq:learned-fit``: loss
    :math:`L = \frac1n\sum_\delta (g(\delta) - t(\delta))^2`, gradient
    :math:`\partial L/\partial\theta_i = \frac2n \sum_\delta (g - t)\,\partial g/\partial\theta_i`
    and, for the log parametrization, :math:`\partial L/\partial\log\theta_i =
    \theta_i\,\partial L/\partial\theta_i`.

    Examples
    --------
    >>> d = np.arange(8.0)
    >>> fit = fit_inv_freq(d, np.cos(0.3 * d), [0.2], [1.0], lr=1e-2, steps=300)
    >>> round(float(fit.inv_freq[0]), 4), fit.diverged
    (0.3, False)
    """
    check_choice(parametrization, "parametrization", PARAMETRIZATIONS)
    eta = check_positive(lr, "lr")
    n_steps = check_positive_int(steps, "steps")
    dist, f, aa, bb = _profile_setup(distances, init_inv_freq, a, b)
    t = as_float_array(target, "target", ndim=1).astype(np.float64)
    if t.shape != dist.shape:
        raise ValueError(f"target must have one value per distance {dist.shape}, got {t.shape}")
    with np.errstate(over="ignore", invalid="ignore"):
        theta, losses, diverged = _descend(dist, t, f.copy(), aa, bb, eta, n_steps, parametrization)
    return FrequencyFit(theta, np.array(losses), diverged)


def _descend(dist, t, theta, aa, bb, eta, n_steps, parametrization):
    losses = []
    diverged = False
    for _ in range(n_steps):
        resid = _profile(dist, theta, aa, bb) - t  # (n,)
        loss = float(np.mean(resid**2))  # [eq:learned-fit]
        losses.append(loss)
        if not np.isfinite(loss) or loss > 1e6 * max(losses[0], 1e-300):
            diverged = True
            break
        grad = 2.0 / dist.shape[0] * resid @ _profile_jacobian(dist, theta, aa, bb)
        if parametrization == "log":
            new = theta * np.exp(-eta * theta * grad)  # [eq:learned-fit]
        else:
            new = theta - eta * grad  # [eq:learned-fit]
        if np.any(new <= 0) or not np.all(np.isfinite(new)):
            diverged = True
            break
        theta = new
    if not diverged:
        losses.append(float(np.mean((_profile(dist, theta, aa, bb) - t) ** 2)))
    return theta, losses, diverged


def max_stable_lr(distances, inv_freq, a, b=None, *, parametrization: str = "linear") -> float:
    r"""Largest stable gradient-descent step for :func:`fit_inv_freq` near a solution.

    Parameters
    ----------
    distances, inv_freq, a, b
        As in :func:`relative_profile` (``inv_freq`` at, or near, the optimum).
    parametrization : {"linear", "log"}, default "linear"

    Returns
    -------
    float
        :math:`2/\lambda_{\max}(H)` with the Gauss-Newton Hessian
        :math:`H = \frac2n J^\top J`, :math:`J_{\delta i} = \partial g(\delta)/\partial\theta_i`
        (times :math:`\theta_i` for the log parametrization). Gradient descent with a larger
        step diverges from the optimum; since :math:`J` grows like :math:`\delta`, the bound
        falls roughly like :math:`1/\delta_{\max}^2`.

    Notes
    -----
    Book equation ``eq:learned-lr``.

    Examples
    --------
    >>> d = np.arange(0, 64.0)
    >>> lr = max_stable_lr(d, [0.5], [1.0])
    >>> lr2 = max_stable_lr(np.arange(0, 128.0), [0.5], [1.0])
    >>> bool(3.0 < lr / lr2 < 5.0)  # twice the distances, about a quarter of the step
    True
    """
    check_choice(parametrization, "parametrization", PARAMETRIZATIONS)
    dist, f, aa, bb = _profile_setup(distances, inv_freq, a, b)
    J = _profile_jacobian(dist, f, aa, bb)  # (n, d/2)
    if parametrization == "log":
        J = J * f
    H = 2.0 / dist.shape[0] * (J.T @ J)  # [eq:learned-lr]
    lam = float(np.max(np.linalg.eigvalsh(H)))
    if lam <= 0:
        raise ValueError("the profile does not depend on the frequencies at these distances")
    return 2.0 / lam  # [eq:learned-lr]


def mixed_encoding(
    x,
    positions,
    alpha: float,
    *,
    base: float = 10000.0,
    pairing: str = "half",
    pe_base: float = 10000.0,
) -> np.ndarray:
    r"""The mixed encoding :math:`h = R_m x + \alpha\,\mathrm{PE}(m)`: RoPE plus a scaled
    sinusoidal absolute encoding.

    Parameters
    ----------
    x : array_like, shape (..., seq, dim)
        Queries or keys.
    positions : array_like, shape (seq,)
    alpha : float
        Weight of the absolute part (0 gives plain RoPE).
    base : float, default 10000.0
        RoPE base.
    pairing : {"half", "interleaved"}, default "half"
    pe_base : float, default 10000.0
        Base of the sinusoidal table (:func:`refimpl.absolute.sinusoidal`).

    Returns
    -------
    numpy.ndarray, shape (..., seq, dim)
        Same floating dtype as ``x``.

    Notes
    -----
    Book equation ``eq:mixed-encoding``. The score of two mixed vectors is
    :math:`q^\top R_{n-m} k + \alpha\,[(R_m q)^\top \mathrm{PE}(n) + \mathrm{PE}(m)^\top R_n k] +
    \alpha^2 \mathrm{PE}(m)^\top \mathrm{PE}(n)`: the first and last terms depend on
    :math:`n - m` only, the middle one on both positions.

    Examples
    --------
    >>> x = np.zeros((2, 2))
    >>> mixed_encoding(x, [0, 1], 1.0).round(4)  # zero input leaves the absolute part alone
    array([[0.    , 1.    ],
           [0.8415, 0.5403]])
    """
    a = check_real(alpha, "alpha")
    xa = as_float_array(x, "x", min_ndim=2)
    pos = as_positions(positions)
    d = xa.shape[-1]
    rot = apply_rope(xa.astype(np.float64), pos, base=base, pairing=pairing)
    pe = sinusoidal(pos, d, check_base(pe_base, "pe_base"))  # (seq, dim)
    return (rot + a * pe).astype(result_dtype(xa), copy=False)  # [eq:mixed-encoding]


def relative_defect(scores) -> np.ndarray:
    r"""Fraction of the variance of a score matrix that is *not* explained by the relative
    position.

    Parameters
    ----------
    scores : array_like, shape (..., L, L)
        Scores of queries and keys at the same positions ``0 .. L-1``.

    Returns
    -------
    numpy.ndarray, shape (...), float64
        :math:`\sum_{m,n} (s_{mn} - \bar s_{n-m})^2 / \sum_{m,n} (s_{mn} - \bar s)^2`, where
        :math:`\bar s_\delta` is the mean of diagonal :math:`\delta` and :math:`\bar s` the
        overall mean. 0 exactly when every diagonal is constant (a relative score); 1 when the
        diagonals carry no information. A constant matrix gives 0.

    Notes
    -----
    Book equation ``eq:mixed-defect``.

    Examples
    --------
    >>> float(relative_defect(np.subtract.outer(np.arange(4), np.arange(4.0))))
    0.0
    >>> float(relative_defect([[1.0, 0.0], [0.0, -1.0]]))
    1.0
    """
    s = as_float_array(scores, "scores", min_ndim=2).astype(np.float64)
    L = s.shape[-1]
    if s.shape[-2] != L:
        raise ValueError(f"scores must be square (..., L, L), got shape {s.shape}")
    idx = np.subtract.outer(np.arange(L), np.arange(L)) + (L - 1)  # diagonal id, (L, L)
    counts = np.bincount(idx.ravel(), minlength=2 * L - 1)
    flat = s.reshape(-1, L * L)
    means = np.stack([np.bincount(idx.ravel(), weights=row, minlength=2 * L - 1) for row in flat])
    means /= counts
    within = np.sum((flat - means[:, idx.ravel()]) ** 2, axis=1)
    total = np.sum((flat - flat.mean(axis=1, keepdims=True)) ** 2, axis=1)
    res = np.where(total > 0, within / np.where(total > 0, total, 1.0), 0.0)  # [eq:mixed-defect]
    return res.reshape(s.shape[:-2])
