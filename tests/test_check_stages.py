"""check_rope's stages on the cases that real implementations raised: output-permuted
layouts, blind fits of scaled profiles (gpt-oss, Llama 4, DeepSeek-V3), exact linear factors,
short caches, fields that agree with a matched expectation, partial and proportional rotary,
xPos, bad arguments, and check_rope_arrays on recorded rows.

Each implementation is written here from the formulas (one property each); the model
parameters are the released ones, read from tests/parity/configs (see SOURCES.md there).
"""

import json
import pathlib
import types

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import refimpl
from refimpl.check import MAX_CHECK_DIM, Finding, check_rope, check_rope_arrays
from refimpl.scaling import ROPE_SCALINGS

CONFIGS = pathlib.Path(__file__).parent / "parity" / "configs"


def _rope_fields(name):
    cfg = json.loads((CONFIGS / name).read_text())
    rope = dict(cfg.get("rope_parameters") or cfg.get("rope_scaling") or {})
    base = rope.pop("rope_theta", cfg.get("rope_theta"))
    return cfg, float(base), rope


def _has(rep, *words):
    text = " ".join(rep.findings).lower()
    return all(w.lower() in text for w in words)


def rotate(x, angles, *, pairing="half", scale=1.0):
    """Reference rotation of every pair of x (seq, d) by angles (seq, d/2)."""
    x = np.asarray(x, dtype=np.float64)
    out = x.copy()
    d = x.shape[-1]
    a, b = (
        (np.arange(d // 2), np.arange(d // 2, d))
        if pairing == "half"
        else (np.arange(0, d, 2), np.arange(1, d, 2))
    )
    c, s = scale * np.cos(angles), scale * np.sin(angles)
    out[:, a] = x[:, a] * c - x[:, b] * s
    out[:, b] = x[:, b] * c + x[:, a] * s
    return out


def with_freqs(theta, scale=1.0, pairing="half"):
    return lambda x, p: rotate(x, np.outer(p, theta), pairing=pairing, scale=scale)


def geometric(d, base):
    return base ** (-np.arange(0, d, 2) / d)


# --- output permutation ----------------------------------------------------------------------


def _half_order(d):
    return np.concatenate([np.arange(0, d, 2), np.arange(1, d, 2)])


def deepseek_rope_interleave(x, p):
    """DeepSeek-V3 rope_interleave: interleaved pairs rotated, written in half-split order."""
    return refimpl.apply_rope(x, p, pairing="interleaved")[..., _half_order(x.shape[-1])]


def test_output_permuted_interleaved_is_a_permuted_correct_rope():
    rep = check_rope(deepseek_rope_interleave, dim=64)
    assert rep.ok, str(rep)
    assert rep.pairing == "interleaved" and rep.base == 10000.0
    np.testing.assert_array_equal(rep.output_permutation, _half_order(64))
    assert _has(rep, "fixed permutation of a correct rope", "rope_interleave")
    assert [f.severity for f in rep.findings if "permutation" in f] == ["note"]
    # the permutation's meaning: fn(x)[..., j] == rope(x)[..., p[j]]
    x = np.random.default_rng(0).standard_normal((3, 64))
    ref = refimpl.apply_rope(x, [0, 5, 9], pairing="interleaved")
    np.testing.assert_allclose(
        deepseek_rope_interleave(x, [0, 5, 9]), ref[..., rep.output_permutation]
    )
    # the expected pairing is still judged
    bad = check_rope(deepseek_rope_interleave, dim=64, pairing="half")
    assert not bad.ok and _has(bad, "pairs features interleaved")


def test_output_order_judged_against_an_expected_spec():
    th = geometric(64, 1e4)
    spec = types.SimpleNamespace(
        dim=64,
        rotary_dim=64,
        inv_freq=th,
        pairing="interleaved",
        attention_scaling=1.0,
        output_order="half",
    )
    assert check_rope(deepseek_rope_interleave, dim=64, expected=spec).ok
    plain = lambda x, p: refimpl.apply_rope(x, p, pairing="interleaved")  # noqa: E731
    rep = check_rope(plain, dim=64, expected=spec)
    assert not rep.ok and _has(rep, "keeps the input order")
    same = types.SimpleNamespace(**{**vars(spec), "output_order": "same"})
    assert not check_rope(deepseek_rope_interleave, dim=64, expected=same).ok


def test_a_swap_inside_a_pair_is_a_reflection_not_a_permutation():
    swapped = lambda x, p: refimpl.apply_rope(x, p)[..., np.r_[32:64, 0:32]]  # noqa: E731
    rep = check_rope(swapped, dim=64)
    assert not rep.ok and _has(rep, "reflected")


# --- blind fits of scaled profiles -----------------------------------------------------------


def test_gpt_oss_yarn_blind_base_150000_truncate_false():
    cfg, base, rope = _rope_fields("gpt-oss-20b.json")
    res = ROPE_SCALINGS["yarn"](
        dim=cfg["head_dim"],
        base=base,
        factor=rope["factor"],
        original_max_position=rope["original_max_position_embeddings"],
        beta_fast=rope["beta_fast"],
        beta_slow=rope["beta_slow"],
        truncate=rope["truncate"],
    )
    fn = with_freqs(res.inv_freq, res.attention_scaling)
    rep = check_rope(fn, dim=64)
    assert rep.ok, str(rep)
    assert rep.scaling == "yarn" and rep.base == 150000.0
    assert rep.scaling_params["factor"] == 32.0
    assert rep.scaling_params["original_max_position"] == 4096
    assert rep.scaling_params["truncate"] is False
    assert rep.attention_scaling == pytest.approx(res.attention_scaling)
    assert rep.attention_scaling_applied == "once"


def test_llama4_scout_equal_band_factors_step_blind():
    cfg, base, rope = _rope_fields("llama4-text.handmade.json")
    d, s, L = cfg["head_dim"], rope["factor"], rope["original_max_position_embeddings"]
    th = geometric(d, base)
    # Llama 4's llama3 with low_freq_factor == high_freq_factor: a step, no smooth band
    # (transformers' _compute_llama3_parameters: wavelen > L / low_freq_factor -> theta / s)
    step = np.where(2 * np.pi / th > L / rope["low_freq_factor"], th / s, th)
    rep = check_rope(with_freqs(step), dim=d)
    assert rep.ok, str(rep)
    assert rep.scaling == "llama3" and rep.base == 500000.0
    assert rep.scaling_params["factor"] == 16.0
    assert rep.scaling_params["original_max_position"] == 8192
    assert rep.scaling_params["low_freq_factor"] == rep.scaling_params["high_freq_factor"] == 1.0


def _deepseek_v3():
    cfg, base, rope = _rope_fields("deepseek-v3.handmade.json")
    kw = dict(
        dim=cfg["qk_rope_head_dim"],
        base=base,
        factor=rope["factor"],
        original_max_position=rope["original_max_position_embeddings"],
        beta_fast=rope["beta_fast"],
        beta_slow=rope["beta_slow"],
    )
    res = ROPE_SCALINGS["yarn"](**kw, mscale=rope["mscale"], mscale_all_dim=rope["mscale_all_dim"])
    default = ROPE_SCALINGS["yarn"](**kw)  # 0.1 ln(40) + 1 without the mscale fields
    return res, default


def test_deepseek_v3_blind_reports_measured_scaling_not_missing():
    res, default = _deepseek_v3()
    assert res.attention_scaling == 1.0 and default.attention_scaling > 1.3
    rep = check_rope(with_freqs(res.inv_freq, res.attention_scaling), dim=64)
    assert rep.ok, str(rep)
    assert rep.scaling == "yarn" and rep.scaling_params["factor"] == 40.0
    assert rep.attention_scaling == pytest.approx(1.0)
    assert not _has(rep, "missing") and _has(rep, "mscale == mscale_all_dim")


def test_expected_yarn_factor_forgotten_or_doubled_is_caught():
    _, default = _deepseek_v3()
    spec = types.SimpleNamespace(
        dim=64,
        rotary_dim=64,
        base=1e4,
        inv_freq=default.inv_freq,
        pairing="half",
        attention_scaling=default.attention_scaling,
        rope_type="yarn",
        params={"factor": 40.0},
    )
    s = default.attention_scaling
    good = check_rope(with_freqs(default.inv_freq, s), dim=64, expected=spec)
    assert good.ok and good.attention_scaling_applied == "once", str(good)
    forgotten = check_rope(with_freqs(default.inv_freq), dim=64, expected=spec)
    assert not forgotten.ok and forgotten.attention_scaling_applied == "none"
    assert _has(forgotten, "is missing")
    doubled = check_rope(with_freqs(default.inv_freq, s * s), dim=64, expected=spec)
    assert not doubled.ok and doubled.attention_scaling_applied == "twice"


@pytest.mark.parametrize("factor", [4.18287, np.pi])
def test_fitted_linear_factor_is_not_rounded_then_judged(factor):
    rep = check_rope(with_freqs(geometric(64, 1e4) / factor), dim=64)
    assert rep.ok, str(rep)
    assert rep.precision == "float64" and rep.scaling == "linear"
    assert rep.scaling_params["factor"] == pytest.approx(factor, rel=1e-12)
    assert rep.base == 10000.0


# --- short caches ----------------------------------------------------------------------------


def _cached(length, error):
    cos, sin = refimpl.cos_sin(np.arange(length), dim=64)

    def fn(x, p):
        p = np.asarray(p)
        if np.any(p >= length):
            raise error(f"index {int(p.max())} is out of bounds for a cache of {length}")
        h = 32
        c, s = cos[p], sin[p]
        return np.concatenate([x[:, :h] * c - x[:, h:] * s, x[:, h:] * c + x[:, :h] * s], 1)

    return fn


@pytest.mark.parametrize("length", [64, 1000, 5000])
@pytest.mark.parametrize("error", [IndexError, RuntimeError])
def test_short_cache_never_crashes_the_check(length, error):
    rep = check_rope(_cached(length, error), dim=64)
    assert rep.ok, str(rep)
    assert rep.base == 10000.0 and np.all(rep.positions < length)
    assert _has(rep, "only positions below", error.__name__)
    # positions chosen by the caller beyond the cache: a failing verdict, not an exception
    rep = check_rope(_cached(length, error), dim=64, positions=[0, 1, 2, 4, 8, length + 5])
    assert not rep.ok and _has(rep, "size its cache")


# --- reports that agree with a matched expectation -------------------------------------------


def test_matched_longrope_spec_gives_consistent_fields():
    rng = np.random.default_rng(3)
    lam = np.sort(rng.uniform(1.0, 20.0, 32))
    th = geometric(64, 1e4) / lam
    spec = types.SimpleNamespace(
        dim=64,
        rotary_dim=64,
        base=1e4,
        inv_freq=th,
        pairing="half",
        attention_scaling=1.19,
        rope_type="longrope",
        params={"factor": 32.0},
    )
    rep = check_rope(with_freqs(th, 1.19), dim=64, expected=spec)
    assert rep.ok, str(rep)
    assert rep.scaling == "longrope" and rep.base == 1e4 and rep.scaling_params == {"factor": 32.0}
    assert "unknown" not in str(rep) and "n/a" not in str(rep).split("base")[1].split("\n")[0]
    assert not _has(rep, "matches no known scaling family")


def test_linear_factor_mismatch_names_the_factor():
    th = geometric(64, 1e4)
    spec = types.SimpleNamespace(
        dim=64,
        rotary_dim=64,
        base=1e4,
        inv_freq=th / 2.0,
        pairing="half",
        attention_scaling=1.0,
        rope_type="linear",
    )
    rep = check_rope(with_freqs(th / 4.18), dim=64, expected=spec)  # factor 4.18, not 2
    assert not rep.ok and _has(rep, "base 10000 divided by 4.18")
    assert not _has(rep, "2.09")


def test_xpos_is_named_not_a_precision_class():
    scale = refimpl.xpos_scale(np.arange(40000), 64)  # (m, d/2) factors zeta^(m/512)

    def xpos_q(x, p):
        sc = scale[np.asarray(p)]
        return rotate(x * np.concatenate([sc, sc], 1), np.outer(p, geometric(64, 1e4)))

    rep = check_rope(xpos_q, dim=64)
    assert not rep.ok and _has(rep, "xpos")
    assert "tables" not in rep.precision


# --- partial and proportional rotary ---------------------------------------------------------


def test_partial_rotary_without_rotary_dim_is_a_finding():
    fn = lambda x, p: refimpl.apply_rope(x, p, rotary_dim=32)  # noqa: E731
    rep = check_rope(fn, dim=64)
    assert not rep.ok and _has(rep, "rotates only 32 of the 64", "rotary_dim=32")
    assert check_rope(fn, dim=64, rotary_dim=32).ok


def test_proportional_rope_recognised():
    cfg = json.loads((CONFIGS / "gemma4-text.transformers-defaults.json").read_text())
    full = cfg["rope_parameters"]["full_attention"]
    d, base = cfg["head_dim"], full["rope_theta"]
    k = int(d * full["partial_rotary_factor"]) // 2  # rotating pairs
    th = np.where(np.arange(d // 2) < k, base ** (-2.0 * np.arange(d // 2) / d), 0.0)
    rep = check_rope(with_freqs(th), dim=d)
    assert rep.ok, str(rep)
    assert rep.pairing == "half" and rep.rotary_dim == d and rep.scaling == "proportional"
    assert rep.base == base and int(np.sum(rep.inv_freq > 0)) == k
    assert _has(rep, "proportional rope")
    spec = types.SimpleNamespace(
        dim=d,
        rotary_dim=d,
        base=base,
        inv_freq=th,
        pairing="half",
        attention_scaling=1.0,
        rope_type="proportional",
    )
    assert check_rope(with_freqs(th), dim=d, expected=spec).ok
    # the leading-slice partial rotary of the same width is a different function
    partial = lambda x, p: refimpl.apply_rope(x, p, base=base, rotary_dim=2 * k)  # noqa: E731
    assert not check_rope(partial, dim=d, expected=spec).ok


# --- argument rules --------------------------------------------------------------------------


def test_positions_beyond_the_limit_are_refused():
    with pytest.raises(ValueError, match="positions must be at most"):
        check_rope(refimpl.apply_rope, dim=8, positions=[0, 1, 1e19])
    with pytest.raises(ValueError, match="positions"):
        check_rope(refimpl.apply_rope, dim=8, positions=np.array([0, 1, 2**62]))


def test_seq_len_is_validated_and_never_ignored():
    with pytest.raises(TypeError, match="seq_len must be an integer"):
        check_rope(refimpl.apply_rope, dim=8, seq_len="abc")
    with pytest.raises(ValueError, match="seq_len is used only when expected is a model config"):
        check_rope(refimpl.apply_rope, dim=8, seq_len=100)


def test_dim_limit_refused_up_front():
    calls = []
    with pytest.raises(ValueError, match=f"dim must be at most {MAX_CHECK_DIM}"):
        check_rope(lambda x, p: calls.append(1) or x, dim=4096)
    assert calls == []


def test_findings_have_a_severity():
    rep = check_rope(lambda x, p: refimpl.apply_rope(x, -np.asarray(p)), dim=16)
    assert all(isinstance(f, Finding) and f.severity in ("error", "note") for f in rep.findings)
    assert rep.findings[0].severity == "error" and "wrong way" in rep.findings[0].text
    with pytest.raises(ValueError, match="severity"):
        Finding("warning", "x")


# --- check_rope_arrays -----------------------------------------------------------------------


def _rows(d, positions, per=None, dtype=np.float64, seed=0):
    pos = np.repeat(positions, per or d)
    x = np.random.default_rng(seed).standard_normal((len(pos), d)).astype(dtype)
    return pos, x


def test_arrays_same_stages_as_the_callable():
    pos, x = _rows(32, [0, 1, 2, 3, 8, 64, 1024, 4096, 30001])
    rep = check_rope_arrays(pos, x, refimpl.apply_rope(x, pos, base=5e5), dim=32)
    assert rep.ok and rep.base == 500000.0 and rep.precision == "float64", str(rep)
    rep = check_rope_arrays(pos, x, deepseek_rope_interleave(x, pos), dim=32)
    assert rep.ok and rep.pairing == "interleaved", str(rep)
    np.testing.assert_array_equal(rep.output_permutation, _half_order(32))
    flipped = check_rope_arrays(pos, x, refimpl.apply_rope(x, -pos), dim=32, base=1e4)
    assert not flipped.ok and flipped.direction == -1


def test_arrays_float32_rows_pass_and_few_rows_are_skipped():
    pos, x = _rows(16, [0, 1, 2, 4, 8, 512], dtype=np.float32)
    y = refimpl.apply_rope(x, pos)  # float32 in, float32 out
    extra = np.full(3, 7.0)  # position 7 with only 3 rows: not enough for its matrix
    xe = np.random.default_rng(1).standard_normal((3, 16)).astype(np.float32)
    ye = refimpl.apply_rope(xe, extra)
    rep = check_rope_arrays(np.r_[pos, extra], np.r_[x, xe], np.r_[y, ye], dim=16, base=1e4)
    assert rep.ok and rep.precision == "float32", str(rep)
    assert 7.0 not in rep.positions and _has(rep, "fewer than dim=16")


def test_arrays_errors():
    pos, x = _rows(8, [0, 1, 2])
    with pytest.raises(ValueError, match=r"y must have shape \(len\(positions\), dim\)"):
        check_rope_arrays(pos, x, x[:, :4], dim=8)
    with pytest.raises(ValueError, match="positions 0 and 1 must each have"):
        check_rope_arrays(pos[8:], x[8:], x[8:], dim=8)
    pos, x = _rows(8, [0, 1, 2], per=24)  # more rows than dim: the fit has a residual
    rep = check_rope_arrays(pos, x, np.tanh(refimpl.apply_rope(x, pos)), dim=8)
    assert not rep.ok and _has(rep, "not a linear function")


@pytest.mark.parametrize("offset", [12, -37, 1000])
def test_large_position_offsets_are_measured(offset):
    """A cache length added twice on a query path: offsets beyond pi / theta_0 unwrap too."""
    fn = lambda x, p: refimpl.apply_rope(x, np.asarray(p) + offset)  # noqa: E731
    rep = check_rope(fn, dim=64)
    assert rep.position_offset == offset and not rep.ok
    assert _has(rep, f"rotated as m + {offset}")


def test_expected_rotary_offset_slice():
    d, o, r = 64, 8, 32

    def sliced(x, p):  # rotates features [8, 40): a spec with rotary_offset=8
        out = np.array(x, dtype=float)
        out[:, o : o + r] = refimpl.apply_rope(out[:, o : o + r], p)
        return out

    spec = types.SimpleNamespace(
        dim=d, rotary_dim=r, base=1e4, inv_freq=geometric(r, 1e4), pairing="half",
        attention_scaling=1.0, rotary_offset=o,
    )  # fmt: skip
    assert check_rope(sliced, dim=d, expected=spec).ok
    rep = check_rope(sliced, dim=d, rotary_dim=r)  # the leading slice was expected
    assert not rep.ok and _has(rep, "rotated features are 8..39")


class _Record:
    """A stand-in with the scaling records' interface (INTERFACES.md): keys, defaults, call."""

    def __init__(self):
        self.keys = {
            "factor": "factor",
            "original_max_position_embeddings": "original_max_position",
            "beta_fast": "beta_fast",
            "beta_slow": "beta_slow",
            "truncate": "truncate",
        }
        self.defaults = {"beta_fast": 32.0, "beta_slow": 1.0}
        self.fit = None

    def __call__(self, *, dim, base, **params):
        return ROPE_SCALINGS["yarn"](dim=dim, base=base, **params)


def test_families_are_read_through_records(monkeypatch):
    res = ROPE_SCALINGS["yarn"](dim=64, base=150000.0, factor=32.0, original_max_position=4096,
                                truncate=False)  # fmt: skip
    record = _Record()
    registry = {"record_yarn": record}
    monkeypatch.setattr("refimpl.check.fit._family_methods", lambda: list(registry.items()))
    rep = check_rope(with_freqs(res.inv_freq, res.attention_scaling), dim=64)
    assert rep.ok and rep.scaling == "record_yarn", str(rep)
    assert rep.scaling_params["truncate"] is False and rep.scaling_params["factor"] == 32.0


@given(
    base=st.floats(min_value=200.0, max_value=2e6),
    half=st.integers(min_value=2, max_value=24),
    pairing=st.sampled_from(["half", "interleaved"]),
    permuted=st.booleans(),
)
def test_arrays_recover_any_base_pairing_and_output_order(base, half, pairing, permuted):
    d = 2 * half
    pos, x = _rows(d, [0, 1, 2, 3, 8, 64, 1024, 4096])
    y = refimpl.apply_rope(x, pos, base=base, pairing=pairing)
    order = _half_order(d) if permuted and pairing == "interleaved" else np.arange(d)
    rep = check_rope_arrays(pos, x, y[:, order], dim=d)
    assert rep.ok, str(rep)
    assert rep.pairing == pairing and rep.base == pytest.approx(base, rel=2e-3)
    if np.array_equal(order, np.arange(d)):
        assert rep.output_permutation is None
    else:
        np.testing.assert_array_equal(rep.output_permutation, order)
    np.testing.assert_allclose(rep.inv_freq, refimpl.inv_freq(d, base), rtol=1e-9)


@pytest.mark.parametrize(
    ("name", "layer_type", "scaling", "params"),
    [
        ("deepseek-v3.handmade.json", None, "yarn", {"factor": 40.0}),
        ("gpt-oss-20b.json", "full_attention", "yarn", {"factor": 32.0, "truncate": False}),
        ("llama4-text.handmade.json", None, "llama3", {"factor": 16.0, "low_freq_factor": 1.0}),
        ("gemma4-text.transformers-defaults.json", "full_attention", "proportional", {}),
    ],
)
def test_real_configs_through_rope_from_config(name, layer_type, scaling, params):
    """The spec read from a real config (refimpl.config) passes against itself and blind, and
    the blind report names the same family and parameters."""
    kw = {} if layer_type is None else {"layer_type": layer_type}
    spec = refimpl.rope_from_config(CONFIGS / name, **kw)
    judged = check_rope(spec.apply, dim=spec.dim, expected=spec)
    assert judged.ok and judged.scaling == spec.rope_type, str(judged)
    blind = check_rope(spec.apply, dim=spec.dim, rotary_dim=spec.rotary_dim)
    assert blind.ok and blind.scaling == scaling and blind.base == spec.base, str(blind)
    for key, value in params.items():
        assert blind.scaling_params[key] == value
    assert blind.attention_scaling == pytest.approx(spec.attention_scaling)
    permuted = getattr(spec, "output_order", "same") == "half"
    assert (blind.output_permutation is not None) == permuted


def test_blind_per_pair_factors_longrope_style():
    lam = np.r_[np.full(4, 1.05), np.linspace(1.1, 30.0, 28)]  # non-decreasing, Phi-3-like
    th = geometric(64, 1e4) / lam
    rep = check_rope(with_freqs(th), dim=64)
    assert rep.ok and rep.scaling == "freq_factors" and rep.base == 1e4, str(rep)
    np.testing.assert_allclose(rep.scaling_params["factors"], lam, rtol=1e-9)
    assert _has(rep, "per-pair factors from 1.05 to 30", "pass expected=")
    # factors that fall again toward the slow pairs are no interpolation: not a RoPE of a base
    bad = check_rope(with_freqs(geometric(64, 1e4) / lam[::-1]), dim=64)
    assert not bad.ok and _has(bad, "not a rope of any base")
