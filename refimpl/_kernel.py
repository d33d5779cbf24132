"""The machine behind ``rotary``: fast cos/sin tables and the blocked rotation kernel.

Everything here computes what :func:`refimpl.rotary.reference_rotation` and
:func:`refimpl.rotary.cos_sin` define, faster and in bounded memory; the tests compare each
form with the reference bit for bit (or, for the fused forms, within their stated bounds).

Tables: ``fast_cos_sin`` (``np.cos``/``np.sin`` of the float64 angle) and the angle-addition
tables (``addition_cos_sin``: a few products per entry instead of a trigonometric call).

Rotation: ``x`` of shape (..., seq, dim) is processed in blocks of about ``_BLOCK_ELEMS``
elements (a range of positions of one head, or whole sequences of a group of heads) so that
the scratch stays in cache while ``x`` streams through memory once. One *form* is chosen per
call (:func:`choose_form`):

* ``_HalfSwapForm`` / ``_InterleavedForm`` (exact, float64): ``x * (c, c) + p`` with the cross
  products ``p = (-(x2 s), x1 s)`` in the pair layout. ``x1 c + (-(x2 s))`` is exactly
  ``x1 c - x2 s`` and the sum is commutative, so every entry is bit-identical to the
  reference's two float64 expressions, signed zeros included; float32/float16 input is
  widened (exactly) and the sum rounded once. Half pairing builds ``p`` by swapping the two
  halves of each row (a void view of two items), interleaved pairing by two stride-2 products.
* the same two forms with float32 arithmetic and float32 tables (``fused=True``, float32
  input): the float32 evaluation of the reference formula.
* ``_ComplexForm`` (``fused=True``, interleaved pairs with unit stride): pairs viewed as complex
  numbers times ``c + j s`` (complex64 with float32 tables for float32 input).
"""

from __future__ import annotations

import itertools

import numpy as np

from ._checks import as_float_array, check_out, result_dtype, sum_is_finite

# Elements of x per block. The rotation runs block by block (a group of heads and a range of
# positions) so that its scratch (one or two float64 buffers of this many elements and the
# block's tables) stays in a core's L2/L3 cache while x streams through memory once.
# Measured in benchmarks/bench_apply.py.
_BLOCK_ELEMS = 1 << 16

# Angle addition splits m = hi + lo with 0 <= lo < _ADDITION_SPAN (a power of two).
_ADDITION_SPAN = 1024


# ---------------------------------------------------------------- tables


def fast_cos_sin(pos, theta, scale, out=None):
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


def check_addition_positions(pos):
    """Angle addition is defined for non-negative integer positions."""
    if pos.size and (np.any(pos < 0) or np.any(pos != np.floor(pos))):
        raise ValueError(
            "method='addition' needs non-negative integer positions "
            "(use a count or integer-valued positions)"
        )


def addition_lo_tables(theta):
    """cos/sin of ``l theta`` for ``l < _ADDITION_SPAN``, each shaped (K, h)."""
    return fast_cos_sin(np.arange(_ADDITION_SPAN, dtype=np.float64), theta, 1.0)


def addition_cos_sin(pos, theta, scale, lo_tables=None):
    """Angle-addition tables for non-negative integer positions (checked by the caller).

    A run of consecutive positions broadcasts over aligned blocks of ``_ADDITION_SPAN``
    (:func:`_addition_chunk`); other positions gather rows of the small tables. Both evaluate
    the same expressions on the same operands, so a position's row never depends on the other
    positions (or on how a stream is chunked)."""
    if lo_tables is None:
        lo_tables = addition_lo_tables(theta)
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
    c_hi, s_hi = fast_cos_sin(a0 + k * np.arange(q, dtype=np.float64), theta, 1.0)  # (q, h)
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
    c_hi, s_hi = fast_cos_sin(hi, theta, 1.0)
    c_hi, s_hi = c_hi[rows], s_hi[rows]
    li = lo.astype(np.intp)
    c_lo, s_lo = lo_tables[0][li], lo_tables[1][li]
    c = c_hi * c_lo - s_hi * s_lo  # [eq:rope-angle-addition]
    s = s_hi * c_lo + c_hi * s_lo  # [eq:rope-angle-addition]
    if scale != 1.0:
        c *= scale  # [eq:rope-attention-scaling]
        s *= scale
    return c, s


# ---------------------------------------------------------------- x, out and their views


