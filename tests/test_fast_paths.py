"""Fast paths of apply_rope / apply_rope_tables: bit-identity with the straightforward float64
formula (signed zeros included), block boundaries and head groups, strided and transposed
inputs, in-place rotation, the fused paths' stated bounds."""

import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import refimpl
from refimpl import _kernel


def straightforward(x, pos, theta, pairing, scale=1.0, rotary_dim=None):
    """x1 c - x2 s, x1 s + x2 c in float64 with c, s = cos/sin of the float64 angle."""
    x64 = np.asarray(x, dtype=np.float64)
    h = theta.shape[0]
    ang = np.multiply.outer(np.asarray(pos, dtype=np.float64), theta)
    c, s = np.cos(ang) * scale, np.sin(ang) * scale
    if scale == 1.0:
        c, s = np.cos(ang), np.sin(ang)
    res = x64.copy()
    if pairing == "half":
        i1, i2 = np.arange(h), np.arange(h, 2 * h)
    else:
        i1, i2 = np.arange(0, 2 * h, 2), np.arange(1, 2 * h, 2)
    x1, x2 = x64[..., i1], x64[..., i2]
    res[..., i1] = x1 * c - x2 * s
    res[..., i2] = x1 * s + x2 * c
    return res.astype(np.asarray(x).dtype if np.asarray(x).dtype.kind == "f" else np.float64)


@pytest.fixture(params=[7, 40, 400])
def tiny_blocks(monkeypatch, request):
    """Force many small blocks: one position per block (7 elements), several positions per
    block (40), and blocks of whole sequences for a group of heads (400)."""
    monkeypatch.setattr(_kernel, "_BLOCK_ELEMS", request.param)


def bits(a):
    """The bit patterns of a float array (so that -0.0 and 0.0 differ)."""
    a = np.ascontiguousarray(a)
    return a.view({2: np.uint16, 4: np.uint32, 8: np.uint64}[a.itemsize])


shapes = st.tuples(
    st.integers(1, 3), st.integers(1, 9), st.sampled_from([2, 4, 8, 10]), st.integers(0, 4)
)


@given(
    shape=shapes,
    pairing=st.sampled_from(["half", "interleaved"]),
    seed=st.integers(0, 99),
    block=st.sampled_from([7, 40, 1 << 16]),
)
def test_float64_bit_identical_to_the_straightforward_formula(shape, pairing, seed, block):
    heads, seq, r, extra = shape
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((heads, seq, r + extra))
    x[rng.random(x.shape) < 0.2] = -0.0  # signed zeros must come out with the formula's sign
    x[rng.random(x.shape) < 0.1] = 0.0
    pos = rng.integers(0, 10**6, seq)
    pos[rng.random(seq) < 0.3] = 0  # sin = 0: products with signed zeros
    theta = refimpl.inv_freq(r, 500.0)
    old = _kernel._BLOCK_ELEMS
    _kernel._BLOCK_ELEMS = block
    try:
        got = refimpl.apply_rope(
            x, pos, inv_freq=theta, pairing=pairing, attention_scaling=1.25, rotary_dim=r
        )
    finally:
        _kernel._BLOCK_ELEMS = old
    want = straightforward(x, pos, theta, pairing, scale=1.25)
    assert np.array_equal(bits(got), bits(want))


@pytest.mark.parametrize("pairing", ["half", "interleaved"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16])
@pytest.mark.parametrize("layout", ["transposed", "strided-features", "non-mergeable"])
def test_strided_and_transposed_inputs(tiny_blocks, pairing, dtype, layout):
    """Views as models make them: (batch, seq, heads, d) transposed to (batch, heads, seq, d);
    every other feature of a wider array; leading axes that cannot be merged into one."""
    rng = np.random.default_rng(9)
    if layout == "transposed":
        x = rng.standard_normal((2, 11, 3, 8)).astype(dtype).transpose(0, 2, 1, 3)
    elif layout == "strided-features":
        x = rng.standard_normal((2, 3, 11, 16)).astype(dtype)[..., ::2]
    else:
        x = rng.standard_normal((4, 3, 11, 8)).astype(dtype)[::2, ::-1]
    pos = np.arange(11) * 7919
    theta = refimpl.inv_freq(8)
    want = straightforward(x, pos, theta, pairing)
    got = refimpl.apply_rope(x, pos, inv_freq=theta, pairing=pairing)
    assert np.array_equal(bits(got), bits(want))
    out = np.empty((2, 3, 11, 16), dtype=dtype)[..., ::2]  # a strided out as well
    refimpl.apply_rope(x, pos, inv_freq=theta, pairing=pairing, out=out)
    assert np.array_equal(bits(out), bits(want))
    y = x.copy()
    refimpl.apply_rope(y, pos, inv_freq=theta, pairing=pairing, out=y)
    assert np.array_equal(bits(y), bits(want))


