"""GGUF files as an attacker or a broken converter writes them, read in process by every GGUF
reader: each is refused in one line naming the file and the key, tensor or rule, at once and in
bounded memory, or read exactly as llama.cpp reads it (its defaults and its refusals, from the
one table ``refimpl.gguf.LLAMACPP_KEYS``). The ``gguf`` package serves as the oracle for
well-formed files; the command line runs on the same files in ``test_hostile_cli_files.py``."""

from __future__ import annotations

import math
import pathlib
import tracemalloc

import numpy as np
import pytest
from hostile_files import (
    ARCH,
    BASE,
    CRAFTED_GGUF,
    FACTORS,
    GGML_F32,
    HEAD,
    VALID,
    f32,
    gguf_bytes,
    text,
    u32,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from refimpl import rope_from_config
from refimpl.gguf import (
    LLAMACPP_KEYS,
    compare_gguf,
    gguf_rope_metadata,
    gguf_schedule,
    llamacpp_rope_parameters,
    read_gguf_rope,
    rope_from_gguf,
)

# Python allocations a header read may make: a few key values and tensors, never a tokenizer.
READ_MEMORY_BOUND = 2 * 2**20


def _write(tmp_path, data: bytes, name="f.gguf"):
    path = tmp_path / name
    path.write_bytes(data)
    return path


def _refusal(fn, path) -> str:
    with pytest.raises(ValueError) as err:
        fn(path)
    msg = str(err.value)
    assert "\n" not in msg and str(path) in msg, msg
    return msg


@pytest.mark.parametrize("name", sorted(CRAFTED_GGUF))
def test_crafted_files_are_read_as_llamacpp_does_or_refused_by_name(tmp_path, name):
    build, words = CRAFTED_GGUF[name]
    path = _write(tmp_path, build())
    tracemalloc.start()
    try:
        if words is None:
            spec = rope_from_gguf(path)
            assert spec.rotary_dim == 64 and np.all(np.isfinite(spec.inv_freq))
        else:
            msg = _refusal(rope_from_gguf, path)
            for word in words:
                assert word in msg, (word, msg)
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    assert peak < READ_MEMORY_BOUND, f"{name}: {peak} bytes allocated reading the header"


def test_a_factor_without_a_type_is_linear_scaling_and_the_legacy_key_is_read(tmp_path):
    """llama.cpp: std::string rope_scaling("linear"); the factor falls back to the old
    rope.scale_linear key; a factor of 0 means none."""
    explicit = rope_from_gguf(
        _write(
            tmp_path,
            gguf_bytes(
                [
                    *VALID,
                    text("llama.rope.scaling.type", "linear"),
                    f32("llama.rope.scaling.factor", 4.0),
                ]
            ),
            "explicit.gguf",
        )
    )
    assert explicit.rope_type == "linear" and explicit.params == {"factor": 4.0}
    for name, key in (
        ("typeless", "llama.rope.scaling.factor"),
        ("legacy", "llama.rope.scale_linear"),
    ):
        got = rope_from_gguf(_write(tmp_path, gguf_bytes([*VALID, f32(key, 4.0)]), f"{name}.gguf"))
        np.testing.assert_array_equal(got.inv_freq, explicit.inv_freq)
    plain = rope_from_gguf(_write(tmp_path, gguf_bytes(VALID), "plain.gguf"))
    zero = rope_from_gguf(
        _write(tmp_path, gguf_bytes([*VALID, f32("llama.rope.scaling.factor", 0.0)]), "zero.gguf")
    )
    np.testing.assert_array_equal(zero.inv_freq, plain.inv_freq)
    np.testing.assert_array_equal(explicit.inv_freq, plain.inv_freq / 4.0)
    none = gguf_bytes(
        [*VALID, text("llama.rope.scaling.type", "none"), f32("llama.rope.scaling.factor", 4.0)]
    )
    np.testing.assert_array_equal(
        rope_from_gguf(_write(tmp_path, none, "none.gguf")).inv_freq, plain.inv_freq
    )


def test_every_reader_refuses_the_hostile_files(tmp_path):
    """read_gguf_rope, rope_from_gguf, gguf_schedule and compare_gguf share the reader and
    the table: a key refused by one is refused by all, with the same key named."""
    cfg = {
        "model_type": "llama",
        "hidden_size": 64,
        "num_attention_heads": 1,
        "num_hidden_layers": 2,
    }
    for name in ("infinite scaling factor", "block_count 2**32-1", "unknown scaling type"):
        path = _write(tmp_path, CRAFTED_GGUF[name][0](), "x.gguf")
        key = CRAFTED_GGUF[name][1][0]
        for fn in (read_gguf_rope, rope_from_gguf, gguf_schedule, lambda p: compare_gguf(p, cfg)):
            assert key in _refusal(fn, path)


def test_schedule_layer_counts_follow_llamacpp(tmp_path):
    ok = gguf_schedule(_write(tmp_path, gguf_bytes([*VALID, u32("llama.block_count", 512)])))
    assert len(ok) == 512
    msg = _refusal(gguf_schedule, _write(tmp_path, gguf_bytes(VALID), "nolayers.gguf"))
    assert "llama.block_count" in msg and "refuses" in msg
    msg = _refusal(
        gguf_schedule,
        _write(tmp_path, gguf_bytes([*VALID, u32("llama.block_count", 513)]), "b.gguf"),
    )
    assert "513" in msg and "LLAMA_MAX_LAYERS" in msg


def test_per_layer_lists_must_have_one_entry_per_block(tmp_path):
    from hostile_files import BOOL, array

    kvs = [
        text("general.architecture", "gemma3"),
        u32("gemma3.attention.key_length", 64),
        f32("gemma3.rope.freq_base", 1e6),
        f32("gemma3.rope.freq_base_swa", 1e4),
        u32("gemma3.block_count", 4),
        array("gemma3.attention.sliding_window_pattern", BOOL, [1, 1, 0], "<B"),
    ]
    msg = _refusal(gguf_schedule, _write(tmp_path, gguf_bytes(kvs)))
    assert "sliding_window_pattern has 3 entries" in msg and "block_count 4" in msg
    kvs[-1] = array("gemma3.attention.sliding_window_pattern", BOOL, [1, 1, 1, 0], "<B")
    sched = gguf_schedule(_write(tmp_path, gguf_bytes(kvs), "ok.gguf"))
    assert [layer.spec.base for layer in sched] == [1e4, 1e4, 1e4, 1e6]


def test_the_tokenizer_is_skipped_and_the_keys_after_it_match_the_gguf_oracle(tmp_path):
    gguf = pytest.importorskip("gguf", reason="the gguf package (test oracle) is not installed")
    from hostile_files import tokenizer_file

    path = _write(tmp_path, tokenizer_file(5_000))  # the oracle parses every token: keep it short
    tracemalloc.start()
    rope = read_gguf_rope(path)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < READ_MEMORY_BOUND  # the oracle below allocates hundreds of MB for the same
    reader = gguf.GGUFReader(str(path))
    for key, value in rope.keys.items():
        assert reader.fields[key].contents() == value, key
    assert len(reader.fields["tokenizer.ggml.tokens"].contents()) == 5_000
    tensor = next(t for t in reader.tensors if t.name == "rope_freqs.weight")
    np.testing.assert_array_equal(rope.tensors["rope_freqs.weight"], np.asarray(tensor.data))
    assert set(rope.keys) == {k for k in reader.fields if k.split(".", 1)[1] in LLAMACPP_KEYS}


def test_strings_longer_than_a_read_block_are_skipped(tmp_path):
    from hostile_files import strings

    long = ["x" * 70_000, "", "y" * 200_000, "z"]
    path = _write(tmp_path, gguf_bytes([ARCH, strings("tokenizer.ggml.tokens", long), HEAD, BASE]))
    assert rope_from_gguf(path).base == 10000.0


@settings(max_examples=40)
@given(st.data())
def test_damaged_files_never_crash_hang_or_allocate(tmp_path_factory, data):
    """A valid file cut anywhere or with bytes overwritten anywhere is read or refused with a
    ValueError naming the file; the reader never raises anything else."""
    kvs = [
        ARCH,
        HEAD,
        BASE,
        text("llama.rope.scaling.type", "yarn"),
        f32("llama.rope.scaling.factor", 4.0),
    ]
    kvs.append(u32("llama.rope.scaling.original_context_length", 4096))
    good = bytearray(
        gguf_bytes(kvs, [("rope_freqs.weight", (32,), GGML_F32, 0)], FACTORS.tobytes())
    )
    if data.draw(st.booleans(), label="cut"):
        good = good[: data.draw(st.integers(0, len(good) - 1), label="length")]
    else:
        for _ in range(data.draw(st.integers(1, 4), label="bytes changed")):
            at = data.draw(st.integers(0, len(good) - 1), label="at")
            good[at] = data.draw(st.integers(0, 255), label="byte")
    path = tmp_path_factory.mktemp("fuzz") / "f.gguf"
    path.write_bytes(bytes(good))
    tracemalloc.start()
    try:
        rope_from_gguf(path)
    except ValueError as exc:
        assert str(path) in str(exc) and "\n" not in str(exc)
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    assert peak < READ_MEMORY_BOUND


# ---------------------------------------------------------------- defaults before comparing
def _converted(tmp_path, cfg, *, drop=(), extra=None, name="m.gguf"):
    """The keys and tensors refimpl's converter mapping writes, through the gguf writer."""
    gguf = pytest.importorskip("gguf", reason="the gguf package is not installed")
    meta = gguf_rope_metadata(cfg)
    spec = rope_from_config(cfg)
    w = gguf.GGUFWriter(str(tmp_path / name), meta["arch"])
    keys = {**meta["keys"], f"{meta['arch']}.attention.key_length": spec.dim, **(extra or {})}
    for key, value in keys.items():
        if key.split(".", 1)[1] in drop:
            continue
        if isinstance(value, str):
            w.add_string(key, value)
        elif isinstance(value, int):
            w.add_uint32(key, value)
        elif isinstance(value, float):
            w.add_float32(key, value)
        else:
            w.add_array(key, list(value))
    for tname, arr in meta["tensors"].items():
        w.add_tensor(tname, np.asarray(arr, np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return tmp_path / name


# Hand-made configs in the shape of a transformers config.json.
def _yarn(**extra):
    scaling = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 4096}
    return {
        "model_type": "qwen2",
        "hidden_size": 512,
        "num_attention_heads": 4,
        "max_position_embeddings": 16384,
        "rope_theta": 1e6,
        "rope_scaling": {**scaling, **extra},
    }


def test_yarn_betas_at_llamacpps_defaults_are_no_divergence(tmp_path):
    """The converter writes yarn_beta_fast/slow only when the config has them; llama.cpp then
    uses 32 and 1 (llama-hparams.h), so a config stating 32 and 1 agrees with a file that
    lacks both."""
    for cfg in (_yarn(), _yarn(beta_fast=32.0, beta_slow=1.0)):
        path = _converted(
            tmp_path, cfg, drop=("rope.scaling.yarn_beta_fast", "rope.scaling.yarn_beta_slow")
        )
        assert compare_gguf(path, cfg) == []
        assert llamacpp_rope_parameters(read_gguf_rope(path))["beta_fast"] == 32.0
    cfg = _yarn(beta_fast=16.0, beta_slow=1.0)
    found = compare_gguf(_converted(tmp_path, cfg, drop=("rope.scaling.yarn_beta_fast",)), cfg)
    assert any(
        "lacks rope.scaling.yarn_beta_fast: llama.cpp uses 32.0" in s and "16.0" in s for s in found
    ), found
    assert compare_gguf(_converted(tmp_path, cfg, name="full.gguf"), cfg) == []


def test_absent_widths_take_the_head_width_as_llamacpp_does(tmp_path):
    full = {"model_type": "qwen2", "hidden_size": 256, "num_attention_heads": 4}
    assert compare_gguf(_converted(tmp_path, full, drop=("rope.dimension_count",)), full) == []
    partial = {**full, "model_type": "stablelm", "partial_rotary_factor": 0.5}
    found = compare_gguf(
        _converted(tmp_path, partial, drop=("rope.dimension_count",), name="p.gguf"), partial
    )
    assert any("lacks rope.dimension_count: llama.cpp uses 64 in its place" in s for s in found), (
        found
    )


def test_a_scaling_factor_without_a_type_is_reported_against_an_unscaled_config(tmp_path):
    cfg = {"model_type": "qwen2", "hidden_size": 256, "num_attention_heads": 4}
    path = _converted(tmp_path, cfg, extra={"qwen2.rope.scaling.factor": 4.0})
    found = compare_gguf(path, cfg)
    assert any("without rope.scaling.type: llama.cpp reads it as linear" in s for s in found), found
    assert any("frequencies differ" in s for s in found), found


def test_every_default_in_the_table_names_its_source():
    for suffix, entry in LLAMACPP_KEYS.items():
        assert entry.source and entry.types, suffix
        assert all(t in _GGUF_NAMES for t in entry.types), (suffix, entry.types)
        if isinstance(entry.default, float):
            assert math.isfinite(entry.default)


_GGUF_NAMES = {
    "uint32",
    "float32",
    "string",
    "bool",
    "array<int32>",
    "array<uint32>",
    "array<bool>",
}


def test_ntk_alpha_scales_the_base_only_where_llamacpp_applies_it(tmp_path):
    """rope.scaling.alpha is read for every architecture but applied to the base only by
    HunYuan's loader (base * alpha^(d/(d-2)), d the head width); the converted HunYuan config
    then reads back as its own NTK-alpha rope."""
    cfg = pathlib.Path(__file__).parent / "parity" / "configs" / "hunyuan-v1-dense.handmade.json"
    path = _converted(tmp_path, cfg)
    assert compare_gguf(path, cfg) == []
    np.testing.assert_allclose(
        rope_from_gguf(path).inv_freq, rope_from_config(cfg).inv_freq, rtol=1e-12
    )
    plain = rope_from_gguf(_write(tmp_path, gguf_bytes(VALID), "plain.gguf"))
    llama = rope_from_gguf(
        _write(tmp_path, gguf_bytes([*VALID, f32("llama.rope.scaling.alpha", 1000.0)]), "l.gguf")
    )
    np.testing.assert_array_equal(llama.inv_freq, plain.inv_freq)
