r"""A language-neutral conformance suite for RoPE kernels: golden cases and a verifier.

:func:`write_suite` writes, for one model configuration and one input dtype, a directory of
cases: for each case one ``.safetensors`` file and one ``.npz`` file holding the same arrays
(inputs ``q`` and ``k`` in the dtype, the positions in every form the case uses, ``inv_freq``,
the expected outputs ``q_out`` and ``k_out`` in float64, and per-element tolerances for each
pipeline class), and a ``manifest.json`` that describes every case (shapes, layout, position
form, the formula, the tolerance model, the refimpl version and the config's hash).

A kernel under test reads the inputs, writes its outputs under the expected outputs' names
into a results directory that mirrors the suite (same file names, same format; extra arrays
are ignored), and :func:`verify_outputs` (``python -m refimpl verify SUITE RESULTS``) reports
per case the worst element, the tightest pipeline class the results meet and, when cases
fail, which known mistake the probe cases match and what the checker
(:func:`refimpl.check.check_rope_arrays`) reads from the probe rows.

Tolerance model (per element, book page "Testing your kernel against refimpl"). For the pair
:math:`(a, b)` of output element :math:`y` at position :math:`m` with frequency
:math:`\theta_i` and attention scaling :math:`s`, with :math:`|x| = |x_a| + |x_b|` and
:math:`u` the unit roundoff of the dtype (float32 :math:`2^{-24}`, bfloat16 :math:`2^{-8}`,
float16 :math:`2^{-11}`):

.. math::

    \mathrm{allowed} = \kappa\, s\, |x| \,\big(e_{\mathrm{class}}(m, \theta_i) + 4u\big)
    + \mathrm{tiny}

with :math:`\kappa = 2` (:data:`MARGIN`) and the table error of each pipeline class
(``numerics-notes`` §5): ``"table-dtype"`` (float64 angles, tables rounded to the dtype)
:math:`e = u`; ``"float32-angles"`` (float32 frequencies and angles, as transformers and vLLM
compute them) :math:`e = 3 \cdot 2^{-24} |m| \theta_i + 2^{-22}` (plus :math:`u` below
float32); ``"half-angles"`` (angles formed in bfloat16, or float16 for float16 input: the
most common RoPE bug) :math:`e = \min(2, 3 u_h |m| \theta_i + 2 u_h)`. Features that are not
rotated must be copied exactly (allowed 0).
"""

from __future__ import annotations

import hashlib
import json
import os
import pathlib
import tempfile
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np

from ._checks import check_choice
from .check import check_rope_arrays
from .config import load_config, rope_schedule
from .positions import varlen_positions
from .rotary import apply_rope, pair_indices

__all__ = [
    "DTYPES",
    "MARGIN",
    "PIPELINES",
    "CaseResult",
    "VerifyReport",
    "read_safetensors",
    "verify_outputs",
    "write_safetensors",
    "write_suite",
]

FORMAT = "refimpl-conformance/1"
DTYPES = ("float32", "bfloat16", "float16")
# Pipeline classes from the tightest to the loosest; a result passes when it meets one of the
# first two (the third, angles formed in half precision, is the bug the suite exists to catch).
PIPELINES = ("table-dtype", "float32-angles", "half-angles")
ACCEPTED = PIPELINES[:2]
# Unit roundoff of each input dtype (half an ulp at 1).
UNIT = {"float32": 2.0**-24, "bfloat16": 2.0**-8, "float16": 2.0**-11}
# Smallest positive (subnormal) number of each dtype: the floor of every tolerance.
TINY = {"float32": 2.0**-149, "bfloat16": 2.0**-133, "float16": 2.0**-24}
# Safety factor over the error envelopes (numerics-notes §5.4 measured them with a 1.4x margin).
MARGIN = 2.0
FORMULA = (
    "for each pair (a_i, b_i) of the rotated slice [rotary_offset, rotary_offset + rotary_dim): "
    "c = s cos(m inv_freq[i]), t = s sin(m inv_freq[i]); y[a_i] = x[a_i] c - x[b_i] t, "
    "y[b_i] = x[a_i] t + x[b_i] c; pairs (i, i + r/2) for pairing 'half', (2i, 2i+1) for "
    "'interleaved'; output_order 'half' writes pair i to (i, i + r/2); other features copied"
)

# ---------------------------------------------------------------- safetensors


