"""check_rope on third-party RoPE implementations: transformers' model families (rotary module
built from a config, no weights), torchtune, litgpt, x-transformers, MLX and mlx-lm -- blind
and with the truth as ``expected``, asserting every field of the report the truth determines.

Pins (installed with ``pip install --no-deps`` so that torch, transformers and numpy stay as
they are): torchtune 0.6.1, litgpt 0.5.13 (+ lightning 2.6.6, lightning-utilities 0.15.3,
torchmetrics 1.9.0), x-transformers 2.31.10 (+ einx 0.4.3, loguru 0.7.3), mlx 0.32.4 with
mlx-cpu 0.32.4, mlx-lm 0.32.2. torchtune's package ``__init__`` needs torchao (0.13/0.14 import
with torch 2.13) and ``datasets`` (a large stack this project does not install), so its
position-embedding module files are loaded by path: the code run is torchtune's own.

Truth: the float64 frequencies of refimpl.scaling for the model's published parameters (the
configs of tests/parity/configs, see SOURCES.md there), as a duck-typed spec. transformers
computes its angles in float32, so the precision class of those peers is float32.
"""

import importlib
import importlib.util
import json
import math
import pathlib
import types

import numpy as np
import pytest

from refimpl.check import check_rope
from refimpl.scaling import ROPE_SCALINGS

torch = pytest.importorskip("torch", reason="torch not installed (make venv-torch)")
CONFIGS = pathlib.Path(__file__).parent / "configs"


def _config(name):
    return json.loads((CONFIGS / name).read_text())


def _truth(
    dim,
    base,
    inv_freq,
    *,
    pairing="half",
    rotary_dim=None,
    attention_scaling=1.0,
    rope_type="default",
    params=None,
    output_order=None,
):
    return types.SimpleNamespace(
        dim=dim,
        rotary_dim=rotary_dim or dim,
        base=base,
        inv_freq=np.asarray(inv_freq),
        pairing=pairing,
        attention_scaling=attention_scaling,
        rope_type=rope_type,
        params=params or {},
        output_order=output_order,
    )


def _default(dim, base):
    return ROPE_SCALINGS["default"](dim=dim, base=base).inv_freq


def _assert_report(rep, truth, *, blind, precision="float32", scaling=None, params=None):
    """Every field the truth determines."""
    assert rep.ok, str(rep)
    assert rep.pairing == truth.pairing and rep.direction == 1
    assert rep.position_offset == 0.0 and rep.index_origin == 0
    assert rep.rotary_dim == truth.rotary_dim
    assert list(rep.rotated_features) == list(range(truth.rotary_dim))
    assert rep.base == truth.base
    assert rep.attention_scaling == pytest.approx(truth.attention_scaling, rel=1e-6)
    np.testing.assert_allclose(rep.inv_freq, truth.inv_freq, rtol=1e-6)
    assert rep.precision == precision
    expect_scaling = scaling or (truth.rope_type if truth.rope_type != "default" else "none")
    assert rep.scaling == expect_scaling, str(rep)
    for key, value in (params or {}).items():
        assert rep.scaling_params[key] == value, str(rep)
    if truth.output_order == "half":
        half = np.concatenate([np.arange(0, truth.dim, 2), np.arange(1, truth.dim, 2)])
        np.testing.assert_array_equal(rep.output_permutation, half)
    else:
        assert rep.output_permutation is None
    if not blind:
        assert rep.attention_scaling_applied in ("once", "none")


def _both(fn, truth, **kw):
    """Blind and with the truth expected; returns both reports for the case's own asserts."""
    blind = check_rope(fn, dim=truth.dim, rotary_dim=truth.rotary_dim)
    _assert_report(blind, truth, blind=True, **kw)
    judged = check_rope(fn, dim=truth.dim, expected=truth)
    _assert_report(judged, truth, blind=False, **{**kw, "scaling": None, "params": truth.params})
    return blind, judged


# --- transformers: rotary module + apply function of each model family -----------------------


