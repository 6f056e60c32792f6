"""Running headers and footers that stayed in the text (issue 13, item 7): a footer block
wrapped differently on some pages, footers that alternate between odd and even pages, and
printer's job lines away from the page edge."""

from __future__ import annotations

from longdoc.ingest.chunk import chunk_document
from longdoc.ingest.parse.cleanup import find_furniture

CHUBB = "chubb-travellershield-plus-policy-wording.pdf"
NOTICE = ("© 2022 Chubb. Coverages underwritten by one or more subsidiary companies. Not all coverages "
          "available in all jurisdictions. Chubb® and its respective logos, and Chubb. Insured.TM are "
          "protected trademarks of Chubb. Published 07/2022.")


_WORDS = ["harbour", "meadow", "lantern", "orchard", "granite", "willow", "saffron", "cobalt", "thistle",
          "juniper", "marble", "quarry", "falcon", "ember", "glacier", "pepper"]


def _body(n: int) -> list[str]:
    """Four body lines of page ``n``, each shaped unlike any line of another page (the words repeat
    every four pages, so each page's zone, ``n`` in letters, keeps pages ``n`` and ``n + 4`` apart:
    two pages with the same body are copies, whose shared lines are never furniture)."""
    w = [_WORDS[(n * 4 + k) % len(_WORDS)] for k in range(4)]
    zone = "".join(chr(ord("a") + int(d)) for d in str(n))
    return [f"The {w[0]} clause covers {w[1]} damage in zone {zone}.", f"Claims for {w[2]} are paid within {w[3]} days.",
            f"A {w[1]} {w[3]} exclusion applies in zone {zone}.", f"{w[2].capitalize()} and {w[0]} end the page."]


def test_chubb_copyright_block_is_not_in_any_chunk(parse_corpus) -> None:
    # Given the Chubb wording, whose copyright footer is set in another measure on page 9
    # (three lines instead of two) and on the back cover
    parsed = parse_corpus(CHUBB)
    # Then the notice is in no page's text and in no chunk
    assert "© 2022 Chubb" not in parsed.text
    assert not [c.chunk_id for c in chunk_document(parsed, "chubb") if "trademarks of Chubb" in c.text]
    # And it is kept as furniture of page 9, all three lines of it
    page9 = [f.text for f in parsed.furniture if f.page == 9 and f.text != "TravellerShield Plus"]
    assert len(page9) == 3 and page9[-1] == "Published 07/2022."
    assert " ".join(page9).split() == ("9 " + NOTICE).split()


def test_footer_block_wrapped_differently_on_one_page_is_removed() -> None:
    # Given 6 pages ending in a two-line notice, and a 7th that sets it on three lines mid-page
    two = ["© 2024 Example Insurance Ltd. All rights reserved. Registered in England under",
           "number 123456. Authorised by the Prudential Regulation Authority."]
    three = ["© 2024 Example Insurance Ltd. All rights reserved.", "Registered in England under number 123456.",
             "Authorised by the Prudential Regulation Authority."]
    pages = ["\n".join([*_body(n), *two]) for n in range(1, 7)]
    pages.append("\n".join([*_body(7)[:2], *three, *_body(7)[2:]]))
    cleaned, furniture = find_furniture(pages)
    # Then no page keeps any line of it, and the body lines all stay
    assert all("Example Insurance" not in p and "Regulation Authority" not in p for p in cleaned)
    assert cleaned[6].split("\n") == _body(7)
    assert [f.text for f in furniture if f.page == 7] == three


def test_odd_and_even_page_footers_are_one_footer_each() -> None:
    # Given 9 pages whose footers alternate: odd pages "Chubb Insurance Singapore Limited  n",
    # even pages "n  TravellerShield Plus Policy Wording" (4 of 9: under half the pages)
    pages = []
    for n in range(1, 10):
        footer = f"Chubb Insurance Singapore Limited   {n}" if n % 2 else f"{n}   TravellerShield Plus Policy Wording"
        pages.append("\n".join([*_body(n), footer]))
    cleaned, furniture = find_furniture(pages)
    # Then both families are removed from every page
    assert [p.split("\n") for p in cleaned] == [_body(n) for n in range(1, 10)]
    assert len(furniture) == 9


def test_a_heading_on_a_few_odd_pages_is_not_furniture() -> None:
    # Given a heading that opens 3 of the 5 odd pages of 9 (under 3/4 of them)
    pages = ["\n".join((["Exclusions"] if n in (1, 3, 5) else []) + _body(n)) for n in range(1, 10)]
    cleaned, furniture = find_furniture(pages)
    # Then it stays
    assert furniture == [] and cleaned == pages


