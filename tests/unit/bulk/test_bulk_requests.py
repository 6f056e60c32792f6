"""What a batch request caches: the shared prefix (tools, system) for an hour, never the document's
context, which no later call of the batch reads (the prompt cache computed as the API does, by
:class:`tests.fakes.anthropic_server.PromptCache`)."""

from __future__ import annotations

from longdoc.bulk.requests import batch_params
from longdoc.core.records import CaseFacts
from longdoc.extract.catalogue import load_catalogue
from longdoc.extract.prompt import build_request
from longdoc.extract.tools import tool_definitions
from tests.fakes.anthropic_server import PromptCache


def _request(doc: str) -> dict:
    facts = CaseFacts(run_id=f"run-{doc}", doc_id=doc, doc_version="v1", clause_types=["Governing Law"])
    request = build_request(facts, load_catalogue().resolve_many(["Governing Law"]), [], 1024, tools=tool_definitions())
    return batch_params("claude-sonnet-5-5", request)


def test_batch_requests_cache_the_shared_prefix_for_an_hour_and_not_the_document() -> None:
    # Given the batch requests of two documents
    first, second = _request("doc-a"), _request("doc-b")
    # Then the tools and the system prompt carry the 1-hour mark, the messages no mark at all
    marks = [b["cache_control"] for b in [*first["tools"], *first["system"]] if "cache_control" in b]
    assert marks and all(m == {"type": "ephemeral", "ttl": "1h"} for m in marks)
    assert not any("cache_control" in block for m in first["messages"] for block in m["content"])
    # When the API caches them in turn
    cache = PromptCache(min_tokens=1024)
    one, two = cache.usage(first), cache.usage(second)
    # Then the first writes the shared prefix only, and the second reads it and writes nothing
    assert one["cache_creation_input_tokens"] >= 1024 and one["cache_read_input_tokens"] == 0
    assert two["cache_read_input_tokens"] == one["cache_creation_input_tokens"]
    assert two["cache_creation_input_tokens"] == 0 and two["input_tokens"] > 0
