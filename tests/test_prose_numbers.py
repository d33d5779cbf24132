"""Every number in the book's prose is glued from the cell that computes it, or cited.

The test reads each chapter's prose (code cells, code blocks, inline code, roles such as
``{glue:text}`` and ``{cite:p}``, labels and directive options removed) and lists the numbers
in it that are neither glued nor cited. The numbers that remain on a page today are recorded in
``tests/prose_numbers_baseline.json``; the test fails on any number that is not in that record,
so a new claim must be glued (``{glue:text}`` from an executed cell) or carry a citation in its
sentence. When a page's prose number is glued or removed, regenerate the record with
``python tests/test_prose_numbers.py --update`` (it only ever shrinks by hand-reviewed edits).

What is *not* a claim, and so never listed (the allow-list, kept small on purpose):

* numbers inside math or prose that are **structural**: the integers 0 to 10 (indices, counts
  of things on the page, small dimensions) and powers of two (head widths, lengths, formats'
  bit counts and unit roundoffs such as ``2^{-24}`` are definitions, not measurements);
* **defined constants** of the conventions: the bases 10000 and 500000 (and their powers of
  ten, ``10^4``) and YaRN's coefficient 0.1 in ``0.1 ln s + 1``;
* **references to other text**: equation, figure, theorem, exercise, section, appendix,
  issue and pull-request numbers (``Eq. (12)``, ``Fig. 9``, ``#25199``, ``§3.5``), and
  version numbers (``transformers 5.24``, ``4.57.1``, ``v2``);
* **years** written next to an author or in parentheses (``(2021)``, ``Su 2021``);
* numbers in a sentence that carries a citation (``{cite...}``), a link, or names a file
  of recorded results (``benchmarks/README.md``, ``experiments/results/...``).
"""

from __future__ import annotations

import json
import pathlib
import re
import sys
from collections import Counter

ROOT = pathlib.Path(__file__).resolve().parents[1]
BOOK = ROOT / "book"
BASELINE = ROOT / "tests" / "prose_numbers_baseline.json"

# pages whose prose is not the book's claims (generated indexes, API reference text)
SKIP_PAGES = {"exercises.md", "bibliography.md", "api.md"}

_FENCE = re.compile(r"^(`{3,}|:{3,}|~{3,})(.*)$")
_ROLE = re.compile(r"\{[a-z:\-]+\}`[^`]*`")  # {glue:text}`x`, {cite:p}`k`, {eq}`l`, ...
_INLINE_CODE = re.compile(r"`[^`]*`")
_LINK = re.compile(r"\]\([^)]*\)|https?://\S+")
_LABEL = re.compile(r"\((?:eq|fig|thm|ex|tab|sec|prop|def)[:\-][^)]*\)")
_REFERENCE = re.compile(
    r"(?:Eq(?:uation)?s?\.?|Fig(?:ure)?s?\.?|Theorem|Proposition|Lemma|Exercise|Section|"
    r"Appendix|App\.|Chapter|Table|Definition|§|#|PR|issue|step|steps|item|mistakes?|part)"
    r"\s*\(?[A-Z]?\d+(?:\.\d+)*\)?",
    re.IGNORECASE,
)
_VERSION = re.compile(
    r"(?:\b\d+\.\d+\.\d+\b|\bv\d+(?:\.\d+)*\b|"
    r"(?:transformers|torch|numpy|sympy|mpmath|jupyter-book|python|Python|llama\.cpp|"
    r"rotary-embedding-torch|CUDA|Qwen|Llama|Phi|GPT|DeepSeek|Mistral|Gemma|T5|mT5)"
    r"[- ]?\d+(?:\.\d+)*(?:[- ]\d+[bBkKmM]?)?)"
)
_YEAR = re.compile(r"\((?:19|20)\d\d[a-z]?\)|\b(?:et al\.?|and others),? (?:19|20)\d\d\b")
_CITED = re.compile(r"\{cite|\]\(|https?://|benchmarks/|experiments/results/")
_NUMBER = re.compile(r"(?<![\w.])\d+(?:[.,]\d+)*(?:[eE][-+]?\d+)?")
# the default and Llama 3 bases, and the coefficient of YaRN's attention factor 0.1 ln s + 1
_DEFINED = {10000.0, 500000.0, 0.1}


