"""Tests for :func:`longdoc.ingest.chunk.chunk_document` on real corpus documents.

Every invariant is checked on six real documents (three plain-text licences, an insurance
policy PDF, a CUAD franchise agreement PDF and the 261-page GDPR Council PDF) at several
size settings; the section, page and trap tests use passages checked by hand.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from functools import lru_cache
from itertools import pairwise

import pytest

from longdoc.core.text import split_sentences
from longdoc.ingest.chunk import chunk_document
from longdoc.ingest.parse import parse_document
from longdoc.core.tokens import CHARS_PER_TOKEN, estimate_tokens
from longdoc.core.models import Chunk, PageSpan
from longdoc.ingest.models import ParsedDocument

MPL = "MPL-2.0.txt"
APACHE = "Apache-2.0.txt"
GPL = "GPL-3.0.txt"
CHUBB = "chubb-travellershield-plus-policy-wording.pdf"
GOOSEHEAD = "cuad/gooseheadinsurance-franchise-agreement.pdf"
GDPR = "gdpr-council-position-5419-16.pdf"
DOCS = [MPL, APACHE, GPL, CHUBB, GOOSEHEAD, GDPR]
PDFS = [CHUBB, GOOSEHEAD, GDPR]

# (target_tokens, max_tokens, overlap): the default, a smaller target, and a tight max.
SETTINGS = [(1000, 2000, 0.15), (500, 1000, 0.15), (300, 600, 0.2), (400, 450, 0.2)]

# Characters that end a sentence or a clause when they are a chunk's last non-space character.
TERMINATORS = tuple('.;:!?)]"”')
# A line that opens a list item or numbered paragraph: "(a)", "(10)", "1.", a bullet or dash.
LIST_ITEM = re.compile(r"(?:\([a-zA-Z0-9]{1,4}\)|[•●▪◦·\-–]\s|\d{1,3}\.\s)")
# A split-section continuation id ("4.2#2", "Article 83#3"), as opposed to "#1" or a whole section.
CONTINUATION = re.compile(r"#(?:[2-9]|\d{2,})$")
PART_SUFFIX = re.compile(r"#\d+$")
ITEM_SUFFIX = re.compile(r"(?:\([^()]*\))+$")
"""The item part of a section id: ``(b)(ii)`` of ``4.2(b)(ii)``."""
CHUNK_ID = re.compile(r"^(?P<doc>.+):(?P<version>[0-9a-f]{8}):(?P<ordinal>\d{4})$")


@pytest.fixture(scope="module")
def chunked(
    parse_corpus: Callable[[str], ParsedDocument],
) -> Callable[..., tuple[ParsedDocument, list[Chunk]]]:
    """Return ``chunked(name, target, max, overlap) -> (parsed, chunks)``, cached per module."""

    @lru_cache(maxsize=None)
    def run(
        name: str, target: int = 1000, max_tokens: int = 2000, overlap: float = 0.15
    ) -> tuple[ParsedDocument, list[Chunk]]:
        parsed = parse_corpus(name)
        doc_id = re.sub(r"[^a-z0-9]+", "-", name.lower())
        chunks = chunk_document(
            parsed, doc_id, target_tokens=target, max_tokens=max_tokens, overlap=overlap
        )
        return parsed, chunks

    return run


def _span_of(chunks: list[Chunk], section_id: str) -> tuple[Chunk, int]:
    """Return the chunk holding the section span ``section_id`` and the span's index."""
    for chunk in chunks:
        for i, span in enumerate(chunk.section_spans):
            if span.section_id == section_id:
                return chunk, i
    raise AssertionError(f"no section span {section_id!r}")


def _chunk_at(chunks: list[Chunk], offset: int) -> Chunk:
    """Return the first chunk whose text covers absolute offset ``offset``."""
    return next(c for c in chunks if c.char_start <= offset < c.char_end)


def _document_sections(text: str, chunks: list[Chunk]) -> list[tuple[str | None, int, int]]:
    """The document's sections once each, in order, as ``(section_id, start, end)``.

    Every chunk's section spans, with a split part's ``#n`` dropped; a span repeated by an
    overlap, or continued by the next part of a split, is merged with the one before it.
    """
    out: list[tuple[str | None, int, int]] = []
    for span in (s for c in chunks for s in c.section_spans):
        sid = PART_SUFFIX.sub("", span.section_id) if span.section_id else None
        same = [i for i, (o, a, b) in enumerate(out)
                if o == sid and span.char_start <= b and not text[b : span.char_start].strip()
                or o == sid and a <= span.char_start < b]
        if same:
            o, a, b = out[same[-1]]
            out[same[-1]] = (o, min(a, span.char_start), max(b, span.char_end))
        else:
            out.append((sid, span.char_start, span.char_end))
    return sorted(out, key=lambda t: t[1])


def _all_section_ids(chunks: list[Chunk]) -> list[str]:
    """Every section id of every chunk, in document order."""
    return [sid for c in chunks for sid in c.section_ids]


def _mean_tokens(chunks: list[Chunk]) -> float:
    """Mean estimated token count of ``chunks``."""
    return sum(c.token_count for c in chunks) / len(chunks)


def _classify_ends(text: str, chunks: list[Chunk]) -> tuple[dict[str, int], list[str]]:
    """Classify every chunk end but the last as a joint (see ``test_no_chunk_ends_mid_sentence``).

    Returns ``(counts per joint kind, descriptions of the ends that are no joint)``.
    """
    section_starts = {
        span.char_start
        for c in chunks
        for span in c.section_spans
        if not CONTINUATION.search(span.section_id or "")
    }
    kinds: dict[str, int] = {"terminal": 0, "section": 0, "blank line": 0, "list item": 0}
    rejected: list[str] = []
    for chunk in chunks[:-1]:
        if chunk.text.endswith(TERMINATORS):
            kinds["terminal"] += 1
            continue
        after = text[chunk.char_end :]
        nxt = chunk.char_end + len(after) - len(after.lstrip())
        if not after.startswith("\n"):
            rejected.append(f"{chunk.chunk_id} ends inside a line: {chunk.text[-60:]!r}")
        elif nxt in section_starts:
            kinds["section"] += 1
        elif "\n\n" in text[chunk.char_end : nxt + 1]:
            kinds["blank line"] += 1
        elif LIST_ITEM.match(text, nxt):
            kinds["list item"] += 1
        else:
            rejected.append(f"{chunk.chunk_id}: {chunk.text[-60:]!r} | next {text[nxt:nxt + 40]!r}")
    return kinds, rejected


# --- Text, order and coverage ------------------------------------------------------


@pytest.mark.parametrize("settings", SETTINGS, ids=lambda s: f"t{s[0]}-m{s[1]}")
@pytest.mark.parametrize("name", DOCS)
def test_chunks_are_exact_slices_in_order_covering_all_text(chunked, name, settings) -> None:
    # Given a real document chunked at these settings
    parsed, chunks = chunked(name, *settings)
    text = parsed.text
    # Then every chunk is exactly its slice of the document, with matching metadata
    assert chunks, "no chunks"
    for ordinal, chunk in enumerate(chunks):
        assert chunk.text == text[chunk.char_start : chunk.char_end]
        assert chunk.ordinal == ordinal
        assert chunk.source == name
        assert chunk.doc_version == parsed.doc_version
        assert chunk.token_count == estimate_tokens(chunk.text)
        assert chunk.content_hash == hashlib.sha256(chunk.text.encode("utf-8")).hexdigest()
        assert chunk.text == chunk.text.strip(), "chunks are trimmed of surrounding whitespace"
    # And starts and ends both strictly increase (a continuation's overlap never reaches
    # back past the previous chunk's start)
    starts = [c.char_start for c in chunks]
    ends = [c.char_end for c in chunks]
    assert starts == sorted(set(starts))
    assert ends == sorted(set(ends))
    # And nothing but whitespace lies outside the chunks: before, between and after
    assert not text[: chunks[0].char_start].strip()
    assert not text[chunks[-1].char_end :].strip()
    for previous, current in pairwise(chunks):
        if current.char_start > previous.char_end:
            gap = text[previous.char_end : current.char_start]
            assert not gap.strip(), f"text dropped between chunks {previous.ordinal} and {current.ordinal}: {gap!r}"


