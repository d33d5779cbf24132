"""The README's promises: the two commands first, and the book's table of contents up to date."""

from __future__ import annotations

import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf8")
TOC = (ROOT / "_toc.yml").read_text(encoding="utf8")


def test_the_two_commands_come_first():
    first_block = README.split("```")[1]
    assert "make book" in first_block and "make test " in first_block


def test_readme_lists_every_part_and_chapter_of_the_book():
    for caption, body in re.findall(r"(?ms)^  - caption: (.*?)\n(.*?)(?=^  - caption: |\Z)", TOC):
        assert f"**{caption}**" in README, f"part {caption!r} missing from the README"
        for file in re.findall(r"- file: (\S+)", body):
            text = (ROOT / f"{file}.md").read_text(encoding="utf8")
            title = re.search(r"^# (.+)$", text, re.M).group(1)
            assert title in README, f"chapter {title!r} ({file}) missing from the README"


def test_readme_has_a_bibtex_entry_for_refimpl():
    assert re.search(r"```bibtex\n@software\{refimpl", README)
