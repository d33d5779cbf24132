"""Sphinx extension: one author-year citation style for the text and the bibliography.

sphinxcontrib-bibtex formats in-text citations with a *referencing* style and the bibliography
with a pybtex *formatting* style, each with its own labels: out of the box, ``author_year``
citations ("Press et al. [2022]") point at entries labelled in the alpha style ("[PSL22]").
This extension registers both halves from one label:

``refimpl_author_year`` (pybtex formatting style)
    pybtex's ``unsrt`` entry format, sorted by label (author part, year) and title, each labelled
    ``Author, Year`` (:func:`author_part`: one author's surname, ``A and B`` for two, ``A et al.``
    for three or more or for a list ending in ``and others``). Entries whose label would
    repeat get ``a``, ``b``, ... after the year, in the sorted order.
``refimpl_author_year`` (sphinxcontrib-bibtex referencing style)
    ``{cite:p}`` prints ``[label]`` (several keys joined by "; "), ``{cite:t}`` prints
    ``Author [Year]``; both are read off the entry's bibliography label, so the text and the
    bibliography cannot disagree, year suffixes included.

Configuration (``_config.yml``'s ``sphinx.config``)::

    bibtex_default_style: refimpl_author_year
    bibtex_reference_style: refimpl_author_year
"""

from __future__ import annotations

import dataclasses
import functools
import re
import string
from collections import Counter
from collections.abc import Iterable, Iterator

import pybtex.plugin
from pybtex.backends.plaintext import Backend as PlainTextBackend
from pybtex.richtext import Text
from pybtex.style.formatting.unsrt import Style as UnsrtStyle
from pybtex.style.labels import BaseLabelStyle
from pybtex.style.sorting import BaseSortingStyle
from pybtex.style.template import join, node
from sphinxcontrib.bibtex.plugin import register_plugin
from sphinxcontrib.bibtex.style.referencing import (
    BaseReferenceStyle,
    BracketStyle,
    GroupReferenceStyle,
)
from sphinxcontrib.bibtex.style.template import (
    entry_label,
    join2,
    post_text,
    pre_text,
    reference,
)

STYLE = "refimpl_author_year"
LABEL_SEP = ", "  # between the author part and the year in a label
ET_AL = "et al."
NO_YEAR = "n.d."


_PLAIN = PlainTextBackend()  # render_as("text") would look the backend up on every call


@functools.cache
def _plain(latex: str) -> str:
    """LaTeX text (accents, braces) as plain Unicode."""
    return str(Text.from_latex(latex).render(_PLAIN)).strip()


def _surname(person) -> str:
    return _plain(" ".join(person.prelast_names + person.last_names))


def author_part(entry) -> str:
    """The author half of a label: ``A``, ``A and B``, or ``A et al.``.

    Uses the authors, else the editors, else the title. ``and others`` at the end of a list
    counts as more authors (so ``X and others`` is ``X et al.``).
    """
    for role in ("author", "editor"):
        persons = list(entry.persons.get(role, ()))
        if not persons:
            continue
        others = _surname(persons[-1]).lower() == "others"
        named = persons[:-1] if others else persons
        if len(named) == 1 and not others:
            return _surname(named[0])
        if len(named) == 2 and not others:
            return f"{_surname(named[0])} and {_surname(named[1])}"
        return f"{_surname(named[0])} {ET_AL}"
    return _plain(entry.fields.get("title", "Anonymous"))


def year_of(entry) -> str:
    year = entry.fields.get("year", "").strip()
    return year if re.fullmatch(r"\d{4}", year) else (year or NO_YEAR)


class AuthorYearLabelStyle(BaseLabelStyle):
    """Labels ``Author, Year``; repeated labels get ``a``, ``b``, ... in sorted order."""

    def format_labels(self, sorted_entries: Iterable) -> Iterator[str]:
        entries = list(sorted_entries)
        bases = [f"{author_part(e)}{LABEL_SEP}{year_of(e)}" for e in entries]
        counts = Counter(bases)
        seen: Counter = Counter()
        for base in bases:
            if counts[base] == 1:
                yield base
                continue
            suffix = string.ascii_lowercase[seen[base]]
            seen[base] += 1
            yield base + suffix


