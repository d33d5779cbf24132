"""The decoders that combine M-RoPE or a rope per layer type with a sparse-attention indexer
(HY V4 VL, Dots3 Note, MiniMax-M3 VL, Qwen4-Exp), the M-RoPE of the Omni talkers, and
interleaved M-RoPE sections that do not sum to the rotated pairs.

Every config here is hand-made (written for the test with the keys of transformers 5.24's
config classes, ``models/<name>/configuration_<name>.py``); the expected layouts are
transcriptions of the models' own code in ``models/<name>/modeling_<name>.py``, named in each
test. The parity with transformers itself is in tests/parity/ (test_model_families.py,
test_model_coverage.py).
"""

import numpy as np
import pytest

from refimpl.config import rope_schedule
from refimpl.multiaxis import mrope_axis_of_pair


def _thw_rows(section, pairs: int) -> np.ndarray:
    """The row of each pair in transformers' interleaved recomposition (Qwen3-VL's
    ``apply_interleaved_mrope``, HYV4VLRotaryEmbedding's ``recomposition_frequencies``): start
    from t, then ``freqs_t[..., slice(offset, 3 * section[dim], 3)] = freqs[dim]`` for h
    (offset 1) and w (offset 2), the slice cut at the last pair."""
    rows = np.zeros(pairs, dtype=np.int64)
    for dim, offset in ((1, 1), (2, 2)):
        rows[offset : 3 * section[dim] : 3] = dim
    return rows


# --------------------------------------------------------------------------- interleaved sections


@pytest.mark.parametrize(
    ("section", "pairs"),
    [((11, 11, 10), 128), ((24, 20, 20), 32), ((12, 10, 10), 32), ((1, 40, 2), 16), ((0, 0, 0), 8)],
)
def test_interleaved_sections_that_do_not_sum_are_read_as_transformers_lays_them_out(
    section, pairs
):
    cfg = {  # a Qwen3-VL text config whose sections do not sum to the pairs
        "model_type": "qwen3_vl_text",
        "head_dim": 2 * pairs,
        "num_hidden_layers": 1,
        "rope_parameters": {"rope_type": "default", "rope_theta": 5e5, "mrope_section": section},
    }
    spec = rope_schedule(cfg)[0].spec
    assert sum(spec.mrope_section) == pairs
    rows = mrope_axis_of_pair(spec.mrope_section, spec.mrope_layout)
    np.testing.assert_array_equal(rows, _thw_rows(section, pairs))
    if sum(section) != pairs:
        assert any("s_t is not read" in n for n in spec.notes)


def test_blocked_sections_must_still_sum_to_the_pairs():
    cfg = {  # Qwen2-VL splits its tables by the sections: a wrong sum cannot run
        "model_type": "qwen2_vl_text",
        "head_dim": 128,
        "num_hidden_layers": 1,
        "rope_parameters": {"rope_type": "default", "rope_theta": 1e6, "mrope_section": [8, 8, 8]},
    }
    with pytest.raises(ValueError, match=r"\[8, 8, 8\] must sum to the rotary pairs 64"):
        rope_schedule(cfg)


def test_omni_talkers_have_their_thinkers_m_rope():
    # Qwen2_5OmniRotaryEmbedding: blocked sections, default [16, 24, 24]
    talker = rope_schedule({"model_type": "qwen2_5_omni_talker", "num_hidden_layers": 2})
    spec = talker[0].spec
    assert (spec.mrope_layout, spec.mrope_section, spec.rotary_dim) == (
        "blocked",
        (16, 24, 24),
        128,
    )
    # Qwen3OmniMoeThinkerTextRotaryEmbedding: interleaved, default [24, 20, 20] over 32 pairs
    moe = rope_schedule(
        {
            "model_type": "qwen3_omni_moe_talker_text",
            "num_hidden_layers": 2,
            "shared_expert_intermediate_size": 768,  # its class has no such field
        }
    )
    spec = moe[0].spec
    assert (spec.mrope_layout, spec.rotary_dim) == ("interleaved", 64)
    np.testing.assert_array_equal(
        mrope_axis_of_pair(spec.mrope_section, "interleaved"), _thw_rows((24, 20, 20), 32)
    )


# --------------------------------------------------------------------------- HY V4 VL


def test_hy_v4_vl_rotates_adjacent_pairs_with_interleaved_sections_and_its_indexer():
    sched = rope_schedule({"model_type": "hy_v4_vl_text", "num_hidden_layers": 6})
    spec = sched[0].spec
    # HYV4VL's apply_rotary_pos_emb: rotate_half over x[0::2], x[1::2], same order out
    assert (spec.dim, spec.rotary_dim, spec.pairing, spec.output_order) == (
        64,
        64,
        "interleaved",
        "same",
    )
    assert (spec.mrope_layout, spec.mrope_section) == ("interleaved", (12, 10, 10))
    # HYV4VLTextConfig's indexer_types: full on layer 0 and every fourth from layer 1
    assert [x.index for x in sched if x.indexer is not None] == [0, 1, 5]
    ix = sched[0].indexer
    assert (ix.dim, ix.rotary_dim, ix.rotary_offset, ix.pairing, ix.output_order) == (
        128,
        64,
        64,
        "interleaved",
        "same",
    )
    assert ix.mrope_section == spec.mrope_section  # the attention's M-RoPE tables


