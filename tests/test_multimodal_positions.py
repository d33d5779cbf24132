"""M-RoPE position ids and layouts against loop oracles written from the model sources'
description (text on all axes, grids enumerated frame, row, column, text resuming after the
block, decode offsets); properties with hypothesis; every error path."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from refimpl.multiaxis import (
    hunyuanvl_position_ids,
    mrope_axis_of_pair,
    mrope_batch_decode_position_ids,
    mrope_batch_position_ids,
    mrope_cos_sin,
    mrope_decode_position_ids,
    mrope_position_ids,
    mrope_token_types,
    mrope_vision_position_ids,
    omni_audio_tokens,
    omni_batch_position_ids,
    omni_position_ids,
    timestamped_video_segments,
    videorope_position_ids,
)
from refimpl.rotary import apply_rope_tables, cos_sin, inv_freq


def oracle_ids(segments, merge, tmerge, resume):
    """One token at a time: the Qwen2-VL rules as the paper and the model code state them."""
    rows, pos = [], 0
    for seg in segments:
        if seg[0] == "text":
            for _ in range(seg[1]):
                rows.append((pos, pos, pos))
                pos += 1
            continue
        t, h, w = seg[1]
        tau = seg[2] if len(seg) == 3 else 1.0
        tm = tmerge if seg[0] == "video" else 1
        block = []
        for a in range(t // tm):
            for b in range(h // merge):
                for c in range(w // merge):
                    block.append((pos + int(np.floor(a * tau)), pos + b, pos + c))
        rows += block
        if resume == "max":
            pos = max(max(r) for r in block) + 1
        else:
            pos += max(h, w) // merge
    return np.array(rows, dtype=np.int64).T


def oracle_axis(section, layout):
    out = []
    for j in range(sum(section)):
        if layout == "blocked":
            out.append(int(np.searchsorted(np.cumsum(section), j, side="right")))
        elif layout == "interleaved":
            if j % 3 == 1 and j < 3 * section[1]:
                out.append(1)
            elif j % 3 == 2 and j < 3 * section[2]:
                out.append(2)
            else:
                out.append(0)
        else:  # alternating, section (h, w, t)
            out.append(0 if j >= section[0] + section[1] else 1 + j % 2)
    return np.array(out)


GRID = st.tuples(st.integers(1, 4), st.integers(1, 5), st.integers(1, 5))


@st.composite
def sequences(draw):
    merge = draw(st.sampled_from([1, 2]))
    tmerge = draw(st.sampled_from([1, 2]))
    return draw_segments(draw, merge, tmerge), merge, tmerge


def draw_segments(draw, merge, tmerge):
    segs = []
    for _ in range(draw(st.integers(1, 6))):
        kind = draw(st.sampled_from(["text", "image", "video"]))
        if kind == "text":
            segs.append(("text", draw(st.integers(1, 7))))
            continue
        t, h, w = draw(GRID)
        grid = (1 if kind == "image" else t * tmerge, h * merge, w * merge)
        if kind == "video" and draw(st.booleans()):
            segs.append(("video", grid, draw(st.sampled_from([0.5, 1.0, 2.0, 4.0, 25.0]))))
        else:
            segs.append((kind, grid))
    if all(s[0] == "text" and s[1] == 0 for s in segs):
        segs.append(("text", 1))
    return segs


@given(sequences(), st.sampled_from(["max", "spatial"]))
def test_position_ids_match_loop_oracle(case, resume):
    segs, merge, tmerge = case
    got = mrope_position_ids(
        segs, spatial_merge_size=merge, temporal_merge_size=tmerge, resume=resume
    )
    want = oracle_ids(segs, merge, tmerge, resume)
    np.testing.assert_array_equal(got.position_ids, want)
    assert got.rope_delta == want.max() + 1 - want.shape[1]


@given(sequences())
def test_text_tokens_have_equal_rows_and_resume_after_the_block(case):
    segs, merge, tmerge = case
    ids = mrope_position_ids(segs, spatial_merge_size=merge, temporal_merge_size=tmerge)[0]
    start = 0
    for seg in segs:
        n = (
            seg[1]
            if seg[0] == "text"
            else int(np.prod(seg[1])) // merge**2 // (tmerge if seg[0] == "video" else 1)
        )
        block = ids[:, start : start + n]
        if seg[0] == "text":
            assert np.all(block[0] == block[1]) and np.all(block[1] == block[2])
            assert np.all(np.diff(block[0]) == 1)
            # text resumes one past everything before it ("max" rule)
            assert start == 0 or block[0, 0] == ids[:, :start].max() + 1
        start += n


def test_images_agree_under_both_resume_rules_and_videos_can_differ():
    imgs = [("text", 3), ("image", (1, 4, 8)), ("text", 2), ("image", (1, 6, 2)), ("text", 1)]
    a = mrope_position_ids(imgs, resume="max")
    b = mrope_position_ids(imgs, resume="spatial")
    np.testing.assert_array_equal(a.position_ids, b.position_ids)
    # a Qwen2.5-VL video (interval 2 tokens/s x 2 s = 4) whose time outruns its 2 x 2 grid
    vid = [("text", 1), ("video", (3, 4, 4), 4.0), ("text", 1)]
    a = mrope_position_ids(vid, resume="max")
    b = mrope_position_ids(vid, resume="spatial")
    assert a.position_ids[0, -1] == 1 + 2 * 4 + 1  # after t = 9
    assert b.position_ids[0, -1] == 1 + 2  # start + max(H, W) // 2 ignores time
    assert a.position_ids[0, -1] > b.position_ids[1:, :-1].max()


def test_qwen3_frames_between_timestamps_and_float32_time():
    segs = timestamped_video_segments((2, 4, 4), [3, 2])
    ids = mrope_position_ids(segs).position_ids
    # each frame sits at its own start on t: after 3 timestamp tokens, and after 1 + 2 more
    assert ids[0, 3] == 3 and ids[0, 3 + 4 + 3] == 3 + 2 + 1 + 2
    # transformers multiplies a float32 interval: frame 23 at 7/23 per frame is 7 exactly,
    # 7.0 in float64 but 6.9999995 in float32, truncated to 6
    v = mrope_vision_position_ids(0, (24, 2, 2), time_interval=7 / 23, time_precision="float32")
    w = mrope_vision_position_ids(0, (24, 2, 2), time_interval=7 / 23)
    assert v[0, 23] == 6 and w[0, 23] == 7
    np.testing.assert_array_equal(v[:, :23], w[:, :23])


@given(
    st.integers(-1000, 1000),
    st.lists(st.integers(0, 10**6), min_size=1, max_size=8),
    st.sampled_from([3, 4]),
)
def test_decode_positions(delta, cache, axes):
    out = mrope_decode_position_ids(delta, cache, n_axes=axes)
    assert out.shape == (axes, len(cache))
    assert np.all(out == np.array(cache) + delta)


@given(sequences(), st.integers(1, 5))
def test_decode_continues_where_the_prompt_ends(case, n_new):
    segs, merge, tmerge = case
    ids, delta = mrope_position_ids(segs, spatial_merge_size=merge, temporal_merge_size=tmerge)
    new = mrope_decode_position_ids(delta, np.arange(n_new) + ids.shape[1])
    assert new[0, 0] == ids.max() + 1
    # the generated ids equal the ids of the same tokens appended as text
    longer = mrope_position_ids(
        [*segs, ("text", n_new)], spatial_merge_size=merge, temporal_merge_size=tmerge
    ).position_ids
    np.testing.assert_array_equal(longer[:, -n_new:], new)


SECTIONS = st.tuples(st.integers(0, 12), st.integers(0, 12), st.integers(0, 12)).filter(
    lambda s: sum(s) > 0
)


@given(SECTIONS, st.sampled_from(["blocked", "interleaved", "alternating"]))
def test_axis_of_pair_matches_oracle(section, layout):
    if layout == "alternating":
        section = (section[0], section[0], section[2])
        if sum(section) == 0:
            return
    np.testing.assert_array_equal(mrope_axis_of_pair(section, layout), oracle_axis(section, layout))


@given(st.tuples(*[st.integers(0, 6)] * 4).filter(lambda s: sum(s) > 0))
def test_four_section_blocked_layout_reads_four_rows(section):
    half = sum(section)
    rng = np.random.default_rng(half)
    ids = rng.integers(0, 50, size=(4, 5))
    f = inv_freq(2 * half)
    c, _ = mrope_cos_sin(ids, f, section)
    axis = np.repeat(np.arange(4), section)
    np.testing.assert_allclose(c, np.cos(ids[axis].T * f), rtol=0, atol=0)
    # text tokens (equal rows) reduce to 1-D RoPE in every layout
    p = rng.integers(0, 10**5, size=7)
    c4, s4 = mrope_cos_sin(np.tile(p, (4, 1)), f, section)
    c1, s1 = cos_sin(p, f)
    assert np.array_equal(c4, c1) and np.array_equal(s4, s1)


@given(st.integers(1, 10), st.integers(0, 10), st.integers(0, 60), st.integers(0, 60))
def test_alternating_layout_is_relative_per_axis(shw, st_, shift_h, shift_w):
    section = (shw, shw, st_)
    half = sum(section)
    f = inv_freq(2 * half, 500.0)
    rng = np.random.default_rng(half + shift_h)
    q, k = rng.normal(size=(2, 2 * half))
    ids = rng.integers(0, 40, size=(3, 2))
    moved = ids + np.array([[shift_w], [shift_h], [shift_h + shift_w]])
    sc = []
    for pos in (ids, moved):
        c, s = mrope_cos_sin(pos, f, section, layout="alternating")
        y = apply_rope_tables(np.stack([q, k]), c, s, pairing="interleaved")
        sc.append(y[0] @ y[1])
    assert sc[0] == pytest.approx(sc[1], rel=1e-9, abs=1e-9)


def oracle_videorope(segments, merge, delta):
    """Token by token, as VideoRoPE's get_rope_index (Wiselnn570/VideoRoPE @309f5c8) builds them."""
    rows, st_idx = [], 0.0
    for seg in segments:
        if seg[0] == "text":
            rows += [(st_idx + k,) * 3 for k in range(seg[1])]
            st_idx = rows[-1][0] + 1 if seg[1] else st_idx
            continue
        t, h, w = seg[1]
        hh, ww = h // merge, w // merge
        block = []
        for a in range(t):
            for b in range(hh):
                for c in range(ww):
                    tt = st_idx + a * delta
                    block.append((tt, tt + b - (hh - 1) // 2, tt + c - (ww - 1) // 2))
        rows += block
        st_idx = max(r[0] for r in block) + 1
    return np.array(rows, dtype=float).T


@given(sequences(), st.sampled_from([0.5, 1.0, 2.0, 3.0]))
def test_videorope_ids_match_loop_oracle(case, delta):
    segs, merge, _ = case
    segs = [s[:2] for s in segs]
    got = videorope_position_ids(segs, spatial_merge_size=merge, temporal_spacing=delta)
    want = oracle_videorope(segs, merge, delta)
    np.testing.assert_array_equal(got.position_ids, want)
    assert got.rope_delta == want[0].max() + 1 - want.shape[1]


def test_videorope_frames_sit_on_the_diagonal():
    ids = videorope_position_ids([("video", (3, 6, 6))], temporal_spacing=2.0).position_ids
    frame = 9
    for a in range(3):
        t, h, w = ids[:, a * frame : (a + 1) * frame]
        assert np.all(t == 2.0 * a)
        assert h.mean() == t[0] and w.mean() == t[0]  # 3 x 3 grid centred on t


@pytest.mark.parametrize(
    ("call", "err", "match"),
    [
        (lambda: mrope_position_ids([("text", 0)]), ValueError, "at least one token"),
        (lambda: mrope_position_ids("text"), TypeError, "sequence of segments"),
        (lambda: mrope_position_ids([("audio", 3)]), ValueError, "segments\\[0\\]\\[0\\] must be"),
        (lambda: mrope_position_ids([5]), TypeError, "segments\\[0\\] must be"),
        (lambda: mrope_position_ids([("image", (1, 3, 4))]), ValueError, "divisible by"),
        (lambda: mrope_position_ids([("image", (1, 4))]), ValueError, "grid must be"),
        (lambda: mrope_position_ids([("image", (1, 4, 4), 2.0)]), ValueError, "no time_interval"),
        (
            lambda: mrope_position_ids([("video", (3, 4, 4))], temporal_merge_size=2),
            ValueError,
            "T must be divisible",
        ),
        (lambda: mrope_position_ids([("video", (2, 4, 4), -1.0)]), ValueError, "time_interval"),
        (lambda: mrope_position_ids([("text", 2)], resume="min"), ValueError, "resume must be"),
        (lambda: mrope_position_ids([("text", 2.5)]), TypeError, "length must be an integer"),
        (lambda: mrope_decode_position_ids(0, [[1]]), TypeError, "cache_position"),
        (lambda: mrope_decode_position_ids(0, [-1]), ValueError, "non-negative"),
        (lambda: timestamped_video_segments((2, 4, 4), [1]), ValueError, "T = 2 entries"),
        (lambda: mrope_axis_of_pair([2, 3, 3], "alternating"), ValueError, "s_h == s_w"),
        (lambda: mrope_axis_of_pair([1, 1, 1, 1], "interleaved"), ValueError, "3 non-negative"),
        (
            lambda: mrope_cos_sin(np.zeros((3, 2)), np.ones(4), [1, 1, 1, 1]),
            ValueError,
            "shape \\(4, seq\\)",
        ),
        (
            lambda: mrope_cos_sin(np.zeros((3, 2)), np.ones(4), [1.5, 1, 1.5]),
            ValueError,
            "non-negative integers",
        ),
        (
            lambda: videorope_position_ids([("video", (2, 4, 4), 2.0)]),
            ValueError,
            "temporal_spacing",
        ),
        (lambda: videorope_position_ids([("image", (1, 3, 4))]), ValueError, "divisible"),
        (lambda: videorope_position_ids([("text", 0)]), ValueError, "at least one token"),
    ],
)
def test_errors(call, err, match):
    with pytest.raises(err, match=match):
        call()


def videorope_axis_oracle(mrope_section):
    """Pair -> row as VideoRoPE's apply_m_modify_multimodal_rotary_pos_emb picks it (its loop over
    the doubled, reversed sections [hw, t, hw, t] of the full-width table), first half only."""
    sec = [mrope_section[0], mrope_section[1] + mrope_section[2]] * 2
    sec = sec[::-1]
    rows = []
    for i, n in enumerate(sec):
        rows += [1 if j % 2 == 0 else 2 for j in range(n)] if i % 2 == 0 else [0] * n
    return np.array(rows[: sum(mrope_section)])


@pytest.mark.parametrize("section", [(16, 24, 24), (8, 12, 12), (4, 2, 6)])
def test_videorope_frequency_layout_is_the_alternating_layout(section):
    hw = section[1] + section[2]
    want = videorope_axis_oracle(section)
    got = mrope_axis_of_pair((hw // 2, hw // 2, section[0]), "alternating")
    np.testing.assert_array_equal(got, want)


def separated(segs):
    """Text between adjacent vision blocks of one kind (the processor's vision_end/start)."""
    out = []
    for seg in segs:
        if out and seg[0] != "text" and out[-1][0] == seg[0]:
            out.append(("text", 1))
        out.append(seg)
    return out


def row_tokens(segs, merge, tmerge):
    types = []
    for seg in segs:
        if seg[0] == "text":
            types += [0] * seg[1]
        else:
            t, h, w = seg[1]
            tm = tmerge if seg[0] == "video" else 1
            types += [1 if seg[0] == "image" else 2] * ((t // tm) * (h // merge) * (w // merge))
    return types


@st.composite
def padded_batches(draw):
    merge = draw(st.sampled_from([1, 2]))
    tmerge = draw(st.sampled_from([1, 2]))
    rows = [separated(draw_segments(draw, merge, tmerge)) for _ in range(draw(st.integers(1, 4)))]
    pads = [(draw(st.integers(0, 5)), draw(st.integers(0, 5))) for _ in rows]
    return rows, pads, merge, tmerge


def batch_arrays(rows, pads, merge, tmerge):
    """Token types, mask, grids and intervals of the padded batch (padding: type 0, mask 0)."""
    toks = [row_tokens(r, merge, tmerge) for r in rows]
    width = max(len(t) + a + b for t, (a, b) in zip(toks, pads, strict=True))
    types = np.zeros((len(rows), width), dtype=np.int64)
    mask = np.zeros_like(types)
    for i, (t, (left, _)) in enumerate(zip(toks, pads, strict=True)):
        types[i, left : left + len(t)] = t
        mask[i, left : left + len(t)] = 1
    vision = [s for r in rows for s in r if s[0] != "text"]
    images = [s[1] for s in vision if s[0] == "image"] or None
    videos = [s[1] for s in vision if s[0] == "video"]
    intervals = [s[2] if len(s) == 3 else 1.0 for s in vision if s[0] == "video"]
    return types, mask, images, videos or None, intervals or None


@given(padded_batches(), st.sampled_from(["max", "spatial"]))
def test_padded_batch_matches_loop_oracle(case, resume):
    rows, pads, merge, tmerge = case
    types, mask, images, videos, intervals = batch_arrays(rows, pads, merge, tmerge)
    got = mrope_batch_position_ids(
        types,
        attention_mask=mask,
        image_grid_thw=images,
        video_grid_thw=videos,
        video_time_intervals=intervals,
        spatial_merge_size=merge,
        temporal_merge_size=tmerge,
        resume=resume,
    )
    assert got.position_ids.shape == (3, *types.shape)
    for b, segs in enumerate(rows):
        want = oracle_ids(segs, merge, tmerge, resume)
        real = mask[b].astype(bool)
        np.testing.assert_array_equal(got.position_ids[:, b, real], want)
        assert np.all(got.position_ids[:, b, ~real] == 0)
        assert got.rope_deltas[b] == want.max() + 1 - want.shape[1]


@given(padded_batches())
def test_padding_moves_no_real_token_and_decode_continues_each_row(case):
    rows, pads, merge, tmerge = case
    types, mask, images, videos, intervals = batch_arrays(rows, pads, merge, tmerge)
    kw = dict(image_grid_thw=images, video_grid_thw=videos, video_time_intervals=intervals)
    kw.update(spatial_merge_size=merge, temporal_merge_size=tmerge)
    padded = mrope_batch_position_ids(types, attention_mask=mask, **kw)
    flipped = [(b, a) for a, b in pads]  # the same rows padded on the other side
    types2, mask2, *_ = batch_arrays(rows, flipped, merge, tmerge)
    other = mrope_batch_position_ids(types2, attention_mask=mask2, **kw)
    for b in range(len(rows)):
        np.testing.assert_array_equal(
            padded.position_ids[:, b, mask[b] == 1], other.position_ids[:, b, mask2[b] == 1]
        )
    np.testing.assert_array_equal(padded.rope_deltas, other.rope_deltas)
    # one generated token per row: its position is the row's max + 1 on every axis
    grown = np.concatenate([mask, np.ones((len(rows), 1), dtype=mask.dtype)], axis=1)
    new = mrope_batch_decode_position_ids(padded.rope_deltas, attention_mask=grown)[:, :, -1]
    want = [padded.position_ids[:, b, mask[b] == 1].max() + 1 for b in range(len(rows))]
    np.testing.assert_array_equal(new, np.tile(want, (3, 1)))


def test_token_types_from_ids():
    ids = np.array([[3, 7, 7, 8, 3], [7, 3, 3, 3, 8]])
    np.testing.assert_array_equal(
        mrope_token_types(ids, image_token_id=7, video_token_id=8),
        [[0, 1, 1, 2, 0], [1, 0, 0, 0, 2]],
    )
    np.testing.assert_array_equal(mrope_token_types(ids, image_token_id=8), ids == 8)


ONE = np.array([[0, 1, 1, 0]])


@pytest.mark.parametrize(
    ("call", "err", "match"),
    [
        (lambda: mrope_batch_position_ids([0, 1]), ValueError, "shape \\(B, S\\)"),
        (lambda: mrope_batch_position_ids([[0.0]]), TypeError, "integer array"),
        (lambda: mrope_batch_position_ids([[0, 3]]), ValueError, "0 \\(text\\)"),
        (lambda: mrope_batch_position_ids(ONE), ValueError, "more image runs"),
        (
            lambda: mrope_batch_position_ids(ONE, image_grid_thw=[[1, 2, 2]]),
            ValueError,
            "has 2 tokens but its grid \\(1, 2, 2\\) gives 1",
        ),
        (
            lambda: mrope_batch_position_ids(ONE, image_grid_thw=[[1, 2, 4]] * 2),
            ValueError,
            "more rows than the batch",
        ),
        (
            lambda: mrope_batch_position_ids(ONE, attention_mask=[[0, 0, 0, 0]]),
            ValueError,
            "row 0 has no unmasked",
        ),
        (lambda: mrope_batch_position_ids(ONE, attention_mask=[[2, 1, 1, 1]]), ValueError, "only"),
        (lambda: mrope_batch_position_ids(ONE, attention_mask=[[1, 1]]), ValueError, "!="),
        (
            lambda: mrope_batch_position_ids(ONE, image_grid_thw=[[1, 2]]),
            ValueError,
            "shape \\(n, 3\\)",
        ),
        (
            lambda: mrope_batch_position_ids(
                [[2, 2]], video_grid_thw=[[1, 2, 4]], video_time_intervals=[1.0, 2.0]
            ),
            ValueError,
            "one entry per video",
        ),
        (
            lambda: mrope_batch_position_ids(
                [[2, 2]],
                video_grid_thw=[[1, 2, 4]],
                video_time_intervals=[1.0],
                split_video_frames=True,
            ),
            ValueError,
            "does not apply",
        ),
        (
            lambda: mrope_token_types([[1]], image_token_id=1, video_token_id=1),
            ValueError,
            "differ",
        ),
        (lambda: mrope_batch_decode_position_ids([1]), ValueError, "exactly one"),
        (
            lambda: mrope_batch_decode_position_ids([1.5], cache_position=[0]),
            TypeError,
            "rope_deltas must be integers",
        ),
        (
            lambda: mrope_batch_decode_position_ids([1, 2], attention_mask=[[1, 1]]),
            ValueError,
            "1 rows",
        ),
    ],
)
def test_batch_errors(call, err, match):
    with pytest.raises(err, match=match):
        call()


def ggml_mrope_cache(pos4, sections, n_dims, base, imrope):
    """Transcription of ggml's ggml_mrope_cache_init (ggml/src/ggml-cpu/ops.cpp, ggml-org/
    llama.cpp @0049e3cb): four theta streams advance by base^(-2/n_dims) every pair; the
    sector rule picks one. Float64 here; ggml runs it in float32."""
    p_t, p_h, p_w, p_e = (float(p) for p in pos4)
    sect_dims = sum(sections)
    sec_w = sections[0] + sections[1]
    sec_e = sec_w + sections[2]
    scale = base ** (-2.0 / n_dims)
    th = [p_t, p_h, p_w, p_e]
    out = []
    for i0 in range(0, n_dims, 2):
        sector = (i0 // 2) % sect_dims
        if imrope:
            if sector % 3 == 1 and sector < 3 * sections[1]:
                k = 1
            elif sector % 3 == 2 and sector < 3 * sections[2]:
                k = 2
            elif sector % 3 == 0 and sector < 3 * sections[0]:
                k = 0
            else:
                k = 3
        else:
            k = 0 if sector < sections[0] else 1 if sector < sec_w else 2 if sector < sec_e else 3
        out.append(th[k])
        th = [t * scale for t in th]
    return np.array(out)


SECTIONS4 = st.tuples(*[st.integers(0, 8)] * 3, st.integers(0, 3)).filter(lambda s: sum(s) > 0)


@given(SECTIONS4, st.sampled_from(["imrope", "blocked"]), st.integers(0, 2**20))
def test_imrope_and_blocked_match_ggml_cache_loop(section, layout, seed):
    rng = np.random.default_rng(seed)
    half = sum(section)
    base = float(rng.choice([1e4, 1e6, 5e6]))
    ids = rng.integers(0, 5000, size=(4, 3))
    ids[3] = rng.choice([0, 1]) * ids[3]  # llama.cpp passes e = 0; any e is read the same
    c, s = mrope_cos_sin(ids, inv_freq(2 * half, base), section, layout=layout)
    for n in range(ids.shape[1]):
        ang = ggml_mrope_cache(ids[:, n], section, 2 * half, base, layout == "imrope")
        np.testing.assert_allclose(c[n], np.cos(ang), atol=1e-9)
        np.testing.assert_allclose(s[n], np.sin(ang), atol=1e-9)


@given(st.tuples(*[st.integers(0, 12)] * 3).filter(lambda s: sum(s) > 0), st.integers(0, 999))
def test_imrope_is_interleaved_with_e_on_the_t_row(section, seed):
    """The two layouts differ only in which row feeds the pairs interleaved gives to t by
    default: with e = t they agree; with llama.cpp's e = 0 they differ exactly on those
    pairs."""
    rng = np.random.default_rng(seed)
    half = sum(section)
    f = inv_freq(2 * half, 1e6)
    ids = rng.integers(1, 9000, size=(3, 4))
    ref = mrope_cos_sin(ids, f, section, layout="interleaved")
    same = mrope_cos_sin(np.vstack([ids, ids[:1]]), f, section, layout="imrope")
    np.testing.assert_array_equal(same[0], ref[0])
    np.testing.assert_array_equal(same[1], ref[1])
    zero_e = mrope_cos_sin(np.vstack([ids, 0 * ids[:1]]), f, section, layout="imrope")
    e_pairs = mrope_axis_of_pair(section, "imrope") == 3
    np.testing.assert_array_equal(zero_e[1][:, e_pairs], 0.0)
    np.testing.assert_array_equal(zero_e[1][:, ~e_pairs], ref[1][:, ~e_pairs])


def test_qwen3_vl_sections_differ_on_two_pairs():
    # mrope_section [24, 20, 20] with head_dim 128: the default of transformers 5.24's
    # Qwen3VLTextRotaryEmbedding (models/qwen3_vl/modeling_qwen3_vl.py) and Qwen3VLTextConfig;
    # llama.cpp's converter pads the GGUF sections to 4 with 0 (convert_hf_to_gguf.py)
    a = mrope_axis_of_pair([24, 20, 20, 0], "imrope")
    b = mrope_axis_of_pair([24, 20, 20], "interleaved")
    assert np.flatnonzero(a != b).tolist() == [61, 62]
    assert a[[61, 62]].tolist() == [3, 3]
    with pytest.raises(ValueError, match="shape \\(4, seq\\)"):
        mrope_cos_sin(np.zeros((3, 2), dtype=int), inv_freq(128), [24, 20, 20], layout="imrope")


def oracle_hunyuan(rows, merge, n_axes):
    """Token by token: 1-D index everywhere; inside each image grid the last three rows are
    (column incl. the row-break column, row, image index over the batch)."""
    out, image = [], 0
    for row in rows:  # row: list of ("text", n) / ("image", (H, W), with_start_end)
        ids, p = [], 0
        for seg in row:
            if seg[0] == "text":
                for _ in range(seg[1]):
                    ids.append([p] * n_axes)
                    p += 1
                continue
            (h, w), ends = seg[1], seg[2]
            if ends:
                ids.append([p] * n_axes)
                p += 1
            for y in range(h // merge):
                for x in range(w // merge + 1):
                    ids.append([p] * (n_axes - 3) + [x, y, image])
                    p += 1
            if ends:
                ids.append([p] * n_axes)
                p += 1
            image += 1
        out.append(np.array(ids).T)
    return out


@st.composite
def hunyuan_batches(draw):
    merge = draw(st.sampled_from([1, 2]))
    rows = []
    for _ in range(draw(st.integers(1, 3))):
        row = [("text", draw(st.integers(1, 4)))]
        for _ in range(draw(st.integers(0, 3))):
            hw = (merge * draw(st.integers(1, 4)), merge * draw(st.integers(1, 4)))
            row += [("image", hw, draw(st.booleans())), ("text", draw(st.integers(1, 3)))]
        rows.append(row)
    return rows, merge, draw(st.integers(3, 5)), draw(st.integers(0, 4))


@given(hunyuan_batches())
def test_hunyuanvl_ids_match_loop_oracle(case):
    rows, merge, n_axes, pad = case
    types, grids = [], []
    for row in rows:
        t = []
        for seg in row:
            if seg[0] == "text":
                t += [0] * seg[1]
            else:
                (h, w), ends = seg[1], seg[2]
                t += [1] * ((h // merge) * (w // merge + 1) + 2 * ends)
                grids.append((1, h, w))
        types.append(t)
    width = max(map(len, types)) + pad
    tt = np.zeros((len(rows), width), dtype=int)
    mask = np.zeros_like(tt)
    for b, t in enumerate(types):
        tt[b, width - len(t) :], mask[b, width - len(t) :] = t, 1
    got = hunyuanvl_position_ids(
        tt,
        image_grid_thw=grids or None,
        attention_mask=mask,
        spatial_merge_size=merge,
        n_axes=n_axes,
    )
    for b, want in enumerate(oracle_hunyuan(rows, merge, n_axes)):
        np.testing.assert_array_equal(got.position_ids[:, b, mask[b] == 1], want)
        assert got.rope_deltas[b] == want.max() + 1 - want.shape[1]
    assert np.all(got.position_ids[:, mask == 0] == 0)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"token_types": [[0, 2]]}, "0 \\(text\\) or 1 \\(image\\)"),
        ({"token_types": [[0, 1]]}, "more image runs"),
        ({"token_types": [[0, 1]], "image_grid_thw": [[1, 2, 2]]}, "has 1 slots"),
        ({"token_types": [[0, 0]], "image_grid_thw": [[1, 2, 2]]}, "more rows"),
        ({"token_types": [[0, 0]], "n_axes": 2}, "at least 3"),
        ({"token_types": [[0, 0]], "attention_mask": [[0, 0]]}, "no unmasked"),
    ],
)
def test_hunyuanvl_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        hunyuanvl_position_ids(kwargs.pop("token_types"), **kwargs)


def oracle_omni(segments, model, merge=2, pps=25, chunk_s=2):
    """Token by token from the model sources' description; media segments carry their start
    and end tokens."""
    rows = []
    real = np.float32 if model == "qwen3-omni" else float  # Qwen3-Omni adds in float32

    def nxt():  # one past the largest id of the last block written
        return real(max(max(p) for p in rows[-1]) + real(1)) if rows else real(0)

    def text(n):
        for _ in range(n):
            rows.append([(nxt(),) * 3])

    for seg in segments:
        if seg[0] == "text":
            text(seg[1])
            continue
        pair = seg[0] == "video_audio"
        if pair and model == "qwen2.5-omni":
            text(1)
            rows.append(rows[-1])
        else:
            text(2 if pair else 1)
        s = nxt()
        if seg[0] == "audio":
            text(seg[1])
        else:
            t, h, w = seg[1]
            step = 1.0 if seg[0] == "image" else seg[2]
            vid = []
            for a in range(t):
                ta = float(np.float32(np.float32(a) * np.float32(step)) * np.float32(pps))
                ta = ta if model == "qwen3-omni" else float(int(ta))
                vid += [
                    (real(s + real(ta)), real(s + real(b)), real(s + real(c)))
                    for b in range(h // merge)
                    for c in range(w // merge)
                ]
            if not pair:
                rows.append(vid)
            else:
                aud = [(real(s + real(k)),) * 3 for k in range(seg[3])]
                if model == "qwen3-omni":  # stable merge by temporal id, video first on ties
                    tagged = [(p[0], 0, i, p) for i, p in enumerate(vid)]
                    tagged += [(p[0], 1, i, p) for i, p in enumerate(aud)]
                    for item in sorted(tagged):
                        rows.append([item[3]])
                else:
                    vc, ac = omni_chunks(vid, s, pps * chunk_s), omni_chunks(aud, s, pps * chunk_s)
                    for k in range(max(len(vc), len(ac))):
                        rows += [c[k] for c in (vc, ac) if k < len(c) and c[k]]
        if pair and model == "qwen2.5-omni":
            text(1)
            rows.append(rows[-1])
        else:
            text(2 if pair else 1)
    flat = [p for block in rows for p in block]
    return np.array(flat, dtype=float).T


def omni_chunks(ids, start, per_chunk):
    out, cur, k = [], [], 1
    for p in ids:
        if p[0] - start >= k * per_chunk:
            out.append(cur)
            cur, k = [], k + 1
        cur.append(p)
    return [*out, cur]


@st.composite
def omni_sequences(draw):
    segs = [("text", draw(st.integers(1, 4)))]
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["image", "video", "audio", "video_audio", "text"]))
        grid = (draw(st.integers(1, 4)), 2 * draw(st.integers(1, 3)), 2 * draw(st.integers(1, 3)))
        sec = draw(st.sampled_from([0.5, 1.0, 2.0, 0.7, 1 / 3]))
        if kind == "text":
            segs.append(("text", draw(st.integers(1, 3))))
        elif kind == "image":
            segs.append(("image", (1, *grid[1:])))
        elif kind == "video":
            segs.append(("video", grid, sec))
        elif kind == "audio":
            segs.append(("audio", draw(st.integers(1, 120))))
        else:
            segs.append(("video_audio", grid, sec, draw(st.integers(1, 160))))
    return segs


@given(omni_sequences(), st.sampled_from(["qwen2.5-omni", "qwen3-omni"]))
def test_omni_ids_match_loop_oracle(segs, model):
    got = omni_position_ids(segs, model=model)
    want = oracle_omni(segs, model)
    np.testing.assert_array_equal(got.position_ids, want)
    real = np.float32 if model == "qwen3-omni" else float
    assert got.rope_delta == real(real(want.max()) + 1 - want.shape[1])


@given(sequences())
def test_omni_images_and_text_are_m_rope_with_the_max_rule(case):
    """Without audio and video, Omni's ids are mrope_position_ids with resume="max" once each
    image is wrapped in its start and end tokens."""
    segs, merge, _ = case
    omni = [s for s in segs if s[0] == "text" or (s[0] == "image" and s[1][0] == 1)]
    plain = []
    for seg in omni:
        plain += [seg] if seg[0] == "text" else [("text", 1), seg, ("text", 1)]
    got = omni_position_ids(omni or [("text", 1)], spatial_merge_size=merge)
    want = mrope_position_ids(plain or [("text", 1)], spatial_merge_size=merge, resume="max")
    np.testing.assert_array_equal(got.position_ids, want.position_ids)
    assert got.rope_delta == want.rope_delta


def test_omni_audio_tokens_and_errors():
    # 100 Hz mel frames, two stride-2 stages: 25 tokens a second (1 s, 30 s of audio)
    assert [omni_audio_tokens(n) for n in (100, 3000)] == [25, 750]
    # Qwen3-Omni: 13 tokens per full chunk of 100 frames, the remainder by three halvings
    assert omni_audio_tokens(300, model="qwen3-omni") == 3 * 13
    assert omni_audio_tokens(250, model="qwen3-omni") == 2 * 13 + 7  # 50 -> 25 -> 13 -> 7
    with pytest.raises(ValueError, match="a video segment has 3 entries"):
        omni_position_ids([("video", (1, 2, 2))])
    with pytest.raises(ValueError, match="at least one token"):
        omni_position_ids([("text", 0)])
    with pytest.raises(ValueError, match="model must be one of"):
        omni_position_ids([("text", 1)], model="qwen2-vl")
    with pytest.raises(ValueError, match="divisible by spatial_merge_size"):
        omni_position_ids([("image", (1, 3, 2))])


@given(st.lists(omni_sequences(), min_size=1, max_size=3), st.integers(0, 3))
def test_omni_batch_writes_each_row_into_its_slots(rows, pad):
    for model, fill in (("qwen2.5-omni", 1.0), ("qwen3-omni", 0.0)):
        singles = [omni_position_ids(r, model=model) for r in rows]
        lengths = [s.position_ids.shape[1] for s in singles]
        mask = np.zeros((len(rows), max(lengths) + pad), dtype=int)
        for b, n in enumerate(lengths):
            mask[b, mask.shape[1] - n :] = 1  # left padding
        out = omni_batch_position_ids(rows, mask, model=model)
        for b, one in enumerate(singles):
            np.testing.assert_array_equal(out.position_ids[:, b, mask[b] == 1], one.position_ids)
            assert out.rope_deltas[b] == one.rope_delta
        assert np.all(out.position_ids[:, mask == 0] == fill)


def test_omni_batch_errors():
    with pytest.raises(ValueError, match="one segment list per mask row"):
        omni_batch_position_ids([[("text", 1)]], [[1], [1]])
    with pytest.raises(ValueError, match="row 0: its segments have 2 tokens"):
        omni_batch_position_ids([[("text", 2)]], [[0, 0, 1]])


@given(st.tuples(*[st.integers(0, 10)] * 3).filter(lambda s: sum(s) > 0))
def test_imrope_differs_from_interleaved_exactly_beyond_each_section(section):
    j = np.arange(sum(section))
    beyond = j >= 3 * np.asarray(section)[j % 3]
    got = mrope_axis_of_pair(section, "imrope") != mrope_axis_of_pair(section, "interleaved")
    np.testing.assert_array_equal(got, beyond)
