"""Streaming cos/sin tables: chunks equal the whole table, the angle-addition bound, bounded
memory while streaming 2^22 positions, and the .npz writer."""

import io
import tracemalloc

import numpy as np
import pytest

import refimpl
from refimpl.streaming import ProgressPrinter, iter_cos_sin, write_cos_sin_npz


@pytest.mark.parametrize("chunk", [1, 7, 1000])
def test_fast_chunks_are_bit_identical_to_the_whole_table(chunk):
    c, s = refimpl.cos_sin(np.arange(2345), dim=16, attention_scaling=1.5)
    parts = list(iter_cos_sin(2345, dim=16, attention_scaling=1.5, chunk=chunk))
    assert [p0 for p0, _, _ in parts] == list(range(0, 2345, chunk))
    assert np.array_equal(np.concatenate([p[1] for p in parts]), c)
    assert np.array_equal(np.concatenate([p[2] for p in parts]), s)


def test_explicit_positions_and_inv_freq():
    pos = np.array([3.5, -2.0, 1e6, 0.0])
    theta = refimpl.inv_freq(8, 500.0)
    got = list(iter_cos_sin(pos, theta, chunk=3))
    c, s = refimpl.cos_sin(pos, theta)
    assert np.array_equal(np.concatenate([g[1] for g in got]), c)
    assert np.array_equal(np.concatenate([g[2] for g in got]), s)


@pytest.mark.skipif(np.finfo(np.longdouble).nmant < 60, reason="needs x87 80-bit long double")
@pytest.mark.parametrize("start", [0, 2**24 - 5000])
def test_angle_addition_within_its_stated_bound(start):
    theta = refimpl.inv_freq(64, 500000.0)
    n = 5000
    pos = np.arange(start, start + n)
    if start == 0:
        parts = list(iter_cos_sin(n, theta, method="addition", chunk=1500))
    else:
        parts = list(iter_cos_sin(pos, theta, method="addition", chunk=1500))
    c = np.concatenate([p[1] for p in parts])
    s = np.concatenate([p[2] for p in parts])
    # oracle: cos/sin of the exact product m * theta (float64 theta) in 64-bit long double
    ang = np.multiply.outer(pos.astype(np.longdouble), theta.astype(np.longdouble))
    bound = 2.0**-53 * (np.abs(np.multiply.outer(pos, theta)) + 8)
    assert np.all(np.abs(c - np.cos(ang)).astype(np.float64) <= bound)
    assert np.all(np.abs(s - np.sin(ang)).astype(np.float64) <= bound)
    if start == 0:  # the count form and the explicit-positions form agree
        alt = list(iter_cos_sin(pos, theta, method="addition", chunk=1500))
        assert np.array_equal(np.concatenate([p[1] for p in alt]), c)


def test_memory_stays_bounded_by_the_chunk_while_streaming_2_to_22_positions():
    n, chunk, dim = 2**22, 2**14, 8
    h = dim // 2
    bound = 16 * chunk * h * 8  # 16 chunk-sized float64 tables; the whole table is 128x more
    for method in ("fast", "addition"):
        tracemalloc.start()
        checksum = 0.0
        last = 0
        for p0, c, s in iter_cos_sin(n, dim=dim, method=method, chunk=chunk):
            checksum += float(c[-1, 0]) + float(s[-1, 0])
            last = p0 + c.shape[0]
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        assert last == n
        assert np.isfinite(checksum)
        assert peak < bound, f"{method}: peak {peak} bytes >= bound {bound}"
        assert 2 * n * h * 8 > 50 * peak  # the whole pair of tables would be far larger


