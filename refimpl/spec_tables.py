"""Tables and rotations of a :class:`refimpl.spec.RopeSpec`: what its ``cos_sin``, ``apply``
and ``pair_table`` compute.

One place makes the tables (:func:`tables`): the precision's recipe from the registry
:data:`refimpl.pipelines.PRECISIONS` (``"float64"`` is the exact reference: float64 angles of
the spec's exact frequencies). :func:`apply` rotates with those tables, by token positions or
by the position keywords of :func:`refimpl.rotary.apply_rope_tables`; :func:`apply_rounded`
repeats an engine's arithmetic with every product and sum rounded to its format.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping

import numpy as np

from ._checks import (
    MAX_POSITION,
    as_float_array,
    as_positions,
    as_real_array,
    check_choice,
    check_int,
    check_keywords,
)
from .numerics import round_to
from .pipelines import PRECISIONS as PRECISION_RECORDS
from .rotary import apply_rope_tables, pair_indices
from .rotary import cos_sin as rotary_cos_sin
from .rotary import inv_freq as default_inv_freq
from .scaling import ROPE_SCALINGS

__all__ = [
    "PRECISIONS",
    "TABLE_METHODS",
    "apply",
    "apply_rounded",
    "check_positions",
    "cos_sin",
    "largest_position",
    "pair_table",
    "position_limit",
    "tables",
]

#: Precision names of :meth:`RopeSpec.cos_sin` and :meth:`RopeSpec.apply`: the keys of the
#: registry :data:`refimpl.pipelines.PRECISIONS`.
PRECISIONS = tuple(PRECISION_RECORDS)

#: How float64 tables are rounded: ``"fast"`` (float64 angles of the spec's float64
#: frequencies, the platform's cos/sin) or ``"correct"`` (cos and sin of the exact angle,
#: correctly rounded; :func:`refimpl.rotary.cos_sin` with ``method="correct"``).
TABLE_METHODS = ("fast", "correct")

# The record's exact frequencies are the spec's when their float64 roundings agree with the
# spec's float64 frequencies to this relative amount (a method's float64 arithmetic is a few
# ulp from its exact value; frequencies read from a file's tensor differ by far more or not
# at all).
_SAME_FREQUENCIES = 1e-14

# The position keywords RopeSpec.apply forwards to rotary.apply_rope_tables.
_POSITION_KEYWORDS = ("offsets", "cu_seqlens", "cp_rank", "cp_size", "inverse")


def exact_frequencies(spec):
    """The frequencies ``method="correct"`` rounds: the scaling record's exact real
    frequencies for the spec's parameters, or, where the spec holds other float64 frequencies
    (a GGUF file's frequency tensor), those float64 values taken exactly."""
    freqs = ROPE_SCALINGS[spec.rope_type].exact_frequencies(**spec.method_params())
    if np.allclose(freqs.float64(), spec.inv_freq, rtol=_SAME_FREQUENCIES, atol=0.0):
        return freqs
    return spec.inv_freq


def check_method(method: str, precision: str) -> None:
    """``method`` names how float64 tables are rounded; other precisions are their
    arithmetic's own."""
    check_choice(method, "method", TABLE_METHODS)
    if method != "fast" and precision != "float64":
        raise ValueError(
            f"method={method!r} applies to precision='float64' only; {precision!r} tables are "
            "that arithmetic's own"
        )


def tables(spec, pos: np.ndarray, precision: str, method: str = "fast"):
    """Half-width cos and sin of ``spec`` at checked positions ``pos`` in ``precision``
    (``method`` for float64): every table of a spec is made here."""
    if method == "correct":
        return rotary_cos_sin(
            pos, exact_frequencies(spec), attention_scaling=spec.attention_scaling,
            method="correct",
        )  # fmt: skip
    return PRECISION_RECORDS[precision](spec, pos)


def position_limit(spec) -> int | None:
    """Positions must stay below this (methods whose frequencies depend on the length)."""
    if "seq_len" not in ROPE_SCALINGS[spec.rope_type].parameters:
        return None
    if spec.seq_len is not None:
        return spec.seq_len
    return spec.params.get("original_max_position", spec.params.get("max_position"))


def check_positions(spec, positions) -> np.ndarray:
    """Validated positions, refused beyond the length a length-dependent spec is for."""
    pos = as_positions(positions)
    limit = position_limit(spec)
    if limit is not None and pos.size and pos.max() + 1 > limit:
        raise ValueError(
            f"positions reach {pos.max():.0f} but this {spec.rope_type} spec is for "
            f"sequences of length <= {limit}; build it with "
            f"rope_from_config(config, seq_len=...) covering the positions"
        )
    return pos


def cos_sin(spec, positions, precision: str, method: str) -> tuple[np.ndarray, np.ndarray]:
    """:meth:`RopeSpec.cos_sin`."""
    check_choice(precision, "precision", PRECISIONS)
    check_method(method, precision)
    return tables(spec, check_positions(spec, positions), precision, method)


def apply(spec, x, positions, precision: str, method: str, position_keywords: Mapping):
    """:meth:`RopeSpec.apply`."""
    check_choice(precision, "precision", PRECISIONS)
    check_method(method, precision)
    fixed = sorted({"rotary_offset", "output_order", "pairing"} & set(position_keywords))
    if fixed:
        raise TypeError(f"{fixed} are the spec's own; build another spec to change them")
    check_keywords(
        "RopeSpec.apply",
        position_keywords,
        ["x", "positions", "precision", "method", *_POSITION_KEYWORDS],
    )
    layout = {
        "pairing": spec.pairing,
        "rotary_offset": spec.rotary_offset,
        "output_order": spec.output_order,
    }
    x = as_real_array(x, "x")  # ragged or non-numeric input is refused by name
    if positions is not None:
        positions = as_real_array(positions, "positions")
    shape = x.shape
    if not shape or shape[-1] != spec.dim:
        raise ValueError(f"x must have shape (..., seq, {spec.dim}), got {shape}")
    by_token = set(position_keywords) <= {"inverse"} and np.ndim(positions) <= 1
    if precision == "float64" and by_token:
        c, s = tables(spec, check_positions(spec, positions), precision, method)
        return apply_rope_tables(x, c, s, **layout, **position_keywords)
    if precision == "float64":
        top = largest_position(positions, position_keywords)
        c, s = tables(spec, check_positions(spec, np.arange(top + 1)), precision, method)
        ids = None if positions is None else np.asarray(positions)
        return apply_rope_tables(x, c, s, positions=ids, **layout, **position_keywords)
    if not by_token or position_keywords:
        raise ValueError(f"precision={precision!r} takes 1-D positions and no position keywords")
    return apply_rounded(spec, x, check_positions(spec, positions), precision)


def apply_rounded(spec, x, pos: np.ndarray, precision: str) -> np.ndarray:
    """The rotation in the precision's format, every product and sum rounded to it."""
    fmt = PRECISION_RECORDS[precision].dtype
    xa = as_float_array(x, "x", min_ndim=2).astype(np.float32)
    if xa.shape[-1] != spec.dim or xa.shape[-2] != pos.shape[0]:
        raise ValueError(f"x must have shape (..., {pos.shape[0]}, {spec.dim}), got {xa.shape}")
    if fmt != "float32":
        xa = round_to(xa, fmt).astype(np.float32)
    c, s = tables(spec, pos, precision)
    out = xa.copy()
    lo, hi = spec.rotary_offset, spec.rotary_offset + spec.rotary_dim
    part = xa[..., lo:hi]
    i1, i2 = pair_indices(spec.rotary_dim, spec.pairing)
    x1, x2 = part[..., i1], part[..., i2]
    rot = np.empty_like(part)

    def rnd(v):  # float32 arithmetic rounds by itself; bfloat16/float16 once more
        return v if fmt == "float32" else round_to(v, fmt).astype(np.float32)

    rot[..., i1] = rnd(rnd(x1 * c) - rnd(x2 * s))
    rot[..., i2] = rnd(rnd(x2 * c) + rnd(x1 * s))
    if spec.output_order == "half":  # interleaved pairs written back in half order
        rot = np.concatenate([rot[..., 0::2], rot[..., 1::2]], axis=-1)
    out[..., lo:hi] = rot
    return out


def pair_table(spec) -> dict[str, np.ndarray]:
    """:meth:`RopeSpec.pair_table`."""
    denominator = spec.rotary_dim
    if "partial_rotary_factor" in spec.params:  # proportional: exponent over the head
        denominator = 2 * spec.inv_freq.shape[0]
    theta = default_inv_freq(denominator, spec.base)[: spec.inv_freq.shape[0]]
    live = spec.inv_freq > 0
    with np.errstate(divide="ignore"):
        scale = np.where(live, theta / np.where(live, spec.inv_freq, 1.0), np.inf)
        scaled_wave = np.where(live, 2 * np.pi / np.where(live, spec.inv_freq, 1.0), np.inf)
    full = scale[live].max() if live.any() else 1.0
    close = functools.partial(np.isclose, rtol=1e-9, atol=0)
    regime = np.where(
        close(scale, 1.0),
        "extrapolated",
        np.where(close(scale, full), "interpolated", "ramped"),
    )
    regime = np.where(live, regime, "zero")
    return {
        "pair": np.arange(theta.shape[0]),
        "inv_freq": theta,
        "scaled_inv_freq": spec.inv_freq,
        "wavelength": 2 * np.pi / theta,
        "scaled_wavelength": scaled_wave,
        "scale": scale,
        "regime": regime,
    }


def largest_position(positions, keywords: Mapping) -> int:
    """The largest position a call with position keywords reaches (tables cover 0 .. it)."""
    if positions is not None:
        ids = np.asarray(positions)
        if ids.dtype.kind not in "iu":
            raise TypeError(
                f"positions must be integers with position keywords (rows of the tables), "
                f"got dtype {ids.dtype}"
            )
        top = int(ids.max()) if ids.size else 0
    elif keywords.get("cu_seqlens") is not None:
        cu = np.asarray(keywords["cu_seqlens"])
        if cu.dtype.kind not in "iu" or cu.ndim != 1 or cu.size < 2:
            raise ValueError("cu_seqlens must be a 1-D integer array of at least 2 entries")
        top = max(int(np.max(np.diff(cu))) - 1, 0)
    else:
        raise ValueError("positions may be None only with cu_seqlens")
    offsets = keywords.get("offsets")
    if offsets is not None:
        off = np.asarray(offsets)
        if off.dtype.kind not in "iu":
            raise TypeError(f"offsets must be integers, got dtype {off.dtype}")
        top += max(int(off.max()) if off.size else 0, 0)
    return check_int(top, "largest position", minimum=0, maximum=MAX_POSITION)