def test_hy_v4_vl_wrapper_reads_its_text_config_with_yarn_softmax_scale():
    cfg = {
        "model_type": "hy_v4_vl",
        "text_config": {
            "num_hidden_layers": 3,
            "indexer_types": ["full", "shared", "full"],
            "rope_parameters": {
                "rope_type": "yarn",
                "rope_theta": 1e4,
                "factor": 4.0,
                "original_max_position_embeddings": 65536,
                "mscale_all_dim": 1.0,
                "mrope_section": [12, 10, 10],
            },
        },
    }
    sched = rope_schedule(cfg)
    assert sched.family == "hy_v4_vl"
    assert [x.indexer is not None for x in sched] == [True, False, True]
    # yarn_apply_mscale: softmax scale times (0.1 ln 4 + 1)**2
    assert sched[0].query_scaling.softmax_scale == pytest.approx((0.1 * np.log(4.0) + 1) ** 2)


# --------------------------------------------------------------------------- Dots3 Note


def test_dots3_class_defaults_rope_per_layer_type_and_indexer_on_indexed_layers():
    sched = rope_schedule({"model_type": "dots3_note_text", "num_hidden_layers": 10})
    # Dots3NoteTextConfig: indexed on layers 0, 1 and every fourth from 1, sliding elsewhere
    assert [x.layer_type[:3] for x in sched] == ["ind", "ind"] + ["sli"] * 3 + ["ind"] + [
        "sli"
    ] * 3 + ["ind"]
    full, swa = sched[0].spec, sched[2].spec
    assert (full.base, swa.base) == (8e7, 5e4)
    # apply_rotary_pos_emb_interleave: adjacent pairs in, half order out, on the 64-wide rope head
    for spec in (full, swa):
        assert (spec.rotary_dim, spec.pairing, spec.output_order) == (64, "interleaved", "half")
    assert [x.index for x in sched if x.indexer is not None] == [0, 1, 5, 9]
    ix = sched[0].indexer
    assert (ix.dim, ix.rotary_dim, ix.rotary_offset, ix.pairing, ix.output_order) == (
        128,
        64,
        0,
        "interleaved",
        "half",
    )


def test_dots3_legacy_swa_keys_give_the_sliding_layers_their_own_rope_head_and_base():
    cfg = {
        "model_type": "dots3_note_text",
        "num_hidden_layers": 4,
        "use_dsa": True,  # renames the file's full_attention layers to indexed_attention
        "layer_types": [
            "full_attention",
            "sliding_attention",
            "sliding_attention",
            "full_attention",
        ],
        "rope_theta": 8e7,
        "swa_rope_theta": 1e5,
        "swa_qk_nope_head_dim": 224,
        "swa_qk_rope_head_dim": 32,
    }
    sched = rope_schedule(cfg)
    assert [x.layer_type for x in sched] == [
        "indexed_attention",
        "sliding_attention",
        "sliding_attention",
        "indexed_attention",
    ]
    assert [(x.spec.rotary_dim, x.spec.base) for x in sched] == [
        (64, 8e7),
        (32, 1e5),
        (32, 1e5),
        (64, 8e7),
    ]
    assert [x.indexer is not None for x in sched] == [True, False, False, True]
    # without use_dsa a per_layer_config file keeps full_attention: MLA without an indexer
    plain = {k: v for k, v in cfg.items() if k != "use_dsa"} | {"per_layer_config": {}}
    assert all(x.indexer is None for x in rope_schedule(plain))


def test_dots3_flat_rope_fields_apply_to_every_type_and_swa_rope_theta_is_noted():
    cfg = {
        "model_type": "dots3_note_text",
        "num_hidden_layers": 3,
        "swa_rope_theta": 1e5,
        "rope_parameters": {"rope_type": "default", "rope_theta": 1e6},
    }
    sched = rope_schedule(cfg)
    assert {x.spec.base for x in sched} == {1e6}
    assert any("swa_rope_theta 100000.0 is not read" in n for n in sched.notes)


def test_dots3_refuses_a_layer_type_whose_layers_differ():
    cfg = {
        "model_type": "dots3_note_text",
        "num_hidden_layers": 4,
        "layer_types": ["indexed_attention"] + ["sliding_attention"] * 3,
        "per_layer_config": {"1": {"qk_rope_head_dim": 64}, "2": {"qk_rope_head_dim": 32}},
    }
    with pytest.raises(ValueError, match="'sliding_attention' is not homogeneous"):
        rope_schedule(cfg)


# --------------------------------------------------------------------------- MiniMax-M3 VL


