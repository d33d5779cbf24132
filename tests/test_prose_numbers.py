"""Every number in the book's prose is glued from the cell that computes it, or cited.

The test reads each chapter's prose (code cells, code blocks, inline code, roles such as
``{glue:text}`` and ``{cite:p}``, labels and directive options removed) and lists the numbers
in it that are neither glued nor cited; it fails on any. A claim's number is glued
(``{glue:text}`` from the executed cell that computes it) or carries a citation in its
sentence. ``python tests/test_prose_numbers.py`` prints the list, page by page.

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

import pathlib
import re
from collections import Counter

ROOT = pathlib.Path(__file__).resolve().parents[1]
BOOK = ROOT / "book"

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


def _unless_results_file(code: re.Match) -> str:
    return code.group(0) if re.search(r"benchmarks/|experiments/results/", code.group(0)) else " "


def numbers_in(text: str) -> list[str]:
    """Numbers of the prose that are neither glued nor cited nor allowed (see the module doc)."""
    found = []
    for sentence in _sentences(prose(text)):
        if _CITED.search(_INLINE_CODE.sub(_unless_results_file, sentence)):
            continue  # inline code is no link (`f(x)[i](y)`) unless it names a results file
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
        "It is off by 0.0517 there.\n\n"
        "Call `f(dim=8)[0](x)` with 37 entries.\n\n"
        "`benchmarks/check.py` prints 64 560.\n"
    )
    assert numbers_in(page) == ["0.0517", "37"]


def test_no_unglued_numbers_in_prose():
    found = {page: counts for page, counts in survey().items() if counts}
    assert not found, (
        "numbers in prose that are neither glued nor cited (glue them from the cell that "
        f"computes them, or cite the source in the same sentence): {found}"
    )


if __name__ == "__main__":
    for page, counts in survey().items():
        if counts:
            print(page, counts)
