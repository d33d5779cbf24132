"""The SymPy constructions of refimpl.symbolic: exact identities and agreement with NumPy."""

from __future__ import annotations

import numpy as np
import pytest

sp = pytest.importorskip("sympy")

from refimpl.absolute import sinusoidal, sinusoidal_shift_matrix  # noqa: E402
from refimpl.rotary import rotation_matrix  # noqa: E402
from refimpl.symbolic import (  # noqa: E402
    block_rotation,
    frequency_symbols,
    rotation_2x2,
    sinusoidal_pe,
    sinusoidal_shift,
    trig_vanishes,
)

m, n, k, p = sp.symbols("m n k p", real=True)


def _is_zero(M) -> bool:
    return sp.simplify(sp.expand_trig(sp.expand(M))) == sp.zeros(*M.shape)


def test_rotation_2x2_identities():
    a, b = sp.symbols("a b", real=True)
    R = rotation_2x2
    assert R(0) == sp.eye(2)
    assert _is_zero(R(a) * R(b) - R(a + b))
    assert _is_zero(R(a).T * R(b) - R(b - a))
    assert _is_zero(R(a).T * R(a) - sp.eye(2))
    assert sp.simplify(R(a).det()) == 1
    # counter-clockwise: e1 goes to (cos a, sin a)
    assert R(a) * sp.Matrix([1, 0]) == sp.Matrix([sp.cos(a), sp.sin(a)])


def test_frequency_symbols():
    th = frequency_symbols(3)
    assert [str(t) for t in th] == ["theta_0", "theta_1", "theta_2"]
    assert all(t.is_positive for t in th)
    assert str(frequency_symbols(1, "w")[0]) == "w_0"
    with pytest.raises(ValueError, match="n_pairs must be positive"):
        frequency_symbols(0)


@pytest.mark.parametrize("pairing", ["interleaved", "half"])
def test_block_rotation_relative_identity_with_symbolic_frequencies(pairing):
    th = frequency_symbols(3)
    Rm, Rn = block_rotation(m, th, pairing=pairing), block_rotation(n, th, pairing=pairing)
    assert _is_zero(Rm.T * Rn - block_rotation(n - m, th, pairing=pairing))
    assert _is_zero(Rm * Rn - block_rotation(m + n, th, pairing=pairing))
    assert _is_zero(Rm.T * Rm - sp.eye(6))
    assert block_rotation(0, th, pairing=pairing) == sp.eye(6)


@pytest.mark.parametrize("pairing", ["interleaved", "half"])
def test_block_rotation_equals_numpy_rotation_matrix(pairing):
    freqs = [1.0, 0.1, 0.01]
    R = block_rotation(sp.Float(2.5), [sp.Float(f) for f in freqs], pairing=pairing)
    np.testing.assert_allclose(
        np.array(R.evalf(), dtype=float), rotation_matrix(2.5, freqs, pairing=pairing), atol=1e-14
    )


def test_block_rotation_pairings_are_related_by_the_permutation():
    th = frequency_symbols(2)
    perm = [0, 2, 1, 3]
    P = sp.Matrix(4, 4, lambda r, c: 1 if perm[r] == c else 0)
    assert P * block_rotation(m, th) * P.T == block_rotation(m, th, pairing="half")


def test_block_rotation_rejects_unknown_pairing():
    with pytest.raises(ValueError, match="pairing must be 'half' or 'interleaved'"):
        block_rotation(m, frequency_symbols(1), pairing="neox")


def test_sinusoidal_shift_theorem_symbolic():
    w = frequency_symbols(3, "omega")
    lhs = sinusoidal_shift(k, w) * sinusoidal_pe(p, w)
    assert _is_zero(lhs - sinusoidal_pe(p + k, w))
    # M_k does not depend on p, is orthogonal and M_a M_b = M_{a+b}
    assert p not in sinusoidal_shift(k, w).free_symbols
    assert _is_zero(sinusoidal_shift(k, w).T * sinusoidal_shift(k, w) - sp.eye(6))
    assert _is_zero(sinusoidal_shift(m, w) * sinusoidal_shift(n, w) - sinusoidal_shift(m + n, w))
    # dot product depends only on the offset
    dot = (sinusoidal_pe(p, w).T * sinusoidal_pe(p + k, w))[0]
    assert sp.simplify(sp.expand_trig(dot) - sum(sp.cos(k * wi) for wi in w)) == 0