_ST_NAMES = {"float64": "F64", "float32": "F32", "float16": "F16", "int64": "I64", "int32": "I32"}
_ST_DTYPES = {"F64": "<f8", "F32": "<f4", "F16": "<f2", "I64": "<i8", "I32": "<i4", "BF16": "<u2"}


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


def _atomic_write(path: pathlib.Path, write: Callable) -> None:
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

    _atomic_write(pathlib.Path(path), write)


def read_safetensors(path) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """Read a safetensors file written by any implementation: arrays (``BF16`` widened exactly
    to float32) and the metadata."""
    raw = bytearray(pathlib.Path(path).read_bytes())  # writable arrays for the caller
    if len(raw) < 8:
        raise ValueError(f"{path}: not a safetensors file (shorter than its 8-byte header length)")
    n = int.from_bytes(raw[:8], "little")
    try:
        header = json.loads(raw[8 : 8 + n])
    except ValueError as exc:
        raise ValueError(f"{path}: safetensors header is not JSON ({exc})") from None
    meta = header.pop("__metadata__", {}) or {}
    out = {}
    for name, info in header.items():
        if info["dtype"] not in _ST_DTYPES:
            raise ValueError(f"{path}: tensor {name!r} has unsupported dtype {info['dtype']}")
        b0, b1 = info["data_offsets"]
        a = np.frombuffer(
            raw,
            dtype=_ST_DTYPES[info["dtype"]],
            count=(b1 - b0) // np.dtype(_ST_DTYPES[info["dtype"]]).itemsize,
            offset=8 + n + b0,
        )
        if info["dtype"] == "BF16":
            a = (a.astype(np.uint32) << 16).view(np.float32)
        out[name] = a.reshape(info["shape"])
    return out, meta


# ---------------------------------------------------------------- inputs in the dtype


def _in_dtype(x64: np.ndarray, dtype: str) -> tuple[np.ndarray, Tensor, np.ndarray]:
    """Values of ``x64`` rounded once to ``dtype``: (their float64 values, the safetensors
    tensor, the .npz array; bfloat16 goes to .npz as float32, which holds it exactly)."""
    if dtype == "bfloat16":
        u = x64.astype(np.float32).view(np.uint32)  # the float32 draw *is* the input's source
        bits = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)  # round to nearest even
        f32 = (bits.astype(np.uint32) << 16).view(np.float32)
        return f32.astype(np.float64), Tensor("BF16", bits.shape, lambda: [bits]), f32
    a = x64.astype(dtype)
    return a.astype(np.float64), Tensor.of(a), a


# ---------------------------------------------------------------- cases


@dataclass
class _Case:
    """One golden case: float64 inputs (exact in the dtype), the position keywords of
    :func:`refimpl.rotary.apply_rope`, the position of every token (broadcastable to
    ``q.shape[:-1]`` and ``k.shape[:-1]``), the position arrays to store and the layout."""

    name: str
    q: np.ndarray
    k: np.ndarray
    keywords: dict
    m_q: np.ndarray
    m_k: np.ndarray
    arrays: dict
    layout: str
    form: str
    strided: dict | None = None


def _spec_layout(spec) -> dict:
    """The rotation a spec defines, as the manifest and the verifier describe it."""
    return {
        "rope_type": spec.rope_type,
        "dim": int(spec.dim),
        "rotary_dim": int(spec.rotary_dim),
        "rotary_offset": int(spec.rotary_offset),
        "pairing": spec.pairing,
        "output_order": spec.output_order,
        "attention_scaling": float(spec.attention_scaling),
        "base": float(spec.base),
    }


def _long_positions(top: int) -> np.ndarray:
    """64 log-spaced positions from 2**16 up to ``top - 1`` (and ``top - 1`` itself)."""
    p = np.unique(np.geomspace(2**16, top - 1, 63).astype(np.int64))
    return np.unique(np.concatenate([p, [top - 1]]))


