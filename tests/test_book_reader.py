"""What a reader sees on each page: no build plumbing in shown code, no long pastes of source,
a bounded amount of shown code, and no raw markup in the built pages.

Shown code cells teach; the lines that only make the page build (gluing values and figures for
the prose, the plotting style, closing figures, import paths) go in cells tagged
``remove-input`` or ``remove-cell``, where the reader sees their output but not their code.
Reference code on a page is short and states the formula (the package's source is one click
away in the API pages), so a ``literalinclude`` of a private function is not reference code.

The tests of the built book (``_build/html``) read the HTML that ``jupyter-book build`` wrote:
``make test`` builds the book first and sets ``REFIMPL_BUILT_BOOK=1``, which makes a missing
build a failure; run alone without a build they skip.

Run ``python tests/test_book_reader.py`` to list the offending cells of every page and the
shown code lines of every chapter of the built book.
"""

from __future__ import annotations

import os
import pathlib
import re
import sys
from html.parser import HTMLParser

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
BOOK = ROOT / "book"
HTML = pathlib.Path(os.environ.get("REFIMPL_BOOK_HTML", ROOT / "_build" / "html"))
#: ``make test`` builds the book before pytest runs: a missing build is then a failure.
BUILT_BOOK_REQUIRED = os.environ.get("REFIMPL_BUILT_BOOK") == "1"
#: At most this many code lines shown expanded on the chapters outside the Reference part
#: (input lines of code cells neither collapsed by hide-input/hide-cell nor removed, plus
#: literalinclude lines). A reader meets the question, the figure and the formula first; the
#: code shown is the few lines they learn from, and what only draws, tabulates or checks is
#: collapsed. About 25 lines per chapter on average.
SHOWN_CODE_BUDGET = 1500
#: The part of the table of contents that is reference material, not read as chapters.
REFERENCE_PART = "Reference"
#: Class that book/_ext/reader_marks.py gives to literalinclude blocks.
LITERALINCLUDE_CLASS = "refimpl-literalinclude"

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


# --- the built book ---------------------------------------------------------------------------


def toc_chapters(toc_path: pathlib.Path = ROOT / "_toc.yml") -> list[str]:
    """The docnames of the table of contents' chapters (and their sections) outside the
    Reference part, in reading order."""
    import yaml

    toc = yaml.safe_load(toc_path.read_text(encoding="utf8"))
    out: list[str] = []

    def walk(entries):
        for entry in entries or []:
            if "file" in entry:
                out.append(entry["file"])
            walk(entry.get("sections"))

    for part in toc.get("parts", []):
        if part.get("caption") != REFERENCE_PART:
            walk(part.get("chapters"))
    return out


_ARTICLE = re.compile(r"<article\b.*</article>", re.S)
#: Elements whose text is code, math or machinery, not prose.
NOT_PROSE = ("pre", "code", "script", "style", "kbd", "samp", "tt")
_VOID = {
    "area",
    "base",
    "br",
    "col",
    "embed",
    "hr",
    "img",
    "input",
    "link",
    "meta",
    "source",
    "track",
    "wbr",
}
#: Markup that a reader must never see as text (it means a role, a label or math was not
#: parsed): $...$ math, (eq:label) references, {role}`...` roles (cite, glue, doc, eq, ...).
RAW_MARKUP = re.compile(
    r"(?P<dollar>(?<![\\\w$])\$[^$\s][^$\n]*?(?<!\s)\$(?!\w))"
    r"|(?P<eqref>\(eq:[\w-]+\))"
    r"|(?P<role>\{[a-z][\w:-]*\}`)"
    r"|(?P<directive>\{(?:cite|glue|numref|doc|eq|ref|prf:ref|term)[:\w-]*\})"
)