def test_sinusoidal_symbolic_equals_numpy():
    d, base = 6, 100.0
    w = [sp.Float(base ** (-2 * i / d)) for i in range(d // 2)]
    np.testing.assert_allclose(
        np.array(sinusoidal_pe(sp.Float(7), w).evalf(), dtype=float).ravel(),
        sinusoidal([7.0], d, base)[0],
        atol=1e-14,
    )
    np.testing.assert_allclose(
        np.array(sinusoidal_shift(sp.Float(3), w).evalf(), dtype=float),
        sinusoidal_shift_matrix(3, d, base),
        atol=1e-14,
    )


def test_block_diagonal_lemma_for_a_symbolic_size():
    from refimpl.symbolic import block_diagonal_step, blocks_equal, symbolic_size

    s = symbolic_size("s")
    lemma = block_diagonal_step(s)
    A, B, C, D = (lemma[name] for name in "ABCD")
    assert blocks_equal(lemma["transpose_product"], sp.BlockDiagMatrix(A.T * C, B.T * D))
    assert blocks_equal(lemma["product"], sp.BlockDiagMatrix(A * C, B * D))
    assert not blocks_equal(lemma["product"], sp.BlockDiagMatrix(C * A, B * D))
    u, v = lemma["u"], lemma["v"]
    assert blocks_equal(lemma["matvec"], sp.BlockMatrix([[A * u], [B * v]]))


def test_rope_induction_step_with_explicit_new_block():
    from refimpl.symbolic import block_diagonal_step, blocks_equal, symbolic_size

    s = symbolic_size("s")
    th = sp.Symbol("theta", positive=True)
    step = block_diagonal_step(s, rotation_2x2(m * th), rotation_2x2(n * th))
    E = sp.MatrixSymbol("E", s, s)
    got = step["transpose_product"].xreplace({step["A"].T * step["C"]: E})
    assert blocks_equal(got, sp.BlockDiagMatrix(E, rotation_2x2((n - m) * th)))
    # the wrong direction is rejected: the check can fail
    assert not blocks_equal(got, sp.BlockDiagMatrix(E, rotation_2x2((m - n) * th)))


def test_block_rotation_recursion_and_cancel_orthogonal():
    from refimpl.symbolic import cancel_orthogonal, symbolic_size

    th = frequency_symbols(4)
    for h in range(1, 4):
        assert block_rotation(m, th[: h + 1]) == sp.diag(
            block_rotation(m, th[:h]), rotation_2x2(m * th[h])
        )
    s = symbolic_size("s")
    P, X, Y = (sp.MatrixSymbol(name, s, s) for name in ("P", "X", "Y"))
    assert cancel_orthogonal((P * X * P.T).T * (P * Y * P.T), P) == P * X.T * Y * P.T
    assert cancel_orthogonal(P.T * P, P) == sp.Identity(s)
    assert cancel_orthogonal(P * X, P) == P * X  # nothing to cancel


def test_blocks_equal_rejects_other_shapes():
    from refimpl.symbolic import blocks_equal

    a = sp.BlockDiagMatrix(sp.Matrix([[1]]), sp.Matrix([[2]]))
    b = sp.BlockDiagMatrix(sp.Matrix([[1, 0], [0, 2]]))
    assert blocks_equal(a, a)
    assert not blocks_equal(a, b)
    assert not blocks_equal(sp.Matrix([[1]]), a)


@pytest.mark.parametrize("shift", [0, 1, 2])
def test_trig_vanishes_proves_identities_and_rejects_near_misses(shift):
    """True on identities of rotations (any integer multiples of the angles), False when a
    term is missing or an angle is off, in scalar and matrix form; numerically cross-checked."""
    a, b = sp.symbols("a b", real=True)
    m, n = shift + 1, shift + 2
    ident = rotation_2x2(m * a).T * rotation_2x2(n * b) - rotation_2x2(n * b - m * a)
    assert trig_vanishes(ident) and trig_vanishes(ident[0, 1])
    wrong = rotation_2x2(m * a) * rotation_2x2(n * b) - rotation_2x2(n * b - m * a)
    assert not trig_vanishes(wrong)
    assert not trig_vanishes(sp.cos(m * a + b) - sp.cos(m * a) * sp.cos(b))
    rng = np.random.default_rng(shift)
    for va, vb in rng.uniform(-10, 10, (5, 2)):
        got = np.array(wrong.subs({a: va, b: vb}), dtype=float)
        assert np.abs(got).max() > 1e-6  # the near miss really is not an identity
        assert np.abs(np.array(ident.subs({a: va, b: vb}), dtype=float)).max() < 1e-12
