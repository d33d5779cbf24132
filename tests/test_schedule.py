"""rope_schedule: one LayerRope per layer in every config form (transformers 4.x and 5.x, layer
types, nested per-layer rope parameters, local bases, NoPE rules, per-layer head widths), the
groups of distinct specs, and agreement with rope_from_config. Every config here is hand-made;
released configs are tested in tests/parity/."""

import json
from collections.abc import Sequence

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from refimpl import families
from refimpl.config import LayerRope, RopeSchedule, rope_from_config, rope_schedule
from refimpl.rotary import inv_freq

GPT_OSS_LIKE = {  # hand-made, 5.x form with layer_types and one flat rope
    "model_type": "gpt_oss",
    "head_dim": 64,
    "num_hidden_layers": 4,
    "layer_types": ["sliding_attention", "full_attention"] * 2,
    "max_position_embeddings": 131072,
    "rope_parameters": {
        "rope_type": "yarn",
        "rope_theta": 150000.0,
        "factor": 32.0,
        "original_max_position_embeddings": 4096,
        "beta_fast": 32.0,
        "beta_slow": 1.0,
        "truncate": False,
    },
}
NESTED_5X = {  # hand-made, 5.x nested rope_parameters per layer type
    "model_type": "olmo3",
    "head_dim": 32,
    "num_hidden_layers": 6,
    "layer_types": ["sliding_attention", "sliding_attention", "full_attention"] * 2,
    "rope_parameters": {
        "sliding_attention": {"rope_type": "default", "rope_theta": 1e4},
        "full_attention": {"rope_type": "linear", "rope_theta": 1e6, "factor": 4.0},
    },
}


def test_schedule_is_a_sequence_of_layer_ropes():
    sched = rope_schedule(GPT_OSS_LIKE)
    assert isinstance(sched, RopeSchedule) and isinstance(sched, Sequence)
    assert len(sched) == 4 and all(isinstance(x, LayerRope) for x in sched)
    assert [x.index for x in sched] == [0, 1, 2, 3]
    assert [x.layer_type for x in sched] == GPT_OSS_LIKE["layer_types"]
    assert sched.model_type == "gpt_oss" and sched.source == "<dict>"
    # one rope for both layer types: one group, and the spec rope_from_config gives
    assert list(sched.groups().values()) == [[0, 1, 2, 3]]
    assert sched[0].spec.key() == rope_from_config(GPT_OSS_LIKE).key()
    assert sched[1].spec is sched[0].spec
    assert sched[0].spec.params["truncate"] is False


def test_nested_5x_rope_parameters_follow_layer_types():
    sched = rope_schedule(NESTED_5X)
    bases = [x.spec.base for x in sched]
    assert bases == [1e4, 1e4, 1e6] * 2
    groups = sched.groups()
    assert list(groups.values()) == [[0, 1, 3, 4], [2, 5]]
    specs = sched.specs()
    assert set(specs) == set(groups)
    assert specs[sched[2].spec.key()].rope_type == "linear"
    for lt in ("sliding_attention", "full_attention"):
        one = rope_from_config(NESTED_5X, layer_type=lt)
        assert one.key() == next(x.spec.key() for x in sched if x.layer_type == lt)
    assert [(a, b) for a, b, _ in sched.runs()] == [(0, 1), (2, 2), (3, 4), (5, 5)]


def test_nested_entry_missing_for_a_layer_type_is_refused():
    cfg = {**NESTED_5X, "rope_parameters": {"sliding_attention": {"rope_theta": 1e4}}}
    with pytest.raises(ValueError, match="has no entry for layer type 'full_attention'"):
        rope_schedule(cfg)
    with pytest.raises(ValueError, match=r"layer_types\[0\] = 'chunked_attention'"):
        rope_schedule({**NESTED_5X, "layer_types": ["chunked_attention"] * 6})
    unknown = {**NESTED_5X, "model_type": "some_hybrid", "layer_types": ["chunked"] * 6}
    with pytest.raises(ValueError, match="layer_types value 'chunked'"):
        rope_schedule(unknown)


def test_4x_and_5x_forms_give_the_same_schedule():
    four = {  # hand-made, Llama 4 4.x form
        "model_type": "llama4_text",
        "head_dim": 16,
        "num_hidden_layers": 8,
        "rope_theta": 5e5,
        "rope_scaling": {
            "rope_type": "llama3",
            "factor": 16.0,
            "low_freq_factor": 1.0,
            "high_freq_factor": 1.0,
            "original_max_position_embeddings": 8192,
        },
        "no_rope_layers": [1, 1, 1, 0] * 2,
    }
    five = {k: v for k, v in four.items() if k not in ("rope_theta", "rope_scaling")}
    five["rope_parameters"] = {**four["rope_scaling"], "rope_theta": 5e5}
    a, b = rope_schedule(four), rope_schedule(five)
    assert [None if x.spec is None else x.spec.key() for x in a] == [
        None if x.spec is None else x.spec.key() for x in b
    ]
    assert [x.query_scaling for x in a] == [x.query_scaling for x in b]


def test_nope_layers_group_under_none_and_rope_from_config_names_them():
    cfg = {"model_type": "smollm3", "head_dim": 8, "num_hidden_layers": 8}  # hand-made
    sched = rope_schedule(cfg)
    assert sched.groups()[None] == [3, 7]
    spec = rope_from_config(cfg)  # the RoPE layers' spec
    assert spec.key() == sched[0].spec.key()
    with pytest.raises(ValueError, match="has no RoPE"):
        rope_from_config({**cfg, "no_rope_layers": [0] * 8})


