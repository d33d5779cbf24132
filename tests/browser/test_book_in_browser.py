"""The built book as a reader meets it, in headless Chromium (run by `make test-browser`).

Serves `_build/html` on 127.0.0.1 and opens every page at a phone width (420 px) and a desktop
width (1 400 px). Asserts, on every page, the API pages included: no request leaves 127.0.0.1;
math is typeset (MathJax containers, no MathJax error nodes, no literal backslash left in text
inside math); no display equation is cut off (its left edge inside its box, and what is wider
than the column scrolls); no paragraph of pipe-table text; no raw `$...$`, `(eq:...)`,
`{cite}`, `{glue}` or other MyST role text; every image loads. Also: exercise solutions are
hidden and open on click; the search page finds key terms. Screenshots of key pages at both
widths are written to `artifacts/screenshots/` (gitignored).
"""

from __future__ import annotations

import functools
import http.server
import os
import pathlib
import re
import sys
import threading
from urllib.parse import urlparse

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
from test_book_reader import RAW_MARKUP  # noqa: E402

#: The widths every page is read at: a phone and a desktop screen (CSS pixels).
WIDTHS = {"phone": 420, "desktop": 1400}
#: A display equation whose content starts further left than its box by more than this is
#: cut off (sub-pixel rounding aside).
CLIP_TOLERANCE_PX = 2
#: How long a page load, MathJax's typesetting or the search may take (ms): CI runs this suite
#: beside the other suites on two cores, where the largest pages take tens of seconds to typeset.
WAIT_MS = 90_000
HTML = pathlib.Path(os.environ.get("REFIMPL_BOOK_HTML", ROOT / "_build" / "html"))
SHOTS = ROOT / "artifacts" / "screenshots"
CHROMIUM = os.environ.get("REFIMPL_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
# Pages worth a screenshot when they exist (stems under book/).
KEY_PAGES = [
    "intro",
    "quickstart",
    "rope",
    "pairings",
    "extension_yarn",
    "extension_compare",
    "alibi",
    "numerics-pipelines",
    "check_rope",
]

pytestmark = pytest.mark.skipif(
    os.environ.get("REFIMPL_BROWSER_TESTS") != "1",
    reason="browser tests run with `make test-browser` (builds the book, installs Chromium)",
)


def _pages() -> list[str]:
    if not HTML.is_dir():
        return []
    return sorted(p.relative_to(HTML).as_posix() for p in HTML.glob("book/**/*.html"))


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # keep pytest output readable
        pass


@pytest.fixture(scope="session")
def server():
    if not (HTML / "index.html").is_file():
        pytest.fail(f"no built book at {HTML}; run `make book` first")
    handler = functools.partial(_QuietHandler, directory=str(HTML))
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()


@pytest.fixture(scope="session")
def browser():
    sync_api = pytest.importorskip("playwright.sync_api")
    if not pathlib.Path(CHROMIUM).exists():
        pytest.fail(f"Chromium not found at {CHROMIUM}; `make test-browser` installs it")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


def _new_page(browser, width: int):
    context = browser.new_context(viewport={"width": width, "height": 1000})
    context.set_default_timeout(WAIT_MS)
    context.set_default_navigation_timeout(WAIT_MS)
    pg = context.new_page()
    pg.requests = []
    pg.on("request", lambda r: pg.requests.append(r.url))
    return context, pg


@pytest.fixture
def page(browser, server):
    context, pg = _new_page(browser, WIDTHS["desktop"])
    yield pg
    context.close()


@pytest.fixture(scope="module", params=sorted(WIDTHS))
def sized_page(request, browser, server):
    """A page of the width named by the parameter, shared by the tests of one width."""
    context, pg = _new_page(browser, WIDTHS[request.param])
    yield request.param, pg
    context.close()


def _foreign(urls: list[str]) -> list[str]:
    bad = []
    for u in urls:
        parsed = urlparse(u)
        if parsed.scheme in ("data", "blob", "about"):
            continue
        if parsed.hostname != "127.0.0.1":
            bad.append(u)
    return bad


def _wait_for_mathjax(pg) -> None:
    pg.wait_for_function(
        "window.MathJax && MathJax.startup && MathJax.startup.promise", timeout=WAIT_MS
    )
    pg.evaluate("MathJax.startup.promise")


# For each display equation: how far its content starts left of its box, how far it ends right
# of its box, and whether the box scrolls sideways.
_EQUATIONS = """() => Array.from(document.querySelectorAll('div.math')).map(div => {
  const box = div.querySelector('mjx-container') || div;
  const math = box.querySelector('mjx-math') || box;
  box.scrollLeft = 0;
  const d = div.getBoundingClientRect(), b = box.getBoundingClientRect(),
        m = math.getBoundingClientRect();
  const style = getComputedStyle(box);
  const scrolls = box.scrollWidth > box.clientWidth + 1 &&
                  ['auto', 'scroll'].includes(style.overflowX);
  return {id: div.id || (div.querySelector('[id]') || {}).id || '',
          left: d.left - m.left, right: m.right - Math.min(b.right, d.right), scrolls: scrolls,
          text: (box.querySelector('mjx-assistive-mml') || box).textContent.slice(0, 60)};
})"""
# Text of math that still holds a backslash: a macro MathJax did not know (\_ in \text{}).
_MATH_BACKSLASH = r"""() => Array.from(
    document.querySelectorAll('mjx-assistive-mml mtext, mjx-merror'))
  .map(el => el.textContent).filter(t => t.includes('\\'))"""
# The article's prose as the reader sees it: code, math and scripts left out.
_PROSE = """() => {
  const article = (document.querySelector('article') || document.body).cloneNode(true);
  article.querySelectorAll('pre, code, script, style, mjx-container, .math, kbd')
    .forEach(el => el.remove());
  return article.innerText;
}"""
# Paragraphs whose text (math left out) reads as rows of a pipe table.
_PIPE_PARAGRAPHS = """() => Array.from(document.querySelectorAll('article p')).map(p => {
    const copy = p.cloneNode(true);
    copy.querySelectorAll('mjx-container, .math').forEach(el => el.remove());
    return copy.textContent.trim();
  }).filter(t => t.startsWith('|') && t.split('|').length > 3).map(t => t.slice(0, 80))"""


def _clipped(equations: list[dict]) -> list[str]:
    bad = []
    for eq in equations:
        if eq["left"] > CLIP_TOLERANCE_PX:
            bad.append(f"{eq['id'] or eq['text']!r} starts {eq['left']:.0f} px left of its box")
        elif eq["right"] > CLIP_TOLERANCE_PX and not eq["scrolls"]:
            bad.append(f"{eq['id'] or eq['text']!r} overflows {eq['right']:.0f} px, no scroll")
    return bad


@pytest.mark.parametrize("rel", _pages())
def test_page_reads_right(sized_page, server, rel):
    """Everything a reader sees on one page at one width (one load per page and width)."""
    width_name, page = sized_page
    page.requests.clear()
    page.goto(f"{server}/{rel}", wait_until="load")
    source = (HTML / rel).read_text(encoding="utf8")
    problems = []
    if 'class="math' in source:
        _wait_for_mathjax(page)
        if page.locator("mjx-container").count() == 0:
            problems.append("has math but MathJax typeset nothing")
        if page.locator("mjx-merror").count():
            problems.append("MathJax reported errors")
        backslashes = page.evaluate(_MATH_BACKSLASH)
        problems += [f"literal backslash in math text {t!r}" for t in backslashes]
        problems += [f"clipped equation: {c}" for c in _clipped(page.evaluate(_EQUATIONS))]
    problems += [f"pipe-table text: {t!r}" for t in page.evaluate(_PIPE_PARAGRAPHS)]
    prose = page.evaluate(_PROSE)
    problems += [f"raw markup {m.group(0)[:50]!r}" for m in RAW_MARKUP.finditer(prose)]
    widths = page.eval_on_selector_all(
        "img", "imgs => imgs.map(i => [i.getAttribute('src'), i.complete && i.naturalWidth])"
    )
    problems += [f"image did not load: {src}" for src, w in widths if not w]
    page.wait_for_timeout(200)
    problems += [f"request off 127.0.0.1: {u}" for u in _foreign(page.requests)]
    stem = pathlib.Path(rel).stem
    if stem in KEY_PAGES:
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / f"{stem}-{width_name}.png"), full_page=False)
    assert not problems, f"{rel} at {WIDTHS[width_name]} px: " + "; ".join(problems[:8])


