"""The vllm-* precisions against vLLM's own rotary cache construction (vLLM 0.33.0 sources).

vLLM's wheel pins a CUDA build of torch (``torch==2.14.0``) and does not install here. ``make
vllm-rotary`` (a prerequisite of ``make test-engines``) downloads the pinned wheel without its
dependencies into the wheel cache and unpacks only
``vllm/model_executor/layers/rotary_embedding/*.py``. This test imports that package (its own
``__init__`` with ``get_rope`` and every class) on the CPU torch of the parity extra, with
vLLM's internal modules (logger, CustomOp, platform, custom-op registration, triton, tensor
parallelism, the current vLLM config) replaced by minimal stand-ins, and runs vLLM's own cache
construction: ``get_rope`` on every released config, and ``RotaryEmbedding``, the linear,
YaRN, Llama 3, dynamic NTK and LongRoPE classes directly. It skips, with that reason, when the
unpacked sources or torch are absent.

What is compared: vLLM's float32 cache (then cast to bfloat16/float16 as ``cache.to(dtype)``)
row by row with ``spec.cos_sin(positions, precision="vllm-...")``. The frequencies differ where
torch's float32 ``pow`` is not correctly rounded (1 float32 ulp of some frequencies) and where
the method's float64 frequencies rounded once differ from vLLM's float32 formula; the angle of
such a pair drifts by at most ``position * 4 ulp(theta)``, the stated bound, and most entries
are bit-identical.
"""

import dataclasses
import glob
import importlib
import json
import logging
import os
import sys
import types

import numpy as np
import pytest

from refimpl import rope_from_config
from refimpl.gguf import _full_and_local
from refimpl.numerics import round_to

pytestmark = pytest.mark.engines

VLLM_VERSION = "0.33.0"
SRC = os.environ.get(
    "REFIMPL_VLLM_SRC", os.path.expanduser(f"~/.cache/refimpl/vllm-{VLLM_VERSION}")
)
PKG = "vllm.model_executor.layers.rotary_embedding"
FILES = os.path.join(SRC, *PKG.split("."))
if not os.path.isfile(os.path.join(FILES, "base.py")):
    pytest.skip(
        f"vLLM {VLLM_VERSION}'s rotary sources are not unpacked in {SRC} (its wheel pins a CUDA "
        "torch==2.14.0 and cannot be installed; `make vllm-rotary` downloads the wheel with "
        "--no-deps and unpacks the pure-torch rotary files)",
        allow_module_level=True,
    )
torch = pytest.importorskip("torch", reason="torch not installed (make venv-torch)")
F = np.float32
# Angle drift bound: frequencies within 4 float32 ulp of ours (torch's pow is not correctly
# rounded; vLLM's float32 formulas round several times), times the position, plus cos/sin's ulp.
FREQ_ULP = 4


def _stub(name: str, **attrs) -> types.ModuleType:
    mod = types.ModuleType(name)
    mod.__dict__.update(attrs)
    return mod


class _CustomOp(torch.nn.Module):
    """Stand-in for vllm.model_executor.custom_op.CustomOp: registration is a no-op and the
    forward is the pure-torch one."""

    def __init__(self, *, enforce_enable: bool = False):
        super().__init__()

    @classmethod
    def register(cls, name):
        return lambda op: op

    def enabled(self) -> bool:
        return False


class _Logger(logging.LoggerAdapter):
    """vllm.logger's logger (it adds ``warning_once`` / ``info_once``)."""

    def warning_once(self, msg, *args, **kwargs):
        self.warning(msg, *args)

    def info_once(self, msg, *args, **kwargs):
        self.info(msg, *args)


def _init_logger(name):
    return _Logger(logging.getLogger(name), {})


class _VllmConfig:
    def __init__(self, max_model_len):
        self.model_config = types.SimpleNamespace(max_model_len=max_model_len)


_MAX_MODEL_LEN = {"value": 4096}


class _Anything:
    """Stand-in for triton and triton.language: its kernels are defined, never run here."""

    def __getattr__(self, name):
        return _Anything()

    def __call__(self, *args, **kwargs):
        if len(args) == 1 and callable(args[0]) and not kwargs:
            return args[0]  # @triton.jit
        return lambda fn: fn  # @triton.jit(...)


