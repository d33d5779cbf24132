"""rope_from_config and RopeSpec: the config forms, the readers, the spec's invariants, the
refusal policy and hostile config files. Every config here is hand-made (labelled by the
constant's name); released configs are tested in tests/parity/."""

import dataclasses
import json
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import refimpl
from refimpl.config import (
    INV_FREQ_AGREEMENT,
    RopeSpec,
    load_config,
    rope_from_config,
    rope_schedule,
)
from refimpl.multiaxis import mrope_axis_of_pair, mrope_cos_sin
from refimpl.rotary import inv_freq
from refimpl.scaling import ROPE_SCALINGS

YARN_4X = {  # hand-made, transformers 4.x form
    "hidden_size": 512,
    "num_attention_heads": 4,
    "max_position_embeddings": 131072,
    "rope_theta": 1e6,
    "rope_scaling": {"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768},
}
YARN_5X = {  # hand-made, the same in the 5.x form
    "hidden_size": 512,
    "num_attention_heads": 4,
    "max_position_embeddings": 131072,
    "rope_parameters": {
        "rope_type": "yarn",
        "rope_theta": 1e6,
        "factor": 4.0,
        "original_max_position_embeddings": 32768,
    },
}


def test_4x_and_5x_forms_give_the_same_spec():
    a, b = rope_from_config(YARN_4X), rope_from_config(YARN_5X)
    assert a.rope_type == b.rope_type == "yarn" and a.key() == b.key()
    np.testing.assert_array_equal(a.inv_freq, b.inv_freq)
    assert a.attention_scaling == b.attention_scaling == 0.1 * math.log(4.0) + 1
    want = ROPE_SCALINGS["yarn"](dim=128, base=1e6, factor=4.0, original_max_position=32768)
    np.testing.assert_array_equal(a.inv_freq, want.inv_freq)


def test_each_fact_is_stored_once():
    spec = rope_from_config(YARN_4X)
    assert not {"dim", "base", "seq_len"} & set(spec.params)
    assert spec.method_params() == {
        "dim": 128,
        "base": 1e6,
        "factor": 4.0,
        "original_max_position": 32768,
    }
    with pytest.raises(TypeError):
        spec.params["factor"] = 2.0  # read-only
    with pytest.raises(ValueError):
        spec.inv_freq[0] = 2.0  # read-only
    with pytest.raises(AttributeError):
        spec.base = 3.0


def test_path_and_config_object(tmp_path):
    p = tmp_path / "config.json"
    p.write_text(json.dumps(YARN_4X))
    spec = rope_from_config(p)
    assert spec.source == str(p)
    np.testing.assert_array_equal(spec.inv_freq, rope_from_config(YARN_4X).inv_freq)

    class Obj:
        def to_dict(self):
            return dict(YARN_5X)

    assert rope_from_config(Obj()).source == "Obj"


def test_head_dim_partial_and_gpt_neox_keys():
    spec = rope_from_config(
        {"hidden_size": 2880, "num_attention_heads": 64, "head_dim": 64, "rope_theta": 1.5e5}
    )
    assert spec.dim == 64 and spec.rotary_dim == 64
    phi = rope_from_config(
        {"hidden_size": 2560, "num_attention_heads": 32, "partial_rotary_factor": 0.4}
    )
    assert phi.dim == 80 and phi.rotary_dim == 32
    np.testing.assert_array_equal(phi.inv_freq, refimpl.inv_freq(32, 10000.0))
    neox = rope_from_config(
        {"model_type": "gpt_neox", "hidden_size": 512, "num_attention_heads": 8}
    )
    assert neox.rotary_dim == 16 and any("0.25" in n for n in neox.notes)
    pythia = rope_from_config(
        {"hidden_size": 512, "num_attention_heads": 8, "rotary_pct": 0.25, "rotary_emb_base": 1e4}
    )
    assert pythia.rotary_dim == 16 and pythia.base == 1e4


def test_original_max_position_top_level_and_legacy_su():
    cfg = {  # hand-made, Phi-3 keys
        "hidden_size": 64,
        "num_attention_heads": 4,
        "max_position_embeddings": 131072,
        "original_max_position_embeddings": 4096,
        "rope_scaling": {"type": "su", "short_factor": [1.0] * 8, "long_factor": [4.0] * 8},
    }
    short = rope_from_config(cfg)
    long = rope_from_config(cfg, seq_len=4097)
    assert short.rope_type == "longrope" and any("su" in n for n in short.notes)
    np.testing.assert_allclose(short.inv_freq * 4, long.inv_freq * 16)
    assert short.attention_scaling == math.sqrt(1 + math.log(32) / math.log(4096))


def test_nested_rope_parameters_per_layer_type():
    nested = {
        "full_attention": {"rope_type": "linear", "rope_theta": 1e6, "factor": 8.0},
        "sliding_attention": {"rope_type": "default", "rope_theta": 1e4},
    }
    cfg = {"model_type": "gemma3_text", "head_dim": 16, "rope_parameters": nested}  # hand-made
    assert rope_from_config(cfg, layer_type="full_attention").rope_type == "linear"
    assert rope_from_config(cfg, layer_type="sliding_attention").base == 1e4
    with pytest.raises(ValueError, match="the layers' ropes differ"):
        rope_from_config(cfg)
    with pytest.raises(ValueError, match="layer_type must be one of"):
        rope_from_config(cfg, layer_type="chunked")
    # without a family, a rope per layer type is a sign the generic reading cannot follow
    with pytest.raises(ValueError, match="rope_parameters nested per layer type"):
        rope_from_config({"head_dim": 16, "rope_parameters": nested}, layer_type="full_attention")


@given(st.integers(1, 200000))
def test_cos_sin_float64_equals_rotary_cos_sin_times_scaling(pos):
    spec = rope_from_config(YARN_4X)
    c, s = spec.cos_sin([pos])
    c0, s0 = refimpl.cos_sin([pos], spec.inv_freq)
    np.testing.assert_allclose(c, c0 * spec.attention_scaling, rtol=1e-15, atol=1e-300)
    np.testing.assert_allclose(s, s0 * spec.attention_scaling, rtol=1e-15, atol=1e-300)


def test_float32_tables_are_float32_and_close_to_reference():
    spec = rope_from_config(YARN_4X)
    pos = np.arange(0, 4096, 7)
    c32, _ = spec.cos_sin(pos, precision="transformers-float32")
    c64, _ = spec.cos_sin(pos)
    assert c32.dtype == np.float32 and c32.shape == (pos.shape[0], 64)
    # float32 angles: error ~ m * theta * 2**-24 (<= 4096 * 2**-24 here) plus the roundings
    assert np.max(np.abs(c32 - c64)) < 4096 * 2**-24 * 1.2 + 1e-6


def test_apply_rotates_the_rotary_part_only():
    spec = rope_from_config(
        {"hidden_size": 256, "num_attention_heads": 4, "partial_rotary_factor": 0.5}
    )
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 5, 64))
    y = spec.apply(x, np.arange(5))
    np.testing.assert_array_equal(y[..., 32:], x[..., 32:])
    want = refimpl.apply_rope(x[..., :32], np.arange(5), inv_freq=spec.inv_freq)
    np.testing.assert_allclose(y[..., :32], want, rtol=1e-14)
    y32 = spec.apply(x.astype(np.float32), np.arange(5), precision="transformers-float32")
    np.testing.assert_allclose(y32, y, atol=1e-5)
    with pytest.raises(ValueError, match=r"x must have shape \(\.\.\., seq, 64\)"):
        spec.apply(x[..., :32], np.arange(5))


