"""Positions on graphs: Laplacian-eigenvector encodings (defined only up to sign and basis),
random-walk encodings, shortest-path relative biases (a T5-style bucketed bias over graph
distance) and rotary encodings over node coordinates.

A sequence is the path graph; on it every encoding here reduces to a familiar one. On a
general graph there is no translation, so "relative" means "a function of the pair's graph
distance" (shortest-path biases), or "unchanged under relabelling the nodes" (random-walk
encodings, which are permutation-equivariant), and RoPE is relative only in the coordinates it
is given, which for Laplacian eigenvectors are not unique.
"""

from __future__ import annotations

import numpy as np

from ._checks import (
    MAX_POSITION,
    as_exact_integers,
    as_real_array,
    check_count,
    check_positive_int,
)
from .bias import t5_relative_position_bucket

__all__ = [
    "coordinate_rope_angles",
    "graph_distance_bias",
    "graph_distance_buckets",
    "laplacian",
    "laplacian_eigenvector_encoding",
    "random_walk_encoding",
    "shortest_path_distances",
]


def _adjacency(adjacency) -> np.ndarray:
    """The adjacency as float64: boolean and integer matrices are promoted explicitly before
    any arithmetic (in an integer dtype, D^(-1/2) would truncate to 0 and degrees could wrap),
    and integer weights must be exact in float64."""
    a = as_real_array(adjacency, "adjacency")
    if a.ndim != 2 or a.shape[0] != a.shape[1] or a.shape[0] == 0:
        raise ValueError(f"adjacency must be a non-empty square (n, n) matrix, got {a.shape}")
    if a.dtype.kind in "iu":
        as_exact_integers(a, "adjacency")
    a = a.astype(np.float64)
    if not np.all(np.isfinite(a)) or np.any(a < 0):
        raise ValueError("adjacency must have finite non-negative weights")
    if not np.array_equal(a, a.T):
        raise ValueError("adjacency must be symmetric (an undirected graph)")
    if np.any(np.diag(a) != 0):
        raise ValueError("adjacency must have a zero diagonal (no self-loops)")
    return a


def laplacian(adjacency, *, normalized: bool = True) -> np.ndarray:
    r"""Graph Laplacian :math:`L = D - A` or :math:`I - D^{-1/2} A D^{-1/2}` (isolated nodes
    keep :math:`L_{ii} = 0`).

    Parameters
    ----------
    adjacency : array_like, shape (n, n)
        Symmetric, non-negative, zero diagonal.
    normalized : bool, default True

    Returns
    -------
    numpy.ndarray, shape (n, n), float64 (:eq:`eq:graph-laplacian`)

    Examples
    --------
    >>> laplacian([[0, 1], [1, 0]]).tolist()
    [[1.0, -1.0], [-1.0, 1.0]]
    """
    a = _adjacency(adjacency)
    deg = a.sum(axis=1)
    if not normalized:
        return np.diag(deg) - a  # [eq:graph-laplacian]
    inv = np.zeros_like(deg)
    inv[deg > 0] = deg[deg > 0] ** -0.5
    return np.diag((deg > 0).astype(float)) - inv[:, None] * a * inv[None, :]


def laplacian_eigenvector_encoding(adjacency, k: int, *, normalized: bool = True):
    r"""Laplacian positional encoding: the eigenvectors of the ``k`` smallest non-trivial
    eigenvalues of :math:`L` (Dwivedi et al.'s LapPE).

    Parameters
    ----------
    adjacency : array_like, shape (n, n)
    k : int
        Number of eigenvectors, ``1 <= k <= n - 1``.
    normalized : bool, default True

    Returns
    -------
    encoding : numpy.ndarray, shape (n, k), float64
        Columns ``1 .. k`` of the eigenvectors in ascending eigenvalue order (column 0, the
        constant direction of a connected graph, is dropped). Each column is defined only up
        to sign, and columns of a repeated eigenvalue only up to a rotation of their span
        (:eq:`eq:lap-ambiguity`); this function fixes neither, as the models do not.
    eigenvalues : numpy.ndarray, shape (k,)

    Examples
    --------
    >>> enc, lam = laplacian_eigenvector_encoding([[0, 1, 0], [1, 0, 1], [0, 1, 0]], 1)
    >>> lam.round(6).tolist(), bool(np.isclose(abs(enc[0, 0]), abs(enc[2, 0])))
    ([1.0], True)
    """
    lap = laplacian(adjacency, normalized=normalized)
    n = lap.shape[0]
    kk = check_positive_int(k, "k")
    if kk > n - 1:
        raise ValueError(f"k must be at most n - 1 = {n - 1} (non-trivial eigenvectors), got {kk}")
    lam, vec = np.linalg.eigh(lap)  # [eq:lap-pe]
    return vec[:, 1 : kk + 1], lam[1 : kk + 1]


