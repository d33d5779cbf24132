"""Correctly rounded cos/sin of exact RoPE angles, in NumPy only (private, floor 1).

``correct_cos_sin(positions, frequencies, attention_scaling)`` returns, for every entry, the
float64 nearest to ``s cos(m theta_i)`` and ``s sin(m theta_i)`` of the *exact* angle, with
``theta_i`` an :class:`refimpl._exact.ExactFrequencies` column (a real ``b^(-2i/d)``, a float64
value taken exactly, a scaling method's exact frequency) and ``s`` the attention scaling.
Only ``+ - *``, ``rint``, exact casts, table look-ups and comparisons touch the data, so the
result is the same bits on every IEEE-754 machine (book section "Correctly rounded tables",
equations ``eq:numerics-cr-*``):

1. **Reduction.** ``phi_i = theta_i N / (2 pi)`` (``N = 4096`` table points per turn) is
   held as three doubles. ``y = m phi`` is formed exactly (Dekker's TwoProduct on the first two,
   the third rounded), ``n = rint(m phi_1)``, and ``F = y - n`` becomes a double-double.
2. **Table and polynomials.** ``j = n mod N`` picks ``cos, sin(2 pi j/N)`` (double-doubles),
   ``r = F 2 pi / N`` (``|r| <= pi/N``), and short polynomials give ``sin r`` and
   ``1 - cos r`` in double-double.
3. **Recombination** by the angle-addition formula, ending in ``H + L`` with a proved bound
   ``E`` on ``|v - (H + L)|``; the attention scaling is multiplied in (double-double).
4. **Ziv's rounding test.** ``H + (L - E) == H + (L + E)``: then both ends of the interval
   that holds ``v`` round to the same double, which is ``rn(v)``.
5. **Anchors** (runs of integer positions): ``m = h + l`` with ``h`` a multiple of
   ``ANCHOR_STEP``; ``cos, sin(h theta)`` and ``cos, sin(l theta)`` come unrounded from the
   steps above, and one double-double complex product gives each entry, with its own bound.
6. **Fallback.** The rare entries that fail the test (about one in 10^7) are recomputed by
   the direct steps, then, if still undecided, with Python integers at increasing precision
   until the enclosure rounds to one double (it always does: ``cos x`` and ``sin x`` of a
   non-zero algebraic ``x`` are transcendental, never a midpoint between doubles).

Domain: ``|m| theta_i <= MAX_ANGLE = 2^31`` rad and ``|attention_scaling|`` in
``[2^-400, 2^400]`` or 0; entries whose reduced product is below ``2^-700`` go to the exact
fallback (their intermediates would underflow).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from fractions import Fraction

import numpy as np

from ._exact import (
    _FIXED_BITS,
    MAX_ANGLE,
    ExactFrequencies,
    _pi_fixed,
    _pi_fraction,
    _split3,
    _Turns,
    _Zero,
)

N_TURN = 4096  # table points per turn: |r| <= pi / 4096 = 2^-10.35 keeps the polynomials short
ANCHOR_STEP = 128  # m = h + l, h a multiple of it: anchors and l-rows are ~6 % of a 4096 table
_SPLITTER = 134217729.0  # 2^27 + 1, Veltkamp's constant
_RINT = 6755399441055744.0  # 1.5 * 2^52: (x + M) - M = rint(x) for |x| <= 2^51
# Below this |m phi_1| the TwoProducts' error terms could be subnormal (inexact): the entry
# goes to the exact fallback. Above it every intermediate stays above 2^-1000.
TINY_PRODUCT = 2.0**-700
# |attention_scaling| outside [2^-400, 2^400] (other than 0) would let the scaled
# double-double's error term underflow or its splitting overflow.
SCALE_RANGE = (2.0**-400, 2.0**400)
_BLOCK = 4096  # entries per vectorised step: temporaries of 32 KiB stay in cache
_MAX_FALLBACK_BITS = 1 << 16  # the Ziv loop always ends far below (transcendence)

# ------------------------------------------------------------------ the error-bound constants
# Each is proved in the book (section "Correctly rounded tables", cell `cr-bounds`, which
# recomputes it from the operation order and asserts it covers the sum of the terms).
# Reduction: |F - (F_h + F_l)| <= DELTA_F * min(|m phi_1|, 1)   [eq:numerics-cr-reduction]
DELTA_F = 2.0**-103
# Direct evaluator, per entry: E = E_ABS[j] + E_REL |r_h| + E_RED min(|m phi_1|, 1) + E_FLOOR
E_ABS = 2.0**-92  # table, 1 - cos r and recombination roundings (0 where T[j] is exactly 0)
E_REL = 2.0**-72  # sin r's cubic term and the reduction's relative part, times |r_h|
E_RED = 2.0**-112  # (2 pi / N) DELTA_F, rounded up: the reduction error carried into r
E_FLOOR = 2.0**-1000  # covers underflow in terms below 2^-1000
# Anchored entries: E = (max E_anchor + max E_l)(1 + 2^-60) + E_ADD
E_ADD = 2.0**-98  # rounding of the double-double complex product and the test's slack
SCALE_SLACK = 1.0 + 2.0**-40  # multiplies E when attention_scaling is folded in


# ------------------------------------------------------------------- error-free transformations
def _split(a):
    """Veltkamp: ``a = hi + lo``, each with at most 26 significant bits."""
    c = _SPLITTER * a
    hi = c - (c - a)
    return hi, a - hi


def _two_sum(a, b):
    """Knuth: ``s = fl(a + b)`` and ``e`` with ``s + e == a + b`` exactly."""
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def _two_prod(a, ah, al, b, bh, bl):
    """Dekker: ``p = fl(a b)`` and ``e`` with ``p + e == a b`` exactly (pre-split factors)."""
    p = a * b
    return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl


# -------------------------------------------------------------------------- the turn table
@functools.lru_cache(maxsize=1)
def turn_table() -> dict:
    """``cos, sin(2 pi j / N)`` for ``j < N`` as double-doubles (hi, lo, and hi's halves),
    from Python-integer Taylor series at 200 bits; the four axis points are exactly 0 or
    +-1. Also ``E_ABS`` per point for cos and sin (0 where that table value is exactly 0)."""
    w = 200
    pi = _pi_fixed(w + 16) >> 16
    eighth = N_TURN // 8
    cs = []
    for j in range(eighth + 1):
        x = (pi * j) // (N_TURN // 2)  # 2 pi j / N at 2^-w
        c, s, term, k = 0, 0, 1 << w, 0
        while term:
            if k % 2 == 0:
                c += term if k % 4 == 0 else -term
            else:
                s += term if k % 4 == 1 else -term
            k += 1
            term = (term * x >> w) // k
        cs.append((Fraction(c, 1 << w), Fraction(s, 1 << w)))
    quarter = []  # j in [0, N/4]: cos(2 pi j/N) = sin(2 pi (N/4 - j)/N)
    for j in range(N_TURN // 4 + 1):
        quarter.append(cs[j] if j <= eighth else (cs[N_TURN // 4 - j][1], cs[N_TURN // 4 - j][0]))
    quarter[0] = (Fraction(1), Fraction(0))
    quarter[-1] = (Fraction(0), Fraction(1))
    values = []
    for j in range(N_TURN):
        q, k = divmod(j, N_TURN // 4)
        c, s = quarter[k]
        for _ in range(q):  # rotate by a quarter turn: (c, s) -> (-s, c)
            c, s = -s, c
        values.append((c, s))
    out = {}
    for name, idx in (("c", 0), ("s", 1)):
        parts = np.array([_split3(v[idx])[:2] for v in values])
        hi, lo = np.ascontiguousarray(parts[:, 0]), np.ascontiguousarray(parts[:, 1])
        hh, hl = _split(hi)
        out[name] = (hi, lo, hh, hl)
        out["e" + name] = np.where(hi == 0.0, 0.0, E_ABS)
    two_pi_n = Fraction(_pi_fixed(w), 1 << w) * 2 / N_TURN
    c1, c2, _ = _split3(two_pi_n)
    out["r"] = (c1, *_split(c1), c2)
    return out


# ------------------------------------------------------------------------- prepared columns
@dataclasses.dataclass
class _Prepared:
    """The columns of one :class:`ExactFrequencies` ready for the evaluators."""

    freqs: ExactFrequencies
    phi: tuple  # (phi1, phi1 hi, phi1 lo, phi2, phi2 hi, phi2 lo, phi3), each (1, cols)
    theta_hi: np.ndarray  # nearest float64 of each theta (domain check)
    zero: np.ndarray  # (cols,) bool: theta = 0
    turns: np.ndarray  # (cols,) int: n of a 2 pi / n column, else 0
    lo_rows: dict = dataclasses.field(default_factory=dict)  # ANCHOR_STEP -> l-table


@functools.lru_cache(maxsize=64)
def prepare(freqs: ExactFrequencies) -> _Prepared:
    """``phi_i = theta_i N / (2 pi)`` as triple-doubles from 320-bit rationals
    (``|phi - (phi1 + phi2 + phi3)| <= 2^-158 phi``)  [eq:numerics-cr-phi]."""
    bits = _FIXED_BITS
    two_pi = 2 * _pi_fraction(bits + 16)
    rows = []
    for col in freqs.columns:
        if isinstance(col, _Turns):
            rows.append(_split3(Fraction(N_TURN, col.n)))
        elif isinstance(col, _Zero):
            rows.append((0.0, 0.0, 0.0))
        else:
            rows.append(_split3(col.approx(bits) * N_TURN / two_pi))
    arr = np.array(rows, dtype=np.float64).reshape(-1, 3)
    p1, p2, p3 = (arr[None, :, j].copy() for j in range(3))
    phi = (p1, *_split(p1), p2, *_split(p2), p3)
    theta = freqs.float64()
    zero = np.array([isinstance(c, _Zero) for c in freqs.columns])
    turns = np.array([c.n if isinstance(c, _Turns) else 0 for c in freqs.columns], dtype=np.int64)
    return _Prepared(freqs, phi, theta, zero, turns)


def check_domain(pos: np.ndarray, prep: _Prepared, method: str = "correct") -> None:
    """Refuse angles beyond ``MAX_ANGLE``: ``max |m| * max theta > 2^31`` rad."""
    if not pos.size or not prep.theta_hi.size:
        return
    top = float(np.max(np.abs(pos))) * float(np.max(prep.theta_hi))
    if top > MAX_ANGLE:
        raise ValueError(
            f"positions: method={method!r} is proved for angles |position * inv_freq| <= 2**31 "
            f"rad; "
            f"the largest angle here is {top:.4g} rad "
            f"(max |position| = {float(np.max(np.abs(pos))):.6g})"
        )


def check_scale(scale: float, method: str = "correct") -> float:
    """``attention_scaling`` must be 0 or of magnitude in :data:`SCALE_RANGE`."""
    if scale != 0.0 and not SCALE_RANGE[0] <= abs(scale) <= SCALE_RANGE[1]:
        raise ValueError(
            f"attention_scaling: method={method!r} rounds s * cos and s * sin for |s| in "
            f"[2**-400, 2**400] (or s = 0), got {scale!r}"
        )
    return scale


# ------------------------------------------------------------------------- direct evaluator
class _Scratch:
    """Named float64 buffers of one shape, allocated once and reused block after block
    (fresh temporaries cost more than the arithmetic: their pages fault in every time)."""

    def __init__(self, shape):
        self.shape = shape
        self._bufs: dict = {}

    def __call__(self, name: str, dtype=np.float64) -> np.ndarray:
        buf = self._bufs.get(name)
        if buf is None:
            buf = self._bufs[name] = np.empty(self.shape, dtype=dtype)
        return buf


def _split_o(a, hi, lo):
    """Veltkamp into given buffers (``lo`` serves as scratch first)."""
    np.multiply(a, _SPLITTER, out=hi)
    np.subtract(hi, a, out=lo)
    np.subtract(hi, lo, out=hi)
    np.subtract(a, hi, out=lo)
    return hi, lo


def _two_sum_o(a, b, s, e, t, negate=False):
    """Knuth's TwoSum of ``a + b`` (``a - b`` when ``negate``) into ``s``, ``e``; ``t`` is
    scratch. Same operations as :func:`_two_sum` on ``(a, -b)``."""
    (np.subtract if negate else np.add)(a, b, out=s)
    np.subtract(s, a, out=t)  # bb
    if negate:  # (-b) - bb = -(b + bb), exactly
        np.add(b, t, out=e)
        np.negative(e, out=e)
    else:
        np.subtract(b, t, out=e)
    np.subtract(s, t, out=t)
    np.subtract(a, t, out=t)
    np.add(t, e, out=e)
    return s, e


def _two_prod_o(a, ah, al, b, bh, bl, p, e, t):
    """Dekker's TwoProduct into ``p``, ``e`` (``t`` scratch); same operation order as
    :func:`_two_prod`."""
    np.multiply(a, b, out=p)
    np.multiply(ah, bh, out=e)
    np.subtract(e, p, out=e)
    np.multiply(ah, bl, out=t)
    np.add(e, t, out=e)
    np.multiply(al, bh, out=t)
    np.add(e, t, out=e)
    np.multiply(al, bl, out=t)
    np.add(e, t, out=e)
    return p, e


def _horner_o(z, coefs, out):
    """``c0 + z (c1 + z (c2 + ...))`` into ``out`` (coefficients given outermost first)."""
    np.multiply(z, coefs[-1], out=out)
    for c in coefs[-2:0:-1]:
        np.add(out, c, out=out)
        np.multiply(out, z, out=out)
    np.add(out, coefs[0], out=out)
    return out


def direct(m, prep: _Prepared, cols=None, ws: _Scratch | None = None):
    """Unrounded ``cos, sin(m theta)`` as ``(Hc, Lc, Ec, Hs, Ls, Es, tiny)`` for ``m >= 0`` of
    shape (rows, 1) (or (k,) with ``cols`` (k,) column indices): ``|v - (H + L)| <= E``;
    ``tiny`` marks entries with ``|m phi_1| < TINY_PRODUCT`` (their values are not valid).
    The arrays are buffers of ``ws``, overwritten by the next call with it."""
    f1, f1h, f1l, f2, f2h, f2l, f3 = (
        prep.phi if cols is None else tuple(a[0, cols] for a in prep.phi)
    )
    if ws is None:
        ws = _Scratch(np.broadcast_shapes(np.shape(m), np.shape(f1)))
    t = turn_table()
    mh, ml = _split(m)
    tmp, tmp2 = ws("tmp"), ws("tmp2")
    # m phi1 = p1 + e1 and m phi2 = p2 + e2 exactly   [eq:numerics-cr-reduction]
    p1, e1 = _two_prod_o(m, mh, ml, f1, f1h, f1l, ws("p1"), ws("e1"), tmp)
    p2, e2 = _two_prod_o(m, mh, ml, f2, f2h, f2l, ws("p2"), ws("e2"), tmp)
    p3 = np.multiply(m, f3, out=ws("p3"))
    n = np.add(p1, _RINT, out=ws("n"))
    np.subtract(n, _RINT, out=n)  # rint(p1)
    f = np.subtract(p1, n, out=ws("f"))  # exact
    s1, t1 = _two_sum_o(f, p2, ws("s1"), ws("t1"), tmp)
    s2, t2 = _two_sum_o(s1, e1, ws("s2"), ws("t2"), tmp)
    w = np.add(t1, t2, out=ws("w"))
    np.add(w, e2, out=w)
    np.add(w, p3, out=w)
    fh, fl = _two_sum_o(s2, w, ws("fh"), ws("fl"), tmp)  # F = y - n
    ap1 = np.abs(p1, out=ws("ap1"))
    tiny = np.less(ap1, TINY_PRODUCT, out=ws("tiny", bool))
    red = np.minimum(ap1, 1.0, out=ap1)
    c1, c1h, c1l, c2 = t["r"]
    fhh, fhl = _split_o(fh, ws("fhh"), ws("fhl"))
    rh, rl = _two_prod_o(fh, fhh, fhl, c1, c1h, c1l, ws("rh"), ws("rl"), tmp)
    np.multiply(fh, c2, out=tmp)
    np.multiply(fl, c1, out=tmp2)
    np.add(tmp, tmp2, out=tmp)
    np.add(rl, tmp, out=rl)  # r = rh + rl = F 2 pi / N   [eq:numerics-cr-r]
    j = ws("j", np.int64)
    np.copyto(j, n, casting="unsafe")
    np.bitwise_and(j, N_TURN - 1, out=j)
    rhh, rhl = _split_o(rh, ws("rhh"), ws("rhl"))
    z = np.multiply(rh, rh, out=ws("z"))
    zl = np.multiply(rhh, rhh, out=ws("zl"))  # z + zl = rh^2 exactly
    np.subtract(zl, z, out=zl)
    np.multiply(rhh, rhl, out=tmp)
    np.multiply(tmp, 2.0, out=tmp)
    np.add(zl, tmp, out=zl)
    np.multiply(rhl, rhl, out=tmp)
    np.add(zl, tmp, out=zl)
    uh = np.multiply(z, 0.5, out=ws("uh"))  # exact
    uhh, uhl = _split_o(z, ws("uhh"), ws("uhl"))
    np.multiply(uhh, 0.5, out=uhh)
    np.multiply(uhl, 0.5, out=uhl)
    # 1 - cos r = uh + ul   [eq:numerics-cr-poly]
    ul = _horner_o(z, (_C4, _C6, _C8), ws("ul"))
    np.multiply(z, z, out=tmp)
    np.multiply(ul, tmp, out=ul)
    np.multiply(zl, 0.5, out=tmp)
    np.multiply(rh, rl, out=tmp2)
    np.add(tmp, tmp2, out=tmp)
    np.add(tmp, ul, out=ul)
    # sin r = rh + s_lo   [eq:numerics-cr-poly]
    s_lo = _horner_o(z, (_S3, _S5, _S7), ws("s_lo"))
    np.multiply(rh, z, out=tmp)
    np.multiply(tmp, s_lo, out=s_lo)
    np.multiply(rl, uh, out=tmp)
    np.subtract(rl, tmp, out=tmp)
    np.add(tmp, s_lo, out=s_lo)
    ch, cl, chh, chl = (np.take(a, j, out=ws("T" + k)) for a, k in zip(t["c"], "abcd", strict=True))
    sh, sl, shh, shl = (np.take(a, j, out=ws("T" + k)) for a, k in zip(t["s"], "efgh", strict=True))
    # cos x = Tc - Ts sin r - Tc (1 - cos r)   [eq:numerics-cr-recombine]
    hc, lc = _recombine(ws, "c", ch, cl, chh, chl, sh, sl, shh, shl, rh, rhh, rhl, uh, uhh,
                        uhl, ul, s_lo, minus=True)  # fmt: skip
    # sin x = Ts + Tc sin r - Ts (1 - cos r)   [eq:numerics-cr-recombine]
    hs, ls = _recombine(ws, "s", sh, sl, shh, shl, ch, cl, chh, chl, rh, rhh, rhl, uh, uhh,
                        uhl, ul, s_lo, minus=False)  # fmt: skip
    common = np.abs(rh, out=tmp)  # [eq:numerics-cr-bound]
    np.multiply(common, E_REL, out=common)
    np.multiply(red, E_RED, out=tmp2)
    np.add(common, tmp2, out=common)
    np.add(common, E_FLOOR, out=common)
    ec = np.take(t["ec"], j, out=ws("ec"))
    np.add(ec, common, out=ec)
    es = np.take(t["es"], j, out=ws("es"))
    np.add(es, common, out=es)
    return hc, lc, ec, hs, ls, es, tiny


def _recombine(ws, key, ah, al, ahh, ahl, bh, bl, bhh, bhl, rh, rhh, rhl, uh, uhh, uhl, ul,
               s_lo, minus):  # fmt: skip
    """``A -+ B sin r - A (1 - cos r)`` in double-double: ``A`` the entry's own table value
    (cos for cos x, sin for sin x), ``B`` the other, ``minus`` for cos x."""
    tmp, tmp2 = ws("tmp"), ws("tmp2")
    p, pe = _two_prod_o(bh, bhh, bhl, rh, rhh, rhl, ws(key + "p"), ws(key + "pe"), tmp)
    q, qe = _two_prod_o(ah, ahh, ahl, uh, uhh, uhl, ws(key + "q"), ws(key + "qe"), tmp)
    a, b = _two_sum_o(ah, p, ws(key + "a"), ws(key + "b"), tmp, negate=minus)
    c, d = _two_sum_o(a, q, ws(key + "c"), ws(key + "d"), tmp, negate=True)
    low = np.add(b, d, out=ws(key + "low"))
    (np.add if minus else np.subtract)(pe, qe, out=tmp)
    (np.subtract if minus else np.add)(low, tmp, out=low)  # (b + d) -+ (pe +- qe)
    np.multiply(bh, s_lo, out=tmp)
    (np.subtract if minus else np.add)(al, tmp, out=tmp)  # al -+ bh s_lo
    np.multiply(bl, rh, out=tmp2)
    if not minus:
        np.negative(tmp2, out=tmp2)
    np.multiply(ah, ul, out=d)
    np.add(tmp2, d, out=tmp2)  # bl rh + ah ul   (sin: -bl rh + ah ul)
    np.multiply(al, uh, out=d)
    np.add(tmp2, d, out=tmp2)
    np.subtract(tmp, tmp2, out=tmp)
    np.add(low, tmp, out=low)
    return _two_sum_o(c, low, ws(key + "h"), ws(key + "l"), tmp)


# coefficients of sin r = r + S3 r^3 + S5 r^5 + S7 r^7 and 1 - cos r = r^2/2 + C4 r^4 + ...
_S3, _S5, _S7 = -1.0 / 6.0, 1.0 / 120.0, -1.0 / 5040.0
_C4, _C6, _C8 = -1.0 / 24.0, 1.0 / 720.0, -1.0 / 40320.0


def ziv(h, lo, e):
    """``(value, ok)``: ``ok`` where ``h + (lo - e)`` and ``h + (lo + e)`` round alike, and
    then ``value`` is the float64 nearest every real within ``e`` of ``h + lo``."""
    a = h + (lo - e)
    return a, a == h + (lo + e)


# ---------------------------------------------------------------------------- the exact path
def _cos_sin_fixed(x: Fraction, w: int) -> tuple[Fraction, Fraction, Fraction]:
    """``cos x``, ``sin x`` for a rational ``x`` and a bound on their error (Python integers at
    ``w`` bits, after a reduction by pi/2 with pi known to ``w`` bits beyond ``|x|``)."""
    extra = max(int(abs(x)).bit_length(), 1) + 8
    one = 1 << w
    half_pi = Fraction(_pi_fixed(w + extra), 1 << (w + extra + 1))
    k = math.floor(x / half_pi + Fraction(1, 2))
    red = x - k * half_pi  # |red| <= pi/4 + |k| 2^-(w + extra)
    a = (abs(red.numerator) << w) // red.denominator
    c, s, term, i = 0, 0, one, 0
    while term:  # Taylor series of cos a and sin a, one truncation per term
        if i % 2 == 0:
            c += term if i % 4 == 0 else -term
        else:
            s += term if i % 4 == 1 else -term
        i += 1
        term = (term * a >> w) // i
    if red < 0:
        s = -s
    err = Fraction(2 * i + 8, one)
    cf, sf = Fraction(c, one), Fraction(s, one)
    for _ in range(k % 4):  # x = red + k pi/2
        cf, sf = -sf, cf
    return cf, sf, err


def _special_turn(u: Fraction):
    """``(cos, sin)`` of ``2 pi u`` when they are rational (Niven: 12 u whole), else None."""
    k = u * 12
    if k.denominator != 1:
        return None
    c = {0: 1, 2: Fraction(1, 2), 3: 0, 4: Fraction(-1, 2), 6: -1, 8: Fraction(-1, 2), 9: 0}
    c[10] = Fraction(1, 2)
    s = {0: 0, 3: 1, 6: 0, 9: -1, 1: Fraction(1, 2), 5: Fraction(1, 2)}
    s.update({7: Fraction(-1, 2), 11: Fraction(-1, 2)})
    kk = int(k) % 12
    return c.get(kk), s.get(kk)


def exact_entry(m: float, col, scale: float) -> tuple[float, float]:
    """The float64 nearest ``scale cos(m theta)`` and ``scale sin(m theta)``: Python-integer
    enclosures at doubling precision until both ends round alike (Ziv's loop)."""
    mq, sq = Fraction(m), Fraction(scale)
    if isinstance(col, _Zero) or m == 0.0:
        return float(sq), 0.0
    known = [None, None]
    if isinstance(col, _Turns):
        u = (mq / col.n) % 1
        special = _special_turn(u)
        if special is not None:
            known = [None if v is None else float(sq * v) for v in special]
    bits = 128
    while bits <= _MAX_FALLBACK_BITS:
        if isinstance(col, _Turns):
            x = 2 * _pi_fraction(bits + 64) * ((mq / col.n) % 1)
            err_x = abs(x) * Fraction(1, 1 << (bits + 60))
        else:
            t = col.approx(bits + 16)
            x = mq * t
            err_x = abs(x) * Fraction(1, 1 << (bits + 14))
        w = bits + max(int(abs(x)).bit_length(), 1)
        c, s, err = _cos_sin_fixed(x, w)
        err += err_x
        for idx, v in enumerate((c, s)):
            if known[idx] is None:
                lo, hi = float(sq * (v - err)), float(sq * (v + err))
                if lo == hi:
                    known[idx] = lo
        if known[0] is not None and known[1] is not None:
            return known[0], known[1]
        bits *= 2
    raise ArithmeticError(  # unreachable: cos and sin of non-zero algebraic x are transcendental
        f"cos/sin of position {m!r} could not be rounded within {_MAX_FALLBACK_BITS} bits"
    )


# ------------------------------------------------------------------------------ the driver
class _Run:
    """One table being filled: results, the scale, and the entries still undecided."""

    def __init__(self, pos, prep: _Prepared, scale: float):
        self.pos, self.prep = pos, prep
        self.apos = np.abs(pos)
        rows, cols = pos.shape[0], prep.theta_hi.shape[0]
        self.cos = np.empty((rows, cols))
        self.sin = np.empty((rows, cols))
        self.mag = abs(scale) if scale != 0.0 else 1.0  # folded in before the test
        self.pending: list[tuple[np.ndarray, np.ndarray]] = []  # anchored, undecided
        self.undecided: list[tuple[np.ndarray, np.ndarray]] = []  # direct, undecided
        self.fallbacks = [0, 0]  # entries re-evaluated directly, then exactly

    def finish(self, ws, hc, lc, ec, hs, ls, es, out=(None, None)):
        """Fold the scale in and apply the rounding test (buffers of ``ws``, or the values
        straight into ``out``): the values, and ``ok`` where both entries are decided."""
        ok = ws("ok", bool)
        vc = _test(ws, "c", hc, lc, ec, self.mag, ok, out[0])
        vs = _test(ws, "s", hs, ls, es, self.mag, ws("ok2", bool), out[1])
        np.logical_and(ok, ws("ok2", bool), out=ok)
        return vc, vs, ok

    def direct_rows(self, r0, r1, cols, ws):
        """Rows ``r0 .. r1 - 1`` of the columns ``cols`` (an index array) by the direct path."""
        m = self.apos[r0:r1, None]
        *parts, tiny = direct(m, self.prep, cols, ws)
        vc, vs, ok = self.finish(ws, *parts, self.views(slice(r0, r1), cols, (r1 - r0, cols.size)))
        np.greater(ok, tiny, out=ok)  # ok and not tiny
        self.put(slice(r0, r1), cols, vc, vs)
        self.note(ok, r0, cols, self.undecided)

    def views(self, rows: slice, cols, shape):
        """Where a block's values go: views of the tables when it has every column."""
        if cols.size != self.cos.shape[1]:
            return None, None
        return self.cos[rows].reshape(shape), self.sin[rows].reshape(shape)

    def put(self, rows: slice, cols, vc, vs):
        """Write a block's values (nothing to do when they were written in place)."""
        if cols.size == self.cos.shape[1]:
            if np.shares_memory(vc, self.cos):
                return
            self.cos[rows] = vc
            self.sin[rows] = vs
        else:
            self.cos[rows, cols] = vc
            self.sin[rows, cols] = vs

    def note(self, ok, r0, cols, where=None):
        """Remember the undecided entries of a block starting at row ``r0`` (in ``where``,
        by default the anchored ones that the direct step redoes)."""
        if not ok.all():
            bad_r, bad_c = np.nonzero(~ok)
            (self.pending if where is None else where).append((bad_r + r0, cols[bad_c]))


def _test(ws, key, h, lo, e, mag, ok, out=None):
    """The scaled double-double ``mag (h + lo)`` and Ziv's test on it, into buffers."""
    if mag != 1.0:
        tmp = ws("tmp")
        sh, sl = _split(mag)
        hh, hl = _split_o(h, ws(key + "sh"), ws(key + "sl"))
        p, pe = _two_prod_o(h, hh, hl, mag, sh, sl, ws(key + "sp"), ws(key + "spe"), tmp)
        np.multiply(lo, mag, out=tmp)
        np.add(pe, tmp, out=pe)
        h, lo = _two_sum_o(p, pe, h, lo, tmp)  # [eq:numerics-cr-scale]
        e = np.multiply(e, mag * SCALE_SLACK, out=ws(key + "se"))
    lo_end = np.subtract(lo, e, out=ws(key + "z1"))
    hi_end = np.add(lo, e, out=ws(key + "z2"))
    lo_end = np.add(h, lo_end, out=lo_end if out is None else out)
    np.add(h, hi_end, out=hi_end)
    np.equal(lo_end, hi_end, out=ok)  # [eq:numerics-cr-ziv]
    return lo_end


def correct_cos_sin(positions, frequencies, attention_scaling: float = 1.0, stats=None):
    """Correctly rounded ``attention_scaling * cos(m theta_i)`` and ``... sin(m theta_i)``.

    Parameters
    ----------
    positions : numpy.ndarray, shape (seq,), float64
        Validated positions (finite, any sign, integer or not).
    frequencies : ExactFrequencies
        The exact :math:`\\theta_i`.
    attention_scaling : float
        Folded in before the rounding test (0 or magnitude in :data:`SCALE_RANGE`).
    stats : dict, optional
        Receives ``entries``, ``direct`` (entries the anchored step left undecided, redone
        by the direct step) and ``exact`` (entries decided by the integer fallback).

    Returns
    -------
    cos, sin : numpy.ndarray, each shape (seq, d/2), float64

    Raises
    ------
    ValueError
        An angle beyond ``MAX_ANGLE`` (naming ``positions``) or a scale outside its range.
    """
    pos = np.asarray(positions, dtype=np.float64)
    prep = prepare(frequencies)
    check_domain(pos, prep)
    scale = check_scale(float(attention_scaling))
    run = _Run(pos, prep, scale)
    regular = np.nonzero(~prep.zero & (prep.turns == 0))[0]
    anchored = _anchorable(run.apos) and regular.size
    if anchored:
        ok_cols = regular[prep.phi[0][0, regular] >= TINY_PRODUCT]
        _anchored(run, ok_cols)
        direct_cols = np.union1d(np.nonzero(prep.turns > 0)[0], np.setdiff1d(regular, ok_cols))
    else:
        direct_cols = np.nonzero(~prep.zero)[0]
    if direct_cols.size:
        step = max(1, _BLOCK // direct_cols.size)
        scratch = {}
        for r0 in range(0, pos.shape[0], step):
            r1 = min(pos.shape[0], r0 + step)
            ws = scratch.setdefault(r1 - r0, _Scratch((r1 - r0, direct_cols.size)))
            run.direct_rows(r0, r1, direct_cols, ws)
    _turn_specials(run)
    _resolve(run)
    zero_rows = run.apos == 0.0
    run.cos[zero_rows] = 1.0 * run.mag
    run.sin[zero_rows] = 0.0
    run.cos[:, prep.zero] = 1.0 * run.mag
    run.sin[:, prep.zero] = 0.0
    if scale < 0.0 or scale == 0.0:
        factor = -1.0 if scale < 0.0 else 0.0
        run.cos *= factor
        run.sin *= factor
    run.sin[np.signbit(pos)] *= -1.0  # sin(-x) = -sin(x), exactly   [eq:numerics-cr-sign]
    if stats is not None:
        stats["entries"] = stats.get("entries", 0) + run.cos.size
        stats["direct"] = stats.get("direct", 0) + run.fallbacks[0]
        stats["exact"] = stats.get("exact", 0) + run.fallbacks[1]
    return run.cos, run.sin


def _anchorable(apos) -> bool:
    """Integer positions, enough of them for anchors to pay."""
    return apos.shape[0] >= 2 * ANCHOR_STEP and bool(np.all(apos == np.floor(apos)))


def _turn_specials(run: _Run) -> None:
    """Undecided entries of the columns of whole turns, where ``cos, sin(2 pi m / n)`` may be
    rational (``12 (m mod n) / n`` whole; Niven's theorem: 0, +-1/2, +-1) and no error bound
    can decide them: the exact step gives them their exact values."""
    prep = run.prep
    if not np.any(prep.turns):
        return
    kept = []
    for rows, cols in run.undecided:
        n = prep.turns[cols]
        for k in np.nonzero(n > 0)[0]:
            c, s = exact_entry(float(run.apos[rows[k]]), _Turns(int(n[k])), run.mag)
            run.cos[rows[k], cols[k]], run.sin[rows[k], cols[k]] = c, s
        kept.append((rows[n == 0], cols[n == 0]))
    run.undecided = kept


def _resolve(run: _Run) -> None:
    """Undecided entries: the anchored ones by the direct step, then every one still
    undecided by the exact integer loop."""
    if run.pending:
        rows = np.concatenate([r for r, _ in run.pending])
        cols = np.concatenate([c for _, c in run.pending])
        run.pending = []
        run.fallbacks[0] += rows.size
        ws = _Scratch(rows.shape)
        *parts, tiny = direct(run.apos[rows], run.prep, cols, ws)
        vc, vs, ok = run.finish(ws, *parts)
        ok &= ~tiny
        run.cos[rows, cols] = vc
        run.sin[rows, cols] = vs
        run.undecided.append((rows[~ok], cols[~ok]))
    for rows, cols in run.undecided:
        for r, c in zip(rows, cols, strict=True):
            if run.apos[r] == 0.0:
                continue  # set exactly by the caller
            run.fallbacks[1] += 1
            col = run.prep.freqs.columns[c]
            run.cos[r, c], run.sin[r, c] = exact_entry(float(run.apos[r]), col, run.mag)
    run.undecided = []


# ---------------------------------------------------------------------- anchored (integers)
def _lo_rows(prep: _Prepared):
    """``cos, sin(l theta)`` for ``l < ANCHOR_STEP`` unrounded, pre-split, and the column
    maxima of their bounds (cached with the prepared columns)."""
    k = ANCHOR_STEP
    if k not in prep.lo_rows:
        prep.lo_rows[k] = _unrounded(np.arange(k, dtype=np.float64), prep)
    return prep.lo_rows[k]


def _unrounded(m, prep: _Prepared):
    """Direct ``cos, sin(m theta)`` kept as double-doubles: (c_hi, c_hi halves, c_lo, s_hi,
    halves, s_lo) and the column maxima of ``E_c + E_s`` (exact at ``m = 0``)."""
    hc, lc, ec, hs, ls, es, _ = direct(m[:, None], prep)
    zero = m == 0.0
    hc[zero], lc[zero], hs[zero], ls[zero] = 1.0, 0.0, 0.0, 0.0
    ec[zero] = es[zero] = 0.0
    parts = (hc, *_split(hc), lc, hs, *_split(hs), ls)
    return parts, np.max(ec + es, axis=0)


def _anchored(run: _Run, cols: np.ndarray) -> None:
    """Integer positions by anchors: ``cos(m theta) = cos(h theta) cos(l theta) - ...``.

    A run of consecutive positions broadcasts groups of anchors against the l-rows (no
    gathers); the rows before the first and after the last whole anchor block, and any other
    set of integer positions, gather each row's anchor and l-row."""
    if not cols.size:
        return
    prep, apos, k = run.prep, run.apos, ANCHOR_STEP
    lo_parts, lo_bound = _lo_rows(prep)
    h_all = np.floor(apos / k) * k
    anchors, inverse = np.unique(h_all, return_inverse=True)
    a_parts, a_bound = _unrounded(anchors, prep)
    bound = (a_bound + lo_bound) * (1.0 + 2.0**-60) + E_ADD  # [eq:numerics-cr-anchor-bound]
    bound = np.ascontiguousarray(bound[cols])
    lo_parts = tuple(np.ascontiguousarray(p[:, cols]) for p in lo_parts)
    a_parts = tuple(np.ascontiguousarray(p[:, cols]) for p in a_parts)
    n = apos.shape[0]
    head, tail = 0, 0
    p0 = apos[0]
    if n > 1 and apos[-1] - p0 == n - 1 and np.all(np.diff(apos) == 1.0):
        first = int(-(-p0 // k)) * k  # first whole anchor block
        stop = int((p0 + n) // k) * k
        if stop > first:
            head, tail = int(first - p0), int(stop - p0)
            _anchored_run(run, cols, a_parts, lo_parts, bound, anchors, first, head, tail)
    li = (apos - h_all).astype(np.intp)
    for lo_r, hi_r in ((0, head), (tail, n)) if tail else ((0, n),):
        _anchored_gather(run, cols, a_parts, lo_parts, bound, inverse, li, lo_r, hi_r)


def _anchored_run(run, cols, a_parts, lo_parts, bound, anchors, first, r0, r1):
    """Rows ``r0 .. r1 - 1`` (whole anchor blocks from the anchor ``first``), broadcast."""
    k = ANCHOR_STEP
    c = cols.size
    group = max(1, _BLOCK // (k * c))
    a0 = int(np.searchsorted(anchors, first))
    blocks = (r1 - r0) // k
    lo = tuple(p[None, :, :] for p in lo_parts)
    scratch = {}
    for g in range(0, blocks, group):
        size = min(group, blocks - g)
        ws = scratch.setdefault(size, _Scratch((size, k, c)))
        a = tuple(p[a0 + g : a0 + g + size, None, :] for p in a_parts)
        hc, lc, hs, ls = _complex_product_o(ws, a, lo)
        rows = slice(r0 + g * k, r0 + (g + size) * k)
        views = run.views(rows, cols, (size, k, c))
        vc, vs, ok = run.finish(ws, hc, lc, bound, hs, ls, bound, views)
        run.put(rows, cols, vc.reshape(-1, c), vs.reshape(-1, c))
        run.note(ok.reshape(-1, c), rows.start, cols)


def _anchored_gather(run, cols, a_parts, lo_parts, bound, inverse, li, r0, r1):
    """Rows ``r0 .. r1 - 1``, each row's anchor and l-row gathered."""
    c = cols.size
    step = max(1, _BLOCK // c)
    scratch = {}
    for b0 in range(r0, r1, step):
        b1 = min(r1, b0 + step)
        ws = scratch.setdefault(b1 - b0, _Scratch((b1 - b0, c)))
        a = tuple(
            np.take(p, inverse[b0:b1], axis=0, out=ws(f"ga{i}")) for i, p in enumerate(a_parts)
        )
        b = tuple(np.take(p, li[b0:b1], axis=0, out=ws(f"gb{i}")) for i, p in enumerate(lo_parts))
        hc, lc, hs, ls = _complex_product_o(ws, a, b)
        views = run.views(slice(b0, b1), cols, (b1 - b0, c))
        vc, vs, ok = run.finish(ws, hc, lc, bound, hs, ls, bound, views)
        run.put(slice(b0, b1), cols, vc, vs)
        run.note(ok, b0, cols)


def _complex_product_o(ws, a, b):
    """``(Ac + i As)(Lc + i Ls)`` in double-double from pre-split parts, into buffers
    [eq:numerics-cr-anchor]:

    ``cos = Ac_h Lc_h - As_h Ls_h + (Ac_h Lc_l + Ac_l Lc_h) - (As_h Ls_l + As_l Ls_h)``,
    ``sin = As_h Lc_h + Ac_h Ls_h + (As_h Lc_l + As_l Lc_h) + (Ac_h Ls_l + Ac_l Ls_h)``."""
    ach, achh, achl, acl, ash, ashh, ashl, asl = a
    lch, lchh, lchl, lcl, lsh, lshh, lshl, lsl = b
    tmp, tmp2 = ws("tmp"), ws("tmp2")
    out = []
    for key, (x1, x1h, x1l, x1lo), (x2, x2h, x2l, x2lo), sign in (
        ("c", (ach, achh, achl, acl), (ash, ashh, ashl, asl), True),
        ("s", (ash, ashh, ashl, asl), (ach, achh, achl, acl), False),
    ):
        y2, y2h, y2l, y2lo = (lsh, lshh, lshl, lsl)
        p1, e1 = _two_prod_o(x1, x1h, x1l, lch, lchh, lchl, ws(key + "p1"), ws(key + "e1"), tmp)
        p2, e2 = _two_prod_o(x2, x2h, x2l, y2, y2h, y2l, ws(key + "p2"), ws(key + "e2"), tmp)
        s, t = _two_sum_o(p1, p2, ws(key + "s"), ws(key + "t"), tmp, negate=sign)
        (np.subtract if sign else np.add)(e1, e2, out=e1)
        np.add(t, e1, out=t)  # t + (e1 -+ e2)
        np.multiply(x1, lcl, out=tmp)
        np.multiply(x1lo, lch, out=tmp2)
        np.add(tmp, tmp2, out=tmp)
        np.multiply(x2, y2lo, out=tmp2)
        np.multiply(x2lo, y2, out=e2)
        np.add(tmp2, e2, out=tmp2)
        (np.subtract if sign else np.add)(tmp, tmp2, out=tmp)
        np.add(t, tmp, out=t)
        out.extend((s, t))  # not renormalised: |t| <= 2^-49, the test needs no more
    return tuple(out)
