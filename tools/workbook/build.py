"""Build the student workbook (and its instructor version) from the book's chapters.

Student notebook, per chapter with exercises: a header, a setup cell, the chapter's text and
worked code, and for each exercise its prompt, an answer cell (the check's stub: ``...`` or a
function raising ``NotDoneYet``) and a check cell ``check("ex-label")``. No solution text,
code or output.

Instructor notebook (nbgrader's conventions): the same cells, with the solution's prose after
each prompt and the answer cell holding the chapter's solution code between
``### BEGIN SOLUTION`` and ``### END SOLUTION`` (plus the instructor-only bindings of
:mod:`solutions`). Answer cells carry nbgrader metadata ``solution: true``, check cells
``grade: true, locked: true, points: 1``; nbgrader's ``generate_assignment`` then produces a
student version equivalent to ours (with its own stub text), and ``autograde`` scores the check
cells when ``REFIMPL_WORKBOOK_STRICT=1`` makes failing checks raise.

Usage: ``python -m workbook build [--book book] [--out workbook] [--instructor DIR] [--zip FILE]``
with ``tools/`` on ``sys.path`` (``make workbook`` does this).
"""

from __future__ import annotations

import ast
import pathlib
import re
import shutil
import zipfile

import nbformat
from nbformat import v4

from . import checks as checks_module
from .chapters import Chapter, Code, Exercise, Text, read_chapter
from .solutions import BINDINGS

ROOT = pathlib.Path(__file__).resolve().parents[2]
CHECKS_FILE = "workbook_checks.py"
#: Files the notebooks import, copied to the workbook's root.
SUPPORT = {"book/_plots.py": "_plots.py"}
#: Data files chapters read by relative paths (``../../experiments/results``,
#: ``../tests/parity/configs``), relative to the repository root: the workbook folder sits at
#: the root, so the paths resolve from it as from book/; the zip keeps them at those places.
DATA_GLOBS = (
    "experiments/results/*.json",
    "tests/parity/configs/*.json",
    "tests/parity/configs/*.md",
    "tests/engines/configs/*.json",
    "benchmarks/results/*.json",
    "examples/*/*.py",
    "examples/*/*.cpp",
)
BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"
ROLE_RE = re.compile(r"\{(?P<role>[\w:-]+)\}`(?P<body>[^`]*)`")
#: A one-line glue call that hides its value: the book shows it through a {glue} directive,
#: which a notebook cannot, so the workbook displays it in the cell's output instead.
HIDDEN_GLUE_RE = re.compile(r"^(?P<call>\s*glue\(.*?),\s*display\s*=\s*False\s*\)\s*$", re.M)


def chapter_paths(book: pathlib.Path) -> list[pathlib.Path]:
    """The chapters (MyST text notebooks) of ``book``, its subfolders included, sorted."""
    out = []
    for p in sorted(book.rglob("*.md")):
        rel = p.relative_to(book)
        if any(part.startswith((".", "_")) for part in rel.parts):
            continue  # .ipynb_checkpoints, _build, ...
        head = p.read_text(encoding="utf8")[:2000]
        if head.startswith("---") and "kernelspec:" in head.split("---", 2)[1]:
            out.append(p)
    return out


def myst_to_markdown(text: str) -> str:
    """Rewrite MyST roles that Jupyter would show raw into plain Markdown."""

    def role(m: re.Match) -> str:
        kind, body = m.group("role"), m.group("body")
        target = re.match(r"(?P<text>.*?)\s*<(?P<target>[^>]+)>$", body)
        shown = target.group("text") if target else body
        if kind == "eq":
            return f"({body})"
        if kind.startswith("cite"):
            return f"[{body}]"
        if kind == "math":
            return f"${body}$"
        if kind.startswith("glue"):
            return "(value computed in the book)"
        if kind == "doc":
            return f"*{shown}* (chapter)"
        return f"*{shown}*" if kind in ("ref", "prf:ref", "numref", "term") else shown

    return ROLE_RE.sub(role, text)


def show_glued(source: str) -> str:
    """Make one-line ``glue(..., display=False)`` calls display their value."""
    return HIDDEN_GLUE_RE.sub(lambda m: m.group("call") + ")", source)


def _meta(label: str, role: str, nbgrader: dict | None = None) -> dict:
    meta = {"tags": [f"workbook-{role}"], "workbook": {"label": label, "role": role}}
    if nbgrader is not None:
        meta["nbgrader"] = {"schema_version": 3, **nbgrader}
    return meta


