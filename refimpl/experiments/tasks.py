"""Synthetic next-token tasks that need position, each with a generator and an exact metric.

Every generator returns ``(tokens, targets)``, both ``(batch, seq)`` int arrays; ``targets``
is ``-1`` where a position is not scored. The metric is exact-match accuracy of the argmax
prediction over scored positions.

* ``"fetch"`` (purely relative): the target at position ``t >= offset`` is the token at
  ``t - offset``.
* ``"induction"`` (content and relative position): each row repeats a block of ``p`` distinct
  tokens, with the period ``p`` drawn per row from ``[seq/4, seq/2]``; once the block has been
  seen (``t >= p``) the target is the token that followed the current one last time,
  ``x[t + 1] = x[t + 1 - p]``. Because ``p`` varies, no fixed offset solves it: the model must
  find the earlier occurrence of the current token by content.
* ``"index"`` (absolute position): the target at every position ``t > index`` is the token at
  the absolute index ``index``.
"""

from __future__ import annotations

import numpy as np

from .._checks import check_choice, check_count, check_positive_int

__all__ = ["TASKS", "accuracy", "make_batch"]

TASKS = ("fetch", "induction", "index")


def _fetch(rng, batch, seq_len, vocab, offset):
    tokens = rng.integers(0, vocab, size=(batch, seq_len))
    targets = np.full((batch, seq_len), -1, dtype=np.int64)
    targets[:, offset:] = tokens[:, : seq_len - offset]  # [eq:exp-task-fetch]
    return tokens, targets


def _induction(rng, batch, seq_len, vocab):
    lo, hi = max(2, seq_len // 4), seq_len // 2
    if hi > vocab:
        raise ValueError(
            f"induction needs seq_len // 2 <= vocab, got seq_len={seq_len}, vocab={vocab}"
        )
    period = rng.integers(lo, hi + 1, size=batch)  # a different repeat distance in every row
    perm = np.argsort(rng.random((batch, vocab)), axis=1)  # distinct tokens per row
    t = np.arange(seq_len)
    tokens = np.take_along_axis(perm, t[None, :] % period[:, None], axis=1)
    targets = np.full((batch, seq_len), -1, dtype=np.int64)
    scored = t[None, :-1] >= period[:, None]  # the current token was seen one period earlier
    targets[:, :-1] = np.where(scored, tokens[:, 1:], -1)  # [eq:exp-task-induction]
    return tokens, targets


def _index(rng, batch, seq_len, vocab, index):
    tokens = rng.integers(0, vocab, size=(batch, seq_len))
    targets = np.full((batch, seq_len), -1, dtype=np.int64)
    targets[:, index + 1 :] = tokens[:, index : index + 1]  # [eq:exp-task-index]
    return tokens, targets


def make_batch(
    task: str,
    rng: np.random.Generator,
    *,
    batch: int,
    seq_len: int,
    vocab: int,
    offset: int = 3,
    index: int = 2,
) -> tuple[np.ndarray, np.ndarray]:
    """One batch of a task.

    Parameters
    ----------
    task : {"fetch", "induction", "index"}
    rng : numpy.random.Generator
    batch, seq_len, vocab : int
    offset : int, default 3
        How many places back ``"fetch"`` looks.
    index : int, default 2
        The absolute index ``"index"`` copies.

    Returns
    -------
    tokens, targets : numpy.ndarray of int64, each shape (batch, seq_len)

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> tok, tgt = make_batch("fetch", rng, batch=1, seq_len=6, vocab=9, offset=2)
    >>> bool((tgt[0, 2:] == tok[0, :4]).all()), tgt[0, :2].tolist()
    (True, [-1, -1])
    """
    check_choice(task, "task", TASKS)
    batch = check_positive_int(batch, "batch")
    seq_len = check_positive_int(seq_len, "seq_len")
    vocab = check_positive_int(vocab, "vocab")
    if task == "fetch":
        offset = check_positive_int(offset, "offset")
        if offset >= seq_len:
            raise ValueError(f"offset must be < seq_len, got offset={offset}, seq_len={seq_len}")
        return _fetch(rng, batch, seq_len, vocab, offset)
    if task == "induction":
        if seq_len < 4:
            raise ValueError(f"induction needs seq_len >= 4, got {seq_len}")
        return _induction(rng, batch, seq_len, vocab)
    index = check_count(index, "index")
    if index + 1 >= seq_len:
        raise ValueError(f"index must be < seq_len - 1, got index={index}, seq_len={seq_len}")
    return _index(rng, batch, seq_len, vocab, index)


def accuracy(logits: np.ndarray, targets: np.ndarray, *, start: int = 0) -> float:
    """Exact-match accuracy of ``argmax(logits)`` over scored positions ``t >= start``.

    Parameters
    ----------
    logits : numpy.ndarray, shape (B, T, V)
    targets : numpy.ndarray of int, shape (B, T); ``-1`` = not scored.
    start : int, default 0
        Score only positions from ``start`` on (e.g. the positions beyond the training length).

    Returns
    -------
    float
        Fraction in [0, 1]; NaN-free: raises ``ValueError`` if nothing is scored.

    Examples
    --------
    >>> accuracy(np.eye(3)[None], np.array([[0, 2, -1]]))
    0.5
    """
    valid = targets >= 0
    valid[:, :start] = False
    n = int(valid.sum())
    if n == 0:
        raise ValueError("no scored positions (targets >= 0 at t >= start)")
    hit = (logits.argmax(axis=-1) == targets) & valid  # [eq:exp-accuracy]
    return float(hit.sum()) / n
