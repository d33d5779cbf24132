"""GGUF rope metadata (refimpl.gguf): files written with the gguf package's writer from real
configs, the converter's mapping both ways, injected divergences, and bad files."""

import pathlib

import numpy as np
import pytest

from refimpl.config import rope_from_config
from refimpl.engines import ggml_cos_sin
from refimpl.gguf import (
    compare_gguf,
    gguf_rope_metadata,
    llamacpp_rope_parameters,
    read_gguf_rope,
    rope_from_gguf,
)

gguf = pytest.importorskip("gguf", reason="the gguf package (engines extra) is not installed")

HERE = pathlib.Path(__file__).parent
PARITY = HERE / "parity" / "configs"
LLAMA32 = HERE / "engines" / "configs" / "llama-3.2-1b-instruct.json"
# released configs (sources in the folders' SOURCES.md; the Kimi file is an excerpt and the
# Maverick one an engine's reduced fixture, both labelled there) and what llama.cpp changes
REAL = {
    "llama-3.2-1b": (LLAMA32, set()),
    "smollm3-3b": (PARITY / "smollm3-3b.json", set()),
    "gemma2-2b": (PARITY / "gemma2-2b.json", set()),
    "gemma3-1b-it": (PARITY / "gemma3-1b-it.json", set()),
    "aya-23-8b": (PARITY / "aya-23-8b.json", set()),
    "exaone4-1.2b": (PARITY / "exaone4-1.2b.json", set()),
    "deepseek-v2-lite": (PARITY / "deepseek-v2-lite.json", set()),
    "gpt-oss-20b": (PARITY / "gpt-oss-20b.json", {"truncate", "frequencies"}),
    "gemma2-9b": (PARITY / "gemma2-9b.json", set()),
    "gemma3-12b-it": (PARITY / "gemma3-12b-it.json", set()),  # linear x8 on global layers
    "kimi-k2-0905": (PARITY / "kimi-k2-instruct-0905.excerpt.json", set()),  # equal betas
    "llama4-maverick": (PARITY / "llama4-maverick-17b-128e.reduced.json", set()),
}