def _setup_source(depth: int) -> str:
    up = "" if depth == 0 else "sys.path.insert(0, str(pathlib.Path.cwd().parent))\n"
    return (
        "# Workbook setup: the checks of this chapter's exercises (workbook_checks.py).\n"
        "import pathlib\nimport sys\n\n" + up + "from workbook_checks import NotDoneYet, "
        "check, given_mystery  # noqa: F401\n"
    )


def _header(chapter: Chapter, rel: pathlib.PurePath) -> str:
    n = len(chapter.exercises)
    return (
        f"**Workbook: {chapter.title}** ({n} exercises), generated from `book/{rel}`.\n\n"
        "Run the cells from the top (Run > Run All Cells is fine: the answer cells only hold "
        "stubs). For each exercise, replace the `...` (or the body that raises `NotDoneYet`) in "
        "its **answer cell**, run it, then run the **check cell** below it: it prints PASS or "
        "FAIL with a hint. The solutions are not here; they are in the book's dropdowns. "
        "Your answers live in this file only (`make workbook` does not overwrite a workbook "
        "that exists; `make workbook-clean` starts afresh)."
    )


def _exercise_cells(ex: Exercise, ids, *, instructor: bool) -> list:
    spec = checks_module.CHECKS[ex.label]
    prompt = (
        f"### Exercise: {myst_to_markdown(ex.title)}\n\n`{ex.label}`\n\n"
        f"{myst_to_markdown(ex.prompt)}\n\n**How it is checked.** {spec.how}"
    )
    cells = [v4.new_markdown_cell(prompt, metadata=_meta(ex.label, "prompt"), id=next(ids))]
    if instructor:
        if ex.solution_text:
            text = myst_to_markdown("\n\n".join(ex.solution_text))
            cells.append(
                v4.new_markdown_cell(
                    "**Solution.** " + text, metadata=_meta(ex.label, "solution"), id=next(ids)
                )
            )
        answer = "\n\n".join([BEGIN, *ex.solution_code, BINDINGS.get(ex.label, ""), END])
        answer = re.sub(r"\n{3,}", "\n\n", answer)
        nbg = {"solution": True, "grade": False, "locked": False, "grade_id": ex.label}
    else:
        answer, nbg = spec.stub, None
    cells.append(
        v4.new_code_cell(
            f"# Your answer: {ex.label}\n{answer}",
            metadata=_meta(ex.label, "answer", nbg),
            id=next(ids),
        )
    )
    check_nbg = {
        "solution": False,
        "grade": True,
        "locked": True,
        "points": 1,
        "grade_id": f"{ex.label}-check",
    }
    cells.append(
        v4.new_code_cell(
            f'check("{ex.label}")',
            metadata=_meta(ex.label, "check", check_nbg if instructor else None),
            id=next(ids),
        )
    )
    return cells


def chapter_notebook(chapter: Chapter, rel: pathlib.PurePath, *, instructor: bool = False):
    """The workbook notebook of one chapter (student version unless ``instructor``)."""
    stem = re.sub(r"[^A-Za-z0-9-]", "-", str(rel.with_suffix("")))
    ids = (f"{stem}-{n}" for n in range(10**6))
    cells = [
        v4.new_markdown_cell(_header(chapter, rel), metadata=_meta("", "header"), id=next(ids)),
        v4.new_code_cell(
            _setup_source(len(rel.parts) - 1), metadata=_meta("", "setup"), id=next(ids)
        ),
    ]
    for part in chapter.parts:
        if isinstance(part, Text):
            cells.append(v4.new_markdown_cell(myst_to_markdown(part.source), id=next(ids)))
        elif isinstance(part, Code):
            tags = list(part.metadata.get("tags", []))
            source = show_glued(part.source)
            cells.append(v4.new_code_cell(source, metadata={"tags": tags}, id=next(ids)))
        else:
            cells += _exercise_cells(part, ids, instructor=instructor)
    nb = v4.new_notebook(cells=cells)
    nb.metadata = {
        "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
        "language_info": {"name": "python"},
        "workbook": {"source": f"book/{rel}", "instructor": instructor},
    }
    return nb


def missing_checks(chapters: list[Chapter]) -> list[str]:
    """Labels of exercises that have no check (the build refuses them)."""
    return [
        ex.label for ch in chapters for ex in ch.exercises if ex.label not in checks_module.CHECKS
    ]


