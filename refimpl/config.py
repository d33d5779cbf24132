"""RoPE of a real model: read a ``config.json`` and return its exact rotary embedding, layer
by layer.

:func:`rope_from_config` returns the :class:`RopeSpec` of one layer type and
:func:`rope_schedule` the whole model: one :class:`LayerRope` per layer (a spec, or none for a
NoPE layer, and the query scaling the layer applies). Both read the transformers 4.x form
(``rope_scaling`` + ``rope_theta``), the 5.x form (``rope_parameters``, flat or nested per
layer type), legacy ``"type"`` keys, and the model-family facts of :mod:`refimpl.families`
(rotary width, pairing, per-layer rules, query scaling). The scaling method's keys, defaults
and required parameters come from its record in :data:`refimpl.scaling.ROPE_SCALINGS`.

One refusal policy:

* refused (ValueError/TypeError naming the key and what refimpl would need): what
  transformers cannot load or run either, what refimpl cannot express although transformers
  uses it, and values invalid by the method's own definition (``factor < 1``, ``beta_fast =
  0``, a negative ``mscale``, ...);
* recorded in ``notes`` (and shown by ``python -m refimpl describe``): keys transformers
  ignores, defaults applied (a missing base is 10000, family defaults such as GPT-NeoX's
  ``rotary_pct`` 0.25), and choices transformers makes that a reader may not expect (an
  explicit YaRN ``factor`` that differs from ``max_position_embeddings / original``);
* where transformers would silently use another value, refimpl refuses: a yarn/llama3/longrope
  config without ``original_max_position_embeddings`` (transformers 5.x takes
  ``max_position_embeddings``), ``original_max_position_embeddings`` written twice with
  different values, a base written twice.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from . import families as fam
from ._checks import (
    MAX_POSITION,
    as_float_array,
    as_inv_freq,
    as_positions,
    as_real_array,
    check_base,
    check_choice,
    check_dim,
    check_flag,
    check_int,
    check_keywords,
    check_pairing,
    check_positive,
    check_positive_int,
    check_real,
)
from .families import LayerPlan, QueryScaling
from .multiaxis import MROPE_LAYOUTS, mrope_cos_sin
from .numerics import round_to
from .pipelines import PRECISIONS as _PRECISION_RECORDS
from .rotary import apply_rope_tables, pair_indices
from .rotary import inv_freq as _default_inv_freq
from .scaling import ROPE_SCALINGS

__all__ = [
    "OUTPUT_ORDERS",
    "PRECISIONS",
    "LayerRope",
    "RopeSchedule",
    "RopeSpec",
    "load_config",
    "rope_from_config",
    "rope_schedule",
]

#: Precision names of :meth:`RopeSpec.cos_sin` and :meth:`RopeSpec.apply`: the keys of the
#: registry :data:`refimpl.pipelines.PRECISIONS`.
PRECISIONS = tuple(_PRECISION_RECORDS)
OUTPUT_ORDERS = ("same", "half")
DEFAULT_BASE = 10000.0
# A spec's stored inv_freq may differ from its method's float64 frequencies by this much
# (relative): frequencies read from files are often float32 (GGUF rope_freqs, ggml's
# cumulative float32 products drift by up to about d/2 float32 ulps, 64 * 6e-8 = 4e-6 for
# d = 128); different parameters differ by far more (a factor 2 or a base 10x).
INV_FREQ_AGREEMENT = 1e-5
# config.json files are kilobytes; a file this large is not a model config.
MAX_CONFIG_BYTES = 64 * 2**20
_LEGACY_TYPE_NAMES = {"su": "longrope", "mrope": "default"}
_COMMON_KEYS = {"rope_type", "type", "rope_theta", "partial_rotary_factor"}
_MROPE_KEYS = {"mrope_section", "mrope_interleaved", "mrope_layout"}
_ROPE_ROOM_KEYS = ("rope_parameters", "rope_scaling", "rope_theta", "hidden_size", "head_dim")


# --------------------------------------------------------------------------- the spec


# The position keywords RopeSpec.apply forwards to rotary.apply_rope_tables.
_POSITION_KEYWORDS = ("offsets", "cu_seqlens", "cp_rank", "cp_size", "inverse")


@dataclasses.dataclass(frozen=True, eq=False)
class RopeSpec:
    """The rotary embedding of one layer of a model configuration.

    Every fact is stored once: the method's parameters other than ``dim`` (= ``rotary_dim``),
    ``base`` and ``seq_len`` are in ``params``; ``inv_freq`` is the method's float64
    frequencies for them (checked at construction, within :data:`INV_FREQ_AGREEMENT`).

    Attributes
    ----------
    dim : int
        Head width (the features ``apply`` takes).
    rotary_dim : int
        Rotated width: features ``[rotary_offset, rotary_offset + rotary_dim)``.
    base : float
        :math:`b` (``rope_theta``).
    rope_type : str
        Key of :data:`refimpl.scaling.ROPE_SCALINGS`.
    inv_freq : numpy.ndarray, shape (rotary_dim // 2,), float64
        The method's frequencies computed exactly (read-only; zero for proportional RoPE's
        pass-through pairs).
    attention_scaling : float
        Multiplied into cos and sin.
    pairing : {"half", "interleaved"}
        Which features of the rotated slice form a pair.
    params : mapping
        The method's other keyword arguments (read-only).
    seq_len : int or None
        Sequence length the frequencies are for (methods that depend on it).
    max_position : int or None
        ``max_position_embeddings``.
    notes : tuple of str
        Defaults applied and keys ignored while reading the config.
    source : str
        Where the config came from (a path or ``"<dict>"``).
    output_order : {"same", "half"}
        ``"half"``: interleaved pairs in, rotated pairs written back in half order (first
        every pair's first feature, then every second; MLA's ``rope_interleave``).
    rotary_offset : int
        First rotated feature (0: the leading slice).
    mrope_section : tuple of 3 int or None
        M-RoPE pairs per axis ``(t, h, w)``, summing to ``rotary_dim // 2``.
    mrope_layout : {"blocked", "interleaved"} or None
        How the sections are laid out over the pairs (set exactly when ``mrope_section`` is).
    """

    dim: int
    rotary_dim: int
    base: float
    rope_type: str
    inv_freq: np.ndarray
    attention_scaling: float = 1.0
    pairing: str = "half"
    params: Mapping = dataclasses.field(default_factory=dict)
    seq_len: int | None = None
    max_position: int | None = None
    notes: tuple = ()
    source: str = "<dict>"
    output_order: str = "same"
    rotary_offset: int = 0
    mrope_section: tuple | None = None
    mrope_layout: str | None = None

    def __post_init__(self):
        put = functools.partial(object.__setattr__, self)
        put("dim", check_dim(self.dim, "dim", even=False))
        put("rotary_dim", check_dim(self.rotary_dim, "rotary_dim"))
        put("rotary_offset", check_int(self.rotary_offset, "rotary_offset", minimum=0))
        if self.rotary_offset + self.rotary_dim > self.dim:
            raise ValueError(
                f"rotary_offset + rotary_dim = {self.rotary_offset + self.rotary_dim} exceeds "
                f"dim = {self.dim}"
            )
        put("base", check_base(self.base))
        if not isinstance(self.rope_type, str):
            raise TypeError(f"rope_type must be a string, got {self.rope_type!r}")
        method = ROPE_SCALINGS[self.rope_type]
        put("attention_scaling", check_positive(self.attention_scaling, "attention_scaling"))
        check_pairing(self.pairing)
        check_choice(self.output_order, "output_order", OUTPUT_ORDERS)
        if self.output_order == "half" and self.pairing != "interleaved":
            raise ValueError("output_order='half' reorders interleaved pairs; pairing must be")
        for name in ("seq_len", "max_position"):
            value = getattr(self, name)
            if value is not None:
                put(name, check_positive_int(value, name, maximum=MAX_POSITION))
        if not isinstance(self.params, Mapping):
            raise TypeError(f"params must be a mapping, got {type(self.params).__name__}")
        clash = sorted({"dim", "base", "seq_len"} & set(self.params))
        if clash:
            raise ValueError(f"params must not repeat the spec's fields {clash}")
        put("params", fam.ReadOnlyDict(self.params))
        if not isinstance(self.notes, tuple) or not all(isinstance(n, str) for n in self.notes):
            raise TypeError("notes must be a tuple of strings")
        if not isinstance(self.source, str):
            raise TypeError(f"source must be a string, got {type(self.source).__name__}")
        self._check_mrope()
        inv = as_inv_freq(self.inv_freq, "inv_freq", allow_zero=True).copy()
        if inv.shape[0] != self.rotary_dim // 2:
            raise ValueError(
                f"inv_freq has {inv.shape[0]} entries but rotary_dim={self.rotary_dim} needs "
                f"{self.rotary_dim // 2}"
            )
        inv.setflags(write=False)
        put("inv_freq", inv)
        self._check_agreement(method)

    def _check_mrope(self) -> None:
        if (self.mrope_section is None) != (self.mrope_layout is None):
            raise ValueError("mrope_section and mrope_layout are given together or not at all")
        if self.mrope_section is None:
            return
        check_choice(self.mrope_layout, "mrope_layout", MROPE_LAYOUTS)
        section = _mrope_section(self.mrope_section, "mrope_section")
        if sum(section) != self.rotary_dim // 2:
            raise ValueError(
                f"mrope_section {list(section)} must sum to rotary_dim // 2 = "
                f"{self.rotary_dim // 2} pairs"
            )
        object.__setattr__(self, "mrope_section", section)

    def _check_agreement(self, method) -> None:
        exact = method(**self.method_params()).inv_freq
        zero = exact == 0.0
        rel = np.abs(self.inv_freq - exact) / np.where(zero, 1.0, exact)
        if np.any(zero != (self.inv_freq == 0.0)) or np.max(rel) > INV_FREQ_AGREEMENT:
            i = int(np.argmax(np.where(zero != (self.inv_freq == 0.0), np.inf, rel)))
            raise ValueError(
                f"inv_freq disagrees with rope_type {self.rope_type!r} and its parameters: "
                f"pair {i} is {self.inv_freq[i]!r}, the method gives {exact[i]!r} (relative "
                f"difference above {INV_FREQ_AGREEMENT:g}); build the spec from the parameters"
            )

    def __eq__(self, other) -> bool:
        if not isinstance(other, RopeSpec):
            return NotImplemented
        names = [f.name for f in dataclasses.fields(self) if f.name != "inv_freq"]
        same = all(getattr(self, n) == getattr(other, n) for n in names)
        return same and np.array_equal(self.inv_freq, other.inv_freq)

    def __hash__(self) -> int:
        return hash(self.key())

    def method_params(self) -> dict:
        """Keyword arguments of the scaling method: ``dim``, ``base``, ``seq_len`` (for
        methods that take it) and ``params``."""
        out = {"dim": self.rotary_dim, "base": self.base, **self.params}
        if "seq_len" in ROPE_SCALINGS[self.rope_type].parameters:
            out["seq_len"] = self.seq_len
        return out

    @functools.cached_property
    def inv_freq_float32(self) -> np.ndarray:
        """The float32 ``inv_freq`` buffer transformers' rotary module holds for this config
        (its runtime value for ``seq_len``), shape ``(rotary_dim // 2,)``."""
        params = self.method_params()
        params.pop("seq_len", None)
        return ROPE_SCALINGS[self.rope_type].float32(seq_len=self.seq_len, **params)

    def key(self) -> tuple:
        """A hashable key, equal for specs that compute the same tables (float64 and
        transformers-float32) and the same rotation (widths, slice, pairing, order)."""
        return (
            self.dim,
            self.rotary_dim,
            self.rotary_offset,
            self.pairing,
            self.output_order,
            self.mrope_section,
            self.mrope_layout,
            self.attention_scaling,
            self.inv_freq.tobytes(),
            self.inv_freq_float32.tobytes(),
            self._position_limit(),
        )

    def _position_limit(self) -> int | None:
        """Positions must stay below this (methods whose frequencies depend on the length)."""
        if "seq_len" not in ROPE_SCALINGS[self.rope_type].parameters:
            return None
        if self.seq_len is not None:
            return self.seq_len
        return self.params.get("original_max_position", self.params.get("max_position"))

    def _check_positions(self, positions) -> np.ndarray:
        pos = as_positions(positions)
        limit = self._position_limit()
        if limit is not None and pos.size and pos.max() + 1 > limit:
            raise ValueError(
                f"positions reach {pos.max():.0f} but this {self.rope_type} spec is for "
                f"sequences of length <= {limit}; build it with "
                f"rope_from_config(config, seq_len=...) covering the positions"
            )
        return pos

    def cos_sin(self, positions, precision: str = "float64") -> tuple[np.ndarray, np.ndarray]:
        r"""Half-width cos and sin tables, multiplied by ``attention_scaling``.

        Parameters
        ----------
        positions : array_like, shape (seq,)
            Text positions (for M-RoPE every axis sees the same position: 1-D RoPE; use
            :meth:`mrope_cos_sin` for multimodal position ids).
        precision : str, default "float64"
            A name of :data:`refimpl.pipelines.PRECISIONS`. ``"float64"``: the exact reference
            (float64 angles of the exact frequencies). ``"transformers-float32"``:
            transformers' arithmetic: float32 frequencies, one float32 product
            ``float32(m) * inv_freq``, cos/sin rounded to float32, times the attention factor
            in float32. ``"ggml-float32"``, ``"mlx-float32"``, ``"vllm-float32"``,
            ``"vllm-bfloat16"``, ``"vllm-float16"``: that engine's arithmetic with the
            arguments it derives from this spec's config (its frequencies or factors, scaling
            parameters and attention factor; see :mod:`refimpl.pipelines`).

        Returns
        -------
        cos, sin : numpy.ndarray, each shape (seq, rotary_dim // 2)
            float64 for ``"float64"``, float32 otherwise (holding bfloat16 or float16 values
            for those vLLM precisions). transformers' module returns ``concat(cos, cos)``
            (width ``rotary_dim``). Zero-frequency pairs give exactly ``attention_scaling``
            and 0 (in float64).

        Raises
        ------
        ValueError
            An unknown precision (the known ones listed), positions beyond the spec's length,
            or a spec the precision's engine cannot run (naming the precision and why).

        Notes
        -----
        Book equations ``eq:rope-cos-sin`` and ``eq:config-float32-forward``.

        Examples
        --------
        >>> spec = rope_from_config({"head_dim": 4, "rope_theta": 100.0})
        >>> c, s = spec.cos_sin([0, 1])
        >>> c.shape, float(s[1, 1])  # theta_1 = 0.1
        ((2, 2), 0.09983341664682815)
        >>> spec.cos_sin([1], precision="transformers-float32")[1].dtype
        dtype('float32')
        """
        check_choice(precision, "precision", PRECISIONS)
        return _PRECISION_RECORDS[precision](self, self._check_positions(positions))

    def mrope_cos_sin(self, position_ids) -> tuple[np.ndarray, np.ndarray]:
        """M-RoPE tables for ``(3, seq)`` position ids (rows t, h, w), float64, each
        ``(seq, rotary_dim // 2)``; see :func:`refimpl.multiaxis.mrope_cos_sin`."""
        if self.mrope_section is None:
            raise ValueError("this spec has no mrope_section; use cos_sin(positions)")
        return mrope_cos_sin(
            position_ids,
            self.inv_freq,
            self.mrope_section,
            layout=self.mrope_layout,
            attention_scaling=self.attention_scaling,
        )

    def apply(self, x, positions, precision: str = "float64", **position_keywords) -> np.ndarray:
        """Rotate queries or keys ``x`` of shape ``(..., seq, dim)`` by their positions.

        Features ``[rotary_offset, rotary_offset + rotary_dim)`` are rotated with this spec's
        pairing (and written back in half order when ``output_order="half"``); the others
        pass through.

        Parameters
        ----------
        x : array_like, shape (..., seq, dim)
        positions : array_like, shape (seq,) or (batch, seq), or None
            Token positions (None with ``cu_seqlens``).
        precision : str, default "float64"
            A name of :data:`refimpl.pipelines.PRECISIONS`. ``"float64"``:
            :func:`refimpl.rotary.apply_rope_tables` on this spec's exact tables (dtype kept,
            computed in float64, bit-identical to ``x1 c - x2 s``, ``x1 s + x2 c``). Any
            other: ``x`` rounded to the precision's format, that precision's tables, and the
            rotation ``x1 c - x2 s``, ``x2 c + x1 s`` with every product and sum rounded to
            the format, returned as float32 (1-D positions, no position keywords): float32
            for transformers, ggml, MLX and ``"vllm-float32"`` (a kernel that fuses the
            multiply-adds differs in the last bit), bfloat16/float16 for the other vLLM
            names, as vLLM's ``forward_native`` rotates in the model dtype.
        **position_keywords
            ``offsets``, ``cu_seqlens``, ``cp_rank``, ``cp_size``, ``inverse``: forwarded to
            :func:`refimpl.rotary.apply_rope_tables` (the tables then cover positions
            ``0 .. P-1``, P the largest position reached plus one; integer positions).

        Examples
        --------
        >>> spec = rope_from_config({"head_dim": 2, "rope_theta": 100.0})
        >>> spec.apply(np.array([[1.0, 0.0]]), [1]).round(6)  # rotated by 1 rad
        array([[0.540302, 0.841471]])
        >>> spec.apply(spec.apply(np.array([[1.0, 0.0]]), [1]), [1], inverse=True).round(6)
        array([[1., 0.]])
        """
        check_choice(precision, "precision", PRECISIONS)
        fixed = sorted({"rotary_offset", "output_order", "pairing"} & set(position_keywords))
        if fixed:
            raise TypeError(f"{fixed} are the spec's own; build another spec to change them")
        check_keywords(
            "RopeSpec.apply",
            position_keywords,
            ["x", "positions", "precision", *_POSITION_KEYWORDS],
        )
        layout = {
            "pairing": self.pairing,
            "rotary_offset": self.rotary_offset,
            "output_order": self.output_order,
        }
        x = as_real_array(x, "x")  # ragged or non-numeric input is refused by name
        if positions is not None:
            positions = as_real_array(positions, "positions")
        shape = x.shape
        if not shape or shape[-1] != self.dim:
            raise ValueError(f"x must have shape (..., seq, {self.dim}), got {shape}")
        by_token = set(position_keywords) <= {"inverse"} and np.ndim(positions) <= 1
        if precision == "float64" and by_token:
            pos = self._check_positions(positions)
            c, s = self.cos_sin(pos)
            return apply_rope_tables(x, c, s, **layout, **position_keywords)
        if precision == "float64":
            top = _largest_position(positions, position_keywords)
            c, s = self.cos_sin(self._check_positions(np.arange(top + 1)))
            ids = None if positions is None else np.asarray(positions)
            return apply_rope_tables(x, c, s, positions=ids, **layout, **position_keywords)
        if not by_token or position_keywords:
            raise ValueError(
                f"precision={precision!r} takes 1-D positions and no position keywords"
            )
        return self._apply_rounded(x, self._check_positions(positions), precision)

    def _apply_rounded(self, x, pos: np.ndarray, precision: str) -> np.ndarray:
        """The rotation in the precision's format, every product and sum rounded to it."""
        fmt = _PRECISION_RECORDS[precision].dtype
        xa = as_float_array(x, "x", min_ndim=2).astype(np.float32)
        if xa.shape[-1] != self.dim or xa.shape[-2] != pos.shape[0]:
            raise ValueError(f"x must have shape (..., {pos.shape[0]}, {self.dim}), got {xa.shape}")
        if fmt != "float32":
            xa = round_to(xa, fmt).astype(np.float32)
        c, s = self.cos_sin(pos, precision)
        out = xa.copy()
        lo, hi = self.rotary_offset, self.rotary_offset + self.rotary_dim
        part = xa[..., lo:hi]
        i1, i2 = pair_indices(self.rotary_dim, self.pairing)
        x1, x2 = part[..., i1], part[..., i2]
        rot = np.empty_like(part)

        def rnd(v):  # float32 arithmetic rounds by itself; bfloat16/float16 once more
            return v if fmt == "float32" else round_to(v, fmt).astype(np.float32)

        rot[..., i1] = rnd(rnd(x1 * c) - rnd(x2 * s))
        rot[..., i2] = rnd(rnd(x2 * c) + rnd(x1 * s))
        if self.output_order == "half":  # interleaved pairs written back in half order
            rot = np.concatenate([rot[..., 0::2], rot[..., 1::2]], axis=-1)
        out[..., lo:hi] = rot
        return out

    def pair_table(self) -> dict[str, np.ndarray]:
        """Per-pair description: the unscaled and scaled frequency, wavelengths, the scale
        applied (``theta / theta'``) and the regime: ``"extrapolated"`` (kept, scale 1),
        ``"interpolated"`` (divided by the largest scale of the spec), ``"ramped"`` (in
        between) or ``"zero"`` (proportional RoPE's pass-through pairs).

        Returns
        -------
        dict of numpy.ndarray, each shape (rotary_dim // 2,)
            Keys ``pair``, ``inv_freq``, ``scaled_inv_freq``, ``wavelength``,
            ``scaled_wavelength``, ``scale``, ``regime`` (strings). Zero-frequency pairs have
            infinite scaled wavelength and scale.

        Examples
        --------
        >>> spec = rope_from_config({"head_dim": 8, "rope_scaling": {"type": "linear",
        ...                                                         "factor": 2.0}})
        >>> spec.pair_table()["scale"]
        array([2., 2., 2., 2.])
        """
        denominator = self.rotary_dim
        if "partial_rotary_factor" in self.params:  # proportional: exponent over the head
            denominator = 2 * self.inv_freq.shape[0]
        theta = _default_inv_freq(denominator, self.base)[: self.inv_freq.shape[0]]
        live = self.inv_freq > 0
        with np.errstate(divide="ignore"):
            scale = np.where(live, theta / np.where(live, self.inv_freq, 1.0), np.inf)
            scaled_wave = np.where(live, 2 * np.pi / np.where(live, self.inv_freq, 1.0), np.inf)
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
            "scaled_inv_freq": self.inv_freq,
            "wavelength": 2 * np.pi / theta,
            "scaled_wavelength": scaled_wave,
            "scale": scale,
            "regime": regime,
        }

    def describe(self) -> str:
        """One line: method and parameters, base, widths, pairing."""
        params = {k: v for k, v in self.method_params().items() if k not in ("dim", "base")}
        text = ROPE_SCALINGS[self.rope_type].describe(params)
        where = (
            f"features {self.rotary_offset}..{self.rotary_offset + self.rotary_dim - 1}"
            if self.rotary_offset
            else f"{self.rotary_dim} of {self.dim} features"
        )
        order = ", half-order output" if self.output_order == "half" else ""
        mrope = (
            f", M-RoPE {self.mrope_layout} {list(self.mrope_section)}" if self.mrope_section else ""
        )
        scale = "" if self.attention_scaling == 1.0 else f", cos/sin x{self.attention_scaling:.6g}"
        return f"base {self.base:g}, {where}, {self.pairing}{order}{mrope}, {text}{scale}"


