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
from .check import RopeReport, check_rope  # checker (part "Check your implementation")
from .config import RopeSpec, rope_from_config  # scaling part

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
    apply_rope_tables,
    cos_sin,
    half_to_interleaved_weights,
    interleaved_to_half_weights,
    inv_freq,
    pair_indices,
    pairing_permutation,
    rotation_matrix,
)
from .scaling import (  # scaling part
    ROPE_SCALINGS,
    ScaledFrequencies,
    UnknownRopeTypeError,
    scale_frequencies,
    transformers_float32_frequencies,
)

# --- variants: relative biases, xPos, multi-axis and learnable RoPE ---
# isort: split
from .bias import (
    alibi_bias,
    alibi_shifted_bias,
    alibi_slopes,
    t5_bias,
    t5_relative_position_bucket,
)
from .learned import (
    FrequencyFit,
    apply_rope_per_head,
    fit_inv_freq,
    max_stable_lr,
    mixed_encoding,
    pair_coefficients,
    relative_defect,
    relative_profile,
    relative_profile_grad,
    rope_scores,
    rope_scores_grad,
)
from .multiaxis import apply_cos_sin, apply_rope_2d, axial_2d_angles, mrope_cos_sin
from .xpos import apply_xpos, xpos_scale, xpos_zeta

# --- end variants ---

__version__ = "0.1.0"

__all__ = [
    "ROPE_SCALINGS",
    "RopeReport",
    "RopeSpec",
    "ScaledFrequencies",
    "UnknownRopeTypeError",
    "__version__",
    "angles",
    "apply_rope",
    "apply_rope_complex",
    "apply_rope_tables",
    "attention",
    "attention_entropy",
    "attention_scores",
    "causal_mask",
    "check_rope",
    "cos_sin",
    "half_to_interleaved_weights",
    "integer_encoding",
    "interleaved_to_half_weights",
    "inv_freq",
    "normalized_encoding",
    "pair_indices",
    "pairing_permutation",
    "rope_from_config",
    "rotation_matrix",
    "scale_frequencies",
    "sinusoidal",
    "sinusoidal_shift_matrix",
    "softmax",
    "transformers_float32_frequencies",
]

# --- variants ---
__all__ += [
    "FrequencyFit",
    "alibi_bias",
    "alibi_shifted_bias",
    "alibi_slopes",
    "apply_cos_sin",
    "apply_rope_2d",
    "apply_rope_per_head",
    "apply_xpos",
    "axial_2d_angles",
    "fit_inv_freq",
    "max_stable_lr",
    "mixed_encoding",
    "mrope_cos_sin",
    "pair_coefficients",
    "relative_defect",
    "relative_profile",
    "relative_profile_grad",
    "rope_scores",
    "rope_scores_grad",
    "t5_bias",
    "t5_relative_position_bucket",
    "xpos_scale",
    "xpos_zeta",
]
# --- end variants ---
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
