"""Exact numbers for the correctly rounded tables: Python-integer fixed point (private,
floor 1).

The RoPE angle the reference rounds is ``m theta_i`` for the *exact* ``theta_i``: the real
number ``base^(-2i/dim)``, a float64 value taken exactly, or a scaling method's exact
frequency. :class:`ExactFrequencies` holds one definition per pair and evaluates it to any
number of bits with Python integers only (fixed-point ``ln`` and ``exp`` from ``atanh`` and
Taylor series, ``pi`` by Machin's formula): no mpmath, no platform ``libm``. The correctly
rounded evaluator (:mod:`refimpl._correct`) takes ``theta_i N / (2 pi)`` from here as three
doubles, and its exact fallback takes ``theta_i`` at whatever precision Ziv's loop needs
(book page "Correctly rounded float64 tables", equation ``eq:numerics-theta-exact``).

Domain of the tables: ``|position * theta_i| <= MAX_ANGLE = 2^31`` radians for every entry
(with ``theta_0 = 1``: positions up to ``2^31``).
"""

from __future__ import annotations

import dataclasses
import functools
from fractions import Fraction

import numpy as np

from ._checks import as_inv_freq, check_base, check_dim

_FIXED_BITS = 320  # fixed-point fraction bits of the integer log/exp (about 96 decimal digits)
# Largest |position * theta| (radians) of the tables' domain: every integer position below
# MAX_POSITION = 2^31 for theta_0 = 1. The reduction of refimpl._correct stays exact far
# beyond (|m phi| < 2^51 units of 2 pi / 4096), the error analysis is stated up to here.
MAX_ANGLE = 2.0**31


# ---------------------------------------------------------------- exact constants (Python ints)
def _atanh_inv(x: int, bits: int) -> int:
    """``atanh(1/x) * 2**bits`` (floor, error below a few units) for an integer ``x > 1``."""
    one = 1 << bits
    term = one // x
    x2 = x * x
    total = 0
    k = 1
    while term:
        total += term // k
        term //= x2
        k += 2
    return total