def _largest_position(positions, keywords: Mapping) -> int:
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


def _mrope_section(value, key: str) -> tuple:
    """M-RoPE sections: a list of 3 non-negative integers (no strings, booleans, fractions)."""
    if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)):
        raise TypeError(f"{key} must be a list of 3 integers (pairs per axis), got {value!r}")
    section = tuple(check_int(v, f"{key}[{i}]", minimum=0) for i, v in enumerate(value))
    if len(section) != 3:
        raise ValueError(
            f"{key} must have 3 entries (t, h, w pairs); got {len(section)}: refimpl's "
            "M-RoPE tables have three axes"
        )
    return section


# --------------------------------------------------------------------------- schedule


@dataclasses.dataclass(frozen=True)
class LayerRope:
    """One layer of a model: its RoPE (``spec``; None for a layer without RoPE) and the query
    scaling its attention applies (None: none)."""

    index: int
    layer_type: str
    spec: RopeSpec | None
    query_scaling: QueryScaling | None = None


@dataclasses.dataclass(frozen=True)
class RopeSchedule(Sequence):
    """Every layer of a model as a sequence of :class:`LayerRope`.

    Attributes
    ----------
    layers : tuple of LayerRope
    notes : tuple of str
        Model-level notes (family, layer rules, defaults); each spec carries its own too.
    source : str
    model_type : str or None
    """

    layers: tuple
    notes: tuple = ()
    source: str = "<dict>"
    model_type: str | None = None

    def __getitem__(self, i):
        return self.layers[i]

    def __len__(self) -> int:
        return len(self.layers)

    def groups(self) -> dict:
        """``spec.key()`` (None for layers without RoPE) -> the layer indices with that spec,
        in order of first appearance.

        Examples
        --------
        >>> cfg = {"model_type": "llama4_text", "head_dim": 8, "num_hidden_layers": 4}
        >>> [len(v) for v in rope_schedule(cfg).groups().values()]
        [3, 1]
        """
        out: dict = {}
        for layer in self.layers:
            out.setdefault(None if layer.spec is None else layer.spec.key(), []).append(layer.index)
        return out

    def specs(self) -> dict:
        """``spec.key()`` -> one :class:`RopeSpec` with that key (layers with RoPE only)."""
        return {
            layer.spec.key(): layer.spec
            for layer in reversed(self.layers)
            if layer.spec is not None
        }

    def runs(self) -> list[tuple[int, int, LayerRope]]:
        """Maximal runs ``(first, last, layer)`` of consecutive layers with the same spec and
        query scaling (for a compact listing)."""
        out: list = []
        for layer in self.layers:
            sig = (
                None if layer.spec is None else layer.spec.key(),
                layer.layer_type,
                layer.query_scaling,
            )
            if out and out[-1][3] == sig and out[-1][1] == layer.index - 1:
                out[-1][1] = layer.index
            else:
                out.append([layer.index, layer.index, layer, sig])
        return [(a, b, layer) for a, b, layer, _ in out]


