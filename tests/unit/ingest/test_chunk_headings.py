"""Heading recognition for issue 13: continental numbering, prose that is not a heading, and
paragraphs after a long article title.

Expected values are the citations a lawyer would write for the passage, read by hand.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from longdoc.core.models import Chunk
from longdoc.ingest.models import ParsedDocument
from longdoc.ingest.chunk import SECTION_PASSES, ChunkingState, chunk_document
from longdoc.ingest.chunk.continental import continental_heading, ordinal_value
from longdoc.ingest.parse import parse_document

CASES = (Path(__file__).resolve().parents[3] / ".." / "shared" / "cases").resolve()
GOOSEHEAD = "cuad/gooseheadinsurance-franchise-agreement"


def _case(name: str) -> bytes:
    """A small input of ``../shared/cases``; fails (never skips) when it is missing."""
    path = CASES / name
    if not path.is_file():
        pytest.fail(f"shared case missing: {path}")
    return path.read_bytes()


def _cited(chunks: list[Chunk], text: str, phrase: str, after: str = "") -> str | None:
    """The section id a quote of ``phrase`` (first found after ``after``) resolves to."""
    at = text.index(phrase, text.index(after) if after else 0)
    holder = next(c for c in chunks if c.char_start <= at < c.char_end)
    return holder.section_of(at - holder.char_start)


def _ids(chunks: list[Chunk]) -> list[str | None]:
    """Every section span's id, in document order."""
    return [s.section_id for c in chunks for s in c.section_spans]


def _paths(parsed: ParsedDocument) -> list[tuple[str | None, list[str]]]:
    """``(section_id, heading_path)`` of every section the section passes find, in order."""
    state = ChunkingState.for_document(parsed, "d", target_tokens=1000, max_tokens=2000, overlap=0.15, metadata=None)
    for section_pass in SECTION_PASSES:
        section_pass(state)
    return [(s.section_id, s.heading_path) for s in state.sections]


# --- 6. Continental numbering -------------------------------------------------------------


def test_german_agreement_has_sections_1_to_4_with_paragraphs_as_sub_sections() -> None:
    # Given the German service agreement with "§ 1 Vertragsgegenstand" and paragraphs "(1)", "(2)"
    parsed = parse_document("vertrag-de.txt", _case("vertrag-de.txt"))
    # When it is chunked
    chunks = chunk_document(parsed, "vertrag-de", target_tokens=60, max_tokens=200)
    # Then the sections are § 1 ... § 4 and the paragraphs are their sub-sections
    assert _ids(chunks) == [None, "§ 1", "§ 1(1)", "§ 1(2)", "§ 2", "§ 2(1)", "§ 2(2)",
                            "§ 3", "§ 3(1)", "§ 3(2)", "§ 4"]
    # And the notice period is cited § 3(2), the fee § 2(1), the venue § 4
    assert _cited(chunks, parsed.text, "Frist von drei Monaten") == "§ 3(2)"
    assert _cited(chunks, parsed.text, "1.500,00 EUR") == "§ 2(1)"
    assert _cited(chunks, parsed.text, "Gerichtsstand ist München") == "§ 4"
    assert chunks[-1].heading_path == ["§ 4 Gerichtsstand"]


@pytest.mark.parametrize(
    ("line", "section_id", "value"),
    [
        ("§ 1 Vertragsgegenstand", "§ 1", 1),
        ("§3 Laufzeit", "§ 3", 3),
        ("§ 3a Haftung", "§ 3a", 3),
        ("Art. 5 Haftung", "Art. 5", 5),
        ("Artikel 12 – Schlussbestimmungen", "Artikel 12", 12),
        ("Article 1er - Objet", "Article 1er", 1),
        ("Article premier : Objet", "Article Premier", 1),
        ("ARTICLE 2e DURÉE", "Article 2e", 2),
        ("Articolo 3 - Durata", "Articolo 3", 3),
        ("Artículo 1.º Objeto", "Artículo 1.º", 1),
        ("CLÁUSULA PRIMERA.- OBJETO", "Cláusula Primera", 1),
        ("Cláusula Décima Tercera. Jurisdicción", "Cláusula Décima Tercera", 13),
        ("Clausola 2 - Corrispettivo", "Clausola 2", 2),
        ("Clausola Prima", "Clausola Prima", 1),
        ("Cláusula 4ª Prazo", "Cláusula 4ª", 4),
    ],
)
def test_continental_heading_ids(line: str, section_id: str, value: int) -> None:
    # Given a continental heading line; When it is read; Then its id is the keyword and number as printed
    found = continental_heading(line)
    assert found is not None and (found.section_id, found.value) == (section_id, value)


