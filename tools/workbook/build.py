"""Build the student workbook (and its instructor version) from the book's chapters.

Student notebook, per chapter with exercises: a header, a setup cell, the chapter's text and
worked code as the book shows them (:mod:`.render`: titled theorems and proofs, the figures,
the glued values and the equation numbers of a built book; no build plumbing), and for each
exercise its prompt, an answer cell (the check's stub: ``...`` or a function raising
``NotDoneYet``) and a check cell ``check("ex-label")``. No solution text, code or output.

Instructor notebook (nbgrader's conventions): the same cells, with the solution's prose after
each prompt and the answer cell holding the chapter's solution code between
``### BEGIN SOLUTION`` and ``### END SOLUTION`` (plus the instructor-only bindings of
:mod:`solutions`). Answer cells carry nbgrader metadata ``solution: true``, check cells
``grade: true, locked: true, points: 1``; nbgrader's ``generate_assignment`` then produces a
student version equivalent to ours (with its own stub text), and ``autograde`` scores the check
cells when ``REFIMPL_WORKBOOK_STRICT=1`` makes failing checks raise.

The instructor notebooks are written only when asked for (``make workbook-instructor``), into
their own folder outside the student's.

Usage: ``python -m workbook build [--book book] [--out workbook] [--instructor] [--built _build]``
with ``tools/`` on ``sys.path`` (``make workbook`` and ``make workbook-instructor`` do this).
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
from . import downloads, render
from .chapters import Chapter, Code, Exercise, Text, read_chapter
from .solutions import BINDINGS

ROOT = pathlib.Path(__file__).resolve().parents[2]
CHECKS_FILE = "workbook_checks.py"
#: Bibliography files of the book (``{cite}`` becomes "Author, Year").
BIB_FILES = (
    "references.bib",
    "book/bib/models.bib",
    "book/bib/beyond.bib",
    "book/bib/modalities.bib",
)
IMPORT_RE = re.compile(r"^\s*(?:from\s+(_\w+)\s+import|import\s+(_\w+))", re.M)
#: Data files chapters read by relative paths (``../../experiments/results``,
#: ``../tests/parity/configs``), relative to the repository root: the workbook folder sits at
#: the root, so the paths resolve from it as from book/; the zip keeps them at those places.
DATA_GLOBS = (
    "experiments/results/*.json",
    "tests/parity/configs/*.json",
    "tests/parity/configs/*.md",
    "tests/parity/model_coverage*.json",
    "tests/engines/configs/*.json",
    "benchmarks/results/*.json",
    "examples/*/*.py",
    "examples/*/*.cpp",
)
BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"


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


def support_modules(book: pathlib.Path, sources: list[str] | None = None) -> list[str]:
    """The book's helper modules (``book/_*.py``) that the chapters import, with the helpers
    those import in turn: each is copied beside the notebooks."""
    if sources is None:
        sources = [p.read_text(encoding="utf8") for p in chapter_paths(book)]
    wanted: list[str] = []
    todo = [m for src in sources for pair in IMPORT_RE.findall(src) for m in pair if m]
    while todo:
        name = todo.pop()
        path = book / f"{name}.py"
        if name in wanted or not path.is_file():
            continue
        wanted.append(name)
        found = IMPORT_RE.findall(path.read_text(encoding="utf8"))
        todo += [m for pair in found for m in pair if m]
    return sorted(wanted)


def myst_to_markdown(text: str, ctx: render.Context | None = None) -> str:
    """Rewrite MyST that Jupyter would show raw into Jupyter markdown (:mod:`.render`)."""
    return render.convert_text(text, ctx or render.Context(docname=""))


def _meta(label: str, role: str, nbgrader: dict | None = None) -> dict:
    meta = {"tags": [f"workbook-{role}"], "workbook": {"label": label, "role": role}}
    if nbgrader is not None:
        meta["nbgrader"] = {"schema_version": 3, **nbgrader}
    return meta


def _setup_source(chapter: Chapter, depth: int) -> str:
    """The setup cell: where the checks live, the names the stubs use, the book's figure style."""
    stubs = "\n".join(checks_module.CHECKS[ex.label].stub for ex in chapter.exercises)
    names = ["check"] + [n for n in ("NotDoneYet", "given_mystery") if n in stubs]
    lines = ["# Workbook setup: this chapter's checks (workbook_checks.py, beside the notebook)."]
    if depth:
        up = "/".join([".."] * depth)
        lines += ["import sys", "", f'sys.path.insert(0, "{up}")']
    lines.append(f"from workbook_checks import {', '.join(names)}")
    if render.uses_book_style([p.source for p in chapter.parts if isinstance(p, Code)]):
        lines += ["from _plots import use_book_style", "", "use_book_style()  # the book's figures"]
    return "\n".join(lines) + "\n"


