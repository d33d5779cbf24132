"""The bibliography: every entry links to its source, and one author-year style throughout.

The style is ``book/_ext/bib_author_year.py``: the bibliography labels entries ``Author, Year``
and the in-text citations are read off those labels. The last test builds a small Sphinx
project from the book's real bib files and checks, in the HTML, that each citation reads as
the label of the entry it links to.
"""

from __future__ import annotations

import functools
import html
import pathlib
import re
import subprocess
import sys

import pytest

yaml = pytest.importorskip("yaml")
pybtex_database = pytest.importorskip("pybtex.database")
PlainTextBackend = pytest.importorskip("pybtex.backends.plaintext").Backend
pytest.importorskip("sphinxcontrib.bibtex")

ROOT = pathlib.Path(__file__).resolve().parents[1]
EXT_DIR = ROOT / "book" / "_ext"
sys.path.insert(0, str(EXT_DIR))
import bib_author_year as bay  # noqa: E402

bay.register()

BIB_FILES = [ROOT / "references.bib", *sorted((ROOT / "book" / "bib").glob("*.bib"))]
LABEL = re.compile(r"^(?P<author>.+), (?P<year>\d{4}[a-z]?|n\.d\.)$")
THREAD = re.compile(r"^https://github\.com/[\w.-]+/[\w.-]+/(?:issues|pull)/(?P<n>\d+)$")
# a bug report named in prose: "transformers#25199", "llama2.c PR #286", "TinyLlama issue #24"
BUG_MENTION = re.compile(r"[\w.-]+(?:#| (?:PR|issue|pull request) #)\d+", re.IGNORECASE)


def _entries():
    for path in BIB_FILES:
        for key, entry in pybtex_database.parse_file(str(path)).entries.items():
            yield path.relative_to(ROOT), key, entry


@functools.cache
def _formatted():
    """(entry, formatted entry) for every entry of every bib file, as the book formats them."""
    data = pybtex_database.BibliographyData()
    for _, key, entry in _entries():
        data.add_entry(key, entry)
    style = bay.AuthorYearStyle()
    entries = style.sort(data.entries.values())
    return list(zip(entries, style.format_entries(entries), strict=True))


def test_every_entry_links_to_its_source():
    missing = [
        f"{path}: {key}"
        for path, key, entry in _entries()
        if not entry.fields.get("url", "").startswith("https://")
    ]
    assert not missing, f"entries without an https url: {missing}"


def test_cited_bug_reports_link_to_their_thread():
    reports = [
        (key, entry)
        for _, key, entry in _entries()
        if re.search(r"\b(issue|pull request|PR)\b", entry.fields.get("howpublished", ""))
    ]
    assert reports  # the book cites bug reports; the test must see them
    for key, entry in reports:
        number = re.search(r"#(\d+)", entry.fields["howpublished"]).group(1)
        thread = THREAD.match(entry.fields["url"])
        assert thread and thread["n"] == number, (key, entry.fields["url"])


def _prose_sentences(text: str):
    from test_prose_numbers import prose

    return re.split(r"(?<=[.;!?])\s+|\n\s*\n", prose(text))


def test_bug_reports_named_in_the_pages_are_linked():
    unlinked = []
    for page in sorted((ROOT / "book").rglob("*.md")):
        if "_build" in page.parts:
            continue
        for sentence in _prose_sentences(page.read_text("utf8")):
            plain = re.sub(r"\]\([^)]*\)|\{cite[a-z:]*\}`[^`]*`", "", sentence)
            for mention in BUG_MENTION.findall(plain):
                # linked: a markdown link whose text is the mention, or a citation right after it
                linked = re.search(
                    rf"\[[^\]]*{re.escape(mention)}[^\]]*\]\(https?://|"
                    rf"{re.escape(mention)}\s*\{{cite",
                    sentence,
                )
                if not linked:
                    unlinked.append(f"{page.relative_to(ROOT)}: {mention}")
    assert not unlinked, unlinked


