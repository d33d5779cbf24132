"""Training and evaluation loops shared by the experiment scripts, the tests and the book."""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from .._checks import check_positive, check_positive_int
from .encodings import PositionalEncoding
from .model import Adam, ModelConfig, forward, init_params, loss_and_grads
from .tasks import make_batch

__all__ = ["TrainConfig", "evaluate", "train"]


@dataclass(frozen=True)
class TrainConfig:
    """Settings of one training run.

    Attributes
    ----------
    task : str
        A task of :data:`refimpl.experiments.tasks.TASKS`.
    seq_len : int
        Training length.
    steps : int
        Adam steps.
    batch : int
        Sequences per step.
    lr : float
        Peak learning rate (linear warm-up over the first 5 % of steps, cosine decay to 10 %).
    seed : int
        Seed of the parameter initialisation and of the training batches.
    """

    task: str = "fetch"
    seq_len: int = 16
    steps: int = 1500
    batch: int = 32
    lr: float = 3e-3
    seed: int = 0

    def __post_init__(self):
        for name in ("seq_len", "steps", "batch"):
            check_positive_int(getattr(self, name), name)
        check_positive(self.lr, "lr")

    def as_dict(self) -> dict:
        """JSON-ready copy."""
        return asdict(self)


def _lr_at(step: int, tc: TrainConfig) -> float:
    warm = max(1, tc.steps // 20)
    if step < warm:
        return tc.lr * (step + 1) / warm
    frac = (step - warm) / max(1, tc.steps - warm)
    return tc.lr * (0.1 + 0.9 * 0.5 * (1 + np.cos(np.pi * frac)))


def train(
    cfg: ModelConfig,
    encoding: PositionalEncoding,
    tc: TrainConfig,
    *,
    params: dict | None = None,
    log_every: int = 100,
) -> tuple[dict, list[tuple[int, float]]]:
    """Train (or continue training) the toy model on one task.

    Parameters
    ----------
    cfg : ModelConfig
    encoding : PositionalEncoding
    tc : TrainConfig
    params : dict, optional
        Start from these parameters (a fine-tune); a copy is trained.
    log_every : int
        Record the training loss every this many steps.

    Returns
    -------
    params : dict
    history : list of (step, loss)
        Loss averaged over each logging window.
    """
    rng = np.random.default_rng(tc.seed)
    if params is None:
        params = init_params(cfg, encoding, rng)
    else:
        params = {k: v.copy() for k, v in params.items()}
    opt = Adam(params, lr=tc.lr)
    history, window = [], []
    for step in range(tc.steps):
        tokens, targets = make_batch(
            tc.task, rng, batch=tc.batch, seq_len=tc.seq_len, vocab=cfg.vocab
        )
        loss, grads = loss_and_grads(params, tokens, targets, cfg, encoding)
        opt.step(params, grads, lr=_lr_at(step, tc))
        window.append(loss)
        if (step + 1) % log_every == 0 or step + 1 == tc.steps:
            history.append((step + 1, float(np.mean(window))))
            window = []
    return params, history


def evaluate(
    params: dict,
    cfg: ModelConfig,
    encoding: PositionalEncoding,
    task: str,
    lengths,
    *,
    train_len: int,
    n_seqs: int = 64,
    seed: int = 12345,
    chunk: int = 32,
) -> list[dict]:
    """Accuracy at each evaluation length, overall and beyond the training length.

    Returns
    -------
    list of dict
        One entry per length: ``{"length", "acc", "acc_beyond"}`` where ``acc_beyond`` scores
        only positions ``t >= train_len`` (None at lengths not above ``train_len``).
    """
    out = []
    for length in lengths:
        rng = np.random.default_rng([seed, int(length)])
        hits = hits_b = n = n_b = 0
        for start in range(0, n_seqs, chunk):
            b = min(chunk, n_seqs - start)
            tokens, targets = make_batch(task, rng, batch=b, seq_len=int(length), vocab=cfg.vocab)
            logits, _ = forward(params, tokens, cfg, encoding)
            valid = targets >= 0
            hit = (logits.argmax(-1) == targets) & valid
            hits += int(hit.sum())
            n += int(valid.sum())
            hits_b += int(hit[:, train_len:].sum())
            n_b += int(valid[:, train_len:].sum())
        out.append(
            {
                "length": int(length),
                "acc": hits / n,
                "acc_beyond": (hits_b / n_b) if n_b else None,
            }
        )
    return out