@pytest.mark.parametrize(
    "line",
    ["§ 3 Abs. 2 BGB gilt entsprechend.", "§ 3 BGB findet Anwendung.", "Article 5 du contrat est",
     "Article Premium members", "Art. 5.2 und 5.3", "Article 5 Durée"],  # the last: the English rule's
)
def test_continental_citations_are_not_headings(line: str) -> None:
    # Given a line that cites a section (or a word that is no ordinal); Then it is no continental heading
    assert continental_heading(line) is None


def test_ordinal_words_read_as_numbers() -> None:
    assert [ordinal_value(w) for w in ("Primero", "Segunda", "Terzo", "Décima Tercera", "Decimotercera",
                                       "Undécima", "Première", "Vergütung")] == [1, 2, 3, 13, 13, 11, 1, None]


def test_french_and_spanish_articles_with_numbered_paragraphs() -> None:
    # Given a French contract with "Article 1er" and numbered paragraphs, and a Spanish one
    text = ("CONTRAT DE PRESTATION\n\nArticle 1er - Objet\n\n1. Le prestataire fournit les services.\n\n"
            "2. Le client paie le prix.\n\nArticle 2 - Durée\n\nLe contrat dure un an.\n")
    chunks = chunk_document(parse_document("c.txt", text.encode()), "c", target_tokens=40, max_tokens=100)
    # Then the paragraphs are sub-sections of the article, cited Article 1er(2)
    assert _ids(chunks) == [None, "Article 1er", "Article 1er(1)", "Article 1er(2)", "Article 2"]
    text = ("CONTRATO\n\nCLÁUSULA PRIMERA.- OBJETO\n\nEl proveedor presta los servicios.\n\n"
            "CLÁUSULA SEGUNDA.- PRECIO\n\n(1) El precio es fijo.\n\n(2) Se paga por mes.\n")
    chunks = chunk_document(parse_document("e.txt", text.encode()), "e", target_tokens=40, max_tokens=100)
    assert _ids(chunks) == [None, "Cláusula Primera", "Cláusula Segunda", "Cláusula Segunda(1)",
                            "Cláusula Segunda(2)"]


# --- 8. Prose taken for a heading -------------------------------------------------------


@pytest.mark.parametrize("suffix", ["pdf", "txt"])
def test_statute_citation_in_a_sentence_is_not_a_section(parse_corpus, suffix: str) -> None:
    # Given the Goosehead franchise agreement, whose Rhode Island addendum opens a paragraph
    # with "Section 19-28.1-14 of the Rhode Island Franchise Investment Act provides that ..."
    parsed = parse_corpus(f"{GOOSEHEAD}.{suffix}")
    chunks = chunk_document(parsed, "goosehead")
    # Then no section is "Section 19", and that sentence is not cited as one
    assert not [s for s in _ids(chunks) if (s or "").startswith("Section 19")]
    assert _cited(chunks, parsed.text, "Section 19-28.1-14 of the Rhode Island") != "Section 19"


def test_list_of_section_references_is_not_a_heading(parse_corpus) -> None:
    # Given the guarantee listing "Section 9.3 (generally regarding trademarks), Section 11 (...)"
    parsed = parse_corpus(f"{GOOSEHEAD}.pdf")
    chunks = chunk_document(parsed, "goosehead")
    # Then that line is not section 9.3 of the exhibit
    assert "Section 9.3" not in _ids(chunks)


def test_exhibit_title_page_before_the_agreement_is_not_in_its_heading_paths(parse_corpus) -> None:
    # Given the Goosehead filing, which prints Exhibit A's title page before section 1
    paths = _paths(parse_corpus(f"{GOOSEHEAD}.pdf"))
    # Then no section of the agreement (1 to 28) sits under "Exhibit A"
    agreement = [(sid, path) for sid, path in paths if sid and sid.split(".")[0].isdigit()
                 and path and not path[0].upper().startswith("EXHIBIT ")]
    assert len(agreement) > 200
    assert dict(agreement)["1.1"] == ["1 GRANT", "1.1 Rights and Obligations."]
    assert dict(agreement)["28.1"][0].startswith("28 ")
    assert not [sid for sid, path in paths if path[:1] == ["Exhibit A"] and sid != "Exhibit A"]
    # And an exhibit that follows the agreement keeps its own title
    assert dict(paths)["Exhibit F"][0].startswith("EXHIBIT F")