class _Page(HTMLParser):
    """One pass over a built page's article: the code lines it shows expanded, its prose text,
    its paragraphs and its stderr outputs.

    A code cell's input counts unless a ``<details>`` collapses it (tags hide-input,
    hide-cell); removed inputs (remove-input, remove-cell) are not in the HTML at all. The
    code of an exercise's solution counts too: its dropdown hides the solution, not the code
    the reader meets on opening it. Blank lines inside a cell count, as the reader scrolls
    past them.
    """

    COUNTED = ("cell_input", LITERALINCLUDE_CLASS)

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack: list[tuple[str, set[str]]] = []
        self.code = {k: 0 for k in self.COUNTED}
        self.prose: list[str] = []
        self.paragraphs: list[str] = []
        self.stderr: list[str] = []
        self._capture: list[tuple[str, int, list[str]]] = []  # (what, depth, texts)

    def _inside(self, pred) -> bool:
        return any(pred(tag, classes) for tag, classes in self.stack)

    def handle_starttag(self, tag, attrs):
        if tag in _VOID:
            return
        classes = set((dict(attrs).get("class") or "").split())
        self.stack.append((tag, classes))
        depth = len(self.stack)
        if tag == "div" and not self._inside(lambda t, c: t == "details"):
            for kind in self.COUNTED:
                if kind in classes:
                    self._capture.append((kind, depth, []))
        if tag == "p":
            self._capture.append(("p", depth, []))
        if tag == "div" and {"output", "stderr"} <= classes:
            self._capture.append(("stderr", depth, []))

    def handle_endtag(self, tag):
        if tag in _VOID:
            return
        while self.stack:
            open_tag, _ = self.stack.pop()
            depth = len(self.stack) + 1
            while self._capture and self._capture[-1][1] >= depth:
                what, _, texts = self._capture.pop()
                text = "".join(texts)
                if what == "p":
                    self.paragraphs.append(" ".join(text.split()))
                elif what == "stderr":
                    self.stderr.append(text.strip())
                else:
                    self.code[what] += _lines(text)
            if open_tag == tag:
                break

    def handle_data(self, data):
        for _, _, texts in self._capture:
            texts.append(data)
        if not self._inside(lambda t, c: t in NOT_PROSE or "math" in c):
            self.prose.append(data)


def _page(html: str) -> _Page:
    m = _ARTICLE.search(html)
    page = _Page()
    page.feed(m.group(0) if m else html)
    page.close()
    return page


def _lines(text: str) -> int:
    return len(text.strip("\n").splitlines())


def shown_code_lines(html: str) -> tuple[int, int]:
    """Code lines a page shows expanded: (code-cell input lines, literalinclude lines); see
    :class:`_Page` for what counts."""
    page = _page(html)
    return page.code["cell_input"], page.code[LITERALINCLUDE_CLASS]


def markup_defects(html: str) -> list[str]:
    """What a reader would see as raw markup or broken layout in a built page."""
    page = _page(html)
    found = [
        f"pipe-table text in a paragraph: {p[:80]!r}"
        for p in page.paragraphs
        if p.startswith("|") and p.count("|") >= 3
    ]
    for text in page.prose:
        for m in RAW_MARKUP.finditer(text):
            found.append(f"raw markup {m.group(0)[:60]!r} in {text.strip()[:80]!r}")
    found += [f"stderr output shown: {t[:120]!r}" for t in page.stderr]
    return found


def _built_pages() -> list[str]:
    if not (HTML / "index.html").is_file():
        return []
    return sorted(p.relative_to(HTML).as_posix() for p in HTML.glob("book/**/*.html"))


@pytest.fixture(scope="module")
def built_book():
    if not (HTML / "index.html").is_file():
        if BUILT_BOOK_REQUIRED:
            pytest.fail(f"no built book at {HTML}: `make test` builds it before pytest runs")
        pytest.skip("no built book in _build/html (`make book`, or `make test` builds it)")
    return HTML


def shown_code_by_chapter(html_root: pathlib.Path = HTML) -> dict[str, tuple[int, int]]:
    """Shown code lines of each table-of-contents chapter outside the Reference part."""
    out = {}
    for docname in toc_chapters():
        page = html_root / f"{docname}.html"
        out[docname] = shown_code_lines(page.read_text(encoding="utf8"))
    return out


def test_shown_code_detector_counts_what_a_reader_sees():
    page = """<article>
    <div class="cell"><div class="cell_input"><pre>a = 1\n\nb = 2\n</pre></div></div>
    <div class="cell"><details class="hide above-input"><summary>Show</summary>
      <div class="cell_input"><pre>hidden = 1\n</pre></div></details></div>
    <div class="solution dropdown"><div class="cell"><div class="cell_input">
      <pre>answer = 3\n</pre></div></div></div>
    <div class="highlight-python refimpl-literalinclude"><pre>def f():\n    return 1\n</pre></div>
    <div class="highlight-python"><pre>shell = 1\n</pre></div>
    </article>"""
    assert shown_code_lines(page) == (4, 2)


