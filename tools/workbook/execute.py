"""Run a workbook notebook the way a student would, then with the book's solutions injected,
in one kernel, and collect every check's verdict (used by the tests and ``make workbook-test``).

The student notebook runs top to bottom (its answer cells hold the stubs); then, for each
exercise in order, the chapter's solution code (with the instructor-only bindings) and the
check run again. Both rounds of verdicts come back as ``{label: (passed, hint)}``.

The kernels are forked from one process per test process that has imported the heavy modules
once (``tools/fork_kernel.py``), started at the first run and stopped when the process exits.
"""

from __future__ import annotations

import atexit
import contextlib
import copy
import json
import pathlib

import fork_kernel  # tools/fork_kernel.py: tools/ is on the path beside this package
import nbclient
from nbformat import v4

from . import render
from .chapters import Chapter
from .solutions import BINDINGS

STUB_MARK, SOLVED_MARK = "@@workbook-stub@@", "@@workbook-solved@@"
#: Seconds a kernel may take to start: nbclient's 60 s is too short on a loaded 2-core machine
#: running several notebooks at once.
KERNEL_STARTUP_S = 300
_DUMP = (
    "import json as _json, workbook_checks as _wc\n"
    "print({mark!r} + _json.dumps({{k: [bool(g), g.hint] for k, g in _wc.RESULTS.items()}}))\n"
    "_wc.RESULTS.clear()"
)


def solution_source(ex) -> str:
    """The code an instructor's answer cell runs: the chapter's solution (without the book's
    build plumbing, which the workbook does not import) plus its binding."""
    code = [render.strip_plumbing(src) for src in ex.solution_code]
    return "\n\n".join([*code, BINDINGS.get(ex.label, "")]).strip() + "\n"


def with_solutions(nb, chapter: Chapter):
    """The student notebook followed by a dump of its verdicts, every solution and its check,
    and a second dump."""
    nb = copy.deepcopy(nb)
    nb.cells.append(v4.new_code_cell(_DUMP.format(mark=STUB_MARK)))
    for ex in chapter.exercises:
        nb.cells.append(v4.new_code_cell(solution_source(ex)))
        nb.cells.append(v4.new_code_cell(f'check("{ex.label}")'))
    nb.cells.append(v4.new_code_cell(_DUMP.format(mark=SOLVED_MARK)))
    for i, cell in enumerate(nb.cells):
        cell["id"] = f"run-{i}"
    return nb


def _verdicts(nb, mark: str) -> dict:
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            text = out.get("text", "")
            if out.get("output_type") == "stream" and mark in text:
                payload = text.split(mark, 1)[1].splitlines()[0]
                return {k: tuple(v) for k, v in json.loads(payload).items()}
    raise RuntimeError(f"no {mark} output: the notebook stopped before it")


_KERNELS = contextlib.ExitStack()
atexit.register(_KERNELS.close)
_kernels_open = False


def _forked_kernels() -> None:
    """Open the forked-kernel context once for this process."""
    global _kernels_open
    if not _kernels_open:
        _KERNELS.enter_context(fork_kernel.forked_kernels())
        _kernels_open = True


def run(nb, chapter: Chapter, cwd: pathlib.Path, *, timeout: int = 600) -> tuple[dict, dict]:
    """Execute the student notebook ``nb`` in ``cwd`` (its folder in the workbook) with its
    stubs, then with the solutions of ``chapter`` injected.

    Returns
    -------
    (stub_verdicts, solved_verdicts) : dict, dict
        ``{label: (passed, hint)}`` from the stub round and from the solution round.
    """
    nb = with_solutions(nb, chapter)
    _forked_kernels()
    client = nbclient.NotebookClient(
        nb,
        timeout=timeout,
        startup_timeout=KERNEL_STARTUP_S,
        kernel_name="python3",
        resources={"metadata": {"path": str(cwd)}},
    )
    client.execute()
    return _verdicts(nb, STUB_MARK), _verdicts(nb, SOLVED_MARK)
