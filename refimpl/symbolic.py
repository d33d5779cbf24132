"""SymPy constructions used by the book's proofs (not imported by ``import refimpl``).

Every function returns exact symbolic objects, so identities such as
:math:`R_m^\\top R_n = R_{n-m}` can be asserted with ``sympy.simplify``.
"""

from __future__ import annotations

import sympy as sp

__all__ = [
    "block_diagonal_step",
    "block_rotation",
    "blocks_equal",
    "cancel_orthogonal",
    "frequency_symbols",
    "rotation_2x2",
    "sinusoidal_pe",
    "sinusoidal_shift",
    "symbolic_size",
    "trig_vanishes",
]


def rotation_2x2(angle) -> sp.Matrix:
    """The 2x2 counter-clockwise rotation by ``angle``: [[cos, -sin], [sin, cos]]."""
    a = sp.sympify(angle)
    return sp.Matrix([[sp.cos(a), -sp.sin(a)], [sp.sin(a), sp.cos(a)]])  # [eq:rope-2x2]


def frequency_symbols(n_pairs: int, name: str = "theta") -> tuple[sp.Symbol, ...]:
    """Positive real symbols ``theta_0 .. theta_{n_pairs-1}`` for the pair frequencies."""
    if n_pairs <= 0:
        raise ValueError(f"n_pairs must be positive, got {n_pairs}")
    return sp.symbols(f"{name}_0:{n_pairs}", positive=True)


def block_rotation(position, freqs, *, pairing: str = "interleaved") -> sp.Matrix:
    """The d x d RoPE matrix R_m with symbolic (or numeric) frequencies.

    ``pairing="interleaved"`` gives the block-diagonal form (pairs (2i, 2i+1));
    ``pairing="half"`` places pair i on features (i, i + d/2).
    """
    if pairing not in ("half", "interleaved"):
        raise ValueError(f"pairing must be 'half' or 'interleaved', got {pairing!r}")
    m = sp.sympify(position)
    h = len(freqs)
    d = 2 * h
    R = sp.zeros(d, d)
    for i, th in enumerate(freqs):
        a, b = (2 * i, 2 * i + 1) if pairing == "interleaved" else (i, i + h)
        blk = rotation_2x2(m * th)
        R[a, a], R[a, b], R[b, a], R[b, b] = blk[0, 0], blk[0, 1], blk[1, 0], blk[1, 1]
    return R  # [eq:rope-matrix]


def sinusoidal_pe(position, freqs) -> sp.Matrix:
    """Column vector (sin p w_0, cos p w_0, sin p w_1, cos p w_1, ...)."""
    p = sp.sympify(position)
    entries = []
    for w in freqs:
        entries += [sp.sin(p * w), sp.cos(p * w)]  # [eq:pe-sinusoidal]
    return sp.Matrix(entries)


def sinusoidal_shift(offset, freqs) -> sp.Matrix:
    """M_k with PE(p + k) = M_k PE(p): blocks [[cos k w, sin k w], [-sin k w, cos k w]]."""
    k = sp.sympify(offset)
    h = len(freqs)
    M = sp.zeros(2 * h, 2 * h)
    for i, w in enumerate(freqs):
        c, s = sp.cos(k * w), sp.sin(k * w)
        M[2 * i, 2 * i], M[2 * i, 2 * i + 1] = c, s  # [eq:pe-shift]
        M[2 * i + 1, 2 * i], M[2 * i + 1, 2 * i + 1] = -s, c
    return M


# ---------------------------------------------------------------------------------------------
# Block-diagonal lemmas for a symbolic number of blocks (the induction step of the book's
# proofs for every dimension d).
# ---------------------------------------------------------------------------------------------


def symbolic_size(name: str = "s") -> sp.Symbol:
    """A positive integer symbol, used as the (symbolic) size of a matrix block."""
    return sp.Symbol(name, integer=True, positive=True)


