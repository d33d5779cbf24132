"""Sphinx extension: build the student workbook with the book and link it from the pages.

At ``builder-inited`` (HTML builders only) it finds the chapters with exercises, so that
``html-page-context`` can put a download link at the top of each, and a link to the whole
workbook on the exercises index. At ``build-finished`` (the pages are written, the notebooks
executed) it writes into ``<outdir>/_workbook/`` one student notebook per such chapter (the
same folder layout as ``book/``), rendered with the built book's equation and figure numbers,
glued values and figures; beside each notebook a standalone zip
(``refimpl-<chapter>.zip``: the notebook, its checks, its helper modules and data, the
package's wheel and a README that installs them without a clone); and the whole workbook as
``refimpl-workbook.zip``. Everything is a local file: the built HTML stays offline.

Configuration (``conf.py`` or ``_config.yml``'s ``sphinx.config``):

``workbook_book_dir``  folder of the chapters, relative to the source dir (default ``book``);
``workbook_tools_dir`` folder holding the ``workbook`` package (default ``tools``);
``workbook_index``     docname of the exercises index (default ``book/exercises``);
``workbook_package_root`` the folder holding pyproject.toml and the data the chapters read
                       (default: the source dir).

An exercise without a check, or a failure to write the workbook, is a Sphinx warning (so
``-W`` fails the build, naming it).
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


def _paths(app):
    src = pathlib.Path(app.srcdir)
    return (
        src,
        src / app.config.workbook_book_dir,
        pathlib.Path(app.outdir) / OUT,
        _load_builder(src / app.config.workbook_tools_dir),
    )


def plan_workbook(app) -> None:
    """Remember which pages get a download (chapters with exercises), before writing."""
    app.workbook_pages = {}
    app.workbook_zip = None
    if app.builder.format != "html":
        return
    src, book, _, wb_build = _paths(app)
    prefix = posixpath.relpath(book.relative_to(src).as_posix(), ".")
    for path in wb_build.chapter_paths(book):
        chapter = wb_build.read_chapter(path)
        if not chapter.exercises:
            continue
        rel = path.relative_to(book).with_suffix("")
        docname = rel.as_posix() if prefix == "." else f"{prefix}/{rel.as_posix()}"
        zip_rel = rel.with_name(f"refimpl-{rel.name}.zip").as_posix()
        app.workbook_pages[docname] = f"{OUT}/{zip_rel}"
    app.workbook_zip = f"{OUT}/{ZIP_NAME}"


def build_workbook(app, exception) -> None:
    """Write the notebooks, the chapters' zips and the whole zip into the HTML output."""
    if exception is not None or app.builder.format != "html" or not app.workbook_pages:
        return
    src, book, out, wb_build = _paths(app)
    root = pathlib.Path(app.config.workbook_package_root or src)
    try:
        wb_build.build(book, out, built=pathlib.Path(app.outdir).parent)
        zips = wb_build.write_downloads(book, out, root=root)
        wheel = next((out / "_wheel").glob("refimpl-*.whl"))
        wb_build.make_zip(out, out / ZIP_NAME, root=root, wheel=wheel)
    except (ValueError, RuntimeError, OSError) as exc:
        LOG.warning(f"workbook not built: {exc}", type="workbook", subtype="build")
        return
    missing = sorted(set(app.workbook_pages) - set(zips))
    if missing:
        LOG.warning(f"workbook: no download written for {missing}", type="workbook")


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
            "Download this chapter's workbook (.zip): the notebook with an answer and a check "
            "cell per exercise (no solutions), the refimpl package and a README to install it",
        )
    if pagename == app.config.workbook_index and getattr(app, "workbook_zip", None):
        links += link_html(
            pagename,
            app.workbook_zip,
            "Download the whole workbook (.zip, every chapter, the package and a README)",
        )
    if links:
        context["body"] = links + context["body"]


def setup(app):
    app.add_config_value("workbook_book_dir", "book", "html")
    app.add_config_value("workbook_tools_dir", "tools", "html")
    app.add_config_value("workbook_index", "book/exercises", "html")
    app.add_config_value("workbook_package_root", "", "html")
    app.connect("builder-inited", plan_workbook)
    app.connect("html-page-context", add_links)
    app.connect("build-finished", build_workbook)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
