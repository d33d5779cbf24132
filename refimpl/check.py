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

from __future__ import annotations

import dataclasses
import importlib
import inspect
import itertools
import math
import os
import sys
from collections.abc import Callable, Sequence

import numpy as np

from ._checks import (
    MAX_POSITION,
    as_float_array,
    as_positions,
    check_base,
    check_dim,
    check_int,
    check_pairing,
    check_positive,
)
from .numerics import round_to
from .pipelines import PRECISIONS as TABLE_PRECISIONS

__all__ = [
    "DEFAULT_TOLERANCE",
    "MAX_CHECK_DIM",
    "PRECISIONS",
    "TABLE_PRECISION_CLASSES",
    "Finding",
    "RopeReport",
    "check_rope",
    "check_rope_arrays",
]

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


@dataclasses.dataclass
class RopeReport:
    r"""What :func:`check_rope` found. ``str(report)`` is a readable summary.

    Attributes
    ----------
    ok : bool
        The verdict: the implementation matches the expected configuration (``base``,
        ``pairing``, ``expected``, ``rotary_dim`` when given; otherwise "a correct RoPE of some
        base and pairing over the full width") within ``tolerance``.
    findings : list of Finding
        Plain sentences (``str``), errors first, each with a ``severity`` and a suggested fix.
    pairing : str
        ``"half"``, ``"interleaved"``, ``"neither"`` (described in the findings) or ``"none"``.
    output_permutation : numpy.ndarray of int or None
        ``p`` with ``fn(x)[..., j] == rope(x)[..., p[j]]`` when the outputs come in a fixed
        order other than the inputs' (DeepSeek-V3's ``rope_interleave``: interleaved pairs in,
        half-split order out); None when the order is the same.
    direction : int
        ``+1`` for the reference rotation by :math:`+m\theta`, ``-1`` for the opposite sign,
        ``0`` if undetermined.
    base : float or None
        The base of the frequencies (:math:`\theta_i = b^{-2(i+o)/r}`, fitted continuously and
        snapped to a round value only when that explains the data as well; the expected base
        when the expectation matched); None when no base describes them.
    inv_freq : numpy.ndarray, shape (rotary_dim/2,)
        Measured frequency (rad/token) of each pair (0 for the pass-through pairs of
        proportional RoPE).
    index_origin : int or None
        ``0`` (reference) or ``1`` (pair index counted from 1); None when neither fits.
    scaling : str
        ``"none"``, the scaling family (``"linear"``, ``"ntk"``, ``"yarn"``, ``"llama3"``,
        ``"proportional"``, the expected spec's ``rope_type`` when it matched, ...), or
        ``"unknown"`` for a profile nothing explains.
    scaling_params : dict
        Parameters of the family consistent with the measurement (e.g. ``{"factor": 8.0}``).
    attention_scaling : float
        Measured norm ratio :math:`\|f(x, m)\| / \|x\|` on the rotated features.
    attention_scaling_applied : str
        ``"none"``, ``"once"``, ``"twice"`` or ``"other"`` relative to the expected factor
        (blind: relative to the family's default factor, which is not a failure).
    position_offset : float
        :math:`\delta` such that position ``m`` is rotated as ``m + delta``.
    rotary_dim : int
        Number of features in rotated pairs (pairs of frequency 0 included for proportional).
    rotated_features : numpy.ndarray of int
        Which input features those are.
    precision : str
        One of :data:`PRECISIONS`: the arithmetic the errors suggest.
    max_error : float
        Largest deviation of a 2x2 pair block from the reference rotation (output error for a
        unit input) at the probed positions.
    relative_position_error : float
        Largest spread of the score :math:`\langle R_m q, R_n k\rangle` over probed pairs
        ``(m, n)`` with the same ``n - m``, relative to :math:`\|q\|\|k\|` (0 for a RoPE).
    deviations : list of tuple
        The largest deviations as ``(position, pair, error)``.
    rotation_error : float
        Largest deviation of the measured map from a scaled rotation of feature pairs,
        relative to the scale (0 for an exact rotation).
    positions : numpy.ndarray
        The positions probed.
    """

    ok: bool
    findings: list
    pairing: str
    direction: int
    base: float | None
    inv_freq: np.ndarray
    index_origin: int | None
    scaling: str
    scaling_params: dict
    attention_scaling: float
    attention_scaling_applied: str
    position_offset: float
    rotary_dim: int
    rotated_features: np.ndarray
    precision: str
    max_error: float
    relative_position_error: float
    deviations: list
    rotation_error: float
    dim: int
    tolerance: float
    output_permutation: np.ndarray | None = None
    positions: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(0))

    def __str__(self) -> str:
        verdict = "PASS" if self.ok else "FAIL"
        f = self.inv_freq
        freq = (
            f"{len(f)} pairs, theta_0 = {f[0]:.6g}, theta_last = {f[-1]:.6g} rad/token"
            if len(f)
            else "none"
        )
        direction = {1: "+m*theta (reference)", -1: "-m*theta (flipped)", 0: "undetermined"}
        order = (
            "same as input"
            if self.output_permutation is None
            else "permuted " + _describe_features(self.output_permutation).strip(" ()")
        )
        lines = [
            f"RoPE check: {verdict}",
            f"  pairing            {self.pairing}",
            f"  output order       {order}",
            f"  direction          {direction[self.direction]}",
            (
                f"  rotary_dim         {self.rotary_dim} of {self.dim} features"
                + _describe_features(self.rotated_features)
                if self.rotary_dim
                else "  rotary_dim         n/a (not read)"
            ),
            f"  frequencies        {freq}",
            f"  base               {_fmt(self.base)}",
            f"  index origin       {_fmt(self.index_origin)}",
            f"  scaling            {self.scaling}"
            + (f" {self.scaling_params}" if self.scaling_params else ""),
            f"  attention scaling  {self.attention_scaling:.6g} "
            f"(applied: {self.attention_scaling_applied})",
            f"  position offset    {self.position_offset:.6g}",
            f"  precision          {self.precision}",
            f"  max error          {self.max_error:.3g} "
            f"(tolerance {self.tolerance:.3g} x (1 + |m theta|))",
            f"  rotation error     {self.rotation_error:.3g}",
            f"  rel.-position err  {self.relative_position_error:.3g}",
        ]
        if self.deviations:
            worst = ", ".join(f"m={m:g} pair {i}: {e:.2g}" for m, i, e in self.deviations[:3])
            lines.append(f"  largest deviations {worst}")
        lines.append("Findings:")
        lines += [f"  - [{s.severity}] {s}" for s in self.findings] or ["  - none"]
        return "\n".join(lines)


def _fmt(v) -> str:
    if v is None:
        return "n/a"
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)


def _describe_features(feat: np.ndarray) -> str:
    if len(feat) == 0:
        return ""
    if np.array_equal(feat, np.arange(feat[0], feat[0] + len(feat))):
        return f" (features {feat[0]}..{feat[-1]})"
    return f" (features {', '.join(map(str, feat[:6]))}{', ...' if len(feat) > 6 else ''})"


# --------------------------------------------------------------------------------------------
# calling the user's function


class _FnFailed(Exception):
    """``fn`` raised (``original``) or returned non-finite values at the positions given."""

    def __init__(self, original: BaseException):
        super().__init__(str(original))
        self.original = original


def _import_peer(name: str):
    """Import a peer library (torch) so that a module of that name in the working directory
    cannot shadow it: the current directory is left out of ``sys.path`` for the import."""
    if name in sys.modules:
        return sys.modules[name]
    cwd = os.path.realpath(os.getcwd())
    saved = list(sys.path)
    sys.path[:] = [p for p in saved if os.path.realpath(p or os.curdir) != cwd]
    try:
        return importlib.import_module(name)
    finally:
        sys.path[:] = saved


class _Caller:
    """Calls ``fn`` with NumPy arrays, or with torch tensors if NumPy input is refused."""

    def __init__(self, fn: Callable, backend: str):
        if not callable(fn):
            raise TypeError(f"fn must be callable as fn(x, positions), got {type(fn).__name__}")
        if backend not in ("auto", "numpy", "torch"):
            raise ValueError(f"backend must be one of ('auto', 'numpy', 'torch'), got {backend!r}")
        self.fn = fn
        self.backend = backend

    def _torch_call(self, x, pos):
        try:
            torch = _import_peer("torch")
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise TypeError("backend='torch' needs torch installed") from exc
        return self.fn(torch.from_numpy(x), torch.from_numpy(pos.astype(np.int64)))

    def _first_call(self, x, ipos):
        try:
            out = self.fn(x.copy(), ipos.copy())
        except Exception as exc:
            try:
                _import_peer("torch")
            except ImportError:
                raise exc from None
            try:
                out = self._torch_call(x, ipos)
            except Exception:
                raise exc from None  # the NumPy call's error is the informative one
            self.backend = "torch"
        else:
            self.backend = "numpy"
        return out

    def __call__(self, x: np.ndarray, pos: np.ndarray) -> np.ndarray:
        """``fn(x, pos)`` as float64; raises :class:`_FnFailed` when ``fn`` raises later."""
        ipos = pos.astype(np.int64) if np.all(pos == np.round(pos)) else pos
        if self.backend == "auto":
            out = self._first_call(x, ipos)
        else:
            try:
                out = (
                    self._torch_call(x, ipos)
                    if self.backend == "torch"
                    else self.fn(x.copy(), ipos.copy())
                )
            except Exception as exc:
                raise _FnFailed(exc) from exc
        if hasattr(out, "detach"):  # a torch tensor
            out = out.detach().cpu().double().numpy()
        out = np.asarray(out, dtype=np.float64)
        if out.shape != x.shape:
            raise ValueError(
                f"fn must return an array of the input's shape {x.shape} (seq, dim), "
                f"got {out.shape}"
            )
        if not np.all(np.isfinite(out)):
            raise _FnFailed(ValueError("fn returned NaN or inf for finite input"))
        return out