def _header(chapter: Chapter, rel: pathlib.PurePath) -> str:
    n = len(chapter.exercises)
    return (
        f"**Workbook: {chapter.title}** ({n} exercises), from the book's chapter `{rel}`.\n\n"
        "Run the cells from the top (Run > Run All Cells is fine: the answer cells only hold "
        "stubs). For each exercise, replace the `...` (or the body that raises `NotDoneYet`) in "
        "its **answer cell**, run it, then run the **check cell** below it: it prints PASS or "
        "FAIL with a hint. The solutions are not here; they are in the book's dropdowns. "
        "Your answers live in this file only."
    )


def _markdown_cell(source: str, ctx: render.Context, **kwargs):
    """A markdown cell with the figures :mod:`.render` attached while converting it."""
    ctx.attachments = {}
    text = render.convert_text(source, ctx)
    cell = v4.new_markdown_cell(text, **kwargs)
    if ctx.attachments:
        cell["attachments"] = dict(ctx.attachments)
    return cell


def _exercise_cells(ex: Exercise, ids, ctx: render.Context, *, instructor: bool) -> list:
    spec = checks_module.CHECKS[ex.label]
    prompt = (
        f"### Exercise: {ex.title}\n\n`{ex.label}`\n\n"
        f"{ex.prompt}\n\n**How it is checked.** {spec.how}"
    )
    cells = [_markdown_cell(prompt, ctx, metadata=_meta(ex.label, "prompt"), id=next(ids))]
    if instructor:
        if ex.solution_text:
            text = render.convert_text("\n\n".join(ex.solution_text), ctx)
            cells.append(
                v4.new_markdown_cell(
                    "**Solution.** " + text, metadata=_meta(ex.label, "solution"), id=next(ids)
                )
            )
        code = [render.strip_plumbing(src) for src in ex.solution_code]
        answer = "\n\n".join([BEGIN, *code, BINDINGS.get(ex.label, ""), END])
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


def chapter_notebook(
    chapter: Chapter,
    rel: pathlib.PurePath,
    *,
    instructor: bool = False,
    ctx: render.Context | None = None,
):
    """The workbook notebook of one chapter (student version unless ``instructor``)."""
    stem = re.sub(r"[^A-Za-z0-9-]", "-", str(rel.with_suffix("")))
    ids = (f"{stem}-{n}" for n in range(10**6))
    if ctx is None:
        ctx = render.Context(docname=f"book/{rel.with_suffix('').as_posix()}")
    cells = [
        v4.new_markdown_cell(_header(chapter, rel), metadata=_meta("", "header"), id=next(ids)),
        v4.new_code_cell(
            _setup_source(chapter, len(rel.parts) - 1),
            metadata=_meta("", "setup"),
            id=next(ids),
        ),
    ]
    for part in chapter.parts:
        if isinstance(part, Text):
            cells.append(_markdown_cell(part.source, ctx, id=next(ids)))
        elif isinstance(part, Code):
            source = render.strip_plumbing(part.source)
            if not source.strip():
                continue  # build plumbing only: the book's figure and values are in the text
            tags = [t for t in part.metadata.get("tags", []) if not t.startswith("remove")]
            cells.append(v4.new_code_cell(source, metadata={"tags": tags}, id=next(ids)))
        else:
            cells += _exercise_cells(part, ids, ctx, instructor=instructor)
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


def _contexts(book: pathlib.Path, chapters: dict, built: pathlib.Path | None) -> dict:
    """One :class:`render.Context` per chapter, sharing the built book's numbers and values."""
    book_build = render.BookBuild.read(built)
    root = book.parent
    titles = {}
    for path in sorted(book.rglob("*.md")):
        rel = path.relative_to(book)
        if any(p.startswith((".", "_")) for p in rel.parts):
            continue
        head = re.search(r"^# (.+)$", path.read_text(encoding="utf8"), re.M)
        titles[f"book/{rel.with_suffix('').as_posix()}"] = head.group(1) if head else rel.stem
    notebooks = {
        f"book/{p.relative_to(book).with_suffix('').as_posix()}": p.relative_to(book)
        .with_suffix(".ipynb")
        .as_posix()
        for p in chapters
    }
    bibs = [root / b for b in BIB_FILES if (root / b).is_file()]
    cites = render.citations(bibs) if bibs else {}
    return {
        p: render.Context(
            docname=f"book/{p.relative_to(book).with_suffix('').as_posix()}",
            book=book_build,
            titles=titles,
            notebooks=notebooks,
            citations=cites,
            source_dir=p.parent,
        )
        for p in chapters
    }


