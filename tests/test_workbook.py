"""The student workbook (tools/workbook): every exercise of the book has a check; the student
notebooks hold the chapter without its solutions and read like the book (titled theorems, the
figures, the glued values, numbered equations, no build plumbing, every helper module copied);
run with their stubs every check fails with a hint and nothing crashes; run with the book's
solutions injected every check passes; no check output gives a reference value away; the
instructor notebooks follow nbgrader's conventions and live apart; each chapter's download
installs and runs without a clone; the Sphinx extension links the downloads.

With a built book in ``_build`` (``make test`` builds it first and sets REFIMPL_BUILT_BOOK=1,
which makes it required) the notebooks are rendered with its numbers, values and figures.
``make test-workbook`` (REFIMPL_WORKBOOK_FULL=1) runs every notebook whole (Run All) and
installs a chapter's download into a fresh virtual environment; ``make test`` runs whole the
notebooks of :data:`RUN_ALL_IN_MAKE_TEST` and the statements the exercises need of the others.
"""

from __future__ import annotations

import ast
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import zipfile

import nbformat
import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
BOOK = ROOT / "book"
sys.path.insert(0, str(ROOT / "tools"))
sys.path.insert(0, str(BOOK / "_ext"))

from workbook import build as wb  # noqa: E402
from workbook import checks, downloads, execute, render, slicing  # noqa: E402
from workbook.chapters import Code, Exercise, read_chapter  # noqa: E402

CHAPTERS = {p: read_chapter(p) for p in wb.chapter_paths(BOOK)}
WITH_EXERCISES = {p: ch for p, ch in CHAPTERS.items() if ch.exercises}
LABELS = {ex.label: p for p, ch in WITH_EXERCISES.items() for ex in ch.exercises}
#: REFIMPL_WORKBOOK_FULL=1 runs each whole student notebook (Run All) instead of the worked
#: statements its exercises need (tools/workbook/slicing.py), and installs a download.
FULL = os.environ.get("REFIMPL_WORKBOOK_FULL") == "1"
#: Notebooks that `make test` runs whole (Run All) on top of the sliced run of every notebook:
#: one per kind of thing a notebook needs (a helper module beside _plots and data files read
#: by relative path from a subfolder; SymPy proofs and figures; real configs and tables).
RUN_ALL_IN_MAKE_TEST = ("experiments/nope-partial", "rope", "models-hybrid")
BUILD = pathlib.Path(os.environ.get("REFIMPL_BOOK_HTML", ROOT / "_build" / "html")).parent
BUILT_BOOK_REQUIRED = os.environ.get("REFIMPL_BUILT_BOOK") == "1"
HAVE_BUILT_BOOK = (BUILD / "html" / "index.html").is_file()
#: The workbook the book build wrote (book/_ext/workbook_downloads.py). When the run requires a
#: fresh built book (make test), the tests read it, as readers download it, instead of
#: building another.
BUILT_WORKBOOK = BUILD / "html" / "_workbook"
FROM_BUILD = BUILT_BOOK_REQUIRED and (BUILT_WORKBOOK / wb.CHECKS_FILE).is_file()


def _id(p: pathlib.Path) -> str:
    return str(p.relative_to(BOOK).with_suffix(""))