def build(
    book: pathlib.Path,
    out: pathlib.Path,
    *,
    instructor: pathlib.Path | None = None,
    overwrite: bool = True,
) -> list[pathlib.Path]:
    """Write the student workbook into ``out`` (and the instructor one into ``instructor``).

    Returns the student notebooks written. With ``overwrite=False`` an existing notebook is
    kept (it holds a student's answers); the checks module is always refreshed.

    Raises
    ------
    ValueError
        When a chapter has an exercise without a check, or a solution is missing.
    """
    book, out = pathlib.Path(book), pathlib.Path(out)
    chapters = {p: read_chapter(p) for p in chapter_paths(book)}
    chapters = {p: ch for p, ch in chapters.items() if ch.exercises}
    missing = missing_checks(list(chapters.values()))
    if missing:
        raise ValueError(f"exercises without a check in tools/workbook/checks.py: {missing}")
    unsolved = [ex.label for ch in chapters.values() for ex in ch.exercises if not ex.solved]
    if unsolved:
        raise ValueError(f"exercises without a solution: {unsolved}")
    written = []
    for path, ch in chapters.items():
        rel = path.relative_to(book)
        targets = [(out, False)] + ([(pathlib.Path(instructor), True)] if instructor else [])
        for root, is_instructor in targets:
            dest = (root / rel).with_suffix(".ipynb")
            if not is_instructor and not overwrite and dest.exists():
                written.append(dest)
                continue
            dest.parent.mkdir(parents=True, exist_ok=True)
            nb = chapter_notebook(ch, rel, instructor=is_instructor)
            tmp = dest.with_suffix(".ipynb.tmp")
            nbformat.write(nb, tmp)
            tmp.replace(dest)
            if not is_instructor:
                written.append(dest)
    for root in [out] + ([pathlib.Path(instructor)] if instructor else []):
        (root / CHECKS_FILE).write_text(checks_source(), encoding="utf8")
        for src, name in SUPPORT.items():
            shutil.copyfile(
                book.parent / src if not pathlib.Path(src).is_absolute() else src, root / name
            )
    return written


def _standalone(text: str) -> str:
    """A check file's text without the lines that tie it to the package: its
    ``from __future__`` import, its relative imports of :mod:`tools.workbook.checks` and any
    ``if __package__:`` block (in the workbook those names are already defined above it)."""
    drop = set()
    for node in ast.parse(text).body:
        tied = (
            isinstance(node, ast.ImportFrom) and (node.level or node.module == "__future__")
        ) or (
            isinstance(node, ast.If)
            and isinstance(node.test, ast.Name)
            and node.test.id == "__package__"
        )
        if tied:
            drop.update(range(node.lineno, node.end_lineno + 1))
    return "\n".join(line for i, line in enumerate(text.splitlines(), 1) if i not in drop)


def checks_source() -> str:
    """The text of the workbook's ``workbook_checks.py``: ``checks.py`` followed by the check
    files it imports (:data:`tools.workbook.checks.EXTRA_CHECK_MODULES`), one module."""
    base = pathlib.Path(checks_module.__file__)
    parts = [_standalone(base.read_text("utf8"))]
    for name in checks_module.EXTRA_CHECK_MODULES:
        parts.append(_standalone(base.with_name(f"{name}.py").read_text("utf8")))
    return "from __future__ import annotations\n\n" + "\n\n\n".join(parts) + "\n"


def make_zip(
    workbook: pathlib.Path, zip_path: pathlib.Path, *, root: pathlib.Path = ROOT
) -> pathlib.Path:
    """Zip the workbook as ``workbook/...`` plus the data files its chapters read
    (:data:`DATA_GLOBS`, at their place relative to the workbook)."""
    workbook, zip_path = pathlib.Path(workbook), pathlib.Path(zip_path)
    zip_path.parent.mkdir(parents=True, exist_ok=True)
    tmp = zip_path.with_suffix(".zip.tmp")
    # list the files before the archive exists: the zip may be written inside the workbook
    # folder (the book's download), and must never contain itself
    members = [f for f in sorted(workbook.rglob("*")) if f not in (tmp, zip_path)]
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
        for f in members:
            rel = f.relative_to(workbook)
            if f.is_file() and not any(p.startswith(".") or p == "__pycache__" for p in rel.parts):
                z.write(f, pathlib.PurePosixPath("workbook", *rel.parts))
        for pattern in DATA_GLOBS:
            for f in sorted(root.glob(pattern)):
                z.write(f, f.relative_to(root).as_posix())
    tmp.replace(zip_path)
    return zip_path