# --------------------------------------------------------------------------- loading


def _no_duplicates(pairs):
    out = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"duplicate key {key!r} in the JSON object (its last value would win)")
        out[key] = value
    return out


def load_config(config) -> tuple[dict, str]:
    """Return ``(dict, source)`` from a config dict, a transformers config object (anything
    with ``to_dict()``) or the path of a ``config.json``.

    Parameters
    ----------
    config : dict, object with ``to_dict()``, str or os.PathLike

    Returns
    -------
    config_dict : dict
        A copy of the configuration.
    source : str
        ``"<dict>"``, the object's class name, or the path.

    Raises
    ------
    ValueError
        The path does not exist, is larger than :data:`MAX_CONFIG_BYTES`, is not UTF-8, is
        not valid JSON, repeats a key in an object, or nests too deeply (the message names
        the path).
    TypeError
        ``config`` is none of the accepted kinds.

    Examples
    --------
    >>> load_config({"head_dim": 8})
    ({'head_dim': 8}, '<dict>')
    """
    if isinstance(config, dict):
        return dict(config), "<dict>"
    if hasattr(config, "to_dict") and callable(config.to_dict):
        return dict(config.to_dict()), type(config).__name__
    if not isinstance(config, (str, os.PathLike)):
        raise TypeError(
            f"config must be a dict, a path to config.json or a transformers config, "
            f"got {type(config).__name__}"
        )
    path = os.fspath(config)
    if not os.path.isfile(path):
        raise ValueError(f"config: no such file: {path}")
    if os.path.getsize(path) > MAX_CONFIG_BYTES:
        raise ValueError(f"config: {path} is larger than {MAX_CONFIG_BYTES} bytes")
    try:
        with open(path, "rb") as fh:
            text = fh.read().decode("utf-8")
        data = json.loads(text, object_pairs_hook=_no_duplicates)
    except UnicodeDecodeError as exc:
        where = f"{exc.reason} at byte {exc.start}"
        raise ValueError(f"config: {path} is not UTF-8 text ({where})") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"config: {path} is not valid JSON ({exc})") from None
    except RecursionError:
        raise ValueError(f"config: {path} nests JSON too deeply to be a config") from None
    except ValueError as exc:
        raise ValueError(f"config: {path}: {exc}") from None
    if not isinstance(data, dict):
        raise ValueError(f"config: {path} must hold a JSON object, got {type(data).__name__}")
    return data, path


