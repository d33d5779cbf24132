"""Package-level contracts: import footprint, equation labels, public names."""

import pathlib
import re
import subprocess
import sys

import refimpl

ROOT = pathlib.Path(__file__).resolve().parents[1]
LABEL_IN_CODE = re.compile(r"#.*\[(eq:[A-Za-z0-9_-]+)\]")
# MyST dollarmath labels ``$$ ... $$ (eq:x)`` and ``:label: eq:x`` in math directives.
LABEL_IN_BOOK = [
    re.compile(r"\$\$\s*\((eq:[A-Za-z0-9_-]+)\)"),
    re.compile(r":label:\s*(eq:[A-Za-z0-9_-]+)"),
]


def test_import_refimpl_loads_numpy_only():
    code = (
        "import sys, refimpl\n"
        "bad = sorted({m.split('.')[0] for m in sys.modules} & "
        "{'sympy', 'matplotlib', 'mpmath', 'torch', 'scipy', 'pandas', 'ml_dtypes'})\n"
        "print(','.join(bad))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"import refimpl pulled in: {out.stdout.strip()}"


def _code_labels():
    labels = {}
    for path in sorted((ROOT / "refimpl").rglob("*.py")):
        for lineno, line in enumerate(path.read_text(encoding="utf8").splitlines(), 1):
            for lab in LABEL_IN_CODE.findall(line):
                labels.setdefault(lab, []).append(f"{path.relative_to(ROOT)}:{lineno}")
    return labels


def _book_labels():
    found = set()
    for path in (ROOT / "book").rglob("*.md"):
        text = path.read_text(encoding="utf8")
        for pat in LABEL_IN_BOOK:
            found.update(pat.findall(text))
    return found


def test_every_equation_label_in_the_package_has_a_target_in_the_book():
    code = _code_labels()
    assert code, "no equation labels found in refimpl/"
    book = _book_labels()
    missing = {lab: where for lab, where in code.items() if lab not in book}
    assert not missing, f"labels with no target in book/: {missing}"


def test_label_checker_detects_a_missing_label(tmp_path):
    # the regular expressions really find labels (guards against a checker that finds nothing)
    assert LABEL_IN_CODE.findall("y = x  # [eq:demo-label]") == ["eq:demo-label"]
    assert LABEL_IN_BOOK[0].findall("$$ a = b $$ (eq:demo-label)") == ["eq:demo-label"]
    assert "eq:certainly-not-in-the-book" not in _book_labels()


def test_public_names_are_exported():
    for name in refimpl.__all__:
        assert hasattr(refimpl, name), name


def test_bibliography_parses_without_duplicate_keys():
    pybtex = __import__("pytest").importorskip("pybtex.database")
    text = (ROOT / "references.bib").read_text(encoding="utf8")
    keys = re.findall(r"^@\w+\{([^,]+),", text, flags=re.M)
    assert len(keys) == len(set(keys)), "duplicate keys in references.bib"
    db = pybtex.parse_string(text, "bibtex")
    assert set(db.entries) == set(keys)


# Pages that are reference material rather than chapters (no exercises expected).
NOT_CHAPTERS = {
    "book/intro",
    "book/api",
    "book/glossary",
    "book/bibliography",
    "book/exercises",
    "book/domain",
}
NOT_CHAPTERS |= {f"book/api-{part}" for part in ("encodings", "scaling", "checking", "book")}


def _toc_files():
    toc = (ROOT / "_toc.yml").read_text(encoding="utf8")
    return [*re.findall(r"file:\s*(\S+)", toc), re.search(r"root:\s*(\S+)", toc).group(1)]


def test_every_toc_entry_exists_and_every_page_is_in_the_toc():
    files = set(_toc_files())
    for f in files:
        assert (ROOT / f"{f}.md").is_file(), f"_toc.yml lists {f} but {f}.md does not exist"
    pages = {p.relative_to(ROOT).with_suffix("").as_posix() for p in (ROOT / "book").rglob("*.md")}
    assert pages - files == set(), f"pages not in _toc.yml: {sorted(pages - files)}"


def test_every_chapter_has_at_least_two_exercises_with_solutions():
    exercise = re.compile(r"^`{3,}\{exercise(?:-start)?\}.*\n:label:\s*(\S+)", re.M)
    solution = re.compile(r"^`{3,}\{solution(?:-start)?\}\s*(\S+)", re.M)
    for f in _toc_files():
        if f in NOT_CHAPTERS:
            continue
        text = (ROOT / f"{f}.md").read_text(encoding="utf8")
        labels = exercise.findall(text)
        assert len(labels) >= 2, f"{f}: {len(labels)} exercise(s), expected at least 2"
        solved = set(solution.findall(text))
        assert set(labels) <= solved, f"{f}: exercises without a solution: {set(labels) - solved}"


def test_every_module_is_documented_in_the_api_pages():
    documented = set()
    for page in (ROOT / "book").glob("api*.md"):
        documented |= set(re.findall(r"automodule::\s*(\S+)", page.read_text(encoding="utf8")))
    modules = {
        ".".join(p.relative_to(ROOT).with_suffix("").parts)
        for p in (ROOT / "refimpl").rglob("*.py")
        if not p.name.startswith("_")
    }
    assert modules - documented == set(), (
        f"modules missing from book/api*.md: {modules - documented}"
    )
