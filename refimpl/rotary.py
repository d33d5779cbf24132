"""Rotary position embedding (RoPE) in every form: frequencies, angles, cos/sin tables,
element-wise application in both feature pairings, the dense rotation matrix, the complex
form, and conversion of checkpoints between pairings.

:func:`reference_rotation` is the formula itself, a few lines; :func:`apply_rope` and
:func:`apply_rope_tables` compute exactly what it defines (bit for bit with ``fused=False``)
with the blocked kernel of the private module ``refimpl._kernel``, and take positions as
engines pass them (``(B, S)`` ids, ``offsets``, packed ``cu_seqlens``, context-parallel
shards: :mod:`refimpl.positions`) and the layouts ``rotary_offset``, ``inverse`` and
``output_order``.

Conventions (see the book's notation page):

* ``inv_freq[i] = base ** (-2 i / d)`` for ``i = 0 .. d/2 - 1`` (0-based, so ``theta_0 = 1``).
* Pair ``(x1, x2)`` at position ``m`` becomes ``(x1 cos m theta - x2 sin m theta,
  x1 sin m theta + x2 cos m theta)``: multiplication by ``exp(+i m theta)``.
* ``pairing="half"`` pairs feature ``i`` with ``i + d/2`` (transformers, GPT-NeoX);
  ``pairing="interleaved"`` pairs ``2i`` with ``2i + 1`` (RoFormer, Meta Llama, GPT-J).
"""

from __future__ import annotations

import numpy as np

from . import _kernel
from ._checks import (
    as_float_array,
    as_inv_freq,
    as_positions,
    check_base,
    check_choice,
    check_count,
    check_dim,
    check_flag,
    check_pairing,
    check_positive_int,
    check_real,
    result_dtype,
)
from ._exact import ExactFrequencies
from ._kernel import (
    addition_cos_sin,
    addition_lo_tables,
    check_addition_positions,
    fast_cos_sin,
)
from .positions import plan

__all__ = [
    "ExactFrequencies",
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
    "reference_rotation",
    "rotation_matrix",
]

COS_SIN_METHODS = ("fast", "accurate", "addition", "correct")
# The methods whose tables are the correctly rounded values of the exact angles ("accurate"
# is the same computation under its older name).
_ROUNDED_METHODS = ("correct", "accurate")


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