def _hf_module(model):
    return pytest.importorskip(f"transformers.models.{model}.modeling_{model}")


def _hf_fn(rotary, apply, *, layer_type=None, layout="bhsd"):
    """fn(x, positions): q of one head through the family's rotary module and apply function."""

    def fn(x, positions):
        x = torch.as_tensor(np.asarray(x), dtype=torch.float64)
        pos = torch.as_tensor(np.asarray(positions), dtype=torch.int64)[None]  # (1, seq)
        q = x[None, None] if layout == "bhsd" else x[None, :, None]
        args = (q, pos) if layer_type is None else (q, pos, layer_type)
        out = apply(q, q, *_as_tuple(rotary(*args)))[0]
        return (out[0, 0] if layout == "bhsd" else out[0, :, 0]).numpy()

    return fn


def _as_tuple(v):
    return v if isinstance(v, tuple) else (v,)


def test_transformers_llama():
    mod = _hf_module("llama")
    from transformers import LlamaConfig

    cfg = LlamaConfig(
        hidden_size=256,
        num_attention_heads=2,
        head_dim=128,
        rope_parameters={"rope_type": "default", "rope_theta": 500000.0},
    )
    fn = _hf_fn(mod.LlamaRotaryEmbedding(cfg), mod.apply_rotary_pos_emb)
    _both(fn, _truth(128, 500000.0, _default(128, 500000.0)))


def test_transformers_cohere_interleaved():
    mod = _hf_module("cohere")
    from transformers import CohereConfig

    cfg_json = _config("aya-23-8b.json")  # released Aya-23-8B (model_type cohere)
    cfg = CohereConfig(
        **{k: cfg_json[k] for k in ("hidden_size", "num_attention_heads")},
        rope_parameters={"rope_type": "default", "rope_theta": float(cfg_json["rope_theta"])},
    )
    d = cfg_json["hidden_size"] // cfg_json["num_attention_heads"]
    fn = _hf_fn(mod.CohereRotaryEmbedding(cfg), mod.apply_rotary_pos_emb)
    base = float(cfg_json["rope_theta"])
    _both(fn, _truth(d, base, _default(d, base), pairing="interleaved"))


def test_transformers_glm_partial_interleaved():
    mod = _hf_module("glm")
    from transformers import GlmConfig

    cfg = GlmConfig()  # transformers' class defaults (labelled): head 128, partial 0.5
    d, r = cfg.head_dim, int(cfg.head_dim * cfg.rope_parameters["partial_rotary_factor"])
    base = float(cfg.rope_parameters["rope_theta"])
    fn = _hf_fn(mod.GlmRotaryEmbedding(cfg), mod.apply_rotary_pos_emb)
    truth = _truth(d, base, _default(r, base), pairing="interleaved", rotary_dim=r)
    _both(fn, truth)
    # blind without rotary_dim: the partial rotation is reported, not accepted silently
    rep = check_rope(fn, dim=d)
    assert not rep.ok and f"rotates only {r} of the {d}" in " ".join(rep.findings)


def test_transformers_gptj():
    mod = _hf_module("gptj")
    from transformers import GPTJConfig

    cfg_json = _config("gpt-j-6b.json")  # released GPT-J-6B: rotary_dim 64 of head 256
    cfg = GPTJConfig(
        n_embd=cfg_json["n_embd"],
        n_head=cfg_json["n_head"],
        rotary_dim=cfg_json["rotary_dim"],
        n_positions=40000,
    )
    d, r = cfg_json["n_embd"] // cfg_json["n_head"], cfg_json["rotary_dim"]
    rotary = mod.GPTJRotaryEmbedding(cfg)

    def fn(x, positions):
        x = torch.as_tensor(np.asarray(x), dtype=torch.float64)[None, :, None]  # (1, s, 1, d)
        pos = torch.as_tensor(np.asarray(positions), dtype=torch.int64)[None]
        sin, cos = rotary(x, pos)
        rot = mod.apply_rotary_pos_emb(x[..., :r], sin, cos)
        return torch.cat([rot, x[..., r:]], dim=-1)[0, :, 0].numpy()

    _both(fn, _truth(d, 10000.0, _default(r, 10000.0), pairing="interleaved", rotary_dim=r))


