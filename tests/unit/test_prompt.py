"""Tests for prompt assembly (:mod:`longdoc.extract.prompt`) with real chunks and catalogue entries."""

from __future__ import annotations

import json

import pytest

from longdoc.extract.catalogue import load_catalogue
from longdoc.ingest.chunk import chunk_document
from longdoc.extract.prompt import EXTRACT_TOOL, NOT_FOUND_TOOL, SYSTEM_PROMPT, build_request, parse_prompt, render_case_facts, tool_definitions
from longdoc.core.records import CaseFacts, ResolvedClause
from longdoc.core.models import Chunk

GOOSEHEAD = "cuad/gooseheadinsurance-franchise-agreement.pdf"
MPL = "MPL-2.0.txt"
EXACT = {"refund_amount": "$247.83", "customer_id": "cust_4711", "fee": "€1 000,50", "effective": "2016-04-06"}


@pytest.fixture(scope="module")
def goosehead_chunks(parse_corpus) -> list[Chunk]:
    """Four real Goosehead chunks, including the multi-page one holding section 27.1."""
    chunks = chunk_document(parse_corpus(GOOSEHEAD), "goosehead")
    law = next(c for c in chunks if "27.1" in c.section_ids)
    return [chunks[0], chunks[5], law, chunks[-1]]


@pytest.fixture(scope="module")
def clause_types():
    """Two catalogue entries, in request order."""
    return load_catalogue().resolve_many(["Governing Law", "Source Code Escrow"])


@pytest.fixture
def facts(goosehead_chunks, clause_types) -> CaseFacts:
    """CASE_FACTS with exact values, one resolved type and one decision."""
    return CaseFacts(
        run_id="run-0001",
        doc_id="goosehead",
        doc_version=goosehead_chunks[0].doc_version,
        clause_types=["Anti-Assignment", *(c.name for c in clause_types)],
        extracted_count=1,
        resolved={"Anti-Assignment": ResolvedClause(status="found", pages=[44], section_ids=["16.1"])},
        decisions=["Anti-Assignment taken from 16.1, not the guarantee in Exhibit B"],
        exact_values=EXACT,
    )


# --- Static prefix and tools ---------------------------------------------------------------


def test_static_prefix_carries_cache_control_on_system_and_last_tool(facts, clause_types, goosehead_chunks) -> None:
    # When a request is built
    request = build_request(facts, clause_types, goosehead_chunks, max_tokens=2048)
    # Then the system prompt is one text block marked as a cache breakpoint
    assert request.system == [{"type": "text", "text": SYSTEM_PROMPT, "cache_control": {"type": "ephemeral"}}]
    # And the tools are extract_clause then record_not_found, with the breakpoint on the last only
    assert [t["name"] for t in request.tools] == [EXTRACT_TOOL, NOT_FOUND_TOOL]
    assert request.tools[-1]["cache_control"] == {"type": "ephemeral"}
    assert all("cache_control" not in t for t in request.tools[:-1])
    assert request.max_tokens == 2048
    assert request.tool_choice == {"type": "auto"}


def test_static_prefix_is_identical_whatever_the_facts_and_chunks(facts, clause_types, goosehead_chunks) -> None:
    # Given two sessions with different facts, pending types and chunks
    first = build_request(facts, clause_types, goosehead_chunks, max_tokens=1024)
    later_facts = facts.model_copy(update={"extracted_count": 2, "decisions": ["x", "y"]})
    second = build_request(later_facts, clause_types[1:], goosehead_chunks[:1], max_tokens=4096)
    # Then the cacheable prefix (tools, system) is byte-identical, so the cache can hit
    assert json.dumps(first.tools) == json.dumps(second.tools)
    assert json.dumps(first.system) == json.dumps(second.system)


def test_extract_clause_requires_at_least_one_full_citation() -> None:
    # Given the extract_clause tool schema
    extract = next(t for t in tool_definitions() if t["name"] == EXTRACT_TOOL)
    schema = extract["input_schema"]
    # Then citations are required, as a non-empty array...
    assert set(schema["required"]) == {"clause_type", "clause_text", "citations"}
    citations = schema["properties"]["citations"]
    assert citations["type"] == "array"
    assert citations["minItems"] == 1
    # ...whose items each require the chunk id, the page and a non-empty verbatim quote
    item = citations["items"]
    assert item["type"] == "object"
    assert set(item["required"]) == {"chunk_id", "page", "quote"}
    assert item["properties"]["quote"]["minLength"] == 1
    assert item["properties"]["chunk_id"]["type"] == "string"
    assert item["properties"]["page"]["type"] == ["integer", "null"]
    # And no field outside the schema is accepted
    assert schema["additionalProperties"] is False and item["additionalProperties"] is False


def test_record_not_found_takes_no_citations() -> None:
    # Given the record_not_found tool schema
    not_found = next(t for t in tool_definitions() if t["name"] == NOT_FOUND_TOOL)
    schema = not_found["input_schema"]
    # Then it needs only the clause type and cannot carry citations
    assert schema["required"] == ["clause_type"]
    assert "citations" not in schema["properties"]
    assert schema["additionalProperties"] is False


# --- The user message ------------------------------------------------------------------


