"""RoPE of a real model: read a ``config.json`` and return its exact rotary embedding.

:func:`rope_from_config` accepts the transformers 4.x form (``rope_scaling`` + ``rope_theta``),
the 5.x form (``rope_parameters``, flat or nested per layer type), legacy ``"type"`` keys,
``head_dim``, ``partial_rotary_factor`` (and GPT-NeoX's ``rotary_pct``/``rotary_emb_base``) and
``original_max_position_embeddings`` wherever it is written. Where transformers would silently
misread a config, refimpl raises or applies a documented choice recorded in ``RopeSpec.notes``:

* a missing ``original_max_position_embeddings`` for yarn/llama3/longrope is an error
  (transformers 5.x silently uses ``max_position_embeddings``);
* ``original_max_position_embeddings`` written twice with different values is an error
  (transformers lets the top-level one win), and so is a dynamic config whose
  ``original_max_position_embeddings`` differs from ``max_position_embeddings`` (transformers
  ignores it);
* YaRN ``beta_fast``/``beta_slow`` equal to 0 are errors (transformers replaces them by 32/1);
* keys a rope type does not use are errors (transformers only warns and ignores them);
* a Llama config with ``partial_rotary_factor`` != 1 is an error (Llama's default RoPE ignores
  it while its scaled types honour it);
* ``head_dim`` given as null is treated as absent (transformers' dynamic/yarn/longrope crash);
* a missing base is 10000 and a missing GPT-NeoX ``rotary_pct`` is 0.25, as in transformers,
  and both are recorded in ``notes``.
"""

from __future__ import annotations

import dataclasses
import json
import numbers
import os
from typing import Any

import numpy as np

from ._checks import as_float_array, as_positions, check_choice, check_pairing
from .numerics import transformers_float32_forward
from .rotary import apply_rope, cos_sin, pair_indices
from .rotary import inv_freq as _default_inv_freq
from .scaling import scale_frequencies, transformers_float32_frequencies

__all__ = ["PRECISIONS", "RopeSpec", "load_config", "rope_from_config"]

PRECISIONS = ("float64", "transformers-float32")
DEFAULT_BASE = 10000.0
TRANSFORMERS_TYPES = ("default", "linear", "dynamic", "yarn", "llama3", "longrope")
_LEGACY_TYPE_NAMES = {"su": "longrope"}

# config key -> scaling-function parameter, per rope type
_KEYS = {
    "default": {},
    "linear": {"factor": "factor"},
    "dynamic": {"factor": "factor"},
    "yarn": {
        "factor": "factor",
        "original_max_position_embeddings": "original_max_position",
        "attention_factor": "attention_factor",
        "beta_fast": "beta_fast",
        "beta_slow": "beta_slow",
        "mscale": "mscale",
        "mscale_all_dim": "mscale_all_dim",
        "truncate": "truncate",
    },
    "llama3": {
        "factor": "factor",
        "original_max_position_embeddings": "original_max_position",
        "low_freq_factor": "low_freq_factor",
        "high_freq_factor": "high_freq_factor",
    },
    "longrope": {
        "short_factor": "short_factor",
        "long_factor": "long_factor",
        "original_max_position_embeddings": "original_max_position",
        "factor": "factor",
        "attention_factor": "attention_factor",
    },
}
_REQUIRED = {
    "default": (),
    "linear": ("factor",),
    "dynamic": ("factor",),
    "yarn": ("factor", "original_max_position_embeddings"),
    "llama3": (
        "factor",
        "original_max_position_embeddings",
        "low_freq_factor",
        "high_freq_factor",
    ),
    "longrope": ("short_factor", "long_factor", "original_max_position_embeddings"),
}
_COMMON_KEYS = {"rope_type", "type", "rope_theta", "partial_rotary_factor"}