def prepare_x_out(x, out):
    """``x`` as a floating array, the output array (``out`` checked, or a new one) and
    whether ``out`` was given."""
    xa = as_float_array(x, "x", min_ndim=2, finite=False)
    dtype = result_dtype(xa)
    given = check_out(out, xa.shape, dtype)
    _check_alias(given, xa)
    return xa, (np.empty(xa.shape, dtype=dtype) if given is None else given), given is not None


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


def require_finite(a, name: str = "x"):
    """Raise the package's error when ``a`` holds NaN or inf (sum first: see ``sum_is_finite``)."""
    if not sum_is_finite(a) and not np.all(np.isfinite(a)):
        raise ValueError(f"{name} must contain only finite values (found NaN or inf)")


# ---------------------------------------------------------------- forms


def _pair_views(a, h, pairing):
    """Views of the first and second members of the ``h`` pairs on the last axis of ``a``."""
    if pairing == "half":
        return a[..., :h], a[..., h : 2 * h]  # [eq:pairing-half]
    return a[..., 0 : 2 * h : 2], a[..., 1 : 2 * h : 2]  # [eq:pairing-interleaved]


class _SwapForm:
    """``y = x * (c, c) + p`` with the cross products ``p = (-(x2 s), x1 s)`` in the pair
    layout (book equation ``eq:rope-swap-form``), in the compute dtype ``ct``. Subclasses say
    how ``p`` is formed and how ``-s`` and ``s`` are laid out."""

    pairing = ""

    def __init__(self, k, n, r, ct, needs_copy):
        self.h, self.ct, self.needs_copy = r // 2, np.dtype(ct), needs_copy
        self.xw = np.empty((k, n, r), dtype=ct) if needs_copy else None  # x in ct
        self.p = np.empty((k, n, r), dtype=ct)  # the cross products
        self.cc = np.empty((n, r), dtype=ct)  # (c, c) in the pair layout

    def set_tables(self, cb, sb):
        """Lay out the float64 tables of ``len(cb)`` positions (rounded to ``ct`` once)."""
        c1, c2 = _pair_views(self.cc[: cb.shape[0]], self.h, self.pairing)
        np.copyto(c1, cb, casting="same_kind")
        np.copyto(c2, c1)
        self._set_sines(sb)

    def rotate(self, xb, ob):
        """``ob`` = ``xb`` rotated, for a block of k heads and m positions. ``ob`` may be ``xb``
        itself: everything is read into scratch before ``ob`` is written, or read and written
        element by element."""
        k, m = xb.shape[0], xb.shape[1]
        xw = self.xw[:k, :m] if self.needs_copy else xb
        if self.needs_copy:
            np.copyto(xw, xb)  # widening is exact
        p = self.p[:k, :m]
        self._cross(xw, p, m)
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


class _HalfSwapForm(_SwapForm):
    """Half pairing: ``p`` is each row with its two halves swapped (one copy of two items per
    row, each item one half: a void view) times ``(-s, s)``; every operation runs over whole
    contiguous rows."""

    pairing = "half"

    def __init__(self, k, n, r, ct, needs_copy):
        super().__init__(k, n, r, ct, needs_copy)
        self.ss = np.empty((n, r), dtype=ct)  # (-s, s)

    def _set_sines(self, sb):
        s1, s2 = _pair_views(self.ss[: sb.shape[0]], self.h, "half")
        np.copyto(s2, sb, casting="same_kind")
        np.negative(s2, out=s1)  # -s (exact)

    def _cross(self, xw, p, m):
        vt = np.dtype((np.void, self.h * self.ct.itemsize))
        xv, pv = xw.view(vt), p.view(vt)
        pv[..., 0] = xv[..., 1]  # x_pi   [eq:rope-swap-form]
        pv[..., 1] = xv[..., 0]
        np.multiply(p, self.ss[:m], out=p)  # (-(x2 s), x1 s)   [eq:rope-swap-form]