# --------------------------------------------------------------------------------------------
# stage 1: linearity and use of positions (callables)


def _probe_linearity(call: _Caller, d: int) -> list[Finding]:
    """Errors when ``fn`` is not linear in ``x`` or ignores ``positions`` (empty list: fine)."""
    rng = np.random.default_rng(0)
    xa, xb = rng.standard_normal((2, len(_LINEARITY_POSITIONS), d))
    p4 = np.array(_LINEARITY_POSITIONS)
    try:
        fa = call(xa, p4)
        fb, fab = call(xb, p4), call(0.5 * xa - 2.0 * xb, p4)
    except _FnFailed as exc:
        raise exc.original from None  # fn fails at positions 0..3: its own error is the answer
    lin_err = np.max(np.abs(fab - (0.5 * fa - 2.0 * fb))) / (np.max(np.abs(fab)) + 1e-300)
    if lin_err > _LINEARITY_TOL:
        return [
            _error(
                f"fn is not linear in x (relative deviation {lin_err:.2g}): a RoPE multiplies "
                "each pair by a rotation; look for a bias, a normalisation or a nonlinearity."
            )
        ]
    row = np.tile(rng.standard_normal(d), (4, 1))
    same = call(row, np.full(4, 3.0))
    if np.max(np.abs(same - same[0])) > _ROW_TOL * np.max(np.abs(same)):
        return [
            _error(
                "fn ignores the positions it is given: the same vector at the same position "
                "gives different outputs in different rows, so it rotates by the row index "
                "(arange(seq)). Use the positions argument (position_ids) for the angles."
            )
        ]
    return []


# --------------------------------------------------------------------------------------------
# stage 2: per-position matrices