def random_walk_encoding(adjacency, k: int) -> np.ndarray:
    r"""Random-walk structural encoding: the probability of returning to each node after
    ``1 .. k`` steps of the uniform random walk, :math:`\mathrm{diag}((D^{-1}A)^t)`.

    Parameters
    ----------
    adjacency : array_like, shape (n, n)
    k : int
        Walk lengths ``t = 1 .. k``.

    Returns
    -------
    numpy.ndarray, shape (n, k), float64
        Row ``i``: return probabilities of node ``i`` (:eq:`eq:rwse`). Unique (no sign or
        basis choice) and permutation-equivariant: relabelling the nodes permutes the rows.
        Isolated nodes stay put (return probability 1).

    Examples
    --------
    >>> random_walk_encoding([[0, 1], [1, 0]], 3).tolist()
    [[0.0, 1.0, 0.0], [0.0, 1.0, 0.0]]
    """
    a = _adjacency(adjacency)
    kk = check_positive_int(k, "k")
    deg = a.sum(axis=1)
    p = np.where(deg[:, None] > 0, a / np.where(deg > 0, deg, 1.0)[:, None], 0.0)
    p[deg == 0, deg == 0] = 1.0
    out = np.empty((a.shape[0], kk))
    m = np.eye(a.shape[0])
    for t in range(kk):
        m = m @ p  # [eq:rwse]
        out[:, t] = np.diag(m)
    return out


def shortest_path_distances(adjacency) -> np.ndarray:
    """Hop distances between all node pairs (breadth-first search; edge weights ignored).

    Parameters
    ----------
    adjacency : array_like, shape (n, n)

    Returns
    -------
    numpy.ndarray, shape (n, n), int64
        ``-1`` where no path exists.

    Examples
    --------
    >>> shortest_path_distances([[0, 1, 0], [1, 0, 0], [0, 0, 0]]).tolist()
    [[0, 1, -1], [1, 0, -1], [-1, -1, 0]]
    """
    a = _adjacency(adjacency) > 0
    n = a.shape[0]
    dist = np.full((n, n), -1, dtype=np.int64)
    for s in range(n):
        frontier = np.zeros(n, dtype=bool)
        frontier[s] = True
        seen = frontier.copy()
        d = 0
        while frontier.any():
            dist[s, frontier] = d
            frontier = a[frontier].any(axis=0) & ~seen
            seen |= frontier
            d += 1
    return dist


def graph_distance_buckets(distances, *, num_buckets: int = 32, max_distance: int = 128):
    """T5's one-directional buckets applied to hop distances; unreachable pairs get the extra
    bucket ``num_buckets``.

    Parameters
    ----------
    distances : array_like of int
        From :func:`shortest_path_distances` (``-1`` = unreachable).
    num_buckets, max_distance : int
        As in :func:`refimpl.bias.t5_relative_position_bucket` (exact buckets for small
        distances, logarithmic up to ``max_distance``).

    Returns
    -------
    numpy.ndarray of int64, same shape, values in ``0 .. num_buckets``

    Examples
    --------
    >>> graph_distance_buckets([0, 1, 5, -1], num_buckets=4, max_distance=8).tolist()
    [0, 1, 3, 4]
    """
    d = np.asarray(distances)
    if d.dtype == object or d.dtype.kind not in "iu":
        raise TypeError(f"distances must be integers, got dtype {d.dtype}")
    if d.size and int(d.max()) > MAX_POSITION:
        raise ValueError(f"distances must be at most MAX_POSITION = {MAX_POSITION} hops")
    d = d.astype(np.int64)  # explicit: -d of an unsigned array would wrap
    if np.any(d < -1):
        raise ValueError("distances must be >= 0, or -1 for unreachable pairs")
    nb = check_positive_int(num_buckets, "num_buckets")
    b = t5_relative_position_bucket(
        -np.maximum(d, 0), bidirectional=False, num_buckets=nb, max_distance=max_distance
    )  # [eq:graph-bias]
    return np.where(d < 0, nb, b)