def _cases(spec, rng, top: int) -> list[_Case]:
    """Prefill, batched decode with offsets, packed varlen, long positions, odd head counts,
    a strided view and basis-vector probes, for one spec; positions below ``top``."""
    d = int(spec.dim)

    def x(*shape):
        return rng.standard_normal((*shape, d))

    out = []
    pos = np.arange(64)
    out.append(
        _Case(
            "prefill",
            x(1, 4, 64),
            x(1, 2, 64),
            {"positions": pos},
            pos,
            pos,
            {"positions": pos},
            "bhsd",
            "positions",
        )
    )
    off = np.array([0, 17, min(4095, top - 1), top - 1], dtype=np.int64)
    ids = off[:, None]
    out.append(
        _Case(
            "decode",
            x(4, 4, 1),
            x(4, 2, 1),
            {"positions": [0], "offsets": off},
            ids[:, None],
            ids[:, None],
            {"positions": np.zeros(1, np.int64), "offsets": off, "position_ids": ids},
            "bhsd",
            "offsets",
        )
    )
    cu = np.array([0, 5, 16, 17, 40], dtype=np.int64)
    voff = np.array([0, 100, 7, min(2000, top - 40)], dtype=np.int64)
    tok = varlen_positions(cu, voff)
    out.append(
        _Case(
            "varlen",
            x(40, 4),
            x(40, 2),
            {"positions": None, "cu_seqlens": cu, "offsets": voff},
            tok[:, None],
            tok[:, None],
            {"cu_seqlens": cu, "offsets": voff, "positions": tok},
            "thd",
            "cu_seqlens",
        )
    )
    return out + _far_cases(spec, rng, top)


def _far_cases(spec, rng, top: int) -> list[_Case]:
    """Long positions (2**16 up to the bound, at most 2**24), odd head counts, a strided
    view and basis-vector probes at chosen positions."""
    d = int(spec.dim)

    def x(*shape):
        return rng.standard_normal((*shape, d))

    out = []
    if top > 2**16:
        lp = _long_positions(min(top, 2**24 + 1))
        out.append(
            _Case(
                "long",
                x(1, 2, lp.size),
                x(1, 1, lp.size),
                {"positions": lp},
                lp,
                lp,
                {"positions": lp},
                "bhsd",
                "positions",
            )
        )
    op = np.arange(9) * 37 + 5
    out.append(
        _Case(
            "odd-heads",
            x(1, 3, 9),
            x(1, 1, 9),
            {"positions": op},
            op,
            op,
            {"positions": op},
            "bhsd",
            "positions",
        )
    )
    out.append(_strided_case(spec, rng))
    probe = np.array([p for p in (0, 1, 2, 3, 7, 100, 4096, 65537) if p < top], dtype=np.int64)
    pp = np.repeat(probe, d)
    basis = np.tile(np.eye(d), (probe.size, 1))[None, None]  # row j of each block: e_j
    out.append(
        _Case(
            "probe",
            basis,
            basis.copy(),
            {"positions": pp},
            pp,
            pp,
            {"positions": pp},
            "bhsd",
            "positions",
        )
    )
    return out


def _strided_case(spec, rng) -> _Case:
    """q as a view into a larger stored buffer: (B, S, H, D+8) rows with padding, viewed as
    (B, H, S, D) starting at feature 3 of head 1 (offset and strides in elements)."""
    d = int(spec.dim)
    b, s, h, w = 1, 24, 5, d + 8
    buf = rng.standard_normal((b, s, h, w))
    offset, strides = 1 * w + 3, (s * h * w, w, h * w, 1)
    view = np.lib.stride_tricks.as_strided(
        buf.reshape(-1)[offset:], shape=(b, 4, s, d), strides=[st * 8 for st in strides]
    )
    pos = np.arange(s) * 3 + 1
    case = _Case(
        "strided",
        view.copy(),
        rng.standard_normal((b, 2, s, d)),
        {"positions": pos},
        pos,
        pos,
        {"positions": pos},
        "bhsd",
        "positions",
    )
    case.strided = {
        "buffer": buf.reshape(-1),
        "offset": offset,
        "shape": [b, 4, s, d],
        "strides": list(strides),
    }
    return case


# ---------------------------------------------------------------- tolerances


def _table_error(cls: str, dtype: str, m: np.ndarray, theta: np.ndarray) -> np.ndarray:
    """Envelope of |cos, sin error| of a pipeline class at positions |m| (.., 1) and
    frequencies theta (h,) (numerics-notes §5.3-5.4)."""
    u = UNIT[dtype]
    if cls == "table-dtype":
        return np.full(np.broadcast_shapes(m.shape, theta.shape), u)
    if cls == "float32-angles":
        return 3 * 2.0**-24 * m * theta + 2.0**-22 + (u if dtype != "float32" else 0.0)
    uh = UNIT["float16" if dtype == "float16" else "bfloat16"]
    return np.minimum(2.0, 3 * uh * m * theta + 2 * uh)


