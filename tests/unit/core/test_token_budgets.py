"""Token budgets are sized with the wired TokenCounter (the counting endpoint with a key), not only
with the offline estimate: summary map groups and triage clause sizes (issue 25, item 4)."""

from __future__ import annotations

from longdoc.core.models import Chunk
from longdoc.core.tokens import document_measure, estimate_tokens
from longdoc.summarize.units import chunk_tokens, group_chunks
from longdoc.triage.clauses import clauses_of


def _chunk(ordinal: int, text: str, section: str) -> Chunk:
    return Chunk(chunk_id=f"doc:abcdef12:{ordinal:04d}", doc_id="doc", doc_version="abcdef12" * 2, ordinal=ordinal,
                 source="doc.pdf", page_start=ordinal + 1, page_end=ordinal + 1, section_id=section,
                 heading_path=[f"Section {section}"], text=text, char_start=0, char_end=len(text),
                 token_count=estimate_tokens(text), content_hash=f"h{ordinal}")


class _Doubling:
    """A counter that says every text is twice the estimate (as a tokenizer with ~30% more tokens would drift)."""

    def __init__(self) -> None:
        self.texts: list[str] = []

    def count_text(self, text: str) -> int:
        self.texts.append(text)
        return 2 * estimate_tokens(text)


_TEXT = "The insurer shall pay the reasonable cost of emergency dental treatment up to $500. " * 12


def test_summary_groups_are_sized_with_the_counter() -> None:
    # Given six chunks of about 200 estimated tokens and a counter measuring twice that
    chunks = [_chunk(i, _TEXT, "1") for i in range(6)]
    counter = _Doubling()
    # When they are grouped for the map step with a ceiling of four estimated chunks
    by_estimate = group_chunks(chunks, 100, 1100)
    by_count = group_chunks(chunks, 100, 1100, counter.count_text)
    # Then the counted sizes (twice the estimate) make smaller groups, and every piece was measured
    assert chunk_tokens(chunks[0], counter.count_text) > chunk_tokens(chunks[0])
    assert [len(g) for g in by_estimate] == [4, 2]
    assert [len(g) for g in by_count] == [2, 2, 2]
    assert sum(len(g) for g in by_count) == 6
    assert counter.texts


def test_triage_clause_sizes_come_from_the_counter() -> None:
    # Given one wording chunk with two numbered clauses
    text = ("1. We will pay for sudden and accidental direct physical loss to the dwelling caused by water. "
            "2. We will not pay for loss caused by wear and tear, rust or gradual deterioration.")
    chunks = [_chunk(0, text, "1")]
    counter = _Doubling()
    # When its clauses are sized with the estimate and with the counter
    estimated = clauses_of(chunks)
    counted = clauses_of(chunks, count=counter.count_text)
    # Then each clause's size is the counter's figure, twice the estimate
    assert [c.clause_id for c in counted] == [c.clause_id for c in estimated]
    assert [c.tokens for c in counted] == [2 * c.tokens for c in estimated]


def test_a_document_is_counted_in_one_call_and_its_texts_scaled() -> None:
    # Given a counter that says every text is twice the estimate, and a document of three texts
    counter = _Doubling()
    texts = ["Section 1. The supplier shall deliver the goods.", "Section 2. Payment is due in 30 days.",
             "Section 3. This agreement is governed by the laws of Delaware."]
    # When a measure is made for the document and each text is measured
    measure = document_measure(counter, texts)
    sizes = [measure(t) for t in texts]
    # Then the counter was asked once (the whole document), and each size is the estimate scaled
    # by counted / estimated of that document, rounded up
    assert counter.texts == ["\n\n".join(texts)]
    joined = 2 * estimate_tokens("\n\n".join(texts))
    estimated = sum(estimate_tokens(t) for t in texts)
    assert sizes == [-(-estimate_tokens(t) * joined // estimated) for t in texts]
    assert all(size > estimate_tokens(t) for size, t in zip(sizes, texts, strict=True))


def test_without_a_counter_the_measure_is_the_offline_estimate_itself() -> None:
    # Given no counter (offline mode) / When a measure is made / Then it is estimate_tokens, unchanged
    assert document_measure(None, ["any text"]) is estimate_tokens