@dataclasses.dataclass(frozen=True)
class RopeSpec:
    """The rotary embedding of one model configuration.

    Attributes
    ----------
    dim : int
        Head width (``head_dim``).
    rotary_dim : int
        Rotated width (the first ``rotary_dim`` features of each head).
    base : float
        :math:`b` (``rope_theta``).
    rope_type : str
        Key of :data:`refimpl.ROPE_SCALINGS`.
    inv_freq : numpy.ndarray, shape (rotary_dim // 2,), float64
        The method's frequencies computed exactly (not transformers' float32 ones).
    attention_scaling : float
        Multiplied into cos and sin.
    pairing : str
        ``"half"`` (transformers layout) or ``"interleaved"``.
    params : dict
        Keyword arguments passed to the scaling function.
    seq_len : int or None
        Sequence length the frequencies are for (dynamic, longrope).
    max_position : int or None
        ``max_position_embeddings``.
    notes : tuple of str
        Defaults applied and choices made while reading the config.
    source : str
        Where the config came from (a path or ``"<dict>"``).
    """

    dim: int
    rotary_dim: int
    base: float
    rope_type: str
    inv_freq: np.ndarray
    attention_scaling: float
    pairing: str = "half"
    params: dict = dataclasses.field(default_factory=dict)
    seq_len: int | None = None
    max_position: int | None = None
    notes: tuple = ()
    source: str = "<dict>"

    @property
    def inv_freq_float32(self) -> np.ndarray:
        """The float32 ``inv_freq`` buffer transformers' rotary module holds for this config
        (its runtime value for ``seq_len``), shape ``(rotary_dim // 2,)``."""
        return transformers_float32_frequencies(self.rope_type, **self.params).inv_freq

    def _check_positions(self, positions) -> np.ndarray:
        pos = as_positions(positions)
        if self.rope_type in ("dynamic", "longrope") and pos.size:
            limit = self.seq_len
            if limit is None:
                limit = (
                    self.max_position
                    if self.rope_type == "dynamic"
                    else self.params["original_max_position"]
                )
            if pos.max() + 1 > limit:
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
        precision : {"float64", "transformers-float32"}, default "float64"
            ``"float64"``: the exact reference (float64 angles of the exact frequencies).
            ``"transformers-float32"``: transformers' arithmetic: float32 frequencies, one
            float32 product ``float32(m) * inv_freq``, cos/sin rounded to float32, times the
            attention factor in float32.

        Returns
        -------
        cos, sin : numpy.ndarray, each shape (seq, rotary_dim // 2)
            float64 or float32 according to ``precision``. transformers' module returns
            ``concat(cos, cos)`` (width ``rotary_dim``).

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
        pos = self._check_positions(positions)
        if precision == "float64":
            return cos_sin(pos, self.inv_freq, attention_scaling=self.attention_scaling)
        return transformers_float32_forward(  # [eq:config-float32-forward]
            pos, self.inv_freq_float32, self.attention_scaling
        )

    def apply(self, x, positions, precision: str = "float64") -> np.ndarray:
        """Rotate queries or keys ``x`` of shape ``(..., seq, dim)`` by their positions.

        ``precision="float64"`` uses :func:`refimpl.apply_rope` (dtype kept, computed in
        float64); ``"transformers-float32"`` repeats transformers' float32
        ``x * cos + rotate_half(x) * sin`` on the first ``rotary_dim`` features.

        Examples
        --------
        >>> spec = rope_from_config({"head_dim": 2, "rope_theta": 100.0})
        >>> spec.apply(np.array([[1.0, 0.0]]), [1]).round(6)  # rotated by 1 rad
        array([[0.540302, 0.841471]])
        """
        check_choice(precision, "precision", PRECISIONS)
        pos = self._check_positions(positions)
        if precision == "float64":
            return apply_rope(
                x,
                pos,
                inv_freq=self.inv_freq,
                pairing=self.pairing,
                attention_scaling=self.attention_scaling,
                rotary_dim=self.rotary_dim,
            )
        xa = as_float_array(x, "x", min_ndim=2).astype(np.float32)
        if xa.shape[-1] != self.dim or xa.shape[-2] != pos.shape[0]:
            raise ValueError(f"x must have shape (..., {pos.shape[0]}, {self.dim}), got {xa.shape}")
        c, s = self.cos_sin(pos, precision)
        i1, i2 = pair_indices(self.rotary_dim, self.pairing)
        out = xa.copy()
        x1, x2 = xa[..., i1], xa[..., i2]
        out[..., i1] = x1 * c + (-x2) * s
        out[..., i2] = x2 * c + x1 * s
        return out

    def pair_table(self) -> dict[str, np.ndarray]:
        """Per-pair description: the unscaled and scaled frequency, wavelengths, the scale
        applied (``theta / theta'``) and whether the pair is extrapolated (kept), interpolated
        (divided by the full factor) or ramped (in between).

        Returns
        -------
        dict of numpy.ndarray, each shape (rotary_dim // 2,)
            Keys ``pair``, ``inv_freq``, ``scaled_inv_freq``, ``wavelength``,
            ``scaled_wavelength``, ``scale``, ``regime`` (strings).

        Examples
        --------
        >>> spec = rope_from_config({"head_dim": 8, "rope_scaling": {"type": "linear",
        ...                                                         "factor": 2.0}})
        >>> spec.pair_table()["scale"]
        array([2., 2., 2., 2.])
        """
        theta = _default_inv_freq(self.rotary_dim, self.base)
        scale = theta / self.inv_freq
        full = scale.max()
        if self.rope_type in ("linear", "yarn", "llama3"):
            full = self.params["factor"]
        regime = np.where(
            np.isclose(scale, 1.0, rtol=1e-9, atol=0),
            "extrapolated",
            np.where(np.isclose(scale, full, rtol=1e-9, atol=0), "interpolated", "ramped"),
        )
        if self.rope_type == "longrope":
            regime = np.where(np.isclose(scale, 1.0, rtol=1e-9, atol=0), "extrapolated", "scaled")
        return {
            "pair": np.arange(theta.shape[0]),
            "inv_freq": theta,
            "scaled_inv_freq": self.inv_freq,
            "wavelength": 2 * np.pi / theta,
            "scaled_wavelength": 2 * np.pi / self.inv_freq,
            "scale": scale,
            "regime": regime,
        }


# --------------------------------------------------------------------------- parsing


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
        The path does not exist or is not valid JSON (the message names the path).
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
    if isinstance(config, (str, os.PathLike)):
        path = os.fspath(config)
        if not os.path.isfile(path):
            raise ValueError(f"config: no such file: {path}")
        try:
            with open(path, encoding="utf8") as fh:
                data = json.load(fh)
        except json.JSONDecodeError as exc:
            raise ValueError(f"config: {path} is not valid JSON ({exc})") from None
        if not isinstance(data, dict):
            raise ValueError(f"config: {path} must hold a JSON object, got {type(data).__name__}")
        return data, path
    raise TypeError(
        f"config must be a dict, a path to config.json or a transformers config, "
        f"got {type(config).__name__}"
    )


def _real(value, key: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"config key {key} must be a number, got {type(value).__name__} {value!r}")
    return float(value)


def _int(value, key: str) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or value != int(value):
        raise TypeError(f"config key {key} must be an integer, got {value!r}")
    if value <= 0:
        raise ValueError(f"config key {key} must be positive, got {value}")
    return int(value)


def _one_value(candidates: list[tuple[str, Any]], what: str):
    """The common value of the keys that are present; an error if they disagree."""
    present = [(k, v) for k, v in candidates if v is not None]
    if not present:
        return None
    first = present[0][1]
    for k, v in present[1:]:
        if v != first:
            listing = ", ".join(f"{k}={v!r}" for k, v in present)
            raise ValueError(f"config gives {what} twice with different values: {listing}")
    return first


def _rope_dict(cfg: dict, layer_type: str | None) -> tuple[dict, list[str]]:
    notes: list[str] = []
    rp = cfg.get("rope_parameters")
    rs = cfg.get("rope_scaling")
    for name, val in (("rope_parameters", rp), ("rope_scaling", rs)):
        if val is not None and not isinstance(val, dict):
            raise TypeError(f"config key {name} must be an object, got {type(val).__name__}")
    if rp and any(isinstance(v, dict) for v in rp.values()):
        layers = sorted(rp)
        if layer_type is None:
            distinct = {json.dumps(v, sort_keys=True) for v in rp.values()}
            if len(distinct) > 1:
                raise ValueError(
                    f"rope_parameters is nested per layer type {layers}; pass layer_type=..."
                )
            layer_type = layers[0]
        if layer_type not in rp:
            raise ValueError(f"layer_type must be one of {layers}, got {layer_type!r}")
        rp = rp[layer_type]
        notes.append(f"rope_parameters of layer type {layer_type!r}")
    elif layer_type is not None:
        raise ValueError("layer_type is given but rope_parameters is not nested per layer type")
    if rs and rp:
        strip = {"rope_theta", "partial_rotary_factor"}
        a = {k: v for k, v in rs.items() if k not in strip}
        b = {k: v for k, v in rp.items() if k not in strip}
        if a != b:
            raise ValueError(
                f"config has both rope_scaling and rope_parameters and they disagree: {a} vs {b}"
            )
    rope = dict(rs or rp or {})
    if rp and rs:
        rope = {**rp, **rs}
    return rope, notes


def _rope_type(rope: dict, notes: list[str]) -> str:
    t_new, t_old = rope.get("rope_type"), rope.get("type")
    if t_new is not None and t_old is not None and t_new != t_old:
        raise ValueError(f"rope_scaling has rope_type={t_new!r} and type={t_old!r}")
    t = t_new if t_new is not None else t_old
    if t is None:
        t = "default"
        if rope and set(rope) - {"rope_theta", "partial_rotary_factor"}:
            raise ValueError("rope_scaling has no rope_type (nor legacy type) key")
    if not isinstance(t, str):
        raise TypeError(f"rope_type must be a string, got {t!r}")
    if t in _LEGACY_TYPE_NAMES:
        notes.append(f"legacy rope type {t!r} read as {_LEGACY_TYPE_NAMES[t]!r}")
        t = _LEGACY_TYPE_NAMES[t]
    if t not in TRANSFORMERS_TYPES:
        extra = ""
        if t == "ntk":
            extra = " (static NTK-aware scaling is written as rope_theta = ntk_base(...))"
        raise ValueError(
            f"unknown rope_type {t!r}{extra}; rope_from_config knows: "
            f"{', '.join(TRANSFORMERS_TYPES)}"
        )
    return t


def rope_from_config(
    config,
    seq_len: int | None = None,
    *,
    layer_type: str | None = None,
    pairing: str = "half",
) -> RopeSpec:
    r"""The rotary embedding described by a model configuration.

    Parameters
    ----------
    config : dict, str, os.PathLike or transformers config
        A ``config.json`` as a dict or a path, or an object with ``to_dict()``.
    seq_len : int, optional
        Sequence length (max position + 1) for the methods that depend on it: ``dynamic`` and
        ``longrope``. ``None``: the frequencies the module has at initialisation (unscaled
        dynamic, short LongRoPE factors).
    layer_type : str, optional
        For 5.x configs whose ``rope_parameters`` is nested per layer type.
    pairing : {"half", "interleaved"}, default "half"
        Layout of the rotated features (transformers checkpoints are half-split).

    Returns
    -------
    RopeSpec

    Notes
    -----
    See the module docstring for the choices made where transformers would misread a config.
    Book page "Real configurations".

    Examples
    --------
    >>> spec = rope_from_config({"hidden_size": 64, "num_attention_heads": 4,
    ...                          "rope_theta": 10000.0, "max_position_embeddings": 64})
    >>> spec.rope_type, spec.dim, spec.rotary_dim, spec.inv_freq[:2]
    ('default', 16, 16, array([1.        , 0.31622777]))
    """
    cfg, source = load_config(config)
    check_pairing(pairing)
    if "text_config" in cfg and not any(
        k in cfg for k in ("rope_parameters", "rope_scaling", "rope_theta", "hidden_size")
    ):
        cfg = dict(cfg["text_config"])
    rope, notes = _rope_dict(cfg, layer_type)
    rope_type = _rope_type(rope, notes)

    base = _one_value(
        [
            ("rope_parameters.rope_theta", rope.get("rope_theta")),
            ("rope_theta", cfg.get("rope_theta")),
            ("rotary_emb_base", cfg.get("rotary_emb_base")),
        ],
        "the base (rope_theta)",
    )
    if base is None:
        base = DEFAULT_BASE
        notes.append("no rope_theta: base 10000.0 (transformers' default)")
    base = _real(base, "rope_theta")

    head_dim = cfg.get("head_dim")
    if head_dim is None:
        if "head_dim" in cfg:
            notes.append("head_dim is null: using hidden_size // num_attention_heads")
        hs, nh = cfg.get("hidden_size"), cfg.get("num_attention_heads")
        if hs is None or nh is None:
            raise ValueError(
                "config needs head_dim, or hidden_size and num_attention_heads, to size RoPE"
            )
        hs, nh = _int(hs, "hidden_size"), _int(nh, "num_attention_heads")
        if hs % nh:
            raise ValueError(
                f"hidden_size={hs} is not divisible by num_attention_heads={nh}; "
                "give head_dim explicitly"
            )
        head_dim = hs // nh
    head_dim = _int(head_dim, "head_dim")

    partial = _one_value(
        [
            ("rope_parameters.partial_rotary_factor", rope.get("partial_rotary_factor")),
            ("partial_rotary_factor", cfg.get("partial_rotary_factor")),
            ("rotary_pct", cfg.get("rotary_pct")),
        ],
        "partial_rotary_factor",
    )
    if partial is None and cfg.get("model_type") == "gpt_neox":
        partial = 0.25
        notes.append("gpt_neox without rotary_pct: partial_rotary_factor 0.25 (transformers)")
    partial = 1.0 if partial is None else _real(partial, "partial_rotary_factor")
    if not 0.0 < partial <= 1.0:
        raise ValueError(f"partial_rotary_factor must be in (0, 1], got {partial}")
    if cfg.get("model_type") == "llama" and partial != 1.0:
        raise ValueError(
            "a llama config with partial_rotary_factor != 1 is ambiguous: transformers' Llama "
            "ignores it for default RoPE but honours it for scaled types; remove it or use a "
            "model type that rotates a partial width"
        )
    rotary_dim = int(head_dim * partial)
    if rotary_dim < 2 or rotary_dim % 2:
        raise ValueError(
            f"rotary width int(head_dim * partial_rotary_factor) = {rotary_dim} must be even "
            f"and >= 2 (head_dim={head_dim}, partial_rotary_factor={partial})"
        )

    max_pos = cfg.get("max_position_embeddings")
    max_pos = None if max_pos is None else _int(max_pos, "max_position_embeddings")

    used = set(_KEYS[rope_type])
    unknown = sorted(set(rope) - used - _COMMON_KEYS)
    if rope_type == "dynamic" and "original_max_position_embeddings" in rope:
        orig = rope["original_max_position_embeddings"]
        if orig != max_pos:
            raise ValueError(
                f"dynamic rope: original_max_position_embeddings={orig} differs from "
                f"max_position_embeddings={max_pos}; transformers 5.x ignores the former and "
                "scales from max_position_embeddings: make them agree"
            )
        unknown.remove("original_max_position_embeddings")
    if unknown:
        raise ValueError(
            f"rope parameters {unknown} are not used by rope_type {rope_type!r} "
            f"(transformers ignores them with a warning); known keys: {sorted(used)}"
        )

    raw = {k: rope[k] for k in _KEYS[rope_type] if rope.get(k) is not None}
    if "original_max_position_embeddings" in used:
        top = cfg.get("original_max_position_embeddings")
        orig = _one_value(
            [
                (
                    "rope_scaling.original_max_position_embeddings",
                    raw.get("original_max_position_embeddings"),
                ),
                ("original_max_position_embeddings", top),
            ],
            "original_max_position_embeddings",
        )
        if orig is not None:
            raw["original_max_position_embeddings"] = orig
    missing = [k for k in _REQUIRED[rope_type] if k not in raw]
    if missing:
        hint = ""
        if "original_max_position_embeddings" in missing:
            hint = (
                " (transformers 5.x would silently use max_position_embeddings as the "
                "original context)"
            )
        raise ValueError(f"rope_type {rope_type!r} needs config keys {missing}{hint}")

    params: dict[str, Any] = {"dim": rotary_dim, "base": base}
    for key, value in raw.items():
        name = _KEYS[rope_type][key]
        if name in ("short_factor", "long_factor"):
            params[name] = value
        elif name == "truncate":
            if not isinstance(value, bool):
                raise TypeError(f"config key truncate must be true or false, got {value!r}")
            params[name] = value
        elif name == "original_max_position":
            params[name] = _int(value, key)
        else:
            params[name] = _real(value, key)

    if rope_type == "dynamic":
        if max_pos is None:
            raise ValueError("rope_type 'dynamic' needs max_position_embeddings")
        params["max_position"] = max_pos
        if seq_len is not None:
            params["seq_len"] = _int(seq_len, "seq_len")
    if rope_type == "yarn":
        for k, default in (("beta_fast", 32.0), ("beta_slow", 1.0)):
            if k in params and params[k] == 0:
                raise ValueError(
                    f"yarn {k}=0 is silently replaced by {default:g} in transformers; "
                    f"write {default:g} (or the value you mean) explicitly"
                )
        if ("mscale" in params) != ("mscale_all_dim" in params) or (
            "mscale" in params and not (params["mscale"] and params["mscale_all_dim"])
        ):
            if "attention_factor" not in params:
                notes.append(
                    "mscale/mscale_all_dim are used only when both are non-zero: "
                    "attention factor 0.1 ln(factor) + 1"
                )
        L = params["original_max_position"]
        if max_pos is not None and max_pos / L not in (1.0, params["factor"]):
            notes.append(
                f"factor {params['factor']:g} differs from max_position_embeddings / original "
                f"= {max_pos / L:g}; the explicit factor is used (as transformers does)"
            )
    if rope_type == "longrope":
        if "factor" not in params and "attention_factor" not in params:
            if max_pos is None:
                raise ValueError("longrope without factor needs max_position_embeddings")
            params["max_position"] = max_pos
            notes.append(
                "longrope factor = max_position_embeddings / original (attention factor only)"
            )
        if seq_len is not None:
            params["seq_len"] = _int(seq_len, "seq_len")
    if rope_type == "llama3" and max_pos is not None and params["original_max_position"] >= max_pos:
        notes.append("original_max_position_embeddings >= max_position_embeddings")

    scaled = scale_frequencies(rope_type, **params)
    return RopeSpec(
        dim=head_dim,
        rotary_dim=rotary_dim,
        base=base,
        rope_type=rope_type,
        inv_freq=scaled.inv_freq,
        attention_scaling=float(scaled.attention_scaling),
        pairing=pairing,
        params=params,
        seq_len=None if seq_len is None else _int(seq_len, "seq_len"),
        max_position=max_pos,
        notes=tuple(notes),
        source=source,
    )