def _pair_slots(layout: Mapping) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Input pairs (first, second) and the output slots they go to, within the rotated slice."""
    r = layout["rotary_dim"]
    first, second = pair_indices(r, layout["pairing"])
    if layout["output_order"] == "half":
        return first, second, np.arange(r // 2), np.arange(r // 2, r)
    return first, second, first, second


def allowed_error(x, m, inv_freq, layout: Mapping, dtype: str, cls: str) -> np.ndarray:
    """Per-element allowed |got - expected| for input ``x`` (float64 values) at token
    positions ``m`` (broadcastable to ``x.shape[:-1]``): see the module docstring."""
    lo, r = layout["rotary_offset"], layout["rotary_dim"]
    first, second, oa, ob = _pair_slots(layout)
    xs = x[..., lo : lo + r]
    mag = np.abs(xs[..., first]) + np.abs(xs[..., second])  # |x_a| + |x_b|
    mm = np.abs(np.broadcast_to(m, x.shape[:-1]).astype(np.float64))[..., None]
    e = _table_error(cls, dtype, mm, np.asarray(inv_freq))
    s = abs(layout["attention_scaling"])
    tol = MARGIN * s * mag * (e + 4 * UNIT[dtype]) + TINY[dtype]
    allowed = np.zeros(x.shape)
    allowed[..., lo + oa] = tol
    allowed[..., lo + ob] = tol
    return allowed


# ---------------------------------------------------------------- writing


def _expected(x, case: _Case, spec, layout) -> np.ndarray:
    return apply_rope(
        x,
        inv_freq=spec.inv_freq,
        pairing=layout["pairing"],
        attention_scaling=layout["attention_scaling"],
        rotary_dim=layout["rotary_dim"],
        rotary_offset=layout["rotary_offset"],
        output_order=layout["output_order"],
        **case.keywords,
    )


def _write_case(folder: pathlib.Path, case: _Case, spec, dtype: str) -> dict:
    """Write one case's .safetensors and .npz; return its manifest entry."""
    layout = _spec_layout(spec)
    st, npz, entry_inputs = {}, {}, {}
    values = {}
    for name, x in (("q", case.q), ("k", case.k)):
        if name == "q" and case.strided is not None:
            buf, t, a = _in_dtype(case.strided["buffer"], dtype)
            st["q_buffer"], npz["q_buffer"] = t, a
            sh, strides, off = (
                case.strided["shape"],
                case.strided["strides"],
                case.strided["offset"],
            )
            view = np.lib.stride_tricks.as_strided(
                buf[off:], shape=sh, strides=[s * 8 for s in strides]
            )
            values[name] = view.copy()
            entry_inputs[name] = {
                "buffer": "q_buffer",
                "offset": off,
                "shape": sh,
                "strides": strides,
            }
            continue
        v, t, a = _in_dtype(x, dtype)
        values[name], st[name], npz[name] = v, t, a
        entry_inputs[name] = {"array": name, "shape": list(x.shape)}
    for name, a in case.arrays.items():
        st[name] = npz[name] = np.asarray(a, dtype=np.int64)
    st["inv_freq"] = npz["inv_freq"] = np.asarray(spec.inv_freq, dtype=np.float64)
    tolerances = {cls: {} for cls in PIPELINES}
    for name, m in (("q", case.m_q), ("k", case.m_k)):
        y = _expected(values[name], case, spec, layout)
        st[f"{name}_out"] = npz[f"{name}_out"] = y
        for cls in PIPELINES:
            tol = allowed_error(values[name], m, spec.inv_freq, layout, dtype, cls)
            t32 = tol.astype(np.float32)  # stored in float32, rounded up
            t32 = np.where(t32 < tol, np.nextafter(t32, np.float32(np.inf)), t32)
            key = f"{name}_allowed_{cls.replace('-', '_')}"
            st[key] = npz[key] = t32
            tolerances[cls][name] = key
    base = folder / case.name
    write_safetensors(base.with_suffix(".safetensors"), st, _file_metadata(case, layout))
    _atomic_write(base.with_suffix(".npz"), lambda f: np.savez(f, **npz))
    return {
        "name": case.name,
        "files": {"safetensors": f"{case.name}.safetensors", "npz": f"{case.name}.npz"},
        "layout": case.layout,
        "position_form": case.form,
        "position_arrays": sorted(case.arrays),
        "rope": layout,
        "inputs": entry_inputs,
        "expected": {"q": "q_out", "k": "k_out"},
        "tolerances": tolerances,
        "max_position": int(max(np.max(np.abs(case.m_q)), np.max(np.abs(case.m_k)))),
    }