def _load():
    """vLLM's rotary package from the unpacked files, vLLM's internals stubbed (once)."""
    if PKG in sys.modules:
        return sys.modules
    platform = types.SimpleNamespace(is_cpu=lambda: True, is_cuda=lambda: False)
    layers = os.path.dirname(FILES)
    stubs = {
        "vllm": _stub("vllm", __path__=[]),
        "vllm.logger": _stub("vllm.logger", init_logger=_init_logger),
        "vllm.model_executor": _stub("vllm.model_executor", __path__=[]),
        "vllm.model_executor.layers": _stub("vllm.model_executor.layers", __path__=[layers]),
        "vllm.model_executor.custom_op": _stub(
            "vllm.model_executor.custom_op", CustomOp=_CustomOp, PluggableLayer=_CustomOp
        ),
        "vllm._aiter_ops": _stub(
            "vllm._aiter_ops",
            rocm_aiter_ops=types.SimpleNamespace(is_triton_rotary_embed_enabled=lambda: False),
        ),
        "vllm.platforms": _stub("vllm.platforms", current_platform=platform),
        "vllm.utils": _stub("vllm.utils", __path__=[]),
        "vllm.utils.torch_utils": _stub(
            "vllm.utils.torch_utils",
            direct_register_custom_op=lambda *a, **k: None,
            async_tensor_h2d=lambda *a, **k: None,
        ),
        "vllm.utils.flashinfer": _stub("vllm.utils.flashinfer", has_flashinfer=lambda: False),
        "vllm.triton_utils": _stub("vllm.triton_utils", triton=_Anything(), tl=_Anything()),
        "vllm.distributed": _stub(
            "vllm.distributed",
            get_tensor_model_parallel_rank=lambda: 0,
            get_tensor_model_parallel_world_size=lambda: 1,
        ),
        "vllm.config": _stub(
            "vllm.config", get_current_vllm_config=lambda: _VllmConfig(_MAX_MODEL_LEN["value"])
        ),
    }
    for name, mod in stubs.items():
        if name in sys.modules and not getattr(sys.modules[name], "_refimpl_stub", False):
            pytest.skip(f"a real {name} is importable; this test loads vLLM's files on their own")
        mod._refimpl_stub = True
        sys.modules[name] = mod
    importlib.import_module(PKG)  # the package's own __init__ (get_rope and every class)
    return sys.modules


def _vllm(cls_path: str, *args, **kwargs):
    module, name = cls_path.rsplit(".", 1)
    return getattr(_load()[f"{PKG}.{module}"], name)(*args, **kwargs)


def _cache(emb, dtype):
    """cos and sin halves of a vLLM cache as numpy float32 (values of ``dtype``)."""
    cache = emb.cos_sin_cache.float().numpy()
    h = cache.shape[1] // 2
    return cache[:, :h], cache[:, h:]


def _compare(spec, emb, dtype, positions):
    c_live, s_live = _cache(emb, dtype)
    c, s = spec.cos_sin(positions, precision=f"vllm-{dtype}")
    c_live, s_live = c_live[positions], s_live[positions]
    theta = spec.inv_freq[None, :]
    mag = float(np.abs(c_live[0]).max())
    unit = {"float32": 2.0**-23, "bfloat16": 2.0**-7, "float16": 2.0**-10}[dtype]
    drift = positions[:, None] * FREQ_ULP * theta * 2.0**-23 + unit
    assert np.all(np.abs(c - c_live) <= mag * drift)
    assert np.all(np.abs(s - s_live) <= mag * drift)
    assert np.mean(c == c_live) > 0.5 and np.mean(s == s_live) > 0.5
    return c, c_live


DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
POS = np.unique(np.geomspace(1, 8191, 400).astype(int))


@pytest.mark.parametrize("dtype", sorted(DTYPES))
def test_default_cache(dtype):
    spec = rope_from_config({"head_dim": 128, "rope_theta": 5e5})
    emb = _vllm("base.RotaryEmbedding", 128, 128, 8192, 5e5, True, DTYPES[dtype])
    _compare(spec, emb, dtype, POS)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_partial_rotary_cache(dtype):
    spec = rope_from_config({"head_dim": 64, "rope_theta": 1e4, "partial_rotary_factor": 0.5})
    emb = _vllm("base.RotaryEmbedding", 64, 32, 8192, 1e4, True, DTYPES[dtype])
    _compare(spec, emb, dtype, POS)


def test_yarn_cache_with_its_magnitude():
    cfg = {
        "head_dim": 64,
        "rope_theta": 1.5e5,
        "max_position_embeddings": 131072,
        "rope_scaling": {
            "rope_type": "yarn",
            "factor": 32.0,
            "beta_fast": 32.0,
            "beta_slow": 1.0,
            "original_max_position_embeddings": 4096,
            "truncate": False,
        },
    }  # fmt: skip  (shaped like gpt-oss; hand-made)
    spec = rope_from_config(cfg)
    rp = cfg["rope_scaling"]
    emb = _vllm(
        "yarn_scaling_rope.YaRNScalingRotaryEmbedding", 64, 64, 4096, 1.5e5, True, 32.0,
        torch.float32, beta_fast=32, beta_slow=1, truncate=rp["truncate"],
    )  # fmt: skip
    c, c_live = _compare(spec, emb, "float32", np.arange(0, 131072, 331))
    assert float(c_live[0, 0]) == float(c[0, 0])  # the same magnitude 1 + 0.1 ln 32


