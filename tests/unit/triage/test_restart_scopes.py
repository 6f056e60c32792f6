"""Clause ids of wordings that number afresh under each part (issue 31, outside tester H2): ``1`` under
``SECTION II`` is cited ``Section II > 1``, not ``1#2``; a wording that never repeats a number keeps its ids."""

from __future__ import annotations

import pytest

from longdoc.ingest.pipeline import chunk_bytes
from longdoc.triage.units import clause_units


def _body(topic: str) -> str:
    return " ".join(f"We will pay for {topic} of kind {k} up to the limit shown in the schedule." for k in range(6))


RESTARTING = f"""# SECTION I – INSURANCE ON THE INSURED VEHICLE

# 1. Loss or Damage

{_body("loss or damage to the insured vehicle")}

# “Market Value”

refers to the cost of replacing your vehicle with one of the same make, model and age.

# 2. Loss or Damage to Windscreen

{_body("windscreen damage")}

# SECTION II – LIABILITY TO THIRD PARTIES

# 1. Indemnity to the Policyholder

{_body("third party injury")}

# 2. Expenses

{_body("legal expenses")}

# General Conditions

# 1. Claims Procedure

{_body("notice of an accident")}

# 2. Other Insurance

{_body("other insurance")}

# 3. Cancellation

{_body("cancellation refunds")}

# 2. Arbitration

{_body("arbitration costs")}
"""


def test_restarted_numbers_are_cited_under_their_part() -> None:
    # Given a Markdown wording whose headings are all one level and whose numbers restart per part
    units = clause_units(chunk_bytes("car.md", RESTARTING.encode(), target_tokens=300, max_tokens=400))
    ids = [u.unit_id for u in units]
    # Then each number is qualified by the part it sits in, the keyword heading shortened to its number
    # (a restart with no heading before it stays in its part, and counts on: ``> 2#2``)
    assert ids == ["Section I", "Section I > 1", "“Market Value”", "Section I > 2", "Section II",
                   "Section II > 1", "Section II > 2", "General Conditions > 1", "General Conditions > 2",
                   "General Conditions > 3", "General Conditions > 2#2"]
    by_id = {u.unit_id: u for u in units}
    # And the part's heading joins the heading path (a definition between 1 and 2 does not end Section I)
    assert by_id["Section I > 2"].heading_path == ("SECTION I – INSURANCE ON THE INSURED VEHICLE",
                                                   "2. Loss or Damage to Windscreen")
    assert by_id["Section II > 1"].heading_path[0] == "SECTION II – LIABILITY TO THIRD PARTIES"
    assert "third party injury" in by_id["Section II > 1"].text
    assert "notice of an accident" in by_id["General Conditions > 1"].text
    assert "arbitration costs" in by_id["General Conditions > 2#2"].text


def test_a_wording_that_never_repeats_a_number_keeps_its_ids() -> None:
    # Given the same parts numbered on through the wording (1, 2, 3, ...)
    text = RESTARTING.replace("# 1. Indemnity", "# 3. Indemnity").replace("# 2. Expenses", "# 4. Expenses") \
        .replace("# 1. Claims", "# 5. Claims").replace("# 2. Other", "# 6. Other") \
        .replace("# 3. Cancellation", "# 7. Cancellation").replace("# 2. Arbitration", "# 8. Arbitration")
    units = clause_units(chunk_bytes("car.md", text.encode(), target_tokens=300, max_tokens=400))
    numbered = [u.unit_id for u in units if u.unit_id[:1].isdigit()]
    # Then the ids are the bare numbers, as before
    assert numbered == ["1", "2", "3", "4", "5", "6", "7", "8"]
    assert not any(">" in u.unit_id for u in units)