def graph_distance_bias(
    adjacency, table, *, num_buckets: int = 32, max_distance: int = 128
) -> np.ndarray:
    r"""Shortest-path attention bias :math:`B[h, i, j] = \mathrm{table}[h, \beta(d(i, j))]`
    (Graphormer's spatial encoding, bucketed as T5 buckets relative positions).

    Parameters
    ----------
    adjacency : array_like, shape (n, n)
    table : array_like, shape (n_heads, num_buckets + 1)
        One learned scalar per head and bucket; the last column is for unreachable pairs.
    num_buckets, max_distance : int
        See :func:`graph_distance_buckets`.

    Returns
    -------
    numpy.ndarray, shape (n_heads, n, n), float64 (:eq:`eq:graph-bias`)
        Symmetric in ``(i, j)`` and invariant under graph automorphisms.

    Examples
    --------
    >>> b = graph_distance_bias([[0, 1], [1, 0]], [[0.0, -1.0, -9.0]], num_buckets=2,
    ...                         max_distance=4)
    >>> b.tolist()
    [[[0.0, -1.0], [-1.0, 0.0]]]
    """
    t = as_real_array(table, "table").astype(np.float64)  # the bias is float64 (documented)
    if not np.all(np.isfinite(t)):
        raise ValueError("table must be finite (found NaN or inf)")
    nb = check_positive_int(num_buckets, "num_buckets")
    check_count(max_distance, "max_distance")
    if t.ndim != 2 or t.shape[1] != nb + 1:
        raise ValueError(
            f"table must have shape (n_heads, num_buckets + 1 = {nb + 1}), got {t.shape}"
        )
    buckets = graph_distance_buckets(
        shortest_path_distances(adjacency), num_buckets=nb, max_distance=max_distance
    )
    return t[:, buckets]


def coordinate_rope_angles(coords, inv_freq) -> np.ndarray:
    r"""RoPE angles over node coordinates: axis ``a`` drives its own block of pairs,
    :math:`\phi_{a,i} = x_a\,\theta_{a,i}` (axial RoPE in ``A`` dimensions).

    Parameters
    ----------
    coords : array_like, shape (n, A)
        A coordinate vector per node: lattice coordinates of a grid graph, the index of a path
        graph, or any embedding (Laplacian eigenvectors, which are not unique).
    inv_freq : array_like, shape (A, k)
        Frequencies per axis.

    Returns
    -------
    numpy.ndarray, shape (n, A·k), float64
        Pairs ``a·k .. a·k + k - 1`` follow axis ``a`` (:eq:`eq:graph-rope`). Scores depend
        only on coordinate differences; they are a graph invariant only when the coordinates
        are (a lattice's are up to translation; Laplacian eigenvectors are not, see
        :func:`laplacian_eigenvector_encoding`).

    Examples
    --------
    >>> coordinate_rope_angles([[1, 2]], [[1.0], [0.5]]).tolist()
    [[1.0, 1.0]]
    """
    x = as_real_array(coords, "coords")
    f = as_real_array(inv_freq, "inv_freq")
    for arr, name in ((x, "coords"), (f, "inv_freq")):
        if arr.dtype.kind in "iu":
            as_exact_integers(arr, name)  # integer coordinates stay exact in float64
    x, f = x.astype(np.float64), f.astype(np.float64)  # angles are float64, never integers
    if x.ndim != 2 or f.ndim != 2 or f.shape[0] != x.shape[1]:
        raise ValueError(
            f"coords (n, A) and inv_freq (A, k) must agree on A, got {x.shape} and {f.shape}"
        )
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(f))):
        raise ValueError("coords and inv_freq must be finite")
    return (x[:, :, None] * f[None, :, :]).reshape(x.shape[0], -1)  # [eq:graph-rope]
