"""Trained toy models that show what each positional encoding does.

Not imported by ``import refimpl``: ``import refimpl.experiments`` explicitly. Everything is
NumPy and float64; the backward pass is written by hand and checked against finite
differences (:func:`refimpl.experiments.gradcheck.gradient_check`).

Modules
-------
encodings
    Positional encodings as plug-ins (NoPE, learned, sinusoidal, RoPE with registry scalings,
    ALiBi, T5 bias, xPos; partial rotary, p-RoPE, and per-layer hybrids).
model
    The attention-only decoder, its backward pass and Adam.
tasks
    Synthetic tasks with exact metrics.
train
    Training and evaluation loops.
gradcheck
    Finite-difference checks of the backward pass.
analysis
    What a trained model uses (attention by distance, position probes) and the exact
    long-term decay of a frequency set.
"""

from .encodings import ENCODINGS, VARIANTS, PositionalEncoding, make_encoding
from .gradcheck import gradient_check
from .model import Adam, ModelConfig, backward, cross_entropy, forward, init_params, loss_and_grads
from .tasks import TASKS, accuracy, make_batch
from .train import TrainConfig, evaluate, train

__all__ = [
    "ENCODINGS",
    "TASKS",
    "VARIANTS",
    "Adam",
    "ModelConfig",
    "PositionalEncoding",
    "TrainConfig",
    "accuracy",
    "backward",
    "cross_entropy",
    "evaluate",
    "forward",
    "gradient_check",
    "init_params",
    "loss_and_grads",
    "make_batch",
    "make_encoding",
    "train",
]
