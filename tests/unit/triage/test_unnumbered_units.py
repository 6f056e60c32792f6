"""Triage clause ids for wordings without section numbers (issue 31): ids from the heading path
(``BUILDINGS > What is not covered``) instead of ``preamble#N``; numbered wordings keep theirs."""

from __future__ import annotations

from longdoc.ingest.pipeline import chunk_bytes
from longdoc.triage.units import clause_units, path_id, paragraphs
from tests.unit.pdf_builder import text_pdf


def _lines(topic: str, n: int) -> list[str]:
    return [f"We pay for {topic} damage of kind {k}, up to the limit in the schedule for that cover." for k in range(n)]


def _home_pdf() -> bytes:
    """A home wording headed by words only: BUILDINGS / What is covered / What is not covered, numbered
    items restarting under each, a line "Then" carried on by the next, and CONTENTS after."""
    page1 = [
        "BUILDINGS",
        "",
        "What is covered",
        "",
        "1. Fire, smoke, explosion, lightning or earthquake.",
        *_lines("fire", 9),
        "",
        "2. Storm or flood.",
        *_lines("storm", 9),
        "",
        "What is not covered",
        "",
        "1. Wear and tear.",
        *_lines("worn", 9),
        "",
        "Then",
        "we will pay the cost of the repair once the work is done.",
    ]
    page2 = [
        "CONTENTS",
        "",
        "What is covered",
        "",
        "1. Theft from your home.",
        *_lines("theft", 9),
        "",
        "What is not covered",
        "",
        "1. Theft by a lodger.",
        *_lines("lodger", 9),
        "",
        "Conditions",
        "",
        *_lines("condition", 8),
    ]
    return text_pdf([page1, page2], font_size=9)


def test_an_unnumbered_wording_gets_heading_path_ids_not_preamble() -> None:
    # Given a PDF wording with word headings and no section numbers, chunked as a policy
    chunks = chunk_bytes("home.pdf", _home_pdf(), target_tokens=300, max_tokens=400)
    assert {c.section_id for c in chunks} == {None}  # nothing numbered: today all of it is preamble
    # When triage builds its clause units
    units = clause_units(chunks)
    ids = [u.unit_id for u in units]
    # Then every unit is cited by its heading path (capitals heading above the word heading), in order,
    # with #N where one heading's text comes in several parts
    assert not any(i.startswith("preamble") for i in ids), ids
    bases = list(dict.fromkeys(i.split("#")[0] for i in ids))
    assert bases == [
        "BUILDINGS > What is covered",
        "BUILDINGS > What is not covered",
        "CONTENTS > What is covered",
        "CONTENTS > What is not covered",
        "CONTENTS > Conditions",
    ]
    assert len(set(ids)) == len(ids)
    # And "Then" (carried on by a lower-case line) is no heading: its text stays with the exclusions
    then = next(u for u in units if "Then" in u.text)
    assert then.heading_path == ("BUILDINGS", "What is not covered")


def test_heading_fragments_are_not_headings_inside_a_section() -> None:
    # Given lines after finished sentences: a fragment carried on, one ending in a comma, one in "and",
    # a page footer, a real heading
    text = (
        "We pay for fire.\nThen\nwe pay the rest.\nIn that case,\nWe pay.\nLoss of keys and\nLocks.\n"
        "Page 2 of 12\nWe pay.\nExclusions\nWar.\n"
    )
    headings = [text[a:b].strip() for a, b, h in paragraphs(text) if h]
    # Then only the real heading is one
    assert headings == ["Exclusions"]


def test_path_id_is_short_and_leaves_out_the_title_every_unit_shares() -> None:
    assert (
        path_id(("Acme Car Policy", "Section 1 - Buildings", "What is not covered:"), "Acme Car Policy")
        == "Section 1 - Buildings > What is not covered"
    )
    assert path_id(("Acme Car Policy", "Definitions"), "Acme Car Policy") == "Definitions"
    assert path_id(("Acme Car Policy",), "Acme Car Policy") == "Acme Car Policy"
    long = path_id(("We cover stuff that you own, that is normally kept at your home, and more",))
    assert long == "We cover stuff that you own, that is normally kept" and len(long) <= 50
    assert path_id(()) == ""


def test_markdown_txt_wording_units_are_cited_by_heading_path() -> None:
    # Given an unnumbered wording exported as Markdown in a .txt file
    sections = "\n\n".join(
        f"## {name}\n\n### What is covered\n\n"
        + " ".join(_lines(name.lower(), 3))
        + "\n\n### What is not covered\n\n"
        + " ".join(_lines("excluded", 3))
        for name in ("Buildings", "Contents")
    )
    text = f"# Acme Home\n\nWelcome to your policy: please read it with the schedule.\n\n{sections}\n"
    units = clause_units(chunk_bytes("home.txt", text.encode(), target_tokens=300, max_tokens=400))
    # Then the ids are the last two heading levels, the title every unit shares left out
    assert [u.unit_id for u in units] == [
        "Acme Home",
        "Buildings > What is covered",
        "Buildings > What is not covered",
        "Contents > What is covered",
        "Contents > What is not covered",
    ]
    assert units[2].heading_path == ("Acme Home", "Buildings", "What is not covered")


def test_a_numbered_wording_keeps_its_ids_and_its_preamble() -> None:
    # Given a numbered wording with a title and an introduction before section 1, and one whose
    # front part has a heading of its own (Definitions)
    body = "\n\n".join(
        f"## {n} {name}\n\n" + " ".join(_lines(name.lower(), 3))
        for n, name in ((1, "Fire"), (2, "Theft"), (3, "Flood"))
    )
    intro = "Please read this wording with your schedule; it tells you what we cover."
    plain = f"# Acme Home\n\n{intro}\n\n{body}\n"
    headed = f"# Acme Home\n\n{intro}\n\n## Definitions\n\nFlood means water from outside the home.\n\n{body}\n"
    units = clause_units(chunk_bytes("home.md", plain.encode(), target_tokens=300, max_tokens=400))
    # Then the ids are the numbers, and the text before section 1 under the title only is the preamble
    assert [u.unit_id for u in units] == ["preamble", "1", "2", "3"]
    # And a front part under its own heading is cited by it
    units = clause_units(chunk_bytes("home.md", headed.encode(), target_tokens=300, max_tokens=400))
    assert [u.unit_id for u in units] == ["preamble", "Definitions", "1", "2", "3"]


def test_a_short_wording_is_cut_at_its_capitals_headings_too() -> None:
    # Given a wording under the 400-token cap, headed by capitals lines only (the outside tester's travel lite)
    text = "\n\n".join([
        "TRAVEL LITE POLICY WORDING", "WHAT IS COVERED",
        "1. We will pay emergency medical expenses abroad if you fall ill during your trip.",
        "WHAT IS NOT COVERED", "1. We will not pay for baggage left unattended in a public place.",
        "CONDITIONS", "1. You must report stolen baggage to the police within 24 hours."])
    units = clause_units(chunk_bytes("lite.txt", text.encode(), target_tokens=300, max_tokens=400))
    # Then each part is its own unit cited by its heading, not one "preamble"
    assert [u.unit_id for u in units] == ["WHAT IS COVERED", "WHAT IS NOT COVERED", "CONDITIONS"]
    assert "police within 24 hours" in units[-1].text
