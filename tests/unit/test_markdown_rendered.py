"""Markdown is read as it renders: backslash escapes and character references resolved, and the
escaped headings an HTML-to-Markdown converter writes (``\\# Title`` on every heading) read as headings."""

from __future__ import annotations

from longdoc.ingest.parse.text import markdown_as_rendered
from longdoc.ingest.pipeline import chunk_bytes

ESCAPED = "\n\n".join([
    "HL Assurance",
    "\\# YOUR POLICY",
    "Here is your policy. Please read it.",
    "\\# POLICY DEFINITIONS",
    "“Hospital” means an institution lawfully operating for the care of sick people &#x26; injured people.",
    "\\# GENERAL CONDITIONS",
    "\\# 1. Arbitration",
    "If there is any dispute as to the amount to be paid, it shall be referred to an arbitrator.",
    "\\# 2. Cancellation",
    "We may cancel this policy by giving you seven days notice in writing \\- by registered post.",
])


def test_escapes_and_references_render_outside_code() -> None:
    text = "2\\. The Insured Person &#x26; co \\- x &amp; y\n```\ncode &amp; \\*\n```\n\\# not a heading \\*"
    assert markdown_as_rendered(text) == (
        "2. The Insured Person & co - x & y\n```\ncode &amp; \\*\n```\n\\# not a heading *")


def test_a_file_whose_every_heading_is_escaped_gets_its_headings() -> None:
    # Given a Markdown wording with no real heading and every heading written "\# ..."
    chunks = chunk_bytes("ci.md", ESCAPED.encode(), target_tokens=300, max_tokens=400)
    # Then its sections are found by those headings, and the text reads as it renders
    spans = [s for c in chunks for s in (c.section_spans or [])]
    assert [s.section_id for s in spans if s.section_id] == ["1", "2"]
    assert [s.heading_path[-1] for s in spans if s.section_id] == ["1. Arbitration", "2. Cancellation"]
    text = " ".join(c.text for c in chunks)
    assert "sick people & injured people" in text and "writing - by registered post" in text
    assert "\\#" not in text


def test_one_real_heading_keeps_escaped_lines_as_text() -> None:
    # Given a file with a real heading and escaped-hash lines, Then those lines are text, not headings
    text = "# Title\n\n" + "\n\n".join(f"\\# {n} is a hashtag" for n in ("one", "two", "three"))
    assert markdown_as_rendered(text) == text