def test_config_uses_the_one_style():
    config = yaml.safe_load((ROOT / "_config.yml").read_text("utf8"))["sphinx"]
    assert config["local_extensions"]["bib_author_year"] == "book/_ext"
    assert "bib_author_year" in config["config"]["extensions"]
    assert config["config"]["bibtex_default_style"] == bay.STYLE
    assert config["config"]["bibtex_reference_style"] == bay.STYLE


def test_labels_are_author_year_and_unique():
    formatted = _formatted()
    labels = [f.label for _, f in formatted]
    assert len(labels) == len(set(labels)), "two entries share a label"
    for label in labels:
        assert LABEL.match(label), label
    # the bibliography is in label order
    assert [bay.sort_key(e) for e, _ in formatted] == sorted(bay.sort_key(e) for e, _ in formatted)
    by_key = {f.key: f.label for _, f in formatted}
    assert by_key["press2022train"] == "Press et al., 2022"  # three authors
    assert by_key["kingma2015adam"] == "Kingma and Ba, 2015"  # two
    assert by_key["higham2002accuracy"] == "Higham, 2002"  # one
    assert by_key["bai2025qwen25vl"] == "Bai et al., 2025"  # "Bai, Shuai and others"
    # same author part and year: a, b in title order
    assert by_key["deepseekai2024v2"] == "DeepSeek-AI, 2024a"
    assert by_key["deepseekai2024v3"] == "DeepSeek-AI, 2024b"


def test_formatted_entries_show_their_url():
    backend = PlainTextBackend()
    for entry, formatted in _formatted():
        url = entry.fields.get("url")
        assert url and url in formatted.text.render(backend), entry.key


def test_split_label_inverts_the_label():
    for label in ("Press et al., 2022", "Kingma and Ba, 2015", "DeepSeek-AI, 2024a"):
        author, year = bay.split_label(label)
        assert f"{author}{bay.LABEL_SEP}{year}" == label
    assert bay.split_label("Cody and Waite, 1980") == ("Cody and Waite", "1980")


def _strip(fragment: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", fragment)).strip()


def test_text_citations_read_as_the_bibliography_labels(tmp_path):
    keys = [key for _, key, _ in _entries()]
    (tmp_path / "conf.py").write_text(
        "import sys\n"
        f"sys.path.insert(0, {str(EXT_DIR)!r})\n"
        "extensions = ['sphinxcontrib.bibtex', 'bib_author_year']\n"
        f"bibtex_bibfiles = {[str(p) for p in BIB_FILES]!r}\n"
        f"bibtex_default_style = bibtex_reference_style = {bay.STYLE!r}\n"
    )
    body = "\n\n".join(f"P :cite:p:`{k}`. T :cite:t:`{k}`." for k in keys)
    (tmp_path / "index.rst").write_text(f"Test\n====\n\n{body}\n\n.. bibliography::\n")
    out = tmp_path / "_out"
    subprocess.run(
        [sys.executable, "-m", "sphinx", "-q", "-W", "-b", "html", str(tmp_path), str(out)],
        check=True,
        capture_output=True,
    )
    page = (out / "index.html").read_text("utf8")
    labels = {
        m["id"]: _strip(m["label"])
        for m in re.finditer(
            r'<div class="citation" id="(?P<id>[^"]+)"[^>]*>\s*<span class="label">'
            r'<span class="fn-bracket">\[</span>(?P<label>.*?)<span class="fn-bracket">\]',
            page,
            re.S,
        )
    }
    assert len(labels) == len(keys)
    link = r'<a class="reference internal" href="#(?P<id>[^"]+)"[^>]*>(?P<text>.*?)</a>'
    paras = re.findall(r"<p>P (.*?)</p>", page, re.S)
    assert len(paras) == len(keys)
    for para in paras:
        p_cite, t_cite = para.split(". T ")
        p = re.search(rf"\[{link}\]", p_cite)
        assert p and _strip(p["text"]) == labels[p["id"]]  # [Press et al., 2022]
        t = re.search(rf"^(?P<author>.*?) \[{link}\]", t_cite, re.S)
        assert t, t_cite
        author, year = bay.split_label(labels[t["id"]])
        assert (_strip(t["author"]), _strip(t["text"])) == (author, year)  # Press et al. [2022]
