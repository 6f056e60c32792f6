"""Retrieval building blocks: scoring conventions, BM25, RRF, filters, budget assembly, strata."""

from __future__ import annotations

import random

import pytest

from longdoc.extract.retrieve import PASSAGE_WEIGHT, NoRerank, Retriever, assemble, budget_from_cost, passages
from longdoc.search.bm25 import BM25, bm25_terms, bm25_tokens
from longdoc.search.fusion import rrf
from longdoc.eval.retrieval import naive_chunks
from longdoc.eval.scoring import Haystack, contains, lcs_dp, lcs_length, masks, normalise, overlaps, position, words
from longdoc.core.models import Chunk, SectionSpan


def chunk(ordinal: int, text: str, *, term: str | None = None, lob: str | None = None, tokens: int | None = None) -> Chunk:
    body = text if tokens is None else ("word " * (tokens * 4 // 5))[: tokens * 4 - 60]
    return Chunk(chunk_id=f"doc:v1:{ordinal:04d}", doc_id="doc", doc_version="v1", ordinal=ordinal, source="d.pdf",
                 page_start=1, page_end=1, section_id=None, text=body, char_start=0, char_end=len(body),
                 token_count=len(body) // 4, content_hash="h", term=term, line_of_business=lob)


# --- scoring conventions -------------------------------------------------------------------------

def test_normalise_applies_nfkc_lowercase_and_collapses_whitespace():
    # Given text with a full-width letter, a ligature, a no-break space and line breaks
    text = "  Ｆee\u00a0 payable\n\n  within ﬁve\tdays "
    # When normalised
    # Then NFKC folds the compatibility characters, case is lowered, whitespace is one space
    assert normalise(text) == "fee payable within five days"


def test_snippet_found_with_80_percent_of_its_words_in_order():
    # Given a 10-word snippet and a text holding 8 of its words in order, with other words between
    snippet = "the licensee shall pay all fees within thirty days of invoice"
    text = "Preamble. THE licensee\nshall promptly pay the fees within thirty (30) days after invoice."
    # When the in-order overlap is counted (bit-parallel LCS), it agrees with the DP reference
    needle = words(snippet)
    got = lcs_length(needle, masks(words(text)), len(words(text)))
    assert got == lcs_dp(needle, words(text))
    assert contains(text, snippet) is (got >= 0.8 * len(needle))


def test_80_percent_rule_counts_order_not_just_presence():
    # Given a text with every snippet word, but in reverse order
    snippet = "alpha beta gamma delta epsilon"
    reversed_text = "epsilon delta gamma beta alpha"
    # Then it is not contained (only 1 of 5 in order); the same words in order are
    assert not contains(reversed_text, snippet)
    assert contains("x alpha y beta gamma z delta epsilon", snippet)
    # And exactly 4 of 5 (80%) is enough, 3 of 5 is not
    assert contains("alpha beta gamma delta", snippet)
    assert not contains("alpha beta gamma", snippet)


def test_overlaps_applies_the_rule_in_either_direction():
    gold = "This Agreement shall be governed by the laws of the State of New York."
    assert overlaps("governed by the laws of the State of New York", gold)  # gold contains quote
    assert overlaps(gold + " Each party submits to the courts.", gold)  # quote contains gold
    assert not overlaps("The term is five years.", gold)


def test_bit_parallel_lcs_matches_dynamic_programming_on_random_sequences():
    rng = random.Random(7)
    for _ in range(200):
        a = [rng.choice("abcde") for _ in range(rng.randint(0, 15))]
        b = [rng.choice("abcde") for _ in range(rng.randint(0, 40))]
        assert lcs_length(a, masks(b), len(b)) == lcs_dp(a, b)


def test_haystack_tests_the_concatenation_of_chunks_in_the_order_given():
    # Given a snippet split across two chunks
    hay = Haystack()
    hay.add("a", "recitals. the supplier shall indemnify")
    hay.add("b", "the customer against all claims. schedule 1")
    needle = words("the supplier shall indemnify the customer against all claims")
    # Then neither chunk alone holds it, both in document order do, reversed order does not
    assert not hay.contains(["a"], needle) and not hay.contains(["b"], needle)
    assert hay.contains(["a", "b"], needle)
    assert not hay.contains(["b", "a"], needle)


@pytest.mark.parametrize(("offset", "expected"), [(0, "front"), (40, "middle"), (80, "back")])
def test_position_is_the_third_of_the_document_where_the_snippet_starts(offset, expected):
    # Given a 100-character document with a marker phrase at a known offset
    doc = list("x" * 100)
    doc[offset:offset + 12] = list(" find me now")
    text = "".join(doc)
    # Then the snippet's third is reported; a missing snippet has no position
    assert position(text, "Find  me\nnow") == expected
    assert position(text, "absent words entirely") is None


def test_naive_chunks_are_fixed_1000_character_pieces():
    pieces = naive_chunks("a" * 2500)
    assert [len(p) for p in pieces] == [1000, 1000, 500]


# --- BM25 and RRF --------------------------------------------------------------------------------

def test_bm25_ranks_the_chunk_with_rarer_query_terms_first():
    docs = [bm25_tokens(t) for t in (
        "the parties agree to the terms of payment",
        "this agreement is governed by the laws of delaware",
        "payment terms: invoices are payable in thirty days",
    )]
    ranked = BM25(docs).rank(bm25_tokens("governing law delaware"))
    assert ranked[0][0] == 1
    assert all(i != 0 for i, _ in ranked)  # no shared term, no score


def test_bm25_terms_are_words_then_in_order_pairs_that_never_cross_punctuation():
    # Given a clause whose phrases are separated by a comma and a semicolon, with stopwords and a line wrap
    text = "Right, title and interest; minimum\nPurchase Orders"
    # When its BM25 terms are taken
    terms = bm25_terms(text)
    # Then the words come first (stopwords dropped, plural s cut), then one pair per adjacent
    # word pair inside each phrase: none spans ", " or "; ", but one spans the line wrap
    assert terms == ["right", "title", "interest", "minimum", "purchase", "order",
                     "title interest", "minimum purchase", "purchase order"]


def test_bm25_with_word_pairs_ranks_the_in_order_phrase_above_scattered_words():
    # Given two chunks with the query's two words once each: the first has them as the phrase
    # "minimum purchase" but is the longer; the second has them far apart
    texts = ("Each year the Distributor shall make a minimum purchase of the Products listed in Schedule A "
             "at the prices then in force, by written order to the Supplier.",
             "The purchase price is in Schedule B. The minimum term is one year.")
    query = "minimum purchase"
    # When ranked by words alone, then by words and pairs
    by_words = BM25([bm25_tokens(t) for t in texts]).rank(bm25_tokens(query))
    by_terms = BM25([bm25_terms(t) for t in texts]).rank(bm25_terms(query))
    # Then words alone prefer the short chunk (length normalisation), pairs the phrase
    assert [i for i, _ in by_words] == [1, 0]
    assert [i for i, _ in by_terms] == [0, 1]


def test_rrf_fuses_by_reciprocal_rank_with_k_60():
    fused = rrf([["a", "b", "c"], ["c", "a"]])
    scores = dict(fused)
    assert [i for i, _ in fused] == ["a", "c", "b"]
    assert scores["a"] == pytest.approx(1 / 61 + 1 / 62)
    assert scores["c"] == pytest.approx(1 / 63 + 1 / 61)
    assert scores["b"] == pytest.approx(1 / 62)
    with pytest.raises(ValueError):
        rrf([["a"]], k=0)


class ListIndex:
    """A VectorIndex fake answering from a fixed similarity order (ids best first)."""

    def __init__(self, order: list[str]):
        self.order = order
        self.calls: list[tuple[str, str, int]] = []

    def query(self, vector, doc_id, doc_version, top_k):
        self.calls.append((doc_id, doc_version, top_k))
        return [(cid, 1.0 - i / 100) for i, cid in enumerate(self.order[:top_k])]


def test_hybrid_retriever_filters_by_term_and_line_of_business_before_ranking():
    # Given motor and household wording of two terms
    chunks = [chunk(0, "motor excess 2024 wording", term="2024", lob="motor"),
              chunk(1, "motor excess 2025 wording", term="2025", lob="motor"),
              chunk(2, "household excess 2025 wording", term="2025", lob="household")]
    index = ListIndex([c.chunk_id for c in reversed(chunks)])
    # When ranking for a motor claim in the 2025 term
    got = Retriever(chunks, index, mode="hybrid", term="2025", line_of_business="Motor").rank("excess", [1.0])
    # Then only the motor 2025 chunk is ranked
    assert [c.ordinal for c in got] == [1]
    assert index.calls == [("doc", "v1", 3)]


def test_hybrid_rank_fuses_dense_and_bm25_and_keeps_every_chunk():
    chunks = [chunk(0, "recitals and definitions"), chunk(1, "governing law: new york"), chunk(2, "fees and payment")]
    index = ListIndex(["doc:v1:0002", "doc:v1:0001", "doc:v1:0000"])
    dense = Retriever(chunks, index, mode="dense").rank("governing law", [1.0])
    hybrid = Retriever(chunks, index, mode="hybrid").rank("governing law", [1.0])
    bm25 = Retriever(chunks, None, mode="bm25").rank("governing law")
    assert [c.ordinal for c in dense] == [2, 1, 0]
    assert [c.ordinal for c in bm25] == [1, 0, 2]  # unscored chunks follow in document order
    assert hybrid[0].ordinal == 1 and len(hybrid) == 3
    assert NoRerank().rerank("q", hybrid, 2) == hybrid[:2]
    with pytest.raises(ValueError):
        Retriever(chunks, None, mode="dense")


def spanned(ordinal: int, spans: list[tuple[str, str]]) -> Chunk:
    """A chunk whose text is ``spans`` (section id, text) joined by blank lines, one section span each."""
    text, bounds, pos = "", [], 0
    for sid, body in spans:
        bounds.append(SectionSpan(section_id=sid, char_start=pos, char_end=pos + len(body)))
        text += body + "\n\n"
        pos += len(body) + 2
    return chunk(ordinal, text.rstrip()).model_copy(update={"section_spans": bounds, "char_end": len(text.rstrip())})


def test_best_passage_ranking_finds_the_matching_item_inside_a_long_chunk():
    # Given a long licence chunk whose item (c) is the non-transferable clause, among items on
    # other matters, a short chunk that only repeats "licence" and "transfer" in passing, and
    # four short notice chunks (so the long chunk is long against the average)
    filler = " ".join(f"The licensee shall keep record {i} of each delivery and invoice." for i in range(40))
    long = spanned(0, [("2.1", "2.1 Grant of licence. The licensor grants:"), ("2.1(a)", f"(a) {filler}"),
                       ("2.1(b)", f"(b) {filler}"),
                       ("2.1(c)", "(c) the licence is non-transferable and may not be sublicensed or assigned.")])
    short = spanned(1, [("9", "9. Transfer of shares. A licence fee is due on a transfer of shares.")])
    query = "Non-Transferable License. non-transferable; may not transfer; shall not sublicense; licence"
    # Then its passages are its section spans, each opening with the chunk's locator header
    got = passages(long)
    assert len(got) == 4 and got[3].endswith("may not be sublicensed or assigned.")
    assert all(p.startswith("[doc: d.pdf | section: -") for p in got)
    assert passages(long, headers=False)[0] == "2.1 Grant of licence. The licensor grants:"
    # And whole-chunk BM25 ranks the short chunk first (the long one's length divides its score),
    # while the best-passage ranking puts the long chunk's item first
    others = [spanned(i, [(str(i + 8), f"{i + 8}. Notices. Notices go to the address in the recitals.")])
              for i in range(2, 6)]
    retriever = Retriever([long, short, *others], None, mode="bm25")
    assert [c.ordinal for c in retriever.rank(query)][:2] == [1, 0]
    assert retriever.passage_ranking(query) == [long.chunk_id, short.chunk_id]
    # And hybrid fuses the three rankings (dense 1, chunk BM25 1, best passage PASSAGE_WEIGHT > 1)
    index = ListIndex([short.chunk_id, long.chunk_id] + [c.chunk_id for c in others])
    assert PASSAGE_WEIGHT > 1
    pool = [long, short, *others]
    assert Retriever(pool, index, mode="hybrid", dense_weight=0.3).rank(query, [1.0])[0] == long
    assert Retriever(pool, index, mode="hybrid", dense_weight=0.3, passage_weight=0).rank(query, [1.0])[0] == short


# --- budget assembly -----------------------------------------------------------------------------

def test_assemble_takes_chunks_in_rank_order_until_the_next_would_pass_the_budget():
    ranked = [chunk(3, "", tokens=400), chunk(1, "", tokens=400), chunk(2, "", tokens=400)]
    cost = {3: 400, 1: 400, 2: 400}
    got = assemble(ranked, 1000, cost=lambda c: cost[c.ordinal])
    assert [c.ordinal for c in got.chunks] == [3, 1]
    assert got.tokens == 800 and not got.whole_document and not got.top_over_budget
    assert [c.ordinal for c in assemble(ranked, 1000, cap=1, cost=lambda c: cost[c.ordinal]).chunks] == [3]


def test_assemble_sends_the_whole_document_in_order_when_it_fits():
    doc = [chunk(0, "a"), chunk(1, "b"), chunk(2, "c")]
    got = assemble(list(reversed(doc)), 10_000, all_chunks=doc)
    assert got.whole_document and [c.ordinal for c in got.chunks] == [0, 1, 2]


def test_assemble_flags_a_top_chunk_that_alone_is_over_budget():
    ranked = [chunk(0, "x"), chunk(1, "y")]
    got = assemble(ranked, 100, cost=lambda c: 500 if c.ordinal == 0 else 10)
    assert got.top_over_budget and [c.ordinal for c in got.chunks] == [0]


def test_budget_from_a_cost_line():
    # Given 2 cents per extraction, $3 / $15 per million input / output tokens, 1,000 output tokens reserved
    # Then (0.02 - 1000 * 15e-6) / 3e-6 = 1,666 input tokens
    assert budget_from_cost(0.02, 3.0, 15.0, 1000) == 1666
    with pytest.raises(ValueError):
        budget_from_cost(0.01, 3.0, 15.0, 1000)


# --- the session's use of retrieval --------------------------------------------------------------

class _Embedder:
    name, dimension = "fake", 1

    def embed_query(self, text):
        return [1.0]


def _session_inputs(sizes: list[int]):
    from types import SimpleNamespace

    from longdoc.extract.catalogue import load_catalogue
    from longdoc.core.records import CaseFacts, RunRecord

    chunks = {c.chunk_id: c for c in (chunk(i, "", tokens=n) for i, n in enumerate(sizes))}
    order = list(reversed(chunks))  # dense ranks the last chunk first
    deps = SimpleNamespace(index=ListIndex(order), embedder=_Embedder(), catalogue=load_catalogue(), reranker=None,
                           tokens=None)
    run = RunRecord(run_id="r", doc_id="doc", doc_version="v1", clause_types=["Governing Law"], top_k=3)
    facts = CaseFacts(run_id="r", doc_id="doc", doc_version="v1", clause_types=["Governing Law"],
                      pending=["Governing Law"])
    return deps, run, facts, chunks


def test_session_context_is_top_k_in_document_order_without_a_budget():
    from longdoc.extract.context import retrieve as _retrieve

    deps, run, facts, chunks = _session_inputs([300] * 6)
    got = _retrieve(deps, run, facts, facts.pending, chunks)
    # the two best-ranked chunks plus the document's opening (moved up to rank 2)
    assert [c.ordinal for c in got] == [0, 4, 5]


def test_session_context_respects_the_budget_and_sends_a_small_document_whole():
    from longdoc.extract.context import retrieve as _retrieve

    deps, run, facts, chunks = _session_inputs([300] * 6)
    # Given a budget for two of the 300-token chunks: the two best-ranked, in document order
    got = _retrieve(deps, run, facts, facts.pending, chunks, budget_tokens=650)
    assert [c.ordinal for c in got] == [0, 5]
    # Given a budget the whole document fits in: every chunk, in order (beyond top_k)
    whole = _retrieve(deps, run, facts, facts.pending, chunks, budget_tokens=10_000)
    assert [c.ordinal for c in whole] == [0, 1, 2, 3, 4, 5]


def test_lead_rank_moves_the_document_opening_up_but_never_down():
    chunks = [chunk(0, "this agreement dated 1 may 2020 between a and b"), chunk(1, "fees payable"),
              chunk(2, "fees and fees again")]
    ranked = Retriever(chunks, None, mode="bm25", lead_rank=2).rank("fees")
    assert [c.ordinal for c in ranked] == [2, 0, 1]
    first = Retriever(chunks, None, mode="bm25", lead_rank=2).rank("agreement dated")
    assert first[0].ordinal == 0


def test_a_cited_item_or_part_matches_a_gold_section_at_any_enclosing_level() -> None:
    # Given a citation resolved to a point of a paragraph of an article, in a split chunk
    from longdoc.eval.scoring import enclosing_section_keys

    keys = enclosing_section_keys("Article 33(3)(a)#2")
    # Then it matches gold ids given for the article, the paragraph or the point, any case
    assert keys == {"article 33(3)(a)#2", "article 33(3)(a)", "article 33(3)", "article 33"}
    # And a sibling or another article does not match, and no id gives no keys
    assert "article 33(4)" not in keys and "article 3" not in keys
    assert enclosing_section_keys("4.2") == {"4.2"} and enclosing_section_keys(None) == set()


def test_the_eval_cache_is_keyed_by_the_chunker_code(monkeypatch, tmp_path) -> None:
    # Given the eval cache folder for the current code
    import inspect

    from longdoc.ingest import chunk
    from longdoc.eval.retrieval import chunker_fingerprint, store_root

    before = store_root(tmp_path, 1000, 2000, "all-MiniLM-L6-v2")
    assert before.parent == tmp_path / "eval" and before.name == f"chunks-1000-2000-{chunker_fingerprint()}"
    # When the chunker's source changes
    real = inspect.getsource

    def changed(obj):
        return real(obj) + ("\n# changed" if obj is chunk else "")

    monkeypatch.setattr(inspect, "getsource", changed)
    # Then chunks cut by the old code are not reused: the folder differs
    assert store_root(tmp_path, 1000, 2000, "all-MiniLM-L6-v2") != before


def test_initial_scores_come_from_the_session_retrieval_without_a_second_query():
    from longdoc.extract.context import initial_scores, retrieve as _retrieve

    class CountingEmbedder(_Embedder):
        calls = 0

        def embed_query(self, text):
            CountingEmbedder.calls += 1
            return [1.0]

    deps, run, facts, chunks = _session_inputs([300] * 6)
    deps.embedder = CountingEmbedder()
    # When the session's context is retrieved for one clause type, similarities kept
    similarity: dict[str, dict[str, float]] = {}
    got = _retrieve(deps, run, facts, facts.pending, chunks, similarity=similarity)
    scores = initial_scores(similarity, {c.chunk_id for c in got})
    # Then one embedding and one index query served both the ranking and the scores
    assert CountingEmbedder.calls == 1 and len(deps.index.calls) == 1
    # And the score is the best similarity among the chunks shown (the last chunk ranks first: 1.0)
    assert scores == {"Governing Law": 1.0}
    # And among chunks that exclude the best ones, the best of those shown (rank 3: 0.97); none shown: 0.0
    assert initial_scores(similarity, {"doc:v1:0002", "doc:v1:0000"}) == {"Governing Law": 0.97}
    assert initial_scores(similarity, set()) == {"Governing Law": 0.0}
