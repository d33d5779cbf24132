"""Integer arithmetic in the position builders is exact or refused, and dtype promotion in the
graph and bias code is explicit: each hostile input below once gave a silent wrong answer
(truncation, int64 wrap-around, float64 rounding past 2**53) or a memory blow-up; now it gives
the exact answer or a ValueError naming the argument and the rule."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import refimpl
from refimpl import audio, bias, graph, multiaxis
from refimpl._checks import EXACT_INTEGER, MAX_POSITION, MAX_TABLE_ELEMENTS

PATH4 = np.array([[0, 1, 0, 0], [1, 0, 1, 0], [0, 1, 0, 1], [0, 0, 1, 0]])


# ------------------------------------------------------------------------------------ graphs
@pytest.mark.parametrize("dtype", [np.int64, np.uint8, np.int8, bool, np.float32, np.float64])
def test_laplacian_of_integer_and_boolean_adjacency_is_promoted_first(dtype):
    """The normalised Laplacian of the 4-node path has eigenvalues 0, 1 - 1/2, 1 + 1/2, 2
    whatever the adjacency's dtype (an integer D^(-1/2) once truncated to 0: the identity)."""
    lap = graph.laplacian(PATH4.astype(dtype))
    assert lap.dtype == np.float64
    np.testing.assert_allclose(np.linalg.eigvalsh(lap), [0.0, 0.5, 1.5, 2.0], atol=1e-12)
    unnorm = graph.laplacian(PATH4.astype(dtype), normalized=False)
    assert unnorm.dtype == np.float64
    np.testing.assert_array_equal(unnorm.sum(axis=1), 0.0)
    _, lam = graph.laplacian_eigenvector_encoding(PATH4.astype(dtype), 2)
    np.testing.assert_allclose(lam, [0.5, 1.5], atol=1e-12)
    rw = graph.random_walk_encoding(PATH4.astype(dtype), 2)
    np.testing.assert_allclose(rw[:, 1], [0.5, 0.75, 0.75, 0.5])


def test_graph_outputs_are_float64_and_integer_inputs_stay_exact():
    angles = graph.coordinate_rope_angles([[3, 2**40]], [[2], [3]])
    assert angles.dtype == np.float64 and angles.tolist() == [[6.0, 3.0 * 2**40]]
    with pytest.raises(ValueError, match="coords must lie within"):
        graph.coordinate_rope_angles(np.array([[2**60]]), [[1.0]])
    b = graph.graph_distance_bias(PATH4, np.arange(6).reshape(2, 3), num_buckets=2, max_distance=4)
    assert b.dtype == np.float64 and b[1, 0, 3] == 4.0
    with pytest.raises(ValueError, match="table must be finite"):
        graph.graph_distance_bias(PATH4, [[0.0, np.nan, 1.0]], num_buckets=2, max_distance=4)
    with pytest.raises(ValueError, match="distances must be at most"):
        graph.graph_distance_buckets(np.array([2**64 - 1], np.uint64))
    small = graph.graph_distance_buckets(np.array([3, 0, 200], np.uint8), num_buckets=4)
    assert small.tolist() == graph.graph_distance_buckets([3, 0, 200], num_buckets=4).tolist()
    with pytest.raises(ValueError, match="adjacency must lie within"):
        graph.laplacian(np.array([[0, 2**60], [2**60, 0]]))


# ------------------------------------------------------------------------------------ M-RoPE
def test_a_huge_time_interval_is_refused_not_wrapped_to_int64_min():
    for precision in ("float64", "float32"):
        with pytest.raises(ValueError, match=r"time_interval .* within 2\*\*53"):
            multiaxis.mrope_position_ids(
                [("text", 2), ("video", (4, 2, 2), 1e300)], time_precision=precision
            )
    ok = multiaxis.mrope_position_ids([("text", 2), ("video", (4, 2, 2), 2.0**40)])
    assert ok.position_ids[0].max() == 2 + 3 * 2**40  # exact where it fits


