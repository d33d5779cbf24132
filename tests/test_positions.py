"""Positions as engines pass them: (B, S) ids, offsets, packed cu_seqlens, context-parallel
shards, rotary_offset, inverse and MLA's output order, each bit-identical to a per-token loop
that computes the token's position from its definition and rotates it alone; the errors that
name the argument; the bad-input items of issue 17 that concern the rotation."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from refimpl.positions import context_parallel_indices, varlen_positions
from refimpl.rotary import apply_rope, apply_rope_tables, cos_sin, inv_freq

# ---------------------------------------------------------------- the per-token loop oracle


def chunk_rows(length, rank, cp):
    """(local row, index in the full sequence) of the tokens rank ``rank`` of ``cp`` holds:
    chunks ``rank`` and ``2 cp - 1 - rank`` of ``2 cp`` equal chunks, in that order."""
    c = length // (2 * cp)
    rows = []
    for n, chunk in enumerate((rank, 2 * cp - 1 - rank)):
        rows += [(n * c + j, chunk * c + j) for j in range(c)]
    return rows


def rotate_token(v, position, table, pairing, lo, inverse, half_out):
    """One token's feature list rotated pair by pair; ``table(i) -> (c, s)`` for the position."""
    out = [float(t) for t in v]
    h = table.h
    for i in range(h):
        a, b = (i, i + h) if pairing == "half" else (2 * i, 2 * i + 1)
        c, s = table(position, i)
        if inverse:
            s = -s
        x1, x2 = float(v[lo + a]), float(v[lo + b])
        oa, ob = (i, i + h) if half_out else (a, b)
        out[lo + oa] = x1 * c - x2 * s
        out[lo + ob] = x1 * s + x2 * c
    return out


class AngleTable:
    """cos and sin of ``position * theta_i`` (times the scale), from ``math``."""

    def __init__(self, theta, scale=1.0):
        self.theta, self.scale, self.h = [float(t) for t in theta], scale, len(theta)

    def __call__(self, position, i):
        ang = position * self.theta[i]
        return math.cos(ang) * self.scale, math.sin(ang) * self.scale


class RowTable:
    """Row ``position`` of given tables (``apply_rope_tables``)."""

    def __init__(self, c, s):
        self.c, self.s, self.h = c, s, c.shape[1]

    def __call__(self, position, i):
        return float(self.c[int(position), i]), float(self.s[int(position), i])


def token_positions(case):
    """[(index tuple into x's leading axes, position)] for every token, from the definitions."""
    tokens = []
    cp = case["cp"]
    if case["cu"] is not None:
        cu, off = case["cu"], case["offsets"]
        w = 1 if cp is None else cp[1]
        for b in range(len(cu) - 1):
            length, start = cu[b + 1] - cu[b], cu[b] // w
            rows = [(j, j) for j in range(length)] if cp is None else chunk_rows(length, *cp)
            for local, full in rows:
                tokens.append(((start + local,), full + (off[b] if off is not None else 0)))
        return tokens
    pos, off, batch = case["positions"], case["offsets"], case["batch"]
    for b in range(batch):
        row = pos[b] if np.ndim(pos) == 2 else pos
        full_len = len(row)
        rows = [(j, j) for j in range(full_len)] if cp is None else chunk_rows(full_len, *cp)
        for local, full in rows:
            p = row[full] if row is not None else full
            p = float(p) + (float(off[b]) if off is not None else 0.0)
            tokens.append(((b, local), p))
    return tokens


def loop_oracle(x, case, table):
    """Rotate every token of ``x`` alone at the position the definitions give it."""
    want = np.array(x, dtype=np.float64)
    for index, p in token_positions(case):
        if case["cu"] is not None:
            heads = [(index[0], hh) for hh in range(x.shape[1])]
        else:
            heads = [(index[0], hh, index[1]) for hh in range(x.shape[1])]
        for ix in heads:
            want[ix] = rotate_token(
                x[ix], p, table, case["pairing"], case["lo"], case["inverse"], case["half_out"]
            )
    return want.astype(x.dtype)


