"""Streaming cos/sin tables for very long contexts: chunks of positions with memory bounded by
the chunk, and an ``.npz`` writer that never holds a whole table.

A table for 2^24 positions and 64 frequencies is 8 GiB per float64 table; these functions
produce it chunk by chunk (``iter_cos_sin``) or write it straight into an ``.npz`` file
(``write_cos_sin_npz``), with an optional progress callback (``ProgressPrinter`` prints the
position count and the rate to stderr).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile
import threading
import time
import zipfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

import numpy as np

from ._checks import (
    as_positions_or_count,
    check_choice,
    check_positive_int,
    check_real,
    check_table_size,
)
from .rotary import ExactFrequencies, _TableMethod

__all__ = [
    "STREAM_METHODS",
    "ProgressPrinter",
    "StreamedArray",
    "check_free_space",
    "cos_sin_npz_nbytes",
    "iter_cos_sin",
    "write_cos_sin_npz",
    "write_npz_streams",
]

STREAM_METHODS = ("fast", "addition", "accurate", "correct")


class ProgressPrinter:
    """Progress callback for long runs: prints positions done, percent and rate.

    Parameters
    ----------
    stream : file-like, default sys.stderr
    every_s : float, default 1.0
        Minimum seconds between lines (the last call always prints).
    label : str, default "positions"

    Examples
    --------
    >>> import io
    >>> buf = io.StringIO()
    >>> p = ProgressPrinter(buf, every_s=0.0)
    >>> p(512, 1024, 0.5)
    >>> buf.getvalue()
    'positions 512 / 1024 (50.0 %), 1.02e+03 positions/s\\n'
    """

    def __init__(self, stream=None, every_s: float = 1.0, label: str = "positions"):
        self.stream = sys.stderr if stream is None else stream
        self.every_s = check_real(every_s, "every_s")
        self.label = label
        self._last = -np.inf

    def __call__(self, done: int, total: int, elapsed_s: float) -> None:
        now = time.perf_counter()
        if done < total and now - self._last < self.every_s:
            return
        self._last = now
        rate = done / elapsed_s if elapsed_s > 0 else float("inf")
        pct = 100.0 * done / total if total else 100.0
        self.stream.write(
            f"{self.label} {done} / {total} ({pct:.1f} %), {rate:.3g} {self.label}/s\n"
        )
        self.stream.flush()


def _positions_source(positions_or_count):
    """(total, chunk getter, is_count) for a count ``n`` (positions 0..n-1) or an array
    (the rule of :func:`refimpl._checks.as_positions_or_count`)."""
    count, pos = as_positions_or_count(positions_or_count)
    if pos is None:
        return count, (lambda p0, p1: np.arange(p0, p1, dtype=np.float64)), True
    return pos.shape[0], (lambda p0, p1: pos[p0:p1]), False


def iter_cos_sin(
    positions_or_count,
    inv_freq=None,
    *,
    dim: int | None = None,
    base: float = 10000.0,
    attention_scaling: float = 1.0,
    method: str = "fast",
    chunk: int = 65536,
    progress: Callable[[int, int, float], None] | None = None,
) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
    r"""Yield the cos/sin tables of :func:`refimpl.cos_sin` chunk by chunk.

    Parameters
    ----------
    positions_or_count : int or array_like, shape (seq,)
        A count ``n`` (positions ``0 .. n-1``, never materialised; a scalar integer, at most
        ``MAX_POSITION`` = 2**31) or explicit positions (a sequence). A float or boolean
        scalar is refused.
    inv_freq, dim, base, attention_scaling
        As in :func:`refimpl.cos_sin` (``inv_freq`` may be an :class:`ExactFrequencies`).
    method : {"fast", "addition", "accurate", "correct"}, default "fast"
        Exactly ``cos_sin(..., method=method)`` on each chunk (bit-identical to the whole
        table: every entry depends on its own position only); ``"correct"`` (the correctly
        rounded tables of the exact angles; ``"accurate"`` is the same) and ``"addition"``
        (angle addition from two small tables, non-negative integer positions) are described
        there. The domain of the method is checked on the whole stream before the first
        chunk (for a count, on its last position).
    chunk : int, default 65536
        Positions per chunk (memory is a small multiple of ``chunk * len(inv_freq) * 8`` bytes).
    progress : callable, optional
        Called as ``progress(done, total, elapsed_s)`` after every chunk
        (e.g. :class:`ProgressPrinter`).

    Yields
    ------
    start : int
        Index of the chunk's first position.
    cos, sin : numpy.ndarray, each shape (n_chunk, d/2), float64
        Fresh arrays for positions ``start .. start + n_chunk - 1``.

    Notes
    -----
    Book equations ``eq:rope-cos-sin`` and, for ``"addition"``, ``eq:rope-angle-addition``.

    Examples
    --------
    >>> parts = list(iter_cos_sin(5, dim=4, chunk=2))
    >>> [(start, c.shape) for start, c, s in parts]
    [(0, (2, 2)), (2, (2, 2)), (4, (1, 2))]
    >>> from refimpl import cos_sin
    >>> c_all, s_all = cos_sin(np.arange(5), dim=4)
    >>> bool(np.array_equal(np.concatenate([c for _, c, _ in parts]), c_all))
    True
    """
    check_choice(method, "method", STREAM_METHODS)
    size = check_positive_int(chunk, "chunk")
    scale = check_real(attention_scaling, "attention_scaling")
    total, get, is_count = _positions_source(positions_or_count)
    tables = _TableMethod(method, inv_freq, dim, base, scale)  # the dispatch cos_sin uses
    if not is_count:
        tables.check(get(0, total))
    elif total:
        tables.check(get(total - 1, total))
    t0 = time.perf_counter()
    for p0 in range(0, total, size):
        p1 = min(total, p0 + size)
        c, s = tables(get(p0, p1))
        if progress is not None:
            progress(p1, total, time.perf_counter() - t0)
        yield p0, c, s


def _npy_header(shape, dtype) -> bytes:
    """The ``.npy`` header (magic string included) for a C-ordered array, in the smallest
    format version that holds it (as ``np.save`` chooses)."""
    import io

    buf = io.BytesIO()
    header = {"descr": np.lib.format.dtype_to_descr(np.dtype(dtype)), "fortran_order": False}
    header["shape"] = tuple(shape)
    try:
        np.lib.format.write_array_header_1_0(buf, header)
    except ValueError:  # header too long for format 1.0
        buf = io.BytesIO()
        np.lib.format.write_array_header_2_0(buf, header)
    return buf.getvalue()


@dataclass(frozen=True)
class StreamedArray:
    """An ``.npz`` member written chunk by chunk by :func:`write_npz_streams`.

    Attributes
    ----------
    shape : tuple of int
        Shape of the whole array; chunks are consecutive blocks of rows (first axis).
    dtype : numpy dtype or str
        Stored dtype; every chunk must already have it (no silent conversion).
    chunks : callable
        ``chunks()`` returns an iterable of arrays of shape ``(rows_k, *shape[1:])`` whose
        ``rows_k`` add up to ``shape[0]``.
    """

    shape: tuple
    dtype: object
    chunks: Callable[[], Iterable[np.ndarray]]


# Bytes kept free beyond the file's own size: the zip and .npy headers (a few hundred bytes
# per member) and the filesystem's block rounding, with room to spare.
_FREE_SPACE_MARGIN = 1 << 20
_UMASK_LOCK = threading.Lock()


def _check_path(path, name: str = "path") -> str:
    """``path`` as a str naming a file whose folder exists (not a folder itself)."""
    try:
        text = os.fspath(path)
    except TypeError:
        raise TypeError(
            f"{name} must be a str or os.PathLike naming the output file, got {type(path).__name__}"
        ) from None
    text = os.fsdecode(text)
    if not text:
        raise ValueError(f"{name} must not be empty")
    if os.path.isdir(text):
        raise ValueError(f"{name} must name a file, but {text!r} is a folder")
    folder = os.path.dirname(os.path.abspath(text))
    if not os.path.isdir(folder):
        raise ValueError(f"{name}: the folder {folder!r} does not exist")
    return text


def cos_sin_npz_nbytes(num_positions: int, num_pairs: int, dtype="float64") -> int:
    """Bytes that ``cos`` and ``sin`` tables of ``(num_positions, num_pairs)`` take in an
    ``.npz`` (the two arrays; headers and metadata are covered by the margin of
    :func:`check_free_space`).

    Parameters
    ----------
    num_positions, num_pairs : int
        Rows and columns of each table (positive).
    dtype : numpy dtype or str, default "float64"
        Stored dtype.

    Returns
    -------
    int
        ``2 * num_positions * num_pairs * itemsize``.

    Examples
    --------
    >>> cos_sin_npz_nbytes(2**24, 64)  # two 8 GiB float64 tables
    17179869184
    """
    n = check_positive_int(num_positions, "num_positions")
    pairs = check_positive_int(num_pairs, "num_pairs")
    return 2 * n * pairs * np.dtype(dtype).itemsize


def check_free_space(path, nbytes: int) -> None:
    """Raise ValueError unless the folder of ``path`` has ``nbytes`` free, plus a margin.

    Call it before a long write: the writers here put the new file next to the old one and
    replace it only when complete, so the old file's space is not counted as free.

    Parameters
    ----------
    path : str or path-like
        The output file (it need not exist; its folder must).
    nbytes : int
        Size of the file to be written (e.g. :func:`cos_sin_npz_nbytes`).

    Raises
    ------
    TypeError
        ``path`` is not a str or path-like.
    ValueError
        ``path`` is a folder, its folder does not exist, or the folder has less than
        ``nbytes`` plus 1 MiB free (the margin covers headers and filesystem blocks).

    Examples
    --------
    >>> import tempfile, os
    >>> check_free_space(os.path.join(tempfile.mkdtemp(), "t.npz"), 1024)
    """
    text = _check_path(path)
    need = int(nbytes)
    folder = os.path.dirname(os.path.abspath(text))
    free = shutil.disk_usage(folder).free
    if need + _FREE_SPACE_MARGIN > free:
        raise ValueError(
            f"path: writing {text!r} needs about {need / 2**30:.3g} GiB but its folder has "
            f"{free / 2**30:.3g} GiB free"
        )


def _new_file_mode(path: str) -> int:
    """The permission bits the output should get: the old file's, or those ``open`` would
    give a new one (0o666 less the umask; read under a lock, since reading it sets it)."""
    try:
        return os.stat(path).st_mode & 0o7777
    except OSError:
        pass
    with _UMASK_LOCK:
        mask = os.umask(0o022)
        os.umask(mask)
    return 0o666 & ~mask


@contextlib.contextmanager
def _atomic_file(path: str):
    """A binary file in the folder of ``path`` that becomes ``path`` only when complete.

    On a normal exit the file is flushed, fsynced and renamed onto ``path`` (``os.replace``
    is atomic on POSIX and Windows); on any exception, ``KeyboardInterrupt`` included, the
    temporary file is removed and ``path`` keeps its previous content. Concurrent writers
    each have their own temporary file, so ``path`` ends as one complete file.
    """
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(
        dir=folder, prefix="." + os.path.basename(path) + ".", suffix=".part"
    )
    try:
        with os.fdopen(fd, "wb") as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, _new_file_mode(path))
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    with contextlib.suppress(OSError):  # make the rename itself durable where folders open
        dir_fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


def _member_nbytes(value) -> int:
    if isinstance(value, StreamedArray):
        return int(np.prod([int(k) for k in value.shape])) * np.dtype(value.dtype).itemsize
    return int(np.asarray(value).nbytes)


def _write_member(zf, name: str, value) -> None:
    with zf.open(name + ".npy", "w", force_zip64=True) as fh:
        if not isinstance(value, StreamedArray):
            np.lib.format.write_array(fh, np.asarray(value), allow_pickle=False)
            return
        dt = np.dtype(value.dtype)
        shape = tuple(int(k) for k in value.shape)
        fh.write(_npy_header(shape, dt))
        rows = 0
        for part in value.chunks():
            part = np.asarray(part)
            if part.dtype != dt or part.shape[1:] != shape[1:]:
                raise ValueError(
                    f"member {name!r}: chunk of dtype {part.dtype} and shape "
                    f"{part.shape} does not match dtype {dt} and shape {shape}"
                )
            rows += part.shape[0]
            if rows > shape[0]:
                break
            fh.write(np.ascontiguousarray(part).tobytes())
        if rows != shape[0]:
            raise ValueError(f"member {name!r}: chunks hold {rows} rows, its shape says {shape[0]}")


def write_npz_streams(path, members: dict) -> None:
    """Write an uncompressed ``.npz`` archive whose members are arrays or :class:`StreamedArray`.

    Members are written in the order of ``members``; a :class:`StreamedArray` is written chunk
    by chunk, so memory is bounded by its largest chunk. ``np.load`` reads the file as it reads
    ``np.savez`` output, with the same arrays.

    The write is atomic: the archive goes to a temporary file in the same folder, which is
    fsynced and renamed onto ``path`` only when complete. An interruption (an exception,
    Ctrl-C) leaves ``path`` as it was (the previous file, or no file) and no temporary file;
    of two concurrent writers, ``path`` ends as the complete file of one of them. The free
    space is checked first (:func:`check_free_space`).

    Parameters
    ----------
    path : str or path-like
        Output file (a zip64 archive, members stored); its folder must exist.
    members : dict
        Name (str, without ``.npy``) to an array-like or a :class:`StreamedArray`.

    Raises
    ------
    TypeError
        ``path`` is not a str or path-like.
    ValueError
        ``path`` is a folder or its folder does not exist; the folder lacks the space; a name
        is not a string, or a chunk's dtype, trailing shape or the total row count does not
        match its :class:`StreamedArray` (the file is then not written).

    Examples
    --------
    >>> import tempfile, os
    >>> f = os.path.join(tempfile.mkdtemp(), "s.npz")
    >>> rows = StreamedArray((5, 2), "int64", lambda: (np.ones((k, 2), np.int64) for k in (3, 2)))
    >>> write_npz_streams(f, {"a": rows, "b": 7.0})
    >>> with np.load(f) as z:
    ...     z["a"].shape, int(z["a"].sum()), float(z["b"])
    ((5, 2), 10, 7.0)
    """
    text = _check_path(path)
    if not isinstance(members, dict):
        raise TypeError(f"members must be a dict of name -> array, got {type(members).__name__}")
    for name in members:
        if not isinstance(name, str):
            raise ValueError(f"members keys must be strings, got {name!r}")
    check_free_space(text, sum(_member_nbytes(v) for v in members.values()))
    with _atomic_file(text) as raw:
        with zipfile.ZipFile(raw, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as zf:
            for name, value in members.items():
                _write_member(zf, name, value)


def write_cos_sin_npz(
    path,
    positions_or_count,
    inv_freq=None,
    *,
    dim: int | None = None,
    base: float = 10000.0,
    attention_scaling: float = 1.0,
    method: str = "fast",
    chunk: int = 65536,
    dtype="float64",
    metadata: dict | None = None,
    progress: Callable[[int, int, float], None] | None = None,
) -> None:
    """Write ``cos`` and ``sin`` tables into an ``.npz`` file chunk by chunk.

    Parameters
    ----------
    path : str or path-like
        Output file (an uncompressed zip64 archive that ``np.load`` reads), written
        atomically as by :func:`write_npz_streams` (an interrupted run leaves the previous
        file intact), after a check of the free space.
    positions_or_count, inv_freq, dim, base, attention_scaling, method, chunk
        As in :func:`iter_cos_sin`; each table has at most ``MAX_TABLE_ELEMENTS`` (2**31)
        entries.
    dtype : {"float64", "float32", "float16"}, default "float64"
        Stored dtype; float64 values are rounded once to it.
    metadata : dict, optional
        Extra members: each value is stored with ``np.asarray`` under its key.
    progress : callable, optional
        As in :func:`iter_cos_sin`; ``total`` counts both tables (``2 * seq``).

    Notes
    -----
    The tables are generated twice (one pass for ``cos``, one for ``sin``), because zip members
    are written one after the other; memory stays bounded by the chunk.

    Examples
    --------
    >>> import tempfile, os
    >>> f = os.path.join(tempfile.mkdtemp(), "t.npz")
    >>> write_cos_sin_npz(f, 3, dim=2, metadata={"base": 10000.0})
    >>> with np.load(f) as z:
    ...     sorted(z.files), z["cos"].shape, float(z["base"])
    (['base', 'cos', 'sin'], (3, 1), 10000.0)
    """
    text = _check_path(path)
    dt = np.dtype(check_choice(_dtype_name(dtype), "dtype", ("float64", "float32", "float16")))
    total, _, _ = _positions_source(positions_or_count)
    theta = _TableMethod(method, inv_freq, dim, base, 1.0).theta
    check_table_size(total, theta.shape[0], "each table")
    meta = {} if metadata is None else dict(metadata)
    for key in meta:
        if key in ("cos", "sin") or not isinstance(key, str):
            raise ValueError(f"metadata keys must be strings other than 'cos' and 'sin': {key!r}")
    kwargs = dict(attention_scaling=attention_scaling, method=method, chunk=chunk)
    if inv_freq is None:
        kwargs.update(dim=dim, base=base)
    else:
        kwargs["inv_freq"] = inv_freq if isinstance(inv_freq, ExactFrequencies) else theta
    t0 = time.perf_counter()

    def table(which):
        def chunks():
            for p0, c, s in iter_cos_sin(positions_or_count, **kwargs):
                yield np.asarray((c, s)[which], dtype=dt)
                if progress is not None:
                    done = which * total + p0 + c.shape[0]
                    progress(done, 2 * total, time.perf_counter() - t0)

        return StreamedArray((total, theta.shape[0]), dt, chunks)

    write_npz_streams(text, {"cos": table(0), "sin": table(1), **meta})


def _dtype_name(dtype) -> str:
    """The dtype's name; None (which NumPy reads as float64) and non-dtypes are refused."""
    try:
        if not isinstance(dtype, str | np.dtype | type):
            raise TypeError
        return str(np.dtype(dtype))
    except TypeError:
        raise TypeError(f"dtype must name a float dtype, got {dtype!r}") from None