def test_pair_table_regimes():
    t = rope_from_config(YARN_4X).pair_table()
    assert set(t) >= {"wavelength", "scale", "regime"}
    assert t["regime"][0] == "extrapolated" and t["regime"][-1] == "interpolated"
    assert "ramped" in set(t["regime"])
    np.testing.assert_allclose(t["wavelength"], 2 * np.pi / t["inv_freq"])


def test_pair_table_of_a_spec_built_by_hand_and_of_proportional_rope():
    theta = inv_freq(8, 1e4) / 2
    spec = RopeSpec(8, 8, 1e4, "linear", theta, params={"factor": 2.0})
    assert list(spec.pair_table()["regime"]) == ["interpolated"] * 4  # no KeyError
    prop = rope_from_config(
        {
            "head_dim": 16,
            "rope_parameters": {"rope_type": "proportional", "partial_rotary_factor": 0.5},
        }
    )
    t = prop.pair_table()
    assert list(t["regime"]) == ["extrapolated"] * 4 + ["zero"] * 4
    assert np.all(np.isinf(t["scaled_wavelength"][4:]))


# ----------------------------------------------------------------- the spec's invariants


@pytest.mark.parametrize(
    ("kwargs", "exc", "message"),
    [
        ({"dim": "x"}, TypeError, "dim must be an integer"),
        ({"rotary_dim": -3}, ValueError, "rotary_dim must be positive"),
        ({"rotary_dim": 6}, ValueError, "inv_freq has 4 entries but rotary_dim=6"),
        ({"base": "b"}, TypeError, "base must be a real number"),
        ({"base": 1.0}, ValueError, "base must be greater than 1"),
        ({"inv_freq": "z"}, TypeError, "inv_freq"),
        ({"inv_freq": [1.0, -0.1, 0.01, 0.001]}, ValueError, "inv_freq must be non-negative"),
        ({"rope_type": "cubic"}, ValueError, "unknown rope type 'cubic'"),
        ({"attention_scaling": 0.0}, ValueError, "attention_scaling must be positive"),
        ({"pairing": ""}, ValueError, "pairing must be one of"),
        ({"output_order": "half"}, ValueError, "pairing must be"),
        ({"rotary_offset": 4}, ValueError, "rotary_offset \\+ rotary_dim = 12 exceeds dim = 8"),
        ({"max_position": 1e400}, TypeError, "max_position must be an integer"),
        ({"max_position": 2**40}, ValueError, "max_position must be at most"),
        ({"seq_len": True}, TypeError, "seq_len must be an integer, got a boolean"),
        ({"params": {"base": 2.0}}, ValueError, "must not repeat the spec's fields"),
        ({"mrope_section": (1, 1, 1)}, ValueError, "given together"),
        (
            {"mrope_section": (1, 1, 1), "mrope_layout": "blocked"},
            ValueError,
            "must sum to rotary_dim // 2 = 4",
        ),
        ({"inv_freq": inv_freq(8, 1e4) * 0.55}, ValueError, "inv_freq disagrees with"),
    ],
)
def test_spec_refuses_to_construct_inconsistently(kwargs, exc, message):
    args = {"dim": 8, "rotary_dim": 8, "base": 1e4, "rope_type": "default"}
    args["inv_freq"] = inv_freq(8, 1e4)
    with pytest.raises(exc, match=message):
        RopeSpec(**{**args, **kwargs})


