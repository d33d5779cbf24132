"""Live engines on conformance suites: ggml's CPU kernel (ggml-python), ``mx.fast.rope`` through
mlx-lm's rope modules, transformers' rotary modules with ``apply_rotary_pos_emb`` and vLLM's
``forward_native`` (its rotary sources, tests/engines/test_vllm_live.py) each rotate every case
of a suite. An engine passes every suite whose config it implements as transformers does; where
it does not (YaRN's ``truncate: false`` ignored by ggml and mlx-lm on gpt-oss; mlx-lm's and
vLLM's LongRoPE choosing the long factors below the switch) the suite fails and the cause is
named (by the engine report of ``refimpl.engines`` or the suite's own diagnosis).

Each engine takes one position per token, so M-RoPE position ids are not run here (the engines'
M-RoPE is compared table by table in the GGUF and vLLM tests). bfloat16 suites are run on
ggml with the inputs widened to F32 (ggml takes F32/F16), on the others in bfloat16.
"""

from __future__ import annotations

import json
import os
import sys

import numpy as np
import pytest
from suite_io import run_engine, verify

from refimpl.conformance import write_suite
from refimpl.engines import engine_differences
from refimpl.pipelines import spec_ggml_arguments

pytestmark = pytest.mark.engines

HERE = os.path.dirname(__file__)
PARITY = os.path.join(HERE, "..", "parity", "configs")
# Released configs (SOURCES.md of each folder).
LLAMA32 = os.path.join(HERE, "configs", "llama-3.2-1b-instruct.json")
GPT_OSS = os.path.join(PARITY, "gpt-oss-20b.json")
# Hand-made (labelled in configs/SOURCES.md): LongRoPE and dynamic NTK on a Llama, so that
# both sides of each switch are in the suite.
LONGROPE = os.path.join(HERE, "configs", "longrope.handmade.json")
DYNAMIC = os.path.join(HERE, "configs", "dynamic-ntk.handmade.json")
DTYPES = ("float32", "bfloat16")


@pytest.fixture(scope="module")
def suites(tmp_path_factory):
    root = tmp_path_factory.mktemp("engine-suites")
    cache = {}

    def get(name, cfg, dtype):
        key = (name, dtype)
        if key not in cache:
            cache[key] = root / f"{name}-{dtype}"
            write_suite(cfg, cache[key], dtype=dtype)
        return cache[key]

    return get


def _config(path_or_dict):
    if isinstance(path_or_dict, dict):
        return dict(path_or_dict)
    with open(path_or_dict) as fh:
        return json.load(fh)


# ---------------------------------------------------------------- ggml

ggml = pytest.importorskip("ggml", reason="ggml-python not installed (make test-engines)")
ggml_utils = pytest.importorskip("ggml.utils")


def _ggml(x, pos, spec):
    """ggml_rope_ext on tokens (N, H, D) with llama.cpp's arguments for the spec (F32)."""
    args = spec_ggml_arguments(spec)
    mode = 2 if spec.pairing == "half" else 0  # NEOX, NORMAL
    ctx = ggml.ggml_init(ggml.ggml_init_params(mem_size=512 * 2**20, mem_buffer=None))
    try:
        a = ggml_utils.from_numpy(np.ascontiguousarray(x, dtype=np.float32), ctx)
        b = ggml_utils.from_numpy(np.asarray(pos, dtype=np.int32), ctx)
        ff = args["freq_factors"]
        c = None if ff is None else ggml_utils.from_numpy(np.asarray(ff, np.float32), ctx)
        y = ggml.ggml_rope_ext(
            ctx, a, b, c, args["n_dims"], mode, args["n_ctx_orig"], args["freq_base"],
            args["freq_scale"], args["ext_factor"], args["attn_factor"], args["beta_fast"],
            args["beta_slow"],
        )  # fmt: skip
        graph = ggml.ggml_new_graph(ctx)
        ggml.ggml_build_forward_expand(graph, y)
        ggml.ggml_graph_compute_with_ctx(ctx, graph, 1)
        return ggml_utils.to_numpy(y).copy()
    finally:
        ggml.ggml_free(ctx)


