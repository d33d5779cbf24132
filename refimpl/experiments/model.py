"""A tiny decoder-only, attention-only transformer in NumPy with a hand-written backward pass.

Architecture (float64 throughout)::

    x_0 = E[tokens] + P          (P from the encoding's embedding hook, if any)
    x_l = x_{l-1} + Attn_l(x_{l-1})          l = 1 .. n_layers  (causal, n_heads heads)
    logits = x_L U

    Attn(x): q, k, v = x Wq, x Wk, x Wv       split into heads (B, H, T, dh)
             q', k' = enc_l.rotate(q, k)      (RoPE, xPos); enc_l = encoding.layer(l)
             s = c q' k'^T + bias_l           c = 1/sqrt(dh); bias from enc_l (ALiBi, T5)
             a = softmax(s + causal mask);  o = a v;  out = o Wo

There are no MLPs and no normalisation layers: the tasks of :mod:`refimpl.experiments.tasks`
are solved by attention alone (a copy at an offset, an induction circuit), and the gradient of
every piece stays short enough to read. The backward pass is checked against central finite
differences in the tests and in the book. ``encoding.layer(l)`` is the encoding itself except
for a :class:`~refimpl.experiments.encodings.Hybrid`, which gives each layer its own.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from .._checks import check_positive_int
from .encodings import PositionalEncoding

__all__ = [
    "Adam",
    "ModelConfig",
    "backward",
    "cross_entropy",
    "forward",
    "init_params",
    "loss_and_grads",
]


@dataclass(frozen=True)
class ModelConfig:
    """Sizes of the toy model.

    Attributes
    ----------
    vocab : int
        Number of token ids.
    d_model : int
        Residual width; equals ``n_heads * head_dim``.
    n_heads : int
        Heads per layer.
    n_layers : int
        Attention layers.
    """

    vocab: int = 64
    d_model: int = 32
    n_heads: int = 2
    n_layers: int = 2

    def __post_init__(self):
        for name in ("vocab", "d_model", "n_heads", "n_layers"):
            check_positive_int(getattr(self, name), name)
        if self.d_model % self.n_heads:
            raise ValueError(
                f"d_model must be a multiple of n_heads, got {self.d_model} and {self.n_heads}"
            )

    @property
    def head_dim(self) -> int:
        """Width of one head, ``d_model // n_heads``."""
        return self.d_model // self.n_heads

    def as_dict(self) -> dict:
        """JSON-ready copy."""
        return asdict(self)


def init_params(cfg: ModelConfig, encoding: PositionalEncoding, rng: np.random.Generator) -> dict:
    """Random initial parameters (dict of float64 arrays), the encoding's included.

    Weights are normal with standard deviation ``1/sqrt(fan_in)``; the embedding has unit
    variance per feature.

    Examples
    --------
    >>> from refimpl.experiments.encodings import NoPE
    >>> p = init_params(ModelConfig(vocab=8, d_model=16, n_heads=1, n_layers=1), NoPE(),
    ...                 np.random.default_rng(0))
    >>> sorted(p)
    ['E', 'L0.Wk', 'L0.Wo', 'L0.Wq', 'L0.Wv', 'U']
    """
    d = cfg.d_model
    p = {"E": rng.normal(0.0, 1.0, (cfg.vocab, d))}
    for layer in range(cfg.n_layers):
        for w in ("Wq", "Wk", "Wv", "Wo"):
            p[f"L{layer}.{w}"] = rng.normal(0.0, d**-0.5, (d, d))
    p["U"] = rng.normal(0.0, d**-0.5, (d, cfg.vocab))
    p.update(encoding.init_params(rng, d_model=d, n_heads=cfg.n_heads))
    return p


