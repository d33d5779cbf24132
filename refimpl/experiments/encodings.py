"""Positional encodings as plug-ins of the toy transformer (:mod:`refimpl.experiments.model`).

An encoding acts on the model through at most three hooks, each with its backward pass:

* ``embedding(params, seq_len, d_model)`` -> ``(seq, d_model)`` added to the token embeddings
  (learned absolute, sinusoidal);
* ``rotate(q, k, positions)`` -> ``(q', k')`` applied to queries and keys of every head
  (RoPE, partial rotary, p-RoPE, xPos), with ``rotate_backward(dq', dk', positions) -> (dq, dk)``;
* ``bias(params, seq_len)`` -> ``(n_heads, seq, seq)`` added to the attention logits
  (ALiBi, T5), with ``bias_grad(params, dbias, seq_len)``.

A :class:`Hybrid` gives each layer its own encoding (RoPE on some layers, NoPE on others, as
Llama 4 and SmolLM3 interleave them): the model asks ``encoding.layer(l)`` for the rotation and
the bias of layer ``l``; every other encoding answers with itself.

Trainable parameters of an encoding live in the model's parameter dictionary under keys that
start with ``"pe."``, so that one Adam optimiser updates everything. RoPE's frequencies are
fixed: a context-extension method (a registry scaling of :data:`refimpl.scaling.ROPE_SCALINGS`)
only replaces ``inv_freq`` and the attention scaling at evaluation, via
:meth:`RoPE.with_scaling`.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence

import numpy as np

from .._checks import (
    check_base,
    check_choice,
    check_dim,
    check_nonnegative,
    check_positive,
    check_positive_int,
)
from ..absolute import sinusoidal
from ..bias import alibi_bias, alibi_slopes, t5_bias, t5_relative_position_bucket
from ..rotary import apply_rope, apply_rope_tables, cos_sin, inv_freq, pair_indices
from ..scaling import ROPE_SCALINGS, proportional_frequencies
from ..xpos import apply_xpos, xpos_scale

__all__ = [
    "ENCODINGS",
    "VARIANTS",
    "ALiBi",
    "Hybrid",
    "LearnedAbsolute",
    "NoPE",
    "PartialRoPE",
    "PositionalEncoding",
    "ProportionalRoPE",
    "RoPE",
    "Sinusoidal",
    "T5Bias",
    "XPos",
    "make_encoding",
]


class PositionalEncoding:
    """Base class: no positional information (every hook is the identity / absent).

    Subclasses override the hooks they use. ``init_params`` returns the encoding's trainable
    arrays (keys start with ``"pe."``); the other hooks receive the full parameter dict.
    """

    name = "none"
    n_layers: int | None = None  # a fixed number of layers (Hybrid), or None: any model depth

    def layer(self, index: int) -> PositionalEncoding:
        """The encoding of layer ``index`` (itself, except for :class:`Hybrid`)."""
        return self

    def init_params(self, rng: np.random.Generator, *, d_model: int, n_heads: int) -> dict:
        """Trainable arrays of the encoding (none by default)."""
        return {}

    def embedding(self, params: dict, seq_len: int, d_model: int) -> np.ndarray | None:
        """Vector added to the token embedding at each position, ``(seq, d_model)``, or None."""
        return None

    def embedding_grad(self, params: dict, grad: np.ndarray) -> dict:
        """Gradients of the encoding's parameters from ``dL/d(embedding)`` of shape (B, T, D)."""
        return {}

    def rotate(self, q: np.ndarray, k: np.ndarray, positions: np.ndarray):
        """Position-dependent map of queries and keys ``(B, H, T, dh)``."""
        return q, k

    def rotate_backward(self, dq: np.ndarray, dk: np.ndarray, positions: np.ndarray):
        """Transpose of :meth:`rotate`'s Jacobian applied to ``dL/dq'`` and ``dL/dk'``."""
        return dq, dk

    def bias(self, params: dict, seq_len: int, n_heads: int) -> np.ndarray | None:
        """Additive logit bias ``(n_heads, seq, seq)`` (query, key), or None."""
        return None

    def bias_grad(self, params: dict, dbias: np.ndarray) -> dict:
        """Gradients of the encoding's parameters from ``dL/d(bias)`` of shape (H, T, T)."""
        return {}

    def describe(self) -> dict:
        """JSON-ready description (name and settings) for result files."""
        return {"name": self.name}