def _matrices(call: _Caller, positions: np.ndarray, dim: int) -> np.ndarray:
    """``R[k]`` is the (dim, dim) map at ``positions[k]``: out row j = R e_j, so R = out.T.

    Positions are probed in calls of at most ``_CALL_ELEMENTS`` input entries each."""
    eye = np.eye(dim)
    per_call = max(1, _CALL_ELEMENTS // (dim * dim))
    R = np.empty((len(positions), dim, dim))
    for start in range(0, len(positions), per_call):
        chunk = positions[start : start + per_call]
        x = np.tile(eye, (len(chunk), 1))  # (P*d, d)
        out = call(x, np.repeat(chunk, dim)).reshape(len(chunk), dim, dim)  # (P, d_in, d_out)
        R[start : start + len(chunk)] = np.transpose(out, (0, 2, 1))  # (P, d_out, d_in)
    return R


def _read_matrices(call: _Caller, pos: np.ndarray, d: int, explicit: bool):
    """Matrices at every position where ``fn`` answers; returns ``(pos, R, findings)``.

    A function that fails at some positions (a cos/sin cache shorter than the probe) is
    probed at the positions where it answers, and the others are named in a finding (an error
    when the caller chose the positions, a note for the default probe)."""
    try:
        return pos, _matrices(call, pos, d), []
    except _FnFailed:
        pass
    answered, failed, first_error = [], [], None
    for m in pos:
        try:
            answered.append(_matrices(call, np.array([m]), d)[0])
        except _FnFailed as exc:
            failed.append(m)
            first_error = first_error or exc.original
    keep = np.array([m not in failed for m in pos])
    if not (np.any(pos[keep] == 0) and np.any(pos[keep] == 1)):
        raise first_error
    lo = min(failed)
    what = f"{type(first_error).__name__}: {first_error}"
    text = (
        f"fn failed at {len(failed)} of the {len(pos)} probed positions, the smallest {lo:g} "
        f"({what}); only positions below {lo:g} were probed"
        if all(m >= lo for m in pos[~keep]) and np.all(pos[keep] < lo)
        else f"fn failed at positions {failed[:5]} ({what}); the others were probed"
    )
    if explicit:
        return pos[keep], np.stack(answered), [_error(text + ". Size its cache for them.")]
    return pos[keep], np.stack(answered), [_note(text + ". Pass positions= to choose them.")]


# Input rows whose QR factor has a diagonal entry below this fraction of the largest do not
# determine the map (float64 leaves ~1e-16; independent random rows give ~1e-2 or more).
_RANK_TOL = 1e-10


def _least_squares(xm: np.ndarray, ym: np.ndarray) -> np.ndarray | None:
    """``S`` with ``ym ~ xm @ S`` by QR (accurate to ~cond(xm) eps), or None when the rows do
    not span the feature space. (An SVD per position, as in ``lstsq``, costs several times
    more.)"""
    q, r = np.linalg.qr(xm)  # xm (n, d) = q (n, d) @ r (d, d)
    diag = np.abs(np.diag(r))
    if np.min(diag) < _RANK_TOL * np.max(diag):
        return None
    return np.linalg.solve(r, q.T @ ym)


def _matrices_from_arrays(positions, x, y, d: int):
    """Least-squares matrices from rows ``y = R_m x`` grouped by position.

    Returns ``(pos, R, lin_err, noise, findings)``: positions with at least ``d`` rows (0 and 1
    among them), their (d, d) maps, the largest relative residual of the fits (0 for a linear
    map), the relative noise floor of the output dtype, and notes on skipped positions."""
    pos_all = as_positions(positions, maximum=MAX_PROBE_POSITION)
    xs = as_float_array(x, "x", ndim=2)
    ys = as_float_array(y, "y", ndim=2)
    for name, a in (("x", xs), ("y", ys)):
        if a.ndim != 2 or a.shape != (len(pos_all), d):
            raise ValueError(
                f"{name} must have shape (len(positions), dim) = "
                f"({len(pos_all)}, {d}), got {a.shape}"
            )
        if a.dtype.kind not in "fiu" or not np.all(np.isfinite(a)):
            raise ValueError(f"{name} must be finite real numbers")
    noise = _ARRAY_NOISE_ULPS * float(np.finfo(ys.dtype if ys.dtype.kind == "f" else float).eps)
    xs, ys = xs.astype(np.float64), ys.astype(np.float64)
    kept, mats, lin_err, short = [], [], 0.0, []
    for m in np.unique(pos_all):
        rows = pos_all == m
        xm, ym = xs[rows], ys[rows]
        sol = _least_squares(xm, ym) if len(xm) >= d else None  # ym = xm @ R^T
        if sol is None:
            short.append(float(m))
            continue
        resid = np.max(np.abs(xm @ sol - ym)) / (np.max(np.abs(ym)) + 1e-300)
        lin_err = max(lin_err, float(resid))
        kept.append(float(m))
        mats.append(sol.T)
    pos = np.array(kept)
    if not (np.any(pos == 0) and np.any(pos == 1)):
        raise ValueError(
            f"positions 0 and 1 must each have at least dim={d} linearly independent rows "
            "(frequencies are read from them)"
        )
    notes = []
    if short:
        notes.append(
            _note(
                f"{len(short)} position(s) with fewer than dim={d} independent "
                f"rows were not used (e.g. {short[:3]})."
            )
        )
    return pos, np.stack(mats), lin_err, noise, notes


# --------------------------------------------------------------------------------------------
# stage 3: structure -- pairs, pass-through features, output permutation


@dataclasses.dataclass
class _Structure:
    """Pairs of input features (a, b), pass-through features, features mixed with several
    others, the output permutation (or None) and the matrices with it undone."""

    pairs: list
    passthrough: list
    odd: list
    permutation: np.ndarray | None
    R: np.ndarray


def _support(R: np.ndarray, floor: float) -> np.ndarray:
    """Boolean (d_out, d_in): input j reaches output o at some probed position."""
    A = np.abs(R).sum(axis=0)  # (d_out, d_in)
    total = A.sum(axis=0, keepdims=True) + 1e-300
    return A > floor * total


def _block_residual(R, oa, ob, a, b) -> float:
    """Residual of rows (oa, ob) on inputs (a, b) from s [[c, -s], [s, c]]."""
    raa, rab, rba, rbb = R[:, oa, a], R[:, oa, b], R[:, ob, a], R[:, ob, b]
    return float(np.max(np.abs(raa - rbb)) + np.max(np.abs(rab + rba)))


def _output_order(R: np.ndarray, support: np.ndarray):
    """``out_of[j]``: the input-frame feature that output j holds, or None when the supports do
    not form pairs and singletons (then the pairs are read without a permutation)."""
    d = R.shape[-1]
    groups: dict = {}
    for o in range(d):
        key = tuple(np.flatnonzero(support[o]))
        if not 1 <= len(key) <= 2:
            return None
        groups.setdefault(key, []).append(o)
    out_of = np.full(d, -1)
    for key, rows in groups.items():
        if len(rows) != len(key):
            return None
        if len(key) == 1:
            out_of[rows[0]] = key[0]
            continue
        (a, b), (o1, o2) = key, rows
        keep = _block_residual(R, o1, o2, a, b)
        swap = _block_residual(R, o2, o1, a, b)
        # rows that are the pair's own features keep their order: a swap there is a
        # reflection, reported as such; rows elsewhere take the order that rotates
        if (o1, o2) != (a, b) and swap < keep:
            o1, o2 = o2, o1
        out_of[o1], out_of[o2] = a, b
    if sorted(out_of) != list(range(d)):
        return None
    return out_of


def _find_pairs(R: np.ndarray, floor: float):
    """Partner of every feature from the coupling summed over positions (no permutation)."""
    dim = R.shape[-1]
    A = np.abs(R).sum(axis=0)  # (d, d)
    off = A.copy()
    np.fill_diagonal(off, 0.0)
    total = A.sum(axis=0) + 1e-300
    partner = np.argmax(off, axis=0)  # strongest coupling of input feature j
    coupled = off[partner, np.arange(dim)] > floor * total
    pairs, passthrough, odd = [], [], []
    for j in range(dim):
        if not coupled[j]:
            passthrough.append(j)
        elif partner[partner[j]] == j and coupled[partner[j]]:
            if j < partner[j]:
                pairs.append((j, int(partner[j])))
        else:
            odd.append(j)
    return pairs, passthrough, odd


def _read_structure(R: np.ndarray, floor: float = _COUPLING_TOL) -> _Structure:
    """Pairs and pass-through features, undoing a fixed output permutation when there is one."""
    out_of = _output_order(R, _support(R, floor))
    perm = None
    if out_of is not None and not np.array_equal(out_of, np.arange(R.shape[-1])):
        perm = out_of
        unpermuted = np.empty_like(R)
        unpermuted[:, out_of, :] = R  # output j holds the reference's feature out_of[j]
        R = unpermuted
    pairs, passthrough, odd = _find_pairs(R, floor)
    return _Structure(pairs, passthrough, odd, perm, R)


def _classify_pairing(pairs, dim):
    """``(pairing, note, proportional)``: the layout of the rotated pairs."""
    if not pairs:
        return "none", "", False
    a = np.array([p[0] for p in pairs])
    b = np.array([p[1] for p in pairs])
    h = len(pairs)
    feats = np.sort(np.concatenate([a, b]))
    contiguous = np.array_equal(feats, np.arange(feats[0], feats[0] + len(feats)))
    if contiguous and np.all(b - a == h) and np.array_equal(a, np.arange(a[0], a[0] + h)):
        return "half", "", False
    if contiguous and np.all(b - a == 1) and np.array_equal(a, np.arange(a[0], a[0] + 2 * h, 2)):
        return "interleaved", "", False
    if np.all(b - a == dim // 2) and np.array_equal(a, np.arange(h)):
        return "half", "", True  # rotate_half across the head, trailing pairs at frequency 0
    shown = ", ".join(f"({p}, {q})" for p, q in pairs[:4])
    return "neither", f"pairs {shown}{', ...' if len(pairs) > 4 else ''}", False


def _frame(pairs, pairing: str, proportional: bool, dim: int, expected_zeros: bool):
    """The pairs of the rotation frame: the rotated pairs, plus the frequency-0 pairs of a
    proportional layout (half-split over the head, or interleaved when the expected spec has
    trailing zero frequencies)."""
    if proportional:
        return [(i, i + dim // 2) for i in range(dim // 2)]
    if expected_zeros and pairing == "interleaved" and pairs[0][0] == 0:
        return [(2 * i, 2 * i + 1) for i in range(dim // 2)]
    return list(pairs)


# --------------------------------------------------------------------------------------------
# stage 4: angles, magnitudes, direction, frequencies, offset


@dataclasses.dataclass
class _Angles:
    """Per-pair measurements over the probed positions (``P`` positions, ``h`` frame pairs)."""

    blocks: tuple  # (raa, rba, rab, rbb), each (P, h)
    phi: np.ndarray  # (P, h) angle, sign-corrected so that direction +1 grows with m
    mag: np.ndarray  # (P, h) magnitude with any per-position trend (xPos) divided out
    trend: np.ndarray | None  # (h,) d log(magnitude) / d position, or None when constant
    scale: float  # median magnitude of the rotating pairs
    direction: int
    theta: np.ndarray  # (h,) frequencies (rad/token), 0 for pass-through pairs
    delta: float  # position offset
    struct_err: float


def _wrap(phi):
    return (np.asarray(phi) + np.pi) % _TWO_PI - np.pi


def _blocks(R: np.ndarray, pairs):
    a = np.array([p[0] for p in pairs])
    b = np.array([p[1] for p in pairs])
    return R[:, a, a], R[:, b, a], R[:, a, b], R[:, b, b]  # each (P, h)


def _structure_error(R, pairs, passthrough, blocks, scale) -> float:
    """Largest deviation from a rotation of the pairs, relative to the scale."""
    raa, rba, rab, rbb = blocks
    d = R.shape[-1]
    a_idx = np.array([p[0] for p in pairs])
    b_idx = np.array([p[1] for p in pairs])
    allowed = np.zeros((d, d), dtype=bool)
    for u, v in ((a_idx, a_idx), (a_idx, b_idx), (b_idx, a_idx), (b_idx, b_idx)):
        allowed[u, v] = True
    allowed[passthrough, passthrough] = True
    leak = float(np.max(np.abs(R[:, ~allowed]))) if np.any(~allowed) else 0.0
    resid = np.maximum(np.abs(raa - rbb), np.abs(rab + rba))
    return max(float(np.max(resid)), leak) / max(scale, 1e-300)


def _magnitude_trend(pos, mag):
    """Per-pair slope of log magnitude in position when the magnitudes change with position
    along a line (xPos: log s_i(m) = m log(zeta_i) / scale_base), else None."""
    logm = np.log(np.maximum(mag, 1e-300))
    change = logm - logm[np.argmin(np.abs(pos))]
    if np.max(np.abs(change)) <= _MAG_TREND:
        return None
    m = pos - pos[np.argmin(np.abs(pos))]
    slope = (m @ change) / max(float(m @ m), 1e-300)  # (h,)
    resid = np.max(np.abs(change - np.outer(m, slope)))
    return slope if resid < 0.1 * np.max(np.abs(change)) else None


def _read_angles(pos, R, frame, passthrough):
    """Stage 4: ``(_Angles, findings)``; findings that stop the check (reflection, no
    rotation) come back with ``None`` for the angles."""
    blocks = _blocks(R, frame)
    raa, rba, rab, rbb = blocks
    mag = np.hypot(raa, rba)  # (P, h)
    scale0 = float(np.median(mag))
    pt = [f for f in passthrough if not any(f in p for p in frame)]
    struct_err = _structure_error(R, frame, pt, blocks, scale0)
    if (
        np.max(np.abs(raa + rbb)) < _REFLECTION_TOL * scale0
        and np.max(np.abs(rab - rba)) < _REFLECTION_TOL * scale0
    ):
        text = (
            "each pair is reflected, not rotated (blocks [[c, s], [s, -c]]): the sign of one "
            "output member is flipped."
        )
        return None, [_error(text)], struct_err
    if struct_err > _ROTATION_TOL:
        text = (
            f"the pair blocks are not rotations (deviation {struct_err:.2g} of the scale): "
            "the two members of a pair do not see the same angle. Check that cos/sin are "
            "laid out with the same pairing as rotate_half."
        )
        return None, [_error(text)], struct_err
    phi = np.arctan2(rba, raa)  # [eq:check-angle]
    k0 = int(np.flatnonzero(pos == 0)[0])
    k1 = int(np.flatnonzero(pos == 1)[0])
    dphi = _wrap(phi - phi[k0])
    sig = dphi[k1][np.abs(dphi[k1]) > 1e-9]
    direction = int(np.sign(np.sum(np.sign(sig)))) if sig.size else 0
    if direction == -1:
        phi, dphi = -phi, -dphi
    theta = _unwrap_frequencies(pos, dphi)
    theta = np.where(np.abs(theta) < _ZERO_FREQ, 0.0, theta)
    rotating = theta > 0
    scale = float(np.median(mag[:, rotating])) if np.any(rotating) else scale0
    trend = _magnitude_trend(pos, mag[:, rotating]) if np.any(rotating) else None
    if trend is not None:
        full = np.zeros(len(frame))
        full[rotating] = trend
        trend = full
        mag = mag / np.exp(np.outer(pos - pos[k0], trend))
        scale = float(np.median(mag[:, rotating]))
    delta = _position_offset(theta, phi[k0])
    if abs(delta - round(delta)) < _OFFSET_SNAP:
        delta = float(round(delta))
    return _Angles(blocks, phi, mag, trend, scale, direction, theta, delta, struct_err), [], None


def _position_offset(theta, phi0) -> float:
    """``delta`` with ``phi_i(0) = delta * theta_i``: read from the slowest pair (unambiguous
    for ``|delta| < pi / theta_min``), then refined over faster pairs, each unwrapped with the
    estimate so far (least squares in ``theta``)."""
    live = theta > 0
    if not np.any(live):
        return 0.0
    order = np.argsort(theta[live])
    th, ph = theta[live][order], phi0[live][order]
    delta, num, den = float(ph[0] / th[0]), 0.0, 0.0
    for t, p in zip(th, ph, strict=True):
        p = p + _TWO_PI * round((delta * t - p) / _TWO_PI)  # [eq:check-unwrap]
        num, den = num + t * p, den + t * t
        delta = num / den
    return float(delta)


def _unwrap_frequencies(positions, dphi):
    """Per-pair frequency from angles relative to position 0, refined over growing positions.

    ``dphi[k, i]`` is the measured angle at ``positions[k]`` minus the one at 0 (wrapped). The
    estimate starts from position 1 (frequencies below pi rad/token are unambiguous there) and
    is refined at each larger power of two whose angle agrees with the prediction to pi/4.
    """
    order = np.argsort(positions)
    pos, dphi = positions[order], dphi[order]
    k1 = np.flatnonzero(pos == 1.0)
    theta = dphi[k1[0]].copy()
    alive = np.ones_like(theta, dtype=bool)
    for k in range(len(pos)):
        m = pos[k]
        if m <= 1.0 or not _is_power_of_two(m):
            continue  # powers of two are exact in every format, so rounded positions cannot bias
        pred = m * theta
        miss = np.abs(_wrap(dphi[k] - pred))
        alive &= miss < np.pi / 4
        turns = np.round((pred - dphi[k]) / _TWO_PI)
        cand = (dphi[k] + _TWO_PI * turns) / m  # [eq:check-unwrap]
        theta = np.where(alive, cand, theta)
    return theta


def _is_power_of_two(m: float) -> bool:
    mant, _ = math.frexp(m)
    return mant == 0.5


# --------------------------------------------------------------------------------------------
# stage 5: the frequency profile -- continuous fit and scaling families


@dataclasses.dataclass
class _Profile:
    """What the frequencies are: a geometric profile (base, origin, linear factor) or a
    scaling family, with the identified frequencies (bugs included)."""

    geometric: bool
    base: float | None  # reported base (round when a round value fits as well)
    base_fit: float | None  # continuous fit
    origin_fit: float | None
    index_origin: int | None
    scaling: str
    params: dict
    theta: np.ndarray | None  # (h,) the identified profile
    family_scale: float | None  # the family's default attention factor
    resid: float
    notes: list


def _fit_geometric(theta, r, index=None):
    """Least-squares fit of log theta_i = -(2 (i + o) / r) log b; returns (b, o, max residual).

    ``index`` are the pair indices of ``theta`` (default 0..h-1)."""
    i = np.arange(len(theta), dtype=np.float64) if index is None else np.asarray(index, float)
    if len(theta) < 2 or np.any(theta <= 0):
        return None, None, np.inf
    y = np.log(theta)
    beta, alpha = np.polyfit(i, y, 1)
    if beta >= 0:
        return None, None, np.inf
    b = math.exp(-beta * r / 2.0)
    o = alpha / beta
    resid = float(np.max(np.abs(y - (alpha + beta * i))))  # [eq:check-fit]
    return b, o, resid


def _misfit(theta, model) -> float:
    return float(np.max(np.abs(theta / model - 1.0)))


def _round_candidates(value: float, common=()) -> list:
    return list(common) + [float(f"{value:.{k}g}") for k in range(1, 8)]


def _snap(value: float, misfit: Callable, common=()) -> float:
    """A round value (``common`` first, then ``value`` to 1..7 digits) that explains the data as
    well as ``value`` itself, else ``value``."""
    allowed = max(_SNAP_REL, 3.0 * misfit(value))
    for c in _round_candidates(value, common):
        if c > 0 and misfit(c) <= allowed:
            return c
    return value


def _geometric(r, base, index, origin=0.0, factor=1.0):
    return base ** (-2.0 * (np.asarray(index, float) + origin) / r) / factor  # [eq:check-fit]


def _fit_profile(theta, r, exp_base) -> _Profile:
    """Stage 5: the frequency profile of the rotating pairs (``theta > 0``) of the frame."""
    nz = theta > 0
    idx = np.flatnonzero(nz)
    tf = theta[nz]
    notes: list = []
    empty = _Profile(False, None, None, None, None, "unknown", {}, None, None, np.inf, notes)
    if len(tf) == 0 or np.any(theta < 0):
        return empty
    if len(tf) == 1:
        return _Profile(False, None, None, None, None, "unknown", {}, theta.copy(), None, 0.0, [])
    b_fit, o_fit, resid = _fit_geometric(tf, r, idx)
    zeros = "proportional" if len(idx) < len(theta) else "none"
    if b_fit is not None and resid < _GEOMETRIC_RESID:
        return _geometric_profile(theta, idx, r, b_fit, o_fit, resid, exp_base, zeros)
    fam = _match_family(theta, r, exp_base) or _per_pair_factors(theta, r, exp_base)
    if fam is not None:
        return fam
    return dataclasses.replace(empty, base_fit=b_fit, origin_fit=o_fit, resid=resid)


def _per_pair_factors(theta, r, exp_base) -> _Profile | None:
    """Per-pair divisors ``lambda_i = b^(-2i/r) / theta_i`` of a round base (LongRoPE's
    factors, GGUF's ``rope_freqs``), when they are at least 1 and never decrease with the pair
    index (interpolation grows toward the slow pairs); else None. Random frequencies fail it."""
    if np.any(theta <= 0):
        return None
    i = np.arange(len(theta))
    for c in (exp_base,) if exp_base else _COMMON_BASES:
        lam = _geometric(r, c, i) / theta
        rising = np.all(lam[1:] >= lam[:-1] * (1.0 - _PER_PAIR_SLACK))
        if np.all(lam >= 1.0 - _PER_PAIR_SLACK) and rising:
            params = {"factors": lam}
            return _Profile(False, c, None, 0.0, 0, "freq_factors", params, theta.copy(), None,
                            0.0, [])  # fmt: skip
    return None


def _geometric_profile(theta, idx, r, b_fit, o_fit, resid, exp_base, zeros) -> _Profile:
    """Base and index origin, or base and linear factor, of a geometric profile."""
    tf = theta[idx]
    common = ((exp_base,) if exp_base else ()) + _COMMON_BASES
    o_round = round(o_fit)
    full = np.zeros_like(theta)
    if abs(o_fit - o_round) < _ORIGIN_TOL and o_round in (0, 1):
        base = _snap(b_fit, lambda c: _misfit(tf, _geometric(r, c, idx, o_round)), common)
        full[idx] = _geometric(r, base, idx, o_round)
        prof = _Profile(True, base, b_fit, o_fit, int(o_round), zeros, {}, full, None, resid, [])
        if o_round == 0 and zeros == "none":
            ntk = _match_ntk(base, r, exp_base)
            if ntk is not None:
                prof.scaling, prof.params = "ntk", ntk
        return prof
    # theta_i = b^(-2i/r) / s: position interpolation by the factor s, fitted continuously
    s_fit = math.exp(float(np.mean(np.log(_geometric(r, b_fit, idx) / tf))))
    base = _snap(b_fit, lambda c: _misfit(tf, _geometric(r, c, idx, 0.0, s_fit)), common)
    factor = _snap(s_fit, lambda s: _misfit(tf, _geometric(r, base, idx, 0.0, s)), _SCALING_FACTORS)
    full[idx] = _geometric(r, base, idx, 0.0, factor)
    name = "linear" if zeros == "none" else "proportional"
    return _Profile(True, base, b_fit, o_fit, 0, name, {"factor": factor}, full, None, resid, [])


def _match_ntk(b, r, base):
    """NTK-aware scaling is geometric with base ``base * factor**(r / (r - 2))``: the factor
    and original base that explain ``b``, or None. Without an expected base, only a fitted base
    that is not itself a common one is explained this way."""
    if base is not None:
        cands = (base,)
    elif b in _COMMON_BASES:
        return None
    else:
        cands = _COMMON_BASES
    for c in cands:
        if b <= c or r <= 2:
            continue
        s = (b / c) ** ((r - 2) / r)  # inverse of the NTK base change
        for f in _SCALING_FACTORS:
            if abs(s / f - 1.0) < _FAMILY_TOL:
                return {"factor": f, "original_base": c}
    return None


def _unscaled_head(tf) -> int:
    """Number of leading pairs whose consecutive frequency ratios agree (the unscaled band)."""
    q = tf[1:] / tf[:-1]
    same = np.abs(q / q[0] - 1.0) < _HEAD_RATIO_TOL
    return 1 + (len(q) if np.all(same) else int(np.argmin(same)))


def _family_methods():
    from .scaling import ROPE_SCALINGS

    return [(n, m) for n, m in ROPE_SCALINGS.items() if n not in _NOT_FITTED]


def _grid(method) -> list[dict]:
    """Parameter combinations of ``_FAMILY_GRID`` that ``method`` accepts (the parameter
    names of a scaling record's ``keys`` and ``defaults``, else its signature)."""
    keys = getattr(method, "keys", None)
    if isinstance(keys, dict) or hasattr(keys, "values"):
        accepted = set(keys.values()) | set(getattr(method, "defaults", {}) or {})
    else:
        try:
            accepted = set(inspect.signature(method).parameters)
        except (TypeError, ValueError):
            return []
    axes = []
    for keys, values in _FAMILY_GRID.items():
        names = keys if isinstance(keys, tuple) else (keys,)
        if all(n in accepted for n in names):
            axes.append(
                [dict(zip(names, v if isinstance(v, tuple) else (v,), strict=True)) for v in values]
            )
    return [dict(kv for part in combo for kv in part.items()) for combo in itertools.product(*axes)]


def _family_candidates(method, r, base, factor):
    """``(params, ScaledFrequencies)`` over the grid around a fitted base and factor."""
    for params in _grid(method):
        params = dict(params, factor=factor)
        try:
            yield params, method(dim=r, base=base, **params)
        except (TypeError, ValueError):
            continue


def _match_family(theta, r, exp_base) -> _Profile | None:
    """A scaling family of the registry that reproduces a non-geometric profile: base from the
    unscaled head, factor from the fully interpolated tail, the rest from the grid."""
    if np.any(theta <= 0) or len(theta) < 4 or abs(theta[0] - 1.0) > _HEAD_RATIO_TOL:
        return None  # the families keep pair 0 at 1 rad/token
    head = _unscaled_head(theta)
    if head < 2:
        return None
    b_head = float(theta[1] ** (-r / 2.0))
    i = np.arange(len(theta))
    base = exp_base or _snap(
        b_head, lambda c: _misfit(theta[:head], _geometric(r, c, i[:head])), _COMMON_BASES
    )
    s_tail = float(_geometric(r, base, i[-1:])[0] / theta[-1])
    factor = next(
        (
            c
            for c in _round_candidates(s_tail, _SCALING_FACTORS)
            if abs(c / s_tail - 1) < _SNAP_TAIL
        ),
        s_tail,
    )
    best = None
    for key, method in _family_methods():
        name = getattr(method, "family", None) or key
        fit = getattr(method, "fit", None)
        found = fit(theta, dim=r, base=base, tol=_FAMILY_TOL) if fit is not None else None
        cands = (
            [(found, method(dim=r, base=base, **found))]
            if found
            else _family_candidates(method, r, base, factor)
        )
        for params, res in cands:
            inv = np.asarray(res.inv_freq, float)
            if inv.shape != theta.shape:
                continue
            err = _misfit(theta, inv)
            if best is None or err < best[0]:
                best = (err, name, params, inv, float(res.attention_scaling))
    if best is None or best[0] > _FAMILY_TOL:
        return None
    err, name, params, inv, scale = best
    return _Profile(False, base, b_head, 0.0, 0, name, params, inv, scale, err, [])


# --------------------------------------------------------------------------------------------
# expected configuration


@dataclasses.dataclass
class _Expected:
    inv_freq: np.ndarray | None
    base: float | None
    pairing: str | None
    rotary_dim: int | None
    attention_scaling: float | None
    rope_type: str | None
    params: dict
    output_order: str | None
    rotary_offset: int = 0


def _read_expected(expected, dim, base, pairing, rotary_dim, attention_scaling, seq_len):
    inv, rtype, params, order, offset = None, None, {}, None, 0
    is_config = isinstance(expected, (dict, str)) or hasattr(expected, "__fspath__")
    if seq_len is not None:
        seq_len = check_int(seq_len, "seq_len", minimum=1, maximum=MAX_PROBE_POSITION)
        if not is_config:
            raise ValueError(
                "seq_len is used only when expected is a model config (dict or path) that "
                "rope_from_config reads; pass the spec built with that seq_len instead"
            )
    if expected is not None:
        if is_config:
            from .config import rope_from_config

            kw = {} if seq_len is None else {"seq_len": seq_len}
            expected = rope_from_config(expected, **kw)
        for attr in ("inv_freq", "pairing", "rotary_dim"):
            if not hasattr(expected, attr):
                raise TypeError(
                    "expected must be a RopeSpec (from refimpl.rope_from_config), a config dict "
                    f"or a config path; the object given has no attribute {attr!r}"
                )
        inv = np.asarray(expected.inv_freq, dtype=np.float64)
        pairing = pairing if pairing is not None else expected.pairing
        rotary_dim = rotary_dim if rotary_dim is not None else int(expected.rotary_dim)
        if attention_scaling is None:
            attention_scaling = float(getattr(expected, "attention_scaling", 1.0))
        if base is None and getattr(expected, "base", None) is not None:
            base = float(expected.base)
        rtype = getattr(expected, "rope_type", None)
        params = {
            k: v
            for k, v in dict(getattr(expected, "params", None) or {}).items()
            if k not in ("dim", "base", "seq_len")
        }
        order = getattr(expected, "output_order", None)
        offset = int(getattr(expected, "rotary_offset", 0) or 0)
        spec_dim = getattr(expected, "dim", None)
        if spec_dim is not None and int(spec_dim) != dim:
            raise ValueError(f"dim={dim} differs from the expected spec's dim={int(spec_dim)}")
    if base is not None:
        base = check_base(base)
    if pairing is not None:
        check_pairing(pairing)
    if rotary_dim is not None:
        rotary_dim = check_dim(rotary_dim, "rotary_dim")
        if rotary_dim > dim:
            raise ValueError(f"rotary_dim={rotary_dim} exceeds dim={dim}")
    if attention_scaling is not None:
        attention_scaling = check_positive(attention_scaling, "attention_scaling")
    return _Expected(
        inv, base, pairing, rotary_dim, attention_scaling, rtype, params, order, offset
    )


# --------------------------------------------------------------------------------------------
# stage 6: precision class


def _round_to(x, fmt: str) -> np.ndarray:
    """Round to float32/float16/bfloat16 (nearest even, refimpl.numerics) and back to float64."""
    return np.asarray(round_to(x, fmt), dtype=np.float64)


# Angle-error growth per radian and magnitude errors that separate the classes: bfloat16 has
# 8 significand bits (unit roundoff 2**-8 ~ 4e-3), float16 11 (2**-11 ~ 5e-4); the class
# boundaries sit a factor of ~4 below each unit roundoff.
_BF16_LEVEL = 1e-3
_FP16_LEVEL = 1e-4
_WORSE_LEVEL = 1e-2
# Above these the errors are not float64 rounding (float64 tables are exact to ~1e-16 per
# radian; float32 arithmetic leaves ~1e-8 or more).
_FLOAT64_GROWTH = 1e-11
_FLOAT64_FLOOR = 1e-12
# Frequencies equal to their low-precision roundings to this relative accuracy were rounded.
_ROUNDED_FREQ = 1e-5
# Angles at least this large (rad) show the growth of the angle error with position.
_LARGE_ANGLE = 100.0


def _precision(pos, ang: _Angles, ref_theta):
    """Precision class from the angle and magnitude errors (see the checker page)."""
    tf = ang.theta
    if ref_theta is None or np.any(tf < 0):
        return "undetermined", "frequencies could not be read"
    exact = np.multiply.outer(pos + ang.delta, ref_theta)  # (P, h) exact angles
    e_ang = np.abs(_wrap(ang.phi - exact))
    e_mag = float(np.max(np.abs(ang.mag - ang.scale))) / max(ang.scale, 1e-300)
    big = np.abs(exact) >= _LARGE_ANGLE
    if not np.any(big):
        big = np.abs(exact) >= 1.0
    g = float(np.max(e_ang[big] / np.abs(exact[big]))) if np.any(big) else 0.0
    small = np.abs(exact) < 1.0
    floor = float(np.max(e_ang[small])) if np.any(small) else 0.0
    detail = (
        f"angle error up to {g:.2g} per radian of angle, magnitude error {e_mag:.2g}, "
        f"angle error at small angles {floor:.2g}"
    )
    # frequencies rounded to a low-precision format before the product: the measured
    # frequencies equal the roundings and the angles are exact multiples of them
    e_tf = np.abs(_wrap(ang.phi - np.multiply.outer(pos + ang.delta, tf)))
    g_tf = float(np.max(e_tf[big] / np.abs(exact[big]))) if np.any(big) else 0.0
    nz = ref_theta > 0
    for fmt in ("bfloat16", "float16"):
        if g_tf > 1e-6 or not np.any(nz):
            break
        rounded = _round_to(ref_theta[nz], fmt)
        moved = np.abs(rounded / ref_theta[nz] - 1.0) > _ROUNDED_FREQ
        if np.sum(moved) >= max(1, np.sum(nz) // 4):
            hit = np.abs(tf[nz][moved] / rounded[moved] - 1.0) < _ROUNDED_FREQ
            if np.mean(hit) > 0.8:
                return f"{fmt} inv_freq", detail + f"; frequencies equal their {fmt} roundings"
    if e_mag > _BF16_LEVEL:
        return "bfloat16 tables", detail
    if g > _BF16_LEVEL:
        return "bfloat16 angles", detail
    if e_mag > _FP16_LEVEL:
        return "float16 tables", detail
    if g > _FP16_LEVEL:
        return "float16 angles", detail
    if g > _FLOAT64_GROWTH or e_mag > _FLOAT64_FLOOR or floor > _FLOAT64_FLOOR:
        return ("worse than bfloat16" if g > _WORSE_LEVEL else "float32"), detail
    return "float64", detail


def _precision_fix(precision: str) -> str:
    return {
        "bfloat16 inv_freq": "Keep inv_freq in float32 (build it in float32 and do not cast the "
        "module to bfloat16 before computing it).",
        "float16 inv_freq": "Keep inv_freq in float32.",
        "bfloat16 tables": "Compute cos/sin in float32 and cast only the rotated output.",
        "float16 tables": "Compute cos/sin in float32 and cast only the rotated output.",
        "bfloat16 angles": "Compute positions * inv_freq in float32 (positions as float32, not "
        "the activations' dtype), then cos/sin, and cast at the end.",
        "float16 angles": "Compute positions * inv_freq in float32, then cos/sin.",
    }.get(precision, "Compute the angles in float32 or better.")


def _deviations(pos, blocks, theta, s, tol):
    raa, rba, rab, rbb = blocks
    ang = np.multiply.outer(pos, theta)
    c, sn = s * np.cos(ang), s * np.sin(ang)
    err = np.sqrt(((raa - c) ** 2 + (rba - sn) ** 2 + (rab + sn) ** 2 + (rbb - c) ** 2) / 2.0)
    scaled = err / (tol * (1.0 + np.abs(ang)))
    order = np.argsort(scaled, axis=None)[::-1][:5]
    devs = []
    for flat in order:
        k, i = np.unravel_index(flat, err.shape)
        if scaled[k, i] > 1.0:
            devs.append((float(pos[k]), int(i), float(err[k, i])))
    return float(np.max(err)), float(np.max(scaled)), devs


def _relative_position_error(pos, R) -> float:
    """Largest spread of <R_m q, R_n k> over probed (m, n) with equal n - m, over |q||k|."""
    rng = np.random.default_rng(1)
    q, k = rng.standard_normal((2, R.shape[-1]))
    scores = (R @ q) @ (R @ k).T  # (P, P): row m, column n
    diff = np.subtract.outer(pos, pos).ravel()
    order = np.argsort(diff, kind="stable")
    diff, flat = diff[order], scores.ravel()[order]
    starts = np.flatnonzero(np.r_[True, diff[1:] != diff[:-1]])
    spread = np.maximum.reduceat(flat, starts) - np.minimum.reduceat(flat, starts)
    return float(np.max(spread)) / (np.linalg.norm(q) * np.linalg.norm(k))


# --------------------------------------------------------------------------------------------
# stage 7: judging against the expectations


@dataclasses.dataclass
class _Reading:
    """Everything measured, for the judges: structure, angles and the frequency profile."""

    pos: np.ndarray
    structure: _Structure
    pairing: str
    proportional: bool
    frame: list
    angles: _Angles
    profile: _Profile
    dim: int

    @property
    def width(self) -> int:
        return 2 * len(self.frame)

    @property
    def features(self) -> np.ndarray:
        return np.sort(np.array([f for p in self.frame for f in p]))


def _pair_words(p: str) -> str:
    return {
        "half": "i with i + r/2",
        "interleaved": "2i with 2i + 1",
        "neither": "non-standard",
        "none": "none",
    }[p]


def _half_order(d: int) -> np.ndarray:
    """Output order of interleaved pairs written half-split (DeepSeek-V3 ``rope_interleave``)."""
    return np.concatenate([np.arange(0, d, 2), np.arange(1, d, 2)])


def _judge_structure(rd: _Reading, exp: _Expected, pairing_note: str) -> list[Finding]:
    out: list[Finding] = []
    d, r, feats = rd.dim, rd.width, rd.features
    if rd.angles.direction == -1:
        out.append(
            _error(
                "the rotation goes the wrong way (by -m*theta): scores depend on query minus key "
                "position instead of key minus query, which does not match pretrained weights. "
                "Flip the sign of sin (x1*cos - x2*sin, x2*cos + x1*sin), or use "
                "rotate_half(x) = cat(-x2, x1) rather than cat(x2, -x1)."
            )
        )
    if rd.pairing == "neither":
        out.append(
            _error(
                f"features are paired in no standard way ({pairing_note}); half-split pairs i with "
                "i + r/2, interleaved pairs 2i with 2i + 1."
            )
        )
    elif exp.pairing is not None and rd.pairing != exp.pairing:
        fix = (
            "interleaved_to_half_weights"
            if exp.pairing == "half"
            else "half_to_interleaved_weights"
        )
        out.append(
            _error(
                f"fn pairs features {rd.pairing} ({_pair_words(rd.pairing)}) but "
                f"pairing='{exp.pairing}' was expected ({_pair_words(exp.pairing)}). Switch the "
                f"implementation to pairing='{exp.pairing}', or permute the q/k projection rows "
                f"with refimpl.{fix}."
            )
        )
    start = exp.rotary_offset  # an expected spec may rotate the slice [o, o + rotary_dim)
    if feats[0] != start and rd.pairing != "neither":
        where = "the first" if start == 0 else f"features {start}.."
        out.append(
            _error(
                f"the rotated features are {feats[0]}..{feats[-1]}, not {where} {r}: partial "
                "rotary rotates the FIRST rotary_dim features and passes the rest through "
                "(x[..., :rotary_dim] rotated, x[..., rotary_dim:] unchanged)"
                + (f", here from rotary_offset={start}." if start else ".")
            )
        )
    if exp.rotary_dim is not None and r != exp.rotary_dim:
        out.append(
            _error(
                f"fn rotates {r} features but rotary_dim={exp.rotary_dim} was expected: check "
                "partial_rotary_factor / rotary_dim (rotary_dim = int(head_dim * "
                "partial_rotary_factor))."
            )
        )
    elif exp.rotary_dim is None and r < d:
        out.append(
            _error(
                f"fn rotates only {r} of the {d} features (partial rotary) and passes the rest "
                f"through; the full width was expected. If that is intended, pass rotary_dim={r} "
                "(or an expected spec with it)."
            )
        )
    return out + _judge_output_order(rd, exp) + _judge_positions(rd)


def _judge_positions(rd: _Reading) -> list[Finding]:
    """Findings on how positions enter: an offset, a magnitude that changes with position."""
    out: list[Finding] = []
    delta = rd.angles.delta
    if delta != 0.0:
        what = (
            "positions are counted from 1"
            if delta == 1.0
            else f"every position is shifted by {delta:g}"
        )
        out.append(
            _error(
                f"position m is rotated as m + {delta:g} ({what}); the token at position 0 must be "
                "left unrotated. Pass position_ids starting at 0 (arange(seq) + cache offset)."
            )
        )
    if rd.angles.trend is not None:
        t = rd.angles.trend
        out.append(
            _error(
                "the magnitude of each pair changes with position (xPos-like scaling: per-pair "
                f"factor exp({np.min(t):.3g}..{np.max(t):.3g} x m)), so fn is not a rotation: "
                "scores of one function applied to q and k then depend on m + n. xPos scales q by "
                "zeta^(m/scale_base) and k by its inverse (refimpl.apply_xpos)."
            )
        )
    return out


def _judge_output_order(rd: _Reading, exp: _Expected) -> list[Finding]:
    perm = rd.structure.permutation
    d = rd.dim
    is_half = perm is not None and np.array_equal(perm, _half_order(d))
    if exp.output_order == "half" and not is_half:
        return [
            _error(
                "the expected spec writes the rotated interleaved pairs in half-split order "
                "(output_order='half', DeepSeek-V3 rope_interleave) but fn "
                + ("keeps the input order" if perm is None else "uses another output order")
                + "."
            )
        ]
    if perm is None or (exp.output_order == "half" and is_half):
        return []
    words = (
        "interleaved pairs in, half-split order out (DeepSeek-V3 rope_interleave, MLA)"
        if is_half
        else f"output j holds feature {list(perm[:6])}{', ...' if d > 6 else ''}"
    )
    text = (
        f"the outputs are a fixed permutation of a correct RoPE's ({words}); "
        "report.output_permutation p gives fn(x)[..., j] = rope(x)[..., p[j]]. Scores are "
        "unchanged when q and k get the same permutation."
    )
    if exp.output_order == "same":
        return [_error(text + " The expected spec keeps the input order.")]
    return [_note(text)]


def _expected_theta(exp: _Expected, rd: _Reading) -> np.ndarray | None:
    """The frequencies the verdict requires, from the expectation (None when blind)."""
    if exp.inv_freq is not None:
        return exp.inv_freq
    if exp.base is None:
        return None
    r = exp.rotary_dim or rd.width
    if rd.proportional:
        live = rd.angles.theta > 0
        return np.where(live, _geometric(rd.dim, exp.base, np.arange(len(live))), 0.0)
    return _geometric(r, exp.base, np.arange(r // 2))


def _judge_frequencies(rd: _Reading, exp: _Expected, ref) -> tuple[list, bool]:
    """Frequency findings and whether the expectation's frequencies matched."""
    out: list[Finding] = []
    prof, theta, r = rd.profile, rd.angles.theta, rd.width
    matched = False
    if ref is not None and len(ref) == len(theta) and np.all(theta >= 0):
        rel = np.abs(theta - ref) / np.maximum(np.abs(ref), _ZERO_FREQ)
        matched = bool(np.max(rel) <= _FREQ_MISMATCH)
        if not matched:
            out.append(
                _error(
                    _explain_frequencies(rd, exp)
                    + f" (largest relative frequency error {np.max(rel):.2g}, "
                    f"pair {np.argmax(rel)})."
                )
            )
    elif ref is not None and np.all(theta >= 0):
        out.append(
            _note(
                f"the expected configuration has {len(ref)} frequencies but fn rotates "
                f"{len(theta)} pairs; frequencies were not compared pair by pair."
            )
        )
    if np.any(theta < 0):
        out.append(
            _error(
                "some pairs rotate in the opposite direction to others, or faster than pi "
                "rad/token (their angles alias): RoPE frequencies are base**(-2i/d), at most "
                "1 rad/token and decreasing with i. A positive exponent base**(+2i/d) gives the "
                "reciprocals."
            )
        )
    elif len(theta) > 1 and np.ptp(theta) <= _SAME_FREQ * np.max(theta):
        out.append(
            _error(
                f"every pair has the same frequency {theta[0]:.6g} rad/token, so positions are "
                "only seen modulo one wavelength: the exponent 2i/d is the same for all pairs (an "
                "integer division such as arange(0, d, 2) // d?). Use a float division."
            )
        )
    elif prof.scaling == "unknown" and not matched:
        words = (
            "the frequencies do not decrease geometrically with the pair index"
            + (f" (largest log-residual {prof.resid:.2g})" if np.isfinite(prof.resid) else "")
            + " and match no known scaling family"
        )
        if ref is None:
            out.append(
                _error(
                    words + _per_pair_words(theta, r) + ": this is not a RoPE of any "
                    "base. If these frequencies are intended (learned, LongRoPE "
                    "factors), pass them with expected= to check the rest."
                )
            )
    out += _blind_frequency_notes(rd, exp, ref)
    return out, matched


def _per_pair_words(theta, r) -> str:
    """Per-pair deviations from the geometric profile through the first two pairs."""
    if len(theta) < 3 or theta[0] <= 0 or theta[1] <= 0:
        return ""
    b = float((theta[1] / theta[0]) ** (-r / 2.0))
    if not np.isfinite(b) or b <= 1.0:
        return ""
    lam = _geometric(r, b, np.arange(len(theta)), 0.0, theta[0] ** -1) / theta
    return (
        f"; against base {b:.6g} through the first two pairs, the per-pair factors run "
        f"from {np.min(lam):.4g} to {np.max(lam):.4g}"
    )


def _blind_frequency_notes(rd: _Reading, exp: _Expected, ref) -> list[Finding]:
    out: list[Finding] = []
    prof = rd.profile
    blind = exp.inv_freq is None and exp.base is None
    if prof.geometric and prof.index_origin == 1 and blind:
        out.append(
            _error(
                "the pair index is counted from 1 (theta_i = b^(-2(i+1)/d)): the 1 rad/token pair "
                "is missing. Use i = 0 .. d/2-1, i.e. arange(0, d, 2) / d in the exponent."
            )
        )
    if prof.geometric and blind and prof.base is not None:
        for c in _COMMON_BASES:
            if c != prof.base and abs(prof.base**2 / c - 1.0) < 1e-3:
                out.append(
                    _note(
                        f"the base {prof.base:g} is sqrt({c:g}); if {c:g} was meant, the exponent "
                        "uses i/d instead of 2i/d (pass base= to make this a failure)."
                    )
                )
                break
    if prof.scaling == "freq_factors" and blind:
        lam = prof.params["factors"]
        out.append(_note(
            f"the frequencies are those of base {prof.base:g} divided by per-pair factors from "
            f"{np.min(lam):.4g} to {np.max(lam):.4g}, never decreasing with the pair index "
            "(LongRoPE's short/long factors, GGUF's rope_freqs): a consistent profile, but only "
            "the factors themselves can judge it (pass expected=)."))  # fmt: skip
    zeros = int(np.sum(rd.angles.theta == 0))
    if rd.proportional:
        out.append(
            _note(
                f"proportional RoPE: rotate_half across all {rd.dim} features with "
                f"{len(rd.frame) - zeros} pairs rotating at b^(-2i/{rd.dim}) and {zeros} pairs at "
                "frequency 0 (Gemma 4's partial rotary; not a rotation of the first features)."
            )
        )
    elif zeros:
        out.append(_note(f"{zeros} pair(s) have frequency 0 (never rotate)."))
    return out


def _explain_frequencies(rd: _Reading, exp: _Expected) -> str:
    """Plain words for a frequency mismatch."""
    prof, b0, r, d = rd.profile, exp.base, rd.width, rd.dim
    b_fit, o_fit = prof.base_fit, prof.origin_fit
    if prof.geometric and b0 is not None and exp.inv_freq is not None:
        if abs(b_fit / b0 - 1.0) < 2e-3 and abs(o_fit) < _ORIGIN_TOL and prof.scaling == "none":
            return (
                f"the frequencies are the unscaled ones of base {b0:g}, but the expected "
                f"configuration (rope_type {exp.rope_type!r}) scales them: the scaling method "
                "was not applied. Use its frequencies (refimpl.ROPE_SCALINGS or "
                "refimpl.rope_from_config(config).inv_freq)"
            )
    if prof.geometric and b0 is not None:
        if prof.index_origin == 1 and abs(b_fit / b0 - 1.0) < 2e-3:
            return (
                "the pair index is counted from 1 (theta_i = b^(-2(i+1)/d)): the 1 rad/token pair "
                "is missing and 1/b is added. Use i = 0 .. d/2-1 (arange(0, d, 2) / d)"
            )
        if prof.scaling in ("linear", "proportional") and prof.params:
            f = prof.params["factor"]
            return (
                f"the frequencies are those of base {prof.base:.6g} divided by {f:.6g} "
                "(position interpolation by that factor)"
            )
        if prof.index_origin == 0:
            return _explain_base(prof.base, b0, r, d)
    ratio = rd.angles.theta / np.where(exp_theta := _expected_theta(exp, rd), exp_theta, 1.0)
    return (
        f"the frequencies differ from the expected ones (ratio measured/expected from "
        f"{np.min(ratio):.4g} to {np.max(ratio):.4g}); check the scaling method and its "
        "parameters (factor, original_max_position, beta_fast/beta_slow, low/high_freq_factor)"
    )


def _explain_base(b_fit: float, b0: float, r: int, d: int) -> str:
    if r != d and abs(math.log(b_fit) / math.log(b0) - r / d) < 2e-3:
        return (
            f"the exponent's denominator is the head dim {d}, not the rotary width {r} "
            f"(fitted base {b_fit:.6g} = {b0:g}^({r}/{d})). Use 2i/rotary_dim"
        )
    if abs(b_fit / math.sqrt(b0) - 1.0) < 2e-3:
        return (
            f"the frequencies fit base {b_fit:.6g} = sqrt({b0:g}): the exponent uses "
            "i/d (frequencies spread over d features instead of d/2 pairs). Use 2i/d, "
            "i.e. arange(0, d, 2) / d"
        )
    s = (b_fit / b0) ** ((r - 2) / r)
    if any(abs(s / f - 1.0) < 1e-2 for f in _SCALING_FACTORS):
        return (
            f"the frequencies fit base {b_fit:.6g}, not {b0:g}: an NTK base change "
            f"by factor {s:.4g} (base * factor^(r/(r-2))). If NTK scaling is not "
            "intended, check rope_theta / base"
        )
    return f"the frequencies fit base {b_fit:.6g}, not {b0:g}: check rope_theta / base"


def _attention_applied(scale: float, ref: float) -> str:
    def close(a, b):
        return abs(a - b) <= _SCALE_CLOSE * max(abs(b), 1.0)

    if ref == 1.0:
        return "none" if close(scale, 1.0) else "other"
    if close(scale, ref):
        return "once"
    if close(scale, 1.0):
        return "none"
    if close(scale, ref * ref):
        return "twice"
    return "other"


def _judge_attention(rd: _Reading, exp: _Expected, matched_family: bool):
    """``(applied, reference scale, findings)``. With an expected factor the verdict is exact;
    blind, the measured factor is reported with the family parameters consistent with it."""
    scale = rd.angles.scale
    if exp.attention_scaling is not None:
        ref = exp.attention_scaling
        applied = _attention_applied(scale, ref)
        texts = {
            "none": f"the attention scaling {ref:.6g} is missing (norms are kept): multiply cos "
            "and sin by it (transformers folds YaRN's 0.1 ln(s) + 1 into the tables).",
            "twice": f"the attention scaling is applied twice: norms grow by {scale:.6g} = "
            f"{ref:.6g}^2. Apply it once, on cos/sin (scores then scale by its square), not "
            "also on q/k or on the softmax scale.",
            "other": f"fn multiplies the rotated features by {scale:.6g}, expected {ref:.6g}.",
        }
        bad = applied in texts and not (applied == "none" and ref == 1.0)
        return applied, ref, [_error(texts[applied])] if bad else []
    fam = rd.profile.family_scale
    ref = fam if (matched_family and fam is not None) else 1.0
    applied = _attention_applied(scale, ref)
    notes = []
    if applied != ("once" if ref != 1.0 else "none"):
        notes.append(_note(_consistent_scaling(rd.profile, scale, ref)))
    return applied, scale, notes


def _consistent_scaling(prof: _Profile, scale: float, default: float) -> str:
    text = f"fn multiplies the rotated features by {scale:.6g} (measured)"
    if prof.scaling == "yarn":
        s = prof.params.get("factor", 1.0)
        if abs(scale - 1.0) <= _SCALE_CLOSE:
            return (
                text + f"; for YaRN factor {s:g} this is consistent with mscale == "
                f"mscale_all_dim (DeepSeek) or attention_factor = 1, not with the default "
                f"0.1 ln(s) + 1 = {default:.6g}. Pass expected= to judge it."
            )
        return (
            text + f"; the YaRN default for factor {s:g} is {default:.6g}: consistent with "
            f"attention_factor = {scale:.6g}. Pass expected= to judge it."
        )
    return (
        text
        + (f"; the family's default is {default:.6g}" if default != 1.0 else "")
        + (". Pass attention_scaling= or expected= to judge it.")
    )


def _judge_precision(rd, exp_ref_theta, ref_scale, tol, have_errors):
    """``(precision, max_error, deviations, findings)`` against the verdict's frequencies."""
    ang = rd.angles
    ident = rd.profile.theta if rd.profile.theta is not None else None
    precision, detail = _precision(rd.pos, ang, ident if ident is not None else exp_ref_theta)
    verdict_theta = exp_ref_theta if exp_ref_theta is not None else ident
    if verdict_theta is None or len(verdict_theta) != len(ang.theta):
        verdict_theta = np.maximum(ang.theta, 0.0)
    blocks = ang.blocks
    if ang.trend is not None:  # judge the rotation, the trend is its own finding
        damp = np.exp(np.outer(rd.pos, ang.trend))
        blocks = tuple(b / damp for b in blocks)
    max_error, worst, devs = _deviations(rd.pos, blocks, verdict_theta, ref_scale, tol)
    out = []
    if worst > 1.0 and not have_errors:
        out.append(
            _error(
                f"the outputs deviate from the reference by up to {max_error:.2g} ({detail}); the "
                f"errors suggest {precision} arithmetic. " + _precision_fix(precision)
            )
        )
    elif worst > 1.0 and precision not in ("float64", "float32", "undetermined"):
        out.append(
            _error(
                f"precision: the errors suggest {precision} arithmetic ({detail}). "
                + _precision_fix(precision)
            )
        )
    return precision, max_error, devs, out


# --------------------------------------------------------------------------------------------
# composing the stages


def _failed_report(findings, d, tol, pos, pairing="none", rotation_error=float("nan"), perm=None):
    return RopeReport(
        ok=False,
        findings=findings,
        pairing=pairing,
        direction=0,
        base=None,
        inv_freq=np.zeros(0),
        index_origin=None,
        scaling="unknown",
        scaling_params={},
        attention_scaling=float("nan"),
        attention_scaling_applied="other",
        position_offset=float("nan"),
        rotary_dim=0,
        rotated_features=np.zeros(0, dtype=int),
        precision="undetermined",
        max_error=float("inf"),
        relative_position_error=float("nan"),
        deviations=[],
        rotation_error=rotation_error,
        dim=d,
        tolerance=tol,
        output_permutation=perm,
        positions=pos,
    )


def _analyse(pos, R, exp: _Expected, d: int, tol: float, floor: float, findings: list):
    """Stages 3-7 on per-position matrices ``R`` (P, d, d); returns the report."""
    st = _read_structure(R, floor)
    pairing, note, proportional = _classify_pairing(st.pairs, d)
    errors = [f for f in findings if f.severity == ERROR]
    notes = [f for f in findings if f.severity != ERROR]
    if st.odd:
        errors.append(
            _error(
                f"features {st.odd[:6]} are mixed with several others: fn is not a rotation of "
                "feature pairs (a common cause: rotate_half used with interleaved cos/sin or the "
                "reverse, so the two members of a pair get different angles)."
            )
        )
    if not st.pairs:
        errors.append(_error("fn rotates no feature at all (every position gives the identity)."))
        return _failed_report(errors + notes, d, tol, pos, perm=st.permutation)
    zeros_expected = exp.inv_freq is not None and np.any(exp.inv_freq == 0)
    frame = _frame(st.pairs, pairing, proportional, d, zeros_expected)
    ang, stop, struct_err = _read_angles(pos, st.R, frame, st.passthrough)
    if ang is None:
        return _failed_report(
            errors + stop + notes, d, tol, pos, pairing, struct_err, st.permutation
        )
    rd = _Reading(
        pos,
        st,
        pairing,
        proportional or bool(zeros_expected),
        frame,
        ang,
        _fit_profile(ang.theta, 2 * len(frame) if not proportional else d, exp.base),
        d,
    )
    ref = _expected_theta(exp, rd)
    freq, matched = _judge_frequencies(rd, exp, ref)
    family = rd.profile.scaling not in ("none", "unknown", "linear", "ntk", "proportional")
    applied, ref_scale, att = _judge_attention(rd, exp, family)
    for f in _judge_structure(rd, exp, note) + freq + att:
        (errors if f.severity == ERROR else notes).append(f)
    verdict_theta = ref if (ref is not None and len(ref) == len(ang.theta)) else None
    precision, max_error, devs, prec = _judge_precision(
        rd, verdict_theta, ref_scale, tol, bool(errors)
    )
    errors += prec
    base, scaling, params = _reported_profile(rd, exp, matched)
    origin = 0 if matched else rd.profile.index_origin  # the expectation counts pairs from 0
    ok = not errors
    if ok:
        what = f"{pairing} pairing, base {_fmt(base)}"
        if scaling != "none":
            what += f", {scaling} scaling {params}" if params else f", {scaling} scaling"
        notes.insert(
            0,
            _note(
                f"fn is a correct RoPE ({what}, {rd.width} of {d} features rotated) within the "
                f"tolerance; precision class {precision}."
            ),
        )
    return _report(
        rd, tol, ok=ok, findings=errors + notes, base=base, scaling=scaling,
        scaling_params=params, index_origin=origin, attention_scaling_applied=applied,
        precision=precision, max_error=max_error, deviations=devs,
    )  # fmt: skip


def _report(rd: _Reading, tol: float, **verdict) -> RopeReport:
    """The report: the measured fields of ``rd`` and the judged ones in ``verdict``."""
    ang, st = rd.angles, rd.structure
    mag_err = float(np.max(np.abs(ang.mag - ang.scale))) / ang.scale
    return RopeReport(
        pairing=rd.pairing, direction=ang.direction, inv_freq=ang.theta.copy(),
        attention_scaling=ang.scale, position_offset=ang.delta, rotary_dim=rd.width,
        rotated_features=rd.features,
        relative_position_error=_relative_position_error(rd.pos, st.R),
        rotation_error=max(ang.struct_err, mag_err), dim=rd.dim, tolerance=tol,
        output_permutation=st.permutation, positions=rd.pos, **verdict,
    )  # fmt: skip


def _reported_profile(rd: _Reading, exp: _Expected, matched: bool):
    """``(base, scaling, params)`` for the report: the expectation's when it matched (so a
    passing report never contradicts it), else what the fit identified."""
    prof = rd.profile
    if matched:
        rtype = exp.rope_type if exp.rope_type not in (None, "default") else None
        base = exp.base if exp.base is not None else prof.base
        if rtype is not None:
            return base, rtype, dict(exp.params)
        if prof.scaling in ("none", "unknown"):
            return base, ("proportional" if rd.proportional else "none"), {}
        return base, prof.scaling, prof.params
    return prof.base, prof.scaling, prof.params


def _probe_positions(positions, d: int) -> np.ndarray:
    if positions is None:
        large = _LARGE_POSITIONS if d <= _LARGE_POSITIONS_MAX_DIM else ()
        return np.array(_DEFAULT_POSITIONS + large, float)
    pos = np.unique(as_positions(positions, maximum=MAX_PROBE_POSITION))
    if not (np.any(pos == 0) and np.any(pos == 1)):
        raise ValueError("positions must include 0 and 1 (frequencies are read from them)")
    return pos


def check_rope(
    fn: Callable,
    *,
    dim: int,
    base: float | None = None,
    pairing: str | None = None,
    expected=None,
    positions: Sequence[float] | None = None,
    rotary_dim: int | None = None,
    attention_scaling: float | None = None,
    tolerance: float = DEFAULT_TOLERANCE,
    seq_len: int | None = None,
    backend: str = "auto",
) -> RopeReport:
    r"""Run a RoPE implementation as a black box and report what it does and what is wrong.

    Parameters
    ----------
    fn : callable
        ``fn(x, positions) -> rotated x`` with ``x`` of shape ``(seq, dim)`` (float64) and
        ``positions`` of shape ``(seq,)`` (int64). NumPy arrays are passed first; if that
        raises and torch is installed, torch tensors are passed instead (``backend="auto"``;
        torch is imported so that a ``torch.py`` in the working directory cannot shadow it).
    dim : int
        Feature width of ``x`` (the head dimension), even, at most :data:`MAX_CHECK_DIM`.
    base : float, optional
        Expected base :math:`b`; the verdict then requires the frequencies to be
        :math:`b^{-2i/r}` (or the scaled ones of ``expected``).
    pairing : {"half", "interleaved"}, optional
        Expected pairing.
    expected : RopeSpec, dict or path, optional
        Expected configuration: a :class:`refimpl.config.RopeSpec` (any object with
        ``inv_freq``, ``pairing``, ``rotary_dim`` and ``attention_scaling``; ``base``,
        ``rope_type``, ``params`` and ``output_order`` are read when present), or a model
        config passed to :func:`refimpl.config.rope_from_config`.
    positions : sequence of int, optional
        Positions to probe (at most ``MAX_PROBE_POSITION`` = 2**31 in magnitude); they must
        include 0 and 1. Default: 0..8, powers of two up to 4096, and 8192..32768 unless
        ``dim`` exceeds 256.
    rotary_dim : int, optional
        Expected number of rotated features (the first ``rotary_dim``). When neither it nor
        ``expected`` is given, the full width is expected: a partial rotation is a finding.
    attention_scaling : float, optional
        Expected factor on the rotated features (YaRN's ``0.1 ln s + 1``, LongRoPE's). Without
        it (and without ``expected``) the measured factor is reported, not judged.
    tolerance : float, default :data:`DEFAULT_TOLERANCE`
        Allowed deviation per radian of angle: at position ``m`` a pair may deviate from the
        reference by ``tolerance * (1 + |m theta_i|)``.
    seq_len : int, optional
        Passed to ``rope_from_config`` when ``expected`` is a config (dynamic, longrope);
        refused otherwise.
    backend : {"auto", "numpy", "torch"}, default "auto"

    Returns
    -------
    RopeReport
        ``report.ok`` is the verdict; ``str(report)`` a readable summary with findings.

    Notes
    -----
    The map :math:`x \mapsto f(x, m)` of a RoPE is linear, :math:`f(x, m) = R_m x`; feeding the
    identity rows at position ``m`` returns :math:`R_m^\top` (book equation ``eq:check-probe``).
    The stages of the module docstring then read the pairs (undoing a fixed output
    permutation), each pair's angle :math:`\varphi_i(m) = \operatorname{atan2}(R_{ba},
    R_{aa})` and magnitude, unwrap :math:`\varphi_i(m) - \varphi_i(0) = m\theta_i` over
    doubling ``m``, fit :math:`\log\theta_i = -\tfrac{2(i+o)}{r}\log b` (``eq:check-fit``)
    continuously, and match scaling families. A function that fails at some positions (a
    short cos/sin cache) is probed where it answers, and the report says so. The cost is
    about ``len(positions) * dim**2`` floats (one matrix per position).

    Examples
    --------
    >>> import refimpl
    >>> rep = check_rope(lambda x, p: refimpl.apply_rope(x, p, base=10000.0), dim=8)
    >>> rep.ok, rep.pairing, rep.base, rep.index_origin
    (True, 'half', 10000.0, 0)
    >>> bad = check_rope(lambda x, p: refimpl.apply_rope(x, p + 1), dim=8, base=10000.0)
    >>> bad.ok, bad.position_offset
    (False, 1.0)
    """
    d = check_dim(dim, maximum=MAX_CHECK_DIM)
    tol = check_positive(tolerance, "tolerance")
    exp = _read_expected(expected, d, base, pairing, rotary_dim, attention_scaling, seq_len)
    pos = _probe_positions(positions, d)
    call = _Caller(fn, backend)
    stop = _probe_linearity(call, d)
    if stop:
        return _failed_report(stop, d, tol, pos)
    pos, R, notes = _read_matrices(call, pos, d, explicit=positions is not None)
    return _analyse(pos, R, exp, d, tol, _COUPLING_TOL, notes)


def check_rope_arrays(
    positions,
    x,
    y,
    *,
    dim: int,
    base: float | None = None,
    pairing: str | None = None,
    expected=None,
    rotary_dim: int | None = None,
    attention_scaling: float | None = None,
    tolerance: float = DEFAULT_TOLERANCE,
) -> RopeReport:
    r"""Judge recorded input and output rows of a RoPE implementation, as :func:`check_rope`.

    Parameters
    ----------
    positions : array_like, shape (n,)
        Position of each row.
    x, y : array_like, shape (n, dim)
        Input rows and the implementation's output rows. Rows at the same position are
        stacked; a position with at least ``dim`` linearly independent input rows gives its
        matrix :math:`R_m` by least squares (:math:`y = x R_m^\top`); positions with fewer
        are skipped (with a note). Positions 0 and 1 are required.
    dim, base, pairing, expected, rotary_dim, attention_scaling, tolerance
        As for :func:`check_rope`.

    Returns
    -------
    RopeReport
        The same stages and report as :func:`check_rope`. Linearity is judged from the
        least-squares residual (so only at positions with more than ``dim`` rows); the
        row-index probe needs a callable and is not run.

    Examples
    --------
    >>> import numpy as np, refimpl
    >>> pos = np.repeat([0, 1, 2, 4, 8, 100], 8)
    >>> x = np.random.default_rng(0).standard_normal((len(pos), 8))
    >>> rep = check_rope_arrays(pos, x, refimpl.apply_rope(x, pos), dim=8)
    >>> rep.ok, rep.base
    (True, 10000.0)
    """
    d = check_dim(dim, maximum=MAX_CHECK_DIM)
    tol = check_positive(tolerance, "tolerance")
    exp = _read_expected(expected, d, base, pairing, rotary_dim, attention_scaling, None)
    pos, R, lin_err, noise, notes = _matrices_from_arrays(positions, x, y, d)
    if lin_err > _LINEARITY_TOL:
        text = (
            f"the outputs are not a linear function of the inputs at a fixed position "
            f"(least-squares residual {lin_err:.2g} of the largest output): a RoPE "
            "multiplies each pair by a rotation."
        )
        return _failed_report([_error(text), *notes], d, tol, pos)
    return _analyse(pos, R, exp, d, tol, max(_COUPLING_TOL, noise), notes)
