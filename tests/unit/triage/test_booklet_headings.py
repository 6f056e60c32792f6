"""Triage heading paths of a two-column booklet wording (issue 31, the Blue Cross held-out set): a
heading printed over two lines is one heading, a boxed ``NOTICE`` is an aside of the cover it sits in,
and the ``WARNING – EXCLUSIONS`` repeated under every cover is cited under that cover."""

from __future__ import annotations

from longdoc.ingest.pipeline import chunk_bytes
from longdoc.triage.units import clause_units


def _body(topic: str, n: int) -> str:
    return " ".join(f"The insurer reimburses {topic} costs of kind {k} up to the amount in the table of benefits."
                    for k in range(n))


MEDICAL = "EMERGENCY MEDICAL CARE COVERAGE IN CASE OF A MEDICAL EMERGENCY WHILE TRAVELLING"


def _booklet() -> str:
    return "\n".join([
        "EMERGENCY MEDICAL CARE COVERAGE",
        "IN CASE OF A MEDICAL EMERGENCY WHILE TRAVELLING",
        _body("emergency", 12) + ".",
        "What is covered",
        _body("hospital", 12) + ".",
        "NOTICE",
        "Failure to contact the assistance service before a medical consultation could result in the denial of your claim.",
        "Hospital expenses",
        _body("semi-private room", 12) + ".",
        "WARNING – EXCLUSIONS",
        "No amount is payable if the costs result from a medical condition that was not stable before departure. "
        + _body("excluded", 8),
        "BAGGAGE",
        "COVERAGE",
        _body("baggage", 12) + ".",
        "What is covered",
        _body("suitcase", 12) + ".",
        "WARNING – EXCLUSIONS",
        "No amount is payable for theft without break-in committed in a vehicle. " + _body("vehicle", 8),
    ])


def _paths() -> dict[str, tuple[str, ...]]:
    units = clause_units(chunk_bytes("booklet.txt", _booklet().encode(), target_tokens=300, max_tokens=400))
    return {u.text[:40]: u.heading_path for u in units}


def test_a_heading_over_two_lines_is_one_heading_and_frames_the_cover() -> None:
    # Given a cover titled over two capitals lines, the second opening with "IN"
    paths = _paths()
    # Then its parts are cited under the whole title, not under its second line
    assert paths["The insurer reimburses emergency costs o"] == (MEDICAL,)
    assert paths["The insurer reimburses hospital costs of"] == (MEDICAL, "What is covered")
    # And a one-word capitals line under a capitals line ("BAGGAGE" / "COVERAGE") joins it too
    assert paths["The insurer reimburses baggage costs of "] == ("BAGGAGE COVERAGE",)


def test_a_notice_box_is_an_aside_of_its_cover_not_a_part() -> None:
    paths = _paths()
    # Then the box is under the cover, and the heading after it is the cover's again
    assert paths["Failure to contact the assistance servic"] == (MEDICAL, "NOTICE")
    assert paths["The insurer reimburses semi-private room"] == (MEDICAL, "Hospital expenses")


def test_exclusions_repeated_under_each_cover_are_cited_under_that_cover() -> None:
    paths = _paths()
    assert paths["No amount is payable if the costs result"] == (MEDICAL, "WARNING – EXCLUSIONS")
    assert paths["No amount is payable for theft without b"] == ("BAGGAGE COVERAGE", "WARNING – EXCLUSIONS")
    # And the cover's own "What is covered" after its title is under it, not under the first cover's exclusions
    assert paths["The insurer reimburses suitcase costs of"] == ("BAGGAGE COVERAGE", "What is covered")



def test_a_cover_printed_again_is_not_nested_under_itself_or_the_cover_before() -> None:
    # Given covers that each recur (the break-it tester's wordings): a two-line title printed twice,
    # and a first cover printed again after a second one
    twice = "TRIP CANCELLATION\nCOVERAGE\n\n" + _body("cancelled trip", 6) + ".\n\n"
    again = "\n".join(["BAGGAGE", _body("bag", 6) + ".", "KALYPSI", _body("kalypsi", 6) + ".",
                        "BAGGAGE", _body("case", 6) + "."])
    for text, expected in ((twice * 2, {("TRIP CANCELLATION COVERAGE",)}),
                           (again, {("BAGGAGE",), ("KALYPSI",)})):
        units = clause_units(chunk_bytes("again.txt", text.encode(), target_tokens=300, max_tokens=400))
        # Then each is a part of its own every time, never under itself or under the other cover
        assert {u.heading_path for u in units} == expected


def test_a_run_of_capitals_lines_under_a_heading_does_not_join_into_one_endless_heading() -> None:
    # Given a heading followed by 49 capitals lines that each start with a joining word (the break-it
    # tester's wording: joined, they made a 585-character heading)
    text = "\n".join(["TRAVEL DELAY", _body("delay", 12) + ".", "BAGGAGE", *(f"IN PLACE {n}" for n in range(1, 50)),
                      _body("bag", 12) + "."])
    units = clause_units(chunk_bytes("run.txt", text.encode(), target_tokens=300, max_tokens=400))
    labels = [label for u in units for label in u.heading_path]
    # Then no heading label is longer than a heading line joined to its next (at most MAX_JOINED_HEADING_CHARS)
    from longdoc.triage.unit_parts import MAX_JOINED_HEADING_CHARS
    assert labels and max(len(label) for label in labels) <= MAX_JOINED_HEADING_CHARS
    # And the heading keeps its own first line (the cover's name), not the run's last lines
    assert any(label.startswith("BAGGAGE IN PLACE 1 IN PLACE 2") for label in labels)
    # And the two-line title of a real cover still joins
    assert _paths()["The insurer reimburses emergency costs o"] == (MEDICAL,)