def _split(x, h):
    b, t, d = x.shape
    return x.reshape(b, t, h, d // h).transpose(0, 2, 1, 3)  # (B, H, T, dh)


def _merge(x):
    b, h, t, dh = x.shape
    return x.transpose(0, 2, 1, 3).reshape(b, t, h * dh)  # (B, T, D)


def forward(params: dict, tokens: np.ndarray, cfg: ModelConfig, encoding: PositionalEncoding):
    """Logits and the cache the backward pass needs.

    Parameters
    ----------
    params : dict
        From :func:`init_params`.
    tokens : numpy.ndarray of int, shape (B, T)
    cfg : ModelConfig
    encoding : PositionalEncoding

    Returns
    -------
    logits : numpy.ndarray, shape (B, T, vocab)
    cache : dict
        Activations of every layer; ``cache["attn"][l]`` is the attention of layer ``l``,
        shape (B, H, T, T).
    """
    tokens = np.asarray(tokens)
    if tokens.ndim != 2:
        raise ValueError(f"tokens must have shape (batch, seq), got {tokens.shape}")
    if tokens.dtype.kind not in "iu" or tokens.min() < 0 or tokens.max() >= cfg.vocab:
        raise ValueError(f"tokens must be integers in [0, {cfg.vocab})")
    _, t = tokens.shape
    h, dh = cfg.n_heads, cfg.head_dim
    positions = np.arange(t, dtype=np.float64)
    x = params["E"][tokens]  # (B, T, D)
    pe = encoding.embedding(params, t, cfg.d_model)
    if pe is not None:
        x = x + pe  # [eq:exp-embed]
    if encoding.n_layers is not None and encoding.n_layers != cfg.n_layers:
        raise ValueError(
            f"encoding has {encoding.n_layers} layers but the model has n_layers={cfg.n_layers}"
        )
    biases: dict = {}  # one bias per distinct layer encoding, (H, T, T) or None
    masked = np.triu(np.ones((t, t), dtype=bool), k=1)  # key after query
    c = dh**-0.5
    cache = {"tokens": tokens, "positions": positions, "x": [x], "layers": [], "attn": []}
    for layer in range(cfg.n_layers):
        enc = encoding.layer(layer)
        if id(enc) not in biases:
            biases[id(enc)] = enc.bias(params, t, h)
        bias = biases[id(enc)]
        wq, wk, wv, wo = (params[f"L{layer}.{w}"] for w in ("Wq", "Wk", "Wv", "Wo"))
        q, k, v = _split(x @ wq, h), _split(x @ wk, h), _split(x @ wv, h)
        rq, rk = enc.rotate(q, k, positions)  # [eq:exp-hybrid]
        s = c * (rq @ rk.swapaxes(-1, -2))  # [eq:exp-scores]  (B, H, T, T)
        if bias is not None:
            s = s + bias
        s = np.where(masked, -np.inf, s)
        s = s - s.max(axis=-1, keepdims=True)
        a = np.exp(s)
        a /= a.sum(axis=-1, keepdims=True)  # [eq:exp-softmax]
        o = _merge(a @ v)  # (B, T, D)
        x = x + o @ wo  # [eq:exp-residual]
        cache["layers"].append((q, k, v, rq, rk, a, o))
        cache["attn"].append(a)
        cache["x"].append(x)
    logits = x @ params["U"]  # (B, T, V)
    return logits, cache


def cross_entropy(logits: np.ndarray, targets: np.ndarray) -> tuple[float, np.ndarray]:
    """Mean cross-entropy over positions whose target is >= 0, and its gradient.

    Parameters
    ----------
    logits : numpy.ndarray, shape (B, T, V)
    targets : numpy.ndarray of int, shape (B, T)
        ``-1`` marks a position that is not scored.

    Returns
    -------
    loss : float
    dlogits : numpy.ndarray, shape (B, T, V)

    Examples
    --------
    >>> loss, g = cross_entropy(np.zeros((1, 2, 4)), np.array([[1, -1]]))
    >>> round(loss, 6) == round(float(np.log(4)), 6), float(g[0, 1].sum())
    (True, 0.0)
    """
    valid = targets >= 0
    n = int(valid.sum())
    if n == 0:
        raise ValueError("targets must contain at least one scored position (>= 0)")
    z = logits - logits.max(axis=-1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=-1, keepdims=True))
    tgt = np.where(valid, targets, 0)
    picked = np.take_along_axis(logp, tgt[..., None], axis=-1)[..., 0]
    loss = -float((picked * valid).sum()) / n  # [eq:exp-xent]
    g = np.exp(logp)
    np.put_along_axis(g, tgt[..., None], np.take_along_axis(g, tgt[..., None], -1) - 1.0, -1)
    g *= valid[..., None] / n
    return loss, g