def test_per_layer_head_widths_make_distinct_specs():
    cfg = {  # hand-made, Gemma 4 keys with a per-layer override
        "model_type": "gemma4_text",
        "head_dim": 16,
        "num_hidden_layers": 6,
        "per_layer_config": {"5": {"head_dim": 48}},
        "rope_parameters": {
            "sliding_attention": {"rope_type": "default", "rope_theta": 1e4},
            "full_attention": {"rope_type": "default", "rope_theta": 1e6},
        },
    }
    sched = rope_schedule(cfg)
    assert [x.spec.dim for x in sched] == [16] * 5 + [48]
    np.testing.assert_array_equal(sched[5].spec.inv_freq, inv_freq(48, 1e6))
    assert rope_from_config(cfg, layer_type="full_attention").dim == 48
    with pytest.raises(ValueError, match="names layer 9 of 6"):
        rope_schedule({**cfg, "per_layer_config": {"9": {"head_dim": 48}}})


def test_seq_len_reaches_every_length_dependent_layer():
    cfg = {  # hand-made
        "head_dim": 16,
        "num_hidden_layers": 2,
        "max_position_embeddings": 100,
        "rope_parameters": {"rope_type": "dynamic", "rope_theta": 1e4, "factor": 2.0},
    }
    short, long = rope_schedule(cfg), rope_schedule(cfg, seq_len=400)
    assert short[0].spec.key() != long[0].spec.key()
    np.testing.assert_array_equal(
        long[1].spec.inv_freq, rope_from_config(cfg, seq_len=400).inv_freq
    )
    with pytest.raises(TypeError, match="seq_len must be an integer"):
        rope_schedule(cfg, seq_len=4.5)


def test_schedule_from_a_path_and_text_config(tmp_path):
    p = tmp_path / "config.json"
    vlm = {
        "model_type": "qwen2_5_vl",
        # head 128: the model's default M-RoPE sections [16, 24, 24] cover 64 pairs
        "text_config": {**GPT_OSS_LIKE, "model_type": "qwen2_5_vl_text", "head_dim": 128},
    }
    p.write_text(json.dumps(vlm))
    sched = rope_schedule(p)
    assert sched.source == str(p) and sched.model_type == "qwen2_5_vl_text"
    assert "RoPE read from text_config" in sched.notes
    vlm["text_config"]["head_dim"] = 64  # transformers' module cannot run these sections
    p.write_text(json.dumps(vlm))
    with pytest.raises(ValueError, match=r"qwen2_5_vl.s default.*\[16, 24, 24\].*32"):
        rope_schedule(p)


def test_layer_count_comes_from_the_config_class_default():
    sched = rope_schedule({"model_type": "llama4_text", "head_dim": 8})
    assert len(sched) == 48 and [x.spec is None for x in sched[:4]] == [False] * 3 + [True]
    assert "no num_hidden_layers: 48 (Llama4TextConfig's default)" in sched.notes
    generic = rope_schedule({"head_dim": 8})  # no family: the count is unknown
    assert len(generic) == 1 and generic[0].layer_type == "all"
    assert any("one entry stands for every layer" in n for n in generic.notes)


@settings(deadline=None)
@given(
    model_type=st.sampled_from(
        [
            "llama",
            "gemma2",
            "gemma3_text",
            "llama4_text",
            "smollm3",
            "cohere2",
            "exaone4",
            "qwen3_next",
            "glm4",
            "deepseek_v3",
            "olmo3",
            "lfm2",
            "qwen3_5_text",
            "deepseek_v32",
            "glm_moe_dsa",
            "kimi_linear",
            "no_such_model",
        ]
    ),
    layers=st.integers(1, 24),
    pattern=st.integers(1, 7),
)
def test_schedule_invariants_over_families(model_type, layers, pattern):
    cfg = {  # hand-made
        "model_type": model_type,
        "head_dim": 256 if model_type == "qwen3_5_text" else 32,  # its M-RoPE needs 32 pairs
        "qk_rope_head_dim": 16,
        "qk_nope_head_dim": 16,
        "num_hidden_layers": layers,
        "sliding_window": 128,
        "sliding_window_pattern": pattern,
        "no_rope_layer_interval": pattern,
        "full_attention_interval": pattern,
        "rope_theta": 5e5,
    }
    if model_type == "no_such_model":  # an unknown type reads generically only without markers
        marked = {k: cfg.pop(k) for k in list(cfg) if families.marker_of({k: cfg[k]})}
        with pytest.raises(ValueError, match="not in refimpl's family table"):
            rope_schedule({**cfg, **marked})
    sched = rope_schedule(cfg)
    assert [x.index for x in sched] == list(range(layers))
    groups = sched.groups()
    assert sorted(i for v in groups.values() for i in v) == list(range(layers))
    for key, indices in groups.items():
        assert all((sched[i].spec is None) == (key is None) for i in indices)
        assert all(key is None or sched[i].spec.key() == key for i in indices)
    for layer_type in {x.layer_type for x in sched if x.spec is not None}:
        same = {x.spec.key() for x in sched if x.layer_type == layer_type and x.spec is not None}
        if len(same) == 1:
            assert rope_from_config(cfg, layer_type=layer_type).key() in same