def test_write_npz_round_trip_with_metadata_and_progress(tmp_path):
    path = tmp_path / "tables.npz"
    out = io.StringIO()
    write_cos_sin_npz(
        path,
        1000,
        dim=6,
        base=500.0,
        chunk=128,
        dtype="float32",
        metadata={"base": 500.0, "rope_type": "default"},
        progress=ProgressPrinter(out, every_s=0.0),
    )
    c, s = refimpl.cos_sin(np.arange(1000), dim=6, base=500.0)
    with np.load(path) as z:
        assert np.array_equal(z["cos"], c.astype(np.float32))
        assert np.array_equal(z["sin"], s.astype(np.float32))
        assert str(z["rope_type"]) == "default"
    lines = out.getvalue().splitlines()
    assert lines[-1].startswith("positions 2000 / 2000 (100.0 %)")
    assert "positions/s" in lines[0]


def test_streaming_argument_errors(tmp_path):
    with pytest.raises(ValueError, match="method must be one of"):
        next(iter_cos_sin(4, dim=2, method="slow"))
    with pytest.raises(ValueError, match="chunk must be positive"):
        next(iter_cos_sin(4, dim=2, chunk=0))
    with pytest.raises(ValueError, match="positions_or_count must be a non-negative count"):
        next(iter_cos_sin(-1, dim=2))
    with pytest.raises(ValueError, match="method='addition' needs non-negative integer"):
        next(iter_cos_sin([0.5, 1.0], dim=2, method="addition"))
    with pytest.raises(ValueError, match="metadata keys must be strings other than"):
        write_cos_sin_npz(tmp_path / "x.npz", 2, dim=2, metadata={"cos": 1})
    with pytest.raises(ValueError, match="dtype must be one of"):
        write_cos_sin_npz(tmp_path / "x.npz", 2, dim=2, dtype="int32")


@pytest.mark.parametrize("start", [0, 1000, 3 * 1024 + 17])
def test_cos_sin_addition_equals_the_streamed_tables_for_any_positions(start):
    """cos_sin(method="addition") in memory: a run of positions and the same positions in any
    order (gathered rows) give the streamed rows bit for bit, within the stated bound."""
    theta = refimpl.inv_freq(32, 500000.0)
    n = 4000
    c, s = refimpl.cos_sin(np.arange(start, start + n), theta, method="addition")
    parts = list(iter_cos_sin(np.arange(start, start + n), theta, method="addition", chunk=777))
    assert np.array_equal(c, np.concatenate([p[1] for p in parts]))
    assert np.array_equal(s, np.concatenate([p[2] for p in parts]))
    perm = np.random.default_rng(start).permutation(n)
    cp, sp_ = refimpl.cos_sin(np.arange(start, start + n)[perm], theta, method="addition")
    assert np.array_equal(cp, c[perm]) and np.array_equal(sp_, s[perm])
    ang = np.multiply.outer(np.arange(start, start + n, dtype=np.float64), theta)
    bound = 2.0**-53 * (ang + 8 + 1)  # the stated bound, plus the oracle's own 1 ulp
    c_ref, s_ref = refimpl.cos_sin(np.arange(start, start + n), theta, method="accurate")
    assert np.all(np.abs(c - c_ref) <= bound) and np.all(np.abs(s - s_ref) <= bound)
    cs, ss = refimpl.cos_sin([start, start + 5], theta, attention_scaling=0.5, method="addition")
    assert np.array_equal(cs, 0.5 * c[[0, 5]]) and np.array_equal(ss, 0.5 * s[[0, 5]])
    with pytest.raises(ValueError, match="method='addition' needs non-negative integer"):
        refimpl.cos_sin([3, -1], theta, method="addition")
    with pytest.raises(ValueError, match="method='addition' needs non-negative integer"):
        refimpl.cos_sin([0.5], theta, method="addition")