def _file_metadata(case: _Case, layout: Mapping) -> dict[str, str]:
    """What a kernel needs besides the arrays, as the safetensors header's string metadata
    (so that a reader in any language needs no manifest parser)."""
    meta = {"format": FORMAT, "case": case.name, "layout": case.layout, "position_form": case.form}
    meta.update({k: repr(v) if isinstance(v, float) else str(v) for k, v in layout.items()})
    if case.strided is not None:
        meta["q_view_offset"] = str(case.strided["offset"])
        meta["q_view_shape"] = ",".join(map(str, case.strided["shape"]))
        meta["q_view_strides"] = ",".join(map(str, case.strided["strides"]))
    return meta


def _config_hash(cfg: Mapping) -> str:
    return hashlib.sha256(json.dumps(cfg, sort_keys=True, default=str).encode()).hexdigest()


def write_suite(config, out_dir, *, dtype: str = "float32", seed: int = 0, progress=None) -> dict:
    """Write the golden cases of one model configuration for kernels that take ``dtype`` input.

    Parameters
    ----------
    config : dict or path
        A model ``config.json`` (as :func:`refimpl.config.rope_schedule` reads it).
    out_dir : path
        Directory to write (created if missing): one ``.safetensors`` and one ``.npz`` per
        case and ``manifest.json``, each written to a temporary file and renamed.
    dtype : {"float32", "bfloat16", "float16"}, default "float32"
        Dtype of the inputs ``q`` and ``k``; the expected outputs are float64.
    seed : int, default 0
        Seed of the random inputs.
    progress : callable, optional
        ``progress(done, total, name)`` after each case.

    Returns
    -------
    dict
        The manifest.

    Notes
    -----
    Cases, for every distinct layer spec of the config's schedule
    (:func:`refimpl.config.rope_schedule`; names prefixed ``layer<first>-`` when there are
    several, and each case lists its layers): prefill, batched decode with per-sequence
    offsets, a packed varlen batch, long
    positions (2**16 up to the config's ``max_position_embeddings``, at most 2**24), odd head
    counts, a strided view into a stored buffer, and basis-vector probes; for scaling methods
    whose frequencies switch with the sequence length (dynamic, longrope) the prefill case is
    written on both sides of the switch. Each case is generated and written on its own, so
    memory is bounded by one case.
    """
    check_choice(dtype, "dtype", DTYPES)
    cfg, source = load_config(config)
    folder = pathlib.Path(out_dir)
    folder.mkdir(parents=True, exist_ok=True)
    specs = _specs(cfg)
    rng = np.random.default_rng(seed)
    plan = [
        (prefix, spec, layers, case)
        for prefix, spec, top, layers in specs
        for case in _cases(spec, rng, top)
    ]
    entries = []
    for n, (prefix, spec, layers, case) in enumerate(plan):
        case.name = prefix + case.name
        entries.append({**_write_case(folder, case, spec, dtype), "layers": layers})
        if progress is not None:
            progress(n + 1, len(plan), case.name)
    manifest = _manifest(cfg, source, dtype, entries)
    text = json.dumps(manifest, indent=1).encode()
    _atomic_write(folder / "manifest.json", lambda f: f.write(text))
    return manifest


def _manifest(cfg: Mapping, source, dtype: str, entries: list) -> dict:
    """The suite's description: format, versions, the formula, the tolerance model, cases."""
    from . import __version__

    return {
        "format": FORMAT,
        "refimpl_version": __version__,
        "config_source": str(source),
        "config_sha256": _config_hash(cfg),
        "dtype": dtype,
        "formula": FORMULA,
        "pipelines": list(PIPELINES),
        "accepted_pipelines": list(ACCEPTED),
        "tolerance_model": {
            "allowed": "MARGIN * s * (|x_a| + |x_b|) * (e_class(m, theta_i) + 4 u) + tiny",
            "MARGIN": MARGIN,
            "u": UNIT[dtype],
            "tiny": TINY[dtype],
            "e": {
                "table-dtype": "u",
                "float32-angles": "3 * 2**-24 * |m| * theta_i + 2**-22 (+ u below float32)",
                "half-angles": "min(2, 3 u_h |m| theta_i + 2 u_h), u_h of bfloat16 (float16)",
            },
            "pass_through": "copied exactly (allowed 0)",
        },
        "results": "a directory with, for each case file, a file of the same name and format "
        "holding q_out and k_out (any float dtype; extra arrays ignored)",
        "cases": entries,
    }