def test_spec_of_nonsense_fields_does_not_construct():
    with pytest.raises(TypeError, match="dim must be an integer"):
        RopeSpec(dim="x", rotary_dim=-3, base="b", rope_type="default", inv_freq="z")


def test_spec_admits_float32_stored_frequencies_and_keys_group_equal_specs():
    f32 = inv_freq(128, 1e4).astype(np.float32).astype(np.float64)
    assert np.max(np.abs(f32 / inv_freq(128, 1e4) - 1)) < INV_FREQ_AGREEMENT
    spec = RopeSpec(128, 128, 1e4, "default", f32)
    exact = RopeSpec(128, 128, 1e4, "default", inv_freq(128, 1e4))
    assert spec.key() != exact.key()  # different float64 tables
    assert exact.key() == rope_from_config({"head_dim": 128}).key()
    assert hash(exact.key()) == hash(rope_from_config({"head_dim": 128}).key())
    interleaved = rope_from_config({"head_dim": 128}, pairing="interleaved")
    assert interleaved.key() != exact.key()  # same tables, another rotation


# ----------------------------------------------------------------- M-RoPE


QWEN2_VL = {  # hand-made, Qwen2-VL text keys (legacy type "mrope")
    "model_type": "qwen2_vl",
    "hidden_size": 3584,
    "num_attention_heads": 28,
    "rope_theta": 1e6,
    "rope_scaling": {"type": "mrope", "mrope_section": [16, 24, 24]},
}