@pytest.mark.parametrize("settings", SETTINGS, ids=lambda s: f"t{s[0]}-m{s[1]}")
@pytest.mark.parametrize("name", DOCS)
def test_no_chunk_ends_mid_sentence(chunked, name, settings) -> None:
    """A chunk end is accepted only at one of these joints (checked in this order):

    1. ``terminal``: the chunk's last character is one of ``. ; : ! ? ) ] " ”``;
    2. ``section``: the chunk ends at a line end and the next non-space character is where a
       new section's heading starts (a ``SectionSpan`` start that is not a ``#2+`` continuation),
       so the chunk's last line is a page footer, a table row or a heading-only section;
    3. ``blank line``: the chunk ends at a line end followed by a blank line (a paragraph break);
    4. ``list item``: the chunk ends at a line end and the next line opens a list item or a
       numbered paragraph (``(a)``, ``(10)``, ``1.``, a bullet). Allowed because the chunker
       ranks paragraph joints above sentence joints and list items are paragraphs; the
       grammatical sentence may run on (``...; or`` / ``(h) working as ...``).

    The last chunk ends the document. The required share of accepted ends is 100 %.
    """
    # Given a real document chunked at these settings
    parsed, chunks = chunked(name, *settings)
    text = parsed.text
    # When each chunk end (but the document's last) is classified
    kinds, rejected = _classify_ends(text, chunks)
    # Then every end is a joint (100 %), and terminal punctuation is the most common joint
    assert rejected == [], f"{len(rejected)} mid-sentence ends (kinds {kinds}): {rejected[:5]}"
    assert chunks[-1].char_end == len(text.rstrip())
    assert kinds["terminal"] >= max(kinds["section"], kinds["blank line"], kinds["list item"])


# --- Sizes and overlap ----------------------------------------------------------------