def _specs(cfg: Mapping) -> list[tuple[str, object, int, list[int]]]:
    """(case-name prefix, spec, positions bound, layers) for every distinct layer spec of the
    config's schedule (:func:`refimpl.config.rope_schedule`; layers without RoPE skipped), and
    two specs, either side of the switch, for a length-dependent method."""
    schedule = rope_schedule(cfg)
    groups = {k: v for k, v in schedule.groups().items() if k is not None}
    specs = schedule.specs()
    out = []
    for key, layers in groups.items():
        spec, first = specs[key], layers[0]
        prefix = "" if len(groups) == 1 else f"layer{first}-"
        top = int(spec.max_position or 2**16)
        if spec.rope_type not in ("dynamic", "longrope"):
            out.append((prefix, spec, top, layers))
            continue
        orig = int(spec.params.get("original_max_position", top))
        above = max(top, orig + 1)
        below_spec = rope_schedule(cfg, seq_len=orig)[first].spec
        above_spec = rope_schedule(cfg, seq_len=above)[first].spec
        out.append((f"{prefix}below-switch-", below_spec, orig, layers))
        out.append((f"{prefix}above-switch-", above_spec, above, layers))
    return out


# ---------------------------------------------------------------- verifying


@dataclass
class CaseResult:
    """Verdict on one case: the worst element (largest error over allowed error) of the
    results, and the tightest pipeline class every element meets (``""`` if none)."""

    name: str
    ok: bool
    index: tuple = ()
    position: float | None = None
    pair: int | None = None
    expected: float = 0.0
    got: float = 0.0
    allowed: float = 0.0
    tensor: str = ""
    pipeline: str = ""
    message: str = ""

    def __str__(self) -> str:
        head = f"{'PASS' if self.ok else 'FAIL'} {self.name}"
        if not self.index:
            return f"{head}: {self.message or 'no elements'}"
        where = f"{self.tensor}{list(self.index)}"
        pair = "pass-through" if self.pair is None else f"pair {self.pair}"
        return (
            f"{head} [{self.pipeline or 'no pipeline class'}]: {self.message}worst {where} "
            f"at position {self.position:g} ({pair}): expected {self.expected:.9g}, "
            f"got {self.got:.9g}, allowed {self.allowed:.3g}"
        )


@dataclass
class VerifyReport:
    """Result of :func:`verify_outputs`: ``ok`` when every case meets an accepted class."""

    ok: bool
    cases: list[CaseResult] = field(default_factory=list)
    diagnosis: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        n_ok = sum(c.ok for c in self.cases)
        lines = [f"{'PASS' if self.ok else 'FAIL'}: {n_ok} of {len(self.cases)} cases pass"]
        lines += [f"  {c}" for c in self.cases]
        lines += [f"diagnosis: {d}" for d in self.diagnosis]
        return "\n".join(lines)


def _read_case_file(path: pathlib.Path) -> dict[str, np.ndarray]:
    if path.suffix == ".npz":
        with np.load(path) as z:
            return {k: z[k] for k in z.files}
    return read_safetensors(path)[0]


def _results_file(results: pathlib.Path, entry: Mapping) -> pathlib.Path | None:
    for fmt in ("safetensors", "npz"):
        p = results / entry["files"][fmt]
        if p.is_file():
            return p
    return None


def _token_positions(arrays: Mapping, entry: Mapping, shape) -> np.ndarray:
    """Position of every row of a tensor of ``shape`` (the leading axes)."""
    if entry["position_form"] == "cu_seqlens":
        return np.broadcast_to(arrays["positions"][:, None], shape[:-1])
    if entry["position_form"] == "offsets":
        return np.broadcast_to(arrays["position_ids"][:, None, :], shape[:-1])
    return np.broadcast_to(arrays["positions"], shape[:-1])


