"""Keep only the worked code an exercise needs, statement by statement, so that the tests can
run every workbook notebook twice (stubs, then solutions) in seconds.

A top-level statement of a worked cell is kept when it binds a name that a kept statement, an
exercise's solution, its binding or its check reads (found by walking the syntax trees; a
call ``obj.method(...)`` or an assignment ``obj[...] = ...`` counts as binding ``obj``, since it
may change it). Statements that only plot, print, glue or assert are dropped, as are those
whose names nothing needs. ``sys.path`` edits are always kept.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import re

from . import checks as checks_module
from .chapters import Chapter, Code, Exercise
from .execute import solution_source

NS_RE = re.compile(r"""ns(?:\[|\.get\()\s*["'](\w+)["']""")
ALWAYS = ("sys.path", "os.chdir")


def _modules(tree: ast.AST) -> set[str]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for a in node.names:
                out.add((a.asname or a.name).split(".")[0])
    return out


def defs_uses(stmt: ast.stmt, modules: set[str]) -> tuple[set[str], set[str]]:
    """Names a top-level statement may bind or change, and names it reads."""
    defs, uses = set(), set()
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        defs.add(stmt.name)
    for node in ast.walk(stmt):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            defs |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, ast.Name):
            (defs if isinstance(node.ctx, (ast.Store, ast.Del)) else uses).add(node.id)
        elif isinstance(node, (ast.Subscript, ast.Attribute)) and isinstance(node.ctx, ast.Store):
            base = node.value
            while isinstance(base, (ast.Subscript, ast.Attribute)):
                base = base.value
            if isinstance(base, ast.Name):
                defs.add(base.id)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            base = node.func.value
            if isinstance(base, ast.Name) and base.id not in modules:
                defs.add(base.id)  # obj.method(...) may change obj (rng.normal, list.append)
    return defs, uses


def _reads(source: str) -> set[str]:
    """Names ``source`` reads that it does not bind itself."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    names = [n for n in ast.walk(tree) if isinstance(n, ast.Name)]
    bound = {n.id for n in names if isinstance(n.ctx, ast.Store)}
    bound |= {n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    bound |= _modules(tree)
    return {n.id for n in names if isinstance(n.ctx, ast.Load)} - bound


def exercise_needs(ex: Exercise) -> set[str]:
    """Names an exercise's solution, binding, stub and check read from the notebook."""
    spec = checks_module.CHECKS[ex.label]
    needs = _reads(solution_source(ex)) | _reads(spec.stub)
    needs |= set(NS_RE.findall(inspect.getsource(spec.grade)))
    return needs - set(spec.names)


@dataclasses.dataclass
class _Stmt:
    cell: int
    source: str
    defs: set
    uses: set
    always: bool


def _statements(chapter: Chapter) -> list[_Stmt]:
    mods = set()
    for part in chapter.parts:
        if isinstance(part, Code):
            try:
                mods |= _modules(ast.parse(part.source))
            except SyntaxError:
                pass
    out = []
    for k, part in enumerate(chapter.parts):
        if not isinstance(part, Code) or part.source.lstrip().startswith(("%", "!")):
            continue
        try:
            tree = ast.parse(part.source)
        except SyntaxError:  # IPython syntax: keep the cell whole
            out.append(_Stmt(k, part.source, set(), set(), True))
            continue
        for stmt in tree.body:
            src = ast.get_source_segment(part.source, stmt, padded=False) or ""
            d, u = defs_uses(stmt, mods)
            out.append(_Stmt(k, src, d, u, any(a in src for a in ALWAYS)))
    return out


def sliced(chapter: Chapter) -> Chapter:
    """The chapter with each worked cell reduced to the statements its exercises need."""
    needed = set().union(*(exercise_needs(ex) for ex in chapter.exercises))
    stmts = _statements(chapter)
    keep = [False] * len(stmts)
    for j in range(len(stmts) - 1, -1, -1):
        s = stmts[j]
        if s.always or s.defs & needed:
            keep[j] = True
            needed |= s.uses
    parts = []
    for k, part in enumerate(chapter.parts):
        if isinstance(part, Code):
            src = "\n".join(
                s.source for s, kept in zip(stmts, keep, strict=True) if kept and s.cell == k
            )
            if src.strip():
                parts.append(Code(src, part.metadata))
        elif isinstance(part, Exercise):
            parts.append(part)
    return dataclasses.replace(chapter, parts=parts)