@pytest.mark.parametrize("dtype", DTYPES)
def test_ggml_passes_llama_3_2(suites, tmp_path, dtype):
    suite = suites("llama32", LLAMA32, dtype)
    run_engine(suite, tmp_path / "r", _ggml, skip=("mrope",))
    report, ratio = verify(suite, tmp_path / "r")
    assert report.ok, str(report)
    print(f"ggml llama-3.2 {dtype}: {report.pipeline}, worst err/allowed {ratio:.3f}")


@pytest.mark.parametrize("dtype", DTYPES)
def test_ggml_fails_gpt_oss_with_truncation_named(suites, tmp_path, dtype):
    suite = suites("gpt-oss", GPT_OSS, dtype)
    run_engine(suite, tmp_path / "r", _ggml)
    report, _ = verify(suite, tmp_path / "r")
    assert not report.ok and report.diagnosis
    notes = {r.engine: r.notes for r in engine_differences(GPT_OSS)}
    assert any("truncate: false is ignored" in n for n in notes["llama.cpp"])


# ---------------------------------------------------------------- MLX (mlx-lm's rope modules)

mx = pytest.importorskip("mlx.core", reason="mlx not installed (make test-engines)")
rope_utils = pytest.importorskip("mlx_lm.models.rope_utils", reason="mlx-lm not installed")


def _mlx_module(cfg):
    text = cfg.get("text_config") or cfg
    rope = text.get("rope_parameters") or text.get("rope_scaling")
    if isinstance(rope, dict):
        rope = dict(rope)
        rope.pop("rope_theta", None)
    head = text.get("head_dim") or text["hidden_size"] // text["num_attention_heads"]
    base = text.get("rope_theta") or (text.get("rope_parameters") or {}).get("rope_theta")
    return rope_utils.initialize_rope(head, base, False, rope, text["max_position_embeddings"])


def _mlx(cfg, dtype):
    module = _mlx_module(cfg)
    mdt = mx.bfloat16 if dtype == "bfloat16" else mx.float32

    def engine(x, pos, spec):
        xm = mx.array(x[:, :, None, :]).astype(mdt)  # (N, H, 1, D): one token per batch row
        y = module(xm, offset=mx.array(np.asarray(pos, dtype=np.int32)))
        return np.array(y.astype(mx.float32))[:, :, 0, :]

    return engine


@pytest.mark.parametrize("dtype", DTYPES)
def test_mlx_passes_llama_3_2(suites, tmp_path, dtype):
    suite = suites("llama32", LLAMA32, dtype)
    run_engine(suite, tmp_path / "r", _mlx(_config(LLAMA32), dtype))
    report, ratio = verify(suite, tmp_path / "r")
    assert report.ok, str(report)
    print(f"mlx llama-3.2 {dtype}: {report.pipeline}, worst err/allowed {ratio:.3f}")


def test_mlx_fails_gpt_oss_with_truncation_named(suites, tmp_path):
    suite = suites("gpt-oss", GPT_OSS, "float32")
    run_engine(suite, tmp_path / "r", _mlx(_config(GPT_OSS), "float32"))
    report, _ = verify(suite, tmp_path / "r")
    assert not report.ok
    notes = {r.engine: r.notes for r in engine_differences(GPT_OSS)}
    assert any("truncate: false is ignored" in n for n in notes["mlx-lm"])


def test_mlx_longrope_fails_below_the_switch_with_the_long_factors_named(suites, tmp_path):
    suite = suites("longrope", LONGROPE, "float32")
    run_engine(suite, tmp_path / "r", _mlx(_config(LONGROPE), "float32"))
    report, _ = verify(suite, tmp_path / "r")
    failing = {c.name for c in report.cases if not c.ok}
    assert failing and all(n.startswith("below-switch-") for n in failing), str(report)
    assert any("the above side of the length switch" in d for d in report.diagnosis)


# ---------------------------------------------------------------- transformers

torch = pytest.importorskip("torch", reason="torch not installed (make venv-torch)")