def test_minimax_m3_rotates_head_dim_times_partial_and_its_sparse_layers_index():
    cfg = {
        "model_type": "minimax_m3_vl_text",
        "num_hidden_layers": 4,
        "rotary_dim": 64,
        "partial_rotary_factor": 0.5,
        "sparse_attention_config": {"sparse_attention_freq": [0, 1, 1, 0]},
    }
    sched = rope_schedule(cfg)
    assert [(x.spec.rotary_dim, x.spec.dim, x.spec.pairing) for x in sched] == [
        (64, 128, "half")
    ] * 4
    assert [x.layer_type for x in sched] == [
        "full_attention",
        "minimax_m3_sparse",
        "minimax_m3_sparse",
        "full_attention",
    ]
    ix = sched[1].indexer
    assert (ix.dim, ix.rotary_dim, ix.rotary_offset, ix.pairing) == (128, 64, 0, "half")
    assert sched[0].indexer is None


def test_minimax_m3_class_defaults_rotate_the_whole_head_and_note_rotary_dim():
    # MiniMaxM3VLTextConfig does not turn rotary_dim into partial_rotary_factor (MiniMax-M2's
    # config class does), and MiniMaxM3VLRotaryEmbedding reads only the latter
    sched = rope_schedule(
        {"model_type": "minimax_m3_vl_text", "num_hidden_layers": 2, "rotary_dim": 64}
    )
    assert sched[0].spec.rotary_dim == 128
    assert any("rotary_dim 64 is not read" in n for n in sched.notes)


def test_minimax_m3_sparse_index_dim_replaces_index_head_dim_and_bounds_the_rotation():
    cfg = {
        "model_type": "minimax_m3_vl_text",
        "num_hidden_layers": 1,
        "index_head_dim": 128,
        "sparse_attention_config": {"sparse_attention_freq": [1], "sparse_index_dim": 64},
    }
    # the whole 128-feature head rotates, the 64-wide index heads cannot
    with pytest.raises(ValueError, match="rotated width 128 exceeds index_head_dim=64"):
        rope_schedule(cfg)
    cfg["partial_rotary_factor"] = 0.5
    assert rope_schedule(cfg)[0].indexer.dim == 64


# --------------------------------------------------------------------------- Qwen4-Exp

QWEN4_INDEXER = {
    "indexer_n_heads": 4,
    "indexer_kv_heads": 1,
    "indexer_head_dim": 128,
    "indexer_budget": 2048,
    "indexer_compress_ratio": 4,
}


def test_qwen4_exp_class_defaults_are_refused_its_attention_cannot_be_built():
    with pytest.raises(ValueError, match="its attention cannot be built on this config") as err:
        rope_schedule({"model_type": "qwen4_exp_text", "num_hidden_layers": 4})
    assert "indexer_head_dim" in str(err.value) and "Qwen4ExpTextQSAIndexer" in str(err.value)
    # a model of linear-attention layers only builds no indexer: nothing to refuse
    only_linear = {
        "model_type": "qwen4_exp_text",
        "num_hidden_layers": 2,
        "layer_types": ["linear_attention"] * 2,
    }
    assert all(x.spec is None for x in rope_schedule(only_linear))


def test_qwen4_exp_indexed_layers_rotate_with_interleaved_sections_and_index():
    cfg = {
        "model_type": "qwen4_exp_text",
        "num_hidden_layers": 8,
        **QWEN4_INDEXER,
        "rope_parameters": {
            "rope_type": "default",
            "rope_theta": 1e7,
            "partial_rotary_factor": 0.25,
            "mrope_section": [11, 11, 10],
        },
    }
    sched = rope_schedule(cfg)
    assert [x.index for x in sched if x.spec is not None] == [3, 7]
    spec, ix = sched[3].spec, sched[3].indexer
    assert (spec.rotary_dim, spec.dim, spec.pairing) == (64, 256, "half")
    assert (spec.mrope_layout, spec.mrope_section) == ("interleaved", (11, 11, 10))
    assert (ix.dim, ix.rotary_dim, ix.rotary_offset, ix.pairing) == (128, 64, 0, "half")
    # the checkpoint's full_attention layers are Qwen4-Exp's indexed ones
    given = rope_schedule(
        {**cfg, "num_hidden_layers": 2, "layer_types": ["linear_attention", "full_attention"]}
    )
    assert [x.layer_type for x in given] == ["linear_attention", "indexed_attention"]


def test_qwen4_exp_default_sections_over_the_whole_head():
    # the rotary module's default [11, 11, 10] over 128 pairs: t keeps every pair h and w skip
    sched = rope_schedule(
        {
            "model_type": "qwen4_exp_text",
            "num_hidden_layers": 4,
            **QWEN4_INDEXER | {"indexer_head_dim": 256},
        }
    )
    spec = sched[3].spec
    assert spec.mrope_section == (107, 11, 10)
    np.testing.assert_array_equal(
        mrope_axis_of_pair(spec.mrope_section, "interleaved"), _thw_rows((11, 11, 10), 128)
    )
