"""Files of a conformance suite: safetensors and ``.npz`` written whole or not at all, read
against limits (header length, member sizes and dtypes checked before any data is read),
hashed, and named only inside the suite directory."""

from __future__ import annotations

import hashlib
import json
import math
import os
import pathlib
import tempfile
import zipfile
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

import numpy as np

# A safetensors header above this is refused before it is read (the safetensors package's own
# limit is 100 MB; a suite's largest header, a few hundred members, is below 64 KiB).
MAX_HEADER_BYTES = 2**24
# A .npy member header is at most this long (NumPy writes 64-byte aligned headers of a few
# hundred bytes; version 2 and 3 allow 4 GiB, which no array of a suite needs).
MAX_NPY_HEADER_BYTES = 2**16
# Bytes hashed or copied per read.
_CHUNK = 2**20

_ST_NAMES = {"float64": "F64", "float32": "F32", "float16": "F16", "int64": "I64", "int32": "I32"}
_ST_DTYPES = {"F64": "<f8", "F32": "<f4", "F16": "<f2", "I64": "<i8", "I32": "<i4", "BF16": "<u2"}
#: safetensors dtypes a results file may hold outputs in.
FLOAT_DTYPES = ("F64", "F32", "F16", "BF16")


class SuiteFileError(ValueError):
    """A file of a suite or of a results directory that cannot be used, with the file named."""


@dataclass(frozen=True)
class Tensor:
    """One tensor of a safetensors file: its format name (``"F32"``, ``"BF16"`` ...), shape and
    a function returning its little-endian data as arrays, chunk by chunk (so that large
    tensors stream)."""

    dtype: str
    shape: tuple
    chunks: Callable[[], Iterable[np.ndarray]]

    @staticmethod
    def of(a: np.ndarray) -> Tensor:
        a = np.ascontiguousarray(a)
        return Tensor(_ST_NAMES[str(a.dtype)], a.shape, lambda: [a])

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * np.dtype(_ST_DTYPES[self.dtype]).itemsize


def atomic_write(path: pathlib.Path, write: Callable) -> None:
    """``write(file)`` into a temporary file beside ``path``, fsync, rename: ``path`` holds the
    old file or the complete new one, never a partial one."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        pathlib.Path(tmp).unlink(missing_ok=True)
        raise


def write_safetensors(path, tensors: Mapping[str, Tensor | np.ndarray], metadata=None) -> None:
    """Write a safetensors file, streaming each tensor's chunks (memory bounded by a chunk).

    The format: an 8-byte little-endian header length ``N``, ``N`` bytes of JSON (padded with
    spaces to a multiple of 8) mapping each name to ``dtype``, ``shape`` and ``data_offsets``
    (relative to the end of the header), ``"__metadata__"`` to a str-to-str dict, then the data.
    The file is written to a temporary name and renamed.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "a.safetensors"
    >>> write_safetensors(p, {"x": np.arange(3.0)}, {"note": "hi"})
    >>> read_safetensors(p)[0]["x"].tolist(), read_safetensors(p)[1]
    ([0.0, 1.0, 2.0], {'note': 'hi'})
    """
    tens = {
        k: (v if isinstance(v, Tensor) else Tensor.of(np.asarray(v))) for k, v in tensors.items()
    }
    header, offset = {}, 0
    for name, t in tens.items():
        header[name] = {
            "dtype": t.dtype,
            "shape": list(t.shape),
            "data_offsets": [offset, offset + t.nbytes],
        }
        offset += t.nbytes
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)

    def write(f):
        f.write(len(text).to_bytes(8, "little"))
        f.write(text)
        for name, t in tens.items():
            written = 0
            for chunk in t.chunks():
                data = np.ascontiguousarray(chunk, dtype=_ST_DTYPES[t.dtype]).tobytes()
                f.write(data)
                written += len(data)
            if written != t.nbytes:
                raise ValueError(
                    f"tensor {name!r}: chunks gave {written} bytes, shape needs {t.nbytes}"
                )

    atomic_write(pathlib.Path(path), write)


@dataclass(frozen=True)
class Member:
    """A member's declared format, shape and byte range (safetensors) or zip entry (npz)."""

    dtype: str
    shape: tuple
    start: int = 0
    stop: int = 0