def prose(text: str) -> str:
    """The prose of a MyST page: front matter, code, directives' options and roles removed."""
    if text.startswith("---"):
        text = text.split("---", 2)[2]
    out, fence, in_code = [], None, False
    for line in text.splitlines():
        m = _FENCE.match(line.strip())
        if fence is None and m:
            fence = m.group(1)
            info = m.group(2)
            in_code = not info.startswith("{") or info.startswith(
                ("{code-cell}", "{literalinclude}", "{eval-rst}", "{glue:figure}")
            )
            if info.startswith("{glue:figure}"):
                in_code = False
            continue
        if fence is not None and line.strip() == fence:
            fence, in_code = None, False
            continue
        if fence is not None and line.strip().startswith(fence[0] * len(fence)) and m:
            # a nested directive fence of the same kind: treat as prose delimiter
            continue
        if in_code or (line.lstrip().startswith(":") and re.match(r"\s*:[\w-]+:", line)):
            continue
        out.append(line)
    return "\n".join(out)


def _sentences(text: str):
    # split after . ; ! ? but not after the abbreviations that precede a reference number
    abbreviations = "".join(
        f"(?<!{re.escape(a)})"
        for a in ("Eq.", "Eqs.", "Fig.", "Figs.", "App.", "al.", "cf.", "vs.")
    )
    return re.split(rf"{abbreviations}(?<=[.;!?])\s+|\n\s*\n", text)


def _is_structural(token: str) -> bool:
    value = float(token.replace(",", ""))
    if value.is_integer() and 0 <= value <= 10:
        return True
    if value.is_integer() and value >= 1 and (int(value) & (int(value) - 1)) == 0:
        return True  # a power of two
    return value in _DEFINED


def numbers_in(text: str) -> list[str]:
    """Numbers of the prose that are neither glued nor cited nor allowed (see the module doc)."""
    found = []
    for sentence in _sentences(prose(text)):
        if _CITED.search(sentence):
            continue
        s = _ROLE.sub(" ", sentence)
        s = _INLINE_CODE.sub(" ", s)
        s = _LINK.sub(" ", s)
        s = _LABEL.sub(" ", s)
        s = _REFERENCE.sub(" ", s)
        s = _VERSION.sub(" ", s)
        s = _YEAR.sub(" ", s)
        s = re.sub(r"\^\{?-?[\d.]+\}?", " ", s)  # exponents: 10^6, 2^{-8}, 10^{6.3}
        s = re.sub(r"_\{?[\w\-+]+\}?", " ", s)  # subscripts: \theta_0, h_{j-1}
        for token in _NUMBER.findall(s):
            if not _is_structural(token):
                found.append(token)
    return found


def pages() -> list[pathlib.Path]:
    return sorted(
        p
        for p in BOOK.rglob("*.md")
        if "_build" not in p.parts and p.name not in SKIP_PAGES and not p.name.startswith("api")
    )


def survey() -> dict[str, dict[str, int]]:
    return {
        str(p.relative_to(BOOK)): dict(sorted(Counter(numbers_in(p.read_text("utf8"))).items()))
        for p in pages()
    }


def test_allow_list_is_principled():
    # glued, cited and structural numbers are not listed; a bare measured number is
    page = (
        "---\nkernelspec: {name: python3}\n---\n"
        "The error is {glue:text}`err:.1e` at $m = 10^6$, pair 3, base 10000, $d = 128$.\n\n"
        "See Eq. (12) and Fig. 9 of transformers 5.24 (2021).\n\n"
        "The paper reports 0.76 {cite:p}`x`.\n\n"
        "```{code-cell} ipython3\nx = 0.123\n```\n\n"
        "It is off by 0.0517 there.\n"
    )
    assert numbers_in(page) == ["0.0517"]


def test_no_new_unglued_numbers_in_prose():
    baseline = json.loads(BASELINE.read_text("utf8"))
    new = {}
    for page, counts in survey().items():
        allowed = baseline.get(page, {})
        extra = {tok: n - allowed.get(tok, 0) for tok, n in counts.items()}
        extra = {tok: n for tok, n in extra.items() if n > 0}
        if extra:
            new[page] = extra
    assert not new, (
        "numbers in prose that are neither glued nor cited (glue them from the cell that "
        f"computes them, or cite the source in the same sentence): {new}"
    )


if __name__ == "__main__":
    if sys.argv[1:] == ["--update"]:
        BASELINE.write_text(json.dumps(survey(), indent=1, sort_keys=True) + "\n", "utf8")
    else:
        for page, counts in survey().items():
            if counts:
                print(page, counts)
