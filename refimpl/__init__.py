"""refimpl: golden reference implementations of positional encodings for transformers.

Conventions used everywhere (see the book's notation page):

* Frequencies ``inv_freq[i] = base ** (-2 i / d)`` for ``i = 0 .. d/2 - 1`` (0-based,
  ``theta_0 = 1`` rad/token). The base is called ``base``, never ``theta``.
* Rotation of a pair ``(x1, x2)`` at position ``m``:
  ``(x1 cos m theta - x2 sin m theta, x1 sin m theta + x2 cos m theta)``, i.e. multiplication
  by ``exp(+i m theta)``; attention scores then depend on ``n - m`` (key minus query).
* ``pairing="half"`` (default) pairs feature ``i`` with ``i + d/2`` (transformers, GPT-NeoX);
  ``pairing="interleaved"`` pairs ``2i`` with ``2i + 1`` (RoFormer, Meta Llama, GPT-J).
* Relative position = key position - query position.
* Shapes: ``x`` is ``(..., seq, dim)``, ``positions`` is ``(seq,)``, biases are
  ``(n_heads, q_len, k_len)``. Floating arrays keep their dtype (computed in float64 and
  rounded once); integers and lists become float64.
* Bad input raises ``ValueError`` or ``TypeError`` naming the argument.

Only NumPy is imported by ``import refimpl``.
"""

from .absolute import integer_encoding, normalized_encoding, sinusoidal, sinusoidal_shift_matrix
from .attention import attention, attention_entropy, attention_scores, causal_mask, softmax

# --- numerics (exact tables, precision emulation, error model) ---
from .numerics import (
    PIPELINES,
    cos_sin_bf16_angles,
    cos_sin_bf16_inv_freq,
    cos_sin_float64_naive,
    cos_sin_recurrence,
    cos_sin_transformers_float32,
    error_bound,
    oracle_cos_sin,
    pipeline_cos_sin,
    relative_drift,
    round_to,
    transformers_inv_freq_float32,
    ulp_error,
)

# --- end numerics ---
from .rotary import (
    angles,
    apply_rope,
    apply_rope_complex,
    cos_sin,
    half_to_interleaved_weights,
    interleaved_to_half_weights,
    inv_freq,
    pair_indices,
    pairing_permutation,
    rotation_matrix,
)

__version__ = "0.1.0"

__all__ = [
    "__version__",
    "angles",
    "apply_rope",
    "apply_rope_complex",
    "attention",
    "attention_entropy",
    "attention_scores",
    "causal_mask",
    "cos_sin",
    "half_to_interleaved_weights",
    "integer_encoding",
    "interleaved_to_half_weights",
    "inv_freq",
    "normalized_encoding",
    "pair_indices",
    "pairing_permutation",
    "rotation_matrix",
    "sinusoidal",
    "sinusoidal_shift_matrix",
    "softmax",
]

# numerics
__all__ += [
    "PIPELINES",
    "cos_sin_bf16_angles",
    "cos_sin_bf16_inv_freq",
    "cos_sin_float64_naive",
    "cos_sin_recurrence",
    "cos_sin_transformers_float32",
    "error_bound",
    "oracle_cos_sin",
    "pipeline_cos_sin",
    "relative_drift",
    "round_to",
    "transformers_inv_freq_float32",
    "ulp_error",
]
