"""rope_from_config: the config forms it reads, the spec it returns, and misread configs."""

import json
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import refimpl
from refimpl.config import RopeSpec, rope_from_config
from refimpl.scaling import ROPE_SCALINGS

YARN_4X = {
    "hidden_size": 512,
    "num_attention_heads": 4,
    "max_position_embeddings": 131072,
    "rope_theta": 1e6,
    "rope_scaling": {"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768},
}
YARN_5X = {
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
    assert a.rope_type == b.rope_type == "yarn"
    np.testing.assert_array_equal(a.inv_freq, b.inv_freq)
    assert a.attention_scaling == b.attention_scaling == 0.1 * math.log(4.0) + 1
    want = ROPE_SCALINGS["yarn"](dim=128, base=1e6, factor=4.0, original_max_position=32768)
    np.testing.assert_array_equal(a.inv_freq, want.inv_freq)


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
    cfg = {
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
    cfg = {
        "head_dim": 16,
        "rope_parameters": {
            "full_attention": {"rope_type": "linear", "rope_theta": 1e6, "factor": 8.0},
            "sliding_attention": {"rope_type": "default", "rope_theta": 1e4},
        },
    }
    assert rope_from_config(cfg, layer_type="full_attention").rope_type == "linear"
    assert rope_from_config(cfg, layer_type="sliding_attention").base == 1e4
    with pytest.raises(ValueError, match="nested per layer type"):
        rope_from_config(cfg)


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


def test_pair_table_regimes():
    t = rope_from_config(YARN_4X).pair_table()
    assert set(t) >= {"wavelength", "scale", "regime"}
    assert t["regime"][0] == "extrapolated" and t["regime"][-1] == "interpolated"
    assert "ramped" in set(t["regime"])
    np.testing.assert_allclose(t["wavelength"], 2 * np.pi / t["inv_freq"])


def test_spec_is_a_frozen_dataclass():
    spec = rope_from_config(YARN_4X)
    assert isinstance(spec, RopeSpec)
    with pytest.raises(AttributeError):
        spec.base = 3.0


# ----------------------------------------------------------------- misread configs, errors

BASE = {"hidden_size": 64, "num_attention_heads": 4, "max_position_embeddings": 8192}


def _cfg(rope, **top):
    return {**BASE, **top, "rope_scaling": rope}


@pytest.mark.parametrize(
    ("config", "exc", "message"),
    [
        (
            _cfg({"rope_type": "yarn", "factor": 4.0}),
            ValueError,
            "needs config keys \\['original_max_position_embeddings'\\].*silently",
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
            _cfg({"rope_type": "dynamic", "factor": 2.0, "original_max_position_embeddings": 4096}),
            ValueError,
            "transformers 5.x ignores the former",
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
            "beta_fast=0 is silently replaced by 32",
        ),
        (
            _cfg(
                {
                    "rope_type": "yarn",
                    "factor": 4.0,
                    "original_max_position_embeddings": 2048,
                    "attn_factor": 1.0,
                }
            ),
            ValueError,
            "\\['attn_factor'\\] are not used by rope_type 'yarn'",
        ),
        (
            _cfg({"rope_type": "llama3", "factor": 8.0, "original_max_position_embeddings": 2048}),
            ValueError,
            "needs config keys \\['low_freq_factor', 'high_freq_factor'\\]",
        ),
        (_cfg({"rope_type": "mrope"}), ValueError, "unknown rope_type 'mrope'.*knows: default"),
        (_cfg({"rope_type": "ntk", "factor": 2.0}), ValueError, "static NTK-aware"),
        (_cfg({"rope_type": "yarn", "type": "linear"}), ValueError, "rope_type='yarn' and type="),
        (_cfg({"rope_type": "linear", "factor": 0.5}), ValueError, "factor must be >= 1"),
        (_cfg({"rope_type": "linear", "factor": "2"}), TypeError, "factor must be a number"),
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
                    "short_factor": ["a"] * 4,
                    "long_factor": [1.0] * 4,
                    "original_max_position_embeddings": 4096,
                }
            ),
            TypeError,
            "short_factor must contain only numbers",
        ),
        (
            {**BASE, "model_type": "llama", "partial_rotary_factor": 0.5},
            ValueError,
            "llama config with partial_rotary_factor",
        ),
        ({"hidden_size": 100, "num_attention_heads": 3}, ValueError, "not divisible"),
        ({"rope_theta": 1e4}, ValueError, "needs head_dim, or hidden_size"),
        ({"head_dim": 10, "partial_rotary_factor": 0.5}, ValueError, "must be even"),
        (
            {"head_dim": 8, "rope_theta": 1e4, "rope_parameters": {"rope_theta": 5e5}},
            ValueError,
            "the base \\(rope_theta\\) twice",
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
        (3.5, TypeError, "config must be a dict"),
        ("/no/such/file.json", ValueError, "no such file"),
    ],
)
def test_bad_or_misread_configs_raise(config, exc, message):
    with pytest.raises(exc, match=message):
        rope_from_config(config)


def test_positions_beyond_seq_len_are_rejected_for_length_dependent_types():
    dyn = _cfg({"rope_type": "dynamic", "factor": 2.0})
    with pytest.raises(ValueError, match="build it with rope_from_config\\(config, seq_len="):
        rope_from_config(dyn).cos_sin([9000])
    rope_from_config(dyn, seq_len=9001).cos_sin([9000])


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
