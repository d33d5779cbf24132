"""SymPy constructions used by the book's proofs (not imported by ``import refimpl``).

Every function returns exact symbolic objects, so identities such as
:math:`R_m^\\top R_n = R_{n-m}` can be asserted with ``sympy.simplify``.
"""

from __future__ import annotations

import sympy as sp

__all__ = [
    "block_rotation",
    "frequency_symbols",
    "rotation_2x2",
    "sinusoidal_pe",
    "sinusoidal_shift",
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
