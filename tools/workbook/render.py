"""Turn a chapter's MyST into what a notebook shows, so that the workbook reads like the book.

Jupyter renders CommonMark and MathJax, not MyST: a ``{prf:theorem}`` fence would show as a
code block, a ``{glue:text}`` role as raw text, a labelled equation without its number. This
module rewrites the chapter's markdown and its worked code:

* theorems, propositions and proofs become titled blockquotes (**Theorem 4 (Relative
  position).** ...), other admonitions likewise; ``literalinclude`` becomes the code it includes;
* a ``{glue:figure}`` becomes the figure itself (a PNG attachment of the markdown cell) and
  its numbered caption; ``{glue:text}`` and ``{glue}`` become the glued values, formatted as
  the book formats them;
* labelled equations get the book's number (``\\tag{27}``), and ``{eq}``, ``{prf:ref}``,
  ``{numref}`` references the number they point to; ``{doc}`` links the chapter's notebook in
  the workbook (or names the chapter); ``{cite}`` gives author and year;
* worked code loses its build plumbing (gluing, the plotting style, closing figures, import
  paths); a cell left empty is dropped.

The numbers, values and figures come from a built book (:class:`BookBuild`: the HTML that
``jupyter-book build`` wrote and the glue records of its executed notebooks). Without one the
markdown keeps the structure and the figures are drawn by the code cells when run.
"""

from __future__ import annotations

import ast
import dataclasses
import json
import pathlib
import re

#: A fenced directive's opening line: the fence, the directive's name and its argument.
FENCE_RE = re.compile(r"^(?P<fence>`{3,}|:{3,})\{(?P<name>[^}\s]+)\}[ \t]*(?P<arg>[^\n]*)$")
OPTION_RE = re.compile(r"^:(?P<key>[\w-]+):[ \t]*(?P<value>[^\n]*)$")
ROLE_RE = re.compile(r"\{(?P<role>[\w:-]+)\}`(?P<body>[^`]*)`")
#: A labelled display equation: $$ ... $$ (label).
EQUATION_RE = re.compile(r"\$\$(?P<body>(?:(?!\$\$).)+?)\$\$[ \t]*\((?P<label>[^)\s]+)\)", re.S)
#: Theorem-like directives of sphinx-proof and their titles.
PROOF_KINDS = {
    "prf:theorem": "Theorem",
    "prf:proposition": "Proposition",
    "prf:lemma": "Lemma",
    "prf:corollary": "Corollary",
    "prf:definition": "Definition",
    "prf:conjecture": "Conjecture",
    "prf:example": "Example",
    "prf:remark": "Remark",
    "prf:algorithm": "Algorithm",
    "prf:property": "Property",
    "prf:observation": "Observation",
}
#: Calls that only serve the book's build (glue, style, closing figures, import paths).
PLUMBING_CALLS = {"glue", "glue_value", "glue_figure", "use_book_style", "set_matplotlib_formats"}
PLUMBING_ATTR_CALLS = {("plt", "close"), ("sys.path", "insert"), ("sys.path", "append")}
PLUMBING_MODULES = {"myst_nb", "matplotlib_inline.backend_inline"}
#: The placeholder a value takes when no built book provides it.
MISSING_VALUE = "(value computed in the book)"


def make_id(text: str) -> str:
    """The HTML id Sphinx gives a label (docutils' ``make_id``)."""
    from docutils.nodes import make_id as docutils_make_id

    return docutils_make_id(text)


@dataclasses.dataclass
class BookBuild:
    """What a built book knows that its sources do not: numbers, glued values and figures.

    ``numbers`` maps an HTML id (a figure's name, a theorem's label, ``equation-<label>``) to
    the number the book shows ("Fig. 7", "Theorem 4", "(27)"); ``glue`` maps a docname to its
    glued outputs (key -> MIME bundle).
    """

    numbers: dict[str, str] = dataclasses.field(default_factory=dict)
    glue: dict[str, dict] = dataclasses.field(default_factory=dict)

    @classmethod
    def read(cls, build_dir: pathlib.Path | None) -> BookBuild:
        """Read ``_build`` (its ``html/`` and ``jupyter_execute/``); empty if it is missing."""
        if build_dir is None or not (pathlib.Path(build_dir) / "html" / "index.html").is_file():
            return cls()
        build_dir = pathlib.Path(build_dir)
        numbers: dict[str, str] = {}
        for page in sorted((build_dir / "html").glob("book/**/*.html")):
            numbers.update(numbers_of_page(page.read_text(encoding="utf8")))
        glue = {}
        executed = build_dir / "jupyter_execute"
        for record in sorted(executed.glob("**/*.glue.json")):
            docname = record.relative_to(executed).as_posix().removesuffix(".glue.json")
            glue[docname] = json.loads(record.read_text(encoding="utf8"))
        return cls(numbers=numbers, glue=glue)

    def __bool__(self) -> bool:
        return bool(self.numbers or self.glue)


