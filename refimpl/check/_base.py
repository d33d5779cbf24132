"""Thresholds (each named once with the reason for its value), the precision classes and
the :class:`Finding` record shared by the checker's stages."""

from __future__ import annotations

import numpy as np

from .._checks import MAX_POSITION
from ..pipelines import PRECISIONS as TABLE_PRECISIONS

# --------------------------------------------------------------------------------------------
# thresholds, each named once with the reason for its value

#: Default verdict tolerance: the deviation allowed at position m for pair i is
#: ``tolerance * (1 + |m theta_i|)``. 2**-20 is sixteen times the float32 unit roundoff
#: (2**-24) per radian, so a float32 pipeline (float32 inv_freq, positions and angles, whose
#: angle error reaches a few units of 2**-24 per radian) passes, and float16/bfloat16 angles
#: or tables (errors of 2**-11 to 2**-8 per radian) fail.
DEFAULT_TOLERANCE = 2.0**-20

#: Widest head the checker probes. The probe holds one (d, d) matrix per position (about 20
#: positions: 20 d^2 float64 values, 160 MiB at d = 1024); released models' head dimensions
#: are at most 512, so 1024 leaves a factor of two and keeps the probe under a gigabyte.
MAX_CHECK_DIM = 1024

#: Largest position the checker probes: the package's limit (``_checks.MAX_POSITION``, 2**31),
#: far below int64 overflow, so positions reach ``fn`` exactly as given.
MAX_PROBE_POSITION = MAX_POSITION

# A relative deviation from linearity above this is a nonlinearity, not rounding: float16
# outputs deviate by ~1e-3, a tanh or a normalisation by O(1).
_LINEARITY_TOL = 2e-2
# Rows with the same input and position must agree to this relative accuracy (float64 noise
# is 1e-16; a function that rotates by the row index differs by O(1)).
_ROW_TOL = 1e-6
# A coupling below this fraction of a feature's total weight is numerical zero (float64 noise
# is ~1e-16; the weakest real coupling, sin(m theta) of the slowest pair at the largest probed
# position, is above 1e-5 for every base up to 1e7).
_COUPLING_TOL = 1e-9
# Least-squares matrices from arrays carry the output's rounding: couplings below this many
# units of the output dtype's epsilon are zero.
_ARRAY_NOISE_ULPS = 64.0
# ... but never more than this fraction: 64 bfloat16 epsilons (0.5) would call the coupling of
# every pair of a bfloat16-table rotation (its summed |sin| is 0.1-0.5 of a feature's weight at
# the probe positions) zero and read the rotation as the identity; 2**-6 is two bfloat16
# epsilons, above the rounding of an uncoupled entry (0, or one rounding of a least-squares
# zero) and below the coupling of any pair the probe positions turn by more than 1/64 rad.
_ARRAY_NOISE_MAX = 2.0**-6
# A pair block whose residual from s [[c, -s], [s, c]] exceeds this fraction of s is not a
# rotation (bfloat16 tables give ~4e-3; a mixed layout O(1)).
_ROTATION_TOL = 5e-2
# Blocks [[c, s], [s, -c]] within this fraction of s are reflections.
_REFLECTION_TOL = 1e-6
# Frequencies below this (rad/token) are zero: pass-through pairs of proportional RoPE.
_ZERO_FREQ = 1e-12
# Frequencies within this relative spread of each other are "all the same".
_SAME_FREQ = 1e-9
# Largest log-residual of a geometric profile: float16 inv_freq rounds by 2**-11 ~ 5e-4, so
# rounded frequencies stay geometric; a YaRN or Llama 3 band changes log theta by log s >= 0.7.
_GEOMETRIC_RESID = 5e-3
# The fitted index origin o is an integer (0 or 1) when within this of it.
_ORIGIN_TOL = 2e-2
# Consecutive frequency ratios equal to this relative accuracy form the unscaled head of a
# scaled profile (YaRN, Llama 3), from which the base is read.
_HEAD_RATIO_TOL = 1e-6
# A scaling family explains the measured frequencies when every pair agrees to this (a float32
# pipeline measures frequencies to ~1e-7; a different original_max_position moves a ramp pair
# by more than 1e-2).
_FAMILY_TOL = 1e-4
# A measured frequency more than this relative amount from the expected one is a frequency
# bug, reported in words; smaller deviations are judged by the precision classes.
_FREQ_MISMATCH = 1e-2
# A round candidate (base, factor, offset) is taken when it explains the data this well.
# (A fitted value is never rounded further: a factor of 4.18287 or pi stays exact.)
_SNAP_REL = 1e-9
_OFFSET_SNAP = 1e-3
# A family's factor read from the slowest pair is a round value when within this of it (a
# float32 pipeline measures that frequency to ~1e-7; 4.183 is 3e-5 from 4.18287).
_SNAP_TAIL = 1e-6
# Per-pair divisors may dip below 1 or decrease by this relative amount (float32 rounding of
# the frequencies is 6e-8; LongRoPE's factors step by at least 1e-2).
_PER_PAIR_SLACK = 1e-5
# Two attention factors are the same when within this relative amount (float32 tables
# carry 1e-7; YaRN's factor for s = 2 differs from 1 by 0.07).
_SCALE_CLOSE = 1e-3
# The magnitude of a pair changes with position (xPos) when its log changes by more than this
# between positions (bfloat16 tables change magnitudes by at most 2**-8 ~ 4e-3, randomly).
_MAG_TREND = 1e-2