def _judge(entry, suite: dict, got: dict) -> CaseResult:
    """Compare one case's results with the expected outputs, class by class."""
    name = entry["name"]
    ratios, worst = {}, None
    for t in ("q", "k"):
        key = entry["expected"][t]
        want = suite[key]
        if key not in got:
            return CaseResult(name, False, tensor=t, message=f"results lack the array {key!r}")
        g = np.asarray(got[key], dtype=np.float64)
        if g.shape != want.shape:
            return CaseResult(
                name, False, tensor=t, message=f"{key} has shape {g.shape}, expected {want.shape}"
            )
        err = np.abs(g - want)
        err[~np.isfinite(g)] = np.inf
        for cls in PIPELINES:
            tol = suite[entry["tolerances"][cls][t]]
            with np.errstate(divide="ignore", invalid="ignore"):
                r = np.where(err == 0, 0.0, err / tol)
            ratios.setdefault(cls, []).append((t, r, g, tol))
    met = next(
        (cls for cls in PIPELINES if all(r.max(initial=0) <= 1 for _, r, _, _ in ratios[cls])), ""
    )
    judge_cls = met if met in ACCEPTED else ACCEPTED[-1]  # report what fails the verdict
    t, r, g, tol = max(ratios[judge_cls], key=lambda item: item[1].max(initial=0))
    if r.size:
        idx = np.unravel_index(int(np.argmax(r)), r.shape)
        worst = idx
    ok = met in ACCEPTED
    if worst is None:
        return CaseResult(name, ok, tensor=t, pipeline=met)
    m = _token_positions(suite, entry, r.shape)[idx[:-1]]
    lo, rd = entry["rope"]["rotary_offset"], entry["rope"]["rotary_dim"]
    _, _, oa, ob = _pair_slots(entry["rope"])
    f = idx[-1] - lo
    pair = int(np.nonzero((oa == f) | (ob == f))[0][0]) if 0 <= f < rd else None
    message = ""
    if met == "half-angles":
        message = (
            "meets only the half-angles class: the angles (or positions) are formed in "
            "bfloat16/float16 (build inv_freq, angles and tables in float32 or wider); "
        )
    return CaseResult(
        name,
        ok,
        tuple(int(i) for i in idx),
        float(m),
        pair,
        float(suite[entry["expected"][t]][idx]),
        float(g[idx]),
        float(tol[idx]),
        t,
        met,
        message,
    )


def verify_outputs(suite_dir, results_dir) -> VerifyReport:
    """Verify an implementation's outputs against a suite written by :func:`write_suite`.

    Parameters
    ----------
    suite_dir : path
        The suite (its ``manifest.json`` and case files).
    results_dir : path
        A directory mirroring the suite: for each case, a file of the same name and format
        (``.safetensors`` or ``.npz``) holding the outputs under the expected outputs' names
        (``q_out``, ``k_out``); other arrays are ignored, so ``verify_outputs(d, d)`` passes.

    Returns
    -------
    VerifyReport
        ``ok``, one :class:`CaseResult` per case (the worst element: case, index, position,
        pair, expected, got, allowed; the tightest pipeline class met), and, when cases fail,
        a diagnosis: which known mistake (pairing, direction, position offset, output order,
        rotary width, unscaled frequencies, attention scaling) reproduces the probe results,
        and the findings of :func:`refimpl.check.check_rope_arrays` on the probe rows (the
        checker's stages on the data: pairing, direction, base, index origin, offset, rotary
        width, precision, scaling).
    """
    suite, results = pathlib.Path(suite_dir), pathlib.Path(results_dir)
    manifest_path = suite / "manifest.json"
    if not manifest_path.is_file():
        raise ValueError(f"suite_dir {suite} has no manifest.json (write it with write_suite)")
    manifest = json.loads(manifest_path.read_text())
    if manifest.get("format") != FORMAT:
        raise ValueError(f"{manifest_path}: format {manifest.get('format')!r}, expected {FORMAT!r}")
    if not results.is_dir():
        raise ValueError(f"results_dir {results} is not a directory")
    cases, data = [], {}
    for entry in manifest["cases"]:
        expected = _read_case_file(suite / entry["files"]["safetensors"])
        found = _results_file(results, entry)
        if found is None:
            cases.append(CaseResult(entry["name"], False, message="no results file"))
            continue
        got = _read_case_file(found)
        if entry["name"].endswith("probe"):  # kept for the diagnosis; other cases are not
            data[entry["name"]] = (entry, expected, got)
        cases.append(_judge(entry, expected, got))
    report = VerifyReport(all(c.ok for c in cases), cases)
    if not report.ok:
        report.diagnosis = _diagnose(data, manifest["dtype"])
        half = [c.name for c in cases if c.pipeline == "half-angles"]
        if half and not any("the results match" in d for d in report.diagnosis):
            report.diagnosis.insert(
                0,
                f"{', '.join(half)}: within the half-angles class only: angles or positions "
                "formed in bfloat16/float16",
            )
    return report


