"""Rotary position embedding (RoPE) in every form: frequencies, angles, cos/sin tables,
element-wise application in both feature pairings, the dense rotation matrix, the complex
form, and conversion of checkpoints between pairings.

Conventions (see the book's notation page):

* ``inv_freq[i] = base ** (-2 i / d)`` for ``i = 0 .. d/2 - 1`` (0-based, so ``theta_0 = 1``).
* Pair ``(x1, x2)`` at position ``m`` becomes ``(x1 cos m theta - x2 sin m theta,
  x1 sin m theta + x2 cos m theta)``: multiplication by ``exp(+i m theta)``.
* ``pairing="half"`` pairs feature ``i`` with ``i + d/2`` (transformers, GPT-NeoX);
  ``pairing="interleaved"`` pairs ``2i`` with ``2i + 1`` (RoFormer, Meta Llama, GPT-J).
"""

from __future__ import annotations

import contextlib
import itertools

import numpy as np

from ._checks import (
    as_float_array,
    as_inv_freq,
    as_positions,
    check_base,
    check_choice,
    check_dim,
    check_out,
    check_pairing,
    check_positive_int,
    check_real,
    result_dtype,
    sum_is_finite,
)

__all__ = [
    "angles",
    "apply_rope",
    "apply_rope_complex",
    "apply_rope_tables",
    "cos_sin",
    "half_to_interleaved_weights",
    "interleaved_to_half_weights",
    "inv_freq",
    "pair_indices",
    "pairing_permutation",
    "rotation_matrix",
]

COS_SIN_METHODS = ("fast", "accurate", "addition")