def _text_config(cfg: dict, notes: list) -> dict:
    """The part of a (multimodal) config that holds the text decoder's RoPE."""
    text = cfg.get("text_config")
    if text is None:
        return cfg
    if not isinstance(text, dict):
        raise TypeError(f"config key text_config must be an object, got {text!r}")
    if any(k in cfg for k in _ROPE_ROOM_KEYS):
        return cfg
    notes.append("RoPE read from text_config")
    out = dict(text)
    if "model_type" not in out and "model_type" in cfg:
        out["model_type"] = cfg["model_type"]
    return out


# --------------------------------------------------------------------------- readers


def _one_value(candidates: list[tuple[str, Any]], what: str):
    """The common value of the keys that are present; an error if they disagree."""
    present = [(k, v) for k, v in candidates if v is not None]
    if not present:
        return None
    first = present[0][1]
    for _, v in present[1:]:
        if v != first:
            listing = ", ".join(f"{k}={v!r}" for k, v in present)
            raise ValueError(f"config gives {what} twice with different values: {listing}")
    return first


def _object(value, key: str):
    if value is not None and not isinstance(value, dict):
        raise TypeError(f"config key {key} must be an object, got {type(value).__name__}")
    return value


def _read_rope_dicts(cfg: dict, family, notes: list) -> dict:
    """The raw rope dict(s): ``{None: flat}`` or ``{layer type or label: dict}``."""
    rp = _object(cfg.get("rope_parameters"), "rope_parameters")
    rs = _object(cfg.get("rope_scaling"), "rope_scaling")
    if family is not None and family.layers == "gemma3" and not _nested(rp):
        return _gemma3_rope_dicts(cfg, rp, rs, notes)
    if family is not None and family.layers == "deepseek_v4" and not _nested(rp):
        raise ValueError(
            "deepseek_v4 with flat rope parameters: transformers builds {'main', 'compress'} "
            "from rope_theta, compress_rope_theta and partial_rotary_factor; refimpl reads the "
            "nested rope_parameters form only"
        )
    if _nested(rp):
        for key, sub in rp.items():
            _object(sub, f"rope_parameters.{key}")
        if rs:
            raise ValueError("config has rope_scaling beside a nested rope_parameters")
        return {key: dict(sub) for key, sub in rp.items()}
    if rs and rp:
        strip = {"rope_theta", "partial_rotary_factor"}
        a = {k: v for k, v in rs.items() if k not in strip}
        b = {k: v for k, v in rp.items() if k not in strip}
        if a != b:
            raise ValueError(
                f"config has both rope_scaling and rope_parameters and they disagree: {a} vs {b}"
            )
        return {None: {**rp, **rs}}
    return {None: dict(rs or rp or {})}


