"""Composing the stages: :func:`check_rope` and :func:`check_rope_arrays`."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from .._checks import as_positions, check_dim, check_positive
from ._base import (
    _COUPLING_TOL,
    _DEFAULT_POSITIONS,
    _LARGE_POSITIONS,
    _LARGE_POSITIONS_MAX_DIM,
    _LINEARITY_TOL,
    DEFAULT_TOLERANCE,
    ERROR,
    MAX_CHECK_DIM,
    MAX_PROBE_POSITION,
    _error,
    _note,
)
from .angles import _read_angles
from .expected import _Expected, _read_expected
from .fit import _fit_profile
from .judge import (
    _expected_theta,
    _judge_attention,
    _judge_frequencies,
    _judge_precision,
    _judge_structure,
    _Reading,
)
from .precision import _relative_position_error
from .probe import _Caller, _matrices_from_arrays, _probe_linearity, _read_matrices
from .report import RopeReport, _fmt
from .structure import _classify_pairing, _frame, _read_structure

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
    precision, stages, max_error, devs, prec = _judge_precision(
        rd, verdict_theta, ref_scale, tol, bool(errors), exp.offset or 0.0
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
        precision=precision, max_error=max_error, deviations=devs, precision_stages=stages,
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
    dim: int | None = None,
    base: float | None = None,
    pairing: str | None = None,
    expected=None,
    positions: Sequence[float] | None = None,
    rotary_dim: int | None = None,
    attention_scaling: float | None = None,
    tolerance: float = DEFAULT_TOLERANCE,
    seq_len: int | None = None,
    backend: str = "auto",
    output_order: str | None = None,
    offsets: float | None = None,
    config=None,
    calls=None,
    policy: str = "transformers",
    max_model_len: int | None = None,
    table_length: int | None = None,
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
    output_order : {"same", "half"}, optional
        Declared output order: ``"half"`` for interleaved pairs written half-split
        (DeepSeek-V3's ``rope_interleave``). Undeclared, a fixed output permutation is a note
        when nothing is expected and an error otherwise.
    offsets : float, optional
        Declared position offset: ``fn`` is meant to rotate position ``m`` as ``m + offsets``
        (a decode path that adds the cache length). Undeclared, any offset is an error.
    config : dict or path, optional
        With ``calls``: the model config each call is judged against.
    calls : sequence of (positions, seq_len), optional
        A scripted sequence of calls ``fn(x, positions, seq_len)`` (``fn`` then takes the
        sequence length): each call is made once, with identity rows at its first, last and
        power-of-two positions, and judged against ``rope_from_config(config, seq_len=L)``
        for the length ``L`` the ``policy`` gives it. A call that fails is explained by the
        length whose frequencies it used: a fixed length at every call (vLLM's
        ``max_model_len``, llama.cpp's allocated context), an earlier call's (a stale cache),
        or the original context (a switch that never happens). Returns a
        :class:`~refimpl.check.drivers.CallReport`; ``dim`` comes from the config.
    policy : {"transformers", "per_call", "vllm", "table_length"}, default "transformers"
        How the length of each call's frequencies is decided (:data:`POLICIES`):
        transformers' (dynamic NTK recomputed when a call is longer than the cached length,
        reset below the original context; LongRoPE's long factors beyond it), each call's own
        length, vLLM's fixed ``max_model_len``, or the length of a cos/sin table that grows
        from ``table_length`` rows to the longest call and never shrinks.
    max_model_len : int, optional
        With ``policy="vllm"`` (and only then, where it is required): the served length.
    table_length : int, optional
        With ``policy="table_length"`` (required there): the table's initial rows (llama.cpp's
        allocated context).

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
    if calls is not None or config is not None:
        if calls is None or config is None:
            raise TypeError("config and calls must be given together (a scripted call sequence)")
        from .drivers import check_calls

        return check_calls(
            fn, config=config, calls=calls, policy=policy, tolerance=tolerance,
            max_model_len=max_model_len, table_length=table_length,
        )  # fmt: skip
    if max_model_len is not None or table_length is not None:
        raise TypeError("max_model_len and table_length are used only with config= and calls=")
    if dim is None:
        raise TypeError("check_rope needs dim= (the feature width of x)")
    d = check_dim(dim, maximum=MAX_CHECK_DIM)
    tol = check_positive(tolerance, "tolerance")
    exp = _read_expected(
        expected, d, base, pairing, rotary_dim, attention_scaling, seq_len, output_order, offsets
    )
    pos = _probe_positions(positions, d)
    call = _Caller(fn, backend)
    stop = _probe_linearity(call, d)
    if stop:
        return _failed_report(stop, d, tol, pos)
    pos, R, notes = _read_matrices(call, pos, d, explicit=positions is not None)
    return _analyse(pos, R, exp, d, tol, _COUPLING_TOL, notes)


def _row_offsets(positions, offsets):
    """``(positions, scalar offset)``: per-row offsets are added to the positions (and judged
    as no offset); a number is a declared offset."""
    if offsets is None or np.ndim(offsets) == 0:
        return positions, offsets
    pos = as_positions(positions, maximum=MAX_PROBE_POSITION)
    off = as_positions(offsets, "offsets", maximum=MAX_PROBE_POSITION)
    if off.shape != pos.shape:
        raise ValueError(
            f"offsets must be a number or have one entry per row ({pos.shape[0]}), got "
            f"{off.shape[0]}"
        )
    return pos + off, 0.0


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
    output_order: str | None = None,
    offsets=None,
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
    dim, base, pairing, expected, rotary_dim, attention_scaling, tolerance, output_order
        As for :func:`check_rope` (the same declarations, judged by the same rule).
    offsets : float or array_like of shape (n,), optional
        Declared offset: a number as for :func:`check_rope`; one value per row when the rows
        were rotated at ``positions + offsets`` (per-sequence cache offsets), which is then
        judged as no offset.

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
    positions, scalar = _row_offsets(positions, offsets)
    exp = _read_expected(
        expected, d, base, pairing, rotary_dim, attention_scaling, None, output_order, scalar
    )
    pos, R, lin_err, noise, notes = _matrices_from_arrays(positions, x, y, d)
    if lin_err > _LINEARITY_TOL:
        text = (
            f"the outputs are not a linear function of the inputs at a fixed position "
            f"(least-squares residual {lin_err:.2g} of the largest output): a RoPE "
            "multiplies each pair by a rotation."
        )
        return _failed_report([_error(text), *notes], d, tol, pos)
    return _analyse(pos, R, exp, d, tol, max(_COUPLING_TOL, noise), notes)