def test_user_message_orders_case_facts_then_chunks_then_task(facts, clause_types, goosehead_chunks) -> None:
    # When a request is built
    request = build_request(facts, clause_types, goosehead_chunks, max_tokens=2048)
    # Then there is one user message and it starts with CASE_FACTS
    assert [m.role for m in request.messages] == ["user"]
    content = request.messages[0].content
    assert isinstance(content, str)
    assert content.startswith("<CASE_FACTS>\n")
    # And CASE_FACTS ends before the chunks, the chunks come in the given order, then the task
    facts_end = content.index("</CASE_FACTS>")
    chunk_at = [content.index(f'<chunk id="{c.chunk_id}"') for c in goosehead_chunks]
    assert facts_end < content.index("<retrieved_chunks>") < chunk_at[0]
    assert chunk_at == sorted(chunk_at)
    assert chunk_at[-1] < content.index("</retrieved_chunks>") < content.index("<task>")
    assert content.endswith("</task>")
    # And the task lists only the pending types, in request order
    task = content[content.index("<task>") :]
    assert task.index('"Governing Law"') < task.index('"Source Code Escrow"')
    assert '"Anti-Assignment"' not in task


def test_exact_values_are_copied_byte_for_byte(facts, clause_types, goosehead_chunks) -> None:
    # When a request is built from facts holding exact values
    content = build_request(facts, clause_types, goosehead_chunks, max_tokens=2048).messages[0].content
    raw = content.encode("utf-8")
    facts_block = content[: content.index("</CASE_FACTS>")]
    # Then each value appears verbatim (same bytes, no escaping, no reformatting) inside CASE_FACTS
    for key, value in EXACT.items():
        assert f'"{key}": "{value}"' in facts_block
        assert value.encode("utf-8") in raw
    assert "\\u20ac" not in content  # the euro sign is not ASCII-escaped
    # And nothing has rounded or reformatted them
    assert "247.8300" not in content and "$ 247.83" not in content and "cust-4711" not in content


def test_chunks_are_rendered_verbatim_with_their_locators(facts, clause_types, goosehead_chunks) -> None:
    # When a request is built
    content = build_request(facts, clause_types, goosehead_chunks, max_tokens=2048).messages[0].content
    law = goosehead_chunks[2]
    assert law.page_end > law.page_start
    # Then each chunk is fenced with its id, page range, section and heading path, text unchanged
    opening = (
        f'<chunk id="{law.chunk_id}" pages="{law.page_start}-{law.page_end}" section="{law.section_id}" '
        f'heading="{" &gt; ".join(law.heading_path)}">'
    )
    assert opening + "\n" + law.text + "\n</chunk>" in content


def test_plain_text_chunk_pages_render_as_not_applicable(parse_corpus, facts, clause_types) -> None:
    # Given an MPL chunk (plain text, no pages) whose heading path holds double quotes
    chunks = chunk_document(parse_corpus(MPL), "mpl", target_tokens=300, max_tokens=600)
    chunk = next(c for c in chunks if c.section_id == "1.7")
    assert chunk.heading_path == ["1. Definitions", '1.7. "Larger Work"']
    content = build_request(facts, clause_types, [chunk], max_tokens=512).messages[0].content
    # Then pages read "n/a" and the quotes are escaped so the attribute stays well formed
    assert (
        f'<chunk id="{chunk.chunk_id}" pages="n/a" section="1.7" '
        'heading="1. Definitions &gt; 1.7. &quot;Larger Work&quot;">\n'
    ) in content
    # And the chunk still reads back whole, its own quotes untouched
    assert parse_prompt(content)[1] == [(chunk.chunk_id, "n/a", chunk.text)]
    assert '"Larger Work"' in chunk.text


def test_parse_prompt_round_trips_facts_chunks_and_definitions(facts, clause_types, goosehead_chunks) -> None:
    # Given a built request
    content = build_request(facts, clause_types, goosehead_chunks, max_tokens=2048).messages[0].content
    # When it is read back
    read_facts, read_chunks, definitions = parse_prompt(content)
    # Then the facts are the model's JSON plus the pending list
    assert read_facts == {**facts.model_dump(mode="json"), "pending": ["Governing Law", "Source Code Escrow"]}
    assert read_facts["exact_values"] == EXACT
    # And the chunks come back as (id, pages, text) with the text unchanged
    assert read_chunks == [
        (c.chunk_id, f"{c.page_start}-{c.page_end}" if c.page_end != c.page_start else str(c.page_start), c.text)
        for c in goosehead_chunks
    ]
    # And the definitions are the catalogue entries of the pending types
    assert definitions == [
        {"name": c.name, "description": c.description, "hints": c.hints, "answer_kind": c.answer_kind}
        for c in clause_types
    ]


def test_render_case_facts_is_a_fenced_json_block(facts) -> None:
    # When CASE_FACTS is rendered alone
    block = render_case_facts(facts)
    # Then it is JSON between the fences, with pending added and resolved types summarised
    assert block.startswith("<CASE_FACTS>\n") and block.endswith("\n</CASE_FACTS>")
    body = json.loads(block[len("<CASE_FACTS>\n") : -len("\n</CASE_FACTS>")])
    assert body["pending"] == ["Governing Law", "Source Code Escrow"]
    assert body["resolved"] == {"Anti-Assignment": {"status": "found", "pages": [44], "section_ids": ["16.1"], "instances": []}}
    assert body["schema_version"] == facts.schema_version


def test_parse_prompt_rejects_text_without_the_blocks() -> None:
    # Given text lacking the CASE_FACTS or task block, Then parse_prompt raises ValueError
    with pytest.raises(ValueError, match="CASE_FACTS or task"):
        parse_prompt("Please extract the governing law.")
    with pytest.raises(ValueError, match="CASE_FACTS or task"):
        parse_prompt('<CASE_FACTS>\n{"run_id": "r"}\n</CASE_FACTS>\n\nno task here')