_EQNO_RE = re.compile(r'<span class="eqno">([^<]*)<a class="headerlink" href="#([^"]+)"')
_NUMBERED_RE = re.compile(
    r'<(?:div class="proof[^"]*"|figure[^>]*?) id="([^"]+)">\s*(?:<[^>]*>\s*)*?'
    r'<span class="caption-number">([^<]+)</span>'
)


def numbers_of_page(html: str) -> dict[str, str]:
    """The numbered things of one built page: equations ("(27)"), theorems and the like
    ("Theorem 4"), figures ("Fig. 7"), by their HTML id."""
    out = {target: number.strip() for number, target in _EQNO_RE.findall(html)}
    out.update({ident: number.strip() for ident, number in _NUMBERED_RE.findall(html)})
    return out


@dataclasses.dataclass
class Context:
    """What the rewriting of one chapter needs to know.

    ``docname`` is the chapter's (``book/rope``); ``titles`` maps docnames to chapter titles;
    ``notebooks`` maps the docnames that have a workbook notebook to their path in the
    workbook; ``citations`` maps bibliography keys to "Author, Year"; ``source_dir`` is the
    chapter's folder (for ``literalinclude``).
    """

    docname: str
    book: BookBuild = dataclasses.field(default_factory=BookBuild)
    titles: dict[str, str] = dataclasses.field(default_factory=dict)
    notebooks: dict[str, str] = dataclasses.field(default_factory=dict)
    citations: dict[str, str] = dataclasses.field(default_factory=dict)
    source_dir: pathlib.Path | None = None
    attachments: dict[str, dict] = dataclasses.field(default_factory=dict)


# --- markdown ---------------------------------------------------------------------------------


def _split_fences(text: str):
    """Yield ("text", str) and ("directive", name, arg, options, body) pieces of ``text``."""
    lines = text.split("\n")
    buf: list[str] = []
    i = 0
    while i < len(lines):
        m = FENCE_RE.match(lines[i])
        if not m:
            buf.append(lines[i])
            i += 1
            continue
        fence = m.group("fence")
        close = next((j for j in range(i + 1, len(lines)) if lines[j].rstrip() == fence), None)
        if close is None:
            buf.append(lines[i])
            i += 1
            continue
        if buf:
            yield ("text", "\n".join(buf))
            buf = []
        body = lines[i + 1 : close]
        options = {}
        while body and (OPTION_RE.match(body[0]) or body[0].strip() == "---"):
            opt = OPTION_RE.match(body[0])
            if opt:
                options[opt.group("key")] = opt.group("value").strip()
            body = body[1:]
        yield ("directive", m.group("name"), m.group("arg").strip(), options, "\n".join(body))
        i = close + 1
    if buf:
        yield ("text", "\n".join(buf))


def _quote(text: str) -> str:
    return "\n".join("> " + line if line.strip() else ">" for line in text.strip().split("\n"))


def _anchor(label: str | None) -> str:
    return f'<a id="{make_id(label)}"></a>\n' if label else ""


def _figure(key: str, options: dict, caption: str, ctx: Context) -> str:
    name = options.get("name")
    number = ctx.book.numbers.get(make_id(name)) if name else None
    head = f"**{number}.**" if number else "**Figure.**"
    bundle = ctx.book.glue.get(ctx.docname, {}).get(key, {}).get("data", {})
    png = bundle.get("image/png")
    if png:
        filename = f"{key}.png"
        ctx.attachments[filename] = {"image/png": png}
        picture = f"![{number or key}](attachment:{filename})\n\n"
    else:
        picture = "*(The code above draws this figure when you run it.)*\n\n"
    return f"{_anchor(name)}{picture}{head} {convert_text(caption, ctx).strip()}"


def _literalinclude(path_arg: str, options: dict, ctx: Context) -> str:
    if ctx.source_dir is None:
        return f"*(The book shows `{path_arg}` here.)*"
    path = (ctx.source_dir / path_arg).resolve()
    text = path.read_text(encoding="utf8")
    if "pyobject" in options:
        text = _pyobject(text, options["pyobject"])
    lines = text.split("\n")
    if "start-at" in options:
        start = next(i for i, line in enumerate(lines) if options["start-at"] in line)
        lines = lines[start:]
    if "start-after" in options:
        start = next(i for i, line in enumerate(lines) if options["start-after"] in line)
        lines = lines[start + 1 :]
    if "end-before" in options:
        end = next(i for i, line in enumerate(lines) if options["end-before"] in line)
        lines = lines[:end]
    language = options.get("language", "python" if path.suffix == ".py" else "")
    code = "\n".join(lines).strip("\n")
    return f"From `{path_arg.lstrip('./')}`:\n\n```{language}\n{code}\n```"


