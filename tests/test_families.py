"""Model-family rules: rotary width, pairing and output order, per-layer rules, query scaling.

Every config here is hand-made (written for the test, with the keys of the family's released
configs and transformers' config classes); real released configs are tested in
tests/parity/. The expected rotations are NumPy transcriptions of the families' own
functions in transformers 5.24 (``models/<family>/modeling_<family>.py``), named in each test.
"""

import json
import math
from pathlib import Path

import numpy as np
import pytest

from refimpl.__main__ import main
from refimpl.config import rope_from_config, rope_schedule
from refimpl.families import (
    FAMILIES,
    MARKERS,
    LayerPlan,
    QueryScaling,
    family_for,
    marker_of,
    query_scaling,
)
from refimpl.rotary import inv_freq

RNG = np.random.default_rng(0)

# --------------------------------------------------------------------------- widths


def test_mla_width_is_qk_rope_head_dim_not_hidden_over_heads():
    cfg = {  # hand-made, DeepSeek-V3 shapes
        "model_type": "deepseek_v3",
        "hidden_size": 7168,
        "num_attention_heads": 128,
        "qk_rope_head_dim": 64,
        "qk_nope_head_dim": 128,
        "rope_theta": 10000.0,
    }
    spec = rope_from_config(cfg)
    assert 7168 // 128 == 56  # what the generic reading would take
    assert spec.dim == spec.rotary_dim == 64
    np.testing.assert_array_equal(spec.inv_freq, inv_freq(64, 1e4))
    # omitted: the config class default (64 in DeepseekV2Config and DeepseekV3Config), noted
    omitted = rope_from_config({"model_type": "deepseek_v2", "head_dim": 32})
    assert omitted.dim == 64
    assert any("no qk_rope_head_dim: 64" in n for n in omitted.notes)
    with pytest.raises(ValueError, match="needs config key qk_rope_head_dim"):
        rope_from_config({"model_type": "deepseek_v2", "qk_rope_head_dim": None})


def test_gptj_width_from_rotary_dim_of_n_embd_over_n_head():
    cfg = {"model_type": "gptj", "n_embd": 4096, "n_head": 16, "rotary_dim": 64}  # hand-made
    spec = rope_from_config(cfg)
    assert (spec.dim, spec.rotary_dim, spec.pairing) == (256, 64, "interleaved")
    assert spec.base == 10000.0 and any("fixed in the model code" in n for n in spec.notes)
    default = rope_from_config({"model_type": "codegen", "n_embd": 1024, "n_head": 16})
    assert default.rotary_dim == 64
    assert any("no rotary_dim: 64 (CodeGenConfig's default)" in n for n in default.notes)
    with pytest.raises(ValueError, match="rotary_dim is null"):
        rope_from_config({"model_type": "gptj", "n_embd": 1024, "n_head": 16, "rotary_dim": None})


def test_rotary_dim_and_partial_must_agree():
    cfg = {"model_type": "minimax_m2", "head_dim": 128, "rotary_dim": 64}  # hand-made
    assert rope_from_config(cfg).rotary_dim == 64
    assert rope_from_config({**cfg, "partial_rotary_factor": 0.5}).rotary_dim == 64
    with pytest.raises(ValueError, match=r"rotary_dim=64 and partial_rotary_factor=0\.25"):
        rope_from_config({**cfg, "partial_rotary_factor": 0.25})


@pytest.mark.parametrize(
    ("model_type", "rotary"),
    [("glm", 64), ("glm4", 64), ("phi", 64), ("stablelm", 32), ("qwen3_next", 32)],
)
def test_family_default_partial_factor_when_config_omits_it(model_type, rotary):
    spec = rope_from_config({"model_type": model_type, "head_dim": 128})  # hand-made
    assert spec.rotary_dim == rotary
    assert any(
        n.startswith(f"no partial_rotary_factor: {rotary / 128!r}") and "Config's default" in n
        for n in spec.notes
    )
    explicit = rope_from_config(
        {"model_type": model_type, "head_dim": 128, "partial_rotary_factor": 1.0}
    )
    assert explicit.rotary_dim == 128  # an explicit config value wins


def test_chatglm_rotates_half_of_kv_channels_with_rope_ratio():
    cfg = {"model_type": "chatglm", "kv_channels": 128, "rope_ratio": 50}  # hand-made
    spec = rope_from_config(cfg)
    assert (spec.dim, spec.rotary_dim, spec.pairing, spec.base) == (128, 64, "interleaved", 5e5)


def test_families_that_ignore_partial_factor():
    cfg = {"model_type": "llama", "head_dim": 64, "partial_rotary_factor": 0.5}  # hand-made
    spec = rope_from_config(cfg)
    assert spec.rotary_dim == 64 and any("is ignored" in n for n in spec.notes)
    scaled = {**cfg, "rope_scaling": {"rope_type": "linear", "factor": 2.0}}
    with pytest.raises(ValueError, match=r"rotate_half turns the whole head.*cannot run"):
        rope_from_config(scaled)


def test_gguf_architecture_names_are_aliases():
    for arch, name in [
        ("deepseek2", "deepseek_v2"),
        ("qwen2", "qwen2"),
        ("qwen3moe", "qwen3_moe"),
        ("gemma3", "gemma3"),
        ("llama4", "llama4"),
        ("command-r", "cohere"),
        ("qwen3next", "qwen3_next"),
        ("qwen2vl", "qwen2_vl"),  # llama.cpp's M-RoPE architectures
        ("qwen3vl", "qwen3_vl"),
        ("qwen3vlmoe", "qwen3_vl_moe"),
        ("qwen35", "qwen3_5"),
        ("qwen35moe", "qwen3_5_moe"),
        ("glm4moe", "glm4_moe"),
    ]:
        assert family_for(arch).name == name
    assert family_for("no_such_model") is None
    with pytest.raises(TypeError, match="model_type must be a string"):
        family_for(3)
    assert all(FAMILIES[m] is fam for fam in set(FAMILIES.values()) for m in fam.model_types)


# --------------------------------------------------------------------------- pairing, order


def _glm_apply(x, cos_half, sin_half, rotary_dim):
    """transformers models/glm/modeling_glm.py apply_rotary_pos_emb (one tensor)."""
    c = np.repeat(cos_half, 2, axis=-1)
    s = np.repeat(sin_half, 2, axis=-1)
    rot, rest = x[..., :rotary_dim], x[..., rotary_dim:]
    x1, x2 = rot[..., 0::2], rot[..., 1::2]
    rotate_half = np.stack([-x2, x1], axis=-1).reshape(rot.shape)
    return np.concatenate([rot * c + rotate_half * s, rest], axis=-1)


def _deepseek_interleave(x, cos_half, sin_half):
    """transformers models/deepseek_v3/modeling_deepseek_v3.py apply_rotary_pos_emb_interleave."""
    x1, x2 = x[..., 0::2], x[..., 1::2]
    return np.concatenate([x1 * cos_half - x2 * sin_half, x2 * cos_half + x1 * sin_half], -1)


def _half(x, cos_half, sin_half):
    """rotate_half form (Llama): pairs (i, i + d/2)."""
    h = x.shape[-1] // 2
    x1, x2 = x[..., :h], x[..., h:]
    return np.concatenate([x1 * cos_half - x2 * sin_half, x2 * cos_half + x1 * sin_half], -1)


def test_glm_adjacent_pairs_inside_the_leading_slice():
    spec = rope_from_config({"model_type": "glm", "head_dim": 32, "rope_theta": 1e4})
    pos = np.arange(7)
    x = RNG.standard_normal((2, 7, 32))
    c, s = spec.cos_sin(pos)
    np.testing.assert_allclose(spec.apply(x, pos), _glm_apply(x, c, s, 16), rtol=1e-13, atol=1e-15)


def test_mla_rope_interleave_reads_pairs_and_writes_half_order():
    cfg = {"model_type": "deepseek_v3", "qk_rope_head_dim": 16, "qk_nope_head_dim": 32}
    spec = rope_from_config(cfg)  # hand-made; rope_interleave defaults to true
    assert (spec.pairing, spec.output_order) == ("interleaved", "half")
    pos = np.arange(9)
    x = RNG.standard_normal((3, 9, 16))
    c, s = spec.cos_sin(pos)
    np.testing.assert_allclose(spec.apply(x, pos), _deepseek_interleave(x, c, s), rtol=1e-13)
    y32 = spec.apply(x.astype(np.float32), pos, precision="transformers-float32")
    np.testing.assert_allclose(y32, _deepseek_interleave(x, c, s), atol=1e-5)
    flat = rope_from_config({**cfg, "rope_interleave": False})
    assert (flat.pairing, flat.output_order) == ("half", "same")
    np.testing.assert_allclose(flat.apply(x, pos), _half(x, c, s), rtol=1e-13)
    with pytest.raises(TypeError, match="rope_interleave must be a boolean"):
        rope_from_config({**cfg, "rope_interleave": "yes"})