def _nested(rp) -> bool:
    return bool(rp) and all(isinstance(v, dict) for v in rp.values())


def _gemma3_rope_dicts(cfg: dict, rp, rs, notes: list) -> dict:
    """Gemma 3's 4.x form, as its config class converts it: full-attention layers take
    ``rope_scaling`` and ``rope_theta`` (default 1e6), sliding ones ``rope_local_base_freq``
    (default 1e4) without scaling."""
    full = dict(rp or {})
    full.update(rs or {})
    if cfg.get("rope_theta") is not None:
        full.setdefault("rope_theta", cfg["rope_theta"])
    if full.get("rope_theta") is None:
        full["rope_theta"] = 1e6
        notes.append("gemma3: no rope_theta: full-attention layers use base 1e6")
    local = cfg.get("rope_local_base_freq")
    if local is None:
        local = 1e4
        notes.append("gemma3: no rope_local_base_freq: sliding layers use base 1e4")
    full.setdefault("rope_type", full.get("type", "default"))
    return {
        "full_attention": full,
        "sliding_attention": {"rope_type": "default", "rope_theta": local},
    }


def _read_rope_type(rope: dict, family, notes: list) -> str:
    t_new, t_old = rope.get("rope_type"), rope.get("type")
    if t_new is not None and t_old is not None and t_new != t_old:
        raise ValueError(f"rope parameters have rope_type={t_new!r} and type={t_old!r}")
    t = t_new if t_new is not None else t_old
    if t is None:
        if set(rope) - _COMMON_KEYS - _MROPE_KEYS - {"llama_4_scaling_beta"}:
            raise ValueError("rope_scaling has no rope_type (nor legacy type) key")
        return "default"
    if not isinstance(t, str):
        raise TypeError(f"rope_type must be a string, got {t!r}")
    if t in _LEGACY_TYPE_NAMES:
        notes.append(f"legacy rope type {t!r} read as {_LEGACY_TYPE_NAMES[t]!r}")
        t = _LEGACY_TYPE_NAMES[t]
    if t == "dynamic" and family is not None and family.dynamic_alpha and rope.get("alpha"):
        notes.append(
            f"{family.name}: rope_type 'dynamic' with alpha is the static NTK-alpha base "
            "(ntk_alpha), as its rotary module computes"
        )
        t = "ntk_alpha"
    if t not in ROPE_SCALINGS:
        raise ValueError(
            f"unknown rope_type {t!r}; refimpl knows: {', '.join(sorted(ROPE_SCALINGS))}"
        )
    return t


