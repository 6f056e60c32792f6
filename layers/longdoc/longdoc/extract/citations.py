"""Citation checks the harness runs before anything reaches the results.

A citation is kept only when its ``chunk_id`` belongs to the document version and its
``quote`` occurs in that chunk's text with whitespace, ligatures, soft hyphens and line-wrap
hyphens normalised (:mod:`longdoc.search.quotes`; nothing else is), and it is at most a few
sentences; its page and section are then resolved from the quote's own position
(:func:`longdoc.core.models.locate`), so a quote on page 14 of a chunk spanning pages 13-14 is
cited as page 14.
"""

from __future__ import annotations

from longdoc.core.errors import CitationError
from longdoc.core.models import locate, page_at
from longdoc.core.models import Chunk
from longdoc.core.records import Citation
from longdoc.core.polarity import polarity_problem
from longdoc.core.quantities import bare_quantities, describe, find_quantity, find_value
from longdoc.core.support import STOPWORDS as _STOPWORDS
from longdoc.core.support import SUPPORT_MIN_SHARE, SUPPORT_STEM_CHARS
from longdoc.core.support import TOKEN as _TOKEN
from longdoc.core.values import exact_values
from longdoc.search.quotes import find_quotes, quote_problem

def quote_span(citation: Citation, chunk: Chunk) -> tuple[int, int] | None:
    """Where ``citation.quote`` is in ``chunk.text``: ``(start, end)`` character offsets, or None.

    When the quote occurs more than once in the chunk (a sentence repeated in two articles),
    the occurrence on the page the citation names wins, else the first.
    """
    found = find_quotes(chunk.text, citation.quote)
    if not found:
        return None
    return next((f for f in found if citation.page is not None and page_at(chunk, f[0]) == citation.page), found[0])


def verify_citation(citation: Citation, chunks: dict[str, Chunk]) -> Citation:
    """Check one citation and return it with its page, page label and section resolved.

    ``chunks`` maps chunk_id to the document version's chunks. The returned citation's
    ``page``, ``page_label`` and ``section_id`` come from the quote's first character
    (:func:`longdoc.core.models.locate`), whatever the model claimed; ``quote`` is the chunk's own
    text of it. When the quote occurs more than once in the chunk (a sentence repeated in
    two articles), the occurrence on the page the model cited wins, else the first.
    Raises :class:`CitationError` when the chunk is unknown, the quote is longer than a few
    sentences (:func:`~longdoc.search.quotes.quote_problem`: 600 characters, 4 sentences) or not
    verbatim in it (whitespace, ligatures, soft and line-wrap hyphens aside:
    :func:`~longdoc.search.quotes.find_quotes`).
    """
    chunk = chunks.get(citation.chunk_id)
    if chunk is None:
        raise CitationError(f"chunk_id {citation.chunk_id!r} is not a chunk of this document")
    too_long = quote_problem(citation.quote)
    if too_long:
        raise CitationError(too_long)
    span = quote_span(citation, chunk)
    if span is None:
        raise CitationError(
            f"quote not found verbatim in chunk {citation.chunk_id}: {citation.quote[:80]!r}"
        )
    start, end = span
    where = locate(chunk, start)
    return Citation(chunk_id=chunk.chunk_id, page=where.page, section_id=where.section_id,
                    quote=chunk.text[start:end], page_label=where.page_label, heading_path=where.heading_path)


def check_clause_support(clause_text: str, quotes: list[str]) -> None:
    """Check that ``clause_text`` is supported by the verified ``quotes``; raise :class:`CitationError` if not.

    The rule (ours; the model is told it in the system prompt):

    * every number of ``clause_text`` must occur in a quote with what it counts
      (:mod:`longdoc.core.quantities`, the summaries' rule): an amount, date or percentage as
      the same value (currency and number; whitespace and thousands separators aside, a
      rounding refused), any other number with its noun or unit (``4 subcontractors`` is not
      supported by ``three subcontractors ... Schedule 4``),
    * negations, exceptions and modal verbs (:data:`longdoc.core.polarity.POLARITY_WORDS`) are content: one in
      ``clause_text`` must occur in a quote, and one in a quote must not be cut out of the
      words around it (``is not permitted`` -> ``is permitted`` is rejected; see
      :func:`_check_polarity`), and
    * at least :data:`SUPPORT_MIN_SHARE` of its content words (stop words removed,
      compared case-insensitively by their first :data:`SUPPORT_STEM_CHARS` characters)
      must occur in the quotes.

    This accepts a trimmed or lightly reworded clause_text and rejects one that says
    something the quotes do not (a different number, or mostly other words).
    """
    quote_tokens = {t.lower() for q in quotes for t in _TOKEN.findall(q)}
    quote_stems = {t[:SUPPORT_STEM_CHARS] for t in quote_tokens}
    tokens = [t.lower() for t in _TOKEN.findall(clause_text)]
    missing_numbers = [v for v in exact_values(clause_text) if all(find_value(v, q) is None for q in quotes)]
    missing_numbers += [describe(n) for n in bare_quantities(clause_text)
                        if all(find_quantity(n, q) is None for q in quotes)]
    if missing_numbers:
        raise CitationError(
            f"clause_text has values not in any quote: {', '.join(missing_numbers[:5])}; quote the text that states them"
        )
    words = [t for t in tokens if t not in _STOPWORDS and not any(ch.isdigit() for ch in t)]
    if not words:
        return
    supported = sum(1 for w in words if w[:SUPPORT_STEM_CHARS] in quote_stems)
    if supported / len(words) < SUPPORT_MIN_SHARE:
        unsupported = [w for w in words if w[:SUPPORT_STEM_CHARS] not in quote_stems]
        raise CitationError(
            f"clause_text is not supported by the quotes ({supported} of {len(words)} content words found; "
            f"missing e.g. {', '.join(unsupported[:5])}); use the document's words or quote more"
        )
    _check_polarity(clause_text, quotes)


def _check_polarity(clause_text: str, quotes: list[str]) -> None:
    """Raise :class:`CitationError` when clause_text adds or drops a negation, exception or modal
    verb (the shared rule, :func:`longdoc.core.polarity.polarity_problem`)."""
    problem = polarity_problem(clause_text, quotes, "clause_text")
    if problem:
        raise CitationError(problem)