def test_deepseek_v2_complex_form_keeps_the_order():
    cfg = {"model_type": "deepseek_v2", "qk_rope_head_dim": 8, "qk_nope_head_dim": 8}
    spec = rope_from_config(cfg)  # hand-made
    pos = np.arange(5)
    x = RNG.standard_normal((5, 8))
    z = (x[..., 0::2] + 1j * x[..., 1::2]) * np.exp(1j * np.outer(pos, spec.inv_freq))
    want = np.stack([z.real, z.imag], -1).reshape(x.shape)  # view_as_real(...).flatten
    assert spec.output_order == "same"
    np.testing.assert_allclose(spec.apply(x, pos), want, rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize(
    "model_type",
    [
        "cohere",
        "cohere2",
        "llama4_text",
        "ernie4_5",
        "gptj",
        "glm4v_text",
        "glm_ocr_text",
        "helium",
        "openai_privacy_filter",
    ],
)
def test_interleaved_families(model_type):
    cfg = {"model_type": model_type, "head_dim": 128, "n_embd": 256, "n_head": 2}  # hand-made
    if model_type in ("glm4v_text", "glm_ocr_text"):  # sections [8, 12, 12]: the half slice
        cfg["partial_rotary_factor"] = 0.5
    spec = rope_from_config(cfg)
    assert spec.pairing == "interleaved" and spec.output_order == "same"


def test_explicit_pairing_wins_and_unknown_types_keep_the_generic_reading():
    spec = rope_from_config({"model_type": "cohere", "head_dim": 8}, pairing="half")
    assert spec.pairing == "half"
    other = rope_from_config({"model_type": "brand_new", "head_dim": 8, "rope_theta": 1e4})
    assert other.pairing == "half" and any(
        "not in refimpl's family table" in n for n in other.notes
    )
    sched = rope_schedule({"model_type": "brand_new", "head_dim": 8, "rope_theta": 1e4})
    assert sched.family is None and "none of the markers" in sched.reason


def test_deepseek_v4_trailing_slice_main_and_compress():
    cfg = {  # hand-made, DeepSeek-V4 nested form
        "model_type": "deepseek_v4",
        "head_dim": 32,
        "num_hidden_layers": 2,
        "index_head_dim": 16,
        "qk_rope_head_dim": 8,
        "layer_types": ["sliding_attention", "compressed_sparse_attention"],
        "rope_parameters": {
            "main": {"rope_type": "default", "rope_theta": 1e4, "partial_rotary_factor": 0.25},
            "compress": {
                "rope_type": "default",
                "rope_theta": 1.6e5,
                "partial_rotary_factor": 0.25,
            },
        },
    }
    sched = rope_schedule(cfg)
    assert [layer.spec.base for layer in sched] == [1e4, 1.6e5]
    spec = sched[0].spec
    assert (spec.rotary_offset, spec.rotary_dim, spec.pairing) == (24, 8, "interleaved")
    x = RNG.standard_normal((4, 32))
    pos = np.arange(4)
    c, s = spec.cos_sin(pos)
    want = np.concatenate([x[:, :24], _glm_apply(x[:, 24:], c, s, 8)], -1)
    np.testing.assert_allclose(spec.apply(x, pos), want, rtol=1e-13, atol=1e-15)
    assert sched[0].indexer is None  # only compressed sparse attention layers index
    idx = sched[1].indexer  # trailing qk_rope_head_dim of the indexer head, adjacent pairs
    assert (idx.dim, idx.rotary_offset, idx.rotary_dim, idx.pairing) == (16, 8, 8, "interleaved")
    assert idx.base == 1.6e5 and idx.output_order == "same"


# --------------------------------------------------------------------------- layers


GEMMA3_4X = {  # hand-made, Gemma 3 4.x keys
    "model_type": "gemma3_text",
    "head_dim": 16,
    "num_hidden_layers": 12,
    "rope_theta": 1e6,
    "rope_local_base_freq": 1e4,
    "rope_scaling": {"rope_type": "linear", "factor": 8.0},
    "sliding_window_pattern": 6,
}


def test_gemma3_4x_local_base_and_global_scaling():
    sched = rope_schedule(GEMMA3_4X)
    types = [layer.layer_type for layer in sched]
    assert types == (["sliding_attention"] * 5 + ["full_attention"]) * 2
    local, glob = sched[0].spec, sched[5].spec
    assert (local.rope_type, local.base) == ("default", 1e4)
    assert (glob.rope_type, glob.base, glob.params["factor"]) == ("linear", 1e6, 8.0)
    np.testing.assert_allclose(glob.inv_freq, inv_freq(16, 1e6) / 8)
    assert list(sched.groups().values()) == [[0, 1, 2, 3, 4, 6, 7, 8, 9, 10], [5, 11]]
    assert rope_from_config(GEMMA3_4X, layer_type="sliding_attention").base == 1e4
    with pytest.raises(ValueError, match="the layers' ropes differ"):
        rope_from_config(GEMMA3_4X)


def test_gemma3_defaults_and_5x_form_agree():
    bare = {k: v for k, v in GEMMA3_4X.items() if k not in ("rope_theta", "rope_local_base_freq")}
    sched = rope_schedule(bare)
    assert (sched[0].spec.base, sched[5].spec.base) == (1e4, 1e6)
    assert "no rope_local_base_freq: 10000.0 (Gemma3TextConfig's default)" in sched.notes
    assert "no rope_theta: 1000000.0 (Gemma3TextConfig's default)" in sched.notes
    nested = {
        "model_type": "gemma3_text",
        "head_dim": 16,
        "num_hidden_layers": 12,
        "rope_parameters": {
            "full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1e6},
            "sliding_attention": {"rope_type": "default", "rope_theta": 1e4},
        },
    }
    a, b = rope_schedule(nested), rope_schedule(GEMMA3_4X)
    assert [x.spec.key() for x in a] == [x.spec.key() for x in b]


def test_gemma2_alternates_layer_types_with_one_rope():
    sched = rope_schedule({"model_type": "gemma2", "head_dim": 8, "num_hidden_layers": 4})
    assert [x.layer_type for x in sched] == ["sliding_attention", "full_attention"] * 2
    assert len(sched.groups()) == 1


def test_gemma4_wider_full_heads_and_proportional_rope():
    cfg = {  # hand-made, Gemma 4 text keys
        "model_type": "gemma4_text",
        "head_dim": 16,
        "global_head_dim": 32,
        "num_hidden_layers": 7,
        "rope_parameters": {
            "sliding_attention": {"rope_type": "default", "rope_theta": 1e4},
            "full_attention": {
                "rope_type": "proportional",
                "partial_rotary_factor": 0.25,
                "rope_theta": 1e6,
            },
        },
    }
    sched = rope_schedule(cfg)
    types = [x.layer_type for x in sched]
    assert types[5] == types[6] == "full_attention"  # the last layer is forced global
    local, glob = sched[0].spec, sched[5].spec
    assert (local.dim, local.rotary_dim) == (16, 16)
    assert (glob.dim, glob.rotary_dim, glob.rope_type) == (32, 32, "proportional")
    want = np.concatenate([inv_freq(32, 1e6)[:4], np.zeros(12)])  # exponent over D = 32
    np.testing.assert_allclose(glob.inv_freq, want, rtol=1e-15)
    c, s = glob.cos_sin(np.arange(50))
    assert np.all(c[:, 4:] == 1.0) and np.all(s[:, 4:] == 0.0)  # exact pass-through pairs
    per_layer = {**cfg, "per_layer_config": {"5": {"head_dim": 64}, "6": {"head_dim": 64}}}
    assert rope_schedule(per_layer)[6].spec.dim == 64


@pytest.mark.parametrize("model_type", ["llama4_text", "smollm3"])
def test_no_rope_layers_list_and_interval(model_type):
    base = {"model_type": model_type, "head_dim": 8, "num_hidden_layers": 8}  # hand-made
    by_interval = rope_schedule(base)
    assert [x.spec is None for x in by_interval] == [False, False, False, True] * 2
    listed = rope_schedule({**base, "no_rope_layers": [1, 0, 1, 1, 1, 1, 0, 1]})
    assert [x.index for x in listed if x.spec is None] == [1, 6]
    every3 = rope_schedule({**base, "no_rope_layer_interval": 3})
    assert [x.index for x in every3 if x.spec is None] == [2, 5]
    with pytest.raises(ValueError, match=r"no_rope_layers\[2\] must be 1 \(RoPE\) or 0"):
        rope_schedule({**base, "no_rope_layers": [1, 1, 2, 1, 1, 1, 1, 1]})
    with pytest.raises(ValueError, match="has 2 entries but num_hidden_layers=8"):
        rope_schedule({**base, "no_rope_layers": [1, 0]})


def test_llama4_empty_no_rope_list_falls_back_to_the_interval():
    cfg = {"model_type": "llama4_text", "head_dim": 8, "num_hidden_layers": 4, "no_rope_layers": []}
    assert [x.spec is None for x in rope_schedule(cfg)] == [False, False, False, True]


def test_cohere2_and_exaone4_full_layers_without_rope():
    for model_type in ("cohere2", "exaone4"):
        cfg = {
            "model_type": model_type,
            "head_dim": 8,
            "num_hidden_layers": 8,
            "sliding_window": 4096,
        }
        sched = rope_schedule(cfg)
        assert [x.index for x in sched if x.spec is None] == [3, 7]
        assert all(x.layer_type == "full_attention" for x in sched if x.spec is None)
    no_window = {
        "model_type": "exaone4",
        "head_dim": 8,
        "num_hidden_layers": 4,
        "sliding_window": None,
    }
    assert all(x.spec is not None for x in rope_schedule(no_window))
    cohere = {
        "model_type": "cohere2",
        "head_dim": 8,
        "num_hidden_layers": 4,
        "sliding_window": None,
    }
    sched = rope_schedule(cohere)
    assert all(x.spec is None for x in sched) and any(
        "no layer applies RoPE" in n for n in sched.notes
    )


def test_qwen3_next_linear_attention_layers_have_no_rope():
    cfg = {"model_type": "qwen3_next", "head_dim": 32, "num_hidden_layers": 8}  # hand-made
    sched = rope_schedule(cfg)
    assert [x.layer_type for x in sched][:4] == ["linear_attention"] * 3 + ["full_attention"]
    assert [x.index for x in sched if x.spec is not None] == [3, 7]
    assert sched[3].spec.rotary_dim == 8  # partial_rotary_factor 0.25 by default
    explicit = rope_schedule({**cfg, "layer_types": ["full_attention"] * 8})
    assert all(x.spec is not None for x in explicit)
    with pytest.raises(ValueError, match="layer_types has 3 entries"):
        rope_schedule({**cfg, "layer_types": ["full_attention"] * 3})


# --------------------------------------------------------------------------- query scaling


def test_llama4_temperature_on_nope_layers():
    cfg = {"model_type": "llama4_text", "head_dim": 8, "num_hidden_layers": 4}  # hand-made
    sched = rope_schedule(cfg)
    assert [x.query_scaling is None for x in sched] == [True, True, True, False]
    q = sched[3].query_scaling
    assert q.kind == "llama4_temperature" and q.softmax_scale == 1.0
    pos = np.array([0, 8190, 8191, 3 * 8192 - 1])
    want = [1 + 0.1 * math.log(math.floor((p + 1) / 8192) + 1) for p in pos]
    np.testing.assert_allclose(q(pos), want, rtol=1e-15)
    off = rope_schedule({**cfg, "attn_temperature_tuning": False})
    assert all(x.query_scaling is None for x in off)
    tuned = rope_schedule({**cfg, "floor_scale": 100, "attn_scale": 0.5})[3].query_scaling
    assert tuned(np.array([199]))[0] == pytest.approx(1 + 0.5 * math.log(3))


def test_ministral3_llama_4_scaling_beta_scales_queries():
    cfg = {  # hand-made, Ministral 3 keys
        "model_type": "ministral3",
        "head_dim": 8,
        "num_hidden_layers": 2,
        "max_position_embeddings": 262144,
        "rope_parameters": {
            "rope_type": "yarn",
            "rope_theta": 1e6,
            "factor": 16.0,
            "original_max_position_embeddings": 16384,
            "mscale": 1.0,
            "mscale_all_dim": 1.0,
            "llama_4_scaling_beta": 0.1,
        },
    }
    sched = rope_schedule(cfg)
    q = sched[0].query_scaling
    assert q.kind == "llama_4_scaling_beta" and sched[0].spec.attention_scaling == 1.0
    pos = np.array([0, 16383, 16384, 5 * 16384])
    np.testing.assert_allclose(q(pos), [1 + 0.1 * math.log(1 + p // 16384) for p in pos])
    missing = {**cfg, "rope_parameters": {**cfg["rope_parameters"]}}
    del missing["rope_parameters"]["llama_4_scaling_beta"]
    with pytest.raises(ValueError, match="llama_4_scaling_beta and original_max_position"):
        rope_schedule(missing)
    other = rope_schedule({**cfg, "model_type": "mistral"})
    assert other[0].query_scaling is None
    assert any("llama_4_scaling_beta is ignored" in n for n in other.notes)


@pytest.mark.parametrize(("mscale_all_dim", "factor"), [(1.0, 40.0), (0.707, 40.0), (0.0, 40.0)])
def test_mla_softmax_scale_is_mscale_squared(mscale_all_dim, factor):
    rope = {"rope_type": "yarn", "factor": factor, "mscale_all_dim": mscale_all_dim}
    q = query_scaling(family_for("deepseek_v3"), {}, rope, LayerPlan(0, "a", "a"), [])
    if mscale_all_dim == 0.0:  # transformers: `if mscale_all_dim:` -> no factor
        assert q is None
    else:
        assert q.softmax_scale == pytest.approx((1 + 0.1 * mscale_all_dim * math.log(factor)) ** 2)
        np.testing.assert_array_equal(q([0, 5]), [1.0, 1.0])
    unscaled = {"rope_type": "default", "mscale_all_dim": 1.0}
    assert (
        query_scaling(family_for("deepseek_v3"), {}, unscaled, LayerPlan(0, "a", "a"), []) is None
    )


def test_query_scaling_record_validates():
    with pytest.raises(ValueError, match="kind must be one of"):
        QueryScaling("cube", {})
    with pytest.raises(ValueError, match="takes params"):
        QueryScaling("llama4_temperature", {"floor_scale": 8192})
    with pytest.raises(ValueError, match="softmax_scale must be positive"):
        QueryScaling("softmax_scale", {}, -1.0)
    with pytest.raises(TypeError, match="must be a real number"):
        QueryScaling("llama_4_scaling_beta", {"beta": "0.1", "original_max_position": 10})
    q = QueryScaling("softmax_scale", {}, 2.0)
    assert hash(q) == hash(QueryScaling("softmax_scale", {}, 2.0)) and "x2" in q.describe()


# --------------------------------------------------------------------------- scaling rules


def test_hunyuan_dynamic_alpha_is_the_static_ntk_alpha_base():
    cfg = {  # hand-made, HunYuan keys
        "model_type": "hunyuan_v1_dense",
        "head_dim": 128,
        "max_position_embeddings": 32768,
        "rope_theta": 1e4,
        "rope_scaling": {"type": "dynamic", "alpha": 1000.0, "factor": 1.0},
    }
    spec = rope_from_config(cfg)
    assert spec.rope_type == "ntk_alpha"
    np.testing.assert_allclose(
        spec.inv_freq, inv_freq(128, 1e4 * 1000.0 ** (128 / 126)), rtol=1e-14
    )
    assert any("factor=1.0 is not used" in n for n in spec.notes)
    plain = rope_from_config({**cfg, "model_type": "llama"})  # other families: dynamic NTK
    assert plain.rope_type == "dynamic" and any(
        "alpha=1000.0 is not used" in n for n in plain.notes
    )


def _hunyuan_vl_text(section, **extra):
    """Hand-made: HunyuanOCR's text keys in the legacy form, the given xD-RoPE sections."""
    scaling = {"type": "xdrope", "alpha": 1000.0, "factor": 1.0}
    if section is not None:
        scaling["xdrope_section"] = section
    cfg = {
        "model_type": "hunyuan_vl_text",
        "hidden_size": 1024,
        "num_attention_heads": 16,
        "num_hidden_layers": 2,
        "head_dim": 128,
        "rope_theta": 1e4,
        "rope_scaling": scaling,
    }
    return {**cfg, **extra}


def test_hunyuan_vl_text_reads_sections_on_the_position_row_as_ntk_alpha():
    """transformers 5.24 HunYuanVLRotaryEmbedding: xdrope is renamed dynamic, alpha makes it the
    static NTK-alpha base, and sections [64, 0, 0, 0] put every feature on row 0 (the 1-D
    position, HunYuanVLModel.get_rope_index), so each pair turns by one angle."""
    spec = rope_from_config(_hunyuan_vl_text([64, 0, 0, 0]))
    assert spec.rope_type == "ntk_alpha" and spec.mrope_section is None
    np.testing.assert_allclose(
        spec.inv_freq, inv_freq(128, 1e4 * 1000.0 ** (128 / 126)), rtol=1e-14
    )
    assert any("turns every pair by row 0" in n for n in spec.notes)
    assert any("legacy xdrope_section read as mrope_section" in n for n in spec.notes)


@pytest.mark.parametrize(
    ("section", "extra", "named"),
    [
        (None, {}, r"mrope_section \(legacy xdrope_section\) is null.*TypeError"),
        ([16, 16, 16, 16], {}, r"xdrope_section \[16, 16, 16, 16\].*different rows"),
        ([0, 64, 0, 0], {}, r"xdrope_section \[0, 64, 0, 0\] turns every pair by position row 1"),
        ([64], {}, r"row 0, not one of the rows before the last three"),
        ([16, 16, 16], {}, r"must sum to head_dim // 2 = 64"),
        ([64, 0, 0, 0], {"head_dim": None}, r"head_dim is null.*cannot be built on this config"),
    ],
)
def test_hunyuan_vl_text_refuses_what_transformers_cannot_run_as_one_rope(section, extra, named):
    with pytest.raises(ValueError, match=named):
        rope_schedule(_hunyuan_vl_text(section, **extra))


def test_hunyuan_vl_text_refusal_names_the_api_for_the_per_pair_xdrope_layout():
    with pytest.raises(ValueError) as err:
        rope_schedule(_hunyuan_vl_text([16, 16, 16, 16]))
    assert "refimpl.multiaxis.mrope_cos_sin" in str(err.value)
    assert "refimpl.multiaxis.hunyuanvl_position_ids" in str(err.value)
    both = _hunyuan_vl_text([64, 0, 0, 0])
    both["rope_scaling"]["mrope_section"] = [0, 0, 64, 0]
    with pytest.raises(ValueError, match=r"mrope_section .* and legacy xdrope_section .* differ"):
        rope_schedule(both)
    wrapped = {"model_type": "hunyuan_vl", "text_config": _hunyuan_vl_text(None)}
    with pytest.raises(ValueError, match=r"hunyuan_vl_text: rope_scaling\.mrope_section"):
        rope_schedule(wrapped)


def test_llama4_scout_equal_band_factors_are_accepted():
    cfg = {  # hand-made, Llama 4 Scout rope keys
        "model_type": "llama4_text",
        "head_dim": 128,
        "num_hidden_layers": 4,
        "rope_theta": 5e5,
        "rope_scaling": {
            "rope_type": "llama3",
            "factor": 16.0,
            "low_freq_factor": 1.0,
            "high_freq_factor": 1.0,
            "original_max_position_embeddings": 8192,
        },
    }
    spec = rope_schedule(cfg)[0].spec
    theta = inv_freq(128, 5e5)
    want = np.where(2 * np.pi / theta > 8192, theta / 16, theta)  # the step
    np.testing.assert_allclose(spec.inv_freq, want, rtol=1e-15)


# --------------------------------------------------------------------------- never a guess


@pytest.mark.parametrize(
    ("extra", "named"),
    [
        ({"sliding_window_pattern": 6}, "config key sliding_window_pattern"),
        ({"no_rope_layers": [1, 1, 0]}, "config key no_rope_layers"),
        ({"qk_rope_head_dim": 64}, "config key qk_rope_head_dim"),
        ({"kv_lora_rank": 512}, "config key kv_lora_rank"),
        ({"index_topk": 2048}, "config key index_topk"),
        ({"linear_conv_kernel_dim": 4}, "config key linear_conv_kernel_dim"),
        ({"mamba_d_state": 64}, "config key mamba_d_state"),
        ({"conv_L_cache": 3}, "config key conv_L_cache"),
        ({"layers_block_type": ["mamba", "hybrid"]}, "config key layers_block_type"),
        ({"layer_types": ["full_attention", "conv"]}, "layer_types value 'conv'"),
        ({"rope_parameters": {"rope_theta": 1e4, "mrope_section": [1, 1, 2]}}, "mrope_section"),
        ({"rope_parameters": {"rope_theta": 1e4, "xdrope_section": [1, 1, 2]}}, "xdrope_section"),
        ({"cross_attention_layers": [3, 8]}, "config key cross_attention_layers"),
        (
            {"rope_parameters": {"full_attention": {}, "sliding_attention": {}}},
            "nested per layer type",
        ),
    ],
)
def test_an_unknown_type_with_a_marker_is_refused_naming_the_key(extra, named):
    cfg = {"model_type": "brand_new", "head_dim": 8, "rope_theta": 1e4, **extra}  # hand-made
    with pytest.raises(ValueError, match=r"brand_new.*not in refimpl's family table") as err:
        rope_schedule(cfg)
    assert named in str(err.value)
    assert "apply_rope_2d" in str(err.value)  # where a vision or audio tower's RoPE is served
    assert marker_of(extra) is not None


def test_markers_are_one_named_list_and_plain_configs_read_generically():
    assert set(MARKERS) == {"keys", "prefixes", "suffixes"}
    assert "qk_rope_head_dim" in MARKERS["keys"] and "mamba_" in MARKERS["prefixes"]
    plain = {"model_type": "brand_new", "hidden_size": 64, "num_attention_heads": 4}
    with pytest.raises(ValueError, match=r"no rope_theta.*default_theta.*refimpl\.bias"):
        rope_schedule(plain)  # an unknown class's default base is unknown: refused
    sched = rope_schedule({**plain, "rope_theta": 5e5, "layer_types": ["sliding_attention"]})
    assert sched.family is None and sched[0].spec.base == 5e5
    assert "generic reading" in sched.reason
    with pytest.raises(ValueError, match="'nope_text', which is not in refimpl's family"):
        rope_schedule({"model_type": "brand_new", "text_config": {"model_type": "nope_text"}})


# --------------------------------------------------------------------------- class defaults


def test_a_diff_style_file_reads_through_the_config_class_defaults():
    cfg = {  # hand-made, the shape of gemma-3-4b-it: text_config without head width or bases
        "model_type": "gemma3",
        "text_config": {
            "model_type": "gemma3_text",
            "hidden_size": 2560,
            "num_hidden_layers": 34,
            "rope_scaling": {"rope_type": "linear", "factor": 8.0},
        },
    }
    sched = rope_schedule(cfg)
    assert len(sched) == 34 and sched.family == "gemma3"
    local, glob = sched[0].spec, sched[5].spec
    assert (local.dim, local.base, glob.base, glob.params["factor"]) == (256, 1e4, 1e6, 8.0)
    for note in (
        "no head_dim: 256 (Gemma3TextConfig's default)",
        "no rope_theta: 1000000.0 (Gemma3TextConfig's default)",
        "no rope_local_base_freq: 10000.0 (Gemma3TextConfig's default)",
        "no sliding_window_pattern: 6 (Gemma3TextConfig's default)",
    ):
        assert note in sched.notes
    assert not any("num_hidden_layers" in n for n in sched.notes)  # given: no note


def test_wrapper_text_configs_as_their_config_classes_read_them():
    # Voxtral: the wrapper's own hidden_size is not the decoder's; missing text keys take
    # VoxtralConfig's text defaults (head 128, base 1e8)
    vox = {"model_type": "voxtral", "hidden_size": 1280, "text_config": {"model_type": "llama"}}
    sched = rope_schedule(vox)  # hand-made
    assert (sched[0].spec.dim, sched[0].spec.base, len(sched)) == (128, 1e8, 30)
    assert "no text_config.rope_theta: 100000000.0 (voxtral's text default)" in sched.notes
    # Kimi-K2.5: text type kimi_k2 is DeepSeek-V3 (61 layers by class default)
    kimi = {"model_type": "kimi_k25", "text_config": {"model_type": "kimi_k2"}}
    sched = rope_schedule(kimi)
    assert sched.family == "deepseek_v3" and len(sched) == 61
    assert "which 'kimi_k25' maps to 'deepseek_v3'" in sched.reason
    # EXAONE 4.5: its text type exaone4_5_text is EXAONE 4
    exa = {"model_type": "exaone4_5", "text_config": {"model_type": "exaone4_5_text"}}
    assert rope_schedule({**exa, "text_config": {**exa["text_config"], "num_hidden_layers": 4}})
    assert rope_schedule(exa).family == "exaone4"
    # a fixed text class reads text_config as its own type; no model_type: the default
    assert rope_schedule({"model_type": "qwen3_5", "text_config": {}}).family == "qwen3_5"
    assert rope_schedule({"model_type": "llava", "text_config": {}}).family == "llama"
    with pytest.raises(ValueError, match="text_config without model_type"):
        rope_schedule({"model_type": "unknown_vlm", "text_config": {"head_dim": 8}})


# --------------------------------------------------------------------------- new families


def test_deepseek_v32_mla_rope_head_and_half_split_indexer():
    cfg = {  # hand-made, DeepSeek-V3.2 shapes
        "model_type": "deepseek_v32",
        "num_hidden_layers": 3,
        "rope_theta": 1e4,
        "max_position_embeddings": 163840,
        "rope_scaling": {
            "type": "yarn",
            "factor": 40.0,
            "original_max_position_embeddings": 4096,
            "mscale": 1.0,
            "mscale_all_dim": 1.0,
        },
    }
    sched = rope_schedule(cfg)
    layer = sched[0]
    spec, idx = layer.spec, layer.indexer
    assert (spec.dim, spec.rotary_dim, spec.pairing, spec.output_order) == (
        64,
        64,
        "interleaved",
        "half",
    )
    assert layer.query_scaling.softmax_scale == pytest.approx((1 + 0.1 * math.log(40)) ** 2)
    assert (idx.dim, idx.rotary_dim, idx.rotary_offset, idx.pairing) == (128, 64, 0, "half")
    np.testing.assert_array_equal(idx.inv_freq, spec.inv_freq)
    assert idx.attention_scaling == spec.attention_scaling
    # DeepseekV32Indexer: split [rope 64, pass 64], rotate_half on the rope part
    pos = np.arange(6)
    x = RNG.standard_normal((6, 128))
    c, s = spec.cos_sin(pos)
    want = np.concatenate([_half(x[:, :64], c, s), x[:, 64:]], -1)
    np.testing.assert_allclose(idx.apply(x, pos), want, rtol=1e-13, atol=1e-15)
    assert any("8631a81" in n and "PR 28968" in n for n in idx.notes)


def test_glm_moe_dsa_interleaved_indexer_only_on_full_indexer_layers():
    cfg = {  # hand-made, GLM-5 shapes
        "model_type": "glm_moe_dsa",
        "num_hidden_layers": 4,
        "rope_theta": 1e6,
        "indexer_types": ["full", "shared", "full", "shared"],
    }
    sched = rope_schedule(cfg)
    assert [x.indexer is not None for x in sched] == [True, False, True, False]
    assert all(x.spec is not None for x in sched)
    idx = sched[0].indexer
    assert (idx.dim, idx.rotary_dim, idx.pairing, idx.output_order) == (
        128,
        64,
        "interleaved",
        "half",
    )
    pos = np.arange(5)
    x = RNG.standard_normal((5, 128))
    c, s = idx.cos_sin(pos)
    want = np.concatenate([_deepseek_interleave(x[:, :64], c, s), x[:, 64:]], -1)
    np.testing.assert_allclose(idx.apply(x, pos), want, rtol=1e-13, atol=1e-15)
    with pytest.raises(ValueError, match="indexer_types has 2 entries"):
        rope_schedule({**cfg, "indexer_types": ["full", "full"]})


def test_kimi_linear_mla_is_nope_and_kda_layers_are_linear():
    cfg = {  # hand-made, Kimi-Linear keys (1-based layer lists in linear_attn_config)
        "model_type": "kimi_linear",
        "num_hidden_layers": 4,
        "linear_attn_config": {"full_attn_layers": [4], "kda_layers": [1, 2, 3]},
    }
    sched = rope_schedule(cfg)
    assert [x.layer_type for x in sched] == ["linear_attention"] * 3 + ["full_attention"]
    assert all(x.spec is None and x.query_scaling is None for x in sched)
    with pytest.raises(ValueError, match="has no RoPE"):
        rope_from_config(cfg)
    with pytest.raises(ValueError, match=r"no kind for layers \[2\]"):
        rope_schedule(
            {**cfg, "linear_attn_config": {"full_attn_layers": [4], "kda_layers": [1, 3]}}
        )


def test_lfm2_conv_layers_have_no_rope():
    cfg = {"model_type": "lfm2", "num_hidden_layers": 5, "head_dim": 64, "full_attn_idxs": [1, 4]}
    sched = rope_schedule(cfg)  # hand-made
    assert [x.layer_type for x in sched] == [
        "conv",
        "full_attention",
        "conv",
        "conv",
        "full_attention",
    ]
    assert [x.spec is not None for x in sched] == [False, True, False, False, True]
    assert sched[1].spec.base == 1e6  # Lfm2Config's default_theta
    types = rope_schedule({**cfg, "layer_types": ["conv"] * 4 + ["full_attention"]})
    assert [x.spec is not None for x in types] == [False] * 4 + [True]


def test_zamba2_shared_attention_head_is_twice_hidden_over_heads():
    cfg = {  # hand-made
        "model_type": "zamba2",
        "hidden_size": 256,
        "num_attention_heads": 8,
        "num_hidden_layers": 3,
        "layers_block_type": ["mamba", "hybrid", "mamba"],
        "use_mem_rope": True,
        "rope_theta": 1e4,
    }
    sched = rope_schedule(cfg)
    assert [x.layer_type for x in sched] == ["linear_attention", "hybrid", "linear_attention"]
    assert [x.spec is not None for x in sched] == [False, True, False]
    assert sched[1].spec.dim == sched[1].spec.rotary_dim == 2 * 256 // 8
    off = rope_schedule({**cfg, "use_mem_rope": False})
    assert all(x.spec is None for x in off)


def test_olmo3_4x_yarn_belongs_to_the_full_attention_layers():
    cfg = {  # hand-made, OLMo 3's released 4.x keys
        "model_type": "olmo3",
        "head_dim": 128,
        "num_hidden_layers": 8,
        "max_position_embeddings": 65536,
        "rope_theta": 500000.0,
        "rope_scaling": {
            "rope_type": "yarn",
            "factor": 8.0,
            "original_max_position_embeddings": 8192,
            "attention_factor": 1.2079441541679836,
        },
    }
    sched = rope_schedule(cfg)
    kinds = [(x.layer_type, x.spec.rope_type) for x in sched]
    assert kinds == ([("sliding_attention", "default")] * 3 + [("full_attention", "yarn")]) * 2
    assert sched[3].spec.attention_scaling == pytest.approx(1.2079441541679836)
    assert sched[0].spec.base == sched[3].spec.base == 5e5
    with pytest.raises(ValueError, match=r"default_theta 500000.0"):
        rope_schedule({**cfg, "rope_theta": 1e6})


def test_deepseek_v4_flat_form_builds_main_and_compress():
    cfg = {  # hand-made, the keys of DeepSeek-V4's released flat config
        "model_type": "deepseek_v4",
        "num_hidden_layers": 3,
        "head_dim": 512,
        "qk_rope_head_dim": 64,
        "rope_theta": 10000.0,
        "compress_rope_theta": 160000.0,
        "compress_ratios": [0, 4, 128],
        "max_position_embeddings": 1048576,
        "rope_scaling": {
            "type": "yarn",
            "factor": 16.0,
            "original_max_position_embeddings": 65536,
            "beta_fast": 32,
            "beta_slow": 1,
        },
    }
    sched = rope_schedule(cfg)
    main, csa, hca = (x.spec for x in sched)
    assert (main.rope_type, main.base, main.rotary_dim, main.rotary_offset) == (
        "default",
        1e4,
        64,
        448,
    )
    assert (csa.rope_type, csa.base, csa.attention_scaling) == ("yarn", 1.6e5, 1.0)
    assert csa.key() == hca.key() and sched[1].indexer is not None and sched[2].indexer is None
    with pytest.raises(ValueError, match="compress_ratios has 3 entries but num_hidden_layers=4"):
        rope_schedule({**cfg, "num_hidden_layers": 4})


def test_qwen3_5_text_types_rotate_only_their_full_attention_layers():
    for model_type in ("qwen3_5_text", "qwen3_5_moe_text"):
        cfg = {"model_type": model_type, "num_hidden_layers": 8, "rope_theta": 1e7}
        sched = rope_schedule(cfg)  # hand-made
        assert [x.spec is not None for x in sched] == [False, False, False, True] * 2
        spec = sched[3].spec
        assert (spec.dim, spec.rotary_dim, spec.mrope_section) == (256, 64, (11, 11, 10))
    with pytest.raises(ValueError, match="full_attention_interval must be positive, got 0"):
        rope_schedule({**cfg, "full_attention_interval": 0})


def test_dual_chunk_attention_is_read_once_and_described():
    cfg = {  # hand-made, Qwen2.5-1M's dual_chunk_attention_config
        "model_type": "qwen2",
        "hidden_size": 3584,
        "num_attention_heads": 28,
        "num_hidden_layers": 2,
        "rope_theta": 1e7,
        "dual_chunk_attention_config": {
            "chunk_size": 262144,
            "local_size": 8192,
            "original_max_position_embeddings": 262144,
        },
    }
    sched = rope_schedule(cfg)
    dca = sched.dual_chunk_attention
    assert (dca.chunk_size, dca.local_size, dca.chunk_len) == (262144, 8192, 253952)
    assert any("transformers ignores it" in n and "vLLM and SGLang" in n for n in sched.notes)
    bad = {**cfg, "dual_chunk_attention_config": {"chunk_size": 8}}
    with pytest.raises(ValueError, match=r"dual_chunk_attention_config.*local_size"):
        rope_schedule(bad)


def test_describe_names_the_family_and_why_and_the_indexer(tmp_path, capsys):
    path = tmp_path / "config.json"  # hand-made
    cfg = {"model_type": "deepseek_v32", "num_hidden_layers": 2, "rope_theta": 1e4}
    path.write_text(json.dumps(cfg))
    assert main(["describe", str(path), "--no-pairs"]) == 0
    out = capsys.readouterr().out
    assert "family            deepseek_v32" in out
    assert "read by           model_type 'deepseek_v32': record deepseek_v32" in out
    assert "indexer: half pairs on the leading 64 of 128 features (the layer's tables)" in out
    generic = tmp_path / "g.json"
    generic.write_text(json.dumps({"model_type": "brand_new", "head_dim": 8, "rope_theta": 1e4}))
    assert main(["describe", str(generic), "--no-pairs"]) == 0
    assert "family            none (generic reading)" in capsys.readouterr().out


def test_removed_family_fields_warn_and_name_their_replacement():
    fam = family_for("deepseek_v3")
    with pytest.warns(
        DeprecationWarning, match=r"Family\.flag_default.*defaults\['rope_interleave'\]"
    ):
        assert fam.flag_default is True
    with pytest.warns(DeprecationWarning, match="partial_rotary_factor"):
        assert family_for("gpt_neox").partial_default == 0.25
    with pytest.warns(DeprecationWarning, match="qk_rope_head_dim"):
        assert fam.rope_head_default == 64


def test_attribute_map_aliases_and_unsupported_types_and_encoders():
    jet = rope_schedule({"model_type": "jetmoe", "hidden_size": 2048, "kv_channels": 128})
    assert jet[0].spec.dim == 128  # JetMoeConfig: head_dim is kv_channels, not 2048 // 32
    assert "kv_channels read as head_dim (JetMoeConfig's attribute_map)" in jet.notes
    with pytest.raises(ValueError, match=r"ernie4_5_vl_moe_text.*permutes its frequencies"):
        rope_schedule({"model_type": "ernie4_5_vl_moe_text", "head_dim": 128})
    vision = {"model_type": "some_vit", "hidden_size": 64, "num_attention_heads": 4}
    with pytest.raises(ValueError, match=r"patch_size.*refimpl\.multiaxis\.apply_rope_2d"):
        rope_schedule({**vision, "rope_theta": 100.0, "patch_size": 16})


def test_a_decoder_type_with_a_text_config_is_refused():
    # mlc-llm's preset of Ministral 3 (released values) names the text type at top level;
    # Ministral3Config would ignore its text_config and build 34 default layers
    path = Path(__file__).parent / "parity" / "configs" / "ministral3-3b-2512.json"
    cfg = json.loads(path.read_text(encoding="utf8"))
    with pytest.raises(ValueError, match=r"text_config beside model_type 'ministral3'.*ignores"):
        rope_schedule(cfg)
    hub = rope_schedule({**cfg, "model_type": "mistral3"})  # the Hub file's wrapper type
    assert hub.family == "ministral3" and len(hub) == 26


def test_rope_only_on_sliding_layers_afmoe_and_flint():
    afmoe = rope_schedule({"model_type": "afmoe", "num_hidden_layers": 8})  # hand-made
    assert [x.spec is None for x in afmoe] == [False, False, False, True] * 2
    # AFMoE rotates its sliding layers by layer type, whatever sliding_window says
    open_window = rope_schedule(
        {"model_type": "afmoe", "num_hidden_layers": 4, "sliding_window": None}
    )
    assert [x.spec is None for x in open_window] == [False, False, False, True]
    flint = rope_schedule({"model_type": "flint", "num_hidden_layers": 10})
    assert [i for i, x in enumerate(flint) if x.spec is None] == [0, 1, 5, 9]
    assert any("FlintConfig's pattern" in n for n in flint.notes)
    unwindowed = rope_schedule(
        {"model_type": "flint", "num_hidden_layers": 10, "sliding_window": None}
    )
    assert all(x.spec is None for x in unwindowed)


def test_byte_level_and_speech_decoders_pair_adjacent_features():
    # BLT's rotate_half takes (x[0::2], x[1::2]) and its class sets head_dim = hidden // heads
    blt = rope_schedule({"model_type": "blt_patcher", "head_dim": 32})  # hand-made
    assert (blt[0].spec.pairing, blt[0].spec.dim, len(blt)) == ("interleaved", 64, 14)
    note = "head_dim 32 ignored: BltPatcherConfig uses hidden_size // num_attention_heads = 64"
    assert note in blt[0].spec.notes
    # Moonshine Streaming: GLM-style pairs inside 0.8 of each 40-wide head (its class's rope);
    # num_key_value_heads, which its class does not define, for the model to build
    moon = rope_schedule({"model_type": "moonshine_streaming", "num_key_value_heads": 8})[0].spec
    assert (moon.pairing, moon.dim, moon.rotary_dim) == ("interleaved", 40, 32)


def test_mllama_cross_attention_layers_and_kolibri_sliding_rope():
    mllama = rope_schedule(
        {
            "model_type": "mllama",
            "text_config": {"num_hidden_layers": 10, "cross_attention_layers": [3, 8]},
        }
    )  # hand-made
    assert [i for i, x in enumerate(mllama) if x.spec is None] == [3, 8]
    with pytest.raises(ValueError, match=r"cross_attention_layers has \[12\]"):
        rope_schedule(
            {
                "model_type": "mllama_text_model",
                "num_hidden_layers": 10,
                "cross_attention_layers": [12],
            }
        )
    kolibri = rope_schedule({"model_type": "kolibri1", "num_hidden_layers": 10})
    assert [i for i, x in enumerate(kolibri) if x.spec is None] == [4, 9]
    open_window = rope_schedule(
        {"model_type": "kolibri1", "num_hidden_layers": 10, "sliding_window": None}
    )
    assert all(x.spec is not None for x in open_window)


def test_glm_image_text_sections_need_the_half_slice():
    with pytest.raises(ValueError, match=r"mrope_section.*\[8, 12, 12\] must sum to the rotary"):
        rope_schedule({"model_type": "glm_image_text"})  # its class defaults cannot run
    cfg = {
        "model_type": "glm_image_text",
        "rope_parameters": {"rope_theta": 1e4, "partial_rotary_factor": 0.5},
    }
    spec = rope_schedule(cfg)[0].spec
    assert (spec.pairing, spec.rotary_dim, spec.mrope_section) == ("half", 64, (8, 12, 12))


def test_linear_attention_hybrids_minimax_and_olmo_hybrid():
    mm = rope_schedule({"model_type": "minimax", "num_hidden_layers": 4})  # hand-made
    assert [x.spec is None for x in mm] == [False, True, False, True]
    olmo = rope_schedule({"model_type": "olmo_hybrid", "num_hidden_layers": 8})
    assert [x.spec is None for x in olmo] == [True, True, True, False] * 2
    # the released checkpoints' NoPE form: a null base builds no rotary module
    nope = rope_schedule(
        {
            "model_type": "olmo_hybrid",
            "num_hidden_layers": 4,
            "rope_parameters": {"rope_type": "default", "rope_theta": None},
        }
    )
    assert all(x.spec is None for x in nope)
    assert "olmo_hybrid with a null rope_theta: no layer applies RoPE (NoPE)" in nope.notes


def test_mla_families_beside_deepseek():
    for model_type in ("axk1", "youtu"):  # DeepSeek-V3's rope_interleave flag, default true
        spec = rope_schedule({"model_type": model_type, "num_hidden_layers": 2})[0].spec
        assert (spec.pairing, spec.output_order, spec.dim) == ("interleaved", "half", 64)
        flat = rope_schedule(
            {"model_type": model_type, "num_hidden_layers": 2, "rope_interleave": False}
        )[0].spec
        assert (flat.pairing, flat.output_order) == ("half", "same")
    mini = rope_schedule({"model_type": "minicpm3", "num_hidden_layers": 2})[0].spec
    assert (mini.pairing, mini.dim) == ("half", 32)
    axk2 = rope_schedule({"model_type": "axk2", "num_hidden_layers": 2})[0]
    assert (axk2.spec.pairing, axk2.spec.output_order) == ("interleaved", "half")
    assert (axk2.indexer.pairing, axk2.indexer.dim, axk2.indexer.rotary_dim) == ("half", 128, 32)


def test_wrapped_llama_like_text_types():
    for wrapper, text in (
        ("granite_docling", "granite_docling_text"),
        ("granite4_vision", "granite4_vision_text"),
        ("aria", "aria_text"),
    ):
        sched = rope_schedule({"model_type": wrapper, "text_config": {"num_hidden_layers": 2}})
        assert sched.family == text and sched[0].spec.pairing == "half"
    clova = rope_schedule(
        {
            "model_type": "hyperclovax_vision_v2",
            "text_config": {"model_type": "hyperclovax", "num_hidden_layers": 2},
        }
    )
    assert clova.family == "hyperclovax" and clova[0].spec.dim == 128
    apertus = rope_schedule({"model_type": "apertus1p5_text", "num_hidden_layers": 2})[0].spec
    assert (apertus.rope_type, apertus.base) == ("llama3", 1.2e7)  # the class's own block


def test_a_class_rope_block_is_read_and_a_bare_base_beside_it_refused():
    # OpenAIPrivacyFilterConfig fills in its own YaRN block when the file gives none; with a
    # top-level rope_theta it puts the base into that block, while MoonshineStreamingConfig
    # keeps its own: refimpl refuses the ambiguous form for both
    spec = rope_schedule({"model_type": "openai_privacy_filter"})[0].spec
    assert (spec.rope_type, spec.base, spec.params["factor"]) == ("yarn", 150000.0, 32.0)
    for model_type in ("openai_privacy_filter", "moonshine_streaming"):
        with pytest.raises(ValueError, match="rope_theta without rope_parameters"):
            rope_schedule({"model_type": model_type, "rope_theta": 5e5, "num_key_value_heads": 8})


@pytest.mark.parametrize(
    "model_type", ["neucodec", "pe_audio_encoder", "timesfm2_5", "efficientloftr", "moonshine"]
)
def test_towers_over_frames_or_patches_are_refused_naming_the_api(model_type):
    cfg = {"model_type": model_type, "head_dim": 64, "rope_theta": 1e4}  # hand-made
    with pytest.raises(ValueError, match=r"not a text decoder.*refimpl\.audio\.frame_times"):
        rope_schedule(cfg)


def test_a_rotation_by_minus_theta_or_of_one_head_is_refused():
    with pytest.raises(ValueError, match=r"nanochat.*\(x2, -x1\).*no direction"):
        rope_schedule({"model_type": "nanochat", "hidden_size": 768, "num_attention_heads": 6})
    with pytest.raises(ValueError, match=r"qwen2_5_omni_dit.*first attention head only"):
        rope_schedule({"model_type": "qwen2_5_omni_dit", "head_dim": 64, "rope_theta": 1e4})
    with pytest.raises(ValueError, match=r"hrm_text.*rewrites num_hidden_layers"):
        rope_schedule({"model_type": "hrm_text", "head_dim": 64, "rope_theta": 1e4})


def test_families_with_a_rope_per_layer_type_in_the_class():
    laguna = rope_schedule({"model_type": "laguna", "num_hidden_layers": 2})  # hand-made
    full = laguna[0].spec  # LagunaConfig's own rope: base 5e5 on half of each 128-wide head
    assert (full.base, full.dim, full.rotary_dim) == (5e5, 128, 64)
    assert any("no rope_parameters" in n and "LagunaConfig" in n for n in laguna.notes)
    with pytest.raises(ValueError, match="rope_theta without rope_parameters"):
        rope_schedule({"model_type": "laguna", "num_hidden_layers": 2, "rope_theta": 1e6})
    with pytest.raises(ValueError, match="mimo_v2_flash needs config key layer_types"):
        rope_schedule({"model_type": "mimo_v2_flash", "num_hidden_layers": 2})
    exa = rope_schedule({"model_type": "exaone_moe", "num_hidden_layers": 4, "head_dim": 64})
    assert [x.spec is None for x in exa] == [False, False, False, True]


@pytest.mark.parametrize(
    ("model_type", "kind", "api"),
    [
        ("gpt2", "learned absolute positions", None),
        ("bloom", "ALiBi", "refimpl.bias.alibi_bias"),
        ("t5", "relative position buckets", "refimpl.bias.t5_bias"),
        ("whisper", "sinusoidal absolute positions", "refimpl.absolute.sinusoidal"),
        ("mamba", "no position encoding", None),
    ],
)
def test_types_without_rope_are_refused_naming_their_positions(model_type, kind, api):
    # hand-made: a rope_theta does not make a model without a rotary embedding rotate
    cfg = {"model_type": model_type, "hidden_size": 64, "num_attention_heads": 4, "rope_theta": 1e4}
    with pytest.raises(ValueError) as err:
        rope_schedule(cfg)
    msg = str(err.value)
    assert f"model_type {model_type!r} has no RoPE" in msg and kind in msg
    assert (api in msg) if api else "(refimpl:" not in msg


def test_a_wrapper_of_a_decoder_without_rope_is_refused_by_the_decoder():
    cfg = {"model_type": "blip-2", "text_config": {"model_type": "opt"}}  # hand-made
    with pytest.raises(ValueError, match=r"model_type 'opt' has no RoPE.*learned absolute"):
        rope_schedule(cfg)


def test_no_rope_types_have_no_family_record():
    from refimpl.families import FAMILIES, NO_ROPE

    types = [t for kinds in NO_ROPE.values() for t in kinds]
    assert len(types) == len(set(types))
    assert not set(types) & set(FAMILIES)


def test_config_class_only_types_read_as_the_model_their_auto_mapping_runs():
    # transformers 5.24 ships ExaoneConfig with no modeling file; AutoModel runs LlamaModel
    # with it, whose RoPE reads num_layers through ExaoneConfig's attribute_map (hand-made)
    exaone = rope_schedule({"model_type": "exaone", "num_layers": 3})
    assert len(exaone) == 3 and exaone[0].spec.base == 500000.0  # its default_theta
    assert "num_layers read as num_hidden_layers (ExaoneConfig's attribute_map)" in exaone.notes
    # SarvamMoEConfig rotates whole heads, unlike Glm4MoeConfig (partial_rotary_factor 0.5)
    sarvam = rope_schedule({"model_type": "sarvam_moe"})[0].spec
    assert (sarvam.rotary_dim, sarvam.dim, sarvam.base) == (64, 64, 8e6)
    # no model class at all: refused naming what is missing
    for model_type in ("layoutxlm", "pp_chart2table_vision"):
        with pytest.raises(ValueError, match=r"config class for it but no model class"):
            rope_schedule({"model_type": model_type, "hidden_size": 64, "num_attention_heads": 4})


def test_dbrx_reads_the_top_level_base_and_refuses_another_in_attn_config():
    # hand-made, in DBRX's key names (d_model, n_heads, n_layers through DbrxConfig's
    # attribute_map); transformers 5.24 rotates with the top-level base only
    base = {"model_type": "dbrx", "d_model": 6144, "n_heads": 48, "n_layers": 40}
    plain = rope_schedule({**base, "attn_config": {"kv_n_heads": 8, "rope_theta": 10000}})
    assert (len(plain), plain[0].spec.dim, plain[0].spec.base) == (40, 128, 10000.0)
    with pytest.raises(ValueError, match=r"attn_config\.rope_theta = 500000.*ignores"):
        rope_schedule({**base, "attn_config": {"rope_theta": 500000}})
    agreed = rope_schedule({**base, "rope_theta": 5e5, "attn_config": {"rope_theta": 500000}})
    assert agreed[0].spec.base == 500000.0
    # DbrxAttention reads attn_config.rope_theta, a field DbrxAttentionConfig does not define
    for attn in ({"kv_n_heads": 8}, {"rope_theta": None}, None):
        cfg = {**base} if attn is None else {**base, "attn_config": attn}
        with pytest.raises(ValueError, match=r"attn_config\.rope_theta is null or missing.*built"):
            rope_schedule(cfg)


_SF = ["sliding_attention", "full_attention"]
# hand-made configs: model type -> (the keys its model's code needs and its class leaves null or
# does not define, values that let transformers 5.24 build it (tests/parity/configs/*.handmade))
_NEEDS = {
    "hunyuan_v1_dense": ("head_dim", {"head_dim": 128}),
    "hunyuan_v1_moe": ("head_dim", {"head_dim": 128}),
    "ministral": ("head_dim", {"head_dim": 128}),
    "nemotron": ("num_key_value_heads", {"num_key_value_heads": 8}),
    "moonshine_streaming": ("num_key_value_heads", {"num_key_value_heads": 8}),
    "chameleon": ("vocabulary_map", {"vocabulary_map": {"<image>": 8711}}),
    "dots1": ("n_routed_experts, n_shared_experts", {"n_routed_experts": 8, "n_shared_experts": 1}),
    "deepseek_ocr2_text": ("mlp_layer_types", {"mlp_layer_types": ["dense"] * 32}),
    "diffusion_gemma_text": (
        "num_experts, moe_intermediate_size",
        {
            "num_experts": 8,
            "moe_intermediate_size": 64,
            "num_hidden_layers": 2,
            "layer_types": ["sliding_attention", "full_attention"],
        },
    ),
    "lfm2_moe": ("layer_types", {"layer_types": ["conv", "full_attention"] * 16}),
    "qwen3_omni_moe_talker_text": (
        "shared_expert_intermediate_size",
        {"shared_expert_intermediate_size": 768},
    ),
    **{
        t: ("dropout_rate", {"dropout_rate": 0.0, "num_hidden_layers": 2, "layer_types": _SF})
        for t in ("t5gemma2_text", "t5gemma2_decoder")
    },
}


@pytest.mark.parametrize("model_type", sorted(_NEEDS))
def test_a_model_transformers_cannot_build_is_refused_naming_the_key(model_type):
    keys, given = _NEEDS[model_type]
    builder = next(n.builder for n in family_for(model_type).needs)
    context = {k: v for k, v in given.items() if k not in keys.split(", ")}
    nulls = dict.fromkeys(keys.split(", "))
    for cfg in (
        {"model_type": model_type, **context},
        {"model_type": model_type, **given, **nulls},
    ):
        with pytest.raises(ValueError) as err:
            rope_schedule(cfg)
        msg = str(err.value)
        assert f"{model_type}: config key" in msg and f" {keys} " in msg, msg
        assert builder in msg and "cannot be built on this config" in msg
    sched = rope_schedule({"model_type": model_type, **given})
    assert any(layer.spec is not None for layer in sched)


def test_a_need_is_read_through_wrappers_nested_keys_and_first_layer_keys():
    with pytest.raises(ValueError, match=r"^deepseek_ocr2_text: config key mlp_layer_types"):
        rope_schedule({"model_type": "deepseek_ocr2", "text_config": {}})
    # Dots1's MoE (which needs the expert counts) starts at first_k_dense_replace
    dense = rope_schedule(
        {"model_type": "dots1", "num_hidden_layers": 4, "first_k_dense_replace": 4}
    )
    assert len(dense) == 4
    with pytest.raises(ValueError, match=r"n_routed_experts, n_shared_experts are null"):
        rope_schedule({"model_type": "dots1", "num_hidden_layers": 4, "first_k_dense_replace": 3})
    with pytest.raises(TypeError, match=r"config key attn_config must be an object, got list"):
        rope_schedule({"model_type": "dbrx", "attn_config": [10000]})
    need = family_for("dbrx").needs[0]
    assert need.missing({"attn_config": {"rope_theta": 1e4}}) == []
    assert need.missing({}) == ["attn_config.rope_theta"]


def test_step3p5_builds_a_rope_per_layer_type_from_per_layer_lists():
    path = Path(__file__).parent / "parity" / "configs" / "step3p5.handmade.json"
    cfg = json.loads(path.read_text(encoding="utf8"))  # hand-made (SOURCES.md)
    got = [(x.spec.base, x.spec.rotary_dim) for x in rope_schedule(cfg)]
    assert got == [(5e6, 64), (1e4, 128), (1e4, 128), (5e6, 64)]
    wrapped = rope_schedule({"model_type": "step3p7", "text_config": cfg})
    assert [(x.spec.base, x.spec.rotary_dim) for x in wrapped] == got
    with pytest.raises(ValueError, match=r"rope_theta has 3 entries but num_hidden_layers=4"):
        rope_schedule({**cfg, "rope_theta": [5e6, 1e4, 1e4]})
    with pytest.raises(ValueError, match=r"rope_theta\[3\] = 4000000.0 differs"):
        rope_schedule({**cfg, "rope_theta": [5e6, 1e4, 1e4, 4e6]})


def test_roformer_rotates_adjacent_pairs_at_base_10000_unless_values_rotate_too():
    spec = rope_schedule({"model_type": "roformer", "rope_theta": 5e5})[0].spec  # hand-made
    assert (spec.pairing, spec.output_order, spec.dim, spec.base) == (
        "interleaved",
        "same",
        64,
        10000.0,
    )
    with pytest.raises(ValueError, match=r"config key rotary_value true: .*rotates the values"):
        rope_schedule({"model_type": "roformer", "rotary_value": True})
    # CLVP's decoder adds learned positions; only CLVP's encoder runs the file's rotary code
    with pytest.raises(ValueError, match=r"'clvp_decoder' has no RoPE.*learned absolute"):
        rope_schedule({"model_type": "clvp_decoder"})


def test_dory_halves_attention_and_mlp_blocks_and_mistral_large4_is_refused():
    # hand-made, in the released form: (attention, mlp) blocks counted in num_hidden_layers
    types = ["sliding_attention", "mlp", "full_attention", "mlp"]
    dory = rope_schedule({"model_type": "dory", "num_hidden_layers": 4, "layer_types": types})
    assert [(x.layer_type, x.spec.base) for x in dory] == [
        ("sliding_attention", 1e4),
        ("full_attention", 1e7),
    ]
    with pytest.raises(ValueError, match=r"must alternate an attention type and 'mlp'"):
        rope_schedule({"model_type": "dory", "num_hidden_layers": 4, "layer_types": types[::-1]})
    with pytest.raises(ValueError, match=r"learned per-frequency parameter"):
        rope_schedule({"model_type": "mistral_large4_text", "head_dim": 128})


def test_neomme_alternates_row_and_column_over_each_layer_types_pairs():
    sched = rope_schedule({"model_type": "neomme", "num_hidden_layers": 6})  # hand-made
    got = [(x.layer_type, x.spec.rotary_dim, x.spec.base, x.spec.mrope_section) for x in sched]
    sliding = ("sliding_attention", 64, 1e4, (16, 16, 0))
    assert got == [sliding] * 5 + [("full_attention", 16, 1e6, (4, 4, 0))]
    assert {x.spec.mrope_layout for x in sched} == {"alternating"}
    with pytest.raises(ValueError, match=r"rotates 6 of head_dim=64 features, not a multiple"):
        rope_schedule(
            {
                "model_type": "neomme",
                "num_hidden_layers": 1,
                "layer_types": ["full_attention"],
                "rope_parameters": {"full_attention": {"partial_rotary_factor": 0.1}},
            }
        )


def test_hy_v4_indexer_rotates_the_trailing_slice_on_its_full_layers():
    sched = rope_schedule({"model_type": "hy_v4", "num_hidden_layers": 6})  # hand-made
    assert [x.spec.rotary_dim for x in sched] == [64] * 6
    assert [x.spec.pairing for x in sched] == ["half"] * 6
    # HYV4Config's default indexer_types: full on layer 0 and every fourth from layer 1
    assert [x.index for x in sched if x.indexer is not None] == [0, 1, 5]
    ix = sched[0].indexer
    assert (ix.dim, ix.rotary_dim, ix.rotary_offset, ix.pairing) == (128, 64, 64, "half")
    given = rope_schedule(
        {"model_type": "hy_v4", "num_hidden_layers": 2, "indexer_types": ["shared", "full"]}
    )
    assert [x.indexer is not None for x in given] == [False, True]


def test_bailing_hybrid_rotates_its_mla_layers_only():
    sched = rope_schedule({"model_type": "bailing_hybrid", "num_hidden_layers": 12})  # hand-made
    assert [i for i, x in enumerate(sched) if x.spec is not None] == [5, 11]
    spec = sched[5].spec
    assert (spec.rotary_dim, spec.pairing, spec.output_order, spec.base) == (
        64,
        "interleaved",
        "half",
        6e6,
    )


def test_configs_composed_of_models_are_refused_naming_the_part():
    cfg = {  # hand-made: an encoder-decoder pair of configs, no decoder keys at top level
        "model_type": "my-encoder-decoder",
        "encoder": {"model_type": "bert", "hidden_size": 64},
        "decoder": {"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4},
    }
    with pytest.raises(ValueError, match=r"composes other models.*\['decoder', 'encoder'\]"):
        rope_schedule(cfg)
    # a decoder whose config also holds a codec's config is read as a decoder
    cfg = {"model_type": "my-speech-decoder", "hidden_size": 64, "num_attention_heads": 4}
    cfg |= {"rope_theta": 1e4, "num_hidden_layers": 2, "codec_config": {"model_type": "mimi"}}
    assert [layer.spec.rotary_dim for layer in rope_schedule(cfg)] == [16, 16]


_F = ["full_attention"]
_FSS = {"num_hidden_layers": 3, "layer_types": _F + ["sliding_attention"] * 2}


@pytest.mark.parametrize(
    ("cfg", "bases", "width"),
    [  # hand-made configs, reading through each class's defaults
        ({"model_type": "modernbert", **_FSS}, [160000.0, 1e4, 1e4], 64),
        ({"model_type": "pe_audio", "text_config": _FSS}, None, 64),
        (
            {
                "model_type": "t5gemma2_decoder",
                "dropout_rate": 0.0,  # T5Gemma2Config sets it; the decoder's class has none
                "num_hidden_layers": 6,
                "layer_types": ["sliding_attention"] * 5 + _F,
            },
            [1e4] * 5 + [1e6],
            256,
        ),
        ({"model_type": "emu3", "text_config": {}}, [1e6] * 32, 128),
        (
            {"model_type": "deepseek_ocr2", "text_config": {"mlp_layer_types": ["dense"] * 32}},
            [1e4] * 32,
            128,
        ),
        ({"model_type": "dia_decoder"}, [1e4] * 18, 128),
        ({"model_type": "voxtral_realtime_text", "num_hidden_layers": 2}, [1e4] * 2, 128),
    ],
)
def test_records_that_reuse_a_rope(cfg, bases, width):
    sched = rope_schedule(cfg)
    assert {layer.spec.rotary_dim for layer in sched} == {width}
    if bases is not None:
        assert [layer.spec.base for layer in sched] == bases


def test_qwen2_5_omni_thinker_reads_qwen2_5_vl_sections():
    spec = rope_schedule({"model_type": "qwen2_5_omni_thinker", "text_config": {}})[0].spec
    assert spec.mrope_section == (16, 24, 24) and spec.rotary_dim == 128


def test_m_rope_decoders_of_paddleocr_vl_and_cosmos3_edge():
    paddle = rope_schedule({"model_type": "paddleocr_vl", "text_config": {}})[0].spec
    assert (paddle.mrope_section, paddle.mrope_layout, paddle.base) == (
        (16, 24, 24),
        "blocked",
        5e5,
    )
    cosmos = rope_schedule({"model_type": "cosmos3_edge", "text_config": {}})[0].spec
    assert (cosmos.mrope_section, cosmos.mrope_layout) == ((24, 20, 20), "interleaved")


def test_gemma3n_and_lfm3_read_a_rope_per_layer_type():
    types = ["sliding_attention"] * 4 + ["full_attention"]
    g = rope_schedule({"model_type": "gemma3n_text", "num_hidden_layers": 5, "layer_types": types})
    assert [layer.spec.base for layer in g] == [1e4] * 4 + [1e6]
    types = ["conv", "full_attention", "sliding_attention"]
    lfm = rope_schedule({"model_type": "lfm3", "num_hidden_layers": 3, "layer_types": types})
    assert lfm[0].spec is None
    assert (lfm[1].spec.rope_type, lfm[1].spec.base, lfm[2].spec.base) == ("proportional", 1e6, 1e4)


def test_layer_rope_theta_bases_per_layer_or_nope_markers():
    cfg = {"model_type": "granite_swa", "num_hidden_layers": 3, "layer_rope_theta": [1e4, 0, 5e5]}
    assert [x.spec and x.spec.base for x in rope_schedule(cfg)] == [1e4, None, 5e5]
    assert [x.spec.base for x in rope_schedule({"model_type": "granitemoe_swa"})] == [1e4] * 32
    # Muse: a non-zero entry only says "rotates", with the one module at rope_theta
    cfg = {"model_type": "muse_spark_text", "num_hidden_layers": 3, "layer_rope_theta": [0, 7, 5e5]}
    sched = rope_schedule(cfg)
    assert [x.spec and x.spec.base for x in sched] == [None, 5e5, 5e5]
    assert any("one rotary module at rope_theta" in n for n in sched.notes)
    default = rope_schedule({"model_type": "muse_glimmer", "text_config": {"num_hidden_layers": 5}})
    assert [x.spec is None for x in default] == [True, False, False, False, True]
    with pytest.raises(ValueError, match=r"layer_rope_theta\[1\] = -1.0"):
        rope_schedule(
            {"model_type": "granite_swa", "num_hidden_layers": 2, "layer_rope_theta": [1, -1]}
        )


def test_a_null_rope_per_layer_type_is_nope_and_ultrabert_and_qwen3_omni():
    types = ["sliding_attention", "full_attention"]
    beam = rope_schedule({"model_type": "beam", "num_hidden_layers": 2, "layer_types": types})
    assert [x.spec is None for x in beam] == [False, True]
    assert any("null: those layers have no RoPE" in n for n in beam.notes)
    ultra = rope_schedule({"model_type": "ultrabert", "num_hidden_layers": 2, "layer_types": types})
    assert [x.spec.base for x in ultra] == [1e4, 2560000.0]
    omni = {"model_type": "qwen3_omni_moe_thinker", "text_config": {"head_dim": 128}}
    spec = rope_schedule(omni)[0].spec
    assert (spec.mrope_section, spec.mrope_layout) == ((24, 20, 20), "interleaved")
    with pytest.raises(ValueError, match="not divisible by num_attention_heads=28; give head_dim"):
        rope_schedule({"model_type": "qwen3_omni_moe_thinker", "text_config": {}})


@pytest.mark.parametrize("model_type", ["gemma4_unified", "diffusion_gemma", "embedding_gemma2"])
def test_gemma4_variants_widen_the_full_attention_heads(model_type):
    types = ["sliding_attention", "full_attention"]
    text = {
        "num_hidden_layers": 2,
        "layer_types": types,
        "per_layer_config": {"1": {"head_dim": 512}},
    }
    if model_type == "diffusion_gemma":  # its layers always build the MoE
        text.update(num_experts=8, moe_intermediate_size=64)
    sched = rope_schedule({"model_type": model_type, "text_config": text})
    assert [x.spec.dim for x in sched] == [256, 512]


def test_hybrids_with_block_lists():
    gemma = rope_schedule({"model_type": "recurrent_gemma", "num_hidden_layers": 4})
    assert [x.spec and x.spec.rotary_dim for x in gemma] == [None, None, 128, None]
    assert gemma[2].layer_type == "sliding_attention"
    bamba = rope_schedule(
        {"model_type": "bamba", "num_hidden_layers": 3, "attn_layer_indices": [1]}
    )
    assert [x.spec and x.spec.rotary_dim for x in bamba] == [None, 64, None]
    assert all(
        x.spec is None for x in rope_schedule({"model_type": "bamba", "num_hidden_layers": 2})
    )
    falcon = rope_schedule({"model_type": "falcon_h1", "num_hidden_layers": 2})
    assert [x.spec.rotary_dim for x in falcon] == [128, 128]
    with pytest.raises(ValueError, match=r"block_types\[0\] = 'mlp'"):
        rope_schedule(
            {"model_type": "recurrent_gemma", "num_hidden_layers": 2, "block_types": ["mlp"]}
        )


def test_falcon_with_alibi_is_refused_not_read_as_rope():
    cfg = {"model_type": "falcon", "hidden_size": 64, "num_attention_heads": 4}  # hand-made
    cfg["num_hidden_layers"] = 2
    assert [x.spec.rotary_dim for x in rope_schedule(cfg)] == [16, 16]
    with pytest.raises(ValueError, match=r"alibi true has no RoPE.*refimpl\.bias\.alibi_bias"):
        rope_schedule({**cfg, "alibi": True})


def test_lara_mini_rotates_its_sliding_layers_only():
    types = ["linear_attention", "sliding_attention", "full_attention"]
    sched = rope_schedule({"model_type": "lara_mini", "num_hidden_layers": 3, "layer_types": types})
    assert [x.spec is not None for x in sched] == [False, True, False]
    with pytest.raises(ValueError, match="lara_mini needs config key layer_types"):
        rope_schedule({"model_type": "lara_mini", "num_hidden_layers": 3})


def test_zaya_rotates_half_of_each_head_with_the_rope_of_its_type():
    types = ["hybrid", "hybrid_sliding"]
    sched = rope_schedule({"model_type": "zaya", "num_hidden_layers": 2, "layer_types": types})
    assert [(x.spec.rotary_dim, x.spec.base) for x in sched] == [(64, 5e6), (64, 1e4)]
    with pytest.raises(ValueError, match=r"zaya: layer_types\[0\] = 'conv'"):
        rope_schedule({"model_type": "zaya", "num_hidden_layers": 1, "layer_types": ["conv"]})


def test_molmo2_scales_only_its_rope_scaling_layers():
    rope = {"rope_type": "yarn", "rope_theta": 1e6, "factor": 4.0}  # hand-made
    rope["original_max_position_embeddings"] = 8192
    cfg = {"model_type": "molmo2", "text_config": {"num_hidden_layers": 3}}
    cfg["text_config"] |= {"rope_parameters": rope, "rope_scaling_layers": [1]}
    sched = rope_schedule(cfg)
    assert [x.spec.rope_type for x in sched] == ["default", "yarn", "default"]
    assert {x.spec.base for x in sched} == {1e6}
    everywhere = rope_schedule(
        {**cfg, "text_config": {"num_hidden_layers": 2, "rope_parameters": rope}}
    )
    assert [x.spec.rope_type for x in everywhere] == ["yarn", "yarn"]


def test_cohere2_moe_forces_rope_on_dense_prefix_layers():
    cfg = {"model_type": "cohere2_moe", "num_hidden_layers": 3}  # hand-made
    cfg |= {"layer_types": ["full_attention", "full_attention", "sliding_attention"]}
    cfg |= {"mlp_layer_types": ["dense", "sparse", "sparse"]}
    assert [x.spec is not None for x in rope_schedule(cfg)] == [True, False, True]
    off = {**cfg, "prefix_dense_sliding_window_pattern": 4}
    assert [x.spec is not None for x in rope_schedule(off)] == [False, False, True]
    with pytest.raises(ValueError, match="needs config keys layer_types and mlp_layer_types"):
        rope_schedule({"model_type": "cohere2_moe", "num_hidden_layers": 3})


def test_unlimited_ocr_rotates_its_reference_window_layers():
    sched = rope_schedule({"model_type": "unlimited_ocr", "text_config": {}})
    assert len(sched) == 12 and {x.spec.rotary_dim for x in sched} == {128}
    assert sched[0].layer_type == "reference_sliding_attention"