def _read_base(cfg: dict, rope: dict, family, notes: list, fallback=None) -> float:
    """The base: ``rope_theta`` wherever it is written once (a nested per-layer dict's own
    value, else ``fallback``, the top-level one), ``rotary_emb_base``, or a family rule."""
    if family is not None and family.base_from == "gptj":
        notes.append("gptj: base 10000 (fixed in the model code)")
        return DEFAULT_BASE
    base = _one_value(
        [
            ("rope_parameters.rope_theta", rope.get("rope_theta")),
            ("rope_theta", cfg.get("rope_theta")),
            ("rotary_emb_base", cfg.get("rotary_emb_base")),
        ],
        "the base (rope_theta)",
    )
    if base is None:
        base = fallback
    if family is not None and family.base_from == "rope_ratio":
        ratio = fam.config_real(cfg, "rope_ratio", 1.0)
        return check_base((DEFAULT_BASE if base is None else base) * ratio, "base")
    if base is None:
        notes.append("no rope_theta: base 10000.0 (transformers' default)")
        return DEFAULT_BASE
    return check_base(base, "config key rope_theta")


def _read_partial(cfg: dict, rope: dict):
    partial = _one_value(
        [
            ("rope_parameters.partial_rotary_factor", rope.get("partial_rotary_factor")),
            ("partial_rotary_factor", cfg.get("partial_rotary_factor")),
            ("rotary_pct", cfg.get("rotary_pct")),
        ],
        "partial_rotary_factor",
    )
    if partial is None:
        return None
    partial = check_real(partial, "config key partial_rotary_factor")
    if not 0.0 < partial <= 1.0:
        raise ValueError(f"config key partial_rotary_factor must be in (0, 1], got {partial}")
    return partial


def _read_widths(cfg, rope, family, method, plan: LayerPlan, rope_type, notes) -> tuple:
    """``(widths, partial as a method parameter or None)``."""
    partial = _read_partial(cfg, rope)
    if "partial_rotary_factor" in method.keys.values():  # proportional: pairs span the head
        d = plan.head_dim or fam.rotary_widths(None, cfg, None, notes).head_dim
        return fam.Widths(d, d, 0), partial
    if family is not None and not family.honours_partial and partial not in (None, 1.0):
        if rope_type != "default":
            raise ValueError(
                f"{family.name} with partial_rotary_factor={partial} and rope_type "
                f"{rope_type!r}: transformers computes frequencies for int(head_dim * "
                f"{partial}) features but its rotate_half turns the whole head, so it cannot "
                "run this config; remove partial_rotary_factor or use a model type that "
                "rotates a slice"
            )
        notes.append(
            f"partial_rotary_factor {partial} is ignored: {family.name}'s default RoPE "
            "rotates the whole head (as transformers does)"
        )
        partial = None
    return fam.rotary_widths(family, cfg, partial, notes, head_dim=plan.head_dim), None


# transformers reads these with `or`, so 0 silently becomes the default
_OR_DEFAULTS = {"beta_fast": 32.0, "beta_slow": 1.0}


def _param_value(name: str, key: str, value):
    if name in ("short_factor", "long_factor"):
        return value
    if name in _OR_DEFAULTS and value == 0 and not isinstance(value, bool):
        raise ValueError(
            f"config key {key}=0 is undefined for the method (a rotation count) and silently "
            f"replaced by {_OR_DEFAULTS[name]:g} in transformers; write {_OR_DEFAULTS[name]:g} "
            "(or the value you mean) explicitly"
        )
    if name == "truncate":
        return check_flag(value, f"config key {key}")
    if name in ("original_max_position", "max_position"):
        return check_int(
            value, f"config key {key}", minimum=1, maximum=MAX_POSITION, integral_float=True
        )
    return check_real(value, f"config key {key}")


def _read_params(method, rope, cfg, max_pos, partial, notes) -> dict:
    """The method's parameters from its record's config keys (no dim, base, seq_len)."""
    raw = {k: rope[k] for k in method.keys if rope.get(k) is not None}
    if "original_max_position" in method.keys.values():
        orig = _one_value(
            [
                (
                    "rope_scaling.original_max_position_embeddings",
                    raw.get("original_max_position_embeddings"),
                ),
                ("original_max_position_embeddings", cfg.get("original_max_position_embeddings")),
            ],
            "original_max_position_embeddings",
        )
        if orig is not None:
            raw["original_max_position_embeddings"] = orig
    params = {method.keys[k]: _param_value(method.keys[k], k, v) for k, v in raw.items()}
    if partial is not None:
        params["partial_rotary_factor"] = partial
    if "max_position" in method.parameters and max_pos is not None:
        params["max_position"] = max_pos
    missing = [p for p in method.required if p not in params]
    if missing:
        back = {v: k for k, v in method.keys.items()}
        keys = [
            back.get(p, "max_position_embeddings" if p == "max_position" else p) for p in missing
        ]
        hint = ""
        if "original_max_position_embeddings" in keys:
            hint = (
                " (transformers 5.x would silently use max_position_embeddings as the "
                "original context)"
            )
        raise ValueError(f"rope_type {method.name!r} needs config keys {keys}{hint}")
    for name, default in method.defaults.items():
        if name not in params and name != "partial_rotary_factor":
            notes.append(f"{method.name}: no {name}: {default!r} (the method's default)")
    _ratio_notes(method, params, max_pos, notes)
    return params


