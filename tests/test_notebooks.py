"""Execute every book notebook (MyST text notebooks) in place; a failing cell fails the test."""

import pathlib

import jupytext
import nbclient
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
BOOK = ROOT / "book"


def _is_text_notebook(p: pathlib.Path) -> bool:
    head = p.read_text(encoding="utf8")[:3000]
    if not head.startswith("---"):
        return False
    parts = head.split("---", 2)
    return len(parts) > 2 and "kernelspec:" in parts[1]


NOTEBOOKS = sorted(
    p for p in BOOK.rglob("*.md") if "_build" not in p.parts and _is_text_notebook(p)
)


@pytest.mark.notebook
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: str(p.relative_to(ROOT)))
def test_notebook_executes(path):
    nb = jupytext.read(path)
    timeout = nb.metadata.get("mystnb", {}).get("execution_timeout", 300)
    client = nbclient.NotebookClient(
        nb,
        timeout=timeout,
        kernel_name=nb.metadata.get("kernelspec", {}).get("name", "python3"),
        resources={"metadata": {"path": str(path.parent)}},
    )
    client.execute()
