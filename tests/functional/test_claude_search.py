"""The model's own search (issue 20) with Claude's wire protocol: the real SDK against the loopback fake.

Each test scripts the model's tool calls (``search_chunks``, ``extract_clause``,
``record_not_found``) from what the request carries (the prompt's chunks, the search results
in the tool results) and asserts what the harness did: what it answered, stored and checkpointed.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from longdoc import wiring
from longdoc.adapters.claude import ClaudeModel
from longdoc.core.documents import load_chunks
from longdoc.core.text import split_sentences
from longdoc.extract.prompt import (EXTRACT_TOOL, NOT_FOUND_TOOL, SEARCH_TOOL, parse_prompt, parse_search_result,
                                    prompt_text)
from longdoc.extract.runs import run_result
from longdoc.extract.session import SessionOptions, run_session
from tests.fakes.anthropic_server import FakeAnthropic, PromptCache, Reply, message_reply, text_block, tool_use_block
from tests.functional.test_claude_loop import MODEL_ID, Scripted, new_run

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore:No application metrics to publish")]


@pytest.fixture
def fake() -> Iterator[FakeAnthropic]:
    with FakeAnthropic() as server:
        yield server


@pytest.fixture
def claude(aws_stack, fake: FakeAnthropic, monkeypatch: pytest.MonkeyPatch) -> ClaudeModel:
    """``wiring.model()`` is Claude (real SDK) talking to the fake, strict tools on."""
    model = ClaudeModel("test-key-not-real", MODEL_ID, base_url=fake.base_url, max_retries=2)
    monkeypatch.setattr(wiring, "model", lambda: model)
    monkeypatch.setenv("LONGDOC_STRICT_TOOLS", "true")
    return model


def prompt_chunk_ids(body: dict[str, Any]) -> list[str]:
    """Chunk ids of a request's prompt (first message)."""
    return [c[0] for c in parse_prompt(prompt_text(body["messages"][0]["content"]))[1]]


