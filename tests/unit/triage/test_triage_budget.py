"""The input budget from the cost line, the clause band's size, and the bands that --explain prints."""

from __future__ import annotations

from decimal import Decimal

import pytest

from longdoc.core.errors import TriageError
from longdoc.triage.budget import CLAUSE_BAND_TOKENS, Bands, clause_band, parse_cost_line


def test_the_designs_cost_line_gives_4360_input_tokens() -> None:
    # Given the design's example: 0.005 per claim, 160 reserved output tokens at 4 per million, input at 1 per million
    line = parse_cost_line("0.005,1,4,160")
    # When the input budget is read backwards from it: (0.005 - 160 x 4 / 1e6) x 1e6 / 1
    budget = line.input_budget()
    # Then it is 4,360 tokens, exactly as the formula says
    assert budget == 4360 == int((Decimal("0.005") - Decimal(160 * 4) / 10**6) * 10**6 / 1)
    # And the named form says the same, and spending the whole budget costs the whole cost line
    assert parse_cost_line("reserve=160, output=4, input=1, cost=0.005").input_budget() == 4360
    assert line.cost_of(4360) == Decimal("0.005")


def test_a_dearer_input_price_buys_proportionally_fewer_tokens() -> None:
    # Given the same cost line at 2 per million input tokens, Then half the tokens (rounded down)
    assert parse_cost_line("0.005,2,4,160").input_budget() == 2180
    assert parse_cost_line("0.005,3,4,160").input_budget() == 1453  # 4360 / 3 = 1453.33 -> 1453


@pytest.mark.parametrize(("text", "words"), [
    ("0.005,1,4", "needs 4 values"),
    ("0.005,1,four,160", "must be numbers"),
    ("0.005,0,4,160", "input price must be positive"),
    ("0.0005,1,4,160", "nothing is left"),
    ("cost=1,input=1,output=1,spare=1", "names must be"),
])
def test_a_bad_cost_line_is_one_clear_line(text: str, words: str) -> None:
    with pytest.raises(TriageError) as caught:
        parse_cost_line(text).input_budget()
    assert words in str(caught.value) and "\n" not in str(caught.value)


def test_the_band_is_1200_tokens_unless_the_fixed_bands_leave_less() -> None:
    assert clause_band(4360, 480, 300, 140, 60) == CLAUSE_BAND_TOKENS == 1200
    assert clause_band(1500, 480, 300, 140, 60) == 520


def test_a_budget_smaller_than_instructions_plus_claim_names_each_band() -> None:
    with pytest.raises(TriageError) as caught:
        clause_band(500, 480, 300, 140, 60)
    message = str(caught.value)
    assert message.startswith("budget of 500 input tokens is smaller than the instructions plus the claim")
    assert "instructions 480, examples 300, claim 140, task 60" in message and caught.value.field == "budget"
    # And it says how to give a larger budget: the flag with the smallest budget that leaves a full band
    assert "--budget-tokens 2180" in message and "budget_tokens in an API request" in message


def test_explain_rows_add_up() -> None:
    bands = Bands(budget=4360, instructions=480, examples=300, clauses=984, claim=140, task=60, reserved_output=160,
                  clause_band=1200)
    rows = dict(bands.rows())
    assert rows["input total"] == 480 + 300 + 984 + 140 + 60 == 1964
    assert rows["input budget"] == 4360 and rows["reserved output"] == 160
    assert list(rows)[:5] == ["instructions", "examples", "clauses", "claim", "task"]
