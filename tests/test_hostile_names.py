"""Public names keep their word: a keyword a public function does not take is refused naming
that function and the keywords it takes (never an internal function it forwards to), and a
public name removed this minor version keeps working with a DeprecationWarning that names its
replacement (README, Changelog).

``FORWARDERS`` holds, for every public callable that forwards ``**kwargs``, a call with an
unknown keyword and the public name the message must give; a new forwarder fails
``test_every_keyword_forwarder_is_in_the_table``."""

from __future__ import annotations

import dataclasses
import inspect
import warnings

import numpy as np
import pytest

import refimpl
from refimpl import exercises, multiaxis

_SPEC = refimpl.rope_from_config(
    {"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4}
)  # hand-made config

# public callable -> (call with the unknown keyword ``bogus``, the name the message gives)
FORWARDERS = {
    "RopeSpec.apply": (lambda: _SPEC.apply(np.ones((2, 16)), [0, 1], bogus=1), "RopeSpec.apply"),
    "ScalingMethod.__call__": (
        lambda: refimpl.ROPE_SCALINGS["yarn"](dim=8, factor=2.0, original_max_position=64, bogus=1),
        "ROPE_SCALINGS['yarn']",
    ),
    "ScalingMethod.float32": (
        lambda: refimpl.ROPE_SCALINGS["linear"].float32(dim=8, factor=2.0, bogus=1),
        "ROPE_SCALINGS['linear']",
    ),
    "ScalingMethod.exact_frequencies": (
        lambda: refimpl.ROPE_SCALINGS["linear"].exact_frequencies(dim=8, factor=2.0, bogus=1),
        "ROPE_SCALINGS['linear']",
    ),
    "ScalingMethod.attention_factor": (
        lambda: refimpl.ROPE_SCALINGS["yarn"].attention_factor(factor=2.0, bogus=1),
        "ROPE_SCALINGS['yarn']",
    ),
    "scale_frequencies": (
        lambda: refimpl.scale_frequencies("linear", dim=8, factor=2.0, bogus=1),
        "scale_frequencies('linear', ...)",
    ),
    "exercises.grade_scaled_inv_freq": (
        lambda: exercises.grade_scaled_inv_freq(
            np.ones(4), rope_type="linear", dim=8, factor=2.0, bogus=1
        ),
        "grade_scaled_inv_freq(rope_type='linear')",
    ),
    "multiaxis.omni_batch_position_ids": (
        lambda: multiaxis.omni_batch_position_ids([[("text", 2)]], [[1, 1]], bogus=1),
        "omni_batch_position_ids",
    ),
}
# Forwarders whose keyword contract is kept by their own module's tests.
ELSEWHERE = {"transformers_float32_frequencies": "the scaling module's tests (runtime=)"}


def _forwarders() -> set[str]:
    found = set()

    def visit(label, obj):
        try:
            params = inspect.signature(obj).parameters.values()
        except (TypeError, ValueError):
            return
        if any(p.kind is p.VAR_KEYWORD for p in params):
            found.add(label)

    for name in refimpl.__all__:
        obj = getattr(refimpl, name)
        visit(name, obj)
        if inspect.isclass(obj):
            fields = (
                {f.name for f in dataclasses.fields(obj)}
                if dataclasses.is_dataclass(obj)
                else set()
            )
            for attr, value in vars(obj).items():
                if attr in fields:  # a field's default value, not a method
                    continue
                if callable(value) and (not attr.startswith("_") or attr == "__call__"):
                    visit(f"{name}.{attr}", getattr(obj, attr))
    for module in (exercises, multiaxis):
        for name in module.__all__:
            visit(f"{module.__name__.split('.')[-1]}.{name}", getattr(module, name))
    return found


def test_every_keyword_forwarder_is_in_the_table():
    missing = _forwarders() - set(FORWARDERS) - set(ELSEWHERE)
    assert not missing, f"public callables forwarding **kwargs without an entry: {missing}"


@pytest.mark.parametrize("name", sorted(FORWARDERS))
def test_unknown_keywords_name_the_public_function_and_what_it_takes(name):
    call, public = FORWARDERS[name]
    with pytest.raises(TypeError) as err:
        call()
    msg = str(err.value)
    assert msg.startswith(public) and "'bogus'" in msg and "it takes" in msg, msg
    assert "_frequencies()" not in msg and "apply_rope_tables()" not in msg, msg


def test_removed_names_warn_with_their_replacement_and_compute_the_same():
    pos = [0, 1, 5]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        old = refimpl.precision_cos_sin
    assert caught[0].category is DeprecationWarning
    assert "refimpl.PRECISIONS[precision](spec, positions)" in str(caught[0].message)
    assert "0.3.0" in str(caught[0].message) and caught[0].filename == __file__
    for precision in ("float64", "ggml-float32"):
        got, want = old(_SPEC, pos, precision), refimpl.PRECISIONS[precision](_SPEC, pos)
        np.testing.assert_array_equal(got[0], want[0])
    x = np.random.default_rng(0).standard_normal((3, 8))
    c, s = refimpl.cos_sin(pos, dim=8)
    for module in (refimpl, multiaxis):
        with pytest.warns(DeprecationWarning, match="apply_rope_tables"):
            fn = module.apply_cos_sin
        np.testing.assert_array_equal(
            fn(x, c, s, pairing="interleaved"),
            refimpl.apply_rope_tables(x, c, s, pairing="interleaved"),
        )
    with pytest.raises(AttributeError, match="has no attribute 'no_such_name'"):
        refimpl.no_such_name  # noqa: B018
    assert "precision_cos_sin" not in refimpl.__all__


def test_the_readme_changelog_lists_the_deprecations():
    import pathlib

    from refimpl._deprecated import DEPRECATED

    readme = (pathlib.Path(__file__).resolve().parents[1] / "README.md").read_text()
    changelog = readme.split("## Changelog", 1)[1]
    for _, name in DEPRECATED:
        assert name in changelog, name
