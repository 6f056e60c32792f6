"""Structure of wordings without section numbers (issue 31): Markdown headings in a ``.txt`` wording,
and a section's running page header (``Part A: Liability to others continued``) as page furniture."""

from __future__ import annotations

from longdoc.ingest.chunk.state import reads_as_markdown
from longdoc.ingest.parse import parse_document
from longdoc.ingest.parse.running import running_headers
from longdoc.ingest.pipeline import chunk_bytes
from tests.unit.pdf_builder import text_pdf

MARKDOWN_TXT = (
    "# Acme Home Wording\n\nThis wording and the schedule form one contract between you and us.\n\n"
    "## Definitions\n\n### Accidental damage\n\nSudden and unexpected physical damage by external means.\n\n"
    "### Home\n\nThe private dwelling at the address shown in the schedule, with its garages.\n\n"
    "## Buildings\n\n### What is covered\n\nWe pay for loss or damage to the buildings caused by fire.\n\n"
    "### What is not covered\n\nWe do not pay for wear and tear or gradual deterioration.\n"
)


def _paths(source: str, data: bytes) -> list[tuple[str | None, tuple[str, ...]]]:
    chunks = chunk_bytes(source, data, target_tokens=300, max_tokens=400)
    return [(s.section_id, tuple(s.heading_path)) for c in chunks for s in c.section_spans]


def test_markdown_headings_in_a_txt_wording_give_heading_paths_with_their_levels() -> None:
    # Given a plain-text wording written in Markdown (#, ##, ### headings)
    spans = _paths("home.txt", MARKDOWN_TXT.encode())
    # Then its headings are headings, nested by their level, exactly as for the same text named .md
    assert (None, ("Acme Home Wording", "Definitions", "Home")) in spans
    assert (None, ("Acme Home Wording", "Buildings", "What is not covered")) in spans
    assert spans == _paths("home.md", MARKDOWN_TXT.encode())


def test_a_txt_file_with_a_stray_hash_line_is_not_read_as_markdown() -> None:
    # Given plain text with one line starting "# " and a contract with none
    text = "1. Fees\n\nThe fees are due monthly.\n\n# 2 the count of units is below.\n\n2. Term\n\nOne year.\n"
    # Then neither is Markdown, and a wording with three heading lines is
    assert not reads_as_markdown(text)
    assert not reads_as_markdown("Section 1\n\nNo hashes here.\n")
    assert reads_as_markdown(MARKDOWN_TXT)


def _page(header: str, n: int) -> list[str]:
    return [header, "", *[f"Line {k} of page {n}: we pay for the damage to other people's property." for k in range(4)]]


def test_a_sections_continued_running_header_is_furniture_not_a_heading() -> None:
    # Given a car booklet whose Part A runs over three pages, each after the first headed "... continued"
    pages = [
        _page("Part A: Liability to others", 1),
        _page("Part A: Liability to others continued", 2),
        _page("Part A: Liability to others (continued)", 3),
        _page("Part B: Fire and theft", 4),
    ]
    parsed = parse_document("car.pdf", text_pdf(pages))
    # Then the continued headers are removed as page furniture, and the section's own heading stays
    assert "continued" not in parsed.text
    assert parsed.text.count("Part A: Liability to others") == 1
    assert [(f.page, f.text) for f in parsed.furniture if "continued" in f.text] == [
        (2, "Part A: Liability to others continued"),
        (3, "Part A: Liability to others (continued)"),
    ]
    # And the chunker finds Part A once: its three pages are one section
    chunks = chunk_bytes("car.pdf", text_pdf(pages))
    ids = [s.section_id for c in chunks for s in c.section_spans]
    assert ids == ["Part A", "Part B"]


def test_a_header_on_three_pages_in_a_row_is_running_but_changing_headings_stay() -> None:
    # Given pages headed by the same words on pages 1-3, then headings that change page to page
    pages = [
        "Conditions\nYou must take care.",
        "Conditions\nYou must tell us.",
        "Conditions\nYou must pay.",
        "Article 8\nConsent.",
        "Article 9\nSpecial data.",
        "Exclusions\nWar.",
        "Exclusions\nNuclear.",
    ]
    cleaned, furniture = running_headers(pages)
    # Then the copies after the first of the three-page run are furniture; Article 8/9 and a heading
    # that opens just two pages in a row stay
    assert [(f.page, f.text) for f in furniture] == [(2, "Conditions"), (3, "Conditions")]
    assert cleaned[0] == "Conditions\nYou must take care." and cleaned[1] == "You must tell us."
    assert cleaned[3:] == pages[3:]


def test_a_continued_footer_and_a_list_intro_ending_in_a_colon() -> None:
    # Given a page ending "continued overleaf", and a continued line that introduces a list
    pages = [
        "Exclusions\nWe do not pay for:\nwar.\ncontinued overleaf",
        "Exclusions continued:\n(a) nuclear risks.",
        "Claims\nTell us at once.",
    ]
    cleaned, furniture = running_headers(pages)
    # Then the footer is furniture, the line ending in a colon is body
    assert [(f.page, f.position, f.text) for f in furniture] == [(1, "footer", "continued overleaf")]
    assert cleaned[1].startswith("Exclusions continued:")


def test_contents_entries_with_a_dash_before_the_page_number_are_not_headings() -> None:
    # Given a wording whose contents list ends each entry in " - <page>" (sentence-case titles)
    text = (
        "# Acme Car\n\n## Contents\n\nDefinitions - 6\nSection A – Damage including misfuelling - 7\n"
        "Section B – Fire and theft - 8\n\n## Definitions\n\nYour car means the vehicle shown in the schedule, with its standard accessories and spare parts, while it is in the territorial limits.\n\n"
        "## Section A - Damage including misfuelling\n\nWe pay for accidental damage to your car, and for the cost of draining the tank if the wrong fuel is put in it by mistake.\n\n"
        "## Section B - Fire and theft\n\nWe pay for loss of or damage to your car by fire, lightning, explosion, theft or attempted theft, up to its market value.\n"
    )
    spans = _paths("car.txt", text.encode())
    # Then Section A and Section B are met once each, at their real headings
    ids = [sid for sid, _ in spans if sid]
    assert ids == ["Section A", "Section B"]
    assert ("Section A", ("Acme Car", "Section A - Damage including misfuelling")) in spans