def test_decode_deltas_near_2_63_are_refused_not_wrapped():
    with pytest.raises(ValueError, match="cache_position \\+ rope_delta must lie within"):
        multiaxis.mrope_decode_position_ids(2**53, [1])
    with pytest.raises(ValueError, match="rope_delta must be at most"):
        multiaxis.mrope_decode_position_ids(2**62, [2**62])
    with pytest.raises(ValueError, match="cache_position must lie within"):
        multiaxis.mrope_decode_position_ids(0, np.array([2**64 - 1], np.uint64))
    with pytest.raises(ValueError, match="rope_deltas must lie within"):
        multiaxis.mrope_batch_decode_position_ids(
            np.array([2**63 - 1]), cache_position=np.array([5])
        )
    with pytest.raises(ValueError, match="rope_deltas plus cache positions"):
        multiaxis.mrope_batch_decode_position_ids(np.array([2**53]), cache_position=[1])
    ids = multiaxis.mrope_decode_position_ids(-(2**53) + 1, [0, 1])
    assert ids[0].tolist() == [-(2**53) + 1, -(2**53) + 2]


@pytest.mark.parametrize(
    "ids",
    [
        np.array([[2**53 + 2], [0], [0]], np.int64),
        np.array([[2**63 - 1], [0], [0]], np.int64),
        np.array([[2**64 - 1], [0], [0]], np.uint64),
        np.array([[2.0**60], [0.0], [0.0]]),
        np.array([[np.inf], [0.0], [0.0]]),
    ],
)
def test_mrope_ids_beyond_2_53_are_refused(ids):
    with pytest.raises(ValueError, match="position_ids must"):
        refimpl.mrope_cos_sin(ids, [1.0, 0.5], [1, 1, 0])


def test_mrope_ids_at_2_53_are_exact():
    ids = np.array([[2**53], [3], [0]], np.int64)
    c, _ = refimpl.mrope_cos_sin(ids, [1.0, 0.5], [1, 1, 0])
    want = refimpl.cos_sin([float(2**53)], inv_freq=[1.0])[0][0, 0]
    assert c[0, 0] == want


def test_large_segments_are_refused_before_allocation():
    with pytest.raises(ValueError, match="MAX_TABLE_ELEMENTS"):
        multiaxis.mrope_position_ids([("text", MAX_TABLE_ELEMENTS)])
    with pytest.raises(ValueError, match="MAX_TABLE_ELEMENTS"):
        multiaxis.mrope_vision_position_ids(0, (2**20, 2**20, 2**20))
    with pytest.raises(ValueError, match="MAX_TABLE_ELEMENTS"):
        multiaxis.omni_position_ids([("audio", MAX_TABLE_ELEMENTS)])
    with pytest.raises(ValueError, match="MAX_TABLE_ELEMENTS"):
        multiaxis.omni_position_ids([("image", (1, 2**20, 2**20))])
    with pytest.raises(ValueError, match="run at unpadded index 0 has 2 slots"):
        multiaxis.hunyuanvl_position_ids([[1, 1]], image_grid_thw=[[1, 2**40, 2**40]])


def test_omni_and_videorope_refuse_positions_beyond_2_53():
    with pytest.raises(ValueError, match="within 2\\*\\*53"):
        multiaxis.omni_position_ids([("video", (4, 2, 2), 1e30)])
    with pytest.raises(ValueError, match=r"VideoRoPE position ids .* must lie within"):
        multiaxis.videorope_position_ids([("video", (4, 2, 2))], temporal_spacing=1e300)
    with pytest.raises(ValueError, match="seconds_per_chunk must be at most 2\\*\\*53"):
        multiaxis.omni_position_ids([("text", 1)], position_id_per_seconds=1e300)


def test_integer_token_matrices_and_flat_ids_do_not_wrap():
    with pytest.raises(ValueError, match="input_ids must fit in int64"):
        multiaxis.mrope_token_types(np.array([[2**64 - 1]], np.uint64), image_token_id=-1)
    with pytest.raises(ValueError, match="rows \\* max_width \\+ cols must lie within"):
        multiaxis.pixtral_flat_ids(np.array([2**62]), np.array([0]), 8)
    assert multiaxis.pixtral_flat_ids(np.array([3], np.uint8), np.array([7], np.uint8), 8)[0] == 31


