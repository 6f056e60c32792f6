"""Confidence from evidence (:mod:`longdoc.extract.confidence`): scores and reasons from what the harness checked."""

from __future__ import annotations

from longdoc.core.messages import ToolUseBlock
from longdoc.core.records import Citation, NotFoundEvidence, SearchRecord
from longdoc.extract.catalogue import ClauseType, load_catalogue
from longdoc.extract.confidence import (
    OFF_VOCABULARY_CAP,
    WEAK_ABSENCE_CAP,
    Rankings,
    found_confidence,
    hints_in,
    not_found_confidence,
    vocabulary,
    vocabulary_in,
)
from longdoc.extract.prompt import EXTRACT_TOOL, NOT_FOUND_TOOL
from longdoc.extract.session import session_context
from longdoc.extract.session_types import SessionOptions
from longdoc.extract.tools import TOOLS
from tests.fakes.memory_state import MemoryStateStore
from tests.unit.extract.test_session_tools import CHUNKS, LAW, _deps, _session, chunk

LAW_CHUNK = list(CHUNKS)[2]  # "This Agreement is governed by the laws of the State of New York."
FEES_CHUNK = list(CHUNKS)[1]


def _rankings() -> Rankings:
    deps, s = _deps(), _session()
    session_context(deps, s, SessionOptions())
    assert s.ranker is not None
    return Rankings(s.ranker, LAW, top_k=2)


def test_hints_match_by_stem_case_and_punctuation_aside() -> None:
    assert hints_in("... is GOVERNED BY the laws of, the State", LAW) == ["governed by the laws of"]
    # word endings do not matter; every word of the hint, in order, does
    assert hints_in("is Governed by the Law of Ohio", LAW) == ["governed by the laws of"]
    assert hints_in("governed by law", LAW) == []
    assert hints_in("the laws of ... governed by", LAW) == []
    assert hints_in("payable within thirty days", LAW) == []


def test_a_renewal_written_as_automatically_renewed_matches_the_renewal_hints() -> None:
    renewal = load_catalogue(None).resolve("Renewal Term")
    text = "This Agreement shall be automatically renewed for successive periods of one (1) year."
    assert "automatically renew" in hints_in(text, renewal)
    assert "renew" in vocabulary_in("the lease was renewed", renewal)
    # generic contract wording is nobody's vocabulary
    assert not {"agreement", "the", "parti", "shall"} & vocabulary(renewal)


def test_a_well_backed_quote_scores_high_with_every_reason() -> None:
    # Given a verbatim quote from the chunk holding the hint, ranked by dense and BM25 alike
    quote = "This Agreement is governed by the laws of the State of New York."
    cite = Citation(chunk_id=LAW_CHUNK, page=1, quote=quote)
    # When it is scored with no rejected call before it
    got = found_confidence([cite], [quote], CHUNKS, LAW, _rankings(), rejected_before=0)
    # Then each piece of evidence adds to the found base (0.3 +0.10 exact +0.10 rank 2 +0.10 hint; the fake
    # index puts another chunk first) and each reason names its evidence
    assert got.score == 0.6
    assert got.reasons[0] == "+0.10 quote verified exact"
    assert any("clause-type hint in the quote (by stem): 'governed by the laws of'" in r for r in got.reasons)
    assert any(r.startswith("+0.20 cited chunk ranked 1 of") or "ranked" in r for r in got.reasons)
    assert not got.possible_omission


def test_a_normalised_off_topic_quote_after_rejections_scores_low() -> None:
    # Given a quote from the fees chunk, written with a line break the chunk does not have, after two rejections
    raw = "Fees are payable\nwithin  thirty days;"
    cite = Citation(chunk_id=FEES_CHUNK, page=1, quote="Fees are payable within thirty days;")
    # When it is scored
    got = found_confidence([cite], [raw], CHUNKS, LAW, _rankings(), rejected_before=2)
    # Then the score is below 0.5 and the reasons say why
    assert got.score < 0.5
    assert "-0.05 quote verified only after whitespace/typography normalisation" in got.reasons
    assert "-0.05 no clause-type hint in the quote" in got.reasons
    assert "-0.20 2 citation(s) rejected before this one" in got.reasons