def backward(params, cache, dlogits, cfg: ModelConfig, encoding: PositionalEncoding) -> dict:
    """Gradients of the loss with respect to every parameter, given ``dL/dlogits``.

    Returns
    -------
    dict
        Same keys and shapes as ``params``.
    """
    h, dh = cfg.n_heads, cfg.head_dim
    c = dh**-0.5
    grads = {name: np.zeros_like(value) for name, value in params.items()}
    x_last = cache["x"][-1]
    grads["U"] = np.einsum("btd,btv->dv", x_last, dlogits)
    dx = dlogits @ params["U"].T  # (B, T, D)
    dbias_total = None
    for layer in reversed(range(cfg.n_layers)):
        x_in = cache["x"][layer]
        _, _, v, rq, rk, a, o = cache["layers"][layer]
        wq, wk, wv, wo = (params[f"L{layer}.{w}"] for w in ("Wq", "Wk", "Wv", "Wo"))
        grads[f"L{layer}.Wo"] = np.einsum("btd,bte->de", o, dx)
        do = _split(dx @ wo.T, h)  # (B, H, T, dh)
        da = do @ v.swapaxes(-1, -2)  # (B, H, T, T)
        dv = a.swapaxes(-1, -2) @ do
        ds = a * (da - (da * a).sum(axis=-1, keepdims=True))  # [eq:exp-softmax-backward]
        dsum = ds.sum(axis=0)  # (H, T, T): the bias is shared by the batch
        dbias_total = dsum if dbias_total is None else dbias_total + dsum
        drq = c * (ds @ rk)
        drk = c * (ds.swapaxes(-1, -2) @ rq)
        dq, dk = encoding.layer(layer).rotate_backward(drq, drk, cache["positions"])
        dq, dk, dv = _merge(dq), _merge(dk), _merge(dv)
        grads[f"L{layer}.Wq"] = np.einsum("btd,bte->de", x_in, dq)
        grads[f"L{layer}.Wk"] = np.einsum("btd,bte->de", x_in, dk)
        grads[f"L{layer}.Wv"] = np.einsum("btd,bte->de", x_in, dv)
        dx = dx + dq @ wq.T + dk @ wk.T + dv @ wv.T  # residual path plus the three projections
    np.add.at(grads["E"], cache["tokens"], dx)
    for name, g in encoding.embedding_grad(params, dx).items():
        grads[name] += g
    if dbias_total is not None:
        for name, g in encoding.bias_grad(params, dbias_total).items():
            grads[name] += g
    return grads


def loss_and_grads(params, tokens, targets, cfg: ModelConfig, encoding: PositionalEncoding):
    """Cross-entropy loss and its gradient for one batch.

    Returns
    -------
    loss : float
    grads : dict
    """
    logits, cache = forward(params, tokens, cfg, encoding)
    loss, dlogits = cross_entropy(logits, targets)
    return loss, backward(params, cache, dlogits, cfg, encoding)


class Adam:
    r"""Adam with bias correction (Kingma and Ba, 2015) and global-norm gradient clipping.

    :math:`m \leftarrow \beta_1 m + (1-\beta_1) g`,
    :math:`v \leftarrow \beta_2 v + (1-\beta_2) g^2`,
    :math:`p \leftarrow p - \eta\, \hat m / (\sqrt{\hat v} + \epsilon)` with
    :math:`\hat m = m / (1-\beta_1^t)`, :math:`\hat v = v / (1-\beta_2^t)`.
    """

    def __init__(
        self,
        params: dict,
        lr: float = 3e-3,
        betas=(0.9, 0.98),
        eps: float = 1e-9,
        clip: float = 1.0,
    ):
        self.lr, self.betas, self.eps, self.clip = float(lr), tuple(betas), float(eps), float(clip)
        self.m = {k: np.zeros_like(v) for k, v in params.items()}
        self.v = {k: np.zeros_like(v) for k, v in params.items()}
        self.t = 0

    def step(self, params: dict, grads: dict, lr: float | None = None) -> None:
        """Update ``params`` in place."""
        lr = self.lr if lr is None else float(lr)
        norm = np.sqrt(sum(float((g * g).sum()) for g in grads.values()))
        scale = min(1.0, self.clip / (norm + 1e-12))
        b1, b2 = self.betas
        self.t += 1
        for k, g in grads.items():
            g = g * scale
            self.m[k] = b1 * self.m[k] + (1 - b1) * g  # [eq:exp-adam]
            self.v[k] = b2 * self.v[k] + (1 - b2) * g * g
            mhat = self.m[k] / (1 - b1**self.t)
            vhat = self.v[k] / (1 - b2**self.t)
            params[k] -= lr * mhat / (np.sqrt(vhat) + self.eps)
