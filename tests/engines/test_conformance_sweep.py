"""The heavy conformance sweeps, run by ``make test-engines`` (REFIMPL_CONFORMANCE_SWEEP=1):
every accepted table recipe of the NumPy kernel passes the float32 suites of released configs
at their real head widths, and every planted mistake fails with its cause named, in every
dtype. The default run keeps a few of each (tests/test_conformance.py)."""

from __future__ import annotations

import importlib.util
import os

import pytest

from refimpl.conformance import verify_outputs, write_suite

pytestmark = pytest.mark.engines

if os.environ.get("REFIMPL_CONFORMANCE_SWEEP") != "1":
    pytest.skip(
        "heavy sweep: `make test-engines` runs it (REFIMPL_CONFORMANCE_SWEEP=1)",
        allow_module_level=True,
    )

HERE = os.path.dirname(__file__)
PARITY = os.path.join(HERE, "..", "parity", "configs")
# Released configs (SOURCES.md of each folder) and two hand-made ones labelled there.
CONFIGS = {
    "llama-3.2": os.path.join(HERE, "configs", "llama-3.2-1b-instruct.json"),
    "gpt-oss": os.path.join(PARITY, "gpt-oss-20b.json"),
    "gemma3-1b": os.path.join(PARITY, "gemma3-1b-it.json"),
    "deepseek-v3": os.path.join(PARITY, "deepseek-v3.handmade.json"),
    "qwen2.5-vl": os.path.join(PARITY, "qwen2.5-vl-text.handmade.json"),
}
RECIPES_CONFIGS = ("llama-3.2", "gpt-oss", "gemma3-1b", "deepseek-v3", "qwen2.5-vl")
# The config each mistake needs (the others run on Llama 3.2) and what the diagnosis or the
# failing class must name.
NEEDS = {"output-order": "deepseek-v3", "no-attention-scaling": "gpt-oss",
         "attention-scaling-twice": "gpt-oss", "mrope-swapped": "qwen2.5-vl",
         "mrope-1d": "qwen2.5-vl"}  # fmt: skip
NAMED = {
    "pairing": "pairs features interleaved", "sign": "wrong way", "shift": "m + 1",
    "base": "frequencies", "index-origin": "frequencies", "unscaled": "scaling method",
    "output-order": "keeps the input order", "no-attention-scaling": "attention scaling",
    "attention-scaling-twice": "applied twice", "rotated-twice": "applied 2 times",
    "varlen-no-restart": "not restarted", "decode-offsets-ignored": "offsets",
    "gqa-heads": "head loop", "gqa-keys-repeated": "keys rotated", "strides-ignored": "strides",
    "wrap-16": "16 bits", "int32-as-int64": "int32", "qkv-v-rotated": "v heads",
    "mrope-swapped": "sections swapped", "mrope-1d": "collapsed to 1-D",
    "cache-row-index": "token index", "not-written": "did not write back",
}  # fmt: skip


def _kernel():
    path = os.path.join(HERE, "..", "..", "examples", "numpy", "rope_numpy.py")
    spec = importlib.util.spec_from_file_location("rope_numpy", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


K = _kernel()


@pytest.fixture(scope="module")
def suites(tmp_path_factory):
    root = tmp_path_factory.mktemp("sweep")
    made = {}

    def get(name, dtype):
        if (name, dtype) not in made:
            made[(name, dtype)] = root / f"{name}-{dtype}"
            write_suite(CONFIGS[name], made[(name, dtype)], dtype=dtype)
        return made[(name, dtype)]

    return get


@pytest.mark.parametrize("config", RECIPES_CONFIGS)
@pytest.mark.parametrize("recipe", [r for r in K.RECIPES if r != "half-tables"])
def test_every_recipe_passes_released_configs(suites, tmp_path, config, recipe):
    suite = suites(config, "float32")
    K.run(suite, tmp_path / "r", recipe=recipe)
    report = verify_outputs(suite, tmp_path / "r")
    assert report.ok, str(report)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_half_tables_pass_half_suites(suites, tmp_path, dtype):
    suite = suites("llama-3.2", dtype)
    K.run(suite, tmp_path / "r", recipe="half-tables")
    assert verify_outputs(suite, tmp_path / "r").ok


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16"])
@pytest.mark.parametrize("mistake", sorted(set(K.MISTAKES) & set(NAMED)))
def test_every_planted_mistake_fails_with_its_cause_named(suites, tmp_path, dtype, mistake):
    suite = suites(NEEDS.get(mistake, "llama-3.2"), dtype)
    K.run(suite, tmp_path / "r", recipe="float32-angles", mistake=mistake)
    report = verify_outputs(suite, tmp_path / "r")
    assert not report.ok
    text = "\n".join(report.diagnosis + [c.message for c in report.cases])
    assert NAMED[mistake] in text, text