def _ratio_notes(method, params: dict, max_pos, notes: list) -> None:
    """Notes on choices transformers makes that a reader may not expect."""
    factor, orig = params.get("factor"), params.get("original_max_position")
    if factor is not None and orig is not None and max_pos is not None:
        if max_pos / orig not in (1.0, factor):
            notes.append(
                f"factor {factor:g} differs from max_position_embeddings / original = "
                f"{max_pos / orig:g}; the explicit factor is used (as transformers 5.x does)"
            )
            if "short_factor" in params and "attention_factor" not in params:
                notes.append(
                    "transformers 4.x (to 4.57) replaced a LongRoPE factor by "
                    "max_position_embeddings / original when original_max_position_embeddings "
                    "is at the top level: its attention factor differs, not its frequencies"
                )
    if "mscale" in method.parameters and "attention_factor" not in params:
        m, m_all = params.get("mscale"), params.get("mscale_all_dim")
        if (m is None) != (m_all is None) or (m is not None and not (m and m_all)):
            notes.append(
                "mscale/mscale_all_dim are used only when both are non-zero: "
                "attention factor 0.1 ln(factor) + 1"
            )


def _read_mrope(rope: dict, family, rotary_dim: int, legacy: bool, notes: list):
    """``(mrope_section, mrope_layout)`` or ``(None, None)``."""
    section = rope.get("mrope_section")
    fam_layout = family.mrope_layout if family is not None else None
    default = family.mrope_section if family is not None else None
    if section is None and default is None:
        if legacy:
            raise ValueError("legacy rope type 'mrope' needs config key mrope_section")
        if "mrope_interleaved" in rope:
            notes.append("mrope_interleaved without mrope_section is ignored")
        return None, None
    key = "config key mrope_section"
    if section is None:  # the model code falls back on its own sections, as transformers does
        section = default
        notes.append(f"no mrope_section: {list(section)} ({family.name}'s default)")
        key = f"mrope_section (not in the config; {family.name}'s default)"
    section = _mrope_section(section, key)
    flag = rope.get("mrope_interleaved")
    if flag is not None:
        flag = check_flag(flag, "config key mrope_interleaved")
    layout = "interleaved" if flag else "blocked"
    if fam_layout is not None:
        if flag is not None and layout != fam_layout:
            notes.append(
                f"mrope_interleaved={str(flag).lower()} is ignored: {family.name}'s code lays "
                f"the sections out {fam_layout}"
            )
        layout = fam_layout
    if sum(section) != rotary_dim // 2:
        raise ValueError(f"{key} {list(section)} must sum to the rotary pairs {rotary_dim // 2}")
    return section, layout


def _unused_key_notes(rope: dict, method, family, notes: list) -> None:
    """Keys of the rope dict that nothing reads: transformers ignores them (with a warning),
    so they are notes, not errors."""
    known = set(method.keys) | _COMMON_KEYS | _MROPE_KEYS | {"llama_4_scaling_beta"}
    if method.name == "ntk_alpha":
        known.add("rope_type")
    for key in sorted(set(rope) - known):
        notes.append(
            f"rope parameter {key}={rope[key]!r} is not used by rope_type {method.name!r} "
            "(transformers ignores it)"
        )


def _layer_spec(ctx: dict, plan: LayerPlan, pairing, seq_len) -> RopeSpec:
    """The spec of one layer (``ctx`` holds the config, family, rope dicts and notes)."""
    cfg, family = ctx["cfg"], ctx["family"]
    rope = _layer_rope(ctx["ropes"], plan)
    notes = list(ctx["notes"])
    nested = None not in ctx["ropes"]
    if nested:
        notes.append(f"rope_parameters of layer type {plan.rope_key!r}")
    if family is not None and family.layers == "deepseek_v4":
        notes.append(
            "deepseek_v4 also rotates the attention output back by the query's position "
            "(apply(..., inverse=True))"
        )
    if family is not None and family.base_from == "gptj" and rope:
        notes.append(
            f"rope parameters {rope} are ignored: {family.name}'s code builds fixed tables "
            "(base 10000) and reads none of them"
        )
        rope = {}
    legacy = rope.get("rope_type", rope.get("type")) == "mrope"
    rope_type = _read_rope_type(rope, family, notes)
    method = ROPE_SCALINGS[rope_type]
    base = _read_base(cfg if not nested else {}, rope, family, notes, cfg.get("rope_theta"))
    widths, partial = _read_widths(cfg, rope, family, method, plan, rope_type, notes)
    params = _read_params(method, rope, cfg, ctx["max_pos"], partial, notes)
    _unused_key_notes(rope, method, family, notes)
    section, layout = _read_mrope(rope, family, widths.rotary_dim, legacy, notes)
    if pairing is None:
        pairing, order = fam.pairing_and_order(family, cfg, notes)
    else:
        order = "same"
    call = {"dim": widths.rotary_dim, "base": base, **params}
    if "seq_len" in method.parameters:
        call["seq_len"] = seq_len
    try:
        scaled = method(**call)
    except (ValueError, TypeError) as exc:
        raise type(exc)(f"rope parameters of rope_type {rope_type!r}: {exc}") from None
    return RopeSpec(
        dim=widths.head_dim,
        rotary_dim=widths.rotary_dim,
        base=base,
        rope_type=rope_type,
        inv_freq=scaled.inv_freq,
        attention_scaling=float(scaled.attention_scaling),
        pairing=pairing,
        params=params,
        seq_len=seq_len,
        max_position=ctx["max_pos"],
        notes=tuple(dict.fromkeys(notes)),
        source=ctx["source"],
        output_order=order,
        rotary_offset=widths.rotary_offset,
        mrope_section=section,
        mrope_layout=layout,
    )


def _layer_rope(ropes: dict, plan: LayerPlan) -> dict:
    if None in ropes:
        return ropes[None]
    if plan.rope_key not in ropes:
        raise ValueError(
            f"rope_parameters is nested per layer type {sorted(ropes)} but has no entry for "
            f"layer type {plan.rope_key!r}"
        )
    return ropes[plan.rope_key]


def _context(config, need_layers: bool = True) -> dict:
    """Load a config and read what every layer shares: family, plan, rope dicts, notes."""
    cfg, source = load_config(config)
    notes: list[str] = []
    cfg = _text_config(cfg, notes)
    model_type = cfg.get("model_type")
    family = fam.family_for(model_type)
    if family is None:
        which = "no model_type" if model_type is None else f"model_type {model_type!r}"
        notes.append(
            f"{which} (not in refimpl's family table): generic reading "
            "(head_dim or hidden_size // num_attention_heads, half pairing, leading slice, "
            "every layer alike)"
        )
    max_pos = cfg.get("max_position_embeddings", cfg.get("n_positions"))
    if max_pos is not None:
        max_pos = check_int(
            max_pos,
            "config key max_position_embeddings",
            minimum=1,
            maximum=MAX_POSITION,
            integral_float=True,
        )
    ropes = _read_rope_dicts(cfg, family, notes)
    plan = fam.layer_plan(family, cfg, notes, need_layers=need_layers)
    return {
        "cfg": cfg,
        "source": source,
        "family": family,
        "model_type": model_type,
        "max_pos": max_pos,
        "ropes": ropes,
        "plan": plan,
        "notes": notes,
    }


