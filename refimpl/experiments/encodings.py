"""Positional encodings as plug-ins of the toy transformer (:mod:`refimpl.experiments.model`).

An encoding acts on the model through at most three hooks, each with its backward pass:

* ``embedding(params, seq_len, d_model)`` -> ``(seq, d_model)`` added to the token embeddings
  (learned absolute, sinusoidal);
* ``rotate(q, k, positions)`` -> ``(q', k')`` applied to queries and keys of every head
  (RoPE, xPos), with ``rotate_backward(dq', dk', positions) -> (dq, dk)``;
* ``bias(params, seq_len)`` -> ``(n_heads, seq, seq)`` added to the attention logits
  (ALiBi, T5), with ``bias_grad(params, dbias, seq_len)``.

Trainable parameters of an encoding live in the model's parameter dictionary under keys that
start with ``"pe."``, so that one Adam optimiser updates everything. RoPE's frequencies are
fixed: a context-extension method (a registry scaling of :data:`refimpl.scaling.ROPE_SCALINGS`)
only replaces ``inv_freq`` and the attention scaling at evaluation, via
:meth:`RoPE.with_scaling`.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .._checks import check_base, check_choice, check_dim, check_positive, check_positive_int
from ..absolute import sinusoidal
from ..bias import alibi_bias, alibi_slopes, t5_bias, t5_relative_position_bucket
from ..rotary import apply_rope, inv_freq, pair_indices
from ..scaling import ROPE_SCALINGS
from ..xpos import apply_xpos, xpos_scale

__all__ = [
    "ENCODINGS",
    "ALiBi",
    "LearnedAbsolute",
    "NoPE",
    "PositionalEncoding",
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
    """

    name = "rope"

    def __init__(
        self, head_dim: int, base: float = 10000.0, frequencies: Frequencies | None = None
    ):
        self.head_dim = check_dim(head_dim, "head_dim")
        self.base = check_base(base)
        self.frequencies = frequencies
        self.scaling_name = "default"
        self.scaling_kwargs: dict = {}

    def _freqs(self, seq_len: int):
        if self.frequencies is None:
            return inv_freq(self.head_dim, self.base), 1.0
        f, s = self.frequencies(seq_len)
        return np.asarray(f, dtype=np.float64), float(s)

    def rotate(self, q, k, positions):
        f, s = self._freqs(q.shape[-2])
        rq = apply_rope(q, positions, inv_freq=f, attention_scaling=s)  # [eq:exp-rope-forward]
        rk = apply_rope(k, positions, inv_freq=f, attention_scaling=s)
        return rq, rk

    def rotate_backward(self, dq, dk, positions):
        f, s = self._freqs(dq.shape[-2])
        neg = -np.asarray(positions, dtype=np.float64)
        gq = apply_rope(dq, neg, inv_freq=f, attention_scaling=s)  # [eq:exp-rope-backward]
        gk = apply_rope(dk, neg, inv_freq=f, attention_scaling=s)
        return gq, gk

    def with_scaling(self, method: str, **kwargs) -> RoPE:
        """The same encoding with a registry scaling applied (for evaluation).

        ``method`` is a key of :data:`refimpl.scaling.ROPE_SCALINGS`; ``kwargs`` are passed to
        it with ``dim`` and ``base`` filled in. For ``"dynamic"`` the current sequence length
        is passed as ``seq_len`` at every call. ``attention_scaling`` may be overridden with
        ``attention_scaling=1.0`` to switch a method's temperature off.
        """
        check_choice(method, "method", tuple(ROPE_SCALINGS))
        fn = ROPE_SCALINGS[method]
        override = kwargs.pop("attention_scaling", None)
        dim, base = self.head_dim, self.base
        cache: dict = {}

        def frequencies(seq_len: int):
            key = seq_len if method == "dynamic" else None
            if key not in cache:
                extra = {"seq_len": seq_len} if method == "dynamic" else {}
                sf = fn(dim=dim, base=base, **kwargs, **extra)
                s = sf.attention_scaling if override is None else override
                cache[key] = (np.asarray(sf.inv_freq, dtype=np.float64), float(s))
            return cache[key]

        out = RoPE(self.head_dim, self.base, frequencies)
        out.scaling_name = method
        out.scaling_kwargs = dict(
            kwargs, **({} if override is None else {"attention_scaling": override})
        )
        return out

    def with_frequencies(self, inv_freq_new, attention_scaling: float = 1.0) -> RoPE:
        """The same encoding with explicit frequencies (for evaluation)."""
        f = np.asarray(inv_freq_new, dtype=np.float64)
        if f.shape != (self.head_dim // 2,):
            raise ValueError(f"inv_freq must have shape ({self.head_dim // 2},), got {f.shape}")
        out = RoPE(self.head_dim, self.base, lambda seq_len: (f, attention_scaling))
        out.scaling_name = "explicit"
        return out

    def describe(self):
        return {
            "name": self.name,
            "base": self.base,
            "scaling": self.scaling_name,
            "scaling_kwargs": {k: v for k, v in self.scaling_kwargs.items()},
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


ENCODINGS = ("nope", "learned", "sinusoidal", "rope", "alibi", "t5", "xpos")


def make_encoding(name: str, *, head_dim: int, max_len: int, **kwargs) -> PositionalEncoding:
    """Build an encoding plug-in by name (one of :data:`ENCODINGS`).

    Parameters
    ----------
    name : str
        One of ``"nope", "learned", "sinusoidal", "rope", "alibi", "t5", "xpos"``.
    head_dim : int
        Width of one attention head (RoPE, xPos).
    max_len : int
        Largest sequence length the model will see (learned table size).
    **kwargs
        Passed to the encoding's constructor (e.g. ``base=`` for RoPE).

    Examples
    --------
    >>> make_encoding("rope", head_dim=16, max_len=64, base=100.0).describe()["base"]
    100.0
    """
    check_choice(name, "name", ENCODINGS)
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
