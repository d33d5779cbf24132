"""Public names removed or renamed in this minor version, kept for one more with a
``DeprecationWarning`` that names the replacement (the package's deprecation rule; the README's
Changelog lists them).

A module that lost a public name looks it up here from its ``__getattr__``; each entry builds
the old callable on top of its replacement, so the old name computes exactly what the new one
does.
"""

from __future__ import annotations

from ._checks import deprecated

#: The version that removes the names below.
REMOVED_IN = "0.3.0"


def _precision_cos_sin():
    def precision_cos_sin(spec, positions, precision: str = "float64"):
        """Deprecated: ``PRECISIONS[precision](spec, positions)``."""
        from ._checks import check_choice
        from .pipelines import PRECISIONS

        check_choice(precision, "precision", tuple(PRECISIONS))
        return PRECISIONS[precision](spec, positions)

    return precision_cos_sin


def _apply_cos_sin():
    def apply_cos_sin(x, cos, sin, *, pairing: str = "half"):
        """Deprecated: ``apply_rope_tables(x, cos, sin, pairing=pairing)``."""
        from .rotary import apply_rope_tables

        return apply_rope_tables(x, cos, sin, pairing=pairing)

    return apply_cos_sin


# (module, old name) -> (builder of the old callable, its replacement in words)
DEPRECATED = {
    ("refimpl", "precision_cos_sin"): (
        _precision_cos_sin,
        "refimpl.PRECISIONS[precision](spec, positions) or spec.cos_sin(positions, "
        "precision=precision)",
    ),
    ("refimpl", "apply_cos_sin"): (
        _apply_cos_sin,
        "refimpl.apply_rope_tables(x, cos, sin, pairing=pairing)",
    ),
    ("refimpl.multiaxis", "apply_cos_sin"): (
        _apply_cos_sin,
        "refimpl.apply_rope_tables(x, cos, sin, pairing=pairing)",
    ),
}


def deprecated_attribute(module: str, name: str):
    """The old callable ``module.name`` with a DeprecationWarning naming its replacement, or
    AttributeError for a name that never existed."""
    entry = DEPRECATED.get((module, name))
    if entry is None:
        raise AttributeError(f"module {module!r} has no attribute {name!r}")
    build, replacement = entry
    deprecated(f"{module}.{name}", replacement, removed_in=REMOVED_IN, stacklevel=4)
    return build()