def test_transformers_gpt_neox_partial():
    mod = _hf_module("gpt_neox")
    from transformers import GPTNeoXConfig

    cfg = GPTNeoXConfig(hidden_size=512, num_attention_heads=4, rotary_pct=0.25)  # Pythia's 0.25
    d, r = 128, 32
    fn = _hf_fn(mod.GPTNeoXRotaryEmbedding(cfg), mod.apply_rotary_pos_emb)
    _both(fn, _truth(d, 10000.0, _default(r, 10000.0), rotary_dim=r))


def test_transformers_phi3_longrope():
    mod = _hf_module("phi3")
    from transformers import Phi3Config

    # hand-made LongRoPE factors (labelled): smooth per-pair factors like Phi-3's, 48 pairs
    d = 96
    short = list(np.round(np.linspace(1.0, 1.5, d // 2) ** 2, 4))
    long = list(np.round(np.linspace(1.0, 12.0, d // 2), 4))
    params = {
        "rope_type": "longrope",
        "rope_theta": 10000.0,
        "short_factor": short,
        "long_factor": long,
        "original_max_position_embeddings": 4096,
    }
    cfg = Phi3Config(
        hidden_size=d * 2,
        num_attention_heads=2,
        max_position_embeddings=131072,
        original_max_position_embeddings=4096,
        rope_parameters=params,
    )
    rotary = mod.Phi3RotaryEmbedding(cfg)
    fn = _hf_fn(rotary, mod.apply_rotary_pos_emb)
    # positions within the original context: the short factors
    res = ROPE_SCALINGS["longrope"](
        dim=d,
        base=1e4,
        short_factor=short,
        long_factor=long,
        original_max_position=4096,
        factor=32.0,
        seq_len=4096,
    )
    truth = _truth(
        d,
        1e4,
        res.inv_freq,
        attention_scaling=res.attention_scaling,
        rope_type="longrope",
        params={"factor": 32.0},
    )
    assert res.attention_scaling == pytest.approx(float(rotary.attention_scaling))
    pos = [0, 1, 2, 3, 5, 8, 16, 64, 256, 1024, 2048, 4095]
    rep = check_rope(fn, dim=d, expected=truth, positions=pos)
    _assert_report(rep, truth, blind=False)
    # blind: per-pair factors of base 10000, never decreasing: consistent, reported as such
    blind = check_rope(fn, dim=d, positions=pos)
    assert blind.ok and blind.scaling == "freq_factors" and blind.base == 1e4, str(blind)
    assert "per-pair factors" in " ".join(blind.findings)
    np.testing.assert_allclose(blind.scaling_params["factors"], short, rtol=1e-6)
    np.testing.assert_allclose(blind.inv_freq, res.inv_freq, rtol=1e-6)


def test_transformers_deepseek_v3_rope_interleave():
    mod = _hf_module("deepseek_v3")
    from transformers import DeepseekV3Config

    cfg_json = _config("deepseek-v3.handmade.json")
    cfg = DeepseekV3Config(
        **{
            k: cfg_json[k]
            for k in (
                "hidden_size",
                "num_attention_heads",
                "qk_rope_head_dim",
                "qk_nope_head_dim",
                "v_head_dim",
                "kv_lora_rank",
                "q_lora_rank",
                "rope_parameters",
                "max_position_embeddings",
                "rope_interleave",
            )
        }
    )
    rope = cfg_json["rope_parameters"]
    d = cfg_json["qk_rope_head_dim"]
    fn = _hf_fn(mod.DeepseekV3RotaryEmbedding(cfg), mod.apply_rotary_pos_emb_interleave)
    res = ROPE_SCALINGS["yarn"](
        dim=d,
        base=rope["rope_theta"],
        factor=rope["factor"],
        original_max_position=rope["original_max_position_embeddings"],
        beta_fast=rope["beta_fast"],
        beta_slow=rope["beta_slow"],
        mscale=rope["mscale"],
        mscale_all_dim=rope["mscale_all_dim"],
    )
    truth = _truth(
        d,
        rope["rope_theta"],
        res.inv_freq,
        pairing="interleaved",
        attention_scaling=res.attention_scaling,
        rope_type="yarn",
        params={"factor": rope["factor"]},
        output_order="half",
    )
    blind, _ = _both(fn, truth, params={"factor": 40.0, "original_max_position": 4096})
    assert "mscale == mscale_all_dim" in " ".join(blind.findings)


@pytest.mark.parametrize("layer_type", ["sliding_attention", "full_attention"])
def test_transformers_gemma3_local_and_global(layer_type):
    mod = _hf_module("gemma3")
    from transformers import Gemma3TextConfig

    cfg_json = _config("gemma3-1b-it.json")  # released Gemma 3 1B (4.x keys)
    local, glob = float(cfg_json["rope_local_base_freq"]), float(cfg_json["rope_theta"])
    cfg = Gemma3TextConfig(
        head_dim=cfg_json["head_dim"],
        hidden_size=cfg_json["hidden_size"],
        num_attention_heads=cfg_json["num_attention_heads"],
        rope_parameters={
            "sliding_attention": {"rope_type": "default", "rope_theta": local},
            "full_attention": {"rope_type": "default", "rope_theta": glob},
        },
    )
    base = local if layer_type == "sliding_attention" else glob
    d = cfg_json["head_dim"]
    fn = _hf_fn(mod.Gemma3RotaryEmbedding(cfg), mod.apply_rotary_pos_emb, layer_type=layer_type)
    _both(fn, _truth(d, base, _default(d, base)))


def test_transformers_gemma4_proportional_global_layers():
    mod = _hf_module("gemma4")
    from transformers import Gemma4TextConfig

    cfg = Gemma4TextConfig()  # transformers' class defaults (labelled): proportional, 0.25, 1e6
    rope = cfg.rope_parameters["full_attention"]
    d = cfg.per_layer_config["full_attention"].head_dim
    rotary = mod.Gemma4TextRotaryEmbedding(cfg)

    def fn(x, positions):
        x = torch.as_tensor(np.asarray(x), dtype=torch.float64)[None, None]
        pos = torch.as_tensor(np.asarray(positions), dtype=torch.int64)[None]
        cos, sin = rotary(x, pos, "full_attention")
        return mod.apply_rotary_pos_emb(x, cos, sin)[0, 0].numpy()

    res = ROPE_SCALINGS["proportional"](
        dim=d, base=rope["rope_theta"], partial_rotary_factor=rope["partial_rotary_factor"]
    )
    truth = _truth(d, rope["rope_theta"], res.inv_freq, rope_type="proportional")
    blind, _ = _both(fn, truth)
    assert int(np.sum(blind.inv_freq > 0)) == int(d * rope["partial_rotary_factor"]) // 2
    assert "proportional RoPE" in " ".join(blind.findings)


def test_transformers_llama4_step_scaling():
    mod = _hf_module("llama4")
    from transformers import Llama4TextConfig

    cfg_json = _config("llama4-text.handmade.json")
    rope = cfg_json["rope_parameters"]
    cfg = Llama4TextConfig(
        hidden_size=cfg_json["hidden_size"],
        head_dim=cfg_json["head_dim"],
        num_attention_heads=cfg_json["num_attention_heads"],
        rope_parameters=rope,
    )
    rotary = mod.Llama4TextRotaryEmbedding(cfg)
    d, base, s, L = cfg_json["head_dim"], rope["rope_theta"], rope["factor"], 8192
    th = _default(d, base)
    step = np.where(2 * np.pi / th > L / rope["low_freq_factor"], th / s, th)
    fn = _hf_fn(rotary, mod.apply_rotary_emb, layout="bshd")
    truth = _truth(d, base, step, pairing="interleaved", rope_type="llama3", params={"factor": s})
    _both(
        fn,
        truth,
        params={
            "factor": 16.0,
            "original_max_position": 8192,
            "low_freq_factor": 1.0,
            "high_freq_factor": 1.0,
        },
    )


def test_transformers_gpt_oss_yarn():
    mod = _hf_module("gpt_oss")
    from transformers import GptOssConfig

    cfg_json = _config("gpt-oss-20b.json")
    cfg = GptOssConfig(
        **{
            k: cfg_json[k]
            for k in (
                "hidden_size",
                "head_dim",
                "num_attention_heads",
                "max_position_embeddings",
                "rope_theta",
                "rope_scaling",
            )
        }
    )
    rope, base, d = cfg_json["rope_scaling"], float(cfg_json["rope_theta"]), cfg_json["head_dim"]
    res = ROPE_SCALINGS["yarn"](
        dim=d,
        base=base,
        factor=rope["factor"],
        original_max_position=rope["original_max_position_embeddings"],
        truncate=rope["truncate"],
    )
    fn = _hf_fn(mod.GptOssRotaryEmbedding(cfg), mod.apply_rotary_pos_emb)
    truth = _truth(
        d,
        base,
        res.inv_freq,
        attention_scaling=res.attention_scaling,
        rope_type="yarn",
        params={"factor": rope["factor"]},
    )
    _both(fn, truth, params={"factor": 32.0, "original_max_position": 4096, "truncate": False})


def test_transformers_qwen2_vl_text_positions():
    mod = _hf_module("qwen2_vl")
    from transformers import Qwen2VLTextConfig

    cfg = Qwen2VLTextConfig(
        hidden_size=256,
        num_attention_heads=2,
        rope_parameters={"rope_type": "default", "rope_theta": 1e6, "mrope_section": [16, 24, 24]},
    )
    rotary = mod.Qwen2VLRotaryEmbedding(cfg)

    def fn(x, positions):  # text tokens: the same id on the t, h and w axes
        x = torch.as_tensor(np.asarray(x), dtype=torch.float64)[None, None]
        pos = torch.as_tensor(np.asarray(positions), dtype=torch.int64)[None, None].expand(3, 1, -1)
        cos, sin = rotary(x, pos)
        return mod.apply_rotary_pos_emb(x, x, cos, sin)[0][0, 0].numpy()

    _both(fn, _truth(128, 1e6, _default(128, 1e6)))


# --- torchtune (module files loaded by path; see the module docstring) -----------------------


def _torchtune_file(relative, name):
    spec = importlib.util.find_spec("torchtune")
    if spec is None:
        pytest.skip("torchtune not installed (pip install --no-deps torchtune==0.6.1)")
    path = pathlib.Path(spec.submodule_search_locations[0]) / relative
    file_spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(file_spec)
    file_spec.loader.exec_module(module)
    return module


def _torchtune_fn(rope):
    def fn(x, positions):
        x = torch.as_tensor(np.asarray(x), dtype=torch.float32)[None, :, None]  # (1, s, 1, d)
        pos = torch.as_tensor(np.asarray(positions), dtype=torch.int64)[None]
        return rope(x, input_pos=pos)[0, :, 0].double().numpy()

    return fn


def test_torchtune_rope_with_its_4096_cache():
    mod = _torchtune_file("modules/position_embeddings.py", "torchtune_position_embeddings")
    rope = mod.RotaryPositionalEmbeddings(dim=64, max_seq_len=4096, base=10000)
    blind, judged = _both(
        _torchtune_fn(rope), _truth(64, 1e4, _default(64, 1e4), pairing="interleaved")
    )
    for rep in (blind, judged):  # the cache ends at 4095: probed below it, and said so
        assert np.all(rep.positions < 4096) and "only positions below" in " ".join(rep.findings)


def test_torchtune_llama3_scaled_rope():
    mod = _torchtune_file("models/llama3_1/_position_embeddings.py", "torchtune_llama3_rope")
    rope = mod.Llama3ScaledRoPE(dim=128, max_seq_len=40000, base=500000.0, scale_factor=8)
    res = ROPE_SCALINGS["llama3"](dim=128, base=500000.0, factor=8.0, original_max_position=8192)
    truth = _truth(
        128,
        500000.0,
        res.inv_freq,
        pairing="interleaved",
        rope_type="llama3",
        params={"factor": 8.0},
    )
    _both(_torchtune_fn(rope), truth, params={"factor": 8.0, "original_max_position": 8192})


# --- litgpt ----------------------------------------------------------------------------------


def _litgpt():
    return pytest.importorskip("litgpt.model", reason="litgpt not installed (see docstring)")


def _litgpt_fn(apply, cos, sin):
    def fn(x, positions):
        x = torch.as_tensor(np.asarray(x), dtype=torch.float32)[None, None]  # (1, 1, s, d)
        p = torch.as_tensor(np.asarray(positions), dtype=torch.int64)
        return apply(x, cos[p][None], sin[p][None])[0, 0].double().numpy()

    return fn


def test_litgpt_rope_and_llama3_extra_config():
    model = _litgpt()
    cos, sin = model.build_rope_cache(40000, 64, base=10000)
    _both(_litgpt_fn(model.apply_rope, cos, sin), _truth(64, 1e4, _default(64, 1e4)))
    extra = {
        "factor": 8.0,
        "low_freq_factor": 1.0,
        "high_freq_factor": 4.0,
        "original_max_seq_len": 8192,
    }
    cos, sin = model.build_rope_cache(40000, 128, base=500000, extra_config=extra)
    res = ROPE_SCALINGS["llama3"](dim=128, base=500000.0, factor=8.0, original_max_position=8192)
    truth = _truth(128, 500000.0, res.inv_freq, rope_type="llama3", params={"factor": 8.0})
    _both(_litgpt_fn(model.apply_rope, cos, sin), truth, params={"factor": 8.0})


def test_litgpt_rope_interleave_is_an_output_permutation():
    model = _litgpt()
    cos, sin = model.build_rope_cache(40000, 64, base=10000)
    truth = _truth(64, 1e4, _default(64, 1e4), pairing="interleaved", output_order="half")
    _both(_litgpt_fn(model.apply_rope_interleave, cos, sin), truth)


# --- x-transformers --------------------------------------------------------------------------


def test_x_transformers_partial_interleaved():
    xt = pytest.importorskip(
        "x_transformers.x_transformers", reason="x-transformers not installed (see docstring)"
    )
    d, r = 64, 32  # its Decoder default: rotary_emb_dim = max(dim_head // 2, 32)
    rotary = xt.RotaryEmbedding(r)

    def fn(x, positions):
        x = torch.as_tensor(np.asarray(x), dtype=torch.float32)[None, None]  # (1, 1, s, d)
        freqs, scale = rotary(torch.as_tensor(np.asarray(positions), dtype=torch.int64))
        return xt.apply_rotary_pos_emb(x, freqs, scale)[0, 0].double().numpy()

    _both(fn, _truth(d, 1e4, _default(r, 1e4), pairing="interleaved", rotary_dim=r))


@pytest.mark.parametrize("side", ["q", "k"])
def test_x_transformers_xpos_is_named_xpos_and_not_a_precision_class(side):
    """x-transformers' xPos (``use_xpos=True``) scales q by zeta ** ((m - c) / scale_base) and
    k by its inverse, c = (max position + 1) // 2 of the call: the pairs' factors at position
    0 differ and change with position. The checker names xPos; the float32 arithmetic is
    class float32, never a bfloat16 finding."""
    xt = pytest.importorskip(
        "x_transformers.x_transformers", reason="x-transformers not installed (see docstring)"
    )
    d, r = 64, 32
    rotary = xt.RotaryEmbedding(r, use_xpos=True, scale_base=512)

    def fn(x, positions):
        x = torch.as_tensor(np.asarray(x), dtype=torch.float32)[None, None]
        freqs, scale = rotary(torch.as_tensor(np.asarray(positions), dtype=torch.int64))
        scale = scale if side == "q" else scale**-1
        return xt.apply_rotary_pos_emb(x, freqs, scale)[0, 0].double().numpy()

    for rep in (
        check_rope(fn, dim=d),
        check_rope(fn, dim=d, base=1e4, pairing="interleaved", rotary_dim=r),
    ):
        text = " ".join(rep.findings)
        assert not rep.ok and "xPos-like scaling" in text, str(rep)
        assert rep.pairing == "interleaved" and rep.base == 1e4 and rep.rotary_dim == r
        assert rep.precision == "float32", str(rep)
        assert "bfloat16" not in text and "errors suggest" not in text, str(rep)


# --- MLX and mlx-lm (CPU) --------------------------------------------------------------------


def _mlx_fn(rope, d):
    mx = pytest.importorskip("mlx.core", reason="mlx not installed (mlx==0.32.4 mlx-cpu)")

    def fn(x, positions):  # mx.fast.rope takes a start offset: one call per position
        x = np.asarray(x, dtype=np.float32)
        out = np.empty_like(x)
        for m in np.unique(positions):
            rows = np.asarray(positions) == m
            y = rope(mx.array(x[rows][:, None, None, :]), int(m))  # (n, 1 head, 1 token, d)
            out[rows] = np.array(y)[:, 0, 0, :]
        return out.astype(np.float64)

    return fn


@pytest.mark.parametrize("traditional", [False, True])
def test_mlx_fast_rope(traditional):
    mx = pytest.importorskip("mlx.core", reason="mlx not installed (mlx==0.32.4 mlx-cpu)")

    def rope(x, offset):
        return mx.fast.rope(x, 64, traditional=traditional, base=1e4, scale=1.0, offset=offset)

    pairing = "interleaved" if traditional else "half"
    _both(_mlx_fn(rope, 64), _truth(64, 1e4, _default(64, 1e4), pairing=pairing))


def test_mlx_lm_llama3_and_yarn():
    rope_utils = pytest.importorskip("mlx_lm.models.rope_utils", reason="mlx-lm not installed")
    cfg = {
        "rope_type": "llama3",
        "factor": 8.0,
        "low_freq_factor": 1.0,
        "high_freq_factor": 4.0,
        "original_max_position_embeddings": 8192,
    }
    rope = rope_utils.initialize_rope(128, 500000.0, False, cfg, 131072)
    res = ROPE_SCALINGS["llama3"](dim=128, base=500000.0, factor=8.0, original_max_position=8192)
    truth = _truth(128, 500000.0, res.inv_freq, rope_type="llama3", params={"factor": 8.0})
    _both(_mlx_fn(lambda x, o: rope(x, offset=o), 128), truth, params={"factor": 8.0})
    cfg = {
        "rope_type": "yarn",
        "factor": 4.0,
        "original_max_position_embeddings": 32768,
        "beta_fast": 32.0,
        "beta_slow": 1.0,
    }
    rope = rope_utils.initialize_rope(128, 1e6, False, cfg, 131072)
    res = ROPE_SCALINGS["yarn"](dim=128, base=1e6, factor=4.0, original_max_position=32768)
    truth = _truth(
        128,
        1e6,
        res.inv_freq,
        attention_scaling=res.attention_scaling,
        rope_type="yarn",
        params={"factor": 4.0},
    )
    _both(_mlx_fn(lambda x, o: rope(x, offset=o), 128), truth, params={"factor": 4.0})


def test_math_of_the_truth_is_the_papers():
    """The truth's YaRN factor for gpt-oss is 0.1 ln(32) + 1 (a guard on the helper)."""
    res = ROPE_SCALINGS["yarn"](dim=64, base=150000.0, factor=32.0, original_max_position=4096)
    assert res.attention_scaling == pytest.approx(0.1 * math.log(32.0) + 1.0)
