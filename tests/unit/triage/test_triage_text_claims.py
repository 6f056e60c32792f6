"""Claims with no real description refused, and text claims' label lines read as form fields (issue 31,
outside tester's findings M1 and M4)."""

from __future__ import annotations

import json

import pytest

from longdoc.core.errors import TriageError
from longdoc.triage.claim import read_claim
from longdoc.triage.queries import claim_queries

T5 = (b"Loss date: 2018-01-15\nLine of business: renters\nPolicy number: LP234F32\nClaim amount: $1,850.00\n"
      b"Claimant: Jane Doe\n\nMy laptop was stolen from my apartment on 14 January 2018 while I was away.\n")


@pytest.mark.parametrize(("data", "name", "message"), [
    (json.dumps({"claim_form": {"description": "   "}, "adjuster_note": None}).encode(), "ws.json",
     r"^claim file ws.json: the claim has no text"),
    (json.dumps({"claim_form": {"x": "1234"}}).encode(), "num.json",
     r"^claim file num.json: the claim has no descriptive text, only x: "),
    (json.dumps({"adjuster_note": "12 34 / 56"}).encode(), "note.json", r"^claim file note.json: the claim has no "
                                                                       r"descriptive text"),
    (b"[1, 2]", "arr.json", r"^claim file arr.json must hold a JSON object$"),
    (b"Policy number: X1\nLoss date: 2020-01-01\n", "ids.txt",
     r"^claim file ids.txt: the claim has no descriptive text, only policy_number: "),
    (b"1234 5678\n", "digits.txt", r"^claim file digits.txt: the claim has no descriptive text"),
    # a note of dates only, one of them with a month's name (the break-it test's datesonly.json)
    (json.dumps({"loss_date": "2024-03-03", "policy_number": "HO-1", "claimant": "Pieter van der Berg",
                 "adjuster_note": "2024-03-03 2024-03-09 15/03/2024 20 March 2024"}).encode(), "dates.json",
     r"^claim file dates.json: the claim has no descriptive text"),
])
def test_a_claim_with_no_real_description_is_refused_naming_the_file(data: bytes, name: str, message: str) -> None:
    with pytest.raises(TriageError, match=message):
        read_claim(data, name)


def test_text_starting_with_a_bracket_is_still_a_text_claim() -> None:
    assert read_claim(b"[Claim] my bike was stolen from the hallway", "b.txt").note.startswith("[Claim] my bike")


def test_a_text_claims_label_lines_are_fields_kept_out_of_the_query_and_in_case_facts() -> None:
    # Given a text claim with label lines and a sentence (the tester's t5.txt)
    claim = read_claim(T5, "t5.txt")
    # Then its label lines are form fields, named as in a JSON claim, and the sentence is the note
    assert claim.fields == {"policy_number": "LP234F32", "claim_amount": "$1,850.00", "claimant": "Jane Doe"}
    assert claim.note == "My laptop was stolen from my apartment on 14 January 2018 while I was away."
    assert (claim.loss_date, claim.line_of_business) == ("2018-01-15", "renters")
    # And the loss date, policy number and amount are in CASE_FACTS under their names
    assert claim.case_facts == {"loss_date": "2018-01-15", "policy_number": "LP234F32", "claim_amount": "$1,850.00",
                                "value_1": "14 January 2018"}
    # And the loss query holds neither the label words nor the name
    loss = next(q.text for q in claim_queries(claim) if q.name == "loss")
    assert loss == "My laptop was stolen from my apartment on while I was away."
    # And the model is still sent the whole text as written
    assert claim.text == T5.decode().strip()


def test_a_long_labelled_line_or_a_note_label_gives_its_value_to_the_note() -> None:
    text = (b"Loss date: 2020-02-02\nDescription: burst pipe\n"
            b"Circumstances: water came through the kitchen ceiling from the flat above overnight\n"
            b"Adjuster's note: mould\n")
    claim = read_claim(text, "c.txt")
    assert claim.fields == {"description": "burst pipe"}
    assert claim.note == "water came through the kitchen ceiling from the flat above overnight\nmould"


def test_an_abbreviated_label_keeps_its_value_as_a_fact() -> None:
    # Given a text claim whose policy number line is abbreviated ("Policy No.:")
    from longdoc.triage.claim import claim_from_text
    claim = claim_from_text("Policy No.: HO-2024-555\nLoss date: 2024-05-02\nThe kitchen ceiling fell in after a leak.\n")
    # Then the number is a CASE_FACT under its label and the label is not in the note
    assert claim.case_facts["policy_no"] == "HO-2024-555"
    assert "Policy" not in claim.note and claim.note.startswith("The kitchen ceiling")


def test_a_note_without_words_is_refused_in_plain_words() -> None:
    import pytest

    from longdoc.core.errors import TriageError
    from longdoc.triage.claim import claim_from_json
    with pytest.raises(TriageError, match="only a note without words: give a description"):
        claim_from_json({"claim_id": "c", "adjuster_note": 12345})


@pytest.mark.parametrize("label", ["Claim number", "Claim No.", "Claim ID", "Claim ref"])
def test_a_text_claims_claim_number_line_is_its_claim_id(label: str) -> None:
    from longdoc.triage.claim import claim_from_text
    # Given a text claim labelling its id as claim handlers do (outside tester: the header said "claim -")
    claim = claim_from_text(f"{label}: CL-2024-0091\nThe basement flooded when the sewer backed up.\n")
    # Then it is the claim's id, and it stays a form field
    assert claim.claim_id == "CL-2024-0091" and "CL-2024-0091" in claim.fields.values()


def test_a_note_given_as_a_list_of_sentences_reads_as_sentences_not_a_python_list() -> None:
    claim = read_claim(json.dumps({"line_of_business": "home",
                                   "adjuster_note": ["Hose burst", "kitchen flooded."]}).encode(), "list.json")
    assert claim.note == "Hose burst. kitchen flooded."


def test_witnesses_in_a_note_object_or_a_form_list_stay_out_of_the_note_and_the_queries() -> None:
    # Given witnesses with names and phones in the note (an object) and in a claim-form list (second
    # break-it test: they reached Voyage's rerank query and the offline loss query)
    from longdoc.triage.queries import claim_queries
    from longdoc.triage.ranking import rerank_query

    claim = read_claim(json.dumps({
        "line_of_business": "home", "claim_form": {"description": "Carpet soaked",
                                                   "witnesses": [{"name": "Ann Lee", "phone": "+1 555 0199"}]},
        "adjuster_note": {"summary": "Carpet ruined.", "witnesses": [{"name": "Bob Smith", "phone": "+1 555 0100"}],
                          "extra": ["nested", {"a": "b"}, 42, None]}}).encode(), "wit.json")
    # Then the note is its texts as sentences, without the contact entries
    assert claim.note == "Carpet ruined. nested. b. 42."
    # And no name or phone is in the loss query or the rerank query
    for text in (claim_queries(claim)[0].text, rerank_query(claim)):
        assert not any(w in text for w in ("Bob Smith", "Ann Lee", "0100", "0199")), text