def _memo(ctx: dict, plan: LayerPlan) -> tuple:
    """Layers with the same rope dict and head width share one spec object."""
    return (None if None in ctx["ropes"] else plan.rope_key, plan.head_dim)


def _check_seq_len(seq_len):
    if seq_len is None:
        return None
    return check_positive_int(seq_len, "seq_len", maximum=MAX_POSITION)


def rope_schedule(config, *, seq_len: int | None = None) -> RopeSchedule:
    r"""Every layer's RoPE and query scaling, as the model's code builds them.

    Parameters
    ----------
    config : dict, str, os.PathLike or transformers config
        A ``config.json`` as a dict or a path, or an object with ``to_dict()``.
    seq_len : int, optional
        Sequence length for the methods that depend on it (dynamic, longrope).

    Returns
    -------
    RopeSchedule
        One :class:`LayerRope` per layer (``num_hidden_layers``; one entry standing for all
        layers when the config gives no count and every layer is alike).

    Notes
    -----
    Layer rules (:mod:`refimpl.families`): Gemma 2/3/4 sliding and full layers (Gemma 3's
    ``rope_local_base_freq``, Gemma 4's wider full-attention heads and proportional RoPE),
    Llama 4 and SmolLM3 ``no_rope_layers`` / ``no_rope_layer_interval``, Cohere2 and EXAONE 4
    full-attention layers without RoPE, Qwen3-Next linear-attention layers, DeepSeek-V4's
    ``main``/``compress`` ropes. Book page "Real configurations".

    Examples
    --------
    >>> cfg = {"model_type": "gemma3_text", "head_dim": 16, "num_hidden_layers": 6,
    ...        "rope_theta": 1e6, "rope_local_base_freq": 1e4}
    >>> [layer.spec.base for layer in rope_schedule(cfg)]
    [10000.0, 10000.0, 10000.0, 10000.0, 10000.0, 1000000.0]
    """
    seq_len = _check_seq_len(seq_len)
    ctx = _context(config)
    cfg, family = ctx["cfg"], ctx["family"]
    specs: dict = {}
    layers = []
    for plan in ctx["plan"]:
        spec = None
        rope = _layer_rope(ctx["ropes"], plan) if plan.uses_rope or None in ctx["ropes"] else {}
        if plan.uses_rope:
            memo = _memo(ctx, plan)
            if memo not in specs:
                specs[memo] = _layer_spec(ctx, plan, None, seq_len)
            spec = specs[memo]
        query = fam.query_scaling(family, cfg, rope, plan, ctx["notes"])
        layers.append(LayerRope(plan.index, plan.layer_type, spec, query))
    return RopeSchedule(
        tuple(layers), tuple(dict.fromkeys(ctx["notes"])), ctx["source"], ctx["model_type"]
    )


def rope_from_config(
    config,
    seq_len: int | None = None,
    *,
    layer_type: str | None = None,
    pairing: str | None = None,
) -> RopeSpec:
    r"""The rotary embedding of one layer type of a model configuration.

    Parameters
    ----------
    config : dict, str, os.PathLike or transformers config
        A ``config.json`` as a dict or a path, or an object with ``to_dict()``.
    seq_len : int, optional
        Sequence length (max position + 1) for the methods that depend on it: ``dynamic`` and
        ``longrope``. ``None``: the frequencies the module has at initialisation (unscaled
        dynamic, short LongRoPE factors).
    layer_type : str, optional
        Which layers (a ``layer_types`` entry, a nested ``rope_parameters`` key). Needed when
        the layers' ropes differ; :func:`rope_schedule` gives them all.
    pairing : {"half", "interleaved"}, optional
        Layout of the rotated features; None: the config's flag or the family's default
        (:mod:`refimpl.families`).

    Returns
    -------
    RopeSpec

    Notes
    -----
    See the module docstring for the refusal policy. Book page "Real configurations".

    Examples
    --------
    >>> spec = rope_from_config({"hidden_size": 64, "num_attention_heads": 4,
    ...                          "rope_theta": 10000.0, "max_position_embeddings": 64})
    >>> spec.rope_type, spec.dim, spec.rotary_dim, spec.inv_freq[:2]
    ('default', 16, 16, array([1.        , 0.31622777]))
    >>> rope_from_config({"model_type": "cohere", "head_dim": 8}).pairing
    'interleaved'
    """
    seq_len = _check_seq_len(seq_len)
    if pairing is not None:
        check_pairing(pairing)
    ctx = _context(config, need_layers=False)
    plans = ctx["plan"]
    if layer_type is not None:
        if not isinstance(layer_type, str):
            raise TypeError(f"layer_type must be a string, got {layer_type!r}")
        plans = [p for p in plans if layer_type in (p.layer_type, p.rope_key)]
        if not plans and layer_type in ctx["ropes"]:
            plans = [LayerPlan(0, layer_type, layer_type)]
        if not plans:
            known = sorted({p.layer_type for p in ctx["plan"]} | set(ctx["ropes"]) - {None})
            raise ValueError(f"layer_type must be one of {known}, got {layer_type!r}")
    elif None not in ctx["ropes"] and all(p.layer_type == "all" for p in plans):
        if len({json.dumps(v, sort_keys=True) for v in ctx["ropes"].values()}) > 1:
            raise ValueError(
                f"rope_parameters is nested per layer type {sorted(ctx['ropes'])}; pass "
                "layer_type=... (or use rope_schedule)"
            )
        plans = [LayerPlan(0, next(iter(ctx["ropes"])), next(iter(ctx["ropes"])))]
    roped = [p for p in plans if p.uses_rope]
    if not roped:
        raise ValueError(
            f"layer type {layer_type!r} has no RoPE (NoPE layers); rope_schedule lists them"
        )
    specs = {}
    for p in roped:
        memo = _memo(ctx, p)
        if memo not in specs:
            specs[memo] = _layer_spec(ctx, p, pairing, seq_len)
    distinct = {s.key(): s for s in specs.values()}
    if len(distinct) > 1:
        types = sorted({p.layer_type for p in roped})
        raise ValueError(
            f"the layers' ropes differ (layer types {types}); pass layer_type=... (or use "
            "rope_schedule)"
        )
    return next(iter(specs.values()))
