"""Result files of the experiment scripts: what every file holds, and a validator.

Every script under ``experiments/`` writes one JSON document with the keys of
:data:`COMMON_KEYS` (the experiment's name, the command that made it, seeds, versions, the
model and training settings, which parts are pending and why) and a ``"results"`` list whose
entries have the keys :data:`RESULT_KEYS` lists for that experiment. The book reads these
files; the tests check them against this schema.
"""

from __future__ import annotations

import json
import pathlib
import platform
import sys

import numpy as np

__all__ = [
    "COMMON_KEYS",
    "NESTED_KEYS",
    "RESULT_KEYS",
    "SECTION_KEYS",
    "load_result",
    "validate_result",
    "versions",
    "write_result",
]

COMMON_KEYS = (
    "experiment",
    "command",
    "seeds",
    "versions",
    "model",
    "training",
    "pending",
    "results",
)

RESULT_KEYS = {
    "length_generalisation": ("task", "encoding", "final_loss", "eval"),
    "rope_extension": ("task", "method", "eval"),
    "attention_entropy": ("method", "length", "layer", "head", "entropy", "uniform_entropy"),
    "rope_base": ("task", "base", "final_loss", "eval"),
    "nope_hybrid": ("task", "encoding", "layers", "final_loss", "eval", "probe", "attention"),
    "partial_rotary": ("task", "encoding", "rotated_pairs", "inv_freq", "final_loss", "eval"),
}

NESTED_KEYS = {
    "probe": ("layer", "features", "r2"),
    "attention": ("layer", "head", "length", "profile", "uniform"),
}
"""Keys of the entries of a result row's lists other than ``eval`` (where a row has them)."""

SECTION_KEYS = {
    "partial_rotary": {
        "decay": ("encoding", "head_dim", "rotated_pairs", "distance", "bound", "ones_score")
    },
}
"""Further top-level lists of an experiment's file, and the keys of their entries."""

EVAL_KEYS = ("length", "acc", "acc_beyond")


def versions() -> dict:
    """Versions that can change the numbers: Python, NumPy, refimpl, the platform."""
    from .. import __version__

    return {
        "python": platform.python_version(),
        "numpy": np.__version__,
        "refimpl": __version__,
        "platform": platform.platform(),
    }


def validate_result(doc: dict) -> None:
    """Raise ``ValueError`` naming the first key that is missing or malformed.

    Examples
    --------
    >>> validate_result({"experiment": "nope"})
    Traceback (most recent call last):
    ...
    ValueError: result file is missing key 'command'
    """
    for key in COMMON_KEYS:
        if key not in doc:
            raise ValueError(f"result file is missing key {key!r}")
    name = doc["experiment"]
    if name not in RESULT_KEYS:
        raise ValueError(f"experiment must be one of {tuple(RESULT_KEYS)}, got {name!r}")
    if not isinstance(doc["results"], list):
        raise ValueError("results must be a list")
    if not isinstance(doc["pending"], list):
        raise ValueError("pending must be a list")
    for i, row in enumerate(doc["results"]):
        for key in RESULT_KEYS[name]:
            if key not in row:
                raise ValueError(f"results[{i}] of {name} is missing key {key!r}")
        for j, ev in enumerate(row.get("eval", [])):
            for key in EVAL_KEYS:
                if key not in ev:
                    raise ValueError(f"results[{i}].eval[{j}] of {name} is missing key {key!r}")
        for part, keys in NESTED_KEYS.items():
            _check_entries(row.get(part, []), keys, f"results[{i}].{part}", name)
    for section, keys in SECTION_KEYS.get(name, {}).items():
        if not isinstance(doc.get(section), list):
            raise ValueError(f"{section} of {name} must be a list")
        _check_entries(doc[section], keys, section, name)


def _check_entries(entries, keys, where: str, name: str) -> None:
    if not isinstance(entries, list):
        raise ValueError(f"{where} of {name} must be a list")
    for j, entry in enumerate(entries):
        for key in keys:
            if key not in entry:
                raise ValueError(f"{where}[{j}] of {name} is missing key {key!r}")


def write_result(path, doc: dict) -> None:
    """Validate and write ``doc`` as JSON (sorted keys, stable float formatting)."""
    validate_result(doc)
    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n", encoding="utf8")


def load_result(path) -> dict:
    """Read and validate a result file."""
    doc = json.loads(pathlib.Path(path).read_text(encoding="utf8"))
    validate_result(doc)
    return doc


def command_line() -> str:
    """The command that is running, as a string to store in a result file."""
    return " ".join([pathlib.Path(sys.executable).name, *sys.argv])