def _hf(cfg, dtype, top=None):
    """transformers' rotary module of the config and its apply_rotary_pos_emb; ``top``: call it
    as inside a sequence reaching that position (dynamic NTK and LongRoPE choose by it)."""
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    kind = cfg["model_type"]
    config = CONFIG_MAPPING[kind](**{k: v for k, v in cfg.items() if k != "model_type"})
    module = __import__(f"transformers.models.{kind}.modeling_{kind}", fromlist=["x"])
    rotary_cls = next(getattr(module, n) for n in dir(module) if n.endswith("RotaryEmbedding"))
    rotary = rotary_cls(config=config)
    tdt = torch.bfloat16 if dtype == "bfloat16" else torch.float32

    def engine(x, pos, spec):
        ids = np.asarray(pos, dtype=np.int64)
        if top is not None:  # the longest position of the sequence comes first
            ids = np.concatenate([[spec.seq_len - 1 if spec.seq_len else top - 1], ids])
        q = torch.from_numpy(np.ascontiguousarray(x)).to(tdt).transpose(0, 1)[None]  # (1,H,N,D)
        r = spec.rotary_dim
        cos, sin = rotary(q, torch.from_numpy(ids)[None])
        if top is not None:
            cos, sin = cos[:, 1:], sin[:, 1:]
        q_rot, _ = module.apply_rotary_pos_emb(q[..., :r], q[..., :r], cos, sin)
        out = torch.cat([q_rot, q[..., r:]], dim=-1)[0].transpose(0, 1)
        return out.float().numpy()

    return engine


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    ("name", "cfg", "top"),
    [("llama32", LLAMA32, None), ("gpt-oss", GPT_OSS, None), ("longrope", LONGROPE, True),
     ("dynamic", DYNAMIC, True)],
)  # fmt: skip
def test_transformers_passes_every_suite(suites, tmp_path, dtype, name, cfg, top):
    suite = suites(name, cfg, dtype)
    run_engine(suite, tmp_path / "r", _hf(_config(cfg), dtype, top))
    report, ratio = verify(suite, tmp_path / "r")
    assert report.ok, str(report)
    print(f"transformers {name} {dtype}: {report.pipeline}, worst err/allowed {ratio:.3f}")


# ---------------------------------------------------------------- vLLM forward_native


def _vllm(cfg, dtype, served):
    sys.path.insert(0, HERE)
    live = pytest.importorskip("test_vllm_live", reason="vLLM's rotary sources not unpacked")
    pkg = live._load()[live.PKG]
    text = cfg.get("text_config") or cfg
    rope = dict(text.get("rope_parameters") or text.get("rope_scaling") or {})
    rope.setdefault("rope_theta", text.get("rope_theta", 10000.0))
    rope.setdefault("rope_type", rope.pop("type", "default"))
    if "original_max_position_embeddings" not in rope and "longrope" == rope["rope_type"]:
        rope["original_max_position_embeddings"] = text["original_max_position_embeddings"]
    head = text.get("head_dim") or text["hidden_size"] // text["num_attention_heads"]
    tdt = torch.bfloat16 if dtype == "bfloat16" else torch.float32
    live._MAX_MODEL_LEN["value"] = served
    emb = pkg.get_rope(head, served, True, rope, tdt)
    # the CustomOp classes' pure-torch path; Phi3LongRoPEScaledRotaryEmbedding is a plain
    # module whose forward is that path
    forward = emb.forward_native if hasattr(emb, "forward_native") else emb.forward

    def engine(x, pos, spec):
        n, h, d = x.shape
        query = torch.from_numpy(np.ascontiguousarray(x)).to(tdt).reshape(n, h * d)
        out, _ = forward(torch.from_numpy(np.asarray(pos, np.int64)), query, query.clone())
        return out.float().numpy().reshape(n, h, d)

    return engine


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(("name", "cfg"), [("llama32", LLAMA32), ("gpt-oss", GPT_OSS)])
def test_vllm_forward_native_passes(suites, tmp_path, dtype, name, cfg):
    suite = suites(name, cfg, dtype)
    text = _config(cfg)
    run_engine(suite, tmp_path / "r", _vllm(text, dtype, text["max_position_embeddings"]))
    report, ratio = verify(suite, tmp_path / "r")
    assert report.ok, str(report)
    print(f"vllm {name} {dtype}: {report.pipeline}, worst err/allowed {ratio:.3f}")


def test_vllm_longrope_below_the_switch_is_named(suites, tmp_path):
    suite = suites("longrope", LONGROPE, "float32")
    run_engine(suite, tmp_path / "r", _vllm(_config(LONGROPE), "float32", 8192))
    report, _ = verify(suite, tmp_path / "r")
    failing = {c.name for c in report.cases if not c.ok}
    assert failing and all(n.startswith("below-switch-") for n in failing), str(report)
    assert any("the above side of the length switch" in d for d in report.diagnosis)