@pytest.mark.parametrize("settings", SETTINGS, ids=lambda s: f"t{s[0]}-m{s[1]}")
@pytest.mark.parametrize("name", DOCS)
def test_token_count_within_max_unless_a_single_oversize_sentence(chunked, name, settings) -> None:
    # Given a real document chunked at these settings
    target, max_tokens, _ = settings
    _, chunks = chunked(name, *settings)
    # Then every chunk fits max_tokens, overlap included, unless it is flagged oversize
    too_big = [(c.chunk_id, c.token_count) for c in chunks if c.token_count > max_tokens and not c.oversize]
    assert too_big == []
    # And an oversize chunk is one sentence the chunker could not split, really over max
    for chunk in (c for c in chunks if c.oversize):
        assert chunk.token_count > max_tokens
        assert len(split_sentences(chunk.text)) == 1, chunk.chunk_id
    # And the typical chunk is near the target, not the max
    sizes = sorted(c.token_count for c in chunks)
    assert sizes[len(sizes) // 2] <= target


@pytest.mark.parametrize("settings", SETTINGS[:3], ids=lambda s: f"t{s[0]}-m{s[1]}")
def test_split_sections_repeat_whole_trailing_sentences_within_budget(chunked, settings) -> None:
    """Overlap rule: ``X#n+1`` starts with whole sentences or paragraphs from the end of ``X#n``:
    as many as fit ``overlap * target`` tokens, else the last one if it fits 20 % of the target,
    never so many that the chunk passes ``max_tokens``; ``overlap_chars`` says how much is
    repeated, and ``overlap_missing`` flags a continuation where nothing whole fits.
    """
    target, max_tokens, overlap = settings
    wide_chars = int(target * 0.2 * CHARS_PER_TOKEN)
    with_overlap = 0
    pairs = 0
    for name in DOCS:
        # Given each document chunked at these settings
        parsed, chunks = chunked(name, *settings)
        for a, b in pairwise(chunks):
            if not CONTINUATION.search(b.section_id or ""):
                if b.section_id is not None:  # (a split preamble has no id to suffix)
                    assert (b.overlap_chars, b.overlap_missing) == (0, False)
                continue
            base, n = b.section_id.rsplit("#", 1)
            pairs += 1
            # Then a continuation follows its predecessor: the same section (a part inside one
            # long item is cited as that item, 4.2(b)#3, so compare the sections the items
            # belong to), the next suffix, the same path
            a_base, _, a_n = (a.section_id or "").rpartition("#")
            assert (ITEM_SUFFIX.sub("", a_base), a_n) == (ITEM_SUFFIX.sub("", base), str(int(n) - 1))
            assert a.heading_path == b.heading_path
            shared = a.char_end - b.char_start
            assert b.overlap_chars == max(shared, 0)
            assert b.overlap_missing == (shared <= 0)
            if shared > 0:
                with_overlap += 1
                # And the repeated text is the tail of the previous chunk, starting at one of
                # its sentence or paragraph starts (whole units), within 20 % of the target
                repeated = parsed.text[b.char_start : a.char_end]
                assert a.text.endswith(repeated) and b.text.startswith(repeated)
                sentence_starts = [a.char_start + s for s, _ in split_sentences(a.text)]
                line_start = not parsed.text[: b.char_start].rsplit("\n", 1)[-1].strip()
                assert b.char_start in sentence_starts or line_start, f"{b.chunk_id} starts mid-sentence"
                assert shared <= wide_chars
                assert b.token_count <= max_tokens or b.oversize
            else:
                # And no overlap only when the previous chunk's last sentence exceeds 20 % of the target
                last_start, last_end = split_sentences(a.text)[-1]
                room = max_tokens * CHARS_PER_TOKEN - len(b.text)
                assert last_end - last_start > min(wide_chars, room), f"{b.chunk_id} lacks overlap"
    # And the rule was exercised, with most continuations carrying an overlap
    assert pairs >= 10
    assert with_overlap >= 0.6 * pairs, (with_overlap, pairs)


# --- Sections -------------------------------------------------------------------------


def test_mpl_numbered_sections_found_with_heading_paths(chunked) -> None:
    # Given the MPL 2.0 (two-level numbering "1.1." ... "10.4.") at the default size
    _, chunks = chunked(MPL)
    ids = _all_section_ids(chunks)
    # Then its numbered sections are found, each once and in document order
    expected = (
        ["1"] + [f"1.{i}" for i in range(1, 15)]
        + ["2"] + [f"2.{i}" for i in range(1, 8)]
        + ["3"] + [f"3.{i}" for i in range(1, 6)]
        + ["4", "5", "5.1", "5.2", "5.3", "6", "7", "8", "9", "10", "10.1", "10.2", "10.3", "10.4"]
    )
    numbered = [i for i in ids if i[0].isdigit() and "(" not in i]
    assert list(dict.fromkeys(numbered)) == expected
    # (a section's flush text after its last item is that section again: 2.3 ends with one)
    assert [i for i in ids if i.startswith("2.3")] == ["2.3", "2.3(a)", "2.3(b)", "2.3(c)", "2.3"]
    assert ids[-2:] == ["Exhibit A", "Exhibit B"]
    # And its (a)/(b) items are sub-sections cited as lawyers cite them
    assert [i for i in ids if i.startswith("3.2")] == ["3.2", "3.2(a)", "3.2(b)"]
    # And a section span is exactly its heading and lead-in, and carries the heading path
    chunk, i = _span_of(chunks, "3.2")
    span = chunk.section_spans[i]
    body = chunk.text[span.char_start - chunk.char_start : span.char_end - chunk.char_start]
    assert body == "3.2. Distribution of Executable Form\n\nIf You distribute Covered Software in Executable Form then:"
    assert span.heading_path == ["3. Responsibilities", "3.2. Distribution of Executable Form"]
    # And the item (b) is its own span, with the same heading path (items add no heading)
    chunk_b, j = _span_of(chunks, "3.2(b)")
    item = chunk_b.section_spans[j]
    item_text = chunk_b.text[item.char_start - chunk_b.char_start : item.char_end - chunk_b.char_start]
    assert item_text.startswith("(b) You may distribute such Executable Form")
    assert item_text.endswith("the recipients' rights in the Source Code Form under this License.")
    assert item.heading_path == span.heading_path
    # And offsets inside the lead-in resolve to 3.2, inside (b) to 3.2(b)
    inner = chunk.text.index("If You distribute Covered Software in Executable Form")
    assert chunk.section_of(inner) == "3.2"
    assert chunk_b.section_of(chunk_b.text.index("sublicense it under different terms")) == "3.2(b)"


def test_mpl_chunks_of_section_3_have_heading_path_under_3_responsibilities(chunked) -> None:
    # Given MPL chunked small enough that chunks begin at 3.x subsections
    _, chunks = chunked(MPL, 300, 600, 0.15)
    # When the chunks whose own section is 3.x are taken
    in_3 = [c for c in chunks if c.section_id and c.section_id.startswith("3.")]
    # Then there are several, each starting at a subsection (never at one of its items: a
    # section's items stay in its chunk), and each heading path starts with section 3's
    # heading and ends with the subsection's own
    assert [c.section_id for c in in_3] == ["3.2", "3.3", "3.5"]
    for chunk in in_3:
        number, _, item = chunk.section_id.partition("(")
        assert chunk.heading_path[0] == "3. Responsibilities"
        assert chunk.heading_path[-1].startswith(number + ". ")
        assert chunk.text.startswith(f"({item} " if item else number + ". ")


def test_mpl_boxed_sections_6_and_7_are_sections(chunked) -> None:
    # Given MPL, whose sections 6 and 7 are drawn inside boxes of '*'
    parsed, chunks = chunked(MPL)
    # Then the limitation-of-liability text resolves to section 7
    offset = parsed.text.index("Under no circumstances and under no legal theory")
    chunk = _chunk_at(chunks, offset)
    assert chunk.section_of(offset - chunk.char_start) == "7"


def test_goosehead_governing_law_section_27_1(chunked) -> None:
    # Given the Goosehead franchise agreement (CUAD), default sizes
    parsed, chunks = chunked(GOOSEHEAD)
    # When section 27.1 is looked up
    chunk, i = _span_of(chunks, "27.1")
    span = chunk.section_spans[i]
    # Then it is the choice-of-law clause, under "27 APPLICABLE LAW AND DISPUTE RESOLUTION"
    assert span.heading_path[-2:] == ["27 APPLICABLE LAW AND DISPUTE RESOLUTION", "27.1 Choice of Law."]
    assert "27" in chunk.section_ids and chunk.section_ids.index("27") < chunk.section_ids.index("27.1")
    texas = parsed.text.index("interpreted and construed exclusively under the laws of the State of Texas")
    assert span.char_start <= texas < span.char_end
    assert chunk.section_of(texas - chunk.char_start) == "27.1"
    # And its page is the physical page of the quote
    assert chunk.page_of(texas - chunk.char_start) == parsed.page_at(texas)


def test_long_section_is_split_with_numbered_suffixes(chunked) -> None:
    # Given the GPL v3 at the default size; its section 6 (Conveying Non-Source Forms) is long
    _, chunks = chunked(GPL)
    # Then the section keeps its number with #1, #2 while short sections stay whole
    assert [c.section_id for c in chunks] == [None, "0", "1", "3", "6#1", "6#2", "7", "8", "11", "12", "17"]
    first, second = (c for c in chunks if c.section_id in ("6#1", "6#2"))
    assert first.text.startswith("6. Conveying Non-Source Forms.")
    assert first.heading_path == second.heading_path == ["6. Conveying Non-Source Forms."]
    assert first.section_ids == ["6#1"] and second.section_ids == ["6#2"]
    # And small whole sections share a chunk (sections 3 to 5 travel together)
    three = next(c for c in chunks if c.section_id == "3")
    assert three.section_ids == ["3", "4", "5"]


# --- The trap: numbers at the start of body lines -------------------------------------


def test_real_body_lines_starting_with_a_number_are_not_sections(chunked) -> None:
    # Given real lines that begin with a number followed by lowercase words, in three documents
    cases = [
        # (doc, the line, the section it belongs to, as a regular expression)
        (CHUBB, "\n6 hours\nMaximum\n$1,200", r"Section 24"),  # after a short line "$100 per"
        (CHUBB, "\n12 hours\nMaximum\n$5,000", r"Section 39"),
        (GPL, "\n11 of the WIPO copyright treaty adopted on 20 December 1996", r"3"),
        (GOOSEHEAD, "\n1 year after that officer or general partner", r"Exhibit I#\d+"),
    ]
    for name, line, owner in cases:
        parsed, chunks = chunked(name)
        offset = parsed.text.index(line) + 1
        chunk = _chunk_at(chunks, offset)
        starts = {s.char_start for c in chunks for s in c.section_spans}
        # Then no section starts at that line, and no section is named after its number
        assert offset not in starts, f"{line!r} was taken for a heading"
        number = line.split()[0]
        assert chunk.section_of(offset - chunk.char_start) != number
        assert re.fullmatch(owner, chunk.section_of(offset - chunk.char_start) or "")


def test_real_numbered_headings_in_a_pdf_are_sections(chunked) -> None:
    # Given the Chubb policy: Part 3 has "1. Geographical Cover", Part 6 "7. Legal Action"
    parsed, chunks = chunked(CHUBB)
    for heading, parent in [
        ("1. Geographical Cover", "Section 1 – Scope of Coverage"),
        ("7. Legal Action", "Part 6 General Conditions"),
    ]:
        offset = parsed.text.index("\n" + heading + "\n") + 1
        # Then a section span starts exactly at the heading, numbered and nested under its parent
        spans = [s for c in chunks for s in c.section_spans if s.char_start == offset]
        assert len(spans) == 1, heading
        assert spans[0].section_id == heading.split(".")[0]
        assert spans[0].heading_path[-2:] == [parent, heading]


def test_constructed_trap_number_that_fits_the_sequence_but_reads_as_a_sentence(parse_corpus) -> None:
    # Given real MPL text with two paragraphs inserted before "3. Responsibilities": they start
    # with "2.8" and "3", exactly the next numbers in the sequence, after blank lines, but read
    # as sentences
    corpus_mpl = parse_corpus(MPL)
    marker = "3. Responsibilities\n"
    trap = (
        "2.8 per cent of the fees is withheld until You comply.\n\n"
        "3 days after You receive notice of non-compliance, these grants end.\n\n"
    )
    text = corpus_mpl.text.replace(marker, trap + marker, 1)
    doc = ParsedDocument(
        source="mpl-with-trap.txt",
        media_type="text/plain",
        content_sha256=hashlib.sha256(text.encode()).hexdigest(),
        text=text,
        pages=[PageSpan(page=None, char_start=0, char_end=len(text))],
    )
    # When it is chunked
    chunks = chunk_document(doc, "trap", target_tokens=300, max_tokens=600)
    heading_at = text.index(marker)
    spans = {s.char_start: s for c in chunks for s in c.section_spans}
    # Then both inserted lines are body text of section 2.7, not sections 2.8 or 3
    for line in trap.split("\n\n")[:2]:
        trap_at = text.index(line)
        assert trap_at not in spans, line
        holder = _chunk_at(chunks, trap_at)
        assert holder.section_of(trap_at - holder.char_start) == "2.7"
    assert "2.8" not in _all_section_ids(chunks)
    # And the real heading right after it still starts section 3, and 3.1 follows
    assert spans[heading_at].section_id == "3"
    assert spans[heading_at].heading_path == ["3. Responsibilities"]
    ids = _all_section_ids(chunks)
    assert ids[ids.index("2.7") : ids.index("2.7") + 3] == ["2.7", "3", "3.1"]


# --- Pages ------------------------------------------------------------------------------


@pytest.mark.parametrize("name", PDFS)
def test_page_range_matches_the_pages_of_first_and_last_character(chunked, name) -> None:
    # Given a chunked PDF
    parsed, chunks = chunked(name)
    multi_page = 0
    for chunk in chunks:
        # Then page_start/page_end are the pages of the first and last characters
        assert chunk.page_start == parsed.page_at(chunk.char_start)
        assert chunk.page_end == parsed.page_at(chunk.char_end - 1)
        # And page_spans list each touched page once, in order, clipped to the chunk
        pages = [s.page for s in chunk.page_spans]
        assert pages == list(range(chunk.page_start, chunk.page_end + 1))
        assert chunk.page_spans[0].char_start == chunk.char_start
        assert chunk.page_spans[-1].char_end == chunk.char_end
        multi_page += chunk.page_end > chunk.page_start
    assert multi_page >= 10
    # And a few offsets sampled through each chunk resolve to the document's own page
    for chunk in chunks[::7]:
        for rel in range(0, len(chunk.text), max(1, len(chunk.text) // 9)):
            if not chunk.text[rel].isspace():
                assert chunk.page_of(rel) == parsed.page_at(chunk.char_start + rel)


def test_page_of_a_quote_inside_a_multi_page_chunk_is_the_quote_page(chunked) -> None:
    # Given GDPR chunks; phrases whose physical pages are known (hand-checked gold: pages 247, 163)
    parsed, chunks = chunked(GDPR)
    offset = parsed.text.index("up to 20 000 000 EUR")
    chunk = _chunk_at(chunks, offset)
    # Then the fine's chunk spans several pages around 247, page_of gives the phrase's page
    # 247, and the section is the paragraph a lawyer cites: Article 83(5)
    assert chunk.page_start < 247 < chunk.page_end
    assert chunk.page_of(offset - chunk.char_start) == 247
    assert chunk.section_of(offset - chunk.char_start) == "Article 83(5)"
    # And Article 33's breach deadline sits on page 163 inside a multi-page chunk (the one
    # that opens with the SECTION 2 heading and holds Articles 32 and 33 whole)
    deadline = [m.start() for m in re.finditer("not later than 72 hours after having become aware", parsed.text)][1]
    chunk = _chunk_at(chunks, deadline)
    assert chunk.page_start < 163 < chunk.page_end
    assert chunk.page_of(deadline - chunk.char_start) == 163
    assert chunk.section_of(deadline - chunk.char_start) == "Article 33(1)"


def test_plain_text_chunks_have_no_pages(chunked) -> None:
    # Given a plain-text document
    _, chunks = chunked(APACHE)
    # Then its chunks carry no page numbers anywhere
    assert {(c.page_start, c.page_end) for c in chunks} == {(None, None)}
    assert all(c.page_of(0) is None for c in chunks)


# --- Ids, determinism and settings -----------------------------------------------------


def test_chunking_the_same_bytes_twice_gives_the_same_ids_and_hashes(corpus_dir) -> None:
    # Given the Goosehead PDF parsed twice from its bytes (no cache)
    data = (corpus_dir / GOOSEHEAD).read_bytes()
    first = chunk_document(parse_document(GOOSEHEAD, data), "goosehead")
    second = chunk_document(parse_document(GOOSEHEAD, data), "goosehead")
    # Then ids, hashes and every other field are identical
    assert [c.chunk_id for c in first] == [c.chunk_id for c in second]
    assert [c.content_hash for c in first] == [c.content_hash for c in second]
    assert [c.model_dump() for c in first] == [c.model_dump() for c in second]
    # And ids read "{doc_id}:{doc_version[:8]}:{ordinal:04d}", version from the bytes' SHA-256
    version = hashlib.sha256(data).hexdigest()[:8]
    for chunk in first:
        m = CHUNK_ID.match(chunk.chunk_id)
        assert m, chunk.chunk_id
        assert (m["doc"], m["version"], int(m["ordinal"])) == ("goosehead", version, chunk.ordinal)
    assert first[0].chunk_id == f"goosehead:{version}:0000"
    assert len({c.chunk_id for c in first}) == len(first)


def test_smaller_target_gives_more_smaller_chunks_within_max(chunked) -> None:
    for name in (GPL, GOOSEHEAD):
        # Given a document chunked at target 1000 / max 2000 and at target 500 / max 1000
        _, big = chunked(name, 1000, 2000, 0.15)
        _, small = chunked(name, 500, 1000, 0.15)
        # Then the smaller target gives clearly more chunks, each within its own max
        assert len(small) > 1.5 * len(big)
        assert all(c.token_count <= 1000 or c.oversize for c in small)
        assert all(c.token_count <= 2000 or c.oversize for c in big)
        # And the average chunk shrinks accordingly
        assert _mean_tokens(small) < 0.7 * _mean_tokens(big)


def test_overlap_setting_changes_continuation_starts_only(chunked) -> None:
    # Given the GDPR chunked with overlap 0.2 and with overlap 0.1
    _, wide = chunked(GDPR, 500, 1000, 0.2)
    _, narrow = chunked(GDPR, 500, 1000, 0.1)
    # Then the content cuts (chunk ends) are the same, and only continuations start earlier
    assert [c.char_end for c in wide] == [c.char_end for c in narrow]
    earlier = [w for w, n in zip(wide, narrow, strict=True) if w.char_start < n.char_start]
    assert earlier and all(CONTINUATION.search(w.section_id or "") or w.section_id is None for w in earlier)
    assert all(w.char_start <= n.char_start for w, n in zip(wide, narrow, strict=True))


def test_target_above_max_is_rejected(parse_corpus) -> None:
    # Given a parsed document
    parsed = parse_corpus(APACHE)
    # When the target exceeds the max, Then chunking refuses with both numbers in the message
    with pytest.raises(ValueError, match="1200.*1000"):
        chunk_document(parsed, "apache", target_tokens=1200, max_tokens=1000)


def test_gdpr_recitals_are_sections_and_chapter_headings_open_their_first_article(chunked) -> None:
    # Given the GDPR Council position (recitals "(1)".."(173)" after "Whereas:")
    parsed, chunks = chunked(GDPR)
    ids = _all_section_ids(chunks)
    # Then the recitals are sections in sequence, before Chapter I
    recitals = [i for i in ids if i.startswith("Recital ")]
    assert recitals == [f"Recital {n}" for n in range(1, 174)]
    assert ids.index("Recital 173") < ids.index("Chapter I")
    # And a recital's text resolves to it
    offset = parsed.text.index("The processing of personal data should be designed to serve mankind")
    holder = _chunk_at(chunks, offset)
    assert holder.section_of(offset - holder.char_start) == "Recital 4"
    # And no chunk ends with a heading-only chapter: "CHAPTER III" opens the chunk of Article 12
    for chunk in chunks[:-1]:
        last = chunk.section_spans[-1]
        assert not (last.section_id or "").startswith("Chapter"), chunk.chunk_id
    chapter_3 = next(c for c in chunks if "Chapter III" in c.section_ids)
    at = chapter_3.section_ids.index("Chapter III")
    assert chapter_3.section_ids[at + 1 : at + 3] == ["Section 1", "Article 12"]
    # And running headers are not in any chunk
    assert not any("AV/NT/sr" in c.text for c in chunks)


def test_list_of_schedules_is_not_the_heading_path_of_the_contract(corpus_dir) -> None:
    # Given a contract whose page 2 lists Schedules A to G before the body
    data = (corpus_dir / "cuad/cardlyticsinc-maintenance-agreement1.pdf").read_bytes()
    chunks = chunk_document(parse_document("cardlytics.pdf", data), "cardlytics")
    # When the main body's numbered clauses are chunked (the schedules themselves start on p. 35)
    body = [c for c in chunks if c.section_id and c.section_id[0].isdigit() and c.page_start < 30]
    # Then none of them sits under a schedule listed on the contents page
    assert body
    assert not [c.chunk_id for c in body if any(p.upper().startswith("SCHEDULE") for p in c.heading_path)]


def test_x_point_zero_headings_are_parents_of_their_subsections(corpus_dir) -> None:
    # Given a contract numbered "9.0 DOCUMENTATION", "9.1 ..."
    data = (corpus_dir / "cuad/cardlyticsinc-maintenance-agreement1.pdf").read_bytes()
    chunks = chunk_document(parse_document("cardlytics.pdf", data), "cardlytics")
    # Then "5.2" sits under "5.0 TERMINATION" in its heading path
    five_two = next(c for c in chunks if c.section_id and c.section_id.startswith("5.2"))
    assert [p for p in five_two.heading_path if p.startswith("5.0")] == ["5.0 TERMINATION"]


def test_acronym_in_brackets_at_a_line_start_does_not_end_a_chunk(corpus_dir) -> None:
    # Given the Federal Register notice where a line starts "(DPC) software"
    data = (corpus_dir / "federal-register-2020-17221.pdf").read_bytes()
    parsed = parse_document("fr.pdf", data)
    chunks = chunk_document(parsed, "fr")
    # Then no chunk ends right before "(DPC)"
    for chunk in chunks:
        following = parsed.text[chunk.char_end : chunk.char_end + 12].lstrip()
        assert not following.startswith("(DPC)"), chunk.chunk_id


@pytest.mark.parametrize("name", DOCS)
def test_a_chunks_heading_path_is_the_path_of_its_own_section_id(chunked, name: str) -> None:
    # Given real documents whose first chunk holds an unnumbered preamble plus section 1
    # (Apache: the licence title, then "1. Definitions.")
    _, chunks = chunked(name)
    for chunk in chunks:
        if chunk.section_id is None:
            continue
        # Then the chunk's heading path is the path of the section its section_id names
        # (or of the section its items belong to: a part of a split section may hold only items)
        base = ITEM_SUFFIX.sub("", chunk.section_id.split("#")[0])
        owner = next(s for s in chunk.section_spans if ITEM_SUFFIX.sub("", (s.section_id or "").split("#")[0]) == base)
        assert chunk.heading_path == owner.heading_path, (name, chunk.chunk_id)
    if name == APACHE:
        assert (chunks[0].section_id, chunks[0].heading_path) == ("1", ["1. Definitions."])


# --- Overlap when the sentence before a cut is long ------------------------------------

# Sentences of a synthetic section "1. Escape of Water", sized for target 200 / max 400 tokens,
# where 20 % of the target is 40 tokens (160 characters) and 10 % is 20 tokens (80 characters).
SHORT = [f"The insurer pays claim number {i} within thirty days of receiving the complete signed file."
         for i in range(1, 7)]  # about 23 tokens each: one fits the overlap budget
LONG_A = ("The policyholder must report every escape of water to the insurer as soon as it is noticed, "
          "must take all reasonable steps to stop the leak and limit the damage, and must keep the damaged "
          "items available for inspection until the loss adjuster has seen them or waived the inspection.")
LONG_B = ("Any claim for damage caused by water that escapes gradually over a period of more than fourteen "
          "days is excluded, whether or not the policyholder knew of the leak, unless the policyholder proves "
          "that the leak was hidden behind a wall or under a floor and could not reasonably have been noticed.")
MORE = [f"Part {i} of the schedule lists the limits that apply to the claim above in every case."
        for i in range(1, 6)]


def _continuations(chunks: list[Chunk]) -> list[tuple[Chunk, Chunk]]:
    """``(previous, continuation)`` pairs of a split section (``X#n``, ``X#n+1``)."""
    return [(a, b) for a, b in pairwise(chunks) if CONTINUATION.search(b.section_id or "")]


def _assert_whole_sentence_overlap(text: str, a: Chunk, b: Chunk, target: int) -> str:
    """Assert ``b`` repeats whole sentences from the end of ``a``, 10-20 % of ``target`` tokens."""
    repeated = text[b.char_start : a.char_end]
    assert (b.overlap_chars, b.overlap_missing) == (len(repeated), False)
    assert a.text.endswith(repeated) and b.text.startswith(repeated)
    sentence_starts = [a.char_start + s for s, _ in split_sentences(a.text)]
    line_start = not text[: b.char_start].rsplit("\n", 1)[-1].strip()
    assert b.char_start in sentence_starts or line_start, f"{b.chunk_id} overlap starts mid-sentence"
    assert 0.10 * target <= estimate_tokens(repeated) <= 0.20 * target, (b.chunk_id, estimate_tokens(repeated))
    return repeated


def test_cut_after_a_long_sentence_moves_to_a_nearby_sentence_start_to_keep_overlap() -> None:
    # Given a section whose natural paragraph cut follows a sentence of 71 tokens (over 20 % of
    # a 200-token target), while the sentences before it are short
    text = ("1. Escape of Water\n\n" + " ".join([*SHORT, LONG_A]) + "\n\n" + " ".join([LONG_B, *MORE]) + "\n")
    parsed = parse_document("policy.txt", text.encode("utf-8"))
    # When it is chunked at target 200 / max 400
    chunks = chunk_document(parsed, "policy", target_tokens=200, max_tokens=400, overlap=0.15)
    # Then the section is split in two, and the cut moved back to the start of the long sentence
    assert [c.section_id for c in chunks] == ["1#1", "1#2"]
    first, second = chunks
    assert first.text.endswith(SHORT[-1])
    assert second.text[second.overlap_chars :].lstrip().startswith(LONG_A)
    # And the continuation repeats the last short sentence, whole, within 10-20 % of the target
    assert _assert_whole_sentence_overlap(parsed.text, first, second, 200) == SHORT[-1]
    # And the first chunk keeps at least half the target, the second stays within max
    assert first.token_count >= 100 and second.token_count <= 400


def test_section_of_only_long_sentences_stays_flagged_without_invented_overlap() -> None:
    # Given a section where every sentence is over 20 % of the target (each about 71-74 tokens)
    sentences = [LONG_A, LONG_B] * 4
    paragraphs = [" ".join(sentences[i : i + 2]) for i in range(0, len(sentences), 2)]
    text = "1. Escape of Water\n\n" + "\n\n".join(paragraphs) + "\n"
    parsed = parse_document("policy.txt", text.encode("utf-8"))
    # When it is chunked at target 200 / max 400
    chunks = chunk_document(parsed, "policy", target_tokens=200, max_tokens=400, overlap=0.15)
    # Then it is split, and every continuation is flagged, repeats nothing and starts at a
    # sentence of its own (no character slice, no word cut)
    pairs = _continuations(chunks)
    assert len(pairs) >= 2
    for a, b in pairs:
        assert (b.overlap_chars, b.overlap_missing) == (0, True)
        assert b.char_start > a.char_end
        assert b.text.startswith((LONG_A, LONG_B))
        assert a.text.endswith((LONG_A, LONG_B))


# Continuations that had no overlap (overlap_missing) before cuts could move away from a long sentence.
# (Startec's 18#2 was one: since a line followed by its first child is a heading, its 18.1-18.12 are
# sections of their own and section 18 is no longer split.)
REBALANCED = [
    ("cuad/fusionpharmaceuticalsinc-fusion.txt", "Exhibit 10.17#7"),
    ("cuad/manufacturersservicesltd-outsourcing-agreement.txt", "4.2#5"),
    ("cuad/verizonabsllc-service-agreement.pdf", "Section 2.5#2"),
]


@pytest.mark.parametrize(("name", "section_id"), REBALANCED)
def test_real_continuation_after_a_long_sentence_now_has_overlap(chunked, name, section_id) -> None:
    # Given a real contract whose natural cut in this section follows a sentence over 20 % of
    # the target (so the continuation used to be flagged overlap_missing)
    parsed, chunks = chunked(name)
    i = next(k for k, c in enumerate(chunks) if c.section_id == section_id)
    previous, continuation = chunks[i - 1], chunks[i]
    # Then the continuation starts with whole sentences from the end of the previous chunk,
    # 10-20 % of the 1,000-token target
    _assert_whole_sentence_overlap(parsed.text, previous, continuation, 1000)
    # And the previous chunk still ends on a sentence end and both stay within max
    assert previous.text.endswith(TERMINATORS)
    assert previous.token_count <= 2000 and continuation.token_count <= 2000


def test_real_continuation_after_a_single_2100_token_sentence_stays_flagged(chunked) -> None:
    # Given the MSL outsourcing agreement, whose section 16.21 holds one sentence of about
    # 2,100 tokens (over the 2,000-token cap: an oversize chunk of its own)
    parsed, chunks = chunked("cuad/manufacturersservicesltd-outsourcing-agreement.pdf")
    i = next(k for k, c in enumerate(chunks) if c.section_id == "16.21#5")
    assert chunks[i - 1].oversize
    previous, continuation = chunks[i - 1], chunks[i]
    # Then its continuation carries no overlap and says so
    assert (continuation.overlap_chars, continuation.overlap_missing) == (0, True)
    assert continuation.char_start > previous.char_end
    assert estimate_tokens(parsed.text[slice(*_last_sentence(previous))]) > 200


def _last_sentence(chunk: Chunk) -> tuple[int, int]:
    """Absolute ``(start, end)`` of ``chunk``'s last sentence."""
    start, end = split_sentences(chunk.text)[-1]
    return chunk.char_start + start, chunk.char_start + end


@pytest.mark.parametrize("name", [name for name, _ in REBALANCED] + ["cuad/bluehillsbancorp-agency-agreement.pdf",
                                                                    "cuad/hospitalityinvestorstrust-franchise-agreement.txt"])
def test_moved_cuts_keep_sentence_ends_and_overlap_within_20_percent(chunked, name) -> None:
    # Given a contract where some cuts moved to make room for overlap
    parsed, chunks = chunked(name)
    # Then no chunk ends mid-sentence
    _, rejected = _classify_ends(parsed.text, chunks)
    assert rejected == []
    # And every overlap is at most 20 % of the target, and every chunk fits max unless oversize
    for a, b in _continuations(chunks):
        assert estimate_tokens(parsed.text[b.char_start : a.char_end]) <= 200 or b.overlap_missing
        assert b.overlap_chars <= 200 * CHARS_PER_TOKEN
    assert all(c.token_count <= 2000 or c.oversize for c in chunks)
    # And a continuation without overlap is one whose previous last sentence is over 20 %
    for a, b in _continuations(chunks):
        if b.overlap_missing:
            start, end = _last_sentence(a)
            assert end - start > 200 * CHARS_PER_TOKEN, b.chunk_id


# --- (a)-style items and numbered paragraphs -----------------------------------------------

ITEMS = """1. Exclusions

1.1 Escape of water

We do not pay for damage caused by water escaping from a fixed system, unless:

(a) the leak is sudden;

(b) you report it within 14 days, and:
(i) you stop the leak; and
(ii) you keep the damaged items;

(c) a plumber confirms the cause.

This exclusion applies to every building insured under this policy.

The leak described in (b) above must be reported in writing.
(e) is not an item: it does not follow (c).

1.2 Frost
"""


def test_items_are_sub_sections_cited_as_lawyers_cite_them() -> None:
    # Given a policy section with (a)-(c) items, nested (i)/(ii), flush text after the last item,
    # and two lines that start with a bracket but are not items in sequence
    parsed = parse_document("policy.txt", ITEMS.encode())
    # When it is chunked small, so that section 1.1 is split into parts
    chunks = chunk_document(parsed, "policy", target_tokens=60, max_tokens=200)
    assert [c.section_id for c in chunks] == ["1.1#1", "1.1#2", "1.2"]
    spans = [s for c in chunks for s in c.section_spans]
    sections = _document_sections(parsed.text, chunks)
    # Then the items are sections with the parent's number: 1.1(a), 1.1(b)(i), ...
    assert [sid for sid, _, _ in sections] == [
        "1", "1.1", "1.1(a)", "1.1(b)", "1.1(b)(i)", "1.1(b)(ii)", "1.1(c)", "1.1", "1.2"
    ]
    # And items add nothing to the heading path
    assert {tuple(s.heading_path) for s in spans if s.section_id and s.section_id.startswith("1.1")} == {
        ("1. Exclusions", "1.1 Escape of water")
    }
    # And each item is its own paragraph; the flush text after (c) is 1.1 again, and the
    # out-of-sequence "(e)" line stays in it
    text = parsed.text
    by_id: dict[str | None, list[str]] = {}
    for sid, start, end in sections:
        by_id.setdefault(sid, []).append(text[start:end])
    assert by_id["1.1(a)"] == ["(a) the leak is sudden;"]
    assert by_id["1.1(b)(ii)"] == ["(ii) you keep the damaged items;"]
    assert by_id["1.1"][1].startswith("This exclusion applies to every building")
    assert "(e) is not an item" in by_id["1.1"][1]
    # And a quote inside (b)(i) resolves to that item
    at = text.index("you stop the leak")
    holder = _chunk_at(chunks, at)
    assert holder.section_of(at - holder.char_start) == "1.1(b)(i)"


def test_item_i_after_h_is_a_letter_and_ii_after_hh_too() -> None:
    # Given a long lettered list that runs past (h) and past (z)
    letters = [chr(c) for c in range(ord("a"), ord("z") + 1)] + ["aa", "bb"]
    body = "\n\n".join(f"({t}) Item {t} applies." for t in letters)
    parsed = parse_document("list.txt", f"1. Definitions\n\nIn this Agreement:\n\n{body}\n".encode())
    # When it is chunked
    chunks = chunk_document(parsed, "list", target_tokens=1000, max_tokens=2000)
    ids = [s.section_id for c in chunks for s in c.section_spans]
    # Then (i), (v) and (x) are letters of the one list, not roman sub-lists, and (aa) follows (z)
    assert ids == ["1"] + [f"1({t})" for t in letters]


def test_gdpr_numbered_paragraphs_and_points_are_cited_article_33_3_a(parse_corpus) -> None:
    # Given the GDPR text, whose Article 33 has paragraphs "1." to "5." and points "(a)" to "(d)"
    # set on lines of their own
    parsed = parse_corpus("gdpr-regulation-2016-679-eurlex.txt")
    # When it is chunked at the default size
    chunks = chunk_document(parsed, "gdpr")
    ids = [s.section_id for c in chunks for s in c.section_spans if (s.section_id or "").startswith("Article 33")]
    # Then they are cited as the Regulation cites them
    assert ids == ["Article 33", "Article 33(1)", "Article 33(2)", "Article 33(3)", "Article 33(3)(a)",
                   "Article 33(3)(b)", "Article 33(3)(c)", "Article 33(3)(d)", "Article 33(4)", "Article 33(5)"]
    # And the 72-hour deadline is in Article 33(1); the point (c) text in Article 33(3)(c)
    for phrase, cited in [("not later than 72 hours after having become aware of it", "Article 33(1)"),
                          ("describe the likely consequences of the personal data breach", "Article 33(3)(c)")]:
        at = parsed.text.index(phrase, parsed.text.index("Article 33\n"))
        holder = _chunk_at(chunks, at)
        assert holder.section_of(at - holder.char_start) == cited


def test_bracketed_lines_outside_a_numbered_section_are_not_items() -> None:
    # Given (a)/(b) lines in an unnumbered preamble
    text = "AGREEMENT\n\nThe parties agree:\n\n(a) to cooperate;\n\n(b) to keep records.\n\n1. Definitions\n\nTerms.\n"
    chunks = chunk_document(parse_document("p.txt", text.encode()), "p", target_tokens=20, max_tokens=100)
    # Then they are preamble text, not sections
    assert [s.section_id for c in chunks for s in c.section_spans] == [None, "1"]


def test_a_cross_reference_wrapped_to_a_line_start_is_neither_an_item_nor_a_joint() -> None:
    # Given an item whose sentence wraps at a cross-reference "(b) above"
    text = ("1. Cover\n\nText.\n\n1.1 Frost\n\nWe do not pay for:\n\n"
            "(a) damage caused by frost, and this exclusion applies to claims under paragraph\n"
            "(b) above or to claims notified late; and\n\n"
            "(b) damage caused by wear and tear.\n")
    parsed = parse_document("xref.txt", text.encode())
    # When it is chunked small
    chunks = chunk_document(parsed, "xref", target_tokens=20, max_tokens=200)
    spans = [(sid, parsed.text[a:b]) for sid, a, b in _document_sections(parsed.text, chunks)]
    # Then "(b) above" stays inside item (a), and the real (b) is the next item
    assert [sid for sid, _ in spans] == ["1", "1.1", "1.1(a)", "1.1(b)"]
    assert spans[2][1].endswith("claims under paragraph\n(b) above or to claims notified late; and")
    # And no chunk ends at the wrapped line
    assert not any(c.text.endswith("under paragraph") for c in chunks)


def test_each_definition_may_start_its_own_a_list_and_pdf_brackets_may_hold_spaces() -> None:
    # Given two definitions of one section, each with its own (a)/(b) list, and an item
    # written "(c )" as PDF text extraction leaves it
    text = ("1. Definitions\n\n\u201cHospital\u201d means an establishment that:\n\n(a) is licensed;\n\n(b) has beds.\n\n"
            "\u201cInsured\u201d means:\n\n(a) you;\n\n(b) your partner; and\n\n(c ) your children.\n")
    parsed = parse_document("defs.txt", text.encode())
    # When it is chunked small
    chunks = chunk_document(parsed, "defs", target_tokens=15, max_tokens=200)
    ids = [sid for sid, _, _ in _document_sections(parsed.text, chunks)]
    # Then the second definition's items restart at (a), and "(c )" is item (c)
    assert ids == ["1", "1(a)", "1(b)", "1", "1(a)", "1(b)", "1(c)"]


def test_numbered_titles_on_consecutive_lines_are_a_list_not_headings() -> None:
    # Given section 1 holding a numbered list, and a contents list without page numbers
    text = ("Contents\n1. Scope\n2. Fees\n3. Term\n\n"
            "1. Scope\n\nThe Supplier provides:\n1. Hardware\n2. Software\n3. Support\n"
            "Delivery is due within 30 days.\n\n2. Fees\n\nFees are due monthly.\n\n3. Term\n\nOne year.\n")
    parsed = parse_document("policy2.txt", text.encode())
    # When it is chunked small
    chunks = chunk_document(parsed, "p2", target_tokens=60, max_tokens=200)
    spans = [(s.section_id, parsed.text[s.char_start : s.char_end]) for c in chunks for s in c.section_spans]
    # Then the lists are text of their sections, and the real sections 1-3 are found
    assert [sid for sid, _ in spans] == [None, "1", "2", "3"]
    assert spans[0][1].startswith("Contents\n1. Scope\n2. Fees\n3. Term")
    assert "1. Hardware\n2. Software\n3. Support\nDelivery is due within 30 days." in spans[1][1]


def test_markdown_numbered_headings_set_the_sequence_for_body_numbers() -> None:
    # Given Markdown whose "## 1 Scope" holds a numbered list before "## 2 Fees"
    text = "## 1 Scope\n\nWe provide:\n\n1. Hardware\n2. Software\n3. Support\n\nDelivery is due.\n\n## 2 Fees\n\nMonthly.\n"
    parsed = parse_document("policy.md", text.encode())
    chunks = chunk_document(parsed, "md", target_tokens=60, max_tokens=200)
    # Then the list stays in section 1 and section 2 is the heading
    assert [s.section_id for c in chunks for s in c.section_spans] == ["1", "2"]


def test_an_item_after_a_line_ending_and_or_or_starts_a_new_item() -> None:
    # Given full-width list lines ending "; or" / "; and", one line each (as PDF text comes)
    text = ("1. Definitions\n\nHospital does not include any of the following establishments or institutions:\n"
            "(a) a mental institution or an establishment for the care of people with addictions;\n"
            "(b) a clinic, nursing home, convalescent home or any other establishment for rest; or\n"
            "(c) a home for the aged, a spa or a hydro, or any establishment of that kind; and\n"
            "(d) a place used mainly as a residence for people who need help with daily life.\n")
    parsed = parse_document("defs.txt", text.encode())
    chunks = chunk_document(parsed, "defs", target_tokens=200, max_tokens=400)
    spans = {s.section_id: parsed.text[s.char_start : s.char_end] for c in chunks for s in c.section_spans}
    # Then each marker after "; or" / "; and" opens its own item
    assert spans["1(b)"].endswith("establishment for rest; or")
    assert spans["1(c)"].startswith("(c) a home for the aged") and spans["1(c)"].endswith("of that kind; and")
    assert spans["1(d)"].startswith("(d) a place used mainly as a residence")


def test_an_excerpt_whose_numbering_starts_above_1_still_has_sections() -> None:
    # Given one part of a policy, printed without its "Section 4" header (removed as a
    # running header), whose numbering starts at 4.1
    text = ("Exclusions\n\n4.1 Escape of Water\n\nWe do not pay for leaks.\n\n4.2 Frost\n\nNor frost.\n\n"
            "4.3 Theft\n\nNor theft left unlocked.\n")
    parsed = parse_document("part4.txt", text.encode())
    chunks = chunk_document(parsed, "part4", target_tokens=200, max_tokens=400)
    # Then 4.1-4.3 are sections; and a lone "14 days ..." body line never is
    assert [s.section_id for c in chunks for s in c.section_spans] == [None, "4.1", "4.2", "4.3"]
    trap = parse_document("trap.txt", b"Intro.\n\n14 days after the leak you must tell us.\n\n15 days later we pay.\n")
    assert [s.section_id for c in chunk_document(trap, "t") for s in c.section_spans] == [None]


def test_an_item_marker_glued_to_its_text_is_an_item(parse_corpus) -> None:
    # Given the CUAD cooperation agreement PDF, whose text reads "(c)The limitations ..."
    # with no space after the marker
    parsed = parse_corpus("cuad/urscorpnew-cooperation-agreement.pdf")
    chunks = chunk_document(parsed, "urs")
    # Then section 7's items are found, and the quote resolves to 7(c)
    ids = [sid or "" for sid, _, _ in _document_sections(parsed.text, chunks)]
    assert [i for i in ids if i.startswith("7(") and ")(" not in i] == ["7(a)", "7(b)", "7(c)", "7(d)", "7(e)", "7(f)"]
    at = parsed.text.index("The limitations set forth in Sections 7(a) and 7(b)")
    holder = _chunk_at(chunks, at)
    assert holder.section_of(at - holder.char_start) == "7(c)"


def test_the_chunker_is_its_declared_passes_in_order(parse_corpus) -> None:
    # Given the declared passes
    from longdoc.ingest.chunk import PASSES, SECTION_PASSES, ChunkingState

    # Then they run headings -> sections -> items -> split -> overlap -> assemble
    assert [p.__name__ for p in PASSES] == [
        "find_headings", "cut_sections", "cut_items", "split_sections", "add_overlap", "assemble",
    ]
    assert PASSES[: len(SECTION_PASSES)] == SECTION_PASSES
    # And running them by hand on one state is exactly chunk_document
    parsed = parse_corpus(MPL)
    state = ChunkingState.for_document(parsed, "mpl", target_tokens=300, max_tokens=600, overlap=0.15, metadata=None)
    for chunk_pass in PASSES:
        chunk_pass(state)
    assert state.chunks == chunk_document(parsed, "mpl", target_tokens=300, max_tokens=600, overlap=0.15)


def test_the_section_passes_cut_items_and_flush_text() -> None:
    from longdoc.ingest.chunk import SECTION_PASSES, ChunkingState

    # Given a small text with a preamble, a numbered section holding two items and text after them
    text = ("Agreement preamble.\n\n1. Cover\n\n1.1 Claims\n\nThe insurer pays:\n\n(a) the first loss; and\n\n"
            "(b) the second loss.\n\nText after the last item.\n\n1.2 Exclusions\n\nNothing else.\n")
    state = ChunkingState.for_document(parse_document("cover.txt", text.encode()), "cover", target_tokens=1000,
                                       max_tokens=2000, overlap=0.15, metadata=None)
    # When only the section passes run
    for section_pass in SECTION_PASSES:
        section_pass(state)
    # Then each item is its own paragraph, owned by 1.1, and the text after them is 1.1 again (flush)
    got = [(s.section_id, s.item_of, s.flush, text[s.start : s.end].strip()) for s in state.sections]
    assert got == [
        (None, None, False, "Agreement preamble."),
        ("1", None, False, "1. Cover"),
        ("1.1", None, False, "1.1 Claims\n\nThe insurer pays:"),
        ("1.1(a)", "1.1", False, "(a) the first loss; and"),
        ("1.1(b)", "1.1", False, "(b) the second loss."),
        ("1.1", None, True, "Text after the last item."),
        ("1.2", None, False, "1.2 Exclusions\n\nNothing else."),
    ]
    assert state.sections[3].heading_path == ["1. Cover", "1.1 Claims"]


def test_shared_text_rules_sentences_and_roman_numerals() -> None:
    from longdoc.core.text import roman_to_int, trim_span

    # Abbreviations and initials do not end a sentence; an opening quote starts one
    text = 'See Sec. 4 of the Act. Then J. Smith left!  "Quoted" next. e.g. this stays.'
    assert [text[a:b] for a, b in split_sentences(text)] == [
        "See Sec. 4 of the Act.", "Then J. Smith left!", '"Quoted" next. e.g. this stays.',
    ]
    assert split_sentences("   ") == []
    assert trim_span("  ab  ", 0, 6) == (2, 4)
    assert [roman_to_int(t) for t in ("iv", "XL", "c", "abc", "")] == [4, 40, 100, None, None]


# --- Chunks are cut at section joints, items only cite ---------------------------------------

SECTION_WITH_ITEMS = (
    "1. Cover\n\n1.1 Buildings\n\n" + "We pay for sudden damage to the buildings at the address. " * 5 + "\n\n"
    "1.2 Limits\n\nWe pay at most:\n\n(a) the sum insured for the buildings;\n\n"
    "(b) the cost of rebuilding to the same standard; and\n\n(c) the fees of architects and surveyors.\n\n"
    "1.3 Excess\n\nYou pay the first 100 of every claim.\n"
)


def test_a_sections_items_stay_in_one_chunk_and_still_cite_as_items() -> None:
    # Given 1.1 (about 75 tokens), then 1.2 with its lead-in and (a)-(c) (about 55 tokens)
    parsed = parse_document("limits.txt", SECTION_WITH_ITEMS.encode())
    # When it is chunked with a target that holds 1.1 plus 1.2's first item, but not all of 1.2
    chunks = chunk_document(parsed, "limits", target_tokens=110, max_tokens=220)
    # Then the chunk after 1.1 is cut before 1.2, not between two of its items: 1.2 with all its
    # items is one chunk (1.3 joins it while it fits)
    assert [c.section_id for c in chunks] == ["1", "1.2"]
    assert chunks[1].section_ids == ["1.2", "1.2(a)", "1.2(b)", "1.2(c)", "1.3"]
    # And a quote inside an item still cites the item, one in the lead-in the section
    held = chunks[1]
    assert held.section_of(held.text.index("the cost of rebuilding")) == "1.2(b)"
    assert held.section_of(held.text.index("We pay at most")) == "1.2"


def test_a_long_section_with_items_is_split_at_paragraphs_and_its_parts_cite_items() -> None:
    # Given section 1.1 whose item (a), one paragraph, is several targets long, then item (b) and
    # flush text
    long_item = " ".join("The insurer pays the cost of repair of the damaged part number %d." % i for i in range(24))
    text = (f"1. Cover\n\n1.1 Repairs\n\nWe pay:\n\n(a) {long_item}\n\n(b) the cost of hiring a replacement.\n\n"
            "This applies to every vehicle.\n\n1.2 Theft\n\nWe pay for theft.\n")
    parsed = parse_document("repairs.txt", text.encode())
    # When it is chunked with a target of about a fifth of item (a)
    chunks = chunk_document(parsed, "repairs", target_tokens=100, max_tokens=200)
    ids = [c.section_id for c in chunks]
    # Then 1.1 is split into numbered parts; a part inside (a) alone is cited as (a) with the part's
    # suffix, as a long section's parts are
    assert ids[0] == "1.1#1" and ids[-1] == "1.2"
    assert all(re.fullmatch(r"1\.1(?:\(a\))?#\d+", i) for i in ids[:-1]), ids
    assert [int(i.rsplit("#", 1)[1]) for i in ids[:-1]] == list(range(1, len(ids)))
    assert any(i.startswith("1.1(a)#") for i in ids)
    # And every quote resolves to the item or section it is in, whichever part holds it
    for phrase, cited in (("damaged part number 3.", "1.1(a)"), ("damaged part number 17.", "1.1(a)"),
                          ("hiring a replacement", "1.1(b)"), ("every vehicle", "1.1")):
        at = parsed.text.index(phrase)
        holder = _chunk_at(chunks, at)
        assert PART_SUFFIX.sub("", holder.section_of(at - holder.char_start) or "") == cited, phrase
    # And continuations still open with an overlap of the part before
    assert all(c.overlap_chars > 0 for c in chunks[1:-1])
