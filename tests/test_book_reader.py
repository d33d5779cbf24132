"""What a reader sees on each page: no build plumbing in shown code, no long pastes of source.

Shown code cells teach; the lines that only make the page build (gluing values and figures for
the prose, the plotting style, closing figures, import paths) go in cells tagged
``remove-input`` or ``remove-cell``, where the reader sees their output but not their code.
Reference code on a page is short and states the formula (the package's source is one click
away in the API pages), so a ``literalinclude`` of a private function is not reference code.

Run ``python tests/test_book_reader.py`` to list the offending cells of every page.
"""

from __future__ import annotations

import pathlib
import re
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
BOOK = ROOT / "book"

# lines that serve the build, not the reader
PLUMBING = re.compile(
    r"sys\.path|use_book_style|plt\.close|\bglue_value\(|\bglue_figure\(|\bglue\(|"
    r"from _plots import|import _plots|from myst_nb import"
)
HIDDEN_TAGS = ("remove-input", "remove-cell", "hide-input")
SKIP_PAGES = {"exercises.md", "bibliography.md"}

_CELL = re.compile(r"^```\{code-cell\}[^\n]*\n(.*?)^```", re.S | re.M)
_INCLUDE = re.compile(r"^```\{literalinclude\}[^\n]*\n(.*?)^```", re.S | re.M)


def _tags(cell: str) -> str:
    head = []
    for line in cell.splitlines():
        if line.startswith(":") or line.strip() in ("---", "") or line.startswith("tags:"):
            head.append(line)
            continue
        break
    return "\n".join(head)


def shown_plumbing(text: str) -> list[str]:
    """The first plumbing line of each shown (untagged) code cell of a page."""
    found = []
    for cell in _CELL.findall(text):
        if any(tag in _tags(cell) for tag in HIDDEN_TAGS):
            continue
        for line in cell.splitlines():
            if PLUMBING.search(line):
                found.append(line.strip())
                break
    return found


def private_includes(text: str) -> list[str]:
    """``literalinclude`` directives that paste a private (underscore) function of the package."""
    found = []
    for body in _INCLUDE.findall(text):
        m = re.search(r":pyobject:\s*(\S+)", body)
        if m and m.group(1).split(".")[-1].startswith("_"):
            found.append(m.group(1))
    return found


def pages() -> list[pathlib.Path]:
    return sorted(
        p
        for p in BOOK.rglob("*.md")
        if "_build" not in p.parts and p.name not in SKIP_PAGES and not p.name.startswith("api")
    )


def test_detectors_find_what_they_look_for():
    page = (
        "```{code-cell} ipython3\n:tags: [remove-input]\nglue('x', 1)\n```\n"
        "```{code-cell} ipython3\nx = 1\nglue_value('x', x)\n```\n"
        "```{literalinclude} ../refimpl/check.py\n:pyobject: _fit\n```\n"
        "```{literalinclude} ../refimpl/check.py\n:pyobject: check_rope\n```\n"
    )
    assert shown_plumbing(page) == ["glue_value('x', x)"]
    assert private_includes(page) == ["_fit"]


@pytest.mark.parametrize("path", pages(), ids=lambda p: str(p.relative_to(BOOK)))
def test_shown_code_has_no_build_plumbing(path):
    found = shown_plumbing(path.read_text("utf8"))
    assert not found, (
        f"{path.name}: shown code cells contain build plumbing (move these lines to a cell "
        f"tagged remove-input): {found}"
    )


@pytest.mark.parametrize("path", pages(), ids=lambda p: str(p.relative_to(BOOK)))
def test_no_pastes_of_private_functions(path):
    found = private_includes(path.read_text("utf8"))
    assert not found, (
        f"{path.name}: pastes private package functions {found}; show short reference code "
        "that states the formula and assert it equals the package instead"
    )


if __name__ == "__main__":
    for p in pages():
        text = p.read_text("utf8")
        for line in shown_plumbing(text):
            print(f"{p.relative_to(BOOK)}: shown plumbing: {line}")
        for name in private_includes(text):
            print(f"{p.relative_to(BOOK)}: private paste: {name}")
    sys.exit(0)
