"""Filled PDF form fields (issue 13, item 5): the values typed into an AcroForm are text."""

from __future__ import annotations

from pathlib import Path

import pytest

from longdoc.ingest.chunk import chunk_document
from longdoc.ingest.parse import parse_document
from longdoc.ingest.parse.forms import FormField, merge_form_fields

CASES = (Path(__file__).resolve().parents[3] / ".." / "shared" / "cases").resolve()


def _case(name: str) -> bytes:
    """A small input of ``../shared/cases``; fails (never skips) when it is missing."""
    path = CASES / name
    if not path.is_file():
        pytest.fail(f"shared case missing: {path}")
    return path.read_bytes()


def test_filled_lease_form_values_are_in_the_page_text_beside_their_labels() -> None:
    # Given a one-page lease whose AcroForm fields hold the tenant's name and the rent
    parsed = parse_document("filled-form-lease.pdf", _case("filled-form-lease.pdf"))
    # Then each value stands after its printed label, on the label's line
    lines = parsed.text.split("\n")
    assert "1. Tenant name: Jane Example" in lines
    assert "2. Monthly rent: USD 2,450.00" in lines
    # And a chunk holds both, on page 1
    chunks = chunk_document(parsed, "lease")
    holder = [c for c in chunks if "Jane Example" in c.text and "USD 2,450.00" in c.text]
    assert len(holder) == 1 and holder[0].page_start == 1


def test_a_field_without_a_label_on_the_page_goes_to_the_page_end_labelled() -> None:
    # Given a page and two filled fields: one whose label is printed, one whose is not
    text = "LEASE\n1. Tenant name:\nSigned below."
    fields = [FormField("tenant_name", "Jane Example", "1. Tenant name:"),
              FormField("signature_date", "2027-01-01", "")]
    # Then the first follows its label and the second ends the page as a labelled field
    assert merge_form_fields(text, fields) == (
        "LEASE\n1. Tenant name: Jane Example\nSigned below.\nForm field signature_date: 2027-01-01")


def test_a_value_already_printed_on_its_line_is_not_repeated() -> None:
    text = "Rent: USD 10.00"
    assert merge_form_fields(text, [FormField("rent", "USD 10.00", "Rent:")]) == text
