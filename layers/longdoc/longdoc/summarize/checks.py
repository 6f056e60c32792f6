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

A statement that fails is sent back to the model once with the reason; what still fails is
dropped and reported (:class:`~longdoc.summarize.models.Dropped`).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable

from longdoc.core.errors import StatementError
from longdoc.core.polarity import polarity_problem
from longdoc.core.quantities import bare_quantities, describe, find_quantity, find_value
from longdoc.core.values import exact_values
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


def _citation(index: SectionIndex, cited: str, pieces: list[Piece], at: tuple[Piece, int] | None,
              text: str) -> SectionCitation:
    """The citation of ``cited``: where its first value was found, else where the statement itself is."""
    if at is None:
        found = find_quote(pieces[0].text, text.removesuffix(" …"))
        at = (pieces[0], found[0] if found else 0)
    piece, offset = at
    chunk = index.chunks[piece.chunk_id]
    start = piece.offset + offset
    return SectionCitation(section_id=cited, page=chunk.page_of(start), page_label=chunk.label_of(start),
                           chunk_id=chunk.chunk_id, heading_path=chunk.heading_path_of(start))


def _pin_numbers(text: str, resolved: list[str], pieces: list[tuple[str, Piece]]) -> dict[str, tuple[Piece, int]]:
    """Check the statement's exact values and counted numbers against the cited pieces (module
    docstring, rule 2); return where each cited section's first one was found. Raises
    :class:`StatementError` naming the first value or number not found with its unit."""
    first: dict[str, tuple[Piece, int]] = {}
    where = ", ".join(resolved)
    for value in exact_values(text):
        hit = next(((c, p, at) for c, p in pieces if (at := find_value(value, p.text)) is not None), None)
        if hit is None:
            raise StatementError(f"{value!r} does not appear verbatim in the cited section(s) {where} (the same "
                                 "currency and number, separators aside); copy values exactly as the section states "
                                 "them, or cite the section that does")
        first.setdefault(hit[0], (hit[1], hit[2]))
    ids = {r.split("#")[0] for r in resolved} | {r.split("#")[0].split(" ")[-1] for r in resolved}
    for quantity in bare_quantities(text):
        if quantity.before in _CITING_WORDS and (quantity.raw in ids or any(i.startswith(quantity.raw + ".") for i in ids)):
            continue  # "under Section 4.2" citing 4.2
        hit = next(((c, p, at) for c, p in pieces if (at := find_quantity(quantity, p.text)) is not None), None)
        if hit is None:
            raise StatementError(f"{quantity.raw!r} does not appear verbatim with what it counts ({describe(quantity)!r}) "
                                 f"in the cited section(s) {where}; state the number the section gives for it, or "
                                 "cite the section that does")
        first.setdefault(hit[0], (hit[1], hit[2]))
    return first


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
    first = _pin_numbers(text, resolved, pieces)
    for needle in must_be_verbatim(text, terms):
        if any(ch.isdigit() for ch in needle):
            continue  # values and numbers: checked above with their units
        hit = next(((c, p, at) for c, p in pieces if (at := _found(needle, p)) is not None), None)
        if hit is None:
            raise StatementError(f"{needle!r} does not appear verbatim in the cited section(s) {where}; "
                                 "copy terms exactly as the section states them, or cite the section that does")
        first.setdefault(hit[0], (hit[1], hit[2]))
    problem = polarity_problem(text, [p.text for _, p in pieces], "the statement")
    if problem:
        raise StatementError(f"{problem} (cited: {where})")
    return [_citation(index, c, covered[c], first.get(c), text) for c in resolved if covered[c]]
