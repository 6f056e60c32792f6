"""Costs priced from the capability table (issue 25, item 4): 1-hour against 5-minute cache writes,
the Message Batches discount, Haiku 5.5's long-prompt band per request, thinking billed as output,
Bedrock ids priced as their models, unpriced ids."""

from __future__ import annotations

from decimal import Decimal

import pytest

from longdoc.core import cost
from longdoc.core.messages import Usage
from longdoc.core.models_catalogue import rows


def test_one_hour_cache_writes_cost_their_own_rate() -> None:
    # Given Sonnet 5.5 usage writing 1M tokens to the cache, 400k of them with the 1-hour TTL
    usage = Usage(cache_creation_input_tokens=1_000_000, cache_creation_1h_input_tokens=400_000)
    # When it is priced
    estimate = cost.estimate_cost(usage, "claude-sonnet-5-5")
    # Then 600k are at the 5-minute rate (2.50/MTok) and 400k at the 1-hour rate (4/MTok): 1.5 + 1.6
    assert estimate == "3.100000"
    # And the same tokens all written for 5 minutes cost less (2.5)
    assert cost.estimate_cost(Usage(cache_creation_input_tokens=1_000_000), "claude-sonnet-5-5") == "2.500000"


def test_thinking_is_billed_as_output_with_nothing_added() -> None:
    # Given a reply whose 3,000 output tokens include its thinking (the API reports them together)
    usage = Usage(input_tokens=10_000, output_tokens=3_000)
    # When it is priced on Opus 5.5 (4 / 20 per MTok), Then output is 3,000 x 20 / 1M and no more
    assert cost.estimate_cost(usage, "claude-opus-5-5") == str(Decimal("0.040000") + Decimal("0.060000"))


def test_batch_usage_gets_the_rows_discount() -> None:
    # Given one usage, When it is priced as Messages and as Message Batches usage
    usage = Usage(input_tokens=1_000_000, output_tokens=1_000_000, cache_read_input_tokens=1_000_000)
    sync = cost.estimate_cost(usage, "claude-sonnet-5-5")
    batch = cost.estimate_cost(usage, "claude-sonnet-5-5", batch=True)
    # Then the batch price is half (2 + 10 + 0.10 = 12.10, then 6.05)
    assert (sync, batch) == ("12.100000", "6.050000")
    assert cost.batch_discount("claude-sonnet-5-5") == Decimal("0.5")
    assert cost.batch_discount("claude-unknown-9") is None


def test_haiku_5_5_long_prompt_band_applies_per_request_to_every_token() -> None:
    # Given one Haiku 5.5 request over 100,000 prompt tokens (input + cache reads) and one below
    long = Usage(input_tokens=90_000, cache_read_input_tokens=20_000, output_tokens=1_000)
    short = Usage(input_tokens=90_000, output_tokens=1_000)
    # When each is priced as one request
    long_cost = cost.estimate_cost(long, "claude-haiku-5-5", single_request=True)
    short_cost = cost.estimate_cost(short, "claude-haiku-5-5", single_request=True)
    # Then the long one is at the long band for every token, output included:
    # 90k x 0.50 + 20k x 0.05 + 1k x 2.50 = 0.045 + 0.001 + 0.0025; the short one at the base band
    assert long_cost == "0.048500"
    assert short_cost == str(Decimal("0.009000") + Decimal("0.000500"))
    # And summed usage (not one request) stays at the base band: a lower bound
    assert cost.estimate_cost(long, "claude-haiku-5-5") == "0.009700"


@pytest.mark.parametrize("row", rows(), ids=lambda r: r.id)
def test_every_id_of_every_row_is_priced_as_its_family(row) -> None:
    # Given a row of the table (Anthropic API or Bedrock, every alias)
    usage = Usage(input_tokens=1_000_000, output_tokens=1_000_000)
    expected = str((row.spec.prices.input + row.spec.prices.output).quantize(Decimal("0.000001")))
    # Then each of its ids costs what the family's prices say
    assert {cost.estimate_cost(usage, model_id) for model_id in row.ids()} == {expected}


def test_the_offline_baseline_costs_nothing_and_the_summary_baseline_stays_unpriced() -> None:
    # Given usage from the offline baselines, Then extraction's costs 0 (as before) and the summary
    # baseline's has no estimate (as before: the offline demo's output does not change)
    usage = Usage(input_tokens=5_000, output_tokens=500)
    assert cost.estimate_cost(usage, "offline-extractive-baseline-v1") == "0.000000"
    assert cost.estimate_cost(usage, "offline-lexrank-summary-baseline-v1") is None


def test_minimum_cacheable_prompt_comes_from_the_table() -> None:
    assert cost.min_cacheable_tokens("claude-sonnet-5-5") == 512
    assert cost.min_cacheable_tokens("claude-haiku-4-5-20251001") == 4096
    assert cost.min_cacheable_tokens("claude-unknown-9") is None