def test_clip_detector():
    ok = {"id": "a", "left": 0.4, "right": 120.0, "scrolls": True, "text": ""}
    cut = {"id": "b", "left": 94.0, "right": 0.0, "scrolls": False, "text": ""}
    stuck = {"id": "c", "left": 0.0, "right": 40.0, "scrolls": False, "text": ""}
    assert _clipped([ok]) == []
    assert len(_clipped([cut, stuck])) == 2
    assert re.search(r"'b' starts 94 px left", _clipped([cut])[0])


def test_every_page_was_found():
    pages = _pages()
    assert "book/intro.html" in pages
    assert len(pages) > 3, f"expected the book's pages under {HTML}/book, found {pages}"


def test_every_key_page_exists():
    stems = {pathlib.Path(rel).stem for rel in _pages()}
    missing = [s for s in KEY_PAGES if s not in stems]
    assert not missing, f"KEY_PAGES names pages that the book does not have: {missing}"


def test_root_opens_the_landing_page(page, server):
    page.goto(f"{server}/index.html")
    page.wait_for_url("**/book/intro.html", timeout=10000)
    assert page.locator("article h1").first.is_visible()


def _pages_with_solutions() -> list[str]:
    return [
        rel
        for rel in _pages()
        if 'class="solution dropdown' in (HTML / rel).read_text(encoding="utf8")
    ]