def _safetensors_header(path: pathlib.Path, f) -> tuple[dict, dict, int]:
    """(members, metadata, data start) of an open safetensors file, every member checked
    against the file's size."""
    size = os.fstat(f.fileno()).st_size
    head = f.read(8)
    if len(head) < 8:
        raise SuiteFileError(f"{path}: not a safetensors file (shorter than its 8-byte header)")
    n = int.from_bytes(head, "little")
    if n > min(MAX_HEADER_BYTES, size - 8):
        raise SuiteFileError(
            f"{path}: safetensors header length {n} exceeds the file ({size} bytes) or the "
            f"limit of {MAX_HEADER_BYTES} bytes"
        )
    try:
        header = json.loads(f.read(n))
    except (ValueError, UnicodeDecodeError) as exc:
        raise SuiteFileError(f"{path}: safetensors header is not JSON ({exc})") from None
    if not isinstance(header, dict):
        raise SuiteFileError(f"{path}: safetensors header is not a JSON object")
    meta = header.pop("__metadata__", None) or {}
    if not isinstance(meta, dict):
        raise SuiteFileError(f"{path}: safetensors __metadata__ is not an object")
    members = {}
    for name, info in header.items():
        members[name] = _st_member(path, name, info, size - 8 - n)
    return members, {str(k): str(v) for k, v in meta.items()}, 8 + n


def _st_member(path, name: str, info, data_size: int) -> Member:
    where = f"{path}: tensor {name!r}"
    if not isinstance(info, dict) or not {"dtype", "shape", "data_offsets"} <= set(info):
        raise SuiteFileError(f"{where} lacks dtype, shape or data_offsets")
    dtype, shape, offsets = info["dtype"], info["shape"], info["data_offsets"]
    if dtype not in _ST_DTYPES:
        raise SuiteFileError(f"{where} has unsupported dtype {dtype!r}")
    ints = isinstance(shape, list) and isinstance(offsets, list) and len(offsets) == 2
    if not ints or not all(type(v) is int and v >= 0 for v in [*shape, *offsets]):
        raise SuiteFileError(f"{where}: shape and data_offsets must be non-negative integers")
    b0, b1 = offsets
    count = 1
    for v in shape:
        count *= v
    if b1 - b0 != count * np.dtype(_ST_DTYPES[dtype]).itemsize or b1 > data_size:
        raise SuiteFileError(
            f"{where}: data_offsets {offsets} do not hold shape {shape} of {dtype} within the "
            f"file's {data_size} data bytes"
        )
    return Member(dtype, tuple(shape), b0, b1)


def _decode(raw: bytes, dtype: str, shape: tuple) -> np.ndarray:
    a = np.frombuffer(raw, dtype=_ST_DTYPES[dtype]).copy()
    if dtype == "BF16":  # widened exactly to float32
        a = (a.astype(np.uint32) << 16).view(np.float32)
    return a.reshape(shape)


def read_safetensors(path, names=None) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """Read a safetensors file written by any implementation: arrays (``BF16`` widened exactly
    to float32) and the metadata.

    Parameters
    ----------
    path : path
    names : iterable of str, optional
        Read only these members (others are skipped without reading their data); all when
        None.

    Returns
    -------
    (dict, dict)
        ``name -> array`` and the ``__metadata__`` strings.

    Raises
    ------
    ValueError
        The file is not a well-formed safetensors file (its header longer than the file or
        than 16 MiB, a member whose byte range does not hold its shape and dtype, an unknown
        dtype), or a requested member is missing; the message names the file and the member.
    """
    p = pathlib.Path(path)
    with p.open("rb") as f:
        members, meta, start = _safetensors_header(p, f)
        wanted = list(members) if names is None else list(names)
        out = {}
        for name in wanted:
            if name not in members:
                raise SuiteFileError(f"{p}: no tensor {name!r}")
            m = members[name]
            f.seek(start + m.start)
            out[name] = _decode(f.read(m.stop - m.start), m.dtype, m.shape)
    return out, meta


def safetensors_members(path) -> dict[str, Member]:
    """The members a safetensors file declares (the header only, checked against the file)."""
    p = pathlib.Path(path)
    with p.open("rb") as f:
        return _safetensors_header(p, f)[0]


_NPY_DTYPES = {"<f8": "F64", "<f4": "F32", "<f2": "F16", "<i8": "I64", "<i4": "I32"}