def test_attachment_title_before_section_1_leaves_the_path() -> None:
    # Given a filing whose exhibit label precedes the agreement, and a schedule after it
    text = ("Exhibit 10.1\n\nSERVICES AGREEMENT\n\n1. Services\n\nThe supplier provides services.\n\n"
            "2. Fees\n\nThe customer pays.\n\nSchedule 1\n\n1. Rates\n\nHourly rates apply.\n")
    paths = _paths(parse_document("a.txt", text.encode()))
    # Then section 1 has no exhibit above it, while the schedule's own section 1 has its schedule
    assert paths == [("Exhibit 10.1", ["Exhibit 10.1"]), ("1", ["1. Services"]), ("2", ["2. Fees"]),
                     ("Schedule 1", ["Schedule 1"]), ("1", ["Schedule 1", "1. Rates"])]


# --- 9. Numbered paragraphs after a long article title ----------------------------------


def test_gdpr_council_article_13_paragraph_points_are_cited_with_their_paragraph(parse_corpus) -> None:
    # Given the GDPR Council position, where Article 13's title runs a whole line, so its
    # "1." paragraph follows a line that does not end a sentence
    parsed = parse_corpus("gdpr-council-position-5419-16.pdf")
    chunks = chunk_document(parsed, "gdpr-council")
    # Then points (a) of paragraphs 1 and 2 cite as Article 13(1)(a) and Article 13(2)(a), like Article 15
    after = "Article 13\nInformation to be provided"
    assert _cited(chunks, parsed.text, "the identity and the contact details of the controller", after) \
        == "Article 13(1)(a)"
    assert _cited(chunks, parsed.text, "the period for which the personal data will be stored", after) \
        == "Article 13(2)(a)"
    after14 = "Article 14\nInformation to be provided"
    assert _cited(chunks, parsed.text, "the categories of personal data concerned", after14) == "Article 14(1)(d)"
    ids = [s for s in _ids(chunks) if (s or "").startswith("Article 13")]
    assert ids[:3] == ["Article 13", "Article 13(1)", "Article 13(1)(a)"]


BODY = "The Supplier shall deliver the goods on time. " * 6


@pytest.mark.parametrize(("name", "heading", "expected"), [
    ("parts.md", "# PART {n}", [f"Part {n}" for n in range(1, 7)]),
    ("parts.md", "## PART {n} - Fees and Terms", [f"Part {n}" for n in range(1, 7)]),
    ("articles.md", "# ARTICLE {r}", ["Article I", "Article II", "Article III", "Article IV", "Article V", "Article VI"]),
    ("schedules.md", "# Schedule {n}: Prices", [f"Schedule {n}" for n in range(1, 7)]),
    ("parts.txt", "PART {w}", ["Part One", "Part Two", "Part Three", "Part Four", "Part Five", "Part Six"]),
    ("parts.txt", "PART {n}", [f"Part {n}" for n in range(1, 7)]),
    ("sections.txt", "SECTION {a}) WHAT IS COVERED", [f"Section {a}" for a in "ABCDEF"]),  # a letter closed by ")"
])
def test_keyword_headings_with_the_same_word_get_distinct_ids(name: str, heading: str, expected: list[str]) -> None:
    # Given six headings with the same keyword and different numbers (arabic, roman, words; Markdown or plain)
    romans, words = ["I", "II", "III", "IV", "V", "VI"], ["ONE", "TWO", "THREE", "FOUR", "FIVE", "SIX"]
    text = "\n\n".join(heading.format(n=n, r=romans[n - 1], w=words[n - 1], a="ABCDEF"[n - 1]) + f"\n\n{BODY}"
                       for n in range(1, 7))
    # When the document is chunked
    chunks = chunk_document(parse_document(name, text.encode()), "doc")
    # Then each heading opens its own section, cited by keyword and number (never one shared id)
    assert _ids(chunks) == expected
    assert _cited(chunks, text, "The Supplier", after=heading.format(n=4, r="IV", w="FOUR", a="D")) == expected[3]