# ------------------------------------------------------------------ atomic, interruptible writes
def _rows(n_chunks: int, value: float, *, fail_after=None, wait=None, rows: int = 4):
    """A StreamedArray of n_chunks chunks of ``rows`` x 3 filled with ``value``; it raises
    KeyboardInterrupt (as Ctrl-C does) after ``fail_after`` chunks, or calls ``wait(k)``
    after chunk k."""
    from refimpl.streaming import StreamedArray

    def chunks():
        for k in range(n_chunks):
            if fail_after is not None and k == fail_after:
                raise KeyboardInterrupt
            yield np.full((rows, 3), value)
            if wait is not None:
                wait(k)

    return StreamedArray((rows * n_chunks, 3), np.float64, chunks)


def _folder_files(folder):
    return sorted(p.name for p in folder.iterdir())


@pytest.mark.parametrize("where", ["mid-member", "between-members", "first-chunk"])
def test_interrupted_write_keeps_the_previous_file(tmp_path, where):
    from refimpl.streaming import write_npz_streams

    out = tmp_path / "golden.npz"
    write_npz_streams(out, {"cos": _rows(3, 1.0), "sin": _rows(3, 2.0)})
    before = out.read_bytes()
    members = {
        "mid-member": {"cos": _rows(3, 5.0, fail_after=2), "sin": _rows(3, 6.0)},
        "between-members": {"cos": _rows(3, 5.0), "sin": _rows(3, 6.0, fail_after=0)},
        "first-chunk": {"cos": _rows(3, 5.0, fail_after=0), "sin": _rows(3, 6.0)},
    }[where]
    with pytest.raises(KeyboardInterrupt):
        write_npz_streams(out, members)
    assert out.read_bytes() == before
    assert _folder_files(tmp_path) == ["golden.npz"]  # no temporary file left behind
    with np.load(out) as z:
        assert float(z["sin"][0, 0]) == 2.0


def test_interrupted_first_write_leaves_no_file(tmp_path):
    from refimpl.streaming import write_npz_streams

    out = tmp_path / "new.npz"
    with pytest.raises(KeyboardInterrupt):
        write_npz_streams(out, {"cos": _rows(2, 1.0), "sin": _rows(2, 1.0, fail_after=1)})
    assert _folder_files(tmp_path) == []
    from refimpl.streaming import StreamedArray

    short = StreamedArray((8, 3), np.float64, _rows(1, 1.0).chunks)
    with pytest.raises(ValueError, match="chunks hold 4 rows"):  # a bad stream: no file either
        write_npz_streams(out, {"cos": _rows(2, 1.0), "sin": short})
    assert _folder_files(tmp_path) == []


def test_interrupted_cos_sin_run_keeps_the_previous_tables(tmp_path):
    out = tmp_path / "t.npz"
    write_cos_sin_npz(out, 100, dim=8, chunk=10)
    before = out.read_bytes()

    def ctrl_c(done, total, elapsed):
        if done > 130:  # inside the sin member
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        write_cos_sin_npz(out, 100, dim=8, base=500.0, chunk=10, progress=ctrl_c)
    assert out.read_bytes() == before and _folder_files(tmp_path) == ["t.npz"]


def test_concurrent_writers_leave_one_complete_file(tmp_path):
    """Writer A starts, B writes a whole file meanwhile, then A finishes: the path holds A's
    complete archive (it was renamed last), never a mixture of both."""
    import threading

    from refimpl.streaming import write_npz_streams

    out = tmp_path / "shared.npz"
    big = 8192  # rows per chunk: 192 KiB, so that the first chunk reaches the disk at once
    a_started, b_done = threading.Event(), threading.Event()

    def wait_for_b(k):
        if k == 0:
            a_started.set()
            assert b_done.wait(30)

    errors = []

    def run_a():
        try:
            first = _rows(3, 1.0, wait=wait_for_b, rows=big)  # beyond any write buffer
            write_npz_streams(out, {"cos": first, "sin": _rows(3, 1.0, rows=big)})
        except BaseException as exc:  # reported below
            errors.append(exc)

    thread = threading.Thread(target=run_a)
    thread.start()
    assert a_started.wait(30)
    write_npz_streams(out, {"cos": _rows(3, 2.0, rows=big), "sin": _rows(3, 2.0, rows=big)})
    with np.load(out) as z:  # B's complete file while A is still writing
        assert np.all(z["cos"] == 2.0) and np.all(z["sin"] == 2.0)
    b_done.set()
    thread.join(30)
    assert not errors
    with np.load(out) as z:
        assert np.all(z["cos"] == 1.0) and np.all(z["sin"] == 1.0)
    assert _folder_files(tmp_path) == ["shared.npz"]


