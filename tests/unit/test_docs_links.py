"""The README and the pages under docs/ link only to files and headings that exist."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation other than '-' and '_' dropped, spaces to '-'."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    """Every heading anchor of ``page`` (outside code blocks; a repeated heading gets -1, -2, ...)."""
    found: set[str] = set()
    seen: dict[str, int] = {}
    fenced = False
    for line in page.read_text(encoding="utf-8").split("\n"):
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and re.match(r"#{1,6} ", line):
            slug = _slug(line.lstrip("#"))
            found.add(slug if slug not in seen else f"{slug}-{seen[slug]}")
            seen[slug] = seen.get(slug, 0) + 1
    return found


def _broken_links(page: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if target.startswith(("http://", "https://", "mailto:")):
            continue
        name, _, anchor = target.partition("#")
        linked = (page.parent / name) if name else page
        if not linked.exists():
            broken.append(f"{target}: no such file")
        elif anchor and linked.suffix == ".md" and anchor not in _anchors(linked):
            broken.append(f"{target}: no such heading")
    return broken


def test_every_relative_link_of_the_docs_resolves() -> None:
    # Given the README and every page under docs/
    assert len(PAGES) > 5
    # Then each relative link names an existing file, and each #anchor a heading of that file
    broken = {page.name: links for page in PAGES if (links := _broken_links(page))}
    assert broken == {}


def test_the_readme_is_a_front_page_that_names_the_two_commands() -> None:
    # Given the README
    text = (REPO / "README.md").read_text(encoding="utf-8")
    # Then it stays short and keeps the two commands a newcomer runs, and the CLI reference is one link away
    assert len(text.splitlines()) <= 250
    assert "make demo" in text and "make test" in text and "(docs/cli.md)" in text