def build(
    book: pathlib.Path,
    out: pathlib.Path,
    *,
    instructor: bool = False,
    overwrite: bool = True,
    built: pathlib.Path | None = None,
) -> list[pathlib.Path]:
    """Write the student workbook into ``out`` (the instructor's with ``instructor=True``).

    Returns the notebooks written or kept. With ``overwrite=False`` an existing student
    notebook is kept (it holds a student's answers); the checks module is always refreshed.
    ``built`` is a built book's folder (``_build``): the notebooks then show its equation and
    figure numbers, its glued values and its figures. The instructor notebooks are never
    written beside the student's: give them their own ``out`` outside the student's folder.

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
    contexts = _contexts(book, chapters, built)
    written = []
    for path, ch in chapters.items():
        rel = path.relative_to(book)
        dest = (out / rel).with_suffix(".ipynb")
        written.append(dest)
        if not instructor and not overwrite and dest.exists():
            continue
        dest.parent.mkdir(parents=True, exist_ok=True)
        nb = chapter_notebook(ch, rel, instructor=instructor, ctx=contexts[path])
        tmp = dest.with_suffix(".ipynb.tmp")
        nbformat.write(nb, tmp)
        tmp.replace(dest)
    (out / CHECKS_FILE).write_text(checks_source(), encoding="utf8")
    for name in support_modules(book, [p.read_text(encoding="utf8") for p in chapters]):
        shutil.copyfile(book / f"{name}.py", out / f"{name}.py")
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
    workbook: pathlib.Path,
    zip_path: pathlib.Path,
    *,
    root: pathlib.Path = ROOT,
    wheel: pathlib.Path | None = None,
) -> pathlib.Path:
    """Zip the workbook as ``workbook/...`` plus the data files its chapters read
    (:data:`DATA_GLOBS`, at their place relative to the workbook); with ``wheel``, the package's
    wheel and a README that installs it (the zip then runs without a clone)."""
    workbook, zip_path = pathlib.Path(workbook), pathlib.Path(zip_path)
    zip_path.parent.mkdir(parents=True, exist_ok=True)
    tmp = zip_path.with_suffix(".zip.tmp")
    # list the files before the archive exists: the zip may be written inside the workbook
    # folder (the book's download), and must never contain itself or the chapters' zips
    members = [
        f
        for f in sorted(workbook.rglob("*"))
        if f not in (tmp, zip_path) and f.suffix not in (".zip", ".tmp", ".whl")
    ]
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
        for f in members:
            rel = f.relative_to(workbook)
            hidden = any(p.startswith((".", "_wheel")) or p == "__pycache__" for p in rel.parts)
            if f.is_file() and not hidden:
                z.write(f, pathlib.PurePosixPath("workbook", *rel.parts))
        for pattern in DATA_GLOBS:
            for f in sorted(root.glob(pattern)):
                z.write(f, f.relative_to(root).as_posix())
        if wheel is not None:
            pinned = downloads.pins(root / "pyproject.toml")
            sources = [p.read_text(encoding="utf8") for p in chapter_paths(root / "book")]
            text = downloads.readme(
                "refimpl",
                "workbook",
                wheel.name,
                downloads.requirements(sources, pinned),
                pinned.get(downloads.OPENER, downloads.OPENER),
            )
            z.writestr("README.md", text)
            z.write(wheel, wheel.name)
    tmp.replace(zip_path)
    return zip_path


def write_downloads(
    book: pathlib.Path,
    workbook: pathlib.Path,
    *,
    root: pathlib.Path = ROOT,
    wheel_dir: pathlib.Path | None = None,
) -> dict[str, pathlib.Path]:
    """One standalone zip per chapter notebook of ``workbook`` (:mod:`.downloads`), written
    beside the notebook as ``<chapter>.zip``. Returns ``{docname: zip path}``."""
    wheel = downloads.build_wheel(root, wheel_dir or workbook / "_wheel")
    pinned = downloads.pins(root / "pyproject.toml")
    out = {}
    for path in chapter_paths(book):
        rel = path.relative_to(book)
        notebook = (workbook / rel).with_suffix(".ipynb")
        if not notebook.is_file():
            continue
        chapter = read_chapter(path)
        sources = [p.source for p in chapter.parts if isinstance(p, Code)]
        sources += [c for ex in chapter.exercises for c in ex.solution_code]
        sources.append(path.read_text(encoding="utf8"))
        out[f"book/{rel.with_suffix('').as_posix()}"] = downloads.chapter_zip(
            workbook=workbook,
            notebook=notebook,
            modules=support_modules(book, sources),
            data=downloads.data_files(sources, root),
            wheel=wheel,
            root=root,
            title=chapter.title,
            reqs=downloads.requirements(sources, pinned),
            zip_path=notebook.with_name(f"refimpl-{notebook.stem}.zip"),
        )
    return out