#: Precision classes, from best to worst.
PRECISIONS = (
    "float64",
    "float32",
    "float16 inv_freq",
    "bfloat16 inv_freq",
    "float16 tables",
    "bfloat16 tables",
    "float16 angles",
    "bfloat16 angles",
    "worse than bfloat16",
    "undetermined",
)

#: The class the checker reports for each table pipeline of the precision registry
#: (:data:`refimpl.pipelines.PRECISIONS`). The registry names *whose arithmetic* built the
#: tables; the classes name *how large* the errors are, which is all a black box shows: the
#: float32 pipelines of transformers, ggml, MLX and vLLM differ only in the last bits of
#: their frequencies and cos/sin (a few float32 ulp), so all four are class ``"float32"``;
#: vLLM's bfloat16 and float16 caches are tables rounded to that format after the float32
#: angle, classes ``"bfloat16 tables"`` and ``"float16 tables"``.
TABLE_PRECISION_CLASSES = {
    name: {
        "float64": "float64",
        "float32": "float32",
        "bfloat16": "bfloat16 tables",
        "float16": "float16 tables",
    }[record.dtype]
    for name, record in TABLE_PRECISIONS.items()
}

# Positions probed by default: small ones (to read frequencies unambiguously), powers of two
# (to unwrap angles and refine frequencies), and large ones (to expose precision loss).
_DEFAULT_POSITIONS = (0, 1, 2, 3, 5, 7, 8, 16, 32, 64, 128, 256, 257, 512, 1000, 1023, 1024)
_DEFAULT_POSITIONS += (2048, 4095, 4096)
_LARGE_POSITIONS = (8192, 12345, 16384, 30001, 32768)
# Above this head width the large positions are dropped to keep the probe small.
_LARGE_POSITIONS_MAX_DIM = 256
# Positions of the linearity probe: small, so that a short cos/sin cache still answers.
_LINEARITY_POSITIONS = (0.0, 1.0, 2.0, 3.0)
# Probe calls are split so one call holds at most this many input entries (32 MiB float64).
_CALL_ELEMENTS = 2**22
# Round values tried for a fitted base, factor and original context.
_COMMON_BASES = (10000.0, 500000.0, 1000000.0, 100000.0, 50000.0, 5000000.0, 1000.0, 100.0)
_SCALING_FACTORS = (2.0, 4.0, 8.0, 16.0, 32.0, 40.0, 64.0, 128.0)
# Family parameters searched by the blind fit (the values released configs use).
_FAMILY_GRID = {
    "original_max_position": (4096, 8192, 2048, 16384, 32768, 65536, 131072, 1024),
    ("beta_fast", "beta_slow"): ((32.0, 1.0), (16.0, 1.0), (64.0, 1.0), (32.0, 2.0)),
    "truncate": (True, False),
    ("low_freq_factor", "high_freq_factor"): ((1.0, 4.0), (1.0, 1.0), (1.0, 2.0), (2.0, 4.0)),
}
# Families the closed-form fit covers itself (geometric profiles) or that need run-time input.
_NOT_FITTED = ("default", "linear", "ntk", "dynamic", "longrope", "proportional", "ntk_alpha")
_TWO_PI = 2.0 * np.pi


#: Severities of a :class:`Finding`: an error fails the verdict, a note informs.
ERROR, NOTE = "error", "note"


class Finding(str):
    """One verdict of the checker: its text (the ``str`` itself) and a ``severity``.

    ``severity`` is ``"error"`` (the verdict fails) or ``"note"`` (information). A Finding is a
    string, so ``report.findings`` reads as a list of sentences.
    """

    severity: str

    def __new__(cls, severity: str, text: str):
        if severity not in (ERROR, NOTE):
            raise ValueError(f"severity must be 'error' or 'note', got {severity!r}")
        obj = super().__new__(cls, text)
        obj.severity = severity
        return obj

    @property
    def text(self) -> str:
        return str.__str__(self)


def _error(text: str) -> Finding:
    return Finding(ERROR, text)


def _note(text: str) -> Finding:
    return Finding(NOTE, text)
