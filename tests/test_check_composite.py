"""check_rope names composite mistakes by their cause: each case below is the arithmetic of a
bug that shipped in an engine or library (cited), and the finding must name that cause, never a
precision class or an offset that is not there.

Real configs are read from tests/parity/configs (see SOURCES.md there).
"""

import json
import pathlib

import numpy as np
import pytest

import refimpl
from refimpl.check import check_rope, check_rope_arrays
from refimpl.numerics import round_to
from refimpl.scaling import ROPE_SCALINGS

CONFIGS = pathlib.Path(__file__).parent / "parity" / "configs"
D = 64


def _text(rep):
    return " ".join(rep.findings)


def _rotate(x, angles, scale=1.0):
    """Half-split rotation of x (seq, d) by angles (seq, d/2)."""
    x = np.asarray(x, dtype=np.float64)
    h = x.shape[-1] // 2
    c, s = scale * np.cos(angles), scale * np.sin(angles)
    return np.concatenate([x[:, :h] * c - x[:, h:] * s, x[:, h:] * c + x[:, :h] * s], axis=1)


def _no_precision_blame(rep):
    assert not any(f.startswith("precision") or "errors suggest" in f for f in rep.findings), str(
        rep
    )


# --- rotation applied twice, a factor applied twice -----------------------------------------


def test_rotation_applied_twice():
    """labmlai/annotated_deep_learning_paper_implementations#251: the value embedding was
    rotated twice (the rotation applied to an already rotated tensor)."""
    twice = lambda x, p: refimpl.apply_rope(refimpl.apply_rope(x, p), p)  # noqa: E731
    rep = check_rope(twice, dim=D, base=10000.0, pairing="half")
    assert not rep.ok
    assert "exactly 2 times the expected" in rep.findings[0] and "applied 2 times" in _text(rep)
    assert "position interpolation" not in _text(rep)
    _no_precision_blame(rep)


def test_interpolation_factor_applied_twice():
    """ggml-org/ggml#835: ``theta_base *= freq_scale`` ran again inside rope_yarn, so the
    frequencies were scaled by freq_scale**2 instead of freq_scale."""
    s = 4.0
    spec = refimpl.rope_from_config(
        {"model_type": "llama", "hidden_size": 128, "num_attention_heads": 2, "head_dim": D,
         "rope_theta": 10000.0, "rope_scaling": {"rope_type": "linear", "factor": s}}
    )  # fmt: skip
    ggml = lambda x, p: refimpl.apply_rope(x, p, inv_freq=refimpl.inv_freq(D) / s**2)  # noqa: E731
    rep = check_rope(ggml, dim=D, expected=spec)
    assert not rep.ok and "the factor is applied twice" in _text(rep), str(rep)
    _no_precision_blame(rep)


# --- the expected method with one parameter changed -----------------------------------------


def test_yarn_on_a_hard_coded_base():
    """sgl-project/SpecForge#651 (review): the YaRN rotary module of a DeepSeek-architecture
    draft model was built without ``base=rope_theta``, so YaRN ran on the default base 10000.
    Kimi-K2's released config (DeepSeek-V3 architecture) has rope_theta 50000."""
    spec = refimpl.rope_from_config(CONFIGS / "kimi-k2-instruct-0905.excerpt.json")
    kw = {k: v for k, v in spec.params.items()}
    wrong = ROPE_SCALINGS["yarn"](dim=spec.rotary_dim, base=10000.0, **kw)
    fn = lambda x, p: refimpl.apply_rope(  # noqa: E731
        x, p, inv_freq=wrong.inv_freq, pairing=spec.pairing, output_order=spec.output_order
    )
    rep = check_rope(fn, dim=spec.dim, expected=spec)
    assert not rep.ok
    assert "yarn scaling computed on base 10000 instead of the expected 50000" in _text(rep)
    _no_precision_blame(rep)


def test_k_shift_with_another_layers_base():
    """ggml-org/llama.cpp#12357 (fixed by #12373): the KV-cache shift of Gemma 3 re-rotated
    the keys of sliding-window layers (base 10000) with the global layers' base 1e6."""
    cfg = json.loads((CONFIGS / "gemma3-1b-it.json").read_text())
    local, glob = float(cfg["rope_local_base_freq"]), float(cfg["rope_theta"])
    d = cfg["head_dim"]
    shift = lambda k, delta: refimpl.rerotate_keys(k, delta, base=glob)  # noqa: E731
    rep = check_rope(shift, dim=d, base=local, pairing="half")
    assert not rep.ok and f"fit base {glob:g}, not {local:g}" in rep.findings[0]
    assert "another layer's base" in rep.findings[0]
    _no_precision_blame(rep)