class _InterleavedForm(_SwapForm):
    """Interleaved pairing: the cross products are two stride-2 products over the block."""

    pairing = "interleaved"

    def __init__(self, k, n, r, ct, needs_copy):
        super().__init__(k, n, r, ct, needs_copy)
        self.s = np.empty((n, r // 2), dtype=ct)
        self.neg_s = np.empty((n, r // 2), dtype=ct)

    def _set_sines(self, sb):
        m = sb.shape[0]
        np.copyto(self.s[:m], sb, casting="same_kind")
        np.negative(self.s[:m], out=self.neg_s[:m])

    def _cross(self, xw, p, m):
        x1, x2 = _pair_views(xw, self.h, "interleaved")
        p1, p2 = _pair_views(p, self.h, "interleaved")
        np.multiply(x2, self.neg_s[:m], out=p1)  # -(x2 s)   [eq:rope-swap-form]
        np.multiply(x1, self.s[:m], out=p2)  # x1 s


class _ComplexForm:
    """Interleaved pairs viewed as complex numbers times ``c + j s`` (one pass; complex64 with
    float32 tables for float32 input; other dtypes widened to float64 block by block)."""

    def __init__(self, k, n, r, narrow, needs_copy):
        self.z = np.empty((n, r // 2), dtype=np.complex64 if narrow else np.complex128)
        self.xw = np.empty((k, n, r)) if needs_copy else None

    def set_tables(self, cb, sb):
        z = self.z[: cb.shape[0]]
        z.real = cb
        z.imag = sb

    def rotate(self, xb, ob):
        z = self.z[: xb.shape[1]]
        if self.xw is None:
            np.multiply(xb.view(z.dtype), z, out=ob.view(z.dtype))  # [eq:rope-complex]
            return
        t = self.xw[: xb.shape[0], : xb.shape[1]]
        np.copyto(t, xb)
        tc = t.view(np.complex128)
        np.multiply(tc, z, out=tc)  # [eq:rope-complex]
        np.copyto(ob, t, casting="same_kind")


def choose_form(xa, out, r, pairing, fused, check_blocks):
    """The form and block geometry for rotating ``r`` features of ``xa`` (..., seq, dim).

    Returns ``(form, n, k)``: blocks of ``n`` positions and ``k`` heads."""
    seq = xa.shape[-2]
    g = int(np.prod(xa.shape[:-2], dtype=np.int64))
    unit = xa.strides[-1] == xa.itemsize and out.strides[-1] == out.itemsize
    n = max(1, min(seq, _BLOCK_ELEMS // max(r, 1)))
    k = max(1, min(g, _BLOCK_ELEMS // max(n * r, 1))) if n == seq else 1
    narrow = fused and xa.dtype == np.float32  # float32 arithmetic (fused only)
    if fused and pairing == "interleaved" and unit:
        needs_copy = xa.dtype not in (np.float32, np.float64)
        if not needs_copy and not check_blocks:
            # no scratch for x and nothing read twice: one product covers every head of a
            # block of positions (only the complex table, reused by each head, need stay in
            # cache). With the finiteness check, blocks stay about _BLOCK_ELEMS elements, so
            # that x is still in cache when the product reads it after the check.
            k = g
        return _ComplexForm(k, n, r, narrow, needs_copy), n, k
    ct = np.dtype(np.float32 if narrow else np.float64)
    needs_copy = xa.dtype != ct or xa.strides[-1] != xa.itemsize
    cls = _HalfSwapForm if pairing == "half" else _InterleavedForm
    return cls(k, n, r, ct, needs_copy), n, k


# ---------------------------------------------------------------- the loop


def rotate(xa, out, lo, r, chosen, tables, check_blocks, perm=None):
    """Rotate features ``[lo, lo + r)`` of ``xa`` (..., seq, dim) into ``out`` block by block.

    ``chosen`` is :func:`choose_form`'s result; ``tables(p0, p1)`` returns the float64
    (cos, sin) rows of positions p0..p1-1. With ``check_blocks`` each block of ``xa`` is checked
    for NaN/inf before its output is written (the caller checks up front when a failure must
    leave ``out`` untouched). ``perm``, if given, reorders each block's rotated features (the
    output order). The other features are copied unless ``out`` is ``xa``."""
    seq = xa.shape[-2]
    form, n, k = chosen
    if xa.size and r:
        slabs = _slabs(xa, out)
        for p0 in range(0, seq, n):
            p1 = min(seq, p0 + n)
            form.set_tables(*tables(p0, p1))
            for x3, o3 in slabs:
                for g0 in range(0, x3.shape[0], k):
                    xb = x3[g0 : g0 + k, p0:p1, lo : lo + r]
                    ob = o3[g0 : g0 + k, p0:p1, lo : lo + r]
                    if check_blocks:
                        require_finite(xb)
                    form.rotate(xb, ob)
                    if perm is not None:
                        ob[...] = ob[..., perm]
    if out is not xa:
        for part in (np.s_[..., :lo], np.s_[..., lo + r :]):
            if not np.shares_memory(out[part], xa[part]):
                out[part] = xa[part]
    return out
