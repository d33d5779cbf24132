"""The rotary embedding of one layer of a model: :class:`RopeSpec`.

A spec holds each fact once (widths, slice, base, method and parameters, the method's exact
float64 frequencies, attention factor, pairing and output order, M-RoPE sections) and checks
them at construction; its tables and rotations are computed in :mod:`refimpl.spec_tables`.
:func:`refimpl.config.rope_from_config` and :func:`refimpl.gguf.rope_from_gguf` build specs
from files.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping

import numpy as np

from . import spec_tables
from ._checks import (
    MAX_POSITION,
    as_inv_freq,
    check_base,
    check_choice,
    check_dim,
    check_int,
    check_pairing,
    check_positive,
    check_positive_int,
)
from .family_rules import ReadOnlyDict
from .multiaxis import MROPE_LAYOUTS, mrope_cos_sin
from .scaling import ROPE_SCALINGS
from .spec_tables import PRECISIONS  # noqa: F401 (re-exported: spec.PRECISIONS)

__all__ = ["INV_FREQ_AGREEMENT", "OUTPUT_ORDERS", "RopeSpec"]

OUTPUT_ORDERS = ("same", "half")
# A spec's stored inv_freq may differ from its method's float64 frequencies by this much
# (relative): frequencies read from files are often float32 (GGUF rope_freqs, ggml's
# cumulative float32 products drift by up to about d/2 float32 ulps, 64 * 6e-8 = 4e-6 for
# d = 128); different parameters differ by far more (a factor 2 or a base 10x).
INV_FREQ_AGREEMENT = 1e-5


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
        put("params", ReadOnlyDict(self.params))
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
            spec_tables.position_limit(self),
        )

    def _position_limit(self) -> int | None:
        """Positions must stay below this (methods whose frequencies depend on the length)."""
        return spec_tables.position_limit(self)

    def cos_sin(
        self, positions, precision: str = "float64", *, method: str = "fast"
    ) -> tuple[np.ndarray, np.ndarray]:
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
        method : {"fast", "correct"}, default "fast"
            How ``"float64"`` tables are rounded (refused with any other precision):
            ``"fast"``, float64 angles of the float64 frequencies and the platform's cos/sin;
            ``"correct"``, cos and sin of the exact angle (the scaling record's exact
            frequencies, :meth:`refimpl.scaling.ScalingMethod.exact_frequencies`, times the
            position) times ``attention_scaling``, each rounded to the nearest float64, the
            same bits on every machine (:func:`refimpl.rotary.cos_sin`). A spec holding
            frequencies of its own (a GGUF file's tensor) has those float64 values taken
            exactly.

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
        >>> from refimpl import rope_from_config
        >>> spec = rope_from_config({"head_dim": 4, "rope_theta": 100.0})
        >>> c, s = spec.cos_sin([0, 1])
        >>> c.shape, float(s[1, 1])  # theta_1 = 0.1
        ((2, 2), 0.09983341664682815)
        >>> spec.cos_sin([1], precision="transformers-float32")[1].dtype
        dtype('float32')
        >>> float(spec.cos_sin([1], method="correct")[1][0, 1])  # the nearest float64
        0.09983341664682815
        """
        return spec_tables.cos_sin(self, positions, precision, method)

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

    def apply(
        self, x, positions, precision: str = "float64", *, method: str = "fast",
        **position_keywords,
    ) -> np.ndarray:  # fmt: skip
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
        method : {"fast", "correct"}, default "fast"
            How the ``"float64"`` tables are rounded, as in :meth:`cos_sin` (refused with
            any other precision).
        **position_keywords
            ``offsets``, ``cu_seqlens``, ``cp_rank``, ``cp_size``, ``inverse``: forwarded to
            :func:`refimpl.rotary.apply_rope_tables` (the tables then cover positions
            ``0 .. P-1``, P the largest position reached plus one; integer positions).

        Examples
        --------
        >>> from refimpl import rope_from_config
        >>> spec = rope_from_config({"head_dim": 2, "rope_theta": 100.0})
        >>> spec.apply(np.array([[1.0, 0.0]]), [1]).round(6)  # rotated by 1 rad
        array([[0.540302, 0.841471]])
        >>> spec.apply(spec.apply(np.array([[1.0, 0.0]]), [1]), [1], inverse=True).round(6)
        array([[1., 0.]])
        """
        return spec_tables.apply(self, x, positions, precision, method, position_keywords)

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
        >>> from refimpl import rope_from_config
        >>> spec = rope_from_config({"head_dim": 8, "rope_scaling": {"type": "linear",
        ...                                                         "factor": 2.0}})
        >>> spec.pair_table()["scale"]
        array([2., 2., 2., 2.])
        """
        return spec_tables.pair_table(self)

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