# ----------------------------------------------------------------- offsets, packing, shards
def test_position_plus_offset_past_2_53_is_refused_not_rounded():
    """2**53 - 1 + 2 rounds to 2**53 in float64: once accepted as a valid position."""
    x = np.ones((1, 1, 4))
    with pytest.raises(ValueError, match="position \\+ offset"):
        refimpl.apply_rope(x, [2**53 - 1], offsets=[2])
    y = refimpl.apply_rope(x, [2**53 - 3], offsets=[2])
    np.testing.assert_array_equal(y, refimpl.apply_rope(x, [2**53 - 1]))


def test_packed_batches_and_shards_are_bounded():
    with pytest.raises(ValueError, match="cu_seqlens must end at most at MAX_POSITION"):
        refimpl.varlen_positions([0, 2**40])
    with pytest.raises(ValueError, match="seq_len must be at most"):
        refimpl.context_parallel_indices(2**60, 0, 2)
    with pytest.raises(ValueError, match="offsets must lie within"):
        refimpl.varlen_positions([0, 2], offsets=np.array([2**64 - 1], np.uint64))
    assert refimpl.varlen_positions([0, 2], offsets=[2**53 - 2]).tolist() == [2**53 - 2, 2**53 - 1]


@given(
    st.lists(st.integers(0, 40), min_size=1, max_size=4),
    st.lists(st.integers(-(2**53), 2**53), min_size=4, max_size=4),
)
def test_varlen_positions_are_the_exact_python_sums_or_refused(lengths, offsets):
    cu = np.cumsum([0, *lengths])
    off = offsets[: len(lengths)]
    want = [t + o for n, o in zip(lengths, off, strict=True) for t in range(n)]
    if want and max(abs(v) for v in want) > EXACT_INTEGER:
        with pytest.raises(ValueError, match="within \\+-2\\*\\*53"):
            refimpl.varlen_positions(cu, offsets=off)
    else:
        assert refimpl.varlen_positions(cu, offsets=off).tolist() == want


# ------------------------------------------------------------------------------------ audio
def test_audio_frame_times_are_correctly_rounded_or_refused():
    t = audio.frame_times(5, hop_length=441, sample_rate=44100, stride=3)
    assert t.tolist() == [f * 3 * 441 / 44100 for f in range(5)]
    with pytest.raises(ValueError, match="sample index must lie within"):
        audio.frame_times(10**9, hop_length=10**9)
    with pytest.raises(ValueError, match="num_frames must be at most"):
        audio.frame_times(MAX_POSITION + 1)
    with pytest.raises(ValueError, match="MAX_TABLE_ELEMENTS"):
        audio.spectrogram_patch_grid(2**20, 2**20)
    with pytest.raises(ValueError, match="MAX_TABLE_ELEMENTS"):
        audio.whisper_sinusoids(2**30, 1024)


# ------------------------------------------------------------------------------------ biases
def test_bias_sizes_and_offsets_are_bounded():
    with pytest.raises(ValueError, match="MAX_TABLE_ELEMENTS"):
        bias.alibi_bias(8, 2**16, 2**16)
    with pytest.raises(ValueError, match="query_offset must be at most"):
        bias.alibi_bias(1, 2, 2, query_offset=2**60)
    with pytest.raises(ValueError, match="q_len must be at most"):
        bias.t5_bias(np.zeros((32, 1)), 2**40, 1)
    with pytest.raises(ValueError, match="the last query position"):
        bias.t5_bias(np.zeros((32, 1)), 2, 2, query_offset=MAX_POSITION)
    b = bias.t5_bias(np.arange(32.0).reshape(32, 1), 2, 2, query_offset=MAX_POSITION - 1)
    assert b.dtype == np.float64 and b.shape == (1, 2, 2) and np.all(b == 15.0)  # far keys