def test_the_book_has_exercise_solutions():
    assert _pages_with_solutions(), "no page has a dropdown solution"


@pytest.mark.parametrize("rel", _pages_with_solutions())
def test_solutions_are_hidden_and_open_on_click(page, server, rel):
    page.goto(f"{server}/{rel}", wait_until="load")
    solutions = page.locator("div.solution.dropdown")
    n = solutions.count()
    assert n > 0
    for k in range(n):
        sol = solutions.nth(k)
        body = sol.locator(":scope > :not(.admonition-title)")
        assert body.count() > 0, f"{rel}: solution {k} has no body"
        assert not any(body.nth(j).is_visible() for j in range(body.count())), (
            f"{rel}: solution {k} is visible before it is opened"
        )
        sol.locator("button.toggle-button").first.click()
        page.wait_for_timeout(100)
        assert all(body.nth(j).is_visible() for j in range(body.count())), (
            f"{rel}: solution {k} did not open on click"
        )


@pytest.mark.parametrize("term", ["YaRN", "ALiBi", "rotation"])
def test_search_finds(page, server, term):
    page.goto(f"{server}/search.html?q={term}", wait_until="load")
    page.wait_for_selector("#search-results li", timeout=WAIT_MS)
    assert page.locator("#search-results li").count() >= 1
    assert not _foreign(page.requests)


_WIDE_CODE = """() => Array.from(document.querySelectorAll('div.cell_input pre, div.highlight pre'))
  .filter(el => Math.max(...el.textContent.split('\\n').map(l => l.length)) <= 88)
  .filter(el => el.scrollWidth > el.clientWidth + 1)
  .map(el => el.textContent.split('\\n').sort((a, b) => b.length - a.length)[0])"""


@pytest.mark.parametrize("rel", [r for r in _pages() if not r.startswith("book/api")])
def test_code_of_88_columns_fits_without_scrolling(page, server, rel):
    # the chapters wrap code at 88 columns; at a desktop width such a block must fit the column
    # (the API pages show the package's docstrings, indented in definition lists, whose lines
    # follow the package's 100-column limit)
    page.goto(f"{server}/{rel}", wait_until="load")
    wide = page.evaluate(_WIDE_CODE)
    assert not wide, f"{rel}: {len(wide)} code block(s) scroll sideways, e.g. {wide[0]!r}"