def test_a_lowercase_number_word_after_a_keyword_is_prose_not_a_heading() -> None:
    # Given "Part one of ..." in running text (a cross-reference), Then no "Part One" heading is read
    text = f"1. Scope\n\n{BODY}\n\nPart one of the Agreement applies to the goods.\n\n{BODY}"
    chunks = chunk_document(parse_document("x.txt", text.encode()), "doc")
    assert _ids(chunks) == ["1"]


# --- A table of benefits inside a dotted wording ------------------------------------------

_TABLE_WORDING = (
    "1. DEFINITIONS\n\nAccident means a sudden and unexpected event occurring during the Journey.\n\n"
    "2. TABLE OF BENEFITS\n\nThe maximum benefits payable are stated below.\n\n"
    "1 Medical Expenses Benefit\n500,000\n\n2 Baggage Benefit\n20,000\n\n3 Personal Money Benefit 3,000\n\n"
    "4 Travel Delay Benefit 1,500\n\n"
    "3. GENERAL EXCLUSIONS\n\nThis Policy does not cover any loss caused by war or invasion.\n\n"
    "4. SECTION 1 – MEDICAL EXPENSES BENEFIT\n\nThe Company will reimburse the Eligible Expenses incurred abroad.\n\n"
    "4.1 The Company shall not be liable for cosmetic surgery.\n"
)


def test_bare_numbered_table_rows_in_a_dotted_wording_do_not_hide_its_sections() -> None:
    # Given a wording whose sections are "1.", "2.", "3." and whose table of benefits numbers its rows "1 ...", "2 ..."
    chunks = chunk_document(parse_document("w.txt", _TABLE_WORDING.encode()), "w", target_tokens=40, max_tokens=100)
    # Then the rows stay inside section 2 and the wording's own 3 and 4 are sections (before: rows 1-4
    # were sections and "3. GENERAL EXCLUSIONS" was lost behind row 3)
    assert _cited(chunks, _TABLE_WORDING, "Travel Delay Benefit").split("#")[0] == "2"  # 2#2: a split of 2
    assert _cited(chunks, _TABLE_WORDING, "war or invasion") == "3"
    assert _cited(chunks, _TABLE_WORDING, "cosmetic surgery") == "4.1"


def test_a_wording_that_mixes_dotted_and_bare_numbers_keeps_every_section() -> None:
    # Given top-level numbers written both ways ("2 COVER", "3. EXCLUSIONS", "4 CLAIMS"), as a typed contract does
    titles = {1: "1 DEFINITIONS", 2: "2 COVER", 3: "3. EXCLUSIONS", 4: "4 CLAIMS"}
    text = "".join(f"{titles[n]}\n\n{BODY}\n\n" for n in range(1, 5))
    chunks = chunk_document(parse_document("m.txt", text.encode()), "m", target_tokens=40, max_tokens=100)
    # Then every number is a section: one dotted heading establishes no style
    assert [i.split("#")[0] for i in _ids(chunks) if i] == ["1", "2", "3", "4"]


@pytest.mark.parametrize("titles", [
    ["1. Scope", "2. Fees", "3 Term", "4 Termination", "5 Governing Law"],  # dotted first, then bare
    ["1. DEFINITIONS", "2. COVER", "3 EXCLUSIONS", "4. CLAIMS", "5. CONDITIONS"],  # one dot lost
    ["1.  DEFINITIONS", "2.  COVER", "3  EXCLUSIONS", "4.  CLAIMS"],  # double spaces
])
def test_a_bare_number_written_nowhere_with_a_dot_stays_a_section(titles: list[str]) -> None:
    # Given a dotted wording where one or more later headings lost their dot (second outside tester)
    text = "".join(f"{t}\n\n{BODY}\n\n" for t in titles)
    chunks = chunk_document(parse_document("d.txt", text.encode()), "d", target_tokens=40, max_tokens=100)
    # Then every heading is its own section: only a number the document also writes "N." elsewhere is a row
    assert sorted({i.split("#")[0] for i in _ids(chunks) if i}, key=int) == [str(n) for n in range(1, len(titles) + 1)]