def sort_key(entry) -> tuple[str, str, str]:
    """Bibliography order: the label's author part (case-insensitive), year, title."""
    title = _plain(entry.fields.get("title", ""))
    return (author_part(entry).casefold(), year_of(entry), title.casefold())


class AuthorYearSortingStyle(BaseSortingStyle):
    """Entries in the order of their labels (:func:`sort_key`)."""

    def sorting_key(self, entry):
        return sort_key(entry)


class AuthorYearStyle(UnsrtStyle):
    """pybtex's unsrt entry format with author-year labels, in the labels' order."""

    default_label_style = STYLE
    default_sorting_style = STYLE


def split_label(label: str) -> tuple[str, str]:
    """``("Press et al.", "2022")`` from the label ``"Press et al., 2022"``."""
    author, sep, year = label.rpartition(LABEL_SEP)
    return (author, year) if sep else (label, "")


@node
def label_author(children, data):
    """Template node: the author half of the entry's bibliography label."""
    assert not children
    return Text(split_label(data["formatted_entry"].label)[0])


@node
def label_year(children, data):
    """Template node: the year half (suffix included) of the entry's bibliography label."""
    assert not children
    return Text(split_label(data["formatted_entry"].label)[1])


@dataclasses.dataclass
class _Parenthetical(BaseReferenceStyle):
    bracket: BracketStyle = dataclasses.field(default_factory=BracketStyle)

    def role_names(self):
        return [f"{alt}p{full}" for alt in ("", "al") for full in ("", "s")]

    def outer(self, role_name, children):
        return self.bracket.outer(children, brackets="al" not in role_name, capfirst=False)

    def inner(self, role_name):
        return join2(sep1=" ", sep2=", ")[pre_text, reference[entry_label], post_text]


@dataclasses.dataclass
class _Textual(BaseReferenceStyle):
    bracket: BracketStyle = dataclasses.field(default_factory=BracketStyle)

    def role_names(self):
        return [f"{cap}t{full}" for cap in ("", "c") for full in ("", "s")]

    def outer(self, role_name, children):
        return self.bracket.outer(children, brackets=False, capfirst="c" in role_name)

    def inner(self, role_name):
        return join(sep=" ")[
            label_author,
            join[
                self.bracket.left,
                join2(sep1=" ", sep2=", ")[pre_text, reference[label_year], post_text],
                self.bracket.right,
            ],
        ]


@dataclasses.dataclass
class _AuthorOnly(BaseReferenceStyle):
    def role_names(self):
        return [f"{cap}author{full}" for cap in ("", "c") for full in ("", "s")]

    def outer(self, role_name, children):
        return BracketStyle().outer(children, brackets=False, capfirst="c" in role_name)

    def inner(self, role_name):
        return reference[label_author]


@dataclasses.dataclass
class _YearOrLabelOnly(BaseReferenceStyle):
    def role_names(self):
        return ["year", "label"]

    def outer(self, role_name, children):
        return BracketStyle().outer(children, brackets=False, capfirst=False)

    def inner(self, role_name):
        return reference[label_year if role_name == "year" else entry_label]


@dataclasses.dataclass
class AuthorYearReferenceStyle(GroupReferenceStyle):
    """In-text citations read off the bibliography's author-year labels."""

    def __post_init__(self):
        self.styles.extend(
            [
                _Parenthetical(bracket=BracketStyle(sep="; ")),
                _Textual(),
                _AuthorOnly(),
                _YearOrLabelOnly(),
            ]
        )
        super().__post_init__()


def register() -> None:
    """Register the label, sorting, formatting and referencing styles (idempotent)."""
    pybtex.plugin.register_plugin("pybtex.style.labels", STYLE, AuthorYearLabelStyle)
    pybtex.plugin.register_plugin("pybtex.style.sorting", STYLE, AuthorYearSortingStyle)
    pybtex.plugin.register_plugin("pybtex.style.formatting", STYLE, AuthorYearStyle)
    register_plugin("sphinxcontrib.bibtex.style.referencing", STYLE, AuthorYearReferenceStyle)


def setup(app):
    register()
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
