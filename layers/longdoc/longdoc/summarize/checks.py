"""The harness checks every statement passes before it is stored as verified.

1. It cites at least one section, and every section it cites was given to the call that
   wrote it (a citation id is matched as given, then without a ``Section``/``Article``/``§``
   prefix or a ``#n`` part suffix).
2. Every amount, date and percentage in it occurs in a cited section as the same value
   (currency and number; whitespace and thousands separators aside, a rounding refused), and
   every other number with what it counts or names (``4 subcontractors``, ``30 days``,
   ``Schedule 4``): :mod:`longdoc.core.quantities`. A ``Section``/``Clause``/... number that is
   one of the cited ids needs no more. Quoted terms and known defined terms appear verbatim
   (whitespace aside).
3. It keeps the polarity of the cited sections: no negation, exception or modal verb added
   or cut out (:func:`longdoc.core.polarity.polarity_problem`, extraction's rule).

Its citations' pages come from the cited text that supports it, not from where its first
number happens to occur: the span it copies, else the sentences stating its values, numbers
and terms, completed by the sentences carrying its words (:func:`_support`); every page that
text is on is cited (:attr:`~longdoc.summarize.models.SectionCitation.pages`).

A statement that fails is sent back to the model once with the reason; what still fails is
dropped and reported (:class:`~longdoc.summarize.models.Dropped`).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable
from dataclasses import dataclass

from longdoc.core.errors import StatementError
from longdoc.core.models import Chunk
from longdoc.core.polarity import polarity_problem
from longdoc.core.quantities import Quantity, bare_quantities, describe, find_quantity, find_value
from longdoc.core.text import split_sentences
from longdoc.core.values import exact_values
from longdoc.core.support import SUPPORT_MIN_SHARE, content_stems
from longdoc.search.quotes import find_quote
from longdoc.summarize.models import SectionCitation
from longdoc.summarize.units import Piece, SectionIndex

_TOKEN = re.compile(r"[^\W_]+(?:[.,/:-][^\W_]+)*", re.UNICODE)
_QUOTED = re.compile(r"[“\"]([^”\"\n]{2,80})[”\"]")
_CITING_WORDS = frozenset({"section", "sections", "clause", "clauses", "article", "articles", "part", "schedule",
                           "annex", "exhibit", "appendix", "paragraph", "§"})
_PREFIX = re.compile(r"^(?:section|sec\.|article|art\.|clause|§)\s*", re.IGNORECASE)


def resolve_cite(raw: str, given: Collection[str]) -> str | None:
    """The given section id a model's citation means, or None (tries the id as written, then common variants)."""
    cite = " ".join(str(raw).split()).strip(" []")
    candidates = [cite, cite.split("#")[0]]
    bare = _PREFIX.sub("", cite)
    candidates += [bare, f"Section {bare}", f"Article {bare}"]
    return next((c for c in candidates if c in given), None)


def must_be_verbatim(text: str, terms: Iterable[str] = ()) -> list[str]:
    """What in a statement must occur verbatim in a cited section: values, numbers, quoted and known terms."""
    values = exact_values(text)
    rest = text
    for value in values:
        rest = rest.replace(value, " ")
    numbers = [t for t in _TOKEN.findall(rest) if any(ch.isdigit() for ch in t)]
    quoted = [m.group(1).strip() for m in _QUOTED.finditer(text)]
    known = [t for t in terms if len(t) > 2 and re.search(rf"(?<!\w){re.escape(t)}(?!\w)", text, re.IGNORECASE)]
    return list(dict.fromkeys(values + numbers + quoted + known))


def _found(needle: str, piece: Piece) -> int | None:
    """Offset in ``piece.text`` where ``needle`` occurs (numbers as whole tokens, terms case-insensitively)."""
    if needle.replace(",", "").replace(".", "").isdigit() or _TOKEN.fullmatch(needle) and any(c.isdigit() for c in needle):
        for m in _TOKEN.finditer(piece.text):
            if m.group(0).rstrip(".,") == needle.rstrip(".,"):
                return m.start()
        return None
    at = find_quote(piece.text, needle)
    if at is None and not any(ch.isdigit() for ch in needle):
        at = find_quote(piece.text.lower(), needle.lower())
    return at[0] if at else None


def _words(text: str) -> set[str]:
    return {w.lower()[:6] for w in _TOKEN.findall(text) if len(w) > 3}