def tool_results(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The tool_result blocks of the request's last (user) message."""
    last = body["messages"][-1]["content"]
    return [b for b in last if isinstance(b, dict) and b.get("type") == "tool_result"] if isinstance(last, list) else []


def by_call(*steps: Callable[[dict[str, Any]], list[dict[str, Any]]]) -> Callable[[dict[str, Any]], Reply]:
    """A responder: the n-th call of a session (by message count) answers ``steps[n](body)``; then end_turn."""
    def respond(body: dict[str, Any]) -> Reply:
        call = (len(body["messages"]) - 1) // 2
        if call >= len(steps):
            return message_reply([text_block("done")], "end_turn")
        return message_reply(steps[call](body), "tool_use")
    return respond


def outside_chunk(doc, body: dict[str, Any]):
    """A chunk of the document the prompt did not show, with a sentence of it (for a query and a quote)."""
    shown = set(prompt_chunk_ids(body))
    for chunk in load_chunks(wiring.blob_store(), doc.doc_id, doc.doc_version):
        sentences = [chunk.text[a:b] for a, b in split_sentences(chunk.text) if len(chunk.text[a:b].split()) >= 8]
        if chunk.chunk_id not in shown and sentences:
            return chunk, sentences[0]
    raise AssertionError("every chunk was in the prompt")


def search(query: str, clause: str | None = None, id_: str = "toolu_search_1") -> dict[str, Any]:
    return tool_use_block(SEARCH_TOOL, {"query": query, "top_k": 3} | ({"clause_type": clause} if clause else {}), id_)


def test_a_clause_outside_the_top_k_is_found_through_a_search_and_cited(claude, fake, ingested_contract) -> None:
    # Given a run whose prompt holds one chunk, and a model that searches for a sentence of another chunk
    run = new_run(ingested_contract, ["Governing Law"], top_k=1)
    target: dict[str, Any] = {}

    def first(body):
        chunk, sentence = outside_chunk(ingested_contract, body)
        target.update(chunk=chunk.chunk_id, sentence=sentence, query=" ".join(sentence.split()[:12]))
        return [search(target["query"], "Governing Law")]

    def second(body):
        found = parse_search_result(tool_results(body)[0]["content"])
        chunk_id, _, text = next(c for c in found if c[0] == target["chunk"])
        return [tool_use_block(EXTRACT_TOOL, {"clause_type": "Governing Law", "clause_text": target["sentence"],
                                              "citations": [{"chunk_id": chunk_id, "page": None,
                                                             "quote": target["sentence"]}]}, "toolu_x")]
    fake.responder = by_call(first, second)
    # When one session runs
    outcome = run_session(wiring.deps(), run.run_id)
    # Then the search answered with the chunk (fenced as in the prompt), and the citation of it was accepted
    assert outcome.status == "DONE" and outcome.search_calls == 1 and outcome.rejected_citations == 0
    [stored] = wiring.state_store().list_extractions(run.run_id)
    assert stored.status == "found" and stored.citations[0].chunk_id == target["chunk"]
    assert target["chunk"] not in prompt_chunk_ids(fake.requests[0].body)
    # And the search is on the checkpoint
    [record] = wiring.state_store().load_checkpoint(run.run_id).case_facts.searches
    assert record.query == target["query"] and target["chunk"] in record.chunk_ids


def test_a_citation_of_a_chunk_never_shown_is_rejected(claude, fake, ingested_contract) -> None:
    # Given a model that quotes (verbatim) a chunk of the document its prompt did not hold
    run = new_run(ingested_contract, ["Governing Law"], top_k=1)

    def cite_unseen(body):
        chunk, sentence = outside_chunk(ingested_contract, body)
        return [tool_use_block(EXTRACT_TOOL, {"clause_type": "Governing Law", "clause_text": sentence,
                                              "citations": [{"chunk_id": chunk.chunk_id, "page": None,
                                                             "quote": sentence}]}, "toolu_x")]
    fake.responder = by_call(cite_unseen)
    # When one session runs
    outcome = run_session(wiring.deps(), run.run_id)
    # Then the harness answers an error naming the unseen chunk, stores nothing and counts a rejection
    [result] = tool_results(fake.requests[1].body)
    assert result["is_error"] is True and "never shown to you" in result["content"]
    assert wiring.state_store().list_extractions(run.run_id) == []
    assert outcome.rejected_citations == 1 and outcome.pending == 1


def test_a_not_found_without_evidence_is_rejected_then_corrected(claude, fake, ingested_contract) -> None:
    # Given initial chunks that score below the threshold, and a model that gives up without looking
    run = new_run(ingested_contract, ["Rofr/Rofo/Rofn"], top_k=2)
    query = "right of first refusal; right of first offer"
    fake.responder = by_call(
        lambda body: [tool_use_block(NOT_FOUND_TOOL, {"clause_type": "Rofr/Rofo/Rofn", "reason": "absent"}, "t1")],
        lambda body: [search(query, "Rofr/Rofo/Rofn", "t2")],
        lambda body: [tool_use_block(NOT_FOUND_TOOL, {"clause_type": "Rofr/Rofo/Rofn", "reason": "searched",
                                                      "queries": [query], "chunk_ids": ["not-a-chunk"]}, "t3")])
    # When one session runs (threshold above any similarity: a search is always needed)
    outcome = run_session(wiring.deps(), run.run_id, SessionOptions(search_min_score=1.01))
    # Then the first not_found is rejected with the reason, the search runs, and the second is stored
    first = tool_results(fake.requests[1].body)[0]
    assert first["is_error"] is True and "call search_chunks" in first["content"]
    assert tool_results(fake.requests[2].body)[0]["is_error"] is False  # the search
    assert outcome.status == "DONE" and len(fake.requests) == 3
    # And the result JSON keeps the evidence: the query the harness ran (unknown chunk ids dropped)
    [extraction] = run_result(wiring.state_store(), run.run_id)["extractions"]
    assert extraction["status"] == "not_found"
    assert extraction["evidence"] == {"queries": [query], "chunk_ids": [], "reason": "searched"}


def test_the_search_budget_is_enforced(claude, fake, ingested_contract) -> None:
    # Given a budget of one search call per session and a model that searches twice, then gives up
    run = new_run(ingested_contract, ["Rofr/Rofo/Rofn"], top_k=2)
    fake.responder = by_call(
        lambda body: [search("right of first refusal", None, "s1"), search("first offer to purchase", None, "s2")],
        lambda body: [tool_use_block(NOT_FOUND_TOOL, {"clause_type": "Rofr/Rofo/Rofn"}, "t1")])
    # When one session runs
    outcome = run_session(wiring.deps(), run.run_id, SessionOptions(search_max_calls=1, search_min_score=1.01))
    # Then the second search answers an error saying the budget is spent, and only one search is recorded
    first, second = tool_results(fake.requests[1].body)
    assert first["is_error"] is False and second["is_error"] is True and "budget" in second["content"]
    assert outcome.search_calls == 1
    # And past the budget a not_found is accepted without a search of its own (the evidence rule stops there)
    assert outcome.status == "DONE"


def test_a_resumed_session_does_not_repeat_its_searches(claude, fake, ingested_contract) -> None:
    # Given a first session that searches for Insurance and ends with it still pending
    run = new_run(ingested_contract, ["Insurance"], top_k=1)
    query = "maintain insurance coverage; certificate of insurance"
    fake.responder = by_call(lambda body: [search(query, "Insurance")])
    first = run_session(wiring.deps(), run.run_id)
    assert first.status == "CONTINUE"
    found = wiring.state_store().load_checkpoint(run.run_id).case_facts.searches[0].chunk_ids
    # When the next session runs and the model asks the same query again
    fake.requests.clear()
    fake.responder = by_call(lambda body: [search(query.upper(), "Insurance", "again")])
    second = run_session(wiring.deps(), run.run_id)
    # Then its prompt already holds the chunks found, CASE_FACTS lists the search, and the query is not run again
    prompt = prompt_text(fake.requests[0].body["messages"][0]["content"])
    facts = json.loads(re.search(r"<CASE_FACTS_PROGRESS-(\w+)>\n(.*?)\n</CASE_FACTS_PROGRESS-\1>", prompt, re.S).group(2))
    assert facts["searched"] == [{"query": query, "clause_type": "Insurance", "chunk_ids": found}]
    assert set(found) <= set(prompt_chunk_ids(fake.requests[0].body))
    assert "not run again" in tool_results(fake.requests[1].body)[0]["content"]
    assert second.search_calls == 0
    assert len(wiring.state_store().load_checkpoint(run.run_id).case_facts.searches) == 1


def _prefix_tokens(blocks: list[dict[str, Any]]) -> int:
    """Tokens of blocks as the caching fake counts them (:class:`~tests.fakes.anthropic_server.PromptCache`)."""
    return sum(math.ceil(len(json.dumps({k: v for k, v in b.items() if k != "cache_control"}, sort_keys=True,
                                        ensure_ascii=False)) / 4) for b in blocks)


def test_the_three_tool_registry_stays_cached_across_sessions_and_searches(claude, fake, ingested_contract) -> None:
    # Given the caching fake, and a model that searches in its first session and answers in its second
    fake.cache = PromptCache(min_tokens=1024)

    def plan(session: int, call: int, blocks: list[dict[str, Any]]) -> Reply:
        if session == 1 and call == 0:
            return message_reply([search("maintain insurance coverage", "Insurance")], "tool_use")
        if session == 2 and call == 0:
            return message_reply(blocks, "tool_use")
        return message_reply([text_block("done")], "end_turn")
    fake.responder = Scripted(plan)
    run = new_run(ingested_contract, ["Governing Law", "Insurance"])
    options = SessionOptions(search_min_score=0, strict_tools=True)
    # When two sessions run (the first ends with both clause types pending)
    assert run_session(wiring.deps(), run.run_id, options).status == "CONTINUE"
    assert run_session(wiring.deps(), run.run_id, options).status == "DONE"
    bodies = [r.body for r in fake.requests]
    # Then every request carried the same three tools, byte for byte, the breakpoint on search_chunks
    assert len(bodies) == 3 and len({json.dumps(b["tools"]) for b in bodies}) == 1
    tools = bodies[0]["tools"]
    assert [t["name"] for t in tools] == [EXTRACT_TOOL, NOT_FOUND_TOOL, SEARCH_TOOL]
    assert [("cache_control" in t) for t in tools] == [False, False, True]
    # And the cache is read from the second request on: after the search result (same session) and
    # at the second session's start, where the static prefix (all three tools + system) and the run's
    # stable CASE_FACTS and chunk block, byte-identical to the first session's, are read (issue 25)
    usage = [c.usage for c in wiring.state_store().load_checkpoint(run.run_id).calls]
    assert usage[0].cache_read_input_tokens == 0 and all(u.cache_read_input_tokens > 0 for u in usage[1:])
    static = _prefix_tokens(tools) + _prefix_tokens(bodies[0]["system"])
    stable = bodies[0]["messages"][0]["content"][0]
    assert bodies[2]["messages"][0]["content"][0] == stable
    assert usage[2].cache_read_input_tokens == static + _prefix_tokens([stable])
    assert static - _prefix_tokens(tools[:2]) - _prefix_tokens(bodies[0]["system"]) == _prefix_tokens([tools[2]])
