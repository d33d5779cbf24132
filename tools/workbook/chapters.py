"""Read a chapter (a MyST text notebook of book/) into a flat list of parts: text, worked code,
and exercises with their solutions.

A chapter writes each exercise as a sphinx-exercise block followed by a gated solution::

    ```{exercise} Title
    :label: ex-label
    prompt ...
    ```

    ````{solution-start} ex-label
    :class: dropdown
    ````
    solution prose and {code-cell}s ...
    ````{solution-end}
    ````

The markers may share a markdown cell with other text; :func:`read_chapter` splits them out.
"""

from __future__ import annotations

import dataclasses
import pathlib
import re

import jupytext

#: The three markers: an exercise block (fence, title, options, prompt, same fence), the
#: opening of a gated solution (with its options) and its closing.
MARKER_RE = re.compile(
    r"^(?P<xf>`{3,})\{exercise\}[ \t]*(?P<title>[^\n]*)\n(?P<body>.*?)^(?P=xf)[ \t]*\n?"
    r"|^(?P<sf>`{3,})\{solution-start\}[ \t]+(?P<label>\S+)[ \t]*\n(?:^:[^\n]*\n)*^(?P=sf)[ \t]*\n?"
    r"|^(?P<ef>`{3,})\{solution-end\}[ \t]*\n^(?P=ef)[ \t]*\n?",
    re.M | re.S,
)
LABEL_RE = re.compile(r"^:label:[ \t]*(\S+)[ \t]*$", re.M)
OPTION_RE = re.compile(r"^:[\w-]+:[^\n]*\n?", re.M)
TITLE_RE = re.compile(r"^# (.+)$", re.M)


@dataclasses.dataclass
class Text:
    """Markdown outside any solution."""

    source: str


@dataclasses.dataclass
class Code:
    """A worked code cell outside any solution (``metadata`` as jupytext read it)."""

    source: str
    metadata: dict


@dataclasses.dataclass
class Exercise:
    """An exercise: its prompt (MyST, options removed) and its solution's prose and code."""

    label: str
    title: str
    prompt: str
    solution_text: list[str] = dataclasses.field(default_factory=list)
    solution_code: list[str] = dataclasses.field(default_factory=list)
    solved: bool = False


@dataclasses.dataclass
class Chapter:
    """A chapter's parts in reading order."""

    path: pathlib.Path
    title: str
    parts: list
    metadata: dict

    @property
    def exercises(self) -> list[Exercise]:
        return [p for p in self.parts if isinstance(p, Exercise)]


def _pieces(text: str):
    """Split markdown into ("text", str), ("exercise", match), ("start", label), ("end", None)."""
    pos = 0
    for m in MARKER_RE.finditer(text):
        if text[pos : m.start()].strip():
            yield "text", text[pos : m.start()].strip("\n")
        if m.group("xf"):
            yield "exercise", m
        elif m.group("sf"):
            yield "start", m.group("label")
        else:
            yield "end", None
        pos = m.end()
    if text[pos:].strip():
        yield "text", text[pos:].strip("\n")


def _exercise(path: pathlib.Path, m: re.Match) -> Exercise:
    label = LABEL_RE.search(m.group("body"))
    if label is None:
        raise ValueError(f"{path}: exercise {m.group('title')!r} has no :label:")
    prompt = OPTION_RE.sub("", m.group("body")).strip()
    return Exercise(label=label.group(1), title=m.group("title").strip(), prompt=prompt)


def read_chapter(path: pathlib.Path) -> Chapter:
    """Parse a chapter into :class:`Text`, :class:`Code` and :class:`Exercise` parts.

    Raises
    ------
    ValueError
        A label appearing twice, a solution for an unknown label, or an unclosed solution.
    """
    path = pathlib.Path(path)
    nb = jupytext.read(path)
    parts: list = []
    by_label: dict[str, Exercise] = {}
    open_ex: Exercise | None = None
    for cell in nb.cells:
        if cell.cell_type == "code":
            if open_ex is not None:
                open_ex.solution_code.append(cell.source)
            else:
                parts.append(Code(cell.source, dict(cell.metadata)))
            continue
        for kind, value in _pieces(cell.source):
            if kind == "exercise":
                ex = _exercise(path, value)
                if ex.label in by_label:
                    raise ValueError(f"{path}: exercise label {ex.label!r} appears twice")
                by_label[ex.label] = ex
                parts.append(ex)
            elif kind == "start":
                if value not in by_label or open_ex is not None:
                    raise ValueError(f"{path}: solution of {value!r} without its exercise")
                open_ex = by_label[value]
            elif kind == "end":
                if open_ex is None:
                    raise ValueError(f"{path}: solution-end without solution-start")
                open_ex.solved, open_ex = True, None
            elif open_ex is not None:
                open_ex.solution_text.append(value)
            else:
                parts.append(Text(value))
    if open_ex is not None:
        raise ValueError(f"{path}: the solution of {open_ex.label!r} is never closed")
    heading = next((TITLE_RE.search(p.source) for p in parts if isinstance(p, Text)), None)
    title = heading.group(1) if heading else path.stem
    return Chapter(path=path, title=title, parts=parts, metadata=dict(nb.metadata))