def test_a_found_whose_quote_shares_no_vocabulary_is_never_auto_accepted() -> None:
    # Given a warranties sentence cited as Governing Law, verbatim, from the chunk ranked first by dense and BM25
    law = load_catalogue(None).resolve("Governing Law")
    text = "Supplier warrants that the Products will be free from defects in materials and workmanship."
    chunks = {"c0": chunk(0, text), **CHUNKS}
    rankings = _weak_rankings(0.9, ["c0"], 1.0)
    rankings.dense = rankings.fused = ["c0", *CHUNKS]
    cite = Citation(chunk_id="c0", page=1, quote=text)
    got = found_confidence([cite], [text], chunks, law, rankings, rejected_before=0)
    # Then its evidence alone (0.3 +0.10 exact +0.20 rank 1 +0.10 agreement -0.05 no hint = 0.65) is capped
    assert got.score == OFF_VOCABULARY_CAP < 0.8
    assert got.reasons[-1].startswith(f"capped at {OFF_VOCABULARY_CAP:.2f}: the quote shares no word")
    # And a quote with the clause type's words but no hint phrase keeps its score and names the words
    near = "The laws of Delaware apply to it."
    chunks["c0"] = chunk(0, near)
    kept = found_confidence([Citation(chunk_id="c0", page=1, quote=near)], [near], chunks, law, rankings, 0)
    assert kept.score == 0.65
    assert any(r.startswith("-0.05 no clause-type hint in the quote (the clause type's words: law")
               for r in kept.reasons)


def test_a_renewal_clause_written_as_automatically_renewed_is_not_a_confident_not_found() -> None:
    # Given a contract whose renewal clause says "automatically renewed", never the whole word "renewal",
    # read by the model (shown), searched twice, with weak dense and BM25 rankings
    renewal = load_catalogue(None).resolve("Renewal Term")
    chunks = {**{k: v for k, v in CHUNKS.items() if k != LAW_CHUNK},
              "r": chunk(9, "This Agreement shall be automatically renewed for successive one-year periods.")}
    searches = [SearchRecord(session=1, query=q, clause_type=renewal.name) for q in ("renewal", "extension")]
    rankings = _weak_rankings(0.2, [], 0.0)
    rankings.fused = rankings.dense = ["r", *rankings.fused]
    got = not_found_confidence(renewal, chunks, rankings, shown=set(chunks), evidence=None, searches=searches)
    # Then the hint is seen in the chunk: no "+0.10 no hint anywhere", and the score is under the threshold
    assert got.score < 0.8
    assert "+0.05 no clause-type hint anywhere in the document" not in got.reasons
    assert any(r.startswith("-0.20 unquoted chunk r") and "'automatically renew'" in r for r in got.reasons)
    assert got.possible_omission is False or got.candidate is not None


def test_a_not_found_is_not_confident_while_a_vocabulary_chunk_was_never_read() -> None:
    # Given a document where only the clause type's name words appear ("governing" and "law"), not a hint
    law = ClauseType(name="Governing Law", description="Which law governs.", hints=["choice of forum"])
    chunks = {k: v for k, v in CHUNKS.items() if k not in (LAW_CHUNK, list(CHUNKS)[4])}
    chunks["g"] = chunk(8, "Nothing here changes the law governing employees.")
    searches = [SearchRecord(session=1, query=q, clause_type=law.name) for q in ("governing law", "choice of law")]
    rankings = _weak_rankings(0.2, [], 0.0)
    # When every chunk was read, absence is shown (weak rankings, searches ran): confident
    read = not_found_confidence(law, chunks, rankings, shown=set(chunks), evidence=None, searches=searches)
    assert read.score > 0.8
    # When the chunk carrying the name's words was never read, it is capped under the threshold and says which
    unread = not_found_confidence(law, chunks, rankings, shown=set(chunks) - {"g"}, evidence=None,
                                  searches=searches)
    assert unread.score == WEAK_ABSENCE_CAP
    assert unread.reasons[-1] == (f"capped at {WEAK_ABSENCE_CAP:.2f}: 1 of 1 chunk(s) carrying the clause type's "
                                  "vocabulary never read (first: g)")


def test_not_found_with_a_strong_unread_candidate_is_a_possible_omission() -> None:
    # Given a not_found for Governing Law while the top-ranked chunk holds its hint, never shown, no search
    got = not_found_confidence(LAW, CHUNKS, _rankings(), shown=set(), evidence=NotFoundEvidence(), searches=[])
    # Then it is a possible omission naming the candidate, and scored low
    assert got.possible_omission
    assert got.candidate is not None and got.candidate["chunk_id"] in (LAW_CHUNK, list(CHUNKS)[4])
    assert got.score < 0.5
    assert any(r.startswith("possible omission:") for r in got.reasons)
    assert "-0.05 no search ran for it" in got.reasons