def test_llama3_cache():
    path = os.path.join(os.path.dirname(__file__), "configs", "llama-3.2-1b-instruct.json")
    spec = rope_from_config(path)
    rp = spec.params
    emb = _vllm(
        "llama3_rope.Llama3RotaryEmbedding", 64, 64, 8192, spec.base, True, torch.bfloat16,
        rp["factor"], rp["low_freq_factor"], rp["high_freq_factor"], rp["original_max_position"],
    )  # fmt: skip
    _compare(spec, emb, "bfloat16", POS)


def test_linear_cache():
    cfg = {"head_dim": 128, "rope_theta": 1e6, "rope_scaling": {"rope_type": "linear",
                                                                "factor": 4.0}}  # fmt: skip
    spec = rope_from_config(cfg)
    emb = _vllm(
        "linear_scaling_rope.LinearScalingRotaryEmbedding", 128, 128, 2048, 1e6, True, 4.0,
        torch.float32,
    )  # fmt: skip
    _compare(spec, emb, "float32", POS)


def test_dynamic_ntk_cache_is_static():
    cfg = {
        "head_dim": 64,
        "rope_theta": 1e4,
        "max_position_embeddings": 8192,
        "rope_scaling": {"rope_type": "dynamic", "factor": 2.0},
    }  # fmt: skip  (hand-made)
    spec = rope_from_config(cfg, seq_len=8192)
    emb = _vllm(
        "dynamic_ntk_scaling_rope.DynamicNTKScalingRotaryEmbedding", 64, 64, 8192, 8192, 1e4,
        True, 2.0, torch.float32,
    )  # fmt: skip
    _compare(spec, emb, "float32", POS)
    with pytest.raises(ValueError, match="static cache"):
        rope_from_config(cfg, seq_len=16384).cos_sin([0], precision="vllm-float32")


def test_longrope_cache_uses_the_long_factors_by_max_model_len():
    short = list(np.linspace(1.0, 1.5, 16))
    long = list(np.linspace(1.0, 8.0, 16))
    cfg = {
        "head_dim": 32,
        "rope_theta": 1e4,
        "max_position_embeddings": 16384,
        "original_max_position_embeddings": 4096,
        "rope_scaling": {"type": "longrope", "short_factor": short, "long_factor": long},
    }  # fmt: skip  (hand-made, Phi-3 shaped)
    spec = rope_from_config(cfg, seq_len=16384)
    _MAX_MODEL_LEN["value"] = 16384
    emb = _vllm(
        "phi3_long_rope_scaled_rope.Phi3LongRoPEScaledRotaryEmbedding", 32, 32, 16384, 4096,
        1e4, True, torch.float32, short, long,
    )  # fmt: skip
    cache = emb.long_short_cos_sin_cache.float().numpy()[4096:]  # the long block
    c_live, s_live = cache[:, :16], cache[:, 16:]
    pos = np.unique(np.r_[0, np.geomspace(1, 16383, 300).astype(int)])
    c, s = spec.cos_sin(pos, precision="vllm-float32")
    drift = pos[:, None] * FREQ_ULP * spec.inv_freq[None, :] * 2.0**-23 + 2.0**-23
    mag = float(c_live[0, 0])
    assert abs(float(c[0, 0]) - mag) <= 2.0**-23
    assert np.all(np.abs(c - c_live[pos]) <= mag * drift)
    assert np.all(np.abs(s - s_live[pos]) <= mag * drift)


def test_the_cast_rounds_the_float32_cache():
    emb32 = _vllm("base.RotaryEmbedding", 64, 64, 4096, 1e4, True, torch.float32)
    emb16 = _vllm("base.RotaryEmbedding", 64, 64, 4096, 1e4, True, torch.bfloat16)
    c32, _ = _cache(emb32, "float32")
    c16, _ = _cache(emb16, "bfloat16")
    np.testing.assert_array_equal(round_to(c32, "bfloat16").astype(F), c16)


# ---------------------------------------------------------------------------------------------
# Released configs through vLLM's own dispatch (get_rope) against the spec's vllm-* precisions.

HERE = os.path.dirname(__file__)
RELEASED = sorted(
    f
    for f in glob.glob(os.path.join(HERE, "..", "parity", "configs", "*.json"))
    + glob.glob(os.path.join(HERE, "configs", "*.json"))
    if ".handmade." not in f and ".transformers-defaults." not in f
)


# Cache rows built for the released configs (their own length when it picks the frequencies).
SERVED = 32768


