"""Bad input across the public API: every hostile argument is refused with a ValueError or a
TypeError whose message names the argument; valid edge values give the loop oracle's result.

``CALLS`` holds one valid call per public function and the kind of each argument it checks;
``HOSTILE`` holds, per kind, values that are wrong for *every* argument of that kind (wrong
types, bools where numbers belong, complex, strings, object and ragged arrays, NaN, inf,
non-integers, negatives, sizes beyond the limits of ``refimpl._checks``). Each (function,
argument) pair is tried with every fixed hostile value of its kind and with values drawn by
hypothesis. ``COVERAGE`` names, for every entry of ``refimpl.__all__``, where it is covered,
so that a new public name cannot be added without a line here.
"""

from __future__ import annotations

import inspect
import math
from dataclasses import dataclass, field

import numpy as np
import oracles
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import refimpl
from refimpl import _checks
from refimpl._checks import EXACT_INTEGER, MAX_DIM, MAX_DPS, MAX_POSITION

# ------------------------------------------------------------------------------ hostile values
_INT_WRONG_TYPE = [True, False, np.True_, 8.0, 8.5, "8", 8j, [8], np.nan, np.inf, b"8", object()]
_REAL_WRONG_TYPE = [True, np.False_, "1.5", 1.5j, [1.5], None, b"1", object()]
_NONFINITE = [np.nan, np.inf, -np.inf, float("nan")]
_RAGGED = [[0.0, 1.0], [2.0]]

HOSTILE: dict[str, list] = {
    # a feature dimension: a positive even integer <= MAX_DIM
    "dim": [*_INT_WRONG_TYPE, 0, -2, 7, MAX_DIM + 2, 2**70, -(2**70)],
    # a non-negative integer count
    "count": [*_INT_WRONG_TYPE, -1, -(2**70)],
    # a positive integer
    "pos_int": [*_INT_WRONG_TYPE, 0, -1, -(2**70)],
    # a base: a finite real > 1
    "base": [*_REAL_WRONG_TYPE, *_NONFINITE, 1.0, 0.5, 0.0, -10.0],
    # a finite real > 0
    "positive": [*_REAL_WRONG_TYPE, *_NONFINITE, 0.0, -0.0, -1.0],
    # any finite real
    "real": [*_REAL_WRONG_TYPE, *_NONFINITE],
    # a boolean flag
    "flag": ["no", "True", 1, 0, 1.0, None, [True], np.array([True])],
    # one of a few strings
    "choice": ["no-such-choice", "", 1, None, True, b"half", ["half"]],
    # positions: a 1-D (or scalar) numeric array of finite values below 2**53
    "positions": [
        [np.nan],
        [0.0, np.inf],
        [-np.inf],
        _RAGGED,
        ["a", "b"],
        [1j, 2j],
        np.array([0, 2**53 + 2], dtype=np.int64),
        np.array([-(2**63)], dtype=np.int64),
        np.array([2**64 - 1], dtype=np.uint64),
        [1e300],
        [1e19],
        True,
        np.array(True),
        np.array([0, 1], dtype=object),
        "0",
        None,
    ],
    # frequencies: a non-empty 1-D array of finite positive values
    "inv_freq": [
        [],
        [np.nan],
        [1.0, np.inf],
        [1.0, -0.5],
        [1.0, 0.0],
        [[1.0, 0.5]],
        _RAGGED,
        ["a"],
        [1j],
        np.array([1.0], dtype=object),
        "1.0",
        1.0,
    ],
    # a floating data array of some fixed shape
    "array": [
        _RAGGED,
        [["a", "b"]],
        np.ones((2, 4), dtype=complex),
        np.ones((2, 4), dtype=object),
        "x",
    ],
    # a floating data array where NaN/inf have no meaning
    "finite_array": [np.full((2, 4), np.nan), np.full((2, 4), np.inf)],
}


def _hostile_strategy(kind: str):
    """Hypothesis values wrong for every argument of ``kind``."""
    non_integral = st.floats(allow_nan=True, allow_infinity=True).filter(
        lambda v: not math.isfinite(v) or not float(v).is_integer()
    )
    text = st.text(max_size=5)
    ints = {
        "dim": st.one_of(
            st.integers(max_value=0),
            st.integers(1, 10**6).map(lambda n: 2 * n + 1),
            st.integers(MAX_DIM + 1, 2**80),
        ),
        "count": st.integers(max_value=-1),
        "pos_int": st.integers(max_value=0),
    }
    if kind in ints:
        return st.one_of(ints[kind], non_integral, st.booleans(), text, st.integers().map(float))
    if kind in ("base", "positive", "real"):
        bad = {
            "base": st.floats(max_value=1.0, allow_nan=False),
            "positive": st.floats(max_value=0.0, allow_nan=False),
            "real": st.sampled_from([np.nan, np.inf, -np.inf]),
        }[kind]
        return st.one_of(bad, st.booleans(), text, st.complex_numbers(), st.just(np.nan))
    if kind == "flag":
        return st.one_of(st.integers(), text, st.floats(), st.none())
    if kind == "choice":
        return st.one_of(text.filter(lambda s: s not in _ALL_CHOICES), st.integers(), st.none())
    if kind == "positions":
        finite = st.floats(-1e6, 1e6)
        poison = st.sampled_from([np.nan, np.inf, -np.inf, 2.0**60, -(2.0**54)])
        return st.builds(
            lambda xs, at, bad: np.insert(np.array(xs, dtype=np.float64), at % (len(xs) + 1), bad),
            st.lists(finite, max_size=6),
            st.integers(0, 6),
            poison,
        )
    if kind == "inv_freq":
        return st.builds(
            lambda xs, bad: np.array([*xs, bad]),
            st.lists(st.floats(1e-6, 1.0), max_size=3),
            st.sampled_from([np.nan, np.inf, -1.0, -1e-300, 0.0]),
        )
    return st.sampled_from(HOSTILE[kind])


# Every string some choice argument of the table below accepts.
_ALL_CHOICES = {
    "half", "interleaved", "fast", "accurate", "addition", "correct", "float32", "float64",
    "float16",
    "bfloat16", "shift", "exact", "linear", "log", "blocked",
}  # fmt: skip


# ---------------------------------------------------------------------------------- the calls
@dataclass(frozen=True)
class Call:
    """A valid call ``fn(**kwargs)`` and the kind of each argument it must check."""

    fn: object
    kwargs: dict
    kinds: dict
    # arguments whose message may name them differently (e.g. a shape-derived name)
    aliases: dict = field(default_factory=dict)
    # False where the valid call needs a file this suite does not write (GGUF readers)
    runs: bool = True

    def __call__(self, **override):
        return self.fn(**{**self.kwargs, **override})


X = np.linspace(-1.0, 1.0, 8).reshape(2, 4)
POS2 = [0.0, 3.0]
F2 = [1.0, 0.01]
W = np.array([[0.25, 0.75], [0.5, 0.5]])
D = np.arange(6.0)


def _entry(fn, kwargs, kinds, runs=True, **aliases):
    return Call(fn, kwargs, kinds, aliases, runs)


# check_rope_arrays' valid data: basis vectors at five positions, rotated by the reference
_ARR_POS = np.repeat(np.arange(5.0), 8)
_ARR_X = np.tile(np.eye(8), (5, 1))


def _HALF_OP(x, cos, sin):
    """A correct operator on half-width tables (check_rope_operator's valid call)."""
    h = x.shape[-1] // 2
    return np.concatenate([x[:, :h] * cos - x[:, h:] * sin, x[:, h:] * cos + x[:, :h] * sin], 1)


_SCHEDULE = refimpl.rope_schedule(
    {"model_type": "llama", "hidden_size": 32, "num_attention_heads": 4, "num_hidden_layers": 1}
)


_DCA = refimpl.DualChunkAttention(chunk_size=6, local_size=2)


def _DCA_SCORES(q, k, p):
    """Dual Chunk Attention logits (check_dual_chunk_attention's valid call)."""
    return refimpl.dual_chunk_attention_scores(q, k, p, _DCA).scores


def _SCORES(i, q, k, p):
    spec = _SCHEDULE[i].spec
    return spec.apply(q, p) @ spec.apply(k, p).T / np.sqrt(spec.dim)