def test_yarn_truncate_false_ignored():
    """gpt-oss sets ``truncate: false`` (vllm-project/vllm#28244 added it to vLLM); an engine
    that always rounds the correction range (llama.cpp, mlx-lm) computes other frequencies."""
    spec = refimpl.rope_from_config(CONFIGS / "gpt-oss-20b.json")
    kw = dict(spec.params, truncate=True)
    rounded = ROPE_SCALINGS["yarn"](dim=spec.rotary_dim, base=spec.base, **kw)
    fn = lambda x, p: refimpl.apply_rope(  # noqa: E731
        x, p, inv_freq=rounded.inv_freq, attention_scaling=rounded.attention_scaling
    )
    rep = check_rope(fn, dim=spec.dim, expected=spec)
    assert not rep.ok and "truncate: false is ignored" in _text(rep), str(rep)
    _no_precision_blame(rep)


def test_the_other_longrope_set():
    """vllm-project/vllm#27431 (issue #27414): the LongRoPE factor set is chosen from
    max_model_len, so a short sequence is rotated with the long factors."""
    short = list(np.round(np.linspace(1.0, 1.5, D // 2) ** 2, 4))  # hand-made, Phi-3-like
    long = list(np.round(np.linspace(1.0, 12.0, D // 2), 4))
    config = {
        "model_type": "phi3", "hidden_size": 2 * D, "num_attention_heads": 2,
        "max_position_embeddings": 131072, "original_max_position_embeddings": 4096,
        "rope_theta": 10000.0,
        "rope_scaling": {"type": "longrope", "short_factor": short, "long_factor": long},
    }  # fmt: skip
    spec = refimpl.rope_from_config(config, seq_len=2048)  # short sequence: short factors
    long_freqs = refimpl.inv_freq(D) / np.asarray(long)
    fn = lambda x, p: refimpl.apply_rope(  # noqa: E731
        x, p, inv_freq=long_freqs, attention_scaling=spec.attention_scaling
    )
    rep = check_rope(fn, dim=D, expected=spec, positions=[0, 1, 2, 4, 8, 64, 512, 2047])
    assert not rep.ok and "other LongRoPE set, long_factor" in _text(rep), str(rep)
    assert "takes short_factor" in _text(rep)


# --- positions that are not used as given ---------------------------------------------------


def test_positions_clamped_at_the_table_length():
    """A cos/sin table of L rows gathered past its end with clamping indices (XLA's gather
    clamps out-of-range indices: jax-ml/jax#4455; tenstorrent/tt-mlir#9211 shows the spec's
    clamp): every position beyond L - 1 gets the angles of L - 1."""
    L = 4096
    cos, sin = refimpl.cos_sin(np.arange(L), dim=D)

    def clamped(x, p):
        i = np.clip(np.asarray(p), 0, L - 1)
        return _rotate(x, np.arctan2(sin[i], cos[i]))

    rep = check_rope(clamped, dim=D, base=10000.0, pairing="half")
    assert not rep.ok
    assert "stop growing beyond position 4095" in rep.findings[0], str(rep)
    assert rep.base == 10000.0 and rep.position_offset == 0.0
    _no_precision_blame(rep)


def test_a_constant_phase_per_pair():
    """PoPE's learned key phase (lucidrains/x-transformers ``PolarEmbedding``: a bias in
    [-2 pi, 0] added to every key angle), checked as if it were RoPE: position 0 is rotated by
    a phase no offset explains; neither an offset nor a precision class is blamed."""
    bias = np.random.default_rng(0).uniform(-2 * np.pi, 0.0, D // 2)
    theta = refimpl.inv_freq(D)
    pope_key = lambda x, p: _rotate(x, np.outer(p, theta) + bias)  # noqa: E731
    rep = check_rope(pope_key, dim=D, base=10000.0, pairing="half")
    assert not rep.ok and "constant phase per pair" in rep.findings[0], str(rep)
    assert "rotated as m +" not in _text(rep)
    _no_precision_blame(rep)


# --- attention factors ------------------------------------------------------------------------


def test_attention_factor_that_should_cancel():
    """kekzl/imp#880: with mscale == mscale_all_dim transformers' factor on cos/sin is their
    ratio, 1 (Kimi-K2, DeepSeek-V3), and the engine applied 0.1 mscale ln(s) + 1 there; the
    two values were also disputed across exllamav3 releases (turboderp-org/exllamav3#259)."""
    spec = refimpl.rope_from_config(CONFIGS / "kimi-k2-instruct-0905.excerpt.json")
    assert spec.attention_scaling == 1.0
    default = 0.1 * np.log(spec.params["factor"]) + 1.0
    fn = lambda x, p: spec.apply(x, p) * default  # noqa: E731
    rep = check_rope(fn, dim=spec.dim, expected=spec)
    assert not rep.ok and "factors cancel to 1" in _text(rep), str(rep)


def test_attention_factor_and_engine_default_both_applied():
    """sgl-project/sglang#33558: the config's attention_factor is the final factor, but the
    engine multiplied it by its own 0.1 ln(s) + 1 (1.4852 became 2.2058 at factor 128)."""
    cfg = {"model_type": "llama", "hidden_size": 128, "num_attention_heads": 2, "head_dim": D,
           "rope_theta": 10000.0, "max_position_embeddings": 524288,
           "rope_scaling": {"rope_type": "yarn", "factor": 128.0, "attention_factor": 1.2,
                            "original_max_position_embeddings": 4096}}  # fmt: skip
    spec = refimpl.rope_from_config(cfg)
    default = 0.1 * np.log(128.0) + 1.0
    fn = lambda x, p: refimpl.apply_rope(  # noqa: E731
        x, p, inv_freq=spec.inv_freq, attention_scaling=1.2 * default
    )
    rep = check_rope(fn, dim=D, expected=spec)
    assert not rep.ok and "both applied" in _text(rep), str(rep)


def test_stated_attention_factor_ignored():
    """ml-explore/mlx-lm#1507 (closed unmerged): mlx-lm's YarnRoPE computes its own
    0.1 ln(s) + 1 and ignores a config's explicit attention_factor."""
    cfg = {"model_type": "llama", "hidden_size": 128, "num_attention_heads": 2, "head_dim": D,
           "rope_theta": 10000.0, "max_position_embeddings": 524288,
           "rope_scaling": {"rope_type": "yarn", "factor": 128.0, "attention_factor": 1.2,
                            "original_max_position_embeddings": 4096}}  # fmt: skip
    spec = refimpl.rope_from_config(cfg)
    own = 0.1 * np.log(128.0) + 1.0
    fn = lambda x, p: refimpl.apply_rope(x, p, inv_freq=spec.inv_freq, attention_scaling=own)  # noqa: E731
    rep = check_rope(fn, dim=D, expected=spec)
    assert not rep.ok and "attention_factor (or its mscale ratio) is ignored" in _text(rep)


# --- per-stage precision ----------------------------------------------------------------------


def test_flash_attention_bf16_positions_and_tables():
    """flash-attention's RotaryEmbedding with ``pos_idx_in_fp32=False`` in a model cast to
    bfloat16: positions ``arange`` in inv_freq's dtype (bfloat16), the product in bfloat16 and
    cos/sin cast to bfloat16. The report names the rounded stages by their share of the
    error; the positions (whose fix the old "bfloat16 tables" finding left out) come first."""
    inv = round_to(refimpl.inv_freq(D), "bfloat16").astype(np.float64)

    def flash_bf16(x, p):
        t = round_to(np.asarray(p, dtype=np.float64), "bfloat16").astype(np.float64)
        freqs = round_to(np.outer(t, inv), "bfloat16").astype(np.float64)
        c = round_to(np.cos(freqs), "bfloat16").astype(np.float64)
        s = round_to(np.sin(freqs), "bfloat16").astype(np.float64)
        x = np.asarray(x, dtype=np.float64)
        h = D // 2
        return np.concatenate([x[:, :h] * c - x[:, h:] * s, x[:, h:] * c + x[:, :h] * s], 1)

    rep = check_rope(flash_bf16, dim=D, base=10000.0, pairing="half")
    assert not rep.ok
    stages = {st.stage: st.format for st in rep.precision_stages}
    assert stages.get("positions") == "bfloat16" and stages.get("tables") == "bfloat16", str(rep)
    assert rep.precision_stages[0].stage != "tables"
    assert rep.precision != "bfloat16 tables"
    assert all(st.pipeline_class == f"{st.format}-{st.stage}" for st in rep.precision_stages)
    errors = [st.error for st in rep.precision_stages]
    assert errors == sorted(errors, reverse=True)
    assert "float32 or int" in _text(rep)  # the positions' fix is given


@pytest.mark.parametrize(
    ("stage", "fmt"),
    [("angles", "bfloat16"), ("tables", "float16"), ("positions", "bfloat16")],
)
def test_one_rounded_stage_is_named_alone(stage, fmt):
    theta = refimpl.inv_freq(D)

    def fn(x, p):
        p = np.asarray(p, dtype=np.float64)
        if stage == "positions":
            p = round_to(p, fmt).astype(np.float64)
        ang = np.outer(p, theta)
        if stage == "angles":
            ang = round_to(ang, fmt).astype(np.float64)
        c, s = np.cos(ang), np.sin(ang)
        if stage == "tables":
            c, s = (round_to(v, fmt).astype(np.float64) for v in (c, s))
        x = np.asarray(x, dtype=np.float64)
        h = D // 2
        return np.concatenate([x[:, :h] * c - x[:, h:] * s, x[:, h:] * c + x[:, :h] * s], 1)

    rep = check_rope(fn, dim=D, base=10000.0, pairing="half")
    assert [(st.stage, st.format) for st in rep.precision_stages] == [(stage, fmt)], str(rep)


def test_float64_and_float32_pipelines_have_no_half_stage():
    assert check_rope(refimpl.apply_rope, dim=D).precision_stages == ()
    f32 = lambda x, p: refimpl.apply_rope(np.asarray(x, np.float32), p)  # noqa: E731
    rep = check_rope(f32, dim=D)
    assert rep.ok and [st.format for st in rep.precision_stages] == ["float32"], str(rep)


# --- maps that are not rotations ----------------------------------------------------------


def test_identity_rotation_blend_is_not_a_precision_class():
    a = 0.3
    blend = lambda x, p: (1 - a) * np.asarray(x, float) + a * refimpl.apply_rope(x, p)  # noqa: E731
    rep = check_rope(blend, dim=D, base=10000.0)
    assert not rep.ok and "not a rotation" in _text(rep), str(rep)
    assert "a = 0.3" in _text(rep) and rep.precision == "undetermined"
    _no_precision_blame(rep)


# --- the declaration rule -------------------------------------------------------------------


def test_undeclared_attention_scaling_fails_when_anything_is_expected():
    scaled = lambda x, p: 1.2 * refimpl.apply_rope(x, p)  # noqa: E731
    blind = check_rope(scaled, dim=D)
    assert blind.ok and "1.2" in _text(blind)  # blind: measured and reported
    rep = check_rope(scaled, dim=D, base=10000.0, pairing="half")
    assert not rep.ok and "no attention scaling was declared" in _text(rep), str(rep)
    assert check_rope(scaled, dim=D, base=10000.0, attention_scaling=1.2).ok


def test_undeclared_output_order_fails_when_anything_is_expected():
    half = np.concatenate([np.arange(0, D, 2), np.arange(1, D, 2)])
    fn = lambda x, p: refimpl.apply_rope(x, p, pairing="interleaved")[..., half]  # noqa: E731
    assert check_rope(fn, dim=D).ok
    rep = check_rope(fn, dim=D, base=10000.0)
    assert not rep.ok and "Declare output_order='half'" in _text(rep)
    assert check_rope(fn, dim=D, base=10000.0, output_order="half").ok
    with pytest.raises(ValueError, match="output_order must be one of"):
        check_rope(fn, dim=D, output_order="halfsplit")


def test_declared_offset():
    fn = lambda x, p: refimpl.apply_rope(x, np.asarray(p) + 12)  # noqa: E731
    assert check_rope(fn, dim=D, base=10000.0, offsets=12).ok
    rep = check_rope(fn, dim=D, base=10000.0, offsets=11)
    assert not rep.ok and "declared offset is 11" in _text(rep)
    with pytest.raises(TypeError, match="offsets must be a real number"):
        check_rope(fn, dim=D, offsets="12")


# --- check_rope_arrays: declarations and the noise floor of the data --------------------------


def _rows(positions, d, dtype=np.float64, seed=0, per=2):
    pos = np.repeat(positions, per * d)
    return pos, np.random.default_rng(seed).standard_normal((len(pos), d)).astype(dtype)


def test_arrays_noise_floor_comes_from_the_data():
    """float32 outputs stored as float64: the pass-through features of a partial rotation were
    reported "mixed with several others" when the noise floor came from the storage dtype."""
    pos, x = _rows([0, 1, 2, 4, 64, 1024, 4096], D, np.float32)
    y = refimpl.apply_rope(x, pos, rotary_dim=32)  # float32 in, float32 out
    rep = check_rope_arrays(pos, x.astype(np.float64), y.astype(np.float64), dim=D, rotary_dim=32)
    assert rep.ok and rep.rotary_dim == 32, str(rep)
    assert "mixed with several others" not in _text(rep)


def test_arrays_take_the_same_declarations():
    spec = refimpl.rope_from_config(CONFIGS / "kimi-k2-instruct-0905.excerpt.json")
    pos, x = _rows([0, 1, 2, 3, 8, 64, 1024, 4096], spec.dim)
    y = spec.apply(x, pos)
    assert check_rope_arrays(pos, x, y, dim=spec.dim, expected=spec, output_order="half").ok
    rep = check_rope_arrays(pos, x, y, dim=spec.dim, expected=spec, output_order="same")
    assert not rep.ok
    # per-row offsets: rows rotated at positions + offsets
    off = np.repeat([0, 0, 5, 5, 7, 7, 9, 9], 2 * spec.dim)
    y_off = spec.apply(x, pos + off)
    assert check_rope_arrays(pos, x, y_off, dim=spec.dim, expected=spec, offsets=off).ok
    with pytest.raises(ValueError, match="offsets must be a number or have one entry per row"):
        check_rope_arrays(pos, x, y_off, dim=spec.dim, offsets=off[:5])
