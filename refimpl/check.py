"""Black-box checker for rotary position embeddings: hand it ``fn(x, positions)`` and it says
what the function does (pairing, direction, frequencies, base, index origin, scaling family,
attention scaling, position offset, partial width, precision) and what is wrong with it.

The checker only calls ``fn``. It feeds identity rows to read the linear map :math:`R_m` at
each probed position (``x = I``, ``positions = [m] * d`` gives ``out = R_m^T``), reads the
2x2 blocks of every feature pair, unwraps their angles over doubling positions to recover each
frequency, and fits the frequency profile. See the book's part "Check your implementation".
"""

from __future__ import annotations

import dataclasses
import inspect
import math
from collections.abc import Callable, Sequence

import numpy as np

from ._checks import as_positions, check_base, check_dim, check_pairing, check_positive
from .numerics import round_to

__all__ = ["DEFAULT_TOLERANCE", "PRECISIONS", "RopeReport", "check_rope"]

#: Default verdict tolerance: the deviation allowed at position m for pair i is
#: ``tolerance * (1 + |m theta_i|)``. 2**-20 is four times the float32 unit roundoff per
#: radian, so a float32 pipeline (float32 inv_freq, positions and angles) passes, and
#: float16/bfloat16 angles or tables (errors of 2**-11 to 2**-8 per radian) fail.
DEFAULT_TOLERANCE = 2.0**-20

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

# Positions probed by default: small ones (to read frequencies unambiguously), powers of two
# (to unwrap angles and refine frequencies), and large ones (to expose precision loss).
_DEFAULT_POSITIONS = (
    0,
    1,
    2,
    3,
    5,
    7,
    8,
    16,
    32,
    64,
    128,
    256,
    257,
    512,
    1000,
    1023,
    1024,
    2048,
    4095,
    4096,
)
_LARGE_POSITIONS = (8192, 12345, 16384, 30001, 32768)
_COMMON_BASES = (10000.0, 500000.0, 1000000.0, 100000.0, 50000.0, 5000000.0, 1000.0, 100.0)
_SCALING_FACTORS = (2.0, 4.0, 8.0, 16.0, 32.0, 40.0, 64.0, 128.0)
_ORIGINAL_MAX = (2048, 4096, 8192, 16384, 32768)
_TWO_PI = 2.0 * np.pi


