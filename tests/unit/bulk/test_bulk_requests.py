"""What a batch request caches: the shared prefix (tools, system) and the run's stable context (the
first user block: stable CASE_FACTS and the stable chunk set) for an hour, nothing after it (the
prompt cache computed as the API does, by :class:`tests.fakes.anthropic_server.PromptCache`)."""

from __future__ import annotations

from longdoc.bulk.requests import batch_params
from longdoc.core.models import Chunk
from longdoc.core.records import CaseFacts
from longdoc.extract.catalogue import load_catalogue
from longdoc.extract.prompt import build_request
from longdoc.extract.tools import tool_definitions
from tests.fakes.anthropic_server import PromptCache

ONE_HOUR = {"type": "ephemeral", "ttl": "1h"}


def _chunk(doc: str, n: int) -> Chunk:
    text = f"Section {n} of {doc}. " + "The parties agree to the terms set out here. " * 40
    return Chunk(chunk_id=f"{doc}-c{n}", doc_id=doc, doc_version="v1", ordinal=n, source=f"{doc}.pdf",
                 page_start=n + 1, page_end=n + 1, section_id=str(n + 1), text=text, char_start=0,
                 char_end=len(text), token_count=len(text) // 4, content_hash="0" * 64)


def _request(doc: str, note: str | None = None, later: int = 0) -> dict:
    facts = CaseFacts(run_id=f"run-{doc}", doc_id=doc, doc_version="v1", clause_types=["Governing Law"])
    request = build_request(facts, load_catalogue().resolve_many(["Governing Law"]), [_chunk(doc, n) for n in range(4)],
                            1024, tools=tool_definitions(), later_chunks=[_chunk(doc, 10 + n) for n in range(later)])
    return batch_params("claude-sonnet-5-5", request, note)


def _marks(params: dict) -> list[tuple[str, int, dict]]:
    """(where, index, mark) of every cache_control in the body, in cache order."""
    out = [("tools", i, b["cache_control"]) for i, b in enumerate(params["tools"]) if "cache_control" in b]
    out += [("system", i, b["cache_control"]) for i, b in enumerate(params["system"]) if "cache_control" in b]
    out += [(f"messages.{n}", i, b["cache_control"]) for n, m in enumerate(params["messages"])
            for i, b in enumerate(m["content"]) if "cache_control" in b]
    return out


def test_batch_requests_cache_the_shared_prefix_and_the_runs_stable_context_for_an_hour() -> None:
    # Given a document's batch request (with a retry note and session-only chunks after the stable block)
    params = _request("doc-a", note="expired", later=2)
    # Then three breakpoints, all 1-hour: the last tool, the system block and the first user block
    assert _marks(params) == [("tools", len(params["tools"]) - 1, ONE_HOUR), ("system", 0, ONE_HOUR),
                              ("messages.0", 0, ONE_HOUR)]
    # And the marked user block is the stable CASE_FACTS and chunk context, the rest unmarked after it
    first = params["messages"][0]["content"]
    assert first[0]["text"].startswith("<CASE_FACTS-") and "doc-a-c3" in first[0]["text"]
    assert "doc-a-c10" not in first[0]["text"] and "doc-a-c10" in first[1]["text"]
    assert first[-1]["text"] == "Note: the previous request failed (expired)."


def test_a_documents_next_request_reads_its_stable_context_and_another_document_only_the_shared_prefix() -> None:
    # Given the cache after one round: document a's request
    cache = PromptCache(min_tokens=1024)
    one = cache.usage(_request("doc-a"))
    assert one["cache_read_input_tokens"] == 0 and one["cache_creation_input_tokens"] >= 1024
    # When document b's request and then document a's next request (another session: new later chunks) come
    other = cache.usage(_request("doc-b"))
    again = cache.usage(_request("doc-a", later=1))
    # Then b reads only the shared prefix (tools + system) and writes its own context
    assert 0 < other["cache_read_input_tokens"] < one["cache_creation_input_tokens"]
    assert other["cache_creation_input_tokens"] > 0
    # And a reads everything up to its stable block's end: what its earlier request wrote, nothing new
    assert again["cache_read_input_tokens"] == one["cache_creation_input_tokens"] > other["cache_read_input_tokens"]
    assert again["cache_creation_input_tokens"] == 0 and again["input_tokens"] > 0
