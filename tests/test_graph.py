"""Graph positions on random graphs (hypothesis): Laplacian eigenvectors and their sign and
basis ambiguity, random-walk encodings (unique, permutation-equivariant), shortest-path
distances against a Floyd-Warshall oracle, the bucketed distance bias, RoPE over coordinates."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from refimpl.bias import t5_relative_position_bucket
from refimpl.graph import (
    coordinate_rope_angles,
    graph_distance_bias,
    graph_distance_buckets,
    laplacian,
    laplacian_eigenvector_encoding,
    random_walk_encoding,
    shortest_path_distances,
)
from refimpl.rotary import apply_rope_tables


@st.composite
def graphs(draw, min_n=2, max_n=9):
    n = draw(st.integers(min_n, max_n))
    bits = draw(st.lists(st.booleans(), min_size=n * (n - 1) // 2, max_size=n * (n - 1) // 2))
    a = np.zeros((n, n))
    a[np.triu_indices(n, 1)] = bits
    return a + a.T


def cycle(n):
    a = np.zeros((n, n))
    for i in range(n):
        a[i, (i + 1) % n] = a[(i + 1) % n, i] = 1
    return a


def floyd(a):
    n = a.shape[0]
    d = np.where(a > 0, 1.0, np.inf)
    np.fill_diagonal(d, 0)
    for k in range(n):
        d = np.minimum(d, d[:, [k]] + d[[k], :])
    return np.where(np.isinf(d), -1, d).astype(int)


@given(graphs())
def test_shortest_paths_match_floyd_warshall(a):
    np.testing.assert_array_equal(shortest_path_distances(a), floyd(a))


@given(graphs(), st.randoms(use_true_random=False))
def test_encodings_are_permutation_equivariant(a, rnd):
    n = a.shape[0]
    perm = np.array(rnd.sample(range(n), n))
    b = a[np.ix_(perm, perm)]
    np.testing.assert_allclose(
        random_walk_encoding(b, 4), random_walk_encoding(a, 4)[perm], atol=1e-12
    )
    np.testing.assert_array_equal(
        shortest_path_distances(b), shortest_path_distances(a)[np.ix_(perm, perm)]
    )
    table = np.arange(2 * 9, dtype=float).reshape(2, 9)
    np.testing.assert_array_equal(
        graph_distance_bias(b, table, num_buckets=8, max_distance=16),
        graph_distance_bias(a, table, num_buckets=8, max_distance=16)[:, perm][:, :, perm],
    )


@given(graphs(min_n=3))
def test_laplacian_eigenvectors_and_their_sign_ambiguity(a):
    lap = laplacian(a)
    enc, lam = laplacian_eigenvector_encoding(a, a.shape[0] - 1)
    np.testing.assert_allclose(lap @ enc, enc * lam, atol=1e-10)
    # -v is as valid an eigenvector as v: the encoding is defined up to the sign of each column
    np.testing.assert_allclose(lap @ -enc, -enc * lam, atol=1e-10)
    assert np.all(lam >= -1e-12) and np.all(lam <= 2 + 1e-12)  # normalised spectrum in [0, 2]


def test_cycle_has_a_repeated_eigenvalue_and_any_rotation_of_its_basis_is_valid():
    a = cycle(8)
    enc, lam = laplacian_eigenvector_encoding(a, 2)
    assert lam[0] == pytest.approx(lam[1])  # cos and sin modes of the first harmonic
    phi = 0.7
    rot = np.array([[np.cos(phi), -np.sin(phi)], [np.sin(phi), np.cos(phi)]])
    other = enc @ rot
    np.testing.assert_allclose(laplacian(a) @ other, other * lam[0], atol=1e-12)
    # the two bases give different node encodings, so a model reading columns sees two graphs
    assert not np.allclose(np.abs(other), np.abs(enc))
    # RoPE over these coordinates changes scores when a sign is flipped
    f = np.array([[1.0], [1.0]])
    q, k = np.random.default_rng(1).normal(size=(2, 4))
    sc = []
    for coords in (enc, enc * [1, -1]):
        ang = coordinate_rope_angles(coords * 4, f)
        y = apply_rope_tables(np.stack([q, k]), np.cos(ang[[0, 3]]), np.sin(ang[[0, 3]]))
        sc.append(y[0] @ y[1])
    assert abs(sc[0] - sc[1]) > 1e-3


@given(graphs())
def test_random_walk_encoding_is_a_return_probability(a):
    rw = random_walk_encoding(a, 5)
    assert np.all(rw >= -1e-15) and np.all(rw <= 1 + 1e-12)
    deg = a.sum(1)
    # one step never returns (no self loops) unless the node is isolated
    np.testing.assert_allclose(rw[:, 0], (deg == 0).astype(float))
    # two steps return with probability sum_j 1/(d_i d_j) over neighbours j
    for i in np.flatnonzero(deg):
        want = sum(1 / (deg[i] * deg[j]) for j in np.flatnonzero(a[i]))
        assert rw[i, 1] == pytest.approx(want)


@given(graphs(), st.integers(2, 8), st.integers(0, 20))
def test_distance_bias_depends_on_distance_only_and_is_symmetric(a, nb, extra):
    md = nb // 2 + 1 + extra  # T5 needs max_distance beyond the exact buckets
    d = shortest_path_distances(a)
    table = np.random.default_rng(nb).normal(size=(3, nb + 1))
    bias = graph_distance_bias(a, table, num_buckets=nb, max_distance=md)
    np.testing.assert_array_equal(bias, bias.transpose(0, 2, 1))
    for dist in np.unique(d):
        vals = bias[:, d == dist]
        assert np.all(vals == vals[:, :1])
    # reachable pairs use T5's one-directional buckets of -distance
    reach = d >= 0
    np.testing.assert_array_equal(
        graph_distance_buckets(d, num_buckets=nb, max_distance=md)[reach],
        t5_relative_position_bucket(
            -d[reach], bidirectional=False, num_buckets=nb, max_distance=md
        ),
    )
    assert np.all(graph_distance_buckets(d, num_buckets=nb, max_distance=md)[~reach] == nb)


@given(st.integers(3, 12), st.integers(0, 11))
def test_cycle_automorphisms_leave_the_bias_unchanged(n, r):
    a = cycle(n)
    table = np.arange(10, dtype=float)[None]
    b = graph_distance_bias(a, table, num_buckets=9, max_distance=20)
    shift = (np.arange(n) + r) % n
    np.testing.assert_array_equal(b[:, shift][:, :, shift], b)


@given(st.integers(2, 6), st.integers(2, 6), st.integers(-5, 5), st.integers(-5, 5))
def test_rope_on_grid_graph_coordinates_is_relative(h, w, sr, sc_):
    rows, cols = np.meshgrid(np.arange(h), np.arange(w), indexing="ij")
    coords = np.stack([rows.ravel(), cols.ravel()], axis=1)
    f = np.array([[1.0, 0.1], [1.0, 0.1]])
    rng = np.random.default_rng(h * w)
    x = rng.normal(size=(h * w, 8))
    s = []
    for c in (coords, coords + np.array([sr, sc_])):
        ang = coordinate_rope_angles(c, f)
        y = apply_rope_tables(x, np.cos(ang), np.sin(ang))
        s.append(y @ y.T)
    np.testing.assert_allclose(s[0], s[1], atol=1e-10)


def test_path_graph_distance_bias_is_t5_over_sequences():
    n = 12
    a = np.zeros((n, n))
    a[np.arange(n - 1), np.arange(1, n)] = a[np.arange(1, n), np.arange(n - 1)] = 1
    i, j = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    np.testing.assert_array_equal(
        graph_distance_buckets(shortest_path_distances(a), num_buckets=8, max_distance=16),
        t5_relative_position_bucket(
            -np.abs(j - i), bidirectional=False, num_buckets=8, max_distance=16
        ),
    )


@pytest.mark.parametrize(
    ("call", "err", "match"),
    [
        (lambda: laplacian(np.ones((2, 3))), ValueError, "square"),
        (lambda: laplacian([[0, 1], [0, 0]]), ValueError, "symmetric"),
        (lambda: laplacian([[1, 0], [0, 0]]), ValueError, "zero diagonal"),
        (lambda: laplacian([[0, -1], [-1, 0]]), ValueError, "non-negative"),
        (lambda: laplacian_eigenvector_encoding(cycle(4), 4), ValueError, "at most n - 1"),
        (lambda: random_walk_encoding(cycle(4), 0), ValueError, "k must be positive"),
        (lambda: graph_distance_buckets([1.5]), TypeError, "integers"),
        (lambda: graph_distance_buckets([-2]), ValueError, "-1 for unreachable"),
        (
            lambda: graph_distance_bias(cycle(3), np.ones((1, 3)), num_buckets=3),
            ValueError,
            "num_buckets \\+ 1",
        ),
        (
            lambda: coordinate_rope_angles(np.ones((3, 2)), np.ones((3, 1))),
            ValueError,
            "agree on A",
        ),
    ],
)
def test_errors(call, err, match):
    with pytest.raises(err, match=match):
        call()