def test_a_capitals_heading_inside_a_numbered_item_ends_it() -> None:
    # Given a part whose list items were read as numbered sections ("3. Prohibited Access."), followed in
    # the same long span by capitals headings and their word headings (a wording's next part)
    text = "\n\n".join([
        "# SECTION I – PROPERTY COVERAGES", "# 1. Additional Living Expense.", _body("living expenses"),
        "# 2. Fair Rental Value.", _body("rental value"),
        "# 3. Prohibited Access.", _body("prohibited access by civil authority"),
        "SPECIAL COVERAGE FEATURES", "Debris Removal", _body("debris removal") + " " + _body("removal of debris"),
        "Lock Replacement", _body("replacing locks") + " " + _body("new keys"),
        "BASIS OF CLAIM PAYMENT", "Deductible", _body("the deductible amount") + " " + _body("deductible again"),
        "# SECTION II – LIABILITY COVERAGES", "# 1. Legal Liability.", _body("legal liability"),
    ])
    units = clause_units(chunk_bytes("home.md", text.encode(), target_tokens=300, max_tokens=400))
    by_text = {u.unit_id: u for u in units}
    # Then the text under the capitals headings is cited by them, not as parts of item 3
    debris = next(u for u in units if "debris removal" in u.text)
    deductible = next(u for u in units if "the deductible amount" in u.text)
    assert debris.unit_id == "SPECIAL COVERAGE FEATURES > Debris Removal"
    assert deductible.unit_id == "BASIS OF CLAIM PAYMENT > Deductible"
    assert "3. Prohibited Access." not in deductible.heading_path
    assert deductible.heading_path[-2:] == ("BASIS OF CLAIM PAYMENT", "Deductible")
    # And item 3 keeps its own text under its qualified id
    assert any(uid.startswith("Section I > 3") and "prohibited access" in u.text for uid, u in by_text.items())


FARM = """FARMGUARD POLICY WORDING

SECTION I - PROPERTY

1. Fire
We will pay for loss of or damage to farm buildings caused by fire or lightning.

2. Storm
We will pay for damage caused by storm, but not for damage to fences, gates or hedges.

SECTION II - LIVESTOCK

1. Death of animals
We will pay the market value of livestock that die from fire, lightning or electrocution.

2. Straying
We will not pay for livestock that stray or are lost.

GENERAL CONDITIONS

1. Notice
You must tell us about any loss within 14 days.

2. Precautions
You must keep machinery locked away when not in use.
"""


THIRD = ("2. Straying\nWe will not pay for livestock that stray or are lost.\n\n",
         "2. Straying\nWe will not pay for livestock that stray or are lost.\n\nSECTION III - LIABILITY\n\n"
         "1. Injury\nWe will pay damages for injury to visitors on the farm.\n\n"
         "2. Pollution\nWe will not pay for gradual pollution of rivers.\n\n")


@pytest.mark.parametrize(("name", "variant"), [("farm.txt", "as is"), ("farm.md", "as is"),
                                              ("farm.txt", "title case"), ("farm.txt", "third part")])
def test_general_conditions_in_plain_text_are_not_cited_as_the_part_before(name: str, variant: str) -> None:
    # Given a plain-text wording (the outside testers' farm wordings) whose conditions heading the chunker
    # leaves at the end of the span before: SECTION II's, "General Conditions" in title case, or the last
    # numbered item of a SECTION III
    text = FARM if name.endswith(".txt") else FARM.replace("SECTION", "## SECTION").replace("GENERAL", "## GENERAL")
    heading = "GENERAL CONDITIONS"
    if variant == "title case":
        text, heading = text.replace("GENERAL CONDITIONS", "General Conditions"), "General Conditions"
    if variant == "third part":
        text = text.replace(*THIRD)
    units = clause_units(chunk_bytes(name, text.encode(), target_tokens=300, max_tokens=400))
    notice = next(u for u in units if "within 14 days" in u.text)
    # Then the conditions are cited under their heading, never as the part before's clauses
    assert notice.unit_id == f"{heading} > 1"
    assert notice.heading_path[-2:] == (heading, "1. Notice")
    assert not any(u.unit_id.startswith("Section II >") and "GENERAL" not in u.unit_id for u in units
                   if "must" in u.text)