def inv_freq(dim: int, base: float = 10000.0) -> np.ndarray:
    r"""Inverse frequencies of RoPE (and of the sinusoidal encoding).

    Parameters
    ----------
    dim : int
        Rotary width :math:`d` (even, positive): the number of features that are rotated.
    base : float, default 10000.0
        The base :math:`b > 1` (called ``rope_theta`` by transformers).

    Returns
    -------
    numpy.ndarray, shape (dim // 2,), float64
        :math:`\theta_i = b^{-2i/d}` for :math:`i = 0, \dots, d/2 - 1`.

    Notes
    -----
    Book equation ``eq:rope-inv-freq``. Computed as ``base ** (-(2 i) / d)`` in float64: each
    entry is within a few ulp of the exact value (see the numerics chapter for the exact one).

    References
    ----------
    Su et al., "RoFormer: Enhanced transformer with rotary position embedding", 2021.

    Examples
    --------
    >>> inv_freq(8, base=10000.0)
    array([1.   , 0.1  , 0.01 , 0.001])
    """
    d = check_dim(dim)
    b = check_base(base)
    i = np.arange(d // 2, dtype=np.float64)
    return b ** (-(2.0 * i) / d)  # [eq:rope-inv-freq]


_inv_freq = inv_freq  # the public name is shadowed by arguments called inv_freq below


def angles(positions, inv_freq) -> np.ndarray:
    r"""Rotation angles :math:`m\,\theta_i` for every position and pair.

    Parameters
    ----------
    positions : array_like, shape (seq,)
        Token positions :math:`m` (integers or reals, finite).
    inv_freq : array_like, shape (d/2,)
        Inverse frequencies :math:`\theta_i` (positive).

    Returns
    -------
    numpy.ndarray, shape (seq, d/2), float64
        ``angles[m, i] = positions[m] * inv_freq[i]`` (one float64 rounding).

    Notes
    -----
    Book equation ``eq:rope-angle``.

    Examples
    --------
    >>> angles([0, 1, 2], [1.0, 0.5])
    array([[0. , 0. ],
           [1. , 0.5],
           [2. , 1. ]])
    """
    pos = as_positions(positions)
    f = as_inv_freq(inv_freq)
    return np.multiply.outer(pos, f)  # [eq:rope-angle]


def _resolve_inv_freq(inv_freq_arg, dim, base) -> np.ndarray:
    """Frequencies from either an explicit ``inv_freq`` or ``dim`` and ``base``."""
    if inv_freq_arg is not None:
        if dim is not None:
            d = check_dim(dim)
            f = as_inv_freq(inv_freq_arg)
            if f.shape[0] != d // 2:
                raise ValueError(
                    f"inv_freq has {f.shape[0]} entries but dim={d} needs dim // 2 = {d // 2}"
                )
            return f
        return as_inv_freq(inv_freq_arg)
    if dim is None:
        raise TypeError("cos_sin needs either inv_freq or dim (with base)")
    return _inv_freq(dim, base)


def cos_sin(
    positions,
    inv_freq=None,
    *,
    dim: int | None = None,
    base: float = 10000.0,
    attention_scaling: float = 1.0,
    method: str = "fast",
) -> tuple[np.ndarray, np.ndarray]:
    r"""Cosine and sine tables of the rotation angles, one value per pair.

    Parameters
    ----------
    positions : array_like, shape (seq,)
        Token positions :math:`m`.
    inv_freq : array_like, shape (d/2,), optional
        Inverse frequencies, taken as exact binary values. If omitted, ``dim`` (and ``base``)
        define :math:`\theta_i = b^{-2i/d}`.
    dim : int, optional
        Rotary width; required when ``inv_freq`` is not given.
    base : float, default 10000.0
        Base used with ``dim``.
    attention_scaling : float, default 1.0
        Factor multiplied into both tables (YaRN's and LongRoPE's attention factor, as
        transformers applies it).
    method : {"fast", "accurate", "addition"}, default "fast"
        ``"fast"``: ``np.cos``/``np.sin`` of the float64 angle ``m * theta_i``.
        ``"accurate"``: cos/sin of the exact angle, faithfully rounded (at most 1 ulp; see the
        numerics chapter); with ``dim``/``base`` the frequencies are the exact real numbers
        :math:`b^{-2i/d}`, not their float64 roundings.
        ``"addition"`` (non-negative integer positions): :math:`m = h + l` with
        :math:`0 \le l < 1024` and :math:`h` a multiple of 1024, and
        :math:`\cos m\theta = \cos h\theta \cos l\theta - \sin h\theta \sin l\theta` (the
        sine likewise) from ``np.cos``/``np.sin`` of the float64 angles :math:`h\theta` and
        :math:`l\theta` (book equation ``eq:rope-angle-addition``): a few multiplications per
        entry instead of a trigonometric call, several times faster than ``"fast"`` for long
        runs of positions. Its error against the exact :math:`\cos(m\theta)` (float64
        :math:`\theta`) is at most :math:`2^{-53}(|m\theta| + 8)`: the fast path's error
        class plus a few units (``benchmarks/bench_tables.py`` measures both).

    Returns
    -------
    cos, sin : numpy.ndarray, each shape (seq, d/2), float64
        ``cos[m, i] = s * cos(m theta_i)`` and ``sin[m, i] = s * sin(m theta_i)`` with
        ``s = attention_scaling``.

    Notes
    -----
    Book equation ``eq:rope-cos-sin``. The fast path's error grows with the angle: about
    1e-13 at m = 1e3 and 1e-10 at m = 1e6 relative to the exact angle, because the rounding of
    :math:`\theta_i` and of the product moves the angle.

    Accuracy of ``method="accurate"`` (measured against a 50-digit mpmath oracle): at most
    1 ulp on 10^5 random entries (positions below 2^31, dim <= 512, base in [2, 1e7], one in
    five positions fractional; 65 % correctly rounded, none beyond 1 ulp;
    ``benchmarks/check_accurate_sample.py``) and on the positions where cos or sin comes
    closest to zero (continued-fraction convergents; ``tests/test_exact.py``). It assumes the
    platform's float64 cos/sin are faithful on [-pi, pi] (glibc: about 0.51 ulp). Cost for a
    2^20 x 64 table: 0.76 times the fast path's wall-clock time, 1.06 times its CPU time
    (``benchmarks/bench_tables.py``); the mpmath oracle costs about 60 microseconds per entry.

    Examples
    --------
    >>> c, s = cos_sin([0, 1], dim=4, base=100.0)
    >>> c.shape
    (2, 2)
    >>> float(c[1, 1]), float(s[1, 1])  # theta_1 = 100**(-1/2) = 0.1
    (0.9950041652780258, 0.09983341664682815)
    """
    check_choice(method, "method", COS_SIN_METHODS)
    scale = check_real(attention_scaling, "attention_scaling")
    if method == "accurate":
        from ._exact import accurate_cos_sin

        pos = as_positions(positions)
        if inv_freq is None:
            if dim is None:
                raise TypeError("cos_sin needs either inv_freq or dim (with base)")
            c, s = accurate_cos_sin(pos, dim=check_dim(dim), base=check_base(base))
        else:
            c, s = accurate_cos_sin(pos, inv_freq=_resolve_inv_freq(inv_freq, dim, base))
    elif method == "addition":
        pos = as_positions(positions)
        _check_addition_positions(pos)
        return _addition_cos_sin(pos, _resolve_inv_freq(inv_freq, dim, base), scale)
    else:
        theta = _resolve_inv_freq(inv_freq, dim, base)
        return _fast_cos_sin(as_positions(positions), theta, scale)
    if scale != 1.0:
        c *= scale  # [eq:rope-attention-scaling]
        s *= scale
    return c, s


def _fast_cos_sin(pos, theta, scale, out=None):
    """The fast tables without validation: ``np.cos``/``np.sin`` of the float64 angle.

    The angle buffer is reused (it becomes the sine table), so the peak memory is the two
    results. Every entry depends on its own position only, so tables built block by block
    (as ``apply_rope`` does) are bit-identical to whole ones.
    """
    if out is None:
        c = np.empty((pos.shape[0], theta.shape[0]))
        s = np.empty_like(c)
    else:
        c, s = out
    np.multiply.outer(pos, theta, out=s)  # [eq:rope-angle]
    np.cos(s, out=c)  # [eq:rope-cos-sin]
    np.sin(s, out=s)  # [eq:rope-cos-sin]
    if scale != 1.0:
        c *= scale  # [eq:rope-attention-scaling]
        s *= scale
    return c, s


# Angle addition splits m = hi + lo with 0 <= lo < _ADDITION_SPAN (a power of two).
_ADDITION_SPAN = 1024


def _check_addition_positions(pos):
    if pos.size and (np.any(pos < 0) or np.any(pos != np.floor(pos))):
        raise ValueError(
            "method='addition' needs non-negative integer positions "
            "(use a count or integer-valued positions)"
        )


def _addition_lo_tables(theta):
    """cos/sin of ``l theta`` for ``l < _ADDITION_SPAN``, each shaped (K, h)."""
    return _fast_cos_sin(np.arange(_ADDITION_SPAN, dtype=np.float64), theta, 1.0)


def _addition_cos_sin(pos, theta, scale, lo_tables=None):
    """Angle-addition tables for non-negative integer positions (checked by the caller).

    A run of consecutive positions broadcasts over aligned blocks of ``_ADDITION_SPAN``
    (:func:`_addition_chunk`); other positions gather rows of the small tables. Both evaluate
    the same expressions on the same operands, so a position's row never depends on the other
    positions (or on how a stream is chunked)."""
    if lo_tables is None:
        lo_tables = _addition_lo_tables(theta)
    n = pos.shape[0]
    if n and pos[-1] - pos[0] == n - 1 and np.all(np.diff(pos) == 1):
        return _addition_chunk(int(pos[0]), n, theta, lo_tables, scale)
    return _addition_general(pos, theta, lo_tables, scale)


def _addition_chunk(p0, n, theta, lo_tables, scale):
    """cos/sin of (p0 + j) theta for j < n by angle addition from two small tables.

    m = hi + lo with hi = K floor(m / K) and lo in [0, K) (the same split for every chunking):
    the hi angle is one float64 product, as in the fast path, and the sum formula adds a few
    roundings (see ``cos_sin``). The tables are written block by block (one hi row, K
    positions, per block) with cache-sized temporaries: blocks that lie wholly inside the
    requested range are computed in place, the partial ones at either end in scratch."""
    k = _ADDITION_SPAN
    c_lo, s_lo = lo_tables  # (K, h)
    h = theta.shape[0]
    c_out, s_out = np.empty((n, h)), np.empty((n, h))
    a0 = (p0 // k) * k  # blocks start at multiples of K
    q = -(-(p0 + n - a0) // k)
    c_hi, s_hi = _fast_cos_sin(a0 + k * np.arange(q, dtype=np.float64), theta, 1.0)  # (q, h)
    t, c_part, s_part = np.empty((k, h)), np.empty((k, h)), np.empty((k, h))
    for j in range(q):
        b0 = a0 + j * k  # first position of block j
        o0, o1 = max(b0, p0), min(b0 + k, p0 + n)  # the part of it that was asked for
        inside = o0 == b0 and o1 == b0 + k
        cb = c_out[o0 - p0 : o1 - p0] if inside else c_part
        sb = s_out[o0 - p0 : o1 - p0] if inside else s_part
        np.multiply(c_hi[j], c_lo, out=cb)  # [eq:rope-angle-addition]
        np.multiply(s_hi[j], s_lo, out=t)
        cb -= t  # cos(a + b) = cos a cos b - sin a sin b   [eq:rope-angle-addition]
        np.multiply(s_hi[j], c_lo, out=sb)
        np.multiply(c_hi[j], s_lo, out=t)
        sb += t  # sin(a + b) = sin a cos b + cos a sin b   [eq:rope-angle-addition]
        if scale != 1.0:
            cb *= scale  # [eq:rope-attention-scaling]
            sb *= scale
        if not inside:
            c_out[o0 - p0 : o1 - p0] = cb[o0 - b0 : o1 - b0]
            s_out[o0 - p0 : o1 - p0] = sb[o0 - b0 : o1 - b0]
    return c_out, s_out


def _addition_general(pos, theta, lo_tables, scale):
    """Angle addition for arbitrary non-negative integer positions: each distinct hi angle is
    computed once and the rows of both tables are gathered."""
    lo = np.mod(pos, _ADDITION_SPAN)
    hi, rows = np.unique(pos - lo, return_inverse=True)
    c_hi, s_hi = _fast_cos_sin(hi, theta, 1.0)
    c_hi, s_hi = c_hi[rows], s_hi[rows]
    li = lo.astype(np.intp)
    c_lo, s_lo = lo_tables[0][li], lo_tables[1][li]
    c = c_hi * c_lo - s_hi * s_lo  # [eq:rope-angle-addition]
    s = s_hi * c_lo + c_hi * s_lo  # [eq:rope-angle-addition]
    if scale != 1.0:
        c *= scale  # [eq:rope-attention-scaling]
        s *= scale
    return c, s


def pair_indices(dim: int, pairing: str = "half") -> tuple[np.ndarray, np.ndarray]:
    """Feature indices of the first and second member of every pair.

    Parameters
    ----------
    dim : int
        Rotary width (even).
    pairing : {"half", "interleaved"}, default "half"

    Returns
    -------
    first, second : numpy.ndarray of int, each shape (dim // 2,)
        Pair ``i`` is made of features ``first[i]`` and ``second[i]``.

    Examples
    --------
    >>> pair_indices(6, "half")
    (array([0, 1, 2]), array([3, 4, 5]))
    >>> pair_indices(6, "interleaved")
    (array([0, 2, 4]), array([1, 3, 5]))
    """
    d = check_dim(dim)
    check_pairing(pairing)
    h = d // 2
    if pairing == "half":
        return np.arange(h), np.arange(h, d)  # [eq:pairing-half]
    return np.arange(0, d, 2), np.arange(1, d, 2)  # [eq:pairing-interleaved]


# Elements of x per block. The rotation runs block by block (a group of heads and a range of
# positions) so that its scratch (one or two float64 buffers of this many elements and the
# block's tables) stays in a core's L2/L3 cache while x streams through memory once.
# Measured in benchmarks/bench_apply.py.
_BLOCK_ELEMS = 1 << 16


def _pair_views(a, h, pairing):
    """Views of the first and second members of the ``h`` pairs on the last axis of ``a``."""
    if pairing == "half":
        return a[..., :h], a[..., h : 2 * h]  # [eq:pairing-half]
    return a[..., 0 : 2 * h : 2], a[..., 1 : 2 * h : 2]  # [eq:pairing-interleaved]


def _check_alias(out, xa):
    """``out`` may be ``x`` itself (same memory, same strides: in-place) or disjoint from it."""
    if out is None or not np.may_share_memory(out, xa):
        return
    same = (
        out.__array_interface__["data"][0] == xa.__array_interface__["data"][0]
        and out.strides == xa.strides
        and out.dtype == xa.dtype
    )
    if not same and np.shares_memory(out, xa):
        raise ValueError(
            "out must be x itself (in-place rotation) or not overlap x; "
            "it overlaps x with a different offset or strides"
        )


def _as_3d(a):
    """``a`` of shape (..., seq, dim) viewed as (G, seq, dim) without a copy, or None when its
    leading axes cannot be merged into one (then the caller goes slab by slab)."""
    lead = a.shape[:-2]
    if len(lead) == 1:
        return a
    if len(lead) == 0:
        return a[None]
    axes = [(n, st) for n, st in zip(lead, a.strides[:-2], strict=True) if n != 1]
    for (_, outer), (n, inner) in itertools.pairwise(axes):
        if outer != inner * n:
            return None
    g = int(np.prod(lead, dtype=np.int64))
    stride = axes[-1][1] if axes else 0
    return np.lib.stride_tricks.as_strided(
        a, shape=(g, *a.shape[-2:]), strides=(stride, *a.strides[-2:])
    )


def _slabs(xa, out):
    """Pairs of (G, seq, dim) views of ``x`` and ``out`` that together cover every head."""
    x3, o3 = _as_3d(xa), _as_3d(out)
    if x3 is not None and o3 is not None:
        return [(x3, o3)]
    return [(xa[i][None], out[i][None]) for i in np.ndindex(xa.shape[:-2])]


def _require_finite(a):
    if not np.all(np.isfinite(a)):
        raise ValueError("x must contain only finite values (found NaN or inf)")


class _Kernel:
    """Scratch buffers, block shape and per-block tables for rotating ``x`` into ``out``.

    Forms (every one computes the pair (x1, x2) -> (x1 c - x2 s, x1 s + x2 c)):

    * exact (the default): ``x * (c, c) + p`` with ``p = (-(x2 s), x1 s)`` in the pair layout,
      in float64; float32/float16 input is widened to float64 (exact) and the sum rounded
      once to the output dtype. ``x1 c + (-(x2 s))`` is exactly ``x1 c - x2 s`` and the sum
      is commutative, so every entry is bit-identical to the two float64 expressions (signed
      zeros included). For half pairing ``p`` is the two halves of ``x`` swapped (one copy of
      two items per row, each item one half: a void view) times ``(-s, s)``, so every
      operation runs over whole contiguous rows; for interleaved pairing the cross products
      are two stride-2 products over the whole block.
    * fused, interleaved: pairs viewed as complex numbers times ``c + j s`` (one pass;
      complex64 with float32 tables for float32 input).
    * fused, float32 input without the complex view (half pairing, or interleaved features
      with a stride): the exact form's operations in float32 with the tables rounded to
      float32 (the float32 evaluation of the straightforward formula).
    """

    def __init__(self, xa, out, r, pairing, fused, check_finite):
        self.h = h = r // 2
        self.pairing = pairing
        seq = xa.shape[-2]
        g = int(np.prod(xa.shape[:-2], dtype=np.int64))
        unit = xa.strides[-1] == xa.itemsize and out.strides[-1] == out.itemsize
        self.complex = fused and pairing == "interleaved" and unit
        narrow = fused and xa.dtype == np.float32  # float32 arithmetic (fused only)
        self.ct = np.dtype(np.float32 if narrow else np.float64)
        # a block: k heads x n positions x r features, about _BLOCK_ELEMS elements
        self.n = n = max(1, min(seq, _BLOCK_ELEMS // max(r, 1)))
        self.k = k = max(1, min(g, _BLOCK_ELEMS // max(n * r, 1))) if n == seq else 1
        ct = self.ct
        # x in the compute dtype when it is not already (widened, or a unit-stride copy)
        self.needs_copy = xa.dtype != ct or (not self.complex and xa.strides[-1] != xa.itemsize)
        if self.complex and not self.needs_copy and not check_finite:
            # no scratch for x and nothing read twice: one product covers every head of a
            # block of positions (only the complex table z, reused by each head, need stay in
            # cache). With the finiteness check, blocks stay about _BLOCK_ELEMS elements, so
            # that x is still in cache when the product reads it after the check.
            self.k = k = g
        if self.complex:
            self.z = np.empty((n, h), dtype=np.complex64 if narrow else np.complex128)
            self.xw = np.empty((k, n, r)) if self.needs_copy else None
            self.w = None
        else:
            self.xw = np.empty((k, n, r), dtype=ct) if self.needs_copy else None
            self.w = np.empty((k, n, r), dtype=ct)  # the cross products p
            self.cc = np.empty((n, r), dtype=ct)  # (c, c) in the pair layout
            self.ss = np.empty((n, r), dtype=ct) if pairing == "half" else None  # (-s, s)
            self.ns = np.empty((n, h), dtype=ct) if pairing != "half" else None  # -s
            self.s_ct = np.empty((n, h), dtype=ct) if pairing != "half" else None  # s
        self.check_finite = check_finite

    def set_tables(self, cb, sb):
        """Lay out the float64 tables of ``len(cb)`` positions for the chosen form."""
        m = cb.shape[0]
        if self.complex:
            z = self.z[:m]
            z.real = cb
            z.imag = sb
            return
        c1, c2 = _pair_views(self.cc[:m], self.h, self.pairing)
        np.copyto(c1, cb, casting="same_kind")  # float32 form: rounded to float32
        np.copyto(c2, c1)
        if self.pairing == "half":
            s1, s2 = _pair_views(self.ss[:m], self.h, "half")
            np.copyto(s2, sb, casting="same_kind")
            np.negative(s2, out=s1)  # -s (exact)
        else:
            np.copyto(self.s_ct[:m], sb, casting="same_kind")
            np.negative(self.s_ct[:m], out=self.ns[:m])

    def rotate(self, xb, ob):
        """``ob`` = ``xb`` rotated, for a block of ``k`` heads and ``m`` positions. ``ob`` may be
        ``xb`` itself: everything is read into scratch before ``ob`` is written, or read and
        written element by element."""
        k, m = xb.shape[0], xb.shape[1]
        if self.complex:
            self._rotate_complex(xb, ob, k, m)
            return
        if self.needs_copy:
            xw = self.xw[:k, :m]
            np.copyto(xw, xb)  # widening is exact
        else:
            xw = xb
        p = self.w[:k, :m]
        # with the check, inf * 0 (inf in x at sin = 0) is reported as an error below, not
        # as a NumPy warning first
        quiet = np.errstate(invalid="ignore") if self.check_finite else contextlib.nullcontext()
        with quiet:
            if self.pairing == "half":
                # the halves swapped: each row as two items of h features
                vt = np.dtype((np.void, self.h * self.ct.itemsize))
                xv, pv = xw.view(vt), p.view(vt)
                pv[..., 0] = xv[..., 1]  # x_pi   [eq:rope-swap-form]
                pv[..., 1] = xv[..., 0]
                np.multiply(p, self.ss[:m], out=p)  # (-(x2 s), x1 s)   [eq:rope-swap-form]
            else:
                x1, x2 = _pair_views(xw, self.h, "interleaved")
                p1, p2 = _pair_views(p, self.h, "interleaved")
                np.multiply(x2, self.ns[:m], out=p1)  # -(x2 s)   [eq:rope-swap-form]
                np.multiply(x1, self.s_ct[:m], out=p2)  # x1 s
        # p is non-finite wherever x is (inf * s and NaN * s are never finite); a finite sum of
        # p proves x finite, and only then (or on overflow) is x tested entry by entry
        if self.check_finite and not sum_is_finite(p):
            _require_finite(xb)
        cc = self.cc[:m]
        if ob.dtype == self.ct and xw is xb:
            np.multiply(xb, cc, out=ob)  # (x1 c, x2 c)   [eq:rope-swap-form]
            np.add(ob, p, out=ob)  # (x1 c - x2 s, x2 c + x1 s)   [eq:rope-swap-form]
            return
        np.multiply(xw, cc, out=xw)  # xw is scratch here
        if ob.dtype == self.ct:
            np.add(xw, p, out=ob)  # [eq:rope-swap-form]
            return
        np.add(xw, p, out=xw)  # [eq:rope-swap-form]
        np.copyto(ob, xw, casting="same_kind")  # one rounding to ob's dtype

    def _rotate_complex(self, xb, ob, k, m):
        z = self.z[:m]
        if self.needs_copy:  # float16 and other input: widened to float64 block by block
            t = self.xw[:k, :m]
            np.copyto(t, xb)
            if self.check_finite and not sum_is_finite(t):
                _require_finite(xb)
            tc = t.view(np.complex128)
            np.multiply(tc, z, out=tc)  # [eq:rope-complex]
            np.copyto(ob, t, casting="same_kind")
            return
        if self.check_finite and not sum_is_finite(xb):
            _require_finite(xb)
        np.multiply(xb.view(z.dtype), z, out=ob.view(z.dtype))  # [eq:rope-complex]


def _rotate(xa, r, pairing, fused, out, tables, check_finite):
    """Rotate the first ``r`` features of ``xa`` into ``out`` block by block;
    ``tables(p0, p1, kern)`` returns the float64 (cos, sin) rows of positions p0..p1-1.
    With ``check_finite`` each block of ``xa`` is checked for NaN/inf before its output is
    written."""
    seq = xa.shape[-2]
    if xa.size:
        kern = _Kernel(xa, out, r, pairing, fused, check_finite)
        slabs = _slabs(xa, out)
        for p0 in range(0, seq, kern.n):
            p1 = min(seq, p0 + kern.n)
            kern.set_tables(*tables(p0, p1, kern))
            for x3, o3 in slabs:
                for g0 in range(0, x3.shape[0], kern.k):
                    g1 = g0 + kern.k
                    kern.rotate(x3[g0:g1, p0:p1, :r], o3[g0:g1, p0:p1, :r])
    if r < xa.shape[-1]:
        if check_finite:
            _require_finite(xa[..., r:])
        if not (out is xa or np.shares_memory(out[..., r:], xa[..., r:])):
            out[..., r:] = xa[..., r:]
    return out


def _prepare_x_out(x, out, fused, pairing, check_finite):
    check_pairing(pairing)
    if not isinstance(fused, bool):
        raise TypeError(f"fused must be True or False, got {fused!r}")
    if not isinstance(check_finite, bool):
        raise TypeError(f"check_finite must be True or False, got {check_finite!r}")
    xa = as_float_array(x, "x", min_ndim=2, finite=False)
    dtype = result_dtype(xa)
    out = check_out(out, xa.shape, dtype)
    _check_alias(out, xa)
    if out is None:
        out = np.empty(xa.shape, dtype=dtype)
    return xa, out


def apply_rope_tables(
    x,
    cos,
    sin,
    *,
    pairing: str = "half",
    out: np.ndarray | None = None,
    fused: bool = False,
    check_finite: bool = True,
) -> np.ndarray:
    r"""Rotate ``x`` with given cos/sin tables (the rotation step of :func:`apply_rope`).

    Parameters
    ----------
    x : array_like, shape (..., seq, dim)
        Queries or keys.
    cos, sin : array_like, each shape (seq, r/2)
        Half-width tables as :func:`cos_sin` returns them (one value per pair, any scaling
        already folded in). The first ``r <= dim`` features of ``x`` are rotated, the rest
        pass through unchanged.
    pairing : {"half", "interleaved"}, default "half"
    out : numpy.ndarray, optional
        Array of the result's shape and dtype to write into. It may be ``x`` itself (in-place
        rotation: every element is read before its place is written); any other overlap with
        ``x`` raises ValueError.
    fused : bool, default False
        Use the fast form instead of the golden one (see benchmarks/README.md for the costs).
        Not bit-identical to the default in general:

        * interleaved pairing: the pairs are multiplied as complex numbers, one NumPy pass
          over ``x``. float64 input: NumPy's complex product may use fused multiply-add,
          rounding ``x1 c - x2 s`` once instead of twice; each entry is within
          :math:`2^{-51}(|x_1 c| + |x_2 s|)` of the default. float32 input: the tables are
          rounded to float32 and the arithmetic is float32 (complex64). Other floating input
          is widened to float64 block by block.
        * half pairing: float32 input is computed in float32, bit-identical to
          ``x1 c - x2 s`` and ``x1 s + x2 c`` evaluated in float32 with the tables rounded
          once to float32 (what a float32 model computes); other input gives exactly the
          default.
        * float32 input, either pairing: each entry is within
          :math:`2^{-22}(|x_1 c| + |x_2 s|)` (4 float32 units of the products' size) of the
          float64 result.

        ``fused=True`` is the fast path, near the copy floor for interleaved pairing and about
        3x it for half pairing in float32; the default stays the golden reference,
        bit-identical to ``x1 c - x2 s`` and ``x1 s + x2 c`` in float64, and is never replaced
        by the fast form implicitly.
    check_finite : bool, default True
        Check ``x`` for NaN and inf (block by block) and raise ValueError if any is found,
        as ``scipy.linalg`` does. ``False`` skips the check, for speed (it is about half
        of the fused path's time; see benchmarks/README.md): NaN/inf in ``x`` then propagate
        to the outputs of the pairs they belong to (and pass-through features are copied as
        they are). On finite input the result is bit-identical either way. The tables are
        always checked.

    Returns
    -------
    numpy.ndarray, shape (..., seq, dim)
        ``out`` if given. Same dtype as ``x`` for floating input (float64 otherwise).

    Notes
    -----
    Book equation ``eq:rope-elementwise``. With ``fused=False`` every entry is bit-identical
    to the float64 expressions ``x1 c - x2 s`` and ``x1 s + x2 c`` (float32/float16 input:
    those float64 values rounded once to the input's dtype), signed zeros included. Work
    proceeds in blocks of about 2^16 elements (a range of positions of one head, or whole
    sequences of a group of heads): scratch memory is one float64 buffer of about 512 KiB
    (two for float32/float16 input; smaller when x is) plus the block's tables, never a
    second copy of ``x``.

    Examples
    --------
    >>> c, s = cos_sin([0, 1], dim=2)
    >>> apply_rope_tables(np.array([[1.0, 0.0], [1.0, 0.0]]), c, s).round(6)
    array([[1.      , 0.      ],
           [0.540302, 0.841471]])
    """
    xa, out = _prepare_x_out(x, out, fused, pairing, check_finite)
    c = as_float_array(cos, "cos", ndim=2).astype(np.float64, copy=False)
    s = as_float_array(sin, "sin", ndim=2).astype(np.float64, copy=False)
    if c.shape != s.shape:
        raise ValueError(f"cos and sin must have the same shape, got {c.shape} and {s.shape}")
    if c.shape[0] != xa.shape[-2]:
        raise ValueError(
            f"cos has {c.shape[0]} rows but x has seq = {xa.shape[-2]} "
            "(x must be (..., seq, dim) and cos, sin (seq, r/2))"
        )
    r = 2 * c.shape[1]
    if r == 0 or r > xa.shape[-1]:
        raise ValueError(
            f"cos has {c.shape[1]} columns: 2 * columns = {r} must be in 1..{xa.shape[-1]} "
            "(the rotated width of x)"
        )

    def tables(p0, p1, kern):  # views of the given tables: the kernels only read them
        return c[p0:p1], s[p0:p1]

    return _rotate(xa, r, pairing, fused, out, tables, check_finite)


def apply_rope(
    x,
    positions,
    *,
    base: float = 10000.0,
    inv_freq=None,
    pairing: str = "half",
    attention_scaling: float = 1.0,
    rotary_dim: int | None = None,
    out: np.ndarray | None = None,
    fused: bool = False,
    check_finite: bool = True,
) -> np.ndarray:
    r"""Rotate queries or keys by their positions (element-wise RoPE).

    Parameters
    ----------
    x : array_like, shape (..., seq, dim)
        Queries or keys; the last axis holds the features of one head.
    positions : array_like, shape (seq,)
        Position of every token (integers or reals).
    base : float, default 10000.0
        Base of the frequencies when ``inv_freq`` is not given.
    inv_freq : array_like, shape (rotary_dim/2,), optional
        Explicit inverse frequencies (e.g. from a scaling method); overrides ``base``.
    pairing : {"half", "interleaved"}, default "half"
        Which features form a pair: ``i`` with ``i + r/2`` (half) or ``2i`` with ``2i+1``.
    attention_scaling : float, default 1.0
        Multiplies the rotated features (transformers folds YaRN's factor into cos/sin).
    rotary_dim : int, optional
        Rotate only the first ``rotary_dim`` features and pass the rest through unchanged
        (partial rotary). Default: ``2 * len(inv_freq)`` if ``inv_freq`` is given, else ``dim``.
    out : numpy.ndarray, optional
        Array of the result's shape and dtype to write into. It may be ``x`` itself for an
        in-place rotation (safe: every element is read before its place is written); any other
        overlap with ``x`` raises ValueError.
    fused : bool, default False
        See :func:`apply_rope_tables`: the fast form (complex product for interleaved
        pairing; float32 arithmetic for float32 input), within stated bounds of the default
        instead of bit-identical.
    check_finite : bool, default True
        See :func:`apply_rope_tables`: ``False`` skips the NaN/inf check of ``x`` (they then
        propagate to the affected pairs' outputs); same result on finite input.

    Returns
    -------
    numpy.ndarray, shape (..., seq, dim)
        Same dtype as ``x`` for floating input (float64 otherwise). Tables and the rotation
        are computed in float64 and rounded once to the output dtype.

    Notes
    -----
    Book equations ``eq:rope-elementwise`` (per pair) and ``eq:rope-matrix`` (as a matrix):
    ``apply_rope(v[None], [m], inv_freq=f, pairing=p)[0] == rotation_matrix(m, f, pairing=p) @ v``.
    Features beyond ``rotary_dim`` are not multiplied by ``attention_scaling`` (as in
    transformers, where the pass-through part is concatenated unchanged).

    Exactness: with ``fused=False`` every entry is bit-identical to the float64 expressions
    ``x1 c - x2 s`` and ``x1 s + x2 c`` with ``c, s = cos_sin(positions, ...)`` (``np.cos`` and
    ``np.sin`` of the float64 angle), rounded once to float32/float16 for such input.
    Memory: x is processed in cache-sized blocks, tables included, so the scratch is a few
    float64 buffers of about 512 KiB, never a second copy of ``x``.

    Examples
    --------
    >>> x = np.array([[1.0, 0.0], [1.0, 0.0]])
    >>> apply_rope(x, [0, 1], base=10000.0).round(6)  # theta_0 = 1 rad/token
    array([[1.      , 0.      ],
           [0.540302, 0.841471]])
    >>> _ = apply_rope(x, [0, 1], out=x)  # in place
    >>> x.round(6)
    array([[1.      , 0.      ],
           [0.540302, 0.841471]])
    """
    xa, out = _prepare_x_out(x, out, fused, pairing, check_finite)
    dim = xa.shape[-1]
    pos = as_positions(positions)
    if pos.shape[0] != xa.shape[-2]:
        raise ValueError(
            f"positions has {pos.shape[0]} entries but x has seq = {xa.shape[-2]} "
            "(x must be (..., seq, dim) and positions (seq,))"
        )
    if inv_freq is not None:
        theta = as_inv_freq(inv_freq)
        r = check_dim(rotary_dim, "rotary_dim") if rotary_dim is not None else 2 * theta.shape[0]
        if theta.shape[0] * 2 != r:
            raise ValueError(
                f"inv_freq has {theta.shape[0]} entries but rotary_dim={r} needs {r // 2}"
            )
    else:
        r = check_dim(rotary_dim, "rotary_dim") if rotary_dim is not None else dim
        theta = None
    if r > dim:
        raise ValueError(f"rotary_dim={r} exceeds the feature dimension of x ({dim})")
    if dim % 2 and r == dim:
        raise ValueError(f"x's last dimension must be even (features are paired), got {dim}")
    if theta is None:
        theta = _inv_freq(r, base)
    scale = check_real(attention_scaling, "attention_scaling")

    buf = []  # float64 tables of one block of positions, allocated once per call

    def tables(p0, p1, kern):  # cos_sin's fast tables for these positions, bit for bit
        if not buf:
            buf.extend((np.empty((kern.n, r // 2)), np.empty((kern.n, r // 2))))
        n = p1 - p0
        return _fast_cos_sin(pos[p0:p1], theta, scale, out=(buf[0][:n], buf[1][:n]))

    return _rotate(xa, r, pairing, fused, out, tables, check_finite)


def rotation_matrix(position, inv_freq, *, pairing: str = "half") -> np.ndarray:
    r"""The dense :math:`d \times d` rotation :math:`R_m` (for teaching and tests).

    Parameters
    ----------
    position : float
        Position :math:`m`.
    inv_freq : array_like, shape (d/2,)
        Inverse frequencies.
    pairing : {"half", "interleaved"}, default "half"

    Returns
    -------
    numpy.ndarray, shape (d, d), float64
        Block-diagonal (interleaved) or block-diagonal after the pairing permutation (half),
        with 2x2 blocks ``[[cos m theta_i, -sin m theta_i], [sin m theta_i, cos m theta_i]]``.

    Notes
    -----
    Book equation ``eq:rope-matrix``. Building it costs O(d^2) memory per position, which is why
    implementations apply the element-wise form instead.

    Examples
    --------
    >>> rotation_matrix(1.0, [np.pi / 2], pairing="interleaved").round(12)
    array([[ 0., -1.],
           [ 1.,  0.]])
    """
    m = check_real(position, "position")
    check_pairing(pairing)
    theta = as_inv_freq(inv_freq)
    d = 2 * theta.shape[0]
    c, s = np.cos(m * theta), np.sin(m * theta)
    i1, i2 = pair_indices(d, pairing)
    R = np.zeros((d, d))
    R[i1, i1] = c  # [eq:rope-matrix]
    R[i1, i2] = -s
    R[i2, i1] = s
    R[i2, i2] = c
    return R


def apply_rope_complex(x, positions, inv_freq) -> np.ndarray:
    r"""RoPE in complex form: pair ``(x[2i], x[2i+1])`` read as ``x[2i] + j x[2i+1]`` and
    multiplied by :math:`e^{j m \theta_i}` (interleaved pairing, as Meta's Llama code does).

    Parameters
    ----------
    x : array_like, shape (..., seq, d)
    positions : array_like, shape (seq,)
    inv_freq : array_like, shape (d/2,)

    Returns
    -------
    numpy.ndarray, shape (..., seq, d)
        Same dtype as ``x`` for floating input; equal to
        ``apply_rope(x, positions, inv_freq=inv_freq, pairing="interleaved")`` up to rounding.

    Notes
    -----
    Book equation ``eq:rope-complex``.

    Examples
    --------
    >>> apply_rope_complex([[0.0, 1.0]], [1.0], [np.pi / 2]).round(12)
    array([[-1.,  0.]])
    """
    xa = as_float_array(x, "x", min_ndim=2)
    pos = as_positions(positions)
    theta = as_inv_freq(inv_freq)
    d = xa.shape[-1]
    if d != 2 * theta.shape[0]:
        raise ValueError(
            f"x's last dimension ({d}) must be 2 * len(inv_freq) = {2 * theta.shape[0]}"
        )
    if pos.shape[0] != xa.shape[-2]:
        raise ValueError(f"positions has {pos.shape[0]} entries but x has seq = {xa.shape[-2]}")
    x64 = xa.astype(np.float64)
    z = x64[..., 0::2] + 1j * x64[..., 1::2]
    w = z * np.exp(1j * np.multiply.outer(pos, theta))  # [eq:rope-complex]
    res = np.empty(xa.shape, dtype=np.float64)
    res[..., 0::2] = w.real
    res[..., 1::2] = w.imag
    return res.astype(result_dtype(xa), copy=False)


def pairing_permutation(dim: int) -> np.ndarray:
    """Index array ``p`` that turns interleaved features into half-split ones.

    ``x_half = x_interleaved[..., p]`` puts feature ``2i`` at ``i`` and ``2i + 1`` at
    ``i + d/2``, so that ``apply_rope(x, pos, pairing="interleaved")[..., p]`` equals
    ``apply_rope(x[..., p], pos, pairing="half")``.
    The inverse permutation is ``np.argsort(p)``.

    Parameters
    ----------
    dim : int
        Head (rotary) width, even.

    Returns
    -------
    numpy.ndarray of int, shape (dim,)

    Notes
    -----
    Book equation ``eq:pairing-permutation``.

    Examples
    --------
    >>> pairing_permutation(8)
    array([0, 2, 4, 6, 1, 3, 5, 7])
    """
    d = check_dim(dim)
    return np.concatenate([np.arange(0, d, 2), np.arange(1, d, 2)])  # [eq:pairing-permutation]


def _permute_head_rows(w, n_heads, perm_fn, name):
    wa = np.asarray(w)
    if wa.dtype == object or wa.dtype.kind not in "biufc":
        raise TypeError(f"{name} must be a numeric array, got dtype {wa.dtype}")
    if wa.ndim not in (1, 2):
        raise ValueError(
            f"{name} must be a weight (out_features, in_features) or a bias (out_features,), "
            f"got shape {wa.shape}"
        )
    n = check_positive_int(n_heads, "n_heads")
    rows = wa.shape[0]
    if rows % n:
        raise ValueError(f"{name} has {rows} rows, not divisible by n_heads={n}")
    head_dim = rows // n
    check_dim(head_dim, "head_dim (rows // n_heads)")
    p = perm_fn(head_dim)
    idx = (np.arange(n)[:, None] * head_dim + p[None, :]).reshape(-1)
    return wa[idx].copy()


def interleaved_to_half_weights(w, n_heads: int) -> np.ndarray:
    """Permute the output rows of a q/k projection (or its bias) so that a model trained with
    interleaved RoPE gives the same scores with half-split RoPE.

    Parameters
    ----------
    w : array_like, shape (n_heads * head_dim, in_features) or (n_heads * head_dim,)
        Query or key projection weight (rows are output features, head by head) or its bias.
        For grouped-query attention pass the key projection with ``n_heads`` = number of
        key/value heads.
    n_heads : int
        Number of heads the rows are split into.

    Returns
    -------
    numpy.ndarray, same shape as ``w``
        Within each head, row ``2i`` moves to ``i`` and row ``2i + 1`` to ``i + head_dim/2``.

    Notes
    -----
    Book equation ``eq:weights-permutation``; this is what transformers' Llama conversion
    script does to Meta checkpoints. Only q and k (weights and biases) are permuted, never v/o.

    Examples
    --------
    >>> interleaved_to_half_weights(np.arange(8), n_heads=2)
    array([0, 2, 1, 3, 4, 6, 5, 7])
    """
    return _permute_head_rows(w, n_heads, pairing_permutation, "w")  # [eq:weights-permutation]


def half_to_interleaved_weights(w, n_heads: int) -> np.ndarray:
    """Inverse of :func:`interleaved_to_half_weights` (half-split checkpoint to interleaved,
    as done when converting transformers checkpoints to GGUF).

    Parameters
    ----------
    w : array_like, shape (n_heads * head_dim, in_features) or (n_heads * head_dim,)
        Query or key projection weight of a half-split model, or its bias (for grouped-query
        attention, the key projection with ``n_heads`` = number of key/value heads).
    n_heads : int
        Number of heads the rows are split into.

    Returns
    -------
    numpy.ndarray, same shape as ``w``
        Within each head, row ``i`` moves to ``2i`` and row ``i + head_dim/2`` to ``2i + 1``.

    Notes
    -----
    Book equation ``eq:weights-permutation``.

    Examples
    --------
    >>> w = np.arange(16).reshape(8, 2)
    >>> bool((half_to_interleaved_weights(interleaved_to_half_weights(w, 2), 2) == w).all())
    True
    """
    return _permute_head_rows(
        w, n_heads, lambda d: np.argsort(pairing_permutation(d)), "w"
    )  # [eq:weights-permutation]
