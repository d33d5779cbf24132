"""Sphinx extension: mark in the HTML what the reader-facing tests count.

A ``literalinclude`` block looks like any other code block once rendered. This extension gives
it the class ``refimpl-literalinclude`` (a literal block whose ``source`` is another file than
the page's own), so that ``tests/test_book_reader.py`` can count the lines of source pasted into
a chapter beside the lines of its code cells.
"""

from __future__ import annotations

import os

from docutils import nodes

LITERALINCLUDE_CLASS = "refimpl-literalinclude"


def mark_literalincludes(app, doctree) -> None:
    """Add :data:`LITERALINCLUDE_CLASS` to every literal block read from another file."""
    page = os.path.abspath(app.env.doc2path(app.env.docname))
    for node in doctree.findall(nodes.literal_block):
        source = node.get("source")
        if source and os.path.abspath(source) != page:
            node["classes"].append(LITERALINCLUDE_CLASS)


def setup(app):
    app.connect("doctree-read", mark_literalincludes)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
