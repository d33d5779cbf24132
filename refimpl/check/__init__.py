"""Black-box checker for rotary position embeddings: hand it ``fn(x, positions)`` (or the input
and output rows of an implementation) and it says what the implementation does (pairing,
output order, direction, frequencies, base, index origin, scaling family, attention scaling,
position offset, partial width, precision) and what is wrong with it.

The checker reads the linear map :math:`R_m` at each probed position: from a callable by
feeding identity rows (``x = I``, ``positions = [m] * d`` gives ``out = R_m^T``), from arrays by
least squares over the rows at each position. Then it runs the same stages on the matrices:

1. ``_probe_linearity`` -- linearity and use of the positions (callables only);
2. ``_read_matrices`` / ``_matrices_from_arrays`` -- per-position matrices;
3. ``_read_structure`` -- pairs, pass-through features and any output permutation;
4. ``_read_angles`` -- angles, magnitudes, direction, frequencies, offset;
5. ``_fit_profile`` -- continuous frequency fit (base, index origin, linear factor,
   per-pair deviations) and scaling families through :data:`refimpl.scaling.ROPE_SCALINGS`;
6. ``_precision`` -- the precision class;
7. ``_judge_structure``, ``_judge_frequencies``, ``_judge_attention``, ``_judge_precision``
   -- findings against the expectations, each a :class:`Finding`;

and ``_analyse`` composes stages 3-7 into the :class:`RopeReport`.

See the book's part "Check your implementation".
"""

from ._base import (
    DEFAULT_TOLERANCE,
    MAX_CHECK_DIM,
    PRECISIONS,
    TABLE_PRECISION_CLASSES,
    Finding,
)
from .api import check_rope, check_rope_arrays
from .attention import AttentionScaleReport, check_attention_scale
from .dca import DualChunkReport, check_dual_chunk_attention
from .drivers import (
    OPERATOR_TABLES,
    POLICIES,
    CallReport,
    check_rope_operator,
    from_start_offset,
)
from .report import PrecisionStage, RopeReport

__all__ = [
    "DEFAULT_TOLERANCE",
    "MAX_CHECK_DIM",
    "OPERATOR_TABLES",
    "POLICIES",
    "PRECISIONS",
    "TABLE_PRECISION_CLASSES",
    "AttentionScaleReport",
    "CallReport",
    "DualChunkReport",
    "Finding",
    "PrecisionStage",
    "RopeReport",
    "check_attention_scale",
    "check_dual_chunk_attention",
    "check_rope",
    "check_rope_arrays",
    "check_rope_operator",
    "from_start_offset",
]