# ---------------------------------------------------------------- strategies

INT_DTYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]


@st.composite
def cases(draw):
    """A random call: the position form, the layout keywords and a matching x."""
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    form = draw(st.sampled_from(["ids", "shared+offsets", "packed"]))
    cp = draw(st.sampled_from([None, (0, 1), (0, 2), (1, 2), (2, 3)]))
    w = 1 if cp is None else cp[1]
    h_pairs = draw(st.integers(1, 4))
    lo = draw(st.integers(0, 3))
    extra = draw(st.integers(0, 2))
    dim = lo + 2 * h_pairs + extra
    heads = draw(st.integers(1, 3))
    dtype = draw(st.sampled_from([np.float64, np.float32]))
    pos_dtype = draw(st.sampled_from([*INT_DTYPES, np.float64]))
    case = dict(cp=cp, lo=lo, r=2 * h_pairs, pairing=draw(st.sampled_from(["half", "interleaved"])))
    case["inverse"] = draw(st.booleans())
    case["half_out"] = draw(st.booleans()) and case["pairing"] == "interleaved"
    case["order"] = "half" if case["half_out"] else "same"
    if form == "packed":
        n_docs = draw(st.integers(1, 4))
        lengths = [2 * w * draw(st.integers(0, 3)) for _ in range(n_docs)]
        case["cu"] = [0, *np.cumsum(lengths).tolist()]
        case["offsets"] = rng.integers(0, 100, n_docs).tolist() if draw(st.booleans()) else None
        case["positions"], case["batch"] = None, n_docs
        x = rng.standard_normal((case["cu"][-1] // w, heads, dim))
    else:
        batch, seq = draw(st.integers(1, 3)), 2 * w * draw(st.integers(1, 3))
        shape = (batch, seq) if form == "ids" else (seq,)
        top = 120 if pos_dtype in (np.int8, np.uint8) else 50000
        pos = rng.integers(0, top, shape).astype(pos_dtype)
        if pos_dtype == np.float64:
            pos = pos + rng.random(shape)  # fractional positions are legal for apply_rope
        case.update(cu=None, positions=pos, batch=batch)
        case["offsets"] = (
            rng.integers(0, 100, batch) if form != "ids" or draw(st.booleans()) else None
        )
        x = rng.standard_normal((batch, heads, seq // w, dim))
    return case, x.astype(dtype)


def _keywords(case):
    kw = dict(
        pairing=case["pairing"],
        rotary_offset=case["lo"],
        inverse=case["inverse"],
        output_order=case["order"],
        offsets=case["offsets"],
        cu_seqlens=case["cu"],
    )
    if case["cp"] is not None:
        kw.update(cp_rank=case["cp"][0], cp_size=case["cp"][1])
    return kw


def bits(a):
    a = np.ascontiguousarray(a)
    return a.view({2: np.uint16, 4: np.uint32, 8: np.uint64}[a.itemsize])


# ---------------------------------------------------------------- bit identity


@given(cases(), st.sampled_from([1.0, 0.75]))
def test_apply_rope_equals_the_per_token_loop(drawn, scale):
    case, x = drawn
    theta = inv_freq(case["r"], 777.0)
    kw = {**_keywords(case), "rotary_dim": case["r"]}
    got = apply_rope(x, case["positions"], inv_freq=theta, attention_scaling=scale, **kw)
    want = loop_oracle(x, case, AngleTable(theta, scale))
    assert np.array_equal(bits(got), bits(want))
    y = x.copy()  # in place: the same bits
    assert (
        apply_rope(y, case["positions"], inv_freq=theta, attention_scaling=scale, out=y, **kw) is y
    )
    assert np.array_equal(bits(y), bits(want))


@given(cases())
def test_apply_rope_tables_looks_rows_up_like_the_loop(drawn):
    case, x = drawn
    if case["positions"] is not None:
        if case["positions"].dtype.kind == "f":
            case["positions"] = np.floor(case["positions"]).astype(np.int64)  # table rows
    top_pos = 0 if case["positions"] is None else int(np.max(case["positions"]))
    top_off = 0 if case["offsets"] is None else int(np.max(case["offsets"]))
    rows = 1 + top_pos + top_off + 64
    if case["cu"] is not None:
        rows = max(rows, case["cu"][-1] + 100)
    c, s = cos_sin(np.arange(rows), dim=case["r"], base=3000.0, attention_scaling=1.5)
    got = apply_rope_tables(x, c, s, positions=case["positions"], **_keywords(case))
    want = loop_oracle(x, case, RowTable(c, s))
    assert np.array_equal(bits(got), bits(want))


def test_tables_without_positions_are_indexed_by_row_and_accept_offsets():
    """flash-attention's seqlen_offsets: cos/sin (seqlen_ro, r/2), token t of sequence b reads
    row offsets[b] + t."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, 2, 5, 8))
    c, s = cos_sin(np.arange(40), dim=8)
    got = apply_rope_tables(x, c, s, offsets=[0, 7, 30])
    for b, o in enumerate([0, 7, 30]):
        assert np.array_equal(got[b], apply_rope(x[b], np.arange(5) + o))


def test_decode_one_token_per_sequence_at_different_positions():
    """Batched decode: x (B, H, 1, D), each sequence's new token at its cache length."""
    rng = np.random.default_rng(2)
    x = rng.standard_normal((4, 3, 1, 16))
    lengths = np.array([5, 0, 1000, 77], dtype=np.int32)
    got = apply_rope(x, [0], offsets=lengths)
    for b in range(4):
        assert np.array_equal(got[b], apply_rope(x[b], [int(lengths[b])]))
    ids = apply_rope(x, lengths[:, None])  # the same as (B, 1) position ids
    assert np.array_equal(ids, got)


def test_context_parallel_ranks_together_equal_the_whole_sequence():
    rng = np.random.default_rng(3)
    seq, cp = 24, 3
    x = rng.standard_normal((2, seq, 8))
    pos = np.arange(seq) + 11
    whole = apply_rope(x, pos)
    for rank in range(cp):
        idx = context_parallel_indices(seq, rank, cp)
        shard = apply_rope(x[:, idx], pos, cp_rank=rank, cp_size=cp)
        assert np.array_equal(shard, whole[:, idx])


@given(st.lists(st.integers(0, 6), min_size=1, max_size=5), st.sampled_from([1, 2, 3]))
def test_varlen_positions_restart_per_document(lengths, cp):
    lengths = [2 * cp * n for n in lengths]
    cu = np.concatenate([[0], np.cumsum(lengths)])
    off = np.arange(len(lengths)) * 1000
    got = varlen_positions(cu, off, cp_rank=cp - 1, cp_size=cp)
    want = []
    for b, n in enumerate(lengths):
        want += [full + off[b] for _, full in chunk_rows(n, cp - 1, cp)]
    assert got.tolist() == want


def test_integer_dtypes_give_the_same_bits():
    x = np.random.default_rng(4).standard_normal((2, 9, 8))
    ref = apply_rope(x, np.arange(9) * 13)
    for dt in INT_DTYPES:
        assert np.array_equal(apply_rope(x, (np.arange(9) * 13).astype(dt)), ref), dt


def test_inverse_undoes_the_rotation_and_mla_order_is_the_permuted_interleaved_result():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((3, 10, 12))
    pos = rng.integers(0, 10**5, 10)
    y = apply_rope(x, pos, rotary_offset=4, rotary_dim=8)
    assert np.array_equal(y[..., :4], x[..., :4])
    assert np.allclose(apply_rope(y, pos, rotary_offset=4, inverse=True), x, atol=1e-12)
    assert np.array_equal(apply_rope(x, -pos), apply_rope(x, pos, inverse=True))
    mla = apply_rope(x, pos, pairing="interleaved", output_order="half", rotary_dim=8)
    inter = apply_rope(x, pos, pairing="interleaved", rotary_dim=8)
    perm = np.concatenate([np.arange(0, 8, 2), np.arange(1, 8, 2)])
    assert np.array_equal(mla[..., :8], inter[..., perm])
    assert np.array_equal(mla[..., 8:], x[..., 8:])


# ---------------------------------------------------------------- errors name the argument


@pytest.mark.parametrize(
    "kwargs, exc, msg",
    [
        (dict(cu_seqlens=[0, 5, 3, 6]), ValueError, "cu_seqlens must be non-decreasing"),
        (
            dict(cu_seqlens=[0, 2, 5]),
            ValueError,
            r"cu_seqlens must end at the number of tokens T = 6",
        ),
        (dict(cu_seqlens=[1, 6]), ValueError, "cu_seqlens must be .* starting at 0"),
        (dict(cu_seqlens=[0.0, 6.0]), TypeError, "cu_seqlens must be integers"),
        (
            dict(cu_seqlens=[0, 3, 6], offsets=[1, 2, 3]),
            ValueError,
            r"offsets must have one entry per sequence \(2\)",
        ),
        (dict(cu_seqlens=[0, 3, 6], offsets=[1.5, 2]), TypeError, "offsets must be integers"),
        (
            dict(cu_seqlens=[0, 3, 12], cp_rank=0, cp_size=2),
            ValueError,
            "multiple of 2 \\* cp_size",
        ),
        (
            dict(cu_seqlens=[0, 6], cp_rank=1),
            TypeError,
            "cp_rank and cp_size must be given together",
        ),
        (
            dict(cu_seqlens=[0, 12], cp_rank=2, cp_size=2),
            ValueError,
            "cp_rank must be in 0..cp_size-1",
        ),
    ],
)
def test_packed_errors(kwargs, exc, msg):
    with pytest.raises(exc, match=msg):
        apply_rope(np.ones((6, 2, 4)), None, **kwargs)


def test_position_errors_name_the_argument():
    x = np.ones((2, 3, 4, 8))
    with pytest.raises(TypeError, match="positions must be None with cu_seqlens"):
        apply_rope(x[0], np.arange(3), cu_seqlens=[0, 3])
    with pytest.raises(TypeError, match="positions are required"):
        apply_rope(x, None)
    with pytest.raises(ValueError, match=r"offsets must have one entry per sequence \(2\)"):
        apply_rope(x, np.arange(4), offsets=[1, 2, 3])
    with pytest.raises(ValueError, match=r"offsets \(batch,\) need x of shape \(batch"):
        apply_rope(x[0, 0], np.arange(4), offsets=[1, 2])
    with pytest.raises(ValueError, match="positions has 5 entries but x has seq = 4"):
        apply_rope(x, np.zeros((2, 5)))
    with pytest.raises(ValueError, match=r"batch = 3 need x of shape \(batch"):
        apply_rope(x, np.zeros((3, 4)))
    with pytest.raises(ValueError, match="on each of cp_size = 2 ranks"):
        apply_rope(x, np.arange(4), cp_rank=0, cp_size=2)
    with pytest.raises(ValueError, match="rotary_offset=8 must be below"):
        apply_rope(x, np.arange(4), rotary_offset=8)
    with pytest.raises(ValueError, match=r"rotary_dim=8 exceeds .* after rotary_offset=2"):
        apply_rope(x, np.arange(4), rotary_offset=2, rotary_dim=8)
    with pytest.raises(ValueError, match="output_order must be one of"):
        apply_rope(x, np.arange(4), output_order="mla")
    with pytest.raises(TypeError, match="inverse must be a boolean"):
        apply_rope(x, np.arange(4), inverse="yes")


def test_table_rows_beyond_the_table_are_refused():
    c, s = cos_sin(np.arange(10), dim=8)
    x = np.ones((2, 4, 8))
    with pytest.raises(ValueError, match="cos has 10 rows\\); got 12, beyond the table"):
        apply_rope_tables(x, c, s, positions=[0, 1, 12, 3])
    with pytest.raises(ValueError, match="beyond the table"):
        apply_rope_tables(x, c, s, offsets=[0, 7])  # rows 7..10 of sequence 1
    with pytest.raises(ValueError, match="got -1, beyond the table"):
        apply_rope_tables(x, c, s, positions=[0, 1, -1, 3])
    with pytest.raises(ValueError, match=r"got 1\.5, beyond the table"):
        apply_rope_tables(x, c, s, positions=[0, 1, 1.5, 3])


# ---------------------------------------------------------------- issue 17 (rotation items)


@pytest.mark.parametrize("state", ["ignore", "warn", "raise"])
def test_overflowing_angles_raise_whatever_the_error_state(state):
    """positions x inv_freq beyond float64 would make cos/sin NaN: refused before writing, the
    same under np.errstate(all="ignore") as with warnings on."""
    x = np.ones((1, 2))
    with np.errstate(all=state), pytest.raises(ValueError, match="overflow float64"):
        apply_rope(x, [2.0**52], inv_freq=[1e300])


@pytest.mark.parametrize("pairing", ["half", "interleaved"])
@pytest.mark.parametrize("fused", [False, True])
def test_in_place_with_nan_in_the_last_block_leaves_x_untouched(pairing, fused):
    x = np.random.default_rng(6).standard_normal((4, 5000, 64))  # many blocks
    x[3, 4999, 63] = np.nan
    before = x.copy()
    with pytest.raises(ValueError, match="x must contain only finite values"):
        apply_rope(x, np.arange(5000), out=x, pairing=pairing, fused=fused)
    assert np.array_equal(x, before, equal_nan=True)
    out = np.zeros_like(x)
    with pytest.raises(ValueError, match="x must contain only finite values"):
        apply_rope(x, np.arange(5000), out=out, pairing=pairing, fused=fused)
    assert not out.any()  # a given out is untouched as well


def test_nan_in_the_pass_through_part_is_found_before_writing():
    x = np.ones((2, 6, 8))
    x[1, 5, 7] = np.inf
    before = x.copy()
    with pytest.raises(ValueError, match="x must contain only finite values"):
        apply_rope(x, np.arange(6), rotary_dim=4, out=x)
    assert np.array_equal(x, before)


def test_boolean_scalar_position_is_refused():
    with pytest.raises(TypeError, match="positions"):
        apply_rope(np.ones((1, 4)), True)
    with pytest.raises(TypeError, match="positions"):
        apply_rope(np.ones((1, 4)), np.bool_(True))


@pytest.mark.parametrize(
    "kwargs, exc, msg",
    [
        (dict(rotary_dim=0), ValueError, "rotary_dim must be positive"),
        (dict(pairing=""), ValueError, "pairing must be one of"),
        (dict(rotary_offset=-1), ValueError, "rotary_offset must be non-negative"),
        (dict(rotary_offset=True), TypeError, "rotary_offset must be an integer"),
    ],
)
def test_empty_or_false_values_do_not_fall_back_to_defaults(kwargs, exc, msg):
    with pytest.raises(exc, match=msg):
        apply_rope(np.ones((1, 4)), [0], **kwargs)


def test_int64_positions_beyond_2_53_are_refused_not_rounded():
    x = np.ones((1, 4))
    for p in (2**53 + 1, 2**62, -(2**63)):
        with pytest.raises(ValueError, match="2\\*\\*53"):
            apply_rope(x, np.array([p], dtype=np.int64))
    with pytest.raises(ValueError, match="2\\*\\*53"):
        apply_rope(np.ones((1, 1, 4)), [[0]], offsets=np.array([2**53], dtype=np.int64) * 2)
    exact = apply_rope(x, np.array([2**53], dtype=np.int64), inv_freq=[1e-9, 1e-10])
    assert np.array_equal(exact, apply_rope(x, [float(2**53)], inv_freq=[1e-9, 1e-10]))