def block_diagonal_step(size, B=None, D=None, v=None, *, block: int = 2) -> dict[str, object]:
    """Block products of ``diag(A, B)`` and ``diag(C, D)`` with ``A, C`` of symbolic size.

    ``A, C`` are ``size x size`` matrix symbols (``size`` may be a SymPy symbol) and ``u`` a
    ``size x 1`` vector symbol; ``B, D`` (``block x block``) and ``v`` (``block x 1``) are
    matrix symbols unless explicit matrices are given (e.g. a 2x2 rotation with a symbolic
    angle). Returns the blocks and the collapsed block forms of

    * ``"product"``: ``diag(A, B) diag(C, D)``,
    * ``"transpose_product"``: ``diag(A, B)^T diag(C, D)``,
    * ``"matvec"``: ``diag(A, B) [u; v]``,

    so that a proof can assert ``product == diag(A C, B D)`` and so on for every size: the
    induction step from ``size / block`` blocks to one more block.
    """
    A, C = sp.MatrixSymbol("A", size, size), sp.MatrixSymbol("C", size, size)
    u = sp.MatrixSymbol("u", size, 1)
    B = sp.MatrixSymbol("B", block, block) if B is None else sp.ImmutableMatrix(B)
    D = sp.MatrixSymbol("D", block, block) if D is None else sp.ImmutableMatrix(D)
    v = sp.MatrixSymbol("v", block, 1) if v is None else sp.ImmutableMatrix(v)
    X, Y = sp.BlockDiagMatrix(A, B), sp.BlockDiagMatrix(C, D)
    return {
        "A": A,
        "B": B,
        "C": C,
        "D": D,
        "u": u,
        "v": v,
        "product": sp.block_collapse(X * Y),
        "transpose_product": sp.block_collapse(X.T * Y),
        "matvec": sp.block_collapse(X * sp.BlockMatrix([[u], [v]])),
    }


def blocks_equal(X, Y) -> bool:
    """Whether two block matrices have the same block structure and equal blocks.

    Blocks are compared exactly: structurally for matrix expressions (``A.T*C``), and by
    simplifying the difference to zero for explicit matrices.
    """
    if not (isinstance(X, sp.BlockMatrix) and isinstance(Y, sp.BlockMatrix)):
        return False
    if X.blockshape != Y.blockshape:
        return False
    for x, y in zip(X.blocks, Y.blocks, strict=True):
        if x.shape != y.shape:
            return False
        if x == y:
            continue
        if isinstance(x, sp.MatrixBase) and isinstance(y, sp.MatrixBase):
            diff = sp.simplify(sp.expand_trig(sp.expand(x - y)))
            if diff != sp.zeros(*x.shape):
                return False
        elif sp.simplify(x - y) != sp.ZeroMatrix(*x.shape):
            return False
    return True


def trig_vanishes(expr) -> bool:
    """Whether a trigonometric polynomial (or a matrix of them) is identically zero.

    Each cos and sin is written as exponentials and the result expanded: an identity then
    cancels term by term to exactly 0, an answer that is proved, not sampled. It is much
    faster than ``sympy.simplify`` on products of rotations; a False means only that the
    expansion did not cancel (for a trigonometric polynomial in real symbols it does cancel
    whenever the identity holds).

    >>> a, b = sp.symbols("a b", real=True)
    >>> trig_vanishes(rotation_2x2(a) * rotation_2x2(b) - rotation_2x2(a + b))
    True
    >>> trig_vanishes(sp.sin(a + b) - sp.sin(a) * sp.cos(b))
    False
    """
    entries = list(expr) if isinstance(expr, sp.MatrixBase) else [expr]
    return all(sp.expand(sp.sympify(e).rewrite(sp.exp)) == 0 for e in entries)


def cancel_orthogonal(expr, P):
    """Remove every adjacent ``P.T * P`` from a matrix product (valid when P is orthogonal)."""
    if not isinstance(expr, sp.MatMul):
        return expr
    factors = list(expr.args)
    out: list = []
    for f in factors:
        if out and out[-1] == P.T and f == P:
            out.pop()
            continue
        out.append(f)
    if not out:
        return sp.Identity(P.shape[0])
    return out[0] if len(out) == 1 else sp.MatMul(*out)