def test_written_file_mode_follows_the_umask_and_the_previous_file(tmp_path):
    import os

    from refimpl.streaming import write_npz_streams

    out = tmp_path / "m.npz"
    old = os.umask(0o027)
    try:
        write_npz_streams(out, {"a": np.arange(3)})
    finally:
        os.umask(old)
    assert out.stat().st_mode & 0o777 == 0o640
    os.chmod(out, 0o604)
    write_npz_streams(out, {"a": np.arange(4)})
    assert out.stat().st_mode & 0o777 == 0o604


def test_writers_name_a_bad_path_and_check_the_space_first(tmp_path):
    from refimpl.streaming import check_free_space, cos_sin_npz_nbytes, write_npz_streams

    for bad in (None, 3, ["x.npz"]):
        with pytest.raises(TypeError, match=r"path must be a str or os\.PathLike"):
            write_cos_sin_npz(bad, 3, dim=2)
    with pytest.raises(ValueError, match=r"path must name a file, but .* is a folder"):
        write_cos_sin_npz(tmp_path, 3, dim=2)
    with pytest.raises(ValueError, match=r"path: the folder .* does not exist"):
        write_npz_streams(tmp_path / "missing" / "x.npz", {"a": 1})
    with pytest.raises(ValueError, match="path must not be empty"):
        write_npz_streams("", {"a": 1})
    with pytest.raises(TypeError, match="members must be a dict"):
        write_npz_streams(tmp_path / "x.npz", [("a", 1)])
    assert cos_sin_npz_nbytes(10, 4, "float32") == 2 * 10 * 4 * 4
    check_free_space(tmp_path / "x.npz", 1000)
    with pytest.raises(ValueError, match=r"path: writing .* needs about .* GiB but its folder"):
        check_free_space(tmp_path / "x.npz", 2**62)
    huge = _rows(1, 1.0)
    from refimpl.streaming import StreamedArray

    huge = StreamedArray((2**50, 3), np.float64, huge.chunks)  # 27 PiB: refused up front
    with pytest.raises(ValueError, match="needs about"):
        write_npz_streams(tmp_path / "x.npz", {"a": huge})
    assert _folder_files(tmp_path) == []


def test_stream_counts_follow_the_scalar_rule_and_the_limits(tmp_path):
    from refimpl._checks import MAX_POSITION, MAX_TABLE_ELEMENTS

    assert sum(c.shape[0] for _, c, _ in iter_cos_sin(np.array(4), dim=4)) == 4
    with pytest.raises(TypeError, match="positions_or_count as a scalar is a count"):
        next(iter_cos_sin(4.0, dim=4))
    with pytest.raises(TypeError, match="positions_or_count must be a count or positions"):
        next(iter_cos_sin(True, dim=4))
    with pytest.raises(ValueError, match=f"count of at most {MAX_POSITION}"):
        next(iter_cos_sin(2**40, dim=4))
    with pytest.raises(ValueError, match=f"MAX_TABLE_ELEMENTS = {MAX_TABLE_ELEMENTS}"):
        write_cos_sin_npz(tmp_path / "x.npz", 2**30, dim=8)
    with pytest.raises(TypeError, match="dtype must name a float dtype"):
        write_cos_sin_npz(tmp_path / "x.npz", 2, dim=2, dtype=object())
    assert _folder_files(tmp_path) == []
