"""The quickstart's torch example (a code block the page shows but does not execute) runs.

The block is taken from book/quickstart.md by its first line, so the test runs exactly what
readers see; it needs torch (the `parity` extra) and runs on CUDA when present.
"""

import pathlib
import re

import pytest

QUICKSTART = pathlib.Path(__file__).resolve().parents[1] / "book" / "quickstart.md"
MARKER = "# check a torch kernel with refimpl"


def _example() -> str:
    blocks = re.findall(r"```python\n(.*?)```", QUICKSTART.read_text("utf8"), flags=re.S)
    found = [b for b in blocks if b.startswith(MARKER)]
    assert len(found) == 1, f"expected one ```python block starting with {MARKER!r}"
    return found[0]


def test_quickstart_torch_example_checks_ok():
    pytest.importorskip("torch", reason="the example needs torch (pip install -e .[parity])")
    namespace: dict = {}
    exec(compile(_example(), str(QUICKSTART), "exec"), namespace)  # asserts report.ok inside
    assert namespace["report"].ok
    assert namespace["report"].pairing == "half"