def test_printer_job_line_is_removed_wherever_it_stands() -> None:
    # Given a proof's job line at the top of 6 pages of 9, in the middle of 3 others (outside
    # the 3-line edge windows), once with a page label of another shape ("Page C-3")
    job = "Fileid: … ions/i1040/2023/a/xml/cycle04/source (Init. & Date) _______ Page {} of 9 10:28 - 5-Dec-2023"

    def long_body(n: int) -> list[str]:
        return [*_body(n), *_body(n + 20)]

    pages = ["\n".join([job.format(n), *_body(n)]) for n in range(1, 7)]
    pages += ["\n".join([*long_body(n)[:4], job.format(label), *long_body(n)[4:]])
              for n, label in ((7, "7"), (8, "8"), (9, "C-3"))]
    cleaned, _ = find_furniture(pages)
    # Then no page keeps it
    assert [p.split("\n") for p in cleaned] == [_body(n) for n in range(1, 7)] + [long_body(n) for n in (7, 8, 9)]


def test_a_repeated_heading_with_list_items_is_body_at_the_edge_and_mid_page() -> None:
    # Given 6 pages, each with a "Page N" footer; the exclusions heading (ending ':') opens pages 1-3
    # and stands mid-page on pages 4-6, every time followed by its (a)-(c) items (the tester's file)
    heading = "We will not pay for loss or damage caused by:"
    items = ["(a) wear and tear;", "(b) gradual deterioration;", "(c) insects or vermin."]
    pages = []
    for n in range(1, 7):
        body = [heading, *items, *_body(n)] if n <= 3 else [*_body(n)[:2], heading, *items, *_body(n)[2:]]
        pages.append("\n".join([*body, f"Page {n}"]))
    # When furniture is found
    cleaned, furniture = find_furniture(pages)
    # Then the heading and its items stay on all 6 pages, and only the folios go
    assert sum(p.split("\n").count(heading) for p in cleaned) == 6
    assert all(all(item in p for item in items) for p in cleaned)
    assert sorted(f.text for f in furniture) == [f"Page {n}" for n in range(1, 7)]


def test_a_repeated_line_without_a_number_is_furniture_only_at_the_edge() -> None:
    # Given a running header "Example Insurance Household Policy Wording" on top of pages 1-6 of twelve
    # body lines each, and the same words as a body line in the middle of pages 2 and 5
    header = "Example Insurance Household Policy Wording"

    def body(n: int) -> list[str]:
        zone = "ABCDEF"[n - 1]
        return [f"Zone {zone} line {word} of the schedule." for word in _WORDS[:12]]

    pages = []
    for n in range(1, 7):
        lines = body(n)
        if n in (2, 5):
            lines = lines[:6] + [header] + lines[6:]
        pages.append("\n".join([header, *lines]))
    # When furniture is found
    cleaned, furniture = find_furniture(pages)
    # Then it is removed from the top of every page and kept mid-page on pages 2 and 5
    assert [p.split("\n")[0] for p in cleaned] == [body(n)[0] for n in range(1, 7)]
    assert [p.count(header) for p in cleaned] == [0, 1, 0, 0, 1, 0]
    assert len(furniture) == 6


def test_a_running_header_broken_around_the_form_code_is_removed() -> None:
    # Given 12 pages whose running header prints as one line on most pages, but on some the PDF's text
    # gives it as two lines with the form code between them, at the page's foot (a two-column booklet)
    head, code = "ACME TRAVEL INSURANCE | INSURANCE POLICY", "11XVV0196A (2024-07)"
    pages = []
    for n in range(1, 13):
        if n % 3:
            pages.append("\n".join([f"{head} | {n}", code, *_body(n)]))
        else:
            pages.append("\n".join([*_body(n), head, code, f"| {n}"]))
    # When the furniture is found
    cleaned, furniture = find_furniture(pages)
    # Then neither half of the broken header is left in the text (before: both stayed, and the chunker
    # read the first half as a heading over the pages after it), and the body lines all are
    text = "\n".join(cleaned)
    assert "ACME TRAVEL INSURANCE" not in text and "| 3" not in text and code not in text
    assert all(line in text for n in range(1, 13) for line in _body(n))
    assert {f.text for f in furniture if f.page == 3} == {head, code, "| 3"}


def test_a_folio_printed_with_and_without_inner_spaces_is_one_family_of_furniture() -> None:
    # Given a booklet whose text pages print their folio as -n- and whose table pages print it as
    # - n - (each form on fewer than half of the pages, so neither repeats enough alone), and two
    # pages with no folio
    def folio(n: int) -> list[str]:
        return [f"-{n}-"] if n <= 5 else [f"- {n} -"] if n <= 10 else []

    pages = ["\n".join([*_body(n), *folio(n)]) for n in range(1, 13)]
    # When running furniture is found
    cleaned, furniture = find_furniture(pages)
    # Then every folio is removed and counted on its page, and every body line stays
    assert sorted((f.page, f.text) for f in furniture) == [(n, folio(n)[0]) for n in range(1, 11)]
    for n, text in enumerate(cleaned, start=1):
        assert text.split("\n") == _body(n)
