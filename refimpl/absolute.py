"""Absolute position encodings: the naive integer and normalized encodings, and the
sinusoidal table of "Attention is all you need" with its shift matrix."""

from __future__ import annotations

import numpy as np

from ._checks import (
    MAX_POSITION,
    as_positions_or_count,
    check_base,
    check_count,
    check_dim,
    check_real,
    check_table_size,
)

__all__ = ["integer_encoding", "normalized_encoding", "sinusoidal", "sinusoidal_shift_matrix"]


def integer_encoding(num_positions: int, dim: int) -> np.ndarray:
    """The naive encoding that writes the position itself into every feature.

    Parameters
    ----------
    num_positions : int
        Number of positions (0 .. num_positions - 1), at most ``MAX_POSITION`` (2**31), with
        ``num_positions * dim`` at most ``MAX_TABLE_ELEMENTS`` (2**31).
    dim : int
        Model width (any positive integer).

    Returns
    -------
    numpy.ndarray, shape (num_positions, dim), float64
        ``PE[p, j] = p``. Its magnitude grows without bound, which is why it is not used.

    Notes
    -----
    Book equation ``eq:pe-integer``.

    Examples
    --------
    >>> integer_encoding(3, 2)
    array([[0., 0.],
           [1., 1.],
           [2., 2.]])
    """
    n = check_count(num_positions, "num_positions", maximum=MAX_POSITION)
    d = check_dim(dim, even=False)
    check_table_size(n, d, "the encoding")
    p = np.arange(n, dtype=np.float64)
    return np.repeat(p[:, None], d, axis=1)  # [eq:pe-integer]


def normalized_encoding(num_positions: int, dim: int) -> np.ndarray:
    """Positions scaled into [0, 1]: ``PE[p, j] = p / (num_positions - 1)``.

    Parameters
    ----------
    num_positions : int
        Sequence length N. With N = 1 the single position is encoded as 0. Limits as in
        :func:`integer_encoding`.
    dim : int
        Model width.

    Returns
    -------
    numpy.ndarray, shape (num_positions, dim), float64
        The encoding of a given position depends on the sequence length, and the step between
        neighbours, 1 / (N - 1), shrinks as N grows.

    Notes
    -----
    Book equation ``eq:pe-normalized``.

    Examples
    --------
    >>> normalized_encoding(3, 1)
    array([[0. ],
           [0.5],
           [1. ]])
    """
    n = check_count(num_positions, "num_positions", maximum=MAX_POSITION)
    d = check_dim(dim, even=False)
    check_table_size(n, d, "the encoding")
    p = np.arange(n, dtype=np.float64)
    denom = max(n - 1, 1)
    return np.repeat((p / denom)[:, None], d, axis=1)  # [eq:pe-normalized]


def sinusoidal(positions_or_count, dim: int, base: float = 10000.0) -> np.ndarray:
    r"""The sinusoidal absolute encoding of Vaswani et al.

    Parameters
    ----------
    positions_or_count : int or array_like, shape (seq,)
        Either a count N (positions 0 .. N-1) or explicit positions. The rule: a scalar
        integer (Python, NumPy, or a 0-d integer array) is a count; a sequence is positions;
        a float or boolean scalar is refused (one position is written ``[p]``). Counts are at
        most ``MAX_POSITION`` (2**31) and tables at most ``MAX_TABLE_ELEMENTS`` (2**31)
        entries.
    dim : int
        Model width (even).
    base : float, default 10000.0

    Returns
    -------
    numpy.ndarray, shape (seq, dim), float64
        ``PE[p, 2i] = sin(p * w_i)``, ``PE[p, 2i+1] = cos(p * w_i)`` with
        :math:`w_i = b^{-2i/d}` (the same frequencies as RoPE).

    Notes
    -----
    Book equation ``eq:pe-sinusoidal``.

    References
    ----------
    Vaswani et al., "Attention is all you need", 2017.

    Examples
    --------
    >>> sinusoidal(2, 4).round(4)
    array([[0.    , 1.    , 0.    , 1.    ],
           [0.8415, 0.5403, 0.01  , 1.    ]])
    """
    d = check_dim(dim)
    b = check_base(base)
    count, pos = as_positions_or_count(positions_or_count)
    if pos is None:
        pos = np.arange(count, dtype=np.float64)
    check_table_size(pos.shape[0], d, "the encoding")
    w = b ** (-(2.0 * np.arange(d // 2)) / d)  # [eq:rope-inv-freq]
    ang = np.multiply.outer(pos, w)
    pe = np.empty((pos.shape[0], d))
    pe[:, 0::2] = np.sin(ang)  # [eq:pe-sinusoidal]
    pe[:, 1::2] = np.cos(ang)  # [eq:pe-sinusoidal]
    return pe


def sinusoidal_shift_matrix(k: float, dim: int, base: float = 10000.0) -> np.ndarray:
    r"""The matrix :math:`M_k` with :math:`PE(p + k) = M_k\,PE(p)` for every position p.

    Parameters
    ----------
    k : float
        Offset.
    dim : int
        Model width (even).
    base : float, default 10000.0

    Returns
    -------
    numpy.ndarray, shape (dim, dim), float64
        Block diagonal with 2x2 blocks ``[[cos k w_i, sin k w_i], [-sin k w_i, cos k w_i]]``
        acting on ``(sin p w_i, cos p w_i)``. It does not depend on p: a fixed offset is a
        linear map of the encoding.

    Notes
    -----
    Book equation ``eq:pe-shift``.

    Examples
    --------
    >>> M = sinusoidal_shift_matrix(3, 4)
    >>> pe = sinusoidal(10, 4)
    >>> bool(np.allclose(M @ pe[2], pe[5]))
    True
    """
    kk = check_real(k, "k")
    d = check_dim(dim)
    b = check_base(base)
    w = b ** (-(2.0 * np.arange(d // 2)) / d)  # [eq:rope-inv-freq]
    c, s = np.cos(kk * w), np.sin(kk * w)
    M = np.zeros((d, d))
    ev, od = np.arange(0, d, 2), np.arange(1, d, 2)
    M[ev, ev] = c  # [eq:pe-shift]
    M[ev, od] = s
    M[od, ev] = -s
    M[od, od] = c
    return M
