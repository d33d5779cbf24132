"""Properties, oracles and error paths of refimpl.absolute."""

from __future__ import annotations

import math

import numpy as np
import oracles
import pytest
from hypothesis import given
from hypothesis import strategies as st

from refimpl.absolute import (
    integer_encoding,
    normalized_encoding,
    sinusoidal,
    sinusoidal_shift_matrix,
)

half_dims = st.integers(1, 8)
bases = st.floats(1.5, 1e6, allow_nan=False, allow_infinity=False)
positions_f = st.floats(-1000.0, 1000.0, allow_nan=False, allow_infinity=False)


# ---------------------------------------------------------------- naive encodings


@given(n=st.integers(0, 50), d=st.integers(1, 9))
def test_integer_encoding_writes_the_position(n, d):
    pe = integer_encoding(n, d)
    assert pe.shape == (n, d) and pe.dtype == np.float64
    for p in range(n):
        assert all(pe[p, j] == p for j in range(d))


@given(n=st.integers(2, 200), d=st.integers(1, 5))
def test_normalized_encoding_range_and_step(n, d):
    pe = normalized_encoding(n, d)
    assert pe.shape == (n, d)
    assert pe[0, 0] == 0.0 and pe[-1, 0] == 1.0
    np.testing.assert_allclose(np.diff(pe[:, 0]), 1.0 / (n - 1), rtol=1e-12)


def test_normalized_encoding_depends_on_length():
    # position 1 is encoded differently in sequences of different lengths
    assert normalized_encoding(3, 1)[1, 0] == 0.5
    assert normalized_encoding(5, 1)[1, 0] == 0.25
    np.testing.assert_array_equal(normalized_encoding(1, 3), [[0.0, 0.0, 0.0]])
    assert normalized_encoding(0, 2).shape == (0, 2)


@pytest.mark.parametrize("fn", [integer_encoding, normalized_encoding])
def test_naive_encoding_errors(fn):
    with pytest.raises(ValueError, match="num_positions must be non-negative"):
        fn(-1, 4)
    with pytest.raises(TypeError, match="num_positions must be an integer"):
        fn(3.0, 4)
    with pytest.raises(ValueError, match="dim must be positive"):
        fn(3, 0)
    with pytest.raises(TypeError, match="dim must be an integer"):
        fn(3, 2.5)
    assert fn(2, 3).shape == (2, 3)  # an odd width is fine here: nothing is paired


# ---------------------------------------------------------------- sinusoidal


@given(h=half_dims, base=bases, pos=st.lists(positions_f, min_size=1, max_size=6))
def test_sinusoidal_matches_loop_oracle(h, base, pos):
    pe = sinusoidal(pos, 2 * h, base)
    assert pe.shape == (len(pos), 2 * h)
    np.testing.assert_allclose(pe, oracles.sinusoidal(pos, 2 * h, base), atol=1e-12)


def test_sinusoidal_layout_sin_even_cos_odd():
    pe = sinusoidal([3.0], 4, 100.0)
    np.testing.assert_allclose(pe[0], [math.sin(3), math.cos(3), math.sin(0.3), math.cos(0.3)])


@given(n=st.integers(0, 30), h=half_dims)
def test_sinusoidal_count_equals_explicit_positions(n, h):
    np.testing.assert_array_equal(sinusoidal(n, 2 * h), sinusoidal(np.arange(n), 2 * h))


@given(h=half_dims, base=bases, p=positions_f, k=positions_f)
def test_shift_matrix_moves_the_encoding(h, base, p, k):
    M = sinusoidal_shift_matrix(k, 2 * h, base)
    pe = sinusoidal([p, p + k], 2 * h, base)
    np.testing.assert_allclose(M @ pe[0], pe[1], atol=1e-9)


@given(h=half_dims, base=bases, a=positions_f, b=positions_f)
def test_shift_matrices_form_a_group(h, base, a, b):
    d = 2 * h
    Ma, Mb = sinusoidal_shift_matrix(a, d, base), sinusoidal_shift_matrix(b, d, base)
    np.testing.assert_allclose(Ma @ Mb, sinusoidal_shift_matrix(a + b, d, base), atol=1e-9)
    np.testing.assert_allclose(Ma.T @ Ma, np.eye(d), atol=1e-12)
    np.testing.assert_array_equal(sinusoidal_shift_matrix(0, d, base), np.eye(d))