@dataclass(frozen=True)
class _Sentence:
    """One sentence of a cited piece: ``piece.text[start:end]``, cited as section ``cited``."""

    cited: str
    piece: Piece
    start: int
    end: int
    stems: frozenset[str]

    @property
    def text(self) -> str:
        return self.piece.text[self.start:self.end]


def _sentences(pieces: list[tuple[str, Piece]]) -> list[_Sentence]:
    """Every sentence of the cited pieces, in the pieces' (preference) order."""
    return [_Sentence(c, p, a, b, frozenset(content_stems(p.text[a:b]))) for c, p in pieces
            for a, b in split_sentences(p.text)]


class _Term(str):
    """A verbatim term of a statement (quoted, defined or a party), told apart from an exact value."""


def _holds(needle: str | Quantity, sentence: _Sentence) -> bool:
    """True when the sentence states ``needle`` (an exact value, a counted number or a verbatim
    term) as the checks read it."""
    if isinstance(needle, Quantity):
        return find_quantity(needle, sentence.text) is not None
    if isinstance(needle, _Term):
        return _found(needle, Piece(sentence.cited, sentence.piece.chunk_id, 0, sentence.text, None, None, None,
                                    ())) is not None
    return find_value(needle, sentence.text) is not None


def _support(text: str, pieces: list[tuple[str, Piece]], needles: list[str | Quantity]) -> list[_Sentence]:
    """The cited text that supports the statement: where its citation pages come from.

    A statement copied from the text (a quote, the offline baseline's sentences) is supported
    by that very span. Otherwise the support is built from whole sentences of the cited pieces:
    for each value, number and verbatim term of the statement, the sentence stating it that
    shares most content words with the statement (a number repeated in a table elsewhere does
    not move the citation); then, while the chosen sentences carry less than
    :data:`~longdoc.core.support.SUPPORT_MIN_SHARE` of the statement's content words (the
    share extraction asks of a clause's quotes), the sentence adding most of the missing ones.
    Ties go to the earlier sentence in ``pieces`` order (the call's own chunks first). Empty
    when no sentence shares anything with the statement.
    """
    bare = text.removesuffix(" …").strip()
    for cited, piece in pieces:
        found = find_quote(piece.text, bare)
        if found:
            return [_Sentence(cited, piece, found[0], found[1], frozenset())]
    sentences = _sentences(pieces)
    wanted = content_stems(text)
    chosen: list[_Sentence] = []
    for needle in needles:
        holding = [s for s in sentences if _holds(needle, s)]
        if holding and not any(s in chosen for s in holding):
            chosen.append(max(holding, key=lambda s: len(s.stems & wanted)))  # max keeps the first of equals
    covered = set().union(*(s.stems for s in chosen)) & wanted
    while wanted and len(covered) < SUPPORT_MIN_SHARE * len(wanted):
        best = max(sentences, key=lambda s: len((s.stems & wanted) - covered), default=None)
        if best is None or not (best.stems & wanted) - covered:
            break
        chosen.append(best)
        covered |= best.stems & wanted
    return chosen


def _pages(chunk: Chunk, start: int, end: int) -> list[int]:
    """The pages chunk-relative ``chunk.text[start:end]`` is on, in order (empty for a format without pages)."""
    lo, hi = chunk.char_start + start, chunk.char_start + max(start + 1, end)
    pages = [s.page for s in chunk.page_spans if s.page is not None and s.char_start < hi and s.char_end > lo]
    if not pages:
        page = chunk.page_of(start)
        return [page] if page is not None else []
    return list(dict.fromkeys(pages))


def _citation(index: SectionIndex, cited: str, support: list[_Sentence], fallback: Piece,
              text: str) -> SectionCitation:
    """The citation of ``cited``: the pages of its supporting sentences (every page they are on: a
    statement assembled across a page break cites both), the chunk, label and headings of the first
    of them in document order; without support, where the statement's text starts in ``fallback``
    (else that piece's start)."""
    if not support:
        found = find_quote(fallback.text, text.removesuffix(" …"))
        at = found[0] if found else 0
        support = [_Sentence(cited, fallback, at, at + 1, frozenset())]
    ordered = sorted(support, key=lambda s: (index.chunks[s.piece.chunk_id].ordinal, s.piece.offset + s.start))
    pages: list[int] = []
    for s in ordered:
        chunk = index.chunks[s.piece.chunk_id]
        pages += [p for p in _pages(chunk, s.piece.offset + s.start, s.piece.offset + s.end) if p not in pages]
    first = ordered[0]
    chunk = index.chunks[first.piece.chunk_id]
    start = first.piece.offset + first.start
    pages.sort()
    return SectionCitation(section_id=cited, page=pages[0] if pages else None, pages=pages,
                           page_label=chunk.label_of(start), chunk_id=chunk.chunk_id,
                           heading_path=chunk.heading_path_of(start))


