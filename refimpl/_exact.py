"""Faithfully rounded cos/sin of exact RoPE angles, in NumPy only (private, floor 1).

The plain float64 table ``np.cos(m * theta)`` rounds ``theta`` and then the product, and the
angle it takes the cosine of is off by up to ``|m theta| 2^-52``: millions of ulps at long
positions. This module computes ``cos(m theta_i)`` and ``sin(m theta_i)`` of the *exact* angle
in four steps (book page "Faithful float64 tables", equations ``eq:numerics-*``):

1. ``theta_i`` as an unevaluated sum of three doubles ``hi + mid + lo`` (about 159 bits). With
   ``dim``/``base`` it is the real number ``base^(-2i/dim)``, computed once per ``(dim, base)``
   with Python-integer fixed-point ``log`` and ``exp`` (no mpmath, no tables); with ``inv_freq``
   it is the given binary value (``mid = lo = 0``).
2. The products ``m * hi`` and ``m * mid`` exactly, as pairs of doubles, by Dekker's
   TwoProduct with Veltkamp splitting (vectorised over the table); ``m * lo`` rounded.
3. ``k = rint(m hi / 2 pi)`` and the reduction ``r = m theta - 2 pi k`` with ``2 pi`` as five
   doubles (Cody-Waite): the first four have 24 significant bits, so every ``k * C_j`` is
   exact for ``|k| < 2^29``; ``s1 - k C1`` cancels exactly (Sterbenz) and so does the next
   step; the remaining terms are added with error-free TwoSum, so that ``r = r_hi + r_lo`` has
   an absolute error below about ``2^-115`` for ``|m theta| < 2^31``.
4. ``cos r ~ cos r_hi - sin(r_hi) r_lo`` and ``sin r ~ sin r_hi + cos(r_hi) r_lo``: the
   platform's float64 ``cos``/``sin`` on ``|r_hi| <= pi`` plus a first-order correction (the
   neglected term is of order ``r_lo^2 ~ 2^-106``, far below half an ulp).

The result is within 1 ulp of the correctly rounded value whenever the platform's ``cos`` and
``sin`` are faithful (error below 1 ulp) on ``[-pi, pi]`` (glibc: about 0.51 ulp) and the
result is not below about ``2^-60`` in magnitude (none is expected among ``2^31`` positions:
the smallest ``|cos|``, ``|sin|`` there are near ``2^-40``). Fractional positions are handled
by the same exact products.

Domain: ``|position * theta_i| <= MAX_ANGLE = 2^31`` radians for every entry (with
``theta_0 = 1``: positions up to ``2^31``). Beyond ``2^29 * 2 pi`` the products ``k * C_j``
stop being exact and the result is wrong (``cos(2^33)`` off in the 7th digit), so
:func:`accurate_cos_sin` refuses angles outside the domain instead of returning them.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from fractions import Fraction

import numpy as np

_FIXED_BITS = 320  # fixed-point fraction bits of the integer log/exp (about 96 decimal digits)
_SPLITTER = 134217729.0  # 2**27 + 1, Veltkamp's constant for float64
_CHUNK = 1 << 12  # table entries per block: 32 KiB temporaries stay in cache
# Largest |position * theta| (radians) of the proved domain. The reduction needs k * C_j exact,
# i.e. |k| < 2^29 with k = rint(angle / 2 pi), so angles below 2^29 * 2 pi ~ 3.37e9; the
# error analysis of step 3 and the measurements are stated for angles below 2^31 ~ 2.1e9,
# which is every integer position below MAX_POSITION = 2^31 for theta_0 = 1.
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


def _ln_fixed(b: float, bits: int = _FIXED_BITS) -> int:
    """``ln b * 2**bits`` for a float ``b > 0``: ``b = x 2^e`` with ``x`` in [1, 2), and
    ``ln x = 2 atanh((x - 1)/(x + 1))`` summed as a series in ``z^2 <= 1/9``."""
    mant, e = math.frexp(b)  # b = mant * 2**e, mant in [0.5, 1)
    big = int(mant * 2.0**53)  # exact: x = big / 2**52 in [1, 2)
    e -= 1
    guard = 16
    w = bits + guard
    z = ((big - (1 << 52)) << w) // (big + (1 << 52))
    z2 = (z * z) >> w
    term, total, k = z, 0, 1
    while term:
        total += term // k
        term = (term * z2) >> w
        k += 2
    return ((2 * total) >> guard) + e * _ln2_fixed(bits)


def _exp_fixed(y: int, bits: int = _FIXED_BITS) -> Fraction:
    """``exp(y / 2**bits)`` as an exact rational close to the real value (relative error about
    ``2^-(bits - 8)``): ``y = n ln 2 + s`` with ``|s| <= ln 2 / 2``, Taylor series for ``e^s``."""
    ln2 = _ln2_fixed(bits)
    n = (y + ln2 // 2) // ln2
    s = y - n * ln2
    one = 1 << bits
    term, total, k = one, one, 1
    while term:
        term = (term * s >> bits) // k
        total += term
        k += 1
    return Fraction(total, one) * Fraction(2) ** n


def _split3(x: Fraction) -> tuple[float, float, float]:
    """Three doubles ``hi + mid + lo`` nearest ``x`` in turn (each the correctly rounded
    remainder): ``|x - (hi + mid + lo)| <= 2^-159 |x|`` for normal values."""
    hi = float(x)
    r = x - Fraction(hi)
    mid = float(r)
    lo = float(r - Fraction(mid))
    return hi, mid, lo


def _round_bits(x: Fraction, bits: int) -> float:
    """``x`` rounded to a double with at most ``bits`` significant bits."""
    e = math.frexp(float(x))[1]
    q = Fraction(2) ** (e - bits)
    return float(round(x / q) * q)


@functools.lru_cache(maxsize=1)
def _two_pi5() -> tuple[float, float, float, float, float]:
    """2 pi as ``C1 + ... + C5`` (Cody-Waite): C1..C4 with 24 significant bits each, so that
    ``k * C_j`` is exact for ``|k| < 2^29``; C5 the rest. Together about 149 bits."""
    rest = Fraction(_pi_fixed(), 1 << (_FIXED_BITS - 1))
    parts = []
    for _ in range(4):
        parts.append(_round_bits(rest, 24))
        rest -= Fraction(parts[-1])
    parts.append(float(rest))
    return tuple(parts)


@functools.lru_cache(maxsize=64)
def exact_inv_freq3(dim: int, base: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The exact frequencies ``base^(-2i/dim)`` as three float64 arrays ``(hi, mid, lo)``.

    ``hi`` is the correctly rounded float64 frequency; ``hi + mid + lo`` agrees with the real
    number to about 159 bits. Computed once per ``(dim, base)`` with integer arithmetic.
    """
    ln_b = _ln_fixed(base)
    parts = [
        _split3(_exp_fixed(-(2 * i * ln_b) // dim)) for i in range(dim // 2)
    ]  # [eq:numerics-theta-exact]
    arr = np.array(parts, dtype=np.float64)  # (dim/2, 3)
    hi, mid, lo = (np.ascontiguousarray(arr[:, j]) for j in range(3))
    for a in (hi, mid, lo):
        a.setflags(write=False)
    return hi, mid, lo


# ------------------------------------------------------------------- error-free transformations
def _split(a):
    """Veltkamp splitting: ``a = hi + lo`` with both halves of at most 26 significant bits."""
    c = _SPLITTER * a
    hi = c - (c - a)
    return hi, a - hi


def _two_sum(a, b):
    """Knuth's TwoSum: ``s = fl(a + b)`` and ``e`` with ``s + e == a + b`` exactly."""
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def _two_prod(a, ah, al, b, bh, bl):
    """Dekker's TwoProduct from pre-split factors: ``p = fl(a b)``, ``p + e == a b`` exactly."""
    p = a * b
    e = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    return p, e


def _block(m, ms, th, ths, tm, tms, tl, has_mid, two_pi):
    """cos/sin for one block: ``m`` is (rows, 1), the frequency arrays are (1, cols)."""
    c1, c2, c3, c4, c5 = two_pi
    s1, e1 = _two_prod(m, *ms, th, *ths)  # m theta_hi = s1 + e1  [eq:numerics-two-product]
    k = np.rint(s1 * (1.0 / (2.0 * math.pi)))  # [eq:numerics-reduction]
    t2 = (s1 - k * c1) - k * c2  # exact (Sterbenz, then Cody-Waite)  [eq:numerics-reduction]
    g, ge = _two_sum(e1, -(k * c3))
    h = ge - k * c5
    if has_mid:
        s2, e2 = _two_prod(m, *ms, tm, *tms)  # m theta_mid = s2 + e2
        g, ge = _two_sum(g, s2)
        h = h + (ge + (e2 + m * tl))
    g, ge = _two_sum(g, -(k * c4))
    r_hi, r_e = _two_sum(t2, g)
    r_lo = r_e + (h + ge)  # r_hi + r_lo = m theta - 2 pi k  [eq:numerics-reduction]
    c = np.cos(r_hi)
    s = np.sin(r_hi)
    cos_out = c - s * r_lo  # [eq:numerics-first-order]
    sin_out = s + c * r_lo  # [eq:numerics-first-order]
    return cos_out, sin_out


def _check_domain(pos: np.ndarray, th: np.ndarray) -> None:
    """Refuse tables with an angle outside ``|m theta| <= MAX_ANGLE``."""
    if not pos.size or not th.size:
        return
    top = float(np.max(np.abs(pos))) * float(np.max(np.abs(th)))
    if top > MAX_ANGLE:
        raise ValueError(
            f"positions: method='accurate' is proved for angles |position * inv_freq| <= 2**31 "
            f"rad (exact Cody-Waite reduction); the largest angle here is {top:.4g} rad "
            f"(max |position| = {float(np.max(np.abs(pos))):.6g})"
        )


def accurate_cos_sin(pos, inv_freq=None, *, dim=None, base=None):
    """cos and sin of ``pos[m] * theta_i`` for the exact ``theta_i``, faithfully rounded.

    Parameters
    ----------
    pos : numpy.ndarray, shape (seq,), float64
        Validated positions.
    inv_freq : numpy.ndarray, shape (d/2,), float64, optional
        Validated frequencies taken as exact binary values.
    dim, base : int, float, optional
        Used when ``inv_freq`` is None: ``theta_i = base^(-2i/dim)`` exactly.

    Returns
    -------
    cos, sin : numpy.ndarray, each shape (seq, d/2), float64

    Raises
    ------
    ValueError
        If some ``|pos[m] * theta_i|`` exceeds :data:`MAX_ANGLE` (``2^31`` rad), outside the
        proved domain.
    """
    if inv_freq is None:
        th, tm, tl = exact_inv_freq3(int(dim), float(base))
    else:
        th = np.asarray(inv_freq, dtype=np.float64)
        tm = tl = np.zeros_like(th)
    _check_domain(pos, th)
    has_mid = bool(np.any(tm) or np.any(tl))
    rows, cols = pos.shape[0], th.shape[0]
    cos = np.empty((rows, cols))
    sin = np.empty((rows, cols))
    two_pi = _two_pi5()
    th_r, tm_r, tl_r = th[None, :], tm[None, :], tl[None, :]
    ths, tms = _split(th_r), _split(tm_r)
    step = max(1, _CHUNK // max(cols, 1))
    for a in range(0, rows, step):
        m = pos[a : a + step, None]
        cos[a : a + step], sin[a : a + step] = _block(
            m, _split(m), th_r, ths, tm_r, tms, tl_r, has_mid, two_pi
        )
    return cos, sin


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
        b = _rational(base)
        half = dim // 2
        divs = [Fraction(1)] * half if divisors is None else [_rational(v) for v in divisors]
        cols = tuple(
            _Power(((b, Fraction(-2 * i, dim)),) if i else (), 1 / divs[i]) for i in range(half)
        )
        return cls(cols, description or f"b**(-2i/d), d={dim}, b={float(b)!r}")

    @classmethod
    def binary(cls, values, *, description: str = "") -> ExactFrequencies:
        """Each value is taken as the exact binary number it is (zero: a pass-through pair)."""
        vals = np.asarray(values, dtype=np.float64).ravel()
        cols = tuple(_Zero() if v == 0.0 else _Power((), Fraction(float(v))) for v in vals)
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