@dataclasses.dataclass
class RopeReport:
    r"""What :func:`check_rope` found. ``str(report)`` is a readable summary.

    Attributes
    ----------
    ok : bool
        The verdict: the function matches the expected configuration (``base``, ``pairing``,
        ``expected``, ``rotary_dim`` when given; otherwise "a correct RoPE of some base and
        pairing") within ``tolerance``.
    findings : list of str
        Plain sentences, problems first, each with a suggested fix.
    pairing : str
        ``"half"``, ``"interleaved"``, ``"neither"`` (described in the findings) or ``"none"``
        (no feature is rotated).
    direction : int
        ``+1`` for the reference rotation by :math:`+m\theta` (scores depend on key minus
        query position), ``-1`` for the opposite sign, ``0`` if undetermined.
    base : float or None
        The base the frequencies fit (:math:`\theta_i = b^{-2(i+o)/r}`), snapped to a round
        value when within the fit's accuracy; None when the profile is not geometric.
    inv_freq : numpy.ndarray, shape (rotary_dim/2,)
        The frequency (rad/token) the function uses for each pair, measured.
    index_origin : int or None
        ``0`` (reference) or ``1`` (pair index counted from 1); None when neither fits.
    scaling : str
        ``"none"``, or the matched scaling family (``"linear"``, ``"ntk"``, ``"yarn"``,
        ``"llama3"``, ...), or ``"unknown"`` for a non-geometric profile nothing matched.
    scaling_params : dict
        Parameters of the matched family (e.g. ``{"factor": 8.0}``).
    attention_scaling : float
        Norm ratio :math:`\|f(x, m)\| / \|x\|` on the rotated features.
    attention_scaling_applied : str
        ``"none"``, ``"once"``, ``"twice"`` or ``"other"`` relative to the expected factor.
    position_offset : float
        :math:`\delta` such that position ``m`` is rotated as ``m + delta`` (0 reference; 1
        when positions are counted from 1).
    rotary_dim : int
        Number of features rotated.
    rotated_features : numpy.ndarray of int
        Which features are rotated.
    precision : str
        One of :data:`PRECISIONS`: the arithmetic the errors suggest.
    max_error : float
        Largest deviation of a 2x2 pair block (Frobenius norm / sqrt 2, i.e. the output error
        for a unit input) from the reference rotation at the probed positions.
    rotation_error : float
        Largest deviation of the measured map from a (scaled) rotation of feature pairs,
        relative to the scale: unequal diagonal entries of a pair block, off-diagonal entries
        that are not opposite, coupling outside the pairs, and pair magnitudes that differ from
        the common scale (so :math:`R^\top R \neq s^2 I`). 0 for an exact rotation.
    relative_position_error : float
        Largest change of the score :math:`\langle f(q,m), f(k,m+r)\rangle` over the probed
        ``m`` at fixed offsets ``r``, relative to :math:`\|q\|\|k\|` (0 for an exact RoPE).
    deviations : list of tuple
        The largest deviations as ``(position, pair, error)``.
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

    def __str__(self) -> str:
        verdict = "PASS" if self.ok else "FAIL"
        f = self.inv_freq
        freq = (
            f"{len(f)} pairs, theta_0 = {f[0]:.6g}, theta_last = {f[-1]:.6g} rad/token"
            if len(f)
            else "none"
        )
        direction = {1: "+m*theta (reference)", -1: "-m*theta (flipped)", 0: "undetermined"}
        lines = [
            f"RoPE check: {verdict}",
            f"  pairing            {self.pairing}",
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
        lines += [f"  - {s}" for s in self.findings] or ["  - none"]
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
            import torch
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise TypeError("backend='torch' needs torch installed") from exc
        out = self.fn(torch.from_numpy(x), torch.from_numpy(pos.astype(np.int64)))
        return out.detach().cpu().double().numpy()

    def __call__(self, x: np.ndarray, pos: np.ndarray) -> np.ndarray:
        ipos = pos.astype(np.int64) if np.all(pos == np.round(pos)) else pos
        if self.backend == "torch":
            out = self._torch_call(x, ipos)
        elif self.backend == "numpy":
            out = self.fn(x.copy(), ipos.copy())
        else:
            try:
                out = self.fn(x.copy(), ipos.copy())
            except Exception as exc:
                try:
                    import torch  # noqa: F401
                except ImportError:
                    raise exc from None
                try:
                    out = self._torch_call(x, ipos)
                except Exception:
                    raise exc from None  # the NumPy call's error is the informative one
                self.backend = "torch"
            else:
                self.backend = "numpy"
        if hasattr(out, "detach"):  # a torch tensor from a NumPy call
            out = out.detach().cpu().double().numpy()
        out = np.asarray(out, dtype=np.float64)
        if out.shape != x.shape:
            raise ValueError(
                f"fn must return an array of the input's shape {x.shape} (seq, dim), "
                f"got {out.shape}"
            )
        if not np.all(np.isfinite(out)):
            raise ValueError("fn returned NaN or inf for finite input")
        return out


def _matrices(call: _Caller, positions: np.ndarray, dim: int) -> np.ndarray:
    """``R[k]`` is the (dim, dim) map at ``positions[k]``: out row j = R e_j, so R = out.T."""
    eye = np.eye(dim)
    x = np.tile(eye, (len(positions), 1))  # (P*d, d)
    pos = np.repeat(positions, dim)  # (P*d,)
    out = call(x, pos).reshape(len(positions), dim, dim)  # (P, d_in, d_out)
    return np.transpose(out, (0, 2, 1))  # (P, d_out, d_in)


# --------------------------------------------------------------------------------------------
# low-precision rounding


def _round_to(x, fmt: str) -> np.ndarray:
    """Round to float32/float16/bfloat16 (nearest even, refimpl.numerics) and back to float64."""
    return np.asarray(round_to(x, fmt), dtype=np.float64)


# --------------------------------------------------------------------------------------------
# structure: pairs, pass-through features, rotation blocks


def _find_pairs(R: np.ndarray):
    """Partner of every feature from the off-diagonal coupling summed over positions."""
    dim = R.shape[-1]
    A = np.abs(R).sum(axis=0)  # (d, d)
    off = A.copy()
    np.fill_diagonal(off, 0.0)
    total = A.sum(axis=0) + 1e-300
    partner = np.argmax(off, axis=0)  # strongest coupling of input feature j
    coupled = off[partner, np.arange(dim)] > 1e-9 * total
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


def _classify_pairing(pairs, dim):
    if not pairs:
        return "none", ""
    a = np.array([p[0] for p in pairs])
    b = np.array([p[1] for p in pairs])
    feats = np.sort(np.concatenate([a, b]))
    contiguous = np.array_equal(feats, np.arange(feats[0], feats[0] + len(feats)))
    off = b - a
    h = len(pairs)
    if contiguous and np.all(off == h) and np.array_equal(a, np.arange(a[0], a[0] + h)):
        return "half", ""
    if contiguous and np.all(off == 1) and np.array_equal(a, np.arange(a[0], a[0] + 2 * h, 2)):
        return "interleaved", ""
    shown = ", ".join(f"({p}, {q})" for p, q in pairs[:4])
    return "neither", f"pairs {shown}{', ...' if len(pairs) > 4 else ''}"


def _blocks(R: np.ndarray, pairs):
    a = np.array([p[0] for p in pairs])
    b = np.array([p[1] for p in pairs])
    raa, rba, rab, rbb = R[:, a, a], R[:, b, a], R[:, a, b], R[:, b, b]  # each (P, h)
    return raa, rba, rab, rbb


# --------------------------------------------------------------------------------------------
# frequencies


def _wrap(phi):
    return (np.asarray(phi) + np.pi) % _TWO_PI - np.pi


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
        cand = (dphi[k] + _TWO_PI * turns) / m
        theta = np.where(alive, cand, theta)
    return theta


def _is_power_of_two(m: float) -> bool:
    mant, _ = math.frexp(m)
    return mant == 0.5


def _fit_geometric(theta, r):
    """Least-squares fit of log theta_i = -(2 (i + o) / r) log b; returns (b, o, max residual)."""
    h = len(theta)
    if h < 2 or np.any(theta <= 0):
        return None, None, np.inf
    i = np.arange(h, dtype=np.float64)
    y = np.log(theta)
    beta, alpha = np.polyfit(i, y, 1)
    if beta >= 0:
        return None, None, np.inf
    b = math.exp(-beta * r / 2.0)
    o = alpha / beta
    resid = float(np.max(np.abs(y - (alpha + beta * i))))
    return b, o, resid


def _snap_base(b, o, theta, r, prefer=None):
    """A round base (``prefer``, a common one, or b with few digits) that explains the measured
    frequencies as well as the least-squares fit does; else the fit ``b`` itself."""
    i = np.arange(len(theta), dtype=np.float64) + o

    def misfit(c):
        return float(np.max(np.abs(theta / c ** (-2.0 * i / r) - 1.0)))  # [eq:check-fit]

    allowed = max(1e-9, 3.0 * misfit(b))
    cands = ([prefer] if prefer else []) + list(_COMMON_BASES)
    cands += [float(f"{b:.{k}g}") for k in range(1, 8)]
    for c in cands:
        if misfit(c) <= allowed:
            return c
    return b


def _scaling_candidates(dim: int, base: float):
    """Yield (family, params, inv_freq, attention_scaling) from refimpl.scaling, if present."""
    try:
        from . import scaling  # floor 3; lands on its own branch
    except ImportError:
        return
    registry = getattr(scaling, "ROPE_SCALINGS", {})
    for family, fn in registry.items():
        if family in ("default", "dynamic", "longrope"):
            continue  # default is the geometric case; dynamic and longrope need run-time input
        try:
            accepted = set(inspect.signature(fn).parameters)
        except (TypeError, ValueError):  # pragma: no cover
            continue
        for factor in _SCALING_FACTORS:
            origs = _ORIGINAL_MAX if "original_max_position" in accepted else (None,)
            for orig in origs:
                kw = {"dim": dim, "base": base, "factor": factor}
                if orig is not None:
                    kw["original_max_position"] = orig
                try:
                    res = fn(**{k: v for k, v in kw.items() if k in accepted})
                except (TypeError, ValueError):
                    continue
                params = {k: v for k, v in kw.items() if k not in ("dim", "base") and k in accepted}
                yield family, params, np.asarray(res.inv_freq, float), float(res.attention_scaling)


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


def _read_expected(expected, dim, base, pairing, rotary_dim, attention_scaling, seq_len):
    inv = None
    rtype = None
    if expected is not None:
        if isinstance(expected, (dict, str)) or hasattr(expected, "__fspath__"):
            from .config import rope_from_config  # floor 4

            kw = {} if seq_len is None else {"seq_len": seq_len}
            expected = rope_from_config(expected, **kw)
        for attr in ("inv_freq", "pairing", "rotary_dim"):
            if not hasattr(expected, attr):
                raise TypeError(
                    "expected must be a RopeSpec (from refimpl.rope_from_config), a config dict "
                    f"or a config path; the object given has no attribute {attr!r}"
                )
        inv = np.asarray(expected.inv_freq, dtype=np.float64)
        pairing = pairing or expected.pairing
        rotary_dim = rotary_dim or int(expected.rotary_dim)
        if attention_scaling is None:
            attention_scaling = float(getattr(expected, "attention_scaling", 1.0))
        if base is None and getattr(expected, "base", None) is not None:
            base = float(expected.base)
        rtype = getattr(expected, "rope_type", None)
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
    return _Expected(inv, base, pairing, rotary_dim, attention_scaling, rtype)


# --------------------------------------------------------------------------------------------
# the checker


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
        raises and torch is installed, torch tensors are passed instead (``backend="auto"``).
    dim : int
        Feature width of ``x`` (the head dimension), even.
    base : float, optional
        Expected base :math:`b`; the verdict then requires the frequencies to be
        :math:`b^{-2i/r}` (or the scaled ones of ``expected``).
    pairing : {"half", "interleaved"}, optional
        Expected pairing.
    expected : RopeSpec, dict or path, optional
        Expected configuration: a :class:`refimpl.config.RopeSpec` (any object with
        ``inv_freq``, ``pairing``, ``rotary_dim`` and ``attention_scaling``), or a model config
        passed to :func:`refimpl.config.rope_from_config`.
    positions : sequence of int, optional
        Positions to probe; they must include 0 and 1. Default: 0..8, powers of two up to 4096,
        and 8192..32768 unless ``dim`` is large.
    rotary_dim : int, optional
        Expected number of rotated features (the first ``rotary_dim``).
    attention_scaling : float, optional
        Expected factor on the rotated features (YaRN's ``0.1 ln s + 1``, LongRoPE's).
    tolerance : float, default :data:`DEFAULT_TOLERANCE`
        Allowed deviation per radian of angle: at position ``m`` a pair may deviate from the
        reference by ``tolerance * (1 + |m theta_i|)``.
    seq_len : int, optional
        Passed to ``rope_from_config`` when ``expected`` is a config (dynamic, longrope).
    backend : {"auto", "numpy", "torch"}, default "auto"

    Returns
    -------
    RopeReport
        ``report.ok`` is the verdict; ``str(report)`` a readable summary with findings.

    Notes
    -----
    The map :math:`x \mapsto f(x, m)` of a RoPE is linear, :math:`f(x, m) = R_m x`; feeding the
    identity rows at position ``m`` returns :math:`R_m^\top`. The checker verifies linearity,
    reads each pair's 2x2 block, its angle :math:`\varphi_i(m) = \operatorname{atan2}(R_{ba},
    R_{aa})` and magnitude, and unwraps :math:`\varphi_i(m) - \varphi_i(0) = m\theta_i` over
    doubling ``m``. The frequencies are fitted as :math:`\log\theta_i = -\tfrac{2(i+o)}{r}\log b`
    (book equation ``eq:check-fit``); the precision class follows from how the angle error
    grows with :math:`m\theta_i` and from the magnitude error (book page "The RoPE checker").

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
    d = check_dim(dim)
    tol = check_positive(tolerance, "tolerance")
    exp = _read_expected(expected, d, base, pairing, rotary_dim, attention_scaling, seq_len)
    if positions is None:
        pos = np.array(_DEFAULT_POSITIONS + (_LARGE_POSITIONS if d <= 256 else ()), float)
    else:
        pos = np.unique(as_positions(positions))
        if not (np.any(pos == 0) and np.any(pos == 1)):
            raise ValueError("positions must include 0 and 1 (frequencies are read from them)")
    call = _Caller(fn, backend)
    findings_bad: list[str] = []
    findings_info: list[str] = []

    # 1. linearity and use of positions -------------------------------------------------
    rng = np.random.default_rng(0)
    xa, xb = rng.standard_normal((2, 4, d))
    p4 = np.array([0.0, 1.0, 5.0, 100.0])
    fa, fb, fab = call(xa, p4), call(xb, p4), call(0.5 * xa - 2.0 * xb, p4)
    lin_err = np.max(np.abs(fab - (0.5 * fa - 2.0 * fb))) / (np.max(np.abs(fab)) + 1e-300)
    if lin_err > 2e-2:
        findings_bad.append(
            f"fn is not linear in x (relative deviation {lin_err:.2g}): a RoPE multiplies each "
            "pair by a rotation; look for a bias, a normalisation or a nonlinearity."
        )
        return _failed_report(findings_bad, d, tol)
    row = np.tile(rng.standard_normal(d), (4, 1))
    same = call(row, np.full(4, 3.0))
    if np.max(np.abs(same - same[0])) > 1e-6 * np.max(np.abs(same)):
        findings_bad.append(
            "fn ignores the positions it is given: the same vector at the same position gives "
            "different outputs in different rows, so it rotates by the row index (arange(seq)). "
            "Use the positions argument (position_ids) for the angles."
        )
        return _failed_report(findings_bad, d, tol)

    # 2. structure ---------------------------------------------------------------------
    try:
        R = _matrices(call, pos, d)  # (P, d, d)
    except (IndexError, ValueError) as exc:
        if positions is not None or pos.max() <= 4096:
            raise
        # e.g. a cos/sin cache precomputed for a shorter context: probe within it
        pos = pos[pos < 4096]
        R = _matrices(call, pos, d)
        findings_info.append(
            f"fn failed at positions of 4096 and above ({type(exc).__name__}: {exc}); only "
            "positions below 4096 were probed. Pass positions= to choose them."
        )
    pairs, passthrough, odd = _find_pairs(R)
    pairing_found, pairing_note = _classify_pairing(pairs, d)
    if odd:
        findings_bad.append(
            f"features {odd[:6]} are mixed with several others: fn is not a rotation of feature "
            "pairs (a common cause: rotate_half used with interleaved cos/sin or the reverse, so "
            "the two members of a pair get different angles)."
        )
    if not pairs:
        findings_bad.append("fn rotates no feature at all (every position gives the identity).")
        return _failed_report(findings_bad, d, tol)
    rot_feats = np.sort(np.array([f for p in pairs for f in p]))
    r = len(rot_feats)
    h = len(pairs)
    raa, rba, rab, rbb = _blocks(R, pairs)
    # rotation check: blocks s [[c, -s], [s, c]]
    block_resid = np.maximum(np.abs(raa - rbb), np.abs(rab + rba))
    mag = np.hypot(raa, rba)  # (P, h)
    scale = float(np.median(mag))
    a_idx = np.array([p[0] for p in pairs])
    b_idx = np.array([p[1] for p in pairs])
    allowed = np.zeros((d, d), dtype=bool)
    for u, v in ((a_idx, a_idx), (a_idx, b_idx), (b_idx, a_idx), (b_idx, b_idx)):
        allowed[u, v] = True
    allowed[passthrough, passthrough] = True
    leak = float(np.max(np.abs(R[:, ~allowed]))) if np.any(~allowed) else 0.0
    struct_err = max(float(np.max(block_resid)), leak) / max(scale, 1e-300)
    if np.max(np.abs(raa + rbb)) < 1e-6 * scale and np.max(np.abs(rab - rba)) < 1e-6 * scale:
        findings_bad.append(
            "each pair is reflected, not rotated (blocks [[c, s], [s, -c]]): the sign of one "
            "output member is flipped."
        )
        return _failed_report(findings_bad, d, tol, pairing_found, struct_err)
    if struct_err > 5e-2:
        findings_bad.append(
            f"the pair blocks are not rotations (deviation {struct_err:.2g} of the scale): the "
            "two members of a pair do not see the same angle. Check that cos/sin are laid out "
            "with the same pairing as rotate_half."
        )
        return _failed_report(findings_bad, d, tol, pairing_found, struct_err)

    # 3. angles, direction, frequencies, offset ---------------------------------------
    phi = np.arctan2(rba, raa)  # (P, h)
    k0 = int(np.flatnonzero(pos == 0)[0])
    dphi = _wrap(phi - phi[k0])
    k1 = int(np.flatnonzero(pos == 1)[0])
    sig = dphi[k1][np.abs(dphi[k1]) > 1e-9]
    direction = int(np.sign(np.sum(np.sign(sig)))) if sig.size else 0
    if direction == -1:
        phi, dphi = -phi, -dphi
    theta = _unwrap_frequencies(pos, dphi)
    zero_freq = np.abs(theta) < 1e-12
    if np.any(theta < -1e-12):
        findings_bad.append(
            "some pairs rotate in the opposite direction to others, or faster than pi rad/token "
            "(their angles alias): RoPE frequencies are base**(-2i/d), at most 1 rad/token and "
            "decreasing with i. A positive exponent base**(+2i/d) gives the reciprocals."
        )
    elif h > 1 and np.ptp(theta) <= 1e-9 * np.max(np.abs(theta)):
        findings_bad.append(
            f"every pair has the same frequency {theta[0]:.6g} rad/token, so positions are only "
            "seen modulo one wavelength: the exponent 2i/d is the same for all pairs (an integer "
            "division such as arange(0, d, 2) // d?). Use a float division."
        )
    theta_pos = np.where(theta > 0, theta, np.nan)
    # offset: phi(0) = delta * theta
    good = np.isfinite(theta_pos) & (np.abs(theta_pos) * 4 < np.pi)
    if np.any(good):
        w = theta_pos[good]
        delta = float(np.sum(w * phi[k0][good]) / np.sum(w * w))
    else:
        delta = 0.0
    delta_r = round(delta)
    if abs(delta - delta_r) < 1e-3:
        delta = float(delta_r)

    # 4. frequency profile ------------------------------------------------------------
    tf = theta_pos if np.all(np.isfinite(theta_pos)) else None
    b_fit, o_fit, resid = (None, None, np.inf) if tf is None else _fit_geometric(tf, r)
    geometric = resid < 5e-3
    index_origin = None
    scaling_name, scaling_params = "none", {}
    b_rep = None
    lin_factor = None
    if geometric:
        o_round = round(o_fit)
        if abs(o_fit - o_round) < 2e-2 and o_round in (0, 1):
            index_origin = int(o_round)
            b_snap = _snap_base(b_fit, index_origin, tf, r, exp.base)
        else:
            # theta_i = b^(-2i/r) / s: linear interpolation of positions by factor s
            lin_factor = math.exp(o_fit * 2.0 * math.log(b_fit) / r)
            scaling_name = "linear"
            scaling_params = {"factor": float(f"{lin_factor:.4g}")}
            index_origin = 0
            b_snap = _snap_base(b_fit, 0, tf * float(scaling_params["factor"]), r, exp.base)
        b_rep = b_snap
        if lin_factor is None and index_origin == 0:
            ntk = _match_ntk(b_rep, r, exp.base)
            if ntk is not None:
                scaling_name, scaling_params = "ntk", ntk

    # 5. reference frequencies for the verdict ----------------------------------------
    r_exp = exp.rotary_dim
    ref_theta = None
    ref_scale = exp.attention_scaling
    if exp.inv_freq is not None:
        ref_theta = exp.inv_freq
    elif exp.base is not None:
        ref_theta = _exact_inv_freq(r_exp or r, exp.base)
    family_scale = None
    fam_theta_found = None
    if not geometric and tf is not None:
        match = _match_scaling(tf, r, exp.base)
        if match is not None:
            scaling_name, scaling_params, fam_theta, family_scale, b_rep = match
            fam_theta_found = fam_theta
            if ref_theta is None:
                ref_theta = fam_theta
        else:
            scaling_name = "unknown"
            words = (
                "the frequencies do not decrease geometrically with the pair index "
                + (f"(largest log-residual {resid:.2g}) " if np.isfinite(resid) else "")
                + "and match no known scaling family"
            )
            if exp.inv_freq is None and exp.base is None:
                findings_bad.append(
                    words + ": this is not a RoPE of any base. If these frequencies are intended "
                    "(learned, LongRoPE factors), pass them with expected= to check the rest."
                )
            else:
                findings_info.append(words + ".")
    if ref_theta is None and geometric:
        if index_origin == 0 and lin_factor is None:
            ref_theta = _exact_inv_freq(r, b_rep)
        elif lin_factor is not None:
            ref_theta = _exact_inv_freq(r, b_rep) / float(scaling_params["factor"])
        else:
            ref_theta = _exact_inv_freq(r, b_rep)  # the reference convention is 0-based
    # the parameters as identified (bugs included): the reference for the precision class
    ident_theta = tf
    if geometric:
        o_used = index_origin if index_origin is not None else 0
        ident_theta = b_rep ** (-(2.0 * (np.arange(h) + o_used)) / r)  # [eq:check-fit]
        if lin_factor is not None:
            ident_theta = ident_theta / float(scaling_params["factor"])
    elif scaling_name not in ("none", "unknown"):
        ident_theta = fam_theta_found
    if ref_scale is None:
        ref_scale = family_scale if family_scale is not None else 1.0

    # 6. structural verdicts ----------------------------------------------------------
    if direction == -1:
        findings_bad.append(
            "the rotation goes the wrong way (by -m*theta): scores depend on query minus key "
            "position instead of key minus query, which does not match pretrained weights. "
            "Flip the sign of sin (x1*cos - x2*sin, x2*cos + x1*sin), or use "
            "rotate_half(x) = cat(-x2, x1) rather than cat(x2, -x1)."
        )
    if pairing_found == "neither":
        findings_bad.append(
            f"features are paired in no standard way ({pairing_note}); half-split pairs i with "
            "i + r/2, interleaved pairs 2i with 2i + 1."
        )
    elif exp.pairing is not None and pairing_found != exp.pairing:
        fix = (
            "permute the q/k projection rows with refimpl.interleaved_to_half_weights"
            if exp.pairing == "half"
            else "permute the q/k projection rows with refimpl.half_to_interleaved_weights"
        )
        findings_bad.append(
            f"fn pairs features {pairing_found} ({_pair_words(pairing_found)}) but "
            f"pairing='{exp.pairing}' was expected ({_pair_words(exp.pairing)}). Switch the "
            f"implementation to pairing='{exp.pairing}', or {fix}."
        )
    if rot_feats[0] != 0 and pairing_found != "neither":
        findings_bad.append(
            f"the rotated features are {rot_feats[0]}..{rot_feats[-1]}, not the first {r}: "
            "partial rotary rotates the FIRST rotary_dim features and passes the rest "
            "through (x[..., :rotary_dim] rotated, x[..., rotary_dim:] unchanged)."
        )
    if r_exp is not None and r != r_exp:
        findings_bad.append(
            f"fn rotates {r} features but rotary_dim={r_exp} was expected: check "
            "partial_rotary_factor / rotary_dim (rotary_dim = int(head_dim * "
            "partial_rotary_factor))."
        )
    if delta != 0.0:
        what = (
            "positions are counted from 1"
            if delta == 1.0
            else f"every position is shifted by {delta:g}"
        )
        findings_bad.append(
            f"position m is rotated as m + {delta:g} ({what}); the token at position 0 must be "
            "left unrotated. Pass position_ids starting at 0 (arange(seq) + cache offset)."
        )

    # 7. frequency verdicts -----------------------------------------------------------
    if tf is not None and ref_theta is not None and len(ref_theta) == h:
        rel = np.abs(tf / ref_theta - 1.0)
        if np.max(rel) > 1e-2:
            findings_bad.append(
                _explain_frequencies(tf, ref_theta, r, d, exp, b_fit, o_fit, geometric)
                + f" (largest relative frequency error {np.max(rel):.2g}, pair {np.argmax(rel)})."
            )
    elif ref_theta is not None and tf is not None and len(ref_theta) != h:
        findings_info.append(
            f"the expected configuration has {len(ref_theta)} frequencies but fn rotates {h} "
            "pairs; frequencies were not compared pair by pair."
        )
    if geometric and index_origin == 1 and exp.inv_freq is None and exp.base is None:
        findings_bad.append(
            "the pair index is counted from 1 (theta_i = b^(-2(i+1)/d)): the 1 rad/token pair "
            "is missing. Use i = 0 .. d/2-1, i.e. arange(0, d, 2) / d in the exponent."
        )
    if geometric and exp.base is None and exp.inv_freq is None and b_rep is not None:
        for c in _COMMON_BASES:
            if c != b_rep and abs(b_rep**2 / c - 1.0) < 1e-3:
                findings_info.append(
                    f"the base {b_rep:g} is sqrt({c:g}); if {c:g} was meant, the exponent uses "
                    "i/d instead of 2i/d (pass base= to make this a failure)."
                )
                break
    if np.any(zero_freq):
        findings_info.append(f"{int(np.sum(zero_freq))} pair(s) have frequency 0 (never rotate).")

    # 8. attention scaling --------------------------------------------------------------
    applied = _attention_applied(scale, ref_scale)
    if applied == "none" and ref_scale != 1.0:
        findings_bad.append(
            f"the attention scaling {ref_scale:.6g} is missing (norms are kept): multiply cos and "
            "sin by it (transformers folds YaRN's 0.1 ln(s) + 1 into the tables)."
        )
    elif applied == "twice":
        findings_bad.append(
            f"the attention scaling is applied twice: norms grow by {scale:.6g} = "
            f"{ref_scale:.6g}^2. Apply it once, on cos/sin (scores then scale by its square), "
            "not also on q/k or on the softmax scale."
        )
    elif applied == "other":
        findings_bad.append(
            f"fn multiplies the rotated features by {scale:.6g}, expected {ref_scale:.6g}."
        )
    if passthrough and scale != 1.0:
        pt = np.array(passthrough)
        pscale = float(np.median(np.abs(R[:, pt, pt])))
        if abs(pscale - 1.0) > 1e-6:
            findings_info.append(
                f"the pass-through features are multiplied by {pscale:.6g} "
                "(transformers leaves them unscaled)."
            )

    # 9. precision ----------------------------------------------------------------------
    precision, prec_detail = _precision(pos, phi, mag, scale, tf, ident_theta, delta)
    verdict_theta = ref_theta if ref_theta is not None and len(ref_theta) == h else tf
    if verdict_theta is None:
        verdict_theta = np.where(np.isfinite(theta_pos), theta_pos, 0.0)
    max_error, worst, deviations = _deviations(
        pos, raa, rba, rab, rbb, verdict_theta, ref_scale, tol
    )
    if worst > 1.0 and not findings_bad:
        findings_bad.append(
            f"the outputs deviate from the reference by up to {max_error:.2g} "
            f"({prec_detail}); the errors suggest {precision} arithmetic. "
            + _precision_fix(precision)
        )
    elif precision not in ("float64", "float32", "undetermined"):
        if worst > 1.0:
            findings_bad.append(
                f"precision: the errors suggest {precision} arithmetic ({prec_detail}). "
                + _precision_fix(precision)
            )
    rp_err = _relative_position_error(call, d, pos)

    ok = not findings_bad
    if ok:
        what = f"{pairing_found} pairing, base {_fmt(b_rep)}"
        if scaling_name != "none":
            what += f", {scaling_name} scaling {scaling_params}"
        findings_info.insert(
            0,
            f"fn is a correct RoPE ({what}, {r} of {d} features rotated) within the tolerance; "
            f"precision class {precision}.",
        )
    return RopeReport(
        ok=ok,
        findings=findings_bad + findings_info,
        pairing=pairing_found,
        direction=direction,
        base=b_rep,
        inv_freq=tf if tf is not None else np.nan_to_num(theta_pos),
        index_origin=index_origin,
        scaling=scaling_name,
        scaling_params=scaling_params,
        attention_scaling=scale,
        attention_scaling_applied=applied,
        position_offset=delta,
        rotary_dim=r,
        rotated_features=rot_feats,
        precision=precision,
        max_error=max_error,
        relative_position_error=rp_err,
        deviations=deviations,
        rotation_error=max(struct_err, float(np.max(np.abs(mag - scale))) / scale),
        dim=d,
        tolerance=tol,
    )


def _failed_report(findings, d, tol, pairing="none", rotation_error=float("nan")) -> RopeReport:
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
    )


def _pair_words(p: str) -> str:
    return {
        "half": "i with i + r/2",
        "interleaved": "2i with 2i + 1",
        "neither": "non-standard",
        "none": "none",
    }[p]


def _exact_inv_freq(r: int, base: float) -> np.ndarray:
    i = np.arange(r // 2, dtype=np.float64)
    return base ** (-(2.0 * i) / r)  # [eq:check-fit] with o = 0


def _match_scaling(theta, r, base):
    """Best scaling family for a non-geometric profile, or None."""
    bases = (base,) if base is not None else _COMMON_BASES
    best = None
    for b in bases:
        for family, params, inv, att in _scaling_candidates(r, b):
            if inv.shape != theta.shape:
                continue
            err = float(np.max(np.abs(theta / inv - 1.0)))
            if best is None or err < best[0]:
                best = (err, family, params, inv, att, b)
    if best is None or best[0] > 1e-3:
        return None
    err, family, params, inv, att, b = best
    return family, params, inv, att, b


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
        if b <= c:
            continue
        s = (b / c) ** ((r - 2) / r)  # inverse of the NTK base change
        for f in _SCALING_FACTORS:
            if abs(s / f - 1.0) < 1e-4:
                return {"factor": f, "original_base": c}
    return None


def _explain_frequencies(tf, ref, r, d, exp, b_fit, o_fit, geometric) -> str:
    """Plain words for a frequency mismatch."""
    b0 = exp.base
    if (
        geometric
        and b0 is not None
        and b_fit is not None
        and exp.inv_freq is not None
        and abs(b_fit / b0 - 1.0) < 2e-3
        and abs(o_fit) < 2e-2
    ):
        return (
            f"the frequencies are the unscaled ones of base {b0:g}, but the expected "
            f"configuration (rope_type {exp.rope_type!r}) scales them: the scaling method was "
            "not applied. Use its frequencies (refimpl.ROPE_SCALINGS or "
            "refimpl.rope_from_config(config).inv_freq)"
        )
    if geometric and b0 is not None and b_fit is not None:
        o = round(o_fit)
        if abs(o_fit - 1.0) < 2e-2 and abs(b_fit / b0 - 1.0) < 2e-3:
            return (
                "the pair index is counted from 1 (theta_i = b^(-2(i+1)/d)): the 1 rad/token pair "
                "is missing and 1/b is added. Use i = 0 .. d/2-1 (arange(0, d, 2) / d)"
            )
        if abs(o_fit) < 2e-2:
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
        if o != 0:
            s = float(np.median(ref / tf))
            return (
                f"the frequencies are those of base {b_fit:.6g} divided by {s:.4g} "
                "(position interpolation by that factor?)"
            )
    ratio = tf / ref
    return (
        f"the frequencies differ from the expected ones (ratio measured/expected from "
        f"{np.min(ratio):.4g} to {np.max(ratio):.4g}); check the scaling method and its "
        "parameters (factor, original_max_position, beta_fast/beta_slow, low/high_freq_factor)"
    )


def _attention_applied(scale: float, ref: float) -> str:
    close = lambda a, b: abs(a - b) <= 1e-3 * max(abs(b), 1.0)  # noqa: E731
    if ref == 1.0:
        return "none" if close(scale, 1.0) else "other"
    if close(scale, ref):
        return "once"
    if close(scale, 1.0):
        return "none"
    if close(scale, ref * ref):
        return "twice"
    return "other"


def _precision(pos, phi, mag, scale, tf, ref_theta, delta):
    """Precision class from the angle and magnitude errors (see the checker page)."""
    if tf is None or ref_theta is None:
        return "undetermined", "frequencies could not be read"
    ang = np.multiply.outer(pos + delta, ref_theta)  # (P, h) exact angles
    e_ang = np.abs(_wrap(phi - ang))
    e_mag = float(np.max(np.abs(mag - scale))) / max(scale, 1e-300)
    big = np.abs(ang) >= 100.0
    if not np.any(big):
        big = np.abs(ang) >= 1.0
    g = float(np.max(e_ang[big] / np.abs(ang[big]))) if np.any(big) else 0.0
    small = np.abs(ang) < 1.0
    floor = float(np.max(e_ang[small])) if np.any(small) else 0.0
    detail = (
        f"angle error up to {g:.2g} per radian of angle, magnitude error {e_mag:.2g}, "
        f"angle error at small angles {floor:.2g}"
    )
    # frequencies rounded to a low-precision format before the product: the measured
    # frequencies equal the roundings and the angles are exact multiples of them
    e_tf = np.abs(_wrap(phi - np.multiply.outer(pos + delta, tf)))
    g_tf = float(np.max(e_tf[big] / np.abs(ang[big]))) if np.any(big) else 0.0
    for fmt in ("bfloat16", "float16"):
        if g_tf > 1e-6:
            break
        rounded = _round_to(ref_theta, fmt)
        moved = np.abs(rounded / ref_theta - 1.0) > 1e-5
        if np.sum(moved) >= max(1, len(ref_theta) // 4):
            hit = np.abs(tf[moved] / rounded[moved] - 1.0) < 1e-5
            if np.mean(hit) > 0.8:
                return f"{fmt} inv_freq", detail + f"; frequencies equal their {fmt} roundings"
    if e_mag > 1e-3:
        return "bfloat16 tables", detail
    if g > 1e-3:
        return "bfloat16 angles", detail
    if e_mag > 1e-4:
        return "float16 tables", detail
    if g > 1e-4:
        return "float16 angles", detail
    if g > 1e-11 or e_mag > 1e-12 or floor > 1e-12:
        if g > 1e-2:
            return "worse than bfloat16", detail
        return "float32", detail
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


def _deviations(pos, raa, rba, rab, rbb, theta, s, tol):
    ang = np.multiply.outer(pos, theta)
    c, sn = s * np.cos(ang), s * np.sin(ang)
    err = np.sqrt(((raa - c) ** 2 + (rba - sn) ** 2 + (rab + sn) ** 2 + (rbb - c) ** 2) / 2.0)
    scaled = err / (tol * (1.0 + np.abs(ang)))
    max_error = float(np.max(err))
    worst = float(np.max(scaled))
    order = np.argsort(scaled, axis=None)[::-1][:5]
    devs = []
    for flat in order:
        k, i = np.unravel_index(flat, err.shape)
        if scaled[k, i] > 1.0:
            devs.append((float(pos[k]), int(i), float(err[k, i])))
    return max_error, worst, devs


def _relative_position_error(call, d, pos) -> float:
    rng = np.random.default_rng(1)
    q, k = rng.standard_normal((2, d))
    ms = pos[(pos <= 4096) & (pos + 100.0 <= pos.max())]
    if ms.size < 2:
        ms = pos
    worst = 0.0
    for offset in (0.0, 1.0, 7.0, 100.0):
        x = np.concatenate([np.tile(q, (len(ms), 1)), np.tile(k, (len(ms), 1))])
        p = np.concatenate([ms, ms + offset])
        out = call(x, p)
        scores = np.sum(out[: len(ms)] * out[len(ms) :], axis=1)
        worst = max(worst, float(np.max(np.abs(scores - scores[0]))))
    return worst / (np.linalg.norm(q) * np.linalg.norm(k))