def _rope_parameters(path, spec):
    """``config.rope_parameters`` as vLLM's config loader hands it to get_rope."""
    with open(path) as fh:
        cfg = json.load(fh)
    text = cfg.get("text_config") if isinstance(cfg.get("text_config"), dict) else cfg
    rope = text.get("rope_parameters") or text.get("rope_scaling") or {}
    rope = dict(rope.get("full_attention", rope))  # per-layer-type parameters (Gemma 3)
    if "type" in rope:
        rope.setdefault("rope_type", rope.pop("type"))
    rope.setdefault("rope_type", "default")
    orig = text.get("original_max_position_embeddings")
    if orig and rope["rope_type"] != "default":
        rope.setdefault("original_max_position_embeddings", orig)
    rope["rope_theta"] = spec.base
    rope["partial_rotary_factor"] = spec.rotary_dim / spec.dim
    return rope, int(text.get("max_position_embeddings") or 4096)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("path", RELEASED, ids=os.path.basename)
def test_released_configs_through_get_rope(path, dtype):
    try:
        spec = _full_and_local(path)[0]
    except ValueError as exc:  # a config the package refuses (tested elsewhere)
        pytest.skip(f"{os.path.basename(path)}: {exc}")
    rope, max_pos = _rope_parameters(path, spec)
    _MAX_MODEL_LEN["value"] = max_pos
    get_rope = _load()[PKG].get_rope
    # the cache's length only truncates it, except where it picks the frequencies
    served = max_pos if rope["rope_type"] in ("longrope", "dynamic") else min(max_pos, SERVED)
    try:
        emb = get_rope(spec.dim, served, spec.pairing == "half", rope, DTYPES[dtype])
    except (ValueError, KeyError) as exc:
        pytest.skip(f"vLLM's get_rope refuses {rope['rope_type']!r}: {exc!r}")
    rows = emb.cos_sin_cache.shape[0]
    limit = min(rows, spec._position_limit() or rows)
    pos = np.unique(np.r_[0, np.geomspace(1, limit - 1, 300).astype(int)])
    c, c_live = _compare(spec, emb, dtype, pos)
    assert c_live[0, 0] == c[0, 0]  # the same magnitude (attention factor) in the cache


def test_get_rope_keeps_an_explicit_yarn_attention_factor():
    rope = {"rope_type": "yarn", "rope_theta": 1e6, "factor": 4.0,
            "original_max_position_embeddings": 8192, "attention_factor": 1.0}  # fmt: skip
    emb = _load()[PKG].get_rope(128, 32768, True, rope, torch.float32)
    spec = rope_from_config(
        {"head_dim": 128, "max_position_embeddings": 32768, "rope_parameters": rope}
    )  # hand-made
    c, c_live = _compare(spec, emb, "float32", np.r_[0, POS])
    assert float(c_live[0, 0]) == float(c[0, 0]) == 1.0  # not 1 + 0.1 ln 4


@pytest.mark.parametrize("dtype", sorted(DTYPES))
@pytest.mark.parametrize("pairing", ["half", "interleaved"])
def test_apply_is_vllms_forward_native(dtype, pairing):
    spec = rope_from_config({"head_dim": 64, "rope_theta": 1e4, "partial_rotary_factor": 0.5})
    if pairing == "interleaved":
        spec = dataclasses.replace(spec, pairing="interleaved")
    emb = _vllm("base.RotaryEmbedding", 64, 32, 8192, 1e4, pairing == "half", DTYPES[dtype])
    pos = np.r_[0, POS]
    x = np.random.default_rng(0).normal(size=(pos.shape[0], 64)).astype(F)
    xr = round_to(x, dtype).astype(F) if dtype != "float32" else x
    query = torch.from_numpy(xr).to(DTYPES[dtype])
    live, _ = emb.forward_native(torch.from_numpy(pos), query, None)
    got = spec.apply(x, pos, precision=f"vllm-{dtype}")
    (c_live, s_live), (c, s) = _cache(emb, dtype), spec.cos_sin(pos, precision=f"vllm-{dtype}")
    same = (c_live[pos] == c) & (s_live[pos] == s)  # pairs whose cache entries agree bit for bit
    assert same.mean() > 0.5
    i1, i2 = (np.arange(16), np.arange(16, 32)) if pairing == "half" else (
        np.arange(0, 32, 2), np.arange(1, 32, 2))  # fmt: skip
    live = live.float().numpy()
    for idx in (i1, i2):  # those pairs' outputs are vLLM's bit for bit, in the model dtype
        np.testing.assert_array_equal(got[:, idx][same], live[:, idx][same])
    np.testing.assert_array_equal(got[:, 32:], live[:, 32:])  # pass-through features