CALLS: dict[str, Call] = {
    # absolute (floor 2)
    "integer_encoding": _entry(
        refimpl.integer_encoding,
        dict(num_positions=3, dim=3),
        {"num_positions": "count", "dim": "pos_int"},
    ),
    "normalized_encoding": _entry(
        refimpl.normalized_encoding,
        dict(num_positions=3, dim=3),
        {"num_positions": "count", "dim": "pos_int"},
    ),
    "sinusoidal": _entry(
        refimpl.sinusoidal,
        dict(positions_or_count=3, dim=4),
        {"positions_or_count": "positions", "dim": "dim", "base": "base"},
    ),
    "sinusoidal_shift_matrix": _entry(
        refimpl.sinusoidal_shift_matrix,
        dict(k=2.0, dim=4),
        {"k": "real", "dim": "dim", "base": "base"},
    ),
    # rotary (floor 2)
    "inv_freq": _entry(refimpl.inv_freq, dict(dim=8), {"dim": "dim", "base": "base"}),
    "angles": _entry(
        refimpl.angles,
        dict(positions=POS2, inv_freq=F2),
        {"positions": "positions", "inv_freq": "inv_freq"},
    ),
    "cos_sin": _entry(
        refimpl.cos_sin,
        dict(positions=POS2, dim=4),
        {
            "positions": "positions",
            "dim": "dim",
            "base": "base",
            "method": "choice",
            "inv_freq": "inv_freq",
        },
    ),
    "cos_sin/accurate": _entry(
        refimpl.cos_sin,
        dict(positions=POS2, dim=4, method="accurate"),
        {"positions": "positions", "dim": "dim", "base": "base", "inv_freq": "inv_freq"},
    ),
    "cos_sin/correct": _entry(
        refimpl.cos_sin,
        dict(positions=POS2, dim=4, method="correct"),
        {
            "positions": "positions",
            "dim": "dim",
            "base": "base",
            "inv_freq": "inv_freq",
            "attention_scaling": "real",
        },
    ),
    "ExactFrequencies.power": _entry(
        refimpl.ExactFrequencies.power,
        dict(dim=4, base=100.0, divisors=[1.0, 2.0]),
        {"dim": "dim", "base": "base", "divisors": "inv_freq"},
    ),
    "ExactFrequencies.binary": _entry(
        refimpl.ExactFrequencies.binary, dict(values=F2), {"values": "inv_freq"}
    ),
    "apply_rope": _entry(
        refimpl.apply_rope,
        dict(x=X, positions=POS2),
        {
            "x": "array",
            "positions": "positions",
            "base": "base",
            "inv_freq": "inv_freq",
            "pairing": "choice",
            "table_method": "choice",
        },
    ),
    "apply_rope/correct": _entry(
        refimpl.apply_rope,
        dict(x=X, positions=POS2, table_method="correct"),
        {"positions": "positions", "base": "base", "inv_freq": "inv_freq"},
    ),
    "apply_rope_complex": _entry(
        refimpl.apply_rope_complex,
        dict(x=X, positions=POS2, inv_freq=F2),
        {"x": "array", "positions": "positions", "inv_freq": "inv_freq"},
    ),
    "rotation_matrix": _entry(
        refimpl.rotation_matrix,
        dict(position=2.0, inv_freq=F2),
        {"inv_freq": "inv_freq", "pairing": "choice"},
    ),
    "pair_indices": _entry(refimpl.pair_indices, dict(dim=4), {"dim": "dim", "pairing": "choice"}),
    "pairing_permutation": _entry(refimpl.pairing_permutation, dict(dim=4), {"dim": "dim"}),
    # attention (floor 2)
    "attention_scores": _entry(
        refimpl.attention_scores,
        dict(q=X, k=X),
        {"q": "array", "k": "array", "scale": "positive"},
    ),
    "softmax": _entry(refimpl.softmax, dict(x=X), {"x": "array"}),
    "attention": _entry(
        refimpl.attention,
        dict(q=X, k=X, v=X),
        {
            "q": "array",
            "k": "array",
            "v": "array",
            "causal": "flag",
            "return_weights": "flag",
            "scale": "positive",
        },
    ),
    "attention_entropy": _entry(refimpl.attention_entropy, dict(weights=W), {"weights": "array"}),
    "causal_mask": _entry(
        refimpl.causal_mask, dict(q_len=2, k_len=3), {"q_len": "pos_int", "k_len": "pos_int"}
    ),
    # numerics (floor 3)
    "round_to": _entry(refimpl.round_to, dict(x=[1.0], fmt="float32"), {"fmt": "choice"}),
    "ulp_error": _entry(
        refimpl.ulp_error,
        dict(approx=[1.0], exact=[1.0]),
        {"approx": "array", "exact": "array"},
    ),
    "oracle_cos_sin": _entry(
        refimpl.oracle_cos_sin,
        dict(positions=[3.0], dim=4),
        {
            "positions": "positions",
            "dim": "dim",
            "base": "base",
            "dps": "pos_int",
            "inv_freq": "inv_freq",
        },
    ),
    "transformers_inv_freq_float32": _entry(
        refimpl.transformers_inv_freq_float32, dict(dim=8), {"dim": "dim", "base": "base"}
    ),
    "transformers_float32_forward": _entry(
        refimpl.transformers_float32_forward,
        dict(positions=POS2, inv_freq32=F2),
        {"positions": "positions", "attention_scaling": "positive"},
    ),
    "cos_sin_float64_naive": _entry(
        refimpl.cos_sin_float64_naive,
        dict(positions=POS2, dim=4),
        {"positions": "positions", "dim": "dim", "base": "base"},
    ),
    "cos_sin_transformers_float32": _entry(
        refimpl.cos_sin_transformers_float32,
        dict(positions=POS2, dim=4),
        {"positions": "positions", "dim": "dim", "base": "base", "table_dtype": "choice"},
    ),
    "cos_sin_bf16_angles": _entry(
        refimpl.cos_sin_bf16_angles,
        dict(positions=POS2, dim=4),
        {"positions": "positions", "dim": "dim", "base": "base"},
    ),
    "cos_sin_bf16_inv_freq": _entry(
        refimpl.cos_sin_bf16_inv_freq,
        dict(positions=POS2, dim=4),
        {"positions": "positions", "dim": "dim", "base": "base"},
    ),
    "cos_sin_recurrence": _entry(
        refimpl.cos_sin_recurrence,
        dict(positions=[0, 3], dim=4),
        {"positions": "positions", "dim": "dim", "base": "base", "dtype": "choice"},
    ),
    "pipeline_cos_sin": _entry(
        refimpl.pipeline_cos_sin,
        dict(name="float64-tables", positions=POS2, dim=4),
        {"name": "choice", "positions": "positions", "dim": "dim", "base": "base"},
    ),
    "error_bound": _entry(
        refimpl.error_bound,
        dict(name="float64-tables", positions=POS2, dim=4),
        {"name": "choice", "positions": "positions", "dim": "dim", "base": "base"},
    ),
    "relative_drift": _entry(
        refimpl.relative_drift,
        dict(name="float64-tables", positions=[0, 5], offset=2, q=np.ones(4), k=np.ones(4)),
        {
            "name": "choice",
            "positions": "positions",
            "offset": "real",
            "q": "array",
            "k": "array",
            "base": "base",
            "against": "choice",
            "rotated_dtype": "choice",
        },
    ),
    # xpos (floor 3)
    "xpos_zeta": _entry(refimpl.xpos_zeta, dict(dim=8), {"dim": "dim", "gamma": "positive"}),
    "xpos_scale": _entry(
        refimpl.xpos_scale,
        dict(positions=POS2, dim=4),
        {"positions": "positions", "dim": "dim", "scale_base": "positive", "gamma": "positive"},
    ),
    "apply_xpos": _entry(
        refimpl.apply_xpos,
        dict(q=X, k=X, positions=POS2),
        {
            "q": "array",
            "k": "array",
            "positions": "positions",
            "base": "base",
            "inv_freq": "inv_freq",
            "pairing": "choice",
            "scale_base": "positive",
            "gamma": "positive",
            "scale_offset": "real",
        },
    ),
    # learned (floor 3)
    "apply_rope_per_head": _entry(
        refimpl.apply_rope_per_head,
        dict(x=X[None], positions=POS2, inv_freq=[F2]),
        {"x": "array", "positions": "positions", "pairing": "choice"},
    ),
    "pair_coefficients": _entry(
        refimpl.pair_coefficients,
        dict(q=X, k=X),
        {"q": "array", "k": "array", "pairing": "choice"},
    ),
    "rope_scores": _entry(
        refimpl.rope_scores,
        dict(q=X, k=X, positions=POS2, inv_freq=F2),
        {
            "q": "array",
            "k": "array",
            "positions": "positions",
            "inv_freq": "inv_freq",
            "pairing": "choice",
            "k_positions": "positions",
            "scale": "positive",
        },
    ),
    "rope_scores_grad": _entry(
        refimpl.rope_scores_grad,
        dict(q=X, k=X, positions=POS2, inv_freq=F2),
        {
            "q": "array",
            "k": "array",
            "positions": "positions",
            "inv_freq": "inv_freq",
            "k_positions": "positions",
            "scale": "positive",
        },
    ),
    "relative_profile": _entry(
        refimpl.relative_profile,
        dict(distances=D, inv_freq=F2, a=[1.0, 0.5]),
        {"distances": "positions", "inv_freq": "inv_freq", "a": "array"},
    ),
    "relative_profile_grad": _entry(
        refimpl.relative_profile_grad,
        dict(distances=D, inv_freq=F2, a=[1.0, 0.5]),
        {"distances": "positions", "inv_freq": "inv_freq", "a": "array"},
    ),
    "fit_inv_freq": _entry(
        refimpl.fit_inv_freq,
        dict(distances=D, target=np.cos(0.3 * D), init_inv_freq=[0.2], a=[1.0], steps=3),
        {
            "distances": "positions",
            "target": "array",
            "init_inv_freq": "inv_freq",
            "a": "array",
            "lr": "positive",
            "steps": "pos_int",
            "parametrization": "choice",
        },
        init_inv_freq="inv_freq",
    ),
    "max_stable_lr": _entry(
        refimpl.max_stable_lr,
        dict(distances=D, inv_freq=F2, a=[1.0, 0.5]),
        {
            "distances": "positions",
            "inv_freq": "inv_freq",
            "a": "array",
            "parametrization": "choice",
        },
    ),
    "mixed_encoding": _entry(
        refimpl.mixed_encoding,
        dict(x=X, positions=POS2, alpha=0.5),
        {
            "x": "array",
            "positions": "positions",
            "alpha": "real",
            "base": "base",
            "pairing": "choice",
            "pe_base": "base",
        },
    ),
    "relative_defect": _entry(refimpl.relative_defect, dict(scores=W), {"scores": "array"}),
    # streaming (floor 3)
    "iter_cos_sin": _entry(
        lambda **kw: list(refimpl.iter_cos_sin(**kw)),
        dict(positions_or_count=3, dim=4),
        {
            "positions_or_count": "positions",
            "dim": "dim",
            "base": "base",
            "method": "choice",
            "chunk": "pos_int",
            "attention_scaling": "real",
            "inv_freq": "inv_freq",
        },
    ),
}