def _pyobject(source: str, dotted: str) -> str:
    tree = ast.parse(source)
    node = tree
    for part in dotted.split("."):
        node = next(
            n
            for n in ast.iter_child_nodes(node)
            if isinstance(n, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and n.name == part
        )
    lines = source.split("\n")
    start = min([node.lineno, *(d.lineno for d in node.decorator_list)]) - 1
    return "\n".join(lines[start : node.end_lineno])


def _directive(name: str, arg: str, options: dict, body: str, ctx: Context) -> str:
    label = options.get("label") or options.get("name")
    if name in PROOF_KINDS:
        number = ctx.book.numbers.get(make_id(label)) if label else None
        head = number or PROOF_KINDS[name]
        title = f" ({convert_text(arg, ctx).strip()})" if arg else ""
        return _anchor(label) + _quote(f"**{head}{title}.** {convert_text(body, ctx).strip()}")
    if name == "prf:proof":
        return _quote(f"*Proof.* {convert_text(body, ctx).strip()} ∎")
    if name == "glue:figure":
        return _figure(arg, options, body, ctx)
    if name == "literalinclude":
        return _literalinclude(arg, options, ctx)
    if name in ("code-block", "code", "sourcecode"):
        return f"```{arg}\n{body}\n```"
    if name == "math":
        number = ctx.book.numbers.get(make_id(f"equation-{label}")) if label else None
        tag = f" \\tag{{{number.strip('()')}}}" if number else ""
        return f"{_anchor(label)}$$ {body.strip()}{tag} $$"
    title = arg or name.split(":")[-1].replace("-", " ").capitalize()
    return _quote(f"**{convert_text(title, ctx).strip()}.** {convert_text(body, ctx).strip()}")


def _equation(m: re.Match, ctx: Context) -> str:
    label = m.group("label")
    number = ctx.book.numbers.get(make_id(f"equation-{label}"))
    tag = f" \\tag{{{number.strip('()')}}}" if number else ""
    return f"{_anchor(label)}$${m.group('body').rstrip()}{tag} $$"


def _glue_value(body: str, ctx: Context) -> str:
    from myst_nb.core.variables import format_plain_text

    key, _, fmt = body.partition(":")
    docname, _, key = key.rpartition("::") if "::" in key else (ctx.docname, "", key)
    bundle = ctx.book.glue.get(docname or ctx.docname, {}).get(key, {}).get("data", {})
    text = bundle.get("text/plain")
    if text is None:
        return MISSING_VALUE
    return format_plain_text(text, fmt)


def _doc_link(target: str, shown: str | None, ctx: Context) -> str:
    base = ctx.docname.rsplit("/", 1)[0]
    parts = [p for p in f"{base}/{target}".split("/") if p]
    resolved: list[str] = []
    for p in parts:
        if p == "..":
            if resolved:
                resolved.pop()
        elif p != ".":
            resolved.append(p)
    docname = "/".join(resolved)
    if target.startswith("/"):
        docname = target.lstrip("/")
    title = shown or ctx.titles.get(docname, target.rsplit("/", 1)[-1])
    here = ctx.notebooks.get(ctx.docname)
    there = ctx.notebooks.get(docname)
    if here and there:
        return f"[{title}]({_relpath(there, here)})"
    return f"*{title}*"


def _relpath(target: str, start_file: str) -> str:
    import posixpath

    return posixpath.relpath(target, posixpath.dirname(start_file) or ".")


def _role(m: re.Match, ctx: Context) -> str:
    kind, body = m.group("role"), m.group("body")
    target = re.match(r"(?P<text>.*?)\s*<(?P<target>[^>]+)>$", body, re.S)
    shown = target.group("text") if target else None
    ref = target.group("target") if target else body
    if kind == "eq":
        number = ctx.book.numbers.get(make_id(f"equation-{ref}"))
        return number or "(an equation of the book)"
    if kind in ("prf:ref", "numref", "ref"):
        number = ctx.book.numbers.get(make_id(ref))
        if shown:
            return shown.replace("{number}", number.split()[-1]) if number else shown
        return number or ref
    if kind.startswith("glue"):
        return _glue_value(body, ctx)
    if kind == "doc":
        return _doc_link(ref, shown, ctx)
    if kind.startswith("cite"):
        keys = [k.strip() for k in body.split(",")]
        names = [ctx.citations.get(k, k) for k in keys]
        if kind == "cite:t":
            return "; ".join(n.replace(", ", " (", 1) + ")" if ", " in n else n for n in names)
        return "(" + "; ".join(names) + ")"
    if kind == "math":
        return f"${body}$"
    if kind in ("term",):
        return shown or body
    if kind.split(":")[-1] in ("func", "meth", "class", "mod", "data", "attr", "obj", "exc"):
        name = (shown or ref).lstrip("~")
        return f"`{name}()`" if kind.endswith(("func", "meth")) else f"`{name}`"
    return shown or body


def convert_text(text: str, ctx: Context) -> str:
    """Rewrite one piece of MyST markdown into Jupyter markdown (see the module docstring)."""
    out = []
    for piece in _split_fences(text):
        if piece[0] == "directive":
            out.append(_directive(*piece[1:], ctx))
        else:
            chunk = EQUATION_RE.sub(lambda m: _equation(m, ctx), piece[1])
            out.append(ROLE_RE.sub(lambda m: _role(m, ctx), chunk))
    return "\n".join(out)


def citations(bib_files: list[pathlib.Path]) -> dict[str, str]:
    """``key -> "Author, Year"`` for every entry of the bibliography files."""
    import sys

    from pybtex.database import parse_file

    ext = pathlib.Path(__file__).resolve().parents[2] / "book" / "_ext"
    if str(ext) not in sys.path:
        sys.path.insert(0, str(ext))
    from bib_author_year import author_part, year_of

    out = {}
    for path in bib_files:
        for key, entry in parse_file(str(path), bib_format="bibtex").entries.items():
            out[key] = f"{author_part(entry)}, {year_of(entry)}"
    return out


# --- code -------------------------------------------------------------------------------------


def _call_name(call: ast.Call) -> tuple[str, ...]:
    f = call.func
    if isinstance(f, ast.Name):
        return (f.id,)
    if isinstance(f, ast.Attribute):
        return (ast.unparse(f.value), f.attr)
    return ()


def _is_plumbing_stmt(stmt: ast.stmt) -> bool:
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        name = _call_name(stmt.value)
        if name and name[-1] in PLUMBING_CALLS:
            return True
        return len(name) == 2 and name in PLUMBING_ATTR_CALLS
    if isinstance(stmt, ast.ImportFrom) and stmt.module in PLUMBING_MODULES:
        return True
    if isinstance(stmt, ast.ImportFrom):
        return all(a.name in PLUMBING_CALLS for a in stmt.names)
    return False


def _trimmed_import(stmt: ast.ImportFrom) -> str | None:
    """An import without its plumbing names (None: nothing to change)."""
    keep = [a for a in stmt.names if a.name not in PLUMBING_CALLS]
    if len(keep) == len(stmt.names) or not keep:
        return None
    names = ", ".join(a.name + (f" as {a.asname}" if a.asname else "") for a in keep)
    return f"from {'.' * stmt.level}{stmt.module or ''} import {names}"


def strip_plumbing(source: str) -> str:
    """``source`` without the statements that only serve the book's build, at any depth; a
    block left empty gets ``pass``. Source that does not parse is returned unchanged."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return source
    lines = source.split("\n")
    drop: set[int] = set()
    replace: dict[int, str] = {}

    def visit(body: list[ast.stmt]) -> None:
        kept = 0
        for stmt in body:
            if _is_plumbing_stmt(stmt):
                drop.update(range(stmt.lineno - 1, stmt.end_lineno))
                continue
            kept += 1
            if isinstance(stmt, ast.ImportFrom):
                new = _trimmed_import(stmt)
                if new is not None:
                    indent = lines[stmt.lineno - 1][: stmt.col_offset]
                    replace[stmt.lineno - 1] = indent + new
                    drop.update(range(stmt.lineno, stmt.end_lineno))
            for field in ("body", "orelse", "finalbody"):
                inner = getattr(stmt, field, None)
                if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt):
                    visit(inner)
            for handler in getattr(stmt, "handlers", []):
                visit(handler.body)
        if body and not kept and body[0].lineno - 1 in drop and body is not tree.body:
            first = body[0]
            indent = lines[first.lineno - 1][: first.col_offset]
            drop.discard(first.lineno - 1)
            replace[first.lineno - 1] = indent + "pass"
            drop.update(range(first.lineno, first.end_lineno))

    visit(tree.body)
    out = [replace.get(i, line) for i, line in enumerate(lines) if i not in drop or i in replace]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(out)).strip("\n")


def uses_book_style(sources: list[str]) -> bool:
    """Whether a chapter's code sets the book's plotting style."""
    return any("use_book_style" in s for s in sources)
