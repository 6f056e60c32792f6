"""Cost estimates, the cache-size warning, strict tool schemas and the clause_text support check."""

from __future__ import annotations

import json
import logging

import pytest

from longdoc.core import cost
from longdoc.core.errors import CitationError
from longdoc.extract.citations import check_clause_support
from longdoc.extract.prompt import EXTRACT_TOOL
from longdoc.extract.tools import tool_definitions
from longdoc.core.messages import Usage


def test_cost_uses_decimal_prices_with_cache_rates() -> None:
    # Given Haiku 4.5 usage with (5-minute) cache writes and reads (dated model id)
    usage = Usage(input_tokens=1_000_000, output_tokens=100_000, cache_creation_input_tokens=200_000,
                  cache_read_input_tokens=2_000_000)
    # When the cost is estimated from the capability table
    estimate = cost.estimate_cost(usage, "claude-haiku-4-5-20251001", cost.load_prices())
    # Then it is 1 + 0.5 + 0.25 + 0.2 USD, as an exact decimal string; an id not in the table
    # (an unknown one, or a Claude 4.x id the table no longer lists) has no estimate
    assert estimate == "1.950000"
    assert cost.estimate_cost(usage, "claude-unknown-9", cost.load_prices()) is None
    assert cost.estimate_cost(usage, "claude-sonnet-4-5-20250929", cost.load_prices()) is None


def test_price_table_is_configurable(tmp_path) -> None:
    # Given an override table in the new format and one row in the old (one cache_write rate)
    table = tmp_path / "prices.json"
    table.write_text(json.dumps({"models": {
        "m": {"input": "1", "output": "2", "cache_write_5m": "0", "cache_write_1h": "0", "cache_read": "0"},
        "old": {"input": "1", "output": "2", "cache_write": "1.25", "cache_read": "0.1"}}}))
    prices = cost.load_prices(str(table))
    # Then it prices its own ids, the old row's 1-hour write at 2 x input, and nothing else
    assert cost.estimate_cost(Usage(input_tokens=500_000, output_tokens=250_000), "m", prices) == "1.000000"
    assert cost.estimate_cost(Usage(cache_creation_input_tokens=1_000_000, cache_creation_1h_input_tokens=1_000_000),
                              "old", prices) == "2.000000"
    assert cost.estimate_cost(Usage(input_tokens=1), "claude-sonnet-5-5", prices) is None


def test_short_cache_prefix_warns_once_with_the_numbers(caplog) -> None:
    # Given Sonnet 5 (minimum cacheable prompt 1,024 tokens in the table)
    caplog.set_level(logging.WARNING, logger="longdoc.core.cost")
    assert cost.warn_if_prefix_uncacheable("claude-sonnet-5", 812) is True
    assert cost.warn_if_prefix_uncacheable("claude-sonnet-5", 812) is False
    assert cost.warn_if_prefix_uncacheable("claude-sonnet-5", 5000) is False
    # And Sonnet 5.5's 512-token minimum is met by the same prefix
    assert cost.warn_if_prefix_uncacheable("claude-sonnet-5-5", 812) is False
    [record] = caplog.records
    assert "812" in record.getMessage() and "1024" in record.getMessage()


@pytest.mark.parametrize("strict", [False, True])
def test_extract_tool_keeps_the_citation_requirement_in_both_modes(strict: bool) -> None:
    schema = next(t for t in tool_definitions(strict) if t["name"] == EXTRACT_TOOL)["input_schema"]
    assert "citations" in schema["required"]
    assert schema["properties"]["citations"]["minItems"] == 1
    assert set(schema["properties"]["citations"]["items"]["required"]) == {"chunk_id", "page", "quote"}


def test_strict_tools_are_marked_and_use_only_the_supported_subset() -> None:
    tools = tool_definitions(strict=True)
    assert all(t["strict"] is True for t in tools)
    assert "minLength" not in json.dumps(tools)
    assert tools[-1]["cache_control"] == {"type": "ephemeral"}


def test_clause_text_support() -> None:
    quote = "Either party may terminate this Agreement upon thirty (30) days' written notice; the fee is $247.83."
    check_clause_support("Either party may terminate on 30 days' written notice", [quote])
    check_clause_support("Termination by either party, fee $247.83", [quote])
    with pytest.raises(CitationError, match="247.84"):
        check_clause_support("fee of $247.84", [quote])
    with pytest.raises(CitationError, match="not supported"):
        check_clause_support("Licensee shall indemnify Licensor against patent claims", [quote])