def _require_built_book():
    if BUILT_BOOK_REQUIRED and not HAVE_BUILT_BOOK:
        pytest.fail(f"no built book in {BUILD}: `make test` builds it before pytest runs")


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The student workbook (and, apart, the instructor's) built into a temporary folder laid
    out as in the repository, rendered with the built book when there is one."""
    _require_built_book()
    root = tmp_path_factory.mktemp("wb")
    for top in (
        "experiments",
        "examples",
        "tests",
        "benchmarks",
    ):  # what chapters read by relative paths
        if (ROOT / top).is_dir():
            (root / top).symlink_to(ROOT / top, target_is_directory=True)
    if FROM_BUILD:
        # real folders holding links to the built files: a notebook's relative paths
        # (../tests/parity/configs) then resolve from root/workbook, not from _build/html
        for src in sorted(BUILT_WORKBOOK.rglob("*")):
            dst = root / "workbook" / src.relative_to(BUILT_WORKBOOK)
            if src.is_dir():
                dst.mkdir(parents=True, exist_ok=True)
            else:
                dst.parent.mkdir(parents=True, exist_ok=True)
                dst.symlink_to(src)
        written = [
            (root / "workbook" / p.relative_to(BOOK)).with_suffix(".ipynb") for p in WITH_EXERCISES
        ]
    else:
        written = wb.build(BOOK, root / "workbook", built=BUILD if HAVE_BUILT_BOOK else None)
    return root, written


@pytest.fixture(scope="module")
def instructor(built):
    """The instructor notebooks, built apart from the student's (beside them, not inside)."""
    root, _ = built
    wb.build(BOOK, root / "instructor", instructor=True, built=BUILD if HAVE_BUILT_BOOK else None)
    return root / "instructor"


# --- coverage -------------------------------------------------------------------------------


def test_every_exercise_has_a_check():
    missing = [label for label in LABELS if label not in checks.CHECKS]
    assert not missing, f"exercises without a check in tools/workbook/checks.py: {missing}"


def test_every_check_belongs_to_an_exercise():
    stale = sorted(set(checks.CHECKS) - set(LABELS))
    assert not stale, f"checks whose exercise label no chapter has (renamed?): {stale}"


def test_every_check_grades_a_namespace():
    import inspect

    for label, spec in checks.CHECKS.items():
        assert list(inspect.signature(spec.grade).parameters) == ["ns"], label
        assert spec.how and spec.hint and spec.names, label


def test_build_refuses_an_exercise_without_a_check(tmp_path):
    book = tmp_path / "book"
    book.mkdir()
    (book / "ch.md").write_text(
        "---\nkernelspec: {display_name: Python 3, language: python, name: python3}\n---\n\n"
        "# Ch\n\n```{exercise} New\n:label: ex-not-checked-anywhere\n\nDo it.\n```\n\n"
        "````{solution-start} ex-not-checked-anywhere\n:class: dropdown\n````\n\nDone.\n\n"
        "````{solution-end}\n````\n",
        encoding="utf8",
    )
    with pytest.raises(ValueError, match="ex-not-checked-anywhere"):
        wb.build(book, tmp_path / "out")


def test_checkpoint_folders_are_not_chapters(tmp_path):
    book = tmp_path / "book"
    (book / ".ipynb_checkpoints").mkdir(parents=True)
    head = "---\nkernelspec: {display_name: Python 3, language: python, name: python3}\n---\n# X\n"
    (book / "ch.md").write_text(head, encoding="utf8")
    (book / ".ipynb_checkpoints" / "ch-checkpoint.md").write_text(head, encoding="utf8")
    assert wb.chapter_paths(book) == [book / "ch.md"]


# --- the generated notebooks ----------------------------------------------------------------


def _role(cell, role):
    return cell.metadata.get("workbook", {}).get("role") == role


def test_one_student_notebook_per_chapter(built):
    root, written = built
    assert len(written) == len(WITH_EXERCISES)
    for path, ch in WITH_EXERCISES.items():
        nb_path = (root / "workbook" / path.relative_to(BOOK)).with_suffix(".ipynb")
        nb = nbformat.read(nb_path, as_version=4)
        nbformat.validate(nb)
        assert nb.metadata.kernelspec.name == "python3" and "jupytext" not in nb.metadata
        checks_cells = [c for c in nb.cells if _role(c, "check")]
        answers = [c for c in nb.cells if _role(c, "answer")]
        assert [c.source for c in checks_cells] == [f'check("{e.label}")' for e in ch.exercises]
        for cell, ex in zip(answers, ch.exercises, strict=True):
            assert checks.CHECKS[ex.label].stub in cell.source
    for name in (wb.CHECKS_FILE, "_plots.py"):
        assert (root / "workbook" / name).is_file()


def test_every_helper_module_the_notebooks_import_is_copied(built):
    root, written = built
    for nb_path in written:
        nb = nbformat.read(nb_path, as_version=4)
        code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
        for a, b in wb.IMPORT_RE.findall(code):
            name = a or b
            if (BOOK / f"{name}.py").is_file():
                assert (root / "workbook" / f"{name}.py").is_file(), (nb_path.name, name)


def test_the_student_build_writes_no_solution_anywhere_in_its_folder(built, instructor):
    root, _ = built
    for f in (root / "workbook").rglob("*"):
        if f.is_file() and f.suffix in (".ipynb", ".py", ".md"):
            text = f.read_text(encoding="utf8")
            assert wb.BEGIN not in text and '"solution": true' not in text, f
        elif f.suffix == ".zip":
            with zipfile.ZipFile(f) as z:
                for name in z.namelist():
                    if name.endswith((".ipynb", ".py", ".md")):
                        assert wb.BEGIN.encode() not in z.read(name), (f, name)
    assert instructor.is_dir() and not instructor.is_relative_to(root / "workbook")


def _solution_lines(ex: Exercise, allowed: set[str]) -> set[str]:
    """Distinctive lines of a solution: code lines and prose sentences not found elsewhere."""
    lines = {ln.strip() for src in ex.solution_code for ln in src.splitlines()}
    lines |= {ln.strip() for t in ex.solution_text for ln in t.splitlines()}
    return {ln for ln in lines if len(ln) > 24 and ln not in allowed}


def test_student_notebooks_hold_no_solution_and_no_output(built):
    root, _ = built
    for path, ch in WITH_EXERCISES.items():
        nb = nbformat.read((root / "workbook" / path.relative_to(BOOK)).with_suffix(".ipynb"), 4)
        text = "\n".join(c.source for c in nb.cells)
        lines = {ln.strip() for c in nb.cells for ln in c.source.splitlines()}
        worked = {
            ln.strip() for p in ch.parts if isinstance(p, Code) for ln in p.source.splitlines()
        }
        worked |= {
            ln.strip()
            for p in ch.parts
            if not isinstance(p, (Code, Exercise))
            for ln in p.source.splitlines()
        }
        for ex in ch.exercises:  # the stubs' own lines (a function's signature) are allowed
            worked |= {ln.strip() for ln in checks.CHECKS[ex.label].stub.splitlines()}
        for ex in ch.exercises:
            leaked = [ln for ln in _solution_lines(ex, worked) if ln in lines]
            assert not leaked, (
                f"{_id(path)}: solution of {ex.label} in the student notebook: {leaked}"
            )
        assert "BEGIN SOLUTION" not in text and "solution-start" not in text
        for cell in nb.cells:
            if cell.cell_type == "code":
                assert cell.outputs == [] and cell.execution_count is None


#: Lines a check shares with a solution that are the exercise's given inputs or the data it
#: reads, stated in its prompt or stub, not a way to the answer.
GIVEN_INPUTS = {
    "ex-cope-words": "the gates of the prompt's sentence",
    "ex-cope-interpolation": "the prompt's embeddings",
    "ex-pi-order": "the two float32 products the stub names",
    "ex-yarn-range": "Qwen2.5's d, b and L from the prompt",
    "ex-graph-path": "the 12-node path and T5's bucket arguments from the stub",
    "ex-pixtral-axial": "the 6 x 6 grid of the stub",
    "ex-models-index-width": "reading hidden_size and the head count from each config",
    "ex-numerics-drift-bound": "the positions m and m + r of the prompt, and a maximum",
    "ex-numerics-twoproduct": "the stub's m and theta",
    "ex-numerics-predict-1e3": "the stub's scan (step 97, below 1e6) and a maximum",
}


def _refimpl_names() -> set[str]:
    import importlib
    import pkgutil

    import refimpl

    names = set(refimpl.__all__)
    for info in pkgutil.iter_modules(refimpl.__path__):
        names.add(info.name)
        module = importlib.import_module(f"refimpl.{info.name}")
        names |= {n for n in dir(module) if not n.startswith("__")}
    return names - set(dir(__builtins__))


def _calls_refimpl_or_imports(line: str, names: set[str]) -> bool:
    """A line that imports, assigns a literal, or calls into refimpl: how a check gets its
    reference (never by re-deriving it)."""
    try:
        tree = ast.parse(line)
    except SyntaxError:  # a continuation line: judge its calls by name
        return bool(re.search(r"\b(refimpl|num)\.", line)) or any(
            f"{n}(" in line for n in names if len(n) > 3
        )
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            return True
        if isinstance(node, ast.Call):
            root = node.func
            while isinstance(root, ast.Attribute):
                root = root.value
            called = node.func.attr if isinstance(node.func, ast.Attribute) else None
            called = called or (node.func.id if isinstance(node.func, ast.Name) else None)
            if (isinstance(root, ast.Name) and root.id in ("refimpl", "num")) or called in names:
                return True
    if tree.body and isinstance(tree.body[0], ast.Assign):
        try:
            ast.literal_eval(tree.body[0].value)
            return True
        except ValueError:
            pass
    return False


def test_the_checks_file_holds_no_solution_code():
    """A solution line found in workbook_checks.py must be what the student sees anyway (the
    prompt, the stub, the worked code), an import, a literal, a call into refimpl (the
    reference is computed by the package at check time) or the exercise's given inputs."""
    shipped = {ln.strip() for ln in wb.checks_source().splitlines()}
    names = _refimpl_names()
    leaked = {}
    for ch in WITH_EXERCISES.values():
        seen = {
            ln.strip()
            for p in ch.parts
            if not isinstance(p, Exercise)
            for ln in p.source.splitlines()
        }
        for ex in ch.exercises:
            seen |= {
                ln.strip() for ln in (ex.prompt + "\n" + checks.CHECKS[ex.label].stub).splitlines()
            }
        for ex in ch.exercises:
            if ex.label in GIVEN_INPUTS:
                continue
            lines = {ln.strip() for src in ex.solution_code for ln in src.splitlines()}
            bad = [
                ln
                for ln in lines
                if len(ln) > 24
                and ln in shipped
                and ln not in seen
                and not ln.startswith("#")
                and not _calls_refimpl_or_imports(ln, names)
            ]
            if bad:
                leaked[ex.label] = bad
    assert not leaked, f"solution lines in workbook_checks.py: {leaked}"


def test_a_failing_check_does_not_print_the_reference(capsys):
    checks.check("ex-pi-resolution", {"turn": 2 * np.pi, "answer": np.ones(32)})
    out = capsys.readouterr().out
    assert "FAIL" in out and "50.26" not in out and "reference is" not in out, out
    checks.check("ex-sin-table", {"table": np.zeros((50, 16))})
    out = capsys.readouterr().out
    assert "FAIL" in out and "expected" not in out and "max error" not in out, out


def test_the_alibi_check_takes_the_unused_slopes_in_any_form(capsys):
    answer = 2.0 ** -np.array([2, 4, 6, 8, 1, 3])
    for unused in (
        {2.0**-5, 2.0**-7},
        [2.0**-7, 2.0**-5],
        (2.0**-5, 2.0**-7),
        np.array([2.0**-5, 2.0**-7]),
    ):
        checks.check("ex-alibi-six", {"answer": answer, "unused": unused})
        assert "[ex-alibi-six] PASS" in capsys.readouterr().out, unused


def test_instructor_notebooks_follow_nbgrader(instructor):
    path, ch = next(iter(WITH_EXERCISES.items()))
    nb = nbformat.read((instructor / path.relative_to(BOOK)).with_suffix(".ipynb"), 4)
    answers = [c for c in nb.cells if _role(c, "answer")]
    grades = [c for c in nb.cells if _role(c, "check")]
    assert len(answers) == len(grades) == len(ch.exercises)
    for cell, ex in zip(answers, ch.exercises, strict=True):
        assert wb.BEGIN in cell.source and wb.END in cell.source
        assert cell.metadata.nbgrader["solution"] and cell.metadata.nbgrader["grade_id"] == ex.label
        assert ex.solution_code[0].strip().splitlines()[0] in cell.source
    for cell in grades:
        assert cell.metadata.nbgrader["grade"] and cell.metadata.nbgrader["locked"]


def test_no_worked_code_reads_a_name_only_a_solution_defines():
    """Run All in a student notebook cannot fail for lack of a solution's variables."""
    for path, ch in WITH_EXERCISES.items():
        solution_only, defined = set(), set()
        for part in ch.parts:
            if isinstance(part, Exercise):
                for src in part.solution_code:
                    solution_only |= {
                        n.id
                        for n in ast.walk(ast.parse(src))
                        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
                    }
                solution_only -= defined
            elif isinstance(part, Code):
                tree = ast.parse(part.source)
                reads = {
                    n.id
                    for n in ast.walk(tree)
                    if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
                }
                stores = {
                    n.id
                    for n in ast.walk(tree)
                    if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
                }
                bad = (reads - stores) & solution_only
                assert not bad, f"{_id(path)}: worked code reads {bad}, defined only in a solution"
                defined |= stores


def test_plumbing_is_stripped_from_worked_code():
    src = (
        "import sys\n"
        'sys.path.insert(0, "..")\n'
        "from myst_nb import glue\n"
        "from _plots import glue_figure, plot_x, use_book_style\n"
        "use_book_style()\n"
        "x = 1\n"
        'glue("x", x, display=False)\n'
        "fig = plot_x(x)\n"
        'glue_figure("fig_x", fig)\n'
        "plt.close(fig)\n"
        "for k in range(2):\n"
        '    glue(f"k{k}", k, display=False)\n'
    )
    assert render.strip_plumbing(src) == (
        "import sys\nfrom _plots import plot_x\nx = 1\nfig = plot_x(x)\nfor k in range(2):\n"
        "    pass"
    )
    multi = "from _plots import (\n    plot_x,\n    use_book_style,\n)\nuse_book_style()"
    assert render.strip_plumbing(multi) == "from _plots import plot_x"
    assert render.strip_plumbing('from myst_nb import glue\nglue("a", 1, display=False)') == ""


def _context(**book):
    return render.Context(
        docname="book/rope",
        book=render.BookBuild(**book),
        titles={"book/pairings": "Pairings and checkpoints", "book/intro": "refimpl"},
        notebooks={"book/rope": "rope.ipynb", "book/pairings": "pairings.ipynb"},
        citations={"su2021roformer": "Su et al., 2021"},
    )


def test_myst_becomes_markdown_that_reads_like_the_book():
    ctx = _context(
        numbers={
            "thm-rel": "Theorem 4",
            "equation-eq-rope-matrix": "(11)",
            "fig-pairs": "Fig. 7",
        },
        glue={
            "book/rope": {
                "theta": {"data": {"text/plain": "0.123456"}},
                "fig_pairs": {"data": {"image/png": "iVBORw0KGgo=", "text/plain": "<Figure>"}},
            }
        },
    )
    text = (
        "````{prf:theorem} Relative position\n:label: thm-rel\n\nScores see $n - m$.\n````\n\n"
        "```{prf:proof}\nBy {eq}`eq:rope-matrix`.\n```\n\n"
        "$$ R_m = P $$ (eq:rope-matrix)\n\n"
        "```{glue:figure} fig_pairs\n:name: fig-pairs\n\nPairs at {glue:text}`theta:.2f`.\n```\n\n"
        "See {doc}`pairings`, {doc}`intro`, {prf:ref}`thm-rel`, {numref}`fig-pairs` and "
        "{cite:p}`su2021roformer`; {cite:t}`su2021roformer` showed it."
    )
    out = render.convert_text(text, ctx)
    assert "> **Theorem 4 (Relative position).** Scores see $n - m$." in out
    assert "> *Proof.* By (11). ∎" in out
    assert "$$ R_m = P \\tag{11} $$" in out
    assert "![Fig. 7](attachment:fig_pairs.png)" in out and "**Fig. 7.** Pairs at 0.12." in out
    assert ctx.attachments == {"fig_pairs.png": {"image/png": "iVBORw0KGgo="}}
    assert "[Pairings and checkpoints](pairings.ipynb)" in out and "*refimpl*" in out
    assert "Theorem 4" in out and "Fig. 7 and" in out
    assert "(Su et al., 2021)" in out and "Su et al. (2021) showed it" in out
    assert not re.search(r"\{[a-z:]+\}`|```\{|\(eq:", out), out


def test_without_a_built_book_the_structure_is_kept():
    out = render.convert_text("```{glue:figure} f\n:name: fig-f\n\nCap.\n```", _context())
    assert "**Figure.** Cap." in out and "draws this figure" in out


def test_a_literalinclude_becomes_the_code_it_includes():
    ctx = _context()
    ctx.source_dir = BOOK / "experiments"
    out = render.convert_text(
        "```{literalinclude} ../../refimpl/experiments/encodings.py\n"
        ":pyobject: RoPE.rotate_backward\n```",
        ctx,
    )
    assert out.startswith("From `") and "```python\n" in out and "def rotate_backward" in out


@pytest.mark.parametrize("path", sorted(WITH_EXERCISES), ids=_id)
def test_student_notebook_reads_like_the_book(path, built):
    if not HAVE_BUILT_BOOK:
        pytest.skip("needs a built book in _build (make test builds it)")
    root, _ = built
    nb = nbformat.read((root / "workbook" / path.relative_to(BOOK)).with_suffix(".ipynb"), 4)
    markdown = [c for c in nb.cells if c.cell_type == "markdown"]
    text = "\n".join(c.source for c in markdown)
    problems = []
    if re.search(r"^[`:]{3,}\{", text, re.M):
        problems.append("a raw MyST directive fence")
    problems += [f"raw role {m.group(0)}" for m in re.finditer(r"\{[a-z:-]+\}`[^`]*`", text)]
    problems += [f"raw reference {m}" for m in re.findall(r"\(eq:[\w-]+\)", text)]
    if render.MISSING_VALUE in text:
        problems.append("a glued value the built book does not have")
    figures = len(re.findall(r"^[`:]{3,}\{glue:figure\}", path.read_text("utf8"), re.M))
    attached = sum(len(c.get("attachments", {})) for c in markdown)
    if attached < figures:
        problems.append(f"{figures - attached} of {figures} figures missing")
    labelled = re.findall(r'<a id="[^"]+"></a>\n(\$\$.*?\$\$)', text, re.S)
    untagged = [eq[:50] for eq in labelled if "\\tag{" not in eq]
    if untagged:
        problems.append(f"labelled equations without their number: {untagged[:2]}")
    for cell in nb.cells:
        if cell.cell_type == "code" and not _role(cell, "setup"):
            for line in cell.source.splitlines():
                if re.search(r"\bglue(_value|_figure)?\(|use_book_style|sys\.path|myst_nb", line):
                    problems.append(f"plumbing in a code cell: {line.strip()}")
    assert not problems, f"{_id(path)}: " + "; ".join(problems[:8])


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    if FROM_BUILD:
        return next((BUILT_WORKBOOK / "_wheel").glob("refimpl-*.whl"))
    return downloads.build_wheel(ROOT, tmp_path_factory.mktemp("wheel"))


@pytest.fixture(scope="module")
def chapter_zips(built, wheel):
    """``{docname: the chapter's standalone zip}``."""
    root, _ = built
    if not FROM_BUILD:
        return wb.write_downloads(BOOK, root / "workbook", wheel_dir=wheel.parent)
    zips = {}
    for path in WITH_EXERCISES:
        rel = path.relative_to(BOOK)
        z = BUILT_WORKBOOK / rel.parent / f"refimpl-{rel.stem}.zip"
        if z.is_file():
            zips[f"book/{_id(path)}"] = z
    return zips


def test_zip_holds_the_workbook_its_data_the_package_and_a_readme(built, wheel, tmp_path):
    root, written = built
    if FROM_BUILD:
        z = BUILT_WORKBOOK / "refimpl-workbook.zip"
    else:
        z = wb.make_zip(root / "workbook", tmp_path / "wb.zip", wheel=wheel)
    names = set(zipfile.ZipFile(z).namelist())
    assert {f"workbook/{p.relative_to(root / 'workbook').as_posix()}" for p in written} <= names
    assert "workbook/workbook_checks.py" in names and wheel.name in names
    assert any(n.startswith("experiments/results/") for n in names)
    readme = zipfile.ZipFile(z).read("README.md").decode()
    assert f"pip install {wheel.name}" in readme and "-e ." not in readme


def test_each_chapter_download_holds_what_its_notebook_needs(chapter_zips, wheel):
    zips = chapter_zips
    assert set(zips) == {f"book/{_id(p)}" for p in WITH_EXERCISES}
    names = set(zipfile.ZipFile(zips["book/experiments/nope-partial"]).namelist())
    top = "refimpl-nope-partial"
    assert {
        f"{top}/README.md",
        f"{top}/{wheel.name}",
        f"{top}/workbook/experiments/nope-partial.ipynb",
        f"{top}/workbook/workbook_checks.py",
        f"{top}/workbook/_plots.py",
        f"{top}/workbook/_plots_toy.py",
    } <= names
    assert any(n.startswith(f"{top}/experiments/results/") for n in names)


def _kernel_for(venv: pathlib.Path, where: pathlib.Path) -> dict:
    """Environment for nbclient that makes kernel "python3" the python of ``venv``."""
    spec = where / "kernels" / "python3"
    spec.mkdir(parents=True)
    argv = [str(venv / "bin" / "python"), "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    (spec / "kernel.json").write_text(
        json.dumps({"argv": argv, "display_name": "standalone", "language": "python"})
    )
    return {"JUPYTER_PATH": str(where)}


@pytest.mark.skipif(not FULL, reason="installs a venv: `make test-workbook` runs it")
def test_a_chapter_download_installs_and_runs_without_a_clone(chapter_zips, tmp_path, monkeypatch):
    import nbclient

    zipfile.ZipFile(chapter_zips["book/experiments/nope-partial"]).extractall(tmp_path)
    folder = tmp_path / "refimpl-nope-partial"
    readme = (folder / "README.md").read_text(encoding="utf8")
    install = next(ln.strip() for ln in readme.splitlines() if "/bin/pip install" in ln)
    # the README's own install line, with the kernel instead of JupyterLab (the test runs the
    # notebook without a browser)
    install = re.sub(r"jupyterlab==\S+", "ipykernel", install)
    subprocess.run([sys.executable, "-m", "venv", ".venv"], cwd=folder, check=True)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    proc = subprocess.run(install.split(), cwd=folder, env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    for k, v in _kernel_for(folder / ".venv", tmp_path / "jupyter").items():
        monkeypatch.setenv(k, v)
    monkeypatch.delenv("PYTHONPATH", raising=False)
    nb_path = folder / "workbook" / "experiments" / "nope-partial.ipynb"
    nb = nbformat.read(nb_path, as_version=4)
    where = {"metadata": {"path": str(nb_path.parent)}}
    nbclient.NotebookClient(nb, timeout=600, kernel_name="python3", resources=where).execute()
    checks_out = [
        "".join(o.get("text", "") for o in c.outputs) for c in nb.cells if _role(c, "check")
    ]
    assert checks_out and all("FAIL: Not done yet" in o for o in checks_out), checks_out


# --- checks on bad answers ------------------------------------------------------------------


def _raiser(*args, **kwargs):
    raise RuntimeError("student bug")


@pytest.mark.parametrize("value", [None, 1, "x", np.zeros((2, 2)), _raiser, ...])
def test_a_check_never_raises_on_a_bad_answer(value, capsys):
    for label, spec in checks.CHECKS.items():
        ns = {"__name__": "__main__", **{n: value for n in spec.names}}
        grade = checks._run(spec, ns)
        assert not grade, f"{label} passed the answer {value!r}"
        assert grade.hint, label


def test_check_prints_a_hint_and_strict_mode_raises(monkeypatch, capsys):
    ns = {"table": np.zeros((50, 16))}
    checks.check("ex-sin-table", ns)
    out = capsys.readouterr().out
    assert out.startswith("[ex-sin-table] FAIL:") and "Hint:" in out
    assert not checks.RESULTS["ex-sin-table"]
    monkeypatch.setenv(checks.STRICT_ENV, "1")
    with pytest.raises(AssertionError, match="ex-sin-table"):
        checks.check("ex-sin-table", ns)


def test_not_done_yet_is_reported_as_such():
    spec = checks.CHECKS["ex-check-apply"]
    ns = {}
    exec(spec.stub, {"NotDoneYet": checks.NotDoneYet, "np": np}, ns)
    grade = checks._run(spec, ns)
    assert not grade and grade.hint.startswith("Not done yet: my_rope")


# --- executing every notebook: stubs fail with hints, solutions pass -------------------------


@pytest.mark.parametrize("path", sorted(WITH_EXERCISES), ids=_id)
def test_notebook_stubs_fail_and_solutions_pass(path, built):
    root, _ = built
    ch = WITH_EXERCISES[path]
    rel = path.relative_to(BOOK)
    whole = FULL or _id(path) in RUN_ALL_IN_MAKE_TEST
    nb = wb.chapter_notebook(ch if whole else slicing.sliced(ch), rel)
    stub, solved = execute.run(nb, ch, root / "workbook" / rel.parent)
    labels = [ex.label for ex in ch.exercises]
    assert sorted(stub) == sorted(labels) and sorted(solved) == sorted(labels)
    for label in labels:
        passed, hint = stub[label]
        assert not passed and hint.startswith("Not done yet"), (label, hint)
        passed, hint = solved[label]
        assert passed, f"{label} fails with the book's solution: {hint}"


# --- the Sphinx extension -------------------------------------------------------------------


def test_link_html_is_relative_to_the_page():
    import workbook_downloads as ext

    html = ext.link_html("book/experiments/x", "_workbook/experiments/x.ipynb", "Get it")
    assert 'href="../../_workbook/experiments/x.ipynb"' in html and 'download="x.ipynb"' in html


def test_extension_links_downloads_in_a_tiny_book(tmp_path):
    src = tmp_path / "site"
    (src / "book").mkdir(parents=True)
    shutil.copy(BOOK / "sinusoidal.md", src / "book" / "sinusoidal.md")
    shutil.copy(BOOK / "_plots.py", src / "book" / "_plots.py")
    (src / "book" / "exercises.md").write_text("# Exercises\n\nAll of them.\n", encoding="utf8")
    (src / "index.md").write_text(
        "# T\n\n```{toctree}\nbook/sinusoidal\nbook/exercises\n```\n", encoding="utf8"
    )
    (src / "conf.py").write_text(
        "import sys\n"
        f"sys.path.insert(0, {str(BOOK / '_ext')!r})\n"
        "extensions = ['myst_parser', 'sphinx_exercise', 'workbook_downloads']\n"
        "myst_enable_extensions = ['colon_fence', 'dollarmath', 'amsmath']\n"
        f"workbook_tools_dir = {str(ROOT / 'tools')!r}\n"
        f"workbook_package_root = {str(ROOT)!r}\n"
        "exclude_patterns = ['_build']\n",
        encoding="utf8",
    )
    out = tmp_path / "html"
    proc = subprocess.run(
        [sys.executable, "-m", "sphinx", "-b", "html", "-q", str(src), str(out)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    page = (out / "book" / "sinusoidal.html").read_text(encoding="utf8")
    assert 'href="../_workbook/refimpl-sinusoidal.zip"' in page
    index = (out / "book" / "exercises.html").read_text(encoding="utf8")
    assert 'href="../_workbook/refimpl-workbook.zip"' in index
    nb = json.loads((out / "_workbook" / "sinusoidal.ipynb").read_text(encoding="utf8"))
    assert any('check("ex-sin-table")' in "".join(c["source"]) for c in nb["cells"])
    chapter = zipfile.ZipFile(out / "_workbook" / "refimpl-sinusoidal.zip").namelist()
    assert "refimpl-sinusoidal/workbook/sinusoidal.ipynb" in chapter
    assert "refimpl-sinusoidal/README.md" in chapter
    whole = zipfile.ZipFile(out / "_workbook" / "refimpl-workbook.zip").namelist()
    assert "workbook/sinusoidal.ipynb" in whole and "README.md" in whole


# --- classic mistakes, as a student makes them in the workbook ------------------------------


def _timing_signal(n, d, base=1e4):
    """tensor2tensor's get_timing_signal_1d (fairseq's sinusoidal embedding): sin | cos."""
    inc = np.log(base) / (d // 2 - 1)
    t = np.arange(n)[:, None] * np.exp(-inc * np.arange(d // 2))[None, :]
    return np.concatenate([np.sin(t), np.cos(t)], axis=1)


def _in_place_rope(x, positions):
    x[...] = __import__("refimpl").apply_rope(x, positions, pairing="interleaved")
    return x


def _batch_only(x, positions):
    if x.ndim != 3:
        raise ValueError("expected x of shape (batch, seq, dim)")
    return x


@pytest.mark.parametrize(
    ("label", "answer", "words"),
    [
        ("ex-check-inv-freq", {"answer": 5e5 ** -np.linspace(0, 1, 64)}, "d/2 - 1"),
        (
            "ex-base-freq",
            {"answer": np.float16(1e6 ** (-np.arange(0, 128, 2) / 128)), "n": 0},
            "float16",
        ),
        ("ex-sin-table", {"table": _timing_signal(50, 16)}, "tensor2tensor/fairseq"),
        (
            "ex-alibi-six",
            {"answer": 2.0 ** (-8.0 * np.arange(1, 7) / 6), "unused": []},
            "power-of-two",
        ),
        ("ex-check-apply", {"my_rope": _in_place_rope}, "in place"),
        ("ex-check-apply", {"my_rope": _batch_only}, "ValueError: expected x of shape"),
        (
            "ex-complexity-bias-memory",
            {"bias_bytes": 131072**2 * 4, "rope_bytes": 2 * 131072 * 128 * 4},
            "One value per pair",
        ),
    ],
)
def test_classic_mistakes_get_their_hint(label, answer, words, capsys):
    checks.check(label, dict(answer))
    out = capsys.readouterr().out
    assert f"[{label}] FAIL" in out and words in out, out


def test_a_zip_written_inside_the_workbook_does_not_contain_itself(tmp_path):
    import zipfile

    from workbook.build import make_zip

    wb = tmp_path / "wb"
    wb.mkdir()
    (wb / "a.ipynb").write_text("{}")
    (wb / "old.zip").write_bytes(b"x")  # a zip from an earlier build is just a file
    out = make_zip(wb, wb / "refimpl-workbook.zip", root=tmp_path)
    names = zipfile.ZipFile(out).namelist()
    assert "workbook/a.ipynb" in names
    assert not any(n.endswith("refimpl-workbook.zip") or n.endswith(".zip.tmp") for n in names)
    assert out.stat().st_size < 10_000


def test_the_pairing_check_takes_the_engines_names_and_lists_the_words(capsys):
    import refimpl

    mystery = checks.given_mystery()
    truth = refimpl.check_rope(mystery, dim=8).pairing
    alias = {"half": "neox", "interleaved": "gptj"}[truth]
    checks.check("ex-pair-detect", {"mystery": mystery, "verdict": alias})
    assert "[ex-pair-detect] PASS" in capsys.readouterr().out
    checks.check("ex-pair-detect", {"mystery": mystery, "verdict": "rotate-half-ish"})
    out = capsys.readouterr().out
    assert "FAIL" in out and "'half' or 'interleaved'" in out, out


# --- issue 29: the review's wrong answers, each named by its check --------------------------


def _my_rope(minus: bool):
    import refimpl

    def my_rope(x, positions, d, sign=+1):
        c, s = refimpl.cos_sin(positions, dim=d)
        C, S = np.concatenate([c, c], -1), np.concatenate([s, s], -1)
        x1, x2 = x[..., : d // 2], x[..., d // 2 :]
        rh = np.concatenate([-x2 if minus else x2, x1], -1)
        return x * C + sign * rh * S

    return my_rope


def _llama3_32(turns_of, low=1.0, high=4.0):
    theta = 5e5 ** (-np.arange(0, 64, 2) / 64)
    g = np.clip((turns_of(theta) - low) / (high - low), 0.0, 1.0)
    return (1 - g) * theta / 32 + g * theta


def _yarn_qwen(low, high, reversed_ramp=False):
    theta = 1e6 ** (-np.arange(0, 128, 2) / 128)
    w = np.clip((np.arange(64) - low) / (high - low), 0.0, 1.0)
    w = 1 - w if reversed_ramp else w
    return theta / 4 * w + theta * (1 - w)


def _sin_table(d_in_exponent):
    w = 1e4 ** (-2 * np.arange(8) / d_in_exponent)
    ang = np.outer(np.arange(50), w)
    table = np.empty((50, 16))
    table[:, 0::2], table[:, 1::2] = np.sin(ang), np.cos(ang)
    return table


def _nope_outputs():
    return 1.0 / (np.arange(40) + 1.0)


PI_ANSWER = 1e4 ** (-np.arange(0, 64, 2) / 64) / 8


@pytest.mark.parametrize(
    ("label", "wrong", "words", "right"),
    [
        (
            "ex-forms-rotate-half",
            {"my_rope": _my_rope(minus=False)},
            "The minus sign is missing: rotate_half(x) = cat(x2, x1)",
            {"my_rope": _my_rope(minus=True)},
        ),
        (
            "ex-llama3-32",
            {"answer": _llama3_32(lambda t: 8192 * t / (2 * np.pi), low=4.0, high=1.0)},
            "low_freq_factor and high_freq_factor are swapped",
            {"answer": _llama3_32(lambda t: 8192 * t / (2 * np.pi))},
        ),
        (
            "ex-llama3-32",
            {"answer": _llama3_32(lambda t: 8192 * t)},
            "without the 2 pi",
            {"answer": _llama3_32(lambda t: 8192 * t / (2 * np.pi))},
        ),
        (
            "ex-yarn-by-hand",
            {"answer": _yarn_qwen(23, 40, reversed_ramp=True)},
            "The ramp is reversed",
            {"answer": _yarn_qwen(23, 40)},
        ),
        (
            "ex-yarn-by-hand",
            {"answer": _yarn_qwen(24, 41)},
            "off by one: both bounds are one pair too high",
            {"answer": _yarn_qwen(23, 40)},
        ),
        (
            "ex-sin-table",
            {"table": _sin_table(16 / 2)},
            "The exponent is 2i/(d/2) = 4i/d",
            {"table": _sin_table(16)},
        ),
        (
            "ex-pi-resolution",
            {"turn": 2 * np.pi, "answer": PI_ANSWER},
            "turn of the unscaled fastest pair",
            {"turn": 16 * np.pi, "answer": PI_ANSWER},
        ),
        (
            "ex-ntk-sqrt",
            {"sol": "d/4"},
            "Off by one pair: d/4 solves 2i/d = 1/2",
            {"sol": "(d - 2)/4"},
        ),
        (
            "ex-nope-decode",
            {"decoded": np.rint(1.0 / _nope_outputs()), "first_wrong": 0},
            "Off by one: 1/o_i = i + 1",
            {"decoded": np.rint(1.0 / _nope_outputs() - 1.0), "first_wrong": "scan"},
        ),
        (
            "ex-alibi-six",
            {"answer": 2.0 ** -np.arange(1, 7), "unused": {2.0**-5, 2.0**-7}},
            "truncating the next power of two's list",
            {"answer": 2.0 ** -np.array([2, 4, 6, 8, 1, 3]), "unused": {2.0**-5, 2.0**-7}},
        ),
    ],
    ids=lambda v: re.sub(r"\W+", "-", v[:40]).strip("-") if isinstance(v, str) else None,
)
def test_the_reviews_wrong_answers_are_named_and_the_right_ones_pass(
    label, wrong, words, right, capsys
):
    import sympy as sp

    def namespace(values):
        ns = dict(values)
        if label == "ex-ntk-sqrt":
            ns["d"] = sp.Symbol("d")
            ns["sol"] = sp.sympify(ns["sol"], locals={"d": ns["d"]})
        if ns.get("first_wrong") == "scan":
            ns["first_wrong"] = checks._first_wrong_float32()
        return ns

    checks.check(label, namespace(wrong))
    out = capsys.readouterr().out
    assert f"[{label}] FAIL: " in out and words in out, out
    assert "expected" not in out and "reference is" not in out, out
    checks.check(label, namespace(right))
    out = capsys.readouterr().out
    assert f"[{label}] PASS" in out, out


def test_the_pairing_check_says_what_an_engines_name_means(capsys):
    import refimpl

    mystery = checks.given_mystery()
    truth = refimpl.check_rope(mystery, dim=8).pairing
    wrong_alias = {"half": "gptj", "interleaved": "neox"}[truth]
    other = {"half": "interleaved", "interleaved": "half"}[truth]
    checks.check("ex-pair-detect", {"mystery": mystery, "verdict": wrong_alias})
    out = capsys.readouterr().out
    assert f"FAIL: No: {wrong_alias!r} means {other}" in out, out
    checks.check("ex-pair-detect", {"mystery": mystery, "verdict": "NEOX-ish"})
    out = capsys.readouterr().out
    assert "'neox' and 'rotate_half' mean half" in out, out