class NoPE(PositionalEncoding):
    """No positional encoding: the causal mask is the only source of order."""

    name = "nope"


class LearnedAbsolute(PositionalEncoding):
    """A trained table ``P[p]`` added to the token embedding at position ``p``.

    Rows for positions never seen in training keep their random initial values, which is
    what a learned table offers beyond its training length.
    """

    name = "learned"

    def __init__(self, max_len: int, init_std: float = 0.02):
        self.max_len = check_positive_int(max_len, "max_len")
        self.init_std = check_positive(init_std, "init_std")

    def init_params(self, rng, *, d_model, n_heads):
        return {"pe.table": rng.normal(0.0, self.init_std, size=(self.max_len, d_model))}

    def embedding(self, params, seq_len, d_model):
        if seq_len > self.max_len:
            raise ValueError(f"seq_len must be <= max_len = {self.max_len}, got {seq_len}")
        return params["pe.table"][:seq_len]  # [eq:exp-learned-abs]

    def embedding_grad(self, params, grad):
        g = np.zeros_like(params["pe.table"])
        g[: grad.shape[1]] = grad.sum(axis=0)
        return {"pe.table": g}

    def describe(self):
        return {"name": self.name, "max_len": self.max_len, "init_std": self.init_std}


class Sinusoidal(PositionalEncoding):
    """The fixed sinusoidal table of Vaswani et al. (:func:`refimpl.sinusoidal`), scaled."""

    name = "sinusoidal"

    def __init__(self, base: float = 10000.0, scale: float = 1.0):
        self.base = check_base(base)
        self.scale = check_positive(scale, "scale")

    def embedding(self, params, seq_len, d_model):
        return self.scale * sinusoidal(seq_len, d_model, base=self.base)  # [eq:exp-sinusoidal-add]

    def describe(self):
        return {"name": self.name, "base": self.base, "scale": self.scale}


Frequencies = Callable[[int], tuple]  # seq_len -> (inv_freq, attention_scaling)