def write_gguf(path, meta, *, head_dim, drop=(), replace=None, tensors=None, arch=None):
    """A GGUF file holding ``meta``'s keys and tensors (with edits), no weights."""
    arch = arch or meta["arch"]
    w = gguf.GGUFWriter(str(path), arch)
    keys = {k.replace(meta["arch"] + ".", arch + ".", 1): v for k, v in meta["keys"].items()}
    keys.update(replace or {})
    keys[f"{arch}.attention.key_length"] = head_dim
    for key, value in keys.items():
        if key.split(".", 1)[1] in drop:
            continue
        if isinstance(value, bool):
            w.add_bool(key, value)
        elif isinstance(value, int):
            w.add_uint32(key, value)
        elif isinstance(value, float):
            w.add_float32(key, value)
        elif isinstance(value, str):
            w.add_string(key, value)
        else:
            w.add_array(key, list(value))
    for name, arr in (meta["tensors"] if tensors is None else tensors).items():
        w.add_tensor(name, np.asarray(arr, np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def _spec(cfg):
    try:
        return rope_from_config(cfg)
    except ValueError:
        return rope_from_config(cfg, layer_type="full_attention")


@pytest.mark.parametrize("name", sorted(REAL))
def test_converted_config_reads_back_as_its_own_rope(tmp_path, name):
    cfg, expected_kinds = REAL[name]
    spec = _spec(cfg)
    meta = gguf_rope_metadata(cfg)
    path = write_gguf(tmp_path / "m.gguf", meta, head_dim=spec.dim)
    found = compare_gguf(path, cfg)
    kinds = {"truncate" if "truncate" in s else "frequencies" for s in found}
    assert kinds == expected_kinds, found
    g = rope_from_gguf(path)
    assert g.rotary_dim == spec.rotary_dim and g.base == spec.base
    if not expected_kinds:
        np.testing.assert_allclose(g.inv_freq, spec.inv_freq, rtol=2e-7)
        assert abs(g.attention_scaling - spec.attention_scaling) < 1e-6


def test_llama_family_pairing_is_the_converters_permutation_not_a_divergence(tmp_path):
    meta = gguf_rope_metadata(LLAMA32)
    path = write_gguf(tmp_path / "m.gguf", meta, head_dim=64)
    assert rope_from_gguf(path).pairing == "interleaved"  # NORM on permuted q/k rows
    assert rope_from_config(LLAMA32).pairing == "half"
    assert compare_gguf(path, LLAMA32) == []


def test_llama3_scaling_is_a_rope_freqs_tensor():
    meta = gguf_rope_metadata(LLAMA32)
    f = meta["tensors"]["rope_freqs.weight"]
    spec = rope_from_config(LLAMA32)
    theta = 500000.0 ** (-np.arange(0, 64, 2) / 64)
    np.testing.assert_allclose(theta / f, spec.inv_freq, rtol=1e-6)
    assert f[0] == 1.0 and f[-1] == 32.0


@pytest.mark.parametrize(
    ("edit", "word"),
    [
        ({"tensors": {}}, "rope_freqs"),
        ({"replace": {"llama.rope.freq_base": 10000.0}}, "freq_base"),
        (
            {"replace": {"llama.rope.scaling.type": "linear", "llama.rope.scaling.factor": 32.0}},
            "scaling",
        ),
        ({"arch": "qwen2"}, "architecture"),
    ],
)
def test_injected_divergences_are_found(tmp_path, edit, word):
    meta = gguf_rope_metadata(LLAMA32)
    path = write_gguf(tmp_path / "m.gguf", meta, head_dim=64, **edit)
    found = compare_gguf(path, LLAMA32)
    assert any(word in s for s in found), found


def test_lost_yarn_scaling_and_wrong_rope_type_are_found(tmp_path):
    cfg = PARITY / "deepseek-v2-lite.json"
    spec = rope_from_config(cfg)
    meta = gguf_rope_metadata(cfg)
    lost = write_gguf(
        tmp_path / "lost.gguf",
        meta,
        head_dim=spec.dim,
        drop=("rope.scaling.type", "rope.scaling.factor", "rope.scaling.original_context_length"),
    )
    found = compare_gguf(lost, cfg)
    assert any("rope.scaling.type" in s for s in found)
    assert any("frequencies differ" in s for s in found)
    aya = PARITY / "aya-23-8b.json"
    neox = write_gguf(tmp_path / "aya.gguf", gguf_rope_metadata(aya), head_dim=128, arch="qwen2")
    assert any("NEOX" in s for s in compare_gguf(neox, aya))


def test_gpt_oss_truncate_false_is_reported_and_ggml_tables_follow_the_gguf(tmp_path):
    cfg = PARITY / "gpt-oss-20b.json"
    meta = gguf_rope_metadata(cfg)
    path = write_gguf(tmp_path / "m.gguf", meta, head_dim=64)
    found = compare_gguf(path, cfg)
    assert any("truncate: false" in s for s in found)
    args = llamacpp_rope_parameters(read_gguf_rope(path))
    c, _ = ggml_cos_sin(np.arange(0, 4096, 17), **args)
    g = rope_from_gguf(path)
    ce, _ = g.cos_sin(np.arange(0, 4096, 17))
    assert np.abs(c - ce).max() < 1e-3  # float32 angles against the exact spec
    assert abs(float(c[0, 0]) - g.attention_scaling) < 1e-6


def test_sliding_layers_use_the_swa_base(tmp_path):
    cfg = PARITY / "gemma3-1b-it.json"
    meta = gguf_rope_metadata(cfg)
    assert meta["keys"]["gemma3.rope.freq_base_swa"] == 10000.0
    path = write_gguf(tmp_path / "m.gguf", meta, head_dim=256)
    local = rope_from_gguf(path, layer_type="sliding_attention")
    want = rope_from_config(cfg, layer_type="sliding_attention")
    assert local.base == want.base == 10000.0
    np.testing.assert_allclose(local.inv_freq, want.inv_freq, rtol=1e-12)


@pytest.mark.parametrize(
    ("content", "word"),
    [(b"", "not a GGUF"), (b"GGML" + b"\0" * 40, "not a GGUF"), (b"GGUF\x03\0\0\0\x01", "damaged")],
)
def test_bad_files_give_one_clear_error(tmp_path, content, word):
    p = tmp_path / "bad.gguf"
    p.write_bytes(content)
    with pytest.raises(ValueError, match=word) as err:
        read_gguf_rope(p)
    assert str(p) in str(err.value) and "\n" not in str(err.value)


def test_truncated_real_file_and_missing_file(tmp_path):
    meta = gguf_rope_metadata(LLAMA32)
    good = write_gguf(tmp_path / "m.gguf", meta, head_dim=64)
    data = good.read_bytes()
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(data[: len(data) // 3])
    with pytest.raises(ValueError, match="damaged or truncated"):
        read_gguf_rope(cut)
    with pytest.raises(ValueError, match="no such GGUF file"):
        read_gguf_rope(tmp_path / "absent.gguf")


def test_unknown_model_type_is_named():
    with pytest.raises(ValueError, match="model_type 'gptj'"):
        gguf_rope_metadata(PARITY / "gpt-j-6b.json")


def _cli(*args, cwd):
    import subprocess
    import sys

    return subprocess.run(
        [sys.executable, "-m", "refimpl", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
    )


def test_describe_and_golden_read_gguf_files(tmp_path):
    cfg = PARITY / "gemma3-1b-it.json"
    meta = gguf_rope_metadata(cfg)
    meta["keys"]["gemma3.block_count"] = 26
    meta["keys"]["gemma3.attention.sliding_window_pattern"] = 6
    path = write_gguf(tmp_path / "g.gguf", meta, head_dim=256)
    r = _cli("describe", path, "--no-pairs", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "layers            26" in r.stdout and "sliding_attention" in r.stdout
    assert "base 10000" in r.stdout and "base 1e+06" in r.stdout
    out = tmp_path / "g.npz"
    r = _cli("golden", path, "--positions", 64, "--out", out, "--quiet", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    tables = np.load(out)
    want = rope_from_config(cfg, layer_type="sliding_attention").cos_sin(np.arange(64))[0]
    cos_members = [k for k in tables.files if k.startswith("cos")]
    assert len(cos_members) == 2
    assert any(np.allclose(tables[k], want) for k in cos_members)


def test_cli_refuses_a_damaged_gguf_in_one_line(tmp_path):
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"GGUF\x03\0\0\0\x01")
    r = _cli("describe", bad, cwd=tmp_path)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "damaged" in r.stderr


def test_llama4_schedule_has_every_fourth_layer_without_rope(tmp_path):
    meta = gguf_rope_metadata(LLAMA32)
    meta = {
        "arch": "llama4",
        "keys": {k.replace("llama.", "llama4.", 1): v for k, v in meta["keys"].items()},
        "tensors": {},
    }
    meta["keys"]["llama4.block_count"] = 8
    path = write_gguf(tmp_path / "l4.gguf", meta, head_dim=64)
    from refimpl.gguf import gguf_schedule

    sched = gguf_schedule(path)
    assert [layer.spec is None for layer in sched] == [False, False, False, True] * 2


@pytest.mark.parametrize("bad", [None, 3, b"x.gguf"])
def test_paths_of_the_wrong_type_are_named(bad):
    with pytest.raises(TypeError, match="path must be"):
        read_gguf_rope(bad)
    with pytest.raises(TypeError, match="path must be"):
        rope_from_gguf(bad)


# ------------------------------------------------------------------------------- M-RoPE files
# Hand-made M-RoPE text configs (no released Qwen-VL or GLM-4.xV config.json was found in a
# public mirror; their rope fields and sources are in tests/parity/configs/SOURCES.md).
QWEN25VL = PARITY / "qwen2.5-vl-text.handmade.json"
QWEN3VL = PARITY / "qwen3-vl-text.handmade.json"
GLM4V = PARITY / "glm4v-text.handmade.json"


@pytest.mark.parametrize(
    ("cfg", "arch", "sections", "layout"),
    [
        (QWEN25VL, "qwen2vl", [16, 24, 24, 0], "blocked"),  # llama.cpp MROPE
        (GLM4V, "glm4", [8, 12, 12, 0], "blocked"),  # MROPE, q/k permuted to NEOX order
        (QWEN3VL, "qwen3vl", [24, 20, 20, 0], "imrope"),  # llama.cpp IMROPE
    ],
)
def test_mrope_sections_are_written_and_read_back(tmp_path, cfg, arch, sections, layout):
    spec = rope_from_config(cfg)
    meta = gguf_rope_metadata(cfg)
    assert meta["arch"] == arch
    assert meta["keys"][f"{arch}.rope.dimension_sections"] == sections  # padded to four
    path = write_gguf(tmp_path / "m.gguf", meta, head_dim=spec.dim)
    g = rope_from_gguf(path)
    assert g.mrope_section == tuple(sections[:3]) == spec.mrope_section
    assert g.mrope_layout == layout and g.pairing == "half"  # NEOX order in the file
    np.testing.assert_allclose(g.inv_freq, spec.inv_freq, rtol=2e-7)
    found = compare_gguf(path, cfg)
    if layout == spec.mrope_layout:  # same layout, and GLM's pairing is the converter's
        assert found == [], found
    else:
        assert len(found) == 1 and "pairs 61 (e, not t), 62 (e, not t)" in found[0], found


def test_imrope_leaves_two_pairs_of_text_tokens_unrotated(tmp_path):
    """ggml's IMROPE rule on Qwen3-VL's sections: pairs 61 and 62 follow the extra row, which
    llama.cpp fills with 0 for text; transformers' interleaved layout gives them t."""
    spec = rope_from_config(QWEN3VL)
    g = rope_from_gguf(write_gguf(tmp_path / "m.gguf", gguf_rope_metadata(QWEN3VL), head_dim=128))
    assert any("pairs [61, 62]" in n for n in g.notes)
    p = np.arange(0, 128000, 997)  # up to the config's context (low pairs turn slowly)
    text = np.stack([p, p, p, np.zeros_like(p)])  # llama.cpp's 4-D positions of text tokens
    c, s = g.mrope_cos_sin(text)
    c0, s0 = spec.cos_sin(p)
    np.testing.assert_array_equal(c[:, [61, 62]], 1.0)
    np.testing.assert_array_equal(s[:, [61, 62]], 0.0)
    keep = np.setdiff1d(np.arange(64), [61, 62])
    np.testing.assert_allclose(c[:, keep], c0[:, keep], atol=1e-12)
    np.testing.assert_allclose(s[:, keep], s0[:, keep], atol=1e-12)
    assert np.abs(c0[:, [61, 62]] - 1.0).max() > 0.05  # transformers does rotate them


@pytest.mark.parametrize(
    ("cfg", "edit", "word"),
    [
        (GLM4V, {"drop": ("rope.dimension_sections",)}, "1-D RoPE (NORM)"),
        (QWEN25VL, {"drop": ("rope.dimension_sections",)}, "refuses to load"),
        (
            QWEN25VL,
            {"replace": {"qwen2vl.rope.dimension_sections": [24, 20, 20, 0]}},
            "dimension_sections is [24, 20, 20, 0] in the GGUF",
        ),
        (QWEN25VL, {"arch": "qwen3vl"}, "IMROPE (imrope layout) drives pairs"),
        (QWEN25VL, {"arch": "qwen2"}, "ignores the file's rope.dimension_sections"),
        (QWEN3VL, {"arch": "qwen2vl"}, "MROPE (blocked layout) drives pairs"),
    ],
)
def test_injected_mrope_divergences_are_found(tmp_path, cfg, edit, word):
    meta = gguf_rope_metadata(cfg)
    path = write_gguf(tmp_path / "m.gguf", meta, head_dim=rope_from_config(cfg).dim, **edit)
    found = compare_gguf(path, cfg)
    assert any(word in s for s in found), found


def test_mrope_gguf_without_sections_for_a_1d_config_is_named(tmp_path):
    meta = gguf_rope_metadata(LLAMA32)
    meta["keys"]["llama.rope.dimension_sections"] = [16, 8, 8, 0]
    path = write_gguf(tmp_path / "m.gguf", meta, head_dim=64, arch="qwen2vl")
    found = compare_gguf(path, LLAMA32)
    assert any("the config has no mrope_section" in s for s in found), found


@pytest.mark.parametrize(
    ("sections", "word"),
    [
        ([16, 24, 24], "must be 4 non-negative integers"),
        ([16, 24, -1, 0], "must be 4 non-negative integers"),
        ([16, 24, 16, 8], "extra position row"),
        ([16, 16, 16, 0], "cover 48 pairs"),
    ],
)
def test_bad_dimension_sections_give_one_clear_error(tmp_path, sections, word):
    meta = gguf_rope_metadata(QWEN25VL)
    meta["keys"]["qwen2vl.rope.dimension_sections"] = sections
    path = write_gguf(tmp_path / "m.gguf", meta, head_dim=128)
    with pytest.raises(ValueError, match=word) as err:
        rope_from_gguf(path)
    assert str(path) in str(err.value) and "\n" not in str(err.value)


def test_describe_and_golden_read_mrope_gguf_files(tmp_path):
    meta = gguf_rope_metadata(QWEN3VL)
    meta["keys"]["qwen3vl.block_count"] = 4
    path = write_gguf(tmp_path / "q.gguf", meta, head_dim=128)
    r = _cli("describe", path, "--no-pairs", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "imrope" in r.stdout and "[24, 20, 20]" in r.stdout
    out = tmp_path / "q.npz"
    r = _cli("golden", path, "--positions", 32, "--out", out, "--quiet", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    tables = np.load(out)
    want = rope_from_config(QWEN3VL).cos_sin(np.arange(32))[0]
    keep = np.setdiff1d(np.arange(64), [61, 62])  # the pairs both layouts give t
    cos = [tables[k] for k in tables.files if k.startswith("cos")]
    assert any(np.allclose(c[:, keep], want[:, keep]) for c in cos)


def _ggml_rope_multi(rows, n_dims, sections, mode, base):
    """cos and sin of ggml's own ``ggml_rope_multi`` (CPU kernel of ggml-python), read from
    inputs whose first half (NEOX order) is 1 and second half 0."""
    import ctypes

    ggml = pytest.importorskip("ggml", reason="ggml-python not installed (make test-engines)")
    from ggml import utils as ggml_utils

    ctx = ggml.ggml_init(ggml.ggml_init_params(mem_size=64 * 2**20, mem_buffer=None))
    try:
        seq = rows.shape[1]
        x = np.zeros((seq, 1, n_dims), np.float32)
        x[..., : n_dims // 2] = 1.0
        a = ggml_utils.from_numpy(x, ctx)
        b = ggml_utils.from_numpy(np.ascontiguousarray(rows, np.int32).reshape(-1), ctx)
        sec = (ctypes.c_int * 4)(*sections)
        y = ggml.ggml_rope_multi(
            ctx, a, b, None, n_dims, sec, mode, 0, base, 1.0, 0.0, 1.0, 32.0, 1.0
        )
        graph = ggml.ggml_new_graph(ctx)
        ggml.ggml_build_forward_expand(graph, y)
        ggml.ggml_graph_compute_with_ctx(ctx, graph, 1)
        out = ggml_utils.to_numpy(y).copy()
    finally:
        ggml.ggml_free(ctx)
    return out[:, 0, : n_dims // 2], out[:, 0, n_dims // 2 :]


@pytest.mark.engines
@pytest.mark.parametrize(("cfg", "mode"), [(QWEN25VL, 8), (QWEN3VL, 40)])  # MROPE, IMROPE
def test_mrope_layouts_match_ggml_rope_multi(tmp_path, cfg, mode):
    """The layout read from the file against ggml's kernel, on text tokens (rows t = h = w,
    extra row 0, as llama.cpp passes them) and on distinct t/h/w rows."""
    meta = gguf_rope_metadata(cfg)
    g = rope_from_gguf(write_gguf(tmp_path / "m.gguf", meta, head_dim=128))
    sections = meta["keys"][f"{meta['arch']}.rope.dimension_sections"]
    p = np.arange(0, 4096, 13)
    rng = np.random.default_rng(0)
    for rows in (
        np.stack([p, p, p, 0 * p]),
        np.stack([p, *rng.integers(0, 64, (2, p.size)), 0 * p]),
    ):
        c_live, s_live = _ggml_rope_multi(rows, 128, sections, mode, g.base)
        c, s = g.mrope_cos_sin(rows if g.mrope_layout == "imrope" else rows[:3])
        # float32 angles of ggml's repeated products against exact ones: |p| * 64 * 2**-24
        tol = 4096 * 64 * 2.0**-24
        assert np.abs(c - c_live).max() < tol and np.abs(s - s_live).max() < tol
    if mode == 40:  # IMROPE: text tokens leave pairs 61 and 62 unrotated in ggml itself
        text = np.stack([p, p, p, 0 * p])
        c_live, s_live = _ggml_rope_multi(text, 128, sections, mode, g.base)
        np.testing.assert_array_equal(c_live[:, [61, 62]], 1.0)
        np.testing.assert_array_equal(s_live[:, [61, 62]], 0.0)
        # and the spec read from the file gives text positions the same tables
        c, s = g.cos_sin(p)
        tol = 4096 * 64 * 2.0**-24
        assert np.abs(c - c_live).max() < tol and np.abs(s - s_live).max() < tol


def test_qwen3_next_linear_attention_layers_have_no_rope(tmp_path):
    """llama.cpp's recurrent layers: the interval the converter writes, or an explicit list."""
    from refimpl.config import rope_schedule
    from refimpl.gguf import gguf_schedule

    cfg = PARITY / "qwen3-next.transformers-defaults.json"  # class defaults (labelled)
    meta = gguf_rope_metadata(cfg)
    assert meta["keys"]["qwen3next.full_attention_interval"] == 4
    meta["keys"]["qwen3next.block_count"] = 8
    path = write_gguf(tmp_path / "n.gguf", meta, head_dim=rope_from_config(cfg).dim)
    got = [(layer.layer_type, layer.spec is None) for layer in gguf_schedule(path)]
    want = [(layer.layer_type, layer.spec is None) for layer in rope_schedule(cfg)][:8]
    assert got == want == ([("linear_attention", True)] * 3 + [("full_attention", False)]) * 2
    explicit = [True, False] * 4  # attention.recurrent_layers wins over the interval
    meta["keys"]["qwen3next.attention.recurrent_layers"] = explicit
    path = write_gguf(tmp_path / "e.gguf", meta, head_dim=rope_from_config(cfg).dim)
    assert [layer.spec is None for layer in gguf_schedule(path)] == explicit