def _resolve_frequencies(inv_freq_arg, dim, base) -> ExactFrequencies:
    """The exact frequencies: ``inv_freq`` as given (an :class:`ExactFrequencies`, or float64
    values taken as exact binary numbers) or the real ``base^(-2i/dim)``."""
    if isinstance(inv_freq_arg, ExactFrequencies):
        if dim is not None and 2 * len(inv_freq_arg) != check_dim(dim):
            raise ValueError(
                f"inv_freq has {len(inv_freq_arg)} entries but dim={dim} needs {dim // 2}"
            )
        return inv_freq_arg
    if inv_freq_arg is not None:
        return ExactFrequencies.binary(_resolve_inv_freq(inv_freq_arg, dim, base))
    _resolve_inv_freq(None, dim, base)  # the same checks and messages
    return ExactFrequencies.power(check_dim(dim), check_base(base))


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
        Token positions :math:`m` (finite; negative and fractional positions are accepted).
    inv_freq : array_like, shape (d/2,), or ExactFrequencies, optional
        Inverse frequencies, taken as exact binary values; or an :class:`ExactFrequencies`
        (a scaling method's exact frequencies,
        ``ROPE_SCALINGS[name].exact_frequencies(dim=..., base=..., ...)``). If omitted,
        ``dim`` (and ``base``) define the real numbers :math:`\theta_i = b^{-2i/d}`.
    dim : int, optional
        Rotary width; required when ``inv_freq`` is not given.
    base : float, default 10000.0
        Base used with ``dim``.
    attention_scaling : float, default 1.0
        Factor multiplied into both tables (YaRN's and LongRoPE's attention factor, as
        transformers applies it).
    method : {"fast", "correct", "accurate", "addition"}, default "fast"
        ``"fast"``: ``np.cos``/``np.sin`` of the float64 angle ``m * theta_i`` (the float64
        nearest each :math:`\theta_i`).
        ``"correct"``: the float64 nearest to :math:`s\cos(m\theta_i)` and
        :math:`s\sin(m\theta_i)` of the *exact* angle (correctly rounded, :math:`s` the
        attention scaling folded in before the rounding), bit-identical on every IEEE-754
        machine: no ``np.cos``/``np.sin``, only ``+ - *``, ``rint``, table look-ups and
        comparisons, with a proved error bound and Ziv's rounding test per entry and an exact
        integer fallback for the rare undecided entries (book section "Correctly rounded
        tables"). Domain: :math:`|m|\theta_i \le 2^{31}` rad, :math:`|s|` in
        :math:`[2^{-400}, 2^{400}]` or 0.
        ``"accurate"``: the same tables as ``"correct"`` (its former faithful algorithm,
        within 1 ulp of the correctly rounded value, was replaced by the correctly rounded
        one; the guarantee only became stronger).
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

    Raises
    ------
    ValueError
        For ``"correct"``/``"accurate"``: an angle :math:`|m|\theta_i` above :math:`2^{31}`
        rad (naming ``positions``) or a scale outside its range (naming
        ``attention_scaling``); for ``"addition"``: negative or fractional positions.

    Notes
    -----
    Book equation ``eq:rope-cos-sin``. The fast path's error grows with the angle: about
    1e-13 at m = 1e3 and 1e-10 at m = 1e6 relative to the exact angle, because the rounding of
    :math:`\theta_i` and of the product moves the angle.

    ``method="correct"`` equals the mpmath oracle (:func:`refimpl.oracle_cos_sin`) bit for
    bit: 0 mismatches on every sampled entry (``tests/test_correct.py`` on about 10^4 entries
    with the hard cases; ``make test-numerics`` on whole tables against MPFR;
    ``benchmarks/check_accurate_sample.py`` on 10^5 random entries). Cost
    (``benchmarks/bench_tables.py``, CPU-time ratios of the runs recorded in
    ``benchmarks/README.md``): about 1.9 times the fast path for runs of integer positions
    (angle addition from correctly rounded anchors), about 6 times for fractional positions;
    the mpmath oracle about 60 to 300 microseconds per entry, 10^3 to 10^4 times the fast
    path.

    Examples
    --------
    >>> c, s = cos_sin([0, 1], dim=4, base=100.0)
    >>> c.shape
    (2, 2)
    >>> float(c[1, 1]), float(s[1, 1])  # theta_1 = 100**(-1/2) = 0.1
    (0.9950041652780258, 0.09983341664682815)
    >>> c, s = cos_sin([2**31 - 1], dim=4, base=100.0, method="correct")
    >>> float(s[0, 0])  # sin(2^31 - 1), correctly rounded
    -0.7249165551445564
    """
    check_choice(method, "method", COS_SIN_METHODS)
    scale = check_real(attention_scaling, "attention_scaling")
    tables = _TableMethod(method, inv_freq, dim, base, scale)
    pos = as_positions(positions)
    tables.check(pos)
    return tables(pos)


class _TableMethod:
    """One of :data:`COS_SIN_METHODS` bound to its frequencies and scale: ``check(pos)``
    refuses positions outside the method's domain, ``self(pos)`` returns ``(cos, sin)`` of
    shape (len(pos), d/2). Shared by :func:`cos_sin`, :func:`apply_rope` and the streaming
    tables (which check a whole stream once and then compute it chunk by chunk)."""

    def __init__(self, method, inv_freq_arg, dim, base, scale):
        self.method, self.scale = method, scale
        self.freqs = _resolve_frequencies(inv_freq_arg, dim, base)
        if isinstance(inv_freq_arg, ExactFrequencies):
            self.theta = self.freqs.float64()  # the float64 nearest each exact theta
        elif inv_freq_arg is not None:
            self.theta = as_inv_freq(inv_freq_arg)
        else:
            self.theta = _inv_freq(dim, base)  # np.power's values, as the fast path has used
        if method in _ROUNDED_METHODS:
            from ._correct import check_scale

            check_scale(scale, method)
        self.lo_tables = addition_lo_tables(self.theta) if method == "addition" else None

    def check(self, pos):
        if self.method == "addition":
            check_addition_positions(pos)
        elif self.method in _ROUNDED_METHODS:
            from ._correct import check_domain, prepare

            check_domain(pos, prepare(self.freqs), self.method)

    def __call__(self, pos):
        if self.method == "fast":
            return fast_cos_sin(pos, self.theta, self.scale)
        if self.method == "addition":
            return addition_cos_sin(pos, self.theta, self.scale, self.lo_tables)
        from ._correct import correct_cos_sin

        return correct_cos_sin(pos, self.freqs, self.scale)


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


def reference_rotation(x, cos, sin, *, pairing: str = "half") -> np.ndarray:
    r"""The RoPE formula itself, pair by pair: the reference every faster form is held to.

    Parameters
    ----------
    x : array_like, shape (..., seq, r)
        The features to rotate (``r`` even).
    cos, sin : array_like, each shape (seq, r/2)
        Tables as :func:`cos_sin` returns them.
    pairing : {"half", "interleaved"}, default "half"

    Returns
    -------
    numpy.ndarray, shape (..., seq, r), float64
        :math:`y_a = x_a C - x_b S` and :math:`y_b = x_a S + x_b C` for every pair
        :math:`(a, b)` of :func:`pair_indices`, evaluated in float64.

    Notes
    -----
    Book equation ``eq:rope-elementwise``. :func:`apply_rope` and :func:`apply_rope_tables`
    (``fused=False``) are bit-identical to this function's result rounded once to the input's
    dtype, signed zeros included; the tests check it bit for bit.

    Examples
    --------
    >>> c, s = cos_sin([1], dim=2)
    >>> reference_rotation([[1.0, 0.0]], c, s).round(6)
    array([[0.540302, 0.841471]])
    """
    x64 = as_float_array(x, "x", min_ndim=2).astype(np.float64, copy=False)
    c = as_float_array(cos, "cos", ndim=2).astype(np.float64, copy=False)
    s = as_float_array(sin, "sin", ndim=2).astype(np.float64, copy=False)
    first, second = pair_indices(x64.shape[-1], pairing)
    if c.shape != s.shape or c.shape != (x64.shape[-2], first.shape[0]):
        raise ValueError(
            f"cos and sin must both have shape (seq, r/2) = {(x64.shape[-2], first.shape[0])}, "
            f"got {c.shape} and {s.shape}"
        )
    x1, x2 = x64[..., first], x64[..., second]
    y = np.empty_like(x64)
    y[..., first] = x1 * c - x2 * s  # [eq:rope-elementwise]
    y[..., second] = x1 * s + x2 * c  # [eq:rope-elementwise]
    return y


OUTPUT_ORDERS = ("same", "half")


class _Call:
    """The arguments every rotation call shares, validated before anything is written: the
    flags, ``x`` and ``out``, the rotated slice, the output order and the position jobs."""

    def __init__(self, x, out, positions, kw, *, rows_by_default):
        self.pairing = check_pairing(kw["pairing"])
        self.fused = check_flag(kw["fused"], "fused")
        self.check_finite = check_flag(kw["check_finite"], "check_finite")
        self.inverse = check_flag(kw["inverse"], "inverse")
        self.xa, self.out, self.given = _kernel.prepare_x_out(x, out)
        self.lo = check_count(kw["rotary_offset"], "rotary_offset")
        self.dim = self.xa.shape[-1]
        if self.lo >= self.dim:
            raise ValueError(f"rotary_offset={self.lo} must be below x's last dimension {self.dim}")
        order = check_choice(kw["output_order"], "output_order", OUTPUT_ORDERS)
        self.half_out = order == "half" and self.pairing == "interleaved"
        self.jobs = plan(
            self.xa,
            self.out,
            positions,
            offsets=kw["offsets"],
            cu_seqlens=kw["cu_seqlens"],
            cp_rank=kw["cp_rank"],
            cp_size=kw["cp_size"],
            rows_by_default=rows_by_default,
        )

    def run(self, r, make_tables):
        """Rotate features ``[lo, lo + r)``; ``make_tables(pos, n)`` gives the job's
        ``tables(p0, p1)`` (float64 cos, sin rows; sin already negated for ``inverse``)."""
        xa, lo = self.xa, self.lo
        if self.check_finite:  # up front: an error must leave out (and an in-place x) untouched
            _kernel.require_finite(xa[..., :lo])
            _kernel.require_finite(xa[..., lo + r :])
            if self.given:
                _kernel.require_finite(xa[..., lo : lo + r])
        check_blocks = self.check_finite and not self.given
        xv, ov, _ = self.jobs[0]
        chosen = _kernel.choose_form(xv, ov, r, self.pairing, self.fused, check_blocks)
        perm = pairing_permutation(r) if self.half_out else None  # [eq:rope-mla-order]
        with np.errstate(under="ignore"):
            for xv, ov, pos in self.jobs:
                tables = make_tables(pos, chosen[1])
                _kernel.rotate(xv, ov, lo, r, chosen, tables, check_blocks, perm)
        return self.out


_ROTATION_KEYWORDS = """
    offsets : int or array_like of int, shape (batch,), optional
        Position offset of each sequence (KV-cache decode): sequence ``b``'s token ``t`` sits
        at ``positions[t] + offsets[b]`` (``x`` then has shape ``(batch, ..., seq, dim)``).
        With ``cu_seqlens``, the position of each document's first token.
    cu_seqlens : array_like of int, shape (batch+1,), optional
        Packed variable-length batch: ``x`` has shape ``(T, ..., dim)`` (tokens first, as
        flash-attention's varlen layout), document ``b`` in rows ``cu_seqlens[b] ..
        cu_seqlens[b+1]-1``, positions restarting at each document (book equation
        ``eq:rope-varlen-positions``). ``positions`` must then be None.
    cp_rank, cp_size : int, optional
        Context parallelism: ``x`` holds the tokens of rank ``cp_rank`` of ``cp_size``,
        chunks ``r`` and ``2 cp - 1 - r`` of ``2 cp`` (book equation ``eq:rope-cp-shard``);
        ``positions`` (or ``cu_seqlens``) describe the whole sequences.
    rotary_offset : int, default 0
        Rotate features ``[rotary_offset, rotary_offset + r)`` and pass the others through
        (the trailing rotary slice of DeepSeek-V4, ggml's ``n_offs``).
    inverse : bool, default False
        Rotate by :math:`R(-\\theta)`: ``x1 c + x2 s, -x1 s + x2 c`` (the backward pass, or
        de-rotating an output; book equation ``eq:rope-inverse``).
    output_order : {"same", "half"}, default "same"
        ``"half"`` with ``pairing="interleaved"``: pairs come in adjacent (``2i, 2i+1``) and
        leave in half order (features ``i`` and ``i + r/2``), as MLA's rotary part does (book
        equation ``eq:rope-mla-order``). With ``pairing="half"`` both orders are the same."""


def apply_rope_tables(
    x,
    cos,
    sin,
    *,
    pairing: str = "half",
    out: np.ndarray | None = None,
    fused: bool = False,
    check_finite: bool = True,
    positions=None,
    offsets=None,
    cu_seqlens=None,
    cp_rank: int | None = None,
    cp_size: int | None = None,
    rotary_offset: int = 0,
    inverse: bool = False,
    output_order: str = "same",
) -> np.ndarray:
    r"""Rotate ``x`` with given cos/sin tables (the rotation step of :func:`apply_rope`).

    Parameters
    ----------
    x : array_like, shape (..., seq, dim)
        Queries or keys.
    cos, sin : array_like, each shape (P, r/2)
        Half-width tables as :func:`cos_sin` returns them (one value per pair, any scaling
        already folded in): row ``p`` holds position ``p`` when ``positions``, ``offsets`` or
        ``cu_seqlens`` are given, row ``t`` the ``t``-th token otherwise (then ``P = seq``).
        ``r <= dim`` features of ``x`` are rotated (the first ones unless
        ``rotary_offset``), the rest pass through unchanged.
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
        always checked. Every check runs before anything is written: a ValueError leaves
        ``out`` (and ``x``, in place) untouched.
    positions : array_like of int, shape (seq,) or (batch, seq), optional
        Rows of the tables for each token (integers in ``0 .. P-1``; flash-attention's and
        vLLM's cache lookup).
    {position_keywords}

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
    call = _Call(x, out, positions, locals(), rows_by_default=True)
    c = as_float_array(cos, "cos", ndim=2).astype(np.float64, copy=False)
    s = as_float_array(sin, "sin", ndim=2).astype(np.float64, copy=False)
    if c.shape != s.shape:
        raise ValueError(f"cos and sin must have the same shape, got {c.shape} and {s.shape}")
    r = 2 * c.shape[1]
    width = call.dim - call.lo
    if r == 0 or r > width:
        raise ValueError(
            f"cos has {c.shape[1]} columns: 2 * columns = {r} must be in 1..{width} "
            "(the rotated width of x)"
        )
    _check_table_rows(call.jobs, c.shape[0], call.xa.shape[-2])
    return call.run(r, lambda pos, n: _table_rows(c, s, pos, call.inverse, n))


def _check_table_rows(jobs, rows, seq):
    """Every position must be a row of the tables (or, without positions, every token)."""
    if jobs[0][2] is None:
        if rows != seq:
            raise ValueError(
                f"cos has {rows} rows but x has seq = {seq} "
                "(x must be (..., seq, dim) and cos, sin (seq, r/2))"
            )
        return
    for _, _, pos in jobs:
        if pos.size and (pos.min() < 0 or pos.max() >= rows or np.any(pos != np.floor(pos))):
            bad = pos[(pos < 0) | (pos >= rows) | (pos != np.floor(pos))][0]
            raise ValueError(
                f"positions must be integer rows of the tables, 0..{rows - 1} "
                f"(cos has {rows} rows); got {bad:g}, beyond the table"
            )


def _table_rows(c, s, pos, inverse, n):
    """``tables(p0, p1)`` for the rows ``pos`` of given tables (``None``: rows p0..p1-1)."""
    bc, bs = np.empty((n, c.shape[1])), np.empty((n, c.shape[1]))
    rows = None if pos is None else pos.astype(np.intp)

    def tables(p0, p1):
        m = p1 - p0
        if rows is None:
            cb, sb = c[p0:p1], s[p0:p1]  # views: the kernels only read them
        else:
            cb, sb = bc[:m], bs[:m]
            np.take(c, rows[p0:p1], axis=0, out=cb)
            np.take(s, rows[p0:p1], axis=0, out=sb)
        if inverse:
            sb = np.negative(sb, out=bs[:m])  # R(-theta)   [eq:rope-inverse]
        return cb, sb

    return tables


if apply_rope_tables.__doc__:  # (None under python -OO)
    apply_rope_tables.__doc__ = apply_rope_tables.__doc__.replace(
        "    {position_keywords}", _ROTATION_KEYWORDS.strip("\n")
    )


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
    offsets=None,
    cu_seqlens=None,
    cp_rank: int | None = None,
    cp_size: int | None = None,
    rotary_offset: int = 0,
    inverse: bool = False,
    output_order: str = "same",
    table_method: str = "fast",
) -> np.ndarray:
    r"""Rotate queries or keys by their positions (element-wise RoPE).

    Parameters
    ----------
    x : array_like, shape (..., seq, dim)
        Queries or keys; the last axis holds the features of one head.
    positions : array_like, shape (seq,) or (batch, seq), or None
        Position of every token (integers of any dtype, or reals; within 2**53 in magnitude,
        refused beyond rather than rounded). ``(batch, seq)`` position ids broadcast against
        ``x`` of shape ``(batch, ..., seq, dim)``. None with ``cu_seqlens``.
    base : float, default 10000.0
        Base of the frequencies when ``inv_freq`` is not given.
    inv_freq : array_like, shape (rotary_dim/2,), or ExactFrequencies, optional
        Explicit inverse frequencies (e.g. from a scaling method); overrides ``base``. An
        :class:`ExactFrequencies` gives its exact values to ``table_method="correct"`` and
        their float64 roundings to ``"fast"``.
    pairing : {"half", "interleaved"}, default "half"
        Which features form a pair: ``i`` with ``i + r/2`` (half) or ``2i`` with ``2i+1``.
    attention_scaling : float, default 1.0
        Multiplies the rotated features (transformers folds YaRN's factor into cos/sin).
    rotary_dim : int, optional
        Rotate only the first ``rotary_dim`` features and pass the rest through unchanged
        (partial rotary). Default: ``dim - rotary_offset``; an ``inv_freq`` with fewer than
        ``(dim - rotary_offset) / 2`` entries needs ``rotary_dim`` (a partial rotation is
        never implied).
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
    {position_keywords}
    table_method : {"fast", "correct", "accurate", "addition"}, default "fast"
        How the tables are built, as ``cos_sin(..., method=table_method)`` builds them:
        ``"correct"`` rotates by the correctly rounded cos and sin of the exact angles (with
        ``base``, of the real :math:`b^{-2i/r}`); its domain (angles up to :math:`2^{31}` rad)
        is checked before anything is written.

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

    Every check (shapes, positions, angles that would overflow float64, finiteness) runs
    before anything is written, whatever NumPy's error state: a ValueError leaves ``out`` (and
    ``x``, in place) untouched.

    Exactness: with ``fused=False`` every entry is bit-identical to the float64 expressions
    ``x1 c - x2 s`` and ``x1 s + x2 c`` of :func:`reference_rotation` with
    ``c, s = cos_sin(positions, ..., method=table_method)`` (by default ``np.cos`` and
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
    call = _Call(x, out, positions, locals(), rows_by_default=False)
    check_choice(table_method, "table_method", COS_SIN_METHODS)
    width = call.dim - call.lo
    exact = inv_freq if isinstance(inv_freq, ExactFrequencies) else None
    if inv_freq is not None:
        theta = exact.float64() if exact is not None else as_inv_freq(inv_freq)
        r = check_dim(rotary_dim, "rotary_dim") if rotary_dim is not None else 2 * theta.shape[0]
        if theta.shape[0] * 2 != r:
            raise ValueError(
                f"inv_freq has {theta.shape[0]} entries but rotary_dim={r} needs {r // 2}"
            )
        if rotary_dim is None and r < width:
            raise ValueError(
                f"inv_freq has {theta.shape[0]} entries for {width} features: rotating only the "
                f"first {r} is partial rotary; pass rotary_dim={r} to say so (or "
                f"{width // 2} frequencies)"
            )
    else:
        r = check_dim(rotary_dim, "rotary_dim") if rotary_dim is not None else width
        theta = None
    if r > width:
        raise ValueError(
            f"rotary_dim={r} exceeds the feature dimension of x ({call.dim})"
            + (f" after rotary_offset={call.lo}" if call.lo else "")
        )
    if r % 2:
        raise ValueError(f"x's last dimension must be even (features are paired), got {width}")
    if theta is None:
        theta = _inv_freq(r, base)
    scale = check_real(attention_scaling, "attention_scaling")
    _check_angles(call.jobs, theta)
    built = None
    if table_method != "fast":  # its domain is checked before anything is written
        given = exact if exact is not None else (theta if inv_freq is not None else None)
        built = _TableMethod(table_method, given, None if given is not None else r, base, scale)
        for _, _, pos in call.jobs:
            built.check(pos)

    def make_tables(pos, n):  # cos_sin's tables for these positions, bit for bit
        buf = np.empty((n, r // 2)), np.empty((n, r // 2))

        def tables(p0, p1):
            m = p1 - p0
            if built is None:
                c, s = fast_cos_sin(pos[p0:p1], theta, scale, out=(buf[0][:m], buf[1][:m]))
            else:
                c, s = built(pos[p0:p1])
            if call.inverse:
                np.negative(s, out=s)  # R(-theta)   [eq:rope-inverse]
            return c, s

        return tables

    return call.run(r, make_tables)


def _check_angles(jobs, theta):
    """The angles m theta must be finite float64 numbers (cos and sin of inf are NaN); the
    largest |m| times the largest theta bounds every product, so one product decides."""
    big = max((float(np.max(np.abs(pos))) for _, _, pos in jobs if pos.size), default=0.0)
    with np.errstate(over="ignore"):
        largest = big * float(np.max(theta))
    if not np.isfinite(largest):
        raise ValueError(
            f"positions times inv_freq overflow float64 (|position| up to {big:g}, "
            f"inv_freq up to {float(np.max(theta)):g}): the angles would be infinite"
        )


if apply_rope.__doc__:
    apply_rope.__doc__ = apply_rope.__doc__.replace(
        "    {position_keywords}", _ROTATION_KEYWORDS.strip("\n")
    )


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