def test_not_found_with_no_hint_anywhere_and_searches_is_confident() -> None:
    # Given a document without any Governing Law wording, searched twice
    chunks = {k: v for k, v in CHUNKS.items() if k not in (LAW_CHUNK, list(CHUNKS)[4])}
    deps, s = _deps(), _session()
    s.chunks = dict(chunks)
    session_context(deps, s, SessionOptions())
    assert s.ranker is not None
    searches = [SearchRecord(session=1, query=q, clause_type=LAW.name) for q in ("governing law", "choice of law")]
    got = not_found_confidence(LAW, chunks, Rankings(s.ranker, LAW, 2), shown=set(chunks), evidence=None,
                               searches=searches)
    assert not got.possible_omission
    assert "+0.05 no clause-type hint anywhere in the document" in got.reasons
    assert "+0.10 2 search(es) ran for it" in got.reasons
    # Then, the hints being merely absent while the best chunk is similar (the fake index scores every chunk
    # 0.9), the 0.75 it would have scored is capped under the accept threshold: it goes to review
    assert got.score == 0.7
    assert got.reasons[-1].startswith("capped at 0.70: absence not shown (the best unquoted chunk is not weak")


def _weak_rankings(similarity: float, bm25: list[str], coverage: float) -> Rankings:
    """Rankings with every chunk at ``similarity`` and the given BM25 list (no retriever needed)."""
    r = Rankings.__new__(Rankings)
    r.similarity = dict.fromkeys(CHUNKS, similarity)
    r.dense, r.bm25, r.fused, r.top_k, r.name_coverage = list(CHUNKS), bm25, list(CHUNKS), 2, coverage
    return r


def test_a_not_found_is_confident_only_when_absence_is_shown() -> None:
    # Given a document without Governing Law wording, searched twice
    chunks = {k: v for k, v in CHUNKS.items() if k not in (LAW_CHUNK, list(CHUNKS)[4])}
    searches = [SearchRecord(session=1, query=q, clause_type=LAW.name) for q in ("governing law", "choice of law")]
    # When the best unquoted chunk is weak under dense (0.20) and BM25 matches nothing
    strong = not_found_confidence(LAW, chunks, _weak_rankings(0.2, [], 0.0), shown=set(chunks), evidence=None,
                                  searches=searches)
    # Then it keeps its high score (0.75 +0.05 no hint +0.10 searches), above the 0.8 accept threshold
    assert strong.score == 0.9 and not any(r.startswith("capped") for r in strong.reasons)
    # When instead BM25's top chunk holds the clause name's words (Agreement Date on a page 1 "as of ...")
    named = not_found_confidence(LAW, chunks, _weak_rankings(0.2, [list(chunks)[0]], 1.0), shown=set(chunks),
                                 evidence=None, searches=searches)
    # Then it is capped under the threshold and says why
    assert named.score == 0.7
    assert "top BM25 chunk holds 100% of the name's words" in named.reasons[-1]
    # And with weak rankings but no search run, it is capped too
    unsearched = not_found_confidence(LAW, chunks, _weak_rankings(0.2, [], 0.0), shown=set(chunks), evidence=None,
                                      searches=[])
    assert unsearched.score == 0.7 and "no search ran" in unsearched.reasons[-1]


def test_the_tools_store_confidence_on_every_extraction_and_not_found() -> None:
    # Given a session over a memory store, its context retrieved
    deps, s = _deps(), _session()
    deps = deps.__class__(**{**deps.__dict__, "state": MemoryStateStore()})
    session_context(deps, s, SessionOptions())
    quote = "This Agreement is governed by the laws of the State of New York."
    # When a rejected call, then a verified one, are made for Governing Law
    bad = ToolUseBlock(id="t0", name=EXTRACT_TOOL, input={"clause_type": LAW.name, "clause_text": "x",
                                                          "citations": [{"chunk_id": LAW_CHUNK, "quote": "not there"}]})
    good = ToolUseBlock(id="t1", name=EXTRACT_TOOL, input={"clause_type": LAW.name, "clause_text": quote,
                                                           "citations": [{"chunk_id": LAW_CHUNK, "quote": quote}]})
    assert TOOLS[EXTRACT_TOOL].run(deps, s, bad, "m", SessionOptions())["is_error"]
    assert not TOOLS[EXTRACT_TOOL].run(deps, s, good, "m", SessionOptions())["is_error"]
    # Then the stored extraction carries a score and the rejection among its reasons
    stored = deps.state.list_extractions("r")
    assert stored[0].confidence is not None
    assert "-0.10 1 citation(s) rejected before this one" in stored[0].confidence.reasons
    assert 0 <= stored[0].confidence.score <= 1
    assert NOT_FOUND_TOOL in TOOLS