# Calls into modules of the other floors (rotary kernel, multi-axis, biases, scaling, config,
# checker): only the arguments each already checks; what is still open is listed in the
# issue's follow-up rather than asserted here.
_CT = refimpl.cos_sin(POS2, F2)
CALLS.update(
    {
        "apply_rope_tables": _entry(
            refimpl.apply_rope_tables,
            dict(x=X, cos=_CT[0], sin=_CT[1]),
            {
                "x": "array",
                "cos": "array",
                "sin": "array",
                "pairing": "choice",
                "fused": "flag",
                "check_finite": "flag",
            },
        ),
        "interleaved_to_half_weights": _entry(
            refimpl.interleaved_to_half_weights,
            dict(w=np.ones((8, 3)), n_heads=2),
            {"w": "array", "n_heads": "pos_int"},
        ),
        "half_to_interleaved_weights": _entry(
            refimpl.half_to_interleaved_weights,
            dict(w=np.ones((8, 3)), n_heads=2),
            {"w": "array", "n_heads": "pos_int"},
        ),
        "apply_rope_2d": _entry(
            refimpl.apply_rope_2d,
            dict(x=np.ones((2, 8)), rows=[0, 1], cols=[1, 0]),
            {
                "x": "array",
                "rows": "positions",
                "cols": "positions",
                "base": "base",
                "pairing": "choice",
            },
        ),
        "axial_2d_angles": _entry(
            refimpl.axial_2d_angles,
            dict(rows=[0, 1], cols=[1, 0], inv_freq=F2),
            {"rows": "positions", "cols": "positions", "inv_freq": "inv_freq"},
        ),
        "mrope_cos_sin": _entry(
            refimpl.mrope_cos_sin,
            dict(
                position_ids=np.zeros((3, 2)),
                inv_freq=[1.0, 0.5, 0.25, 0.1],
                mrope_section=[2, 1, 1],
            ),
            {"inv_freq": "inv_freq", "layout": "choice", "attention_scaling": "real"},
        ),
        "alibi_slopes": _entry(refimpl.alibi_slopes, dict(n_heads=4), {"n_heads": "pos_int"}),
        "alibi_bias": _entry(
            refimpl.alibi_bias,
            dict(n_heads=2, q_len=3),
            {"n_heads": "pos_int", "q_len": "pos_int", "k_len": "pos_int", "causal": "flag"},
        ),
        "alibi_shifted_bias": _entry(
            refimpl.alibi_shifted_bias,
            dict(n_heads=2, q_len=3),
            {"n_heads": "pos_int", "q_len": "pos_int", "k_len": "pos_int", "causal": "flag"},
        ),
        "t5_relative_position_bucket": _entry(
            refimpl.t5_relative_position_bucket,
            dict(relative_position=np.arange(-4, 5)),
            {"bidirectional": "flag", "num_buckets": "pos_int", "max_distance": "pos_int"},
        ),
        "t5_bias": _entry(
            refimpl.t5_bias,
            dict(table=np.ones((32, 2)), q_len=3, k_len=3),
            {"table": "array", "q_len": "pos_int", "k_len": "pos_int", "bidirectional": "flag"},
        ),
        "scale_frequencies": _entry(
            lambda rope_type="linear", **kw: refimpl.scale_frequencies(rope_type, **kw),
            dict(dim=8, base=1e4, factor=2.0),
            {"dim": "dim", "base": "base", "factor": "positive", "rope_type": "choice"},
            rope_type="rope",
        ),
        "transformers_float32_frequencies": _entry(
            lambda rope_type="linear", **kw: refimpl.transformers_float32_frequencies(
                rope_type, **kw
            ),
            dict(dim=8, base=1e4, factor=2.0),
            {"dim": "dim", "base": "base", "factor": "positive", "rope_type": "choice"},
            rope_type="rope",
        ),
        "rope_from_config": _entry(
            refimpl.rope_from_config,
            dict(config={"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4}),
            {"config": "config", "seq_len": "pos_int", "pairing": "choice"},
        ),
        "check_rope_arrays": _entry(
            refimpl.check_rope_arrays,
            dict(positions=_ARR_POS, x=_ARR_X, y=refimpl.apply_rope(_ARR_X, _ARR_POS), dim=8),
            {
                "positions": "positions",
                "x": "array",
                "y": "array",
                "dim": "dim",
                "base": "base",
                "pairing": "choice",
                "tolerance": "positive",
            },
        ),
        "check_rope_operator": _entry(
            refimpl.check_rope_operator,
            dict(op=_HALF_OP, dim=8),
            {
                "op": "callable",
                "dim": "dim",
                "base": "base",
                "pairing": "choice",
                "tables": "choice",
                "positions": "positions",
                "tolerance": "positive",
                "attention_scaling": "positive",
                "position_ids": "flag",
            },
        ),
        "check_attention_scale": _entry(
            refimpl.check_attention_scale,
            dict(fn_scores=_SCORES, schedule=_SCHEDULE),
            {"fn_scores": "callable", "positions": "positions"},
        ),
        "packing_from_position_ids": _entry(
            refimpl.packing_from_position_ids,
            dict(position_ids=[[0, 1, 0, 1]]),
            {"emulate": "choice"},
        ),
        "check_rope": _entry(
            refimpl.check_rope,
            dict(fn=refimpl.apply_rope, dim=8),
            {
                "fn": "callable",
                "dim": "dim",
                "base": "base",
                "pairing": "choice",
                "positions": "positions",
                "tolerance": "positive",
                "seq_len": "pos_int",
            },
        ),
    }
)


def _write_into_a_fresh_folder(**kwargs):
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        refimpl.write_cos_sin_npz(f"{folder}/t.npz", **kwargs)


CALLS["write_cos_sin_npz"] = _entry(
    _write_into_a_fresh_folder,
    dict(positions_or_count=3, dim=4),
    {
        "positions_or_count": "positions",
        "dim": "dim",
        "base": "base",
        "method": "choice",
        "chunk": "pos_int",
        "dtype": "choice",
        "inv_freq": "inv_freq",
    },
)
CALLS["cos_sin_npz_nbytes"] = _entry(
    refimpl.streaming.cos_sin_npz_nbytes,
    dict(num_positions=8, num_pairs=4),
    {"num_positions": "pos_int", "num_pairs": "pos_int"},
)
CALLS["check_free_space"] = _entry(
    refimpl.streaming.check_free_space,
    dict(path="free-space-probe.npz", nbytes=1),
    {"path": "path"},
)
_LLAMA = {"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4}
# FIRE's MLP weights (w1, b1, w2, b2): a hand-made 1 -> 2 -> 1 network
_FIRE_MLP = (np.ones(2), np.zeros(2), np.ones((1, 2)), np.zeros(1))
CALLS.update(
    {
        # polar (PoPE)
        "apply_pope": _entry(
            refimpl.apply_pope,
            dict(x=X, positions=POS2),
            {"x": "array", "positions": "positions", "base": "base"},
        ),
        "pope_inv_freq": _entry(refimpl.pope_inv_freq, dict(dim=8), {"base": "base"}),
        # contextual (CoPE)
        "cope_logits": _entry(
            refimpl.cope_logits,
            dict(q=X, k=X, pos_emb=np.ones((3, 4))),
            {"q": "array", "k": "array", "pos_emb": "array", "causal": "flag", "scale": "positive"},
        ),
        "cope_positions": _entry(
            refimpl.cope_positions, dict(logits=W), {"logits": "array", "causal": "flag"}
        ),
        # position maps (remap)
        "dual_chunk_relative_positions": _entry(
            refimpl.dual_chunk_relative_positions,
            dict(q_len=4, chunk_size=2, local_size=1),
            {"q_len": "pos_int", "chunk_size": "pos_int"},
        ),
        "rerope_relative_positions": _entry(
            refimpl.rerope_relative_positions,
            dict(q_len=4, window=2),
            {"q_len": "pos_int", "window": "pos_int"},
        ),
        "self_extend_relative_positions": _entry(
            refimpl.self_extend_relative_positions,
            dict(q_len=4, group=2, window=2),
            {"q_len": "pos_int", "group": "pos_int", "window": "pos_int"},
        ),
        "self_extend_cache_positions": _entry(
            refimpl.self_extend_cache_positions,
            dict(n_tokens=4, group=2, window=2),
            {"group": "pos_int", "window": "pos_int", "batch": "pos_int"},
        ),
        "relative_rope_scores": _entry(
            refimpl.relative_rope_scores,
            dict(q=X, k=X, relative=np.zeros((2, 2)), dim=4),
            {"q": "array", "k": "array", "base": "base", "pairing": "choice"},
        ),
        "rerotate_keys": _entry(
            refimpl.rerotate_keys,
            dict(k=X, delta=3),
            {"k": "array", "base": "base", "pairing": "choice", "inv_freq": "inv_freq"},
        ),
        "rerotate_keys_mrope": _entry(
            refimpl.rerotate_keys_mrope,
            dict(k=np.ones((2, 8)), delta=3, mrope_section=[2, 1, 1]),
            {
                "k": "array",
                "base": "base",
                "pairing": "choice",
                "layout": "choice",
                "inv_freq": "inv_freq",
                "delta": "real",
            },
        ),
        "dual_chunk_attention_scores": _entry(
            refimpl.dual_chunk_attention_scores,
            dict(q=X, k=X, positions=[0, 1], dca=_DCA),
            {
                "q": "array",
                "k": "array",
                "positions": "positions",
                "dca": "dca",
                "base": "base",
                "pairing": "choice",
                "inv_freq": "inv_freq",
                "seq_len": "pos_int",
            },
            dca=("dca", "dual_chunk_attention_config", "chunk_size"),
        ),
        "dual_chunk_query_tables": _entry(
            refimpl.dual_chunk_query_tables,
            dict(query_positions=[0, 5], dca=_DCA),
            {"query_positions": "positions", "dca": "dca"},
            dca=("dca", "dual_chunk_attention_config", "chunk_size"),
        ),
        "check_dual_chunk_attention": _entry(
            refimpl.check_dual_chunk_attention,
            dict(fn_scores=_DCA_SCORES, dca=_DCA, dim=8),
            {
                "fn_scores": "callable",
                "dca": "dca",
                "dim": "dim",
                "base": "base",
                "pairing": "choice",
                "seq_len": "pos_int",
                "softmax_scale": "positive",
                "tolerance": "positive",
            },
            dca=("dca", "dual_chunk_attention_config", "chunk_size"),
        ),
        # functional biases
        "fire_bias": _entry(
            refimpl.fire_bias,
            dict(mlp=_FIRE_MLP, q_len=3),
            {"q_len": "pos_int", "k_len": "pos_int", "c": "positive", "threshold": "positive"},
        ),
        "kerple_bias": _entry(
            refimpl.kerple_bias,
            dict(q_len=3, r1=[1.0], r2=[1.0]),
            {"q_len": "pos_int", "k_len": "pos_int", "form": "choice", "causal": "flag"},
        ),
        "sandwich_bias": _entry(
            refimpl.sandwich_bias,
            dict(scales=[1.0, 2.0], q_len=3),
            {
                "q_len": "pos_int",
                "k_len": "pos_int",
                "dim": "dim",
                "base": "base",
                "causal": "flag",
            },
        ),
        # engines
        "ggml_cos_sin": _entry(
            refimpl.ggml_cos_sin,
            dict(positions=POS2, n_dims=4),
            {"positions": "positions", "n_dims": "dim"},
        ),
        "mlx_cos_sin": _entry(
            refimpl.mlx_cos_sin,
            dict(positions=POS2, dims=4),
            {"positions": "positions", "dims": "dim"},
        ),
        "vllm_cos_sin": _entry(
            refimpl.vllm_cos_sin,
            dict(positions=POS2, rotary_dim=4),
            {"positions": "positions", "rotary_dim": "dim", "dtype": "choice"},
        ),
        "frequency_switch_error": _entry(
            refimpl.frequency_switch_error,
            dict(inv_before=F2, inv_after=[1.0, 0.02], key_positions=[0, 1], query_positions=[2]),
            {"key_positions": "positions"},
        ),
        "engine_differences": _entry(
            refimpl.engine_differences, dict(config=_LLAMA), {"config": "config"}
        ),
        # schedules and GGUF
        "rope_schedule": _entry(
            refimpl.rope_schedule, dict(config=_LLAMA), {"config": "config", "seq_len": "pos_int"}
        ),
        "gguf_rope_metadata": _entry(
            refimpl.gguf_rope_metadata,
            dict(config=_LLAMA),
            {"config": "config"},
            config=("config", "model_type"),
        ),
        "read_gguf_rope": _entry(
            refimpl.read_gguf_rope,
            dict(path="x.gguf"),
            {"path": "file"},
            runs=False,
            path=("path", "GGUF"),
        ),
        "rope_from_gguf": _entry(
            refimpl.rope_from_gguf,
            dict(path="x.gguf"),
            {"path": "file"},
            runs=False,
            path=("path", "GGUF"),
        ),
        "compare_gguf": _entry(
            refimpl.compare_gguf,
            dict(gguf_path="x.gguf", config=_LLAMA),
            {"gguf_path": "file"},
            runs=False,
            gguf_path=("gguf_path", "GGUF"),
        ),
    }
)
# write_suite's valid call is not run (runs=False); hostile calls that get far enough to
# write land outside the working tree
_SCRATCH_SUITE = str(__import__("pathlib").Path(__import__("tempfile").gettempdir()) / "rh-suite")

CALLS.update(
    {
        # positions as engines pass them, the reference rotation, the conformance suite
        "context_parallel_indices": _entry(
            refimpl.context_parallel_indices,
            dict(seq_len=8, cp_rank=0, cp_size=2),
            {"seq_len": "count", "cp_rank": "count", "cp_size": "pos_int"},
        ),
        "varlen_positions": _entry(
            refimpl.varlen_positions, dict(cu_seqlens=[0, 2, 5]), {"cu_seqlens": "positions"}
        ),
        "reference_rotation": _entry(
            refimpl.reference_rotation,
            dict(x=X, cos=_CT[0], sin=_CT[1]),
            {"x": "array", "cos": "array", "sin": "array", "pairing": "choice"},
        ),
        "write_suite": _entry(
            refimpl.write_suite,
            dict(config=_LLAMA, out_dir=_SCRATCH_SUITE),
            {"config": "config", "dtype": "choice"},
            runs=False,
        ),
        "verify_outputs": _entry(
            refimpl.verify_outputs,
            dict(suite_dir="no-such-suite", results_dir="no-such-results"),
            {"suite_dir": "file"},
            runs=False,
        ),
    }
)
CALLS.update(
    {
        # FoPE (refimpl.fourier)
        "apply_fope": _entry(
            refimpl.apply_fope,
            dict(x=X, positions=POS2, inv_freq=F2, cos_coef=np.eye(2), sin_coef=np.eye(2)),
            {
                "x": "array",
                "positions": "positions",
                "inv_freq": "inv_freq",
                "cos_coef": "array",
                "sin_coef": "array",
                "train_length": "pos_int",
                "clipped": "choice",
                "pairing": "choice",
            },
        ),
        "fope_cos_sin": _entry(
            refimpl.fope_cos_sin,
            dict(positions=POS2, inv_freq=F2, cos_coef=np.eye(2), sin_coef=np.eye(2)),
            {
                "positions": "positions",
                "inv_freq": "inv_freq",
                "cos_coef": "array",
                "sin_coef": "array",
                "train_length": "pos_int",
                "clipped": "choice",
            },
        ),
        "fope_kept": _entry(
            refimpl.fope_kept,
            dict(inv_freq=F2, train_length=8),
            {"inv_freq": "inv_freq", "train_length": "pos_int"},
        ),
        "fope_series": _entry(
            refimpl.fope_series,
            dict(inv_freq=F2, cos_coef=np.eye(2), sin_coef=np.eye(2)),
            {
                "inv_freq": "inv_freq",
                "cos_coef": "array",
                "sin_coef": "array",
                "train_length": "pos_int",
            },
        ),
        "fope_coefficients": _entry(
            refimpl.fope_coefficients,
            dict(num_freqs=2, num_pairs=2, std=0.1),
            {
                "num_freqs": "count",
                "num_pairs": "count",
                "std": "real",
                "heads": "pos_int",
                "seed": "count",
            },
        ),
        # the precision registry (refimpl.pipelines)
        "PRECISIONS": _entry(
            refimpl.PRECISIONS["ggml-float32"],
            dict(spec=refimpl.rope_from_config(_LLAMA), positions=POS2),
            {"spec": "spec", "positions": "positions"},
        ),
    }
)
COVERAGE_TYPES = {
    "Precision": "CALLS['PRECISIONS'] (a record of the registry, called directly)",
    "Finding": "CALLS['check_rope'] (the report's findings)",
    "EngineReport": "CALLS['engine_differences'] (the result type)",
    "LayerRope": "CALLS['rope_schedule'] (the result's entries)",
    "QueryScaling": "CALLS['rope_schedule'] (a layer's query scaling)",
    "RopeSchedule": "CALLS['rope_schedule'] (the result type)",
    "ScalingMethod": "test_scaling_methods_refuse_hostile_parameters_by_name (the records)",
    "DualChunkAttention": "test_dual_chunk_attention_refuses_hostile_settings",
    "PrecisionStage": "CALLS['check_rope'] (the report's precision_stages)",
    "DualChunkScores": "CALLS['dual_chunk_attention_scores'] (the result type)",
    "DualChunkReport": "CALLS['check_dual_chunk_attention'] (the result type)",
}
HOSTILE["path"] = [None, 3, 1.5, ["x.npz"], "", "."]
# file names that exist as no GGUF file (wrong types are still open in gguf.py)
HOSTILE["file"] = ["", ".", "no-such-file.gguf", "/"]
HOSTILE["config"] = [5, "no-such-file.json", [1, 2], {"model_type": 5}, {"rope_theta": "x"}]
HOSTILE["spec"] = [5, None, "llama", {"inv_freq": [1.0]}, [refimpl.RopeSpec]]
HOSTILE["callable"] = [5, "apply_rope", None, [refimpl.apply_rope]]
HOSTILE["dca"] = [5, None, "dca", [6, 2], {"chunk_size": 6}, {"chunk_size": 2, "local_size": 2}]


def _default(call: Call, arg: str):
    try:
        param = inspect.signature(call.fn).parameters.get(arg)
    except (TypeError, ValueError):
        return inspect.Parameter.empty
    return inspect.Parameter.empty if param is None else param.default


def _skip_value(call: Call, arg: str, value) -> bool:
    """Values of a kind that one argument legitimately accepts: None where None is the
    default (it means "not given"), a 0-d integer array as a count."""
    if value is None and _default(call, arg) is None:
        return True
    if arg == "positions_or_count" and isinstance(value, np.ndarray) and value.ndim == 0:
        return value.dtype.kind in "iu"
    return False


def _cases():
    for name, call in CALLS.items():
        for arg, kind in call.kinds.items():
            yield pytest.param(name, arg, kind, id=f"{name}-{arg}")


def _names(arg, exc: Exception) -> bool:
    """The message names the argument (``rope_type`` may be written "rope type"); ``arg`` may
    be a tuple of acceptable names (a config's key instead of the word "config")."""
    text = str(exc)
    names = arg if isinstance(arg, tuple) else (arg,)
    return any(a in text or a.replace("_", " ") in text for a in names)


def _assert_refused(call: Call, name: str, arg: str, value) -> None:
    label = call.aliases.get(arg, arg)
    try:
        result = call(**{arg: value})
    except (ValueError, TypeError) as exc:
        assert _names(label, exc), f"{name}({arg}={value!r}): message does not name {label!r}"
        return
    pytest.fail(f"{name}({arg}={value!r}) was accepted and returned {type(result).__name__}")


@pytest.mark.parametrize(("name", "arg", "kind"), list(_cases()))
def test_every_fixed_hostile_value_is_refused_with_the_argument_named(name, arg, kind):
    call = CALLS[name]
    if call.runs:
        call()  # the valid call itself works
    for value in HOSTILE[kind] + (HOSTILE["finite_array"] if kind == "array" else []):
        if not _skip_value(call, arg, value):
            _assert_refused(call, name, arg, value)


# Data that a function only moves (a permutation of weight rows) carries NaN faithfully.
_NONFINITE_DATA_OK = {("interleaved_to_half_weights", "w"), ("half_to_interleaved_weights", "w")}


@pytest.mark.parametrize(("name", "arg", "kind"), list(_cases()))
@settings(max_examples=12)
@given(data=st.data())
def test_generated_hostile_values_are_refused_with_the_argument_named(name, arg, kind, data):
    call = CALLS[name]
    poison_ok = kind == "array" and (name, arg) not in _NONFINITE_DATA_OK and arg in call.kwargs
    if poison_ok and data.draw(st.booleans(), label="poison"):
        # the valid array itself with one entry made NaN or +inf, at a drawn place
        value = np.array(call.kwargs[arg], dtype=np.float64)
        at = data.draw(st.integers(0, value.size - 1), label="index")
        value.flat[at] = data.draw(st.sampled_from([np.nan, np.inf]), label="poison value")
    else:
        value = data.draw(_hostile_strategy(kind), label=f"{name}({arg}=...)")
    if _skip_value(call, arg, value):
        return
    _assert_refused(call, name, arg, value)


# ------------------------------------------------------------------- the scaling registry
# A valid value for every parameter name a method of ROPE_SCALINGS may take (dim = 8, so
# per-pair factor lists have 4 entries), and the kind of hostile values for it. A method
# with a parameter missing here fails test_every_scaling_parameter_has_a_valid_value.
SCALING_VALID = {
    "factor": 2.0,
    "original_max_position": 4096,
    "max_position": 16384,
    "seq_len": 8192,
    "beta_fast": 32.0,
    "beta_slow": 1.0,
    "mscale": 1.0,
    "mscale_all_dim": 1.0,
    "attention_factor": 1.0,
    "truncate": True,
    "ramp": "transformers",
    "low_freq_factor": 1.0,
    "high_freq_factor": 4.0,
    "short_factor": [1.0, 1.0, 1.5, 2.0],
    "long_factor": [1.0, 2.0, 3.0, 4.0],
    "factors": [1.0, 1.0, 2.0, 4.0],
    "partial_rotary_factor": 0.5,
    "alpha": 2.0,
}
_FACTOR_LISTS = [[np.nan] * 4, [1.0, 1.0, np.inf, 1.0], [-1.0] * 4, ["a"] * 4, [[1.0] * 4], _RAGGED]
SCALING_HOSTILE = {
    "dim": HOSTILE["dim"],
    "base": HOSTILE["base"],
    "factor": [*_REAL_WRONG_TYPE, *_NONFINITE, 0.0, -2.0],
    "original_max_position": HOSTILE["pos_int"],
    "max_position": HOSTILE["pos_int"],
    "seq_len": HOSTILE["pos_int"],
    "beta_fast": [*_REAL_WRONG_TYPE, *_NONFINITE],
    "beta_slow": [*_REAL_WRONG_TYPE, *_NONFINITE],
    "mscale": [*_REAL_WRONG_TYPE, *_NONFINITE, -1.0],
    "mscale_all_dim": [*_REAL_WRONG_TYPE, *_NONFINITE, -1.0],
    "attention_factor": [*_REAL_WRONG_TYPE, *_NONFINITE, 0.0, -1.0],
    "truncate": HOSTILE["flag"],
    "ramp": HOSTILE["choice"],
    "low_freq_factor": [*_REAL_WRONG_TYPE, *_NONFINITE, 0.0, -1.0],
    "high_freq_factor": [*_REAL_WRONG_TYPE, *_NONFINITE, 0.0, -1.0],
    "short_factor": _FACTOR_LISTS,
    "long_factor": _FACTOR_LISTS,
    "factors": _FACTOR_LISTS,
    # 0 is valid: transformers loads it and every pair passes through (cos 1, sin 0)
    "partial_rotary_factor": [*_REAL_WRONG_TYPE, *_NONFINITE, -0.5, 1.5],
    "alpha": [*_REAL_WRONG_TYPE, *_NONFINITE, 0.0, -1.0],
}


# Hostile values that the owners' modules still accept this round; they are not asserted here
# (each is reported to its owner) and are removed from this table as the fixes land.
NOT_YET_REFUSED = {}


def _open_elsewhere(where: str, param: str, value) -> bool:
    return any(value is v for v in NOT_YET_REFUSED.get((where, param), []))


def _scaling_kwargs(method, param: str | None = None) -> dict:
    """A valid call of ``method`` (dim = 8, base = 1e4) that uses ``param``: the required
    parameters and ``param`` itself, or, where that is not a complete call (LongRoPE needs
    something that sets its attention factor), every parameter."""
    lean = {p: SCALING_VALID[p] for p in method.required} | dict(dim=8, base=1e4)
    if param is not None and param not in ("dim", "base"):
        lean[param] = SCALING_VALID[param]
    try:
        method(**lean)
    except (ValueError, TypeError):
        return {p: SCALING_VALID[p] for p in method.parameters[2:]} | dict(dim=8, base=1e4)
    return lean


def test_every_scaling_parameter_has_a_valid_value():
    """A new method or parameter in ROPE_SCALINGS needs a valid value and hostile values
    here, so that the registry cannot grow past this suite."""
    for name, method in refimpl.ROPE_SCALINGS.items():
        for param in method.parameters:
            assert param in SCALING_HOSTILE, f"ROPE_SCALINGS[{name!r}]: no hostile {param!r}"
            assert param in ("dim", "base") or param in SCALING_VALID, (name, param)
        method(**_scaling_kwargs(method))  # the valid call works


def _scaling_cases():
    for name, method in refimpl.ROPE_SCALINGS.items():
        for param in method.parameters:
            yield pytest.param(name, param, id=f"{name}-{param}")


def _assert_scaling_refused(name: str, param: str, value) -> None:
    method = refimpl.ROPE_SCALINGS[name]
    if _open_elsewhere(name, param, value):
        return
    kwargs = {**_scaling_kwargs(method, param), param: value}
    if value is None and param not in method.required and param not in ("dim", "base"):
        return  # None means "not given" for an optional parameter
    try:
        method(**kwargs)
    except (ValueError, TypeError) as exc:
        assert _names(param, exc), f"ROPE_SCALINGS[{name!r}]({param}={value!r}): {exc}"
        return
    pytest.fail(f"ROPE_SCALINGS[{name!r}]({param}={value!r}) was accepted")


@pytest.mark.parametrize(("name", "param"), list(_scaling_cases()))
def test_scaling_methods_refuse_hostile_parameters_by_name(name, param):
    for value in SCALING_HOSTILE[param]:
        _assert_scaling_refused(name, param, value)


# ------------------------------------------------------------------ RopeSpec and graders
# Hand-made configs (labelled as such: minimal dicts in the shape of a transformers config).
HAND_CONFIGS = {
    "default": {"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4},
    "yarn": {
        "model_type": "llama",
        "hidden_size": 64,
        "num_attention_heads": 4,
        "rope_scaling": {
            "rope_type": "yarn",
            "factor": 4.0,
            "original_max_position_embeddings": 512,
        },
    },
}


@pytest.mark.parametrize("which", sorted(HAND_CONFIGS))
def test_rope_spec_methods_refuse_hostile_positions_precisions_and_inputs(which):
    spec = refimpl.rope_from_config(HAND_CONFIGS[which])
    x = np.ones((2, spec.dim))
    bad_x = [
        np.full((2, spec.dim), np.nan),
        np.ones((2, spec.dim), dtype=complex),
        np.ones((2, spec.dim), dtype=object),
        [["a"] * spec.dim] * 2,
    ]
    for value in HOSTILE["positions"]:
        for label, call in (
            ("cos_sin", lambda v: spec.cos_sin(v)),
            ("apply", lambda v: spec.apply(x, v)),
        ):
            if _open_elsewhere(f"RopeSpec.{label}", "positions", value):
                continue
            try:
                call(value)
            except (ValueError, TypeError) as exc:
                assert "position" in str(exc), (label, value, exc)
            else:
                pytest.fail(f"RopeSpec.{label}(positions={value!r}) was accepted")
    for value in HOSTILE["choice"]:
        with pytest.raises((ValueError, TypeError), match="precision"):
            spec.cos_sin([0, 1], precision=value)
    for value in bad_x:
        with pytest.raises((ValueError, TypeError), match="x"):
            spec.apply(value, [0, 1])


def _graders():
    from refimpl import exercises as ex

    good = refimpl.inv_freq(8)
    yarn = refimpl.ROPE_SCALINGS["yarn"](
        dim=8, base=1e4, factor=4.0, original_max_position=4096
    ).inv_freq
    return {
        "grade_inv_freq": (ex.grade_inv_freq, (good,), dict(dim=8), ("dim", "base", "rtol")),
        "grade_alibi_slopes": (
            ex.grade_alibi_slopes,
            (refimpl.alibi_slopes(4),),
            dict(n_heads=4),
            ("n_heads", "rtol"),
        ),
        "grade_sinusoidal": (
            ex.grade_sinusoidal,
            (refimpl.sinusoidal(3, 4),),
            dict(num_positions=3, dim=4),
            ("num_positions", "dim", "base", "rtol"),
        ),
        "grade_apply_rope": (
            ex.grade_apply_rope,
            (refimpl.apply_rope,),
            dict(dim=8),
            ("dim", "base", "pairing", "rotary_dim"),
        ),
        "grade_rotated": (
            ex.grade_rotated,
            (refimpl.apply_rope(np.ones((2, 4)), [0, 1]), np.ones((2, 4)), [0, 1]),
            {},
            ("base", "pairing", "rtol"),
        ),
        "grade_value": (ex.grade_value, (1.0, 1.0), {}, ("rtol", "atol")),
        "grade_scaled_inv_freq": (
            ex.grade_scaled_inv_freq,
            (refimpl.scale_frequencies("linear", dim=8, base=1e4, factor=2.0).inv_freq,),
            dict(rope_type="linear", dim=8, factor=2.0),
            ("dim", "base", "rtol", "rope_type"),
        ),
        "grade_yarn_inv_freq": (
            ex.grade_yarn_inv_freq,
            (yarn,),
            dict(dim=8, base=1e4, factor=4.0, original_max_position=4096),
            ("dim", "base", "factor", "original_max_position", "rtol"),
        ),
        "grade_function": (ex.grade_function, (abs, abs, [(1.0,), (-2.0,)]), {}, ("rtol", "atol")),
    }


_GRADER_HOSTILE = {
    "dim": HOSTILE["dim"],
    "num_positions": HOSTILE["pos_int"],
    "n_heads": HOSTILE["pos_int"],
    "original_max_position": HOSTILE["pos_int"],
    "rotary_dim": [True, 8.0, "8", 0, -2, 7, 10],
    "base": [b for b in HOSTILE["base"] if b is not None] + [None],
    "factor": [*_REAL_WRONG_TYPE, *_NONFINITE, 0.0, -1.0],
    "rtol": [*_REAL_WRONG_TYPE, *_NONFINITE, -1.0],
    "atol": [*_REAL_WRONG_TYPE, *_NONFINITE, -1.0],
    "pairing": HOSTILE["choice"],
    "rope_type": ["nope", "", 5, None],
}


@pytest.mark.parametrize("grader", sorted(_graders()))
def test_graders_refuse_hostile_settings_by_name(grader):
    fn, args, kwargs, params = _graders()[grader]
    assert fn(*args, **kwargs).passed  # the valid call grades a right answer as right
    for param in params:
        for value in _GRADER_HOSTILE[param]:
            if value is None and param in ("rtol", "atol", "pairing", "rotary_dim"):
                continue  # None is "not given" there
            try:
                fn(*args, **{**kwargs, param: value})
            except (ValueError, TypeError) as exc:
                assert _names(param, exc), (grader, param, value, exc)
            else:
                pytest.fail(f"{grader}({param}={value!r}) was accepted")


# ------------------------------------------------------------ valid edge values: the oracles
_EDGE_POSITIONS = st.one_of(
    st.lists(st.integers(-(2**40), 2**40), max_size=5).map(lambda v: np.array(v, dtype=np.int64)),
    st.lists(st.integers(0, 2**40), max_size=5).map(lambda v: np.array(v, dtype=np.uint64)),
    st.lists(st.booleans(), max_size=5).map(np.array),  # boolean data: 0/1 by design
    st.lists(st.integers(-128, 127), max_size=5).map(lambda v: np.array(v, dtype=np.int8)),
    st.lists(st.floats(-6e4, 6e4, width=16), max_size=5).map(lambda v: np.array(v, np.float16)),
    st.lists(st.one_of(st.just(-0.0), st.just(5e-324), st.floats(-1e9, 1e9)), max_size=5).map(
        np.array
    ),
    st.sampled_from([np.int64(7), 7, 7.5, np.float32(-3.0), np.array([2**53]), np.array([])]),
)


def _as_list(positions) -> list[float]:
    return [float(p) for p in np.atleast_1d(np.asarray(positions, dtype=np.float64))]


@given(_EDGE_POSITIONS, st.sampled_from([2, 4, 8]), st.sampled_from([10.0, 1e4, 5e5]))
def test_edge_positions_give_the_loop_oracle_for_tables_and_rotations(positions, dim, base):
    """Empty, scalar, boolean, uint64, int8, float16, -0.0, subnormal and 2**53 positions are
    valid: the fast tables and the rotation equal the loop oracle entry by entry."""
    pos = _as_list(positions)
    freqs = oracles.inv_freq(dim, base)
    c, s = refimpl.cos_sin(positions, dim=dim, base=base)
    assert c.shape == s.shape == (len(pos), dim // 2)
    theta = refimpl.inv_freq(dim, base)  # compared at the same float64 frequencies
    for r, m in enumerate(pos):
        for i in range(dim // 2):
            assert abs(c[r, i] - math.cos(m * theta[i])) <= 2**-52
            assert abs(s[r, i] - math.sin(m * theta[i])) <= 2**-52
    x = np.linspace(-1.0, 1.0, len(pos) * dim).reshape(len(pos), dim)
    got = refimpl.apply_rope(x, positions, base=base)
    want = np.array(oracles.rope(x.tolist(), pos, freqs), dtype=np.float64).reshape(x.shape)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-9 * (1 + max(map(abs, pos), default=0)))
    pe = refimpl.sinusoidal(np.atleast_1d(positions), dim, base)
    want_pe = np.array(oracles.sinusoidal(pos, dim, base)).reshape(len(pos), dim)
    np.testing.assert_allclose(pe, want_pe, rtol=0, atol=1e-9 * (1 + max(map(abs, pos), default=0)))


@given(
    st.lists(
        st.lists(st.one_of(st.floats(-30, 30), st.just(-np.inf)), min_size=3, max_size=3),
        min_size=1,
        max_size=3,
    )
)
def test_softmax_and_attention_edge_rows_equal_the_oracle(rows):
    """Rows with -inf (masked) entries are valid unless every entry is masked."""
    x = np.array(rows)
    if np.any(np.all(x == -np.inf, axis=-1)):
        with pytest.raises(ValueError, match="all -inf"):
            refimpl.softmax(x)
        return
    got = refimpl.softmax(x)
    want = np.array([oracles.softmax(r) for r in x.tolist()])
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-300)
    h = refimpl.attention_entropy(got)
    np.testing.assert_allclose(h, [oracles.entropy(r) for r in want.tolist()], atol=1e-12)


def test_empty_and_degenerate_but_valid_shapes():
    assert refimpl.sinusoidal(0, 4).shape == (0, 4)
    assert refimpl.cos_sin([], dim=4)[0].shape == (0, 2)
    assert refimpl.cos_sin([], dim=4, method="accurate")[0].shape == (0, 2)
    assert refimpl.apply_rope(np.ones((0, 4)), []).shape == (0, 4)
    q = np.ones((0, 4))
    assert refimpl.attention(q, np.ones((2, 4)), np.ones((2, 3))).shape == (0, 3)
    assert refimpl.integer_encoding(0, 3).shape == (0, 3)
    assert refimpl.round_to(np.array([], dtype=np.int64), "bfloat16").shape == (0,)
    out, w = refimpl.attention(np.eye(2), np.eye(2), np.eye(2), return_weights=True)
    want_out, want_w = oracles.attention(np.eye(2).tolist(), np.eye(2).tolist(), np.eye(2).tolist())
    np.testing.assert_allclose(out, want_out, atol=1e-15)
    np.testing.assert_allclose(w, want_w, atol=1e-15)


@given(
    st.sampled_from([np.bool_, np.uint64, np.int8, np.float16, np.float32]),
    st.integers(1, 4),
    st.sampled_from(["half", "interleaved"]),
)
def test_data_arrays_of_every_real_dtype_rotate_like_the_oracle(dtype, seq, pairing):
    """Boolean and unsigned data are numbers (0/1, exact integers); floating data keeps its
    dtype, computed in float64 and rounded once."""
    rng = np.random.default_rng(seq)
    x = rng.integers(0, 3, size=(seq, 4)) if dtype is not np.bool_ else rng.integers(0, 2, (seq, 4))
    x = x.astype(dtype)
    pos = list(range(seq))
    got = refimpl.apply_rope(x, pos, pairing=pairing)
    want = np.array(
        oracles.rope(x.astype(np.float64).tolist(), pos, oracles.inv_freq(4, 1e4), pairing)
    )
    keeps = np.dtype(dtype) if np.dtype(dtype).kind == "f" else np.dtype(np.float64)
    assert got.dtype == keeps
    np.testing.assert_array_equal(got, want.astype(keeps)) if keeps == np.float16 else (
        np.testing.assert_allclose(got, want, rtol=0, atol=4 * np.finfo(keeps).eps)
    )


# --------------------------------------------------------------------------- aliasing out=
def test_out_that_aliases_an_input_is_refused_or_in_place_and_validated_first():
    """``out=x`` is an in-place rotation; ``out`` overlapping ``x`` any other way is refused;
    an in-place call with bad data raises before writing anything."""
    x = np.random.default_rng(1).standard_normal((6, 8))
    want = refimpl.apply_rope(x, np.arange(6))
    y = x.copy()
    assert refimpl.apply_rope(y, np.arange(6), out=y) is y
    np.testing.assert_array_equal(y, want)
    buf = np.zeros((7, 8))
    buf[:6] = x
    with pytest.raises(ValueError, match="out must be x itself"):
        refimpl.apply_rope(buf[:6], np.arange(6), out=buf[1:])
    with pytest.raises(ValueError, match="out must be x itself"):
        refimpl.apply_rope(y, np.arange(6), out=y[::-1])
    z = x.copy()
    z[-1, -1] = np.nan
    before = z.copy()
    with pytest.raises(ValueError, match="x must contain only finite values"):
        refimpl.apply_rope(z, np.arange(6), out=z)
    np.testing.assert_array_equal(z, before)
    for bad in ([[0.0] * 8] * 6, np.zeros((6, 8), np.float32), np.zeros((6, 4)), True):
        with pytest.raises((ValueError, TypeError), match="out"):
            refimpl.apply_rope(x, np.arange(6), out=bad)
    for bad in (np.zeros((2, 3, 3), np.float32), np.zeros((2, 3)), [[0.0]]):
        with pytest.raises((ValueError, TypeError), match="out"):
            refimpl.alibi_bias(2, 3, out=bad)


# ----------------------------------------------------------------- the validation vocabulary
def test_checks_vocabulary_is_strict_and_consistent():
    from refimpl._checks import (
        as_positions,
        as_positions_or_count,
        check_axis,
        check_count,
        check_dim,
        check_dps,
        check_flag,
        check_int,
        check_no_alias,
        check_positive_int,
        check_real,
        check_table_size,
    )

    assert check_flag(np.True_, "f") is True and check_flag(False, "f") is False
    for bad in ("no", 1, 0, None, 1.0):
        with pytest.raises(TypeError, match="f must be a boolean"):
            check_flag(bad, "f")
    # one rule for integers: bools and floats refused unless integral_float=True
    for fn in (check_count, check_positive_int, lambda v, n: check_dim(v, n)):
        with pytest.raises(TypeError, match="n must be an integer"):
            fn(8.0, "n")
        with pytest.raises(TypeError, match="n must be an integer, got a boolean"):
            fn(True, "n")
    assert check_int(8.0, "n", integral_float=True) == 8
    for bad in (8.5, np.nan, np.inf):
        with pytest.raises(ValueError, match="n must be an integer"):
            check_int(bad, "n", integral_float=True)
    with pytest.raises(ValueError, match="n must be at most 5"):
        check_int(6, "n", maximum=5)
    with pytest.raises(ValueError, match=f"dim must be at most {MAX_DIM}"):
        check_dim(MAX_DIM + 2)
    with pytest.raises(ValueError, match=f"dps must be at most {MAX_DPS}"):
        check_dps(MAX_DPS + 1)
    assert check_real(np.float32(1.5), "r") == 1.5 and check_real(np.inf, "r", finite=False)
    with pytest.raises(ValueError, match="r must be finite"):
        check_real(np.nan, "r", finite=False)
    assert check_axis(-1, 3) == 2
    with pytest.raises(TypeError, match="axis must be an integer"):
        check_axis(1.0, 3)
    with pytest.raises(ValueError, match="MAX_TABLE_ELEMENTS"):
        check_table_size(2**20, 2**12)
    a = np.zeros(4)
    check_no_alias(np.zeros(4), a)
    with pytest.raises(ValueError, match="out must not share memory"):
        check_no_alias(a[1:], a)
    # positions: exact in float64 up to 2**53 and no further, in either sign and dtype
    assert as_positions(np.array([EXACT_INTEGER, -EXACT_INTEGER])).tolist() == [2.0**53, -(2.0**53)]
    for bad in (
        np.array([EXACT_INTEGER + 1]),
        np.array([-(2**63)]),
        np.array([2**64 - 1], np.uint64),
    ):
        with pytest.raises(ValueError, match="below 2\\*\\*53"):
            as_positions(bad)
    assert as_positions_or_count(np.uint16(5)) == (5, None)
    count, pos = as_positions_or_count([5])
    assert count is None and pos.tolist() == [5.0]
    with pytest.raises(ValueError, match=f"at most {MAX_POSITION}"):
        as_positions_or_count(MAX_POSITION + 1)


def test_limits_are_generous_enough_for_long_contexts():
    """2**24-position tables of head dimension 256 and 10M-token contexts fit the limits."""
    assert _checks.MAX_TABLE_ELEMENTS >= 2**24 * 128
    assert _checks.MAX_POSITION >= 10_000_000
    assert _checks.MAX_DIM >= 16384 and _checks.MAX_DPS >= 50
    for name in ("MAX_DIM", "MAX_POSITION", "MAX_DPS", "MAX_TABLE_ELEMENTS", "EXACT_INTEGER"):
        assert name in _checks.__doc__, f"{name} must be stated in the module docstring"


# --------------------------------------------------------------------------------- coverage
# Where every public name is covered: a CALLS key, or a test of this module for names that
# are not plain functions. A new entry of refimpl.__all__ fails the test below until added.
COVERAGE = {name: f"CALLS[{name!r}]" for name in CALLS if name in refimpl.__all__}
COVERAGE.update(
    {
        "PIPELINES": "CALLS['pipeline_cos_sin'] (every value is reached by name)",
        "ROPE_SCALINGS": "test_scaling_methods_refuse_hostile_parameters_by_name",
        "scale_frequencies": "CALLS['scale_frequencies']",
        "RopeSpec": "test_rope_spec_methods_refuse_hostile_positions_precisions_and_inputs",
        "rope_from_config": "CALLS['rope_from_config']",
        "exercises": "test_graders_refuse_hostile_settings_by_name",
        "FrequencyFit": "CALLS['fit_inv_freq'] (the result type)",
        "RopeReport": "CALLS['check_rope'] (the result type)",
        "ScaledFrequencies": "test_scaling_methods_refuse_hostile_parameters_by_name (result)",
        "UnknownRopeTypeError": "CALLS['scale_frequencies'] (rope_type='no-such-choice')",
        "__version__": "a string, no argument",
        "ExactFrequencies": "CALLS['ExactFrequencies.power'] (and ...binary)",
        **COVERAGE_TYPES,
    }
)


@pytest.mark.parametrize("key", ["chunk_size", "local_size", "original_max_position_embeddings"])
@pytest.mark.parametrize("value", [None, -1, 1.5, "8", True, float("nan"), [4]])
def test_dual_chunk_attention_refuses_hostile_settings(key, value):
    cfg = {"chunk_size": 16, "local_size": 4, "original_max_position_embeddings": 16}
    if value is None and key == "original_max_position_embeddings":
        return  # None means "not stated"
    cfg[key] = value
    with pytest.raises((ValueError, TypeError), match=key):
        refimpl.DualChunkAttention.from_config(cfg)


def test_every_public_name_is_covered_by_this_suite():
    missing = sorted(set(refimpl.__all__) - set(COVERAGE))
    assert not missing, f"public names without a hostile-input entry in COVERAGE: {missing}"
    stale = sorted(set(COVERAGE) - set(refimpl.__all__))
    assert not stale, f"COVERAGE names that are no longer public: {stale}"
    for name, where in COVERAGE.items():
        target = where.split(" ")[0]
        if target.startswith("CALLS["):
            assert target[7:-2] in CALLS, (name, where)
        elif target.startswith("test_"):
            assert callable(globals().get(target)), (name, where)


def test_graders_in_the_table_are_every_grader():
    from refimpl import exercises

    graders = {n for n in exercises.__all__ if n.startswith("grade_")}
    untested = graders - set(_graders()) - {"grade_expression"}  # expression: SymPy input
    assert not untested, f"graders without hostile settings here: {sorted(untested)}"
