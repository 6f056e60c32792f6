"""Exact values come back whole: currency, scale, percent, range and date spans (issue 12, failure 1)."""

from __future__ import annotations

import pytest

from longdoc.core.values import exact_values


@pytest.mark.parametrize(("text", "expected"), [
    ("... up to $10 million per occurrence and $30 million in the aggregate.", ["$10 million", "$30 million"]),
    ("a rent of USD 2,450.00 per month", ["USD 2,450.00"]),
    ("a fee of 1.500,00 EUR is due", ["1.500,00 EUR"]),
    ("a discount of 10-15% applies", ["10-15%"]),
    ("interest at 4.5 percent per annum", ["4.5 percent"]),
    ("a cap of €2.5bn and £300k", ["€2.5bn", "£300k"]),
    ("The amount of $247.83 is final.", ["$247.83"]),
    ("effective as of January 1, 2024 until 2025-12-31", ["January 1, 2024", "2025-12-31"]),
    ("dated the 3rd day of March, 2021", ["3rd day of March, 2021"]),
    ("between $1,000 and $2,000", ["$1,000", "$2,000"]),
    ("CAD 1 250 000 in total", ["CAD 1 250 000"]),
])
def test_a_value_is_its_whole_span(text: str, expected: list[str]) -> None:
    # Given a quote / When its exact values are read / Then each is the document's span, whole
    assert exact_values(text) == expected
    assert all(v in text for v in exact_values(text))


@pytest.mark.parametrize("text", [
    "Section 14.2 applies within 14 days after the leak",
    "clause 3 of Schedule 2",
    "customer id cust_4711",
])
def test_bare_numbers_are_never_pinned(text: str) -> None:
    # Given text with numbers but no unit / When read / Then no exact value is pinned
    assert exact_values(text) == []