def _mistakes(rope: Mapping) -> list[tuple[str, dict]]:
    """Known mistakes as changes of apply_rope's arguments: (description, changes)."""
    other = "interleaved" if rope["pairing"] == "half" else "half"
    r, lo, d = rope["rotary_dim"], rope["rotary_offset"], rope["dim"]
    out = [
        (f"pairing {other!r} instead of {rope['pairing']!r}", {"pairing": other}),
        ("rotation the other way, R(-theta) (the sign of sin flipped)", {"inverse": True}),
        ("positions shifted by +1 (counting tokens from 1)", {"shift": 1}),
        ("positions shifted by -1", {"shift": -1}),
    ]
    if rope["pairing"] == "interleaved":
        order = "same" if rope["output_order"] == "half" else "half"
        out.append(
            (f"output_order {order!r} instead of {rope['output_order']!r}", {"output_order": order})
        )
    if lo + r < d or lo:
        out.append(
            (
                f"all {d} features rotated instead of [{lo}, {lo + r})",
                {"rotary_offset": 0, "rotary_dim": d, "unscaled": True},
            )
        )
    if rope["rope_type"] != "default":
        out.append(
            (
                f"frequencies of base {rope['base']:g} without the {rope['rope_type']!r} scaling",
                {"unscaled": True},
            )
        )
    if rope["attention_scaling"] != 1.0:
        out.append(
            (
                "attention_scaling not applied (cos/sin not multiplied by it)",
                {"attention_scaling": 1.0},
            )
        )
    return out


def _variant(x, positions, inv_freq, rope: Mapping, change: Mapping) -> np.ndarray:
    kw = dict(rope)
    kw.update({k: v for k, v in change.items() if k not in ("shift", "unscaled", "inverse")})
    r = kw["rotary_dim"]
    theta = kw["base"] ** (-np.arange(r // 2) * 2.0 / r) if change.get("unscaled") else inv_freq
    return apply_rope(
        x,
        np.asarray(positions, dtype=np.float64) + change.get("shift", 0),
        inv_freq=theta,
        pairing=kw["pairing"],
        attention_scaling=kw["attention_scaling"],
        rotary_dim=r,
        rotary_offset=kw["rotary_offset"],
        output_order=kw["output_order"],
        inverse=bool(change.get("inverse", False)),
    )


def _checker_findings(entry: Mapping, pos, x, g) -> list[str]:
    """The checker's analysis of the probe rows (:func:`refimpl.check.check_rope_arrays`):
    pairing, direction, base, scaling, offset, rotary width and precision, read from the data."""
    rope, d = entry["rope"], x.shape[-1]
    if not np.all(np.isfinite(g)):
        return [f"{entry['name']}: the results hold NaN or inf"]
    rep = check_rope_arrays(
        np.broadcast_to(pos, x.shape[:-1]).reshape(-1),
        x.reshape(-1, d),
        g.reshape(-1, d),
        dim=d,
        pairing=rope["pairing"],
        rotary_dim=rope["rotary_dim"] if rope["rotary_offset"] == 0 else None,
        attention_scaling=rope["attention_scaling"],
    )
    if rep.ok:
        return []
    return [f"{entry['name']}: checker: {finding}" for finding in rep.findings]


def _diagnose(data: Mapping, dtype: str) -> list[str]:
    """Which known mistake reproduces the probe cases' results (within the accepted class)."""
    probes = [v for name, v in data.items() if name.endswith("probe")]
    if not probes:
        return ["no probe case has results: per-case failures only"]
    lines = []
    for entry, suite, got in probes:
        if "q_out" not in got or np.shape(got["q_out"]) != suite["q_out"].shape:
            continue
        x, pos, rope = suite["q"].astype(np.float64), suite["positions"], entry["rope"]
        g = np.asarray(got["q_out"], dtype=np.float64)
        for text, change in _mistakes(rope):
            alt = _variant(x, pos, suite["inv_freq"], rope, change)
            m = np.broadcast_to(pos, x.shape[:-1])
            tol = allowed_error(
                x,
                m,
                suite["inv_freq"],
                {**rope, **{k: v for k, v in change.items() if k in rope}},
                dtype,
                ACCEPTED[-1],
            )
            if np.all(np.abs(g - alt) <= tol):
                lines.append(f"{entry['name']}: the results match {text}")
        lines += _checker_findings(entry, pos, x, g)
    return lines or [
        "no single known mistake (pairing, direction, position offset, output "
        "order, rotary width, scaling) reproduces the probe results"
    ]