def test_mrope_configs_are_read_and_text_positions_reduce_to_1d_rope():
    spec = rope_from_config(QWEN2_VL)
    assert (spec.mrope_section, spec.mrope_layout, spec.rope_type) == (
        (16, 24, 24),
        "blocked",
        "default",
    )
    assert any("'mrope' read as 'default'" in n for n in spec.notes)
    p = np.arange(0, 5000, 37)
    ids = np.stack([p, p, p])
    for s in (spec, rope_from_config({**QWEN2_VL, "model_type": "qwen3_vl_text"})):
        c3, s3 = s.mrope_cos_sin(ids)
        c1, s1 = s.cos_sin(p)
        np.testing.assert_array_equal(c3, c1)
        np.testing.assert_array_equal(s3, s1)
    qwen3 = rope_from_config({**QWEN2_VL, "model_type": "qwen3_vl_text"})
    assert qwen3.mrope_layout == "interleaved"  # Qwen3-VL's code, whatever the flag says
    grid = np.stack([p, p // 2, p // 3])
    np.testing.assert_array_equal(
        qwen3.mrope_cos_sin(grid)[0],
        mrope_cos_sin(grid, qwen3.inv_freq, (16, 24, 24), layout="interleaved")[0],
    )


def test_mrope_5x_keys_and_unknown_family_flag():
    cfg = {  # hand-made, 5.x form of a Qwen3-VL text config
        "model_type": "qwen3_vl_text",
        "head_dim": 16,
        "rope_parameters": {
            "rope_type": "default",
            "rope_theta": 1e4,
            "mrope_section": [2, 3, 3],
            "mrope_interleaved": True,
        },
    }
    spec = rope_from_config(cfg)
    assert spec.mrope_section == (2, 3, 3) and spec.mrope_layout == "interleaved"
    # M-RoPE keys in a config of an unknown type are refused naming the key
    with pytest.raises(ValueError, match=r"rope_parameters\.mrope_section"):
        rope_from_config({**cfg, "model_type": "some_vlm"})
    other = {**QWEN2_VL, "rope_scaling": {"type": "mrope", "mrope_section": [32, 16, 16]}}
    assert rope_from_config(QWEN2_VL).key() != rope_from_config(other).key()
    # without mrope_section the model code uses its own sections (transformers 5.24's
    # Qwen2-VL rotary module falls back on [16, 24, 24]); refimpl does and says so
    bare = rope_from_config({**QWEN2_VL, "rope_scaling": {}})
    assert bare.key() == rope_from_config(QWEN2_VL).key()
    assert any("no mrope_section: [16, 24, 24]" in n for n in bare.notes)
    unknown = {**cfg, "model_type": "some_llm"}
    unknown["rope_parameters"] = {"rope_type": "default", "rope_theta": 1e4}
    assert rope_from_config(unknown).mrope_section is None  # no family default: plain RoPE


def test_imrope_text_tokens_keep_the_fourth_row_at_position_zero():
    # ggml's IMROPE gives text tokens the rows (p, p, p, 0): pairs of the fourth row stay at
    # cos 1, sin 0 (times the attention factor); the other pairs are plain RoPE
    spec = dataclasses.replace(
        rope_from_config({**QWEN2_VL, "model_type": "qwen3_vl_text"}),
        mrope_section=(24, 20, 20),
        mrope_layout="imrope",
    )
    fourth = mrope_axis_of_pair((24, 20, 20), "imrope") == 3
    assert fourth.any()
    p = np.arange(0, 5000, 7)
    plain = dataclasses.replace(spec, mrope_section=None, mrope_layout=None)
    for precision in ("float64", "transformers-float32", "ggml-float32"):
        c, s = spec.cos_sin(p, precision)
        c1, s1 = plain.cos_sin(p, precision)
        np.testing.assert_array_equal(c[:, ~fourth], c1[:, ~fourth])
        np.testing.assert_array_equal(s[:, ~fourth], s1[:, ~fourth])
        np.testing.assert_array_equal(
            c[:, fourth], np.broadcast_to(c1[0, fourth], c[:, fourth].shape)
        )
        assert not s[:, fourth].any()


@pytest.mark.parametrize(
    ("section", "exc", "message"),
    [
        (["16", 24, 24], TypeError, r"mrope_section\[0\] must be an integer, got str"),
        ([16.5, 24, 23.5], TypeError, r"mrope_section\[0\] must be an integer, got float"),
        ([True, 24, 24], TypeError, r"mrope_section\[0\] must be an integer, got a boolean"),
        ([16, 24], ValueError, "must have 3 entries"),
        ([16, 24, 25], ValueError, "must sum to the rotary pairs 64"),
        ("16,24,24", TypeError, "must be a list of 3 integers"),
    ],
)
def test_bad_mrope_sections_are_refused(section, exc, message):
    cfg = {**QWEN2_VL, "rope_scaling": {"type": "mrope", "mrope_section": section}}
    with pytest.raises(exc, match=message):
        rope_from_config(cfg)


# ----------------------------------------------------------------- refusal policy

BASE = {"hidden_size": 64, "num_attention_heads": 4, "max_position_embeddings": 8192}


def _cfg(rope, **top):
    return {**BASE, **top, "rope_scaling": rope}


@pytest.mark.parametrize(
    ("config", "exc", "message"),
    [
        (
            _cfg({"rope_type": "yarn", "factor": 4.0}),
            ValueError,
            r"needs config keys \['original_max_position_embeddings'\].*silently",
        ),
        (
            _cfg(
                {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 2048},
                original_max_position_embeddings=4096,
            ),
            ValueError,
            "original_max_position_embeddings twice with different values",
        ),
        (
            _cfg(
                {
                    "rope_type": "yarn",
                    "factor": 4.0,
                    "original_max_position_embeddings": 2048,
                    "beta_fast": 0,
                }
            ),
            ValueError,
            "beta_fast=0 is undefined.*silently replaced by 32 in transformers",
        ),
        (
            _cfg(
                {
                    "rope_type": "yarn",
                    "factor": 4.0,
                    "original_max_position_embeddings": 2048,
                    "mscale": -1.0,
                    "mscale_all_dim": 1.0,
                }
            ),
            ValueError,
            "rope_type 'yarn'.*mscale must be >= 0",
        ),
        (
            _cfg({"rope_type": "llama3", "factor": 8.0, "original_max_position_embeddings": 2048}),
            ValueError,
            r"needs config keys \['low_freq_factor', 'high_freq_factor'\]",
        ),
        (_cfg({"rope_type": "dynamic"}), ValueError, r"needs config keys \['factor'\]"),
        (
            {"head_dim": 8, "rope_scaling": {"rope_type": "dynamic", "factor": 2.0}},
            ValueError,
            r"needs config keys \['max_position_embeddings'\]",
        ),
        (_cfg({"rope_type": "cubic"}), ValueError, "unknown rope_type 'cubic'; refimpl knows"),
        (_cfg({"rope_type": "yarn", "type": "linear"}), ValueError, "rope_type='yarn' and type="),
        (_cfg({"rope_type": "linear", "factor": 0.5}), ValueError, "factor must be >= 1"),
        (_cfg({"rope_type": "linear", "factor": "2"}), TypeError, "factor must be a real number"),
        (_cfg({"rope_type": "linear", "factor": True}), TypeError, "got bool True"),
        (
            _cfg(
                {
                    "rope_type": "longrope",
                    "short_factor": [1.0] * 3,
                    "long_factor": [1.0] * 4,
                    "original_max_position_embeddings": 4096,
                }
            ),
            ValueError,
            "short_factor must have dim // 2 = 8 entries",
        ),
        (
            _cfg(
                {
                    "rope_type": "longrope",
                    "short_factor": [1.0] * 8,
                    "long_factor": [1.0] * 8,
                    "original_max_position_embeddings": True,
                }
            ),
            TypeError,
            "original_max_position_embeddings must be an integer, got a boolean",
        ),
        ({"hidden_size": 100, "num_attention_heads": 3}, ValueError, "not divisible"),
        ({"rope_theta": 1e4}, ValueError, "needs head_dim, or hidden_size"),
        ({"head_dim": 10, "partial_rotary_factor": 0.5}, ValueError, "must be even"),
        (
            {"head_dim": 8, "rope_theta": 1e4, "rope_parameters": {"rope_theta": 5e5}},
            ValueError,
            r"the base \(rope_theta\) twice",
        ),
        (
            {
                "head_dim": 8,
                "rope_scaling": {"rope_type": "linear", "factor": 2.0},
                "rope_parameters": {"rope_type": "linear", "factor": 4.0},
            },
            ValueError,
            "both rope_scaling and rope_parameters and they disagree",
        ),
        ({"head_dim": 8, "rope_scaling": [1, 2]}, TypeError, "rope_scaling must be an object"),
        ({"head_dim": float("inf")}, ValueError, "config key head_dim must be an integer, got inf"),
        ({"head_dim": float("nan")}, ValueError, "config key head_dim must be an integer, got nan"),
        ({"head_dim": True}, TypeError, "head_dim must be an integer, got a boolean"),
        (
            {"head_dim": 8, "max_position_embeddings": float("inf")},
            ValueError,
            "config key max_position_embeddings must be an integer, got inf",
        ),
        (
            {"head_dim": 8, "max_position_embeddings": 2**40},
            ValueError,
            "max_position_embeddings must be at most",
        ),
        ({"text_config": 5}, TypeError, "config key text_config must be an object, got 5"),
        ({"head_dim": 8, "rope_theta": "1e4"}, TypeError, "rope_theta must be a real number"),
        (3.5, TypeError, "config must be a dict"),
        ("/no/such/file.json", ValueError, "no such file"),
    ],
)
def test_refused_configs_name_the_key_and_the_rule(config, exc, message):
    with pytest.raises(exc, match=message):
        rope_from_config(config)


def test_keys_transformers_ignores_become_notes():
    yarn = _cfg(
        {
            "rope_type": "yarn",
            "factor": 4.0,
            "original_max_position_embeddings": 2048,
            "attn_factor": 1.0,
        }
    )
    spec = rope_from_config(yarn)
    assert any("attn_factor=1.0 is not used by rope_type 'yarn'" in n for n in spec.notes)
    dyn = _cfg({"rope_type": "dynamic", "factor": 2.0, "original_max_position_embeddings": 4096})
    spec = rope_from_config(dyn)
    assert spec.params["max_position"] == 8192  # transformers scales from max_position_embeddings
    assert any("original_max_position_embeddings=4096 is not used" in n for n in spec.notes)


def test_notes_never_claim_transformers_ignores_a_key_it_uses():
    cfg = {  # hand-made, Ministral 3 keys
        "model_type": "ministral3",
        "head_dim": 8,
        "rope_parameters": {
            "rope_type": "default",
            "llama_4_scaling_beta": 0.1,
            "original_max_position_embeddings": 16384,
        },
    }
    spec = rope_from_config(cfg)
    assert not any("llama_4_scaling_beta" in n for n in spec.notes)


def test_positions_beyond_seq_len_are_rejected_for_length_dependent_types():
    dyn = _cfg({"rope_type": "dynamic", "factor": 2.0})
    with pytest.raises(ValueError, match=r"build it with rope_from_config\(config, seq_len="):
        rope_from_config(dyn).cos_sin([9000])
    rope_from_config(dyn, seq_len=9001).cos_sin([9000])
    with pytest.raises(ValueError, match="seq_len must be at most"):
        rope_from_config(dyn, seq_len=2**40)


def test_documented_choices_are_recorded_in_notes():
    spec = rope_from_config({"head_dim": 8})
    assert spec.base == 10000.0 and any("no rope_theta" in n for n in spec.notes)
    spec = rope_from_config(
        _cfg(
            {
                "rope_type": "yarn",
                "factor": 4.0,
                "original_max_position_embeddings": 1024,
                "mscale": 0.707,
            }
        )
    )
    assert any("used only when both" in n for n in spec.notes)
    assert any("differs from max_position_embeddings / original" in n for n in spec.notes)
    spec = rope_from_config({"head_dim": None, "hidden_size": 64, "num_attention_heads": 4})
    assert spec.dim == 16 and any("head_dim is null" in n for n in spec.notes)


# ----------------------------------------------------------------- hostile files


def test_bad_file_contents(tmp_path):
    p = tmp_path / "c.json"
    p.write_text("[1, 2]")
    with pytest.raises(ValueError, match="must hold a JSON object"):
        rope_from_config(p)
    p.write_text("{")
    with pytest.raises(ValueError, match="not valid JSON"):
        rope_from_config(p)
    with pytest.raises(ValueError, match="precision must be one of"):
        rope_from_config({"head_dim": 8}).cos_sin([0], precision="float16")


def test_duplicate_keys_are_refused_naming_the_key(tmp_path):
    p = tmp_path / "dup.json"
    p.write_text('{"head_dim": 8, "rope_theta": 1e4, "rope_theta": 5e5}')
    with pytest.raises(ValueError, match=f"{p}: duplicate key 'rope_theta'"):
        load_config(p)
    p.write_text('{"head_dim": 8, "rope_scaling": {"factor": 2, "factor": 4}}')
    with pytest.raises(ValueError, match="duplicate key 'factor'"):
        load_config(p)


def test_non_utf8_binary_and_deeply_nested_files_name_the_file(tmp_path):
    p = tmp_path / "latin1.json"
    p.write_bytes('{"name": "caf\xe9"}'.encode("latin-1"))
    with pytest.raises(ValueError, match=f"{p} is not UTF-8 text"):
        load_config(p)
    b = tmp_path / "weights.bin"
    b.write_bytes(bytes(range(256)) * 4)
    with pytest.raises(ValueError, match=f"{b} is not UTF-8 text"):
        load_config(b)
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(ValueError, match=f"{deep} nests JSON too deeply"):
        load_config(deep)


def test_configs_nested_thousands_deep_are_refused_naming_the_source(tmp_path):
    deep: object = 1
    for _ in range(5000):
        deep = {"a": deep}
    with pytest.raises(ValueError, match="config nests more than 64 levels deep"):
        rope_schedule({"head_dim": 8, "rope_theta": 1e4, "extra": deep})
    p = tmp_path / "deep.json"
    for depth in (500, 5000):  # below and above the JSON decoder's own recursion limit
        p.write_text('{"head_dim": 8, "x": ' + '{"a": ' * depth + "1" + "}" * depth + "}")
        with pytest.raises(ValueError, match=f"config: {p} nests"):
            rope_schedule(p)


def test_hostile_layer_counts_and_factors_name_the_key():
    qwen = {"model_type": "qwen3_next", "num_hidden_layers": 4, "head_dim": 64}
    with pytest.raises(ValueError, match="full_attention_interval must be positive, got 0"):
        rope_schedule({**qwen, "full_attention_interval": 0})
    inf = {"head_dim": 64, "rope_scaling": {"rope_type": "linear", "factor": math.inf}}
    with pytest.raises(ValueError, match="config key factor must be finite"):
        rope_schedule(inf)
    v4 = {"model_type": "deepseek_v4", "num_hidden_layers": 4, "compress_ratios": [0, 4, 128]}
    with pytest.raises(ValueError, match="compress_ratios has 3 entries but num_hidden_layers=4"):
        rope_schedule(v4)
    with pytest.raises(ValueError, match=r"compress_ratios must be a list of 0, 4 or 128"):
        rope_schedule({**v4, "compress_ratios": [0, 4, 128, 7]})


@pytest.mark.parametrize(
    ("cfg", "key"),
    [
        ({"rope_theta": None}, "rope_theta"),
        (
            {"rope_parameters": {"rope_type": "default", "rope_theta": None}},
            "rope_parameters.rope_theta",
        ),
    ],
)
def test_a_null_base_is_refused_naming_the_key(cfg, key):
    # transformers' rotary module cannot run a null base; refimpl never fills in a default
    with pytest.raises(ValueError, match=rf"config key {key} is null"):
        rope_schedule({"model_type": "llama", "num_hidden_layers": 2, **cfg})  # hand-made


@pytest.mark.parametrize("literal", ["Infinity", "1e400", "NaN", "-Infinity"])
def test_non_finite_json_numbers_are_refused(tmp_path, literal):
    for key in ("head_dim", "max_position_embeddings"):
        p = tmp_path / "c.json"
        other = "max_position_embeddings" if key == "head_dim" else "head_dim"
        p.write_text(f'{{"{other}": 8, "{key}": {literal}}}')
        with pytest.raises(ValueError, match=f"config key {key} must be an integer"):
            rope_from_config(p)


# ----------------------------------------------------------------- position keywords


def _specs_with_layouts():
    mla = rope_from_config(  # hand-made: interleaved in, half order out
        {"model_type": "deepseek_v3", "qk_rope_head_dim": 16, "qk_nope_head_dim": 16}
    )
    trailing = rope_schedule(  # hand-made: DeepSeek-V4 trailing slice
        {
            "model_type": "deepseek_v4",
            "head_dim": 32,
            "num_hidden_layers": 1,
            "layer_types": ["sliding_attention"],
            "rope_parameters": {
                "main": {"rope_type": "default", "partial_rotary_factor": 0.5},
                "compress": {"rope_type": "default", "partial_rotary_factor": 0.5},
            },
        }
    )[0].spec
    return [mla, trailing, rope_from_config({"head_dim": 12, "partial_rotary_factor": 0.5})]


@pytest.mark.parametrize("which", [0, 1, 2])
def test_apply_forwards_offsets_cu_seqlens_and_inverse(which):
    spec = _specs_with_layouts()[which]
    rng = np.random.default_rng(which)
    x = rng.standard_normal((2, 3, 5, spec.dim))  # (batch, heads, seq, dim)
    pos = np.arange(5)
    got = spec.apply(x, pos, offsets=np.array([0, 7]))
    for b, off in enumerate((0, 7)):
        np.testing.assert_array_equal(got[b], spec.apply(x[b], pos + off))
    ids = np.array([[0, 1, 2, 3, 4], [9, 3, 3, 0, 2]])
    got = spec.apply(x, ids)
    for b in range(2):
        np.testing.assert_array_equal(got[b], spec.apply(x[b], ids[b]))
    packed = rng.standard_normal((7, 2, spec.dim))  # (tokens, heads, dim), documents 3 and 4
    got = spec.apply(packed, None, cu_seqlens=np.array([0, 3, 7]))
    for lo, hi in ((0, 3), (3, 7)):
        want = spec.apply(np.moveaxis(packed[lo:hi], 0, -2), np.arange(hi - lo))
        np.testing.assert_array_equal(np.moveaxis(got[lo:hi], 0, -2), want)
    y = spec.apply(x[0], pos)
    if spec.output_order == "same":  # (MLA's half-order output is not its own input layout)
        np.testing.assert_allclose(spec.apply(y, pos, inverse=True), x[0], rtol=0, atol=1e-14)
    with pytest.raises(TypeError, match="are the spec's own"):
        spec.apply(x, pos, rotary_offset=0)
    with pytest.raises(ValueError, match="takes 1-D positions and no position keywords"):
        spec.apply(x, pos, precision="transformers-float32", offsets=np.array([0, 1]))


def test_position_keywords_respect_the_length_limit():
    dyn = rope_from_config(_cfg({"rope_type": "dynamic", "factor": 2.0}), seq_len=100)
    x = np.zeros((2, 4, 16))
    dyn.apply(x, np.arange(4), offsets=np.array([0, 96]))
    with pytest.raises(ValueError, match="positions reach 100"):
        dyn.apply(x, np.arange(4), offsets=np.array([0, 97]))


def test_specs_and_schedules_pickle_and_copy():
    import copy
    import pickle

    sched = rope_schedule({"model_type": "llama4_text", "head_dim": 8, "num_hidden_layers": 4})
    spec = rope_from_config(YARN_4X)
    for obj in (spec, sched):
        back = pickle.loads(pickle.dumps(obj))
        assert copy.deepcopy(obj) is not obj
    assert (
        back[3].query_scaling == sched[3].query_scaling
        and back[0].spec.key() == sched[0].spec.key()
    )
    assert pickle.loads(pickle.dumps(spec)) == spec and hash(spec) == hash(spec.key())
    assert spec == rope_from_config(YARN_5X)  # both forms: every field equal
    assert spec != rope_from_config(YARN_4X, pairing="interleaved")
    assert list(back) == list(sched)
    with pytest.raises(TypeError, match="read-only"):
        sched[3].query_scaling.params["attn_scale"] = 1.0


def test_spec_apply_names_ragged_inputs():
    spec = rope_from_config({"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4})
    with pytest.raises(ValueError, match="positions must be a rectangular array"):
        spec.apply(np.ones((2, 16)), [[0, 1], [2]])
    with pytest.raises(ValueError, match="x must be a rectangular array"):
        spec.apply([[1.0] * 16, [1.0] * 15], [0, 1])