def _atan_inv(x: int, bits: int) -> int:
    """``atan(1/x) * 2**bits`` for an integer ``x > 1`` (alternating series)."""
    one = 1 << bits
    term = one // x
    x2 = x * x
    total = 0
    k = 1
    sign = 1
    while term:
        total += sign * (term // k)
        term //= x2
        k += 2
        sign = -sign
    return total


@functools.lru_cache(maxsize=32)
def _pi_fixed(bits: int = _FIXED_BITS) -> int:
    """``pi * 2**bits`` by Machin's formula pi = 16 atan(1/5) - 4 atan(1/239)."""
    guard = 16
    p = 16 * _atan_inv(5, bits + guard) - 4 * _atan_inv(239, bits + guard)
    return p >> guard


@functools.lru_cache(maxsize=32)
def _ln2_fixed(bits: int = _FIXED_BITS) -> int:
    """``ln 2 * 2**bits`` as 2 atanh(1/3)."""
    guard = 16
    return (2 * _atanh_inv(3, bits + guard)) >> guard


def _split3(x: Fraction) -> tuple[float, float, float]:
    """Three doubles ``hi + mid + lo`` nearest ``x`` in turn (each the correctly rounded
    remainder): ``|x - (hi + mid + lo)| <= 2^-159 |x|`` for normal values."""
    hi = float(x)
    r = x - Fraction(hi)
    mid = float(r)
    lo = float(r - Fraction(mid))
    return hi, mid, lo


# ------------------------------------------------------------ exact frequency definitions
# Every fixed-point helper below works with ``_GUARD`` extra bits: each series step truncates
# by less than one unit and there are fewer than 2^20 steps in all, so the returned value is
# within 2^-bits (relative for exp, absolute for ln) with a wide margin.
_GUARD = 64


def _ln_int(n: int, bits: int) -> int:
    """``ln n * 2**bits`` for an integer ``n >= 1`` (error below one unit): ``n = x 2^k``
    with ``x`` in [1, 2) and ``ln x = 2 atanh((x - 1)/(x + 1))``."""
    w = bits + _GUARD
    k = n.bit_length() - 1
    z = ((n - (1 << k)) << w) // (n + (1 << k))  # z in [0, 1/3)
    z2 = (z * z) >> w
    term, total, j = z, 0, 1
    while term:
        total += term // j
        term = (term * z2) >> w
        j += 2
    return ((2 * total) >> _GUARD) + k * _ln2_fixed(bits + _GUARD) // (1 << _GUARD)


def _ln_fraction(q: Fraction, bits: int) -> int:
    """``ln q * 2**bits`` for a rational ``q > 0`` (error below two units)."""
    return _ln_int(q.numerator, bits) - _ln_int(q.denominator, bits)


def _exp_int(y: int, bits: int) -> Fraction:
    """``exp(y / 2**bits)`` as a rational with relative error below ``2^-(bits - 20)`` for
    ``|y| < 2^(bits + 12)``: ``y = n ln 2 + s`` with ``|s| <= ln 2``, Taylor series of ``e^s``
    at ``bits + _GUARD`` bits (at most a few thousand truncations of one unit each)."""
    w = bits + _GUARD
    yw = y << _GUARD
    ln2 = _ln2_fixed(w)
    n = yw // ln2
    s = yw - n * ln2
    one = 1 << w
    term, total, k = one, one, 1
    while term:
        term = (term * s >> w) // k
        total += term
        k += 1
    return Fraction(total, one) * Fraction(2) ** n


def _pi_fraction(bits: int) -> Fraction:
    """pi within ``2^-bits`` (Machin's formula in integers)."""
    return Fraction(_pi_fixed(bits + 8), 1 << (bits + 8))


@dataclasses.dataclass(frozen=True)
class _Power:
    """``theta = factor * prod(base_k ** exponent_k)`` (rationals; no terms: a binary value)."""

    terms: tuple  # ((base Fraction > 0, exponent Fraction), ...)
    factor: Fraction

    def approx(self, bits: int) -> Fraction:
        if not self.terms:
            return self.factor
        w = bits + _GUARD
        y = 0
        for b, e in self.terms:
            y += (e.numerator * _ln_fraction(b, w)) // e.denominator  # [eq:numerics-theta-exact]
        return self.factor * _exp_int(y, w)


@dataclasses.dataclass(frozen=True)
class _Blend:
    """``theta = t * (1/s + g (1 - 1/s))`` with ``t`` a :class:`_Power`, the rotation count
    ``r = L t / (2 pi)`` over the length ``L`` and ``g = clip((r - low)/(high - low), 0, 1)``
    (``high == low``: the step ``g = [r > low]``). Llama 3's bands and YaRN's paper ramp."""

    power: _Power
    length: int
    low: Fraction
    high: Fraction
    factor: Fraction  # s

    def approx(self, bits: int) -> Fraction:
        s, span = self.factor, self.high - self.low
        extra = 16
        while True:
            p = bits + extra + 8
            t = self.power.approx(p)
            r = self.length * t / (2 * _pi_fraction(p + 8))
            err = abs(r) * Fraction(1, 1 << (p - 2))  # |r - r_true| bound
            if span == 0:
                if abs(r - self.low) > err:  # r is transcendental: never equal to low
                    g = Fraction(int(r > self.low))
                    return t * (1 / s + g * (1 - 1 / s))
            elif err * (s - 1) / span <= Fraction(1, 1 << (bits + 4)):
                g = min(max((r - self.low) / span, Fraction(0)), Fraction(1))
                return t * (1 / s + g * (1 - 1 / s))
            extra *= 2


@dataclasses.dataclass(frozen=True)
class _Turns:
    """``theta = 2 pi / n``: a whole number ``n`` of tokens per turn (Resonance RoPE)."""

    n: int

    def approx(self, bits: int) -> Fraction:
        return 2 * _pi_fraction(bits + 8) / self.n


@dataclasses.dataclass(frozen=True)
class _Zero:
    """``theta = 0``: a pass-through pair (proportional RoPE)."""

    def approx(self, bits: int) -> Fraction:
        return Fraction(0)


def _rational(x) -> Fraction:
    return x if isinstance(x, Fraction) else Fraction(x)


@dataclasses.dataclass(frozen=True)
class ExactFrequencies:
    r"""RoPE frequencies :math:`\theta_i` as exact real numbers, one definition per pair.

    The correctly rounded tables (``cos_sin(..., method="correct")``) take the cosine and sine
    of :math:`m\,\theta_i` for *this* real :math:`\theta_i`, not for its float64 rounding.
    Build one with the constructors (:meth:`power`, :meth:`binary`) or from a scaling
    method's record, ``ROPE_SCALINGS[name].exact_frequencies(dim=..., base=..., ...)``; pass it
    wherever ``inv_freq`` is accepted by :func:`refimpl.cos_sin` and the streaming tables.

    Attributes
    ----------
    columns : tuple
        One definition per pair: a rational times a product of rational powers
        (:math:`b^{-2i/d}`, scaled bases, divisors), a blend of such a power with its
        division by a factor (Llama 3's bands, YaRN's paper ramp), a whole number of tokens per
        turn (:math:`2\pi/n`), or zero (a pass-through pair).
    description : str
        Where the definition came from (the method and its parameters).

    Notes
    -----
    Book equation ``eq:numerics-theta-exact``. Every definition is evaluated to any precision
    with Python integers (fixed-point logarithm, exponential and Machin's :math:`\pi`), which is
    how the correct path's exact fallback reaches any number of bits.

    Examples
    --------
    >>> f = ExactFrequencies.power(4, 100.0)
    >>> f.float64()
    array([1. , 0.1])
    >>> ExactFrequencies.binary([1.0, 0.5]).float64()
    array([1. , 0.5])
    """

    columns: tuple
    description: str = ""

    def __len__(self) -> int:
        return len(self.columns)

    @classmethod
    def power(cls, dim: int, base, *, divisors=None, description: str = "") -> ExactFrequencies:
        r""":math:`\theta_i = b^{-2i/d} / f_i` for ``i < dim // 2`` (``divisors`` default 1),
        with ``base`` and the divisors taken as exact binary (or rational) numbers."""
        d = check_dim(dim)
        b = _rational(check_base(base))
        half = d // 2
        if divisors is None:
            divs = [Fraction(1)] * half
        else:
            arr = as_inv_freq(divisors, "divisors")
            if arr.shape[0] != half:
                raise ValueError(
                    f"divisors must have dim // 2 = {half} entries, got {arr.shape[0]}"
                )
            divs = [Fraction(float(v)) for v in arr]
        dim = d
        cols = tuple(
            _Power(((b, Fraction(-2 * i, dim)),) if i else (), 1 / divs[i]) for i in range(half)
        )
        return cls(cols, description or f"b**(-2i/d), d={dim}, b={float(b)!r}")

    @classmethod
    def binary(cls, values, *, description: str = "") -> ExactFrequencies:
        """Each value (finite, positive) is taken as the exact binary number it is."""
        vals = as_inv_freq(values, "values")
        cols = tuple(_Power((), Fraction(float(v))) for v in vals)
        return cls(cols, description or "float64 values taken exactly")

    def approx(self, bits: int) -> list[Fraction]:
        """Every :math:`\\theta_i` within a relative ``2^-bits``, as rationals."""
        return [c.approx(bits) for c in self.columns]

    def float64(self) -> np.ndarray:
        """The float64 nearest to each :math:`\\theta_i` (read-only), shape (d/2,)."""
        return _float64_of(self)

    def triple(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Each :math:`\\theta_i` as three doubles ``hi + mid + lo`` (about 159 bits)."""
        return _triple_of(self)


@functools.lru_cache(maxsize=64)
def _triple_of(freqs: ExactFrequencies):
    parts = np.array([_split3(t) for t in freqs.approx(_FIXED_BITS)], dtype=np.float64)
    out = tuple(np.ascontiguousarray(parts[:, j]) for j in range(3))
    for a in out:
        a.setflags(write=False)
    return out


def _float64_of(freqs: ExactFrequencies) -> np.ndarray:
    return _triple_of(freqs)[0]