def test_toc_chapters_leave_out_the_reference_part():
    chapters = toc_chapters()
    assert "book/rope" in chapters and "book/quickstart" in chapters
    assert "book/glossary" not in chapters and "book/api-encodings" not in chapters


def test_shown_code_stays_within_budget(built_book):
    counts = shown_code_by_chapter(built_book)
    total = sum(a + b for a, b in counts.values())
    worst = sorted(counts.items(), key=lambda kv: -sum(kv[1]))[:8]
    assert total <= SHOWN_CODE_BUDGET, (
        f"{total} code lines shown expanded on the chapters (budget {SHOWN_CODE_BUDGET}); "
        "collapse code that only draws, tabulates or checks (tags: [hide-input]). Most: "
        + ", ".join(f"{name} {a + b}" for name, (a, b) in worst)
    )


def test_markup_detector_finds_what_it_looks_for():
    page = """<article>
    <p>| file | kind |</p><p>| a | b |</p>
    <p>The angle $m x$ and (eq:rope-matrix), see {cite:p}`su2021` and {glue:text}`x`.</p>
    <p>Costs $5 and $6 are fine, as is <code>$x$</code> and
      <span class="math">\\(x\\)</span>.</p>
    <div class="output stderr"><pre>RuntimeWarning: overflow</pre></div>
    </article>"""
    found = markup_defects(page)
    assert sum("pipe-table" in f for f in found) == 2
    assert any("$m x$" in f for f in found)
    assert any("(eq:rope-matrix)" in f for f in found)
    assert any("{cite:p}`" in f for f in found) and any("{glue:text}`" in f for f in found)
    assert any("stderr" in f for f in found)
    assert not any("$5" in f or "$x$" in f for f in found), found


@pytest.mark.parametrize("rel", _built_pages() or ["(no built book)"])
def test_built_page_shows_no_raw_markup(built_book, rel):
    found = markup_defects((built_book / rel).read_text(encoding="utf8"))
    assert not found, f"{rel}: " + "; ".join(found[:6])


def toc_parts(toc_path: pathlib.Path = ROOT / "_toc.yml") -> dict[str, list[str]]:
    """Each part's caption and the docnames of its chapters and sections."""
    import yaml

    toc = yaml.safe_load(toc_path.read_text(encoding="utf8"))

    def walk(entries):
        for entry in entries or []:
            if "file" in entry:
                yield entry["file"]
            yield from walk(entry.get("sections"))

    return {part["caption"]: list(walk(part.get("chapters"))) for part in toc.get("parts", [])}


def landing_map(text: str) -> str:
    """The "The map" section of the landing page."""
    m = re.search(r"^## The map\n(.*?)(?=^## |\Z)", text, re.S | re.M)
    return m.group(1) if m else ""


def test_landing_map_shows_every_part_and_chapter():
    section = landing_map((BOOK / "intro.md").read_text(encoding="utf8"))
    assert section, "book/intro.md has no '## The map' section"
    linked = set(re.findall(r"\{doc\}`([^`<]+)`", section))
    for caption, chapters in toc_parts().items():
        assert f"**{caption}**" in section, f"the landing map does not name the part {caption!r}"
        if caption == REFERENCE_PART:
            continue
        missing = [c for c in chapters if c.removeprefix("book/") not in linked]
        assert not missing, f"the landing map's {caption!r} does not link {missing}"


if __name__ == "__main__":
    for p in pages():
        text = p.read_text("utf8")
        for line in shown_plumbing(text):
            print(f"{p.relative_to(BOOK)}: shown plumbing: {line}")
        for name in private_includes(text):
            print(f"{p.relative_to(BOOK)}: private paste: {name}")
    if (HTML / "index.html").is_file():
        counts = shown_code_by_chapter()
        for name, (cells, includes) in sorted(counts.items(), key=lambda kv: -sum(kv[1])):
            print(f"{cells + includes:5d}  {name}  (cells {cells}, literalinclude {includes})")
        total = sum(a + b for a, b in counts.values())
        print(f"{total:5d}  shown code lines, {len(counts)} chapters, budget {SHOWN_CODE_BUDGET}")
    sys.exit(0)
