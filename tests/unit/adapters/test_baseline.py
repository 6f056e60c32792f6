"""Tests for the offline extractive baseline (:class:`longdoc.adapters.baseline.OfflineBaselineModel`).

Requests are built exactly as a session builds them (:func:`build_request`) from real CUAD
contract chunks and default catalogue entries; expectations come from the CUAD gold cases.
The answers and stop reasons are those of the pre-search baseline (``search=False``); the
search step of issue 20 (``search_chunks`` below the threshold) has its own tests at the end.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from longdoc.extract.tools import input_problems
from longdoc.adapters.baseline import BASELINE_NAME, BLOCK_OVERHEAD_TOKENS, OfflineBaselineModel
from longdoc.extract.catalogue import load_catalogue
from longdoc.ingest.chunk import chunk_document
from longdoc.extract.citations import verify_citation
from longdoc.extract.prompt import EXTRACT_TOOL, NOT_FOUND_TOOL, SEARCH_TOOL, build_request, render_search_result
from longdoc.extract.tools import tool_definitions
from longdoc.core.tokens import estimate_tokens
from longdoc.core.records import CaseFacts, Citation, SearchRecord
from longdoc.core.models import Chunk
from longdoc.core.messages import Message, ModelRequest, ModelResponse, TextBlock, ToolResultBlock, ToolUseBlock

GOOSEHEAD = "cuad/gooseheadinsurance-franchise-agreement.pdf"
CARDLYTICS = "cuad/cardlyticsinc-maintenance-agreement1.pdf"
TYPES = ["Governing Law", "Source Code Escrow"]


def _gold(gold_dir: Path, doc: str, clause_type: str) -> dict:
    """The CUAD gold case for ``doc`` and ``clause_type``."""
    with (gold_dir / "cuad-dev.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            case = json.loads(line)
            if case["doc"] == doc and case["clause_type"] == clause_type:
                return case
    raise AssertionError(f"no gold case for {doc} / {clause_type}")


def _request(chunks: list[Chunk], names: list[str], max_tokens: int) -> ModelRequest:
    """A first-session request for ``names`` over ``chunks`` (nothing resolved yet)."""
    types = load_catalogue().resolve_many(names)
    facts = CaseFacts(
        run_id="run-baseline",
        doc_id=chunks[0].doc_id,
        doc_version=chunks[0].doc_version,
        clause_types=[t.name for t in types],
    )
    return build_request(facts, types, chunks, max_tokens=max_tokens, tools=tool_definitions())


def _reply(request: ModelRequest, response: ModelResponse, errors: set[str] = frozenset()) -> ModelRequest:
    """Continue the conversation: the assistant turn, then a tool_result per complete tool call.

    Tool calls whose clause type is in ``errors`` get ``is_error=True`` results.
    """
    results = [
        ToolResultBlock(
            tool_use_id=b.id,
            content="rejected" if b.input["clause_type"] in errors else "recorded",
            is_error=b.input["clause_type"] in errors,
        ).model_dump()
        for b in response.content
        if isinstance(b, ToolUseBlock)
    ]
    messages = [
        *request.messages,
        Message(role="assistant", content=[b.model_dump() for b in response.content]),
        Message(role="user", content=results),
    ]
    return request.model_copy(update={"messages": messages})


@pytest.fixture(scope="module")
def goosehead_chunks(parse_corpus) -> dict[str, Chunk]:
    """All chunks of the Goosehead franchise agreement (CUAD), keyed by chunk_id, in order."""
    return {c.chunk_id: c for c in chunk_document(parse_corpus(GOOSEHEAD), "goosehead")}


@pytest.fixture(scope="module")
def whole_contract(goosehead_chunks) -> tuple[ModelRequest, ModelResponse]:
    """Governing Law and Source Code Escrow over the whole contract, with room to answer both."""
    request = _request(list(goosehead_chunks.values()), TYPES, max_tokens=4096)
    return request, OfflineBaselineModel(search=False).create(request)


# --- Answers ---------------------------------------------------------------------------------


def test_governing_law_is_extracted_with_a_verbatim_quote(gold_dir, goosehead_chunks, whole_contract) -> None:
    # Given the gold case: the Goosehead agreement is governed by Texas law
    gold = _gold(gold_dir, GOOSEHEAD, "Governing Law")
    assert gold["expected"] == "found" and "Texas" in gold["snippets"][0]
    # When the baseline answers the whole-contract request
    _, response = whole_contract
    block = response.content[0]
    # Then the first block is an extract_clause call for Governing Law
    assert isinstance(block, ToolUseBlock) and block.name == EXTRACT_TOOL
    assert block.input["clause_type"] == "Governing Law"
    [citation] = block.input["citations"]
    chunk = goosehead_chunks[citation["chunk_id"]]
    # And its quote is a verbatim substring of the cited chunk: section 27.1's Texas sentence
    assert citation["quote"] in chunk.text
    assert "under the laws of the State of Texas" in citation["quote"]
    assert "27.1" in chunk.section_ids
    # And clause_text is the quote's opening words, whitespace collapsed, at most 200 chars
    clause_text = block.input["clause_text"]
    assert " ".join(citation["quote"].split()).startswith(clause_text)
    assert clause_text.startswith("This Agreement will be interpreted and construed exclusively under the laws")
    assert len(clause_text) <= 200
    # And the harness's verification accepts it and pins it to section 27.1 on the quote's page
    verified = verify_citation(Citation(**citation), goosehead_chunks)
    offset = chunk.text.index(citation["quote"])
    assert verified.section_id == "27.1"
    assert verified.page == chunk.page_of(offset)
    assert citation["page"] == chunk.page_start  # the baseline cites the chunk's first page


def test_source_code_escrow_is_recorded_not_found(gold_dir, whole_contract) -> None:
    # Given the gold case: no source code escrow in the Goosehead agreement
    assert _gold(gold_dir, GOOSEHEAD, "Source Code Escrow")["expected"] == "not_found"
    # When the baseline answers the whole-contract request
    _, response = whole_contract
    block = response.content[1]
    # Then it calls record_not_found, with a reason and no citations
    assert isinstance(block, ToolUseBlock) and block.name == NOT_FOUND_TOOL
    assert block.input["clause_type"] == "Source Code Escrow"
    assert block.input["reason"].startswith("no retrieved sentence scored above 14")
    assert "citations" not in block.input


def test_source_code_escrow_is_found_where_gold_says_it_is(gold_dir, parse_corpus) -> None:
    # Given the Cardlytics maintenance agreement, which has a source code escrow clause (gold)
    gold = _gold(gold_dir, CARDLYTICS, "Source Code Escrow")
    assert gold["expected"] == "found"
    chunks = chunk_document(parse_corpus(CARDLYTICS), "cardlytics")
    # When the baseline is asked for it with a lenient threshold (6.0, the default before issue 12)
    response = OfflineBaselineModel(search=False, threshold=6.0).create(_request(chunks, ["Source Code Escrow"], 1024))
    # Then it extracts a verbatim quote about the escrow release conditions
    [block] = response.content
    assert block.name == EXTRACT_TOOL
    quote = block.input["citations"][0]["quote"]
    by_id = {c.chunk_id: c for c in chunks}
    assert quote in by_id[block.input["citations"][0]["chunk_id"]].text
    assert "Release Conditions" in quote
    # And the default threshold (14.0, tuned for silent-source) trades this find for silence
    [strict] = OfflineBaselineModel(search=False).create(_request(chunks, ["Source Code Escrow"], 1024)).content
    assert strict.name == NOT_FOUND_TOOL and OfflineBaselineModel(search=False).threshold == 14.0


def test_below_threshold_everything_is_not_found(goosehead_chunks, whole_contract) -> None:
    # Given a baseline whose threshold no sentence can reach
    request, _ = whole_contract
    strict = OfflineBaselineModel(search=False, threshold=1000)
    # When it answers, Then both types are recorded not found, in request order
    response = strict.create(request)
    assert [(b.name, b.input["clause_type"]) for b in response.content] == [
        (NOT_FOUND_TOOL, "Governing Law"),
        (NOT_FOUND_TOOL, "Source Code Escrow"),
    ]
    assert "above 1000" in response.content[0].input["reason"]


# --- Stop reasons and usage -------------------------------------------------------------------


def test_enough_tokens_stops_with_tool_use_and_usage_within_budget(whole_contract) -> None:
    # Given the whole-contract request with max_tokens 4096
    request, response = whole_contract
    # Then the reply holds both calls and stops for tool use, under the baseline's name
    assert response.stop_reason == "tool_use"
    assert [b.type for b in response.content] == ["tool_use", "tool_use"]
    assert response.model == BASELINE_NAME == "offline-extractive-baseline-v1"
    # And output tokens are the sum of the blocks' estimated costs, within max_tokens
    expected = sum(
        estimate_tokens(json.dumps(b.input, ensure_ascii=False)) + BLOCK_OVERHEAD_TOKENS for b in response.content
    )
    assert response.usage.output_tokens == expected <= request.max_tokens
    # And input tokens cover at least the prompt text itself (the text of its content blocks)
    content = request.messages[0].content
    prompt = content if isinstance(content, str) else "".join(b.get("text", "") for b in content)
    assert estimate_tokens(prompt) > 1000
    assert response.usage.input_tokens >= estimate_tokens(prompt)


def test_tiny_max_tokens_stops_with_a_partial_tool_use(whole_contract) -> None:
    # Given the whole-contract request with room for almost nothing
    request, _ = whole_contract
    tiny = request.model_copy(update={"max_tokens": 5})
    # When the baseline answers
    response = OfflineBaselineModel(search=False).create(tiny)
    # Then it stops with max_tokens inside the first call: a tool_use with no field complete,
    # which fails the tool's schema, so the harness treats it as cut
    assert response.stop_reason == "max_tokens"
    [block] = response.content
    assert isinstance(block, ToolUseBlock) and block.name == EXTRACT_TOOL
    assert block.input == {} and input_problems(block)
    assert response.usage.output_tokens == 5


def test_max_tokens_between_calls_keeps_the_first_and_cuts_the_second(whole_contract) -> None:
    # Given room for the first call and one token more
    request, full = whole_contract
    first = full.content[0]
    first_cost = estimate_tokens(json.dumps(first.input, ensure_ascii=False)) + BLOCK_OVERHEAD_TOKENS
    tight = request.model_copy(update={"max_tokens": first_cost + 1})
    # When the baseline answers
    response = OfflineBaselineModel(search=False).create(tight)
    # Then the first call is complete and identical, and the last block is the cut-off second call
    assert response.stop_reason == "max_tokens"
    assert response.content[0] == first
    assert response.content[-1].name == NOT_FOUND_TOOL
    # (a record_not_found holding its clause_type would be a complete call: the cut one holds nothing)
    assert response.content[-1].input == {} and input_problems(response.content[-1])
    assert response.usage.output_tokens == tight.max_tokens


def test_after_tool_results_for_every_type_it_ends_the_turn(whole_contract) -> None:
    # Given the conversation continued with a tool_result for both calls
    request, response = whole_contract
    follow_up = _reply(request, response)
    # When the baseline answers again
    final = OfflineBaselineModel(search=False).create(follow_up)
    # Then it ends the turn with one text block and no more calls, within budget
    assert final.stop_reason == "end_turn"
    assert final.content == [TextBlock(text="All pending clause types are handled.")]
    assert 0 < final.usage.output_tokens <= follow_up.max_tokens


def test_error_tool_result_leaves_that_type_pending(whole_contract) -> None:
    # Given the conversation continued with Governing Law's call rejected (is_error)
    request, response = whole_contract
    follow_up = _reply(request, response, errors={"Governing Law"})
    # When the baseline answers again
    retry = OfflineBaselineModel(search=False).create(follow_up)
    # Then only the rejected type is answered again: the same citation, its clause_text now the whole quote
    assert retry.stop_reason == "tool_use"
    assert [b.input["clause_type"] for b in retry.content] == ["Governing Law"]
    first = response.content[0].input
    assert retry.content[0].input["citations"] == first["citations"]
    assert retry.content[0].input["clause_text"] == " ".join(first["citations"][0]["quote"].split())
    # And when that is rejected too, it records not_found naming the rejections (never a third identical call)
    last = OfflineBaselineModel(search=False).create(_reply(follow_up, retry, errors={"Governing Law"}))
    assert [(b.name, b.input["clause_type"]) for b in last.content] == [(NOT_FOUND_TOOL, "Governing Law")]
    assert "rejected the best sentence twice" in last.content[0].input["reason"]


def test_answers_are_deterministic(whole_contract) -> None:
    # Given the same request answered by the fixture's model and by two fresh instances
    request, response = whole_contract
    again = [OfflineBaselineModel(search=False).create(request) for _ in range(2)]
    # Then every reply is identical, ids included
    assert all(r.model_dump() == response.model_dump() for r in again)
    assert response.id.startswith("msg_baseline_")
    assert all(b.id.startswith("toolu_") for b in response.content)
    assert len({b.id for b in response.content}) == len(response.content)


# --- The search step (issue 20) ---------------------------------------------------------------


ESCROW_QUERY = "escrow agent; deposit the source code; release conditions"


def test_below_threshold_it_searches_with_the_catalogue_alternatives_first(whole_contract) -> None:
    # Given the whole-contract request, answered by the baseline with its search step (the default)
    request, _ = whole_contract
    response = OfflineBaselineModel().create(request)
    # Then Governing Law is extracted as before, and Source Code Escrow (best sentence below 14) is searched
    # for with its catalogue alternatives, naming the clause type, instead of being recorded not_found
    assert [(b.name, b.input["clause_type"]) for b in response.content] == [
        (EXTRACT_TOOL, "Governing Law"), (SEARCH_TOOL, "Source Code Escrow")]
    assert response.content[1].input == {"query": ESCROW_QUERY, "top_k": 5, "clause_type": "Source Code Escrow"}
    assert load_catalogue().resolve("Source Code Escrow").alternatives == ESCROW_QUERY.split("; ")


def test_after_its_search_it_records_not_found_with_the_query_and_the_chunks_examined(goosehead_chunks,
                                                                                      whole_contract) -> None:
    # Given the search answered with two chunks of the contract that hold no escrow clause
    request, _ = whole_contract
    first = OfflineBaselineModel().create(request)
    search = first.content[1]
    found = list(goosehead_chunks.values())[1:3]
    follow_up = request.model_copy(update={"messages": [
        *request.messages,
        Message(role="assistant", content=[b.model_dump() for b in first.content]),
        Message(role="user", content=[
            ToolResultBlock(tool_use_id=first.content[0].id, content="recorded").model_dump(),
            ToolResultBlock(tool_use_id=search.id, content=render_search_result(ESCROW_QUERY, found, [])).model_dump(),
        ]),
    ]})
    # When the baseline answers again
    [block] = OfflineBaselineModel().create(follow_up).content
    # Then it records not_found, naming the query it ran and the chunks it examined (prompt and search)
    assert block.name == NOT_FOUND_TOOL and block.input["clause_type"] == "Source Code Escrow"
    assert block.input["queries"] == [ESCROW_QUERY]
    assert {c.chunk_id for c in found} <= set(block.input["chunk_ids"])


def test_a_search_of_an_earlier_session_listed_in_case_facts_is_not_repeated(goosehead_chunks) -> None:
    # Given a later session's request (or the next batch round): CASE_FACTS lists the earlier search
    # for Source Code Escrow and its chunk is in the context again
    chunks = list(goosehead_chunks.values())[:3]
    facts = CaseFacts(run_id="run-baseline", doc_id=chunks[0].doc_id, doc_version=chunks[0].doc_version,
                      clause_types=["Source Code Escrow"],
                      searches=[SearchRecord(session=1, query=ESCROW_QUERY, clause_type="Source Code Escrow",
                                             chunk_ids=[chunks[2].chunk_id])])
    request = build_request(facts, load_catalogue().resolve_many(["Source Code Escrow"]), chunks, max_tokens=4096, tools=tool_definitions())
    # When the baseline answers
    [block] = OfflineBaselineModel().create(request).content
    # Then it does not search again: it records not_found naming the earlier query
    assert block.name == NOT_FOUND_TOOL and block.input["queries"] == [ESCROW_QUERY]
