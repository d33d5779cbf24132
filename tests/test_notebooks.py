"""Execute every book notebook (MyST text notebooks) in place; a failing cell fails the test.

Each page is executed once per `make test`. The book build of `make test` (`jupyter-book build
. -W --keep-going --all`) executes every page listed in `_toc.yml`, and with `-W` a failing
cell fails the build. When the environment variable ``REFIMPL_BOOK_BUILD_EXECUTES=1`` says
that such a build follows in the same run, this test skips the pages the build executes and
runs only the text notebooks the build does not (pages not in the table of contents). Without
the variable (e.g. `pytest tests/test_notebooks.py -k rope`) every page is executed here: the
fast way to check one page.
"""

import os
import pathlib
import re

import jupytext
import nbclient
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
BOOK = ROOT / "book"
BUILD_EXECUTES = os.environ.get("REFIMPL_BOOK_BUILD_EXECUTES") == "1"


def _is_text_notebook(p: pathlib.Path) -> bool:
    head = p.read_text(encoding="utf8")[:3000]
    if not head.startswith("---"):
        return False
    parts = head.split("---", 2)
    return len(parts) > 2 and "kernelspec:" in parts[1]


def _pages_in_toc() -> set[pathlib.Path]:
    """The pages the book build executes: every `file:` entry of _toc.yml (and `root:`)."""
    toc = (ROOT / "_toc.yml").read_text(encoding="utf8")
    entries = re.findall(r"^\s*(?:-\s*)?(?:file|root):\s*(\S+)", toc, flags=re.MULTILINE)
    return {(ROOT / e).with_suffix(".md").resolve() for e in entries}


NOTEBOOKS = sorted(
    p
    for p in BOOK.rglob("*.md")
    if "_build" not in p.parts
    and not any(part.startswith(".") for part in p.relative_to(BOOK).parts)
    and _is_text_notebook(p)
)


@pytest.mark.notebook
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: str(p.relative_to(ROOT)))
def test_notebook_executes(path):
    if BUILD_EXECUTES and path.resolve() in _pages_in_toc():
        pytest.skip("executed by the book build of this run (REFIMPL_BOOK_BUILD_EXECUTES=1)")
    nb = jupytext.read(path)
    timeout = nb.metadata.get("mystnb", {}).get("execution_timeout", 300)
    client = nbclient.NotebookClient(
        nb,
        timeout=timeout,
        kernel_name=nb.metadata.get("kernelspec", {}).get("name", "python3"),
        resources={"metadata": {"path": str(path.parent)}},
    )
    client.execute()


def test_toc_pages_are_found():
    # the skip above relies on reading _toc.yml; every page it lists must exist
    pages = _pages_in_toc()
    assert len(pages) > 10
    missing = sorted(str(p.relative_to(ROOT)) for p in pages if not p.exists())
    assert not missing, f"_toc.yml lists pages that do not exist: {missing}"
