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

from . import exercises  # graders for the book's exercises
from .absolute import (
    integer_encoding,
    normalized_encoding,
    sinusoidal,
    sinusoidal_shift_matrix,
)
from .attention import (
    attention,
    attention_entropy,
    attention_scores,
    causal_mask,
    softmax,
)
from .bias import (
    alibi_bias,
    alibi_shifted_bias,
    alibi_slopes,
    fire_bias,
    kerple_bias,
    sandwich_bias,
    t5_bias,
    t5_relative_position_bucket,
)
from .check import (
    DualChunkReport,
    Finding,
    PrecisionStage,
    RopeReport,
    check_attention_scale,
    check_dual_chunk_attention,
    check_rope,
    check_rope_arrays,
    check_rope_operator,
)
from .config import (
    LayerRope,
    RopeSchedule,
    RopeSpec,
    rope_from_config,
    rope_schedule,
)
from .conformance import verify_outputs, write_suite
from .contextual import (
    cope_logits,
    cope_positions,
)
from .engines import (
    EngineReport,
    engine_differences,
    frequency_switch_error,
    ggml_cos_sin,
    mlx_cos_sin,
    vllm_cos_sin,
)
from .families import QueryScaling
from .fourier import (
    apply_fope,
    fope_coefficients,
    fope_cos_sin,
    fope_kept,
    fope_series,
)
from .gguf import (
    compare_gguf,
    gguf_rope_metadata,
    read_gguf_rope,
    rope_from_gguf,
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
from .multiaxis import (
    apply_rope_2d,
    axial_2d_angles,
    mrope_cos_sin,
)
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
    transformers_float32_forward,
    transformers_inv_freq_float32,
    ulp_error,
)
from .pipelines import PRECISIONS, Precision
from .polar import apply_pope, pope_inv_freq
from .positions import context_parallel_indices, packing_from_position_ids, varlen_positions
from .remap import (
    DualChunkAttention,
    DualChunkScores,
    dual_chunk_attention_scores,
    dual_chunk_query_tables,
    dual_chunk_relative_positions,
    relative_rope_scores,
    rerope_relative_positions,
    rerotate_keys,
    rerotate_keys_mrope,
    self_extend_cache_positions,
    self_extend_relative_positions,
)
from .rotary import (
    ExactFrequencies,
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
    reference_rotation,
    rotation_matrix,
)
from .scaling import (
    ROPE_SCALINGS,
    ScaledFrequencies,
    ScalingMethod,
    UnknownRopeTypeError,
    scale_frequencies,
    transformers_float32_frequencies,
)
from .streaming import (
    iter_cos_sin,
    write_cos_sin_npz,
)
from .xpos import (
    apply_xpos,
    xpos_scale,
    xpos_zeta,
)

__version__ = "0.1.0"

__all__ = [
    "PIPELINES",
    "PRECISIONS",
    "ROPE_SCALINGS",
    "DualChunkAttention",
    "DualChunkReport",
    "DualChunkScores",
    "EngineReport",
    "ExactFrequencies",
    "Finding",
    "FrequencyFit",
    "LayerRope",
    "Precision",
    "PrecisionStage",
    "QueryScaling",
    "RopeReport",
    "RopeSchedule",
    "RopeSpec",
    "ScaledFrequencies",
    "ScalingMethod",
    "UnknownRopeTypeError",
    "__version__",
    "alibi_bias",
    "alibi_shifted_bias",
    "alibi_slopes",
    "angles",
    "apply_fope",
    "apply_pope",
    "apply_rope",
    "apply_rope_2d",
    "apply_rope_complex",
    "apply_rope_per_head",
    "apply_rope_tables",
    "apply_xpos",
    "attention",
    "attention_entropy",
    "attention_scores",
    "axial_2d_angles",
    "causal_mask",
    "check_attention_scale",
    "check_dual_chunk_attention",
    "check_rope",
    "check_rope_arrays",
    "check_rope_operator",
    "compare_gguf",
    "context_parallel_indices",
    "cope_logits",
    "cope_positions",
    "cos_sin",
    "cos_sin_bf16_angles",
    "cos_sin_bf16_inv_freq",
    "cos_sin_float64_naive",
    "cos_sin_recurrence",
    "cos_sin_transformers_float32",
    "dual_chunk_attention_scores",
    "dual_chunk_query_tables",
    "dual_chunk_relative_positions",
    "engine_differences",
    "error_bound",
    "exercises",
    "fire_bias",
    "fit_inv_freq",
    "fope_coefficients",
    "fope_cos_sin",
    "fope_kept",
    "fope_series",
    "frequency_switch_error",
    "ggml_cos_sin",
    "gguf_rope_metadata",
    "half_to_interleaved_weights",
    "integer_encoding",
    "interleaved_to_half_weights",
    "inv_freq",
    "iter_cos_sin",
    "kerple_bias",
    "max_stable_lr",
    "mixed_encoding",
    "mlx_cos_sin",
    "mrope_cos_sin",
    "normalized_encoding",
    "oracle_cos_sin",
    "packing_from_position_ids",
    "pair_coefficients",
    "pair_indices",
    "pairing_permutation",
    "pipeline_cos_sin",
    "pope_inv_freq",
    "read_gguf_rope",
    "reference_rotation",
    "relative_defect",
    "relative_drift",
    "relative_profile",
    "relative_profile_grad",
    "relative_rope_scores",
    "rerope_relative_positions",
    "rerotate_keys",
    "rerotate_keys_mrope",
    "rope_from_config",
    "rope_from_gguf",
    "rope_schedule",
    "rope_scores",
    "rope_scores_grad",
    "rotation_matrix",
    "round_to",
    "sandwich_bias",
    "scale_frequencies",
    "self_extend_cache_positions",
    "self_extend_relative_positions",
    "sinusoidal",
    "sinusoidal_shift_matrix",
    "softmax",
    "t5_bias",
    "t5_relative_position_bucket",
    "transformers_float32_forward",
    "transformers_float32_frequencies",
    "transformers_inv_freq_float32",
    "ulp_error",
    "varlen_positions",
    "verify_outputs",
    "vllm_cos_sin",
    "write_cos_sin_npz",
    "write_suite",
    "xpos_scale",
    "xpos_zeta",
]


def __getattr__(name):
    """Names removed this minor version keep working with a DeprecationWarning that names
    their replacement (refimpl._deprecated); any other missing name is an AttributeError."""
    from ._deprecated import deprecated_attribute

    return deprecated_attribute(__name__, name)
