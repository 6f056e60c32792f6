"""Term resolution: the one wording in force at the loss date, its endorsements in force, clear errors otherwise."""

from __future__ import annotations

import pytest

from longdoc.core.errors import TriageError
from longdoc.core.models import DocumentMetadata
from longdoc.triage.collections import Member
from longdoc.triage.terms import in_force, resolve
from tests.unit.triage_set import TERMS as SET, member


def test_a_2023_loss_resolves_to_the_2023_wording_without_2024_endorsements() -> None:
    got = resolve("dev", SET, "home", "2023-07-14")
    assert got.wording.doc_id == "home-2023" and got.endorsements == []


def test_an_endorsement_counts_only_from_its_own_start() -> None:
    assert [m.doc_id for m in resolve("dev", SET, "Home", "2024-02-20").members] == ["home-2024"]
    assert [m.doc_id for m in resolve("dev", SET, "home", "2024-04-11").members] == ["home-2024", "sewer-e"]


def test_both_ends_are_in_force_and_an_open_end_is_unbounded() -> None:
    assert in_force(SET[0], "2023-01-01") and in_force(SET[0], "2023-12-31") and not in_force(SET[0], "2024-01-01")
    assert resolve("dev", SET, "travel", "2031-05-05").wording.doc_id == "travel-2022"


def test_an_iso_interval_term_stands_in_for_missing_dates() -> None:
    assert in_force(member("m", None, None, term="2025-01-01/2025-06-30"), "2025-03-01")


@pytest.mark.parametrize(("members", "lob", "date", "words"), [
    (SET, "home", "2019-05-01", "no home wording of collection 'dev' is in force on 2019-05-01; terms: "
                                "home-2023 (2023-01-01..2023-12-31), home-2024 (2024-01-01..2024-12-31)"),
    ([*SET, member("home-2024b", "2024-06-01", "2025-05-31")], "home", "2024-07-01",
     "2 home wordings of collection 'dev' are in force on 2024-07-01 (overlapping terms): "
     "home-2024 (2024-01-01..2024-12-31), home-2024b (2024-06-01..2025-05-31)"),
    (SET, "motor", "2024-01-01", "has no wording for line of business 'motor' (lines: home, travel)"),
    (SET, "home", "2024-02-30", "loss date '2024-02-30' is not a date (expected YYYY-MM-DD)"),
    (SET, "home", "14/07/2023", "loss date '14/07/2023' is not a date"),
])
def test_bad_terms_and_dates_are_one_line_naming_the_documents(members: list[Member], lob: str, date: str,
                                                               words: str) -> None:
    with pytest.raises(TriageError) as caught:
        resolve("dev", members, lob, date)
    assert words in str(caught.value) and "\n" not in str(caught.value)


def test_metadata_takes_the_new_fields_and_checks_the_dates() -> None:
    meta = DocumentMetadata.from_mapping({"Collection": "dev", "effective-from": "2024-01-01",
                                          "effective_to": "2024-12-31", "endorses": "home-2024"})
    assert (meta.collection, meta.effective_from, meta.effective_to, meta.endorses) == (
        "dev", "2024-01-01", "2024-12-31", "home-2024")
    assert DocumentMetadata().model_dump(exclude_none=True) == {}
    with pytest.raises(ValueError, match="ISO date"):
        DocumentMetadata.from_mapping({"effective_from": "2024-13-01"})
    with pytest.raises(ValueError, match="before effective_from"):
        DocumentMetadata.from_mapping({"effective_from": "2024-02-01", "effective_to": "2024-01-01"})


def test_documents_without_the_new_fields_keep_their_json() -> None:
    # Given metadata and a chunk without any policy-set field
    plain = DocumentMetadata(doc_type="policy")
    # Then their JSON has exactly the keys it had before issue 15, and a set field is kept
    assert plain.model_dump_json() == '{"doc_type":"policy","line_of_business":null,"term":null}'
    assert '"collection":"dev"' in DocumentMetadata(collection="dev").model_dump_json()
    # And a Python dump keeps every field, so None still clears a value when chunks are rewritten
    assert plain.model_dump()["collection"] is None