def npz_members(path, names=None) -> dict[str, Member]:
    """Members an ``.npz`` file declares (its zip directory), with the ``.npy`` header of each
    member in ``names`` (all when None) read (at most 64 KiB) and its stored size checked
    against that header; other members are listed, never opened."""
    p = pathlib.Path(path)
    out = {}
    try:
        with zipfile.ZipFile(p) as z:
            for info in z.infolist():
                if not info.filename.endswith(".npy"):
                    continue
                name = info.filename[:-4]
                if names is not None and name not in names:
                    out[name] = Member("", ())
                    continue
                with z.open(info) as fp:
                    dtype, shape, header = _npy_header(p, name, fp)
                size = math.prod(shape) * np.dtype(dtype).itemsize
                if info.file_size != header + size:
                    raise SuiteFileError(
                        f"{p}: member {name!r} stores {info.file_size} bytes, its header "
                        f"declares {header + size}"
                    )
                out[name] = Member(_NPY_DTYPES[dtype], shape)
    except (zipfile.BadZipFile, OSError, EOFError) as exc:
        raise SuiteFileError(f"{p}: not a readable .npz file ({exc})") from None
    return out


def _npy_header(path, name: str, fp) -> tuple[str, tuple, int]:
    """(dtype string, shape, header length) of a .npy stream, bounded."""
    try:
        version = np.lib.format.read_magic(fp)
        if version == (1, 0):
            shape, order, dtype = np.lib.format.read_array_header_1_0(
                fp, max_header_size=MAX_NPY_HEADER_BYTES
            )
        else:
            shape, order, dtype = np.lib.format.read_array_header_2_0(
                fp, max_header_size=MAX_NPY_HEADER_BYTES
            )
    except (ValueError, OSError, EOFError) as exc:
        raise SuiteFileError(f"{path}: member {name!r} is not a .npy array ({exc})") from None
    key = dtype.newbyteorder("<").str if dtype.byteorder in "=|" else dtype.str
    if key not in _NPY_DTYPES or order:
        raise SuiteFileError(
            f"{path}: member {name!r} has dtype {dtype} ({'Fortran order' if order else ''})"
            f"; .npz members must be little-endian C-order float64/32/16 or int64/32"
        )
    return key, tuple(int(v) for v in shape), fp.tell()


def read_npz(path, names=None) -> dict[str, np.ndarray]:
    """Read members of an ``.npz`` file (all when ``names`` is None), each checked against its
    header and size before its data is read (no pickles)."""
    p = pathlib.Path(path)
    members = npz_members(p, None if names is None else set(names))
    wanted = list(members) if names is None else list(names)
    out = {}
    with zipfile.ZipFile(p) as z:
        for name in wanted:
            if name not in members:
                raise SuiteFileError(f"{p}: no member {name!r}")
            m = members[name]
            with z.open(name + ".npy") as fp:
                dtype, shape, _ = _npy_header(p, name, fp)
                size = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
                raw = fp.read(size)
            if len(raw) != size:
                raise SuiteFileError(f"{p}: member {name!r} is truncated")
            out[name] = np.frombuffer(raw, dtype=dtype).copy().reshape(m.shape)
    return out


def file_members(path, names=None) -> dict[str, Member]:
    """Declared members of a ``.safetensors`` or ``.npz`` file (an ``.npz`` member outside
    ``names`` is listed with an empty dtype, unopened)."""
    p = pathlib.Path(path)
    return npz_members(p, names) if p.suffix == ".npz" else safetensors_members(p)


def read_arrays(path, names=None) -> dict[str, np.ndarray]:
    """Members of a ``.safetensors`` or ``.npz`` file (by suffix), bounded as above."""
    p = pathlib.Path(path)
    return read_npz(p, names) if p.suffix == ".npz" else read_safetensors(p, names)[0]


def sha256(path) -> str:
    """Hex sha256 of a file, read in chunks."""
    h = hashlib.sha256()
    with pathlib.Path(path).open("rb") as f:
        while chunk := f.read(_CHUNK):
            h.update(chunk)
    return h.hexdigest()


def inside(root: pathlib.Path, name, what: str) -> pathlib.Path:
    """``root / name`` for a relative file name that stays inside ``root`` (no absolute path,
    no ``..``, no symbolic link leading out); SuiteFileError naming ``what`` otherwise."""
    if not isinstance(name, str) or not name:
        raise SuiteFileError(f"{what}: a file name must be a non-empty string, got {name!r}")
    rel = pathlib.PurePosixPath(name)
    if rel.is_absolute() or pathlib.PureWindowsPath(name).is_absolute() or ".." in rel.parts:
        raise SuiteFileError(f"{what}: file name {name!r} leaves the suite directory")
    path = root / rel
    top = root.resolve()
    if not path.resolve().is_relative_to(top):
        raise SuiteFileError(f"{what}: file {name!r} resolves outside the suite directory")
    return path