@given(h=half_dims, base=bases, p=positions_f, q=positions_f, k=positions_f)
def test_sinusoidal_dot_product_depends_only_on_offset(h, base, p, q, k):
    d = 2 * h
    pe = sinusoidal([p, p + k, q, q + k], d, base)
    np.testing.assert_allclose(pe[0] @ pe[1], pe[2] @ pe[3], atol=1e-9)
    w = [base ** (-2 * i / d) for i in range(h)]
    np.testing.assert_allclose(pe[0] @ pe[1], math.fsum(math.cos(k * wi) for wi in w), atol=1e-9)
    # every row has norm sqrt(d/2)
    np.testing.assert_allclose(np.linalg.norm(pe, axis=1), math.sqrt(h), rtol=1e-12)


def test_sinusoidal_dot_product_is_symmetric_in_offset():
    pe = sinusoidal(200, 16)
    assert pe[50] @ pe[60] == pytest.approx(pe[50] @ pe[40])


def test_sinusoidal_errors():
    with pytest.raises(ValueError, match="dim must be even"):
        sinusoidal(4, 5)
    with pytest.raises(ValueError, match="dim must be positive"):
        sinusoidal(4, 0)
    with pytest.raises(ValueError, match="base must be greater than 1"):
        sinusoidal(4, 4, base=1.0)
    with pytest.raises(ValueError, match="base must be finite"):
        sinusoidal(4, 4, base=np.nan)
    with pytest.raises(ValueError, match="positions_or_count must be a non-negative count"):
        sinusoidal(-2, 4)
    with pytest.raises(ValueError, match="positions_or_count must be finite"):
        sinusoidal([0.0, np.inf], 4)
    with pytest.raises(ValueError, match="positions_or_count must be one-dimensional"):
        sinusoidal([[0, 1]], 4)
    with pytest.raises(TypeError, match="positions_or_count must be integers or reals"):
        sinusoidal(["a"], 4)


def test_shift_matrix_errors():
    with pytest.raises(ValueError, match="k must be finite"):
        sinusoidal_shift_matrix(np.inf, 4)
    with pytest.raises(TypeError, match="k must be a real number"):
        sinusoidal_shift_matrix("1", 4)
    with pytest.raises(ValueError, match="dim must be even"):
        sinusoidal_shift_matrix(1, 3)
    with pytest.raises(ValueError, match="base must be greater than 1"):
        sinusoidal_shift_matrix(1, 4, base=0.5)


def test_sinusoidal_count_rule_scalars_are_counts_floats_are_refused():
    """A scalar integer of any kind is a count (np.array(4) used to give one row); a float or
    boolean scalar is refused rather than read as one position; a list is positions."""
    four = sinusoidal(4, 8)
    assert four.shape == (4, 8)
    for count in (np.int64(4), np.array(4), np.array(4, dtype=np.uint8)):
        np.testing.assert_array_equal(sinusoidal(count, 8), four)
    for bad in (4.0, np.float32(4.0), np.array(4.0)):
        with pytest.raises(TypeError, match="positions_or_count as a scalar is a count"):
            sinusoidal(bad, 8)
    with pytest.raises(TypeError, match="positions_or_count must be a count or positions"):
        sinusoidal(True, 8)
    np.testing.assert_array_equal(sinusoidal([3.0], 8), four[3:4])
    np.testing.assert_array_equal(sinusoidal(np.array([3]), 8), four[3:4])


def test_absolute_tables_refuse_sizes_beyond_the_limits():
    from refimpl._checks import MAX_POSITION, MAX_TABLE_ELEMENTS

    with pytest.raises(ValueError, match=f"at most {MAX_POSITION}"):
        sinusoidal(MAX_POSITION + 1, 2)
    with pytest.raises(ValueError, match=f"MAX_TABLE_ELEMENTS = {MAX_TABLE_ELEMENTS}"):
        sinusoidal(2**24, 512)
    with pytest.raises(ValueError, match=f"MAX_TABLE_ELEMENTS = {MAX_TABLE_ELEMENTS}"):
        integer_encoding(2**20, 2**12)
    with pytest.raises(ValueError, match="num_positions must be at most"):
        normalized_encoding(MAX_POSITION + 1, 1)
    with pytest.raises(TypeError, match="num_positions must be an integer"):
        integer_encoding(3.0, 2)
