"""Sphinx extension: build the student workbook with the book and link it from the pages.

At ``builder-inited`` (HTML builders only) it writes one student notebook per chapter with
exercises into ``<outdir>/_workbook/`` (the same folder layout as ``book/``) and a zip of the
whole workbook, ``<outdir>/_workbook/refimpl-workbook.zip`` (with the experiment results the
notebooks read). At ``html-page-context`` it puts a download link at the top of each such
chapter, and a link to the zip on the exercises index. Everything is a local file: the built
HTML stays offline.

Configuration (``conf.py`` or ``_config.yml``'s ``sphinx.config``):

``workbook_book_dir``  folder of the chapters, relative to the source dir (default ``book``);
``workbook_tools_dir`` folder holding the ``workbook`` package (default ``tools``);
``workbook_index``     docname of the exercises index (default ``book/exercises``).

An exercise without a check is a Sphinx warning (so ``-W`` fails the build, naming it).
"""

from __future__ import annotations

import html
import pathlib
import posixpath
import sys

from sphinx.util import logging

LOG = logging.getLogger(__name__)
OUT = "_workbook"
ZIP_NAME = "refimpl-workbook.zip"


def _load_builder(tools: pathlib.Path):
    if str(tools) not in sys.path:
        sys.path.insert(0, str(tools))
    from workbook import build as wb_build

    return wb_build


def build_workbook(app) -> None:
    """Write the notebooks and the zip into the HTML output; remember the pages to link."""
    app.workbook_pages = {}
    app.workbook_zip = None
    if app.builder.format != "html":
        return
    src = pathlib.Path(app.srcdir)
    book = src / app.config.workbook_book_dir
    out = pathlib.Path(app.outdir) / OUT
    wb_build = _load_builder(src / app.config.workbook_tools_dir)
    try:
        written = wb_build.build(book, out)
    except ValueError as exc:
        LOG.warning(f"workbook not built: {exc}", type="workbook", subtype="build")
        return
    wb_build.make_zip(out, out / ZIP_NAME, root=src)
    prefix = posixpath.relpath(book.relative_to(src).as_posix(), ".")
    for nb in written:
        rel = nb.relative_to(out).with_suffix("").as_posix()
        docname = rel if prefix == "." else f"{prefix}/{rel}"
        app.workbook_pages[docname] = f"{OUT}/{nb.relative_to(out).as_posix()}"
    app.workbook_zip = f"{OUT}/{ZIP_NAME}"


def link_html(pagename: str, target: str, text: str) -> str:
    """An HTML paragraph linking ``target`` (relative to the output root) from ``pagename``."""
    href = posixpath.relpath(target, posixpath.dirname(pagename) or ".")
    name = posixpath.basename(target)
    return (
        f'<div class="admonition note workbook-download"><p>'
        f'<a class="reference download" href="{html.escape(href)}" download="{html.escape(name)}">'
        f"{html.escape(text)}</a></p></div>\n"
    )


def add_links(app, pagename, templatename, context, doctree) -> None:
    """Prepend the download link(s) to a chapter's (or the index's) body."""
    if "body" not in context:
        return
    links = ""
    if pagename in getattr(app, "workbook_pages", {}):
        links += link_html(
            pagename,
            app.workbook_pages[pagename],
            "Download this chapter's workbook (.ipynb): the exercises with answer and check "
            "cells, no solutions",
        )
    if pagename == app.config.workbook_index and getattr(app, "workbook_zip", None):
        links += link_html(
            pagename, app.workbook_zip, "Download the whole workbook (.zip, every chapter)"
        )
    if links:
        context["body"] = links + context["body"]


def setup(app):
    app.add_config_value("workbook_book_dir", "book", "html")
    app.add_config_value("workbook_tools_dir", "tools", "html")
    app.add_config_value("workbook_index", "book/exercises", "html")
    app.connect("builder-inited", build_workbook)
    app.connect("html-page-context", add_links)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