def _pin_numbers(text: str, resolved: list[str], pieces: list[tuple[str, Piece]]) -> list[str | Quantity]:
    """Check the statement's exact values and counted numbers against the cited pieces (module
    docstring, rule 2); return the values and quantities checked (what its support must state).
    Raises :class:`StatementError` naming the first value or number not found with its unit."""
    checked: list[str | Quantity] = []
    where = ", ".join(resolved)
    for value in exact_values(text):
        if not any(find_value(value, p.text) is not None for _, p in pieces):
            raise StatementError(f"{value!r} does not appear verbatim in the cited section(s) {where} (the same "
                                 "currency and number, separators aside); copy values exactly as the section states "
                                 "them, or cite the section that does")
        checked.append(value)
    ids = {r.split("#")[0] for r in resolved} | {r.split("#")[0].split(" ")[-1] for r in resolved}
    for quantity in bare_quantities(text):
        if quantity.before in _CITING_WORDS and (quantity.raw in ids or any(i.startswith(quantity.raw + ".") for i in ids)):
            continue  # "under Section 4.2" citing 4.2
        if not any(find_quantity(quantity, p.text) is not None for _, p in pieces):
            raise StatementError(f"{quantity.raw!r} does not appear verbatim with what it counts ({describe(quantity)!r}) "
                                 f"in the cited section(s) {where}; state the number the section gives for it, or "
                                 "cite the section that does")
        checked.append(quantity)
    return checked


def _resolved(sections: list[str], given: Collection[str]) -> list[str]:
    """The given ids the cited ``sections`` mean, each once; :class:`StatementError` for one not given."""
    resolved: list[str] = []
    for raw in sections:
        cite = resolve_cite(raw, given)
        if cite is None:
            raise StatementError(f"it cites section {raw!r}, which this call was not given")
        if cite not in resolved:
            resolved.append(cite)
    return resolved


def check_statement(text: str, sections: list[str], given: Collection[str], index: SectionIndex,
                    terms: Iterable[str] = (), prefer_chunks: Collection[str] = ()) -> list[SectionCitation]:
    """Check one statement (see the module docstring); return its citations with pages resolved.

    ``sections`` are the ids the model cited, ``given`` the ids the call was given,
    ``terms`` the document's known defined terms and parties, ``prefer_chunks`` the chunks
    of the call (their pieces are searched first, for the page). Raises
    :class:`StatementError` with the reason.
    """
    if not text.strip():
        raise StatementError("the statement is empty")
    if not sections:
        raise StatementError("the statement cites no section; cite at least one section id from the headers")
    resolved = _resolved(sections, given)
    words = _words(text)
    # A section id can repeat (a schedule's "Section 3" and the benefit's): the call's own chunks
    # first, then the piece sharing most words with the statement.
    covered = {c: sorted(index.covered(c), key=lambda p: (p.chunk_id not in prefer_chunks,
                                                          -len(words & _words(p.text))))
               for c in resolved}
    if not any(covered.values()):
        raise StatementError(f"the cited sections {', '.join(resolved)} have no text")
    pieces = [(c, p) for c in resolved for p in covered[c]]
    where = ", ".join(resolved)
    needles = _pin_numbers(text, resolved, pieces)
    for needle in must_be_verbatim(text, terms):
        if any(ch.isdigit() for ch in needle):
            continue  # values and numbers: checked above with their units
        if not any(_found(needle, p) is not None for _, p in pieces):
            raise StatementError(f"{needle!r} does not appear verbatim in the cited section(s) {where}; "
                                 "copy terms exactly as the section states them, or cite the section that does")
        needles.append(_Term(needle))
    problem = polarity_problem(text, [p.text for _, p in pieces], "the statement")
    if problem:
        raise StatementError(f"{problem} (cited: {where})")
    support = _support(text, pieces, needles)
    return [_citation(index, c, [s for s in support if s.cited == c], covered[c][0], text)
            for c in resolved if covered[c]]