class RoPE(PositionalEncoding):
    r"""Rotary encoding of queries and keys of every head (half pairing).

    Forward: :math:`q'_m = s R_m q_m`, :math:`k'_n = s R_n k_n` with the attention scaling
    :math:`s` (1 in training). Backward: :math:`\partial L/\partial q_m = s R_{-m}\,
    \partial L/\partial q'_m` because :math:`R_m^\top = R_{-m}` (book eq. ``exp-rope-backward``).

    Parameters
    ----------
    head_dim : int
        Width of one head (even).
    base : float
        Base of the frequencies used in training.
    frequencies : callable, optional
        ``seq_len -> (inv_freq, attention_scaling)`` used instead of the training
        frequencies (set by :meth:`with_scaling`; a function of the length so that dynamic
        NTK can recompute them for each evaluation length).
    rotary_dim : int, optional
        Rotate only the first ``rotary_dim`` features (partial rotary, :class:`PartialRoPE`);
        default: the whole head.

    Notes
    -----
    Frequencies equal to zero (p-RoPE, :class:`ProportionalRoPE`) leave their pair unchanged:
    the rotation then uses tables with :math:`\cos = 1`, :math:`\sin = 0` on those pairs.
    """

    name = "rope"

    def __init__(
        self,
        head_dim: int,
        base: float = 10000.0,
        frequencies: Frequencies | None = None,
        *,
        rotary_dim: int | None = None,
    ):
        self.head_dim = check_dim(head_dim, "head_dim")
        self.base = check_base(base)
        self.rotary_dim = (
            self.head_dim if rotary_dim is None else check_dim(rotary_dim, "rotary_dim")
        )
        if self.rotary_dim > self.head_dim:
            raise ValueError(
                f"rotary_dim must be <= head_dim = {self.head_dim}, got {self.rotary_dim}"
            )
        self.frequencies = frequencies
        self.scaling_name = "default"
        self.scaling_kwargs: dict = {}

    def training_inv_freq(self) -> np.ndarray:
        """Frequencies of training, ``(rotary_dim // 2,)``: :math:`b^{-2i/r}`, r = ``rotary_dim``.

        Subclasses change this spectrum (:class:`ProportionalRoPE`).
        """
        return inv_freq(self.rotary_dim, self.base)  # [eq:exp-partial-rotary]

    def _freqs(self, seq_len: int):
        if self.frequencies is None:
            return self.training_inv_freq(), 1.0
        f, s = self.frequencies(seq_len)
        return np.asarray(f, dtype=np.float64), float(s)

    def _rotate(self, x, positions, sign: float):
        f, s = self._freqs(x.shape[-2])
        pos = sign * np.asarray(positions, dtype=np.float64)
        x = np.ascontiguousarray(x)  # same values; the kernel is faster on contiguous heads
        if np.all(f > 0.0):
            return apply_rope(x, pos, inv_freq=f, attention_scaling=s, rotary_dim=self.rotary_dim)
        live = f > 0.0  # zero frequencies: cos 1 and sin 0 exactly, the pair passes through
        c = np.ones((pos.shape[0], f.shape[0]))
        sn = np.zeros((pos.shape[0], f.shape[0]))
        if live.any():
            c[:, live], sn[:, live] = cos_sin(pos, f[live])
        return apply_rope_tables(x, s * c, s * sn)

    def rotate(self, q, k, positions):
        rq = self._rotate(q, positions, 1.0)  # [eq:exp-rope-forward]
        return rq, self._rotate(k, positions, 1.0)

    def rotate_backward(self, dq, dk, positions):
        gq = self._rotate(dq, positions, -1.0)  # [eq:exp-rope-backward]
        return gq, self._rotate(dk, positions, -1.0)

    def _scaled(self, f: np.ndarray) -> np.ndarray:
        """Frequencies of a scaling method as this encoding uses them (identity for RoPE)."""
        return f

    def _with(self, frequencies: Frequencies, name: str, kwargs: dict) -> RoPE:
        out = copy.copy(self)
        out.frequencies = frequencies
        out.scaling_name = name
        out.scaling_kwargs = kwargs
        return out

    def with_scaling(self, method: str, **kwargs) -> RoPE:
        """The same encoding with a registry scaling applied (for evaluation).

        ``method`` is a key of :data:`refimpl.scaling.ROPE_SCALINGS`; ``kwargs`` are passed to
        it with ``dim`` (the rotary width) and ``base`` filled in. For ``"dynamic"`` the
        current sequence length is passed as ``seq_len`` at every call. ``attention_scaling``
        may be overridden with ``attention_scaling=1.0`` to switch a method's temperature off.
        """
        check_choice(method, "method", tuple(ROPE_SCALINGS))
        fn = ROPE_SCALINGS[method]
        override = kwargs.pop("attention_scaling", None)
        dim, base = self.rotary_dim, self.base
        cache: dict = {}

        def frequencies(seq_len: int):
            key = seq_len if method == "dynamic" else None
            if key not in cache:
                extra = {"seq_len": seq_len} if method == "dynamic" else {}
                sf = fn(dim=dim, base=base, **kwargs, **extra)
                s = sf.attention_scaling if override is None else override
                f = self._scaled(np.asarray(sf.inv_freq, dtype=np.float64))
                cache[key] = (f, float(s))
            return cache[key]

        extra = {} if override is None else {"attention_scaling": override}
        return self._with(frequencies, method, dict(kwargs, **extra))

    def with_frequencies(self, inv_freq_new, attention_scaling: float = 1.0) -> RoPE:
        """The same encoding with explicit frequencies (for evaluation)."""
        f = np.asarray(inv_freq_new, dtype=np.float64)
        if f.shape != (self.rotary_dim // 2,):
            raise ValueError(f"inv_freq must have shape ({self.rotary_dim // 2},), got {f.shape}")
        return self._with(lambda seq_len: (f, attention_scaling), "explicit", {})

    def describe(self):
        out = {
            "name": self.name,
            "base": self.base,
            "scaling": self.scaling_name,
            "scaling_kwargs": {k: v for k, v in self.scaling_kwargs.items()},
        }
        if self.rotary_dim != self.head_dim:
            out["rotary_dim"] = self.rotary_dim
        return out


class PartialRoPE(RoPE):
    r"""Partial rotary: the first ``rotary_dim`` features rotate, the rest pass through.

    The rotated block is a RoPE of width :math:`r` = ``rotary_dim`` (half pairing inside it,
    pairs :math:`(i, i + r/2)`), with :math:`\theta_i = b^{-2i/r}`, :math:`i < r/2`: the
    whole range of frequencies in fewer pairs (GPT-NeoX's ``rotary_pct``, transformers'
    ``partial_rotary_factor``; book eq. ``exp-partial-rotary``). Features
    :math:`r \le j < d` are never rotated.
    """

    name = "partial"

    def __init__(self, head_dim: int, rotary_dim: int, base: float = 10000.0):
        super().__init__(head_dim, base, rotary_dim=rotary_dim)


class ProportionalRoPE(RoPE):
    r"""p-RoPE (proportional RoPE): only the highest-frequency fraction of the pairs rotates.

    With :math:`D` = ``head_dim`` and :math:`k = \lfloor p D / 2 \rfloor` (``proportion`` =
    :math:`p`), :math:`\theta_i = b^{-2i/D}` for :math:`i < k` and :math:`\theta_i = 0` for
    :math:`k \le i < D/2`: the record ``"proportional"`` of :data:`refimpl.scaling.ROPE_SCALINGS`
    (book eq. ``models-proportional``). The exponent is over the whole head, so the rotating
    pairs keep their RoPE frequencies and the lowest ones stop; half pairing over the whole
    head, so the pairs :math:`(i, i + D/2)`, :math:`i \ge k`, pass through. A scaling method
    (:meth:`with_scaling`) divides the rotating frequencies and leaves the others at zero, as
    the record's ``factor`` does.
    """

    name = "p-rope"

    def __init__(self, head_dim: int, proportion: float, base: float = 10000.0):
        super().__init__(head_dim, base)
        p = check_nonnegative(proportion, "proportion")
        if p > 1.0:
            raise ValueError(f"proportion must be in [0, 1], got {proportion}")
        self.proportion = p
        self.rotated_pairs = int(p * self.head_dim // 2)

    def training_inv_freq(self) -> np.ndarray:
        return proportional_frequencies(  # [eq:models-proportional]
            dim=self.head_dim, base=self.base, partial_rotary_factor=self.proportion
        ).inv_freq

    def _scaled(self, f: np.ndarray) -> np.ndarray:
        out = f.copy()
        out[self.rotated_pairs :] = 0.0
        return out

    def describe(self):
        return {
            **super().describe(),
            "proportion": self.proportion,
            "rotated_pairs": self.rotated_pairs,
        }


class XPos(PositionalEncoding):
    r"""xPos: RoPE with a per-pair exponential scale, :math:`q'_m = \zeta^{(m-c)/B} R_m q_m`,
    :math:`k'_n = \zeta^{-(n-c)/B} R_n k_n` (:func:`refimpl.xpos.apply_xpos`, half pairing).

    The offset :math:`c = \lfloor T/2 \rfloor` (``scale_offset``, as rotary-embedding-torch)
    cancels in every score and keeps the factors near 1. The backward pass is the transpose:
    :math:`\partial L/\partial q_m = \zeta^{(m-c)/B} R_{-m}\,\partial L/\partial q'_m` and
    :math:`\partial L/\partial k_n = \zeta^{-(n-c)/B} R_{-n}\,\partial L/\partial k'_n`
    (the scale is the same on both features of a pair, so it commutes with the rotation).
    """

    name = "xpos"

    def __init__(
        self, head_dim: int, base: float = 10000.0, scale_base: float = 512.0, gamma: float = 0.4
    ):
        self.head_dim = check_dim(head_dim, "head_dim")
        self.base = check_base(base)
        self.scale_base = check_positive(scale_base, "scale_base")
        self.gamma = check_positive(gamma, "gamma")

    @staticmethod
    def _offset(positions) -> float:
        return float(len(positions) // 2)

    def _scales(self, positions):
        """Per-feature factors ``(T, dh)`` of queries (``up``) and keys (``down = 1/up``)."""
        pos = np.asarray(positions, dtype=np.float64) - self._offset(positions)
        z = xpos_scale(pos, self.head_dim, scale_base=self.scale_base, gamma=self.gamma)
        first, second = pair_indices(self.head_dim, "half")
        up = np.empty((pos.shape[0], self.head_dim))
        up[:, first] = z  # (T, dh/2) -> both features of each pair
        up[:, second] = z
        return up, 1.0 / up

    def rotate(self, q, k, positions):
        return apply_xpos(  # [eq:exp-xpos-forward]
            q,
            k,
            positions,
            base=self.base,
            scale_base=self.scale_base,
            gamma=self.gamma,
            scale_offset=self._offset(positions),
        )

    def rotate_backward(self, dq, dk, positions):
        up, down = self._scales(positions)
        f = inv_freq(self.head_dim, self.base)
        neg = -np.asarray(positions, dtype=np.float64)
        gq = apply_rope(dq, neg, inv_freq=f) * up  # [eq:exp-xpos-backward]
        gk = apply_rope(dk, neg, inv_freq=f) * down
        return gq, gk

    def describe(self):
        return {
            "name": self.name,
            "base": self.base,
            "scale_base": self.scale_base,
            "gamma": self.gamma,
            "scale_offset": "floor(seq_len / 2)",
        }


class ALiBi(PositionalEncoding):
    r"""ALiBi: a fixed bias :math:`-m_h (i - j)` on the causal logits.

    The bias is :func:`refimpl.bias.alibi_bias` (paper form, ``causal=True``: ``-inf`` on
    future keys, which the model's causal mask also removes) with the slopes of
    :func:`refimpl.bias.alibi_slopes`; it has no trainable parameters.
    """

    name = "alibi"

    def __init__(self):
        self._cache: dict[tuple[int, int], np.ndarray] = {}

    def bias(self, params, seq_len, n_heads):
        key = (n_heads, seq_len)
        if key not in self._cache:
            self._cache[key] = alibi_bias(n_heads, seq_len, causal=True)  # [eq:exp-alibi-bias]
        return self._cache[key]

    def describe(self):
        return {"name": self.name, "slopes": "alibi_slopes(n_heads)"}

    @staticmethod
    def slopes(n_heads: int) -> np.ndarray:
        """The head slopes :math:`m_h` (:func:`refimpl.bias.alibi_slopes`)."""
        return alibi_slopes(n_heads)


class T5Bias(PositionalEncoding):
    """T5 relative bias: a trained scalar per (bucket, head), bucket of ``key - query``.

    The forward bias is :func:`refimpl.bias.t5_bias` (causal: ``bidirectional=False``, so
    every past distance has its own or a log-spaced bucket and future keys share bucket 0,
    which the causal mask removes); the table has shape ``(num_buckets, n_heads)``. The
    backward pass scatters ``dL/dbias`` back into the table by the same buckets of
    :func:`refimpl.bias.t5_relative_position_bucket` (relative position = key - query).
    """

    name = "t5"

    def __init__(self, num_buckets: int = 16, max_distance: int = 32):
        self.num_buckets = check_positive_int(num_buckets, "num_buckets")
        self.max_distance = check_positive_int(max_distance, "max_distance")
        self._buckets: dict[int, np.ndarray] = {}

    def init_params(self, rng, *, d_model, n_heads):
        return {"pe.t5": np.zeros((self.num_buckets, n_heads))}

    def buckets(self, seq_len: int) -> np.ndarray:
        """Bucket index of every (query, key) pair, ``(seq, seq)`` int."""
        if seq_len not in self._buckets:
            pos = np.arange(seq_len)
            rel = pos[None, :] - pos[:, None]  # key - query
            b = t5_relative_position_bucket(
                rel,
                bidirectional=False,
                num_buckets=self.num_buckets,
                max_distance=self.max_distance,
            )
            self._buckets[seq_len] = np.asarray(b, dtype=np.int64)
        return self._buckets[seq_len]

    def bias(self, params, seq_len, n_heads):
        return t5_bias(  # [eq:exp-t5-gather]  (H, T, T)
            params["pe.t5"],
            seq_len,
            seq_len,
            bidirectional=False,
            num_buckets=self.num_buckets,
            max_distance=self.max_distance,
        )

    def bias_grad(self, params, dbias):
        b = self.buckets(dbias.shape[-1])
        g = np.zeros_like(params["pe.t5"])
        for h in range(dbias.shape[0]):
            g[:, h] = np.bincount(b.ravel(), weights=dbias[h].ravel(), minlength=self.num_buckets)
        return {"pe.t5": g}

    def describe(self):
        return {
            "name": self.name,
            "num_buckets": self.num_buckets,
            "max_distance": self.max_distance,
        }


class Hybrid(PositionalEncoding):
    r"""One encoding per layer: e.g. RoPE on some layers and NoPE on the others.

    Layer :math:`l` of the model rotates its queries and keys (and adds its bias) with
    ``layers[l]`` (book eq. ``exp-hybrid``), as Llama 4 (``no_rope_layers``) and SmolLM3
    (``no_rope_layer_interval``) leave RoPE out of every fourth layer. The layers' encodings
    act inside attention only: each must have no embedding (which is added once, below every
    layer) and no trainable parameters (NoPE, RoPE and its variants, xPos, ALiBi).

    Parameters
    ----------
    layers : sequence of PositionalEncoding
        One per layer of the model (the model checks the count).
    """

    name = "hybrid"

    def __init__(self, layers: Sequence[PositionalEncoding]):
        layers = tuple(layers)
        if not layers:
            raise ValueError("layers must hold one encoding per layer, got none")
        for i, enc in enumerate(layers):
            if not isinstance(enc, PositionalEncoding) or isinstance(enc, Hybrid):
                raise TypeError(
                    f"layers[{i}] must be a PositionalEncoding other than Hybrid, "
                    f"got {type(enc).__name__}"
                )
            cls = type(enc)
            if (
                cls.embedding is not PositionalEncoding.embedding
                or cls.init_params is not PositionalEncoding.init_params
            ):
                raise ValueError(
                    f"layers[{i}] ({enc.name}) must have no embedding and no trainable "
                    "parameters (NoPE, RoPE and its variants, xPos, ALiBi)"
                )
        self.layers = layers
        self.n_layers = len(layers)

    def layer(self, index: int) -> PositionalEncoding:
        return self.layers[index]

    def describe(self):
        return {"name": self.name, "layers": [enc.describe() for enc in self.layers]}


ENCODINGS = ("nope", "learned", "sinusoidal", "rope", "alibi", "t5", "xpos")
"""The seven encodings every experiment of length generalisation compares."""
VARIANTS = ("partial", "p-rope", "hybrid")
"""Further names :func:`make_encoding` builds: partial rotary, p-RoPE, per-layer encodings."""


def make_encoding(name: str, *, head_dim: int, max_len: int, **kwargs) -> PositionalEncoding:
    """Build an encoding plug-in by name (one of :data:`ENCODINGS` or :data:`VARIANTS`).

    Parameters
    ----------
    name : str
        One of ``"nope", "learned", "sinusoidal", "rope", "alibi", "t5", "xpos"``, or
        ``"partial"`` (needs ``rotary_dim``), ``"p-rope"`` (needs ``proportion``),
        ``"hybrid"`` (needs ``layers``, a sequence of names or encodings, one per layer;
        the names are built by this function with the other keyword arguments).
    head_dim : int
        Width of one attention head (RoPE and its variants, xPos).
    max_len : int
        Largest sequence length the model will see (learned table size).
    **kwargs
        Passed to the encoding's constructor (e.g. ``base=`` for RoPE).

    Examples
    --------
    >>> make_encoding("rope", head_dim=16, max_len=64, base=100.0).describe()["base"]
    100.0
    >>> enc = make_encoding("hybrid", head_dim=16, max_len=64, layers=("rope", "nope"))
    >>> [layer["name"] for layer in enc.describe()["layers"]]
    ['rope', 'nope']
    """
    check_choice(name, "name", ENCODINGS + VARIANTS)
    if name == "hybrid":
        if "layers" not in kwargs:
            raise ValueError("hybrid needs layers=, one encoding (or name) per layer")
        layers = kwargs.pop("layers")
        if isinstance(layers, str):
            raise TypeError("layers must be a sequence of names or encodings, not one string")
        return Hybrid(
            [
                make_encoding(e, head_dim=head_dim, max_len=max_len, **kwargs)
                if isinstance(e, str)
                else e
                for e in layers
            ]
        )
    if name == "partial":
        return PartialRoPE(head_dim, **kwargs)
    if name == "p-rope":
        return ProportionalRoPE(head_dim, **kwargs)
    if name == "nope":
        return NoPE()
    if name == "learned":
        return LearnedAbsolute(max_len, **kwargs)
    if name == "sinusoidal":
        return Sinusoidal(**kwargs)
    if name == "rope":
        return RoPE(head_dim, **kwargs)
    if name == "xpos":
        return XPos(head_dim, **kwargs)
    if name == "alibi":
        return ALiBi()
    return T5Bias(**kwargs)