@pytest.mark.parametrize("pairing", ["half", "interleaved"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16])
def test_block_boundaries_and_dtypes(tiny_blocks, pairing, dtype):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 3, 37, 12)).astype(dtype)
    pos = np.arange(37) * 1000
    theta = refimpl.inv_freq(8)
    got = refimpl.apply_rope(x, pos, inv_freq=theta, pairing=pairing, rotary_dim=8)
    assert got.dtype == dtype
    # float32/float16: the float64 result rounded once
    assert np.array_equal(got, straightforward(x, pos, theta, pairing))


@pytest.mark.parametrize("pairing", ["half", "interleaved"])
def test_apply_rope_tables_matches_apply_rope(tiny_blocks, pairing):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((4, 21, 16)).astype(np.float32)
    pos = np.arange(21) + 5
    c, s = refimpl.cos_sin(pos, dim=16)
    a = refimpl.apply_rope_tables(x, c, s, pairing=pairing)
    b = refimpl.apply_rope(x, pos, pairing=pairing)
    assert np.array_equal(a, b)


@pytest.mark.parametrize("pairing", ["half", "interleaved"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("rotary_dim", [None, 6])
def test_in_place_equals_out_of_place(tiny_blocks, pairing, dtype, rotary_dim):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((3, 19, 10)).astype(dtype)
    want = refimpl.apply_rope(x, np.arange(19), pairing=pairing, rotary_dim=rotary_dim or 10)
    y = x.copy()
    res = refimpl.apply_rope(y, np.arange(19), pairing=pairing, rotary_dim=rotary_dim, out=y)
    assert res is y
    assert np.array_equal(y, want)


def test_out_overlapping_x_with_an_offset_is_rejected():
    buf = np.zeros((5, 4))
    x, out = buf[:4], buf[1:]
    with pytest.raises(ValueError, match="out must be x itself"):
        refimpl.apply_rope(x, np.arange(4), out=out)


def test_out_writes_into_the_given_array():
    x = np.ones((3, 4), dtype=np.float32)
    out = np.empty_like(x)
    assert refimpl.apply_rope(x, [0, 1, 2], out=out) is out
    with pytest.raises(ValueError, match="out must have dtype float32"):
        refimpl.apply_rope(x, [0, 1, 2], out=np.empty((3, 4)))


def test_non_finite_x_is_rejected_even_in_blocks(tiny_blocks):
    x = np.ones((2, 30, 4))
    x[1, 29, 3] = np.nan
    with pytest.raises(ValueError, match="x must contain only finite values"):
        refimpl.apply_rope(x, np.arange(30))
    x[1, 29, 3] = 0.0
    x[0, 3, 1] = np.inf
    with pytest.raises(ValueError, match="x must contain only finite values"):
        refimpl.apply_rope(x, np.arange(30), rotary_dim=2)  # in the pass-through part


@pytest.mark.parametrize("pairing", ["half", "interleaved"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16])
def test_fused_within_its_stated_bound(tiny_blocks, pairing, dtype):
    rng = np.random.default_rng(4)
    x = (rng.standard_normal((3, 41, 16)) * 10.0 ** rng.uniform(-3, 3, (3, 41, 1))).astype(dtype)
    pos = np.arange(41) * 977
    theta = refimpl.inv_freq(16)
    exact = straightforward(x.astype(np.float64), pos, theta, pairing)
    got = refimpl.apply_rope(x, pos, pairing=pairing, fused=True)
    assert got.dtype == dtype
    ang = np.multiply.outer(pos.astype(np.float64), theta)
    c, s = np.cos(ang), np.sin(ang)
    i1, i2 = refimpl.pair_indices(16, pairing)
    x1, x2 = x[..., i1].astype(np.float64), x[..., i2].astype(np.float64)
    size = np.abs(x1 * c) + np.abs(x2 * s)  # |x1 c| + |x2 s|; the same for the second member
    size = np.maximum(size, np.abs(x1 * s) + np.abs(x2 * c))
    if dtype == np.float16:  # float64 arithmetic, then one rounding to float16
        want = refimpl.apply_rope(x, pos, pairing=pairing)
        if pairing == "half":  # the exact form itself
            assert np.array_equal(bits(got), bits(want))
        # interleaved: the complex product (within 2^-51 of the exact sum) rounded once: at
        # most one float16 unit from the default (2^-24: the subnormal spacing)
        err = np.abs(got.astype(np.float64) - want.astype(np.float64))
        assert np.all(err[..., i1] <= 2.0**-10 * size + 2.0**-24)
        assert np.all(err[..., i2] <= 2.0**-10 * size + 2.0**-24)
        return
    err = np.abs(got.astype(np.float64) - exact)
    if dtype == np.float32:  # float32 arithmetic with float32 tables
        unit = 2.0**-22
        assert err.max() > 0  # really float32 arithmetic, not a copy of the default
    else:  # float64: half is the exact form; interleaved may round x1 c - x2 s once (FMA)
        unit = 0.0 if pairing == "half" else 2.0**-51
    assert np.all(err[..., i1] <= unit * size)
    assert np.all(err[..., i2] <= unit * size)


def test_fused_on_non_contiguous_features_falls_back_to_the_exact_form():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((7, 16))[:, ::2]  # stride 2 on the features
    got = refimpl.apply_rope(x, np.arange(7), pairing="interleaved", fused=True)
    assert np.array_equal(got, straightforward(x, np.arange(7), refimpl.inv_freq(8), "interleaved"))


def test_apply_rope_tables_argument_errors():
    x = np.ones((3, 8))
    c = np.ones((3, 4))
    with pytest.raises(ValueError, match="cos and sin must have the same shape"):
        refimpl.apply_rope_tables(x, c, np.ones((3, 3)))
    with pytest.raises(ValueError, match="cos has 2 rows but x has seq = 3"):
        refimpl.apply_rope_tables(x, c[:2], c[:2])
    with pytest.raises(ValueError, match=r"2 \* columns = 10 must be in 1\.\.8"):
        refimpl.apply_rope_tables(x, np.ones((3, 5)), np.ones((3, 5)))
    with pytest.raises(ValueError, match="cos must contain only finite values"):
        refimpl.apply_rope_tables(x, c * np.nan, c)


def test_cos_sin_fast_is_cos_and_sin_of_the_float64_angle():
    pos = np.array([0, 1, 7, 123456, 2**30])
    theta = refimpl.inv_freq(64)
    c, s = refimpl.cos_sin(pos, theta, attention_scaling=0.5)
    ang = np.multiply.outer(pos.astype(np.float64), theta)
    assert np.array_equal(c, np.cos(ang) * 0.5)
    assert np.array_equal(s, np.sin(ang) * 0.5)


@pytest.mark.parametrize("pairing", ["half", "interleaved"])
@pytest.mark.parametrize("fused", [False, True])
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_finite_check_rejects_nan_and_inf_but_not_large_finite_values(pairing, fused, dtype):
    big = np.finfo(dtype).max / 2  # the block's sum overflows; the entries are finite
    x = np.full((2, 8, 4), big, dtype=dtype)
    c, s = refimpl.cos_sin(np.arange(8), dim=4)
    kw = dict(pairing=pairing, fused=fused)
    got = refimpl.apply_rope_tables(x, c, s, **kw)
    assert got.shape == x.shape
    for bad in (np.nan, np.inf, -np.inf):
        y = x.copy()
        y[1, 5, 3] = bad
        with pytest.raises(ValueError, match="x must contain only finite values"):
            refimpl.apply_rope_tables(y, c, s, **kw)


@pytest.mark.parametrize("fused", [False, True])
@pytest.mark.parametrize("pairing", ["half", "interleaved"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_check_finite_false_skips_the_check_and_changes_nothing_else(
    tiny_blocks, fused, pairing, dtype
):
    rng = np.random.default_rng(6)
    x = rng.standard_normal((2, 23, 12)).astype(dtype)
    pos = np.arange(23) * 311
    kw = dict(pairing=pairing, fused=fused, rotary_dim=8)
    checked = refimpl.apply_rope(x, pos, **kw)
    assert np.array_equal(refimpl.apply_rope(x, pos, check_finite=False, **kw), checked)
    c, s = refimpl.cos_sin(pos, dim=8)
    tkw = dict(pairing=pairing, fused=fused)
    checked_t = refimpl.apply_rope_tables(x, c, s, **tkw)
    assert np.array_equal(refimpl.apply_rope_tables(x, c, s, check_finite=False, **tkw), checked_t)
    y = x.copy()
    y[1, 17, 2] = np.nan  # rotated feature: NaN reaches the pair it belongs to
    y[0, 4, 10] = np.inf  # pass-through feature: copied unchanged
    with pytest.raises(ValueError, match="x must contain only finite values"):
        refimpl.apply_rope(y, pos, **kw)
    got = refimpl.apply_rope(y, pos, check_finite=False, **kw)
    first, second = refimpl.pair_indices(8, pairing)
    k = int(np.nonzero((first == 2) | (second == 2))[0][0])
    partner = {int(first[k]), int(second[k])}
    bad = np.zeros(x.shape, dtype=bool)
    bad[1, 17, sorted(partner)] = True
    assert np.all(np.isnan(got[bad]))
    assert got[0, 4, 10] == np.inf
    bad[0, 4, 10] = True
    assert np.array_equal(got[~bad], checked[~bad])


def test_check_finite_must_be_a_bool():
    with pytest.raises(TypeError, match=r"check_finite must be a boolean \(True or False\)"):
        refimpl.apply_rope(np.ones((2, 4)), [0, 1], check_finite=0)
    with pytest.raises(TypeError, match=r"check_finite must be a boolean \(True or False\)"):
        refimpl.apply_rope_tables(
            np.ones((2, 4)), np.ones((2, 2)), np.zeros((2, 2)), check_finite=None
        )


@pytest.mark.parametrize("pairing", ["half", "interleaved"])
@pytest.mark.parametrize("fused", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_scratch_memory_is_bounded_by_the_block_not_by_x(pairing, fused, dtype):
    """No temporary the size of x: with out given, the peak allocation is a few block-sized
    buffers (tables included), far below x itself; without out, only the result is added."""
    import tracemalloc

    x = np.ones((8, 8192, 128), dtype=dtype)  # 32 or 64 MiB
    pos = np.arange(8192)
    c, s = refimpl.cos_sin(pos, dim=128)
    out = np.empty_like(x)
    bound = 8 * _kernel._BLOCK_ELEMS * 8 + (1 << 16)  # eight float64 blocks (4 MiB) and change
    assert bound < x.nbytes / 4
    for call in (
        lambda o: refimpl.apply_rope(x, pos, pairing=pairing, fused=fused, out=o),
        lambda o: refimpl.apply_rope_tables(x, c, s, pairing=pairing, fused=fused, out=o),
    ):
        for o, allowed in ((out, bound), (None, bound + x.nbytes)):
            tracemalloc.start()
            try:
                call(o)
                peak = tracemalloc.get_traced_memory()[1]
            finally:
                tracemalloc.stop()
            assert peak <= allowed, (peak, allowed)


@pytest.mark.parametrize("rotary_dim", [None, 10])
def test_fused_half_float32_is_the_straightforward_formula_in_float32(tiny_blocks, rotary_dim):
    """fused=True, half pairing, float32 input: bit for bit x1 c - x2 s, x1 s + x2 c evaluated in
    float32 with the float64 tables rounded once to float32 (what a float32 model computes)."""
    rng = np.random.default_rng(11)
    x = rng.standard_normal((3, 29, 16)).astype(np.float32)
    x[rng.random(x.shape) < 0.1] = -0.0
    pos = np.arange(29) * 4099
    r = rotary_dim or 16
    got = refimpl.apply_rope(x, pos, pairing="half", fused=True, rotary_dim=rotary_dim)
    c, s = refimpl.cos_sin(pos, dim=r)
    c32, s32 = c.astype(np.float32), s.astype(np.float32)
    x1, x2 = x[..., : r // 2], x[..., r // 2 : r]
    want = x.copy()
    want[..., : r // 2] = x1 * c32 - x2 * s32  # float32 products and sum
    want[..., r // 2 : r] = x1 * s32 + x2 * c32
    assert np.array_equal(bits(got), bits(want))


@pytest.mark.parametrize("pairing", ["half", "interleaved"])
@pytest.mark.parametrize("fused", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_finite_check_on_blocks_large_enough_for_blas(pairing, fused, dtype):
    """Blocks of 2^15 elements are summed by BLAS matrix-vector products: NaN and inf anywhere
    are still found, and sums that overflow on finite values still pass."""
    x = np.ones((2, 512, 64), dtype=dtype)
    pos = np.arange(512)
    c, s = refimpl.cos_sin(pos, dim=64)
    kw = dict(pairing=pairing, fused=fused)
    for where in [(0, 0, 0), (1, 511, 63), (1, 300, 17)]:
        for bad in (np.nan, np.inf, -np.inf):
            y = x.copy()
            y[where] = bad
            with warnings.catch_warnings():
                warnings.simplefilter("error")  # the error, not a NumPy warning first
                with pytest.raises(ValueError, match="x must contain only finite values"):
                    refimpl.apply_rope_tables(y, c, s, **kw)
    big = np.full_like(x, np.finfo(dtype).max / 4)  # finite; the block sums overflow
    got = refimpl.apply_rope_tables(big, c, s, **kw)
    assert got.shape == x.shape
    cn = c.copy()
    cn[400, 5] = np.nan  # the tables (2^15 entries) are checked the same way
    with pytest.raises(ValueError, match="cos must contain only finite values"):
        refimpl.apply_rope_tables(x, cn, s, **kw)
